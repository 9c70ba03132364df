/* run/flags.c — see flags.h. */
#include "run/flags.h"
#include "run/commfit.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/planlist.h"
#include "extrapolate/repeat.h"
#include "extrapolate/seqlen.h"
#include "extrapolate/sparseplans.h"
#include "netmodels/netcfg.h"
#include "util/limits.h"

#define CFG(field) offsetof(mt_run_config, field)

/* ---- values that need more than a store ------------------------------------------------- */

static mt_status set_recompute(void *base, const char *v, mt_error *err) {
    return mt_recompute_spec_parse(v, &((mt_run_config *)base)->plan, err);
}

static mt_status set_schedule(void *base, const char *v, mt_error *err) {
    mt_run_config *c = base;
    MT_CHECK(mt_pp_schedule_parse(v, &c->plan.schedule, err));
    c->schedule_set = 1;
    return MT_OK;
}

static mt_status set_pp_layers(void *base, const char *v, mt_error *err) {
    mt_plan *p = &((mt_run_config *)base)->plan;
    return mt_stages_list_parse(v, p->pp_layers, &p->n_pp_layers, err);
}

static mt_status set_placement(void *base, const char *v, mt_error *err) {
    return mt_placement_parse(v, ((mt_run_config *)base)->plan.placement, err);
}

static mt_status set_ring_model(void *base, const char *v, mt_error *err) {
    mt_plan *p = &((mt_run_config *)base)->plan;
    static const struct {
        const char *name;
        int32_t above;
    } models[] = {{"auto", 64}, {"steps", -1}, {"flow", 0}};
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++)
        if (!strcmp(v, models[k].name)) {
            p->ringflow_above = models[k].above;
            return MT_OK;
        }
    return mt_fail(err, MT_EINVAL, "--ring-model needs auto, steps or flow (got '%s')", v);
}

static mt_status set_a2a(void *base, const char *v, mt_error *err) {
    mt_plan *p = &((mt_run_config *)base)->plan;
    static const struct {
        const char *name;
        int32_t algo;
    } algos[] = {{"auto", 0}, {"pairwise", 1 + MT_ALGO_RING}, {"direct", 1 + MT_ALGO_DIRECT}, {"hier", 1 + MT_ALGO_HIER},
                   {"relay", 1 + MT_ALGO_RELAY}};
    for (size_t k = 0; k < sizeof algos / sizeof algos[0]; k++)
        if (!strcmp(v, algos[k].name)) {
            p->a2a_algo = algos[k].algo;
            return MT_OK;
        }
    return mt_fail(err, MT_EINVAL, "--a2a needs auto, pairwise, direct, hier or relay (got '%s')", v);
}

static mt_status set_fsdp_units(void *base, const char *v, mt_error *err) {
    mt_plan *p = &((mt_run_config *)base)->plan;
    char *end = NULL;
    long k = strtol(v, &end, 10);
    if (!strcmp(v, "block")) p->shard_units = 1;
    else if (!strcmp(v, "layer")) p->shard_units = MT_UNITS_LAYER;
    else if (end != v && !*end && k >= 1 && k <= MT_REPEAT_MAX_BLOCKS) p->shard_units = (int32_t)k;
    else return mt_fail(err, MT_EINVAL, "--fsdp-units needs block, layer or a count of blocks K >= 1 (got '%s')", v);
    return MT_OK;
}

static mt_status set_precision(void *base, const char *v, mt_error *err) {
    return mt_precision_parse(v, &((mt_run_config *)base)->plan.prec, err);
}

static mt_status set_comm_slowdown(void *base, const char *v, mt_error *err) {
    double *x = &((mt_run_config *)base)->comm_slowdown;
    char *end = NULL;
    double f = strtod(v, &end);
    if (!strcmp(v, "auto")) *x = MT_COMM_SLOW_AUTO;
    else if (!strcmp(v, "off")) *x = 0;
    else if (end != v && !*end && f >= 0 && f <= 10) *x = f;
    else return mt_fail(err, MT_EINVAL, "--comm-slowdown needs auto, off or a slowdown from 0 to 10 (0.2: kernels "
                        "run at 1/1.2 of their speed beside a collective; got '%s')", v);
    return MT_OK;
}

static mt_status set_scenario(void *base, const char *v, mt_error *err) {
    mt_run_config *c = base;
    if (c->n_scenario_paths < MT_RUN_MAX_PATHS) c->scenario_paths[c->n_scenario_paths++] = v;
    return mt_scenario_load(c->scenario, v, err);
}
static mt_status add_slow_gpu(void *base, const char *v, mt_error *err) {
    return mt_scenario_add_slow_gpu(((mt_run_config *)base)->scenario, v, err);
}
static mt_status add_slow_link(void *base, const char *v, mt_error *err) {
    return mt_scenario_add_slow_link(((mt_run_config *)base)->scenario, v, err);
}
static mt_status add_fail_link(void *base, const char *v, mt_error *err) {
    return mt_scenario_add_fail_link(((mt_run_config *)base)->scenario, v, err);
}

/* ---- the tables ------------------------------------------------------------------------- */

static const mt_flag PLAN[] = {
    {"--gpus", MT_FLAG_INT, CFG(plan.gpus), "N", "virtual GPUs (D x T x P must equal N; an unset size takes the "
     "GPUs left over, dp first)", .lo = 1, .hi = MT_GPUS_MAX},
    {"--dp", MT_FLAG_INT, CFG(plan.dp), "D", "data-parallel size", .lo = 1, .hi = MT_GPUS_MAX},
    {"--tp", MT_FLAG_INT, CFG(plan.tp), "T", "tensor-parallel size", .lo = 1, .hi = MT_GPUS_MAX},
    {"--pp", MT_FLAG_INT, CFG(plan.pp), "P", "pipeline-parallel size", .lo = 1, .hi = MT_GPUS_MAX},
    {"--cp", MT_FLAG_INT, CFG(plan.cp), "C", "context-parallel size: every sequence split into C chunks, attention "
     "as ring attention (K/V blocks passed around the C ranks beside the attention blocks); C must divide the "
     "sequence length", .lo = 1, .hi = 1 << 20},
    {"--sp", MT_FLAG_SWITCH, CFG(plan.sp), NULL, "Megatron sequence parallelism (needs --tp > 1): each "
     "tensor-parallel all-reduce becomes a reduce-scatter + all-gather, and the norms, residual adds and dropout "
     "between them run on 1/T of the sequence"},
    {"--strategy", MT_FLAG_CHOICE, CFG(strategy), "S", "dp (all-reduce after backward, as DataParallel), ddp "
     "(bucketed, overlapping backward; the default data-parallel mode), tp, pp: with no sizes given, all N GPUs go "
     "to that strategy", .choices = MT_STRATEGY_CHOICES},
    {"--batch", MT_FLAG_INT64, CFG(plan.global_batch), "GLOBAL", "global batch (simulate's default: the traced "
     "batch per replica; compare's: the traced batch x N)", .lo = 1, .hi = 1 << 30},
    {"--micro-batches", MT_FLAG_INT, CFG(plan.micro_batches), "M", "pipeline micro-batches (default P)", .lo = 1,
     .hi = 1 << 20},
    {"--schedule", MT_FLAG_CALL, 0, "gpipe|1f1b", "pipeline schedule (default 1f1b)", .call = set_schedule,
     .choices = "gpipe|1f1b"},
    {"--vpp", MT_FLAG_INT, CFG(plan.vpp), "V", "interleaved 1F1B (Megatron's virtual pipeline): V model chunks per "
     "GPU, the layers cut into P x V chunks, chunk c on stage c mod P; needs --pp > 1, the 1f1b schedule and "
     "--micro-batches a multiple of P (default 1: plain 1F1B)", .lo = 1, .hi = 1 << 10},
    {"--pp-cut", MT_FLAG_CHOICE, CFG(plan.pp_cut), MT_PPCUT_CHOICES, "where pipeline stages are cut: blocks (as "
     "Megatron-Core and PyTorch's pipelining: at the trace's repeating block, the same number of blocks per stage and "
     "per --vpp chunk, the embedding on the first stage, head and loss on the last), time (the cut that balances "
     "forward + backward + optimizer time, inside blocks if that is faster), auto (default: blocks on a trace whose "
     "block holds half its layers or more, when they divide P x V, else time with a warning)",
     .choices = MT_PPCUT_CHOICES},
    {"--pp-layers", MT_FLAG_CALL, 0, "LIST", "blocks per pipeline stage, e.g. 7,8,8,9 (Megatron's uneven "
     "decoder_first/last_pipeline_num_layers), or one count per model chunk under --vpp; they add up to the trace's "
     "blocks (mitosis inspect)", .call = set_pp_layers},
    {"--recompute", MT_FLAG_CALL, 0, MT_RECOMPUTE_SPEC, "activation recomputation (docs/memory.md): full re-runs "
     "each transformer block's forward before its backward and keeps only its input (Megatron's full checkpointing: "
     "the repeating blocks, not the embedding, head and loss; every layer where no block repeats); every:K the same "
     "for every K-th block only (torchtitan's layer-selective AC); ops:save=LIST re-runs each block but the ops whose "
     "outputs LIST saves (PyTorch's op-level selective checkpointing: attn, mm, mm/K = every K-th matmul; e.g. "
     "ops:save=attn,mm/2); selective re-runs Megatron's attention core (QK^T, softmax, dropout, PV; a fused SDPA / "
     "flash attention keeps no scores, so it saves little) (default none)", .call = set_recompute,
     .choices = MT_RECOMPUTE_CHOICES},
    {"--bucket", MT_FLAG_BYTES, CFG(plan.bucket_bytes), "SIZE", "DDP bucket size (default 25MiB)", .lo = 0,
     .lo_open = 1},
    {"--first-bucket", MT_FLAG_BYTES, CFG(plan.first_bucket_bytes), "SIZE", "cap of the first DDP bucket filled "
     "in backward (default 1MiB, as PyTorch)", .lo = 0, .lo_open = 1},
    {"--zero", MT_FLAG_INT, CFG(plan.zero), "1|2|3", "ZeRO over the DP group: 1 shards optimizer states (gradients "
     "all-reduced in DDP buckets, parameters all-gathered after the optimizer), 2 also gradients (buckets "
     "reduce-scattered), 3 also parameters (DeepSpeed's: each layer's all-gathered, blocking, before its forward and "
     "its backward, its gradients reduce-scattered; --fsdp-units and --fsdp-prefetch apply)", .lo = 1, .hi = 3},
    {"--fsdp", MT_FLAG_SWITCH, CFG(plan.fsdp), NULL, "FSDP full shard as FSDP2's fully_shard per block plus the root: "
     "each repeating block one unit, the layers outside them (embedding, final norm, head) one root unit (no block: "
     "the trace's layers); a unit's parameters all-gathered before its forward and its backward with the next "
     "unit's all-gather in flight (prefetch), its gradients reduce-scattered after its backward"},
    {"--fsdp-units", MT_FLAG_CALL, 0, "block|layer|K", "ZeRO-3 / FSDP units: block (one repeating block each, plus "
     "the root; --fsdp's default), K (K blocks each, plus the root) or layer (the trace's layers; --zero 3's "
     "default)", .call = set_fsdp_units},
    {"--fsdp-prefetch", MT_FLAG_INT, CFG(plan.shard_prefetch), "N", "ZeRO-3 / FSDP: units all-gathered ahead of "
     "the running one, in forward and in backward (--fsdp default 1 as FSDP2; --zero 3 default 0: blocking)",
     .lo = 0, .hi = 64},
    {"--fsdp-reshard", MT_FLAG_CHOICE, CFG(plan.reshard), MT_RESHARD_CHOICES, "ZeRO-3 / FSDP units resharded after "
     "forward (gathered again for backward): all (FSDP2's reshard_after_forward=True, default), not-last (all but "
     "the last block, torchtitan's default) or none (every unit kept gathered to its backward); the root unit never "
     "is", .choices = MT_RESHARD_CHOICES},
    {"--dist-opt", MT_FLAG_SWITCH, CFG(plan.dist_opt), NULL, "Megatron-Core's distributed optimizer "
     "(--use-distributed-optimizer, NeMo's distopt) with overlap_grad_reduce and overlap_param_gather: the whole "
     "gradient buffer kept (in the --precision reduce dtype), reduce-scattered in buckets of max(40M, 1M x DP) "
     "parameters during the last micro-batch's backward; master weights and optimizer states sharded over DP; "
     "parameters all-gathered in the same buckets during the next step's first forward, one bucket ahead. "
     "--bucket other than 25MiB sets the bucket's gradient bytes"},
    {"--fsdp-shard", MT_FLAG_INT, CFG(plan.fsdp_shard), "G", "FSDP hybrid sharding (HSDP): shard inside groups of G "
     "replicas, all-reduce the shards across groups (G divides dp)", .lo = 1, .hi = 1 << 20},
    {"--precision", MT_FLAG_CALL, 0, "POLICY", "precision policy: fp32, bf16 (pure), bf16-mixed (bf16 params and "
     "compute, fp32 gradient reduction, fp32 master weights and optimizer states: FSDP2's MixedPrecisionPolicy("
     "bf16, fp32), Megatron's, DeepSpeed's), fp16-mixed, fp8-mixed (bf16-mixed with the linear layers' GEMMs "
     "in FP8 as Transformer Engine or torchao float8 run them: the GPU's fp8 peak plus the casts; refused on GPUs "
     "without FP8, e.g. A100), or traced (default: the trace's dtypes), then parts overriding it: param=, reduce=, "
     "optim= fp32|bf16|fp16, master=fp32|none, gemm=fp8|traced (e.g. bf16-mixed,reduce=bf16). Rescales "
     "parameters, gradients, optimizer states and the master copy per GPU, data-parallel traffic (all-gathers by "
     "param, reductions by reduce) and the optimizer step's time; other kernels run as traced",
     .call = set_precision, .choices = MT_PRECISION_NAMES},
    {"--comm", MT_FLAG_CHOICE, CFG(plan.comm), "MODE", "the data-parallel collectives: traced keeps the trace's "
     "own (kind, bytes, group; no gradient all-reduce of what the job did not all-reduce), regenerate generates the "
     "plan's (DDP buckets of every parameter). auto (default): traced for a multi-rank trace, else regenerate",
     .choices = MT_COMM_CHOICES},
    {"--placement", MT_FLAG_CALL, 0, "ORDER", "rank order of the mesh dimensions, innermost first: letters t, c, e, p, d "
     "or names tp,cp,ep,pp,dp (default tpd: TP ranks adjacent, then stages, then replicas; left-out ones go outermost)", .call = set_placement},
    {"--algo", MT_FLAG_CHOICE, CFG(plan.algo), "ALGO", "collective algorithm: ring, tree, direct, hier, "
     "ringflow, relay, treeflow, nccl or auto (default: nccl on a topology preset, ring on a topology file). ring "
     "and the others: that schedule at link peak; relay: all-to-alls as ASTRA-sim's ring, others ring; "
     "treeflow: a pipelined double binary tree as flows; nccl: NCCL's tuner picks ring, tree or NVLS and "
     "LL/LL128/Simple per collective, size and group, run as that schedule at NCCL's bandwidth and latency "
     "(extrapolate/nccl.h; needs a topology preset; --nccl-algo forces one)",
     .choices = "ring|tree|direct|hier|ringflow|relay|treeflow|nccl|auto"},
    {"--nccl-algo", MT_FLAG_CHOICE, CFG(plan.nccl_force), "auto|tree|ring|nvls", "with --algo nccl (the default "
     "on a topology preset): all-reduces run as this algorithm, as NCCL_ALGO=... (other collectives have ring only), "
     "the protocol still chosen per size; auto (default): the tuner's choice", .choices = "auto|tree|ring|nvls"},
    {"--ring-model", MT_FLAG_CALL, 0, "auto|steps|flow", "ring all-reduce/reduce-scatter/all-gather as every "
     "step's sends (steps, O(N^2) sends) or as N pipelined flows plus the per-step latencies (flow, O(N)); both "
     "give 2(N-1)/N S/B + 2(N-1) alpha on uniform links. auto: steps up to 64 ranks, flow above (default)",
     .call = set_ring_model, .choices = "auto|steps|flow"},
    {"--no-fold", MT_FLAG_SWITCH, CFG(no_fold), NULL, "every GPU walks its program. Default: where data-parallel "
     "replicas are alike (no what-if, timeline or per-GPU speeds), only replica 0's GPUs do and the others mirror "
     "their transfers on the full network, checked as they go (a difference reruns unfolded; same results)"},
    {"--no-net-fold", MT_FLAG_SWITCH, CFG(no_netfold), NULL, "in a folded run, the network carries every replica's "
     "transfers. Default: traffic that stays inside a replica (tensor/context-parallel collectives, pipeline sends) "
     "runs for replica 0 only and stands for every replica's; where traffic between replicas meets it on a link, "
     "those copies run as flows from then on, and any other difference starts the run again with this flag's "
     "network (same results)"},
    {"--chunks", MT_FLAG_INT, CFG(plan.chunks), "C", "collective pipeline chunks (default by algorithm)", .lo = 1,
     .hi = 4096},
    {"--ep", MT_FLAG_INT, CFG(plan.ep), "E", "expert-parallel size: the trace's MoE experts split over E ranks (E "
     "divides the expert count); tokens dispatched and combined by all-to-all, expert gradients all-reduced over the "
     "dp replicas of the same experts, dense ones over dp x E; N = D x T x P x E. With --tp (and --sp, as Megatron "
     "requires): Megatron-Core's expert tensor parallelism, each expert split T ways (--etp), the router whole",
     .lo = 1, .hi = 1 << 20},
    {"--etp", MT_FLAG_INT, CFG(plan.etp), "S", "expert tensor-parallel size (Megatron-Core's "
     "expert_tensor_parallel_size) under --ep with --tp: each expert split S ways over S of the T TP ranks, which "
     "all-gather the tokens dispatched to them; expert gradients all-reduced over D x T / S ranks. S divides T "
     "(default T, Megatron's; e.g. --tp 2 --ep 8 --etp 1 keeps experts whole)", .lo = 1, .hi = 1 << 20},
    {"--expert-skew", MT_FLAG_DOUBLE, CFG(plan.expert_skew), "S", "tokens per expert Zipf(S) over a permutation drawn "
     "from --seed (0: uniform; default: the router's shares measured in the trace)", .lo = 0, .hi = 100},
    {"--a2a", MT_FLAG_CALL, 0, "auto|pairwise|direct|hier|relay", "all-to-all algorithm: pairwise exchange (N-1 "
     "shifted steps), direct (all pairs at once), hier (inside nodes, then one message per node pair and local rank), "
     "relay (ASTRA-sim's ring: N(N-1)/2 forwarding steps of S/N); auto follows --algo", .call = set_a2a,
     .choices = "auto|pairwise|direct|hier|relay"},
    {"--embedding-shard", MT_FLAG_CHOICE, CFG(plan.emb_shard), "MODE", "shard the embedding tables over the DP group "
     "as TorchRec: table (whole tables per rank), row (rows split), column (columns split); pooled embeddings "
     "exchanged by all-to-all, embedding parameters never all-reduced (default none)", .choices = MT_EMB_CHOICES},
    {"--gpus-per-node", MT_FLAG_INT, CFG(gpus_per_node), "G", "ranks per node for hier collectives and {nodes} "
     "(default 8)", .lo = 1, .hi = 1 << 20},
    {"--gpu-mem", MT_FLAG_BYTES, CFG(gpu_mem), "SIZE", "warn when a GPU's estimated peak memory exceeds SIZE "
     "(default: the --target-gpu's memory from the GPU table, else the traced GPU's when known)", .lo = 0,
     .lo_open = 1},
};
const mt_flag_table MT_RUN_PLAN_FLAGS = MT_FLAG_TABLE("Plan", PLAN);

static const mt_flag OPTIME[] = {
    {"--perf-model", MT_FLAG_CHOICE, CFG(pm.kind), MT_PM_KIND_CHOICES, "how a resized or moved op's time is "
     "predicted: trace scales batch-dependent ops proportionally (default), linear uses a fitted a*FLOPs + "
     "b*bytes + c per op class, roofline scales by FLOPs or bytes against the GPU's peaks (these three keep every "
     "op's measured residual); analytical computes each op's time on the GPU from its FLOPs and bytes alone, at "
     "stated efficiencies per math unit (the model of a CPU-recorded trace: with --target-gpu or a GPU topology "
     "such as dgx-h100 it is the default there)", .choices = MT_PM_KIND_CHOICES},
    {"--model", MT_FLAG_STRING, CFG(pm.model_path), "FILE", "fitted model.json (mitosis perfmodel fit); linear "
     "without it fits on the trace itself", .complete = "file"},
    {"--target-gpu", MT_FLAG_STRING, CFG(pm.target_gpu), "NAME", "predict for another GPU (mitosis perfmodel gpus "
     "lists them); a CPU-recorded trace is predicted on it with the analytical model (default: the topology's GPU, "
     "dgx1 V100, dgx-a100 A100-80GB, dgx-h100 H100-SXM; none: CPU processes)"},
    {"--gpu-specs", MT_FLAG_STRING, CFG(pm.gpu_specs_path), "FILE", "extra GPU table (JSON)", .complete = "file"},
    {"--gpu-clock", MT_FLAG_DOUBLE, CFG(pm.gpu_clock_MHz), "MHz", "run the predicted GPU (--target-gpu, else the "
     "traced one) at this SM clock, as under a power cap: compute peaks scale by MHz / its clock in the GPU table, "
     "HBM bandwidth does not (mitosis perfmodel gpus lists the clocks; H100-SXM-500W is a capped entry)", .lo = 1,
     .hi = 10000},
    {"--trace-gpu", MT_FLAG_STRING, CFG(pm.trace_gpu), "NAME", "the GPU the trace ran on, when the trace does not "
     "say (TrioSim CSV); refused for a CPU-recorded trace"},
    {"--tf32", MT_FLAG_CHOICE, CFG(pm.tf32), MT_TF32_CHOICES, "which fp32 ops ran and run on TF32 tensor cores where "
     "the GPU has them: conv (PyTorch's default: cudnn.allow_tf32 on, matmul.allow_tf32 off), all (matmuls too: "
     "set_float32_matmul_precision('high')), none (full FP32). A GPU without TF32 (V100) runs them on FP32 CUDA "
     "cores", .choices = MT_TF32_CHOICES},
};
const mt_flag_table MT_RUN_OPTIME_FLAGS = MT_FLAG_TABLE("Operator times (perfmodel/, see mitosis perfmodel --help)",
                                                        OPTIME);

static const mt_flag HOST[] = {
    {"--host-model", MT_FLAG_CHOICE, CFG(host_model), "none|trace", "trace: each GPU's host thread replays the "
     "trace's CPU time per op, launches kernels (they cannot start before launch + launch latency) and blocks at "
     "synchronising calls; none: GPU work only. Default trace when the trace has kernel launches, else none",
     .choices = "none|trace"},
    {"--comm-slowdown", MT_FLAG_CALL, 0, "auto|off|S", "compute slowed by communication: while a collective's "
     "kernels run on a GPU its compute kernels run at 1/(1+S) of their speed (perfmodel/commslow.h). auto "
     "(default): from the predicted GPU's SMs and HBM bandwidth, compute-bound kernels S = c/(SMs - c) for NCCL's "
     "c = 24 channels (0.22 on an H100), memory-bound ones by the HBM share the collective moves (0.27 on an H100 "
     "over NVLink, 0.03 over 400 Gb/s NICs); off on CPU processes, on GPUs without an SM count and for multi-rank "
     "traces (their kernels ran beside their own collectives). off: overlap is free. S: every kernel slows by S. "
     "The time added is the breakdown's stretch", .call = set_comm_slowdown,
     .choices = "auto|off"},
    {"--host-scale", MT_FLAG_DOUBLE, CFG(host_scale), "F", "multiply the traced host (CPU) times by F: a faster "
     "(F < 1) or slower CPU, or the profiler's own overhead taken out (default 1); after a calibration, the "
     "calibrated host times", .lo = 0, .hi = 1e6,
     .lo_open = 1},
    {"--calibrate", MT_FLAG_SWITCH, CFG(calibrate), NULL, "scale the traced times so that one GPU at the traced "
     "batch takes the step time measured without the profiler, read from the meta.json beside the trace "
     "(tracer/collect.py writes it): host times under the host model, else operator times"},
    {"--no-calibrate", MT_FLAG_SWITCH, CFG(no_calibrate), NULL, "keep a GPU trace's profiled times even when "
     "the meta.json beside it gives the step measured without the profiler (by default a one-rank GPU trace is "
     "calibrated to it, since the profiler slows the host)"},
    {"--measured-ms", MT_FLAG_DOUBLE, CFG(measured_ms), "MS", "the same, to a step time you measured yourself",
     .lo = 0, .hi = 1e9, .lo_open = 1},
    {"--calibrate-comm", MT_FLAG_CHOICE, CFG(calibrate_comm), MT_COMMFIT_CHOICES, "fit the links' bandwidth and "
     "latency to the traced collective times of a rank of a multi-rank job (least squares over every collective; "
     "measured waiting for peers stays inside them). auto (default): on unless --topology, --link-bw, --link-lat "
     "or --comm regenerate is given", .choices = MT_COMMFIT_CHOICES},
};
const mt_flag_table MT_RUN_HOST_FLAGS = MT_FLAG_TABLE("Host (CPU) side and calibration", HOST);

static const mt_flag TRACE[] = {
    {"--step", MT_FLAG_INT, CFG(topts.step), "N", "which ProfilerStep of the trace (see mitosis inspect)", .lo = 0,
     .hi = 1 << 30},
    {"--blocks", MT_FLAG_INT, CFG(blocks), "N", "predict the model of N blocks from a slice: the trace's repeating "
     "block (mitosis inspect shows it) repeated or cut to N, with its parameters, gradients, optimizer state, "
     "activations and operators, before the plan is applied (docs/blocks.md)", .lo = 1, .hi = MT_REPEAT_MAX_BLOCKS},
    {"--seq", MT_FLAG_INT64, CFG(seq), "N", "predict a step at sequence length N from a transformer trace at another: "
     "per-token work (linears, norms, elementwise, embedding, loss), activations and TP/SP/CP/PP traffic x N/s, "
     "attention's scores and kernels by their FLOPs (x (N/s)^2), parameter-sized work (optimizer) unchanged; s is "
     "read from the trace's attention (docs/llm.md)", .lo = 2, .hi = MT_SEQ_MAX},
    {"--moe-pattern", MT_FLAG_STRING, CFG(topts.expert_pattern), "GLOB", "name the experts the recogniser cannot see: record_function annotations or nn.Module paths matching " \
     "GLOB (e.g. 'experts.*', 'expert*'); each match is one expert (docs/recognition.md)"},
};
const mt_flag_table MT_RUN_TRACE_FLAGS = MT_FLAG_TABLE("Trace", TRACE);

static const mt_flag WHATIF[] = {
    {"--scenario", MT_FLAG_CALL, 0, "FILE", "JSON: compute slowdowns per GPU / layer / micro-batch / step (fixed "
     "or random), GPU types per rank, link changes, seed, steps (format in sim/scenario.h)", .call = set_scenario,
     .repeat = 1, .complete = "file"},
    {"--slow-gpu", MT_FLAG_CALL, 0, "RANK:F", "GPU RANK (or a range 0-3) computes F times slower (repeatable)",
     .call = add_slow_gpu, .repeat = 1},
    {"--slow-link", MT_FLAG_CALL, 0, "SEL:F", "link(s) F times slower, i.e. bandwidth / F; SEL is A->B, A<->B or a "
     "node name for all its links (mitosis topo SPEC --dot - lists the names)", .call = add_slow_link, .repeat = 1},
    {"--fail-link", MT_FLAG_CALL, 0, "SEL@TIME", "the link(s) fail at TIME (e.g. gpu3->sw0@10ms): traffic "
     "re-routes, or the run stops with an error naming the cut", .call = add_fail_link, .repeat = 1},
    {"--seed", MT_FLAG_INT64, CFG(seed), "N", "seed of the random draws (default: the file's, else 0)", .lo = 0,
     .hi = 9e18},
    {"--steps", MT_FLAG_INT, CFG(steps), "K", "run K training steps back to back (default 1)", .lo = 1,
     .hi = 100000},
};
const mt_flag_table MT_RUN_WHATIF_FLAGS = MT_FLAG_TABLE("What-if scenarios (README \"What-if scenarios\"; with a "
                                                        "perturbation an unperturbed run is simulated too and the "
                                                        "output adds its cost)", WHATIF);

static mt_status set_plans(void *base, const char *v, mt_error *err) {
    ((mt_compare_config *)base)->plans = strcmp(v, "auto") ? v : NULL;
    return MT_OK;
}

static mt_status set_dp_modes(void *base, const char *v, mt_error *err) {
    return mt_dp_modes_parse(v, &((mt_compare_config *)base)->dp_modes, err);
}

static mt_status set_sparse(void *base, const char *v, mt_error *err) {
    return mt_sparse_parse(v, &((mt_compare_config *)base)->sparse, err);
}

static mt_status set_recompute_modes(void *base, const char *v, mt_error *err) {
    return mt_recompute_modes_parse(v, &((mt_compare_config *)base)->recompute_modes, err);
}

static mt_status set_vpp_sizes(void *base, const char *v, mt_error *err) {
    mt_compare_config *cc = base;
    return mt_vpp_list_parse(v, cc->vpps, &cc->n_vpps, err);
}

static mt_status set_cp_sizes(void *base, const char *v, mt_error *err) {
    mt_compare_config *cc = base;
    return mt_size_list_parse("--cp-sizes", v, cc->cps, &cc->n_cps, err);
}

static mt_status set_sp_modes(void *base, const char *v, mt_error *err) {
    return mt_sp_modes_parse(v, &((mt_compare_config *)base)->sp_modes, err);
}

static mt_status set_sweep(void *base, const char *v, mt_error *err) {
    return mt_sweep_parse(v, &((mt_compare_config *)base)->sweep, err);
}

static const mt_flag COMPARE[] = {
    {"--plans", MT_FLAG_CALL, 0, "auto|LIST", "auto (default): every D x T x P = N; ddp and dp when D > 1; 1f1b and "
     "gpipe with P, 2P, 4P micro-batches (those dividing the replica batch) when P > 1. --dp/--tp/--pp/"
     "--micro-batches, --strategy dp|ddp and --schedule given fix that part. LIST: plans separated by ',', fields "
     "by ':': dp=D (all-reduce after backward) | ddp=D (DDP buckets), tp=T, pp=P, mb=M, schedule=gpipe|1f1b, "
     "vpp=V, recompute=none|selective|full|every:K|ops:save=attn+mm/2, placement=ORDER, bucket=SIZE, algo=A, zero=1|2|3, fsdp, fsdp_shard=G, distopt, single (1 GPU), default (flags only); e.g. "
     "ddp=8,dp=8,tp=2:ddp=4,pp=4:mb=8:schedule=gpipe. An unset size takes the GPUs left over (dp first).",
     .call = set_plans},
    {"--dp-modes", MT_FLAG_CALL, 0, "LIST", "the data-parallel modes --plans auto lists for D > 1: all, or a list of "
     "ddp, dp, zero1, zero2, zero3, fsdp, distopt (default ddp,dp; --strategy, --zero, --fsdp or --dist-opt given "
     "fix the mode)",
     .call = set_dp_modes},
    {"--sparse-plans", MT_FLAG_CALL, 0, "LIST", "expert-parallel and sharded-embedding variants --plans auto adds to "
     "each DDP plan with D > 1: ep (ep=E for each E dividing D and the experts, dp D / E), table, row, column "
     "(emb=); auto (default): ep for a trace with MoE layers, the three shardings for one with embedding_bag "
     "tables; none: no variant", .call = set_sparse},
    {"--recompute-modes", MT_FLAG_CALL, 0, "LIST", "the activation recomputation modes --plans auto lists for every "
     "plan: all, or a list of none, selective, full (default: --recompute's, none)", .call = set_recompute_modes},
    {"--vpp-sizes", MT_FLAG_CALL, 0, "LIST", "the interleaving degrees --plans auto lists for pipelined 1f1b plans, "
     "e.g. 1,2,4 (1: plain 1F1B; V > 1 where the micro-batches are a multiple of P; default: --vpp's, 1)",
     .call = set_vpp_sizes},
    {"--cp-sizes", MT_FLAG_CALL, 0, "LIST", "the context-parallel sizes --plans auto lists for every plan, e.g. 1,2,4: "
     "C ranks taken out of the plan's dp (skipped where C does not divide it); default: none", .call = set_cp_sizes},
    {"--sp-modes", MT_FLAG_CALL, 0, "M", "sequence parallelism in the plans --plans auto lists with tp > 1: off, on or "
     "all (both; default: --sp's)", .call = set_sp_modes},
    {"--sweep", MT_FLAG_CALL, 0, "NAME=VALUES", "one row per value for the plan the plan flags give (as in "
     "mitosis simulate; each row equals simulate with that value). NAME: link-bw, nic-bw (bandwidths), gpus, "
     "batch (global). VALUES: FROM:TO (doubling), FROM:TO:xF (times F), FROM:TO:S (S evenly spaced values), or a "
     "list A,B,C; e.g. link-bw=100GB/s:900GB/s:5, gpus=8:64, nic-bw=25GB/s,50GB/s. In --topology, {gpus} and "
     "{nodes} (= gpus / --gpus-per-node) are replaced for each run: multinode:nodes={nodes},gpus=8",
     .call = set_sweep},
    {"--top", MT_FLAG_INT, offsetof(mt_compare_config, top), "K", "plan search: the ranking's first K rows exact (e.g. 10), "
     "the rest pruned where they cannot reach them: every plan's program is built first, plans run fastest-bound "
     "first, and a plan whose bound (its largest stage's compute per step; its parameters, gradients and optimizer "
     "state over --gpu-mem) keeps it out of the first K is listed as pruned, not simulated. Rows kept equal the "
     "--exhaustive run's. Default: 10 when compare lists the plans (--plans auto); every plan of a --plans "
     "LIST", .lo = 1, .hi = 64},
    {"--exhaustive", MT_FLAG_SWITCH, offsetof(mt_compare_config, exhaustive), NULL, "simulate every plan, none "
     "pruned (overrides --top)"},
    {"--jobs", MT_FLAG_INT, offsetof(mt_compare_config, jobs), "N", "run the plans (or swept values) on N worker "
     "threads (default: one per core; 1: one after another); the table is the same whatever N. --routing latency "
     "runs one at a time (igraph's Dijkstra is not thread-safe). Across machines: mpirun -np K mitosis compare ... "
     "splits the rows over K ranks (each on --jobs threads) and rank 0 prints the table", .lo = 1, .hi = 4096},
};
const mt_flag_table MT_RUN_COMPARE_FLAGS = MT_FLAG_TABLE("Compare", COMPARE);

static const mt_flag DRY[] = {
    {"--dry-run", MT_FLAG_SWITCH, CFG(dry_run), NULL, "build the run and print what simulating it would cost (events, "
     "seconds on this machine, memory; run/estimate.h), then stop. Runs estimated over 5 s print that line on stderr "
     "first anyway"},
};
const mt_flag_table MT_RUN_DRY_FLAGS = MT_FLAG_TABLE("Cost", DRY);

#define OUT(field) offsetof(mt_sim_outputs, field)
static mt_status set_window(void *base, const char *v, mt_error *err) { return mt_sim_outputs_window(base, v, err); }
static const mt_flag OUTOPT[] = {
    {"--timeline-gpus", MT_FLAG_STRING, OUT(timeline_gpus), "LIST", "with --timeline: only these GPUs in the "
     "timeline, e.g. 0-7,12"},
    {"--timeline-window", MT_FLAG_CALL, 0, "A:B", "with --timeline: only simulated time A to B in the timeline, e.g. "
     "10ms:20ms", .call = set_window},
    {"--chakra-json", MT_FLAG_SWITCH, OUT(chakra_json), NULL, "with --chakra: also DIR/mitosis.RANK.json "
     "(protobuf's JSON form, as Chakra's jsonizer prints it)"},
    {"--chakra-ranks", MT_FLAG_STRING, OUT(chakra_ranks), "LIST", "with --chakra: only these GPUs, e.g. 0-7,12"},
    {"--chakra-comm-only", MT_FLAG_SWITCH, OUT(chakra_comm_only), NULL, "with --chakra: only the communication "
     "nodes, each depending on the communication it waited for (for network studies)"},
    {"--kineto-ranks", MT_FLAG_STRING, OUT(kineto_ranks), "LIST", "with --kineto: only these GPUs, e.g. 0-7,12"},
};
#undef OUT
const mt_flag_table MT_RUN_OUTOPT_FLAGS = MT_FLAG_TABLE("Output options", OUTOPT);

const mt_flag_table *const MT_RUN_TABLE_LIST[] = {&MT_RUN_PLAN_FLAGS, &MT_RUN_OPTIME_FLAGS, &MT_RUN_HOST_FLAGS,
                                                      &MT_RUN_TRACE_FLAGS, &MT_RUN_WHATIF_FLAGS, NULL};

static mt_status take_path(void *ctx, const char *arg, mt_error *err) { return mt_run_config_add_path(ctx, arg, err); }

mt_status mt_run_flags_parse_unchecked(int argc, char **argv, const char *cmd, mt_run_config *c,
                                      const mt_flag_bind *own, int n_own, mt_flag_seen *seen, mt_error *err) {
    mt_flag_bind binds[8 + MT_RUN_OWN_MAX + MT_NETCFG_TABLES];
    int n = 0;
    if (n_own < 0 || n_own > MT_RUN_OWN_MAX) return mt_fail(err, MT_EINTERNAL, "%s: %d own flag tables", cmd, n_own);
    for (int k = 0; MT_RUN_TABLE_LIST[k]; k++) binds[n++] = (mt_flag_bind){MT_RUN_TABLE_LIST[k], c};
    n += mt_netcfg_binds(&c->net, binds + n);
    for (int k = 0; k < n_own; k++) binds[n++] = own[k];
    return mt_flags_parse(argc, argv, 1, binds, n, take_path, c, cmd, seen, err);
}

mt_status mt_run_flags_parse(int argc, char **argv, const char *cmd, mt_run_config *c, const mt_flag_bind *own,
                            int n_own, mt_flag_seen *seen, mt_error *err) {
    MT_CHECK(mt_run_flags_parse_unchecked(argc, argv, cmd, c, own, n_own, seen, err));
    return seen->help ? MT_OK : mt_netcfg_check(&c->net, seen, err);
}

void mt_run_flags_help(FILE *out, int whatif) {
    for (int k = 0; MT_RUN_TABLE_LIST[k]; k++)
        if (MT_RUN_TABLE_LIST[k] != &MT_RUN_WHATIF_FLAGS || whatif) mt_flags_help(out, MT_RUN_TABLE_LIST[k]);
    mt_netcfg_help(out);
}

void mt_run_net_init(mt_netcfg *c) { mt_netcfg_init(c); }

mt_status mt_run_net_parse(mt_netcfg *c, int argc, char **argv, const mt_flag_table *own, void *own_base,
                           mt_flag_positional_fn pos, void *pos_ctx, const char *cmd, mt_flag_seen *seen,
                           mt_error *err) {
    return mt_netcfg_parse(c, argc, argv, own, own_base, pos, pos_ctx, cmd, seen, err);
}

int mt_run_net_tables(const mt_flag_table **out) { return mt_netcfg_tables(out); }

void mt_run_net_help(FILE *out) { mt_netcfg_help(out); }

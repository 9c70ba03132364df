/* extrapolate/plan.h — a parallelism plan: the sizes of its mesh's dimensions, strategies,
 * micro-batches, placement.
 *
 * A plan says how one GPU's step is spread over N = D x T x P (x C x E) virtual GPUs, the device
 * mesh of extrapolate/mesh.h (mt_plan_mesh):
 *   D data-parallel replicas (gradients all-reduced: `sync` after backward as DataParallel, or
 *     `ddp` buckets that overlap backward), T tensor-parallel ranks (Megatron-style splits),
 *     P pipeline stages (GPipe or 1F1B over M micro-batches).
 * Placement maps the mesh coordinates to a rank 0..N-1 (rank r talks through the topology's r-th
 * GPU). The default order, innermost first, is "tpd": TP ranks adjacent (same node), then stages,
 * then replicas: rank = (d x P + s) x T + t. Any order of the dimensions is allowed (mesh.h).
 * Invariant after mt_plan_resolve: dp*tp*pp*cp*ep == gpus, micro_batches >= 1, global_batch and
 * per-replica batch consistent with the trace (see mt_plan_resolve).
 */
#ifndef MT_EXTRAPOLATE_PLAN_H
#define MT_EXTRAPOLATE_PLAN_H

#include <stdint.h>

#include "extrapolate/collective.h"
#include "extrapolate/mesh.h"
#include "extrapolate/stages.h"
#include "extrapolate/precision.h"
#include "tracer/trace.h"
#include "util/err.h"

typedef enum { MT_DP_SYNC = 0, MT_DP_DDP } mt_dp_mode;
/* DDP's bucket size (PyTorch's bucket_cap_mb=25): mt_plan_init's --bucket. */
#define MT_BUCKET_DEFAULT (25.0 * 1024 * 1024)
typedef enum { MT_PP_GPIPE = 0, MT_PP_1F1B } mt_pp_schedule;
/* Activation recomputation (pass_recompute.c): none; selective, the attention core (QK^T, scale,
 * mask, softmax, attention dropout, PV) re-run before its backward, as Megatron's selective
 * recomputation; full, each transformer block's forward re-run before its backward (Megatron's full
 * activation checkpointing: the repeating blocks only, extrapolate/blocks.h; every layer in a trace
 * without one), `every:K` the same for every K-th block only (torchtitan's layer-selective AC);
 * ops, PyTorch's op-level selective checkpointing: each block re-run except the ops whose outputs the
 * policy saves (`ops:save=attn+mm/2`: attention, every second matmul). The order of the plain modes
 * is the order of MT_RECOMPUTE_CHOICES. */
typedef enum { MT_RECOMPUTE_NONE = 0, MT_RECOMPUTE_SELECTIVE, MT_RECOMPUTE_FULL, MT_RECOMPUTE_OPS } mt_recompute;
#define MT_RECOMPUTE_CHOICES "none|selective|full"
/* What --recompute accepts (the plain modes, every:K and an op policy). */
#define MT_RECOMPUTE_SPEC "none|selective|full|every:K|ops:save=LIST"
/* The collectives of the data-parallel dimension: the traced job's own (a multi-rank trace's
 * all-reduces, all-to-alls, send/recv, ... as traced: extrapolate/traced.h), or the plan's
 * (DDP buckets or DataParallel's all-reduce of every parameter, generated). auto: traced for a
 * multi-rank trace, else regenerated. */
typedef enum { MT_COMM_AUTO = 0, MT_COMM_TRACED, MT_COMM_REGENERATE } mt_comm_mode;
#define MT_COMM_CHOICES "auto|traced|regenerate"
/* ZeRO-3 / FSDP units (pass_dp.c): the trace's layers instead of blocks. */
enum { MT_UNITS_LAYER = -1 };
/* Resharding after forward: every unit (FSDP2's reshard_after_forward=True, the default), every
 * unit but the last block (torchtitan's default: its backward runs next), none (gathered from forward
 * to backward: no backward all-gather). The order is MT_RESHARD_CHOICES'. */
typedef enum { MT_RESHARD_ALL = 0, MT_RESHARD_NOT_LAST, MT_RESHARD_NONE } mt_reshard;
#define MT_RESHARD_CHOICES "all|not-last|none"

typedef struct mt_plan {
    int32_t gpus;            /* N; 0 = D*T*P, or the traced job's world size when no size is given */
    int32_t dp, tp, pp;      /* 0 = not given (resolved from gpus and the others) */
    int32_t sp;              /* 1: Megatron sequence parallelism inside the TP group (needs tp > 1) */
    int32_t cp, ep;          /* context- and expert-parallel sizes; 1 (set by init) = not used */
    int32_t etp;             /* --etp: expert tensor-parallel size (Megatron-Core's expert_tensor_parallel_size:
                                each expert split etp ways, etp dividing tp); 0 = tp, Megatron's default
                                (mt_plan_etp) */
    mt_dp_mode dp_mode;      /* default ddp */
    int32_t zero;            /* ZeRO stage 1, 2 or 3 over the DP group; 0 = none (pass_dp.c) */
    int32_t fsdp;            /* 1: FSDP full shard with per-layer units (pass_dp.c) */
    int32_t dist_opt;        /* 1: Megatron-Core's distributed optimizer (pass_distopt.c): full gradient buffer
                                reduce-scattered in buckets, optimizer state sharded, parameters all-gathered in
                                buckets overlapping the next forward */
    int32_t fsdp_shard;      /* FSDP hybrid sharding: shard inside groups of this many replicas,
                                all-reduce across them; 0 = shard over the whole DP group */
    int32_t shard_units;     /* --fsdp-units: ZeRO-3 / FSDP units of K >= 1 repeating blocks each plus one root
                                unit (what is outside the blocks: embedding, final norm, head),
                                MT_UNITS_LAYER the trace's layers, 0 default (--fsdp: 1 block, FSDP2's
                                fully_shard per block + root; --zero 3: layers, DeepSpeed's submodules) */
    int32_t shard_prefetch;  /* --fsdp-prefetch: units all-gathered ahead of the running one in forward and
                                backward; -1 default (--fsdp 1, --zero 3 0) */
    mt_precision prec;       /* --precision: the policy asked (precision.h); unset parts as traced */
    mt_reshard reshard;      /* --fsdp-reshard: MT_RESHARD_* (after forward; the root never is) */
    mt_comm_mode comm;       /* default auto; resolved to traced or regenerate */
    mt_pp_schedule schedule; /* default 1f1b */
    int32_t vpp;             /* interleaved 1F1B: model chunks per GPU (Megatron's virtual pipeline);
                                0 or 1 = none. Resolved to >= 1 */
    int32_t pp_cut;          /* --pp-cut: MT_PPCUT_* (stages.h); default auto: at blocks on a transformer */
    int32_t n_pp_layers;     /* --pp-layers: blocks per stage (or per model chunk); 0 = equal */
    int32_t pp_layers[MT_STAGES_LIST_MAX];
    mt_recompute recompute;  /* default none */
    int32_t rc_every;        /* full: re-run every K-th block only (blocks K-1, 2K-1, ...); 0 or 1 = every one */
    int32_t rc_save_attn;    /* ops: 1 keeps the attention ops' outputs (SDPA, flash, eager QK^T / PV) */
    int32_t rc_save_mm;      /* ops: keeps the output of every K-th matmul reading a weight in a block (the
                                1st, K+1-th, ...); 0 none */
    int32_t micro_batches;   /* 0 = P when pp > 1 (or the next divisor of the replica batch),
                                else 1 */
    double bucket_bytes;     /* ddp bucket size; default MT_BUCKET_DEFAULT, PyTorch's bucket_cap_mb=25 (--dist-opt:
                                Megatron's, unless given: pass_distopt.c) */
    double first_bucket_bytes; /* the first bucket to fill in backward; PyTorch: 1 MiB */
    int64_t global_batch;    /* 0 = trace batch x D (each replica runs the traced batch) */
    char placement[MT_PLACEMENT_MAX]; /* innermost first, letters of mesh.h; default "tpd" */
    mt_coll_algo algo;       /* collective algorithm for every group (default auto: nccl on a
                              * topology preset, else ring) */
    int32_t chunks;          /* collective chunks, 0 = default */
    int32_t ringflow_above;  /* ring all-reduce/reduce-scatter/all-gather over more ranks than
                                this run as ringflow (collective.h): O(N) instead of O(N^2)
                                sends. Default 64; 0 = always ringflow; -1 = never */
    double expert_skew;      /* --expert-skew: Zipf exponent of the tokens per expert; < 0 (default):
                                the traced shares (moe.h) */
    uint64_t expert_seed;    /* seeds the skew's permutation of the experts */
    int32_t a2a_algo;        /* --a2a: all-to-all algorithm, 0 = --algo's; else 1 + MT_ALGO_RING (pairwise
                                exchange), MT_ALGO_DIRECT or MT_ALGO_HIER (intra-node then inter-node) */
    int32_t emb_shard;       /* --embedding-shard: MT_EMB_* (pass_emb.c), 0 none */
    int32_t nccl_force;      /* --nccl-algo: 1 + mt_nccl_algo (extrapolate/nccl.h) all-reduces run as, as
                                NCCL_ALGO; 0 (default): the tuner's choice */
    /* Filled by mt_plan_resolve: */
    int32_t traced_tp;       /* the traced plan of a tensor-parallel job's rank (traced.h: tensor): its
                                D = N ranks are the job's tensor-parallel group, copies of the traced rank
                                (its part of the model) with its collectives, on one batch; else 0 */
    int32_t traced_pp;       /* the traced plan of a pipeline job's rank (traced.h: pipeline): its D = N
                                ranks are the job's N stages, copies of the traced stage with its sends
                                and receives, on one batch of traced_micro micro-batches (the traced
                                rank's ops hold them all: M stays 1, the batch factor 1); else 0 */
    int32_t traced_micro;    /* under traced_pp: the micro-batches the traced stage ran */
    int64_t replica_batch;   /* global_batch / D (/ 1 under traced_tp and traced_pp) */
    int64_t micro_batch;     /* replica_batch / M (/ traced_micro under traced_pp) */
    double batch_factor;     /* micro_batch / trace batch (1 when the trace batch is unknown) */
} mt_plan;

void mt_plan_init(mt_plan *p);

/* Fills the unset sizes and checks the plan against the trace: with no size at all, N is the
 * traced job's world size (a multi-rank trace re-simulated as it ran), else 1; comm auto becomes
 * traced for a multi-rank trace at its world size, else regenerate (a rank of a tensor-parallel or
 * pipeline job there: the traced plan, traced_tp or traced_pp, or refused); D*T*P must equal N (an unset
 * one of dp/tp/pp becomes N / product of the others when that divides), the global batch must
 * divide by D and the replica batch by M, M <= replica batch, P <= the trace's layer count.
 * A trace without a known batch size accepts no --batch (factor 1). One-line MT_EINVAL
 * messages say what to change. */
mt_status mt_plan_resolve(mt_plan *p, const mt_trace *t, mt_error *err);

/* The plan's device mesh (mesh.h). */
void mt_plan_mesh(const mt_plan *p, mt_mesh *m);
/* Rank of replica d, stage s, TP rank t (other dimensions at 0), and back. */
int32_t mt_plan_rank(const mt_plan *p, int32_t d, int32_t s, int32_t t);
void mt_plan_coords(const mt_plan *p, int32_t rank, int32_t *d, int32_t *s, int32_t *t);

/* Sharded embeddings (TorchRec): table-wise, row-wise, column-wise. */
enum { MT_EMB_NONE = 0, MT_EMB_TABLE, MT_EMB_ROW, MT_EMB_COLUMN };
#define MT_EMB_CHOICES "none|table|row|column"

/* The expert tensor-parallel size: plan etp, or T when not given (Megatron-Core's default). */
int32_t mt_plan_etp(const mt_plan *p);

/* Ranks holding a replica of the dense (non-expert) parameters, each on its own data: D x E (the EP
 * ranks route their own batches). */
int32_t mt_plan_replicas(const mt_plan *p);

/* The data-parallel, tensor-parallel and pipeline sizes and the micro-batches as the job runs them,
 * for reports: dp, tp, pp and M, except under traced_tp (dp 1, tp D: the simulated replicas are the
 * traced job's tensor-parallel ranks) and traced_pp (dp 1, pp D, M traced_micro: they are its
 * pipeline stages). */
int32_t mt_plan_shown_dp(const mt_plan *p);
int32_t mt_plan_shown_tp(const mt_plan *p);
int32_t mt_plan_shown_pp(const mt_plan *p);
int32_t mt_plan_shown_micro(const mt_plan *p);

/* Ranks that shard the model's states: D for --zero, --fsdp and --dist-opt, the --fsdp-shard G of hybrid
 * sharding, 1 when nothing is sharded. */
int32_t mt_plan_shard(const mt_plan *p);
/* ZeRO-3 / FSDP's unit settings resolved: blocks per unit (MT_UNITS_LAYER: layers) and prefetch
 * depth; both 0 when nothing is sharded per unit. */
int32_t mt_plan_unit_blocks(const mt_plan *p);
int32_t mt_plan_prefetch(const mt_plan *p);
/* "ddp", "dp", "zero1".."zero3", "fsdp", "hsdp4" (hybrid, shard groups of 4), "distopt": the DP mode as
 * reports name it. */
const char *mt_plan_dp_name(const mt_plan *p, char *buf, int len);

/* "all", "not-last", "none". */
const char *mt_reshard_name(mt_reshard r);
/* "dp" / "ddp", "gpipe" / "1f1b". Parsers return MT_EINVAL with a message. */
const char *mt_dp_mode_name(mt_dp_mode m);
const char *mt_pp_schedule_name(mt_pp_schedule s);
const char *mt_comm_mode_name(mt_comm_mode m);
/* "none", "selective", "full". */
const char *mt_recompute_name(mt_recompute r);
/* "1f1b", "interleaved 2" (--vpp 2), "gpipe": the schedule as reports name it. */
const char *mt_plan_schedule_label(const mt_plan *p, char *buf, int len);
mt_status mt_dp_mode_parse(const char *s, mt_dp_mode *out, mt_error *err);
mt_status mt_pp_schedule_parse(const char *s, mt_pp_schedule *out, mt_error *err);
mt_status mt_recompute_parse(const char *s, mt_recompute *out, mt_error *err);
/* --recompute's text (MT_RECOMPUTE_SPEC) into p's recompute, rc_every, rc_save_attn, rc_save_mm;
 * `ops:save=` takes attn, mm and mm/K joined by ',' or '+'. */
mt_status mt_recompute_spec_parse(const char *s, mt_plan *p, mt_error *err);
/* "full", "every:2", "ops:save=attn+mm/2": the recomputation as --recompute and --plans take it. */
const char *mt_recompute_label(const mt_plan *p, char *buf, int len);

#endif

/* extrapolate/plan.c — resolving and checking a parallelism plan against a trace. */
#include "extrapolate/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/traced.h"
#include "util/units.h"
#include "util/limits.h"

void mt_plan_init(mt_plan *p) {
    memset(p, 0, sizeof *p);
    p->dp_mode = MT_DP_DDP;
    p->schedule = MT_PP_1F1B;
    p->bucket_bytes = MT_BUCKET_DEFAULT;
    p->first_bucket_bytes = 1024.0 * 1024;
    p->cp = p->ep = 1;
    p->expert_skew = -1;
    memcpy(p->placement, "tpd", 4);
    p->algo = MT_ALGO_AUTO;
    p->ringflow_above = 64;
    p->shard_prefetch = -1;
}

const char *mt_dp_mode_name(mt_dp_mode m) { return m == MT_DP_DDP ? "ddp" : "dp"; }
const char *mt_pp_schedule_name(mt_pp_schedule s) { return s == MT_PP_1F1B ? "1f1b" : "gpipe"; }
const char *mt_comm_mode_name(mt_comm_mode m) {
    return m == MT_COMM_TRACED ? "traced" : m == MT_COMM_REGENERATE ? "regenerate" : "auto";
}

const char *mt_reshard_name(mt_reshard r) {
    return r == MT_RESHARD_NONE ? "none" : r == MT_RESHARD_NOT_LAST ? "not-last" : "all";
}

const char *mt_recompute_name(mt_recompute r) {
    return r == MT_RECOMPUTE_OPS ? "ops" : r == MT_RECOMPUTE_FULL ? "full" : r == MT_RECOMPUTE_SELECTIVE ? "selective"
                                                                                                : "none";
}

const char *mt_plan_schedule_label(const mt_plan *p, char *buf, int len) {
    if (p->schedule == MT_PP_1F1B && p->vpp > 1) snprintf(buf, (size_t)len, "interleaved %d", (int)p->vpp);
    else snprintf(buf, (size_t)len, "%s", mt_pp_schedule_name(p->schedule));
    return buf;
}

mt_status mt_recompute_parse(const char *s, mt_recompute *out, mt_error *err) {
    if (!strcmp(s, "none")) *out = MT_RECOMPUTE_NONE;
    else if (!strcmp(s, "selective")) *out = MT_RECOMPUTE_SELECTIVE;
    else if (!strcmp(s, "full")) *out = MT_RECOMPUTE_FULL;
    else return mt_fail(err, MT_EINVAL, "unknown recompute mode '%s' (use none, selective or full)", s);
    return MT_OK;
}

mt_status mt_recompute_spec_parse(const char *s, mt_plan *p, mt_error *err) {
    p->rc_every = p->rc_save_attn = p->rc_save_mm = 0;
    if (!strncmp(s, "every:", 6)) {
        char *end;
        long k = strtol(s + 6, &end, 10);
        if (end == s + 6 || *end || k < 1 || k > 1 << 20)
            return mt_fail(err, MT_EINVAL, "--recompute %s: every:K needs a block count K >= 1 (every:2 re-runs every "
                           "second block)", s);
        p->recompute = MT_RECOMPUTE_FULL, p->rc_every = (int32_t)k;
        return MT_OK;
    }
    if (strncmp(s, "ops:", 4) && mt_recompute_parse(s, &p->recompute, err) != MT_OK)
        return mt_fail(err, MT_EINVAL, "unknown recompute mode '%s' (--recompute takes none, selective, full, every:K or "
                       "ops:save=LIST)", s);
    if (strncmp(s, "ops:", 4)) return MT_OK;
    if (strncmp(s + 4, "save=", 5))
        return mt_fail(err, MT_EINVAL, "--recompute %s: an op policy reads ops:save=LIST (attn, mm, mm/K; e.g. "
                       "ops:save=attn,mm/2)", s);
    p->recompute = MT_RECOMPUTE_OPS;
    for (const char *q = s + 9; *q;) {
        size_t n = strcspn(q, ",+");
        char one[32];
        if (n == 0 || n >= sizeof one)
            return mt_fail(err, MT_EINVAL, "--recompute %s: an empty or long item in save= (use attn, mm, mm/K)", s);
        memcpy(one, q, n), one[n] = '\0';
        char *end;
        long k = !strncmp(one, "mm/", 3) ? strtol(one + 3, &end, 10) : 0;
        if (!strcmp(one, "attn")) p->rc_save_attn = 1;
        else if (!strcmp(one, "mm")) p->rc_save_mm = 1;
        else if (!strncmp(one, "mm/", 3) && end != one + 3 && !*end && k >= 1 && k <= 1 << 20) p->rc_save_mm = (int32_t)k;
        else return mt_fail(err, MT_EINVAL, "--recompute %s: '%s' is not a save rule (use attn, mm or mm/K)", s, one);
        q += n + (q[n] != '\0');
    }
    return MT_OK;
}

const char *mt_recompute_label(const mt_plan *p, char *buf, int len) {
    if (p->recompute == MT_RECOMPUTE_FULL && p->rc_every > 1) snprintf(buf, (size_t)len, "every:%d", (int)p->rc_every);
    else if (p->recompute != MT_RECOMPUTE_OPS) snprintf(buf, (size_t)len, "%s", mt_recompute_name(p->recompute));
    else {
        char mm[24] = "";
        if (p->rc_save_mm == 1) snprintf(mm, sizeof mm, "mm");
        else if (p->rc_save_mm > 1) snprintf(mm, sizeof mm, "mm/%d", (int)p->rc_save_mm);
        snprintf(buf, (size_t)len, "ops:save=%s%s%s", p->rc_save_attn ? "attn" : "", p->rc_save_attn && mm[0] ? "+" : "",
                 mm);
    }
    return buf;
}

mt_status mt_dp_mode_parse(const char *s, mt_dp_mode *out, mt_error *err) {
    if (!strcmp(s, "dp") || !strcmp(s, "sync")) *out = MT_DP_SYNC;
    else if (!strcmp(s, "ddp")) *out = MT_DP_DDP;
    else return mt_fail(err, MT_EINVAL, "unknown data-parallel mode '%s' (use dp or ddp)", s);
    return MT_OK;
}

mt_status mt_pp_schedule_parse(const char *s, mt_pp_schedule *out, mt_error *err) {
    if (!strcmp(s, "gpipe")) *out = MT_PP_GPIPE;
    else if (!strcmp(s, "1f1b")) *out = MT_PP_1F1B;
    else return mt_fail(err, MT_EINVAL, "unknown pipeline schedule '%s' (use gpipe or 1f1b)", s);
    return MT_OK;
}

void mt_plan_mesh(const mt_plan *p, mt_mesh *m) {
    mt_mesh_init(m, p->dp, p->fsdp ? p->fsdp_shard : 0, p->tp, p->pp, p->cp, p->ep, p->placement);
}

int32_t mt_plan_shard(const mt_plan *p) {
    if (p->fsdp) return p->fsdp_shard > 0 ? p->fsdp_shard : p->dp;
    return p->zero > 0 || p->dist_opt ? p->dp : 1;
}

int32_t mt_plan_unit_blocks(const mt_plan *p) {
    if (p->zero != 3 && !p->fsdp) return 0;
    if (p->shard_units) return p->shard_units;
    return p->fsdp ? 1 : MT_UNITS_LAYER;
}

int32_t mt_plan_prefetch(const mt_plan *p) {
    if (p->zero != 3 && !p->fsdp) return 0;
    return p->shard_prefetch >= 0 ? p->shard_prefetch : p->fsdp ? 1 : 0;
}

const char *mt_plan_dp_name(const mt_plan *p, char *buf, int len) {
    if (p->fsdp && p->fsdp_shard > 0 && p->fsdp_shard < p->dp) snprintf(buf, (size_t)len, "hsdp%d", (int)p->fsdp_shard);
    else if (p->fsdp) snprintf(buf, (size_t)len, "fsdp");
    else if (p->zero > 0) snprintf(buf, (size_t)len, "zero%d", (int)p->zero);
    else if (p->dist_opt) snprintf(buf, (size_t)len, "distopt");
    else snprintf(buf, (size_t)len, "%s", mt_dp_mode_name(p->dp_mode));
    return buf;
}

/* The sharded data-parallel modes against the rest of the plan (after dp is resolved). */
static mt_status check_sharding(const mt_plan *p, mt_error *err) {
    if (p->zero < 0 || p->zero > 3) return mt_fail(err, MT_EINVAL, "--zero %d: use 1, 2 or 3", p->zero);
    if (p->fsdp_shard < 0) return mt_fail(err, MT_EINVAL, "--fsdp-shard must be positive");
    if (p->fsdp_shard > 0 && !p->fsdp)
        return mt_fail(err, MT_EINVAL, "--fsdp-shard applies to --fsdp only (hybrid sharding of FSDP units)");
    if (p->zero != 3 && !p->fsdp) {
        const char *unit = p->shard_units ? "--fsdp-units" : p->shard_prefetch >= 0 ? "--fsdp-prefetch"
                         : p->reshard != MT_RESHARD_ALL ? "--fsdp-reshard" : NULL;
        if (unit)
            return mt_fail(err, MT_EINVAL, "%s applies to sharded parameters only (add --fsdp or --zero 3)", unit);
    }
    if ((unsigned)p->reshard > MT_RESHARD_NONE)
        return mt_fail(err, MT_EINVAL, "--fsdp-reshard needs all, not-last or none");
    if (p->shard_units < MT_UNITS_LAYER) return mt_fail(err, MT_EINVAL, "--fsdp-units needs block, layer or K >= 1");
    if (!p->zero && !p->fsdp && !p->dist_opt) return MT_OK;
    const char *flag = p->zero ? "--zero" : p->fsdp ? "--fsdp" : "--dist-opt";
    if (p->zero && p->fsdp)
        return mt_fail(err, MT_EINVAL, "--zero and --fsdp cannot be combined (FSDP full shard is ZeRO-3; pick one)");
    if (p->dist_opt && (p->zero || p->fsdp))
        return mt_fail(err, MT_EINVAL, "--dist-opt cannot be combined with %s (Megatron's distributed optimizer is its "
                       "own data-parallel mode; pick one)", p->zero ? "--zero" : "--fsdp");
    if (p->dist_opt && p->first_bucket_bytes != 1024.0 * 1024)
        return mt_fail(err, MT_EINVAL, "--first-bucket applies to DDP's buckets; Megatron's distributed optimizer "
                       "(--dist-opt) has no smaller first bucket: drop it (--bucket sets the size)");
    if (p->dist_opt && p->ep > 1)
        return mt_fail(err, MT_EINVAL, "--dist-opt with --ep is not modelled (the experts' own buckets over the "
                       "expert-data-parallel group): drop one");
    if (p->dp_mode == MT_DP_SYNC)
        return mt_fail(err, MT_EINVAL, "%s shards over DDP-style data parallelism, not --strategy dp (DataParallel's "
                       "one all-reduce): drop --strategy dp or use --strategy ddp", flag);
    if (p->comm == MT_COMM_TRACED)
        return mt_fail(err, MT_EINVAL, "%s regenerates the data-parallel collectives; the trace's own are kept "
                       "(--comm traced, a multi-rank trace's default): add --comm regenerate", flag);
    if (p->dp < 2)
        return mt_fail(err, MT_EINVAL, "%s shards over the data-parallel group, which has 1 rank in this plan "
                       "(give --dp 2 or more)", flag);
    if (p->fsdp_shard > 0 && (p->fsdp_shard > p->dp || p->dp % p->fsdp_shard))
        return mt_fail(err, MT_EINVAL, "--fsdp-shard %d does not divide the %d data-parallel replicas (use a divisor "
                       "of %d)", p->fsdp_shard, p->dp, p->dp);
    return MT_OK;
}

/* --vpp and --recompute against the rest of the plan (sizes resolved, before micro-batches). */
static mt_status check_schedule(const mt_plan *p, mt_error *err) {
    if ((unsigned)p->recompute > MT_RECOMPUTE_OPS)
        return mt_fail(err, MT_EINVAL, "--recompute needs none, selective, full, every:K or ops:save=LIST");
    if (p->vpp < 0) return mt_fail(err, MT_EINVAL, "--vpp must be positive");
    if (p->vpp <= 1) return MT_OK;
    if (p->pp <= 1)
        return mt_fail(err, MT_EINVAL, "--vpp %d interleaves pipeline stages: it needs --pp 2 or more", p->vpp);
    if (p->schedule != MT_PP_1F1B)
        return mt_fail(err, MT_EINVAL, "--vpp %d is interleaved 1F1B: it does not go with --schedule gpipe (drop one)",
                       p->vpp);
    return MT_OK;
}

/* --etp against the sizes, as Megatron-Core's expert mesh (parallel_state.py): the expert data-parallel size
 * N / (etp x ep x pp) must be whole; modelled when the expert-TP group lies inside the TP group. */
static mt_status check_expert_tp(const mt_plan *p, mt_error *err) {
    int32_t S = mt_plan_etp(p);
    if (p->etp < 0) return mt_fail(err, MT_EINVAL, "--etp must be positive");
    if (S == p->tp) return MT_OK;
    if (p->ep <= 1)
        return mt_fail(err, MT_EINVAL, "--etp %d needs --ep: it splits the experts of expert parallelism (without --ep "
                       "they split as the dense layers, by --tp %d)", S, p->tp);
    if ((int64_t)p->tp * p->dp * p->cp % S)
        return mt_fail(err, MT_EINVAL, "--etp %d: world size %d is not divisible by etp x ep x pp = %lld (Megatron-Core's "
                       "expert mesh); use an --etp dividing %lld", S, p->gpus, (long long)S * p->ep * p->pp,
                       (long long)p->tp * p->dp * p->cp);
    if (p->tp % S)
        return mt_fail(err, MT_EINVAL, "--etp %d with --tp %d is not modelled: an expert-TP group wider than the TP group "
                       "gathers tokens across data-parallel replicas; use an --etp dividing %d", S, p->tp, p->tp);
    return MT_OK;
}

/* Interleaved 1F1B runs micro-batches in groups of P (Megatron's rule). */
static mt_status check_vpp_groups(const mt_plan *p, mt_error *err) {
    if (p->vpp > 1 && p->micro_batches % p->pp)
        return mt_fail(err, MT_EINVAL, "--vpp %d: --micro-batches %d is not a multiple of --pp %d (interleaved 1F1B runs "
                       "micro-batches in groups of P, as Megatron)", p->vpp, p->micro_batches, p->pp);
    return MT_OK;
}

/* Units a pipeline can cut between: layers, or forward ops when the trace has no layers. */
static int32_t pipeline_units(const mt_trace *t) {
    if (t->n_layers > 0) return t->n_layers;
    int32_t n = 0;
    for (int32_t i = 0; i < t->n_ops; i++) n += t->ops[i].phase == TRACE_PHASE_FORWARD;
    return n;
}

/* At the traced GPU count a tensor-parallel job's rank (its part of the model traced, its collectives
 * kept) runs as the job ran: its N ranks share one batch (traced_tp), given as the default plan,
 * --dp N or --tp N; any other split would cut its part again. (A pipeline stage's rank still runs
 * as N replicas: its traced batch is one micro-batch's.) */
static mt_status traced_tensor_plan(mt_plan *p, const mt_traced_plan *tp, const mt_trace *t, mt_error *err) {
    p->traced_tp = 0;
    if (p->comm != MT_COMM_TRACED || tp->sync != MT_TRACED_TENSOR) return MT_OK;
    if (p->tp == p->gpus && p->dp == 1 && p->pp == 1) { /* --tp N: the traced plan named as it ran */
        p->dp = p->gpus;
        p->tp = 1;
    }
    if (p->dp != p->gpus)
        return mt_fail(err, MT_EINVAL, "%s is rank %d of a %d-GPU tensor-parallel job, holding its part of the model: "
                       "at %d GPUs it runs as traced (tp %d, the default plan); dp=%d x tp=%d x pp=%d would split "
                       "that part again (give --comm regenerate to treat the rank as a whole model)",
                       t->kineto_path ? t->kineto_path : "the trace", tp->rank, tp->world_size, p->gpus, p->gpus,
                       p->dp, p->tp, p->pp);
    p->traced_tp = p->dp;
    return MT_OK;
}

/* At the traced GPU count a pipeline job's rank (one stage, its sends and receives kept) runs as the
 * job ran: its N ranks are the N stages of one batch of M micro-batches (traced_pp; the traced
 * rank's ops hold all M, so the simulated M stays 1), given as the default plan, --dp N or --pp N
 * and --micro-batches M; any other split would cut the stage again. */
static mt_status traced_pipeline_plan(mt_plan *p, const mt_traced_plan *tp, const mt_trace *t, mt_error *err) {
    p->traced_pp = p->traced_micro = 0;
    if (p->comm != MT_COMM_TRACED || tp->sync != MT_TRACED_PIPELINE || tp->pipe_micro <= 0) return MT_OK;
    const char *path = t->kineto_path ? t->kineto_path : "the trace";
    int as_traced = p->tp == 1 && ((p->dp == p->gpus && p->pp == 1) || (p->pp == p->gpus && p->dp == 1));
    if (!as_traced || p->vpp > 1)
        return mt_fail(err, MT_EINVAL, "%s is rank %d of a %d-stage pipeline job, holding one stage of the model: at %d "
                       "GPUs it runs as traced (pp %d, the default plan); dp=%d x tp=%d x pp=%d%s would split that "
                       "stage again (give --comm regenerate to treat the rank as a whole model)", path, tp->rank,
                       tp->world_size, p->gpus, p->gpus, p->dp, p->tp, p->pp, p->vpp > 1 ? " interleaved" : "");
    if (p->micro_batches > 0 && p->micro_batches != tp->pipe_micro)
        return mt_fail(err, MT_EINVAL, "--micro-batches %d: %s is a stage of a pipeline that ran %d micro-batches, all in "
                       "its traced ops (drop --micro-batches, or give --comm regenerate to treat the rank as a whole "
                       "model)", p->micro_batches, path, tp->pipe_micro);
    p->dp = p->gpus; /* the stages are simulated as copies of the traced rank */
    p->pp = p->micro_batches = 1;
    p->traced_pp = p->gpus;
    p->traced_micro = tp->pipe_micro;
    return MT_OK;
}

/* The batch sizes and the factor on the traced op times: the global batch over the replicas (one
 * under a traced plan of TP or pipeline ranks), a replica's batch over its micro-batches. */
static mt_status resolve_batch(mt_plan *p, const mt_trace *t, int micro_default, mt_error *err) {
    int64_t tb = t->batch_size;
    if (tb <= 0) {
        if (p->global_batch > 0)
            return mt_fail(err, MT_EINVAL,
                           "the trace's batch size is unknown, so --batch cannot rescale it "
                           "(drop --batch; each replica then runs the traced batch)");
        p->replica_batch = p->micro_batch = 0;
        p->batch_factor = 1.0 / p->micro_batches;
        return check_vpp_groups(p, err);
    }
    int32_t R = p->traced_tp || p->traced_pp ? 1 : mt_plan_replicas(p); /* D, or D x E with expert parallelism */
    int32_t folded = p->traced_pp ? p->traced_micro : 1; /* micro-batches inside the traced rank's ops */
    if (p->global_batch == 0) p->global_batch = tb * R * folded;
    if (p->global_batch % R)
        return mt_fail(err, MT_EINVAL,
                       "global batch %lld does not divide over %d data-parallel replicas "
                       "(use a multiple of %d)", (long long)p->global_batch, R, R);
    p->replica_batch = p->global_batch / R;
    if (p->traced_pp) {
        if (p->replica_batch % folded)
            return mt_fail(err, MT_EINVAL, "--batch %lld does not split into the traced pipeline's %d micro-batches "
                           "(use a multiple of %d)", (long long)p->global_batch, folded, folded);
        p->micro_batch = p->replica_batch / folded;
        p->batch_factor = (double)p->micro_batch / (double)tb;
        return MT_OK;
    }
    /* default M: the smallest divisor of the replica batch that is >= P */
    int32_t step = p->vpp > 1 ? p->pp : 1; /* interleaved: a multiple of P */
    while (micro_default && p->micro_batches < p->replica_batch && p->replica_batch % p->micro_batches)
        p->micro_batches += step;
    if (p->micro_batches > p->replica_batch || p->replica_batch % p->micro_batches)
        return mt_fail(err, MT_EINVAL,
                       "replica batch %lld does not split into %d equal micro-batches "
                       "(choose --micro-batches dividing %lld)", (long long)p->replica_batch,
                       p->micro_batches, (long long)p->replica_batch);
    p->micro_batch = p->replica_batch / p->micro_batches;
    p->batch_factor = (double)p->micro_batch / (double)tb;
    return check_vpp_groups(p, err);
}

mt_status mt_plan_resolve(mt_plan *p, const mt_trace *t, mt_error *err) {
    if (p->gpus < 0 || p->dp < 0 || p->tp < 0 || p->pp < 0 || p->micro_batches < 0)
        return mt_fail(err, MT_EINVAL, "GPU counts and micro-batches must be positive");
    int unset = (p->dp == 0) + (p->tp == 0) + (p->pp == 0);
    mt_traced_plan tp;
    mt_traced_plan_read(t, &tp);
    if (p->gpus == 0 && unset == 3 && tp.multi_rank) p->gpus = tp.world_size; /* as the job ran */
    /* --ep / --embedding-shard on a rank of a MoE or TorchRec job regenerate its all-to-alls */
    int sparse = p->ep > 1 || p->emb_shard != MT_EMB_NONE;
    if (p->cp <= 0) p->cp = 1;
    if (p->ep <= 0) p->ep = 1;
    int64_t known = (int64_t)(p->dp ? p->dp : 1) * (p->tp ? p->tp : 1) * (p->pp ? p->pp : 1) * p->cp * p->ep;
    if (p->gpus == 0) {
        p->gpus = (int32_t)known;
    } else if (unset > 0) {
        if (p->gpus % known) {
            /* Name the plan as given: its fixed sizes, and the one that would take the rest. */
            char given[96] = "";
            const char *nm[5] = {"dp", "tp", "pp", "cp", "ep"};
            const int32_t v[5] = {p->dp, p->tp, p->pp, p->cp, p->ep};
            size_t at = 0;
            for (int i = 0; i < 5; i++)
                if (v[i] > (i < 3 ? 0 : 1) && at < sizeof given)
                    at += (size_t)snprintf(given + at, sizeof given - at, "%s%s=%d", at ? " x " : "", nm[i], v[i]);
            return mt_fail(err, MT_EINVAL,
                           "%d GPU%s cannot hold %s with %s taking the rest: %d is not a multiple of %lld "
                           "(change --gpus or the parallel sizes)", p->gpus, mt_plural(p->gpus), given,
                           !p->dp ? "dp" : !p->tp ? "tp" : "pp", p->gpus, (long long)known);
        }
        int32_t rest = (int32_t)(p->gpus / known);
        /* The remaining GPUs go to data parallelism unless dp was given. */
        if (p->dp == 0) p->dp = rest;
        else if (p->tp == 0) p->tp = rest;
        else p->pp = rest;
    }
    if (p->dp == 0) p->dp = 1;
    if (p->tp == 0) p->tp = 1;
    if (p->pp == 0) p->pp = 1;
    if ((int64_t)p->dp * p->tp * p->pp * p->cp * p->ep != p->gpus)
        return mt_fail(err, MT_EINVAL,
                       "impossible plan: dp=%d x tp=%d x pp=%d = %lld GPU%s, but --gpus is %d "
                       "(the product must equal the GPU count)", p->dp, p->tp, p->pp,
                       (long long)p->dp * p->tp * p->pp, mt_plural((int64_t)p->dp * p->tp * p->pp), p->gpus);
    /* A multi-rank trace keeps its own collectives at the traced GPU count. On another count the
     * traced groups (a pair's all-reduce) would stand for the plan's: regenerate them when the
     * ranks were replicas (DDP: a rank's trace is the whole model), else refuse (a rank of a TP,
     * pipeline or sharded job holds part of the model, which the plan's collectives cannot know). */
    if (p->comm == MT_COMM_AUTO && tp.multi_rank && !sparse && p->gpus != tp.world_size &&
        tp.sync != MT_TRACED_DDP)
        return mt_fail(err, MT_EINVAL, "%s is rank %d of a %d-GPU job whose ranks hold parts of the model (%s "
                       "synchronisation): it cannot be moved to %d GPUs as it is; keep %d GPUs, or give --comm "
                       "regenerate to treat the rank as a whole model", t->kineto_path ? t->kineto_path : "the trace",
                       tp.rank, tp.world_size, mt_traced_sync_name(tp.sync), p->gpus, tp.world_size);
    if (p->comm == MT_COMM_AUTO)
        p->comm = tp.multi_rank && !sparse && p->gpus == tp.world_size ? MT_COMM_TRACED : MT_COMM_REGENERATE;
    MT_CHECK(traced_tensor_plan(p, &tp, t, err));
    MT_CHECK(traced_pipeline_plan(p, &tp, t, err));
    if (p->sp && p->tp <= 1)
        return mt_fail(err, MT_EINVAL, "--sp needs --tp > 1 (sequence parallelism splits a tensor-parallel group's "
                       "norms and dropout by sequence; this plan has tp=%d)", p->tp);
    if (p->gpus > MT_GPUS_MAX) return mt_fail(err, MT_EINVAL, "%d GPUs is too many (at most %d)", p->gpus, MT_GPUS_MAX);
    MT_CHECK(check_sharding(p, err));
    MT_CHECK(check_schedule(p, err));
    MT_CHECK(check_expert_tp(p, err));
    if (p->vpp < 1) p->vpp = 1;
    int micro_default = p->micro_batches == 0;
    if (micro_default) p->micro_batches = p->pp > 1 ? p->pp : 1;
    if (p->bucket_bytes <= 0) return mt_fail(err, MT_EINVAL, "--bucket must be > 0");
    if (p->first_bucket_bytes <= 0) p->first_bucket_bytes = p->bucket_bytes;
    int32_t units = pipeline_units(t);
    const char *path = t->kineto_path ? t->kineto_path : t->et_path ? t->et_path : "the trace";
    /* A CUDA graph replays its kernels without the ops that made them: nothing in it can be split. */
    const char *split = p->tp > 1 ? "--tp" : p->pp > 1 ? "--pp" : p->cp > 1 ? "--cp" : p->ep > 1 ? "--ep"
                      : p->recompute != MT_RECOMPUTE_NONE ? "--recompute" : NULL;
    if (split && t->graph_dev_share > 0.5)
        return mt_fail(err, MT_EINVAL, "%s: %.0f %% of the step's kernel time ran inside %d CUDA graph%s "
                       "(cudaGraphLaunch), whose operators are not in the trace, so %s cannot split them: record the "
                       "step without CUDA graphs for this plan (data parallelism and ZeRO/FSDP work as traced)",
                       path, 100 * t->graph_dev_share, t->n_graph_launches, mt_plural(t->n_graph_launches), split);
    if (units == 0)
        return mt_fail(err, MT_EINVAL, "%s: the step has no forward operators or layers to place on GPUs "
                       "(is it a training step? mitosis inspect shows its phases)", path);
    if (p->pp > units)
        return mt_fail(err, MT_EINVAL,
                       "a pipeline of %d stages needs at least %d layers; %s has %d "
                       "(use fewer stages, --pp)", p->pp, p->pp, path, units);
    if ((int64_t)p->pp * p->vpp > units)
        return mt_fail(err, MT_EINVAL, "--vpp %d: %d stages x %d chunks = %d model chunks need at least as many layers; "
                       "%s has %d (use a smaller --vpp)", p->vpp, p->pp, p->vpp, p->pp * p->vpp, path, units);
    return resolve_batch(p, t, micro_default, err);
}

int32_t mt_plan_etp(const mt_plan *p) { return p->etp > 0 ? p->etp : p->tp; }

int32_t mt_plan_replicas(const mt_plan *p) { return p->dp * (p->ep > 1 ? p->ep : 1); }
int32_t mt_plan_shown_dp(const mt_plan *p) { return p->traced_tp || p->traced_pp ? 1 : p->dp; }
int32_t mt_plan_shown_tp(const mt_plan *p) { return p->traced_tp ? p->traced_tp : p->tp; }
int32_t mt_plan_shown_pp(const mt_plan *p) { return p->traced_pp ? p->traced_pp : p->pp; }
int32_t mt_plan_shown_micro(const mt_plan *p) { return p->traced_pp ? p->traced_micro : p->micro_batches; }

int32_t mt_plan_rank(const mt_plan *p, int32_t d, int32_t s, int32_t t) {
    mt_mesh m;
    mt_plan_mesh(p, &m);
    mt_coords c = {{0}};
    c.c[MT_DIM_TP] = t;
    c.c[MT_DIM_PP] = s;
    c.c[MT_DIM_DP_SHARD] = d % m.size[MT_DIM_DP_SHARD]; /* replica d = dp_rep x shard + dp_shard */
    c.c[MT_DIM_DP_REP] = d / m.size[MT_DIM_DP_SHARD];
    return mt_mesh_rank(&m, &c);
}

void mt_plan_coords(const mt_plan *p, int32_t rank, int32_t *d, int32_t *s, int32_t *t) {
    mt_mesh m;
    mt_plan_mesh(p, &m);
    mt_coords c;
    mt_mesh_coords(&m, rank, &c);
    *d = c.c[MT_DIM_DP_REP] * m.size[MT_DIM_DP_SHARD] + c.c[MT_DIM_DP_SHARD];
    *s = c.c[MT_DIM_PP];
    *t = c.c[MT_DIM_TP];
}

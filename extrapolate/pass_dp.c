/* extrapolate/pass_dp.c — the data-parallel pass: how the D replicas of a stage synchronise their
 * gradients (and, sharded, their parameters) over the DP group.
 *   sync  DataParallel: one blocking all-reduce of the stage's gradients after the last
 *         micro-batch's backward;
 *   ddp   DistributedDataParallel: gradients gathered into buckets in the order backward makes
 *         them ready (the first capped at first_bucket_bytes, the rest at bucket_bytes), each
 *         bucket all-reduced on the communication stream as soon as it fills, during the last
 *         micro-batch's backward; the optimizer waits for the last (WAIT_COMM);
 *   zero 1  ddp's buckets, the optimizer runs on 1/D of the parameters (its optimizer state is
 *         sharded), then a blocking all-gather of the stage's parameters. Gradients are
 *         all-reduced, as DeepSpeed's stage 1 and torch's ZeroRedundancyOptimizer do;
 *   zero 2  as 1 with each bucket reduce-scattered (gradients sharded too), in every micro-batch's
 *         backward: each GPU keeps only its shard of the accumulated gradients, as DeepSpeed's
 *         stage 2 does (it reduces outside accumulation boundaries too): per step (M+1)(N-1)/N of
 *         the stage's gradient bytes (M reduce-scatters, one all-gather) where stage 1 sends 3(N-1)/N;
 *   zero 3  parameters sharded: each unit (a trace layer) all-gathers its parameters before its
 *         forward and again before its backward (blocking), and reduce-scatters its gradients
 *         after its backward on a second communicator ("dp-rs", as FSDP's separate stream);
 *   fsdp  as zero 3, with the next unit's all-gather issued before waiting for the current one's
 *         (prefetch: it overlaps the current unit's compute); --fsdp-shard G (HSDP) shards inside
 *         groups of G replicas (mesh dimension dp_shard) and all-reduces each unit's gradient shard
 *         across the D / G groups (dp_rep) once its reduce-scatter has finished.
 * Sharded modes run every micro-batch's all-gathers and reduce-scatters (gradient accumulation
 * keeps sharded gradients). Per step and GPU a ZeRO-3/FSDP stage sends 3(N-1)/N of its parameter
 * bytes (two all-gathers, one reduce-scatter) against DDP's 2(N-1)/N. Sharding applies to the
 * replicated weights only (statemem.h): experts and sharded tables are owned, never gathered. Memory
 * per GPU is statemem.h's; this pass adds the largest unit's gathered parameters (zero 3, fsdp).
 * With plan comm traced (a multi-rank trace), the job's own collectives stand for these and the
 * pass only makes the optimizer wait for them.
 * Under context parallelism (cp > 1) the CP ranks hold the same weights too: DDP buckets and the
 * sync all-reduce span dp x cp ("dp+cp"), and sharded modes shard over dp x cp (or, hybrid,
 * dp_shard x cp) as torchtitan's dp_shard_cp.
 * Invariant: every gradient byte of the stage is in exactly one bucket, the sync all-reduce, or one
 * unit's reduce-scatter; every unit's parameter bytes are in exactly one unit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/build.h"

typedef struct dp_state {
    int active;             /* this backward micro-batch fills buckets (ddp, last micro-batch) */
    int kind;               /* DDP buckets' and the sync all-reduce's group: DP, or DP x CP ("dp+cp")
                             * under context parallelism, whose ranks hold the same weights too */
    double bucket;          /* bytes in the bucket being filled */
    int32_t bucket_layer;   /* the layer of the last gradient added, -1 */
    int32_t first_bucket;   /* p->ddp_buckets when this backward began: PyTorch caps the first lower */
    /* zero 3 / fsdp: */
    int per_unit, prefetch, hybrid;
    int32_t shard;          /* ranks sharding the states (mt_plan_shard) */
    int ag_kind, rs_kind, rep_kind; /* group kinds: all-gathers, reduce-scatters, hybrid all-reduces */
    double *unit_w;         /* per unit: its parameter bytes per GPU, unsharded (a stage's parameters
                             * outside any unit count in its first forward unit) */
    double *bwd_w;          /* per unit: the bytes its backward gathers and reduce-scatters (unit_w;
                             * 0 for a unit no backward op runs in) */
    double *join_w;         /* per unit: the bytes of the units after it on its stage, up to the next
                             * that a backward op runs in, that none runs in (their gradients come
                             * from another unit's ops: ResNet's downsampling blocks, an RMSNorm):
                             * gathered and reduce-scattered on their own after this unit's
                             * reduce-scatter, never held with another unit's parameters */
    double *max_unit;       /* per stage: the largest unit_w or join_w (one unit's own parameters) */
    int32_t *next_unit;     /* per forward/backward op: the next unit its stage runs in the same phase
                             * after this op's unit, -1 */
    int32_t cur;            /* the unit whose ops are being emitted, -1 before the first */
    int prefetched;         /* cur's all-gather was issued by the previous unit */
    double rep_pending;     /* hybrid: bytes of the last reduce-scatter not yet all-reduced */
} dp_state;

/* Ranks holding the same weights: the replicas, times the context-parallel ranks. */
static int32_t grad_ranks(const mt_plan *pl) { return mt_plan_replicas(pl) * pl->cp; }

static int ddp_buckets(const mt_plan *pl) {
    return grad_ranks(pl) > 1 && pl->dp_mode == MT_DP_DDP && pl->comm != MT_COMM_TRACED && pl->zero < 3 && !pl->fsdp;
}

static mt_status dp_prepare(mt_bld *b, void **st, mt_error *err) {
    (void)err;
    const mt_plan *pl = b->plan;
    dp_state *x = calloc(1, sizeof *x);
    *st = x;
    if (!x) return MT_ENOMEM;
    int cp = pl->cp > 1;    /* the CP ranks hold the same weights: they join every DP group and shard */
    x->shard = mt_state_shard(pl);
    x->per_unit = grad_ranks(pl) > 1 && (pl->zero == 3 || pl->fsdp);
    x->prefetch = pl->fsdp;
    x->hybrid = x->per_unit && mt_plan_shard(pl) < pl->dp;
    x->kind = MT_GROUP_DP;
    mt_groups *g = &b->p->groups;
    if (cp && (x->kind = mt_groups_add(g, MT_DIMS_DP | MT_DIM_BIT(MT_DIM_CP), 0, "dp+cp")) < 0)
        return mt_fail(err, MT_EINVAL, "too many communication group kinds in one plan (at most %d)",
                       MT_GROUP_KINDS_MAX);
    if (!x->per_unit) return MT_OK;
    uint32_t dims = (x->hybrid ? MT_DIM_BIT(MT_DIM_DP_SHARD) : MT_DIMS_DP) | (cp ? MT_DIM_BIT(MT_DIM_CP) : 0);
    x->ag_kind = x->hybrid ? mt_groups_add(g, dims, 0, cp ? "dp_shard+cp" : "dp_shard") : x->kind;
    x->rs_kind = mt_groups_add(g, dims, 0, x->hybrid ? (cp ? "dp_shard+cp-rs" : "dp_shard-rs") : (cp ? "dp+cp-rs" : "dp-rs"));
    x->rep_kind = x->hybrid ? mt_groups_add(g, MT_DIM_BIT(MT_DIM_DP_REP), 0, "dp_rep") : -1;
    if (x->ag_kind < 0 || x->rs_kind < 0 || (x->hybrid && x->rep_kind < 0))
        return mt_fail(err, MT_EINVAL, "too many communication group kinds in one plan (at most %d)",
                       MT_GROUP_KINDS_MAX);
    return MT_OK;
}

static void dp_release(void *st) {
    dp_state *x = st;
    if (!x) return;
    free(x->unit_w);
    free(x->bwd_w);
    free(x->join_w);
    free(x->max_unit);
    free(x->next_unit);
    free(x);
}

/* bwd_w and join_w: a unit its stage's backward runs ops in gathers its own bytes; one it runs none
 * in joins the nearest such unit before it on its stage (whose backward runs after: the gradients
 * exist by its reduce-scatter), else the nearest after it, as a gather of its own; O(ops + units). */
static mt_status backward_units(mt_bld *b, dp_state *x) {
    const trace *t = b->t;
    int32_t U = b->n_units;
    uint8_t *has = calloc((size_t)(U > 0 ? U : 1), 1);
    x->bwd_w = calloc((size_t)(U > 0 ? U : 1), sizeof *x->bwd_w);
    x->join_w = calloc((size_t)(U > 0 ? U : 1), sizeof *x->join_w);
    if (!has || !x->bwd_w || !x->join_w) {
        free(has);
        return MT_ENOMEM;
    }
    for (int32_t i = 0; i < t->n_ops; i++)
        if (t->ops[i].phase == TRACE_PHASE_BACKWARD && !trace_op_is_comm(&t->ops[i]) && b->unit[i] >= 0 &&
            b->unit[i] < U)
            has[b->unit[i]] = 1;
    for (int32_t u = 0; u < U; u++) {
        int32_t to = -1, s = b->stage_of_unit[u];
        if (has[u]) {
            x->bwd_w[u] += x->unit_w[u];
            continue;
        }
        for (int32_t v = u - 1; v >= 0 && to < 0 && b->stage_of_unit[v] == s; v--)
            if (has[v]) to = v;
        for (int32_t v = u + 1; v < U && to < 0 && b->stage_of_unit[v] == s; v++)
            if (has[v]) to = v;
        if (to >= 0) x->join_w[to] += x->unit_w[u];
    }
    free(has);
    return MT_OK;
}

/* unit_w and max_unit: each replicated weight (statemem.h: not an expert's, not a sharded table's)
 * counts in the unit of the forward op that first reads it on its stage (as the core's gradients: a
 * tied copy in the unit of the later stage reading it), split as that op; O(ops + trefs). */
static mt_status unit_weights(mt_bld *b, dp_state *x) {
    const trace *t = b->t;
    int32_t P = b->plan->pp;
    uint8_t *seen = calloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1), 1); /* 1 its stage, 2 its copy's */
    int32_t *first_unit = malloc((size_t)P * sizeof *first_unit);
    double *in_units = calloc((size_t)P, sizeof *in_units);
    x->unit_w = calloc((size_t)(b->n_units > 0 ? b->n_units : 1), sizeof *x->unit_w);
    x->max_unit = calloc((size_t)P, sizeof *x->max_unit);
    mt_status rc = seen && first_unit && in_units && x->unit_w && x->max_unit ? MT_OK : MT_ENOMEM;
    for (int32_t s = 0; rc == MT_OK && s < P; s++) first_unit[s] = -1;
    for (int32_t i = 0; rc == MT_OK && i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        int32_t u = b->unit[i];
        if (o->phase != TRACE_PHASE_FORWARD || u < 0 || u >= b->n_units) continue;
        int32_t s = mt_bld_op_stage(b, i);
        if (first_unit[s] < 0 && !trace_op_is_comm(o)) first_unit[s] = u;
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t w = t->trefs[o->in_first + j].tensor;
            if (w < 0 || w >= t->n_tensors || t->tensors[w].role != TRACE_ROLE_WEIGHT || b->w_own[w] != 1) continue;
            uint8_t bit = s == b->w_stage[w] ? 1 : s == b->w_copy[w] ? 2 : 0;
            if (!bit || (seen[w] & bit)) continue;
            seen[w] |= bit;
            double bytes = t->tensors[w].bytes / b->w_split[w];
            x->unit_w[u] += bytes;
            in_units[s] += bytes;
        }
    }
    for (int32_t s = 0; rc == MT_OK && s < P; s++) {
        double rest = b->w_stage_rep[s] - in_units[s];
        if (rest > 1 && first_unit[s] >= 0) x->unit_w[first_unit[s]] += rest;
    }
    if (rc == MT_OK) rc = backward_units(b, x);
    for (int32_t u = 0; rc == MT_OK && u < b->n_units; u++) {
        int32_t s = b->stage_of_unit[u];
        if (x->unit_w[u] > x->max_unit[s]) x->max_unit[s] = x->unit_w[u];
        if (x->join_w[u] > x->max_unit[s]) x->max_unit[s] = x->join_w[u];
    }
    free(seen);
    free(first_unit);
    free(in_units);
    return rc;
}

/* The ops emission walks: forward and backward compute ops (mt_bld_forward, mt_bld_backward). */
static int walked(const trace *t, int32_t i) {
    const trace_op *o = &t->ops[i];
    return (o->phase == TRACE_PHASE_FORWARD || o->phase == TRACE_PHASE_BACKWARD) && !trace_op_is_comm(o);
}

/* next_unit: one scan from the end, per stage and phase the nearest later op's unit; O(ops). */
static mt_status next_units(mt_bld *b, dp_state *x) {
    const trace *t = b->t;
    int32_t P = b->plan->pp;
    int32_t *later = malloc((size_t)P * 2 * sizeof *later); /* [s][phase is backward]: the op */
    x->next_unit = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *x->next_unit);
    if (!later || !x->next_unit) {
        free(later);
        return MT_ENOMEM;
    }
    for (int32_t k = 0; k < 2 * P; k++) later[k] = -1;
    for (int32_t i = t->n_ops - 1; i >= 0; i--) {
        x->next_unit[i] = -1;
        if (!walked(t, i)) continue;
        int32_t *l = &later[mt_bld_op_stage(b, i) * 2 + (t->ops[i].phase == TRACE_PHASE_BACKWARD)];
        if (*l >= 0) x->next_unit[i] = b->unit[*l] != b->unit[i] ? b->unit[*l] : x->next_unit[*l];
        *l = i;
    }
    free(later);
    return MT_OK;
}

static mt_status dp_analyse(mt_bld *b, void *st, mt_error *err) {
    (void)err;
    dp_state *x = st;
    if (!x->per_unit) return MT_OK;
    MT_CHECK(unit_weights(b, x));
    return next_units(b, x);
}

/* Unit u's bytes gathered (and in backward reduce-scattered) in phase ph. */
static double unit_bytes(const mt_bld *b, const dp_state *x, int32_t u, trace_phase ph) {
    return u < 0 || u >= b->n_units ? 0 : ph == TRACE_PHASE_BACKWARD ? x->bwd_w[u] : x->unit_w[u];
}

static mt_status dp_mb_begin(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last) {
    (void)em;
    (void)s;
    (void)mb;
    dp_state *x = st;
    x->cur = -1;
    x->prefetched = 0;
    x->rep_pending = 0;
    if (dir > 0) return MT_OK;
    x->active = ddp_buckets(b->plan) && (last || b->plan->zero == 2); /* zero 2: every micro-batch */
    x->bucket = 0;
    x->bucket_layer = -1;
    x->first_bucket = b->p->ddp_buckets;
    return MT_OK;
}

static mt_status bucket_out(mt_bld *b, dp_state *x, mt_emit *em, int32_t mb) {
    mt_coll_op op = b->plan->zero == 2 ? MT_COLL_REDUCESCATTER : MT_COLL_ALLREDUCE;
    MT_CHECK(mt_emit_coll(em, x->kind, op, MT_COLL_WHY_DP_GRAD, 0, x->bucket, x->bucket_layer, mb,
                          TRACE_PHASE_BACKWARD));
    b->p->ddp_buckets++;
    x->bucket = 0;
    return MT_OK;
}

static mt_status wait_group(mt_emit *em, int kind, int32_t keep, int32_t mb, trace_phase ph) {
    mt_task *k = mt_emit_task(em, MT_TASK_WAIT_GROUP);
    if (!k) return MT_ENOMEM;
    k->group = kind;
    k->keep = keep;
    k->mb = mb;
    k->phase = (int8_t)ph;
    return MT_OK;
}

/* w bytes of gradients are complete: reduce-scatter them; hybrid, all-reduce the previous
 * reduce-scatter's shard across the replica groups once it has finished (all but the one just
 * issued, in issue order). */
static mt_status shard_reduce(mt_bld *b, dp_state *x, mt_emit *em, double w, int32_t layer, int32_t mb) {
    if (w <= 0) return MT_OK;
    MT_CHECK(mt_emit_coll(em, x->rs_kind, MT_COLL_REDUCESCATTER, MT_COLL_WHY_DP_GRAD, 0, w, layer, mb,
                          TRACE_PHASE_BACKWARD));
    if (!x->hybrid) return MT_OK;
    if (x->rep_pending > 0) {
        MT_CHECK(wait_group(em, x->rs_kind, 1, mb, TRACE_PHASE_BACKWARD));
        MT_CHECK(mt_emit_coll(em, x->rep_kind, MT_COLL_ALLREDUCE, MT_COLL_WHY_DP_GRAD, 0, x->rep_pending, layer, mb,
                              TRACE_PHASE_BACKWARD));
    }
    x->rep_pending = w / x->shard;
    return MT_OK;
}

/* Unit cur's gradients are complete: reduce-scatter them; then the units joined to it (join_w),
 * gathered on their own once cur's parameters are freed, and reduce-scattered. */
static mt_status unit_reduce(mt_bld *b, dp_state *x, mt_emit *em, int32_t mb) {
    int32_t layer = x->cur >= 0 && b->t->n_layers > 0 ? x->cur : -1;
    MT_CHECK(shard_reduce(b, x, em, unit_bytes(b, x, x->cur, TRACE_PHASE_BACKWARD), layer, mb));
    double j = x->cur >= 0 && x->cur < b->n_units ? x->join_w[x->cur] : 0;
    if (j <= 0) return MT_OK;
    MT_CHECK(mt_emit_coll(em, x->ag_kind, MT_COLL_ALLGATHER, MT_COLL_WHY_DP_PARAMS, 1, j, layer, mb,
                          TRACE_PHASE_BACKWARD));
    return shard_reduce(b, x, em, j, layer, mb);
}

/* Unit u begins (its ops follow; `next` is the unit after it in this phase, -1): its parameters are
 * gathered — blocking (zero 3), or waited for with the next unit's prefetch in flight (fsdp). */
static mt_status unit_gather(mt_bld *b, dp_state *x, mt_emit *em, int32_t u, int32_t next, int32_t mb, trace_phase ph) {
    double w = unit_bytes(b, x, u, ph), wn = unit_bytes(b, x, next, ph);
    int32_t layer = b->t->n_layers > 0 ? u : -1;
    if (!x->prefetch) {
        if (w <= 0) return MT_OK;
        b->p->shard_units += ph == TRACE_PHASE_FORWARD && mb == 0;
        return mt_emit_coll(em, x->ag_kind, MT_COLL_ALLGATHER, MT_COLL_WHY_DP_PARAMS, 1, w, layer, mb, ph);
    }
    if (w > 0 && !x->prefetched)
        MT_CHECK(mt_emit_coll(em, x->ag_kind, MT_COLL_ALLGATHER, MT_COLL_WHY_DP_PARAMS, 0, w, layer, mb, ph));
    x->prefetched = wn > 0;
    if (wn > 0)
        MT_CHECK(mt_emit_coll(em, x->ag_kind, MT_COLL_ALLGATHER, MT_COLL_WHY_DP_PARAMS, 0, wn,
                              b->t->n_layers > 0 ? next : -1, mb, ph));
    b->p->shard_units += w > 0 && ph == TRACE_PHASE_FORWARD && mb == 0;
    return w > 0 ? wait_group(em, x->ag_kind, wn > 0, mb, ph) : MT_OK;
}

static mt_status dp_before_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    dp_state *x = st;
    if (!x->per_unit || b->unit[op] == x->cur) return MT_OK;
    trace_phase ph = (trace_phase)b->t->ops[op].phase;
    if (ph == TRACE_PHASE_BACKWARD && x->cur >= 0) MT_CHECK(unit_reduce(b, x, em, mb));
    x->cur = b->unit[op];
    return unit_gather(b, x, em, x->cur, x->next_unit[op], mb, ph);
}

static mt_status dp_after_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    dp_state *x = st;
    if (!x->active || b->t->ops[op].phase != TRACE_PHASE_BACKWARD || b->grad_ready[op] <= 0) return MT_OK;
    x->bucket += b->grad_ready[op];
    if (b->t->n_layers > 0 && b->unit[op] >= 0) x->bucket_layer = b->unit[op];
    const mt_plan *pl = b->plan;
    if (x->bucket >= (b->p->ddp_buckets == x->first_bucket ? pl->first_bucket_bytes : pl->bucket_bytes))
        return bucket_out(b, x, em, mb);
    return MT_OK;
}

static mt_status dp_mb_end(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last) {
    (void)last;
    dp_state *x = st;
    if (dir > 0) return MT_OK;
    if (x->per_unit) {
        if (x->cur >= 0) MT_CHECK(unit_reduce(b, x, em, mb));
        if (x->rep_pending <= 0) return MT_OK;
        MT_CHECK(wait_group(em, x->rs_kind, 0, mb, TRACE_PHASE_BACKWARD));
        return mt_emit_coll(em, x->rep_kind, MT_COLL_ALLREDUCE, MT_COLL_WHY_DP_GRAD, 0, x->rep_pending, -1, mb,
                            TRACE_PHASE_BACKWARD);
    }
    if (!x->active) return MT_OK;
    if (b->chunk < b->plan->pp) x->bucket += b->tail_grad[s]; /* once: with the stage's first chunk (--vpp) */
    return x->bucket > 0 ? bucket_out(b, x, em, mb) : MT_OK;
}

/* ZeRO 1 and 2: after the optimizer updated this GPU's shard, every GPU gathers the parameters. */
static mt_status dp_step_end(mt_bld *b, void *st, mt_emit *em, int32_t s) {
    const dp_state *x = st;
    const mt_plan *pl = b->plan;
    if (grad_ranks(pl) <= 1 || (pl->zero != 1 && pl->zero != 2) || b->w_stage_rep[s] <= 0) return MT_OK;
    return mt_emit_coll(em, x->kind, MT_COLL_ALLGATHER, MT_COLL_WHY_DP_PARAMS, 1, b->w_stage_rep[s], -1, -1,
                        TRACE_PHASE_OPTIMIZER);
}

static double dp_optimizer_share(mt_bld *b, void *st, int32_t op) {
    (void)b;
    (void)op;
    const dp_state *x = st;
    return 1.0 / x->shard;
}

/* ZeRO-3 / FSDP: the largest unit is gathered whole while it runs (statemem.h composes the rest). */
static void dp_states(mt_bld *b, void *st, int32_t s, mt_state_bytes *w) {
    (void)b;
    const dp_state *x = st;
    if (x->per_unit && x->shard > 1) w->gathered = x->max_unit[s];
}

static mt_status dp_backward_done(mt_bld *b, void *st, mt_emit *em, int32_t s) {
    dp_state *x = st;
    const mt_plan *pl = b->plan;
    if (grad_ranks(pl) <= 1) return MT_OK;
    if (pl->dp_mode == MT_DP_SYNC && pl->comm != MT_COMM_TRACED) {
        double grads = b->w_stage_rep[s];
        if (grads <= 0) return MT_OK;
        return mt_emit_coll(em, x->kind, MT_COLL_ALLREDUCE, MT_COLL_WHY_DP_GRAD, 1, grads, -1, -1,
                            TRACE_PHASE_BACKWARD);
    }
    return mt_emit_simple(em, MT_TASK_WAIT_COMM, 0, -1, 0);
}

static int dp_warning(mt_bld *b, void *st, char *buf, int len) {
    (void)st;
    if (b->plan->dp > 1 && b->t->param_bytes <= 0 && b->plan->comm != MT_COMM_TRACED) {
        snprintf(buf, (size_t)len, "the trace has no parameter sizes: data-parallel gradient all-reduces carry 0 bytes");
        return 5;
    }
    return 0;
}

const mt_pass mt_pass_dp = {
    .name = "dp",
    .prepare = dp_prepare,
    .release = dp_release,
    .analyse = dp_analyse,
    .optimizer_share = dp_optimizer_share,
    .mb_begin = dp_mb_begin,
    .before_op = dp_before_op,
    .after_op = dp_after_op,
    .mb_end = dp_mb_end,
    .backward_done = dp_backward_done,
    .step_end = dp_step_end,
    .states = dp_states,
    .warning = dp_warning,
};

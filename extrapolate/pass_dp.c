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
 *   zero 2  as 1 with each bucket reduce-scattered (gradients sharded too);
 *   distopt Megatron's distributed optimizer: ddp's buckets (Megatron's size) reduce-scattered, the
 *         optimizer on 1/D; the parameters' all-gathers are pass_distopt.c's;
 *   zero 3  parameters sharded: each unit all-gathers its parameters before its forward and again before
 *         its backward, and reduce-scatters its gradients once its last backward op has run, on a second
 *         communicator ("dp-rs", as FSDP's separate stream). Units (shard_units): every K repeating
 *         blocks (blocks.h) one unit and the layers outside them one root unit per model chunk (--fsdp's
 *         default, K = 1: FSDP2's fully_shard per block + root), or the trace's layers (--zero 3's
 *         default: DeepSpeed's submodules, --fsdp-units layer). A unit's all-gather is blocking
 *         (--zero 3's default) or issued with those of the next N units (--fsdp-prefetch, --fsdp's
 *         default 1) and waited for with theirs left in flight. After its forward a unit is resharded
 *         (gathered again for backward) unless held: the root always (FSDP2 never reshards the root
 *         after forward), the chunk's last unit (--fsdp-reshard not-last), every unit (none);
 *   fsdp  as zero 3 with FSDP2's defaults; --fsdp-shard G (HSDP) shards inside
 *         groups of G replicas (mesh dimension dp_shard) and all-reduces each unit's gradient shard
 *         across the D / G groups (dp_rep) once its reduce-scatter has finished.
 * The precision policy (precision.h) scales the bytes: all-gathers by the param dtype, reductions (DDP
 * buckets fill by them) by the reduce dtype.
 * Sharded modes run every micro-batch's all-gathers and reduce-scatters (gradient accumulation
 * keeps sharded gradients). Per step and GPU a ZeRO-3/FSDP stage sends (3W - R)(N-1)/N of its W
 * parameter bytes (two all-gathers but of the R bytes held, one reduce-scatter) against DDP's
 * 2(N-1)/N. Sharding applies to the replicated weights only (statemem.h): experts and sharded tables
 * are owned, never gathered. Memory per GPU is statemem.h's; this pass adds the most parameter bytes
 * gathered at once (the held units, the running one and its prefetched ones).
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

#include "extrapolate/blocks.h"
#include "extrapolate/build.h"

typedef struct dp_state {
    int active;             /* this backward micro-batch fills buckets (ddp, last micro-batch) */
    int kind;               /* DDP buckets' and the sync all-reduce's group: DP, or DP x CP ("dp+cp")
                             * under context parallelism, whose ranks hold the same weights too */
    double bucket;          /* bytes in the bucket being filled */
    int32_t bucket_layer;   /* the layer of the last gradient added, -1 */
    int32_t first_bucket;   /* p->ddp_buckets when this backward began: PyTorch caps the first lower */
    /* zero 3 / fsdp: */
    double ag_x, rs_x;      /* the precision policy's bytes per traced byte: parameters gathered, gradients
                             * reduced (precision.h) */
    int per_unit, hybrid;
    int32_t prefetch;       /* units all-gathered ahead of the running one (mt_plan_prefetch) */
    int32_t shard;          /* ranks sharding the states (mt_plan_shard) */
    int ag_kind, rs_kind, rep_kind; /* group kinds: all-gathers, reduce-scatters, hybrid all-reduces */
    int32_t n_su;           /* shard units (shardunits below) */
    int32_t *su;            /* per core unit (layer): its shard unit */
    double *unit_w;         /* per shard unit: its parameter bytes per GPU, unsharded (a stage's parameters
                             * outside any unit count in its first forward unit) */
    double *bwd_w;          /* per shard unit: the bytes its backward gathers and reduce-scatters (unit_w;
                             * 0 for a unit no backward op runs in) */
    double *join_w;         /* per shard unit: the bytes of the units after it on its stage, up to the next
                             * that a backward op runs in, that none runs in (their gradients come from
                             * another unit's ops: an RMSNorm's weight, ResNet's downsampling batch norms):
                             * gathered on their own once this unit is reduce-scattered (DeepSpeed and
                             * FSDP gather each module's parameters for its own backward), then
                             * reduce-scattered: never gathered with another unit's parameters */
    double *join_ag;        /* per shard unit: of join_w, the bytes not held from the forward (gathered) */
    uint8_t *held;          /* per shard unit: not resharded after forward (the root; --fsdp-reshard) */
    int32_t *su_stage;      /* per shard unit: its stage */
    int32_t *su_layer;      /* per shard unit: its first layer (reports attribute its collectives there) */
    int32_t *last_bwd;      /* per shard unit: its last backward op (its gradients are complete), -1 */
    double *gathered;       /* per stage: the most parameter bytes gathered at once */
    int32_t *next_op;       /* per walked op: the first op of the next shard unit its model chunk runs in the
                             * same phase, -1 */
    /* emission, one micro-batch's forward or backward: */
    int32_t cur;            /* the shard unit whose ops are being emitted, -1 before the first */
    uint8_t *ag_state;      /* per shard unit: 0 sharded, 1 all-gather in flight, 2 gathered */
    int32_t *ag_no;         /* per shard unit: the issue number of its all-gather in flight */
    int32_t ag_count;       /* all-gathers issued */
    uint8_t *reduced;       /* per shard unit: its gradients reduce-scattered in this backward */
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
    x->ag_x = b->p->prec_scale.param;
    x->rs_x = b->p->prec_scale.grad;
    x->per_unit = grad_ranks(pl) > 1 && (pl->zero == 3 || pl->fsdp);
    x->prefetch = mt_plan_prefetch(pl);
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
    free(x->su);
    free(x->unit_w);
    free(x->bwd_w);
    free(x->join_w);
    free(x->join_ag);
    free(x->held);
    free(x->su_stage);
    free(x->su_layer);
    free(x->last_bwd);
    free(x->gathered);
    free(x->next_op);
    free(x->ag_state);
    free(x->ag_no);
    free(x->reduced);
    free(x);
}

/* The shard unit op runs in, -1 none. */
static int32_t su_of(const mt_bld *b, const dp_state *x, int32_t op) {
    int32_t u = b->unit[op];
    return u >= 0 && u < b->n_units ? x->su[u] : -1;
}

/* The ops emission walks: forward and backward compute ops (mt_bld_forward, mt_bld_backward). */
static int walked(const mt_trace *t, int32_t i) {
    const trace_op *o = &t->ops[i];
    return (o->phase == TRACE_PHASE_FORWARD || o->phase == TRACE_PHASE_BACKWARD) && !trace_op_is_comm(o);
}

/* ---- ZeRO-3 / FSDP units: grouping, bytes, order, memory (analyse) ------------------------------ */

/* su, n_su, su_stage, held: with blocks (mt_plan_unit_blocks K >= 1) and a repeating block found
 * (blocks.h) whose copies hold at least half of the parameters, every K consecutive blocks of a model chunk are one shard unit and the layers outside the
 * blocks one root unit per chunk (FSDP2's fully_shard per block plus the root: embedding, final norm,
 * head), the root held from its forward to its backward (FSDP2 never reshards the root after forward);
 * otherwise each layer is one. --fsdp-reshard not-last holds each chunk's last non-root unit too, none
 * every unit; O(layers + chunks). */
static mt_status shard_units(mt_bld *b, dp_state *x) {
    const mt_plan *pl = b->plan;
    int32_t U = b->n_units > 0 ? b->n_units : 1, K = mt_plan_unit_blocks(pl);
    int32_t C = pl->pp * (pl->vpp > 1 ? pl->vpp : 1);
    mt_blocks bl;
    memset(&bl, 0, sizeof bl);
    if (K > 0 && b->t->n_layers > 0) mt_blocks_find(b->t, &bl);
    /* blocks that hold under half the parameters (a ResNet's one repeated stage) are not what a model is
     * wrapped by: the layers then */
    int blocks = K > 0 && bl.found && 2 * bl.count * bl.param_bytes >= b->t->param_bytes;
    b->p->shard_unit_blocks = blocks ? K : 0;
    int32_t *root = malloc((size_t)C * sizeof *root), *last = malloc((size_t)C * sizeof *last);
    x->su = malloc((size_t)U * sizeof *x->su);
    x->su_stage = malloc((size_t)U * sizeof *x->su_stage);
    x->su_layer = malloc((size_t)U * sizeof *x->su_layer);
    x->held = calloc((size_t)U, 1);
    if (!root || !last || !x->su || !x->su_stage || !x->su_layer || !x->held) {
        free(root);
        free(last);
        return MT_ENOMEM;
    }
    for (int32_t c = 0; c < C; c++) root[c] = last[c] = -1;
    int32_t group = -1, chunk = -1;
    x->n_su = 0;
    for (int32_t u = 0; u < b->n_units; u++) {
        int32_t c = b->chunk_of_unit[u];
        int in = blocks && u >= bl.first && u < bl.first + bl.count * bl.layers;
        if (blocks && !in) {
            if (root[c] < 0) {
                root[c] = x->n_su++;
                x->held[root[c]] = 1;
                x->su_stage[root[c]] = b->stage_of_unit[u];
                x->su_layer[root[c]] = u;
            }
            x->su[u] = root[c];
            group = -1;
            continue;
        }
        int32_t gi = blocks ? (u - bl.first) / bl.layers / K : u;
        if (gi != group || c != chunk) {
            x->su_stage[x->n_su] = b->stage_of_unit[u];
            x->su_layer[x->n_su] = u;
            x->n_su++;
        }
        x->su[u] = last[c] = x->n_su - 1;
        group = gi;
        chunk = c;
    }
    for (int32_t c = 0; c < C; c++)
        if (last[c] >= 0 && pl->reshard == MT_RESHARD_NOT_LAST) x->held[last[c]] = 1;
    for (int32_t v = 0; v < x->n_su && pl->reshard == MT_RESHARD_NONE; v++) x->held[v] = 1;
    free(root);
    free(last);
    return MT_OK;
}

/* bwd_w, join_w, join_ag: a shard unit its stage's backward runs ops in gathers its own bytes; one it
 * runs none in joins the nearest such unit before it on its stage (whose backward runs after: the
 * gradients exist by its reduce-scatter), else the nearest after it, as a gather of its own (none on
 * its stage: it keeps its bytes); last_bwd: each unit's last backward op; O(ops + units). */
static mt_status backward_units(mt_bld *b, dp_state *x) {
    const mt_trace *t = b->t;
    int32_t U = x->n_su > 0 ? x->n_su : 1;
    uint8_t *has = calloc((size_t)U, 1);
    x->bwd_w = calloc((size_t)U, sizeof *x->bwd_w);
    x->join_w = calloc((size_t)U, sizeof *x->join_w);
    x->join_ag = calloc((size_t)U, sizeof *x->join_ag);
    x->last_bwd = malloc((size_t)U * sizeof *x->last_bwd);
    if (!has || !x->bwd_w || !x->join_w || !x->join_ag || !x->last_bwd) {
        free(has);
        return MT_ENOMEM;
    }
    for (int32_t u = 0; u < U; u++) x->last_bwd[u] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        int32_t u = su_of(b, x, i);
        if (t->ops[i].phase != TRACE_PHASE_BACKWARD || !walked(t, i) || u < 0) continue;
        has[u] = 1;
        x->last_bwd[u] = i;
    }
    for (int32_t u = 0; u < x->n_su; u++) {
        int32_t to = -1, s = x->su_stage[u];
        for (int32_t v = u - 1; !has[u] && v >= 0 && to < 0 && x->su_stage[v] == s; v--)
            if (has[v]) to = v;
        for (int32_t v = u + 1; !has[u] && v < x->n_su && to < 0 && x->su_stage[v] == s; v++)
            if (has[v]) to = v;
        if (to < 0) {
            x->bwd_w[u] += x->unit_w[u];
            continue;
        }
        x->join_w[to] += x->unit_w[u];
        x->join_ag[to] += x->held[u] ? 0 : x->unit_w[u];
    }
    free(has);
    return MT_OK;
}

/* unit_w: each replicated weight (statemem.h: not an expert's, not a sharded table's) counts in the
 * shard unit of the forward op that first reads it on its stage (as the core's gradients: a tied copy
 * in the unit of the later stage reading it), split as that op; O(ops + trefs). */
static mt_status unit_weights(mt_bld *b, dp_state *x) {
    const mt_trace *t = b->t;
    int32_t P = b->plan->pp;
    uint8_t *seen = calloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1), 1); /* 1 its stage, 2 its copy's */
    int32_t *first_unit = malloc((size_t)P * sizeof *first_unit);
    double *in_units = calloc((size_t)P, sizeof *in_units);
    x->unit_w = calloc((size_t)(x->n_su > 0 ? x->n_su : 1), sizeof *x->unit_w);
    mt_status rc = seen && first_unit && in_units && x->unit_w ? MT_OK : MT_ENOMEM;
    for (int32_t s = 0; rc == MT_OK && s < P; s++) first_unit[s] = -1;
    for (int32_t i = 0; rc == MT_OK && i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        int32_t u = su_of(b, x, i);
        if (o->phase != TRACE_PHASE_FORWARD || u < 0) continue;
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
    free(seen);
    free(first_unit);
    free(in_units);
    return rc;
}

/* next_op: one scan from the end, per model chunk and phase the nearest later op; where its shard unit
 * differs it is the first op of the next unit, else this op's next is its; O(ops). */
static mt_status next_ops(mt_bld *b, dp_state *x) {
    const mt_trace *t = b->t;
    int32_t C = b->plan->pp * (b->plan->vpp > 1 ? b->plan->vpp : 1);
    int32_t *later = malloc((size_t)C * 2 * sizeof *later); /* [chunk][phase is backward]: the op */
    x->next_op = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *x->next_op);
    if (!later || !x->next_op) {
        free(later);
        return MT_ENOMEM;
    }
    for (int32_t k = 0; k < 2 * C; k++) later[k] = -1;
    for (int32_t i = t->n_ops - 1; i >= 0; i--) {
        x->next_op[i] = -1;
        if (!walked(t, i)) continue;
        int32_t *l = &later[mt_bld_op_chunk(b, i) * 2 + (t->ops[i].phase == TRACE_PHASE_BACKWARD)];
        if (*l >= 0) x->next_op[i] = su_of(b, x, *l) != su_of(b, x, i) ? *l : x->next_op[*l];
        *l = i;
    }
    free(later);
    return MT_OK;
}

/* Unit u's bytes gathered (and in backward reduce-scattered) in phase ph. */
static double unit_bytes(const dp_state *x, int32_t u, trace_phase ph) {
    return u < 0 || u >= x->n_su ? 0 : ph == TRACE_PHASE_BACKWARD ? x->bwd_w[u] : x->unit_w[u];
}

/* The bytes of the `d` (+ 1 when `self`) shard units from op j on its chunk's walk in op j's phase, each
 * once, held ones left out (win: scratch for d + 1 units). */
static double window_bytes(const mt_bld *b, const dp_state *x, int32_t j, int32_t d, int self, int32_t *win) {
    trace_phase ph = (trace_phase)b->t->ops[j].phase;
    double sum = 0;
    if (!self) j = x->next_op[j];
    for (int32_t n = 0; j >= 0 && n < d + self; j = x->next_op[j], n++) {
        int32_t u = su_of(b, x, j), dup = u < 0 || x->held[u];
        for (int32_t k = 0; k < n && !dup; k++) dup = win[k] == u;
        win[n] = u;
        if (!dup) sum += unit_bytes(x, u, ph);
    }
    return sum;
}

/* gathered: per stage, the held units' bytes (the larger of forward and backward) plus the most bytes
 * of a running unit and the `prefetch` units after it that are not held, or of the units joined to one
 * (join_ag) once it is reduce-scattered with its `prefetch` next in flight; O(ops x prefetch^2). */
static mt_status gathered_bytes(mt_bld *b, dp_state *x) {
    const mt_trace *t = b->t;
    int32_t P = b->plan->pp, d = x->prefetch;
    x->gathered = calloc((size_t)P, sizeof *x->gathered);
    double *held = calloc((size_t)P, sizeof *held);
    int32_t *win = malloc((size_t)(d + 1) * sizeof *win);
    if (!x->gathered || !held || !win) {
        free(held);
        free(win);
        return MT_ENOMEM;
    }
    for (int32_t u = 0; u < x->n_su; u++)
        if (x->held[u]) held[x->su_stage[u]] += x->unit_w[u] > x->bwd_w[u] ? x->unit_w[u] : x->bwd_w[u];
    for (int32_t i = 0; i < t->n_ops; i++) {
        if (!walked(t, i) || su_of(b, x, i) < 0) continue;
        double sum = window_bytes(b, x, i, d, 1, win), join = x->join_ag[su_of(b, x, i)];
        if (join > 0 && t->ops[i].phase == TRACE_PHASE_BACKWARD && join + window_bytes(b, x, i, d, 0, win) > sum)
            sum = join + window_bytes(b, x, i, d, 0, win);
        int32_t s = mt_bld_op_stage(b, i);
        if (sum > x->gathered[s]) x->gathered[s] = sum;
    }
    for (int32_t s = 0; s < P; s++) x->gathered[s] += held[s];
    free(held);
    free(win);
    return MT_OK;
}

static mt_status dp_analyse(mt_bld *b, void *st, mt_error *err) {
    (void)err;
    dp_state *x = st;
    if (!x->per_unit) return MT_OK;
    MT_CHECK(shard_units(b, x));
    MT_CHECK(unit_weights(b, x));
    MT_CHECK(backward_units(b, x));
    MT_CHECK(next_ops(b, x));
    MT_CHECK(gathered_bytes(b, x));
    int32_t U = x->n_su > 0 ? x->n_su : 1;
    x->ag_state = calloc((size_t)U, 1);
    x->reduced = calloc((size_t)U, 1);
    x->ag_no = calloc((size_t)U, sizeof *x->ag_no);
    return x->ag_state && x->reduced && x->ag_no ? MT_OK : MT_ENOMEM;
}

static mt_status dp_mb_begin(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last) {
    (void)em;
    (void)s;
    (void)mb;
    dp_state *x = st;
    x->cur = -1;
    x->ag_count = 0;
    x->rep_pending = 0;
    for (int32_t u = 0; x->per_unit && u < x->n_su; u++) { /* held units stay gathered from the forward */
        x->ag_state[u] = dir < 0 && x->held[u] ? 2 : 0;
        x->reduced[u] = 0;
    }
    if (dir > 0) return MT_OK;
    x->active = ddp_buckets(b->plan) && (last || b->plan->zero == 2); /* zero 2: every micro-batch */
    x->bucket = 0;
    x->bucket_layer = -1;
    x->first_bucket = b->p->ddp_buckets;
    return MT_OK;
}

static mt_status bucket_out(mt_bld *b, dp_state *x, mt_emit *em, int32_t mb) {
    mt_coll_op op = b->plan->zero == 2 || b->plan->dist_opt ? MT_COLL_REDUCESCATTER : MT_COLL_ALLREDUCE;
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
 * reduce-scatter's shard across the replica groups once it has finished (all but the one just issued,
 * in issue order). */
static mt_status shard_reduce(dp_state *x, mt_emit *em, double w, int32_t layer, int32_t mb) {
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

/* Unit u's gradients are complete: reduce-scatter them, the unit sharded again; then the units joined
 * to it (join_w): gathered on their own (blocking; those held from the forward are not) and
 * reduce-scattered. */
static mt_status unit_reduce(mt_bld *b, dp_state *x, mt_emit *em, int32_t u, int32_t mb) {
    int32_t layer = b->t->n_layers > 0 ? x->su_layer[u] : -1;
    x->reduced[u] = 1;
    x->ag_state[u] = 0;
    MT_CHECK(shard_reduce(x, em, unit_bytes(x, u, TRACE_PHASE_BACKWARD) * x->rs_x, layer, mb));
    if (x->join_ag[u] > 0)
        MT_CHECK(mt_emit_coll(em, x->ag_kind, MT_COLL_ALLGATHER, MT_COLL_WHY_DP_PARAMS, 1, x->join_ag[u] * x->ag_x, layer,
                              mb, TRACE_PHASE_BACKWARD));
    return shard_reduce(x, em, x->join_w[u] * x->rs_x, layer, mb);
}

/* Issues unit u's all-gather (non-blocking) when it is sharded and has bytes. */
static mt_status gather_issue(mt_bld *b, dp_state *x, mt_emit *em, int32_t u, int32_t mb, trace_phase ph) {
    double w = unit_bytes(x, u, ph) * x->ag_x;
    if (u < 0 || x->ag_state[u] || w <= 0) return MT_OK;
    MT_CHECK(mt_emit_coll(em, x->ag_kind, MT_COLL_ALLGATHER, MT_COLL_WHY_DP_PARAMS, 0, w,
                          b->t->n_layers > 0 ? x->su_layer[u] : -1, mb, ph));
    b->p->shard_units += ph == TRACE_PHASE_FORWARD && mb == 0;
    x->ag_state[u] = 1;
    x->ag_no[u] = x->ag_count++;
    return MT_OK;
}

/* Unit u begins at op (its ops follow): its parameters are gathered — blocking without prefetch
 * (ZeRO-3), else issued with the all-gathers of the next `prefetch` units this chunk runs in this phase
 * and waited for, those after it left in flight (FSDP: they overlap u's compute). */
static mt_status unit_gather(mt_bld *b, dp_state *x, mt_emit *em, int32_t u, int32_t op, int32_t mb, trace_phase ph) {
    double w = unit_bytes(x, u, ph) * x->ag_x;
    if (!x->prefetch) {
        if (x->ag_state[u] || w <= 0) return MT_OK;
        b->p->shard_units += ph == TRACE_PHASE_FORWARD && mb == 0;
        x->ag_state[u] = 2;
        return mt_emit_coll(em, x->ag_kind, MT_COLL_ALLGATHER, MT_COLL_WHY_DP_PARAMS, 1, w,
                            b->t->n_layers > 0 ? x->su_layer[u] : -1, mb, ph);
    }
    MT_CHECK(gather_issue(b, x, em, u, mb, ph));
    int32_t j = x->next_op[op];
    for (int32_t k = 0; k < x->prefetch && j >= 0; k++, j = x->next_op[j]) MT_CHECK(gather_issue(b, x, em, su_of(b, x, j), mb, ph));
    if (x->ag_state[u] != 1) return MT_OK;
    x->ag_state[u] = 2;
    return wait_group(em, x->ag_kind, x->ag_count - x->ag_no[u] - 1, mb, ph);
}

/* A new unit's op: the unit left is resharded after its forward unless held; in backward it is
 * reduce-scattered once its last backward op has run. */
static mt_status dp_before_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    dp_state *x = st;
    int32_t u = x->per_unit ? su_of(b, x, op) : -1;
    if (!x->per_unit || u == x->cur) return MT_OK;
    trace_phase ph = (trace_phase)b->t->ops[op].phase;
    int32_t was = x->cur;
    x->cur = u;
    if (was >= 0 && ph == TRACE_PHASE_FORWARD && !x->held[was]) x->ag_state[was] = 0;
    if (was >= 0 && ph == TRACE_PHASE_BACKWARD && x->last_bwd[was] < op && !x->reduced[was])
        MT_CHECK(unit_reduce(b, x, em, was, mb));
    return u >= 0 ? unit_gather(b, x, em, u, op, mb, ph) : MT_OK;
}

static mt_status dp_after_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    dp_state *x = st;
    if (!x->active || b->t->ops[op].phase != TRACE_PHASE_BACKWARD || b->grad_ready[op] <= 0) return MT_OK;
    x->bucket += b->grad_ready[op] * x->rs_x;
    if (b->t->n_layers > 0 && b->unit[op] >= 0) x->bucket_layer = b->unit[op];
    if (x->bucket >= mt_dp_bucket_cap(b, b->p->ddp_buckets == x->first_bucket)) /* --dist-opt: pass_distopt.c's */
        return bucket_out(b, x, em, mb);
    return MT_OK;
}

static mt_status dp_mb_end(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last) {
    (void)last;
    dp_state *x = st;
    if (dir > 0) return MT_OK;
    if (x->per_unit) {
        if (x->cur >= 0 && !x->reduced[x->cur]) MT_CHECK(unit_reduce(b, x, em, x->cur, mb));
        if (x->rep_pending <= 0) return MT_OK;
        MT_CHECK(wait_group(em, x->rs_kind, 0, mb, TRACE_PHASE_BACKWARD));
        return mt_emit_coll(em, x->rep_kind, MT_COLL_ALLREDUCE, MT_COLL_WHY_DP_GRAD, 0, x->rep_pending, -1, mb,
                            TRACE_PHASE_BACKWARD);
    }
    if (!x->active) return MT_OK;
    if (b->chunk < b->plan->pp) x->bucket += b->tail_grad[s] * x->rs_x; /* once: with the stage's first chunk (--vpp) */
    return x->bucket > 0 ? bucket_out(b, x, em, mb) : MT_OK;
}

/* ZeRO 1 and 2: after the optimizer updated this GPU's shard, every GPU gathers the parameters. */
static mt_status dp_step_end(mt_bld *b, void *st, mt_emit *em, int32_t s) {
    const dp_state *x = st;
    const mt_plan *pl = b->plan;
    if (grad_ranks(pl) <= 1 || (pl->zero != 1 && pl->zero != 2) || b->w_stage_rep[s] <= 0) return MT_OK;
    return mt_emit_coll(em, x->kind, MT_COLL_ALLGATHER, MT_COLL_WHY_DP_PARAMS, 1, b->w_stage_rep[s] * x->ag_x, -1, -1,
                        TRACE_PHASE_OPTIMIZER);
}

static double dp_optimizer_share(mt_bld *b, void *st, int32_t op) {
    (void)b;
    (void)op;
    const dp_state *x = st;
    return 1.0 / x->shard;
}

/* ZeRO-3 / FSDP: the most bytes gathered at once (gathered_bytes; statemem.h composes the rest). */
static void dp_states(mt_bld *b, void *st, int32_t s, mt_state_bytes *w) {
    (void)b;
    const dp_state *x = st;
    if (x->per_unit && x->shard > 1) w->gathered = x->gathered[s];
}

static mt_status dp_backward_done(mt_bld *b, void *st, mt_emit *em, int32_t s) {
    dp_state *x = st;
    const mt_plan *pl = b->plan;
    if (grad_ranks(pl) <= 1) return MT_OK;
    if (pl->dp_mode == MT_DP_SYNC && pl->comm != MT_COMM_TRACED) {
        double grads = b->w_stage_rep[s] * x->rs_x;
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

/* extrapolate/pass_dp.c — the data-parallel pass: how the D replicas of a stage synchronise their
 * gradients over the DP group.
 *   sync  DataParallel: one blocking all-reduce of the stage's gradients after the last
 *         micro-batch's backward;
 *   ddp   DistributedDataParallel: gradients gathered into buckets in the order backward makes
 *         them ready (the first capped at first_bucket_bytes, the rest at bucket_bytes), each
 *         bucket all-reduced on the communication stream as soon as it fills, during the last
 *         micro-batch's backward; the optimizer waits for the last (WAIT_COMM).
 * With plan comm traced (a multi-rank trace), the job's own collectives stand for these and the
 * pass only makes the optimizer wait for them.
 * Under context parallelism (cp > 1) the CP ranks hold the same weights too: the gradients are
 * reduced over a group spanning dp and cp ("dp+cp").
 * Invariant: every gradient byte of the stage is in exactly one bucket (or the sync all-reduce).
 */
#include <stdio.h>
#include <stdlib.h>

#include "extrapolate/build.h"

typedef struct dp_state {
    int kind;               /* the gradients' group: DP, or DP x CP under context parallelism */
    int active;             /* this backward micro-batch fills buckets (ddp, last micro-batch) */
    double bucket;          /* bytes in the bucket being filled */
    int32_t bucket_layer;   /* the layer of the last gradient added, -1 */
    int32_t first_bucket;   /* p->ddp_buckets when this backward began: PyTorch caps the first lower */
} dp_state;

/* Ranks holding the same weights: the replicas, times the context-parallel ranks. */
static int32_t grad_ranks(const mt_plan *pl) { return pl->dp * pl->cp; }

static int ddp_buckets(const mt_plan *pl) {
    return grad_ranks(pl) > 1 && pl->dp_mode == MT_DP_DDP && pl->comm != MT_COMM_TRACED;
}

static mt_status dp_prepare(mt_bld *b, void **st, mt_error *err) {
    (void)err;
    dp_state *x = calloc(1, sizeof(dp_state));
    *st = x;
    if (!x) return MT_ENOMEM;
    x->kind = MT_GROUP_DP;
    if (b->plan->cp > 1) x->kind = mt_groups_add(&b->p->groups, MT_DIMS_DP | MT_DIM_BIT(MT_DIM_CP), 0, "dp+cp");
    return x->kind >= 0 ? MT_OK : mt_fail(err, MT_EINVAL, "the plan has too many group kinds (at most %d)",
                                          MT_GROUP_KINDS_MAX);
}

static void dp_release(void *st) { free(st); }

static mt_status dp_mb_begin(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last) {
    (void)em;
    (void)s;
    (void)mb;
    dp_state *x = st;
    if (dir > 0) return MT_OK;
    x->active = ddp_buckets(b->plan) && last;
    x->bucket = 0;
    x->bucket_layer = -1;
    x->first_bucket = b->p->ddp_buckets;
    return MT_OK;
}

static mt_status bucket_out(mt_bld *b, dp_state *x, mt_emit *em, int32_t mb) {
    MT_CHECK(mt_emit_coll(em, x->kind, MT_COLL_ALLREDUCE, MT_COLL_WHY_DP_GRAD, 0, x->bucket, x->bucket_layer, mb,
                          TRACE_PHASE_BACKWARD));
    b->p->ddp_buckets++;
    x->bucket = 0;
    return MT_OK;
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
    if (dir > 0 || !x->active) return MT_OK;
    x->bucket += b->tail_grad[s];
    return x->bucket > 0 ? bucket_out(b, x, em, mb) : MT_OK;
}

static mt_status dp_backward_done(mt_bld *b, void *st, mt_emit *em, int32_t s) {
    dp_state *x = st;
    const mt_plan *pl = b->plan;
    if (grad_ranks(pl) <= 1) return MT_OK;
    if (pl->dp_mode == MT_DP_SYNC && pl->comm != MT_COMM_TRACED) {
        double grads = b->w_stage_bytes[s];
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
    .mb_begin = dp_mb_begin,
    .after_op = dp_after_op,
    .mb_end = dp_mb_end,
    .backward_done = dp_backward_done,
    .warning = dp_warning,
};

/* extrapolate/pass_pp.c — the pipeline pass: P stages, each running its micro-batches in the plan's
 * schedule, activations sent forward and their gradients back at the stage boundaries.
 *   gpipe  every forward, then every backward;
 *   1f1b   stage s runs min(P - s - 1, M) warm-up forwards, then one forward and one backward in
 *          turn, then the remaining backwards.
 * A forward micro-batch of stage s > 0 first receives its activations (RECV +1) and one of stage
 * s < P - 1 ends by sending them on (SEND +1); backward mirrors it (RECV -1, SEND -1).
 * Boundary bytes: an activation produced by a forward op of stage a and read by one of stage c > a
 * crosses every boundary a .. c-1 (O(tensors + trefs)).
 * Invariant: every stage emits each micro-batch's forward before its backward, exactly once.
 */
#include <stdio.h>
#include <stdlib.h>

#include "extrapolate/build.h"

mt_status mt_pp_emit_stage(mt_bld *b, mt_emit *em, int32_t s) {
    const mt_plan *pl = b->plan;
    int32_t P = pl->pp, M = pl->micro_batches;
    if (pl->schedule == MT_PP_GPIPE || P == 1) {
        for (int32_t m = 0; m < M; m++) MT_CHECK(mt_bld_forward(b, em, s, m));
        for (int32_t m = 0; m < M; m++) MT_CHECK(mt_bld_backward(b, em, s, m, m == M - 1));
        return MT_OK;
    }
    /* 1F1B: warm-up forwards, steady one-forward-one-backward, cool-down backwards */
    int32_t warm = P - s - 1 < M ? P - s - 1 : M;
    int32_t f = 0, bk = 0;
    for (; f < warm; f++) MT_CHECK(mt_bld_forward(b, em, s, f));
    while (bk < M) {
        if (f < M) MT_CHECK(mt_bld_forward(b, em, s, f++));
        MT_CHECK(mt_bld_backward(b, em, s, bk, bk == M - 1));
        bk++;
    }
    return MT_OK;
}

mt_status mt_pp_boundaries(mt_bld *b) {
    const trace *t = b->t;
    int32_t P = b->plan->pp;
    int32_t *maxcons = malloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1) * sizeof *maxcons);
    if (!maxcons) return MT_ENOMEM;
    for (int32_t i = 0; i < t->n_tensors; i++) maxcons[i] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        int32_t s = mt_bld_op_stage(b, i);
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t x = t->trefs[o->in_first + j].tensor;
            if (x >= 0 && x < t->n_tensors && s > maxcons[x]) maxcons[x] = s;
        }
    }
    for (int32_t x = 0; x < t->n_tensors; x++) {
        const trace_tensor *tt = &t->tensors[x];
        if (tt->role != TRACE_ROLE_ACTIVATION || tt->first_op < 0 || tt->first_op >= t->n_ops) continue;
        int32_t f = tt->first_op;
        if (t->ops[f].phase != TRACE_PHASE_FORWARD) continue;
        int32_t ps = mt_bld_op_stage(b, f);
        b->act_mb[ps] += tt->bytes / b->split[f];
        for (int32_t s = ps; s < maxcons[x] && s < P - 1; s++) b->boundary[s] += tt->bytes / b->plan->cp; /* its tokens */
    }
    free(maxcons);
    return MT_OK;
}

static mt_status pp_mb_begin(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last) {
    (void)st;
    (void)last;
    if (dir > 0 ? s > 0 : s < b->plan->pp - 1) return mt_emit_simple(em, MT_TASK_RECV, dir, mb, 0);
    return MT_OK;
}

static mt_status pp_mb_end(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last) {
    (void)st;
    (void)last;
    const mt_plan *pl = b->plan;
    if (dir > 0 && s < pl->pp - 1) return mt_emit_simple(em, MT_TASK_SEND, +1, mb, em->sp->boundary_bytes * pl->batch_factor);
    if (dir < 0 && s > 0) return mt_emit_simple(em, MT_TASK_SEND, -1, mb, b->boundary[s - 1] * pl->batch_factor);
    return MT_OK;
}

static int pp_warning(mt_bld *b, void *st, char *buf, int len) {
    (void)st;
    if (b->plan->pp > 1 && b->t->n_trefs == 0) {
        snprintf(buf, (size_t)len, "the trace has no tensor shapes: pipeline stages send 0-byte activations");
        return 4;
    }
    return 0;
}

const mt_pass mt_pass_pp = {
    .name = "pp",
    .mb_begin = pp_mb_begin,
    .mb_end = pp_mb_end,
    .warning = pp_warning,
};

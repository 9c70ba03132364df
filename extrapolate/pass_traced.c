/* extrapolate/pass_traced.c — the traced-collectives pass: with plan comm traced (a multi-rank
 * trace re-simulated), the job's own collectives run as traced, each after the op that issued it
 * (traced.h: mt_traced_task_of), on the DP group or a DP sub-group kind it adds to the table.
 * Prepare lists each op's collectives (O(ops + colls)); emission walks the lists.
 * Invariant: every kept collective is in exactly one list (its issuing op's, or tc_pre for those
 * issued before the step's first op), in trace order.
 */
#include <stdlib.h>

#include "extrapolate/build.h"
#include "extrapolate/traced.h"

typedef struct traced_state {
    int32_t *tc_head;       /* per op, the first traced collective it issued, -1 */
    int32_t *tc_next;       /* per trace_coll: the next one the same op issued, -1 */
    int32_t tc_pre;         /* the first issued before the step's first op, -1 */
} traced_state;

/* The traced collectives in list head (tc_head / tc_pre) for micro-batch mb: an all-reduce issued
 * in backward (a gradient bucket) only with the last micro-batch (last), once per step; the rest
 * every micro-batch, all-to-all and send/recv bytes following its size. */
static mt_status emit_traced(mt_bld *b, traced_state *x, mt_emit *em, int32_t head, int32_t mb, trace_phase ph, int last) {
    for (int32_t c = head; c >= 0; c = x->tc_next[c]) {
        mt_traced_task tt;
        if (!mt_traced_task_of(b->t, c, b->plan, &b->p->groups, &tt)) continue;
        if (ph == TRACE_PHASE_BACKWARD && tt.op == MT_COLL_ALLREDUCE && !last) continue;
        int32_t by = b->t->colls[c].issued_by, layer = by >= 0 && b->t->n_layers > 0 ? b->unit[by] : -1;
        MT_CHECK(mt_emit_coll(em, (mt_group_kind)tt.group, tt.op, MT_COLL_WHY_TRACED, tt.blocking,
                           tt.bytes * (tt.scales ? b->plan->batch_factor : 1), layer, mb, ph));
        em->sp->tasks[em->sp->n_tasks - 1].traced = c;
        b->p->traced_colls++;
    }
    return MT_OK;
}

/* Plan comm traced: lists each op's traced collectives (tc_head, tc_next, tc_pre). */
static mt_status index_traced(mt_bld *b, traced_state *x) {
    const trace *t = b->t;
    x->tc_pre = -1;
    if (b->plan->comm != MT_COMM_TRACED) return MT_OK;
    x->tc_head = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *x->tc_head);
    x->tc_next = malloc((size_t)(t->n_colls > 0 ? t->n_colls : 1) * sizeof *x->tc_next);
    if (!x->tc_head || !x->tc_next) return MT_ENOMEM;
    for (int32_t i = 0; i < t->n_ops; i++) x->tc_head[i] = -1;
    for (int32_t c = t->n_colls - 1; c >= 0; c--) { /* backwards: each list keeps the trace's order */
        mt_traced_task tt;
        x->tc_next[c] = -1;
        if (!t->colls[c].instance) continue;
        if (!mt_traced_task_of(t, c, b->plan, &b->p->groups, &tt)) {
            b->p->traced_dropped++;
            continue;
        }
        int32_t *head = t->colls[c].issued_by >= 0 && t->colls[c].issued_by < t->n_ops ? &x->tc_head[t->colls[c].issued_by]
                                                                                         : &x->tc_pre;
        x->tc_next[c] = *head;
        *head = c;
    }
    return MT_OK;
}

static void traced_release(void *st) {
    traced_state *x = st;
    if (!x) return;
    free(x->tc_head);
    free(x->tc_next);
    free(x);
}

static mt_status traced_prepare(mt_bld *b, void **st, mt_error *err) {
    (void)err;
    *st = NULL;
    if (b->plan->comm != MT_COMM_TRACED) return MT_OK;
    traced_state *x = calloc(1, sizeof *x);
    *st = x;
    if (!x) return MT_ENOMEM;
    return index_traced(b, x);
}

static mt_status traced_stage_begin(mt_bld *b, void *st, mt_emit *em, int32_t s) {
    traced_state *x = st;
    if (!x || s != 0) return MT_OK;
    return emit_traced(b, x, em, x->tc_pre, -1, TRACE_PHASE_FORWARD, 1);
}

static mt_status traced_after_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    traced_state *x = st;
    if (!x) return MT_OK;
    return emit_traced(b, x, em, x->tc_head[op], mb, (trace_phase)b->t->ops[op].phase, last);
}

static mt_status traced_other_op(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t op) {
    traced_state *x = st;
    if (!x || s != 0) return MT_OK;
    return emit_traced(b, x, em, x->tc_head[op], -1, (trace_phase)b->t->ops[op].phase, 1);
}

const mt_pass mt_pass_traced = {
    .name = "traced",
    .prepare = traced_prepare,
    .release = traced_release,
    .stage_begin = traced_stage_begin,
    .after_op = traced_after_op,
    .other_op = traced_other_op,
};

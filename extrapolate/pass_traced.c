/* extrapolate/pass_traced.c — the traced-collectives pass: with plan comm traced (a multi-rank
 * trace re-simulated), the job's own collectives run as traced, each after the op that issued it
 * (traced.h: mt_traced_task_of), on the DP group or a DP sub-group kind it adds to the table.
 * Prepare lists each op's collectives (O(ops + colls)); emission walks the lists.
 * A CPU trace's gloo send/recv is followed by a measured wait (hold_ns): gloo moves P2P data in the
 * call's Work.wait(), which the profiler does not record, so the rank's wait for its peer (a
 * pipeline stage's compute) is the host gap from the call's end to the next op; it runs as a HOLD
 * task after the send/recv (the peer in the simulation is a copy of this rank and cannot cause it).
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
    int64_t *hold_ns;       /* per trace_coll: the measured wait after it (gloo P2P, CPU trace), 0 */
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
        if (x->hold_ns[c] > 0) {
            mt_task *k = mt_emit_task(em, MT_TASK_HOLD);
            if (!k) return MT_ENOMEM;
            k->dur_ps = x->hold_ns[c] * 1000;
            k->mb = mb;
            k->phase = (int8_t)ph;
            k->traced = c;
            if (em->sp == &b->p->stages[0]) {
                b->p->traced_hold_ps += k->dur_ps;
                b->p->traced_holds++;
            }
        }
    }
    return MT_OK;
}

/* The host gap after traced P2P instance c of a CPU trace: from the end of its call (and of its
 * event) to the start of the next op on the call's thread, ns; 0 for anything else. */
static int64_t p2p_hold_ns(const mt_trace *t, int32_t c) {
    const trace_coll *k = &t->colls[c];
    if (t->has_device_time || (k->kind != TRACE_COMM_SEND && k->kind != TRACE_COMM_RECV)) return 0;
    if (k->op < 0 || k->op >= t->n_ops) return 0;
    const trace_op *o = &t->ops[k->op];
    int64_t end = o->cpu_start_ns + o->cpu_dur_ns;
    if (k->ts_ns + k->dur_ns > end) end = k->ts_ns + k->dur_ns;
    for (int32_t i = k->op + 1; i < t->n_ops; i++) /* ops sorted by start: the first one after it */
        if (t->ops[i].tid == o->tid && t->ops[i].cpu_start_ns >= end) return t->ops[i].cpu_start_ns - end;
    return t->step_end_ns > end ? t->step_end_ns - end : 0;
}

/* Plan comm traced: lists each op's traced collectives (tc_head, tc_next, tc_pre). */
static mt_status index_traced(mt_bld *b, traced_state *x) {
    const mt_trace *t = b->t;
    x->tc_pre = -1;
    if (b->plan->comm != MT_COMM_TRACED) return MT_OK;
    x->tc_head = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *x->tc_head);
    x->tc_next = malloc((size_t)(t->n_colls > 0 ? t->n_colls : 1) * sizeof *x->tc_next);
    x->hold_ns = calloc((size_t)(t->n_colls > 0 ? t->n_colls : 1), sizeof *x->hold_ns);
    if (!x->tc_head || !x->tc_next || !x->hold_ns) return MT_ENOMEM;
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
        x->hold_ns[c] = p2p_hold_ns(t, c);
    }
    return MT_OK;
}

static void traced_release(void *st) {
    traced_state *x = st;
    if (!x) return;
    free(x->tc_head);
    free(x->tc_next);
    free(x->hold_ns);
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
    .idle_without_state = 1, /* its hooks return at once without its state */
    .prepare = traced_prepare,
    .release = traced_release,
    .stage_begin = traced_stage_begin,
    .after_op = traced_after_op,
    .other_op = traced_other_op,
};

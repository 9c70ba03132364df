/* extrapolate/emit.c — appending tasks and items to a stage program (see build.h). Each append is
 * amortised O(1). */
#include <math.h>
#include <string.h>

#include "extrapolate/build.h"
#include "util/vec.h"

/* Bound-only: the task before the one being emitted is final; count it if the host issues it. */
static void tally_retire(mt_stage_tally *y, const mt_task *k) {
    int i = k->kind == MT_TASK_SEND ? MT_GROUP_KINDS_MAX
            : k->kind == MT_TASK_COLL && k->group >= 0 && k->group < MT_GROUP_KINDS_MAX ? (int)k->group : -1;
    if (i < 0) return;
    y->issued[i]++;
    if (y->last_bwd_mb >= 0) y->tail_issued[i]++;
}

mt_task *mt_emit_task(mt_emit *em, mt_task_kind kind) {
    mt_stage_program *sp = em->sp;
    if (sp->tally) { /* bound-only: the passes read only the last task */
        if (sp->n_tasks) tally_retire(sp->tally, &sp->tasks[sp->n_tasks - 1]);
        sp->n_tasks = 0;
        sp->tally->last_bwd_open = 0;
    }
    if (mt_vec_reserve(&sp->tasks, &em->cap_tasks, (int64_t)sp->n_tasks + 1)) return NULL;
    mt_task *k = &sp->tasks[sp->n_tasks++];
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->mb = -1;
    k->layer = -1;
    k->traced = -1;
    return k;
}

/* A new COMPUTE task k (first op `op`) in a bound-only stage's tally: its op counted; the last backward
 * task of a micro-batch so far, or one of the tasks after it. 1: out of memory. */
static int tally_task(mt_stage_tally *y, const mt_task *k, int32_t op) {
    y->op_tasks[op]++;
    if (k->mb >= 0 && k->phase != TRACE_PHASE_FORWARD) {
        y->last_bwd_mb = k->mb;
        y->last_bwd_op = op;
        y->last_bwd_ps = y->tail_ps = 0;
        y->n_tail = 0;
        memset(y->tail_issued, 0, sizeof y->tail_issued);
        y->last_bwd_open = 1;
        return 0;
    }
    if (y->last_bwd_mb < 0) return 0;
    if (mt_vec_reserve(&y->tail_ops, &y->cap_tail, (int64_t)y->n_tail + 1)) return 1;
    y->tail_ops[y->n_tail++] = op;
    return 0;
}

int64_t mt_emit_ps(double ns) {
    int64_t ps = (int64_t)llround(ns * 1000.0);
    return ps < 0 ? 0 : ps;
}

mt_status mt_emit_item(mt_bld *b, mt_emit *em, int32_t op, double ns, int32_t split, int32_t mb) {
    return mt_emit_item_ps(b, em, op, mt_emit_ps(ns), split, mb);
}

mt_status mt_emit_item_ps(mt_bld *b, mt_emit *em, int32_t op, int64_t ps, int32_t split, int32_t mb) {
    mt_stage_program *sp = em->sp;
    if (!sp->tally) {
        if (mt_vec_reserve(&sp->items, &em->cap_items, (int64_t)sp->n_items + 1)) return MT_ENOMEM;
        mt_item *it = &sp->items[sp->n_items];
        it->op = op;
        it->layer = mt_bld_layer(b, op);
        it->dur_ps = ps;
        it->split = split;
    }
    mt_task *last = sp->n_tasks ? &sp->tasks[sp->n_tasks - 1] : NULL;
    if (!last || last->kind != MT_TASK_COMPUTE || last->mb != mb || b->one_op_per_task) {
        last = mt_emit_task(em, MT_TASK_COMPUTE);
        if (!last) return MT_ENOMEM;
        last->item_first = sp->n_items;
        last->mb = mb;
        last->phase = (int8_t)b->t->ops[op].phase;
        if (sp->tally && tally_task(sp->tally, last, op)) return MT_ENOMEM;
    }
    last->item_count++;
    last->dur_ps += ps;
    sp->compute_ps += ps;
    mt_stage_tally *y = sp->tally;
    if (y && !y->last_bwd_open && y->last_bwd_mb >= 0) y->tail_ps += (double)ps;
    if (!y) sp->n_items++;
    else if (last->mb >= 0) { /* a task's time is the sum of its items' (integers: exact in any order) */
        y->mb_total_ps += (double)ps;
        if (y->last_bwd_open) y->last_bwd_ps += (double)ps;
        if (last->mb < y->m) y->mb_ps[(size_t)last->mb * 2 + (last->phase != TRACE_PHASE_FORWARD)] += (double)ps;
    }
    return MT_OK;
}

mt_status mt_emit_coll(mt_emit *em, mt_group_kind g, mt_coll_op c, mt_coll_why why, int blocking, double bytes,
                       int32_t layer, int32_t mb, trace_phase phase) {
    mt_task *k = mt_emit_task(em, MT_TASK_COLL);
    if (!k) return MT_ENOMEM;
    k->group = g;
    k->coll = c;
    k->why = why;
    k->blocking = (int8_t)blocking;
    k->bytes = bytes;
    k->layer = layer;
    k->mb = mb;
    k->phase = (int8_t)phase;
    return MT_OK;
}

mt_status mt_emit_simple(mt_emit *em, mt_task_kind kind, int dir, int32_t mb, double bytes) {
    mt_task *k = mt_emit_task(em, kind);
    if (!k) return MT_ENOMEM;
    k->dir = (int8_t)dir;
    k->mb = mb;
    k->bytes = bytes;
    return MT_OK;
}

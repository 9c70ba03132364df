/* extrapolate/emit.c — appending tasks and items to a stage program (see build.h). Each append is
 * amortised O(1). */
#include <math.h>
#include <string.h>

#include "extrapolate/build.h"
#include "util/vec.h"

mt_task *mt_emit_task(mt_emit *em, mt_task_kind kind) {
    mt_stage_program *sp = em->sp;
    if (sp->tally) sp->n_tasks = 0; /* bound-only: the passes read only the last task */
    if (mt_vec_reserve(&sp->tasks, &em->cap_tasks, (int64_t)sp->n_tasks + 1)) return NULL;
    mt_task *k = &sp->tasks[sp->n_tasks++];
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->mb = -1;
    k->layer = -1;
    k->traced = -1;
    return k;
}

mt_status mt_emit_item(mt_bld *b, mt_emit *em, int32_t op, double ns, int32_t split, int32_t mb) {
    mt_stage_program *sp = em->sp;
    int64_t ps = (int64_t)llround(ns * 1000.0);
    if (ps < 0) ps = 0;
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
        if (sp->tally) sp->tally->op_tasks[op]++;
    }
    last->item_count++;
    last->dur_ps += ps;
    sp->compute_ps += ps;
    mt_stage_tally *y = sp->tally;
    if (!y) sp->n_items++;
    else if (last->mb >= 0) { /* a task's time is the sum of its items' (integers: exact in any order) */
        y->mb_total_ps += (double)ps;
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

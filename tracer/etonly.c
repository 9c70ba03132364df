/* tracer/etonly.c — the operators of an Execution Trace given alone (see link.h): no timings.
 *
 * The ops are the top-level children of the thread roots, and of the regions (record_function
 * annotations such as Optimizer.step#..., ProfilerStep#N, DistributedDataParallel.forward)
 * whose parent chain reaches a thread root; a region itself is not an op (its children are).
 * An op's phase: optimizer inside an Optimizer.step region or by name, backward by name, other
 * for the rest of a region's children, forward for a thread root's. Cost: O(nodes x depth).
 */
#include <string.h>

#include "tracer/emit.h"
#include "tracer/link.h"
#include "tracer/opclass.h"

/* The parent of node n when n is an op: the thread root or region holding it; NULL otherwise. */
static const et_node *op_parent(const et_data *e, const et_node *n) {
    int64_t p;
    if (n->is_meta || !mt_u64map_get(&e->by_id, n->parent, &p)) return NULL;
    const et_node *pn = &e->nodes[p];
    if (!pn->is_meta) {
        if (!mt_et_is_region(e, pn)) return NULL;
        const et_node *q = pn; /* a region's parent chain must reach the thread root */
        while (!q->is_meta && mt_et_is_region(e, q) && mt_u64map_get(&e->by_id, q->parent, &p)) q = &e->nodes[p];
        if (!q->is_meta) return NULL;
    }
    return mt_et_is_region(e, n) ? NULL : pn;
}

static trace_phase phase_of(const et_node *n, const et_node *parent) {
    int in_region = !parent->is_meta;
    if ((in_region && strncmp(parent->name, "Optimizer.step", 14) == 0) || mt_opclass_is_optimizer_name(n->name))
        return TRACE_PHASE_OPTIMIZER;
    if (mt_opclass_is_backward_name(n->name)) return TRACE_PHASE_BACKWARD;
    return in_region ? TRACE_PHASE_OTHER : TRACE_PHASE_FORWARD;
}

mt_status mt_etonly_build(const char *epath, const et_data *e, mt_trace *t, mt_error *err) {
    trace_builder b;
    mt_tb_init(&b, t);
    t->format = TRACE_FORMAT_ET;
    mt_status rc = MT_OK;
    for (int64_t j = 0; j < e->n_nodes && rc == MT_OK; j++) {
        const et_node *n = &e->nodes[j], *parent = op_parent(e, n);
        if (!parent) continue;
        trace_op op = {0};
        op.name = n->name;
        op.kind = mt_et_kind(e, (int32_t)j);
        if (!op.kind) op.kind = n->name;
        op.tid = n->tid;
        op.seq = n->seq;
        op.et_node = n->id;
        op.phase = phase_of(n, parent);
        op.comm = TRACE_COMM_NONE;
        mt_et_comm(e, (int32_t)j, &op.comm, &op.comm_group, &op.comm_bytes);
        op.layer = -1;
        rc = mt_tb_add_op(&b, &op) < 0 ? MT_ENOMEM : mt_emit_et_tensors(&b, e, (int32_t)j);
    }
    if (rc != MT_OK) {
        rc = mt_fail(err, MT_ENOMEM, "%s: out of memory building operators", epath);
    } else {
        t->link.method = TRACE_LINK_NONE;
        t->link.matched = t->n_ops;
        rc = mt_tb_finish(&b, NULL, err);
    }
    mt_tb_destroy(&b);
    return rc;
}

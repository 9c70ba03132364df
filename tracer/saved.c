/* tracer/saved.c — the activations backward reads (see saved.h). */
#include <stdlib.h>
#include <string.h>

#include "tracer/saved.h"
#include "util/u64map.h"
#include "util/vec.h"

typedef struct binding {
    int32_t op;    /* the outermost op that allocated the storage */
    int32_t entry; /* its saved candidate (a forward op's allocation), -1 */
    int32_t temp;  /* its temporary candidate (a backward op's allocation), -1 */
} binding;

typedef struct saved_ctx {
    const et_data *e;
    mt_trace *t;
    mt_u64map bind;          /* storage id -> index into binds */
    binding *binds;
    int64_t n_binds, cap_binds;
    trace_saved *cand;       /* every forward allocation; kept when last_bwd >= 0 */
    int64_t n_cand, cap_cand;
    trace_saved *temp;       /* every backward allocation (op, last backward reader); storage_id -1
                              * once an op outside backward reads it (a parameter's gradient) */
    int64_t n_temp, cap_temp;
} saved_ctx;

/* 1 when node n has an input on storage s. */
static int reads_storage(const et_data *e, const et_node *n, int64_t s) {
    for (int32_t v = 0; v < n->in_count; v++)
        if (e->vals[n->in_first + v].storage == s) return 1;
    return 0;
}

/* top[k]: the op whose linked node is node k or its nearest linked ancestor, -1 none. Parents have
 * lower ids than their children (a record function starts before the ones inside it). */
static mt_status tops(const et_data *e, const mt_trace *t, int32_t *top) {
    for (int64_t k = 0; k < e->n_nodes; k++) top[k] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        int64_t k;
        if (t->ops[i].et_node >= 0 && mt_u64map_get(&e->by_id, (uint64_t)t->ops[i].et_node, &k)) top[k] = i;
    }
    for (int64_t k = 0; k < e->n_nodes; k++) {
        int64_t p;
        if (top[k] < 0 && mt_u64map_get(&e->by_id, (uint64_t)e->nodes[k].parent, &p) && p < k) top[k] = top[p];
    }
    return MT_OK;
}

/* A node's reads: a backward node's mark the forward allocations bound to the storages it reads
 * saved and extend the backward allocations'; any other node's make a backward allocation outlive
 * the backward. */
static void note_reads(saved_ctx *c, const et_node *n, int32_t op, trace_phase ph) {
    for (int32_t v = 0; v < n->in_count; v++) {
        int64_t b;
        if (!mt_u64map_get(&c->bind, (uint64_t)c->e->vals[n->in_first + v].storage, &b)) continue;
        int32_t k = c->binds[b].entry, m = c->binds[b].temp;
        if (ph == TRACE_PHASE_BACKWARD && k >= 0 && op > c->cand[k].last_bwd) c->cand[k].last_bwd = op;
        if (m >= 0 && ph != TRACE_PHASE_BACKWARD) c->temp[m].storage_id = -1;
        else if (m >= 0 && op > c->temp[m].last_bwd) c->temp[m].last_bwd = op;
    }
}

/* A node's outputs on storages none of its inputs has: allocations of op (phase ph). */
static mt_status note_allocs(saved_ctx *c, const et_node *n, int32_t op, trace_phase ph, mt_error *err) {
    for (int32_t v = 0; v < n->out_count; v++) {
        const et_val *x = &c->e->vals[n->out_first + v];
        double bytes = (double)x->numel * x->itemsize;
        if (x->numel <= 0 || reads_storage(c->e, n, x->storage)) continue; /* empty, a view, in place */
        int64_t b;
        if (mt_u64map_get(&c->bind, (uint64_t)x->storage, &b) && c->binds[b].op == op) {
            int32_t k = c->binds[b].entry, m = c->binds[b].temp; /* the same op reporting it again (a
                                                                   * parent and its child) */
            if (k >= 0 && bytes > c->cand[k].bytes) c->cand[k].bytes = bytes;
            if (m >= 0 && bytes > c->temp[m].bytes) c->temp[m].bytes = bytes;
            continue;
        }
        if (mt_vec_reserve(&c->binds, &c->cap_binds, c->n_binds + 1)) return MT_ENOMEM;
        binding *nb = &c->binds[c->n_binds];
        nb->op = op;
        nb->entry = nb->temp = -1;
        if (ph == TRACE_PHASE_FORWARD) {
            if (mt_vec_reserve(&c->cand, &c->cap_cand, c->n_cand + 1)) return MT_ENOMEM;
            c->cand[c->n_cand] = (trace_saved){op, -1, x->storage, bytes};
            nb->entry = (int32_t)c->n_cand++;
        } else if (ph == TRACE_PHASE_BACKWARD) {
            if (mt_vec_reserve(&c->temp, &c->cap_temp, c->n_temp + 1)) return MT_ENOMEM;
            c->temp[c->n_temp] = (trace_saved){op, op, x->storage, bytes};
            nb->temp = (int32_t)c->n_temp++;
        }
        MT_CHECK(mt_u64map_put(&c->bind, (uint64_t)x->storage, c->n_binds++, err));
    }
    return MT_OK;
}

static int by_op(const void *a, const void *b) {
    const trace_saved *x = a, *y = b;
    if (x->op != y->op) return x->op < y->op ? -1 : 1;
    return x->storage_id < y->storage_id ? -1 : x->storage_id > y->storage_id;
}

mt_status mt_saved_build(const et_data *e, mt_trace *t, mt_error *err) {
    saved_ctx c = {.e = e, .t = t};
    mt_u64map_init(&c.bind);
    int32_t *top = malloc((size_t)(e->n_nodes > 0 ? e->n_nodes : 1) * sizeof *top);
    mt_status rc = top ? tops(e, t, top) : MT_ENOMEM;
    int linked_bwd = 0;
    for (int64_t k = 0; rc == MT_OK && k < e->n_nodes; k++) {
        int32_t op = top[k];
        if (op < 0) continue;
        trace_phase ph = t->ops[op].phase;
        linked_bwd |= ph == TRACE_PHASE_BACKWARD;
        note_reads(&c, &e->nodes[k], op, ph);
        rc = note_allocs(&c, &e->nodes[k], op, ph, err);
    }
    free(top);
    int64_t n = 0;
    for (int64_t k = 0; rc == MT_OK && k < c.n_cand; k++)
        if (c.cand[k].last_bwd >= 0 && c.cand[k].bytes > 0) c.cand[n++] = c.cand[k];
    int64_t m = 0;
    for (int64_t k = 0; rc == MT_OK && k < c.n_temp; k++)
        if (c.temp[k].storage_id >= 0 && c.temp[k].bytes > 0) c.temp[m++] = c.temp[k];
    if (rc == MT_OK) {
        if (n > 1) qsort(c.cand, (size_t)n, sizeof *c.cand, by_op);
        free(t->saved);
        free(t->bwd_temps);
        t->saved = n > 0 ? c.cand : NULL;
        t->n_saved = (int32_t)n;
        t->bwd_temps = m > 0 ? c.temp : NULL;
        t->n_bwd_temps = (int32_t)m;
        t->has_saved = linked_bwd;
        if (n > 0) c.cand = NULL;
        if (m > 0) c.temp = NULL;
    }
    free(c.cand);
    free(c.temp);
    free(c.binds);
    mt_u64map_destroy(&c.bind);
    return rc == MT_ENOMEM ? mt_fail(err, MT_ENOMEM, "out of memory finding the activations backward reads") : rc;
}

/* tracer/cktrace.c — one rank's Chakra ET as a trace, and its registry reader (see cktrace.h). */
#include "tracer/cktrace.h"

#include <stdio.h>
#include <string.h>

#include "tracer/builder.h"
#include "tracer/limits.h"
#include "tracer/opclass.h"
#include "tracer/reader.h"

static mt_sniff sniff(const char *head, size_t len) { return mt_ck_sniff(head, len); }

static mt_status load(const char *path, trace_strpool *pool, mt_trace_parts *parts, mt_error *err) {
    (void)pool;
    return mt_ck_read(path, &parts->chakra, err);
}

const mt_trace_reader mt_reader_chakra = {"chakra-et", MT_PART_CHAKRA, ".et", sniff, load};

static trace_phase phase_of(const char *name) {
    if (strstr(name, "backward") || strstr(name, "Backward")) return TRACE_PHASE_BACKWARD;
    if (strstr(name, "optim") || strstr(name, "Optim")) return TRACE_PHASE_OPTIMIZER;
    return TRACE_PHASE_FORWARD;
}

/* Appends GPU compute node n as an op with one kernel of its duration at *clock_ns. */
static mt_status add_op(trace_builder *b, const char *path, const mt_ck_node *n, int64_t *clock_ns, mt_error *err) {
    const char *name = mt_strpool_intern(b->t->pool, *n->name ? n->name : "chakra_comp", -1);
    if (!name) return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    int64_t dur_ns = (n->duration_ps + 500) / 1000;
    if ((double)*clock_ns + (double)dur_ns > TRACE_MAX_NS)
        return mt_fail(err, MT_EFORMAT, "%s: the compute nodes add up to more than a step of 11 days", path);
    trace_op op = {0};
    op.name = op.kind = name;
    op.phase = phase_of(name);
    op.cpu_start_ns = *clock_ns;
    op.cpu_dur_ns = dur_ns;
    op.seq = op.et_node = -1;
    op.layer = -1;
    int32_t oi = mt_tb_add_op(b, &op);
    trace_kernel k = {*clock_ns, dur_ns, oi, -1, name, TRACE_KERNEL, -1, 0};
    if (oi < 0 || mt_tb_add_kernel(b, &k) < 0) return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    *clock_ns += dur_ns;
    return MT_OK;
}

/* t->warning: what the file could not give, and the nodes left out. */
static mt_status set_warning(const char *path, int64_t comm, int64_t other, mt_trace *t, mt_error *err) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s: a Chakra ET has no tensor shapes, weights or batch size: layers come from the "
             "node order alone and resized operators scale proportionally; %lld communication and %lld host, memory "
             "or metadata nodes left out (the plan makes its own collectives)", path, (long long)comm, (long long)other);
    t->warning = mt_strpool_intern(t->pool, buf, -1);
    return t->warning ? MT_OK : mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
}

mt_status mt_cktrace_build(const char *path, const mt_ck_graph *g, mt_trace *t, mt_error *err) {
    trace_builder b;
    MT_CHECK(mt_tb_init(&b, t));
    t->format = TRACE_FORMAT_CHAKRA;
    int64_t clock_ns = 0, comm = 0, other = 0;
    mt_status rc = MT_OK;
    for (int32_t k = 0; k < g->n_nodes && rc == MT_OK; k++) {
        const mt_ck_node *n = &g->nodes[g->order[k]];
        if (n->type == MT_CK_COMP && !n->is_cpu) rc = add_op(&b, path, n, &clock_ns, err);
        else if (n->type == MT_CK_COLL || n->type == MT_CK_SEND || n->type == MT_CK_RECV) comm++;
        else other++;
    }
    if (rc == MT_OK && t->n_ops == 0)
        rc = mt_fail(err, MT_EFORMAT, "%s: no GPU compute node to extrapolate (%lld communication nodes): simulate "
                     "a set of per-rank files as given with --as-is", path, (long long)comm);
    if (rc == MT_OK) rc = set_warning(path, comm, other, t, err);
    if (rc == MT_OK) {
        t->step = -1;
        t->n_steps = 1;
        t->step_start_ns = 0;
        t->step_end_ns = t->host_end_ns = clock_ns;
        t->link.method = TRACE_LINK_NONE;
        t->link.matched = t->n_ops;
        rc = mt_tb_finish(&b, NULL, err);
        t->has_device_time = 1;
    }
    mt_tb_destroy(&b);
    return rc;
}

/* extrapolate/traced.c — the traced plan read from the trace (see traced.h). */
#include "extrapolate/traced.h"

#include <stdio.h>
#include <string.h>

#include "util/units.h"

const char *mt_traced_sync_name(mt_traced_sync s) {
    static const char *const n[] = {"single", "ddp", "partial", "none", "tensor", "pipeline"};
    return (unsigned)s <= MT_TRACED_PIPELINE ? n[s] : "?";
}

static void add_kind(mt_traced_kind *k, const trace_coll *c) {
    k->count++;
    k->bytes += c->bytes;
    if (c->group > 0 && (k->group_min == 0 || c->group < k->group_min)) k->group_min = c->group;
    if (c->group > k->group_max) k->group_max = c->group;
}

/* 1 when the step's collectives are all-reduces, broadcasts and barriers only: nothing is sharded
 * (how a trace without parameter sizes still tells DDP). */
static int only_replicated(const mt_traced_plan *p) {
    for (int k = 0; k <= TRACE_COMM_OTHER; k++)
        if (p->kinds[k].count && k != TRACE_COMM_ALLREDUCE && k != TRACE_COMM_BROADCAST && k != TRACE_COMM_BARRIER)
            return 0;
    return 1;
}

/* 1 when the step's collectives are sends and receives (and barriers) only: a pipeline stage. */
static int only_p2p(const mt_traced_plan *p) {
    if (!p->kinds[TRACE_COMM_SEND].count && !p->kinds[TRACE_COMM_RECV].count) return 0;
    for (int k = 0; k <= TRACE_COMM_OTHER; k++)
        if (p->kinds[k].count && k != TRACE_COMM_SEND && k != TRACE_COMM_RECV && k != TRACE_COMM_BARRIER) return 0;
    return 1;
}

/* The micro-batches a pipeline stage ran, from its sends: one per micro-batch at either end (the
 * first stage sends activations, the last gradients), two in the middle (both); 0 when unknown. */
static int32_t micro_of_sends(const mt_traced_plan *p) {
    int32_t sends = p->kinds[TRACE_COMM_SEND].count;
    if (sends != p->kinds[TRACE_COMM_RECV].count) return 0; /* what a stage sends on, its neighbour receives */
    int end = p->world_size <= 2 || p->rank == 0 || p->rank == p->world_size - 1;
    if (end) return sends;
    return p->rank > 0 && sends % 2 == 0 ? sends / 2 : 0;
}

static int has_backward(const mt_trace *t) {
    for (int32_t i = 0; i < t->n_ops; i++)
        if (t->ops[i].phase == TRACE_PHASE_BACKWARD) return 1;
    return 0;
}

void mt_traced_plan_read(const mt_trace *t, mt_traced_plan *p) {
    memset(p, 0, sizeof *p);
    p->world_size = t->dist.world_size;
    p->rank = t->dist.rank;
    p->backend = t->dist.backend;
    int32_t widest = 0;
    for (int32_t i = 0; i < t->n_colls; i++) {
        const trace_coll *c = &t->colls[i];
        if (!c->instance || (unsigned)c->kind > TRACE_COMM_OTHER) continue;
        p->n_colls++;
        p->n_group_assumed += c->group_src == TRACE_GROUP_WORLD || c->group_src == TRACE_GROUP_UNKNOWN;
        add_kind(&p->kinds[c->kind], c);
        if (c->kind == TRACE_COMM_ALLREDUCE) p->allreduce_bytes += c->bytes;
        /* issued after a forward op of a step that has a backward pass (a trace without one, such as
         * a Kineto file alone, calls every op forward) */
        if (c->kind == TRACE_COMM_ALLREDUCE && c->issued_by >= 0 && c->issued_by < t->n_ops &&
            t->ops[c->issued_by].phase == TRACE_PHASE_FORWARD && has_backward(t))
            p->fwd_allreduces++;
        if (c->group > widest) widest = c->group;
    }
    if (p->world_size == 0) p->world_size = widest;
    p->multi_rank = p->world_size > 1;
    p->pipe_micro = p->multi_rank && only_p2p(p) ? micro_of_sends(p) : 0;
    p->param_bytes = t->param_bytes;
    p->param_share = t->param_bytes > 0 ? p->allreduce_bytes / t->param_bytes : 0;
    if (!p->multi_rank) p->sync = MT_TRACED_SINGLE;
    else if (only_p2p(p)) p->sync = MT_TRACED_PIPELINE;
    else if (p->kinds[TRACE_COMM_ALLREDUCE].count == 0) p->sync = MT_TRACED_NONE;
    else if (p->fwd_allreduces > 0) p->sync = MT_TRACED_TENSOR;
    else if (p->param_share >= MT_TRACED_DDP_SHARE || (p->param_bytes <= 0 && only_replicated(p))) p->sync = MT_TRACED_DDP;
    else p->sync = MT_TRACED_PARTIAL;
}

int mt_traced_plan_describe(const mt_traced_plan *p, char *buf, size_t len) {
    char b[32];
    size_t n = 0;
    int w;
#define PUT(...)                                                                 \
    do {                                                                         \
        w = snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, __VA_ARGS__); \
        if (w > 0) n += (size_t)w;                                               \
    } while (0)
    if (!p->multi_rank) {
        PUT("one GPU (no collective on more than one rank)");
        return (int)n;
    }
    if (p->rank >= 0) PUT("rank %d of %d", p->rank, p->world_size);
    else PUT("one rank of %d", p->world_size);
    if (p->backend) PUT(" (%s)", p->backend);
    PUT(": %d collective%s per step", p->n_colls, mt_plural(p->n_colls));
    for (int k = 0; k <= TRACE_COMM_OTHER; k++) {
        const mt_traced_kind *x = &p->kinds[k];
        if (!x->count) continue;
        PUT(", %d %s %s", x->count, mt_trace_comm_name((trace_comm)k), mt_fmt_bytes(x->bytes, b, sizeof b));
    }
    if (p->sync == MT_TRACED_PIPELINE && p->pipe_micro > 0)
        PUT("; sends and receives only: one stage of a %d-stage pipeline, %d micro-batch%s (%s)", p->world_size,
            p->pipe_micro, p->pipe_micro == 1 ? "" : "es", mt_traced_sync_name(p->sync));
    else if (p->sync == MT_TRACED_PIPELINE)
        PUT("; sends and receives only: one stage of a %d-stage pipeline, micro-batches unknown (%s)",
            p->world_size, mt_traced_sync_name(p->sync));
    else if (p->kinds[TRACE_COMM_ALLREDUCE].count == 0) PUT("; no all-reduce: parameters are not synchronised (%s)",
                                                       mt_traced_sync_name(p->sync));
    else if (p->sync == MT_TRACED_TENSOR)
        PUT("; %d all-reduce%s in the forward pass: a tensor-parallel group's activations, each rank holds part of "
            "the model (%s)", p->fwd_allreduces, mt_plural(p->fwd_allreduces), mt_traced_sync_name(p->sync));
    else if (p->param_bytes > 0) PUT("; all-reduces carry %.0f %% of the parameter bytes (%s)", 100 * p->param_share,
                                     mt_traced_sync_name(p->sync));
    else PUT("; parameter sizes unknown, %s (%s)", p->sync == MT_TRACED_DDP ? "nothing sharded" : "some sharded",
             mt_traced_sync_name(p->sync));
#undef PUT
    return (int)n;
}

int mt_traced_coll_op(trace_comm k) {
    switch (k) {
    case TRACE_COMM_ALLREDUCE: return MT_COLL_ALLREDUCE;
    case TRACE_COMM_ALLGATHER: return MT_COLL_ALLGATHER;
    case TRACE_COMM_REDUCESCATTER: return MT_COLL_REDUCESCATTER;
    case TRACE_COMM_BROADCAST: return MT_COLL_BROADCAST;
    case TRACE_COMM_REDUCE: return MT_COLL_REDUCE;
    case TRACE_COMM_ALLTOALL:
    case TRACE_COMM_SEND:
    case TRACE_COMM_RECV: return MT_COLL_ALLTOALL;
    default: return -1;
    }
}

int mt_traced_task_of(const mt_trace *t, int32_t ci, const mt_plan *pl, mt_groups *g, mt_traced_task *out) {
    const trace_coll *c = &t->colls[ci];
    int op = mt_traced_coll_op(c->kind);
    int p2p = c->kind == TRACE_COMM_SEND || c->kind == TRACE_COMM_RECV;
    int32_t size = p2p ? 2 : c->group > 0 ? c->group : pl->dp;
    if (op < 0 || size < 2 || pl->dp < 2) return 0;
    memset(out, 0, sizeof *out);
    out->op = (mt_coll_op)op;
    out->group = MT_GROUP_DP;
    if (size < pl->dp) {
        int k = mt_groups_sub_kind(g, size);
        if (k >= 0) out->group = k;
    }
    out->bytes = p2p ? 2 * c->bytes : c->bytes;
    out->scales = c->kind == TRACE_COMM_ALLTOALL || p2p;
    const trace_op *by = c->issued_by >= 0 && c->issued_by < t->n_ops ? &t->ops[c->issued_by] : NULL;
    out->blocking = !(c->kind == TRACE_COMM_ALLREDUCE && by && by->phase == TRACE_PHASE_BACKWARD);
    return 1;
}

int64_t mt_traced_coll_ns(const mt_trace *t, int32_t ci) {
    const trace_coll *c = &t->colls[ci];
    if (!t->has_device_time) return c->dur_ns;
    if (c->op < 0 || c->op >= t->n_ops) return -1;
    const trace_op *o = &t->ops[c->op];
    int64_t ns = 0, end = c->ts_ns + c->dur_ns;
    int found = 0;
    for (int32_t k = o->kernel_first; k < o->kernel_first + o->kernel_count; k++) {
        const trace_kernel *K = &t->kernels[k];
        if (!K->comm || K->launch_ns < c->ts_ns || K->launch_ns > end) continue;
        ns += K->dur_ns;
        found = 1;
    }
    if (found) return ns;
    int32_t same = 0; /* instances the op made */
    for (int32_t j = 0; j < t->n_colls; j++) same += t->colls[j].instance && t->colls[j].op == c->op;
    return same == 1 && o->comm_dev_ns > 0 ? o->comm_dev_ns : -1;
}

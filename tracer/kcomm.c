/* tracer/kcomm.c — the traced job's communication from its Kineto events (see kcomm.h).
 *
 * While calls are read (mt_kcomm_call) trace_coll.instance holds what the nest showed: 0 no
 * backend event, 1 a backend event inside an API call (c10d::*, record_param_comms), 2 a bare
 * backend event (gloo's worker thread runs the work of a call made elsewhere); mt_kcomm_instances
 * turns it into the 0/1 of trace.h. */
#include <stdlib.h>
#include <string.h>

#include "tracer/kcomm.h"
#include "tracer/limits.h"
#include "tracer/opclass.h"

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int is_backend(const char *name) { return starts(name, "nccl:") || starts(name, "gloo:"); }

/* 1 when name ends in "wait", any case (TorchRec's ReduceScatterBase_Wait, record_param_comms'
 * "wait"). */
static int names_wait(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n < 4) return 0;
    const char *e = name + n - 4;
    for (int i = 0; i < 4; i++)
        if ((e[i] | 0x20) != "wait"[i]) return 0;
    return 1;
}

/* ---- distributedInfo -------------------------------------------------------------------- */

static const char *str_of(json_t *v, trace_strpool *pool) {
    return json_is_string(v) ? mt_strpool_intern(pool, json_string_value(v), -1) : NULL;
}

mt_status mt_kcomm_dist(const kineto_data *k, mt_trace *t) {
    trace_dist *d = &t->dist;
    memset(d, 0, sizeof *d);
    d->rank = -1;
    json_t *di = k->dist;
    if (!json_is_object(di)) return MT_OK;
    json_t *ws = json_object_get(di, "world_size"), *rk = json_object_get(di, "rank");
    d->world_size = trace_group_size(ws);
    if (json_is_integer(rk) && json_integer_value(rk) >= 0 && json_integer_value(rk) < d->world_size)
        d->rank = (int32_t)json_integer_value(rk);
    d->backend = str_of(json_object_get(di, "backend"), t->pool);
    json_t *pgs = json_object_get(di, "pg_config");
    if (!json_is_array(pgs) || json_array_size(pgs) == 0) return MT_OK;
    d->pgs = calloc(json_array_size(pgs), sizeof *d->pgs);
    if (!d->pgs) return MT_ENOMEM;
    size_t i;
    json_t *g;
    json_array_foreach(pgs, i, g) {
        if (!json_is_object(g)) continue;
        trace_pg *p = &d->pgs[d->n_pgs++];
        p->name = str_of(json_object_get(g, "pg_name"), t->pool);
        p->desc = str_of(json_object_get(g, "pg_desc"), t->pool);
        p->size = trace_group_size(json_object_get(g, "pg_size"));
    }
    return MT_OK;
}

/* The size of the process group named (or described) pg; with one group in the job, that one's. */
static int32_t pg_size(const trace_dist *d, const char *name, const char *desc) {
    for (int32_t i = 0; i < d->n_pgs; i++) {
        const trace_pg *p = &d->pgs[i];
        if ((name && p->name && !strcmp(name, p->name)) || (desc && p->desc && !strcmp(desc, p->desc))) return p->size;
    }
    return d->n_pgs == 1 ? d->pgs[0].size : 0;
}

/* ---- one call's nest -------------------------------------------------------------------- */

typedef struct nest {
    trace_comm rpc_kind, api_kind, backend_kind;
    double in_n, out_n;        /* record_param_comms' message elements, -1 absent */
    const char *dtype;         /* record_param_comms' dtype */
    int32_t group;             /* record_param_comms' Group size */
    const char *pg_name, *pg_desc;
    int backend, bare, wait;
    double backend_bytes, rpc_bytes;     /* first tensor of the backend event / record_param_comms */
    const char *backend_dtype, *rpc_dtype;
    double max_bytes, min_bytes;         /* over every tensor of the nest, 0 none */
} nest;

/* Bytes and dtype of entry a of an event's "Input Dims" / "Input type" (0: not a sized tensor). */
static double tensor_bytes(const kineto_data *k, const kargs *args, int32_t a, const char **dtype) {
    const kinput *in = &k->inputs[args->in_first + a];
    int32_t isz = mt_trace_dtype_size(in->type);
    if (in->size <= 0 || isz == 0) return 0;
    double numel = 1;
    if (in->ndim < in->size) numel = 0; /* an element that is not an integer */
    for (int32_t q = 0; q < in->ndim; q++) numel *= (double)k->dims[in->dim_first + q];
    if (dtype) *dtype = in->type;
    return numel * isz;
}

/* The event's tensors into the nest's extremes; its first sized tensor's bytes (input order). */
static double scan_tensors(const kineto_data *k, const kargs *args, nest *n, const char **dtype) {
    double first = 0;
    for (int32_t a = 0; a < args->n_in; a++) {
        const char *ty = NULL;
        double b = tensor_bytes(k, args, a, &ty);
        if (b <= 0) continue;
        if (first == 0) {
            first = b;
            if (dtype) *dtype = ty;
        }
        if (b > n->max_bytes) n->max_bytes = b;
        if (n->min_bytes == 0 || b < n->min_bytes) n->min_bytes = b;
    }
    return first;
}

static void read_rpc(const kineto_data *k, const kev *z, nest *n) {
    n->rpc_bytes = scan_tensors(k, &z->a, n, &n->rpc_dtype);
    if (!z->a.present) return;
    const kcollargs *a = mt_kineto_coll(k, &z->a);
    const char *cn = a->coll_name;
    if (cn && names_wait(cn)) n->wait = 1;
    if (cn && mt_opclass_comm_of(cn) != TRACE_COMM_NONE) n->rpc_kind = mt_opclass_comm_of(cn);
    n->in_n = a->in_nelems;
    n->out_n = a->out_nelems;
    if (a->dtype) n->dtype = a->dtype;
    if (a->group) n->group = a->group;
    n->pg_name = a->pg_name;
    n->pg_desc = a->pg_desc;
}

static void read_event(const kineto_data *k, const kev *z, int outer, nest *n) {
    if (!strcmp(z->name, "record_param_comms")) {
        read_rpc(k, z, n);
    } else if (is_backend(z->name)) {
        n->backend = 1;
        n->bare |= outer;
        n->backend_kind = mt_opclass_comm_of(z->name);
        n->backend_bytes = scan_tensors(k, &z->a, n, &n->backend_dtype);
    } else if (starts(z->name, "c10d::")) {
        if (n->api_kind == TRACE_COMM_NONE || n->api_kind == TRACE_COMM_OTHER) n->api_kind = mt_opclass_comm_of(z->name);
        scan_tensors(k, &z->a, n, NULL);
    }
    if (names_wait(z->name)) n->wait = 1;
}

static int known_kind(trace_comm k) { return k != TRACE_COMM_NONE && k != TRACE_COMM_OTHER; }

/* The buffer S of collective.h's convention from what the nest recorded. */
static double nest_bytes(const nest *n, trace_comm kind) {
    int gathers = kind == TRACE_COMM_ALLGATHER || kind == TRACE_COMM_REDUCESCATTER;
    int32_t isz = mt_trace_dtype_size(n->dtype);
    if (isz > 0 && (n->in_n > 0 || n->out_n > 0)) {
        double in = n->in_n > 0 ? n->in_n : 0, out = n->out_n > 0 ? n->out_n : 0;
        double el = kind == TRACE_COMM_ALLTOALL || kind == TRACE_COMM_SEND ? (in > 0 ? in : out)
                    : kind == TRACE_COMM_RECV ? (out > 0 ? out : in) : (in > out ? in : out);
        return el * isz;
    }
    if (gathers && n->max_bytes > 0) return n->max_bytes;
    if (n->backend_bytes > 0) return n->backend_bytes;
    if (n->rpc_bytes > 0) return n->rpc_bytes;
    return n->max_bytes;
}

static void nest_group(const nest *n, const trace_dist *d, trace_coll *c) {
    int32_t g = 0;
    if (n->group > 0) {
        c->group = n->group;
        c->group_src = TRACE_GROUP_RECORDED;
    } else if ((g = pg_size(d, n->pg_name, n->pg_desc)) > 0) {
        c->group = g;
        c->group_src = TRACE_GROUP_PG;
    } else if ((c->kind == TRACE_COMM_ALLGATHER || c->kind == TRACE_COMM_REDUCESCATTER) && n->min_bytes > 0 &&
               n->max_bytes >= 2 * n->min_bytes && n->max_bytes / n->min_bytes == (double)(int64_t)(n->max_bytes / n->min_bytes) &&
               n->max_bytes / n->min_bytes <= (double)INT32_MAX) {
        c->group = (int32_t)(n->max_bytes / n->min_bytes);
        c->group_src = TRACE_GROUP_SHAPES;
    } else if (d->world_size > 0) {
        c->group = d->world_size;
        c->group_src = TRACE_GROUP_WORLD;
    }
}

void mt_kcomm_call(const kineto_data *k, const int32_t *ord, int64_t pos, mt_trace *t, trace_coll *c) {
    nest n = {.in_n = -1, .out_n = -1};
    const kev *y = &k->ev[ord[pos]];
    int64_t end = y->ts_ns + y->dur_ns;
    for (int64_t i = pos; i < k->n_ev; i++) {
        const kev *z = &k->ev[ord[i]];
        if (i > pos && (z->tid != y->tid || z->ts_ns > end || (z->ts_ns == end && y->dur_ns > 0))) break;
        read_event(k, z, i == pos, &n);
    }
    if (c->op >= 0 && c->op < t->n_ops && names_wait(t->ops[c->op].name)) n.wait = 1;
    if (known_kind(n.rpc_kind)) c->kind = n.rpc_kind;
    else if (known_kind(n.backend_kind)) c->kind = n.backend_kind;
    else if (known_kind(n.api_kind)) c->kind = n.api_kind;
    c->bytes = nest_bytes(&n, c->kind);
    c->dtype = n.dtype ? n.dtype : n.backend_dtype ? mt_strpool_intern(t->pool, n.backend_dtype, -1)
             : n.rpc_dtype ? mt_strpool_intern(t->pool, n.rpc_dtype, -1) : NULL;
    c->pg = n.pg_desc ? n.pg_desc : n.pg_name;
    c->is_wait = (int8_t)n.wait;
    c->instance = (int8_t)(!n.backend ? 0 : n.bare ? 2 : 1);
    nest_group(&n, &t->dist, c);
}

/* ---- the step's collectives --------------------------------------------------------------- */

typedef struct call_at {
    int64_t ts;
    int32_t i;
} call_at;

static int cmp_call(const void *a, const void *b) {
    const call_at *x = a, *y = b;
    if (x->ts != y->ts) return (x->ts > y->ts) - (x->ts < y->ts);
    return (x->i > y->i) - (x->i < y->i);
}

/* The compute op at or before op (an op that is only a collective call issues nothing). */
static int32_t compute_at_or_before(const mt_trace *t, int32_t op) {
    while (op >= 0 && trace_op_is_comm(&t->ops[op])) op--;
    return op;
}

/* Bare backend event b takes the earliest pending call of its kind (pending[] holds call indices,
 * -1 once taken): its op, and its group when b's own is only assumed. */
static void match_pending(mt_trace *t, int32_t *pending, int32_t n_pending, trace_coll *b) {
    for (int32_t q = 0; q < n_pending; q++) {
        if (pending[q] < 0) continue;
        const trace_coll *c = &t->colls[pending[q]];
        if (c->kind != b->kind || c->ts_ns > b->ts_ns) continue;
        b->issued_by = compute_at_or_before(t, c->op);
        if (c->group_src != TRACE_GROUP_UNKNOWN && c->group_src < b->group_src) {
            b->group = c->group;
            b->group_src = c->group_src;
        }
        if (!b->pg) b->pg = c->pg;
        pending[q] = -1;
        return;
    }
}

void mt_kcomm_instances(mt_trace *t) {
    size_t n = (size_t)(t->n_colls > 0 ? t->n_colls : 1);
    call_at *order = malloc(n * sizeof *order);
    int32_t *pending = malloc(n * sizeof *pending), n_pending = 0;
    int any_backend = 0;
    for (int32_t i = 0; i < t->n_colls; i++) {
        any_backend |= t->colls[i].instance != 0;
        t->colls[i].issued_by = compute_at_or_before(t, t->colls[i].op);
        if (order) order[i] = (call_at){t->colls[i].ts_ns, i};
    }
    if (order) qsort(order, (size_t)t->n_colls, sizeof *order, cmp_call);
    for (int32_t q = 0; q < t->n_colls; q++) {
        trace_coll *c = &t->colls[order ? order[q].i : q];
        int8_t seen = c->instance;
        c->instance = 0;
        if (c->is_wait || !known_kind(c->kind)) continue;
        if (!any_backend || seen == 1 || !pending) { /* (no memory to match: each its own) */
            c->instance = seen != 0 || !any_backend;
        } else if (seen == 0) {
            pending[n_pending++] = order ? order[q].i : q;
        } else {
            c->instance = 1;
            match_pending(t, pending, n_pending, c);
        }
    }
    free(order);
    free(pending);
    /* the ops' own summary (inspect's per-op table): what their collectives moved, on which group */
    for (int32_t i = 0; i < t->n_colls; i++) {
        const trace_coll *c = &t->colls[i];
        if (!c->instance || c->op < 0 || c->op >= t->n_ops) continue;
        trace_op *o = &t->ops[c->op];
        if (o->comm_group <= 0 || c->group_src != TRACE_GROUP_WORLD) o->comm_group = c->group;
        o->comm_bytes = 0;
    }
    for (int32_t i = 0; i < t->n_colls; i++)
        if (t->colls[i].instance && t->colls[i].op >= 0 && t->colls[i].op < t->n_ops)
            t->ops[t->colls[i].op].comm_bytes += t->colls[i].bytes;
}

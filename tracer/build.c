/* tracer/build.c — assembles a `trace` from reader output and derives what the readers
 * cannot see alone: device time per op (union of kernel intervals), tensor roles, the
 * parameter count, the batch size and layers.
 *
 * Roles (in this order of precedence):
 *  - gradient: inputs of torch::autograd::AccumulateGrad;
 *  - weight: tensors updated in place (first argument of an in-place op, `aten::x_`) by the
 *    optimizer that forward ops also read; optimizer state: the other in-place-updated ones;
 *  - activation: outputs of forward ops; input: tensors that forward or "other" ops read
 *    before any op produced them; other: everything else.
 * Cost: O(ops + trefs + kernels log kernels).
 */
#include <stdlib.h>
#include <string.h>

#include "tracer/internal.h"
#include "util/vec.h"

/* ---- string pool: a chained hash table of interned strings ---------------------------- */
typedef struct sp_entry {
    struct sp_entry *next;
    uint64_t hash;
    char str[];
} sp_entry;

struct trace_strpool {
    sp_entry **buckets;
    int64_t cap, len;
};

trace_strpool *mt_strpool_new(void) {
    trace_strpool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cap = 1024;
    p->buckets = calloc((size_t)p->cap, sizeof *p->buckets);
    if (!p->buckets) {
        free(p);
        return NULL;
    }
    return p;
}

void mt_strpool_free(trace_strpool *p) {
    if (!p) return;
    for (int64_t i = 0; i < p->cap; i++) {
        sp_entry *e = p->buckets[i];
        while (e) {
            sp_entry *n = e->next;
            free(e);
            e = n;
        }
    }
    free(p->buckets);
    free(p);
}

static uint64_t fnv(const char *s, int64_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

const char *mt_strpool_intern(trace_strpool *p, const char *s, int64_t n) {
    if (!s) return NULL;
    if (n < 0) n = (int64_t)strlen(s);
    uint64_t h = fnv(s, n);
    for (sp_entry *e = p->buckets[h & (uint64_t)(p->cap - 1)]; e; e = e->next)
        if (e->hash == h && strncmp(e->str, s, (size_t)n) == 0 && e->str[n] == '\0') return e->str;
    if (p->len * 2 > p->cap) { /* rehash */
        int64_t ncap = p->cap * 2;
        sp_entry **nb = calloc((size_t)ncap, sizeof *nb);
        if (!nb) return NULL;
        for (int64_t i = 0; i < p->cap; i++) {
            sp_entry *e = p->buckets[i];
            while (e) {
                sp_entry *nx = e->next;
                e->next = nb[e->hash & (uint64_t)(ncap - 1)];
                nb[e->hash & (uint64_t)(ncap - 1)] = e;
                e = nx;
            }
        }
        free(p->buckets);
        p->buckets = nb;
        p->cap = ncap;
    }
    sp_entry *e = malloc(sizeof *e + (size_t)n + 1);
    if (!e) return NULL;
    e->hash = h;
    memcpy(e->str, s, (size_t)n);
    e->str[n] = '\0';
    e->next = p->buckets[h & (uint64_t)(p->cap - 1)];
    p->buckets[h & (uint64_t)(p->cap - 1)] = e;
    p->len++;
    return e->str;
}

/* ---- names ------------------------------------------------------------------------------ */
int32_t mt_trace_dtype_size(const char *d) {
    if (!d) return 0;
    if (!strncmp(d, "c10::", 5)) d += 5;
    static const struct { const char *name; int32_t size; } tab[] = {
        {"float", 4}, {"Float", 4}, {"float32", 4}, {"double", 8}, {"Double", 8},
        {"Half", 2}, {"half", 2}, {"float16", 2}, {"BFloat16", 2}, {"bfloat16", 2},
        {"long int", 8}, {"long", 8}, {"Long", 8}, {"int64", 8}, {"int", 4}, {"Int", 4},
        {"short", 2}, {"signed char", 1}, {"unsigned char", 1}, {"bool", 1}, {"Bool", 1},
        {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"c10::complex<float>", 8},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(d, tab[i].name)) return tab[i].size;
    return 0;
}

trace_comm mt_opclass_comm_of(const char *name) {
    if (!name) return TRACE_COMM_NONE;
    const char *s = name;
    if (!strncmp(s, "nccl:", 5)) s += 5;
    else if (!strncmp(s, "gloo:", 5)) s += 5;
    else if (!strncmp(s, "c10d::", 6)) s += 6;
    else if (!strncmp(s, "ncclDevKernel_", 14)) s += 14;
    else if (!strncmp(s, "ncclKernel_", 11)) s += 11;
    else if (s != name) return TRACE_COMM_NONE;
    /* Bare names (from record_param_comms' collective_name) are accepted too. */
    char low[64];
    size_t n = 0;
    for (; s[n] && n + 1 < sizeof low; n++) {
        char c = s[n];
        low[n] = (char)((c >= 'A' && c <= 'Z') ? c + 32 : c);
    }
    low[n] = '\0';
    static const struct { const char *key; trace_comm kind; } tab[] = {
        {"reduce_scatter", TRACE_COMM_REDUCESCATTER}, {"reducescatter", TRACE_COMM_REDUCESCATTER},
        {"_reduce_scatter_base", TRACE_COMM_REDUCESCATTER},
        {"all_reduce", TRACE_COMM_ALLREDUCE}, {"allreduce", TRACE_COMM_ALLREDUCE},
        {"all_gather", TRACE_COMM_ALLGATHER}, {"allgather", TRACE_COMM_ALLGATHER},
        {"_allgather_base", TRACE_COMM_ALLGATHER},
        {"all_to_all", TRACE_COMM_ALLTOALL}, {"alltoall", TRACE_COMM_ALLTOALL},
        {"sendrecv", TRACE_COMM_SEND}, {"send", TRACE_COMM_SEND}, {"recv", TRACE_COMM_RECV},
        {"broadcast", TRACE_COMM_BROADCAST}, {"reduce", TRACE_COMM_REDUCE},
        {"barrier", TRACE_COMM_BARRIER},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strncmp(low, tab[i].key, strlen(tab[i].key))) return tab[i].kind;
    return s != name ? TRACE_COMM_OTHER : TRACE_COMM_NONE;
}

/* ---- builder ---------------------------------------------------------------------------- */
mt_status mt_tb_init(trace_builder *b, trace *t) {
    memset(b, 0, sizeof *b);
    b->t = t;
    mt_u64map_init(&b->tensor_by_key);
    return MT_OK;
}

void mt_tb_destroy(trace_builder *b) {
    mt_u64map_destroy(&b->tensor_by_key);
    free(b->tensor_next);
    b->tensor_next = NULL;
}

int32_t mt_tb_add_op(trace_builder *b, const trace_op *op) {
    trace *t = b->t;
    if (mt_vec_reserve(&t->ops, &b->cap_ops, (int64_t)t->n_ops + 1)) return -1;
    trace_op *o = &t->ops[t->n_ops];
    *o = *op;
    o->id = t->n_ops;
    o->fwd_op = -1;
    o->in_first = o->out_first = t->n_trefs;
    o->in_count = o->out_count = 0;
    o->kernel_first = o->kernel_count = 0;
    return t->n_ops++;
}

int32_t mt_tb_add_kernel(trace_builder *b, const trace_kernel *k) {
    trace *t = b->t;
    if (mt_vec_reserve(&t->kernels, &b->cap_kernels, (int64_t)t->n_kernels + 1)) return -1;
    t->kernels[t->n_kernels] = *k;
    return t->n_kernels++;
}

static int32_t push_tensor(trace_builder *b, int64_t et_id, int64_t storage, int64_t offset,
                           int64_t numel, int32_t itemsize, const char *dtype, const char *device) {
    trace *t = b->t;
    if (mt_vec_reserve(&t->tensors, &b->cap_tensors, (int64_t)t->n_tensors + 1)) return -1;
    if (mt_vec_reserve(&b->tensor_next, &b->cap_tensor_next, (int64_t)t->n_tensors + 1)) return -1;
    trace_tensor *x = &t->tensors[t->n_tensors];
    memset(x, 0, sizeof *x);
    x->et_id = et_id;
    x->storage_id = storage;
    x->offset = offset;
    x->numel = numel;
    x->itemsize = itemsize > 0 ? itemsize : mt_trace_dtype_size(dtype);
    x->bytes = (double)numel * x->itemsize;
    x->dtype = dtype;
    x->device = device;
    x->first_op = t->n_ops - 1;
    x->role = TRACE_ROLE_OTHER;
    b->tensor_next[t->n_tensors] = -1;
    return t->n_tensors++;
}

int32_t mt_tb_tensor(trace_builder *b, int64_t et_id, int64_t storage, int64_t offset,
                       int64_t numel, int32_t itemsize, const char *dtype, const char *device) {
    uint64_t h = mt_hash64((uint64_t)et_id) ^ mt_hash64((uint64_t)storage * 31 + 7) ^
                 mt_hash64((uint64_t)offset * 131 + (uint64_t)numel * 8191 + (uint64_t)itemsize);
    int64_t key = (int64_t)(h & 0x3fffffffffffffffULL);
    int64_t head;
    if (mt_u64map_get(&b->tensor_by_key, key, &head)) {
        for (int32_t i = (int32_t)head; i >= 0; i = b->tensor_next[i]) {
            const trace_tensor *x = &b->t->tensors[i];
            if (x->et_id == et_id && x->storage_id == storage && x->offset == offset &&
                x->numel == numel)
                return i;
        }
    }
    int32_t idx = push_tensor(b, et_id, storage, offset, numel, itemsize, dtype, device);
    if (idx < 0) return -1;
    if (mt_u64map_get(&b->tensor_by_key, key, &head)) b->tensor_next[idx] = (int32_t)head;
    if (mt_u64map_put(&b->tensor_by_key, key, idx, NULL) != MT_OK) return -1;
    return idx;
}

int32_t mt_tb_anon_tensor(trace_builder *b, int64_t numel, int32_t itemsize, const char *dtype) {
    return push_tensor(b, -1, -1, 0, numel, itemsize, dtype, NULL);
}

mt_status mt_tb_add_tref(trace_builder *b, int32_t tensor, const int64_t *shape, int32_t ndim,
                           int32_t arg, int is_out) {
    trace *t = b->t;
    if (t->n_ops == 0) return MT_EINTERNAL;
    trace_op *o = &t->ops[t->n_ops - 1];
    if (mt_vec_reserve(&t->trefs, &b->cap_trefs, (int64_t)t->n_trefs + 1) ||
        mt_vec_reserve(&t->dims, &b->cap_dims, (int64_t)t->n_dims + ndim))
        return MT_ENOMEM;
    trace_tref *r = &t->trefs[t->n_trefs++];
    r->tensor = tensor;
    r->shape_off = t->n_dims;
    r->ndim = ndim;
    r->arg = arg;
    if (ndim > 0) memcpy(t->dims + t->n_dims, shape, (size_t)ndim * sizeof *shape);
    t->n_dims += ndim;
    if (is_out) o->out_count++;
    else {
        o->in_count++;
        o->out_first = t->n_trefs; /* outputs follow inputs */
    }
    return MT_OK;
}

/* ---- finish ----------------------------------------------------------------------------- */
static int cmp_kernel(const void *a, const void *b) {
    const trace_kernel *x = a, *y = b;
    if (x->op != y->op) return (x->op > y->op) - (x->op < y->op);
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int cmp_i64(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Length of the union of intervals given as (start, end) pairs sorted by start. */
static int64_t union_len(const int64_t *iv, int64_t n) {
    int64_t total = 0, cs = 0, ce = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = iv[2 * i], e = iv[2 * i + 1];
        if (ce < s) {
            if (ce > cs) total += ce - cs;
            cs = s;
            ce = e;
        } else if (e > ce) {
            ce = e;
        }
    }
    if (ce > cs) total += ce - cs;
    return total;
}

static void device_times(trace *t, int64_t *scratch) {
    if (t->n_kernels > 0) qsort(t->kernels, (size_t)t->n_kernels, sizeof *t->kernels, cmp_kernel);
    t->has_device_time = t->n_kernels > 0;
    int32_t k = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        trace_op *o = &t->ops[i];
        o->kernel_first = k;
        while (k < t->n_kernels && t->kernels[k].op == i) k++;
        o->kernel_count = k - o->kernel_first;
        if (!t->has_device_time) {
            o->dev_start_ns = o->cpu_start_ns;
            o->dev_end_ns = o->cpu_start_ns + o->cpu_dur_ns;
            o->dev_ns = o->cpu_dur_ns;
            continue;
        }
        if (o->kernel_count == 0) {
            o->dev_start_ns = o->dev_end_ns = o->cpu_start_ns;
            o->dev_ns = 0;
            continue;
        }
        const trace_kernel *ks = t->kernels + o->kernel_first;
        int64_t lo = ks[0].start_ns, hi = 0;
        for (int32_t j = 0; j < o->kernel_count; j++) {
            scratch[2 * j] = ks[j].start_ns;
            scratch[2 * j + 1] = ks[j].start_ns + ks[j].dur_ns;
            if (scratch[2 * j + 1] > hi) hi = scratch[2 * j + 1];
        }
        o->dev_start_ns = lo;
        o->dev_end_ns = hi;
        o->dev_ns = union_len(scratch, o->kernel_count);
    }
    for (int32_t j = 0; j < t->n_kernels; j++) {
        scratch[2 * j] = t->kernels[j].start_ns;
        scratch[2 * j + 1] = t->kernels[j].start_ns + t->kernels[j].dur_ns;
    }
    if (t->n_kernels > 0) qsort(scratch, (size_t)t->n_kernels, 2 * sizeof *scratch, cmp_i64);
    t->dev_union_ns = t->has_device_time ? union_len(scratch, t->n_kernels) : 0;
}

static int is_inplace(const char *kind) {
    size_t n = kind ? strlen(kind) : 0;
    return n > 1 && kind[n - 1] == '_' && kind[n - 2] != '_';
}

static void assign_roles(trace *t) {
    enum { USED_FWD_IN = 1, PRODUCED = 2, UPDATED = 4, GRAD = 8, READ_BEFORE_PRODUCED = 16,
           FWD_OUT = 32 };
    unsigned char *f = calloc((size_t)t->n_tensors + 1, 1);
    if (!f) return;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        int accum = strstr(o->name, "AccumulateGrad") != NULL;
        int opt_update = o->phase == TRACE_PHASE_OPTIMIZER && is_inplace(o->kind);
        for (int32_t j = 0; j < o->in_count; j++) {
            const trace_tref *r = &t->trefs[o->in_first + j];
            if (r->tensor < 0) continue;
            if (o->phase == TRACE_PHASE_FORWARD) f[r->tensor] |= USED_FWD_IN;
            if (!(f[r->tensor] & PRODUCED) && o->phase != TRACE_PHASE_OPTIMIZER &&
                o->phase != TRACE_PHASE_BACKWARD)
                f[r->tensor] |= READ_BEFORE_PRODUCED;
            if (accum) f[r->tensor] |= GRAD;
            /* Optimizer state persists across steps: a tensor produced in this step before its
             * first in-place update (Adam's denominator) is a temporary, not state. */
            if (opt_update && r->arg == 0 &&
                ((f[r->tensor] & UPDATED) || !(f[r->tensor] & PRODUCED)))
                f[r->tensor] |= UPDATED;
        }
        for (int32_t j = 0; j < o->out_count; j++) {
            const trace_tref *r = &t->trefs[o->out_first + j];
            if (r->tensor < 0) continue;
            f[r->tensor] |= PRODUCED;
            if (o->phase == TRACE_PHASE_FORWARD) f[r->tensor] |= FWD_OUT;
        }
    }
    int any_weight = 0;
    for (int32_t i = 0; i < t->n_tensors; i++) {
        trace_tensor *x = &t->tensors[i];
        unsigned fl = f[i];
        if (fl & GRAD) x->role = TRACE_ROLE_GRADIENT;
        else if ((fl & UPDATED) && (fl & USED_FWD_IN)) x->role = TRACE_ROLE_WEIGHT;
        else if (fl & UPDATED) x->role = TRACE_ROLE_OPTSTATE;
        else if (fl & FWD_OUT) x->role = TRACE_ROLE_ACTIVATION;
        else if ((fl & READ_BEFORE_PRODUCED) && (fl & USED_FWD_IN)) x->role = TRACE_ROLE_INPUT;
        else x->role = TRACE_ROLE_OTHER;
        if (x->role == TRACE_ROLE_WEIGHT) any_weight = 1;
    }
    free(f);
    t->param_count = 0;
    t->param_bytes = t->grad_bytes = t->optstate_bytes = t->activation_bytes = t->input_bytes = 0;
    int64_t grad_numel = 0;
    for (int32_t i = 0; i < t->n_tensors; i++) {
        const trace_tensor *x = &t->tensors[i];
        switch (x->role) {
        case TRACE_ROLE_WEIGHT: t->param_count += x->numel; t->param_bytes += x->bytes; break;
        case TRACE_ROLE_GRADIENT: grad_numel += x->numel; t->grad_bytes += x->bytes; break;
        case TRACE_ROLE_OPTSTATE: t->optstate_bytes += x->bytes; break;
        case TRACE_ROLE_ACTIVATION: t->activation_bytes += x->bytes; break;
        case TRACE_ROLE_INPUT: t->input_bytes += x->bytes; break;
        default: break;
        }
    }
    if (!any_weight && grad_numel > 0) { /* no optimizer in the step: one gradient per parameter */
        t->param_count = grad_numel;
        t->param_bytes = t->grad_bytes;
    }
}

static void infer_batch(trace *t) {
    /* The model input: first forward op reading a weight; its first non-weight tensor input. */
    for (int pass = 0; pass < 2 && t->batch_size == 0; pass++) {
        for (int32_t i = 0; i < t->n_ops && t->batch_size == 0; i++) {
            const trace_op *o = &t->ops[i];
            if (o->phase != TRACE_PHASE_FORWARD) continue;
            int has_w = 0;
            for (int32_t j = 0; j < o->in_count; j++) {
                const trace_tref *r = &t->trefs[o->in_first + j];
                if (r->tensor >= 0 && t->tensors[r->tensor].role == TRACE_ROLE_WEIGHT) has_w = 1;
            }
            if (pass == 0 && !has_w) continue;
            for (int32_t j = 0; j < o->in_count; j++) {
                const trace_tref *r = &t->trefs[o->in_first + j];
                if (r->tensor < 0 || r->ndim < (pass == 0 ? 1 : 2)) continue;
                if (t->tensors[r->tensor].role == TRACE_ROLE_WEIGHT) continue;
                t->batch_size = t->dims[r->shape_off];
                break;
            }
        }
    }
}

static mt_status add_layer(trace_builder *b, const char *name) {
    trace *t = b->t;
    if (mt_vec_reserve(&t->layers, &b->cap_layers, (int64_t)t->n_layers + 1)) return MT_ENOMEM;
    trace_layer *l = &t->layers[t->n_layers++];
    memset(l, 0, sizeof *l);
    l->name = name;
    return MT_OK;
}

static int op_reads_weight(const trace *t, const trace_op *o, double *bytes) {
    int any = 0;
    for (int32_t j = 0; j < o->in_count; j++) {
        const trace_tref *r = &t->trefs[o->in_first + j];
        if (r->tensor >= 0 && t->tensors[r->tensor].role == TRACE_ROLE_WEIGHT) {
            any = 1;
            if (bytes) *bytes += t->tensors[r->tensor].bytes;
        }
    }
    return any;
}

static mt_status assign_layers(trace_builder *b, const builder_layer_hint *hints) {
    trace *t = b->t;
    trace_strpool *pool = t->pool;
    mt_u64map seq_layer;
    mt_u64map_init(&seq_layer);
    mt_status rc = MT_OK;
    int32_t cur = -1;
    const char *cur_mod = NULL;
    int have_hints = 0;
    for (int32_t i = 0; hints && i < t->n_ops; i++)
        if (hints[i].module) have_hints = 1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        trace_op *o = &t->ops[i];
        o->layer = -1;
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        double wbytes = 0;
        int reads_w = op_reads_weight(t, o, &wbytes);
        int start_new;
        const char *name;
        char buf[256];
        if (have_hints) {
            const char *m = hints[i].module;
            start_new = cur < 0 || (m && m != cur_mod);
            name = m ? m : "(no module)";
            if (m) cur_mod = m;
        } else {
            start_new = cur < 0 || reads_w;
            snprintf(buf, sizeof buf, "L%d:%s", t->n_layers, o->kind);
            name = buf;
        }
        if (start_new) {
            const char *nm = mt_strpool_intern(pool, name, -1);
            if (!nm || add_layer(b, nm) != MT_OK) {
                rc = MT_ENOMEM;
                goto out;
            }
            cur = t->n_layers - 1;
        }
        o->layer = cur;
        t->layers[cur].param_bytes += wbytes;
        if (o->seq >= 0 && mt_u64map_put(&seq_layer, o->seq, cur, NULL) != MT_OK) {
            rc = MT_ENOMEM;
            goto out;
        }
    }
    for (int32_t i = 0; i < t->n_ops; i++) {
        trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_BACKWARD) continue;
        int64_t l;
        if (o->fwd_op >= 0 && t->ops[o->fwd_op].layer >= 0) {
            o->layer = t->ops[o->fwd_op].layer;
            continue;
        }
        if (o->seq >= 0 && mt_u64map_get(&seq_layer, o->seq, &l)) {
            o->layer = (int32_t)l;
            continue;
        }
        /* No sequence number (TrioSim CSV): the layer of a forward op sharing a weight. */
        for (int32_t j = 0; j < o->in_count && o->layer < 0; j++) {
            const trace_tref *r = &t->trefs[o->in_first + j];
            if (r->tensor < 0 || t->tensors[r->tensor].role != TRACE_ROLE_WEIGHT) continue;
            int32_t f = t->tensors[r->tensor].first_op;
            if (f >= 0 && t->ops[f].layer >= 0) o->layer = t->ops[f].layer;
        }
    }
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->layer < 0) continue;
        t->layers[o->layer].n_ops++;
        t->layers[o->layer].dev_ns[o->phase] += o->dev_ns;
    }
out:
    mt_u64map_destroy(&seq_layer);
    return rc;
}

mt_status mt_tb_finish(trace_builder *b, const builder_layer_hint *hints, mt_error *err) {
    trace *t = b->t;
    int64_t need = t->n_kernels > 0 ? t->n_kernels : 1;
    int64_t *scratch = malloc((size_t)need * 2 * sizeof *scratch);
    if (!scratch) return mt_fail(err, MT_ENOMEM, "out of memory finishing the trace");
    device_times(t, scratch);
    free(scratch);
    assign_roles(t);
    infer_batch(t);
    if (assign_layers(b, hints) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory assigning layers");
    memset(t->phase_ns, 0, sizeof t->phase_ns);
    t->comm_ns = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        if (t->ops[i].dev_end_ns > t->step_end_ns) t->step_end_ns = t->ops[i].dev_end_ns;
        t->phase_ns[t->ops[i].phase] += t->ops[i].dev_ns;
        if (t->ops[i].comm != TRACE_COMM_NONE) t->comm_ns += t->ops[i].dev_ns;
    }
    return MT_OK;
}

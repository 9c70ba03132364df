/* tracer/builder.c — see builder.h: assembles a `trace` and derives device time per op (union
 * of kernel intervals), tensor roles, the parameter count, the batch size and layers.
 *
 * Roles (in this order of precedence):
 *  - gradient: inputs of torch::autograd::AccumulateGrad;
 *  - weight: tensors updated in place (first argument of an in-place op, `aten::x_`) by the
 *    optimizer that forward ops also read; optimizer state: the other in-place-updated ones;
 *  - activation: outputs of forward ops; input: tensors that forward or "other" ops read
 *    before any op produced them; other: everything else.
 * Cost: O(ops + trefs + kernels log kernels).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/builder.h"
#include "tracer/opclass.h"
#include "tracer/strpool.h"
#include "util/vec.h"

/* ---- builder ---------------------------------------------------------------------------- */
mt_status mt_tb_init(trace_builder *b, mt_trace *t) {
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
    mt_trace *t = b->t;
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
    mt_trace *t = b->t;
    if (mt_vec_reserve(&t->kernels, &b->cap_kernels, (int64_t)t->n_kernels + 1)) return -1;
    t->kernels[t->n_kernels] = *k;
    return t->n_kernels++;
}

static int32_t push_tensor(trace_builder *b, int64_t et_id, int64_t storage, int64_t offset,
                           int64_t numel, int32_t itemsize, const char *dtype, const char *device) {
    mt_trace *t = b->t;
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

static int64_t tensor_key(int64_t et_id, int64_t storage, int64_t offset, int64_t numel, int32_t itemsize) {
    uint64_t h = mt_hash64((uint64_t)et_id) ^ mt_hash64((uint64_t)storage * 31 + 7) ^
                 mt_hash64((uint64_t)offset * 131 + (uint64_t)numel * 8191 + (uint64_t)itemsize);
    return (int64_t)(h & 0x3fffffffffffffffULL);
}

/* A new tensor with this key, found first from now on (-1 on allocation failure). */
static int32_t push_keyed(trace_builder *b, int64_t key, int64_t et_id, int64_t storage, int64_t offset,
                          int64_t numel, int32_t itemsize, const char *dtype, const char *device) {
    int64_t head;
    int32_t idx = push_tensor(b, et_id, storage, offset, numel, itemsize, dtype, device);
    if (idx < 0) return -1;
    if (mt_u64map_get(&b->tensor_by_key, key, &head)) b->tensor_next[idx] = (int32_t)head;
    if (mt_u64map_put(&b->tensor_by_key, key, idx, NULL) != MT_OK) return -1;
    return idx;
}

int32_t mt_tb_tensor(trace_builder *b, int64_t et_id, int64_t storage, int64_t offset,
                       int64_t numel, int32_t itemsize, const char *dtype, const char *device) {
    int64_t key = tensor_key(et_id, storage, offset, numel, itemsize), head;
    if (mt_u64map_get(&b->tensor_by_key, key, &head)) {
        for (int32_t i = (int32_t)head; i >= 0; i = b->tensor_next[i]) {
            const trace_tensor *x = &b->t->tensors[i];
            if (x->et_id == et_id && x->storage_id == storage && x->offset == offset &&
                x->numel == numel)
                return i;
        }
    }
    return push_keyed(b, key, et_id, storage, offset, numel, itemsize, dtype, device);
}

int32_t mt_tb_out_tensor(trace_builder *b, int64_t et_id, int64_t storage, int64_t offset,
                         int64_t numel, int32_t itemsize, const char *dtype, const char *device) {
    int32_t i = mt_tb_tensor(b, et_id, storage, offset, numel, itemsize, dtype, device);
    mt_trace *t = b->t;
    if (i < 0 || t->n_ops == 0 || t->tensors[i].first_op >= t->n_ops - 1) return i;
    const trace_op *o = &t->ops[t->n_ops - 1];
    for (int32_t q = 0; q < o->in_count; q++)
        if (t->trefs[o->in_first + q].tensor == i) return i; /* in place: the same tensor */
    /* made by an earlier op and not read here: a freed tensor's identity given to a new one */
    return push_keyed(b, tensor_key(et_id, storage, offset, numel, itemsize), et_id, storage, offset, numel,
                      itemsize, dtype, device);
}

int32_t mt_tb_anon_tensor(trace_builder *b, int64_t numel, int32_t itemsize, const char *dtype) {
    return push_tensor(b, -1, -1, 0, numel, itemsize, dtype, NULL);
}

mt_status mt_tb_add_tref(trace_builder *b, int32_t tensor, const int64_t *shape, int32_t ndim,
                           int32_t arg, int is_out) {
    mt_trace *t = b->t;
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

static void device_times(mt_trace *t, int64_t *scratch) {
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
            /* a collective call's CPU time is its "device" time, and it is communication: not in a phase */
            o->comm_dev_ns = trace_op_is_comm(o) ? o->cpu_dur_ns : 0;
            o->dev_ns = o->cpu_dur_ns - o->comm_dev_ns;
            continue;
        }
        if (o->kernel_count == 0) {
            o->dev_start_ns = o->dev_end_ns = o->cpu_start_ns;
            o->dev_ns = 0;
            continue;
        }
        trace_kernel *ks = t->kernels + o->kernel_first;
        int64_t lo = ks[0].start_ns, hi = 0;
        for (int pass = 0; pass < 2; pass++) { /* compute kernels, then communication ones */
            int32_t n = 0;
            for (int32_t j = 0; j < o->kernel_count; j++) {
                if (trace_op_is_comm(o)) ks[j].comm = 1; /* a collective call launches only communication */
                if (ks[j].start_ns + ks[j].dur_ns > hi) hi = ks[j].start_ns + ks[j].dur_ns;
                if (ks[j].comm != pass) continue;
                scratch[2 * n] = ks[j].start_ns;
                scratch[2 * n + 1] = ks[j].start_ns + ks[j].dur_ns;
                n++;
            }
            *(pass ? &o->comm_dev_ns : &o->dev_ns) = union_len(scratch, n);
        }
        o->dev_start_ns = lo;
        o->dev_end_ns = hi;
    }
    for (int pass = 0; pass < 2; pass++) { /* every kernel, then the compute ones */
        int32_t n = 0;
        for (int32_t j = 0; j < t->n_kernels; j++) {
            if (pass && t->kernels[j].comm) continue;
            scratch[2 * n] = t->kernels[j].start_ns;
            scratch[2 * n + 1] = t->kernels[j].start_ns + t->kernels[j].dur_ns;
            n++;
        }
        if (n > 0) qsort(scratch, (size_t)n, 2 * sizeof *scratch, cmp_i64);
        *(pass ? &t->compute_union_ns : &t->dev_union_ns) = t->has_device_time ? union_len(scratch, n) : 0;
    }
}

static void tensor_totals(mt_trace *t);

static void assign_roles(mt_trace *t) {
    enum { USED_FWD_IN = 1, PRODUCED = 2, UPDATED = 4, GRAD = 8, READ_BEFORE_PRODUCED = 16,
           FWD_OUT = 32 };
    unsigned char *f = calloc((size_t)t->n_tensors + 1, 1);
    if (!f) return;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        int accum = mt_opclass_is_grad_accum_name(o->name);
        int opt_update = o->phase == TRACE_PHASE_OPTIMIZER && mt_opclass_is_inplace_name(o->kind);
        for (int32_t j = 0; j < o->in_count; j++) {
            const trace_tref *r = &t->trefs[o->in_first + j];
            if (r->tensor < 0) continue;
            if (o->phase == TRACE_PHASE_FORWARD) f[r->tensor] |= USED_FWD_IN;
            if (!(f[r->tensor] & PRODUCED) && o->phase != TRACE_PHASE_OPTIMIZER &&
                o->phase != TRACE_PHASE_BACKWARD)
                f[r->tensor] |= READ_BEFORE_PRODUCED;
            /* a gradient is never a forward input: DDP's reducer names the parameter in a scope
             * (copy_bucket_to_grad) nested in the AccumulateGrad it hooks */
            if (accum && !(f[r->tensor] & USED_FWD_IN)) f[r->tensor] |= GRAD;
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
    for (int32_t i = 0; i < t->n_tensors; i++) {
        trace_tensor *x = &t->tensors[i];
        unsigned fl = f[i];
        if (fl & GRAD) x->role = TRACE_ROLE_GRADIENT;
        else if ((fl & UPDATED) && (fl & USED_FWD_IN)) x->role = TRACE_ROLE_WEIGHT;
        else if (fl & UPDATED) x->role = TRACE_ROLE_OPTSTATE;
        else if (fl & FWD_OUT) x->role = TRACE_ROLE_ACTIVATION;
        else if ((fl & READ_BEFORE_PRODUCED) && (fl & USED_FWD_IN)) x->role = TRACE_ROLE_INPUT;
        else x->role = TRACE_ROLE_OTHER;
    }
    free(f);
    tensor_totals(t);
}

/* The parameter, gradient, state, activation and input totals from the tensors' roles. */
static void tensor_totals(mt_trace *t) {
    int any_weight = 0;
    t->param_count = 0;
    t->param_bytes = t->grad_bytes = t->optstate_bytes = t->activation_bytes = t->input_bytes = 0;
    int64_t grad_numel = 0;
    for (int32_t i = 0; i < t->n_tensors; i++) {
        const trace_tensor *x = &t->tensors[i];
        switch (x->role) {
        case TRACE_ROLE_WEIGHT: t->param_count += x->numel; t->param_bytes += x->bytes; any_weight = 1; break;
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

static void infer_batch(mt_trace *t) {
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
            /* an embedding bag looks up a flat list of ids; its offsets, one per bag, are the batch */
            int bag = o->kind && strstr(o->kind, "embedding_bag") && o->in_count >= 3, seen = 0;
            for (int32_t j = 0; j < o->in_count; j++) {
                const trace_tref *r = &t->trefs[o->in_first + j];
                if (r->tensor < 0 || r->ndim < (pass == 0 ? 1 : 2)) continue;
                if (t->tensors[r->tensor].role == TRACE_ROLE_WEIGHT) continue;
                if (bag && seen++ == 0) continue; /* the ids: the offsets come next */
                t->batch_size = t->dims[r->shape_off];
                break;
            }
        }
    }
}

static mt_status add_layer(trace_builder *b, const char *name) {
    mt_trace *t = b->t;
    if (mt_vec_reserve(&t->layers, &b->cap_layers, (int64_t)t->n_layers + 1)) return MT_ENOMEM;
    trace_layer *l = &t->layers[t->n_layers++];
    memset(l, 0, sizeof *l);
    l->name = name;
    return MT_OK;
}

static int op_reads_weight(const mt_trace *t, const trace_op *o, double *bytes) {
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

/* Forward ops into layers: a new layer at each change of nn.Module (hints), else at each op
 * reading a weight; seq_layer maps their sequence numbers to their layers. */
static mt_status forward_layers(trace_builder *b, const builder_layer_hint *hints, mt_u64map *seq_layer) {
    mt_trace *t = b->t;
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
            const char *nm = mt_strpool_intern(t->pool, name, -1);
            if (!nm || add_layer(b, nm) != MT_OK) return MT_ENOMEM;
            cur = t->n_layers - 1;
        }
        o->layer = cur;
        t->layers[cur].param_bytes += wbytes;
        if (o->seq >= 0 && mt_u64map_put(seq_layer, o->seq, cur, NULL) != MT_OK) return MT_ENOMEM;
    }
    return MT_OK;
}

/* weight_op: storage id of every weight -> the first forward op reading it. */
static mt_status index_weights(const mt_trace *t, mt_u64map *weight_op) {
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        for (int32_t j = 0; j < o->in_count; j++) {
            const trace_tref *r = &t->trefs[o->in_first + j];
            if (r->tensor < 0 || t->tensors[r->tensor].role != TRACE_ROLE_WEIGHT) continue;
            uint64_t st = (uint64_t)t->tensors[r->tensor].storage_id;
            if (t->tensors[r->tensor].storage_id >= 0 && !mt_u64map_get(weight_op, st, NULL) &&
                mt_u64map_put(weight_op, st, i, NULL) != MT_OK)
                return MT_ENOMEM;
        }
    }
    return MT_OK;
}

/* The forward op whose weight shares storage with a tensor op o reads or writes (its gradient
 * op: TrioSim lists AddmmBackward0 with the transposed weight w.t(), a view of w's storage under
 * another tensor id); -1 when none. */
static int32_t op_by_weight_storage(const mt_trace *t, const trace_op *o, const mt_u64map *weight_op) {
    int32_t n = o->in_count + o->out_count;
    for (int32_t j = 0; j < n; j++) {
        const trace_tref *r = &t->trefs[j < o->in_count ? o->in_first + j : o->out_first + j - o->in_count];
        int64_t f;
        if (r->tensor >= 0 && t->tensors[r->tensor].storage_id >= 0 &&
            mt_u64map_get(weight_op, (uint64_t)t->tensors[r->tensor].storage_id, &f))
            return (int32_t)f;
    }
    return -1;
}

/* A backward op joins its forward op's layer, else its sequence number's. Without either (TrioSim
 * CSV has no sequence numbers) a backward op touching a weight's storage is that weight's forward
 * op's autograd node: it becomes its fwd_op and joins its layer. */
static void backward_layers(mt_trace *t, const mt_u64map *seq_layer, const mt_u64map *weight_op) {
    for (int32_t i = 0; i < t->n_ops; i++) {
        trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_BACKWARD) continue;
        int64_t l;
        if (o->fwd_op < 0 && o->seq < 0) o->fwd_op = op_by_weight_storage(t, o, weight_op);
        if (o->fwd_op >= 0 && t->ops[o->fwd_op].layer >= 0) {
            o->layer = t->ops[o->fwd_op].layer;
            continue;
        }
        if (o->seq >= 0 && mt_u64map_get(seq_layer, o->seq, &l)) o->layer = (int32_t)l;
    }
}

static mt_status assign_layers(trace_builder *b, const builder_layer_hint *hints) {
    mt_trace *t = b->t;
    mt_u64map seq_layer, weight_op;
    mt_u64map_init(&seq_layer);
    mt_u64map_init(&weight_op);
    mt_status rc = forward_layers(b, hints, &seq_layer);
    if (rc == MT_OK) rc = index_weights(t, &weight_op);
    if (rc == MT_OK) backward_layers(t, &seq_layer, &weight_op);
    mt_u64map_destroy(&seq_layer);
    mt_u64map_destroy(&weight_op);
    return rc;
}

/* Sums over the ops: the layers' op counts and times, the phases' times, communication, the step's end. */
static void op_totals(mt_trace *t) {
    for (int32_t l = 0; l < t->n_layers; l++) {
        t->layers[l].n_ops = 0;
        memset(t->layers[l].dev_ns, 0, sizeof t->layers[l].dev_ns);
    }
    memset(t->phase_ns, 0, sizeof t->phase_ns);
    t->comm_ns = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->layer >= 0) {
            t->layers[o->layer].n_ops++;
            t->layers[o->layer].dev_ns[o->phase] += o->dev_ns;
        }
        if (o->dev_end_ns > t->step_end_ns) t->step_end_ns = o->dev_end_ns;
        t->phase_ns[o->phase] += o->dev_ns;
        t->comm_ns += o->comm_dev_ns;
    }
}

/* device_times with its scratch; MT_ENOMEM (message set) when it cannot have it. */
static mt_status device_times_alloc(mt_trace *t, mt_error *err) {
    int64_t need = t->n_kernels > 0 ? t->n_kernels : 1;
    int64_t *scratch = malloc((size_t)need * 2 * sizeof *scratch);
    if (!scratch) return mt_fail(err, MT_ENOMEM, "out of memory totalling the trace's device times");
    device_times(t, scratch);
    free(scratch);
    return MT_OK;
}

mt_status mt_tb_finish(trace_builder *b, const builder_layer_hint *hints, mt_error *err) {
    mt_trace *t = b->t;
    MT_CHECK(device_times_alloc(t, err));
    assign_roles(t);
    infer_batch(t);
    if (assign_layers(b, hints) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "out of memory assigning layers");
    op_totals(t);
    return MT_OK;
}

mt_status mt_tb_retotal(mt_trace *t, mt_error *err) {
    MT_CHECK(device_times_alloc(t, err));
    tensor_totals(t);
    op_totals(t);
    return MT_OK;
}

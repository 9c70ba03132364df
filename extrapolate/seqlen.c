/* extrapolate/seqlen.c — see seqlen.h. */
#include "extrapolate/seqlen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/build.h"
#include "perfmodel/work.h"
#include "tracer/builder.h"

static const char *trace_path(const mt_trace *t) {
    return t->kineto_path ? t->kineto_path : t->et_path ? t->et_path : "the trace";
}

/* A width of the model's weights equal to v: a weight's last dimension, or any dimension of the
 * weight of a linear (its in and out features). O(ops + trefs). */
static int weight_width(const mt_trace *t, int64_t v) {
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        for (int32_t q = 0; q < o->in_count; q++) {
            const trace_tref *r = &t->trefs[o->in_first + q];
            if (mt_bld_tensor_role(t, r) != TRACE_ROLE_WEIGHT || r->ndim < 1) continue;
            const int64_t *d = t->dims + r->shape_off;
            if (d[r->ndim - 1] == v) return 1;
            for (int32_t k = 0; o->tp == TRACE_TP_LINEAR && k < r->ndim; k++)
                if (d[k] == v) return 1;
        }
    }
    return 0;
}

/* The cores' sequence, head dim, heads and KV heads (the first core's), checked to agree. */
static mt_status read_cores(const mt_trace *t, mt_seqinfo *si, int64_t *heads, int64_t *kv_heads, mt_error *err) {
    int32_t first = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        int k = mt_bld_attn_core(t, o);
        if (!k) continue;
        const int64_t *q = mt_bld_act4(t, o, 0), *kv = o->in_count > 1 ? mt_bld_act4(t, o, 1) : NULL;
        if (first >= 0 && q[2] != si->traced)
            return mt_fail(err, MT_EINVAL, "--seq: %s's attention ops disagree on the sequence length (%lld at op %d "
                           "%s, %lld at op %d %s), so the traced one cannot be read", trace_path(t),
                           (long long)si->traced, (int)first, t->ops[first].name, (long long)q[2], (int)i, o->name);
        if (first < 0) {
            first = i;
            si->traced = q[2];
            si->core_op = o->name;
            *heads = q[1];
            *kv_heads = kv ? kv[1] : q[1];
        }
        si->cores++;
        if (k == 2) si->eager = 1;
        /* eager: the scores' left operand is q [.., s, d]; the context's is the scores [.., s, s] and
         * its right one v [.., s, d] */
        int64_t d = k == 1 || q[3] != q[2] ? q[3] : kv ? kv[3] : 0;
        if (d > 0 && (si->head_dim == 0 || d != q[2])) si->head_dim = d;
    }
    if (first < 0)
        return mt_fail(err, MT_EINVAL, "--seq: %s has no attention that mitosis recognises (scaled_dot_product_attention, "
                       "flash or cuDNN attention, or eager attention's matmuls of [batch, heads, sequence, head_dim] "
                       "activations), so it has no sequence length to change", trace_path(t));
    return MT_OK;
}

mt_status mt_seq_find(const mt_trace *t, mt_seqinfo *si, mt_error *err) {
    memset(si, 0, sizeof *si);
    int64_t heads = 0, kv_heads = 0;
    MT_CHECK(read_cores(t, si, &heads, &kv_heads, err));
    int64_t s = si->traced;
    const char *path = trace_path(t);
    if (s < 2)
        return mt_fail(err, MT_EINVAL, "--seq: %s's attention (op %s) runs on sequences of %lld token, which have no "
                       "sequence dimension to scale", path, si->core_op, (long long)s);
    const struct {
        const char *what;
        int64_t v;
    } dims[] = {{"head dim", si->head_dim}, {"heads", heads}, {"KV heads", kv_heads}, {"batch", t->batch_size}};
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++)
        if (dims[k].v == s)
            return mt_fail(err, MT_EINVAL, "--seq: %s's sequence length %lld equals its %s, so which dimensions are the "
                           "sequence cannot be told apart; record the trace at another sequence length", path,
                           (long long)s, dims[k].what);
    si->positional = weight_width(t, s);
    if (si->positional && si->eager)
        return mt_fail(err, MT_EINVAL, "--seq: %s's sequence length %lld equals a width of its weights and its attention "
                       "is eager (scores [.., %lld, %lld] look like [.., tokens, width]), so which dimensions are the "
                       "sequence cannot be told apart; record the trace at another sequence length", path,
                       (long long)s, (long long)s, (long long)s);
    return MT_OK;
}

/* ---- the rewrite ---------------------------------------------------------------------------- */

/* Dimension k of a tensor use of shape d[0..nd) at sequence n (see seqlen.h). */
static int64_t new_dim(const mt_seqinfo *si, int64_t B, const int64_t *d, int32_t nd, int32_t k) {
    int64_t s = si->traced, n = si->asked, v = d[k];
    int last = k == nd - 1 && nd >= 2;
    if (last && si->positional && !(nd == 2 && (d[0] == B || d[0] == 1) && d[0] != s)) return v;
    if (v == s) return n;
    if (k == 0 && B > 1 && v == B * s) return B * n;
    if (s > 2 && v == s - 1 && !last) return n - 1;
    if (k == 0 && B > 1 && s > 2 && v == B * (s - 1)) return B * (n - 1);
    return v;
}

static int scales(int role) { return role != TRACE_ROLE_WEIGHT && role != TRACE_ROLE_GRADIENT && role != TRACE_ROLE_OPTSTATE; }

/* Tensor use u's dimensions rewritten into o; its element factor into f[u's tensor] (whole: the
 * use's shape holds all the tensor's elements; a factor of a whole use is kept over another). */
static void rewrite_use(const mt_trace *t, mt_trace *o, const mt_seqinfo *si, const trace_tref *u, double *f) {
    if (!scales(mt_bld_tensor_role(t, u))) return;
    const int64_t *d = t->dims + u->shape_off;
    double before = 1, after = 1;
    for (int32_t k = 0; k < u->ndim; k++) {
        int64_t v = new_dim(si, t->batch_size, d, u->ndim, k);
        o->dims[u->shape_off + k] = v;
        before *= (double)d[k], after *= (double)v;
    }
    if (u->tensor < 0 || before <= 0) return;
    int whole = before == (double)t->tensors[u->tensor].numel;
    if (f[u->tensor] == 0 || (whole && f[u->tensor] < 0)) f[u->tensor] = whole ? after / before : -after / before;
}

/* Every tensor use's dimensions in o (t's copy) rewritten but the optimizer's (parameter-sized);
 * per tensor the factor of its elements into f (1: no rewritten use). */
static void rewrite_dims(const mt_trace *t, mt_trace *o, const mt_seqinfo *si, double *f) {
    for (int32_t x = 0; x < t->n_tensors; x++) f[x] = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *op = &t->ops[i];
        if (op->phase == TRACE_PHASE_OPTIMIZER) continue;
        for (int32_t q = 0; q < op->in_count; q++) rewrite_use(t, o, si, &t->trefs[op->in_first + q], f);
        for (int32_t q = 0; q < op->out_count; q++) rewrite_use(t, o, si, &t->trefs[op->out_first + q], f);
    }
    for (int32_t x = 0; x < t->n_tensors; x++) {
        double g = fabs(f[x]);
        f[x] = g > 0 ? g : 1;
        trace_tensor *y = &o->tensors[x];
        y->numel = (int64_t)llround((double)y->numel * f[x]);
        y->bytes *= f[x];
    }
}

/* The element factor of tensor use u (t traced, o rewritten); *bytes its traced bytes. */
static double use_factor(const mt_trace *t, const mt_trace *o, const trace_tref *u, double *bytes) {
    double before = 1, after = 1;
    for (int32_t k = 0; k < u->ndim; k++) before *= (double)t->dims[u->shape_off + k], after *= (double)o->dims[u->shape_off + k];
    int32_t item = u->tensor >= 0 && t->tensors[u->tensor].itemsize > 0 ? t->tensors[u->tensor].itemsize : 4;
    *bytes = before * item;
    return before > 0 ? after / before : 1;
}

/* A saved storage's factor, from op's tensor uses: one of its storage holding the saved bytes,
 * else one holding those bytes (a nested op's copy of an input, which no use names), else one of
 * its storage, else (first_in) op's first input (a nested op's statistics: layer_norm's mean and
 * rstd per token); 0 none. O(uses of op). */
static double saved_factor(const mt_trace *t, const mt_trace *o, int32_t op, const trace_saved *v, int first_in) {
    if (op < 0 || op >= t->n_ops) return 0;
    const trace_op *p = &t->ops[op];
    double best[4] = {0, 0, 0, 0};
    for (int32_t q = 0; q < p->in_count + p->out_count; q++) {
        const trace_tref *u = &t->trefs[q < p->in_count ? p->in_first + q : p->out_first + q - p->in_count];
        double bytes, f = use_factor(t, o, u, &bytes);
        int same = u->tensor >= 0 && t->tensors[u->tensor].storage_id == v->storage_id, fits = bytes == v->bytes;
        int rank = same && fits ? 0 : fits ? 1 : same ? 2 : q == 0 ? 3 : -1;
        if (rank >= 0 && best[rank] == 0) best[rank] = f;
    }
    for (int k = 0; k < (first_in ? 4 : 3); k++)
        if (best[k] > 0) return best[k];
    return 0;
}

/* Saved activations (from the op that made them) and backward temporaries (that op's, else its
 * forward op's uses; a first input only when neither names the storage or its bytes: NllLoss's
 * backward reads the scalar loss gradient first, its [tokens, vocabulary] result is the forward's). */
static void rescale_saved(const mt_trace *t, mt_trace *o) {
    for (int pass = 0; pass < 2; pass++) {
        trace_saved *v = pass ? o->bwd_temps : o->saved;
        int32_t n = pass ? o->n_bwd_temps : o->n_saved;
        for (int32_t e = 0; e < n; e++) {
            int32_t fwd = v[e].op >= 0 && v[e].op < t->n_ops ? t->ops[v[e].op].fwd_op : -1;
            double f = saved_factor(t, o, v[e].op, &v[e], 0);
            if (f == 0) f = saved_factor(t, o, fwd, &v[e], 0);
            if (f == 0) f = saved_factor(t, o, v[e].op, &v[e], 1);
            if (f == 0) f = saved_factor(t, o, fwd, &v[e], 1);
            if (f > 0) v[e].bytes *= f;
        }
    }
}

static int compute_class(mt_opclass c) {
    return c == MT_OPC_CONV || c == MT_OPC_CONV_BWD || c == MT_OPC_MATMUL || c == MT_OPC_MATMUL_BWD ||
           c == MT_OPC_ATTN || c == MT_OPC_ATTN_BWD;
}

/* Op i's work at n over its work at s (t traced, o rewritten). */
static double op_ratio(const mt_trace *t, const mt_trace *o, int32_t i, const mt_seqinfo *si) {
    const trace_op *op = &t->ops[i];
    if (op->cls == MT_OPC_NONE) return 1;
    mt_work w0, w1;
    mt_work_of_trace_op(t, i, &w0);
    if (!w0.has_shapes) return op->batch_dep ? (double)si->asked / (double)si->traced : 1;
    mt_work_of_trace_op(o, i, &w1);
    if (compute_class(op->cls) && w0.flops > 0) return w1.flops / w0.flops;
    if (mt_work_bytes(&w0) > 0) return mt_work_bytes(&w1) / mt_work_bytes(&w0);
    return w0.flops > 0 ? w1.flops / w0.flops : 1;
}

static int64_t times(int64_t ns, double r) { return (int64_t)llround((double)ns * r); }

/* Op times: a GPU trace's kernels inside their op, a CPU trace's op and everything after it
 * (shift[i]: how far op i's start moved; shift[n_ops]: the step's end). */
static void retime(const mt_trace *t, mt_trace *o, const double *ratio, int64_t *shift) {
    int64_t moved = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *s = &t->ops[i];
        trace_op *d = &o->ops[i];
        double r = ratio[i];
        shift[i] = moved;
        d->comm_bytes = s->comm_bytes * r;
        if (t->has_device_time) {
            for (int32_t q = s->kernel_first; q < s->kernel_first + s->kernel_count; q++) {
                trace_kernel *k = &o->kernels[q];
                k->start_ns = s->dev_start_ns + times(k->start_ns - s->dev_start_ns, r);
                k->dur_ns = times(k->dur_ns, r);
            }
            continue;
        }
        d->cpu_start_ns += moved;
        d->cpu_dur_ns = times(s->cpu_dur_ns, r);
        moved += d->cpu_dur_ns - s->cpu_dur_ns;
    }
    shift[t->n_ops] = moved;
    for (int32_t e = 0; e < o->n_syncs; e++)
        if (o->syncs[e].op >= 0) o->syncs[e].ts_ns += shift[o->syncs[e].op];
    for (int32_t e = 0; e < o->n_waits; e++) {
        trace_wait *w = &o->waits[e];
        if (w->op >= 0) w->ts_ns += shift[w->op];
        if (w->rec_op >= 0) w->rec_ns += shift[w->rec_op];
    }
    for (int32_t e = 0; e < o->n_colls; e++) {
        trace_coll *c = &o->colls[e];
        if (c->op < 0) continue;
        c->ts_ns += shift[c->op];
        c->bytes *= ratio[c->op];
        if (!t->has_device_time) c->dur_ns = times(c->dur_ns, ratio[c->op]);
    }
    o->host_end_ns += moved, o->step_end_ns += moved;
}

mt_status mt_seq_rescale(const mt_trace *t, int64_t n, mt_trace **out, mt_seqinfo *si, mt_error *err) {
    MT_CHECK(mt_seq_find(t, si, err));
    if (n < 2 || n > MT_SEQ_MAX)
        return mt_fail(err, MT_EINVAL, "--seq needs a sequence length from 2 to %lld (got %lld; the trace's is %lld)",
                       (long long)MT_SEQ_MAX, (long long)n, (long long)si->traced);
    si->asked = n;
    mt_trace *o = NULL;
    double *f = malloc(((size_t)t->n_tensors + 1) * sizeof *f);
    double *ratio = malloc(((size_t)t->n_ops + 1) * sizeof *ratio);
    int64_t *shift = malloc(((size_t)t->n_ops + 1) * sizeof *shift);
    mt_status rc = f && ratio && shift ? mt_trace_clone(t, &o) : MT_ENOMEM;
    if (rc == MT_OK) {
        rewrite_dims(t, o, si, f);
        rescale_saved(t, o);
        for (int32_t i = 0; i < t->n_ops; i++) ratio[i] = op_ratio(t, o, i, si);
        retime(t, o, ratio, shift);
        rc = mt_tb_retotal(o, err) == MT_OK ? MT_OK : MT_ENOMEM;
    }
    free(f), free(ratio), free(shift);
    if (rc == MT_OK) {
        *out = o;
        return MT_OK;
    }
    mt_trace_free(o);
    return mt_fail(err, MT_ENOMEM, "--seq %lld: out of memory rewriting %s", (long long)n, trace_path(t));
}

/* perfmodel/work.c — FLOPs/bytes from shapes (see work.h for the formulas). An op's class comes
 * from the operator classifier (tracer/opclass.h): a trace op's own cls, mt_opclass_of for others.
 */
#include "perfmodel/work.h"

#include <string.h>

/* ---- work ------------------------------------------------------------------------------- */

static double numel(const mt_tshape *s) {
    if (s->ndim <= 0) return s->numel;
    double n = 1;
    for (int32_t i = 0; i < s->ndim; i++) n *= (double)(s->dims[i] > 0 ? s->dims[i] : 0);
    return n;
}

static double tbytes(const mt_tshape *s) { return numel(s) * (s->itemsize > 0 ? s->itemsize : 4); }

static int is_fixed(const mt_tshape *s) {
    return s->role == TRACE_ROLE_WEIGHT || s->role == TRACE_ROLE_GRADIENT ||
           s->role == TRACE_ROLE_OPTSTATE || (s->ndim == 0 && s->numel <= 1);
}

static int64_t dim(const mt_tshape *s, int i) { /* negative i counts from the end */
    if (i < 0) i += s->ndim;
    return i >= 0 && i < s->ndim ? s->dims[i] : 0;
}

/* Sum the bytes of all tensors into act/fixed. */
static void sum_bytes(const mt_opdesc *d, mt_work *w) {
    for (int pass = 0; pass < 2; pass++) {
        const mt_tshape *v = pass ? d->out : d->in;
        int32_t n = pass ? d->n_out : d->n_in;
        for (int32_t i = 0; i < n; i++) {
            if (is_fixed(&v[i])) w->bytes_fixed += tbytes(&v[i]);
            else w->bytes_act += tbytes(&v[i]);
        }
    }
    w->bytes_act += d->extra_bytes_act;
    w->bytes_fixed += d->extra_bytes_fixed;
}

static double max_numel(const mt_opdesc *d) {
    double m = 0;
    for (int32_t i = 0; i < d->n_in; i++) if (numel(&d->in[i]) > m) m = numel(&d->in[i]);
    for (int32_t i = 0; i < d->n_out; i++) if (numel(&d->out[i]) > m) m = numel(&d->out[i]);
    return m;
}

/* any tensor use seen (a scalar tensor counts: its shape is known to be []) */
static int has_shapes(const mt_opdesc *d) {
    return d->n_in + d->n_out > 0 || d->extra_bytes_act + d->extra_bytes_fixed > 0;
}

/* Data type of the op's arithmetic; the unit it runs on is chosen per GPU (mathunit.h). */
static mt_dtype dtype_of(const mt_tshape *s) {
    const char *d = s ? s->dtype : NULL;
    int isz = s ? s->itemsize : 4;
    if (d && (strstr(d, "BFloat16") || strstr(d, "bfloat16"))) return MT_DT_BF16;
    if (d && (strstr(d, "Half") || strstr(d, "half") || strstr(d, "float16"))) return MT_DT_FP16;
    if (d && strstr(d, "Float8")) return MT_DT_FP8;
    if (d && (strstr(d, "double") || strstr(d, "Double"))) return MT_DT_FP64;
    if (!d && isz == 2) return MT_DT_FP16;
    if (!d && isz == 8) return MT_DT_FP64;
    if (!d && isz == 1) return MT_DT_FP8;
    return MT_DT_FP32;
}

static int name_has(const mt_opdesc *d, const char *needle) {
    return (d->name && strstr(d->name, needle)) || (d->kind && strstr(d->kind, needle));
}

/* conv FLOPs from x (input), wt (weight), y (output or NULL) */
static double conv_flops(const mt_tshape *x, const mt_tshape *wt, const mt_tshape *y,
                         int transposed, int bias) {
    if (!x || !wt || wt->ndim < 3 || x->ndim < 3 || dim(wt, 0) <= 0 || dim(x, 1) <= 0) return 0;
    double per_out = numel(wt) / (double)dim(wt, 0);
    double nout = y && y->ndim >= 3 ? numel(y) : numel(x) / (double)dim(x, 1) * (double)dim(wt, 0);
    if (transposed) return 2.0 * numel(x) * per_out + (bias ? nout : 0);
    return 2.0 * nout * per_out + (bias ? nout : 0);
}

static double matmul_flops(const mt_opdesc *d) {
    int shifted = name_has(d, "addmm") || name_has(d, "baddbmm") || name_has(d, "addbmm") ||
                  name_has(d, "addmv");
    int ia = shifted ? 1 : 0, ib = ia + 1;
    if (d->n_in <= ia) return 0;
    const mt_tshape *a = &d->in[ia];
    const mt_tshape *b = d->n_in > ib ? &d->in[ib] : NULL;
    int64_t k = dim(a, -1);
    if (a->ndim < 1 || k <= 0) return 0;
    int linear = name_has(d, "linear");
    double nout;
    if (d->n_out >= 1 && d->out[0].ndim >= 1) nout = numel(&d->out[0]);
    else if (!b) return 0;
    else {
        int64_t n = linear ? dim(b, 0) : (b->ndim >= 2 ? dim(b, -1) : 1);
        nout = numel(a) / (double)k * (double)(n > 0 ? n : 1);
    }
    if (a->ndim == 1 && b && b->ndim == 1) nout = 1; /* dot */
    double f = 2.0 * nout * (double)k;
    if ((linear && d->n_in >= 3) || shifted) f += nout;
    return f;
}

static double attn_flops(const mt_opdesc *d, int first) {
    if (d->n_in < first + 3) return 0;
    const mt_tshape *q = &d->in[first], *k = &d->in[first + 1], *v = &d->in[first + 2];
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2) return 0;
    double lq = (double)dim(q, -2), dd = (double)dim(q, -1), lk = (double)dim(k, -2),
           dv = (double)dim(v, -1);
    if (lq <= 0 || dd <= 0) return 0;
    double bh = numel(q) / (lq * dd);
    return 2.0 * bh * lq * lk * (dd + dv);
}

/* Forward formula of class c applied to d's tensors. */
static void fwd_formula(mt_opclass c, const mt_opdesc *d, mt_work *w) {
    sum_bytes(d, w);
    const mt_tshape *in0 = d->n_in > 0 ? &d->in[0] : NULL;
    switch (c) {
    case MT_OPC_CONV:
        w->flops = conv_flops(in0, d->n_in > 1 ? &d->in[1] : NULL, d->n_out > 0 ? &d->out[0] : NULL,
                              name_has(d, "transpose"), d->n_in > 2 && d->in[2].ndim == 1);
        break;
    case MT_OPC_MATMUL: w->flops = matmul_flops(d); break;
    case MT_OPC_ATTN: w->flops = attn_flops(d, 0); break;
    case MT_OPC_NORM:
    case MT_OPC_SOFTMAX: w->flops = in0 ? 5.0 * numel(in0) : 0; break;
    case MT_OPC_LOSS: w->flops = in0 ? 4.0 * numel(in0) : 0; break;
    case MT_OPC_POOL: w->flops = in0 ? numel(in0) : 0; break;
    case MT_OPC_EMBEDDING: {
        /* aten::embedding(weight, indices): reads one row per index, writes the output */
        w->bytes_act = w->bytes_fixed = 0;
        if (d->n_in >= 2) {
            const mt_tshape *wt = &d->in[0], *idx = &d->in[1];
            double row = (double)dim(wt, -1) * (wt->itemsize > 0 ? wt->itemsize : 4);
            double outb = d->n_out > 0 && d->out[0].ndim > 0 ? tbytes(&d->out[0]) : numel(idx) * row;
            w->bytes_act = tbytes(idx) + 2.0 * outb;
        } else {
            sum_bytes(d, w);
        }
        break;
    }
    case MT_OPC_OPTIMIZER:
        w->flops = (w->bytes_act + w->bytes_fixed) / 8.0;
        break;
    case MT_OPC_ELEMWISE: w->flops = max_numel(d); break;
    default: break; /* copy, unknown, none, comm: bytes only */
    }
}

/* Backward work of class c derived from the forward op fd. */
static void bwd_from_fwd(mt_opclass c, const mt_opdesc *fd, mt_work *w) {
    mt_opclass fc = mt_opclass_forward_of(c);
    mt_work f = {0};
    fwd_formula(fc, fd, &f);
    double k_flops = 1, k_bytes = 1.5;
    switch (c) {
    case MT_OPC_CONV_BWD:
    case MT_OPC_MATMUL_BWD: {
        /* input and weight gradients; the model input needs no gradient */
        int ia = (c == MT_OPC_MATMUL_BWD && (name_has(fd, "addmm") || name_has(fd, "baddbmm"))) ? 1 : 0;
        int no_dgrad = fd->n_in > ia && fd->in[ia].role == TRACE_ROLE_INPUT;
        k_flops = no_dgrad ? 1 : 2;
        k_bytes = 2;
        break;
    }
    case MT_OPC_ATTN_BWD: k_flops = 2.5; k_bytes = 2; break;
    case MT_OPC_NORM_BWD: k_flops = 2; k_bytes = 2; break;
    case MT_OPC_POOL_BWD: k_bytes = 2; break;
    case MT_OPC_LOSS_BWD: k_bytes = 2; break;
    case MT_OPC_SOFTMAX_BWD: k_flops = 0.6; break;
    case MT_OPC_EMBEDDING_BWD: {
        /* dense gradient: zero the weight-sized gradient, add one row per index */
        w->flops = 0;
        w->bytes_act = f.bytes_act / 2.0;
        w->bytes_fixed = fd->n_in > 0 ? 2.0 * tbytes(&fd->in[0]) : 0;
        w->dtype = dtype_of(fd->n_in > 0 ? &fd->in[0] : NULL);
        return;
    }
    default: break;
    }
    w->flops = f.flops * k_flops;
    w->bytes_act = f.bytes_act * k_bytes;
    w->bytes_fixed = f.bytes_fixed * k_bytes;
    int ia = (c == MT_OPC_MATMUL_BWD && (name_has(fd, "addmm") || name_has(fd, "baddbmm"))) ? 1 : 0;
    w->dtype = dtype_of(fd->n_in > ia ? &fd->in[ia] : NULL);
}

/* Backward work from the op's own tensors (aten::*_backward kinds, TrioSim CSV rows). */
static void bwd_own(mt_opclass c, const mt_opdesc *d, mt_work *w) {
    sum_bytes(d, w);
    int only_grad = d->n_in + d->n_out <= 1;
    switch (c) {
    case MT_OPC_CONV_BWD:
        /* (grad_output, input, weight) as aten::convolution_backward takes them */
        if (d->n_in >= 3 && d->in[2].ndim >= 3) {
            double f = conv_flops(&d->in[1], &d->in[2], &d->in[0], name_has(d, "ranspose"), 0);
            int no_dgrad = d->in[1].role == TRACE_ROLE_INPUT ||
                           (d->n_out >= 1 && numel(&d->out[0]) == 0);
            w->flops = f * (no_dgrad ? 1 : 2);
            only_grad = 0;
        }
        break;
    case MT_OPC_ATTN_BWD: w->flops = 2.5 * attn_flops(d, 1); break;
    case MT_OPC_NORM_BWD: w->flops = d->n_in ? 8.0 * numel(&d->in[0]) : 0; break;
    case MT_OPC_SOFTMAX_BWD: w->flops = d->n_in ? 3.0 * numel(&d->in[0]) : 0; break;
    default: w->flops = mt_opclass_is_compute(c) ? 0 : max_numel(d); break;
    }
    if (only_grad) { /* read the gradient and a saved tensor, write the input gradient */
        w->bytes_act *= 3;
        w->bytes_fixed *= 3;
    }
    w->dtype = dtype_of(d->n_in > 1 ? &d->in[1] : d->n_in ? &d->in[0] : NULL);
}

/* Work of d as an op of class cls. */
static void work_as(const mt_opdesc *d, mt_opclass cls, mt_work *w) {
    memset(w, 0, sizeof *w);
    w->cls = cls;
    w->dtype = MT_DT_FP32;
    if (mt_opclass_is_backward(w->cls)) {
        if (d->fwd && has_shapes(d->fwd)) {
            bwd_from_fwd(w->cls, d->fwd, w);
            w->from_fwd = 1;
            w->has_shapes = 1;
            if (w->flops > 0 || mt_work_bytes(w) > 0) return;
            memset(w, 0, sizeof *w);
            w->cls = cls;
        }
        bwd_own(w->cls, d, w);
        w->has_shapes = has_shapes(d);
        return;
    }
    fwd_formula(w->cls, d, w);
    int ia = (w->cls == MT_OPC_MATMUL && (name_has(d, "addmm") || name_has(d, "baddbmm"))) ? 1 : 0;
    w->dtype = dtype_of(d->n_in > ia ? &d->in[ia] : d->n_out ? &d->out[0] : NULL);
    w->has_shapes = has_shapes(d);
}

void mt_work_of(const mt_opdesc *d, mt_work *w) {
    work_as(d, mt_opclass_of(d->name, d->kind, d->phase, d->comm), w);
}

/* ---- from a trace ----------------------------------------------------------------------- */

static void fill_side(const mt_trace *t, const trace_tref *r, int32_t n, mt_tshape *v, int32_t *kept,
                      double *extra_act, double *extra_fixed) {
    *kept = 0;
    for (int32_t i = 0; i < n; i++) {
        const trace_tensor *x = &t->tensors[r[i].tensor];
        mt_tshape s = {t->dims + r[i].shape_off, r[i].ndim, x->itemsize, (double)x->numel,
                       x->role, x->dtype};
        if (*kept < MT_OPDESC_MAXT) {
            v[(*kept)++] = s;
        } else if (is_fixed(&s)) {
            *extra_fixed += tbytes(&s);
        } else {
            *extra_act += tbytes(&s);
        }
    }
}

void mt_opdesc_from_trace(const mt_trace *t, int32_t op, mt_opdesc *d) {
    memset(d, 0, sizeof *d);
    const trace_op *o = &t->ops[op];
    d->name = o->name;
    d->kind = o->kind;
    d->phase = o->phase;
    d->comm = o->comm != TRACE_COMM_NONE;
    fill_side(t, trace_op_inputs(t, o), o->in_count, d->in, &d->n_in, &d->extra_bytes_act,
              &d->extra_bytes_fixed);
    fill_side(t, trace_op_outputs(t, o), o->out_count, d->out, &d->n_out, &d->extra_bytes_act,
              &d->extra_bytes_fixed);
}

void mt_work_of_trace_op(const mt_trace *t, int32_t op, mt_work *w) {
    mt_opdesc d, f;
    mt_opdesc_from_trace(t, op, &d);
    int32_t fo = t->ops[op].fwd_op;
    if (fo >= 0 && fo < t->n_ops && fo != op) {
        mt_opdesc_from_trace(t, fo, &f);
        d.fwd = &f;
    }
    work_as(&d, t->ops[op].cls, w);
}

mt_work mt_work_scale(const mt_work *w, int batch_dependent, double batch_factor, int32_t tp_split) {
    mt_work r = *w;
    double f = batch_dependent ? batch_factor : 1.0;
    double s = tp_split > 1 ? 1.0 / (double)tp_split : 1.0;
    r.flops = w->flops * f * s;
    r.bytes_act = w->bytes_act * f * s;
    r.bytes_fixed = w->bytes_fixed * s;
    return r;
}

/* extrapolate/tpsites.c — see tpsites.h. */
#include "extrapolate/tpsites.h"

#include <string.h>

static const trace_tref *input_of(const mt_trace *t, const trace_op *o, int weight) {
    for (int32_t j = 0; j < o->in_count; j++) {
        const trace_tref *r = &t->trefs[o->in_first + j];
        if (r->tensor < 0 || r->tensor >= t->n_tensors || r->ndim < 1) continue;
        if ((t->tensors[r->tensor].role == TRACE_ROLE_WEIGHT) == weight) return r;
    }
    return NULL;
}

static int64_t last_dim(const mt_trace *t, const trace_tref *r) { return r ? t->dims[r->shape_off + r->ndim - 1] : 0; }
static int64_t dim0(const mt_trace *t, const trace_tref *r) { return r ? t->dims[r->shape_off] : 0; }

static int fwd(const mt_trace *t, int32_t i) { return i >= 0 && i < t->n_ops && t->ops[i].phase == TRACE_PHASE_FORWARD; }

/* The aten op's name without "aten::" equals one of names[] (NULL-terminated). */
static int named(const mt_trace *t, int32_t i, const char *const *names) {
    const char *n = t->ops[i].name;
    if (!n || strncmp(n, "aten::", 6)) return 0;
    for (; *names; names++)
        if (!strcmp(n + 6, *names)) return 1;
    return 0;
}

/* A forward linear with a 2-D weight. */
static int linear(const mt_trace *t, int32_t i) {
    if (!fwd(t, i) || t->ops[i].tp != TRACE_TP_LINEAR) return 0;
    const trace_tref *w = input_of(t, &t->ops[i], 1);
    return w && w->ndim == 2 && input_of(t, &t->ops[i], 0);
}

static int64_t storage(const mt_trace *t, int32_t i) {
    const trace_tref *in = input_of(t, &t->ops[i], 0);
    if (!in) return -1;
    return t->tensors[in->tensor].storage_id > 0 ? t->tensors[in->tensor].storage_id : -2 - (int64_t)in->tensor;
}

/* The next forward linear after op i within 6 ops, -1. */
static int32_t next_linear(const mt_trace *t, int32_t i) {
    for (int32_t j = i + 1; j < t->n_ops && j <= i + 6; j++)
        if (linear(t, j)) return j;
    return -1;
}

static const char *const act_names[] = {"silu", "silu_", "gelu", "gelu_", "sigmoid", "sigmoid_", NULL};
static const char *const mul_names[] = {"mul", "mul_", NULL};
static const char *const rsqrt_names[] = {"rsqrt", "rsqrt_", NULL};
static const char *const rms_names[] = {"rms_norm", "_fused_rms_norm", NULL};
static const char *const ln_names[] = {"layer_norm", "native_layer_norm", NULL};
static const char *const neg_names[] = {"neg", NULL};
static const char *const cat_names[] = {"cat", NULL};
static const char *const complex_names[] = {"view_as_complex", NULL};

static const char *const split_names[] = {"split", "split_with_sizes", "chunk", "unbind", "view", "reshape",
                                          "_reshape_alias", "unflatten", NULL};

/* The output of op i is split or reshaped by the next forward op (q, k and v taken apart). */
static int split_next(const mt_trace *t, int32_t i) {
    for (int32_t j = i + 1; j < t->n_ops && j <= i + 2; j++)
        if (fwd(t, j)) return named(t, j, split_names);
    return 0;
}

static int activation_near(const mt_trace *t, int32_t a, int32_t b) {
    for (int32_t j = a + 1; j <= b + 2 && j < t->n_ops; j++)
        if (j != b && fwd(t, j) && named(t, j, act_names)) return 1;
    return 0;
}

void mt_tp_sites_find(const mt_trace *t, mt_tp_sites *s) {
    memset(s, 0, sizeof *s);
    s->gqa_op = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        if (!fwd(t, i)) continue;
        if (linear(t, i)) {
            s->linears++;
            const trace_op *o = &t->ops[i];
            int64_t in_w = last_dim(t, input_of(t, o, 0)), out_w = dim0(t, input_of(t, o, 1));
            if (in_w > 0 && out_w == 3 * in_w && split_next(t, i)) s->fused_qkv++;
            int32_t b = next_linear(t, i), c = b >= 0 ? next_linear(t, b) : -1;
            int64_t st = storage(t, i);
            if (b >= 0 && storage(t, b) == st) {
                int64_t wb = dim0(t, input_of(t, &t->ops[b], 1));
                const trace_tref *x = input_of(t, o, 1), *y = input_of(t, &t->ops[b], 1);
                int same_shape = wb == out_w && last_dim(t, x) == last_dim(t, y);
                if (same_shape && activation_near(t, i, b)) {
                    s->swiglu++;
                    i = b; /* the pair counted once */
                    s->linears++;
                    continue;
                }
                if (c >= 0 && storage(t, c) == st && wb < out_w && dim0(t, input_of(t, &t->ops[c], 1)) == wb &&
                    out_w % wb == 0) {
                    if (!s->gqa++) {
                        s->gqa_q_width = out_w;
                        s->gqa_kv_width = wb;
                        s->gqa_op = b;
                    }
                }
            }
            continue;
        }
        if (named(t, i, rms_names)) s->rmsnorm++;
        if (named(t, i, ln_names)) s->layernorm++;
        if (named(t, i, complex_names)) s->rotary++;
        if (named(t, i, rsqrt_names))
            for (int32_t j = i + 1; j < t->n_ops && j <= i + 4; j++) {
                const trace_tref *w = fwd(t, j) && named(t, j, mul_names) ? input_of(t, &t->ops[j], 1) : NULL;
                if (w && w->ndim == 1) {
                    s->rmsnorm++;
                    break;
                }
            }
        if (named(t, i, neg_names))
            for (int32_t j = i + 1; j < t->n_ops && j <= i + 2; j++)
                if (fwd(t, j) && named(t, j, cat_names)) {
                    s->rotary++;
                    break;
                }
    }
}

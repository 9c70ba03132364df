/* tests/unit/txfix.h — a synthetic GPT built in memory, small enough to count by hand: a token
 * embedding (vocabulary V, hidden H) plus a position embedding (indices from aten::arange), L
 * pre-LayerNorm blocks (LN, Q/K/V linears on one input, scores matmul and softmax and context
 * matmul on [B, heads, S, H/heads], output linear, residual add, LN, fc1 to 4H, GELU, fc2,
 * residual add), a final LN, an LM head tied to the token embedding (the same weight tensor) and
 * aten::cross_entropy_loss on [B*S, V]. Every forward op has one backward op linked by fwd_op,
 * in reverse order, then one optimizer op over every weight. fp32; every op takes op_ns.
 * Layers: 0 the token embedding, 1 the positions (arange, position embedding, add), 2 + l block
 * l, L + 2 the final LN, head and loss. Names are literals (mt_trace_free does not free them).
 */
#ifndef MT_TESTS_TXFIX_H
#define MT_TESTS_TXFIX_H

#include <stdlib.h>
#include <string.h>

#include "tracer/opclass.h"
#include "tracer/trace.h"

typedef struct tx_shape {
    int64_t b, s, h, heads, vocab;
    int32_t blocks;
    int64_t op_ns;
} tx_shape;

typedef struct tx_build {
    mt_trace *t;
    int32_t fwd[512], n_fwd;
} tx_build;

static int32_t tx_tensor(mt_trace *t, trace_role role, int32_t nd, const int64_t *d) {
    trace_tensor *x = &t->tensors[t->n_tensors];
    memset(x, 0, sizeof *x);
    x->et_id = t->n_tensors + 1;
    x->numel = 1;
    for (int32_t k = 0; k < nd; k++) x->numel *= d[k];
    x->itemsize = 4;
    x->bytes = 4.0 * (double)x->numel;
    x->role = role;
    x->first_op = -1;
    if (role == TRACE_ROLE_WEIGHT) {
        t->param_bytes += x->bytes;
        t->param_count += x->numel;
    }
    return t->n_tensors++;
}

/* A use of tensor x by the op being built, with shape d[0..nd). */
static void tx_use(mt_trace *t, int32_t x, int32_t nd, const int64_t *d) {
    trace_tref *r = &t->trefs[t->n_trefs++];
    memset(r, 0, sizeof *r);
    r->tensor = x;
    r->ndim = nd;
    r->shape_off = t->n_dims;
    for (int32_t k = 0; k < nd; k++) t->dims[t->n_dims++] = d[k];
    if (t->tensors[x].first_op < 0) t->tensors[x].first_op = t->n_ops;
}

typedef struct tx_arg {
    int32_t x, nd;
    int64_t d[4];
} tx_arg;

/* A forward op reading ins[0..nin) and writing out (x -1: none). */
static int32_t tx_op(tx_build *tb, const char *name, int32_t layer, int64_t ns, const tx_arg *ins, int nin,
                     tx_arg out) {
    mt_trace *t = tb->t;
    trace_op *o = &t->ops[t->n_ops];
    memset(o, 0, sizeof *o);
    o->id = t->n_ops;
    o->name = o->kind = name;
    o->phase = TRACE_PHASE_FORWARD;
    o->layer = layer;
    o->dev_ns = ns;
    o->seq = -1;
    o->fwd_op = -1;
    o->et_node = -1;
    o->in_first = t->n_trefs;
    for (int k = 0; k < nin; k++) tx_use(t, ins[k].x, ins[k].nd, ins[k].d);
    o->in_count = nin;
    o->out_first = t->n_trefs;
    if (out.x >= 0) tx_use(t, out.x, out.nd, out.d);
    o->out_count = out.x >= 0;
    tb->fwd[tb->n_fwd++] = t->n_ops;
    return t->n_ops++;
}

#define TX3(x_, a, b_, c) ((tx_arg){(x_), 3, {(a), (b_), (c), 0}})
#define TX2(x_, a, b_) ((tx_arg){(x_), 2, {(a), (b_), 0, 0}})
#define TX1(x_, a) ((tx_arg){(x_), 1, {(a), 0, 0, 0}})
#define TX4(x_, a, b_, c, e) ((tx_arg){(x_), 4, {(a), (b_), (c), (e)}})

/* One pre-LN block on the residual stream *x (replaced by the block's output). */
static void tx_block(tx_build *tb, const tx_shape *sh, int32_t layer, int32_t *x) {
    mt_trace *t = tb->t;
    int64_t B = sh->b, S = sh->s, H = sh->h, nh = sh->heads, hd = H / nh, F = 4 * H, ns = sh->op_ns;
    int64_t bsh[3] = {B, S, H}, hh[2] = {H, H}, fh[2] = {F, H}, hf[2] = {H, F}, one[1] = {H}, att[4] = {B, nh, S, S},
            bsf[3] = {B, S, F};
    int32_t g1 = tx_tensor(t, TRACE_ROLE_WEIGHT, 1, one), h1 = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
    tx_op(tb, "aten::layer_norm", layer, ns, (tx_arg[]){TX3(*x, B, S, H), TX1(g1, H)}, 2, TX3(h1, B, S, H));
    int32_t qkv[3];
    for (int k = 0; k < 3; k++) {
        int32_t w = tx_tensor(t, TRACE_ROLE_WEIGHT, 2, hh);
        qkv[k] = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
        tx_op(tb, "aten::linear", layer, ns, (tx_arg[]){TX3(h1, B, S, H), TX2(w, H, H)}, 2, TX3(qkv[k], B, S, H));
    }
    int32_t sc = tx_tensor(t, TRACE_ROLE_ACTIVATION, 4, att), pr = tx_tensor(t, TRACE_ROLE_ACTIVATION, 4, att);
    int32_t ctx = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
    tx_op(tb, "aten::matmul", layer, ns, (tx_arg[]){TX4(qkv[0], B, nh, S, hd), TX4(qkv[1], B, nh, hd, S)}, 2,
          TX4(sc, B, nh, S, S));
    tx_op(tb, "aten::softmax", layer, ns, (tx_arg[]){TX4(sc, B, nh, S, S)}, 1, TX4(pr, B, nh, S, S));
    tx_op(tb, "aten::matmul", layer, ns, (tx_arg[]){TX4(pr, B, nh, S, S), TX4(qkv[2], B, nh, S, hd)}, 2,
          TX4(ctx, B, nh, S, hd));
    int32_t wo = tx_tensor(t, TRACE_ROLE_WEIGHT, 2, hh), ao = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
    tx_op(tb, "aten::linear", layer, ns, (tx_arg[]){TX3(ctx, B, S, H), TX2(wo, H, H)}, 2, TX3(ao, B, S, H));
    int32_t x1 = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
    tx_op(tb, "aten::add", layer, ns, (tx_arg[]){TX3(*x, B, S, H), TX3(ao, B, S, H)}, 2, TX3(x1, B, S, H));
    int32_t g2 = tx_tensor(t, TRACE_ROLE_WEIGHT, 1, one), h2 = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
    tx_op(tb, "aten::layer_norm", layer, ns, (tx_arg[]){TX3(x1, B, S, H), TX1(g2, H)}, 2, TX3(h2, B, S, H));
    int32_t w1 = tx_tensor(t, TRACE_ROLE_WEIGHT, 2, fh), f1 = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsf);
    tx_op(tb, "aten::linear", layer, ns, (tx_arg[]){TX3(h2, B, S, H), TX2(w1, F, H)}, 2, TX3(f1, B, S, F));
    int32_t ge = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsf);
    tx_op(tb, "aten::gelu", layer, ns, (tx_arg[]){TX3(f1, B, S, F)}, 1, TX3(ge, B, S, F));
    int32_t w2 = tx_tensor(t, TRACE_ROLE_WEIGHT, 2, hf), f2 = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
    tx_op(tb, "aten::linear", layer, ns, (tx_arg[]){TX3(ge, B, S, F), TX2(w2, H, F)}, 2, TX3(f2, B, S, H));
    int32_t x2 = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
    tx_op(tb, "aten::add", layer, ns, (tx_arg[]){TX3(x1, B, S, H), TX3(f2, B, S, H)}, 2, TX3(x2, B, S, H));
    *x = x2;
}

static mt_trace *tx_make(const tx_shape *sh) {
    mt_trace *t = calloc(1, sizeof *t);
    tx_build tb = {t, {0}, 0};
    int32_t L = sh->blocks;
    size_t nops = (size_t)(40 + 30 * L) * 2, nx = (size_t)(20 + 30 * L);
    t->ops = calloc(nops, sizeof *t->ops);
    t->tensors = calloc(nx, sizeof *t->tensors);
    t->trefs = calloc(nops * 4, sizeof *t->trefs);
    t->dims = calloc(nops * 16, sizeof *t->dims);
    t->n_layers = L + 3;
    t->layers = calloc((size_t)t->n_layers, sizeof *t->layers);
    for (int32_t l = 0; l < t->n_layers; l++) t->layers[l].name = "layer";
    t->batch_size = sh->b;
    t->format = TRACE_FORMAT_KINETO_ET;
    t->has_device_time = 1;
    int64_t B = sh->b, S = sh->s, H = sh->h, V = sh->vocab, ns = sh->op_ns;
    int64_t bs[2] = {B, S}, vh[2] = {V, H}, sh2[2] = {S, H}, s1[1] = {S}, bsh[3] = {B, S, H}, one[1] = {H},
            bsv[3] = {B, S, V}, n1[1] = {B * S};
    int32_t ids = tx_tensor(t, TRACE_ROLE_INPUT, 2, bs), wemb = tx_tensor(t, TRACE_ROLE_WEIGHT, 2, vh);
    int32_t xt = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
    tx_op(&tb, "aten::embedding", 0, ns, (tx_arg[]){TX2(wemb, V, H), TX2(ids, B, S)}, 2, TX3(xt, B, S, H));
    int32_t pos = tx_tensor(t, TRACE_ROLE_ACTIVATION, 1, s1), wpos = tx_tensor(t, TRACE_ROLE_WEIGHT, 2, sh2);
    int32_t xp = tx_tensor(t, TRACE_ROLE_ACTIVATION, 2, sh2), x = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
    tx_op(&tb, "aten::arange", 1, ns, NULL, 0, TX1(pos, S));
    tx_op(&tb, "aten::embedding", 1, ns, (tx_arg[]){TX2(wpos, S, H), TX1(pos, S)}, 2, TX2(xp, S, H));
    tx_op(&tb, "aten::add", 1, ns, (tx_arg[]){TX3(xt, B, S, H), TX2(xp, S, H)}, 2, TX3(x, B, S, H));
    for (int32_t l = 0; l < L; l++) tx_block(&tb, sh, 2 + l, &x);
    int32_t gf = tx_tensor(t, TRACE_ROLE_WEIGHT, 1, one), hf = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsh);
    tx_op(&tb, "aten::layer_norm", L + 2, ns, (tx_arg[]){TX3(x, B, S, H), TX1(gf, H)}, 2, TX3(hf, B, S, H));
    int32_t lg = tx_tensor(t, TRACE_ROLE_ACTIVATION, 3, bsv), lab = tx_tensor(t, TRACE_ROLE_INPUT, 1, n1);
    int32_t loss = tx_tensor(t, TRACE_ROLE_ACTIVATION, 0, NULL);
    tx_op(&tb, "aten::linear", L + 2, ns, (tx_arg[]){TX3(hf, B, S, H), TX2(wemb, V, H)}, 2, TX3(lg, B, S, V));
    tx_op(&tb, "aten::cross_entropy_loss", L + 2, ns, (tx_arg[]){TX2(lg, B * S, V), TX1(lab, B * S)}, 2,
          (tx_arg){loss, 0, {0}});
    for (int32_t k = tb.n_fwd - 1; k >= 0; k--) { /* backward: one op per forward op, reversed */
        const trace_op *f = &t->ops[tb.fwd[k]];
        trace_op *o = &t->ops[t->n_ops];
        memset(o, 0, sizeof *o);
        o->id = t->n_ops;
        o->name = o->kind = "autograd::engine::evaluate_function: MmBackward0";
        o->phase = TRACE_PHASE_BACKWARD;
        o->layer = f->layer;
        o->dev_ns = 2 * ns;
        o->seq = -1;
        o->et_node = -1;
        o->fwd_op = tb.fwd[k];
        o->in_first = o->out_first = t->n_trefs;
        if (f->out_count) {
            t->trefs[t->n_trefs++] = t->trefs[f->out_first];
            o->in_count = 1;
            o->out_first = t->n_trefs;
        }
        t->n_ops++;
    }
    mt_opclass_trace(t);
    return t;
}

#endif

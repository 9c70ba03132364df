/* extrapolate/pass_tp.c — the tensor-parallel pass: Megatron-style splits of a stage's ops over
 * the T ranks of its TP group, and the collectives those splits imply; with plan sp, Megatron's
 * sequence parallelism inside the same group.
 *
 * Prepare walks the forward ops once (O(ops)), marking split ops (b->split, b->tok) and attaching
 * collectives to ops (classify_tp, by the tp kind the tracer's classifier gave each op): a
 * column-parallel linear opens a region (Q, K, V on the same input stay in it), the next
 * row-parallel linear closes it with an all-reduce of its output (forward) and the region's input
 * gradient is all-reduced after the first column op's backward; a region reaching a vocabulary
 * loss (the LM head's) splits the loss by vocabulary with all-reduces of per-token statistics;
 * a region closed by anything else ends in an all-gather. Token embeddings split the vocabulary
 * (all-reduce forward), position embeddings stay replicated, convolutions split output channels
 * (all-gather forward, input-gradient all-reduce backward). With sp, each residual-stream
 * all-reduce is a reduce-scatter + all-gather pair and the ops between (norms, adds, dropout,
 * positions, HF's type_as casts) run on 1/T of the tokens; their weights' gradients are all-reduced
 * once after backward (tp_backward_done); an op outside a region that reads no sequence-split
 * activation (RoPE's frequencies) runs whole and leaves the stream split (reads_seq). T must divide every dimension a split divides (features, output
 * channels, attention heads, a grouped-query attention's key/value heads (tpsites.h), where the shapes
 * say), else the plan is refused naming the op and
 * the largest T that fits. Backward ops inherit their forward op's split (or their layer's
 * majority). Emission: each op's collectives after it, blocking, on the TP group.
 * Invariant: every collective is attached to exactly one op list (forward: after the op that
 * closes it; backward: after the anchor of the op that carries it, or counted unplaced).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/build.h"
#include "extrapolate/moe.h"
#include "extrapolate/tpsites.h"
#include "util/units.h"
#include "util/vec.h"

#define tensor_role mt_bld_tensor_role
#define tensor_bytes mt_bld_tensor_bytes

static int32_t first_activation_input(const mt_trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->in_count; j++) {
        const trace_tref *r = &t->trefs[o->in_first + j];
        int role = tensor_role(t, r);
        if (role == TRACE_ROLE_ACTIVATION || role == TRACE_ROLE_INPUT) return r->tensor;
    }
    return -1;
}


static double first_output_bytes(const mt_trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->out_count; j++) {
        double b = tensor_bytes(t, t->trefs[o->out_first + j].tensor);
        if (b > 0) return b;
    }
    /* No outputs recorded: an elementwise-sized guess from the first activation input. */
    return tensor_bytes(t, first_activation_input(t, o));
}


/* ---- what a tensor-parallel split divides ------------------------------------------------ */

/* The shape of an op's first input with `role` (-1: an activation or the model input), or of its
 * first output (out); *nd 0 when the trace records none. */
static const int64_t *op_shape(const mt_trace *t, const trace_op *o, int out, int role, int32_t *nd) {
    int32_t first = out ? o->out_first : o->in_first, n = out ? o->out_count : o->in_count;
    for (int32_t j = 0; j < n; j++) {
        const trace_tref *r = &t->trefs[first + j];
        int rr = tensor_role(t, r);
        if (r->ndim > 0 && (out || (role < 0 ? rr == TRACE_ROLE_ACTIVATION || rr == TRACE_ROLE_INPUT : rr == role))) {
            *nd = r->ndim;
            return t->dims + r->shape_off;
        }
    }
    *nd = 0;
    return NULL;
}

static int is_linear_kind(const trace_op *o) {
    return strstr(o->kind ? o->kind : o->name, "linear") != NULL;
}

/* The features a column-parallel (col 1: its outputs) or row-parallel (col 0: its inputs) linear
 * splits: the output's or the activation input's last dimension, else from the weight ([out, in]
 * for aten::linear, [in, out] for mm / addmm / matmul on a transposed weight); 0 unknown. */
static int64_t linear_features(const mt_trace *t, const trace_op *o, int col) {
    int32_t nd, nw;
    const int64_t *s = op_shape(t, o, col, -1, &nd), *w = op_shape(t, o, 0, TRACE_ROLE_WEIGHT, &nw);
    if (nd > 0) return s[nd - 1];
    if (nw != 2) return 0;
    return is_linear_kind(o) ? w[col ? 0 : 1] : w[col ? 1 : 0];
}

/* A convolution's output channels: its weight's first dimension ([out, in/groups, k...]), else
 * its output's second (N, C, ...); 0 unknown. */
static int64_t conv_channels(const mt_trace *t, const trace_op *o) {
    int32_t nw, nd;
    const int64_t *w = op_shape(t, o, 0, TRACE_ROLE_WEIGHT, &nw), *s = op_shape(t, o, 1, 0, &nd);
    if (nw >= 3 && !strstr(o->kind ? o->kind : o->name, "transpose")) return w[0];
    return nd >= 3 ? s[1] : 0;
}

/* Attention heads of an op split inside a column region: a matmul or attention on a 4-D
 * activation [batch, heads, sequence, head_dim]; 0 when not recognisable. */
static int64_t attention_heads(const mt_trace *t, const trace_op *o) {
    if (o->cls != MT_OPC_MATMUL && o->cls != MT_OPC_ATTN) return 0;
    int32_t nd;
    const int64_t *s = op_shape(t, o, 0, -1, &nd);
    return nd == 4 ? s[1] : 0;
}

/* Whether T ranks can split what the trace's split ops divide (tp_fit_note, tp_fit_check). */
typedef struct tp_fit {
    int64_t gcd;            /* of every divided dimension, 0 none */
    int32_t bad_op;         /* first op whose dimension T does not divide, -1 */
    int64_t bad_dim;
    const char *bad_what;   /* "output features", ... */
} tp_fit;

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

static void tp_fit_note(tp_fit *f, int32_t T, int32_t op, int64_t dim, const char *what) {
    if (dim <= 0) return;
    f->gcd = gcd64(f->gcd, dim);
    if (dim % T == 0 || f->bad_op >= 0) return;
    f->bad_op = op;
    f->bad_dim = dim;
    f->bad_what = what;
}

/* MT_EINVAL naming the first op T cannot split evenly and the largest T' <= T that fits. */
static mt_status tp_fit_check(const tp_fit *f, const mt_trace *t, int32_t T, mt_error *err) {
    if (f->bad_op < 0) return MT_OK;
    int32_t best = 1;
    for (int32_t d = T; d > 1 && best == 1; d--)
        if (f->gcd % d == 0) best = d;
    const trace_op *o = &t->ops[f->bad_op];
    const char *layer = o->layer >= 0 && o->layer < t->n_layers ? t->layers[o->layer].name : NULL;
    char fits[96];
    if (best > 1) snprintf(fits, sizeof fits, "the largest --tp up to %d that fits this model is %d", T, best);
    else snprintf(fits, sizeof fits, "no --tp above 1 fits this model (its split dimensions have no common divisor)");
    return mt_fail(err, MT_EINVAL, "--tp %d does not fit the model: op %d %s%s%s%s splits %lld %s, which %d ranks "
                   "cannot share evenly; %s", T, (int)f->bad_op, o->name, layer ? " (layer " : "", layer ? layer : "",
                   layer ? ")" : "", (long long)f->bad_dim, f->bad_what, T, fits);
}


typedef struct pcoll {      /* a collective attached after an op */
    int32_t op;             /* forward op (fwd list) or forward op whose backward carries it */
    mt_coll_op coll;
    double bytes;           /* at the traced batch; scaled by the batch factor when emitted */
    int32_t next;           /* next collective attached to the same op, -1 */
} pcoll;

typedef struct tp_state {
    int32_t *fwd_coll;      /* per op: first pcoll emitted after it in forward, -1 */
    int32_t *bwd_coll;      /* per op: first pcoll emitted after its last backward op, -1 */
    int32_t *bwd_anchor;    /* per backward op: first pcoll to emit after it, -1 */
    pcoll *colls;
    int64_t n_colls, cap_colls;
    tp_fit fit;             /* what the splits divide (classify_tp) */
    int64_t vocab[4];       /* the vocabulary embeddings' rows (at most 4 distinct) */
    int32_t n_vocab;
    int64_t padded_vocab;   /* a vocabulary-sized output layer T does not divide: padded, 0 none */
    int8_t *seq_w;          /* per tensor: a weight first read by a sequence-split op (sp) */
    int32_t seq_splits;     /* sp: reduce-scatters into a sequence split (0: sp has nothing to do) */
    int32_t *made_by;       /* sp, while classifying: per tensor its forward producer (mt_bld_producers) */
    uint8_t *seq_out;       /* sp, while classifying: per op, its output is split by sequence */
} tp_state;

static mt_status add_pcoll(tp_state *x, int32_t *head, int32_t op, mt_coll_op c, double bytes) {
    if (mt_vec_reserve(&x->colls, &x->cap_colls, x->n_colls + 1)) return MT_ENOMEM;
    pcoll *pc = &x->colls[x->n_colls];
    pc->op = op;
    pc->coll = c;
    pc->bytes = bytes;
    pc->next = -1;
    /* append at the tail so collectives run in the order they were attached */
    if (*head < 0) {
        *head = (int32_t)x->n_colls;
    } else {
        int32_t q = *head;
        while (x->colls[q].next >= 0) q = x->colls[q].next;
        x->colls[q].next = (int32_t)x->n_colls;
    }
    x->n_colls++;
    return MT_OK;
}

/* 3. tensor parallelism (Megatron). A walk over forward ops keeps a region: a column-parallel
 * linear opens it, linears on the same input join it (Q, K, V), ops inside are split, the next
 * linear on another input is row-parallel and closes it with a forward all-reduce of its output;
 * the region's input gradient is all-reduced after the first column op's backward. A region
 * that reaches a vocabulary loss (an LM head's logits) ends there: the loss is split by
 * vocabulary with its few all-reduces of per-token statistics (vocab_loss_stats). With
 * sequence parallelism (plan sp) each all-reduce of the residual stream becomes a
 * reduce-scatter, and the next column op (or any op that needs every token) all-gathers its
 * input first; between the two the stream is split by sequence (r->seq): the ops there
 * (norms, residual adds, dropout, position embeddings) run on 1/T of the tokens (tok[op] = T). */
typedef struct region {
    int open;
    int32_t in_tensor;      /* activation the column ops read */
    double in_bytes;
    int32_t first_col;      /* carries the backward all-reduce of the input gradient */
    int32_t last_op;        /* the all-gather goes after it when the region is closed */
    double last_out_bytes;
    int seq;                /* sp: the residual stream is split by sequence */
    int seq_in;             /* sp: the open region all-gathered its input from a sequence split, so
                             * its input gradient is reduce-scattered back (else all-reduced) */
    int32_t prev;           /* the previous forward op (-1): an sp all-gather goes after it */
} region;

/* A TP collective after forward op `op` (fwd 1) or after its backward (fwd 0), counted. */
static mt_status tp_add(mt_bld *b, tp_state *x, int fwd, int32_t op, mt_coll_op c, double bytes) {
    if (fwd) b->p->tp_colls_fwd++;
    else b->p->tp_colls_bwd++;
    return add_pcoll(x, fwd ? &x->fwd_coll[op] : &x->bwd_coll[op], op, c, bytes);
}

/* The residual stream's reduction after op (a row linear's or the vocabulary embedding's
 * output): an all-reduce, or with sp a reduce-scatter whose backward is an all-gather. */
static mt_status tp_reduce_out(mt_bld *b, tp_state *x, region *r, int32_t op, double bytes) {
    if (!b->plan->sp) return tp_add(b, x, 1, op, MT_COLL_ALLREDUCE, bytes);
    r->seq = 1;
    if (x->seq_out) x->seq_out[op] = 1;
    x->seq_splits++;
    MT_CHECK(tp_add(b, x, 1, op, MT_COLL_REDUCESCATTER, bytes));
    return tp_add(b, x, 0, op, MT_COLL_ALLGATHER, bytes);
}

/* sp: op needs every token of a sequence-split input: all-gather it first (after the previous
 * forward op of the same stage, else after op itself; the same time on the compute stream). */
static mt_status tp_gather_seq(mt_bld *b, tp_state *x, region *r, int32_t op, double bytes) {
    if (!r->seq) return MT_OK;
    r->seq = 0;
    int32_t at = r->prev >= 0 && mt_bld_op_stage(b, r->prev) == mt_bld_op_stage(b, op) ? r->prev : op;
    return tp_add(b, x, 1, at, MT_COLL_ALLGATHER, bytes);
}

/* A region closed by an op that needs the whole hidden dimension: all-gather of its last
 * output; backward all-reduce (sp: reduce-scatter) of the input gradient. */
static mt_status close_region(mt_bld *b, tp_state *x, region *r) {
    if (!r->open) return MT_OK;
    r->open = 0;
    MT_CHECK(tp_add(b, x, 1, r->last_op, MT_COLL_ALLGATHER, r->last_out_bytes));
    return tp_add(b, x, 0, r->first_col, r->seq_in ? MT_COLL_REDUCESCATTER : MT_COLL_ALLREDUCE, r->in_bytes);
}

/* All-reduces of per-token statistics a vocabulary-parallel loss needs: cross_entropy 3 (max
 * logit, sum of exponentials, target logit), log_softmax 2, nll_loss after a split log_softmax 1. */
static int vocab_loss_stats(const trace_op *o) {
    const char *k = o->kind ? o->kind : o->name;
    if (strstr(o->name, "cross_entropy") || strstr(k, "cross_entropy")) return 3;
    if (strstr(o->name, "log_softmax") || strstr(k, "log_softmax")) return 2;
    return 1;
}

/* A vocabulary loss inside an open column region (the LM head's): split by vocabulary, its
 * statistics all-reduced ([tokens] fp32 each), the region's input gradient all-reduced in
 * backward (sp: reduce-scattered); no all-gather of the logits. */
static mt_status tp_vocab_loss(mt_bld *b, tp_state *x, region *r, int32_t i) {
    const mt_trace *t = b->t;
    const trace_op *o = &t->ops[i];
    int32_t nd, in = first_activation_input(t, o);
    const int64_t *s = op_shape(t, o, 0, -1, &nd);
    double tokens = in >= 0 && nd > 0 && s[nd - 1] > 0 ? (double)t->tensors[in].numel / (double)s[nd - 1] : 0;
    b->split[i] = b->plan->tp;
    for (int k = vocab_loss_stats(o); k > 0; k--) MT_CHECK(tp_add(b, x, 1, i, MT_COLL_ALLREDUCE, tokens * 4));
    if (o->cls == MT_OPC_SOFTMAX) { /* log_softmax: its nll_loss follows in the same region */
        r->last_op = i;
        r->last_out_bytes = first_output_bytes(t, o);
        return MT_OK;
    }
    r->open = 0;
    return tp_add(b, x, 0, r->first_col, r->seq_in ? MT_COLL_REDUCESCATTER : MT_COLL_ALLREDUCE, r->in_bytes);
}

/* Backward ops inherit the split of their forward op (or the majority of their layer). */
static mt_status inherit_bwd_split(mt_bld *b) {
    const mt_trace *t = b->t;
    int32_t T = b->plan->tp;
    double *unit_split = calloc((size_t)(b->n_units > 0 ? b->n_units : 1), sizeof *unit_split);
    double *unit_all = calloc((size_t)(b->n_units > 0 ? b->n_units : 1), sizeof *unit_all);
    if (!unit_split || !unit_all) {
        free(unit_split);
        free(unit_all);
        return MT_ENOMEM;
    }
    for (int32_t i = 0; i < t->n_ops; i++) {
        if (t->ops[i].phase != TRACE_PHASE_FORWARD || b->unit[i] < 0) continue;
        unit_all[b->unit[i]] += (double)t->ops[i].dev_ns + 1;
        if (b->split[i] > 1) unit_split[b->unit[i]] += (double)t->ops[i].dev_ns + 1;
    }
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_BACKWARD || trace_op_is_comm(o)) continue;
        if (o->tp == TRACE_TP_WEIGHT_GRAD) continue; /* gradient-sized: follows the weight split below */
        if (o->fwd_op >= 0) b->split[i] = b->split[o->fwd_op];
        else if (b->unit[i] >= 0 && unit_split[b->unit[i]] > 0.5 * unit_all[b->unit[i]]) b->split[i] = T;
    }
    free(unit_split);
    free(unit_all);
    for (int32_t i = 0; i < t->n_ops; i++)
        if (b->split[i] > 1 && t->ops[i].phase == TRACE_PHASE_FORWARD) b->p->tp_split_ops++;
    return MT_OK;
}

/* A linear in the walk: joins, closes (row) or opens (column) the region. */
static mt_status tp_linear(mt_bld *b, tp_state *x, region *r, int32_t i) {
    const mt_trace *t = b->t;
    const trace_op *o = &t->ops[i];
    int32_t T = b->plan->tp, in = first_activation_input(t, o);
    double out_b = first_output_bytes(t, o);
    b->split[i] = T;
    int col = !r->open || (in >= 0 && in == r->in_tensor);
    int64_t feat = linear_features(t, o, col);
    int vocab = 0;
    for (int32_t v = 0; col && v < x->n_vocab; v++) vocab |= feat == x->vocab[v];
    if (vocab && feat % T) x->padded_vocab = feat; /* an LM head: Megatron pads the vocabulary */
    else if (!vocab) tp_fit_note(&x->fit, T, i, feat, col ? "output features" : "input features");
    if (r->open && in >= 0 && in == r->in_tensor) { /* another column op on the same input (Q, K, V) */
        r->last_op = i;
        r->last_out_bytes = out_b;
        return MT_OK;
    }
    if (r->open) { /* row-parallel: closes the pair; its bias, added after the all-reduce, stays whole */
        r->open = 0;
        b->row[i] = 1;
        MT_CHECK(tp_reduce_out(b, x, r, i, out_b));
        return tp_add(b, x, 0, r->first_col, r->seq_in ? MT_COLL_REDUCESCATTER : MT_COLL_ALLREDUCE, r->in_bytes);
    }
    r->seq_in = r->seq;
    MT_CHECK(tp_gather_seq(b, x, r, i, tensor_bytes(t, in))); /* column-parallel: opens a region */
    r->open = 1;
    r->in_tensor = in;
    r->in_bytes = tensor_bytes(t, in);
    r->first_col = r->last_op = i;
    r->last_out_bytes = out_b;
    return MT_OK;
}

/* A dtype cast written as tensor.type_as(other) (HF's RMSNorm: the normalised stream cast back before
 * the weight's multiply): per token as a copy is. */
static int cast_like(const trace_op *o) {
    const char *n = o->name ? strstr(o->name, "type_as") : NULL;
    return n && n[7] == 0;
}

/* sp: 1 when op o reads an activation split by sequence (the residual stream after a reduce-scatter,
 * or what a per-token op made of it); an op reading none (rotary frequencies from the positions) runs
 * whole without gathering the stream. */
static int reads_seq(const mt_bld *b, const tp_state *x, const trace_op *o) {
    const mt_trace *t = b->t;
    for (int32_t j = 0; j < o->in_count; j++) {
        const trace_tref *r = &t->trefs[o->in_first + j];
        int role = tensor_role(t, r);
        if (r->tensor < 0 || r->tensor >= t->n_tensors || (role != TRACE_ROLE_ACTIVATION && role != TRACE_ROLE_INPUT))
            continue;
        int32_t p = x->made_by[r->tensor];
        if (p >= 0 && x->seq_out[p]) return 1;
    }
    return 0;
}

/* An op outside a region: split by sequence while the stream is (sp), else replicated; an op
 * that needs every token (a convolution, a matmul, an unknown op) all-gathers first. */
static mt_status tp_outside(mt_bld *b, tp_state *x, region *r, int32_t i) {
    const trace_op *o = &b->t->ops[i];
    int per_token = o->cls == MT_OPC_NORM || o->cls == MT_OPC_ELEMWISE || o->cls == MT_OPC_COPY ||
                    o->cls == MT_OPC_NONE || o->tp == TRACE_TP_POS_EMBEDDING || cast_like(o);
    if (r->seq && per_token) {
        b->split[i] = b->plan->tp;
        b->tok[i] = b->plan->tp;
        if (x->seq_out) x->seq_out[i] = reads_seq(b, x, o);
        return MT_OK;
    }
    if (r->seq && x->made_by && !reads_seq(b, x, o)) return MT_OK; /* not the stream (RoPE's frequencies) */
    return tp_gather_seq(b, x, r, i, tensor_bytes(b->t, first_activation_input(b->t, o)));
}

/* Op i an expert's, split by expert tensor parallelism (--ep with --tp). */
static int tp_expert_op(const mt_bld *b, int32_t i) {
    const mt_moe *m = b->p->moe;
    return m && b->plan->ep > 1 && m->op_span && m->op_span[i] && m->op_expert[i] >= 0;
}

/* Expert tensor parallelism (--ep with --tp, Megatron-Core's MoE layer; pass_ep.c emits its all-to-alls and the
 * expert-TP all-gather / reduce-scatter around the experts): from the router to the experts' last forward op,
 * an expert's op works on 1/S of its weights (S the expert-TP size, --etp, T by default; its linears column
 * then row parallel, no collective of their own) for the S x 1/T of the tokens its expert-TP group gathered:
 * 1/T of the work (split T, tok T / S); the router and the gating between run replicated on the rank's own
 * 1/T of the tokens (sequence parallel, which Megatron requires here), their weights whole. 1 when op i is
 * such an op. */
static int tp_moe_op(mt_bld *b, region *r, int32_t i) {
    const mt_moe *m = b->p->moe;
    if (!m || b->plan->ep <= 1 || !m->op_span || !m->op_span[i]) return 0;
    int32_t T = b->plan->tp;
    if (m->op_expert[i] >= 0) {
        b->split[i] = T; /* weights / S: mt_bld_weight_split = split / tok */
        b->tok[i] = T / mt_plan_etp(b->plan);
        b->row[i] = m->op_span[i] == 3; /* the last linear is row parallel: its bias whole */
        return 1;
    }
    if (b->t->ops[i].tp == TRACE_TP_LINEAR && m->op_span[i] != 2) return 0; /* a shared expert: a dense MLP */
    if (r->seq) b->split[i] = b->tok[i] = T;
    return 1;
}

static mt_status tp_walk_op(mt_bld *b, tp_state *x, region *r, int32_t i) {
    const mt_trace *t = b->t;
    const trace_op *o = &t->ops[i];
    int32_t T = b->plan->tp;
    if (tp_moe_op(b, r, i)) return MT_OK;
    if (o->tp == TRACE_TP_LINEAR) return tp_linear(b, x, r, i);
    if (o->tp == TRACE_TP_VOCAB_LOSS && r->open) return tp_vocab_loss(b, x, r, i);
    if (o->tp == TRACE_TP_CONV) {
        MT_CHECK(close_region(b, x, r));
        MT_CHECK(tp_gather_seq(b, x, r, i, tensor_bytes(t, first_activation_input(t, o))));
        b->split[i] = T;
        tp_fit_note(&x->fit, T, i, conv_channels(t, o), "output channels");
        MT_CHECK(tp_add(b, x, 1, i, MT_COLL_ALLGATHER, first_output_bytes(t, o)));
        return tp_add(b, x, 0, i, MT_COLL_ALLREDUCE, tensor_bytes(t, first_activation_input(t, o)));
    }
    if (o->tp == TRACE_TP_EMBEDDING) { /* vocabulary-parallel: partial rows summed */
        MT_CHECK(close_region(b, x, r));
        b->split[i] = T;
        return tp_reduce_out(b, x, r, i, first_output_bytes(t, o));
    }
    if (o->tp == TRACE_TP_CLOSER || o->tp == TRACE_TP_VOCAB_LOSS) {
        MT_CHECK(close_region(b, x, r));
        return tp_outside(b, x, r, i);
    }
    if (r->open) {
        b->split[i] = T; /* inside a column region: works on 1/T of the features or heads */
        tp_fit_note(&x->fit, T, i, attention_heads(t, o), "attention heads");
        r->last_op = i;
        r->last_out_bytes = first_output_bytes(t, o);
        return MT_OK;
    }
    return tp_outside(b, x, r, i); /* position embeddings, norms, residual adds: replicated */
}

/* 1 when a forward op left whole is expected to be (positions, norms, elementwise, copies, views,
 * softmax, pooling, losses): its work is not what tensor parallelism divides. */
static int replicated_by_design(const trace_op *o) {
    switch (o->cls) {
    case MT_OPC_NONE: case MT_OPC_COPY: case MT_OPC_ELEMWISE: case MT_OPC_NORM: case MT_OPC_SOFTMAX:
    case MT_OPC_POOL: case MT_OPC_LOSS: case MT_OPC_OPTIMIZER: return 1;
    case MT_OPC_EMBEDDING: return o->tp == TRACE_TP_POS_EMBEDDING;
    default: return 0;
    }
}

/* p->tp_replicated: the forward ops the walk left whole that no rule accounts for. */
static mt_status list_replicated(mt_bld *b) {
    const mt_trace *t = b->t;
    mt_program *p = b->p;
    for (int pass = 0; pass < 2; pass++) {
        int32_t n = 0;
        for (int32_t i = 0; i < t->n_ops; i++) {
            const trace_op *o = &t->ops[i];
            if (o->phase != TRACE_PHASE_FORWARD || trace_op_is_comm(o) || b->split[i] > 1 || replicated_by_design(o))
                continue;
            if (pass) p->tp_replicated[n] = i;
            n++;
        }
        if (pass || n == 0) break;
        if (!(p->tp_replicated = malloc((size_t)n * sizeof *p->tp_replicated))) return MT_ENOMEM;
        p->n_tp_replicated = n;
    }
    return MT_OK;
}

static mt_status classify_tp(mt_bld *b, tp_state *x) {
    const mt_trace *t = b->t;
    region r = {0};
    r.prev = -1;
    for (int32_t i = 0; i < t->n_ops; i++) b->split[i] = 1;
    for (int32_t i = 0; i < t->n_ops; i++) b->tok[i] = 1;
    if (b->plan->tp <= 1) return MT_OK;
    if (b->plan->sp) {
        x->made_by = mt_bld_producers(t);
        x->seq_out = calloc((size_t)(t->n_ops > 0 ? t->n_ops : 1), 1);
        if (!x->made_by || !x->seq_out) return MT_ENOMEM;
    }
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD || trace_op_is_comm(o)) continue;
        MT_CHECK(tp_walk_op(b, x, &r, i));
        r.prev = i;
    }
    free(x->made_by);
    free(x->seq_out);
    x->made_by = NULL;
    x->seq_out = NULL;
    MT_CHECK(close_region(b, x, &r));
    if (x->fit.bad_op >= 0) return MT_EINVAL; /* the caller says why (tp_fit_check) */
    MT_CHECK(list_replicated(b));
    return inherit_bwd_split(b);
}

/* Moves each forward op's backward collectives to its anchor's list. */
static void place_bwd_colls(mt_bld *b, tp_state *x) {
    const mt_trace *t = b->t;
    for (int32_t i = 0; i < t->n_ops; i++) x->bwd_anchor[i] = -1;
    for (int32_t f = 0; f < t->n_ops; f++) {
        if (x->bwd_coll[f] < 0) continue;
        int32_t at = b->anchor[f];
        if (at < 0) {
            for (int32_t q = x->bwd_coll[f]; q >= 0; q = x->colls[q].next) b->p->tp_unplaced_bwd++;
            continue;
        }
        if (x->bwd_anchor[at] < 0) {
            x->bwd_anchor[at] = x->bwd_coll[f];
        } else {
            int32_t q = x->bwd_anchor[at];
            while (x->colls[q].next >= 0) q = x->colls[q].next;
            x->colls[q].next = x->bwd_coll[f];
        }
    }
}


static mt_status emit_tp_colls(mt_bld *b, tp_state *x, mt_emit *em, int32_t head, int32_t mb, trace_phase ph) {
    for (int32_t q = head; q >= 0; q = x->colls[q].next) {
        const pcoll *pc = &x->colls[q];
        int32_t layer = mt_bld_layer(b, pc->op);
        MT_CHECK(mt_emit_coll(em, MT_GROUP_TP, pc->coll,
                           ph == TRACE_PHASE_FORWARD ? MT_COLL_WHY_TP_FWD : MT_COLL_WHY_TP_BWD, 1,
                           pc->bytes * b->plan->batch_factor / b->plan->cp, layer, mb, ph)); /* per token */
    }
    return MT_OK;
}

/* ---- the pass ---------------------------------------------------------------------------- */

static void tp_release(void *st) {
    tp_state *x = st;
    if (!x) return;
    free(x->fwd_coll);
    free(x->bwd_coll);
    free(x->bwd_anchor);
    free(x->colls);
    free(x->seq_w);
    free(x->made_by);
    free(x->seq_out);
    free(x);
}

/* seq_w: the weights whose first forward reader is split by sequence (O(ops + trefs)). */
static mt_status mark_seq_weights(mt_bld *b, tp_state *x) {
    const mt_trace *t = b->t;
    int8_t *seen = calloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1), 1);
    x->seq_w = calloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1), 1);
    if (!seen || !x->seq_w) {
        free(seen);
        return MT_ENOMEM;
    }
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t w = t->trefs[o->in_first + j].tensor;
            if (w < 0 || w >= t->n_tensors || t->tensors[w].role != TRACE_ROLE_WEIGHT || seen[w]) continue;
            seen[w] = 1;
            /* only sp has split tokens yet (this pass runs first); a row-parallel bias is added to the
             * reduce-scattered output, 1/T of the tokens */
            x->seq_w[w] = !tp_expert_op(b, i) && /* an expert's gradients reduce over edp (pass_ep.c) */
                          (b->tok[i] > 1 || mt_bld_weight_split(b, i, j) < b->split[i] / b->tok[i]);
        }
    }
    free(seen);
    return MT_OK;
}

/* Grouped-query attention (tpsites.h): T must divide the K/V heads too, H x kv_width / q_width with H the
 * attention's heads; MT_EINVAL (f noted) when it does not. */
static mt_status kv_heads_fit(const mt_trace *t, tp_fit *f, int32_t T) {
    mt_tp_sites s;
    mt_tp_sites_find(t, &s);
    if (!s.gqa || s.gqa_q_width <= 0) return MT_OK;
    int64_t H = 0;
    for (int32_t i = 0; i < t->n_ops && H <= 0; i++)
        if (t->ops[i].phase == TRACE_PHASE_FORWARD) H = attention_heads(t, &t->ops[i]);
    if (H <= 0 || (H * s.gqa_kv_width) % s.gqa_q_width) return MT_OK;
    tp_fit_note(f, T, s.gqa_op, H * s.gqa_kv_width / s.gqa_q_width, "key/value heads (grouped-query attention)");
    return f->bad_op >= 0 ? MT_EINVAL : MT_OK;
}

static mt_status tp_prepare(mt_bld *b, void **st, mt_error *err) {
    const mt_trace *t = b->t;
    size_t nops = (size_t)(t->n_ops > 0 ? t->n_ops : 1);
    tp_state *x = calloc(1, sizeof *x);
    *st = x;
    if (!x) return MT_ENOMEM;
    x->fwd_coll = malloc(nops * sizeof *x->fwd_coll);
    x->bwd_coll = malloc(nops * sizeof *x->bwd_coll);
    x->bwd_anchor = malloc(nops * sizeof *x->bwd_anchor);
    if (!x->fwd_coll || !x->bwd_coll || !x->bwd_anchor) return MT_ENOMEM;
    for (int32_t i = 0; i < t->n_ops; i++) x->fwd_coll[i] = x->bwd_coll[i] = -1;
    x->fit.bad_op = -1;
    for (int32_t i = 0; i < t->n_ops; i++) { /* vocabulary sizes: the rows of the token embeddings */
        int32_t nw;
        const int64_t *w = t->ops[i].tp == TRACE_TP_EMBEDDING ? op_shape(t, &t->ops[i], 0, TRACE_ROLE_WEIGHT, &nw) : NULL;
        int seen = !w || nw != 2 || x->n_vocab == 4;
        for (int32_t v = 0; !seen && v < x->n_vocab; v++) seen = x->vocab[v] == w[0];
        if (!seen) x->vocab[x->n_vocab++] = w[0];
    }
    mt_status rc = classify_tp(b, x);
    if (rc == MT_EINVAL) return tp_fit_check(&x->fit, t, b->plan->tp, err);
    if (rc != MT_OK) return rc;
    if (b->plan->tp > 1 && kv_heads_fit(t, &x->fit, b->plan->tp) != MT_OK) return tp_fit_check(&x->fit, t, b->plan->tp, err);
    place_bwd_colls(b, x);
    if (b->plan->sp && x->seq_splits == 0)
        return mt_fail(err, MT_EINVAL, "--sp does not apply to this model: tensor parallelism found no residual stream to "
                       "split by sequence (no row-parallel linear or vocabulary embedding ends a region)");
    return b->plan->sp ? mark_seq_weights(b, x) : MT_OK;
}

/* sp: the norms', position embeddings' and row-parallel biases' weights saw 1/T of the tokens on each rank, so their
 * gradients are partial sums: one all-reduce over the TP group once backward is done. */
static mt_status tp_backward_done(mt_bld *b, void *st, mt_emit *em, int32_t s) {
    tp_state *x = st;
    double bytes = 0;
    for (int32_t w = 0; x->seq_w && w < b->t->n_tensors; w++)
        if (x->seq_w[w] && b->w_stage[w] == s) bytes += b->t->tensors[w].bytes;
    if (bytes <= 0) return MT_OK;
    return mt_emit_coll(em, MT_GROUP_TP, MT_COLL_ALLREDUCE, MT_COLL_WHY_TP_BWD, 1, bytes, -1, -1, TRACE_PHASE_BACKWARD);
}

static mt_status tp_after_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    tp_state *x = st;
    if (b->plan->tp <= 1) return MT_OK;
    if (b->t->ops[op].phase == TRACE_PHASE_FORWARD)
        return emit_tp_colls(b, x, em, x->fwd_coll[op], mb, TRACE_PHASE_FORWARD);
    return emit_tp_colls(b, x, em, x->bwd_anchor[op], mb, TRACE_PHASE_BACKWARD);
}

/* A forward op re-run in backward (recomputation) repeats its forward collectives. */
static mt_status tp_recompute_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb) {
    if (b->plan->tp <= 1) return MT_OK;
    return emit_tp_colls(b, st, em, ((tp_state *)st)->fwd_coll[op], mb, TRACE_PHASE_FORWARD);
}

static int tp_warning(mt_bld *b, void *st, char *buf, int len) {
    tp_state *x = st;
    const mt_program *p = b->p;
    if (p->tp_unplaced_bwd > 0) {
        snprintf(buf, (size_t)len, "%d tensor-parallel backward collective%s could not be placed (backward ops not "
                 "linked to forward ops)", p->tp_unplaced_bwd, mt_plural(p->tp_unplaced_bwd));
        return 3;
    }
    if (b->plan->tp > 1 && p->tp_split_ops == 0) {
        snprintf(buf, (size_t)len, "tensor parallelism found nothing to split (no linear, convolution or embedding ops)");
        return 2;
    }
    if (x->padded_vocab > 0) {
        int64_t m = 128LL * b->plan->tp, pad = (x->padded_vocab + m - 1) / m * m;
        snprintf(buf, (size_t)len, "the vocabulary of %lld words does not divide over --tp %d: padded to %lld (a multiple "
                 "of 128 x tp, as Megatron's --make-vocab-size-divisible-by 128), %lld rows per rank; the padding's %.2f %% "
                 "more work in the output layer is not added", (long long)x->padded_vocab, b->plan->tp, (long long)pad,
                 (long long)(pad / b->plan->tp), 100.0 * (double)(pad - x->padded_vocab) / (double)x->padded_vocab);
        return 1;
    }
    if (b->plan->tp > 1 && x->fit.gcd == 0) {
        snprintf(buf, (size_t)len, "the trace records no shapes of the ops tensor parallelism splits: --tp %d is not "
                 "checked against the model's features, channels or attention heads", b->plan->tp);
        return 1;
    }
    return 0;
}

const mt_pass mt_pass_tp = {
    .name = "tp",
    .prepare = tp_prepare,
    .release = tp_release,
    .after_op = tp_after_op,
    .backward_done = tp_backward_done,
    .recompute_op = tp_recompute_op,
    .warning = tp_warning,
};

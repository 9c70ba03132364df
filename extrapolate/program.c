/* extrapolate/program.c — builds the per-stage task programs (see program.h).
 *
 * Steps, each O(ops + trefs) unless noted:
 *  1. units: every forward/backward op gets the layer it belongs to (backward ops through
 *     fwd_op, else their own layer, else the previous backward op's); a trace without layers
 *     uses one unit per forward op;
 *  2. stages: units cut into P contiguous ranges minimising the largest forward + backward +
 *     optimizer time, at block boundaries where the trace shows them (stages.h);
 *  3. tensor parallelism: a walk over forward ops marks split ops and the collectives splits
 *     imply (Megatron column/row pairs, conv output channels, embedding vocabulary), by the
 *     tp kind the tracer's classifier gave each op (trace_op.tp); T must divide every dimension a
 *     split divides (features, output channels, attention heads, where the shapes say), else the
 *     plan is refused naming the op and the largest T that fits;
 *  4. gradients: each weight's gradient is ready after the last backward op of the forward op
 *     that first read it; its stage and split follow that op;
 *  5. pipeline boundary bytes from tensor producers and consumers (O(tensors x P));
 *  6. emission of each stage's tasks in schedule order (GPipe or 1F1B) with TP collectives,
 *     DDP buckets or the sync all-reduce, and the optimizer share of the stage.
 */
#include "extrapolate/program.h"
#include "extrapolate/stages.h"
#include "extrapolate/traced.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"
#include "util/vec.h"

/* ---- operator facts (the tracer's classifier fills them: tracer/opclass.h) -------------- */

static int tensor_role(const trace *t, const trace_tref *r) {
    return r->tensor >= 0 && r->tensor < t->n_tensors ? (int)t->tensors[r->tensor].role : -1;
}

int mt_op_batch_dependent(const trace *t, int32_t op) { return t->ops[op].batch_dep; }

double mt_optime_proportional(void *ctx, const trace *t, int32_t op, double batch_factor,
                              int32_t tp_split) {
    (void)ctx;
    double ns = (double)t->ops[op].dev_ns;
    if (mt_op_batch_dependent(t, op)) ns *= batch_factor;
    if (tp_split > 1) ns /= tp_split;
    return ns;
}

static int32_t first_activation_input(const trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->in_count; j++) {
        const trace_tref *r = &t->trefs[o->in_first + j];
        int role = tensor_role(t, r);
        if (role == TRACE_ROLE_ACTIVATION || role == TRACE_ROLE_INPUT) return r->tensor;
    }
    return -1;
}

static double tensor_bytes(const trace *t, int32_t tensor) {
    return tensor >= 0 && tensor < t->n_tensors ? t->tensors[tensor].bytes : 0;
}

static double first_output_bytes(const trace *t, const trace_op *o) {
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
static const int64_t *op_shape(const trace *t, const trace_op *o, int out, int role, int32_t *nd) {
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
static int64_t linear_features(const trace *t, const trace_op *o, int col) {
    int32_t nd, nw;
    const int64_t *s = op_shape(t, o, col, -1, &nd), *w = op_shape(t, o, 0, TRACE_ROLE_WEIGHT, &nw);
    if (nd > 0) return s[nd - 1];
    if (nw != 2) return 0;
    return is_linear_kind(o) ? w[col ? 0 : 1] : w[col ? 1 : 0];
}

/* A convolution's output channels: its weight's first dimension ([out, in/groups, k...]), else
 * its output's second (N, C, ...); 0 unknown. */
static int64_t conv_channels(const trace *t, const trace_op *o) {
    int32_t nw, nd;
    const int64_t *w = op_shape(t, o, 0, TRACE_ROLE_WEIGHT, &nw), *s = op_shape(t, o, 1, 0, &nd);
    if (nw >= 3 && !strstr(o->kind ? o->kind : o->name, "transpose")) return w[0];
    return nd >= 3 ? s[1] : 0;
}

/* Attention heads of an op split inside a column region: a matmul or attention on a 4-D
 * activation [batch, heads, sequence, head_dim]; 0 when not recognisable. */
static int64_t attention_heads(const trace *t, const trace_op *o) {
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
static mt_status tp_fit_check(const tp_fit *f, const trace *t, int32_t T, mt_error *err) {
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

/* ---- builder state --------------------------------------------------------------------- */

typedef struct pcoll {      /* a collective attached after an op */
    int32_t op;             /* forward op (fwd list) or forward op whose backward carries it */
    mt_coll_op coll;
    double bytes;           /* at the traced batch; scaled by the batch factor when emitted */
    int32_t next;           /* next collective attached to the same op, -1 */
} pcoll;

typedef struct builder {
    const trace *t;
    const mt_plan *plan;
    mt_optime_fn optime;
    int one_op_per_task;
    void *optime_ctx;
    mt_program *p;
    int32_t n_units;
    int32_t *unit;          /* per op, -1 */
    int32_t *stage_of_unit;
    int32_t *split;         /* per op: 1 or T */
    int8_t *seq;            /* per op: 1 when split by sequence (sp), not by its weights */
    int32_t *fwd_coll;      /* per op: first pcoll emitted after it in forward, -1 */
    int32_t *bwd_coll;      /* per op: first pcoll emitted after its last backward op, -1 */
    int32_t *anchor;        /* per forward op: see find_anchors */
    int32_t *bwd_anchor;    /* per backward op: first pcoll to emit after it, -1 */
    double *grad_ready;     /* per backward op: gradient bytes (per rank) ready after it */
    double *tail_grad;      /* per stage: gradients with no backward op (ready at the end) */
    double *w_stage_bytes;  /* per stage: weight bytes per rank */
    double *sp_grad_bytes;  /* per stage: gradients of weights read by sequence-split ops (sp) */
    double total_w_bytes;   /* unsplit, all stages */
    int32_t *w_stage;       /* per tensor: stage of a weight, -1 */
    int32_t *w_split;       /* per tensor: split of a weight */
    double *op_ns;          /* per op: its time at the plan's micro-batch and its split */
    int32_t first_fwd;      /* first forward op, n_ops when none */
    pcoll *colls;
    int64_t n_colls, cap_colls;
    tp_fit fit;             /* what the splits divide (classify_tp) */
    int32_t *tc_head;       /* plan comm traced: per op, the first traced collective it issued, -1 */
    int32_t *tc_next;       /* per trace_coll: the next one the same op issued, -1 */
    int32_t tc_pre;         /* the first issued before the step's first op, -1 */
} builder;

static int32_t op_stage(const builder *b, int32_t op) {
    int32_t u = b->unit[op];
    if (u < 0) return b->t->ops[op].phase == TRACE_PHASE_BACKWARD ? b->plan->pp - 1 : 0;
    return b->stage_of_unit[u];
}

static mt_status add_pcoll(builder *b, int32_t *head, int32_t op, mt_coll_op c, double bytes) {
    if (mt_vec_reserve(&b->colls, &b->cap_colls, b->n_colls + 1)) return MT_ENOMEM;
    pcoll *pc = &b->colls[b->n_colls];
    pc->op = op;
    pc->coll = c;
    pc->bytes = bytes;
    pc->next = -1;
    /* append at the tail so collectives run in the order they were attached */
    if (*head < 0) {
        *head = (int32_t)b->n_colls;
    } else {
        int32_t q = *head;
        while (b->colls[q].next >= 0) q = b->colls[q].next;
        b->colls[q].next = (int32_t)b->n_colls;
    }
    b->n_colls++;
    return MT_OK;
}

/* 1. units */
static void assign_units(builder *b) {
    const trace *t = b->t;
    int32_t fwd_ord = 0, cur = -1, first_fwd_unit = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        b->unit[i] = -1;
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        int32_t u = t->n_layers > 0 ? o->layer : fwd_ord;
        fwd_ord++;
        if (u < 0) u = cur;
        b->unit[i] = u;
        if (u >= 0) cur = u;
        if (first_fwd_unit < 0 && u >= 0) first_fwd_unit = u;
    }
    /* leading forward ops before any layer take the first layer */
    for (int32_t i = 0; i < t->n_ops; i++)
        if (t->ops[i].phase == TRACE_PHASE_FORWARD && b->unit[i] < 0)
            b->unit[i] = first_fwd_unit >= 0 ? first_fwd_unit : 0;
    cur = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_BACKWARD) continue;
        int32_t u = -1;
        if (o->fwd_op >= 0 && o->fwd_op < t->n_ops) u = b->unit[o->fwd_op];
        if (u < 0 && t->n_layers > 0) u = o->layer;
        if (u < 0) u = cur;
        b->unit[i] = u;
        if (u >= 0) cur = u;
    }
    b->n_units = t->n_layers > 0 ? t->n_layers : fwd_ord;
}

/* 2. stages: the partitioner (stages.h), then each stage's layer range. */
static mt_status assign_stages(builder *b) {
    int32_t U = b->n_units, P = b->plan->pp;
    MT_CHECK(mt_stages_cut(b->t, b->unit, U, P, b->stage_of_unit, &b->p->stage_cut));
    for (int32_t st = 0; st < P; st++) b->p->stages[st].layer_first = b->p->stages[st].layer_last = -1;
    for (int32_t u = 0; u < U; u++) {
        mt_stage_program *sp = &b->p->stages[b->stage_of_unit[u]];
        if (sp->layer_first < 0) sp->layer_first = u;
        sp->layer_last = u;
    }
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
 * (norms, residual adds, dropout, position embeddings) run on 1/T of the tokens (seq[op] 1). */
typedef struct region {
    int open;
    int32_t in_tensor;      /* activation the column ops read */
    double in_bytes;
    int32_t first_col;      /* carries the backward all-reduce of the input gradient */
    int32_t last_op;        /* the all-gather goes after it when the region is closed */
    double last_out_bytes;
    int seq;                /* sp: the residual stream is split by sequence */
    int32_t prev;           /* the previous forward op (-1): an sp all-gather goes after it */
} region;

/* A TP collective after forward op `op` (fwd 1) or after its backward (fwd 0), counted. */
static mt_status tp_add(builder *b, int fwd, int32_t op, mt_coll_op c, double bytes) {
    if (fwd) b->p->tp_colls_fwd++;
    else b->p->tp_colls_bwd++;
    return add_pcoll(b, fwd ? &b->fwd_coll[op] : &b->bwd_coll[op], op, c, bytes);
}

/* The residual stream's reduction after op (a row linear's or the vocabulary embedding's
 * output): an all-reduce, or with sp a reduce-scatter whose backward is an all-gather. */
static mt_status tp_reduce_out(builder *b, region *r, int32_t op, double bytes) {
    if (!b->plan->sp) return tp_add(b, 1, op, MT_COLL_ALLREDUCE, bytes);
    r->seq = 1;
    MT_CHECK(tp_add(b, 1, op, MT_COLL_REDUCESCATTER, bytes));
    return tp_add(b, 0, op, MT_COLL_ALLGATHER, bytes);
}

/* sp: op needs every token of a sequence-split input: all-gather it first (after the previous
 * forward op of the same stage, else after op itself; the same time on the compute stream). */
static mt_status tp_gather_seq(builder *b, region *r, int32_t op, double bytes) {
    if (!r->seq) return MT_OK;
    r->seq = 0;
    int32_t at = r->prev >= 0 && op_stage(b, r->prev) == op_stage(b, op) ? r->prev : op;
    return tp_add(b, 1, at, MT_COLL_ALLGATHER, bytes);
}

/* A region closed by an op that needs the whole hidden dimension: all-gather of its last
 * output; backward all-reduce (sp: reduce-scatter) of the input gradient. */
static mt_status close_region(builder *b, region *r) {
    if (!r->open) return MT_OK;
    r->open = 0;
    MT_CHECK(tp_add(b, 1, r->last_op, MT_COLL_ALLGATHER, r->last_out_bytes));
    return tp_add(b, 0, r->first_col, b->plan->sp ? MT_COLL_REDUCESCATTER : MT_COLL_ALLREDUCE, r->in_bytes);
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
static mt_status tp_vocab_loss(builder *b, region *r, int32_t i) {
    const trace *t = b->t;
    const trace_op *o = &t->ops[i];
    int32_t nd, x = first_activation_input(t, o);
    const int64_t *s = op_shape(t, o, 0, -1, &nd);
    double tokens = x >= 0 && nd > 0 && s[nd - 1] > 0 ? (double)t->tensors[x].numel / (double)s[nd - 1] : 0;
    b->split[i] = b->plan->tp;
    for (int k = vocab_loss_stats(o); k > 0; k--) MT_CHECK(tp_add(b, 1, i, MT_COLL_ALLREDUCE, tokens * 4));
    if (o->cls == MT_OPC_SOFTMAX) { /* log_softmax: its nll_loss follows in the same region */
        r->last_op = i;
        r->last_out_bytes = first_output_bytes(t, o);
        return MT_OK;
    }
    r->open = 0;
    return tp_add(b, 0, r->first_col, b->plan->sp ? MT_COLL_REDUCESCATTER : MT_COLL_ALLREDUCE, r->in_bytes);
}

/* Backward ops inherit the split of their forward op (or the majority of their layer). */
static mt_status inherit_bwd_split(builder *b) {
    const trace *t = b->t;
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
static mt_status tp_linear(builder *b, region *r, int32_t i) {
    const trace *t = b->t;
    const trace_op *o = &t->ops[i];
    int32_t T = b->plan->tp, in = first_activation_input(t, o);
    double out_b = first_output_bytes(t, o);
    b->split[i] = T;
    int col = !r->open || (in >= 0 && in == r->in_tensor);
    tp_fit_note(&b->fit, T, i, linear_features(t, o, col), col ? "output features" : "input features");
    if (r->open && in >= 0 && in == r->in_tensor) { /* another column op on the same input (Q, K, V) */
        r->last_op = i;
        r->last_out_bytes = out_b;
        return MT_OK;
    }
    if (r->open) { /* row-parallel: closes the pair */
        r->open = 0;
        MT_CHECK(tp_reduce_out(b, r, i, out_b));
        return tp_add(b, 0, r->first_col, b->plan->sp ? MT_COLL_REDUCESCATTER : MT_COLL_ALLREDUCE, r->in_bytes);
    }
    MT_CHECK(tp_gather_seq(b, r, i, tensor_bytes(t, in))); /* column-parallel: opens a region */
    r->open = 1;
    r->in_tensor = in;
    r->in_bytes = tensor_bytes(t, in);
    r->first_col = r->last_op = i;
    r->last_out_bytes = out_b;
    return MT_OK;
}

/* An op outside a region: split by sequence while the stream is (sp), else replicated; an op
 * that needs every token (a convolution, a matmul, an unknown op) all-gathers first. */
static mt_status tp_outside(builder *b, region *r, int32_t i) {
    const trace_op *o = &b->t->ops[i];
    int per_token = o->cls == MT_OPC_NORM || o->cls == MT_OPC_ELEMWISE || o->cls == MT_OPC_COPY ||
                    o->cls == MT_OPC_NONE || o->tp == TRACE_TP_POS_EMBEDDING;
    if (r->seq && per_token) {
        b->split[i] = b->plan->tp;
        b->seq[i] = 1;
        return MT_OK;
    }
    return tp_gather_seq(b, r, i, tensor_bytes(b->t, first_activation_input(b->t, o)));
}

static mt_status tp_walk_op(builder *b, region *r, int32_t i) {
    const trace *t = b->t;
    const trace_op *o = &t->ops[i];
    int32_t T = b->plan->tp;
    if (o->tp == TRACE_TP_LINEAR) return tp_linear(b, r, i);
    if (o->tp == TRACE_TP_VOCAB_LOSS && r->open) return tp_vocab_loss(b, r, i);
    if (o->tp == TRACE_TP_CONV) {
        MT_CHECK(close_region(b, r));
        MT_CHECK(tp_gather_seq(b, r, i, tensor_bytes(t, first_activation_input(t, o))));
        b->split[i] = T;
        tp_fit_note(&b->fit, T, i, conv_channels(t, o), "output channels");
        MT_CHECK(tp_add(b, 1, i, MT_COLL_ALLGATHER, first_output_bytes(t, o)));
        return tp_add(b, 0, i, MT_COLL_ALLREDUCE, tensor_bytes(t, first_activation_input(t, o)));
    }
    if (o->tp == TRACE_TP_EMBEDDING) { /* vocabulary-parallel: partial rows summed */
        MT_CHECK(close_region(b, r));
        b->split[i] = T;
        return tp_reduce_out(b, r, i, first_output_bytes(t, o));
    }
    if (o->tp == TRACE_TP_CLOSER || o->tp == TRACE_TP_VOCAB_LOSS) {
        MT_CHECK(close_region(b, r));
        return tp_outside(b, r, i);
    }
    if (r->open) {
        b->split[i] = T; /* inside a column region: works on 1/T of the features or heads */
        tp_fit_note(&b->fit, T, i, attention_heads(t, o), "attention heads");
        r->last_op = i;
        r->last_out_bytes = first_output_bytes(t, o);
        return MT_OK;
    }
    return tp_outside(b, r, i); /* position embeddings, norms, residual adds: replicated */
}

static mt_status classify_tp(builder *b) {
    const trace *t = b->t;
    region r = {0};
    r.prev = -1;
    for (int32_t i = 0; i < t->n_ops; i++) b->split[i] = 1;
    for (int32_t i = 0; i < t->n_ops; i++) b->seq[i] = 0;
    if (b->plan->tp <= 1) return MT_OK;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD || trace_op_is_comm(o)) continue;
        MT_CHECK(tp_walk_op(b, &r, i));
        r.prev = i;
    }
    MT_CHECK(close_region(b, &r));
    if (b->fit.bad_op >= 0) return MT_EINVAL; /* the caller says why (tp_fit_check) */
    return inherit_bwd_split(b);
}

/* anchor[f] for a forward op f: the backward op after which f's backward-side work (its TP
 * collectives, its weights' gradients) goes: f's last backward op, or, when the trace does not
 * link them, the last backward op of f's unit; -1 when there is none. */
static mt_status find_anchors(builder *b) {
    const trace *t = b->t;
    int32_t *last_unit_bwd = malloc((size_t)(b->n_units > 0 ? b->n_units : 1) * sizeof *last_unit_bwd);
    if (!last_unit_bwd) return MT_ENOMEM;
    for (int32_t u = 0; u < b->n_units; u++) last_unit_bwd[u] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) b->anchor[i] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_BACKWARD || trace_op_is_comm(o)) continue;
        if (o->fwd_op >= 0) b->anchor[o->fwd_op] = i;
        if (b->unit[i] >= 0) last_unit_bwd[b->unit[i]] = i;
    }
    for (int32_t f = 0; f < t->n_ops; f++)
        if (t->ops[f].phase == TRACE_PHASE_FORWARD && b->anchor[f] < 0 && b->unit[f] >= 0)
            b->anchor[f] = last_unit_bwd[b->unit[f]];
    free(last_unit_bwd);
    return MT_OK;
}

/* Moves each forward op's backward collectives to its anchor's list. */
static void place_bwd_colls(builder *b) {
    const trace *t = b->t;
    for (int32_t i = 0; i < t->n_ops; i++) b->bwd_anchor[i] = -1;
    for (int32_t f = 0; f < t->n_ops; f++) {
        if (b->bwd_coll[f] < 0) continue;
        int32_t at = b->anchor[f];
        if (at < 0) {
            for (int32_t q = b->bwd_coll[f]; q >= 0; q = b->colls[q].next) b->p->tp_unplaced_bwd++;
            continue;
        }
        if (b->bwd_anchor[at] < 0) {
            b->bwd_anchor[at] = b->bwd_coll[f];
        } else {
            int32_t q = b->bwd_anchor[at];
            while (b->colls[q].next >= 0) q = b->colls[q].next;
            b->colls[q].next = b->bwd_coll[f];
        }
    }
}

/* Each weight belongs to the stage and split of the forward op that first reads it; its
 * gradient is ready after that op's anchor (or at the end of its stage's backward). */
static mt_status assign_gradients(builder *b) {
    const trace *t = b->t;
    for (int32_t i = 0; i < t->n_tensors; i++) {
        b->w_stage[i] = -1;
        b->w_split[i] = 1;
    }
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t w = t->trefs[o->in_first + j].tensor;
            if (w < 0 || w >= t->n_tensors || t->tensors[w].role != TRACE_ROLE_WEIGHT || b->w_stage[w] >= 0)
                continue;
            b->w_stage[w] = op_stage(b, i);
            b->w_split[w] = b->seq[i] ? 1 : b->split[i];
            double bytes = t->tensors[w].bytes / b->w_split[w];
            if (b->seq[i]) b->sp_grad_bytes[b->w_stage[w]] += bytes;
            b->total_w_bytes += t->tensors[w].bytes;
            b->w_stage_bytes[b->w_stage[w]] += bytes;
            int32_t at = b->anchor[i];
            if (at >= 0) b->grad_ready[at] += bytes;
            else b->tail_grad[b->w_stage[w]] += bytes;
        }
    }
    /* Weights never read in forward (or traces without tensors): by stage compute share. */
    double rest = t->param_bytes - b->total_w_bytes;
    if (rest > 1) {
        double *share = calloc((size_t)b->plan->pp, sizeof *share), all = 0;
        if (!share) return MT_ENOMEM;
        for (int32_t i = 0; i < t->n_ops; i++)
            if (t->ops[i].phase == TRACE_PHASE_FORWARD) {
                share[op_stage(b, i)] += (double)t->ops[i].dev_ns + 1;
                all += (double)t->ops[i].dev_ns + 1;
            }
        for (int32_t s = 0; s < b->plan->pp; s++) {
            double add = all > 0 ? rest * share[s] / all : rest / b->plan->pp;
            b->w_stage_bytes[s] += add;
            b->tail_grad[s] += add;
        }
        b->total_w_bytes = t->param_bytes;
        free(share);
    }
    return MT_OK;
}

/* ---- emission -------------------------------------------------------------------------- */

typedef struct emitter {
    mt_stage_program *sp;
    int64_t cap_tasks, cap_items;
} emitter;

static mt_task *new_task(emitter *em, mt_task_kind kind) {
    mt_stage_program *sp = em->sp;
    if (mt_vec_reserve(&sp->tasks, &em->cap_tasks, (int64_t)sp->n_tasks + 1)) return NULL;
    mt_task *k = &sp->tasks[sp->n_tasks++];
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->mb = -1;
    k->layer = -1;
    k->traced = -1;
    return k;
}

static mt_status emit_item(builder *b, emitter *em, int32_t op, double ns, int32_t split, int32_t mb) {
    mt_stage_program *sp = em->sp;
    int64_t ps = (int64_t)llround(ns * 1000.0);
    if (ps < 0) ps = 0;
    if (mt_vec_reserve(&sp->items, &em->cap_items, (int64_t)sp->n_items + 1)) return MT_ENOMEM;
    mt_item *it = &sp->items[sp->n_items];
    it->op = op;
    it->layer = b->t->n_layers > 0 ? b->unit[op] : -1;
    it->dur_ps = ps;
    it->split = split;
    mt_task *last = sp->n_tasks ? &sp->tasks[sp->n_tasks - 1] : NULL;
    if (!last || last->kind != MT_TASK_COMPUTE || last->mb != mb || b->one_op_per_task) {
        last = new_task(em, MT_TASK_COMPUTE);
        if (!last) return MT_ENOMEM;
        last->item_first = sp->n_items;
        last->mb = mb;
        last->phase = (int8_t)b->t->ops[op].phase;
    }
    last->item_count++;
    last->dur_ps += ps;
    sp->compute_ps += ps;
    sp->n_items++;
    return MT_OK;
}

static mt_status emit_coll(emitter *em, mt_group_kind g, mt_coll_op c, mt_coll_why why, int blocking,
                           double bytes, int32_t layer, int32_t mb, trace_phase phase) {
    mt_task *k = new_task(em, MT_TASK_COLL);
    if (!k) return MT_ENOMEM;
    k->group = g;
    k->coll = c;
    k->why = why;
    k->blocking = (int8_t)blocking;
    k->bytes = bytes;
    k->layer = layer;
    k->mb = mb;
    k->phase = (int8_t)phase;
    return MT_OK;
}

static mt_status emit_simple(emitter *em, mt_task_kind kind, int dir, int32_t mb, double bytes) {
    mt_task *k = new_task(em, kind);
    if (!k) return MT_ENOMEM;
    k->dir = (int8_t)dir;
    k->mb = mb;
    k->bytes = bytes;
    return MT_OK;
}

static mt_status emit_tp_colls(builder *b, emitter *em, int32_t head, int32_t mb, trace_phase ph) {
    for (int32_t q = head; q >= 0; q = b->colls[q].next) {
        const pcoll *pc = &b->colls[q];
        int32_t layer = b->t->n_layers > 0 ? b->unit[pc->op] : -1;
        MT_CHECK(emit_coll(em, MT_GROUP_TP, pc->coll,
                           ph == TRACE_PHASE_FORWARD ? MT_COLL_WHY_TP_FWD : MT_COLL_WHY_TP_BWD, 1,
                           pc->bytes * b->plan->batch_factor, layer, mb, ph));
    }
    return MT_OK;
}

/* The traced collectives in list head (tc_head / tc_pre) for micro-batch mb: an all-reduce issued
 * in backward (a gradient bucket) only with the last micro-batch (last), once per step; the rest
 * every micro-batch, all-to-all and send/recv bytes following its size. */
static mt_status emit_traced(builder *b, emitter *em, int32_t head, int32_t mb, trace_phase ph, int last) {
    for (int32_t c = head; c >= 0; c = b->tc_next[c]) {
        mt_traced_task tt;
        if (!mt_traced_task_of(b->t, c, b->plan, &b->p->groups, &tt)) continue;
        if (ph == TRACE_PHASE_BACKWARD && tt.op == MT_COLL_ALLREDUCE && !last) continue;
        int32_t by = b->t->colls[c].issued_by, layer = by >= 0 && b->t->n_layers > 0 ? b->unit[by] : -1;
        MT_CHECK(emit_coll(em, (mt_group_kind)tt.group, tt.op, MT_COLL_WHY_TRACED, tt.blocking,
                           tt.bytes * (tt.scales ? b->plan->batch_factor : 1), layer, mb, ph));
        em->sp->tasks[em->sp->n_tasks - 1].traced = c;
        b->p->traced_colls++;
    }
    return MT_OK;
}

/* Plan comm traced: lists each op's traced collectives (tc_head, tc_next, tc_pre). */
static mt_status index_traced(builder *b) {
    const trace *t = b->t;
    b->tc_pre = -1;
    if (b->plan->comm != MT_COMM_TRACED) return MT_OK;
    b->tc_head = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *b->tc_head);
    b->tc_next = malloc((size_t)(t->n_colls > 0 ? t->n_colls : 1) * sizeof *b->tc_next);
    if (!b->tc_head || !b->tc_next) return MT_ENOMEM;
    for (int32_t i = 0; i < t->n_ops; i++) b->tc_head[i] = -1;
    for (int32_t c = t->n_colls - 1; c >= 0; c--) { /* backwards: each list keeps the trace's order */
        mt_traced_task tt;
        b->tc_next[c] = -1;
        if (!t->colls[c].instance) continue;
        if (!mt_traced_task_of(t, c, b->plan, &b->p->groups, &tt)) {
            b->p->traced_dropped++;
            continue;
        }
        int32_t *head = t->colls[c].issued_by >= 0 && t->colls[c].issued_by < t->n_ops ? &b->tc_head[t->colls[c].issued_by]
                                                                                         : &b->tc_pre;
        b->tc_next[c] = *head;
        *head = c;
    }
    return MT_OK;
}

static mt_status emit_forward(builder *b, emitter *em, int32_t s, int32_t mb) {
    const trace *t = b->t;
    const mt_plan *pl = b->plan;
    MT_CHECK(emit_simple(em, MT_TASK_MB_BEGIN, +1, mb, 0));
    if (s > 0) MT_CHECK(emit_simple(em, MT_TASK_RECV, +1, mb, 0));
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD || trace_op_is_comm(o) || op_stage(b, i) != s) continue;
        MT_CHECK(emit_item(b, em, i, b->op_ns[i], b->split[i], mb));
        if (pl->tp > 1) MT_CHECK(emit_tp_colls(b, em, b->fwd_coll[i], mb, TRACE_PHASE_FORWARD));
        if (b->tc_head) MT_CHECK(emit_traced(b, em, b->tc_head[i], mb, TRACE_PHASE_FORWARD, 1));
    }
    if (s < pl->pp - 1)
        MT_CHECK(emit_simple(em, MT_TASK_SEND, +1, mb, em->sp->boundary_bytes * pl->batch_factor));
    return MT_OK;
}

static mt_status emit_backward(builder *b, emitter *em, int32_t s, int32_t mb, int last_block,
                               const double *boundary) {
    const trace *t = b->t;
    const mt_plan *pl = b->plan;
    int ddp = pl->dp > 1 && pl->dp_mode == MT_DP_DDP && pl->comm != MT_COMM_TRACED && last_block;
    double bucket = 0;
    int32_t bucket_layer = -1;
    int32_t first_bucket_index = b->p->ddp_buckets; /* PyTorch caps the first bucket lower */
    if (s < pl->pp - 1) MT_CHECK(emit_simple(em, MT_TASK_RECV, -1, mb, 0));
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_BACKWARD || trace_op_is_comm(o) || op_stage(b, i) != s) continue;
        MT_CHECK(emit_item(b, em, i, b->op_ns[i], b->split[i], mb));
        if (pl->tp > 1) MT_CHECK(emit_tp_colls(b, em, b->bwd_anchor[i], mb, TRACE_PHASE_BACKWARD));
        if (b->tc_head) MT_CHECK(emit_traced(b, em, b->tc_head[i], mb, TRACE_PHASE_BACKWARD, last_block));
        if (ddp && b->grad_ready[i] > 0) {
            bucket += b->grad_ready[i];
            if (t->n_layers > 0 && b->unit[i] >= 0) bucket_layer = b->unit[i];
            if (bucket >= (b->p->ddp_buckets == first_bucket_index ? pl->first_bucket_bytes : pl->bucket_bytes)) {
                MT_CHECK(emit_coll(em, MT_GROUP_DP, MT_COLL_ALLREDUCE, MT_COLL_WHY_DP_GRAD, 0, bucket,
                                   bucket_layer, mb, TRACE_PHASE_BACKWARD));
                b->p->ddp_buckets++;
                bucket = 0;
            }
        }
    }
    if (ddp) {
        bucket += b->tail_grad[s];
        if (bucket > 0) {
            MT_CHECK(emit_coll(em, MT_GROUP_DP, MT_COLL_ALLREDUCE, MT_COLL_WHY_DP_GRAD, 0, bucket,
                               bucket_layer, mb, TRACE_PHASE_BACKWARD));
            b->p->ddp_buckets++;
        }
    }
    if (s > 0) MT_CHECK(emit_simple(em, MT_TASK_SEND, -1, mb, boundary[s - 1] * pl->batch_factor));
    MT_CHECK(emit_simple(em, MT_TASK_MB_END, -1, mb, 0));
    return MT_OK;
}

/* Share of an optimizer (or parameter-sized OTHER) op that stage s runs: its weights in s
 * (per rank), over all its weights; without weight inputs, the stage's parameter share. */
static double param_share(const builder *b, int32_t op, int32_t s) {
    const trace *t = b->t;
    const trace_op *o = &t->ops[op];
    double mine = 0, all = 0;
    for (int32_t j = 0; j < o->in_count + o->out_count; j++) {
        int32_t w = t->trefs[o->in_first + j].tensor;
        if (w < 0 || w >= t->n_tensors || t->tensors[w].role != TRACE_ROLE_WEIGHT || b->w_stage[w] < 0) continue;
        all += t->tensors[w].bytes;
        if (b->w_stage[w] == s) mine += t->tensors[w].bytes / b->w_split[w];
    }
    if (all > 0) return mine / all;
    if (b->total_w_bytes > 0) return b->w_stage_bytes[s] / b->total_w_bytes;
    return 1.0 / b->plan->pp;
}

static int touches_params(const trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->in_count + o->out_count; j++) {
        int r = tensor_role(t, &t->trefs[o->in_first + j]);
        if (r == TRACE_ROLE_WEIGHT || r == TRACE_ROLE_GRADIENT || r == TRACE_ROLE_OPTSTATE) return 1;
    }
    return 0;
}

/* OTHER ops before the first forward op ("pre") run on stage 0 at the start; later OTHER ops
 * and the optimizer run at the end: parameter-sized ones on every stage by share, the rest on
 * stage 0. */
static mt_status emit_other(builder *b, emitter *em, int32_t s, int pre) {
    const trace *t = b->t;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (trace_op_is_comm(o)) continue;
        int is_opt = o->phase == TRACE_PHASE_OPTIMIZER;
        if (o->phase != TRACE_PHASE_OTHER && !is_opt) continue;
        if (pre != (!is_opt && i < b->first_fwd)) continue;
        double share = is_opt || touches_params(t, o) ? param_share(b, i, s) : (s == 0 ? 1.0 : 0.0);
        if (b->tc_head && s == 0) MT_CHECK(emit_traced(b, em, b->tc_head[i], -1, o->phase, 1));
        if (share <= 0) continue;
        MT_CHECK(emit_item(b, em, i, b->op_ns[i] * share, 1, -1));
    }
    return MT_OK;
}

static mt_status boundaries(builder *b, double *boundary, double *act_mb) {
    const trace *t = b->t;
    int32_t P = b->plan->pp;
    int32_t *maxcons = malloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1) * sizeof *maxcons);
    if (!maxcons) return MT_ENOMEM;
    for (int32_t i = 0; i < t->n_tensors; i++) maxcons[i] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        int32_t s = op_stage(b, i);
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t x = t->trefs[o->in_first + j].tensor;
            if (x >= 0 && x < t->n_tensors && s > maxcons[x]) maxcons[x] = s;
        }
    }
    for (int32_t x = 0; x < t->n_tensors; x++) {
        const trace_tensor *tt = &t->tensors[x];
        if (tt->role != TRACE_ROLE_ACTIVATION || tt->first_op < 0 || tt->first_op >= t->n_ops) continue;
        int32_t f = tt->first_op;
        if (t->ops[f].phase != TRACE_PHASE_FORWARD) continue;
        int32_t ps = op_stage(b, f);
        act_mb[ps] += tt->bytes / b->split[f];
        for (int32_t s = ps; s < maxcons[x] && s < P - 1; s++) boundary[s] += tt->bytes;
    }
    free(maxcons);
    return MT_OK;
}

static mt_status build_stage(builder *b, int32_t s, const double *boundary) {
    const mt_plan *pl = b->plan;
    mt_stage_program *sp = &b->p->stages[s];
    emitter em = {sp, 0, 0};
    int32_t P = pl->pp, M = pl->micro_batches;
    if (s == 0) MT_CHECK(emit_traced(b, &em, b->tc_pre, -1, TRACE_PHASE_FORWARD, 1));
    if (s == 0) MT_CHECK(emit_other(b, &em, s, 1));
    if (pl->schedule == MT_PP_GPIPE || P == 1) {
        for (int32_t m = 0; m < M; m++) MT_CHECK(emit_forward(b, &em, s, m));
        for (int32_t m = 0; m < M; m++) MT_CHECK(emit_backward(b, &em, s, m, m == M - 1, boundary));
    } else { /* 1F1B: warm-up forwards, steady one-forward-one-backward, cool-down backwards */
        int32_t warm = P - s - 1 < M ? P - s - 1 : M;
        int32_t f = 0, bk = 0;
        for (; f < warm; f++) MT_CHECK(emit_forward(b, &em, s, f));
        while (bk < M) {
            if (f < M) MT_CHECK(emit_forward(b, &em, s, f++));
            MT_CHECK(emit_backward(b, &em, s, bk, bk == M - 1, boundary));
            bk++;
        }
    }
    if (b->sp_grad_bytes[s] > 0) /* sp: norms saw 1/T of the tokens: their gradients are partial */
        MT_CHECK(emit_coll(&em, MT_GROUP_TP, MT_COLL_ALLREDUCE, MT_COLL_WHY_TP_BWD, 1, b->sp_grad_bytes[s], -1, -1,
                           TRACE_PHASE_BACKWARD));
    if (pl->dp > 1) {
        double grads = b->w_stage_bytes[s];
        if (pl->dp_mode == MT_DP_SYNC && pl->comm != MT_COMM_TRACED) {
            if (grads > 0)
                MT_CHECK(emit_coll(&em, MT_GROUP_DP, MT_COLL_ALLREDUCE, MT_COLL_WHY_DP_GRAD, 1, grads, -1,
                                   -1, TRACE_PHASE_BACKWARD));
        } else {
            MT_CHECK(emit_simple(&em, MT_TASK_WAIT_COMM, 0, -1, 0));
        }
    }
    MT_CHECK(emit_other(b, &em, s, 0));
    sp->param_bytes = sp->grad_bytes = b->w_stage_bytes[s];
    sp->optstate_bytes = b->total_w_bytes > 0 ? b->t->optstate_bytes * b->w_stage_bytes[s] / b->total_w_bytes
                                              : b->t->optstate_bytes / P;
    return MT_OK;
}

/* The program's first warning, most important first ("" none). */
static void set_warning(mt_program *p, const mt_plan *plan, const trace *t, const tp_fit *fit) {
    if (plan->dp > 1 && t->param_bytes <= 0 && plan->comm != MT_COMM_TRACED)
        snprintf(p->warning, sizeof p->warning,
                 "the trace has no parameter sizes: data-parallel gradient all-reduces carry 0 bytes");
    else if (plan->pp > 1 && t->n_trefs == 0)
        snprintf(p->warning, sizeof p->warning,
                 "the trace has no tensor shapes: pipeline stages send 0-byte activations");
    else if (p->tp_unplaced_bwd > 0)
        snprintf(p->warning, sizeof p->warning,
                 "%d tensor-parallel backward collective%s could not be placed (backward ops not "
                 "linked to forward ops)", p->tp_unplaced_bwd, mt_plural(p->tp_unplaced_bwd));
    else if (plan->tp > 1 && p->tp_split_ops == 0)
        snprintf(p->warning, sizeof p->warning,
                 "tensor parallelism found nothing to split (no linear, convolution or embedding ops)");
    else if (plan->tp > 1 && fit->gcd == 0)
        snprintf(p->warning, sizeof p->warning,
                 "the trace records no shapes of the ops tensor parallelism splits: --tp %d is not checked against "
                 "the model's features, channels or attention heads", plan->tp);
}

mt_status mt_program_build(const trace *t, const mt_plan *plan, const mt_program_opts *o,
                           mt_program **out, mt_error *err) {
    mt_program *p = calloc(1, sizeof *p);
    builder b = {0};
    double *boundary = NULL, *act_mb = NULL;
    mt_status rc = MT_ENOMEM;
    if (!p) goto fail;
    p->plan = *plan;
    p->trace = t;
    p->n_stages = plan->pp;
    p->n_layers = t->n_layers;
    p->stages = calloc((size_t)plan->pp, sizeof *p->stages);
    b.t = t;
    b.plan = &p->plan;
    b.p = p;
    b.optime = o && o->optime ? o->optime : mt_optime_proportional;
    b.optime_ctx = o ? o->optime_ctx : NULL;
    b.one_op_per_task = o ? o->one_op_per_task : 0;
    size_t nops = (size_t)(t->n_ops > 0 ? t->n_ops : 1), nt = (size_t)(t->n_tensors > 0 ? t->n_tensors : 1);
    size_t nu = (size_t)(t->n_layers > t->n_ops ? t->n_layers : t->n_ops) + 1;
    b.unit = malloc(nops * sizeof *b.unit);
    b.stage_of_unit = calloc(nu, sizeof *b.stage_of_unit);
    b.split = malloc(nops * sizeof *b.split);
    b.seq = calloc(nops, sizeof *b.seq);
    b.sp_grad_bytes = calloc((size_t)plan->pp, sizeof *b.sp_grad_bytes);
    b.fwd_coll = malloc(nops * sizeof *b.fwd_coll);
    b.bwd_coll = malloc(nops * sizeof *b.bwd_coll);
    b.anchor = malloc(nops * sizeof *b.anchor);
    b.op_ns = malloc(nops * sizeof *b.op_ns);
    b.bwd_anchor = malloc(nops * sizeof *b.bwd_anchor);
    b.grad_ready = calloc(nops, sizeof *b.grad_ready);
    b.tail_grad = calloc((size_t)plan->pp, sizeof *b.tail_grad);
    b.w_stage_bytes = calloc((size_t)plan->pp, sizeof *b.w_stage_bytes);
    b.w_stage = malloc(nt * sizeof *b.w_stage);
    b.w_split = malloc(nt * sizeof *b.w_split);
    boundary = calloc((size_t)plan->pp, sizeof *boundary);
    act_mb = calloc((size_t)plan->pp, sizeof *act_mb);
    if (!p->stages || !b.unit || !b.stage_of_unit || !b.split || !b.seq || !b.sp_grad_bytes || !b.fwd_coll || !b.bwd_coll ||
        !b.anchor || !b.op_ns || !b.bwd_anchor || !b.grad_ready || !b.tail_grad || !b.w_stage_bytes ||
        !b.w_stage || !b.w_split || !boundary || !act_mb)
        goto fail;
    for (int32_t i = 0; i < t->n_ops; i++) b.fwd_coll[i] = b.bwd_coll[i] = -1;
    assign_units(&b);
    if (plan->pp > b.n_units) {
        rc = mt_fail(err, MT_EINVAL, "a pipeline of %d stages needs at least %d layers; the trace has %d",
                     plan->pp, plan->pp, b.n_units);
        goto fail_msg;
    }
    if ((rc = assign_stages(&b)) != MT_OK) goto fail;
    b.fit.bad_op = -1;
    if ((rc = classify_tp(&b)) == MT_EINVAL) {
        rc = tp_fit_check(&b.fit, t, plan->tp, err);
        goto fail_msg;
    }
    if (rc != MT_OK) goto fail;
    if ((rc = find_anchors(&b)) != MT_OK) goto fail;
    place_bwd_colls(&b);
    if ((rc = assign_gradients(&b)) != MT_OK) goto fail;
    b.first_fwd = t->n_ops;
    double total_ns = 0;
    for (int32_t i = t->n_ops - 1; i >= 0; i--) {
        if (t->ops[i].phase == TRACE_PHASE_FORWARD) b.first_fwd = i;
        /* once per op: the model may be costly and every micro-batch reuses it */
        b.op_ns[i] = b.optime(b.optime_ctx, t, i, p->plan.batch_factor, b.split[i]);
        total_ns += b.op_ns[i];
    }
    /* every task time below is a sum of these in int64 ps: they must be finite and add up to a
     * simulable time (a NaN became INT64_MIN ps, a huge time overflowed) */
    if (!(total_ns <= MT_TIME_MAX_NS)) {
        rc = mt_fail(err, MT_EINVAL, "the step's operators take %g s per micro-batch with this performance model, "
                     "beyond the simulator's range (1e6 s): check the model (--model), the GPU specs "
                     "(--gpu-specs) and --batch", total_ns / 1e9);
        goto fail_msg;
    }
    if ((rc = boundaries(&b, boundary, act_mb)) != MT_OK) goto fail;
    if ((rc = index_traced(&b)) != MT_OK) goto fail;
    for (int32_t s = 0; s < plan->pp; s++) {
        p->stages[s].boundary_bytes = s < plan->pp - 1 ? boundary[s] : 0;
        p->stages[s].act_bytes_per_mb = act_mb[s] * p->plan.batch_factor;
    }
    for (int32_t i = 0; i < t->n_ops; i++) p->skipped_comm_ops += trace_op_is_comm(&t->ops[i]);
    for (int32_t s = 0; s < plan->pp; s++)
        if ((rc = build_stage(&b, s, boundary)) != MT_OK) goto fail;
    set_warning(p, plan, t, &b.fit);
    rc = MT_OK;
    *out = p;
    p = NULL;
    goto done;
fail:
    if (rc == MT_ENOMEM) mt_fail(err, MT_ENOMEM, "out of memory building the task programs");
fail_msg:
done:
    mt_program_free(p);
    free(b.unit);
    free(b.stage_of_unit);
    free(b.split);
    free(b.seq);
    free(b.sp_grad_bytes);
    free(b.fwd_coll);
    free(b.bwd_coll);
    free(b.anchor);
    free(b.op_ns);
    free(b.bwd_anchor);
    free(b.grad_ready);
    free(b.tail_grad);
    free(b.w_stage_bytes);
    free(b.w_stage);
    free(b.w_split);
    free(b.colls);
    free(b.tc_head);
    free(b.tc_next);
    free(boundary);
    free(act_mb);
    return rc;
}

void mt_program_free(mt_program *p) {
    if (!p) return;
    for (int32_t s = 0; p->stages && s < p->n_stages; s++) {
        free(p->stages[s].tasks);
        free(p->stages[s].items);
    }
    free(p->stages);
    free(p);
}

/* extrapolate/pass_tp.c — the tensor-parallel pass: Megatron-style splits of a stage's ops over
 * the T ranks of its TP group, and the collectives those splits imply.
 *
 * Prepare walks the forward ops once (O(ops)), marking split ops (b->split) and attaching
 * collectives to ops: a column-parallel linear opens a region (Q, K, V on the same input stay in
 * it), the next row-parallel linear closes it with an all-reduce of its output (forward) and the
 * region's input gradient is all-reduced after the first column op's backward; a region closed by
 * anything else ends in an all-gather. Convolutions split output channels (all-gather forward,
 * input-gradient all-reduce backward), embeddings the vocabulary (all-reduce forward), by the tp
 * kind the tracer's classifier gave each op (trace_op.tp). T must divide every dimension a split
 * divides (features, output channels, attention heads, where the shapes say), else the plan is
 * refused naming the op and the largest T that fits. Backward ops inherit their forward op's
 * split (or their layer's majority). Emission: each op's collectives after it, blocking, on the
 * TP group.
 * Invariant: every collective is attached to exactly one op list (forward: after the op that
 * closes it; backward: after the anchor of the op that carries it, or counted unplaced).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/build.h"
#include "util/units.h"
#include "util/vec.h"

#define tensor_role mt_bld_tensor_role
#define tensor_bytes mt_bld_tensor_bytes

static int32_t first_activation_input(const trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->in_count; j++) {
        const trace_tref *r = &t->trefs[o->in_first + j];
        int role = tensor_role(t, r);
        if (role == TRACE_ROLE_ACTIVATION || role == TRACE_ROLE_INPUT) return r->tensor;
    }
    return -1;
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

/* 3. tensor parallelism */
typedef struct region {
    int open;
    int32_t in_tensor;      /* activation the column ops read */
    double in_bytes;
    int32_t first_col;      /* carries the backward all-reduce of the input gradient */
    int32_t last_op;        /* the all-gather goes after it when the region is closed */
    double last_out_bytes;
} region;

static mt_status close_region(mt_bld *b, tp_state *x, region *r) {
    if (!r->open) return MT_OK;
    r->open = 0;
    mt_status rc = add_pcoll(x, &x->fwd_coll[r->last_op], r->last_op, MT_COLL_ALLGATHER, r->last_out_bytes);
    if (rc == MT_OK) rc = add_pcoll(x, &x->bwd_coll[r->first_col], r->first_col, MT_COLL_ALLREDUCE, r->in_bytes);
    b->p->tp_colls_fwd++;
    b->p->tp_colls_bwd++;
    return rc;
}

/* Backward ops inherit the split of their forward op (or the majority of their layer). */
static mt_status inherit_bwd_split(mt_bld *b) {
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

static mt_status classify_tp(mt_bld *b, tp_state *x) {
    const trace *t = b->t;
    int32_t T = b->plan->tp;
    region r = {0};
    mt_status rc = MT_OK;
    for (int32_t i = 0; i < t->n_ops; i++) b->split[i] = 1;
    if (T <= 1) return MT_OK;
    for (int32_t i = 0; i < t->n_ops && rc == MT_OK; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD || trace_op_is_comm(o)) continue;
        if (o->tp == TRACE_TP_LINEAR) {
            int32_t in = first_activation_input(t, o);
            double out_b = first_output_bytes(t, o);
            b->split[i] = T;
            int col = !r.open || (in >= 0 && in == r.in_tensor);
            tp_fit_note(&x->fit, T, i, linear_features(t, o, col), col ? "output features" : "input features");
            if (r.open && in >= 0 && in == r.in_tensor) { /* another column op on the same input (Q, K, V) */
                r.last_op = i;
                r.last_out_bytes = out_b;
            } else if (r.open) { /* row-parallel: closes the pair with an all-reduce */
                r.open = 0;
                rc = add_pcoll(x, &x->fwd_coll[i], i, MT_COLL_ALLREDUCE, out_b);
                if (rc == MT_OK)
                    rc = add_pcoll(x, &x->bwd_coll[r.first_col], r.first_col, MT_COLL_ALLREDUCE, r.in_bytes);
                b->p->tp_colls_fwd++;
                b->p->tp_colls_bwd++;
            } else { /* column-parallel: opens a region */
                r.open = 1;
                r.in_tensor = in;
                r.in_bytes = tensor_bytes(t, in);
                r.first_col = r.last_op = i;
                r.last_out_bytes = out_b;
            }
        } else if (o->tp == TRACE_TP_CONV) {
            rc = close_region(b, x, &r);
            b->split[i] = T;
            tp_fit_note(&x->fit, T, i, conv_channels(t, o), "output channels");
            if (rc == MT_OK) rc = add_pcoll(x, &x->fwd_coll[i], i, MT_COLL_ALLGATHER, first_output_bytes(t, o));
            if (rc == MT_OK)
                rc = add_pcoll(x, &x->bwd_coll[i], i, MT_COLL_ALLREDUCE,
                               tensor_bytes(t, first_activation_input(t, o)));
            b->p->tp_colls_fwd++;
            b->p->tp_colls_bwd++;
        } else if (o->tp == TRACE_TP_EMBEDDING) {
            rc = close_region(b, x, &r);
            b->split[i] = T;
            if (rc == MT_OK) rc = add_pcoll(x, &x->fwd_coll[i], i, MT_COLL_ALLREDUCE, first_output_bytes(t, o));
            b->p->tp_colls_fwd++;
        } else if (o->tp == TRACE_TP_CLOSER) {
            rc = close_region(b, x, &r);
        } else if (r.open) {
            b->split[i] = T; /* inside a column region: works on 1/T of the features or heads */
            tp_fit_note(&x->fit, T, i, attention_heads(t, o), "attention heads");
            r.last_op = i;
            r.last_out_bytes = first_output_bytes(t, o);
        }
    }
    if (rc == MT_OK) rc = close_region(b, x, &r);
    if (rc != MT_OK) return rc;
    if (x->fit.bad_op >= 0) return MT_EINVAL; /* the caller says why (tp_fit_check) */
    return inherit_bwd_split(b);
}

/* Moves each forward op's backward collectives to its anchor's list. */
static void place_bwd_colls(mt_bld *b, tp_state *x) {
    const trace *t = b->t;
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
                           pc->bytes * b->plan->batch_factor, layer, mb, ph));
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
    free(x);
}

static mt_status tp_prepare(mt_bld *b, void **st, mt_error *err) {
    const trace *t = b->t;
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
    mt_status rc = classify_tp(b, x);
    if (rc == MT_EINVAL) return tp_fit_check(&x->fit, t, b->plan->tp, err);
    if (rc != MT_OK) return rc;
    place_bwd_colls(b, x);
    return MT_OK;
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
    .recompute_op = tp_recompute_op,
    .warning = tp_warning,
};

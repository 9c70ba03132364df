/* extrapolate/pass_cp.c — the context-parallel pass: every sequence split into C chunks over the
 * C ranks of a CP group (mesh dimension cp), attention as ring attention.
 *
 * Prepare (O(ops + trefs)) finds the attention cores: a scaled_dot_product_attention op, or a
 * matmul of two 4-D activations [batch, heads, sequence, head_dim] (the scores) up to the next one
 * (the context); C must divide their sequence length, else the plan is refused naming the op.
 * Every op whose work grows with the batch works on 1/C of the tokens (split and tok x C; its
 * weights stay whole, their gradients are reduced over dp x cp by the data-parallel pass). Per
 * core and micro-batch, forward: before the scores the rank's K/V block (K and V over T x C)
 * starts around the CP ring as a non-blocking ring all-gather of C blocks (each rank passes C - 1
 * blocks; under grouped-query attention the KV heads' K/V, before repeat_kv: kv_own_bytes), beside the attention blocks; after the context the rank waits for that ring only
 * (WAIT_GROUP on the CP kind, keep 0). Backward: the same around the core's backward ops, with twice the
 * bytes (the K/V blocks again and their gradients on the way back): again C - 1 sends per rank.
 * The simulator runs the ring beside the attention compute, so a core takes about the larger of
 * its compute (1/C of the traced attention) and C - 1 block transfers. Recomputation re-runs a
 * core's forward ring before its backward (per core and micro-batch: K/V once forward, once
 * recomputed, twice backward).
 * Invariant: with cp 1 the pass does nothing; every core's forward ring has one wait.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/build.h"

typedef struct cp_core {
    int32_t first, last;           /* forward ops: the scores (or the fused op) .. the context */
    int32_t bwd_first, bwd_last;   /* backward ops of the core's ops, -1 when none is linked */
    double kv_bytes;               /* K and V of the whole sequence at the traced batch, per TP rank */
} cp_core;

typedef struct cp_state {
    int kind;                      /* the CP group kind */
    cp_core *cores;
    int32_t n_cores;
    int32_t *fwd_start, *fwd_end;  /* per op: the core it starts / ends in forward, -1 */
    int32_t *bwd_start, *bwd_end;  /* per op: the core it starts / ends in backward, -1 */
} cp_state;

static double in_bytes(const mt_trace *t, const trace_op *o, int32_t k) {
    return k < o->in_count ? mt_bld_tensor_bytes(t, t->trefs[o->in_first + k].tensor) : 0;
}

/* A forward op that only reshapes, views, expands or copies its first input (a tensor's way from a
 * projection to attention: transpose, the expand + reshape of grouped-query attention's repeat_kv). */
static int shape_only(const trace_op *o) {
    static const char *const names[] = {"aten::expand", "aten::reshape", "aten::view", "aten::_unsafe_view",
                                        "aten::transpose", "aten::permute", "aten::unsqueeze", "aten::slice",
                                        "aten::clone", "aten::contiguous", "aten::repeat_interleave", "aten::alias",
                                        "aten::t", "aten::expand_as"};
    if (o->phase != TRACE_PHASE_FORWARD || o->in_count < 1 || !o->name) return 0;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (!strcmp(o->name, names[k])) return 1;
    return 0;
}

/* The bytes of K (or V), o's k-th input, as the ring passes them: its own heads. Under grouped-query
 * attention the input is the KV heads repeated heads / kv_heads times (repeat_kv: expand, reshape);
 * the ring passes the KV heads once and repeats them after (Megatron's and torchtitan's ring
 * attention). Walks back through shape-only producers (`made_by`: per tensor the forward op that
 * output it last before, -1) to the smallest tensor that the input is a whole multiple of; O(depth). */
static double kv_own_bytes(const mt_trace *t, const int32_t *made_by, const trace_op *o, int32_t k) {
    double whole = in_bytes(t, o, k), own = whole;
    int32_t x = k < o->in_count ? t->trefs[o->in_first + k].tensor : -1;
    for (int depth = 0; depth < 16 && x >= 0 && x < t->n_tensors; depth++) {
        int32_t p = made_by[x];
        if (p < 0 || !shape_only(&t->ops[p])) break;
        x = t->trefs[t->ops[p].in_first].tensor;
        double v = mt_bld_tensor_bytes(t, x);
        if (v > 0 && v < own && fabs(whole / v - floor(whole / v + 0.5)) < 1e-9) own = v;
    }
    return own;
}

static mt_status cores_of(mt_bld *b, cp_state *x, const int32_t *made_by, int32_t C, mt_error *err);

/* The cores of the forward pass, checking C against each one's sequence length. */
static mt_status find_cores(mt_bld *b, cp_state *x, mt_error *err) {
    const mt_trace *t = b->t;
    int32_t C = b->plan->cp;
    int32_t *made_by = mt_bld_producers(t);
    if (!made_by) return MT_ENOMEM;
    mt_status rc = cores_of(b, x, made_by, C, err);
    free(made_by);
    return rc;
}

static mt_status cores_of(mt_bld *b, cp_state *x, const int32_t *made_by, int32_t C, mt_error *err) {
    const mt_trace *t = b->t;
    for (int32_t i = 0; i < t->n_ops; i++) {
        int k = mt_bld_attn_core(t, &t->ops[i]);
        if (!k) continue;
        const int64_t *q = mt_bld_act4(t, &t->ops[i], 0);
        if (q[2] % C) {
            const trace_op *o = &t->ops[i];
            return mt_fail(err, MT_EINVAL, "--cp %d does not divide the sequence length %lld of op %d %s (attention on "
                           "[%lld, %lld, %lld, %lld]): context parallelism splits each sequence into %d equal chunks",
                           C, (long long)q[2], (int)i, o->name, (long long)q[0], (long long)q[1], (long long)q[2],
                           (long long)q[3], C);
        }
        cp_core c = {i, i, -1, -1, 0};
        if (k == 1) {
            c.kv_bytes = kv_own_bytes(t, made_by, &t->ops[i], 1) + kv_own_bytes(t, made_by, &t->ops[i], 2);
        } else { /* the scores' second input is K; the context is the next such matmul, V its second */
            int32_t j = i + 1;
            while (j < t->n_ops && mt_bld_attn_core(t, &t->ops[j]) != 2) j++;
            if (j >= t->n_ops) continue;
            c.last = j;
            c.kv_bytes = kv_own_bytes(t, made_by, &t->ops[i], 1) + kv_own_bytes(t, made_by, &t->ops[j], 1);
            i = j;
        }
        c.kv_bytes /= b->split[c.first] > 0 ? b->split[c.first] : 1; /* a TP rank holds its heads */
        cp_core *grown = realloc(x->cores, (size_t)(x->n_cores + 1) * sizeof *grown);
        if (!grown) return MT_ENOMEM;
        x->cores = grown;
        x->cores[x->n_cores++] = c;
    }
    if (x->n_cores == 0)
        return mt_fail(err, MT_EINVAL, "--cp %d needs attention to split by sequence: the trace has none (no "
                       "scaled_dot_product_attention, no matmul of two 4-D [batch, heads, sequence, head_dim] "
                       "activations)", C);
    return MT_OK;
}

/* Where each core's rings start and end, forward and backward. */
static mt_status index_cores(mt_bld *b, cp_state *x) {
    const mt_trace *t = b->t;
    size_t n = (size_t)(t->n_ops > 0 ? t->n_ops : 1);
    x->fwd_start = malloc(n * sizeof *x->fwd_start);
    x->fwd_end = malloc(n * sizeof *x->fwd_end);
    x->bwd_start = malloc(n * sizeof *x->bwd_start);
    x->bwd_end = malloc(n * sizeof *x->bwd_end);
    if (!x->fwd_start || !x->fwd_end || !x->bwd_start || !x->bwd_end) return MT_ENOMEM;
    for (int32_t i = 0; i < t->n_ops; i++) x->fwd_start[i] = x->fwd_end[i] = x->bwd_start[i] = x->bwd_end[i] = -1;
    for (int32_t c = 0; c < x->n_cores; c++) {
        cp_core *k = &x->cores[c];
        x->fwd_start[k->first] = x->fwd_end[k->last] = c;
        for (int32_t i = 0; i < t->n_ops; i++) { /* backward ops of the core's forward ops */
            const trace_op *o = &t->ops[i];
            if (o->phase != TRACE_PHASE_BACKWARD || o->fwd_op < k->first || o->fwd_op > k->last) continue;
            if (k->bwd_first < 0) k->bwd_first = i;
            k->bwd_last = i;
        }
        if (k->bwd_first < 0) k->bwd_first = k->bwd_last = b->anchor[k->first]; /* not linked: its anchor */
        if (k->bwd_first < 0) continue;
        x->bwd_start[k->bwd_first] = x->bwd_end[k->bwd_last] = c;
    }
    return MT_OK;
}

static void cp_release(void *st) {
    cp_state *x = st;
    if (!x) return;
    free(x->cores);
    free(x->fwd_start);
    free(x->fwd_end);
    free(x->bwd_start);
    free(x->bwd_end);
    free(x);
}

static mt_status cp_prepare(mt_bld *b, void **st, mt_error *err) {
    const mt_trace *t = b->t;
    int32_t C = b->plan->cp;
    *st = NULL;
    if (C <= 1) return MT_OK;
    cp_state *x = calloc(1, sizeof *x);
    *st = x;
    if (!x) return MT_ENOMEM;
    x->kind = mt_groups_add(&b->p->groups, MT_DIM_BIT(MT_DIM_CP), 0, "cp");
    if (x->kind < 0) return mt_fail(err, MT_EINVAL, "--cp: the plan has too many group kinds (at most %d)",
                                    MT_GROUP_KINDS_MAX);
    MT_CHECK(find_cores(b, x, err));
    MT_CHECK(index_cores(b, x));
    for (int32_t i = 0; i < t->n_ops; i++) /* per-token work: 1/C of the tokens */
        if (t->ops[i].batch_dep && !trace_op_is_comm(&t->ops[i])) {
            b->split[i] *= C;
            b->tok[i] *= C;
        }
    return MT_OK;
}

static mt_status cp_before_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    cp_state *x = st;
    if (!x) return MT_OK;
    int fwd = b->t->ops[op].phase == TRACE_PHASE_FORWARD;
    int32_t c = fwd ? x->fwd_start[op] : x->bwd_start[op];
    if (c < 0) return MT_OK;
    b->p->cp_rings++;
    /* the ring all-gather of C blocks of K/V / (T x C): each rank passes C - 1 of them */
    double bytes = x->cores[c].kv_bytes * (fwd ? 1 : 2) * b->plan->batch_factor;
    return mt_emit_coll(em, x->kind, MT_COLL_ALLGATHER, fwd ? MT_COLL_WHY_CP_FWD : MT_COLL_WHY_CP_BWD, 0, bytes,
                        mt_bld_layer(b, x->cores[c].first), mb, fwd ? TRACE_PHASE_FORWARD : TRACE_PHASE_BACKWARD);
}

static mt_status cp_after_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    cp_state *x = st;
    if (!x) return MT_OK;
    int32_t c = b->t->ops[op].phase == TRACE_PHASE_FORWARD ? x->fwd_end[op] : x->bwd_end[op];
    if (c < 0) return MT_OK;
    mt_task *k = mt_emit_task(em, MT_TASK_WAIT_GROUP);
    if (!k) return MT_ENOMEM;
    k->group = x->kind; /* only the CP ring: DDP buckets in flight do not hold it */
    k->keep = 0;
    k->mb = mb;
    return MT_OK;
}

/* A forward op re-run in backward (recomputation): a core's recomputed attention needs the whole
 * sequence's K/V again, so its forward ring runs again (after the scores' op is re-issued) and is
 * waited for after the context. */
static mt_status cp_recompute_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb) {
    cp_state *x = st;
    if (!x) return MT_OK;
    int32_t c = x->fwd_start[op];
    if (c >= 0) {
        b->p->cp_rings++;
        MT_CHECK(mt_emit_coll(em, x->kind, MT_COLL_ALLGATHER, MT_COLL_WHY_CP_FWD, 0,
                              x->cores[c].kv_bytes * b->plan->batch_factor, mt_bld_layer(b, op), mb, TRACE_PHASE_BACKWARD));
    }
    if (x->fwd_end[op] < 0) return MT_OK;
    mt_task *k = mt_emit_task(em, MT_TASK_WAIT_GROUP);
    if (!k) return MT_ENOMEM;
    k->group = x->kind;
    k->keep = 0;
    k->mb = mb;
    return MT_OK;
}

const mt_pass mt_pass_cp = {
    .name = "cp",
    .idle_without_state = 1, /* its hooks return at once without its state */
    .prepare = cp_prepare,
    .release = cp_release,
    .before_op = cp_before_op,
    .after_op = cp_after_op,
    .recompute_op = cp_recompute_op,
};

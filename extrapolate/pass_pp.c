/* extrapolate/pass_pp.c — the pipeline pass: P stages, each running its micro-batches in the plan's
 * schedule, activations sent forward and their gradients back at the stage boundaries.
 *   gpipe        every forward, then every backward;
 *   1f1b         stage s runs min(P - s - 1, M) warm-up forwards, then one forward and one backward
 *                in turn, then the remaining backwards; without a pipeline (P = 1) this is gradient
 *                accumulation as PyTorch and Megatron run it: each micro-batch's forward then its
 *                backward, one micro-batch's activations live (the DP pass reduces gradients in the
 *                last micro-batch's backward only: DDP's no_sync on the others);
 *   interleaved  (--vpp V > 1, Megatron's virtual pipeline) the layers are cut into P x V model
 *                chunks, chunk c on stage c mod P; a stage runs M x V (chunk, micro-batch) passes:
 *                forward k is micro-batch (k div PV) x P + k mod P of its chunk (k mod PV) div P,
 *                backward k the same micro-batch of chunk V - 1 - (k mod PV) div P (micro-batches
 *                in groups of P, M a multiple of P); min(2 (P - s - 1) + (V - 1) P, MV) warm-up
 *                forwards, then one forward and one backward in turn, then the remaining backwards
 *                (Megatron's forward_backward_pipelining_with_interleaving). On uniform stages with
 *                free transfers the step is (M + (P - 1) / V) x (F + B) against 1F1B's
 *                (M + P - 1) x (F + B): the bubble (P - 1) / (V M) of the ideal M (F + B).
 * A forward pass of model chunk c > 0 first receives its activations (RECV +1) and one of chunk
 * c < PV - 1 ends by sending them on (SEND +1) to chunk c + 1 (the last stage to stage 0, mt_pp_peer);
 * backward mirrors it (RECV -1, SEND -1). Without --vpp a chunk is a stage.
 * Boundary bytes: an activation produced by a forward op of chunk a and read by one of chunk c > a
 * crosses every boundary a .. c-1 (O(tensors + trefs)), each GPU sending what it holds of it (its
 * producer's split: 1/C of the tokens under context parallelism, 1/T of them under sequence
 * parallelism — Megatron's sequence-parallel pipeline sends the scattered tensor — or its 1/T of
 * the heads or columns inside a tensor-parallel region). Kept bytes: the activations
 * backward reads (acts.h), on the stage of the op that made them, split as that op is.
 * Tied weights (an input embedding the LM head reads again, Megatron's shared word embeddings):
 * a weight read by forward ops of the first and of the last stage is held by both; after the last
 * backward micro-batch the two copies' gradients are all-reduced between those two stages' ranks
 * (an "emb" group kind of the first and last pipeline coordinates). The last stage holds its copy as
 * its own weight (the core's w_copy): in its memory, its data-parallel buckets (the replicas of the
 * last stage reduce it too, as Megatron's DDP does before the embedding all-reduce) and its ZeRO /
 * FSDP shards.
 * Invariant: every stage emits each (chunk, micro-batch)'s forward before its backward, exactly once.
 */
#include <stdio.h>
#include <stdlib.h>

#include "extrapolate/build.h"

void mt_pp_peer(const mt_plan *p, int32_t s, int32_t v, int dir, int32_t *peer_s, int32_t *peer_v) {
    int32_t P = p->pp > 0 ? p->pp : 1;
    int32_t c = v * P + s + (dir > 0 ? 1 : -1); /* the peer model chunk */
    *peer_s = (c % P + P) % P;
    *peer_v = c >= 0 ? c / P : -1;
}

/* Interleaved 1F1B (--vpp V > 1) on stage s. */
static mt_status emit_interleaved(mt_bld *b, mt_emit *em, int32_t s) {
    const mt_plan *pl = b->plan;
    int32_t P = pl->pp, V = pl->vpp, M = pl->micro_batches, total = M * V, PV = P * V;
    int32_t warm = 2 * (P - s - 1) + (V - 1) * P;
    if (warm > total) warm = total;
#define IL_MB(k) ((k) / PV * P + (k) % P)
#define IL_FWD(k) (((k) % PV) / P * P + s)
#define IL_BWD(k) ((V - 1 - ((k) % PV) / P) * P + s)
    int32_t f = 0;
    for (; f < warm; f++) MT_CHECK(mt_bld_forward(b, em, IL_FWD(f), IL_MB(f)));
    for (int32_t k = 0; k < total; k++) {
        if (f < total) {
            MT_CHECK(mt_bld_forward(b, em, IL_FWD(f), IL_MB(f)));
            f++;
        }
        MT_CHECK(mt_bld_backward(b, em, IL_BWD(k), IL_MB(k), IL_MB(k) == M - 1)); /* a chunk's last */
    }
#undef IL_MB
#undef IL_FWD
#undef IL_BWD
    return MT_OK;
}

mt_status mt_pp_emit_stage(mt_bld *b, mt_emit *em, int32_t s) {
    const mt_plan *pl = b->plan;
    int32_t P = pl->pp, M = pl->micro_batches;
    if (pl->vpp > 1 && P > 1) return emit_interleaved(b, em, s);
    if (pl->schedule == MT_PP_GPIPE) {
        for (int32_t m = 0; m < M; m++) MT_CHECK(mt_bld_forward(b, em, s, m));
        for (int32_t m = 0; m < M; m++) MT_CHECK(mt_bld_backward(b, em, s, m, m == M - 1));
        return MT_OK;
    }
    /* 1F1B: warm-up forwards, steady one-forward-one-backward, cool-down backwards */
    int32_t warm = P - s - 1 < M ? P - s - 1 : M;
    int32_t f = 0, bk = 0;
    for (; f < warm; f++) MT_CHECK(mt_bld_forward(b, em, s, f));
    while (bk < M) {
        if (f < M) MT_CHECK(mt_bld_forward(b, em, s, f++));
        MT_CHECK(mt_bld_backward(b, em, s, bk, bk == M - 1));
        bk++;
    }
    return MT_OK;
}

mt_status mt_pp_boundaries(mt_bld *b) {
    const mt_trace *t = b->t;
    int32_t C = b->plan->pp * (b->plan->vpp > 1 ? b->plan->vpp : 1); /* model chunks */
    int32_t *maxcons = malloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1) * sizeof *maxcons);
    unsigned char *bfree = mt_stages_batch_free(t); /* each stage makes its own (stages.h) */
    if (!maxcons || !bfree) {
        free(maxcons);
        free(bfree);
        return MT_ENOMEM;
    }
    for (int32_t i = 0; i < t->n_tensors; i++) maxcons[i] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        int32_t s = mt_bld_op_chunk(b, i);
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t x = t->trefs[o->in_first + j].tensor;
            if (x >= 0 && x < t->n_tensors && s > maxcons[x]) maxcons[x] = s;
        }
    }
    for (int32_t x = 0; x < t->n_tensors; x++) {
        const trace_tensor *tt = &t->tensors[x];
        if (tt->role != TRACE_ROLE_ACTIVATION || tt->first_op < 0 || tt->first_op >= t->n_ops || bfree[x]) continue;
        int32_t f = tt->first_op;
        if (t->ops[f].phase != TRACE_PHASE_FORWARD) continue;
        int32_t ps = mt_bld_op_chunk(b, f);
        double sent = tt->bytes / b->split[f]; /* what this GPU holds of it: its tokens (1/C under CP, 1/T
                                               * under SP) or its heads/columns under TP */
        for (int32_t s = ps; s < maxcons[x] && s < C - 1; s++) b->boundary[s] += sent;
    }
    for (int32_t k = 0; k < b->n_acts; k++) /* kept for backward (acts.h), per rank */
        b->act_mb[mt_bld_op_stage(b, b->acts[k].op)] += b->acts[k].bytes / b->split[b->acts[k].op];
    free(maxcons);
    free(bfree);
    return MT_OK;
}

/* A pipeline task of the chunk being emitted (b->chunk), marked with its chunk on this GPU. */
static mt_status pp_task(mt_bld *b, mt_emit *em, mt_task_kind kind, int dir, int32_t mb, double bytes) {
    MT_CHECK(mt_emit_simple(em, kind, dir, mb, bytes));
    em->sp->tasks[em->sp->n_tasks - 1].chunk = b->chunk / b->plan->pp;
    return MT_OK;
}

static mt_status pp_mb_begin(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last) {
    (void)st;
    (void)s;
    (void)last;
    int32_t c = b->chunk, C = b->plan->pp * b->plan->vpp;
    if (dir > 0 ? c > 0 : c < C - 1) return pp_task(b, em, MT_TASK_RECV, dir, mb, 0);
    return MT_OK;
}

static mt_status pp_mb_end(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last) {
    (void)st;
    (void)s;
    (void)last;
    const mt_plan *pl = b->plan;
    int32_t c = b->chunk, C = pl->pp * pl->vpp;
    if (dir > 0 && c < C - 1) return pp_task(b, em, MT_TASK_SEND, +1, mb, b->boundary[c] * pl->batch_factor);
    if (dir < 0 && c > 0) return pp_task(b, em, MT_TASK_SEND, -1, mb, b->boundary[c - 1] * pl->batch_factor);
    return MT_OK;
}

typedef struct pp_state {
    int kind;                   /* the embedding group kind, -1 none */
    double tied_bytes;          /* per GPU: gradients of weights read on the first and last stage */
} pp_state;

static void pp_release(void *st) { free(st); }

/* The weights read by forward ops of both the first and the last stage (the core's copies:
 * w_copy), per GPU as split by their first reader; O(tensors). */
static mt_status pp_analyse(mt_bld *b, void *st, mt_error *err) {
    pp_state *x = st;
    const mt_trace *t = b->t;
    int32_t P = b->plan->pp;
    if (P < 2) return MT_OK;
    for (int32_t w = 0; w < t->n_tensors; w++)
        if (b->w_stage[w] == 0 && b->w_copy[w] == P - 1) x->tied_bytes += t->tensors[w].bytes / b->w_split[w] / b->w_own[w];
    if (x->tied_bytes <= 0) return MT_OK;
    x->kind = mt_groups_add_ends(&b->p->groups, MT_DIM_PP, "emb");
    return x->kind >= 0 ? MT_OK : mt_fail(err, MT_EINVAL, "too many communication group kinds in one plan (at most %d)",
                                          MT_GROUP_KINDS_MAX);
}

static mt_status pp_prepare(mt_bld *b, void **st, mt_error *err) {
    (void)b;
    (void)err;
    pp_state *x = calloc(1, sizeof *x);
    *st = x;
    if (!x) return MT_ENOMEM;
    x->kind = -1;
    return MT_OK;
}

static mt_status pp_backward_done(mt_bld *b, void *st, mt_emit *em, int32_t s) {
    pp_state *x = st;
    if (x->kind < 0 || (s != 0 && s != b->plan->pp - 1)) return MT_OK;
    b->p->tied_syncs++;
    return mt_emit_coll(em, x->kind, MT_COLL_ALLREDUCE, MT_COLL_WHY_DP_GRAD, 1, x->tied_bytes, -1, -1,
                        TRACE_PHASE_BACKWARD);
}

static int pp_warning(mt_bld *b, void *st, char *buf, int len) {
    (void)st;
    if (b->plan->pp > 1 && b->t->n_trefs == 0) {
        snprintf(buf, (size_t)len, "the trace has no tensor shapes: pipeline stages send 0-byte activations");
        return 4;
    }
    if (b->plan->pp > 1 && b->p->stage_cut.why_time[0]) { /* --pp-cut auto fell back to the time-balanced cut */
        snprintf(buf, (size_t)len, "pipeline cut time-balanced: %s", b->p->stage_cut.why_time);
        return 2;
    }
    return 0;
}

const mt_pass mt_pass_pp = {
    .name = "pp",
    .prepare = pp_prepare,
    .release = pp_release,
    .analyse = pp_analyse,
    .backward_done = pp_backward_done,
    .mb_begin = pp_mb_begin,
    .mb_end = pp_mb_end,
    .warning = pp_warning,
};

/* extrapolate/pass_ep.c — the expert-parallel pass: the trace's MoE layers (moe.h) with their
 * experts split over the EP group (mesh dimension ep, group kind "ep").
 * Per micro-batch and MoE layer: a blocking all-to-all before the experts' first forward op (tokens
 * dispatched to their experts' ranks) and after their last (combined back); in backward the same two
 * in reverse (the combine's gradient before the experts' first backward op, the dispatch's after the
 * last). Each carries the layer's routed rows x hidden x dtype at the micro-batch (dropped tokens
 * excluded); a rank sends every other rank its share of its tokens (sim/ splits the bytes by the
 * layer's rank_share: the rank of a hot expert receives more). Every GPU runs the program's expert
 * ops scaled by mt_moe_op_factor for its EP rank (COMPUTE tasks flagged moe): only its experts, each
 * for the tokens all ranks routed to it.
 * Gradients: the experts' are taken out of the data-parallel buckets (the core's grad_ready) and
 * all-reduced per MoE layer, once its last backward micro-batch is done, over the expert-data-parallel
 * group "edp" (dp_shard x dp_rep: the replicas of the same experts); dense ones stay with pass_dp's
 * DDP buckets, whose DP group spans ep x dp (group.c). A GPU's weights, memory and optimizer share
 * count its E / ep experts (statemem.h's ep class). --ep with --tp is Megatron-Core's expert tensor
 * parallelism (token_dispatcher.py's MoEAlltoAllTokenDispatcher) with the expert-TP size S (--etp, T by
 * default as Megatron's expert_tensor_parallel_size; S divides T): it needs --sp as Megatron does; each rank
 * dispatches its own 1/T of the tokens (all-to-all bytes / T), the expert-TP group (S consecutive TP ranks:
 * the TP group when S = T) all-gathers what its EP ranks received, S/T of the replica's routed rows, before
 * the experts and reduce-scatters their outputs after (etp()), an expert's weights are split S ways
 * (pass_tp.c: 1/(E/ep experts x S) of them per GPU), the router stays whole, running on the rank's tokens.
 * Expert gradients reduce over Megatron's expert-data-parallel group: the replicas x the T/S TP ranks at the
 * same expert-TP slot (a strided kind, group.h), T x D / S ranks. With --expert-skew and no --ep the load
 * changes the expert ops' time on one GPU only.
 * Invariant: per MoE layer and micro-batch, 2 all-to-alls in each direction when ep > 1 (and under S > 1 one
 * all-gather and one reduce-scatter of S/T of the routed rows on the expert-TP group in each direction); each
 * expert gradient byte is all-reduced once, on edp, and never in a DP bucket.
 */
#include <stdio.h>
#include <stdlib.h>

#include "extrapolate/build.h"
#include "extrapolate/moe.h"

typedef struct ep_state {
    mt_moe *moe;             /* owned by the program once prepared */
    int ep_kind, edp_kind, etp_kind; /* etp_kind: the expert-TP group (MT_GROUP_TP when S = T) */
    int32_t edp_size;        /* ranks of an edp group: D x T / S */
    double *pending;         /* per MoE layer: expert gradient bytes per GPU taken from the buckets */
} ep_state;

/* statemem.h's ep class: an expert's weights (those its forward ops read) are split over the EP
 * group: a GPU holds E / ep of the E experts, of which the trace holds `local`. */
static void mark_expert_weights(mt_bld *b, const mt_moe *m) {
    const mt_trace *t = b->t;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (m->op_expert[i] < 0 || o->phase != TRACE_PHASE_FORWARD) continue;
        const mt_moe_layer *L = &m->l[m->op_moe[i]];
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t w = t->trefs[o->in_first + j].tensor;
            if (w >= 0 && w < t->n_tensors && t->tensors[w].role == TRACE_ROLE_WEIGHT)
                b->w_own[w] = (double)m->ep * L->local / L->experts;
        }
    }
}

static mt_status ep_prepare(mt_bld *b, void **st, mt_error *err) {
    const mt_plan *pl = b->plan;
    *st = NULL;
    if (pl->ep <= 1 && pl->expert_skew < 0) return MT_OK;
    if (pl->ep > 1 && pl->dp_mode == MT_DP_SYNC)
        return mt_fail(err, MT_EINVAL, "--ep synchronises the dense gradients as DDP does, not --strategy dp "
                       "(DataParallel's one all-reduce): drop --strategy dp");
    if (pl->ep > 1 && (pl->zero || pl->fsdp))
        return mt_fail(err, MT_EINVAL, "--ep with --zero or --fsdp is not modelled (expert parallelism uses DDP "
                       "for the dense parameters)");
    if (pl->ep > 1 && pl->tp > 1 && !pl->sp)
        return mt_fail(err, MT_EINVAL, "--ep with --tp needs --sp: Megatron-Core requires sequence parallelism when "
                       "expert and tensor parallelism are combined (each rank routes its own 1/T of the tokens)");
    if (pl->ep > 1 && pl->cp > 1)
        return mt_fail(err, MT_EINVAL, "--ep with --cp is not modelled (the dense gradients would reduce over "
                       "dp x cp x ep): drop one of them");
    if (pl->ep > 1 && pl->comm == MT_COMM_TRACED)
        return mt_fail(err, MT_EINVAL, "--ep regenerates the expert all-to-alls; the trace's own are kept (--comm "
                       "traced, a multi-rank trace's default): add --comm regenerate");
    ep_state *x = calloc(1, sizeof *x); /* its moe belongs to the program (mt_program_free) */
    *st = x;
    if (!x) return MT_ENOMEM;
    MT_CHECK(mt_moe_find(b->t, &x->moe, err));
    if (!x->moe)
        return mt_fail(err, MT_EINVAL, "%s needs a trace with mixture-of-experts layers (a router linear to E logits "
                       "and a topk/max/argmax/sort, then E experts or a matmul over stacked [E, ...] weights); none "
                       "found: `mitosis inspect` says why; name the experts with record_function(\"mitosis.expert\") "
                       "or --moe-pattern GLOB", pl->ep > 1 ? "--ep" : "--expert-skew");
    b->p->moe = x->moe;
    MT_CHECK(mt_moe_plan(x->moe, pl->ep > 1 ? pl->ep : 1, pl->expert_skew, pl->expert_seed, err));
    x->pending = calloc((size_t)x->moe->n_layers, sizeof *x->pending);
    if (!x->pending) return MT_ENOMEM;
    if (pl->ep > 1) mark_expert_weights(b, x->moe);
    if (pl->ep > 1 && pl->tp > 1) MT_CHECK(mt_moe_spans(x->moe, b->t)); /* pass_tp.c splits the experts */
    x->ep_kind = mt_groups_add(&b->p->groups, MT_DIM_BIT(MT_DIM_EP), 0, "ep");
    int32_t S = mt_plan_etp(pl);
    x->edp_size = pl->dp * pl->tp / S;
    if (S == pl->tp) {
        x->etp_kind = MT_GROUP_TP;
        x->edp_kind = mt_groups_add(&b->p->groups, MT_DIMS_DP, 0, "edp");
    } else { /* S consecutive TP ranks; the TP ranks at the same slot of theirs, x the replicas */
        x->etp_kind = S > 1 ? mt_groups_add(&b->p->groups, MT_DIM_BIT(MT_DIM_TP), S, "etp") : MT_GROUP_TP;
        x->edp_kind = mt_groups_add_strided(&b->p->groups, MT_DIMS_DP | MT_DIM_BIT(MT_DIM_TP), S, "edp");
    }
    if (x->ep_kind < 0 || x->edp_kind < 0 || x->etp_kind < 0)
        return mt_fail(err, MT_EINVAL, "too many communication group kinds in one plan (at most %d)",
                       MT_GROUP_KINDS_MAX);
    return MT_OK;
}

static void ep_release(void *st) {
    ep_state *x = st;
    if (!x) return;
    free(x->pending);
    free(x);
}

/* Experts' gradients leave the DP buckets: each GPU's share of them (the core counted its experts
 * only: statemem.h) is all-reduced on edp. */
static mt_status ep_analyse(mt_bld *b, void *st, mt_error *err) {
    ep_state *x = st;
    if (!x) return MT_OK;
    const mt_moe *m = x->moe;
    for (int32_t k = 0; k < m->n_layers; k++) { /* the all-to-alls pair up inside one model chunk */
        const mt_moe_layer *L = &m->l[k];
        int32_t c0 = mt_bld_op_chunk(b, L->router), c1 = mt_bld_op_chunk(b, L->last_fwd);
        if (b->plan->pp > 1 && (c0 != c1 || mt_bld_op_chunk(b, L->first_fwd) != c0))
            return mt_fail(err, MT_EINVAL, "--pp %d --vpp %d cuts MoE layer %d (router op %d .. experts' last op %d) "
                           "between model chunks %d and %d: a pipeline cut inside a MoE layer is not modelled; choose "
                           "another --pp or --vpp", b->plan->pp, b->plan->vpp, (int)k, (int)L->router, (int)L->last_fwd,
                           (int)c0, (int)c1);
    }
    for (int32_t i = 0; i < b->t->n_ops; i++) {
        if (m->op_moe[i] < 0 || b->t->ops[i].phase != TRACE_PHASE_BACKWARD || b->grad_ready[i] <= 0) continue;
        x->pending[m->op_moe[i]] += b->grad_ready[i];
        b->grad_ready[i] = 0;
    }
    return MT_OK;
}

/* The routed rows' bytes of MoE layer k at the micro-batch (one replica's tokens). */
static double routed_bytes(const mt_bld *b, const mt_moe_layer *L) {
    return L->routed * L->hidden * L->itemsize * b->plan->batch_factor;
}

/* An all-to-all of layer k over the EP group: a rank's own tokens, 1/T of the replica's under --tp (--sp). */
static mt_status a2a(mt_bld *b, ep_state *x, mt_emit *em, int32_t k, int combine, int32_t op, int32_t mb) {
    const mt_moe_layer *L = &x->moe->l[k];
    double bytes = routed_bytes(b, L) / b->plan->tp;
    int32_t layer = mt_bld_layer(b, op);
    trace_phase ph = (trace_phase)b->t->ops[op].phase;
    MT_CHECK(mt_emit_coll(em, x->ep_kind, MT_COLL_ALLTOALL, MT_COLL_WHY_EP, 1, bytes, layer, mb, ph));
    mt_task *t = &em->sp->tasks[em->sp->n_tasks - 1];
    t->moe = (int8_t)(combine ? 2 : 1);
    t->moe_layer = k;
    return MT_OK;
}

/* Expert tensor parallelism (S = --etp > 1): after a dispatch the expert-TP group all-gathers the tokens its
 * ranks received, so each rank's 1/S of the experts' weights sees all of them; before a combine the experts'
 * partial outputs are reduce-scattered back (Megatron-Core's MoE token dispatcher). In backward, the same in
 * reverse order. Bytes: the gathered tensor, S ranks' 1/T of the replica's routed rows. */
static mt_status etp(mt_bld *b, ep_state *x, mt_emit *em, const mt_moe_layer *L, mt_coll_op c, int32_t op, int32_t mb) {
    int32_t S = mt_plan_etp(b->plan);
    if (S <= 1) return MT_OK;
    trace_phase ph = (trace_phase)b->t->ops[op].phase;
    return mt_emit_coll(em, x->etp_kind, c, ph == TRACE_PHASE_FORWARD ? MT_COLL_WHY_TP_FWD : MT_COLL_WHY_TP_BWD, 1,
                        routed_bytes(b, L) * S / b->plan->tp, mt_bld_layer(b, op), mb, ph);
}

static mt_status ep_before_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    ep_state *x = st;
    if (!x || b->plan->ep <= 1 || x->moe->op_moe[op] < 0) return MT_OK;
    const mt_moe_layer *L = &x->moe->l[x->moe->op_moe[op]];
    if (op != L->first_fwd && op != L->first_bwd) return MT_OK;
    MT_CHECK(a2a(b, x, em, x->moe->op_moe[op], op == L->first_bwd, op, mb)); /* dispatch, or the combine's gradient */
    return etp(b, x, em, L, MT_COLL_ALLGATHER, op, mb);
}

static mt_status ep_after_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    ep_state *x = st;
    if (!x || x->moe->op_moe[op] < 0) return MT_OK;
    int32_t k = x->moe->op_moe[op];
    const mt_moe_layer *L = &x->moe->l[k];
    mt_task *t = em->sp->n_tasks > 0 ? &em->sp->tasks[em->sp->n_tasks - 1] : NULL;
    if (t && t->kind == MT_TASK_COMPUTE) t->moe = 1; /* its time depends on the EP rank */
    if (b->plan->ep <= 1) return MT_OK;
    if (op != L->last_fwd && op != L->last_bwd) return MT_OK;
    MT_CHECK(etp(b, x, em, L, MT_COLL_REDUCESCATTER, op, mb));
    MT_CHECK(a2a(b, x, em, k, op == L->last_fwd, op, mb)); /* the combine, or the dispatch's gradient */
    if (op == L->last_fwd) return MT_OK;
    if (!last || x->pending[k] <= 0 || x->edp_size <= 1) return MT_OK;
    return mt_emit_coll(em, x->edp_kind, MT_COLL_ALLREDUCE, MT_COLL_WHY_EP_GRAD, 0, x->pending[k], mt_bld_layer(b, op),
                        mb, TRACE_PHASE_BACKWARD);
}

static int ep_warning(mt_bld *b, void *st, char *buf, int len) {
    ep_state *x = st;
    if (!x || x->moe->rank_max < 1.5 || x->moe->ep < 2) return 0;
    (void)b;
    snprintf(buf, (size_t)len, "expert %d of MoE layer %d takes %.0f %% of its tokens: EP rank %d computes %.1fx an "
             "even rank's expert work (the straggler)", x->moe->hot_expert, x->moe->hot_layer, 100 * x->moe->hot_share,
             x->moe->hot_rank, x->moe->rank_max);
    return 3;
}

const mt_pass mt_pass_ep = {
    .name = "ep",
    .idle_without_state = 1, /* its hooks return at once without its state */
    .prepare = ep_prepare,
    .release = ep_release,
    .analyse = ep_analyse,
    .before_op = ep_before_op,
    .after_op = ep_after_op,
    .warning = ep_warning,
};

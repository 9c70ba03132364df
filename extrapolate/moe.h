/* extrapolate/moe.h — mixture-of-experts layers found in a one-GPU trace, and how a plan's expert
 * parallelism spreads their work.
 *
 * A MoE layer in a trace (docs/recognition.md), found from ops and tensors with no model names:
 *  - router: a forward linear to E logits followed within 8 ops by a selection over them
 *    (mt_opclass_select_k: topk -> k, max/argmax/sort -> 1), softmax or not in between;
 *  - looped experts (moe-tiny, Mixtral, DeepSeek): the forward linears after it repeat their weight
 *    shapes E times, m linears per expert (1..4); an expert's input rows are the tokens routed to it
 *    (index/index_select/boolean masks), capacity-dropped ones not there;
 *  - batched experts (GShard/Mesh-TF einsum, Llama-4, grouped GEMM): matmuls over a stacked 3-D weight
 *    [E, ...] after the router, before the next dense linear; every expert takes the buffer's rows
 *    (E x capacity, padding included), so shares are even;
 *  - shared experts (DeepSeekMoE, Qwen2-MoE): forward linears reading the router's input storage,
 *    dense and replicated; their count = their width / a routed expert's;
 *  - named experts: ops inside record_function("mitosis.expert...") annotations, or whose annotation
 *    or nn.Module path matches the trace's expert_pattern (--moe-pattern) form experts, one per
 *    annotation instance or module; consecutive experts form one layer until a weight-reading op
 *    outside them. When any op is named, the heuristics above are not used. Their router is the
 *    linear to E logits right before them, if any (else none: top-k = rows / tokens).
 * An expert's ops are the ops of the trace layers its linears belong to (forward and backward), or
 * the linears alone in a trace without layers. A rank of an expert-parallel job (collect.py --dist moe) runs E / w experts
 * after a router of E logits: found the same way; its all-to-alls are the traced plan's, regenerated
 * for the new plan (plan comm regenerate), and the routed rows of its experts stand for one GPU's.
 * Expert parallelism over ep ranks (mt_moe_plan): expert e of a layer lives on EP rank
 * e / (E / ep). Every rank routes its own tokens; rank j receives the tokens routed to its experts
 * from every rank: with shares f_e (sum 1 per layer), ep x sum of its experts' f_e times the tokens
 * one GPU routed. Experts have the same shapes, so a token costs the same in any of them: rank j runs
 * the layer's traced expert ops (all experts' together) scaled by ep x rank_share[j] (1 when even),
 * which also averages out the noise of single expert ops' traced times. The shares are the
 * traced ones (input rows of each expert's first linear), or Zipf(skew) over a seeded permutation
 * of the experts, the same in every layer, when a skew is given (0: uniform). Dispatched bytes per rank and MoE layer: the
 * routed rows x hidden x dtype, i.e. tokens x k x hidden x dtype less the dropped tokens.
 * Invariant: op_moe[i] >= 0 iff op_expert[i] >= 0; load and rank_share sum to 1 per layer.
 * Cost: O(ops + trefs) to find, O(layers x E) to plan.
 */
#ifndef MT_EXTRAPOLATE_MOE_H
#define MT_EXTRAPOLATE_MOE_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/trace.h"
#include "util/err.h"

#define MT_MOE_MAX_EXPERTS 4096

typedef struct mt_moe_layer {
    int32_t router;          /* the router's linear op */
    int32_t select_op;       /* the op selecting its experts (topk, max, argmax, sort) */
    int8_t batched;          /* 1: experts as matmuls over stacked [E, ...] weights (per_expert of them) */
    int8_t named;            /* 1: experts named by annotations or --moe-pattern (router: the linear before them) */
    int32_t shared_linears;  /* linears of shared experts reading the router's input, 0 none */
    int32_t shared_experts;  /* their width over a routed expert's (1 when not a multiple) */
    int32_t experts, top_k, per_expert; /* E, k, linears per expert */
    int32_t local;           /* experts in the trace: E, or E / w on one rank of a job with w EP ranks
                              * (their rows then came from every rank; shares are taken as even) */
    int32_t first_fwd, last_fwd; /* first and last forward op of its experts */
    int32_t first_bwd, last_bwd; /* first and last backward op of its experts, -1 */
    double tokens;           /* router input rows at the traced batch */
    double hidden;           /* elements per token */
    double itemsize;         /* bytes per element */
    double routed;           /* rows the experts took (sum of per-expert rows) */
    double grad_bytes;       /* every expert's weight bytes */
} mt_moe_layer;

typedef struct mt_moe {
    int32_t n_layers;
    mt_moe_layer *l;
    double *traced;          /* per layer x expert: traced rows of the expert */
    int32_t *op_moe, *op_expert; /* per op: its MoE layer and expert, -1 */
    int32_t n_ops;
    int8_t *op_span;         /* mt_moe_spans, per op: 2 a router, 3 an expert's last linear (row parallel
                              * under expert TP), 1 another forward op from a router to its experts' last
                              * forward op, 0 outside; NULL until then */
    /* mt_moe_plan: */
    int32_t ep;
    int measured;            /* shares are the traced ones */
    double skew;             /* the Zipf exponent, < 0 none (traced, else even, shares) */
    double *load;            /* per layer x expert: share of the layer's routed tokens */
    double *rank_share;      /* per layer x EP rank: share of the routed tokens it receives */
    int32_t hot_layer, hot_expert, hot_rank; /* the expert with the largest share, its rank */
    double hot_share;        /* that expert's share of its layer's routed tokens */
    double rank_max;         /* largest rank_share x ep: the straggler's work / an even rank's */
} mt_moe;

/* The MoE layers of t; *out NULL when it has none. MT_ENOMEM only. */
mt_status mt_moe_find(const mt_trace *t, mt_moe **out, mt_error *err);
/* The same; why (why_n bytes, may be NULL) gets why the first router candidate (a linear to E
 * logits followed by a selection) was not taken, "" when none was refused. */
mt_status mt_moe_find_why(const mt_trace *t, mt_moe **out, char *why, size_t why_n, mt_error *err);
void mt_moe_free(mt_moe *m);

/* Spreads the experts over ep ranks with the traced shares (skew < 0) or Zipf(skew) over a
 * permutation drawn from seed. MT_EINVAL when ep does not divide a layer's expert count. */
mt_status mt_moe_plan(mt_moe *m, int32_t ep, double skew, uint64_t seed, mt_error *err);

/* Fills m->op_span (expert tensor parallelism: what runs on the rank's own tokens). MT_ENOMEM only.
 * O(ops). */
mt_status mt_moe_spans(mt_moe *m, const mt_trace *t);

/* The factor on op's time on EP rank r: 1 for a non-expert op, ep x rank_share for an expert op. */
double mt_moe_op_factor(const mt_moe *m, int32_t op, int32_t r);

#endif

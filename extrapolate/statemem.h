/* extrapolate/statemem.h — parameters, gradients and optimizer state per GPU: one function of the
 * mesh, each dimension splitting what it splits, once.
 *
 * The core (program.c, assign_gradients) classifies every weight tensor of a stage by the splits
 * that apply to it, each decided by one pass and recorded per tensor:
 *   tp   Megatron's splits (pass_tp.c): column- and row-parallel linear weights, column-parallel
 *        biases, vocabulary-parallel embeddings, convolution output channels: / T. Row-parallel
 *        biases, norms, position embeddings stay whole (mt_bld_weight_split);
 *   ep   an expert's weights (pass_ep.c): a GPU holds E / ep of the E experts;
 *   emb  a sharded table (pass_emb.c, --embedding-shard): / R over the R = D x E replicas;
 *   pp   every stage holds the weights its forward reads: a tied embedding has a copy on the first
 *        and on the last stage.
 * Then what is still replicated over the data-parallel (x CP) group is sharded by ZeRO / FSDP /
 * HSDP (mt_state_shard ranks): ZeRO-1 the optimizer state, ZeRO-2 also the gradients, ZeRO-3 and
 * FSDP also the parameters, plus the largest unit gathered at once. Experts and sharded tables are
 * already owned by one rank of their group: nothing shards them again.
 * Optimizer state is proportional to the parameters it updates (the trace's optimizer-state bytes
 * over its parameter bytes: 2 for Adam in fp32).
 * Invariant: every weight byte counts once per GPU holding it, divided by each split that applies;
 * the results are whole bytes (a shard of n bytes over k ranks holds ceil(n / k)).
 */
#ifndef MT_EXTRAPOLATE_STATEMEM_H
#define MT_EXTRAPOLATE_STATEMEM_H

#include <stdint.h>

#include "extrapolate/plan.h"

typedef struct mt_state_bytes { /* one GPU of one stage, after the tp / ep / emb splits */
    double replicated;          /* weights every rank of the DP (x CP) group holds whole */
    double owned;               /* weights split over the EP or DP group already (experts, tables) */
    double gathered;            /* ZeRO-3 / FSDP: the largest unit's replicated bytes, gathered at once */
    double opt_per_param;       /* optimizer-state bytes per parameter byte (0 without an optimizer) */
} mt_state_bytes;

typedef struct mt_state_mem {   /* per GPU, whole bytes */
    double params, grads, optimizer;
} mt_state_mem;

/* Ranks sharding the replicated states: the --zero / --fsdp shard size (mt_plan_shard) times the
 * context-parallel ranks, which hold the same weights; 1 when nothing is sharded or the group is one
 * rank. */
int32_t mt_state_shard(const mt_plan *pl);

/* The states one GPU holds, in the traced dtypes (sc NULL) or rescaled to the asked precision policy
 * (precision.h): parameters held whole and gathered x param, sharded parameters x shard (the fp32 master
 * where there is one), gradients x grad, optimizer states x optim, plus the master copy (master per
 * parameter byte) with the optimizer state where parameters are not sharded. */
mt_state_mem mt_state_memory(const mt_plan *pl, const mt_state_bytes *w);
mt_state_mem mt_state_memory_scaled(const mt_plan *pl, const mt_state_bytes *w, const mt_prec_scale *sc);

#endif

/* extrapolate/stages.h — the pipeline partitioner: a model's units (layers, else forward ops, in
 * forward order) cut into P contiguous stages.
 *
 * A unit's cost is its forward and backward device time plus its share of the step's optimizer
 * work (and of the parameter-sized ops after the forward, zero_grad): the share of the parameter
 * bytes its weights hold, as each stage runs the optimizer on its own weights. The cut minimises
 * the largest stage cost (binary search on the bound, greedy fill: O(units log time)): the slowest
 * stage sets the pipeline's pace, so no cut may be slower than this time-balanced cut.
 * Among the cuts as fast, cuts go where the fewest activation tensors cross (less to send): between
 * blocks, as pipeline frameworks cut a model (GPipe's balance of an nn.Sequential, Megatron's
 * layers). Inside a residual block the block's input crosses beside the branch's activation (two
 * tensors, or more), at its boundary only the block's output does. Each stage ends, left to right,
 * at the point with the fewest crossings that keeps it and the rest within the bound, the nearest
 * to an even share on a tie (O(units x P)).
 * Under --vpp the pieces are P x V model chunks, chunk c on stage c mod P (mt_stages_cut_chunks).
 * Cost: O(ops + trefs + tensors + units (log time + P)).
 */
#ifndef MT_EXTRAPOLATE_STAGES_H
#define MT_EXTRAPOLATE_STAGES_H

#include <stdint.h>

#include "tracer/trace.h"
#include "util/err.h"

typedef struct mt_stage_cut {
    int32_t clean_points;   /* unit boundaries where the fewest activation tensors cross (none
                             * counts too: nothing to send) */
    int32_t min_crossing;   /* that fewest number, not counting none */
    int clean_only;         /* 1: every cut is at such a point */
} mt_stage_cut;

/* stage_of_unit[u] for u < n_units, given unit[op] (-1: none) for every op of t. Every stage gets
 * at least one unit (n_units >= P, checked by the caller). MT_ENOMEM only. */
mt_status mt_stages_cut(const trace *t, const int32_t *unit, int32_t n_units, int32_t P, int32_t *stage_of_unit,
                        mt_stage_cut *info);

/* Interleaved pipelines (--vpp V): the units cut into P x V contiguous model chunks the same way
 * (chunk_of_unit[u]; chunk c runs on stage c mod P), except that the time-balanced cut with its
 * chunk boundaries moved to even the stages replaces it when that makes the busiest stage (the sum
 * of its V chunks) lighter. V = 1 is mt_stages_cut. n_units >= P x V. MT_ENOMEM only. */
mt_status mt_stages_cut_chunks(const trace *t, const int32_t *unit, int32_t n_units, int32_t P, int32_t V,
                               int32_t *chunk_of_unit, mt_stage_cut *info);

#endif

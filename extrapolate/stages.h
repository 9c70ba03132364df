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
 * With a send cost (mt_stages_cut_chunks' send_ns_per_byte > 0, from the network's link bandwidth)
 * a stage also weighs its sends: the activations crossing its right cut and the gradients crossing
 * its left cut, bytes of the traced batch x the cost per byte. The cut with the least slowest stage
 * so counted (an exact dynamic programme over stages and units, up to MT_STAGES_SENDS_MAX_UNITS
 * units) replaces the time-balanced one when it makes that slowest stage lighter; so it is never
 * worse than the time-balanced cut by this measure (ResNet-18 pp2: a cut between residual blocks,
 * one tensor crossing, instead of inside one, three).
 * Under --vpp the pieces are P x V model chunks, chunk c on stage c mod P (mt_stages_cut_chunks);
 * there sends are not weighed.
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

enum { MT_STAGES_SENDS_MAX_UNITS = 4096 }; /* beyond: sends not weighed (the programme is O(U^2)) */

/* stage_of_unit[u] for u < n_units, given unit[op] (-1: none) for every op of t. Every stage gets
 * at least one unit (n_units >= P, checked by the caller). MT_ENOMEM only. */
mt_status mt_stages_cut(const trace *t, const int32_t *unit, int32_t n_units, int32_t P, int32_t *stage_of_unit,
                        mt_stage_cut *info);

/* Interleaved pipelines (--vpp V): the units cut into P x V contiguous model chunks the same way
 * (chunk_of_unit[u]; chunk c runs on stage c mod P), except that the time-balanced cut with its
 * chunk boundaries moved to even the stages replaces it when that makes the busiest stage (the sum
 * of its V chunks) lighter. V = 1 with send_ns_per_byte 0 is mt_stages_cut; V = 1 with a send cost
 * weighs each stage's sends (above). n_units >= P x V. MT_ENOMEM only. */
mt_status mt_stages_cut_chunks(const trace *t, const int32_t *unit, int32_t n_units, int32_t P, int32_t V,
                               double send_ns_per_byte, int32_t *chunk_of_unit, mt_stage_cut *info);

#endif

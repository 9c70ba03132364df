/* extrapolate/repeat.h — a model of N blocks from a trace of k (`--blocks N`): the trace's
 * repeating block (extrapolate/blocks.h) repeated, or cut, to N at the trace level, before any
 * plan pass runs, so that parameters, gradients, optimizer state, saved activations, TP sites,
 * pipeline cuts, FSDP units and DP buckets all follow from the bigger (smaller) graph.
 *
 * What belongs to block j: every op of its layers (forward and backward), and an op of no layer
 * (AccumulateGrad, the optimizer's per-parameter ops) whose weights, gradients, optimizer state
 * and block-made tensors all belong to block j; a tensor belongs to the block of the first op
 * using it. An op of no layer that no tensor places takes, in the optimizer, the block of the next
 * optimizer op (Adam's step counter), in backward the block of the backward op before it (an
 * AccumulateGrad making its gradient inside it runs right after the op that made the gradient);
 * an optimizer op's temporaries (scalars, reused buffers) do not place it. An op touching several
 * blocks (a foreach optimizer op, a bucket's collective) belongs to none and is kept once, but the
 * optimizer state it updates follows its parameters: element q of one of its list arguments and
 * element q of another list of the same length are one parameter's, so a state of no block takes
 * the block of the weight or gradient beside it (exp_avg beside the weight in `_foreach_addcdiv_`,
 * exp_avg_sq through the gradient list exp_avg shares in `_foreach_lerp_`); an optimizer one among them (a foreach or fused step over every parameter,
 * PyTorch 2.x's default on GPUs) has its kernels lengthened as the model's weights grow (weight
 * bytes at N blocks over the traced ones), their order and gaps kept.
 * N > k: copy c (0 <= c < N - k) repeats block c mod k (the traced blocks in turn, so a slow block
 * is not repeated N - k times): its forward (and optimizer, other) ops right after the last block's,
 * its backward ops just before the last block's (copies in reverse), each with new op ids, layers,
 * tensors (ET and storage ids offset), saved activations, kernels, collectives and host calls; the
 * ops after the insertion shift by the copies' host time. The blocks are chained: block B of the result
 * reads what its template reads across a block boundary (the previous block's output, the next one's
 * input gradient) from block B - d as t's block does from block b - d, the same tensor found at the
 * same op rank and use, and the ops after the blocks read the last block's (N < k too). N < k: blocks N..k-1 and their ops, saved
 * activations, kernels, collectives and host calls go; their tensors too unless a kept op reads them,
 * and their weights, gradients and optimizer state always (a kept op over every parameter loses
 * their uses from its lists).
 * Invariant of the result (*out): a trace as tracer/trace.h states it (ops sorted by host start,
 * ids = indices, kernels sorted per op, totals re-derived by mt_tb_retotal), with roles, classes
 * and layers carried from t; its layers are t's with the block range holding N blocks; every op
 * keeps its own host slot (its start to the next op's start in t), so the step grows by the
 * copies' slots exactly. Strings point into t's pool: t must outlive *out (mt_trace_free(*out)
 * leaves t's pool alone).
 * Costs: O(ops + trefs + kernels + tensors) per block of the result.
 */
#ifndef MT_EXTRAPOLATE_REPEAT_H
#define MT_EXTRAPOLATE_REPEAT_H

#include <stdint.h>

#include "tracer/trace.h"
#include "util/err.h"

/* At most this many blocks (and the result at most MT_REPEAT_MAX_OPS ops). */
enum { MT_REPEAT_MAX_BLOCKS = 1024, MT_REPEAT_MAX_OPS = 1 << 26 };

/* The trace t with its repeating block repeated or cut to n blocks into *out (n equal to the
 * traced count: a copy of t). MT_EINVAL naming --blocks when t has no repeating block, n < 1, n >
 * MT_REPEAT_MAX_BLOCKS or the result would exceed MT_REPEAT_MAX_OPS ops. */
mt_status mt_blocks_repeat(const mt_trace *t, int32_t n, mt_trace **out, mt_error *err);

#endif

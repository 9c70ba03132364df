/* extrapolate/seqlen.h — a step at sequence length N from a transformer trace recorded at s
 * (`--seq N`), at the trace level, before any plan pass runs, so that operator times, saved
 * activations, tensor-parallel, sequence-parallel, context-parallel and pipeline traffic all
 * follow from the rewritten trace (as --blocks does: extrapolate/repeat.h).
 *
 * The traced length s is read from the attention cores (mt_bld_attn_core: a fused attention op's
 * q, or eager attention's matmuls of [batch, heads, sequence, head_dim] activations): their
 * sequence dimension, which every core must agree on. No core: refused (no attention, no
 * sequence to read).
 * The rewrite: in every tensor use of an activation, the model input or a buffer (never a weight,
 * gradient or optimizer state) a dimension equal to s becomes N, a leading one equal to B·s (the
 * tokens of batch B flattened) B·N, and one equal to s - 1 (or a leading B·(s - 1): the shifted
 * logits and labels of a causal LM loss) N - 1 (B·(N - 1)); each tensor's elements and bytes
 * follow its own shape, a saved activation the largest factor of its storage's tensors. When s
 * equals a width of the model's weights (Llama-3-8B at 4,096: hidden 4,096), the last dimension
 * of a tensor of rank >= 2 is read as a width, except in [batch, s] / [1, s] (ids, masks,
 * positions); that reading cannot tell eager attention's scores [.., s, s] from [.., s, hidden],
 * so it is refused there, and so is an s equal to the head dim, the heads, the KV heads or the
 * batch. Each op's time then scales by the ratio of its work (perfmodel/work.h) at N over s:
 * FLOPs for matmuls, convolutions and attention, bytes for the rest; an op without shapes by N/s
 * when its work grows with the batch, else 1; views (class none) keep theirs. So per-token ops
 * scale by N/s, attention's scores, softmax, masks and fused kernels by (N/s)^2 (the square a
 * sequence's attention computes; a causal kernel skips half of it at both lengths, so the ratio
 * differs from (N/s)^2 by (1 + 1/N) / (1 + 1/s): under 0.1 % from s = 1,024 on), and parameter-sized
 * work (the optimizer, AccumulateGrad) not at all. A GPU trace's kernels lengthen inside their op
 * (offsets and durations x the ratio), host times stay; a CPU trace's op lengthens and every later
 * op, host sync, wait and collective moves by what the ones before it gained.
 * Invariant of the result: a trace as tracer/trace.h states it (totals re-derived by
 * mt_tb_retotal), the same ops, tensors, kernels and layers as t in the same order; strings point
 * into t's pool (t outlives it).
 * Costs: O(ops + trefs + dims + kernels + tensors) and one work evaluation per op.
 */
#ifndef MT_EXTRAPOLATE_SEQLEN_H
#define MT_EXTRAPOLATE_SEQLEN_H

#include <stdint.h>

#include "tracer/trace.h"
#include "util/err.h"

/* The longest sequence asked for. */
#define MT_SEQ_MAX ((int64_t)1 << 24)

typedef struct mt_seqinfo {
    int64_t traced;        /* s: the attention cores' sequence length */
    int64_t asked;         /* N (0 before mt_seq_rescale) */
    int32_t cores;         /* attention cores recognised in the forward pass */
    int eager;             /* 1: attention's scores are materialised (matmul, softmax, mask) */
    int64_t head_dim;      /* q's last dimension */
    int positional;        /* s equals a weight's width: last dimensions read as widths */
    const char *core_op;   /* the first core's name */
} mt_seqinfo;

/* The traced sequence of t into *si (asked 0). MT_EINVAL naming --seq and the trace when t has no
 * attention core, its cores disagree, s < 2, or s cannot be told from the model's dimensions
 * (above). O(ops + trefs). */
mt_status mt_seq_find(const mt_trace *t, mt_seqinfo *si, mt_error *err);

/* t at sequence length n into *out (si filled as mt_seq_find does, asked = n); n equal to the
 * traced length: a copy. MT_EINVAL as mt_seq_find or for n outside [2, MT_SEQ_MAX] (one token has no
 * next token to predict). */
mt_status mt_seq_rescale(const mt_trace *t, int64_t n, mt_trace **out, mt_seqinfo *si, mt_error *err);

#endif

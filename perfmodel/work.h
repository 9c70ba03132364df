/* perfmodel/work.h — what an operator does: its work (FLOPs, bytes moved) from the shapes and
 * dtypes of its tensors, by the formula of its class (the operator classifier's, tracer/opclass.h).
 *
 * The work of an op is split into what grows with the batch and what does not:
 *   flops        arithmetic (multiply-add = 2 FLOPs); grows with the batch for batch-dependent ops
 *   bytes_act    bytes of batch-sized tensors (activations, their gradients, the model input)
 *   bytes_fixed  bytes of parameter-sized tensors (weights, weight gradients, optimizer state,
 *                scalars)
 * so the work at batch_factor f and tensor split T is (flops·f/T, (bytes_act·f + bytes_fixed)/T)
 * (mt_work_scale). Sequence length is assumed fixed, so FLOPs are linear in the batch.
 *
 * Backward ops (`autograd::engine::evaluate_function: XxxBackward0`) see only their incoming
 * gradient in the trace; their work is derived from the forward op they differentiate
 * (trace_op.fwd_op) when it is known, else from their own tensors (TrioSim CSV rows list
 * grad_output, input, weight like aten::convolution_backward does), else from the gradient's
 * bytes. An op whose name is in no table is UNKNOWN: its work is the bytes of its tensors
 * (`mitosis inspect --unknown-ops` lists them). An op with no tensor shapes at all (Kineto-only
 * traces without "Input Dims") has has_shapes == 0 and is scaled proportionally by callers.
 *
 * Formulas (N = numel):
 *   conv          2·N(out)·N(w)/w[0]  (+ N(out) with a bias); transposed: 2·N(in)·N(w)/w[0]
 *   conv bwd      2 × forward (input and weight gradients), 1 × when the input is the model input
 *   matmul family 2·N(out)·K, K = last dim of the left operand (linear, mm, bmm, matmul, addmm,
 *                 baddbmm, addbmm, mv, dot); matmul bwd 2 × forward
 *   attention     2·B·H·Lq·Lk·(D + Dv) from q [.., Lq, D], k [.., Lk, D], v [.., Lk, Dv];
 *                 backward 2.5 × forward (flash attention recomputes the scores); a causal mask is
 *                 a scalar argument the trace does not carry, so it is not halved
 *   norm 5·N, softmax 5·N, loss 4·N, pool N(in), elementwise N(largest), optimizer N/2 of its
 *   tensors; backward of memory-bound classes moves 1.5-2 × the forward bytes.
 * Cost: O(tensors of the op) per op, no allocation.
 */
#ifndef MT_PERFMODEL_WORK_H
#define MT_PERFMODEL_WORK_H

#include <stdint.h>

#include "tracer/opclass.h"
#include "tracer/trace.h"


/* A peak-FLOPS column of the GPU table (gpuspec.h). An op's work carries the data type of its
 * arithmetic (never TF32, which is a unit: mathunit.h picks the column per GPU and math mode). */
typedef enum { MT_DT_FP64 = 0, MT_DT_FP32, MT_DT_TF32, MT_DT_BF16, MT_DT_FP16, MT_DT_FP8, MT_DT_COUNT } mt_dtype;

typedef struct mt_work {
    double flops;
    double bytes_act;
    double bytes_fixed;
    mt_opclass cls;
    mt_dtype dtype;      /* data type of the arithmetic: FP64, FP32, BF16, FP16 or FP8 (by the
                          * tensors' dtype names, else their item size) */
    int has_shapes;      /* 1 when at least one tensor use (a scalar included) was seen */
    int from_fwd;        /* 1 when derived from the forward op (backward ops) */
} mt_work;

/* One tensor use as the work formulas see it. */
typedef struct mt_tshape {
    const int64_t *dims;
    int32_t ndim;
    int32_t itemsize;    /* bytes per element (0: unknown, 4 is assumed) */
    double numel;        /* used when ndim == 0 (a scalar has 1) */
    trace_role role;
    const char *dtype;   /* "float", "c10::BFloat16", ... or NULL */
} mt_tshape;

#define MT_OPDESC_MAXT 16

/* An operator as the work formulas see it: the first MT_OPDESC_MAXT inputs and outputs in
 * order, plus the bytes of the rest (long _foreach_ lists). */
typedef struct mt_opdesc {
    const char *name;            /* outermost name */
    const char *kind;            /* representative aten op (trace_op.kind) or NULL */
    trace_phase phase;
    int comm;                    /* 1: a communication op */
    mt_tshape in[MT_OPDESC_MAXT];
    mt_tshape out[MT_OPDESC_MAXT];
    int32_t n_in, n_out;         /* kept in in[]/out[] */
    double extra_bytes_act, extra_bytes_fixed; /* tensors beyond the kept ones */
    const struct mt_opdesc *fwd; /* backward ops: the forward op, or NULL */
} mt_opdesc;

/* Work of an op described by d (an op outside a trace, e.g. a CSV row: its class is
 * mt_opclass_of its names). */
void mt_work_of(const mt_opdesc *d, mt_work *w);

/* Fills d from trace op `op` (d->fwd stays NULL; see mt_work_of_trace_op). */
void mt_opdesc_from_trace(const mt_trace *t, int32_t op, mt_opdesc *d);
/* Work of trace op `op` by the formula of its class (op->cls), using its forward op (op->fwd_op)
 * for backward ops. */
void mt_work_of_trace_op(const mt_trace *t, int32_t op, mt_work *w);

/* Work at batch_factor x the traced batch (when batch_dependent) split tp_split ways. */
mt_work mt_work_scale(const mt_work *w, int batch_dependent, double batch_factor, int32_t tp_split);

static inline double mt_work_bytes(const mt_work *w) { return w->bytes_act + w->bytes_fixed; }

#endif

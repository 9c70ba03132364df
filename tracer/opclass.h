/* tracer/opclass.h — the one operator classifier: what an operator's names, phase and tensor
 * roles say about it. Every other folder reads its answers instead of testing names.
 *
 * Once a trace is loaded (roles known), mt_opclass_trace fills into every op:
 *   cls        its class (conv, matmul, ..., comm, unknown: mt_opclass_of): perfmodel's formulas
 *              and fits;
 *   tp         its tensor-parallel kind (mt_opclass_tp_of): extrapolate's tensor-parallel pass;
 *   batch_dep  whether its work grows with the batch (mt_opclass_batch_dependent).
 * The op's comm kind is set by the linker from mt_opclass_comm_of applied to the op, its nested
 * events and its Execution Trace attributes (only the linker sees those); cls, tp and batch_dep
 * follow it. Ops outside a trace (perfmodel CSV rows) use mt_opclass_of directly.
 *
 * Names are matched through tables in opclass.c: aten op names without "aten::" and a trailing
 * in-place '_' (`relu_` -> `relu`), autograd node names without "Backward<N>"
 * (`ConvolutionBackward0` -> `Convolution`); an aten name ending in "_backward" (or
 * "_backward_data") takes the backward variant of its stem's class.
 * Invariant: every answer depends only on its arguments (no state); the classes' order is the
 * order of MT_OPC_* in trace.h, and their names round-trip through mt_opclass_parse.
 * Cost: O(table size) per name, no allocation.
 */
#ifndef MT_TRACER_OPCLASS_H
#define MT_TRACER_OPCLASS_H

#include "tracer/trace.h"

/* ---- classes ---------------------------------------------------------------------------- */
/* Class of an op from its names and phase (no shapes needed); MT_OPC_COMM when comm != 0. */
mt_opclass mt_opclass_of(const char *name, const char *kind, trace_phase phase, int comm);
/* "conv", "conv_bwd", ..., "unknown"; mt_opclass_parse returns MT_OPC_COUNT for an unknown name. */
const char *mt_opclass_name(mt_opclass c);
mt_opclass mt_opclass_parse(const char *name);
/* 1 for classes whose time is compute-bound in practice (conv, matmul, attention and their
 * backward): their linear model uses FLOPs; the others use bytes only. */
int mt_opclass_is_compute(mt_opclass c);
/* 1 when the class is a backward class. */
int mt_opclass_is_backward(mt_opclass c);
/* Forward class -> its backward class (itself when it has none), and back. */
mt_opclass mt_opclass_backward_of(mt_opclass c);
mt_opclass mt_opclass_forward_of(mt_opclass c);

/* ---- communication ---------------------------------------------------------------------- */
/* Collective kind from an op name ("nccl:all_reduce", "c10d::allreduce_", "gloo:all_reduce",
 * "ncclDevKernel_AllGather_...", or a bare collective name as record_param_comms carries it).
 * TRACE_COMM_NONE when not communication. */
trace_comm mt_opclass_comm_of(const char *name);
/* 1 for a communication op name: a collective, or record_param_comms (which wraps one). */
int mt_opclass_is_comm_name(const char *name);

/* ---- what a name says about the phase and about tensors -------------------------------- */
/* autograd::engine::evaluate_function ..., *Backward0, *Backward1. */
int mt_opclass_is_backward_name(const char *name);
/* _foreach_*, fused optimizers, Optimizer.step. */
int mt_opclass_is_optimizer_name(const char *name);
/* Data movement before the forward pass (aten::to, aten::copy_, DataLoader, ...): exact names. */
int mt_opclass_is_data_movement_name(const char *name);
/* Optimizer.zero_grad and ops named after it: neither forward nor backward work. */
int mt_opclass_is_zero_grad_name(const char *name);
/* torch::autograd::AccumulateGrad: its inputs are the gradients of parameters. */
int mt_opclass_is_grad_accum_name(const char *name);
/* An in-place aten op ("aten::add_", not "aten::__iadd__"): its first argument is updated. */
int mt_opclass_is_inplace_name(const char *kind);

/* ---- per trace op ----------------------------------------------------------------------- */
/* Tensor-parallel kind of op o: the first of LINEAR (linear/addmm, or mm/matmul/baddbmm reading
 * a weight; by name alone when o has no inputs), CONV, EMBEDDING (POS_EMBEDDING when a non-weight
 * input was made by aten::arange: position indices), VOCAB_LOSS (forward cross_entropy,
 * log_softmax, nll_loss), CLOSER (norms, other losses), WEIGHT_GRAD (AccumulateGrad), else NONE.
 * Needs tensor roles and producers (tensor first_op). */
trace_tp mt_opclass_tp_of(const mt_trace *t, const trace_op *o);
/* 1 when o's work grows with the batch: forward/backward compute that touches an activation or
 * the model input. Parameter-sized work (optimizer, AccumulateGrad, weight transposes,
 * zero_grad) is 0, communication is 0, an op without tensor information is 1. Needs roles. */
int mt_opclass_batch_dependent(const mt_trace *t, const trace_op *o);
/* Experts a router's selection op picks per row: o a forward topk (k from its output's last
 * dimension), max/argmax/amax along a dimension (1), sort/argsort (1: a sort's k is not in its
 * shapes), reading a tensor whose last dimension is `width` (the router's logits); 0 otherwise.
 * *name (may be NULL) gets the selection's name ("topk", "max", ...). */
int32_t mt_opclass_select_k(const mt_trace *t, const trace_op *o, int64_t width, const char **name);
/* Fills cls, tp and batch_dep of every op of t (after roles and comm are set). O(ops + trefs). */
void mt_opclass_trace(mt_trace *t);

#endif

/* tracer/builder.h — assembles a `trace` from what the readers and the linker emit, then
 * derives what no reader sees alone (tracer/builder.c): device time per op (union of its
 * kernels' intervals), tensor roles, the parameter count, the batch size, layers and totals.
 *
 * Invariant while building: t->ops[0..n_ops) are the ops added so far in order, each op's
 * tensor uses are contiguous in t->trefs (inputs, then outputs), and tensors are unique per key
 * (ET id, storage, offset, numel, itemsize) through tensor_by_key + the tensor_next chain.
 * Kernels may come in any order: mt_tb_finish sorts them by (op, start).
 * Cost: O(1) amortised per add; mt_tb_finish O(ops + trefs + kernels log kernels).
 */
#ifndef MT_TRACER_BUILDER_H
#define MT_TRACER_BUILDER_H

#include <stdint.h>

#include "tracer/trace.h"
#include "util/u64map.h"

typedef struct trace_builder {
    mt_trace *t;
    int64_t cap_ops, cap_kernels, cap_tensors, cap_trefs, cap_dims, cap_layers;
    mt_u64map tensor_by_key;        /* hash of tensor key -> first index in chain */
    int32_t *tensor_next;         /* collision chain */
    int64_t cap_tensor_next;
} trace_builder;

/* Starts building into t (whose pool must exist). mt_tb_destroy frees the builder's own
 * indexes, never the trace. */
mt_status mt_tb_init(trace_builder *b, mt_trace *t);
void mt_tb_destroy(trace_builder *b);
/* Appends an op (fields copied; in/out ranges set by add_tref afterwards). Returns index or -1. */
int32_t mt_tb_add_op(trace_builder *b, const trace_op *op);
int32_t mt_tb_add_kernel(trace_builder *b, const trace_kernel *k);
/* Finds or adds the tensor with this key. Returns index or -1 on allocation failure. */
int32_t mt_tb_tensor(trace_builder *b, int64_t et_id, int64_t storage, int64_t offset,
                     int64_t numel, int32_t itemsize, const char *dtype, const char *device);
/* The tensor an op outputs (its inputs added already): mt_tb_tensor's, unless an earlier op made that
 * one and this op does not read it (not in place): then a new tensor with the key, found from now on.
 * The Execution Trace names a tensor by its TensorImpl's and storage's addresses; one allocated where
 * a freed one was gets the freed one's identity (a block's LayerNorm output the previous block's fc2
 * output's), and reads after it are of the new tensor. */
int32_t mt_tb_out_tensor(trace_builder *b, int64_t et_id, int64_t storage, int64_t offset,
                         int64_t numel, int32_t itemsize, const char *dtype, const char *device);
/* Adds an anonymous tensor (Kineto-only traces: no identity). */
int32_t mt_tb_anon_tensor(trace_builder *b, int64_t numel, int32_t itemsize, const char *dtype);
/* Appends a tensor use with its shape to the *current last op* (input when is_out == 0). Uses
 * of one op must be added inputs first, then outputs. */
mt_status mt_tb_add_tref(trace_builder *b, int32_t tensor, const int64_t *shape, int32_t ndim,
                         int32_t arg, int is_out);

/* Completes the trace: kernels sorted per op, device times, roles, parameters, batch size,
 * layers (from `hints` when given, else by weights and sequence numbers), totals. */
typedef struct builder_layer_hint {
    const char *module;           /* innermost nn.Module name for this op, or NULL */
} builder_layer_hint;
mt_status mt_tb_finish(trace_builder *b, const builder_layer_hint *hints, mt_error *err);

/* Re-derives, for a trace a transform rewrote (extrapolate/repeat.h), what mt_tb_finish derives
 * from ops, kernels and tensors, keeping roles, layers and classes: kernels sorted per op, device
 * times, unions, the tensor totals from the roles, the layers' and phases' sums, the step's end
 * (raised to the last op's). */
mt_status mt_tb_retotal(mt_trace *t, mt_error *err);

#endif

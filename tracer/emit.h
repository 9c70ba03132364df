/* tracer/emit.h — building the trace's operators from the (linked) readers' data (emit.c).
 *
 * Operators are the outermost cpu_ops of the step, sorted by (start, thread, event): user
 * annotations are regions that set the phase (communication annotations such as gloo:all_reduce
 * are ops, khost.h). An op's kind is its linked ET node's representative aten op, else its own
 * or its first nested aten:: name; its phase comes from its regions, thread and name
 * (opclass.h); its comm kind from its name, its ET subtree and nested record_param_comms; its
 * collective calls (t->colls) are itself when its name is one, else the outermost communication
 * events nested in it (comm_inside: the op is compute around them); its tensors from the linked
 * ET node, else from Kineto's "Input Dims". A kernel belongs to the outermost op enclosing its
 * cuda_runtime launch (same correlation), else to the op of its External id; it is
 * communication when the launch is inside a collective call or its name is an NCCL kernel's. A backward op's fwd_op is the forward op holding an event of its sequence number.
 * Invariant: one op per outermost event of the step, in the builder's order; ops are complete
 * (kernels, tensors, fwd_op) when mt_emit_kineto returns, roles and layers are the builder's.
 * Cost: O(E log E + K) for E events and K kernels.
 */
#ifndef MT_TRACER_EMIT_H
#define MT_TRACER_EMIT_H

#include <stdint.h>

#include "tracer/builder.h"
#include "tracer/et.h"
#include "tracer/khost.h"
#include "tracer/kineto.h"

/* Emits the ops, kernels and step bounds of `step` into b; *hints gets each op's nn.Module (or
 * NULL when the trace has none; caller frees). An empty step is refused naming kpath. */
mt_status mt_emit_kineto(trace_builder *b, const kineto_data *k, const int32_t *ord, const et_data *e,
                         const kstep *step, builder_layer_hint **hints, const char *kpath, mt_error *err);
/* Adds the tensors of ET node j to the builder's last op, inputs then outputs; a node without
 * tensors of its own (a wrapper) gives its children's: all their inputs, then all outputs. */
mt_status mt_emit_et_tensors(trace_builder *b, const et_data *e, int32_t j);
/* Node n's own inputs (pass 0) or outputs (pass 1) as tensor uses of the last op. */
mt_status mt_emit_et_vals(trace_builder *b, const et_data *e, const et_node *n, int pass);

#endif

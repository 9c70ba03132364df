/* tracer/cktrace.h — one rank's Chakra ET (tracer/chakra.h) as the "one GPU" trace `simulate`
 * extrapolates, and the reader of the registry (reader.h) that claims such a file by content.
 *
 * What a Chakra node carries is less than a PyTorch trace: a name, a type, a duration, optional
 * FLOPs (num_ops) and bytes (tensor_size), dependencies. So the trace is: every GPU compute node
 * (COMP_NODE without is_cpu_op) an operator, in dependency order (tracer/chakra.h's order), back
 * to back, each with one kernel of its duration; its phase from its name (backward when it holds
 * "backward"/"Backward", optimizer when it holds "optim"/"Optim", else forward); no tensors, so no
 * shapes, weights, parameter bytes or batch size (the classifier then goes by names, and resized
 * ops scale proportionally). Communication, memory and host nodes are left out: the plan makes its
 * own collectives. t->warning says so, with the counts.
 * Errors: a file with no GPU compute node (MT_EFORMAT: nothing to extrapolate; run it --as-is).
 * Cost: O(nodes).
 */
#ifndef MT_TRACER_CKTRACE_H
#define MT_TRACER_CKTRACE_H

#include "tracer/chakra.h"
#include "tracer/trace.h"

/* Builds t (pool set, everything else empty) from g, read from path. */
mt_status mt_cktrace_build(const char *path, const mt_ck_graph *g, mt_trace *t, mt_error *err);

#endif

/* tracer/optime.h — an operator's time as the plan changes it, the interface every op-time model
 * implements (perfmodel/perfmodel.h's models, the extrapolator's default, what-if scenarios) and
 * the default: the traced time, proportional to the batch for batch-dependent ops and divided by
 * the tensor-parallel split. Over the trace alone, so that perfmodel/ and extrapolate/ both use it
 * without either including the other.
 */
#ifndef MT_TRACER_OPTIME_H
#define MT_TRACER_OPTIME_H

#include <stdint.h>

#include "tracer/trace.h"

/* Time in ns of trace op `op` when it runs on batch_factor x its traced batch with its work
 * split tp_split ways (1 = not split). Must return >= 0. */
typedef double (*mt_optime_fn)(void *ctx, const mt_trace *t, int32_t op, double batch_factor,
                               int32_t tp_split);

/* 1 when the op's work grows with the batch: its batch_dep, as the tracer's classifier set it
 * (mt_opclass_batch_dependent, tracer/opclass.h). */
int mt_op_batch_dependent(const mt_trace *t, int32_t op);

/* The default model: dev_ns x batch_factor for batch-dependent ops, / tp_split when split. */
double mt_optime_proportional(void *ctx, const mt_trace *t, int32_t op, double batch_factor,
                              int32_t tp_split);

#endif

/* tracer/optime.c — see optime.h. */
#include "tracer/optime.h"

int mt_op_batch_dependent(const mt_trace *t, int32_t op) { return t->ops[op].batch_dep; }

double mt_optime_proportional(void *ctx, const mt_trace *t, int32_t op, double batch_factor,
                              int32_t tp_split) {
    (void)ctx;
    double ns = (double)t->ops[op].dev_ns;
    if (mt_op_batch_dependent(t, op)) ns *= batch_factor;
    if (tp_split > 1) ns /= tp_split;
    return ns;
}

/* report/tracesum.h — what one traced step did, as `mitosis inspect` shows it: device, batch,
 * parameters, operators, kernels, layers, device time per phase, the step's wall and host time,
 * tensor bytes per role, the trace's own communication, and (optionally) every operator and the
 * operators the performance model has no FLOP formula for. Text and JSON carry the same facts.
 * Costs: O(ops + layers); the unknown-op listing O(ops x distinct unknown names).
 */
#ifndef MT_REPORT_TRACESUM_H
#define MT_REPORT_TRACESUM_H

#include <stdio.h>

#include <jansson.h>

#include "tracer/trace.h"

/* measured: the unprofiled step from meta.json in ms, 0 when unknown. */
void mt_tracesum_print(FILE *out, const mt_trace *t, int list_ops, double measured);
json_t *mt_tracesum_json(const mt_trace *t, double measured);

/* Distinct names of ops without a FLOP formula (modelled by the bytes of their tensors) with
 * count, device time and bytes: as a text table, or as key "unknown_ops" added to o. */
void mt_tracesum_print_unknown_ops(FILE *out, const mt_trace *t);
void mt_tracesum_unknown_ops_json(const mt_trace *t, json_t *o);

#endif

/* report/recognised.h — what the classifier recognised in a trace, as `mitosis inspect` shows it:
 * the layer structure (weight layers; repeating blocks are extrapolate/blocks' and the replay
 * report's), the tensor-parallel sites (extrapolate/tpsites.h), the mixture-of-experts layers
 * (extrapolate/moe.h: experts, top-k, router and selection op, looped or batched experts, shared
 * experts, routed rows) and the embedding tables (extrapolate/embtables.h: bags, jagged ids, dense
 * tables), and for each family what it did not find and why. Text and JSON carry the same facts.
 * Cost: O(ops x layers) (the MoE finder's).
 */
#ifndef MT_REPORT_RECOGNISED_H
#define MT_REPORT_RECOGNISED_H

#include <jansson.h>
#include <stdio.h>

#include "tracer/trace.h"
#include "util/err.h"

/* MT_ENOMEM only. */
mt_status mt_recognised_print(FILE *out, const mt_trace *t, mt_error *err);
/* {"layers", "tp_sites": {...}, "moe": {"layers": [...], "why_not"}, "tables": {...}}; NULL on ENOMEM. */
json_t *mt_recognised_json(const mt_trace *t, mt_error *err);

#endif

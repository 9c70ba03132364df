/* tracer/link.h — the trace of one step from a Kineto trace and/or an Execution Trace.
 *
 * mt_link_build (link.c) is the pipeline: an ET alone goes to mt_etonly_build (etonly.c: ops
 * without timings); a Kineto trace is nested and cut into steps (khost.h), matched with the ET
 * when there is one (match.h), one step is chosen, its ops are emitted (emit.h) and the builder
 * finishes the trace (builder.h), then its blocking host calls are collected.
 * Step choice: opts->step when given (refused when absent); else with an ET the step holding the
 * most linked events; else the last step that holds operators.
 * Invariant on success: t's ops, kernels, tensors, layers and totals are final (the classifier
 * runs after, load.c). Cost: see match.h and emit.h.
 */
#ifndef MT_TRACER_LINK_H
#define MT_TRACER_LINK_H

#include "tracer/et.h"
#include "tracer/kineto.h"
#include "tracer/trace.h"

/* Builds t from k (may be NULL) and e (may be NULL, not both); messages name kpath/epath. */
mt_status mt_link_build(const char *kpath, kineto_data *k, const char *epath, et_data *e,
                        const trace_load_opts *opts, mt_trace *t, mt_error *err);
/* The ops of an Execution Trace alone (etonly.c). */
mt_status mt_etonly_build(const char *epath, const et_data *e, mt_trace *t, mt_error *err);

#endif

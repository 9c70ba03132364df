/* run/inspect.h — `mitosis inspect` as a library call: what one traced step did. The trace is
 * loaded (with a bytes-read line on a terminal), optionally its repeating block repeated or cut
 * to N blocks (extrapolate/repeat.h, as simulate --blocks N predicts it), and summarised as text
 * or JSON (report/tracesum.h, report/recognised.h) with the step measured beside the trace
 * (tracer/meta.h; none with --blocks: it was measured for the traced model).
 * Invariant: the trace is loaded and freed within the call; out gets the whole summary, or (text,
 * when the recogniser fails) the summary up to its error.
 */
#ifndef MT_RUN_INSPECT_H
#define MT_RUN_INSPECT_H

#include <stdint.h>
#include <stdio.h>

#include "extrapolate/repeat.h"
#include "tracer/trace.h"
#include "util/err.h"

enum { MT_INSPECT_PATHS = 8, MT_INSPECT_BLOCKS_MAX = MT_REPEAT_MAX_BLOCKS };

typedef struct mt_inspect_opts {
    const char *paths[MT_INSPECT_PATHS]; /* a folder, or the files of one trace */
    int n_paths;
    trace_load_opts load;                /* --step, --moe-pattern */
    int32_t blocks;                      /* --blocks N, 0: as traced */
    int as_json, list_ops, unknown_ops;  /* --json, --ops, --unknown-ops */
    FILE *progress;                      /* the bytes read, on a terminal (NULL: none) */
} mt_inspect_opts;

void mt_inspect_opts_init(mt_inspect_opts *o);

/* Loads o's trace and writes its summary to out; warning (may be NULL) gets the trace's own
 * warning (GPU kernels left out: mt_trace_warning), "" when none. One-line errors name the file. */
mt_status mt_run_inspect(const mt_inspect_opts *o, FILE *out, char *warning, size_t warning_len, mt_error *err);

#endif

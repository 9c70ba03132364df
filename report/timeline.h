/* report/timeline.h — the simulated step as Chrome / Perfetto trace-event JSON (opens unchanged
 * in ui.perfetto.dev and chrome://tracing).
 *
 * Layout: one process per virtual GPU ("GPU r (dp d, stage s, tp t)", pid r + 1) with one
 * thread per stream: compute (each operator an "X" slice named after the op, args layer,
 * layer_index, phase, op_index, micro_batch), host wait (the device waiting for its host
 * thread to launch work, host model), waiting (compute stream blocked; cat "exposed",
 * "peer wait" or "bubble", each its own cname colour: sim/simulate.h), TP collectives,
 * DP collectives (args bytes, algorithm, group, gpus, why), pipeline send (one extra thread per
 * overlapping send) and pipeline recv (a zero-length slice at each arrival). A flow arrow
 * ("s"/"f", one id per transfer) joins each send to its arrival. A "network" process (pid
 * N + 1) has one counter per link that ever carried traffic, named "src->dst" after the
 * topology's nodes, with its load in percent of the link's bandwidth ("util %").
 * Timestamps and durations are microseconds rounded to whole nanoseconds at both ends, so
 * adjacent slices meet exactly and nest in every viewer; a GPU's compute slices add up to
 * its compute time to within 1 ns per compute run.
 *
 * The filter (NULL: everything recorded) keeps some GPUs and a window; slices are clipped to
 * the window, a flow arrow is drawn only when both its ends are shown, counters start with the
 * value in force when the window opens.
 * Written as a stream: one small jansson object per event, never the whole tree, so memory is
 * O(links) beyond the recorder's and time O(events log events) (the sort of the spans).
 */
#ifndef MT_REPORT_TIMELINE_H
#define MT_REPORT_TIMELINE_H

#include <stdio.h>

#include "report/describe.h"
#include "report/record.h"
#include "util/err.h"

/* Writes the timeline to out (`path` names it in messages). Sorts src->rec's spans. MT_EIO
 * when writing fails, MT_ENOMEM when the recorder ran out of memory or an event could not be
 * built; the message names the file and what to do. Does not close out. */
mt_status mt_timeline_write(const mt_report_src *src, const mt_span_filter *filter, FILE *out,
                            const char *path, mt_error *err);

#endif

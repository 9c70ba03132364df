/* report/record.h — records what a simulation did, for the reports that draw it (Perfetto
 * timeline, per-op CSV, the HTML Gantt view): the spans of every virtual GPU (compute,
 * collective, send, wait; see sim/simulate.h) and the load of every network link over time.
 *
 * A recorder plugs into mt_sim_opts.on_span (mt_recorder_span) and the flow model's link
 * observer (mt_recorder_link). To keep large runs small it can keep only some GPUs
 * (mt_recorder_keep_ranks) and a time window (mt_recorder_window): a span is kept when it
 * overlaps the window, clipped to it; link samples after the window are dropped and those before it
 * are moved to its start (the last of them per link is the value in force when it opens).
 * Memory: O(kept spans + kept link samples); 40 bytes a span.
 */
#ifndef MT_REPORT_RECORD_H
#define MT_REPORT_RECORD_H

#include <stdint.h>

#include "sim/simulate.h"
#include "util/err.h"

typedef struct mt_span {
    int32_t rank;
    int32_t kind;              /* mt_span_kind */
    const mt_task *task;       /* points into the program: valid while it lives */
    mt_time_ps start, end;
} mt_span;

typedef struct mt_link_sample {
    int32_t link;
    mt_time_ps t;
    double used_Bps;           /* total rate on the link from t on */
} mt_link_sample;

typedef struct mt_recorder {
    mt_span *spans;
    int64_t n_spans, cap_spans;
    mt_link_sample *links;
    int64_t n_links, cap_links;
    uint8_t *keep;             /* per rank 0/1, NULL = keep all */
    int32_t n_keep;            /* size of keep[] */
    mt_time_ps from, to;       /* window; to = MT_TIME_NEVER: open */
    int failed;                /* out of memory once: later records are dropped */
} mt_recorder;

void mt_recorder_init(mt_recorder *r);
void mt_recorder_destroy(mt_recorder *r);

/* Keeps only the ranks in spec: comma-separated ranks and ranges ("0-7,12,100-103"), each
 * < n_ranks. MT_EINVAL with a message naming the bad part. */
mt_status mt_recorder_keep_ranks(mt_recorder *r, const char *spec, int32_t n_ranks, mt_error *err);
/* Keeps only [from, to) (picoseconds). */
void mt_recorder_window(mt_recorder *r, mt_time_ps from, mt_time_ps to);

/* 1 when rank passes the rank filter. */
int mt_recorder_wants(const mt_recorder *r, int32_t rank);

/* Observers (ctx = the recorder): pass as mt_sim_opts.on_span / mt_simrun_cfg.on_link. */
void mt_recorder_span(void *ctx, int32_t rank, mt_span_kind kind, const mt_task *task, mt_time_ps start,
                      mt_time_ps end);
void mt_recorder_link(void *ctx, int32_t link, mt_time_ps t, double used_Bps);

/* Sorts spans by (rank, start, kind) for writers that want per-GPU order. O(n log n). */
void mt_recorder_sort(mt_recorder *r);

#endif

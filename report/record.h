/* report/record.h — records what a simulation did, for the reports that draw it (Perfetto
 * timeline, per-op and per-collective CSV): the spans of every virtual GPU (compute,
 * collective, send, wait; see sim/simulate.h) and the load of every network link over time.
 *
 * A recorder plugs into mt_sim_opts.on_span (mt_recorder_span) and the network model's link
 * observer (mt_recorder_link). To keep large runs small its `filter` can keep only some GPUs
 * and a time window (mt_span_filter below): a span is kept when it overlaps the window and
 * belongs to a kept GPU, UNCLIPPED (writers clip, so that a compute span's operators are laid
 * out from its true start); pipeline sends are kept whatever their sender, since the receiving
 * GPU's arrival is drawn from them. Link samples after the window are dropped and those before
 * it are moved to its start (the last of them per link is the value in force when it opens).
 * Memory: O(kept spans + kept link samples); 40 bytes a span, 24 a link sample; at most max_bytes
 * when set (a server's per-run cap: what comes after is dropped and cut_ps says from when).
 */
#ifndef MT_REPORT_RECORD_H
#define MT_REPORT_RECORD_H

#include <stdint.h>

#include "sim/simulate.h"
#include "util/err.h"

/* Which GPUs and which time window a report shows. All-zero after mt_span_filter_init: every
 * GPU, all time. */
typedef struct mt_span_filter {
    uint8_t *keep;             /* per rank 0/1, NULL = keep all */
    int32_t n_keep;            /* size of keep[] */
    mt_time_ps from, to;       /* window [from, to); to = MT_TIME_NEVER: open */
} mt_span_filter;

void mt_span_filter_init(mt_span_filter *f);
void mt_span_filter_destroy(mt_span_filter *f);
/* Keeps only the ranks in spec: comma-separated ranks and ranges ("0-7,12,100-103"), each
 * < n_ranks. MT_EINVAL with a message naming the bad part; f is unchanged then. */
mt_status mt_span_filter_ranks(mt_span_filter *f, const char *spec, int32_t n_ranks, mt_error *err);
/* Keeps only the window "FROM:TO" of simulated time, each side a time with units as
 * util/units.h reads them ("10ms:20ms", "1.5s:", ":500us"; an empty side is open).
 * MT_EINVAL when it does not parse or FROM >= TO; f is unchanged then. */
mt_status mt_span_filter_window(mt_span_filter *f, const char *spec, mt_error *err);
/* 1 when rank passes the rank filter (f may be NULL: everything passes). O(1). */
int mt_span_filter_rank(const mt_span_filter *f, int32_t rank);
/* 1 when [start, end] overlaps the window; a zero-length span when start lies in it. O(1). */
int mt_span_filter_time(const mt_span_filter *f, mt_time_ps start, mt_time_ps end);

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
    mt_link_sample *links;     /* in event (time) order until a writer sorts a copy */
    int64_t n_links, cap_links;
    mt_span_filter filter;     /* applied while recording; set it before the run */
    int failed;                /* out of memory once: later records are dropped */
    double max_bytes;          /* spans + link samples kept at most (bytes), 0: no cap; set before the run */
    mt_time_ps cut_ps;         /* past max_bytes: the start of the first record dropped (later ones are
                                * dropped too), MT_TIME_NEVER while nothing was */
} mt_recorder;

void mt_recorder_init(mt_recorder *r);
void mt_recorder_destroy(mt_recorder *r);

/* Observers (ctx = the recorder): pass as mt_sim_opts.on_span / mt_simrun_cfg.on_link. */
void mt_recorder_span(void *ctx, int32_t rank, mt_span_kind kind, const mt_task *task, mt_time_ps start,
                      mt_time_ps end);
void mt_recorder_link(void *ctx, int32_t link, mt_time_ps t, double used_Bps);

/* Sorts spans by (rank, start, kind, end) for writers that want per-GPU order. O(n log n). */
void mt_recorder_sort(mt_recorder *r);

#endif

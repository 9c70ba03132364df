/* report/progress.h — a one-line progress report on a terminal for every long phase:
 *   a simulation   "simulating: 35% of 1024 GPUs' tasks, 1.2 s"
 *   reading a file "reading trace: 35% of 1.02 GB, 1.2 s" (bytes mode, trace_load_opts.on_progress;
 *                  the file's size on disk: compressed for a gzip file; MB under a GB)
 *   a named phase  "loading trace.csv ..." (drawn at once: its length is unknown)
 *   counted items  "plans: 37/621 done, 12.3 s, about 3.1 min left: ddp=4:tp=2" (compare), the
 *                  estimate of the time left from the items done so far
 * redrawn in place at most 4 times a second, first after a quarter of a second (short runs print
 * nothing), erased by mt_progress_end. Silent when the stream is not a terminal (piped or
 * redirected), so scripts see nothing.
 *
 * mt_progress_update has the mt_progress_fn signature (sim/simulate.h): pass it as
 * mt_sim_opts.on_progress with the mt_progress as progress_ctx. Each call costs one clock read.
 * Not thread-safe: callers on worker threads serialise their calls (run/pool.h does).
 */
#ifndef MT_REPORT_PROGRESS_H
#define MT_REPORT_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct mt_progress {
    FILE *out;
    int on;                  /* out is a terminal */
    int shown;               /* a line is on screen */
    int32_t gpus;            /* -1: bytes mode */
    const char *what;        /* bytes mode: "reading trace" */
    double t0, last;         /* monotonic seconds: start, last redraw */
} mt_progress;

void mt_progress_init(mt_progress *p, FILE *out, int32_t gpus);
/* Bytes mode: done/total are bytes of a file being read; `what` (static) opens the line. */
void mt_progress_init_bytes(mt_progress *p, FILE *out, const char *what);
void mt_progress_update(void *ctx, int64_t done, int64_t total);
/* "WHAT ..." at once (on a terminal), until the next line or mt_progress_end. */
void mt_progress_phase(mt_progress *p, const char *what);
/* "NOUN: DONE/TOTAL done, S s, about T left: LABEL" (the estimate once an item is done). */
void mt_progress_items(mt_progress *p, const char *noun, int64_t done, int64_t total, const char *label);
/* Monotonic seconds (wall-clock durations). */
double mt_progress_clock_s(void);
/* Erases the line when one was drawn. */
void mt_progress_end(mt_progress *p);

#endif

/* report/replay.h — the replay of a trace at its traced plan: the traced step against the
 * simulated one ("traced X ms, replayed Y ms (d %)") and, when they differ by more than
 * MT_REPLAY_TOL_PCT, where the difference lies, each part in microseconds; plus the network
 * calibration from the trace's own collective times (mt_commfit, filled by run/commfit.h) that the
 * replay and every what-if of the run use.
 *
 * Plain data: report/summary.c prints it (text, JSON "replay", HTML); run/ fills it.
 * Invariant: replay.on only when the run is the traced plan (one GPU for a single-rank trace, the
 * traced world size with the traced collectives for a rank of a multi-rank job, the traced batch,
 * the traced GPU, no what-if); unexplained[] signed as traced minus replayed.
 * Costs: O(ops + collectives + kernels).
 */
#ifndef MT_REPORT_REPLAY_H
#define MT_REPORT_REPLAY_H

#include <stdio.h>

#include <jansson.h>

#include "extrapolate/hostmodel.h"
#include "extrapolate/program.h"
#include "sim/simulate.h"
#include "tracer/trace.h"

/* A replay within this many percent of the traced step needs no explanation. */
#define MT_REPLAY_TOL_PCT 5.0

typedef struct mt_commfit_kind {
    int32_t n;                  /* traced instances of this kind with a time */
    double traced_us, fitted_us;/* their traced times summed, the fitted network's */
    double bw_Bps, lat_ns;      /* the kind's own fit (effective link bandwidth and latency) */
} mt_commfit_kind;

/* The network fitted to the traced collective times: time_i = x A_i + y L_i (least squares, x, y
 * >= 0), A_i the collective's time at 1 GB/s links without latency, L_i at unbounded bandwidth
 * and 1 us per link, both on the run's topology and algorithm; bandwidth 1 GB/s / x, latency y us. */
typedef struct mt_commfit {
    int tried;                  /* the trace is one rank of a multi-rank job with timed collectives */
    int on;                     /* fitted and applied to the run's link tier */
    char why[200];              /* tried and not on: why not */
    int32_t n;                  /* instances fitted */
    double bw_Bps, lat_ns;      /* applied */
    double traced_us, fitted_us;/* sums over the instances */
    double peer_wait_us;        /* sum of max(0, traced - fitted): measured waiting for peers (and
                                 * anything else slower than the fit); inside the fitted times, so
                                 * what-ifs carry its mean */
    mt_commfit_kind kinds[TRACE_COMM_OTHER + 1];
} mt_commfit;

enum { MT_REPLAY_ITEMS = 6 };

typedef struct mt_replay_item {
    char what[160];
    double us;                  /* traced minus replayed */
} mt_replay_item;

typedef struct mt_replay {
    int on;                     /* the run is the traced plan (see the invariant) */
    double traced_ms;           /* the traced step's wall span */
    double replayed_ms;         /* the simulated step */
    double error_pct;           /* 100 (replayed - traced) / traced */
    mt_replay_item unexplained[MT_REPLAY_ITEMS];
    int32_t n_unexplained;      /* filled only when |error_pct| > MT_REPLAY_TOL_PCT */
    double measured_ms;         /* the step measured without the profiler (meta.json), 0 unknown */
    int calibrated;             /* 1: the run was calibrated to it, and error_pct is against it */
} mt_replay;

/* The replay of run r (program p, host model host or NULL) of trace t; at_plan 0: out->on = 0.
 * cf: the run's network fit (NULL none). */
void mt_replay_of(const mt_trace *t, const mt_program *p, const mt_sim_result *r, const mt_hostmodel *host,
                  const mt_commfit *cf, int at_plan, mt_replay *out);

/* The step measured without the profiler (meta.json, 0 unknown): a run calibrated to it replays that step,
 * not the profiled one (the profiler slows the host), so the error is against it and what the profiled
 * times left unexplained is moot; uncalibrated, the report says how far the replay is above it. */
void mt_replay_measured(mt_replay *rp, double measured_ms, int calibrated);

/* "replay     traced X ms, replayed Y ms (d %)" and the unexplained lines; "comm fit" lines. */
void mt_replay_print(FILE *out, const mt_replay *rp, const mt_commfit *cf);
/* {traced_ms, replayed_ms, error_pct, unexplained:[{what, us}]} or JSON null. */
json_t *mt_replay_json(const mt_replay *rp);
/* {bw_GBps, lat_us, n, traced_us, fitted_us, peer_wait_us, kinds:{...}, note} or JSON null. */
json_t *mt_commfit_json(const mt_commfit *cf);
/* One line of text for HTML summaries into buf ("" when off). */
int mt_replay_line(const mt_replay *rp, char *buf, size_t len);

#endif

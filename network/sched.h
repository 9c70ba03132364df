/* network/sched.h — the abstract event scheduler the network models run on.
 *
 * Layering choice: the event engine lives in sim/ (sim/engine.h), but network/ and netmodels/
 * come before sim/ in the data path and may not include its headers. So network/ defines this
 * tiny interface (a const table of function pointers plus an opaque pointer, like a vtable)
 * and sim/engine.c implements it: mt_engine_sched(engine) returns one. The cost is one
 * indirect call per schedule/cancel, negligible next to the heap work behind it. Tests and
 * benchmarks link every library and simply pass an engine's scheduler.
 *
 * Virtual time is int64 PICOSECONDS (mt_time_ps): exact for 1 B at 1 TB/s, and covers
 * ±106 days. Times printed to users are converted to ns/us/ms.
 */
#ifndef MT_NETWORK_SCHED_H
#define MT_NETWORK_SCHED_H

#include <math.h>
#include <stdint.h>

#include "util/err.h"

typedef int64_t mt_time_ps;
#define MT_PS_PER_NS INT64_C(1000)
#define MT_PS_PER_S 1e12
#define MT_TIME_NEVER INT64_MAX
/* The latest time an event may have (half the int64 range: 53 days). Durations are saturated
 * to just above it (mt_ps_sat), so `now + duration` never overflows, and the engine stops a run
 * whose next event would lie beyond it with MT_EINVAL: some input (a slowdown, a bandwidth, a
 * latency, an op time) is far out of range. */
#define MT_TIME_HORIZON_PS (INT64_MAX / 2)

/* Handle of a pending event; 0 is never a valid handle. */
typedef uint64_t mt_event_id;

/* An event handler: `ctx` and `arg` are what was given when scheduling. */
typedef void (*mt_event_fn)(void *ctx, uint64_t arg);

typedef struct mt_sched_ops {
    /* Current virtual time. */
    mt_time_ps (*now)(void *impl);
    /* Schedules fn(ctx, arg) at time t (>= now). Returns 0 when out of memory or t < now. */
    mt_event_id (*at)(void *impl, mt_time_ps t, mt_event_fn fn, void *ctx, uint64_t arg);
    /* Cancels a pending event; returns 0 when it already ran or was cancelled. */
    int (*cancel)(void *impl, mt_event_id id);
    /* Moves a pending event to time t (>= now); it is ordered as if scheduled now.
     * Returns 0 when the event is no longer pending. */
    int (*move)(void *impl, mt_event_id id, mt_time_ps t);
    /* Called by a handler that failed (handlers return nothing): the run stops and returns
     * `code` with `msg` as its error. */
    void (*fail_run)(void *impl, mt_status code, const char *msg);
} mt_sched_ops;

typedef struct mt_sched {
    const mt_sched_ops *ops;
    void *impl;
} mt_sched;

static inline mt_time_ps mt_sched_now(mt_sched s) { return s.ops->now(s.impl); }
static inline mt_event_id mt_sched_at(mt_sched s, mt_time_ps t, mt_event_fn fn, void *ctx,
                                      uint64_t arg) {
    return s.ops->at(s.impl, t, fn, ctx, arg);
}
static inline int mt_sched_cancel(mt_sched s, mt_event_id id) { return s.ops->cancel(s.impl, id); }
static inline int mt_sched_move(mt_sched s, mt_event_id id, mt_time_ps t) {
    return s.ops->move(s.impl, id, t);
}
static inline void mt_sched_fail(mt_sched s, mt_status code, const char *msg) {
    s.ops->fail_run(s.impl, code, msg);
}

/* A duration in picoseconds (double) rounded to the nearest ps; beyond the horizon (or NaN) it
 * is MT_TIME_HORIZON_PS + 1, which the engine refuses to schedule. */
static inline mt_time_ps mt_ps_sat(double ps) {
    if (!(ps < (double)MT_TIME_HORIZON_PS)) return MT_TIME_HORIZON_PS + 1;
    return ps > 0 ? (mt_time_ps)llround(ps) : 0;
}

/* Seconds (double) to picoseconds, rounded up so a transfer never ends early; saturated as
 * mt_ps_sat. */
static inline mt_time_ps mt_ps_ceil(double seconds) {
    double ps = seconds * MT_PS_PER_S;
    if (!(ps < (double)MT_TIME_HORIZON_PS)) return MT_TIME_HORIZON_PS + 1;
    mt_time_ps t = (mt_time_ps)ps;
    return (double)t < ps ? t + 1 : t;
}

#endif

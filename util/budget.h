/* util/budget.h — what one piece of work (a run, an upload's parse) may spend, and a flag that
 * stops it: a wall-clock deadline, engine events, memory, inflated bytes, and `cancelled`, which
 * any thread may set.
 *
 * A budget is bound to the thread doing the work (mt_budget_bind); code deep inside asks the
 * thread's budget and stops with a one-line error naming the limit: sim/engine.c every
 * MT_BUDGET_EVERY events, run/pool.c before each item (compare: between plans; its worker threads
 * bind their creator's budget), run/estimate.c before a run starts (mt_estimate_check_budget),
 * util/fileio.c and util/jstream.c while inflating gzip. A thread with no budget bound (the CLI,
 * the tests) is never stopped: each check is then one thread-local load.
 * Invariant: once mt_budget_stopped(b) is non-zero it stays so (cancelled is only ever set; the
 * deadline only passes).
 * Thread safety: `cancelled` is atomic; the limits are set before the budget is bound and only read
 * afterwards. The binding is thread-local (no process-wide state).
 * Costs: a check is O(1): an atomic load and, with a deadline, one clock_gettime.
 */
#ifndef MT_UTIL_BUDGET_H
#define MT_UTIL_BUDGET_H

#include <stdatomic.h>

#include "util/err.h"

/* Engine events between two checks (sim/engine.c): a flow-model event (a max-min re-solve) may
 * cost ~100 us, so 256 of them stay well under 100 ms; a check costs ~30 ns. */
enum { MT_BUDGET_EVERY = 256 };

typedef enum { MT_BUDGET_GO = 0, MT_BUDGET_CANCELLED, MT_BUDGET_WALL } mt_budget_state;

typedef struct mt_budget {
    atomic_int cancelled;       /* 1: stop as soon as possible */
    double wall_s;              /* wall-clock limit from mt_budget_start, 0 none */
    double deadline_s;          /* mt_budget_now_s() + wall_s, 0 none */
    double max_events;          /* engine events a run may be predicted to take, 0 none */
    double max_seconds;         /* seconds a run may be predicted to take, 0 none (defaults to wall_s) */
    double max_mem_bytes;       /* memory a run may be predicted to need, 0 none */
    double max_inflate_bytes;   /* bytes one gzip file may inflate to, 0 none */
    const char *flag_events, *flag_seconds, *flag_mem, *flag_inflate; /* named in messages */
} mt_budget;

/* No limit, not cancelled. */
void mt_budget_init(mt_budget *b);
/* Starts the wall clock: the work is stopped wall_s seconds from now (0: never). */
void mt_budget_start(mt_budget *b, double wall_s);
/* Asks the work to stop (any thread). */
void mt_budget_cancel(mt_budget *b);
/* Why the work must stop, or MT_BUDGET_GO. b may be NULL (GO). */
mt_budget_state mt_budget_stopped(mt_budget *b);

/* The calling thread's budget (NULL: none, never stopped), and binding one (NULL unbinds). */
void mt_budget_bind(mt_budget *b);
mt_budget *mt_budget_current(void);
/* MT_OK, or MT_EINVAL "run cancelled" / "run stopped at its wall-clock limit of N s
 * (--max-run-seconds)" when the calling thread's budget says stop. */
mt_status mt_budget_check(mt_error *err);
/* MT_EINVAL naming `what` when `bytes` inflated from it exceed the thread's max_inflate_bytes;
 * also stops on a cancel. */
mt_status mt_budget_check_inflated(double bytes, const char *what, mt_error *err);

/* The monotonic clock, seconds. */
double mt_budget_now_s(void);

#endif

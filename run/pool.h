/* run/pool.h — a parallel map: fn(ctx, pool, i) for every item i in 0..n-1 on worker threads
 * (POSIX threads), so that `compare` runs its plans on every core.
 *
 * Items are claimed one at a time, in increasing order, from a counter under the pool's mutex
 * (dynamic scheduling: a plan's cost varies by 1000x). Each item writes only its own result slot,
 * which the caller owns, so the results are in item order whatever the interleaving: a parallel
 * map equals the serial loop byte for byte when every item is deterministic.
 * Invariants: every item runs at most once; once item i has failed, no item after i starts (those
 * before it still run), and the error returned is that of the lowest failing item, which is the
 * error the serial loop returns. jobs <= 1 runs the items in the calling thread, in order, and
 * creates no thread.
 * Shared state: items share only what the caller makes immutable before the map (the trace, the
 * performance model); code that touches a library's global state (Debian's igraph is built
 * without IGRAPH_THREAD_SAFE: its error handler and IGRAPH_FINALLY stack are globals) runs
 * between mt_pool_lock and mt_pool_unlock, one thread of the process at a time (a process-wide lock).
 * Budget: the calling thread's budget (util/budget.h) is bound in every worker, and checked before
 * each item: a cancelled map starts no further item and fails with the budget's error.
 * Costs: jobs - 1 thread creations per map (the caller is a worker too); two mutex operations per
 * item.
 */
#ifndef MT_RUN_POOL_H
#define MT_RUN_POOL_H

#include <stdint.h>

#include "util/err.h"

typedef struct mt_pool mt_pool;

/* One item. May call mt_pool_lock/unlock on `pool` (NULL in no case). */
typedef mt_status (*mt_pool_item_fn)(void *ctx, mt_pool *pool, int32_t i, mt_error *err);
/* Progress: called under the pool's mutex as item `i` starts, with `done` items finished. */
typedef void (*mt_pool_start_fn)(void *ctx, int32_t i, int32_t done, int32_t n);

typedef struct mt_pool_map_cfg {
    int32_t n;              /* items */
    int32_t jobs;           /* worker threads (<= 1: serial; at most n are started) */
    mt_pool_item_fn fn;
    void *ctx;
    mt_pool_start_fn start; /* optional */
    void *start_ctx;
} mt_pool_map_cfg;

/* Runs every item (see the invariants above); *failed (may be NULL) gets the lowest failing item,
 * n when none failed. With fewer threads than asked (none included), the map runs on those it got
 * and the calling thread. */
mt_status mt_pool_map(const mt_pool_map_cfg *cfg, int32_t *failed, mt_error *err);

/* A section one thread at a time in the whole process (pool may be NULL: a run outside any map,
 * or several maps at once in `mitosis serve --workers N`); recursive: the thread holding it may
 * enter again. */
void mt_pool_lock(mt_pool *pool);
void mt_pool_unlock(mt_pool *pool);

/* The processors online (>= 1): --jobs' default. */
int32_t mt_pool_cores(void);

#endif

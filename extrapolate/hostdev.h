/* extrapolate/hostdev.h — a virtual GPU's device as its host thread fills it (hostdev.c): one
 * queue per stream of the host model (extrapolate/hostmodel.h), the events its stream waits
 * recorded, and the running of one op of the model on them.
 *
 * Running op i at simulated time `now` with dev_ps of device work: the host starts the op at
 * *host; each of its kernels is launched at its host offset on its stream and the op's kernels
 * on one stream run back to back as one block of that stream's part of dev_ps, placed as early
 * as every launch allows but not before the stream's earlier work, nor before floor_ps, nor
 * (stream 0, where the simulator's tasks run) before `now`. A synchronising call ends the block
 * of the streams it waits for and the host waits until they are done; a record notes when its
 * stream's work so far ends; a wait makes its stream's later work start no earlier than that.
 * Every busy span placed ([start, end) on a stream, end > start) goes to on_busy.
 * With one stream, no syncs and no waits this is the single queue of earlier versions: the op's
 * kernels make one block of dev_ps ending when the function returns.
 * Invariant: done_ps[s] is the end of the latest work placed on stream s; slot_ps[e] the time
 * recorded last for slot e (0 before any record).
 * Costs: init O(streams + slots); running an op O(its events + streams), no allocation.
 */
#ifndef MT_EXTRAPOLATE_HOSTDEV_H
#define MT_EXTRAPOLATE_HOSTDEV_H

#include <stdint.h>

#include "extrapolate/hostmodel.h"

/* A busy span [start_ps, end_ps) placed on `stream`. */
typedef void (*mt_hostdev_busy_fn)(void *ctx, int32_t stream, int64_t start_ps, int64_t end_ps);

typedef struct mt_hostdev {
    const mt_hostmodel *m;
    int64_t *done_ps;          /* per stream (m->n_streams) */
    int64_t *slot_ps;          /* per event slot (m->n_slots) */
    int64_t floor_ps;          /* no work starts before this (the simulator's last blocking wait) */
    mt_hostdev_busy_fn on_busy;
    void *busy_ctx;
} mt_hostdev;

/* The int64 words of storage a device of model m needs (its streams and slots). */
int64_t mt_hostdev_words(const mt_hostmodel *m);

/* A device of model m, idle, on the caller's zeroed storage of mt_hostdev_words(m) words (which
 * outlives it); on_busy may be NULL. */
void mt_hostdev_init(mt_hostdev *d, const mt_hostmodel *m, int64_t *words, mt_hostdev_busy_fn on_busy, void *ctx);

/* Runs trace op `op` with dev_ps of device work at simulated time now (see above). Returns when
 * its work on stream 0 ends (>= now; now when it has none); *host becomes the time the host is
 * done with the op; *sync_wait_ps (may be NULL) the time the host spent blocked in its
 * synchronising calls; *busy0_ps (may be NULL) the length of its work on stream 0. */
int64_t mt_hostdev_run_op(mt_hostdev *d, int32_t op, int64_t dev_ps, int64_t now, int64_t *host,
                          int64_t *sync_wait_ps, int64_t *busy0_ps);

#endif

/* extrapolate/acts.h — the activations a micro-batch keeps for backward, as the extrapolator counts
 * them: one entry per storage a forward op allocated, with its bytes at the trace's batch (unsplit).
 *
 * From the trace's saved set (tracer/saved.h) when it has one: only what backward reads again (a
 * tensor that only forward ops read is freed in forward and is no activation). Without it (a
 * Kineto trace alone, TrioSim, Chakra): every activation tensor a forward op made, as before the
 * ET was read for this (an upper bound).
 * Each entry lives from its forward op until its last backward reader (last_bwd, -1 unknown); the
 * simulator holds a micro-batch's whole set from its forward to its backward (the peak: the
 * forwards in flight, Korthikanti et al. 2022).
 * Invariant: entries sorted by op, every op a forward op, bytes > 0.
 * Cost: O(saved + tensors).
 */
#ifndef MT_EXTRAPOLATE_ACTS_H
#define MT_EXTRAPOLATE_ACTS_H

#include <stdint.h>

#include "tracer/trace.h"
#include "util/err.h"

typedef struct mt_act {
    int32_t op;         /* the forward op that allocated it */
    int32_t last_bwd;   /* its last backward reader, -1 unknown */
    int64_t storage_id; /* the trace's storage id (0 unknown) */
    double bytes;       /* at the trace's batch, before any split */
} mt_act;

/* *out (malloc'd, free() it; NULL when *n == 0) and *n: t's activations kept for backward.
 * MT_ENOMEM only. */
mt_status mt_acts_of_trace(const mt_trace *t, mt_act **out, int32_t *n);

#endif

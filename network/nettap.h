/* network/nettap.h — a tap on a network model: a model of its own that forwards every transfer to
 * an inner model and counts, per (source, destination) endpoint pair, the bytes sent. A cluster
 * run gives each job its own tap on the shared model, so each job's traffic is known by pair (and,
 * through the topology's routes, by link) without a run per job.
 * It forwards send, send_sent (when the inner model has it), endpoints, stats and fixed_latency;
 * it has no perturbations, link statistics, observers or folding (a caller needing those uses the
 * inner model). Destroying the tap leaves the inner model alone. Memory O(distinct pairs).
 */
#ifndef MT_NETWORK_NETTAP_H
#define MT_NETWORK_NETTAP_H

#include <stdint.h>

#include "network/netmodel.h"

typedef struct mt_nettap_pair {
    int32_t src, dst;  /* endpoint ids as the inner model names them */
    double bytes;      /* all transfers between them, in that direction */
    uint64_t sends;
} mt_nettap_pair;

/* A tap on inner (which must outlive it); MT_ENOMEM. */
mt_status mt_nettap_new(mt_netmodel *inner, mt_netmodel *out, mt_error *err);
/* The pairs seen so far, in first-send order; *n their count. tap must be a tap. */
const mt_nettap_pair *mt_nettap_pairs(const mt_netmodel *tap, int32_t *n);

#endif

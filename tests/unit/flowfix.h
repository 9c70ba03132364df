/* tests/unit/flowfix.h — shared by the flow-model tests (test_flow.c, test_perturb.c): a
 * delivery recorder and a chain topology. Header-only, static inline. */
#ifndef MT_TESTS_FLOWFIX_H
#define MT_TESTS_FLOWFIX_H

#include "network/topology.h"
#include "sim/engine.h"

#define GB 1e9

typedef struct done {
    mt_engine *e;
    mt_time_ps at[16]; /* delivery time per tag */
    int n;             /* deliveries so far */
} done_t;

static inline void on_done(void *ctx, uint64_t tag) {
    done_t *d = ctx;
    d->at[tag] = mt_engine_now(d->e);
    d->n++;
}

/* A chain of n GPUs with duplex links of the given bandwidth (GB/s) and latency (ps). */
static inline mt_topo *chain(int n, double bw_GBps, mt_time_ps lat_ps) {
    mt_topo *t = mt_topo_new("chain");
    for (int i = 0; i < n; i++) mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
    for (int i = 0; i + 1 < n; i++) mt_topo_add_duplex(t, i, i + 1, bw_GBps * GB, lat_ps, NULL);
    return t;
}

#endif

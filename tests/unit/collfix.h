/* tests/unit/collfix.h — shared by the collective tests (test_collective.c, test_collphys.c):
 * build a schedule, time it on a topology with the flow model. Header-only, static inline. */
#ifndef MT_TESTS_COLLFIX_H
#define MT_TESTS_COLLFIX_H

#include "extrapolate/collective.h"
#include "netmodels/registry.h"
#include "network/topology.h"
#include "sim/collexec.h"
#include "sim/engine.h"

static inline mt_coll_schedule *collfix_build(mt_coll_op op, mt_coll_algo algo, int32_t nranks, double bytes,
                                              int32_t chunks, int32_t root, int32_t per_node) {
    mt_coll_params p = {.op = op, .algo = algo, .nranks = nranks, .bytes = bytes, .root = root,
                        .peer = (root + 1) % nranks, .ranks_per_node = per_node, .chunks = chunks};
    mt_coll_schedule *s;
    mt_error err = {0};
    assert_int_equal(mt_coll_build(&p, &s, &err), MT_OK);
    return s;
}

/* Seconds schedule s takes on topology t (flow model), after prepare(ctx, net) when given (link
 * changes), with the engine's event count in *events (may be NULL); frees s and t. */
static inline double collfix_run(mt_topo *t, mt_coll_schedule *s, void (*prepare)(void *ctx, mt_netmodel *net),
                                 void *ctx, uint64_t *events) {
    mt_engine *e = mt_engine_new();
    mt_netmodel net;
    mt_error err = {0};
    assert_int_equal(mt_netmodel_create("flow", t, NULL, mt_engine_sched(e), &net, &err), MT_OK);
    if (prepare) prepare(ctx, &net);
    mt_time_ps ps = -1;
    assert_int_equal(mt_collexec_time(s, &net, e, NULL, &ps, &err), MT_OK);
    if (events) *events = mt_engine_events(e);
    mt_net_free(&net);
    mt_engine_free(e);
    mt_coll_free(s);
    mt_topo_free(t);
    return (double)ps / 1e12;
}

/* Seconds schedule s takes on topology t (flow model); frees s and t. */
static inline double collfix_time_s(mt_topo *t, mt_coll_schedule *s) { return collfix_run(t, s, NULL, NULL, NULL); }

#endif

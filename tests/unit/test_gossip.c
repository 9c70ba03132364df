/* Unit tests for sim/gossip (Hop-style decentralized training), solved by hand:
 *  - 3 workers on a complete graph, one computing 3x slower, staleness 0: without a backup
 *    worker everybody moves at the slow worker's pace; with one, the fast two do not wait for it;
 *  - 3 workers on a directed ring whose slowest link carries 1 GB at a tenth of the bandwidth
 *    (shared max-min with the next update): the downstream worker waits 180 ms without backups,
 *    nobody waits with one backup or with staleness 1;
 *  - the graph builders (ring with chords to the most distant node, double ring). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
#include <string.h>

#include "netmodels/registry.h"
#include "netmodels/topologies.h"
#include "sim/engine.h"
#include "sim/gossip.h"

#define MS INT64_C(1000000000)

typedef struct grun {
    mt_status rc;
    mt_gossip_result res;
} grun;

/* Runs cfg on switch:n at 100 GB/s, zero latency; worker `slow_up`'s uplink gets `factor`. */
static grun run_on_switch(mt_gossip_cfg *cfg, int32_t n, int32_t slow_up, double factor) {
    mt_topo_params tp;
    mt_topo_params_init(&tp);
    tp.link_bw_Bps = 100e9;
    tp.link_lat_ns = 0;
    mt_topo *topo = NULL;
    mt_error err = {0};
    char spec[32];
    snprintf(spec, sizeof spec, "switch:%d", (int)n);
    assert_int_equal(mt_topo_build(spec, &tp, &topo, &err), MT_OK);
    mt_engine *e = mt_engine_new();
    mt_netmodel net = {0};
    assert_int_equal(mt_netmodel_create("flow", topo, NULL, mt_engine_sched(e), &net, &err), MT_OK);
    if (slow_up >= 0) {
        char sel[32];
        int32_t *ids, k;
        snprintf(sel, sizeof sel, "gpu%d->sw0", (int)slow_up);
        assert_int_equal(mt_topo_select_links(topo, sel, &ids, &k, &err), MT_OK);
        assert_int_equal(mt_net_set_link_factor(&net, ids[0], factor, &err), MT_OK);
        free(ids);
    }
    grun g;
    g.rc = mt_gossip_run(cfg, &net, e, &g.res, &err);
    mt_net_free(&net);
    mt_engine_free(e);
    mt_topo_free(topo);
    return g;
}

static void slow_compute_with_and_without_backup(void **state) {
    (void)state;
    mt_gossip_graph g;
    assert_int_equal(mt_gossip_graph_build(MT_GRAPH_COMPLETE, 3, &g, NULL), MT_OK);
    mt_time_ps comp[3] = {10 * MS, 10 * MS, 30 * MS};
    mt_gossip_cfg c = {&g, comp, 0, 3, 0, 0, -1};
    /* b = 0: iteration k starts when all updates of k-1 are in: every 30 ms. Fast workers end
     * their third compute at 60 + 10 = 70 ms, the slow one at 90 ms. */
    grun r = run_on_switch(&c, 3, -1, 1);
    assert_int_equal(r.rc, MT_OK);
    assert_int_equal(r.res.done_ps[0], 70 * MS);
    assert_int_equal(r.res.done_ps[1], 70 * MS);
    assert_int_equal(r.res.done_ps[2], 90 * MS);
    assert_int_equal(r.res.all_done_ps, 90 * MS);
    assert_int_equal(r.res.wait_ps[0], 40 * MS);
    assert_int_equal(r.res.sends, 3 * 3 * 2);
    mt_gossip_result_free(&r.res);
    /* b = 1: each fast worker needs one fresh update, from the other fast one: 10 ms per
     * iteration; the slow one never waits. */
    c.backups = 1;
    r = run_on_switch(&c, 3, -1, 1);
    assert_int_equal(r.res.done_ps[0], 30 * MS);
    assert_int_equal(r.res.done_ps[1], 30 * MS);
    assert_int_equal(r.res.done_ps[2], 90 * MS);
    assert_true(r.res.mean_done_ps == 50.0 * MS);
    mt_gossip_result_free(&r.res);
    /* max_gap 0 forces fresh updates from everybody again: the b = 0 times */
    c.max_gap = 0;
    r = run_on_switch(&c, 3, -1, 1);
    assert_int_equal(r.res.done_ps[0], 70 * MS);
    mt_gossip_result_free(&r.res);
    mt_gossip_graph_free(&g);
}

static void slow_link_on_a_ring(void **state) {
    (void)state;
    /* directed ring 0 -> 1 -> 2 -> 0 */
    int32_t off[4] = {0, 1, 2, 3}, nbr[3] = {1, 2, 0};
    mt_gossip_graph g = {3, off, nbr};
    mt_time_ps comp[3] = {10 * MS, 10 * MS, 10 * MS};
    mt_gossip_cfg c = {&g, comp, 1e9, 2, 0, 0, -1};
    /* 1 GB at 100 GB/s = 10 ms, except from worker 2 (10 GB/s). Iteration 1 ends at 10 ms for all.
     * Worker 1 gets u(0,1) at 20 ms and worker 2 gets u(1,1) at 20 ms: both end iteration 2 at
     * 30 ms. u(2,1) has 0.8 GB left at 30 ms when u(2,2) joins it on the uplink: 5 GB/s each,
     * so it arrives at 30 + 160 = 190 ms; worker 0 ends iteration 2 at 200 ms. */
    grun r = run_on_switch(&c, 3, 2, 0.1);
    assert_int_equal(r.rc, MT_OK);
    assert_int_equal(r.res.done_ps[0], 200 * MS);
    assert_int_equal(r.res.done_ps[1], 30 * MS);
    assert_int_equal(r.res.done_ps[2], 30 * MS);
    assert_int_equal(r.res.wait_ps[0], 180 * MS);
    mt_gossip_result_free(&r.res);
    /* one backup worker (in-degree 1: wait for nobody), or staleness 1 (iteration 0 suffices
     * for iteration 2): two computes back to back */
    c.backups = 1;
    r = run_on_switch(&c, 3, 2, 0.1);
    assert_int_equal(r.res.all_done_ps, 20 * MS);
    mt_gossip_result_free(&r.res);
    c.backups = 0;
    c.staleness = 1;
    r = run_on_switch(&c, 3, 2, 0.1);
    assert_int_equal(r.res.all_done_ps, 20 * MS);
    mt_gossip_result_free(&r.res);
    /* bad configurations are one-line errors */
    c.iterations = 0;
    r = run_on_switch(&c, 3, -1, 1);
    assert_int_equal(r.rc, MT_EINVAL);
    c.iterations = 2;
    mt_gossip_graph big = {5, off, nbr};
    c.graph = &big;
    r = run_on_switch(&c, 3, -1, 1);
    assert_int_equal(r.rc, MT_EINVAL);
}

static void graphs(void **state) {
    (void)state;
    mt_gossip_graph g;
    assert_int_equal(mt_gossip_graph_build(MT_GRAPH_RING_CHORDS, 8, &g, NULL), MT_OK);
    for (int32_t i = 0; i < 8; i++) assert_int_equal(g.off[i + 1] - g.off[i], 3);
    assert_int_equal(g.nbr[0], 1);
    assert_int_equal(g.nbr[1], 4); /* the most distant node */
    assert_int_equal(g.nbr[2], 7);
    mt_gossip_graph_free(&g);
    assert_int_equal(mt_gossip_graph_build(MT_GRAPH_DOUBLE_RING, 8, &g, NULL), MT_OK);
    for (int32_t i = 0; i < 8; i++) assert_int_equal(g.off[i + 1] - g.off[i], 4);
    int32_t want[4] = {1, 3, 5, 7};
    for (int k = 0; k < 4; k++) assert_int_equal(g.nbr[k], want[k]);
    mt_gossip_graph_free(&g);
    assert_int_equal(mt_gossip_graph_build(MT_GRAPH_RING, 2, &g, NULL), MT_EINVAL);
    mt_graph_kind k;
    assert_int_equal(mt_graph_kind_parse("double-ring", &k), 0);
    assert_int_equal(k, MT_GRAPH_DOUBLE_RING);
    assert_int_equal(mt_graph_kind_parse("star", &k), -1);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slow_compute_with_and_without_backup),
        cmocka_unit_test(slow_link_on_a_ring),
        cmocka_unit_test(graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for sim/collexec's latency chains: ringflow's per-step latencies (a chain of 0-byte
 * sends) run as one timer when the flow model promises fixed latencies, with the times of sending
 * them one by one; with a link change scheduled mid-chain they are sent one by one, so the hops
 * after the change see it (once it has taken effect, the rest of the chain is one timer again). Hand numbers on switch:4 (every link 0.5 us, so a hop is 1 us): a
 * 0-byte ringflow all-reduce is 1 us of (empty) flows plus a chain of 2(4-1)-1 = 5 hops,
 * 0->1, 1->2, 2->3, 3->0, 0->1: 6 us. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "netmodels/topologies.h"
#include "tests/unit/collfix.h"

/* 1 us more on sw0 -> gpu1 from 2.5 us on (only the last hop, 0->1 at 5 us, starts after it). */
static void slow_down_gpu1(void *ctx, mt_netmodel *net) {
    mt_topo *t = ctx;
    int32_t *links, n;
    mt_error err = {0};
    assert_int_equal(mt_topo_select_links(t, "sw0->gpu1", &links, &n, &err), MT_OK);
    assert_int_equal(mt_net_change_link_at(net, 2500000, MT_LINK_LATENCY, links[0], 1e6, &err), MT_OK);
    free(links);
}

/* The all-reduce's time in us and the engine's events, with or without the change. */
static double run(int change, uint64_t *events) {
    mt_topo_params p;
    mt_topo_params_init(&p);
    p.link_lat_ns = 500;
    mt_topo *t = NULL;
    mt_error err = {0};
    assert_int_equal(mt_topo_build("switch:4", &p, &t, &err), MT_OK);
    mt_coll_schedule *s = collfix_build(MT_COLL_ALLREDUCE, MT_ALGO_RINGFLOW, 4, 0, 1, 0, 8);
    return collfix_run(t, s, change ? slow_down_gpu1 : NULL, t, events) * 1e6;
}

static void chain_as_one_timer(void **state) {
    (void)state;
    uint64_t fast, slow;
    assert_float_equal(run(0, &fast), 6.0, 1e-9);
    assert_float_equal(run(1, &slow), 7.0, 1e-9);
    /* 4 empty flows + one timer for the 5 hops; with the change: 4 flows, the change, hops 0->1
     * and 1->2 one by one while it is pending, then the last 3 hops (after it) as one timer */
    assert_int_equal(fast, 5);
    assert_int_equal(slow, 8);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(chain_as_one_timer)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

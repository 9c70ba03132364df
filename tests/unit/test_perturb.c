/* Unit tests for the flow model's perturbations, driven through the netmodel interface
 * (network/netmodel.h, netmodels/flow.h), and link failures in the topology, each solved by hand:
 *  - a bandwidth factor applied mid-flow changes the rate of the remaining bytes;
 *  - periodic degradation (factor for `duration` every `period`) gives a hand-computed time;
 *  - extra latency applies to flows starting afterwards;
 *  - a failed link with an alternative path: flows crossing it move there with their remaining
 *    bytes, flows elsewhere are untouched, later flows route around it;
 *  - a failure that cuts the endpoints apart is MT_ENOROUTE naming both nodes and the link;
 *  - link selectors (A->B, A<->B, A) and their errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
#include <string.h>

#include "netmodels/registry.h"
#include "network/topology.h"
#include "sim/engine.h"
#include "tests/unit/flowfix.h"

#define MS INT64_C(1000000000) /* picoseconds per millisecond */

typedef struct fixture {
    mt_topo *t;
    mt_engine *e;
    mt_netmodel net;
    done_t d;
} fixture;

static void fx_open(fixture *f, mt_topo *t) {
    f->t = t;
    f->e = mt_engine_new();
    assert_int_equal(mt_netmodel_create("flow", t, NULL, mt_engine_sched(f->e), &f->net, NULL), MT_OK);
    memset(&f->d, 0, sizeof f->d);
    f->d.e = f->e;
}

static void fx_close(fixture *f) {
    mt_net_free(&f->net);
    mt_engine_free(f->e);
    mt_topo_free(f->t);
}

static void factor_mid_flow_halves_the_remaining_rate(void **state) {
    (void)state;
    fixture f;
    fx_open(&f, chain(2, 10, 0));
    /* 1 GB at 10 GB/s; at 50 ms (0.5 GB sent) the link drops to half: 0.5 GB at 5 GB/s = 100 ms */
    assert_int_equal(mt_net_send(&f.net, 0, 1, 1e9, on_done, &f.d, 0, NULL), MT_OK);
    assert_int_equal(mt_net_change_link_at(&f.net, 50 * MS, MT_LINK_FACTOR, 0, 0.5, NULL), MT_OK);
    assert_int_equal(mt_engine_run(f.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(f.d.n, 1);
    assert_int_equal(f.d.at[0], 150 * MS);
    fx_close(&f);
    /* without the change: 100 ms (the test can fail) */
    fx_open(&f, chain(2, 10, 0));
    mt_net_send(&f.net, 0, 1, 1e9, on_done, &f.d, 0, NULL);
    assert_int_equal(mt_engine_run(f.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(f.d.at[0], 100 * MS);
    fx_close(&f);
}

static void nop(void *ctx, uint64_t arg) {
    (void)ctx;
    (void)arg;
}

static void periodic_degradation_by_hand(void **state) {
    (void)state;
    fixture f;
    fx_open(&f, chain(2, 10, 0));
    /* half bandwidth during [40k, 40k + 10) ms. 1 GB: 0-10 ms 0.05 GB, 10-40 0.30, 40-50 0.05,
     * 50-80 0.30, 80-90 0.05 (0.75 so far), then 0.25 GB at 10 GB/s = 25 ms: done at 115 ms */
    assert_int_equal(mt_net_set_link_periodic(&f.net, 0, &(mt_link_periodic){0, 40 * MS, 10 * MS, 0.5}, NULL), MT_OK);
    mt_net_send(&f.net, 0, 1, 1e9, on_done, &f.d, 0, NULL);
    assert_int_equal(mt_engine_run(f.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(f.d.at[0], 115 * MS);
    /* the idle link arms nothing more: the queue is empty; a flow starting at 125 ms (inside
     * the window 120-130) runs at 5 GB/s for 5 ms (25 MB) then 10 GB/s: 50 MB in 7.5 ms */
    assert_int_equal(mt_engine_pending(f.e), 0);
    fx_close(&f);
    fx_open(&f, chain(2, 10, 0));
    mt_net_set_link_periodic(&f.net, 0, &(mt_link_periodic){0, 40 * MS, 10 * MS, 0.5}, NULL);
    mt_engine_at(f.e, 125 * MS, nop, NULL, 0);
    assert_int_equal(mt_engine_run(f.e, MT_TIME_NEVER, NULL), MT_OK);
    mt_net_send(&f.net, 0, 1, 50e6, on_done, &f.d, 1, NULL);
    assert_int_equal(mt_engine_run(f.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(f.d.at[1], 125 * MS + 7500000000LL);
    assert_int_equal(mt_net_set_link_periodic(&f.net, 0, &(mt_link_periodic){0, 10, 20, 0.5}, NULL), MT_EINVAL);
    fx_close(&f);
}

static void extra_latency_for_later_flows(void **state) {
    (void)state;
    fixture f;
    fx_open(&f, chain(3, 10, 0));
    assert_int_equal(mt_net_set_link_extra_latency(&f.net, 2, 5000000, NULL), MT_OK); /* 5 us on 1->2 */
    mt_net_send(&f.net, 0, 2, 1e6, on_done, &f.d, 0, NULL); /* 0->1->2: +5 us */
    mt_net_send(&f.net, 2, 0, 1e6, on_done, &f.d, 1, NULL); /* other direction: none */
    assert_int_equal(mt_engine_run(f.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(f.d.at[0], 100000000 + 5000000); /* 1 MB at 10 GB/s = 100 us */
    assert_int_equal(f.d.at[1], 100000000);
    fx_close(&f);
}

/* gpu0 -> gpu1 directly at 10 GB/s, or through sw0 at 5 GB/s per hop. */
static mt_topo *detour(void) {
    mt_topo *t = mt_topo_new("detour");
    mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
    mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
    mt_topo_add_node(t, MT_NODE_SWITCH, NULL, NULL);
    mt_topo_add_duplex(t, 0, 1, 10 * GB, 0, NULL); /* links 0 (gpu0->gpu1), 1 */
    mt_topo_add_duplex(t, 0, 2, 5 * GB, 0, NULL);
    mt_topo_add_duplex(t, 2, 1, 5 * GB, 0, NULL);
    return t;
}

static void failed_link_reroutes_what_crossed_it(void **state) {
    (void)state;
    fixture f;
    fx_open(&f, detour());
    /* flow 0: gpu0 -> gpu1, 1 GB; flow 1: gpu1 -> gpu0 (the other direction), 1 GB. The link
     * gpu0->gpu1 fails at 50 ms: flow 0 has 0.5 GB left, at 5 GB/s through sw0: 100 ms more. */
    mt_net_send(&f.net, 0, 1, 1e9, on_done, &f.d, 0, NULL);
    mt_net_send(&f.net, 1, 0, 1e9, on_done, &f.d, 1, NULL);
    int32_t *ids, n;
    assert_int_equal(mt_topo_select_links(f.t, "gpu0->gpu1", &ids, &n, NULL), MT_OK);
    assert_int_equal(n, 1);
    assert_int_equal(mt_net_change_link_at(&f.net, 50 * MS, MT_LINK_FAIL, ids[0], 0, NULL), MT_OK);
    free(ids);
    assert_int_equal(mt_engine_run(f.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(f.d.n, 2);
    assert_int_equal(f.d.at[0], 150 * MS);
    assert_int_equal(f.d.at[1], 100 * MS); /* untouched */
    assert_true(mt_topo_link_failed(f.t, 0));
    /* a later flow routes around the failed link: 0.5 GB at 5 GB/s */
    mt_net_send(&f.net, 0, 1, 0.5e9, on_done, &f.d, 2, NULL);
    mt_time_ps t0 = mt_engine_now(f.e);
    assert_int_equal(mt_engine_run(f.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(f.d.at[2] - t0, 100 * MS);
    const int32_t *route;
    int32_t hops;
    assert_int_equal(mt_topo_route(f.t, 0, 1, &route, &hops, NULL), MT_OK);
    assert_int_equal(hops, 2);
    /* repaired: the direct link again */
    assert_int_equal(mt_topo_set_link_failed(f.t, 0, 0, NULL), MT_OK);
    assert_int_equal(mt_topo_route(f.t, 0, 1, &route, &hops, NULL), MT_OK);
    assert_int_equal(hops, 1);
    fx_close(&f);
}

static void failure_without_path_names_the_cut(void **state) {
    (void)state;
    fixture f;
    fx_open(&f, chain(2, 10, 0));
    mt_net_send(&f.net, 0, 1, 1e9, on_done, &f.d, 0, NULL);
    mt_net_change_link_at(&f.net, 50 * MS, MT_LINK_FAIL, 0, 0, NULL);
    mt_error err = {0};
    assert_int_equal(mt_engine_run(f.e, MT_TIME_NEVER, &err), MT_ENOROUTE);
    assert_non_null(strstr(err.msg, "no route from gpu0 to gpu1"));
    assert_non_null(strstr(err.msg, "gpu0->gpu1"));
    assert_int_equal(f.d.n, 0);
    fx_close(&f);
    /* a new flow after the cut: the same error from the send */
    fx_open(&f, chain(2, 10, 0));
    assert_int_equal(mt_net_fail_link(&f.net, 0, NULL), MT_OK); /* nothing crossed it */
    assert_int_equal(mt_net_send(&f.net, 0, 1, 1e9, on_done, &f.d, 0, &err), MT_ENOROUTE);
    assert_non_null(strstr(err.msg, "gpu0->gpu1"));
    assert_int_equal(mt_net_send(&f.net, 1, 0, 1e9, on_done, &f.d, 1, &err), MT_OK);
    assert_int_equal(mt_engine_run(f.e, MT_TIME_NEVER, NULL), MT_OK);
    fx_close(&f);
}

static void link_selectors(void **state) {
    (void)state;
    mt_topo *t = detour();
    int32_t *ids, n;
    mt_error err = {0};
    assert_int_equal(mt_topo_select_links(t, "gpu0<->gpu1", &ids, &n, &err), MT_OK);
    assert_int_equal(n, 2);
    free(ids);
    assert_int_equal(mt_topo_select_links(t, "sw0", &ids, &n, &err), MT_OK);
    assert_int_equal(n, 4); /* in and out, to both GPUs */
    char buf[64];
    assert_string_equal(mt_topo_link_name(t, ids[0], buf, sizeof buf), "gpu0->sw0");
    free(ids);
    assert_int_equal(mt_topo_select_links(t, "gpu1->*", &ids, &n, &err), MT_OK);
    assert_int_equal(n, 2); /* gpu1->gpu0, gpu1->sw0 */
    assert_string_equal(mt_topo_link_name(t, ids[1], buf, sizeof buf), "gpu1->sw0");
    free(ids);
    assert_int_equal(mt_topo_select_links(t, "*->gpu1", &ids, &n, &err), MT_OK);
    assert_int_equal(n, 2);
    free(ids);
    assert_int_equal(mt_topo_select_links(t, "*->*", &ids, &n, &err), MT_EINVAL);
    assert_int_equal(mt_topo_select_links(t, "gpu7", &ids, &n, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "gpu7"));
    assert_int_equal(mt_topo_select_links(t, "gpu1->sw9", &ids, &n, &err), MT_EINVAL);
    assert_int_equal(mt_topo_select_links(t, "->gpu1", &ids, &n, &err), MT_EINVAL);
    mt_topo *c = chain(3, 1, 0);
    assert_int_equal(mt_topo_select_links(c, "gpu0->gpu2", &ids, &n, &err), MT_EINVAL); /* no such link */
    assert_non_null(strstr(err.msg, "matches no link"));
    mt_topo_free(c);
    mt_topo_free(t);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(factor_mid_flow_halves_the_remaining_rate),
        cmocka_unit_test(periodic_degradation_by_hand),
        cmocka_unit_test(extra_latency_for_later_flows),
        cmocka_unit_test(failed_link_reroutes_what_crossed_it),
        cmocka_unit_test(failure_without_path_names_the_cut),
        cmocka_unit_test(link_selectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

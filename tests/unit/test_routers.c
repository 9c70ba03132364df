/* Unit tests for netmodels/routers: on every preset with a structured router, the structured
 * route between two GPUs equals the graph search's (same links, same ECMP choice), for the hop
 * metric with and without ECMP and for the latency metric; all pairs on small shapes, a few
 * sources against every destination on shapes of a few thousand GPUs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "netmodels/topologies.h"

static mt_topo *build(const char *spec, int metric, int ecmp, int router) {
    mt_topo_params p;
    mt_topo_params_init(&p);
    p.metric = metric;
    p.ecmp = ecmp;
    mt_topo *t = NULL;
    mt_error err = {0};
    if (mt_topo_build(spec, &p, &t, &err) != MT_OK) fail_msg("%s: %s", spec, err.msg);
    mt_topo_use_router(t, router);
    return t;
}

/* Nodes a unit of the topology's translation symmetry spans (mt_topo_set_shift), 0: none. */
static int32_t shift_period(const mt_topo *t) {
    int32_t k;
    for (int32_t x = 1; x < mt_topo_nnodes(t); x++)
        if (mt_topo_shift_units(t, 0, x, &k) && k == 1) return x;
    return 0;
}

/* Where mt_topo_route_shifted vouches for the pair a -> b (route r) shifted by k units, its
 * answer is the graph search's route of the shifted pair; returns how many shifts it vouched for. */
static int64_t compare_shifted(mt_topo *s, mt_topo *g, int32_t period, int32_t a, int32_t b, const int32_t *r,
                               int32_t n) {
    int64_t done = 0;
    int32_t r0[64]; /* r may be in g's route store, which routing on g moves */
    if (n > 64) return 0;
    if (n > 0) memcpy(r0, r, (size_t)n * sizeof *r); /* an empty route's r may be NULL */
    int32_t step[64], kmin = 1, kmax = 0; /* the same vouching at once for a range of shifts */
    int steps = mt_topo_route_shift_steps(s, a, b, r0, n, step, &kmin, &kmax);
    mt_time_ps lat;
    if (mt_topo_route_latency(s, a, b, &lat, NULL) != MT_OK || lat != mt_topo_path_latency(s, r0, n))
        fail_msg("%s: node %d -> %d: route_latency is not the route's", mt_topo_label(s), (int)a, (int)b);
    for (int32_t k = -2; k <= 3; k++) {
        int32_t out[64];
        int vouched = k != 0 && mt_topo_route_shifted(s, a, b, r0, n, &k, 1, out, 1);
        if (k != 0 && vouched != (steps && k >= kmin && k <= kmax))
            fail_msg("%s: node %d -> %d shifted by %d units: route_shifted %d, shift_steps %d in [%d, %d]",
                     mt_topo_label(s), (int)a, (int)b, (int)k, vouched, steps, (int)kmin, (int)kmax);
        if (!vouched) continue;
        const int32_t *rg;
        int32_t ng;
        mt_error err = {0};
        if (mt_topo_route(g, a + k * period, b + k * period, &rg, &ng, &err) != MT_OK) fail_msg("%s", err.msg);
        if (ng != n || (n > 0 && memcmp(out, rg, (size_t)n * sizeof *rg) != 0))
            fail_msg("%s: node %d -> %d shifted by %d units: %d links, the search %d", mt_topo_label(s), (int)a,
                     (int)b, (int)k, (int)n, (int)ng);
        for (int32_t h = 0; h < n; h++)
            if (r0[h] + k * step[h] != rg[h]) fail_msg("%s: shift_steps' hop %d shifted by %d", mt_topo_label(s), (int)h, (int)k);
        /* the shifted pair's latency without routing it (the last pair's shift), the search's */
        if (mt_topo_route_latency(s, a + k * period, b + k * period, &lat, NULL) != MT_OK ||
            lat != mt_topo_path_latency(g, rg, ng))
            fail_msg("%s: node %d -> %d shifted by %d units: route_latency %lld", mt_topo_label(s), (int)a, (int)b,
                     (int)k, (long long)lat);
        done++;
    }
    return done;
}

/* Compares the routes from every `step`-th GPU (plus the last) to every GPU; returns the number
 * of pairs the router answered. */
static int64_t compare(const char *spec, int metric, int ecmp, int32_t step) {
    mt_topo *s = build(spec, metric, ecmp, 1), *g = build(spec, metric, ecmp, 0);
    assert_true(mt_topo_has_router(s));
    int32_t n, period = shift_period(s);
    int64_t shifted = 0;
    const int32_t *gpu = mt_topo_gpus(s, &n);
    for (int32_t a = 0; a < n; a = (a + step < n || a == n - 1) ? a + step : n - 1) {
        for (int32_t b = 0; b < n; b++) {
            const int32_t *rs, *rg;
            int32_t ns, ng;
            mt_error err = {0};
            if (mt_topo_route(s, gpu[a], gpu[b], &rs, &ns, &err) != MT_OK) fail_msg("%s: %s", spec, err.msg);
            if (mt_topo_route(g, gpu[a], gpu[b], &rg, &ng, &err) != MT_OK) fail_msg("%s: %s", spec, err.msg);
            if (ns != ng || (ns > 0 && memcmp(rs, rg, (size_t)ns * sizeof *rs) != 0))
                fail_msg("%s (metric %d, ecmp %d): gpu%d -> gpu%d: structured %d links (first %d), search %d "
                         "(first %d)", spec, metric, ecmp, (int)a, (int)b, (int)ns, ns ? (int)rs[0] : -1, (int)ng,
                         ng ? (int)rg[0] : -1);
            int32_t once[2048], no; /* a pair asked once: the same route and latency, no cache entered */
            mt_time_ps lat;
            if (mt_topo_route_once(s, gpu[a], gpu[b], once, 2048, &no, &lat, &err) != MT_OK) fail_msg("%s: %s", spec, err.msg);
            if (no != ng || (no > 0 && memcmp(once, rg, (size_t)no * sizeof *once) != 0) ||
                lat != mt_topo_path_latency(g, rg, ng))
                fail_msg("%s (metric %d, ecmp %d): gpu%d -> gpu%d: once %d links, search %d", spec, metric, ecmp,
                         (int)a, (int)b, (int)no, (int)ng);
            if (ng > 0 && mt_topo_route_once(s, gpu[a], gpu[b], once, ng - 1, &no, &lat, NULL) != MT_EINVAL)
                fail_msg("%s: gpu%d -> gpu%d: a route longer than the room is no error", spec, (int)a, (int)b);
            if (period) shifted += compare_shifted(s, g, period, gpu[a], gpu[b], rg, ng);
        }
    }
    /* multinode declares its nodes' shift: routes of more than one node vouched for by it */
    if (!strncmp(spec, "multinode:", 10) && strncmp(spec, "multinode:nodes=1,", 18) && metric == MT_ROUTE_HOPS &&
        shifted == 0)
        fail_msg("%s (ecmp %d): no route vouched for by the shift", spec, ecmp);
    int64_t structured, searched;
    mt_topo_route_counts(s, &structured, &searched);
    mt_topo_free(s);
    mt_topo_free(g);
    return structured;
}

static void check(const char *spec, int32_t step) {
    for (int ecmp = 0; ecmp < 2; ecmp++) {
        int64_t done = compare(spec, MT_ROUTE_HOPS, ecmp, step);
        if (done == 0) fail_msg("%s: the router answered no route", spec);
    }
    compare(spec, MT_ROUTE_LATENCY, 1, step);
}

static void small_shapes_all_pairs(void **state) {
    (void)state;
    const char *specs[] = {"ring:2", "ring:2,uni", "ring:3", "ring:7", "ring:8", "ring:8,uni", "fc:5",
                           "switch:1", "switch:9", "mesh:1x4", "mesh:3x5", "mesh:4x4", "torus:2x5",
                           "torus:3x3", "torus:4x6", "torus:5x4", "fattree:k=2", "fattree:k=4",
                           "fattree:k=6", "dgx-a100", "dgx-h100", "multinode:nodes=1,gpus=4",
                           "multinode:nodes=4,gpus=1", "multinode:nodes=3,gpus=4",
                           "multinode:nodes=3,gpus=4,fabric=switch", "multinode:nodes=2,gpus=1,fabric=switch"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        if (!strcmp(specs[i], "switch:1")) { /* one GPU: only the empty route */
            assert_int_equal(compare(specs[i], MT_ROUTE_HOPS, 0, 1), 2); /* mt_topo_route's and _once's */
            continue;
        }
        check(specs[i], 1);
    }
}

static void large_shapes_sampled(void **state) {
    (void)state;
    check("switch:4096", 509);
    check("ring:2048", 1021);
    check("ring:2047,uni", 1023);
    check("mesh:32x64", 511);
    check("torus:48x64", 767);
    check("fattree:k=24", 431);
    check("multinode:nodes=512,gpus=8", 1023);
    check("multinode:nodes=512,gpus=8,fabric=switch", 1023);
}

/* Where the router is not exact it stays out: two tiers of different latency under the latency
 * metric, and failed links. */
static void router_declines(void **state) {
    (void)state;
    mt_topo *t = build("multinode:nodes=2,gpus=2", MT_ROUTE_LATENCY, 0, 1);
    const int32_t *r;
    int32_t n;
    assert_int_equal(mt_topo_route(t, 0, 5, &r, &n, NULL), MT_OK);
    int64_t structured, searched;
    mt_topo_route_counts(t, &structured, &searched);
    assert_int_equal(structured, 0);
    assert_int_equal(searched, 1);
    mt_topo_free(t);
    t = build("switch:4", MT_ROUTE_HOPS, 0, 1);
    assert_int_equal(mt_topo_route(t, 0, 1, &r, &n, NULL), MT_OK);
    assert_int_equal(n, 2);
    assert_int_equal(mt_topo_set_link_failed(t, 6, 1, NULL), MT_OK); /* gpu3 -> sw0 */
    assert_int_equal(mt_topo_route(t, 0, 1, &r, &n, NULL), MT_OK);
    mt_topo_route_counts(t, &structured, &searched);
    assert_int_equal(structured, 1);
    assert_int_equal(searched, 1);
    mt_topo_free(t);
    /* the shift stays out where the links break it (one link's bandwidth) or a link failed */
    int32_t k = 1, out[8];
    for (int broken = 0; broken < 2; broken++) {
        t = build("multinode:nodes=3,gpus=2", MT_ROUTE_HOPS, 0, 1);
        if (broken) mt_topo_link_mut(t, mt_topo_nlinks(t) - 1)->bw_Bps *= 2;
        assert_int_equal(mt_topo_route(t, 0, 5, &r, &n, NULL), MT_OK); /* gpu0 -> node 1's gpu0 */
        int32_t r0[8];
        if (n > 0) memcpy(r0, r, (size_t)n * sizeof *r); /* an empty route's r may be NULL */
        assert_int_equal(mt_topo_route_shifted(t, 0, 5, r0, n, &k, 1, out, 1), !broken);
        int32_t step[8], kmin, kmax;
        assert_int_equal(mt_topo_route_shift_steps(t, 0, 5, r0, n, step, &kmin, &kmax), !broken);
        if (!broken) {
            mt_time_ps lat;
            assert_int_equal(mt_topo_route_latency(t, 0, 5, &lat, NULL), MT_OK); /* vouches for 5 -> 10 */
            assert_int_equal(mt_topo_set_link_failed(t, 0, 1, NULL), MT_OK); /* a link of another pair */
            assert_int_equal(mt_topo_route_shifted(t, 0, 5, r0, n, &k, 1, out, 1), 0);
            assert_int_equal(mt_topo_route_shift_steps(t, 0, 5, r0, n, step, &kmin, &kmax), 0);
            /* with a link failed the router declines: 5 -> 10 (0 -> 5 shifted) is answered by its
             * own route, not by the shift vouched for before the failure */
            const int32_t *rr;
            int32_t nr;
            assert_int_equal(mt_topo_route_lat(t, 5, 10, &rr, &nr, NULL, NULL), MT_OK);
            assert_int_equal(mt_topo_route_latency(t, 5, 10, &lat, NULL), MT_OK);
            assert_true(lat == mt_topo_path_latency(t, rr, nr));
        }
        mt_topo_free(t);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_shapes_all_pairs),
        cmocka_unit_test(large_shapes_sampled),
        cmocka_unit_test(router_declines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for netmodels/topologies: preset sizes, routes and bisections, JSON/CSV files
 * with overrides, and one-line errors that name the file and place. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netmodels/topologies.h"

static mt_topo *build(const char *spec) {
    mt_topo_params p;
    mt_topo_params_init(&p);
    mt_topo *t = NULL;
    mt_error err = {0};
    if (mt_topo_build(spec, &p, &t, &err) != MT_OK) fail_msg("%s: %s", spec, err.msg);
    return t;
}

static void counts(const char *spec, int nodes, int links, int gpus, double bis_GBps) {
    mt_topo *t = build(spec);
    int32_t ng;
    mt_topo_gpus(t, &ng);
    assert_int_equal(mt_topo_nnodes(t), nodes);
    assert_int_equal(mt_topo_nlinks(t), links);
    assert_int_equal(ng, gpus);
    double bis;
    assert_int_equal(mt_topo_bisection_Bps(t, &bis, NULL), MT_OK);
    if (bis_GBps >= 0 && !(bis / 1e9 > bis_GBps * 0.999 && bis / 1e9 < bis_GBps * 1.001))
        fail_msg("%s: bisection %g GB/s, want %g", spec, bis / 1e9, bis_GBps);
    mt_topo_free(t);
}

static void preset_shapes(void **state) {
    (void)state;
    counts("ring:8", 8, 16, 8, 200);        /* two links cross the cut, 100 GB/s each */
    counts("ring:8,uni", 8, 8, 8, 100);
    counts("fc:4", 4, 12, 4, 400);          /* 2 x 2 pairs cross */
    counts("switch:16", 17, 32, 16, 800);   /* 8 GPUs' uplinks */
    counts("mesh:4x4", 16, 48, 16, 400);    /* 4 vertical links cross the rank-order cut */
    counts("torus:4x4", 16, 64, 16, 800);
    counts("fattree:k=4", 16 + 20, 2 * 48, 16, 800); /* full bisection: 8 GPUs x 100 GB/s */
    counts("dgx1", 8, 32, 8, 150);          /* 0-4 (x2), 1-5 (x2), 2-6, 3-7: 6 NVLinks */
    counts("dgx-h100", 8 + 1 + 8, 32, 8, 1800);
    counts("multinode:nodes=2,gpus=4", 2 * (4 + 1 + 4) + 4, 2 * (8 + 8 + 8), 8, 200);
    counts("multinode:nodes=2,gpus=4,fabric=switch", 2 * (4 + 1 + 4) + 1, 48, 8, 200);
}

static void preset_errors(void **state) {
    (void)state;
    const char *bad[] = {"ring", "ring:0", "ring:x", "mesh:4", "fattree:k=3", "blob:4",
                         "multinode:nodes=2", "ring:8,speed=3", ""};
    mt_topo_params p;
    mt_topo_params_init(&p);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mt_topo *t = NULL;
        mt_error err = {0};
        assert_int_equal(mt_topo_build(bad[i], &p, &t, &err), MT_EINVAL);
        assert_null(t);
        assert_non_null(strstr(err.msg, "bad topology"));
        assert_null(strchr(err.msg, '\n'));
    }
}

/* Every preset of the table builds with its defaults and the GPU count its entry states, and a
 * spec argument the preset does not take is refused naming the preset's syntax. */
static void presets_table(void **state) {
    (void)state;
    int32_t n;
    const mt_topo_preset *p = mt_topo_presets(&n);
    assert_true(n >= 10);
    for (int32_t i = 0; i < n; i++) {
        char spec[96];
        mt_topo_spec s;
        /* sizes 4 (fattree: k=4), words and keys at their defaults */
        snprintf(spec, sizeof spec, "%s", p[i].name);
        for (int k = 0, first = 1; k < MT_PRESET_PARAMS_MAX && p[i].params[k].name; k++)
            if (p[i].params[k].def < 0) {
                size_t at = strlen(spec);
                snprintf(spec + at, sizeof spec - at, "%s%s=4", first ? ":" : ",", p[i].params[k].name);
                first = 0;
            }
        mt_error err = {0};
        if (mt_topo_spec_parse(spec, &s, &err) != MT_OK) fail_msg("%s: %s", spec, err.msg);
        assert_ptr_equal(s.preset, &p[i]);
        assert_ptr_equal(mt_topo_preset_find(spec), &p[i]);
        assert_true(p[i].link.bw_Bps > 0 && p[i].link.lat_ns >= 0);
        mt_topo *t = build(spec);
        int32_t ng;
        mt_topo_gpus(t, &ng);
        assert_int_equal(ng, p[i].gpus(s.v));
        for (int32_t l = 0; l < mt_topo_nlinks(t); l++) /* every link at a tier's default (dgx1: x1 or x2) */
            assert_true(fmod(mt_topo_link(t, l)->bw_Bps, p[i].link.bw_Bps) == 0 ||
                        mt_topo_link(t, l)->bw_Bps == p[i].nic.bw_Bps);
        mt_topo_free(t);
    }
    char nic[128];
    assert_string_equal(mt_topo_presets_with_nic(nic, sizeof nic), "dgx-a100, dgx-h100, multinode");
    assert_null(mt_topo_preset_find("dir/net.json"));
    assert_true(mt_topo_spec_is_file("net.csv"));
    const struct {
        const char *spec, *want;
    } bad[] = {
        {"dgx-h100:16", "bad topology 'dgx-h100:16': dgx-h100 takes no argument '16' (use dgx-h100)"},
        {"ring:8,k=4", "bad topology 'ring:8,k=4': ring takes no key 'k' (use ring:N[,uni])"},
        {"ring:8,4", "ring takes no further size '4'"},
        {"fattree:k=6,8", "fattree takes no further size '8'"},
        {"fattree:k=5", "k must be even (got 5)"},
        {"fattree:4,k=4", "k is given twice"},
        {"multinode:nodes=2,gpus=4,fabric=ring", "fabric must be one of rail|switch (got 'ring')"},
        {"multinode:gpus=4", "multinode needs nodes (use multinode:nodes=M,gpus=G[,fabric=rail|switch])"},
        {"mesh:2000x2000", "too many GPUs (at most 1048576)"},
        {"ring:0", "N must be 1 to 1048576 (got 0)"},
        {"blob:4", "unknown preset 'blob' (presets: ring, fc, switch, mesh, torus, fattree, dgx1, dgx-a100, "
                   "dgx-h100, multinode; or a .json/.csv file)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mt_topo_spec s;
        mt_error err = {0};
        assert_int_equal(mt_topo_spec_parse(bad[i].spec, &s, &err), MT_EINVAL);
        if (!strstr(err.msg, bad[i].want)) fail_msg("'%s': got '%s', want '%s'", bad[i].spec, err.msg, bad[i].want);
    }
    /* the help is the table: every preset's syntax and tier defaults */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_topo_presets_help(f);
    fclose(f);
    for (int32_t i = 0; i < n; i++) assert_non_null(strstr(buf, p[i].syntax));
    assert_non_null(strstr(buf, "link tier 25GB/s, 500ns"));
    assert_non_null(strstr(buf, "NIC tier 25GB/s, 2us"));
    free(buf);
    assert_true(mt_topo_file_tier.bw_Bps == 100e9 && mt_topo_hop_tier.bw_Bps == 12.5e9);
}

static void preset_parameters(void **state) {
    (void)state;
    mt_topo_params p;
    mt_topo_params_init(&p);
    p.link_bw_Bps = 7e9;
    p.link_lat_ns = 0;
    p.nic_bw_Bps = 3e9;
    mt_topo *t;
    assert_int_equal(mt_topo_build("dgx-a100", &p, &t, NULL), MT_OK);
    int kinds_seen = 0;
    for (int32_t l = 0; l < mt_topo_nlinks(t); l++) {
        const mt_link *k = mt_topo_link(t, l);
        int nic = mt_topo_kind(t, k->src) == MT_NODE_NIC || mt_topo_kind(t, k->dst) == MT_NODE_NIC;
        assert_true(k->bw_Bps == (nic ? 3e9 : 7e9));
        assert_int_equal(k->lat_ps, nic ? 2000000 : 0);
        kinds_seen |= 1 << nic;
    }
    assert_int_equal(kinds_seen, 3);
    mt_topo_free(t);
}

static char *fixture(const char *name) {
    static char buf[1024];
    const char *dir = getenv("MT_FIXTURES");
    snprintf(buf, sizeof buf, "%s/topo/%s", dir ? dir : "tests/fixtures", name);
    return buf;
}

static void json_file(void **state) {
    (void)state;
    mt_topo *t = build(fixture("slowlink.json"));
    assert_int_equal(mt_topo_nnodes(t), 4);
    assert_int_equal(mt_topo_nlinks(t), 6);
    int32_t g1 = mt_topo_find(t, "gpu1"), g2 = mt_topo_find(t, "gpu2"), sw = mt_topo_find(t, "sw0");
    assert_int_equal(mt_topo_kind(t, sw), MT_NODE_SWITCH);
    for (int32_t l = 0; l < mt_topo_nlinks(t); l++) {
        const mt_link *k = mt_topo_link(t, l);
        double want = k->src == g1 || k->dst == g1 ? 50e9 : (k->src == sw && k->dst == g2) ? 1e9 : 100e9;
        assert_true(k->bw_Bps == want);
        assert_int_equal(k->lat_ps, (k->src == g2 || k->dst == g2) ? 250000 : 1000000);
    }
    mt_topo_free(t);
}

static void csv_file(void **state) {
    (void)state;
    mt_topo *t = build(fixture("line.csv"));
    assert_int_equal(mt_topo_nnodes(t), 3);
    assert_int_equal(mt_topo_nlinks(t), 5); /* two duplex rows + one directed */
    const int32_t *r;
    int32_t n;
    assert_int_equal(mt_topo_route(t, 2, 0, &r, &n, NULL), MT_OK);
    assert_int_equal(n, 1);
    assert_true(mt_topo_link(t, r[0])->bw_Bps == 1e9);
    mt_topo_free(t);
}

static void expect_error(const char *name, mt_status code, const char *where) {
    mt_topo_params p;
    mt_topo_params_init(&p);
    mt_topo *t = NULL;
    mt_error err = {0};
    assert_int_equal(mt_topo_build(fixture(name), &p, &t, &err), code);
    assert_null(t);
    if (!strstr(err.msg, name) || !strstr(err.msg, where) || strchr(err.msg, '\n'))
        fail_msg("%s: message '%s' should name the file and '%s' on one line", name, err.msg, where);
}

static void file_errors(void **state) {
    (void)state;
    expect_error("badnode.json", MT_EFORMAT, "links[0].dst");
    expect_error("badbw.json", MT_EFORMAT, "links[0].bandwidth");
    expect_error("truncated.json", MT_EFORMAT, "json:2:");
    expect_error("badrow.csv", MT_EFORMAT, ":2:");
    expect_error("missing.json", MT_EIO, "missing.json");
}

/* Hop routes (the topology's own breadth-first search) against igraph_distances on the same
 * random graph, with and without failed links: every route is a path of the igraph length. */
static uint64_t lcg(uint64_t *x) {
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

static void check_against_igraph(mt_topo *t, int32_t n, const int32_t *esrc, const int32_t *edst, int32_t ne,
                                 const uint8_t *dead, uint64_t *seed) {
    igraph_vector_int_t ev;
    igraph_vector_int_init(&ev, 0);
    for (int32_t i = 0; i < ne; i++)
        if (!dead[i]) igraph_vector_int_push_back(&ev, esrc[i]), igraph_vector_int_push_back(&ev, edst[i]);
    igraph_t g;
    assert_int_equal(igraph_create(&g, &ev, n, IGRAPH_DIRECTED), IGRAPH_SUCCESS);
    igraph_matrix_t d;
    igraph_matrix_init(&d, 0, 0);
    assert_int_equal(igraph_distances(&g, &d, igraph_vss_all(), igraph_vss_all(), IGRAPH_OUT), IGRAPH_SUCCESS);
    for (int k = 0; k < 3000; k++) {
        int32_t a = (int32_t)(lcg(seed) % (uint64_t)n), b = (int32_t)(lcg(seed) % (uint64_t)n);
        const int32_t *links;
        int32_t nl;
        mt_error err = {0};
        mt_status rc = mt_topo_route(t, a, b, &links, &nl, &err);
        double want = MATRIX(d, a, b);
        if (want == IGRAPH_INFINITY) {
            assert_int_equal(rc, MT_ENOROUTE);
            continue;
        }
        assert_int_equal(rc, MT_OK);
        assert_int_equal(nl, (int32_t)want);
        int32_t at = a;
        for (int32_t i = 0; i < nl; i++) { /* a path from a to b over live links */
            const mt_link *L = mt_topo_link(t, links[i]);
            assert_int_equal(L->src, at);
            assert_false(mt_topo_link_failed(t, links[i]));
            at = L->dst;
        }
        assert_int_equal(at, b);
    }
    igraph_matrix_destroy(&d);
    igraph_destroy(&g);
    igraph_vector_int_destroy(&ev);
}

static void hop_routes_match_igraph(void **state) {
    (void)state;
    enum { N = 200, E = 700 };
    uint64_t seed = 12345;
    int32_t es[E], ed[E];
    uint8_t dead[E] = {0};
    for (int ecmp = 0; ecmp < 2; ecmp++) {
        mt_topo *t = mt_topo_new("random");
        for (int32_t v = 0; v < N; v++) assert_true(mt_topo_add_node(t, MT_NODE_SWITCH, NULL, NULL) >= 0);
        for (int32_t i = 0; i < E; i++) {
            es[i] = (int32_t)(lcg(&seed) % N);
            ed[i] = (int32_t)(lcg(&seed) % N);
            if (ed[i] == es[i]) ed[i] = (ed[i] + 1) % N; /* no self-loops */
            assert_int_equal(mt_topo_add_link(t, es[i], ed[i], 1e9, 0, NULL), i);
        }
        mt_topo_set_routing(t, MT_ROUTE_HOPS, ecmp);
        memset(dead, 0, sizeof dead);
        check_against_igraph(t, N, es, ed, E, dead, &seed);
        for (int k = 0; k < 60; k++) { /* fail links: routes are recomputed around them */
            int32_t l = (int32_t)(lcg(&seed) % E);
            dead[l] = 1;
            assert_int_equal(mt_topo_set_link_failed(t, l, 1, NULL), MT_OK);
        }
        check_against_igraph(t, N, es, ed, E, dead, &seed);
        mt_topo_free(t);
    }
}

/* More sources than the distance cache holds (4096 nodes: 1024 arrays): routes from sources
 * whose distances were dropped are recomputed right, and cached routes stay valid. */
static void route_cache_eviction(void **state) {
    (void)state;
    mt_topo *t = build("ring:4096");
    int32_t ng;
    const int32_t *g = mt_topo_gpus(t, &ng);
    assert_int_equal(ng, 4096);
    const int32_t *links;
    int32_t nl;
    for (int32_t i = 0; i < ng; i++) {
        assert_int_equal(mt_topo_route(t, g[i], g[(i + 7) % ng], &links, &nl, NULL), MT_OK);
        assert_int_equal(nl, 7);
    }
    for (int32_t i = 0; i < 100; i++) {
        assert_int_equal(mt_topo_route(t, g[i], g[(i + 2000) % ng], &links, &nl, NULL), MT_OK);
        assert_int_equal(nl, 2000);
        assert_int_equal(mt_topo_link(t, links[nl - 1])->dst, g[(i + 2000) % ng]);
        assert_int_equal(mt_topo_route(t, g[i], g[(i + ng - 3) % ng], &links, &nl, NULL), MT_OK);
        assert_int_equal(nl, 3); /* the other way round the ring */
        assert_int_equal(mt_topo_route(t, g[i], g[(i + 7) % ng], &links, &nl, NULL), MT_OK);
        assert_int_equal(nl, 7);
        assert_int_equal(mt_topo_link(t, links[0])->src, g[i]);
    }
    mt_topo_free(t);
}

/* mt_topo_route_lat: a source's 4 latest routes answer from its own cache line; asking for
 * more destinations than that in turn, and again, gives the same routes, each with its path
 * latency; a failed link empties the cache (the route goes the other way round). */
static void near_routes(void **state) {
    (void)state;
    mt_topo *t = build("ring:16");
    int32_t ng;
    const int32_t *g = mt_topo_gpus(t, &ng), *links;
    int32_t nl;
    mt_time_ps lat, hop = mt_topo_link(t, 0)->lat_ps;
    assert_true(hop > 0);
    for (int rep = 0; rep < 3; rep++)
        for (int32_t d = 1; d <= 7; d++) { /* 7 destinations through 4 ways */
            assert_int_equal(mt_topo_route_lat(t, g[0], g[d], &links, &nl, &lat, NULL), MT_OK);
            assert_int_equal(nl, d);
            assert_int_equal(lat, d * hop);
            assert_int_equal(lat, mt_topo_path_latency(t, links, nl));
            assert_int_equal(mt_topo_link(t, links[0])->src, g[0]);
            assert_int_equal(mt_topo_link(t, links[nl - 1])->dst, g[d]);
        }
    assert_int_equal(mt_topo_route_lat(t, g[0], g[1], &links, &nl, &lat, NULL), MT_OK);
    assert_int_equal(nl, 1);
    assert_int_equal(mt_topo_set_link_failed(t, links[0], 1, NULL), MT_OK);
    assert_int_equal(mt_topo_route_lat(t, g[0], g[1], &links, &nl, &lat, NULL), MT_OK);
    assert_int_equal(nl, 15);
    assert_int_equal(lat, 15 * hop);
    mt_topo_free(t);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(preset_shapes),   cmocka_unit_test(preset_errors),
        cmocka_unit_test(presets_table),
        cmocka_unit_test(preset_parameters), cmocka_unit_test(json_file),
        cmocka_unit_test(csv_file),        cmocka_unit_test(file_errors),
        cmocka_unit_test(hop_routes_match_igraph), cmocka_unit_test(route_cache_eviction),
        cmocka_unit_test(near_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

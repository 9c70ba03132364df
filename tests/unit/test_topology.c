/* Unit tests for netmodels/topologies: preset sizes, routes and bisections, JSON/CSV files
 * with overrides, and one-line errors that name the file and place. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
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

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(preset_shapes),   cmocka_unit_test(preset_errors),
        cmocka_unit_test(preset_parameters), cmocka_unit_test(json_file),
        cmocka_unit_test(csv_file),        cmocka_unit_test(file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

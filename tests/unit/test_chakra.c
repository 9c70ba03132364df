/* test_chakra.c — Chakra ET: the reader (tracer/chakra.h) on ASTRA-sim's fixtures and on
 * malformed bytes, and per-rank graphs run as given (sim/asis.h) against times worked out by
 * hand (compute durations plus mitosis's own collective and send times). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chakra.pb-c.h"
#include "netmodels/netcfg.h"
#include "network/topology.h"
#include "sim/asis.h"
#include "sim/collexec.h"
#include "tracer/chakra.h"

/* ---- building files in memory -------------------------------------------------------------- */

typedef struct buf {
    uint8_t b[8192];
    size_t n;
} buf;

static void put_varint(buf *o, uint64_t v) {
    do {
        o->b[o->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void put_msg(buf *o, const ProtobufCMessage *m) {
    size_t n = protobuf_c_message_get_packed_size(m);
    assert_true(o->n + n + 10 < sizeof o->b);
    put_varint(o, n);
    protobuf_c_message_pack(m, o->b + o->n);
    o->n += n;
}

static void put_meta(buf *o) {
    ChakraProtoMsg__GlobalMetadata gm;
    chakra_proto_msg__global_metadata__init(&gm);
    gm.version = (char *)"0.0.4";
    put_msg(o, &gm.base);
}

/* A node with up to two dependencies and up to three integer attributes (name, value). */
typedef struct ckspec {
    uint64_t id;
    int type;
    uint64_t dur_us;
    int ndeps;
    uint64_t deps[2];
    const char *attr[3];
    int64_t val[3];
    const char *pg;
} ckspec;

static void put_node(buf *o, const ckspec *s) {
    ChakraProtoMsg__Node m;
    chakra_proto_msg__node__init(&m);
    ChakraProtoMsg__AttributeProto a[4], *p[4];
    int na = 0;
    m.id = s->id;
    m.name = (char *)"n";
    m.type = (ChakraProtoMsg__NodeType)s->type;
    m.duration_micros = s->dur_us;
    m.n_data_deps = (size_t)s->ndeps;
    m.data_deps = (uint64_t *)s->deps;
    for (int i = 0; i < 3 && s->attr[i]; i++) {
        chakra_proto_msg__attribute_proto__init(&a[na]);
        a[na].name = (char *)s->attr[i];
        a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
        a[na].int64_val = s->val[i];
        p[na] = &a[na];
        na++;
    }
    if (s->pg) {
        chakra_proto_msg__attribute_proto__init(&a[na]);
        a[na].name = (char *)"pg_name";
        a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
        a[na].string_val = (char *)s->pg;
        p[na] = &a[na];
        na++;
    }
    m.n_attr = (size_t)na;
    m.attr = p;
    put_msg(o, &m.base);
}

static mt_status parse(const buf *o, mt_ck_graph *g, mt_error *err) {
    return mt_ck_parse("t.0.et", o->b, o->n, g, err);
}

/* ---- the reader ------------------------------------------------------------------------------ */

static void test_fixture(void **state) {
    (void)state;
    char path[1024];
    const char *shared = getenv("MT_SHARED_TRACES"); /* ../shared/traces: the fixtures are beside it */
    snprintf(path, sizeof path, "%s/../chakra/astra-sim-microbenchmarks/all_to_all_8npus_1MB/all_to_all.1.et",
             shared ? shared : "../shared/traces");
    FILE *f = fopen(path, "rb");
    if (!f) skip();
    fclose(f);
    mt_ck_graph g;
    mt_error err = {0};
    assert_int_equal(mt_ck_read(path, &g, &err), MT_OK);
    assert_string_equal(g.version, "0.0.4");
    assert_int_equal(g.n_nodes, 1);
    assert_int_equal(g.nodes[0].id, 1);
    assert_int_equal(g.nodes[0].type, MT_CK_COLL);
    assert_int_equal(g.nodes[0].comm_type, MT_CK_ALL_TO_ALL);
    assert_true(g.nodes[0].comm_bytes == 1048576.0);
    assert_null(g.nodes[0].pg);
    assert_int_equal(g.nodes[0].is_cpu, 0);
    mt_ck_graph_free(&g);
}

static void test_order_and_deps(void **state) {
    (void)state;
    buf o = {0};
    put_meta(&o);
    put_node(&o, &(ckspec){.id = 10, .type = MT_CK_COMP, .dur_us = 3, .ndeps = 1, .deps = {20}});
    put_node(&o, &(ckspec){.id = 20, .type = MT_CK_COMP, .dur_us = 5});
    mt_ck_graph g;
    mt_error err = {0};
    assert_int_equal(parse(&o, &g, &err), MT_OK);
    assert_int_equal(g.n_nodes, 2);
    assert_int_equal(g.nodes[0].ndeps, 1);
    assert_int_equal(g.deps[g.nodes[0].dep_begin], 1); /* id 20 is node 1 */
    assert_int_equal(g.order[0], 1);                    /* the dependency first */
    assert_int_equal(g.order[1], 0);
    assert_int_equal(g.nodes[1].duration_ps, 5000000);
    mt_ck_graph_free(&g);
    assert_int_equal(mt_ck_sniff((const char *)o.b, o.n), MT_SNIFF_YES);
    assert_int_equal(mt_ck_sniff("{\"nodes\": []}", 13), MT_SNIFF_NO);
}

/* Each malformed input is MT_EFORMAT with a message holding `want`. */
static void refused(const buf *o, const char *want) {
    mt_ck_graph g;
    mt_error err = {0};
    assert_int_equal(parse(o, &g, &err), MT_EFORMAT);
    if (!strstr(err.msg, want)) fail_msg("message '%s' lacks '%s'", err.msg, want);
    assert_non_null(strstr(err.msg, "t.0.et"));
    assert_null(g.nodes);
}

static void test_malformed(void **state) {
    (void)state;
    buf o = {0};
    o.b[o.n++] = 0xff; /* a varint whose continuation bit promises more */
    refused(&o, "truncated varint");

    buf cut = {0};
    put_meta(&cut);
    put_node(&cut, &(ckspec){.id = 1, .type = MT_CK_COMP, .dur_us = 3});
    cut.n -= 2; /* the node's last bytes missing */
    refused(&cut, "cut short");

    buf wrong = {0};
    put_meta(&wrong);
    put_varint(&wrong, 3); /* field 1 (id, a varint) sent length-delimited: 0x0a 0x01 'x' */
    wrong.b[wrong.n++] = 0x0a, wrong.b[wrong.n++] = 0x01, wrong.b[wrong.n++] = 'x';
    refused(&wrong, "not a Chakra Node");

    buf missing = {0};
    put_meta(&missing);
    put_node(&missing, &(ckspec){.id = 1, .type = MT_CK_COMP, .ndeps = 1, .deps = {7}});
    refused(&missing, "depends on node 7");

    buf cycle = {0};
    put_meta(&cycle);
    put_node(&cycle, &(ckspec){.id = 1, .type = MT_CK_COMP, .ndeps = 1, .deps = {3}});
    put_node(&cycle, &(ckspec){.id = 2, .type = MT_CK_COMP, .ndeps = 1, .deps = {1}});
    put_node(&cycle, &(ckspec){.id = 3, .type = MT_CK_COMP, .ndeps = 1, .deps = {2}});
    put_node(&cycle, &(ckspec){.id = 4, .type = MT_CK_COMP});
    refused(&cycle, "cycle");

    buf twice = {0};
    put_meta(&twice);
    put_node(&twice, &(ckspec){.id = 5, .type = MT_CK_COMP});
    put_node(&twice, &(ckspec){.id = 5, .type = MT_CK_COMP});
    refused(&twice, "appears twice");

    buf huge = {0};
    put_meta(&huge);
    put_node(&huge, &(ckspec){.id = 1, .type = MT_CK_COLL, .attr = {"comm_size"}, .val = {-4}});
    refused(&huge, "comm_size");
}

/* ---- running as given ------------------------------------------------------------------------- */

/* A flow model on `spec` (switch:2...) over a fresh engine. */
typedef struct netfix {
    mt_topo *topo;
    mt_engine *e;
    mt_netmodel net;
} netfix;

static void net_open(netfix *f, const char *spec, int32_t n) {
    mt_netcfg c;
    mt_netcfg_init(&c);
    c.topology = spec;
    mt_error err = {0};
    assert_int_equal(mt_netcfg_topology(&c, n, &f->topo, &err), MT_OK);
    assert_non_null(f->e = mt_engine_new());
    assert_int_equal(mt_netcfg_model(&c, f->topo, mt_engine_sched(f->e), &f->net, &err), MT_OK);
}

static void net_close(netfix *f) {
    mt_net_free(&f->net);
    mt_engine_free(f->e);
    mt_topo_free(f->topo);
}

/* mitosis's own time of the schedule p on spec, alone on a fresh network. */
static mt_time_ps schedule_ps(const char *spec, const mt_coll_params *p) {
    netfix f;
    net_open(&f, spec, p->nranks);
    mt_coll_schedule *s;
    mt_error err = {0};
    assert_int_equal(mt_coll_build(p, &s, &err), MT_OK);
    mt_time_ps t = 0;
    assert_int_equal(mt_collexec_time(s, &f.net, f.e, NULL, &t, &err), MT_OK);
    mt_coll_free(s);
    net_close(&f);
    return t;
}

/* Parses the two ranks' files and runs them on switch:2; the graphs and network are freed. */
static mt_status run_two(const buf f[2], mt_asis_result *res, mt_error *err) {
    mt_ck_graph g[2];
    for (int r = 0; r < 2; r++) assert_int_equal(mt_ck_parse("t.et", f[r].b, f[r].n, &g[r], err), MT_OK);
    netfix nf;
    net_open(&nf, "switch:2", 2);
    mt_status rc = mt_asis_run(g, 2, &nf.net, nf.e, NULL, res, err);
    net_close(&nf);
    for (int r = 0; r < 2; r++) mt_ck_graph_free(&g[r]);
    return rc;
}

/* Two ranks: compute 5 us (rank 0) and 2 us (rank 1), then an all-reduce of 1 MB on both, then
 * rank 0 computes 1 us more. The all-reduce starts when the later rank reaches it (5 us). */
static void test_asis_compute_then_allreduce(void **state) {
    (void)state;
    buf f[2];
    memset(f, 0, sizeof f);
    for (int r = 0; r < 2; r++) {
        put_meta(&f[r]);
        put_node(&f[r], &(ckspec){.id = 0, .type = MT_CK_COMP, .dur_us = r == 0 ? 5 : 2});
        put_node(&f[r], &(ckspec){.id = 1, .type = MT_CK_COLL, .ndeps = 1, .deps = {0}, .attr = {"comm_type", "comm_size"},
                                .val = {MT_CK_ALL_REDUCE, 1000000}});
        if (r == 0) put_node(&f[r], &(ckspec){.id = 2, .type = MT_CK_COMP, .dur_us = 1, .ndeps = 1, .deps = {1}});
    }
    mt_asis_result res;
    mt_error err = {0};
    assert_int_equal(run_two(f, &res, &err), MT_OK);
    mt_coll_params p;
    mt_coll_params_init(&p);
    p.nranks = 2, p.bytes = 1e6;
    mt_time_ps ar = schedule_ps("switch:2", &p);
    assert_true(ar > 0);
    assert_int_equal(res.finish_ps[1], 5000000 + ar);
    assert_int_equal(res.finish_ps[0], 5000000 + ar + 1000000);
    assert_int_equal(res.step_ps, res.finish_ps[0]);
    assert_int_equal(res.compute_ps[0], 6000000);
    assert_int_equal(res.collectives, 1);
    assert_int_equal(res.communicators, 1);
    mt_asis_result_free(&res);
}

/* Rank 0 sends 1 MB to rank 1 after 4 us of compute; rank 1's receive gates its compute of 3 us.
 * On switch:2 the send takes the same time as a sendrecv schedule of 1 MB. */
static void test_asis_send_recv(void **state) {
    (void)state;
    buf f[2];
    memset(f, 0, sizeof f);
    put_meta(&f[0]);
    put_node(&f[0], &(ckspec){.id = 0, .type = MT_CK_COMP, .dur_us = 4});
    put_node(&f[0], &(ckspec){.id = 1, .type = MT_CK_SEND, .ndeps = 1, .deps = {0}, .attr = {"comm_dst", "comm_size", "comm_tag"},
                            .val = {1, 1000000, 9}});
    put_meta(&f[1]);
    put_node(&f[1], &(ckspec){.id = 0, .type = MT_CK_RECV, .attr = {"comm_src", "comm_size", "comm_tag"}, .val = {0, 1000000, 9}});
    put_node(&f[1], &(ckspec){.id = 1, .type = MT_CK_COMP, .dur_us = 3, .ndeps = 1, .deps = {0}});
    mt_asis_result res;
    mt_error err = {0};
    assert_int_equal(run_two(f, &res, &err), MT_OK);
    mt_coll_params p; /* the transfer's time alone, as a one-send schedule */
    mt_coll_params_init(&p);
    p.op = MT_COLL_SENDRECV, p.nranks = 2, p.bytes = 1e6, p.root = 0, p.peer = 1;
    mt_time_ps xfer = schedule_ps("switch:2", &p);
    assert_int_equal(res.finish_ps[0], 4000000 + xfer);
    assert_int_equal(res.finish_ps[1], 4000000 + xfer + 3000000);
    assert_int_equal(res.sends, 1);
    mt_asis_result_free(&res);
}

/* Members that disagree: rank 1 has one all-reduce fewer; a receive whose send never comes. */
static void test_asis_refusals(void **state) {
    (void)state;
    buf f[2];
    memset(f, 0, sizeof f);
    for (int r = 0; r < 2; r++) {
        put_meta(&f[r]);
        put_node(&f[r], &(ckspec){.id = 0, .type = MT_CK_COLL, .attr = {"comm_type", "comm_size"}, .val = {0, 1000}});
        if (r == 0) put_node(&f[r], &(ckspec){.id = 1, .type = MT_CK_COLL, .attr = {"comm_type", "comm_size"}, .val = {0, 1000}});
    }
    mt_asis_result res;
    mt_error err = {0};
    assert_int_equal(run_two(f, &res, &err), MT_EFORMAT);
    assert_non_null(strstr(err.msg, "has 1 collectives but rank 0"));

    buf h[2];
    memset(h, 0, sizeof h);
    put_meta(&h[0]);
    put_node(&h[0], &(ckspec){.id = 0, .type = MT_CK_COMP, .dur_us = 1});
    put_meta(&h[1]);
    put_node(&h[1], &(ckspec){.id = 0, .type = MT_CK_RECV, .attr = {"comm_src", "comm_size"}, .val = {0, 10}});
    assert_int_equal(run_two(h, &res, &err), MT_EFORMAT);
    assert_non_null(strstr(err.msg, "never comes"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture),
        cmocka_unit_test(test_order_and_deps),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_asis_compute_then_allreduce),
        cmocka_unit_test(test_asis_send_recv),
        cmocka_unit_test(test_asis_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

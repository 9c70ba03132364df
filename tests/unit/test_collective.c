/* Unit tests for extrapolate/collective + sim/collexec on the flow model: the closed forms
 * of ring all-reduce (N = 2..64, within 0.1%), reduce-scatter/all-gather, direct exchange on a
 * switch, hier = intra + inter, schedule shapes and refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "extrapolate/collcache.h"
#include "extrapolate/collective.h"
#include "extrapolate/nccl.h"
#include "netmodels/registry.h"
#include "netmodels/topologies.h"
#include "sim/collexec.h"
#include "sim/engine.h"
#include "tests/unit/collfix.h"

/* Time (s) of a collective on a preset with GPU-tier bandwidth bw and latency lat_ns. */
static double run(const char *spec, double bw, double lat_ns, mt_coll_op op, mt_coll_algo algo,
                  double bytes, int32_t chunks, int32_t per_node) {
    mt_topo_params tp;
    mt_topo_params_init(&tp);
    tp.link_bw_Bps = bw;
    tp.link_lat_ns = lat_ns;
    tp.nic_bw_Bps = bw;
    tp.nic_lat_ns = lat_ns;
    mt_topo *t;
    mt_error err = {0};
    assert_int_equal(mt_topo_build(spec, &tp, &t, &err), MT_OK);
    int32_t n;
    mt_topo_gpus(t, &n);
    return collfix_time_s(t, collfix_build(op, algo, n, bytes, chunks, 0, per_node));
}

static void ring_allreduce_closed_form(void **state) {
    (void)state;
    const double S = 1e9, B = 100e9, alpha = 2e-6;
    double worst = 0;
    for (int n = 2; n <= 64; n++) {
        char spec[32];
        snprintf(spec, sizeof spec, "ring:%d", n);
        double got = run(spec, B, alpha * 1e9, MT_COLL_ALLREDUCE, MT_ALGO_RING, S, 1, 1);
        double want = 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * alpha;
        double rel = fabs(got - want) / want;
        if (rel > worst) worst = rel;
        assert_true(rel < 1e-3);
    }
    /* integer picoseconds: the error is rounding only */
    assert_true(worst < 1e-8);
}

static void ring_allgather_and_reducescatter(void **state) {
    (void)state;
    const double S = 64e6, B = 50e9, alpha = 1e-6;
    for (int n = 2; n <= 16; n *= 2) {
        char spec[32];
        snprintf(spec, sizeof spec, "ring:%d,uni", n);
        double want = (n - 1.0) / n * S / B + (n - 1) * alpha;
        for (int op = MT_COLL_REDUCESCATTER; op <= MT_COLL_ALLGATHER; op++) {
            double got = run(spec, B, alpha * 1e9, (mt_coll_op)op, MT_ALGO_RING, S, 1, 1);
            assert_true(fabs(got - want) / want < 1e-6);
        }
    }
}

/* On one non-blocking switch each GPU has one uplink and one downlink of bandwidth B: the
 * direct reduce-scatter sends (N-1) S/N through each uplink, sharing it fairly: the phase
 * takes (N-1)/N S/B plus two hops of latency; all-reduce is two such phases. */
static void direct_on_switch(void **state) {
    (void)state;
    const double S = 8e8, B = 100e9, alpha = 1e-6;
    for (int n = 2; n <= 32; n *= 2) {
        char spec[32];
        snprintf(spec, sizeof spec, "switch:%d", n);
        double phase = (n - 1.0) / n * S / B + 2 * alpha;
        double got = run(spec, B, alpha * 1e9, MT_COLL_ALLREDUCE, MT_ALGO_DIRECT, S, 1, 1);
        assert_true(fabs(got - 2 * phase) / (2 * phase) < 1e-6);
        got = run(spec, B, alpha * 1e9, MT_COLL_ALLTOALL, MT_ALGO_DIRECT, S, 1, 1);
        assert_true(fabs(got - phase) / phase < 1e-6);
        /* ring on the switch: same bandwidth term, two hops per step */
        got = run(spec, B, alpha * 1e9, MT_COLL_ALLREDUCE, MT_ALGO_RING, S, 1, 1);
        double want = 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * 2 * alpha;
        assert_true(fabs(got - want) / want < 1e-6);
    }
}

/* Pipelined chain broadcast on a uni ring: the root sends its C pieces back to back (a piece
 * leaves S/C/B after the previous one; it does not wait for it to arrive), the last leaves after
 * C piece times and needs N - 2 more hops of S/C/B + alpha, plus its first hop's alpha:
 * (C + N - 2) S/C/B + (N - 1) alpha. */
static void pipelined_broadcast(void **state) {
    (void)state;
    const double S = 32e6, B = 10e9, alpha = 1e-6;
    const int n = 8, c = 16;
    double got = run("ring:8,uni", B, alpha * 1e9, MT_COLL_BROADCAST, MT_ALGO_RING, S, c, 1);
    double want = (c + n - 2) * (S / c / B) + (n - 1) * alpha;
    assert_true(fabs(got - want) / want < 1e-6);
    double unpiped = run("ring:8,uni", B, alpha * 1e9, MT_COLL_BROADCAST, MT_ALGO_RING, S, 1, 1);
    assert_true(fabs(unpiped - (n - 1) * (S / B + alpha)) / unpiped < 1e-6);
}

/* hier on multinode with every tier at B: intra ring reduce-scatter over G, inter-node ring
 * all-reduce of S/G over M nodes, intra all-gather: each at its closed form. */
static void hier_allreduce(void **state) {
    (void)state;
    const double S = 1e9, B = 100e9;
    const int m = 4, g = 4;
    double got = run("multinode:nodes=4,gpus=4,fabric=rail", B, 0, MT_COLL_ALLREDUCE,
                     MT_ALGO_HIER, S, 1, g);
    double intra = (g - 1.0) / g * S / B;
    /* inter-node: GPU -> NIC -> rail switch -> NIC -> GPU, every link at B, one flow each */
    double inter = 2.0 * (m - 1) / m * (S / g) / B;
    double want = 2 * intra + inter;
    assert_true(fabs(got - want) / want < 1e-6);
}

static void tree_allreduce_is_sane(void **state) {
    (void)state;
    const double S = 256e6, B = 100e9;
    double tree = run("switch:16", B, 1000, MT_COLL_ALLREDUCE, MT_ALGO_TREE, S, 0, 1);
    double ring = run("switch:16", B, 1000, MT_COLL_ALLREDUCE, MT_ALGO_RING, S, 0, 1);
    /* bandwidth-optimal ring is the lower bound on a switch; a pipelined double tree moves S
     * up and S down per GPU link: about S/B, so between 2(N-1)/N S/B and ~1.5x that */
    double bound = 2.0 * 15 / 16 * S / B;
    assert_true(ring >= bound);
    assert_true(tree >= bound * 0.99 && tree < bound * 1.6);
}

static void schedule_shapes_and_refusals(void **state) {
    (void)state;
    mt_coll_params p;
    mt_coll_params_init(&p);
    p.nranks = 8;
    p.bytes = 8e6;
    mt_coll_schedule *s;
    assert_int_equal(mt_coll_build(&p, &s, NULL), MT_OK);
    assert_int_equal(s->nsends, 2 * 7 * 8);
    for (uint32_t i = 0; i < s->nsends; i++) {
        const mt_coll_send *x = &s->sends[i];
        assert_true(x->bytes == 1e6);
        assert_int_equal(x->dst, (x->src + 1) % 8);
        assert_int_equal(x->ndeps, i < 8 ? 0 : 2);
        if (i < 8) continue;
        /* step k of rank r: after r received step k-1 (from r-1), and after r's step k-1 on
         * the same connection r -> r+1 has left */
        uint32_t k = i / 8, prev = (k - 1) * 8;
        assert_int_equal(s->deps[x->dep_begin], prev + (uint32_t)(x->src + 7) % 8);
        assert_int_equal(s->deps[x->dep_begin + 1], (prev + (uint32_t)x->src) | MT_COLL_SENT);
    }
    mt_coll_free(s);
    mt_error err = {0};
    p.algo = MT_ALGO_TREE;
    p.op = MT_COLL_ALLTOALL;
    assert_int_equal(mt_coll_build(&p, &s, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "ring or direct"));
    p.algo = MT_ALGO_HIER;
    p.op = MT_COLL_ALLREDUCE;
    p.ranks_per_node = 3;
    assert_int_equal(mt_coll_build(&p, &s, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "multiple"));
    mt_coll_op op;
    assert_int_equal(mt_coll_op_parse("allgather", &op, NULL), MT_OK);
    assert_int_equal(op, MT_COLL_ALLGATHER);
    assert_int_equal(mt_coll_op_parse("allsum", &op, &err), MT_EINVAL);
    assert_true(fabs(mt_coll_busbw_factor(MT_COLL_ALLREDUCE, 8) - 1.75) < 1e-12);
}

/* The cache builds a schedule once per distinct parameters, in order of first use, and refuses
 * what mt_coll_build refuses. */
static void schedule_cache(void **state) {
    (void)state;
    mt_collcache c;
    mt_collcache_init(&c);
    mt_error err = {0};
    mt_coll_params p;
    mt_coll_params_init(&p);
    p.op = MT_COLL_ALLREDUCE;
    p.algo = MT_ALGO_RING;
    p.nranks = 8;
    p.bytes = 1e6;
    int64_t i = -1, j = -1;
    const mt_coll_schedule *a = mt_collcache_get(&c, &p, &i, &err);
    assert_non_null(a);
    assert_int_equal(i, 0);
    assert_ptr_equal(mt_collcache_get(&c, &p, &j, &err), a); /* the same request: the same schedule */
    assert_int_equal(j, 0);
    mt_coll_params q = p;
    q.nranks = 4; /* any field differing is another schedule */
    const mt_coll_schedule *b = mt_collcache_get(&c, &q, &j, &err);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    assert_int_equal(j, 1);
    assert_int_equal(b->p.nranks, 4);
    double share[4] = {0.25, 0.25, 0.25, 0.25};
    q.op = MT_COLL_ALLTOALL;
    q.algo = MT_ALGO_DIRECT;
    const mt_coll_schedule *even = mt_collcache_get(&c, &q, NULL, &err);
    q.share = share;
    const mt_coll_schedule *shared = mt_collcache_get(&c, &q, &j, &err);
    assert_non_null(even);
    assert_ptr_not_equal(even, shared);
    assert_int_equal(j, 3);
    assert_int_equal(c.n, 4);
    q.nranks = 0; /* refused by mt_coll_build: its error, nothing cached */
    assert_null(mt_collcache_get(&c, &q, NULL, &err));
    assert_int_not_equal(err.code, MT_OK);
    assert_int_equal(c.n, 4);
    mt_collcache_destroy(&c);
    assert_int_equal(c.n, 0);
}

/* NCCL's tuner (extrapolate/nccl.h) in closed form on tuning.cc's tables. */
static void nccl_tuner_closed_forms(void **state) {
    (void)state;
    mt_error err = {0};
    mt_nccl_cost c;
    /* 8 H100s on an NVSwitch (450 GB/s per GPU), 8 GiB all-reduce: NVLS Simple, busbw 0.60 x
     * 2 x 7/8 x 450 = 472.5 GB/s, latency 25 us (its NVLink latency, no base) */
    mt_nccl_fabric h = {8, 1, 450e9, 50e9, 1, MT_NCCL_HOPPER};
    double S = 8589934592.0;
    assert_int_equal(mt_nccl_tune(&h, MT_COLL_ALLREDUCE, S, -1, &c, &err), MT_OK);
    assert_int_equal(c.algo, MT_NCCL_NVLS);
    assert_int_equal(c.proto, MT_NCCL_SIMPLE);
    assert_true(fabs(c.busbw_Bps - 472.5e9) < 1e3);
    assert_true(fabs(c.time_us - (25 + S / (472.5e9 / 1.75) * 1e6)) < 1e-6);
    /* rings forced: Simple at 0.80 x 450 = 360 GB/s busbw, latency 8.4 + 14 x 3.4 = 56 us */
    assert_int_equal(mt_nccl_tune(&h, MT_COLL_ALLREDUCE, S, MT_NCCL_RING, &c, &err), MT_OK);
    assert_int_equal(c.proto, MT_NCCL_SIMPLE);
    assert_true(fabs(c.busbw_Bps - 360e9) < 1e3 && fabs(c.lat_us - 56.0) < 1e-9);
    /* 64 B: ring LL, latency 6.6 + 14 x 0.6 = 15.0 us (tree LL's is 6.8 + 2 x 7 x 0.6 = 15.2) */
    assert_int_equal(mt_nccl_tune(&h, MT_COLL_ALLREDUCE, 64, -1, &c, &err), MT_OK);
    assert_int_equal(c.algo, MT_NCCL_RING);
    assert_int_equal(c.proto, MT_NCCL_LL);
    assert_true(fabs(c.lat_us - 15.0) < 1e-9);
    /* LL's bandwidth: min(141 GB/s, 360 / 2) on one Hopper node */
    assert_true(fabs(c.busbw_Bps - 141e9) < 1e3);
    /* all-gather: rings only (n-1 steps: 8.4 + 7 x 3.4 latency on Simple) */
    assert_int_equal(mt_nccl_tune(&h, MT_COLL_ALLGATHER, S, -1, &c, &err), MT_OK);
    assert_int_equal(c.algo, MT_NCCL_RING);
    assert_true(fabs(c.lat_us - (8.4 + 7 * 3.4)) < 1e-9);
    /* A100s (Ampere): no NVLS; forcing it is refused in one line */
    mt_nccl_fabric a = {8, 1, 300e9, 25e9, 1, MT_NCCL_AMPERE};
    assert_int_equal(mt_nccl_tune(&a, MT_COLL_ALLREDUCE, S, MT_NCCL_NVLS, &c, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "NVLS"));
    assert_int_equal(mt_nccl_tune(&a, MT_COLL_ALLREDUCE, S, -1, &c, &err), MT_OK);
    assert_int_equal(c.algo, MT_NCCL_RING);
    assert_true(fabs(c.busbw_Bps - 240e9) < 1e3);
    /* 524,288 GPUs (65,536 nodes of 8, 400 Gb/s NICs), 1 GB: rings would pay 2 x 65,535
     * network steps of 14 us; trees pay 2 x (7 x 4 + log2(65536) x 14) = 504 us (Simple; LL128's
     * 289.5 us latency loses at 1 GB: 0.915 of Simple's bandwidth) */
    mt_nccl_fabric big = {524288, 65536, 450e9, 50e9, 1, MT_NCCL_HOPPER};
    assert_int_equal(mt_nccl_tune(&big, MT_COLL_ALLREDUCE, 1e9, -1, &c, &err), MT_OK);
    assert_int_equal(c.algo, MT_NCCL_TREE);
    assert_int_equal(c.proto, MT_NCCL_SIMPLE);
    assert_true(fabs(c.lat_us - 504.0) < 1e-9);
    /* across nodes: the NIC at 0.85 (42.5 GB/s of 50) */
    assert_true(mt_nccl_cost_of(&big, MT_COLL_ALLREDUCE, MT_NCCL_RING, MT_NCCL_SIMPLE, 1e9, &c));
    assert_true(fabs(c.busbw_Bps - 42.5e9) < 1e3);
    /* ring latency there: 8.4 + (2 x 524287 - 2 x 65535) x 3.4 + 2 x 65535 x 14 (3.4 s); the
     * plateau's x 1.9 only from n / 16 x 64 KiB = 2.1 GB up */
    assert_true(fabs(c.lat_us - (8.4 + (2.0 * 524287 - 2.0 * 65535) * 3.4 + 2.0 * 65535 * 14)) < 1e-3);
    assert_true(mt_nccl_cost_of(&big, MT_COLL_ALLREDUCE, MT_NCCL_RING, MT_NCCL_SIMPLE, 4e9, &c));
    assert_true(fabs(c.lat_us - 1.9 * (8.4 + (2.0 * 524287 - 2.0 * 65535) * 3.4 + 2.0 * 65535 * 14)) < 1e-2);
    /* a DDP step there (issue 44): its 25 MiB gradient buckets and 1 MiB first bucket go to trees,
     * each all-reduce well under 1 % of what the cheapest ring protocol pays in network latency
     * alone (2 x 65,535 steps of tuning.cc's 2.7 us, LL: 354 ms), so no step is ring-latency-bound */
    const double bucket[2] = {25.0 * 1048576, 1048576}, ring_floor_us = 2.0 * 65535 * 2.7;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(mt_nccl_tune(&big, MT_COLL_ALLREDUCE, bucket[k], -1, &c, &err), MT_OK);
        assert_int_equal(c.algo, MT_NCCL_TREE);
        assert_true(c.time_us < 0.01 * ring_floor_us);
    }
    /* all-to-all is point-to-point in NCCL: refused */
    assert_int_equal(mt_nccl_tune(&h, MT_COLL_ALLTOALL, S, -1, &c, &err), MT_EINVAL);
}

/* NCCL's protocol costs on a schedule (collective.h): a wire factor w multiplies the bandwidth term,
 * the extra latency comes after the last delivery. Ring all-reduce on ring:8: 2(N-1)/N w S/B +
 * 2(N-1) alpha + extra. Treeflow: O(N) flows, rail-aligned over whole nodes. */
static void protocol_costs_and_treeflow(void **state) {
    (void)state;
    const double S = 1e9, B = 100e9, alpha = 2e-6;
    mt_topo_params tp;
    mt_topo_params_init(&tp);
    tp.link_bw_Bps = B;
    tp.link_lat_ns = alpha * 1e9;
    mt_topo *t;
    mt_error err = {0};
    assert_int_equal(mt_topo_build("ring:8", &tp, &t, &err), MT_OK);
    mt_coll_params p = {.op = MT_COLL_ALLREDUCE, .algo = MT_ALGO_RING, .nranks = 8, .bytes = S, .peer = 1,
                        .chunks = 1, .wire_factor = 2, .extra_lat_ns = 10000};
    mt_coll_schedule *sch;
    assert_int_equal(mt_coll_build(&p, &sch, &err), MT_OK);
    double want = 2.0 * 7 / 8 * 2 * S / B + 14 * alpha + 10e-6;
    assert_true(fabs(collfix_time_s(t, sch) - want) / want < 1e-9);
    /* treeflow over 4 nodes of 8: one flow per rank to the next node on its rail (2S x 3/4), a
     * join, a chain of 2 x depth(3) - 1 = 3 hops */
    p = (mt_coll_params){.op = MT_COLL_ALLREDUCE, .algo = MT_ALGO_TREEFLOW, .nranks = 32, .bytes = S, .peer = 1,
                         .ranks_per_node = 8};
    assert_int_equal(mt_coll_build(&p, &sch, &err), MT_OK);
    assert_int_equal(sch->nsends, 32 + 1 + 3);
    for (uint32_t i = 0; i < 32; i++) {
        assert_int_equal(sch->sends[i].src % 8, sch->sends[i].dst % 8);
        assert_true(sch->sends[i].src / 8 != sch->sends[i].dst / 8);
        assert_true(fabs(sch->sends[i].bytes - 1.5 * S) < 1);
    }
    mt_coll_free(sch);
    /* one switch of 16 (flat): 2S x 15/16 / B through each uplink, one path of two links (2 alpha),
     * then the chain of 2 x depth(15) - 1 = 7 hops of two links each */
    mt_topo *sw;
    assert_int_equal(mt_topo_build("switch:16", &tp, &sw, &err), MT_OK);
    p.nranks = 16;
    p.ranks_per_node = 16;
    assert_int_equal(mt_coll_build(&p, &sch, &err), MT_OK);
    want = 2 * S * 15 / 16 / B + 2 * alpha + 7 * 2 * alpha;
    assert_true(fabs(collfix_time_s(sw, sch) - want) / want < 1e-9);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ring_allreduce_closed_form),
        cmocka_unit_test(ring_allgather_and_reducescatter),
        cmocka_unit_test(direct_on_switch),
        cmocka_unit_test(pipelined_broadcast),
        cmocka_unit_test(hier_allreduce),
        cmocka_unit_test(tree_allreduce_is_sane),
        cmocka_unit_test(schedule_shapes_and_refusals),
        cmocka_unit_test(schedule_cache),
        cmocka_unit_test(nccl_tuner_closed_forms),
        cmocka_unit_test(protocol_costs_and_treeflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

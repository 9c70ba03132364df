/* tests/unit/test_ep.c — expert parallelism (extrapolate/moe.h, pass_ep.c), uneven and hierarchical
 * all-to-alls (collective.h), on the moe-tiny fixture (tests/fixtures/moe-tiny: 2 MoE layers of 4
 * experts, top-2, 64 tokens; meta.json's expert_tokens 34/21/36/37 and 29/31/40/27, one token
 * dropped by the capacity of 40). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/collective.h"
#include "extrapolate/group.h"
#include "extrapolate/moe.h"
#include "extrapolate/plan.h"
#include "extrapolate/program.h"
#include "netmodels/registry.h"
#include "netmodels/topologies.h"
#include "sim/engine.h"
#include "sim/simulate.h"
#include "runfix.h"
#include "tracefix.h"

static mt_trace *moe_trace(void) { return mt_test_load_fixture("moe-tiny", "."); }

/* Dispatched bytes of one all-to-all of each MoE layer: routed rows x 64 x 4 bytes. */
#define DISPATCH0 (128.0 * 64 * 4)
#define DISPATCH1 (127.0 * 64 * 4)

static void test_moe_found(void **state) {
    (void)state;
    mt_trace *t = moe_trace();
    mt_moe *m = NULL;
    mt_error err = {0};
    assert_int_equal(mt_moe_find(t, &m, &err), MT_OK);
    assert_non_null(m);
    assert_int_equal(m->n_layers, 2);
    static const double rows[2][4] = {{34, 21, 36, 37}, {29, 31, 40, 27}};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(m->l[k].experts, 4);
        assert_int_equal(m->l[k].top_k, 2);
        assert_int_equal(m->l[k].per_expert, 2);
        assert_true(m->l[k].tokens == 64 && m->l[k].hidden == 64 && m->l[k].itemsize == 4);
        for (int e = 0; e < 4; e++) assert_true(m->traced[(size_t)k * MT_MOE_MAX_EXPERTS + e] == rows[k][e]);
        assert_true(m->l[k].first_fwd < m->l[k].last_fwd && m->l[k].first_bwd < m->l[k].last_bwd);
    }
    assert_true(m->l[1].routed == 127); /* 128 choices, one past capacity */
    /* traced shares: EP rank 1 of 2 holds experts 2, 3: (36 + 37) / 128 of layer 0 */
    assert_int_equal(mt_moe_plan(m, 2, -1, 0, &err), MT_OK);
    assert_true(fabs(m->rank_share[1] - 73.0 / 128) < 1e-12);
    assert_true(fabs(mt_moe_op_factor(m, m->l[0].first_fwd, 1) - 2 * 73.0 / 128) < 1e-12);
    assert_int_equal(mt_moe_plan(m, 3, -1, 0, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--ep 3 does not divide the 4 experts"));
    mt_moe_free(m);
    mt_trace_free(t);
}

typedef fix_run_out run_out;

/* On 10 GB/s links with 1 us of latency. */
static run_out run(const mt_trace *t, mt_plan pl, const char *spec) { return fix_run(t, pl, spec, 10e9, 1000); }

static void run_free(run_out *o) { fix_run_free(o); }

static mt_plan ep_plan(int32_t gpus, int32_t ep, double skew) {
    mt_plan p;
    mt_plan_init(&p);
    p.gpus = gpus;
    p.ep = ep;
    p.expert_skew = skew;
    return p;
}

/* Uniform routing: each GPU sends (E-1)/E of what it dispatches, 4 all-to-alls per MoE layer. */
static void test_uniform_alltoall_bytes(void **state) {
    (void)state;
    mt_trace *t = moe_trace();
    run_out o = run(t, ep_plan(4, 4, 0), "switch:4");
    double want = 0.75 * 4 * (DISPATCH0 + DISPATCH1);
    for (int32_t i = 0; i < 4; i++) {
        assert_true(fabs(o.res->gpus[i].traffic_bytes[MT_TRAFFIC_ALLTOALL] - want) < 1e-6);
        /* even load: every GPU computes the same */
        assert_true(llabs((long long)(o.res->gpus[i].compute_ps - o.res->gpus[0].compute_ps)) < 10);
    }
    run_free(&o);
    mt_trace_free(t);
}

/* Expert gradients go to edp (the dp replicas of the same experts), never to the DP group. */
static void test_expert_grads_not_on_dp(void **state) {
    (void)state;
    mt_trace *t = moe_trace();
    mt_moe *m = NULL;
    mt_error err = {0};
    assert_int_equal(mt_moe_find(t, &m, &err), MT_OK);
    double experts = m->l[0].grad_bytes + m->l[1].grad_bytes;
    mt_moe_free(m);
    mt_plan p = ep_plan(8, 4, 0);
    p.bucket_bytes = 1e12; /* one DDP bucket of every dense gradient */
    run_out o = run(t, p, "switch:8");
    int edp = -1;
    for (int k = 0; k < o.prog->groups.n_kinds; k++)
        if (!strcmp(o.prog->groups.kind[k].name, "edp")) edp = k;
    assert_true(edp > MT_GROUP_DP);
    assert_int_equal(mt_group_size(&o.prog->groups, MT_GROUP_DP), 8);
    assert_int_equal(mt_group_size(&o.prog->groups, edp), 2);
    double on_dp = 0, on_edp = 0;
    const mt_stage_program *sp = &o.prog->stages[0];
    for (int32_t i = 0; i < sp->n_tasks; i++) {
        const mt_task *k = &sp->tasks[i];
        if (k->kind != MT_TASK_COLL || k->coll != MT_COLL_ALLREDUCE) continue;
        if (k->group == MT_GROUP_DP) on_dp += k->bytes;
        if (k->group == edp) on_edp += k->bytes;
    }
    assert_true(fabs(on_edp - experts / 4) < 1);
    assert_true(fabs(on_dp - (t->param_bytes - experts)) < 1); /* the dense ones only */
    run_free(&o);
    mt_trace_free(t);
}

/* A hot expert (Zipf 3): its rank receives its share of every dispatch and computes the most. */
static void test_hot_expert(void **state) {
    (void)state;
    mt_trace *t = moe_trace();
    run_out o = run(t, ep_plan(4, 4, 3), "switch:4");
    const mt_moe *m = o.prog->moe;
    assert_true(m->hot_share > 0.6);
    int32_t hot = m->hot_rank;
    for (int32_t i = 0; i < 4; i++)
        if (i != hot) assert_true(o.res->gpus[hot].compute_ps > o.res->gpus[i].compute_ps);
    assert_non_null(strstr(o.prog->warning, "straggler"));
    run_free(&o);
    mt_trace_free(t);
}

static double received(const mt_coll_schedule *s, int32_t r) {
    double x = 0;
    for (uint32_t i = 0; i < s->nsends; i++)
        if (s->sends[i].dst == r && s->sends[i].src != r) x += s->sends[i].bytes;
    return x;
}

static double sent(const mt_coll_schedule *s, int32_t r) {
    double x = 0;
    for (uint32_t i = 0; i < s->nsends; i++)
        if (s->sends[i].src == r && s->sends[i].dst != r) x += s->sends[i].bytes;
    return x;
}

/* Rank 0 holds the hot expert (70 %): it receives 0.7 S from each of 3 ranks in the dispatch and
 * sends 0.7 S to each in the combine; pairwise and direct alike. */
static void test_uneven_alltoall(void **state) {
    (void)state;
    static const double share[4] = {0.7, 0.1, 0.1, 0.1};
    mt_coll_algo algos[2] = {MT_ALGO_RING, MT_ALGO_DIRECT};
    for (int a = 0; a < 2; a++)
        for (int by_src = 0; by_src < 2; by_src++) {
            mt_coll_params p;
            mt_coll_params_init(&p);
            p.op = MT_COLL_ALLTOALL;
            p.algo = algos[a];
            p.nranks = 4;
            p.bytes = 1000;
            p.share = share;
            p.share_by_src = (int8_t)by_src;
            mt_coll_schedule *s = NULL;
            mt_error err = {0};
            assert_int_equal(mt_coll_build(&p, &s, &err), MT_OK);
            if (!by_src) {
                assert_true(fabs(received(s, 0) - 3 * 700) < 1e-9);
                assert_true(fabs(received(s, 1) - 3 * 100) < 1e-9);
                assert_true(fabs(sent(s, 1) - (700 + 100 + 100)) < 1e-9);
            } else {
                assert_true(fabs(sent(s, 0) - 3 * 700) < 1e-9);
                assert_true(fabs(received(s, 0) - 3 * 100) < 1e-9);
            }
            mt_coll_free(s);
        }
}

/* Hierarchical all-to-all over 2 nodes of 4: intra-node 3 x (2 S/8), inter-node 1 x (4 S/8) per rank;
 * every rank receives as much as it sends. */
static void test_hier_alltoall(void **state) {
    (void)state;
    mt_coll_params p;
    mt_coll_params_init(&p);
    p.op = MT_COLL_ALLTOALL;
    p.algo = MT_ALGO_HIER;
    p.nranks = 8;
    p.ranks_per_node = 4;
    p.bytes = 800;
    mt_coll_schedule *s = NULL;
    mt_error err = {0};
    assert_int_equal(mt_coll_build(&p, &s, &err), MT_OK);
    for (int32_t r = 0; r < 8; r++) {
        double inter = 0;
        for (uint32_t i = 0; i < s->nsends; i++)
            if (s->sends[i].src == r && s->sends[i].src / 4 != s->sends[i].dst / 4) inter += s->sends[i].bytes;
        assert_true(fabs(sent(s, r) - (3 * 200 + 400)) < 1e-9);
        assert_true(fabs(inter - 400) < 1e-9); /* one message to the other node: 4 x 100 */
        assert_true(fabs(received(s, r) - sent(s, r)) < 1e-9);
    }
    mt_coll_free(s);
    p.nranks = 6;
    assert_int_equal(mt_coll_build(&p, &s, &err), MT_EINVAL);
}

/* Table-wise embeddings over 4 replicas: in forward an owner sends every other rank its tables'
 * pooled output ((R-1) x S x share), in backward every rank sends each owner the gradient of that
 * owner's share; the tables are never all-reduced. */
static void test_table_wise(void **state) {
    (void)state;
    mt_trace *t = mt_test_load_fixture("dlrm-tiny", ".");
    mt_plan p;
    mt_plan_init(&p);
    p.gpus = 4;
    p.emb_shard = MT_EMB_TABLE;
    run_out o = run(t, p, "switch:4");
    const mt_stage_program *sp = &o.prog->stages[0];
    double S = -1, ar = 0;
    int a2a = 0;
    for (int32_t i = 0; i < sp->n_tasks; i++) {
        const mt_task *k = &sp->tasks[i];
        if (k->kind != MT_TASK_COLL) continue;
        if (k->coll == MT_COLL_ALLTOALL) {
            a2a++;
            assert_true(S < 0 || S == k->bytes);
            S = k->bytes;
        } else {
            ar += k->bytes;
        }
    }
    assert_int_equal(a2a, 2);
    assert_true(S > 0);
    double shares = 0;
    for (int32_t r = 0; r < 4; r++) {
        double f = o.prog->emb_share[r];
        shares += f;
        assert_true(fabs(o.res->gpus[r].traffic_bytes[MT_TRAFFIC_ALLTOALL] - (3 * S * f + S * (1 - f))) < 1e-6);
    }
    assert_true(fabs(shares - 1) < 1e-12);
    assert_true(ar < 0.1 * t->param_bytes); /* the dense MLPs only */
    run_free(&o);
    mt_trace_free(t);
}

/* Expert tensor parallelism of size S = 2 under T = 4, D = 2 (mesh tp, dp; rank = tp + 4 dp), as Megatron-Core's
 * expert rank generator builds it (etp innermost): expert-TP groups {0,1} {2,3} {4,5} {6,7}, expert-data-parallel
 * groups of T x D / S = 4 ranks at the same expert-TP slot: {0,2,4,6} and {1,3,5,7}. */
static void test_expert_tp_groups(void **state) {
    (void)state;
    mt_mesh m;
    mt_mesh_init(&m, 2, 0, 4, 1, 1, 1, "tpd");
    mt_groups g;
    mt_groups_init(&g, &m);
    int etp = mt_groups_add(&g, MT_DIM_BIT(MT_DIM_TP), 2, "etp");
    int edp = mt_groups_add_strided(&g, MT_DIMS_DP | MT_DIM_BIT(MT_DIM_TP), 2, "edp");
    assert_int_equal(mt_group_size(&g, etp), 2);
    assert_int_equal(mt_group_count(&g, etp), 4);
    assert_int_equal(mt_group_size(&g, edp), 4);
    assert_int_equal(mt_group_count(&g, edp), 2);
    static const int32_t want[2][4] = {{0, 2, 4, 6}, {1, 3, 5, 7}};
    for (int32_t r = 0; r < 8; r++) {
        assert_int_equal(mt_group_member(&g, etp, r, 0), r / 2 * 2);
        assert_int_equal(mt_group_member(&g, etp, r, 1), r / 2 * 2 + 1);
        assert_int_equal(mt_group_id(&g, edp, r), r % 2);
        assert_int_equal(mt_group_slot(&g, edp, r), r / 2);
        for (int32_t k = 0; k < 4; k++) assert_int_equal(mt_group_member(&g, edp, r, k), want[r % 2][k]);
    }
    assert_int_equal(mt_groups_add_strided(&g, MT_DIMS_DP | MT_DIM_BIT(MT_DIM_TP), 2, "edp"), edp); /* added once */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_found),
        cmocka_unit_test(test_uniform_alltoall_bytes),
        cmocka_unit_test(test_expert_grads_not_on_dp),
        cmocka_unit_test(test_hot_expert),
        cmocka_unit_test(test_uneven_alltoall),
        cmocka_unit_test(test_hier_alltoall),
        cmocka_unit_test(test_table_wise),
        cmocka_unit_test(test_expert_tp_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

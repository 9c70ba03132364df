/* Unit tests for a multi-rank trace's own communication: what each collective call moved
 * (tracer/kcomm.h), the traced plan (extrapolate/traced.h), its collectives kept in the programs
 * (plan comm traced) and simulated on groups of their traced size (extrapolate/group.h), and the
 * pipeline partitioner's cuts (extrapolate/stages.h). Fixtures in tests/fixtures/comm, every
 * number below worked out from their events:
 *  - nccl-rank.json, rank 1 of 4 (pg_config: default_pg of 4, tp_pg of 2): record_param_comms
 *    inside c10d:: ops inside ops: an all-to-all (1000 Float in, 800 out: S = 4000 B, group 4), an
 *    all-gather (100 -> 200 BFloat16: S = 400 B, no Group size: tp_pg's 2), a wait, and a DDP
 *    all-reduce (2048 Float, group 4) inside AccumulateGrad, whose 150 us NCCL kernel is
 *    communication: backward compute is gemm_bwd 80 + add 10 us;
 *  - old-format-rank.json, rank 0 of 8 without pg_config, record_param_comms without args (as
 *    PyTorch 1.x wrote them): the sizes come from the backend event's tensors (nccl:*) and the
 *    c10d:: op's (a reduce-scatter of [32, 4] into [8, 4]: S = 512 B, group 32/8 = 4), the
 *    all-to-all and the all-reduce's group is the world size, assumed; a *_Wait op moves nothing;
 *  - gloo-cpu-rank.json, rank 0 of 2 on gloo (CPU, PyTorch 1.13): gloo runs an all-reduce on its
 *    worker thread for the c10d::allreduce_ the AccumulateGrad op made (one collective, issued by
 *    that op), an all-to-all on another worker with no call around it (issued by the op before it),
 *    and a send inside c10d::send; collective calls are in no phase. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/program.h"
#include "extrapolate/traced.h"
#include "run/simrun.h"
#include "tracer/trace.h"
#include "tracefix.h"

#define US(x) ((int64_t)(x) * 1000) /* us -> ns */

static mt_trace *load(const char *name) { return mt_test_load_fixture("comm", name); }

/* The i-th collective of the step (instances, in call order). */
static const trace_coll *nth(const mt_trace *t, int i) {
    for (int32_t c = 0; c < t->n_colls; c++)
        if (t->colls[c].instance && i-- == 0) return &t->colls[c];
    fail_msg("the trace has fewer collectives");
    return NULL;
}

static int n_instances(const mt_trace *t) {
    int n = 0;
    for (int32_t c = 0; c < t->n_colls; c++) n += t->colls[c].instance;
    return n;
}

static const char *issuer(const mt_trace *t, const trace_coll *c) {
    return c->issued_by >= 0 ? t->ops[c->issued_by].name : "(none)";
}

static void nccl_rank_reads_record_param_comms(void **state) {
    (void)state;
    mt_trace *t = load("nccl-rank.json");
    assert_int_equal(t->dist.world_size, 4);
    assert_int_equal(t->dist.rank, 1);
    assert_string_equal(t->dist.backend, "nccl");
    assert_int_equal(t->dist.n_pgs, 2);
    assert_int_equal(n_instances(t), 3); /* the wait is not one */
    const trace_coll *a2a = nth(t, 0), *ag = nth(t, 1), *ar = nth(t, 2);
    assert_int_equal(a2a->kind, TRACE_COMM_ALLTOALL);
    assert_true(a2a->bytes == 4000);
    assert_int_equal(a2a->group, 4);
    assert_int_equal(a2a->group_src, TRACE_GROUP_RECORDED);
    assert_string_equal(a2a->dtype, "Float");
    assert_string_equal(a2a->pg, "default_pg");
    assert_string_equal(issuer(t, a2a), "aten::mm"); /* the c10d:: op is only the call */
    assert_int_equal(ag->kind, TRACE_COMM_ALLGATHER);
    assert_true(ag->bytes == 400);
    assert_int_equal(ag->group, 2);
    assert_int_equal(ag->group_src, TRACE_GROUP_PG);
    assert_string_equal(ag->pg, "tp_pg");
    assert_int_equal(ar->kind, TRACE_COMM_ALLREDUCE);
    assert_true(ar->bytes == 8192);
    assert_int_equal(ar->group, 4);
    assert_string_equal(issuer(t, ar), "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
    /* NCCL kernels are communication, in no phase */
    assert_int_equal(t->phase_ns[TRACE_PHASE_FORWARD], US(100));
    assert_int_equal(t->phase_ns[TRACE_PHASE_BACKWARD], US(90));
    mt_trace_free(t);
}

static void old_format_reads_backend_tensors(void **state) {
    (void)state;
    mt_trace *t = load("old-format-rank.json");
    assert_int_equal(t->dist.world_size, 8);
    assert_int_equal(t->dist.rank, 0);
    assert_int_equal(n_instances(t), 3);
    const trace_coll *rs = nth(t, 0), *a2a = nth(t, 1), *ar = nth(t, 2);
    assert_int_equal(rs->kind, TRACE_COMM_REDUCESCATTER);
    assert_true(rs->bytes == 512);
    assert_int_equal(rs->group, 4);
    assert_int_equal(rs->group_src, TRACE_GROUP_SHAPES);
    assert_int_equal(a2a->kind, TRACE_COMM_ALLTOALL);
    assert_true(a2a->bytes == 2560); /* the input, 640 floats, as nccl:all_to_all has it */
    assert_int_equal(a2a->group, 8);
    assert_int_equal(a2a->group_src, TRACE_GROUP_WORLD);
    assert_int_equal(ar->kind, TRACE_COMM_ALLREDUCE);
    assert_true(ar->bytes == 12000); /* nccl:all_reduce's 3000 floats: c10d:: holds a TensorList */
    assert_int_equal(ar->group_src, TRACE_GROUP_WORLD);
    for (int32_t i = 0; i < t->n_ops; i++) /* a wait moves nothing: an op, not a collective */
        if (!strcmp(t->ops[i].name, "ReduceScatterBase_Wait")) assert_int_equal(t->ops[i].comm, TRACE_COMM_NONE);
    mt_trace_free(t);
}

static void gloo_worker_events_are_the_collectives(void **state) {
    (void)state;
    mt_trace *t = load("gloo-cpu-rank.json");
    assert_int_equal(t->dist.world_size, 2);
    assert_int_equal(n_instances(t), 3); /* c10d::allreduce_ only enqueued gloo's work */
    const trace_coll *a2a = nth(t, 0), *ar = nth(t, 1), *send = nth(t, 2);
    assert_int_equal(a2a->kind, TRACE_COMM_ALLTOALL);
    assert_true(a2a->bytes == 1024);
    assert_string_equal(issuer(t, a2a), "aten::relu");
    assert_int_equal(ar->kind, TRACE_COMM_ALLREDUCE);
    assert_true(ar->bytes == 8320);
    assert_int_equal(ar->group, 2);
    assert_int_equal(ar->group_src, TRACE_GROUP_PG); /* the job's one process group */
    assert_string_equal(issuer(t, ar), "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
    assert_int_equal(send->kind, TRACE_COMM_SEND);
    assert_true(send->bytes == 400);
    /* the collective calls are in no phase: forward is linear + relu + sum */
    assert_int_equal(t->phase_ns[TRACE_PHASE_FORWARD], US(150));
    mt_traced_plan p;
    mt_traced_plan_read(t, &p);
    assert_true(p.multi_rank);
    assert_int_equal(p.n_colls, 3);
    assert_int_equal(p.kinds[TRACE_COMM_SEND].count, 1);
    mt_trace_free(t);
}

static void traced_plan_of_a_ddp_rank(void **state) {
    (void)state;
    mt_trace *t = load("nccl-rank.json");
    mt_traced_plan p;
    mt_traced_plan_read(t, &p);
    assert_true(p.multi_rank);
    assert_int_equal(p.world_size, 4);
    assert_int_equal(p.rank, 1);
    assert_int_equal(p.n_colls, 3);
    assert_int_equal(p.n_group_assumed, 0);
    assert_true(p.allreduce_bytes == 8192);
    assert_true(p.param_bytes == 8192); /* AccumulateGrad's 2048 floats */
    assert_true(p.param_share == 1.0);
    assert_int_equal(p.sync, MT_TRACED_DDP);
    char line[256];
    mt_traced_plan_describe(&p, line, sizeof line);
    assert_non_null(strstr(line, "rank 1 of 4 (nccl)"));
    mt_trace_free(t);
}

/* The program of t under plan (gpus 0: the default) with comm mode m. */
static mt_program *program(const mt_trace *t, int32_t gpus, mt_comm_mode m) {
    mt_plan pl;
    mt_plan_init(&pl);
    pl.gpus = gpus;
    pl.comm = m;
    mt_error err = {0};
    assert_int_equal(mt_plan_resolve(&pl, t, &err), MT_OK);
    mt_program *p = NULL;
    assert_int_equal(mt_program_build(t, &pl, NULL, &p, &err), MT_OK);
    return p;
}

static void kept_collectives_match_the_trace(void **state) {
    (void)state;
    mt_trace *t = load("nccl-rank.json");
    mt_program *p = program(t, 0, MT_COMM_AUTO);
    assert_int_equal(p->plan.gpus, 4); /* the job's world size */
    assert_int_equal(p->plan.comm, MT_COMM_TRACED);
    assert_int_equal(p->ddp_buckets, 0);
    assert_int_equal(p->traced_colls, 3);
    const mt_stage_program *sp = &p->stages[0];
    int seen = 0;
    for (int32_t k = 0; k < sp->n_tasks; k++) {
        const mt_task *x = &sp->tasks[k];
        if (x->kind != MT_TASK_COLL) continue;
        assert_true(x->traced >= 0);
        const trace_coll *c = &t->colls[x->traced];
        assert_true(x->bytes == c->bytes); /* the traced batch: factor 1 */
        assert_int_equal(mt_group_size(&p->groups, x->group), c->group);
        assert_int_equal(x->blocking, c->kind != TRACE_COMM_ALLREDUCE);
        seen++;
    }
    assert_int_equal(seen, 3);
    assert_int_equal(p->groups.n_sub, 1); /* tp_pg: pairs of the 4 ranks */
    mt_program_free(p);
    p = program(t, 4, MT_COMM_REGENERATE);
    assert_int_equal(p->traced_colls, 0);
    assert_true(p->ddp_buckets >= 1);
    mt_program_free(p);
    mt_trace_free(t);
}

static void kept_collectives_run_on_their_groups(void **state) {
    (void)state;
    mt_trace *t = load("nccl-rank.json");
    mt_simrun_cfg cfg;
    mt_simrun_cfg_init(&cfg);
    cfg.host_model = MT_HOST_NONE;
    mt_simrun r;
    mt_error err = {0};
    assert_int_equal(mt_simrun_run(t, NULL, &cfg, &r, &err), MT_OK);
    /* the all-to-all and the all-reduce once on the 4 ranks, the all-gather once per pair */
    assert_int_equal(r.res->collectives, 4);
    assert_true(r.res->coll_bytes == 4000 + 2 * 400 + 8192);
    mt_simrun_free(&r);
    mt_trace_free(t);
}

static void a_send_is_an_exchange_with_the_peer(void **state) {
    (void)state;
    mt_trace *t = load("gloo-cpu-rank.json");
    mt_program *p = program(t, 0, MT_COMM_AUTO);
    assert_int_equal(p->plan.gpus, 2);
    int found = 0;
    for (int32_t k = 0; k < p->stages[0].n_tasks; k++) {
        const mt_task *x = &p->stages[0].tasks[k];
        if (x->kind != MT_TASK_COLL || t->colls[x->traced].kind != TRACE_COMM_SEND) continue;
        assert_int_equal(x->coll, MT_COLL_ALLTOALL); /* each rank sends its 400 B to the other */
        assert_true(x->bytes == 800);
        found++;
    }
    assert_int_equal(found, 1);
    mt_program_free(p);
    mt_trace_free(t);
}

/* A rank whose collectives are sends and receives only is a pipeline stage (traced.h: pipeline); its
 * micro-batches M from its sends: at either end one per micro-batch (the first stage sends its
 * activations, the last their gradients back), in the middle two (both), as GPipe over send/recv. */
static int32_t stage_micro(int32_t world, int32_t rank, int sends, int recvs, mt_traced_sync *sync) {
    mt_trace t;
    trace_coll c[32];
    memset(&t, 0, sizeof t);
    memset(c, 0, sizeof c);
    assert_true(sends + recvs <= 32);
    for (int i = 0; i < sends + recvs; i++) {
        c[i].kind = i < sends ? TRACE_COMM_SEND : TRACE_COMM_RECV;
        c[i].bytes = 1024;
        c[i].instance = 1;
        c[i].op = c[i].issued_by = -1;
    }
    t.colls = c;
    t.n_colls = sends + recvs;
    t.dist.world_size = world;
    t.dist.rank = rank;
    mt_traced_plan p;
    mt_traced_plan_read(&t, &p);
    *sync = p.sync;
    return p.pipe_micro;
}

static void traced_plan_of_a_pipeline_stage(void **state) {
    (void)state;
    mt_traced_sync s;
    assert_int_equal(stage_micro(2, 0, 4, 4, &s), 4); /* traces/cpu-pipeline-resmlp-w2's rank 0 */
    assert_int_equal(s, MT_TRACED_PIPELINE);
    assert_string_equal(mt_traced_sync_name(s), "pipeline");
    assert_int_equal(stage_micro(4, 3, 6, 6, &s), 6); /* the last stage */
    assert_int_equal(stage_micro(4, 1, 8, 8, &s), 4); /* a middle stage sends twice per micro-batch */
    assert_int_equal(stage_micro(4, 2, 7, 7, &s), 0); /* ... so an odd count does not tell */
    assert_int_equal(stage_micro(4, -1, 8, 8, &s), 0); /* nor an unknown rank's place */
    assert_int_equal(s, MT_TRACED_PIPELINE);
    assert_int_equal(stage_micro(2, 0, 4, 3, &s), 0); /* what one end sends the other receives */
    assert_int_equal(stage_micro(1, 0, 0, 0, &s), 0);
    assert_int_equal(s, MT_TRACED_SINGLE);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nccl_rank_reads_record_param_comms),
        cmocka_unit_test(old_format_reads_backend_tensors),
        cmocka_unit_test(gloo_worker_events_are_the_collectives),
        cmocka_unit_test(traced_plan_of_a_ddp_rank),
        cmocka_unit_test(traced_plan_of_a_pipeline_stage),
        cmocka_unit_test(kept_collectives_match_the_trace),
        cmocka_unit_test(kept_collectives_run_on_their_groups),
        cmocka_unit_test(a_send_is_an_exchange_with_the_peer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for the host side of real traces, on hand-written Kineto fixtures
 * (tests/fixtures/host; every number below is worked out from the fixture's events, times in us
 * from the step's start):
 *  - ddp-rank.json, one rank of a 2-GPU DDP job: an AccumulateGrad op encloses the all-reduce of
 *    its bucket (c10d::allreduce_, 100 us of CPU time, launching an NCCL kernel), and a
 *    c10d::broadcast_ (30 us) is an op of its own. The AccumulateGrad op stays compute with its
 *    own kernel and its host time less the call's; what the broadcast op leaves (the host's
 *    20 us after it) goes to the op before it; issuing a collective costs the calls' mean;
 *  - pageable-d2h.json: .item() copies a result to pageable host memory while a 500 us kernel
 *    runs; the cudaMemcpyAsync returns only after its copy (and the kernel before it): a
 *    synchronisation point, not 510 us of host work, so a slower GPU delays the host too;
 *  - streams.json: a 200 us gemm on stream 7; stream 20 waits for it (cudaEventRecord +
 *    cudaStreamWaitEvent, with PyTorch's cuda_sync events) and runs 100 us while stream 7 runs a
 *    50 us kernel; stream 7 then waits for stream 20 before a 20 us kernel. The streams overlap
 *    as traced (step 345 us, compute 320 us: the union) instead of queueing one after the other
 *    (395 us, 370 us); streams-nosync.json, the same without cuda_sync events, gives the same
 *    from its cudaStreamWaitEvent calls alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
#include <stdio.h>
#include <stdlib.h>

#include "extrapolate/hostmodel.h"
#include "run/simrun.h"
#include "tracer/trace.h"
#include "tracefix.h"

#define US(x) ((int64_t)(x) * 1000)      /* us -> ns */
#define PS(x) ((int64_t)(x) * 1000000)   /* us -> ps */

static mt_trace *load(const char *name) { return mt_test_load_fixture("host", name); }

/* t simulated on `gpus` GPUs with the host model (the default for a Kineto GPU trace), the GPUs
 * computing at `speed` (per rank; NULL: as traced). */
static mt_simrun run_at(const mt_trace *t, int32_t gpus, const double *speed) {
    mt_simrun_cfg cfg;
    mt_simrun_cfg_init(&cfg);
    cfg.plan.gpus = gpus;
    cfg.sim.gpu_speed = speed;
    mt_simrun r;
    mt_error err = {0};
    assert_int_equal(mt_simrun_run(t, NULL, &cfg, &r, &err), MT_OK);
    assert_non_null(r.host);
    return r;
}

static mt_simrun run(const mt_trace *t, int32_t gpus) { return run_at(t, gpus, NULL); }

/* GPU 0's step, compute and host wait (the identity's other parts are 0 on one GPU). */
static void expect(const mt_simrun *r, int64_t step_ps, int64_t compute_ps, int64_t host_wait_ps) {
    assert_int_equal(r->res->step_ps, step_ps);
    assert_int_equal(r->res->gpus[0].compute_ps, compute_ps);
    assert_int_equal(r->res->gpus[0].host_wait_ps, host_wait_ps);
}

static void ddp_rank_keeps_the_host_time_around_its_collectives(void **state) {
    (void)state;
    mt_trace *t = load("ddp-rank.json");
    assert_int_equal(t->n_ops, 5);
    /* op 1 is the broadcast call itself, op 3 (AccumulateGrad) only encloses its all-reduce */
    assert_true(trace_op_is_comm(&t->ops[1]));
    assert_int_equal(t->ops[3].comm, TRACE_COMM_ALLREDUCE);
    assert_false(trace_op_is_comm(&t->ops[3]));
    assert_int_equal(t->ops[3].dev_ns, US(10));       /* its add_ kernel: compute */
    assert_int_equal(t->ops[3].comm_dev_ns, US(190)); /* the NCCL kernel it launched */
    assert_int_equal(t->comm_ns, US(195));
    assert_int_equal(t->n_colls, 2);
    assert_int_equal(t->colls[0].dur_ns, US(30));
    assert_int_equal(t->colls[1].dur_ns, US(100));
    assert_int_equal(t->colls[1].op, 3);
    mt_simrun r = run(t, 1);
    const mt_hostmodel *h = r.host;
    assert_int_equal(h->coll_host_ps, PS(65)); /* (30 + 100) / 2 collectives */
    assert_int_equal(h->launch_lat_ps, PS(10));
    assert_int_equal(h->head_ps, PS(10));
    /* aten::mm 10..50 plus the 20 us after the broadcast call (80..100); the broadcast op has
     * nothing left; MmBackward0 100..200; AccumulateGrad 200..420 less its 100 us call;
     * _foreach_add_ 420 to the step's end at 600 */
    assert_int_equal(h->ops[0].host_ps, PS(60));
    assert_int_equal(h->ops[1].host_ps, 0);
    assert_int_equal(h->ops[2].host_ps, PS(100));
    assert_int_equal(h->ops[3].host_ps, PS(120));
    assert_int_equal(h->ops[4].host_ps, PS(180));
    assert_int_equal(h->host_total_ps, PS(470));
    /* one GPU, no collectives: gemm 30..130 (host at 70), gemm_bwd 130..230 (host at 170),
     * add 230..240 (host at 290), foreach launched at 300, runs 310..320, host ends at 470 */
    expect(&r, PS(470), PS(220), PS(250));
    mt_simrun_free(&r);
    mt_trace_free(t);
}

static void a_copy_to_pageable_memory_waits_for_the_device(void **state) {
    (void)state;
    mt_trace *t = load("pageable-d2h.json");
    assert_int_equal(t->n_syncs, 1);
    /* blocked from the call (45) to the end of its copy (527); the 28 us after it are host work */
    assert_int_equal(t->syncs[0].ts_ns, US(45));
    assert_int_equal(t->syncs[0].dur_ns, US(482));
    assert_int_equal(t->syncs[0].op, 1);
    mt_simrun r = run(t, 1);
    /* the replay: gemm 25..525, the copy 525..527, the host back at 527 and at the add at 570,
     * add 590..600: the traced wall */
    assert_int_equal(r.host->ops[1].host_ps, PS(530 - 482));
    assert_int_equal(r.res->step_ps, PS(600));
    assert_int_equal(r.res->gpus[0].host_sync_ps, PS(527 - 45));
    mt_simrun_free(&r);
    /* a GPU twice as slow: gemm 25..1025, the copy 1025..1029, the host resumes at 1029, reaches
     * the add's launch at 1029 + 43 + 10, the add runs 1092..1112 (as host work, the copy would
     * have let the host launch at 580 and the step end at 1049) */
    const double half = 0.5;
    r = run_at(t, 1, &half);
    assert_int_equal(r.res->step_ps, PS(1112));
    assert_int_equal(r.res->gpus[0].compute_ps, PS(1024));
    mt_simrun_free(&r);
    mt_trace_free(t);
}

/* streams.json or streams-nosync.json: see the top of the file. */
static void two_streams_overlap_as_traced(const char *fixture) {
    mt_trace *t = load(fixture);
    assert_int_equal(t->n_waits, 2);
    assert_int_equal(t->waits[0].stream, 20);
    assert_int_equal(t->waits[0].on_stream, 7);
    assert_int_equal(t->waits[0].op, 1);
    assert_int_equal(t->waits[1].stream, 7);
    assert_int_equal(t->waits[1].on_stream, 20);
    assert_int_equal(t->waits[1].op, 3);
    assert_int_equal(t->compute_union_ns, US(320));
    mt_simrun r = run(t, 1);
    const mt_hostmodel *h = r.host;
    assert_int_equal(h->n_streams, 2);
    assert_int_equal(h->stream_id[0], 7); /* the busiest */
    assert_int_equal(h->stream_id[1], 20);
    assert_int_equal(h->n_slots, 2);
    /* gemm 25..225; side 225..325 (it waits for the gemm); mul 225..275 beside it; sum waits
     * for side: 325..345; the host ends at 340 */
    expect(&r, PS(345), PS(320), PS(25));
    mt_simrun_free(&r);
    /* twice as slow: gemm 25..425, side 425..625 beside mul 425..525, sum 625..665 */
    const double half = 0.5;
    r = run_at(t, 1, &half);
    expect(&r, PS(665), PS(640), PS(25));
    mt_simrun_free(&r);
    mt_trace_free(t);
}

static void streams_overlap_with_cuda_sync_events(void **state) {
    (void)state;
    two_streams_overlap_as_traced("streams.json");
}

static void streams_overlap_with_wait_calls_alone(void **state) {
    (void)state;
    two_streams_overlap_as_traced("streams-nosync.json");
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ddp_rank_keeps_the_host_time_around_its_collectives),
        cmocka_unit_test(a_copy_to_pageable_memory_waits_for_the_device),
        cmocka_unit_test(streams_overlap_with_cuda_sync_events),
        cmocka_unit_test(streams_overlap_with_wait_calls_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for extrapolate/hostmodel and the host side of sim/simulate on synthetic one-GPU
 * traces solved by hand (times in us below):
 *  - many tiny kernels: the host (10 us per op) is the bottleneck, the step is the host's time
 *    plus the last launch and kernel, and the GPU waits for the host most of the step;
 *  - large kernels: the GPU is the bottleneck, it waits only for the first launch;
 *  - a synchronising call in the middle: the host blocks until the device has drained, then
 *    the device waits for the host's next launch, so host and device serialise there;
 *  - a CPU-only trace cannot be host-modelled (clear error);
 *  - a bound-only program (program.h: the COMPUTE work tallied, not kept) gives run/prune.h's
 *    bounds and each stage's compute exactly as the full program does, with and without the host
 *    model, on pipelines of both schedules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/hostdev.h"
#include "extrapolate/hostmodel.h"
#include "extrapolate/plan.h"
#include "extrapolate/program.h"
#include "tracer/opclass.h"
#include "netmodels/registry.h"
#include "netmodels/topologies.h"
#include "sim/engine.h"
#include "run/prune.h"
#include "sim/simulate.h"

#define US 1000 /* ns */

/* n forward ops, op i starting on the host at start[i] (us) with one kernel of kern_us launched
 * at start[i] + launch_off_us. Kernel device times follow the model itself (first start =
 * launch + 5 us, then back to back or at launch + 5 us, whichever is later), so the measured
 * launch latency is 5 us. Optionally op sync_op holds a synchronising call at
 * start + sync_off_us lasting sync_us. The host ends at host_end_us. */
typedef struct spec {
    int n;
    const int64_t *start;
    int64_t launch_off_us, kern_us;
    int sync_op;
    int64_t sync_off_us, sync_us;
    int64_t host_end_us;
} spec;

static mt_trace *make(const spec *s) {
    mt_trace *t = calloc(1, sizeof *t);
    t->ops = calloc((size_t)s->n, sizeof *t->ops);
    t->kernels = calloc((size_t)s->n, sizeof *t->kernels);
    t->syncs = calloc(1, sizeof *t->syncs);
    t->format = TRACE_FORMAT_KINETO;
    t->has_device_time = 1;
    int64_t busy = 0;
    for (int i = 0; i < s->n; i++) {
        trace_op *o = &t->ops[i];
        o->id = i;
        o->name = o->kind = "aten::add";
        o->phase = TRACE_PHASE_FORWARD;
        o->layer = -1;
        o->seq = -1;
        o->fwd_op = -1;
        o->et_node = -1;
        o->cpu_start_ns = s->start[i] * US;
        o->cpu_dur_ns = 5 * US;
        trace_kernel *k = &t->kernels[i];
        k->op = i;
        k->launch_ns = (s->start[i] + s->launch_off_us) * US;
        k->start_ns = k->launch_ns + 5 * US > busy ? k->launch_ns + 5 * US : busy;
        k->dur_ns = s->kern_us * US;
        k->name = "k";
        busy = k->start_ns + k->dur_ns;
        o->kernel_first = i;
        o->kernel_count = 1;
        o->dev_start_ns = k->start_ns;
        o->dev_end_ns = busy;
        o->dev_ns = k->dur_ns;
    }
    t->n_ops = t->n_kernels = s->n;
    if (s->sync_op >= 0) {
        t->syncs[0] = (trace_sync){(s->start[s->sync_op] + s->sync_off_us) * US, s->sync_us * US, s->sync_op,
                                   "cudaStreamSynchronize", -1};
        t->n_syncs = 1;
    }
    t->step_start_ns = 0;
    t->host_end_ns = s->host_end_us * US;
    t->step_end_ns = busy > t->host_end_ns ? busy : t->host_end_ns;
    mt_opclass_trace(t);
    return t;
}

typedef struct outcome {
    mt_sim_result *res;
    mt_hostmodel *hm;
} outcome;

/* Simulates t on one GPU with (host = 1) or without the host model, for `steps` steps. */
static outcome run_steps(const mt_trace *t, int host, int32_t steps) {
    outcome o = {0};
    mt_plan pl;
    mt_plan_init(&pl);
    pl.gpus = 1;
    mt_error err = {0};
    assert_int_equal(mt_plan_resolve(&pl, t, &err), MT_OK);
    if (host) assert_int_equal(mt_hostmodel_build(t, &o.hm, &err), MT_OK);
    mt_program_opts po = {NULL, NULL, host};
    mt_program *p;
    assert_int_equal(mt_program_build(t, &pl, &po, &p, &err), MT_OK);
    mt_engine *e = mt_engine_new();
    mt_topo *topo;
    mt_topo_params tp;
    mt_topo_params_init(&tp);
    assert_int_equal(mt_topo_build("switch:1", &tp, &topo, &err), MT_OK);
    mt_netmodel net;
    assert_int_equal(mt_netmodel_create("flow", topo, NULL, mt_engine_sched(e), &net, &err), MT_OK);
    mt_sim_opts so;
    mt_sim_opts_init(&so);
    so.host = o.hm;
    so.steps = steps;
    assert_int_equal(mt_simulate(p, &net, e, &so, &o.res, &err), MT_OK);
    mt_net_free(&net);
    mt_topo_free(topo);
    mt_engine_free(e);
    mt_program_free(p);
    return o;
}

static outcome run(const mt_trace *t, int host) { return run_steps(t, host, 1); }

static void done(outcome *o) {
    mt_sim_result_free(o->res);
    mt_hostmodel_free(o->hm);
}

static void free_trace(mt_trace *t) {
    free(t->ops);
    free(t->kernels);
    free(t->syncs);
    free(t);
}

#define PS(us) ((int64_t)(us) * 1000000) /* us -> ps */

static void tiny_kernels_are_host_bound(void **state) {
    (void)state;
    int64_t start[100];
    for (int i = 0; i < 100; i++) start[i] = 10 * i;
    spec s = {100, start, 8, 1, -1, 0, 0, 1000};
    mt_trace *t = make(&s);
    outcome o = run(t, 1);
    assert_int_equal(o.hm->launch_lat_ps, PS(5));
    /* op 99: host at 990, launch 998, start 1003, end 1004 */
    assert_int_equal(o.res->step_ps, PS(1004));
    assert_int_equal(o.res->gpus[0].compute_ps, PS(100));
    assert_int_equal(o.res->gpus[0].host_wait_ps, PS(904));
    assert_true(o.res->gpus[0].host_busy_ps > o.res->gpus[0].compute_ps); /* launch-bound */
    done(&o);
    /* a host twice as fast (--host-scale 0.5): op 99 at 495, launch 499, start 504, end 505 */
    mt_hostmodel *hm;
    assert_int_equal(mt_hostmodel_build(t, &hm, NULL), MT_OK);
    mt_hostmodel_scale(hm, 0.5);
    assert_int_equal(hm->host_total_ps, PS(500));
    int64_t host = PS(495), dev = 0, words[2] = {0};
    mt_hostdev hd;
    assert_int_equal(mt_hostdev_words(hm), 1); /* one stream, no stream waits */
    mt_hostdev_init(&hd, hm, words, NULL, NULL);
    assert_int_equal(mt_hostdev_run_op(&hd, 99, PS(1), PS(490), &host, &dev, NULL), PS(505));
    assert_int_equal(host, PS(500));
    mt_hostmodel_free(hm);
    /* three steps: the host's 1000 us per step sets the pace, each step ends 1000 us later */
    o = run_steps(t, 1, 3);
    assert_int_equal(o.res->n_steps, 3);
    assert_int_equal(o.res->step_end_ps[0], PS(1004));
    assert_int_equal(o.res->step_end_ps[1], PS(2004));
    assert_int_equal(o.res->step_end_ps[2], PS(3004));
    done(&o);
    /* GPU-only prediction: 100 us, an order of magnitude off */
    o = run(t, 0);
    assert_int_equal(o.res->step_ps, PS(100));
    assert_int_equal(o.res->gpus[0].host_wait_ps, 0);
    done(&o);
    free_trace(t);
}

static void large_kernels_are_gpu_bound(void **state) {
    (void)state;
    int64_t start[100];
    for (int i = 0; i < 100; i++) start[i] = 10 * i;
    spec s = {100, start, 8, 1000, -1, 0, 0, 1000};
    mt_trace *t = make(&s);
    outcome o = run(t, 1);
    /* only the first launch is waited for: 8 + 5 us, then 100 x 1 ms back to back */
    assert_int_equal(o.res->step_ps, PS(13 + 100000));
    assert_int_equal(o.res->gpus[0].host_wait_ps, PS(13));
    assert_true(o.res->gpus[0].host_busy_ps < o.res->gpus[0].compute_ps);
    /* the trace itself says the same: its wall time */
    assert_int_equal(o.hm->wall_ps, PS(13 + 100000));
    done(&o);
    free_trace(t);
}

static void a_sync_serialises_host_and_device(void **state) {
    (void)state;
    /* ops 0-5 at 0, 10, ..., 50; op 5 syncs at 55 for 5000 us (in the trace); ops 6-9 then
     * start at 5060, 5070, ... The host's work is 10 us per op either way. */
    int64_t start[10] = {0, 10, 20, 30, 40, 50, 5060, 5070, 5080, 5090};
    spec s = {10, start, 2, 1000, 5, 5, 5000, 5100};
    mt_trace *t = make(&s);
    outcome o = run(t, 1);
    /* device: kernel 0 at 7 us, kernels 0-5 end at 6007. The host reaches the sync at 55 and
     * waits 5952 us; op 5's remaining 5 us + op 6's launch offset 2 us + latency 5 us: kernel 6
     * starts at 6007 + 5 + 2 + 5 = 6019 and kernels 6-9 end at 10019. */
    assert_int_equal(o.res->step_ps, PS(10019));
    assert_int_equal(o.res->gpus[0].host_sync_ps, PS(5952));
    assert_int_equal(o.res->gpus[0].host_wait_ps, PS(7 + 12));
    assert_int_equal(o.res->gpus[0].compute_ps, PS(10000));
    done(&o);
    /* the direct call agrees: op 5 alone on a device busy until 6007 with the host at 50 */
    mt_hostmodel *hm;
    assert_int_equal(mt_hostmodel_build(t, &hm, NULL), MT_OK);
    int64_t host = PS(50), wait = 0, words[1] = {0};
    mt_hostdev hd;
    mt_hostdev_init(&hd, hm, words, NULL, NULL);
    int64_t end = mt_hostdev_run_op(&hd, 5, PS(1000), PS(5007), &host, &wait, NULL);
    assert_int_equal(end, PS(6007));
    assert_int_equal(wait, PS(6007 - 55));
    assert_int_equal(host, PS(6007 + 5));
    mt_hostmodel_free(hm);
    free_trace(t);
}

static void cpu_trace_cannot_be_host_modelled(void **state) {
    (void)state;
    int64_t start[2] = {0, 10};
    spec s = {2, start, 1, 1, -1, 0, 0, 20};
    mt_trace *t = make(&s);
    t->has_device_time = 0;
    mt_hostmodel *hm = NULL;
    mt_error err = {0};
    assert_int_equal(mt_hostmodel_build(t, &hm, &err), MT_EINVAL);
    assert_null(hm);
    assert_non_null(strstr(err.msg, "--host-model none"));
    free_trace(t);
}

/* The bound of plan (pp, m, schedule) from a full and from a bound-only program: equal, from the same
 * term (what). */
static void bound_pair(const mt_trace *t, const mt_hostmodel *hm, int32_t pp, int32_t m, mt_pp_schedule sched) {
    mt_plan pl;
    mt_plan_init(&pl);
    pl.gpus = pl.pp = pp;
    pl.micro_batches = m;
    pl.schedule = sched;
    mt_error err = {0};
    assert_int_equal(mt_plan_resolve(&pl, t, &err), MT_OK);
    mt_program *p[2];
    for (int k = 0; k < 2; k++) {
        mt_program_opts po = {NULL, NULL, hm != NULL, 0, k};
        assert_int_equal(mt_program_build(t, &pl, &po, &p[k], &err), MT_OK);
    }
    mt_prune_bound full = mt_prune_bound_of(p[0], hm), tally = mt_prune_bound_of(p[1], hm);
    assert_true(full.ok && full.step_ps > 0);
    assert_true(tally.ok);
    assert_true(full.step_ps == tally.step_ps && full.mem_bytes == tally.mem_bytes);
    assert_int_equal(full.stage, tally.stage);
    assert_string_equal(full.what, tally.what);
    for (int32_t s = 0; s < pp; s++) {
        assert_null(p[0]->stages[s].tally);
        assert_non_null(p[1]->stages[s].tally);
        assert_int_equal(p[0]->stages[s].compute_ps, p[1]->stages[s].compute_ps);
    }
    mt_program_free(p[0]);
    mt_program_free(p[1]);
}

static void bound_only_program_bounds_as_the_full_one(void **state) {
    (void)state;
    int64_t start[24];
    for (int i = 0, at = 0; i < 24; at += 3 + 7 * (i % 5), i++) start[i] = at; /* uneven host gaps */
    spec s = {24, start, 2, 4, -1, 0, 0, 400};
    mt_trace *t = make(&s);
    t->batch_size = 8;
    mt_hostmodel *hm;
    assert_int_equal(mt_hostmodel_build(t, &hm, NULL), MT_OK);
    for (int h = 0; h < 2; h++) {
        bound_pair(t, h ? hm : NULL, 1, 1, MT_PP_1F1B);
        bound_pair(t, h ? hm : NULL, 2, 4, MT_PP_GPIPE);
        bound_pair(t, h ? hm : NULL, 2, 4, MT_PP_1F1B);
        bound_pair(t, h ? hm : NULL, 4, 8, MT_PP_1F1B);
    }
    mt_hostmodel_free(hm);
    free_trace(t);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tiny_kernels_are_host_bound),
        cmocka_unit_test(large_kernels_are_gpu_bound),
        cmocka_unit_test(a_sync_serialises_host_and_device),
        cmocka_unit_test(cpu_trace_cannot_be_host_modelled),
        cmocka_unit_test(bound_only_program_bounds_as_the_full_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

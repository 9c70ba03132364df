/* Unit tests for extrapolate/plan, extrapolate/program and sim/simulate on synthetic traces
 * built in memory, small enough to solve by hand:
 *  - plan resolution and its refusals, rank placement round trips;
 *  - N = 1 reproduces the trace; dp (sync) = compute + one all-reduce of the parameters;
 *    ddp lies between max(compute, comm) and dp; DDP bucket count and gradient bytes;
 *  - GPipe's bubble is (P-1)/(M+P-1) of the step on uniform stages; 1F1B holds at most P - s
 *    micro-batches on stage s and takes the same time without communication;
 *  - a Megatron MLP (column linear, gelu, row linear) splits its compute by T and inserts one
 *    forward and one backward all-reduce of the activation bytes;
 *  - batch rescaling touches only batch-dependent ops;
 *  - a program that can never finish is MT_ESTUCK with a message naming the GPU;
 *  - the mesh's group table (members round-trip, size-1 dimensions build no groups, hybrid
 *    sharding's dp_shard x dp_rep); ZeRO-1/2/3, FSDP and HSDP traffic per GPU (ZeRO-3/FSDP
 *    3(N-1)/N of the parameter bytes, DDP 2(N-1)/N) and memory (sharded states + one layer);
 *    ZeRO-1 = DDP's step on a free network, FSDP's prefetch beats ZeRO-3; refusals. */
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

#include "extrapolate/group.h"
#include "extrapolate/plan.h"
#include "extrapolate/program.h"
#include "tracer/opclass.h"
#include "netmodels/registry.h"
#include "netmodels/topologies.h"
#include "sim/collexec.h"
#include "sim/engine.h"
#include "sim/scenario.h"
#include "sim/simulate.h"

/* ---- a synthetic trace: L layers of [linear fwd, act fwd] + their backward ops ----------- */

typedef struct syn {
    int32_t layers;
    int64_t fwd_ns, bwd_ns, opt_ns;
    double w_bytes, act_bytes;
    int64_t batch;
    int mlp; /* 1: layers alternate column linear, gelu, row linear, layer_norm */
} syn;

static void add_tensor(mt_trace *t, double bytes, trace_role role, int32_t first_op) {
    trace_tensor *x = &t->tensors[t->n_tensors++];
    memset(x, 0, sizeof *x);
    x->et_id = t->n_tensors;
    x->numel = (int64_t)(bytes / 4);
    x->itemsize = 4;
    x->bytes = bytes;
    x->role = role;
    x->first_op = first_op;
}

static void add_ref(mt_trace *t, int32_t tensor) {
    trace_tref *r = &t->trefs[t->n_trefs++];
    memset(r, 0, sizeof *r);
    r->tensor = tensor;
}

static int32_t add_op(mt_trace *t, const char *name, trace_phase ph, int32_t layer, int64_t ns,
                      const int32_t *in, int nin, const int32_t *out, int nout) {
    trace_op *o = &t->ops[t->n_ops];
    memset(o, 0, sizeof *o);
    o->id = t->n_ops;
    o->name = o->kind = name;
    o->phase = ph;
    o->layer = layer;
    o->dev_ns = ns;
    o->seq = -1;
    o->fwd_op = -1;
    o->et_node = -1;
    o->in_first = t->n_trefs;
    for (int i = 0; i < nin; i++) add_ref(t, in[i]);
    o->in_count = nin;
    o->out_first = t->n_trefs;
    for (int i = 0; i < nout; i++) add_ref(t, out[i]);
    o->out_count = nout;
    return t->n_ops++;
}

/* Layer l: forward "aten::linear"(act_l, W_l) -> act_{l+1}; backward AddmmBackward0 linked to
 * it; one optimizer op per weight at the end. With mlp, layer kinds cycle through column
 * linear, gelu, row linear, layer_norm (weights only on the linears). */
static mt_trace *make_trace(const syn *s) {
    mt_trace *t = calloc(1, sizeof *t);
    int32_t L = s->layers;
    t->ops = calloc((size_t)(3 * L + 2), sizeof *t->ops);
    t->tensors = calloc((size_t)(2 * L + 2), sizeof *t->tensors);
    t->trefs = calloc((size_t)(10 * L + 4), sizeof *t->trefs);
    t->layers = calloc((size_t)L, sizeof *t->layers);
    t->n_layers = L;
    t->batch_size = s->batch;
    t->format = TRACE_FORMAT_KINETO_ET;
    t->has_device_time = 1;
    /* tensors: act_0 (input) .. act_L, then W_0 .. W_{L-1} */
    add_tensor(t, s->act_bytes, TRACE_ROLE_INPUT, 0);
    for (int32_t l = 0; l < L; l++) add_tensor(t, s->act_bytes, TRACE_ROLE_ACTIVATION, l);
    int32_t w0 = t->n_tensors;
    for (int32_t l = 0; l < L; l++) add_tensor(t, s->w_bytes, TRACE_ROLE_WEIGHT, l);
    int32_t fwd[256];
    for (int32_t l = 0; l < L; l++) {
        int kind = s->mlp ? l % 4 : 0; /* 0 col linear, 1 gelu, 2 row linear, 3 layer_norm */
        int32_t in[2] = {l, w0 + l}, out[1] = {l + 1};
        const char *name = kind == 1 ? "aten::gelu" : kind == 3 ? "aten::layer_norm" : "aten::linear";
        int has_w = kind == 0 || kind == 2;
        fwd[l] = add_op(t, name, TRACE_PHASE_FORWARD, l, s->fwd_ns, in, has_w ? 2 : 1, out, 1);
        t->layers[l].name = "layer";
        t->layers[l].param_bytes = has_w ? s->w_bytes : 0;
        if (has_w) {
            t->param_bytes += s->w_bytes;
            t->param_count += (int64_t)(s->w_bytes / 4);
        }
    }
    for (int32_t l = L - 1; l >= 0; l--) {
        int32_t in[1] = {l + 1};
        int32_t b = add_op(t, "autograd::engine::evaluate_function: AddmmBackward0", TRACE_PHASE_BACKWARD, l,
                           s->bwd_ns, in, 1, NULL, 0);
        t->ops[b].fwd_op = fwd[l];
    }
    if (s->opt_ns > 0) {
        int32_t in[256];
        int n = 0;
        for (int32_t l = 0; l < L; l++)
            if (t->layers[l].param_bytes > 0) in[n++] = w0 + l;
        add_op(t, "aten::_foreach_add_", TRACE_PHASE_OPTIMIZER, -1, s->opt_ns, in, n, NULL, 0);
    }
    mt_opclass_trace(t);
    return t;
}

static syn syn_default(void) {
    syn s = {8, 1000000, 2000000, 0, 4e6, 1e6, 32, 0};
    return s;
}

/* A default plan (ddp, 1f1b, ring) for `gpus` GPUs, sizes left to mt_plan_resolve. */
static mt_plan plan_for(int32_t gpus) {
    mt_plan p;
    mt_plan_init(&p);
    p.gpus = gpus;
    return p;
}

/* ---- running ------------------------------------------------------------------------------ */

typedef struct run_out {
    mt_status rc;
    mt_sim_result *res;
    mt_program *prog;
    char msg[1024];
} run_out;

static mt_topo *topo_for(const char *spec, double bw, double lat_ns) {
    mt_topo_params tp;
    mt_topo_params_init(&tp);
    tp.link_bw_Bps = tp.nic_bw_Bps = bw;
    tp.link_lat_ns = tp.nic_lat_ns = lat_ns;
    mt_topo *topo = NULL;
    mt_error err = {0};
    assert_int_equal(mt_topo_build(spec, &tp, &topo, &err), MT_OK);
    return topo;
}

static int32_t g_lanes; /* mt_sim_opts.coll_lanes of the runs below (0: one at a time) */
static const float *g_comm_slow; /* mt_sim_opts.comm_slow of the runs below (NULL: none) */

/* Builds the program for `pl` on `t` and simulates it on `spec`; tamper (optional) edits the
 * program before the run; sc (optional) is a what-if scenario bound to the program; on_span
 * (optional) observes the spans. */
static run_out run_plan_obs(const mt_trace *t, mt_plan pl, const char *spec, double bw, double lat_ns,
                            void (*tamper)(mt_program *), mt_scenario *sc, mt_span_fn on_span, void *span_ctx) {
    run_out o = {0};
    mt_error err = {0};
    assert_int_equal(mt_plan_resolve(&pl, t, &err), MT_OK);
    assert_int_equal(mt_program_build(t, &pl, NULL, &o.prog, &err), MT_OK);
    if (tamper) tamper(o.prog);
    mt_topo *topo = topo_for(spec, bw, lat_ns);
    mt_engine *e = mt_engine_new();
    mt_netmodel net = {0};
    assert_int_equal(mt_netmodel_create("flow", topo, NULL, mt_engine_sched(e), &net, &err), MT_OK);
    mt_sim_opts so;
    mt_sim_opts_init(&so);
    so.on_span = on_span;
    so.span_ctx = span_ctx;
    so.coll_lanes = g_lanes;
    so.comm_slow = g_comm_slow;
    if (sc) {
        assert_int_equal(mt_scenario_bind(sc, o.prog, t, NULL, &err), MT_OK);
        assert_int_equal(mt_scenario_apply_network(sc, &net, topo, &err), MT_OK);
        mt_scenario_sim_opts(sc, &so);
    }
    o.rc = mt_simulate(o.prog, &net, e, &so, &o.res, &err);
    snprintf(o.msg, sizeof o.msg, "%s", err.msg);
    mt_net_free(&net);
    mt_engine_free(e);
    mt_topo_free(topo);
    return o;
}

static run_out run_plan_sc(const mt_trace *t, mt_plan pl, const char *spec, double bw, double lat_ns,
                           void (*tamper)(mt_program *), mt_scenario *sc) {
    return run_plan_obs(t, pl, spec, bw, lat_ns, tamper, sc, NULL, NULL);
}

static run_out run_plan(const mt_trace *t, mt_plan pl, const char *spec, double bw, double lat_ns,
                        void (*tamper)(mt_program *)) {
    return run_plan_sc(t, pl, spec, bw, lat_ns, tamper, NULL);
}

static void run_free(run_out *o) {
    mt_sim_result_free(o->res);
    mt_program_free(o->prog);
}

static double coll_time_s(const char *spec, double bw, double lat_ns, mt_coll_op op, int32_t n, double bytes) {
    mt_topo *topo = topo_for(spec, bw, lat_ns);
    mt_engine *e = mt_engine_new();
    mt_netmodel net = {0};
    mt_error err = {0};
    assert_int_equal(mt_netmodel_create("flow", topo, NULL, mt_engine_sched(e), &net, &err), MT_OK);
    mt_coll_params p;
    mt_coll_params_init(&p);
    p.op = op;
    p.nranks = n;
    p.bytes = bytes;
    mt_coll_schedule *s;
    assert_int_equal(mt_coll_build(&p, &s, &err), MT_OK);
    mt_time_ps ps = 0;
    assert_int_equal(mt_collexec_time(s, &net, e, NULL, &ps, &err), MT_OK);
    mt_coll_free(s);
    mt_net_free(&net);
    mt_engine_free(e);
    mt_topo_free(topo);
    return (double)ps / 1e12;
}

static double sec(mt_time_ps ps) { return (double)ps / 1e12; }

/* One ringflow on the flow model over `spec` (uneven links: ring:N's one slow pair), its hops a
 * send each (walk 0) or one walk send (1), with the model's fixed latencies or without them (the
 * walk then runs hop by hop, as the chain does); its time, events and sends into the outputs. */
static void ringflow_run(const char *spec, mt_coll_op op, int32_t n, int walk, int fixed, mt_time_ps *ps,
                         uint64_t *events, uint32_t *nsends) {
    mt_topo *topo = topo_for(spec, 25e9, 700);
    mt_link *slow = mt_topo_link_mut(topo, 2); /* a link of the ring at a tenth, a longer latency */
    slow->bw_Bps /= 10;
    slow->lat_ps *= 3;
    mt_engine *e = mt_engine_new();
    mt_netmodel net = {0};
    mt_error err = {0};
    assert_int_equal(mt_netmodel_create("flow", topo, NULL, mt_engine_sched(e), &net, &err), MT_OK);
    mt_netmodel_ops ops = *net.ops;
    if (!fixed) ops.fixed_latency = NULL;
    mt_netmodel use = {&ops, net.self};
    mt_coll_params p;
    mt_coll_params_init(&p);
    p.op = op;
    p.algo = MT_ALGO_RINGFLOW;
    p.nranks = n;
    p.bytes = 3e6;
    p.walk = (int8_t)walk;
    mt_coll_schedule *s;
    assert_int_equal(mt_coll_build(&p, &s, &err), MT_OK);
    assert_int_equal(mt_collexec_time(s, &use, e, NULL, ps, &err), MT_OK);
    *events = mt_engine_events(e);
    *nsends = s->nsends;
    mt_coll_free(s);
    mt_net_free(&net);
    mt_engine_free(e);
    mt_topo_free(topo);
}

/* collective.h: ringflow's k-1 latency hops as one walk send take the time of the chain of k-1
 * sends it stands for, with the same events, whether the model promises the hops' latencies (one
 * timer over several turns of the ring) or not (hop by hop); the schedule is N + 2 sends. */
static void test_ringflow_walk_equals_chain(void **state) {
    (void)state;
    const int32_t ns[] = {3, 5, 9};
    const mt_coll_op ops[] = {MT_COLL_ALLREDUCE, MT_COLL_ALLGATHER};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t o = 0; o < 2; o++)
            for (int fixed = 0; fixed < 2; fixed++) {
                char spec[32];
                snprintf(spec, sizeof spec, "ring:%d", (int)ns[i]);
                mt_time_ps chain_ps, walk_ps;
                uint64_t chain_ev, walk_ev;
                uint32_t chain_n, walk_n;
                ringflow_run(spec, ops[o], ns[i], 0, fixed, &chain_ps, &chain_ev, &chain_n);
                ringflow_run(spec, ops[o], ns[i], 1, fixed, &walk_ps, &walk_ev, &walk_n);
                int32_t k = ops[o] == MT_COLL_ALLREDUCE ? 2 * (ns[i] - 1) : ns[i] - 1;
                assert_int_equal(chain_n, (uint32_t)(ns[i] + 1 + k - 1));
                assert_int_equal(walk_n, (uint32_t)(ns[i] + (k - 1 >= 2 ? 2 : 1 + k - 1)));
                assert_int_equal(walk_ps, chain_ps);
                assert_int_equal(walk_ev, chain_ev);
            }
}

/* per GPU: compute + exposed + peer wait + bubble + idle == step, every part >= 0, exposed <= comm */
static void assert_breakdown(const mt_sim_result *r) {
    for (int32_t i = 0; i < r->n_gpus; i++) {
        const mt_gpu_stats *g = &r->gpus[i];
        assert_int_equal(g->compute_ps + g->stretch_ps + g->exposed_ps + g->peer_wait_ps + g->bubble_ps + g->idle_ps,
                         r->step_ps);
        assert_true(g->compute_ps >= 0 && g->stretch_ps >= 0 && g->exposed_ps >= 0 && g->peer_wait_ps >= 0 && g->bubble_ps >= 0 &&
                    g->idle_ps >= 0);
        assert_true(g->exposed_ps <= g->comm_ps);
    }
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_plan_resolve(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    mt_error err = {0};
    mt_plan p = plan_for(8);
    p.tp = 2;
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_OK);
    assert_int_equal(p.dp, 4);
    assert_int_equal(p.pp, 1);
    assert_int_equal(p.global_batch, 4 * 32);
    assert_int_equal(p.replica_batch, 32);
    p = plan_for(3);
    p.tp = 2;
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "3 GPUs"));
    p = plan_for(16);
    p.dp = 2;
    p.tp = 2;
    p.pp = 4;
    p.micro_batches = 3; /* 32 does not split into 3 */
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "micro-batches"));
    p = plan_for(16);
    p.pp = 16; /* 8 layers */
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "layers"));
    p = plan_for(4);
    p.global_batch = 30; /* not a multiple of dp 4 */
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_EINVAL);
    p = plan_for(4);
    p.dp = 2;
    p.tp = 3;
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_EINVAL);
    t->batch_size = 0; /* unknown batch: no --batch */
    p = plan_for(2);
    p.global_batch = 64;
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "unknown"));
    t->n_layers = 0; /* no layers and no forward op: nothing to place, said so (was "a pipeline
                      * of 1 stages needs at least 1 layers") */
    for (int32_t i = 0; i < t->n_ops; i++)
        if (t->ops[i].phase == TRACE_PHASE_FORWARD) t->ops[i].phase = TRACE_PHASE_OTHER;
    p = plan_for(1);
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "no forward operators"));
    mt_trace_free(t);
}

static void test_placement(void **state) {
    (void)state;
    const char *orders[] = {"tpd", "tdp", "ptd", "pdt", "dtp", "dpt"};
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    for (int k = 0; k < 6; k++) {
        mt_plan p;
        mt_plan_init(&p);
        p.dp = 3;
        p.tp = 2;
        p.pp = 4;
        mt_error err = {0};
        assert_int_equal(mt_placement_parse(orders[k], p.placement, &err), MT_OK);
        assert_int_equal(mt_plan_resolve(&p, t, &err), MT_OK);
        int seen[24] = {0};
        for (int32_t r = 0; r < 24; r++) {
            int32_t d, st, tt;
            mt_plan_coords(&p, r, &d, &st, &tt);
            assert_int_equal(mt_plan_rank(&p, d, st, tt), r);
            seen[r]++;
        }
        for (int32_t r = 0; r < 24; r++) assert_int_equal(seen[r], 1);
    }
    mt_plan p;
    mt_plan_init(&p);
    p.dp = 2;
    p.tp = 4;
    p.pp = 1;
    mt_error err = {0};
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_OK);
    assert_int_equal(mt_plan_rank(&p, 1, 0, 3), 7); /* default tpd: TP ranks adjacent */
    assert_int_equal(mt_placement_parse("tpx", p.placement, &err), MT_EINVAL);
    mt_trace_free(t);
}

static void test_single_gpu(void **state) {
    (void)state;
    syn s = syn_default();
    s.opt_ns = 500000;
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(1);
    run_out o = run_plan(t, p, "switch:2", 100e9, 500, NULL);
    assert_int_equal(o.rc, MT_OK);
    assert_int_equal(o.res->step_ps, mt_trace_total_dev_ns(t) * 1000);
    assert_breakdown(o.res);
    run_free(&o);
    /* tp = 1 and pp = 1 given explicitly: the same */
    p = plan_for(1);
    p.tp = 1;
    p.pp = 1;
    p.schedule = MT_PP_GPIPE;
    o = run_plan(t, p, "switch:2", 100e9, 500, NULL);
    assert_int_equal(o.res->step_ps, mt_trace_total_dev_ns(t) * 1000);
    run_free(&o);
    mt_trace_free(t);
}

static void test_dp_equals_compute_plus_allreduce(void **state) {
    (void)state;
    syn s = syn_default();
    s.opt_ns = 500000;
    mt_trace *t = make_trace(&s);
    for (int32_t n = 2; n <= 16; n *= 2) {
        mt_plan p = plan_for(n);
        p.dp_mode = MT_DP_SYNC;
        char spec[32];
        snprintf(spec, sizeof spec, "switch:%d", n);
        run_out o = run_plan(t, p, spec, 50e9, 1000, NULL);
        assert_int_equal(o.rc, MT_OK);
        double ar = coll_time_s(spec, 50e9, 1000, MT_COLL_ALLREDUCE, n, t->param_bytes);
        double want = (double)mt_trace_total_dev_ns(t) / 1e9 + ar;
        assert_true(fabs(sec(o.res->step_ps) - want) <= 1e-3 * want);
        /* and the closed form: 2(N-1)/N S/B plus 2(N-1) steps of latency */
        double closed = 2.0 * (n - 1) / n * t->param_bytes / 50e9;
        assert_true(ar >= closed && ar <= closed + 2.0 * (n - 1) * 4e-6);
        assert_breakdown(o.res);
        /* ddp: between max(compute, comm) and dp */
        p.dp_mode = MT_DP_DDP;
        p.bucket_bytes = p.first_bucket_bytes = 8e6;
        run_out q = run_plan(t, p, spec, 50e9, 1000, NULL);
        assert_int_equal(q.rc, MT_OK);
        double comp = (double)mt_trace_total_dev_ns(t) / 1e9;
        double lo = comp > ar ? comp : ar;
        assert_true(sec(q.res->step_ps) >= lo * (1 - 1e-9));
        assert_true(sec(q.res->step_ps) <= sec(o.res->step_ps) * (1 + 1e-9));
        assert_true(sec(q.res->step_ps) < sec(o.res->step_ps)); /* buckets overlap backward */
        /* 8 weights of 4 MB in 8 MB buckets -> 4 buckets carrying all parameter bytes */
        assert_int_equal(q.prog->ddp_buckets, 4);
        assert_int_equal(q.res->collectives, 4);
        assert_true(fabs(q.res->coll_bytes - t->param_bytes) < 1);
        assert_breakdown(q.res);
        /* PyTorch's small first bucket: 1 weight, then pairs, then the last one */
        p.first_bucket_bytes = 1 << 20;
        run_out f = run_plan(t, p, spec, 50e9, 1000, NULL);
        assert_int_equal(f.prog->ddp_buckets, 5);
        assert_true(fabs(f.res->coll_bytes - t->param_bytes) < 1);
        run_free(&f);
        run_free(&q);
        run_free(&o);
    }
    mt_trace_free(t);
}

/* Stage 0 becomes: two non-blocking all-reduces of g_ar_bytes on the DP group, then WAIT_COMM. */
static double g_ar_bytes;
static void two_async_allreduces(mt_program *p) {
    mt_stage_program *sp = &p->stages[0];
    assert_true(sp->n_tasks >= 3);
    for (int i = 0; i < 3; i++) {
        mt_task *k = &sp->tasks[i];
        memset(k, 0, sizeof *k);
        k->mb = k->layer = k->traced = k->moe_layer = -1;
        k->kind = i < 2 ? MT_TASK_COLL : MT_TASK_WAIT_COMM;
        k->group = MT_GROUP_DP;
        k->coll = MT_COLL_ALLREDUCE;
        k->bytes = g_ar_bytes;
    }
    sp->n_tasks = 3;
    sp->compute_ps = 0;
}

/* Stage 0 becomes: a non-blocking all-reduce of g_ar_bytes, one compute op of g_op_ps, WAIT_COMM. */
static int64_t g_op_ps;
static void allreduce_over_one_op(mt_program *p) {
    mt_stage_program *sp = &p->stages[0];
    int32_t first = -1;
    for (int32_t i = 0; i < sp->n_tasks && first < 0; i++)
        if (sp->tasks[i].kind == MT_TASK_COMPUTE) first = sp->tasks[i].item_first;
    assert_true(first >= 0 && sp->n_tasks >= 3);
    two_async_allreduces(p);
    mt_task *k = &sp->tasks[1];
    memset(k, 0, sizeof *k);
    k->mb = k->layer = k->traced = k->moe_layer = -1;
    k->kind = MT_TASK_COMPUTE;
    k->item_first = first;
    k->item_count = 1;
    k->dur_ps = sp->items[first].dur_ps = g_op_ps;
    sp->compute_ps = g_op_ps;
}

/* Compute slowed by communication, one collective of C over one op of W (rate model: the op runs at
 * 1 / (1 + s) while the collective is in flight): C < W(1 + s) ends the op at W + C s / (1 + s);
 * C longer ends it at W(1 + s) and the step at C. The op's slowdown beside a collective inside a
 * node (s = 0.25) applies, not the one across nodes; the stretch is the op's time past W. */
static void test_comm_slowdown_closed_form(void **state) {
    (void)state;
    mt_trace *t = make_trace(&(syn){8, 1000000, 2000000, 0, 4e6, 1e6, 32, 0});
    float *slow = malloc(2 * (size_t)t->n_ops * sizeof *slow);
    for (int32_t i = 0; i < t->n_ops; i++) slow[2 * i] = 0.25f, slow[2 * i + 1] = 0.05f;
    mt_plan p = plan_for(2);
    p.dp_mode = MT_DP_SYNC;
    double s = 0.25, W = 1e-3;
    g_op_ps = 1000000000; /* 1 ms */
    double sizes[] = {20e6, 200e6}; /* C about 0.4 ms and 4 ms at 50 GB/s */
    for (int i = 0; i < 2; i++) {
        g_ar_bytes = sizes[i];
        double C = coll_time_s("switch:2", 50e9, 1000, MT_COLL_ALLREDUCE, 2, g_ar_bytes);
        g_comm_slow = slow;
        run_out o = run_plan(t, p, "switch:2", 50e9, 1000, allreduce_over_one_op);
        g_comm_slow = NULL;
        run_out off = run_plan(t, p, "switch:2", 50e9, 1000, allreduce_over_one_op);
        assert_int_equal(o.rc, MT_OK);
        assert_int_equal(off.rc, MT_OK);
        double op_end = C < W * (1 + s) ? W + C * s / (1 + s) : W * (1 + s);
        double step = fmax(op_end, C), stretch = op_end - W;
        assert_true(fabs(sec(o.res->step_ps) - step) <= 1e-9 + 1e-6 * step);
        assert_true(fabs(sec(o.res->gpus[0].stretch_ps) - stretch) <= 1e-9 + 1e-6 * stretch);
        assert_true(fabs(sec(o.res->gpus[0].compute_ps) - W) <= 1e-12);
        assert_true(fabs(sec(off.res->step_ps) - fmax(W, C)) <= 1e-9);
        assert_int_equal(off.res->gpus[0].stretch_ps, 0);
        assert_breakdown(o.res);
        run_free(&o);
        run_free(&off);
    }
    free(slow);
    mt_trace_free(t);
}

/* coll_lanes (gloo's two worker threads): a group runs two collectives at once. Latency-bound, the
 * pair takes one all-reduce's time (one at a time: two); bandwidth-bound they share the links and
 * take two all-reduces' time either way (within the flow model's rounding). */
static void test_coll_lanes(void **state) {
    (void)state;
    mt_trace *t = make_trace(&(syn){8, 1000000, 2000000, 0, 4e6, 1e6, 32, 0});
    mt_plan p = plan_for(2);
    p.dp_mode = MT_DP_SYNC;
    struct { double bytes, bw, lat; int latency_bound; } c[] = {{8, 1e15, 50000, 1}, {64e6, 1e9, 0, 0}};
    for (int i = 0; i < 2; i++) {
        g_ar_bytes = c[i].bytes;
        double ar = coll_time_s("switch:2", c[i].bw, c[i].lat, MT_COLL_ALLREDUCE, 2, c[i].bytes);
        assert_true(ar > 0);
        g_lanes = 0;
        run_out one = run_plan(t, p, "switch:2", c[i].bw, c[i].lat, two_async_allreduces);
        g_lanes = 2;
        run_out two = run_plan(t, p, "switch:2", c[i].bw, c[i].lat, two_async_allreduces);
        g_lanes = 0;
        assert_int_equal(one.rc, MT_OK);
        assert_int_equal(two.rc, MT_OK);
        assert_int_equal(two.res->collectives, 2);
        assert_true(fabs(sec(one.res->step_ps) - 2 * ar) <= 1e-3 * ar);
        if (c[i].latency_bound) assert_true(fabs(sec(two.res->step_ps) - ar) <= 1e-3 * ar);
        else assert_true(fabs(sec(two.res->step_ps) - 2 * ar) <= 1e-2 * ar);
        assert_breakdown(two.res);
        run_free(&one);
        run_free(&two);
    }
    mt_trace_free(t);
}

static void test_gpipe_bubble_and_1f1b(void **state) {
    (void)state;
    syn s = syn_default();
    s.act_bytes = 0; /* nothing crosses stages but latency, which is 0 */
    s.layers = 8;
    mt_trace *t = make_trace(&s);
    const int32_t P = 4, Ms[] = {1, 2, 4, 8, 16};
    for (int k = 0; k < 5; k++) {
        int32_t M = Ms[k];
        mt_plan p = plan_for(P);
        p.pp = P;
        p.micro_batches = M;
        p.schedule = MT_PP_GPIPE;
        run_out g = run_plan(t, p, "switch:4", 100e9, 0, NULL);
        assert_int_equal(g.rc, MT_OK);
        /* uniform stages: 2 layers each; per micro-batch F = 2 fwd / M, B = 2 bwd / M */
        double FB = 2.0 * (double)(s.fwd_ns + s.bwd_ns) / M * 1e-9;
        double want = (M + P - 1) * FB;
        assert_true(fabs(sec(g.res->step_ps) - want) < 1e-9 * want + 1e-12);
        for (int32_t r = 0; r < P; r++) {
            double bubble = sec(g.res->gpus[r].bubble_ps + g.res->gpus[r].idle_ps);
            double frac = bubble / sec(g.res->step_ps);
            assert_true(fabs(frac - (double)(P - 1) / (M + P - 1)) < 1e-6);
            assert_int_equal(g.res->gpus[r].peak_live_mb, M); /* GPipe holds every micro-batch */
        }
        assert_breakdown(g.res);
        p.schedule = MT_PP_1F1B;
        run_out f = run_plan(t, p, "switch:4", 100e9, 0, NULL);
        assert_int_equal(f.rc, MT_OK);
        assert_true(fabs(sec(f.res->step_ps) - want) < 1e-9 * want + 1e-12);
        for (int32_t r = 0; r < P; r++) {
            int32_t st = f.res->gpus[r].stage;
            int32_t bound = P - st < M ? P - st : M;
            assert_true(f.res->gpus[r].peak_live_mb <= P);
            assert_int_equal(f.res->gpus[r].peak_live_mb, bound);
        }
        assert_breakdown(f.res);
        run_free(&g);
        run_free(&f);
    }
    mt_trace_free(t);
}

/* Two pipeline stages of t with M micro-batches (1F1B) on a 10 GB/s switch without latency. */
static run_out run_pp2(const mt_trace *t, int32_t M) {
    mt_plan p = plan_for(2);
    p.pp = 2;
    p.micro_batches = M;
    run_out o = run_plan(t, p, "switch:2", 10e9, 0, NULL);
    assert_int_equal(o.rc, MT_OK);
    return o;
}

static void test_pipeline_sends_activation_bytes(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    run_out o = run_pp2(t, 4);
    /* the boundary carries the one activation between layer 3 and 4, a quarter per micro-batch */
    assert_true(fabs(o.prog->stages[0].boundary_bytes - s.act_bytes) < 1);
    assert_int_equal(o.res->sends, 2 * 4);
    /* slower than the no-communication bound (M + P - 1) x (F + B per stage and micro-batch)
     * by at least one activation and one gradient transfer, which nothing can overlap */
    double xfer = s.act_bytes / 4 / 10e9;
    double nocomm = (4 + 1) * (double)(4 * (s.fwd_ns + s.bwd_ns)) / 4 * 1e-9;
    assert_true(sec(o.res->step_ps) >= nocomm + 2 * xfer * (1 - 1e-6));
    assert_breakdown(o.res);
    run_free(&o);
    mt_trace_free(t);
}

/* A RECV's wait splits at the send's issue: before it bubble (the other stage computes), after
 * it exposed communication (the transfer). P = 2, M = 1, 8 layers of 1 ms forward and 2 ms
 * backward, 1 MB of activations over 10 GB/s without latency: x = 0.1 ms each way. Stage 1 waits
 * 4 ms for stage 0's forward, then x; stage 0 waits for stage 1's forward and backward (12 ms)
 * after the activations' transfer (x, stage 1's exposed time: bubble for stage 0), then x. */
static void test_pipeline_recv_splits_bubble_and_transfer(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    run_out o = run_pp2(t, 1);
    const mt_time_ps x = (mt_time_ps)(s.act_bytes / 10e9 * 1e12), ms = 1000000000;
    const mt_gpu_stats *g0 = &o.res->gpus[0], *g1 = &o.res->gpus[1];
    assert_int_equal(g1->stage, 1);
    assert_true(llabs(g1->bubble_ps - 4 * ms) <= 2);
    assert_true(llabs(g1->exposed_ps - x) <= 2);
    assert_true(llabs(g0->bubble_ps - (12 * ms + x)) <= 4);
    assert_true(llabs(g0->exposed_ps - x) <= 2);
    assert_int_equal(g0->peer_wait_ps + g1->peer_wait_ps, 0);
    /* each GPU's comm: the transfer it received and the one it sent */
    assert_true(llabs(g0->comm_ps - 2 * x) <= 4 && llabs(g1->comm_ps - 2 * x) <= 4);
    /* whom they waited for: each other, for the bubble */
    assert_int_equal(g1->waited_for, 0);
    assert_int_equal(g1->waited_for_ps, g1->bubble_ps);
    assert_int_equal(g0->waited_for, 1);
    assert_int_equal(o.prog->stages[0].tasks[g0->waited_pc].kind, MT_TASK_RECV);
    assert_breakdown(o.res);
    run_free(&o);
    mt_trace_free(t);
}

/* Forward pipeline sends of one stage, as they arrive (SEND spans end at delivery). */
typedef struct arrivals {
    mt_time_ps end[64];
    int n;
} arrivals;

static void on_send_span(void *ctx, int32_t rank, mt_span_kind kind, const mt_task *task, mt_time_ps start,
                         mt_time_ps end) {
    arrivals *a = ctx;
    (void)start;
    if (kind == MT_SPAN_SEND && rank == 0 && task->dir > 0 && a->n < 64) a->end[a->n++] = end;
}

/* A stage's sends to its neighbour leave one after another, as on one NCCL stream: with a
 * transfer x far longer than a micro-batch's forward F, the k-th activation arrives at
 * (k+1)F-ish + (k+1)x, not all of them together near M x (when they shared the link). */
static void test_pipeline_sends_queue_per_connection(void **state) {
    (void)state;
    syn s = syn_default();
    s.act_bytes = 4e9; /* per step: 1 GB per micro-batch at M = 4 */
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(2);
    p.pp = 2;
    p.micro_batches = 4;
    p.schedule = MT_PP_GPIPE;
    arrivals a = {0};
    run_out o = run_plan_obs(t, p, "switch:2", 10e9, 0, NULL, NULL, on_send_span, &a);
    assert_int_equal(o.rc, MT_OK);
    assert_int_equal(a.n, 4);
    double x = s.act_bytes / 4 / 10e9, F = (double)(4 * s.fwd_ns) / 4 * 1e-9; /* 4 layers a stage */
    for (int k = 0; k < 4; k++) {
        double got = sec(a.end[k]);
        if (fabs(got - (F + (k + 1) * x)) > 1e-9) fail_msg("send %d arrived at %.9f s, want %.9f s", k, got, F + (k + 1) * x);
    }
    assert_breakdown(o.res);
    run_free(&o);
    mt_trace_free(t);
}

static void test_tp_megatron_mlp(void **state) {
    (void)state;
    syn s = syn_default();
    s.mlp = 1;
    s.layers = 8; /* two blocks of col linear, gelu, row linear, layer_norm */
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(2);
    p.tp = 2;
    run_out o = run_plan(t, p, "switch:2", 100e9, 0, NULL);
    assert_int_equal(o.rc, MT_OK);
    assert_int_equal(o.prog->tp_split_ops, 6); /* col, gelu, row per block */
    assert_int_equal(o.prog->tp_colls_fwd, 2);
    assert_int_equal(o.prog->tp_colls_bwd, 2);
    assert_int_equal(o.prog->tp_unplaced_bwd, 0);
    /* the task list: a forward all-reduce right after each row linear, a backward one right
     * after each column linear's backward op, all blocking on the TP group */
    const mt_stage_program *sp = &o.prog->stages[0];
    int fwd = 0, bwd = 0;
    for (int32_t i = 0; i < sp->n_tasks; i++) {
        const mt_task *k = &sp->tasks[i];
        if (k->kind != MT_TASK_COLL) continue;
        assert_int_equal(k->group, MT_GROUP_TP);
        assert_int_equal(k->coll, MT_COLL_ALLREDUCE);
        assert_true(k->blocking);
        assert_true(fabs(k->bytes - s.act_bytes) < 1);
        const mt_task *prev = &sp->tasks[i - 1];
        assert_int_equal(prev->kind, MT_TASK_COMPUTE);
        const mt_item *last = &sp->items[prev->item_first + prev->item_count - 1];
        const trace_op *op = &t->ops[last->op];
        if (k->why == MT_COLL_WHY_TP_FWD) {
            fwd++;
            assert_int_equal(op->layer % 4, 2); /* after the row linear */
        } else {
            bwd++;
            assert_int_equal(op->phase, TRACE_PHASE_BACKWARD);
            assert_int_equal(op->layer % 4, 0); /* after the column linear's backward */
        }
    }
    assert_int_equal(fwd, 2);
    assert_int_equal(bwd, 2);
    /* compute: the 6 split layers run at half time, the 2 norms in full */
    int64_t full = (s.fwd_ns + s.bwd_ns) * 1000;
    assert_int_equal(o.res->gpus[0].compute_ps, 6 * full / 2 + 2 * full);
    double ar = coll_time_s("switch:2", 100e9, 0, MT_COLL_ALLREDUCE, 2, s.act_bytes);
    double want = sec(o.res->gpus[0].compute_ps) + 4 * ar;
    assert_true(fabs(sec(o.res->step_ps) - want) < 1e-6 * want);
    assert_breakdown(o.res);
    run_free(&o);
    mt_trace_free(t);
}

static void test_batch_rescaling(void **state) {
    (void)state;
    syn s = syn_default();
    s.opt_ns = 700000;
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(1);
    p.global_batch = 64; /* twice the traced 32 */
    run_out o = run_plan(t, p, "switch:2", 100e9, 0, NULL);
    assert_int_equal(o.rc, MT_OK);
    int64_t fb = (int64_t)s.layers * (s.fwd_ns + s.bwd_ns);
    assert_int_equal(o.res->step_ps, (2 * fb + s.opt_ns) * 1000); /* optimizer unchanged */
    run_free(&o);
    mt_trace_free(t);
}

static void drop_sends(mt_program *p) {
    for (int32_t s = 0; s < p->n_stages; s++)
        for (int32_t i = 0; i < p->stages[s].n_tasks; i++)
            if (p->stages[s].tasks[i].kind == MT_TASK_SEND) p->stages[s].tasks[i].kind = MT_TASK_MB_BEGIN;
}

static void test_stuck_is_an_error(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(2);
    p.pp = 2;
    run_out o = run_plan(t, p, "switch:2", 100e9, 0, drop_sends);
    assert_int_equal(o.rc, MT_ESTUCK);
    assert_null(o.res);
    assert_non_null(strstr(o.msg, "stuck"));
    assert_non_null(strstr(o.msg, "2 of 2 GPUs"));
    assert_non_null(strstr(o.msg, "GPU 1 (dp 0, stage 1, tp 0) waits for activations"));
    run_free(&o);
    mt_trace_free(t);
}

static void test_too_few_endpoints(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(8);
    run_out o = run_plan(t, p, "switch:4", 100e9, 0, NULL);
    assert_int_equal(o.rc, MT_EINVAL);
    assert_non_null(strstr(o.msg, "topology has 4"));
    run_free(&o);
    mt_trace_free(t);
}

static void test_ringflow_matches_ring_on_switch(void **state) {
    (void)state;
    syn s = syn_default();
    s.opt_ns = 100000;
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(16);
    p.dp_mode = MT_DP_SYNC;
    p.ringflow_above = -1;
    run_out a = run_plan(t, p, "switch:16", 25e9, 700, NULL);
    p.ringflow_above = 0;
    run_out b = run_plan(t, p, "switch:16", 25e9, 700, NULL);
    assert_int_equal(a.rc, MT_OK);
    assert_int_equal(b.rc, MT_OK);
    assert_true(llabs(a.res->step_ps - b.res->step_ps) <= 16); /* rounding of a few ps */
    assert_true(b.res->events < a.res->events);
    run_free(&a);
    run_free(&b);
    mt_trace_free(t);
}

/* ---- what-if scenarios (sim/scenario.h) --------------------------------------------------- */

static mt_scenario *scenario_of_json(const char *json, mt_error *err, mt_status *rc) {
    char path[] = "/tmp/mt_scenario_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(json, f);
    fclose(f);
    mt_scenario *sc = mt_scenario_new();
    *rc = mt_scenario_load(sc, path, err);
    remove(path);
    return sc;
}

/* Synchronous dp on switch:4 (with an optimizer): the unperturbed run and the one under
 * --slow-gpu `spec`. */
typedef struct dp4_pair {
    mt_trace *t;
    mt_scenario *sc;
    run_out b, o;
} dp4_pair;

static dp4_pair dp4_runs(const char *spec) {
    dp4_pair x;
    syn s = syn_default();
    s.opt_ns = 500000;
    x.t = make_trace(&s);
    mt_plan p = plan_for(4);
    p.dp_mode = MT_DP_SYNC;
    x.b = run_plan(x.t, p, "switch:4", 100e9, 500, NULL);
    x.sc = mt_scenario_new();
    assert_int_equal(mt_scenario_add_slow_gpu(x.sc, spec, NULL), MT_OK);
    x.o = run_plan_sc(x.t, p, "switch:4", 100e9, 500, NULL, x.sc);
    assert_int_equal(x.o.rc, MT_OK);
    return x;
}

static void dp4_free(dp4_pair *x) {
    run_free(&x->o);
    run_free(&x->b);
    mt_scenario_free(x->sc);
    mt_trace_free(x->t);
}

static void test_whatif_uniform_slowdown_doubles_compute(void **state) {
    (void)state;
    dp4_pair x = dp4_runs("0-3:2");
    run_out b = x.b, o = x.o;
    for (int32_t i = 0; i < 4; i++) {
        assert_int_equal(o.res->gpus[i].compute_ps, 2 * b.res->gpus[i].compute_ps);
        assert_int_equal(o.res->gpus[i].comm_ps, b.res->gpus[i].comm_ps);
        assert_int_equal(o.res->gpus[i].exposed_ps, b.res->gpus[i].exposed_ps);
        assert_int_equal(o.res->gpus[i].idle_ps, b.res->gpus[i].idle_ps);
    }
    assert_int_equal(o.res->step_ps, b.res->step_ps + b.res->gpus[0].compute_ps);
    assert_breakdown(o.res);
    dp4_free(&x);
}

static void test_whatif_straggler_delays_sync_step(void **state) {
    (void)state;
    dp4_pair x = dp4_runs("2:1.5");
    run_out b = x.b, o = x.o;
    mt_time_ps extra = o.res->gpus[2].compute_ps - b.res->gpus[2].compute_ps;
    assert_int_equal(extra, b.res->gpus[2].compute_ps / 2); /* 1.5x: +half its compute */
    assert_int_equal(o.res->step_ps, b.res->step_ps + extra); /* the step waits for it exactly */
    for (int32_t i = 0; i < 4; i++)
        if (i != 2) assert_int_equal(o.res->gpus[i].compute_ps, b.res->gpus[i].compute_ps);
    mt_whatif_cost c;
    mt_whatif_cost_of(b.res, o.res, &c);
    assert_int_equal(c.run_change_ps, extra);
    assert_true(c.extra_compute_ps == (double)extra);
    assert_true(c.extra_wait_ps == 3.0 * (double)extra); /* every other GPU waits for it */
    assert_true(c.gpu_time_ps == 4.0 * (double)extra);
    /* the others reach the gradient all-reduce before GPU 2 issues it, by half its forward and
     * backward (8 layers of 1 + 2 ms: 12 ms; its slower optimizer comes after the all-reduce):
     * that wait is peer wait credited to GPU 2, the all-reduce itself stays exposed as in the
     * baseline */
    const mt_time_ps late = 8 * (1000000 + 2000000) * (mt_time_ps)1000 / 2;
    for (int32_t i = 0; i < 4; i++) {
        assert_int_equal(b.res->gpus[i].peer_wait_ps, 0); /* alike GPUs arrive together */
        assert_int_equal(b.res->gpus[i].waited_for, -1);
        assert_int_equal(o.res->gpus[i].exposed_ps, b.res->gpus[i].exposed_ps);
        assert_int_equal(o.res->gpus[i].peer_wait_ps, i == 2 ? 0 : late);
        assert_int_equal(o.res->gpus[i].waited_for, i == 2 ? -1 : 2);
        assert_int_equal(o.res->gpus[i].waited_for_ps, i == 2 ? 0 : late);
        if (i != 2) assert_int_equal(o.prog->stages[0].tasks[o.res->gpus[i].waited_pc].kind, MT_TASK_COLL);
    }
    assert_breakdown(o.res);
    dp4_free(&x);
}

static void test_whatif_seed_repeats(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(4);
    const char *js = "{\"seed\": 5, \"steps\": 2, \"compute\": [{\"gpus\": \"all\", \"per\": \"step\","
                     " \"slowdown\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 2}}]}";
    mt_error err = {0};
    mt_status rc;
    mt_scenario *a = scenario_of_json(js, &err, &rc), *b = scenario_of_json(js, &err, &rc);
    assert_int_equal(rc, MT_OK);
    run_out x = run_plan_sc(t, p, "switch:4", 100e9, 500, NULL, a);
    run_out y = run_plan_sc(t, p, "switch:4", 100e9, 500, NULL, b);
    assert_int_equal(x.res->n_steps, 2);
    assert_int_equal(x.res->step_ps, y.res->step_ps);
    for (int32_t i = 0; i < 4; i++) assert_int_equal(x.res->gpus[i].compute_ps, y.res->gpus[i].compute_ps);
    assert_true(x.res->gpus[0].compute_ps != x.res->gpus[1].compute_ps); /* drawn per GPU and step */
    mt_scenario_set_seed(b, 6);
    run_out z = run_plan_sc(t, p, "switch:4", 100e9, 500, NULL, b);
    assert_true(z.res->step_ps != x.res->step_ps);
    run_free(&x);
    run_free(&y);
    run_free(&z);
    mt_scenario_free(a);
    mt_scenario_free(b);
    mt_trace_free(t);
}

/* A worker thread's copy (compare --jobs): the clone of a bound scenario, used after the
 * original is gone, draws the same numbers as a fresh scenario from the same file. */
static void test_whatif_clone_runs_like_its_original(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(4);
    const char *js = "{\"seed\": 5, \"steps\": 2, \"compute\": [{\"gpus\": \"0-2\", \"per\": \"step\","
                     " \"slowdown\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 2}}]}";
    mt_error err = {0};
    mt_status rc;
    mt_scenario *a = scenario_of_json(js, &err, &rc), *b = scenario_of_json(js, &err, &rc), *c = NULL;
    assert_int_equal(rc, MT_OK);
    run_out x = run_plan_sc(t, p, "switch:4", 100e9, 500, NULL, a); /* a is bound now */
    assert_int_equal(mt_scenario_clone(a, &c, &err), MT_OK);
    mt_scenario_free(a);
    assert_int_equal(mt_scenario_steps(c), 2);
    assert_true(mt_scenario_perturbs(c));
    run_out y = run_plan_sc(t, p, "switch:4", 100e9, 500, NULL, c);
    run_out z = run_plan_sc(t, p, "switch:4", 100e9, 500, NULL, b);
    assert_int_equal(y.res->step_ps, z.res->step_ps);
    assert_int_equal(x.res->step_ps, z.res->step_ps);
    for (int32_t i = 0; i < 4; i++) assert_int_equal(y.res->gpus[i].compute_ps, z.res->gpus[i].compute_ps);
    assert_true(y.res->gpus[3].compute_ps < y.res->gpus[0].compute_ps); /* GPU 3 is not slowed */
    run_free(&x);
    run_free(&y);
    run_free(&z);
    mt_scenario_free(b);
    mt_scenario_free(c);
    mt_trace_free(t);
}

static void test_whatif_steps_and_layers(void **state) {
    (void)state;
    syn s = syn_default();
    s.opt_ns = 500000;
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(4);
    p.dp_mode = MT_DP_SYNC;
    run_out one = run_plan(t, p, "switch:4", 100e9, 500, NULL);
    mt_scenario *sc = mt_scenario_new();
    mt_scenario_set_steps(sc, 3);
    run_out three = run_plan_sc(t, p, "switch:4", 100e9, 500, NULL, sc);
    assert_int_equal(three.res->step_ps, 3 * one.res->step_ps); /* synchronous steps repeat exactly */
    for (int k = 0; k < 3; k++) assert_int_equal(three.res->step_end_ps[k], (k + 1) * one.res->step_ps);
    run_free(&three);
    /* a pipeline over 3 steps: arrivals and collectives matched per step, never stuck; step k+1
     * may start on stage 0 while stage 1 finishes step k, so the run is at most 3 steps long */
    mt_plan pp = plan_for(4);
    pp.dp = 2;
    pp.pp = 2;
    pp.micro_batches = 4;
    run_out p1 = run_plan(t, pp, "switch:4", 100e9, 500, NULL);
    run_out p3 = run_plan_sc(t, pp, "switch:4", 100e9, 500, NULL, sc);
    assert_int_equal(p3.rc, MT_OK);
    assert_int_equal(p3.res->step_end_ps[0], p1.res->step_ps);
    assert_true(p3.res->step_ps <= 3 * p1.res->step_ps && p3.res->step_ps > 2 * p1.res->step_ps);
    assert_int_equal(p3.res->gpus[0].compute_ps, 3 * p1.res->gpus[0].compute_ps);
    assert_breakdown(p3.res);
    run_free(&p1);
    run_free(&p3);
    mt_scenario_free(sc);
    /* layer 0 three times slower on one GPU: + 2 x (1 ms forward + 2 ms backward) */
    mt_error err = {0};
    mt_status rc;
    sc = scenario_of_json("{\"compute\": [{\"layers\": [0], \"slowdown\": 3}]}", &err, &rc);
    assert_int_equal(rc, MT_OK);
    mt_plan p0 = plan_for(1);
    run_out a = run_plan(t, p0, "switch:2", 100e9, 500, NULL);
    run_out l = run_plan_sc(t, p0, "switch:2", 100e9, 500, NULL, sc);
    assert_int_equal(l.res->step_ps - a.res->step_ps, 2 * (1000000 + 2000000) * INT64_C(1000));
    run_free(&a);
    run_free(&l);
    mt_scenario_free(sc);
    /* only the backward phase of micro-batch 1 of 2 on a 2-stage pipeline: stage 1's backward of
     * mb 1 is 4 layers x 2 ms x (1/2 batch) = 4 ms, doubled: compute + 4 ms on GPU 1 */
    sc = scenario_of_json("{\"compute\": [{\"gpus\": [1], \"micro_batches\": [1], \"phases\": [\"backward\"],"
                          " \"slowdown\": 2}]}", &err, &rc);
    assert_int_equal(rc, MT_OK);
    mt_plan p2 = plan_for(2);
    p2.pp = 2;
    p2.micro_batches = 2;
    run_out q1 = run_plan(t, p2, "switch:2", 100e9, 500, NULL);
    run_out q2 = run_plan_sc(t, p2, "switch:2", 100e9, 500, NULL, sc);
    assert_int_equal(q2.res->gpus[1].compute_ps - q1.res->gpus[1].compute_ps, 4000000 * INT64_C(1000));
    assert_int_equal(q2.res->gpus[0].compute_ps, q1.res->gpus[0].compute_ps);
    run_free(&q1);
    run_free(&q2);
    mt_scenario_free(sc);
    run_free(&one);
    mt_trace_free(t);
}

static void test_whatif_errors_name_the_path(void **state) {
    (void)state;
    static const char *cases[][2] = {
        {"{\"compute\": [{\"gpus\": [0], \"slowdown\": 2}, {\"gpus\": [0], \"slowdown\": -1}]}", "compute[1].slowdown"},
        {"{\"compute\": [{\"gpus\": \"0-x\", \"slowdown\": 2}]}", "compute[0].gpus"},
        {"{\"compute\": [{\"slowdown\": {\"dist\": \"cauchy\"}}]}", "compute[0].slowdown.dist"},
        {"{\"compute\": [{\"gpu\": 1, \"slowdown\": 2}]}", "unknown key 'gpu'"},
        {"{\"network\": [{\"link\": \"gpu0->sw0\"}]}", "network[0]: nothing to change"},
        {"{\"network\": [{\"link\": \"gpu0\", \"bandwidth_factor\": 0.5, \"period\": \"1ms\"}]}", "network[0]: periodic"},
        {"{\"network\": [{\"gpu\": 0, \"fail_at\": \"soon\"}]}", "network[0].fail_at"},
        {"{\"steps\": 0}", "steps"},
        {"[1, 2]", "a scenario is a JSON object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mt_error err = {0};
        mt_status rc;
        mt_scenario *sc = scenario_of_json(cases[i][0], &err, &rc);
        if (rc == MT_OK || !strstr(err.msg, cases[i][1]) || !strstr(err.msg, "/tmp/mt_scenario_"))
            fail_msg("case %zu: rc %d, message '%s' lacks '%s'", i, (int)rc, err.msg, cases[i][1]);
        mt_scenario_free(sc);
    }
    /* rank out of the plan, and a flag error, named */
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(2);
    mt_error err = {0};
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_OK);
    mt_program *prog;
    assert_int_equal(mt_program_build(t, &p, NULL, &prog, &err), MT_OK);
    mt_scenario *sc = mt_scenario_new();
    assert_int_equal(mt_scenario_add_slow_gpu(sc, "5:2", &err), MT_OK);
    assert_int_equal(mt_scenario_bind(sc, prog, t, NULL, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--slow-gpu 5:2: GPU 5, but the plan has 2"));
    assert_int_equal(mt_scenario_add_slow_link(sc, "gpu0->sw0", &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--slow-link"));
    assert_int_equal(mt_scenario_add_fail_link(sc, "gpu0->sw0@later", &err), MT_EINVAL);
    mt_scenario_free(sc);
    /* network perturbations on the photonic model: refused with a clear message */
    sc = mt_scenario_new();
    assert_int_equal(mt_scenario_add_slow_link(sc, "gpu0:10", &err), MT_OK);
    mt_engine *e = mt_engine_new();
    mt_netmodel ph;
    assert_int_equal(mt_netmodel_create("photonic", NULL, NULL, mt_engine_sched(e), &ph, &err), MT_OK);
    assert_int_equal(mt_scenario_apply_network(sc, &ph, NULL, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--slow-link gpu0:10: the photonic model cannot change a link's bandwidth "
                                    "(it has no links; use --network flow)"));
    mt_net_free(&ph);
    mt_engine_free(e);
    mt_scenario_free(sc);
    mt_program_free(prog);
    mt_trace_free(t);
}

static void test_whatif_cut_link_stops_the_run(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(4);
    p.dp_mode = MT_DP_SYNC;
    mt_scenario *sc = mt_scenario_new();
    assert_int_equal(mt_scenario_add_fail_link(sc, "gpu1->gpu2@1ms", NULL), MT_OK);
    run_out o = run_plan_sc(t, p, "ring:4,uni", 100e9, 500, NULL, sc); /* one direction: no detour */
    assert_int_equal(o.rc, MT_ENOROUTE);
    assert_non_null(strstr(o.msg, "no route from gpu1 to gpu2"));
    assert_non_null(strstr(o.msg, "gpu1->gpu2"));
    run_free(&o);
    /* both directions: the ring all-reduce detours the long way round and still finishes */
    run_out b = run_plan(t, p, "ring:4", 100e9, 500, NULL);
    o = run_plan_sc(t, p, "ring:4", 100e9, 500, NULL, sc);
    assert_int_equal(o.rc, MT_OK);
    assert_true(o.res->step_ps >= b.res->step_ps);
    assert_int_equal(o.res->gpus[0].compute_ps, b.res->gpus[0].compute_ps);
    run_free(&o);
    run_free(&b);
    mt_scenario_free(sc);
    mt_trace_free(t);
}


/* ---- the mesh and sharded data parallelism ------------------------------------------------ */

/* The group table over a mesh: every kind's members round-trip (member(slot(r)) = r), a group
 * has the ranks that share the coordinates outside its span; dimensions of size 1 build no
 * groups; hybrid sharding splits dp into dp_shard (consecutive replicas) x dp_rep. */
static void test_mesh_group_table(void **state) {
    (void)state;
    mt_error err = {0};
    char pl[MT_PLACEMENT_MAX];
    assert_int_equal(mt_placement_parse("tp,pp,dp", pl, &err), MT_OK);
    assert_string_equal(pl, "tpd");
    assert_int_equal(mt_placement_parse("dp,tp", pl, &err), MT_OK);
    assert_string_equal(pl, "dtp"); /* pp left out: outermost */
    assert_int_equal(mt_placement_parse("tp,tp", pl, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "repeated dimension 'tp'"));
    mt_mesh m;
    mt_mesh_init(&m, 8, 2, 2, 1, 1, 1, "tpd"); /* dp 8 = dp_shard 2 x dp_rep 4, tp 2 */
    assert_int_equal(m.n, 16);
    mt_groups g;
    mt_groups_init(&g, &m);
    int shard = mt_groups_add(&g, MT_DIM_BIT(MT_DIM_DP_SHARD), 0, "dp_shard");
    int rep = mt_groups_add(&g, MT_DIM_BIT(MT_DIM_DP_REP), 0, "dp_rep");
    int pp = mt_groups_add(&g, MT_DIM_BIT(MT_DIM_PP), 0, "pp");
    int sub = mt_groups_sub_kind(&g, 4);
    assert_int_equal(mt_group_count(&g, MT_GROUP_TP), 8);
    assert_int_equal(mt_group_count(&g, MT_GROUP_DP), 2);
    assert_int_equal(mt_group_size(&g, shard), 2);
    assert_int_equal(mt_group_size(&g, rep), 4);
    assert_int_equal(mt_group_count(&g, pp), 0); /* pp 1: no groups */
    assert_int_equal(mt_group_size(&g, sub), 4);
    for (int k = 0; k < g.n_kinds; k++) {
        if (!mt_group_count(&g, k)) continue;
        for (int32_t r = 0; r < m.n; r++) {
            assert_int_equal(mt_group_member(&g, k, r, mt_group_slot(&g, k, r)), r);
            for (int32_t sl = 0; sl < mt_group_size(&g, k); sl++)
                assert_int_equal(mt_group_id(&g, k, mt_group_member(&g, k, r, sl)), mt_group_id(&g, k, r));
        }
    }
    /* rank = (d x 1 + 0) x 2 + t with d = dp_rep x 2 + dp_shard: a shard group is 2 consecutive
     * replicas, a replica group every other one */
    assert_int_equal(mt_group_member(&g, shard, 4, 1), 6);
    assert_int_equal(mt_group_member(&g, rep, 0, 3), 12);
    /* a plan's (d, s, t) round-trips through its hybrid mesh: replica d = dp_rep x 2 + dp_shard */
    mt_plan hp = plan_for(16);
    hp.dp = 8;
    hp.tp = 2;
    hp.fsdp = 1;
    hp.fsdp_shard = 2;
    for (int32_t r = 0; r < 16; r++) {
        int32_t d, st, tt;
        mt_plan_coords(&hp, r, &d, &st, &tt);
        assert_int_equal(d, r / 2);
        assert_int_equal(mt_plan_rank(&hp, d, st, tt), r);
    }
    /* the simulator builds groups from the table: tp 1 builds none and still runs */
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    mt_plan p = plan_for(4);
    run_out o = run_plan(t, p, "switch:4", 100e9, 500, NULL);
    assert_int_equal(o.rc, MT_OK);
    assert_int_equal(mt_group_count(&o.prog->groups, MT_GROUP_TP), 0);
    assert_int_equal(mt_group_count(&o.prog->groups, MT_GROUP_DP), 1);
    run_free(&o);
    mt_trace_free(t);
}

static mt_plan sharded_plan(int32_t gpus, int zero, int fsdp, int32_t shard) {
    mt_plan p = plan_for(gpus);
    p.zero = zero;
    p.fsdp = fsdp;
    p.fsdp_shard = shard;
    return p;
}

static double sent(const mt_gpu_stats *g) {
    double x = 0;
    for (int c = 0; c < MT_TRAFFIC_CLASSES; c++) x += g->traffic_bytes[c];
    return x;
}

/* 8 layers of 4 MB of weights (W = 32 MB) on N = 4 replicas, ring collectives: per GPU DDP sends
 * 2(N-1)/N W = 48 MB of all-reduce; ZeRO-3 and FSDP 2 (N-1)/N W of all-gather (forward and
 * backward) and (N-1)/N W of reduce-scatter, 72 MB = 1.5 x DDP; ZeRO-1 all-reduces and gathers
 * (72 MB), ZeRO-2 reduce-scatters and gathers (48 MB); hybrid (shard 2 of 4) gathers inside
 * pairs (2 x 1/2 W), reduce-scatters in them (1/2 W) and all-reduces the W/2 shards across pairs
 * (2 x 1/2 x W/2). */
static void test_sharded_traffic(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    const double W = 8 * 4e6, N = 4;
    struct {
        int zero, fsdp;
        int32_t shard;
        double ar, ag, rs;
    } cases[] = {
        {0, 0, 0, 2 * (N - 1) / N * W, 0, 0},
        {3, 0, 0, 0, 2 * (N - 1) / N * W, (N - 1) / N * W},
        {0, 1, 0, 0, 2 * (N - 1) / N * W, (N - 1) / N * W},
        {1, 0, 0, 2 * (N - 1) / N * W, (N - 1) / N * W, 0},
        {2, 0, 0, 0, (N - 1) / N * W, (N - 1) / N * W},
        {0, 1, 2, 0.5 * W, W, 0.5 * W},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        run_out o = run_plan(t, sharded_plan(4, cases[k].zero, cases[k].fsdp, cases[k].shard), "switch:4", 100e9, 500,
                             NULL);
        assert_int_equal(o.rc, MT_OK);
        for (int32_t i = 0; i < o.res->n_gpus; i++) {
            const mt_gpu_stats *g = &o.res->gpus[i];
            assert_true(fabs(g->traffic_bytes[MT_TRAFFIC_ALLREDUCE] - cases[k].ar) < 1);
            assert_true(fabs(g->traffic_bytes[MT_TRAFFIC_ALLGATHER] - cases[k].ag) < 1);
            assert_true(fabs(g->traffic_bytes[MT_TRAFFIC_REDUCESCATTER] - cases[k].rs) < 1);
        }
        if (k == 1 || k == 2) assert_true(fabs(sent(&o.res->gpus[0]) - 1.5 * 2 * (N - 1) / N * W) < 1);
        run_free(&o);
    }
    mt_trace_free(t);
}

/* Memory per GPU (W = 32 MB of parameters, 64 MB of optimizer state, N = 4): DDP holds W, W, 64 MB;
 * ZeRO-1 shards the optimizer state (16 MB), ZeRO-2 also the gradients (8 MB); ZeRO-3 and FSDP
 * the parameters too, plus what is gathered at once: ZeRO-3 one layer (W/4 + U, no prefetch), FSDP
 * the running unit and the prefetched next (W/4 + 2U; the 8 alike layers are 8 blocks: units of 1
 * block, no root); hybrid shards over 2. --fsdp-units 2: units of 2 blocks, 2 x 2U gathered;
 * --fsdp-prefetch 3: 4 units; --fsdp-reshard none: every unit held from forward to backward (W);
 * not-last: the last unit held beside a running one and its prefetch (3U). The program counts the
 * units gathered per step: 8 blocks, 4 pairs. */
static void test_sharded_memory(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    t->optstate_bytes = 64e6;
    const double W = 32e6, U = 4e6;
    struct {
        int zero, fsdp;
        int32_t shard, units, prefetch;
        mt_reshard reshard;
        double params, grads, opt;
        int32_t n_units;
    } cases[] = {
        {0, 0, 0, 0, -1, MT_RESHARD_ALL, W, W, 64e6, 0},
        {1, 0, 0, 0, -1, MT_RESHARD_ALL, W, W, 16e6, 0},
        {2, 0, 0, 0, -1, MT_RESHARD_ALL, W, W / 4, 16e6, 0},
        {3, 0, 0, 0, -1, MT_RESHARD_ALL, W / 4 + U, W / 4, 16e6, 8},
        {0, 1, 0, 0, -1, MT_RESHARD_ALL, W / 4 + 2 * U, W / 4, 16e6, 8},
        {0, 1, 2, 0, -1, MT_RESHARD_ALL, W / 2 + 2 * U, W / 2, 32e6, 8},
        {0, 1, 0, 2, -1, MT_RESHARD_ALL, W / 4 + 4 * U, W / 4, 16e6, 4},
        {0, 1, 0, MT_UNITS_LAYER, 3, MT_RESHARD_ALL, W / 4 + 4 * U, W / 4, 16e6, 8},
        {0, 1, 0, 0, -1, MT_RESHARD_NONE, W / 4 + W, W / 4, 16e6, 8},
        {0, 1, 0, 0, -1, MT_RESHARD_NOT_LAST, W / 4 + 3 * U, W / 4, 16e6, 8},
        {3, 0, 0, 2, -1, MT_RESHARD_ALL, W / 4 + 2 * U, W / 4, 16e6, 4},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mt_plan p = sharded_plan(4, cases[k].zero, cases[k].fsdp, cases[k].shard);
        p.shard_units = cases[k].units;
        p.shard_prefetch = cases[k].prefetch;
        p.reshard = cases[k].reshard;
        run_out o = run_plan(t, p, "switch:4", 100e9, 500, NULL);
        assert_int_equal(o.rc, MT_OK);
        const mt_gpu_stats *g = &o.res->gpus[3];
        assert_true(fabs(g->mem_params_bytes - cases[k].params) < 1);
        assert_true(fabs(g->mem_grads_bytes - cases[k].grads) < 1);
        assert_true(fabs(g->mem_optimizer_bytes - cases[k].opt) < 1);
        assert_true(fabs(g->peak_mem_bytes - (g->mem_params_bytes + g->mem_grads_bytes + g->mem_optimizer_bytes +
                                              g->mem_activations_bytes)) < 1);
        assert_int_equal(o.prog->shard_units, cases[k].n_units);
        /* every byte gathered before forward and, resharded, again before backward (held: not), a ring
         * all-gather over G ranks sending (G-1)/G of them */
        double held = cases[k].reshard == MT_RESHARD_NONE ? W : cases[k].reshard == MT_RESHARD_NOT_LAST ? U : 0;
        double G = cases[k].shard ? cases[k].shard : 4;
        if (cases[k].zero == 3 || cases[k].fsdp)
            assert_true(fabs(g->traffic_bytes[MT_TRAFFIC_ALLGATHER] - (2 * W - held) * (G - 1) / G) < 1);
        run_free(&o);
    }
    mt_trace_free(t);
}

/* On a network fast enough that collectives cost nothing, ZeRO-1 takes DDP's step time (without
 * optimizer work), and with a 4 ms optimizer step it saves exactly the 3/4 of it it no longer
 * runs (each of 4 GPUs updates a quarter). On a slow one FSDP's prefetch hides all-gathers that
 * ZeRO-3 waits for. */
static void test_sharded_step_times(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    run_out d = run_plan(t, plan_for(4), "switch:4", 1e18, 0, NULL);
    run_out z = run_plan(t, sharded_plan(4, 1, 0, 0), "switch:4", 1e18, 0, NULL);
    assert_int_equal(d.rc, MT_OK);
    assert_int_equal(z.rc, MT_OK);
    assert_true(fabs(sec(z.res->step_ps) - sec(d.res->step_ps)) < 1e-9);
    assert_true(fabs(sec(d.res->step_ps) - 0.024) < 1e-6); /* 8 x (1 + 2) ms */
    run_free(&d);
    run_free(&z);
    mt_trace_free(t);
    s.opt_ns = 4000000;
    t = make_trace(&s);
    d = run_plan(t, plan_for(4), "switch:4", 1e18, 0, NULL);
    z = run_plan(t, sharded_plan(4, 1, 0, 0), "switch:4", 1e18, 0, NULL);
    assert_true(fabs(sec(d.res->step_ps) - sec(z.res->step_ps) - 0.003) < 1e-9);
    run_free(&d);
    run_free(&z);
    run_out z3 = run_plan(t, sharded_plan(4, 3, 0, 0), "switch:4", 4e9, 1000, NULL);
    run_out f = run_plan(t, sharded_plan(4, 0, 1, 0), "switch:4", 4e9, 1000, NULL);
    assert_int_equal(z3.rc, MT_OK);
    assert_int_equal(f.rc, MT_OK);
    assert_true(f.res->step_ps < z3.res->step_ps);
    assert_breakdown(f.res);
    run_free(&z3);
    run_free(&f);
    mt_trace_free(t);
}

/* Combinations that cannot mean anything are one line naming the flag. */
static void test_sharding_refusals(void **state) {
    (void)state;
    syn s = syn_default();
    mt_trace *t = make_trace(&s);
    struct {
        mt_plan p;
        const char *want;
    } bad[] = {
        {sharded_plan(4, 3, 1, 0), "--zero and --fsdp cannot be combined"},
        {sharded_plan(4, 0, 1, 3), "--fsdp-shard 3 does not divide"},
        {sharded_plan(4, 0, 0, 2), "--fsdp-shard applies to --fsdp only"},
        {sharded_plan(1, 2, 0, 0), "--zero shards over the data-parallel group, which has 1 rank"},
        {sharded_plan(4, 1, 0, 0), "not --strategy dp"},
    };
    bad[4].p.dp_mode = MT_DP_SYNC;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        mt_error err = {0};
        assert_int_equal(mt_plan_resolve(&bad[k].p, t, &err), MT_EINVAL);
        assert_non_null(strstr(err.msg, bad[k].want));
        assert_null(strchr(err.msg, '\n'));
    }
    mt_trace_free(t);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_resolve),
        cmocka_unit_test(test_ringflow_walk_equals_chain),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_single_gpu),
        cmocka_unit_test(test_dp_equals_compute_plus_allreduce),
        cmocka_unit_test(test_coll_lanes),
        cmocka_unit_test(test_comm_slowdown_closed_form),
        cmocka_unit_test(test_gpipe_bubble_and_1f1b),
        cmocka_unit_test(test_pipeline_sends_activation_bytes),
        cmocka_unit_test(test_pipeline_sends_queue_per_connection),
        cmocka_unit_test(test_pipeline_recv_splits_bubble_and_transfer),
        cmocka_unit_test(test_tp_megatron_mlp),
        cmocka_unit_test(test_batch_rescaling),
        cmocka_unit_test(test_stuck_is_an_error),
        cmocka_unit_test(test_too_few_endpoints),
        cmocka_unit_test(test_ringflow_matches_ring_on_switch),
        cmocka_unit_test(test_whatif_uniform_slowdown_doubles_compute),
        cmocka_unit_test(test_whatif_straggler_delays_sync_step),
        cmocka_unit_test(test_whatif_seed_repeats),
        cmocka_unit_test(test_whatif_clone_runs_like_its_original),
        cmocka_unit_test(test_whatif_steps_and_layers),
        cmocka_unit_test(test_whatif_errors_name_the_path),
        cmocka_unit_test(test_whatif_cut_link_stops_the_run),
        cmocka_unit_test(test_mesh_group_table),
        cmocka_unit_test(test_sharded_traffic),
        cmocka_unit_test(test_sharded_memory),
        cmocka_unit_test(test_sharded_step_times),
        cmocka_unit_test(test_sharding_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

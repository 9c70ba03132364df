/* Unit tests for the pipeline schedules and recomputation (extrapolate/pass_pp.c,
 * extrapolate/pass_recompute.c) on a synthetic model small enough to solve by hand: L layers, each a
 * linear (input A_l, weight W_l -> h_l, H bytes) and, with attention, QK^T (matmul h_l x h_l -> s_l,
 * S bytes), softmax (-> p_l, S bytes) and PV (matmul p_l x h_l -> A_{l+1}, A bytes); the last layer
 * ends with a loss reading A_L. Every forward op has one backward op linked to it, in reverse order.
 *  - interleaved 1F1B (--vpp V) on uniform chunks with free transfers: step = (M + (P-1)/V) x (F + B)
 *    of a stage per micro-batch, the bubble (P-1)/(V M) of the ideal M (F + B), below 1F1B's
 *    (P-1)/M; stage s holds min(2(P-s-1) + (V-1)P, MV) + 1 chunk-micro-batches; sends follow the
 *    chunk order;
 *  - recomputation on one GPU adds exactly the recomputed forward time (full: every forward op;
 *    selective: the attention core) and activations drop to the hand count;
 *  - refusals name the flag. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/plan.h"
#include "extrapolate/program.h"
#include "netmodels/registry.h"
#include "netmodels/topologies.h"
#include "sim/engine.h"
#include "sim/simulate.h"
#include "runfix.h"
#include "tracer/opclass.h"

enum { FWD_NS = 1000000, BWD_NS = 2000000, ATT_NS = 300000, LOSS_NS = 50000 };
static const double H = 4e6, S = 16e6, A = 2e6, W = 1e6;

typedef struct model {
    mt_trace *t;
    int32_t fwd[256], n_fwd;
} model;

static int32_t tensor(mt_trace *t, double bytes, trace_role role, int32_t first_op) {
    trace_tensor *x = &t->tensors[t->n_tensors];
    memset(x, 0, sizeof *x);
    x->et_id = t->n_tensors + 1;
    x->numel = (int64_t)(bytes / 4);
    x->itemsize = 4;
    x->bytes = bytes;
    x->role = role;
    x->first_op = first_op;
    return t->n_tensors++;
}

static void ref(mt_trace *t, int32_t x) {
    trace_tref *r = &t->trefs[t->n_trefs++];
    memset(r, 0, sizeof *r);
    r->tensor = x;
}

/* A forward op of layer l reading in[0..nin) and making one tensor of `bytes` (none when 0). */
static int32_t fwd_op(model *m, const char *name, int32_t l, int64_t ns, const int32_t *in, int nin, double bytes,
                      int32_t *out) {
    mt_trace *t = m->t;
    trace_op *o = &t->ops[t->n_ops];
    memset(o, 0, sizeof *o);
    o->id = t->n_ops;
    o->name = o->kind = name;
    o->phase = TRACE_PHASE_FORWARD;
    o->layer = l;
    o->dev_ns = ns;
    o->seq = o->fwd_op = o->et_node = -1;
    o->in_first = t->n_trefs;
    for (int i = 0; i < nin; i++) ref(t, in[i]);
    o->in_count = nin;
    o->out_first = t->n_trefs;
    if (bytes > 0) {
        *out = tensor(t, bytes, TRACE_ROLE_ACTIVATION, t->n_ops);
        ref(t, *out);
        o->out_count = 1;
    }
    m->fwd[m->n_fwd++] = t->n_ops;
    return t->n_ops++;
}

static mt_trace *make_model(int32_t L, int attn) {
    model m = {0};
    mt_trace *t = m.t = calloc(1, sizeof *t);
    t->ops = calloc((size_t)(10 * L + 4), sizeof *t->ops);
    t->tensors = calloc((size_t)(6 * L + 4), sizeof *t->tensors);
    t->trefs = calloc((size_t)(20 * L + 8), sizeof *t->trefs);
    t->layers = calloc((size_t)L, sizeof *t->layers);
    t->n_layers = L;
    t->batch_size = 32;
    t->format = TRACE_FORMAT_KINETO_ET;
    t->has_device_time = 1;
    int32_t a = tensor(t, A, TRACE_ROLE_INPUT, 0);
    for (int32_t l = 0; l < L; l++) {
        int32_t w = tensor(t, W, TRACE_ROLE_WEIGHT, t->n_ops), h, s, p, in[2] = {a, w};
        t->param_bytes += W;
        t->layers[l].name = "layer";
        t->layers[l].param_bytes = W;
        fwd_op(&m, "aten::linear", l, FWD_NS, in, 2, attn ? H : A, &h);
        a = h;
        if (attn) {
            int32_t qk[2] = {h, h};
            fwd_op(&m, "aten::matmul", l, ATT_NS, qk, 2, S, &s);
            fwd_op(&m, "aten::softmax", l, ATT_NS, &s, 1, S, &p);
            int32_t pv[2] = {p, h};
            fwd_op(&m, "aten::matmul", l, ATT_NS, pv, 2, A, &a);
        }
    }
    int32_t none;
    fwd_op(&m, "aten::mse_loss", L - 1, LOSS_NS, &a, 1, 0, &none);
    for (int32_t k = m.n_fwd - 1; k >= 0; k--) {
        trace_op *f = &t->ops[m.fwd[k]], *o = &t->ops[t->n_ops];
        memset(o, 0, sizeof *o);
        o->id = t->n_ops;
        o->name = o->kind = "autograd::engine::evaluate_function: AddmmBackward0";
        o->phase = TRACE_PHASE_BACKWARD;
        o->layer = f->layer;
        o->dev_ns = BWD_NS;
        o->seq = o->et_node = -1;
        o->fwd_op = m.fwd[k];
        o->in_first = o->out_first = t->n_trefs;
        t->n_ops++;
    }
    mt_opclass_trace(t);
    return t;
}

typedef fix_run_out run_out;

/* On a free network (switch of P GPUs), so only the schedule shapes the step. */
static run_out run(const mt_trace *t, mt_plan pl) {
    char spec[32];
    snprintf(spec, sizeof spec, "switch:%d", pl.gpus);
    return fix_run(t, pl, spec, 1e15, 0);
}

static void run_free(run_out *o) { fix_run_free(o); }

static mt_plan pp_plan(int32_t P, int32_t M, int32_t V) {
    mt_plan p;
    mt_plan_init(&p);
    p.gpus = p.pp = P;
    p.micro_batches = M;
    p.vpp = V;
    return p;
}

static double sec(mt_time_ps ps) { return (double)ps / 1e12; }

/* The loss op and its backward take no time: P x V chunks of exactly equal time. */
static void zero_loss(mt_trace *t) {
    int32_t loss = t->n_ops / 2 - 1; /* the last forward op; backward ops mirror the forward ones */
    for (int32_t i = 0; i < t->n_ops; i++)
        if (i == loss || t->ops[i].fwd_op == loss) t->ops[i].dev_ns = 0;
}

static void test_interleaved_bubble(void **state) {
    (void)state;
    mt_trace *t = make_model(8, 0);
    zero_loss(t);
    static const int32_t cases[][3] = {{2, 4, 2}, {2, 8, 2}, {4, 8, 2}, {2, 4, 4}, {4, 4, 2}, {2, 2, 2}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int32_t P = cases[k][0], M = cases[k][1], V = cases[k][2];
        run_out il = run(t, pp_plan(P, M, V)), one = run(t, pp_plan(P, M, 1));
        /* F + B of a stage per micro-batch: 8 / P layers at batch 32 / M; ideal step M (F + B) */
        double fb = (8.0 / P) * (FWD_NS + BWD_NS) / M * 1e-9, ideal = M * fb;
        double step = sec(il.res->step_ps), step1 = sec(one.res->step_ps);
        /* bubble (P - 1) / (V M) of the ideal, against 1F1B's (P - 1) / M, to 1e-5 (0-byte sends: ns) */
        assert_true(fabs((step - ideal) / ideal - (double)(P - 1) / (V * M)) < 1e-5);
        assert_true(fabs((step1 - ideal) / ideal - (double)(P - 1) / M) < 1e-5);
        assert_true(step < step1);
        for (int32_t r = 0; r < P; r++) {
            const mt_gpu_stats *g = &il.res->gpus[r];
            int32_t warm = 2 * (P - g->stage - 1) + (V - 1) * P;
            assert_int_equal(g->peak_live_mb, warm < M * V ? warm + 1 : M * V);
            assert_int_equal(g->compute_ps + g->exposed_ps + g->peer_wait_ps + g->bubble_ps + g->idle_ps, il.res->step_ps);
        }
        /* every chunk but the last sends forward, every chunk but the first backward */
        assert_int_equal(il.res->sends, 2 * (P * V - 1) * M);
        run_free(&il);
        run_free(&one);
    }
    mt_trace_free(t);
}

/* 8 equal layers, P = 2, V = 2: chunks of two layers, chunk c on stage c mod 2; a heavy last layer
 * (half the model) alone in the last chunk, the stages' loads kept even by the other chunks. */
static void test_chunk_partition(void **state) {
    (void)state;
    mt_trace *t = make_model(8, 0);
    zero_loss(t);
    run_out o = run(t, pp_plan(2, 4, 2));
    assert_int_equal(o.prog->stages[0].layer_first, 0);
    assert_int_equal(o.prog->stages[0].layer_last, 5);
    assert_int_equal(o.prog->stages[1].layer_first, 2);
    assert_int_equal(o.prog->stages[1].layer_last, 7);
    for (int32_t s = 0; s < 2; s++) assert_int_equal(o.prog->stages[s].compute_ps, o.prog->stages[0].compute_ps);
    run_free(&o);
    for (int32_t i = 0; i < t->n_ops; i++) /* layer 7 weighs as layers 0..6 together */
        if (t->ops[i].layer == 7) t->ops[i].dev_ns *= 7;
    mt_plan tb = pp_plan(2, 4, 2);
    tb.pp_cut = MT_PPCUT_TIME; /* the time-balanced partitioner (the 8 alike layers are blocks: auto cuts there) */
    o = run(t, tb);
    /* the last chunk is layer 7 alone (7 units); chunk 1 gets one layer, chunks 0 and 2 the other
     * six: stages of 6 and 8 units, the most even a cut into 4 non-empty chunks allows (a cut of
     * chunks as equal as possible would give 2 + 2 against 3 + 7) */
    double a = (double)o.prog->stages[0].compute_ps, b = (double)o.prog->stages[1].compute_ps;
    assert_true(fabs(a / b - 6.0 / 8.0) < 1e-9);
    run_free(&o);
    mt_trace_free(t);
}

static run_out run_one(const mt_trace *t, mt_recompute rc) {
    mt_plan p;
    mt_plan_init(&p);
    p.gpus = 1;
    p.recompute = rc;
    return run(t, p);
}

static void test_recompute_time_and_memory(void **state) {
    (void)state;
    const int32_t L = 4;
    mt_trace *t = make_model(L, 1);
    run_out none = run_one(t, MT_RECOMPUTE_NONE), sel = run_one(t, MT_RECOMPUTE_SELECTIVE),
            full = run_one(t, MT_RECOMPUTE_FULL);
    /* time: exactly the recomputed forward (batch factor 1, one micro-batch) */
    int64_t all_fwd_ps = ((int64_t)L * (FWD_NS + 3 * ATT_NS) + LOSS_NS) * 1000, core_ps = (int64_t)L * 3 * ATT_NS * 1000;
    assert_int_equal(full.res->step_ps - none.res->step_ps, all_fwd_ps);
    assert_int_equal(sel.res->step_ps - none.res->step_ps, core_ps);
    assert_int_equal(full.prog->stages[0].recompute_ps, all_fwd_ps);
    assert_int_equal(sel.prog->stages[0].recompute_ps, core_ps);
    assert_int_equal(none.prog->stages[0].recompute_ps, 0);
    /* memory: none keeps every activation; selective drops scores and probabilities (2S a layer)
     * and holds one core's while it runs backward; full keeps what crosses layers, (L-1) x A, plus
     * the largest layer's own (the last: H + 2S + A) */
    const mt_gpu_stats *gn = &none.res->gpus[0], *gs = &sel.res->gpus[0], *gf = &full.res->gpus[0];
    assert_true(fabs(gn->mem_activations_bytes - L * (H + 2 * S + A)) < 1);
    assert_true(fabs(gs->mem_activations_bytes - (L * (H + A) + 2 * S)) < 1);
    assert_true(fabs(gf->mem_activations_bytes - ((L - 1) * A + H + 2 * S + A)) < 1);
    assert_true(fabs(gf->peak_mem_bytes - (gf->mem_params_bytes + gf->mem_grads_bytes + gf->mem_optimizer_bytes +
                                           gf->mem_activations_bytes)) < 1);
    run_free(&none);
    run_free(&sel);
    run_free(&full);
    mt_trace_free(t);
}

/* Under a pipeline every backward micro-batch re-runs its stage's forward. */
static void test_recompute_pipeline(void **state) {
    (void)state;
    mt_trace *t = make_model(4, 1);
    mt_plan p = pp_plan(2, 4, 1);
    run_out none = run(t, p);
    p.recompute = MT_RECOMPUTE_FULL;
    run_out full = run(t, p);
    for (int32_t s = 0; s < 2; s++) { /* 4 micro-batches, each the stage's forward at batch 8 */
        const mt_stage_program *a = &none.prog->stages[s], *b = &full.prog->stages[s];
        int64_t fwd = 0;
        for (int32_t i = 0; i < a->n_items; i++) /* forward items of the plain program */
            if (t->ops[a->items[i].op].phase == TRACE_PHASE_FORWARD) fwd += a->items[i].dur_ps;
        assert_int_equal(b->recompute_ps, fwd);
        assert_int_equal(b->compute_ps - a->compute_ps, fwd);
    }
    assert_true(full.res->step_ps > none.res->step_ps);
    run_free(&none);
    run_free(&full);
    mt_trace_free(t);
}

static void refused(const mt_trace *t, mt_plan p, const char *want) {
    mt_error err = {0};
    assert_int_equal(mt_plan_resolve(&p, t, &err), MT_EINVAL);
    if (!strstr(err.msg, want)) fail_msg("'%s' lacks '%s'", err.msg, want);
}

static void test_refusals(void **state) {
    (void)state;
    mt_trace *t = make_model(4, 0);
    mt_plan p = pp_plan(1, 0, 2);
    p.gpus = 2;
    p.dp = 2;
    refused(t, p, "--vpp 2 interleaves pipeline stages: it needs --pp 2 or more");
    p = pp_plan(2, 4, 2);
    p.schedule = MT_PP_GPIPE;
    refused(t, p, "--vpp 2 is interleaved 1F1B: it does not go with --schedule gpipe");
    refused(t, pp_plan(2, 2, 4), "--vpp 4: 2 stages x 4 chunks = 8 model chunks need at least as many layers");
    mt_trace_free(t);
    t = make_model(8, 0);
    refused(t, pp_plan(4, 2, 2), "--vpp 2: --micro-batches 2 is not a multiple of --pp 4");
    refused(t, pp_plan(2, 1, 2), "--micro-batches 1 is not a multiple of --pp 2");
    mt_plan q = pp_plan(2, 0, 2); /* default micro-batches: a multiple of P */
    mt_error err = {0};
    assert_int_equal(mt_plan_resolve(&q, t, &err), MT_OK);
    assert_int_equal(q.micro_batches % 2, 0);
    mt_trace_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interleaved_bubble),
        cmocka_unit_test(test_chunk_partition),
        cmocka_unit_test(test_recompute_time_and_memory),
        cmocka_unit_test(test_recompute_pipeline),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

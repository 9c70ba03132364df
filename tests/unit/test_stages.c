/* Unit tests for the pipeline partitioner (extrapolate/stages.h) on traces small enough to cut by
 * hand: four units in a chain, a forward and a backward op of 10 ns each per unit (+1 ns per op,
 * as every unit weighs), one optimizer op of 60 ns.
 *  - the optimizer counts: unit 3 holds 97 of the 100 weight bytes, so it runs 58.2 of the
 *    optimizer's 60 ns, the others 0.6 each: costs 22.6, 22.6, 22.6, 80.2; two stages cut after
 *    unit 2 (67.8 | 80.2), not after unit 1 as forward + backward alone would (45.2 | 102.8);
 *  - a residual block is cut only when cutting elsewhere would be slower: unit 2 adds unit 0's
 *    output to unit 1's, so after unit 1 two tensors cross, after units 0 and 2 one. Units weigh
 *    22 + 15 (optimizer) = 37 each. Two stages: the time-balanced cut after unit 1 (74 | 74) beats
 *    both block boundaries (37 | 111); three stages: the slowest stage is 74 however the units are
 *    cut, and the cut at both block boundaries (37 | 74 | 37) is as fast, so it is chosen over
 *    (74 | 37 | 37), which cuts inside the block.
 *  - on the shipped traces (units: the trace's layers) and P = 2..6 stages, the chosen cut's slowest
 *    stage is never slower than the time-balanced cut's: the exact minimum over every contiguous
 *    cut (dynamic programming, O(P U^2)) of the slowest stage, with the unit costs stages.h
 *    documents, computed here;
 *  - with sends weighed (the link's cost per byte, as simrun passes it), the simulated step of the
 *    chosen cut on switch:P links of that bandwidth is never slower than the time-balanced cut's
 *    (sends not weighed): ResNet-18 pp2 / pp4 and gpt-tiny pp2, links of 0.1, 1 and 25 GB/s;
 *  - block cuts (mt_stages_cut_blocks) on 15 layers: 2 before 6 blocks of 2 layers, 1 after: --pp 3
 *    gives blocks 2+2+2 (layers 0-5, 6-9, 10-14: the embedding's on the first, the head's on the
 *    last); --pp 2 --vpp 3 one block per chunk; --pp-layers 1,2,3 those counts; 6 blocks over 4
 *    stages refused as Megatron refuses, a list not adding up or not splitting over --vpp refused;
 *  - a cut's trailing weight-free ops (mt_stages_settle_cuts): an RMSNorm's pow/mean/rsqrt go with
 *    the next layer (one tensor crosses, not two), a CNN's pooling stays (25 B cross, not 100); RoPE's
 *    positions and cos/sin are made from no batch data (mt_stages_batch_free), an embedding is not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/stages.h"
#include "runfix.h"

enum { UNITS = 4, OPS = 2 * UNITS + 1 };

typedef struct fake {
    mt_trace t;
    trace_op ops[OPS];
    trace_tensor tensors[2 * UNITS];
    trace_tref trefs[64];
    int32_t unit[OPS];
} fake;

static void use(fake *f, int32_t op, int32_t tensor, int out) {
    trace_tref *r = &f->t.trefs[f->t.n_trefs++];
    memset(r, 0, sizeof *r);
    r->tensor = tensor;
    trace_op *o = &f->ops[op];
    if (out) o->out_count++;
    else o->in_count++;
}

/* Tensors: weight u (bytes w[u]) and activation u made by forward op u. Forward op u reads its
 * weight and the activations listed in reads[u] (-1 ends), then makes activation u. */
static void build(fake *f, const double *w, const int32_t reads[UNITS][3]) {
    memset(f, 0, sizeof *f);
    f->t.ops = f->ops;
    f->t.tensors = f->tensors;
    f->t.trefs = f->trefs;
    f->t.n_ops = OPS;
    f->t.n_tensors = 2 * UNITS;
    for (int32_t u = 0; u < UNITS; u++) {
        f->tensors[u] = (trace_tensor){.numel = 1, .itemsize = 1, .first_op = u, .bytes = w[u], .role = TRACE_ROLE_WEIGHT};
        f->tensors[UNITS + u] = (trace_tensor){.numel = 1, .itemsize = 4, .first_op = u, .bytes = 4,
                                               .role = TRACE_ROLE_ACTIVATION};
    }
    for (int32_t i = 0; i < OPS; i++) {
        trace_op *o = &f->ops[i];
        o->id = i;
        o->phase = i < UNITS ? TRACE_PHASE_FORWARD : i < 2 * UNITS ? TRACE_PHASE_BACKWARD : TRACE_PHASE_OPTIMIZER;
        o->dev_ns = i < 2 * UNITS ? 10 : 60;
        o->in_first = f->t.n_trefs;
        f->unit[i] = i < UNITS ? i : i < 2 * UNITS ? 2 * UNITS - 1 - i : -1;
        if (i < UNITS) {
            use(f, i, i, 0);
            for (int k = 0; k < 3 && reads[i][k] >= 0; k++) use(f, i, UNITS + reads[i][k], 0);
        }
        o->out_first = f->t.n_trefs;
        if (i < UNITS) use(f, i, UNITS + i, 1);
    }
}

static void optimizer_time_counts(void **state) {
    (void)state;
    static fake f;
    const double w[UNITS] = {1, 1, 1, 97};
    const int32_t reads[UNITS][3] = {{-1}, {0, -1}, {1, -1}, {2, -1}};
    build(&f, w, reads);
    int32_t stage[UNITS];
    mt_stage_cut info;
    assert_int_equal(mt_stages_cut(&f.t, f.unit, UNITS, 2, stage, &info), MT_OK);
    assert_int_equal(info.min_crossing, 1);
    assert_int_equal(info.clean_points, 3);
    const int32_t want[UNITS] = {0, 0, 0, 1};
    assert_memory_equal(stage, want, sizeof want);
}

static void a_residual_block_is_cut_only_when_faster(void **state) {
    (void)state;
    static fake f;
    const double w[UNITS] = {1, 1, 1, 1};
    const int32_t reads[UNITS][3] = {{-1}, {0, -1}, {1, 0, -1}, {2, -1}};
    build(&f, w, reads);
    int32_t stage[UNITS];
    mt_stage_cut info;
    /* two stages: the even cut inside the block (74 | 74), not a block boundary (37 | 111) */
    assert_int_equal(mt_stages_cut(&f.t, f.unit, UNITS, 2, stage, &info), MT_OK);
    assert_int_equal(info.min_crossing, 1);
    assert_int_equal(info.clean_points, 2); /* after units 0 and 2 */
    assert_false(info.clean_only);
    const int32_t even[UNITS] = {0, 0, 1, 1};
    assert_memory_equal(stage, even, sizeof even);
    /* three stages: as fast at both block boundaries as anywhere, so there */
    assert_int_equal(mt_stages_cut(&f.t, f.unit, UNITS, 3, stage, &info), MT_OK);
    assert_true(info.clean_only);
    const int32_t want[UNITS] = {0, 1, 1, 2};
    assert_memory_equal(stage, want, sizeof want);
    /* four need three: a stage may then end anywhere */
    assert_int_equal(mt_stages_cut(&f.t, f.unit, UNITS, 4, stage, &info), MT_OK);
    assert_false(info.clean_only);
    const int32_t each[UNITS] = {0, 1, 2, 3};
    assert_memory_equal(stage, each, sizeof each);
}

/* The unit costs stages.h documents: forward and backward device time (+1 ns per op) and the
 * optimizer's work (optimizer ops, and parameter-touching ops outside forward and backward after the
 * first forward op) shared by the weight bytes each unit's forward ops read first. */
static void unit_costs(const mt_trace *t, const int32_t *unit, int32_t U, double *cost) {
    double *wb = calloc((size_t)U, sizeof *wb), all = 0, opt = 0;
    unsigned char *seen = calloc((size_t)t->n_tensors + 1, 1);
    assert_non_null(wb);
    assert_non_null(seen);
    int fwd_seen = 0;
    for (int32_t u = 0; u < U; u++) cost[u] = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        fwd_seen |= o->phase == TRACE_PHASE_FORWARD;
        if (trace_op_is_comm(o)) continue;
        if (unit[i] >= 0) cost[unit[i]] += (double)o->dev_ns + 1;
        int params = 0;
        for (int32_t j = 0; j < o->in_count + o->out_count; j++) {
            int32_t x = t->trefs[o->in_first + j].tensor;
            trace_role r = x >= 0 ? t->tensors[x].role : TRACE_ROLE_OTHER;
            params |= r == TRACE_ROLE_WEIGHT || r == TRACE_ROLE_GRADIENT || r == TRACE_ROLE_OPTSTATE;
        }
        if (o->phase == TRACE_PHASE_OPTIMIZER || (o->phase == TRACE_PHASE_OTHER && fwd_seen && params)) opt += (double)o->dev_ns;
        if (o->phase != TRACE_PHASE_FORWARD || unit[i] < 0) continue;
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t x = t->trefs[o->in_first + j].tensor;
            if (x < 0 || seen[x] || t->tensors[x].role != TRACE_ROLE_WEIGHT) continue;
            seen[x] = 1;
            wb[unit[i]] += t->tensors[x].bytes;
            all += t->tensors[x].bytes;
        }
    }
    for (int32_t u = 0; all > 0 && u < U; u++) cost[u] += opt * wb[u] / all;
    free(wb);
    free(seen);
}

/* The smallest slowest stage over every cut of U units into P contiguous non-empty stages. */
static double best_cut(const double *cost, int32_t U, int32_t P) {
    double *f = malloc((size_t)(P + 1) * (size_t)(U + 1) * sizeof *f), *pre = malloc((size_t)(U + 1) * sizeof *pre);
    assert_non_null(f);
    assert_non_null(pre);
    pre[0] = 0;
    for (int32_t u = 0; u < U; u++) pre[u + 1] = pre[u] + cost[u];
#define F(k, j) f[(size_t)(k) * (size_t)(U + 1) + (size_t)(j)]
    for (int32_t k = 0; k <= P; k++)
        for (int32_t j = 0; j <= U; j++) F(k, j) = k == 0 && j == 0 ? 0 : 1e300;
    for (int32_t k = 1; k <= P; k++)
        for (int32_t j = k; j <= U; j++)
            for (int32_t i = k - 1; i < j; i++) {
                double v = F(k - 1, i) > pre[j] - pre[i] ? F(k - 1, i) : pre[j] - pre[i];
                if (v < F(k, j)) F(k, j) = v;
            }
    double best = F(P, U);
#undef F
    free(f);
    free(pre);
    return best;
}

static void shipped_traces_never_slower_than_time_balanced(void **state) {
    (void)state;
    static const char *names[] = {"cpu-resnet18-b8", "cpu-gpt-tiny-b8", "cpu-resmlp-b64", "cpu-moe-tiny-b8",
                                  "cpu-dlrm-tiny-b8"};
    const char *fx = getenv("MT_FIXTURES");
    for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/../../traces/%s", fx ? fx : "tests/fixtures", names[n]);
        const char *paths[1] = {path};
        mt_trace *t = NULL;
        mt_error err = {0};
        assert_int_equal(mt_trace_load(paths, 1, NULL, &t, &err), MT_OK);
        int32_t U = t->n_layers, *unit = malloc((size_t)t->n_ops * sizeof *unit), *stage = malloc((size_t)U * sizeof *stage);
        double *cost = malloc((size_t)U * sizeof *cost);
        assert_true(U >= 6 && unit && stage && cost);
        for (int32_t i = 0; i < t->n_ops; i++) unit[i] = t->ops[i].layer < U ? t->ops[i].layer : -1;
        unit_costs(t, unit, U, cost);
        for (int32_t P = 2; P <= 6; P++) {
            mt_stage_cut info;
            assert_int_equal(mt_stages_cut(t, unit, U, P, stage, &info), MT_OK);
            double acc[8] = {0}, worst = 0;
            for (int32_t u = 0; u < U; u++) {
                assert_true(stage[u] >= 0 && stage[u] < P && (u == 0 || stage[u] - stage[u - 1] <= 1));
                acc[stage[u]] += cost[u];
            }
            for (int32_t s = 0; s < P; s++) worst = acc[s] > worst ? acc[s] : worst;
            double best = best_cut(cost, U, P);
            if (worst > best + 1) fail_msg("%s, %d stages: slowest stage %.0f ns, the time-balanced cut's %.0f ns", names[n], P, worst, best);
        }
        free(unit);
        free(stage);
        free(cost);
        mt_trace_free(t);
    }
}

static void sends_weighed_never_slower_in_simulation(void **state) {
    (void)state;
    static const struct {
        const char *name;
        int32_t P;
    } cases[] = {{"cpu-resnet18-b8", 2}, {"cpu-resnet18-b8", 4}, {"cpu-gpt-tiny-b8", 2}};
    static const double bws[] = {100e6, 1e9, 25e9};
    const char *fx = getenv("MT_FIXTURES");
    int moved = 0;
    for (size_t n = 0; n < sizeof cases / sizeof *cases; n++) {
        char path[1024], spec[32];
        snprintf(path, sizeof path, "%s/../../traces/%s", fx ? fx : "tests/fixtures", cases[n].name);
        snprintf(spec, sizeof spec, "switch:%d", (int)cases[n].P);
        const char *paths[1] = {path};
        mt_trace *t = NULL;
        mt_error err = {0};
        assert_int_equal(mt_trace_load(paths, 1, NULL, &t, &err), MT_OK);
        for (size_t k = 0; k < sizeof bws / sizeof *bws; k++) {
            mt_plan pl;
            mt_plan_init(&pl);
            pl.gpus = pl.pp = cases[n].P;
            mt_program_opts timed = {0}, sends = {0};
            sends.pp_send_ns_per_byte = 1e9 / bws[k];
            fix_run_out a = fix_run_opts(t, pl, &timed, spec, bws[k], 1000), b = fix_run_opts(t, pl, &sends, spec, bws[k], 1000);
            for (int32_t s = 0; s < cases[n].P; s++)
                moved += a.prog->stages[s].layer_last != b.prog->stages[s].layer_last;
            print_message("%s pp%d at %.1f GB/s: step %.3f ms (last layers %d, %d), time-balanced %.3f ms (%d, %d)\n",
                          cases[n].name, (int)cases[n].P, bws[k] / 1e9, (double)b.res->step_ps / 1e9,
                          (int)b.prog->stages[0].layer_last, (int)b.prog->stages[1].layer_last,
                          (double)a.res->step_ps / 1e9, (int)a.prog->stages[0].layer_last,
                          (int)a.prog->stages[1].layer_last);
            if (b.res->step_ps > a.res->step_ps)
                fail_msg("%s pp%d at %.1f GB/s: step %.3f ms with sends weighed, %.3f ms time-balanced", cases[n].name,
                         (int)cases[n].P, bws[k] / 1e9, (double)b.res->step_ps / 1e9, (double)a.res->step_ps / 1e9);
            fix_run_free(&a);
            fix_run_free(&b);
        }
        mt_trace_free(t);
    }
    assert_true(moved > 0); /* some link is slow enough to move a cut */
}

/* 15 layers: L0-L1 before, 6 blocks of 2 layers (L2-L13), L14 after. */
static void block_cuts(void **state) {
    (void)state;
    mt_trace t;
    memset(&t, 0, sizeof t);
    t.n_layers = 15;
    mt_blocks bl = {.found = 1, .first = 2, .layers = 2, .count = 6};
    int32_t chunk[15];
    static mt_stage_cut c;
    mt_error err = {MT_OK, ""};
    char text[64];
    assert_int_equal(mt_stages_cut_blocks(&t, &bl, 15, 3, 1, NULL, 0, chunk, &c, &err), MT_OK);
    const int32_t want3[15] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2};
    assert_memory_equal(chunk, want3, sizeof want3);
    assert_int_equal(c.kind, MT_CUT_BLOCKS);
    assert_string_equal(mt_stages_cut_describe(&c, text, sizeof text), "blocks 2+2+2");
    assert_int_equal(mt_stages_cut_blocks(&t, &bl, 15, 2, 3, NULL, 0, chunk, &c, &err), MT_OK);
    const int32_t want23[15] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5};
    assert_memory_equal(chunk, want23, sizeof want23);
    const int32_t per[3] = {1, 2, 3};
    assert_int_equal(mt_stages_cut_blocks(&t, &bl, 15, 3, 1, per, 3, chunk, &c, &err), MT_OK);
    const int32_t want123[15] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2};
    assert_memory_equal(chunk, want123, sizeof want123);
    assert_string_equal(mt_stages_cut_describe(&c, text, sizeof text), "blocks 1+2+3 (--pp-layers)");
    assert_int_equal(mt_stages_cut_blocks(&t, &bl, 15, 4, 1, NULL, 0, chunk, &c, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "Megatron refuses"));
    const int32_t short_list[3] = {1, 2, 2};
    assert_int_equal(mt_stages_cut_blocks(&t, &bl, 15, 3, 1, short_list, 3, chunk, &c, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "adds up to 5 blocks; the trace has 6"));
    const int32_t odd[2] = {3, 3};
    assert_int_equal(mt_stages_cut_blocks(&t, &bl, 15, 2, 2, odd, 2, chunk, &c, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--vpp 2"));
    mt_stage_cut many = {.kind = MT_CUT_BLOCKS, .n_chunks = 16};
    for (int k = 0; k < 16; k++) many.blocks[k] = 2;
    assert_string_equal(mt_stages_cut_describe(&many, text, sizeof text), "blocks 16 x 2");
}

/* A small trace of forward ops for mt_stages_settle_cuts: op i in layer layer[i] reads the tensors
 * in[i] and makes out[i] (-1 ends / none); tensor x of bytes[x], a weight when bytes[x] < 0 (|bytes|). */
enum { SOPS = 6, STENS = 10 };
typedef struct sfake {
    mt_trace t;
    trace_op ops[SOPS];
    trace_tensor tensors[STENS];
    trace_tref trefs[4 * SOPS];
    int64_t dims[2];
    int32_t unit[SOPS];
} sfake;

static void sbuild(sfake *f, int32_t n, const int32_t *layer, const int32_t in[][3], const int32_t *out, const double *bytes) {
    memset(f, 0, sizeof *f);
    f->t.ops = f->ops;
    f->t.tensors = f->tensors;
    f->t.trefs = f->trefs;
    f->t.dims = f->dims;
    f->t.n_ops = n;
    f->t.n_tensors = STENS;
    f->t.n_layers = 2;
    for (int32_t x = 0; x < STENS; x++)
        f->tensors[x] = (trace_tensor){.first_op = -1, .bytes = bytes[x] < 0 ? -bytes[x] : bytes[x],
                                       .role = bytes[x] < 0 ? TRACE_ROLE_WEIGHT : TRACE_ROLE_ACTIVATION};
    for (int32_t i = 0; i < n; i++) {
        trace_op *o = &f->ops[i];
        o->phase = TRACE_PHASE_FORWARD;
        o->layer = f->unit[i] = layer[i];
        o->in_first = f->t.n_trefs;
        for (int k = 0; k < 3 && in[i][k] >= 0; k++) {
            f->trefs[f->t.n_trefs++] = (trace_tref){.tensor = in[i][k]};
            o->in_count++;
            if (f->tensors[in[i][k]].first_op < 0) f->tensors[in[i][k]].first_op = i;
        }
        o->out_first = f->t.n_trefs;
        if (out[i] >= 0) {
            f->trefs[f->t.n_trefs++] = (trace_tref){.tensor = out[i]};
            o->out_count = 1;
            if (f->tensors[out[i]].first_op < 0) f->tensors[out[i]].first_op = i;
        }
    }
}

/* RMSNorm: layer 0 = the MLP's down linear (weight 0) then the residual add (x: tensor 3) and the
 * next norm's weight-free part (tensor 4, the normalised copy); layer 1 = the norm's weight mul
 * (weight 1) and the next residual add, reading x. Cut between the layers: the norm part moves to
 * layer 1 and x alone crosses. A CNN: conv (weight 0, 100 B out), pool (25 B) in layer 0, a linear
 * (weight 1) in layer 1: the pool stays (25 B cross, not 100). Batch-free tensors: an arange
 * (no input) and its cos, not the embedding of a batch input. */
static void cut_trailing_ops(void **state) {
    (void)state;
    static sfake f;
    const int32_t chunk[2] = {0, 1};
    /* tensors: 0, 1 weights; 2 the linear's out; 3 x; 4 normalised; 5 mul out; 6 block out; 7 input */
    const double rms_bytes[STENS] = {-8, -8, 64, 64, 64, 64, 64, 64, 0, 0};
    const int32_t rms_layer[5] = {0, 0, 0, 1, 1};
    const int32_t rms_in[5][3] = {{7, 0, -1}, {2, 7, -1}, {3, -1}, {4, 1, -1}, {5, 3, -1}};
    const int32_t rms_out[5] = {2, 3, 4, 5, 6};
    sbuild(&f, 5, rms_layer, rms_in, rms_out, rms_bytes);
    f.tensors[7].role = TRACE_ROLE_INPUT;
    assert_int_equal(mt_stages_settle_cuts(&f.t, f.unit, chunk, 2), MT_OK);
    const int32_t rms_want[5] = {0, 0, 1, 1, 1};
    assert_memory_equal(f.unit, rms_want, sizeof rms_want);
    const double cnn_bytes[STENS] = {-8, -8, 100, 25, 10, 0, 0, 64, 0, 0};
    const int32_t cnn_layer[3] = {0, 0, 1};
    const int32_t cnn_in[3][3] = {{7, 0, -1}, {2, -1}, {3, 1, -1}};
    const int32_t cnn_out[3] = {2, 3, 4};
    sbuild(&f, 3, cnn_layer, cnn_in, cnn_out, cnn_bytes);
    assert_int_equal(mt_stages_settle_cuts(&f.t, f.unit, chunk, 2), MT_OK);
    const int32_t cnn_want[3] = {0, 0, 1};
    assert_memory_equal(f.unit, cnn_want, sizeof cnn_want);
    /* 0: arange -> 2; 1: cos(2) -> 3; 2: embedding(input 7 [4, 8], weight 0) -> 4; 3: mul(4, 3) -> 5 */
    const int32_t bf_layer[4] = {0, 0, 0, 1};
    const int32_t bf_in[4][3] = {{-1}, {2, -1}, {7, 0, -1}, {4, 3, -1}};
    const int32_t bf_out[4] = {2, 3, 4, 5};
    sbuild(&f, 4, bf_layer, bf_in, bf_out, rms_bytes);
    f.tensors[7].role = TRACE_ROLE_INPUT;
    f.t.batch_size = 4;
    f.dims[0] = 4;
    f.dims[1] = 8;
    f.trefs[f.ops[2].in_first].ndim = 2;
    unsigned char *bf = mt_stages_batch_free(&f.t);
    assert_non_null(bf);
    assert_true(bf[2] && bf[3]);
    assert_false(bf[4] || bf[5]);
    free(bf);
    f.dims[0] = 64; /* a [64, 8] buffer read before any op makes it: no batch in it */
    bf = mt_stages_batch_free(&f.t);
    assert_non_null(bf);
    assert_false(bf[4]); /* read with a weight: not made again on another stage */
    free(bf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(optimizer_time_counts),
        cmocka_unit_test(block_cuts),
        cmocka_unit_test(cut_trailing_ops),
        cmocka_unit_test(a_residual_block_is_cut_only_when_faster),
        cmocka_unit_test(shipped_traces_never_slower_than_time_balanced),
        cmocka_unit_test(sends_weighed_never_slower_in_simulation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for the pipeline partitioner (extrapolate/stages.h) on traces small enough to cut by
 * hand: four units in a chain, a forward and a backward op of 10 ns each per unit (+1 ns per op,
 * as every unit weighs), one optimizer op of 60 ns.
 *  - the optimizer counts: unit 3 holds 97 of the 100 weight bytes, so it runs 58.2 of the
 *    optimizer's 60 ns, the others 0.6 each: costs 22.6, 22.6, 22.6, 80.2; two stages cut after
 *    unit 2 (67.8 | 80.2), not after unit 1 as forward + backward alone would (45.2 | 102.8);
 *  - a residual block is not cut: unit 2 adds unit 0's output to unit 1's, so after unit 1 two
 *    tensors cross, after units 0 and 2 one; two stages of equal units cut at a block boundary,
 *    never between units 1 and 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "extrapolate/stages.h"

enum { UNITS = 4, OPS = 2 * UNITS + 1 };

typedef struct fake {
    trace t;
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

static void a_residual_block_is_not_cut(void **state) {
    (void)state;
    static fake f;
    const double w[UNITS] = {1, 1, 1, 1};
    const int32_t reads[UNITS][3] = {{-1}, {0, -1}, {1, 0, -1}, {2, -1}};
    build(&f, w, reads);
    int32_t stage[UNITS];
    mt_stage_cut info;
    assert_int_equal(mt_stages_cut(&f.t, f.unit, UNITS, 2, stage, &info), MT_OK);
    assert_int_equal(info.min_crossing, 1);
    assert_int_equal(info.clean_points, 2); /* after units 0 and 2 */
    assert_true(info.clean_only);
    assert_int_equal(stage[1], stage[2]);
    assert_int_equal(stage[0], 0);
    assert_int_equal(stage[3], 1);
    /* three stages need two cuts: both clean points */
    assert_int_equal(mt_stages_cut(&f.t, f.unit, UNITS, 3, stage, &info), MT_OK);
    const int32_t want[UNITS] = {0, 1, 1, 2};
    assert_memory_equal(stage, want, sizeof want);
    /* four need three: a stage may then end anywhere */
    assert_int_equal(mt_stages_cut(&f.t, f.unit, UNITS, 4, stage, &info), MT_OK);
    assert_false(info.clean_only);
    const int32_t each[UNITS] = {0, 1, 2, 3};
    assert_memory_equal(stage, each, sizeof each);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(optimizer_time_counts),
        cmocka_unit_test(a_residual_block_is_not_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

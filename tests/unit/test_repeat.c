/* Unit tests for --blocks N (extrapolate/repeat.h) on the shipped gpt-tiny trace (4 blocks of 8
 * layers, hidden h = 256, so a block holds 12 h^2 + 13 h parameters):
 *  - N = 4 (the traced count) gives the trace back: ops, times, tensors, totals;
 *  - N = 10: 6 copies; the result keeps trace.h's invariants (ids are indices, ops sorted by host
 *    start, tensor uses and first ops in range, saved activations sorted by op and made by forward
 *    ops, kernels none); 6 x 8 more layers, each copied layer as long as the traced layer it repeats
 *    (copy c repeats block c mod 4); parameters + 6 (12 h^2 + 13 h), gradients too, optimizer state
 *    (Adam: two per parameter and a step counter per parameter tensor, 16 a block) + 6 (2 (12 h^2 +
 *    13 h) + 16) x 4 B; the step's host span grows by the copies' host slots, at least their
 *    operator time;
 *  - N = 1: parameters - 3 (12 h^2 + 13 h), 3 x 8 layers fewer, every reference in range;
 *  - refused (MT_EINVAL): N = 0, N above MT_REPEAT_MAX_BLOCKS, a trace with no repeating block
 *    (dlrm-tiny). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/blocks.h"
#include "extrapolate/repeat.h"

static mt_trace *load(const char *name) {
    const char *fx = getenv("MT_FIXTURES");
    char path[1024];
    snprintf(path, sizeof path, "%s/../../traces/%s", fx ? fx : "tests/fixtures", name);
    const char *paths[1] = {path};
    mt_trace *t = NULL;
    mt_error err = {0};
    assert_int_equal(mt_trace_load(paths, 1, NULL, &t, &err), MT_OK);
    return t;
}

static const int64_t BLOCK_PARAMS = 12 * 256 * 256 + 13 * 256; /* h = 256 */

/* trace.h's invariants that a transform could break. */
static void check_invariants(const mt_trace *t) {
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        assert_int_equal(o->id, i);
        if (i > 0) assert_true(o->cpu_start_ns >= t->ops[i - 1].cpu_start_ns);
        assert_true(o->layer < t->n_layers);
        assert_true(o->fwd_op < t->n_ops);
        assert_true(o->in_first >= 0 && o->in_first + o->in_count <= t->n_trefs);
        assert_true(o->out_first >= 0 && o->out_first + o->out_count <= t->n_trefs);
        for (int32_t q = 0; q < o->in_count + o->out_count; q++) {
            const trace_tref *r = &t->trefs[q < o->in_count ? o->in_first + q : o->out_first + q - o->in_count];
            assert_true(r->tensor < t->n_tensors);
            assert_true(r->shape_off >= 0 && r->shape_off + r->ndim <= t->n_dims);
        }
    }
    for (int32_t x = 0; x < t->n_tensors; x++) assert_true(t->tensors[x].first_op < t->n_ops);
    for (int32_t e = 0; e < t->n_saved; e++) {
        assert_true(t->saved[e].op >= 0 && t->saved[e].op < t->n_ops);
        assert_true(t->saved[e].last_bwd < t->n_ops);
        assert_int_equal(t->ops[t->saved[e].op].phase, TRACE_PHASE_FORWARD);
        if (e > 0) assert_true(t->saved[e].op >= t->saved[e - 1].op);
    }
}

static void same_count_is_the_trace(void **state) {
    (void)state;
    mt_trace *t = load("cpu-gpt-tiny-b4"), *r = NULL;
    mt_error err = {0};
    assert_int_equal(mt_blocks_repeat(t, 4, &r, &err), MT_OK);
    assert_int_equal(r->n_ops, t->n_ops);
    assert_int_equal(r->n_tensors, t->n_tensors);
    assert_int_equal(r->n_layers, t->n_layers);
    assert_int_equal(r->n_saved, t->n_saved);
    for (int32_t i = 0; i < t->n_ops; i++) {
        assert_string_equal(r->ops[i].name, t->ops[i].name);
        assert_int_equal(r->ops[i].cpu_start_ns, t->ops[i].cpu_start_ns);
        assert_int_equal(r->ops[i].dev_ns, t->ops[i].dev_ns);
        assert_int_equal(r->ops[i].layer, t->ops[i].layer);
    }
    assert_int_equal(r->param_count, t->param_count);
    assert_int_equal(mt_trace_total_dev_ns(r), mt_trace_total_dev_ns(t));
    assert_int_equal(r->host_end_ns, t->host_end_ns);
    mt_trace_free(r);
    mt_trace_free(t);
}

static void ten_blocks_from_four(void **state) {
    (void)state;
    mt_trace *t = load("cpu-gpt-tiny-b4"), *r = NULL;
    mt_error err = {0};
    mt_blocks b;
    mt_blocks_find(t, &b);
    assert_true(b.found && b.count == 4 && b.layers == 8);
    assert_int_equal(mt_blocks_repeat(t, 10, &r, &err), MT_OK);
    check_invariants(r);
    assert_int_equal(r->n_layers, t->n_layers + 6 * 8);
    for (int32_t c = 0; c < 6; c++)
        for (int32_t w = 0; w < 8; w++) {
            const trace_layer *got = &r->layers[b.first + (4 + c) * 8 + w], *want = &t->layers[b.first + (c % 4) * 8 + w];
            assert_int_equal(got->n_ops, want->n_ops);
            for (int ph = 0; ph < TRACE_PHASE_COUNT; ph++) assert_int_equal(got->dev_ns[ph], want->dev_ns[ph]);
        }
    assert_int_equal(r->param_count, t->param_count + 6 * BLOCK_PARAMS);
    assert_true(r->grad_bytes == t->grad_bytes + 6.0 * BLOCK_PARAMS * 4);
    /* Adam: exp_avg and exp_avg_sq per parameter, one fp32 step counter per parameter tensor (16 a
     * block: q, k, v, o, fc1, fc2 weights and biases, two LayerNorms' weights and biases) */
    assert_true(r->optstate_bytes == t->optstate_bytes + 6.0 * (2 * BLOCK_PARAMS * 4 + 16 * 4));
    assert_int_equal(r->n_kernels, 0);
    int64_t added = mt_trace_total_dev_ns(r) - mt_trace_total_dev_ns(t);
    assert_true(added > 0);
    assert_true(r->host_end_ns - t->host_end_ns >= added);
    mt_blocks rb;
    mt_blocks_find(r, &rb);
    assert_true(rb.found && rb.count == 10 && rb.layers == 8 && rb.first == b.first);
    mt_trace_free(r);
    mt_trace_free(t);
}

static void one_block_from_four(void **state) {
    (void)state;
    mt_trace *t = load("cpu-gpt-tiny-b4"), *r = NULL;
    mt_error err = {0};
    assert_int_equal(mt_blocks_repeat(t, 1, &r, &err), MT_OK);
    check_invariants(r);
    assert_int_equal(r->n_layers, t->n_layers - 3 * 8);
    assert_int_equal(r->param_count, t->param_count - 3 * BLOCK_PARAMS);
    assert_true(r->n_ops < t->n_ops && mt_trace_total_dev_ns(r) < mt_trace_total_dev_ns(t));
    mt_trace_free(r);
    mt_trace_free(t);
}

static void refused(void **state) {
    (void)state;
    mt_trace *t = load("cpu-gpt-tiny-b4"), *d = load("cpu-dlrm-tiny-b4"), *r = NULL;
    mt_error err = {0};
    assert_int_equal(mt_blocks_repeat(t, 0, &r, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--blocks"));
    assert_int_equal(mt_blocks_repeat(t, MT_REPEAT_MAX_BLOCKS + 1, &r, &err), MT_EINVAL);
    assert_int_equal(mt_blocks_repeat(d, 4, &r, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "no repeating block"));
    assert_null(r);
    mt_trace_free(t);
    mt_trace_free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_count_is_the_trace),
        cmocka_unit_test(ten_blocks_from_four),
        cmocka_unit_test(one_block_from_four),
        cmocka_unit_test(refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for tracer/kfilter (the step filter of the Kineto reader) and its use by
 * mt_kineto_read: which events a target ProfilerStep keeps, by hand on five 10 us steps; the
 * number rule before the target's window is known; two targets; the verdict when the numbers
 * lie or the target never comes; the latest window as the target (a Kineto trace alone); and a file whose events come before their step's marker,
 * compacted at the end with the kept ops' input shapes intact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer/kfilter.h"
#include "tracer/kineto.h"

/* Steps #first.. over [10 (i), 10 (i + 1)) us, i = 0 .. n-1, numbered first + i (or numbers[]). */
static void steps(kfilter *f, int n, const int *numbers) {
    for (int i = 0; i < n; i++) assert_int_equal(mt_kfilter_marker(f, 10.0 * i, 10.0, numbers[i]), MT_OK);
}

static void test_one_target(void **state) {
    (void)state;
    kfilter f;
    mt_kfilter_init(&f, 3, -1);
    assert_int_equal(mt_kfilter_keep(&f, 1, 2), 1); /* no window known yet */
    static const int nums[] = {1, 2, 3, 4, 5};
    steps(&f, 1, nums);                              /* #1 over [0, 10) */
    assert_int_equal(mt_kfilter_keep(&f, 1, 2), 0);  /* inside #1, 2 from 3 */
    assert_int_equal(mt_kfilter_keep(&f, 12, 2), 1); /* in no known window */
    assert_int_equal(mt_kfilter_marker(&f, 10, 10, 2), MT_OK);
    assert_int_equal(mt_kfilter_marker(&f, 40, 10, 5), MT_OK); /* out of time order */
    assert_int_equal(mt_kfilter_marker(&f, 30, 10, 4), MT_OK);
    assert_int_equal(mt_kfilter_marker(&f, 20, 10, 3), MT_OK);
    /* the target #3 [20, 30): its neighbourhood is #2's start .. #4's end = [10, 40) */
    assert_true(f.t[0].known);
    assert_true(f.t[0].lo_us == 10 && f.t[0].hi_us == 40);
    assert_int_equal(mt_kfilter_keep(&f, 5, 2), 0);  /* ends before 10 */
    assert_int_equal(mt_kfilter_keep(&f, 8, 3), 1);  /* straddles 10 */
    assert_int_equal(mt_kfilter_keep(&f, 25, 1), 1);
    assert_int_equal(mt_kfilter_keep(&f, 39, 5), 1); /* starts before 40 */
    assert_int_equal(mt_kfilter_keep(&f, 45, 1), 0);
    assert_int_equal(mt_kfilter_keep(&f, 60, 1), 0); /* after every window, beyond #4 */
    assert_int_equal(f.dropped, 4);
    assert_int_equal(f.dropped_by_number, 1);
    assert_int_equal(mt_kfilter_verify(&f), 1);
    mt_kfilter_destroy(&f);
}

static void test_none_keeps_all(void **state) {
    (void)state;
    kfilter f;
    mt_kfilter_init(&f, -1, -1);
    static const int nums[] = {1, 2, 3, 4, 5};
    steps(&f, 5, nums);
    for (int i = 0; i < 60; i += 5) assert_int_equal(mt_kfilter_keep(&f, i, 1), 1);
    assert_int_equal(f.n_win, 0); /* nothing recorded */
    mt_kfilter_destroy(&f);
}

static void test_two_targets(void **state) {
    (void)state;
    kfilter f;
    mt_kfilter_init(&f, 2, 7);
    static const int nums[] = {1, 2, 3, 4, 5, 6, 7, 8};
    steps(&f, 4, nums); /* #1..#4: #7 not known yet, the number rule alone */
    assert_int_equal(mt_kfilter_keep(&f, 1, 1), 1);  /* #1: 1 from 2 */
    assert_int_equal(mt_kfilter_keep(&f, 31, 1), 0); /* #4: 2 from 2, 3 from 7 */
    for (int i = 4; i < 8; i++) assert_int_equal(mt_kfilter_marker(&f, 10.0 * i, 10, nums[i]), MT_OK);
    /* #2's neighbourhood [0, 30), #7's [50, 80) */
    assert_int_equal(mt_kfilter_keep(&f, 35, 1), 0);
    assert_int_equal(mt_kfilter_keep(&f, 45, 1), 0);
    assert_int_equal(mt_kfilter_keep(&f, 55, 1), 1);
    assert_int_equal(mt_kfilter_keep(&f, 29, 2), 1);
    assert_int_equal(mt_kfilter_keep(&f, 75, 10), 1);
    assert_int_equal(mt_kfilter_verify(&f), 1);
    mt_kfilter_destroy(&f);
}

static void test_verify(void **state) {
    (void)state;
    kfilter f;
    static const int lying[] = {1, 7, 3};  /* #7 is #3's neighbour in time */
    mt_kfilter_init(&f, 3, -1);
    steps(&f, 2, lying);
    assert_int_equal(mt_kfilter_keep(&f, 12, 1), 0); /* inside #7, before #3 is known */
    assert_int_equal(mt_kfilter_marker(&f, 20, 10, 3), MT_OK);
    assert_int_equal(mt_kfilter_verify(&f), 0);       /* that drop may have been wrong */
    mt_kfilter_destroy(&f);
    static const int nums[] = {1, 2, 3};
    mt_kfilter_init(&f, 99, -1); /* --step 99 of a trace without it */
    steps(&f, 3, nums);
    assert_int_equal(mt_kfilter_keep(&f, 15, 1), 0);
    assert_int_equal(mt_kfilter_verify(&f), 0);
    mt_kfilter_destroy(&f);
}

static void test_last(void **state) {
    (void)state;
    kfilter f;
    mt_kfilter_init(&f, KFILTER_LAST, -1); /* a Kineto trace alone, its last step */
    static const int nums[] = {1, 2, 3, 4, 5};
    steps(&f, 1, nums);
    assert_int_equal(mt_kfilter_step(&f, 0), 1);
    assert_int_equal(mt_kfilter_keep(&f, 1, 2), 1); /* #1 is the target so far */
    for (int i = 1; i < 3; i++) assert_int_equal(mt_kfilter_marker(&f, 10.0 * i, 10, nums[i]), MT_OK);
    assert_int_equal(mt_kfilter_step(&f, 0), 3);
    assert_int_equal(mt_kfilter_keep(&f, 1, 2), 0);  /* inside #1, now 2 from the target */
    assert_int_equal(mt_kfilter_keep(&f, 12, 2), 1); /* #2, its neighbour */
    for (int i = 3; i < 5; i++) assert_int_equal(mt_kfilter_marker(&f, 10.0 * i, 10, nums[i]), MT_OK);
    assert_int_equal(mt_kfilter_step(&f, 0), 5);      /* neighbourhood [30, +inf) */
    assert_int_equal(mt_kfilter_keep(&f, 25, 1), 0);
    assert_int_equal(mt_kfilter_keep(&f, 35, 1), 1);
    assert_int_equal(mt_kfilter_keep(&f, 100, 1), 1); /* after every window: trailing work */
    assert_int_equal(mt_kfilter_verify(&f), 1);        /* #1's drop is far from #4, #5 */
    mt_kfilter_destroy(&f);
    static const int lying[] = {1, 7}; /* #7 right after #1 in time */
    mt_kfilter_init(&f, KFILTER_LAST, -1);
    steps(&f, 2, lying);
    assert_int_equal(mt_kfilter_step(&f, 0), 7);
    assert_int_equal(mt_kfilter_keep(&f, 2, 1), 0); /* inside #1, 6 from #7 */
    assert_int_equal(mt_kfilter_verify(&f), 0);      /* but #1 is #7's neighbour */
    mt_kfilter_destroy(&f);
}

/* ---- the reader ------------------------------------------------------------------------- */

/* Five steps of 100 us at 1000 + 100 i: each an op with "Input Dims" [[i + 1, 7]], a launch and a
 * kernel running 20 us past the step's end; every marker written after its step's events. */
static char *write_trace(void) {
    static char path[] = "/tmp/test_kfilter_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"traceEvents\": [\n");
    for (int i = 0; i < 5; i++) {
        double s = 1000 + 100 * i;
        fprintf(f, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": %g, \"dur\": 50, \"tid\": 1,"
                " \"args\": {\"External id\": %d, \"Input Dims\": [[%d, 7]]}},\n", s + 10, i + 1, i + 1);
        fprintf(f, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"ts\": %g, \"dur\": 5,"
                " \"tid\": 1, \"args\": {\"correlation\": %d}},\n", s + 20, 100 + i);
        fprintf(f, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"ts\": %g, \"dur\": 90, \"tid\": 7,"
                " \"args\": {\"correlation\": %d, \"stream\": 7}},\n", s + 30, 100 + i);
        fprintf(f, "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", \"ts\": %g,"
                " \"dur\": 100, \"tid\": 1}%s\n", i + 1, s, i < 4 ? "," : "");
    }
    fprintf(f, "]}\n");
    fclose(f);
    return path;
}

static void test_reader_keeps_the_neighbourhood(void **state) {
    (void)state;
    char *path = write_trace();
    trace_strpool *pool = mt_strpool_new();
    mt_jstream_opts opts = {0};
    mt_error err = {0};
    kineto_data k;
    const int all[2] = {-1, -1}, third[2] = {3, -1};
    assert_int_equal(mt_kineto_read(path, pool, &opts, all, &k, &err), MT_OK);
    assert_int_equal(k.n_ev, 10);
    assert_int_equal(k.n_dropped, 0);
    mt_kineto_free(&k);
    assert_int_equal(mt_kineto_read(path, pool, &opts, third, &k, &err), MT_OK);
    /* steps 2, 3, 4 (neighbourhood [1100, 1400)): their ops, launches and kernels, and the 5
     * markers; step 1's op and launch and step 5's are dropped, and step 1's kernel (it ends at
     * 1120, in step 2) is kept */
    assert_int_equal(k.n_ev, 3 + 5);
    assert_int_equal(k.n_rt, 3);
    assert_int_equal(k.n_gpu, 4);
    assert_int_equal(k.n_dropped, 2 + 2 + 1);
    assert_true(k.filter_sound);
    int ops = 0;
    for (int64_t i = 0; i < k.n_ev; i++) {
        const kev *v = &k.ev[i];
        if (v->kind != KEV_OP) continue;
        int step = (int)((v->ts_ns / 1000 + k.base_us - 1000) / 100) + 1; /* from its time */
        assert_true(step >= 2 && step <= 4);
        assert_int_equal(v->ext_id, step);
        assert_int_equal(v->a.n_in, 1); /* its shape moved with it: [step, 7] */
        const kinput *in = &k.inputs[v->a.in_first];
        assert_int_equal(in->ndim, 2);
        assert_int_equal(k.dims[in->dim_first], step);
        assert_int_equal(k.dims[in->dim_first + 1], 7);
        ops++;
    }
    assert_int_equal(ops, 3);
    assert_int_equal(k.n_inputs, 3);
    assert_int_equal(k.n_dims, 6);
    mt_kineto_free(&k);
    mt_strpool_free(pool);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_target),
        cmocka_unit_test(test_none_keeps_all),
        cmocka_unit_test(test_two_targets),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_last),
        cmocka_unit_test(test_reader_keeps_the_neighbourhood),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

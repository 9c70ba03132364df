/* Unit tests for perfmodel/analytical.h: an op's time on a GPU from its work, against hand
 * computation on the built-in H100-SXM (TF32 494.7 TFLOP/s, FP32 67 TFLOP/s, BF16 989.4, 3.35 TB/s):
 *   fp32 convolution, 1e12 FLOPs, 1e6 bytes: TF32 tensor cores (--tf32 conv) at 0.25 of peak:
 *     1e12 / (0.25 * 494.7e12) s = 8.0857 ms
 *   the same as a matmul under --tf32 conv: FP32 CUDA cores at 0.93: 1e12 / (0.93 * 67e12) = 16.049 ms
 *   bf16 matmul, 1e12 FLOPs: BF16 tensor cores at 0.25: 1e12 / (0.25 * 989.4e12) = 4.0429 ms
 *   elementwise, 1e9 bytes: 1e9 / (0.92 * 3.35e12) s = 324.46 us
 *   batch norm, 1e9 bytes: 1e9 / (0.46 * 3.35e12) s = 648.91 us
 *   an elementwise op of 1 KB: the 6 us launch floor
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "perfmodel/analytical.h"

static mt_gpu_table *tab;

static int setup(void **state) {
    (void)state;
    mt_error err = {0};
    return mt_gpu_table_new(NULL, &tab, &err) == MT_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    mt_gpu_table_free(tab);
    return 0;
}

static mt_work work(mt_opclass c, mt_dtype d, double flops, double bytes) {
    return (mt_work){.flops = flops, .bytes_act = bytes, .cls = c, .dtype = d, .has_shapes = 1};
}

static void test_hand_cases(void **state) {
    (void)state;
    const mt_gpu_spec *h = mt_gpu_find(tab, "H100-SXM");
    assert_non_null(h);
    mt_work conv = work(MT_OPC_CONV, MT_DT_FP32, 1e12, 1e6), mm = work(MT_OPC_MATMUL, MT_DT_FP32, 1e12, 1e6);
    mt_work bf = work(MT_OPC_MATMUL, MT_DT_BF16, 1e12, 1e6);
    mt_work ew = work(MT_OPC_ELEMWISE, MT_DT_FP32, 2.5e8, 1e9), nm = work(MT_OPC_NORM, MT_DT_FP32, 1.25e9, 1e9);
    mt_work tiny = work(MT_OPC_ELEMWISE, MT_DT_FP32, 256, 1024);
    assert_float_equal(mt_analytical_ns(h, &conv, MT_TF32_CONV), 1e21 / (0.25 * 494.7e12), 1e3);
    assert_float_equal(mt_analytical_ns(h, &mm, MT_TF32_CONV), 1e21 / (0.93 * 67e12), 1e3);
    assert_float_equal(mt_analytical_ns(h, &bf, MT_TF32_CONV), 1e21 / (0.25 * 989.4e12), 1e3);
    assert_float_equal(mt_analytical_ns(h, &ew, MT_TF32_CONV), 1e18 / (0.92 * 3.35e12), 1);
    assert_float_equal(mt_analytical_ns(h, &nm, MT_TF32_CONV), 1e18 / (0.46 * 3.35e12), 1);
    assert_float_equal(mt_analytical_ns(h, &tiny, MT_TF32_CONV), MT_ANALYTICAL_LAUNCH_NS, 1e-9);
    assert_float_equal(mt_analytical_ns(h, NULL, MT_TF32_CONV), MT_ANALYTICAL_LAUNCH_NS, 1e-9);
    /* --tf32 all sends the matmul to the tensor cores too */
    assert_float_equal(mt_analytical_ns(h, &mm, MT_TF32_ALL), 1e21 / (0.25 * 494.7e12), 1e3);
}

/* Never below the roofline, whatever the class and GPU. */
static void test_never_below_roofline(void **state) {
    (void)state;
    for (int g = 0; g < tab->n; g++)
        for (int c = 1; c < MT_OPC_COUNT; c++)
            for (double f = 1e3; f < 1e14; f *= 37) {
                mt_work w = work((mt_opclass)c, MT_DT_FP32, f, f / 3);
                double t = mt_analytical_ns(&tab->gpus[g], &w, MT_TF32_CONV);
                assert_true(t >= mt_unit_floor_ns(&tab->gpus[g], &w, MT_TF32_CONV) - 1e-6);
                assert_true(t >= MT_ANALYTICAL_LAUNCH_NS);
            }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_cases),
        cmocka_unit_test(test_never_below_roofline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

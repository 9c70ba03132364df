/* Unit tests for perfmodel/: FLOP formulas against hand computation, op classes, batch scaling
 * of work, the NNLS fit (recovery, non-negativity, degrading), the GPU table and roofline, model
 * JSON round trip and bad files, CSV rows, and the op-time model on the small fixture trace.
 *
 * Hand computation (N = numel):
 *   conv2d x[8,3,32,32] w[16,3,3,3] bias[16] -> y[8,16,30,30]: N(y) = 115200,
 *     2·N(y)·(3·3·3) + N(y) = 6,220,800 + 115,200 = 6,336,000 FLOPs
 *   linear x[4,10,64] w[128,64] b[128] -> [4,10,128]: 2·5120·64 + 5120 = 660,480
 *   addmm(b[128], A[40,64], B[64,128]) -> [40,128]: the same 660,480
 *   bmm [2,3,4]·[2,4,5] -> [2,3,5]: 2·30·4 = 240
 *   sdpa q[2,4,16,8] k,v[2,4,32,8]: 2·(2·4)·16·32·(8+8) = 131,072
 *   ConvolutionBackward0 of the conv above without bias: 2 × 6,220,800 (input and weight
 *     gradients); 6,220,800 when x is the model input (no input gradient).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfmodel/commslow.h"
#include "perfmodel/fp8.h"
#include "perfmodel/perfmodel.h"
#include "extrapolate/program.h"

static char fx_buf[4][1024];

static const char *fixture(int slot, const char *rel) {
    const char *root = getenv("MT_FIXTURES");
    snprintf(fx_buf[slot], sizeof fx_buf[slot], "%s/%s", root ? root : "tests/fixtures", rel);
    return fx_buf[slot];
}

static mt_tshape sh(const int64_t *dims, int nd, trace_role role) {
    mt_tshape s = {dims, nd, 4, 0, role, "float"};
    return s;
}

static mt_opdesc desc(const char *name, trace_phase ph) {
    mt_opdesc d;
    memset(&d, 0, sizeof d);
    d.name = d.kind = name;
    d.phase = ph;
    return d;
}

static void test_flops_conv(void **state) {
    (void)state;
    static const int64_t x[] = {8, 3, 32, 32}, w[] = {16, 3, 3, 3}, b[] = {16}, y[] = {8, 16, 30, 30};
    mt_opdesc d = desc("aten::conv2d", TRACE_PHASE_FORWARD);
    d.in[0] = sh(x, 4, TRACE_ROLE_ACTIVATION);
    d.in[1] = sh(w, 4, TRACE_ROLE_WEIGHT);
    d.in[2] = sh(b, 1, TRACE_ROLE_WEIGHT);
    d.n_in = 3;
    d.out[0] = sh(y, 4, TRACE_ROLE_ACTIVATION);
    d.n_out = 1;
    mt_work wk;
    mt_work_of(&d, &wk);
    assert_int_equal(wk.cls, MT_OPC_CONV);
    assert_true(fabs(wk.flops - 6336000.0) < 0.5);
    assert_int_equal(wk.dtype, MT_DT_FP32); /* the data type: TF32 is a unit (mathunit.h) */
    /* bytes: x 24576 + y 115200 elements are batch-sized, w 432 + b 16 are parameters */
    assert_true(fabs(wk.bytes_act - 4.0 * (24576 + 115200)) < 0.5);
    assert_true(fabs(wk.bytes_fixed - 4.0 * (432 + 16)) < 0.5);
    /* without the output shape the spatial size is assumed kept: 8·16·32·32 outputs */
    d.n_out = 0;
    mt_work_of(&d, &wk);
    assert_true(fabs(wk.flops - (2.0 * 131072 * 27 + 131072)) < 0.5);

    /* backward derived from the forward op (no bias): 2x, or 1x for the model input */
    mt_opdesc f = desc("aten::conv2d", TRACE_PHASE_FORWARD);
    f.in[0] = sh(x, 4, TRACE_ROLE_ACTIVATION);
    f.in[1] = sh(w, 4, TRACE_ROLE_WEIGHT);
    f.n_in = 2;
    f.out[0] = sh(y, 4, TRACE_ROLE_ACTIVATION);
    f.n_out = 1;
    static const int64_t g[] = {8, 16, 30, 30};
    mt_opdesc bw = desc("autograd::engine::evaluate_function: ConvolutionBackward0", TRACE_PHASE_BACKWARD);
    bw.kind = "aten::convolution_backward";
    bw.in[0] = sh(g, 4, TRACE_ROLE_OTHER);
    bw.n_in = 1;
    bw.fwd = &f;
    mt_work_of(&bw, &wk);
    assert_int_equal(wk.cls, MT_OPC_CONV_BWD);
    assert_int_equal(wk.from_fwd, 1);
    assert_true(fabs(wk.flops - 12441600.0) < 0.5);
    f.in[0].role = TRACE_ROLE_INPUT;
    mt_work_of(&bw, &wk);
    assert_true(fabs(wk.flops - 6220800.0) < 0.5);
    /* the same from its own tensors (grad_output, input, weight) as TrioSim's CSV lists them */
    mt_opdesc own = desc("ConvolutionBackward0", TRACE_PHASE_BACKWARD);
    own.in[0] = sh(g, 4, TRACE_ROLE_OTHER);
    own.in[1] = sh(x, 4, TRACE_ROLE_ACTIVATION);
    own.in[2] = sh(w, 4, TRACE_ROLE_WEIGHT);
    own.n_in = 3;
    mt_work_of(&own, &wk);
    assert_int_equal(wk.cls, MT_OPC_CONV_BWD);
    assert_true(fabs(wk.flops - 12441600.0) < 0.5);
}

static void test_flops_linear_matmul(void **state) {
    (void)state;
    static const int64_t x[] = {4, 10, 64}, w[] = {128, 64}, b[] = {128}, y[] = {4, 10, 128};
    mt_opdesc d = desc("aten::linear", TRACE_PHASE_FORWARD);
    d.in[0] = sh(x, 3, TRACE_ROLE_ACTIVATION);
    d.in[1] = sh(w, 2, TRACE_ROLE_WEIGHT);
    d.in[2] = sh(b, 1, TRACE_ROLE_WEIGHT);
    d.n_in = 3;
    d.out[0] = sh(y, 3, TRACE_ROLE_ACTIVATION);
    d.n_out = 1;
    mt_work wk;
    mt_work_of(&d, &wk);
    assert_int_equal(wk.cls, MT_OPC_MATMUL);
    assert_true(fabs(wk.flops - 660480.0) < 0.5);
    assert_int_equal(wk.dtype, MT_DT_FP32);
    d.n_out = 0; /* output derived from the weight */
    mt_work_of(&d, &wk);
    assert_true(fabs(wk.flops - 660480.0) < 0.5);

    static const int64_t a2[] = {40, 64}, b2[] = {64, 128};
    mt_opdesc m = desc("aten::addmm", TRACE_PHASE_FORWARD);
    m.in[0] = sh(b, 1, TRACE_ROLE_WEIGHT);
    m.in[1] = sh(a2, 2, TRACE_ROLE_ACTIVATION);
    m.in[2] = sh(b2, 2, TRACE_ROLE_WEIGHT);
    m.n_in = 3;
    mt_work_of(&m, &wk);
    assert_true(fabs(wk.flops - 660480.0) < 0.5);

    static const int64_t p[] = {2, 3, 4}, q[] = {2, 4, 5};
    mt_opdesc bm = desc("aten::bmm", TRACE_PHASE_FORWARD);
    bm.in[0] = sh(p, 3, TRACE_ROLE_ACTIVATION);
    bm.in[1] = sh(q, 3, TRACE_ROLE_ACTIVATION);
    bm.in[0].dtype = "c10::BFloat16";
    bm.n_in = 2;
    mt_work_of(&bm, &wk);
    assert_true(fabs(wk.flops - 240.0) < 0.5);
    assert_int_equal(wk.dtype, MT_DT_BF16);
}

static void test_flops_attention(void **state) {
    (void)state;
    static const int64_t q[] = {2, 4, 16, 8}, kv[] = {2, 4, 32, 8};
    mt_opdesc d = desc("aten::scaled_dot_product_attention", TRACE_PHASE_FORWARD);
    d.in[0] = sh(q, 4, TRACE_ROLE_ACTIVATION);
    d.in[1] = sh(kv, 4, TRACE_ROLE_ACTIVATION);
    d.in[2] = sh(kv, 4, TRACE_ROLE_ACTIVATION);
    d.n_in = 3;
    mt_work wk;
    mt_work_of(&d, &wk);
    assert_int_equal(wk.cls, MT_OPC_ATTN);
    assert_true(fabs(wk.flops - 131072.0) < 0.5);
    mt_opdesc bw = desc("autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0",
                        TRACE_PHASE_BACKWARD);
    bw.fwd = &d;
    mt_work_of(&bw, &wk);
    assert_int_equal(wk.cls, MT_OPC_ATTN_BWD);
    assert_true(fabs(wk.flops - 2.5 * 131072.0) < 0.5);
}

static void test_classes_and_scaling(void **state) {
    (void)state;
    assert_int_equal(mt_opclass_of("aten::relu_", NULL, TRACE_PHASE_FORWARD, 0), MT_OPC_ELEMWISE);
    assert_int_equal(mt_opclass_of("aten::add_", NULL, TRACE_PHASE_OPTIMIZER, 0), MT_OPC_OPTIMIZER);
    assert_int_equal(mt_opclass_of("aten::_foreach_addcdiv_", NULL, TRACE_PHASE_OPTIMIZER, 0),
                     MT_OPC_OPTIMIZER);
    assert_int_equal(mt_opclass_of("aten::threshold_backward", NULL, TRACE_PHASE_BACKWARD, 0),
                     MT_OPC_ELEMWISE_BWD);
    assert_int_equal(mt_opclass_of("aten::max_pool2d_with_indices_backward", NULL,
                                   TRACE_PHASE_BACKWARD, 0), MT_OPC_POOL_BWD);
    assert_int_equal(mt_opclass_of("autograd::engine::evaluate_function: NativeLayerNormBackward0",
                                   "aten::native_layer_norm_backward", TRACE_PHASE_BACKWARD, 0),
                     MT_OPC_NORM_BWD);
    assert_int_equal(mt_opclass_of("autograd::engine::evaluate_function: "
                                   "torch::autograd::AccumulateGrad", "aten::detach",
                                   TRACE_PHASE_BACKWARD, 0), MT_OPC_NONE);
    assert_int_equal(mt_opclass_of("aten::view", NULL, TRACE_PHASE_FORWARD, 0), MT_OPC_NONE);
    assert_int_equal(mt_opclass_of("aten::frobnicate", NULL, TRACE_PHASE_FORWARD, 0), MT_OPC_UNKNOWN);
    assert_int_equal(mt_opclass_of("nccl:all_reduce", NULL, TRACE_PHASE_OTHER, 1), MT_OPC_COMM);
    for (int c = 0; c < MT_OPC_COUNT; c++)
        assert_int_equal(mt_opclass_parse(mt_opclass_name((mt_opclass)c)), c);
    assert_int_equal(mt_opclass_parse("nope"), MT_OPC_COUNT);

    mt_work w = {.flops = 100, .bytes_act = 40, .bytes_fixed = 10};
    mt_work s = mt_work_scale(&w, 1, 0.25, 2);
    assert_true(fabs(s.flops - 12.5) < 1e-12 && fabs(s.bytes_act - 5) < 1e-12 &&
                fabs(s.bytes_fixed - 5) < 1e-12);
    s = mt_work_scale(&w, 0, 4, 1); /* not batch-dependent: unchanged */
    assert_true(s.flops == 100 && s.bytes_act == 40 && s.bytes_fixed == 10);
}

/* ---- fit -------------------------------------------------------------------------------- */

static const char *const names3[3] = {"flops", "bytes", "const"};

static void test_fit_recovers(void **state) {
    (void)state;
    enum { N = 24 };
    double X[N * 3], y[N], w[N];
    for (int i = 0; i < N; i++) {
        double f = 1e6 * (1 + (i * 7919) % 97), b = 1e4 * (1 + (i * 104729) % 89);
        X[i * 3] = f, X[i * 3 + 1] = b, X[i * 3 + 2] = 1;
        y[i] = 2e-3 * f + 0.5 * b + 1000;
        w[i] = 1 / y[i];
    }
    mt_fit_result r;
    assert_int_equal(mt_fit_nnls(X, y, w, N, 3, 0, names3, &r, NULL), MT_OK);
    assert_int_equal(r.used, 7u);
    assert_int_equal(r.degraded, 0);
    assert_true(fabs(r.coef[0] / 2e-3 - 1) < 1e-6);
    assert_true(fabs(r.coef[1] / 0.5 - 1) < 1e-6);
    assert_true(fabs(r.coef[2] / 1000 - 1) < 1e-6);
    assert_true(r.rel_rmse < 1e-9);
    /* a negative true intercept is not allowed: the best non-negative model has c = 0 */
    for (int i = 0; i < N; i++) y[i] = 2e-3 * X[i * 3] + 0.5 * X[i * 3 + 1] - 500, w[i] = 1 / y[i];
    assert_int_equal(mt_fit_nnls(X, y, w, N, 3, 0, names3, &r, NULL), MT_OK);
    for (int j = 0; j < 3; j++) assert_true(r.coef[j] >= 0 && isfinite(r.coef[j]));
    assert_true(r.coef[2] == 0);
    assert_true((r.used & 4u) == 0);
}

static void test_fit_degrades(void **state) {
    (void)state;
    double X[6 * 3], y[6];
    mt_fit_result r;
    /* collinear: bytes = 2 x flops, constant elsewhere */
    for (int i = 0; i < 6; i++) {
        X[i * 3] = 1e6 * (i + 1), X[i * 3 + 1] = 2e6 * (i + 1), X[i * 3 + 2] = 1;
        y[i] = 3e-3 * X[i * 3] + 10;
    }
    assert_int_equal(mt_fit_nnls(X, y, NULL, 6, 3, 0, names3, &r, NULL), MT_OK);
    assert_int_equal(r.degraded, 1);
    assert_non_null(strstr(r.warning, "ill-conditioned"));
    assert_true(r.used != 7u && r.used != 0);
    for (int j = 0; j < 3; j++) assert_true(isfinite(r.coef[j]) && r.coef[j] >= 0);
    /* the simpler model still predicts the data */
    double pred = X[0] * r.coef[0] + X[1] * r.coef[1] + r.coef[2];
    assert_true(fabs(pred / y[0] - 1) < 1e-6);

    /* too few points: 2 rows for 3 parameters -> one work term, never the constant alone */
    X[0] = 1e6, X[1] = 5e5, X[2] = 1, y[0] = 100;
    X[3] = 4e6, X[4] = 1e5, X[5] = 1, y[1] = 300;
    assert_int_equal(mt_fit_nnls(X, y, NULL, 2, 3, 0, names3, &r, NULL), MT_OK);
    assert_int_equal(r.degraded, 1);
    assert_non_null(strstr(r.warning, "2 points for 3 parameters"));
    assert_true(r.used == 1u || r.used == 2u);
    for (int j = 0; j < 3; j++) assert_true(isfinite(r.coef[j]));

    /* one point, memory class {bytes, const}: proportional to bytes (a tie with the constant) */
    assert_int_equal(mt_fit_nnls(X, y, NULL, 1, 3, 6u, names3, &r, NULL), MT_OK);
    assert_int_equal(r.used, 2u);
    assert_true(fabs(r.coef[1] * 5e5 - 100) < 1e-6);

    /* no points, and NaN rows: nothing fitted, nothing NaN */
    assert_int_equal(mt_fit_nnls(X, y, NULL, 0, 3, 0, names3, &r, NULL), MT_OK);
    assert_int_equal(r.used, 0u);
    for (int j = 0; j < 3; j++) assert_true(r.coef[j] == 0);
    X[0] = NAN;
    y[1] = INFINITY;
    assert_int_equal(mt_fit_nnls(X, y, NULL, 2, 3, 0, names3, &r, NULL), MT_OK);
    for (int j = 0; j < 3; j++) assert_true(isfinite(r.coef[j]));
    assert_true(isfinite(r.rel_rmse));
    assert_int_equal(mt_fit_nnls(X, y, NULL, 2, 5, 0, names3, &r, NULL), MT_EINVAL);
}

/* ---- GPUs and roofline ------------------------------------------------------------------ */

static void test_roofline(void **state) {
    (void)state;
    mt_gpu_table *tab = NULL;
    mt_error err = {0};
    assert_int_equal(mt_gpu_table_new(NULL, &tab, &err), MT_OK);
    const mt_gpu_spec *h100 = mt_gpu_find(tab, "NVIDIA H100 80GB HBM3");
    const mt_gpu_spec *pcie = mt_gpu_find(tab, "NVIDIA H100 PCIe");
    const mt_gpu_spec *a100 = mt_gpu_find(tab, "a100-80gb");
    assert_non_null(h100);
    assert_non_null(pcie);
    assert_non_null(a100);
    assert_string_equal(h100->name, "H100-SXM");
    assert_string_equal(pcie->name, "H100-PCIe");
    assert_string_equal(mt_gpu_find(tab, "NVIDIA A100-SXM4-40GB")->name, "A100-40GB");
    assert_string_equal(mt_gpu_find(tab, "Tesla V100-SXM2-32GB")->name, "V100");
    assert_string_equal(mt_gpu_find(tab, "NVIDIA GeForce RTX 2080 Ti")->name, "RTX-2080Ti");
    assert_non_null(mt_gpu_find(tab, "H200"));
    assert_non_null(mt_gpu_find(tab, "L40S"));
    assert_non_null(mt_gpu_find(tab, "A40"));
    assert_non_null(mt_gpu_find(tab, "AMD Instinct MI250X / MI250"));
    assert_null(mt_gpu_find(tab, "cpu"));
    /* compute-bound (1 TFLOP, 1 MB, TF32) and memory-bound (1 MFLOP, 1 GB) on the H100 */
    assert_true(mt_roofline_compute_bound(h100, MT_DT_TF32, 1e12, 1e6));
    assert_false(mt_roofline_compute_bound(h100, MT_DT_TF32, 1e6, 1e9));
    /* ridge point and times */
    assert_true(fabs(mt_gpu_ridge(h100, MT_DT_FP32) - 67e12 / 3350e9) < 1e-9);
    assert_true(fabs(mt_roofline_ns(h100, MT_DT_FP32, 67e12, 0) - 1e9) < 1e-3);
    /* a unit the GPU lacks reads as its FP32 peak: V100 has no TF32 and no BF16 (its FP16
     * tensor cores cannot do bf16: it was 125 TFLOP/s here) */
    const mt_gpu_spec *v100 = mt_gpu_find(tab, "V100");
    assert_true(mt_gpu_peak(v100, MT_DT_TF32) == 15.7e12);
    assert_true(mt_gpu_peak(v100, MT_DT_BF16) == 15.7e12);
    assert_true(mt_gpu_peak(v100, MT_DT_FP16) == 125e12);
    mt_gpu_table_free(tab);

    /* JSON extension: a new GPU and an override of a built-in */
    assert_int_equal(mt_gpu_table_new(fixture(0, "perfmodel/gpus.json"), &tab, &err), MT_OK);
    const mt_gpu_spec *t = mt_gpu_find(tab, "my Test GPU rev2");
    assert_non_null(t);
    assert_string_equal(t->name, "TestGPU");
    assert_true(t->mem_Bps == 1000e9 && mt_gpu_peak(t, MT_DT_BF16) == 80e12);
    assert_true(mt_gpu_peak(t, MT_DT_FP16) == 10e12); /* no FP16 given: its CUDA cores */
    assert_true(mt_gpu_find(tab, "H100")->mem_Bps == 3000e9);
    mt_gpu_table_free(tab);
    /* a bad file: one line naming it */
    char path[] = "/tmp/mt_gpus_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *bad = "{\"gpus\": [{\"name\": \"X\", \"tflops\": {\"fp32\": 1}}]}";
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    assert_int_equal(mt_gpu_table_new(path, &tab, &err), MT_EFORMAT);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "gpus[0].mem_GBps"));
    assert_null(strchr(err.msg, '\n'));
    unlink(path);
}

/* ---- units and moving ops between GPUs (mathunit.h) ------------------------------------- */

static mt_work work_of(mt_opclass c, mt_dtype d, double flops, double bytes) {
    return (mt_work){.flops = flops, .bytes_act = bytes, .cls = c, .dtype = d, .has_shapes = 1};
}

static void test_units(void **state) {
    (void)state;
    mt_gpu_table *tab = NULL;
    mt_error err = {0};
    assert_int_equal(mt_gpu_table_new(NULL, &tab, &err), MT_OK);
    const mt_gpu_spec *h100 = mt_gpu_find(tab, "H100-SXM"), *a100 = mt_gpu_find(tab, "A100-80GB"),
                      *v100 = mt_gpu_find(tab, "V100");
    mt_work conv = work_of(MT_OPC_CONV_BWD, MT_DT_FP32, 1e12, 1e6), mm = work_of(MT_OPC_MATMUL, MT_DT_FP32, 1e12, 1e6);
    mt_work relu = work_of(MT_OPC_ELEMWISE, MT_DT_BF16, 1e6, 1e9), bmm = work_of(MT_OPC_MATMUL, MT_DT_BF16, 1e12, 1e6);
    mt_work hmm = work_of(MT_OPC_MATMUL, MT_DT_FP16, 1e12, 1e6), f8 = work_of(MT_OPC_MATMUL, MT_DT_FP8, 1e12, 1e6);
    /* PyTorch's default: fp32 convolutions on TF32, fp32 matmuls on FP32 */
    assert_int_equal(mt_unit_column(h100, &conv, MT_TF32_CONV), MT_DT_TF32);
    assert_int_equal(mt_unit_column(h100, &mm, MT_TF32_CONV), MT_DT_FP32);
    assert_int_equal(mt_unit_column(h100, &mm, MT_TF32_ALL), MT_DT_TF32);
    assert_int_equal(mt_unit_column(h100, &conv, MT_TF32_NONE), MT_DT_FP32);
    /* a GPU without the unit runs the op on the next one */
    assert_int_equal(mt_unit_column(v100, &conv, MT_TF32_CONV), MT_DT_FP32);
    assert_int_equal(mt_unit_column(v100, &bmm, MT_TF32_CONV), MT_DT_FP32);
    assert_int_equal(mt_unit_column(v100, &hmm, MT_TF32_CONV), MT_DT_FP16);
    assert_int_equal(mt_unit_column(a100, &f8, MT_TF32_CONV), MT_DT_FP16);
    assert_int_equal(mt_unit_column(h100, &relu, MT_TF32_CONV), MT_DT_FP32); /* vector math */
    assert_int_equal(mt_unit_kind_of(MT_DT_TF32), MT_UNIT_TENSOR);
    assert_int_equal(mt_unit_kind_of(MT_DT_FP32), MT_UNIT_CUDA);

    /* same kind of unit: the traced efficiency is kept. 1 TFLOP of TF32 taking 2x its H100
     * roofline (1e12 / 494.7e12 s) takes 2x its A100 roofline (1e12 / 156e12 s) */
    double roof_h = 1e21 / 494.7e12, roof_a = 1e21 / 156e12;
    assert_true(fabs(mt_unit_move_ns(h100, a100, &conv, 2 * roof_h, MT_TF32_CONV) - 2 * roof_a) < 1e-6 * roof_a);
    /* another kind: on the V100's CUDA cores at 0.96 of 15.7 TFLOP/s for a convolution, whatever
     * it reached on TF32 (it was 2 x 494.7 / 15.7 = 63 x slower, as if both reached the same
     * share of peak); a bf16 matmul (no BF16 tensor cores on a V100) at 0.93 */
    double v = 1e21 / (0.96 * 15.7e12);
    assert_true(fabs(mt_unit_move_ns(h100, v100, &conv, 2 * roof_h, MT_TF32_CONV) - v) < 1e-6 * v);
    assert_true(fabs(mt_unit_move_ns(h100, v100, &conv, 5 * roof_h, MT_TF32_CONV) - v) < 1e-6 * v);
    double vb = 1e21 / (0.93 * 15.7e12);
    assert_true(fabs(mt_unit_move_ns(h100, v100, &bmm, 3 * 1e21 / 989.4e12, MT_TF32_CONV) - vb) < 1e-6 * vb);
    /* memory-bound: the bandwidth ratio at the kept efficiency (0.5) */
    double t = 2 * 1e18 / 3350e9;
    assert_true(fabs(mt_unit_move_ns(h100, v100, &relu, t, MT_TF32_CONV) - 2 * 1e18 / 900e9) < 1e-3);
    /* faster than its roofline in the trace (a work estimate too high): the target's roofline */
    assert_true(fabs(mt_unit_move_ns(h100, a100, &conv, 0.5 * roof_h, MT_TF32_CONV) - roof_a) < 1e-6 * roof_a);
    /* no work known: the bandwidth ratio */
    assert_true(fabs(mt_unit_move_ns(h100, a100, NULL, 1000, MT_TF32_CONV) - 1000 * 3350.0 / 2039.0) < 1e-9);
    /* latency-bound (0.1 GFLOP of bf16 in 5 us: 0.1 us of it at the H100's peak, under a tenth)
     * keeps its 5 us on the A100, where the peak ratio would give 5 x 989.4 / 312 = 15.9 us */
    mt_work tiny = work_of(MT_OPC_MATMUL, MT_DT_BF16, 1e8, 1e3);
    assert_true(fabs(mt_unit_move_ns(h100, a100, &tiny, 5000, MT_TF32_CONV) - 5000) < 1e-9);
    /* the same work taking 1 us (e = 0.1011 >= 0.1) is compute-bound: the peak ratio */
    assert_true(fabs(mt_unit_move_ns(h100, a100, &tiny, 1000, MT_TF32_CONV) - 1000 * 989.4 / 312) < 1e-6);
    /* a clock cap: the H100 at half its 1980 MHz boost has half its compute peaks, all its HBM
     * bandwidth: a compute-bound op takes twice as long, a memory-bound one the same */
    mt_gpu_spec half = *h100;
    mt_gpu_set_clock(&half, 990);
    assert_true(fabs(half.peak_flops[MT_DT_BF16] - 989.4e12 / 2) < 1e3 && half.mem_Bps == h100->mem_Bps);
    assert_true(fabs(mt_unit_move_ns(h100, &half, &bmm, 2e9, MT_TF32_CONV) - 4e9) < 1);
    assert_true(fabs(mt_unit_move_ns(h100, &half, &relu, t, MT_TF32_CONV) - t) < 1e-3);
    /* the catalogue's capped SXM board: 1755 of 1980 MHz */
    const mt_gpu_spec *cap = mt_gpu_find(tab, "h100 sxm 500w");
    assert_non_null(cap);
    assert_true(fabs(cap->peak_flops[MT_DT_FP8] - 1978.9e12 * 1755 / 1980) < 1e6);
    /* parts told apart by the names traces give them */
    assert_string_equal(mt_gpu_find(tab, "NVIDIA H100 NVL")->name, "H100-NVL");
    assert_string_equal(mt_gpu_find(tab, "NVIDIA GB200")->name, "GB200");
    assert_string_equal(mt_gpu_find(tab, "NVIDIA B200")->name, "B200");
    assert_string_equal(mt_gpu_find(tab, "NVIDIA A100 80GB PCIe")->name, "A100-PCIe-80GB");
    assert_string_equal(mt_gpu_find(tab, "NVIDIA A100-SXM4-80GB")->name, "A100-80GB");
    assert_string_equal(mt_gpu_find(tab, "AMD Instinct MI300X")->name, "MI300X");
    mt_gpu_table_free(tab);
}

/* VGG13 H100 b512 (../shared/traces) to a V100 and an A100: no op below its roofline there, and
 * the V100 step in [2.42, 3.51] s: at least the 2.42 s roofline (34.3 TFLOP of convolutions on
 * 15.7 TFLOP/s FP32 plus the memory-bound ops), at most the step with its fp32 convolutions at
 * 71 % of peak (the lowest V100 FP32 efficiency published for VGG we found: PaddlePaddle's VGG16
 * forward, 11.1 TFLOP/s). Before: 7.56 s, the TF32/FP32 peak ratio applied to the convolutions'
 * 17-65 % TF32 efficiency. */
static void test_cross_gpu_vgg13(void **state) {
    (void)state;
    const char *root = getenv("MT_SHARED_TRACES");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/triosim-vgg13-h100-bs512", root ? root : "../shared/traces");
    if (access(dir, R_OK) != 0) skip();
    const char *paths[1] = {dir};
    mt_trace *t = NULL;
    mt_error err = {0};
    assert_int_equal(mt_trace_load(paths, 1, NULL, &t, &err), MT_OK);
    static const char *const targets[] = {"V100", "A100-80GB"};
    for (int k = 0; k < 2; k++) {
        mt_pm_opts o;
        mt_pm_opts_init(&o);
        o.target_gpu = targets[k];
        mt_perfmodel *pm = NULL;
        assert_int_equal(mt_perfmodel_new(t, &o, &pm, &err), MT_OK);
        const mt_gpu_spec *dst = mt_perfmodel_target_gpu(pm);
        double step = 0;
        for (int32_t i = 0; i < t->n_ops; i++) {
            double ns = mt_perfmodel_op_time_ns(pm, t, i, 1.0, 1);
            const mt_work *w = mt_perfmodel_op_work(pm, i);
            int device_work = w->has_shapes && w->cls != MT_OPC_NONE && w->cls != MT_OPC_COMM && t->ops[i].dev_ns > 0;
            double floor = device_work ? mt_unit_floor_ns(dst, w, o.tf32) : 0;
            assert_true(fabs(floor - mt_perfmodel_op_floor_ns(pm, i, 1.0, 1)) <= 1e-9 * floor);
            if (ns < floor * (1 - 1e-12)) fail_msg("%s op %d (%s): %.0f ns below its roofline %.0f ns", targets[k], i,
                                                   t->ops[i].name, ns, floor);
            step += ns;
        }
        assert_true(mt_perfmodel_floor_ns(pm, 1.0, 1) <= step);
        if (k == 0 && !(step >= 2.42e9 && step <= 3.51e9)) fail_msg("V100 step %.1f ms outside [2420, 3510]", step / 1e6);
        mt_perfmodel_free(pm);
    }
    mt_trace_free(t);
}

/* ---- model files and CSV ---------------------------------------------------------------- */

static void test_model_json(void **state) {
    (void)state;
    mt_linmodel m, back;
    memset(&m, 0, sizeof m);
    snprintf(m.device, sizeof m.device, "NVIDIA H100 80GB HBM3");
    m.n_traces = 2;
    m.cls[MT_OPC_CONV] = (mt_fit_result){{2e-3, 0.5, 1000}, 7u, 12, 0.05, 0, ""};
    m.cls[MT_OPC_POOL] = (mt_fit_result){{0, 0.25, 0}, 2u, 3, 0.1, 1, "3 points: fitted bytes"};
    char path[] = "/tmp/mt_model_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    mt_error err = {0};
    assert_int_equal(mt_linmodel_save(&m, path, &err), MT_OK);
    assert_int_equal(mt_linmodel_load(path, &back, &err), MT_OK);
    assert_string_equal(back.device, m.device);
    assert_int_equal(back.n_traces, 2);
    assert_int_equal(back.cls[MT_OPC_CONV].used, 7u);
    assert_int_equal(back.cls[MT_OPC_CONV].n, 12);
    assert_true(fabs(back.cls[MT_OPC_CONV].coef[0] - 2e-3) < 1e-15);
    assert_int_equal(back.cls[MT_OPC_POOL].used, 2u);
    assert_string_equal(back.cls[MT_OPC_POOL].warning, "3 points: fitted bytes");
    assert_int_equal(back.cls[MT_OPC_MATMUL].used, 0u);
    assert_true(mt_linmodel_predict_ns(&back, MT_OPC_MATMUL, 1, 1) < 0);
    assert_true(fabs(mt_linmodel_predict_ns(&back, MT_OPC_CONV, 1e6, 1e3) - (2e3 + 500 + 1000)) < 1e-6);
    unlink(path);

    /* bad files: one line naming the file */
    const char *bad = fixture(0, "perfmodel/bad_model.json");
    assert_int_equal(mt_linmodel_load(bad, &back, &err), MT_EFORMAT);
    assert_non_null(strstr(err.msg, bad));
    assert_non_null(strstr(err.msg, "classes.conv.ns_per_flop"));
    assert_null(strchr(err.msg, '\n'));
    const char *notjson = fixture(1, "perfmodel/ops.csv");
    assert_int_not_equal(mt_linmodel_load(notjson, &back, &err), MT_OK);
    assert_non_null(strstr(err.msg, notjson));
    assert_null(strchr(err.msg, '\n'));
    assert_int_equal(mt_linmodel_load("/no/such/model.json", &back, &err), MT_EIO);
    assert_non_null(strstr(err.msg, "/no/such/model.json"));
    const char *gpus = fixture(2, "perfmodel/gpus.json"); /* valid JSON, not a model */
    assert_int_equal(mt_linmodel_load(gpus, &back, &err), MT_EFORMAT);
    assert_non_null(strstr(err.msg, "format"));
}

static void test_csv_rows(void **state) {
    (void)state;
    mt_pm_data *d = NULL;
    mt_error err = {0};
    assert_int_equal(mt_pm_data_new(&d, &err), MT_OK);
    assert_int_equal(mt_pm_data_add_csv(d, fixture(0, "perfmodel/ops.csv"), &err), MT_OK);
    assert_int_equal(mt_pm_data_rows(d), 6);
    mt_linmodel m;
    assert_int_equal(mt_linmodel_fit(d, &m, &err), MT_OK);
    assert_int_equal(m.n_csv_rows, 6);
    assert_int_equal(m.cls[MT_OPC_CONV].n, 2);
    assert_int_equal(m.cls[MT_OPC_CONV_BWD].n, 1);
    assert_int_equal(m.cls[MT_OPC_MATMUL].n, 2);
    for (int c = 0; c < MT_OPC_COUNT; c++)
        for (int j = 0; j < 3; j++) assert_true(isfinite(m.cls[c].coef[j]) && m.cls[c].coef[j] >= 0);
    const char *bad = fixture(1, "perfmodel/bad_ops.csv");
    assert_int_equal(mt_pm_data_add_csv(d, bad, &err), MT_EFORMAT);
    assert_non_null(strstr(err.msg, bad));
    assert_non_null(strstr(err.msg, ":3:"));
    assert_null(strchr(err.msg, '\n'));
    mt_pm_data_free(d);
}

/* ---- the op-time model on a trace ------------------------------------------------------- */

static void test_optime_on_trace(void **state) {
    (void)state;
    const char *paths[1] = {fixture(0, "small")};
    trace_load_opts lo;
    mt_trace_load_opts_init(&lo);
    mt_trace *t = NULL;
    mt_error err = {0};
    assert_int_equal(mt_trace_load(paths, 1, &lo, &t, &err), MT_OK);
    for (int kind = MT_PM_TRACE; kind <= MT_PM_ROOFLINE; kind++) {
        mt_pm_opts o;
        mt_pm_opts_init(&o);
        o.kind = (mt_pm_kind)kind;
        o.gpu_specs_path = fixture(1, "perfmodel/gpus.json");
        mt_perfmodel *pm = NULL;
        mt_status rc = mt_perfmodel_new(t, &o, &pm, &err);
        /* roofline needs the trace's GPU: "Test GPU 80GB" matches test+gpu in the fixture table */
        assert_int_equal(rc, MT_OK);
        for (int32_t i = 0; i < t->n_ops; i++) {
            /* at the traced size every model gives back the measured time */
            double same = mt_perfmodel_op_time_ns(pm, t, i, 1.0, 1);
            assert_true(fabs(same - (double)t->ops[i].dev_ns) <= 1e-6 * (double)t->ops[i].dev_ns + 1e-9);
            double big = mt_perfmodel_op_time_ns(pm, t, i, 2.0, 1);
            double split = mt_perfmodel_op_time_ns(pm, t, i, 1.0, 4);
            assert_true(isfinite(big) && big >= 0 && isfinite(split) && split >= 0);
            if (kind == MT_PM_TRACE)
                assert_true(fabs(big - mt_optime_proportional(NULL, t, i, 2.0, 1)) < 1e-6);
        }
        mt_perfmodel_free(pm);
    }
    /* an unknown target GPU and a device not in the table: one-line errors */
    mt_pm_opts o;
    mt_pm_opts_init(&o);
    o.target_gpu = "Z9000";
    mt_perfmodel *pm = NULL;
    assert_int_equal(mt_perfmodel_new(t, &o, &pm, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "Z9000"));
    o.target_gpu = "H100";
    assert_int_equal(mt_perfmodel_new(t, &o, &pm, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "Test GPU 80GB"));
    /* cross-GPU with the device added: a compute-bound op gets faster on a faster GPU */
    o.gpu_specs_path = fixture(1, "perfmodel/gpus.json");
    assert_int_equal(mt_perfmodel_new(t, &o, &pm, &err), MT_OK);
    assert_non_null(mt_perfmodel_target_gpu(pm));
    double ph[TRACE_PHASE_COUNT], tot = 0;
    mt_perfmodel_step_ns(pm, 1.0, 1, ph);
    for (int p = 0; p < TRACE_PHASE_COUNT; p++) tot += ph[p];
    assert_true(tot > 0 && tot < (double)mt_trace_total_dev_ns(t));
    mt_perfmodel_free(pm);
    /* a bad model file surfaces with its name */
    mt_pm_opts_init(&o);
    o.kind = MT_PM_LINEAR;
    o.model_path = fixture(2, "perfmodel/bad_model.json");
    assert_int_equal(mt_perfmodel_new(t, &o, &pm, &err), MT_EFORMAT);
    assert_non_null(strstr(err.msg, "bad_model.json"));
    mt_trace_free(t);
}

/* FP8 GEMMs (fp8.h) on the datasheets' dense peaks: a compute-bound bf16 GEMM on an H100 SXM takes
 * 989.4 / 1978.9 of its time in FP8, plus its casts at 0.8 x 3.35 TB/s; a memory-bound one moves
 * 0.75 of its bytes; an A100 (no FP8) and an fp32 GEMM keep theirs. Compute slowed by communication
 * (commslow.h): 24 of an H100's 132 SMs held give 24 / 108; a collective over 450 GB/s NVLink moves
 * u = 2 x 0.8 x 450 / 3350 of its HBM, slowing a memory-bound kernel by u / (1 - u). */
static void test_fp8_and_comm_slowdown(void **state) {
    (void)state;
    mt_gpu_table *tab = NULL;
    mt_error err = {0};
    assert_int_equal(mt_gpu_table_new(NULL, &tab, &err), MT_OK);
    const mt_gpu_spec *h100 = mt_gpu_find(tab, "H100-SXM"), *a100 = mt_gpu_find(tab, "A100-80GB");
    mt_work gemm = work_of(MT_OPC_MATMUL, MT_DT_BF16, 1e12, 1e6), thin = work_of(MT_OPC_MATMUL, MT_DT_BF16, 1e6, 1e9);
    mt_work f32 = work_of(MT_OPC_MATMUL, MT_DT_FP32, 1e12, 1e6), relu = work_of(MT_OPC_ELEMWISE, MT_DT_BF16, 1e6, 1e9);
    double cast_ns = 1e9 / (0.8 * 3350e9) * 1e9;
    assert_true(fabs(mt_fp8_gemm_ns(h100, &gemm, 2e6, 1e9, MT_TF32_CONV) - (2e6 * 989.4 / 1978.9 + cast_ns)) < 1e-6);
    assert_true(fabs(mt_fp8_gemm_ns(h100, &thin, 1e6, 0, MT_TF32_CONV) - 0.75e6) < 1e-6);
    assert_true(mt_fp8_gemm_ns(a100, &gemm, 2e6, 1e9, MT_TF32_CONV) == 2e6);
    assert_true(mt_fp8_gemm_ns(h100, &f32, 2e6, 1e9, MT_TF32_CONV) == 2e6);
    assert_false(mt_fp8_gemm(&relu));
    mt_cslow m;
    assert_int_equal(mt_cslow_model(h100, 24, 16, 450e9, 50e9, &m), 1);
    double u = 2 * 0.8 * 450 / 3350.0, v = 2 * 0.85 * 50 / 3350.0;
    assert_true(fabs(m.sm_intra - 24.0 / 108) < 1e-12 && fabs(m.sm_inter - 16.0 / 116) < 1e-12);
    assert_true(fabs(m.mem_intra - u / (1 - u)) < 1e-12 && fabs(m.mem_inter - v / (1 - v)) < 1e-12);
    float s[2];
    mt_cslow_op(&m, h100, &gemm, MT_TF32_CONV, s);
    assert_true(fabsf(s[0] - (float)m.sm_intra) < 1e-6f && fabsf(s[1] - (float)m.sm_inter) < 1e-6f);
    mt_cslow_op(&m, h100, &relu, MT_TF32_CONV, s);
    assert_true(fabsf(s[0] - (float)m.mem_intra) < 1e-6f && fabsf(s[1] - (float)m.mem_inter) < 1e-6f);
    mt_gpu_spec nosm = *h100;
    nosm.sms = 0;
    assert_int_equal(mt_cslow_model(&nosm, 24, 16, 450e9, 50e9, &m), 0);
    assert_int_equal(mt_cslow_model(h100, 132, 16, 450e9, 50e9, &m), 0);
    assert_int_equal(mt_cslow_model(h100, 24, 132, 450e9, 50e9, &m), 0);
    mt_gpu_table_free(tab);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_conv),
        cmocka_unit_test(test_flops_linear_matmul),
        cmocka_unit_test(test_flops_attention),
        cmocka_unit_test(test_classes_and_scaling),
        cmocka_unit_test(test_fit_recovers),
        cmocka_unit_test(test_fit_degrades),
        cmocka_unit_test(test_roofline),
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_cross_gpu_vgg13),
        cmocka_unit_test(test_model_json),
        cmocka_unit_test(test_csv_rows),
        cmocka_unit_test(test_optime_on_trace),
        cmocka_unit_test(test_fp8_and_comm_slowdown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* perfmodel/mathunit.c — the unit table and moving an op between GPUs (see mathunit.h). */
#include "perfmodel/mathunit.h"

#include <math.h>
#include <stddef.h>

static const char *const tf32_names[MT_TF32_COUNT] = {"conv", "all", "none"};

const char *mt_tf32_name(mt_tf32 m) { return (unsigned)m < MT_TF32_COUNT ? tf32_names[m] : "?"; }

/* Columns a matrix op of each data type tries, in order; FP32 (CUDA cores) ends every list and
 * every GPU has it. Fp32 starts at TF32 only when the math mode sends the op there. */
#define MT_UNIT_MAX 4
static const struct {
    mt_dtype data;
    mt_dtype cols[MT_UNIT_MAX];
    int n;
} MATRIX_UNITS[] = {
    {MT_DT_FP32, {MT_DT_TF32, MT_DT_FP32}, 2},
    {MT_DT_BF16, {MT_DT_BF16, MT_DT_FP32}, 2},
    {MT_DT_FP16, {MT_DT_FP16, MT_DT_FP32}, 2},
    {MT_DT_FP8, {MT_DT_FP8, MT_DT_FP16, MT_DT_FP32}, 3},
    {MT_DT_FP64, {MT_DT_FP64, MT_DT_FP32}, 2},
};

static int tf32_allowed(const mt_work *w, mt_tf32 m) {
    if (m == MT_TF32_ALL) return 1;
    return m == MT_TF32_CONV && (w->cls == MT_OPC_CONV || w->cls == MT_OPC_CONV_BWD);
}

mt_dtype mt_unit_column(const mt_gpu_spec *g, const mt_work *w, mt_tf32 m) {
    if (!mt_opclass_is_compute(w->cls))
        return w->dtype == MT_DT_FP64 && g->peak_flops[MT_DT_FP64] > 0 ? MT_DT_FP64 : MT_DT_FP32;
    for (size_t i = 0; i < sizeof MATRIX_UNITS / sizeof MATRIX_UNITS[0]; i++) {
        if (MATRIX_UNITS[i].data != w->dtype) continue;
        for (int k = 0; k < MATRIX_UNITS[i].n; k++) {
            mt_dtype c = MATRIX_UNITS[i].cols[k];
            if (c == MT_DT_TF32 && !tf32_allowed(w, m)) continue;
            if (g->peak_flops[c] > 0) return c;
        }
    }
    return MT_DT_FP32;
}

mt_unit_kind mt_unit_kind_of(mt_dtype column) {
    switch (column) {
    case MT_DT_FP32: return MT_UNIT_CUDA;
    case MT_DT_FP64: return MT_UNIT_FP64;
    default: return MT_UNIT_TENSOR;
    }
}

/* Typical efficiencies on a kind of unit an op did not run on in the trace:
 *   CUDA cores, convolutions  0.96: cuDNN's FP32 convolutions of VGG16 on a V100 take 130.11 ms
 *       for 64 images (1.96 TFLOP, 15.1 of 15.7 TFLOP/s; PaddlePaddle float16_benchmark.md,
 *       cuDNN 7.1)
 *   CUDA cores, other matrix ops and FP64  0.93: cuBLAS SGEMM reaches 14.6 of the V100's 15.7
 *       TFLOP/s (Lambda, "NVIDIA A100 GPU Benchmarks for Deep Learning", 2020)
 *   tensor cores  0.25: fp32 convolutions on TF32 in PyTorch's default NCHW layout reach 0.28
 *       (VGG13 b512) and 0.19 (ResNet-50 b128) of the H100's TF32 peak, FLOP-weighted, in
 *       ../shared/traces */
double mt_unit_efficiency(mt_unit_kind k, mt_opclass c) {
    if (k == MT_UNIT_TENSOR) return 0.25;
    return k == MT_UNIT_CUDA && (c == MT_OPC_CONV || c == MT_OPC_CONV_BWD) ? 0.96 : 0.93;
}

double mt_unit_floor_ns(const mt_gpu_spec *g, const mt_work *w, mt_tf32 m) {
    return mt_roofline_ns(g, mt_unit_column(g, w, m), w->flops, mt_work_bytes(w));
}

double mt_unit_move_ns(const mt_gpu_spec *src, const mt_gpu_spec *dst, const mt_work *w, double t_src_ns,
                       mt_tf32 m) {
    double bw_ratio = dst->mem_Bps > 0 ? src->mem_Bps / dst->mem_Bps : 1.0;
    double floor_src = w ? mt_unit_floor_ns(src, w, m) : 0;
    if (!(floor_src > 0) || !(t_src_ns > 0)) return t_src_ns * bw_ratio;
    mt_dtype cs = mt_unit_column(src, w, m), cd = mt_unit_column(dst, w, m);
    double e = fmin(1.0, floor_src / t_src_ns);
    if (t_src_ns <= MT_UNIT_LATENCY_NS && e < MT_UNIT_LATENCY_EFF) /* latency-bound: kept */
        return fmax(t_src_ns, mt_unit_floor_ns(dst, w, m));
    double e_c = mt_unit_kind_of(cs) == mt_unit_kind_of(cd) ? e : mt_unit_efficiency(mt_unit_kind_of(cd), w->cls);
    double t_c = w->flops / (e_c * mt_gpu_peak(dst, cd)), t_m = mt_work_bytes(w) / (e * dst->mem_Bps);
    return 1e9 * fmax(t_c, t_m);
}

/* perfmodel/fp8.c — FP8 linear GEMMs (fp8.h). */
#include "perfmodel/fp8.h"

static int gemm_class(mt_opclass c) { return c == MT_OPC_MATMUL || c == MT_OPC_MATMUL_BWD; }

int mt_fp8_gemm(const mt_work *w) {
    return gemm_class(w->cls) && w->flops > 0 && (w->dtype == MT_DT_BF16 || w->dtype == MT_DT_FP16);
}

/* Bytes of a tensor use as the work formulas count them (4 per element when unknown). */
static double use_bytes(const mt_tshape *s) {
    double n = s->numel;
    if (s->ndim > 0) {
        n = 1;
        for (int32_t d = 0; d < s->ndim; d++) n *= (double)s->dims[d];
    }
    return n * (s->itemsize > 0 ? s->itemsize : 4);
}

void mt_fp8_cast_bytes(const mt_trace *t, int32_t op, double *act, double *weight) {
    *act = *weight = 0;
    mt_work w;
    mt_work_of_trace_op(t, op, &w);
    if (!mt_fp8_gemm(&w)) return;
    int32_t f = w.cls == MT_OPC_MATMUL_BWD ? t->ops[op].fwd_op : op;
    if (f < 0 || f >= t->n_ops) return;
    mt_opdesc d;
    mt_opdesc_from_trace(t, f, &d);
    if (f != op) { /* backward: the gradient of the forward's output */
        for (int32_t i = 0; i < d.n_out; i++) *act += 2 * use_bytes(&d.out[i]);
        return;
    }
    for (int32_t i = 0; i < d.n_in; i++) { /* the GEMM's operands (a bias, 1-D, is not cast) */
        if (d.in[i].ndim < 2) continue;
        if (d.in[i].role == TRACE_ROLE_WEIGHT) *weight += 2 * use_bytes(&d.in[i]);
        else *act += 2 * use_bytes(&d.in[i]);
    }
}

double mt_fp8_gemm_ns(const mt_gpu_spec *g, const mt_work *w, double t_ns, double cast_bytes, mt_tf32 tf) {
    if (!g || !(g->peak_flops[MT_DT_FP8] > 0) || !mt_fp8_gemm(w) || !(g->mem_Bps > 0)) return t_ns;
    mt_work w8 = *w;
    w8.dtype = MT_DT_FP8;
    w8.bytes_act *= 0.75;
    w8.bytes_fixed *= w->cls == MT_OPC_MATMUL ? 0.5 : 0.75;
    double r16 = mt_unit_floor_ns(g, w, tf), r8 = mt_unit_floor_ns(g, &w8, tf);
    double gemm = r16 > 0 && r8 > 0 ? t_ns * (r8 < r16 ? r8 / r16 : 1) : t_ns;
    return gemm + cast_bytes / (MT_FP8_CAST_EFF * g->mem_Bps) * 1e9;
}

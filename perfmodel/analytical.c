/* perfmodel/analytical.c — see analytical.h. */
#include "perfmodel/analytical.h"

#include <math.h>

/* Share of the H100's 3.35 TB/s each memory-bound class reached in the VGG13 batch-512 Kineto
 * trace (../shared/traces/triosim-vgg13-h100-bs512: bytes at peak bandwidth / measured kernel
 * time, summed over the class): elementwise 0.907 and its backward 0.930, max-pool 0.465, its
 * backward 0.245, Adam's _foreach_ ops 0.581. Norms are not in VGG13: batch norm in training
 * reads its input twice (statistics, then normalisation), so half the elementwise share; the
 * ResNet-50 batch-128 trace, not used for this table, measures 0.42 (forward) and 0.43
 * (backward). Classes measured nowhere (softmax, embedding, loss, copy, unknown) get 0.5. The
 * matrix classes are compute-bound at useful sizes; their memory side runs at the elementwise
 * share. */
static const double MEM_EFF[MT_OPC_COUNT] = {
    [MT_OPC_NONE] = 0.5,         [MT_OPC_CONV] = 0.92,         [MT_OPC_CONV_BWD] = 0.92,
    [MT_OPC_MATMUL] = 0.92,      [MT_OPC_MATMUL_BWD] = 0.92,   [MT_OPC_ATTN] = 0.92,
    [MT_OPC_ATTN_BWD] = 0.92,    [MT_OPC_ELEMWISE] = 0.92,     [MT_OPC_ELEMWISE_BWD] = 0.92,
    [MT_OPC_NORM] = 0.46,        [MT_OPC_NORM_BWD] = 0.46,     [MT_OPC_SOFTMAX] = 0.5,
    [MT_OPC_SOFTMAX_BWD] = 0.5,  [MT_OPC_POOL] = 0.47,         [MT_OPC_POOL_BWD] = 0.25,
    [MT_OPC_EMBEDDING] = 0.5,    [MT_OPC_EMBEDDING_BWD] = 0.5, [MT_OPC_LOSS] = 0.5,
    [MT_OPC_LOSS_BWD] = 0.5,     [MT_OPC_OPTIMIZER] = 0.58,    [MT_OPC_COPY] = 0.5,
    [MT_OPC_COMM] = 0.5,         [MT_OPC_UNKNOWN] = 0.5,
};

double mt_analytical_mem_efficiency(mt_opclass c) {
    return (unsigned)c < MT_OPC_COUNT ? MEM_EFF[c] : 0.5;
}

double mt_analytical_ns(const mt_gpu_spec *g, const mt_work *w, mt_tf32 m) {
    if (!w || !g) return MT_ANALYTICAL_LAUNCH_NS;
    mt_dtype col = mt_unit_column(g, w, m);
    double peak = mt_gpu_peak(g, col);
    double e_c = mt_unit_efficiency(mt_unit_kind_of(col), w->cls);
    double t_c = peak > 0 ? 1e9 * w->flops / (e_c * peak) : 0;
    double t_m = g->mem_Bps > 0 ? 1e9 * mt_work_bytes(w) / (mt_analytical_mem_efficiency(w->cls) * g->mem_Bps) : 0;
    double t = fmax(fmax(t_c, t_m), MT_ANALYTICAL_LAUNCH_NS);
    return isfinite(t) ? t : MT_ANALYTICAL_LAUNCH_NS;
}

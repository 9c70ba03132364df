/* perfmodel/commslow.h — compute slowed by communication: how much longer a compute kernel takes on
 * a GPU while a collective's kernels run beside it.
 *
 * NCCL runs a collective as one kernel with one thread block per channel, each block holding an SM
 * for the collective's whole length, and moves its bytes through HBM (it reads what it sends and
 * writes what it receives). A kernel overlapped with it therefore has:
 *   - S - c of the GPU's S SMs (c channels): a compute-bound kernel (arithmetic intensity at or
 *     above its unit's ridge point, gpuspec.h) runs at (S - c) / S of its speed, a slowdown
 *         s_sm = c / (S - c),
 *     with c the channels NCCL opens on the tier: MT_CSLOW_CHANNELS inside a node, and
 *     MT_CSLOW_CHANNELS_NET for a collective across nodes (its rings go through the NICs: NCCL's
 *     logs of 8-GPU H100 nodes show 16 ring channels across 2-3 nodes, "Channel 00/16" in
 *     NVIDIA/nccl issues 1453 and 1538, against 24 or more on one NVSwitch node, issue 1259);
 *   - the HBM bandwidth the collective leaves: the collective moves u = 2 x e x B / HBM of it (B
 *     the link bandwidth per GPU of the tier it runs on, e the fraction of it NCCL reaches: ring
 *     0.80 on NVLink, 0.85 on NICs, extrapolate/nccl.h; 2 for the read of what is sent and the
 *     write of what is received), so a memory-bound kernel slows by
 *         s_mem = u / (1 - u)   (u at most 0.9).
 * A slowdown s means the kernel runs at 1 / (1 + s) of its speed while the collective runs
 * (sim/simulate.h's rate model). Ops without FLOPs and bytes (no shapes) take s_sm.
 * Defaults: c = MT_CSLOW_CHANNELS / MT_CSLOW_CHANNELS_NET. Checked against the measurements it is built from: 24 blocks
 * of an ncclAllGather on an H100 (132 SMs) beside a GEMM (NVIDIA developer forum, "Compute-
 * communication overlap causes severe GEMM performance degradation", 2025: Nsight Systems) give
 * s_sm = 24 / 108 = 0.22 on an H100; Lee et al., "Characterizing Compute-Communication Overlap in
 * GPU-Accelerated Distributed Deep Learning" (arXiv 2507.03114, 2025) measure an average slowdown
 * of overlapped compute of 18.9 % (at most 40 %) over GPT and Llama layers on 4 x A100 / H100 /
 * MI250 / MI210; Echo (arXiv 2412.12487) names this slowdown a main source of error of simulators
 * at scale. Not modelled: the wave quantisation of a GEMM whose grid was sized to all SMs (the
 * forum's case: its tail doubles the GEMM), several collectives at once (counted as one: their
 * channels are not summed), pipeline point-to-point kernels (few channels).
 * Invariant: every slowdown is >= 0 and finite. Costs: O(1) per op.
 */
#ifndef MT_PERFMODEL_COMMSLOW_H
#define MT_PERFMODEL_COMMSLOW_H

#include <stdint.h>

#include "perfmodel/gpuspec.h"
#include "perfmodel/mathunit.h"
#include "perfmodel/work.h"
#include "tracer/trace.h"

#define MT_CSLOW_CHANNELS 24      /* NCCL channels (blocks, one SM each) a collective in a node holds */
#define MT_CSLOW_CHANNELS_NET 16  /* ... and one across nodes */
#define MT_CSLOW_HBM_USE_MAX 0.9  /* the most of HBM's bandwidth a collective is taken to use */

typedef struct mt_cslow {
    double sm_intra, sm_inter;    /* compute-bound kernels: c / (S - c) beside a collective inside a
                                     node (c = its channels there), across nodes */
    double mem_intra, mem_inter;  /* memory-bound kernels beside a collective inside a node, across */
} mt_cslow;

/* The slowdowns on GPU g beside collectives over links of intra_Bps per GPU inside a node and
 * inter_Bps across nodes (0: that tier's memory-bound slowdown is 0), with ch_intra and ch_inter
 * channels. 0 (and *out zeroed) when g lacks an SM count or HBM bandwidth, or a channel count is
 * negative or >= its SMs; 1 when *out is filled. O(1). */
int mt_cslow_model(const mt_gpu_spec *g, int ch_intra, int ch_inter, double intra_Bps, double inter_Bps,
                   mt_cslow *out);

/* The slowdowns of one op of work w on g under tf32 mode tf: out[0] beside a collective inside a
 * node, out[1] across nodes (compute-bound: sm_intra, sm_inter). O(1). */
void mt_cslow_op(const mt_cslow *m, const mt_gpu_spec *g, const mt_work *w, mt_tf32 tf, float out[2]);

/* Every op of t into out (2 x t->n_ops): mt_cslow_op of its work (mt_work_of_trace_op) under m on
 * g, or, m NULL, `fixed` for both. O(ops). */
void mt_cslow_ops(const mt_cslow *m, const mt_gpu_spec *g, mt_tf32 tf, const mt_trace *t, double fixed, float *out);

#endif

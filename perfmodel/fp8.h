/* perfmodel/fp8.h — the linear layers' GEMMs in FP8, as Transformer Engine (NeMo, Megatron) and
 * torchao's float8 linears (torchtitan) run them with per-tensor scaling.
 *
 * A GEMM of a linear layer (class matmul or matmul_bwd, 2-byte data, FLOPs known) runs on the FP8
 * tensor cores: its roofline moves from its traced column to FP8 with its operands at 1 byte per
 * element (forward: weight bytes halved, activation bytes x 0.75, half of them the bf16 output;
 * backward: all bytes x 0.75), and its measured time scales by that roofline ratio (the same kind
 * of unit: mathunit.h's rule), so a compute-bound GEMM takes peak(bf16) / peak(fp8) of its time
 * (1/2 on Hopper, Blackwell and MI300X: the datasheets' dense peaks). On top, its casts to FP8, each
 * a memory-bound kernel with the tensor's amax reduced in the same pass (TE's cast_transpose):
 * forward, the input and the weight, read at 2 bytes and written as an FP8 copy and its transpose
 * (4 bytes moved per 2-byte element: 2 x their bytes); backward, the output's gradient likewise.
 * They move at MT_FP8_CAST_EFF of HBM bandwidth. The scale update from the amax history is one
 * small kernel per step for all tensors (TE's delayed scaling): not counted.
 * Not modelled: attention in FP8 (TE keeps it bf16 by default), the saved activations (kept as
 * traced: whether FP8 copies save memory depends on how many linears read one input), the output
 * head kept in bf16 by torchtitan (counted in FP8 here).
 * Invariant: mt_fp8_gemm_ns >= the cast time, and <= t_ns + the cast time. O(1).
 */
#ifndef MT_PERFMODEL_FP8_H
#define MT_PERFMODEL_FP8_H

#include <stdint.h>

#include "perfmodel/gpuspec.h"
#include "perfmodel/mathunit.h"
#include "perfmodel/work.h"
#include "tracer/trace.h"

/* Elementwise cast kernels reach about this fraction of HBM bandwidth (large contiguous tensors). */
#define MT_FP8_CAST_EFF 0.8

/* 1 when an op of work w runs in FP8 under an FP8 recipe: a matmul (or its backward) with FLOPs on
 * 2-byte data (bf16, fp16). */
int mt_fp8_gemm(const mt_work *w);

/* The bytes trace op `op`'s FP8 casts move at its traced batch: *act those of activations (and
 * gradients), *weight those of weights (0 for both unless mt_fp8_gemm). O(tensors of the op). */
void mt_fp8_cast_bytes(const mt_trace *t, int32_t op, double *act, double *weight);

/* Time in ns on g of a GEMM of work w that takes t_ns in its traced data type, in FP8, plus its casts
 * of cast_bytes; t_ns when g has no FP8 peak or w is not mt_fp8_gemm. */
double mt_fp8_gemm_ns(const mt_gpu_spec *g, const mt_work *w, double t_ns, double cast_bytes, mt_tf32 tf);

#endif

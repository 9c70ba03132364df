/* perfmodel/mathunit.h — which unit of a GPU an op's arithmetic runs on, and what moving an op's
 * measured time to another GPU gives.
 *
 * Units are peak columns of the GPU table (gpuspec.h) grouped in kinds: CUDA cores (FP32, which
 * also does the vector math of every non-matrix op), FP64 cores, and tensor cores (TF32, BF16,
 * FP16, FP8). A matrix op (convolution, matmul, attention and their backward:
 * mt_opclass_is_compute) runs on the first column of its data type's list that the GPU has
 * (peak > 0); a GPU without a unit runs the op on the next one, as PyTorch does:
 *   fp32  TF32 then FP32 when the math mode sends the op to TF32 (mt_tf32), else FP32
 *   bf16  BF16 then FP32  (V100 and Turing have no BF16 tensor cores: PyTorch emulates in FP32)
 *   fp16  FP16 then FP32
 *   fp8   FP8, FP16, FP32 (Ampere and older have no FP8 tensor cores)
 *   fp64  FP64 then FP32
 * Every other op runs on FP64 for fp64 data, else FP32.
 *
 * Moving an op (mt_unit_move_ns): with F FLOPs and B bytes taking t_src on GPU src, its traced
 * efficiency e = min(1, roofline_src / t_src), roofline = max(F / peak(unit), B / bandwidth), is
 * kept for memory, and for compute when dst runs the op on the same kind of unit; on another
 * kind (a TF32 convolution on a V100, which has no TF32) compute runs at that kind's typical
 * efficiency for its class (mt_unit_efficiency), since what limited the op on the old unit says
 * nothing about the new one:
 *     t_dst = max(F / (e_c · peak_dst), B / (e · bandwidth_dst)),  e_c = e or the kind's
 * so t_dst >= roofline_dst always (e, e_c <= 1). On the same kind this is t_src · roofline_dst /
 * roofline_src, the plain roofline ratio: a compute-bound op scales by the peak ratio of its
 * unit (its data type's column), a memory-bound one by the bandwidth ratio. A latency-bound op
 * (its work explains less than MT_UNIT_LATENCY_EFF of a time of at most MT_UNIT_LATENCY_NS: a
 * launch, a tiny kernel, a synchronisation) keeps its time, t_dst = max(t_src, roofline_dst):
 * kernel launch and scheduling cost about the same few microseconds on every recent GPU. Work
 * with no FLOPs and no bytes (ops without shapes) scales by the bandwidth ratio. Cost: O(1).
 */
#ifndef MT_PERFMODEL_MATHUNIT_H
#define MT_PERFMODEL_MATHUNIT_H

#include "perfmodel/gpuspec.h"
#include "perfmodel/work.h"

/* Which fp32 matrix ops run on TF32 tensor cores where the GPU has them (Ampere and later):
 * conv  PyTorch's default: torch.backends.cudnn.allow_tf32 = True, cuda.matmul.allow_tf32 = False
 * all   matmuls too (torch.backends.cuda.matmul.allow_tf32 = True, or
 *       torch.set_float32_matmul_precision("high"))
 * none  neither (cudnn.allow_tf32 = False): full FP32 everywhere
 * The same mode holds on the traced GPU and on the target (one program). */
typedef enum { MT_TF32_CONV = 0, MT_TF32_ALL, MT_TF32_NONE, MT_TF32_COUNT } mt_tf32;

#define MT_TF32_CHOICES "conv|all|none"

const char *mt_tf32_name(mt_tf32 m);

/* Latency-bound: measured at most 10 us with its roofline under a tenth of that (a kernel takes a
 * few microseconds whatever it does: cudaLaunchKernel's median 6 us in the H100 VGG13 trace,
 * perfmodel/analytical.h). */
#define MT_UNIT_LATENCY_NS 10000.0
#define MT_UNIT_LATENCY_EFF 0.1

typedef enum { MT_UNIT_CUDA = 0, MT_UNIT_FP64, MT_UNIT_TENSOR } mt_unit_kind;

/* The peak column op work w runs at on g under mode m (always one g has, FP32 at worst). */
mt_dtype mt_unit_column(const mt_gpu_spec *g, const mt_work *w, mt_tf32 m);
mt_unit_kind mt_unit_kind_of(mt_dtype column);
/* Fraction of peak large matrix work of class c typically reaches on a kind of unit, used when an
 * op moves to a kind it did not run on in the trace: CUDA cores 0.96 for convolutions, 0.93 for
 * the rest (and FP64), tensor cores 0.25 (sources in mathunit.c). */
double mt_unit_efficiency(mt_unit_kind k, mt_opclass c);
/* Roofline time in ns of w on g under m: max(F / peak(unit), B / bandwidth). */
double mt_unit_floor_ns(const mt_gpu_spec *g, const mt_work *w, mt_tf32 m);
/* Time on dst of work w measured t_src_ns on src (see above); w NULL: the bandwidth ratio. */
double mt_unit_move_ns(const mt_gpu_spec *src, const mt_gpu_spec *dst, const mt_work *w, double t_src_ns,
                       mt_tf32 m);

#endif

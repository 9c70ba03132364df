/* perfmodel/analytical.h — an operator's time on a GPU from its work alone (`--perf-model
 * analytical`): what a CPU-recorded trace is predicted with on a GPU, since its measured times are
 * CPU times and say nothing about any GPU.
 *
 * For work w (FLOPs F, bytes B, class c) on GPU g:
 *     t = max( F / (e_unit · peak(unit)),  B / (e_mem(c) · bandwidth),  t_launch )
 * - unit: the math unit the op runs on (perfmodel/mathunit.h: tensor cores for matrix ops of a
 *   data type the GPU has them for, else CUDA cores; --tf32 decides fp32); e_unit its typical
 *   efficiency, mt_unit_efficiency (tensor cores 0.25, CUDA cores 0.96 convolutions / 0.93 other
 *   matrix ops);
 * - e_mem(c): the share of the memory bandwidth the class reaches (table in analytical.c, measured
 *   on the H100 VGG13 batch-512 trace of ../shared/traces, sources there);
 * - t_launch = 6 us: every op with device work is at least one kernel, and kernels cannot follow
 *   each other faster than they are launched (cudaLaunchKernel's median in that trace).
 * Work with no FLOPs and no bytes (an op without shapes) takes t_launch. Not modelled: the host's
 * own per-op cost (PyTorch's dispatcher), so small ops at small batch come out optimistic.
 * Invariant: the result is >= t_launch and >= the roofline max(F / peak, B / bandwidth).
 * Cost: O(1).
 */
#ifndef MT_PERFMODEL_ANALYTICAL_H
#define MT_PERFMODEL_ANALYTICAL_H

#include "perfmodel/gpuspec.h"
#include "perfmodel/mathunit.h"
#include "perfmodel/work.h"

#define MT_ANALYTICAL_LAUNCH_NS 6000.0

/* Share of the memory bandwidth ops of class c reach (0 < e <= 1). */
double mt_analytical_mem_efficiency(mt_opclass c);

/* Time in ns of work w on g under math mode m (w NULL: t_launch). */
double mt_analytical_ns(const mt_gpu_spec *g, const mt_work *w, mt_tf32 m);

#endif

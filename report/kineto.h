/* report/kineto.h — the simulated step as PyTorch-profiler (Kineto) JSON, one file per rank,
 * `DIR/mitosis_rank{R}.pt.trace.json`, so that Holistic Trace Analysis, TensorBoard's trace viewer
 * and Perfetto open a prediction as they open a real trace.
 *
 * A rank's file: "distributedInfo" first ({"backend": "nccl", "rank": R, "world_size": N}: HTA
 * finds the rank with the pattern `"rank": N`), "deviceProperties" (one GPU), then "traceEvents":
 * the host thread (pid 100000 + R) with "ProfilerStep#1" (cat user_annotation) over the step
 * [0, step) and an empty "ProfilerStep#2" after it (HTA drops the last step's kernels); per GPU
 * kernel a cpu_op and inside it a cuda_runtime cudaLaunchKernel (args "External id",
 * "correlation"), one nanosecond apart, at the kernel's start or just after the previous launch;
 * and the GPU (pid = R mod 8, one tid per stream) with a "kernel" event per recorded span,
 * sharing the launch's correlation and External id:
 *   compute task  stream 7, "mitosis_compute_layer{L}_mb{M}"
 *   collective    stream 20 + group kind, NCCL's kernel name (ncclDevKernel_AllReduce_Sum_f32_RING_LL,
 *                 _AllGather_RING_LL, _ReduceScatter_Sum_f32_RING_LL, _SendRecv for all-to-all,
 *                 _Broadcast_RING_LL, _Reduce_Sum_f32_RING_LL), args "Collective name", "In msg
 *                 nelems", "Out msg nelems" (f32: bytes / 4; all-gather in = out / N,
 *                 reduce-scatter out = in / N), "dtype" Float, "Group size", "Process Group Name"
 *                 (the communicator id of report/chakra.h), "Process Group Description" (dp.3),
 *                 "Process Group Ranks" ("[0, 4]")
 *   pipeline send stream 30, ncclDevKernel_SendRecv, "Collective name" send, "Dst Rank"
 * Times are microseconds with three decimals (whole nanoseconds). So HTA's temporal breakdown of
 * rank R gives: compute = the union of its compute spans, non-compute = the union of its
 * collective and send spans outside compute, idle = the rest of [first kernel, last kernel].
 * Costs: O(spans of the rank) memory per file (sorted by start), files written one at a time.
 */
#ifndef MT_REPORT_KINETO_H
#define MT_REPORT_KINETO_H

#include "report/describe.h"
#include "report/record.h"
#include "util/err.h"

/* Writes the files of every rank `ranks` keeps (NULL: all) into dir (which exists). MT_EIO naming
 * the file on a write failure (the files written by this call are then removed). */
mt_status mt_kineto_write(const mt_report_src *src, const char *dir, const mt_span_filter *ranks, mt_error *err);

#endif

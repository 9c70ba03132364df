/* extrapolate/hostmodel.h — the host (CPU) side of a training step, taken from the trace:
 * how long the host thread spends on each operator, when inside it the op's kernels are
 * launched and on which stream, where it blocks until the device catches up, and where one
 * stream waits for another. extrapolate/hostdev.h runs an op of it on a virtual GPU's streams.
 *
 * Model (what sim/ runs per virtual GPU, one host thread feeding one queue per CUDA stream):
 *  - Host work of op i is the trace's host time from op i's start to op i+1's start (Python,
 *    dispatch, launch calls: everything the thread did), minus the time it spent blocked in
 *    synchronising calls and minus its collective calls (trace colls: issuing the trace's own
 *    collectives, which the extrapolator replaces). The step's host time before its first op
 *    (data loading, Python) is the head; the last op's share runs to the step's host end. An op
 *    that is only a collective call does not run: what is left of its host time (after the
 *    call, before the next op) is added to the op before it that runs, or to the head.
 *  - A kernel is launched at its traced host offset inside the op (again minus earlier blocking
 *    time) on its traced stream, and cannot start before launch + launch latency, nor before
 *    its stream is free. The op's kernels on one stream run back to back as one block of that
 *    stream's part of the op's (possibly rescaled) device time, placed as early as every kernel's
 *    launch allows; so the op ends exactly when a launch-bound last kernel would, and busy time
 *    is exact. A stream's part is the union of the op's kernels on it over the union of all its
 *    compute kernels (1 for an op on one stream), so an op whose kernels overlapped on two
 *    streams in the trace overlaps them again.
 *  - Streams are the trace's streams with compute kernels (stream 0 is the busiest, where the
 *    simulator's own tasks follow the op: collectives wait for it), at most MT_HOST_MAX_STREAMS;
 *    streams that only ran communication (NCCL) are not modelled: the simulator's collectives
 *    replace them, and waits on or by them are dropped.
 *  - At a synchronising call (cudaStreamSynchronize, cudaDeviceSynchronize, a copy to pageable
 *    memory, ...: tracer/ksync.h) the host waits until the device has finished everything
 *    launched before it on the stream it waits for (every stream when the trace does not say);
 *    the traced blocked time of the call is replaced by that modelled wait.
 *  - A stream wait of the trace (trace_wait) records, at its cudaEventRecord's host offset, when
 *    the work launched so far on the stream waited for ends (an event slot), and makes the work
 *    launched on the waiting stream after its cudaStreamWaitEvent start no earlier.
 *  - Resized ops (batch, tensor split, another GPU) keep their host time: dispatch and launch
 *    cost do not depend on tensor sizes. Collectives and pipeline sends the extrapolator adds
 *    cost coll_host_ps of host time each: the CPU time of the trace's own collective calls
 *    (c10d::allreduce_, record_param_comms: the enqueue, and c10d's wait) per collective they
 *    issued when it has any, else MT_HOST_COLL_DEFAULT_NS.
 * Launch latency is the median, over kernels launched while the device was idle, of kernel
 * start minus launch call start (MT_HOST_LAUNCH_DEFAULT_NS when there are none).
 * Times are picoseconds (the engine's unit). Costs: build O(ops x streams + kernels x streams +
 * syncs + waits + calls x their op's calls); running an op O(its events + streams).
 */
#ifndef MT_EXTRAPOLATE_HOSTMODEL_H
#define MT_EXTRAPOLATE_HOSTMODEL_H

#include <stdint.h>

#include "tracer/trace.h"
#include "util/err.h"

#define MT_HOST_COLL_DEFAULT_NS 10000   /* 10 us: host cost of issuing an NCCL collective */
#define MT_HOST_LAUNCH_DEFAULT_NS 5000  /* 5 us: launch call to kernel start */

#define MT_HOST_MAX_STREAMS 16          /* streams modelled; the work of less busy ones goes to stream 0 */

/* Host events of an op, by offset (same offset: launch, sync, record, wait). */
typedef enum { MT_HEV_LAUNCH = 0, MT_HEV_SYNC, MT_HEV_RECORD, MT_HEV_WAIT } mt_hev_kind;

typedef struct mt_hev {
    int64_t off_ps;    /* host work time from the op's host start */
    double frac;       /* LAUNCH: the kernel's share of its stream's part of the op's device time */
    int32_t kind;      /* mt_hev_kind */
    int32_t stream;    /* LAUNCH: its stream; SYNC: the stream waited for, -1 every stream;
                        * RECORD: the stream recorded; WAIT: the waiting stream */
    int32_t slot;      /* RECORD, WAIT: the event slot */
} mt_hev;

typedef struct mt_hostop {
    int64_t host_ps;   /* host work from the op's start to the next op's start */
    int32_t ev_first, ev_count;
} mt_hostop;

typedef struct mt_hostmodel {
    int32_t n_ops;
    mt_hostop *ops;          /* per trace op */
    mt_hev *ev;
    int32_t n_ev;
    int32_t n_streams;       /* streams modelled (>= 1) */
    int32_t stream_id[MT_HOST_MAX_STREAMS]; /* the trace's id of each (-1: unknown) */
    double *share;           /* per op x stream: its stream's part of the op's device time; NULL
                              * with one stream (all of it on stream 0) */
    int32_t n_slots;         /* event slots (one per stream wait of the trace) */
    int32_t n_waits;         /* the trace's stream waits that are modelled */
    int64_t head_ps;         /* host time before the first op */
    int64_t launch_lat_ps;
    int64_t coll_host_ps;
    int32_t n_syncs;         /* synchronising calls in the step */
    int64_t host_total_ps;   /* head + every op's host work */
    int64_t wall_ps;         /* the traced step's wall time (trace step_end - step_start) */
} mt_hostmodel;

/* 1 when the trace has what the model needs: GPU kernels with their launch calls. */
int mt_hostmodel_available(const mt_trace *t);

/* Builds the model; MT_EINVAL naming the trace when mt_hostmodel_available is 0. */
mt_status mt_hostmodel_build(const mt_trace *t, mt_hostmodel **out, mt_error *err);
void mt_hostmodel_free(mt_hostmodel *m);

/* Multiplies every host work time (head, per-op work, launch and sync offsets) by f > 0: a
 * faster (f < 1) or slower host, or the profiler's own overhead removed from the trace's CPU
 * times. Launch latency and the added collectives' host cost are kept. */
void mt_hostmodel_scale(mt_hostmodel *m, double f);

#endif

/* extrapolate/hostmodel.h — the host (CPU) side of a training step, taken from the trace:
 * how long the host thread spends on each operator, when inside it the op's kernels are
 * launched, and where it blocks until the device catches up.
 *
 * Model (what sim/ runs per virtual GPU, one host thread feeding one device queue):
 *  - Host work of op i is the trace's host time from op i's start to op i+1's start (Python,
 *    dispatch, launch calls: everything the thread did), minus the time it spent blocked in
 *    synchronising calls and minus its collective calls (trace colls: issuing the trace's own
 *    collectives, which the extrapolator replaces). The step's host time before its first op
 *    (data loading, Python) is the head; the last op's share runs to the step's host end. An op
 *    that is only a collective call does not run: what is left of its host time (after the
 *    call, before the next op) is added to the op before it that runs, or to the head.
 *  - A kernel is launched at its traced host offset inside the op (again minus earlier blocking
 *    time) and cannot start before launch + launch latency, nor before the device is free.
 *    The op's kernels run back to back as one block of the op's (possibly rescaled) device
 *    time, placed as early as every kernel's launch allows; so the op ends exactly when a
 *    launch-bound last kernel would, and busy time is exact.
 *  - At a synchronising call (cudaStreamSynchronize, cudaDeviceSynchronize, .item()'s
 *    cudaMemcpy, event syncs) the host waits until the device has finished everything launched
 *    before it; the traced duration of the call is replaced by that modelled wait.
 *  - Resized ops (batch, tensor split, another GPU) keep their host time: dispatch and launch
 *    cost do not depend on tensor sizes. Collectives and pipeline sends the extrapolator adds
 *    cost coll_host_ps of host time each: the CPU time of the trace's own collective calls
 *    (c10d::allreduce_, record_param_comms: the enqueue, and c10d's wait) per collective they
 *    issued when it has any, else MT_HOST_COLL_DEFAULT_NS.
 * Launch latency is the median, over kernels launched while the device was idle, of kernel
 * start minus launch call start (MT_HOST_LAUNCH_DEFAULT_NS when there are none).
 * Times are picoseconds (the engine's unit). Costs: build O(ops + kernels + syncs + calls x their
 * op's calls); running an op O(its kernels + syncs).
 */
#ifndef MT_EXTRAPOLATE_HOSTMODEL_H
#define MT_EXTRAPOLATE_HOSTMODEL_H

#include <stdint.h>

#include "tracer/trace.h"
#include "util/err.h"

#define MT_HOST_COLL_DEFAULT_NS 10000   /* 10 us: host cost of issuing an NCCL collective */
#define MT_HOST_LAUNCH_DEFAULT_NS 5000  /* 5 us: launch call to kernel start */

typedef enum { MT_HEV_LAUNCH = 0, MT_HEV_SYNC } mt_hev_kind;

typedef struct mt_hev {
    int64_t off_ps;    /* host work time from the op's host start */
    double frac;       /* LAUNCH: the kernel's share of the op's device time */
    int32_t kind;      /* mt_hev_kind */
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
    int64_t head_ps;         /* host time before the first op */
    int64_t launch_lat_ps;
    int64_t coll_host_ps;
    int32_t n_syncs;         /* synchronising calls in the step */
    int64_t host_total_ps;   /* head + every op's host work */
    int64_t wall_ps;         /* the traced step's wall time (trace step_end - step_start) */
} mt_hostmodel;

/* 1 when the trace has what the model needs: GPU kernels with their launch calls. */
int mt_hostmodel_available(const trace *t);

/* Builds the model; MT_EINVAL naming the trace when mt_hostmodel_available is 0. */
mt_status mt_hostmodel_build(const trace *t, mt_hostmodel **out, mt_error *err);
void mt_hostmodel_free(mt_hostmodel *m);

/* Multiplies every host work time (head, per-op work, launch and sync offsets) by f > 0: a
 * faster (f < 1) or slower host, or the profiler's own overhead removed from the trace's CPU
 * times. Launch latency and the added collectives' host cost are kept. */
void mt_hostmodel_scale(mt_hostmodel *m, double f);

/* Runs trace op `op` with dev_ps of device work: the host starts it at *host, the device is
 * free from dev_free. Returns when its device work ends (its busy block is [end - dev_ps,
 * end]); *host becomes the time the host is done with it; *sync_wait_ps (may be NULL) gets
 * the time the host spent blocked in its synchronising calls. */
int64_t mt_hostmodel_run_op(const mt_hostmodel *m, int32_t op, int64_t dev_ps, int64_t dev_free,
                            int64_t *host, int64_t *sync_wait_ps);

#endif

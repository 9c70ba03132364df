/* run/device.h — what a run's ranks are and where their operator times come from, given the
 * device the trace was recorded on (tracer/device.h), the GPU named by --target-gpu or promised
 * by the topology (dgx-h100 holds H100-SXM: netmodels/topologies.h), --perf-model and --trace-gpu.
 *
 * A GPU-recorded (or unknown) trace: as configured (its measured times, moved to --target-gpu when
 * one is named; the topology's GPU is not applied to it, but the label names it when it differs).
 * A CPU-recorded trace, whose times are CPU times and say nothing about any GPU:
 *   - --trace-gpu is refused (MT_EINVAL, one line);
 *   - with a GPU to predict (--target-gpu, else the topology's): its ranks are that GPU, op times
 *     from the analytical model (perfmodel/analytical.h). --perf-model trace (the default) and
 *     roofline mean it here; linear is refused (it keeps each op's CPU time), and so are
 *     --calibrate / --measured-ms (the measured step is the CPU's) and --host-model trace (a CPU
 *     op's host time includes its compute);
 *   - without one: its ranks are CPU processes like the traced one (the trace model on the CPU
 *     times, switch:N and the like), and every output says "CPU processes"; roofline and
 *     analytical are refused (no GPU to take peaks from).
 * Such a prediction counts GPU time only (no host model can come from CPU times), but eager PyTorch
 * needs host time per op on a GPU too: on the lent H100, the project's own models took 11.7 to 37.5 us
 * of step per operator of their CPU trace (traces/cpu-* re-recorded there; docs/devices.md), so
 * mt_run_device_host_warning says when that would exceed half the predicted step.
 * Invariant: after mt_run_device_resolve, c->pm holds what the performance model is built from,
 * and out->label says in one line what the operator times are.
 */
#ifndef MT_RUN_DEVICE_H
#define MT_RUN_DEVICE_H

#include "run/config.h"
#include "tracer/trace.h"
#include "util/err.h"

typedef struct mt_run_device {
    trace_device recorded_on;  /* the trace's (strings owned by the trace) */
    int cpu_ranks;             /* 1: the ranks are CPU processes (a CPU trace, no GPU named) */
    int analytical;            /* 1: operator times from the analytical model */
    const char *target;        /* the GPU predicted, as named (NULL: the traced device) */
    const char *target_from;   /* "--target-gpu", "the topology", NULL */
    char label[320];           /* "analytical roofline for H100-SXM (trace recorded on CPU: ...)" */
} mt_run_device;

/* Applies the rules above to c (c->pm.kind and c->pm.target_gpu may change) and fills *out.
 * MT_EINVAL with one line naming the flag and what to do for a refused combination. O(1) plus
 * reading the GPU table. */
mt_status mt_run_device_resolve(mt_run_config *c, const mt_trace *t, mt_run_device *out, mt_error *err);

#define MT_EAGER_HOST_US_LO 11.7 /* step per CPU-trace operator on the H100, least host-bound model */
#define MT_EAGER_HOST_US_HI 37.5 /* the most (dlrm-tiny) */

/* After a calibration that scaled the operator times (op_scale != 1) of an analytical model, the
 * label says so instead of "the trace's times are not used". */
void mt_run_device_note_op_scale(mt_run_device *d, double op_scale, const char *source);

/* For a CPU trace predicted on a GPU: a warning in buf when ops_per_gpu operators at
 * MT_EAGER_HOST_US_LO each take more than half of step_ms; 0 (buf "") otherwise. */
int mt_run_device_host_warning(const mt_run_device *d, double ops_per_gpu, double step_ms, char *buf, size_t len);
/* The same rules for the operator-time model alone (perfmodel predict: no topology, NULL; no
 * calibration or host model). */
mt_status mt_run_device_apply(mt_pm_opts *pm, const char *topology, const mt_trace *t, mt_run_device *out,
                              mt_error *err);

#endif

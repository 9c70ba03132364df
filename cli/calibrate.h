/* cli/calibrate.h — calibration of a trace to a step time measured without the profiler.
 *
 * Recording a step slows it: the profiler and the Execution Trace observer run callbacks around
 * every operator. On a GPU the kernels keep their speed but the host (CPU) time between
 * launches grows; on a CPU trace the operators themselves take longer. tracer/collect.py
 * therefore times 10-20 more steps without the profiler and writes the median to meta.json.
 *
 * Calibration finds the factor that makes ONE GPU at the traced batch take that measured time,
 * and then applies it to every simulation of the run (other batch sizes, N GPUs, what-ifs):
 *   - with the host model: the host times (--host-scale), found by bisection, since the step
 *     is a non-decreasing, piecewise-linear function of the host scale. When even no host time
 *     is too slow, the host scale stays at its floor and the operator times are scaled too;
 *   - without it: the operator device times (the 1-GPU step is their sum, so the factor is
 *     measured / simulated, exact).
 * With neither --calibrate nor --measured-ms nothing changes.
 */
#ifndef MT_CLI_CALIBRATE_H
#define MT_CLI_CALIBRATE_H

#include <jansson.h>
#include <stdio.h>

#include "cli/planopts.h"

typedef struct mt_calibration {
    int on;                /* 0: no calibration asked for */
    double measured_ms;    /* the target */
    char source[512];      /* the meta.json it came from, or "--measured-ms" */
    double uncalibrated_ms;/* one GPU, traced batch, before */
    double calibrated_ms;  /* the same after (equal to measured_ms within 1e-6 relative, unless
                              the host floor and operator scaling could not reach it) */
    double host_scale;     /* the factor on host times (1 without the host model) */
    double op_scale;       /* the factor on operator device times */
    int host;              /* the host model was on */
} mt_calibration;

/* The measured step (ms) from the meta.json beside a trace (path0: its folder, or one of its
 * files; the file's name goes to src). MT_EIO when there is no meta.json; MT_EINVAL (naming
 * the file) for a missing or out-of-range step_time_ms.median or a batch other than the
 * trace's; the file's own error when it is not JSON. */
mt_status mt_meta_measured(const char *path0, const trace *t, double *ms, char *src, size_t srclen,
                           mt_error *err);

/* When o asks for it, solves the factors for trace t with performance model pm and stores them
 * in o->host_scale and o->op_scale (so every run made from o uses them). Errors: no meta.json
 * or no measured time in it (name the file and say to pass --measured-ms), a meta.json for
 * another batch than the trace's, --host-scale given as well. */
mt_status mt_calibrate(mt_planopts *o, const trace *t, mt_perfmodel *pm, mt_calibration *cal, mt_error *err);

/* "calibrated ..." line for the text outputs (nothing when off). */
void mt_calibration_print(const mt_calibration *cal, FILE *out);

/* {measured_ms, source, uncalibrated_ms, calibrated_ms, host_scale, op_scale} or null. */
json_t *mt_calibration_json(const mt_calibration *cal);

#endif

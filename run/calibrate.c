/* run/calibrate.c — see calibrate.h. */
#include "run/calibrate.h"

#include <math.h>
#include <string.h>

#include "run/simrun.h"

/* Host scales are searched in [HOST_FLOOR, HOST_CEIL]. */
#define HOST_FLOOR 1e-6
#define HOST_CEIL 1e4
#define REL_TOL 1e-7
/* A measured step below this share of the traced GPU work alone (host time removed) is refused;
 * every shipped H100 recording calibrates with its kernels untouched (operator scale 1). */
#define MIN_OF_GPU_WORK 0.5

/* One GPU at the traced batch with these factors: its step in ms; *host: the host model ran. */
static mt_status one_gpu_ms(const mt_run_config *o, const mt_trace *t, mt_perfmodel *pm, double host_scale,
                            double op_scale, double *ms, int *host, mt_error *err) {
    mt_simrun_cfg cfg;
    mt_simrun_cfg_init(&cfg);
    cfg.plan.gpus = 1;
    cfg.host_model = o->host_model;
    cfg.host_scale = host_scale;
    cfg.op_scale = op_scale;
    mt_simrun run;
    MT_CHECK(mt_simrun_run(t, pm, &cfg, &run, err));
    *ms = (double)run.res->step_ps / 1e9 / run.res->n_steps;
    if (host) *host = run.host != NULL;
    mt_simrun_free(&run);
    return MT_OK;
}

/* Bisection for a non-decreasing, continuous f with f(lo) <= target < f(hi): the largest x with
 * f(x) <= target (within REL_TOL), so that where f is flat (a GPU-bound step does not depend on
 * its host time) the traced times are changed least. which: 0 solves the host scale (operator
 * scale fixed at other), 1 the operator scale (host scale fixed at other). */
static mt_status bisect(const mt_run_config *o, const mt_trace *t, mt_perfmodel *pm, int which, double other,
                        double lo, double f_lo, double hi, double target, double *x, double *fx, mt_error *err) {
    for (int it = 0; it < 80 && hi - lo > 1e-9 * hi; it++) {
        double mid = 0.5 * (lo + hi), fm;
        MT_CHECK(one_gpu_ms(o, t, pm, which ? other : mid, which ? mid : other, &fm, NULL, err));
        if (fm <= target * (1 + REL_TOL)) lo = mid, f_lo = fm;
        else hi = mid;
    }
    *x = lo;
    *fx = f_lo;
    return MT_OK;
}

static mt_status solve(mt_run_config *o, const mt_trace *t, mt_perfmodel *pm, mt_calibration *cal, mt_error *err) {
    if (o->measured_ms > 0) {
        cal->measured_ms = o->measured_ms;
        snprintf(cal->source, sizeof cal->source, "--measured-ms");
    } else {
        if (t->dist.world_size > 1) /* collect.py --dist: meta.json holds the job's step */
            return mt_fail(err, MT_EINVAL, "--calibrate: %s is rank %d of a %d-rank job, whose measured step (meta.json) "
                           "includes its communication: scaling one GPU's operators to it would count that twice; "
                           "give --measured-ms with a one-process step of the same model",
                           t->kineto_path ? t->kineto_path : "the trace", t->dist.rank, t->dist.world_size);
        MT_CHECK(mt_trace_meta_measured(o->paths[0], t, &cal->measured_ms, cal->source, sizeof cal->source, err));
    }
    const double X = cal->measured_ms;
    MT_CHECK(one_gpu_ms(o, t, pm, 1, 1, &cal->uncalibrated_ms, &cal->host, err));
    cal->calibrated_ms = cal->uncalibrated_ms;
    if (!(cal->uncalibrated_ms > 0))
        return mt_fail(err, MT_EINVAL, "the traced step takes no time: nothing to calibrate");
    if (fabs(cal->uncalibrated_ms - X) <= REL_TOL * X) return MT_OK; /* already there */

    if (!cal->host) {
        /* One GPU without a host model: the step is the sum of the operator times. */
        cal->op_scale = X / cal->uncalibrated_ms;
        MT_CHECK(one_gpu_ms(o, t, pm, 1, cal->op_scale, &cal->calibrated_ms, NULL, err));
    } else {
        double floor_ms;
        MT_CHECK(one_gpu_ms(o, t, pm, HOST_FLOOR, 1, &floor_ms, NULL, err));
        if (floor_ms <= X) {
            double lo = HOST_FLOOR, f_lo = floor_ms, hi = 1, f_hi = cal->uncalibrated_ms;
            while (f_hi <= X && hi < HOST_CEIL) {
                lo = hi, f_lo = f_hi;
                hi = fmin(hi * 4, HOST_CEIL);
                MT_CHECK(one_gpu_ms(o, t, pm, hi, 1, &f_hi, NULL, err));
            }
            if (f_hi < X * (1 - REL_TOL))
                return mt_fail(err, MT_EINVAL, "the measured %.3f ms is more than %g times the traced host "
                               "time allows (%.3f ms at most): check the measurement", X, HOST_CEIL, f_hi);
            MT_CHECK(bisect(o, t, pm, 0, 1, lo, f_lo, hi, X, &cal->host_scale, &cal->calibrated_ms, err));
        } else if (X < MIN_OF_GPU_WORK * floor_ms) {
            /* The profiler lengthens the host side, hardly the kernels: a step this much shorter
             * than the traced kernels alone was not this step (a typo, another model or batch). */
            return mt_fail(err, MT_EINVAL, "%s: the measured step %g ms is under %.0f %% of what the traced GPU "
                           "work alone takes (%.3f ms with no host time): check the measurement (or give "
                           "--no-calibrate)", cal->source, X, 100 * MIN_OF_GPU_WORK, floor_ms);
        } else {
            /* Faster than the traced GPU work alone: no host time, and the operators scaled. */
            cal->host_scale = HOST_FLOOR;
            MT_CHECK(bisect(o, t, pm, 1, HOST_FLOOR, 0, 0, 1, X, &cal->op_scale, &cal->calibrated_ms, err));
        }
    }
    cal->host_removed = cal->host && cal->host_scale <= HOST_FLOOR;
    o->op_scale = cal->op_scale;
    return MT_OK;
}

mt_status mt_calibrate(mt_run_config *o, const mt_trace *t, mt_perfmodel *pm, mt_calibration *cal, mt_error *err) {
    memset(cal, 0, sizeof *cal);
    cal->host_scale = cal->op_scale = 1;
    if (!o->calibrate && !(o->measured_ms > 0)) {
        double ms = 0;
        char src[sizeof cal->source];
        if (o->no_calibrate || !t->has_device_time || t->dist.world_size > 1 ||
            !mt_trace_meta_has_measured(o->paths[0]))
            return MT_OK;
        /* No meta.json: nothing to calibrate to. A damaged one is refused, naming it, rather than
         * dropped without a word (the prediction would then keep the profiler's times). */
        mt_status rc = mt_trace_meta_measured(o->paths[0], t, &ms, src, sizeof src, err);
        if (rc == MT_EIO) return MT_OK;
        if (rc != MT_OK)
            return mt_error_prefix(err, "the default calibration of a GPU trace reads its measured step (give "
                                   "--no-calibrate to keep the profiled times, or --measured-ms)");
        cal->automatic = 1;
    }
    if (o->calibrate && o->no_calibrate)
        return mt_fail(err, MT_EINVAL, "--calibrate and --no-calibrate contradict each other: give one of them");
    cal->on = 1;
    /* --host-scale composes with calibration: the traced times are calibrated first (to the step
     * measured on the traced host), then the host times scaled, a faster host (F < 1) making the
     * step no slower. */
    const double user_host_scale = o->host_scale;
    mt_status rc;
    if (!o->pm.target_gpu) {
        rc = solve(o, t, pm, cal, err);
    } else {
        /* The measurement was taken on the traced GPU: solve there, then predict for the target. */
        mt_pm_opts traced = o->pm;
        traced.target_gpu = NULL;
        mt_perfmodel *pm0 = NULL;
        MT_CHECK(mt_perfmodel_new(t, &traced, &pm0, err));
        rc = solve(o, t, pm0, cal, err);
        mt_perfmodel_free(pm0);
    }
    if (rc == MT_OK) o->host_scale = cal->host_scale * user_host_scale;
    return rc;
}

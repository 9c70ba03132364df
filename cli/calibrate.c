/* cli/calibrate.c — see calibrate.h. */
#include "cli/calibrate.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fileio.h"

/* Host scales are searched in [HOST_FLOOR, HOST_CEIL]. */
#define HOST_FLOOR 1e-6
#define HOST_CEIL 1e4
#define REL_TOL 1e-7

mt_status mt_meta_measured(const char *path0, const trace *t, double *ms_out, char *src, size_t srclen,
                           mt_error *err) {
    struct stat st;
    if (stat(path0, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(src, srclen, "%s/meta.json", path0);
    } else {
        const char *slash = strrchr(path0, '/');
        int n = slash ? (int)(slash - path0) : 1;
        snprintf(src, srclen, "%.*s/meta.json", n, slash ? path0 : ".");
    }
    if (stat(src, &st) != 0)
        return mt_fail(err, MT_EIO,
                       "--calibrate needs the measured step time from %s, which does not exist (tracer/collect.py "
                       "writes it beside its traces; or give --measured-ms)", src);
    json_t *m = NULL;
    MT_CHECK(mt_json_load(src, &m, err));
    json_t *med = json_object_get(json_object_get(m, "step_time_ms"), "median");
    json_t *batch = json_object_get(m, "batch");
    double v = json_is_number(med) ? json_number_value(med) : 0;
    json_int_t b = json_is_integer(batch) ? json_integer_value(batch) : 0;
    json_decref(m);
    if (!(v > 0) || v > 1e9) /* as --measured-ms: 1e300 scaled the op times past any simulable step */
        return mt_fail(err, MT_EINVAL, "%s: step_time_ms.median is missing or not a number of ms in (0, 1e9] "
                       "(record with tracer/collect.py --steps N > 0, or give --measured-ms)", src);
    if (b > 0 && t->batch_size > 0 && b != t->batch_size)
        return mt_fail(err, MT_EINVAL, "%s: measured at batch %lld but the trace's batch is %lld "
                       "(use the meta.json recorded with this trace, or give --measured-ms)",
                       src, (long long)b, (long long)t->batch_size);
    *ms_out = v;
    return MT_OK;
}

/* One GPU at the traced batch with these factors: its step in ms; *host: the host model ran. */
static mt_status one_gpu_ms(const mt_planopts *o, const trace *t, mt_perfmodel *pm, double host_scale,
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
static mt_status bisect(const mt_planopts *o, const trace *t, mt_perfmodel *pm, int which, double other,
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

static mt_status solve(mt_planopts *o, const trace *t, mt_perfmodel *pm, mt_calibration *cal, mt_error *err) {
    if (o->measured_ms > 0) {
        cal->measured_ms = o->measured_ms;
        snprintf(cal->source, sizeof cal->source, "--measured-ms");
    } else {
        MT_CHECK(mt_meta_measured(o->paths[0], t, &cal->measured_ms, cal->source, sizeof cal->source, err));
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
        } else {
            /* Faster than the traced GPU work alone: no host time, and the operators scaled. */
            cal->host_scale = HOST_FLOOR;
            MT_CHECK(bisect(o, t, pm, 1, HOST_FLOOR, 0, 0, 1, X, &cal->op_scale, &cal->calibrated_ms, err));
        }
    }
    o->host_scale = cal->host_scale;
    o->op_scale = cal->op_scale;
    return MT_OK;
}

mt_status mt_calibrate(mt_planopts *o, const trace *t, mt_perfmodel *pm, mt_calibration *cal, mt_error *err) {
    memset(cal, 0, sizeof *cal);
    cal->host_scale = cal->op_scale = 1;
    if (!o->calibrate && !(o->measured_ms > 0)) return MT_OK;
    if (o->host_scale != 1)
        return mt_fail(err, MT_EINVAL, "--host-scale and calibration both set the host times: give one of them");
    cal->on = 1;
    if (!o->pm.target_gpu) return solve(o, t, pm, cal, err);
    /* The measurement was taken on the traced GPU: solve there, then predict for the target. */
    mt_pm_opts traced = o->pm;
    traced.target_gpu = NULL;
    mt_perfmodel *pm0 = NULL;
    MT_CHECK(mt_perfmodel_new(t, &traced, &pm0, err));
    mt_status rc = solve(o, t, pm0, cal, err);
    mt_perfmodel_free(pm0);
    return rc;
}

void mt_calibration_print(const mt_calibration *cal, FILE *out) {
    if (!cal->on) return;
    fprintf(out, "calibrated ");
    if (cal->host && cal->host_scale <= HOST_FLOOR) fprintf(out, "host times removed");
    else if (cal->host) fprintf(out, "host times x %.4f", cal->host_scale);
    if (cal->host && cal->op_scale != 1) fprintf(out, ", ");
    if (!cal->host || cal->op_scale != 1) fprintf(out, "operator times x %.4f", cal->op_scale);
    fprintf(out, ": one GPU takes %.3f ms (measured %.3f ms, %s; uncalibrated %.3f ms)\n", cal->calibrated_ms,
            cal->measured_ms, cal->source, cal->uncalibrated_ms);
}

json_t *mt_calibration_json(const mt_calibration *cal) {
    if (!cal->on) return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "measured_ms", json_real(cal->measured_ms));
    json_object_set_new(o, "source", json_string(cal->source));
    json_object_set_new(o, "uncalibrated_ms", json_real(cal->uncalibrated_ms));
    json_object_set_new(o, "calibrated_ms", json_real(cal->calibrated_ms));
    json_object_set_new(o, "host_scale", json_real(cal->host_scale));
    json_object_set_new(o, "op_scale", json_real(cal->op_scale));
    return o;
}

/* run/perfmodel.c — see perfmodel.h. */
#include "run/perfmodel.h"

#include <stdio.h>
#include <string.h>

#include "perfmodel/gpuspec.h"
#include "run/device.h"
#include "run/show.h"
#include "tracer/opclass.h"

mt_trace *mt_run_load_timed(const char *path, mt_error *err) {
    trace_load_opts o;
    mt_trace_load_opts_init(&o);
    mt_trace *t = NULL;
    const char *p[1] = {path};
    if (mt_trace_load(p, 1, &o, &t, err) != MT_OK) return NULL;
    if (mt_trace_check_timed(t, err) != MT_OK) {
        mt_trace_free(t);
        return NULL;
    }
    return t;
}

mt_status mt_run_fit(const char *const *traces, int n_traces, const char *const *csvs, int n_csvs,
                     const char *out_path, mt_linmodel *m, char *warning, size_t warning_len, mt_error *err) {
    mt_pm_data *d = NULL;
    char trace_warning[512] = "";
    mt_status rc = mt_pm_data_new(&d, err);
    for (int i = 0; i < n_traces && rc == MT_OK; i++) {
        mt_trace *t = mt_run_load_timed(traces[i], err);
        if (!t) {
            rc = err && err->code ? err->code : MT_EIO;
            break;
        }
        if (!trace_warning[0]) mt_trace_warning(t, trace_warning, sizeof trace_warning);
        rc = mt_pm_data_add_trace(d, t, err);
        mt_trace_free(t);
    }
    for (int i = 0; i < n_csvs && rc == MT_OK; i++) rc = mt_pm_data_add_csv(d, csvs[i], err);
    if (rc == MT_OK && mt_pm_data_rows(d) == 0)
        rc = mt_fail(err, MT_EINVAL, "no op with shapes and a measured time in the inputs "
                     "(Kineto-only traces carry no shapes: add the Execution Trace)");
    if (rc == MT_OK) rc = mt_linmodel_fit(d, m, err);
    if (rc == MT_OK) rc = mt_linmodel_save(m, out_path, err);
    if (rc == MT_OK && warning) {
        const char *dw = mt_pm_data_warning(d);
        snprintf(warning, warning_len, "%s%s%s", trace_warning, trace_warning[0] && dw[0] ? "; " : "", dw);
    }
    mt_pm_data_free(d);
    return rc;
}

mt_status mt_run_predict(const char *path, const mt_pm_opts *o, double batch, double factor, int32_t tp,
                         mt_prediction *out, mt_error *err) {
    memset(out, 0, sizeof *out);
    if (!(out->t = mt_run_load_timed(path, err))) return err && err->code ? err->code : MT_EIO;
    if (batch > 0) {
        if (out->t->batch_size <= 0) {
            mt_prediction_free(out);
            return mt_fail(err, MT_EINVAL, "the trace's batch size is unknown: use --batch-factor instead of --batch");
        }
        factor = batch / (double)out->t->batch_size;
    }
    out->batch_factor = factor > 0 ? factor : 1;
    out->tp = tp;
    mt_pm_opts opts = *o; /* a CPU trace: the analytical model for a named GPU (run/device.h) */
    mt_run_device dev;
    mt_status rc = mt_run_device_apply(&opts, NULL, out->t, &dev, err);
    if (rc == MT_OK) rc = mt_perfmodel_new(out->t, &opts, &out->pm, err);
    if (rc != MT_OK) {
        mt_prediction_free(out);
        return rc;
    }
    mt_predicted_step *v = &out->view;
    *v = (mt_predicted_step){.path = path, .t = out->t, .kind = opts.kind, .batch_factor = out->batch_factor, .tp = tp,
                             .source = mt_perfmodel_source_gpu(out->pm), .target = mt_perfmodel_target_gpu(out->pm),
                             .tf32 = opts.tf32, .floor_ns = mt_perfmodel_floor_ns(out->pm, out->batch_factor, tp),
                             .warning = mt_perfmodel_warning(out->pm)};
    mt_perfmodel_step_ns(out->pm, out->batch_factor, tp, v->predicted_ns);
    for (int p = 0; p < TRACE_PHASE_COUNT; p++) v->traced_ns[p] = (double)out->t->phase_ns[p];
    mt_trace_warning(out->t, out->trace_warning, sizeof out->trace_warning);
    return MT_OK;
}

void mt_prediction_free(mt_prediction *p) {
    mt_perfmodel_free(p->pm);
    mt_trace_free(p->t);
    memset(p, 0, sizeof *p);
}

const char *mt_run_fit_class_warning(const mt_linmodel *m, int k, char *buf, size_t len) {
    if (k < 0 || k >= MT_OPC_COUNT || !m->cls[k].warning[0]) return NULL;
    snprintf(buf, len, "class %s: %s", mt_opclass_name((mt_opclass)k), m->cls[k].warning);
    return buf;
}

mt_status mt_run_show_model(const char *path, int as_json, FILE *out, mt_error *err) {
    mt_linmodel m;
    MT_CHECK(mt_linmodel_load(path, &m, err));
    mt_show_linmodel(out, &m, as_json);
    return MT_OK;
}

mt_status mt_run_gpus(const char *specs, int as_json, FILE *out, mt_error *err) {
    mt_gpu_table *tab = NULL;
    MT_CHECK(mt_gpu_table_new(specs, &tab, err));
    mt_show_gpus(out, tab, as_json);
    mt_gpu_table_free(tab);
    return MT_OK;
}

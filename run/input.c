/* run/input.c — see input.h. */
#include "run/input.h"

#include <string.h>

#include "extrapolate/repeat.h"
#include "report/progress.h"
#include "run/calibrate.h"
#include "run/commfit.h"

void mt_run_inputs_add(const mt_run_config *c, mt_out_inputs *s) {
    for (int i = 0; i < c->n_paths; i++) mt_out_inputs_add(s, c->paths[i], MT_OUT_TRACE);
    for (int i = 0; i < c->n_scenario_paths; i++) mt_out_inputs_add(s, c->scenario_paths[i], MT_OUT_FILE);
    mt_out_inputs_add(s, c->net.topology, MT_OUT_FILE); /* a spec such as fattree:k=8 is no file */
    mt_out_inputs_add(s, c->pm.model_path, MT_OUT_FILE);
    mt_out_inputs_add(s, c->pm.gpu_specs_path, MT_OUT_FILE);
}

mt_status mt_run_check_outputs(const mt_run_config *c, const mt_out_spec *outs, int n, mt_error *err) {
    mt_out_inputs s;
    mt_out_inputs_init(&s);
    mt_run_inputs_add(c, &s);
    mt_status rc = mt_out_check_all(&s, outs, n, err);
    mt_out_inputs_free(&s);
    return rc;
}

mt_status mt_run_input_open(mt_run_config *c, mt_run_input *in, mt_error *err) {
    memset(in, 0, sizeof *in);
    in->cal.host_scale = in->cal.op_scale = 1;
    if (c->n_paths == 0) return mt_fail(err, MT_EINVAL, "no trace given");
    trace_load_opts topts = c->topts;
    mt_progress bar; /* large files: bytes read on a terminal (stderr), nothing when piped */
    if (!topts.on_progress) {
        mt_progress_init_bytes(&bar, stderr, "reading trace");
        topts.on_progress = mt_progress_update;
        topts.progress_ctx = &bar;
    }
    trace *t = NULL;
    mt_status rc = mt_trace_load(c->paths, c->n_paths, &topts, &t, err);
    if (topts.progress_ctx == &bar) mt_progress_end(&bar);
    if (rc != MT_OK) return rc;
    rc = mt_run_input_bind(c, t, in, err);
    if (rc != MT_OK) mt_trace_free(t);
    else in->borrowed = 0; /* this one is ours */
    return rc;
}

mt_status mt_run_input_bind(mt_run_config *c, const trace *t, mt_run_input *in, mt_error *err) {
    memset(in, 0, sizeof *in);
    in->cal.host_scale = in->cal.op_scale = 1;
    in->t = (trace *)t; /* only read: closed by the caller (borrowed) */
    in->borrowed = 1;
    mt_status rc = mt_trace_check_timed(in->t, err);
    if (rc == MT_OK) rc = mt_run_device_resolve(c, in->t, &in->dev, err);
    if (rc == MT_OK && c->blocks > 0) {
        /* the measured step is the traced model's: calibrate on it (asked for, or a GPU trace's by
         * default: run/calibrate.h), then repeat the blocks */
        {
            rc = mt_perfmodel_new(in->t, &c->pm, &in->pm, err);
            if (rc == MT_OK) rc = mt_calibrate(c, in->t, in->pm, &in->cal, err);
            mt_perfmodel_free(in->pm);
            in->pm = NULL;
        }
        trace *rep = NULL;
        if (rc == MT_OK) rc = mt_blocks_repeat(in->t, c->blocks, &rep, err);
        if (rc == MT_OK) in->traced = in->t, in->t = rep;
    }
    if (rc == MT_OK) rc = mt_perfmodel_new(in->t, &c->pm, &in->pm, err);
    if (rc == MT_OK && !in->traced) rc = mt_calibrate(c, in->t, in->pm, &in->cal, err);
    if (rc == MT_OK && in->cal.on) mt_run_device_note_op_scale(&in->dev, in->cal.op_scale, in->cal.source);
    if (rc == MT_OK) rc = mt_commfit_apply(c, in->t, &in->commfit, err);
    if (rc != MT_OK) mt_run_input_close(in);
    return rc;
}

void mt_run_input_close(mt_run_input *in) {
    mt_perfmodel_free(in->pm);
    trace *loaded = in->t;
    if (in->traced) {
        mt_trace_free(in->t);
        loaded = in->traced;
    }
    if (!in->borrowed) mt_trace_free(loaded);
    in->pm = NULL;
    in->t = in->traced = NULL;
}

/* run/input.c — see input.h. */
#include "run/input.h"

#include <string.h>

#include "extrapolate/repeat.h"
#include "extrapolate/seqlen.h"
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
    mt_trace *t = NULL;
    mt_status rc = mt_trace_load(c->paths, c->n_paths, &topts, &t, err);
    if (topts.progress_ctx == &bar) mt_progress_end(&bar);
    if (rc != MT_OK) return rc;
    rc = mt_run_input_bind(c, t, in, err);
    if (rc != MT_OK) mt_trace_free(t);
    else in->borrowed = 0; /* this one is ours */
    return rc;
}

/* --seq, then --blocks, on the loaded trace (input.h). */
static mt_status rewrite(const mt_run_config *c, mt_run_input *in, mt_error *err) {
    mt_trace *loaded = in->t, *cur = in->t, *next = NULL;
    if (c->seq > 0) {
        MT_CHECK(mt_seq_rescale(loaded, c->seq, &cur, &in->seq, err));
        int32_t C = c->plan.cp;
        if (C > 1 && c->seq % (2 * C)) {
            mt_trace_free(cur);
            return mt_fail(err, MT_EINVAL, "--seq %lld with --cp %d: ring attention splits each sequence into 2 x %d "
                           "chunks (two per rank, for the causal load balance), so the sequence must be a multiple "
                           "of %d", (long long)c->seq, (int)C, (int)C, (int)(2 * C));
        }
    }
    if (c->blocks > 0) {
        mt_status rc = mt_blocks_repeat(cur, c->blocks, &next, err);
        if (rc != MT_OK) {
            if (cur != loaded) mt_trace_free(cur);
            return rc;
        }
        if (cur != loaded) in->mid = cur;
        cur = next;
    }
    in->traced = loaded, in->t = cur;
    return MT_OK;
}

mt_status mt_run_input_bind(mt_run_config *c, const mt_trace *t, mt_run_input *in, mt_error *err) {
    memset(in, 0, sizeof *in);
    in->cal.host_scale = in->cal.op_scale = 1;
    in->t = (mt_trace *)t; /* only read: closed by the caller (borrowed) */
    in->borrowed = 1;
    mt_status rc = mt_trace_check_timed(in->t, err);
    if (rc == MT_OK) rc = mt_run_device_resolve(c, in->t, &in->dev, err);
    if (rc == MT_OK && (c->blocks > 0 || c->seq > 0)) {
        /* the measured step is the traced model's: calibrate on it (asked for, or a GPU trace's by
         * default: run/calibrate.h), then rewrite the sequence and repeat the blocks */
        {
            rc = mt_perfmodel_new(in->t, &c->pm, &in->pm, err);
            if (rc == MT_OK) rc = mt_calibrate(c, in->t, in->pm, &in->cal, err);
            mt_perfmodel_free(in->pm);
            in->pm = NULL;
        }
        if (rc == MT_OK) rc = rewrite(c, in, err);
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
    mt_trace *loaded = in->t;
    if (in->traced) {
        mt_trace_free(in->t);
        mt_trace_free(in->mid);
        loaded = in->traced;
    }
    if (!in->borrowed) mt_trace_free(loaded);
    in->pm = NULL;
    in->t = in->traced = in->mid = NULL;
}

/* run/inspect.c — `mitosis inspect` as a library call (run/inspect.h). */
#include <string.h>

#include "report/progress.h"
#include "report/recognised.h"
#include "report/tracesum.h"
#include "run/inspect.h"
#include "run/show.h"
#include "tracer/meta.h"

void mt_inspect_opts_init(mt_inspect_opts *o) {
    memset(o, 0, sizeof *o);
    mt_trace_load_opts_init(&o->load);
}

/* The unprofiled step collect.py measured (meta.json beside the trace), 0 when there is none. */
static double measured_ms(const char *path0, const mt_trace *t) {
    char src[512];
    double v = 0;
    return mt_trace_meta_measured(path0, t, &v, src, sizeof src, NULL) == MT_OK ? v : 0;
}

static mt_status load(const mt_inspect_opts *o, mt_trace **t, mt_error *err) {
    trace_load_opts lo = o->load;
    mt_progress bar; /* large files: bytes read on a terminal */
    if (o->progress) {
        mt_progress_init_bytes(&bar, o->progress, "reading trace");
        lo.on_progress = mt_progress_update;
        lo.progress_ctx = &bar;
    }
    mt_status rc = mt_trace_load(o->paths, o->n_paths, &lo, t, err);
    if (o->progress) mt_progress_end(&bar);
    return rc;
}

static mt_status summarise(const mt_inspect_opts *o, const mt_trace *t, double measured, FILE *out, mt_error *err) {
    if (o->as_json) {
        json_t *j = mt_tracesum_json(t, measured);
        json_t *rec = mt_recognised_json(t, err);
        if (rec) json_object_set_new(j, "recognised", rec);
        if (o->unknown_ops) mt_tracesum_unknown_ops_json(t, j);
        mt_show_json(out, j);
        return MT_OK;
    }
    mt_tracesum_print(out, t, o->list_ops, measured);
    MT_CHECK(mt_recognised_print(out, t, err));
    if (o->unknown_ops) mt_tracesum_print_unknown_ops(out, t);
    return MT_OK;
}

mt_status mt_run_inspect(const mt_inspect_opts *o, FILE *out, char *warning, size_t warning_len, mt_error *err) {
    if (warning && warning_len) warning[0] = '\0';
    if (o->n_paths == 0)
        return mt_fail(err, MT_EINVAL, "no trace given (usage: mitosis inspect TRACE [--json]; see --help)");
    mt_trace *t = NULL;
    MT_CHECK(load(o, &t, err));
    double measured = measured_ms(o->paths[0], t);
    mt_trace *traced = NULL; /* with --blocks: the loaded trace, whose pool the repeated one uses */
    mt_status rc = MT_OK;
    if (o->blocks > 0) {
        mt_trace *rep = NULL;
        rc = mt_blocks_repeat(t, o->blocks, &rep, err);
        if (rc == MT_OK) traced = t, t = rep;
        measured = 0; /* measured for the traced model, not this one */
    }
    if (rc == MT_OK) rc = summarise(o, t, measured, out, err);
    if (rc == MT_OK && warning) mt_trace_warning(t, warning, warning_len);
    mt_trace_free(t);
    mt_trace_free(traced);
    return rc;
}

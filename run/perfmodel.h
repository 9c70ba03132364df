/* run/perfmodel.h — the performance-model commands as calls: fit the per-class linear operator
 * model on traces and CSV files of measured ops, and predict the serial single-GPU step of a
 * trace at another batch, tensor split or GPU (perfmodel/perfmodel.h does the modelling).
 */
#ifndef MT_RUN_PERFMODEL_H
#define MT_RUN_PERFMODEL_H

#include <stdint.h>
#include <stdio.h>

#include "perfmodel/perfmodel.h"
#include "report/perfreport.h"
#include "tracer/trace.h"
#include "util/err.h"

/* A trace with operator times (mt_trace_check_timed), or NULL with err set. */
mt_trace *mt_run_load_timed(const char *path, mt_error *err);

/* Fits the model on every trace and CSV (paths) and saves it to out_path. *warning (may be NULL)
 * gets the data's warning ("" none; valid until the next call). One-line errors name the file. */
mt_status mt_run_fit(const char *const *traces, int n_traces, const char *const *csvs, int n_csvs,
                     const char *out_path, mt_linmodel *m, char *warning, size_t warning_len, mt_error *err);

typedef struct mt_prediction {
    mt_trace *t;                           /* the trace (owned) */
    mt_perfmodel *pm;                   /* the model (owned) */
    double batch_factor;                /* the new batch / the traced batch */
    int32_t tp;                         /* split */
    mt_predicted_step view;             /* what report/perfreport.h prints */
    char trace_warning[512];            /* the trace's own (GPU kernels left out: mt_trace_warning), "" none */
} mt_prediction;

/* Predicts trace `path` at `batch` samples (0: by batch_factor, 0 = 1) split tp ways under o.
 * MT_EINVAL when batch is given and the trace's batch is unknown. Free with
 * mt_prediction_free. */
mt_status mt_run_predict(const char *path, const mt_pm_opts *o, double batch, double batch_factor, int32_t tp,
                         mt_prediction *out, mt_error *err);
void mt_prediction_free(mt_prediction *p);

/* After mt_run_fit: operator class k's fitting warning (too few points, collinear features) as
 * "class NAME: ..." into buf, NULL when class k (0 .. MT_OPC_COUNT-1) has none. */
const char *mt_run_fit_class_warning(const mt_linmodel *m, int k, char *buf, size_t len);
/* `perfmodel show`: the fitted model in `path` to out as text or JSON (run/show.h). */
mt_status mt_run_show_model(const char *path, int as_json, FILE *out, mt_error *err);
/* `perfmodel gpus`: the GPU table (with the extra table `specs`, NULL: none) to out. */
mt_status mt_run_gpus(const char *specs, int as_json, FILE *out, mt_error *err);

#endif

/* run/perfmodel.h — the performance-model commands as calls: fit the per-class linear operator
 * model on traces and CSV files of measured ops, and predict the serial single-GPU step of a
 * trace at another batch, tensor split or GPU (perfmodel/perfmodel.h does the modelling).
 */
#ifndef MT_RUN_PERFMODEL_H
#define MT_RUN_PERFMODEL_H

#include <stdint.h>

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
} mt_prediction;

/* Predicts trace `path` at `batch` samples (0: by batch_factor, 0 = 1) split tp ways under o.
 * MT_EINVAL when batch is given and the trace's batch is unknown. Free with
 * mt_prediction_free. */
mt_status mt_run_predict(const char *path, const mt_pm_opts *o, double batch, double batch_factor, int32_t tp,
                         mt_prediction *out, mt_error *err);
void mt_prediction_free(mt_prediction *p);

#endif

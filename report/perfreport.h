/* report/perfreport.h — the outputs of `mitosis perfmodel`: a fitted linear model as a table
 * (effective TFLOP/s = 1/a, GB/s = 1/b, constant per operator class), the GPU table, and a
 * predicted single-GPU step per phase (text and JSON). Plain views: run/perfmodel.h fills them.
 */
#ifndef MT_REPORT_PERFREPORT_H
#define MT_REPORT_PERFREPORT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "perfmodel/gpuspec.h"
#include "perfmodel/perfmodel.h"
#include "tracer/trace.h"

void mt_perfreport_model(FILE *out, const mt_linmodel *m);
void mt_perfreport_gpus(FILE *out, const mt_gpu_table *tab);
/* The GPU table as JSON: {"gpus": [{name, tflops{fp64, ...} (null: not supported), mem_GBps, mem_GB, note}]}. */
json_t *mt_perfreport_gpus_json(const mt_gpu_table *tab);

/* A serial single-GPU step predicted at another batch, split or GPU. */
typedef struct mt_predicted_step {
    const char *path;                   /* the trace as given */
    const mt_trace *t;
    mt_pm_kind kind;
    double batch_factor;
    int32_t tp;
    const mt_gpu_spec *source, *target; /* the traced GPU (NULL unknown), the target (NULL: same) */
    mt_tf32 tf32;                       /* which fp32 ops run on TF32 */
    double floor_ns;                    /* sum of the ops' rooflines on the target, 0 unknown GPU */
    const char *warning;                /* the model's, "" none */
    double traced_ns[TRACE_PHASE_COUNT];
    double predicted_ns[TRACE_PHASE_COUNT];
} mt_predicted_step;

void mt_perfreport_prediction(FILE *out, const mt_predicted_step *p);
json_t *mt_perfreport_prediction_json(const mt_predicted_step *p);

#endif

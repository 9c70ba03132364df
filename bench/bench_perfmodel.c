/* bench/bench_perfmodel.c — validation of the operator time models on batch scaling.
 *
 * usage: bench_perfmodel [ROOT [SHARED_TRACES]]   (defaults: . and ROOT/../shared/traces)
 *
 * The single-GPU step is serial, so its prediction is the sum over ops of
 * mt_perfmodel_op_time_ns(op, batch_factor). For every case (a trace at batch b, a target batch
 * b' with a measurement) it prints the prediction of each model against
 *   - the target's own op-time sum (the trace at b', or TrioSim's CSV at b'), and
 *   - for the project's CPU traces, the measured step time (meta.json step_time_ms.median),
 *     predicted as median(b) × predicted sum / traced sum (the host time between ops is assumed to
 *     scale like the ops).
 * Models: "triosim" (every op × b'/b, TrioSim's released scaling), "trace" (proportional for
 * batch-dependent ops, optimizer kept), "linear" (fitted on the source trace alone), "linear-multi"
 * (fitted on the other traces of the same model/GPU, never the target), "roofline".
 * Cases whose traces are missing are skipped with a note. Prints markdown tables.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfmodel/perfmodel.h"
#include "tracer/trace.h"
#include "util/fileio.h"

static mt_trace *load(const char *path) {
    trace_load_opts o;
    mt_trace_load_opts_init(&o);
    mt_trace *t = NULL;
    mt_error e = {0};
    const char *p[1] = {path};
    if (mt_trace_load(p, 1, &o, &t, &e) != MT_OK) {
        fprintf(stderr, "skip: %s\n", e.msg);
        return NULL;
    }
    return t;
}

static double meta_median_ms(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    json_t *o = NULL;
    if (mt_json_load(path, &o, NULL) != MT_OK) return 0;
    double v = json_number_value(json_object_get(json_object_get(o, "step_time_ms"), "median"));
    json_decref(o);
    return v;
}

/* Predicted serial op sum in ms; model_path: a fitted model.json or NULL. */
static double predict_ms(const mt_trace *t, mt_pm_kind kind, const char *model_path, double bf,
                         char *warn, size_t wlen) {
    mt_pm_opts o;
    mt_pm_opts_init(&o);
    o.kind = kind;
    o.model_path = model_path;
    mt_perfmodel *pm = NULL;
    mt_error e = {0};
    if (mt_perfmodel_new(t, &o, &pm, &e) != MT_OK) {
        if (warn) snprintf(warn, wlen, "%s", e.msg);
        return NAN;
    }
    double ph[TRACE_PHASE_COUNT], s = 0;
    mt_perfmodel_step_ns(pm, bf, 1, ph);
    for (int p = 0; p < TRACE_PHASE_COUNT; p++) s += ph[p];
    if (warn) snprintf(warn, wlen, "%s", mt_perfmodel_warning(pm));
    mt_perfmodel_free(pm);
    return s / 1e6;
}

/* Fits a model on traces[] (skipping NULLs) and saves it to path; 0 on success. */
static int fit_to(mt_trace *const *traces, int n, const char *csv, const char *path) {
    mt_pm_data *d = NULL;
    mt_linmodel m;
    mt_error e = {0};
    int rc = -1;
    if (mt_pm_data_new(&d, &e) != MT_OK) goto out;
    for (int i = 0; i < n; i++)
        if (traces[i] && mt_pm_data_add_trace(d, traces[i], &e) != MT_OK) goto out;
    if (csv && mt_pm_data_add_csv(d, csv, &e) != MT_OK) goto out;
    if (mt_linmodel_fit(d, &m, &e) != MT_OK || mt_linmodel_save(&m, path, &e) != MT_OK) goto out;
    rc = 0;
out:
    if (rc) fprintf(stderr, "fit: %s\n", e.msg);
    mt_pm_data_free(d);
    return rc;
}

typedef struct acc {
    double sum_abs;
    int n;
} acc;

static void row(const char *cas, const char *model, double pred, double ref, double step_ref,
                double step_pred, acc *a_ops, acc *a_step) {
    double e1 = ref > 0 ? 100.0 * (pred - ref) / ref : NAN;
    printf("| %s | %s | %.2f | %.2f | %+.1f%% |", cas, model, pred, ref, e1);
    if (step_ref > 0) {
        double e2 = 100.0 * (step_pred - step_ref) / step_ref;
        printf(" %.1f | %.1f | %+.1f%% |\n", step_pred, step_ref, e2);
        if (a_step) a_step->sum_abs += fabs(e2), a_step->n++;
    } else {
        printf(" | | |\n");
    }
    if (a_ops && isfinite(e1)) a_ops->sum_abs += fabs(e1), a_ops->n++;
}

enum { M_TRIOSIM, M_TRACE, M_LINEAR, M_MULTI, M_ROOF, M_N };
static const char *const mname[M_N] = {"triosim", "trace", "linear", "linear-multi", "roofline"};

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : ".";
    char shared[1024], path[2048], tmpl[64];
    if (argc > 2) snprintf(shared, sizeof shared, "%s", argv[2]);
    else snprintf(shared, sizeof shared, "%s/../shared/traces", root);
    snprintf(tmpl, sizeof tmpl, "/tmp/bench_perfmodel_%ld.json", (long)getpid());
    acc a_ops[M_N] = {{0}}, a_step[M_N] = {{0}};
    char warn[2048];

    printf("| case | model | predicted ms | target op sum ms | error | predicted step ms | "
           "measured step ms | error |\n|---|---|---|---|---|---|---|---|\n");

    /* VGG13 on H100: batch 512 Kineto+ET trace -> batch 128 (TrioSim CSV; 94.0 ms measured) */
    snprintf(path, sizeof path, "%s/triosim-vgg13-h100-bs512", shared);
    mt_trace *v512 = load(path);
    snprintf(path, sizeof path, "%s/triosim-csv-vgg13-h100-bs128", shared);
    mt_trace *v128 = load(path);
    snprintf(path, sizeof path, "%s/triosim-csv-resnet50-h100-bs128", shared);
    mt_trace *r50 = load(path);
    if (v512 && v128) {
        double bf = 128.0 / 512.0, ref = (double)mt_trace_total_dev_ns(v128) / 1e6;
        double src = (double)mt_trace_total_dev_ns(v512) / 1e6;
        const char *cas = "VGG13 H100 b512→b128";
        row(cas, mname[M_TRIOSIM], src * bf, ref, 94.0, src * bf, &a_ops[M_TRIOSIM], &a_step[M_TRIOSIM]);
        double p = predict_ms(v512, MT_PM_TRACE, NULL, bf, NULL, 0);
        row(cas, mname[M_TRACE], p, ref, 94.0, p, &a_ops[M_TRACE], &a_step[M_TRACE]);
        p = predict_ms(v512, MT_PM_LINEAR, NULL, bf, warn, sizeof warn);
        row(cas, mname[M_LINEAR], p, ref, 94.0, p, &a_ops[M_LINEAR], &a_step[M_LINEAR]);
        if (warn[0]) fprintf(stderr, "vgg linear: %s\n", warn);
        mt_trace *fitset[2] = {v512, r50};
        if (r50 && fit_to(fitset, 2, NULL, tmpl) == 0) {
            p = predict_ms(v512, MT_PM_LINEAR, tmpl, bf, warn, sizeof warn);
            row("VGG13 H100 b512→b128 (fit: VGG13 b512 + ResNet-50 b128)", mname[M_MULTI], p, ref,
                94.0, p, &a_ops[M_MULTI], &a_step[M_MULTI]);
        }
        p = predict_ms(v512, MT_PM_ROOFLINE, NULL, bf, warn, sizeof warn);
        row(cas, mname[M_ROOF], p, ref, 94.0, p, &a_ops[M_ROOF], &a_step[M_ROOF]);
    } else {
        fprintf(stderr, "skip: VGG13 H100 case (../shared/traces absent)\n");
    }

    /* the project's CPU traces: b -> 2b and b -> b/2 */
    static const char *const models[] = {"cpu-resnet18", "cpu-gpt-tiny"};
    static const int batches[] = {4, 8, 16};
    for (size_t mi = 0; mi < 2; mi++) {
        mt_trace *tr[3] = {NULL, NULL, NULL};
        double med[3] = {0, 0, 0};
        char dir[3][1200];
        for (int k = 0; k < 3; k++) {
            snprintf(dir[k], sizeof dir[k], "%s/traces/%s-b%d", root, models[mi], batches[k]);
            tr[k] = load(dir[k]);
            med[k] = meta_median_ms(dir[k]);
        }
        for (int s = 0; s < 3; s++)
            for (int d = 0; d < 3; d++) {
                if (!tr[s] || !tr[d] || (batches[d] != 2 * batches[s] && 2 * batches[d] != batches[s]))
                    continue;
                double bf = (double)batches[d] / batches[s];
                double src = (double)mt_trace_total_dev_ns(tr[s]) / 1e6;
                double ref = (double)mt_trace_total_dev_ns(tr[d]) / 1e6;
                char cas[128];
                snprintf(cas, sizeof cas, "%s b%d→b%d", models[mi] + 4, batches[s], batches[d]);
                double p[M_N];
                p[M_TRIOSIM] = src * bf;
                p[M_TRACE] = predict_ms(tr[s], MT_PM_TRACE, NULL, bf, NULL, 0);
                p[M_LINEAR] = predict_ms(tr[s], MT_PM_LINEAR, NULL, bf, NULL, 0);
                mt_trace *others[3];
                for (int k = 0; k < 3; k++) others[k] = k == d ? NULL : tr[k];
                p[M_MULTI] = fit_to(others, 3, NULL, tmpl) == 0
                                 ? predict_ms(tr[s], MT_PM_LINEAR, tmpl, bf, NULL, 0)
                                 : NAN;
                p[M_ROOF] = NAN; /* CPU: no roofline */
                for (int m = 0; m < M_N; m++) {
                    if (!isfinite(p[m])) continue;
                    row(cas, mname[m], p[m], ref, med[d], med[s] * p[m] / src, &a_ops[m], &a_step[m]);
                }
            }
        for (int k = 0; k < 3; k++) mt_trace_free(tr[k]);
    }
    printf("\n| model | cases | mean abs error vs target op sum | mean abs error vs measured step |\n"
           "|---|---|---|---|\n");
    for (int m = 0; m < M_N; m++)
        if (a_ops[m].n)
            printf("| %s | %d | %.2f%% | %.2f%% |\n", mname[m], a_ops[m].n,
                   a_ops[m].sum_abs / a_ops[m].n, a_step[m].n ? a_step[m].sum_abs / a_step[m].n : NAN);
    remove(tmpl);
    mt_trace_free(v512);
    mt_trace_free(v128);
    mt_trace_free(r50);
    return 0;
}

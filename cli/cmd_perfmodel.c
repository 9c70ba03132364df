/* cli/cmd_perfmodel.c — `mitosis perfmodel fit|show|predict|gpus`: fit the per-class linear
 * operator model, print it, predict a single-GPU step at another batch/GPU, list the GPU table.
 * Also the unknown-op listing of `mitosis inspect --unknown-ops`. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "perfmodel/perfmodel.h"
#include "tracer/trace.h"

#define MAX_INPUTS 64

static void usage(FILE *out) {
    fprintf(out,
            "usage: mitosis perfmodel fit TRACE... [--csv FILE]... -o MODEL.json\n"
            "       mitosis perfmodel show MODEL.json\n"
            "       mitosis perfmodel predict TRACE [--perf-model trace|linear|roofline]\n"
            "                [--model MODEL.json] [--batch N | --batch-factor F] [--tp N]\n"
            "                [--target-gpu GPU] [--gpu-specs FILE] [--json]\n"
            "       mitosis perfmodel gpus [--gpu-specs FILE]\n\n"
            "fit      fits time = a*FLOPs + b*bytes + c (a, b, c >= 0) per operator class on the\n"
            "         ops of every TRACE (a directory or a single trace file each) and of every CSV\n"
            "         of measured ops (columns op, time_us|time_ns|time_ms, input_shapes,\n"
            "         output_shapes, dtype, phase, flops, bytes, class); writes MODEL.json.\n"
            "         Classes with too few points or collinear features get a simpler model and a\n"
            "         warning on stderr.\n"
            "show     prints a fitted model (effective TFLOP/s = 1/a, GB/s = 1/b, constant).\n"
            "predict  the serial single-GPU step (sum of op times) per phase at --batch N (or\n"
            "         --batch-factor F times the traced batch), each op split --tp ways, on\n"
            "         --target-gpu (default: the trace's GPU). --perf-model linear fits on the\n"
            "         trace itself unless --model is given. A resized op keeps its measured\n"
            "         residual: measured x predicted(new)/predicted(traced).\n"
            "gpus     the GPU table: dense peak TFLOP/s per dtype, bandwidth (decimal GB/s), memory;\n"
            "         --gpu-specs FILE adds entries ({\"gpus\": [{\"name\", \"match\", \"mem_GBps\",\n"
            "         \"mem_GB\", \"tflops\": {\"fp32\", \"tf32\", \"bf16\", \"fp16\", \"fp8\", \"fp64\"}}]}).\n");
}

static int fail_line(const char *msg) {
    fprintf(stderr, "mitosis perfmodel: %s\n", msg);
    return 2;
}

/* A trace with operator times (mt_trace_check_timed), or NULL with err set. */
static trace *load_trace(const char *path, mt_error *err) {
    trace_load_opts o;
    mt_trace_load_opts_init(&o);
    trace *t = NULL;
    const char *p[1] = {path};
    if (mt_trace_load(p, 1, &o, &t, err) != MT_OK) return NULL;
    if (mt_trace_check_timed(t, err) != MT_OK) {
        mt_trace_free(t);
        return NULL;
    }
    return t;
}

static void print_model(const mt_linmodel *m) {
    printf("device     %s\n", m->device[0] ? m->device : "(unknown)");
    printf("sources    %d trace%s, %ld CSV rows\n", m->n_traces, m->n_traces == 1 ? "" : "s",
           (long)m->n_csv_rows);
    printf("model      time_ns = a*FLOPs + b*bytes + c per class (non-negative)\n\n");
    printf("%-16s %6s %-18s %12s %12s %12s %9s  %s\n", "class", "n", "terms", "TFLOP/s(1/a)",
           "GB/s(1/b)", "c us", "rel.rmse", "note");
    for (int c = 0; c < MT_OPC_COUNT; c++) {
        const mt_fit_result *r = &m->cls[c];
        if (!r->n) continue;
        char terms[32] = "", a[24] = "-", b[24] = "-";
        static const char *const tn[3] = {"flops", "bytes", "const"};
        for (int j = 0; j < 3; j++)
            if (r->used & (1u << j))
                snprintf(terms + strlen(terms), sizeof terms - strlen(terms), "%s%s",
                         terms[0] ? "+" : "", tn[j]);
        if (!r->used) snprintf(terms, sizeof terms, "(none)");
        if (r->coef[MT_LIN_FLOPS] > 0) snprintf(a, sizeof a, "%.3f", 1e-3 / r->coef[MT_LIN_FLOPS]);
        if (r->coef[MT_LIN_BYTES] > 0) snprintf(b, sizeof b, "%.1f", 1.0 / r->coef[MT_LIN_BYTES]);
        printf("%-16s %6d %-18s %12s %12s %12.2f %8.1f%%  %s\n", mt_opclass_name((mt_opclass)c),
               r->n, terms, a, b, r->coef[MT_LIN_CONST] / 1e3, 100.0 * r->rel_rmse, r->warning);
    }
}

static int cmd_fit(int argc, char **argv) {
    const char *traces[MAX_INPUTS], *csvs[MAX_INPUTS], *outp = NULL;
    int nt = 0, nc = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc) return fail_line("-o needs a file name (the model.json to write)");
            outp = argv[++i];
        } else if (!strcmp(a, "--csv")) {
            if (i + 1 >= argc) return fail_line("--csv needs a file of measured ops");
            if (nc >= MAX_INPUTS) return fail_line("too many --csv files");
            csvs[nc++] = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "mitosis perfmodel: unknown option '%s' (see mitosis perfmodel --help)\n", a);
            return 2;
        } else {
            if (nt >= MAX_INPUTS) return fail_line("too many traces");
            traces[nt++] = a;
        }
    }
    if (!outp) return fail_line("fit needs -o MODEL.json");
    if (!nt && !nc) return fail_line("fit needs at least one TRACE or --csv FILE");
    mt_error err = {0};
    mt_pm_data *d = NULL;
    mt_status rc = mt_pm_data_new(&d, &err);
    for (int i = 0; i < nt && rc == MT_OK; i++) {
        trace *t = load_trace(traces[i], &err);
        if (!t) {
            rc = err.code ? err.code : MT_EIO;
            break;
        }
        rc = mt_pm_data_add_trace(d, t, &err);
        mt_trace_free(t);
    }
    for (int i = 0; i < nc && rc == MT_OK; i++) rc = mt_pm_data_add_csv(d, csvs[i], &err);
    mt_linmodel m;
    if (rc == MT_OK && mt_pm_data_rows(d) == 0)
        rc = mt_fail(&err, MT_EINVAL, "no op with shapes and a measured time in the inputs "
                     "(Kineto-only traces carry no shapes: add the Execution Trace)");
    if (rc == MT_OK) rc = mt_linmodel_fit(d, &m, &err);
    if (rc == MT_OK) rc = mt_linmodel_save(&m, outp, &err);
    if (rc != MT_OK) {
        mt_pm_data_free(d);
        fprintf(stderr, "mitosis perfmodel: %s\n", err.msg);
        return mt_exit_code(rc);
    }
    if (mt_pm_data_warning(d)[0]) fprintf(stderr, "mitosis perfmodel: warning: %s\n", mt_pm_data_warning(d));
    for (int c = 0; c < MT_OPC_COUNT; c++)
        if (m.cls[c].warning[0])
            fprintf(stderr, "mitosis perfmodel: warning: class %s: %s\n",
                    mt_opclass_name((mt_opclass)c), m.cls[c].warning);
    mt_pm_data_free(d);
    print_model(&m);
    printf("\nwrote %s\n", outp);
    return 0;
}

static int cmd_show(int argc, char **argv) {
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 1) return fail_line("show takes one MODEL.json");
    mt_linmodel m;
    mt_error err = {0};
    mt_status rc = mt_linmodel_load(argv[0], &m, &err);
    if (rc != MT_OK) {
        fprintf(stderr, "mitosis perfmodel: %s\n", err.msg);
        return mt_exit_code(rc);
    }
    print_model(&m);
    return 0;
}

static int parse_pos(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v <= 0) return -1;
    *out = v;
    return 0;
}

static int cmd_predict(int argc, char **argv) {
    const char *tpath = NULL;
    mt_pm_opts o;
    mt_pm_opts_init(&o);
    double batch = 0, factor = 0, tp = 1;
    int as_json = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            as_json = 1;
        } else if (!strcmp(a, "--perf-model")) {
            if (!v || mt_pm_kind_parse(v, &o.kind)) return fail_line("--perf-model takes trace, linear or roofline");
            i++;
        } else if (!strcmp(a, "--model")) {
            if (!v) return fail_line("--model needs a MODEL.json");
            o.model_path = v;
            o.kind = MT_PM_LINEAR;
            i++;
        } else if (!strcmp(a, "--target-gpu")) {
            if (!v) return fail_line("--target-gpu needs a GPU name (see mitosis perfmodel gpus)");
            o.target_gpu = v;
            i++;
        } else if (!strcmp(a, "--gpu-specs")) {
            if (!v) return fail_line("--gpu-specs needs a JSON file");
            o.gpu_specs_path = v;
            i++;
        } else if (!strcmp(a, "--batch") || !strcmp(a, "--batch-factor") || !strcmp(a, "--tp")) {
            double x;
            if (!v || parse_pos(v, &x)) {
                fprintf(stderr, "mitosis perfmodel: %s needs a positive number\n", a);
                return 2;
            }
            if (!strcmp(a, "--batch")) batch = x;
            else if (!strcmp(a, "--tp")) tp = x;
            else factor = x;
            i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "mitosis perfmodel: unknown option '%s' (see mitosis perfmodel --help)\n", a);
            return 2;
        } else if (!tpath) {
            tpath = a;
        } else {
            return fail_line("predict takes one TRACE");
        }
    }
    if (!tpath) return fail_line("predict needs a TRACE");
    if (tp != floor(tp)) return fail_line("--tp needs a whole number");
    mt_error err = {0};
    trace *t = load_trace(tpath, &err);
    if (!t) {
        fprintf(stderr, "mitosis perfmodel: %s\n", err.msg);
        return mt_exit_code(err.code ? err.code : MT_EIO);
    }
    if (batch > 0) {
        if (t->batch_size <= 0) {
            mt_trace_free(t);
            return fail_line("the trace's batch size is unknown: use --batch-factor instead of --batch");
        }
        factor = batch / (double)t->batch_size;
    }
    if (factor <= 0) factor = 1;
    mt_perfmodel *pm = NULL;
    mt_status rc = mt_perfmodel_new(t, &o, &pm, &err);
    if (rc != MT_OK) {
        mt_trace_free(t);
        fprintf(stderr, "mitosis perfmodel: %s\n", err.msg);
        return mt_exit_code(rc);
    }
    if (mt_perfmodel_warning(pm)[0]) fprintf(stderr, "mitosis perfmodel: warning: %s\n", mt_perfmodel_warning(pm));
    double pred[TRACE_PHASE_COUNT], tot = 0, ttot = 0;
    mt_perfmodel_step_ns(pm, factor, (int32_t)tp, pred);
    const mt_gpu_spec *src = mt_perfmodel_source_gpu(pm), *dst = mt_perfmodel_target_gpu(pm);
    for (int p = 0; p < TRACE_PHASE_COUNT; p++) tot += pred[p], ttot += (double)t->phase_ns[p];
    if (as_json) {
        json_t *j = json_object(), *tr = json_object(), *pr = json_object();
        for (int p = 0; p < TRACE_PHASE_COUNT; p++) {
            json_object_set_new(tr, mt_trace_phase_name((trace_phase)p), json_real((double)t->phase_ns[p] / 1e6));
            json_object_set_new(pr, mt_trace_phase_name((trace_phase)p), json_real(pred[p] / 1e6));
        }
        json_object_set_new(tr, "total", json_real(ttot / 1e6));
        json_object_set_new(pr, "total", json_real(tot / 1e6));
        json_object_set_new(j, "perf_model", json_string(mt_pm_kind_name(o.kind)));
        json_object_set_new(j, "batch_factor", json_real(factor));
        json_object_set_new(j, "batch", json_real(factor * (double)t->batch_size));
        json_object_set_new(j, "tp", json_integer((json_int_t)tp));
        json_object_set_new(j, "source_gpu", src ? json_string(src->name) : json_null());
        json_object_set_new(j, "target_gpu", json_string(dst ? dst->name : src ? src->name : ""));
        json_object_set_new(j, "traced_ms", tr);
        json_object_set_new(j, "predicted_ms", pr);
        json_object_set_new(j, "warning", json_string(mt_perfmodel_warning(pm)));
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        if (s) puts(s);
        free(s);
        json_decref(j);
    } else {
        printf("trace      %s (batch %ld, %s)\n", tpath, (long)t->batch_size,
               t->device_name ? t->device_name : "unknown device");
        printf("model      %s, batch x%.4g (%.4g), tp %d, on %s\n", mt_pm_kind_name(o.kind), factor,
               factor * (double)t->batch_size, (int)tp,
               dst ? dst->name : src ? src->name : "the traced device");
        printf("\n%-12s %12s %12s\n", "phase", "traced ms", "predicted ms");
        for (int p = 0; p < TRACE_PHASE_COUNT; p++)
            printf("%-12s %12.3f %12.3f\n", mt_trace_phase_name((trace_phase)p),
                   (double)t->phase_ns[p] / 1e6, pred[p] / 1e6);
        printf("%-12s %12.3f %12.3f\n", "total", ttot / 1e6, tot / 1e6);
    }
    mt_perfmodel_free(pm);
    mt_trace_free(t);
    return 0;
}

static int cmd_gpus(int argc, char **argv) {
    const char *specs = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--gpu-specs") && i + 1 < argc) specs = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "mitosis perfmodel: unknown argument '%s' (gpus takes --gpu-specs FILE)\n", argv[i]);
            return 2;
        }
    }
    mt_gpu_table *tab = NULL;
    mt_error err = {0};
    mt_status rc = mt_gpu_table_new(specs, &tab, &err);
    if (rc != MT_OK) {
        fprintf(stderr, "mitosis perfmodel: %s\n", err.msg);
        return mt_exit_code(rc);
    }
    printf("%-12s %8s %8s %8s %8s %8s %8s %9s %7s  %s\n", "gpu", "fp64", "fp32", "tf32", "bf16",
           "fp16", "fp8", "GB/s", "GB", "note");
    for (int i = 0; i < tab->n; i++) {
        const mt_gpu_spec *g = &tab->gpus[i];
        printf("%-12s", g->name);
        for (int d = 0; d < MT_DT_COUNT; d++) {
            if (g->peak_flops[d] > 0) printf(" %8.1f", g->peak_flops[d] / 1e12);
            else printf(" %8s", "-");
        }
        printf(" %9.0f %7.0f  %s\n", g->mem_Bps / 1e9, g->mem_bytes / 1e9, g->note);
    }
    printf("\nTFLOP/s dense (no sparsity); '-' falls back (tf32->fp32, bf16<->fp16, fp8->fp16).\n");
    mt_gpu_table_free(tab);
    return 0;
}

int cmd_perfmodel(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(sub, "fit")) return cmd_fit(argc - 2, argv + 2);
    if (!strcmp(sub, "show")) return cmd_show(argc - 2, argv + 2);
    if (!strcmp(sub, "predict")) return cmd_predict(argc - 2, argv + 2);
    if (!strcmp(sub, "gpus")) return cmd_gpus(argc - 2, argv + 2);
    fprintf(stderr, "mitosis perfmodel: unknown subcommand '%s' (fit, show, predict, gpus)\n", sub);
    return 2;
}

/* ---- inspect --unknown-ops -------------------------------------------------------------- */

typedef struct unk {
    const char *name;
    int count;
    double dev_ns, bytes;
} unk;

/* Distinct unknown-class op names with count, device time and bytes; caller frees. */
static int collect_unknown(const trace *t, unk **out) {
    unk *v = NULL;
    int n = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        mt_work w;
        mt_work_of_trace_op(t, i, &w);
        if (w.cls != MT_OPC_UNKNOWN) continue;
        int k = 0;
        while (k < n && strcmp(v[k].name, t->ops[i].name)) k++;
        if (k == n) {
            unk *nv = realloc(v, (size_t)(n + 1) * sizeof *v);
            if (!nv) break;
            v = nv;
            v[n++] = (unk){t->ops[i].name, 0, 0, 0};
        }
        v[k].count++;
        v[k].dev_ns += (double)t->ops[i].dev_ns;
        v[k].bytes += mt_work_bytes(&w);
    }
    *out = v;
    return n;
}

void perfmodel_print_unknown_ops(const trace *t) {
    unk *v = NULL;
    int n = collect_unknown(t, &v);
    printf("\nunknown ops (no FLOP formula: modelled by the bytes of their tensors): %d\n", n);
    if (n) printf("  %-60s %6s %12s %14s\n", "op", "count", "device ms", "bytes");
    for (int k = 0; k < n; k++)
        printf("  %-60.60s %6d %12.3f %14.0f\n", v[k].name, v[k].count, v[k].dev_ns / 1e6, v[k].bytes);
    free(v);
}

void perfmodel_add_unknown_ops_json(const trace *t, void *json_object_ptr) {
    unk *v = NULL;
    int n = collect_unknown(t, &v);
    json_t *arr = json_array();
    for (int k = 0; k < n; k++)
        json_array_append_new(arr, json_pack("{s:s,s:i,s:f,s:f}", "name", v[k].name, "count",
                                             v[k].count, "time_ms", v[k].dev_ns / 1e6, "bytes",
                                             v[k].bytes));
    json_object_set_new((json_t *)json_object_ptr, "unknown_ops", arr);
    free(v);
}

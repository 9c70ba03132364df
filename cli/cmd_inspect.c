/* cli/cmd_inspect.c — `mitosis inspect TRACE... [--json] [--step N]`: what one step did. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/calibrate.h"
#include "cli/commands.h"
#include "tracer/trace.h"
#include "util/units.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: mitosis inspect TRACE [TRACE2] [--json] [--step N] [--ops] [--unknown-ops]\n\n"
            "TRACE is a directory holding a Kineto + Execution Trace pair (or a TrioSim\n"
            "trace.csv + tensor.csv pair), or the files themselves (.json or .json.gz; formats\n"
            "are detected by content).\n\n"
            "  --json     machine-readable summary (format, device, batch_size, ops, kernels,\n"
            "             layers, time_ms{forward,backward,optimizer,other,total,step_wall,host_wall},\n"
            "             syncs, param_count, param_bytes, link{method,matched,unmatched}, ...)\n"
            "  --step N   with a Kineto trace of several steps, use ProfilerStep#N (default: the\n"
            "             step the Execution Trace covers, else the last one)\n"
            "  --ops      also list every operator (phase, layer, device time, kernels)\n"
            "  --unknown-ops  also list ops the performance model has no formula for (their time\n"
            "             scales with the bytes of their tensors); JSON key unknown_ops\n");
}

static double ms(int64_t ns) { return (double)ns / 1e6; }

/* The unprofiled step collect.py measured (meta.json beside the trace), 0 when there is none. */
static double measured_ms(const char *path0, const trace *t) {
    char src[512];
    double v = 0;
    mt_error e = {0};
    return mt_meta_measured(path0, t, &v, src, sizeof src, &e) == MT_OK ? v : 0;
}

/* The traced step that a measurement compares with: the wall time with kernels, else the op sum. */
static double traced_ms(const trace *t) {
    return t->has_device_time ? ms(t->step_end_ns - t->step_start_ns) : ms(mt_trace_total_dev_ns(t));
}

static json_t *summary_json(const trace *t, double measured) {
    json_t *o = json_object();
    int64_t total = mt_trace_total_dev_ns(t);
    json_object_set_new(o, "format", json_string(mt_trace_format_name(t->format)));
    json_object_set_new(o, "files", json_pack("[s?s?]", t->kineto_path, t->et_path));
    json_object_set_new(o, "device", t->device_name ? json_string(t->device_name) : json_null());
    json_object_set_new(o, "batch_size", json_integer(t->batch_size));
    json_object_set_new(o, "step", json_integer(t->step));
    json_object_set_new(o, "steps_in_trace", json_integer(t->n_steps));
    json_object_set_new(o, "ops", json_integer(t->n_ops));
    json_object_set_new(o, "kernels", json_integer(t->n_kernels));
    json_object_set_new(o, "layers", json_integer(t->n_layers));
    json_object_set_new(o, "tensors", json_integer(t->n_tensors));
    json_t *tm = json_object();
    for (int p = 0; p < TRACE_PHASE_COUNT; p++)
        json_object_set_new(tm, mt_trace_phase_name((trace_phase)p), json_real(ms(t->phase_ns[p])));
    json_object_set_new(tm, "total", json_real(ms(total)));
    json_object_set_new(tm, "device_busy", json_real(ms(t->dev_union_ns)));
    json_object_set_new(tm, "communication", json_real(ms(t->comm_ns)));
    json_object_set_new(tm, "step_wall", json_real(ms(t->step_end_ns - t->step_start_ns)));
    json_object_set_new(tm, "host_wall", json_real(ms(t->host_end_ns - t->step_start_ns)));
    json_object_set_new(o, "syncs", json_integer(t->n_syncs));
    json_object_set_new(o, "measured_step_ms", measured > 0 ? json_real(measured) : json_null());
    json_object_set_new(o, "time_ms", tm);
    json_object_set_new(o, "device_time_source",
                        json_string(t->has_device_time ? "kernels" : "cpu_duration"));
    json_object_set_new(o, "param_count", json_integer(t->param_count));
    json_object_set_new(o, "param_bytes", json_real(t->param_bytes));
    json_t *bytes = json_object();
    json_object_set_new(bytes, "weight", json_real(t->param_bytes));
    json_object_set_new(bytes, "gradient", json_real(t->grad_bytes));
    json_object_set_new(bytes, "optimizer_state", json_real(t->optstate_bytes));
    json_object_set_new(bytes, "activation", json_real(t->activation_bytes));
    json_object_set_new(bytes, "input", json_real(t->input_bytes));
    json_object_set_new(o, "tensor_bytes", bytes);
    json_t *link = json_object();
    json_object_set_new(link, "method", json_string(mt_trace_link_method_name(t->link.method)));
    json_object_set_new(link, "matched", json_integer(t->link.matched));
    json_object_set_new(link, "unmatched", json_integer(t->link.unmatched));
    json_object_set_new(o, "link", link);
    json_t *comm = json_array();
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *op = &t->ops[i];
        if (op->comm == TRACE_COMM_NONE) continue;
        json_array_append_new(comm, json_pack("{s:s,s:s,s:f,s:i,s:f,s:s}", "name", op->name,
                                              "collective", mt_trace_comm_name(op->comm), "bytes",
                                              op->comm_bytes, "group_size", op->comm_group,
                                              "time_ms", ms(op->dev_ns), "phase",
                                              mt_trace_phase_name(op->phase)));
    }
    json_object_set_new(o, "communication", comm);
    return o;
}

static void print_human(const trace *t, int list_ops, double measured) {
    char b1[32], b2[32];
    int64_t total = mt_trace_total_dev_ns(t);
    printf("trace      %s%s%s\n", t->kineto_path ? t->kineto_path : "",
           t->et_path ? " + " : "", t->et_path ? t->et_path : "");
    printf("format     %s   link: %s (%ld matched, %ld unmatched)\n", mt_trace_format_name(t->format),
           mt_trace_link_method_name(t->link.method), (long)t->link.matched, (long)t->link.unmatched);
    printf("device     %s\n", t->device_name ? t->device_name : "(unknown)");
    if (t->step >= 0) printf("step       %d (%d in trace)\n", t->step, t->n_steps);
    printf("batch      %ld\n", (long)t->batch_size);
    printf("params     %ld (%s)\n", (long)t->param_count, mt_fmt_bytes(t->param_bytes, b1, sizeof b1));
    printf("ops        %d outermost, %d kernels, %d layers, %d tensors\n", t->n_ops, t->n_kernels,
           t->n_layers, t->n_tensors);
    printf("\n%-12s %12s %7s\n", "phase", "device ms", "share");
    for (int p = 0; p < TRACE_PHASE_COUNT; p++)
        printf("%-12s %12.3f %6.1f%%\n", mt_trace_phase_name((trace_phase)p), ms(t->phase_ns[p]),
               total ? 100.0 * (double)t->phase_ns[p] / (double)total : 0.0);
    printf("%-12s %12.3f\n", "total", ms(total));
    printf("%-12s %12.3f   (union of kernel intervals%s)\n", "busy", ms(t->dev_union_ns),
           t->has_device_time ? "" : ": no kernels, CPU durations used");
    int64_t wall = t->step_end_ns - t->step_start_ns;
    printf("%-12s %12.3f", "step wall", ms(wall));
    if (t->has_device_time && wall > 0)
        printf("   (GPU busy %.0f%%; host %.3f ms, %d synchronising calls)", 100.0 * (double)t->dev_union_ns / (double)wall,
               ms(t->host_end_ns - t->step_start_ns), t->n_syncs);
    printf("\n");
    if (measured > 0)
        printf("%-12s %12.3f   (median of the unprofiled steps, meta.json: the traced step is %+.1f%%;\n"
               "%-12s %12s    --calibrate takes the profiler's share out)\n", "measured", measured,
               100.0 * (traced_ms(t) - measured) / measured, "", "");
    printf("\ntensors    weights %s, gradients %s, optimizer state %s, activations %s\n",
           mt_fmt_bytes(t->param_bytes, b1, sizeof b1), mt_fmt_bytes(t->grad_bytes, b2, sizeof b2),
           mt_fmt_bytes(t->optstate_bytes, (char[32]){0}, 32),
           mt_fmt_bytes(t->activation_bytes, (char[32]){0}, 32));
    int n_comm = 0;
    for (int32_t i = 0; i < t->n_ops; i++) n_comm += t->ops[i].comm != TRACE_COMM_NONE;
    if (n_comm) {
        printf("\ncommunication (%d ops, %.3f ms device time, kept apart from compute)\n", n_comm,
               ms(t->comm_ns));
        printf("  %-28s %-14s %12s %6s %10s\n", "op", "collective", "bytes", "group", "ms");
        for (int32_t i = 0; i < t->n_ops; i++) {
            const trace_op *op = &t->ops[i];
            if (op->comm == TRACE_COMM_NONE) continue;
            printf("  %-28.28s %-14s %12.0f %6d %10.3f\n", op->name, mt_trace_comm_name(op->comm),
                   op->comm_bytes, op->comm_group, ms(op->dev_ns));
        }
    }
    if (t->n_layers) {
        printf("\n%-32s %5s %12s %12s %12s\n", "layer", "ops", "fwd ms", "bwd ms", "params");
        for (int32_t i = 0; i < t->n_layers; i++) {
            const trace_layer *l = &t->layers[i];
            printf("%-32.32s %5d %12.3f %12.3f %12s\n", l->name, l->n_ops,
                   ms(l->dev_ns[TRACE_PHASE_FORWARD]), ms(l->dev_ns[TRACE_PHASE_BACKWARD]),
                   mt_fmt_bytes(l->param_bytes, b1, sizeof b1));
        }
    }
    if (list_ops) {
        printf("\n%6s %-10s %5s %10s %4s %4s %7s  %s\n", "op", "phase", "layer", "dev ms", "krn",
               "in", "et", "name");
        for (int32_t i = 0; i < t->n_ops; i++) {
            const trace_op *op = &t->ops[i];
            printf("%6d %-10s %5d %10.3f %4d %4d %7ld  %s\n", i, mt_trace_phase_name(op->phase),
                   op->layer, ms(op->dev_ns), op->kernel_count, op->in_count, (long)op->et_node,
                   op->name);
        }
    }
}

int cmd_inspect(int argc, char **argv) {
    const char *paths[8];
    int n_paths = 0, as_json = 0, list_ops = 0, unknown_ops = 0;
    trace_load_opts opts;
    mt_trace_load_opts_init(&opts);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            as_json = 1;
        } else if (!strcmp(a, "--ops")) {
            list_ops = 1;
        } else if (!strcmp(a, "--unknown-ops")) {
            unknown_ops = 1;
        } else if (!strcmp(a, "--step")) {
            char *end;
            if (i + 1 >= argc || (opts.step = (int)strtol(argv[i + 1], &end, 10), *end) ||
                opts.step < 0) {
                fprintf(stderr, "mitosis inspect: --step needs a non-negative step number\n");
                return 2;
            }
            i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "mitosis inspect: unknown option '%s' (see mitosis inspect --help)\n", a);
            return 2;
        } else if (n_paths < 8) {
            paths[n_paths++] = a;
        } else {
            fprintf(stderr, "mitosis inspect: too many trace files\n");
            return 2;
        }
    }
    if (n_paths == 0) {
        usage(stderr);
        return 2;
    }
    trace *t = NULL;
    mt_error err = {0};
    mt_status rc = mt_trace_load(paths, n_paths, &opts, &t, &err);
    if (rc != MT_OK) {
        fprintf(stderr, "mitosis inspect: %s\n", err.msg);
        return mt_exit_code(rc);
    }
    if (as_json) {
        json_t *o = summary_json(t, measured_ms(paths[0], t));
        if (unknown_ops) perfmodel_add_unknown_ops_json(t, o);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        if (s) puts(s);
        free(s);
        json_decref(o);
    } else {
        print_human(t, list_ops, measured_ms(paths[0], t));
        if (unknown_ops) perfmodel_print_unknown_ops(t);
    }
    mt_trace_free(t);
    return 0;
}

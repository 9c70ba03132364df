/* cli/cmd_inspect.c — `mitosis inspect TRACE... [--json] [--step N]`: what one step did
 * (report/tracesum.h writes it). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "extrapolate/repeat.h"
#include "report/progress.h"
#include "report/recognised.h"
#include "report/tracesum.h"
#include "tracer/meta.h"
#include "tracer/trace.h"

enum { MAX_PATHS = 8 };

typedef struct inspect_cli {
    const char *paths[MAX_PATHS];
    int n_paths;
    int as_json, list_ops, unknown_ops;
    int32_t blocks;
    trace_load_opts opts;
} inspect_cli;

#define IN(field) offsetof(inspect_cli, field)
static const mt_flag FLAGS[] = {
    {"--json", MT_FLAG_SWITCH, IN(as_json), NULL, "machine-readable summary (format, device, batch_size, ops, "
     "kernels, layers, time_ms{forward,backward,optimizer,other,total,step_wall,host_wall,collective_calls}, syncs, "
     "collective_calls, streams, stream_waits, param_count, "
     "param_bytes, link{method,matched,unmatched}, ...)"},
    {"--step", MT_FLAG_INT, IN(opts.step), "N", "with a Kineto trace of several steps, use ProfilerStep#N "
     "(default: the step the Execution Trace covers, else the last one)", .lo = 0, .hi = 1 << 30},
    {"--moe-pattern", MT_FLAG_STRING, IN(opts.expert_pattern), "GLOB", "name the experts the recogniser cannot see: record_function annotations or nn.Module paths matching " \
     "GLOB (e.g. 'experts.*', 'expert*'); each match is one expert (docs/recognition.md)"},
    {"--blocks", MT_FLAG_INT, IN(blocks), "N", "the trace with its repeating block repeated or cut to N, as simulate "
     "--blocks N predicts it (docs/blocks.md): its layers, parameters, tensors and times", .lo = 1,
     .hi = MT_REPEAT_MAX_BLOCKS},
    {"--ops", MT_FLAG_SWITCH, IN(list_ops), NULL, "also list every operator (phase, layer, device time, kernels)"},
    {"--unknown-ops", MT_FLAG_SWITCH, IN(unknown_ops), NULL, "also list ops the performance model has no formula "
     "for (their time scales with the bytes of their tensors); JSON key unknown_ops"},
};
#undef IN
static const mt_flag_table TABLE = MT_FLAG_TABLE("Options", FLAGS);
static const mt_flag_table *const TABLES[] = {&TABLE, NULL};

static void usage(FILE *out) {
    fprintf(out, "usage: mitosis inspect TRACE [TRACE2] [--json] [--step N] [--moe-pattern GLOB] [--blocks N] [--ops] [--unknown-ops]\n\n"
                 "TRACE is a directory holding a Kineto + Execution Trace pair (or a TrioSim\n"
                 "trace.csv + tensor.csv pair), or the files themselves (.json or .json.gz; formats\n"
                 "are detected by content).\n\n");
    mt_flags_help(out, &TABLE);
}

const mt_command mt_cmd_inspect = {"inspect", cmd_inspect,
                                   "read a trace (Kineto+ET, TrioSim CSV) and summarise the step",
                                   "TRACE [TRACE2] [--json] [--step N] [--ops] [--unknown-ops]", usage, TABLES, MT_CMD_OWN};

static mt_status take_path(void *ctx, const char *arg, mt_error *err) {
    inspect_cli *c = ctx;
    if (c->n_paths >= MAX_PATHS) return mt_fail(err, MT_EINVAL, "too many trace files (at most %d)", MAX_PATHS);
    c->paths[c->n_paths++] = arg;
    return MT_OK;
}

/* The unprofiled step collect.py measured (meta.json beside the trace), 0 when there is none. */
static double measured_ms(const char *path0, const mt_trace *t) {
    char src[512];
    double v = 0;
    return mt_trace_meta_measured(path0, t, &v, src, sizeof src, NULL) == MT_OK ? v : 0;
}

int cmd_inspect(int argc, char **argv) {
    inspect_cli c;
    memset(&c, 0, sizeof c);
    mt_trace_load_opts_init(&c.opts);
    mt_error err = {0};
    mt_flag_bind bind = {&TABLE, &c};
    mt_flag_seen seen;
    if (mt_flags_parse(argc, argv, 1, &bind, 1, take_path, &c, "inspect", &seen, &err) != MT_OK)
        return mt_cli_fail("inspect", &err);
    if (seen.help) {
        usage(stdout);
        return 0;
    }
    if (c.n_paths == 0) {
        mt_fail(&err, MT_EINVAL, "no trace given (usage: mitosis inspect TRACE [--json]; see --help)");
        return mt_cli_fail("inspect", &err);
    }
    mt_trace *t = NULL;
    mt_progress bar; /* large files: bytes read on a terminal (stderr) */
    mt_progress_init_bytes(&bar, stderr, "reading trace");
    c.opts.on_progress = mt_progress_update;
    c.opts.progress_ctx = &bar;
    mt_status rc = mt_trace_load(c.paths, c.n_paths, &c.opts, &t, &err);
    mt_progress_end(&bar);
    if (rc != MT_OK) return mt_cli_fail("inspect", &err);
    double measured = measured_ms(c.paths[0], t);
    mt_trace *traced = NULL; /* with --blocks: the loaded trace, whose pool the repeated one uses */
    if (c.blocks > 0) {
        mt_trace *rep = NULL;
        if (mt_blocks_repeat(t, c.blocks, &rep, &err) != MT_OK) {
            mt_trace_free(t);
            return mt_cli_fail("inspect", &err);
        }
        traced = t, t = rep;
        measured = 0; /* measured for the traced model, not this one */
    }
    if (c.as_json) {
        json_t *o = mt_tracesum_json(t, measured);
        json_t *rec = mt_recognised_json(t, &err);
        if (rec) json_object_set_new(o, "recognised", rec);
        if (c.unknown_ops) mt_tracesum_unknown_ops_json(t, o);
        mt_cli_print_json(o);
    } else {
        mt_tracesum_print(stdout, t, c.list_ops, measured);
        if (mt_recognised_print(stdout, t, &err) != MT_OK) {
            mt_trace_free(t);
            mt_trace_free(traced);
            return mt_cli_fail("inspect", &err);
        }
        if (c.unknown_ops) mt_tracesum_print_unknown_ops(stdout, t);
    }
    mt_cli_warn_trace("inspect", t);
    mt_trace_free(t);
    mt_trace_free(traced);
    return 0;
}

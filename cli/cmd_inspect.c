/* cli/cmd_inspect.c — `mitosis inspect TRACE... [--json] [--step N]`: what one step did
 * (run/inspect.h does the work; this file holds the flags, the usage text and the call). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "run/inspect.h"

typedef struct inspect_cli {
    mt_inspect_opts o;
} inspect_cli;

#define IN(field) offsetof(inspect_cli, field)
static const mt_flag FLAGS[] = {
    {"--json", MT_FLAG_SWITCH, IN(o.as_json), NULL, "machine-readable summary (format, device, batch_size, ops, "
     "kernels, layers, time_ms{forward,backward,optimizer,other,total,step_wall,host_wall,collective_calls}, syncs, "
     "collective_calls, streams, stream_waits, param_count, "
     "param_bytes, link{method,matched,unmatched}, ...)"},
    {"--step", MT_FLAG_INT, IN(o.load.step), "N", "with a Kineto trace of several steps, use ProfilerStep#N "
     "(default: the step the Execution Trace covers, else the last one)", .lo = 0, .hi = 1 << 30},
    {"--moe-pattern", MT_FLAG_STRING, IN(o.load.expert_pattern), "GLOB", "name the experts the recogniser cannot see: record_function annotations or nn.Module paths matching " \
     "GLOB (e.g. 'experts.*', 'expert*'); each match is one expert (docs/recognition.md)"},
    {"--blocks", MT_FLAG_INT, IN(o.blocks), "N", "the trace with its repeating block repeated or cut to N, as simulate "
     "--blocks N predicts it (docs/blocks.md): its layers, parameters, tensors and times", .lo = 1,
     .hi = MT_INSPECT_BLOCKS_MAX},
    {"--ops", MT_FLAG_SWITCH, IN(o.list_ops), NULL, "also list every operator (phase, layer, device time, kernels)"},
    {"--unknown-ops", MT_FLAG_SWITCH, IN(o.unknown_ops), NULL, "also list ops the performance model has no formula "
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
    mt_inspect_opts *o = &((inspect_cli *)ctx)->o;
    if (o->n_paths >= MT_INSPECT_PATHS)
        return mt_fail(err, MT_EINVAL, "too many trace files (at most %d)", MT_INSPECT_PATHS);
    o->paths[o->n_paths++] = arg;
    return MT_OK;
}

int cmd_inspect(int argc, char **argv) {
    inspect_cli c;
    mt_inspect_opts_init(&c.o);
    c.o.progress = stderr; /* large files: bytes read, on a terminal */
    mt_error err = {0};
    mt_flag_bind bind = {&TABLE, &c};
    mt_flag_seen seen;
    if (mt_flags_parse(argc, argv, 1, &bind, 1, take_path, &c, "inspect", &seen, &err) != MT_OK)
        return mt_cli_fail("inspect", &err);
    if (seen.help) {
        usage(stdout);
        return 0;
    }
    char warning[512];
    if (mt_run_inspect(&c.o, stdout, warning, sizeof warning, &err) != MT_OK) return mt_cli_fail("inspect", &err);
    mt_cli_warn("inspect", warning);
    return 0;
}

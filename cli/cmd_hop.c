/* cli/cmd_hop.c — `mitosis hop`: heterogeneous decentralized training (Hop) on the flow model:
 * the flags, the usage text and the calls (run/hop.h runs it, run/show.h prints it). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "run/flags.h"
#include "run/hop.h"
#include "run/show.h"

typedef struct hop_cli {
    mt_hop_config h;
    int as_json;
} hop_cli;

static mt_status take_slowdown(void *base, const char *v, mt_error *err) {
    mt_hop_config *c = &((hop_cli *)base)->h;
    char *end;
    double lo = strtod(v, &end), hi = 0;
    if (*end != ':' || !(lo >= 1) || (hi = strtod(end + 1, &end), *end) || !(hi >= lo) || !isfinite(hi))
        return mt_fail(err, MT_EINVAL, "--slowdown needs MIN:MAX with 1 <= MIN <= MAX, e.g. 1:10 (got '%s')", v);
    c->smin = lo, c->smax = hi;
    return MT_OK;
}

static const mt_flag FLAGS[] = {
    {"--workers", MT_FLAG_INT, offsetof(hop_cli, h.workers), "N", "workers (default 8)", .lo = 3, .hi = 4096},
    {"--graph", MT_FLAG_STRING, offsetof(hop_cli, h.graphs), "G[,G...]",
     "ring, ring-chords (ring + a chord to the most distant node), double-ring, complete (default "
     "ring-chords,double-ring)"},
    {"--iterations", MT_FLAG_INT, offsetof(hop_cli, h.iterations), "K", "iterations per worker (default 20)", .lo = 1,
     .hi = 1 << 20},
    {"--staleness", MT_FLAG_INT, offsetof(hop_cli, h.staleness), "S", "bounded staleness (default 0)", .lo = 0,
     .hi = 1 << 20},
    {"--backups", MT_FLAG_INT, offsetof(hop_cli, h.backups), "B", "backup workers compared with none (default 1)",
     .lo = 0, .hi = 4096},
    {"--max-gap", MT_FLAG_INT, offsetof(hop_cli, h.max_gap), "G",
     "also wait for every in-neighbour's update of iteration >= k-1-G (Hop's iteration-gap bound; default: none)",
     .lo = 0, .hi = 1 << 20},
    {"--groups", MT_FLAG_INT, offsetof(hop_cli, h.groups), "G", "random groups of slowdowns (default 8)", .lo = 1,
     .hi = 100000},
    {"--seed", MT_FLAG_INT, offsetof(hop_cli, h.seed), "N", "seed of the draws (default 1)", .lo = 0,
     .hi = 2147483647.0},
    {"--slowdown", MT_FLAG_CALL, 0, "MIN:MAX", "communication slowdown range (default 1:10)", .call = take_slowdown},
    {"--compute", MT_FLAG_TIME, offsetof(hop_cli, h.compute_ns), "T", "iteration compute time without a trace (e.g. 80ms)",
     .lo = 0, .lo_open = 1},
    {"--model-bytes", MT_FLAG_BYTES, offsetof(hop_cli, h.model_bytes), "SIZE",
     "update size without a trace (e.g. 100MB)", .lo = 0, .lo_open = 1},
    {"--json", MT_FLAG_SWITCH, offsetof(hop_cli, as_json), NULL, "the table as JSON"},
};
static const mt_flag_table TABLE = MT_FLAG_TABLE("Options", FLAGS);

static void usage(FILE *out) {
    fprintf(out,
            "usage: mitosis hop [TRACE] [options]\n\n"
            "Decentralized training after Hop (ASPLOS'19): each worker computes one training step\n"
            "(the traced step, or --compute), then sends its model (the trace's parameter bytes, or\n"
            "--model-bytes) to its graph neighbours; it starts iteration k once all but B of its\n"
            "in-neighbours have delivered an update of iteration >= k-1-S. Worker i's uplink is\n"
            "slowed by a factor drawn uniformly in [MIN, MAX] per group. Prints, per group and\n"
            "graph, the time for every worker to do K iterations with 0 and with B backup workers.\n\n");
    mt_flags_help(out, &TABLE);
    fprintf(out, "Network: --topology (default switch:N), --link-bw (default %g Gbps here), ... as below; the uplinks\n"
                 "are slowed through the network model, so it must have links (--network flow).\n\n",
            mt_hop_default_Gbps());
    mt_run_net_help(out);
}

static mt_status take_path(void *ctx, const char *a, mt_error *err) {
    mt_hop_config *c = &((hop_cli *)ctx)->h;
    if (c->n_paths >= 2) return mt_fail(err, MT_EINVAL, "too many trace paths (a folder, or its two files)");
    c->paths[c->n_paths++] = a;
    return MT_OK;
}

int cmd_hop(int argc, char **argv) {
    hop_cli c;
    memset(&c, 0, sizeof c);
    mt_hop_config_init(&c.h);
    mt_error err = {0};
    mt_flag_seen seen;
    if (mt_run_net_parse(&c.h.net, argc, argv, &TABLE, &c, take_path, &c, "hop", &seen, &err) != MT_OK)
        return mt_cli_fail("hop", &err);
    if (seen.help) return usage(stdout), 0;
    mt_hop_table t;
    if (mt_run_hop(&c.h, &t, &err) != MT_OK) return mt_cli_fail("hop", &err);
    mt_show_hop(stdout, &t, c.as_json);
    mt_cli_warn("hop", t.warning);
    mt_hop_table_free(&t);
    return 0;
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_hop = {"hop", cmd_hop, "decentralized training with stragglers (Hop): backup workers, staleness, gossip graphs",
                                  "[TRACE] [options]", usage, TABLES, MT_CMD_NET};

/* cli/cmd_topo.c — `mitosis topo SPEC`: nodes, links, bisection bandwidth, a route, --dot
 * (run/topology.h describes it); the flags, the usage text and the call. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "run/flags.h"
#include "run/topology.h"
#include "util/flags.h"

typedef struct topo_cli {
    mt_topology_opts o;
    int want_dst; /* --route SRC was given; DST is the next argument */
} topo_cli;

static mt_status take_route(void *base, const char *v, mt_error *err) {
    (void)err;
    topo_cli *c = base;
    c->o.route_a = v;
    c->want_dst = 1;
    return MT_OK;
}

static const mt_flag FLAGS[] = {
    {"--route", MT_FLAG_CALL, 0, "SRC DST",
     "the route between two nodes named as --dot names them (gpu0, sw0, nic0; default: the first and the last GPU)",
     .call = take_route},
    {"--dot", MT_FLAG_STRING, offsetof(topo_cli, o.dot), "FILE|-", "write the graph for Graphviz (- for stdout)",
     .complete = "file"},
    {"--json", MT_FLAG_SWITCH, offsetof(topo_cli, o.as_json), NULL, "the description as JSON (nodes, links, bandwidth "
     "range, bisection, the route)"},
};
static const mt_flag_table TABLE = MT_FLAG_TABLE("Options", FLAGS);

static void usage(FILE *out) {
    fprintf(out, "usage: mitosis topo SPEC [--route SRC DST] [--dot FILE|-] [network options]\n"
                 "Prints the node and link counts and the bisection bandwidth of a topology and the route\n"
                 "between two nodes (default: the first and last GPU).\n\n");
    mt_flags_help(out, &TABLE);
    mt_run_net_help(out);
}

/* SPEC, or --route's DST. */
static mt_status positional(void *ctx, const char *a, mt_error *err) {
    topo_cli *c = ctx;
    if (c->want_dst) {
        c->o.route_b = a;
        c->want_dst = 0;
    } else if (!c->o.net.topology) {
        c->o.net.topology = a;
    } else {
        return mt_fail(err, MT_EINVAL, "unexpected argument '%s' (the topology is %s; see mitosis topo --help)", a,
                       c->o.net.topology);
    }
    return MT_OK;
}

/* 1: --help printed; 0: parsed; -1: error in err. */
static int parse(topo_cli *c, int argc, char **argv, mt_error *err) {
    mt_flag_seen seen;
    if (mt_run_net_parse(&c->o.net, argc, argv, &TABLE, c, positional, c, "topo", &seen, err) != MT_OK) return -1;
    if (seen.help) return usage(stdout), 1;
    if (c->want_dst) return mt_fail(err, MT_EINVAL, "--route needs two nodes: --route SRC DST"), -1;
    if (!c->o.net.topology) return mt_fail(err, MT_EINVAL, "give a topology, e.g. mitosis topo ring:8 (see --help)"), -1;
    return 0;
}

int cmd_topo(int argc, char **argv) {
    topo_cli c;
    memset(&c, 0, sizeof c);
    mt_topology_opts_init(&c.o);
    c.o.progress = stderr; /* the build, then the bisection's max-flow, on a terminal */
    mt_error err = {0};
    int pr = parse(&c, argc, argv, &err);
    if (pr) return pr > 0 ? 0 : mt_cli_fail("topo", &err);
    return mt_run_topology(&c.o, stdout, &err) == MT_OK ? 0 : mt_cli_fail("topo", &err);
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_topo = {"topo", cmd_topo, "describe a topology: nodes, links, bisection bandwidth, routes",
                                  "SPEC [--route SRC DST] [--dot FILE|-] [network options]", usage, TABLES, MT_CMD_NET};

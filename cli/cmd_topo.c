/* cli/cmd_topo.c — `mitosis topo SPEC`: nodes, links, bisection bandwidth, a route, --dot
 * (report/toposum.h describes it); the flags, the usage text and the calls. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "report/progress.h"
#include "netmodels/netcfg.h"
#include "report/toposum.h"
#include "util/flags.h"
#include "util/outpath.h"

typedef struct topo_cli {
    const char *dot, *ra, *rb;
    int want_dst; /* --route SRC was given; DST is the next argument */
    int as_json;
    mt_netcfg net;
} topo_cli;

static mt_status take_route(void *base, const char *v, mt_error *err) {
    (void)err;
    topo_cli *c = base;
    c->ra = v;
    c->want_dst = 1;
    return MT_OK;
}

static const mt_flag FLAGS[] = {
    {"--route", MT_FLAG_CALL, 0, "SRC DST",
     "the route between two nodes named as --dot names them (gpu0, sw0, nic0; default: the first and the last GPU)",
     .call = take_route},
    {"--dot", MT_FLAG_STRING, offsetof(topo_cli, dot), "FILE|-", "write the graph for Graphviz (- for stdout)",
     .complete = "file"},
    {"--json", MT_FLAG_SWITCH, offsetof(topo_cli, as_json), NULL, "the description as JSON (nodes, links, bandwidth "
     "range, bisection, the route)"},
};
static const mt_flag_table TABLE = MT_FLAG_TABLE("Options", FLAGS);

static void usage(FILE *out) {
    fprintf(out, "usage: mitosis topo SPEC [--route SRC DST] [--dot FILE|-] [network options]\n"
                 "Prints the node and link counts and the bisection bandwidth of a topology and the route\n"
                 "between two nodes (default: the first and last GPU).\n\n");
    mt_flags_help(out, &TABLE);
    mt_netcfg_help(out);
}

/* SPEC, or --route's DST. */
static mt_status positional(void *ctx, const char *a, mt_error *err) {
    topo_cli *c = ctx;
    if (c->want_dst) {
        c->rb = a;
        c->want_dst = 0;
    } else if (!c->net.topology) {
        c->net.topology = a;
    } else {
        return mt_fail(err, MT_EINVAL, "unexpected argument '%s' (the topology is %s; see mitosis topo --help)", a,
                       c->net.topology);
    }
    return MT_OK;
}

/* 1: --help printed; 0: parsed; -1: error in err. */
static int parse(topo_cli *c, int argc, char **argv, mt_error *err) {
    mt_flag_seen seen;
    if (mt_netcfg_parse(&c->net, argc, argv, &TABLE, c, positional, c, "topo", &seen, err) != MT_OK) return -1;
    if (seen.help) return usage(stdout), 1;
    if (c->want_dst) return mt_fail(err, MT_EINVAL, "--route needs two nodes: --route SRC DST"), -1;
    if (!c->net.topology) return mt_fail(err, MT_EINVAL, "give a topology, e.g. mitosis topo ring:8 (see --help)"), -1;
    return 0;
}

static mt_status write_dot(const mt_topo *t, const char *dot, mt_error *err) {
    if (!strcmp(dot, "-")) return mt_topo_write_dot(t, stdout, err); /* stdout is checked at exit */
    mt_out_file f; /* a temporary renamed onto dot when complete (util/outpath.h) */
    MT_CHECK(mt_out_open(&f, dot, "--dot", err));
    return mt_out_close(&f, mt_topo_write_dot(t, f.f, err), err);
}

int cmd_topo(int argc, char **argv) {
    topo_cli c;
    memset(&c, 0, sizeof c);
    mt_netcfg_init(&c.net);
    mt_error err = {0};
    int pr = parse(&c, argc, argv, &err);
    if (pr) return pr > 0 ? 0 : mt_cli_fail("topo", &err);
    if (c.dot) { /* the graph never overwrites the topology file it is drawn from (util/outpath.h) */
        mt_out_inputs ins;
        mt_out_inputs_init(&ins);
        mt_out_inputs_add(&ins, c.net.topology, MT_OUT_FILE);
        mt_status ok = mt_out_check_file(&ins, "--dot", c.dot, &err);
        mt_out_inputs_free(&ins);
        if (ok != MT_OK) return mt_cli_fail("topo", &err);
    }
    mt_topo *t;
    mt_progress pg; /* on a terminal: the build, then the bisection's max-flow (8 s at 131,072 GPUs) */
    char what[320];
    mt_progress_init(&pg, stderr, 0);
    snprintf(what, sizeof what, "topology  building %s", c.net.topology);
    mt_progress_phase(&pg, what);
    if (mt_netcfg_topology(&c.net, 0, &t, &err) != MT_OK) {
        mt_progress_end(&pg);
        return mt_cli_fail("topo", &err);
    }
    snprintf(what, sizeof what, "topology  %s: %d nodes, %d links; bisection (max-flow)", c.net.topology,
             (int)mt_topo_nnodes(t), (int)mt_topo_nlinks(t));
    mt_progress_phase(&pg, what);
    json_t *sum = NULL;
    int dot_stdout = c.dot && !strcmp(c.dot, "-");
    mt_status rc = mt_toposum_json(t, c.ra, c.rb, &sum, &err);
    mt_progress_end(&pg);
    /* the file first: a failing run prints only its error */
    if (rc == MT_OK && c.dot && !dot_stdout) rc = write_dot(t, c.dot, &err);
    if (rc == MT_OK && !c.as_json) mt_toposum_print(stdout, sum);
    if (rc == MT_OK && c.as_json) mt_cli_print_json(sum);
    else json_decref(sum);
    if (rc == MT_OK && dot_stdout) rc = write_dot(t, c.dot, &err);
    mt_topo_free(t);
    return rc == MT_OK ? 0 : mt_cli_fail("topo", &err);
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_topo = {"topo", cmd_topo, "describe a topology: nodes, links, bisection bandwidth, routes",
                                  "SPEC [--route SRC DST] [--dot FILE|-] [network options]", usage, TABLES, MT_CMD_NET};

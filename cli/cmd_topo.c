/* cli/cmd_topo.c — `mitosis topo SPEC`: nodes, links, bisection bandwidth, a route, --dot. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "netmodels/netcfg.h"
#include "util/flags.h"
#include "util/units.h"

typedef struct topo_cli {
    const char *dot, *ra, *rb;
    int want_dst; /* --route SRC was given; DST is the next argument */
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

static mt_status print_summary(mt_topo *t, mt_error *err) {
    int32_t counts[4] = {0}, ngpu;
    mt_topo_gpus(t, &ngpu);
    for (int32_t v = 0; v < mt_topo_nnodes(t); v++) counts[mt_topo_kind(t, v)]++;
    double lo = 0, hi = 0;
    for (int32_t l = 0; l < mt_topo_nlinks(t); l++) {
        double b = mt_topo_link(t, l)->bw_Bps;
        if (l == 0 || b < lo) lo = b;
        if (b > hi) hi = b;
    }
    char b1[32], b2[32];
    printf("topology: %s\n", mt_topo_label(t));
    printf("nodes: %d (%d gpu, %d nic, %d host, %d switch)\n", (int)mt_topo_nnodes(t), (int)counts[0],
           (int)counts[1], (int)counts[2], (int)counts[3]);
    printf("links: %d directed, %s .. %s per link\n", (int)mt_topo_nlinks(t), mt_fmt_bandwidth(lo, b1, sizeof b1),
           mt_fmt_bandwidth(hi, b2, sizeof b2));
    double bis;
    MT_CHECK(mt_topo_bisection_Bps(t, &bis, err));
    if (ngpu >= 2)
        printf("bisection bandwidth: %s (GPU ranks 0..%d -> %d..%d, one direction)\n",
               mt_fmt_bandwidth(bis, b1, sizeof b1), (int)ngpu / 2 - 1, (int)ngpu / 2, (int)ngpu - 1);
    return MT_OK;
}

static mt_status print_route(mt_topo *t, const char *ra, const char *rb, mt_error *err) {
    int32_t ngpu;
    const int32_t *gpus = mt_topo_gpus(t, &ngpu);
    int32_t a = ra ? mt_topo_find(t, ra) : (ngpu ? gpus[0] : -1);
    int32_t b = rb ? mt_topo_find(t, rb) : (ngpu ? gpus[ngpu - 1] : -1);
    if ((ra && a < 0) || (rb && b < 0))
        return mt_fail(err, MT_EINVAL, "--route: unknown node '%s' (names look like gpu0, sw0, nic0)",
                       ra && a < 0 ? ra : rb);
    if (a < 0 || b < 0) return MT_OK;
    const int32_t *r;
    int32_t n;
    MT_CHECK(mt_topo_route(t, a, b, &r, &n, err));
    double bott = 0;
    printf("route %s -> %s: %s", mt_topo_name(t, a), mt_topo_name(t, b), mt_topo_name(t, a));
    for (int32_t h = 0; h < n; h++) {
        const mt_link *l = mt_topo_link(t, r[h]);
        printf(" -> %s", mt_topo_name(t, l->dst));
        if (h == 0 || l->bw_Bps < bott) bott = l->bw_Bps;
    }
    char b1[32], b3[32];
    printf(" (%d hops, latency %s, bottleneck %s)\n", (int)n,
           mt_fmt_time_ns((double)mt_topo_path_latency(t, r, n) / 1000.0, b3, sizeof b3),
           n ? mt_fmt_bandwidth(bott, b1, sizeof b1) : "-");
    return MT_OK;
}

static mt_status write_dot(const mt_topo *t, const char *dot, mt_error *err) {
    FILE *f = strcmp(dot, "-") ? fopen(dot, "w") : stdout;
    if (!f) return mt_fail(err, MT_EIO, "--dot: cannot write '%s' (check the directory exists)", dot);
    mt_status rc = mt_topo_write_dot(t, f, err);
    if (f != stdout) fclose(f);
    return rc;
}

int cmd_topo(int argc, char **argv) {
    topo_cli c;
    memset(&c, 0, sizeof c);
    mt_netcfg_init(&c.net);
    mt_error err = {0};
    int pr = parse(&c, argc, argv, &err);
    if (pr) return pr > 0 ? 0 : mt_cli_fail("topo", &err);
    mt_topo *t;
    if (mt_netcfg_topology(&c.net, 0, &t, &err) != MT_OK) return mt_cli_fail("topo", &err);
    mt_status rc = print_summary(t, &err);
    if (rc == MT_OK) rc = print_route(t, c.ra, c.rb, &err);
    if (rc == MT_OK && c.dot) rc = write_dot(t, c.dot, &err);
    mt_topo_free(t);
    return rc == MT_OK ? 0 : mt_cli_fail("topo", &err);
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_topo = {"topo", cmd_topo, "describe a topology: nodes, links, bisection bandwidth, routes",
                                  "SPEC [--route SRC DST] [--dot FILE|-] [network options]", usage, TABLES, MT_CMD_NET};

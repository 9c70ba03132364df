/* cli/cmd_topo.c — `mitosis topo SPEC`: nodes, links, bisection bandwidth, a route, --dot. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "netmodels/netopts.h"
#include "util/units.h"

static void usage(FILE *out) {
    fprintf(out, "usage: mitosis topo SPEC [--route SRC DST] [--dot FILE|-] [network options]\n"
                 "Prints the node and link counts and the bisection bandwidth of a topology and the route\n"
                 "between two nodes (default: the first and last GPU).\n\n");
    mt_netopts_help(out);
}

int cmd_topo(int argc, char **argv) {
    mt_netopts o;
    mt_netopts_init(&o);
    mt_error err = {0};
    const char *dot = NULL, *ra = NULL, *rb = NULL;
    for (int i = 1; i < argc;) {
        int t = mt_netopts_take(&o, argc, argv, &i, &err);
        if (t < 0) return mt_cli_fail("topo", &err);
        if (t) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--dot") && i + 1 < argc) {
            dot = argv[i + 1];
            i += 2;
        } else if (!strcmp(argv[i], "--route") && i + 2 < argc) {
            ra = argv[i + 1];
            rb = argv[i + 2];
            i += 3;
        } else if (argv[i][0] != '-' && !o.topology) {
            o.topology = argv[i++];
        } else {
            fprintf(stderr, "mitosis topo: unknown or incomplete option '%s' (see mitosis topo --help)\n",
                    argv[i]);
            return 2;
        }
    }
    if (!o.topology) {
        fprintf(stderr, "mitosis topo: give a topology, e.g. mitosis topo ring:8 (see --help)\n");
        return 2;
    }
    mt_topo *t;
    if (mt_netopts_topology(&o, &t, &err) != MT_OK) return mt_cli_fail("topo", &err);
    int rc = 0;
    int32_t counts[4] = {0}, ngpu;
    const int32_t *gpus = mt_topo_gpus(t, &ngpu);
    for (int32_t v = 0; v < mt_topo_nnodes(t); v++) counts[mt_topo_kind(t, v)]++;
    double lo = 0, hi = 0;
    for (int32_t l = 0; l < mt_topo_nlinks(t); l++) {
        double b = mt_topo_link(t, l)->bw_Bps;
        if (l == 0 || b < lo) lo = b;
        if (b > hi) hi = b;
    }
    char b1[32], b2[32], b3[32];
    printf("topology: %s\n", mt_topo_label(t));
    printf("nodes: %d (%d gpu, %d nic, %d host, %d switch)\n", (int)mt_topo_nnodes(t),
           (int)counts[0], (int)counts[1], (int)counts[2], (int)counts[3]);
    printf("links: %d directed, %s .. %s per link\n", (int)mt_topo_nlinks(t),
           mt_fmt_bandwidth(lo, b1, sizeof b1), mt_fmt_bandwidth(hi, b2, sizeof b2));
    double bis;
    if (mt_topo_bisection_Bps(t, &bis, &err) != MT_OK) {
        rc = mt_cli_fail("topo", &err);
        goto out;
    }
    if (ngpu >= 2)
        printf("bisection bandwidth: %s (GPU ranks 0..%d -> %d..%d, one direction)\n",
               mt_fmt_bandwidth(bis, b1, sizeof b1), (int)ngpu / 2 - 1, (int)ngpu / 2, (int)ngpu - 1);
    int32_t a = ra ? mt_topo_find(t, ra) : (ngpu ? gpus[0] : -1);
    int32_t b = rb ? mt_topo_find(t, rb) : (ngpu ? gpus[ngpu - 1] : -1);
    if ((ra && a < 0) || (rb && b < 0)) {
        fprintf(stderr, "mitosis topo: --route: unknown node '%s' (names look like gpu0, sw0, nic0)\n",
                ra && a < 0 ? ra : rb);
        rc = 2;
        goto out;
    }
    if (a >= 0 && b >= 0) {
        const int32_t *r;
        int32_t n;
        if (mt_topo_route(t, a, b, &r, &n, &err) != MT_OK) {
            rc = mt_cli_fail("topo", &err);
            goto out;
        }
        double bott = 0;
        printf("route %s -> %s: %s", mt_topo_name(t, a), mt_topo_name(t, b), mt_topo_name(t, a));
        for (int32_t h = 0; h < n; h++) {
            const mt_link *l = mt_topo_link(t, r[h]);
            printf(" -> %s", mt_topo_name(t, l->dst));
            if (h == 0 || l->bw_Bps < bott) bott = l->bw_Bps;
        }
        printf(" (%d hops, latency %s, bottleneck %s)\n", (int)n,
               mt_fmt_time_ns((double)mt_topo_path_latency(t, r, n) / 1000.0, b3, sizeof b3),
               n ? mt_fmt_bandwidth(bott, b1, sizeof b1) : "-");
    }
    if (dot) {
        FILE *f = strcmp(dot, "-") ? fopen(dot, "w") : stdout;
        if (!f) {
            fprintf(stderr, "mitosis topo: cannot write '%s' (check the directory exists)\n", dot);
            rc = 2;
            goto out;
        }
        if (mt_topo_write_dot(t, f, &err) != MT_OK) rc = mt_cli_fail("topo", &err);
        if (f != stdout) fclose(f);
    }
out:
    mt_topo_free(t);
    return rc;
}

static const mt_flag_table *const TABLES[] = {&MT_NETOPTS_FLAGS, NULL};
const mt_command mt_cmd_topo = {"topo", cmd_topo, "describe a topology: nodes, links, bisection bandwidth, routes",
                                "SPEC [--route SRC DST] [--dot FILE|-] [network options]", usage, TABLES, 0};

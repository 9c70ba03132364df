/* cli/cmd_hop.c — `mitosis hop`: heterogeneous decentralized training (Hop) on the flow model.
 * Random groups of per-worker communication slowdowns; for each group and graph, the time for
 * every worker to do K iterations without and with backup workers (sim/gossip.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/netopts.h"
#include "sim/engine.h"
#include "sim/gossip.h"
#include "sim/scenario.h"
#include "tracer/trace.h"
#include "util/units.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: mitosis hop [TRACE] [options]\n\n"
            "Decentralized training after Hop (ASPLOS'19): each worker computes one training step\n"
            "(the traced step, or --compute), then sends its model (the trace's parameter bytes, or\n"
            "--model-bytes) to its graph neighbours; it starts iteration k once all but B of its\n"
            "in-neighbours have delivered an update of iteration >= k-1-S. Worker i's uplink is\n"
            "slowed by a factor drawn uniformly in [MIN, MAX] per group. Prints, per group and\n"
            "graph, the time for every worker to do K iterations with 0 and with B backup workers.\n\n"
            "  --workers N           workers (default 8)\n"
            "  --graph G[,G...]      ring, ring-chords (ring + a chord to the most distant node),\n"
            "                        double-ring, complete (default ring-chords,double-ring)\n"
            "  --iterations K        iterations per worker (default 20)\n"
            "  --staleness S         bounded staleness (default 0)\n"
            "  --backups B           backup workers compared with none (default 1)\n"
            "  --max-gap G           also wait for every in-neighbour's update of iteration >= k-1-G\n"
            "                        (Hop's iteration-gap bound; default: none)\n"
            "  --groups G            random groups of slowdowns (default 8)\n"
            "  --seed N              seed of the draws (default 1)\n"
            "  --slowdown MIN:MAX    communication slowdown range (default 1:10)\n"
            "  --compute T           iteration compute time without a trace (e.g. 80ms)\n"
            "  --model-bytes SIZE    update size without a trace (e.g. 100MB)\n"
            "Network: --topology (default switch:N), --link-bw (default 100Gbps here), ... as below.\n\n");
    mt_netopts_help(out);
}

typedef struct hop_cli {
    const char *paths[2];
    int n_paths;
    int32_t workers, iterations, staleness, backups, max_gap, groups;
    long long seed;
    double smin, smax, compute_ns, model_bytes;
    const char *graphs;
    mt_netopts net;
} hop_cli;

static int parse(hop_cli *c, int argc, char **argv, mt_error *err) {
    for (int i = 1; i < argc;) {
        int t = mt_netopts_take(&c->net, argc, argv, &i, err);
        if (t < 0) return -1;
        if (t) continue;
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(f, "--workers")) {
            if (!mt_cli_int(f, v, 3, 4096, &c->workers, err)) return -1;
        } else if (!strcmp(f, "--iterations")) {
            if (!mt_cli_int(f, v, 1, 1 << 20, &c->iterations, err)) return -1;
        } else if (!strcmp(f, "--staleness")) {
            if (!mt_cli_int(f, v, 0, 1 << 20, &c->staleness, err)) return -1;
        } else if (!strcmp(f, "--backups")) {
            if (!mt_cli_int(f, v, 0, 4096, &c->backups, err)) return -1;
        } else if (!strcmp(f, "--max-gap")) {
            if (!mt_cli_int(f, v, 0, 1 << 20, &c->max_gap, err)) return -1;
        } else if (!strcmp(f, "--groups")) {
            if (!mt_cli_int(f, v, 1, 100000, &c->groups, err)) return -1;
        } else if (!strcmp(f, "--seed")) {
            int32_t s;
            if (!mt_cli_int(f, v, 0, 2147483647L, &s, err)) return -1;
            c->seed = s;
        } else if (!strcmp(f, "--graph")) {
            if (!v) return mt_fail(err, MT_EINVAL, "--graph needs ring, ring-chords, double-ring or complete"), -1;
            c->graphs = v;
        } else if (!strcmp(f, "--slowdown")) {
            char *end;
            c->smin = v ? strtod(v, &end) : 0;
            if (!v || *end != ':' || !(c->smin >= 1) || (c->smax = strtod(end + 1, &end), *end) || c->smax < c->smin)
                return mt_fail(err, MT_EINVAL, "--slowdown needs MIN:MAX with 1 <= MIN <= MAX, e.g. 1:10 (got '%s')",
                               v ? v : ""), -1;
        } else if (!strcmp(f, "--compute")) {
            if (!v || mt_parse_time_ns(v, &c->compute_ns, err) != MT_OK) {
                if (!v) mt_fail(err, MT_EINVAL, "--compute needs a time such as 80ms");
                return -1;
            }
        } else if (!strcmp(f, "--model-bytes")) {
            if (!v || mt_parse_bytes(v, &c->model_bytes, err) != MT_OK) {
                if (!v) mt_fail(err, MT_EINVAL, "--model-bytes needs a size such as 100MB");
                return -1;
            }
        } else if (f[0] == '-' && f[1]) {
            return mt_fail(err, MT_EINVAL, "unknown option '%s' (see mitosis hop --help)", f), -1;
        } else {
            if (c->n_paths >= 2) return mt_fail(err, MT_EINVAL, "too many trace paths"), -1;
            c->paths[c->n_paths++] = f;
            i += 1;
            continue;
        }
        i += 2;
    }
    if (c->n_paths == 0 && (c->compute_ns <= 0 || c->model_bytes <= 0))
        return mt_fail(err, MT_EINVAL, "give a TRACE, or --compute and --model-bytes (see mitosis hop --help)"), -1;
    return 0;
}

/* One run: graph g, slowdowns, b backups. */
static mt_status run_once(const hop_cli *c, const mt_gossip_graph *g, const double *slow, int32_t b,
                          mt_time_ps compute_ps, double bytes, mt_gossip_result *res, mt_error *err) {
    char spec[32];
    mt_netopts net = c->net;
    if (!net.topology) {
        snprintf(spec, sizeof spec, "switch:%d", (int)c->workers);
        net.topology = spec;
    }
    if (strcmp(net.network, "flow"))
        return mt_fail(err, MT_EINVAL, "hop slows workers' uplinks, which needs --network flow");
    mt_topo *topo = NULL;
    mt_engine *e = NULL;
    mt_netmodel nm = {0};
    mt_time_ps *comp = malloc((size_t)c->workers * sizeof *comp);
    mt_status rc = comp ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    if (rc == MT_OK) rc = mt_netopts_topology(&net, &topo, err);
    if (rc == MT_OK && !(e = mt_engine_new())) rc = mt_fail(err, MT_ENOMEM, "out of memory");
    if (rc == MT_OK) rc = mt_netopts_model(&net, topo, mt_engine_sched(e), &nm, err);
    int32_t ng = 0;
    const int32_t *gpus = rc == MT_OK ? mt_topo_gpus(topo, &ng) : NULL;
    if (rc == MT_OK && ng < c->workers)
        rc = mt_fail(err, MT_EINVAL, "%s has %d GPUs for %d workers (pick a larger --topology)", net.topology,
                     (int)ng, (int)c->workers);
    for (int32_t i = 0; rc == MT_OK && i < c->workers; i++) {
        char sel[160];
        int32_t *ids, k;
        snprintf(sel, sizeof sel, "%s->*", mt_topo_name(topo, gpus[i]));
        rc = mt_topo_select_links(topo, sel, &ids, &k, err);
        if (rc != MT_OK) break;
        for (int32_t j = 0; rc == MT_OK && j < k; j++) rc = mt_flownet_set_link_factor(nm.self, ids[j], 1.0 / slow[i], err);
        free(ids);
        comp[i] = compute_ps;
    }
    if (rc == MT_OK) {
        mt_gossip_cfg cfg = {g, comp, bytes, c->iterations, c->staleness, b, c->max_gap};
        rc = mt_gossip_run(&cfg, &nm, e, res, err);
    }
    mt_net_free(&nm);
    mt_engine_free(e);
    mt_topo_free(topo);
    free(comp);
    return rc;
}

int cmd_hop(int argc, char **argv) {
    hop_cli c;
    memset(&c, 0, sizeof c);
    c.workers = 8, c.iterations = 20, c.backups = 1, c.max_gap = -1, c.groups = 8, c.seed = 1;
    c.smin = 1, c.smax = 10;
    c.graphs = "ring-chords,double-ring";
    mt_netopts_init(&c.net);
    c.net.tp.link_bw_Bps = 12.5e9; /* 100 Gb/s NICs unless --link-bw says otherwise */
    mt_error err = {0};
    int pr = parse(&c, argc, argv, &err);
    if (pr > 0) return 0;
    if (pr < 0) return mt_cli_fail("hop", &err);
    mt_graph_kind kinds[4];
    int nk = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", c.graphs);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (nk == 4 || mt_graph_kind_parse(tok, &kinds[nk]) != 0) {
            mt_fail(&err, MT_EINVAL, "--graph: '%s' is not ring, ring-chords, double-ring or complete", tok);
            return mt_cli_fail("hop", &err);
        }
        nk++;
    }
    trace *t = NULL;
    trace_load_opts to;
    mt_trace_load_opts_init(&to);
    if (c.n_paths > 0 && mt_trace_load(c.paths, c.n_paths, &to, &t, &err) != MT_OK) return mt_cli_fail("hop", &err);
    if (t && c.compute_ns <= 0 && mt_trace_check_timed(t, &err) != MT_OK) {
        mt_trace_free(t);
        return mt_cli_fail("hop", &err);
    }
    double compute_ns = c.compute_ns > 0 ? c.compute_ns : (double)mt_trace_total_dev_ns(t);
    double bytes = c.model_bytes > 0 ? c.model_bytes : (t ? t->param_bytes : 0);
    mt_time_ps compute_ps = (mt_time_ps)(compute_ns * 1000.0 + 0.5);
    double *slow = malloc((size_t)c.workers * sizeof *slow);
    mt_gossip_graph g[4];
    memset(g, 0, sizeof g);
    int code = 0;
    mt_status rc = slow ? MT_OK : mt_fail(&err, MT_ENOMEM, "out of memory");
    for (int k = 0; rc == MT_OK && k < nk; k++) rc = mt_gossip_graph_build(kinds[k], c.workers, &g[k], &err);
    for (int k = 0; rc == MT_OK && k < nk; k++)
        for (int32_t i = 0; i < c.workers; i++)
            if (c.backups >= g[k].off[i + 1] - g[k].off[i])
                rc = mt_fail(&err, MT_EINVAL, "--backups %d: a %s worker has only %d in-neighbours (use fewer backups)",
                             (int)c.backups, mt_graph_kind_name(kinds[k]), (int)(g[k].off[i + 1] - g[k].off[i]));
    if (rc != MT_OK) goto out;
    char bw[32], mb[32], topo[32];
    snprintf(topo, sizeof topo, "switch:%d", (int)c.workers);
    printf("hop        %d workers, %d iterations, staleness %d, backups 0 vs %d%s, uplink slowdown U[%g, %g]\n",
           (int)c.workers, (int)c.iterations, (int)c.staleness, (int)c.backups,
           c.max_gap >= 0 ? ", iteration-gap bound" : "", c.smin, c.smax);
    printf("iteration  compute %.3f ms, update %s to each out-neighbour, links %s (%s)\n", compute_ns / 1e6,
           mt_fmt_bytes(bytes, mb, sizeof mb), c.net.topology ? c.net.topology : topo,
           mt_fmt_bandwidth(c.net.tp.link_bw_Bps, bw, sizeof bw));
    printf("\n%5s %-12s %-44s %12s %12s %8s %8s\n", "group", "graph", "slowdowns", "b=0 ms", "b=B ms", "speedup",
           "mean");
    double sum[4] = {0};
    for (int32_t grp = 0; rc == MT_OK && grp < c.groups; grp++) {
        char sl[200] = "";
        for (int32_t i = 0; i < c.workers; i++) {
            slow[i] = c.smin + (c.smax - c.smin) * mt_draw01((uint64_t)c.seed, 0, i, grp, 0, 0);
            if (strlen(sl) < sizeof sl - 8) snprintf(sl + strlen(sl), sizeof sl - strlen(sl), "%s%.1f", i ? " " : "", slow[i]);
        }
        for (int k = 0; rc == MT_OK && k < nk; k++) {
            mt_gossip_result r0, r1;
            rc = run_once(&c, &g[k], slow, 0, compute_ps, bytes, &r0, &err);
            if (rc != MT_OK) break;
            rc = run_once(&c, &g[k], slow, c.backups, compute_ps, bytes, &r1, &err);
            if (rc != MT_OK) {
                mt_gossip_result_free(&r0);
                break;
            }
            double s = (double)r0.all_done_ps / (double)r1.all_done_ps;
            sum[k] += s;
            printf("%5d %-12s %-44s %12.1f %12.1f %7.2fx %7.2fx\n", (int)grp, mt_graph_kind_name(kinds[k]), k ? "" : sl,
                   (double)r0.all_done_ps / 1e9, (double)r1.all_done_ps / 1e9, s, r0.mean_done_ps / r1.mean_done_ps);
            mt_gossip_result_free(&r0);
            mt_gossip_result_free(&r1);
        }
    }
    if (rc == MT_OK) {
        printf("\n");
        for (int k = 0; k < nk; k++)
            printf("mean speed-up of %d backup worker%s on %-12s %.2fx (time for all workers to do %d iterations)\n",
                   (int)c.backups, c.backups == 1 ? "" : "s", mt_graph_kind_name(kinds[k]), sum[k] / c.groups,
                   (int)c.iterations);
        printf("(speedup: b=0 time / b=B time for every worker to finish; mean: the same for the mean worker)\n");
    }
out:
    if (rc != MT_OK) code = mt_cli_fail("hop", &err);
    for (int k = 0; k < 4; k++) mt_gossip_graph_free(&g[k]);
    free(slow);
    mt_trace_free(t);
    return code;
}

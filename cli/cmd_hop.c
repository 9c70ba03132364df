/* cli/cmd_hop.c — `mitosis hop`: heterogeneous decentralized training (Hop) on the flow model.
 * Random groups of per-worker communication slowdowns; for each group and graph, the time for
 * every worker to do K iterations without and with backup workers (sim/gossip.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "netmodels/netcfg.h"
#include "sim/engine.h"
#include "sim/gossip.h"
#include "sim/scenario.h"
#include "tracer/trace.h"
#include "util/units.h"

typedef struct hop_cli {
    const char *paths[2];
    int n_paths;
    int32_t workers, iterations, staleness, backups, max_gap, groups, seed;
    double smin, smax, compute_ns, model_bytes;
    const char *graphs;
    mt_netcfg net;
} hop_cli;

static mt_status take_slowdown(void *base, const char *v, mt_error *err) {
    hop_cli *c = base;
    char *end;
    double lo = strtod(v, &end), hi = 0;
    if (*end != ':' || !(lo >= 1) || (hi = strtod(end + 1, &end), *end) || !(hi >= lo) || !isfinite(hi))
        return mt_fail(err, MT_EINVAL, "--slowdown needs MIN:MAX with 1 <= MIN <= MAX, e.g. 1:10 (got '%s')", v);
    c->smin = lo, c->smax = hi;
    return MT_OK;
}

static const mt_flag FLAGS[] = {
    {"--workers", MT_FLAG_INT, offsetof(hop_cli, workers), "N", "workers (default 8)", .lo = 3, .hi = 4096},
    {"--graph", MT_FLAG_STRING, offsetof(hop_cli, graphs), "G[,G...]",
     "ring, ring-chords (ring + a chord to the most distant node), double-ring, complete (default "
     "ring-chords,double-ring)"},
    {"--iterations", MT_FLAG_INT, offsetof(hop_cli, iterations), "K", "iterations per worker (default 20)", .lo = 1,
     .hi = 1 << 20},
    {"--staleness", MT_FLAG_INT, offsetof(hop_cli, staleness), "S", "bounded staleness (default 0)", .lo = 0,
     .hi = 1 << 20},
    {"--backups", MT_FLAG_INT, offsetof(hop_cli, backups), "B", "backup workers compared with none (default 1)",
     .lo = 0, .hi = 4096},
    {"--max-gap", MT_FLAG_INT, offsetof(hop_cli, max_gap), "G",
     "also wait for every in-neighbour's update of iteration >= k-1-G (Hop's iteration-gap bound; default: none)",
     .lo = 0, .hi = 1 << 20},
    {"--groups", MT_FLAG_INT, offsetof(hop_cli, groups), "G", "random groups of slowdowns (default 8)", .lo = 1,
     .hi = 100000},
    {"--seed", MT_FLAG_INT, offsetof(hop_cli, seed), "N", "seed of the draws (default 1)", .lo = 0,
     .hi = 2147483647.0},
    {"--slowdown", MT_FLAG_CALL, 0, "MIN:MAX", "communication slowdown range (default 1:10)", .call = take_slowdown},
    {"--compute", MT_FLAG_TIME, offsetof(hop_cli, compute_ns), "T", "iteration compute time without a trace (e.g. 80ms)",
     .lo = 0, .lo_open = 1},
    {"--model-bytes", MT_FLAG_BYTES, offsetof(hop_cli, model_bytes), "SIZE",
     "update size without a trace (e.g. 100MB)", .lo = 0, .lo_open = 1},
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
            mt_topo_hop_tier.bw_Bps * 8 / 1e9);
    mt_netcfg_help(out);
}

static mt_status take_path(void *ctx, const char *a, mt_error *err) {
    hop_cli *c = ctx;
    if (c->n_paths >= 2) return mt_fail(err, MT_EINVAL, "too many trace paths");
    c->paths[c->n_paths++] = a;
    return MT_OK;
}

/* 1: --help printed; 0: parsed; -1: error in err. */
static int parse(hop_cli *c, int argc, char **argv, mt_error *err) {
    mt_flag_seen seen;
    if (mt_netcfg_parse(&c->net, argc, argv, &TABLE, c, take_path, c, "hop", &seen, err) != MT_OK) return -1;
    if (seen.help) return usage(stdout), 1;
    if (c->n_paths == 0 && (c->compute_ns <= 0 || c->model_bytes <= 0))
        return mt_fail(err, MT_EINVAL, "give a TRACE, or --compute and --model-bytes (see mitosis hop --help)"), -1;
    return 0;
}

/* Worker i's uplinks (every link out of its GPU) at 1 / slow[i] of their bandwidth. */
static mt_status slow_uplinks(const hop_cli *c, mt_topo *topo, mt_netmodel *nm, const double *slow, mt_error *err) {
    MT_CHECK(mt_net_require(nm, MT_NETOP_LINK_FACTOR, err));
    int32_t ng = 0;
    const int32_t *gpus = topo ? mt_topo_gpus(topo, &ng) : NULL;
    char spec[256];
    if (ng < c->workers)
        return mt_fail(err, MT_EINVAL, "%s has %d GPUs for %d workers (pick a larger --topology)",
                       mt_netcfg_spec(&c->net, c->workers, spec, sizeof spec), (int)ng, (int)c->workers);
    mt_status rc = MT_OK;
    for (int32_t i = 0; rc == MT_OK && i < c->workers; i++) {
        char sel[160];
        int32_t *ids, k;
        snprintf(sel, sizeof sel, "%s->*", mt_topo_name(topo, gpus[i]));
        MT_CHECK(mt_topo_select_links(topo, sel, &ids, &k, err));
        for (int32_t j = 0; rc == MT_OK && j < k; j++) rc = mt_net_set_link_factor(nm, ids[j], 1.0 / slow[i], err);
        free(ids);
    }
    return rc;
}

/* The topology, engine and model of one run, the uplinks slowed (*e is NULL when it failed
 * early; free with net_free). */
typedef struct hop_net {
    mt_topo *topo;
    mt_engine *e;
    mt_netmodel nm;
} hop_net;

static void net_free(hop_net *n) {
    mt_net_free(&n->nm);
    mt_engine_free(n->e);
    mt_topo_free(n->topo);
}

static mt_status net_setup(const hop_cli *c, const double *slow, hop_net *n, mt_error *err) {
    memset(n, 0, sizeof *n);
    MT_CHECK(mt_netcfg_topology(&c->net, c->workers, &n->topo, err));
    if (!(n->e = mt_engine_new())) return mt_fail(err, MT_ENOMEM, "out of memory");
    MT_CHECK(mt_netcfg_model(&c->net, n->topo, mt_engine_sched(n->e), &n->nm, err));
    return slow_uplinks(c, n->topo, &n->nm, slow, err);
}

/* One run: graph g, slowdowns, b backups. */
static mt_status run_once(const hop_cli *c, const mt_gossip_graph *g, const double *slow, int32_t b,
                          mt_time_ps compute_ps, double bytes, mt_gossip_result *res, mt_error *err) {
    hop_net n;
    mt_time_ps *comp = malloc((size_t)c->workers * sizeof *comp);
    mt_status rc = comp ? net_setup(c, slow, &n, err) : mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t i = 0; comp && i < c->workers; i++) comp[i] = compute_ps;
    if (rc == MT_OK) {
        mt_gossip_cfg cfg = {g, comp, bytes, c->iterations, c->staleness, b, c->max_gap};
        rc = mt_gossip_run(&cfg, &n.nm, n.e, res, err);
    }
    if (comp) net_free(&n);
    free(comp);
    return rc;
}

typedef struct hop_run {
    mt_graph_kind kinds[4];
    mt_gossip_graph g[4];
    int nk;
    double compute_ns, bytes, *slow;
    trace *t;
} hop_run;

/* --graph's kinds and their graphs, checked against --backups. */
static mt_status build_graphs(const hop_cli *c, hop_run *r, mt_error *err) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", c->graphs);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (r->nk == 4 || mt_graph_kind_parse(tok, &r->kinds[r->nk]) != 0)
            return mt_fail(err, MT_EINVAL, "--graph: '%s' is not ring, ring-chords, double-ring or complete", tok);
        MT_CHECK(mt_gossip_graph_build(r->kinds[r->nk], c->workers, &r->g[r->nk], err));
        r->nk++;
    }
    for (int k = 0; k < r->nk; k++)
        for (int32_t i = 0; i < c->workers; i++)
            if (c->backups >= r->g[k].off[i + 1] - r->g[k].off[i])
                return mt_fail(err, MT_EINVAL, "--backups %d: a %s worker has only %d in-neighbours (use fewer backups)",
                               (int)c->backups, mt_graph_kind_name(r->kinds[k]), (int)(r->g[k].off[i + 1] - r->g[k].off[i]));
    return MT_OK;
}

/* The iteration's compute time and update size: the flags, else the trace's. */
static mt_status load_work(const hop_cli *c, hop_run *r, mt_error *err) {
    trace_load_opts to;
    trace_load_opts_init(&to);
    if (c->n_paths > 0) MT_CHECK(trace_load(c->paths, c->n_paths, &to, &r->t, err));
    if (r->t && c->compute_ns <= 0) MT_CHECK(trace_check_timed(r->t, err));
    r->compute_ns = c->compute_ns > 0 ? c->compute_ns : (double)trace_total_dev_ns(r->t);
    r->bytes = c->model_bytes > 0 ? c->model_bytes : (r->t ? r->t->param_bytes : 0);
    r->slow = malloc((size_t)c->workers * sizeof *r->slow);
    if (!r->slow) return mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t i = 0; i < c->workers; i++) r->slow[i] = 1;
    hop_net n; /* the network can carry the run: enough GPUs, uplinks that can be slowed */
    mt_status rc = net_setup(c, r->slow, &n, err);
    net_free(&n);
    return rc;
}

static void print_header(const hop_cli *c, const hop_run *r) {
    char bw[32], mb[32], spec[256];
    printf("hop        %d workers, %d iterations, staleness %d, backups 0 vs %d%s, uplink slowdown U[%g, %g]\n",
           (int)c->workers, (int)c->iterations, (int)c->staleness, (int)c->backups,
           c->max_gap >= 0 ? ", iteration-gap bound" : "", c->smin, c->smax);
    printf("iteration  compute %.3f ms, update %s to each out-neighbour, links %s (%s)\n", r->compute_ns / 1e6,
           mt_fmt_bytes(r->bytes, mb, sizeof mb), mt_netcfg_spec(&c->net, c->workers, spec, sizeof spec),
           mt_fmt_bandwidth(c->net.tp.link_bw_Bps, bw, sizeof bw));
    printf("\n%5s %-12s %-44s %12s %12s %8s %8s\n", "group", "graph", "slowdowns", "b=0 ms", "b=B ms", "speedup",
           "mean");
}

/* Group grp's row for graph k: without and with backups; adds the speed-up to *sum. */
static mt_status run_row(const hop_cli *c, const hop_run *r, int32_t grp, int k, const char *sl, double *sum,
                         mt_error *err) {
    mt_time_ps compute_ps = (mt_time_ps)(r->compute_ns * 1000.0 + 0.5);
    mt_gossip_result r0, r1;
    MT_CHECK(run_once(c, &r->g[k], r->slow, 0, compute_ps, r->bytes, &r0, err));
    mt_status rc = run_once(c, &r->g[k], r->slow, c->backups, compute_ps, r->bytes, &r1, err);
    if (rc == MT_OK) {
        double s = (double)r0.all_done_ps / (double)r1.all_done_ps;
        *sum += s;
        printf("%5d %-12s %-44s %12.1f %12.1f %7.2fx %7.2fx\n", (int)grp, mt_graph_kind_name(r->kinds[k]),
               k ? "" : sl, (double)r0.all_done_ps / 1e9, (double)r1.all_done_ps / 1e9, s,
               r0.mean_done_ps / r1.mean_done_ps);
        mt_gossip_result_free(&r1);
    }
    mt_gossip_result_free(&r0);
    return rc;
}

static mt_status run_groups(const hop_cli *c, hop_run *r, mt_error *err) {
    double sum[4] = {0};
    for (int32_t grp = 0; grp < c->groups; grp++) {
        char sl[200] = "";
        for (int32_t i = 0; i < c->workers; i++) {
            r->slow[i] = c->smin + (c->smax - c->smin) * mt_draw01((uint64_t)c->seed, 0, i, grp, 0, 0);
            if (strlen(sl) < sizeof sl - 8)
                snprintf(sl + strlen(sl), sizeof sl - strlen(sl), "%s%.1f", i ? " " : "", r->slow[i]);
        }
        for (int k = 0; k < r->nk; k++) MT_CHECK(run_row(c, r, grp, k, sl, &sum[k], err));
    }
    printf("\n");
    for (int k = 0; k < r->nk; k++)
        printf("mean speed-up of %d backup worker%s on %-12s %.2fx (time for all workers to do %d iterations)\n",
               (int)c->backups, c->backups == 1 ? "" : "s", mt_graph_kind_name(r->kinds[k]), sum[k] / c->groups,
               (int)c->iterations);
    printf("(speedup: b=0 time / b=B time for every worker to finish; mean: the same for the mean worker)\n");
    return MT_OK;
}

int cmd_hop(int argc, char **argv) {
    hop_cli c;
    memset(&c, 0, sizeof c);
    c.workers = 8, c.iterations = 20, c.backups = 1, c.max_gap = -1, c.groups = 8, c.seed = 1;
    c.smin = 1, c.smax = 10;
    c.graphs = "ring-chords,double-ring";
    mt_netcfg_init(&c.net);
    c.net.tp.link_bw_Bps = mt_topo_hop_tier.bw_Bps; /* 100 Gb/s NICs unless --link-bw says otherwise */
    mt_error err = {0};
    int pr = parse(&c, argc, argv, &err);
    if (pr) return pr > 0 ? 0 : mt_cli_fail("hop", &err);
    hop_run r;
    memset(&r, 0, sizeof r);
    mt_status rc = build_graphs(&c, &r, &err);
    if (rc == MT_OK) rc = load_work(&c, &r, &err);
    if (rc == MT_OK) {
        print_header(&c, &r);
        rc = run_groups(&c, &r, &err);
    }
    for (int k = 0; k < 4; k++) mt_gossip_graph_free(&r.g[k]);
    free(r.slow);
    trace_free(r.t);
    return rc == MT_OK ? 0 : mt_cli_fail("hop", &err);
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_hop = {"hop", cmd_hop, "decentralized training with stragglers (Hop): backup workers, staleness, gossip graphs",
                                  "[TRACE] [options]", usage, TABLES, MT_CMD_NET};

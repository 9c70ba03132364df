/* run/hop.c — see hop.h. */
#include "run/hop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/scenario.h"
#include "tracer/trace.h"
#include "util/units.h"

void mt_hop_config_init(mt_hop_config *c) {
    memset(c, 0, sizeof *c);
    c->workers = 8, c->iterations = 20, c->backups = 1, c->max_gap = -1, c->groups = 8, c->seed = 1;
    c->smin = 1, c->smax = 10;
    c->graphs = "ring-chords,double-ring";
    mt_netcfg_init(&c->net);
    c->net.tp.link_bw_Bps = mt_topo_hop_tier.bw_Bps; /* 100 Gb/s NICs unless --link-bw says otherwise */
}

/* Worker i's uplinks (every link out of its GPU) at 1 / slow[i] of their bandwidth. */
static mt_status slow_uplinks(const mt_hop_config *c, mt_topo *topo, mt_netmodel *nm, const double *slow,
                              mt_error *err) {
    MT_CHECK(mt_net_require(nm, MT_NETOP_LINK_FACTOR, err));
    int32_t ng = 0;
    const int32_t *gpus = topo ? mt_topo_gpus(topo, &ng) : NULL;
    char spec[256];
    if (ng < c->workers)
        return mt_fail(err, MT_EINVAL, "%s has %d GPU%s for %d workers (pick a larger --topology)",
                       mt_netcfg_spec(&c->net, c->workers, spec, sizeof spec), (int)ng, mt_plural(ng), (int)c->workers);
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

/* The topology, engine and model of one run, the uplinks slowed; free with net_free. */
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

static mt_status net_setup(const mt_hop_config *c, const double *slow, hop_net *n, mt_error *err) {
    memset(n, 0, sizeof *n);
    MT_CHECK(mt_netcfg_topology(&c->net, c->workers, &n->topo, err));
    if (!(n->e = mt_engine_new())) return mt_fail(err, MT_ENOMEM, "out of memory");
    MT_CHECK(mt_netcfg_model(&c->net, n->topo, mt_engine_sched(n->e), &n->nm, err));
    return slow_uplinks(c, n->topo, &n->nm, slow, err);
}

/* What every run shares: the graphs, the work of an iteration, the slowdowns being run. */
typedef struct hop_run {
    mt_graph_kind kinds[4];
    mt_gossip_graph g[4];
    int nk;
    double compute_ns, bytes;
    double *slow;            /* the current group's */
    char warning[512];       /* the trace's, "" none */
} hop_run;

/* One run: graph g, b backups, the current slowdowns; its all-done and mean-done times. */
static mt_status run_once(const mt_hop_config *c, const hop_run *r, const mt_gossip_graph *g, int32_t b,
                          mt_gossip_result *res, mt_error *err) {
    hop_net n;
    mt_time_ps *comp = malloc((size_t)c->workers * sizeof *comp);
    mt_status rc = comp ? net_setup(c, r->slow, &n, err) : mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t i = 0; comp && i < c->workers; i++) comp[i] = (mt_time_ps)(r->compute_ns * 1000.0 + 0.5);
    if (rc == MT_OK) {
        mt_gossip_cfg cfg = {g, comp, r->bytes, c->iterations, c->staleness, b, c->max_gap};
        rc = mt_gossip_run(&cfg, &n.nm, n.e, res, err);
    }
    if (comp) net_free(&n);
    free(comp);
    return rc;
}

/* The graphs named by c->graphs, checked against the backups. */
static mt_status build_graphs(const mt_hop_config *c, hop_run *r, mt_error *err) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", c->graphs ? c->graphs : "");
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (r->nk == 4 || mt_graph_kind_parse(tok, &r->kinds[r->nk]) != 0)
            return mt_fail(err, MT_EINVAL, "--graph: '%s' is not ring, ring-chords, double-ring or complete", tok);
        MT_CHECK(mt_gossip_graph_build(r->kinds[r->nk], c->workers, &r->g[r->nk], err));
        r->nk++;
    }
    if (r->nk == 0) return mt_fail(err, MT_EINVAL, "--graph names no graph (use ring, ring-chords, double-ring or complete)");
    for (int k = 0; k < r->nk; k++)
        for (int32_t i = 0; i < c->workers; i++)
            if (c->backups >= r->g[k].off[i + 1] - r->g[k].off[i])
                return mt_fail(err, MT_EINVAL, "--backups %d: a %s worker has only %d in-neighbours (use fewer backups)",
                               (int)c->backups, mt_graph_kind_name(r->kinds[k]), (int)(r->g[k].off[i + 1] - r->g[k].off[i]));
    return MT_OK;
}

/* The iteration's compute time and update size: the configuration's, else the trace's; and a
 * check that the network can carry the run (enough GPUs, uplinks that can be slowed). */
static mt_status load_work(const mt_hop_config *c, hop_run *r, mt_error *err) {
    if (c->n_paths == 0 && (c->compute_ns <= 0 || c->model_bytes <= 0))
        return mt_fail(err, MT_EINVAL, "give a TRACE, or --compute and --model-bytes (see mitosis hop --help)");
    mt_trace *t = NULL;
    trace_load_opts to;
    mt_trace_load_opts_init(&to);
    mt_status rc = c->n_paths > 0 ? mt_trace_load(c->paths, c->n_paths, &to, &t, err) : MT_OK;
    if (rc == MT_OK && t && c->compute_ns <= 0) rc = mt_trace_check_timed(t, err);
    if (rc == MT_OK && t) mt_trace_warning(t, r->warning, sizeof r->warning);
    if (rc == MT_OK && t && t->recorded_on.kind == TRACE_DEV_CPU && c->compute_ns <= 0) {
        size_t at = strlen(r->warning); /* hop has no GPU model: say whose times the workers take */
        snprintf(r->warning + at, sizeof r->warning - at, "%s%s was recorded on a CPU (%s): every worker computes "
                 "for its CPU time, not a GPU's (give --compute for a GPU's)", at ? "; " : "",
                 t->kineto_path ? t->kineto_path : "the trace", t->recorded_on.source);
    }
    if (rc == MT_OK) {
        r->compute_ns = c->compute_ns > 0 ? c->compute_ns : (double)mt_trace_total_dev_ns(t);
        r->bytes = c->model_bytes > 0 ? c->model_bytes : (t ? t->param_bytes : 0);
    }
    mt_trace_free(t);
    MT_CHECK(rc);
    if (!(r->slow = malloc((size_t)c->workers * sizeof *r->slow))) return mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t i = 0; i < c->workers; i++) r->slow[i] = 1;
    hop_net n;
    rc = net_setup(c, r->slow, &n, err);
    net_free(&n);
    return rc;
}

/* Every group's slowdowns and every (group, graph) row into out. */
static mt_status run_groups(const mt_hop_config *c, hop_run *r, mt_hop_table *out, mt_error *err) {
    out->slowdowns = malloc((size_t)c->groups * c->workers * sizeof *out->slowdowns);
    out->rows = calloc((size_t)c->groups * r->nk, sizeof *out->rows);
    if (!out->slowdowns || !out->rows) return mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t grp = 0; grp < c->groups; grp++) {
        for (int32_t i = 0; i < c->workers; i++)
            out->slowdowns[(size_t)grp * c->workers + i] = r->slow[i] =
                c->smin + (c->smax - c->smin) * mt_draw01((uint64_t)c->seed, 0, i, grp, 0, 0);
        for (int k = 0; k < r->nk; k++) {
            mt_gossip_result r0, r1;
            MT_CHECK(run_once(c, r, &r->g[k], 0, &r0, err));
            mt_status rc = run_once(c, r, &r->g[k], c->backups, &r1, err);
            if (rc == MT_OK) {
                mt_hop_row *w = &out->rows[out->n_rows++];
                *w = (mt_hop_row){grp, mt_graph_kind_name(r->kinds[k]), (double)r0.all_done_ps / 1e9,
                                  (double)r1.all_done_ps / 1e9, (double)r0.all_done_ps / (double)r1.all_done_ps,
                                  r0.mean_done_ps / r1.mean_done_ps};
                out->mean_speedup[k] += w->speedup / c->groups;
                mt_gossip_result_free(&r1);
            }
            mt_gossip_result_free(&r0);
            MT_CHECK(rc);
        }
    }
    return MT_OK;
}

double mt_hop_default_Gbps(void) { return mt_topo_hop_tier.bw_Bps * 8 / 1e9; }

mt_status mt_run_hop(const mt_hop_config *c, mt_hop_table *out, mt_error *err) {
    memset(out, 0, sizeof *out);
    *out = (mt_hop_table){.workers = c->workers, .iterations = c->iterations, .staleness = c->staleness,
                          .backups = c->backups, .max_gap = c->max_gap, .groups = c->groups, .smin = c->smin,
                          .smax = c->smax, .link_bw_Bps = c->net.tp.link_bw_Bps};
    hop_run r;
    memset(&r, 0, sizeof r);
    mt_status rc = build_graphs(c, &r, err);
    if (rc == MT_OK) rc = load_work(c, &r, err);
    if (rc == MT_OK) {
        out->compute_ms = r.compute_ns / 1e6;
        out->update_bytes = r.bytes;
        memcpy(out->warning, r.warning, sizeof out->warning);
        mt_netcfg_spec(&c->net, c->workers, out->topology, sizeof out->topology);
        for (int k = 0; k < r.nk; k++) out->graphs[out->n_graphs++] = mt_graph_kind_name(r.kinds[k]);
        rc = run_groups(c, &r, out, err);
    }
    for (int k = 0; k < 4; k++) mt_gossip_graph_free(&r.g[k]);
    free(r.slow);
    if (rc != MT_OK) mt_hop_table_free(out);
    return rc;
}

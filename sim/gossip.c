/* sim/gossip.c — see gossip.h.
 *
 * State: per worker the last iteration started (`iter`), whether it computes, waits or is done;
 * per in-edge (CSR by receiver) the latest iteration delivered on it. An out-edge e of worker i
 * knows its slot in the receiver's in-list (in_slot[e]), so a delivery is O(1) plus the
 * receiver's readiness check, O(in-degree).
 */
#include "sim/gossip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"

enum { W_IDLE = 0, W_COMPUTE, W_WAIT, W_DONE };

typedef struct grunner {
    const mt_gossip_cfg *c;
    const mt_gossip_graph *g;
    mt_netmodel *net;
    mt_engine *e;
    mt_sched sched;
    const int32_t *eps;
    int32_t n;
    int32_t *in_off, *in_slot, *latest;
    int32_t *iter, *state;
    mt_time_ps *wait_since;
    mt_gossip_result *res;
    int failed;
    char msg[MT_ERRMSG_MAX];
} grunner;

/* ---- graphs ----------------------------------------------------------------------------- */

static const char *kind_names[] = {"ring", "ring-chords", "double-ring", "complete"};

int mt_graph_kind_parse(const char *s, mt_graph_kind *out) {
    for (int k = 0; k < 4; k++)
        if (s && !strcmp(s, kind_names[k])) {
            *out = (mt_graph_kind)k;
            return 0;
        }
    return -1;
}

const char *mt_graph_kind_name(mt_graph_kind k) { return (unsigned)k < 4 ? kind_names[k] : "?"; }

static int32_t gcd(int32_t a, int32_t b) { return b ? gcd(b, a % b) : a; }

mt_status mt_gossip_graph_build(mt_graph_kind kind, int32_t n, mt_gossip_graph *g, mt_error *err) {
    memset(g, 0, sizeof *g);
    if (n < 2 || n > (1 << 16) || (kind != MT_GRAPH_COMPLETE && n < 3) || (unsigned)kind > MT_GRAPH_COMPLETE)
        return mt_fail(err, MT_EINVAL, "a %s graph needs 3..65536 workers (2 for complete; got %d)",
                       mt_graph_kind_name(kind), (int)n);
    uint8_t *adj = calloc((size_t)n * (size_t)n, 1);
    g->off = calloc((size_t)n + 1, sizeof *g->off);
    if (!adj || !g->off) {
        free(adj);
        mt_gossip_graph_free(g);
        return mt_fail(err, MT_ENOMEM, "out of memory building a %d-worker graph", (int)n);
    }
    int32_t d2 = 2;
    while (gcd(d2, n) != 1 && d2 < n) d2++;
    for (int32_t i = 0; i < n; i++) {
        int32_t steps[3] = {1, 0, 0};
        if (kind == MT_GRAPH_RING_CHORDS) steps[1] = n / 2;
        if (kind == MT_GRAPH_DOUBLE_RING && d2 < n) steps[1] = d2;
        for (int k = 0; k < 3 && kind != MT_GRAPH_COMPLETE; k++) {
            if (!steps[k]) continue;
            int32_t j = (i + steps[k]) % n;
            if (j != i) adj[(size_t)i * n + j] = adj[(size_t)j * n + i] = 1;
        }
        for (int32_t j = 0; kind == MT_GRAPH_COMPLETE && j < n; j++) adj[(size_t)i * n + j] = j != i;
    }
    int32_t m = 0;
    for (size_t x = 0; x < (size_t)n * n; x++) m += adj[x];
    g->nbr = malloc(((size_t)m + 1) * sizeof *g->nbr);
    if (!g->nbr) {
        free(adj);
        mt_gossip_graph_free(g);
        return mt_fail(err, MT_ENOMEM, "out of memory building a %d-worker graph", (int)n);
    }
    g->n = n;
    for (int32_t i = 0, k = 0; i < n; i++) {
        for (int32_t j = 0; j < n; j++)
            if (adj[(size_t)i * n + j]) g->nbr[k++] = j;
        g->off[i + 1] = k;
    }
    free(adj);
    return MT_OK;
}

void mt_gossip_graph_free(mt_gossip_graph *g) {
    free(g->off);
    free(g->nbr);
    memset(g, 0, sizeof *g);
}

/* ---- the run ---------------------------------------------------------------------------- */

static void fail_run(grunner *r, mt_status code, const char *m) {
    if (r->failed) return;
    r->failed = 1;
    snprintf(r->msg, sizeof r->msg, "%s", m);
    mt_sched_fail(r->sched, code, r->msg);
}

static void ev_computed(void *ctx, uint64_t arg);

/* 1 when worker i may start iteration k (see gossip.h). O(in-degree). */
static int ready(const grunner *r, int32_t i, int32_t k) {
    int32_t indeg = r->in_off[i + 1] - r->in_off[i], fresh = 0;
    int32_t want = k - 1 - r->c->staleness, hard = r->c->max_gap >= 0 ? k - 1 - r->c->max_gap : -1;
    for (int32_t p = r->in_off[i]; p < r->in_off[i + 1]; p++) {
        if (r->latest[p] >= want) fresh++;
        if (r->latest[p] < hard) return 0;
    }
    return fresh >= indeg - r->c->backups;
}

static void try_start(grunner *r, int32_t i) {
    mt_time_ps now = mt_sched_now(r->sched);
    int32_t k = r->iter[i] + 1;
    if (!ready(r, i, k)) {
        if (r->state[i] != W_WAIT) r->wait_since[i] = now;
        r->state[i] = W_WAIT;
        return;
    }
    if (r->state[i] == W_WAIT) r->res->wait_ps[i] += now - r->wait_since[i];
    r->iter[i] = k;
    r->state[i] = W_COMPUTE;
    if (!mt_engine_at(r->e, now + r->c->compute_ps[i], ev_computed, r, (uint64_t)i))
        fail_run(r, MT_ENOMEM, "gossip: out of memory scheduling compute");
}

static void on_update(void *ctx, uint64_t tag) {
    grunner *r = ctx;
    int32_t e = (int32_t)(tag >> 32), k = (int32_t)(tag & 0xffffffffu);
    int32_t dst = r->g->nbr[e], p = r->in_slot[e];
    if (k > r->latest[p]) r->latest[p] = k;
    if (r->state[dst] == W_WAIT) try_start(r, dst);
}

static void ev_computed(void *ctx, uint64_t arg) {
    grunner *r = ctx;
    int32_t i = (int32_t)arg, k = r->iter[i];
    mt_time_ps now = mt_sched_now(r->sched);
    for (int32_t e = r->g->off[i]; e < r->g->off[i + 1]; e++) {
        mt_error err = {0};
        r->res->sends++;
        if (mt_net_send(r->net, r->eps[i], r->eps[r->g->nbr[e]], r->c->model_bytes, on_update, r,
                        ((uint64_t)(uint32_t)e << 32) | (uint32_t)k, &err) != MT_OK) {
            fail_run(r, err.code, err.msg);
            return;
        }
    }
    if (k >= r->c->iterations) {
        r->state[i] = W_DONE;
        r->res->done_ps[i] = now;
        return;
    }
    try_start(r, i);
}

void mt_gossip_result_free(mt_gossip_result *r) {
    if (!r) return;
    free(r->done_ps);
    free(r->wait_ps);
    memset(r, 0, sizeof *r);
}

static mt_status check_cfg(const mt_gossip_cfg *c, int32_t nep, mt_error *err) {
    const mt_gossip_graph *g = c->graph;
    if (!g || g->n < 1 || !c->compute_ps) return mt_fail(err, MT_EINVAL, "gossip: no graph or compute times");
    if (nep < g->n)
        return mt_fail(err, MT_EINVAL, "gossip: %d workers but the network has %d endpoint%s (pick a larger "
                       "topology)", (int)g->n, (int)nep, mt_plural(nep));
    if (c->iterations < 1 || c->iterations > (1 << 30))
        return mt_fail(err, MT_EINVAL, "gossip: iterations must be >= 1 (got %d)", (int)c->iterations);
    if (c->staleness < 0 || c->backups < 0 || c->max_gap < -1)
        return mt_fail(err, MT_EINVAL, "gossip: staleness and backups must be >= 0, max_gap >= -1");
    if (!(c->model_bytes >= 0)) return mt_fail(err, MT_EINVAL, "gossip: model bytes must be >= 0");
    for (int32_t i = 0; i < g->n; i++)
        if (c->compute_ps[i] < 0) return mt_fail(err, MT_EINVAL, "gossip: worker %d has a negative compute time", (int)i);
    return MT_OK;
}

mt_status mt_gossip_run(const mt_gossip_cfg *cfg, mt_netmodel *net, mt_engine *e, mt_gossip_result *out,
                        mt_error *err) {
    memset(out, 0, sizeof *out);
    const int32_t *eps;
    int32_t nep = mt_net_endpoints(net, &eps);
    MT_CHECK(check_cfg(cfg, nep, err));
    const mt_gossip_graph *g = cfg->graph;
    int32_t n = g->n, m = g->off[n];
    grunner r;
    memset(&r, 0, sizeof r);
    r.c = cfg;
    r.g = g;
    r.net = net;
    r.e = e;
    r.sched = mt_engine_sched(e);
    r.eps = eps;
    r.n = n;
    r.res = out;
    r.in_off = calloc((size_t)n + 1, sizeof *r.in_off);
    r.in_slot = malloc(((size_t)m + 1) * sizeof *r.in_slot);
    r.latest = calloc((size_t)m + 1, sizeof *r.latest);
    r.iter = calloc((size_t)n, sizeof *r.iter);
    r.state = calloc((size_t)n, sizeof *r.state);
    r.wait_since = calloc((size_t)n, sizeof *r.wait_since);
    out->done_ps = calloc((size_t)n, sizeof *out->done_ps);
    out->wait_ps = calloc((size_t)n, sizeof *out->wait_ps);
    mt_status rc = MT_OK;
    if (!r.in_off || !r.in_slot || !r.latest || !r.iter || !r.state || !r.wait_since || !out->done_ps ||
        !out->wait_ps) {
        rc = mt_fail(err, MT_ENOMEM, "gossip: out of memory for %d workers", (int)n);
        goto done;
    }
    for (int32_t x = 0; x < m; x++) r.in_off[g->nbr[x] + 1]++;
    for (int32_t i = 0; i < n; i++) r.in_off[i + 1] += r.in_off[i];
    for (int32_t i = 0; i < n; i++) /* fill: the next free slot of each receiver in iter (reset after) */
        for (int32_t x = g->off[i]; x < g->off[i + 1]; x++) r.in_slot[x] = r.in_off[g->nbr[x]] + r.iter[g->nbr[x]]++;
    memset(r.iter, 0, (size_t)n * sizeof *r.iter);
    for (int32_t i = 0; i < n; i++) try_start(&r, i);
    rc = mt_engine_run(e, MT_TIME_NEVER, err);
    if (rc != MT_OK) goto done;
    for (int32_t i = 0; i < n; i++) {
        if (r.state[i] != W_DONE) {
            rc = mt_fail(err, MT_ESTUCK, "gossip: worker %d stopped after %d of %d iterations waiting for its "
                         "neighbours' updates (backups %d, staleness %d; a bug, please report it)", (int)i,
                         (int)r.iter[i], (int)cfg->iterations, (int)cfg->backups, (int)cfg->staleness);
            goto done;
        }
        if (out->done_ps[i] > out->all_done_ps) out->all_done_ps = out->done_ps[i];
        out->mean_done_ps += (double)out->done_ps[i] / n;
    }
done:
    free(r.in_off);
    free(r.in_slot);
    free(r.latest);
    free(r.iter);
    free(r.state);
    free(r.wait_since);
    if (rc != MT_OK) mt_gossip_result_free(out);
    return rc;
}

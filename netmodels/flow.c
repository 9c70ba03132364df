/* netmodels/flow.c — see flow.h.
 *
 * Invariants: link l is constraint l of the solver; a live flow (state DRAINING) is solver
 * variable f->var, attached to the links of its route. f->remaining is exact as of f->last_ps
 * at rate f->rate (the rate the model last acted on; the solver's value may be newer until the
 * model reads it after a solve); f->ev is its pending drain (or delivery) event, or 0. Between a
 * change and the solve event at the same instant rates are stale, but no time passes.
 * Perturbations keep these invariants: a bandwidth change sets the constraint's capacity (which
 * marks it; the next solve re-rates its component, mid-flow); a periodic link's capacity is
 * cap_at(now) whenever it carries flows (its boundary event `pev` is pending exactly then,
 * lazily re-armed by the flow starts); a failure takes each draining flow crossing the link off
 * all its links (remaining advanced to now) and attaches it to its new route.
 */
#include "netmodels/flow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "network/lmm.h"
#include "util/vec.h"

enum { F_FREE, F_DRAINING, F_LATENCY };

typedef struct flow {
    double remaining, rate, bytes;
    mt_time_ps last_ps, lat_ps;
    mt_event_id ev;
    mt_sent_fn sent_fn; /* NULL: nobody asked when it leaves */
    mt_delivered_fn fn;
    void *ctx;
    uint64_t tag;
    int32_t src, dst, var, next_free, state;
} flow;

typedef struct lstate {
    double bytes;
    mt_time_ps busy_ps, busy_since;
    int32_t peak;
    double reported_Bps; /* last rate given to the link observer */
    double base, factor; /* topology bandwidth; factor set by set_link_factor */
    mt_time_ps extra_lat_ps;
} lstate;

typedef struct lperiodic { /* a link's periodic degradation (net->per, made on first use) */
    mt_link_periodic per; /* period 0: none */
    mt_event_id pev;      /* pending periodic boundary */
} lperiodic;

typedef struct change { /* a scheduled perturbation */
    int kind;
    int32_t link;
    double value;
} change;

struct mt_flownet {
    mt_topo *topo;
    mt_sched sched;
    mt_lmm *lmm;
    int32_t nlinks;
    lstate *lk;
    lperiodic *per; /* per link, NULL until a periodic degradation is set */
    flow *fl;
    int64_t nfl, flcap;
    int32_t free_head;
    mt_event_id solve_ev;
    mt_netstats st;
    uint64_t solves, rate_changes;
    mt_link_rate_fn on_link;
    void *link_ctx;
    change *chg;
    int64_t nchg, chgcap;
    int64_t chg_done;        /* scheduled changes that have taken effect */
    int32_t n_extra_lat;     /* links with an extra latency */
    char msg[MT_ERRMSG_MAX];
};

mt_status mt_flownet_new(mt_topo *topo, mt_sched sched, mt_flownet **out, mt_error *err) {
    *out = NULL;
    mt_flownet *n = calloc(1, sizeof *n);
    if (!n) return mt_fail(err, MT_ENOMEM, "out of memory creating the flow model");
    n->topo = topo;
    n->sched = sched;
    n->nlinks = mt_topo_nlinks(topo);
    n->free_head = -1;
    n->lk = calloc((size_t)n->nlinks + 1, sizeof *n->lk);
    n->lmm = mt_lmm_new();
    int ok = n->lk && n->lmm && mt_lmm_reserve(n->lmm, n->nlinks);
    for (int32_t l = 0; ok && l < n->nlinks; l++) {
        n->lk[l].base = mt_topo_link(topo, l)->bw_Bps;
        n->lk[l].factor = 1;
        ok = mt_lmm_cnst_new(n->lmm, n->lk[l].base) == l;
    }
    if (!ok) {
        mt_flownet_free(n);
        return mt_fail(err, MT_ENOMEM, "out of memory creating the flow model");
    }
    *out = n;
    return MT_OK;
}

void mt_flownet_free(mt_flownet *net) {
    if (!net) return;
    mt_lmm_free(net->lmm);
    free(net->lk);
    free(net->per);
    free(net->fl);
    free(net->chg);
    free(net);
}

static void fail(mt_flownet *net, const char *what) {
    snprintf(net->msg, sizeof net->msg, "flow model: out of memory %s", what);
    mt_sched_fail(net->sched, MT_ENOMEM, net->msg);
}

/* ---- the lazy max-min solve ---- */
static void on_solve(void *ctx, uint64_t arg);
static void on_drain(void *ctx, uint64_t arg);

/* Arms the solve event after a change marked links modified (one per instant). */
static void ensure_solve(mt_flownet *net) {
    if (net->solve_ev || !mt_lmm_modified(net->lmm)) return;
    net->solve_ev = mt_sched_at(net->sched, mt_sched_now(net->sched), on_solve, net, 0);
    if (!net->solve_ev) fail(net, "scheduling a solve");
}

static inline void advance(flow *f, mt_time_ps now) {
    if (now > f->last_ps) {
        f->remaining -= f->rate * (double)(now - f->last_ps) / MT_PS_PER_S;
        if (f->remaining < 0) f->remaining = 0;
        f->last_ps = now;
    }
}

/* Tells the observer the new load of every link the solve reached. */
static void report_links(mt_flownet *net, mt_time_ps now) {
    int32_t n;
    const int32_t *links = mt_lmm_solved_cnsts(net->lmm, &n);
    for (int32_t i = 0; i < n; i++) {
        lstate *L = &net->lk[links[i]];
        double used = mt_lmm_cnst_usage(net->lmm, links[i]);
        if (used != L->reported_Bps) {
            L->reported_Bps = used;
            net->on_link(net->link_ctx, links[i], now, used);
        }
    }
}

/* A flow the solve reached: advanced to now; when its rate changed (or it had no event), its
 * drain event moves to the new end. */
static void rerate(mt_flownet *net, int32_t id, mt_time_ps now) {
    flow *f = &net->fl[id];
    advance(f, now);
    double r = mt_lmm_var_value(net->lmm, f->var);
    if (f->ev && r == f->rate) return;
    net->rate_changes++;
    f->rate = r;
    if (r <= 0) {
        if (f->ev) mt_sched_cancel(net->sched, f->ev);
        f->ev = 0;
        return;
    }
    mt_time_ps t = now + mt_ps_ceil(f->remaining / r);
    if (f->ev) {
        mt_sched_move(net->sched, f->ev, t);
    } else {
        f->ev = mt_sched_at(net->sched, t, on_drain, net, (uint64_t)id);
        if (!f->ev) fail(net, "scheduling a drain");
    }
}

static void on_solve(void *ctx, uint64_t arg) {
    (void)arg;
    mt_flownet *net = ctx;
    net->solve_ev = 0;
    mt_time_ps now = mt_sched_now(net->sched);
    if (mt_lmm_solve(net->lmm, NULL) != MT_OK) {
        fail(net, "in the max-min solve");
        return;
    }
    net->solves++;
    int32_t nv;
    const int32_t *vars = mt_lmm_solved_vars(net->lmm, &nv);
    if (nv == 0) return;
    if (net->on_link) report_links(net, now);
    for (int32_t i = 0; i < nv; i++) rerate(net, (int32_t)mt_lmm_var_data(net->lmm, vars[i]), now);
}

/* ---- flow life cycle ---- */
static void release(mt_flownet *net, int32_t id) {
    flow *f = &net->fl[id];
    if (f->var >= 0) mt_lmm_var_free(net->lmm, f->var);
    f->var = -1;
    f->state = F_FREE;
    f->next_free = net->free_head;
    net->free_head = id;
}

static void deliver(mt_flownet *net, int32_t id) {
    flow *f = &net->fl[id];
    mt_delivered_fn fn = f->fn;
    void *ctx = f->ctx;
    uint64_t tag = f->tag;
    net->st.delivered++;
    net->st.bytes += f->bytes;
    release(net, id);
    if (fn) fn(ctx, tag); /* may start flows and move net->fl: f is dead here */
}

static void on_deliver(void *ctx, uint64_t arg) { deliver(ctx, (int32_t)arg); }

static void arm_periodic(mt_flownet *net, int32_t l);

/* Puts flow id on every link of route (marking them modified), then updates the links' counts
 * and arms their periodic degradations. */
static mt_status link_flow(mt_flownet *net, int32_t id, const int32_t *route, int32_t nhops, mt_time_ps now,
                           mt_error *err) {
    if (mt_lmm_var_attach(net->lmm, net->fl[id].var, route, nhops, err) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "flow model: out of memory starting a flow");
    ensure_solve(net);
    for (int32_t h = 0; h < nhops; h++) {
        lstate *L = &net->lk[route[h]];
        int32_t n = mt_lmm_cnst_nvars(net->lmm, route[h]);
        if (n == 1) L->busy_since = now;
        if (n > L->peak) L->peak = n;
        if (net->per && net->per[route[h]].per.period_ps > 0 && !net->per[route[h]].pev) arm_periodic(net, route[h]);
    }
    return MT_OK;
}

/* Takes draining flow id off all its links (remaining advanced to now); `drained`: its bytes
 * count in the links' statistics. */
static void unlink_flow(mt_flownet *net, int32_t id, mt_time_ps now, int drained) {
    flow *f = &net->fl[id];
    advance(f, now);
    const int32_t *route;
    int32_t nhops = mt_lmm_var_cnsts(net->lmm, f->var, &route);
    mt_lmm_var_detach(net->lmm, f->var);
    ensure_solve(net);
    for (int32_t h = 0; h < nhops; h++) {
        lstate *L = &net->lk[route[h]];
        if (drained) L->bytes += f->bytes;
        if (mt_lmm_cnst_nvars(net->lmm, route[h]) > 0) continue;
        L->busy_ps += now - L->busy_since;
        if (net->on_link && L->reported_Bps != 0) {
            L->reported_Bps = 0;
            net->on_link(net->link_ctx, route[h], now, 0);
        }
    }
}

/* The flow's last byte has left its source: on_sent, then (one path latency later) delivery.
 * on_sent may start flows and move net->fl, so it runs after the delivery is scheduled (the
 * flow's slot stays taken until delivery). */
static void on_drain(void *ctx, uint64_t arg) {
    mt_flownet *net = ctx;
    int32_t id = (int32_t)arg;
    flow *f = &net->fl[id];
    mt_time_ps now = mt_sched_now(net->sched);
    net->st.flow_events++;
    f->ev = 0;
    f->remaining = 0;
    unlink_flow(net, id, now, 1);
    mt_lmm_var_free(net->lmm, f->var);
    f->var = -1;
    mt_sent_fn sent = f->sent_fn;
    void *sctx = f->ctx;
    uint64_t stag = f->tag;
    if (f->lat_ps == 0) {
        if (sent) sent(sctx, stag);
        deliver(net, id);
        return;
    }
    f->state = F_LATENCY;
    f->ev = mt_sched_at(net->sched, now + f->lat_ps, on_deliver, net, (uint64_t)id);
    if (!f->ev) fail(net, "scheduling a delivery");
    if (sent) sent(sctx, stag);
}

/* ---- perturbations ---- */

/* The route's latency: the topology's (base_ps, mt_topo_route_lat) plus the links' extra. */
static mt_time_ps route_latency(const mt_flownet *net, const int32_t *route, int32_t nhops, mt_time_ps base_ps) {
    mt_time_ps lat = base_ps;
    for (int32_t h = 0; net->n_extra_lat > 0 && h < nhops; h++) lat += net->lk[route[h]].extra_lat_ps;
    return lat;
}

static int in_window(const mt_link_periodic *p, mt_time_ps now) {
    return now >= p->start_ps && (now - p->start_ps) % p->period_ps < p->duration_ps;
}

/* The next time after `now` at which a periodic link's window opens or closes. */
static mt_time_ps next_boundary(const mt_link_periodic *p, mt_time_ps now) {
    if (now < p->start_ps) return p->start_ps;
    mt_time_ps ws = p->start_ps + (now - p->start_ps) / p->period_ps * p->period_ps;
    return now - ws < p->duration_ps ? ws + p->duration_ps : ws + p->period_ps;
}

/* The link's capacity from now on (marks it modified). */
static void refresh_cap(mt_flownet *net, int32_t l) {
    lstate *L = &net->lk[l];
    double cap = L->base * L->factor;
    const lperiodic *P = net->per ? &net->per[l] : NULL;
    if (P && P->per.period_ps > 0 && in_window(&P->per, mt_sched_now(net->sched))) cap *= P->per.factor;
    mt_lmm_cnst_set_capacity(net->lmm, l, cap);
    ensure_solve(net);
}

static void on_boundary(void *ctx, uint64_t arg);

/* Sets the periodic link's capacity for now and schedules its next boundary. */
static void arm_periodic(mt_flownet *net, int32_t l) {
    lperiodic *P = &net->per[l];
    mt_time_ps now = mt_sched_now(net->sched);
    refresh_cap(net, l);
    P->pev = mt_sched_at(net->sched, next_boundary(&P->per, now), on_boundary, net, (uint64_t)l);
    if (!P->pev) fail(net, "scheduling a periodic degradation");
}

static void on_boundary(void *ctx, uint64_t arg) {
    mt_flownet *net = ctx;
    int32_t l = (int32_t)arg;
    net->per[l].pev = 0;
    if (mt_lmm_cnst_nvars(net->lmm, l) == 0) return; /* idle: re-armed by the next flow start */
    arm_periodic(net, l);
}

static mt_status check_link(const mt_flownet *net, int32_t link, const char *what, mt_error *err) {
    if (link < 0 || link >= net->nlinks)
        return mt_fail(err, MT_EINVAL, "flow model: %s on link %d, which %s does not have", what,
                       (int)link, mt_topo_label(net->topo));
    return MT_OK;
}

static int factor_ok(double factor) { return factor > 0 && factor <= MT_LINK_FACTOR_MAX; }

static mt_status set_link_factor(void *self, int32_t link, double factor, mt_error *err) {
    mt_flownet *net = self;
    MT_CHECK(check_link(net, link, "a bandwidth factor", err));
    if (!factor_ok(factor))
        return mt_fail(err, MT_EINVAL, "flow model: a bandwidth factor must be > 0 and at most 1e6 (got %g; "
                       "to cut a link, fail it)", factor);
    net->lk[link].factor = factor;
    refresh_cap(net, link);
    return MT_OK;
}

static mt_status set_link_extra_latency(void *self, int32_t link, mt_time_ps extra_ps, mt_error *err) {
    mt_flownet *net = self;
    MT_CHECK(check_link(net, link, "an extra latency", err));
    if (extra_ps < 0 || extra_ps > MT_LINK_LAT_MAX_PS)
        return mt_fail(err, MT_EINVAL, "flow model: extra latency must be 0 to 1 s (got %lld ps)",
                       (long long)extra_ps);
    net->n_extra_lat += (extra_ps != 0) - (net->lk[link].extra_lat_ps != 0);
    net->lk[link].extra_lat_ps = extra_ps;
    return MT_OK;
}

static mt_status set_link_periodic(void *self, int32_t link, const mt_link_periodic *p, mt_error *err) {
    mt_flownet *net = self;
    MT_CHECK(check_link(net, link, "a periodic degradation", err));
    if (p->start_ps < 0 || p->period_ps <= 0 || p->duration_ps <= 0 || p->duration_ps > p->period_ps ||
        !factor_ok(p->factor))
        return mt_fail(err, MT_EINVAL, "flow model: periodic degradation needs start >= 0, "
                       "0 < duration <= period and 0 < factor <= 1e6");
    if (!net->per && !(net->per = calloc((size_t)net->nlinks + 1, sizeof *net->per)))
        return mt_fail(err, MT_ENOMEM, "flow model: out of memory setting a periodic degradation");
    lperiodic *P = &net->per[link];
    if (P->pev) mt_sched_cancel(net->sched, P->pev);
    P->pev = 0;
    P->per = *p;
    if (mt_lmm_cnst_nvars(net->lmm, link) > 0) arm_periodic(net, link);
    return MT_OK;
}

/* Puts a flow taken off its links onto the current route from its source to its destination. */
static mt_status reroute(mt_flownet *net, int32_t id, mt_time_ps now, mt_error *err) {
    const int32_t *route;
    int32_t nhops;
    flow *f = &net->fl[id];
    mt_time_ps base_ps;
    MT_CHECK(mt_topo_route_lat(net->topo, f->src, f->dst, &route, &nhops, &base_ps, err));
    f->lat_ps = route_latency(net, route, nhops, base_ps);
    return link_flow(net, id, route, nhops, now, err);
}

static mt_status fail_link(void *self, int32_t link, mt_error *err) {
    mt_flownet *net = self;
    MT_CHECK(check_link(net, link, "a failure", err));
    MT_CHECK(mt_topo_set_link_failed(net->topo, link, 1, err));
    mt_time_ps now = mt_sched_now(net->sched);
    while (mt_lmm_cnst_nvars(net->lmm, link) > 0) { /* every draining flow on it moves */
        int32_t id = (int32_t)mt_lmm_var_data(net->lmm, mt_lmm_cnst_var(net->lmm, link, 0));
        unlink_flow(net, id, now, 0);
        mt_status rc = reroute(net, id, now, err);
        if (rc != MT_OK) {
            if (net->fl[id].ev) mt_sched_cancel(net->sched, net->fl[id].ev);
            release(net, id);
            return rc;
        }
    }
    return MT_OK;
}

static void on_change(void *ctx, uint64_t arg) {
    mt_flownet *net = ctx;
    const change *c = &net->chg[arg];
    mt_error err = {0};
    net->chg_done++;
    mt_status rc = c->kind == MT_LINK_FACTOR    ? set_link_factor(net, c->link, c->value, &err)
                   : c->kind == MT_LINK_LATENCY ? set_link_extra_latency(net, c->link, (mt_time_ps)c->value, &err)
                                                : fail_link(net, c->link, &err);
    if (rc != MT_OK) {
        snprintf(net->msg, sizeof net->msg, "%s", err.msg);
        mt_sched_fail(net->sched, rc, net->msg);
    }
}

static mt_status change_link_at(void *self, mt_time_ps t, mt_link_change_kind kind, int32_t link, double value,
                                mt_error *err) {
    mt_flownet *net = self;
    MT_CHECK(check_link(net, link, "a scheduled change", err));
    if (t < mt_sched_now(net->sched))
        return mt_fail(err, MT_EINVAL, "flow model: a link change cannot be scheduled in the past");
    if (kind == MT_LINK_FACTOR && !factor_ok(value))
        return mt_fail(err, MT_EINVAL, "flow model: a bandwidth factor must be > 0 and at most 1e6 (got %g)",
                       value);
    if (kind == MT_LINK_LATENCY && !(value >= 0 && value <= (double)MT_LINK_LAT_MAX_PS))
        return mt_fail(err, MT_EINVAL, "flow model: extra latency must be 0 to 1 s");
    if (mt_vec_reserve(&net->chg, &net->chgcap, net->nchg + 1))
        return mt_fail(err, MT_ENOMEM, "flow model: out of memory scheduling a link change");
    net->chg[net->nchg] = (change){(int)kind, link, value};
    if (!mt_sched_at(net->sched, t, on_change, net, (uint64_t)net->nchg))
        return mt_fail(err, MT_ENOMEM, "flow model: out of memory scheduling a link change");
    net->nchg++;
    return MT_OK;
}

/* ---- starting a flow ---- */

static int32_t alloc_flow(mt_flownet *net) {
    int32_t id = net->free_head;
    if (id >= 0) {
        net->free_head = net->fl[id].next_free;
    } else {
        if (net->nfl >= INT32_MAX || mt_vec_reserve(&net->fl, &net->flcap, net->nfl + 1)) return -1;
        id = (int32_t)net->nfl++;
    }
    memset(&net->fl[id], 0, sizeof net->fl[id]);
    net->fl[id].var = -1;
    net->fl[id].next_free = -1;
    return id;
}

/* A flow with nothing to drain has left at once (an event now, ahead of its delivery). */
static void on_left(void *ctx, uint64_t arg) {
    mt_flownet *net = ctx;
    const flow *f = &net->fl[arg];
    if (f->state == F_LATENCY && f->sent_fn) f->sent_fn(f->ctx, f->tag);
}

/* A flow with nothing to drain (0 bytes or src == dst): delivered after its latency. */
static mt_status start_latency_only(mt_flownet *net, int32_t id, mt_time_ps now, mt_error *err) {
    flow *f = &net->fl[id];
    f->state = F_LATENCY;
    if (!f->sent_fn || mt_sched_at(net->sched, now, on_left, net, (uint64_t)id))
        f->ev = mt_sched_at(net->sched, now + f->lat_ps, on_deliver, net, (uint64_t)id);
    if (f->ev) return MT_OK;
    release(net, id);
    return mt_fail(err, MT_ENOMEM, "flow model: out of memory scheduling a delivery");
}

/* mt_flownet_start, and on_sent (may be NULL) when the last byte has left. */
static mt_status start_flow(mt_flownet *net, int32_t src, int32_t dst, double bytes, mt_sent_fn on_sent,
                            mt_delivered_fn on_delivered, void *ctx, uint64_t tag, int32_t *flow_id,
                            mt_error *err) {
    if (flow_id) *flow_id = -1;
    if (!(bytes >= 0) || !isfinite(bytes))
        return mt_fail(err, MT_EINVAL, "flow model: a send needs bytes >= 0 (got %g)", bytes);
    int32_t nn = mt_topo_nnodes(net->topo);
    if (src < 0 || src >= nn || dst < 0 || dst >= nn)
        return mt_fail(err, MT_EINVAL, "flow model: endpoint %d or %d is not a node of %s",
                       (int)src, (int)dst, mt_topo_label(net->topo));
    const int32_t *route;
    int32_t nhops;
    mt_time_ps base_ps;
    MT_CHECK(mt_topo_route_lat(net->topo, src, dst, &route, &nhops, &base_ps, err));
    int32_t id = alloc_flow(net);
    if (id < 0) return mt_fail(err, MT_ENOMEM, "flow model: out of memory starting a flow");
    mt_time_ps now = mt_sched_now(net->sched);
    flow *f = &net->fl[id];
    *f = (flow){.remaining = bytes, .bytes = bytes, .last_ps = now, .lat_ps = route_latency(net, route, nhops, base_ps),
                .sent_fn = on_sent, .fn = on_delivered, .ctx = ctx, .tag = tag, .src = src, .dst = dst, .var = -1,
                .next_free = -1};
    if (bytes == 0 || nhops == 0) {
        MT_CHECK(start_latency_only(net, id, now, err));
    } else {
        f->var = mt_lmm_var_new(net->lmm, id);
        mt_status rc = f->var < 0 ? mt_fail(err, MT_ENOMEM, "flow model: out of memory starting a flow")
                                  : link_flow(net, id, route, nhops, now, err);
        if (rc != MT_OK) {
            release(net, id);
            return rc;
        }
        net->fl[id].state = F_DRAINING;
        net->st.flow_events++;
        if (!net->solve_ev) return mt_fail(err, MT_ENOMEM, "flow model: out of memory scheduling a solve");
    }
    net->st.sends++;
    if (flow_id) *flow_id = id;
    return MT_OK;
}

mt_status mt_flownet_start(mt_flownet *net, int32_t src, int32_t dst, double bytes,
                           mt_delivered_fn on_delivered, void *ctx, uint64_t tag,
                           int32_t *flow_id, mt_error *err) {
    return start_flow(net, src, dst, bytes, NULL, on_delivered, ctx, tag, flow_id, err);
}

double mt_flownet_rate(const mt_flownet *net, int32_t id) {
    if (id < 0 || id >= net->nfl || net->fl[id].state != F_DRAINING) return -1;
    return net->fl[id].rate;
}

void mt_flownet_counters(const mt_flownet *net, uint64_t *solves, uint64_t *rate_changes) {
    if (solves) *solves = net->solves;
    if (rate_changes) *rate_changes = net->rate_changes;
}

/* ---- netmodel interface ---- */
static mt_status nm_send(void *self, int32_t src, int32_t dst, double bytes, mt_delivered_fn fn,
                         void *ctx, uint64_t tag, mt_error *err) {
    return mt_flownet_start(self, src, dst, bytes, fn, ctx, tag, NULL, err);
}

static mt_status nm_send_sent(void *self, int32_t src, int32_t dst, double bytes, mt_sent_fn on_sent,
                              mt_delivered_fn fn, void *ctx, uint64_t tag, mt_error *err) {
    return start_flow(self, src, dst, bytes, on_sent, fn, ctx, tag, NULL, err);
}

static int32_t nm_endpoints(void *self, const int32_t **ids) {
    int32_t n;
    *ids = mt_topo_gpus(((mt_flownet *)self)->topo, &n);
    return n;
}

static void nm_stats(void *self, mt_netstats *out) { *out = ((mt_flownet *)self)->st; }
static void nm_destroy(void *self) { mt_flownet_free(self); }

static mt_status nm_link_stats(void *self, int32_t link, mt_link_stats *out, mt_error *err) {
    const mt_flownet *net = self;
    MT_CHECK(check_link(net, link, "statistics", err));
    const lstate *L = &net->lk[link];
    int32_t n = mt_lmm_cnst_nvars(net->lmm, link);
    out->bytes = L->bytes;
    out->busy_ps = L->busy_ps;
    if (n > 0) out->busy_ps += mt_sched_now(net->sched) - L->busy_since;
    out->peak_flows = L->peak;
    out->flows_now = n;
    return MT_OK;
}

static void nm_set_link_observer(void *self, mt_link_rate_fn fn, void *ctx) {
    mt_flownet *net = self;
    net->on_link = fn;
    net->link_ctx = ctx;
}

/* A 0-byte send costs its route's latency (start_latency_only); fixed while no change is pending. */
static int nm_fixed_latency(void *self, int32_t src, int32_t dst, mt_time_ps *out_ps) {
    mt_flownet *net = self;
    const int32_t *route;
    int32_t nhops, nn = mt_topo_nnodes(net->topo);
    mt_time_ps base_ps;
    if (net->chg_done < net->nchg || src < 0 || src >= nn || dst < 0 || dst >= nn ||
        mt_topo_route_lat(net->topo, src, dst, &route, &nhops, &base_ps, NULL) != MT_OK)
        return 0;
    *out_ps = route_latency(net, route, nhops, base_ps);
    return 1;
}

static const mt_netmodel_ops flownet_ops = {
    .name = "flow",
    .send = nm_send,
    .endpoints = nm_endpoints,
    .stats = nm_stats,
    .destroy = nm_destroy,
    .set_link_factor = set_link_factor,
    .set_link_extra_latency = set_link_extra_latency,
    .fail_link = fail_link,
    .set_link_periodic = set_link_periodic,
    .change_link_at = change_link_at,
    .link_stats = nm_link_stats,
    .set_link_observer = nm_set_link_observer,
    .send_sent = nm_send_sent,
    .fixed_latency = nm_fixed_latency,
};

mt_netmodel mt_flownet_netmodel(mt_flownet *net) { return (mt_netmodel){&flownet_ops, net}; }

/* ---- the model kind (netmodels/registry.h) ---- */
static mt_status create(const void *params, mt_topo *topo, mt_sched sched, mt_netmodel *out, mt_error *err) {
    (void)params;
    if (!topo) return mt_fail(err, MT_EINVAL, "the flow model needs a topology (--topology)");
    mt_flownet *net;
    MT_CHECK(mt_flownet_new(topo, sched, &net, err));
    *out = mt_flownet_netmodel(net);
    return MT_OK;
}

const mt_netmodel_kind mt_netmodel_kind_flow = {
    .name = "flow",
    .help = "packet-switched: max-min fair flows over the topology's links (default)",
    .uses_links = 1,
    .create = create,
};

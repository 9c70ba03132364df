/* network/flow.c — see flow.h.
 *
 * Invariants: a live flow (state DRAINING) sits in the flow list of each link of its route, at
 * index hop_slot(f)[h] of link hop_link(f)[h]; lk[l].n counts them. f->remaining is exact as of
 * f->last_ps at rate f->rate; f->ev is its pending drain (or delivery) event, or 0.
 * Between a change and the solve event at the same instant rates are stale, but no time passes.
 * Perturbations keep these invariants: a bandwidth change sets lk[l].cap and marks l modified
 * (the next solve re-rates its component, mid-flow); a periodic link's cap is cap_at(now)
 * whenever it carries flows (its boundary event `pev` is pending exactly then, lazily re-armed
 * by the flow starts); a failure removes each draining flow crossing the link from all its
 * links (remaining advanced to now) and inserts it on its new route, marking both modified.
 */
#include "network/flow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/vec.h"

#define INLINE_HOPS 6

enum { F_FREE, F_DRAINING, F_LATENCY };

typedef struct flow {
    double remaining, rate, bytes, new_rate;
    mt_time_ps last_ps, lat_ps;
    mt_event_id ev;
    mt_delivered_fn fn;
    void *ctx;
    uint64_t tag;
    int32_t nhops, next_free;
    int32_t src, dst;
    uint32_t mark;
    int32_t state;
    union {
        int32_t in[2 * INLINE_HOPS]; /* links then slots */
        int32_t *heap;
    } h;
} flow;

typedef struct lref {
    int32_t flow, hop;
} lref;

typedef struct lstate {
    double cap, rem;
    int32_t n, fcap, unfixed;
    uint32_t mark, ver;
    int32_t modified;
    lref *fl;
    double bytes;
    mt_time_ps busy_ps, busy_since;
    int32_t peak;
    double reported_Bps; /* last rate given to the link observer */
    double base, factor;   /* topology bandwidth; factor set by mt_flownet_set_link_factor */
    mt_time_ps extra_lat_ps;
    mt_time_ps p_start, p_period, p_dur; /* periodic degradation (p_period 0: none) */
    double p_factor;
    mt_event_id pev;       /* pending periodic boundary */
} lstate;

typedef struct change { /* a scheduled perturbation */
    int kind;
    int32_t link;
    double value;
} change;

typedef struct hitem {
    double share;
    int32_t link;
    uint32_t ver;
} hitem;

struct mt_flownet {
    mt_topo *topo;
    mt_sched sched;
    int32_t nlinks;
    lstate *lk;
    flow *fl;
    int32_t nfl, flcap, free_head;
    int32_t *mod;
    int32_t nmod;
    mt_event_id solve_ev;
    uint32_t epoch;
    int32_t *clinks, *cflows;
    int32_t ncl, ncf, clcap, cfcap;
    hitem *heap;
    size_t nheap, hcap;
    mt_netstats st;
    uint64_t solves, rate_changes;
    mt_link_rate_fn on_link;
    void *link_ctx;
    change *chg;
    int64_t nchg, chgcap;
    char msg[MT_ERRMSG_MAX];
};

static inline int32_t *hop_link(flow *f) { return f->nhops <= INLINE_HOPS ? f->h.in : f->h.heap; }
static inline int32_t *hop_slot(flow *f) { return hop_link(f) + f->nhops; }

mt_status mt_flownet_new(mt_topo *topo, mt_sched sched, mt_flownet **out, mt_error *err) {
    *out = NULL;
    mt_flownet *n = calloc(1, sizeof *n);
    if (!n) return mt_fail(err, MT_ENOMEM, "out of memory creating the flow model");
    n->topo = topo;
    n->sched = sched;
    n->nlinks = mt_topo_nlinks(topo);
    n->free_head = -1;
    n->lk = calloc((size_t)n->nlinks + 1, sizeof *n->lk);
    n->mod = malloc(((size_t)n->nlinks + 1) * sizeof *n->mod);
    if (!n->lk || !n->mod) {
        mt_flownet_free(n);
        return mt_fail(err, MT_ENOMEM, "out of memory creating the flow model");
    }
    for (int32_t l = 0; l < n->nlinks; l++) {
        n->lk[l].cap = n->lk[l].base = mt_topo_link(topo, l)->bw_Bps;
        n->lk[l].factor = 1;
    }
    *out = n;
    return MT_OK;
}

void mt_flownet_free(mt_flownet *net) {
    if (!net) return;
    for (int32_t l = 0; net->lk && l < net->nlinks; l++) free(net->lk[l].fl);
    for (int32_t i = 0; i < net->nfl; i++)
        if (net->fl[i].state != F_FREE && net->fl[i].nhops > INLINE_HOPS) free(net->fl[i].h.heap);
    free(net->lk);
    free(net->fl);
    free(net->mod);
    free(net->clinks);
    free(net->cflows);
    free(net->heap);
    free(net->chg);
    free(net);
}

/* ---- small growable arrays ---- */
static int reserve(void **p, int32_t *cap, size_t elem, int32_t need) {
    if (need <= *cap) return 1;
    int32_t ncap = *cap ? *cap * 2 : 64;
    while (ncap < need) ncap *= 2;
    void *np = realloc(*p, (size_t)ncap * elem);
    if (!np) return 0;
    *p = np;
    *cap = ncap;
    return 1;
}

static void fail(mt_flownet *net, const char *what) {
    snprintf(net->msg, sizeof net->msg, "flow model: out of memory %s", what);
    mt_sched_fail(net->sched, MT_ENOMEM, net->msg);
}

/* ---- the lazy max-min solve ---- */
static void on_solve(void *ctx, uint64_t arg);

static void mark_modified(mt_flownet *net, int32_t l) {
    if (net->lk[l].modified) return;
    net->lk[l].modified = 1;
    net->mod[net->nmod++] = l;
    if (!net->solve_ev) {
        net->solve_ev = mt_sched_at(net->sched, mt_sched_now(net->sched), on_solve, net, 0);
        if (!net->solve_ev) fail(net, "scheduling a solve");
    }
}

static void heap_push(mt_flownet *net, double share, int32_t link, uint32_t ver) {
    if (net->nheap == net->hcap) {
        size_t ncap = net->hcap ? net->hcap * 2 : 256;
        hitem *nh = realloc(net->heap, ncap * sizeof *nh);
        if (!nh) {
            fail(net, "in the max-min solve");
            return;
        }
        net->heap = nh;
        net->hcap = ncap;
    }
    size_t i = net->nheap++;
    hitem it = {share, link, ver};
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (net->heap[p].share <= share) break;
        net->heap[i] = net->heap[p];
        i = p;
    }
    net->heap[i] = it;
}

static hitem heap_pop(mt_flownet *net) {
    hitem top = net->heap[0], last = net->heap[--net->nheap];
    size_t i = 0, n = net->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && net->heap[c + 1].share < net->heap[c].share) c++;
        if (net->heap[c].share >= last.share) break;
        net->heap[i] = net->heap[c];
        i = c;
    }
    if (n > 0) net->heap[i] = last;
    return top;
}

static inline void advance(flow *f, mt_time_ps now) {
    if (now > f->last_ps) {
        f->remaining -= f->rate * (double)(now - f->last_ps) / MT_PS_PER_S;
        if (f->remaining < 0) f->remaining = 0;
        f->last_ps = now;
    }
}

static void on_drain(void *ctx, uint64_t arg);

/* Collects the component reachable from the modified links into clinks/cflows. */
static int collect(mt_flownet *net, mt_time_ps now) {
    uint32_t ep = ++net->epoch;
    net->ncl = net->ncf = 0;
    for (int32_t i = 0; i < net->nmod; i++) {
        int32_t l = net->mod[i];
        net->lk[l].modified = 0;
        if (net->lk[l].mark == ep || net->lk[l].n == 0) continue;
        if (!reserve((void **)&net->clinks, &net->clcap, sizeof(int32_t), net->ncl + 1)) return 0;
        net->lk[l].mark = ep;
        net->clinks[net->ncl++] = l;
    }
    net->nmod = 0;
    for (int32_t i = 0; i < net->ncl; i++) {
        lstate *L = &net->lk[net->clinks[i]];
        for (int32_t k = 0; k < L->n; k++) {
            flow *f = &net->fl[L->fl[k].flow];
            if (f->mark == ep) continue;
            f->mark = ep;
            advance(f, now);
            if (!reserve((void **)&net->cflows, &net->cfcap, sizeof(int32_t), net->ncf + 1)) return 0;
            net->cflows[net->ncf++] = L->fl[k].flow;
            int32_t *hl = hop_link(f);
            for (int32_t h = 0; h < f->nhops; h++) {
                lstate *M = &net->lk[hl[h]];
                if (M->mark == ep) continue;
                if (!reserve((void **)&net->clinks, &net->clcap, sizeof(int32_t), net->ncl + 1))
                    return 0;
                M->mark = ep;
                net->clinks[net->ncl++] = hl[h];
            }
        }
    }
    return 1;
}

static void progressive_fill(mt_flownet *net) {
    net->nheap = 0;
    for (int32_t i = 0; i < net->ncf; i++) net->fl[net->cflows[i]].new_rate = -1;
    for (int32_t i = 0; i < net->ncl; i++) {
        lstate *L = &net->lk[net->clinks[i]];
        L->rem = L->cap;
        L->unfixed = L->n;
        heap_push(net, L->rem / L->n, net->clinks[i], ++L->ver);
    }
    while (net->nheap > 0) {
        hitem it = heap_pop(net);
        lstate *L = &net->lk[it.link];
        if (it.ver != L->ver || L->unfixed == 0) continue;
        double share = it.share > 0 ? it.share : 0;
        for (int32_t k = 0; k < L->n; k++) {
            flow *f = &net->fl[L->fl[k].flow];
            if (f->new_rate >= 0) continue;
            f->new_rate = share;
            int32_t *hl = hop_link(f);
            for (int32_t h = 0; h < f->nhops; h++) {
                lstate *M = &net->lk[hl[h]];
                M->rem -= share;
                M->unfixed--;
                if (hl[h] != it.link && M->unfixed > 0)
                    heap_push(net, (M->rem > 0 ? M->rem : 0) / M->unfixed, hl[h], ++M->ver);
            }
        }
    }
}

static void on_solve(void *ctx, uint64_t arg) {
    (void)arg;
    mt_flownet *net = ctx;
    net->solve_ev = 0;
    mt_time_ps now = mt_sched_now(net->sched);
    if (!collect(net, now)) {
        fail(net, "collecting a component");
        return;
    }
    net->solves++;
    if (net->ncf == 0) return;
    progressive_fill(net);
    if (net->on_link)
        for (int32_t i = 0; i < net->ncl; i++) {
            lstate *L = &net->lk[net->clinks[i]];
            double used = L->cap - (L->rem > 0 ? L->rem : 0);
            if (used != L->reported_Bps) {
                L->reported_Bps = used;
                net->on_link(net->link_ctx, net->clinks[i], now, used);
            }
        }
    for (int32_t i = 0; i < net->ncf; i++) {
        int32_t id = net->cflows[i];
        flow *f = &net->fl[id];
        double r = f->new_rate;
        if (f->ev && r == f->rate) continue;
        net->rate_changes++;
        f->rate = r;
        if (r <= 0) {
            if (f->ev) mt_sched_cancel(net->sched, f->ev);
            f->ev = 0;
            continue;
        }
        mt_time_ps t = now + mt_ps_ceil(f->remaining / r);
        if (f->ev) {
            mt_sched_move(net->sched, f->ev, t);
        } else {
            f->ev = mt_sched_at(net->sched, t, on_drain, net, (uint64_t)id);
            if (!f->ev) {
                fail(net, "scheduling a drain");
                return;
            }
        }
    }
}

/* ---- flow life cycle ---- */
static void release(mt_flownet *net, int32_t id) {
    flow *f = &net->fl[id];
    if (f->nhops > INLINE_HOPS) free(f->h.heap);
    f->state = F_FREE;
    f->nhops = 0;
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

/* Puts flow id on every link of route (room reserved by the caller) and marks them modified. */
static void link_flow(mt_flownet *net, int32_t id, const int32_t *route, int32_t nhops, mt_time_ps now) {
    flow *f = &net->fl[id];
    int32_t *hl = hop_link(f), *hs = hop_slot(f);
    for (int32_t h = 0; h < nhops; h++) {
        lstate *L = &net->lk[route[h]];
        hl[h] = route[h];
        hs[h] = L->n;
        L->fl[L->n++] = (lref){id, h};
        if (L->n == 1) L->busy_since = now;
        if (L->n > L->peak) L->peak = L->n;
        if (L->p_period > 0 && !L->pev) arm_periodic(net, route[h]);
        mark_modified(net, route[h]);
    }
}

/* Takes draining flow id off all its links (remaining advanced to now); `drained`: its bytes
 * count in the links' statistics. */
static void unlink_flow(mt_flownet *net, int32_t id, mt_time_ps now, int drained) {
    flow *f = &net->fl[id];
    advance(f, now);
    int32_t *hl = hop_link(f), *hs = hop_slot(f);
    for (int32_t h = 0; h < f->nhops; h++) {
        lstate *L = &net->lk[hl[h]];
        int32_t s = hs[h];
        lref last = L->fl[--L->n];
        L->fl[s] = last;
        hop_slot(&net->fl[last.flow])[last.hop] = s;
        if (drained) L->bytes += f->bytes;
        if (L->n == 0) {
            L->busy_ps += now - L->busy_since;
            if (net->on_link && L->reported_Bps != 0) {
                L->reported_Bps = 0;
                net->on_link(net->link_ctx, hl[h], now, 0);
            }
        } else
            mark_modified(net, hl[h]);
    }
}

static void on_drain(void *ctx, uint64_t arg) {
    mt_flownet *net = ctx;
    int32_t id = (int32_t)arg;
    flow *f = &net->fl[id];
    mt_time_ps now = mt_sched_now(net->sched);
    net->st.flow_events++;
    f->ev = 0;
    f->remaining = 0;
    unlink_flow(net, id, now, 1);
    if (f->lat_ps == 0) {
        deliver(net, id);
        return;
    }
    f->state = F_LATENCY;
    f->ev = mt_sched_at(net->sched, now + f->lat_ps, on_deliver, net, (uint64_t)id);
    if (!f->ev) fail(net, "scheduling a delivery");
}

/* ---- perturbations ---- */

static mt_time_ps route_latency(const mt_flownet *net, const int32_t *route, int32_t nhops) {
    mt_time_ps lat = mt_topo_path_latency(net->topo, route, nhops);
    for (int32_t h = 0; h < nhops; h++) lat += net->lk[route[h]].extra_lat_ps;
    return lat;
}

static int in_window(const lstate *L, mt_time_ps now) {
    return now >= L->p_start && (now - L->p_start) % L->p_period < L->p_dur;
}

/* The next time after `now` at which a periodic link's window opens or closes. */
static mt_time_ps next_boundary(const lstate *L, mt_time_ps now) {
    if (now < L->p_start) return L->p_start;
    mt_time_ps ws = L->p_start + (now - L->p_start) / L->p_period * L->p_period;
    return now - ws < L->p_dur ? ws + L->p_dur : ws + L->p_period;
}

static void refresh_cap(mt_flownet *net, int32_t l) {
    lstate *L = &net->lk[l];
    L->cap = L->base * L->factor;
    if (L->p_period > 0 && in_window(L, mt_sched_now(net->sched))) L->cap *= L->p_factor;
}

static void on_boundary(void *ctx, uint64_t arg);

/* Sets the periodic link's capacity for now and schedules its next boundary. */
static void arm_periodic(mt_flownet *net, int32_t l) {
    lstate *L = &net->lk[l];
    mt_time_ps now = mt_sched_now(net->sched);
    refresh_cap(net, l);
    L->pev = mt_sched_at(net->sched, next_boundary(L, now), on_boundary, net, (uint64_t)l);
    if (!L->pev) fail(net, "scheduling a periodic degradation");
}

static void on_boundary(void *ctx, uint64_t arg) {
    mt_flownet *net = ctx;
    int32_t l = (int32_t)arg;
    net->lk[l].pev = 0;
    if (net->lk[l].n == 0) return; /* idle: re-armed by the next flow start */
    arm_periodic(net, l);
    mark_modified(net, l);
}

static mt_status check_link(const mt_flownet *net, int32_t link, const char *what, mt_error *err) {
    if (link < 0 || link >= net->nlinks)
        return mt_fail(err, MT_EINVAL, "flow model: %s on link %d, which %s does not have", what,
                       (int)link, mt_topo_label(net->topo));
    return MT_OK;
}

mt_status mt_flownet_set_link_factor(mt_flownet *net, int32_t link, double factor, mt_error *err) {
    MT_CHECK(check_link(net, link, "a bandwidth factor", err));
    if (!(factor > 0) || !(factor <= MT_LINK_FACTOR_MAX))
        return mt_fail(err, MT_EINVAL, "flow model: a bandwidth factor must be > 0 and at most 1e6 (got %g; "
                       "to cut a link, fail it)", factor);
    net->lk[link].factor = factor;
    refresh_cap(net, link);
    mark_modified(net, link);
    return MT_OK;
}

mt_status mt_flownet_set_link_extra_latency(mt_flownet *net, int32_t link, mt_time_ps extra_ps,
                                            mt_error *err) {
    MT_CHECK(check_link(net, link, "an extra latency", err));
    if (extra_ps < 0 || extra_ps > MT_LINK_LAT_MAX_PS)
        return mt_fail(err, MT_EINVAL, "flow model: extra latency must be 0 to 1 s (got %lld ps)",
                       (long long)extra_ps);
    net->lk[link].extra_lat_ps = extra_ps;
    return MT_OK;
}

mt_status mt_flownet_set_link_periodic(mt_flownet *net, int32_t link, mt_time_ps start,
                                       mt_time_ps period, mt_time_ps duration, double factor,
                                       mt_error *err) {
    MT_CHECK(check_link(net, link, "a periodic degradation", err));
    if (start < 0 || period <= 0 || duration <= 0 || duration > period || !(factor > 0) ||
        !(factor <= MT_LINK_FACTOR_MAX))
        return mt_fail(err, MT_EINVAL, "flow model: periodic degradation needs start >= 0, "
                       "0 < duration <= period and 0 < factor <= 1e6");
    lstate *L = &net->lk[link];
    if (L->pev) mt_sched_cancel(net->sched, L->pev);
    L->pev = 0;
    L->p_start = start;
    L->p_period = period;
    L->p_dur = duration;
    L->p_factor = factor;
    if (L->n > 0) {
        arm_periodic(net, link);
        mark_modified(net, link);
    }
    return MT_OK;
}


/* Puts a flow taken off its links onto the current route from its source to its destination. */
static mt_status reroute(mt_flownet *net, int32_t id, mt_time_ps now, mt_error *err) {
    const int32_t *route;
    int32_t nhops;
    flow *f = &net->fl[id];
    MT_CHECK(mt_topo_route(net->topo, f->src, f->dst, &route, &nhops, err));
    for (int32_t h = 0; h < nhops; h++) {
        lstate *L = &net->lk[route[h]];
        if (!reserve((void **)&L->fl, &L->fcap, sizeof(lref), L->n + 1))
            return mt_fail(err, MT_ENOMEM, "flow model: out of memory re-routing a flow");
    }
    f = &net->fl[id];
    if (nhops != f->nhops) {
        int32_t *heap = nhops > INLINE_HOPS ? malloc(2 * (size_t)nhops * sizeof(int32_t)) : NULL;
        if (nhops > INLINE_HOPS && !heap)
            return mt_fail(err, MT_ENOMEM, "flow model: out of memory re-routing a flow");
        if (f->nhops > INLINE_HOPS) free(f->h.heap);
        f->nhops = nhops;
        if (heap) f->h.heap = heap;
    }
    f->lat_ps = route_latency(net, route, nhops);
    link_flow(net, id, route, nhops, now);
    return MT_OK;
}

mt_status mt_flownet_fail_link(mt_flownet *net, int32_t link, mt_error *err) {
    MT_CHECK(check_link(net, link, "a failure", err));
    MT_CHECK(mt_topo_set_link_failed(net->topo, link, 1, err));
    mt_time_ps now = mt_sched_now(net->sched);
    lstate *L = &net->lk[link];
    while (L->n > 0) { /* every draining flow on the link moves; each pass removes one */
        int32_t id = L->fl[0].flow;
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
    mt_status rc = c->kind == MT_LINK_FACTOR   ? mt_flownet_set_link_factor(net, c->link, c->value, &err)
                   : c->kind == MT_LINK_LATENCY ? mt_flownet_set_link_extra_latency(net, c->link, (mt_time_ps)c->value, &err)
                                                : mt_flownet_fail_link(net, c->link, &err);
    if (rc != MT_OK) {
        snprintf(net->msg, sizeof net->msg, "%s", err.msg);
        mt_sched_fail(net->sched, rc, net->msg);
    }
}

mt_status mt_flownet_schedule_change(mt_flownet *net, mt_time_ps t, mt_link_change_kind kind,
                                     int32_t link, double value, mt_error *err) {
    MT_CHECK(check_link(net, link, "a scheduled change", err));
    if (t < mt_sched_now(net->sched))
        return mt_fail(err, MT_EINVAL, "flow model: a link change cannot be scheduled in the past");
    if (kind == MT_LINK_FACTOR && (!(value > 0) || !(value <= MT_LINK_FACTOR_MAX)))
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

static int32_t alloc_flow(mt_flownet *net) {
    if (net->free_head >= 0) {
        int32_t id = net->free_head;
        net->free_head = net->fl[id].next_free;
        return id;
    }
    if (!reserve((void **)&net->fl, &net->flcap, sizeof(flow), net->nfl + 1)) return -1;
    net->fl[net->nfl].state = F_FREE;
    return net->nfl++;
}

mt_status mt_flownet_start(mt_flownet *net, int32_t src, int32_t dst, double bytes,
                           mt_delivered_fn on_delivered, void *ctx, uint64_t tag,
                           int32_t *flow_id, mt_error *err) {
    if (flow_id) *flow_id = -1;
    if (!(bytes >= 0) || !isfinite(bytes))
        return mt_fail(err, MT_EINVAL, "flow model: a send needs bytes >= 0 (got %g)", bytes);
    int32_t nn = mt_topo_nnodes(net->topo);
    if (src < 0 || src >= nn || dst < 0 || dst >= nn)
        return mt_fail(err, MT_EINVAL, "flow model: endpoint %d or %d is not a node of %s",
                       (int)src, (int)dst, mt_topo_label(net->topo));
    const int32_t *route;
    int32_t nhops;
    MT_CHECK(mt_topo_route(net->topo, src, dst, &route, &nhops, err));
    int32_t id = alloc_flow(net);
    if (id < 0) return mt_fail(err, MT_ENOMEM, "flow model: out of memory starting a flow");
    flow *f = &net->fl[id];
    memset(f, 0, sizeof *f);
    f->nhops = nhops;
    if (nhops > INLINE_HOPS) {
        f->h.heap = malloc(2 * (size_t)nhops * sizeof(int32_t));
        if (!f->h.heap) {
            f->nhops = 0;
            release(net, id);
            return mt_fail(err, MT_ENOMEM, "flow model: out of memory starting a flow");
        }
    }
    /* reserve room on every link first so a failure leaves nothing half-inserted */
    for (int32_t h = 0; h < nhops; h++) {
        lstate *L = &net->lk[route[h]];
        if (!reserve((void **)&L->fl, &L->fcap, sizeof(lref), L->n + 1)) {
            release(net, id);
            return mt_fail(err, MT_ENOMEM, "flow model: out of memory starting a flow");
        }
    }
    mt_time_ps now = mt_sched_now(net->sched);
    f->bytes = f->remaining = bytes;
    f->last_ps = now;
    f->lat_ps = route_latency(net, route, nhops);
    f->src = src;
    f->dst = dst;
    f->fn = on_delivered;
    f->ctx = ctx;
    f->tag = tag;
    f->next_free = -1;
    net->st.sends++;
    if (flow_id) *flow_id = id;
    if (bytes == 0 || nhops == 0) {
        f->state = F_LATENCY;
        f->ev = mt_sched_at(net->sched, now + f->lat_ps, on_deliver, net, (uint64_t)id);
        if (!f->ev) {
            release(net, id);
            return mt_fail(err, MT_ENOMEM, "flow model: out of memory scheduling a delivery");
        }
        return MT_OK;
    }
    f->state = F_DRAINING;
    net->st.flow_events++;
    link_flow(net, id, route, nhops, now);
    if (!net->solve_ev)
        return mt_fail(err, MT_ENOMEM, "flow model: out of memory scheduling a solve");
    return MT_OK;
}

double mt_flownet_rate(const mt_flownet *net, int32_t id) {
    if (id < 0 || id >= net->nfl || net->fl[id].state != F_DRAINING) return -1;
    return net->fl[id].rate;
}

void mt_flownet_link_stats(const mt_flownet *net, int32_t link, mt_link_stats *out) {
    const lstate *L = &net->lk[link];
    out->bytes = L->bytes;
    out->busy_ps = L->busy_ps;
    if (L->n > 0) out->busy_ps += mt_sched_now(net->sched) - L->busy_since;
    out->peak_flows = L->peak;
    out->flows_now = L->n;
}

void mt_flownet_set_link_observer(mt_flownet *net, mt_link_rate_fn fn, void *ctx) {
    net->on_link = fn;
    net->link_ctx = ctx;
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
static int32_t nm_endpoints(void *self, const int32_t **ids) {
    int32_t n;
    *ids = mt_topo_gpus(((mt_flownet *)self)->topo, &n);
    return n;
}
static void nm_stats(void *self, mt_netstats *out) { *out = ((mt_flownet *)self)->st; }
static void nm_destroy(void *self) { mt_flownet_free(self); }

static const mt_netmodel_ops flownet_ops = {
    .name = "flow",
    .send = nm_send,
    .endpoints = nm_endpoints,
    .stats = nm_stats,
    .destroy = nm_destroy,
};

mt_netmodel mt_flownet_netmodel(mt_flownet *net) { return (mt_netmodel){&flownet_ops, net}; }

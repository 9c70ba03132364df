/* network/flow.c — see flow.h.
 *
 * Invariants: a live flow (state DRAINING) sits in the flow list of each link of its route, at
 * index hop_slot(f)[h] of link hop_link(f)[h]; lk[l].n counts them. f->remaining is exact as of
 * f->last_ps at rate f->rate; f->ev is its pending drain (or delivery) event, or 0.
 * Between a change and the solve event at the same instant rates are stale, but no time passes.
 */
#include "network/flow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
} lstate;

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
    for (int32_t l = 0; l < n->nlinks; l++) n->lk[l].cap = mt_topo_link(topo, l)->bw_Bps;
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

static void on_drain(void *ctx, uint64_t arg) {
    mt_flownet *net = ctx;
    int32_t id = (int32_t)arg;
    flow *f = &net->fl[id];
    mt_time_ps now = mt_sched_now(net->sched);
    net->st.flow_events++;
    f->ev = 0;
    f->remaining = 0;
    int32_t *hl = hop_link(f), *hs = hop_slot(f);
    for (int32_t h = 0; h < f->nhops; h++) {
        lstate *L = &net->lk[hl[h]];
        int32_t s = hs[h];
        lref last = L->fl[--L->n];
        L->fl[s] = last;
        hop_slot(&net->fl[last.flow])[last.hop] = s;
        L->bytes += f->bytes;
        if (L->n == 0) {
            L->busy_ps += now - L->busy_since;
            if (net->on_link && L->reported_Bps != 0) {
                L->reported_Bps = 0;
                net->on_link(net->link_ctx, hl[h], now, 0);
            }
        } else
            mark_modified(net, hl[h]);
    }
    if (f->lat_ps == 0) {
        deliver(net, id);
        return;
    }
    f->state = F_LATENCY;
    f->ev = mt_sched_at(net->sched, now + f->lat_ps, on_deliver, net, (uint64_t)id);
    if (!f->ev) fail(net, "scheduling a delivery");
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
    f->lat_ps = mt_topo_path_latency(net->topo, route, nhops);
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
    int32_t *hl = hop_link(f), *hs = hop_slot(f);
    for (int32_t h = 0; h < nhops; h++) {
        lstate *L = &net->lk[route[h]];
        hl[h] = route[h];
        hs[h] = L->n;
        L->fl[L->n++] = (lref){id, h};
        if (L->n == 1) L->busy_since = now;
        if (L->n > L->peak) L->peak = L->n;
        mark_modified(net, route[h]);
    }
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

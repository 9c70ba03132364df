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
 * Network folding (flow.h): a VIRTUAL flow's links hold only VIRTUAL flows (vn == vcnt) and their
 * copy links no flow (creal == 0), so its copies are translates of it; a FOLD_COPY drains in the
 * instant its representative does; lk[].vn counts solver variables only, a copy link's virtual
 * share is its replica-0 link's vcnt / vsince / vbusy / vpeak / vbytes.
 */
#include "netmodels/flow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "network/lmm.h"
#include "util/hugemem.h"
#include "util/vec.h"

enum { F_FREE, F_DRAINING, F_LATENCY };
/* a source's destinations whose copies' routes fold_routes_ok remembers as checked (a pipeline
 * stage's GPU sends to its two neighbour stages and its tensor-parallel ring peers) */
enum { CHECK_WAYS = 4 };
/* network folding: a flow's part (netmodel.h). VIRTUAL: replica 0's copy of a folded send whose
 * other copies are not simulated; REAL: one whose copies are flows (COPY: no callbacks, checked
 * to drain when their representative does). */
enum { FOLD_NO = 0, FOLD_VIRTUAL, FOLD_REAL, FOLD_COPY };

typedef struct flow {
    double remaining, rate, bytes;
    mt_time_ps last_ps, lat_ps;
    mt_event_id ev;
    mt_sent_fn sent_fn; /* NULL: nobody asked when it leaves */
    mt_delivered_fn fn;
    void *ctx;
    uint64_t tag;
    int32_t src, dst, var, next_free, state;
    int32_t folded;          /* FOLD_* */
    int32_t rep, kidx;       /* FOLD_COPY: its representative (checked by rep_gen); scratch */
    uint32_t gen, rep_gen;   /* gen: bumped when the slot is taken */
    mt_time_ps ev_ps, drained_ps; /* when its drain event is due; when it drained */
    uint64_t ev_order;       /* the model's own order of scheduling drain events */
} flow;

typedef struct lstate {
    double bytes;
    mt_time_ps busy_ps, busy_since;
    int32_t peak, vn; /* vn: flows on the link now (solver variables) */
} lstate; /* 32 bytes, all zero (calloc) until the link is used: 6.3 M links at 2^20 GPUs */

typedef struct lperiodic { /* a link's operations (net->per, made on the first one) */
    mt_link_periodic per; /* periodic degradation; period 0: none */
    mt_event_id pev;      /* pending periodic boundary */
    double factor;        /* set by set_link_factor (0: never set, i.e. 1) */
    mt_time_ps extra_lat_ps;
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
    uint64_t *lbusy; /* per link a bit: lk[].vn > 0 (busy_set), read where flow groups look for free
                      * links (0.8 MB at 6.3 M links: in cache, where lk[] is a miss a hop) */
    lperiodic *per; /* per link, NULL until a link operation */
    double *reported; /* per link, the last rate given to the link observer; NULL until one is set */
    flow *fl;
    int64_t nfl, flcap;
    int32_t free_head;
    mt_event_id solve_ev;
    mt_netstats st;
    mt_link_rate_fn on_link;
    void *link_ctx;
    change *chg;
    int64_t nchg, chgcap;
    int64_t chg_done;        /* scheduled changes that have taken effect */
    int32_t n_extra_lat;     /* links with an extra latency */
    int perturbed;           /* a link operation was used: no folding */
    /* network folding (netmodel.h): NULL when off */
    const mt_netfold *fold;
    int fold_dead;           /* broken: the caller stops the run; no more checks */
    int32_t *fold_e;         /* per node: its index among replica 0's endpoints + 1, or 0 (fold_e_of;
                              * calloc: the nodes that are none cost no memory) */
    int32_t *fold_k;         /* per replica: its endpoints are replica 0's shifted by fold_k[d] units of
                              * the topology's translation symmetry (mt_topo_set_shift), or NULL */
    /* the copy map, learned from the routes as folded sends come: replica 0's link l has index
     * rix[l] - 1 (0: none yet) and its copy in replica d is cmap[(rix[l] - 1) * D + d]; a copy
     * link's replica-0 link is orig[] - 1 (0: not a copy link; both zeroed by calloc, so that the
     * links nobody uses cost no memory; read through rix_of / orig_of); srt: the indexed links by id, so that every
     * replica's copies keep replica 0's id order */
    int32_t *rix, *orig, *cmap, *srt;
    int64_t nrix, cmapcap, srtcap;
    /* per replica-0 link l0: its virtual folded flows now (their copies are on l0's copy links,
     * which hold no flow of their own meanwhile), since when, their most at once, the bytes of
     * those drained and the time with one or more; creal: flows on l0's copy links (any replica) */
    int32_t *vcnt, *vpeak, *creal;
    mt_time_ps *vsince, *vbusy;
    double *vbytes;
    int32_t (*checked)[CHECK_WAYS]; /* per replica-0 endpoint: the last destinations whose copies' routes were checked */
    uint64_t ev_seq;         /* ev_order source */
    uint32_t *lmark, lepoch; /* per link: visited by materialize */
    int32_t *kbuf, *lbuf, *vbuf, *rbuf; /* materialize's scratch */
    int64_t kcap, lcap, vcap, rcap;
    /* flow groups (send_group): live groups by slot (NULL: free); per link, the slot + 1 and the
     * member of the virtual group member on it (0: none); NULL until the first group */
    struct fgroup **grp;
    struct fgroup *spare; /* a delivered group kept for the next (its arrays' pages stay mapped) */
    int64_t ngrp, grpcap;
    int32_t glive, group_min;
    int32_t *gslot, *gmem;
    char msg[MT_ERRMSG_MAX];
};

/* A flow group (netmodel.h send_group): n sends of `bytes` started together at t0 whose routes
 * share no link with each other or with any flow, all of `hops` links, latency `lat` and
 * bottleneck `rate`: each drains alone at `rate`, so all drain at drain_ps and are delivered
 * lat later, as one event each. Member k's links are links[k * hops ..]; a member that other
 * traffic meets becomes a flow (real[k], materialize_member) with the state its flow would have
 * had, and goes on as one. */
typedef struct fgroup {
    int32_t n, hops, nvirt, drained, cap; /* cap: the members its arrays hold */
    int32_t *links, *src, *dst;
    uint8_t *real;
    double bytes, rate;
    mt_time_ps t0, lat, drain_ps;
    mt_delivered_fn fn;
    void *ctx;
    uint64_t tag0;
} fgroup;

/* A link's constraint's capacity until a change sets it: the topology's bandwidth. */
static double topo_bw(void *topo, int32_t l) { return mt_topo_link(topo, l)->bw_Bps; }

mt_status mt_flownet_new(mt_topo *topo, mt_sched sched, mt_flownet **out, mt_error *err) {
    *out = NULL;
    mt_flownet *n = calloc(1, sizeof *n);
    if (!n) return mt_fail(err, MT_ENOMEM, "out of memory creating the flow model");
    n->topo = topo;
    n->sched = sched;
    n->nlinks = mt_topo_nlinks(topo);
    n->free_head = -1;
    n->group_min = MT_FLOW_GROUP_MIN;
    /* per-link state is zero memory (calloc) until a link is used: 6.3 M links at 2^20 GPUs */
    n->lk = calloc((size_t)n->nlinks + 1, sizeof *n->lk);
    n->lbusy = calloc(((size_t)n->nlinks >> 6) + 1, sizeof *n->lbusy);
    n->lmm = mt_lmm_new();
    mt_hugemem_advise(n->lk, ((size_t)n->nlinks + 1) * sizeof *n->lk);
    if (!n->lk || !n->lbusy || !n->lmm || (n->nlinks > 0 && !mt_lmm_cnsts_lazy(n->lmm, n->nlinks, topo_bw, topo))) {
        mt_flownet_free(n);
        return mt_fail(err, MT_ENOMEM, "out of memory creating the flow model");
    }
    *out = n;
    return MT_OK;
}

static void group_free(fgroup *g) {
    if (!g) return;
    free(g->links);
    free(g->src);
    free(g->dst);
    free(g->real);
    free(g);
}

/* A finished group: kept as the spare when it holds more members than the spare (one collective's
 * group after another: a 2^20-GPU one is 25 MB of fresh pages each time), else freed. */
static void group_retire(mt_flownet *net, fgroup *g) {
    if (g && (!net->spare || net->spare->cap < g->cap)) {
        group_free(net->spare);
        net->spare = g;
    } else
        group_free(g);
}

/* A group of n members: the spare when it is large enough (its members made real again), else
 * made; NULL when out of memory. */
static fgroup *group_new(mt_flownet *net, int32_t n) {
    fgroup *g = net->spare;
    if (g && g->cap >= n) {
        net->spare = NULL;
        *g = (fgroup){.cap = g->cap, .links = g->links, .src = g->src, .dst = g->dst, .real = g->real};
        memset(g->real, 0, (size_t)n * sizeof *g->real);
        return g;
    }
    if (!(g = calloc(1, sizeof *g))) return NULL;
    g->cap = n;
    g->links = malloc((size_t)n * 8 * sizeof *g->links); /* routes of at most 8 hops */
    g->src = malloc((size_t)n * sizeof *g->src);
    g->dst = malloc((size_t)n * sizeof *g->dst);
    g->real = calloc((size_t)n, sizeof *g->real);
    if (!g->links || !g->src || !g->dst || !g->real) {
        group_free(g);
        return NULL;
    }
    return g;
}

void mt_flownet_free(mt_flownet *net) {
    if (!net) return;
    mt_lmm_free(net->lmm);
    free(net->lk);
    free(net->lbusy);
    free(net->per);
    free(net->reported);
    free(net->fold_e);
    free(net->fold_k);
    free(net->rix);
    free(net->orig);
    free(net->cmap);
    free(net->srt);
    free(net->vcnt);
    free(net->vpeak);
    free(net->creal);
    free(net->vsince);
    free(net->vbusy);
    free(net->vbytes);
    free(net->checked);
    free(net->lmark);
    free(net->kbuf);
    free(net->lbuf);
    free(net->vbuf);
    free(net->rbuf);
    free(net->fl);
    free(net->chg);
    for (int64_t i = 0; i < net->ngrp; i++) group_free(net->grp[i]);
    group_free(net->spare);
    free(net->grp);
    free(net->gslot);
    free(net->gmem);
    free(net);
}

/* Network folding's link maps (rix, orig hold index + 1): -1 for none. */
static inline int32_t rix_of(const mt_flownet *net, int32_t l) { return net->rix[l] - 1; }
static inline int32_t orig_of(const mt_flownet *net, int32_t l) { return net->orig[l] - 1; }
/* Under folding, replica 0's link whose copy link l is; -1 when l is no (known) copy link. */
static inline int32_t copy_of(const mt_flownet *net, int32_t l) {
    int32_t l0 = net->fold ? orig_of(net, l) : -1;
    return l0 != l ? l0 : -1;
}

static void fail(mt_flownet *net, const char *what) {
    snprintf(net->msg, sizeof net->msg, "flow model: out of memory %s", what);
    mt_sched_fail(net->sched, MT_ENOMEM, net->msg);
}

/* ---- the lazy max-min solve ---- */
static void on_solve(void *ctx, uint64_t arg);
static void on_drain(void *ctx, uint64_t arg);
static void meet_groups(mt_flownet *net, const int32_t *route, int32_t nhops);
static void materialize_groups(mt_flownet *net);
static int32_t alloc_flow(mt_flownet *net);
static mt_status link_flow(mt_flownet *net, int32_t id, const int32_t *route, int32_t nhops, mt_time_ps now,
                           mt_error *err);

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
        double used = mt_lmm_cnst_usage(net->lmm, links[i]);
        if (used != net->reported[links[i]]) {
            net->reported[links[i]] = used;
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
    f->rate = r;
    if (r <= 0) {
        if (f->ev) mt_sched_cancel(net->sched, f->ev);
        f->ev = 0;
        return;
    }
    mt_time_ps t = now + mt_ps_ceil(f->remaining / r);
    f->ev_ps = t;
    f->ev_order = ++net->ev_seq;
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
    int32_t nv;
    const int32_t *vars = mt_lmm_solved_vars(net->lmm, &nv);
    if (nv == 0) return;
    if (net->on_link) report_links(net, now);
    for (int32_t i = 0; i < nv; i++) rerate(net, (int32_t)mt_lmm_var_data(net->lmm, vars[i]), now);
}

/* ---- flow life cycle ---- */

/* Link l's busy bit (lbusy) as its flow count lk[l].vn goes from 0 (on) or to 0 (off). */
static inline void busy_set(mt_flownet *net, int32_t l, int on) {
    uint64_t b = (uint64_t)1 << (l & 63);
    net->lbusy[l >> 6] = on ? net->lbusy[l >> 6] | b : net->lbusy[l >> 6] & ~b;
}
static inline int busy_of(const mt_flownet *net, int32_t l) { return (int)((net->lbusy[l >> 6] >> (l & 63)) & 1); }
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

/* ---- network folding ---- */

static void fold_break(mt_flownet *net, const char *why) {
    if (net->fold_dead) return;
    net->fold_dead = 1;
    net->fold->broken(net->fold->ctx, why);
}

/* Node's index among replica 0's endpoints, -1 when it is none. */
static inline int32_t fold_e_of(const mt_flownet *net, int32_t node) { return net->fold_e[node] - 1; }

/* Copy link of replica 0's (indexed) link l in replica d. */
static inline int32_t copy_link(const mt_flownet *net, int32_t l, int32_t d) {
    return d == 0 ? l : net->cmap[(size_t)rix_of(net, l) * net->fold->D + d];
}

/* Indexes replica 0's link l0 whose copies are cd[1..D) (cd[0] = l0): each copy link belongs to
 * one (link, replica) pair, and the copies keep replica 0's id order in every replica (so a solve
 * breaks ties among them as among replica 0's own: network/lmm.h). 0: they do not. */
static int index_link(mt_flownet *net, int32_t l0, const int32_t *cd) {
    int32_t D = net->fold->D;
    if (orig_of(net, l0) >= 0) return 0; /* already another link's copy: replica 0 would share it */
    int64_t lo = 0, hi = net->nrix; /* position of l0 among the indexed links, by id */
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (net->srt[mid] < l0) lo = mid + 1;
        else hi = mid;
    }
    for (int32_t d = 1; d < D; d++) {
        if (orig_of(net, cd[d]) >= 0 || cd[d] == l0) return 0;
        if (lo > 0 && net->cmap[(size_t)rix_of(net, net->srt[lo - 1]) * D + d] >= cd[d]) return 0;
        if (lo < net->nrix && net->cmap[(size_t)rix_of(net, net->srt[lo]) * D + d] <= cd[d]) return 0;
    }
    if (mt_vec_reserve(&net->cmap, &net->cmapcap, (net->nrix + 1) * D) || mt_vec_reserve(&net->srt, &net->srtcap, net->nrix + 1))
        return 0;
    memmove(net->srt + lo + 1, net->srt + lo, (size_t)(net->nrix - lo) * sizeof *net->srt);
    net->srt[lo] = l0;
    net->rix[l0] = (int32_t)net->nrix + 1;
    memcpy(net->cmap + net->nrix * D, cd, (size_t)D * sizeof *cd);
    net->nrix++;
    net->orig[l0] = l0 + 1;
    for (int32_t d = 1; d < D; d++) {
        net->orig[cd[d]] = l0 + 1;
        /* flows already there (traffic between replicas), a flow group's virtual member too */
        net->creal[l0] += (busy_of(net, cd[d]) ? net->lk[cd[d]].vn : 0) + /* the bit: no miss on lk[] */
                          (net->gslot && net->gslot[cd[d]] ? 1 : 0);
    }
    return 1;
}

/* cd[h * D + d] (d >= 1): hop h of replica d's copy of route r0 (n links, latency lat0) between
 * replica 0's endpoints es -> ed, each routed; 0 when a copy's length, latency or a hop's bandwidth
 * differs. */
static int route_copies(mt_flownet *net, int32_t es, int32_t ed, const int32_t *r0, int32_t n, mt_time_ps lat0,
                        int32_t *cd, mt_error *err) {
    const mt_netfold *F = net->fold;
    int32_t D = F->D;
    for (int32_t d = 1; d < D; d++) {
        int32_t rd[64], nd; /* fold_start: n <= 64 */
        mt_time_ps lat;
        if (mt_topo_route_once(net->topo, F->ep[(size_t)d * F->E + es], F->ep[(size_t)d * F->E + ed], rd, 64, &nd,
                               &lat, err) != MT_OK || nd != n || lat != lat0)
            return 0;
        for (int32_t h = 0; h < n; h++) {
            if (mt_topo_link(net->topo, rd[h])->bw_Bps != mt_topo_link(net->topo, r0[h])->bw_Bps) return 0;
            cd[(size_t)h * D + d] = rd[h];
        }
    }
    return 1;
}

/* The copies of folded send src -> dst (route r0) in replicas 1..D-1 take routes of the same
 * length whose links map one to one onto replica 0's (the copy map, learned here), of the same
 * bandwidth, with the same latency. Checked once per (src, dst) while they stay among src's last
 * CHECK_WAYS destinations. 0: they do not (or out of memory). */
static int fold_routes_ok(mt_flownet *net, int32_t src, int32_t dst, const int32_t *r0, int32_t n, mt_time_ps lat0,
                          mt_error *err) {
    const mt_netfold *F = net->fold;
    int32_t es = fold_e_of(net, src), ed = fold_e_of(net, dst), D = F->D;
    if (es < 0 || ed < 0) return 0;
    int32_t *ck = net->checked[es];
    for (int w = 0; w < CHECK_WAYS; w++)
        if (ck[w] == dst) return 1;
    if (mt_vec_reserve(&net->rbuf, &net->rcap, (int64_t)n * D)) return 0;
    int32_t *cd = net->rbuf; /* cd[h * D + d]: hop h's link in replica d */
    for (int32_t h = 0; h < n; h++) cd[(size_t)h * D] = r0[h];
    if (!(net->fold_k && lat0 == mt_topo_path_latency(net->topo, r0, n) &&
          mt_topo_route_shifted(net->topo, src, dst, r0, n, net->fold_k + 1, D - 1, cd + 1, D)) &&
        !route_copies(net, es, ed, r0, n, lat0, cd, err))
        return 0; /* where the preset's translation holds, replica d's route is replica 0's shifted */
    for (int32_t h = 0; h < n; h++) {
        const int32_t *c = cd + (size_t)h * D;
        if (rix_of(net, r0[h]) < 0) {
            if (!index_link(net, r0[h], c)) return 0;
            continue;
        }
        for (int32_t d = 1; d < D; d++)
            if (copy_link(net, r0[h], d) != c[d]) return 0;
    }
    memmove(ck + 1, ck, (CHECK_WAYS - 1) * sizeof *ck); /* the oldest goes */
    ck[0] = dst;
    return 1;
}


/* Replica d's copy of flow `rep` (draining, on the solver): a new flow between the replica's
 * endpoints, checked against rep when it drains, with a solver variable; its route (rep's
 * links, copied to replica d) is left in net->rbuf[0 .. *nh). -1 when out of memory. */
static int32_t new_copy(mt_flownet *net, int32_t rep, int32_t d, int32_t *nh) {
    const mt_netfold *F = net->fold;
    int32_t c = alloc_flow(net); /* may move net->fl */
    if (c < 0) return -1;
    const flow *r = &net->fl[rep];
    flow *x = &net->fl[c];
    *x = (flow){.bytes = r->bytes, .lat_ps = r->lat_ps, .src = F->ep[(size_t)d * F->E + fold_e_of(net, r->src)],
                .dst = F->ep[(size_t)d * F->E + fold_e_of(net, r->dst)], .var = -1, .next_free = -1,
                .state = F_DRAINING, .folded = FOLD_COPY, .rep = rep, .rep_gen = r->gen, .gen = x->gen};
    const int32_t *route;
    *nh = mt_lmm_var_cnsts(net->lmm, r->var, &route);
    if (mt_vec_reserve(&net->rbuf, &net->rcap, *nh)) return -1;
    for (int32_t h = 0; h < *nh; h++) net->rbuf[h] = copy_link(net, route[h], d);
    x->var = mt_lmm_var_new(net->lmm, c);
    net->st.copies++;
    return x->var < 0 ? -1 : c;
}

/* The virtual folded flows whose component (over replica 0's links, starting at link l0) is
 * about to meet other traffic become REAL: each gets its copies in replicas 1.. as flows, in the
 * state the unfolded network has them in now (remaining bytes, rate, drain time; no solve is
 * added: they join quietly, marked for the pending solve only where replica 0's own are), the
 * copies' links holding them in replica 0's order. 0 when out of memory. */
static int materialize(mt_flownet *net, int32_t l0) {
    const mt_netfold *F = net->fold;
    mt_time_ps now = mt_sched_now(net->sched);
    int64_t nk = 0, nl = 0;
    if (++net->lepoch == 0) {
        memset(net->lmark, 0, ((size_t)net->nlinks + 1) * sizeof *net->lmark);
        net->lepoch = 1;
    }
    if (mt_vec_reserve(&net->lbuf, &net->lcap, 1)) return 0;
    net->lbuf[nl++] = l0;
    net->lmark[l0] = net->lepoch;
    for (int64_t i = 0; i < nl; i++) { /* breadth-first over links and the virtual flows on them */
        int32_t l = net->lbuf[i], n = mt_lmm_cnst_nvars(net->lmm, l);
        for (int32_t k = 0; k < n; k++) {
            int32_t id = (int32_t)mt_lmm_var_data(net->lmm, mt_lmm_cnst_var(net->lmm, l, k));
            if (net->fl[id].folded != FOLD_VIRTUAL) continue;
            net->fl[id].folded = FOLD_REAL;
            if (mt_vec_reserve(&net->kbuf, &net->kcap, nk + 1)) return 0;
            net->kbuf[nk++] = id;
            const int32_t *route;
            int32_t nh = mt_lmm_var_cnsts(net->lmm, net->fl[id].var, &route);
            for (int32_t h = 0; h < nh; h++) {
                if (net->lmark[route[h]] == net->lepoch) continue;
                net->lmark[route[h]] = net->lepoch;
                if (mt_vec_reserve(&net->lbuf, &net->lcap, nl + 1)) return 0;
                net->lbuf[nl++] = route[h];
            }
        }
    }
    /* the copies are made in the order replica 0's drain events were scheduled (the engine's) */
    for (int64_t i = 1; i < nk; i++) {
        int32_t id = net->kbuf[i];
        const flow *x = &net->fl[id];
        int64_t j = i - 1;
        for (; j >= 0; j--) {
            const flow *y = &net->fl[net->kbuf[j]];
            int after = !y->ev ? x->ev != 0 : x->ev && (y->ev_ps > x->ev_ps || (y->ev_ps == x->ev_ps && y->ev_order > x->ev_order));
            if (!after) break;
            net->kbuf[j + 1] = net->kbuf[j];
        }
        net->kbuf[j + 1] = id;
    }
    int pending = 0;
    for (int64_t i = 0; i < nl; i++) pending |= mt_lmm_cnst_modified(net->lmm, net->lbuf[i]);
    for (int64_t i = 0; i < nk; i++) net->fl[net->kbuf[i]].kidx = (int32_t)i;
    if (mt_vec_reserve(&net->vbuf, &net->vcap, nk)) return 0;
    for (int32_t d = 1; d < F->D; d++) {
        for (int64_t i = 0; i < nk; i++) {
            int32_t nh, c = new_copy(net, net->kbuf[i], d, &nh);
            if (c < 0) return 0;
            const flow *r = &net->fl[net->kbuf[i]];
            flow *x = &net->fl[c]; /* in replica 0's state now */
            x->remaining = r->remaining;
            x->rate = r->rate;
            x->last_ps = r->last_ps;
            x->ev_ps = r->ev_ps;
            x->ev_order = ++net->ev_seq;
            if (mt_lmm_var_attach_quiet(net->lmm, x->var, net->rbuf, nh, mt_lmm_var_value(net->lmm, r->var), NULL) !=
                    MT_OK ||
                (r->ev && !(x->ev = mt_sched_at(net->sched, x->ev_ps, on_drain, net, (uint64_t)c))))
                return 0;
            net->vbuf[i] = x->var;
        }
        for (int64_t i = 0; i < nl; i++) { /* each copy link: replica 0's order; pending where it is */
            int32_t l = net->lbuf[i], n = mt_lmm_cnst_nvars(net->lmm, l), cl = copy_link(net, l, d);
            if (mt_vec_reserve(&net->rbuf, &net->rcap, n)) return 0;
            for (int32_t k = 0; k < n; k++)
                net->rbuf[k] = net->vbuf[net->fl[mt_lmm_var_data(net->lmm, mt_lmm_cnst_var(net->lmm, l, k))].kidx];
            mt_lmm_cnst_order(net->lmm, cl, net->rbuf, n);
            if (mt_lmm_cnst_modified(net->lmm, l)) mt_lmm_cnst_touch(net->lmm, cl);
            lstate *L = &net->lk[cl]; /* its copies are flows now: its own count takes them on */
            if (L->vn == 0 && n > 0) L->busy_since = now;
            L->vn += n;
            if (n > 0) busy_set(net, cl, 1);
            if (L->vn > L->peak) L->peak = L->vn;
            net->creal[l] += n;
        }
    }
    for (int64_t i = 0; i < nl; i++) { /* the virtual period of each link ends */
        int32_t l = net->lbuf[i];
        if (net->vcnt[l] > 0) net->vbusy[l] += now - net->vsince[l];
        net->vcnt[l] = 0;
    }
    if (pending) ensure_solve(net);
    return 1;
}

/* Makes REAL every virtual flow whose copies are on link l (a copy's, or replica 0's own). */
static int materialize_at(mt_flownet *net, int32_t l) {
    int32_t l0 = orig_of(net, l);
    if (l0 < 0 || net->vcnt[l0] == 0) return 1;
    if (!materialize(net, l0)) {
        fail(net, "materializing folded flows");
        return 0;
    }
    return 1;
}

/* A folded send from src to dst starts on route: VIRTUAL when replica 0's links hold only virtual
 * flows and their copy links nothing (it is then counted on replica 0's links: vcnt, and by
 * link_flow), else REAL (the virtual flows it meets become REAL first; its copies are started by
 * start_copies). FOLD_NO when folding broke here. */
static int fold_start(mt_flownet *net, int32_t src, int32_t dst, const int32_t *route_in, int32_t nhops, mt_time_ps lat,
                      mt_time_ps now) {
    int32_t r0[64]; /* the route checks below may move route_in */
    if (nhops > 64) {
        fold_break(net, "a route of more than 64 links");
        return FOLD_NO;
    }
    memcpy(r0, route_in, (size_t)nhops * sizeof *r0);
    mt_error e;
    if (!fold_routes_ok(net, src, dst, r0, nhops, lat, &e)) {
        fold_break(net, "a folded send's copies do not map one to one onto replica 0's links in their order");
        return FOLD_NO;
    }
    int clean = 1; /* replica 0's links hold only virtual flows, their copy links nothing */
    for (int32_t h = 0; h < nhops && clean; h++)
        clean = net->lk[r0[h]].vn == net->vcnt[r0[h]] && net->creal[r0[h]] == 0;
    if (!clean) {
        for (int32_t h = 0; h < nhops; h++)
            if (!materialize_at(net, r0[h])) return FOLD_NO;
        return FOLD_REAL;
    }
    for (int32_t h = 0; h < nhops; h++) {
        int32_t l = r0[h];
        if (net->vcnt[l]++ == 0) net->vsince[l] = now;
        if (net->vcnt[l] > net->vpeak[l]) net->vpeak[l] = net->vcnt[l];
    }
    return FOLD_VIRTUAL;
}

/* An unfolded flow starts on route: the virtual flows it meets become REAL first (the route
 * stays where it is: materializing looks no route up). */
static void fold_plain(mt_flownet *net, const int32_t *route, int32_t nhops) {
    for (int32_t h = 0; h < nhops; h++)
        if (!materialize_at(net, route[h])) return;
}

/* A REAL folded flow has just started: its copies in replicas 1.. start with it. */
static mt_status start_copies(mt_flownet *net, int32_t id, mt_time_ps now, mt_error *err) {
    if (net->glive > 0) { /* flow-group members on the copies' links become flows first (meet_groups) */
        const int32_t *route;
        int32_t r0[64], nh = mt_lmm_var_cnsts(net->lmm, net->fl[id].var, &route); /* fold_start: <= 64 */
        memcpy(r0, route, (size_t)nh * sizeof *r0); /* materializing a member may move the solver's arrays */
        for (int32_t d = 1; d < net->fold->D && net->glive > 0; d++)
            for (int32_t h = 0; h < nh; h++) {
                int32_t l = copy_link(net, r0[h], d);
                meet_groups(net, &l, 1);
            }
    }
    for (int32_t d = 1; d < net->fold->D; d++) {
        int32_t nh, c = new_copy(net, id, d, &nh);
        if (c < 0) return mt_fail(err, MT_ENOMEM, "flow model: out of memory starting a flow");
        net->fl[c].remaining = net->fl[c].bytes;
        net->fl[c].last_ps = now;
        MT_CHECK(link_flow(net, c, net->rbuf, nh, now, err));
        net->st.flow_events++;
    }
    return MT_OK;
}

/* A virtual flow leaves replica 0's links: its copies leave theirs (their statistics: the
 * links' virtual periods, bytes and peaks, read by link_stats for every copy link). */
static void fold_unlink(mt_flownet *net, const flow *f, const int32_t *route, int32_t nhops, mt_time_ps now,
                        int drained) {
    for (int32_t h = 0; h < nhops; h++) {
        int32_t l = route[h];
        if (drained) net->vbytes[l] += f->bytes;
        if (--net->vcnt[l] == 0) net->vbusy[l] += now - net->vsince[l];
    }
}

/* Per replica, the units of the topology's translation symmetry that shift replica 0's
 * endpoints onto its own (every endpoint by the same), or NULL: none declared, a replica not
 * so placed (or out of memory: the copies are routed one by one). O(D x E). */
static int32_t *fold_shifts(const mt_topo *t, const mt_netfold *f) {
    int32_t *k = f->E > 0 ? malloc((size_t)f->D * sizeof *k) : NULL, kd;
    for (int32_t d = 0; k && d < f->D; d++) {
        if (!mt_topo_shift_units(t, f->ep[0], f->ep[(size_t)d * f->E], &k[d])) break;
        for (int32_t e = 1; e < f->E; e++)
            if (!mt_topo_shift_units(t, f->ep[e], f->ep[(size_t)d * f->E + e], &kd) || kd != k[d]) {
                free(k);
                return NULL;
            }
        if (d == f->D - 1) return k;
    }
    free(k);
    return NULL;
}

static mt_status set_fold(void *self, const mt_netfold *f, mt_error *err) {
    mt_flownet *net = self;
    if (!f) {
        net->fold = NULL;
        return MT_OK;
    }
    if (net->perturbed) return mt_fail(err, MT_EINVAL, "a link is perturbed");
    if (net->on_link) return mt_fail(err, MT_EINVAL, "link load is recorded over time");
    if (net->nfl > 0 || net->ngrp > 0) return mt_fail(err, MT_EINVAL, "flows were sent before");
    int32_t nn = mt_topo_nnodes(net->topo);
    net->fold_e = calloc((size_t)nn, sizeof *net->fold_e);
    net->checked = malloc((size_t)(f->E > 0 ? f->E : 1) * sizeof *net->checked);
    net->lmark = calloc((size_t)net->nlinks + 1, sizeof *net->lmark);
    net->rix = calloc((size_t)net->nlinks + 1, sizeof *net->rix);
    net->orig = calloc((size_t)net->nlinks + 1, sizeof *net->orig);
    size_t nl = (size_t)net->nlinks + 1;
    net->vcnt = calloc(nl, sizeof *net->vcnt);
    net->vpeak = calloc(nl, sizeof *net->vpeak);
    net->creal = calloc(nl, sizeof *net->creal);
    net->vsince = calloc(nl, sizeof *net->vsince);
    net->vbusy = calloc(nl, sizeof *net->vbusy);
    net->vbytes = calloc(nl, sizeof *net->vbytes);
    if (!net->fold_e || !net->checked || !net->lmark || !net->rix || !net->orig || !net->vcnt || !net->vpeak ||
        !net->creal || !net->vsince || !net->vbusy || !net->vbytes)
        return mt_fail(err, MT_ENOMEM, "flow model: out of memory folding the network");
    memset(net->checked, 0xff, (size_t)(f->E > 0 ? f->E : 1) * sizeof *net->checked); /* -1: none */
    for (int32_t e = 0; e < f->E; e++) {
        int32_t node = f->ep[e];
        if (node < 0 || node >= nn) return mt_fail(err, MT_EINVAL, "an endpoint is not a node");
        net->fold_e[node] = e + 1;
    }
    free(net->fold_k);
    net->fold_k = fold_shifts(net->topo, f);
    net->fold = f;
    net->fold_dead = 0;
    return MT_OK;
}

/* A link operation: no folding from now on (the caller runs again unfolded if it was on). */
static void touched(mt_flownet *net) {
    if (net->glive > 0) materialize_groups(net);
    net->perturbed = 1;
    if (net->fold) fold_break(net, "a link was perturbed");
}

/* Puts flow id on every link of route (marking them modified), then updates the links' counts
 * and arms their periodic degradations. */
static mt_status link_flow(mt_flownet *net, int32_t id, const int32_t *route, int32_t nhops, mt_time_ps now,
                           mt_error *err) {
    if (mt_lmm_var_attach(net->lmm, net->fl[id].var, route, nhops, err) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "flow model: out of memory starting a flow");
    ensure_solve(net);
    for (int32_t h = 0; h < nhops; h++) {
        lstate *L = &net->lk[route[h]];
        int32_t n = ++L->vn;
        if (n == 1) L->busy_since = now, busy_set(net, route[h], 1);
        if (n > L->peak) L->peak = n;
        if (net->per && net->per[route[h]].per.period_ps > 0 && !net->per[route[h]].pev) arm_periodic(net, route[h]);
        int32_t l0 = net->fold ? orig_of(net, route[h]) : -1;
        if (l0 >= 0 && l0 != route[h]) net->creal[l0]++;
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
    if (f->folded == FOLD_VIRTUAL) fold_unlink(net, f, route, nhops, now, drained);
    for (int32_t h = 0; h < nhops; h++) {
        lstate *L = &net->lk[route[h]];
        if (drained) L->bytes += f->bytes;
        int32_t l0 = net->fold ? orig_of(net, route[h]) : -1;
        if (l0 >= 0 && l0 != route[h]) net->creal[l0]--;
        if (--L->vn > 0) continue;
        busy_set(net, route[h], 0);
        L->busy_ps += now - L->busy_since;
        if (net->on_link && net->reported[route[h]] != 0) {
            net->reported[route[h]] = 0;
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
    f->drained_ps = now;
    unlink_flow(net, id, now, 1);
    mt_lmm_var_free(net->lmm, f->var);
    f->var = -1;
    if (f->folded == FOLD_COPY) { /* nobody waits for a copy: it must drain with its representative */
        const flow *r = &net->fl[f->rep];
        int ok = r->gen == f->rep_gen && (r->state == F_DRAINING ? r->ev && r->ev_ps == now : r->drained_ps == now);
        release(net, id);
        if (!ok) fold_break(net, "a replica's copy of a send drained apart from replica 0's");
        return;
    }
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
    for (int32_t h = 0; net->n_extra_lat > 0 && h < nhops; h++) lat += net->per[route[h]].extra_lat_ps;
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
    const lperiodic *P = net->per ? &net->per[l] : NULL;
    double cap = mt_topo_link(net->topo, l)->bw_Bps * (P && P->factor > 0 ? P->factor : 1);
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

/* net->per made (on the first link operation). */
static mt_status link_ops(mt_flownet *net, mt_error *err) {
    if (!net->per && !(net->per = calloc((size_t)net->nlinks + 1, sizeof *net->per)))
        return mt_fail(err, MT_ENOMEM, "flow model: out of memory for a link operation");
    return MT_OK;
}

static int factor_ok(double factor) { return factor > 0 && factor <= MT_LINK_FACTOR_MAX; }

static mt_status set_link_factor(void *self, int32_t link, double factor, mt_error *err) {
    mt_flownet *net = self;
    MT_CHECK(check_link(net, link, "a bandwidth factor", err));
    touched(net);
    if (!factor_ok(factor))
        return mt_fail(err, MT_EINVAL, "flow model: a bandwidth factor must be > 0 and at most 1e6 (got %g; "
                       "to cut a link, fail it)", factor);
    MT_CHECK(link_ops(net, err));
    net->per[link].factor = factor;
    refresh_cap(net, link);
    return MT_OK;
}

static mt_status set_link_extra_latency(void *self, int32_t link, mt_time_ps extra_ps, mt_error *err) {
    mt_flownet *net = self;
    MT_CHECK(check_link(net, link, "an extra latency", err));
    touched(net);
    if (extra_ps < 0 || extra_ps > MT_LINK_LAT_MAX_PS)
        return mt_fail(err, MT_EINVAL, "flow model: extra latency must be 0 to 1 s (got %lld ps)",
                       (long long)extra_ps);
    MT_CHECK(link_ops(net, err));
    net->n_extra_lat += (extra_ps != 0) - (net->per[link].extra_lat_ps != 0);
    net->per[link].extra_lat_ps = extra_ps;
    return MT_OK;
}

static mt_status set_link_periodic(void *self, int32_t link, const mt_link_periodic *p, mt_error *err) {
    mt_flownet *net = self;
    MT_CHECK(check_link(net, link, "a periodic degradation", err));
    touched(net);
    if (p->start_ps < 0 || p->period_ps <= 0 || p->duration_ps <= 0 || p->duration_ps > p->period_ps ||
        !factor_ok(p->factor))
        return mt_fail(err, MT_EINVAL, "flow model: periodic degradation needs start >= 0, "
                       "0 < duration <= period and 0 < factor <= 1e6");
    MT_CHECK(link_ops(net, err));
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
    touched(net);
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
    touched(net);
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
    uint32_t gen = net->fl[id].gen + 1;
    memset(&net->fl[id], 0, sizeof net->fl[id]);
    net->fl[id].gen = gen;
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
                            mt_delivered_fn on_delivered, void *ctx, uint64_t tag, int folded, int32_t *flow_id,
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
    if (net->glive > 0 && bytes > 0) meet_groups(net, route, nhops);
    int32_t id = alloc_flow(net);
    if (id < 0) return mt_fail(err, MT_ENOMEM, "flow model: out of memory starting a flow");
    mt_time_ps now = mt_sched_now(net->sched);
    flow *f = &net->fl[id];
    *f = (flow){.remaining = bytes, .bytes = bytes, .last_ps = now, .lat_ps = route_latency(net, route, nhops, base_ps),
                .sent_fn = on_sent, .fn = on_delivered, .ctx = ctx, .tag = tag, .src = src, .dst = dst, .var = -1,
                .next_free = -1, .gen = f->gen};
    if (bytes == 0 || nhops == 0) {
        MT_CHECK(start_latency_only(net, id, now, err));
    } else {
        int mode = FOLD_NO;
        if (net->fold && !net->fold_dead) { /* a failed check stops the run; the flow goes on meanwhile */
            if (!folded) {
                fold_plain(net, route, nhops);
            } else { /* it looked the copies' routes up, which may move ours */
                mode = fold_start(net, src, dst, route, nhops, base_ps, now);
                MT_CHECK(mt_topo_route_lat(net->topo, src, dst, &route, &nhops, &base_ps, err));
            }
            f = &net->fl[id]; /* materializing may have moved net->fl */
        }
        f->folded = mode;
        f->var = mt_lmm_var_new(net->lmm, id);
        mt_status rc = f->var < 0 ? mt_fail(err, MT_ENOMEM, "flow model: out of memory starting a flow")
                                  : link_flow(net, id, route, nhops, now, err);
        if (rc == MT_OK && mode == FOLD_REAL) rc = start_copies(net, id, now, err);
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
    return start_flow(net, src, dst, bytes, NULL, on_delivered, ctx, tag, 0, flow_id, err);
}

double mt_flownet_rate(const mt_flownet *net, int32_t id) {
    if (id < 0 || id >= net->nfl || net->fl[id].state != F_DRAINING) return -1;
    return net->fl[id].rate;
}

/* ---- flow groups (send_group) ---- */

/* Member k of group `slot` becomes the flow it stands for: started at t0, draining at the group's
 * rate (its links carried nothing else), its drain due at drain_ps; its links hold it from t0. */
static void materialize_member(mt_flownet *net, int32_t slot, int32_t k) {
    fgroup *g = net->grp[slot];
    int32_t id = alloc_flow(net);
    if (id < 0) {
        fail(net, "materializing a flow group");
        return;
    }
    const int32_t *links = g->links + (size_t)k * (size_t)g->hops;
    flow *f = &net->fl[id];
    *f = (flow){.remaining = g->bytes, .bytes = g->bytes, .rate = g->rate, .last_ps = g->t0, .lat_ps = g->lat,
                .fn = g->fn, .ctx = g->ctx, .tag = g->tag0 + (uint64_t)k, .src = g->src[k], .dst = g->dst[k],
                .next_free = -1, .gen = f->gen, .state = F_DRAINING, .ev_ps = g->drain_ps};
    f->var = mt_lmm_var_new(net->lmm, id);
    if (f->var < 0 || mt_lmm_var_attach_quiet(net->lmm, f->var, links, g->hops, g->rate, NULL) != MT_OK ||
        !(f->ev = mt_sched_at(net->sched, g->drain_ps, on_drain, net, (uint64_t)id))) {
        fail(net, "materializing a flow group");
        return;
    }
    f->ev_order = ++net->ev_seq;
    for (int32_t h = 0; h < g->hops; h++) {
        lstate *L = &net->lk[links[h]];
        if (++L->vn == 1) L->busy_since = g->t0, busy_set(net, links[h], 1);
        if (L->vn > L->peak) L->peak = L->vn;
        net->gslot[links[h]] = 0;
    }
    g->real[k] = 1;
    g->nvirt--;
}

/* Materializes the group members on route's links (other traffic is about to meet them). */
static void meet_groups(mt_flownet *net, const int32_t *route, int32_t nhops) {
    for (int32_t h = 0; net->glive > 0 && h < nhops; h++)
        if (net->gslot[route[h]]) materialize_member(net, net->gslot[route[h]] - 1, net->gmem[route[h]]);
}

/* Every live group's members become flows (a link operation or an observer from now on). */
static void materialize_groups(mt_flownet *net) {
    for (int64_t i = 0; i < net->ngrp && net->glive > 0; i++)
        for (int32_t k = 0; net->grp[i] && !net->grp[i]->drained && net->grp[i]->nvirt > 0 && k < net->grp[i]->n; k++)
            if (!net->grp[i]->real[k]) materialize_member(net, (int32_t)i, k);
}

static void on_group_deliver(void *ctx, uint64_t arg) {
    mt_flownet *net = ctx;
    fgroup *g = net->grp[arg];
    for (int32_t k = 0; k < g->n; k++) {
        if (g->real[k]) continue;
        net->st.delivered++;
        net->st.bytes += g->bytes;
        if (g->fn) g->fn(g->ctx, g->tag0 + (uint64_t)k); /* may start flows and groups; g stays */
    }
    net->grp[arg] = NULL;
    net->glive--;
    group_retire(net, g);
}

/* The virtual members' last bytes have left: their links' statistics as their flows' would be,
 * then one delivery event for them all. */
static void on_group_drain(void *ctx, uint64_t arg) {
    mt_flownet *net = ctx;
    fgroup *g = net->grp[arg];
    mt_time_ps now = mt_sched_now(net->sched);
    g->drained = 1;
    for (int32_t k = 0; k < g->n; k++) {
        if (g->real[k]) continue;
        net->st.flow_events++;
        for (int32_t h = 0; h < g->hops; h++) {
            int32_t l = g->links[(size_t)k * (size_t)g->hops + (size_t)h];
            lstate *L = &net->lk[l];
            L->bytes += g->bytes;
            L->busy_ps += now - g->t0;
            if (L->peak < 1) L->peak = 1;
            net->gslot[l] = 0;
            int32_t l0 = copy_of(net, l);
            if (l0 >= 0) net->creal[l0]--; /* group_fold_count */
        }
    }
    if (!mt_sched_at(net->sched, now + g->lat, on_group_deliver, net, arg)) fail(net, "scheduling a delivery");
}

/* Marks member k's route (route, nhops) as the group's; 0 when a link is taken (a flow, a live
 * group, an earlier member) or the member is unlike member 0. */
static int group_mark(mt_flownet *net, fgroup *g, int32_t slot, int32_t k, const int32_t *route, int32_t nhops,
                      mt_time_ps lat, int shifted) {
    double cap = shifted ? g->rate : INFINITY; /* member 0 shifted: its links' bandwidths (group_route) */
    for (int32_t h = 0; h < nhops; h++) { /* gslot first: a member's links are mostly another's */
        if (net->gslot[route[h]] || busy_of(net, route[h])) return 0;
        if (net->fold && orig_of(net, route[h]) >= 0 && net->vcnt[orig_of(net, route[h])] > 0)
            return 0; /* a folded send's virtual copy is there: the caller sends one by one */
        /* no link is perturbed (send_group): every capacity is the topology's (mt_lmm_cnsts_lazy),
         * read there, not from the solver's constraints (untouched memory for unused links) */
        double bw = shifted ? cap : mt_topo_link(net->topo, route[h])->bw_Bps;
        if (bw < cap) cap = bw; /* fmin, without its call (no NaN here) */
    }
    if (k == 0) g->hops = nhops, g->lat = lat, g->rate = cap;
    if (nhops != g->hops || lat != g->lat || cap != g->rate || !(cap > 0)) return 0;
    for (int32_t h = 0; h < nhops; h++) {
        net->gslot[route[h]] = slot + 1;
        net->gmem[route[h]] = k;
        g->links[(size_t)k * (size_t)nhops + (size_t)h] = route[h];
    }
    return 1;
}

/* Under folding, the virtual members on copy links count as those links' flows (creal: a folded
 * send meeting them is not virtual; index_link counts those on links it learns are copies later,
 * on_group_drain uncounts them, a materialized member's unlink_flow). */
static void group_fold_count(mt_flownet *net, const fgroup *g, int32_t n) {
    for (int64_t i = 0; net->fold && i < (int64_t)n * g->hops; i++) {
        int32_t l0 = copy_of(net, g->links[i]);
        if (l0 >= 0) net->creal[l0]++;
    }
}

/* A free group slot (the arrays made on first use); -1 when out of memory. */
static int32_t group_slot(mt_flownet *net) {
    if (!net->gslot) {
        net->gslot = calloc((size_t)net->nlinks + 1, sizeof *net->gslot);
        net->gmem = calloc((size_t)net->nlinks + 1, sizeof *net->gmem);
        if (!net->gslot || !net->gmem) return -1;
        mt_hugemem_advise(net->gslot, ((size_t)net->nlinks + 1) * sizeof *net->gslot);
        mt_hugemem_advise(net->gmem, ((size_t)net->nlinks + 1) * sizeof *net->gmem);
    }
    for (int64_t i = 0; i < net->ngrp; i++)
        if (!net->grp[i]) return (int32_t)i;
    if (net->ngrp >= INT32_MAX - 1 || mt_vec_reserve(&net->grp, &net->grpcap, net->ngrp + 1)) return -1;
    net->grp[net->ngrp] = NULL;
    return (int32_t)net->ngrp++;
}

/* Member 0's route shifted (network/topology.h mt_topo_route_shift_steps): a member whose ends are
 * member 0's shifted by k units, k in [kmin, kmax], has the route r0[h] + k x step[h], member 0's
 * latency and bandwidths (a ring's members but its wrap: no route looked up, no route cached). */
typedef struct group_shift {
    int32_t r0[8], step[8], buf[8], n0, kmin, kmax;
    mt_time_ps lat0;
} group_shift;

/* Member k's route and latency, shifted from member 0's where the symmetry vouches for it (*shifted),
 * else looked up; 0 when it has none a group can take (no route, none or over 8 hops). */
static int group_route(mt_flownet *net, group_shift *sh, const int32_t *src, const int32_t *dst, int32_t k,
                       const int32_t **route, int32_t *nhops, mt_time_ps *lat, int32_t *shifted) {
    int32_t ks, kd;
    mt_time_ps base_ps;
    *shifted = k > 0 && sh->kmin <= sh->kmax && mt_topo_shift_units(net->topo, src[0], src[k], &ks) &&
               mt_topo_shift_units(net->topo, dst[0], dst[k], &kd) && ks == kd && ks >= sh->kmin && ks <= sh->kmax;
    if (*shifted) {
        *nhops = sh->n0;
        for (int32_t h = 0; h < sh->n0; h++) sh->buf[h] = sh->r0[h] + ks * sh->step[h];
        *route = sh->buf;
        *lat = sh->lat0;
        return 1;
    }
    if (mt_topo_route_lat(net->topo, src[k], dst[k], route, nhops, &base_ps, NULL) != MT_OK || *nhops == 0 ||
        *nhops > 8)
        return 0;
    *lat = route_latency(net, *route, *nhops, base_ps);
    if (k == 0 &&
        mt_topo_route_shift_steps(net->topo, src[0], dst[0], *route, *nhops, sh->step, &sh->kmin, &sh->kmax)) {
        memcpy(sh->r0, *route, (size_t)*nhops * sizeof *sh->r0);
        sh->n0 = *nhops;
        sh->lat0 = *lat;
    }
    return 1;
}

/* send_group (netmodel.h): *taken = 0, nothing sent, when the sends cannot run as one group. */
static mt_status nm_send_group(void *self, int32_t n, const int32_t *src, const int32_t *dst, double bytes,
                               mt_delivered_fn fn, void *ctx, uint64_t tag0, int *taken, mt_error *err) {
    mt_flownet *net = self;
    *taken = 0;
    int32_t nn = mt_topo_nnodes(net->topo);
    if (n < net->group_min || n < 2 || !(bytes > 0) || !isfinite(bytes) || net->perturbed || net->on_link ||
        net->per || net->nchg > net->chg_done || net->n_extra_lat)
        return MT_OK;
    int32_t slot = group_slot(net);
    fgroup *g = slot < 0 ? NULL : group_new(net, n);
    if (!g) return mt_fail(err, MT_ENOMEM, "flow model: out of memory starting %d sends", (int)n);
    int32_t k = 0, ok = 1;
    group_shift sh = {.kmin = 1, .kmax = 0};
    for (; ok && k < n; k++) {
        const int32_t *route;
        int32_t nhops, shifted;
        mt_time_ps lat;
        if (src[k] < 0 || src[k] >= nn || dst[k] < 0 || dst[k] >= nn || src[k] == dst[k] ||
            !group_route(net, &sh, src, dst, k, &route, &nhops, &lat, &shifted))
            break; /* anything unusual: the caller sends one by one */
        ok = group_mark(net, g, slot, k, route, nhops, lat, shifted);
        g->src[k] = src[k];
        g->dst[k] = dst[k];
    }
    if (k < n || !ok) { /* unmark members 0 .. k-1 (member k's marks were not made) */
        for (int32_t j = 0; j < (ok ? k : k - 1); j++)
            for (int32_t h = 0; h < g->hops; h++) net->gslot[g->links[(size_t)j * (size_t)g->hops + (size_t)h]] = 0;
        group_retire(net, g);
        return MT_OK;
    }
    group_fold_count(net, g, n);
    mt_time_ps now = mt_sched_now(net->sched);
    *g = (fgroup){.n = n, .cap = g->cap, .hops = g->hops, .nvirt = n, .links = g->links, .src = g->src, .dst = g->dst,
                  .real = g->real, .bytes = bytes, .rate = g->rate, .t0 = now, .lat = g->lat,
                  .drain_ps = now + mt_ps_ceil(bytes / g->rate), .fn = fn, .ctx = ctx, .tag0 = tag0};
    net->grp[slot] = g;
    net->glive++;
    net->st.sends += (uint64_t)n;
    net->st.flow_events += (uint64_t)n;
    if (!mt_sched_at(net->sched, g->drain_ps, on_group_drain, net, (uint64_t)slot))
        return mt_fail(err, MT_ENOMEM, "flow model: out of memory scheduling %d sends", (int)n);
    *taken = 1;
    return MT_OK;
}

/* ---- netmodel interface ---- */
static mt_status nm_send(void *self, int32_t src, int32_t dst, double bytes, mt_delivered_fn fn,
                         void *ctx, uint64_t tag, mt_error *err) {
    return mt_flownet_start(self, src, dst, bytes, fn, ctx, tag, NULL, err);
}

static mt_status nm_send_sent(void *self, int32_t src, int32_t dst, double bytes, mt_sent_fn on_sent,
                              mt_delivered_fn fn, void *ctx, uint64_t tag, mt_error *err) {
    return start_flow(self, src, dst, bytes, on_sent, fn, ctx, tag, 0, NULL, err);
}

static mt_status nm_send_folded(void *self, int32_t src, int32_t dst, double bytes, mt_sent_fn on_sent,
                                mt_delivered_fn fn, void *ctx, uint64_t tag, mt_error *err) {
    return start_flow(self, src, dst, bytes, on_sent, fn, ctx, tag, 1, NULL, err);
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
    int32_t n = L->vn;
    mt_time_ps now = mt_sched_now(net->sched);
    out->bytes = L->bytes;
    out->busy_ps = L->busy_ps;
    if (n > 0) out->busy_ps += now - L->busy_since;
    out->peak_flows = L->peak;
    out->flows_now = n;
    if (net->gslot && net->gslot[link]) { /* a group member's flow, draining since t0 */
        out->busy_ps += now - net->grp[net->gslot[link] - 1]->t0;
        out->peak_flows = out->peak_flows > 1 ? out->peak_flows : 1;
        out->flows_now = 1;
    }
    int32_t l0 = net->orig ? orig_of(net, link) : -1;
    if (l0 >= 0 && l0 != link) { /* a copy link: its virtual periods are replica 0's link's */
        out->bytes += net->vbytes[l0];
        out->busy_ps += net->vbusy[l0] + (net->vcnt[l0] > 0 ? now - net->vsince[l0] : 0);
        if (net->vpeak[l0] > out->peak_flows) out->peak_flows = net->vpeak[l0];
        out->flows_now += net->vcnt[l0];
    }
    return MT_OK;
}

static void nm_set_link_observer(void *self, mt_link_rate_fn fn, void *ctx) {
    mt_flownet *net = self;
    if (fn && net->fold) fold_break(net, "link load is recorded over time");
    if (fn && net->glive > 0) materialize_groups(net);
    if (fn && !net->reported && !(net->reported = calloc((size_t)net->nlinks + 1, sizeof *net->reported))) {
        fail(net, "recording link loads"); /* the run stops with this message */
        fn = NULL;
    }
    net->on_link = fn;
    net->link_ctx = ctx;
}

/* A 0-byte send costs its route's latency (start_latency_only); fixed while no change is pending. */
static int nm_fixed_latency(void *self, int32_t src, int32_t dst, mt_time_ps *out_ps) {
    mt_flownet *net = self;
    const int32_t *route;
    int32_t nhops, nn = mt_topo_nnodes(net->topo);
    mt_time_ps base_ps;
    if (net->chg_done < net->nchg || src < 0 || src >= nn || dst < 0 || dst >= nn) return 0;
    if (net->n_extra_lat == 0) /* the route's latency alone (a ring's hops: O(1) each, topology.h) */
        return mt_topo_route_latency(net->topo, src, dst, out_ps, NULL) == MT_OK;
    if (mt_topo_route_lat(net->topo, src, dst, &route, &nhops, &base_ps, NULL) != MT_OK) return 0;
    *out_ps = route_latency(net, route, nhops, base_ps);
    return 1;
}

static void nm_set_grouping(void *self, int on) { ((mt_flownet *)self)->group_min = on ? MT_FLOW_GROUP_MIN : INT32_MAX; }

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
    .set_fold = set_fold,
    .send_folded = nm_send_folded,
    .send_group = nm_send_group,
    .set_grouping = nm_set_grouping,
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
    .folds = 1,
    .group_min = MT_FLOW_GROUP_MIN,
    .create = create,
};

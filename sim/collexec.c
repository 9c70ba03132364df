/* sim/collexec.c — see collexec.h.
 * Invariant: left[i] = dependencies of send i not yet met; a send is issued exactly once, when
 * left[i] reaches 0; `completed` counts delivered sends (joins included). The dependents of
 * send k are rev[rev_off[k] .. rev_off[k+1]): the first rev_nsent[k] wait for k to have LEFT
 * its source (counted down by on_sent, or at delivery when the model cannot tell), the rest
 * for its delivery. A latency chain (0-byte sends each waiting only for the previous one's
 * delivery, nobody waiting for them to leave: ringflow's per-step latencies) whose hops the
 * model promises fixed latencies for (mt_net_fixed_latency) runs as one timer at its end
 * instead of one event per hop; completions are the same. A schedule's walk (collective.h: one
 * send for ringflow's chain) runs as that chain would: a timer over its hops' latencies (O(N)
 * look-ups, no per-hop state), or hop by hop while the model cannot promise them. */
#include "sim/collexec.h"

#include <stdio.h>
#include <stdlib.h>

struct mt_collexec {
    const mt_coll_schedule *s;
    mt_netmodel *net;
    mt_sched sched;
    const int32_t *ep;
    int32_t nep;
    int tells_sent; /* the model calls on_sent (else delivery counts as having left) */
    int folded;     /* its sends are folded sends (mt_collexec_start_folded) */
    int lat_pending; /* every send delivered, the schedule's extra latency running */
    mt_coll_done_fn done;
    void *ctx;
    uint32_t *left, *rev_off, *rev, *rev_nsent;
    uint32_t *stack;
    uint32_t nstack;
    uint32_t completed;
    mt_time_ps start_ps, finish_ps;
    mt_time_ps *hop_lat;    /* per send of a latency chain: its latency (allocated on first use) */
    char msg[MT_ERRMSG_MAX];
};

void mt_collexec_free(mt_collexec *x) {
    if (!x) return;
    free(x->left);
    free(x->rev_off);
    free(x->rev);
    free(x->rev_nsent);
    free(x->stack);
    free(x->hop_lat);
    free(x);
}

static void on_sent(void *ctx, uint64_t tag);
static void on_delivered(void *ctx, uint64_t tag);
static void on_chain(void *ctx, uint64_t tag);
static void on_extra(void *ctx, uint64_t tag);


/* The next send of a latency chain after send k, or UINT32_MAX: k's only dependent (on its
 * delivery; none on its leaving), a 0-byte send that waits for nothing else and for whose
 * leaving nobody waits. */
static uint32_t chain_next(const mt_collexec *x, uint32_t k) {
    if (x->rev_nsent[k] != 0 || x->rev_off[k + 1] - x->rev_off[k] != 1) return UINT32_MAX;
    uint32_t j = x->rev[x->rev_off[k]];
    const mt_coll_send *c = &x->s->sends[j];
    return x->left[j] == 1 && c->bytes == 0 && c->src != c->dst && x->rev_nsent[j] == 0 ? j : UINT32_MAX;
}

/* The latency of the chain from send i on, each hop's kept in hop_lat; 0 when the model cannot
 * promise a hop's latency (or out of memory: the sends then run one by one). O(chain). */
static int chain_latency(mt_collexec *x, uint32_t i, mt_time_ps *total) {
    if (!x->hop_lat && !(x->hop_lat = malloc(((size_t)x->s->nsends + 1) * sizeof *x->hop_lat))) return 0;
    *total = 0;
    for (uint32_t k = i; k != UINT32_MAX; k = chain_next(x, k)) {
        const mt_coll_send *c = &x->s->sends[k];
        if (!mt_net_fixed_latency(x->net, x->ep[c->src], x->ep[c->dst], &x->hop_lat[k])) return 0;
        *total += x->hop_lat[k];
    }
    return 1;
}

/* A walk's hop k (collective.h: the schedule's walk): its latency into *lat; 0 when the model
 * cannot promise it. */
static int walk_hop(const mt_collexec *x, int64_t k, mt_time_ps *lat) {
    int32_t n = x->s->p.nranks, a = (int32_t)((x->s->sends[x->s->walk].src + k) % n);
    return mt_net_fixed_latency(x->net, x->ep[a], x->ep[(a + 1) % n], lat);
}

/* The latency of the walk's hops j .. walk_hops-1, as chain_latency sums a chain's; 0 when the model
 * cannot promise one of them. Whole turns of the ring are one turn's sum times their count, the
 * rest one turn less the hops it leaves out: O(N) however long the walk. */
static int walk_latency(const mt_collexec *x, int64_t j, mt_time_ps *total) {
    int64_t n = x->s->p.nranks, m = x->s->walk_hops - j, turns = m / n, rem = m % n;
    mt_time_ps lat, turn = 0, part = 0;
    if (turns == 0) {
        for (int64_t k = 0; k < rem; k++) {
            if (!walk_hop(x, j + k, &lat)) return 0;
            part += lat;
        }
        *total = part;
        return 1;
    }
    for (int64_t k = 0; k < n; k++) {
        if (!walk_hop(x, j + k, &lat)) return 0;
        turn += lat;
        if (k < rem) part += lat;
    }
    *total = turns * turn + part;
    return 1;
}

static void on_walk(void *ctx, uint64_t tag);
static void on_walk_end(void *ctx, uint64_t tag);

/* The walk from its hop j on, as the chain it stands for runs: one timer to its end when two or
 * more hops are left and the model promises their latencies, else hop j as a 0-byte send
 * (on_walk goes on from its delivery). */
static mt_status walk_from(mt_collexec *x, int64_t j, mt_error *err) {
    mt_time_ps total;
    if (x->s->walk_hops - j >= 2 && walk_latency(x, j, &total)) {
        if (!mt_sched_at(x->sched, mt_sched_now(x->sched) + total, on_walk_end, x, 0))
            return mt_fail(err, MT_ENOMEM, "out of memory running a collective");
        return MT_OK;
    }
    int32_t n = x->s->p.nranks, a = (int32_t)((x->s->sends[x->s->walk].src + j) % n), b = (a + 1) % n;
    if (x->folded) return mt_net_send_folded(x->net, x->ep[a], x->ep[b], 0, NULL, on_walk, x, (uint64_t)j, err);
    return mt_net_send_sent(x->net, x->ep[a], x->ep[b], 0, NULL, on_walk, x, (uint64_t)j, err);
}

/* Starts send i (its dependencies are met); a local join goes on the stack to complete. */
static mt_status issue(mt_collexec *x, uint32_t i, mt_error *err) {
    const mt_coll_send *c = &x->s->sends[i];
    if (x->s->walk_hops >= 2 && i == x->s->walk) return walk_from(x, 0, err);
    if (c->src == c->dst) {
        x->stack[x->nstack++] = i;
        return MT_OK;
    }
    mt_time_ps total;
    if (c->bytes == 0 && x->rev_nsent[i] == 0 && chain_next(x, i) != UINT32_MAX && chain_latency(x, i, &total)) {
        if (!mt_sched_at(x->sched, mt_sched_now(x->sched) + total, on_chain, x, i))
            return mt_fail(err, MT_ENOMEM, "out of memory running a collective");
        return MT_OK;
    }
    if (x->folded)
        return mt_net_send_folded(x->net, x->ep[c->src], x->ep[c->dst], c->bytes, x->rev_nsent[i] ? on_sent : NULL,
                                  on_delivered, x, i, err);
    return mt_net_send_sent(x->net, x->ep[c->src], x->ep[c->dst], c->bytes, x->rev_nsent[i] ? on_sent : NULL,
                            on_delivered, x, i, err);
}

/* Counts down the dependents rev[from .. to), issuing those that become ready. */
static mt_status unlock(mt_collexec *x, uint32_t from, uint32_t to, mt_error *err) {
    for (uint32_t r = from; r < to; r++)
        if (--x->left[x->rev[r]] == 0) MT_CHECK(issue(x, x->rev[r], err));
    return MT_OK;
}

/* Completes the sends on the stack (a delivered send, ready joins) and every join they unlock,
 * issuing what becomes ready; calls `done` after the last. */
static mt_status run_stack(mt_collexec *x, mt_error *err) {
    mt_time_ps now = mt_sched_now(x->sched);
    while (x->nstack > 0) {
        uint32_t k = x->stack[--x->nstack];
        const mt_coll_send *c = &x->s->sends[k];
        x->completed++;
        uint32_t mid = x->rev_off[k] + x->rev_nsent[k];
        if (c->src == c->dst || !x->tells_sent) MT_CHECK(unlock(x, x->rev_off[k], mid, err));
        MT_CHECK(unlock(x, mid, x->rev_off[k + 1], err));
    }
    if (x->completed == x->s->nsends && x->finish_ps == MT_TIME_NEVER && !x->lat_pending) {
        mt_time_ps extra = (mt_time_ps)(x->s->p.extra_lat_ns * 1e3 + 0.5);
        if (extra > 0) { /* the protocol's latency after the last delivery (collective.h) */
            x->lat_pending = 1;
            if (!mt_sched_at(x->sched, now + extra, on_extra, x, 0))
                return mt_fail(err, MT_ENOMEM, "out of memory running a collective");
            return MT_OK;
        }
        x->finish_ps = now;
        if (x->done) x->done(x->ctx);
    }
    return MT_OK;
}

/* The extra latency after the last delivery has passed: the collective is done. */
static void on_extra(void *ctx, uint64_t tag) {
    (void)tag;
    mt_collexec *x = ctx;
    x->finish_ps = mt_sched_now(x->sched);
    if (x->done) x->done(x->ctx);
}

/* Handlers return nothing: an error stops the run through the scheduler. Their mt_error is
 * not zeroed (1 KiB per send): only read after a failure filled it. */
static void stop_on_error(mt_collexec *x, mt_status rc, const mt_error *e) {
    if (rc == MT_OK) return;
    snprintf(x->msg, sizeof x->msg, "%s", e->msg);
    mt_sched_fail(x->sched, e->code, x->msg);
}

static void on_sent(void *ctx, uint64_t tag) {
    mt_collexec *x = ctx;
    uint32_t k = (uint32_t)tag;
    mt_error e;
    e.msg[0] = 0;
    mt_status rc = unlock(x, x->rev_off[k], x->rev_off[k] + x->rev_nsent[k], &e);
    if (rc == MT_OK && x->nstack > 0) rc = run_stack(x, &e); /* joins it made ready */
    stop_on_error(x, rc, &e);
}

static void on_delivered(void *ctx, uint64_t tag) {
    mt_collexec *x = ctx;
    mt_error e;
    e.msg[0] = 0;
    x->stack[x->nstack++] = (uint32_t)tag;
    stop_on_error(x, run_stack(x, &e), &e);
}

/* The latency chain that send `tag` began has arrived: each send but the last completes at its
 * own delivery time (the running sum of the hops), the last one as a delivery now. */
static void on_chain(void *ctx, uint64_t tag) {
    mt_collexec *x = ctx;
    uint32_t k = (uint32_t)tag;
    mt_time_ps t = mt_sched_now(x->sched);
    for (uint32_t j = k; j != UINT32_MAX; j = chain_next(x, j)) t -= x->hop_lat[j];
    for (uint32_t j; (j = chain_next(x, k)) != UINT32_MAX; k = j) {
        t += x->hop_lat[k];
        x->completed++;
        x->left[j] = 0; /* its one dependency: met */
    }
    on_delivered(x, k);
}

/* The walk's hop `tag` has arrived: the walk goes on, or has arrived. */
static void on_walk(void *ctx, uint64_t tag) {
    mt_collexec *x = ctx;
    if ((int64_t)tag + 1 >= x->s->walk_hops) {
        on_delivered(x, x->s->walk);
        return;
    }
    mt_error e;
    e.msg[0] = 0;
    stop_on_error(x, walk_from(x, (int64_t)tag + 1, &e), &e);
}

/* The walk's timer: it has arrived. */
static void on_walk_end(void *ctx, uint64_t tag) {
    (void)tag;
    mt_collexec *x = ctx;
    on_delivered(x, x->s->walk);
}

/* left[] and the reverse lists (rev_off, rev, rev_nsent: LEFT-dependents first). */
static mt_status build_reverse(mt_collexec *x, mt_error *err) {
    const mt_coll_schedule *s = x->s;
    uint32_t n = s->nsends;
    uint32_t *fill = malloc(((size_t)n + 1) * sizeof *fill);
    if (!fill) return mt_fail(err, MT_ENOMEM, "out of memory starting a collective");
    for (uint32_t i = 0; i < n; i++) {
        x->left[i] = s->sends[i].ndeps;
        for (uint32_t k = 0; k < s->sends[i].ndeps; k++) {
            uint32_t d = s->deps[s->sends[i].dep_begin + k];
            x->rev_off[mt_coll_dep_send(d) + 1]++;
            if (mt_coll_dep_on_sent(d)) x->rev_nsent[mt_coll_dep_send(d)]++;
        }
    }
    for (uint32_t i = 0; i < n; i++) x->rev_off[i + 1] += x->rev_off[i];
    for (uint32_t i = 0; i < n; i++) {
        x->stack[i] = x->rev_off[i];                   /* next LEFT-dependent slot */
        fill[i] = x->rev_off[i] + x->rev_nsent[i];     /* next delivery-dependent slot */
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < s->sends[i].ndeps; k++) {
            uint32_t d = s->deps[s->sends[i].dep_begin + k], j = mt_coll_dep_send(d);
            x->rev[mt_coll_dep_on_sent(d) ? x->stack[j]++ : fill[j]++] = i;
        }
    free(fill);
    x->nstack = 0;
    return MT_OK;
}

/* The run of sends from i on that may go as one group (netmodel.h send_group: ringflow's and
 * treeflow's bulk): no dependencies, nobody waiting for them to leave, equal bytes, not local, not
 * folded sends. Its length (1: i alone). */
static uint32_t group_run(const mt_collexec *x, uint32_t i) {
    const mt_coll_send *a = &x->s->sends[i];
    if (x->folded || a->ndeps || a->src == a->dst || !(a->bytes > 0) || x->rev_nsent[i]) return 1;
    uint32_t j = i + 1;
    for (const mt_coll_send *c; j < x->s->nsends; j++)
        if ((c = &x->s->sends[j])->ndeps || c->src == c->dst || c->bytes != a->bytes || x->rev_nsent[j]) break;
    return j - i;
}

/* Sends i .. i+n-1 as one group when the model takes them (*taken). */
static mt_status issue_group(mt_collexec *x, uint32_t i, uint32_t n, int *taken, mt_error *err) {
    int32_t *ep = malloc(2 * (size_t)n * sizeof *ep);
    if (!ep) return mt_fail(err, MT_ENOMEM, "out of memory running a collective");
    for (uint32_t k = 0; k < n; k++) {
        ep[k] = x->ep[x->s->sends[i + k].src];
        ep[n + k] = x->ep[x->s->sends[i + k].dst];
    }
    mt_status rc = mt_net_send_group(x->net, (int32_t)n, ep, ep + n, x->s->sends[i].bytes, on_delivered, x, i, taken,
                                     err);
    free(ep);
    return rc;
}

/* Issues every send with no dependencies (joins complete at once), a run of alike ones as one
 * group where the model takes it. Only those: a send that one of them unlocks (left reaching 0 at
 * once) has been issued by unlock. */
static mt_status start_ready(mt_collexec *x, mt_error *err) {
    const mt_coll_schedule *s = x->s;
    for (uint32_t i = 0, n; i < s->nsends; i += n) {
        n = 1;
        if (s->sends[i].ndeps != 0) continue;
        int taken = 0;
        if ((n = group_run(x, i)) > 1) MT_CHECK(issue_group(x, i, n, &taken, err));
        for (uint32_t k = i; !taken && k < i + n; k++) {
            MT_CHECK(issue(x, k, err));
            MT_CHECK(run_stack(x, err));
        }
    }
    if (s->nsends == 0) {
        x->finish_ps = x->start_ps;
        if (x->done) x->done(x->ctx);
    }
    return MT_OK;
}

static mt_status start(const mt_coll_schedule *s, mt_netmodel *net, mt_sched sched, const int32_t *rank_ep,
                       int folded, mt_coll_done_fn done, void *ctx, mt_collexec **out, mt_error *err) {
    *out = NULL;
    mt_collexec *x = calloc(1, sizeof *x);
    if (!x) return mt_fail(err, MT_ENOMEM, "out of memory starting a collective");
    x->folded = folded;
    x->s = s;
    x->net = net;
    x->sched = sched;
    x->tells_sent = mt_net_can(net, MT_NETOP_SEND_SENT);
    x->done = done;
    x->ctx = ctx;
    x->ep = rank_ep;
    x->nep = s->p.nranks;
    if (!rank_ep) x->nep = mt_net_endpoints(net, &x->ep);
    x->start_ps = mt_sched_now(sched);
    x->finish_ps = MT_TIME_NEVER;
    if (x->nep < s->p.nranks) {
        int32_t nep = x->nep;
        mt_collexec_free(x);
        return mt_fail(err, MT_EINVAL, "a %d-rank collective needs %d endpoints but the network "
                       "has %d (pick a larger topology)", (int)s->p.nranks, (int)s->p.nranks,
                       (int)nep);
    }
    size_t n = s->nsends;
    x->left = malloc((n + 1) * sizeof *x->left);
    x->rev_off = calloc(n + 2, sizeof *x->rev_off);
    x->rev = malloc(((size_t)s->ndeps + 1) * sizeof *x->rev);
    x->rev_nsent = calloc(n + 1, sizeof *x->rev_nsent);
    x->stack = malloc((n + 1) * sizeof *x->stack);
    mt_status rc = MT_OK;
    if (!x->left || !x->rev_off || !x->rev || !x->rev_nsent || !x->stack)
        rc = mt_fail(err, MT_ENOMEM, "out of memory starting a collective");
    if (rc == MT_OK) rc = build_reverse(x, err);
    if (rc == MT_OK) rc = start_ready(x, err);
    if (rc != MT_OK) {
        mt_collexec_free(x);
        return rc;
    }
    *out = x;
    return MT_OK;
}

mt_status mt_collexec_start(const mt_coll_schedule *s, mt_netmodel *net, mt_sched sched,
                            const int32_t *rank_ep, mt_coll_done_fn done, void *ctx,
                            mt_collexec **out, mt_error *err) {
    return start(s, net, sched, rank_ep, 0, done, ctx, out, err);
}

mt_status mt_collexec_start_folded(const mt_coll_schedule *s, mt_netmodel *net, mt_sched sched,
                                   const int32_t *rank_ep, mt_coll_done_fn done, void *ctx,
                                   mt_collexec **out, mt_error *err) {
    return start(s, net, sched, rank_ep, 1, done, ctx, out, err);
}

int mt_collexec_done(const mt_collexec *x) { return x->finish_ps != MT_TIME_NEVER; }
void *mt_collexec_ctx(const mt_collexec *x) { return x->ctx; }
mt_time_ps mt_collexec_start_ps(const mt_collexec *x) { return x->start_ps; }
mt_time_ps mt_collexec_finish_ps(const mt_collexec *x) { return x->finish_ps; }

#include "sim/engine.h"

mt_status mt_collexec_time(const mt_coll_schedule *s, mt_netmodel *net, mt_engine *e,
                           const int32_t *rank_ep, mt_time_ps *out_ps, mt_error *err) {
    mt_collexec *x;
    MT_CHECK(mt_collexec_start(s, net, mt_engine_sched(e), rank_ep, NULL, NULL, &x, err));
    mt_status rc = mt_engine_run(e, MT_TIME_NEVER, err);
    if (rc == MT_OK && !mt_collexec_done(x))
        rc = mt_fail(err, MT_ESTUCK, "the %s ended with sends pending (a dependency cycle or a "
                     "model that never delivered)", mt_coll_op_name(s->p.op));
    if (rc == MT_OK) *out_ps = mt_collexec_finish_ps(x) - mt_collexec_start_ps(x);
    mt_collexec_free(x);
    return rc;
}

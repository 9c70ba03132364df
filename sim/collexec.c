/* sim/collexec.c — see collexec.h.
 * Invariant: left[i] = dependencies of send i not yet delivered; a send is issued exactly
 * once, when left[i] reaches 0; `completed` counts delivered sends (joins included). */
#include "sim/collexec.h"

#include <stdio.h>
#include <stdlib.h>

struct mt_collexec {
    const mt_coll_schedule *s;
    mt_netmodel *net;
    mt_sched sched;
    const int32_t *ep;
    int32_t nep;
    mt_coll_done_fn done;
    void *ctx;
    uint32_t *left, *rev_off, *rev;
    uint32_t *stack;
    uint32_t nstack;
    uint32_t completed;
    mt_time_ps start_ps, finish_ps;
    mt_time_ps *rank_done;
    char msg[MT_ERRMSG_MAX];
};

void mt_collexec_free(mt_collexec *x) {
    if (!x) return;
    free(x->left);
    free(x->rev_off);
    free(x->rev);
    free(x->stack);
    free(x->rank_done);
    free(x);
}

static void on_delivered(void *ctx, uint64_t tag);

static mt_status issue(mt_collexec *x, uint32_t i, mt_error *err) {
    const mt_coll_send *c = &x->s->sends[i];
    if (c->src == c->dst) { /* local join: complete at once (iteratively) */
        x->stack[x->nstack++] = i;
        return MT_OK;
    }
    return mt_net_send(x->net, x->ep[c->src], x->ep[c->dst], c->bytes, on_delivered, x, i, err);
}

/* Completes send i and every join it unlocks, issuing what becomes ready. */
static mt_status complete(mt_collexec *x, uint32_t i, mt_error *err) {
    x->stack[x->nstack++] = i;
    mt_time_ps now = mt_sched_now(x->sched);
    while (x->nstack > 0) {
        uint32_t k = x->stack[--x->nstack];
        const mt_coll_send *c = &x->s->sends[k];
        x->completed++;
        if (x->rank_done[c->src] < now || x->rank_done[c->src] == MT_TIME_NEVER) x->rank_done[c->src] = now;
        if (x->rank_done[c->dst] < now || x->rank_done[c->dst] == MT_TIME_NEVER) x->rank_done[c->dst] = now;
        for (uint32_t r = x->rev_off[k]; r < x->rev_off[k + 1]; r++)
            if (--x->left[x->rev[r]] == 0) MT_CHECK(issue(x, x->rev[r], err));
    }
    if (x->completed == x->s->nsends) {
        x->finish_ps = now;
        if (x->done) x->done(x->ctx);
    }
    return MT_OK;
}

static void on_delivered(void *ctx, uint64_t tag) {
    mt_collexec *x = ctx;
    mt_error e = {0};
    if (complete(x, (uint32_t)tag, &e) != MT_OK) {
        snprintf(x->msg, sizeof x->msg, "%s", e.msg);
        mt_sched_fail(x->sched, e.code, x->msg);
    }
}

mt_status mt_collexec_start(const mt_coll_schedule *s, mt_netmodel *net, mt_sched sched,
                            const int32_t *rank_ep, mt_coll_done_fn done, void *ctx,
                            mt_collexec **out, mt_error *err) {
    *out = NULL;
    mt_collexec *x = calloc(1, sizeof *x);
    if (!x) return mt_fail(err, MT_ENOMEM, "out of memory starting a collective");
    x->s = s;
    x->net = net;
    x->sched = sched;
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
    uint32_t n = s->nsends;
    x->left = malloc(((size_t)n + 1) * sizeof *x->left);
    x->rev_off = calloc((size_t)n + 2, sizeof *x->rev_off);
    x->rev = malloc(((size_t)s->ndeps + 1) * sizeof *x->rev);
    x->stack = malloc(((size_t)n + 1) * sizeof *x->stack);
    x->rank_done = malloc((size_t)s->p.nranks * sizeof *x->rank_done);
    if (!x->left || !x->rev_off || !x->rev || !x->stack || !x->rank_done) {
        mt_collexec_free(x);
        return mt_fail(err, MT_ENOMEM, "out of memory starting a collective");
    }
    for (int32_t r = 0; r < s->p.nranks; r++) x->rank_done[r] = MT_TIME_NEVER;
    for (uint32_t i = 0; i < n; i++) {
        x->left[i] = s->sends[i].ndeps;
        for (uint32_t k = 0; k < s->sends[i].ndeps; k++) x->rev_off[s->deps[s->sends[i].dep_begin + k] + 1]++;
    }
    for (uint32_t i = 0; i < n; i++) x->rev_off[i + 1] += x->rev_off[i];
    uint32_t *fill = x->stack; /* reuse as scratch */
    for (uint32_t i = 0; i < n; i++) fill[i] = x->rev_off[i];
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < s->sends[i].ndeps; k++) {
            uint32_t d = s->deps[s->sends[i].dep_begin + k];
            x->rev[fill[d]++] = i;
        }
    x->nstack = 0;
    mt_status rc = MT_OK;
    for (uint32_t i = 0; i < n && rc == MT_OK; i++) {
        if (x->left[i] != 0) continue;
        if (s->sends[i].src == s->sends[i].dst) {
            x->nstack = 0;
            rc = complete(x, i, err);
        } else {
            rc = issue(x, i, err);
        }
    }
    if (rc == MT_OK && n == 0) {
        x->finish_ps = x->start_ps;
        if (done) done(ctx);
    }
    if (rc != MT_OK) {
        mt_collexec_free(x);
        return rc;
    }
    *out = x;
    return MT_OK;
}

int mt_collexec_done(const mt_collexec *x) { return x->finish_ps != MT_TIME_NEVER; }
void *mt_collexec_ctx(const mt_collexec *x) { return x->ctx; }
mt_time_ps mt_collexec_start_ps(const mt_collexec *x) { return x->start_ps; }
mt_time_ps mt_collexec_finish_ps(const mt_collexec *x) { return x->finish_ps; }
mt_time_ps mt_collexec_rank_done_ps(const mt_collexec *x, int32_t rank) {
    return (rank >= 0 && rank < x->s->p.nranks) ? x->rank_done[rank] : MT_TIME_NEVER;
}

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

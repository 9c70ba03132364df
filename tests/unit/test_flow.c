/* Unit tests for network/topology + netmodels/flow: routes, max-min fair sharing solved by
 * hand, slow links, latency + size / rate delivery times, per-link statistics, and network
 * folding (two replicas of four GPUs on one switch: folded runs against the same sends with
 * every copy spelled out; traffic between replicas meeting a folded send on both replicas'
 * links, and on one only, where the copy drains apart and folding must break). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
#include <math.h>
#include <string.h>

#include "netmodels/flow.h"
#include "network/topology.h"
#include "sim/engine.h"
#include "tests/unit/flowfix.h"


static int close_rel(double a, double b, double tol) { return fabs(a - b) <= tol * fabs(b); }

/* Per-link statistics and the observer go through the netmodel interface. */
static void link_stats(mt_flownet *net, int32_t link, mt_link_stats *st) {
    mt_netmodel nm = mt_flownet_netmodel(net);
    assert_int_equal(mt_net_link_stats(&nm, link, st, NULL), MT_OK);
}

static void one_flow_latency_plus_size_over_bw(void **state) {
    (void)state;
    mt_topo *t = chain(3, 10, 1000000); /* 10 GB/s, 1 us per link */
    mt_engine *e = mt_engine_new();
    mt_flownet *net;
    assert_int_equal(mt_flownet_new(t, mt_engine_sched(e), &net, NULL), MT_OK);
    done_t d = {.e = e};
    assert_int_equal(mt_flownet_start(net, 0, 2, 1e9, on_done, &d, 0, NULL, NULL), MT_OK);
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(d.n, 1);
    /* 1 GB at 10 GB/s = 0.1 s, plus 2 us of latency */
    assert_int_equal(d.at[0], 100000000000LL + 2000000);
    mt_link_stats st;
    link_stats(net, 0, &st);
    assert_true(st.bytes == 1e9);
    assert_int_equal(st.busy_ps, 100000000000LL);
    assert_int_equal(st.peak_flows, 1);
    link_stats(net, 1, &st); /* reverse direction: unused */
    assert_true(st.bytes == 0);
    mt_flownet_free(net);
    mt_engine_free(e);
    mt_topo_free(t);
}

static void two_flows_share_a_link_equally(void **state) {
    (void)state;
    mt_topo *t = chain(2, 100, 0);
    mt_engine *e = mt_engine_new();
    mt_flownet *net;
    mt_flownet_new(t, mt_engine_sched(e), &net, NULL);
    done_t d = {.e = e};
    int32_t a, b;
    mt_flownet_start(net, 0, 1, 1e9, on_done, &d, 0, &a, NULL);
    mt_flownet_start(net, 0, 1, 3e9, on_done, &d, 1, &b, NULL);
    mt_engine_run(e, 0, NULL); /* the solve at t = 0 */
    assert_true(mt_flownet_rate(net, a) == 50 * GB);
    assert_true(mt_flownet_rate(net, b) == 50 * GB);
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, NULL), MT_OK);
    /* a: 1 GB at 50 GB/s = 20 ms; b then runs alone: 2 GB left at 100 GB/s = +20 ms */
    assert_int_equal(d.at[0], 20000000000LL);
    assert_int_equal(d.at[1], 40000000000LL);
    mt_link_stats st;
    link_stats(net, 0, &st);
    assert_int_equal(st.peak_flows, 2);
    assert_true(st.bytes == 4e9);
    mt_flownet_free(net);
    mt_engine_free(e);
    mt_topo_free(t);
}

/* Records when a send left and when it was delivered, and in which order (tags 0..3). */
typedef struct sentrec {
    mt_engine *e;
    mt_time_ps left[4], at[4];
    int seq, left_seq[4], at_seq[4];
} sentrec;

static void rec_left(void *ctx, uint64_t tag) {
    sentrec *r = ctx;
    r->left[tag] = mt_engine_now(r->e);
    r->left_seq[tag] = r->seq++;
}

static void rec_at(void *ctx, uint64_t tag) {
    sentrec *r = ctx;
    r->at[tag] = mt_engine_now(r->e);
    r->at_seq[tag] = r->seq++;
}

/* send_sent: a send leaves its source when its last byte drains (1 GB at 10 GB/s: 0.1 s) and
 * arrives one path latency (2 x 1 us) later; a send with nothing to drain leaves at once. */
static void sent_when_drained(void **state) {
    (void)state;
    mt_topo *t = chain(3, 10, 1000000);
    mt_engine *e = mt_engine_new();
    mt_flownet *fn;
    assert_int_equal(mt_flownet_new(t, mt_engine_sched(e), &fn, NULL), MT_OK);
    mt_netmodel net = mt_flownet_netmodel(fn);
    assert_true(mt_net_can(&net, MT_NETOP_SEND_SENT));
    sentrec r = {.e = e};
    assert_int_equal(mt_net_send_sent(&net, 0, 2, 1e9, rec_left, rec_at, &r, 0, NULL), MT_OK);
    assert_int_equal(mt_net_send_sent(&net, 0, 2, 0, rec_left, rec_at, &r, 1, NULL), MT_OK);
    assert_int_equal(mt_net_send_sent(&net, 1, 1, 5e8, rec_left, rec_at, &r, 2, NULL), MT_OK);
    assert_int_equal(mt_net_send_sent(&net, 2, 1, 5e8, NULL, rec_at, &r, 3, NULL), MT_OK); /* plain */
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(r.left[0], 100000000000LL);
    assert_int_equal(r.at[0], 100000000000LL + 2000000);
    assert_int_equal(r.left[1], 0);
    assert_int_equal(r.at[1], 2000000);
    assert_int_equal(r.left[2], 0);
    assert_int_equal(r.at[2], 0);
    assert_true(r.left_seq[2] < r.at_seq[2]); /* same instant: left first */
    assert_int_equal(r.at[3], 50000000000LL + 1000000);
    mt_net_free(&net);
    mt_engine_free(e);
    mt_topo_free(t);
}

/* Textbook max-min: nodes 0-1-2 in a line; link 0->1 has 10 GB/s, link 1->2 has 4 GB/s.
 * f0: 0->2 (both links), f1: 1->2, f2: 0->1. Link 1->2 is the bottleneck: f0 = f1 = 2 GB/s;
 * f2 takes what f0 leaves on 0->1: 10 - 2 = 8 GB/s (not 5, the naive equal split). */
static void maxmin_textbook(void **state) {
    (void)state;
    mt_topo *t = mt_topo_new("line");
    for (int i = 0; i < 3; i++) mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
    mt_topo_add_link(t, 0, 1, 10 * GB, 0, NULL);
    mt_topo_add_link(t, 1, 2, 4 * GB, 0, NULL);
    mt_engine *e = mt_engine_new();
    mt_flownet *net;
    mt_flownet_new(t, mt_engine_sched(e), &net, NULL);
    done_t d = {.e = e};
    int32_t f[3];
    mt_flownet_start(net, 0, 2, 2e9, on_done, &d, 0, &f[0], NULL);
    mt_flownet_start(net, 1, 2, 4e9, on_done, &d, 1, &f[1], NULL);
    mt_flownet_start(net, 0, 1, 8e9, on_done, &d, 2, &f[2], NULL);
    mt_engine_run(e, 0, NULL);
    assert_true(close_rel(mt_flownet_rate(net, f[0]), 2 * GB, 1e-12));
    assert_true(close_rel(mt_flownet_rate(net, f[1]), 2 * GB, 1e-12));
    assert_true(close_rel(mt_flownet_rate(net, f[2]), 8 * GB, 1e-12));
    /* f0 and f2 both end at 1 s; f1 has 2 GB left and then gets all 4 GB/s: 1.5 s */
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, NULL), MT_OK);
    assert_true(llabs(d.at[0] - 1000000000000LL) <= 1);
    assert_true(llabs(d.at[2] - 1000000000000LL) <= 1);
    assert_true(llabs(d.at[1] - 1500000000000LL) <= 2);
    mt_flownet_free(net);
    mt_engine_free(e);
    mt_topo_free(t);
}

/* Parking lot: links A (0->1), B (1->2), C (2->3), each 12 GB/s. A long flow crosses all
 * three; one short flow on each of A and B, two short flows on C. C's share is 4, so the long
 * flow gets 4, and the short flows on A and B get 8 each; C's short flows get 4. */
static void maxmin_parking_lot(void **state) {
    (void)state;
    mt_topo *t = mt_topo_new("lot");
    for (int i = 0; i < 4; i++) mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
    for (int i = 0; i < 3; i++) mt_topo_add_link(t, i, i + 1, 12 * GB, 0, NULL);
    mt_engine *e = mt_engine_new();
    mt_flownet *net;
    mt_flownet_new(t, mt_engine_sched(e), &net, NULL);
    int32_t lng, a, b, c1, c2;
    mt_flownet_start(net, 0, 3, 1e9, NULL, NULL, 0, &lng, NULL);
    mt_flownet_start(net, 0, 1, 1e9, NULL, NULL, 0, &a, NULL);
    mt_flownet_start(net, 1, 2, 1e9, NULL, NULL, 0, &b, NULL);
    mt_flownet_start(net, 2, 3, 1e9, NULL, NULL, 0, &c1, NULL);
    mt_flownet_start(net, 2, 3, 1e9, NULL, NULL, 0, &c2, NULL);
    mt_engine_run(e, 0, NULL);
    assert_true(close_rel(mt_flownet_rate(net, lng), 4 * GB, 1e-12));
    assert_true(close_rel(mt_flownet_rate(net, a), 8 * GB, 1e-12));
    assert_true(close_rel(mt_flownet_rate(net, b), 8 * GB, 1e-12));
    assert_true(close_rel(mt_flownet_rate(net, c1), 4 * GB, 1e-12));
    assert_true(close_rel(mt_flownet_rate(net, c2), 4 * GB, 1e-12));
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, NULL), MT_OK);
    mt_flownet_free(net);
    mt_engine_free(e);
    mt_topo_free(t);
}

/* Ring of 4 with one slow direction 1->2 (1 GB/s instead of 10): a flow through it is slowed,
 * a flow on other links is not, and the reverse direction 2->1 is full speed. */
static void slow_link_slows_only_its_flows(void **state) {
    (void)state;
    mt_topo *t = mt_topo_new("ring4");
    for (int i = 0; i < 4; i++) mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
    for (int i = 0; i < 4; i++) {
        mt_topo_add_link(t, i, (i + 1) % 4, i == 1 ? 1 * GB : 10 * GB, 0, NULL);
        mt_topo_add_link(t, (i + 1) % 4, i, 10 * GB, 0, NULL);
    }
    mt_engine *e = mt_engine_new();
    mt_flownet *net;
    mt_flownet_new(t, mt_engine_sched(e), &net, NULL);
    done_t d = {.e = e};
    mt_flownet_start(net, 1, 2, 1e9, on_done, &d, 0, NULL, NULL); /* slow link */
    mt_flownet_start(net, 3, 0, 1e9, on_done, &d, 1, NULL, NULL); /* fast link */
    mt_flownet_start(net, 2, 1, 1e9, on_done, &d, 2, NULL, NULL); /* reverse of slow */
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(d.at[0], 1000000000000LL);
    assert_int_equal(d.at[1], 100000000000LL);
    assert_int_equal(d.at[2], 100000000000LL);
    mt_flownet_free(net);
    mt_engine_free(e);
    mt_topo_free(t);
}

struct pair {
    mt_flownet *net;
    done_t *d;
};

static void start_second(void *ctx, uint64_t arg) {
    (void)arg;
    struct pair *s = ctx;
    mt_flownet_start(s->net, 0, 1, 1e9, on_done, s->d, 1, NULL, NULL);
}

static void late_arrival_reshares(void **state) {
    (void)state;
    mt_topo *t = chain(2, 10, 0);
    mt_engine *e = mt_engine_new();
    mt_flownet *net;
    mt_flownet_new(t, mt_engine_sched(e), &net, NULL);
    done_t d = {.e = e};
    mt_flownet_start(net, 0, 1, 2e9, on_done, &d, 0, NULL, NULL);
    /* a second flow at 0.1 s: the first has 1 GB left, both now get 5 GB/s */
    struct pair s = {net, &d};
    mt_engine_at(e, 100000000000LL, start_second, &s, 0);
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(d.at[0], 300000000000LL); /* 0.1 + 1 GB / 5 GB/s */
    assert_int_equal(d.at[1], 300000000000LL);
    mt_flownet_free(net);
    mt_engine_free(e);
    mt_topo_free(t);
}

typedef struct linklog {
    int n;
    int32_t link[16];
    mt_time_ps t[16];
    double used[16];
} linklog;

static void log_link(void *ctx, int32_t link, mt_time_ps t, double used) {
    linklog *g = ctx;
    if (g->n < 16) g->link[g->n] = link, g->t[g->n] = t, g->used[g->n] = used;
    g->n++;
}

/* The observer sees the link's load change: a flow at 10 GB/s from 0, still 10 GB/s when a
 * second flow shares it at 0.1 s (no report: nothing changed), then 0 when both drain. */
static void link_observer_reports_load_changes(void **state) {
    (void)state;
    mt_topo *t = chain(2, 10, 0);
    mt_engine *e = mt_engine_new();
    mt_flownet *net;
    mt_flownet_new(t, mt_engine_sched(e), &net, NULL);
    linklog g = {0};
    mt_netmodel nm = mt_flownet_netmodel(net);
    assert_int_equal(mt_net_set_link_observer(&nm, log_link, &g, NULL), MT_OK);
    done_t d = {.e = e};
    mt_flownet_start(net, 0, 1, 2e9, on_done, &d, 0, NULL, NULL);
    struct pair s = {net, &d};
    mt_engine_at(e, 100000000000LL, start_second, &s, 0);
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.link[0], 0);
    assert_int_equal(g.t[0], 0);
    assert_true(g.used[0] == 10 * GB);
    assert_int_equal(g.t[1], 300000000000LL);
    assert_true(g.used[1] == 0);
    mt_flownet_free(net);
    mt_engine_free(e);
    mt_topo_free(t);
}

static void routes_and_no_route(void **state) {
    (void)state;
    mt_topo *t = mt_topo_new("oneway");
    for (int i = 0; i < 3; i++) mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
    mt_topo_add_link(t, 0, 1, GB, 5, NULL);
    mt_topo_add_link(t, 1, 2, GB, 7, NULL);
    const int32_t *r;
    int32_t n;
    assert_int_equal(mt_topo_route(t, 0, 2, &r, &n, NULL), MT_OK);
    assert_int_equal(n, 2);
    assert_int_equal(r[0], 0);
    assert_int_equal(r[1], 1);
    assert_int_equal(mt_topo_path_latency(t, r, n), 12);
    mt_error err = {0};
    assert_int_equal(mt_topo_route(t, 2, 0, &r, &n, &err), MT_ENOROUTE);
    assert_non_null(strstr(err.msg, "no route from gpu2 to gpu0"));
    /* the flow model reports it too, and nothing is scheduled */
    mt_engine *e = mt_engine_new();
    mt_flownet *net;
    mt_flownet_new(t, mt_engine_sched(e), &net, NULL);
    assert_int_equal(mt_flownet_start(net, 2, 0, 1, NULL, NULL, 0, NULL, &err), MT_ENOROUTE);
    assert_int_equal(mt_engine_pending(e), 0);
    mt_flownet_free(net);
    mt_engine_free(e);
    mt_topo_free(t);
}

/* Latency routing prefers two fast hops over one slow hop; hop routing the reverse. ECMP
 * spreads pairs over the two equal middle switches. */
static void routing_metrics_and_ecmp(void **state) {
    (void)state;
    for (int metric = 0; metric < 2; metric++) {
        mt_topo *t = mt_topo_new("tri");
        for (int i = 0; i < 3; i++) mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
        mt_topo_add_link(t, 0, 2, GB, 1000, NULL); /* slow direct */
        mt_topo_add_link(t, 0, 1, GB, 10, NULL);
        mt_topo_add_link(t, 1, 2, GB, 10, NULL);
        mt_topo_set_routing(t, metric ? MT_ROUTE_LATENCY : MT_ROUTE_HOPS, 0);
        const int32_t *r;
        int32_t n;
        assert_int_equal(mt_topo_route(t, 0, 2, &r, &n, NULL), MT_OK);
        assert_int_equal(n, metric ? 2 : 1);
        mt_topo_free(t);
    }
    mt_topo *t = mt_topo_new("twoswitch");
    int gpus = 16;
    for (int i = 0; i < gpus; i++) mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
    int32_t s0 = mt_topo_add_node(t, MT_NODE_SWITCH, NULL, NULL);
    int32_t s1 = mt_topo_add_node(t, MT_NODE_SWITCH, NULL, NULL);
    for (int i = 0; i < gpus; i++) {
        mt_topo_add_duplex(t, i, s0, GB, 0, NULL);
        mt_topo_add_duplex(t, i, s1, GB, 0, NULL);
    }
    mt_topo_set_routing(t, MT_ROUTE_HOPS, 1);
    int via[2] = {0, 0};
    for (int a = 0; a < gpus; a++)
        for (int b = 0; b < gpus; b++) {
            if (a == b) continue;
            const int32_t *r;
            int32_t n;
            assert_int_equal(mt_topo_route(t, a, b, &r, &n, NULL), MT_OK);
            assert_int_equal(n, 2);
            via[mt_topo_link(t, r[0])->dst == s1]++;
        }
    assert_true(via[0] > 60 && via[1] > 60); /* 240 pairs spread over both */
    mt_topo_free(t);
}

/* ---- network folding ---- */

typedef struct fsend {
    mt_time_ps at;
    int32_t src, dst;
    double bytes;
    int folded; /* 1: a send of replica 0 standing for replica 1's copy (src + 4 -> dst + 4) */
} fsend;

typedef struct frun {
    mt_flownet *net;
    mt_netmodel nm;
    done_t d;
    const fsend *s;
    int unfold; /* 1: folded sends go as two plain sends (tag i and 8 + i) */
    int broken;
} frun;

static void fold_broke(void *ctx, const char *why) {
    (void)why;
    ((frun *)ctx)->broken++;
}

static void fsend_go(void *ctx, uint64_t i) {
    frun *r = ctx;
    const fsend *x = &r->s[i];
    if (x->folded && !r->unfold) {
        assert_int_equal(mt_net_send_folded(&r->nm, x->src, x->dst, x->bytes, NULL, on_done, &r->d, i, NULL), MT_OK);
        return;
    }
    assert_int_equal(mt_flownet_start(r->net, x->src, x->dst, x->bytes, on_done, &r->d, i, NULL, NULL), MT_OK);
    if (x->folded) assert_int_equal(mt_flownet_start(r->net, x->src + 4, x->dst + 4, x->bytes, on_done, &r->d, 8 + i,
                                                     NULL, NULL), MT_OK);
}

/* Eight GPUs on one switch (10 GB/s, 1 us links); replica 1 is GPUs 4..7. */
static mt_topo *star8(void) {
    mt_topo *t = mt_topo_new("star8");
    for (int i = 0; i < 8; i++) mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
    int32_t sw = mt_topo_add_node(t, MT_NODE_SWITCH, NULL, NULL);
    for (int i = 0; i < 8; i++) mt_topo_add_duplex(t, i, sw, 10 * GB, 1000000, NULL);
    return t;
}

/* Runs n sends folded (unfold 0) or spelled out (1); the link statistics go to st[]. */
static void fold_run(const fsend *s, int n, int unfold, frun *r, mt_link_stats *st, int32_t *nlinks) {
    static const int32_t ep[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    mt_topo *t = star8();
    mt_engine *e = mt_engine_new();
    memset(r, 0, sizeof *r);
    r->d.e = e;
    r->s = s;
    r->unfold = unfold;
    assert_int_equal(mt_flownet_new(t, mt_engine_sched(e), &r->net, NULL), MT_OK);
    r->nm = mt_flownet_netmodel(r->net);
    mt_netfold f = {2, 4, ep, fold_broke, r};
    if (!unfold) assert_int_equal(mt_net_set_fold(&r->nm, &f, NULL), MT_OK);
    for (int i = 0; i < n; i++) mt_engine_at(e, s[i].at, fsend_go, r, (uint64_t)i);
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, NULL), MT_OK);
    *nlinks = mt_topo_nlinks(t);
    for (int32_t l = 0; l < *nlinks; l++) link_stats(r->net, l, &st[l]);
    mt_net_set_fold(&r->nm, NULL, NULL);
    mt_flownet_free(r->net);
    mt_engine_free(e);
    mt_topo_free(t);
}

/* Folded and spelled out: replica 0's and the unfolded sends delivered at the same times, every
 * link's statistics (replica 1's included) the same; folding never broke. */
static void fold_same(const fsend *s, int n) {
    frun a, b;
    mt_link_stats sa[32], sb[32];
    int32_t na, nb;
    fold_run(s, n, 0, &a, sa, &na);
    fold_run(s, n, 1, &b, sb, &nb);
    assert_int_equal(a.broken, 0);
    for (int i = 0; i < n; i++) {
        assert_true(a.d.at[i] > 0);
        assert_int_equal(a.d.at[i], b.d.at[i]);
        if (s[i].folded) assert_int_equal(b.d.at[8 + i], b.d.at[i]); /* the copy: with it */
    }
    assert_int_equal(na, nb);
    for (int32_t l = 0; l < na; l++) {
        assert_true(sa[l].bytes == sb[l].bytes);
        assert_int_equal(sa[l].busy_ps, sb[l].busy_ps);
        assert_int_equal(sa[l].peak_flows, sb[l].peak_flows);
        assert_int_equal(sa[l].flows_now, 0);
    }
}

static void fold_replica_own_traffic(void **state) {
    (void)state;
    /* two folded sends sharing GPU 1's links, one starting later */
    const fsend s[] = {{0, 0, 1, 1e9, 1}, {0, 2, 1, 0.5e9, 1}, {20000000000LL, 1, 3, 0.3e9, 1}};
    fold_same(s, 3);
}

static void fold_materializes_when_replicas_meet(void **state) {
    (void)state;
    /* at 50 ms traffic between the replicas (0 -> 4, 4 -> 0) meets the folded 0 -> 1 on GPU 0's
     * link and its copy on GPU 4's: the copy becomes a flow and drains with replica 0's; a folded
     * send starting after that starts as flows too, one after the traffic has left goes back
     * to being folded */
    const fsend s[] = {{0, 0, 1, 2e9, 1},          {50000000000LL, 0, 4, 1e9, 0}, {50000000000LL, 4, 0, 1e9, 0},
                       {60000000000LL, 0, 2, 0.2e9, 1}, {900000000000LL, 1, 2, 0.1e9, 1}};
    fold_same(s, 5);
}

static void fold_breaks_when_a_copy_drains_apart(void **state) {
    (void)state;
    /* traffic on replica 1's side only (4 -> 6 shares the copy's first link): the copy is slower
     * than replica 0's send, and folding must break */
    const fsend s[] = {{0, 0, 1, 2e9, 1}, {50000000000LL, 4, 6, 1e9, 0}};
    frun a;
    mt_link_stats st[32];
    int32_t n;
    fold_run(s, 2, 0, &a, st, &n);
    assert_int_equal(a.broken, 1);
}

static void fold_refused_or_broken_by_perturbation(void **state) {
    (void)state;
    static const int32_t ep[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    mt_topo *t = star8();
    mt_engine *e = mt_engine_new();
    mt_flownet *net;
    mt_flownet_new(t, mt_engine_sched(e), &net, NULL);
    mt_netmodel nm = mt_flownet_netmodel(net);
    frun r = {0};
    mt_netfold f = {2, 4, ep, fold_broke, &r};
    assert_int_equal(mt_net_set_fold(&nm, &f, NULL), MT_OK);
    assert_int_equal(mt_net_set_link_factor(&nm, 0, 0.5, NULL), MT_OK); /* folding on: breaks */
    assert_int_equal(r.broken, 1);
    mt_net_set_fold(&nm, NULL, NULL);
    mt_error err = {0};
    assert_int_equal(mt_net_set_fold(&nm, &f, &err), MT_EINVAL); /* a perturbed network: refused */
    assert_non_null(strstr(err.msg, "perturbed"));
    mt_flownet_free(net);
    mt_engine_free(e);
    mt_topo_free(t);
}

/* Flow groups (flow.h): 1,024 neighbour sends i -> i+1 of 1 GB on a 10 GB/s switch, then at 50 ms
 * a 0.5 GB flow 1026 -> 6 that meets member 5's link sw->6 (member 5 becomes a flow, the two share
 * that link): every delivery time and sw->6's statistics are those of the same sends one by one. */
enum { GN = 1024, GNODES = 1030 };
typedef struct grec {
    mt_engine *e;
    mt_netmodel nm;
    mt_time_ps at[GN + 1];
} grec;
static void grec_done(void *ctx, uint64_t tag) { ((grec *)ctx)->at[tag] = mt_engine_now(((grec *)ctx)->e); }
static void grec_late(void *ctx, uint64_t arg) {
    (void)arg;
    grec *g = ctx;
    assert_int_equal(mt_net_send(&g->nm, GNODES - 4, 6, 0.5 * GB, grec_done, g, GN, NULL), MT_OK);
}
static void group_run(int on, grec *g, mt_link_stats *st) {
    mt_topo *t = mt_topo_new("sw");
    for (int i = 0; i < GNODES; i++) mt_topo_add_node(t, MT_NODE_GPU, NULL, NULL);
    int32_t sw = mt_topo_add_node(t, MT_NODE_SWITCH, NULL, NULL);
    for (int i = 0; i < GNODES; i++) mt_topo_add_duplex(t, i, sw, 10 * GB, 1000000, NULL);
    g->e = mt_engine_new();
    mt_flownet *net;
    assert_int_equal(mt_flownet_new(t, mt_engine_sched(g->e), &net, NULL), MT_OK);
    g->nm = mt_flownet_netmodel(net);
    mt_net_set_grouping(&g->nm, on);
    int32_t src[GN], dst[GN];
    for (int i = 0; i < GN; i++) src[i] = i, dst[i] = i + 1;
    int taken = 0;
    assert_int_equal(mt_net_send_group(&g->nm, GN, src, dst, 1 * GB, grec_done, g, 0, &taken, NULL), MT_OK);
    assert_int_equal(taken, on);
    for (int i = 0; !taken && i < GN; i++)
        assert_int_equal(mt_net_send(&g->nm, src[i], dst[i], 1 * GB, grec_done, g, (uint64_t)i, NULL), MT_OK);
    assert_non_null(mt_engine_at(g->e, 50000000000LL, grec_late, g, 0)); /* 50 ms */
    assert_int_equal(mt_engine_run(g->e, MT_TIME_NEVER, NULL), MT_OK);
    int32_t l = -1; /* sw -> gpu 6 */
    for (int32_t k = 0; k < mt_topo_nlinks(t); k++)
        if (mt_topo_link(t, k)->src == sw && mt_topo_link(t, k)->dst == 6) l = k;
    assert_int_equal(mt_net_link_stats(&g->nm, l, st, NULL), MT_OK);
    mt_net_free(&g->nm);
    mt_engine_free(g->e);
    mt_topo_free(t);
}
static void group_equals_one_by_one(void **state) {
    (void)state;
    static grec a, b;
    mt_link_stats sa, sb;
    group_run(1, &a, &sa);
    group_run(0, &b, &sb);
    for (int i = 0; i <= GN; i++) assert_int_equal(a.at[i], b.at[i]);
    assert_true(a.at[5] > a.at[4]); /* member 5 shared sw->6 with the late flow */
    assert_int_equal(a.at[4], 100000000000LL + 2000000); /* 1 GB at 10 GB/s + 2 hops of 1 us */
    assert_true(sa.bytes == sb.bytes && sa.busy_ps == sb.busy_ps && sa.peak_flows == sb.peak_flows);
    assert_int_equal(sa.peak_flows, 2);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_flow_latency_plus_size_over_bw),
        cmocka_unit_test(two_flows_share_a_link_equally),
        cmocka_unit_test(sent_when_drained),
        cmocka_unit_test(maxmin_textbook),
        cmocka_unit_test(maxmin_parking_lot),
        cmocka_unit_test(slow_link_slows_only_its_flows),
        cmocka_unit_test(late_arrival_reshares),
        cmocka_unit_test(link_observer_reports_load_changes),
        cmocka_unit_test(routes_and_no_route),
        cmocka_unit_test(routing_metrics_and_ecmp),
        cmocka_unit_test(fold_replica_own_traffic),
        cmocka_unit_test(fold_materializes_when_replicas_meet),
        cmocka_unit_test(fold_breaks_when_a_copy_drains_apart),
        cmocka_unit_test(fold_refused_or_broken_by_perturbation),
        cmocka_unit_test(group_equals_one_by_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

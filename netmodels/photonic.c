/* netmodels/photonic.c — see photonic.h.
 *
 * Invariants: an endpoint's `circ` list holds the circuits holding one of its ports
 * (state SETUP or UP), nports <= P. A circuit direction is `busy` while a chunk is being
 * transmitted, `waiting` while it sits in the receiver's buffer-wait FIFO (each direction at
 * most once; only wake_waiters takes one out, and starts its chunk). A message stays at
 * the head of its direction queue until its last chunk has left; it is delivered when
 * its last chunk arrives (chunks of one direction arrive in order: same latency, FIFO).
 */
#include "netmodels/photonic.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/limits.h"
#include "util/u64map.h"
#include "util/vec.h"
#include "util/limits.h"

enum { C_DOWN, C_PENDING, C_SETUP, C_UP };

typedef struct msg {
    int32_t src, dst, next;
    double bytes, sent, arrived, chunk;
    mt_sent_fn sent_fn; /* NULL: nobody asked when it leaves */
    mt_delivered_fn fn;
    void *ctx;
    uint64_t tag;
} msg;

typedef struct cdir {
    int32_t head, tail; /* message queue */
    int busy, waiting;
    double cur_chunk;
} cdir;

typedef struct circ {
    int32_t a, b, state, inflight;
    mt_time_ps last_used;
    cdir d[2];
} circ;

typedef struct endpoint {
    int32_t *circ;
    int32_t nports;
    double buf_free;
    int32_t *wait; /* FIFO of circuit*2+dir waiting for buffer space here */
    int32_t whead, wlen;
    int64_t wcap;
} endpoint;

struct mt_photonic {
    mt_photonic_params p;
    int32_t nep;                   /* endpoints */
    mt_time_ps setup_ps, latency_ps;
    double circ_bw;
    mt_sched sched;
    endpoint *ep;
    int32_t *ids;
    circ *c;
    int32_t nc;
    int64_t ccap;
    mt_u64map by_pair;
    msg *m;
    int32_t nm, mfree;
    int64_t mcap;
    int32_t *pending;
    int32_t npending;
    int64_t pcap;
    mt_netstats st;
    mt_photonic_counters ctr;
    char errmsg[MT_ERRMSG_MAX];
};

void mt_photonic_params_init(mt_photonic_params *p) {
    memset(p, 0, sizeof *p);
    p->ports = 8;
    p->total_bw_Bps = 484e9;
    p->setup_ns = 20e6;
    p->latency_ns = 100;
    p->buffer_bytes = 64.0 * 1048576;
}

static void oom(mt_photonic *ph, const char *what) {
    snprintf(ph->errmsg, sizeof ph->errmsg, "photonic model: out of memory %s", what);
    mt_sched_fail(ph->sched, MT_ENOMEM, ph->errmsg);
}

static mt_time_ps ps_of(double ns) { return (mt_time_ps)(ns * 1000 + 0.5); }

mt_status mt_photonic_new(const mt_photonic_params *p, mt_sched sched, mt_photonic **out,
                          mt_error *err) {
    *out = NULL;
    int32_t nep = p->endpoints ? p->endpoints : MT_PHOTONIC_ENDPOINTS;
    double total = p->port_bw_Bps > 0 ? p->port_bw_Bps * p->ports : p->total_bw_Bps;
    if (nep < 1 || nep > MT_GPUS_MAX || p->ports < 1 || p->ports > 4096 || !(total > 0) || !(total <= 1e18) ||
        !(p->setup_ns >= 0 && p->setup_ns <= 1e15) || !(p->latency_ns >= 0 && p->latency_ns <= 1e15) ||
        !(p->buffer_bytes > 0))
        return mt_fail(err, MT_EINVAL, "photonic model: need endpoints >= 1, ports >= 1, bandwidth "
                       "> 0, buffer > 0 and times of 0 to 1e6 s");
    mt_photonic *ph = calloc(1, sizeof *ph);
    if (!ph) return mt_fail(err, MT_ENOMEM, "photonic model: out of memory");
    ph->p = *p;
    ph->p.endpoints = ph->nep = nep;
    ph->p.total_bw_Bps = total;
    ph->setup_ps = ps_of(p->setup_ns);
    ph->latency_ps = ps_of(p->latency_ns);
    ph->circ_bw = total / p->ports;
    ph->sched = sched;
    ph->mfree = -1;
    mt_u64map_init(&ph->by_pair);
    ph->ep = calloc((size_t)nep, sizeof *ph->ep);
    ph->ids = malloc((size_t)nep * sizeof *ph->ids);
    if (!ph->ep || !ph->ids) {
        mt_photonic_free(ph);
        return mt_fail(err, MT_ENOMEM, "photonic model: out of memory");
    }
    for (int32_t i = 0; i < nep; i++) {
        ph->ids[i] = i;
        ph->ep[i].buf_free = p->buffer_bytes;
        ph->ep[i].circ = malloc((size_t)p->ports * sizeof(int32_t));
        if (!ph->ep[i].circ) {
            mt_photonic_free(ph);
            return mt_fail(err, MT_ENOMEM, "photonic model: out of memory");
        }
    }
    *out = ph;
    return MT_OK;
}

void mt_photonic_free(mt_photonic *ph) {
    if (!ph) return;
    for (int32_t i = 0; ph->ep && i < ph->nep; i++) {
        free(ph->ep[i].circ);
        free(ph->ep[i].wait);
    }
    free(ph->ep);
    free(ph->ids);
    free(ph->c);
    free(ph->m);
    free(ph->pending);
    mt_u64map_destroy(&ph->by_pair);
    free(ph);
}

void mt_photonic_counters_get(const mt_photonic *ph, mt_photonic_counters *out) { *out = ph->ctr; }

static int64_t pair_key(const mt_photonic *ph, int32_t a, int32_t b) {
    return (int64_t)(a < b ? a : b) * ph->nep + (a < b ? b : a);
}

int mt_photonic_has_circuit(const mt_photonic *ph, int32_t a, int32_t b) {
    int64_t id;
    return mt_u64map_get(&ph->by_pair, (uint64_t)pair_key(ph, a, b), &id) && ph->c[id].state == C_UP;
}

static int idle(const circ *c) {
    return c->state == C_UP && c->inflight == 0 && c->d[0].head < 0 && c->d[1].head < 0 &&
           !c->d[0].busy && !c->d[1].busy;
}

/* LRU idle circuit at endpoint e, or -1. O(P). */
static int32_t lru_idle(const mt_photonic *ph, int32_t e) {
    const endpoint *E = &ph->ep[e];
    int32_t best = -1;
    for (int32_t i = 0; i < E->nports; i++) {
        const circ *c = &ph->c[E->circ[i]];
        if (idle(c) && (best < 0 || c->last_used < ph->c[best].last_used)) best = E->circ[i];
    }
    return best;
}

static void drop_port(endpoint *E, int32_t cid) {
    for (int32_t i = 0; i < E->nports; i++)
        if (E->circ[i] == cid) {
            E->circ[i] = E->circ[--E->nports];
            return;
        }
}

static void teardown(mt_photonic *ph, int32_t cid) {
    circ *c = &ph->c[cid];
    drop_port(&ph->ep[c->a], cid);
    drop_port(&ph->ep[c->b], cid);
    c->state = C_DOWN;
    ph->ctr.teardowns++;
}

static void on_setup(void *ctx, uint64_t arg);

/* Takes ports at both ends (evicting LRU idle circuits) and starts setup; 0 if it must wait. */
static int try_acquire(mt_photonic *ph, int32_t cid) {
    int32_t a = ph->c[cid].a, b = ph->c[cid].b;
    if ((ph->ep[a].nports >= ph->p.ports && lru_idle(ph, a) < 0) ||
        (ph->ep[b].nports >= ph->p.ports && lru_idle(ph, b) < 0))
        return 0;
    if (ph->ep[a].nports >= ph->p.ports) teardown(ph, lru_idle(ph, a));
    if (ph->ep[b].nports >= ph->p.ports) teardown(ph, lru_idle(ph, b));
    circ *c = &ph->c[cid];
    ph->ep[a].circ[ph->ep[a].nports++] = cid;
    ph->ep[b].circ[ph->ep[b].nports++] = cid;
    c->state = C_SETUP;
    ph->ctr.setups++;
    ph->st.flow_events++;
    if (!mt_sched_at(ph->sched, mt_sched_now(ph->sched) + ph->setup_ps, on_setup, ph, (uint64_t)cid))
        oom(ph, "scheduling a circuit setup");
    return 1;
}

static void retry_pending(mt_photonic *ph) {
    int32_t k = 0;
    for (int32_t i = 0; i < ph->npending; i++)
        if (!try_acquire(ph, ph->pending[i])) ph->pending[k++] = ph->pending[i];
    ph->npending = k;
}

static void release_msg(mt_photonic *ph, int32_t mid);
static void on_tx_end(void *ctx, uint64_t arg);
static void on_arrive(void *ctx, uint64_t arg);

/* The head message's next chunk on a circuit direction. */
static double next_chunk(const mt_photonic *ph, const cdir *D) {
    const msg *m = &ph->m[D->head];
    return fmin(m->chunk, m->bytes - m->sent);
}

/* Appends circuit direction w to receiver R's buffer-wait FIFO. The live entries are
 * wait[whead .. whead + wlen); the dead prefix is dropped once it is at least as long as the
 * live part, so storage stays within twice the longest queue (amortised O(1) per entry). */
static int wait_push(endpoint *R, int32_t w) {
    if (R->whead > 0 && R->whead >= R->wlen) {
        memmove(R->wait, R->wait + R->whead, (size_t)R->wlen * sizeof *R->wait);
        R->whead = 0;
    }
    if (mt_vec_reserve(&R->wait, &R->wcap, (int64_t)R->whead + R->wlen + 1)) return -1;
    R->wait[R->whead + R->wlen++] = w;
    return 0;
}

/* Reserves `chunk` bytes of the receiver's buffer and puts the chunk on the wire. */
static void start_chunk(mt_photonic *ph, int32_t cid, int d, double chunk) {
    circ *c = &ph->c[cid];
    cdir *D = &c->d[d];
    ph->ep[ph->m[D->head].dst].buf_free -= chunk;
    D->busy = 1;
    D->cur_chunk = chunk;
    c->inflight++;
    ph->st.flow_events++;
    mt_time_ps t = mt_sched_now(ph->sched) + mt_ps_ceil(chunk / ph->circ_bw);
    if (!mt_sched_at(ph->sched, t, on_tx_end, ph, (uint64_t)(cid * 2 + d))) oom(ph, "scheduling a chunk");
}

/* Starts the next chunk on circuit direction (cid, d) if possible. It queues at the receiver
 * when the buffer is short OR others already wait there: first come, first served, so a small
 * chunk never overtakes a large one and nobody starves. */
static void try_tx(mt_photonic *ph, int32_t cid, int d) {
    circ *c = &ph->c[cid];
    cdir *D = &c->d[d];
    if (c->state != C_UP || D->busy || D->waiting || D->head < 0) return;
    endpoint *R = &ph->ep[ph->m[D->head].dst];
    double chunk = next_chunk(ph, D);
    if (R->wlen > 0 || R->buf_free < chunk) {
        if (wait_push(R, cid * 2 + d)) {
            oom(ph, "queueing for a buffer");
            return;
        }
        D->waiting = 1;
        ph->ctr.buffer_waits++;
        return;
    }
    start_chunk(ph, cid, d, chunk);
}

/* Space was freed at receiver R: starts the waiters at the head of its FIFO for as long as the
 * head's chunk fits. A woken waiter starts at once (it was first in line; going through try_tx
 * again would queue it behind the others, forever). A waiting direction keeps its message at
 * the head and its circuit up (it is not idle), so what it waits to send has not changed. */
static void wake_waiters(mt_photonic *ph, endpoint *R) {
    while (R->wlen > 0) {
        int32_t w = R->wait[R->whead];
        cdir *D = &ph->c[w / 2].d[w % 2];
        double chunk = next_chunk(ph, D);
        if (R->buf_free < chunk) break;
        R->whead++;
        R->wlen--;
        if (R->wlen == 0) R->whead = 0;
        D->waiting = 0;
        start_chunk(ph, w / 2, w % 2, chunk);
    }
}

static void on_setup(void *ctx, uint64_t arg) {
    mt_photonic *ph = ctx;
    int32_t cid = (int32_t)arg;
    ph->c[cid].state = C_UP;
    ph->c[cid].last_used = mt_sched_now(ph->sched);
    try_tx(ph, cid, 0);
    try_tx(ph, cid, 1);
}

static void on_tx_end(void *ctx, uint64_t arg) {
    mt_photonic *ph = ctx;
    int32_t cid = (int32_t)(arg / 2);
    int d = (int)(arg % 2);
    cdir *D = &ph->c[cid].d[d];
    int32_t mid = D->head;
    msg *m = &ph->m[mid];
    D->busy = 0;
    m->sent += D->cur_chunk;
    int left = m->sent >= m->bytes;
    mt_sent_fn sent = left ? m->sent_fn : NULL;
    void *sctx = m->ctx;
    uint64_t stag = m->tag;
    if (left) { /* last chunk left: next message may start */
        D->head = m->next;
        if (D->head < 0) D->tail = -1;
    }
    if (!mt_sched_at(ph->sched, mt_sched_now(ph->sched) + ph->latency_ps, on_arrive, ph,
                     (uint64_t)mid))
        oom(ph, "scheduling an arrival");
    try_tx(ph, cid, d);
    if (sent) sent(sctx, stag); /* may send and move ph->m, ph->c: last */
}

static void on_arrive(void *ctx, uint64_t arg) {
    mt_photonic *ph = ctx;
    int32_t mid = (int32_t)arg;
    msg *m = &ph->m[mid];
    double chunk = fmin(m->chunk, m->bytes - m->arrived);
    m->arrived += chunk;
    endpoint *R = &ph->ep[m->dst];
    R->buf_free += chunk;
    int64_t v = 0;
    mt_u64map_get(&ph->by_pair, (uint64_t)pair_key(ph, m->src, m->dst), &v);
    int32_t cid = (int32_t)v;
    circ *c = &ph->c[cid];
    c->inflight--;
    c->last_used = mt_sched_now(ph->sched);
    wake_waiters(ph, R);
    int done = m->arrived >= m->bytes;
    mt_delivered_fn fn = m->fn;
    void *fctx = m->ctx;
    uint64_t tag = m->tag;
    if (done) {
        ph->st.delivered++;
        ph->st.bytes += m->bytes;
        release_msg(ph, mid);
    }
    if (idle(&ph->c[cid]) && ph->npending > 0) retry_pending(ph);
    if (done && fn) fn(fctx, tag);
}

static void release_msg(mt_photonic *ph, int32_t mid) {
    ph->m[mid].next = ph->mfree;
    ph->mfree = mid;
}

static void on_local(void *ctx, uint64_t arg) {
    mt_photonic *ph = ctx;
    msg m = ph->m[arg];
    release_msg(ph, (int32_t)arg);
    ph->st.delivered++;
    if (m.fn) m.fn(m.ctx, m.tag);
}

/* A message with nothing to send has left at once (an event now, ahead of its delivery). */
static void on_left(void *ctx, uint64_t arg) {
    const msg *m = &((mt_photonic *)ctx)->m[arg];
    m->sent_fn(m->ctx, m->tag);
}

/* Nothing crosses the fabric (src == dst: at once; 0 bytes: one latency). */
static mt_status send_local(mt_photonic *ph, int32_t mid, mt_error *err) {
    const msg *m = &ph->m[mid];
    mt_time_ps now = mt_sched_now(ph->sched);
    mt_time_ps t = now + (m->src == m->dst ? 0 : ph->latency_ps);
    if ((m->sent_fn && !mt_sched_at(ph->sched, now, on_left, ph, (uint64_t)mid)) ||
        !mt_sched_at(ph->sched, t, on_local, ph, (uint64_t)mid)) {
        release_msg(ph, mid);
        return mt_fail(err, MT_ENOMEM, "photonic model: out of memory");
    }
    return MT_OK;
}

/* The circuit between src and dst (created DOWN on first use). */
static mt_status circuit_of(mt_photonic *ph, int32_t src, int32_t dst, int32_t *cid, mt_error *err) {
    int64_t key = pair_key(ph, src, dst), v;
    if (mt_u64map_get(&ph->by_pair, (uint64_t)key, &v)) {
        *cid = (int32_t)v;
        return MT_OK;
    }
    if (mt_vec_reserve(&ph->c, &ph->ccap, ph->nc + 1) ||
        mt_u64map_put(&ph->by_pair, (uint64_t)key, ph->nc, err) != MT_OK)
        return mt_fail(err, MT_ENOMEM, "photonic model: out of memory");
    *cid = ph->nc++;
    circ *c = &ph->c[*cid];
    memset(c, 0, sizeof *c);
    c->a = src < dst ? src : dst;
    c->b = src < dst ? dst : src;
    c->state = C_DOWN;
    c->d[0].head = c->d[0].tail = c->d[1].head = c->d[1].tail = -1;
    return MT_OK;
}

/* Queues message mid on its circuit direction; asks for the circuit when it is down. */
static mt_status enqueue(mt_photonic *ph, int32_t cid, int32_t mid, mt_error *err) {
    circ *c = &ph->c[cid];
    int d = ph->m[mid].src < ph->m[mid].dst ? 0 : 1;
    if (c->d[d].tail >= 0)
        ph->m[c->d[d].tail].next = mid;
    else
        c->d[d].head = mid;
    c->d[d].tail = mid;
    if (c->state != C_DOWN) {
        try_tx(ph, cid, d);
        return MT_OK;
    }
    c->state = C_PENDING;
    if (try_acquire(ph, cid)) return MT_OK;
    if (mt_vec_reserve(&ph->pending, &ph->pcap, ph->npending + 1))
        return mt_fail(err, MT_ENOMEM, "photonic model: out of memory");
    ph->pending[ph->npending++] = cid;
    ph->ctr.port_waits++;
    return MT_OK;
}

static mt_status ph_send_sent(void *self, int32_t src, int32_t dst, double bytes, mt_sent_fn on_sent,
                              mt_delivered_fn fn, void *ctx, uint64_t tag, mt_error *err) {
    mt_photonic *ph = self;
    if (src < 0 || src >= ph->nep || dst < 0 || dst >= ph->nep)
        return mt_fail(err, MT_EINVAL, "photonic model: endpoint %d or %d outside 0..%d", (int)src,
                       (int)dst, (int)ph->nep - 1);
    if (!(bytes >= 0) || !isfinite(bytes))
        return mt_fail(err, MT_EINVAL, "photonic model: a send needs bytes >= 0 (got %g)", bytes);
    int32_t cid = -1;
    if (src != dst && bytes > 0) MT_CHECK(circuit_of(ph, src, dst, &cid, err));
    int32_t mid = ph->mfree;
    if (mid >= 0) {
        ph->mfree = ph->m[mid].next;
    } else {
        if (mt_vec_reserve(&ph->m, &ph->mcap, ph->nm + 1))
            return mt_fail(err, MT_ENOMEM, "photonic model: out of memory");
        mid = ph->nm++;
    }
    double chunk = bytes < ph->p.buffer_bytes ? bytes : ph->p.buffer_bytes;
    ph->m[mid] = (msg){src, dst, -1, bytes, 0, 0, chunk > 0 ? chunk : 1, on_sent, fn, ctx, tag};
    ph->st.sends++;
    return cid < 0 ? send_local(ph, mid, err) : enqueue(ph, cid, mid, err);
}

static mt_status ph_send(void *self, int32_t src, int32_t dst, double bytes, mt_delivered_fn fn,
                         void *ctx, uint64_t tag, mt_error *err) {
    return ph_send_sent(self, src, dst, bytes, NULL, fn, ctx, tag, err);
}

static int32_t ph_endpoints(void *self, const int32_t **ids) {
    mt_photonic *ph = self;
    *ids = ph->ids;
    return ph->nep;
}
static void ph_stats(void *self, mt_netstats *out) { *out = ((mt_photonic *)self)->st; }
static void ph_destroy(void *self) { mt_photonic_free(self); }

static const mt_netmodel_ops photonic_ops = {
    .name = "photonic",
    .lacks_hint = "it has no links; use --network flow",
    .send = ph_send,
    .endpoints = ph_endpoints,
    .stats = ph_stats,
    .destroy = ph_destroy,
    .send_sent = ph_send_sent,
};

mt_netmodel mt_photonic_netmodel(mt_photonic *ph) { return (mt_netmodel){&photonic_ops, ph}; }

/* ---- the model kind (netmodels/registry.h): its flags, check and factory ---- */

static const mt_flag FLAGS[] = {
    {"--ports", MT_FLAG_INT, offsetof(mt_photonic_params, ports), "N", "optical ports per endpoint (default 8)",
     .lo = 1, .hi = 4096},
    {"--port-bw", MT_FLAG_BANDWIDTH, offsetof(mt_photonic_params, port_bw_Bps), "BW",
     "bandwidth per port (default 60.5GB/s = 484GB/s / 8; without it the 484 GB/s are shared by --ports)",
     .lo = 0, .lo_open = 1, .hi = 1e18},
    {"--setup-lat", MT_FLAG_TIME, offsetof(mt_photonic_params, setup_ns), "T", "circuit set-up time (default 20ms)"},
    {"--buffer", MT_FLAG_BYTES, offsetof(mt_photonic_params, buffer_bytes), "BYTES",
     "receiver buffer per endpoint (default 64MiB)", .lo = 0, .lo_open = 1},
    {"--endpoints", MT_FLAG_INT, offsetof(mt_photonic_params, endpoints), "N",
     "endpoints without --topology (default 84 = a 12 x 7 wafer); with --topology, one per GPU", .lo = 1,
     .hi = MT_GPUS_MAX},
};
static const mt_flag_table FLAG_TABLE = MT_FLAG_TABLE("Photonic model (--network photonic)", FLAGS);

_Static_assert(sizeof(mt_photonic_params) <= MT_NETMODEL_PARAMS_MAX, "photonic params too large");

static void params_init(void *params) { mt_photonic_params_init(params); }

static mt_status check(const void *params, int with_topology, mt_error *err) {
    const mt_photonic_params *p = params;
    if (with_topology && p->endpoints)
        return mt_fail(err, MT_EINVAL, "--endpoints applies without --topology (with one, the photonic model has "
                                       "one endpoint per GPU: drop --endpoints or --topology)");
    return MT_OK;
}

static mt_status create(const void *params, mt_topo *topo, mt_sched sched, mt_netmodel *out, mt_error *err) {
    mt_photonic_params p;
    if (params) p = *(const mt_photonic_params *)params;
    else mt_photonic_params_init(&p);
    if (topo) mt_topo_gpus(topo, &p.endpoints);
    if (topo && p.endpoints == 0)
        return mt_fail(err, MT_EINVAL, "%s has no GPUs to be the photonic model's endpoints", mt_topo_label(topo));
    mt_photonic *m;
    MT_CHECK(mt_photonic_new(&p, sched, &m, err));
    *out = mt_photonic_netmodel(m);
    return MT_OK;
}

const mt_netmodel_kind mt_netmodel_kind_photonic = {
    .name = "photonic",
    .help = "circuit-switched optical ports, one endpoint per GPU (the topology's links are not used)",
    .uses_links = 0,
    .params_size = sizeof(mt_photonic_params),
    .params_init = params_init,
    .flags = &FLAG_TABLE,
    .check = check,
    .create = create,
};

/* network/nettap.c — see nettap.h. */
#include "network/nettap.h"

#include <stdlib.h>

#include "util/u64map.h"

typedef struct tap {
    mt_netmodel *inner;
    mt_u64map index;        /* (src << 32 | dst) -> index in pairs */
    mt_nettap_pair *pairs;
    int32_t n, cap;
    int oom;
} tap;

static mt_status count(tap *t, int32_t src, int32_t dst, double bytes, mt_error *err) {
    uint64_t key = (uint64_t)(uint32_t)src << 32 | (uint32_t)dst;
    int64_t at;
    if (!mt_u64map_get(&t->index, key, &at)) {
        if (t->n == t->cap) {
            int32_t cap = t->cap ? 2 * t->cap : 64;
            mt_nettap_pair *p = realloc(t->pairs, (size_t)cap * sizeof *p);
            if (!p) return mt_fail(err, MT_ENOMEM, "out of memory counting a job's traffic");
            t->pairs = p;
            t->cap = cap;
        }
        at = t->n++;
        t->pairs[at] = (mt_nettap_pair){src, dst, 0, 0};
        MT_CHECK(mt_u64map_put(&t->index, key, at, err));
    }
    t->pairs[at].bytes += bytes;
    t->pairs[at].sends++;
    return MT_OK;
}

static mt_status tap_send(void *self, int32_t src, int32_t dst, double bytes, mt_delivered_fn on_delivered, void *ctx,
                          uint64_t tag, mt_error *err) {
    tap *t = self;
    MT_CHECK(count(t, src, dst, bytes, err));
    return mt_net_send(t->inner, src, dst, bytes, on_delivered, ctx, tag, err);
}

static mt_status tap_send_sent(void *self, int32_t src, int32_t dst, double bytes, mt_sent_fn on_sent,
                               mt_delivered_fn on_delivered, void *ctx, uint64_t tag, mt_error *err) {
    tap *t = self;
    MT_CHECK(count(t, src, dst, bytes, err));
    return mt_net_send_sent(t->inner, src, dst, bytes, on_sent, on_delivered, ctx, tag, err);
}

static int32_t tap_endpoints(void *self, const int32_t **ids) { return mt_net_endpoints(((tap *)self)->inner, ids); }
static void tap_stats(void *self, mt_netstats *out) { mt_net_stats(((tap *)self)->inner, out); }
static int tap_fixed(void *self, int32_t src, int32_t dst, mt_time_ps *out_ps) {
    return mt_net_fixed_latency(((tap *)self)->inner, src, dst, out_ps);
}
static void tap_destroy(void *self) {
    tap *t = self;
    mt_u64map_destroy(&t->index);
    free(t->pairs);
    free(t);
}

static const mt_netmodel_ops TAP = {"tap", NULL, tap_send, tap_endpoints, tap_stats, tap_destroy,
                                    .fixed_latency = tap_fixed};
static const mt_netmodel_ops TAP_SENT = {"tap", NULL, tap_send, tap_endpoints, tap_stats, tap_destroy,
                                         .send_sent = tap_send_sent, .fixed_latency = tap_fixed};

mt_status mt_nettap_new(mt_netmodel *inner, mt_netmodel *out, mt_error *err) {
    tap *t = calloc(1, sizeof *t);
    if (!t) return mt_fail(err, MT_ENOMEM, "out of memory creating a network tap");
    t->inner = inner;
    mt_u64map_init(&t->index);
    out->ops = mt_net_can(inner, MT_NETOP_SEND_SENT) ? &TAP_SENT : &TAP;
    out->self = t;
    return MT_OK;
}

const mt_nettap_pair *mt_nettap_pairs(const mt_netmodel *net, int32_t *n) {
    const tap *t = net->self;
    *n = t->n;
    return t->pairs;
}

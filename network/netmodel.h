/* network/netmodel.h — the interface every interconnect model implements.
 *
 * A model moves `bytes` from endpoint `src` to endpoint `dst` and, when the last byte has
 * arrived, calls on_delivered(ctx, tag) from inside an event handler. Endpoint ids are the
 * model's: topology node ids for the flow model, 0..E-1 for the photonic model;
 * `endpoints` lists them in rank order (rank r talks through endpoints[r]).
 * Models are const tables of static handlers (CODES' model-net style); adding one touches
 * one folder (netmodels/) plus its line in netmodels/registry.c.
 */
#ifndef MT_NETWORK_NETMODEL_H
#define MT_NETWORK_NETMODEL_H

#include <stdint.h>

#include "util/err.h"

typedef void (*mt_delivered_fn)(void *ctx, uint64_t tag);

typedef struct mt_netstats {
    uint64_t sends;     /* send calls accepted */
    uint64_t delivered; /* on_delivered calls made */
    uint64_t flow_events; /* model-internal events: flow starts, drains, circuit setups, ... */
    double bytes;       /* bytes delivered */
} mt_netstats;

typedef struct mt_netmodel_ops {
    const char *name;
    /* Starts a transfer. Errors (bad endpoint, no route, out of memory) are returned at once;
     * nothing is delivered then. bytes >= 0; 0 bytes cost only latency. */
    mt_status (*send)(void *self, int32_t src, int32_t dst, double bytes,
                      mt_delivered_fn on_delivered, void *ctx, uint64_t tag, mt_error *err);
    /* Endpoint ids in rank order; returns their count. */
    int32_t (*endpoints)(void *self, const int32_t **ids);
    void (*stats)(void *self, mt_netstats *out);
    void (*destroy)(void *self);
} mt_netmodel_ops;

typedef struct mt_netmodel {
    const mt_netmodel_ops *ops;
    void *self;
} mt_netmodel;

static inline mt_status mt_net_send(mt_netmodel *net, int32_t src, int32_t dst, double bytes,
                                    mt_delivered_fn on_delivered, void *ctx, uint64_t tag,
                                    mt_error *err) {
    return net->ops->send(net->self, src, dst, bytes, on_delivered, ctx, tag, err);
}
static inline int32_t mt_net_endpoints(mt_netmodel *net, const int32_t **ids) {
    return net->ops->endpoints(net->self, ids);
}
static inline void mt_net_stats(mt_netmodel *net, mt_netstats *out) {
    net->ops->stats(net->self, out);
}
/* Frees the model (not its topology or scheduler); safe on a zeroed struct. */
static inline void mt_net_free(mt_netmodel *net) {
    if (net && net->ops) net->ops->destroy(net->self);
    if (net) net->ops = 0, net->self = 0;
}

#endif

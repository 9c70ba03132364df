/* network/netmodel.h — the interface every interconnect model implements, and what a model
 * kind declares about itself (its parameters and flags).
 *
 * A model moves `bytes` from endpoint `src` to endpoint `dst` and, when the last byte has
 * arrived, calls on_delivered(ctx, tag) from inside an event handler. Endpoint ids are the
 * model's: topology node ids for the flow model, 0..E-1 for the photonic model;
 * `endpoints` lists them in rank order (rank r talks through endpoints[r]).
 *
 * A model that can also tell when a send has LEFT its source (its last byte drained onto the
 * path, the sender free for its next send on that connection; a path latency before delivery)
 * implements send_sent: the same send, plus on_sent(ctx, tag) at that moment, from inside an
 * event handler, never after on_delivered. Callers that keep a connection's sends in FIFO order
 * (sim/collexec: the next ring step on r -> r+1 starts when the previous one has left) use
 * mt_net_send_sent; a model without send_sent only tells delivery (mt_net_can(net,
 * MT_NETOP_SEND_SENT) says which), and such callers take delivery as the moment it left.
 *
 * Besides send / endpoints / stats / destroy (every model has them), a model MAY implement the
 * link operations that what-if scenarios, reports and `mitosis hop` use: a bandwidth factor, an
 * extra latency, a failure, a periodic degradation, one of these at a later time, per-link
 * statistics and an observer of link load. Links are the model's topology's link ids
 * (mt_topo). An operation a model lacks is a NULL entry; calling it through the mt_net_*
 * wrappers returns one MT_EINVAL line naming the model and what it cannot do, followed by the
 * model's hint ("the photonic model cannot change a link's bandwidth (it has no links; use
 * --network flow)"). Nobody needs to know which model is behind an mt_netmodel: ask mt_net_can.
 *
 * NETWORK FOLDING (optional, set_fold): in a run whose D data-parallel replicas are alike
 * (sim/simulate.c folds their programs), a send inside replica 0 marked folded (send_folded)
 * stands for D copies, one per replica between the matching endpoints (mt_netfold.ep). The model
 * carries replica 0's copy only, keeps every link's statistics as if all D were there, and
 * promises the result of the unfolded network exactly as long as no copy ever shares a link with
 * a send that is not folded or with another replica's copy, and the copies' routes are replica
 * 0's shifted by one link-id offset per replica (so a solve orders their links alike); the
 * moment that would not hold (or a link is perturbed) it calls fold.broken and the caller runs
 * again unfolded.
 *
 * Models are const tables of static handlers (CODES' model-net style). A model KIND
 * (mt_netmodel_kind) adds what is needed to create one from the command line: its parameter
 * struct (init, check), its own flags (util/flags.h, writing into that struct) and a factory.
 * Adding a model is one file in netmodels/ defining `mt_netmodel_kind_NAME` plus its line in
 * netmodels/registry.h.
 * Costs: one indirect call per operation.
 */
#ifndef MT_NETWORK_NETMODEL_H
#define MT_NETWORK_NETMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "network/sched.h"
#include "network/topology.h"
#include "util/err.h"
#include "util/flags.h"

typedef void (*mt_delivered_fn)(void *ctx, uint64_t tag);
/* The send's last byte has left its source (see above). */
typedef void (*mt_sent_fn)(void *ctx, uint64_t tag);

typedef struct mt_netstats {
    uint64_t sends;     /* send calls accepted */
    uint64_t delivered; /* on_delivered calls made */
    uint64_t flow_events; /* model-internal events: flow starts, drains, circuit setups, ... */
    double bytes;       /* bytes delivered */
    uint64_t copies;    /* network folding: other replicas' copies that had to run as flows */
} mt_netstats;

typedef struct mt_link_stats {
    double bytes;       /* bytes of drained flows that crossed the link */
    mt_time_ps busy_ps; /* time with at least one flow (up to now) */
    int32_t peak_flows; /* most flows at once */
    int32_t flows_now;
} mt_link_stats;

/* Observer of link load (timelines, utilisation counters): called with the total rate
 * allocated on a link (bytes/s, 0 when its last flow leaves) whenever it changes, in event
 * order. */
typedef void (*mt_link_rate_fn)(void *ctx, int32_t link, mt_time_ps t, double used_Bps);

/* A bandwidth factor is in (0, MT_LINK_FACTOR_MAX]; an extra latency in 0..MT_LINK_LAT_MAX_PS. */
#define MT_LINK_FACTOR_MAX 1e6

/* Periodic degradation: bandwidth x factor during [start + k period, start + k period +
 * duration) for every k >= 0, on top of the link factor. */
typedef struct mt_link_periodic {
    mt_time_ps start_ps, period_ps, duration_ps;
    double factor;
} mt_link_periodic;

typedef enum { MT_LINK_FACTOR = 0, MT_LINK_LATENCY, MT_LINK_FAIL } mt_link_change_kind;

/* The optional operations (mt_net_can): the link operations, then send_sent. */
typedef enum {
    MT_NETOP_LINK_FACTOR = 0,
    MT_NETOP_LINK_LATENCY,
    MT_NETOP_LINK_FAIL,
    MT_NETOP_LINK_PERIODIC,
    MT_NETOP_LINK_CHANGE_AT,
    MT_NETOP_LINK_STATS,
    MT_NETOP_LINK_OBSERVER,
    MT_NETOP_SEND_SENT,
    MT_NETOP_FOLD,
    MT_NETOP_COUNT
} mt_netop;

/* Network folding (above): D replicas of E endpoints each; ep[d * E + e] is replica d's copy of
 * endpoint ep[e] (row 0: replica 0's own). broken(ctx, why) stops nothing by itself: the caller
 * stops its run (from inside an event handler). */
typedef struct mt_netfold {
    int32_t D, E;
    const int32_t *ep;
    void (*broken)(void *ctx, const char *why);
    void *ctx;
} mt_netfold;

typedef struct mt_netmodel_ops {
    const char *name;
    /* Said after an operation it lacks: what to do instead ("it has no links; use --network
     * flow"). */
    const char *lacks_hint;
    /* Starts a transfer. Errors (bad endpoint, no route, out of memory) are returned at once;
     * nothing is delivered then. bytes >= 0; 0 bytes cost only latency. */
    mt_status (*send)(void *self, int32_t src, int32_t dst, double bytes,
                      mt_delivered_fn on_delivered, void *ctx, uint64_t tag, mt_error *err);
    /* Endpoint ids in rank order; returns their count. */
    int32_t (*endpoints)(void *self, const int32_t **ids);
    void (*stats)(void *self, mt_netstats *out);
    void (*destroy)(void *self);

    /* ---- optional: NULL when the model lacks it. All take effect at the scheduler's current
     * time (change_at: at time t >= now, through an event; an error then stops the run). A
     * bandwidth change re-rates the flows already under way; an extra latency applies to
     * transfers that start afterwards; a failure moves the transfers crossing the link to
     * another route (MT_ENOROUTE when none is left). ---- */
    mt_status (*set_link_factor)(void *self, int32_t link, double factor, mt_error *err);
    mt_status (*set_link_extra_latency)(void *self, int32_t link, mt_time_ps extra_ps, mt_error *err);
    mt_status (*fail_link)(void *self, int32_t link, mt_error *err);
    mt_status (*set_link_periodic)(void *self, int32_t link, const mt_link_periodic *p, mt_error *err);
    /* value: the factor, the extra latency in ps, or unused (fail). */
    mt_status (*change_link_at)(void *self, mt_time_ps t, mt_link_change_kind kind, int32_t link,
                                double value, mt_error *err);
    mt_status (*link_stats)(void *self, int32_t link, mt_link_stats *out, mt_error *err);
    /* NULL fn switches it off. */
    void (*set_link_observer)(void *self, mt_link_rate_fn fn, void *ctx);
    /* send, and on_sent(ctx, tag) when the last byte has left src (NULL on_sent: plain send).
     * 0 bytes or src == dst: it leaves at once (on_sent from an event at the current time). */
    mt_status (*send_sent)(void *self, int32_t src, int32_t dst, double bytes, mt_sent_fn on_sent,
                           mt_delivered_fn on_delivered, void *ctx, uint64_t tag, mt_error *err);
    /* 1 and *out_ps = how long a 0-byte send from src to dst started now takes, when that stays
     * so until the model is changed (no link change is scheduled; routes are fixed); 0 when it
     * cannot promise it (the caller sends). Lets a chain of 0-byte sends run as one timer. */
    int (*fixed_latency)(void *self, int32_t src, int32_t dst, mt_time_ps *out_ps);
    /* Network folding (above); NULL f switches it off. MT_EINVAL (one line: why) when this
     * network cannot fold now (a link already perturbed, a link observer); the caller then
     * runs unfolded. The mt_netfold must outlive the run. */
    mt_status (*set_fold)(void *self, const mt_netfold *f, mt_error *err);
    /* send_sent (on_sent may be NULL) of replica 0's copy of a folded send. */
    mt_status (*send_folded)(void *self, int32_t src, int32_t dst, double bytes, mt_sent_fn on_sent,
                             mt_delivered_fn on_delivered, void *ctx, uint64_t tag, mt_error *err);
    /* n plain sends of `bytes` each, src[k] -> dst[k], started now, delivered as tags tag0 + k
     * (k order at equal times): *taken = 1 when the model runs them together with the result of n
     * sends exactly (netmodels/flow.h: flow groups), 0 when the caller must send them one by one
     * (nothing was sent). */
    mt_status (*send_group)(void *self, int32_t n, const int32_t *src, const int32_t *dst, double bytes,
                            mt_delivered_fn on_delivered, void *ctx, uint64_t tag0, int *taken, mt_error *err);
    /* 0: send_group always declines (--no-fold, --no-net-fold: every send its own flow). */
    void (*set_grouping)(void *self, int on);
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
/* mt_net_send that also reports when the send has left its source, where the model can tell
 * (send_sent); otherwise a plain send and on_sent is never called: the caller counts delivery
 * as having left. */
static inline mt_status mt_net_send_sent(mt_netmodel *net, int32_t src, int32_t dst, double bytes,
                                         mt_sent_fn on_sent, mt_delivered_fn on_delivered, void *ctx,
                                         uint64_t tag, mt_error *err) {
    if (on_sent && net->ops->send_sent)
        return net->ops->send_sent(net->self, src, dst, bytes, on_sent, on_delivered, ctx, tag, err);
    return net->ops->send(net->self, src, dst, bytes, on_delivered, ctx, tag, err);
}
/* A folded send (set_fold); only called when the model can fold (mt_net_can MT_NETOP_FOLD). */
static inline mt_status mt_net_send_folded(mt_netmodel *net, int32_t src, int32_t dst, double bytes,
                                           mt_sent_fn on_sent, mt_delivered_fn on_delivered, void *ctx,
                                           uint64_t tag, mt_error *err) {
    return net->ops->send_folded(net->self, src, dst, bytes, on_sent, on_delivered, ctx, tag, err);
}
/* The model's send_group; *taken = 0 (send one by one) when it has none. */
static inline mt_status mt_net_send_group(mt_netmodel *net, int32_t n, const int32_t *src, const int32_t *dst,
                                          double bytes, mt_delivered_fn on_delivered, void *ctx, uint64_t tag0,
                                          int *taken, mt_error *err) {
    *taken = 0;
    if (!net->ops->send_group) return MT_OK;
    return net->ops->send_group(net->self, n, src, dst, bytes, on_delivered, ctx, tag0, taken, err);
}
static inline void mt_net_set_grouping(mt_netmodel *net, int on) {
    if (net->ops->set_grouping) net->ops->set_grouping(net->self, on);
}
/* The model's fixed_latency, or 0 when it has none. */
static inline int mt_net_fixed_latency(mt_netmodel *net, int32_t src, int32_t dst, mt_time_ps *out_ps) {
    return net->ops->fixed_latency ? net->ops->fixed_latency(net->self, src, dst, out_ps) : 0;
}
static inline int32_t mt_net_endpoints(mt_netmodel *net, const int32_t **ids) {
    return net->ops->endpoints(net->self, ids);
}
static inline void mt_net_stats(mt_netmodel *net, mt_netstats *out) {
    net->ops->stats(net->self, out);
}
static inline const char *mt_net_name(const mt_netmodel *net) { return net->ops->name; }
/* Frees the model (not its topology or scheduler); safe on a zeroed struct. */
static inline void mt_net_free(mt_netmodel *net) {
    if (net && net->ops) net->ops->destroy(net->self);
    if (net) net->ops = 0, net->self = 0;
}

/* 1 when the model implements op (net may be NULL or zeroed: 0). */
int mt_net_can(const mt_netmodel *net, mt_netop op);
/* MT_OK when it does, else the one-line MT_EINVAL described above. */
mt_status mt_net_require(const mt_netmodel *net, mt_netop op, mt_error *err);
/* 1 when the model has links (per-link statistics): the reports list them. */
static inline int mt_net_has_links(const mt_netmodel *net) { return mt_net_can(net, MT_NETOP_LINK_STATS); }

mt_status mt_net_set_link_factor(mt_netmodel *net, int32_t link, double factor, mt_error *err);
mt_status mt_net_set_link_extra_latency(mt_netmodel *net, int32_t link, mt_time_ps extra_ps, mt_error *err);
mt_status mt_net_fail_link(mt_netmodel *net, int32_t link, mt_error *err);
mt_status mt_net_set_link_periodic(mt_netmodel *net, int32_t link, const mt_link_periodic *p, mt_error *err);
mt_status mt_net_change_link_at(mt_netmodel *net, mt_time_ps t, mt_link_change_kind kind, int32_t link,
                                double value, mt_error *err);
mt_status mt_net_link_stats(const mt_netmodel *net, int32_t link, mt_link_stats *out, mt_error *err);
mt_status mt_net_set_link_observer(mt_netmodel *net, mt_link_rate_fn fn, void *ctx, mt_error *err);
mt_status mt_net_set_fold(mt_netmodel *net, const mt_netfold *f, mt_error *err);

/* ---- model kinds ----------------------------------------------------------------------------
 * What a model declares so that the command line can choose, configure and create it. Its
 * parameters live in a struct of at most MT_NETMODEL_PARAMS_MAX bytes (suitably aligned) that
 * params_init fills with the defaults and its flags write into. */
#define MT_NETMODEL_PARAMS_MAX 128

typedef struct mt_netmodel_kind {
    const char *name;           /* the --network value */
    const char *help;           /* one line for --help */
    /* 1: transfers follow the topology's links, so the link-tier flags (--link-bw, --routing,
     * ...) apply; 0: the topology only gives the number of endpoints (one per GPU). */
    int uses_links;
    /* 1: its models can fold the network by data-parallel replicas (set_fold; run/estimate.c
     * prices folded runs with it). */
    int folds;
    /* The fewest alike independent sends (a ringflow's or treeflow's bulk) its models run as one
     * group (send_group: one drain and one delivery event) while the network may fold; 0: every
     * send is its own flow (run/estimate.c counts events with it). */
    int32_t group_min;
    size_t params_size;         /* 0: no parameters */
    void (*params_init)(void *params);
    const mt_flag_table *flags; /* its own flags, writing into its params; NULL: none */
    /* Refuses parameters that do not fit (with_topology: --topology was given or defaulted);
     * NULL: nothing to check. One line naming the flag. */
    mt_status (*check)(const void *params, int with_topology, mt_error *err);
    /* Creates the model on topo (NULL when the model does not need one and none was given) with
     * params (NULL: the defaults). */
    mt_status (*create)(const void *params, mt_topo *topo, mt_sched sched, mt_netmodel *out, mt_error *err);
} mt_netmodel_kind;

#endif

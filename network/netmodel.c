/* network/netmodel.c — see netmodel.h: the optional operations and their one refusal. */
#include "network/netmodel.h"

/* What each optional operation does, for the refusal: "the photonic model cannot <what>". */
static const char *const op_what[MT_NETOP_COUNT] = {
    [MT_NETOP_LINK_FACTOR] = "change a link's bandwidth",
    [MT_NETOP_LINK_LATENCY] = "add latency to a link",
    [MT_NETOP_LINK_FAIL] = "fail a link",
    [MT_NETOP_LINK_PERIODIC] = "degrade a link periodically",
    [MT_NETOP_LINK_CHANGE_AT] = "change a link at a later time",
    [MT_NETOP_LINK_STATS] = "report per-link statistics",
    [MT_NETOP_LINK_OBSERVER] = "report link load over time",
    [MT_NETOP_SEND_SENT] = "tell when a send has left its source",
    [MT_NETOP_FOLD] = "fold its network by data-parallel replicas",
};

int mt_net_can(const mt_netmodel *net, mt_netop op) {
    if (!net || !net->ops) return 0;
    const mt_netmodel_ops *o = net->ops;
    switch (op) {
    case MT_NETOP_LINK_FACTOR: return o->set_link_factor != NULL;
    case MT_NETOP_LINK_LATENCY: return o->set_link_extra_latency != NULL;
    case MT_NETOP_LINK_FAIL: return o->fail_link != NULL;
    case MT_NETOP_LINK_PERIODIC: return o->set_link_periodic != NULL;
    case MT_NETOP_LINK_CHANGE_AT: return o->change_link_at != NULL;
    case MT_NETOP_LINK_STATS: return o->link_stats != NULL;
    case MT_NETOP_LINK_OBSERVER: return o->set_link_observer != NULL;
    case MT_NETOP_SEND_SENT: return o->send_sent != NULL;
    case MT_NETOP_FOLD: return o->set_fold != NULL && o->send_folded != NULL;
    default: return 0;
    }
}

mt_status mt_net_require(const mt_netmodel *net, mt_netop op, mt_error *err) {
    if (mt_net_can(net, op)) return MT_OK;
    if (!net || !net->ops) return mt_fail(err, MT_EINVAL, "no network model to %s", op_what[op]);
    const char *hint = net->ops->lacks_hint;
    return mt_fail(err, MT_EINVAL, "the %s model cannot %s%s%s%s", net->ops->name, op_what[op], hint ? " (" : "",
                   hint ? hint : "", hint ? ")" : "");
}

mt_status mt_net_set_link_factor(mt_netmodel *net, int32_t link, double factor, mt_error *err) {
    MT_CHECK(mt_net_require(net, MT_NETOP_LINK_FACTOR, err));
    return net->ops->set_link_factor(net->self, link, factor, err);
}

mt_status mt_net_set_link_extra_latency(mt_netmodel *net, int32_t link, mt_time_ps extra_ps, mt_error *err) {
    MT_CHECK(mt_net_require(net, MT_NETOP_LINK_LATENCY, err));
    return net->ops->set_link_extra_latency(net->self, link, extra_ps, err);
}

mt_status mt_net_fail_link(mt_netmodel *net, int32_t link, mt_error *err) {
    MT_CHECK(mt_net_require(net, MT_NETOP_LINK_FAIL, err));
    return net->ops->fail_link(net->self, link, err);
}

mt_status mt_net_set_link_periodic(mt_netmodel *net, int32_t link, const mt_link_periodic *p, mt_error *err) {
    MT_CHECK(mt_net_require(net, MT_NETOP_LINK_PERIODIC, err));
    return net->ops->set_link_periodic(net->self, link, p, err);
}

mt_status mt_net_change_link_at(mt_netmodel *net, mt_time_ps t, mt_link_change_kind kind, int32_t link,
                                double value, mt_error *err) {
    MT_CHECK(mt_net_require(net, MT_NETOP_LINK_CHANGE_AT, err));
    return net->ops->change_link_at(net->self, t, kind, link, value, err);
}

mt_status mt_net_link_stats(const mt_netmodel *net, int32_t link, mt_link_stats *out, mt_error *err) {
    MT_CHECK(mt_net_require(net, MT_NETOP_LINK_STATS, err));
    return net->ops->link_stats(net->self, link, out, err);
}

mt_status mt_net_set_link_observer(mt_netmodel *net, mt_link_rate_fn fn, void *ctx, mt_error *err) {
    MT_CHECK(mt_net_require(net, MT_NETOP_LINK_OBSERVER, err));
    net->ops->set_link_observer(net->self, fn, ctx);
    return MT_OK;
}

mt_status mt_net_set_fold(mt_netmodel *net, const mt_netfold *f, mt_error *err) {
    MT_CHECK(mt_net_require(net, MT_NETOP_FOLD, err));
    return net->ops->set_fold(net->self, f, err);
}

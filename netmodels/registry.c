/* netmodels/registry.c — see registry.h. Adding a model: one X line and one factory. */
#include "netmodels/registry.h"

#include <string.h>

#include "network/flow.h"

static mt_status make_flow(mt_topo *topo, const mt_photonic_params *ph, mt_sched sched,
                           mt_netmodel *out, mt_error *err) {
    (void)ph;
    if (!topo) return mt_fail(err, MT_EINVAL, "the flow model needs a topology (--topology)");
    mt_flownet *net;
    MT_CHECK(mt_flownet_new(topo, sched, &net, err));
    *out = mt_flownet_netmodel(net);
    return MT_OK;
}

static mt_status make_photonic(mt_topo *topo, const mt_photonic_params *ph, mt_sched sched,
                               mt_netmodel *out, mt_error *err) {
    mt_photonic_params p;
    if (ph)
        p = *ph;
    else
        mt_photonic_params_init(&p);
    if (topo) mt_topo_gpus(topo, &p.endpoints);
    mt_photonic *m;
    MT_CHECK(mt_photonic_new(&p, sched, &m, err));
    *out = mt_photonic_netmodel(m);
    return MT_OK;
}

#define MT_NETMODELS(X) X(flow, make_flow) X(photonic, make_photonic)

typedef mt_status (*factory)(mt_topo *, const mt_photonic_params *, mt_sched, mt_netmodel *,
                             mt_error *);
static const struct {
    const char *name;
    factory make;
} models[] = {
#define X(name, fn) {#name, fn},
    MT_NETMODELS(X)
#undef X
};

const char *mt_netmodel_names(void) { return "flow, photonic"; }

mt_status mt_netmodel_create(const char *kind, mt_topo *topo, const mt_photonic_params *ph,
                             mt_sched sched, mt_netmodel *out, mt_error *err) {
    out->ops = NULL;
    out->self = NULL;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (kind && !strcmp(kind, models[i].name)) return models[i].make(topo, ph, sched, out, err);
    return mt_fail(err, MT_EINVAL, "unknown network model '%s' (use %s)", kind ? kind : "",
                   mt_netmodel_names());
}

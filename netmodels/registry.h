/* netmodels/registry.h — the network models by name, from one X-macro list (CODES model-net
 * style). Each model is one file in netmodels/ defining a `const mt_netmodel_kind
 * mt_netmodel_kind_NAME` (network/netmodel.h: name, help, parameters, flags, factory); adding a
 * model is that file plus its X(NAME) line below. The first model is the default.
 *
 *   flow      packet-switched, max-min fair flows over the topology (netmodels/flow.h)
 *   photonic  circuit-switched optical ports (netmodels/photonic.h); one endpoint per GPU of
 *             the topology when one is given (its links are ignored), else its own endpoints
 * Costs: lookups O(models).
 */
#ifndef MT_NETMODELS_REGISTRY_H
#define MT_NETMODELS_REGISTRY_H

#include "network/netmodel.h"
#include "network/topology.h"

#define MT_NETMODELS(X) X(flow) X(photonic)

#define MT_NETMODEL_DECLARE_(name) extern const mt_netmodel_kind mt_netmodel_kind_##name;
MT_NETMODELS(MT_NETMODEL_DECLARE_)
#undef MT_NETMODEL_DECLARE_

#define MT_NETMODEL_ONE_(name) +1
enum { MT_NETMODEL_COUNT = 0 MT_NETMODELS(MT_NETMODEL_ONE_) };
#undef MT_NETMODEL_ONE_

/* "flow|photonic": the --network choices, in registry order (a CHOICE flag's index is the
 * model's index). A constant expression. */
#define MT_NETMODEL_CHOICE_(name) "|" #name
#define MT_NETMODEL_CHOICES (MT_NETMODELS(MT_NETMODEL_CHOICE_) + 1)

/* The i-th model (0 <= i < MT_NETMODEL_COUNT), or NULL. */
const mt_netmodel_kind *mt_netmodel_kind_at(int i);
/* Index of the model called name, or -1. */
int mt_netmodel_find(const char *name);

/* Creates model `name` on `topo` (NULL when the model needs none) and `sched` with params (the
 * model's parameter struct; NULL: its defaults); *out is freed with mt_net_free. MT_EINVAL
 * names the known models. */
mt_status mt_netmodel_create(const char *name, mt_topo *topo, const void *params, mt_sched sched,
                             mt_netmodel *out, mt_error *err);

#endif

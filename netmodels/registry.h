/* netmodels/registry.h — the network models by name, from one table (CODES model-net style).
 *
 *   flow      packet-switched, max-min fair flows over the topology (network/flow.h)
 *   photonic  circuit-switched optical ports (netmodels/photonic.h); one endpoint per GPU of
 *             the topology when one is given (its links are ignored), else params.endpoints
 */
#ifndef MT_NETMODELS_REGISTRY_H
#define MT_NETMODELS_REGISTRY_H

#include "netmodels/photonic.h"
#include "network/netmodel.h"
#include "network/topology.h"

/* Creates model `kind` on `topo` (may be NULL for photonic) and `sched`; *out is freed with
 * mt_net_free. `ph` may be NULL for photonic defaults. MT_EINVAL names the known models. */
mt_status mt_netmodel_create(const char *kind, mt_topo *topo, const mt_photonic_params *ph,
                             mt_sched sched, mt_netmodel *out, mt_error *err);
/* "flow, photonic" */
const char *mt_netmodel_names(void);

#endif

/* netmodels/netopts.h — the network configuration of a run (topology spec, tier parameters,
 * model and its parameters) and its flags: --topology, --link-bw, --link-lat, --nic-bw, --nic-lat,
 * --routing, --ecmp, --network, --ports, --port-bw, --setup-lat, --buffer, --endpoints (a flag
 * table, util/flags.h, writing into mt_netopts). Builds topology + model. */
#ifndef MT_NETMODELS_NETOPTS_H
#define MT_NETMODELS_NETOPTS_H

#include <stdio.h>

#include "netmodels/photonic.h"
#include "netmodels/topologies.h"
#include "network/netmodel.h"
#include "util/err.h"
#include "util/flags.h"

typedef struct mt_netopts {
    const char *topology; /* NULL: not given */
    const char *network;  /* "flow" (default) or "photonic" */
    mt_topo_params tp;
    mt_photonic_params ph;
    int photonic_total_set;
} mt_netopts;

void mt_netopts_init(mt_netopts *o);
/* The network flags, writing into an mt_netopts. */
extern const mt_flag_table MT_NETOPTS_FLAGS;
/* If argv[*i] is one of our flags, consumes it (and its value), advances *i and returns 1;
 * returns 0 when it is not ours, -1 (message in err) for a bad value or missing argument. */
int mt_netopts_take(mt_netopts *o, int argc, char **argv, int *i, mt_error *err);
/* Builds the topology (NULL for photonic without --topology). */
mt_status mt_netopts_topology(const mt_netopts *o, mt_topo **out, mt_error *err);
/* Creates the --network model on topo (may be NULL for photonic). */
mt_status mt_netopts_model(const mt_netopts *o, mt_topo *topo, mt_sched sched, mt_netmodel *out,
                           mt_error *err);
void mt_netopts_help(FILE *out);

#endif

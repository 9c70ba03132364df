/* cli/netopts.h — the network flags shared by `topo`, `collective` and (later) `simulate`:
 * --topology, --link-bw, --link-lat, --nic-bw, --nic-lat, --routing, --ecmp, --network,
 * --ports, --port-bw, --setup-lat, --buffer. Parses them and builds topology + model. */
#ifndef MT_CLI_NETOPTS_H
#define MT_CLI_NETOPTS_H

#include <stdio.h>

#include "netmodels/photonic.h"
#include "netmodels/topologies.h"
#include "network/netmodel.h"
#include "util/err.h"

typedef struct mt_netopts {
    const char *topology; /* NULL: not given */
    const char *network;  /* "flow" (default) or "photonic" */
    mt_topo_params tp;
    mt_photonic_params ph;
    int photonic_total_set;
} mt_netopts;

void mt_netopts_init(mt_netopts *o);
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

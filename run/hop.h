/* run/hop.h — `hop` as a library call: heterogeneous decentralized training after Hop
 * (ASPLOS'19) on a network model (sim/gossip.h). Each of W workers computes one training step
 * (the traced step, or a given time) and sends its model update to its graph neighbours; a worker
 * starts iteration k once all but B of its in-neighbours have delivered an update of iteration
 * >= k-1-S. For G random groups of per-worker uplink slowdowns, drawn uniformly in [MIN, MAX],
 * and each graph, the time for every worker to do K iterations with 0 and with B backups.
 * Everything is run before anything is returned, so a failing configuration prints nothing.
 * Costs: 2 x graphs x groups gossip runs.
 */
#ifndef MT_RUN_HOP_H
#define MT_RUN_HOP_H

#include <stdint.h>

#include "netmodels/netcfg.h"
#include "report/hoptable.h"
#include "sim/gossip.h"
#include "util/err.h"

typedef struct mt_hop_config {
    const char *paths[2];    /* the trace (a folder or its files), or none */
    int n_paths;
    int32_t workers, iterations, staleness, backups, groups, seed;
    int32_t max_gap;         /* Hop's iteration-gap bound, -1: none */
    double smin, smax;       /* uplink slowdown range */
    double compute_ns;       /* iteration compute time without a trace (0: the trace's) */
    double model_bytes;      /* update size without a trace (0: the trace's parameters) */
    const char *graphs;      /* "ring-chords,double-ring": ring, ring-chords, double-ring, complete */
    mt_netcfg net;           /* the uplinks are slowed through the model: it must have links */
} mt_hop_config;

/* Defaults: 8 workers, 20 iterations, staleness 0, 1 backup, no gap bound, 8 groups, seed 1,
 * slowdowns 1:10, graphs ring-chords and double-ring, 100 Gb/s links (mt_topo_hop_tier). */
void mt_hop_config_init(mt_hop_config *c);
/* The uplinks' bandwidth without --link-bw, in Gb/s (100 Gb/s NICs: mt_topo_hop_tier). */
double mt_hop_default_Gbps(void);

/* Runs every group and graph into *out (free with mt_hop_table_free). Errors: no trace and no
 * --compute/--model-bytes, a bad graph name, more backups than a worker's in-neighbours, a
 * topology with too few GPUs or a model without links. */
mt_status mt_run_hop(const mt_hop_config *c, mt_hop_table *out, mt_error *err);

#endif

/* sim/gossip.h — decentralized (gossip) training as in Hop (Luo et al., ASPLOS'19): every
 * worker trains its own replica and exchanges its model with its graph neighbours, with
 * queue-based synchronisation, bounded staleness and backup workers.
 *
 * Model. Worker i runs iterations 1..K. Iteration k = compute for compute_ps[i], then its
 * update u(i,k) (model_bytes) is handed to the network for every out-neighbour at once (sends
 * are asynchronous: they queue in the receivers' update queues, and a worker's outgoing
 * transfers share its links under the network model). Worker i may start iteration k when, of
 * its in-neighbours, at least indeg(i) - backups have delivered an update of iteration
 * >= k - 1 - staleness (iteration 0 = the common initial model, always there); the `backups`
 * slowest it does not wait for. With max_gap >= 0 it must also have an update of iteration
 * >= k - 1 - max_gap from every in-neighbour (Hop's iteration-gap bound); -1: no such bound.
 * A worker's time to K iterations is the end of its K-th compute; the run's time is the
 * latest of them (every worker has done K iterations).
 * Costs: O(K x edges) sends and events; memory O(N + edges).
 */
#ifndef MT_SIM_GOSSIP_H
#define MT_SIM_GOSSIP_H

#include <stdint.h>

#include "network/netmodel.h"
#include "sim/engine.h"
#include "util/err.h"

/* A directed communication graph in CSR form: the out-neighbours of i are
 * nbr[off[i] .. off[i+1]). */
typedef struct mt_gossip_graph {
    int32_t n;
    int32_t *off, *nbr;
} mt_gossip_graph;

typedef enum {
    MT_GRAPH_RING = 0,       /* i <-> i+1 */
    MT_GRAPH_RING_CHORDS,    /* ring plus a chord from each node to its most distant one (i + n/2) */
    MT_GRAPH_DOUBLE_RING,    /* two rings: i <-> i+1 and i <-> i+d, d the smallest step > 1 coprime
                                with n (n = 8: 3), so the second ring also visits every node */
    MT_GRAPH_COMPLETE        /* every pair */
} mt_graph_kind;

/* "ring", "ring-chords", "double-ring", "complete" -> 0; -1 otherwise. */
int mt_graph_kind_parse(const char *s, mt_graph_kind *out);
const char *mt_graph_kind_name(mt_graph_kind k);
/* Builds an undirected graph of that kind as both directions (no duplicate edges, no self
 * loops). MT_EINVAL for n < 2 (n < 3 for the ring kinds), MT_ENOMEM. */
mt_status mt_gossip_graph_build(mt_graph_kind kind, int32_t n, mt_gossip_graph *g, mt_error *err);
void mt_gossip_graph_free(mt_gossip_graph *g);

typedef struct mt_gossip_cfg {
    const mt_gossip_graph *graph;
    const mt_time_ps *compute_ps; /* per worker: one iteration's compute */
    double model_bytes;           /* one update */
    int32_t iterations;           /* K >= 1 */
    int32_t staleness;            /* s >= 0 */
    int32_t backups;              /* b >= 0, < every in-degree */
    int32_t max_gap;              /* -1: none */
} mt_gossip_cfg;

typedef struct mt_gossip_result {
    mt_time_ps all_done_ps;       /* every worker has done K iterations */
    mt_time_ps *done_ps;          /* per worker */
    double mean_done_ps;
    mt_time_ps *wait_ps;          /* per worker: time waiting for updates */
    uint64_t sends;
} mt_gossip_result;

/* Runs the cfg on net (worker i = endpoint i of the model) with engine e (fresh, the one net was
 * created on). MT_EINVAL for a bad cfg (naming the field), MT_ESTUCK naming a worker that never
 * finished. On success *out is filled (free with mt_gossip_result_free). */
mt_status mt_gossip_run(const mt_gossip_cfg *cfg, mt_netmodel *net, mt_engine *e, mt_gossip_result *out,
                        mt_error *err);
void mt_gossip_result_free(mt_gossip_result *r);

#endif

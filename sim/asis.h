/* sim/asis.h — per-rank Chakra graphs (tracer/chakra.h) simulated as given: every rank runs its
 * own graph on the event engine, its collectives and sends on a network model.
 *
 * A node starts once every node it depends on has finished. Per rank, GPU compute nodes
 * (COMP_NODE without is_cpu_op) run one at a time in the order they became ready (ties: file
 * order), for their duration; host nodes (is_cpu_op), memory and metadata nodes take their
 * duration without holding the GPU. Collectives: a rank's collectives with the same pg_name (no
 * pg_name: all ranks) form one communicator whose members are the ranks that have any; the k-th
 * collective of a communicator in each member's file order is one instance, started once every
 * member has reached it and the communicator's previous instance has finished (NCCL runs one at
 * a time per communicator), timed by the schedule of extrapolate/collective.h (the node's
 * mitosis.algo / mitosis.chunks when present, else the options') on sim/collexec.h; it finishes
 * on every member at once. Group rank i is the i-th member in rank order. Send/receive: a
 * COMM_SEND_NODE on rank s sends comm_size bytes to comm_dst, after the previous send on the same
 * (s, dst) connection has left (as simulate's pipeline sends do), and finishes when delivered; a
 * COMM_RECV_NODE with comm_src s and comm_tag t finishes when it is ready and the next undelivered
 * send of (s, this rank, t) has arrived (sends and receives pair in order per (src, dst, tag)).
 * Errors before the run (MT_EFORMAT, naming rank file and node): members whose instance counts or
 * collective types differ, a collective type without a schedule (GATHER, SCATTER), a send or
 * receive peer that is not a rank. A run that ends with nodes unfinished (the graphs deadlock
 * across ranks, or a receive has no send) is MT_EFORMAT too, naming the rank file and the node
 * it waits on: the input is at fault, not the simulation.
 * Costs: memory O(nodes + dependencies + ranks x communicators); time O(nodes + dependencies +
 * network events); schedules are cached per (op, ranks, bytes, algorithm, chunks).
 */
#ifndef MT_SIM_ASIS_H
#define MT_SIM_ASIS_H

#include <stdint.h>

#include "extrapolate/collective.h"
#include "network/netmodel.h"
#include "sim/engine.h"
#include "tracer/chakra.h"
#include "util/err.h"

typedef struct mt_asis_opts {
    mt_coll_algo algo;       /* for collectives without mitosis.algo (default ring) */
    int32_t chunks;          /* likewise (0: the schedule's default) */
    int32_t ranks_per_node;  /* hier (default 8) */
} mt_asis_opts;

void mt_asis_opts_init(mt_asis_opts *o);

typedef struct mt_asis_result {
    mt_time_ps step_ps;      /* when the last rank finished its last node */
    int32_t n_ranks;
    mt_time_ps *finish_ps;   /* per rank */
    mt_time_ps *compute_ps;  /* per rank: GPU compute node time */
    int64_t nodes;           /* over all ranks */
    uint64_t collectives;    /* instances (once per communicator) */
    uint64_t sends;
    int32_t communicators;
    uint64_t events;
} mt_asis_result;

/* Runs graphs g[0 .. n) (rank r = g[r]) on net, whose endpoints in order are the ranks (at least
 * n of them), using engine e (fresh, at time 0, the one net was created on). On success *out is
 * filled (free with mt_asis_result_free). */
mt_status mt_asis_run(const mt_ck_graph *g, int32_t n, mt_netmodel *net, mt_engine *e, const mt_asis_opts *o,
                      mt_asis_result *out, mt_error *err);
void mt_asis_result_free(mt_asis_result *r);

#endif

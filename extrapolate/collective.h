/* extrapolate/collective.h — collectives decomposed into schedules of point-to-point sends.
 *
 * A schedule is pure data over ranks 0..N-1 (no network here): an array of sends
 * {src, dst, bytes} and, for each, what must happen before it may start (CSR:
 * deps[dep_begin .. dep_begin + ndeps)). Two kinds of dependency:
 *   d              send d has been DELIVERED (its data is at d's destination);
 *   d | MT_COLL_SENT  send d has LEFT its source (its last byte is on the wire).
 * A send with src == dst is a local join (no bytes move; it completes, and leaves, as soon as
 * its dependencies are met) used to fan dependencies in. sim/collexec.h runs a schedule on a
 * network model; ranks map to endpoints there.
 *
 * Dependencies are per rank, not global barriers: a rank's sends in step k wait only for
 * what that rank received in step k-1 (NCCL-style), so a ring all-reduce on a uniform ring
 * takes exactly 2(N-1) x (S/N / B + alpha). A connection (src -> dst in one lane, NCCL's
 * channel) carries its sends in order, like NCCL's FIFO of slots: each send also waits until
 * the previous send of its template on that connection has LEFT (not arrived: the sender's
 * next step overlaps the last one's latency). Without this, a rank whose upstream is fast
 * would put several steps at once on a slow link, where they share its bandwidth and all
 * finish late, delaying the chain behind them. On uniform links a rank's data for step k
 * arrives after its own step k-1 has left, so the order costs nothing there. Likewise a rank
 * takes a phase's data only once it has entered the phase: the first step of each ring phase
 * (hier's second and third) also waits for its destination to have finished the one before.
 * Algorithms (bytes S: the per-rank buffer; all-gather's output, reduce-scatter's input):
 *   ring   all-reduce 2(N-1) steps of S/N (reduce-scatter then all-gather); reduce-scatter,
 *          all-gather N-1 steps of S/N; broadcast/reduce a pipelined chain; all-to-all a
 *          pairwise exchange, N-1 shifted steps of S/N (rank i sends to i+k once it has
 *          received step k-1, its last send has left and i+k has received step k-1); sendrecv
 *          one send.
 *   tree   double binary tree: all-reduce = reduce up + broadcast down on two complementary
 *          binary trees each carrying S/2; broadcast/reduce on one tree.
 *   direct all pairs at once: all-reduce = direct reduce-scatter + direct all-gather.
 *   hier   all-reduce: ring reduce-scatter inside each node of G ranks, ring all-reduce
 *          of S/G across nodes per local rank, ring all-gather inside nodes. all-to-all: inside
 *          each node every rank sends each local peer l' what it has for the ranks of local index
 *          l' on every node (m S/N even), then across nodes each rank sends rank (b, l') what its
 *          node has for it (G S/N even): m-1 inter-node messages per rank instead of N-G.
 *   ringflow  all-reduce, reduce-scatter, all-gather as the steady state of a finely chunked
 *          ring: N concurrent neighbour flows of k/N x S bytes (k = 2(N-1) steps for
 *          all-reduce, N-1 otherwise), then, once all have arrived, a chain of k-1 zero-byte
 *          neighbour hops for the remaining per-step latencies. On a uniform ring or a
 *          non-blocking switch it takes exactly k/N x S/B + k x alpha, as ring does, with O(N)
 *          sends instead of O(N^2); under contention it is the fluid limit of a pipelined ring.
 *          Its bandwidth term equals ring's on uneven links too; its latency term does not:
 *          it puts all k latencies after the bulk, where ring's steps hide those that a slow
 *          link's queue covers (one slow link: bound + k alpha against bound + alpha).
 *          Other ops fall back to ring. Chunks do not apply.
 *   relay  all-to-all as ASTRA-sim's ring runs it (its Ring algorithm, All_to_All): N(N-1)/2
 *          ring steps of S/N, each rank forwarding to its successor what it received, so it
 *          takes N(N-1)/2 x (S/N / B + alpha) where pairwise takes (N-1) x (S/N / B + alpha).
 *          Shares are ignored (S/N a step). Other ops fall back to ring.
 *   treeflow  all-reduce as the steady state of a finely pipelined double binary tree: its bulk
 *          as a ring's (every rank moves 2S (m-1)/m each way in a double tree as in a ring, so on
 *          uniform links the two take the same time): one flow per rank to the next node on its
 *          NIC rail (ranks_per_node G, N a multiple, more than one node: rank node x G + l to
 *          node + 1; else to the next rank, m = N), then, once all have arrived, a chain of
 *          2 depth - 1 zero-byte hops down and up the tree over the m nodes for its per-level
 *          latencies: 2S (m-1)/m / B + (2 log2 m + 1) hops on uniform links, with N flows (equal,
 *          so they finish together: cheap at 10^5-10^6 ranks) where tree with C chunks has
 *          4(N-1)C sends. Contention is a ring's, not a tree's. Other ops fall back to tree.
 * Protocol costs (NCCL's, extrapolate/nccl.h) ride on any schedule: wire_factor multiplies every
 * send's bytes (bytes the wire carries per payload byte over the share of the link the kernels
 * reach; 0 or 1: none) and extra_lat_ns delays the collective's completion past its last delivery
 * (launch and protocol latency the links do not already give).
 * Chunking (chunks = C > 1) splits S into C pipelined pieces: piece c of a send also waits
 * for piece c-1 of the same send to have LEFT (the pieces stream back to back, each arriving
 * one path latency after it left: a pipelined chain takes (C + N - 2) S/C/B + (N - 1) alpha),
 * and for piece c of the template's previous send on its connection to have left. chunks = 0 picks a default: 1 for
 * ring/direct all-reduce-like ops, ceil(S / 1 MiB) capped at 32 for chains and trees.
 * Memory: O(sends + deps); a 1024-rank ring all-reduce is 2.1 M sends and 4.2 M dependencies
 * (~70 MB). At most MT_COLL_SENDS_MAX sends or dependencies (a larger one is refused).
 */
#ifndef MT_EXTRAPOLATE_COLLECTIVE_H
#define MT_EXTRAPOLATE_COLLECTIVE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef enum {
    MT_COLL_ALLREDUCE,
    MT_COLL_REDUCESCATTER,
    MT_COLL_ALLGATHER,
    MT_COLL_BROADCAST,
    MT_COLL_REDUCE,
    MT_COLL_ALLTOALL,
    MT_COLL_SENDRECV
} mt_coll_op;

typedef enum {
    MT_ALGO_RING,
    MT_ALGO_TREE,
    MT_ALGO_DIRECT,
    MT_ALGO_HIER,
    MT_ALGO_RINGFLOW,
    MT_ALGO_RELAY,
    MT_ALGO_TREEFLOW,
    MT_ALGO_NCCL, /* a plan's choice, not a schedule: NCCL's tuner picks one per collective (sim/simulate.h) */
    MT_ALGO_AUTO  /* a plan's default: nccl on a topology preset, ring elsewhere (resolved by run/simrun.h) */
} mt_coll_algo;

typedef struct mt_coll_params {
    mt_coll_op op;
    mt_coll_algo algo;
    int32_t nranks;
    double bytes;
    int32_t root;           /* broadcast / reduce root; sendrecv source */
    int32_t peer;           /* sendrecv destination */
    int32_t ranks_per_node; /* hier only */
    int32_t chunks;         /* 0 = default */
    const double *share;    /* all-to-all only, NULL = even: per rank, its share of each rank's S
                             * (sum 1): rank i sends j S x share[j] (share_by_src 0: j receives its
                             * experts' tokens), or S x share[i] (1: i returns what its experts took) */
    int8_t share_by_src;
    double wire_factor;     /* > 0: every send carries bytes x this (0 = 1) */
    double extra_lat_ns;    /* added after the last delivery (0: none) */
    int8_t walk;            /* ringflow: its chain of k-1 hops as one walk send (mt_coll_schedule.walk;
                             * O(1) memory instead of O(N): the simulator's); 0: a send a hop */
} mt_coll_params;

typedef struct mt_coll_send {
    int32_t src, dst; /* src == dst: a local join */
    double bytes;
    uint32_t dep_begin, ndeps;
} mt_coll_send;

/* A dependency (an entry of deps[]) is a send index, with MT_COLL_SENT set when it waits for
 * that send to have left its source rather than for its delivery. */
#define MT_COLL_SENT UINT32_C(0x80000000)
#define MT_COLL_SENDS_MAX UINT32_C(0x7fffffff)
static inline uint32_t mt_coll_dep_send(uint32_t dep) { return dep & ~MT_COLL_SENT; }
static inline int mt_coll_dep_on_sent(uint32_t dep) { return (dep & MT_COLL_SENT) != 0; }

typedef struct mt_coll_schedule {
    mt_coll_params p;
    uint32_t nsends, scap;
    mt_coll_send *sends;
    uint32_t ndeps, dcap;
    uint32_t *deps;
    /* walk_hops >= 2 (ringflow with params.walk): send `walk` (0 bytes, its first hop src ->
     * src+1) stands for walk_hops zero-byte ring hops src -> src+1 -> src+2 ... (mod nranks), each
     * leaving at the previous one's delivery, as the chain it replaces (sim/collexec.h runs
     * them); else 0 */
    uint32_t walk;
    int32_t walk_hops;
} mt_coll_schedule;

/* Sensible defaults: all-reduce, ring, chunks 0, root 0, peer 1. */
void mt_coll_params_init(mt_coll_params *p);
/* Builds the schedule. MT_EINVAL with a message for impossible combinations (e.g. tree
 * all-to-all, hier with N not a multiple of ranks_per_node). */
mt_status mt_coll_build(const mt_coll_params *p, mt_coll_schedule **out, mt_error *err);
void mt_coll_free(mt_coll_schedule *s);

const char *mt_coll_op_name(mt_coll_op op);
const char *mt_coll_algo_name(mt_coll_algo a);
mt_status mt_coll_op_parse(const char *s, mt_coll_op *out, mt_error *err);
/* A schedule's name (ring ... treeflow) into *out; MT_EINVAL with one line for anything else. */
mt_status mt_coll_algo_parse(const char *s, mt_coll_algo *out, mt_error *err);
/* A plan's algorithm: a schedule's name, nccl or auto. */
mt_status mt_coll_plan_algo_parse(const char *s, mt_coll_algo *out, mt_error *err);
/* nccl-tests bus-bandwidth factor: busbw = algbw * factor (all-reduce 2(N-1)/N, ...). */
double mt_coll_busbw_factor(mt_coll_op op, int32_t nranks);

#endif

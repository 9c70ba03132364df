/* extrapolate/collective.h — collectives decomposed into schedules of point-to-point sends.
 *
 * A schedule is pure data over ranks 0..N-1 (no network here): an array of sends
 * {src, dst, bytes} and, for each, the sends that must be DELIVERED before it may start
 * (CSR: deps[dep_begin .. dep_begin + ndeps)). A send with src == dst is a local join (no
 * bytes move; it completes as soon as its dependencies do) used to fan dependencies in.
 * sim/collexec.h runs a schedule on a network model; ranks map to endpoints there.
 *
 * Dependencies are per rank, not global barriers: a rank's sends in step k wait only for
 * what that rank received in step k-1 (NCCL-style), so a ring all-reduce on a uniform ring
 * takes exactly 2(N-1) x (S/N / B + alpha).
 * Algorithms (bytes S: the per-rank buffer; all-gather's output, reduce-scatter's input):
 *   ring   all-reduce 2(N-1) steps of S/N (reduce-scatter then all-gather); reduce-scatter,
 *          all-gather N-1 steps of S/N; broadcast/reduce a pipelined chain; all-to-all N-1
 *          shifted exchanges of S/N; sendrecv one send.
 *   tree   double binary tree: all-reduce = reduce up + broadcast down on two complementary
 *          binary trees each carrying S/2; broadcast/reduce on one tree.
 *   direct all pairs at once: all-reduce = direct reduce-scatter + direct all-gather.
 *   hier   all-reduce only: ring reduce-scatter inside each node of G ranks, ring all-reduce
 *          of S/G across nodes per local rank, ring all-gather inside nodes.
 *   ringflow  all-reduce, reduce-scatter, all-gather as the steady state of a finely chunked
 *          ring: N concurrent neighbour flows of k/N x S bytes (k = 2(N-1) steps for
 *          all-reduce, N-1 otherwise), then, once all have arrived, a chain of k-1 zero-byte
 *          neighbour hops for the remaining per-step latencies. On a uniform ring or a
 *          non-blocking switch it takes exactly k/N x S/B + k x alpha, as ring does, with O(N)
 *          sends instead of O(N^2); under contention it is the fluid limit of a pipelined ring.
 *          Other ops fall back to ring. Chunks do not apply.
 * Chunking (chunks = C > 1) splits S into C pipelined pieces: piece c of a send also waits
 * for piece c-1 of the same send. chunks = 0 picks a default: 1 for ring/direct
 * all-reduce-like ops, ceil(S / 1 MiB) capped at 32 for chains and trees.
 * Memory: O(sends + deps); a 1024-rank ring all-reduce is 2.1 M sends (~50 MB).
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

typedef enum { MT_ALGO_RING, MT_ALGO_TREE, MT_ALGO_DIRECT, MT_ALGO_HIER, MT_ALGO_RINGFLOW } mt_coll_algo;

typedef struct mt_coll_params {
    mt_coll_op op;
    mt_coll_algo algo;
    int32_t nranks;
    double bytes;
    int32_t root;           /* broadcast / reduce root; sendrecv source */
    int32_t peer;           /* sendrecv destination */
    int32_t ranks_per_node; /* hier only */
    int32_t chunks;         /* 0 = default */
} mt_coll_params;

typedef struct mt_coll_send {
    int32_t src, dst; /* src == dst: a local join */
    double bytes;
    uint32_t dep_begin, ndeps;
} mt_coll_send;

typedef struct mt_coll_schedule {
    mt_coll_params p;
    uint32_t nsends, scap;
    mt_coll_send *sends;
    uint32_t ndeps, dcap;
    uint32_t *deps;
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
mt_status mt_coll_algo_parse(const char *s, mt_coll_algo *out, mt_error *err);
/* nccl-tests bus-bandwidth factor: busbw = algbw * factor (all-reduce 2(N-1)/N, ...). */
double mt_coll_busbw_factor(mt_coll_op op, int32_t nranks);

#endif

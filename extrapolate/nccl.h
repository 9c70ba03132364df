/* extrapolate/nccl.h — NCCL's choice of algorithm and protocol for one collective, and its time,
 * as NCCL's tuner computes them (src/graph/tuning.cc: a latency and a bandwidth per algorithm and
 * protocol, time = latency + bytes / algorithm bandwidth, the fastest enabled one wins), with the
 * bandwidths scaled to what nccl-tests measures.
 *
 * Algorithms: ring; tree (double binary tree, all-reduce only); NVLS (NVLink SHARP: the NVSwitch
 * reduces, all-reduce inside one node of Hopper or later on an NVSwitch). CollNet (SHARP in the
 * network) is not offered: no topology of mitosis has in-network reduction. Protocols: LL (8-byte
 * stores with a flag each: half the wire bytes are flags, lowest latency), LL128 (128-byte lines,
 * 120 of data), Simple (large chunks, highest latency, full bandwidth). NVLS runs Simple only.
 *
 * Latency (us) = base[algo][proto] + per-step terms from hw[link][algo][proto] (NCCL 2.19's
 * tables, tuning.cc): ring: (steps - inter steps) x intra + inter steps x net; tree: 2 x ((ranks
 * per node - 1) x intra + log2(nodes) x net); NVLS: the NVLink NVLS latency. Steps: all-reduce
 * 2(n-1), all-gather and reduce-scatter n-1, broadcast/reduce n; inter steps the same with nodes.
 *
 * Bus bandwidth (nccl-tests' busbw; algbw = busbw / the busbw factor of collective.h) of Simple
 * on the bottleneck B (intra-node link per GPU on one node, min(link, NIC) across nodes):
 *   ring  MT_NCCL_RING_EFF x B on NVLink (0.80: 8 x H100 SXM reach 360-370 GB/s of 450, 8 x A100
 *         230-250 of 300, nccl-tests), MT_NCCL_NET_EFF x B on NICs (0.85: 40-45 GB/s per GPU on
 *         400 Gb/s NICs)
 *   tree  0.92 x ring's (tuning.cc's tree factor)
 *   NVLS  MT_NCCL_NVLS_EFF x the busbw of moving S in and S out per GPU (2(n-1)/n x B): 0.60 fits
 *         the 460-480 GB/s 8 x H100 reach; Blackwell x 0.74/0.85 (tuning's nvlsEfficiency ratio)
 * Protocols on top (tuning.cc): LL min(llMax[arch][nodes], busbw / 2); LL128 0.92 x busbw (tree:
 * 7/9 on one node); trees at medium sizes x treeCorrectionFactor[proto][log2(bytes / 64)].
 * Invariant: every time returned is latency + bytes / algbw with latency > 0 and algbw > 0, and
 * the choice is the minimum over the enabled (algo, proto) pairs. Cost: O(algos x protos).
 */
#ifndef MT_EXTRAPOLATE_NCCL_H
#define MT_EXTRAPOLATE_NCCL_H

#include <stdint.h>

#include "extrapolate/collective.h"
#include "util/err.h"

typedef enum { MT_NCCL_TREE = 0, MT_NCCL_RING, MT_NCCL_NVLS, MT_NCCL_ALGO_COUNT } mt_nccl_algo;
typedef enum { MT_NCCL_LL = 0, MT_NCCL_LL128, MT_NCCL_SIMPLE, MT_NCCL_PROTO_COUNT } mt_nccl_proto;
typedef enum { MT_NCCL_AMPERE = 0, MT_NCCL_HOPPER, MT_NCCL_BLACKWELL, MT_NCCL_ARCH_COUNT } mt_nccl_arch;

#define MT_NCCL_ARCH_CHOICES "ampere|hopper|blackwell"
#define MT_NCCL_RING_EFF 0.80
#define MT_NCCL_NET_EFF 0.85
#define MT_NCCL_NVLS_EFF 0.60
/* NVLS is NVLink SHARP inside one NVLink domain: at most 576 GPUs (NVLink 5's largest, GB200
 * NVL576; Hopper's NVLink Switch System: 256). A one-switch fabric of more GPUs (switch:N, the
 * default topology of --gpus N) is no NVLink domain: NVLS is not offered there (its schedule, direct,
 * is n(n-1) sends a phase: 2048 GPUs ran for minutes, 1,048,576 never ended). */
#define MT_NCCL_NVLS_RANKS_MAX 576

typedef struct mt_nccl_fabric {
    int32_t nranks, nnodes;  /* ranks of the communicator, nodes they span (>= 1) */
    double intra_Bps;        /* per GPU, each direction, inside a node */
    double inter_Bps;        /* per GPU across nodes (its NIC); 0: one node only */
    int nvswitch;            /* the node's GPUs hang off an NVSwitch (NVLS possible from Hopper) */
    mt_nccl_arch arch;
    int32_t gpus_per_node;   /* for a simulator counting a group's nodes (0: nnodes as given) */
    double link_lat_ns, nic_lat_ns; /* per link of each tier, for mt_nccl_schedule_lat_us */
} mt_nccl_fabric;

typedef struct mt_nccl_cost {
    mt_nccl_algo algo;
    mt_nccl_proto proto;
    double lat_us, busbw_Bps, algbw_Bps, time_us;
} mt_nccl_cost;

const char *mt_nccl_algo_name(mt_nccl_algo a);
const char *mt_nccl_proto_name(mt_nccl_proto p);
/* "ampere" -> MT_NCCL_AMPERE ...; -1 for anything else. */
int mt_nccl_arch_parse(const char *s, mt_nccl_arch *out);
/* The generation of a GPU of the table by name (H100/H200/H800 -> hopper, B200/GB200 -> blackwell,
 * any other -> ampere: before Hopper, no NVLS); hopper for no name (a preset without a GPU). */
mt_nccl_arch mt_nccl_arch_of_gpu(const char *gpu_name);

/* The cost of (algo, proto) for op over bytes (per rank, as collective.h) on f; 0 when NCCL does
 * not offer that pair there (tree for other than all-reduce, NVLS off an NVSwitch or before
 * Hopper or across nodes or over more than MT_NCCL_NVLS_RANKS_MAX ranks, NVLS with LL/LL128), 1 with
 * *out filled. */
int mt_nccl_cost_of(const mt_nccl_fabric *f, mt_coll_op op, mt_nccl_algo a, mt_nccl_proto p, double bytes,
                    mt_nccl_cost *out);
/* NCCL's choice: the fastest offered pair (force_algo >= 0: only that algorithm; it must be
 * offered). MT_EINVAL with one line for all-to-all and send/receive (point-to-point in NCCL, not
 * tuned), one rank, or a forced algorithm NCCL does not offer there. */
mt_status mt_nccl_tune(const mt_nccl_fabric *f, mt_coll_op op, double bytes, int force_algo, mt_nccl_cost *out,
                       mt_error *err);

/* The bottleneck bandwidth a schedule of collective.h reaches on f (the link tier on one node,
 * min(link, NIC) across nodes); a schedule runs NCCL's choice c at NCCL's speed with wire_factor
 * = this / c.busbw_Bps. */
double mt_nccl_peak_Bps(const mt_nccl_fabric *f);
/* The latency (us) the links of f already give the schedule that stands for algorithm a (two
 * links a hop: ring steps, tree levels, NVLS's two phases through the switch); the schedule's
 * extra_lat_ns is NCCL's latency less this, at least 0. */
double mt_nccl_schedule_lat_us(const mt_nccl_fabric *f, mt_coll_op op, mt_nccl_algo a);

#endif

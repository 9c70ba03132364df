/* extrapolate/nccl.c — see nccl.h. The tables are NCCL's (src/graph/tuning.cc of NCCL 2.18-2.19
 * and its tuning.h; latencies in us, bandwidths in GB/s), indexed [algo][proto] with algo tree,
 * ring, NVLS and proto LL, LL128, Simple. */
#include "extrapolate/nccl.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/units.h"

static const double BASE_LAT_US[MT_NCCL_ALGO_COUNT][MT_NCCL_PROTO_COUNT] = {
    {6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}};
static const double NVLINK_LAT_US[MT_NCCL_ALGO_COUNT][MT_NCCL_PROTO_COUNT] = {
    {0.6, 1.25, 4}, {0.6, 1.9, 3.4}, {0, 0, 25}};
static const double NET_LAT_US[MT_NCCL_ALGO_COUNT][MT_NCCL_PROTO_COUNT] = {
    {5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}};
/* LL's ceiling per architecture and node count (1, 2, more): llMaxBws. Blackwell on one node 282
 * (twice Hopper's, as NCCL 2.23+); across nodes Hopper's. */
static const double LL_MAX_GBPS[MT_NCCL_ARCH_COUNT][3] = {{87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 45.0, 35.0}};
/* LL128's ceiling per channel (perChMaxRingLL128Bws) times 16 channels (NVSwitch nodes). */
static const double LL128_CH_GBPS[MT_NCCL_ARCH_COUNT] = {20.0, 36.7, 40.0};
#define NCCL_CHANNELS 16
/* Trees below 256 MB: treeCorrectionFactor, powers of two from 64 B. */
static const double TREE_CORR[MT_NCCL_PROTO_COUNT][22] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9}};
/* nvlsEfficiency: Hopper 0.85, Blackwell 0.74 (MT_NCCL_NVLS_EFF is fitted on Hopper). */
static const double NVLS_ARCH[MT_NCCL_ARCH_COUNT] = {0, 1.0, 0.74 / 0.85};

static const char *const ALGO_NAMES[MT_NCCL_ALGO_COUNT] = {"tree", "ring", "nvls"};
static const char *const PROTO_NAMES[MT_NCCL_PROTO_COUNT] = {"LL", "LL128", "Simple"};
static const char *const ARCH_NAMES[MT_NCCL_ARCH_COUNT] = {"ampere", "hopper", "blackwell"};

const char *mt_nccl_algo_name(mt_nccl_algo a) { return (unsigned)a < MT_NCCL_ALGO_COUNT ? ALGO_NAMES[a] : "?"; }
const char *mt_nccl_proto_name(mt_nccl_proto p) { return (unsigned)p < MT_NCCL_PROTO_COUNT ? PROTO_NAMES[p] : "?"; }

int mt_nccl_arch_parse(const char *s, mt_nccl_arch *out) {
    for (int i = 0; s && i < MT_NCCL_ARCH_COUNT; i++)
        if (!strcmp(s, ARCH_NAMES[i])) {
            *out = (mt_nccl_arch)i;
            return 0;
        }
    return -1;
}

mt_nccl_arch mt_nccl_arch_of_gpu(const char *gpu_name) {
    char low[64];
    snprintf(low, sizeof low, "%s", gpu_name ? gpu_name : "");
    for (char *c = low; *c; c++) *c = (char)tolower((unsigned char)*c);
    if (!*low || strstr(low, "h100") || strstr(low, "h200") || strstr(low, "h800") || strstr(low, "h20"))
        return MT_NCCL_HOPPER;
    if (strstr(low, "b200") || strstr(low, "b100")) return MT_NCCL_BLACKWELL;
    return MT_NCCL_AMPERE;
}

static int32_t steps_of(mt_coll_op op, int32_t n) {
    switch (op) {
    case MT_COLL_ALLREDUCE: return 2 * (n - 1);
    case MT_COLL_REDUCESCATTER:
    case MT_COLL_ALLGATHER: return n - 1;
    default: return n;
    }
}

static int32_t log2i(int32_t n) {
    int32_t l = 0;
    while (n > 1) n >>= 1, l++;
    return l;
}

/* Simple ring's bus bandwidth on f: the bottleneck at its achieved share. */
static double ring_simple_Bps(const mt_nccl_fabric *f) {
    if (f->nnodes > 1 && f->inter_Bps > 0) return MT_NCCL_NET_EFF * fmin(f->intra_Bps, f->inter_Bps);
    return MT_NCCL_RING_EFF * f->intra_Bps;
}

int mt_nccl_cost_of(const mt_nccl_fabric *f, mt_coll_op op, mt_nccl_algo a, mt_nccl_proto p, double bytes,
                    mt_nccl_cost *out) {
    int32_t n = f->nranks, nodes = f->nnodes > 0 ? f->nnodes : 1;
    if (n < 2 || (unsigned)a >= MT_NCCL_ALGO_COUNT || (unsigned)p >= MT_NCCL_PROTO_COUNT) return 0;
    if (op == MT_COLL_ALLTOALL || op == MT_COLL_SENDRECV) return 0;
    if (a != MT_NCCL_RING && op != MT_COLL_ALLREDUCE) return 0;
    if (a == MT_NCCL_NVLS && (p != MT_NCCL_SIMPLE || !f->nvswitch || f->arch == MT_NCCL_AMPERE || nodes > 1 ||
                              n > MT_NCCL_NVLS_RANKS_MAX))
        return 0;
    int bucket = nodes == 1 ? 0 : nodes == 2 ? 1 : 2;
    double ring = ring_simple_Bps(f), factor = mt_coll_busbw_factor(op, n), bus;
    if (a == MT_NCCL_NVLS)
        bus = MT_NCCL_NVLS_EFF * NVLS_ARCH[f->arch] * factor * f->intra_Bps;
    else
        bus = a == MT_NCCL_TREE ? 0.92 * ring : ring;
    if (p == MT_NCCL_LL) bus = fmin(LL_MAX_GBPS[f->arch][bucket] * 1e9, bus / (a == MT_NCCL_TREE ? 3.8 : 2.0));
    if (p == MT_NCCL_LL128) {
        double x = a == MT_NCCL_TREE ? (nodes == 1 ? 7.0 / 9.0 : 0.915) : 0.92;
        bus = fmin(bus * x, LL128_CH_GBPS[f->arch] * NCCL_CHANNELS * 1e9);
    }
    if (a == MT_NCCL_TREE) {
        int l = (int)log2(fmax(1.0, bytes / 64));
        if (l < 22) bus *= TREE_CORR[p][l];
    }
    int32_t steps = steps_of(op, n), inter = nodes > 1 ? steps_of(op, nodes) : 0;
    double intra_lat = NVLINK_LAT_US[a][p] * (nodes > 1 && p == MT_NCCL_LL ? 1.8 : 1.0), net_lat = NET_LAT_US[a][p];
    double lat = BASE_LAT_US[a][p];
    if (a == MT_NCCL_RING) {
        lat += (steps - inter) * intra_lat + inter * net_lat;
        if (p == MT_NCCL_SIMPLE && nodes > 1 && op == MT_COLL_ALLREDUCE && bytes >= n / 16.0 * 65536)
            lat *= 1.9; /* the ring's plateau (tuning.cc) */
    } else if (a == MT_NCCL_TREE) {
        lat += 2 * ((n / nodes - 1) * intra_lat + log2i(nodes) * net_lat);
    } else {
        lat += intra_lat;
    }
    out->algo = a;
    out->proto = p;
    out->lat_us = lat;
    out->busbw_Bps = bus;
    out->algbw_Bps = bus / factor;
    out->time_us = lat + bytes / out->algbw_Bps * 1e6;
    return bus > 0 && lat > 0;
}

mt_status mt_nccl_tune(const mt_nccl_fabric *f, mt_coll_op op, double bytes, int force_algo, mt_nccl_cost *out,
                       mt_error *err) {
    if (op == MT_COLL_ALLTOALL || op == MT_COLL_SENDRECV)
        return mt_fail(err, MT_EINVAL, "NCCL runs %s as point-to-point sends, which its tuner does not choose an "
                       "algorithm for (use --algo ring, direct or hier)", mt_coll_op_name(op));
    if (f->nranks < 2) return mt_fail(err, MT_EINVAL, "an NCCL collective needs 2 or more ranks (got %d)", (int)f->nranks);
    int found = 0;
    for (int a = 0; a < MT_NCCL_ALGO_COUNT; a++) {
        if (force_algo >= 0 && a != force_algo) continue;
        for (int p = 0; p < MT_NCCL_PROTO_COUNT; p++) {
            mt_nccl_cost c;
            if (!mt_nccl_cost_of(f, op, (mt_nccl_algo)a, (mt_nccl_proto)p, bytes, &c)) continue;
            if (!found || c.time_us < out->time_us) *out = c;
            found = 1;
        }
    }
    if (!found)
        return mt_fail(err, MT_EINVAL, "NCCL does not run %s as %s on %d rank%s over %d node%s%s", mt_coll_op_name(op),
                       force_algo >= 0 ? mt_nccl_algo_name((mt_nccl_algo)force_algo) : "any algorithm", (int)f->nranks,
                       mt_plural(f->nranks), (int)f->nnodes, mt_plural(f->nnodes),
                       force_algo == MT_NCCL_NVLS ? " (NVLS: all-reduce on one NVSwitch node of Hopper or later, at most 576 GPUs)"
                       : force_algo == MT_NCCL_TREE ? " (tree: all-reduce only)" : "");
    return MT_OK;
}

double mt_nccl_peak_Bps(const mt_nccl_fabric *f) {
    return f->nnodes > 1 && f->inter_Bps > 0 ? fmin(f->intra_Bps, f->inter_Bps) : f->intra_Bps;
}

double mt_nccl_schedule_lat_us(const mt_nccl_fabric *f, mt_coll_op op, mt_nccl_algo a) {
    int32_t n = f->nranks, nodes = f->nnodes > 0 ? f->nnodes : 1;
    double in = 2 * f->link_lat_ns / 1e3, net = 2 * f->nic_lat_ns / 1e3;
    if (a == MT_NCCL_NVLS) return 2 * in;
    if (a == MT_NCCL_TREE) return (2 * log2i(n) - 1) * (nodes > 1 ? net : in);
    int32_t steps = steps_of(op, n), inter = nodes > 1 ? steps_of(op, nodes) : 0;
    return (steps - inter) * in + inter * net;
}

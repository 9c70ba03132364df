/* run/collective.h — `collective` as a library call: one collective, or a sweep of sizes, timed on
 * a topology and network model (extrapolate/collective.h builds the schedule, sim/collexec.h runs
 * it), as nccl-tests reports it. Each size runs on a fresh engine and model (the topology's
 * routes stay cached), so sizes do not disturb each other. Costs: one collective run per size.
 */
#ifndef MT_RUN_COLLECTIVE_H
#define MT_RUN_COLLECTIVE_H

#include <stdint.h>

#include "extrapolate/collective.h"
#include "extrapolate/nccl.h"
#include "netmodels/netcfg.h"
#include "report/colltable.h"

/* Element types as nccl-tests names them (for the count column), and their sizes. */
#define MT_COLL_DTYPES "float|half|bfloat16|double|int8|uint8|int32|uint32|int64|uint64"
enum { MT_COLL_DTYPE_COUNT = 10 };
extern const int mt_coll_dtype_bytes[MT_COLL_DTYPE_COUNT];

typedef struct mt_collective_config {
    mt_coll_params cp;       /* op, algo, chunks, root, peer, ranks per node (nranks: see ranks) */
    double bytes;            /* one size (< 0: a sweep) */
    double lo, hi;           /* the sweep: lo, 2 lo, 4 lo, ... up to hi (lo < 0: none) */
    int dtype;               /* index in MT_COLL_DTYPES */
    int32_t ranks;           /* 0: every endpoint of the model */
    int nccl;                /* --algo nccl: NCCL's tuner (extrapolate/nccl.h) times each size */
    int nccl_arch;           /* --nccl-arch: 1 + mt_nccl_arch; 0: the topology's GPU's */
    int nccl_force;          /* --nccl-algo: 1 + mt_nccl_algo; 0: the tuner's choice */
    mt_netcfg net;
} mt_collective_config;

void mt_collective_config_init(mt_collective_config *c);

/* The options given as words (the CLI's --op, --algo, --nccl-algo, --nccl-arch, --sweep), each
 * into c; MT_EINVAL with a one-line message naming the flag. --sweep MIN:MAX: a bare K, M, G or T
 * suffix is binary (1K = 1024, as nccl-tests -b/-e), any other size as every size flag. */
mt_status mt_collective_set_op(mt_collective_config *c, const char *v, mt_error *err);
mt_status mt_collective_set_algo(mt_collective_config *c, const char *v, mt_error *err);
mt_status mt_collective_set_nccl_algo(mt_collective_config *c, const char *v, mt_error *err);
mt_status mt_collective_set_nccl_arch(mt_collective_config *c, const char *v, mt_error *err);
mt_status mt_collective_set_sweep(mt_collective_config *c, const char *v, mt_error *err);
/* The combination check once every option is in: --nccl-arch and --nccl-algo need --algo nccl. */
mt_status mt_collective_check(const mt_collective_config *c, mt_error *err);

/* Times every size into *out (at most MT_COLL_TABLE_MAX rows). Errors: neither or both of a size
 * and a sweep, more ranks than the topology has GPUs, an impossible collective (tree all-to-all,
 * hier over partial nodes), a network that cannot be built. */
mt_status mt_run_collective(const mt_collective_config *c, mt_coll_table *out, mt_error *err);

/* The fabric NCCL's tuner sees for nranks ranks on net's topology preset: the link tier per GPU
 * inside a node, the NIC tier across nodes (nodes of the preset's GPUs per node: multinode's
 * gpus=G, else gpus_per_node; one node when the preset has no NIC tier), NVSwitch as the preset
 * says, the architecture arch (1 + mt_nccl_arch) or the preset's GPU's (else Hopper). MT_EINVAL
 * for a topology file (no tiers to read). O(1). */
mt_status mt_run_nccl_fabric(const mt_netcfg *net, int32_t gpus_per_node, int arch, int32_t nranks,
                             mt_nccl_fabric *out, mt_error *err);

#endif

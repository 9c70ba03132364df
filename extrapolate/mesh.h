/* extrapolate/mesh.h — the device mesh of a plan: named dimensions, their sizes, their placement.
 *
 * A plan's N GPUs form an n-dimensional mesh. Each dimension has a name and a size (1 when the
 * plan does not use it):
 *   tp        tensor-parallel ranks of one layer
 *   cp        context-parallel ranks (sequence split of attention)
 *   ep        expert-parallel ranks
 *   pp        pipeline stages
 *   dp        data-parallel replicas; ZeRO/FSDP shard over it. With hybrid sharding (HSDP,
 *             --fsdp-shard G) dp is two dimensions: dp_shard (G ranks that shard the model, inner)
 *             and dp_rep (D / G replicas of that shard, outer); otherwise dp_shard = D, dp_rep = 1.
 * Placement orders the dimensions innermost first (the stride of the first is 1): rank =
 * sum over dimensions of coord x stride. "dp" in a placement stands for dp_shard then dp_rep,
 * adjacent. Every dimension is in the order exactly once.
 * Invariant: product of sizes == N; order is a permutation of 0..MT_DIMS-1 with DP_SHARD
 * immediately before DP_REP. All lookups O(MT_DIMS).
 */
#ifndef MT_EXTRAPOLATE_MESH_H
#define MT_EXTRAPOLATE_MESH_H

#include <stdint.h>

#include "util/err.h"

/* The order of this enum is the order of a group's slots: a group spanning several dimensions
 * numbers its members with the earliest dimension fastest (dp: dp_shard fastest, so a replica's
 * index d = dp_rep x dp_shard + dp_shard coordinate). */
typedef enum {
    MT_DIM_TP = 0,
    MT_DIM_CP,
    MT_DIM_EP,
    MT_DIM_PP,
    MT_DIM_DP_SHARD,
    MT_DIM_DP_REP,
    MT_DIMS
} mt_dim;

#define MT_DIM_BIT(d) (1u << (d))
#define MT_DIMS_DP (MT_DIM_BIT(MT_DIM_DP_SHARD) | MT_DIM_BIT(MT_DIM_DP_REP))

/* Longest placement text: "tp,cp,ep,pp,dp" and a terminator, with room. */
#define MT_PLACEMENT_MAX 24

typedef struct mt_mesh {
    int32_t size[MT_DIMS];
    int8_t order[MT_DIMS];       /* innermost first */
    int64_t stride[MT_DIMS];     /* from order and size */
    int32_t n;                   /* product of sizes */
} mt_mesh;

typedef struct mt_coords {
    int32_t c[MT_DIMS];
} mt_coords;

/* "tp", "cp", "ep", "pp", "dp_shard", "dp_rep". */
const char *mt_dim_name(mt_dim d);

/* The mesh of sizes dp (split into dp_shard x dp_rep: shard = 0 or dp means dp_shard = dp), tp,
 * pp, cp, ep, placed by `placement` (mt_placement_parse's canonical letters; dimensions it leaves
 * out go outermost in the order t, c, e, p, d). Sizes must be >= 1 and shard must divide dp. */
void mt_mesh_init(mt_mesh *m, int32_t dp, int32_t shard, int32_t tp, int32_t pp, int32_t cp, int32_t ep,
                  const char *placement);

int32_t mt_mesh_rank(const mt_mesh *m, const mt_coords *c);
void mt_mesh_coords(const mt_mesh *m, int32_t rank, mt_coords *c);

/* Parses a placement: letters innermost first ("tpd", "tcpd": t, c, e, p, d, each at most once) or
 * dimension names separated by commas ("tp,cp,pp,dp"); writes the canonical letters into out.
 * MT_EINVAL naming the bad part. */
mt_status mt_placement_parse(const char *s, char out[MT_PLACEMENT_MAX], mt_error *err);

#endif

/* extrapolate/group.h — the communication groups of a plan: a table of group kinds over its mesh.
 *
 * A group kind is a table entry: the mesh dimensions its groups span (mesh.h) and, optionally, a
 * block size: groups of `block` consecutive members of the span (a traced job's collectives on
 * groups smaller than its data-parallel group, a TorchRec reduce-scatter inside a node of 8 of 16
 * ranks). Every plan's table starts with the two standard kinds, TP (spans tp) and DP (spans
 * dp_shard and dp_rep: all replicas); strategy passes add theirs (mt_groups_add) — the sharding
 * group of hybrid FSDP spans dp_shard, its replication group dp_rep. Two entries may span the
 * same dimensions under different names: two communicators, whose collectives run concurrently.
 * sim/ sizes its arrays from the table and never asks which strategy a kind serves.
 * Members: a group's slots number the spanned coordinates, the earliest mesh dimension (mesh.h's
 * enum order) fastest, so a DP group's slot is the replica index d. Groups of a kind are numbered
 * by the coordinates outside the span (earliest fastest), then by block.
 * A strided kind (mt_groups_add_strided) groups the span's slots congruent modulo its stride: Megatron-Core's
 * expert-data-parallel group when the expert-TP size S is below T (the TP ranks at the same slot of their
 * expert-TP block of S, x the replicas): span tp x dp, stride S, T x D / S members.
 * An "ends" kind (mt_groups_add_ends) pairs the first and last coordinates of one dimension only:
 * the pipeline's first and last stage for tied embeddings; the ranks between are in no group of it.
 * A kind whose groups have fewer than 2 members has no groups (mt_group_count 0): a plan with a
 * dimension of size 1 builds none for it. All lookups O(MT_DIMS).
 */
#ifndef MT_EXTRAPOLATE_GROUP_H
#define MT_EXTRAPOLATE_GROUP_H

#include <stdint.h>

#include "extrapolate/mesh.h"

#define MT_GROUP_KINDS_MAX 8   /* sim/ packs a kind into 3 bits of an event argument */
#define MT_SUBGROUPS_MAX 3     /* block kinds of the DP span a traced program may add */

/* The standard kinds, first in every table. */
enum { MT_GROUP_TP = 0, MT_GROUP_DP = 1 };
typedef int mt_group_kind;

typedef struct mt_group_def {
    uint32_t dims;             /* MT_DIM_BIT of each spanned mesh dimension */
    int32_t block;             /* 0: a group is the whole span; > 1: blocks of this many slots */
    int32_t stride;            /* > 1: a group is the span's slots equal modulo stride (slot / stride its place) */
    int8_t ends;               /* 1: only the first and last coordinates of its one spanned dimension
                                * (Megatron's embedding group: the pipeline's first and last stage);
                                * ranks between belong to no group of the kind (mt_group_id -1) */
    char name[16];             /* "tp", "dp", "dp/8", "dp_shard" */
} mt_group_def;

typedef struct mt_groups {
    mt_mesh mesh;
    mt_group_def kind[MT_GROUP_KINDS_MAX];
    int32_t n_kinds;
    int32_t n_sub;             /* block kinds added by mt_groups_sub_kind */
} mt_groups;

/* A table over mesh m holding the standard kinds. */
void mt_groups_init(mt_groups *g, const mt_mesh *m);

/* The kind spanning `dims` in blocks of `block` (0: whole) named `name`, added when new; -1 when
 * the table is full. */
int mt_groups_add(mt_groups *g, uint32_t dims, int32_t block, const char *name);

/* The kind whose groups are the slots of the span of `dims` equal modulo `stride` (> 1, dividing the span),
 * added when new; -1 when the table is full. */
int mt_groups_add_strided(mt_groups *g, uint32_t dims, int32_t stride, const char *name);

/* The kind spanning the first and last coordinates of dimension d ("ends" groups of 2), added
 * when new; -1 when the table is full. */
int mt_groups_add_ends(mt_groups *g, mt_dim d, const char *name);

/* The kind of DP sub-groups of `size` consecutive replicas ("dp/size"), added when new; -1 when
 * MT_SUBGROUPS_MAX are in use or size does not divide D into groups of 2 or more ranks (the caller
 * then uses the DP group). */
int mt_groups_sub_kind(mt_groups *g, int32_t size);

/* Ranks in a group of `kind`, and how many groups of it the plan has (0 when a group would have
 * fewer than 2 ranks, or for an unknown kind). */
int32_t mt_group_size(const mt_groups *g, int kind);
int32_t mt_group_count(const mt_groups *g, int kind);
/* The group of `kind` holding GPU `rank`, and its place in it; -1 for a rank in none (ends kinds). */
int32_t mt_group_id(const mt_groups *g, int kind, int32_t rank);
int32_t mt_group_slot(const mt_groups *g, int kind, int32_t rank);
/* The global rank of the member at `slot` of the group of `kind` holding GPU `rank`. */
int32_t mt_group_member(const mt_groups *g, int kind, int32_t rank, int32_t slot);
/* The kind's name into buf ("tp", "dp", "dp/8"). */
const char *mt_group_kind_name(const mt_groups *g, int kind, char *buf, int len);
/* 1 when the kind spans mesh dimension d. */
int mt_group_spans(const mt_groups *g, int kind, mt_dim d);
/* 1 when every group of the kind lies inside one data-parallel replica (it spans neither
 * data-parallel dimension): tensor, context, pipeline... (sim/simulate.c folds its traffic). */
int mt_group_in_replica(const mt_groups *g, int kind);

#endif

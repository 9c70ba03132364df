/* extrapolate/group.h — the communication groups of a plan: who runs a collective with whom.
 *
 * Kinds: TP (the T ranks of one replica's stage), DP (the D replicas of one stage and TP rank),
 * and up to MT_SUBGROUPS_MAX sub-group kinds of the DP dimension: groups of `size` consecutive
 * replicas (d / size the same), for a traced job's collectives on groups smaller than the job (a
 * TorchRec reduce-scatter inside a node of 8 of 16 ranks, a pipeline's send/recv pairs). A
 * program lists the sub-group sizes it uses (mt_groups); every size divides D.
 * Member order: TP group (d, s) holds t = 0..T-1, DP group (s, t) holds d = 0..D-1, sub-group
 * (s, t, d / size) holds d = (d / size) x size + 0..size-1. All O(1).
 */
#ifndef MT_EXTRAPOLATE_GROUP_H
#define MT_EXTRAPOLATE_GROUP_H

#include <stdint.h>

#include "extrapolate/plan.h"

#define MT_SUBGROUPS_MAX 3

typedef enum {
    MT_GROUP_TP = 0,
    MT_GROUP_DP,
    MT_GROUP_SUB0,                                  /* sub-group kinds: MT_GROUP_SUB0 + j */
    MT_GROUP_KINDS = MT_GROUP_SUB0 + MT_SUBGROUPS_MAX
} mt_group_kind;

typedef struct mt_groups {
    int32_t sub_size[MT_SUBGROUPS_MAX];             /* ranks in sub-group kind j, 1 < size < D */
    int32_t n_sub;
} mt_groups;

/* The kind of sub-groups of `size` replicas, added to g when new; -1 when g is full or size does
 * not divide the plan's D into groups of 2 or more ranks (the caller then uses the DP group). */
int mt_groups_sub_kind(mt_groups *g, const mt_plan *pl, int32_t size);

/* Ranks in a group of `kind`, and how many groups of it the plan has (0 for an unused kind). */
int32_t mt_group_size(const mt_plan *pl, const mt_groups *g, int kind);
int32_t mt_group_count(const mt_plan *pl, const mt_groups *g, int kind);
/* The group of `kind` holding the GPU at (d, s, t), and its place in it. */
int32_t mt_group_id(const mt_plan *pl, const mt_groups *g, int kind, int32_t d, int32_t s, int32_t t);
int32_t mt_group_slot(const mt_plan *pl, const mt_groups *g, int kind, int32_t d, int32_t s, int32_t t);
/* The global rank of the member at `slot` of the group of `kind` holding (d, s, t). */
int32_t mt_group_member(const mt_plan *pl, const mt_groups *g, int kind, int32_t d, int32_t s, int32_t t,
                        int32_t slot);
/* "tp", "dp", "dp/8" (a sub-group of 8 replicas) into buf. */
const char *mt_group_kind_name(const mt_groups *g, int kind, char *buf, int len);

#endif

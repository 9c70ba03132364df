/* extrapolate/group.c — the communication groups of a plan (see group.h). */
#include "extrapolate/group.h"

#include <stdio.h>

int mt_groups_sub_kind(mt_groups *g, const mt_plan *pl, int32_t size) {
    if (size < 2 || size >= pl->dp || pl->dp % size) return -1;
    for (int32_t j = 0; j < g->n_sub; j++)
        if (g->sub_size[j] == size) return MT_GROUP_SUB0 + j;
    if (g->n_sub >= MT_SUBGROUPS_MAX) return -1;
    g->sub_size[g->n_sub] = size;
    return MT_GROUP_SUB0 + g->n_sub++;
}

int32_t mt_group_size(const mt_plan *pl, const mt_groups *g, int kind) {
    if (kind == MT_GROUP_TP) return pl->tp;
    if (kind == MT_GROUP_DP) return pl->dp;
    int j = kind - MT_GROUP_SUB0;
    return g && j >= 0 && j < g->n_sub ? g->sub_size[j] : 0;
}

int32_t mt_group_count(const mt_plan *pl, const mt_groups *g, int kind) {
    int32_t n = mt_group_size(pl, g, kind);
    if (n <= 0) return 0;
    return pl->gpus / n;
}

int32_t mt_group_id(const mt_plan *pl, const mt_groups *g, int kind, int32_t d, int32_t s, int32_t t) {
    if (kind == MT_GROUP_TP) return d * pl->pp + s;
    if (kind == MT_GROUP_DP) return s * pl->tp + t;
    int32_t n = mt_group_size(pl, g, kind);
    return (s * pl->tp + t) * (pl->dp / n) + d / n;
}

int32_t mt_group_slot(const mt_plan *pl, const mt_groups *g, int kind, int32_t d, int32_t s, int32_t t) {
    (void)s;
    if (kind == MT_GROUP_TP) return t;
    if (kind == MT_GROUP_DP) return d;
    return d % mt_group_size(pl, g, kind);
}

int32_t mt_group_member(const mt_plan *pl, const mt_groups *g, int kind, int32_t d, int32_t s, int32_t t,
                        int32_t slot) {
    if (kind == MT_GROUP_TP) return mt_plan_rank(pl, d, s, slot);
    if (kind == MT_GROUP_DP) return mt_plan_rank(pl, slot, s, t);
    int32_t n = mt_group_size(pl, g, kind);
    return mt_plan_rank(pl, d / n * n + slot, s, t);
}

const char *mt_group_kind_name(const mt_groups *g, int kind, char *buf, int len) {
    if (kind == MT_GROUP_TP) snprintf(buf, (size_t)len, "tp");
    else if (kind == MT_GROUP_DP) snprintf(buf, (size_t)len, "dp");
    else snprintf(buf, (size_t)len, "dp/%d", (int)mt_group_size(NULL, g, kind));
    return buf;
}

/* extrapolate/group.c — the group-kind table of a plan (see group.h). */
#include "extrapolate/group.h"

#include <stdio.h>
#include <string.h>

void mt_groups_init(mt_groups *g, const mt_mesh *m) {
    memset(g, 0, sizeof *g);
    g->mesh = *m;
    mt_groups_add(g, MT_DIM_BIT(MT_DIM_TP), 0, "tp");
    /* every replica of the dense model: with expert parallelism the EP ranks too (each routes its
     * own batch); ep has size 1 otherwise */
    mt_groups_add(g, MT_DIMS_DP | MT_DIM_BIT(MT_DIM_EP), 0, "dp");
}

int mt_groups_add(mt_groups *g, uint32_t dims, int32_t block, const char *name) {
    for (int k = 0; k < g->n_kinds; k++)
        if (g->kind[k].dims == dims && g->kind[k].block == block && !g->kind[k].stride && !g->kind[k].ends &&
            !strcmp(g->kind[k].name, name))
            return k;
    if (g->n_kinds >= MT_GROUP_KINDS_MAX) return -1;
    mt_group_def *d = &g->kind[g->n_kinds];
    memset(d, 0, sizeof *d);
    d->dims = dims;
    d->block = block;
    snprintf(d->name, sizeof d->name, "%s", name);
    return g->n_kinds++;
}

int mt_groups_add_strided(mt_groups *g, uint32_t dims, int32_t stride, const char *name) {
    for (int k = 0; k < g->n_kinds; k++)
        if (g->kind[k].dims == dims && g->kind[k].stride == stride && !strcmp(g->kind[k].name, name)) return k;
    if (g->n_kinds >= MT_GROUP_KINDS_MAX) return -1;
    mt_group_def *d = &g->kind[g->n_kinds];
    memset(d, 0, sizeof *d);
    d->dims = dims;
    d->stride = stride > 1 ? stride : 0;
    snprintf(d->name, sizeof d->name, "%s", name);
    return g->n_kinds++;
}

int mt_groups_add_ends(mt_groups *g, mt_dim d, const char *name) {
    for (int k = 0; k < g->n_kinds; k++)
        if (g->kind[k].dims == MT_DIM_BIT(d) && g->kind[k].ends && !strcmp(g->kind[k].name, name)) return k;
    if (g->n_kinds >= MT_GROUP_KINDS_MAX) return -1;
    mt_group_def *def = &g->kind[g->n_kinds];
    memset(def, 0, sizeof *def);
    def->dims = MT_DIM_BIT(d);
    def->ends = 1;
    snprintf(def->name, sizeof def->name, "%s", name);
    return g->n_kinds++;
}

/* The one dimension an ends kind spans. */
static int ends_dim(const mt_groups *g, int k) {
    for (int d = 0; d < MT_DIMS; d++)
        if (g->kind[k].dims & MT_DIM_BIT(d)) return d;
    return 0;
}

/* Members of the whole span of kind k (the full dimension for an ends kind). */
static int32_t full_span(const mt_groups *g, int k) {
    int32_t n = 1;
    for (int d = 0; d < MT_DIMS; d++)
        if (g->kind[k].dims & MT_DIM_BIT(d)) n *= g->mesh.size[d];
    return n;
}

int mt_groups_sub_kind(mt_groups *g, int32_t size) {
    int32_t D = g->mesh.size[MT_DIM_DP_SHARD] * g->mesh.size[MT_DIM_DP_REP];
    if (size < 2 || size >= D || D % size) return -1;
    char name[16];
    snprintf(name, sizeof name, "dp/%d", (int)size);
    for (int k = 0; k < g->n_kinds; k++)
        if (g->kind[k].dims == MT_DIMS_DP && g->kind[k].block == size && !strcmp(g->kind[k].name, name)) return k;
    if (g->n_sub >= MT_SUBGROUPS_MAX) return -1;
    int k = mt_groups_add(g, MT_DIMS_DP, size, name);
    if (k >= 0) g->n_sub++;
    return k;
}

static int32_t span_size(const mt_groups *g, int k) {
    int32_t n = full_span(g, k);
    return g->kind[k].ends && n > 2 ? 2 : n;
}

int32_t mt_group_size(const mt_groups *g, int kind) {
    if (!g || kind < 0 || kind >= g->n_kinds) return 0;
    if (g->kind[kind].stride > 1) return span_size(g, kind) / g->kind[kind].stride;
    return g->kind[kind].block > 0 ? g->kind[kind].block : span_size(g, kind);
}

int32_t mt_group_count(const mt_groups *g, int kind) {
    int32_t n = mt_group_size(g, kind);
    return n < 2 ? 0 : g->mesh.n / (g->kind[kind].ends ? full_span(g, kind) : n);
}

/* The slot of `rank` in the whole span of kind k, and the index of its coordinates outside it. */
static int32_t span_slot(const mt_groups *g, int k, int32_t rank, int32_t *outside) {
    mt_coords c;
    mt_mesh_coords(&g->mesh, rank, &c);
    int32_t slot = 0, in_mul = 1, out = 0, out_mul = 1;
    for (int d = 0; d < MT_DIMS; d++) {
        if (g->kind[k].dims & MT_DIM_BIT(d)) {
            slot += c.c[d] * in_mul;
            in_mul *= g->mesh.size[d];
        } else {
            out += c.c[d] * out_mul;
            out_mul *= g->mesh.size[d];
        }
    }
    if (outside) *outside = out;
    if (g->kind[k].ends) { /* 0 the first coordinate, 1 the last, -1 between */
        int32_t d = ends_dim(g, k), last = g->mesh.size[d] - 1;
        return c.c[d] == 0 ? 0 : c.c[d] == last ? 1 : -1;
    }
    return slot;
}

int32_t mt_group_id(const mt_groups *g, int kind, int32_t rank) {
    int32_t outside, slot = span_slot(g, kind, rank, &outside);
    if (slot < 0) return -1;
    int32_t st = g->kind[kind].stride;
    if (st > 1) return outside * st + slot % st;
    int32_t b = g->kind[kind].block;
    if (b <= 0) return outside;
    return outside * (span_size(g, kind) / b) + slot / b;
}

int32_t mt_group_slot(const mt_groups *g, int kind, int32_t rank) {
    int32_t slot = span_slot(g, kind, rank, NULL), b = g->kind[kind].block, st = g->kind[kind].stride;
    return st > 1 ? slot / st : b > 0 ? slot % b : slot;
}

int32_t mt_group_member(const mt_groups *g, int kind, int32_t rank, int32_t slot) {
    int32_t b = g->kind[kind].block;
    if (b > 0) slot += span_slot(g, kind, rank, NULL) / b * b;
    if (g->kind[kind].stride > 1) slot = slot * g->kind[kind].stride + span_slot(g, kind, rank, NULL) % g->kind[kind].stride;
    mt_coords c;
    mt_mesh_coords(&g->mesh, rank, &c);
    if (g->kind[kind].ends) {
        int32_t d = ends_dim(g, kind);
        c.c[d] = slot ? g->mesh.size[d] - 1 : 0;
        return mt_mesh_rank(&g->mesh, &c);
    }
    for (int d = 0; d < MT_DIMS; d++) {
        if (!(g->kind[kind].dims & MT_DIM_BIT(d))) continue;
        c.c[d] = slot % g->mesh.size[d];
        slot /= g->mesh.size[d];
    }
    return mt_mesh_rank(&g->mesh, &c);
}

const char *mt_group_kind_name(const mt_groups *g, int kind, char *buf, int len) {
    snprintf(buf, (size_t)len, "%s", g && kind >= 0 && kind < g->n_kinds ? g->kind[kind].name : "?");
    return buf;
}

int mt_group_spans(const mt_groups *g, int kind, mt_dim d) {
    return kind >= 0 && kind < g->n_kinds && (g->kind[kind].dims & MT_DIM_BIT(d)) != 0;
}

int mt_group_in_replica(const mt_groups *g, int kind) {
    return !mt_group_spans(g, kind, MT_DIM_DP_SHARD) && !mt_group_spans(g, kind, MT_DIM_DP_REP);
}

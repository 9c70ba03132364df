/* extrapolate/mesh.c — the device mesh of a plan (see mesh.h). */
#include "extrapolate/mesh.h"

#include <string.h>

/* One placement entry: its letter, its name, and the mesh dimensions it places (dp: two). */
static const struct {
    char letter;
    const char *name;
    int8_t dims[2];
    int8_t n;
} places[] = {
    {'t', "tp", {MT_DIM_TP, 0}, 1},
    {'c', "cp", {MT_DIM_CP, 0}, 1},
    {'e', "ep", {MT_DIM_EP, 0}, 1},
    {'p', "pp", {MT_DIM_PP, 0}, 1},
    {'d', "dp", {MT_DIM_DP_SHARD, MT_DIM_DP_REP}, 2},
};
enum { N_PLACES = (int)(sizeof places / sizeof places[0]) };

static const char *const dim_names[MT_DIMS] = {"tp", "cp", "ep", "pp", "dp_shard", "dp_rep"};

const char *mt_dim_name(mt_dim d) { return d >= 0 && d < MT_DIMS ? dim_names[d] : "?"; }

static int place_of_letter(char c) {
    for (int i = 0; i < N_PLACES; i++)
        if (places[i].letter == c) return i;
    return -1;
}

void mt_mesh_init(mt_mesh *m, int32_t dp, int32_t shard, int32_t tp, int32_t pp, int32_t cp, int32_t ep,
                  const char *placement) {
    memset(m, 0, sizeof *m);
    if (shard <= 0 || shard > dp || dp % shard) shard = dp;
    m->size[MT_DIM_TP] = tp > 0 ? tp : 1;
    m->size[MT_DIM_CP] = cp > 0 ? cp : 1;
    m->size[MT_DIM_EP] = ep > 0 ? ep : 1;
    m->size[MT_DIM_PP] = pp > 0 ? pp : 1;
    m->size[MT_DIM_DP_SHARD] = shard > 0 ? shard : 1;
    m->size[MT_DIM_DP_REP] = shard > 0 ? dp / shard : 1;
    /* the effective order: the placement's letters, c and e (when it leaves them out) right after
     * t, then whatever is still missing */
    char eff[4 * N_PLACES] = {0};
    const char *pl = placement ? placement : "";
    size_t e = 0;
    for (const char *c = pl; *c && e < (size_t)N_PLACES; c++) {
        eff[e++] = *c;
        if (*c == 't')
            for (const char *x = "ce"; *x; x++)
                if (!strchr(pl, *x)) eff[e++] = *x;
    }
    for (int i = 0; i < N_PLACES; i++) eff[e++] = places[i].letter;
    int used[N_PLACES] = {0}, k = 0;
    for (const char *c = eff; *c; c++) {
        int i = place_of_letter(*c);
        if (i < 0 || used[i]) continue;
        used[i] = 1;
        for (int j = 0; j < places[i].n; j++) m->order[k++] = places[i].dims[j];
    }
    int64_t stride = 1;
    for (int i = 0; i < MT_DIMS; i++) {
        m->stride[m->order[i]] = stride;
        stride *= m->size[m->order[i]];
    }
    m->n = (int32_t)stride;
}

int32_t mt_mesh_rank(const mt_mesh *m, const mt_coords *c) {
    int64_t r = 0;
    for (int d = 0; d < MT_DIMS; d++) r += c->c[d] * m->stride[d];
    return (int32_t)r;
}

void mt_mesh_coords(const mt_mesh *m, int32_t rank, mt_coords *c) {
    for (int d = 0; d < MT_DIMS; d++) c->c[d] = (int32_t)(rank / m->stride[d] % m->size[d]);
}

/* The place named by s[0..len) (a name, or one letter), -1 when none. */
static int place_of_name(const char *s, size_t len) {
    for (int i = 0; i < N_PLACES; i++)
        if ((len == 1 && s[0] == places[i].letter) || (strlen(places[i].name) == len && !strncmp(s, places[i].name, len)))
            return i;
    return -1;
}

mt_status mt_placement_parse(const char *s, char out[MT_PLACEMENT_MAX], mt_error *err) {
    int used[N_PLACES] = {0}, k = 0;
    int commas = strchr(s, ',') != NULL || strlen(s) == 2;
    const char *p = s;
    while (*p) {
        size_t len = commas ? strcspn(p, ",") : 1;
        int i = place_of_name(p, len);
        if (i < 0 || used[i])
            return mt_fail(err, MT_EINVAL,
                           "placement '%s': %s '%.*s' (give each of t, c, e, p, d at most once, innermost "
                           "first, as letters 'tpd' or names 'tp,pp,dp'; default tpd: TP ranks adjacent, then "
                           "stages, then replicas)", s, i < 0 ? "unknown dimension" : "repeated dimension",
                           (int)len, p);
        used[i] = 1;
        out[k++] = places[i].letter;
        p += len;
        if (commas && *p == ',') p++;
    }
    if (k == 0) return mt_fail(err, MT_EINVAL, "placement is empty (e.g. tpd or tp,pp,dp)");
    for (const char *x = "tpd"; *x; x++) /* the three of every plan, outermost when left out */
        if (!used[place_of_letter(*x)]) out[k++] = *x;
    out[k] = 0;
    return MT_OK;
}

/* extrapolate/sparseplans.c — see sparseplans.h. */
#include "extrapolate/sparseplans.h"

#include <stdlib.h>
#include <string.h>

#include "extrapolate/embtables.h"
#include "extrapolate/moe.h"
#include "util/vec.h"

static const struct {
    const char *name;
    unsigned bit;
} KINDS[] = {{"ep", MT_SPARSE_EP}, {"table", MT_SPARSE_TABLE}, {"row", MT_SPARSE_ROW}, {"column", MT_SPARSE_COLUMN}};

mt_status mt_sparse_parse(const char *s, unsigned *out, mt_error *err) {
    *out = 0;
    if (!strcmp(s, "auto")) *out = MT_SPARSE_AUTO;
    if (!strcmp(s, "auto") || !strcmp(s, "none")) return MT_OK;
    for (const char *p = s; *p;) {
        size_t len = strcspn(p, ","), k = 0;
        while (k < sizeof KINDS / sizeof KINDS[0] && (strlen(KINDS[k].name) != len || strncmp(p, KINDS[k].name, len))) k++;
        if (k == sizeof KINDS / sizeof KINDS[0])
            return mt_fail(err, MT_EINVAL, "--sparse-plans: unknown kind '%.*s' (use %s)", (int)len, p, MT_SPARSE_CHOICES);
        *out |= KINDS[k].bit;
        p += len;
        if (*p == ',') p++;
    }
    return MT_OK;
}

/* 1 when e divides every MoE layer's experts. */
static int divides_experts(const mt_moe *m, int32_t e) {
    for (int32_t k = 0; k < m->n_layers; k++)
        if (m->l[k].experts % e) return 0;
    return 1;
}

mt_status mt_sparse_expand(const mt_trace *t, unsigned kinds, mt_plan **plans, int32_t *n, mt_error *err) {
    mt_moe *m = NULL;
    MT_CHECK(mt_moe_find(t, &m, err));
    if (kinds & MT_SPARSE_AUTO)
        kinds = (m ? MT_SPARSE_EP : 0) | (mt_emb_bag_count(t) > 0 ? MT_SPARSE_TABLE | MT_SPARSE_ROW | MT_SPARSE_COLUMN : 0);
    int64_t cap = *n, count = *n;
    mt_plan *v = *plans;
    mt_status rc = MT_OK;
    for (int32_t i = 0; i < *n && rc == MT_OK; i++) {
        mt_plan p = v[i];
        if (p.dp < 2 || p.zero || p.fsdp || p.dp_mode != MT_DP_DDP || p.ep > 1 || p.emb_shard) continue;
        for (int32_t e = 2; e <= p.dp && rc == MT_OK; e++) {
            int want = e <= 1 << 20 && (kinds & MT_SPARSE_EP) && m && p.dp % e == 0 && divides_experts(m, e);
            if (!want) continue;
            if (mt_vec_reserve(&v, &cap, count + 1)) rc = mt_fail(err, MT_ENOMEM, "out of memory listing plans");
            else v[count++] = p, v[count - 1].dp = p.dp / e, v[count - 1].ep = e;
        }
        for (int32_t s = MT_EMB_TABLE; s <= MT_EMB_COLUMN && rc == MT_OK; s++) {
            if (!(kinds & (MT_SPARSE_TABLE << (s - MT_EMB_TABLE)))) continue;
            if (mt_vec_reserve(&v, &cap, count + 1)) rc = mt_fail(err, MT_ENOMEM, "out of memory listing plans");
            else v[count++] = p, v[count - 1].emb_shard = s;
        }
    }
    mt_moe_free(m);
    *plans = v;
    *n = (int32_t)count;
    return rc;
}

/* extrapolate/planlist.c — see planlist.h. */
#include "extrapolate/planlist.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"
#include "util/vec.h"

/* The size fields of a plan: name=N with N in 1..2^20. dp= and ddp= also set the mode. */
static const struct {
    const char *name;
    size_t offset;
} SIZE_FIELDS[] = {
    {"dp", offsetof(mt_plan, dp)}, {"ddp", offsetof(mt_plan, dp)}, {"tp", offsetof(mt_plan, tp)},
    {"pp", offsetof(mt_plan, pp)}, {"mb", offsetof(mt_plan, micro_batches)},
    {"zero", offsetof(mt_plan, zero)}, {"fsdp_shard", offsetof(mt_plan, fsdp_shard)}, {"ep", offsetof(mt_plan, ep)},
    {"etp", offsetof(mt_plan, etp)}, {"vpp", offsetof(mt_plan, vpp)}, {"cp", offsetof(mt_plan, cp)},
};

static const char *const EMB_NAMES[] = {"none", "table", "row", "column"}; /* MT_EMB_* */

/* The data-parallel modes of auto, in listing order. */
static const struct {
    const char *name;
    unsigned bit;
    mt_dp_mode mode;
    int32_t zero, fsdp, dist_opt;
} DP_MODES[] = {
    {"ddp", MT_DPM_DDP, MT_DP_DDP, 0, 0, 0},     {"dp", MT_DPM_DP, MT_DP_SYNC, 0, 0, 0},
    {"zero1", MT_DPM_ZERO1, MT_DP_DDP, 1, 0, 0}, {"zero2", MT_DPM_ZERO2, MT_DP_DDP, 2, 0, 0},
    {"zero3", MT_DPM_ZERO3, MT_DP_DDP, 3, 0, 0}, {"fsdp", MT_DPM_FSDP, MT_DP_DDP, 0, 1, 0},
    {"distopt", MT_DPM_DISTOPT, MT_DP_DDP, 0, 0, 1},
};
enum { N_DP_MODES = (int)(sizeof DP_MODES / sizeof DP_MODES[0]) };

mt_status mt_dp_modes_parse(const char *s, unsigned *out, mt_error *err) {
    *out = 0;
    if (!strcmp(s, "all")) {
        *out = MT_DPM_ALL;
        return MT_OK;
    }
    for (const char *p = s; *p;) {
        size_t len = strcspn(p, ",");
        int k = 0;
        while (k < N_DP_MODES && (strlen(DP_MODES[k].name) != len || strncmp(p, DP_MODES[k].name, len))) k++;
        if (k == N_DP_MODES)
            return mt_fail(err, MT_EINVAL, "--dp-modes: unknown mode '%.*s' (use %s)", (int)len, p, MT_DP_MODES_CHOICES);
        *out |= DP_MODES[k].bit;
        p += len;
        if (*p == ',') p++;
    }
    if (!*out) return mt_fail(err, MT_EINVAL, "--dp-modes is empty (use %s)", MT_DP_MODES_CHOICES);
    return MT_OK;
}

static mt_status parse_size(const char *field, const char *v, int32_t *out, mt_error *err) {
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 1 || n > (1 << 20))
        return mt_fail(err, MT_EINVAL, "--plans %s= needs an integer in 1..%d (got '%s')", field, 1 << 20, v);
    *out = (int32_t)n;
    return MT_OK;
}

/* One field of a plan ("tp=2", "gpipe") into p. */
static mt_status parse_field(char *field, mt_plan *p, const char *plan_text, mt_error *err) {
    char *v = strchr(field, '=');
    if (v) *v++ = '\0';
    if (!v) {
        if (!strcmp(field, "gpipe") || !strcmp(field, "1f1b")) return mt_pp_schedule_parse(field, &p->schedule, err);
        if (!strcmp(field, "single")) {
            p->gpus = p->dp = p->tp = p->pp = 1;
            return MT_OK;
        }
        if (!strcmp(field, "default")) return MT_OK;
        if (!strcmp(field, "fsdp") || !strcmp(field, "sp") || !strcmp(field, "distopt")) {
            *(field[0] == 'f' ? &p->fsdp : field[0] == 's' ? &p->sp : &p->dist_opt) = 1;
            return MT_OK;
        }
        return mt_fail(err, MT_EINVAL,
                       "--plans: '%s' in plan '%s' is not a field (use dp=, ddp=, tp=, pp=, mb=, "
                       "schedule=, vpp=, recompute=, placement=, bucket=, algo=, zero=, fsdp, fsdp_shard=, distopt, cp=, sp, single or default)", field, plan_text);
    }
    for (size_t k = 0; k < sizeof SIZE_FIELDS / sizeof SIZE_FIELDS[0]; k++) {
        if (strcmp(field, SIZE_FIELDS[k].name)) continue;
        MT_CHECK(parse_size(field, v, (int32_t *)((char *)p + SIZE_FIELDS[k].offset), err));
        if (!strcmp(field, "dp") || !strcmp(field, "ddp")) p->dp_mode = field[1] == 'd' ? MT_DP_DDP : MT_DP_SYNC;
        return MT_OK;
    }
    if (!strcmp(field, "schedule")) return mt_pp_schedule_parse(v, &p->schedule, err);
    if (!strcmp(field, "recompute") && mt_recompute_spec_parse(v, p, err) != MT_OK)
        return mt_error_prefix(err, "--plans: plan '%s'", plan_text);
    if (!strcmp(field, "recompute")) return MT_OK;
    if (!strcmp(field, "placement")) return mt_placement_parse(v, p->placement, err);
    if (!strcmp(field, "algo")) return mt_coll_plan_algo_parse(v, &p->algo, err);
    if (!strcmp(field, "emb")) {
        for (int k = 0; k <= MT_EMB_COLUMN; k++)
            if (!strcmp(v, EMB_NAMES[k])) {
                p->emb_shard = k;
                return MT_OK;
            }
        return mt_fail(err, MT_EINVAL, "--plans: emb=%s in plan '%s' needs table, row, column or none", v, plan_text);
    }
    if (!strcmp(field, "bucket")) {
        if (mt_parse_bytes(v, &p->bucket_bytes, err) != MT_OK || p->bucket_bytes <= 0)
            return mt_fail(err, MT_EINVAL, "--plans: bucket=%s in plan '%s' needs a size such as 25MiB", v,
                           plan_text);
        return MT_OK;
    }
    return mt_fail(err, MT_EINVAL,
                   "--plans: unknown field '%s=' in plan '%s' (use dp, ddp, tp, pp, mb, schedule, vpp, "
                   "recompute, placement, bucket, algo, zero, fsdp_shard, cp, ep, etp or emb)", field, plan_text);
}

mt_status mt_planlist_parse(const char *text, const mt_plan *base, mt_plan **out, int32_t *n, mt_error *err) {
    *out = NULL;
    *n = 0;
    size_t len = strlen(text);
    char *buf = malloc(len + 1), *plan_text = malloc(len + 1);
    mt_plan *v = NULL;
    int64_t cap = 0, count = 0;
    mt_status rc = MT_OK;
    if (!buf || !plan_text) {
        rc = mt_fail(err, MT_ENOMEM, "out of memory reading --plans");
        goto done;
    }
    memcpy(buf, text, len + 1);
    /* strtok_r would pass over an empty item: "ddp=4,,tp=4" or "ddp=4::zero=2" is a typo, refused */
    if (text[0] == ',' || (len && text[len - 1] == ',') || strstr(text, ",,") || strstr(text, "::") ||
        text[0] == ':' || strstr(text, ",:") || strstr(text, ":,") || (len && text[len - 1] == ':')) {
        rc = mt_fail(err, MT_EINVAL, "--plans '%s' has an empty plan or field (plans are separated by ',', "
                     "fields by ':', e.g. ddp=8,tp=2:ddp=4)", text);
        goto done;
    }
    char *save_plan = NULL;
    for (char *pl = strtok_r(buf, ",", &save_plan); pl && rc == MT_OK; pl = strtok_r(NULL, ",", &save_plan)) {
        snprintf(plan_text, len + 1, "%s", pl);
        if (mt_vec_reserve(&v, &cap, count + 1)) {
            rc = mt_fail(err, MT_ENOMEM, "out of memory reading --plans");
            break;
        }
        mt_plan p = *base;
        p.dp = p.tp = p.pp = p.micro_batches = 0;
        char *save_field = NULL;
        for (char *fl = strtok_r(pl, ":", &save_field); fl && rc == MT_OK; fl = strtok_r(NULL, ":", &save_field)) {
            char joined[128]; /* recompute=every:K and recompute=ops:save=... hold the field separator */
            if (!strcmp(fl, "recompute=every") || !strcmp(fl, "recompute=ops")) {
                const char *rest = strtok_r(NULL, ":", &save_field);
                snprintf(joined, sizeof joined, "%s:%s", fl, rest ? rest : "");
                fl = joined;
            }
            rc = parse_field(fl, &p, plan_text, err);
        }
        v[count++] = p;
    }
    if (rc == MT_OK && count == 0)
        rc = mt_fail(err, MT_EINVAL, "--plans is empty (give auto or a list such as ddp=8,tp=2:ddp=4)");
done:
    free(buf);
    free(plan_text);
    if (rc != MT_OK) {
        free(v);
        return rc;
    }
    *out = v;
    *n = (int32_t)count;
    return MT_OK;
}

mt_status mt_planlist_auto(const mt_plan *base, int fixed_mode, int fixed_schedule, unsigned modes, mt_plan **out,
                           int32_t *n, mt_error *err) {
    if (!modes) modes = MT_DPM_DDP | MT_DPM_DP;
    if (base->zero || base->fsdp || base->dist_opt) fixed_mode = 1;
    *out = NULL;
    *n = 0;
    int32_t N = base->gpus;
    mt_plan *v = NULL;
    int64_t cap = 0, count = 0;
    for (int32_t d = 1; d <= N; d++) {
        if (N % d || (base->dp && base->dp != d)) continue;
        for (int32_t t = 1; t <= N / d; t++) {
            if ((N / d) % t || (base->tp && base->tp != t)) continue;
            int32_t pp = N / d / t;
            if (base->pp && base->pp != pp) continue;
            int64_t replica = base->global_batch > 0 ? base->global_batch / d : 0;
            int32_t mbs[3] = {0}, n_mb = 0;
            if (pp == 1) {
                mbs[n_mb++] = 1;
            } else if (base->micro_batches) {
                mbs[n_mb++] = base->micro_batches;
            } else {
                for (int32_t k = 1; k <= 4; k *= 2)
                    if (!replica || (pp * k <= replica && replica % (pp * k) == 0)) mbs[n_mb++] = pp * k;
                if (n_mb == 0) mbs[n_mb++] = 0; /* none divides: simulate's default count */
            }
            int only = d == 1 || fixed_mode; /* one plan: base's mode */
            for (int mode = 0; mode < N_DP_MODES; mode++) {
                if (only ? mode > 0 : !(modes & DP_MODES[mode].bit)) continue;
                for (int sch = 0; sch < 2; sch++) {
                    if (sch && (pp == 1 || fixed_schedule)) break;
                    for (int32_t m = 0; m < n_mb; m++) {
                        if (mt_vec_reserve(&v, &cap, count + 1)) {
                            free(v);
                            return mt_fail(err, MT_ENOMEM, "out of memory listing plans");
                        }
                        mt_plan p = *base;
                        p.dp = d, p.tp = t, p.pp = pp, p.micro_batches = mbs[m];
                        p.sp = t > 1 ? base->sp : 0; /* --sp applies to the tensor-parallel plans */
                        if (!only) {
                            p.dp_mode = DP_MODES[mode].mode;
                            p.zero = DP_MODES[mode].zero;
                            p.fsdp = DP_MODES[mode].fsdp;
                            p.dist_opt = DP_MODES[mode].dist_opt;
                        }
                        if (!fixed_schedule) p.schedule = sch ? MT_PP_GPIPE : MT_PP_1F1B;
                        v[count++] = p;
                    }
                }
            }
        }
    }
    if (count == 0)
        return mt_fail(err, MT_EINVAL, "no plan of %d GPUs has the sizes given (dp=%d tp=%d pp=%d); drop "
                                       "--dp/--tp/--pp or change --gpus", N, base->dp, base->tp, base->pp);
    *out = v;
    *n = (int32_t)count;
    return MT_OK;
}

mt_status mt_recompute_modes_parse(const char *s, unsigned *out, mt_error *err) {
    *out = 0;
    if (!strcmp(s, "all")) {
        *out = MT_RCM_ALL;
        return MT_OK;
    }
    for (const char *p = s; *p;) {
        size_t len = strcspn(p, ",");
        char one[16];
        snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1), p);
        mt_recompute r;
        mt_error e = {0};
        if (len >= sizeof one || mt_recompute_parse(one, &r, &e) != MT_OK)
            return mt_fail(err, MT_EINVAL, "--recompute-modes: unknown mode '%.*s' (use %s)", (int)len, p,
                           MT_RECOMPUTE_MODES_CHOICES);
        *out |= 1u << r;
        p += len;
        if (*p == ',') p++;
    }
    if (!*out) return mt_fail(err, MT_EINVAL, "--recompute-modes is empty (use %s)", MT_RECOMPUTE_MODES_CHOICES);
    return MT_OK;
}

mt_status mt_size_list_parse(const char *flag, const char *s, int32_t *vals, int32_t *n, mt_error *err) {
    *n = 0;
    for (const char *p = s; *p;) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || v < 1 || v > 1024 || *n >= MT_VPP_LIST_MAX)
            return mt_fail(err, MT_EINVAL, "%s needs up to %d integers in 1..1024 separated by ',' (got '%s')", flag,
                           MT_VPP_LIST_MAX, s);
        vals[(*n)++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) return mt_fail(err, MT_EINVAL, "%s is empty (give sizes such as 1,2,4)", flag);
    return MT_OK;
}

mt_status mt_vpp_list_parse(const char *s, int32_t *vpps, int32_t *n, mt_error *err) {
    return mt_size_list_parse("--vpp-sizes", s, vpps, n, err);
}

mt_status mt_sp_modes_parse(const char *s, unsigned *out, mt_error *err) {
    *out = !strcmp(s, "off") ? MT_SPM_OFF : !strcmp(s, "on") ? MT_SPM_ON : !strcmp(s, "all") ? MT_SPM_ALL : 0;
    if (!*out) return mt_fail(err, MT_EINVAL, "--sp-modes needs off, on or all (got '%s')", s);
    return MT_OK;
}

mt_status mt_planlist_expand_seq(const mt_plan *in, int32_t n, const int32_t *cps, int32_t n_cps, unsigned sp_modes,
                                 mt_plan **out, int32_t *n_out, mt_error *err) {
    mt_plan *v = NULL;
    int64_t cap = 0, count = 0;
    for (int32_t i = 0; i < n; i++)
        for (int32_t k = 0; k < (n_cps > 0 ? n_cps : 1); k++) {
            int32_t C = n_cps > 0 ? cps[k] : in[i].cp;
            if (C > 1 && (in[i].dp < C || in[i].dp % C)) continue; /* the C ranks come out of dp */
            for (int sp = 0; sp <= 1; sp++) {
                if (sp_modes ? !(sp_modes & (sp ? MT_SPM_ON : MT_SPM_OFF)) : sp != (in[i].sp != 0)) continue;
                if (sp && in[i].tp <= 1) continue;
                if (mt_vec_reserve(&v, &cap, count + 1)) {
                    free(v);
                    return mt_fail(err, MT_ENOMEM, "out of memory listing plans");
                }
                v[count] = in[i];
                if (C != in[i].cp) v[count].dp = in[i].dp / C;
                v[count].cp = C > 0 ? C : 1;
                v[count].sp = sp;
                count++;
            }
        }
    *out = v;
    *n_out = (int32_t)count;
    return MT_OK;
}

mt_status mt_planlist_expand(const mt_plan *in, int32_t n, unsigned modes, const int32_t *vpps, int32_t n_vpps,
                             mt_plan **out, int32_t *n_out, mt_error *err) {
    mt_plan *v = NULL;
    int64_t cap = 0, count = 0;
    for (int32_t i = 0; i < n; i++) {
        int pipelined = in[i].pp > 1 && in[i].schedule == MT_PP_1F1B;
        for (int32_t k = 0; k < (n_vpps > 0 && pipelined ? n_vpps : 1); k++) {
            int32_t V = !pipelined ? 0 : n_vpps > 0 ? vpps[k] : in[i].vpp;
            if (V > 1 && in[i].micro_batches > 0 && in[i].micro_batches % in[i].pp) continue;
            for (int r = 0; r <= MT_RECOMPUTE_FULL; r++) {
                if (modes ? !(modes & (1u << r)) : r > 0) continue;
                if (mt_vec_reserve(&v, &cap, count + 1)) {
                    free(v);
                    return mt_fail(err, MT_ENOMEM, "out of memory listing plans");
                }
                v[count] = in[i];
                v[count].vpp = V;
                if (modes) v[count].recompute = (mt_recompute)r;
                count++;
            }
        }
    }
    *out = v;
    *n_out = (int32_t)count;
    return MT_OK;
}

void mt_planlist_label(const mt_plan *p, char *buf, size_t len) {
    mt_plan def;
    mt_plan_init(&def);
    size_t at = 0;
    buf[0] = '\0';
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (at < len) at += (size_t)snprintf(buf + at, len - at, "%s", at ? ":" : "");            \
        if (at < len) at += (size_t)snprintf(buf + at, len - at, __VA_ARGS__);                     \
    } while (0)
    /* the mode shows with one replica too when context parallelism still reduces gradients over cp */
    if (p->dp > 1 || (p->dp == 1 && p->cp > 1 && p->dp_mode == MT_DP_SYNC))
        ADD("%s=%d", mt_dp_mode_name(p->dp_mode), p->dp);
    if (p->zero > 0) ADD("zero=%d", p->zero);
    if (p->fsdp) ADD("fsdp");
    if (p->fsdp && p->fsdp_shard > 0) ADD("fsdp_shard=%d", p->fsdp_shard);
    if (p->dist_opt) ADD("distopt");
    if (p->tp > 1) ADD("tp=%d", p->tp);
    if (p->tp > 1 && p->sp) ADD("sp");
    if (p->cp > 1) ADD("cp=%d", p->cp);
    if (p->ep > 1) ADD("ep=%d", p->ep);
    if (p->ep > 1 && mt_plan_etp(p) != p->tp) ADD("etp=%d", mt_plan_etp(p));
    if (p->emb_shard > 0 && p->emb_shard <= MT_EMB_COLUMN) ADD("emb=%s", EMB_NAMES[p->emb_shard]);
    if (p->pp > 1) ADD("pp=%d", p->pp);
    if (p->micro_batches > 1 || (p->pp > 1 && p->micro_batches > 0)) ADD("mb=%d", p->micro_batches);
    if (p->pp > 1) ADD("schedule=%s", mt_pp_schedule_name(p->schedule));
    if (p->vpp > 1) ADD("vpp=%d", p->vpp);
    if (p->recompute != MT_RECOMPUTE_NONE) ADD("recompute=%s", mt_recompute_label(p, (char[48]){0}, 48));
    if (at == 0) ADD(p->dp || p->tp || p->pp ? "single" : "default");
    if (strcmp(p->placement, def.placement)) ADD("placement=%s", p->placement);
    if (p->algo != def.algo) ADD("algo=%s", mt_coll_algo_name(p->algo));
    if (p->bucket_bytes != def.bucket_bytes) {
        double mib = p->bucket_bytes / (1024.0 * 1024.0);
        if (mib == floor(mib)) ADD("bucket=%.0fMiB", mib);
        else ADD("bucket=%.0f", p->bucket_bytes);
    }
#undef ADD
}

json_t *mt_planlist_json(const mt_plan *pl) {
    json_t *plan = json_object();
    json_object_set_new(plan, "gpus", json_integer(pl->gpus));
    json_object_set_new(plan, "dp", json_integer(mt_plan_shown_dp(pl)));
    json_object_set_new(plan, "tp", json_integer(mt_plan_shown_tp(pl)));
    if (pl->traced_tp) json_object_set_new(plan, "traced_tp", json_true());
    json_object_set_new(plan, "pp", json_integer(mt_plan_shown_pp(pl)));
    if (pl->traced_pp) json_object_set_new(plan, "traced_pp", json_true());
    json_object_set_new(plan, "sp", json_boolean(pl->sp));
    json_object_set_new(plan, "cp", json_integer(pl->cp));
    json_object_set_new(plan, "dp_mode", json_string(mt_dp_mode_name(pl->dp_mode)));
    json_object_set_new(plan, "comm", json_string(mt_comm_mode_name(pl->comm)));
    json_object_set_new(plan, "schedule", json_string(mt_pp_schedule_name(pl->schedule)));
    if (pl->zero) json_object_set_new(plan, "zero", json_integer(pl->zero));
    if (pl->fsdp) json_object_set_new(plan, "fsdp", json_true());
    if (pl->fsdp_shard) json_object_set_new(plan, "fsdp_shard", json_integer(pl->fsdp_shard));
    if (pl->dist_opt) json_object_set_new(plan, "dist_opt", json_true());
    int32_t k = mt_plan_unit_blocks(pl);
    if (k) {
        char units[24];
        if (k == MT_UNITS_LAYER) snprintf(units, sizeof units, "layer");
        else if (k == 1) snprintf(units, sizeof units, "block");
        else snprintf(units, sizeof units, "%d", (int)k);
        json_object_set_new(plan, "fsdp_units", json_string(units));
        json_object_set_new(plan, "fsdp_prefetch", json_integer(mt_plan_prefetch(pl)));
        json_object_set_new(plan, "fsdp_reshard", json_string(mt_reshard_name(pl->reshard)));
    }
    if (pl->ep > 1) json_object_set_new(plan, "ep", json_integer(pl->ep));
    if (pl->ep > 1) json_object_set_new(plan, "etp", json_integer(mt_plan_etp(pl)));
    if (pl->emb_shard > 0 && pl->emb_shard <= MT_EMB_COLUMN)
        json_object_set_new(plan, "embedding_shard", json_string(EMB_NAMES[pl->emb_shard]));
    if (pl->expert_skew >= 0) json_object_set_new(plan, "expert_skew", json_real(pl->expert_skew));
    json_object_set_new(plan, "micro_batches", json_integer(mt_plan_shown_micro(pl)));
    json_object_set_new(plan, "vpp", json_integer(pl->vpp > 1 ? pl->vpp : 1));
    json_object_set_new(plan, "recompute", json_string(mt_recompute_label(pl, (char[48]){0}, 48)));
    json_object_set_new(plan, "bucket_bytes", json_real(pl->bucket_bytes));
    json_object_set_new(plan, "first_bucket_bytes", json_real(pl->first_bucket_bytes));
    json_object_set_new(plan, "placement", json_string(pl->placement));
    json_object_set_new(plan, "algo", json_string(mt_coll_algo_name(pl->algo)));
    json_object_set_new(plan, "global_batch", json_integer(pl->global_batch));
    json_object_set_new(plan, "replica_batch", json_integer(pl->replica_batch));
    json_object_set_new(plan, "micro_batch", json_integer(pl->micro_batch));
    json_object_set_new(plan, "batch_factor", json_real(pl->batch_factor));
    return plan;
}

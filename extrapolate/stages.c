/* extrapolate/stages.c — the pipeline partitioner (see stages.h). */
#include "extrapolate/stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"

static int role_of(const mt_trace *t, const trace_tref *r) {
    return r->tensor >= 0 && r->tensor < t->n_tensors ? (int)t->tensors[r->tensor].role : -1;
}

static int touches_params(const mt_trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->in_count + o->out_count; j++) {
        int r = role_of(t, &t->trefs[o->in_first + j]);
        if (r == TRACE_ROLE_WEIGHT || r == TRACE_ROLE_GRADIENT || r == TRACE_ROLE_OPTSTATE) return 1;
    }
    return 0;
}

/* Optimizer work per unit: the optimizer's ops and the parameter-sized ops after the first forward
 * op, shared by the weight bytes each unit reads first. */
static mt_status add_optimizer(const mt_trace *t, const int32_t *unit, int32_t U, double *cost) {
    double *wb = calloc((size_t)U, sizeof *wb), all = 0, opt_ns = 0;
    unsigned char *seen = calloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1), 1);
    if (!wb || !seen) {
        free(wb);
        free(seen);
        return MT_ENOMEM;
    }
    int32_t first_fwd = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase == TRACE_PHASE_FORWARD && first_fwd < 0) first_fwd = i;
        if (trace_op_is_comm(o)) continue;
        if (o->phase == TRACE_PHASE_OPTIMIZER || (o->phase == TRACE_PHASE_OTHER && first_fwd >= 0 && touches_params(t, o)))
            opt_ns += (double)o->dev_ns;
        if (o->phase != TRACE_PHASE_FORWARD || unit[i] < 0 || unit[i] >= U) continue;
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t w = t->trefs[o->in_first + j].tensor;
            if (w < 0 || w >= t->n_tensors || seen[w] || t->tensors[w].role != TRACE_ROLE_WEIGHT) continue;
            seen[w] = 1;
            wb[unit[i]] += t->tensors[w].bytes;
            all += t->tensors[w].bytes;
        }
    }
    for (int32_t u = 0; all > 0 && u < U; u++) cost[u] += opt_ns * wb[u] / all;
    free(wb);
    free(seen);
    return MT_OK;
}

/* cross[u], u < U - 1: the activation tensors made in units <= u and read in forward after u;
 * xbytes[u] (when not NULL) their bytes. */
static mt_status crossings(const mt_trace *t, const int32_t *unit, int32_t U, int32_t *cross, double *xbytes) {
    int32_t *last = malloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1) * sizeof *last);
    if (!last) return MT_ENOMEM;
    for (int32_t x = 0; x < t->n_tensors; x++) last[x] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD || unit[i] < 0) continue;
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t x = t->trefs[o->in_first + j].tensor;
            if (x >= 0 && x < t->n_tensors && unit[i] > last[x]) last[x] = unit[i];
        }
    }
    for (int32_t u = 0; u <= U; u++) {
        cross[u] = 0;
        if (xbytes) xbytes[u] = 0;
    }
    for (int32_t x = 0; x < t->n_tensors; x++) { /* +1 from its unit, -1 from its last reader's */
        const trace_tensor *tt = &t->tensors[x];
        int32_t f = tt->first_op;
        if (tt->role != TRACE_ROLE_ACTIVATION || f < 0 || f >= t->n_ops || t->ops[f].phase != TRACE_PHASE_FORWARD ||
            unit[f] < 0 || last[x] <= unit[f] || last[x] >= U)
            continue;
        cross[unit[f]]++;
        cross[last[x]]--;
        if (xbytes) {
            xbytes[unit[f]] += (double)tt->bytes;
            xbytes[last[x]] -= (double)tt->bytes;
        }
    }
    for (int32_t u = 1; u < U; u++) {
        cross[u] += cross[u - 1];
        if (xbytes) xbytes[u] += xbytes[u - 1];
    }
    free(last);
    return MT_OK;
}

/* Cuts n items of cost c into P contiguous groups (group[k]) minimising the largest group. */
static void partition(const double *c, int32_t n, int32_t P, int32_t *group) {
    double lo = 0, hi = 0;
    for (int32_t k = 0; k < n; k++) {
        hi += c[k];
        if (c[k] > lo) lo = c[k];
    }
    for (int it = 0; it < 100 && hi - lo > 0.5; it++) {
        double mid = (lo + hi) / 2, acc = 0;
        int32_t used = 1;
        for (int32_t k = 0; k < n; k++) {
            if (acc + c[k] > mid && acc > 0) {
                used++;
                acc = 0;
            }
            acc += c[k];
        }
        if (used <= P) hi = mid;
        else lo = mid;
    }
    /* cut with bound hi, keeping at least one item for every remaining group (every cost >= 1,
     * so acc > 0 means the group is not empty) */
    int32_t s = 0;
    double acc = 0;
    for (int32_t k = 0; k < n; k++) {
        if (acc > 0 && s < P - 1 && (acc + c[k] > hi || n - k <= P - 1 - s)) {
            s++;
            acc = 0;
        }
        group[k] = s;
        acc += c[k];
    }
}

/* The largest group's cost of a grouping (group[u] nondecreasing, 0 .. P-1). */
static double max_group(const double *c, const int32_t *group, int32_t n, int32_t P) {
    double worst = 0, acc = 0;
    for (int32_t k = 0; k < n; k++) {
        acc += c[k];
        if (k == n - 1 || group[k + 1] != group[k]) {
            if (acc > worst) worst = acc;
            acc = 0;
        }
    }
    (void)P;
    return worst;
}

/* The time-balanced cut (partition) moved towards clean cut points without making any group heavier
 * than its heaviest: groups chosen left to right, each ending at the unit e (it keeps at least a unit
 * for every later group, its cost stays within the bound, and the rest still fits the remaining
 * groups under the bound: need[e + 1], the fewest groups of the rest, from a greedy fill from the
 * right) with the fewest tensors crossing after it, then the cost nearest an even share of what
 * remains. O(n P). */
static mt_status cut_refined(const double *c, const int32_t *cross, int32_t n, int32_t P, int32_t *group) {
    partition(c, n, P, group);
    double bound = max_group(c, group, n, P) + 0.5;
    int32_t *need = malloc((size_t)(n + 1) * sizeof *need), *alt = malloc((size_t)n * sizeof *alt);
    double *pre = malloc((size_t)(n + 1) * sizeof *pre);
    if (!need || !alt || !pre) {
        free(need);
        free(alt);
        free(pre);
        return MT_ENOMEM;
    }
    pre[0] = 0;
    for (int32_t k = 0; k < n; k++) pre[k + 1] = pre[k] + c[k];
    need[n] = 0;
    double acc = 0;
    for (int32_t k = n - 1, g = 0; k >= 0; k--) {
        if (acc > 0 && acc + c[k] > bound) {
            g++;
            acc = 0;
        }
        acc += c[k];
        need[k] = g + 1;
    }
    int ok = 1;
    for (int32_t s = 0, a = 0; ok && s < P; s++) {
        int32_t rest = P - s - 1, best = -1;
        double even = (pre[n] - pre[a]) / (P - s);
        for (int32_t e = a; e <= n - 1 - rest && pre[e + 1] - pre[a] <= bound; e++) {
            if (need[e + 1] > rest || (rest == 0 && e != n - 1)) continue;
            if (best < 0) {
                best = e;
                continue;
            }
            int32_t ce = e < n - 1 ? cross[e] : 0, cb = best < n - 1 ? cross[best] : 0;
            double de = pre[e + 1] - pre[a] - even, db = pre[best + 1] - pre[a] - even;
            if (ce < cb || (ce == cb && de * de < db * db)) best = e;
        }
        if (best < 0) ok = 0;
        for (int32_t u = a; ok && u <= best; u++) alt[u] = s;
        a = best + 1;
    }
    if (ok) memcpy(group, alt, (size_t)n * sizeof *group);
    free(need);
    free(alt);
    free(pre);
    return MT_OK;
}

/* The largest stage's cost when chunk k (group[u] of each unit) runs on stage k mod P. */
static double max_stage(const double *cost, const int32_t *group, int32_t U, int32_t P, double *acc) {
    double worst = 0;
    for (int32_t s = 0; s < P; s++) acc[s] = 0;
    for (int32_t u = 0; u < U; u++) acc[group[u] % P] += cost[u];
    for (int32_t s = 0; s < P; s++)
        if (acc[s] > worst) worst = acc[s];
    return worst;
}

/* Sum of squared stage costs (acc from max_stage): lower is more even. */
static double spread(const double *acc, int32_t P) {
    double q = 0;
    for (int32_t s = 0; s < P; s++) q += acc[s] * acc[s];
    return q;
}

/* Interleaved (V > 1): the chunk boundaries of `group` moved one unit at a time while that makes the
 * busiest stage lighter, or as busy with the stages more even: at most 64 passes over the boundaries,
 * each move evaluated in O(U). */
static void balance_stages(const double *cost, int32_t U, int32_t P, int32_t *group, double *acc) {
    double best = max_stage(cost, group, U, P, acc), best_q = spread(acc, P);
    for (int pass = 0, moved = 1; pass < 64 && moved; pass++) {
        moved = 0;
        for (int32_t u = 1; u < U; u++) {
            if (group[u] == group[u - 1]) continue; /* u starts a chunk */
            for (int d = -1; d <= 1; d += 2) {
                int32_t v = d < 0 ? u - 1 : u; /* the unit that changes chunk, never emptying one */
                int32_t from = group[v], to = d < 0 ? group[u] : group[u - 1];
                if (d < 0 ? v == 0 || group[v - 1] != from : v + 1 >= U || group[v + 1] != from) continue;
                group[v] = to;
                double m = max_stage(cost, group, U, P, acc), q = spread(acc, P);
                if (m < best - 0.5 || (m <= best + 0.5 && q < best_q * (1 - 1e-9))) {
                    best = m < best ? m : best;
                    best_q = q;
                    moved = 1;
                    break;
                }
                group[v] = from;
            }
        }
    }
}

/* Interleaved (V > 1): the chunks cut as refined (cut_refined), unless the time-balanced cut
 * balanced further by moving chunk boundaries (balance_stages) makes the busiest stage (the sum of
 * its V chunks) lighter. */
static mt_status prefer_balanced(const double *cost, int32_t U, int32_t P, int32_t K, int32_t *group) {
    int32_t *alt = malloc((size_t)U * sizeof *alt);
    double *acc = malloc((size_t)P * sizeof *acc);
    if (!alt || !acc) {
        free(alt);
        free(acc);
        return MT_ENOMEM;
    }
    partition(cost, U, K, alt);
    balance_stages(cost, U, P, alt, acc);
    if (max_stage(cost, alt, U, P, acc) < max_stage(cost, group, U, P, acc) - 0.5)
        memcpy(group, alt, (size_t)U * sizeof *group);
    free(alt);
    free(acc);
    return MT_OK;
}

/* A group of units [i, j) with its sends: its cost, plus k x the bytes crossing its left cut (their
 * gradients, sent back) and its right cut (the activations, sent on). */
static double group_cost(const double *pre, const double *xb, int32_t U, double k, int32_t i, int32_t j) {
    return pre[j] - pre[i] + k * ((i > 0 ? xb[i - 1] : 0) + (j < U ? xb[j - 1] : 0));
}

/* The slowest group of a grouping, sends included. */
static double max_group_sends(const double *pre, const double *xb, const int32_t *group, int32_t U, double k) {
    double worst = 0;
    for (int32_t i = 0, j = 1; j <= U; j++)
        if (j == U || group[j] != group[j - 1]) {
            double g = group_cost(pre, xb, U, k, i, j);
            if (g > worst) worst = g;
            i = j;
        }
    return worst;
}

/* The grouping into P contiguous non-empty groups with the least slowest group, sends included
 * (group_cost): exact dynamic programme over (groups, units), each group's start scanned back from
 * its end until its compute alone reaches the best found (the sends only add): O(P U x a group's
 * units). Returns that slowest group's cost, or -1 when out of memory. */
static double cut_sends(const double *pre, const double *xb, int32_t U, int32_t P, double k, int32_t *group) {
    size_t W = (size_t)U + 1;
    double *f = malloc((size_t)(P + 1) * W * sizeof *f);
    int32_t *arg = malloc((size_t)(P + 1) * W * sizeof *arg);
    if (!f || !arg) {
        free(f);
        free(arg);
        return -1;
    }
    for (size_t q = 0; q < (size_t)(P + 1) * W; q++) {
        f[q] = 1e300;
        arg[q] = -1;
    }
    f[0] = 0;
    for (int32_t g = 1; g <= P; g++)
        for (int32_t j = g; j <= U - (P - g); j++) {
            double best = 1e300;
            int32_t at = -1;
            for (int32_t i = j - 1; i >= g - 1; i--) {
                if (pre[j] - pre[i] >= best) break;
                double prev = f[(size_t)(g - 1) * W + (size_t)i];
                if (prev >= 1e300) continue;
                double c = group_cost(pre, xb, U, k, i, j), v = prev > c ? prev : c;
                if (v < best) {
                    best = v;
                    at = i;
                }
            }
            f[(size_t)g * W + (size_t)j] = best;
            arg[(size_t)g * W + (size_t)j] = at;
        }
    double worst = f[(size_t)P * W + (size_t)U];
    for (int32_t g = P, j = U; g >= 1 && worst < 1e300; g--) {
        int32_t i = arg[(size_t)g * W + (size_t)j];
        for (int32_t u = i; u < j; u++) group[u] = g - 1;
        j = i;
    }
    free(f);
    free(arg);
    return worst < 1e300 ? worst : -1;
}

/* With sends weighed (k > 0, one stage per piece, few enough units for cut_sends): the cut with the
 * least slowest stage sends included replaces the refined one when that makes the slowest stage,
 * sends included, lighter than the refined cut's. */
static mt_status prefer_sends(const double *cost, const double *xb, int32_t U, int32_t P, double k, int32_t *group) {
    if (!(k > 0) || P < 2 || U > MT_STAGES_SENDS_MAX_UNITS) return MT_OK;
    double *pre = malloc((size_t)(U + 1) * sizeof *pre);
    int32_t *alt = malloc((size_t)U * sizeof *alt);
    if (!pre || !alt) {
        free(pre);
        free(alt);
        return MT_ENOMEM;
    }
    pre[0] = 0;
    for (int32_t u = 0; u < U; u++) pre[u + 1] = pre[u] + cost[u];
    double best = cut_sends(pre, xb, U, P, k, alt);
    mt_status rc = best < 0 && U >= P ? MT_ENOMEM : MT_OK;
    if (best >= 0 && best < max_group_sends(pre, xb, group, U, k) - 0.5) memcpy(group, alt, (size_t)U * sizeof *group);
    free(pre);
    free(alt);
    return rc;
}

mt_status mt_stages_cut(const mt_trace *t, const int32_t *unit, int32_t U, int32_t P, int32_t *stage_of_unit,
                        mt_stage_cut *info) {
    return mt_stages_cut_chunks(t, unit, U, P, 1, 0, stage_of_unit, info);
}

mt_status mt_stages_cut_chunks(const mt_trace *t, const int32_t *unit, int32_t U, int32_t Pst, int32_t V,
                               double send_ns_per_byte, int32_t *stage_of_unit, mt_stage_cut *info) {
    int32_t P = Pst * (V > 1 ? V : 1); /* the pieces to cut: model chunks */
    double *cost = calloc((size_t)(U > 0 ? U : 1), sizeof *cost);
    double *xb = calloc((size_t)(U + 1), sizeof *xb);
    int32_t *cross = malloc((size_t)(U + 1) * sizeof *cross);
    unsigned char *ok = calloc((size_t)(U > 0 ? U : 1), 1);
    mt_status rc = cost && xb && cross && ok ? MT_OK : MT_ENOMEM;
    for (int32_t i = 0; rc == MT_OK && i < t->n_ops; i++)
        if (unit[i] >= 0 && unit[i] < U && !trace_op_is_comm(&t->ops[i]))
            cost[unit[i]] += (double)t->ops[i].dev_ns + 1.0; /* +1: empty layers still weigh */
    if (rc == MT_OK) rc = add_optimizer(t, unit, U, cost);
    if (rc == MT_OK) rc = crossings(t, unit, U, cross, xb);
    mt_stage_cut in;
    memset(&in, 0, sizeof in);
    for (int32_t u = 0; rc == MT_OK && u < U - 1; u++) /* the fewest, not counting none (a link lost) */
        if (cross[u] > 0 && (in.min_crossing == 0 || cross[u] < in.min_crossing)) in.min_crossing = cross[u];
    for (int32_t u = 0; rc == MT_OK && u < U - 1; u++) {
        ok[u] = cross[u] <= in.min_crossing;
        in.clean_points += ok[u];
    }
    if (rc == MT_OK) rc = cut_refined(cost, cross, U, P, stage_of_unit);
    if (rc == MT_OK && V > 1) rc = prefer_balanced(cost, U, Pst, P, stage_of_unit);
    if (rc == MT_OK && V <= 1) rc = prefer_sends(cost, xb, U, P, send_ns_per_byte, stage_of_unit);
    in.clean_only = rc == MT_OK && P > 1;
    for (int32_t u = 0; rc == MT_OK && u < U - 1; u++)
        if (stage_of_unit[u] != stage_of_unit[u + 1] && !ok[u]) in.clean_only = 0;
    if (info) *info = in;
    free(cost);
    free(xb);
    free(cross);
    free(ok);
    return rc;
}

/* ---- block cuts (as Megatron-Core and PyTorch's pipelining cut a transformer) ------------------- */

int mt_stages_blocks_default(const mt_trace *t, const mt_blocks *bl) {
    return bl->found && t->n_layers > 0 && 2 * (int64_t)bl->count * bl->layers >= t->n_layers;
}

mt_status mt_stages_cut_blocks(const mt_trace *t, const mt_blocks *blp, int32_t U, int32_t P, int32_t V,
                               const int32_t *per, int32_t n_per, int32_t *chunk_of_unit, mt_stage_cut *info,
                               mt_error *err) {
    const mt_blocks bl = *blp;
    int32_t K = P * (V > 1 ? V : 1), n = bl.count;
    if (!bl.found || t->n_layers != U)
        return mt_fail(err, MT_EINVAL, "--pp-cut blocks: the trace has no repeating block of layers to cut at (mitosis "
                       "inspect shows its blocks); use --pp-cut time");
    if (K > MT_STAGES_LIST_MAX)
        return mt_fail(err, MT_EINVAL, "--pp %d --vpp %d: a block cut names at most %d model chunks; use --pp-cut time",
                       (int)P, (int)V, MT_STAGES_LIST_MAX);
    memset(info, 0, sizeof *info);
    info->n_blocks = n;
    info->first_layer = bl.first;
    info->block_layers = bl.layers;
    info->n_chunks = K;
    if (n_per > 0) {
        if (n_per != P && n_per != K)
            return mt_fail(err, MT_EINVAL, "--pp-layers has %d entr%s: give one per stage (%d) or one per model chunk "
                           "(%d = --pp x --vpp)", (int)n_per, n_per == 1 ? "y" : "ies", (int)P, (int)K);
        int64_t sum = 0;
        for (int32_t c = 0; c < K; c++) {
            int32_t v = n_per == K ? per[c] : per[c % P];
            if (n_per != K && v % V)
                return mt_fail(err, MT_EINVAL, "--pp-layers: stage %d's %d blocks do not split into --vpp %d equal "
                               "chunks (give one count per chunk, %d entries)", (int)(c % P), (int)v, (int)V, (int)K);
            info->blocks[c] = n_per == K ? v : v / V;
            if (info->blocks[c] < 1)
                return mt_fail(err, MT_EINVAL, "--pp-layers: model chunk %d would hold no block (each stage and chunk "
                               "needs at least one)", (int)c);
            sum += info->blocks[c];
        }
        if (sum != n)
            return mt_fail(err, MT_EINVAL, "--pp-layers adds up to %lld blocks; the trace has %d (blocks of %d layer%s "
                           "from L%d: mitosis inspect)", (long long)sum, (int)n, (int)bl.layers, mt_plural(bl.layers),
                           (int)bl.first);
        info->kind = MT_CUT_LIST;
    } else {
        if (n % K)
            return mt_fail(err, MT_EINVAL, "%d blocks do not divide into --pp %d x --vpp %d equal model chunks (Megatron "
                           "refuses too): give the blocks per stage with --pp-layers, or --pp-cut time", (int)n, (int)P,
                           (int)(V > 1 ? V : 1));
        for (int32_t c = 0; c < K; c++) info->blocks[c] = n / K;
        info->kind = MT_CUT_BLOCKS;
    }
    /* chunk c holds blocks [start_c, start_c + blocks[c]) */
    int32_t end = bl.first + n * bl.layers;
    for (int32_t u = 0, c = 0, left = info->blocks[0]; u < U; u++) {
        if (u >= bl.first && u < end && (u - bl.first) % bl.layers == 0 && u > bl.first) {
            if (--left == 0 && c < K - 1) left = info->blocks[++c];
        }
        chunk_of_unit[u] = u < bl.first ? 0 : u >= end ? K - 1 : c;
    }
    info->clean_only = 1;
    return MT_OK;
}

const char *mt_stages_cut_describe(const mt_stage_cut *c, char *buf, size_t len) {
    if (c->kind == MT_CUT_TIME || c->n_chunks <= 0) {
        snprintf(buf, len, "time-balanced");
        return buf;
    }
    size_t at = (size_t)snprintf(buf, len, "blocks ");
    int same = 1;
    for (int32_t k = 1; k < c->n_chunks; k++) same &= c->blocks[k] == c->blocks[0];
    if (same && c->n_chunks > 8)
        at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%d x %d", (int)c->n_chunks, (int)c->blocks[0]);
    for (int32_t k = 0; !(same && c->n_chunks > 8) && k < c->n_chunks && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%d", k ? "+" : "", (int)c->blocks[k]);
    if (at < len && c->kind == MT_CUT_LIST) snprintf(buf + at, len - at, " (--pp-layers)");
    return buf;
}

mt_status mt_stages_list_parse(const char *s, int32_t *per, int32_t *n, mt_error *err) {
    *n = 0;
    for (const char *p = s; *p;) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || v < 1 || v > (1 << 20) || *n >= MT_STAGES_LIST_MAX)
            return mt_fail(err, MT_EINVAL, "--pp-layers needs up to %d block counts >= 1 separated by ',', one per "
                           "stage, e.g. 7,8,8,9 (got '%s')", MT_STAGES_LIST_MAX, s);
        per[(*n)++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) return mt_fail(err, MT_EINVAL, "--pp-layers is empty (give blocks per stage, e.g. 7,8,8,9)");
    return MT_OK;
}

/* ---- tensors made from no batch data (mt_stages_batch_free) ------------------------------------ */

/* An input (a tensor read before any op makes it) carries the batch unless it is a scalar or its
 * leading dimension is not the traced batch (a buffer: RoPE's inverse frequencies); with the batch
 * unknown every non-scalar input does. */
static int input_has_batch(const mt_trace *t, const trace_tref *r) {
    if (r->ndim <= 0) return 0;
    return t->batch_size <= 0 || t->dims[r->shape_off] == t->batch_size;
}

unsigned char *mt_stages_batch_free(const mt_trace *t) {
    unsigned char *free_x = calloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1), 1);
    if (!free_x) return NULL;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD || trace_op_is_comm(o) || o->out_count == 0) continue;
        int op_free = 1;
        for (int32_t j = 0; op_free && j < o->in_count; j++) {
            const trace_tref *r = &t->trefs[o->in_first + j];
            int role = role_of(t, r);
            if (role == TRACE_ROLE_WEIGHT || (role == TRACE_ROLE_INPUT && input_has_batch(t, r)) ||
                (role == TRACE_ROLE_ACTIVATION && !free_x[r->tensor]))
                op_free = 0;
        }
        for (int32_t j = 0; op_free && j < o->out_count; j++) {
            int32_t x = t->trefs[o->out_first + j].tensor;
            if (x >= 0 && x < t->n_tensors && t->tensors[x].first_op == i) free_x[x] = 1;
        }
    }
    return free_x;
}

/* ---- a cut's trailing weight-free ops (mt_stages_settle_cuts) ----------------------------------- */

enum { SETTLE_MAX_OPS = 64 }; /* trailing ops weighed per cut (the last ones of a longer run) */

typedef struct settle {
    const mt_trace *t;
    int32_t *unit;
    const int32_t *chunk_of_unit;
    int32_t *maxc;  /* by tensor: the latest chunk reading it in forward, the cut's trailing ops left out */
    int32_t *lastm; /* by tensor: the last trailing op (its position) reading it, -1 none */
    int32_t *posm;  /* by op: its position among the cut's trailing ops, -1 none */
    int32_t *seen;  /* by tensor: the cut (+1) that listed it */
    unsigned char *bfree; /* by tensor: made from no batch data (mt_stages_batch_free), never sent */
    int32_t m[SETTLE_MAX_OPS], k, c;
    int32_t xs[SETTLE_MAX_OPS * 16], nx;
} settle;

static int32_t chunk_now(const settle *s, int32_t op) { return s->chunk_of_unit[s->unit[op]]; }

static int reads_weight(const mt_trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->in_count; j++)
        if (role_of(t, &t->trefs[o->in_first + j]) == TRACE_ROLE_WEIGHT) return 1;
    return 0;
}

/* The forward ops of unit u after its last op reading a weight into s->m (at most SETTLE_MAX_OPS, the
 * last ones); none when every op of u would go (a unit is never emptied). */
static void trailing_ops(settle *s, int32_t u) {
    const mt_trace *t = s->t;
    int32_t all = 0;
    s->k = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD || s->unit[i] != u || trace_op_is_comm(o)) continue;
        all++;
        if (reads_weight(t, o)) s->k = 0;
        else if (s->k < SETTLE_MAX_OPS) s->m[s->k++] = i;
        else {
            memmove(s->m, s->m + 1, (SETTLE_MAX_OPS - 1) * sizeof *s->m);
            s->m[SETTLE_MAX_OPS - 1] = i;
        }
    }
    if (s->k == all) s->k = 0;
}

static void list_tensor(settle *s, int32_t x) {
    if (x < 0 || x >= s->t->n_tensors || s->seen[x] == s->c + 1 || s->nx >= (int32_t)(sizeof s->xs / sizeof s->xs[0])) return;
    s->seen[x] = s->c + 1;
    s->lastm[x] = -1;
    s->xs[s->nx++] = x;
}

/* maxc over the forward ops outside the cut's trailing ops; the tensors those ops make or read
 * (xs), each one's last trailing reader (lastm). O(trefs). */
static void settle_scan(settle *s) {
    const mt_trace *t = s->t;
    for (int32_t x = 0; x < t->n_tensors; x++) s->maxc[x] = -1;
    s->nx = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD || s->unit[i] < 0) continue;
        for (int32_t j = 0; j < o->in_count + (s->posm[i] >= 0 ? o->out_count : 0); j++) {
            int32_t x = t->trefs[j < o->in_count ? o->in_first + j : o->out_first + j - o->in_count].tensor;
            if (x < 0 || x >= t->n_tensors) continue;
            if (s->posm[i] < 0) {
                if (chunk_now(s, i) > s->maxc[x]) s->maxc[x] = chunk_now(s, i);
                continue;
            }
            list_tensor(s, x);
            if (j < o->in_count && s->posm[i] > s->lastm[x]) s->lastm[x] = s->posm[i];
        }
    }
}

/* The activation bytes crossing cut c when trailing ops m[j..k) run on chunk c + 1 (as
 * mt_pp_boundaries counts them: made on a chunk <= c, read in forward on one > c); the tensors not
 * touching the trailing ops add the same to every j and are left out. */
static double settle_bytes(const settle *s, int32_t j) {
    const mt_trace *t = s->t;
    double bytes = 0;
    for (int32_t n = 0; n < s->nx; n++) {
        int32_t x = s->xs[n], f = t->tensors[x].first_op;
        if (t->tensors[x].role != TRACE_ROLE_ACTIVATION || f < 0 || f >= t->n_ops || t->ops[f].phase != TRACE_PHASE_FORWARD ||
            s->unit[f] < 0 || s->bfree[x])
            continue;
        int32_t made = s->posm[f] >= 0 ? (s->posm[f] >= j ? s->c + 1 : s->c) : chunk_now(s, f);
        int32_t read = s->maxc[x];
        if (s->lastm[x] >= 0 && (s->lastm[x] >= j ? s->c + 1 : s->c) > read) read = s->lastm[x] >= j ? s->c + 1 : s->c;
        if (made <= s->c && read > s->c) bytes += (double)t->tensors[x].bytes;
    }
    return bytes;
}

/* Cut c after unit u: its trailing weight-free ops from the j with the fewest bytes crossing (the
 * latest such j: none moved on a tie) join unit u + 1. */
static void settle_cut(settle *s, int32_t u) {
    trailing_ops(s, u);
    if (s->k == 0) return;
    for (int32_t p = 0; p < s->k; p++) s->posm[s->m[p]] = p;
    settle_scan(s);
    int32_t best = s->k;
    double least = settle_bytes(s, s->k);
    for (int32_t j = s->k - 1; j >= 0; j--) {
        double b = settle_bytes(s, j);
        if (b < least - 0.5) {
            least = b;
            best = j;
        }
    }
    for (int32_t p = 0; p < s->k; p++) {
        if (p >= best) s->unit[s->m[p]] = u + 1;
        s->posm[s->m[p]] = -1;
    }
}

mt_status mt_stages_settle_cuts(const mt_trace *t, int32_t *unit, const int32_t *chunk_of_unit, int32_t U) {
    if (t->n_layers <= 0 || U < 2) return MT_OK;
    size_t nt = (size_t)(t->n_tensors > 0 ? t->n_tensors : 1), nops = (size_t)(t->n_ops > 0 ? t->n_ops : 1);
    settle s = {.t = t, .unit = unit, .chunk_of_unit = chunk_of_unit};
    s.maxc = malloc(nt * sizeof *s.maxc);
    s.lastm = malloc(nt * sizeof *s.lastm);
    s.seen = calloc(nt, sizeof *s.seen);
    s.posm = malloc(nops * sizeof *s.posm);
    s.bfree = mt_stages_batch_free(t);
    mt_status rc = s.maxc && s.lastm && s.seen && s.posm && s.bfree ? MT_OK : MT_ENOMEM;
    for (int32_t i = 0; rc == MT_OK && i < t->n_ops; i++) s.posm[i] = -1;
    for (int32_t u = 0; rc == MT_OK && u < U - 1; u++) {
        if (chunk_of_unit[u + 1] != chunk_of_unit[u] + 1) continue;
        s.c = chunk_of_unit[u];
        settle_cut(&s, u);
    }
    for (int32_t i = 0; rc == MT_OK && i < t->n_ops; i++) { /* backward ops follow their forward op */
        int32_t f = t->ops[i].fwd_op;
        if (t->ops[i].phase == TRACE_PHASE_BACKWARD && f >= 0 && f < t->n_ops && unit[f] >= 0) unit[i] = unit[f];
    }
    free(s.maxc);
    free(s.lastm);
    free(s.seen);
    free(s.posm);
    free(s.bfree);
    return rc;
}

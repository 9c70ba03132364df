/* tracer/match.c — matching Kineto events with Execution Trace nodes (see match.h). */
#include <stdlib.h>
#include <string.h>

#include "tracer/match.h"
#include "util/u64map.h"
#include "util/vec.h"

#define ORDER_PROBE 64
#define ORDER_RESYNC 16

/* ---- by id ------------------------------------------------------------------------------ */
typedef struct link_try {
    int64_t matched, equal;
} link_try;

static void clear_links(kineto_data *k) {
    for (int64_t i = 0; i < k->n_ev; i++) k->ev[i].et_node = -1;
}

/* Links ET nodes to Kineto events through an id map (rf_id or External id). */
static mt_status link_by_id(kineto_data *k, et_data *e, int use_rf, link_try *res) {
    mt_u64map m;
    mt_u64map_init(&m);
    for (int64_t i = 0; i < k->n_ev; i++) {
        int64_t key = use_rf ? k->ev[i].rf_id : k->ev[i].ext_id;
        if (key >= 0 && mt_u64map_put(&m, key, i, NULL) != MT_OK) {
            mt_u64map_destroy(&m);
            return MT_ENOMEM;
        }
    }
    clear_links(k);
    res->matched = res->equal = 0;
    for (int64_t j = 0; j < e->n_nodes; j++) {
        const et_node *n = &e->nodes[j];
        int64_t ki;
        if (n->is_meta || n->rf_id < 0 || !mt_u64map_get(&m, n->rf_id, &ki)) continue;
        res->matched++;
        if (k->ev[ki].name == n->name) res->equal++; /* interned: pointer equality */
        k->ev[ki].et_node = j;
    }
    mt_u64map_destroy(&m);
    return MT_OK;
}

typedef struct seq {
    int64_t tid;
    int32_t *idx;
    int64_t n, cap;
} seq;

static void seqs_free(seq *s, int64_t n) {
    for (int64_t i = 0; i < n; i++) free(s[i].idx);
    free(s);
}

static int64_t find_seq(seq **s, int64_t *n, int64_t *cap, int64_t tid) {
    for (int64_t i = 0; i < *n; i++)
        if ((*s)[i].tid == tid) return i;
    if (mt_vec_reserve(s, cap, *n + 1)) return -1;
    memset(&(*s)[*n], 0, sizeof **s);
    (*s)[*n].tid = tid;
    return (*n)++;
}

/* ---- by order --------------------------------------------------------------------------- */

/* Groups the ET op nodes per thread, by id. */
static mt_status group_et(const et_data *e, seq **es, int64_t *nes) {
    int64_t ces = 0;
    for (int64_t j = 0; j < e->n_nodes; j++) { /* nodes are sorted by id */
        if (e->nodes[j].is_meta) continue;
        int64_t s = find_seq(es, nes, &ces, e->nodes[j].tid);
        if (s < 0 || mt_vec_reserve(&(*es)[s].idx, &(*es)[s].cap, (*es)[s].n + 1)) return MT_ENOMEM;
        (*es)[s].idx[(*es)[s].n++] = (int32_t)j;
    }
    return MT_OK;
}

/* Where each thread's events start in ord (sorted by tid, ts): runs[r] .. runs[r + 1], *n runs. */
static mt_status thread_runs(const kineto_data *k, const int32_t *ord, int64_t **runs, int64_t *n) {
    int64_t cap = 0;
    *n = 0;
    for (int64_t i = 0; i <= k->n_ev; i++) {
        if (i > 0 && i < k->n_ev && k->ev[ord[i]].tid == k->ev[ord[i - 1]].tid) continue;
        if (mt_vec_reserve(runs, &cap, *n + 1)) return MT_ENOMEM;
        (*runs)[(*n)++] = i;
    }
    (*n)--; /* the last entry is the end */
    return MT_OK;
}

/* Groups the Kineto events starting in [ws, we) per thread (by ts): a binary search in each
 * thread's run, so a window costs O(threads log E + its events), not O(E). */
static mt_status group_window(const kineto_data *k, const int32_t *ord, const int64_t *runs, int64_t n_runs,
                              int64_t ws, int64_t we, seq **ks, int64_t *nks) {
    int64_t cks = 0;
    for (int64_t r = 0; r < n_runs; r++) {
        int64_t lo = runs[r], hi = runs[r + 1];
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (k->ev[ord[mid]].ts_ns < ws) lo = mid + 1;
            else hi = mid;
        }
        for (int64_t i = lo; i < runs[r + 1] && k->ev[ord[i]].ts_ns < we; i++) {
            int64_t s = i == lo ? find_seq(ks, nks, &cks, k->ev[ord[i]].tid) : *nks - 1;
            if (s < 0 || mt_vec_reserve(&(*ks)[s].idx, &(*ks)[s].cap, (*ks)[s].n + 1)) return MT_ENOMEM;
            (*ks)[s].idx[(*ks)[s].n++] = ord[i];
        }
    }
    return MT_OK;
}

/* The unused Kineto thread and offset where ET thread E's first ORDER_PROBE names agree best
 * (ties: the later); *best_b -1 when no name agrees. */
static void best_alignment(const kineto_data *k, const et_data *e, const seq *E, const seq *ks, int64_t nks,
                           const char *used, int64_t *best_b, int64_t *best_off) {
    int64_t best_score = 0;
    *best_b = *best_off = -1;
    for (int64_t b = 0; b < nks; b++) {
        if (used[b]) continue;
        const seq *K = &ks[b];
        for (int64_t off = 0; off < K->n; off++) {
            if (k->ev[K->idx[off]].name != e->nodes[E->idx[0]].name) continue;
            int64_t probe = E->n < ORDER_PROBE ? E->n : ORDER_PROBE, score = 0;
            for (int64_t i = 0; i < probe && off + i < K->n; i++)
                score += k->ev[K->idx[off + i]].name == e->nodes[E->idx[i]].name;
            if (score >= best_score && score > 0) { /* ties: the later step */
                best_score = score;
                *best_b = b;
                *best_off = off;
            }
        }
    }
}

/* Walks E against K from offset j, linking equal names; on a mismatch resynchronises by
 * skipping a few events on either side (one side may hold annotations or helper ops the other
 * lacks). */
static void walk_pair(kineto_data *k, const et_data *e, const seq *E, const seq *K, int64_t j, link_try *res) {
    int64_t i = 0;
    while (i < E->n && j < K->n) {
        const char *en = e->nodes[E->idx[i]].name;
        kev *x = &k->ev[K->idx[j]];
        if (x->name == en) {
            x->et_node = E->idx[i];
            res->matched++;
            res->equal++;
            i++;
            j++;
            continue;
        }
        int64_t jj = 0, ii = 0;
        for (int64_t d = 1; d <= ORDER_RESYNC && !jj && j + d < K->n; d++)
            if (k->ev[K->idx[j + d]].name == en) jj = j + d;
        for (int64_t d = 1; d <= ORDER_RESYNC && !ii && i + d < E->n; d++)
            if (e->nodes[E->idx[i + d]].name == x->name) ii = i + d;
        if (jj && (!ii || jj - j <= ii - i)) j = jj;
        else if (ii) i = ii;
        else {
            i++;
            j++;
        }
    }
}

/* What order linking reads for every window: the ET's threads and the Kineto threads' runs. */
typedef struct order_ctx {
    kineto_data *k;
    const int32_t *ord;
    et_data *e;
    seq *es;
    int64_t nes;
    int64_t *runs, n_runs;
} order_ctx;

/* Order linking restricted to Kineto events starting in [ws, we); with keep 0 the links made are
 * undone (a probe: only res is wanted). Expects no links in the window. */
static mt_status link_by_order(order_ctx *o, int64_t ws, int64_t we, int keep, link_try *res) {
    seq *ks = NULL;
    int64_t nks = 0;
    char *used = NULL;
    mt_status rc = group_window(o->k, o->ord, o->runs, o->n_runs, ws, we, &ks, &nks);
    res->matched = res->equal = 0;
    if (rc == MT_OK && !(used = calloc((size_t)(nks ? nks : 1), 1))) rc = MT_ENOMEM;
    for (int64_t a = 0; rc == MT_OK && a < o->nes; a++) {
        int64_t b, off;
        best_alignment(o->k, o->e, &o->es[a], ks, nks, used, &b, &off);
        if (b < 0) continue;
        used[b] = 1;
        walk_pair(o->k, o->e, &o->es[a], &ks[b], off, res);
    }
    for (int64_t b = 0; !keep && b < nks; b++)
        for (int64_t i = 0; i < ks[b].n; i++) o->k->ev[ks[b].idx[i]].et_node = -1;
    free(used);
    seqs_free(ks, nks);
    return rc;
}

/* ---- choosing the method ---------------------------------------------------------------- */

/* Order linking: aligns the ET with each step (only opts->step when given) and keeps the best,
 * ties to the later. */
static mt_status try_order(kineto_data *k, const int32_t *ord, et_data *e, const kstep *win, int64_t n_win,
                           const trace_load_opts *opts, link_try *r) {
    order_ctx o = {.k = k, .ord = ord, .e = e};
    mt_status rc = group_et(e, &o.es, &o.nes);
    if (rc == MT_OK) rc = thread_runs(k, ord, &o.runs, &o.n_runs);
    clear_links(k);
    int64_t best = -1, best_w = 0;
    for (int64_t w = 0; w < n_win && rc == MT_OK; w++) {
        if (opts->step >= 0 && win[w].number != opts->step) continue;
        rc = link_by_order(&o, win[w].start, win[w].end, 0, r);
        if (r->equal >= best) {
            best = r->equal;
            best_w = w;
        }
    }
    if (rc == MT_OK) rc = link_by_order(&o, win[best_w].start, win[best_w].end, 1, r);
    seqs_free(o.es, o.nes);
    free(o.runs);
    return rc;
}

/* Links with `method` into r. */
static mt_status try_method(kineto_data *k, const int32_t *ord, et_data *e, trace_link_method method,
                            const kstep *win, int64_t n_win, const trace_load_opts *opts, link_try *r) {
    if (method != TRACE_LINK_ORDER) return link_by_id(k, e, method == TRACE_LINK_RF_ID, r);
    return try_order(k, ord, e, win, n_win, opts, r);
}

mt_status mt_match_link(const char *kpath, kineto_data *k, const int32_t *ord, const char *epath, et_data *e,
                        const kstep *steps, int64_t n_steps, const trace_load_opts *opts, trace_link_stats *st,
                        mt_error *err) {
    int64_t total = mt_et_op_count(e);
    link_try r = {0, 0};
    int any_rf = k->any_rf; /* of the whole file: the step filter may have dropped some events */
    static const trace_link_method methods[] = {TRACE_LINK_RF_ID, TRACE_LINK_EXTERNAL, TRACE_LINK_ORDER};
    for (size_t m = any_rf ? 0 : 1; m < sizeof methods / sizeof *methods; m++) {
        if (try_method(k, ord, e, methods[m], steps, n_steps, opts, &r) != MT_OK)
            return mt_fail(err, MT_ENOMEM, "%s: out of memory linking", kpath);
        st->method = methods[m];
        if (r.matched > 0 && r.equal * 10 >= r.matched * 9 && (double)r.equal >= opts->min_link_ratio * (double)total)
            break;
    }
    st->matched = r.equal;
    st->unmatched = total - r.equal;
    st->names_equal = r.equal;
    if ((double)r.equal < opts->min_link_ratio * (double)total)
        return mt_fail(err, MT_EFORMAT,
                       "%s and %s do not describe the same run: only %ld of %ld Execution "
                       "Trace nodes match a Kineto event (best method: %s); record both in the "
                       "same step (the Kineto file alone has times but no shapes: its batch and memory are guesses)",
                       kpath, epath, (long)r.equal, (long)total, mt_trace_link_method_name(st->method));
    /* Keep only links whose names agree. */
    for (int64_t i = 0; i < k->n_ev; i++)
        if (k->ev[i].et_node >= 0 && e->nodes[k->ev[i].et_node].name != k->ev[i].name)
            k->ev[i].et_node = -1;
    return MT_OK;
}

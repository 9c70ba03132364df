/* tracer/khost.c — the host side of a Kineto trace (see khost.h). */
#include <stdlib.h>
#include <string.h>

#include "tracer/khost.h"
#include "tracer/opclass.h"
#include "util/vec.h"

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* ---- nesting ---------------------------------------------------------------------------- */

typedef struct kev_key {
    int64_t tid, ts, neg_dur;
    int32_t annot_first; /* 0 for annotations so they enclose ops with the same span */
    int32_t idx;
} kev_key;

static int cmp_kev_key(const void *a, const void *b) {
    const kev_key *x = a, *y = b;
    if (x->tid != y->tid) return (x->tid > y->tid) - (x->tid < y->tid);
    if (x->ts != y->ts) return (x->ts > y->ts) - (x->ts < y->ts);
    if (x->neg_dur != y->neg_dur) return (x->neg_dur > y->neg_dur) - (x->neg_dur < y->neg_dur);
    if (x->annot_first != y->annot_first) return x->annot_first - y->annot_first;
    return x->idx - y->idx;
}

mt_status mt_khost_nest(kineto_data *k, int32_t **order_out) {
    int32_t *ord = malloc((size_t)(k->n_ev ? k->n_ev : 1) * sizeof *ord);
    int32_t *stack = malloc((size_t)(k->n_ev ? k->n_ev : 1) * sizeof *stack);
    if (!ord || !stack) {
        free(ord);
        free(stack);
        return MT_ENOMEM;
    }
    for (int64_t i = 0; i < k->n_ev; i++) {
        if (k->ev[i].kind == KEV_ANNOTATION && mt_opclass_is_comm_name(k->ev[i].name))
            k->ev[i].kind = KEV_OP; /* gloo:all_reduce and friends are operators */
    }
    kev_key *keys = malloc((size_t)(k->n_ev ? k->n_ev : 1) * sizeof *keys);
    if (!keys) {
        free(ord);
        free(stack);
        return MT_ENOMEM;
    }
    for (int64_t i = 0; i < k->n_ev; i++)
        keys[i] = (kev_key){k->ev[i].tid, k->ev[i].ts_ns, -k->ev[i].dur_ns,
                            k->ev[i].kind == KEV_ANNOTATION ? 0 : 1, (int32_t)i};
    qsort(keys, (size_t)k->n_ev, sizeof *keys, cmp_kev_key);
    for (int64_t i = 0; i < k->n_ev; i++) ord[i] = keys[i].idx;
    free(keys);
    int64_t sp = 0, cur_tid = 0;
    for (int64_t i = 0; i < k->n_ev; i++) {
        kev *x = &k->ev[ord[i]];
        if (i == 0 || x->tid != cur_tid) {
            sp = 0;
            cur_tid = x->tid;
        }
        while (sp > 0) {
            const kev *p = &k->ev[stack[sp - 1]];
            if (x->ts_ns < p->ts_ns + p->dur_ns || (x->ts_ns == p->ts_ns)) break;
            sp--;
        }
        x->parent = sp > 0 ? stack[sp - 1] : -1;
        if (x->kind == KEV_OP) {
            int32_t outer = x->parent >= 0 ? k->ev[x->parent].outer : -1;
            x->outer = outer >= 0 ? outer : ord[i];
        } else {
            x->outer = x->parent >= 0 ? k->ev[x->parent].outer : -1;
        }
        stack[sp++] = ord[i];
    }
    free(stack);
    *order_out = ord;
    return MT_OK;
}

/* ---- steps ----------------------------------------------------------------------------- */

static int cmp_kstep(const void *a, const void *b) {
    const kstep *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Appends a step per annotation named prefix... (from its start, or from 0 when from_zero, to
 * its end; number the integer after the prefix) and sorts them by start. */
static mt_status annotated_steps(const kineto_data *k, const char *prefix, int from_zero, kstep **w, int64_t *n,
                                 int64_t *cap) {
    for (int64_t i = 0; i < k->n_ev; i++) {
        const kev *x = &k->ev[i];
        if (x->kind != KEV_ANNOTATION || !starts(x->name, prefix)) continue;
        if (mt_vec_reserve(w, cap, *n + 1)) return MT_ENOMEM;
        (*w)[(*n)++] = (kstep){from_zero ? 0 : x->ts_ns, x->ts_ns + x->dur_ns, atoi(x->name + strlen(prefix))};
    }
    if (*n > 0) qsort(*w, (size_t)*n, sizeof **w, cmp_kstep);
    return MT_OK;
}

mt_status mt_khost_steps(const kineto_data *k, kstep **out, int64_t *n_out) {
    kstep *w = NULL;
    int64_t n = 0, cap = 0;
    mt_status rc = annotated_steps(k, "ProfilerStep#", 0, &w, &n, &cap);
    if (rc == MT_OK && n == 0) {
        /* Optimizer.step ends the steps: each runs from the previous one's end to its end. (All
         * start at 0 when sorted, so they keep the file's order, as they always did.) */
        rc = annotated_steps(k, "Optimizer.step", 1, &w, &n, &cap);
        for (int64_t i = 0; i < n; i++) {
            w[i].start = i == 0 ? INT64_MIN : w[i - 1].end;
            w[i].number = (int)i;
        }
        if (n > 0) w[n - 1].end = INT64_MAX; /* the last step keeps trailing work */
    }
    if (rc == MT_OK && n == 0) {
        rc = mt_vec_reserve(&w, &cap, 1) ? MT_ENOMEM : MT_OK;
        if (rc == MT_OK) w[n++] = (kstep){INT64_MIN, INT64_MAX, -1};
    }
    if (rc != MT_OK) {
        free(w);
        return rc;
    }
    *out = w;
    *n_out = n;
    return MT_OK;
}

/* ---- around an event -------------------------------------------------------------------- */

int mt_khost_in_region(const kineto_data *k, const kev *x, const char *prefix) {
    for (int32_t p = x->parent; p >= 0; p = k->ev[p].parent)
        if (k->ev[p].kind == KEV_ANNOTATION && starts(k->ev[p].name, prefix)) return 1;
    return 0;
}

int mt_khost_backward_thread(const kineto_data *k, int64_t tid) {
    int64_t bw = 0, all = 0, first = -1;
    for (int64_t i = 0; i < k->n_ev; i++) {
        const kev *x = &k->ev[i];
        if (x->tid != tid || x->kind != KEV_OP || x->outer != i) continue;
        all++;
        bw += starts(x->name, "autograd::engine::evaluate_function");
        if (first < 0 || x->ts_ns < k->ev[first].ts_ns) first = i;
    }
    /* a thread that begins with forward work (a CPU step runs its backward on the same thread,
     * where with many micro-batches the backward's ops may outnumber the forward's) is not */
    return all > 0 && bw * 2 > all && starts(k->ev[first].name, "autograd::engine::evaluate_function");
}

int32_t mt_khost_annotation(const kineto_data *k, const kev *x) {
    for (int32_t p = x->parent; p >= 0; p = k->ev[p].parent)
        if (k->ev[p].kind == KEV_ANNOTATION && k->ev[p].name && !starts(k->ev[p].name, "ProfilerStep#") &&
            !mt_opclass_is_comm_name(k->ev[p].name))
            return p;
    return -1;
}

const char *mt_khost_module(const kineto_data *k, const kev *x) {
    /* innermost nn.Module event on the same thread containing x's start */
    const char *best = NULL;
    int64_t best_ts = INT64_MIN;
    for (int64_t i = 0; i < k->n_mod; i++) {
        const kmod *m = &k->mod[i];
        if (m->tid != x->tid || m->ts_ns > x->ts_ns || m->ts_ns + m->dur_ns < x->ts_ns) continue;
        if (m->ts_ns >= best_ts) {
            best_ts = m->ts_ns;
            best = m->name;
        }
    }
    return best;
}


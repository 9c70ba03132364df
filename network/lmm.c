/* network/lmm.c — see lmm.h.
 *
 * Layout: a constraint holds its elements as (variable, index k in the variable's list); a
 * variable holds its constraint ids then, at the same k, its slot in each constraint's element
 * array — inline for up to INLINE_CNSTS constraints (the hops of most routes), else on the heap.
 * The solve walks: collect (breadth-first component from the modified set, marking with an
 * epoch so nothing is cleared afterwards), fill (a variable alone on all its constraints takes
 * the smallest capacity at once; the rest is progressive filling with a binary heap of (share,
 * constraint, version), heapified in O(C), ordered by share then constraint id — so the result
 * of a component does not depend on what else is solved with it; a constraint re-pushed with a
 * new version makes its older entries stale), and settle (values stored, the changed ones
 * listed).
 */
#include "network/lmm.h"

#include <stdlib.h>
#include <string.h>

#include "util/hugemem.h"
#include "util/vec.h"

#define INLINE_CNSTS 6

typedef struct elem {
    int32_t var, k;
} elem;

typedef struct cnst { /* 56 bytes; all zero: a lazy constraint not asked of yet */
    double cap, rem, usage;
    elem *el;
    int32_t n, unfixed, ecap;
    uint32_t mark, ver;
    int16_t modified, ready; /* ready: cap is set (else the lazy constraints' cap_of has it) */
} cnst;

typedef struct var {
    double value, new_value;
    int64_t data;
    int32_t n, next_free;
    uint32_t mark;
    int32_t attached;
    union {
        int32_t in[2 * INLINE_CNSTS]; /* constraints then slots */
        int32_t *heap;
    } h;
} var;

typedef struct hitem {
    double share;
    int32_t cnst;
    uint32_t ver;
} hitem;

struct mt_lmm {
    cnst *c;
    int64_t nc, ccap;
    var *v;
    int64_t nv, vcap;
    int32_t free_head;
    int32_t *mod; /* the modified set, in marking order; room for every constraint */
    int64_t nmod, modcap;
    uint32_t epoch;
    int32_t *cc, *cv, *chg; /* the last solve's constraints, variables, changed variables */
    int64_t ncc, ccc, ncv, ccv, nchg, cchg;
    hitem *heap;
    int64_t nheap, hcap;
    mt_lmm_cap_fn cap_of;    /* the lazy constraints' capacities (mt_lmm_cnsts_lazy) */
    void *cap_ctx;
    int32_t *owned;          /* constraints that hold an element array (freed with the system) */
    int64_t nowned, ocap;
};

static inline int32_t *var_cnsts(var *x) { return x->n <= INLINE_CNSTS ? x->h.in : x->h.heap; }
static inline int32_t *var_slots(var *x) { return var_cnsts(x) + x->n; }

mt_lmm *mt_lmm_new(void) {
    mt_lmm *s = calloc(1, sizeof *s);
    if (s) s->free_head = -1;
    return s;
}

void mt_lmm_free(mt_lmm *s) {
    if (!s) return;
    for (int64_t i = 0; i < s->nowned; i++) free(s->c[s->owned[i]].el);
    for (int64_t i = 0; i < s->nv; i++)
        if (s->v[i].n > INLINE_CNSTS) free(s->v[i].h.heap);
    free(s->c);
    free(s->v);
    free(s->mod);
    free(s->cc);
    free(s->cv);
    free(s->chg);
    free(s->heap);
    free(s->owned);
    free(s);
}

static void mark(mt_lmm *s, int32_t c) {
    if (s->c[c].modified) return;
    s->c[c].modified = 1;
    s->mod[s->nmod++] = c; /* room reserved by mt_lmm_cnst_new */
}

/* ---- constraints ---- */

int mt_lmm_reserve(mt_lmm *s, int64_t ncnsts) {
    if (ncnsts <= s->ccap) return 1;
    cnst *c = realloc(s->c, (size_t)ncnsts * sizeof *c);
    if (!c) return 0;
    s->c = c;
    s->ccap = ncnsts;
    int32_t *mod = realloc(s->mod, (size_t)ncnsts * sizeof *mod);
    if (!mod) return 0;
    s->mod = mod;
    s->modcap = ncnsts;
    return 1;
}

int32_t mt_lmm_cnst_new(mt_lmm *s, double capacity) {
    if (s->nc >= INT32_MAX || mt_vec_reserve(&s->c, &s->ccap, s->nc + 1) ||
        mt_vec_reserve(&s->mod, &s->modcap, s->nc + 1))
        return -1;
    cnst *c = &s->c[s->nc];
    memset(c, 0, sizeof *c);
    c->cap = c->rem = capacity;
    c->ready = 1;
    return (int32_t)s->nc++;
}

/* The constraint array is zeroed by calloc and never written here: pages of constraints nobody
 * uses are never touched (10^6 links of a fabric, a few thousand of them used). */
int mt_lmm_cnsts_lazy(mt_lmm *s, int64_t n, mt_lmm_cap_fn cap_of, void *ctx) {
    if (s->nc > 0 || s->c || n <= 0 || n > INT32_MAX || !cap_of) return 0;
    if (!(s->c = calloc((size_t)n, sizeof *s->c)) || !(s->mod = malloc((size_t)n * sizeof *s->mod))) return 0;
    s->nc = s->ccap = s->modcap = n;
    mt_hugemem_advise(s->c, (size_t)n * sizeof *s->c);
    s->cap_of = cap_of;
    s->cap_ctx = ctx;
    return 1;
}

/* c's capacity from here on is its own (asked of cap_of the first time). */
static cnst *ready(mt_lmm *s, int32_t c) {
    cnst *x = &s->c[c];
    if (!x->ready) {
        x->cap = s->cap_of(s->cap_ctx, c);
        x->ready = 1;
    }
    return x;
}

void mt_lmm_cnst_set_capacity(mt_lmm *s, int32_t c, double capacity) {
    s->c[c].cap = capacity;
    s->c[c].ready = 1;
    mark(s, c);
}

double mt_lmm_cnst_capacity(const mt_lmm *s, int32_t c) {
    return s->c[c].ready ? s->c[c].cap : s->cap_of(s->cap_ctx, c);
}
int32_t mt_lmm_cnst_nvars(const mt_lmm *s, int32_t c) { return s->c[c].n; }
int32_t mt_lmm_cnst_var(const mt_lmm *s, int32_t c, int32_t k) { return s->c[c].el[k].var; }
double mt_lmm_cnst_usage(const mt_lmm *s, int32_t c) { return s->c[c].usage; }

/* ---- variables ---- */

int32_t mt_lmm_var_new(mt_lmm *s, int64_t data) {
    int32_t id;
    if (s->free_head >= 0) {
        id = s->free_head;
        s->free_head = s->v[id].next_free;
    } else {
        if (s->nv >= INT32_MAX || mt_vec_reserve(&s->v, &s->vcap, s->nv + 1)) return -1;
        id = (int32_t)s->nv++;
    }
    var *x = &s->v[id];
    memset(x, 0, sizeof *x);
    x->data = data;
    x->next_free = -1;
    return id;
}

/* Room for one more element on c: from 2, doubling (most links carry a flow or two; a
 * util/vec start of 16 would be 128 bytes on each of 10^6 links). */
static int el_room(mt_lmm *s, int32_t id) {
    cnst *c = &s->c[id];
    if (c->n < c->ecap) return 1;
    if (c->ecap > INT32_MAX / 2) return 0;
    if (!c->el && mt_vec_reserve(&s->owned, &s->ocap, s->nowned + 1)) return 0;
    int32_t ncap = c->ecap ? 2 * c->ecap : 2;
    elem *p = realloc(c->el, (size_t)ncap * sizeof *p);
    if (!p) return 0;
    if (!c->el) s->owned[s->nowned++] = id;
    c->el = p;
    c->ecap = ncap;
    return 1;
}

static mt_status attach(mt_lmm *s, int32_t v, const int32_t *cnsts, int32_t n, int quiet, mt_error *err) {
    for (int32_t k = 0; k < n; k++) /* room first, so that a failure changes nothing */
        if (!el_room(s, cnsts[k])) return mt_fail(err, MT_ENOMEM, "max-min solver: out of memory adding a flow");
    var *x = &s->v[v];
    int32_t *heap = n > INLINE_CNSTS ? malloc(2 * (size_t)n * sizeof *heap) : NULL;
    if (n > INLINE_CNSTS && !heap) return mt_fail(err, MT_ENOMEM, "max-min solver: out of memory adding a flow");
    if (x->n > INLINE_CNSTS) free(x->h.heap);
    x->n = n;
    if (heap) x->h.heap = heap;
    int32_t *list = var_cnsts(x), *slot = var_slots(x);
    for (int32_t k = 0; k < n; k++) {
        cnst *c = &s->c[cnsts[k]];
        list[k] = cnsts[k];
        slot[k] = c->n;
        c->el[c->n++] = (elem){v, k};
        if (!quiet) mark(s, cnsts[k]);
    }
    x->attached = 1;
    return MT_OK;
}

mt_status mt_lmm_var_attach(mt_lmm *s, int32_t v, const int32_t *cnsts, int32_t n, mt_error *err) {
    return attach(s, v, cnsts, n, 0, err);
}

mt_status mt_lmm_var_attach_quiet(mt_lmm *s, int32_t v, const int32_t *cnsts, int32_t n, double value,
                                  mt_error *err) {
    MT_CHECK(attach(s, v, cnsts, n, 1, err));
    s->v[v].value = s->v[v].new_value = value;
    return MT_OK;
}

void mt_lmm_cnst_order(mt_lmm *s, int32_t c, const int32_t *vars, int32_t n) {
    cnst *x = &s->c[c];
    for (int32_t k = 0; k < n && k < x->n; k++) {
        var *y = &s->v[vars[k]];
        const int32_t *list = var_cnsts(y);
        int32_t h = 0;
        while (h < y->n && list[h] != c) h++;
        if (h == y->n) continue; /* not on c: left as it is */
        x->el[k] = (elem){vars[k], h};
        var_slots(y)[h] = k;
    }
}

int mt_lmm_cnst_modified(const mt_lmm *s, int32_t c) { return s->c[c].modified; }
void mt_lmm_cnst_touch(mt_lmm *s, int32_t c) { mark(s, c); }

void mt_lmm_var_detach(mt_lmm *s, int32_t v) {
    var *x = &s->v[v];
    if (!x->attached) return;
    int32_t *list = var_cnsts(x), *slot = var_slots(x);
    for (int32_t k = 0; k < x->n; k++) {
        cnst *c = &s->c[list[k]];
        elem last = c->el[--c->n];
        c->el[slot[k]] = last;
        var_slots(&s->v[last.var])[last.k] = slot[k];
        if (c->n > 0) mark(s, list[k]);
    }
    x->attached = 0;
}

void mt_lmm_var_free(mt_lmm *s, int32_t v) {
    mt_lmm_var_detach(s, v);
    var *x = &s->v[v];
    if (x->n > INLINE_CNSTS) free(x->h.heap);
    x->n = 0;
    x->next_free = s->free_head;
    s->free_head = v;
}

int32_t mt_lmm_var_cnsts(const mt_lmm *s, int32_t v, const int32_t **cnsts) {
    *cnsts = var_cnsts(&s->v[v]);
    return s->v[v].n;
}

double mt_lmm_var_value(const mt_lmm *s, int32_t v) { return s->v[v].value; }
int64_t mt_lmm_var_data(const mt_lmm *s, int32_t v) { return s->v[v].data; }

/* ---- solving ---- */

int mt_lmm_modified(const mt_lmm *s) { return s->nmod > 0; }

/* Heap order: by share, ties by constraint id, so that the order in which equal shares are fixed
 * (which can move a result in its last digit) is the same whatever else is in the heap: a
 * component solves alike alone or beside others. */
static inline int before(const hitem *a, const hitem *b) {
    return a->share < b->share || (a->share == b->share && a->cnst < b->cnst);
}

static void sift_down(hitem *h, int64_t n, int64_t i, hitem it) {
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&h[c + 1], &h[c])) c++;
        if (!before(&h[c], &it)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = it;
}

static int heap_push(mt_lmm *s, double share, int32_t c, uint32_t ver) {
    if (mt_vec_reserve(&s->heap, &s->hcap, s->nheap + 1)) return 0;
    hitem it = {share, c, ver};
    int64_t i = s->nheap++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!before(&it, &s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = it;
    return 1;
}

static hitem heap_pop(mt_lmm *s) {
    hitem top = s->heap[0];
    if (--s->nheap > 0) sift_down(s->heap, s->nheap, 0, s->heap[s->nheap]);
    return top;
}

/* Puts c in the component: marked, its filling state reset (unfixed negative: not pushed yet). */
static int add_cnst(mt_lmm *s, int32_t c, uint32_t ep) {
    if (mt_vec_reserve(&s->cc, &s->ccc, s->ncc + 1)) return 0;
    cnst *x = ready(s, c);
    x->mark = ep;
    x->rem = x->cap;
    x->unfixed = -x->n;
    s->cc[s->ncc++] = c;
    return 1;
}

/* The component reachable from the modified constraints into cc / cv; empties the set. */
static int collect(mt_lmm *s) {
    uint32_t ep = ++s->epoch;
    s->ncc = s->ncv = 0;
    int ok = 1;
    for (int64_t i = 0; i < s->nmod; i++) {
        cnst *c = &s->c[s->mod[i]];
        c->modified = 0;
        if (ok && c->mark != ep && c->n > 0) ok = add_cnst(s, s->mod[i], ep);
    }
    s->nmod = 0;
    for (int64_t i = 0; ok && i < s->ncc; i++) {
        const cnst *c = &s->c[s->cc[i]];
        for (int32_t k = 0; ok && k < c->n; k++) {
            var *x = &s->v[c->el[k].var];
            if (x->mark == ep) continue;
            x->mark = ep;
            if (mt_vec_reserve(&s->cv, &s->ccv, s->ncv + 1)) return 0;
            s->cv[s->ncv++] = c->el[k].var;
            const int32_t *list = var_cnsts(x);
            for (int32_t h = 0; ok && h < x->n; h++)
                if (s->c[list[h]].mark != ep) ok = add_cnst(s, list[h], ep);
        }
    }
    return ok;
}

/* The last variable of m is fixed: what it uses is final. */
static inline void settle_cnst(cnst *m) { m->usage = m->cap - (m->rem > 0 ? m->rem : 0); }

/* Fixes the unfixed variables of constraint `at` at `share` and takes it off their other
 * constraints, re-pushing those that still have unfixed variables. */
static int fix_at(mt_lmm *s, int32_t at, double share) {
    const cnst *c = &s->c[at];
    for (int32_t k = 0; k < c->n; k++) {
        var *x = &s->v[c->el[k].var];
        if (x->new_value >= 0) continue;
        x->new_value = share;
        const int32_t *list = var_cnsts(x);
        for (int32_t h = 0; h < x->n; h++) {
            cnst *m = &s->c[list[h]];
            m->rem -= share;
            if (--m->unfixed == 0) settle_cnst(m);
            else if (list[h] != at && !heap_push(s, (m->rem > 0 ? m->rem : 0) / m->unfixed, list[h], ++m->ver))
                return 0;
        }
    }
    return 1;
}

/* A variable alone on each of its constraints: its value is the smallest capacity, fixed here
 * without the heap, with the same arithmetic as a pop of that constraint (share = cap / 1). */
static int fix_alone(mt_lmm *s, var *x) {
    const int32_t *list = var_cnsts(x);
    double share = -1;
    for (int32_t h = 0; h < x->n; h++) {
        const cnst *m = &s->c[list[h]];
        if (m->n != 1) return 0;
        if (share < 0 || m->cap < share) share = m->cap;
    }
    if (share < 0) return 0;
    if (!(share > 0)) share = 0;
    x->new_value = share;
    for (int32_t h = 0; h < x->n; h++) {
        cnst *m = &s->c[list[h]];
        m->rem -= share;
        m->unfixed = 0;
        settle_cnst(m);
    }
    return 1;
}

/* Progressive filling of the collected component. Every constraint of a variable that is not
 * alone goes on the heap once at its first share (rem = cap, unfixed = n: no alone variable
 * shares it), then the heap is made in O(C). */
static int fill(mt_lmm *s) {
    if (mt_vec_reserve(&s->heap, &s->hcap, s->ncc)) return 0;
    s->nheap = 0;
    for (int64_t i = 0; i < s->ncv; i++) {
        var *x = &s->v[s->cv[i]];
        x->new_value = -1;
        if (fix_alone(s, x)) continue;
        const int32_t *list = var_cnsts(x);
        for (int32_t h = 0; h < x->n; h++) {
            cnst *c = &s->c[list[h]];
            if (c->unfixed >= 0) continue;
            c->unfixed = c->n;
            s->heap[s->nheap++] = (hitem){c->rem / c->n, list[h], ++c->ver};
        }
    }
    for (int64_t i = s->nheap / 2 - 1; i >= 0; i--) sift_down(s->heap, s->nheap, i, s->heap[i]);
    while (s->nheap > 0) {
        hitem it = heap_pop(s);
        const cnst *c = &s->c[it.cnst];
        if (it.ver != c->ver || c->unfixed == 0) continue;
        if (!fix_at(s, it.cnst, it.share > 0 ? it.share : 0)) return 0;
    }
    return 1;
}

mt_status mt_lmm_solve(mt_lmm *s, mt_error *err) {
    if (s->nmod == 0) {
        s->ncc = s->ncv = s->nchg = 0;
        return MT_OK;
    }
    s->nchg = 0;
    if (!collect(s) || !fill(s) || mt_vec_reserve(&s->chg, &s->cchg, s->ncv)) {
        s->ncc = s->ncv = 0;
        return mt_fail(err, MT_ENOMEM, "max-min solver: out of memory solving the flow rates");
    }
    for (int64_t i = 0; i < s->ncv; i++) {
        var *x = &s->v[s->cv[i]];
        if (x->new_value != x->value) s->chg[s->nchg++] = s->cv[i];
        x->value = x->new_value;
    }
    return MT_OK;
}

const int32_t *mt_lmm_solved_vars(const mt_lmm *s, int32_t *n) {
    *n = (int32_t)s->ncv;
    return s->cv;
}

const int32_t *mt_lmm_solved_cnsts(const mt_lmm *s, int32_t *n) {
    *n = (int32_t)s->ncc;
    return s->cc;
}

const int32_t *mt_lmm_changed_vars(const mt_lmm *s, int32_t *n) {
    *n = (int32_t)s->nchg;
    return s->chg;
}

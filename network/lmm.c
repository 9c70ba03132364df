/* network/lmm.c — see lmm.h.
 *
 * Layout: a constraint holds its elements as (variable, index k in the variable's list); a
 * variable holds its constraint ids then, at the same k, its slot in each constraint's element
 * array — inline for up to INLINE_CNSTS constraints (the hops of most routes), else on the heap.
 * The solve walks: collect (breadth-first component from the modified set, marking with an
 * epoch so nothing is cleared afterwards), fill (progressive filling with a binary heap of
 * (share, constraint, version): a constraint re-pushed with a new version makes its older
 * entries stale), and settle (values stored, the changed ones listed).
 */
#include "network/lmm.h"

#include <stdlib.h>
#include <string.h>

#include "util/vec.h"

#define INLINE_CNSTS 6

typedef struct elem {
    int32_t var, k;
} elem;

typedef struct cnst {
    double cap, rem, usage;
    int32_t n, unfixed;
    int64_t ecap;
    uint32_t mark, ver;
    int32_t modified;
    elem *el;
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
    for (int64_t i = 0; i < s->nc; i++) free(s->c[i].el);
    for (int64_t i = 0; i < s->nv; i++)
        if (s->v[i].n > INLINE_CNSTS) free(s->v[i].h.heap);
    free(s->c);
    free(s->v);
    free(s->mod);
    free(s->cc);
    free(s->cv);
    free(s->chg);
    free(s->heap);
    free(s);
}

static void mark(mt_lmm *s, int32_t c) {
    if (s->c[c].modified) return;
    s->c[c].modified = 1;
    s->mod[s->nmod++] = c; /* room reserved by mt_lmm_cnst_new */
}

/* ---- constraints ---- */

int32_t mt_lmm_cnst_new(mt_lmm *s, double capacity) {
    if (s->nc >= INT32_MAX || mt_vec_reserve(&s->c, &s->ccap, s->nc + 1) ||
        mt_vec_reserve(&s->mod, &s->modcap, s->nc + 1))
        return -1;
    cnst *c = &s->c[s->nc];
    memset(c, 0, sizeof *c);
    c->cap = c->rem = capacity;
    return (int32_t)s->nc++;
}

void mt_lmm_cnst_set_capacity(mt_lmm *s, int32_t c, double capacity) {
    s->c[c].cap = capacity;
    mark(s, c);
}

double mt_lmm_cnst_capacity(const mt_lmm *s, int32_t c) { return s->c[c].cap; }
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

mt_status mt_lmm_var_attach(mt_lmm *s, int32_t v, const int32_t *cnsts, int32_t n, mt_error *err) {
    for (int32_t k = 0; k < n; k++) { /* room first, so that a failure changes nothing */
        cnst *c = &s->c[cnsts[k]];
        if (mt_vec_reserve(&c->el, &c->ecap, c->n + 1))
            return mt_fail(err, MT_ENOMEM, "max-min solver: out of memory adding a flow");
    }
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
        mark(s, cnsts[k]);
    }
    x->attached = 1;
    return MT_OK;
}

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

static int heap_push(mt_lmm *s, double share, int32_t c, uint32_t ver) {
    if (mt_vec_reserve(&s->heap, &s->hcap, s->nheap + 1)) return 0;
    int64_t i = s->nheap++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (s->heap[p].share <= share) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = (hitem){share, c, ver};
    return 1;
}

static hitem heap_pop(mt_lmm *s) {
    hitem top = s->heap[0], last = s->heap[--s->nheap];
    int64_t i = 0, n = s->nheap;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && s->heap[c + 1].share < s->heap[c].share) c++;
        if (s->heap[c].share >= last.share) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n > 0) s->heap[i] = last;
    return top;
}

static int add_cnst(mt_lmm *s, int32_t c, uint32_t ep) {
    if (mt_vec_reserve(&s->cc, &s->ccc, s->ncc + 1)) return 0;
    s->c[c].mark = ep;
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
            m->unfixed--;
            if (list[h] != at && m->unfixed > 0 && !heap_push(s, (m->rem > 0 ? m->rem : 0) / m->unfixed, list[h], ++m->ver))
                return 0;
        }
    }
    return 1;
}

static int fill(mt_lmm *s) {
    s->nheap = 0;
    for (int64_t i = 0; i < s->ncv; i++) s->v[s->cv[i]].new_value = -1;
    for (int64_t i = 0; i < s->ncc; i++) {
        cnst *c = &s->c[s->cc[i]];
        c->rem = c->cap;
        c->unfixed = c->n;
        if (!heap_push(s, c->rem / c->n, s->cc[i], ++c->ver)) return 0;
    }
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
    for (int64_t i = 0; i < s->ncc; i++) {
        cnst *c = &s->c[s->cc[i]];
        c->usage = c->cap - (c->rem > 0 ? c->rem : 0);
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

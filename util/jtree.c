/* util/jtree.c — JSON subtrees in a reused arena (util/jtree.h). */
#include "util/jtree.h"

#include <stdlib.h>
#include <string.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define JT_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define JT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define JT_POISON(p, n) ((void)(p), (void)(n))
#define JT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

enum { JT_BLOCK_MIN = 64 * 1024, JT_ALIGN = 16 };

struct mt_jt_block {
    mt_jt_block *next;
    size_t cap, used;
    _Alignas(JT_ALIGN) unsigned char data[];
};

const mt_jt *mt_jt_get(const mt_jt *v, const char *key) {
    if (!mt_jt_is_object(v)) return NULL;
    for (uint32_t k = v->n; k-- > 0;)
        if (!strcmp(v->kids[k]->key, key)) return v->kids[k];
    return NULL;
}

/* ---- the arena -------------------------------------------------------------------------- */

static mt_jt_block *block_new(size_t cap, mt_jt_block *next) {
    mt_jt_block *k = malloc(sizeof *k + cap);
    if (!k) return NULL;
    k->next = next;
    k->cap = cap;
    k->used = 0;
    JT_POISON(k->data, cap);
    return k;
}

static void block_free(mt_jt_block *k) {
    JT_UNPOISON(k->data, k->cap);
    free(k);
}

static void *arena_alloc(mt_jtb *b, size_t n) {
    n = (n + JT_ALIGN - 1) & ~(size_t)(JT_ALIGN - 1);
    mt_jt_block *k = b->blocks;
    if (!k || k->cap - k->used < n) {
        size_t cap = k && 2 * k->cap > JT_BLOCK_MIN ? 2 * k->cap : JT_BLOCK_MIN;
        if (cap < n) cap = n;
        if (!(k = block_new(cap, b->blocks))) return NULL;
        b->blocks = k;
    }
    void *p = k->data + k->used;
    k->used += n;
    JT_UNPOISON(p, n);
    return p;
}

/* One block as large as all of them, empty: the next value of this size fits without a malloc. */
static void arena_reset(mt_jtb *b) {
    mt_jt_block *k = b->blocks;
    if (!k) return;
    if (!k->next) {
        JT_POISON(k->data, k->cap);
        k->used = 0;
        return;
    }
    size_t cap = 0;
    while (k) {
        mt_jt_block *next = k->next;
        cap += k->cap;
        block_free(k);
        k = next;
    }
    b->blocks = block_new(cap, NULL); /* NULL: the next alloc makes one */
}

static char *arena_str(mt_jtb *b, const char *s, size_t len) {
    char *c = arena_alloc(b, len + 1);
    if (!c) return NULL;
    memcpy(c, s, len);
    c[len] = '\0';
    return c;
}

/* ---- building --------------------------------------------------------------------------- */

void mt_jtb_init(mt_jtb *b) { memset(b, 0, sizeof *b); }

void mt_jtb_reset(mt_jtb *b) {
    arena_reset(b);
    b->depth = 0;
    b->key = NULL;
    b->done = NULL;
    b->failed = 0;
}

int mt_jtb_blocks(const mt_jtb *b) {
    int n = 0;
    for (const mt_jt_block *k = b->blocks; k; k = k->next) n++;
    return n;
}

void mt_jtb_free(mt_jtb *b) {
    for (mt_jt_block *k = b->blocks, *next; k; k = next) next = k->next, block_free(k);
    free(b->stack);
    memset(b, 0, sizeof *b);
}

const mt_jt *mt_jtb_value(const mt_jtb *b) { return b->failed || b->depth ? NULL : b->done; }

static int oom(mt_jtb *b) { return b->failed = 1, 0; }

/* A new value of type t added to the open container (or made the value); NULL when out of memory. */
static mt_jt *add(mt_jtb *b, mt_jt_type t) {
    mt_jt *v = arena_alloc(b, sizeof *v);
    if (!v) return oom(b), NULL;
    memset(v, 0, sizeof *v);
    v->type = t;
    if (b->depth == 0) return b->done = v;
    mt_jt *p = b->stack[b->depth - 1];
    if (p->n == UINT32_MAX) return oom(b), NULL;
    if (p->type == MT_JT_OBJECT) {
        v->key = b->key ? b->key : "";
        b->key = NULL;
    }
    if (p->last) p->last->next = v;
    else p->first = v;
    p->last = v;
    p->n++;
    return v;
}

static int jt_value(void *c, const mt_jv *j) {
    mt_jtb *b = c;
    static const mt_jt_type types[] = {[MT_JV_NULL] = MT_JT_NULL, [MT_JV_FALSE] = MT_JT_FALSE, [MT_JV_TRUE] = MT_JT_TRUE,
                                       [MT_JV_INT] = MT_JT_INT, [MT_JV_REAL] = MT_JT_REAL, [MT_JV_STRING] = MT_JT_STRING};
    mt_jt *v = add(b, types[j->type]);
    if (!v) return 0;
    v->i = j->i;
    v->d = j->d;
    if (j->type == MT_JV_STRING) {
        if (!(v->s = arena_str(b, j->s, j->len))) return oom(b);
        v->len = j->len;
    }
    return 1;
}

static int jt_open(mt_jtb *b, mt_jt_type t) {
    if (b->depth == b->cap) {
        int64_t cap = b->cap ? 2 * b->cap : 16;
        mt_jt **st = realloc(b->stack, (size_t)cap * sizeof *st);
        if (!st) return oom(b);
        b->stack = st;
        b->cap = cap;
    }
    mt_jt *v = add(b, t);
    if (!v) return 0;
    b->stack[b->depth++] = v;
    return 1;
}

static int jt_start_map(void *c) { return jt_open(c, MT_JT_OBJECT); }
static int jt_start_array(void *c) { return jt_open(c, MT_JT_ARRAY); }

/* The key, up to its first NUL. */
static int jt_key(void *c, const char *k, size_t len) {
    mt_jtb *b = c;
    const char *nul = memchr(k, '\0', len);
    return (b->key = arena_str(b, k, nul ? (size_t)(nul - k) : len)) ? 1 : oom(b);
}

/* The innermost container closes: its children become an array. */
static int jt_end(void *c) {
    mt_jtb *b = c;
    mt_jt *v = b->stack[--b->depth];
    if (v->n && !(v->kids = arena_alloc(b, v->n * sizeof *v->kids))) return oom(b);
    uint32_t k = 0;
    for (mt_jt *x = v->first; x; x = x->next) v->kids[k++] = x;
    return 1;
}

const mt_jsax mt_jtb_sax = {jt_value, jt_start_map, jt_key, jt_end, jt_start_array, jt_end};

/* util/imap.c — see imap.h. */
#include "util/imap.h"

#include <stdlib.h>

#define EMPTY INT64_MIN

void mt_imap_init(mt_imap *m) {
    m->keys = NULL;
    m->vals = NULL;
    m->cap = 0;
    m->len = 0;
}

void mt_imap_destroy(mt_imap *m) {
    free(m->keys);
    free(m->vals);
    mt_imap_init(m);
}

static int64_t slot_of(const mt_imap *m, int64_t key) {
    uint64_t mask = (uint64_t)m->cap - 1;
    uint64_t i = mt_hash64((uint64_t)key) & mask;
    while (m->keys[i] != EMPTY && m->keys[i] != key) i = (i + 1) & mask;
    return (int64_t)i;
}

static int grow(mt_imap *m) {
    int64_t ncap = m->cap ? m->cap * 2 : 64;
    int64_t *nk = malloc((size_t)ncap * sizeof *nk);
    int64_t *nv = malloc((size_t)ncap * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    for (int64_t i = 0; i < ncap; i++) nk[i] = EMPTY;
    mt_imap old = *m;
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    for (int64_t i = 0; i < old.cap; i++) {
        if (old.keys[i] == EMPTY) continue;
        int64_t s = slot_of(m, old.keys[i]);
        m->keys[s] = old.keys[i];
        m->vals[s] = old.vals[i];
    }
    free(old.keys);
    free(old.vals);
    return 0;
}

int mt_imap_put_new(mt_imap *m, int64_t key, int64_t val, int64_t *existing) {
    if (key == EMPTY) return -1;
    if ((m->len + 1) * 2 > m->cap && grow(m) != 0) return -1;
    int64_t s = slot_of(m, key);
    if (m->keys[s] == key) {
        if (existing) *existing = m->vals[s];
        return 0;
    }
    m->keys[s] = key;
    m->vals[s] = val;
    m->len++;
    if (existing) *existing = val;
    return 1;
}

mt_status mt_imap_put(mt_imap *m, int64_t key, int64_t val) {
    if (key == EMPTY) return MT_EINVAL;
    if ((m->len + 1) * 2 > m->cap && grow(m) != 0) return MT_ENOMEM;
    int64_t s = slot_of(m, key);
    if (m->keys[s] != key) {
        m->keys[s] = key;
        m->len++;
    }
    m->vals[s] = val;
    return MT_OK;
}

int mt_imap_get(const mt_imap *m, int64_t key, int64_t *val) {
    if (m->cap == 0 || key == EMPTY) return 0;
    int64_t s = slot_of(m, key);
    if (m->keys[s] != key) return 0;
    if (val) *val = m->vals[s];
    return 1;
}

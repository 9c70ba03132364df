/* util/u64map.c — see u64map.h. Invariant: len <= cap / 2, so probing always ends. */
#include "util/u64map.h"

#include <stdlib.h>

uint64_t mt_hash64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t mt_hash_str(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

void mt_u64map_init(mt_u64map *m) {
    m->keys = NULL;
    m->vals = NULL;
    m->used = NULL;
    m->cap = 0;
    m->len = 0;
}

void mt_u64map_destroy(mt_u64map *m) {
    free(m->keys);
    free(m->vals);
    free(m->used);
    mt_u64map_init(m);
}

static size_t probe(const mt_u64map *m, uint64_t key) {
    size_t mask = m->cap - 1, i = (size_t)mt_hash64(key) & mask;
    while (m->used[i] && m->keys[i] != key) i = (i + 1) & mask;
    return i;
}

int mt_u64map_get(const mt_u64map *m, uint64_t key, int64_t *val) {
    if (m->cap == 0) return 0;
    size_t i = probe(m, key);
    if (!m->used[i]) return 0;
    if (val) *val = m->vals[i];
    return 1;
}

static mt_status grow(mt_u64map *m, mt_error *err) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    mt_u64map n = {calloc(ncap, sizeof(uint64_t)), calloc(ncap, sizeof(int64_t)),
                   calloc(ncap, 1), ncap, 0};
    if (!n.keys || !n.vals || !n.used) {
        mt_u64map_destroy(&n);
        return mt_fail(err, MT_ENOMEM, "out of memory growing a hash table to %zu slots", ncap);
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i]) continue;
        size_t j = probe(&n, m->keys[i]);
        n.used[j] = 1;
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
        n.len++;
    }
    mt_u64map_destroy(m);
    *m = n;
    return MT_OK;
}

mt_status mt_u64map_put(mt_u64map *m, uint64_t key, int64_t val, mt_error *err) {
    if ((m->len + 1) * 2 > m->cap) MT_CHECK(grow(m, err));
    size_t i = probe(m, key);
    if (!m->used[i]) {
        m->used[i] = 1;
        m->keys[i] = key;
        m->len++;
    }
    m->vals[i] = val;
    return MT_OK;
}

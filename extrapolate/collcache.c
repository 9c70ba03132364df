/* extrapolate/collcache.c — see collcache.h. */
#include "extrapolate/collcache.h"

#include <stdlib.h>
#include <string.h>

#include "util/vec.h"

void mt_collcache_init(mt_collcache *c) {
    memset(c, 0, sizeof *c);
    mt_u64map_init(&c->idx);
}

void mt_collcache_destroy(mt_collcache *c) {
    for (int64_t i = 0; i < c->n; i++) mt_coll_free(c->entries[i].s);
    free(c->entries);
    mt_u64map_destroy(&c->idx);
    mt_collcache_init(c);
}

static int same_params(const mt_coll_params *a, const mt_coll_params *b) {
    return a->op == b->op && a->algo == b->algo && a->nranks == b->nranks && a->bytes == b->bytes &&
           a->root == b->root && a->peer == b->peer && a->ranks_per_node == b->ranks_per_node &&
           a->chunks == b->chunks && a->share == b->share && a->share_by_src == b->share_by_src &&
           a->wire_factor == b->wire_factor && a->extra_lat_ns == b->extra_lat_ns && a->walk == b->walk;
}

static uint64_t hash_params(const mt_coll_params *p) {
    uint64_t bytes;
    memcpy(&bytes, &p->bytes, sizeof bytes);
    uint64_t h = mt_hash64((uint64_t)p->op | (uint64_t)p->algo << 8 | (uint64_t)(uint32_t)p->nranks << 16 |
                           (uint64_t)(uint32_t)p->chunks << 48);
    h ^= mt_hash64(bytes) + 0x9e3779b97f4a7c15ull * (uint64_t)(uint32_t)p->ranks_per_node;
    h ^= mt_hash64((uint64_t)(uint32_t)p->root << 32 | (uint32_t)p->peer);
    uint64_t w, l;
    memcpy(&w, &p->wire_factor, sizeof w);
    memcpy(&l, &p->extra_lat_ns, sizeof l);
    h ^= mt_hash64(w ^ (l * 0x9e3779b97f4a7c15ull));
    return h ^ (p->share ? mt_hash64((uint64_t)(uintptr_t)p->share + (uint64_t)p->share_by_src) : 0);
}

const mt_coll_schedule *mt_collcache_get(mt_collcache *c, const mt_coll_params *p, int64_t *index, mt_error *err) {
    uint64_t key = hash_params(p);
    int64_t at;
    for (; mt_u64map_get(&c->idx, key, &at); key++)
        if (same_params(&c->entries[at].p, p)) {
            if (index) *index = at;
            return c->entries[at].s;
        }
    if (mt_vec_reserve(&c->entries, &c->cap, c->n + 1)) {
        mt_fail(err, MT_ENOMEM, "out of memory caching collective schedules");
        return NULL;
    }
    mt_coll_schedule *s;
    if (mt_coll_build(p, &s, err) != MT_OK) return NULL;
    if (mt_u64map_put(&c->idx, key, c->n, err) != MT_OK) {
        mt_coll_free(s);
        return NULL;
    }
    c->entries[c->n] = (mt_collcache_entry){*p, s};
    if (index) *index = c->n;
    return c->entries[c->n++].s;
}

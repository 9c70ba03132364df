/* util/u64map.h — open-addressing hash map from uint64 keys to int64 values.
 *
 * Used for route caches (key = src * n + dst), circuit tables, name lookups and the tracer's
 * indexes (ET node ids, correlations, sequence numbers, tensor keys; negative ids cast). Linear probing
 * over a power-of-two table kept at most half full; keys are stored with an occupancy flag so
 * every uint64 is a valid key. No deletion (callers only add). Get/put: O(1) expected.
 */
#ifndef MT_UTIL_U64MAP_H
#define MT_UTIL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct mt_u64map {
    uint64_t *keys;
    int64_t *vals;
    uint8_t *used;
    size_t cap; /* power of two, or 0 before the first put */
    size_t len;
} mt_u64map;

void mt_u64map_init(mt_u64map *m);
void mt_u64map_destroy(mt_u64map *m);
/* Returns 1 and sets *val when key is present, 0 otherwise (val may be NULL). */
int mt_u64map_get(const mt_u64map *m, uint64_t key, int64_t *val);
/* Inserts or overwrites. MT_ENOMEM (message set) when the table cannot grow. */
mt_status mt_u64map_put(mt_u64map *m, uint64_t key, int64_t val, mt_error *err);
/* 64-bit mix of a key (splitmix64 finaliser); exported for ECMP hashing. */
uint64_t mt_hash64(uint64_t x);
/* FNV-1a of a NUL-terminated string. */
uint64_t mt_hash_str(const char *s);

#endif

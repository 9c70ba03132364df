/* util/imap.h — open-addressing hash map from int64 keys to int64 values.
 *
 * Linear probing, power-of-two capacity, load factor <= 1/2. INT64_MIN is reserved as the
 * empty marker and cannot be a key. Cost: O(1) expected per operation; grows by doubling.
 */
#ifndef MT_UTIL_IMAP_H
#define MT_UTIL_IMAP_H

#include <stdint.h>

#include "util/err.h"

typedef struct mt_imap {
    int64_t *keys;
    int64_t *vals;
    int64_t cap, len;
} mt_imap;

void mt_imap_init(mt_imap *m);
void mt_imap_destroy(mt_imap *m);
/* Inserts or overwrites. Returns MT_ENOMEM on allocation failure, MT_EINVAL for INT64_MIN. */
mt_status mt_imap_put(mt_imap *m, int64_t key, int64_t val);
/* Inserts only when absent; *existing (if non-NULL) receives the stored value either way.
 * Returns 1 when inserted, 0 when present, -1 on allocation failure. */
int mt_imap_put_new(mt_imap *m, int64_t key, int64_t val, int64_t *existing);
/* Returns 1 and fills *val when present, else 0. */
int mt_imap_get(const mt_imap *m, int64_t key, int64_t *val);

/* 64-bit mixer (splitmix64 finaliser), for combining keys. */
static inline uint64_t mt_hash64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

#endif

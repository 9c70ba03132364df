/* extrapolate/collcache.h — collective schedules built once per distinct mt_coll_params and kept.
 *
 * Every runner of schedules (the simulator, the Chakra as-is executor, the MPI emulator) asks for
 * the schedule of a collective many times over with the same parameters (1024 GPUs' gradient
 * buckets are one schedule); the cache builds it on first use and returns the same one after.
 * Invariant: entries[i] holds the parameters and the schedule of the i-th distinct request, in
 * order of first use; no two entries have equal parameters (every field compared, `share` by
 * address). The index of a request is stable, so a caller may keep data of its own beside it.
 * Costs: a lookup is one hash and one comparison per colliding entry (O(1) expected); memory is
 * the schedules themselves plus O(entries).
 */
#ifndef MT_EXTRAPOLATE_COLLCACHE_H
#define MT_EXTRAPOLATE_COLLCACHE_H

#include <stdint.h>

#include "extrapolate/collective.h"
#include "util/err.h"
#include "util/u64map.h"

typedef struct mt_collcache_entry {
    mt_coll_params p;
    mt_coll_schedule *s;
} mt_collcache_entry;

typedef struct mt_collcache {
    mt_collcache_entry *entries;
    int64_t n, cap;
    mt_u64map idx;           /* hash of the parameters (probed forward on collision) -> entry */
} mt_collcache;

void mt_collcache_init(mt_collcache *c);
/* Frees every schedule; the cache is empty (and initialised) again. */
void mt_collcache_destroy(mt_collcache *c);

/* The schedule for p, built (mt_coll_build) the first time; *index (may be NULL) its entry.
 * NULL with err filled when building fails (its error) or memory runs out. */
const mt_coll_schedule *mt_collcache_get(mt_collcache *c, const mt_coll_params *p, int64_t *index, mt_error *err);

#endif

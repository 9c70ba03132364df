/* extrapolate/spare.h — freed stage-program arrays (tasks, items) kept for the next program built,
 * so that a plan search building hundreds of programs touches the same pages again instead of
 * fresh ones: at 1,024 GPUs a pipelined plan's program is hundreds of MB, and the page faults of
 * fresh memory were a third of the build's time.
 *
 * mt_spare_put(p) hands a malloc'd array over (NULL is ignored): it is kept, or freed when the pool
 * holds MT_SPARE_MAX arrays or MT_SPARE_BYTES in all. mt_spare_take(bytes, &cap, elem) returns the
 * kept array that best fits `bytes` (the smallest at least that large, else the largest), NULL
 * when none is kept; *cap becomes its size in elements of `elem` bytes. The caller owns what it
 * took (realloc, free, or put back). Thread-safe (one mutex); contents of a taken array are
 * undefined.
 * Invariant: the pool's arrays are malloc'd blocks no one else holds; their sizes add to `total`.
 * Costs: O(MT_SPARE_MAX) per call.
 */
#ifndef MT_EXTRAPOLATE_SPARE_H
#define MT_EXTRAPOLATE_SPARE_H

#include <stddef.h>
#include <stdint.h>

enum { MT_SPARE_MAX = 1024 };
#define MT_SPARE_BYTES ((size_t)256 << 20)

void mt_spare_put(void *p);
void *mt_spare_take(size_t bytes, int64_t *cap, size_t elem);

#endif

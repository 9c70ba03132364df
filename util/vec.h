/* util/vec.h — growable arrays of any element type: a pointer, a length and a capacity.
 *
 * mt_vec_reserve(&ptr, &cap, need) makes room for `need` elements (doubling); it returns 0 or
 * -1 when allocation fails (ptr is then unchanged). Amortised O(1) per element.
 */
#ifndef MT_UTIL_VEC_H
#define MT_UTIL_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static inline int mt_vec_grow_(void **ptr, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return 0;
    int64_t ncap = *cap ? *cap : 16;
    while (ncap < need) ncap *= 2;
    void *p = realloc(*ptr, (size_t)ncap * elem);
    if (!p) return -1;
    *ptr = p;
    *cap = ncap;
    return 0;
}

#define mt_vec_reserve(pptr, pcap, need) \
    mt_vec_grow_((void **)(pptr), (pcap), (need), sizeof **(pptr))

#endif

/* util/hugemem.c — see hugemem.h. */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE */
#include "util/hugemem.h"

#include <stdint.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

void mt_hugemem_advise(void *p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (!p || bytes < MT_HUGEMEM_MIN) return;
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

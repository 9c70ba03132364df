/* util/hugemem.h — a hint that a large array be backed by transparent huge pages.
 *
 * At 2^20 GPUs the simulator's per-GPU and per-link arrays are hundreds of MB each, first touched
 * page by page: 4 KiB page faults and TLB misses were half the CPU time of ResNet-50 DDP at
 * 1,048,576 GPUs (issue 47). mt_hugemem_advise asks the kernel (madvise MADV_HUGEPAGE, Linux) to
 * back the 2 MiB-aligned interior of [p, p + bytes) with huge pages when they are first touched;
 * nothing else changes (contents, ownership: the caller still frees p as before).
 *
 * Invariant: a hint only; arrays under MT_HUGEMEM_MIN bytes, systems without THP (or another
 * kernel) and any failure leave the memory as it was: it never changes a result.
 */
#ifndef MT_UTIL_HUGEMEM_H
#define MT_UTIL_HUGEMEM_H

#include <stddef.h>

#define MT_HUGEMEM_MIN ((size_t)8 << 20)

void mt_hugemem_advise(void *p, size_t bytes);

#endif

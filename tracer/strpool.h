/* tracer/strpool.h — interned strings of a trace.
 *
 * Invariant: every string a trace points at (op, kernel, tensor, layer names) lives in the
 * trace's pool, exactly once, so two interned strings are equal iff their pointers are equal
 * (the linker compares Kineto and Execution Trace names by pointer). The pool is a chained hash
 * table (FNV-1a) that doubles when half full; strings are freed only with the pool.
 * Cost: O(length) per intern, amortised.
 */
#ifndef MT_TRACER_STRPOOL_H
#define MT_TRACER_STRPOOL_H

#include <stdint.h>

typedef struct trace_strpool trace_strpool;

/* A new empty pool, NULL on allocation failure. */
trace_strpool *mt_strpool_new(void);
void mt_strpool_free(trace_strpool *p);
/* Returns the interned copy of s (n bytes, or strlen when n < 0); NULL when s is NULL or on
 * allocation failure. */
const char *mt_strpool_intern(trace_strpool *p, const char *s, int64_t n);

#endif

/* tracer/limits.h — plausibility bounds every trace reader applies.
 *
 * Readers refuse values outside these, naming the file and the place, instead of letting a
 * damaged number overflow the int64 times and sizes downstream (simulated time is int64 ps,
 * network/sched.h). A time is at most TRACE_MAX_NS from the trace's first event and a duration
 * at most that long (1e15 ns, 11.6 days: no profiled step is near it); a tensor dimension or
 * element count is in 0..TRACE_MAX_NUMEL (1e12, a 4 TB fp32 tensor); an element is at most
 * TRACE_MAX_ITEMSIZE bytes; a communication group has 1..INT32_MAX members.
 */
#ifndef MT_TRACER_LIMITS_H
#define MT_TRACER_LIMITS_H

#include <jansson.h>
#include <stdint.h>

#define TRACE_MAX_NS 1e15
#define TRACE_MAX_NUMEL INT64_C(1000000000000)
#define TRACE_MAX_ITEMSIZE 64

/* A communication group size from a trace integer: 1..INT32_MAX, else 0 (unknown). */
static inline int32_t trace_group_size_of(int64_t n) { return n > 0 && n <= INT32_MAX ? (int32_t)n : 0; }
/* The same from a JSON value: 0 unless an integer. */
static inline int32_t trace_group_size(json_t *v) {
    return json_is_integer(v) ? trace_group_size_of((int64_t)json_integer_value(v)) : 0;
}

#endif

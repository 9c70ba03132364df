/* sim/busy.h — a virtual GPU's device busy time that is not yet accounted (busy.c): the spans
 * its streams are busy after `acct`, the time up to which the simulator has split the GPU's time
 * into compute, host wait, exposed communication and bubble.
 *
 * Compute is device busy time, the union over the GPU's streams: whenever the GPU's cursor moves
 * from acct to t, mt_busy_take gives the busy part of [acct, t) (compute) and the rest goes to
 * whatever the cursor waited for, so the per-GPU identity holds however streams overlap.
 * Invariant: spans are sorted, disjoint, non-empty and lie after acct (a span added partly
 * before acct keeps only its part after it: time before acct is accounted already).
 * Costs: add O(spans), take O(spans taken); spans stay few (the streams' work ahead of the
 * cursor). Memory: one array grown on demand.
 */
#ifndef MT_SIM_BUSY_H
#define MT_SIM_BUSY_H

#include <stdint.h>

#include "sim/engine.h"

typedef struct mt_busy {
    mt_time_ps *span;      /* start, end pairs */
    int32_t n, cap;
    mt_time_ps acct;
} mt_busy;

void mt_busy_free(mt_busy *b);
/* Adds the busy span [s, e) (merged with those it touches). 0 when out of memory. */
int mt_busy_add(mt_busy *b, mt_time_ps s, mt_time_ps e);
/* The busy time in [acct, t), which is forgotten; acct becomes t (t <= acct: 0, unchanged). */
mt_time_ps mt_busy_take(mt_busy *b, mt_time_ps t);
/* The end of the last busy span, or acct without any. */
mt_time_ps mt_busy_end(const mt_busy *b);

#endif

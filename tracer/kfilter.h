/* tracer/kfilter.h — which events of a multi-step Kineto trace the reader keeps when the step to
 * build is known before the file is read (kfilter.c).
 *
 * The targets are ProfilerStep numbers, at most two: the step to build (`--step K`) and the step
 * the Execution Trace recorded (its ProfilerStep#E node; the ET is read first, load.c), whose
 * events linking matches (the method is chosen over what it matches, whatever step is built);
 * or, for a Kineto trace alone built by default (its last step), KFILTER_LAST: the latest window
 * seen so far, moving as later ones come.
 * While the Kineto file streams, the reader shows the filter every ProfilerStep annotation
 * (mt_kfilter_marker: the step windows, always kept) and asks it of every other event
 * (mt_kfilter_keep). An event is dropped when its interval [ts, ts + dur] lies
 *  - inside a known window ProfilerStep#J with |J - T| >= 2 for every target T (the file's
 *    events come in any order, so this holds before a target's window is known), or
 *  - once every target's window is known, outside each target's neighbourhood: from the start of
 *    the window just before it in time to the end of the window just after it (a side is open
 *    until that window is known).
 * So the steps T-1, T and T+1 of each target and whatever lies outside every window are kept
 * (the step's ops, the events enclosing them, their runtime calls, kernels running late into the
 * next step, the previous step's kernels still running), the rest is not: memory follows a step,
 * not the file. Assumed, as in every real trace: an op of step T and its kernels end before step
 * T+2 begins, and no kernel of step T was launched before step T-1.
 * Invariant: the windows are sorted by start; lo <= hi for each known target.
 * mt_kfilter_verify says whether the numbers told the truth (no window next to a target's in
 * time lost events to the number rule); when not, load.c reads the file again keeping
 * everything, as it does when another step than the target gets built.
 * Cost: O(log W) per event for W windows, O(W) per marker.
 */
#ifndef MT_TRACER_KFILTER_H
#define MT_TRACER_KFILTER_H

#include <stdint.h>

#include "util/err.h"

#define KFILTER_MARKER "ProfilerStep#"
#define KFILTER_TARGETS 2
#define KFILTER_LAST (-2)  /* a target: the latest ProfilerStep window */

typedef struct kwin {
    double start_us, end_us;
    int number;
    int64_t dropped_by_number; /* events inside it the number rule dropped */
} kwin;

typedef struct ktarget {
    int step;                  /* its number (KFILTER_LAST: of the latest window, once known) */
    int last;                  /* KFILTER_LAST */
    int known;                 /* a ProfilerStep#step window was seen */
    double start_us, end_us;   /* the union of its windows */
    double lo_us, hi_us;       /* its neighbourhood ([-inf, +inf) sides until known) */
} ktarget;

typedef struct kfilter {
    ktarget t[KFILTER_TARGETS]; int n_t;  /* n_t 0: keep everything */
    kwin *win; int64_t n_win, cap_win;
    int64_t n_changes;         /* markers seen: a compaction may drop more after each */
    int64_t dropped, dropped_by_number;
} kfilter;

/* A filter keeping the neighbourhoods of ProfilerStep#a and #b (-1: none; both -1 keeps all;
 * a may be KFILTER_LAST). */
void mt_kfilter_init(kfilter *f, int a, int b);
void mt_kfilter_destroy(kfilter *f);
/* A ProfilerStep annotation "ProfilerStep#number" over [ts, ts + dur] us. MT_ENOMEM. */
mt_status mt_kfilter_marker(kfilter *f, double ts_us, double dur_us, int number);
/* 1 when an event over [ts, ts + dur] us is kept (counts a drop otherwise); asked again of the
 * events kept so far after more markers came (a compaction), it drops what they now place far. */
int mt_kfilter_keep(kfilter *f, double ts_us, double dur_us);
/* After the file: 1 when every drop was sound (see above). */
int mt_kfilter_verify(const kfilter *f);
/* The number of target i (after the file: KFILTER_LAST's is the latest window's), -1 unknown. */
int mt_kfilter_step(const kfilter *f, int i);

#endif

/* tracer/kfilter.c — the step filter of the Kineto reader (see kfilter.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/kfilter.h"
#include "util/vec.h"

void mt_kfilter_init(kfilter *f, int a, int b) {
    memset(f, 0, sizeof *f);
    int steps[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        int last = i == 0 && steps[i] == KFILTER_LAST;
        if ((steps[i] < 0 && !last) || (i == 1 && f->n_t == 1 && steps[1] == f->t[0].step)) continue;
        f->t[f->n_t++] = (ktarget){.step = last ? -1 : steps[i], .last = last, .lo_us = -INFINITY, .hi_us = INFINITY};
    }
}

void mt_kfilter_destroy(kfilter *f) {
    free(f->win);
    f->win = NULL;
    f->n_win = f->cap_win = 0;
}

/* 1 when step `number` is at least 2 from every target (KFILTER_LAST before any window: near all). */
static int far(const kfilter *f, int number) {
    for (int i = 0; i < f->n_t; i++)
        if ((f->t[i].last && !f->t[i].known) || abs(number - f->t[i].step) < 2) return 0;
    return 1;
}

/* Target t's neighbourhood: from the start of the latest window ending before it to the end of
 * the earliest window starting after it. O(W). */
static void neighbourhood(const kfilter *f, ktarget *t) {
    t->lo_us = -INFINITY;
    t->hi_us = INFINITY;
    for (int64_t i = 0; i < f->n_win; i++) {
        const kwin *w = &f->win[i];
        if (w->end_us <= t->start_us && w->start_us > t->lo_us) t->lo_us = w->start_us;
        if (w->start_us >= t->end_us && w->end_us < t->hi_us) t->hi_us = w->end_us;
    }
}

mt_status mt_kfilter_marker(kfilter *f, double ts_us, double dur_us, int number) {
    if (f->n_t == 0) return MT_OK;
    if (mt_vec_reserve(&f->win, &f->cap_win, f->n_win + 1)) return MT_ENOMEM;
    int64_t at = f->n_win;
    while (at > 0 && f->win[at - 1].start_us > ts_us) at--; /* markers mostly come in time order */
    memmove(f->win + at + 1, f->win + at, (size_t)(f->n_win - at) * sizeof *f->win);
    f->win[at] = (kwin){ts_us, ts_us + dur_us, number, 0};
    f->n_win++;
    f->n_changes++;
    for (int i = 0; i < f->n_t; i++) {
        ktarget *t = &f->t[i];
        if (t->last && (!t->known || ts_us > t->start_us)) { /* a later window: the target moves */
            *t = (ktarget){.step = number, .last = 1, .known = 1, .start_us = ts_us, .end_us = ts_us + dur_us};
        } else if (number == t->step && !t->last) {
            if (!t->known || ts_us < t->start_us) t->start_us = ts_us;
            if (!t->known || ts_us + dur_us > t->end_us) t->end_us = ts_us + dur_us;
            t->known = 1;
        }
        if (t->known) neighbourhood(f, t);
    }
    return MT_OK;
}

/* Whether the event is kept; *by_number the window whose number drops it, else -1. */
static int would_keep(const kfilter *f, double ts_us, double dur_us, int64_t *by_number) {
    double end_us = ts_us + (dur_us > 0 ? dur_us : 0);
    int all_known = f->n_t > 0, near = 0;
    *by_number = -1;
    if (f->n_t == 0) return 1;
    for (int i = 0; i < f->n_t; i++) {
        all_known &= f->t[i].known;
        near |= f->t[i].known && end_us >= f->t[i].lo_us && ts_us < f->t[i].hi_us;
    }
    if (all_known && !near) return 0;
    int64_t lo = 0, hi = f->n_win; /* the last window starting at or before ts */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (f->win[mid].start_us <= ts_us) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return 1;
    const kwin *w = &f->win[lo - 1];
    if (end_us <= w->end_us && far(f, w->number)) {
        *by_number = lo - 1;
        return 0;
    }
    return 1;
}

int mt_kfilter_keep(kfilter *f, double ts_us, double dur_us) {
    int64_t by_number;
    if (would_keep(f, ts_us, dur_us, &by_number)) return 1;
    f->dropped++;
    if (by_number >= 0) {
        f->dropped_by_number++;
        f->win[by_number].dropped_by_number++;
    }
    return 0;
}

int mt_kfilter_verify(const kfilter *f) {
    if (f->dropped_by_number == 0) return 1;
    for (int t = 0; t < f->n_t; t++)
        if (!f->t[t].known) return 0;
    for (int64_t i = 0; i < f->n_win; i++) { /* a target's window next to one the number rule cut */
        int target = 0;
        for (int t = 0; t < f->n_t; t++)
            target |= f->t[t].last ? f->win[i].start_us == f->t[t].start_us : f->win[i].number == f->t[t].step;
        for (int64_t j = i > 0 ? i - 1 : 0; target && j <= i + 1 && j < f->n_win; j++)
            if (f->win[j].dropped_by_number > 0) return 0;
    }
    return 1;
}

int mt_kfilter_step(const kfilter *f, int i) {
    return i < f->n_t && f->t[i].known ? f->t[i].step : -1;
}

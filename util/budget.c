/* util/budget.c — see budget.h. */
#include "util/budget.h"

#include <string.h>
#include <time.h>

static _Thread_local mt_budget *current;

double mt_budget_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mt_budget_init(mt_budget *b) {
    memset(b, 0, sizeof *b);
    atomic_init(&b->cancelled, 0);
    b->flag_events = "--max-events";
    b->flag_seconds = "--max-run-seconds";
    b->flag_mem = "--max-run-memory";
    b->flag_inflate = "--max-inflate";
}

void mt_budget_start(mt_budget *b, double wall_s) {
    b->wall_s = wall_s > 0 ? wall_s : 0;
    b->deadline_s = wall_s > 0 ? mt_budget_now_s() + wall_s : 0;
}

void mt_budget_cancel(mt_budget *b) { atomic_store(&b->cancelled, 1); }

mt_budget_state mt_budget_stopped(mt_budget *b) {
    if (!b) return MT_BUDGET_GO;
    if (atomic_load_explicit(&b->cancelled, memory_order_relaxed)) return MT_BUDGET_CANCELLED;
    if (b->deadline_s > 0 && mt_budget_now_s() > b->deadline_s) return MT_BUDGET_WALL;
    return MT_BUDGET_GO;
}

void mt_budget_bind(mt_budget *b) { current = b; }

mt_budget *mt_budget_current(void) { return current; }

mt_status mt_budget_check(mt_error *err) {
    mt_budget *b = current;
    switch (mt_budget_stopped(b)) {
    case MT_BUDGET_CANCELLED:
        return mt_fail(err, MT_EINVAL, "run cancelled");
    case MT_BUDGET_WALL:
        return mt_fail(err, MT_EINVAL, "run stopped at its wall-clock limit of %g s (%s)", b->wall_s,
                       b->flag_seconds);
    default:
        return MT_OK;
    }
}

mt_status mt_budget_check_inflated(double bytes, const char *what, mt_error *err) {
    mt_budget *b = current;
    if (!b) return MT_OK;
    if (b->max_inflate_bytes > 0 && bytes > b->max_inflate_bytes)
        return mt_fail(err, MT_EINVAL, "%s inflates past %.0f bytes, the limit of this server (%s SIZE)", what,
                       b->max_inflate_bytes, b->flag_inflate);
    return mt_budget_check(err);
}

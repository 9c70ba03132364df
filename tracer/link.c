/* tracer/link.c — the trace of one step from a Kineto trace and/or an Execution Trace (see
 * link.h): nesting, matching, step choice, emission, finishing. */
#include <stdlib.h>

#include "tracer/device.h"
#include "tracer/emit.h"
#include "tracer/khost.h"
#include "tracer/ksync.h"
#include "tracer/link.h"
#include "tracer/match.h"

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Index of the first of ts[0..n) (sorted) that is >= v. */
static int64_t lower(const int64_t *ts, int64_t n, int64_t v) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ts[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The step holding the most events linked to the ET (ties: the earlier), or last when none is
 * linked; -1 out of memory. O(E + L log L + S log L) for L linked events. */
static int64_t most_linked(const kineto_data *k, const kstep *win, int64_t n_win, int64_t last) {
    int64_t n = 0, *ts = malloc(sizeof *ts * (size_t)(k->n_ev ? k->n_ev : 1));
    if (!ts) return -1;
    for (int64_t i = 0; i < k->n_ev; i++)
        if (k->ev[i].et_node >= 0) ts[n++] = k->ev[i].ts_ns;
    qsort(ts, (size_t)n, sizeof *ts, cmp_i64);
    int64_t best = -1, w_sel = last;
    for (int64_t w = 0; w < n_win; w++) {
        int64_t c = win[w].end > win[w].start ? lower(ts, n, win[w].end) - lower(ts, n, win[w].start) : 0;
        if (c > best) {
            best = c;
            w_sel = w;
        }
    }
    free(ts);
    return w_sel;
}

/* 1 when an outermost op starts in step w. */
static int holds_ops(const kineto_data *k, const kstep *w) {
    for (int64_t i = 0; i < k->n_ev; i++)
        if (k->ev[i].kind == KEV_OP && k->ev[i].outer == i && k->ev[i].ts_ns >= w->start && k->ev[i].ts_ns < w->end)
            return 1;
    return 0;
}

/* The index of the step to build (see link.h), or -1 with err set. */
static int64_t choose_step(const char *kpath, const kineto_data *k, int linked, const kstep *win, int64_t n_win,
                           const trace_load_opts *opts, mt_error *err) {
    int64_t w_sel = n_win - 1;
    if (opts->step >= 0) {
        w_sel = -1;
        for (int64_t w = 0; w < n_win; w++)
            if (win[w].number == opts->step) w_sel = w;
        if (w_sel < 0)
            mt_fail(err, MT_EINVAL, "%s: no step %d in the trace (steps %d to %d); pick one of those with --step",
                    kpath, opts->step, win[0].number, win[n_win - 1].number);
        return w_sel;
    }
    if (linked && n_win > 1 && (w_sel = most_linked(k, win, n_win, w_sel)) < 0)
        mt_fail(err, MT_ENOMEM, "%s: out of memory choosing the step", kpath);
    if (!linked) /* the last step that holds operators */
        for (int64_t w = n_win - 1; w >= 0; w--)
            if (holds_ops(k, &win[w])) return w;
    return w_sel;
}

mt_status mt_link_build(const char *kpath, kineto_data *k, const char *epath, et_data *e,
                        const trace_load_opts *opts, mt_trace *t, mt_error *err) {
    if (!k) return mt_etonly_build(epath, e, t, err);
    int32_t *ord = NULL;
    kstep *win = NULL;
    int64_t n_win = 0;
    builder_layer_hint *hints = NULL;
    trace_builder b;
    mt_tb_init(&b, t);
    mt_status rc = MT_OK;
    if (mt_khost_nest(k, &ord) != MT_OK || mt_khost_steps(k, &win, &n_win) != MT_OK) {
        rc = mt_fail(err, MT_ENOMEM, "%s: out of memory building operators", kpath);
        goto out;
    }
    t->link.method = TRACE_LINK_NONE;
    if (e && (rc = mt_match_link(kpath, k, ord, epath, e, win, n_win, opts, &t->link, err)) != MT_OK) goto out;
    int64_t w = choose_step(kpath, k, e != NULL, win, n_win, opts, err);
    if (w < 0) {
        rc = err && err->code != MT_OK ? err->code : MT_EINVAL;
        goto out;
    }
    t->step = win[w].number;
    t->n_steps = (int)n_win;
    if ((rc = mt_emit_kineto(&b, k, ord, e, &win[w], &hints, kpath, err)) != MT_OK) goto out;
    t->device_name = k->device_name;
    t->device_mem_bytes = k->device_mem;
    mt_device_from_kineto(t, k->device_name, k->device_props);
    rc = mt_tb_finish(&b, hints, err);
    if (rc == MT_OK && mt_ksync_find(k, t) != MT_OK)
        rc = mt_fail(err, MT_ENOMEM, "%s: out of memory building operators", kpath);
out:
    free(ord);
    free(win);
    free(hints);
    mt_tb_destroy(&b);
    return rc;
}

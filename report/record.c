/* report/record.c — see record.h. */
#include "report/record.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/ranges.h"
#include "util/units.h"
#include "util/vec.h"

void mt_span_filter_init(mt_span_filter *f) {
    memset(f, 0, sizeof *f);
    f->to = MT_TIME_NEVER;
}

void mt_span_filter_destroy(mt_span_filter *f) {
    free(f->keep);
    mt_span_filter_init(f);
}

mt_status mt_span_filter_ranks(mt_span_filter *f, const char *spec, int32_t n_ranks, mt_error *err) {
    uint8_t *keep = calloc((size_t)(n_ranks > 0 ? n_ranks : 1), 1);
    if (!keep) return mt_fail(err, MT_ENOMEM, "out of memory selecting GPUs");
    const char *p = spec;
    long a, b;
    int r;
    if (!*p) goto bad;
    while ((r = mt_range_next(&p, &a, &b)) > 0) {
        if (a < 0 || b < a || b >= n_ranks) {
            free(keep);
            return mt_fail(err, MT_EINVAL, "GPU selection '%s': %ld-%ld is outside 0-%d", spec, a, b,
                           (int)n_ranks - 1);
        }
        for (long i = a; i <= b; i++) keep[i] = 1;
    }
    if (r < 0) goto bad;
    free(f->keep);
    f->keep = keep;
    f->n_keep = n_ranks;
    return MT_OK;
bad:
    free(keep);
    return mt_fail(err, MT_EINVAL, "GPU selection '%s' is not a list of ranks and ranges such as 0-7,12", spec);
}

/* One side of a window: "" is `dflt`, else a time with units -> picoseconds. */
static int window_side(const char *s, size_t len, mt_time_ps dflt, mt_time_ps *out) {
    char buf[64];
    if (len == 0) {
        *out = dflt;
        return 0;
    }
    if (len >= sizeof buf) return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    double ns;
    if (mt_parse_time_ns(buf, &ns, NULL) != MT_OK || ns * 1e3 >= (double)MT_TIME_NEVER) return -1;
    *out = (mt_time_ps)llround(ns * 1e3);
    return 0;
}

mt_status mt_span_filter_window(mt_span_filter *f, const char *spec, mt_error *err) {
    const char *colon = strchr(spec, ':');
    mt_time_ps from, to;
    if (!colon || window_side(spec, (size_t)(colon - spec), 0, &from) ||
        window_side(colon + 1, strlen(colon + 1), MT_TIME_NEVER, &to))
        return mt_fail(err, MT_EINVAL, "time window '%s' is not FROM:TO with units such as 10ms:20ms "
                       "(an empty side is open)", spec);
    if (from >= to)
        return mt_fail(err, MT_EINVAL, "time window '%s' is empty: FROM must be before TO", spec);
    f->from = from;
    f->to = to;
    return MT_OK;
}

int mt_span_filter_rank(const mt_span_filter *f, int32_t rank) {
    if (!f || !f->keep) return 1;
    return rank >= 0 && rank < f->n_keep && f->keep[rank];
}

int mt_span_filter_time(const mt_span_filter *f, mt_time_ps start, mt_time_ps end) {
    if (!f) return 1;
    if (end <= start) return start >= f->from && start < f->to;
    return start < f->to && end > f->from;
}

void mt_recorder_init(mt_recorder *r) {
    memset(r, 0, sizeof *r);
    mt_span_filter_init(&r->filter);
    r->cut_ps = MT_TIME_NEVER;
}

void mt_recorder_destroy(mt_recorder *r) {
    free(r->spans);
    free(r->links);
    mt_span_filter_destroy(&r->filter);
    memset(r, 0, sizeof *r);
}

/* 1 when one more record would pass max_bytes (then cut_ps is set, once). */
static int over_cap(mt_recorder *r, mt_time_ps t) {
    if (!(r->max_bytes > 0)) return 0;
    double have = (double)r->n_spans * sizeof(mt_span) + (double)r->n_links * sizeof(mt_link_sample);
    if (have + sizeof(mt_span) <= r->max_bytes) return 0;
    if (r->cut_ps == MT_TIME_NEVER || t < r->cut_ps) r->cut_ps = t;
    return 1;
}

void mt_recorder_span(void *ctx, int32_t rank, mt_span_kind kind, const mt_task *task, mt_time_ps start,
                      mt_time_ps end) {
    mt_recorder *r = ctx;
    if (r->failed) return;
    if (kind == MT_SPAN_SEND) { /* the arrival (end) is drawn on the receiver: keep it if in the window */
        if (!mt_span_filter_time(&r->filter, start, end) && !mt_span_filter_time(&r->filter, end, end)) return;
    } else if (!mt_span_filter_rank(&r->filter, rank) || !mt_span_filter_time(&r->filter, start, end)) {
        return;
    }
    if (over_cap(r, start)) return;
    if (mt_vec_reserve(&r->spans, &r->cap_spans, r->n_spans + 1)) {
        r->failed = 1;
        return;
    }
    r->spans[r->n_spans++] = (mt_span){rank, (int32_t)kind, task, start, end};
}

void mt_recorder_link(void *ctx, int32_t link, mt_time_ps t, double used_Bps) {
    mt_recorder *r = ctx;
    if (r->failed || t >= r->filter.to) return;
    if (t < r->filter.from) t = r->filter.from; /* the value in force when the window opens */
    if (over_cap(r, t)) return;
    if (mt_vec_reserve(&r->links, &r->cap_links, r->n_links + 1)) {
        r->failed = 1;
        return;
    }
    r->links[r->n_links++] = (mt_link_sample){link, t, used_Bps};
}

static int by_rank_start(const void *a, const void *b) {
    const mt_span *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    /* one rank's tasks all lie in its stage's task array: their order there breaks ties */
    return x->task < y->task ? -1 : x->task > y->task;
}

void mt_recorder_sort(mt_recorder *r) {
    if (r->n_spans > 1) qsort(r->spans, (size_t)r->n_spans, sizeof *r->spans, by_rank_start);
}

/* report/record.c — see record.h. */
#include "report/record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/vec.h"

void mt_recorder_init(mt_recorder *r) {
    memset(r, 0, sizeof *r);
    r->to = MT_TIME_NEVER;
}

void mt_recorder_destroy(mt_recorder *r) {
    free(r->spans);
    free(r->links);
    free(r->keep);
    memset(r, 0, sizeof *r);
}

mt_status mt_recorder_keep_ranks(mt_recorder *r, const char *spec, int32_t n_ranks, mt_error *err) {
    uint8_t *keep = calloc((size_t)(n_ranks > 0 ? n_ranks : 1), 1);
    if (!keep) return mt_fail(err, MT_ENOMEM, "out of memory selecting GPUs");
    const char *p = spec;
    while (*p) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || errno) goto bad;
        if (*end == '-') {
            const char *q = end + 1;
            b = strtol(q, &end, 10);
            if (end == q || errno) goto bad;
        }
        if (a < 0 || b < a || b >= n_ranks) {
            free(keep);
            return mt_fail(err, MT_EINVAL, "GPU selection '%s': %ld-%ld is outside 0-%d", spec, a, b,
                           (int)n_ranks - 1);
        }
        for (long i = a; i <= b; i++) keep[i] = 1;
        if (*end == ',') end++;
        else if (*end) goto bad;
        p = end;
    }
    free(r->keep);
    r->keep = keep;
    r->n_keep = n_ranks;
    return MT_OK;
bad:
    free(keep);
    return mt_fail(err, MT_EINVAL, "GPU selection '%s' is not a list of ranks and ranges such as 0-7,12", spec);
}

void mt_recorder_window(mt_recorder *r, mt_time_ps from, mt_time_ps to) {
    r->from = from;
    r->to = to;
}

int mt_recorder_wants(const mt_recorder *r, int32_t rank) {
    if (!r->keep) return 1;
    return rank >= 0 && rank < r->n_keep && r->keep[rank];
}

void mt_recorder_span(void *ctx, int32_t rank, mt_span_kind kind, const mt_task *task, mt_time_ps start,
                      mt_time_ps end) {
    mt_recorder *r = ctx;
    if (r->failed || !mt_recorder_wants(r, rank)) return;
    if (end < r->from || start >= r->to || (end == r->from && start < end)) return;
    if (start < r->from) start = r->from;
    if (end > r->to) end = r->to;
    if (mt_vec_reserve(&r->spans, &r->cap_spans, r->n_spans + 1)) {
        r->failed = 1;
        return;
    }
    r->spans[r->n_spans++] = (mt_span){rank, (int32_t)kind, task, start, end};
}

void mt_recorder_link(void *ctx, int32_t link, mt_time_ps t, double used_Bps) {
    mt_recorder *r = ctx;
    if (r->failed || t >= r->to) return;
    if (t < r->from) t = r->from; /* the value in force when the window opens */
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
    return x->end < y->end ? -1 : x->end > y->end;
}

void mt_recorder_sort(mt_recorder *r) {
    if (r->n_spans > 1) qsort(r->spans, (size_t)r->n_spans, sizeof *r->spans, by_rank_start);
}

/* tracer/ksync.c — the synchronising host calls of a Kineto trace (see ksync.h). */
#include <stdlib.h>
#include <string.h>

#include "tracer/ksync.h"
#include "util/u64map.h"
#include "util/vec.h"

static int is_sync_call(const char *name) {
    static const char *const calls[] = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                                        "cudaMemcpy", "cudaMemcpy2D", "cuStreamSynchronize", "cuCtxSynchronize",
                                        "cuEventSynchronize", "hipStreamSynchronize", "hipDeviceSynchronize",
                                        "hipEventSynchronize", "hipMemcpy", "hipMemcpyWithStream"};
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
        if (!strcmp(name, calls[i])) return 1;
    return 0;
}

static int is_copy_call(const char *name) {
    return !strncmp(name, "cudaMemcpy", 10) || !strncmp(name, "cuMemcpy", 8) || !strncmp(name, "hipMemcpy", 9);
}

/* The device events by (stream, start) with, for each, the latest end of the events before it
 * on its stream, and the copies by correlation id. */
typedef struct devidx {
    int64_t *order;        /* indices into k->gpu */
    int64_t *pos;          /* position of each device event in order */
    int64_t *ahead_end;    /* per position: latest end before it on its stream, INT64_MIN none */
    mt_u64map copy_by_corr;
} devidx;

typedef struct skey {
    int64_t ts;
    int64_t idx;
    int32_t stream;
} skey;

static int cmp_skey(const void *a, const void *b) {
    const skey *x = a, *y = b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->ts != y->ts) return (x->ts > y->ts) - (x->ts < y->ts);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static void devidx_free(devidx *d) {
    free(d->order);
    free(d->pos);
    free(d->ahead_end);
    mt_u64map_destroy(&d->copy_by_corr);
}

static mt_status devidx_build(const kineto_data *k, devidx *d) {
    memset(d, 0, sizeof *d);
    mt_u64map_init(&d->copy_by_corr);
    size_t n = (size_t)(k->n_gpu > 0 ? k->n_gpu : 1);
    d->order = malloc(n * sizeof *d->order);
    d->pos = malloc(n * sizeof *d->pos);
    d->ahead_end = malloc(n * sizeof *d->ahead_end);
    if (!d->order || !d->pos || !d->ahead_end) return MT_ENOMEM;
    skey *keys = malloc(n * sizeof *keys);
    if (!keys) return MT_ENOMEM;
    for (int64_t i = 0; i < k->n_gpu; i++) keys[i] = (skey){k->gpu[i].ts_ns, i, k->gpu[i].stream};
    qsort(keys, (size_t)k->n_gpu, sizeof *keys, cmp_skey);
    for (int64_t i = 0; i < k->n_gpu; i++) d->order[i] = keys[i].idx;
    free(keys);
    int64_t end = INT64_MIN;
    for (int64_t p = 0; p < k->n_gpu; p++) {
        const kgpu *g = &k->gpu[d->order[p]];
        if (p > 0 && k->gpu[d->order[p - 1]].stream != g->stream) end = INT64_MIN;
        d->pos[d->order[p]] = p;
        d->ahead_end[p] = end;
        if (g->ts_ns + g->dur_ns > end) end = g->ts_ns + g->dur_ns;
        if (g->kind == TRACE_MEMCPY && g->correlation >= 0 &&
            mt_u64map_put(&d->copy_by_corr, (uint64_t)g->correlation, d->order[p], NULL) != MT_OK)
            return MT_ENOMEM;
    }
    return MT_OK;
}

/* Whether runtime call r synchronises, and how: *blocked_ns from its start, *stream waited for. */
static int blocking(const kineto_data *k, const devidx *d, const krt *r, int64_t *blocked_ns, int32_t *stream) {
    int64_t gi;
    const kgpu *w = r->correlation >= 0 && is_copy_call(r->name) &&
                    mt_u64map_get(&d->copy_by_corr, (uint64_t)r->correlation, &gi) ? &k->gpu[gi] : NULL;
    int named = is_sync_call(r->name), to_pageable = 0, waited = 0;
    if (w) {
        to_pageable = strstr(w->name, "DtoH") && strstr(w->name, "Pageable");
        waited = w->ts_ns < r->ts_ns + r->dur_ns && d->ahead_end[d->pos[gi]] > r->ts_ns;
    }
    if (!named && !to_pageable && !waited) return 0;
    *blocked_ns = r->dur_ns;
    *stream = -1;
    if (w) {
        int64_t copy_end = w->ts_ns + w->dur_ns - r->ts_ns;
        if (copy_end >= 0 && copy_end < r->dur_ns) *blocked_ns = copy_end;
        *stream = w->stream;
    }
    return 1;
}

static int cmp_sync(const void *a, const void *b) {
    const trace_sync *x = a, *y = b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* The op whose host interval holds ts: the last op starting at or before it, -1 none. */
static int32_t op_at(const trace *t, int64_t ts) {
    int32_t lo = 0, hi = t->n_ops - 1, op = -1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (t->ops[mid].cpu_start_ns <= ts) op = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    return op;
}

mt_status mt_ksync_syncs(const kineto_data *k, trace *t) {
    devidx d;
    mt_status rc = devidx_build(k, &d);
    int64_t cap = 0;
    for (int64_t i = 0; i < k->n_rt && rc == MT_OK; i++) {
        const krt *r = &k->rt[i];
        int64_t blocked;
        int32_t stream;
        if (!r->name || r->ts_ns < t->step_start_ns || r->ts_ns > t->host_end_ns || !blocking(k, &d, r, &blocked, &stream))
            continue;
        if (mt_vec_reserve(&t->syncs, &cap, (int64_t)t->n_syncs + 1)) rc = MT_ENOMEM;
        else t->syncs[t->n_syncs++] = (trace_sync){r->ts_ns, blocked, op_at(t, r->ts_ns), r->name, stream};
    }
    devidx_free(&d);
    if (rc == MT_OK && t->n_syncs > 1) qsort(t->syncs, (size_t)t->n_syncs, sizeof *t->syncs, cmp_sync);
    return rc;
}

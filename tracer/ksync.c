/* tracer/ksync.c — the synchronising host calls and stream waits of a Kineto trace (see ksync.h). */
#include <stdlib.h>
#include <string.h>

#include "tracer/ksync.h"
#include "util/u64map.h"
#include "util/vec.h"

static int named(const char *name, const char *const *calls, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, calls[i])) return 1;
    return 0;
}

static int is_sync_call(const char *name) {
    static const char *const calls[] = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                                        "cudaMemcpy", "cudaMemcpy2D", "cuStreamSynchronize", "cuCtxSynchronize",
                                        "cuEventSynchronize", "hipStreamSynchronize", "hipDeviceSynchronize",
                                        "hipEventSynchronize", "hipMemcpy", "hipMemcpyWithStream"};
    return named(name, calls, sizeof calls / sizeof *calls);
}

static int is_wait_call(const char *name) {
    static const char *const calls[] = {"cudaStreamWaitEvent", "cuStreamWaitEvent", "hipStreamWaitEvent"};
    return named(name, calls, sizeof calls / sizeof *calls);
}

static int is_copy_call(const char *name) {
    return !strncmp(name, "cudaMemcpy", 10) || !strncmp(name, "cuMemcpy", 8) || !strncmp(name, "hipMemcpy", 9);
}

/* ---- indexes ---------------------------------------------------------------------------- */

typedef struct skey { /* a sort key: (stream or thread, time, index) */
    int64_t stream, ts, idx, end;
} skey;

static int cmp_skey(const void *a, const void *b) {
    const skey *x = a, *y = b;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->ts != y->ts) return (x->ts > y->ts) - (x->ts < y->ts);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

typedef struct kidx {
    int64_t *pos;          /* per device event: its position by (stream, start) */
    int64_t *ahead_end;    /* per position: latest end before it on its stream, INT64_MIN none */
    skey *launched;        /* device work by (stream, launch time), end = latest end so far on it */
    int64_t n_launched;
    skey *calls;           /* runtime calls by (thread, time) */
    int32_t *streams;      /* the distinct streams of the launched work */
    int32_t n_streams;
    mt_u64map dev_by_corr, rt_by_corr, sync_by_corr;
} kidx;

static void kidx_free(kidx *d) {
    free(d->pos);
    free(d->ahead_end);
    free(d->launched);
    free(d->calls);
    free(d->streams);
    mt_u64map_destroy(&d->dev_by_corr);
    mt_u64map_destroy(&d->rt_by_corr);
    mt_u64map_destroy(&d->sync_by_corr);
}

/* Device events by (stream, start) with the latest end ahead of each on its stream. */
static mt_status index_device(const kineto_data *k, kidx *d, skey *keys) {
    for (int64_t i = 0; i < k->n_gpu; i++) keys[i] = (skey){k->gpu[i].stream, k->gpu[i].ts_ns, i, 0};
    qsort(keys, (size_t)k->n_gpu, sizeof *keys, cmp_skey);
    int64_t end = INT64_MIN;
    for (int64_t p = 0; p < k->n_gpu; p++) {
        const kgpu *g = &k->gpu[keys[p].idx];
        if (p > 0 && keys[p - 1].stream != keys[p].stream) end = INT64_MIN;
        d->pos[keys[p].idx] = p;
        d->ahead_end[p] = end;
        if (g->ts_ns + g->dur_ns > end) end = g->ts_ns + g->dur_ns;
    }
    for (int64_t p = k->n_gpu - 1; p >= 0; p--) /* the first event of a correlation wins */
        if (k->gpu[keys[p].idx].correlation >= 0 &&
            mt_u64map_put(&d->dev_by_corr, (uint64_t)k->gpu[keys[p].idx].correlation, keys[p].idx, NULL) != MT_OK)
            return MT_ENOMEM;
    return MT_OK;
}

/* Device work by (stream, launch time), each with the latest end of the work launched up to it;
 * runtime calls by (thread, time). */
static void index_launches(const kineto_data *k, kidx *d) {
    for (int64_t i = 0; i < k->n_gpu; i++) {
        const kgpu *g = &k->gpu[i];
        int64_t ri;
        if (g->correlation >= 0 && mt_u64map_get(&d->rt_by_corr, (uint64_t)g->correlation, &ri))
            d->launched[d->n_launched++] = (skey){g->stream, k->rt[ri].ts_ns, i, g->ts_ns + g->dur_ns};
    }
    qsort(d->launched, (size_t)d->n_launched, sizeof *d->launched, cmp_skey);
    for (int64_t p = 0; p < d->n_launched; p++) {
        if (p == 0 || d->launched[p].stream != d->launched[p - 1].stream)
            d->streams[d->n_streams++] = (int32_t)d->launched[p].stream;
        else if (d->launched[p - 1].end > d->launched[p].end)
            d->launched[p].end = d->launched[p - 1].end;
    }
    for (int64_t i = 0; i < k->n_rt; i++) d->calls[i] = (skey){k->rt[i].tid, k->rt[i].ts_ns, i, 0};
    qsort(d->calls, (size_t)k->n_rt, sizeof *d->calls, cmp_skey);
}

static mt_status kidx_build(const kineto_data *k, kidx *d) {
    memset(d, 0, sizeof *d);
    mt_u64map_init(&d->dev_by_corr);
    mt_u64map_init(&d->rt_by_corr);
    mt_u64map_init(&d->sync_by_corr);
    size_t ng = (size_t)(k->n_gpu > 0 ? k->n_gpu : 1), nr = (size_t)(k->n_rt > 0 ? k->n_rt : 1);
    d->pos = malloc(ng * sizeof *d->pos);
    d->ahead_end = malloc(ng * sizeof *d->ahead_end);
    d->launched = malloc(ng * sizeof *d->launched);
    d->streams = malloc(ng * sizeof *d->streams);
    d->calls = malloc(nr * sizeof *d->calls);
    skey *keys = malloc(ng * sizeof *keys);
    mt_status rc = d->pos && d->ahead_end && d->launched && d->streams && d->calls && keys ? MT_OK : MT_ENOMEM;
    if (rc == MT_OK) rc = index_device(k, d, keys);
    free(keys);
    for (int64_t i = 0; i < k->n_rt && rc == MT_OK; i++)
        if (k->rt[i].correlation >= 0) rc = mt_u64map_put(&d->rt_by_corr, (uint64_t)k->rt[i].correlation, i, NULL);
    for (int64_t i = 0; i < k->n_sync && rc == MT_OK; i++)
        if (k->sync[i].correlation >= 0) rc = mt_u64map_put(&d->sync_by_corr, (uint64_t)k->sync[i].correlation, i, NULL);
    if (rc == MT_OK) index_launches(k, d);
    return rc;
}

/* The op whose host interval holds ts: the last op starting at or before it, -1 none. */
static int32_t op_at(const mt_trace *t, int64_t ts) {
    int32_t lo = 0, hi = t->n_ops - 1, op = -1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (t->ops[mid].cpu_start_ns <= ts) op = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    return op;
}

/* ---- synchronising calls ---------------------------------------------------------------- */

/* The stream a named synchronisation waits for, from its cuda_sync event; -1 every stream. */
static int32_t synced_stream(const kineto_data *k, const kidx *d, const krt *r) {
    int64_t si;
    if (r->correlation < 0 || !mt_u64map_get(&d->sync_by_corr, (uint64_t)r->correlation, &si)) return -1;
    const ksyncev *s = &k->sync[si];
    return s->kind == KSYNC_STREAM ? s->stream : s->kind == KSYNC_EVENT ? s->on_stream : -1;
}

/* Whether runtime call r synchronises, and how: *blocked_ns from its start, *stream waited for. */
static int blocking(const kineto_data *k, const kidx *d, const krt *r, int64_t *blocked_ns, int32_t *stream) {
    int64_t gi;
    const kgpu *w = r->correlation >= 0 && is_copy_call(r->name) &&
                    mt_u64map_get(&d->dev_by_corr, (uint64_t)r->correlation, &gi) && k->gpu[gi].kind == TRACE_MEMCPY
                        ? &k->gpu[gi] : NULL;
    int sync = is_sync_call(r->name), to_pageable = 0, waited = 0;
    if (w) {
        to_pageable = strstr(w->name, "DtoH") && strstr(w->name, "Pageable");
        waited = w->ts_ns < r->ts_ns + r->dur_ns && d->ahead_end[d->pos[gi]] > r->ts_ns;
    }
    if (!sync && !to_pageable && !waited) return 0;
    *blocked_ns = r->dur_ns;
    *stream = synced_stream(k, d, r);
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

static mt_status find_syncs(const kineto_data *k, const kidx *d, mt_trace *t) {
    int64_t cap = 0;
    for (int64_t i = 0; i < k->n_rt; i++) {
        const krt *r = &k->rt[i];
        int64_t blocked;
        int32_t stream;
        if (!r->name || r->ts_ns < t->step_start_ns || r->ts_ns > t->host_end_ns || !blocking(k, d, r, &blocked, &stream))
            continue;
        if (mt_vec_reserve(&t->syncs, &cap, (int64_t)t->n_syncs + 1)) return MT_ENOMEM;
        t->syncs[t->n_syncs++] = (trace_sync){r->ts_ns, blocked, op_at(t, r->ts_ns), r->name, stream};
    }
    if (t->n_syncs > 1) qsort(t->syncs, (size_t)t->n_syncs, sizeof *t->syncs, cmp_sync);
    return MT_OK;
}

/* ---- stream waits ----------------------------------------------------------------------- */

static mt_status add_wait(mt_trace *t, int64_t *cap, int64_t ts, int64_t rec, int32_t stream, int32_t on) {
    if (stream < 0 || on < 0 || stream == on || ts < t->step_start_ns || ts > t->host_end_ns) return MT_OK;
    if (mt_vec_reserve(&t->waits, cap, (int64_t)t->n_waits + 1)) return MT_ENOMEM;
    t->waits[t->n_waits++] = (trace_wait){ts, rec < ts ? rec : ts, stream, on, op_at(t, ts), op_at(t, rec < ts ? rec : ts)};
    return MT_OK;
}

/* From cuda_sync "Stream Wait Event" events: exact. */
static mt_status waits_recorded(const kineto_data *k, const kidx *d, mt_trace *t, int64_t *cap) {
    for (int64_t i = 0; i < k->n_sync; i++) {
        const ksyncev *s = &k->sync[i];
        int64_t wi, ri;
        if (s->kind != KSYNC_WAIT_EVENT || !mt_u64map_get(&d->rt_by_corr, (uint64_t)s->correlation, &wi)) continue;
        int64_t rec = s->rec_correlation >= 0 && mt_u64map_get(&d->rt_by_corr, (uint64_t)s->rec_correlation, &ri)
                          ? k->rt[ri].ts_ns : k->rt[wi].ts_ns;
        MT_CHECK(add_wait(t, cap, k->rt[wi].ts_ns, rec, s->stream, s->on_stream));
    }
    return MT_OK;
}

/* Latest end of the work launched on `stream` before ts, INT64_MIN none (binary search). */
static int64_t launched_end(const kidx *d, int32_t stream, int64_t ts) {
    int64_t lo = 0, hi = d->n_launched - 1, best = INT64_MIN;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const skey *m = &d->launched[mid];
        if (m->stream < stream || (m->stream == stream && m->ts < ts)) {
            if (m->stream == stream) best = m->end;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

/* Without cuda_sync events: a cudaStreamWaitEvent call at position p of d->calls makes the next
 * device work its thread launches wait for the other stream whose work launched before the call
 * ended last, no later than that work started. */
static mt_status wait_inferred(const kineto_data *k, const kidx *d, mt_trace *t, int64_t *cap, int64_t p) {
    const krt *r = &k->rt[d->calls[p].idx];
    const kgpu *next = NULL;
    for (int64_t q = p + 1; q < k->n_rt && !next && d->calls[q].stream == d->calls[p].stream; q++) {
        int64_t gi;
        const krt *c = &k->rt[d->calls[q].idx];
        if (c->correlation >= 0 && mt_u64map_get(&d->dev_by_corr, (uint64_t)c->correlation, &gi)) next = &k->gpu[gi];
    }
    if (!next) return MT_OK;
    int32_t on = -1;
    int64_t latest = INT64_MIN;
    for (int32_t q = 0; q < d->n_streams; q++) {
        int32_t s = d->streams[q];
        if (s == next->stream) continue;
        int64_t end = launched_end(d, s, r->ts_ns);
        if (end != INT64_MIN && end <= next->ts_ns && end > latest) latest = end, on = s;
    }
    return add_wait(t, cap, r->ts_ns, r->ts_ns, next->stream, on);
}

static int cmp_wait(const void *a, const void *b) {
    const trace_wait *x = a, *y = b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

static mt_status find_waits(const kineto_data *k, const kidx *d, mt_trace *t) {
    int64_t cap = 0;
    if (k->saw_sync) { /* the file has them, though the step filter may have kept none */
        MT_CHECK(waits_recorded(k, d, t, &cap));
    } else {
        for (int64_t p = 0; p < k->n_rt; p++)
            if (k->rt[d->calls[p].idx].name && is_wait_call(k->rt[d->calls[p].idx].name))
                MT_CHECK(wait_inferred(k, d, t, &cap, p));
    }
    if (t->n_waits > 1) qsort(t->waits, (size_t)t->n_waits, sizeof *t->waits, cmp_wait);
    return MT_OK;
}

mt_status mt_ksync_find(const kineto_data *k, mt_trace *t) {
    kidx d;
    mt_status rc = kidx_build(k, &d);
    if (rc == MT_OK) rc = find_syncs(k, &d, t);
    if (rc == MT_OK) rc = find_waits(k, &d, t);
    kidx_free(&d);
    return rc;
}

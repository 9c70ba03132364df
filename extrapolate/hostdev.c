/* extrapolate/hostdev.c — see hostdev.h. */
#include "extrapolate/hostdev.h"

#include <math.h>
#include <stddef.h>

int64_t mt_hostdev_words(const mt_hostmodel *m) { return (int64_t)m->n_streams + m->n_slots; }

void mt_hostdev_init(mt_hostdev *d, const mt_hostmodel *m, int64_t *words, mt_hostdev_busy_fn on_busy, void *ctx) {
    d->m = m;
    d->done_ps = words;
    d->slot_ps = words + m->n_streams;
    d->floor_ps = 0;
    d->on_busy = on_busy;
    d->busy_ctx = ctx;
}

/* One op being placed: per stream, the segment of back-to-back kernels being built (from
 * start, dur long so far), how much of the stream's block is placed, and the block. */
typedef struct oprun {
    mt_hostdev *d;
    int64_t start[MT_HOST_MAX_STREAMS], dur[MT_HOST_MAX_STREAMS];
    int64_t placed[MT_HOST_MAX_STREAMS], block[MT_HOST_MAX_STREAMS];
    int64_t hs, waited, busy0;
    int launches;
} oprun;

/* Ends stream s's segment: its busy span is reported, the next one starts no earlier. */
static void close_seg(oprun *r, int32_t s) {
    mt_hostdev *d = r->d;
    if (r->dur[s] > 0) {
        if (d->on_busy) d->on_busy(d->busy_ctx, s, r->start[s], r->start[s] + r->dur[s]);
        if (s == 0) r->busy0 += r->dur[s];
        d->done_ps[s] = r->start[s] + r->dur[s];
    }
    r->start[s] += r->dur[s];
    r->dur[s] = 0;
}

/* A kernel launched at host time `at` with `frac` of its stream's block: kernels run back to
 * back from the segment's start, which must not be before this one's launch reached the device. */
static void launch(oprun *r, int32_t s, double frac, int64_t at) {
    int64_t kd = (int64_t)(frac * (double)r->block[s] + 0.5);
    if (r->placed[s] + kd > r->block[s]) kd = r->block[s] - r->placed[s];
    int64_t need = at + r->d->m->launch_lat_ps - r->dur[s];
    if (need > r->start[s]) r->start[s] = need;
    r->dur[s] += kd;
    r->placed[s] += kd;
    r->launches++;
}

/* The host at `at` waits until stream s (every stream when s < 0) has run what it was given. */
static void sync_streams(oprun *r, int32_t s, int64_t at) {
    int64_t until = 0;
    for (int32_t q = 0; q < r->d->m->n_streams; q++) {
        if (s >= 0 && q != s) continue;
        close_seg(r, q);
        if (r->start[q] > until) until = r->start[q];
    }
    if (until > at) {
        r->waited += until - at;
        r->hs += until - at;
    }
}

static void run_event(oprun *r, const mt_hev *e) {
    mt_hostdev *d = r->d;
    switch (e->kind) {
    case MT_HEV_LAUNCH: launch(r, e->stream, e->frac, r->hs + e->off_ps); break;
    case MT_HEV_SYNC: sync_streams(r, e->stream, r->hs + e->off_ps); break;
    case MT_HEV_RECORD: /* when the work given to the stream so far ends */
        close_seg(r, e->stream);
        d->slot_ps[e->slot] = d->done_ps[e->stream];
        break;
    case MT_HEV_WAIT:
        close_seg(r, e->stream);
        if (d->slot_ps[e->slot] > r->start[e->stream]) r->start[e->stream] = d->slot_ps[e->slot];
        break;
    }
}

int64_t mt_hostdev_run_op(mt_hostdev *d, int32_t op, int64_t dev_ps, int64_t now, int64_t *host,
                          int64_t *sync_wait_ps, int64_t *busy0_ps) {
    const mt_hostmodel *m = d->m;
    const mt_hostop *h = op >= 0 && op < m->n_ops ? &m->ops[op] : NULL;
    oprun r = {.d = d, .hs = *host};
    for (int32_t s = 0; s < m->n_streams; s++) {
        r.start[s] = d->done_ps[s] > d->floor_ps ? d->done_ps[s] : d->floor_ps;
        if (s == 0 && now > r.start[s]) r.start[s] = now;
        r.block[s] = !m->share ? (s == 0 ? dev_ps : 0)
                     : h ? llround((double)dev_ps * m->share[(size_t)op * m->n_streams + s]) : 0;
    }
    if (m->share && h) { /* an op without compute kernels of its own runs on stream 0 */
        int64_t all = 0;
        for (int32_t s = 0; s < m->n_streams; s++) all += r.block[s];
        if (all == 0) r.block[0] = dev_ps;
    }
    for (int32_t q = 0; h && q < h->ev_count; q++) run_event(&r, &m->ev[h->ev_first + q]);
    if (!r.launches && dev_ps > 0) { /* device work with no traced launch: launched at the op's start */
        int64_t need = r.hs + m->launch_lat_ps;
        if (need > r.start[0]) r.start[0] = need;
    }
    for (int32_t s = 0; s < m->n_streams; s++) {
        r.dur[s] += r.block[s] - r.placed[s]; /* rounding remainder, or all of it without launches */
        close_seg(&r, s);
    }
    *host = r.hs + (h ? h->host_ps : 0);
    if (sync_wait_ps) *sync_wait_ps = r.waited;
    if (busy0_ps) *busy0_ps = r.busy0;
    return r.start[0];
}

/* sim/engine.c — see engine.h.
 *
 * Invariant: heap[0..n) is a 4-ary min-heap on (time, seq); for every pending record r,
 * heap[r.pos].slot is r's slot; free records have pos == NO_POS and are chained by `next`.
 */
#include "sim/engine.h"

#include <stdlib.h>
#include <stdio.h>

#define NO_POS UINT32_MAX
#define ARITY 4

typedef struct hent {
    mt_time_ps t;
    uint64_t seq;
    uint32_t slot;
} hent;

typedef struct rec {
    mt_event_fn fn;
    void *ctx;
    uint64_t arg;
    uint32_t pos;  /* index in heap, NO_POS when free */
    uint32_t gen;  /* bumped each time the slot is released */
    uint32_t next; /* free list link */
} rec;

struct mt_engine {
    hent *heap;
    uint32_t n, hcap;
    rec *recs;
    uint32_t nrecs, rcap, free_head;
    mt_time_ps now;
    uint64_t seq;
    uint64_t processed;
    mt_status fail_code;
    char fail_msg[MT_ERRMSG_MAX];
};

mt_engine *mt_engine_new(void) {
    mt_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->free_head = NO_POS;
    return e;
}

void mt_engine_free(mt_engine *e) {
    if (!e) return;
    free(e->heap);
    free(e->recs);
    free(e);
}

mt_time_ps mt_engine_now(const mt_engine *e) { return e->now; }
uint64_t mt_engine_events(const mt_engine *e) { return e->processed; }
size_t mt_engine_pending(const mt_engine *e) { return e->n; }

static inline int less(const hent *a, const hent *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static inline void place(mt_engine *e, uint32_t i, hent h) {
    e->heap[i] = h;
    e->recs[h.slot].pos = i;
}

static void sift_up(mt_engine *e, uint32_t i) {
    hent h = e->heap[i];
    while (i > 0) {
        uint32_t p = (i - 1) / ARITY;
        if (!less(&h, &e->heap[p])) break;
        place(e, i, e->heap[p]);
        i = p;
    }
    place(e, i, h);
}

static void sift_down(mt_engine *e, uint32_t i) {
    hent h = e->heap[i];
    for (;;) {
        uint32_t c = i * ARITY + 1;
        if (c >= e->n) break;
        uint32_t best = c, end = c + ARITY < e->n ? c + ARITY : e->n;
        for (uint32_t k = c + 1; k < end; k++)
            if (less(&e->heap[k], &e->heap[best])) best = k;
        if (!less(&e->heap[best], &h)) break;
        place(e, i, e->heap[best]);
        i = best;
    }
    place(e, i, h);
}

static void heap_remove(mt_engine *e, uint32_t i) {
    e->n--;
    if (i == e->n) return;
    place(e, i, e->heap[e->n]);
    if (i > 0 && less(&e->heap[i], &e->heap[(i - 1) / ARITY]))
        sift_up(e, i);
    else
        sift_down(e, i);
}

static void release(mt_engine *e, uint32_t slot) {
    rec *r = &e->recs[slot];
    r->pos = NO_POS;
    r->gen++;
    r->next = e->free_head;
    e->free_head = slot;
}

/* Resolves a handle to a pending record's slot, or NO_POS. */
static uint32_t lookup(const mt_engine *e, mt_event_id id) {
    uint32_t slot = (uint32_t)(id & 0xffffffffu), gen = (uint32_t)(id >> 32);
    if (id == 0 || slot >= e->nrecs) return NO_POS;
    const rec *r = &e->recs[slot];
    return (r->pos != NO_POS && r->gen == gen) ? slot : NO_POS;
}

static void s_fail(void *impl, mt_status code, const char *msg);

/* An event past the horizon (network/sched.h) stops the run with this, not with the caller's
 * "out of memory" (the first failure is kept). */
static int past_horizon(mt_engine *e, mt_time_ps t) {
    if (t <= MT_TIME_HORIZON_PS) return 0;
    s_fail(e, MT_EINVAL, "the simulation would run past 53 days of simulated time, the simulator's range: an "
           "input is far out of range (check --slow-gpu and --scenario slowdowns, bandwidths, latencies, "
           "the performance model and GPU specs)");
    return 1;
}

mt_event_id mt_engine_at(mt_engine *e, mt_time_ps t, mt_event_fn fn, void *ctx, uint64_t arg) {
    if (t < e->now || !fn || past_horizon(e, t)) return 0;
    if (e->free_head == NO_POS) {
        if (e->nrecs == e->rcap) {
            uint32_t ncap = e->rcap ? e->rcap * 2 : 1024;
            rec *nr = realloc(e->recs, (size_t)ncap * sizeof *nr);
            if (!nr) return 0;
            e->recs = nr;
            e->rcap = ncap;
        }
        e->recs[e->nrecs] = (rec){.pos = NO_POS, .gen = 1, .next = NO_POS};
        e->free_head = e->nrecs++;
    }
    if (e->n == e->hcap) {
        uint32_t ncap = e->hcap ? e->hcap * 2 : 1024;
        hent *nh = realloc(e->heap, (size_t)ncap * sizeof *nh);
        if (!nh) return 0;
        e->heap = nh;
        e->hcap = ncap;
    }
    uint32_t slot = e->free_head;
    rec *r = &e->recs[slot];
    e->free_head = r->next;
    r->fn = fn;
    r->ctx = ctx;
    r->arg = arg;
    e->heap[e->n] = (hent){t, e->seq++, slot};
    r->pos = e->n++;
    sift_up(e, r->pos);
    return ((uint64_t)r->gen << 32) | slot;
}

int mt_engine_cancel(mt_engine *e, mt_event_id id) {
    uint32_t slot = lookup(e, id);
    if (slot == NO_POS) return 0;
    heap_remove(e, e->recs[slot].pos);
    release(e, slot);
    return 1;
}

int mt_engine_move(mt_engine *e, mt_event_id id, mt_time_ps t) {
    uint32_t slot = lookup(e, id);
    if (slot == NO_POS || t < e->now || past_horizon(e, t)) return 0;
    uint32_t i = e->recs[slot].pos;
    mt_time_ps old = e->heap[i].t;
    e->heap[i].t = t;
    e->heap[i].seq = e->seq++;
    if (t < old)
        sift_up(e, i);
    else
        sift_down(e, i);
    return 1;
}

mt_status mt_engine_run(mt_engine *e, mt_time_ps until, mt_error *err) {
    e->fail_code = MT_OK;
    while (e->n > 0 && e->heap[0].t <= until) {
        hent top = e->heap[0];
        rec r = e->recs[top.slot];
        heap_remove(e, 0);
        release(e, top.slot);
        e->now = top.t;
        e->processed++;
        r.fn(r.ctx, r.arg);
        if (e->fail_code != MT_OK) return mt_fail(err, e->fail_code, "%s", e->fail_msg);
    }
    return MT_OK;
}

static mt_time_ps s_now(void *impl) { return ((mt_engine *)impl)->now; }
static mt_event_id s_at(void *impl, mt_time_ps t, mt_event_fn fn, void *ctx, uint64_t arg) {
    return mt_engine_at(impl, t, fn, ctx, arg);
}
static int s_cancel(void *impl, mt_event_id id) { return mt_engine_cancel(impl, id); }
static int s_move(void *impl, mt_event_id id, mt_time_ps t) { return mt_engine_move(impl, id, t); }
static void s_fail(void *impl, mt_status code, const char *msg) {
    mt_engine *e = impl;
    if (e->fail_code != MT_OK) return; /* keep the first failure */
    e->fail_code = code == MT_OK ? MT_EINTERNAL : code;
    snprintf(e->fail_msg, sizeof e->fail_msg, "%s", msg ? msg : "event handler failed");
}

static const mt_sched_ops engine_sched_ops = {
    .now = s_now, .at = s_at, .cancel = s_cancel, .move = s_move, .fail_run = s_fail};

mt_sched mt_engine_sched(mt_engine *e) { return (mt_sched){&engine_sched_ops, e}; }

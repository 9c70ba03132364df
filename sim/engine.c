/* sim/engine.c — see engine.h.
 *
 * Invariant: heap[0..n) is a 4-ary min-heap on (time, seq); for every pending record r in the
 * heap, heap[r.pos].slot is r's slot; free records have pos == NO_POS and are chained by `next`.
 * Lanes: an event scheduled `delay` after now, for a delay a lane holds, is appended to that
 * lane's FIFO instead: now never decreases and seq always grows, so a FIFO of one delay is
 * sorted on (time, seq) by construction, and the next event is the least of the heap's top and
 * the lanes' heads: the order is exactly the heap's alone. Lane 0 holds delay 0 (a solve, a
 * completion "now"); the others take the delay of the first event that finds them empty (in
 * practice a network model's path latencies: every delivery). A pending lane record has
 * pos == LANE_POS + lane and its seq; a lane entry is live iff its record still has that pos and
 * seq (cancel and move leave the entry behind, skipped when it comes to the head).
 */
#include "sim/engine.h"

#include <stdlib.h>
#include <stdio.h>

#include "util/budget.h"

#define NO_POS UINT32_MAX
#define ARITY 4
#define LANES 8
#define LANE_POS (UINT32_MAX - LANES) /* pos of a record in lane l: LANE_POS + l */

typedef struct hent {
    mt_time_ps t;
    uint64_t seq;
    uint32_t slot;
} hent;

typedef struct rec {
    mt_event_fn fn;
    void *ctx;
    uint64_t arg;
    uint64_t seq;  /* of the pending event (lanes: tells a live entry from a left-behind one) */
    uint32_t pos;  /* index in heap, LANE_POS + lane, NO_POS when free */
    uint32_t gen;  /* bumped each time the slot is released */
    uint32_t next; /* free list link */
} rec;

typedef struct lane { /* a FIFO ring of the events scheduled `delay` after their time of issue */
    mt_time_ps delay;
    hent *q;
    uint32_t head, n, cap; /* entries q[(head + i) & (cap - 1)], i < n; cap a power of 2 */
    uint32_t live;         /* entries still pending (n minus those cancelled or moved) */
} lane;

struct mt_engine {
    hent *heap;
    uint32_t n, hcap;
    lane lanes[LANES];
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
    for (int l = 0; l < LANES; l++) free(e->lanes[l].q);
    free(e->heap);
    free(e->recs);
    free(e);
}

mt_time_ps mt_engine_now(const mt_engine *e) { return e->now; }
uint64_t mt_engine_events(const mt_engine *e) { return e->processed; }
size_t mt_engine_pending(const mt_engine *e) {
    size_t n = e->n;
    for (int l = 0; l < LANES; l++) n += e->lanes[l].live;
    return n;
}

/* (time, seq) as one 128-bit number: one compare without a branch (times are >= 0). */
__extension__ typedef unsigned __int128 key128;
static inline key128 key(const hent *a) { return (key128)(uint64_t)a->t << 64 | a->seq; }
static inline int less(const hent *a, const hent *b) { return key(a) < key(b); }

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

/* The smallest of the children c .. c+ARITY-1 (all present): a tournament of selects, no
 * branch to mispredict (keys are unique, so the winner is the one the linear scan finds). */
static inline uint32_t min_child4(const hent *h, uint32_t c) {
    uint32_t a = less(&h[c + 1], &h[c]) ? c + 1 : c;
    uint32_t b = less(&h[c + 3], &h[c + 2]) ? c + 3 : c + 2;
    return less(&h[b], &h[a]) ? b : a;
}

static void sift_down(mt_engine *e, uint32_t i) {
    hent h = e->heap[i];
    for (;;) {
        uint32_t c = i * ARITY + 1, best;
        if (c + ARITY <= e->n) {
            best = min_child4(e->heap, c);
        } else {
            if (c >= e->n) break;
            best = c;
            for (uint32_t k = c + 1; k < e->n; k++)
                if (less(&e->heap[k], &e->heap[best])) best = k;
        }
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

/* The lane for events `delay` after now, or NULL (the heap takes it). */
static lane *pick_lane(mt_engine *e, mt_time_ps delay) {
    if (delay == 0) return &e->lanes[0];
    for (int l = 1; l < LANES; l++)
        if (e->lanes[l].n > 0 && e->lanes[l].delay == delay) return &e->lanes[l];
    for (int l = 1; l < LANES; l++)
        if (e->lanes[l].n == 0) {
            e->lanes[l].delay = delay;
            return &e->lanes[l];
        }
    return NULL;
}

/* Appends h to lane L; 0 when out of memory. O(1) amortised. */
static int lane_push(lane *L, hent h) {
    if (L->n == L->cap) {
        uint32_t ncap = L->cap ? L->cap * 2 : 256;
        hent *q = malloc((size_t)ncap * sizeof *q);
        if (!q) return 0;
        for (uint32_t i = 0; i < L->n; i++) q[i] = L->q[(L->head + i) & (L->cap - 1)];
        free(L->q);
        L->q = q;
        L->head = 0;
        L->cap = ncap;
    }
    L->q[(L->head + L->n++) & (L->cap - 1)] = h;
    return 1;
}

/* Room for one more heap entry (so that enqueue cannot fail). */
static int heap_reserve(mt_engine *e) {
    if (e->n < e->hcap) return 1;
    uint32_t ncap = e->hcap ? e->hcap * 2 : 1024;
    hent *nh = realloc(e->heap, (size_t)ncap * sizeof *nh);
    if (!nh) return 0;
    e->heap = nh;
    e->hcap = ncap;
    return 1;
}

/* Queues record slot's event at t with a new sequence number: in a lane when one holds its
 * delay, else in the heap (room reserved by the caller). */
static void enqueue(mt_engine *e, uint32_t slot, mt_time_ps t) {
    rec *r = &e->recs[slot];
    hent h = {t, e->seq++, slot};
    r->seq = h.seq;
    lane *L = pick_lane(e, t - e->now);
    if (L && lane_push(L, h)) {
        L->live++;
        r->pos = LANE_POS + (uint32_t)(L - e->lanes);
        return;
    }
    e->heap[e->n] = h;
    r->pos = e->n++;
    sift_up(e, r->pos);
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
    if (!heap_reserve(e)) return 0;
    uint32_t slot = e->free_head;
    rec *r = &e->recs[slot];
    e->free_head = r->next;
    r->fn = fn;
    r->ctx = ctx;
    r->arg = arg;
    enqueue(e, slot, t);
    return ((uint64_t)r->gen << 32) | slot;
}

/* Takes a pending record out of its lane (its entry stays behind, dead) or the heap. */
static void dequeue(mt_engine *e, uint32_t slot) {
    uint32_t pos = e->recs[slot].pos;
    if (pos >= LANE_POS) e->lanes[pos - LANE_POS].live--;
    else heap_remove(e, pos);
    e->recs[slot].pos = NO_POS;
}

int mt_engine_cancel(mt_engine *e, mt_event_id id) {
    uint32_t slot = lookup(e, id);
    if (slot == NO_POS) return 0;
    dequeue(e, slot);
    release(e, slot);
    return 1;
}

int mt_engine_move(mt_engine *e, mt_event_id id, mt_time_ps t) {
    uint32_t slot = lookup(e, id);
    if (slot == NO_POS || t < e->now || past_horizon(e, t)) return 0;
    uint32_t i = e->recs[slot].pos;
    if (i >= LANE_POS) { /* out of its lane, queued anew */
        if (!heap_reserve(e)) return 0;
        dequeue(e, slot);
        enqueue(e, slot, t);
        return 1;
    }
    mt_time_ps old = e->heap[i].t;
    e->heap[i].t = t;
    e->heap[i].seq = e->seq++;
    e->recs[slot].seq = e->heap[i].seq;
    if (t < old)
        sift_up(e, i);
    else
        sift_down(e, i);
    return 1;
}

/* Takes the next event (least (time, seq) of the heap's top and the lanes' live heads) into
 * *top when its time is <= until; 0 when there is none. */
static int next_event(mt_engine *e, mt_time_ps until, hent *top) {
    for (;;) {
        int src = LANES;
        const hent *best = e->n > 0 ? &e->heap[0] : NULL;
        for (int l = 0; l < LANES; l++) {
            const lane *L = &e->lanes[l];
            if (L->n > 0 && (!best || less(&L->q[L->head], best))) {
                best = &L->q[L->head];
                src = l;
            }
        }
        if (!best || best->t > until) return 0;
        *top = *best;
        if (src == LANES) {
            heap_remove(e, 0);
            return 1;
        }
        lane *L = &e->lanes[src];
        L->head = (L->head + 1) & (L->cap - 1);
        L->n--;
        const rec *r = &e->recs[top->slot];
        if (r->pos == LANE_POS + (uint32_t)src && r->seq == top->seq) { /* else cancelled or moved */
            L->live--;
            return 1;
        }
    }
}

mt_status mt_engine_run(mt_engine *e, mt_time_ps until, mt_error *err) {
    e->fail_code = MT_OK;
    hent top;
    while (next_event(e, until, &top)) {
        rec r = e->recs[top.slot];
        release(e, top.slot);
        e->now = top.t;
        e->processed++;
        r.fn(r.ctx, r.arg);
        if (e->fail_code != MT_OK) return mt_fail(err, e->fail_code, "%s", e->fail_msg);
        /* a cancel or the wall limit of the thread's budget (util/budget.h; none: never) */
        if ((e->processed & (MT_BUDGET_EVERY - 1)) == 0 && mt_budget_current()) MT_CHECK(mt_budget_check(err));
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

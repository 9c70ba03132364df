/* Unit tests for sim/engine: ordering by (time, seq), cancel, move, failures from handlers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"

typedef struct log {
    mt_engine *e;
    uint64_t order[64];
    mt_time_ps when[64];
    int n;
} log_t;

static void record(void *ctx, uint64_t arg) {
    log_t *l = ctx;
    l->order[l->n] = arg;
    l->when[l->n++] = mt_engine_now(l->e);
}

static void order_and_ties(void **state) {
    (void)state;
    log_t l = {.e = mt_engine_new()};
    assert_non_null(l.e);
    mt_engine_at(l.e, 30, record, &l, 3);
    mt_engine_at(l.e, 10, record, &l, 1);
    mt_engine_at(l.e, 20, record, &l, 2);
    mt_engine_at(l.e, 10, record, &l, 11); /* same time: after 1 (scheduled later) */
    assert_int_equal(mt_engine_pending(l.e), 4);
    assert_int_equal(mt_engine_run(l.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(l.n, 4);
    uint64_t want[] = {1, 11, 2, 3};
    mt_time_ps wt[] = {10, 10, 20, 30};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(l.order[i], want[i]);
        assert_int_equal(l.when[i], wt[i]);
    }
    assert_int_equal(mt_engine_events(l.e), 4);
    assert_int_equal(mt_engine_now(l.e), 30);
    /* scheduling in the past is refused */
    assert_int_equal(mt_engine_at(l.e, 29, record, &l, 0), 0);
    mt_engine_free(l.e);
}

static void cancel_and_move(void **state) {
    (void)state;
    log_t l = {.e = mt_engine_new()};
    mt_event_id a = mt_engine_at(l.e, 10, record, &l, 1);
    mt_event_id b = mt_engine_at(l.e, 20, record, &l, 2);
    mt_event_id c = mt_engine_at(l.e, 30, record, &l, 3);
    assert_int_equal(mt_engine_cancel(l.e, b), 1);
    assert_int_equal(mt_engine_cancel(l.e, b), 0); /* twice: no-op */
    assert_int_equal(mt_engine_move(l.e, c, 5), 1);
    assert_int_equal(mt_engine_move(l.e, a, 40), 1);
    assert_int_equal(mt_engine_run(l.e, 35, NULL), MT_OK); /* stops before 40 */
    assert_int_equal(l.n, 1);
    assert_int_equal(l.order[0], 3);
    assert_int_equal(l.when[0], 5);
    assert_int_equal(mt_engine_run(l.e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.order[1], 1);
    assert_int_equal(l.when[1], 40);
    /* a handle whose event ran is stale even after its slot is reused */
    mt_event_id d = mt_engine_at(l.e, 50, record, &l, 4);
    assert_int_equal(mt_engine_cancel(l.e, a), 0);
    assert_int_equal(mt_engine_move(l.e, a, 60), 0);
    assert_int_equal(mt_engine_cancel(l.e, d), 1);
    assert_int_equal(mt_engine_pending(l.e), 0);
    mt_engine_free(l.e);
}

struct chk {
    mt_engine *e;
    mt_time_ps last;
    int n, bad;
};

static void check(void *ctx, uint64_t arg) {
    (void)arg;
    struct chk *c = ctx;
    if (mt_engine_now(c->e) < c->last) c->bad++;
    c->last = mt_engine_now(c->e);
    c->n++;
}

/* Many random events come out sorted; random cancels never disturb the rest. */
static void heap_stress(void **state) {
    (void)state;
    mt_engine *e = mt_engine_new();
    enum { N = 20000 };
    mt_event_id *ids = malloc(N * sizeof *ids);
    mt_time_ps *t = malloc(N * sizeof *t);
    srand(7);
    struct chk c = {e, 0, 0, 0};
    for (int i = 0; i < N; i++) {
        t[i] = rand() % 100000;
        ids[i] = mt_engine_at(e, t[i], check, &c, (uint64_t)i);
    }
    int cancelled = 0;
    for (int i = 0; i < N; i += 3) cancelled += mt_engine_cancel(e, ids[i]);
    for (int i = 1; i < N; i += 7) mt_engine_move(e, ids[i], t[i] / 2);
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, NULL), MT_OK);
    assert_int_equal(c.n, N - cancelled);
    assert_int_equal(c.bad, 0);
    free(ids);
    free(t);
    mt_engine_free(e);
}

/* Lanes (engine.c): events issued at a few fixed delays (0, path latencies) go to FIFOs beside
 * the heap. A shadow list, popped by a linear scan for the least (time, seq), must name the same
 * event as the engine at every step, while handlers schedule at fixed and random delays and
 * cancel and move pending events (those in lanes included: their entries stay behind, dead). */
typedef struct shadow {
    mt_engine *e;
    mt_time_ps t[4096];
    uint64_t seq[4096], next_seq;
    mt_event_id id[4096];
    int alive[4096], n, ran, bad;
} shadow;

static void sh_event(void *ctx, uint64_t arg);

static void sh_at(shadow *s, mt_time_ps t) {
    if (s->n >= 4096) return;
    s->id[s->n] = mt_engine_at(s->e, t, sh_event, s, (uint64_t)s->n);
    assert_true(s->id[s->n] != 0);
    s->t[s->n] = t;
    s->seq[s->n] = s->next_seq++;
    s->alive[s->n++] = 1;
}

static mt_time_ps sh_delay(void) {
    static const mt_time_ps fixed[] = {0, 5, 7, 11, 13, 5, 7};
    return rand() % 4 ? fixed[rand() % 7] : rand() % 40;
}

static void sh_event(void *ctx, uint64_t arg) {
    shadow *s = ctx;
    int best = -1;
    for (int i = 0; i < s->n; i++)
        if (s->alive[i] && (best < 0 || s->t[i] < s->t[best] || (s->t[i] == s->t[best] && s->seq[i] < s->seq[best])))
            best = i;
    if (best != (int)arg || s->t[best] != mt_engine_now(s->e)) s->bad++;
    s->alive[arg] = 0;
    s->ran++;
    mt_time_ps now = mt_engine_now(s->e);
    for (int k = rand() % 3; k > 0; k--) sh_at(s, now + sh_delay());
    int v = rand() % (s->n > 0 ? s->n : 1);
    if (rand() % 4 == 0 && s->alive[v]) { /* cancel */
        assert_int_equal(mt_engine_cancel(s->e, s->id[v]), 1);
        s->alive[v] = 0;
    } else if (rand() % 3 == 0 && s->alive[v]) { /* move (a new sequence number) */
        mt_time_ps t = now + sh_delay();
        assert_int_equal(mt_engine_move(s->e, s->id[v], t), 1);
        s->t[v] = t;
        s->seq[v] = s->next_seq++;
    }
}

static void lanes_keep_the_order(void **state) {
    (void)state;
    shadow *s = calloc(1, sizeof *s);
    s->e = mt_engine_new();
    srand(11);
    for (int i = 0; i < 40; i++) sh_at(s, rand() % 20);
    assert_int_equal(mt_engine_run(s->e, MT_TIME_NEVER, NULL), MT_OK);
    int alive = 0;
    for (int i = 0; i < s->n; i++) alive += s->alive[i];
    assert_int_equal(alive, 0);
    assert_int_equal(s->bad, 0);
    assert_true(s->ran > 1000); /* the run went on long enough to exercise the lanes */
    assert_int_equal(mt_engine_events(s->e), (uint64_t)s->ran);
    assert_int_equal(mt_engine_pending(s->e), 0);
    mt_engine_free(s->e);
    free(s);
}

static void failing(void *ctx, uint64_t arg) {
    (void)arg;
    mt_sched s = mt_engine_sched(ctx);
    mt_sched_fail(s, MT_EINVAL, "handler says no");
}

static void handler_failure_stops_run(void **state) {
    (void)state;
    mt_engine *e = mt_engine_new();
    log_t l = {.e = e};
    mt_sched s = mt_engine_sched(e);
    mt_sched_at(s, 5, failing, e, 0);
    mt_sched_at(s, 6, record, &l, 1);
    mt_error err = {0};
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, &err), MT_EINVAL);
    assert_string_equal(err.msg, "handler says no");
    assert_int_equal(l.n, 0);
    assert_int_equal(mt_sched_now(s), 5);
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, &err), MT_OK); /* resumes */
    assert_int_equal(l.n, 1);
    mt_engine_free(e);
}

/* Schedules its next event a saturated (mt_ps_sat) huge duration later, then says "out of
 * memory" as the callers do when scheduling fails. */
static void too_far(void *ctx, uint64_t arg) {
    (void)arg;
    mt_sched s = mt_engine_sched(ctx);
    if (!mt_sched_at(s, mt_sched_now(s) + mt_ps_sat(1e300), failing, ctx, 0))
        mt_sched_fail(s, MT_ENOMEM, "out of memory");
}

/* An event past the horizon stops the run with a message about the range, not a wrapped
 * negative time or "out of memory" (network/sched.h). */
static void horizon(void **state) {
    (void)state;
    assert_int_equal(mt_ps_sat(1e300), MT_TIME_HORIZON_PS + 1);
    assert_int_equal(mt_ps_sat(NAN), MT_TIME_HORIZON_PS + 1);
    assert_int_equal(mt_ps_sat(2.4), 2);
    assert_int_equal(mt_ps_ceil(1e300), MT_TIME_HORIZON_PS + 1);
    mt_engine *e = mt_engine_new();
    mt_sched s = mt_engine_sched(e);
    mt_sched_at(s, MT_TIME_HORIZON_PS - 5, too_far, e, 0);
    mt_error err = {0};
    assert_int_equal(mt_engine_run(e, MT_TIME_NEVER, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "53 days"));
    mt_event_id id = mt_sched_at(s, mt_sched_now(s) + 1, failing, e, 0);
    assert_true(id != 0);
    assert_int_equal(mt_engine_move(e, id, MT_TIME_HORIZON_PS), 1);
    assert_int_equal(mt_engine_move(e, id, MT_TIME_HORIZON_PS + 1), 0);
    mt_engine_free(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(order_and_ties),
        cmocka_unit_test(cancel_and_move),
        cmocka_unit_test(heap_stress),
        cmocka_unit_test(lanes_keep_the_order),
        cmocka_unit_test(handler_failure_stops_run),
        cmocka_unit_test(horizon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for util/budget (the thread's cancel flag and limits) where the work checks it: the
 * engine stops an endless event chain within MT_BUDGET_EVERY events of a cancel from another
 * thread, and at its wall-clock limit, with the one-line message; with no budget bound it runs
 * to the end (the CLI is never stopped); a pool map bound to a cancelled budget starts no item,
 * and its worker threads see their creator's budget; the estimate refuses a run over the
 * budget's events, seconds and memory, naming the flag; the inflate cap stops a gzip read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "run/estimate.h"
#include "run/pool.h"
#include "sim/engine.h"
#include "util/budget.h"
#include "util/fileio.h"

typedef struct chain {
    mt_engine *e;
    uint64_t left; /* events still to schedule; UINT64_MAX: endless */
} chain;

static void tick(void *ctx, uint64_t arg) {
    chain *c = ctx;
    if (c->left == 0) return;
    if (c->left != UINT64_MAX) c->left--;
    mt_engine_at(c->e, mt_engine_now(c->e) + 1000, tick, c, arg + 1);
}

static void *cancel_later(void *arg) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    mt_budget_cancel(arg);
    return NULL;
}

static void test_engine_cancel(void **state) {
    (void)state;
    mt_budget b;
    mt_budget_init(&b);
    mt_budget_bind(&b);
    chain c = {mt_engine_new(), UINT64_MAX};
    mt_engine_at(c.e, 0, tick, &c, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_later, &b), 0);
    mt_error err = {0};
    double t0 = mt_budget_now_s();
    assert_int_equal(mt_engine_run(c.e, MT_TIME_NEVER, &err), MT_EINVAL);
    double took = mt_budget_now_s() - t0;
    pthread_join(th, NULL);
    assert_string_equal(err.msg, "run cancelled");
    assert_true(took < 2.0); /* 50 ms, then at most MT_BUDGET_EVERY cheap events */
    assert_int_equal(mt_engine_events(c.e) % MT_BUDGET_EVERY, 0); /* stopped at a check */
    assert_int_equal(mt_budget_stopped(&b), MT_BUDGET_CANCELLED);
    mt_budget_bind(NULL);
    mt_engine_free(c.e);
}

static void test_engine_wall(void **state) {
    (void)state;
    mt_budget b;
    mt_budget_init(&b);
    double t0 = mt_budget_now_s(); /* before the budget starts: the limit counts from its start */
    mt_budget_start(&b, 0.05);
    mt_budget_bind(&b);
    chain c = {mt_engine_new(), UINT64_MAX};
    mt_engine_at(c.e, 0, tick, &c, 0);
    mt_error err = {0};
    assert_int_equal(mt_engine_run(c.e, MT_TIME_NEVER, &err), MT_EINVAL);
    double took = mt_budget_now_s() - t0;
    assert_true(took >= 0.05 && took < 2.0);
    assert_non_null(strstr(err.msg, "wall-clock limit of 0.05 s (--max-run-seconds)"));
    mt_budget_bind(NULL);
    mt_engine_free(c.e);
}

/* No budget: a cancelled budget elsewhere changes nothing; the chain runs to its end. */
static void test_engine_unbound(void **state) {
    (void)state;
    mt_budget b;
    mt_budget_init(&b);
    mt_budget_cancel(&b); /* not bound to this thread */
    assert_null(mt_budget_current());
    chain c = {mt_engine_new(), 10 * MT_BUDGET_EVERY};
    mt_engine_at(c.e, 0, tick, &c, 0);
    mt_error err = {0};
    assert_int_equal(mt_engine_run(c.e, MT_TIME_NEVER, &err), MT_OK);
    assert_int_equal(mt_engine_events(c.e), 10 * MT_BUDGET_EVERY + 1);
    mt_engine_free(c.e);
}

typedef struct seen {
    int32_t runs;
    int32_t bound; /* items that saw a budget bound on their thread */
} seen;

static mt_status item(void *ctx, mt_pool *pool, int32_t i, mt_error *err) {
    (void)pool, (void)i, (void)err;
    seen *s = ctx;
    __atomic_add_fetch(&s->runs, 1, __ATOMIC_RELAXED);
    if (mt_budget_current()) __atomic_add_fetch(&s->bound, 1, __ATOMIC_RELAXED);
    return MT_OK;
}

static void test_pool(void **state) {
    (void)state;
    mt_budget b;
    mt_budget_init(&b);
    mt_budget_bind(&b);
    seen s = {0, 0};
    mt_pool_map_cfg m = {.n = 64, .jobs = 4, .fn = item, .ctx = &s};
    mt_error err = {0};
    assert_int_equal(mt_pool_map(&m, NULL, &err), MT_OK);
    assert_int_equal(s.runs, 64);
    assert_int_equal(s.bound, 64); /* every worker thread bound its creator's budget */
    mt_budget_cancel(&b);
    seen t = {0, 0};
    m.ctx = &t;
    int32_t failed = -1;
    assert_int_equal(mt_pool_map(&m, &failed, &err), MT_EINVAL);
    assert_int_equal(t.runs, 0);
    assert_int_equal(failed, 0);
    assert_string_equal(err.msg, "run cancelled");
    m.jobs = 1; /* serially too */
    assert_int_equal(mt_pool_map(&m, &failed, &err), MT_EINVAL);
    assert_int_equal(t.runs, 0);
    mt_budget_bind(NULL);
}

static void test_estimate(void **state) {
    (void)state;
    mt_estimate e = {.events = 2e6, .seconds = 30, .mem_bytes = 2e9};
    mt_error err = {0};
    assert_int_equal(mt_estimate_check_budget(&e, "the run", &err), MT_OK); /* no budget: the CLI */
    mt_budget b;
    mt_budget_init(&b);
    mt_budget_bind(&b);
    assert_int_equal(mt_estimate_check_budget(&e, "the run", &err), MT_OK); /* no limits */
    b.max_events = 1e6;
    assert_int_equal(mt_estimate_check_budget(&e, "the run", &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "the run would take about 2.0 M events, over this server's limit of 1.0 M (--max-events)"));
    b.max_events = 0;
    b.max_seconds = 10;
    assert_int_equal(mt_estimate_check_budget(&e, "the run", &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "(--max-run-seconds)"));
    b.max_seconds = 0;
    mt_budget_start(&b, 20); /* the wall limit is the seconds limit when none is set */
    assert_int_equal(mt_estimate_check_budget(&e, "the run", &err), MT_EINVAL);
    mt_budget_start(&b, 60);
    b.max_mem_bytes = 1e9;
    assert_int_equal(mt_estimate_check_budget(&e, "the comparison", &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "the comparison would need about"));
    assert_non_null(strstr(err.msg, "(--max-run-memory)"));
    mt_budget_bind(NULL);
}

/* A gzip file of 8 MiB of zeros read whole, then under a 1 MiB inflate cap. */
static void test_inflate_cap(void **state) {
    (void)state;
    char path[] = "/tmp/mt_budget_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    gzFile g = gzopen(path, "wb");
    static char zeros[1 << 20];
    for (int k = 0; k < 8; k++) assert_int_equal(gzwrite(g, zeros, sizeof zeros), (int)sizeof zeros);
    gzclose(g);
    char *buf = NULL;
    size_t len = 0;
    mt_error err = {0};
    assert_int_equal(mt_read_file(path, &buf, &len, &err), MT_OK);
    assert_int_equal(len, 8u << 20);
    free(buf);
    mt_budget b;
    mt_budget_init(&b);
    b.max_inflate_bytes = 1 << 20;
    mt_budget_bind(&b);
    buf = NULL;
    assert_int_equal(mt_read_file(path, &buf, &len, &err), MT_EINVAL);
    assert_null(buf);
    assert_non_null(strstr(err.msg, "inflates past 1048576 bytes"));
    assert_non_null(strstr(err.msg, "(--max-inflate SIZE)"));
    mt_budget_bind(NULL);
    remove(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_cancel), cmocka_unit_test(test_engine_wall), cmocka_unit_test(test_engine_unbound),
        cmocka_unit_test(test_pool),          cmocka_unit_test(test_estimate),    cmocka_unit_test(test_inflate_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for run/pool (the parallel map under `compare --jobs`) and run/ranks outside mpirun:
 * every item runs once and writes its own slot, whatever the thread count; the error returned is
 * the lowest failing item's (the serial loop's), items before it all run and, serially, none
 * after it starts; a lock section is never entered by two workers at once; outside mpirun a
 * process is rank 0 of 1 and owns every item, and round-robin shares cover each item once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "run/pool.h"
#include "run/ranks.h"

enum { N = 200 };

typedef struct ctx {
    int32_t out[N];
    int32_t runs[N];
    int32_t fail_from; /* items >= this and odd fail; N: none */
    int32_t inside, max_inside, locked_sum;
    int32_t started, bad_start;
} ctx;

static mt_status item(void *p, mt_pool *pool, int32_t i, mt_error *err) {
    ctx *c = p;
    c->out[i] = i * i; /* own slot */
    __atomic_add_fetch(&c->runs[i], 1, __ATOMIC_RELAXED);
    mt_pool_lock(pool);
    int32_t in = ++c->inside; /* under the lock: nobody else in here */
    if (in > c->max_inside) c->max_inside = in;
    c->locked_sum += i;
    c->inside--;
    mt_pool_unlock(pool);
    if (i >= c->fail_from && i % 2) return mt_fail(err, MT_EINVAL, "item %d refused", (int)i);
    return MT_OK;
}

static void on_start(void *p, int32_t i, int32_t done, int32_t n) {
    ctx *c = p;
    if (!(done <= c->started && n == N && i >= 0 && i < N)) c->bad_start = 1; /* no cmocka off the main thread */
    c->started++; /* the pool serialises the calls */
}

static void every_item_once_in_its_slot(void **state) {
    (void)state;
    for (int32_t jobs = 1; jobs <= 8; jobs *= 2) {
        ctx *c = calloc(1, sizeof *c);
        c->fail_from = N;
        mt_pool_map_cfg m = {.n = N, .jobs = jobs, .fn = item, .ctx = c, .start = on_start, .start_ctx = c};
        int32_t failed = -1;
        mt_error e = {0};
        assert_int_equal(mt_pool_map(&m, &failed, &e), MT_OK);
        assert_int_equal(failed, N);
        for (int32_t i = 0; i < N; i++) {
            assert_int_equal(c->out[i], i * i);
            assert_int_equal(c->runs[i], 1);
        }
        assert_int_equal(c->started, N);
        assert_false(c->bad_start);
        assert_int_equal(c->max_inside, 1);
        assert_int_equal(c->locked_sum, N * (N - 1) / 2);
        free(c);
    }
}

static void the_lowest_failure_is_the_error(void **state) {
    (void)state;
    for (int32_t jobs = 1; jobs <= 4; jobs++) {
        ctx *c = calloc(1, sizeof *c);
        c->fail_from = 100; /* 101, 103, ... fail: the serial loop stops at 101 */
        mt_pool_map_cfg m = {.n = N, .jobs = jobs, .fn = item, .ctx = c};
        int32_t failed = -1;
        mt_error e = {0};
        assert_int_equal(mt_pool_map(&m, &failed, &e), MT_EINVAL);
        assert_int_equal(failed, 101);
        assert_string_equal(e.msg, "item 101 refused");
        for (int32_t i = 0; i <= 101; i++) assert_int_equal(c->runs[i], 1);
        if (jobs == 1)
            for (int32_t i = 102; i < N; i++) assert_int_equal(c->runs[i], 0);
        free(c);
    }
}

static void more_jobs_than_items_and_no_items(void **state) {
    (void)state;
    ctx *c = calloc(1, sizeof *c);
    c->fail_from = N;
    mt_pool_map_cfg m = {.n = 3, .jobs = 64, .fn = item, .ctx = c};
    assert_int_equal(mt_pool_map(&m, NULL, NULL), MT_OK);
    assert_int_equal(c->runs[0] + c->runs[1] + c->runs[2] + c->runs[3], 3);
    m.n = 0;
    assert_int_equal(mt_pool_map(&m, NULL, NULL), MT_OK);
    free(c);
    assert_true(mt_pool_cores() >= 1);
}

static void outside_mpirun_one_rank_owns_everything(void **state) {
    (void)state;
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMIX_RANK");
    unsetenv("PMI_RANK");
    mt_ranks r;
    mt_error e = {0};
    assert_int_equal(mt_ranks_open(&r, &e), MT_OK);
    assert_int_equal(r.rank, 0);
    assert_int_equal(r.size, 1);
    assert_int_equal(r.mpi, 0); /* no MPI_Init as a singleton */
    assert_true(mt_ranks_root(&r));
    for (int32_t i = 0; i < 10; i++) assert_true(mt_ranks_mine(&r, i));
    e.code = MT_EIO;
    assert_int_equal(mt_ranks_agree(&r, MT_EIO, &e), MT_EIO);
    void *all = NULL;
    size_t len = 0;
    assert_int_equal(mt_ranks_gather(&r, "abc", 3, &all, &len, &e), MT_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(all, "abc", 3);
    free(all);
    mt_ranks_close(&r);
    /* three ranks share items round-robin: each item is one rank's */
    for (int32_t i = 0; i < 30; i++) {
        int owners = 0;
        for (int k = 0; k < 3; k++) owners += mt_ranks_mine(&(mt_ranks){.rank = k, .size = 3}, i);
        assert_int_equal(owners, 1);
        assert_true(mt_ranks_mine(&(mt_ranks){.rank = i % 3, .size = 3}, i));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_item_once_in_its_slot),
        cmocka_unit_test(the_lowest_failure_is_the_error),
        cmocka_unit_test(more_jobs_than_items_and_no_items),
        cmocka_unit_test(outside_mpirun_one_rank_owns_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

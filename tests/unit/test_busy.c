/* Unit tests for sim/busy (a GPU's device busy time not yet accounted), solved by hand: spans
 * merge where they touch, a take counts the busy part of [acct, t) and keeps the rest of a span
 * running past t, and a span added before acct keeps only its part after it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/busy.h"

static void spans_merge_and_are_taken_once(void **state) {
    (void)state;
    mt_busy b = {0};
    assert_int_equal(mt_busy_take(&b, 5), 0); /* nothing yet (no array) */
    assert_int_equal(b.acct, 5);
    assert_true(mt_busy_add(&b, 30, 40));
    assert_true(mt_busy_add(&b, 10, 20));
    assert_true(mt_busy_add(&b, 15, 35)); /* joins both: [10, 40) */
    assert_int_equal(b.n, 1);
    assert_int_equal(mt_busy_end(&b), 40);
    assert_int_equal(mt_busy_take(&b, 25), 15); /* [10, 25) */
    assert_int_equal(b.acct, 25);
    assert_true(mt_busy_add(&b, 0, 30));        /* only [25, 30) is new, inside [25, 40) */
    assert_int_equal(mt_busy_take(&b, 50), 15); /* [25, 40) */
    assert_int_equal(mt_busy_end(&b), 50);      /* nothing left: acct */
    assert_int_equal(mt_busy_take(&b, 40), 0);  /* the past: nothing, acct stays */
    assert_int_equal(b.acct, 50);
    mt_busy_free(&b);
}

static void a_gap_filled_later_joins_its_neighbours(void **state) {
    (void)state;
    mt_busy b = {0};
    assert_true(mt_busy_add(&b, 60, 70));
    assert_true(mt_busy_add(&b, 80, 90));
    assert_true(mt_busy_add(&b, 100, 110));
    assert_int_equal(mt_busy_take(&b, 65), 5);
    assert_true(mt_busy_add(&b, 70, 80)); /* [65, 90) */
    assert_int_equal(b.n, 2);
    assert_int_equal(mt_busy_take(&b, 105), 25 + 5);
    assert_int_equal(mt_busy_end(&b), 110);
    assert_int_equal(mt_busy_take(&b, 200), 5);
    assert_int_equal(b.n, 0);
    mt_busy_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spans_merge_and_are_taken_once),
        cmocka_unit_test(a_gap_filled_later_joins_its_neighbours),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for extrapolate/statemem (parameters, gradients, optimizer state per GPU): each ZeRO stage
 * shards what it shards of the replicated bytes and never the owned ones (experts, sharded tables);
 * shards are ceil(n / k); CP ranks join the shard group; one rank shards nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "extrapolate/statemem.h"

static mt_plan plan(int32_t dp, int32_t cp, int zero, int fsdp, int32_t shard) {
    mt_plan p;
    mt_plan_init(&p);
    p.dp = dp;
    p.cp = cp;
    p.zero = zero;
    p.fsdp = fsdp;
    p.fsdp_shard = shard;
    return p;
}

static void ddp_holds_everything(void **state) {
    (void)state;
    mt_plan p = plan(4, 1, 0, 0, 0);
    mt_state_bytes w = {1000, 200, 0, 2.0};
    mt_state_mem m = mt_state_memory(&p, &w);
    assert_true(m.params == 1200 && m.grads == 1200 && m.optimizer == 2400);
    assert_int_equal(mt_state_shard(&p), 1);
}

static void zero_stages_shard_the_replicated_part_only(void **state) {
    (void)state;
    mt_state_bytes w = {1000, 200, 300, 1.0};
    mt_plan z1 = plan(4, 1, 1, 0, 0), z2 = plan(4, 1, 2, 0, 0), z3 = plan(4, 1, 3, 0, 0);
    mt_state_mem a = mt_state_memory(&z1, &w), b = mt_state_memory(&z2, &w), c = mt_state_memory(&z3, &w);
    assert_true(a.params == 1200 && a.grads == 1200 && a.optimizer == 200 + 250);
    assert_true(b.params == 1200 && b.grads == 200 + 250 && b.optimizer == 450);
    assert_true(c.params == 200 + 250 + 300 && c.grads == 450 && c.optimizer == 450); /* + the gathered unit */
}

static void shards_are_whole_bytes_and_cp_joins(void **state) {
    (void)state;
    mt_plan p = plan(3, 1, 2, 0, 0);
    mt_state_bytes w = {1000, 0, 0, 1.5};
    mt_state_mem m = mt_state_memory(&p, &w);
    assert_true(m.grads == 334 && m.optimizer == 501); /* ceil(1000 / 3), ceil(1.5 x 334) */
    mt_plan c = plan(2, 2, 1, 0, 0);
    assert_int_equal(mt_state_shard(&c), 4);
    mt_plan h = plan(4, 2, 0, 1, 2); /* HSDP: shard groups of 2 replicas x 2 CP ranks */
    assert_int_equal(mt_state_shard(&h), 4);
    mt_plan one = plan(1, 1, 3, 0, 0);
    assert_int_equal(mt_state_shard(&one), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ddp_holds_everything),
        cmocka_unit_test(zero_stages_shard_the_replicated_part_only),
        cmocka_unit_test(shards_are_whole_bytes_and_cp_joins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for extrapolate/statemem (parameters, gradients, optimizer state per GPU): each ZeRO stage
 * shards what it shards of the replicated bytes and never the owned ones (experts, sharded tables);
 * shards are ceil(n / k); CP ranks join the shard group; one rank shards nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "extrapolate/precision.h"
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

/* The precision policy (precision.h) over a pure-bf16 trace of P parameters with bf16 Adam (2 states:
 * W = 2P bytes of weights, 4P of state, opt_per_param 2). bf16-mixed asks bf16 params, fp32
 * reduction, fp32 master and Adam. Closed forms per GPU over N = 8:
 *   FSDP2 (fully_shard, MixedPrecisionPolicy(bf16, fp32)): fp32 sharded params 4P/N (+ the bf16 gathered
 *     units), fp32 grads 4P/N, Adam 8P/N: 16P/N in all, ZeRO-3's (2 + 2 + 12)P/N of the ZeRO paper;
 *   DDP: bf16 params 2P, fp32 grads 4P, fp32 master + Adam 12P: Megatron's 18 bytes per parameter;
 *   ZeRO-1 and --dist-opt (Megatron's distributed optimizer): 2P + 4P + 12P/N, Megatron's 6 + 12/N bytes per
 *     parameter (NVIDIA/Megatron-LM docs/user-guide/features/dist_optimizer.md: bf16 params, fp32 grads, 6 + 12/d).
 * The optimizer step touches grad + 2 x states + master read/write + param write per parameter:
 * traced 2 + 2 x 2 x 2 + 2 x 2 = 14 B, asked 4 + 2 x 2 x 4 + 2 x 4 + 2 = 30 B. */
static void precision_policies_rescale_the_states(void **state) {
    (void)state;
    mt_error err;
    mt_precision traced = {MT_PREC_BF16, MT_PREC_BF16, MT_PREC_NONE, MT_PREC_BF16, ""}, ask, mixed;
    assert_int_equal(mt_precision_parse("fp8-mixed", &ask, &err), MT_OK); /* bf16-mixed, GEMMs in FP8 */
    assert_int_equal(ask.fp8, 1);
    assert_int_equal(ask.param, MT_PREC_BF16);
    assert_int_equal(ask.master, MT_PREC_FP32);
    assert_int_equal(mt_precision_parse("bf16-mixed,gemm=fp8", &ask, &err), MT_OK);
    assert_int_equal(ask.fp8, 1);
    assert_int_equal(mt_precision_parse("bf16-mixed,gemm=int4", &ask, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "gemm=int4"));
    assert_int_equal(mt_precision_parse("bf16-mixed", &ask, &err), MT_OK);
    assert_int_equal(ask.fp8, 0);
    mt_precision_resolve(&ask, &traced, &mixed);
    mt_prec_scale sc;
    mt_precision_scale(&traced, &mixed, 2.0, &sc);
    assert_true(sc.param == 1 && sc.shard == 2 && sc.grad == 2 && sc.optim == 2 && sc.master == 2);
    assert_true(sc.opt_time == 30.0 / 14.0);
    const double P = 8e9, N = 8;
    mt_state_bytes w = {2 * P, 0, 0, 2.0};
    mt_plan f = plan(8, 1, 0, 1, 0), d = plan(8, 1, 0, 0, 0), z1 = plan(8, 1, 1, 0, 0);
    mt_state_mem a = mt_state_memory_scaled(&f, &w, &sc), b = mt_state_memory_scaled(&d, &w, &sc);
    mt_state_mem c = mt_state_memory_scaled(&z1, &w, &sc);
    assert_true(a.params == 4 * P / N && a.grads == 4 * P / N && a.optimizer == 8 * P / N);
    assert_true(b.params + b.grads + b.optimizer == 18 * P && b.optimizer == 12 * P);
    assert_true(c.params == 2 * P && c.grads == 4 * P && c.optimizer == 12 * P / N);
    mt_plan dopt = plan(8, 1, 0, 0, 0);
    dopt.dist_opt = 1;
    mt_state_mem e = mt_state_memory_scaled(&dopt, &w, &sc);
    assert_true(e.params == 2 * P && e.grads == 4 * P && e.optimizer == 12 * P / N);
    assert_int_equal(mt_state_shard(&dopt), 8);
    /* the same policy: nothing moves; names and parts; a part changed leaves the name */
    mt_precision_scale(&mixed, &mixed, 2.0, &sc);
    assert_true(sc.param == 1 && sc.shard == 1 && sc.grad == 1 && sc.optim == 1 && sc.master == 0 && sc.opt_time == 1);
    assert_int_equal(mt_precision_parse("bf16-mixed,reduce=bf16", &ask, &err), MT_OK);
    assert_true(ask.reduce == MT_PREC_BF16 && ask.master == MT_PREC_FP32 && ask.name[0] == 0);
    assert_int_equal(mt_precision_parse("master=none,optim=bf16", &ask, &err), MT_OK);
    assert_true(ask.param == MT_PREC_UNSET && ask.master == MT_PREC_NONE && ask.optim == MT_PREC_BF16);
    char buf[160];
    assert_non_null(strstr(mt_precision_describe(&traced, buf, sizeof buf), "bf16 (param bf16"));
    assert_int_equal(mt_precision_parse("bf17", &ask, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--precision"));
    assert_int_equal(mt_precision_parse("master=bf16", &ask, &err), MT_EINVAL);
    assert_int_equal(mt_precision_parse("grads=fp32", &ask, &err), MT_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ddp_holds_everything),
        cmocka_unit_test(zero_stages_shard_the_replicated_part_only),
        cmocka_unit_test(shards_are_whole_bytes_and_cp_joins),
        cmocka_unit_test(precision_policies_rescale_the_states),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

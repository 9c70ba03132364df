/* Unit tests for report/emureport.h (the emulation report and the network check), on hand-made
 * numbers (no MPI needed):
 *  - a 4-rank ring whose pairs 1->2 and 2->3 are 4x slower than predicted (rank 2's link slow,
 *    both directions): exactly those two pairs are flagged at 25%, rank 2 is the only suspect,
 *    a collective 20% over its prediction passes at 25% and fails at 10%;
 *  - every pair slow: no suspect (nothing stands out), the verdict says the network is slower;
 *  - the error and step helpers, and the JSON (step, error, busbw = algbw x factor, suspects). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/emureport.h"

/* A 4-rank report: pairs i -> i+1 with 1000 us predicted each; measured 1000 us except those
 * listed as slow (4000 us); one collective of 1 MB predicted 1000 us, measured coll_us. */
static void make(mt_emu_report *r, const int *slow, double coll_us) {
    memset(r, 0, sizeof *r);
    r->nranks = 4;
    r->coll_mode = "schedule";
    snprintf(r->topology, sizeof r->topology, "switch:4");
    r->time_scale = r->bytes_scale = 1;
    r->ranks = calloc(4, sizeof *r->ranks);
    r->pairs = calloc(4, sizeof *r->pairs);
    r->colls = calloc(1, sizeof *r->colls);
    assert_non_null(r->ranks);
    assert_non_null(r->pairs);
    assert_non_null(r->colls);
    for (int i = 0; i < 4; i++) {
        r->ranks[i] = (mt_emu_rank){.rank = i, .step_ms = 10 + i, .pred_step_ms = 10};
        r->pairs[i] = (mt_emu_pair){i, (i + 1) % 4, 6, 1e6, slow[i] ? 4000 : 1000, 1000, 0};
    }
    r->n_pairs = 4;
    r->colls[0] = (mt_emu_coll){"allreduce", "ring", "dp", 0, 4, 0, 0, -1, 1e6, coll_us, 1000, 1.5, 0};
    r->n_colls = 1;
}

static void one_slow_link(void **state) {
    (void)state;
    mt_emu_report r;
    const int slow[4] = {0, 1, 1, 0}; /* 1 -> 2 and 2 -> 3 */
    make(&r, slow, 1200);
    assert_int_equal(mt_emu_check(&r, 0.25), 0);
    assert_int_equal(r.slow_pairs, 2);
    assert_false(r.pairs[0].slow);
    assert_true(r.pairs[1].slow);
    assert_true(r.pairs[2].slow);
    assert_false(r.pairs[3].slow);
    assert_int_equal(r.n_suspects, 1); /* rank 1 and 3 also have a fast pair */
    assert_int_equal(r.suspects[0], 2);
    assert_int_equal(r.slow_colls, 0); /* +20% passes at 25% */
    assert_int_equal(mt_emu_check(&r, 0.10), 0);
    assert_int_equal(r.slow_colls, 1);  /* and fails at 10% */
    assert_int_equal(r.n_suspects, 1);
    mt_emu_report_free(&r);
}

static void all_slow(void **state) {
    (void)state;
    mt_emu_report r;
    const int slow[4] = {1, 1, 1, 1};
    make(&r, slow, 4000);
    assert_int_equal(mt_emu_check(&r, 0.25), 0);
    assert_int_equal(r.slow_pairs, 4);
    assert_int_equal(r.n_suspects, 0);
    char buf[8192] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    assert_non_null(f);
    mt_emu_report_print(f, &r);
    fclose(f);
    assert_non_null(strstr(buf, "every pair is slow"));
    assert_non_null(strstr(buf, "4 of 4 rank pairs"));
    mt_emu_report_free(&r);
}

static void helpers_and_json(void **state) {
    (void)state;
    mt_emu_report r;
    const int slow[4] = {0, 1, 1, 0};
    make(&r, slow, 2000);
    assert_true(fabs(mt_emu_error(115, 100) - 0.15) < 1e-12);
    assert_true(mt_emu_error(5, 0) == 0);
    assert_true(mt_emu_step_ms(&r) == 13);      /* the slowest rank */
    assert_true(mt_emu_pred_step_ms(&r) == 10);
    assert_int_equal(mt_emu_check(&r, 0.25), 0);
    r.suspect_links = calloc(1, sizeof(char *));
    assert_non_null(r.suspect_links);
    r.suspect_links[0] = strdup("gpu2->sw0, sw0->gpu2");
    json_t *j = mt_emu_report_json(&r);
    assert_non_null(j);
    assert_true(fabs(json_real_value(json_object_get(j, "step_ms")) - 13) < 1e-12);
    assert_true(fabs(json_real_value(json_object_get(j, "error")) - 0.3) < 1e-12);
    json_t *c = json_array_get(json_object_get(j, "collectives"), 0);
    double algbw = json_real_value(json_object_get(c, "algbw_GBps"));
    assert_true(fabs(algbw - 1e6 / 2000e3) < 1e-12); /* 1 MB in 2000 us = 0.5 GB/s */
    assert_true(fabs(json_real_value(json_object_get(c, "busbw_GBps")) - 1.5 * algbw) < 1e-12);
    assert_true(json_is_true(json_object_get(c, "slow")));
    json_t *s = json_array_get(json_object_get(json_object_get(j, "check"), "suspects"), 0);
    assert_int_equal(json_integer_value(json_object_get(s, "rank")), 2);
    assert_string_equal(json_string_value(json_object_get(s, "link")), "gpu2->sw0, sw0->gpu2");
    json_decref(j);
    mt_emu_report_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_slow_link),
        cmocka_unit_test(all_slow),
        cmocka_unit_test(helpers_and_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for network/lmm: max-min systems small enough to solve by hand — two variables on
 * one constraint, the textbook line, a parking lot, a bottleneck that moves when a capacity
 * changes, a modified constraint far from others (only its component is re-solved), the
 * empty modified set (solve returns at once), a variable alone on its constraints, and a
 * component whose values are bit for bit the same solved alone or beside other components
 * (ties between equal shares broken by constraint id, not by the heap's layout), and lazy
 * constraints (capacities asked only of those a solve or a query reaches). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "network/lmm.h"

static int close_rel(double a, double b) { return fabs(a - b) <= 1e-12 * fabs(b); }

/* A variable on the constraints listed (terminated by -1). */
static int32_t var_on(mt_lmm *s, int64_t data, const int32_t *cnsts) {
    int32_t n = 0;
    while (cnsts[n] >= 0) n++;
    int32_t v = mt_lmm_var_new(s, data);
    assert_true(v >= 0);
    assert_int_equal(mt_lmm_var_attach(s, v, cnsts, n, NULL), MT_OK);
    return v;
}

static int listed(const int32_t *ids, int32_t n, int32_t id) {
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id) return 1;
    return 0;
}

static void two_variables_share_one_constraint(void **state) {
    (void)state;
    mt_lmm *s = mt_lmm_new();
    int32_t c = mt_lmm_cnst_new(s, 100);
    int32_t a = var_on(s, 7, (int32_t[]){c, -1}), b = var_on(s, 8, (int32_t[]){c, -1});
    assert_true(mt_lmm_modified(s));
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_false(mt_lmm_modified(s));
    assert_true(mt_lmm_var_value(s, a) == 50 && mt_lmm_var_value(s, b) == 50);
    assert_true(mt_lmm_cnst_usage(s, c) == 100);
    assert_int_equal(mt_lmm_var_data(s, b), 8);
    int32_t n;
    mt_lmm_changed_vars(s, &n);
    assert_int_equal(n, 2);
    /* b leaves: a gets everything, and only a changed */
    mt_lmm_var_free(s, b);
    assert_int_equal(mt_lmm_cnst_nvars(s, c), 1);
    assert_int_equal(mt_lmm_cnst_var(s, c, 0), a);
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(mt_lmm_var_value(s, a) == 100);
    const int32_t *chg = mt_lmm_changed_vars(s, &n);
    assert_int_equal(n, 1);
    assert_int_equal(chg[0], a);
    /* a freed id is reused */
    assert_int_equal(mt_lmm_var_new(s, 9), b);
    mt_lmm_free(s);
}

/* Line 0-1-2: c0 = 10, c1 = 4. v0 uses both, v1 only c1, v2 only c0. c1 fixes v0 = v1 = 2; v2
 * takes what v0 leaves on c0: 8 (not 5, the naive equal split). */
static void textbook_line(void **state) {
    (void)state;
    mt_lmm *s = mt_lmm_new();
    int32_t c0 = mt_lmm_cnst_new(s, 10), c1 = mt_lmm_cnst_new(s, 4);
    int32_t v0 = var_on(s, 0, (int32_t[]){c0, c1, -1});
    int32_t v1 = var_on(s, 1, (int32_t[]){c1, -1});
    int32_t v2 = var_on(s, 2, (int32_t[]){c0, -1});
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(close_rel(mt_lmm_var_value(s, v0), 2));
    assert_true(close_rel(mt_lmm_var_value(s, v1), 2));
    assert_true(close_rel(mt_lmm_var_value(s, v2), 8));
    assert_true(close_rel(mt_lmm_cnst_usage(s, c0), 10));
    assert_true(close_rel(mt_lmm_cnst_usage(s, c1), 4));
    /* the bottleneck moves: c1 = 20 makes c0 the tightest (10 / 2 = 5 per variable), and v1
     * takes the rest of c1: 20 - 5 = 15 */
    mt_lmm_cnst_set_capacity(s, c1, 20);
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(close_rel(mt_lmm_var_value(s, v0), 5));
    assert_true(close_rel(mt_lmm_var_value(s, v1), 15));
    assert_true(close_rel(mt_lmm_var_value(s, v2), 5));
    int32_t n;
    mt_lmm_changed_vars(s, &n);
    assert_int_equal(n, 3);
    /* the same capacity again: re-solved, nothing changed */
    mt_lmm_cnst_set_capacity(s, c1, 20);
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    mt_lmm_solved_vars(s, &n);
    assert_int_equal(n, 3);
    mt_lmm_changed_vars(s, &n);
    assert_int_equal(n, 0);
    mt_lmm_free(s);
}

/* Parking lot: A, B, C of 12 each; a long variable on all three, one short on A, one on B,
 * two on C. C's share is 4: the long one and C's get 4, A's and B's short ones 8. */
static void parking_lot(void **state) {
    (void)state;
    mt_lmm *s = mt_lmm_new();
    int32_t A = mt_lmm_cnst_new(s, 12), B = mt_lmm_cnst_new(s, 12), C = mt_lmm_cnst_new(s, 12);
    int32_t lng = var_on(s, 0, (int32_t[]){A, B, C, -1});
    int32_t a = var_on(s, 1, (int32_t[]){A, -1}), b = var_on(s, 2, (int32_t[]){B, -1});
    int32_t c1 = var_on(s, 3, (int32_t[]){C, -1}), c2 = var_on(s, 4, (int32_t[]){C, -1});
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(close_rel(mt_lmm_var_value(s, lng), 4));
    assert_true(close_rel(mt_lmm_var_value(s, a), 8));
    assert_true(close_rel(mt_lmm_var_value(s, b), 8));
    assert_true(close_rel(mt_lmm_var_value(s, c1), 4));
    assert_true(close_rel(mt_lmm_var_value(s, c2), 4));
    /* the long one leaves: every short one gets its whole constraint's share */
    mt_lmm_var_detach(s, lng);
    const int32_t *cs;
    assert_int_equal(mt_lmm_var_cnsts(s, lng, &cs), 3); /* still readable after detach */
    assert_int_equal(cs[2], C);
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(close_rel(mt_lmm_var_value(s, a), 12));
    assert_true(close_rel(mt_lmm_var_value(s, b), 12));
    assert_true(close_rel(mt_lmm_var_value(s, c1), 6));
    /* and comes back on a longer list than fits inline (7 constraints) */
    int32_t more[7] = {A, B, C};
    for (int i = 3; i < 7; i++) more[i] = mt_lmm_cnst_new(s, 1);
    assert_int_equal(mt_lmm_var_attach(s, lng, more, 7, NULL), MT_OK);
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(close_rel(mt_lmm_var_value(s, lng), 1)); /* the 1-wide constraints bind */
    assert_true(close_rel(mt_lmm_var_value(s, c1), 5.5));
    mt_lmm_free(s);
}

/* Two separate components; changing a capacity in one re-solves only that one. */
static void far_modification_leaves_others_alone(void **state) {
    (void)state;
    mt_lmm *s = mt_lmm_new();
    int32_t near = mt_lmm_cnst_new(s, 10), far = mt_lmm_cnst_new(s, 30), empty = mt_lmm_cnst_new(s, 5);
    int32_t x = var_on(s, 0, (int32_t[]){near, -1}), y = var_on(s, 1, (int32_t[]){near, -1});
    int32_t z = var_on(s, 2, (int32_t[]){far, -1});
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(mt_lmm_var_value(s, z) == 30);
    mt_lmm_cnst_set_capacity(s, far, 60);
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    int32_t nv, nc, nch;
    const int32_t *vs = mt_lmm_solved_vars(s, &nv), *cs = mt_lmm_solved_cnsts(s, &nc);
    const int32_t *chg = mt_lmm_changed_vars(s, &nch);
    assert_int_equal(nv, 1);
    assert_int_equal(vs[0], z);
    assert_int_equal(nc, 1);
    assert_int_equal(cs[0], far);
    assert_int_equal(nch, 1);
    assert_int_equal(chg[0], z);
    assert_false(listed(vs, nv, x) || listed(vs, nv, y));
    assert_true(mt_lmm_var_value(s, x) == 5 && mt_lmm_var_value(s, z) == 60);
    /* a constraint without variables is dropped from the set, not solved */
    mt_lmm_cnst_set_capacity(s, empty, 7);
    assert_true(mt_lmm_modified(s));
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    mt_lmm_solved_cnsts(s, &nc);
    assert_int_equal(nc, 0);
    assert_true(mt_lmm_cnst_capacity(s, empty) == 7);
    /* nothing modified: returns at once with empty lists */
    assert_false(mt_lmm_modified(s));
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    mt_lmm_solved_vars(s, &nv);
    assert_int_equal(nv, 0);
    mt_lmm_free(s);
}

/* A zero-capacity constraint gives its variables 0, and a variable on a free constraint still
 * gets no more than its other constraints allow. */
static void zero_capacity(void **state) {
    (void)state;
    mt_lmm *s = mt_lmm_new();
    int32_t cut = mt_lmm_cnst_new(s, 0), wide = mt_lmm_cnst_new(s, 10);
    int32_t a = var_on(s, 0, (int32_t[]){cut, wide, -1}), b = var_on(s, 1, (int32_t[]){wide, -1});
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(mt_lmm_var_value(s, a) == 0);
    assert_true(mt_lmm_var_value(s, b) == 10);
    int32_t n;
    mt_lmm_changed_vars(s, &n);
    assert_int_equal(n, 1); /* a stayed at 0 */
    mt_lmm_free(s);
}

/* A variable alone on its three constraints takes the smallest capacity; each constraint's usage
 * is that value. */
static void alone_takes_the_smallest(void **state) {
    (void)state;
    mt_lmm *s = mt_lmm_new();
    int32_t c0 = mt_lmm_cnst_new(s, 5), c1 = mt_lmm_cnst_new(s, 3), c2 = mt_lmm_cnst_new(s, 7);
    int32_t a = var_on(s, 0, (int32_t[]){c0, c1, c2, -1});
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(mt_lmm_var_value(s, a) == 3);
    assert_true(mt_lmm_cnst_usage(s, c0) == 3 && mt_lmm_cnst_usage(s, c1) == 3 && mt_lmm_cnst_usage(s, c2) == 3);
    /* a second variable on c1: both share it (1.5 each), no longer alone */
    int32_t b = var_on(s, 1, (int32_t[]){c1, -1});
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(mt_lmm_var_value(s, a) == 1.5 && mt_lmm_var_value(s, b) == 1.5);
    assert_true(mt_lmm_cnst_usage(s, c0) == 1.5 && mt_lmm_cnst_usage(s, c1) == 3);
    mt_lmm_free(s);
}

/* One random component: ncs constraints with capacities from a few values that make ties and
 * inexact sums (0.1, 0.3, 0.7, 1/3), nvs variables on 1..3 of them. `other` > 0 puts that many
 * unrelated constraints (and a variable on each pair of them) before each of the component's, so
 * its ids keep their order but the heap holds other entries. Returns the values after a solve, a
 * detach of variable 0 and a second solve. */
static void random_component(unsigned seed, int other, double *out1, double *out2) {
    enum { NC = 12, NV = 30 };
    static const double caps[] = {0.1, 0.3, 0.7, 1.0 / 3.0};
    mt_lmm *s = mt_lmm_new();
    int32_t c[NC], v[NV];
    for (int i = 0; i < NC; i++) {
        for (int k = 0; k < other; k++) {
            int32_t o = mt_lmm_cnst_new(s, caps[(i + k) % 4]);
            if (k % 2) var_on(s, 100 + k, (int32_t[]){o - 1, o, -1});
        }
        c[i] = mt_lmm_cnst_new(s, caps[rand_r(&seed) % 4]);
    }
    for (int j = 0; j < NV; j++) {
        int32_t list[4], n = 1 + (int32_t)(rand_r(&seed) % 3);
        for (int32_t h = 0; h < n; h++) {
            int32_t pick;
            int fresh;
            do { /* distinct constraints */
                pick = c[rand_r(&seed) % NC];
                fresh = 1;
                for (int32_t q = 0; q < h; q++) fresh &= list[q] != pick;
            } while (!fresh);
            list[h] = pick;
        }
        list[n] = -1;
        v[j] = var_on(s, j, list);
    }
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    for (int j = 0; j < NV; j++) out1[j] = mt_lmm_var_value(s, v[j]);
    mt_lmm_var_detach(s, v[0]);
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    for (int j = 1; j < NV; j++) out2[j] = mt_lmm_var_value(s, v[j]);
    out2[0] = 0;
    mt_lmm_free(s);
}

static void component_alike_alone_or_beside_others(void **state) {
    (void)state;
    for (unsigned seed = 1; seed <= 200; seed++) {
        double a1[30], a2[30], b1[30], b2[30];
        random_component(seed, 0, a1, a2);
        random_component(seed, 1 + (int)(seed % 5), b1, b2);
        assert_memory_equal(a1, b1, sizeof a1);
        assert_memory_equal(a2, b2, sizeof a2);
    }
}

/* Lazy constraints: capacity c + 1 each, asked of cap_of once per used constraint; the textbook
 * line on constraints 3 (cap 4) and 9 (cap 10) gives its hand-solved values; a capacity set
 * before use is the constraint's own (cap_of not asked). */
static int asked[16];
static double cap_plus_one(void *ctx, int32_t c) {
    (void)ctx;
    asked[c]++;
    return c + 1;
}

static void lazy_constraints(void **state) {
    (void)state;
    memset(asked, 0, sizeof asked);
    mt_lmm *s = mt_lmm_new();
    assert_int_equal(mt_lmm_cnsts_lazy(s, 16, cap_plus_one, NULL), 1);
    assert_int_equal(mt_lmm_cnsts_lazy(s, 16, cap_plus_one, NULL), 0); /* not empty any more */
    int32_t v0 = var_on(s, 0, (int32_t[]){9, 3, -1}), v1 = var_on(s, 1, (int32_t[]){3, -1});
    int32_t v2 = var_on(s, 2, (int32_t[]){9, -1});
    mt_lmm_cnst_set_capacity(s, 5, 50);
    assert_int_equal(mt_lmm_solve(s, NULL), MT_OK);
    assert_true(close_rel(mt_lmm_var_value(s, v0), 2) && close_rel(mt_lmm_var_value(s, v1), 2));
    assert_true(close_rel(mt_lmm_var_value(s, v2), 8));
    assert_true(mt_lmm_cnst_capacity(s, 5) == 50 && mt_lmm_cnst_capacity(s, 7) == 8);
    for (int c = 0; c < 16; c++) assert_int_equal(asked[c], c == 3 || c == 9 || c == 7);
    mt_lmm_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_variables_share_one_constraint),
        cmocka_unit_test(textbook_line),
        cmocka_unit_test(parking_lot),
        cmocka_unit_test(far_modification_leaves_others_alone),
        cmocka_unit_test(zero_capacity),
        cmocka_unit_test(alone_takes_the_smallest),
        cmocka_unit_test(component_alike_alone_or_beside_others),
        cmocka_unit_test(lazy_constraints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for report/jsonw.h, the streaming JSON writer: whatever it writes must be what
 * jansson's json_dumps(JSON_INDENT(2) | JSON_REAL_PRECISION(10)) prints for the same value, but for
 * whole numbers from 1e10 to 2^53, written in full.
 *  - reals: 0, -0, integers as reals, tiny and huge exponents, 0.1, negative, 2^53 + 1, 1e21 and
 *    20,000 random finite bit patterns (seeded), each written alone and inside an array; whole
 *    numbers from 1e10 to 2^53 in full (not jansson's 10 digits), in a spliced or dumped tree too;
 *  - strings with quotes, backslashes, control characters and UTF-8; integers at the extremes;
 *  - nesting: empty object / array, objects in arrays in objects, a jansson tree spliced in at
 *    depth 3 (mt_jw_value) equal to building the whole tree in jansson;
 *  - more than the 64 KiB buffer in one document; a non-finite real is null; a write to a
 *    read-only stream fails at mt_jw_finish. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/jsonw.h"

enum { FLAGS = JSON_INDENT(2) | JSON_REAL_PRECISION(10) | JSON_ENCODE_ANY };

/* What the writer produced for `fill`, as a string (caller frees). */
typedef void (*fill_fn)(mt_jw *w, void *ctx);
static char *written(fill_fn fill, void *ctx) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    mt_jw *w = malloc(sizeof *w);
    mt_jw_init(w, f);
    fill(w, ctx);
    assert_int_equal(mt_jw_finish(w), 0);
    free(w);
    fclose(f);
    return buf;
}

static void equal_to_jansson(fill_fn fill, void *ctx, json_t *want) {
    char *a = written(fill, ctx), *b = json_dumps(want, FLAGS);
    assert_non_null(b);
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_decref(want);
}

static void fill_real(mt_jw *w, void *ctx) { mt_jw_real(w, *(double *)ctx); }
static void fill_real_in_array(mt_jw *w, void *ctx) {
    mt_jw_array(w);
    mt_jw_real(w, *(double *)ctx);
    mt_jw_real(w, -*(double *)ctx);
    mt_jw_end(w);
}

/* A whole number from 1e10 up to 2^53 (a byte count), which jansson's 10 digits would round. */
static int whole_big(double v) { return fabs(v) >= 1e10 && fabs(v) < 9007199254740992.0 && v == floor(v); }

static void equal_to_text(fill_fn fill, void *ctx, const char *want) {
    char *a = written(fill, ctx);
    assert_string_equal(a, want);
    free(a);
}

static void check_real(double v) {
    if (whole_big(v)) { /* in full: "%.0f.0", not jansson's */
        char one[64], two[160];
        snprintf(one, sizeof one, "%.0f.0", v);
        snprintf(two, sizeof two, "[\n  %.0f.0,\n  %.0f.0\n]", v, -v);
        equal_to_text(fill_real, &v, one);
        equal_to_text(fill_real_in_array, &v, two);
        return;
    }
    equal_to_jansson(fill_real, &v, json_real(v));
    equal_to_jansson(fill_real_in_array, &v, json_pack("[f,f]", v, -v));
}

/* Whole byte counts of 11 to 16 digits keep every digit (Llama-3-8B's 16,060,522,496 bf16 parameter
 * bytes were 1.60605225e10, +4 B), from 1e10 (jansson: 1e10) to 2^53 - 1; 2^53 on is jansson's; a
 * fraction keeps 10 digits. */
static void test_whole_reals_in_full(void **state) {
    (void)state;
    const struct { double v; const char *want; } in_full[] = {
        {16060522496.0, "16060522496.0"}, {-16060522496.0, "-16060522496.0"}, {1e10, "10000000000.0"},
        {9007199254740991.0, "9007199254740991.0"}, {9999999999.0, "9999999999.0"},
        {9007199254740992.0, "9.007199255e15"}, {16060522496.5, "1.60605225e10"}, {1e21, "1e21"}};
    for (size_t k = 0; k < sizeof in_full / sizeof in_full[0]; k++) {
        double v = in_full[k].v;
        equal_to_text(fill_real, &v, in_full[k].want);
    }
    /* a jansson tree spliced in, and dumped whole, writes its reals the same way */
    json_t *tree = json_pack("{s:f,s:[f,f],s:i}", "params", 16060522496.0, "x", 0.1, 28105914368.0, "n", 3);
    char *s = mt_jw_dumps(tree);
    assert_non_null(s);
    assert_string_equal(s, "{\n  \"params\": 16060522496.0,\n  \"x\": [\n    0.1,\n    28105914368.0\n  ],\n  \"n\": 3\n}");
    free(s);
    json_decref(tree);
    /* deeper than the writer nests (MT_JW_DEPTH_MAX): jansson's text, whole */
    json_t *deep = json_real(1.5);
    for (int k = 0; k < MT_JW_DEPTH_MAX + 2; k++) deep = json_pack("[o]", deep);
    s = mt_jw_dumps(deep);
    char *want = json_dumps(deep, FLAGS);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
    free(want);
    json_decref(deep);
}

static void test_reals(void **state) {
    (void)state;
    const double fixed[] = {0.0, -0.0, 1, 5, -3, 0.1, 1e-5, 1e20, 1e21, 123456789012.0, 9007199254740993.0,
                            1.5e-300, 4.9e-324, 1.7976931348623157e308, 2.5e-7, 0.000123, 1234567890.5};
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) check_real(fixed[k]);
    uint64_t x = 0x243F6A8885A308D3u; /* xorshift64, fixed seed */
    for (int k = 0; k < 20000; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        if (isfinite(v)) check_real(v);
        check_real((double)(x >> 20) / 1e3); /* ms-like values */
    }
}

static void fill_strings(mt_jw *w, void *ctx) {
    const char *const *s = ctx;
    mt_jw_object(w);
    for (int k = 0; s[k]; k++) {
        mt_jw_key(w, s[k]);
        mt_jw_string(w, s[k]);
    }
    mt_jw_key_int(w, "min", INT64_MIN);
    mt_jw_key_int(w, "max", INT64_MAX);
    mt_jw_end(w);
}

static void test_strings_and_ints(void **state) {
    (void)state;
    const char *s[] = {"plain", "q\"uote", "back\\slash", "tab\there", "nl\nx\r\b\f", "\x01\x1f", "caf\xc3\xa9 /",
                       "", NULL};
    json_t *o = json_object();
    for (int k = 0; s[k]; k++) json_object_set_new(o, s[k], json_string(s[k]));
    json_object_set_new(o, "min", json_integer(INT64_MIN));
    json_object_set_new(o, "max", json_integer(INT64_MAX));
    equal_to_jansson(fill_strings, s, o);
}

/* {"a": [], "b": {}, "c": [{"x": 1.0, "in": <tree>}, 2], "d": <tree>} with tree spliced. */
static void fill_nested(mt_jw *w, void *ctx) {
    json_t *tree = ctx;
    mt_jw_object(w);
    mt_jw_key(w, "a");
    mt_jw_array(w);
    mt_jw_end(w);
    mt_jw_key(w, "b");
    mt_jw_object(w);
    mt_jw_end(w);
    mt_jw_key(w, "c");
    mt_jw_array(w);
    mt_jw_object(w);
    mt_jw_key_real(w, "x", 1);
    mt_jw_key(w, "in");
    mt_jw_value(w, tree);
    mt_jw_end(w);
    mt_jw_int(w, 2);
    mt_jw_end(w);
    mt_jw_key(w, "d");
    mt_jw_value(w, tree);
    mt_jw_key(w, "n");
    mt_jw_value(w, NULL);
    mt_jw_end(w);
}

static void test_nesting_and_splice(void **state) {
    (void)state;
    json_t *tree = json_pack("{s:[i,{s:s,s:[]},{}],s:f,s:n,s:b}", "list", 1, "k", "v\nw", "e", "r", 0.25, "z",
                             "t", 1);
    json_t *want = json_pack("{s:[],s:{},s:[{s:f,s:O},i],s:O,s:n}", "a", "b", "c", "x", 1.0, "in", tree, 2, "d",
                             tree, "n");
    equal_to_jansson(fill_nested, tree, want);
    json_decref(tree);
}

static void fill_big(mt_jw *w, void *ctx) {
    int n = *(int *)ctx;
    mt_jw_array(w);
    for (int k = 0; k < n; k++) {
        mt_jw_object(w);
        mt_jw_key_int(w, "rank", k);
        mt_jw_key_real(w, "ms", k / 7.0);
        mt_jw_end(w);
    }
    mt_jw_end(w);
}

static void test_beyond_the_buffer(void **state) {
    (void)state;
    int n = 20000; /* ~1 MB, 16 buffers */
    json_t *a = json_array();
    for (int k = 0; k < n; k++) json_array_append_new(a, json_pack("{s:i,s:f}", "rank", k, "ms", k / 7.0));
    equal_to_jansson(fill_big, &n, a);
}

static void fill_nan(mt_jw *w, void *ctx) {
    (void)ctx;
    mt_jw_array(w);
    mt_jw_real(w, NAN);
    mt_jw_real(w, INFINITY);
    mt_jw_end(w);
}

static void test_nonfinite_and_failure(void **state) {
    (void)state;
    char *s = written(fill_nan, NULL);
    assert_string_equal(s, "[\n  null,\n  null\n]");
    free(s);
    FILE *ro = fopen("/dev/null", "r"); /* writes fail */
    assert_non_null(ro);
    mt_jw *w = malloc(sizeof *w);
    mt_jw_init(w, ro);
    int n = 10;
    fill_big(w, &n);
    assert_int_equal(mt_jw_finish(w), -1);
    free(w);
    fclose(ro);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reals),
        cmocka_unit_test(test_whole_reals_in_full),
        cmocka_unit_test(test_strings_and_ints),
        cmocka_unit_test(test_nesting_and_splice),
        cmocka_unit_test(test_beyond_the_buffer),
        cmocka_unit_test(test_nonfinite_and_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

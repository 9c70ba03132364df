/* Unit tests for util/units (decimal/binary prefixes, bits vs bytes, refusals) and util/err
 * (messages stay one line). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "util/err.h"
#include "util/units.h"

static void bandwidth_units(void **state) {
    (void)state;
    double v = 0;
    assert_int_equal(mt_parse_bandwidth("300GB/s", &v, NULL), MT_OK);
    assert_true(v == 300e9);
    assert_int_equal(mt_parse_bandwidth("400Gbps", &v, NULL), MT_OK);
    assert_true(v == 50e9);
    assert_int_equal(mt_parse_bandwidth("25Gb/s", &v, NULL), MT_OK);
    assert_true(v == 25e9 / 8);
    assert_int_equal(mt_parse_bandwidth("1.5TB/s", &v, NULL), MT_OK);
    assert_true(v == 1.5e12);
    assert_int_equal(mt_parse_bandwidth("1e9B/s", &v, NULL), MT_OK);
    assert_true(v == 1e9);
    /* a bare number has no unit: refused by mt_parse_bandwidth, bytes/s for files */
    mt_error e = {0};
    assert_int_equal(mt_parse_bandwidth("100", &v, &e), MT_EINVAL);
    assert_string_equal(e.msg, "bandwidth '100' has no unit: write 100GB/s or 800Gbps (100B/s for bytes per second)");
    assert_int_equal(mt_parse_bandwidth("100G", &v, NULL), MT_EINVAL); /* 100 GB/s or 100 Gb/s? */
    int bare = 0;
    assert_int_equal(mt_parse_bandwidth_Bps("1e9", &v, &bare, NULL), MT_OK);
    assert_true(v == 1e9 && bare);
    assert_int_equal(mt_parse_bandwidth_Bps("8Gbps", &v, &bare, NULL), MT_OK);
    assert_true(v == 1e9 && !bare);
    char hint[160];
    assert_string_equal(mt_bandwidth_unit_hint("2e9", hint, sizeof hint),
                        "write 2e9B/s for bytes per second (= 2GB/s = 16Gbps)");
}

static void bandwidth_refusals(void **state) {
    (void)state;
    double v = 0;
    mt_error e = {0};
    assert_int_equal(mt_parse_bandwidth("fast", &v, &e), MT_EINVAL);
    assert_non_null(strstr(e.msg, "fast"));
    assert_int_equal(mt_parse_bandwidth("0GB/s", &v, NULL), MT_EINVAL);
    assert_int_equal(mt_parse_bandwidth("-3GB/s", &v, NULL), MT_EINVAL);
    assert_int_equal(mt_parse_bandwidth("3GX/s", &v, NULL), MT_EINVAL);
    assert_int_equal(mt_parse_bandwidth("", &v, NULL), MT_EINVAL);
    assert_int_equal(mt_parse_bandwidth(NULL, &v, NULL), MT_EINVAL);
    assert_int_equal(mt_parse_bandwidth("1e300TB/s", &v, NULL), MT_EINVAL); /* infinite */
}

static void times(void **state) {
    (void)state;
    double v = 0;
    assert_int_equal(mt_parse_time_ns("20ms", &v, NULL), MT_OK);
    assert_true(v == 20e6);
    assert_int_equal(mt_parse_time_ns("1.5us", &v, NULL), MT_OK);
    assert_true(v == 1500);
    assert_int_equal(mt_parse_time_ns("700", &v, NULL), MT_OK);
    assert_true(v == 700);
    assert_int_equal(mt_parse_time_ns("2s", &v, NULL), MT_OK);
    assert_true(v == 2e9);
    assert_int_equal(mt_parse_time_ns("2 hours", &v, NULL), MT_EINVAL);
    /* beyond any simulated run: 1e300s converted to INT64_MIN ps downstream */
    assert_int_equal(mt_parse_time_ns("1e6s", &v, NULL), MT_OK);
    assert_int_equal(mt_parse_time_ns("1.1e6s", &v, NULL), MT_EINVAL);
    assert_int_equal(mt_parse_time_ns("1e300s", &v, NULL), MT_EINVAL);
}

static void sizes(void **state) {
    (void)state;
    double v = 0;
    assert_int_equal(mt_parse_bytes("1G", &v, NULL), MT_OK);
    assert_true(v == 1e9);
    assert_int_equal(mt_parse_bytes("25MB", &v, NULL), MT_OK);
    assert_true(v == 25e6);
    assert_int_equal(mt_parse_bytes("4KiB", &v, NULL), MT_OK);
    assert_true(v == 4096);
    assert_int_equal(mt_parse_bytes("1GiB", &v, NULL), MT_OK);
    assert_true(v == 1073741824.0);
    assert_int_equal(mt_parse_bytes("12 apples", &v, NULL), MT_EINVAL);
    assert_int_equal(mt_parse_bytes("1e300PB", &v, NULL), MT_EINVAL);
}

static void formatting(void **state) {
    (void)state;
    char buf[32];
    assert_string_equal(mt_fmt_bytes(1e9, buf, sizeof buf), "1.00 GB");
    assert_string_equal(mt_fmt_bandwidth(300e9, buf, sizeof buf), "300.00 GB/s");
    assert_string_equal(mt_fmt_time_ns(12345678, buf, sizeof buf), "12.346 ms");
}

/* A newline or other control byte quoted from a file name or a damaged file must not break the
 * one-line error contract (util/err.h). */
static void errors_one_line(void **state) {
    (void)state;
    mt_error e = {0};
    assert_int_equal(mt_fail(&e, MT_EFORMAT, "%s:1: invalid token near '%s'", "a\nb.json", "\x1c"), MT_EFORMAT);
    assert_string_equal(e.msg, "a?b.json:1: invalid token near '?'");
    assert_int_equal(mt_error_prefix(&e, "in\tdir\r"), MT_EFORMAT);
    assert_string_equal(e.msg, "in?dir?: a?b.json:1: invalid token near '?'");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bandwidth_units), cmocka_unit_test(bandwidth_refusals),
        cmocka_unit_test(times), cmocka_unit_test(sizes), cmocka_unit_test(formatting),
        cmocka_unit_test(errors_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

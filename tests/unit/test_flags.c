/* Unit tests for util/flags: parsing against bound tables (kinds, ranges, units, choices,
 * calls, repeats, --name=value, positional arguments, --help), which flags were given, and the
 * generated help / man / completion text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/flags.h"

typedef struct opts {
    int verbose;
    int32_t n;
    int64_t big;
    double factor, size, bw, lat_ns;
    const char *name;
    int algo;
    int n_tags;
    const char *tags[4];
} opts;

static mt_status add_tag(void *base, const char *v, mt_error *err) {
    opts *o = base;
    if (o->n_tags >= 4) return mt_fail(err, MT_EINVAL, "--tag: at most 4");
    o->tags[o->n_tags++] = v;
    return MT_OK;
}

static const mt_flag FLAGS[] = {
    {"--verbose", MT_FLAG_SWITCH, offsetof(opts, verbose), NULL, "say more"},
    {"--n", MT_FLAG_INT, offsetof(opts, n), "N", "a count", .lo = 1, .hi = 64},
    {"--big", MT_FLAG_INT64, offsetof(opts, big), "N", "a big count", .lo = 0, .hi = 1e12},
    {"--factor", MT_FLAG_DOUBLE, offsetof(opts, factor), "F", "a factor > 0", .lo = 0, .hi = 1e6, .lo_open = 1},
    {"--size", MT_FLAG_BYTES, offsetof(opts, size), "SIZE", "a size", .lo = 1},
    {"--bw", MT_FLAG_BANDWIDTH, offsetof(opts, bw), "BW", "a bandwidth"},
    {"--lat", MT_FLAG_TIME, offsetof(opts, lat_ns), "T", "a latency"},
    {"--name", MT_FLAG_STRING, offsetof(opts, name), "FILE", "a file", .complete = "file"},
    {"--algo", MT_FLAG_CHOICE, offsetof(opts, algo), "A", "an algorithm", .choices = "ring|tree|direct"},
    {"--tag", MT_FLAG_CALL, 0, "TAG", "a tag (repeatable)", .call = add_tag, .repeat = 1},
};
static const mt_flag_table TABLE = MT_FLAG_TABLE("Test options", FLAGS);

typedef struct other {
    int quiet;
} other;
static const mt_flag OTHER_FLAGS[] = {{"--quiet", MT_FLAG_SWITCH, offsetof(other, quiet), NULL, "say less"}};
static const mt_flag_table OTHER = MT_FLAG_TABLE("Other", OTHER_FLAGS);

typedef struct posctx {
    int n;
    const char *args[4];
} posctx;

static mt_status take_pos(void *ctx, const char *a, mt_error *err) {
    posctx *p = ctx;
    if (p->n >= 4) return mt_fail(err, MT_EINVAL, "too many paths");
    p->args[p->n++] = a;
    return MT_OK;
}

/* Parses the space-separated words of line (at most 32) into o, x and p. */
static mt_status parse(const char *line, opts *o, other *x, posctx *p, mt_flag_seen *seen, mt_error *err) {
    static char buf[512];
    char *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "cmd %s", line);
    for (char *s = strtok(buf, " "); s && argc < 32; s = strtok(NULL, " ")) argv[argc++] = s;
    memset(o, 0, sizeof *o);
    memset(x, 0, sizeof *x);
    memset(p, 0, sizeof *p);
    mt_flag_bind binds[2] = {{&TABLE, o}, {&OTHER, x}};
    return mt_flags_parse(argc, argv, 1, binds, 2, take_pos, p, "test", seen, err);
}

static void parses_every_kind(void **state) {
    (void)state;
    opts o;
    other x;
    posctx p;
    mt_flag_seen seen;
    mt_error e = {0};
    assert_int_equal(parse("a --verbose --n 8 --big=5000000000 --factor 0.5 --size 2MiB --bw 400Gbps --lat 2us "
                           "--name f.json --algo tree --tag x --tag y b --quiet",
                           &o, &x, &p, &seen, &e), MT_OK);
    assert_int_equal(o.verbose, 1);
    assert_int_equal(o.n, 8);
    assert_true(o.big == INT64_C(5000000000));
    assert_true(o.factor == 0.5);
    assert_true(o.size == 2 * 1024 * 1024);
    assert_true(o.bw == 50e9);
    assert_true(parse("--size 80e9", &o, &x, &p, &seen, &e) == MT_OK && o.size == 80e9); /* a bare size from 1 KiB: bytes */
    assert_true(parse("a --verbose --n 8 --big=5000000000 --factor 0.5 --size 2MiB --bw 400Gbps --lat 2us "
                      "--name f.json --algo tree --tag x --tag y b --quiet", &o, &x, &p, &seen, &e) == MT_OK);
    assert_true(o.lat_ns == 2000);
    assert_string_equal(o.name, "f.json");
    assert_int_equal(o.algo, 1);
    assert_int_equal(o.n_tags, 2);
    assert_string_equal(o.tags[1], "y");
    assert_int_equal(x.quiet, 1);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.args[0], "a");
    assert_string_equal(p.args[1], "b");
    assert_int_equal(seen.n, 12);
    assert_true(mt_flag_given(&seen, "--quiet"));
    assert_false(mt_flag_given(&seen, "--nothing"));
    assert_ptr_equal(mt_flag_given_from(&seen, &OTHER), &OTHER_FLAGS[0]);
}

static void refuses_bad_values(void **state) {
    (void)state;
    opts o;
    other x;
    posctx p;
    mt_error e = {0};
    const struct {
        const char *line, *want;
    } bad[] = {
        {"--n 0", "--n needs an integer in 1..64 (got '0')"},
        {"--n 8x", "--n needs an integer"},
        {"--factor 0", "--factor needs a positive number up to 1000000 (got '0')"},
        {"--factor nan", "--factor needs a positive number"},
        {"--size 0", "--size needs a size such as 25MiB or 80GB >= 1 (got '0')"},
        {"--size 80", "--size 80 has no unit, so it is 80 bytes: give one, such as 80GB or 80MiB"},
        {"--bw fast", "--bw needs a bandwidth with its unit, such as"},
        {"--bw 100", "--bw 100 has no unit: write 100GB/s or 800Gbps (100B/s for bytes per second)"},
        {"--lat 3parsecs", "--lat needs a time such as"},
        {"--algo star", "--algo needs ring, tree or direct (got 'star')"},
        {"--n", "--n needs a value (N)"},
        {"--verbose=1", "--verbose takes no value"},
        {"--bogus 3", "unknown option '--bogus' (see mitosis test --help)"},
        {"--n 3 --n 4", "--n is given twice"},
        {"a b c d e", "too many paths"},
        {"--tag 1 --tag 2 --tag 3 --tag 4 --tag 5", "--tag: at most 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        assert_int_equal(parse(bad[i].line, &o, &x, &p, NULL, &e), MT_EINVAL);
        if (!strstr(e.msg, bad[i].want)) fail_msg("'%s': got '%s', want '%s'", bad[i].line, e.msg, bad[i].want);
    }
    /* a refused value leaves the destination as it was */
    assert_int_equal(parse("--n 4", &o, &x, &p, NULL, &e), MT_OK);
    mt_flag_bind b = {&TABLE, &o};
    char *argv[] = {"cmd", "--n", "99"};
    assert_int_equal(mt_flags_parse(3, argv, 1, &b, 1, NULL, NULL, "test", NULL, &e), MT_EINVAL);
    assert_int_equal(o.n, 4);
}

static void help_and_separator(void **state) {
    (void)state;
    opts o;
    other x;
    posctx p;
    mt_flag_seen seen;
    assert_int_equal(parse("a --help --bogus", &o, &x, &p, &seen, NULL), MT_OK);
    assert_int_equal(seen.help, 1);
    assert_int_equal(parse("-- --n", &o, &x, &p, &seen, NULL), MT_OK); /* after --, a path */
    assert_int_equal(p.n, 1);
    assert_string_equal(p.args[0], "--n");
    assert_int_equal(parse("-", &o, &x, &p, &seen, NULL), MT_OK); /* "-" alone: stdin-style path */
    assert_int_equal(p.n, 1);
}

static void duplicate_names_are_a_bug(void **state) {
    (void)state;
    opts o;
    mt_flag_bind binds[2] = {{&TABLE, &o}, {&TABLE, &o}};
    char *argv[] = {"cmd"};
    mt_error e = {0};
    assert_int_equal(mt_flags_parse(1, argv, 1, binds, 2, NULL, NULL, "test", NULL, &e), MT_EINTERNAL);
    assert_non_null(strstr(e.msg, "--verbose"));
}

static char *print(void (*fn)(FILE *, const mt_flag_table *)) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, &TABLE);
    fclose(f);
    return buf;
}

static void printers(void **state) {
    (void)state;
    char *help = print(mt_flags_help);
    assert_non_null(strstr(help, "Test options:\n"));
    assert_non_null(strstr(help, "  --bw BW               a bandwidth\n"));
    free(help);
    char *man = print(mt_flags_man);
    assert_non_null(strstr(man, ".SS Test options\n"));
    assert_non_null(strstr(man, ".TP\n\\fB\\-\\-algo\\fR \\fIA\\fR\nan algorithm\n"));
    free(man);
    char *words = print(mt_flags_words);
    assert_non_null(strstr(words, " --verbose --n --big"));
    free(words);
    char *comp = print(mt_flags_complete_values);
    assert_non_null(strstr(comp, "--algo) COMPREPLY=($(compgen -W \"ring tree direct\" -- \"$cur\")); return ;;"));
    assert_non_null(strstr(comp, "--name) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;"));
    assert_null(strstr(comp, "--verbose)"));
    free(comp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_every_kind),
        cmocka_unit_test(refuses_bad_values),
        cmocka_unit_test(help_and_separator),
        cmocka_unit_test(duplicate_names_are_a_bug),
        cmocka_unit_test(printers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

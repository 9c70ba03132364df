/* Unit tests for util/jstream: the streaming JSON reader gives the events a jansson document
 * gives (plain, gzip, across 1 MiB chunks), types numbers as jansson does, refuses what jansson
 * refuses with the place named (line:column, byte, JSON path), stops when its handler says so,
 * reports progress, and builds jansson values back from events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "util/jstream.h"
#include "util/jtree.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

/* ---- a handler that writes what it sees --------------------------------------------------- */

typedef struct rec {
    char *log;
    size_t len, cap;
    int stop_at_key;   /* stop at the key "stop" (fills err) */
    mt_error *err;
} rec;

static void put(rec *r, const char *s) {
    size_t n = strlen(s);
    if (r->len + n + 2 > r->cap) {
        r->cap = (r->len + n + 2) * 2;
        r->log = realloc(r->log, r->cap);
        assert_non_null(r->log);
    }
    memcpy(r->log + r->len, s, n);
    r->len += n;
    r->log[r->len++] = ' ';
    r->log[r->len] = '\0';
}

static int r_value(void *c, const mt_jv *v) {
    char b[96];
    switch (v->type) {
    case MT_JV_NULL: put(c, "n"); break;
    case MT_JV_TRUE: put(c, "t"); break;
    case MT_JV_FALSE: put(c, "f"); break;
    case MT_JV_INT: snprintf(b, sizeof b, "i:%lld", (long long)v->i); put(c, b); break;
    case MT_JV_REAL: snprintf(b, sizeof b, "r:%.17g", v->d); put(c, b); break;
    case MT_JV_STRING: snprintf(b, sizeof b, "s:%.80s", v->s); put(c, b); break;
    }
    return 1;
}
static int r_start_map(void *c) { return put(c, "{"), 1; }
static int r_end_map(void *c) { return put(c, "}"), 1; }
static int r_start_array(void *c) { return put(c, "["), 1; }
static int r_end_array(void *c) { return put(c, "]"), 1; }
static int r_key(void *c, const char *k, size_t len) {
    rec *r = c;
    char b[96];
    snprintf(b, sizeof b, "k:%.*s", (int)len, k);
    put(r, b);
    if (r->stop_at_key && !strcmp(k, "stop")) {
        mt_fail(r->err, MT_EINVAL, "stopped by the handler");
        return 0;
    }
    return 1;
}
static const mt_jsax rec_sax = {r_value, r_start_map, r_key, r_end_map, r_start_array, r_end_array};

static const char *write_tmp(char *buf, size_t len, const char *body, size_t n, int gz) {
    snprintf(buf, len, "/tmp/mt_jstream_XXXXXX");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
    if (gz) {
        gzFile g = gzopen(buf, "wb");
        assert_non_null(g);
        assert_int_equal(gzwrite(g, body, (unsigned)n), (int)n);
        gzclose(g);
    } else {
        FILE *f = fopen(buf, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(body, 1, n, f), n);
        fclose(f);
    }
    return buf;
}

/* The events of file `p` read by streaming (dom 0) or through jansson (dom 1); status in *rc. */
static char *events_of(const char *p, int dom, mt_status *rc, mt_error *err) {
    rec r = {0};
    put(&r, "");
    mt_jstream_opts o = {.dom = dom};
    *rc = mt_jstream_file(p, &rec_sax, &r, &o, err);
    return r.log;
}

/* ---- the tests -------------------------------------------------------------------------- */

static const char *DOC = "{\"a\": 1, \"b\": [2.5, -0, \"x\\u00e9\\n\", true, false, null, {}], "
                         "\"c\": {\"d\": 123456789012345678, \"e\": 1234567890123456789, \"f\": 1e3, "
                         "\"g\": -9223372036854775808, \"h\": 1e-400}}";

static void same_events_as_jansson(void **state) {
    (void)state;
    char p[64];
    mt_error e;
    mt_status rc;
    for (int gz = 0; gz < 2; gz++) {
        write_tmp(p, sizeof p, DOC, strlen(DOC), gz);
        char *s = events_of(p, 0, &rc, &e), *d = events_of(p, 1, &rc, &e);
        assert_int_equal(rc, MT_OK);
        assert_string_equal(s, d);
        /* integers stay integers (fast path and strtoll), reals reals, 1e-400 underflows to 0 */
        assert_string_equal(s, " { k:a i:1 k:b [ r:2.5 i:0 s:x\xc3\xa9\n t f n { } ] k:c { k:d i:123456789012345678 "
                               "k:e i:1234567890123456789 k:f r:1000 k:g i:-9223372036854775808 k:h r:0 } } ");
        free(s);
        free(d);
        unlink(p);
    }
}

/* A document of about 2.4 MB crosses two 1 MiB chunk boundaries, tokens cut across them. */
static void across_chunks(void **state) {
    (void)state;
    size_t cap = 2600000, n = 0;
    char *doc = malloc(cap);
    n += (size_t)sprintf(doc, "{\"v\": [");
    for (int i = 0; n < cap - 64; i++) n += (size_t)sprintf(doc + n, "%s%d.25, \"s%d\"", i ? ", " : "", i, i);
    n += (size_t)sprintf(doc + n, "], \"end\": true}");
    char p[64];
    mt_error e;
    mt_status rc, rd;
    for (int gz = 0; gz < 2; gz++) {
        write_tmp(p, sizeof p, doc, n, gz);
        char *s = events_of(p, 0, &rc, &e), *d = events_of(p, 1, &rd, &e);
        assert_int_equal(rc, MT_OK);
        assert_int_equal(rd, MT_OK);
        assert_string_equal(s, d);
        assert_non_null(strstr(s, " k:end t } "));
        free(s);
        free(d);
        unlink(p);
    }
    free(doc);
}

/* Refusals: the message names file:line:column, the byte and the JSON path. */
static void refuses_with_place(void **state) {
    (void)state;
    static const struct { const char *doc, *want[3]; mt_status code; } cases[] = {
        {"{\"a\": [1, 2,\n {\"b\": tru", {":2:", "at byte ", "in a[2].b"}, MT_EFORMAT},
        {"{\"a\": [1, 2,\n {\"b\": 3}]", {"premature EOF", ":2:", "in a"}, MT_EFORMAT},
        {"{\"a\": [1, 2,\n {\"b\": 3}]}}", {"trailing garbage", ":2:", "(top level)"}, MT_EFORMAT},
        {"{\"a\": {\"n\": 9223372036854775808}}", {"too big integer", ":1:13: invalid JSON: too big integer at byte 12", "in a.n"}, MT_EFORMAT},
        {"{\"a\": {\"n\": -99999999999999999999}}", {"too big negative integer", "in a.n", ""}, MT_EFORMAT},
        {"[0, 1e400]", {"real number overflow", "in [1]", ""}, MT_EFORMAT},
        {"{\"s\": \"a\xff\"}", {"invalid bytes in UTF8", ":1:", "in s"}, MT_EFORMAT},
        {"", {"premature EOF", ":1:1:", "at byte 0"}, MT_EFORMAT},
    };
    char p[64];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        write_tmp(p, sizeof p, cases[c].doc, strlen(cases[c].doc), 0);
        mt_error e = {0};
        mt_status rc;
        free(events_of(p, 0, &rc, &e));
        if (rc != cases[c].code || !strstr(e.msg, cases[c].want[0]) || !strstr(e.msg, cases[c].want[1]) ||
            !strstr(e.msg, cases[c].want[2]))
            fprintf(stderr, "case %zu: %s\n", c, e.msg);
        assert_int_equal(rc, cases[c].code);
        assert_non_null(strstr(e.msg, p));
        for (int w = 0; w < 3; w++) assert_non_null(strstr(e.msg, cases[c].want[w]));
        assert_null(strchr(e.msg, '\n'));
        mt_error ed = {0}; /* jansson refuses it too */
        free(events_of(p, 1, &rc, &ed));
        assert_int_equal(rc, MT_EFORMAT);
        unlink(p);
    }
}

static void depth_limit(void **state) {
    (void)state;
    char p[64], *doc = malloc(2 * 2049 + 1);
    for (int depth = 2048; depth <= 2049; depth++) {
        memset(doc, '[', (size_t)depth);
        memset(doc + depth, ']', (size_t)depth);
        write_tmp(p, sizeof p, doc, 2 * (size_t)depth, 0);
        mt_error e = {0};
        mt_status rc;
        free(events_of(p, 0, &rc, &e));
        assert_int_equal(rc, depth == 2048 ? MT_OK : MT_EFORMAT);
        if (depth == 2049 && !strstr(e.msg, "nesting deeper than 2048 levels at byte 2049")) fprintf(stderr, "%s\n", e.msg);
        if (depth == 2049) assert_non_null(strstr(e.msg, "nesting deeper than 2048 levels at byte 2049"));
        unlink(p);
    }
    free(doc);
}

static void handler_stops(void **state) {
    (void)state;
    char p[64];
    const char *doc = "{\"a\": 1, \"stop\": 2, \"z\": 3}";
    write_tmp(p, sizeof p, doc, strlen(doc), 0);
    for (int dom = 0; dom < 2; dom++) {
        mt_error e = {0};
        rec r = {.stop_at_key = 1, .err = &e};
        put(&r, "");
        mt_jstream_opts o = {.dom = dom};
        assert_int_equal(mt_jstream_file(p, &rec_sax, &r, &o, &e), MT_EINVAL);
        assert_string_equal(e.msg, "stopped by the handler");
        assert_string_equal(r.log, " { k:a i:1 k:stop ");
        free(r.log);
    }
    unlink(p);
}

static void damaged_gzip_and_missing_file(void **state) {
    (void)state;
    char p[64];
    write_tmp(p, sizeof p, DOC, strlen(DOC), 1);
    FILE *f = fopen(p, "rb");
    char raw[512];
    size_t n = fread(raw, 1, sizeof raw, f);
    fclose(f);
    write_tmp(p, sizeof p, raw, n - 12, 0); /* the gzip without its last 12 bytes */
    mt_error e = {0};
    mt_status rc;
    free(events_of(p, 0, &rc, &e));
    assert_int_equal(rc, MT_EIO);
    assert_non_null(strstr(e.msg, "truncated gzip data"));
    unlink(p);
    free(events_of("/no/such/file.json", 0, &rc, &e));
    assert_int_equal(rc, MT_EIO);
    assert_non_null(strstr(e.msg, "/no/such/file.json: cannot open"));
}

static void progress_cb(void *ctx, int64_t done, int64_t total) {
    int64_t *seen = ctx;
    seen[0]++;
    seen[1] = done;
    seen[2] = total;
}

static void reports_progress(void **state) {
    (void)state;
    char p[64];
    write_tmp(p, sizeof p, DOC, strlen(DOC), 0);
    int64_t seen[3] = {0};
    rec r = {0};
    put(&r, "");
    mt_jstream_opts o = {.on_progress = progress_cb, .progress_ctx = seen};
    assert_int_equal(mt_jstream_file(p, &rec_sax, &r, &o, NULL), MT_OK);
    assert_int_equal(seen[0], 1); /* one chunk */
    assert_int_equal(seen[1], (int64_t)strlen(DOC));
    assert_int_equal(seen[2], (int64_t)strlen(DOC));
    free(r.log);
    unlink(p);
}

static void builds_values(void **state) {
    (void)state;
    json_t *doc = json_loads(DOC, 0, NULL);
    assert_non_null(doc);
    mt_jbuild b;
    mt_jbuild_init(&b);
    assert_true(mt_jstream_walk(doc, &mt_jbuild_sax, &b));
    assert_true(mt_jbuild_finished(&b));
    json_t *v = mt_jbuild_take(&b);
    assert_true(json_equal(v, doc));
    json_decref(v);
    /* the same builder again (its buffers kept): the same value */
    assert_true(mt_jstream_walk(doc, &mt_jbuild_sax, &b));
    v = mt_jbuild_take(&b);
    assert_true(json_equal(v, doc));
    json_decref(v);
    /* unfinished: nothing taken; mt_jbuild_free leaves nothing leaked */
    assert_true(mt_jbuild_sax.start_map(&b));
    assert_true(mt_jbuild_sax.key(&b, "k", 1));
    assert_false(mt_jbuild_finished(&b));
    assert_null(mt_jbuild_take(&b));
    mt_jbuild_free(&b);
    json_decref(doc);
}

/* ---- util/jtree.h: subtrees in a reused arena ------------------------------------------- */

/* t holds what j holds (no duplicate keys in j), read through the accessors. */
static void same_tree(const mt_jt *t, json_t *j) {
    assert_non_null(t);
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        assert_true(mt_jt_is_object(t));
        assert_int_equal(t->n, json_object_size(j));
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) same_tree(mt_jt_get(t, k), v);
        break;
    }
    case JSON_ARRAY:
        assert_int_equal(mt_jt_size(t), json_array_size(j));
        for (size_t i = 0; i < json_array_size(j); i++) same_tree(mt_jt_at(t, i), json_array_get(j, i));
        assert_null(mt_jt_at(t, json_array_size(j)));
        break;
    case JSON_STRING:
        assert_int_equal(t->len, json_string_length(j));
        assert_memory_equal(mt_jt_str(t), json_string_value(j), t->len + 1);
        break;
    case JSON_INTEGER: assert_true(mt_jt_is_int(t)); assert_int_equal(mt_jt_int(t), json_integer_value(j)); break;
    case JSON_REAL: assert_int_equal(t->type, MT_JT_REAL); assert_true(t->d == json_real_value(j)); break;
    case JSON_TRUE: assert_int_equal(t->type, MT_JT_TRUE); break;
    case JSON_FALSE: assert_int_equal(t->type, MT_JT_FALSE); break;
    case JSON_NULL: assert_int_equal(t->type, MT_JT_NULL); break;
    }
}

static void builds_trees(void **state) {
    (void)state;
    json_t *doc = json_loads(DOC, 0, NULL), *big = json_array();
    assert_non_null(doc);
    for (int i = 0; i < 20000; i++) json_array_append_new(big, json_sprintf("value %05d", i));
    mt_jtb b;
    mt_jtb_init(&b);
    for (int round = 0; round < 3; round++) {
        assert_true(mt_jstream_walk(doc, &mt_jtb_sax, &b));
        assert_true(mt_jtb_finished(&b));
        same_tree(mt_jtb_value(&b), doc);
        mt_jtb_reset(&b);
        assert_int_equal(mt_jtb_blocks(&b), 1); /* a small value reuses the one block */
        /* a value larger than a block: blocks added, then merged into one at the reset */
        assert_true(mt_jstream_walk(big, &mt_jtb_sax, &b));
        assert_true(mt_jtb_blocks(&b) > 1 || round > 0);
        const mt_jt *t = mt_jtb_value(&b);
        same_tree(t, big);
#ifdef __SANITIZE_ADDRESS__
        const void *was = mt_jt_at(t, 19999);
        mt_jtb_reset(&b);
        assert_true(__asan_address_is_poisoned(was)); /* a dropped tree is not readable */
#else
        mt_jtb_reset(&b);
#endif
        assert_int_equal(mt_jtb_blocks(&b), 1);
    }
    /* jansson's reading: the last of a duplicate key, a key cut at NUL, types kept apart */
    mt_jv one = {.type = MT_JV_INT, .i = 1, .d = 1}, two = {.type = MT_JV_REAL, .d = 2},
          s = {.type = MT_JV_STRING, .s = "a\0b", .len = 3};
    assert_true(mt_jtb_sax.start_map(&b) && mt_jtb_sax.key(&b, "k", 1) && mt_jtb_sax.value(&b, &one));
    assert_true(mt_jtb_sax.key(&b, "k\0x", 3) && mt_jtb_sax.value(&b, &two));
    assert_true(mt_jtb_sax.key(&b, "s", 1) && mt_jtb_sax.value(&b, &s));
    assert_false(mt_jtb_finished(&b));
    assert_null(mt_jtb_value(&b));
    assert_true(mt_jtb_sax.end_map(&b));
    const mt_jt *o = mt_jtb_value(&b);
    assert_int_equal(o->n, 3);
    assert_int_equal(mt_jt_get(o, "k")->type, MT_JT_REAL);
    assert_false(mt_jt_is_int(mt_jt_get(o, "k")));
    assert_int_equal(mt_jt_int(mt_jt_get(o, "s")), 0);
    assert_int_equal(mt_jt_get(o, "s")->len, 3);
    assert_null(mt_jt_get(o, "x"));
    assert_null(mt_jt_str(o));
    assert_int_equal(mt_jt_size(o), 0); /* an object is not an array */
    assert_null(mt_jt_get(mt_jt_get(o, "k"), "k"));
    mt_jtb_free(&b);
    json_decref(doc);
    json_decref(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_events_as_jansson), cmocka_unit_test(across_chunks),
        cmocka_unit_test(refuses_with_place),     cmocka_unit_test(depth_limit),
        cmocka_unit_test(handler_stops),          cmocka_unit_test(damaged_gzip_and_missing_file),
        cmocka_unit_test(reports_progress),       cmocka_unit_test(builds_values),
        cmocka_unit_test(builds_trees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for serve/: a web request's options become exactly the CLI's (serve/options.h: the
 * same configuration as the same flags parsed by run/flags.h, refusals in one line), and the
 * trace catalogue names traces only by listed ids and keeps uploads within their limit
 * (serve/catalog.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/flags.h"
#include "serve/catalog.h"
#include "serve/guard.h"
#include "serve/options.h"

static const char *const PATHS[] = {"some/trace"};

static mt_status parse(mt_serve_cmd cmd, const char *json, mt_serve_opts *o, mt_error *err) {
    json_t *j = json_loads(json, 0, NULL);
    assert_non_null(j);
    mt_status st = mt_serve_opts_parse(cmd, j, PATHS, 1, o, err);
    json_decref(j);
    return st;
}

/* {"gpus": 8, "tp": 2, "sp": true, "link-bw": "300GB/s", "slow-gpu": [...]} equals the argv. */
static void test_same_as_cli(void **state) {
    (void)state;
    mt_serve_opts o;
    mt_error err = {0};
    assert_int_equal(parse(MT_SERVE_SIMULATE, "{\"gpus\": 8, \"tp\": 2, \"sp\": true, \"recompute\": \"full\", "
                                              "\"link-bw\": \"300GB/s\", \"slow-gpu\": [\"1:2\", \"3:1.5\"], "
                                              "\"ecmp\": false, \"host-scale\": 0.5}", &o, &err), MT_OK);
    char *argv[] = {"simulate", "--gpus", "8", "--tp", "2", "--sp", "--recompute", "full", "--link-bw", "300GB/s",
                    "--slow-gpu", "1:2", "--slow-gpu", "3:1.5", "--host-scale", "0.5", "--", "some/trace"};
    int argc = (int)(sizeof argv / sizeof *argv);
    assert_int_equal(o.argv.n, argc);
    for (int k = 0; k < argc; k++) assert_string_equal(o.argv.w[k], argv[k]);
    mt_run_config rc;
    assert_int_equal(mt_run_config_init(&rc, &err), MT_OK);
    mt_flag_seen seen;
    assert_int_equal(mt_run_flags_parse(argc, argv, "simulate", &rc, NULL, 0, &seen, &err), MT_OK);
    assert_int_equal(o.job.rc.plan.gpus, 8);
    assert_int_equal(o.job.rc.plan.tp, rc.plan.tp);
    assert_int_equal(o.job.rc.plan.sp, 1);
    assert_int_equal(o.job.rc.plan.recompute, rc.plan.recompute);
    assert_true(o.job.rc.net.tp.link_bw_Bps == 300e9 && rc.net.tp.link_bw_Bps == 300e9);
    assert_true(o.job.rc.host_scale == 0.5);
    assert_int_equal(o.job.rc.n_paths, 1);
    assert_string_equal(o.job.rc.paths[0], "some/trace");
    mt_run_config_free(&rc);
    mt_serve_opts_free(&o);
}

/* compare's own options (the plan list) go to the compare configuration and are checked. */
static void test_compare(void **state) {
    (void)state;
    mt_serve_opts o;
    mt_error err = {0};
    assert_int_equal(parse(MT_SERVE_COMPARE, "{\"gpus\": 4, \"plans\": \"ddp=4,dp=2:pp=2\"}", &o, &err), MT_OK);
    assert_string_equal(o.job.cc.plans, "ddp=4,dp=2:pp=2");
    mt_serve_opts_free(&o);
    /* --plans is not a simulate option */
    assert_int_equal(parse(MT_SERVE_SIMULATE, "{\"plans\": \"ddp=4\"}", &o, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "unknown option 'plans' for simulate"));
    /* a sweep and a plan list together: compare's own check */
    assert_int_equal(parse(MT_SERVE_COMPARE, "{\"plans\": \"ddp=4\", \"sweep\": \"gpus=2:8\"}", &o, &err), MT_EINVAL);
}

static void expect_refused(const char *json, const char *want) {
    mt_serve_opts o;
    mt_error err = {0};
    assert_int_equal(parse(MT_SERVE_SIMULATE, json, &o, &err), MT_EINVAL);
    if (!strstr(err.msg, want)) fail_msg("%s: got '%s', want '%s'", json, err.msg, want);
    assert_null(strchr(err.msg, '\n'));
    mt_serve_opts_free(&o); /* safe after a failure */
}

static void test_refusals(void **state) {
    (void)state;
    expect_refused("{\"frobnicate\": 1}", "unknown option 'frobnicate'");
    expect_refused("{\"json\": true}", "unknown option 'json'");
    expect_refused("{\"timeline\": \"/tmp/x\"}", "unknown option 'timeline'");
    expect_refused("{\"help\": true}", "unknown option 'help'");
    expect_refused("{\"--gpus\": 8}", "without the leading --");
    expect_refused("{\"model\": \"m.json\"}", "names a file on the server");
    expect_refused("{\"scenario\": \"s.json\"}", "names a file on the server");
    expect_refused("{\"topology\": \"../net.json\"}", "is a file on the server");
    expect_refused("{\"gpus\": 0}", "--gpus needs an integer in 1..1048576 (got '0')");
    expect_refused("{\"gpus\": 2.5}", "--gpus needs an integer");
    expect_refused("{\"gpus\": [8]}", "takes one value, not a list");
    expect_refused("{\"gpus\": {\"n\": 8}}", "takes a string or a number");
    expect_refused("{\"sp\": 1}", "is a switch: true or false");
    expect_refused("{\"link-bw\": \"300\"}", "--link-bw");
    expect_refused("{\"ports\": 8}", "--ports");
    expect_refused("[1, 2]", "must be a JSON object");
}

/* The API lists no file-only option, and lists compare's own ones for compare only. */
static void test_options_json(void **state) {
    (void)state;
    json_t *sim = mt_serve_opts_json(MT_SERVE_SIMULATE), *cmp = mt_serve_opts_json(MT_SERVE_COMPARE);
    int has_gpus = 0, has_model = 0, has_plans = 0, has_topology = 0;
    size_t i;
    json_t *f;
    json_array_foreach(sim, i, f) {
        const char *n = json_string_value(json_object_get(f, "name"));
        has_gpus |= !strcmp(n, "gpus");
        has_model |= !strcmp(n, "model");
        has_plans |= !strcmp(n, "plans");
        has_topology |= !strcmp(n, "topology");
    }
    assert_true(has_gpus && has_topology && !has_model && !has_plans);
    assert_int_equal(json_array_size(cmp), json_array_size(sim) + MT_RUN_COMPARE_FLAGS.n);
    json_decref(sim);
    json_decref(cmp);
}

static int count_uploads(const char *dir) {
    int n = 0;
    char p[1100];
    for (int k = 1; k <= 8; k++) {
        struct stat st;
        snprintf(p, sizeof p, "%s/upload-%d", dir, k);
        n += stat(p, &st) == 0;
    }
    return n;
}

/* Ids only: "..", absolute paths and unlisted ids are refused; a bad or oversize upload leaves
 * nothing behind; the private folder goes with the catalogue. */
static void test_catalog(void **state) {
    (void)state;
    mt_catalog *c = NULL;
    mt_error err = {0};
    assert_int_equal(mt_catalog_new(NULL, NULL, 0, &c, &err), MT_OK);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", mt_catalog_dir(c));
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    mt_catalog_paths ps;
    assert_int_equal(mt_catalog_paths_of(c, "../etc", &ps, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "never by a path"));
    assert_int_equal(mt_catalog_paths_of(c, "/etc", &ps, &err), MT_EINVAL);
    assert_int_equal(mt_catalog_paths_of(c, "shipped/x", &ps, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "unknown trace"));
    /* over the limit: 10 bytes allowed, 11 written */
    mt_upload *u = NULL;
    assert_int_equal(mt_upload_begin(c, 10, &u, &err), MT_OK);
    assert_int_equal(mt_upload_write(u, "12345", 5, &err), MT_OK);
    assert_int_equal(mt_upload_write(u, "123456", 6, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "over the limit of 10 bytes"));
    assert_int_equal(count_uploads(dir), 1);
    mt_upload_abort(u);
    assert_int_equal(count_uploads(dir), 0);
    /* not a trace: refused by the readers, removed */
    assert_int_equal(mt_upload_begin(c, 1000, &u, &err), MT_OK);
    assert_int_equal(mt_upload_write(u, "{\"a\": 1}", 8, &err), MT_OK);
    json_t *entry = NULL;
    assert_int_not_equal(mt_upload_finish(u, "junk", &entry, &err), MT_OK);
    assert_non_null(strstr(err.msg, "upload: "));
    assert_int_equal(count_uploads(dir), 0);
    json_t *list = mt_catalog_list_json(c);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);
    mt_catalog_free(c);
    assert_int_not_equal(stat(dir, &st), 0);
}

/* The server's paths are replaced by catalogue ids in every text: the --traces folder (given with
 * a trailing slash) by dirK, the private folder's uploads by upload/N and its runs by their names;
 * a JSON tree's strings at any depth; a file rewritten, bytes after a NUL kept. */
static void test_redact(void **state) {
    (void)state;
    char base[] = "/tmp/mt-redact-XXXXXX";
    assert_non_null(mkdtemp(base));
    char traces[300], slash[310];
    snprintf(traces, sizeof traces, "%s/traces", base);
    snprintf(slash, sizeof slash, "%s/", traces);
    assert_int_equal(mkdir(traces, 0700), 0);
    const char *dirs[] = {slash};
    mt_catalog *c = NULL;
    mt_error err = {0};
    assert_int_equal(mt_catalog_new(NULL, dirs, 1, &c, &err), MT_OK);
    char msg[1024];
    snprintf(msg, sizeof msg, "a: %s/gpt/kineto.json; b: %s/upload-3/file-0; c: %s/run-2/report.html", traces,
             mt_catalog_dir(c), mt_catalog_dir(c));
    mt_catalog_redact(c, msg, sizeof msg);
    assert_string_equal(msg, "a: dir1/gpt/kineto.json; b: upload/3/file-0; c: run-2/report.html");
    char text[1400];
    snprintf(text, sizeof text, "{\"trace\": \"%s/x\", \"rows\": [{\"reason\": \"%s/y has 4\"}], \"n\": 1}", traces, traces);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    mt_catalog_redact_json(c, j);
    assert_string_equal(json_string_value(json_object_get(j, "trace")), "dir1/x");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "rows"), 0), "reason")),
                        "dir1/y has 4");
    assert_int_equal(json_integer_value(json_object_get(j, "n")), 1);
    json_decref(j);
    char file[320];
    snprintf(file, sizeof file, "%s/f.html", base);
    FILE *f = fopen(file, "wb");
    assert_non_null(f);
    fprintf(f, "<td>%s/gpt</td>", traces);
    fputc(0, f);
    fprintf(f, "tail");
    fclose(f);
    assert_int_equal(mt_catalog_redact_file(c, file, &err), MT_OK);
    char got[64] = {0};
    f = fopen(file, "rb");
    size_t n = fread(got, 1, sizeof got, f);
    fclose(f);
    assert_int_equal(n, strlen("<td>dir1/gpt</td>") + 1 + 4);
    assert_memory_equal(got, "<td>dir1/gpt</td>\0tail", n);
    mt_catalog_free(c);
    remove(file);
    rmdir(traces);
    rmdir(base);
}

/* The web API's floor on bandwidths, for every bandwidth option, in one line naming it. */
static void test_web_floor(void **state) {
    (void)state;
    mt_serve_opts o;
    mt_error err = {0};
    assert_int_equal(parse(MT_SERVE_SIMULATE, "{\"link-bw\": \"1e-9GB/s\"}", &o, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--link-bw 1e-9GB/s is under the web page's floor of 1MB/s"));
    assert_int_equal(parse(MT_SERVE_COMPARE, "{\"nic-bw\": \"999kB/s\"}", &o, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--nic-bw 999kB/s"));
    assert_int_equal(parse(MT_SERVE_SIMULATE, "{\"topology\": \"dgx-h100\", \"link-bw\": \"1MB/s\", \"nic-bw\": \"8Mbps\"}", &o, &err), MT_OK);
    mt_serve_opts_free(&o);
}

/* Who may drive the server (serve/guard.h): Host names it, changes come from its own origin, JSON
 * is sent as JSON, an upload carries the token. */
static void test_guard(void **state) {
    (void)state;
    mt_guard g, any;
    mt_error err = {0};
    assert_int_equal(mt_guard_init(&g, "127.0.0.1", 8080, &err), MT_OK);
    assert_int_equal(mt_guard_init(&any, "0.0.0.0", 80, &err), MT_OK);
    assert_int_equal((int)strlen(g.token), MT_GUARD_TOKEN_LEN);
    assert_string_not_equal(g.token, any.token);
    assert_int_equal((int)strlen(MT_GUARD_TOKEN_PLACEHOLDER), MT_GUARD_TOKEN_LEN);
    static const char *const OK[] = {"127.0.0.1:8080", "localhost:8080", "LocalHost:8080", "127.9.9.9:8080",
                                     "[::1]:8080"};
    static const char *const BAD[] = {"evil.example:8080", "evil.example", "127.0.0.1", "127.0.0.1:8081",
                                      "localhost.:8080", "10.0.0.1:8080", "[::2]:8080", "::1:8080",
                                      "127.0.0.1:8080x", "127.0.0.1:+8080", "[::1", "", ":8080", "127.1:8080"};
    for (size_t k = 0; k < sizeof OK / sizeof *OK; k++) assert_true(mt_guard_host_ok(&g, OK[k]));
    for (size_t k = 0; k < sizeof BAD / sizeof *BAD; k++) assert_false(mt_guard_host_ok(&g, BAD[k]));
    assert_true(mt_guard_host_ok(&any, "10.0.0.1") && mt_guard_host_ok(&any, "[fe80::1]:80"));
    assert_false(mt_guard_host_ok(&any, "mybox") || mt_guard_host_ok(&any, "10.0.0.1:8080"));
    char msg[MT_GUARD_MSG_MAX];
    const char *host = "127.0.0.1:8080";
    mt_guard_req get = {"GET", MT_GUARD_NO_BODY, host, "http://evil.example", NULL, "cross-site", NULL, NULL};
    assert_int_equal(mt_guard_check(&g, &get, msg, sizeof msg), 0); /* a read changes nothing */
    get.host = "evil.example";
    assert_int_equal(mt_guard_check(&g, &get, msg, sizeof msg), 421);
    assert_non_null(strstr(msg, "open http://127.0.0.1:8080/"));
    get.host = NULL;
    assert_int_equal(mt_guard_check(&g, &get, msg, sizeof msg), 400);
    mt_guard_req post = {"POST", MT_GUARD_JSON, host, NULL, NULL, NULL, "application/json; charset=utf-8", NULL};
    assert_int_equal(mt_guard_check(&g, &post, msg, sizeof msg), 0);
    post.content_type = "text/plain";
    assert_int_equal(mt_guard_check(&g, &post, msg, sizeof msg), 415);
    post.content_type = "application/jsonx";
    assert_int_equal(mt_guard_check(&g, &post, msg, sizeof msg), 415);
    post.content_type = "application/json";
    post.origin = "http://localhost:8080";
    assert_int_equal(mt_guard_check(&g, &post, msg, sizeof msg), 0);
    static const char *const FOREIGN[] = {"http://evil.example", "null", "https://127.0.0.1:8080",
                                          "http://127.0.0.1:8080/x", "http://127.0.0.1:9999"};
    for (size_t k = 0; k < sizeof FOREIGN / sizeof *FOREIGN; k++) {
        post.origin = FOREIGN[k];
        assert_int_equal(mt_guard_check(&g, &post, msg, sizeof msg), 403);
    }
    post.origin = NULL;
    post.fetch_site = "same-site";
    assert_int_equal(mt_guard_check(&g, &post, msg, sizeof msg), 403);
    post.fetch_site = "same-origin";
    post.referer = "http://evil.example/";
    assert_int_equal(mt_guard_check(&g, &post, msg, sizeof msg), 403);
    post.referer = "http://localhost:8080/?x#y";
    assert_int_equal(mt_guard_check(&g, &post, msg, sizeof msg), 0);
    mt_guard_req up = {"POST", MT_GUARD_UPLOAD, host, NULL, NULL, NULL, "multipart/form-data; boundary=x", NULL};
    assert_int_equal(mt_guard_check(&g, &up, msg, sizeof msg), 403);
    up.token = any.token;
    assert_int_equal(mt_guard_check(&g, &up, msg, sizeof msg), 403);
    up.token = g.token;
    assert_int_equal(mt_guard_check(&g, &up, msg, sizeof msg), 0);
    up.token = NULL;
    up.origin = "http://[::1]:8080";
    assert_int_equal(mt_guard_check(&g, &up, msg, sizeof msg), 0);
    mt_guard_req del = {"DELETE", MT_GUARD_NO_BODY, host, "http://evil.example", NULL, NULL, NULL, NULL};
    assert_int_equal(mt_guard_check(&g, &del, msg, sizeof msg), 403);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_as_cli),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_options_json),
        cmocka_unit_test(test_catalog),
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_web_floor),
        cmocka_unit_test(test_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for the trace readers and linker on small hand-written fixtures
 * (tests/fixtures/small: a Kineto + ET 1.0.1 pair whose numbers are worked out by hand;
 * small-chakra-et.json: the same ET in the chakra layout; triosim/: a TrioSim CSV pair).
 *
 * Hand computation for the small pair (step ProfilerStep#5):
 *   ops: aten::linear (kernel 100 us), aten::relu (20 us), AddmmBackward0 evaluate_function
 *   (two overlapping kernels [210,310) and [250,350): union 140 us), AccumulateGrad (no kernel),
 *   aten::_foreach_add_ (memset 10 us) -> device total 270 us.
 *   parameters: weight [16,8] + bias [16] updated by _foreach_add_ and read by linear = 144.
 *   batch: first input of the linear, [4,8] -> 4.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <zlib.h>

#include "tracer/trace.h"

static char fixture_buf[4][1024];

static const char *fixture(int slot, const char *rel) {
    const char *root = getenv("MT_FIXTURES");
    snprintf(fixture_buf[slot], sizeof fixture_buf[slot], "%s/%s", root ? root : "tests/fixtures", rel);
    return fixture_buf[slot];
}

static mt_trace *load1(const char *a, const char *b, int step, mt_status want, mt_error *err) {
    const char *paths[2] = {a, b};
    trace_load_opts o;
    mt_trace_load_opts_init(&o);
    o.step = step;
    mt_trace *t = NULL;
    mt_error e = {0};
    mt_status rc = mt_trace_load(paths, b ? 2 : 1, &o, &t, &e);
    if (rc != want) fprintf(stderr, "load: %s\n", e.msg);
    assert_int_equal(rc, want);
    if (err) *err = e;
    return t;
}

static const trace_op *find_op(const mt_trace *t, const char *name) {
    for (int32_t i = 0; i < t->n_ops; i++)
        if (strstr(t->ops[i].name, name)) return &t->ops[i];
    return NULL;
}

static void check_small(const mt_trace *t) {
    assert_int_equal(t->step, 5);
    assert_int_equal(t->n_ops, 5);
    assert_string_equal(t->device_name, "Test GPU 80GB");
    assert_int_equal(t->batch_size, 4);
    assert_int_equal(t->param_count, 144);
    assert_true(t->param_bytes == 576.0);
    assert_int_equal(mt_trace_total_dev_ns(t), 270000);
    assert_int_equal(t->dev_union_ns, 270000);
    assert_int_equal(t->n_kernels, 5);
    const trace_op *lin = find_op(t, "aten::linear");
    assert_non_null(lin);
    assert_int_equal(lin->phase, TRACE_PHASE_FORWARD);
    assert_int_equal(lin->dev_ns, 100000); /* kernel launched by the nested aten::addmm */
    assert_int_equal(lin->in_count, 3);
    const trace_op *bw = find_op(t, "AddmmBackward0");
    assert_non_null(bw);
    assert_int_equal(bw->phase, TRACE_PHASE_BACKWARD);
    assert_int_equal(bw->dev_ns, 140000); /* union of overlapping kernels */
    assert_int_equal(bw->layer, lin->layer); /* same sequence number */
    const trace_op *opt = find_op(t, "_foreach_add_");
    assert_non_null(opt);
    assert_int_equal(opt->phase, TRACE_PHASE_OPTIMIZER);
    assert_int_equal(t->phase_ns[TRACE_PHASE_FORWARD], 120000);
    assert_int_equal(t->phase_ns[TRACE_PHASE_BACKWARD], 140000);
    assert_int_equal(t->phase_ns[TRACE_PHASE_OPTIMIZER], 10000);
    assert_int_equal(t->n_layers, 1);
    assert_true(t->grad_bytes == 512.0); /* AccumulateGrad input [16,8] */
}

static void pair_external_id(void **state) {
    (void)state;
    mt_trace *t = load1(fixture(0, "small"), NULL, -1, MT_OK, NULL);
    assert_int_equal(t->format, TRACE_FORMAT_KINETO_ET);
    assert_int_equal(t->link.method, TRACE_LINK_EXTERNAL);
    assert_int_equal(t->link.matched, 8);
    assert_int_equal(t->link.unmatched, 2);
    check_small(t);
    mt_trace_free(t);
}

static void chakra_layout(void **state) {
    (void)state;
    mt_trace *t = load1(fixture(0, "small/kineto.json"), fixture(1, "small-chakra-et.json"), -1,
                     MT_OK, NULL);
    assert_int_equal(t->link.method, TRACE_LINK_EXTERNAL);
    check_small(t);
    mt_trace_free(t);
}

/* Writes `root` (or raw text) to a temp file; returns its path in buf. */
static const char *write_tmp(char *buf, size_t len, json_t *root, const char *text, int gz) {
    snprintf(buf, len, "/tmp/mt_test_XXXXXX");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
    char *s = root ? json_dumps(root, 0) : NULL;
    const char *body = s ? s : text;
    if (gz) {
        gzFile g = gzopen(buf, "wb");
        assert_non_null(g);
        gzwrite(g, body, (unsigned)strlen(body));
        gzclose(g);
    } else {
        FILE *f = fopen(buf, "w");
        assert_non_null(f);
        fputs(body, f);
        fclose(f);
    }
    free(s);
    return buf;
}

static json_t *load_json(const char *path) {
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    assert_non_null(j);
    return j;
}

static void order_linking(void **state) {
    (void)state;
    json_t *et = load_json(fixture(0, "small/et.json"));
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(et, "nodes"), i, n) {
        json_int_t rf = json_integer_value(json_object_get(n, "rf_id"));
        if (rf > 0) json_object_set_new(n, "rf_id", json_integer(rf + 1000));
    }
    char p[64];
    write_tmp(p, sizeof p, et, NULL, 0);
    mt_trace *t = load1(fixture(1, "small/kineto.json"), p, -1, MT_OK, NULL);
    assert_int_equal(t->link.method, TRACE_LINK_ORDER);
    assert_int_equal(t->link.matched, 8);
    check_small(t);
    mt_trace_free(t);
    unlink(p);
    json_decref(et);
}

static void mismatched_pair_refused(void **state) {
    (void)state;
    json_t *et = load_json(fixture(0, "small/et.json"));
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(et, "nodes"), i, n) {
        if (json_integer_value(json_object_get(n, "rf_id")) > 0)
            json_object_set_new(n, "name", json_sprintf("other::op_%zu", i));
    }
    char p[64];
    write_tmp(p, sizeof p, et, NULL, 0);
    mt_error e;
    mt_trace *t = load1(fixture(1, "small/kineto.json"), p, -1, MT_EFORMAT, &e);
    assert_null(t);
    assert_non_null(strstr(e.msg, "do not describe the same run"));
    assert_non_null(strstr(e.msg, p));
    unlink(p);
    json_decref(et);
}

static void kineto_only_and_steps(void **state) {
    (void)state;
    mt_trace *t = load1(fixture(0, "small/kineto.json"), NULL, -1, MT_OK, NULL);
    assert_int_equal(t->format, TRACE_FORMAT_KINETO);
    assert_int_equal(t->step, 6); /* no ET: the last step */
    assert_int_equal(t->n_steps, 2);
    assert_int_equal(t->n_ops, 1);
    assert_int_equal(t->ops[0].dev_ns, 7000);
    mt_trace_free(t);
    t = load1(fixture(0, "small/kineto.json"), NULL, 5, MT_OK, NULL);
    assert_int_equal(t->n_ops, 5);
    assert_int_equal(mt_trace_total_dev_ns(t), 270000);
    assert_int_equal(t->batch_size, 4); /* from Input Dims */
    mt_trace_free(t);
    mt_error e;
    t = load1(fixture(0, "small/kineto.json"), NULL, 9, MT_EINVAL, &e);
    assert_non_null(strstr(e.msg, "no step 9"));
}

static void gzip_and_bare_array(void **state) {
    (void)state;
    json_t *k = load_json(fixture(0, "small/kineto.json"));
    char p[64], q[64];
    write_tmp(p, sizeof p, k, NULL, 1);
    mt_trace *t = load1(p, fixture(1, "small/et.json"), -1, MT_OK, NULL);
    check_small(t);
    mt_trace_free(t);
    write_tmp(q, sizeof q, json_object_get(k, "traceEvents"), NULL, 0);
    t = load1(q, NULL, 5, MT_OK, NULL);
    assert_int_equal(t->n_ops, 5);
    assert_null(t->device_name); /* the bare form has no deviceProperties */
    mt_trace_free(t);
    unlink(p);
    unlink(q);
    json_decref(k);
}

static void bad_inputs(void **state) {
    (void)state;
    mt_error e;
    load1("/nonexistent/trace.json", NULL, -1, MT_EIO, &e);
    assert_non_null(strstr(e.msg, "/nonexistent/trace.json"));

    char p[64];
    write_tmp(p, sizeof p, NULL, "{\"traceEvents\": [\n {\"ph\": \"X\",,}]}", 0);
    load1(p, NULL, -1, MT_EFORMAT, &e);
    assert_non_null(strstr(e.msg, ":2:")); /* line:column of the break */
    assert_non_null(strstr(e.msg, "invalid JSON"));
    unlink(p);

    write_tmp(p, sizeof p, NULL, "\x1f\x8b\x08\x00garbage-not-deflate", 0);
    load1(p, NULL, -1, MT_EIO, &e);
    assert_non_null(strstr(e.msg, "gzip"));
    unlink(p);

    write_tmp(p, sizeof p, NULL,
              "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", "
              "\"ts\": \"soon\", \"dur\": 3}]}", 0);
    load1(p, NULL, -1, MT_EFORMAT, &e);
    assert_non_null(strstr(e.msg, "traceEvents[0]"));
    unlink(p);

    write_tmp(p, sizeof p, NULL,
              "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
              "\"ProfilerStep#1\", \"ts\": 10, \"dur\": 3, \"tid\": 1}]}", 0);
    load1(p, NULL, -1, MT_EFORMAT, &e);
    assert_non_null(strstr(e.msg, "empty step"));
    unlink(p);

    write_tmp(p, sizeof p, NULL, "{\"hello\": 1}", 0);
    load1(p, NULL, -1, MT_EFORMAT, &e);
    assert_non_null(strstr(e.msg, "neither"));
    unlink(p);

    write_tmp(p, sizeof p, NULL, "{\"schema\": \"1.0.1\", \"nodes\": [{\"id\": \"x\"}]}", 0);
    load1(p, NULL, -1, MT_EFORMAT, &e);
    assert_non_null(strstr(e.msg, "nodes[0]"));
    unlink(p);

    load1(fixture(0, "triosim/trace.csv"), NULL, -1, MT_EINVAL, &e);
    assert_non_null(strstr(e.msg, "tensor.csv"));
}

/* Loads the small pair with one value of one file replaced (kineto when `in_kineto`, else the
 * ET) and expects a format error whose message holds `want1` and `want2`. */
static void refused(int in_kineto, const char *arr, size_t idx, const char *key, json_t *val,
                    const char *want1, const char *want2) {
    json_t *doc = load_json(fixture(0, in_kineto ? "small/kineto.json" : "small/et.json"));
    json_t *o = json_array_get(json_object_get(doc, arr), idx);
    if (!strcmp(key, "Input Dims")) o = json_object_get(o, "args");
    json_object_set_new(o, key, val);
    char p[64];
    write_tmp(p, sizeof p, doc, NULL, 0);
    mt_error e;
    mt_trace *t = load1(in_kineto ? p : fixture(1, "small/kineto.json"), in_kineto ? fixture(1, "small/et.json") : p,
                     -1, MT_EFORMAT, &e);
    assert_null(t);
    if (!strstr(e.msg, want1) || !strstr(e.msg, want2)) fprintf(stderr, "message: %s\n", e.msg);
    assert_non_null(strstr(e.msg, want1));
    assert_non_null(strstr(e.msg, want2));
    unlink(p);
    json_decref(doc);
}

/* Damaged numbers are refused with their place, not carried into int64 times and sizes (a
 * negative element count gave negative parameter bytes; a huge ts overflowed). */
static void out_of_range_values(void **state) {
    (void)state;
    refused(1, "traceEvents", 1, "ts", json_real(1e300), "traceEvents[1].ts", "11 days");
    refused(1, "traceEvents", 1, "dur", json_real(1e20), "traceEvents[1].dur", "11 days");
    refused(1, "traceEvents", 1, "Input Dims", json_pack("[[i, i]]", 4, -8), "traceEvents[1].args.Input Dims[0][1]",
            "-8");
    refused(0, "nodes", 3, "inputs", json_pack("[[i,i,i,i,i,s], [i,i,i,i,i,s]]", 10, 11, 0, 32, 4, "cuda:0", 12, 13,
                                               0, -128, 4, "cuda:0"), "nodes[3] (id 4, aten::linear)",
            "inputs[1]: tensor with -128 elements");
    refused(0, "nodes", 3, "input_shapes", json_pack("[[i, i]]", 4, -8), "nodes[3]", "shape dimension 1 is -8");

    /* a real beyond int64 where an integer is expected is taken as absent (its conversion was
     * undefined: INT64_MIN on x86) */
    json_t *k = load_json(fixture(0, "small/kineto.json"));
    json_t *props = json_array_get(json_object_get(k, "deviceProperties"), 0);
    json_object_set_new(props, "totalGlobalMem", json_real(1e300));
    char kp[64];
    write_tmp(kp, sizeof kp, k, NULL, 0);
    mt_trace *t = load1(kp, fixture(1, "small/et.json"), -1, MT_OK, NULL);
    assert_int_equal(t->device_mem_bytes, 0);
    mt_trace_free(t);
    unlink(kp);
    json_decref(k);

    /* TrioSim: a NaN time (was read as INT64_MIN ns) and a negative element count */
    static const char *const cases[][3] = {
        {"1,aten::linear,[10; 12; 14],[16],100,90,", "1,aten::linear,[10; 12; 14],[16],100,nan,",
         "trace.csv:2: Operator_cudatimenooverlap"},
        {"1,12,\"[16, 8]\",128,", "1,12,\"[16, 8]\",-128,", "tensor.csv:3: TensorNumElement '-128'"},
        {"1,12,\"[16, 8]\",128,", "1,12,\"[16, -8]\",128,", "tensor.csv:3: bad TensorShape"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char tr[64], te[64], *text[2];
        for (int f = 0; f < 2; f++) {
            FILE *in = fopen(fixture(0, f ? "triosim/tensor.csv" : "triosim/trace.csv"), "r");
            assert_non_null(in);
            text[f] = calloc(1, 4096);
            assert_true(fread(text[f], 1, 4095, in) > 0);
            fclose(in);
        }
        int f = strstr(cases[c][2], "tensor.csv") != NULL;
        char *at = strstr(text[f], cases[c][0]), out[4200];
        assert_non_null(at);
        snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text[f]), text[f], cases[c][1], at + strlen(cases[c][0]));
        write_tmp(tr, sizeof tr, NULL, f ? text[0] : out, 0);
        write_tmp(te, sizeof te, NULL, f ? out : text[1], 0);
        mt_error e;
        assert_null(load1(tr, te, -1, MT_EFORMAT, &e));
        assert_non_null(strstr(e.msg, f ? te : tr));
        assert_non_null(strstr(e.msg, strchr(cases[c][2], ':')));
        unlink(tr);
        unlink(te);
        free(text[0]);
        free(text[1]);
    }
}

static void triosim_csv(void **state) {
    (void)state;
    mt_trace *t = load1(fixture(0, "triosim"), NULL, -1, MT_OK, NULL);
    assert_int_equal(t->format, TRACE_FORMAT_TRIOSIM_CSV);
    assert_int_equal(t->n_ops, 4);
    /* Operator_cudatimenooverlap, as TrioSim: 90 + 20 + 120 + 10 us (Operator_cudatime: 270) */
    assert_int_equal(mt_trace_total_dev_ns(t), 240000);
    assert_null(t->warning);
    assert_int_equal(t->param_count, 144); /* _foreach_add_ list split by its size period */
    assert_int_equal(t->batch_size, 4);
    assert_int_equal(t->ops[2].phase, TRACE_PHASE_BACKWARD);
    assert_int_equal(t->ops[2].layer, t->ops[0].layer); /* shares the weight */
    mt_trace_free(t);
}

/* The text of fixture triosim/NAME (at most 4 KiB), to be freed. */
static char *triosim_text(const char *name) {
    char rel[64];
    snprintf(rel, sizeof rel, "triosim/%s", name);
    FILE *in = fopen(fixture(3, rel), "r");
    assert_non_null(in);
    char *text = calloc(1, 4096);
    assert_true(fread(text, 1, 4095, in) > 0);
    fclose(in);
    return text;
}

/* Loads a TrioSim pair from two texts; returns the trace (NULL on failure, message in e). */
static mt_trace *load_triosim(const char *trace_text, const char *tensor_text, char tr[64], char te[64], mt_error *e) {
    write_tmp(tr, 64, NULL, trace_text, 0);
    write_tmp(te, 64, NULL, tensor_text, 0);
    const char *paths[2] = {tr, te};
    mt_trace *t = NULL;
    memset(e, 0, sizeof *e);
    mt_trace_load(paths, 2, NULL, &t, e);
    return t;
}

/* TrioSim lists AddmmBackward0 with w.t(), a view of the weight under another tensor id: it is
 * still the linear's autograd node (fwd_op, layer) and its work comes from the linear. Before:
 * layer -1, so in DDP its gradient waited for the end of backward. */
static void triosim_backward_by_weight_storage(void **state) {
    (void)state;
    char *tr_text = triosim_text("trace.csv"), *te_text = triosim_text("tensor.csv"), tr[64], te[64];
    char *a = strstr(tr_text, "[20; 12]"), *b = strstr(te_text, "7,12,\"[16, 8]\",128,4,input,13,0");
    assert_non_null(a);
    assert_non_null(b);
    memcpy(a, "[20; 30]", 8);                             /* the view: tensor 30, storage 13 */
    memcpy(b, "7,30,\"[8, 16]\",128,4,input,13,0", 31);
    mt_error e;
    mt_trace *t = load_triosim(tr_text, te_text, tr, te, &e);
    if (!t) fail_msg("load: %s", e.msg);
    assert_int_equal(t->ops[2].fwd_op, 0);
    assert_int_equal(t->ops[2].layer, t->ops[0].layer);
    assert_int_equal(t->param_count, 144);
    mt_trace_free(t);
    unlink(tr);
    unlink(te);
    free(tr_text);
    free(te_text);
}

/* Without Operator_cudatimenooverlap the reader takes Operator_cudatime and says so. */
static void triosim_cudatime_fallback(void **state) {
    (void)state;
    char *tr_text = triosim_text("trace.csv"), *te_text = triosim_text("tensor.csv"), tr[64], te[64];
    char *out = calloc(1, 4096), *o = out;
    for (const char *line = tr_text; *line;) { /* drop the sixth cell of every line */
        const char *end = strchr(line, '\n'), *c = line;
        if (!end) end = line + strlen(line);
        for (int k = 0; k < 5; k++) c = strchr(c, ',') + 1;
        const char *next = strchr(c, ',');
        o += sprintf(o, "%.*s%.*s\n", (int)(c - line), line, (int)(end - next - 1), next + 1);
        line = *end ? end + 1 : end;
    }
    mt_error e;
    mt_trace *t = load_triosim(out, te_text, tr, te, &e);
    if (!t) fail_msg("load: %s", e.msg);
    assert_int_equal(mt_trace_total_dev_ns(t), 270000);
    assert_non_null(t->warning);
    assert_non_null(strstr(t->warning, "no Operator_cudatimenooverlap column"));
    assert_non_null(strstr(t->warning, tr));
    mt_trace_free(t);
    unlink(tr);
    unlink(te);
    free(out);
    free(tr_text);
    free(te_text);
}

/* Either file cut at any byte after its header: an error naming a file and a line, or (cut at a
 * line break, so every row left is whole) a warning that the file may be cut. Before: the cut
 * pair loaded, with fewer operators and 0 parameters. */
static void triosim_cut_files(void **state) {
    (void)state;
    char *text[2] = {triosim_text("trace.csv"), triosim_text("tensor.csv")}, tr[64], te[64];
    int errors = 0, warnings = 0;
    for (int f = 0; f < 2; f++) {
        size_t len = strlen(text[f]), header = (size_t)(strchr(text[f], '\n') - text[f]) + 1;
        for (size_t cut = header + 1; cut + 1 < len; cut++) {
            char *part = strndup(text[f], cut);
            mt_error e;
            mt_trace *t = load_triosim(f ? text[0] : part, f ? part : text[1], tr, te, &e);
            if (t) {
                if (!t->warning || !strstr(t->warning, "cut short at a line break"))
                    fail_msg("%s cut at byte %zu loaded without a word", f ? "tensor.csv" : "trace.csv", cut);
                warnings++;
                mt_trace_free(t);
            } else {
                int line = 1;
                for (size_t i = 0; i < cut; i++) line += part[i] == '\n';
                char want[96];
                snprintf(want, sizeof want, "%s:%d:", f ? te : tr, line);
                /* a tensor.csv cut before a tensor's first row fails at the trace.csv line using it */
                if (!strstr(e.msg, want) && !(f && strstr(e.msg, tr) && strstr(e.msg, "is not in")))
                    fail_msg("cut at byte %zu: want '%s' in: %s", cut, want, e.msg);
                assert_int_equal(e.code, MT_EFORMAT);
                assert_null(strchr(e.msg, '\n'));
                errors++;
            }
            unlink(tr);
            unlink(te);
            free(part);
        }
    }
    assert_true(errors > 600 && warnings >= 4);
    free(text[0]);
    free(text[1]);
}

/* The small fixture's document with a member of `pad` bytes before its other members, and (for
 * the ET) "schema" moved after "nodes". */
static char *padded(const char *rel, size_t pad) {
    json_t *doc = load_json(fixture(2, rel));
    json_t *nodes = json_object_get(doc, "nodes");
    char *inner = json_dumps(nodes ? nodes : json_object_get(doc, "traceEvents"), 0);
    char *filler = malloc(pad + 1);
    memset(filler, 'x', pad);
    filler[pad] = '\0';
    size_t n = strlen(inner) + pad + 128;
    char *out = malloc(n);
    if (nodes)
        snprintf(out, n, "{\"nodes\": %s, \"pad\": \"%s\", \"schema\": \"1.0.1\"}", inner, filler);
    else
        snprintf(out, n, "{\"pad\": [\"%s\", {\"x\": \"]}\"}], \"traceEvents\": %s}", filler, inner);
    free(filler);
    free(inner);
    json_decref(doc);
    return out;
}

/* Formats are told from a prefix of each file; one whose telling member comes after the first
 * 64 KiB is read on until it tells (plain and gzipped). */
static void late_members_read_on(void **state) {
    (void)state;
    char *k = padded("small/kineto.json", 300000), *e = padded("small/et.json", 300000);
    for (int gz = 0; gz < 2; gz++) {
        char kp[64], ep[64];
        write_tmp(kp, sizeof kp, NULL, k, gz);
        write_tmp(ep, sizeof ep, NULL, e, gz);
        const char *paths[2] = {kp, ep};
        mt_trace *t = NULL;
        mt_error err = {0};
        mt_status rc = mt_trace_load(paths, 2, NULL, &t, &err);
        if (rc != MT_OK) fail_msg("load: %s", err.msg);
        assert_int_equal(t->format, TRACE_FORMAT_KINETO_ET);
        assert_int_equal(t->step, 5);
        assert_int_equal(t->n_ops, 5);
        mt_trace_free(t);
        unlink(kp);
        unlink(ep);
    }
    free(k);
    free(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pair_external_id),     cmocka_unit_test(chakra_layout),
        cmocka_unit_test(order_linking),        cmocka_unit_test(mismatched_pair_refused),
        cmocka_unit_test(kineto_only_and_steps), cmocka_unit_test(gzip_and_bare_array),
        cmocka_unit_test(bad_inputs),           cmocka_unit_test(triosim_csv),
        cmocka_unit_test(triosim_cudatime_fallback), cmocka_unit_test(triosim_cut_files),
        cmocka_unit_test(triosim_backward_by_weight_storage),
        cmocka_unit_test(out_of_range_values),  cmocka_unit_test(late_members_read_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

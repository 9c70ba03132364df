/* Unit tests for report/html on a hand-made run (2 GPUs, 2 layers, one stage program):
 *  - every section's id is there, nothing refers to http(s)://;
 *  - text from the trace, the summary and the rows is escaped (layer "enc<1>", a value with a
 *    <script> tag, a skipped plan's reason);
 *  - the timeline draws at most max_spans spans, the longest, and says how many it left out;
 *  - a recorder that kept only GPU 0, or a drawing filter of GPU 1, draws one row and the page
 *    says so;
 *  - host waits (host model) are a fifth per-GPU bar and a span of their own;
 *  - an unwritable path is MT_EIO naming the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/html.h"

typedef struct fixture {
    mt_trace t;
    trace_op ops[2];
    trace_layer layers[2];
    mt_item items[2];
    mt_task tasks[2];
    mt_stage_program stage;
    mt_program prog;
    mt_gpu_stats gpus[2];
    double layer_compute[2], layer_comm[2];
    mt_sim_result res;
    mt_recorder rec;
} fixture;

static void fixture_init(fixture *f) {
    memset(f, 0, sizeof *f);
    f->ops[0] = (trace_op){.name = "aten::linear", .phase = TRACE_PHASE_FORWARD, .layer = 0};
    f->ops[1] = (trace_op){.name = "aten::gelu", .phase = TRACE_PHASE_FORWARD, .layer = 1};
    f->layers[0].name = "enc<1>";
    f->layers[1].name = "b&c";
    f->t.ops = f->ops, f->t.n_ops = 2;
    f->t.layers = f->layers, f->t.n_layers = 2;
    f->items[0] = (mt_item){.op = 0, .layer = 0, .dur_ps = 1000000, .split = 1};
    f->items[1] = (mt_item){.op = 1, .layer = 1, .dur_ps = 1000000, .split = 1};
    f->tasks[0] = (mt_task){.kind = MT_TASK_COMPUTE, .phase = TRACE_PHASE_FORWARD, .mb = 0, .layer = -1,
                            .item_first = 0, .item_count = 2, .dur_ps = 2000000};
    f->tasks[1] = (mt_task){.kind = MT_TASK_COLL, .group = MT_GROUP_DP, .coll = MT_COLL_ALLREDUCE,
                            .phase = TRACE_PHASE_BACKWARD, .mb = -1, .layer = 1, .bytes = 4e6};
    f->stage = (mt_stage_program){.tasks = f->tasks, .n_tasks = 2, .items = f->items, .n_items = 2};
    mt_plan_init(&f->prog.plan);
    f->prog.plan.gpus = f->prog.plan.dp = 2;
    f->prog.plan.tp = f->prog.plan.pp = f->prog.plan.micro_batches = 1;
    mt_mesh mesh;
    mt_plan_mesh(&f->prog.plan, &mesh);
    mt_groups_init(&f->prog.groups, &mesh);
    f->prog.trace = &f->t;
    f->prog.n_stages = 1;
    f->prog.stages = &f->stage;
    f->prog.n_layers = 2;
    mt_time_ps step = 200 * (mt_time_ps)1000000; /* 200 us */
    for (int g = 0; g < 2; g++)
        f->gpus[g] = (mt_gpu_stats){.rank = g, .dp = g, .finish_ps = step, .compute_ps = 3 * step / 8,
                                    .exposed_ps = step / 8, .peer_wait_ps = step / 8, .waited_for = -1, .host_wait_ps = step / 8, .idle_ps = step / 4,
                                    .peak_mem_bytes = 1e9};
    f->layer_compute[0] = 3e6, f->layer_compute[1] = 1e6, f->layer_comm[1] = 2e6;
    f->res = (mt_sim_result){.step_ps = step, .n_gpus = 2, .gpus = f->gpus, .n_layers = 2,
                             .layer_compute_ps = f->layer_compute, .layer_comm_ps = f->layer_comm};
    mt_recorder_init(&f->rec);
    /* 100 spans on each GPU, lasting 1..100 ns, alternating compute and collective */
    for (int g = 0; g < 2; g++)
        for (int k = 1; k <= 100; k++)
            mt_recorder_span(&f->rec, g, k % 2 ? MT_SPAN_COMPUTE : MT_SPAN_COLL, &f->tasks[k % 2 ? 0 : 1],
                             (mt_time_ps)k * 1000000, (mt_time_ps)k * 1000000 + (mt_time_ps)k * 1000);
    mt_recorder_span(&f->rec, 0, MT_SPAN_HOST, &f->tasks[0], 150000000, 150000001); /* 1 ps */
}

static char *slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_int_equal(fread(s, 1, (size_t)n, fp), (size_t)n);
    s[n] = '\0';
    fclose(fp);
    return s;
}

static int count(const char *from, const char *to, const char *what) {
    int n = 0;
    for (const char *p = strstr(from, what); p && (!to || p < to); p = strstr(p + 1, what)) n++;
    return n;
}

/* The text of the timeline's span group. */
static const char *gantt_plot(const char *html, const char **end) {
    const char *a = strstr(html, "id=\"gantt-plot\"");
    assert_non_null(a);
    *end = strstr(a, "</g></g>");
    assert_non_null(*end);
    return a;
}

static void write_report(fixture *f, int64_t max_spans, const mt_span_filter *gpus, const char *path) {
    static const mt_html_kv kv[] = {{"note", "<script>alert(1)</script>"}};
    static const mt_html_row rows[] = {
        {.label = "ddp=2", .step_ms = 0.2, .speedup = 1.9, .samples_per_s = 100, .mem_bytes = 1e9},
        {.label = "tp=3", .skipped = "2 is not a multiple of <3>"},
    };
    mt_html_report r = {.title = "t & t", .summary = kv, .n_summary = 1, .rows_kind = MT_HTML_PLANS,
                        .rows = rows, .n_rows = 2, .detail_label = "ddp=2", .prog = &f->prog, .res = &f->res,
                        .rec = &f->rec, .gpus = gpus, .max_spans = max_spans};
    mt_error err = {0};
    assert_int_equal(mt_html_write(path, &r, &err), MT_OK);
}

/* The report of f as text (written to a scratch file, read back, deleted). */
static char *report_text(fixture *f, int64_t max_spans, const mt_span_filter *gpus) {
    const char *path = "test_html_scratch.html";
    write_report(f, max_spans, gpus, path);
    char *s = slurp(path);
    remove(path);
    return s;
}

static void test_sections_and_escaping(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    char *s = report_text(&f, 0, NULL);
    const char *ids[] = {"summary", "plans", "compare-chart", "gpu-bars", "layer-bars", "gantt", "gantt-plot"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "id=\"%s\"", ids[i]);
        assert_non_null(strstr(s, want));
    }
    assert_null(strstr(s, "http://"));
    assert_null(strstr(s, "https://"));
    assert_non_null(strstr(s, "enc&lt;1&gt;"));
    assert_null(strstr(s, "enc<1>"));
    assert_non_null(strstr(s, "b&amp;c"));
    assert_non_null(strstr(s, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_null(strstr(s, "<script>alert"));
    assert_non_null(strstr(s, "2 is not a multiple of &lt;3&gt;"));
    assert_non_null(strstr(s, "<title>t &amp; t</title>"));
    /* every span drawn: 201; seven bars per GPU (and the legend's seven: compute, stretch, ...) */
    const char *end, *g = gantt_plot(s, &end);
    assert_int_equal(count(g, end, "<rect"), 201);
    assert_null(strstr(s, "are not drawn"));
    const char *bars = strstr(s, "id=\"gpu-bars\""), *bars_end = strstr(bars, "</svg>");
    assert_int_equal(count(bars, bars_end, "<rect"), 2 * 7 + 7);
    assert_non_null(strstr(s, "GPU 1 (dp 1, stage 0, tp 0) exposed comm: 0.025 ms"));
    assert_non_null(strstr(s, "GPU 1 (dp 1, stage 0, tp 0) peer wait: 0.025 ms"));
    assert_non_null(strstr(s, "GPU 1 (dp 1, stage 0, tp 0) host wait: 0.025 ms"));
    assert_int_equal(count(g, end, "<rect class=\"host\""), 1);
    assert_non_null(strstr(s, "GPU 0 host launches aten::linear"));
    /* hover text of a compute span names its ops and layer, escaped */
    assert_non_null(strstr(s, "GPU 0 compute forward, 2 ops from aten::linear (enc&lt;1&gt;), micro-batch 0"));
    assert_non_null(strstr(s, "GPU 1 allreduce 4.00 MB (dp) for b&amp;c"));
    free(s);
    mt_recorder_destroy(&f.rec);
}

static void test_span_cap_keeps_the_longest(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    char *s = report_text(&f, 10, NULL);
    const char *end, *g = gantt_plot(s, &end);
    assert_int_equal(count(g, end, "<rect"), 10);
    /* the 10 longest of 201: 96..100 ns on both GPUs */
    assert_int_equal(count(g, end, "(0.000 ms)</title>"), 10); /* all < 1 us */
    assert_int_equal(count(g, end, "width=\"0.100000\""), 2);
    assert_int_equal(count(g, end, "width=\"0.096000\""), 2);
    assert_int_equal(count(g, end, "width=\"0.095000\""), 0);
    assert_non_null(strstr(s, "191 spans shorter than 0.096 us are not drawn"));
    free(s);
    mt_recorder_destroy(&f.rec);
}

static void test_kept_gpus_are_said(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    mt_recorder_destroy(&f.rec);
    mt_recorder_init(&f.rec);
    mt_error err = {0};
    assert_int_equal(mt_span_filter_ranks(&f.rec.filter, "0", 2, &err), MT_OK);
    for (int g = 0; g < 2; g++)
        mt_recorder_span(&f.rec, g, MT_SPAN_COMPUTE, &f.tasks[0], 0, 1000000);
    char *s = report_text(&f, 0, NULL);
    const char *end, *g = gantt_plot(s, &end);
    assert_int_equal(count(g, end, "<rect"), 1);
    assert_non_null(strstr(s, "Only 1 of the run's 2 GPUs are drawn (ranks 0 to 0)"));
    free(s);
    /* a recorder of every GPU drawn through a filter of GPU 1 */
    mt_recorder_destroy(&f.rec);
    mt_recorder_init(&f.rec);
    for (int r = 0; r < 2; r++)
        mt_recorder_span(&f.rec, r, MT_SPAN_COMPUTE, &f.tasks[0], 0, 1000000);
    mt_span_filter only1;
    mt_span_filter_init(&only1);
    assert_int_equal(mt_span_filter_ranks(&only1, "1", 2, &err), MT_OK);
    s = report_text(&f, 0, &only1);
    g = gantt_plot(s, &end);
    assert_int_equal(count(g, end, "<rect"), 1);
    assert_non_null(strstr(g, "GPU 1 compute"));
    assert_non_null(strstr(s, "Only 1 of the run's 2 GPUs are drawn (ranks 1 to 1)"));
    free(s);
    mt_span_filter_destroy(&only1);
    mt_recorder_destroy(&f.rec);
}

static void test_unwritable(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    mt_html_report r = {.title = "x", .prog = &f.prog, .res = &f.res};
    mt_error err = {0};
    assert_int_equal(mt_html_write("no/such/dir/r.html", &r, &err), MT_EIO);
    assert_non_null(strstr(err.msg, "no/such/dir/r.html"));
    mt_recorder_destroy(&f.rec);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sections_and_escaping),
        cmocka_unit_test(test_span_cap_keeps_the_longest),
        cmocka_unit_test(test_kept_gpus_are_said),
        cmocka_unit_test(test_unwritable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

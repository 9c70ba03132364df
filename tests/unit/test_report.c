/* Unit tests for report/ (record, describe, timeline, csvout) and the simulator's progress hook,
 * on a synthetic trace written as a TrioSim CSV pair in a temporary directory: 4 linear layers
 * (forward 100 us, backward 200 us), an optimizer op of 40 us, batch 8. Simulated on dp 2 x tp 2
 * x pp 2 (2 micro-batches) over switch:8, so every stream appears: compute, waits, TP and DP
 * collectives, pipeline sends. Checks:
 *  - the timeline parses with jansson, every event has ph, ts and pid, slices on one track never
 *    partially overlap, each GPU's compute slices add up to its compute_ps, each pipeline send has
 *    one flow arrow from its sender to its receiver, busy links have counters;
 *  - --timeline-gpus / --timeline-window: only the chosen GPUs, every slice inside the window,
 *    compute inside it equal to the clipped spans; filtering while recording gives the same file
 *    as filtering while writing;
 *  - a slowed GPU's operators still tile its compute spans exactly;
 *  - the CSV tables: compute + host wait + exposed + peer wait + bubble + idle = step, ops.csv compute rows add up to
 *    compute_ps, one collectives.csv row per instance with busbw = algbw x factor; an unwritable
 *    directory is MT_EIO naming it;
 *  - rank list and window parsing, the collective algorithm actually run, the progress hook;
 *  - a waits line names up to 6 ranges in full, more compactly: 2^20 GPUs' blocks of 8 every 64
 *    as their first two, last and pattern; an irregular list as its first 4 and a count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <csv.h>
#include <igraph.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "extrapolate/plan.h"
#include "extrapolate/program.h"
#include "netmodels/topologies.h"
#include "netmodels/flow.h"
#include "report/csvout.h"
#include "report/describe.h"
#include "report/record.h"
#include "report/timeline.h"
#include "report/verdict.h"
#include "report/waits.h"
#include "sim/engine.h"
#include "sim/simulate.h"
#include "tracer/trace.h"

#define LAYERS 4

typedef struct fixture {
    char dir[64];   /* temporary directory holding trace.csv, tensor.csv and the outputs */
    mt_trace *t;
} fixture;

/* The TrioSim pair: activations a_l (100+l), weights W_l (200+l), activation gradients (300+l),
 * weight gradients (400+l); the optimizer's InputSize marks its two tensor lists. */
static void write_trace(const char *dir) {
    char path[128];
    snprintf(path, sizeof path, "%s/trace.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "OperatorID,OperatorName,Operator_input,Operator_output,Operator_cudatime,"
               "Operator_cudatimenooverlap,InputSize,OutputSize,gpuid,stage,tpflag\n");
    int id = 1;
    for (int l = 0; l < LAYERS; l++)
        fprintf(f, "%d,aten::linear,[%d; %d],[%d],100,100,[512; 4096],[512],0,forward,0\n", id++, 100 + l, 200 + l,
                101 + l);
    for (int l = LAYERS - 1; l >= 0; l--)
        fprintf(f, "%d,autograd::engine::evaluate_function: AddmmBackward0,[%d; %d],[%d; %d],200,200,"
                   "[512; 4096],[512; 4096],0,backward,0\n", id++, 301 + l, 200 + l, 300 + l, 400 + l);
    fprintf(f, "%d,aten::_foreach_add_,[200; 201; 202; 203; 400; 401; 402; 403],[],40,40,"
               "[1; 2; 3; 4; 1; 2; 3; 4],[],0,optimizer,0\n", id);
    fclose(f);
    snprintf(path, sizeof path, "%s/tensor.csv", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "Index,TensorID,TensorShape,TensorNumElement,TensorEachByte,TensorType,TensorStorgeid,gpuid\n");
    int row = 0;
    for (int base = 100; base <= 400; base += 100) {
        int weightlike = base == 200 || base == 400;
        for (int l = 0; l < LAYERS + !weightlike; l++)
            fprintf(f, "%d,%d,\"%s\",%d,4,x,%d,0\n", row++, base + l, weightlike ? "[64, 64]" : "[8, 64]",
                    weightlike ? 4096 : 512, base + l + 1000);
    }
    fclose(f);
}

static int setup(void **state) {
    fixture *fx = calloc(1, sizeof *fx);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/mt_report_XXXXXX");
    if (!fx || !mkdtemp(fx->dir)) return -1;
    write_trace(fx->dir);
    const char *paths[1] = {fx->dir};
    trace_load_opts o;
    mt_trace_load_opts_init(&o);
    mt_error err = {0};
    if (mt_trace_load(paths, 1, &o, &fx->t, &err) != MT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state) {
    fixture *fx = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", fx->dir);
    mt_trace_free(fx->t);
    free(fx);
    return 0;
}

/* ---- one simulation with a recorder ------------------------------------------------------ */

typedef struct sim {
    mt_program *prog;
    mt_topo *topo;
    mt_engine *e;
    mt_flownet *flow;
    mt_netmodel net;
    mt_sim_result *res;
    mt_recorder rec;
} sim;

/* Simulates dp x tp x pp (2 micro-batches) on switch:N; the recorder keeps what rec_filter
 * says (NULL: everything). speed: per-rank compute speeds or NULL. */
static void sim_run(const fixture *fx, int32_t dp, int32_t tp, int32_t pp, const mt_span_filter *rec_filter,
                    const double *speed, mt_progress_fn progress, void *progress_ctx, sim *s) {
    memset(s, 0, sizeof *s);
    mt_error err = {0};
    mt_plan pl;
    mt_plan_init(&pl);
    pl.dp = dp;
    pl.tp = tp;
    pl.pp = pp;
    pl.gpus = dp * tp * pp;
    if (pp > 1) pl.micro_batches = 2;
    assert_int_equal(mt_plan_resolve(&pl, fx->t, &err), MT_OK);
    assert_int_equal(mt_program_build(fx->t, &pl, NULL, &s->prog, &err), MT_OK);
    char spec[32];
    snprintf(spec, sizeof spec, "switch:%d", pl.gpus);
    mt_topo_params tp_;
    mt_topo_params_init(&tp_);
    assert_int_equal(mt_topo_build(spec, &tp_, &s->topo, &err), MT_OK);
    s->e = mt_engine_new();
    assert_non_null(s->e);
    assert_int_equal(mt_flownet_new(s->topo, mt_engine_sched(s->e), &s->flow, &err), MT_OK);
    s->net = mt_flownet_netmodel(s->flow);
    mt_recorder_init(&s->rec);
    if (rec_filter) {
        s->rec.filter = *rec_filter;
        if (rec_filter->keep) { /* the recorder owns its copy */
            s->rec.filter.keep = malloc((size_t)rec_filter->n_keep);
            memcpy(s->rec.filter.keep, rec_filter->keep, (size_t)rec_filter->n_keep);
        }
    }
    assert_int_equal(mt_net_set_link_observer(&s->net, mt_recorder_link, &s->rec, &err), MT_OK);
    mt_sim_opts o;
    mt_sim_opts_init(&o);
    o.on_span = mt_recorder_span;
    o.span_ctx = &s->rec;
    o.gpu_speed = speed;
    o.on_progress = progress;
    o.progress_ctx = progress_ctx;
    assert_int_equal(mt_simulate(s->prog, &s->net, s->e, &o, &s->res, &err), MT_OK);
    assert_false(s->rec.failed);
}

static void sim_free(sim *s) {
    mt_recorder_destroy(&s->rec);
    mt_sim_result_free(s->res);
    mt_net_free(&s->net);
    mt_engine_free(s->e);
    mt_topo_free(s->topo);
    mt_program_free(s->prog);
}

static mt_report_src src_of(sim *s) {
    mt_report_src src = {s->prog, s->res, &s->rec, s->topo, &s->net, 8};
    return src;
}

/* Writes the timeline into dir/name and returns it parsed; *text (optional) gets the file. */
static json_t *timeline(const fixture *fx, sim *s, const mt_span_filter *flt, const char *name, char **text) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", fx->dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    mt_report_src src = src_of(s);
    mt_error err = {0};
    assert_int_equal(mt_timeline_write(&src, flt, f, path, &err), MT_OK);
    fclose(f);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc) fail_msg("timeline is not JSON: %s line %d: %s", path, je.line, je.text);
    if (text) {
        f = fopen(path, "r");
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        rewind(f);
        *text = calloc((size_t)n + 1, 1);
        assert_int_equal(fread(*text, 1, (size_t)n, f), (size_t)n);
        fclose(f);
    }
    return doc;
}

static int64_t ns(double us) { return (int64_t)llround(us * 1e3); }

static const char *str(const json_t *ev, const char *key) { return json_string_value(json_object_get(ev, key)); }
static int64_t num(const json_t *ev, const char *key) { return json_integer_value(json_object_get(ev, key)); }
static double real(const json_t *ev, const char *key) { return json_number_value(json_object_get(ev, key)); }

/* Every event has ph, ts, pid; slices on one (pid, tid) never partially overlap (in ns, as
 * viewers read them). Returns the events array. */
static json_t *check_events(json_t *doc) {
    json_t *ev = json_object_get(doc, "traceEvents");
    assert_true(json_is_array(ev) && json_array_size(ev) > 0);
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        assert_non_null(str(e, "ph"));
        assert_true(json_is_number(json_object_get(e, "ts")));
        assert_true(json_is_integer(json_object_get(e, "pid")));
    }
    /* per track, the end of the latest slice that started before: a later one must start at or
     * after it, or lie inside it */
    json_array_foreach(ev, i, e) {
        if (strcmp(str(e, "ph"), "X")) continue;
        int64_t a = ns(real(e, "ts")), b = a + ns(real(e, "dur"));
        size_t j;
        json_t *x;
        json_array_foreach(ev, j, x) {
            if (j == i || strcmp(str(x, "ph"), "X") || num(x, "pid") != num(e, "pid") || num(x, "tid") != num(e, "tid"))
                continue;
            int64_t c = ns(real(x, "ts")), d = c + ns(real(x, "dur"));
            int partial = a < c && c < b && d > b;
            if (partial) fail_msg("slices overlap on pid %lld tid %lld: [%lld,%lld] and [%lld,%lld]",
                                  (long long)num(e, "pid"), (long long)num(e, "tid"), (long long)a,
                                  (long long)b, (long long)c, (long long)d);
        }
    }
    return ev;
}

/* Compute spans of GPU rank recorded in s, and their time clipped to [from, to) (ps). */
static int64_t compute_spans(const mt_recorder *rec, int32_t rank, mt_time_ps from, mt_time_ps to, mt_time_ps *time) {
    int64_t n = 0;
    *time = 0;
    for (int64_t k = 0; k < rec->n_spans; k++) {
        const mt_span *sp = &rec->spans[k];
        if (sp->rank != rank || sp->kind != MT_SPAN_COMPUTE) continue;
        mt_time_ps a = sp->start > from ? sp->start : from, b = sp->end < to ? sp->end : to;
        if (b > a) *time += b - a, n++;
    }
    return n;
}

/* Sum of compute-slice durations (ns) of GPU rank. */
static int64_t compute_ns(json_t *ev, int32_t rank) {
    int64_t sum = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
        if (!strcmp(str(e, "ph"), "X") && num(e, "pid") == rank + 1 && num(e, "tid") == 1) sum += ns(real(e, "dur"));
    return sum;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_timeline_full(void **state) {
    fixture *fx = *state;
    sim s;
    sim_run(fx, 2, 2, 2, NULL, NULL, NULL, NULL, &s);
    json_t *doc = timeline(fx, &s, NULL, "full.json", NULL);
    json_t *ev = check_events(doc);
    for (int32_t r = 0; r < s.res->n_gpus; r++) { /* ends rounded to the ns: 1 ns per span at most */
        mt_time_ps want;
        int64_t n = compute_spans(&s.rec, r, 0, MT_TIME_NEVER, &want);
        assert_int_equal(want, s.res->gpus[r].compute_ps);
        assert_true(n > 0 && llabs(compute_ns(ev, r) * 1000 - want) <= 1000 * n);
    }
    /* names, tracks, flows */
    int procs = 0, tp = 0, dp = 0, wait = 0, counters = 0, s_n = 0, f_n = 0;
    int64_t s_ids[64], f_ids[64], s_pid[64], f_pid[64];
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *ph = str(e, "ph");
        if (!strcmp(ph, "M") && !strcmp(str(e, "name"), "process_name")) {
            const char *n = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
            int32_t r = (int32_t)num(e, "pid") - 1, d, st, t;
            if (r < s.res->n_gpus) {
                char want[64];
                mt_plan_coords(&s.prog->plan, r, &d, &st, &t);
                snprintf(want, sizeof want, "GPU %d (dp %d, stage %d, tp %d)", r, d, st, t);
                assert_string_equal(n, want);
                procs++;
            } else {
                assert_string_equal(n, "network");
            }
        }
        if (!strcmp(ph, "X") && num(e, "tid") == 4) {
            tp++;
            assert_non_null(strstr(str(e, "name"), "(tp)"));
            assert_non_null(json_object_get(json_object_get(e, "args"), "algorithm"));
        }
        if (!strcmp(ph, "X") && num(e, "tid") == 5) dp++;
        if (!strcmp(ph, "X") && num(e, "tid") == 3) wait++;
        if (!strcmp(ph, "C")) {
            counters++;
            assert_non_null(strstr(str(e, "name"), "->"));
            double v = json_number_value(json_object_get(json_object_get(e, "args"), "util %"));
            assert_true(v >= 0 && v <= 100.0 + 1e-9);
        }
        if (!strcmp(ph, "s") && s_n < 64) s_pid[s_n] = num(e, "pid"), s_ids[s_n++] = num(e, "id");
        if (!strcmp(ph, "f") && f_n < 64) {
            assert_string_equal(str(e, "bp"), "e");
            f_pid[f_n] = num(e, "pid"), f_ids[f_n++] = num(e, "id");
        }
    }
    assert_int_equal(procs, 8);
    assert_true(tp > 0 && dp > 0 && wait > 0 && counters > 0);
    /* one arrow per send, each id once at each end, from a stage-0 GPU to its stage-1 peer or back */
    assert_int_equal(s_n, (int)s.res->sends);
    assert_int_equal(f_n, s_n);
    for (int a = 0; a < s_n; a++) {
        int found = 0;
        for (int b = 0; b < f_n; b++)
            if (f_ids[b] == s_ids[a]) {
                found++;
                int32_t d, st, t;
                mt_plan_coords(&s.prog->plan, (int32_t)s_pid[a] - 1, &d, &st, &t);
                assert_int_equal(f_pid[b] - 1, mt_plan_rank(&s.prog->plan, d, 1 - st, t));
            }
        assert_int_equal(found, 1);
    }
    json_decref(doc);
    sim_free(&s);
}

static void test_timeline_filters(void **state) {
    fixture *fx = *state;
    mt_span_filter flt;
    mt_span_filter_init(&flt);
    mt_error err = {0};
    /* GPU 0 (stage 0) and GPU 2 (its stage-1 peer under tpd), a window in the middle */
    assert_int_equal(mt_span_filter_ranks(&flt, "0,2", 8, &err), MT_OK);
    assert_int_equal(mt_span_filter_window(&flt, "100us:300us", &err), MT_OK);
    sim all, part;
    sim_run(fx, 2, 2, 2, NULL, NULL, NULL, NULL, &all);
    sim_run(fx, 2, 2, 2, &flt, NULL, NULL, NULL, &part);
    assert_true(part.rec.n_spans < all.rec.n_spans);
    char *t_all, *t_part;
    json_t *doc = timeline(fx, &all, &flt, "window-a.json", &t_all);
    json_t *doc2 = timeline(fx, &part, &part.rec.filter, "window-b.json", &t_part);
    assert_string_equal(t_all, t_part); /* filtering while recording = filtering while writing */
    json_t *ev = check_events(doc);
    size_t i;
    json_t *e;
    int flows = 0;
    json_array_foreach(ev, i, e) {
        const char *ph = str(e, "ph");
        if (!strcmp(ph, "M")) continue;
        if (!strcmp(ph, "X") || !strcmp(ph, "s") || !strcmp(ph, "f")) assert_true(num(e, "pid") == 1 || num(e, "pid") == 3);
        if (!strcmp(ph, "s")) flows++;
        int64_t a = ns(real(e, "ts")), b = a + ns(real(e, "dur"));
        assert_true(a >= 100000 && b <= 300000);
    }
    /* compute in the window = the recorded compute spans clipped to it */
    for (int32_t r = 0; r < 8; r++) {
        mt_time_ps want;
        int64_t n = compute_spans(&all.rec, r, 100000000, 300000000, &want);
        if (r == 0 || r == 2) assert_true(n > 0 && llabs(compute_ns(ev, r) * 1000 - want) <= 1000 * n);
        else assert_int_equal(compute_ns(ev, r), 0);
    }
    /* a GPU without its peer: sends drawn, no arrows */
    mt_span_filter one;
    mt_span_filter_init(&one);
    assert_int_equal(mt_span_filter_ranks(&one, "0", 8, &err), MT_OK);
    json_t *doc3 = timeline(fx, &all, &one, "one.json", NULL);
    int sends = 0, arrows = 0;
    json_array_foreach(json_object_get(doc3, "traceEvents"), i, e) {
        if (!strcmp(str(e, "ph"), "X") && num(e, "tid") >= 7) sends++;
        if (!strcmp(str(e, "ph"), "s") || !strcmp(str(e, "ph"), "f")) arrows++;
    }
    assert_true(sends > 0);
    assert_int_equal(arrows, 0);
    json_decref(doc3);
    mt_span_filter_destroy(&one);
    free(t_all);
    free(t_part);
    json_decref(doc);
    json_decref(doc2);
    sim_free(&all);
    sim_free(&part);
    mt_span_filter_destroy(&flt);
}

static void test_items_tile_slowed_gpu(void **state) {
    fixture *fx = *state;
    double speed[8] = {1, 0.7, 1, 1.3, 1, 1, 1, 1};
    sim s;
    sim_run(fx, 2, 2, 2, NULL, speed, NULL, NULL, &s);
    for (int32_t r = 0; r < 8; r++) {
        mt_time_ps total = 0;
        for (int64_t k = 0; k < s.rec.n_spans; k++) {
            const mt_span *sp = &s.rec.spans[k];
            if (sp->rank != r || sp->kind != MT_SPAN_COMPUTE) continue;
            mt_item_walk w;
            const mt_item *it;
            mt_time_ps a, b, at = sp->start;
            int n = 0;
            mt_item_walk_init(&w, s.prog, sp);
            double scale = (double)(sp->end - sp->start) / (double)sp->task->dur_ps; /* 1 / speed */
            assert_true(fabs(scale * speed[r] - 1) < 1e-6);
            while (mt_item_walk_next(&w, &it, &a, &b)) {
                assert_int_equal(a, at);
                assert_true(llabs((b - a) - llround((double)it->dur_ps * scale)) <= 1); /* stretched alike */
                at = b;
                n++;
            }
            assert_int_equal(n, sp->task->item_count);
            assert_int_equal(at, sp->end);
            total += sp->end - sp->start;
        }
        assert_int_equal(total, s.res->gpus[r].compute_ps);
    }
    assert_true(s.res->gpus[1].compute_ps > s.res->gpus[0].compute_ps);
    sim_free(&s);
}

/* ---- CSV, read back with libcsv ------------------------------------------------------------ */

typedef struct table {
    char cells[4096][16][96];
    int ncols, nrows, col; /* rows include the header */
} table;

static void on_cell(void *s, size_t len, void *data) {
    table *t = data;
    if (t->nrows < 4096 && t->col < 16) {
        size_t n = len < 95 ? len : 95;
        memcpy(t->cells[t->nrows][t->col], s, n);
        t->cells[t->nrows][t->col][n] = '\0';
    }
    t->col++;
}

static void on_line(int c, void *data) {
    (void)c;
    table *t = data;
    if (t->nrows == 0) t->ncols = t->col;
    assert_int_equal(t->col, t->ncols);
    t->nrows++;
    t->col = 0;
}

static void read_table(const char *dir, const char *name, table *t) {
    char path[256], buf[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    struct csv_parser p;
    assert_int_equal(csv_init(&p, 0), 0);
    memset(t, 0, sizeof *t);
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) assert_int_equal(csv_parse(&p, buf, n, on_cell, on_line, t), n);
    csv_fini(&p, on_cell, on_line, t);
    csv_free(&p);
    fclose(f);
    assert_true(t->nrows >= 1);
}

static int colidx(const table *t, const char *name) {
    for (int c = 0; c < t->ncols; c++)
        if (!strcmp(t->cells[0][c], name)) return c;
    fail_msg("no column %s", name);
    return -1;
}

static double cell(const table *t, int row, const char *col) { return atof(t->cells[row][colidx(t, col)]); }

static void test_csv(void **state) {
    fixture *fx = *state;
    sim s;
    sim_run(fx, 2, 2, 2, NULL, NULL, NULL, NULL, &s);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/csv/a/b", fx->dir);
    mt_error err = {0};
    assert_int_equal(mt_csv_prepare_dir(dir, &err), MT_OK);
    mt_report_src src = src_of(&s);
    assert_int_equal(mt_csv_write_dir(&src, dir, &err), MT_OK);
    table *t = malloc(sizeof *t);
    read_table(dir, "gpus.csv", t);
    assert_int_equal(t->nrows, 9);
    for (int r = 1; r < t->nrows; r++) {
        double sum = cell(t, r, "compute_ms") + cell(t, r, "host_wait_ms") + cell(t, r, "exposed_comm_ms") +
                     cell(t, r, "peer_wait_ms") +
                     cell(t, r, "bubble_ms") + cell(t, r, "idle_ms");
        assert_true(fabs(sum - cell(t, r, "step_ms")) < 1e-9);
        assert_true(fabs(cell(t, r, "compute_ms") - (double)s.res->gpus[r - 1].compute_ps / 1e9) < 1e-12);
    }
    read_table(dir, "ops.csv", t);
    double comp[8] = {0};
    for (int r = 1; r < t->nrows; r++)
        if (!strcmp(t->cells[r][colidx(t, "stream")], "compute")) comp[(int)cell(t, r, "gpu")] += cell(t, r, "dur_us");
    for (int g = 0; g < 8; g++) assert_true(fabs(comp[g] * 1e6 - (double)s.res->gpus[g].compute_ps) < 1);
    read_table(dir, "collectives.csv", t);
    assert_int_equal(t->nrows - 1, (int)s.res->collectives); /* one row per instance */
    for (int r = 1; r < t->nrows; r++) {
        int n = (int)cell(t, r, "gpus");
        double f = !strcmp(t->cells[r][colidx(t, "op")], "allreduce") ? 2.0 * (n - 1) / n : 1;
        assert_true(fabs(cell(t, r, "busbw_GBps") - f * cell(t, r, "algbw_GBps")) < 1e-6 * cell(t, r, "busbw_GBps"));
        assert_true(fabs(cell(t, r, "algbw_GBps") - cell(t, r, "bytes") / cell(t, r, "time_us") / 1e3) <
                    1e-6 * cell(t, r, "algbw_GBps"));
    }
    read_table(dir, "links.csv", t);
    assert_int_equal(t->nrows - 1, mt_topo_nlinks(s.topo));
    read_table(dir, "layers.csv", t);
    assert_int_equal(t->nrows - 1, LAYERS);
    free(t);
    /* a file where a directory should be */
    char bad[160];
    snprintf(bad, sizeof bad, "%s/trace.csv/sub", fx->dir);
    assert_int_equal(mt_csv_prepare_dir(bad, &err), MT_EIO);
    assert_non_null(strstr(err.msg, "trace.csv"));
    assert_int_equal(mt_csv_write_dir(&src, bad, &err), MT_EIO);
    assert_non_null(strstr(err.msg, "ops.csv"));
    sim_free(&s);
}

static void test_filter_parse(void **state) {
    (void)state;
    mt_span_filter f;
    mt_span_filter_init(&f);
    mt_error err = {0};
    assert_true(mt_span_filter_rank(&f, 5) && mt_span_filter_rank(NULL, 5));
    assert_int_equal(mt_span_filter_ranks(&f, "0-2,5", 8, &err), MT_OK);
    int want[8] = {1, 1, 1, 0, 0, 1, 0, 0};
    for (int r = 0; r < 8; r++) assert_int_equal(mt_span_filter_rank(&f, r), want[r]);
    assert_false(mt_span_filter_rank(&f, 8));
    assert_int_equal(mt_span_filter_ranks(&f, "9", 8, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "outside 0-7"));
    const char *bad[] = {"", "a", "3-1", "1,", "1-", "-1", "1;2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_int_equal(mt_span_filter_ranks(&f, bad[i], 8, NULL), MT_EINVAL);
    assert_int_equal(mt_span_filter_rank(&f, 5), 1); /* unchanged by the failures */
    assert_int_equal(mt_span_filter_window(&f, "10ms:20ms", &err), MT_OK);
    assert_int_equal(f.from, 10000000000LL);
    assert_int_equal(f.to, 20000000000LL);
    assert_true(mt_span_filter_time(&f, 15000000000LL, 16000000000LL));
    assert_true(mt_span_filter_time(&f, 0, 10000000001LL));
    assert_false(mt_span_filter_time(&f, 0, 10000000000LL));
    assert_false(mt_span_filter_time(&f, 20000000000LL, 30000000000LL));
    assert_true(mt_span_filter_time(&f, 10000000000LL, 10000000000LL)); /* an instant at the start */
    assert_int_equal(mt_span_filter_window(&f, ":1.5us", &err), MT_OK);
    assert_true(f.from == 0 && f.to == 1500000);
    assert_int_equal(mt_span_filter_window(&f, "2s:", &err), MT_OK);
    assert_true(f.from == 2000000000000LL && f.to == MT_TIME_NEVER);
    const char *badw[] = {"10ms", "20ms:10ms", "1ms:1ms", "x:2ms", "1ms:2parsecs", "-1ms:2ms"};
    for (size_t i = 0; i < sizeof badw / sizeof *badw; i++)
        assert_int_equal(mt_span_filter_window(&f, badw[i], &err), MT_EINVAL);
    assert_true(f.from == 2000000000000LL); /* unchanged */
    mt_span_filter_destroy(&f);
}

static void test_coll_algo(void **state) {
    (void)state;
    mt_plan pl;
    mt_plan_init(&pl);
    pl.algo = MT_ALGO_HIER;
    assert_int_equal(mt_sim_coll_algo(&pl, MT_COLL_ALLREDUCE, 16, 8), MT_ALGO_HIER);
    assert_int_equal(mt_sim_coll_algo(&pl, MT_COLL_ALLREDUCE, 8, 8), MT_ALGO_RING);  /* one node */
    assert_int_equal(mt_sim_coll_algo(&pl, MT_COLL_ALLREDUCE, 12, 8), MT_ALGO_RING); /* not whole nodes */
    assert_int_equal(mt_sim_coll_algo(&pl, MT_COLL_ALLGATHER, 16, 8), MT_ALGO_RING);
    pl.algo = MT_ALGO_TREE;
    assert_int_equal(mt_sim_coll_algo(&pl, MT_COLL_ALLGATHER, 4, 8), MT_ALGO_RING);
    assert_int_equal(mt_sim_coll_algo(&pl, MT_COLL_ALLREDUCE, 4, 8), MT_ALGO_TREE);
    pl.algo = MT_ALGO_RING;
    pl.ringflow_above = 64;
    assert_int_equal(mt_sim_coll_algo(&pl, MT_COLL_ALLREDUCE, 64, 8), MT_ALGO_RING);
    assert_int_equal(mt_sim_coll_algo(&pl, MT_COLL_ALLREDUCE, 65, 8), MT_ALGO_RINGFLOW);
    assert_int_equal(mt_sim_coll_algo(&pl, MT_COLL_BROADCAST, 65, 8), MT_ALGO_RING);
}

typedef struct prog_seen {
    int calls;
    int64_t last_done, total;
} prog_seen;

static void on_progress(void *ctx, int64_t done, int64_t total) {
    prog_seen *p = ctx;
    assert_true(done >= p->last_done && done <= total);
    p->last_done = done;
    p->total = total;
    p->calls++;
}

static void test_progress_hook(void **state) {
    fixture *fx = *state;
    prog_seen seen = {0};
    sim s; /* 256 replicas: over 256 compute tasks, so the hook runs */
    sim_run(fx, 256, 1, 1, NULL, NULL, on_progress, &seen, &s);
    assert_true(seen.calls >= 1);
    assert_int_equal(seen.total, 256 * (int64_t)s.prog->stages[0].n_tasks);
    sim_free(&s);
}

/* report/verdict.h: the speed-up is throughput over the one-GPU baseline's; the holdback is memory
 * over the limit first, else the largest wait of at least 5% of the step, else compute. */
static void test_verdict(void **state) {
    (void)state;
    mt_plan p;
    mt_plan_init(&p);
    p.global_batch = 64, p.dp = 8;
    /* 64 samples in 41.139 ms against 8 in 41.069 ms: (64 / 41.139) / (8 / 41.069) */
    assert_float_equal(mt_speedup(&p, 41.139, 8, 41.069), 8.0 * 41.069 / 41.139, 1e-12);
    p.global_batch = 0; /* unknown batch: the data-parallel size against one */
    assert_float_equal(mt_speedup(&p, 10, 0, 20), 16.0, 1e-12);
    assert_float_equal(mt_speedup(&p, 0, 0, 20), 0.0, 0);
    mt_holdback h;
    mt_hold_parts parts = {.step_ms = 100, .exposed_ms = 12, .peer_ms = 30, .bubble_ms = 29, .host_ms = 1};
    mt_holdback_of(&parts, &h);
    assert_int_equal(h.kind, MT_HOLD_PEERS);
    assert_float_equal(h.share, 0.30, 1e-12);
    assert_non_null(strstr(h.text, "waiting for other GPUs at collectives (a slower or later GPU), 30% of the step "
                                   "(30.000 ms per GPU)"));
    parts.mem_bytes = 81e9, parts.mem_limit = 80e9; /* does not fit: whatever the waits */
    mt_holdback_of(&parts, &h);
    assert_int_equal(h.kind, MT_HOLD_MEMORY);
    parts = (mt_hold_parts){.step_ms = 100, .exposed_ms = 4.9, .host_ms = 2, .mem_bytes = 79e9, .mem_limit = 80e9};
    mt_holdback_of(&parts, &h); /* 4.9% < 5%: compute */
    assert_int_equal(h.kind, MT_HOLD_COMPUTE);
    assert_non_null(strstr(h.text, "(all of them together: 7%)"));
    parts.host_ms = 5;
    mt_holdback_of(&parts, &h);
    assert_int_equal(h.kind, MT_HOLD_HOST);
    assert_string_equal(h.name, "host");
}

/* The waits line as the text prints it, for these ranks (who, whom). */
static void waits_text(const int32_t *who, int32_t n_who, const int32_t *whom, int32_t n_whom, char *buf,
                       size_t len) {
    mt_waits_line l = {.who = who, .whom = whom, .n_who = n_who, .n_whom = n_whom, .rank = who[0], .ms = 2.5};
    snprintf(l.what, sizeof l.what, "gradients mb 0 from GPU %d", (int)whom[0]);
    FILE *m = fmemopen(buf, len, "w");
    assert_non_null(m);
    mt_waits_line_write(m, &l);
    assert_int_equal(fclose(m), 0);
}

/* report/waits.h: short lists in full; 16,384 blocks of 8 ranks one every 64 (a 2^20-GPU hybrid's
 * stage) stay under 300 characters; an irregular long list names its first 4 ranges and a count. */
static void test_waits_line(void **state) {
    (void)state;
    enum { N = 16384 * 8 }; /* 2^20 GPUs: one stage of 8 per 64 */
    int32_t *who = malloc(N * sizeof *who), *whom = malloc(N * sizeof *whom);
    assert_true(who && whom);
    static char buf[1 << 16];
    int32_t few[] = {0, 2, 3, 4, 7}, one = 1;
    waits_text(few, 5, &one, 1, buf, sizeof buf);
    assert_string_equal(buf, "GPUs 0, 2-4, 7 wait 2.500 ms each for GPU 1 (GPU 0's longest: gradients mb 0 from GPU 1)");
    for (int32_t i = 0; i < N; i++) {
        who[i] = 8 + i / 8 * 64 + i % 8;
        whom[i] = who[i] + 8;
    }
    waits_text(who, N, whom, N, buf, sizeof buf);
    assert_string_equal(buf, "GPUs 8-15, 72-79, ..., 1048520-1048527 (16384 blocks of 8, one every 64 GPUs) wait "
                             "2.500 ms each for one of GPUs 16-23, 80-87, ..., 1048528-1048535 (16384 blocks "
                             "of 8, one every 64 GPUs) (GPU 8's longest: gradients mb 0 from GPU 16)");
    assert_true(strlen(buf) < 300);
    for (int32_t i = 0; i < 20; i++) who[i] = 3 * i + (i > 10); /* one step is not the stride */
    waits_text(who, 20, &one, 1, buf, sizeof buf);
    assert_string_equal(buf, "GPUs 0, 3, 6, 9, ... and 16 more ranges wait 2.500 ms each for GPU 1 (GPU 0's "
                             "longest: gradients mb 0 from GPU 1)");
    for (int32_t i = 0; i < 7; i++) who[i] = 5 * i; /* single ranks, one every 5 */
    waits_text(who, 7, &one, 1, buf, sizeof buf);
    assert_non_null(strstr(buf, "GPUs 0, 5, ..., 30 (7 GPUs, one every 5) wait"));
    free(who);
    free(whom);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeline_full),     cmocka_unit_test(test_timeline_filters),
        cmocka_unit_test(test_items_tile_slowed_gpu), cmocka_unit_test(test_csv),
        cmocka_unit_test(test_filter_parse),      cmocka_unit_test(test_coll_algo),
        cmocka_unit_test(test_progress_hook),     cmocka_unit_test(test_verdict),
        cmocka_unit_test(test_waits_line),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* Unit tests for run/ (the application as a library) and the writers it feeds in report/, and
 * for extrapolate/planlist (plans as text), on the small Kineto+ET fixture and a shipped CPU
 * trace:
 *  - a configuration's plan follows --strategy; plans parse, label and list (auto) as documented;
 *  - sweeps parse into the values the README gives; impossible compare settings are refused;
 *  - mt_run_simulate equals a bare mt_simrun_run, writes the files asked for, and removes them
 *    when it fails; a what-if adds a baseline that is not slower than the perturbed run;
 *  - mt_run_compare ranks rows by speed-up and marks the best; text and JSON writers say so;
 *  - calibration without a host model is exact (measured / simulated), with one reaches the
 *    measurement. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extrapolate/planlist.h"
#include "report/comparison.h"
#include "report/jsonw.h"
#include "report/summary.h"
#include "run/compare.h"
#include "run/config.h"
#include "run/input.h"
#include "run/simulate.h"

static char small_dir[1024], resnet_dir[1024];

static int setup(void **state) {
    (void)state;
    const char *fx = getenv("MT_FIXTURES");
    snprintf(small_dir, sizeof small_dir, "%s/small", fx ? fx : "tests/fixtures");
    snprintf(resnet_dir, sizeof resnet_dir, "%s/../../traces/cpu-resnet18-b8", fx ? fx : "tests/fixtures");
    return 0;
}

/* A configuration of the small fixture on `gpus` GPUs. */
static void small_config(mt_run_config *c, int32_t gpus) {
    assert_int_equal(mt_run_config_init(c, NULL), MT_OK);
    assert_int_equal(mt_run_config_add_path(c, small_dir, NULL), MT_OK);
    c->plan.gpus = gpus;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- configuration and plans as text ----------------------------------------------------- */

static void strategy_places_the_gpus(void **state) {
    (void)state;
    mt_run_config c;
    small_config(&c, 8);
    mt_plan p = mt_run_plan(&c, 0);
    assert_int_equal(p.gpus, 8);
    assert_int_equal(p.dp + p.tp + p.pp, 0); /* sizes are resolved per run */
    c.strategy = MT_STRATEGY_TP;
    p = mt_run_plan(&c, 4);
    assert_int_equal(p.tp, 4);
    assert_int_equal(p.gpus, 4);
    c.strategy = MT_STRATEGY_DP;
    p = mt_run_plan(&c, 0);
    assert_int_equal(p.dp, 8);
    assert_int_equal(p.dp_mode, MT_DP_SYNC);
    c.plan.pp = 2; /* a size given: the strategy only sets the mode */
    p = mt_run_plan(&c, 0);
    assert_int_equal(p.dp, 0);
    assert_int_equal(p.pp, 2);
    assert_int_equal(mt_run_config_add_path(&c, "a", NULL), MT_OK);
    for (int i = c.n_paths; i < MT_RUN_MAX_PATHS; i++) assert_int_equal(mt_run_config_add_path(&c, "x", NULL), MT_OK);
    assert_int_equal(mt_run_config_add_path(&c, "y", NULL), MT_EINVAL);
    mt_run_config_free(&c);
}

static void plan_lists(void **state) {
    (void)state;
    mt_plan base, *v = NULL;
    mt_plan_init(&base);
    base.gpus = 8;
    int32_t n = 0;
    assert_int_equal(mt_planlist_parse("ddp=8,dp=8,tp=2:ddp=4,pp=4:mb=8:schedule=gpipe,single", &base, &v, &n, NULL),
                     MT_OK);
    assert_int_equal(n, 5);
    assert_int_equal(v[1].dp_mode, MT_DP_SYNC);
    assert_int_equal(v[4].gpus, 1);
    assert_int_equal(v[2].tp, 2);
    assert_int_equal(v[2].dp, 4);
    assert_int_equal(v[3].pp, 4);
    assert_int_equal(v[3].micro_batches, 8);
    assert_int_equal(v[3].schedule, MT_PP_GPIPE);
    char label[128];
    mt_planlist_label(&v[3], label, sizeof label);
    assert_string_equal(label, "pp=4:mb=8:schedule=gpipe");
    mt_planlist_label(&v[2], label, sizeof label);
    assert_string_equal(label, "ddp=4:tp=2");
    /* a label parses back into the same plan */
    mt_plan *w = NULL;
    int32_t m = 0;
    assert_int_equal(mt_planlist_parse(label, &base, &w, &m, NULL), MT_OK);
    assert_int_equal(w[0].dp, 4);
    assert_int_equal(w[0].tp, 2);
    free(w);
    json_t *j = mt_planlist_json(&v[3]);
    assert_string_equal(json_string_value(json_object_get(j, "schedule")), "gpipe");
    json_decref(j);
    free(v);
    mt_error e = {0};
    assert_int_equal(mt_planlist_parse("tp=x", &base, &v, &n, &e), MT_EINVAL);
    assert_non_null(strstr(e.msg, "--plans tp= needs an integer"));
    assert_int_equal(mt_planlist_parse("warp=3", &base, &v, &n, &e), MT_EINVAL);
    assert_non_null(strstr(e.msg, "unknown field 'warp='"));
    /* auto: every D x T x P = 8 (10 orderings), ddp and dp, schedules and micro-batches */
    base.global_batch = 64;
    assert_int_equal(mt_planlist_auto(&base, 0, 0, 0, &v, &n, NULL), MT_OK);
    int32_t single_stage = 0;
    for (int32_t i = 0; i < n; i++) {
        assert_int_equal(v[i].dp * v[i].tp * v[i].pp, 8);
        single_stage += v[i].pp == 1;
    }
    assert_int_equal(single_stage, 4 * 2 - 1); /* (d, t) in {1,2,4,8}: ddp+dp except d = 1 */
    free(v);
}

static void sweeps_parse(void **state) {
    (void)state;
    mt_sweep s;
    assert_int_equal(mt_sweep_parse("link-bw=100GB/s:400GB/s", &s, NULL), MT_OK);
    assert_int_equal(s.kind, MT_SWEEP_LINK_BW);
    assert_int_equal(s.n, 3);
    assert_true(s.values[2] == 400e9);
    assert_int_equal(mt_sweep_parse("gpus=8:64", &s, NULL), MT_OK);
    assert_int_equal(s.n, 4);
    assert_true(s.values[3] == 64);
    assert_int_equal(mt_sweep_parse("batch=4:16:4", &s, NULL), MT_OK);
    assert_int_equal(s.n, 4);
    assert_true(s.values[1] == 8 && s.values[2] == 12);
    assert_int_equal(mt_sweep_parse("nic-bw=25GB/s,50GB/s", &s, NULL), MT_OK);
    assert_int_equal(s.kind, MT_SWEEP_NIC_BW);
    assert_int_equal(s.n, 2);
    assert_int_equal(mt_sweep_parse("gpus=8:100:x3", &s, NULL), MT_OK);
    assert_int_equal(s.n, 4); /* 8, 24, 72, then TO itself */
    assert_true(s.values[3] == 100);
    mt_error e = {0};
    assert_int_equal(mt_sweep_parse("speed=1:2", &s, &e), MT_EINVAL);
    assert_non_null(strstr(e.msg, "use link-bw=, nic-bw=, gpus= or batch="));
    assert_int_equal(mt_sweep_parse("gpus=8:4", &s, &e), MT_EINVAL);
    assert_int_equal(mt_sweep_parse("gpus=1:8:x1", &s, &e), MT_EINVAL);
    assert_non_null(strstr(e.msg, "factor after x"));
    assert_int_equal(mt_sweep_parse("gpus=1:1000000:1001", &s, &e), MT_EINVAL);
}

static void compare_refuses_meaningless_settings(void **state) {
    (void)state;
    mt_run_config c;
    small_config(&c, 0);
    mt_compare_config cc;
    mt_compare_config_init(&cc);
    mt_error e = {0};
    assert_int_equal(mt_compare_check(&c, &cc, &e), MT_EINVAL);
    assert_non_null(strstr(e.msg, "--gpus is required"));
    assert_int_equal(mt_sweep_parse("gpus=2:4", &cc.sweep, NULL), MT_OK);
    assert_int_equal(mt_compare_check(&c, &cc, &e), MT_OK);
    cc.plans = "ddp=2";
    assert_int_equal(mt_compare_check(&c, &cc, &e), MT_EINVAL);
    assert_non_null(strstr(e.msg, "--plans and --sweep"));
    cc.plans = NULL;
    c.plan.gpus = 4;
    assert_int_equal(mt_compare_check(&c, &cc, &e), MT_EINVAL);
    assert_non_null(strstr(e.msg, "--gpus and --sweep gpus="));
    mt_run_config_free(&c);
}

/* ---- simulate ------------------------------------------------------------------------------ */

static void simulate_equals_a_bare_run_and_writes_files(void **state) {
    (void)state;
    mt_run_config c;
    small_config(&c, 2);
    mt_run_input in;
    assert_int_equal(mt_run_input_open(&c, &in, NULL), MT_OK);
    char dir[] = "/tmp/mt-run-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char tl[1100], csv[1100], html[1100], probe[1200];
    snprintf(tl, sizeof tl, "%s/t.json", dir);
    snprintf(csv, sizeof csv, "%s/csv", dir);
    snprintf(html, sizeof html, "%s/r.html", dir);
    mt_sim_outputs o;
    mt_sim_outputs_init(&o);
    o.timeline = tl, o.csv_dir = csv, o.html = html;
    mt_simulation s;
    mt_error e = {0};
    assert_int_equal(mt_run_simulate(&c, &in, &o, &s, &e), MT_OK);
    assert_int_equal(s.run.plan.gpus, 2);
    assert_int_equal(s.run.plan.dp, 2); /* resolved */
    assert_false(s.has_base);
    assert_true(exists(tl) && exists(html));
    snprintf(probe, sizeof probe, "%s/gpus.csv", csv);
    assert_true(exists(probe));
    mt_simrun bare;
    mt_simrun_cfg cfg = mt_simrun_cfg_of(&c, 0);
    assert_int_equal(mt_simrun_run(in.t, in.pm, &cfg, &bare, NULL), MT_OK);
    assert_true(bare.res->step_ps == s.run.res->step_ps);
    assert_true(mt_simrun_step_ms(&bare) > 0);
    mt_simrun_free(&bare);
    /* the report view: text and JSON carry the step */
    mt_run_summary sum = mt_simulation_summary(&s, &c, &in);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_summary_print(f, &sum, 1, 1);
    fclose(f);
    assert_non_null(strstr(buf, "step time"));
    assert_non_null(strstr(buf, "plan       2 GPUs = dp 2 x tp 1 x pp 1"));
    free(buf);
    json_t *j = mt_summary_json(&sum);
    assert_true(fabs(json_real_value(json_object_get(j, "step_ms")) - mt_simrun_step_ms(&s.run)) < 1e-12);
    assert_int_equal(json_array_size(json_object_get(j, "gpus")), 2);
    /* the streamed JSON is the tree's dump, byte for byte */
    char *tree = mt_jw_dumps(j);
    f = open_memstream(&buf, &len);
    assert_int_equal(mt_summary_json_write(f, &sum), 0);
    fclose(f);
    assert_int_equal(len, strlen(tree) + 1);
    assert_int_equal(memcmp(buf, tree, strlen(tree)), 0);
    assert_int_equal(buf[len - 1], '\n');
    free(tree);
    free(buf);
    json_decref(j);
    char msg[256];
    assert_false(mt_simulation_mem_warning(&s, msg, sizeof msg)); /* 576 B of weights fit */
    mt_simulation_free(&s);
    /* a timeline that cannot be written fails before the run; the HTML begun is removed */
    remove(html);
    snprintf(tl, sizeof tl, "%s/no/such/dir/t.json", dir);
    assert_int_equal(mt_run_simulate(&c, &in, &o, &s, &e), MT_EIO);
    assert_non_null(strstr(e.msg, "cannot write the timeline"));
    assert_false(exists(html));
    mt_run_input_close(&in);
    mt_run_config_free(&c);
}

static void whatif_adds_a_baseline(void **state) {
    (void)state;
    mt_run_config c;
    small_config(&c, 2);
    c.host_model = MT_HOST_NONE;
    assert_int_equal(mt_scenario_add_slow_gpu(c.scenario, "1:2", NULL), MT_OK);
    mt_run_input in;
    assert_int_equal(mt_run_input_open(&c, &in, NULL), MT_OK);
    mt_sim_outputs o;
    mt_sim_outputs_init(&o);
    mt_simulation s;
    assert_int_equal(mt_run_simulate(&c, &in, &o, &s, NULL), MT_OK);
    assert_true(s.has_base);
    assert_true(s.base.res->step_ps < s.run.res->step_ps);
    /* GPU 1 computes twice as long */
    assert_true(s.run.res->gpus[1].compute_ps == 2 * s.base.res->gpus[1].compute_ps);
    mt_simulation_free(&s);
    mt_run_input_close(&in);
    mt_run_config_free(&c);
}

/* ---- compare ------------------------------------------------------------------------------- */

static void compare_ranks_rows(void **state) {
    (void)state;
    mt_run_config c;
    small_config(&c, 2);
    c.host_model = MT_HOST_NONE;
    mt_run_input in;
    assert_int_equal(mt_run_input_open(&c, &in, NULL), MT_OK);
    mt_compare_config cc;
    mt_compare_config_init(&cc);
    cc.plans = "single,ddp=2,dp=2,tp=2,pp=2";
    mt_comparison cmp;
    mt_error e = {0};
    assert_int_equal(mt_run_compare(&c, &in, &cc, &cmp, &e), MT_OK);
    assert_int_equal(cmp.n, 5);
    assert_int_equal(cmp.best, 0); /* ranked: the fastest first */
    for (int32_t i = 1; i < cmp.n; i++)
        if (cmp.rows[i].ran) assert_true(cmp.rows[i].speedup <= cmp.rows[i - 1].speedup);
    int32_t skipped = 0;
    for (int32_t i = 0; i < cmp.n; i++) skipped += !cmp.rows[i].ran;
    assert_int_equal(skipped, 1); /* pp=2 needs 2 layers; the fixture has one */
    assert_non_null(strstr(cmp.rows[cmp.n - 1].reason, "layers"));
    /* single runs the global batch (traced x 2) on one GPU: batch-dependent ops take twice as long */
    for (int32_t i = 0; i < cmp.n; i++)
        if (!strcmp(cmp.rows[i].label, "single")) {
            assert_true(cmp.rows[i].step_ms > 1.9 * cmp.base_step_ms && cmp.rows[i].step_ms < 2 * cmp.base_step_ms);
            assert_true(cmp.rows[i].speedup > 1 && cmp.rows[i].speedup < 1.1);
        }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_comparison_print(f, &cmp);
    fclose(f);
    assert_non_null(strstr(buf, "fastest"));
    assert_non_null(strstr(buf, "skipped (infeasible)"));
    free(buf);
    json_t *j = mt_comparison_json(&cmp);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 4);
    assert_int_equal(json_array_size(json_object_get(j, "skipped")), 1);
    json_decref(j);
    mt_comparison_free(&cmp);
    mt_run_input_close(&in);
    mt_run_config_free(&c);
}

/* ---- calibration --------------------------------------------------------------------------- */

static void calibration_reaches_the_measurement(void **state) {
    (void)state;
    mt_run_config c;
    assert_int_equal(mt_run_config_init(&c, NULL), MT_OK);
    assert_int_equal(mt_run_config_add_path(&c, resnet_dir, NULL), MT_OK);
    c.plan.gpus = 1;
    c.calibrate = 1;
    mt_run_input in;
    mt_error e = {0};
    assert_int_equal(mt_run_input_open(&c, &in, &e), MT_OK);
    assert_true(in.cal.on);
    assert_false(in.cal.host); /* a CPU trace: operator times scale, exactly */
    assert_true(fabs(in.cal.op_scale - in.cal.measured_ms / in.cal.uncalibrated_ms) < 1e-12);
    assert_true(fabs(in.cal.calibrated_ms - in.cal.measured_ms) < 1e-6 * in.cal.measured_ms);
    assert_true(c.op_scale == in.cal.op_scale);
    mt_run_input_close(&in);
    mt_run_config_free(&c);
    /* the small GPU trace has a host model; 0.5 ms is above its GPU work (0.27 ms) */
    small_config(&c, 1);
    c.measured_ms = 0.5;
    assert_int_equal(mt_run_input_open(&c, &in, &e), MT_OK);
    assert_true(in.cal.host);
    assert_true(fabs(in.cal.calibrated_ms - 0.5) < 1e-6);
    assert_true(c.host_scale < 1 && c.op_scale == 1);
    mt_run_input_close(&in);
    /* a host scale given as well composes: calibrated first, then the host times x 2 */
    double calibrated_host = in.cal.host_scale;
    c.host_scale = 2;
    assert_int_equal(mt_run_input_open(&c, &in, &e), MT_OK);
    assert_true(fabs(in.cal.host_scale - calibrated_host) < 1e-12);
    assert_true(fabs(c.host_scale - 2 * calibrated_host) < 1e-12);
    mt_run_input_close(&in);
    mt_run_config_free(&c);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strategy_places_the_gpus),
        cmocka_unit_test(plan_lists),
        cmocka_unit_test(sweeps_parse),
        cmocka_unit_test(compare_refuses_meaningless_settings),
        cmocka_unit_test(simulate_equals_a_bare_run_and_writes_files),
        cmocka_unit_test(whatif_adds_a_baseline),
        cmocka_unit_test(compare_ranks_rows),
        cmocka_unit_test(calibration_reaches_the_measurement),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}

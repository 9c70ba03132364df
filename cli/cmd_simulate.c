/* cli/cmd_simulate.c — `mitosis simulate`: one GPU's traced step extrapolated onto N GPUs
 * under a data / tensor / pipeline / hybrid plan, simulated on a network model. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/args.h"
#include "cli/calibrate.h"
#include "cli/commands.h"
#include "cli/htmlout.h"
#include "cli/planlist.h"
#include "cli/planopts.h"
#include "cli/simrun.h"
#include "cli/whatif.h"
#include "extrapolate/plan.h"
#include "extrapolate/program.h"
#include "perfmodel/perfmodel.h"
#include "report/csvout.h"
#include "report/progress.h"
#include "report/record.h"
#include "report/timeline.h"
#include "sim/engine.h"
#include "sim/simulate.h"
#include "tracer/trace.h"
#include "util/units.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: mitosis simulate TRACE [TRACE2] --gpus N [plan] [--topology SPEC] [options]\n\n"
            "Plan (D x T x P must equal N; an unset size takes the GPUs left over, dp first):\n"
            "  --gpus N              virtual GPUs\n");
    mt_planopts_help(out);
    fprintf(out,
            "Output:\n"
            "  --json                everything as JSON on stdout\n"
            "  --per-gpu             one row per GPU (default when N <= 16)\n"
            "  --layers              per-layer compute and communication\n"
            "  --timeline FILE       the step as Perfetto / chrome://tracing JSON: per GPU its ops,\n"
            "                        host and stream waits, TP/DP collectives and pipeline sends;\n"
            "                        link load counters\n"
            "  --timeline-gpus LIST  only these GPUs in the timeline, e.g. 0-7,12\n"
            "  --timeline-window A:B only simulated time A to B in the timeline, e.g. 10ms:20ms\n"
            "  --csv DIR             ops.csv, gpus.csv, layers.csv, links.csv, collectives.csv in DIR\n"
            "                        (created when missing; columns in the README)\n"
            "  --html FILE           a self-contained HTML report: summary, per-GPU and per-layer\n"
            "                        bars, zoomable timeline of GPUs 0-15\n"
            "Without --topology the GPUs hang off one switch (switch:N, default link bandwidth).\n");
    mt_whatif_help(out);
    fprintf(out, "\n");
    mt_netopts_help(out);
}


static double ms(mt_time_ps t) { return (double)t / 1e9; }

typedef struct sim_cli {
    mt_planopts po;
    int as_json, per_gpu, layers;
    const char *timeline, *timeline_gpus, *csv_dir, *html;
    mt_span_filter tl_filter; /* --timeline-window now, --timeline-gpus once N is known */
    mt_whatif wi;
    mt_calibration cal;
} sim_cli;

static int parse_args(sim_cli *c, int argc, char **argv, mt_error *err) {
    for (int i = 1; i < argc;) {
        int t = mt_planopts_take(&c->po, argc, argv, &i, err);
        if (t == 2) return usage(stdout), 1;
        if (t < 0) return -1;
        if (t) continue;
        if ((t = mt_whatif_take(&c->wi, argc, argv, &i, err)) < 0) return -1;
        if (t) continue;
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 2;
        if (!strcmp(f, "--json")) {
            c->as_json = 1, used = 1;
        } else if (!strcmp(f, "--per-gpu")) {
            c->per_gpu = 1, used = 1;
        } else if (!strcmp(f, "--layers")) {
            c->layers = 1, used = 1;
        } else if (!strcmp(f, "--timeline") || !strcmp(f, "--timeline-gpus") || !strcmp(f, "--csv") ||
                   !strcmp(f, "--html")) {
            if (!v || !*v) return mt_fail(err, MT_EINVAL, "%s needs a %s", f, !strcmp(f, "--csv") ? "directory"
                                          : strcmp(f, "--timeline-gpus") ? "file name" : "GPU list such as 0-7,12"), -1;
            if (!strcmp(f, "--timeline")) c->timeline = v;
            else if (!strcmp(f, "--csv")) c->csv_dir = v;
            else if (!strcmp(f, "--html")) c->html = v;
            else c->timeline_gpus = v;
        } else if (!strcmp(f, "--timeline-window")) {
            if (!v) return mt_fail(err, MT_EINVAL, "--timeline-window needs FROM:TO such as 10ms:20ms"), -1;
            if (mt_span_filter_window(&c->tl_filter, v, err) != MT_OK) return mt_error_prefix(err, "--timeline-window"), -1;
        } else {
            return mt_fail(err, MT_EINVAL, "unknown option '%s' (see mitosis simulate --help)", f), -1;
        }
        i += used;
    }
    if (c->po.n_paths == 0) return mt_fail(err, MT_EINVAL, "no trace given (usage: mitosis simulate TRACE --gpus N)"), -1;
    if (!c->timeline && (c->timeline_gpus || c->tl_filter.from > 0 || c->tl_filter.to != MT_TIME_NEVER))
        return mt_fail(err, MT_EINVAL, "--timeline-gpus and --timeline-window need --timeline FILE"), -1;
    if (c->po.plan.gpus == 0 && !c->po.plan.dp && !c->po.plan.tp && !c->po.plan.pp)
        return mt_fail(err, MT_EINVAL, "--gpus is required (or give --dp/--tp/--pp)"), -1;
    return 0;
}

/* Host-model summary: the GPU that waited longest for its host, and whether the step is
 * launch-bound (the host thread's work exceeds the device's). */
static const mt_gpu_stats *most_host_wait(const mt_sim_result *r) {
    const mt_gpu_stats *w = &r->gpus[0];
    for (int32_t i = 1; i < r->n_gpus; i++)
        if (r->gpus[i].host_wait_ps > w->host_wait_ps) w = &r->gpus[i];
    return w;
}

static json_t *result_json(const sim_cli *c, const trace *t, const mt_program *p, const mt_sim_result *r,
                           const char *topology, const mt_hostmodel *host) {
    const mt_plan *pl = &p->plan;
    json_t *o = json_object();
    json_t *plan = mt_planlist_json(pl);
    json_object_set_new(o, "plan", plan);
    json_object_set_new(o, "trace", json_string(t->kineto_path ? t->kineto_path : ""));
    json_object_set_new(o, "topology", topology ? json_string(topology) : json_null());
    json_object_set_new(o, "network", json_string(c->po.net.network));
    json_object_set_new(o, "perf_model", json_string(mt_pm_kind_name(c->po.pm.kind)));
    json_object_set_new(o, "target_gpu", c->po.pm.target_gpu ? json_string(c->po.pm.target_gpu) : json_null());
    json_object_set_new(o, "traced_step_ms", json_real((double)mt_trace_total_dev_ns(t) / 1e6));
    json_object_set_new(o, "step_ms", json_real(ms(r->step_ps) / r->n_steps));
    json_object_set_new(o, "host_model", json_string(host ? "trace" : "none"));
    json_object_set_new(o, "calibration", mt_calibration_json(&c->cal));
    if (host) {
        json_t *h = json_object();
        json_object_set_new(h, "traced_wall_ms", json_real(ms(host->wall_ps)));
        json_object_set_new(h, "traced_host_ms", json_real(ms(host->host_total_ps)));
        json_object_set_new(h, "launch_latency_us", json_real(host->launch_lat_ps / 1e6));
        json_object_set_new(h, "coll_host_us", json_real(host->coll_host_ps / 1e6));
        json_object_set_new(h, "syncs", json_integer(host->n_syncs));
        const mt_gpu_stats *w = most_host_wait(r);
        json_object_set_new(h, "launch_bound", json_boolean(w->host_busy_ps > w->compute_ps));
        json_object_set_new(o, "host", h);
    }
    if (pl->global_batch > 0 && r->step_ps > 0)
        json_object_set_new(o, "samples_per_s", json_real((double)pl->global_batch * r->n_steps / (ms(r->step_ps) / 1e3)));
    mt_whatif_json(&c->wi, r, o);
    json_t *gs = json_array();
    for (int32_t i = 0; i < r->n_gpus; i++) {
        const mt_gpu_stats *g = &r->gpus[i];
        json_t *x = json_object();
        json_object_set_new(x, "rank", json_integer(g->rank));
        json_object_set_new(x, "dp", json_integer(g->dp));
        json_object_set_new(x, "stage", json_integer(g->stage));
        json_object_set_new(x, "tp", json_integer(g->tp));
        json_object_set_new(x, "compute_ms", json_real(ms(g->compute_ps)));
        json_object_set_new(x, "comm_ms", json_real(ms(g->comm_ps)));
        json_object_set_new(x, "exposed_comm_ms", json_real(ms(g->exposed_ps)));
        json_object_set_new(x, "host_wait_ms", json_real(ms(g->host_wait_ps)));
        json_object_set_new(x, "host_busy_ms", json_real(ms(g->host_busy_ps)));
        json_object_set_new(x, "host_sync_ms", json_real(ms(g->host_sync_ps)));
        json_object_set_new(x, "bubble_ms", json_real(ms(g->bubble_ps)));
        json_object_set_new(x, "idle_ms", json_real(ms(g->idle_ps)));
        json_object_set_new(x, "finish_ms", json_real(ms(g->finish_ps)));
        json_object_set_new(x, "peak_live_micro_batches", json_integer(g->peak_live_mb));
        json_object_set_new(x, "peak_mem_bytes", json_real(g->peak_mem_bytes));
        json_array_append_new(gs, x);
    }
    json_object_set_new(o, "gpus", gs);
    json_t *ls = json_array();
    for (int32_t l = 0; l < r->n_layers; l++) {
        json_t *x = json_object();
        json_object_set_new(x, "layer", json_string(t->layers[l].name));
        json_object_set_new(x, "compute_ms", json_real(r->layer_compute_ps[l] / 1e9));
        json_object_set_new(x, "comm_ms", json_real(r->layer_comm_ps[l] / 1e9));
        json_array_append_new(ls, x);
    }
    json_object_set_new(o, "layers", ls);
    json_t *st = json_array();
    for (int32_t s = 0; s < p->n_stages; s++) {
        const mt_stage_program *sp = &p->stages[s];
        json_t *x = json_object();
        json_object_set_new(x, "layer_first", json_integer(sp->layer_first));
        json_object_set_new(x, "layer_last", json_integer(sp->layer_last));
        json_object_set_new(x, "compute_ms", json_real(ms(sp->compute_ps)));
        json_object_set_new(x, "param_bytes", json_real(sp->param_bytes));
        json_object_set_new(x, "activation_bytes_per_micro_batch", json_real(sp->act_bytes_per_mb));
        json_object_set_new(x, "boundary_bytes", json_real(sp->boundary_bytes * pl->batch_factor));
        json_array_append_new(st, x);
    }
    json_object_set_new(o, "stages", st);
    json_t *sim = json_object();
    json_object_set_new(sim, "events", json_integer((json_int_t)r->events));
    json_object_set_new(sim, "collectives", json_integer((json_int_t)r->collectives));
    json_object_set_new(sim, "sends", json_integer((json_int_t)r->sends));
    json_object_set_new(sim, "ddp_buckets", json_integer(p->ddp_buckets));
    json_object_set_new(sim, "tp_split_ops", json_integer(p->tp_split_ops));
    json_object_set_new(sim, "tp_collectives_fwd", json_integer(p->tp_colls_fwd));
    json_object_set_new(sim, "tp_collectives_bwd", json_integer(p->tp_colls_bwd));
    json_object_set_new(sim, "wall_s", json_real(r->sim_wall_s));
    json_object_set_new(o, "simulation", sim);
    json_object_set_new(o, "warning", json_string(p->warning));
    return o;
}

static void print_gpu_row(const mt_gpu_stats *g, const char *label) {
    char name[32];
    if (label) snprintf(name, sizeof name, "%s", label);
    else snprintf(name, sizeof name, "%d", g->rank);
    printf("%6s %4d %5d %4d %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %9.2f\n", name, g->dp, g->stage, g->tp,
           ms(g->compute_ps), ms(g->host_wait_ps), ms(g->comm_ps), ms(g->exposed_ps), ms(g->bubble_ps),
           ms(g->idle_ps), g->peak_mem_bytes / 1e9);
}

static void print_text(const sim_cli *c, const trace *t, const mt_program *p, const mt_sim_result *r,
                       const char *topology, const mt_hostmodel *host) {
    const mt_plan *pl = &p->plan;
    char bucket[32];
    mt_fmt_bytes(pl->bucket_bytes, bucket, sizeof bucket);
    printf("plan       %d GPUs = dp %d x tp %d x pp %d, placement %s, %s collectives\n", pl->gpus, pl->dp,
           pl->tp, pl->pp, pl->placement, mt_coll_algo_name(pl->algo));
    if (pl->dp > 1)
        printf("           data parallel: %s%s%s\n", mt_dp_mode_name(pl->dp_mode),
               pl->dp_mode == MT_DP_DDP ? ", bucket " : "", pl->dp_mode == MT_DP_DDP ? bucket : "");
    if (pl->pp > 1)
        printf("           pipeline: %s, %d micro-batches\n", mt_pp_schedule_name(pl->schedule), pl->micro_batches);
    if (pl->global_batch > 0)
        printf("batch      global %lld, per replica %lld, micro-batch %lld (traced batch %lld)\n",
               (long long)pl->global_batch, (long long)pl->replica_batch, (long long)pl->micro_batch,
               (long long)t->batch_size);
    else
        printf("batch      unknown in the trace: each replica runs the traced batch\n");
    printf("network    %s on %s\n", c->po.net.network, topology ? topology : "its own endpoints");
    printf("op times   %s model%s%s\n", mt_pm_kind_name(c->po.pm.kind), c->po.pm.target_gpu ? ", target GPU " : "",
           c->po.pm.target_gpu ? c->po.pm.target_gpu : "");
    printf("traced     %.3f ms (one GPU: sum of operator device time)", (double)mt_trace_total_dev_ns(t) / 1e6);
    if (host) printf(", wall %.3f ms (host %.3f ms)", ms(host->wall_ps), ms(host->host_total_ps));
    printf("\n");
    mt_calibration_print(&c->cal, stdout);
    if (host) {
        const mt_gpu_stats *w = most_host_wait(r);
        printf("host model trace: launch latency %.1f us, %d synchronising calls, %.1f us per added "
               "collective\n", host->launch_lat_ps / 1e6, host->n_syncs, host->coll_host_ps / 1e6);
        printf("           GPU %d waits %.3f ms (%.0f%% of the step) for its host to launch work%s\n", w->rank,
               ms(w->host_wait_ps), r->step_ps > 0 ? 100.0 * (double)w->host_wait_ps / (double)r->step_ps : 0.0,
               w->host_busy_ps > w->compute_ps ? ": the step is launch-bound (host work exceeds GPU work)" : "");
    } else {
        printf("host model none: GPU time only (--host-model trace adds CPU dispatch and launches)\n");
    }
    printf("step time  %.3f ms", ms(r->step_ps) / r->n_steps);
    if (pl->global_batch > 0 && r->step_ps > 0)
        printf("   (%.1f samples/s)", (double)pl->global_batch * r->n_steps / (ms(r->step_ps) / 1e3));
    printf("\n");
    mt_whatif_print(&c->wi, r);
    if (p->warning[0]) printf("warning    %s\n", p->warning);
    printf("\n%6s %4s %5s %4s %11s %11s %11s %11s %11s %11s %9s\n", "gpu", "dp", "stage", "tp", "compute ms",
           "hostwait ms", "comm ms", "exposed ms", "bubble ms", "idle ms", "mem GB");
    int all = c->per_gpu || r->n_gpus <= 16;
    if (all) {
        for (int32_t i = 0; i < r->n_gpus; i++) print_gpu_row(&r->gpus[i], NULL);
    } else { /* the GPU that finished last, and the one with the most exposed communication */
        int32_t last = 0, worst = 0;
        for (int32_t i = 0; i < r->n_gpus; i++) {
            if (r->gpus[i].finish_ps > r->gpus[last].finish_ps) last = i;
            if (r->gpus[i].exposed_ps > r->gpus[worst].exposed_ps) worst = i;
        }
        char lab[32];
        snprintf(lab, sizeof lab, "%d*", r->gpus[last].rank);
        print_gpu_row(&r->gpus[last], lab);
        if (worst != last) print_gpu_row(&r->gpus[worst], NULL);
        printf("(%d GPUs; * finished last; --per-gpu lists all)\n", r->n_gpus);
    }
    if (c->layers && r->n_layers > 0) {
        printf("\n%-32s %12s %12s\n", "layer", "compute ms", "comm ms");
        for (int32_t l = 0; l < r->n_layers; l++)
            printf("%-32.32s %12.3f %12.3f\n", t->layers[l].name, r->layer_compute_ps[l] / 1e9,
                   r->layer_comm_ps[l] / 1e9);
    }
    printf("\nsimulated  %llu events, %llu collectives, %llu pipeline sends in %.3f s\n",
           (unsigned long long)r->events, (unsigned long long)r->collectives, (unsigned long long)r->sends,
           r->sim_wall_s);
}

/* The recorder, the timeline file and the progress line of one run (what --timeline, --csv,
 * --html and a terminal ask for); everything here is released by outputs_free. */
typedef struct outputs {
    mt_recorder rec;
    const mt_span_filter *tl_filter; /* the recorder's, or the CLI's when --csv wants every span */
    FILE *tf;
    mt_progress progress;
    mt_span_filter html_gpus;        /* the GPUs the HTML timeline draws */
    const mt_span_filter *html_draw; /* html_gpus, or the recorder's when only the HTML records */
    int html_pending;                /* created empty before the run, not written yet */
} outputs;

/* Opens what the run will write (so a bad path fails before the simulation) and hooks the
 * recorder and the progress line into cfg. */
static mt_status outputs_open(outputs *o, sim_cli *c, const trace *t, mt_simrun_cfg *cfg, mt_error *err) {
    mt_plan pl = mt_planopts_plan(&c->po, 0); /* resolved here only to know N */
    MT_CHECK(mt_plan_resolve(&pl, t, err));
    if (c->timeline_gpus && mt_span_filter_ranks(&c->tl_filter, c->timeline_gpus, pl.gpus, err) != MT_OK)
        return mt_error_prefix(err, "--timeline-gpus");
    if (c->csv_dir) MT_CHECK(mt_csv_prepare_dir(c->csv_dir, err));
    if (c->timeline && !(o->tf = fopen(c->timeline, "w")))
        return mt_fail(err, MT_EIO, "cannot write the timeline '%s': %s (choose a writable path)", c->timeline,
                       strerror(errno));
    if (c->html) {
        FILE *hf = fopen(c->html, "w");
        if (!hf)
            return mt_fail(err, MT_EIO, "cannot write the HTML report '%s': %s (choose a writable path)", c->html,
                           strerror(errno));
        fclose(hf);
        o->html_pending = 1;
        MT_CHECK(mt_cli_html_gpus(&o->html_gpus, t, &pl, err));
        o->html_draw = &o->html_gpus;
        if (!c->timeline && !c->csv_dir) { /* record only what the HTML timeline shows */
            o->rec.filter = o->html_gpus;
            mt_span_filter_init(&o->html_gpus);
            o->html_draw = &o->rec.filter;
        }
    }
    if (c->timeline || c->csv_dir || c->html) {
        cfg->sim.on_span = mt_recorder_span;
        cfg->sim.span_ctx = &o->rec;
    }
    if (c->timeline) {
        cfg->on_link = mt_recorder_link;
        cfg->link_ctx = &o->rec;
        if (c->csv_dir || c->html) {
            o->tl_filter = &c->tl_filter; /* others want every span: filter when drawing */
        } else { /* record only what the timeline shows */
            o->rec.filter = c->tl_filter;
            mt_span_filter_init(&c->tl_filter);
            o->tl_filter = &o->rec.filter;
        }
    }
    mt_progress_init(&o->progress, stderr, pl.gpus);
    cfg->sim.on_progress = mt_progress_update;
    cfg->sim.progress_ctx = &o->progress;
    return MT_OK;
}

static mt_status outputs_write(outputs *o, const sim_cli *c, const mt_simrun *run, mt_error *err) {
    mt_report_src src = {run->prog, run->res, &o->rec, run->topo, run->flow, c->po.gpus_per_node};
    if (c->timeline) {
        MT_CHECK(mt_timeline_write(&src, o->tl_filter, o->tf, c->timeline, err));
        FILE *f = o->tf;
        o->tf = NULL;
        if (fclose(f) != 0)
            return mt_fail(err, MT_EIO, "cannot write the timeline '%s': %s (check the disk space or choose "
                           "another path)", c->timeline, strerror(errno));
    }
    if (c->csv_dir) MT_CHECK(mt_csv_write_dir(&src, c->csv_dir, err));
    if (c->html) {
        mt_html_report rep = {.title = "mitosis simulate"};
        MT_CHECK(mt_cli_html_write(c->html, &rep, &c->po, run->prog->trace, run, &o->rec, o->html_draw, err));
        o->html_pending = 0;
    }
    return MT_OK;
}

/* A timeline still open here, or an HTML report not written, goes. */
static void outputs_free(outputs *o, const sim_cli *c) {
    if (o->tf) {
        fclose(o->tf);
        remove(c->timeline);
    }
    if (o->html_pending) remove(c->html);
    mt_span_filter_destroy(&o->html_gpus);
    mt_recorder_destroy(&o->rec);
}

int cmd_simulate(int argc, char **argv) {
    sim_cli c;
    memset(&c, 0, sizeof c);
    mt_planopts_init(&c.po);
    mt_span_filter_init(&c.tl_filter);
    mt_simrun_cfg cfg;
    mt_simrun_cfg_init(&cfg);
    mt_error err = {0};
    if (mt_whatif_init(&c.wi, &err) != MT_OK) return mt_cli_fail("simulate", &err);
    int pr = parse_args(&c, argc, argv, &err);
    if (pr != 0) {
        mt_span_filter_destroy(&c.tl_filter);
        mt_whatif_free(&c.wi);
        return pr > 0 ? 0 : mt_cli_fail("simulate", &err);
    }

    trace *t = NULL;
    mt_perfmodel *pm = NULL;
    mt_simrun run;
    memset(&run, 0, sizeof run);
    outputs outs;
    memset(&outs, 0, sizeof outs);
    mt_recorder_init(&outs.rec);
    mt_span_filter_init(&outs.html_gpus);
    int code = 0;
    mt_status rc = mt_planopts_load(&c.po, &t, &pm, &err);
    if (rc == MT_OK) rc = mt_calibrate(&c.po, t, pm, &c.cal, &err);
    if (rc == MT_OK) {
        cfg.plan = mt_planopts_plan(&c.po, 0);
        cfg.net = c.po.net;
        cfg.sim.ranks_per_node = c.po.gpus_per_node;
        cfg.host_model = c.po.host_model;
        cfg.host_scale = c.po.host_scale;
        cfg.op_scale = c.po.op_scale;
        rc = outputs_open(&outs, &c, t, &cfg, &err);
    }
    if (rc == MT_OK) {
        mt_whatif_configure(&c.wi, t, &c.po.pm, &cfg);
        rc = mt_whatif_baseline(&c.wi, t, pm, &cfg, &err);
        if (rc == MT_OK) rc = mt_simrun_run(t, pm, &cfg, &run, &err);
        mt_progress_end(&outs.progress);
    }
    if (rc != MT_OK) {
        code = mt_cli_fail("simulate", &err);
        goto out;
    }
    const char *topology = run.topology[0] ? run.topology : NULL;
    mt_sim_result *res = run.res;
    if (c.as_json) {
        json_t *o = result_json(&c, t, run.prog, res, topology, run.host);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        if (s) puts(s);
        free(s);
        json_decref(o);
    } else {
        print_text(&c, t, run.prog, res, topology, run.host);
    }
    if (outputs_write(&outs, &c, &run, &err) != MT_OK) {
        code = mt_cli_fail("simulate", &err);
        goto out;
    }
    /* warnings only once everything succeeded: a failing run's stderr is its one error line */
    mt_planopts_warn(pm, "simulate");
    double limit = mt_planopts_mem_limit(&c.po, t);
    if (limit > 0) {
        int32_t worst = 0;
        for (int32_t i = 0; i < res->n_gpus; i++)
            if (res->gpus[i].peak_mem_bytes > res->gpus[worst].peak_mem_bytes) worst = i;
        if (res->gpus[worst].peak_mem_bytes > limit)
            fprintf(stderr, "mitosis simulate: warning: GPU %d needs an estimated %.2f GB, more than the "
                            "%.2f GB limit (--gpu-mem)\n", worst, res->gpus[worst].peak_mem_bytes / 1e9, limit / 1e9);
    }
out:
    outputs_free(&outs, &c);
    mt_span_filter_destroy(&c.tl_filter);
    mt_whatif_free(&c.wi);
    mt_simrun_free(&run);
    mt_perfmodel_free(pm);
    mt_trace_free(t);
    return code;
}

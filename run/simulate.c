/* run/simulate.c — see simulate.h. */
#include "run/simulate.h"

#include "extrapolate/blocks.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "extrapolate/blocks.h"
#include "extrapolate/traced.h"
#include "report/chakra.h"
#include "report/csvout.h"
#include "report/kineto.h"
#include "report/progress.h"
#include "report/record.h"
#include "report/timeline.h"
#include "util/budget.h"
#include "util/fileio.h"
#include "util/outpath.h"
#include "util/units.h"

void mt_sim_outputs_init(mt_sim_outputs *o) {
    memset(o, 0, sizeof *o);
    o->window_to = MT_TIME_NEVER;
}

mt_status mt_sim_outputs_window(mt_sim_outputs *o, const char *spec, mt_error *err) {
    mt_span_filter f;
    mt_span_filter_init(&f);
    if (mt_span_filter_window(&f, spec, err) != MT_OK) return mt_error_prefix(err, "--timeline-window");
    o->window_from = f.from;
    o->window_to = f.to;
    return MT_OK;
}

mt_status mt_sim_outputs_check(const mt_sim_outputs *o, mt_error *err) {
    if (!o->timeline && (o->timeline_gpus || o->window_from > 0 || o->window_to != MT_TIME_NEVER))
        return mt_fail(err, MT_EINVAL, "--timeline-gpus and --timeline-window need --timeline FILE");
    if (!o->chakra_dir && (o->chakra_json || o->chakra_ranks || o->chakra_comm_only))
        return mt_fail(err, MT_EINVAL, "--chakra-json, --chakra-ranks and --chakra-comm-only need --chakra DIR");
    if (!o->kineto_dir && o->kineto_ranks) return mt_fail(err, MT_EINVAL, "--kineto-ranks needs --kineto DIR");
    return MT_OK;
}

/* The recorder, the timeline file and the progress line of one run; released by outs_free. */
typedef struct outs {
    const mt_sim_outputs *o;
    mt_recorder rec;
    mt_span_filter tl;               /* what the timeline shows */
    const mt_span_filter *tl_draw;   /* tl, or the recorder's when only the timeline records */
    mt_out_file tf;                  /* the timeline, a temporary until it is complete */
    mt_out_dir csv, ck, kt;          /* --csv, --chakra, --kineto: staged, moved in on success */
    mt_progress progress;
    mt_span_filter html_gpus;        /* the GPUs the HTML timeline draws */
    const mt_span_filter *html_draw; /* html_gpus, or the recorder's when only the HTML records */
    mt_span_filter ck_ranks;         /* the ranks --chakra writes */
    mt_span_filter kt_ranks;         /* the ranks --kineto writes */
    const mt_simrun *run;            /* the run written */
} outs;

static void outs_init(outs *w, const mt_sim_outputs *o) {
    memset(w, 0, sizeof *w);
    w->o = o;
    mt_recorder_init(&w->rec);
    mt_span_filter_init(&w->tl);
    mt_span_filter_init(&w->html_gpus);
    mt_span_filter_init(&w->ck_ranks);
    mt_span_filter_init(&w->kt_ranks);
}

/* A timeline still open, or output folders not completed, go (their temporaries; what was there stays). */
static void outs_free(outs *w) {
    mt_out_close(&w->tf, MT_EINTERNAL, NULL);
    mt_out_dir_close(&w->csv, MT_EINTERNAL, NULL);
    mt_out_dir_close(&w->ck, MT_EINTERNAL, NULL);
    mt_out_dir_close(&w->kt, MT_EINTERNAL, NULL);
    mt_span_filter_destroy(&w->tl);
    mt_span_filter_destroy(&w->html_gpus);
    mt_span_filter_destroy(&w->ck_ranks);
    mt_span_filter_destroy(&w->kt_ranks);
    mt_recorder_destroy(&w->rec);
}

/* 1 when o writes one output only (the one being opened): its filter is then the recorder's, which
 * records only what it shows. */
static int alone(const mt_sim_outputs *o) {
    int n = 0;
    for (int k = 0; k < MT_N_OUTPUTS; k++) n += mt_sim_output_path(o, &MT_OUTPUTS[k]) != NULL;
    return n == 1;
}

/* ---- the writers, one pair per row of MT_SIM_OUTPUTS (run/outputs.h) ----------------------- */

static mt_status open_timeline(outs *w, mt_simrun *run, mt_error *err) {
    const mt_sim_outputs *o = w->o;
    MT_CHECK(mt_out_open(&w->tf, o->timeline, "the timeline", err));
    run->on_link = mt_recorder_link;
    run->link_ctx = &w->rec;
    w->tl_draw = &w->tl;
    if (alone(o)) { /* only what the timeline shows */
        w->rec.filter = w->tl;
        mt_span_filter_init(&w->tl);
        w->tl_draw = &w->rec.filter;
    }
    return MT_OK;
}

static mt_status write_timeline(outs *w, const mt_run_summary *sum, const mt_report_src *src, mt_error *err) {
    (void)sum;
    return mt_out_close(&w->tf, mt_timeline_write(src, w->tl_draw, w->tf.f, w->o->timeline, err), err);
}

static mt_status open_csv(outs *w, mt_simrun *run, mt_error *err) {
    (void)run;
    return mt_out_dir_open(&w->csv, w->o->csv_dir, "csv", "CSV directory", MT_CSV_FILES, err);
}

static mt_status write_csv(outs *w, const mt_run_summary *sum, const mt_report_src *src, mt_error *err) {
    (void)sum;
    return mt_out_dir_close(&w->csv, mt_csv_write_dir(src, mt_out_dir_path(&w->csv), err), err);
}

static mt_status open_html(outs *w, mt_simrun *run, mt_error *err) {
    const mt_sim_outputs *o = w->o;
    MT_CHECK(mt_out_probe(o->html, "the HTML report", err)); /* a bad path fails before the run */
    MT_CHECK(mt_summary_html_gpus(&w->html_gpus, run->plan.gpus, err));
    w->html_draw = &w->html_gpus;
    if (alone(o)) { /* only what the HTML timeline shows */
        w->rec.filter = w->html_gpus;
        mt_span_filter_init(&w->html_gpus);
        w->html_draw = &w->rec.filter;
    }
    return MT_OK;
}

static mt_status write_html(outs *w, const mt_run_summary *sum, const mt_report_src *src, mt_error *err) {
    (void)src;
    mt_html_report rep = {.title = "mitosis simulate"};
    return mt_summary_html_write(w->o->html, &rep, sum, &w->rec, w->html_draw, err);
}

/* --chakra: the directory made, the ranks parsed; alone, the recorder keeps only those ranks. */
static mt_status open_chakra(outs *w, mt_simrun *run, mt_error *err) {
    const mt_sim_outputs *o = w->o;
    if (o->chakra_ranks && mt_span_filter_ranks(&w->ck_ranks, o->chakra_ranks, run->plan.gpus, err) != MT_OK)
        return mt_error_prefix(err, "--chakra-ranks");
    MT_CHECK(mt_out_dir_open(&w->ck, o->chakra_dir, "chakra", "Chakra directory", MT_OUT_CHAKRA_FILES, err));
    if (alone(o)) {
        w->rec.filter = w->ck_ranks;
        mt_span_filter_init(&w->ck_ranks);
    }
    return MT_OK;
}

static mt_status write_chakra(outs *w, const mt_run_summary *sum, const mt_report_src *src, mt_error *err) {
    (void)sum;
    const mt_sim_outputs *o = w->o;
    mt_ckx_src cs = {src->prog, &w->rec, w->run->plan.gpus, w->run->sim.ranks_per_node};
    mt_ckx_stats st;
    const mt_span_filter *keep = o->chakra_ranks ? (w->ck_ranks.keep ? &w->ck_ranks : &w->rec.filter) : NULL;
    mt_ckx_opts co = {o->chakra_json, o->chakra_comm_only};
    return mt_out_dir_close(&w->ck, mt_ckx_write(&cs, mt_out_dir_path(&w->ck), keep, &co, &st, err), err);
}

/* --kineto: as --chakra (report/kineto.h). */
static mt_status open_kineto(outs *w, mt_simrun *run, mt_error *err) {
    const mt_sim_outputs *o = w->o;
    if (o->kineto_ranks && mt_span_filter_ranks(&w->kt_ranks, o->kineto_ranks, run->plan.gpus, err) != MT_OK)
        return mt_error_prefix(err, "--kineto-ranks");
    MT_CHECK(mt_out_dir_open(&w->kt, o->kineto_dir, "kineto", "Kineto directory", MT_OUT_KINETO_FILES, err));
    if (alone(o)) {
        w->rec.filter = w->kt_ranks;
        mt_span_filter_init(&w->kt_ranks);
    }
    return MT_OK;
}

static mt_status write_kineto(outs *w, const mt_run_summary *sum, const mt_report_src *src, mt_error *err) {
    (void)sum;
    const mt_sim_outputs *o = w->o;
    const mt_span_filter *keep = o->kineto_ranks ? (w->kt_ranks.keep ? &w->kt_ranks : &w->rec.filter) : NULL;
    return mt_out_dir_close(&w->kt, mt_kineto_write(src, mt_out_dir_path(&w->kt), keep, err), err);
}

static const struct {
    mt_status (*open)(outs *w, mt_simrun *run, mt_error *err);
    mt_status (*write)(outs *w, const mt_run_summary *sum, const mt_report_src *src, mt_error *err);
} WRITERS[MT_N_OUTPUTS] = {
#define WRITER_(name, ...) {open_##name, write_##name},
    MT_SIM_OUTPUTS(WRITER_)
#undef WRITER_
};

/* Opens what the run will write (so a bad path fails before the simulation) and hooks the
 * recorder and the progress line into run. */
static mt_status outs_open(outs *w, mt_simrun *run, mt_error *err) {
    const mt_sim_outputs *o = w->o;
    int32_t gpus = run->plan.gpus;
    w->run = run;
    w->rec.max_bytes = o->max_record_bytes;
    w->tl.from = o->window_from;
    w->tl.to = o->window_to;
    if (o->timeline_gpus && mt_span_filter_ranks(&w->tl, o->timeline_gpus, gpus, err) != MT_OK)
        return mt_error_prefix(err, "--timeline-gpus");
    int any = 0;
    for (int k = 0; k < MT_N_OUTPUTS; k++)
        if (mt_sim_output_path(o, &MT_OUTPUTS[k])) {
            MT_CHECK(WRITERS[k].open(w, run, err));
            any = 1;
        }
    if (any) {
        run->sim.on_span = mt_recorder_span;
        run->sim.span_ctx = &w->rec;
    }
    if (o->on_progress) { /* a caller's (mitosis serve) */
        run->sim.on_progress = o->on_progress;
        run->sim.progress_ctx = o->progress_ctx;
    } else if (o->progress) {
        mt_progress_init(&w->progress, o->progress, gpus);
        run->sim.on_progress = mt_progress_update;
        run->sim.progress_ctx = &w->progress;
    }
    return MT_OK;
}

/* The early writers first (they read the spans in recording order), then the others, each in the
 * table's order. */
static mt_status outs_write(outs *w, const mt_simulation *s, const mt_run_summary *sum, const mt_run_config *c,
                            mt_error *err) {
    const mt_simrun *run = &s->run;
    mt_report_src src = {run->prog, run->res, &w->rec, run->topo, &run->net, c->gpus_per_node};
    for (int early = 1; early >= 0; early--)
        for (int k = 0; k < MT_N_OUTPUTS; k++)
            if (MT_OUTPUTS[k].early == early && mt_sim_output_path(w->o, &MT_OUTPUTS[k]))
                MT_CHECK(WRITERS[k].write(w, sum, &src, err));
    return MT_OK;
}

/* The built run's cost (twice with a what-if baseline), refused when over the machine's memory;
 * a long one says so on o->notices before it starts. */
static mt_status estimate(const mt_run_config *c, const outs *w, mt_simulation *out, mt_error *err) {
    mt_estimate *e = &out->est;
    mt_estimate_of(&out->run, e);
    if (mt_whatif_perturbs(c)) { /* the unperturbed baseline runs too */
        e->events *= 2;
        e->seconds *= 2;
    }
    MT_CHECK(mt_estimate_check_mem(e->mem_bytes, e->gpus, err));
    MT_CHECK(mt_estimate_check_budget(e, "the run", err)); /* a server's limits (util/budget.h) */
    if (c->dry_run || !w->o->notices || !mt_estimate_long(e)) return MT_OK;
    char line[384];
    fprintf(w->o->notices, "estimate   %s; --dry-run to stop here\n", mt_estimate_text(e, &out->run.plan, line,
                                                                                     sizeof line));
    fflush(w->o->notices);
    return MT_OK;
}

static mt_status run_all(const mt_run_config *c, const mt_run_input *in, outs *w, mt_simulation *out,
                         mt_error *err) {
    mt_simrun_cfg cfg = mt_simrun_cfg_of(c, 0);
    if (w->o->chakra_dir && cfg.plan.algo == MT_ALGO_NCCL)
        return mt_fail(err, MT_EINVAL, "--chakra writes each collective with its schedule, and NCCL's tuner's "
                       "choices (protocol, efficiency) have none in Chakra: drop --algo nccl (--chakra runs rings)");
    if (w->o->chakra_dir) /* the graph's collectives as schedules its readers run (ASTRA-sim's rings) */
        cfg.auto_rings = "--chakra";
    mt_whatif_configure(&out->wi, c, in->t, &cfg);
    MT_CHECK(mt_estimate_check_plan(&cfg.plan, err));
    MT_CHECK(mt_simrun_build(in->t, in->pm, &cfg, &out->run, err));
    MT_CHECK(estimate(c, w, out, err)); /* refused over a server's limits first: the clearer message */
    MT_CHECK(mt_budget_check(err)); /* cancelled while it was built (util/budget.h; no budget: never) */
    if (c->dry_run) {
        out->dry = 1;
        return MT_OK;
    }
    MT_CHECK(outs_open(w, &out->run, err));
    if (mt_whatif_perturbs(c)) {
        mt_simrun_cfg b = mt_whatif_unperturbed(&cfg);
        if (mt_simrun_run(in->t, in->pm, &b, &out->base, err) != MT_OK)
            return mt_error_prefix(err, "the unperturbed baseline run");
        out->has_base = 1;
    }
    mt_status rc = mt_simrun_exec(&out->run, err);
    if (w->o->progress) mt_progress_end(&w->progress);
    return rc;
}

/* 1 when the run is the trace as it ran (report/replay.h's invariant): one GPU for a single-rank
 * trace, the traced world size with its own collectives for a rank of a multi-rank job; traced
 * batch, GPU and operator times, no what-if, the traced blocks (no --blocks). */
static int at_traced_plan(const mt_run_config *c, const mt_trace *t, const mt_calibration *cal, const mt_simulation *s) {
    const mt_plan *pl = &s->run.prog->plan;
    mt_traced_plan tp;
    mt_traced_plan_read(t, &tp);
    int32_t world = tp.multi_rank ? tp.world_size : 1;
    /* the scales are the traced times' own, or those of a calibration to the measured step */
    int scaled = cal->on ? c->op_scale != cal->op_scale || c->host_scale != cal->host_scale
                         : c->op_scale != 1 || c->host_scale != 1;
    return !s->has_base && !c->blocks && !c->seq && !c->pm.target_gpu && c->pm.kind == MT_PM_TRACE && !scaled &&
           pl->gpus == world && pl->dp == world && pl->batch_factor == 1 &&
           pl->micro_batches == 1 && (!tp.multi_rank || pl->comm == MT_COMM_TRACED);
}

mt_status mt_run_simulate(const mt_run_config *c, const mt_run_input *in, const mt_sim_outputs *o,
                          mt_simulation *out, mt_error *err) {
    memset(out, 0, sizeof *out);
    outs w;
    outs_init(&w, o);
    mt_status rc = run_all(c, in, &w, out, err);
    if (rc == MT_OK && !out->dry) {
        const mt_sim_result *r = out->run.res;
        for (int32_t i = 0; i < r->n_gpus; i++)
            if (r->gpus[i].peak_mem_bytes > r->gpus[out->worst_mem_gpu].peak_mem_bytes) out->worst_mem_gpu = i;
        out->mem_limit = mt_run_mem_limit(c, in->t, NULL);
        mt_trace_warning(in->t, out->trace_warning, sizeof out->trace_warning);
        mt_simulation_mem_warning(out, out->mem_warning, sizeof out->mem_warning);
        const mt_plan *pl = &out->run.prog->plan;
        mt_run_device_host_warning(&in->dev, (double)in->t->n_ops / (pl->pp > 0 ? pl->pp : 1),
                                   (double)r->step_ps / 1e9 / (r->n_steps > 0 ? r->n_steps : 1), out->host_warning,
                                   sizeof out->host_warning);
        struct rusage u; /* Linux counts KiB */
        out->peak_rss_bytes = getrusage(RUSAGE_SELF, &u) == 0 ? (double)u.ru_maxrss * 1024.0 : 0;
        mt_replay_of(in->t, out->run.prog, r, out->run.host, &in->commfit, at_traced_plan(c, in->t, &in->cal, out), &out->replay);
        double measured = in->cal.on ? in->cal.measured_ms : 0;
        if (!in->cal.on && in->t->dist.world_size <= 1 &&
            mt_trace_meta_measured(c->paths[0], in->t, &measured, (char[512]){0}, 512, NULL) != MT_OK)
            measured = 0;
        mt_replay_measured(&out->replay, measured, in->cal.on && in->cal.calibrated_ms > 0);
        mt_run_summary sum = mt_simulation_summary(out, c, in);
        rc = outs_write(&w, out, &sum, c, err);
        out->files_cut_ps = w.rec.cut_ps;
    }
    outs_free(&w);
    if (rc != MT_OK) mt_simulation_free(out);
    return rc;
}

void mt_simulation_free(mt_simulation *s) {
    if (!s) return;
    mt_simrun_free(&s->run); /* a dry run's too: built, never executed */
    if (s->has_base) mt_simrun_free(&s->base);
    memset(s, 0, sizeof *s);
}

mt_run_summary mt_simulation_summary(const mt_simulation *s, const mt_run_config *c, const mt_run_input *in) {
    mt_run_summary sum = {
        .t = in->t, .prog = s->run.prog, .res = s->run.res, .host = s->run.host,
        .topology = s->run.topology[0] ? s->run.topology : NULL, .network = mt_netcfg_model_name(&c->net),
        .perf_model = c->pm.kind, .target_gpu = c->pm.target_gpu, .op_times = in->dev.label,
        .cpu_ranks = in->dev.cpu_ranks, .host_scale = c->host_scale,
        .op_scale = c->op_scale, .mem_limit = s->mem_limit, .cal = &in->cal,
        .base = s->has_base ? s->base.res : NULL, .peak_rss_bytes = s->peak_rss_bytes,
        .replay = &s->replay, .commfit = &in->commfit, .comm_slow = s->run.comm_slow_why,
    };
    if (c->seq > 0) sum.seq = in->seq.asked, sum.traced_seq = in->seq.traced;
    if (in->traced && c->blocks > 0) {
        mt_blocks b;
        mt_blocks_find(in->traced, &b);
        sum.blocks = c->blocks, sum.traced_blocks = b.count;
    }
    const char *w[MT_SUMMARY_WARNINGS] = {s->trace_warning, mt_perfmodel_warning(in->pm), s->mem_warning,
                                          s->host_warning, s->run.algo_why};
    for (int k = 0; k < MT_SUMMARY_WARNINGS; k++)
        if (w[k] && *w[k]) sum.warnings[sum.n_warnings++] = w[k];
    return sum;
}

int mt_simulation_mem_warning(const mt_simulation *s, char *buf, size_t len) {
    const mt_gpu_stats *g = &s->run.res->gpus[s->worst_mem_gpu];
    if (!(s->mem_limit > 0) || !(g->peak_mem_bytes > s->mem_limit)) return 0;
    char need[32], lim[32];
    snprintf(buf, len, "GPU %d needs an estimated %s, more than the %s limit (--gpu-mem)", s->worst_mem_gpu,
             mt_fmt_bytes(g->peak_mem_bytes, need, sizeof need), mt_fmt_bytes(s->mem_limit, lim, sizeof lim));
    return 1;
}

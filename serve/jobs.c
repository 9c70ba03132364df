/* serve/jobs.c — see jobs.h. */
#include "serve/jobs.h"

#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/clusterrep.h"
#include "report/comparison.h"
#include "report/jsonw.h"
#include "report/summary.h"
#include "report/verdict.h"
#include "report/waits.h"
#include "run/cluster.h"
#include "run/compare.h"
#include "run/job.h"
#include "run/pool.h"
#include "run/simrun.h"
#include "util/budget.h"
#include "util/units.h"

typedef enum { QUEUED = 0, RUNNING, DONE, FAILED, CANCELLED } job_state;
static const char *const STATE_NAMES[] = {"queued", "running", "done", "failed", "cancelled"};

/* The files a run may have, by name (the only names a download may ask for); `want`: the request
 * bit that asks for it (0: always written). The two JSON files, then the output table's (run/
 * outputs.h) that the server writes: those it always writes, then those a request asks for. */
typedef struct file_kind {
    char name[64];
    const char *type;
    unsigned want;
} file_kind;
enum { MAX_FILES = 32 };
static file_kind FILES[MAX_FILES];
static int N_FILES;
static pthread_once_t FILES_ONCE = PTHREAD_ONCE_INIT;

static void add_file(const char *dir, const char *name, const char *type, unsigned want) {
    if (N_FILES == MAX_FILES) abort(); /* the table is the build's: caught by any test of the server */
    file_kind *f = &FILES[N_FILES++];
    snprintf(f->name, sizeof f->name, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
    f->type = type;
    f->want = want;
}

static void files_init(void) {
    add_file(NULL, "result.json", "application/json", 0);
    add_file(NULL, "cluster.json", "application/json", 0); /* a cluster run's job file (serve/clusterreq.h) */
    for (int always = 1; always >= 0; always--)
        for (int k = 0; k < MT_N_OUTPUTS; k++) {
            const mt_output *d = &MT_OUTPUTS[k];
            if (!d->web || (strcmp(d->name, MT_JOBS_ALWAYS) == 0) != always) continue;
            unsigned want = always ? 0 : mt_jobs_want_bit(d->name);
            if (!d->files) add_file(NULL, d->web, d->mime, want);
            for (int i = 0; d->files && d->files[i]; i++) add_file(d->web, d->files[i], d->mime, want);
        }
}

unsigned mt_jobs_want_bit(const char *name) {
    const mt_output *d = mt_output_find(name);
    return d && d->web && strcmp(d->name, MT_JOBS_ALWAYS) ? 1u << (d - MT_OUTPUTS) : 0;
}

enum { PATH_MAX_ = 1200 };

typedef struct job {
    int id;
    mt_serve_opts o;          /* the worker's while it runs; freed after */
    mt_serve_cmd cmd;
    unsigned want;            /* MT_JOBS_WANT_* */
    char trace_id[200];
    json_t *request;
    job_state state;
    mt_budget budget;         /* bound to the worker while it runs; cancelled by mt_jobs_cancel */
    int32_t done, total;      /* compare: plans run of total */
    char label[128];
    double t_submit, t_start, t_end;
    char error[MT_ERRMSG_MAX];
    char note[256];           /* files cut or dropped at max_run_bytes ("" none) */
    char dir[PATH_MAX_];
    unsigned files;           /* bit k: FILES[k] exists */
    double bytes;             /* its files on disk and what it holds in memory (kept_bytes counts it) */
    double mem_bytes;         /* what it holds in memory: the struct and its request */
} job;

struct mt_jobs {
    const mt_catalog *cat;    /* its paths are never shown (mt_catalog_redact) */
    mt_jobs_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *workers;
    int n_workers;
    int stop;
    job **v;                  /* by id - 1; NULL once removed */
    int n, cap, next;         /* next: the oldest run that may still be queued */
    int queued;
    int kept;                 /* finished runs not removed */
    double kept_bytes;
    char dir[PATH_MAX_ - 64];
};

void mt_jobs_config_init(mt_jobs_config *c) {
    memset(c, 0, sizeof *c);
    c->workers = 2;
    c->max_queued = 64;
    c->keep_runs = 200;
    c->keep_bytes = 1024.0 * 1024 * 1024;
    c->max_run_s = 600;
    c->max_events = 2e9;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    double have = pages > 0 && page > 0 ? (double)pages * (double)page : 8.0 * 1024 * 1024 * 1024;
    c->max_mem_bytes = have / 3; /* (workers + 1) at the default 2 workers */
    c->max_run_bytes = 64.0 * 1024 * 1024;
}

/* ---- the runs ------------------------------------------------------------------------------ */

typedef struct progress_ctx {
    mt_jobs *j;
    job *jb;
} progress_ctx;

static void on_progress(void *ctx, int32_t i, int32_t n, const char *label) {
    progress_ctx *p = ctx;
    pthread_mutex_lock(&p->j->mu);
    p->jb->done = i;
    p->jb->total = n;
    snprintf(p->jb->label, sizeof p->jb->label, "%s", label ? label : "");
    pthread_mutex_unlock(&p->j->mu);
}

/* The simulation's progress (sim/simulate.h): tasks done of every GPU's program. */
static void on_sim_progress(void *ctx, int64_t done, int64_t total) {
    progress_ctx *p = ctx;
    pthread_mutex_lock(&p->j->mu);
    p->jb->done = (int32_t)(done > INT32_MAX ? INT32_MAX : done);
    p->jb->total = (int32_t)(total > INT32_MAX ? INT32_MAX : total);
    snprintf(p->jb->label, sizeof p->jb->label, "tasks simulated");
    pthread_mutex_unlock(&p->j->mu);
}

/* The words the page says from report/ (docs/serve.md): "holdback" (report/verdict.h), the largest
 * GPU's "peak_mem_bytes" (the holdback's), "waits" (report/waits.h: the text's waits lines) and
 * the what-if's "change_pct" (the what-if line's). */
static mt_status add_words(json_t *res, const mt_run_summary *s, mt_error *err) {
    mt_hold_parts parts;
    mt_holdback hb;
    mt_hold_parts_of(s->res, s->mem_limit, &parts);
    mt_holdback_of(&parts, &hb);
    json_object_set_new(res, "holdback", mt_holdback_json(&hb));
    json_object_set_new(res, "peak_mem_bytes", json_real(parts.mem_bytes));
    json_t *wi = json_object_get(res, "whatif");
    if (wi && s->base) json_object_set_new(wi, "change_pct", json_real(mt_whatif_change_pct(s->res, s->base)));
    mt_waits w;
    json_t *wj = mt_waits_of(s->prog, s->res, MT_WAITS_LINES, &w) == 0 ? mt_waits_json(&w) : NULL;
    mt_waits_free(&w);
    if (!wj || json_object_set_new(res, "waits", wj) != 0) return mt_fail(err, MT_ENOMEM, "out of memory listing the waits");
    return MT_OK;
}

/* The speed-up over one GPU (run/compare.h's baseline, report/verdict.h's rule, as compare's rows),
 * into a simulate result: "one_gpu" {step_ms, global_batch}, "speedup", "efficiency" (null when
 * the baseline could not run: "speedup_note" says why). A cancel or the wall limit during the
 * baseline is the run's error. */
static mt_status add_verdict(json_t *res, const mt_simulation *sim, const mt_run_config *rc, const mt_run_input *in,
                             mt_error *err) {
    double base_ms = 0;
    int64_t base_batch = 0;
    mt_error e = {0};
    mt_status st = mt_compare_baseline(rc, in, &base_ms, &base_batch, NULL, &e);
    if (st != MT_OK && mt_budget_stopped(mt_budget_current()) != MT_BUDGET_GO) return mt_budget_check(err);
    if (st != MT_OK) {
        json_object_set_new(res, "speedup", json_null());
        json_object_set_new(res, "efficiency", json_null());
        json_object_set_new(res, "speedup_note", json_string(e.msg));
        return MT_OK;
    }
    double sp = mt_speedup(&sim->run.plan, mt_simrun_step_ms(&sim->run), base_batch, base_ms);
    int32_t g = sim->run.plan.gpus > 0 ? sim->run.plan.gpus : 1;
    json_object_set_new(res, "one_gpu",
                        json_pack("{s:f, s:I}", "step_ms", base_ms, "global_batch", (json_int_t)base_batch));
    json_object_set_new(res, "speedup", json_real(sp));
    json_object_set_new(res, "efficiency", json_real(sp / g));
    return MT_OK;
}

/* Each compare row's efficiency (its speed-up / its GPUs) and what holds it back (its busiest
 * GPU's parts: report/comparison.h). */
static void add_row_verdicts(json_t *res, double mem_limit) {
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(res, "rows"), i, row) {
        double gpus = (double)json_integer_value(json_object_get(json_object_get(row, "plan"), "gpus"));
        double sp = json_number_value(json_object_get(row, "speedup"));
        json_object_set_new(row, "efficiency", gpus > 0 ? json_real(sp / gpus) : json_null());
        double base = json_number_value(json_object_get(row, "unperturbed_step_ms"));
        if (base > 0)
            json_object_set_new(row, "change_pct", json_real(mt_change_pct(base, json_number_value(json_object_get(row, "step_ms")))));
        mt_hold_parts p = {.step_ms = json_number_value(json_object_get(row, "step_ms")),
                           .exposed_ms = json_number_value(json_object_get(row, "exposed_comm_ms")),
                           .peer_ms = json_number_value(json_object_get(row, "peer_wait_ms")),
                           .bubble_ms = json_number_value(json_object_get(row, "bubble_ms")),
                           .host_ms = json_number_value(json_object_get(row, "host_wait_ms")),
                           .mem_bytes = json_number_value(json_object_get(row, "peak_mem_bytes")),
                           .mem_limit = mem_limit};
        mt_holdback hb;
        mt_holdback_of(&p, &hb);
        json_object_set_new(row, "holdback", mt_holdback_json(&hb));
    }
}

static mt_status run_simulate(mt_jobs *j, job *jb, json_t **res, mt_error *err) {
    char paths[MT_N_OUTPUTS][PATH_MAX_ + 32];
    mt_sim_outputs out;
    mt_sim_outputs_init(&out);
    for (int k = 0; k < MT_N_OUTPUTS; k++) {
        const mt_output *d = &MT_OUTPUTS[k];
        if (!d->web || !(!strcmp(d->name, MT_JOBS_ALWAYS) || (jb->want & mt_jobs_want_bit(d->name)))) continue;
        snprintf(paths[k], sizeof paths[k], "%s/%s", jb->dir, d->web);
        mt_sim_output_set(&out, d, paths[k]);
    }
    int32_t g = jb->o.job.rc.plan.gpus;
    if (out.timeline) out.timeline_gpus = g > 16 ? "0-15" : NULL; /* 0: the trace's own world size, small */
    out.max_record_bytes = j->cfg.max_run_bytes;
    progress_ctx pc = {j, jb};
    out.on_progress = on_sim_progress;
    out.progress_ctx = &pc;
    mt_job *rj = &jb->o.job;
    mt_job_result r = {0};
    mt_status st = mt_job_load(rj, NULL, err);
    if (st == MT_OK) st = mt_job_run(rj, &out, &r, err);
    if (st == MT_OK) {
        const mt_simulation *sim = &r.sim;
        mt_run_summary sum = mt_job_summary(rj, &r);
        *res = mt_summary_json(&sum);
        if (*res && !sim->dry) st = add_words(*res, &sum, err);
        if (*res && !sim->dry && st == MT_OK) st = add_verdict(*res, sim, &rj->rc, &rj->in, err);
        if (sim->files_cut_ps != MT_TIME_NEVER) {
            char cap[32];
            snprintf(jb->note, sizeof jb->note, "the report's timeline%s stops at %.6g ms of simulated time: what "
                     "they record is held under %s a run (mitosis serve --max-run-bytes)",
                     jb->want ? " and the files" : "", (double)sim->files_cut_ps / 1e9,
                     mt_fmt_bytes(j->cfg.max_run_bytes, cap, sizeof cap));
        }
    }
    mt_job_result_free(&r);
    mt_job_close(rj); /* the trace goes before the result is written */
    return st;
}

static mt_status run_compare(mt_jobs *j, job *jb, json_t **res, mt_error *err) {
    char html[PATH_MAX_ + 32];
    snprintf(html, sizeof html, "%s/report.html", jb->dir);
    progress_ctx pc = {j, jb};
    mt_job *rj = &jb->o.job;
    rj->cc.progress = on_progress;
    rj->cc.progress_ctx = &pc;
    mt_job_result r = {0};
    mt_status st = mt_job_load(rj, NULL, err);
    if (st == MT_OK) st = mt_job_run(rj, NULL, &r, err);
    if (st == MT_OK) st = mt_compare_html(&r.cmp, &rj->rc, &rj->in, &rj->cc, html, err);
    if (st == MT_OK && (*res = mt_comparison_json(&r.cmp))) add_row_verdicts(*res, r.cmp.mem_limit);
    mt_job_result_free(&r);
    mt_job_close(rj); /* the trace goes before the result is written */
    return st;
}

/* A cluster run (run/cluster.h): its job file written as cluster.json in the run's folder, loaded,
 * placed, run together and alone; the report (its heat map) and, when asked, the timeline. */
static mt_status run_cluster(job *jb, json_t **res, mt_error *err) {
    char file[PATH_MAX_ + 32], html[PATH_MAX_ + 32], tl[PATH_MAX_ + 32];
    snprintf(file, sizeof file, "%s/cluster.json", jb->dir);
    snprintf(html, sizeof html, "%s/report.html", jb->dir);
    snprintf(tl, sizeof tl, "%s/timeline.json", jb->dir);
    if (json_dump_file(jb->o.cluster, file, JSON_INDENT(2)) != 0) return mt_fail(err, MT_EIO, "cannot write %s", file);
    mt_netcfg net;
    mt_netcfg_init(&net);
    mt_cluster c;
    mt_cluster_result r;
    mt_cluster_spans spans = {0};
    mt_cluster_spans *sp = jb->want & mt_jobs_want_bit("timeline") ? &spans : NULL;
    mt_status st = mt_cluster_load(file, &net, 0, &c, err);
    if (st != MT_OK) return st;
    if ((st = mt_cluster_place(&c, NULL, err)) == MT_OK && (st = mt_cluster_run(&c, sp, &r, err)) == MT_OK) {
        st = mt_cluster_html(html, &r, err);
        if (st == MT_OK && sp) st = mt_cluster_timeline(tl, &r, sp, err);
        if (st == MT_OK) *res = mt_cluster_json(&r);
        mt_cluster_result_free(&r);
    }
    mt_cluster_spans_free(&spans);
    mt_cluster_free(&c);
    return st;
}

/* File k's path in jb's folder ("" when it does not fit: nothing is found there). */
static void file_path(const job *jb, int k, char *p, size_t len) {
    int n = snprintf(p, len, "%s/%s", jb->dir, FILES[k].name);
    if (n < 0 || (size_t)n >= len) *p = '\0';
}

/* Removes jb's files and folder (whatever exists). */
static void remove_files(const job *jb) {
    char p[PATH_MAX_ + 32];
    for (int k = 0; k < N_FILES; k++) {
        file_path(jb, k, p, sizeof p);
        unlink(p);
    }
    for (int k = 0; k < MT_N_OUTPUTS; k++) /* the output folders (csv/) */
        if (MT_OUTPUTS[k].web && MT_OUTPUTS[k].files) {
            snprintf(p, sizeof p, "%s/%s", jb->dir, MT_OUTPUTS[k].web);
            rmdir(p);
        }
    rmdir(jb->dir);
}

/* The files jb has, and their bytes; the optional ones dropped when they pass max_run_bytes. */
static unsigned files_of(mt_jobs *j, job *jb) {
    char p[PATH_MAX_ + 32];
    struct stat sb;
    unsigned files = 0;
    double bytes = 0, optional = 0;
    for (int k = 0; k < N_FILES; k++) {
        file_path(jb, k, p, sizeof p);
        if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        files |= 1u << k;
        bytes += (double)sb.st_size;
        if (FILES[k].want) optional += (double)sb.st_size;
    }
    if (bytes > j->cfg.max_run_bytes && optional > 0) {
        for (int k = 0; k < N_FILES; k++)
            if (FILES[k].want && (files & (1u << k))) {
                file_path(jb, k, p, sizeof p);
                unlink(p);
                files &= ~(1u << k);
            }
        char have[32], cap[32];
        snprintf(jb->note, sizeof jb->note, "the timeline and tables (%s) were dropped: over %s a run (mitosis "
                 "serve --max-run-bytes)", mt_fmt_bytes(optional, have, sizeof have),
                 mt_fmt_bytes(j->cfg.max_run_bytes, cap, sizeof cap));
        bytes -= optional;
    }
    jb->bytes = bytes;
    return files;
}

/* Under the lock: finished run v[k] removed, its files with it. */
static void drop(mt_jobs *j, int k) {
    job *jb = j->v[k];
    remove_files(jb);
    j->kept--;
    j->kept_bytes -= jb->bytes;
    mt_serve_opts_free(&jb->o);
    json_decref(jb->request);
    free(jb);
    j->v[k] = NULL;
}

/* Under the lock: finished runs past keep_runs or keep_bytes removed, oldest first. */
static void evict(mt_jobs *j) {
    for (int k = 0; k < j->n && (j->kept > j->cfg.keep_runs || j->kept_bytes > j->cfg.keep_bytes); k++)
        if (j->v[k] && j->v[k]->state != QUEUED && j->v[k]->state != RUNNING) drop(j, k);
}

/* Runs jb (the worker, without the lock, its budget bound) and records its end under the lock. */
static void run_job(mt_jobs *j, job *jb) {
    mt_error err = {0};
    json_t *res = NULL;
    mt_status st = MT_OK;
    if (mkdir(jb->dir, 0700) != 0) st = mt_fail(&err, MT_EIO, "cannot create %s: %s", jb->dir, strerror(errno));
    /* the one lock policy (run/job.h): a cluster run, or a --routing latency one, holds igraph's lock */
    int whole = mt_job_lock(jb->o.cmd == MT_SERVE_CLUSTER ? NULL : &jb->o.job);
    mt_budget_bind(&jb->budget);
    if (st == MT_OK) st = mt_budget_check(&err); /* cancelled while waiting for the lock */
    if (st == MT_OK)
        st = jb->o.cmd == MT_SERVE_COMPARE   ? run_compare(j, jb, &res, &err)
             : jb->o.cmd == MT_SERVE_CLUSTER ? run_cluster(jb, &res, &err)
                                             : run_simulate(j, jb, &res, &err);
    mt_budget_bind(NULL);
    mt_job_unlock(whole);
    if (st == MT_OK && !res) st = mt_fail(&err, MT_ENOMEM, "out of memory");
    if (res) mt_catalog_redact_json(j->cat, res);
    char p[PATH_MAX_ + 32];
    for (int k = 0; st == MT_OK && k < N_FILES; k++) {
        file_path(jb, k, p, sizeof p);
        st = mt_catalog_redact_file(j->cat, p, &err);
    }
    snprintf(p, sizeof p, "%s/result.json", jb->dir);
    if (st == MT_OK && mt_jw_dump_file(res, p) != 0)
        st = mt_fail(&err, MT_EIO, "cannot write %s", p);
    json_decref(res); /* read back from result.json: a kept run holds no result in memory */
    struct stat sb;
    if (st == MT_OK && stat(p, &sb) == 0 && (double)sb.st_size > j->cfg.max_run_bytes) {
        char have[32], cap[32];
        st = mt_fail(&err, MT_EINVAL, "the run's result is %s of JSON, over this server's limit of %s a run "
                     "(--max-run-bytes): fewer GPUs, or the command line (mitosis %s --json)",
                     mt_fmt_bytes((double)sb.st_size, have, sizeof have),
                     mt_fmt_bytes(j->cfg.max_run_bytes, cap, sizeof cap), mt_serve_cmd_name(jb->cmd));
    }
    mt_budget_state why = mt_budget_stopped(&jb->budget);
    if (st != MT_OK) remove_files(jb);
    unsigned files = st == MT_OK ? files_of(j, jb) : 0;
    mt_serve_opts_free(&jb->o);
    pthread_mutex_lock(&j->mu);
    jb->t_end = mt_budget_now_s();
    jb->state = st == MT_OK ? DONE : why == MT_BUDGET_CANCELLED ? CANCELLED : FAILED;
    jb->files = files;
    if (st != MT_OK) {
        snprintf(jb->error, sizeof jb->error, "%s", err.msg);
        mt_catalog_redact(j->cat, jb->error, sizeof jb->error);
    }
    jb->bytes = (st == MT_OK ? jb->bytes : 0) + jb->mem_bytes;
    j->kept++;
    j->kept_bytes += jb->bytes;
    evict(j);
    pthread_mutex_unlock(&j->mu);
#ifdef __GLIBC__
    malloc_trim(0); /* the run's memory back to the system: a kept run holds only its request */
#endif
}

static void *worker(void *arg) {
    mt_jobs *j = arg;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->stop && j->next < j->n && (!j->v[j->next] || j->v[j->next]->state != QUEUED)) j->next++;
        if (j->stop) break;
        if (j->next >= j->n) {
            pthread_cond_wait(&j->cv, &j->mu);
            continue;
        }
        job *jb = j->v[j->next++];
        jb->state = RUNNING;
        j->queued--;
        jb->t_start = mt_budget_now_s();
        mt_budget_start(&jb->budget, j->cfg.max_run_s);
        pthread_mutex_unlock(&j->mu);
        run_job(j, jb);
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* ---- the API ------------------------------------------------------------------------------- */

static void free_all(mt_jobs *j) {
    for (int k = 0; k < j->n; k++) {
        if (!j->v[k]) continue;
        mt_serve_opts_free(&j->v[k]->o);
        json_decref(j->v[k]->request);
        free(j->v[k]);
    }
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j->workers);
    free(j->v);
    free(j);
}

mt_status mt_jobs_new(const char *dir, const mt_catalog *cat, const mt_jobs_config *c, mt_jobs **out,
                      mt_error *err) {
    pthread_once(&FILES_ONCE, files_init);
    mt_jobs *j = calloc(1, sizeof *j);
    int workers = c->workers > 0 ? c->workers : 1;
    if (!j || !(j->workers = calloc((size_t)workers, sizeof *j->workers))) {
        free(j);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    snprintf(j->dir, sizeof j->dir, "%s", dir);
    j->cat = cat;
    j->cfg = *c;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    for (; j->n_workers < workers; j->n_workers++)
        if (pthread_create(&j->workers[j->n_workers], NULL, worker, j) != 0) break;
    if (j->n_workers == 0) {
        free_all(j);
        return mt_fail(err, MT_ENOMEM, "cannot start the run threads");
    }
    *out = j;
    return MT_OK;
}

void mt_jobs_free(mt_jobs *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    j->stop = 1;
    for (int k = 0; k < j->n; k++)
        if (j->v[k] && (j->v[k]->state == QUEUED || j->v[k]->state == RUNNING)) mt_budget_cancel(&j->v[k]->budget);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    for (int k = 0; k < j->n_workers; k++) pthread_join(j->workers[k], NULL);
    free_all(j);
}

mt_status mt_jobs_submit(mt_jobs *j, mt_serve_opts *o, const char *trace_id, const json_t *request, unsigned want,
                         int *id, mt_error *err) {
    job *jb = calloc(1, sizeof *jb);
    if (!jb) return mt_fail(err, MT_ENOMEM, "out of memory");
    pthread_mutex_lock(&j->mu);
    mt_status st = MT_OK;
    if (j->queued >= j->cfg.max_queued)
        st = mt_fail(err, MT_EINVAL, "%d runs are already waiting: try again when one has started (mitosis serve "
                     "--max-queued N)", j->queued);
    else if (j->n >= j->cap) {
        int cap = j->cap ? 2 * j->cap : 256;
        job **v = cap > j->cap ? realloc(j->v, (size_t)cap * sizeof *v) : NULL;
        if (v) j->v = v, j->cap = cap;
        else st = mt_fail(err, MT_ENOMEM, "out of memory");
    }
    if (st != MT_OK) {
        pthread_mutex_unlock(&j->mu);
        free(jb);
        return st;
    }
    jb->id = j->n + 1;
    jb->o = *o;
    jb->cmd = o->cmd;
    jb->want = want;
    memset(o, 0, sizeof *o);
    snprintf(jb->trace_id, sizeof jb->trace_id, "%s", trace_id ? trace_id : "(per job)");
    jb->request = json_deep_copy(request);
    char *text = json_dumps(request, JSON_COMPACT);
    jb->mem_bytes = (double)sizeof *jb + (text ? 4.0 * (double)strlen(text) : 0); /* a JSON tree: ~4x its text */
    free(text);
    jb->t_submit = mt_budget_now_s();
    mt_budget_init(&jb->budget);
    jb->budget.max_events = j->cfg.max_events;
    jb->budget.max_seconds = j->cfg.max_run_s;
    jb->budget.max_mem_bytes = j->cfg.max_mem_bytes;
    snprintf(jb->dir, sizeof jb->dir, "%s/run-%d", j->dir, jb->id);
    j->v[j->n++] = jb;
    j->queued++;
    *id = jb->id;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return MT_OK;
}

/* Under the lock: run id, NULL when none (never was, or removed). */
static job *find(mt_jobs *j, int id) { return id >= 1 && id <= j->n ? j->v[id - 1] : NULL; }

json_t *mt_jobs_cancel(mt_jobs *j, int id) {
    pthread_mutex_lock(&j->mu);
    job *jb = find(j, id);
    json_t *o = NULL;
    if (jb && jb->state == QUEUED) {
        jb->state = CANCELLED;
        jb->t_start = jb->t_end = mt_budget_now_s();
        snprintf(jb->error, sizeof jb->error, "run cancelled before it started");
        j->queued--;
        j->kept++;
        jb->bytes = jb->mem_bytes;
        j->kept_bytes += jb->bytes;
        evict(j);
        o = json_pack("{s:i, s:s}", "id", id, "status", "cancelled");
    } else if (jb && jb->state == RUNNING) {
        mt_budget_cancel(&jb->budget); /* the worker sees it within MT_BUDGET_EVERY events */
        o = json_pack("{s:i, s:s}", "id", id, "status", "cancelling");
    } else if (jb) {
        drop(j, id - 1);
        o = json_pack("{s:i, s:s}", "id", id, "status", "removed");
    }
    pthread_mutex_unlock(&j->mu);
    return o;
}

static json_t *files_json(const job *jb) {
    json_t *a = json_array();
    for (int k = 0; k < N_FILES; k++)
        if (jb->files & (1u << k)) json_array_append_new(a, json_string(FILES[k].name));
    return a;
}

static double elapsed_s(const job *jb) {
    if (jb->state == QUEUED) return 0;
    return (jb->state == RUNNING ? mt_budget_now_s() : jb->t_end) - jb->t_start;
}

/* Under the lock: 1 + the runs queued before jb, or JSON null when it is not queued. */
static json_t *queue_position(const mt_jobs *j, const job *jb) {
    if (jb->state != QUEUED) return json_null();
    int ahead = 0;
    for (int k = j->next; k < jb->id - 1; k++) ahead += j->v[k] && j->v[k]->state == QUEUED;
    return json_integer(ahead + 1);
}

json_t *mt_jobs_status_json(mt_jobs *j, int id, int *result_fd) {
    *result_fd = -1;
    pthread_mutex_lock(&j->mu);
    job *jb = find(j, id);
    json_t *o = NULL;
    if (jb) {
        o = json_pack("{s:i, s:s, s:s, s:O, s:s, s:o, s:{s:i, s:i, s:s}, s:f}", "id", jb->id, "command",
                      mt_serve_cmd_name(jb->cmd), "trace", jb->trace_id, "request", jb->request, "status",
                      STATE_NAMES[jb->state], "queue_position", queue_position(j, jb), "progress", "done",
                      (int)jb->done, "total", (int)jb->total, "label", jb->label, "elapsed_s", elapsed_s(jb));
        json_object_set_new(o, "error", jb->state == FAILED || jb->state == CANCELLED ? json_string(jb->error)
                                                                                      : json_null());
        json_object_set_new(o, "files", files_json(jb));
        json_object_set_new(o, "files_note", jb->note[0] ? json_string(jb->note) : json_null());
        if (jb->state == DONE) { /* opened under the lock: a removal after it leaves the descriptor readable */
            char p[PATH_MAX_ + 32];
            file_path(jb, 0, p, sizeof p);
            *result_fd = open(p, O_RDONLY | O_CLOEXEC);
        }
    }
    pthread_mutex_unlock(&j->mu);
    return o;
}

json_t *mt_jobs_list_json(mt_jobs *j) {
    json_t *a = json_array();
    pthread_mutex_lock(&j->mu);
    for (int k = 0; k < j->n; k++) {
        const job *jb = j->v[k];
        if (!jb) continue;
        json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:s, s:o}", "id", jb->id, "command",
                                           mt_serve_cmd_name(jb->cmd), "trace", jb->trace_id, "status",
                                           STATE_NAMES[jb->state], "queue_position", queue_position(j, jb)));
    }
    pthread_mutex_unlock(&j->mu);
    return a;
}

int mt_jobs_file(mt_jobs *j, int id, const char *name, char *buf, size_t len) {
    int found = 0;
    pthread_mutex_lock(&j->mu);
    job *jb = find(j, id);
    for (int k = 0; jb && jb->state == DONE && k < N_FILES; k++)
        if (!strcmp(name, FILES[k].name) && (jb->files & (1u << k))) {
            found = (size_t)snprintf(buf, len, "%s/%s", jb->dir, FILES[k].name) < len;
            break;
        }
    pthread_mutex_unlock(&j->mu);
    return found;
}

const char *mt_jobs_file_type(const char *name) {
    for (int k = 0; k < N_FILES; k++)
        if (!strcmp(name, FILES[k].name)) return FILES[k].type;
    return "application/octet-stream";
}

void mt_jobs_usage(mt_jobs *j, int *runs, double *bytes) {
    pthread_mutex_lock(&j->mu);
    *runs = j->kept + j->queued;
    *bytes = j->kept_bytes;
    pthread_mutex_unlock(&j->mu);
}

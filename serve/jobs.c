/* serve/jobs.c — see jobs.h. */
#include "serve/jobs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "report/comparison.h"
#include "report/summary.h"
#include "run/compare.h"
#include "run/input.h"
#include "run/simulate.h"

typedef enum { QUEUED = 0, RUNNING, DONE, FAILED } job_state;
static const char *const STATE_NAMES[] = {"queued", "running", "done", "failed"};

/* The files a run may have, by name (the only names a download may ask for). */
static const struct {
    const char *name, *type;
} FILES[] = {
    {"result.json", "application/json"},
    {"report.html", "text/html; charset=utf-8"},
    {"timeline.json", "application/json"},
    {"csv/gpus.csv", "text/csv"},
    {"csv/layers.csv", "text/csv"},
    {"csv/ops.csv", "text/csv"},
    {"csv/links.csv", "text/csv"},
    {"csv/collectives.csv", "text/csv"},
};
enum { N_FILES = sizeof FILES / sizeof FILES[0], PATH_MAX_ = 1200 };

typedef struct job {
    int id;
    mt_serve_opts o;          /* the worker's while it runs; freed after */
    char trace_id[200];
    json_t *request;
    job_state state;
    int32_t done, total;      /* compare: plans run of total */
    char label[128];
    double t_submit, t_start, t_end;
    char error[MT_ERRMSG_MAX];
    json_t *result;
    char dir[PATH_MAX_];
    unsigned files;           /* bit k: FILES[k] exists */
} job;

struct mt_jobs {
    const mt_catalog *cat;    /* its paths are never shown (mt_catalog_redact) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t worker;
    int stop;
    job **v;
    int n, next;              /* next: the oldest run that may still be queued */
    char dir[PATH_MAX_ - 64];
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

static mt_status run_simulate(job *jb, json_t **res, mt_error *err) {
    char tl[PATH_MAX_ + 32], csv[PATH_MAX_ + 32], html[PATH_MAX_ + 32];
    snprintf(tl, sizeof tl, "%s/timeline.json", jb->dir);
    snprintf(csv, sizeof csv, "%s/csv", jb->dir);
    snprintf(html, sizeof html, "%s/report.html", jb->dir);
    mt_sim_outputs out;
    mt_sim_outputs_init(&out);
    out.timeline = tl;
    int32_t g = jb->o.rc.plan.gpus;
    out.timeline_gpus = g > 16 ? "0-15" : NULL; /* 0: the trace's own world size, small */
    out.csv_dir = csv;
    out.html = html;
    mt_run_input in = {0};
    mt_simulation sim;
    memset(&sim, 0, sizeof sim);
    mt_status st = mt_run_input_open(&jb->o.rc, &in, err);
    if (st == MT_OK) st = mt_run_check_gpus(&jb->o.rc, in.t, err);
    if (st == MT_OK) st = mt_run_simulate(&jb->o.rc, &in, &out, &sim, err);
    if (st == MT_OK) {
        mt_run_summary sum = mt_simulation_summary(&sim, &jb->o.rc, &in);
        *res = mt_summary_json(&sum);
    }
    mt_simulation_free(&sim);
    mt_run_input_close(&in);
    return st;
}

static mt_status run_compare(mt_jobs *j, job *jb, json_t **res, mt_error *err) {
    char html[PATH_MAX_ + 32];
    snprintf(html, sizeof html, "%s/report.html", jb->dir);
    progress_ctx pc = {j, jb};
    jb->o.cc.progress = on_progress;
    jb->o.cc.progress_ctx = &pc;
    mt_run_input in = {0};
    mt_comparison cmp;
    memset(&cmp, 0, sizeof cmp);
    mt_status st = mt_run_input_open(&jb->o.rc, &in, err);
    if (st == MT_OK) st = mt_run_compare(&jb->o.rc, &in, &jb->o.cc, &cmp, err);
    if (st == MT_OK) st = mt_compare_html(&cmp, &jb->o.rc, &in, &jb->o.cc, html, err);
    if (st == MT_OK) *res = mt_comparison_json(&cmp);
    mt_comparison_free(&cmp);
    mt_run_input_close(&in);
    return st;
}

/* Runs jb (the worker, without the lock) and records its end under the lock. */
static void run_job(mt_jobs *j, job *jb) {
    mt_error err = {0};
    json_t *res = NULL;
    mt_status st = MT_OK;
    if (mkdir(jb->dir, 0700) != 0) st = mt_fail(&err, MT_EIO, "cannot create %s: %s", jb->dir, strerror(errno));
    if (st == MT_OK)
        st = jb->o.cmd == MT_SERVE_COMPARE ? run_compare(j, jb, &res, &err) : run_simulate(jb, &res, &err);
    if (st == MT_OK && !res) st = mt_fail(&err, MT_ENOMEM, "out of memory");
    if (res) mt_catalog_redact_json(j->cat, res);
    char p[PATH_MAX_ + 32];
    for (int k = 0; st == MT_OK && k < N_FILES; k++) {
        snprintf(p, sizeof p, "%s/%s", jb->dir, FILES[k].name);
        st = mt_catalog_redact_file(j->cat, p, &err);
    }
    snprintf(p, sizeof p, "%s/result.json", jb->dir);
    if (st == MT_OK && json_dump_file(res, p, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0)
        st = mt_fail(&err, MT_EIO, "cannot write %s", p);
    unsigned files = 0;
    struct stat sb;
    for (int k = 0; st == MT_OK && k < N_FILES; k++) {
        snprintf(p, sizeof p, "%s/%s", jb->dir, FILES[k].name);
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) files |= 1u << k;
    }
    mt_serve_opts_free(&jb->o);
    pthread_mutex_lock(&j->mu);
    jb->t_end = now_s();
    jb->state = st == MT_OK ? DONE : FAILED;
    jb->result = st == MT_OK ? res : NULL;
    jb->files = files;
    if (st != MT_OK) {
        snprintf(jb->error, sizeof jb->error, "%s", err.msg);
        mt_catalog_redact(j->cat, jb->error, sizeof jb->error);
    }
    pthread_mutex_unlock(&j->mu);
    if (st != MT_OK) json_decref(res);
}

static void *worker(void *arg) {
    mt_jobs *j = arg;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->stop && j->next < j->n && j->v[j->next]->state != QUEUED) j->next++;
        if (j->stop) break;
        if (j->next >= j->n) {
            pthread_cond_wait(&j->cv, &j->mu);
            continue;
        }
        job *jb = j->v[j->next++];
        jb->state = RUNNING;
        jb->t_start = now_s();
        pthread_mutex_unlock(&j->mu);
        run_job(j, jb);
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* ---- the API ------------------------------------------------------------------------------- */

mt_status mt_jobs_new(const char *dir, const mt_catalog *cat, mt_jobs **out, mt_error *err) {
    mt_jobs *j = calloc(1, sizeof *j);
    if (!j || !(j->v = calloc(MT_JOBS_MAX, sizeof *j->v))) {
        free(j);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    snprintf(j->dir, sizeof j->dir, "%s", dir);
    j->cat = cat;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    if (pthread_create(&j->worker, NULL, worker, j) != 0) {
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
        free(j->v);
        free(j);
        return mt_fail(err, MT_ENOMEM, "cannot start the run thread");
    }
    *out = j;
    return MT_OK;
}

void mt_jobs_free(mt_jobs *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    j->stop = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    pthread_join(j->worker, NULL);
    for (int k = 0; k < j->n; k++) {
        mt_serve_opts_free(&j->v[k]->o);
        json_decref(j->v[k]->request);
        json_decref(j->v[k]->result);
        free(j->v[k]);
    }
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j->v);
    free(j);
}

mt_status mt_jobs_submit(mt_jobs *j, mt_serve_opts *o, const char *trace_id, const json_t *request, int *id,
                         mt_error *err) {
    job *jb = calloc(1, sizeof *jb);
    if (!jb) return mt_fail(err, MT_ENOMEM, "out of memory");
    pthread_mutex_lock(&j->mu);
    if (j->n >= MT_JOBS_MAX) {
        pthread_mutex_unlock(&j->mu);
        free(jb);
        return mt_fail(err, MT_EINVAL, "too many runs (%d): restart mitosis serve", MT_JOBS_MAX);
    }
    jb->id = j->n + 1;
    jb->o = *o;
    memset(o, 0, sizeof *o);
    snprintf(jb->trace_id, sizeof jb->trace_id, "%s", trace_id);
    jb->request = json_deep_copy(request);
    jb->t_submit = now_s();
    snprintf(jb->dir, sizeof jb->dir, "%s/run-%d", j->dir, jb->id);
    j->v[j->n++] = jb;
    *id = jb->id;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return MT_OK;
}

static json_t *files_json(const job *jb) {
    json_t *a = json_array();
    for (int k = 0; k < N_FILES; k++)
        if (jb->files & (1u << k)) json_array_append_new(a, json_string(FILES[k].name));
    return a;
}

static double elapsed_s(const job *jb) {
    if (jb->state == QUEUED) return 0;
    return (jb->state == RUNNING ? now_s() : jb->t_end) - jb->t_start;
}

json_t *mt_jobs_status_json(mt_jobs *j, int id) {
    pthread_mutex_lock(&j->mu);
    job *jb = id >= 1 && id <= j->n ? j->v[id - 1] : NULL;
    json_t *o = NULL;
    if (jb) {
        o = json_pack("{s:i, s:s, s:s, s:O, s:s, s:{s:i, s:i, s:s}, s:f}", "id", jb->id, "command",
                      mt_serve_cmd_name(jb->o.cmd), "trace", jb->trace_id, "request", jb->request, "status",
                      STATE_NAMES[jb->state], "progress", "done", (int)jb->done, "total", (int)jb->total, "label",
                      jb->label, "elapsed_s", elapsed_s(jb));
        json_object_set_new(o, "error", jb->state == FAILED ? json_string(jb->error) : json_null());
        json_object_set_new(o, "files", files_json(jb));
        json_object_set(o, "result", jb->result ? jb->result : json_null());
    }
    pthread_mutex_unlock(&j->mu);
    return o;
}

json_t *mt_jobs_list_json(mt_jobs *j) {
    json_t *a = json_array();
    pthread_mutex_lock(&j->mu);
    for (int k = 0; k < j->n; k++)
        json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:s}", "id", j->v[k]->id, "command",
                                           mt_serve_cmd_name(j->v[k]->o.cmd), "trace", j->v[k]->trace_id, "status",
                                           STATE_NAMES[j->v[k]->state]));
    pthread_mutex_unlock(&j->mu);
    return a;
}

int mt_jobs_file(mt_jobs *j, int id, const char *name, char *buf, size_t len) {
    int found = 0;
    pthread_mutex_lock(&j->mu);
    job *jb = id >= 1 && id <= j->n ? j->v[id - 1] : NULL;
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

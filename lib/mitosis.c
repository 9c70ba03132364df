/* lib/mitosis.c — libmitosis: include/mitosis.h over run/ (see the header for the contract).
 *
 * A configuration is its options as command-line words ("--gpus", "8", "--sp"); every run parses
 * them afresh with the command's flag tables (run/flags.h) into its own mt_run_config, so runs
 * share nothing mutable (each gets its own what-if scenario) and a result keeps a copy of the
 * words its strings point into. A trace is loaded once (tracer/) and bound per run to a
 * performance model (mt_run_input_bind), which only reads it.
 * A run is a job of run/job.h (parse, check, load, run): its one lock policy is igraph's (Debian's
 * build keeps its error handler and "finally" stack in globals): the sections that call igraph
 * take run/pool.h's process-wide lock, and a run that calls it throughout (--routing latency, a
 * cluster) holds it whole; other runs go on at once.
 */
#define MITOSIS_BUILDING 1
#include "include/mitosis.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "netmodels/netcfg.h"
#include "report/comparison.h"
#include "report/jsonw.h"
#include "report/recognised.h"
#include "report/summary.h"
#include "report/tracesum.h"
#include "report/clusterrep.h"
#include "run/cluster.h"
#include "run/placement.h"
#include "run/flags.h"
#include "run/job.h"
#include "tracer/meta.h"
#include "tracer/opclass.h"
#include "tracer/trace.h"

static int fail_out(mitosis_error *out, const mt_error *e) {
    if (out) {
        out->code = e->code;
        snprintf(out->message, sizeof out->message, "%s", e->msg);
    }
    return e->code;
}

/* A NULL argument (or a count below 0) refused in one line naming the function and the argument. */
static int bad_arg(mitosis_error *out, const char *fn, const char *arg, const char *what) {
    mt_error e = {0};
    mt_fail(&e, MT_EINVAL, "%s: argument '%s' %s", fn, arg, what);
    return fail_out(out, &e);
}
#define NEED(arg) \
    do { \
        if (!(arg)) return bad_arg(err, __func__, #arg, "is NULL"); \
    } while (0)

static int ok_out(mitosis_error *out) {
    if (out) {
        out->code = MITOSIS_OK;
        out->message[0] = '\0';
    }
    return MITOSIS_OK;
}

MITOSIS_API const char *mitosis_version(void) { return MITOSIS_VERSION; }

MITOSIS_API const char *mitosis_code_name(int code) {
    return code >= MT_OK && code <= MT_EINTERNAL ? mt_status_name((mt_status)code) : "?";
}

MITOSIS_API int mitosis_exit_code(int code) { return mt_exit_code((mt_status)code); }

MITOSIS_API void mitosis_string_free(char *s) { free(s); }

/* ---- traces ------------------------------------------------------------------------------ */

struct mitosis_trace {
    mt_trace *t;
    char *paths[MT_RUN_MAX_PATHS];
    int n_paths;
    int step;          /* as asked (-1: the ET's) */
    double measured;   /* the unprofiled step beside the trace (meta.json), 0 none */
};

static void no_progress(void *ctx, int64_t done, int64_t total) {}

MITOSIS_API void mitosis_trace_free(mitosis_trace *t) {
    if (!t) return;
    mt_trace_free(t->t);
    for (int k = 0; k < t->n_paths; k++) free(t->paths[k]);
    free(t);
}

MITOSIS_API int mitosis_trace_open(const char *const *paths, int n_paths, int step, mitosis_trace **out,
                                   mitosis_error *err) {
    mt_job_process_init(); /* what the CLI's main does first: igraph reports, OpenBLAS on one thread */
    mt_error e = {0};
    NEED(out);
    *out = NULL;
    if (!paths || n_paths < 1 || n_paths > MT_RUN_MAX_PATHS) {
        mt_fail(&e, MT_EINVAL, "give 1 to %d trace paths (a folder or its files)", MT_RUN_MAX_PATHS);
        return fail_out(err, &e);
    }
    mitosis_trace *t = calloc(1, sizeof *t);
    if (!t) return fail_out(err, (mt_fail(&e, MT_ENOMEM, "out of memory"), &e));
    t->step = step;
    for (int k = 0; k < n_paths; k++, t->n_paths++)
        if (!paths[k] || !(t->paths[k] = strdup(paths[k]))) {
            mitosis_trace_free(t);
            mt_fail(&e, paths[k] ? MT_ENOMEM : MT_EINVAL, paths[k] ? "out of memory" : "trace path %d is NULL", k);
            return fail_out(err, &e);
        }
    trace_load_opts o;
    mt_trace_load_opts_init(&o);
    o.step = step;
    o.on_progress = no_progress;
    if (mt_trace_load((const char **)t->paths, t->n_paths, &o, &t->t, &e) != MT_OK) {
        mitosis_trace_free(t);
        return fail_out(err, &e);
    }
    char src[512];
    if (mt_trace_meta_measured(t->paths[0], t->t, &t->measured, src, sizeof src, NULL) != MT_OK) t->measured = 0;
    *out = t;
    return ok_out(err);
}

/* Every operator: id, name, kind, class, phase, layer, device and host time, collective. */
static json_t *op_list(const mt_trace *t) {
    json_t *a = json_array();
    for (int32_t i = 0; a && i < t->n_ops; i++) {
        const trace_op *op = &t->ops[i];
        const char *layer = op->layer >= 0 && op->layer < t->n_layers ? t->layers[op->layer].name : NULL;
        json_array_append_new(a, json_pack("{s:i,s:s?,s:s?,s:s,s:s,s:s?,s:f,s:f,s:s,s:f,s:b}", "id", op->id,
                                           "name", op->name, "kind", op->kind, "class", mt_opclass_name(op->cls),
                                           "phase", mt_trace_phase_name(op->phase), "layer", layer, "device_ms",
                                           op->dev_ns / 1e6, "host_ms", op->cpu_dur_ns / 1e6, "comm",
                                           mt_trace_comm_name(op->comm), "comm_bytes", op->comm_bytes,
                                           "batch_dependent", op->batch_dep));
    }
    return a;
}

MITOSIS_API char *mitosis_trace_json(const mitosis_trace *t, int ops) {
    if (!t) return NULL;
    json_t *o = mt_tracesum_json(t->t, t->measured);
    mt_error rerr = {0}; /* what the classifier recognised, as inspect --json adds it */
    json_t *rec = o ? mt_recognised_json(t->t, &rerr) : NULL;
    if (rec) json_object_set_new(o, "recognised", rec);
    if (!o) return NULL;
    if (ops) json_object_set_new(o, "op_list", op_list(t->t));
    char *s = mt_jw_dumps(o);
    json_decref(o);
    return s;
}

MITOSIS_API int mitosis_trace_ops(const mitosis_trace *t) { return t ? t->t->n_ops : -1; }
MITOSIS_API long long mitosis_trace_batch(const mitosis_trace *t) { return t ? t->t->batch_size : -1; }

/* ---- configurations ----------------------------------------------------------------------- */

struct mitosis_config {
    mt_job_cmd cmd;     /* MT_JOB_SIMULATE, MT_JOB_COMPARE */
    mt_job_words w;     /* w.w[0] is the command name, then the options ("--gpus", "8", "--sp") */
};

/* The option named `name` ("--gpus") of a cmd configuration: a run option (run/job.h), or for
 * simulate an option of its output files (run/flags.h MT_RUN_OUTOPT_FLAGS: mitosis_result_write's). */
static const mt_flag *find_flag(mt_job_cmd cmd, const char *name) {
    const mt_flag *f = mt_job_find_flag(cmd, name);
    return f || cmd != MT_JOB_SIMULATE ? f : mt_flag_find(&MT_RUN_OUTOPT_FLAGS, name);
}

/* Parses c's words into a job opened here (closed by the caller on MT_OK, also on failure), as
 * the CLI parses `mitosis CMD WORDS...`, simulate's output options into o (NULL: dropped);
 * `flags`: MT_JOB_UNCHECKED to leave the combination checks to mt_job_check. The job's strings
 * and o's point into c's words. */
static mt_status parse(const mitosis_config *c, mt_job *j, int flags, mt_sim_outputs *o, mt_error *err) {
    MT_CHECK(mt_job_open(j, c->cmd, err));
    const char *cmd = mt_job_cmd_name(c->cmd);
    mt_sim_outputs scratch;
    mt_sim_outputs_init(&scratch);
    const mt_flag_bind own = {&MT_RUN_OUTOPT_FLAGS, o ? o : &scratch};
    MT_CHECK(mt_job_parse(j, c->w.n, c->w.w, NULL, &own, c->cmd == MT_JOB_SIMULATE, flags, err));
    if (j->rc.n_paths > 0)
        return mt_fail(err, MT_EINVAL, "'%s' is not an option (trace paths go to mitosis_trace_open)", j->rc.paths[0]);
    if (j->seen.help) return mt_fail(err, MT_EINVAL, "help is not an option (see mitosis %s --help)", cmd);
    return MT_OK;
}

MITOSIS_API int mitosis_config_new(const char *command, mitosis_config **out, mitosis_error *err) {
    mt_job_process_init(); /* what the CLI's main does first: igraph reports, OpenBLAS on one thread */
    mt_error e = {0};
    NEED(out);
    *out = NULL;
    int cmd = -1;
    for (int k = MT_JOB_SIMULATE; k <= MT_JOB_COMPARE; k++)
        if (command && !strcmp(command, mt_job_cmd_name((mt_job_cmd)k))) cmd = k;
    if (cmd < 0) {
        mt_fail(&e, MT_EINVAL, "the command is \"simulate\" or \"compare\" (got '%s')", command ? command : "");
        return fail_out(err, &e);
    }
    mitosis_config *c = calloc(1, sizeof *c);
    if (!c || (c->cmd = (mt_job_cmd)cmd, mt_job_words_push(&c->w, mt_job_cmd_name(c->cmd)))) {
        free(c);
        return fail_out(err, (mt_fail(&e, MT_ENOMEM, "out of memory"), &e));
    }
    *out = c;
    return ok_out(err);
}

MITOSIS_API void mitosis_config_free(mitosis_config *c) {
    if (!c) return;
    mt_job_words_free(&c->w);
    free(c);
}

MITOSIS_API mitosis_config *mitosis_config_copy(const mitosis_config *c) {
    if (!c) return NULL;
    mitosis_config *d = calloc(1, sizeof *d);
    if (d && (d->cmd = c->cmd, mt_job_words_copy(&d->w, &c->w))) {
        free(d);
        return NULL;
    }
    return d;
}

/* "--name" into buf from "name" or "--name". */
static void flag_name(const char *name, char *buf, size_t len) {
    snprintf(buf, len, "%s%s", strncmp(name, "--", 2) ? "--" : "", name);
}

/* Removes every use of flag `name` (and its value) from c's words. */
static void drop(mitosis_config *c, const char *name, int takes_value) {
    char **w = c->w.w;
    int to = 1;
    for (int k = 1; k < c->w.n; k++) {
        if (!strcmp(w[k], name)) {
            free(w[k]);
            if (takes_value && k + 1 < c->w.n) free(w[++k]);
            continue;
        }
        w[to++] = w[k];
    }
    c->w.n = to;
}

static int is_true(const char *v) { return !v || !*v || !strcmp(v, "true") || !strcmp(v, "1"); }
static int is_false(const char *v) { return v && (!strcmp(v, "false") || !strcmp(v, "0")); }

MITOSIS_API int mitosis_config_set(mitosis_config *c, const char *name, const char *value, mitosis_error *err) {
    mt_error e = {0};
    NEED(c);
    if (!name || !*name) return fail_out(err, (mt_fail(&e, MT_EINVAL, "an option needs a name"), &e));
    char fl[128];
    flag_name(name, fl, sizeof fl);
    const mt_flag *f = find_flag(c->cmd, fl);
    mt_job_words old = {0};
    if (mt_job_words_copy(&old, &c->w)) return fail_out(err, (mt_fail(&e, MT_ENOMEM, "out of memory"), &e));
    int bad = 0;
    if (f && !f->metavar) { /* a switch */
        drop(c, fl, 0);
        if (!is_false(value) && !is_true(value)) {
            mt_fail(&e, MT_EINVAL, "%s is a switch: give no value, true or false (got '%s')", fl, value);
            bad = 1;
        } else if (is_true(value)) {
            bad = mt_job_words_push(&c->w, fl);
        }
    } else {
        if (f && !f->repeat) drop(c, fl, 1);
        /* an unknown option or a missing value: parse says so */
        bad = mt_job_words_push(&c->w, fl) || (value && mt_job_words_push(&c->w, value));
        if (bad) mt_fail(&e, MT_ENOMEM, "out of memory");
    }
    mt_job j;
    mt_status st = bad ? MT_ENOMEM : parse(c, &j, MT_JOB_UNCHECKED, NULL, &e);
    if (!bad) mt_job_close(&j);
    if (st == MT_OK) {
        mt_job_words_free(&old);
        return ok_out(err);
    }
    if (!e.code) mt_fail(&e, MT_ENOMEM, "out of memory");
    mt_job_words_free(&c->w);
    c->w = old;
    return fail_out(err, &e);
}

MITOSIS_API int mitosis_config_unset(mitosis_config *c, const char *name, mitosis_error *err) {
    NEED(c);
    NEED(name);
    char fl[128];
    flag_name(name ? name : "", fl, sizeof fl);
    const mt_flag *f = find_flag(c->cmd, fl);
    if (!f) {
        mt_error e = {0};
        mt_fail(&e, MT_EINVAL, "unknown option '%s' (see mitosis %s --help)", fl, mt_job_cmd_name(c->cmd));
        return fail_out(err, &e);
    }
    drop(c, fl, f->metavar != NULL);
    return ok_out(err);
}

MITOSIS_API int mitosis_config_set_args(mitosis_config *c, int argc, const char *const *argv, mitosis_error *err) {
    NEED(c);
    if (argc < 0) return bad_arg(err, __func__, "argc", "is below 0");
    if (argc > 0) NEED(argv);
    for (int k = 0; k < argc; k++)
        if (!argv[k]) {
            char arg[32];
            snprintf(arg, sizeof arg, "argv[%d]", k);
            return bad_arg(err, __func__, arg, "is NULL");
        }
    for (int k = 0; k < argc; k++) {
        char fl[128];
        flag_name(argv[k], fl, sizeof fl);
        const mt_flag *f = find_flag(c->cmd, fl);
        const char *v = f && f->metavar && k + 1 < argc ? argv[++k] : NULL;
        int rc = mitosis_config_set(c, argv[k - (v != NULL)], v, err);
        if (rc != MITOSIS_OK) return rc;
    }
    return ok_out(err);
}

MITOSIS_API const char *mitosis_config_command(const mitosis_config *c) {
    return c ? mt_job_cmd_name(c->cmd) : NULL;
}
MITOSIS_API int mitosis_config_words(const mitosis_config *c) { return c ? c->w.n - 1 : -1; }
MITOSIS_API const char *mitosis_config_word(const mitosis_config *c, int i) {
    return c && i >= 0 && i + 1 < c->w.n ? c->w.w[i + 1] : NULL;
}

/* ---- one run's configuration and input ------------------------------------------------------ */

/* What every run holds: its own words (the job points into them) and the job, its input bound to
 * the trace. */
typedef struct run_state {
    const mitosis_trace *t;
    mitosis_config cfg;
    mt_job job;
    mt_sim_outputs out;       /* simulate: its output options (no paths; mitosis_result_write sets one) */
} run_state;

static void run_close(run_state *s) {
    mt_job_close(&s->job);
    mt_job_words_free(&s->cfg.w);
}

/* Parses and checks c for command cmd on trace t. */
static mt_status run_open(run_state *s, const mitosis_trace *t, const mitosis_config *c, mt_job_cmd cmd,
                          mt_error *err) {
    memset(s, 0, sizeof *s);
    s->t = t;
    if (!t || !c)
        return mt_fail(err, MT_EINVAL, "mitosis_%s: argument '%s' is NULL (a trace and a configuration are needed)",
                       mt_job_cmd_name(cmd), t ? "c" : "t");
    if (c->cmd != cmd)
        return mt_fail(err, MT_EINVAL, "this configuration is for %s (make one with mitosis_config_new(\"%s\"))",
                       mt_job_cmd_name(c->cmd), mt_job_cmd_name(cmd));
    s->cfg.cmd = c->cmd;
    if (mt_job_words_copy(&s->cfg.w, &c->w)) return mt_fail(err, MT_ENOMEM, "out of memory");
    mt_job *j = &s->job;
    mt_sim_outputs_init(&s->out);
    MT_CHECK(parse(&s->cfg, j, MT_JOB_UNCHECKED, &s->out, err));
    if (j->rc.topts.step >= 0 && j->rc.topts.step != t->step)
        return mt_fail(err, MT_EINVAL, "--step %d: the step is chosen when the trace is loaded (mitosis_trace_open)",
                       j->rc.topts.step);
    if (j->rc.topts.expert_pattern)
        return mt_fail(err, MT_EINVAL, "--moe-pattern: the experts are named when the trace is loaded, and "
                       "mitosis_trace_open takes no pattern (use the CLI, or leave it out)");
    for (int k = 0; k < t->n_paths; k++) MT_CHECK(mt_run_config_add_path(&j->rc, t->paths[k], err));
    return mt_job_check(j, err);
}

/* Binds the trace and runs the job, under the one lock policy (run/job.h mt_job_lock). */
static mt_status run_job(run_state *s, const mt_sim_outputs *o, mt_job_result *res, mt_error *err) {
    int held = mt_job_lock(&s->job);
    mt_status st = mt_job_load(&s->job, s->t->t, err);
    if (st == MT_OK) st = mt_job_run(&s->job, o, res, err);
    mt_job_unlock(held);
    return st;
}

/* The text of a JSON writer into a malloc'd string. */
static char *dump_summary(const mt_run_summary *sum) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int bad = mt_summary_json_write(f, sum);
    if (fclose(f) != 0 || bad) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- simulate ----------------------------------------------------------------------------- */

struct mitosis_result {
    run_state s;
    mt_job_result res;
    char *json;
    const char *warnings[MT_SUMMARY_WARNINGS];
    int n_warnings;
};

MITOSIS_API void mitosis_result_free(mitosis_result *r) {
    if (!r) return;
    mt_job_result_free(&r->res);
    run_close(&r->s);
    free(r->json);
    free(r);
}

/* One simulation of c on t into r, writing output d's files at path (d NULL: none) with the
 * configuration's output options: as the CLI, an option of another output is refused, and so is a
 * path the CLI refuses before anything is opened (a trace's own file: run/input.h). */
static mt_status simulate(mitosis_result *r, const mitosis_trace *t, const mitosis_config *c,
                          const mt_output *d, const char *path, mt_error *err) {
    MT_CHECK(run_open(&r->s, t, c, MT_JOB_SIMULATE, err));
    if (d) {
        mt_sim_output_set(&r->s.out, d, path);
        if (mt_sim_outputs_check(&r->s.out, err) != MT_OK)
            return mt_error_prefix(err, "mitosis_result_write(\"%s\")", d->name); /* ...: --chakra-json, ... */
        mt_out_spec outs[MT_N_OUTPUTS];
        MT_CHECK(mt_run_check_outputs(&r->s.job.rc, outs, mt_sim_output_specs(&r->s.out, outs), err));
    }
    return run_job(&r->s, &r->s.out, &r->res, err);
}

MITOSIS_API int mitosis_simulate(const mitosis_trace *t, const mitosis_config *c, mitosis_result **out,
                                 mitosis_error *err) {
    mt_error e = {0};
    NEED(out);
    *out = NULL;
    mitosis_result *r = calloc(1, sizeof *r);
    if (!r) return fail_out(err, (mt_fail(&e, MT_ENOMEM, "out of memory"), &e));
    mt_status st = simulate(r, t, c, NULL, NULL, &e);
    if (st == MT_OK) {
        mt_run_summary sum = mt_job_summary(&r->s.job, &r->res);
        for (int k = 0; k < sum.n_warnings && k < MT_SUMMARY_WARNINGS; k++)
            r->warnings[r->n_warnings++] = sum.warnings[k];
        if (!(r->json = dump_summary(&sum))) st = mt_fail(&e, MT_ENOMEM, "out of memory writing the JSON");
    }
    if (st != MT_OK) {
        mitosis_result_free(r);
        return fail_out(err, &e);
    }
    *out = r;
    return ok_out(err);
}

MITOSIS_API double mitosis_result_step_ms(const mitosis_result *r) { return r ? mt_simrun_step_ms(&r->res.sim.run) : NAN; }
MITOSIS_API double mitosis_result_base_step_ms(const mitosis_result *r) {
    return !r ? NAN : r->res.sim.has_base ? mt_simrun_step_ms(&r->res.sim.base) : 0;
}
MITOSIS_API int mitosis_result_gpus(const mitosis_result *r) { return r ? r->res.sim.run.plan.gpus : -1; }
MITOSIS_API int mitosis_result_dp(const mitosis_result *r) { return r ? mt_plan_shown_dp(&r->res.sim.run.plan) : -1; }
MITOSIS_API int mitosis_result_tp(const mitosis_result *r) { return r ? mt_plan_shown_tp(&r->res.sim.run.plan) : -1; }
MITOSIS_API int mitosis_result_pp(const mitosis_result *r) { return r ? mt_plan_shown_pp(&r->res.sim.run.plan) : -1; }

MITOSIS_API double mitosis_result_gpu_mem_bytes(const mitosis_result *r, int gpu) {
    if (!r) return NAN;
    const mt_sim_result *res = r->res.sim.run.res;
    return gpu >= 0 && gpu < res->n_gpus ? res->gpus[gpu].peak_mem_bytes : 0;
}

MITOSIS_API double mitosis_result_peak_mem_bytes(const mitosis_result *r) {
    return r ? mitosis_result_gpu_mem_bytes(r, r->res.sim.worst_mem_gpu) : NAN;
}

MITOSIS_API double mitosis_result_samples_per_s(const mitosis_result *r) {
    if (!r) return NAN;
    double ms = mitosis_result_step_ms(r);
    int64_t b = r->res.sim.run.plan.global_batch;
    return b > 0 && ms > 0 ? (double)b / (ms / 1e3) : -1;
}

MITOSIS_API const char *mitosis_result_json(const mitosis_result *r) { return r ? r->json : NULL; }
MITOSIS_API int mitosis_result_warnings(const mitosis_result *r) { return r ? r->n_warnings : -1; }
MITOSIS_API const char *mitosis_result_warning(const mitosis_result *r, int i) {
    return r && i >= 0 && i < r->n_warnings ? r->warnings[i] : NULL;
}

MITOSIS_API int mitosis_outputs(void) { return MT_N_OUTPUTS; }
MITOSIS_API const char *mitosis_output_name(int i) { return i >= 0 && i < MT_N_OUTPUTS ? MT_OUTPUTS[i].name : NULL; }
MITOSIS_API const char *mitosis_output_help(int i) { return i >= 0 && i < MT_N_OUTPUTS ? MT_OUTPUTS[i].help : NULL; }
MITOSIS_API int mitosis_output_is_dir(int i) { return i >= 0 && i < MT_N_OUTPUTS ? MT_OUTPUTS[i].files != NULL : -1; }

MITOSIS_API int mitosis_result_write(const mitosis_result *r, const char *what, const char *path,
                                     mitosis_error *err) {
    mt_error e = {0};
    NEED(r);
    if (!path || !*path) return fail_out(err, (mt_fail(&e, MT_EINVAL, "mitosis_result_write needs a path"), &e));
    const mt_output *d = mt_output_find(what);
    if (!d) {
        char names[256];
        return fail_out(err, (mt_fail(&e, MT_EINVAL, "write %s (got '%s')", mt_output_names(0, NULL, names,
                                      sizeof names), what ? what : ""), &e));
    }
    mitosis_result *again = calloc(1, sizeof *again);
    if (!again) return fail_out(err, (mt_fail(&e, MT_ENOMEM, "out of memory"), &e));
    mt_status st = simulate(again, r->s.t, &r->s.cfg, d, path, &e);
    mitosis_result_free(again);
    return st == MT_OK ? ok_out(err) : fail_out(err, &e);
}

/* ---- compare ------------------------------------------------------------------------------ */

struct mitosis_comparison {
    run_state s;
    mt_job_result res;
    char *json;
};

MITOSIS_API void mitosis_comparison_free(mitosis_comparison *c) {
    if (!c) return;
    mt_job_result_free(&c->res);
    run_close(&c->s);
    free(c->json);
    free(c);
}

MITOSIS_API int mitosis_compare(const mitosis_trace *t, const mitosis_config *c, mitosis_comparison **out,
                                mitosis_error *err) {
    mt_error e = {0};
    NEED(out);
    *out = NULL;
    mitosis_comparison *x = calloc(1, sizeof *x);
    if (!x) return fail_out(err, (mt_fail(&e, MT_ENOMEM, "out of memory"), &e));
    mt_status st = run_open(&x->s, t, c, MT_JOB_COMPARE, &e);
    if (st == MT_OK) st = run_job(&x->s, NULL, &x->res, &e);
    if (st == MT_OK) {
        json_t *j = mt_comparison_json(&x->res.cmp);
        char *s = j ? mt_jw_dumps(j) : NULL;
        json_decref(j);
        size_t n = s ? strlen(s) : 0;
        if (s && (x->json = malloc(n + 2))) { /* as puts prints it */
            memcpy(x->json, s, n);
            memcpy(x->json + n, "\n", 2);
        }
        free(s);
        if (!x->json) st = mt_fail(&e, MT_ENOMEM, "out of memory writing the JSON");
    }
    if (st != MT_OK) {
        mitosis_comparison_free(x);
        return fail_out(err, &e);
    }
    *out = x;
    return ok_out(err);
}

MITOSIS_API const char *mitosis_comparison_json(const mitosis_comparison *c) { return c ? c->json : NULL; }
MITOSIS_API int mitosis_comparison_rows(const mitosis_comparison *c) { return c ? c->res.cmp.n : -1; }

static const mt_cmp_row *row(const mitosis_comparison *c, int i) {
    return c && i >= 0 && i < c->res.cmp.n ? &c->res.cmp.rows[i] : NULL;
}

MITOSIS_API const char *mitosis_comparison_label(const mitosis_comparison *c, int i) {
    return row(c, i) ? row(c, i)->label : NULL;
}
MITOSIS_API double mitosis_comparison_step_ms(const mitosis_comparison *c, int i) {
    return !c ? NAN : row(c, i) && row(c, i)->ran ? row(c, i)->step_ms : 0;
}
MITOSIS_API double mitosis_comparison_mem_bytes(const mitosis_comparison *c, int i) {
    return !c ? NAN : row(c, i) && row(c, i)->ran ? row(c, i)->mem_bytes : 0;
}
MITOSIS_API int mitosis_comparison_ran(const mitosis_comparison *c, int i) { return row(c, i) && row(c, i)->ran; }
MITOSIS_API int mitosis_comparison_best(const mitosis_comparison *c) { return c ? c->res.cmp.best : -1; }

MITOSIS_API int mitosis_topology_fill(const char *spec, int gpus, int gpus_per_node, char **out, mitosis_error *err) {
    mt_error e = {0};
    NEED(out);
    *out = NULL;
    NEED(spec);
    if (gpus < 1 || gpus_per_node < 1)
        return fail_out(err, (mt_fail(&e, MT_EINVAL, "--gpus and --gpus-per-node must be >= 1 (got %d, %d)", gpus,
                                      gpus_per_node), &e));
    char buf[1024];
    if (mt_sweep_topology(spec, gpus, gpus_per_node, buf, sizeof buf, &e) != MT_OK) return fail_out(err, &e);
    if (strlen(buf) + 1 >= sizeof buf)
        return fail_out(err, (mt_fail(&e, MT_EINVAL, "--topology: the spec is too long (%zu bytes)", strlen(spec)), &e));
    *out = strdup(buf);
    return *out ? ok_out(err) : fail_out(err, (mt_fail(&e, MT_ENOMEM, "out of memory"), &e));
}

MITOSIS_API int mitosis_cluster(const char *file, const char *placement, char **json, mitosis_error *err) {
    mt_error e = {0};
    NEED(json);
    *json = NULL;
    NEED(file);
    if (placement && !mt_placement_is_policy(placement))
        return fail_out(err, (mt_fail(&e, MT_EINVAL, "--placement '%s' is not a policy: packed, spread, "
                                      "random[:SEED], rail-aligned", placement), &e));
    mt_job_process_init(); /* a first call too: its fabric is igraph's */
    mt_netcfg net;
    mt_netcfg_init(&net);
    mt_cluster c;
    mt_cluster_result r;
    memset(&r, 0, sizeof r);
    int held = mt_job_lock(NULL); /* a cluster holds igraph's lock throughout (run/job.h) */
    mt_status st = mt_cluster_load(file, &net, 0, &c, &e);
    if (st == MT_OK) {
        st = mt_cluster_place(&c, placement, &e);
        if (st == MT_OK) st = mt_cluster_run(&c, NULL, &r, &e);
        if (st == MT_OK) {
            json_t *j = mt_cluster_json(&r);
            char *s = j ? mt_jw_dumps(j) : NULL;
            json_decref(j);
            if (!s) st = mt_fail(&e, MT_ENOMEM, "out of memory writing the JSON");
            *json = s;
        }
        mt_cluster_result_free(&r);
        mt_cluster_free(&c);
    }
    mt_job_unlock(held);
    return st == MT_OK ? ok_out(err) : fail_out(err, &e);
}

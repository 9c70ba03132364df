/* run/job.c — see job.h. */
#include "run/job.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <igraph.h>

#include "netmodels/netcfg.h"
#include "perfmodel/fit.h"
#include "run/flags.h"
#include "run/pool.h"
#include "run/simrun.h"
#include "util/budget.h"

static const char *const CMD_NAMES[] = {"simulate", "compare", "emulate", "cluster"};

const char *mt_job_cmd_name(mt_job_cmd cmd) { return CMD_NAMES[cmd <= MT_JOB_CLUSTER ? cmd : 0]; }

int mt_job_tables(mt_job_cmd cmd, const mt_flag_table **out) {
    int n = 0;
    if (cmd == MT_JOB_COMPARE) out[n++] = &MT_RUN_COMPARE_FLAGS;
    for (int k = 0; MT_RUN_TABLE_LIST[k]; k++) out[n++] = MT_RUN_TABLE_LIST[k];
    n += mt_netcfg_tables(out + n);
    return n;
}

const mt_flag *mt_job_find_flag(mt_job_cmd cmd, const char *name) {
    const mt_flag_table *t[MT_JOB_TABLES_MAX];
    int n = mt_job_tables(cmd, t);
    for (int k = 0; k < n; k++) {
        const mt_flag *f = mt_flag_find(t[k], name);
        if (f) return f;
    }
    return NULL;
}

/* ---- words -------------------------------------------------------------------------------- */

int mt_job_words_push(mt_job_words *w, const char *s) {
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        char **v = realloc(w->w, (size_t)cap * sizeof *v);
        if (!v) return -1;
        w->w = v;
        w->cap = cap;
    }
    if (!(w->w[w->n] = strdup(s))) return -1;
    w->n++;
    return 0;
}

void mt_job_words_free(mt_job_words *w) {
    for (int k = 0; k < w->n; k++) free(w->w[k]);
    free(w->w);
    w->w = NULL;
    w->n = w->cap = 0;
}

int mt_job_words_copy(mt_job_words *d, const mt_job_words *s) {
    mt_job_words x = {0};
    for (int k = 0; k < s->n; k++)
        if (mt_job_words_push(&x, s->w[k])) {
            mt_job_words_free(&x);
            return -1;
        }
    mt_job_words_free(d);
    *d = x;
    return 0;
}

/* ---- the job ------------------------------------------------------------------------------ */

mt_status mt_job_open(mt_job *j, mt_job_cmd cmd, mt_error *err) {
    memset(j, 0, sizeof *j);
    j->cmd = cmd;
    mt_compare_config_init(&j->cc);
    MT_CHECK(mt_run_config_init(&j->rc, err));
    j->rc_live = 1;
    return MT_OK;
}

mt_status mt_job_parse(mt_job *j, int argc, char **argv, const char *name, const mt_flag_bind *own, int n_own,
                       int flags, mt_error *err) {
    mt_flag_bind b[MT_RUN_OWN_MAX];
    int n = 0;
    if (j->cmd == MT_JOB_COMPARE) b[n++] = (mt_flag_bind){&MT_RUN_COMPARE_FLAGS, &j->cc};
    if (n_own < 0 || n + n_own > MT_RUN_OWN_MAX) return mt_fail(err, MT_EINTERNAL, "too many flag tables for one job");
    for (int k = 0; k < n_own; k++) b[n++] = own[k];
    if (!name) name = mt_job_cmd_name(j->cmd);
    MT_CHECK(mt_run_flags_parse_unchecked(argc, argv, name, &j->rc, b, n, &j->seen, err));
    return (flags & MT_JOB_UNCHECKED) ? MT_OK : mt_job_check(j, err);
}

mt_status mt_job_check(mt_job *j, mt_error *err) {
    if (j->seen.help) return MT_OK;
    MT_CHECK(mt_netcfg_check(&j->rc.net, &j->seen, err));
    if (j->cmd == MT_JOB_COMPARE) MT_CHECK(mt_compare_check(&j->rc, &j->cc, err));
    return MT_OK;
}

/* The device check: the GPU count of everything but compare (which lists its own plans). */
static mt_status check_device(mt_job *j, mt_error *err) {
    return j->cmd == MT_JOB_COMPARE ? MT_OK : mt_run_check_gpus(&j->rc, j->in.t, err);
}

mt_status mt_job_load(mt_job *j, const mt_trace *loaded, mt_error *err) {
    MT_CHECK(loaded ? mt_run_input_bind(&j->rc, loaded, &j->in, err) : mt_run_input_open(&j->rc, &j->in, err));
    j->in_live = 1;
    if (mt_budget_stopped(mt_budget_current()) == MT_BUDGET_CANCELLED)
        return mt_budget_check(err); /* cancelled while the trace loaded (the wall limit: after the estimate) */
    return check_device(j, err);
}

mt_status mt_job_share(mt_job *j, const mt_job *from, mt_error *err) {
    j->in = from->in;
    j->in_live = 0;
    j->rc.pm = from->rc.pm;
    j->rc.host_scale = from->rc.host_scale;
    j->rc.op_scale = from->rc.op_scale;
    return check_device(j, err);
}

void mt_job_close(mt_job *j) {
    if (j->in_live) mt_run_input_close(&j->in);
    if (j->rc_live) mt_run_config_free(&j->rc);
    j->in_live = j->rc_live = 0;
}

/* ---- its run ------------------------------------------------------------------------------ */

static pthread_once_t PROCESS_ONCE = PTHREAD_ONCE_INIT;

static void process_setup(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    mt_fit_single_thread();
}

void mt_job_process_init(void) { pthread_once(&PROCESS_ONCE, process_setup); }

int mt_job_lock(const mt_job *j) {
    if (j && mt_simrun_igraph_free(&j->rc.net)) return 0;
    mt_pool_lock(NULL);
    return 1;
}

void mt_job_unlock(int held) {
    if (held) mt_pool_unlock(NULL);
}

mt_status mt_job_run(mt_job *j, const mt_sim_outputs *o, mt_job_result *r, mt_error *err) {
    memset(r, 0, sizeof *r);
    r->cmd = j->cmd;
    if (j->cmd == MT_JOB_COMPARE) {
        mt_status st = mt_run_compare(&j->rc, &j->in, &j->cc, &r->cmp, err);
        if (st != MT_OK) mt_comparison_free(&r->cmp);
        MT_CHECK(st);
    } else if (j->cmd == MT_JOB_SIMULATE) {
        mt_sim_outputs none;
        mt_sim_outputs_init(&none);
        mt_status st = mt_run_simulate(&j->rc, &j->in, o ? o : &none, &r->sim, err);
        if (st != MT_OK) mt_simulation_free(&r->sim);
        MT_CHECK(st);
    } else {
        return mt_fail(err, MT_EINTERNAL, "a %s job is not run by mt_job_run", mt_job_cmd_name(j->cmd));
    }
    r->live = 1;
    return MT_OK;
}

void mt_job_result_free(mt_job_result *r) {
    if (!r->live) return;
    if (r->cmd == MT_JOB_COMPARE) mt_comparison_free(&r->cmp);
    else mt_simulation_free(&r->sim);
    r->live = 0;
}

mt_run_summary mt_job_summary(const mt_job *j, const mt_job_result *r) {
    return mt_simulation_summary(&r->sim, &j->rc, &j->in);
}

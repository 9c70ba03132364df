/* run/job.h — the one front door: every front-end (cli/, serve/, lib/, emulate's command, a
 * cluster file's jobs) runs a job through these calls, in this order:
 *
 *   mt_job_open     the configuration (run/config.h) at its defaults, compare's too
 *   mt_job_parse    the command's words through the run flag tables (run/flags.h) and the
 *                   front-end's own tables; then the combination checks (network flags that do
 *                   not apply, compare's plans-and-sweep) unless MT_JOB_UNCHECKED
 *   mt_job_load     the input bound (run/input.h: the trace loaded, or one the caller keeps,
 *                   the device rules, the performance model, calibration), a cancel while the
 *                   trace loaded honoured (util/budget.h), the GPU count checked (simulate,
 *                   emulate, cluster jobs: mt_run_check_gpus)
 *   mt_job_run      simulate (with a set of outputs, run/simulate.h) or compare, one result
 *   mt_job_close    everything released, whatever step failed (safe after a zeroed struct)
 *
 * Front-ends add only what is theirs between the steps: their output flags and files, what they
 * print, their locks and progress lines. The flag tables a command's run options come from, and
 * a flag looked up in them by name, are here too (the C API and the web API take the same ones).
 * Invariant: rc points into the words given to mt_job_parse, which the caller keeps alive as long
 * as the job; after a successful mt_job_load, in is bound to rc's trace.
 */
#ifndef MT_RUN_JOB_H
#define MT_RUN_JOB_H

#include "run/compare.h"
#include "run/config.h"
#include "run/input.h"
#include "run/simulate.h"
#include "util/err.h"
#include "util/flags.h"

/* The commands a job runs. Emulate and cluster jobs use the front door up to mt_job_load; their
 * runs are emulate/'s and run/cluster.h's. */
typedef enum { MT_JOB_SIMULATE = 0, MT_JOB_COMPARE, MT_JOB_EMULATE, MT_JOB_CLUSTER } mt_job_cmd;

/* "simulate", "compare", "emulate", "cluster". */
const char *mt_job_cmd_name(mt_job_cmd cmd);

enum { MT_JOB_TABLES_MAX = 24 };

/* The tables a command's run options come from (compare's plan list, the run tables, the
 * network's: `mitosis CMD --help` less the output flags and --dry-run), into out; their count. */
int mt_job_tables(mt_job_cmd cmd, const mt_flag_table **out);
/* The run option named `name` ("--gpus") of cmd, NULL when it has none. */
const mt_flag *mt_job_find_flag(mt_job_cmd cmd, const char *name);

/* A growable list of owned words (a command's argv). */
typedef struct mt_job_words {
    char **w;
    int n, cap;
} mt_job_words;

/* 0, or -1 out of memory (w unchanged). */
int mt_job_words_push(mt_job_words *w, const char *s);
/* A copy of s into d (d's words released first); 0, or -1 out of memory (d unchanged). */
int mt_job_words_copy(mt_job_words *d, const mt_job_words *s);
void mt_job_words_free(mt_job_words *w);

typedef struct mt_job {
    mt_job_cmd cmd;
    mt_run_config rc;
    mt_compare_config cc;     /* compare: the plan list, the sweep, its callbacks */
    mt_flag_seen seen;        /* what mt_job_parse found */
    mt_run_input in;
    int rc_live, in_live;
} mt_job;

/* mt_job_parse without the combination checks (libmitosis checks each option as it is set, the
 * combinations with mt_job_check when the run starts, once the trace paths are in). */
enum { MT_JOB_UNCHECKED = 1 };

/* The job at its defaults (MT_ENOMEM when the configuration cannot be made). */
mt_status mt_job_open(mt_job *j, mt_job_cmd cmd, mt_error *err);
/* Parses argv (argv[0] the command; `name` names it in errors, NULL: the command's name) into
 * the job: the run tables and the network's bound to rc, compare's plan list to cc, the caller's
 * n_own tables too (at most MT_RUN_OWN_MAX - 1); what was given into seen. Then mt_job_check,
 * unless flags has MT_JOB_UNCHECKED. */
mt_status mt_job_parse(mt_job *j, int argc, char **argv, const char *name, const mt_flag_bind *own, int n_own,
                       int flags, mt_error *err);
/* The combination checks: network flags that do not apply (mt_netcfg_check), compare's plans and
 * sweep (mt_compare_check); none after --help. */
mt_status mt_job_check(mt_job *j, mt_error *err);
/* Binds the input: loads rc's trace, or (loaded not NULL) binds the trace the caller loaded and
 * keeps; then the checks above. */
mt_status mt_job_load(mt_job *j, const mt_trace *loaded, mt_error *err);
/* mt_job_load with the input of `from` (a loaded job of the same trace and operator-time flags),
 * borrowed: its performance model and calibrated factors too; close leaves it to `from`, which
 * must outlive j (a cluster file's jobs of one model load it once). */
mt_status mt_job_share(mt_job *j, const mt_job *from, mt_error *err);
void mt_job_close(mt_job *j);

/* The lock policy, one for the process (front-ends that run jobs on several threads: the C
 * library, the server's workers; compare's plans on run/pool.h's threads): Debian's igraph is
 * built without IGRAPH_THREAD_SAFE (its error handler and IGRAPH_FINALLY stack are globals), so
 * igraph runs only under run/pool.h's process-wide recursive lock (mt_pool_lock). The sections that
 * call it take the lock themselves (building, freezing and freeing a topology, the network model:
 * run/simrun.h); a job whose simulation calls igraph throughout (the latency routing metric:
 * mt_simrun_igraph_free) or a cluster run (its fabric's) holds it for the whole job, from before
 * mt_job_load to after mt_job_run. Nothing else in a job is shared: runs of other jobs go on at
 * once. mt_job_lock takes the lock when the job needs it whole (j NULL: a cluster run) and says
 * whether it did; mt_job_unlock(held) releases it. */
int mt_job_lock(const mt_job *j);
void mt_job_unlock(int held);

/* The process-wide settings every front-end makes before its first job, once per process
 * (pthread_once; safe from any thread): igraph's error handler reports and returns instead of
 * aborting and its warnings are dropped (igraph_set_error_handler / _warning_handler, global to
 * the process), and OpenBLAS runs on the calling thread (perfmodel/fit.h mt_fit_single_thread:
 * openblas_set_num_threads(1), also global). The CLI's main and libmitosis's first call make them. */
void mt_job_process_init(void);

/* One job's result: a simulation or a comparison. */
typedef struct mt_job_result {
    mt_job_cmd cmd;
    mt_simulation sim;        /* simulate */
    mt_comparison cmp;        /* compare */
    int live;
} mt_job_result;

/* Runs a loaded simulate or compare job; o: the files a simulation writes (NULL: none; compare
 * writes none). On failure r holds nothing (mt_job_result_free is still safe). */
mt_status mt_job_run(mt_job *j, const mt_sim_outputs *o, mt_job_result *r, mt_error *err);
void mt_job_result_free(mt_job_result *r);

/* The report view of a simulate job's result (report/summary.h). */
mt_run_summary mt_job_summary(const mt_job *j, const mt_job_result *r);

#endif

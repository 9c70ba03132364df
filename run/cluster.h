/* run/cluster.h — a cluster run: several jobs on one fabric (`mitosis cluster FILE`). Each job is
 * a trace and everything `simulate` takes for it (plan, batch, operator times, host model,
 * steps), a placement on the fabric's GPUs (run/placement.h) and a start time. All jobs run on
 * one engine and one network model (sim/simulate.h mt_simulate_jobs): each walks its own program
 * with its own communicators on its own GPUs, and the flows of different jobs share links under
 * the same max-min model. Each job is also simulated alone on the same placement and fabric, so
 * its slowdown is together / alone of the same thing.
 *
 * The job file (JSON):
 *   {"topology": "fattree:k=8", "gpus_per_node": 4, "network": ["--link-bw", "50GB/s"],
 *    "placement": "packed",
 *    "jobs": [{"name": "a", "trace": "traces/cpu-resnet18-b8", "args": ["--gpus", "8", "--strategy", "ddp"],
 *              "placement": "spread", "start_ms": 0, "steps": 1}, ...]}
 * Trace paths are relative to the file's folder unless absolute (or found from the current
 * directory). "placement" (per job, else the file's, else packed) is a policy or a list
 * "0-7,16-23"; gpus_per_node defaults to the topology's node size (multinode gpus=G, fattree k/2,
 * else 8). What is refused, in one line naming the job: a network flag in a job's args (the
 * fabric is the cluster's), a what-if (not modelled across jobs), overlapping placements, more
 * GPUs than the fabric, an unknown trace or key.
 * Invariants: a job's alone and together runs use the same program, placement and fabric; two
 * jobs whose routes share no link run together exactly as alone (the max-min solver's components
 * are independent: network/lmm.h).
 */
#ifndef MT_RUN_CLUSTER_H
#define MT_RUN_CLUSTER_H

#include <stdint.h>

#include "netmodels/netcfg.h"
#include "run/config.h"
#include "run/job.h"
#include "report/clusterrep.h"
#include "run/simrun.h"
#include "sim/simulate.h"

typedef struct mt_cluster_job {
    char name[64];
    char *trace;              /* as resolved */
    char **argv;              /* argv[0] = "job", then its flags */
    int argc;
    char *placement;          /* policy or list */
    double start_ms;
    int32_t steps;
    mt_job job;               /* its configuration and input (run/job.h); the input owned unless
                               * in_from >= 0 */
    mt_simrun run;            /* program (and host model) only: mt_simrun_build_program; owned
                               * unless run_from >= 0 */
    int32_t in_from, run_from; /* an earlier job with the same trace and operator-time flags whose
                                * input it reads (-1: its own); ... and the same plan too, whose
                                * program it runs */
    char *in_key, *run_key;   /* what decides sharing: trace + non-plan flags; + plan flags */
    int32_t *gpus;            /* placed: fabric GPU per rank */
    const char *placed_by;    /* the policy or list it was placed by (borrowed) */
    int32_t n;                /* its GPUs */
} mt_cluster_job;

typedef struct mt_cluster {
    char *file;
    mt_netcfg net;
    char topology[256];
    int32_t gpn;              /* GPUs per node for placement */
    char *placement;          /* the file's default policy */
    int32_t n_jobs;
    mt_cluster_job *jobs;
    char **net_argv;          /* the file's "network" flags (owned strings) */
    int net_argc;
    mt_topo *topo;
    int32_t total;            /* the fabric's GPUs */
} mt_cluster;

/* Refuses an output (util/outpath.h) that is one of the cluster's inputs: the job file, its topology
 * file, every job's trace and files. */
mt_status mt_cluster_check_outputs(const mt_cluster *c, const mt_out_spec *outs, int n, mt_error *err);

/* The program job j runs (its own, or the earlier identical job's). */
const mt_simrun *mt_cluster_job_run(const mt_cluster *c, int32_t j);

/* Reads the job file, builds the fabric (net: the command line's network flags, which override
 * the file's), loads every job's trace and builds its program. On failure nothing is kept. */
mt_status mt_cluster_load(const char *path, const mt_netcfg *net, int net_given, mt_cluster *c, mt_error *err);
/* Places every job in file order; policy (NULL: each job's own) overrides every job placed by a
 * policy (explicit lists stay). */
mt_status mt_cluster_place(mt_cluster *c, const char *policy, mt_error *err);
void mt_cluster_free(mt_cluster *c);

/* Runs every job alone, then all together (its spans into spans when not NULL). On failure
 * nothing is kept. */
mt_status mt_cluster_run(mt_cluster *c, mt_cluster_spans *spans, mt_cluster_result *out, mt_error *err);
void mt_cluster_result_free(mt_cluster_result *r);

/* The files a cluster run writes (NULL: not written): --csv DIR, --html FILE, --timeline FILE. */
typedef struct mt_cluster_files {
    const char *csv, *html, *timeline;
} mt_cluster_files;

/* Places every job (policy as mt_cluster_place), runs them (mt_cluster_run) and writes f's files
 * (report/clusterrep.h), the CSV, then the HTML, then the timeline. On failure nothing is kept. */
mt_status mt_cluster_run_files(mt_cluster *c, const char *policy, const mt_cluster_files *f, mt_cluster_result *out,
                               mt_error *err);

/* The cluster placed and run under every policy of run/placement.h in turn (jobs with an
 * explicit GPU list keep it), the rows ranked by the worst job's slowdown, then the mean. */
mt_status mt_cluster_compare_placements(mt_cluster *c, mt_cluster_placements *out, mt_error *err);

#endif

/* cli/planopts.h — the flags that say what to simulate, shared by `simulate` and `compare`:
 * the plan (--gpus, --dp, --tp, --pp, --strategy, --batch, --micro-batches, --schedule,
 * --bucket, --first-bucket, --placement, --algo, --ring-model, --chunks, --gpus-per-node),
 * the operator-time model (--perf-model, --model, --target-gpu, --gpu-specs, --trace-gpu),
 * the host model (--host-model, --host-scale), calibration (--calibrate, --measured-ms), the trace step (--step), the memory limit (--gpu-mem) and
 * every network flag (netmodels/netcfg.h).
 *
 * A command walks its argv, offers each argument to mt_planopts_take first (which also takes
 * the trace paths, the arguments that are not flags, and spots --help) and handles the rest
 * itself, then turns the options into a plan for a GPU count with mt_planopts_plan.
 */
#ifndef MT_CLI_PLANOPTS_H
#define MT_CLI_PLANOPTS_H

#include <stdio.h>

#include "netmodels/netcfg.h"
#include "cli/simrun.h"
#include "extrapolate/plan.h"
#include "perfmodel/perfmodel.h"
#include "tracer/trace.h"
#include "util/err.h"

enum { MT_PLANOPTS_MAX_PATHS = 8 };

typedef struct mt_planopts {
    const char *paths[MT_PLANOPTS_MAX_PATHS]; /* the trace (a folder, or its files) */
    int n_paths;
    mt_plan plan;             /* sizes as given (0 = not given) */
    const char *strategy;     /* --strategy dp|ddp|tp|pp, NULL */
    int schedule_set;         /* --schedule was given */
    mt_netcfg net;
    trace_load_opts topts;
    mt_pm_opts pm;
    int32_t gpus_per_node;    /* default 8 */
    double gpu_mem;           /* --gpu-mem bytes, 0 = not given */
    int host_model;           /* MT_HOST_AUTO (default), MT_HOST_NONE, MT_HOST_TRACE */
    double host_scale;        /* --host-scale (default 1); --calibrate may set it */
    double op_scale;          /* operator device times multiplied by this (default 1; set by
                                 calibration, cli/calibrate.h) */
    int calibrate;            /* --calibrate: to the measured step in the trace's meta.json */
    double measured_ms;       /* --measured-ms: to this measured step (0 = not given) */
} mt_planopts;

void mt_planopts_init(mt_planopts *o);

/* If argv[*i] is one of the flags above or a trace path, consumes it (and its value), advances
 * *i and returns 1; 2 for --help or -h (the command prints its usage); 0 when it is not ours;
 * -1 (a one-line message naming the flag in err) for a bad value or too many paths. */
int mt_planopts_take(mt_planopts *o, int argc, char **argv, int *i, mt_error *err);

/* The plan for `gpus` GPUs (0: --gpus as given): with --strategy and no sizes, all GPUs go to
 * that strategy, as `simulate --strategy S` documents. Unresolved (see mt_plan_resolve). */
mt_plan mt_planopts_plan(const mt_planopts *o, int32_t gpus);

/* The memory limit a GPU's estimated peak is checked against: --gpu-mem, else the memory of
 * the --target-gpu (from the GPU table), else the traced GPU's when the trace knows it, else 0
 * (unknown). */
double mt_planopts_mem_limit(const mt_planopts *o, const trace *t);

/* Loads the trace (o->paths) and creates the performance model. On failure frees what it
 * built. */
mt_status mt_planopts_load(const mt_planopts *o, trace **t, mt_perfmodel **pm, mt_error *err);
/* Prints the performance model's warning, if any, as "mitosis CMD: warning: ..." on stderr:
 * once the command has succeeded, so that a failing run's stderr is its one error line. */
void mt_planopts_warn(const mt_perfmodel *pm, const char *cmd);

/* Help for the flags above except --gpus and the network flags (mt_netcfg_help). */
void mt_planopts_help(FILE *out);

#endif

/* run/config.h — what a run is asked to do: the one configuration struct every front-end (the
 * CLI's simulate and compare, a web server, an MPI launcher, a benchmark) fills and hands to
 * run/: the trace, the plan, the network, the operator-time and host models, calibration, the
 * what-if scenario.
 *
 * Front-ends fill it through the run flag tables (run/flags.h, entries writing into this struct
 * by offset), parsed by run/job.h for the CLI, the web API, the C library and cluster jobs alike;
 * nothing here parses text. Sizes left at 0 are "not given" and resolved per run
 * (mt_run_plan, then mt_plan_resolve, once per run). Invariant: after mt_run_config_init every
 * field holds its default, and mt_run_config_free releases what the struct owns (the scenario).
 */
#ifndef MT_RUN_CONFIG_H
#define MT_RUN_CONFIG_H

#include <stdint.h>

#include "extrapolate/hostmodel.h"
#include "extrapolate/plan.h"
#include "netmodels/netcfg.h"
#include "perfmodel/perfmodel.h"
#include "sim/scenario.h"
#include "tracer/trace.h"
#include "util/err.h"

enum { MT_RUN_MAX_PATHS = 8 };

/* `--strategy`: a data-parallel mode and, with no sizes given, where all N GPUs go. */
typedef enum {
    MT_STRATEGY_NONE = -1,
    MT_STRATEGY_DP = 0, /* data parallel, one all-reduce after backward (DataParallel) */
    MT_STRATEGY_DDP,    /* data parallel, bucketed all-reduce overlapping backward (DDP) */
    MT_STRATEGY_TP,     /* tensor parallel */
    MT_STRATEGY_PP      /* pipeline parallel */
} mt_strategy;
#define MT_STRATEGY_CHOICES "dp|ddp|tp|pp"

/* Host model choice: auto is `trace` when the trace has kernel launches (Kineto GPU traces). */
enum { MT_HOST_AUTO = -1, MT_HOST_NONE = 0, MT_HOST_TRACE = 1 };

/* --comm-slowdown auto: from the predicted GPU (perfmodel/commslow.h), off without one. */
#define MT_COMM_SLOW_AUTO (-1.0)

typedef struct mt_run_config {
    /* the trace */
    const char *paths[MT_RUN_MAX_PATHS]; /* a folder, or its files */
    int n_paths;
    trace_load_opts topts;
    int32_t blocks;            /* --blocks N: the trace's repeating block repeated or cut to N before
                                * the plan (extrapolate/repeat.h); 0 as traced */
    int64_t seq;               /* --seq N: the trace rewritten to sequence length N before the plan
                                * (extrapolate/seqlen.h); 0 as traced */
    /* the plan */
    mt_plan plan;              /* sizes as given (0 = not given), unresolved */
    int strategy;              /* mt_strategy */
    int schedule_set;          /* --schedule was given (compare keeps it fixed) */
    int32_t gpus_per_node;     /* hier collectives and {nodes} (default 8) */
    /* the network */
    mt_netcfg net;
    /* operator and host times */
    mt_pm_opts pm;
    int host_model;            /* MT_HOST_AUTO, _NONE, _TRACE */
    double host_scale;         /* host times x this (default 1; calibration may set it) */
    double op_scale;           /* operator device times x this (default 1; set by calibration) */
    double comm_slowdown;      /* --comm-slowdown: MT_COMM_SLOW_AUTO (default), 0 off, > 0 the slowdown of
                                * every compute kernel while collectives run (run/simrun.h) */
    int calibrate;             /* calibrate to the meta.json beside the trace */
    int no_calibrate;          /* --no-calibrate: not even a GPU trace's meta.json (run/calibrate.h) */
    double measured_ms;        /* calibrate to this measured step (0 = not given) */
    int calibrate_comm;        /* --calibrate-comm auto|on|off (run/commfit.h), default auto */
    double gpu_mem;            /* memory limit per GPU in bytes (0 = the target's or the trace's) */
    /* what-if */
    mt_scenario *scenario;     /* owned; never NULL after a successful init */
    const char *scenario_paths[MT_RUN_MAX_PATHS]; /* the --scenario files read (inputs: util/outpath.h) */
    int n_scenario_paths;
    long long seed;            /* -1: the scenario file's (default 0) */
    int32_t steps;             /* 0: the scenario file's (default 1) */
    int no_fold;               /* --no-fold: every GPU walks its program (sim/simulate.h folding) */
    int no_netfold;            /* --no-net-fold: folded programs, every replica's traffic on the network */
    int dry_run;               /* --dry-run: build the run, print its cost estimate (run/estimate.h), stop */
} mt_run_config;

/* Defaults (see the fields); MT_ENOMEM when the scenario cannot be created. */
mt_status mt_run_config_init(mt_run_config *c, mt_error *err);
void mt_run_config_free(mt_run_config *c);

/* Appends a trace path (MT_EINVAL beyond MT_RUN_MAX_PATHS). */
mt_status mt_run_config_add_path(mt_run_config *c, const char *path, mt_error *err);

/* The unresolved plan for `gpus` GPUs (0: the configured count): with a strategy and no sizes,
 * all GPUs go to it, as `simulate --strategy S` documents. */
mt_plan mt_run_plan(const mt_run_config *c, int32_t gpus);

/* simulate without --gpus or a size: fine for the trace of one rank of a multi-rank job (its world
 * size is the default, mt_plan_resolve), else MT_EINVAL naming the trace. */
mt_status mt_run_check_gpus(const mt_run_config *c, const mt_trace *t, mt_error *err);

/* The memory limit a GPU's estimated peak is checked against: gpu_mem, else the target GPU's
 * memory (GPU table), else the traced GPU's when the trace knows it, else 0 (unknown).
 * *source (may be NULL) says which. */
double mt_run_mem_limit(const mt_run_config *c, const mt_trace *t, const char **source);

#endif

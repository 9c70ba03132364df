/* run/simrun.h — one simulation from an already loaded trace: resolve the plan (once), build
 * the stage programs (with the caller's performance model), the host model, the topology, the
 * engine and the network model, then run mt_simulate. Every front-end and every command
 * (simulate, compare, calibration, what-if baselines) answers through it, so they answer the
 * same question the same way.
 *
 * Two steps, so that a caller can look at the resolved run before it starts (open output files
 * for its GPU count, bind a what-if scenario to its program, observe its links):
 *   mt_simrun_build  -> everything built, nothing simulated (run->sim holds the options to use)
 *   mt_simrun_exec   -> the prepare hook, then the simulation (run->res)
 * mt_simrun_run does both. Everything built is kept in the mt_simrun until mt_simrun_free.
 *
 * Threads: runs of one trace and performance model may go on at once on worker threads of a
 * run/pool.h map (both are only read). With cfg.pool set, the steps that call igraph (whose
 * global state is not thread-safe in Debian's build) run under the pool's lock: building the
 * topology and freezing it (its igraph mirror, made here rather than at the first route), the
 * network model, and freeing the topology. Routing under the hops metric then uses the
 * topology's own search; the latency metric runs igraph's Dijkstra during the simulation, so a
 * caller runs such runs one at a time (mt_simrun_igraph_free).
 */
#ifndef MT_RUN_SIMRUN_H
#define MT_RUN_SIMRUN_H

#include "extrapolate/hostmodel.h"
#include "extrapolate/nccl.h"
#include "extrapolate/plan.h"
#include "extrapolate/program.h"
#include "netmodels/netcfg.h"
#include "network/netmodel.h"
#include "perfmodel/perfmodel.h"
#include "run/config.h"
#include "run/pool.h"
#include "sim/engine.h"
#include "sim/simulate.h"
#include "tracer/trace.h"

struct mt_simrun;
/* Called by mt_simrun_exec before the simulation runs (what-if scenarios bind to the program
 * and perturb the network here). */
typedef mt_status (*mt_simrun_prepare_fn)(void *ctx, struct mt_simrun *run, mt_error *err);

typedef struct mt_simrun_cfg {
    mt_plan plan;            /* unresolved; resolved into mt_simrun.plan */
    mt_netcfg net;           /* without --topology: switch:N (photonic: its own endpoints) */
    mt_sim_opts sim;         /* observers, per-rank speeds, steps */
    int host_model;          /* MT_HOST_AUTO (trace when the trace has launches), _NONE, _TRACE */
    double host_scale;       /* host work times multiplied by this (default 1) */
    double op_scale;         /* operator device times multiplied by this (default 1) */
    double comm_slowdown;    /* MT_COMM_SLOW_AUTO: perfmodel/commslow.h on the predicted GPU (none on CPU
                              * processes or a GPU without an SM count); 0 none; > 0 every op's */
    mt_link_rate_fn on_link; /* optional: link load observer (models with links) */
    void *link_ctx;
    mt_simrun_prepare_fn prepare; /* optional */
    void *prepare_ctx;
    mt_pool *pool;           /* the map this run is an item of (igraph under its lock); NULL none */
    int bound_only;          /* mt_simrun_build_program only: a bound-only program (program.h), not
                              * to be simulated (and no comm_slow: a bound does not read it) */
    const char *auto_rings;  /* optional: the output flag for which --algo auto runs rings (--chakra writes
                              * schedules), said in mt_simrun.algo_why where auto would have run NCCL's
                              * tuner; NULL: auto chooses */
    const mt_hostmodel *host_shared; /* optional: the host model mt_simrun_host gave for this trace, host_model
                              * and host_scale, used as is (not rebuilt, not freed): a plan search builds
                              * it once for all its plans */
} mt_simrun_cfg;

/* Defaults: mt_plan_init, mt_netcfg_init, mt_sim_opts_init, host model auto, scales 1. */
void mt_simrun_cfg_init(mt_simrun_cfg *c);
/* The simulation part of a run configuration: plan for `gpus` GPUs (0: as configured, see
 * mt_run_plan), network, host model and scales, ranks per node. No observers, no scenario. */
mt_simrun_cfg mt_simrun_cfg_of(const mt_run_config *rc, int32_t gpus);

typedef struct mt_simrun {
    mt_plan plan;            /* as resolved */
    char topology[128];      /* the spec used ("" for photonic on its own endpoints) */
    mt_program *prog;
    mt_topo *topo;           /* NULL for photonic without --topology */
    mt_engine *e;
    mt_netmodel net;
    const mt_hostmodel *host; /* the host model used, or NULL */
    int host_borrowed;       /* host is cfg's host_shared (mt_simrun_free leaves it) */
    mt_sim_opts sim;         /* the options mt_simrun_exec uses (cfg's; observers may be added) */
    mt_link_rate_fn on_link; /* link load observer installed by mt_simrun_exec (models with links) */
    void *link_ctx;
    mt_simrun_prepare_fn prepare;
    void *prepare_ctx;
    mt_sim_result *res;      /* after mt_simrun_exec */
    mt_netcfg netcfg;        /* the network configuration (a folded run that diverged rebuilds it) */
    mt_pool *pool;           /* cfg's, for mt_simrun_free */
    mt_nccl_fabric nccl;     /* --algo nccl: the fabric its tuner sees (mt_sim_opts.nccl points here) */
    int nccl_arch;           /* 1 + the mt_nccl_arch of the predicted GPU; 0 (none): the preset's */
    float *comm_slow;        /* per op of the program's trace, its slowdowns (mt_sim_opts.comm_slow), NULL */
    char comm_slow_why[160]; /* what the slowdown model is (or why there is none), for reports */
    char algo_why[256];      /* "" or: the collectives run rings where --algo auto would run NCCL's tuner, and why */
} mt_simrun;

/* Builds the run of t under cfg with op times from pm (NULL: the trace's own times). On failure
 * everything built so far is freed and err says why (MT_EINVAL: the plan or the topology cannot
 * take it). */
mt_status mt_simrun_build(const mt_trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_simrun *out,
                          mt_error *err);
/* The host model cfg asks for of t (*out NULL: none), scaled by cfg->host_scale, as a run builds it;
 * free with mt_hostmodel_free. MT_EINVAL when the scale puts the host's work out of range. */
mt_status mt_simrun_host(const mt_trace *t, const mt_simrun_cfg *cfg, mt_hostmodel **out, mt_error *err);
/* The first half of mt_simrun_build: the plan resolved, the host model and the program built; no
 * topology, engine or network model (run/estimate.h prices a run from this). Free with
 * mt_simrun_free; never exec it. */
mt_status mt_simrun_build_program(const mt_trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_simrun *out,
                                  mt_error *err);
/* Runs what mt_simrun_build built (once). On failure the run is freed. */
mt_status mt_simrun_exec(mt_simrun *run, mt_error *err);
/* mt_simrun_build then mt_simrun_exec. */
mt_status mt_simrun_run(const mt_trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_simrun *out,
                        mt_error *err);
void mt_simrun_free(mt_simrun *r);

/* 1 when a run with this network calls no igraph function during its simulation (after
 * mt_simrun_build), so runs may go on at once: every case but the latency routing metric. */
int mt_simrun_igraph_free(const mt_netcfg *net);

/* The step time in ms (the mean over the steps simulated). */
double mt_simrun_step_ms(const mt_simrun *r);

#endif

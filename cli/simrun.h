/* cli/simrun.h — one simulation from an already loaded trace: resolve the plan, build the
 * stage programs (with the caller's performance model), the topology, the engine and the
 * network model, run mt_simulate. Shared by `simulate` and `compare` so that every command
 * answers the same question the same way.
 *
 * Everything built is kept in the mt_simrun (the program for stage data, the topology and the
 * network model for per-link statistics) until mt_simrun_free.
 */
#ifndef MT_CLI_SIMRUN_H
#define MT_CLI_SIMRUN_H

#include "netmodels/netcfg.h"
#include "extrapolate/plan.h"
#include "extrapolate/program.h"
#include "network/netmodel.h"
#include "perfmodel/perfmodel.h"
#include "sim/engine.h"
#include "sim/simulate.h"
#include "tracer/trace.h"

enum { MT_HOST_AUTO = -1, MT_HOST_NONE = 0, MT_HOST_TRACE = 1 };

struct mt_simrun;
/* Called once the program, topology, engine and model exist and before the simulation runs
 * (what-if scenarios bind to the program and perturb the network here). */
typedef mt_status (*mt_simrun_prepare_fn)(void *ctx, struct mt_simrun *run, mt_error *err);

typedef struct mt_simrun_cfg {
    mt_plan plan;            /* unresolved; resolved into mt_simrun.plan */
    mt_netcfg net;           /* without --topology: switch:N (photonic: its own endpoints) */
    mt_sim_opts sim;         /* observers, per-rank speeds */
    int host_model;          /* MT_HOST_AUTO (trace when the trace has launches), _NONE, _TRACE */
    double host_scale;       /* host work times multiplied by this (default 1) */
    double op_scale;         /* operator device times multiplied by this (default 1) */
    mt_link_rate_fn on_link; /* optional: link load observer (models with links) */
    void *link_ctx;
    mt_simrun_prepare_fn prepare; /* optional */
    void *prepare_ctx;
} mt_simrun_cfg;

/* Defaults: mt_plan_init, mt_netcfg_init, mt_sim_opts_init, host model auto. */
void mt_simrun_cfg_init(mt_simrun_cfg *c);

typedef struct mt_simrun {
    mt_plan plan;            /* as resolved */
    char topology[64];       /* the spec used ("" for photonic on its own endpoints) */
    mt_program *prog;
    mt_topo *topo;           /* NULL for photonic without --topology */
    mt_engine *e;
    mt_netmodel net;
    mt_hostmodel *host;      /* the host model used, or NULL */
    mt_sim_result *res;
} mt_simrun;

/* Runs one simulation of t under cfg with op times from pm (NULL: the trace's own times).
 * On failure everything built so far is freed and err says why. */
mt_status mt_simrun_run(const trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_simrun *out,
                        mt_error *err);
void mt_simrun_free(mt_simrun *r);

#endif

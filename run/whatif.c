/* run/whatif.c — see whatif.h. */
#include "run/whatif.h"

#include <string.h>

static mt_status prepare(void *ctx, mt_simrun *run, mt_error *err) {
    mt_whatif *w = ctx;
    MT_CHECK(mt_scenario_bind(w->sc, run->prog, w->t, &w->pm, err));
    return mt_scenario_apply_network(w->sc, &run->net, run->topo, err);
}

void mt_whatif_configure(mt_whatif *w, const mt_run_config *c, const mt_trace *t, mt_simrun_cfg *cfg) {
    if (c->seed >= 0) mt_scenario_set_seed(c->scenario, (uint64_t)c->seed);
    if (c->steps > 0) mt_scenario_set_steps(c->scenario, c->steps);
    w->sc = c->scenario;
    w->t = t;
    w->pm = c->pm;
    mt_scenario_sim_opts(w->sc, &cfg->sim);
    if (mt_scenario_perturbs(w->sc) && !cfg->sim.no_fold) cfg->sim.no_fold = "a what-if scenario";
    cfg->prepare = prepare;
    cfg->prepare_ctx = w;
}

int mt_whatif_perturbs(const mt_run_config *c) { return mt_scenario_perturbs(c->scenario); }

mt_simrun_cfg mt_whatif_unperturbed(const mt_simrun_cfg *cfg) {
    mt_simrun_cfg b = *cfg;
    b.prepare = NULL;
    b.sim.compute_factor = NULL;
    b.sim.factor_ctx = NULL;
    b.sim.on_span = NULL;
    b.sim.on_progress = NULL;
    b.sim.no_fold = cfg->sim.no_fold && !strcmp(cfg->sim.no_fold, "--no-fold") ? cfg->sim.no_fold : NULL;
    b.on_link = NULL;
    return b;
}

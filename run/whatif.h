/* run/whatif.h — the what-if scenario of a run (sim/scenario.h: stragglers, slow or failing
 * links, GPU types, several steps) plugged into a simulation, and its unperturbed baseline.
 *
 * mt_whatif_configure installs the scenario's steps and compute hook into a simulation's options
 * and a prepare step that binds the scenario to the built program and perturbs the network; the
 * baseline is the same configuration without any of that (and without observers), so the cost of
 * a perturbation is the difference of two runs that differ in nothing else.
 * The mt_whatif holds what binding needs and must outlive the runs configured with it.
 */
#ifndef MT_RUN_WHATIF_H
#define MT_RUN_WHATIF_H

#include "perfmodel/perfmodel.h"
#include "run/config.h"
#include "run/simrun.h"
#include "sim/scenario.h"

typedef struct mt_whatif {
    mt_scenario *sc;     /* the run configuration's (borrowed) */
    const mt_trace *t;
    mt_pm_opts pm;       /* the options the programs are built with (GPU-type factors) */
} mt_whatif;

/* Applies c's seed and steps to its scenario and installs steps, the compute hook and the
 * prepare step (bind + network) into cfg. w must outlive the run. */
void mt_whatif_configure(mt_whatif *w, const mt_run_config *c, const mt_trace *t, mt_simrun_cfg *cfg);
/* 1 when the configuration perturbs anything (a baseline is then worth running). */
int mt_whatif_perturbs(const mt_run_config *c);
/* cfg without the perturbations and observers that mt_whatif_configure and the outputs installed
 * (same plan, network and steps). */
mt_simrun_cfg mt_whatif_unperturbed(const mt_simrun_cfg *cfg);

#endif

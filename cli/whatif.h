/* cli/whatif.h — the what-if flags of `simulate` (--scenario, --seed, --steps, --slow-gpu,
 * --slow-link, --fail-link), the unperturbed baseline run and the cost report. Kept out of
 * cmd_simulate.c so the command only forwards flags and prints what this returns. */
#ifndef MT_CLI_WHATIF_H
#define MT_CLI_WHATIF_H

#include <stdio.h>

#include <jansson.h>

#include "cli/simrun.h"
#include "sim/scenario.h"

typedef struct mt_whatif {
    mt_scenario *sc;     /* created by mt_whatif_init; NULL when out of memory */
    long long seed;      /* -1: the file's (default 0) */
    int32_t steps;       /* 0: the file's (default 1) */
    const trace *t;      /* for binding (set by mt_whatif_configure) */
    mt_pm_opts pm;
    mt_simrun base;      /* the unperturbed run, when the scenario perturbs anything */
    int has_base;
} mt_whatif;

mt_status mt_whatif_init(mt_whatif *w, mt_error *err);
void mt_whatif_free(mt_whatif *w);
/* Like mt_netcfg_take: 1 when argv[*i] was ours (consumed), 0 not ours, -1 bad value. */
int mt_whatif_take(mt_whatif *w, int argc, char **argv, int *i, mt_error *err);
void mt_whatif_help(FILE *out);
/* Installs steps, the compute hook and the prepare step (bind + network) into cfg. */
void mt_whatif_configure(mt_whatif *w, const trace *t, const mt_pm_opts *pm, mt_simrun_cfg *cfg);
/* cfg without the perturbations and observers mt_whatif_configure and the outputs installed
 * (same plan, network and steps). */
mt_simrun_cfg mt_whatif_unperturbed(const mt_simrun_cfg *cfg);
/* Runs the baseline (mt_whatif_unperturbed(cfg)) when the scenario perturbs anything. */
mt_status mt_whatif_baseline(mt_whatif *w, const trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg,
                             mt_error *err);
/* Text: the step lines when steps > 1 and the cost block; JSON: keys steps, step_ms_each, whatif. */
void mt_whatif_print(const mt_whatif *w, const mt_sim_result *r);
void mt_whatif_json(const mt_whatif *w, const mt_sim_result *r, json_t *o);

#endif

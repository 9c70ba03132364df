/* sim/scenario.h — what-if scenarios: stragglers, degraded or failing links, heterogeneous GPUs,
 * several steps, and what the perturbation cost against an unperturbed run.
 *
 * A scenario is a JSON file (`simulate --scenario FILE`) and/or short CLI flags; errors name the
 * file (or the flag) and the JSON path. Format (every key optional):
 *
 *   {"seed": 7, "steps": 3,
 *    "compute": [                                   duration multipliers ("slowdown": 2 = twice as long)
 *      {"gpus": [3], "slowdown": 1.1},              one straggler
 *      {"gpus": "all", "layers": [0, "features.3"], "micro_batches": [0], "steps": [1],
 *       "phases": ["forward", "backward"], "slowdown": 1.5},
 *      {"gpus": "0-3,6", "slowdown": {"dist": "uniform", "min": 1, "max": 1.2}, "per": "step"}],
 *    "gpu_types": {"0-3": "A100-80GB", "4-7": "H100-SXM"},   or a list, one name per rank
 *    "network": [
 *      {"link": "gpu3->sw0", "bandwidth_factor": 0.1},       A->B, A<->B, or a node: all its links
 *      {"gpu": 3, "extra_latency": "5us"},                   rank 3's GPU node, all its links
 *      {"link": "gpu2<->sw0", "fail_at": "10ms"},
 *      {"link": "nic1", "bandwidth_factor": 0.5, "at": "5ms"},
 *      {"link": "gpu1->sw0", "bandwidth_factor": 0.2, "period": "10ms", "duration": "2ms",
 *       "start": "0ms"}]}
 *
 * gpus / micro_batches / steps: an integer, a list of integers, "all", or ranges "0-3,6"
 * (steps count from 0). layers: indices or names as `simulate --layers` prints them. phases:
 * forward, backward, optimizer, other. A rule applies to a compute item when every listed
 * selector matches; matching rules multiply. Random slowdowns ("dist": uniform {min, max},
 * normal {mean, std}, lognormal {mu, sigma}; normal draws are clamped at 0.01) are drawn per
 * GPU (default), per (GPU, step) or per (GPU, step, task) ("per": "gpu" | "step" | "task") from
 * a counter-based generator keyed by (seed, rule, GPU, step, task): the same seed gives the same
 * run whatever the event order, and no state is global.
 * gpu_types: each rank's GPU; every operator it runs takes time(op on that GPU) / time(op on
 * the traced, or --target-gpu, GPU) as predicted by the performance model's cross-GPU roofline
 * (perfmodel/perfmodel.h), per operator, so a conv-heavy stage and a memory-bound one scale
 * differently.
 * Times are strings with units ("10ms") or numbers of nanoseconds. Network perturbations go
 * through the netmodel interface (network/netmodel.h); a model without link operations (the
 * photonic one) refuses them with one line naming the rule.
 */
#ifndef MT_SIM_SCENARIO_H
#define MT_SIM_SCENARIO_H

#include <stdint.h>

#include "extrapolate/program.h"
#include "network/netmodel.h"
#include "network/topology.h"
#include "perfmodel/perfmodel.h"
#include "sim/simulate.h"
#include "tracer/trace.h"
#include "util/err.h"

typedef struct mt_scenario mt_scenario;

/* An empty scenario (no perturbation, seed 0, one step). NULL when out of memory. */
mt_scenario *mt_scenario_new(void);
void mt_scenario_free(mt_scenario *sc);

/* A copy of sc's rules, seed and steps (not its binding) into *out, for a run on another thread:
 * runs on one scenario at once would overwrite each other's binding. MT_ENOMEM or MT_OK.
 * O(rules + rank lists). */
mt_status mt_scenario_clone(const mt_scenario *sc, mt_scenario **out, mt_error *err);

/* Reads a scenario file into sc (adding to what it holds). Errors name the file and JSON path. */
mt_status mt_scenario_load(mt_scenario *sc, const char *path, mt_error *err);

/* A fixed compute slowdown (--slow-gpu's FACTOR, a scenario's "slowdown" number or uniform
 * min/max) lies in [MT_SLOWDOWN_MIN, MT_SLOWDOWN_MAX]: 100 times faster to 1000 times slower. */
#define MT_SLOWDOWN_MIN 0.01
#define MT_SLOWDOWN_MAX 1000.0

/* The short flags: "RANK:FACTOR" (compute slowdown of one GPU; RANK may be a range "0-3"),
 * "SEL:FACTOR" (link bandwidth divided by FACTOR, i.e. FACTOR times slower), "SEL@TIME" (the
 * link fails at TIME). Errors name the flag. */
/* MT_EINVAL naming the rule when one names a GPU >= gpus (the same check binding makes, for a
 * caller that knows the GPU count before any program exists: compare's --gpus). O(rules). */
mt_status mt_scenario_check_gpus(const mt_scenario *sc, int32_t gpus, mt_error *err);
mt_status mt_scenario_add_slow_gpu(mt_scenario *sc, const char *spec, mt_error *err);
mt_status mt_scenario_add_slow_link(mt_scenario *sc, const char *spec, mt_error *err);
mt_status mt_scenario_add_fail_link(mt_scenario *sc, const char *spec, mt_error *err);

void mt_scenario_set_seed(mt_scenario *sc, uint64_t seed);
void mt_scenario_set_steps(mt_scenario *sc, int32_t steps);
int32_t mt_scenario_steps(const mt_scenario *sc);
/* 1 when it changes anything (compute, GPU types or network). */
int mt_scenario_perturbs(const mt_scenario *sc);

/* Binds the compute side to a program: checks ranks against the plan, resolves layer names,
 * computes per-operator GPU-type factors with perfmodel (base_pm: the options the program was
 * built with; NULL = the trace's own times). Then mt_scenario_sim_opts installs the hook. */
mt_status mt_scenario_bind(mt_scenario *sc, const mt_program *p, const mt_trace *t,
                           const mt_pm_opts *base_pm, mt_error *err);
/* Sets o->steps and, when the scenario has compute perturbations, o->compute_factor. */
void mt_scenario_sim_opts(mt_scenario *sc, mt_sim_opts *o);
/* The hook itself (ctx = the bound scenario). */
double mt_scenario_compute_factor(void *ctx, int32_t rank, int32_t step, const mt_task *task,
                                  const mt_item *item);

/* The scenario's random source: a uniform number in (0, 1) that depends only on its arguments
 * (hashes of the seed and the coordinates; no state), so draws repeat whatever the order. */
double mt_draw01(uint64_t seed, int64_t rule, int64_t rank, int64_t step, int64_t task, int k);

/* Applies the network perturbations to the model net on topo (its links are topo's; NULL when the
 * model has none), at time 0 (changes with a time are scheduled). A model lacking an operation a
 * rule needs: MT_EINVAL naming the rule (its flag or file path) and what the model cannot do. */
mt_status mt_scenario_apply_network(const mt_scenario *sc, mt_netmodel *net, mt_topo *topo,
                                    mt_error *err);

/* What a perturbation cost: the perturbed run against the same plan unperturbed. Per GPU the
 * run splits into compute + waiting (host wait + exposed + peer wait + bubble + idle) = run time, so
 *   gpu_time_ps = N x run_change_ps = extra_compute_ps + extra_wait_ps
 * (a single 21 ms straggler among 8 GPUs: run +21 ms, 21 ms of its own extra compute and 7 x 21
 * ms of the others waiting for it). */
typedef struct mt_whatif_cost {
    int32_t steps;
    mt_time_ps base_ps, run_ps;   /* whole run (all steps) */
    mt_time_ps run_change_ps;     /* run_ps - base_ps */
    double gpu_time_ps;           /* sum over GPUs of their longer run */
    double extra_compute_ps;      /* sum over GPUs of compute change (its stretch by communication included) */
    double extra_wait_ps;         /* sum over GPUs of waiting change */
} mt_whatif_cost;

void mt_whatif_cost_of(const mt_sim_result *base, const mt_sim_result *run, mt_whatif_cost *out);

#endif

/* run/estimate.h — what a simulation will cost, predicted from its built run before it starts:
 * engine events, seconds on this machine, peak memory. `simulate`, `compare` rows, `--sweep` and
 * what-if runs print it first when the run is long (mt_estimate_long) and `--dry-run` stops there;
 * a run that would need more memory than the machine has fails up front (mt_estimate_check_mem).
 *
 * The model counts what the simulator does (sim/simulate.h, sim/collexec.h), from the program
 * and the plan only (no schedule is built):
 *   events = steps x ( walkers x tasks per GPU program x EV_TASK
 *                    + sum over COLL tasks of instances x sends(algorithm, op, n) x EV_SEND
 *                      (a ringflow's or treeflow's bulk of at least the model's group_min sends
 *                      counted as two: it runs as one flow group, netmodels/flow.h)
 *                    + pipeline SENDs of all GPUs x EV_PP )
 * with the algorithm a collective really runs (mt_sim_coll_algo), sends per instance in closed
 * form (ring all-reduce 2n(n-1) x chunks, ringflow n + 1, tree 4(n-1) x chunks, direct 2n(n-1),
 * hier 2n(G-1) + 2n(n/G-1), halved for one-phase ops), walkers = N / dp when the run folds (the
 * symmetry conditions the options decide; a run that diverges and reruns unfolded costs more than
 * estimated) and N otherwise. Seconds weigh each send by its algorithm's measured cost (a send
 * among many concurrent flows costs a bigger max-min re-solve) plus tasks and pipeline sends:
 * constants in estimate.c, measured by bench/bench_estimate.sh; with --routing latency where the
 * structured router declines (a topology file, tiers of different latencies) one Dijkstra per
 * GPU, O(links log nodes) each, is added: that is the long routing phase of such runs.
 * Memory = a base + N x (bytes per GPU + 24 x model chunks x micro-batches of pipeline arrival
 * slots) + the cached schedules (40 bytes a send). Events are within a factor of 2 of those
 * counted on the plans of tests/integration/estimate.sh (0.67..1.00 measured); seconds 0.63..1.84x
 * and memory 0.74..1.77x of the runs' on bench/bench_estimate.sh's.
 * Costs: O(tasks of the program), no allocation.
 */
#ifndef MT_RUN_ESTIMATE_H
#define MT_RUN_ESTIMATE_H

#include <stddef.h>

#include "run/simrun.h"

/* Peak resident bytes per GPU of a run (topology, per-GPU state, results, routes), the largest
 * measured (multinode fabric, 131,072 GPUs, --no-net-fold: 2.3 KB; folded 1.5 KB, one switch
 * 1.2 KB, 2^20 GPUs 1.4 KB; was 4096 before issue 47's per-GPU cuts). */
#define MT_ESTIMATE_BYTES_PER_GPU 2560.0
/* The process before any GPU: the binary, libraries, the loaded trace and its program (ResNet-50
 * TrioSim CSV: 17-50 MiB measured). */
#define MT_ESTIMATE_BASE_BYTES (32.0 * 1024 * 1024)
/* Runs predicted longer than this print their estimate first. */
#define MT_ESTIMATE_LONG_S 5.0

typedef struct mt_estimate {
    double events;       /* engine events predicted */
    double seconds;      /* simulation seconds predicted on this machine */
    double mem_bytes;    /* peak memory predicted, bytes */
    int32_t gpus;
    int32_t walkers;     /* GPUs predicted to walk their programs (N / dp folded, else N) */
    double coll_sends;   /* network sends of every collective instance, all steps (a flow group: 2) */
    double pp_sends;     /* pipeline sends of all GPUs, all steps */
    double route_searches; /* Dijkstra searches (--routing latency the router cannot answer), 0 none */
    double route_seconds;  /* their share of `seconds` (they run inside the simulation, as routes are
                            * first needed) */
} mt_estimate;

/* The estimate of a built, not yet run, run (mt_simrun_build). */
void mt_estimate_of(const mt_simrun *run, mt_estimate *out);

/* The estimate of cfg's run from its program alone (mt_simrun_build_program: no topology is
 * built), for pricing many runs up front (compare). Fails as the build would (MT_EINVAL: the plan
 * is refused). */
mt_status mt_estimate_cfg(const mt_trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_estimate *out,
                          mt_error *err);

/* Memory predicted for plan pl (resolved or not: its sizes as given) before anything is built:
 * the base + N x (bytes per GPU + pipeline arrival slots). */
double mt_estimate_mem_bytes(const mt_plan *pl);

/* MT_EINVAL, naming --gpus (N = gpus), the memory needed and the machine's, when mem_bytes exceeds
 * the machine's physical memory (sysconf); MT_OK otherwise. */
mt_status mt_estimate_check_mem(double mem_bytes, double gpus, mt_error *err);
/* The same for plan pl before anything is built (mt_estimate_mem_bytes). */
mt_status mt_estimate_check_plan(const mt_plan *pl, mt_error *err);

/* MT_EINVAL, one line naming the limit's flag, when the calling thread's budget (util/budget.h:
 * `mitosis serve`'s --max-events, --max-run-seconds, --max-run-memory) is below e's events,
 * seconds or memory; what = "the run" or "the comparison". MT_OK without a budget (the CLI). */
mt_status mt_estimate_check_budget(const mt_estimate *e, const char *what, mt_error *err);

/* 1 when the run is predicted to take longer than MT_ESTIMATE_LONG_S. */
int mt_estimate_long(const mt_estimate *e);

/* "1.2 k", "2.3 M", "4.5 G"; "40 s", "3.2 min", "2.5 h" (into buf). */
const char *mt_estimate_count_text(double v, char *buf, size_t len);
const char *mt_estimate_duration_text(double s, char *buf, size_t len);

/* "about 2.3 M events, ~40 s on this machine (tp8 x pp64 x dp2, 256 micro-batches at 1024 GPUs;
 * 128 of 1024 walk their programs)" into buf. */
const char *mt_estimate_text(const mt_estimate *e, const mt_plan *pl, char *buf, size_t len);

#endif

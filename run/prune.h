/* run/prune.h — which of compare's plans cannot reach the top K of the ranking, decided from the
 * plan's built program before it is simulated, so that a plan search costs the plans that can win
 * (and the K rows shown exactly), not every plan x every operator.
 *
 * Bounds (never above what the simulation gives for the same plan):
 *   step   >= the largest stage's device compute per step (mt_stage_program.compute_ps: the COMPUTE
 *             tasks run one after another on a GPU's compute stream; a host model that spreads an
 *             op over S streams divides it by S). Communication, bubbles and host waits only add.
 *             A gpipe or 1f1b pipeline (no --vpp, one stream): stage k's micro-batch compute runs
 *             after the first micro-batch's forward crossed stages 0..k-1, and the backward of its
 *             last one must cross them back: + the least forward and backward of a micro-batch
 *             on each stage before k (the pipeline's fill and drain). With the host model, the
 *             host thread's work (its head, every op's host time and coll_host_ps per collective on a
 *             group of more than one rank and per send, sim/simulate.c: a GPU's step ends when its
 *             host is done too). With the host model on such a pipeline: the host issues stage k's
 *             last backward task of a micro-batch (in issue order) only after its work before it (a
 *             kernel starts no earlier than its launch), the task then runs, and that micro-batch's
 *             gradients must cross stages k-1 .. i back (the least backward of a micro-batch on each),
 *             after which stage i still runs its COMPUTE tasks after its own last backward task (the
 *             optimizer; counted only when every stage's last backward task is of that micro-batch).
 *             Host-bound pipelines are limited by this drain (Llama-3-8B on 1,024 GPUs:
 *             ddp=64:tp=4:pp=4:mb=8: 959 -> 1,093 ms, its step 1,149 ms).
 *   memory >= the largest stage's parameters + gradients + optimizer state per GPU (the simulated
 *             peak adds activations to them, sim/simulate.c).
 * The rule, deterministic whatever the threads: rows run in increasing order of their step bound
 * (ties: list order); the row at position k is pruned when K rows before it ran within the memory
 * limit and the K-th highest speed-up among them is above the highest speed-up its bound allows
 * (strictly). A row over the memory limit by its state alone (it could only rank with a '!') is
 * pruned when a row before it ran at least as fast as its bound allows, so compare's "fastest" line
 * is exact as well (where no plan's state fits, the fastest runs and the answer is "no plan fits").
 * Rows that ran over the limit (their simulated peak) do not count among the K, so the first K rows
 * that fit, every row ranked above them, and compare's "fits" line are exact.
 * Pruning while running (only finished rows are known) prunes a subset of what the rule prunes;
 * mt_prune_topk_* applied afterwards over every row in that order removes the rest, so the rows
 * kept, and their numbers, are the same on 1 thread or 16: every kept row is the exhaustive run's
 * row, and the ranking down to its K-th row that fits is exactly the exhaustive ranking's.
 * Plans that share a bound: the bound reads only the multiset of a stage's COMPUTE tasks (their
 * micro-batch, phase, duration and op) and its state bytes. A gpipe and a 1f1b schedule (no --vpp)
 * call the same forward and backward of each (stage, micro-batch) with the same arguments, in
 * another order (extrapolate/pass_pp.c); DataParallel (dp) and DDP place the same ops and differ
 * only in their gradient collectives (pass_dp.c), the states alike while no sharding, expert or
 * embedding pass reads the mode. So compare prices one program per class (mt_prune_bound_key) and
 * copies its bound to the others (a class whose first program fails is built plan by plan).
 * compare builds these programs bound-only (extrapolate/program.h: each stage's COMPUTE work tallied
 * as it is emitted, the tasks not kept), so pricing a 1,024-micro-batch pipeline costs its walk, not
 * hundreds of MB; mt_prune_bound_of reads the tally or the tasks alike (the same integer sums).
 * Costs: a bound is O(stages) (O(stages x ops) from tallies with a host model); the top-K set O(K)
 * per insertion.
 */
#ifndef MT_RUN_PRUNE_H
#define MT_RUN_PRUNE_H

#include <stdint.h>

#include "extrapolate/hostmodel.h"
#include "extrapolate/program.h"

/* The K of `compare` without --top when it lists the plans itself (--plans auto; run/compare.c
 * exact_rows); benchmarks and docs use it too. */
enum { MT_PRUNE_TOP_DEFAULT = 10 };

typedef struct mt_prune_bound {
    int ok;                  /* 0: no bound (the program could not be built: the run will say why) */
    double step_ps;          /* lower bound on the step, ps */
    int32_t stage;           /* the stage giving it */
    const char *what;        /* what gives it: "compute", "host thread", ... (a static string) */
    double mem_bytes;        /* lower bound on the peak memory per GPU */
} mt_prune_bound;

/* The bounds of a built program, full or bound-only (host: the run's host model, NULL none). */
mt_prune_bound mt_prune_bound_of(const mt_program *p, const mt_hostmodel *host);

/* *key = p with what the bound does not read normalised (schedule gpipe -> 1f1b without --vpp; dp ->
 * ddp without ZeRO, FSDP, the distributed optimizer, --ep or --embedding-shard), every byte of *key
 * set first: plans whose keys are equal bytes have equal bounds. */
void mt_prune_bound_key(const mt_plan *p, mt_plan *key);

/* The K highest values seen (speed-ups), for the rule above. */
typedef struct mt_prune_topk {
    double v[64];            /* descending; K <= 64 kept here, larger K never prunes */
    int32_t k, n;
} mt_prune_topk;

void mt_prune_topk_init(mt_prune_topk *t, int32_t k);
void mt_prune_topk_add(mt_prune_topk *t, double v);
/* 1 when K values are in and the K-th highest is above `bound` (a row with that best speed-up
 * cannot enter the top K). */
int mt_prune_topk_excludes(const mt_prune_topk *t, double bound);

#endif

/* report/verdict.h — the two words of a run's answer that every front-end says alike: the
 * speed-up over one GPU (compare's rows, the web UI's simulate answer) and what holds the step back
 * most (the web UI's sentence, the HTML report's "holds back" line), from the numbers the run
 * already has, so that no front-end re-derives them.
 *
 * Speed-up: throughput over the one-GPU baseline's (one GPU at the traced batch, simulated with
 * the same operator times, host model and calibration): (units / step) / (base units / base
 * step), units the global batch (the data-parallel size when the batch is unknown), base units the
 * baseline's batch (1 when unknown). Efficiency: speed-up / GPUs.
 *
 * Holdback: of the step, the parts a GPU's compute stream spends not computing (sim/simulate.h's
 * mt_gpu_stats): exposed communication (transfers compute does not hide), waiting at a collective
 * for another GPU (peers), the pipeline bubble, waiting for the host to launch work. Memory over
 * the GPU's limit comes first (the plan does not fit, whatever its time); else the largest part
 * when it is at least MT_HOLD_MIN_SHARE of the step; else compute (nothing waits much).
 * Invariant: shares are of the step, in 0..1; the sentence names the kind, its share and ms.
 * Costs: O(GPUs) for mt_hold_parts_of, O(1) otherwise.
 */
#ifndef MT_REPORT_VERDICT_H
#define MT_REPORT_VERDICT_H

#include <stddef.h>

#include <jansson.h>

#include "extrapolate/plan.h"
#include "sim/simulate.h"

/* Throughput of plan p (resolved) at step_ms over the baseline's (base_batch 0: unknown); 0 when
 * either step is not positive. */
double mt_speedup(const mt_plan *p, double step_ms, int64_t base_batch, double base_step_ms);

/* The change from base to run in % of base ("+99.9%" in what-if lines and compare's change
 * column); 0 when base is not positive. */
double mt_change_pct(double base, double run);

/* A part under this share of the step is not named as what holds it back. */
#define MT_HOLD_MIN_SHARE 0.05

typedef enum { MT_HOLD_COMPUTE = 0, MT_HOLD_MEMORY, MT_HOLD_NETWORK, MT_HOLD_PEERS, MT_HOLD_BUBBLE,
               MT_HOLD_HOST } mt_hold_kind;

/* A step's parts in ms (per GPU: a mean over GPUs, or the busiest GPU's, as the caller chooses)
 * and its memory (bytes per GPU; limit 0: unknown). */
typedef struct mt_hold_parts {
    double step_ms, exposed_ms, peer_ms, bubble_ms, host_ms;
    double mem_bytes, mem_limit;
} mt_hold_parts;

typedef struct mt_holdback {
    mt_hold_kind kind;
    const char *name;          /* "compute", "memory", "network", "peers", "bubble", "host" */
    double ms, share;          /* the part and its share of the step (memory: 0, 0) */
    char text[320];            /* "what holds the step back most: ..." as one sentence */
} mt_holdback;

/* The parts of result r per step, each the mean over its GPUs; mem_bytes the largest GPU's. */
void mt_hold_parts_of(const mt_sim_result *r, double mem_limit, mt_hold_parts *p);
/* What holds a step of parts p back most. */
void mt_holdback_of(const mt_hold_parts *p, mt_holdback *out);
/* {kind, ms, share, text}. */
json_t *mt_holdback_json(const mt_holdback *h);

#endif

/* report/comparison.h — the answer of `mitosis compare`: one row per plan (ranked, fastest first)
 * or per swept value (in sweep order), as text, JSON and the HTML report's table and chart.
 *
 * mt_comparison is plain data that run/compare.c fills (rows own their `reason` strings, freed by
 * mt_comparison_free); the writers only read it. Speed-up is throughput over the baseline (one
 * GPU running the traced batch); with the batch unknown, a replica's traced batch is the unit of
 * work. Costs: O(rows).
 */
#ifndef MT_REPORT_COMPARISON_H
#define MT_REPORT_COMPARISON_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "extrapolate/plan.h"
#include "perfmodel/perfmodel.h"
#include "report/html.h"
#include "report/summary.h"
#include "tracer/meta.h"
#include "tracer/trace.h"

typedef struct mt_cmp_row {
    char label[128];         /* the plan in --plans syntax, or the swept value */
    double x;                /* the swept value */
    int ran;                 /* 0: skipped (infeasible) */
    char *reason;            /* why it was skipped (malloc'd), NULL when it ran */
    mt_plan plan;            /* as resolved (rows that ran) */
    char topology[128];      /* as run ("" = the model's own endpoints) */
    double step_ms;          /* per step (the mean over --steps) */
    double speedup;          /* throughput over the baseline */
    double sps;              /* samples/s, < 0 unknown */
    double exposed_ms, peer_ms, host_wait_ms, bubble_ms; /* max over GPUs, per step */
    double stretch_ms;      /* compute slowed by collectives beside it: max over GPUs, per step */
    double mem_bytes;        /* largest estimated peak per GPU */
    double base_step_ms;     /* the same plan unperturbed (what-if), 0 when not run */
    int over_mem;            /* mem_bytes over the limit */
    int pruned;              /* not run (ran 0) because it cannot reach the top rows (run/prune.h):
                              * 1 its step bound, 2 its memory bound; reason says which */
} mt_cmp_row;

typedef struct mt_comparison {
    const mt_trace *t;
    const char *sweep;       /* NULL: plans compared; else the swept setting ("link-bw") */
    int32_t gpus;            /* plans: the GPU count */
    mt_plan plan;            /* sweep: the plan swept (for its label) */
    int sweep_gpus;          /* the sweep is over GPU counts (sizes left out take them) */
    const char *topology;    /* the header's topology: a {gpus}/{nodes} template, the first run's,
                                or NULL (the model's own endpoints) */
    const char *network;
    mt_pm_kind perf_model;
    const char *op_times;    /* one line: what the operator times are (run/device.h), NULL: the model */
    int cpu_ranks;           /* 1: the ranks are CPU processes (a CPU trace, no GPU named) */
    int64_t seq, traced_seq; /* --seq: the sequence length asked for and the trace's (0: as traced) */
    int host;                /* the host model ran */
    double base_step_ms;     /* one GPU, traced batch */
    int64_t base_batch;      /* its batch, 0 unknown */
    const mt_calibration *cal;
    double mem_limit;        /* bytes per GPU, 0 unknown */
    const char *mem_source;  /* where the limit comes from */
    int perturbed;           /* every row ran perturbed and unperturbed */
    int32_t steps;           /* steps per run (> 1: per-step means) */
    mt_cmp_row *rows;
    int32_t n;
    int32_t top;             /* rows pruned: the ranking's first `top` rows are exact (0: none pruned) */
    int32_t best, best_fit;  /* row indices (the fastest; the fastest within the limit), -1 none */
    char trace_warning[640]; /* the trace's warning, "" none */
    const char *warnings[2]; /* the trace's and the performance model's (JSON "warnings") */
    int n_warnings;
    double wall_s;           /* host seconds the rows took (the baseline, every row, the gather);
                                the last text line "N plans in S s", JSON "wall_s" */
} mt_comparison;

void mt_comparison_free(mt_comparison *c);

/* Ranks plan rows (rows that ran first, by speed-up then step time; skipped rows keep their
 * order) and sets best / best_fit. A sweep keeps its order (best and best_fit are still set). */
void mt_comparison_rank(mt_comparison *c);

void mt_comparison_print(FILE *out, const mt_comparison *c);
json_t *mt_comparison_json(const mt_comparison *c);

/* Writes the HTML report: the table and chart of every row, and the detail sections of the best
 * row's run (`best`: its summary, rec: its recorded timeline). */
mt_status mt_comparison_html_write(const char *path, const mt_comparison *c, const mt_run_summary *best,
                                   const mt_recorder *rec, mt_error *err);

#endif

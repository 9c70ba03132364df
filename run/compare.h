/* run/compare.h — `compare` as a library call: the same traced step under many plans (every
 * factorisation of N GPUs, or a --plans list), or one plan under a sweep of one setting (link
 * or NIC bandwidth, GPU count, global batch). One loaded input (trace, performance model,
 * calibration) serves every run; each run is run/simrun.h's, as `simulate` does it, so a row
 * equals `simulate` with the same settings. With a perturbing what-if, each row also runs
 * unperturbed (its change is reported). Infeasible plans are kept as skipped rows with the
 * reason; other failures stop the comparison.
 * The rows run on worker threads (run/pool.h, `--jobs`) and, under mpirun, over ranks
 * (run/ranks.h: rank r runs rows r, r + K, ...; rank 0 gathers them): every row is deterministic
 * and lands in its own slot, so the table is the serial one byte for byte (but the wall time).
 * Plan search (--top K, or 10 rows for --plans auto, not --exhaustive; no sweep, no what-if, more plans than that): every
 * plan's program is built first for its bounds, plans run in the order of their step bound, and a
 * plan that cannot reach the first rows is pruned, not simulated (run/prune.h: the rows kept
 * are the exhaustive run's rows, byte for byte, and those first rows of the ranking are exact).
 * Costs: one simulation per row (two with a what-if) plus the 1-GPU baseline; rows / (jobs x
 * ranks) on each thread; pruning adds a program build per plan and saves the pruned simulations;
 * memory: one run per thread at a time. Pricing every row up front (cc->estimate, a budget) builds
 * every plan's program; a search that prunes is priced so only with --dry-run (its estimate is then
 * every plan's: exact_rows says so) and otherwise held to its largest plan's memory up front and
 * to the budget's wall time as it runs.
 */
#ifndef MT_RUN_COMPARE_H
#define MT_RUN_COMPARE_H

#include <stdint.h>

#include "extrapolate/planlist.h"
#include "report/comparison.h"
#include "run/config.h"
#include "run/estimate.h"
#include "run/input.h"
#include "run/ranks.h"

typedef enum {
    MT_SWEEP_NONE = 0,
    MT_SWEEP_LINK_BW,   /* GPU-tier link bandwidth */
    MT_SWEEP_NIC_BW,    /* NIC tier bandwidth */
    MT_SWEEP_GPUS,      /* GPU count (plan sizes left out take them) */
    MT_SWEEP_BATCH      /* global batch */
} mt_sweep_kind;

enum { MT_SWEEP_MAX_VALUES = 1000, MT_COMPARE_MAX_ROWS = 4096 };

typedef struct mt_sweep {
    mt_sweep_kind kind;
    double values[MT_SWEEP_MAX_VALUES];
    int32_t n;
} mt_sweep;

/* "link-bw", "nic-bw", "gpus", "batch" ("" for none). */
const char *mt_sweep_name(mt_sweep_kind k);
/* NAME=FROM:TO (doubling), NAME=FROM:TO:xF (times F), NAME=FROM:TO:S (S evenly spaced values) or
 * NAME=A,B,C into *out. One-line MT_EINVAL naming --sweep and what is accepted. */
mt_status mt_sweep_parse(const char *text, mt_sweep *out, mt_error *err);

/* A --topology template for one run of gpus GPUs into buf: {gpus} replaced by gpus, {nodes} by
 * gpus / per_node, refused (MT_EINVAL, one line naming --gpus-per-node) when gpus does not fill
 * whole nodes; "" for a NULL spec. What compare's rows and Python's mitosis.sweep both run. */
mt_status mt_sweep_topology(const char *spec, int32_t gpus, int32_t per_node, char *buf, size_t len, mt_error *err);

/* Called as each row starts, with `done` rows of this rank finished (never two calls at once, on
 * whichever thread), and once at the end (done == n). n: the rows this rank runs. */
typedef void (*mt_compare_progress_fn)(void *ctx, int32_t done, int32_t n, const char *label);

/* What every row will cost, priced before any runs (run/estimate.h, from each row's program). */
typedef struct mt_compare_estimate {
    mt_estimate total;       /* events and seconds summed over the rows priced; mem_bytes the largest */
    int32_t priced, refused; /* rows priced; rows whose plan is refused (they will be skipped) */
    const char *longest;     /* the label of the row estimated longest ("" none) */
    double longest_s;
    int32_t exact_rows;      /* > 0: a search that prunes when it runs (--dry-run prices every plan) */
} mt_compare_estimate;
typedef void (*mt_compare_estimate_fn)(void *ctx, const mt_compare_estimate *e);

typedef struct mt_compare_config {
    const char *plans;       /* a --plans list (extrapolate/planlist.h), NULL: every plan */
    unsigned dp_modes;       /* the data-parallel modes every plan lists (MT_DPM_*); 0: ddp and dp */
    unsigned sparse;         /* expert-parallel and sharded-embedding variants auto lists too
                              * (extrapolate/sparseplans.h: MT_SPARSE_*; 0 none); init: auto */
    unsigned recompute_modes; /* the recompute modes every plan lists (MT_RCM_*); 0: the flags' */
    int32_t vpps[MT_VPP_LIST_MAX], n_vpps; /* interleaving degrees of pipelined 1f1b plans; 0: the flags' */
    int32_t cps[MT_VPP_LIST_MAX], n_cps; /* context-parallel sizes every plan lists (out of its dp); 0: none */
    unsigned sp_modes;       /* sequence-parallel modes plans with tp > 1 list (MT_SPM_*); 0: the flags' */
    mt_sweep sweep;          /* kind MT_SWEEP_NONE: compare plans */
    mt_compare_progress_fn progress; /* optional */
    void *progress_ctx;
    mt_compare_estimate_fn estimate; /* optional: every row priced and this called once before the rows
                              * run (it costs a program build per row; a search that prunes is priced
                              * only with --dry-run); with --dry-run nothing runs */
    void *estimate_ctx;
    int32_t top;             /* plans: the ranking's first `top` rows exact; plans that cannot reach
                              * them are pruned unsimulated (run/prune.h); 0 (init): 10 when compare
                              * lists the plans (no --plans list), else every plan runs */
    int exhaustive;          /* 1: every plan simulated, none pruned */
    int32_t jobs;            /* worker threads (0: one per core; 1: one row after another) */
    const mt_ranks *ranks;   /* the ranks sharing the rows (NULL: this process alone) */
} mt_compare_config;

void mt_compare_config_init(mt_compare_config *cc);


/* Refuses combinations that cannot mean anything (plans and a sweep; no GPU count to compare;
 * a GPU count and a GPU sweep; a sweep without a plan), one line naming the flags. */
mt_status mt_compare_check(const mt_run_config *c, const mt_compare_config *cc, mt_error *err);

/* "61 plans: about 2.3 M events, ~40 s on this machine, ~12 MB of memory at most (longest LABEL
 * ~12 s; 3 refused)" into buf; noun "plans" or "runs". */
const char *mt_compare_estimate_text(const mt_compare_estimate *e, const char *noun, char *buf, size_t len);

/* Runs every row and ranks them (plans) into *out (free with mt_comparison_free). An error when
 * no plan could run, naming the first one and why; a failing row's error is that of the first
 * failing row in list order, as one thread would have it. With ranks, every rank must call it
 * (collective); only rank 0's *out holds the rows, the others get their status alone. */
mt_status mt_run_compare(const mt_run_config *c, const mt_run_input *in, const mt_compare_config *cc,
                         mt_comparison *out, mt_error *err);
/* With c->dry_run, mt_run_compare prices the rows (cc->estimate), runs none and returns MT_OK with
 * out->n == 0. */

/* The one-GPU baseline every speed-up is measured against (report/verdict.h mt_speedup): c's
 * operator times, host model, precision and recomputation on one GPU at the traced batch, no
 * communication (the plan's parallel sizes, sequence parallelism, ZeRO / FSDP sharding and
 * pipeline cuts dropped: one GPU has none); its step ms, batch (0 unknown) and whether the host
 * model ran (host may be NULL). */
mt_status mt_compare_baseline(const mt_run_config *c, const mt_run_input *in, double *step_ms, int64_t *batch,
                              int *host, mt_error *err);

/* Runs the best row again with a recorder and writes the HTML report of the comparison. */
mt_status mt_compare_html(const mt_comparison *cmp, const mt_run_config *c, const mt_run_input *in,
                          const mt_compare_config *cc, const char *path, mt_error *err);

/* How many rows compare would run for c and cc, without running or reading a trace (the web
 * UI's check as you type): MT_EINVAL with the run's message when they are more than
 * MT_COMPARE_MAX_ROWS or the list is refused. traced_batch: the trace's batch (0 unknown); the
 * sparse expansion (--sparse, it reads the trace) is not counted. */
mt_status mt_compare_plan_count(const mt_run_config *c, const mt_compare_config *cc, int64_t traced_batch,
                                int32_t *n, mt_error *err);

#endif

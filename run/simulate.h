/* run/simulate.h — `simulate` as a library call: one plan of a run configuration simulated, its
 * what-if baseline when the scenario perturbs anything, and the files asked for (Perfetto
 * timeline, CSV tables, HTML report) written.
 *
 * Order: a plan whose predicted memory exceeds the machine's fails first (run/estimate.h); the
 * plan is resolved and the run built, so that a bad plan or topology fails before any file is
 * created; its cost is estimated (--dry-run stops there; a long run's estimate goes to
 * o->notices); output files are opened (a bad path fails) before the simulation runs; files are
 * complete when mt_run_simulate returns MT_OK, and removed when it fails. Nothing else is
 * printed: the caller renders mt_simulation_summary (report/summary.h).
 * Costs: the simulation's, twice with a baseline; recording spans O(spans kept).
 */
#ifndef MT_RUN_SIMULATE_H
#define MT_RUN_SIMULATE_H

#include <stdio.h>

#include "report/summary.h"
#include "run/config.h"
#include "run/estimate.h"
#include "run/input.h"
#include "run/outputs.h"
#include "run/simrun.h"
#include "run/whatif.h"

/* The files a simulation writes (all optional): a path per output of the table (run/outputs.h:
 * timeline, csv_dir, html, chakra_dir, kineto_dir; NULL: not written), then their options. */
typedef struct mt_sim_outputs {
#define MT_OUT_FIELD_(name, field, ...) const char *field;
    MT_SIM_OUTPUTS(MT_OUT_FIELD_)
#undef MT_OUT_FIELD_
    const char *timeline_gpus;  /* only these GPUs in the timeline ("0-7,12"), NULL: all */
    mt_time_ps window_from;     /* only this span of simulated time in the timeline */
    mt_time_ps window_to;       /* MT_TIME_NEVER: open */
    FILE *progress;             /* where a progress line goes (shown on a terminal only), NULL */
    FILE *notices;              /* where the estimate of a long run goes before it starts, NULL */
    const char *chakra_ranks;   /* only these ranks ("0-7,12"), NULL: all */
    int chakra_json;            /* also DIR/mitosis.RANK.json */
    int chakra_comm_only;       /* only the communication nodes (report/chakra.h) */
    const char *kineto_ranks;   /* only these ranks, NULL: all */
    mt_progress_fn on_progress; /* called as the simulation goes (sim/simulate.h), instead of `progress`;
                                 * NULL: none */
    void *progress_ctx;
    double max_record_bytes;    /* what the files record kept under this many bytes of memory, 0: no cap
                                 * (report/record.h; mt_simulation.files_cut_ps says where they stop) */
} mt_sim_outputs;

void mt_sim_outputs_init(mt_sim_outputs *o);
/* The timeline's window from its words ("10ms:20ms", report/record.h mt_span_filter_window)
 * into o's window_from / window_to; MT_EINVAL naming --timeline-window. */
mt_status mt_sim_outputs_window(mt_sim_outputs *o, const char *spec, mt_error *err);
/* An output's options (run/flags.h MT_RUN_OUTOPT_FLAGS) set without that output: MT_EINVAL naming
 * the options and the output's flag ("--chakra-json, ... need --chakra DIR"). */
mt_status mt_sim_outputs_check(const mt_sim_outputs *o, mt_error *err);

/* Output d's path in o (NULL: not written), and setting it. */
const char *mt_sim_output_path(const mt_sim_outputs *o, const mt_output *d);
void mt_sim_output_set(mt_sim_outputs *o, const mt_output *d, const char *path);
/* The outputs o writes, as util/outpath.h's specs (the CLI's flag names) into specs
 * (MT_N_OUTPUTS of them); their count. */
int mt_sim_output_specs(const mt_sim_outputs *o, mt_out_spec *specs);

typedef struct mt_simulation {
    mt_simrun run;              /* the run: resolved plan, program, topology, result */
    mt_simrun base;             /* the unperturbed baseline, when has_base */
    int has_base;
    mt_whatif wi;               /* the scenario binding (lives as long as the runs) */
    double mem_limit;           /* bytes per GPU, 0 unknown */
    int32_t worst_mem_gpu;      /* the GPU with the largest estimated peak memory */
    char trace_warning[640];    /* the trace's warning ("" none) */
    char mem_warning[256];      /* memory over the limit ("" none) */
    char host_warning[400];     /* a CPU trace on a GPU: the host it does not count ("" none) */
    mt_estimate est;            /* what the run was predicted to cost (run/estimate.h), baseline included */
    int dry;                    /* --dry-run: built and estimated, not simulated (no result, no files) */
    double peak_rss_bytes;      /* the process's peak resident memory once the run ended (getrusage) */
    mt_replay replay;           /* the run against the traced step (on at the traced plan) */
    mt_time_ps files_cut_ps;    /* MT_TIME_NEVER: the files cover the whole run; else they stop at this
                                 * simulated time (mt_sim_outputs.max_record_bytes reached) */
} mt_simulation;

/* Simulates c's plan on in's trace and writes o's files. On failure nothing is kept and any file
 * begun is removed. */
mt_status mt_run_simulate(const mt_run_config *c, const mt_run_input *in, const mt_sim_outputs *o,
                          mt_simulation *out, mt_error *err);
void mt_simulation_free(mt_simulation *s);

/* The report view of a finished simulation (pointers into s, c and in), with its warnings (the
 * trace's, the performance model's, memory over the limit). */
mt_run_summary mt_simulation_summary(const mt_simulation *s, const mt_run_config *c, const mt_run_input *in);

/* 1 when the largest estimated peak memory is over the limit; the message into buf. */
int mt_simulation_mem_warning(const mt_simulation *s, char *buf, size_t len);

#endif

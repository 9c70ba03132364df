/* report/summary.h — the answer of one simulation, as text (what `mitosis simulate` prints), as
 * JSON (`--json`, the web API) and as the summary lines of the HTML report.
 *
 * mt_run_summary is a view: plain pointers to what the run built and plain facts about how it
 * was configured, so that the writers depend on nothing above report/ (run/ fills it). The
 * writers only read it. Text and JSON carry the same facts; every number in the text is in the
 * JSON. Costs: O(GPUs + layers + stages).
 */
#ifndef MT_REPORT_SUMMARY_H
#define MT_REPORT_SUMMARY_H

#include <stdio.h>

#include <jansson.h>

#include "extrapolate/hostmodel.h"
#include "extrapolate/program.h"
#include "perfmodel/perfmodel.h"
#include "report/html.h"
#include "report/record.h"
#include "report/replay.h"
#include "sim/simulate.h"
#include "tracer/meta.h"
#include "tracer/trace.h"

/* What every output says when the ranks are CPU processes (run/device.h). */
#define MT_CPU_RANKS_TEXT "CPU processes: the trace was recorded on a CPU and no GPU was named (--target-gpu, " \
    "or a topology of GPUs such as dgx-h100), so every \"GPU\" here is one CPU process like the traced one"

/* The most warnings a summary carries. */
#define MT_SUMMARY_WARNINGS 5

typedef struct mt_run_summary {
    const mt_trace *t;
    const mt_program *prog;       /* the resolved plan and the stage programs */
    const mt_sim_result *res;
    const mt_hostmodel *host;     /* NULL: no host model */
    const char *topology;         /* the topology spec, NULL: the model's own endpoints */
    const char *network;          /* "flow", "photonic" */
    mt_pm_kind perf_model;
    const char *target_gpu;       /* NULL: the traced GPU */
    const char *op_times;         /* one line: what the operator times are (run/device.h's label;
                                     NULL: the model's name) */
    int cpu_ranks;                /* 1: the ranks are CPU processes (a CPU trace, no GPU named) */
    double host_scale, op_scale;  /* time scaling (--host-scale, calibration) */
    double mem_limit;             /* bytes per GPU, 0 unknown */
    const mt_calibration *cal;    /* NULL or !on: no calibration */
    const mt_sim_result *base;    /* the unperturbed baseline of a what-if, NULL */
    const char *warnings[MT_SUMMARY_WARNINGS]; /* what the user should know about the answer: the
                                     trace's, the performance model's, memory over the limit, a CPU
                                     trace's host, the collectives' schedule an output forced (JSON
                                     "warnings"; the CLI prints them on stderr) */
    int n_warnings;
    double peak_rss_bytes;        /* the process's peak resident memory when the run ended (0 unknown) */
    const mt_replay *replay;      /* the run against the traced step (report/replay.h), NULL none */
    const mt_commfit *commfit;    /* the network fitted to the traced collectives, NULL none */
    int32_t blocks, traced_blocks;/* --blocks: the model's repeating blocks and the trace's (0: as traced) */
    int64_t seq, traced_seq;      /* --seq: the sequence length asked for and the trace's (0: as traced) */
    const char *comm_slow;        /* compute slowed by communication: the model, or "off (why)"; NULL none */
} mt_run_summary;

/* The text `mitosis simulate` prints: plan, batch, network, op times, host model, step time,
 * what-if cost, whom GPUs waited for (report/waits.h), per-GPU rows (all when per_gpu or
 * N <= 16, else the last to finish, the one with the most exposed communication and the one with
 * the most peer wait), per-layer rows with `layers`, simulation counts. */
void mt_summary_print(FILE *out, const mt_run_summary *s, int per_gpu, int layers);

/* The same as a new JSON object (keys in README "simulate --json"). */
json_t *mt_summary_json(const mt_run_summary *s);
/* The same JSON written to out, byte for byte what json_dumps(mt_summary_json(s), JSON_INDENT(2) |
 * JSON_REAL_PRECISION(10)) and a newline would print, with the per-GPU rows streamed
 * (report/jsonw.h): memory O(1) in the GPUs, not a tree of them. 0, or -1 when a write failed. */
int mt_summary_json_write(FILE *out, const mt_run_summary *s);

/* Writes the HTML report of the run to path: rep as the caller filled it (title, its own summary
 * lines, plan rows), then the run's summary lines (trace, plan, batch, network, op times, host
 * model, time scaling, step time, throughput, memory, warning) and its per-GPU, per-layer and
 * timeline sections (rec may be NULL: no timeline; `gpus` the GPUs the timeline draws, NULL: the
 * recorder's). */
mt_status mt_summary_html_write(const char *path, const mt_html_report *rep, const mt_run_summary *s,
                                const mt_recorder *rec, const mt_span_filter *gpus, mt_error *err);

/* "calibrated ..." line (nothing when cal is NULL or off). */
void mt_calibration_print(FILE *out, const mt_calibration *cal);
/* {measured_ms, source, uncalibrated_ms, calibrated_ms, host_scale, op_scale}, or JSON null. */
json_t *mt_calibration_json(const mt_calibration *cal);

/* The step lines of a multi-step run and, with a baseline, the what-if cost block. */
void mt_whatif_print(FILE *out, const mt_sim_result *r, const mt_sim_result *base);
/* The what-if's change of the run (all steps) in % of the unperturbed run's (report/verdict.h's
 * mt_change_pct): the number the what-if line prints; 0 without a baseline. */
double mt_whatif_change_pct(const mt_sim_result *r, const mt_sim_result *base);
/* Keys steps, step_ms_each and, with a baseline, whatif{...} into o. */
void mt_whatif_json(json_t *o, const mt_sim_result *r, const mt_sim_result *base);

/* GPUs the HTML timeline draws when the plan has more: 0..MT_HTML_GANTT_GPUS-1. */
#define MT_HTML_GANTT_GPUS 16
/* Sets f (initialised by the caller) to the GPUs an HTML timeline of n_gpus GPUs draws. */
mt_status mt_summary_html_gpus(mt_span_filter *f, int32_t n_gpus, mt_error *err);

#endif

/* run/outputs.h — the files a simulation writes, one table: each output's name (the C API's
 * mitosis_result_write `what`, Python's Result method, the web API's "files" entry), its CLI flag,
 * the files it writes, its name in a web run's folder, and its help line. The CLI's output flags
 * (cli/cmd_simulate.c), mt_sim_outputs' path fields (run/simulate.h), the writers' dispatch
 * (run/simulate.c), mitosis_result_write, the server's downloads and Python's Result methods all
 * come from MT_SIM_OUTPUTS.
 *
 * Adding a format touches two places: one X line below, and its writer (open_NAME and
 * write_NAME in run/simulate.c, over a report/ writer).
 *
 * X(name, field, flag, metavar, complete, files, web, mime, early, help):
 *   field     its path in mt_sim_outputs (NULL: not written)
 *   complete  "file" or "dir" (shell completion)
 *   files     a folder's files (patterns its writer owns: util/outpath.h mt_out_dir_open), NULL-
 *             terminated; NULL for a single file
 *   web       its name in a web run's folder (a folder's files go under it), NULL: not offered
 *   early     1: written before the writers that sort the recorded spans (report/record.h), which
 *             it reads in recording order; the table's order otherwise
 * Invariant: the names differ; a `web` output's files are plain names (no patterns).
 */
#ifndef MT_RUN_OUTPUTS_H
#define MT_RUN_OUTPUTS_H

#include <stddef.h>

#include "report/csvout.h"

/* The files of --chakra and --kineto (patterns). */
extern const char *const MT_OUT_CHAKRA_FILES[];
extern const char *const MT_OUT_KINETO_FILES[];

#define MT_SIM_OUTPUTS(X) \
    X(timeline, timeline, "--timeline", "FILE", "file", NULL, "timeline.json", "application/json", 0, \
      "the step as Perfetto / chrome://tracing JSON: per GPU its ops, host and stream waits, TP/DP collectives " \
      "and pipeline sends; link load counters") \
    X(csv, csv_dir, "--csv", "DIR", "dir", MT_CSV_FILES, "csv", "text/csv", 0, \
      "ops.csv, gpus.csv, layers.csv, links.csv, collectives.csv in DIR (created when missing; columns in the " \
      "README)") \
    X(html, html, "--html", "FILE", "file", NULL, "report.html", "text/html; charset=utf-8", 0, \
      "a self-contained HTML report: summary, per-GPU and per-layer bars, zoomable timeline of GPUs 0-15") \
    X(chakra, chakra_dir, "--chakra", "DIR", "dir", MT_OUT_CHAKRA_FILES, NULL, NULL, 1, \
      "the simulated workload as Chakra ET, one DIR/mitosis.RANK.et per GPU (created when missing): compute, " \
      "collectives, sends and receives with the simulated order as dependencies; replay with --as-is") \
    X(kineto, kineto_dir, "--kineto", "DIR", "dir", MT_OUT_KINETO_FILES, NULL, NULL, 1, \
      "the simulated step as PyTorch-profiler (Kineto) JSON, one DIR/mitosis_rankR.pt.trace.json per GPU " \
      "(created when missing), NCCL-named collective kernels: opens in Holistic Trace Analysis, TensorBoard, " \
      "Perfetto")

#define MT_OUT_COUNT_(name, ...) +1
enum { MT_N_OUTPUTS = 0 MT_SIM_OUTPUTS(MT_OUT_COUNT_) };
#undef MT_OUT_COUNT_

/* One row of the table, as data. */
typedef struct mt_output {
    const char *name, *flag, *metavar, *complete;
    const char *const *files;   /* NULL: one file */
    const char *web, *mime;     /* web NULL: not offered by the server */
    int early;
    const char *help;
    size_t path;                /* offsetof(mt_sim_outputs, field) */
} mt_output;

/* The table in order, MT_N_OUTPUTS rows. */
extern const mt_output MT_OUTPUTS[MT_N_OUTPUTS];

/* The output named `name` ("timeline"), NULL when none. */
const mt_output *mt_output_find(const char *name);

/* The names as an English list, each quoted: "\"timeline\", \"csv\" or \"html\"" (`web_only`: only
 * those the server offers, but `skip`, which may be NULL), into buf. */
const char *mt_output_names(int web_only, const char *skip, char *buf, size_t len);

#endif

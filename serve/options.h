/* serve/options.h — a web request's run options turned into the CLI's: the JSON object
 * {"gpus": 8, "topology": "dgx-h100", "slow-gpu": ["0:2"], "sp": true} becomes the argv
 * `--gpus 8 --topology dgx-h100 --slow-gpu 0:2 --sp -- TRACE` and is parsed by the same flag
 * tables as `mitosis simulate` / `mitosis compare` (run/flags.h), so the API takes exactly the
 * CLI's run options, range-checked with the CLI's one-line messages.
 *
 * Refused (MT_EINVAL, one line naming the option): a bandwidth under MT_SERVE_MIN_BW_BPS; a
 * key that is no run option of the command
 * (the CLI's output flags --json, --html, --timeline, --csv... included: the server writes its
 * own files); an option whose value is a file or folder on the server (--model, --gpu-specs,
 * --scenario: the server opens no path a client names); a value that is not a string, number or
 * boolean (an array only for a repeatable option); `false` for a value-taking option.
 * Invariant after a successful mt_serve_opts_parse: job.rc and job.cc are filled and checked
 * (mt_job_check), and point into argv, which the struct owns.
 * Costs: O(options x flags).
 */
#ifndef MT_SERVE_OPTIONS_H
#define MT_SERVE_OPTIONS_H

#include <jansson.h>

#include "run/job.h"
#include "util/err.h"

enum { MT_SERVE_OPTS_MAX_ARGS = 256 };

/* The web API's floor on every bandwidth option (link-bw, nic-bw, port-bw...), bytes/s: see
 * options.c. The CLI has none beyond "above 0". */
#define MT_SERVE_MIN_BW_BPS 1e6

typedef enum { MT_SERVE_SIMULATE = 0, MT_SERVE_COMPARE, MT_SERVE_CLUSTER } mt_serve_cmd;

typedef struct mt_serve_opts {
    mt_serve_cmd cmd;
    mt_job_words argv;      /* owned copies, at most MT_SERVE_OPTS_MAX_ARGS; argv.w[0] is the command name */
    mt_job job;             /* simulate and compare: the run's front door (run/job.h), parsed and checked */
    int job_live;           /* job was opened (and must be closed) */
    json_t *cluster;        /* cluster: the job file (serve/clusterreq.h), owned; job and argv unused */
} mt_serve_opts;

/* "simulate", "compare" or "cluster" into *cmd; MT_EINVAL naming the value otherwise. */
mt_status mt_serve_cmd_parse(const char *name, mt_serve_cmd *cmd, mt_error *err);
const char *mt_serve_cmd_name(mt_serve_cmd cmd);

/* Fills o from options (a JSON object, or NULL for none) for the trace's paths (a folder or its
 * files). On failure o holds nothing (mt_serve_opts_free is still safe). */
mt_status mt_serve_opts_parse(mt_serve_cmd cmd, const json_t *options, const char *const *paths, int n_paths,
                              mt_serve_opts *o, mt_error *err);
void mt_serve_opts_free(mt_serve_opts *o);

/* The options a command takes through the API as JSON, for the page: [{name, section, kind,
 * metavar, help, lo, hi, choices, repeat}], without the refused ones. */
json_t *mt_serve_opts_json(mt_serve_cmd cmd);

/* What the page offers as option values: {gpus: [{name, note, mem_bytes}] (the GPU table,
 * --target-gpu), presets: [{name, syntax, help, link_bw_Bps, nic_bw_Bps, gpu, gpus}] (the topology
 * presets, --topology, with their tiers' default bandwidths (nic 0: none), the GPU a box's name
 * promises and its GPU count (null: a shape of any GPU, of a size given)), placements: [{name, help}] (a
 * cluster run's placement policies, run/placement.h)}. NULL on failure. */
json_t *mt_serve_opts_values_json(void);

#endif

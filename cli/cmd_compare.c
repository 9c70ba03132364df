/* cli/cmd_compare.c — `mitosis compare`: the same traced step under many plans, ranked by
 * throughput, or one plan under a sweep of one setting (run/compare.h does the work; this file
 * holds compare's own flags, the usage text and the calls). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "run/compare.h"
#include "run/flags.h"
#include "run/job.h"
#include "run/ranks.h"
#include "run/show.h"
#include "run/watch.h"
#include "util/outpath.h"

typedef struct cmp_cli {
    int as_json;
    const char *html;
} cmp_cli;

static const mt_flag OUTPUT[] = {
    {"--json", MT_FLAG_SWITCH, offsetof(cmp_cli, as_json), NULL, "the table as JSON on stdout"},
    {"--html", MT_FLAG_STRING, offsetof(cmp_cli, html), "FILE", "a self-contained HTML report: the table and "
     "chart, and the fastest run's per-GPU and per-layer bars and timeline", .complete = "file"},
};
static const mt_flag_table OUTPUT_FLAGS = MT_FLAG_TABLE("Output", OUTPUT);

static void usage(FILE *out) {
    fprintf(out,
            "usage: mitosis compare TRACE [TRACE2] --gpus N [--plans auto|LIST] [options]\n"
            "       mitosis compare TRACE [TRACE2] [plan flags] --sweep NAME=VALUES [options]\n\n"
            "Simulates the traced step under every plan for N GPUs (or the --plans LIST) and prints\n"
            "them ranked, fastest first: step time, speed-up over one GPU (throughput over the\n"
            "traced batch on one GPU), samples/s, exposed communication, peer wait, host wait and\n"
            "bubble (max over GPUs), estimated peak memory per GPU, '!' over --gpu-mem. Plans the\n"
            "trace or the topology cannot run are listed as skipped, with the reason. With what-if\n"
            "flags every plan runs perturbed (and ranks by that) and unperturbed; the 'change'\n"
            "column is the difference; with --steps K, step ms is the mean over the K steps.\n"
            "In a search of every plan (--plans auto) the first 10 rows are exact (--top K: the\n"
            "first K); plans whose bound (compute per step, state memory) keeps them out of those\n"
            "rows are listed as pruned, not simulated; the rows kept are those of --exhaustive\n"
            "(every plan simulated, as for a --plans LIST), byte for byte.\n\n");
    mt_flags_help(out, &MT_RUN_COMPARE_FLAGS);
    mt_flags_help(out, &OUTPUT_FLAGS);
    mt_flags_help(out, &MT_RUN_DRY_FLAGS);
    mt_run_flags_help(out, 1);
}

static const mt_flag_table *const TABLES[] = {&MT_RUN_COMPARE_FLAGS, &OUTPUT_FLAGS, &MT_RUN_DRY_FLAGS, NULL};
const mt_command mt_cmd_compare = {
    "compare", cmd_compare, "rank every plan for N GPUs, or sweep bandwidth / GPUs / batch for one plan",
    "TRACE [TRACE2] --gpus N [--plans auto|LIST | --sweep NAME=VALUES] [options]", usage, TABLES, MT_CMD_RUN};

int cmd_compare(int argc, char **argv) {
    mt_job job;
    cmp_cli c;
    memset(&c, 0, sizeof c);
    mt_error err = {0};
    if (mt_job_open(&job, MT_JOB_COMPARE, &err) != MT_OK) return mt_cli_fail("compare", &err);
    const mt_run_config *rc = &job.rc;
    mt_watch w; /* "loading", the estimate, the rows done: on a terminal */
    mt_watch_init(&w, &job, stderr);
    mt_job_result r = {0};
    mt_ranks ranks;
    job.cc.ranks = &ranks;
    int code = 0;
    const mt_flag_bind own[] = {{&OUTPUT_FLAGS, &c}, {&MT_RUN_DRY_FLAGS, &job.rc}};
    mt_status st = mt_ranks_open(&ranks, &err); /* MPI_Init under mpirun, before anything else */
    int root = mt_ranks_root(&ranks);
    if (st == MT_OK) st = mt_job_parse(&job, argc, argv, NULL, own, 2, 0, &err);
    if (st == MT_OK && job.seen.help) {
        if (root) usage(stdout);
        goto out;
    }
    const mt_out_spec outs[] = {{"--html", c.html, 0}}; /* never an input; a bad path fails before the runs */
    if (st == MT_OK) st = mt_run_check_outputs(rc, outs, 1, &err);
    if (st == MT_OK && c.html && root) st = mt_out_probe(c.html, "the HTML report", &err);
    st = mt_ranks_agree(&ranks, mt_watch_load(&w, &job, st, &err), &err); /* every rank agrees on the status */
    mt_watch_estimate(&w, &job, root);
    if (st == MT_OK) st = mt_job_run(&job, NULL, &r, &err);
    mt_watch_end(&w);
    if (!root || rc->dry_run) goto out; /* rank 0 prints the table, the files and the error */
    if (st == MT_OK && c.html) st = mt_compare_html(&r.cmp, rc, &job.in, &job.cc, c.html, &err);
    /* after the files: a failing run prints only its error */
    if (st == MT_OK) mt_show_comparison(stdout, &r.cmp, c.as_json);
    for (int k = 0; st == MT_OK && k < r.cmp.n_warnings; k++) mt_cli_warn("compare", r.cmp.warnings[k]);
out:
    if (st != MT_OK) code = root ? mt_cli_fail("compare", &err) : mt_exit_code(err.code);
    mt_job_result_free(&r);
    mt_job_close(&job);
    mt_ranks_close(&ranks);
    return code;
}

/* cli/cmd_simulate.c — `mitosis simulate`: one GPU's traced step extrapolated onto N GPUs
 * under a data / tensor / pipeline / hybrid plan, simulated on a network model (run/simulate.h
 * does the work; this file holds the output flags, the usage text and the calls). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "run/asis.h"
#include "run/flags.h"
#include "run/job.h"
#include "run/show.h"

typedef struct sim_cli {
    mt_sim_outputs out;
    int as_json, per_gpu, layers;
    int as_is;                /* --as-is: TRACE is a set of per-rank Chakra ET files (run/asis.h) */
} sim_cli;

#define OUT(field) offsetof(sim_cli, field)
/* The file outputs, one flag per row of the output table (run/outputs.h). */
#define OUT_FLAG_(name, field, flag, metavar, compl, files, web, mime, early, help) \
    {flag, MT_FLAG_STRING, OUT(out.field), metavar, help, .complete = compl},
static const mt_flag OUTPUT[] = {
    {"--json", MT_FLAG_SWITCH, OUT(as_json), NULL, "everything as JSON on stdout"},
    {"--per-gpu", MT_FLAG_SWITCH, OUT(per_gpu), NULL, "one row per GPU (default when N <= 16)"},
    {"--layers", MT_FLAG_SWITCH, OUT(layers), NULL, "per-layer compute and communication"},
    MT_SIM_OUTPUTS(OUT_FLAG_)
    {"--as-is", MT_FLAG_SWITCH, OUT(as_is), NULL, "TRACE is a Chakra ET workload (NAME.RANK.et files, or their "
     "directory): every rank runs its own graph, collectives matched by order and pg_name (README \"Chakra\")"},
};
#undef OUT_FLAG_
#undef OUT
static const mt_flag_table OUTPUT_FLAGS = MT_FLAG_TABLE("Output", OUTPUT);

static void usage(FILE *out) {
    fprintf(out, "usage: mitosis simulate TRACE [TRACE2] --gpus N [plan] [--topology SPEC] [options]\n\n"
                 "Extrapolates the traced step onto N = D x T x P virtual GPUs and simulates it.\n"
                 "Without --topology the GPUs hang off one switch (switch:N, default link bandwidth).\n\n");
    mt_run_flags_help(out, 0);
    mt_flags_help(out, &OUTPUT_FLAGS);
    mt_flags_help(out, &MT_RUN_OUTOPT_FLAGS);
    mt_flags_help(out, &MT_RUN_DRY_FLAGS);
    mt_flags_help(out, &MT_RUN_WHATIF_FLAGS);
}

static const mt_flag_table *const TABLES[] = {&OUTPUT_FLAGS, &MT_RUN_OUTOPT_FLAGS, &MT_RUN_DRY_FLAGS, NULL};
const mt_command mt_cmd_simulate = {
    "simulate", cmd_simulate, "extrapolate the traced step to N GPUs (dp/ddp/tp/pp/hybrid) and simulate it",
    "TRACE [TRACE2] --gpus N [plan] [--topology SPEC] [options]", usage, TABLES, MT_CMD_RUN};

/* Flag combinations that cannot mean anything. */
static mt_status check(const mt_run_config *rc, const sim_cli *c, mt_error *err) {
    if (rc->n_paths == 0) return mt_fail(err, MT_EINVAL, "no trace given (usage: mitosis simulate TRACE --gpus N)");
    const mt_sim_outputs *o = &c->out;
    MT_CHECK(mt_sim_outputs_check(o, err));
    if (c->as_is && o->kineto_dir)
        return mt_fail(err, MT_EINVAL, "--kineto writes a simulated step; with --as-is use simulate without it");
    if (c->as_is && o->chakra_dir)
        return mt_fail(err, MT_EINVAL, "--chakra writes an extrapolated workload; with --as-is the workload is "
                       "already Chakra (drop one of them)");
    return MT_OK;
}

/* simulate --as-is: the per-rank graphs run as given (run/asis.h). */
static mt_status run_as_is(const mt_run_config *rc, const sim_cli *c, mt_error *err) {
    if (c->out.timeline || c->out.csv_dir || c->out.html || c->layers)
        return mt_fail(err, MT_EINVAL, "--as-is runs a Chakra workload: --timeline, --csv, --html and --layers "
                       "need an extrapolated trace (drop them)");
    mt_asis_job run;
    MT_CHECK(mt_run_asis(rc, &run, err));
    mt_show_asis(stdout, &run, rc, c->as_json, c->per_gpu);
    mt_asis_job_free(&run);
    return MT_OK;
}

int cmd_simulate(int argc, char **argv) {
    mt_job job;
    sim_cli c;
    memset(&c, 0, sizeof c);
    mt_sim_outputs_init(&c.out);
    c.out.progress = stderr;
    c.out.notices = stderr;
    mt_error err = {0};
    mt_job_result r = {0};
    if (mt_job_open(&job, MT_JOB_SIMULATE, &err) != MT_OK) return mt_cli_fail("simulate", &err);
    const mt_run_config *rc = &job.rc;
    const mt_flag_bind own[] = {{&OUTPUT_FLAGS, &c}, {&MT_RUN_OUTOPT_FLAGS, &c.out}, {&MT_RUN_DRY_FLAGS, &job.rc}};
    mt_status st = mt_job_parse(&job, argc, argv, NULL, own, 3, 0, &err);
    int code = 0;
    if (st == MT_OK && job.seen.help) {
        usage(stdout);
        goto out;
    }
    if (st == MT_OK) st = check(rc, &c, &err);
    mt_out_spec outs[MT_N_OUTPUTS];
    int n_outs = mt_sim_output_specs(&c.out, outs);
    if (st == MT_OK) st = mt_run_check_outputs(rc, outs, n_outs, &err); /* before anything is opened */
    if (st == MT_OK && c.as_is) {
        if (run_as_is(rc, &c, &err) != MT_OK) code = mt_cli_fail("simulate", &err);
        goto out;
    }
    if (st == MT_OK) st = mt_job_load(&job, NULL, &err);
    if (st == MT_OK) st = mt_job_run(&job, &c.out, &r, &err);
    if (st != MT_OK) {
        code = mt_cli_fail("simulate", &err);
        goto out;
    }
    if (r.sim.dry) { /* --dry-run: the estimate is the answer */
        char line[384];
        printf("estimate   %s\n", mt_estimate_text(&r.sim.est, &r.sim.run.plan, line, sizeof line));
        goto out;
    }
    mt_run_summary sum = mt_job_summary(&job, &r);
    mt_show_summary(stdout, &sum, c.as_json, c.per_gpu, c.layers);
    /* warnings only once everything succeeded: a failing run's stderr is its one error line */
    for (int k = 0; k < sum.n_warnings; k++) mt_cli_warn("simulate", sum.warnings[k]);
out:
    mt_job_result_free(&r);
    mt_job_close(&job);
    return code;
}

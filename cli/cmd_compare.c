/* cli/cmd_compare.c — `mitosis compare`: the same traced step under many plans, ranked by
 * throughput, or one plan under a sweep of one setting (run/compare.h does the work; this file
 * holds compare's own flags, the usage text and the calls). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "extrapolate/planlist.h"
#include "extrapolate/sparseplans.h"
#include "cli/runflags.h"
#include "report/comparison.h"
#include "report/progress.h"
#include "run/compare.h"
#include "run/input.h"
#include "run/pool.h"
#include "run/ranks.h"

typedef struct cmp_cli {
    mt_compare_config cc;
    int as_json;
    const char *html;
    mt_progress progress;
    int progress_started;
} cmp_cli;

static mt_status set_plans(void *base, const char *v, mt_error *err) {
    ((cmp_cli *)base)->cc.plans = strcmp(v, "auto") ? v : NULL;
    return MT_OK;
}

static mt_status set_dp_modes(void *base, const char *v, mt_error *err) {
    return mt_dp_modes_parse(v, &((cmp_cli *)base)->cc.dp_modes, err);
}

static mt_status set_sparse(void *base, const char *v, mt_error *err) {
    return mt_sparse_parse(v, &((cmp_cli *)base)->cc.sparse, err);
}

static mt_status set_recompute_modes(void *base, const char *v, mt_error *err) {
    return mt_recompute_modes_parse(v, &((cmp_cli *)base)->cc.recompute_modes, err);
}

static mt_status set_vpp_sizes(void *base, const char *v, mt_error *err) {
    mt_compare_config *cc = &((cmp_cli *)base)->cc;
    return mt_vpp_list_parse(v, cc->vpps, &cc->n_vpps, err);
}

static mt_status set_cp_sizes(void *base, const char *v, mt_error *err) {
    mt_compare_config *cc = &((cmp_cli *)base)->cc;
    return mt_size_list_parse("--cp-sizes", v, cc->cps, &cc->n_cps, err);
}

static mt_status set_sp_modes(void *base, const char *v, mt_error *err) {
    return mt_sp_modes_parse(v, &((cmp_cli *)base)->cc.sp_modes, err);
}

static mt_status set_sweep(void *base, const char *v, mt_error *err) {
    return mt_sweep_parse(v, &((cmp_cli *)base)->cc.sweep, err);
}

static const mt_flag OWN[] = {
    {"--plans", MT_FLAG_CALL, 0, "auto|LIST", "auto (default): every D x T x P = N; ddp and dp when D > 1; 1f1b and "
     "gpipe with P, 2P, 4P micro-batches (those dividing the replica batch) when P > 1. --dp/--tp/--pp/"
     "--micro-batches, --strategy dp|ddp and --schedule given fix that part. LIST: plans separated by ',', fields "
     "by ':': dp=D (all-reduce after backward) | ddp=D (DDP buckets), tp=T, pp=P, mb=M, schedule=gpipe|1f1b, "
     "vpp=V, recompute=none|selective|full, placement=ORDER, bucket=SIZE, algo=A, zero=1|2|3, fsdp, fsdp_shard=G, single (1 GPU), default (flags only); e.g. "
     "ddp=8,dp=8,tp=2:ddp=4,pp=4:mb=8:schedule=gpipe. An unset size takes the GPUs left over (dp first).",
     .call = set_plans},
    {"--dp-modes", MT_FLAG_CALL, 0, "LIST", "the data-parallel modes --plans auto lists for D > 1: all, or a list of "
     "ddp, dp, zero1, zero2, zero3, fsdp (default ddp,dp; --strategy, --zero or --fsdp given fix the mode)",
     .call = set_dp_modes},
    {"--sparse-plans", MT_FLAG_CALL, 0, "LIST", "expert-parallel and sharded-embedding variants --plans auto adds to "
     "each DDP plan with D > 1: ep (ep=E for each E dividing D and the experts, dp D / E), table, row, column "
     "(emb=); auto (default): ep for a trace with MoE layers, the three shardings for one with embedding_bag "
     "tables; none: no variant", .call = set_sparse},
    {"--recompute-modes", MT_FLAG_CALL, 0, "LIST", "the activation recomputation modes --plans auto lists for every "
     "plan: all, or a list of none, selective, full (default: --recompute's, none)", .call = set_recompute_modes},
    {"--vpp-sizes", MT_FLAG_CALL, 0, "LIST", "the interleaving degrees --plans auto lists for pipelined 1f1b plans, "
     "e.g. 1,2,4 (1: plain 1F1B; V > 1 where the micro-batches are a multiple of P; default: --vpp's, 1)",
     .call = set_vpp_sizes},
    {"--cp-sizes", MT_FLAG_CALL, 0, "LIST", "the context-parallel sizes --plans auto lists for every plan, e.g. 1,2,4: "
     "C ranks taken out of the plan's dp (skipped where C does not divide it); default: none", .call = set_cp_sizes},
    {"--sp-modes", MT_FLAG_CALL, 0, "M", "sequence parallelism in the plans --plans auto lists with tp > 1: off, on or "
     "all (both; default: --sp's)", .call = set_sp_modes},
    {"--sweep", MT_FLAG_CALL, 0, "NAME=VALUES", "one row per value for the plan the plan flags give (as in "
     "mitosis simulate; each row equals simulate with that value). NAME: link-bw, nic-bw (bandwidths), gpus, "
     "batch (global). VALUES: FROM:TO (doubling), FROM:TO:xF (times F), FROM:TO:S (S evenly spaced values), or a "
     "list A,B,C; e.g. link-bw=100GB/s:900GB/s:5, gpus=8:64, nic-bw=25GB/s,50GB/s. In --topology, {gpus} and "
     "{nodes} (= gpus / --gpus-per-node) are replaced for each run: multinode:nodes={nodes},gpus=8",
     .call = set_sweep},
    {"--jobs", MT_FLAG_INT, offsetof(cmp_cli, cc.jobs), "N", "run the plans (or swept values) on N worker threads "
     "(default: one per core; 1: one after another); the table is the same whatever N. --routing latency runs "
     "one at a time (igraph's Dijkstra is not thread-safe). Across machines: mpirun -np K mitosis compare ... "
     "splits the rows over K ranks (each on --jobs threads) and rank 0 prints the table", .lo = 1, .hi = 4096},
    {"--json", MT_FLAG_SWITCH, offsetof(cmp_cli, as_json), NULL, "the table as JSON on stdout"},
    {"--html", MT_FLAG_STRING, offsetof(cmp_cli, html), "FILE", "a self-contained HTML report: the table and "
     "chart, and the fastest run's per-GPU and per-layer bars and timeline", .complete = "file"},
};
static const mt_flag_table OWN_FLAGS = MT_FLAG_TABLE("Compare", OWN);

static void usage(FILE *out) {
    fprintf(out,
            "usage: mitosis compare TRACE [TRACE2] --gpus N [--plans auto|LIST] [options]\n"
            "       mitosis compare TRACE [TRACE2] [plan flags] --sweep NAME=VALUES [options]\n\n"
            "Simulates the traced step under every plan for N GPUs (or the --plans LIST) and prints\n"
            "them ranked, fastest first: step time, speed-up over one GPU (throughput over the\n"
            "traced batch on one GPU), samples/s, exposed communication, host wait and bubble\n"
            "(max over GPUs), estimated peak memory per GPU, '!' over --gpu-mem. Plans the trace or the\n"
            "topology cannot run are listed as skipped, with the reason. With what-if flags every plan\n"
            "runs perturbed (and ranks by that) and unperturbed; the 'change' column is the difference;\n"
            "with --steps K, step ms is the mean over the K steps.\n\n");
    mt_flags_help(out, &OWN_FLAGS);
    mt_cli_run_help(out, 1);
}

static const mt_flag_table *const TABLES[] = {&OWN_FLAGS, NULL};
const mt_command mt_cmd_compare = {
    "compare", cmd_compare, "rank every plan for N GPUs, or sweep bandwidth / GPUs / batch for one plan",
    "TRACE [TRACE2] --gpus N [--plans auto|LIST | --sweep NAME=VALUES] [options]", usage, TABLES, MT_CMD_RUN};

/* "plans: 3/61 done, 1.2 s, about 20 s left: ddp=4:tp=2" on a terminal (report/progress.h). */
static void progress(void *ctx, int32_t done, int32_t n, const char *label) {
    cmp_cli *c = ctx;
    if (!c->progress_started) { /* the clock of the estimate starts with the rows */
        mt_progress_end(&c->progress);
        mt_progress_init(&c->progress, stderr, 0);
        c->progress_started = 1;
    }
    if (done < n) mt_progress_items(&c->progress, c->cc.sweep.kind ? "runs" : "plans", done, n, label);
    else mt_progress_end(&c->progress);
}

static void print(const mt_comparison *cmp, int as_json) {
    if (!as_json) {
        mt_comparison_print(stdout, cmp);
        return;
    }
    mt_cli_print_json(mt_comparison_json(cmp));
}

/* The HTML report is created empty before the runs, so that a bad path fails first. */
static mt_status touch(const char *path, mt_error *err) {
    FILE *f = fopen(path, "w");
    if (!f)
        return mt_fail(err, MT_EIO, "cannot write the HTML report '%s': %s (choose a writable path)", path,
                       strerror(errno));
    fclose(f);
    return MT_OK;
}

/* Loads the input (with a "loading" line on a terminal); with ranks, every rank agrees on the status. */
static mt_status load(cmp_cli *c, mt_run_config *rc, mt_run_input *in, mt_status st, mt_error *err) {
    mt_progress_init(&c->progress, stderr, 0);
    if (st == MT_OK) {
        char what[256];
        snprintf(what, sizeof what, "loading %s", rc->paths[0]);
        mt_progress_phase(&c->progress, what);
        st = mt_run_input_open(rc, in, err);
    }
    return mt_ranks_agree(c->cc.ranks, st, err);
}

int cmd_compare(int argc, char **argv) {
    mt_run_config rc;
    cmp_cli c;
    memset(&c, 0, sizeof c);
    mt_compare_config_init(&c.cc);
    c.cc.progress = progress;
    c.cc.progress_ctx = &c;
    mt_error err = {0};
    if (mt_run_config_init(&rc, &err) != MT_OK) return mt_cli_fail("compare", &err);
    mt_flag_seen seen = {0};
    mt_run_input in = {0};
    mt_comparison cmp;
    memset(&cmp, 0, sizeof cmp);
    mt_ranks ranks;
    c.cc.ranks = &ranks;
    int code = 0, html_pending = 0;
    mt_status st = mt_ranks_open(&ranks, &err); /* MPI_Init under mpirun, before anything else */
    int root = mt_ranks_root(&ranks);
    if (st == MT_OK) st = mt_cli_run_parse(argc, argv, "compare", &rc, &OWN_FLAGS, &c, &seen, &err);
    if (st == MT_OK && seen.help) {
        if (root) usage(stdout);
        goto out;
    }
    if (st == MT_OK) st = mt_compare_check(&rc, &c.cc, &err);
    if (st == MT_OK && c.html && root && (st = touch(c.html, &err)) == MT_OK) html_pending = 1;
    st = load(&c, &rc, &in, st, &err);
    if (st == MT_OK) st = mt_run_compare(&rc, &in, &c.cc, &cmp, &err);
    mt_progress_end(&c.progress);
    if (!root) goto out; /* rank 0 prints the table, the files and the error */
    if (st == MT_OK && c.html && (st = mt_compare_html(&cmp, &rc, &in, &c.cc, c.html, &err)) == MT_OK) html_pending = 0;
    if (st == MT_OK) print(&cmp, c.as_json); /* after the files: a failing run prints only its error */
    for (int k = 0; st == MT_OK && k < cmp.n_warnings; k++) mt_cli_warn("compare", cmp.warnings[k]);
out:
    if (st != MT_OK) code = root ? mt_cli_fail("compare", &err) : mt_exit_code(err.code);
    if (html_pending) remove(c.html);
    mt_comparison_free(&cmp);
    mt_run_input_close(&in);
    mt_run_config_free(&rc);
    mt_ranks_close(&ranks);
    return code;
}

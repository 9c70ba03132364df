/* cli/cmd_cluster.c — `mitosis cluster FILE`: several jobs on one fabric (run/cluster.h), each
 * placed by a policy, simulated together and alone; the flags, the usage text and the calls. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "run/cluster.h"
#include "run/flags.h"
#include "run/placement.h"
#include "run/show.h"

typedef struct cluster_cli {
    const char *file, *placement;
    mt_cluster_files out;
    int as_json, compare;
    mt_netcfg net;
} cluster_cli;

static const mt_flag FLAGS[] = {
    {"--json", MT_FLAG_SWITCH, offsetof(cluster_cli, as_json), NULL, "everything as JSON on stdout"},
    {"--csv", MT_FLAG_STRING, offsetof(cluster_cli, out.csv), "DIR", "jobs.csv and shared_links.csv in DIR",
     .complete = "dir"},
    {"--timeline", MT_FLAG_STRING, offsetof(cluster_cli, out.timeline), "FILE", "the together run as Perfetto / "
     "chrome://tracing JSON: a process per job, per GPU its compute, collective and send threads",
     .complete = "file"},
    {"--html", MT_FLAG_STRING, offsetof(cluster_cli, out.html), "FILE", "a self-contained HTML report: a row per job "
     "with its slowdown, the shared links as a heat map of each job's bytes", .complete = "file"},
    {"--placement", MT_FLAG_STRING, offsetof(cluster_cli, placement), "POLICY", "place every job that the file "
     "places by a policy with this one instead: packed, spread, random[:SEED], rail-aligned"},
    {"--compare-placements", MT_FLAG_SWITCH, offsetof(cluster_cli, compare), NULL, "run the cluster under every "
     "policy and rank them by the worst job's slowdown, then the mean"},
};
static const mt_flag_table TABLE = MT_FLAG_TABLE("Options", FLAGS);

static void usage(FILE *out) {
    fprintf(out, "usage: mitosis cluster FILE [--json] [--csv DIR] [--placement POLICY] [--compare-placements] "
                 "[network options]\n\n"
                 "Several jobs on one fabric: each job (a trace and simulate's flags for it) is placed on the\n"
                 "fabric's GPUs, all run together on one network model, and each is also run alone on the\n"
                 "same GPUs; per job: step alone and together, slowdown, exposed communication, peer waits\n"
                 "and the links where it met other jobs' traffic. FILE (JSON):\n"
                 "  {\"topology\": \"fattree:k=8\", \"placement\": \"packed\",\n"
                 "   \"jobs\": [{\"name\": \"a\", \"trace\": \"traces/cpu-resnet18-b8\",\n"
                 "              \"args\": [\"--gpus\", \"8\", \"--strategy\", \"ddp\"], \"placement\": \"spread\",\n"
                 "              \"start_ms\": 0, \"steps\": 1}]}\n"
                 "Network flags on the command line override the file's \"topology\" and \"network\".\n\n"
                 "Placement policies:\n");
    for (int i = 0; MT_PLACEMENT_POLICIES[i]; i++)
        fprintf(out, "  %-14s %s\n", MT_PLACEMENT_POLICIES[i]->name, MT_PLACEMENT_POLICIES[i]->help);
    fprintf(out, "  0-7,16-23      an explicit list of GPUs in rank order (in the file)\n\n");
    mt_flags_help(out, &TABLE);
    mt_run_net_help(out);
}

static mt_status positional(void *ctx, const char *a, mt_error *err) {
    cluster_cli *c = ctx;
    if (c->file)
        return mt_fail(err, MT_EINVAL, "unexpected argument '%s' (the job file is %s; see mitosis cluster --help)", a,
                       c->file);
    c->file = a;
    return MT_OK;
}

int cmd_cluster(int argc, char **argv) {
    cluster_cli cc;
    memset(&cc, 0, sizeof cc);
    mt_run_net_init(&cc.net);
    mt_error err = {0};
    mt_flag_seen seen;
    if (mt_run_net_parse(&cc.net, argc, argv, &TABLE, &cc, positional, &cc, "cluster", &seen, &err) != MT_OK)
        return mt_cli_fail("cluster", &err);
    if (seen.help) return usage(stdout), 0;
    if (!cc.file) {
        mt_fail(&err, MT_EINVAL, "no job file given (usage: mitosis cluster FILE; see --help)");
        return mt_cli_fail("cluster", &err);
    }
    if (cc.placement && !mt_placement_is_policy(cc.placement)) {
        mt_fail(&err, MT_EINVAL, "--placement '%s' is not a policy: packed, spread, random[:SEED], rail-aligned",
                cc.placement);
        return mt_cli_fail("cluster", &err);
    }
    const mt_cluster_files *f = &cc.out;
    if (cc.compare && (cc.placement || f->csv || f->timeline || f->html)) {
        mt_fail(&err, MT_EINVAL, "--compare-placements runs every policy: drop --%s",
                cc.placement ? "placement" : f->csv ? "csv" : f->timeline ? "timeline" : "html");
        return mt_cli_fail("cluster", &err);
    }
    int net_given = 0;
    for (int32_t k = 0; k < seen.n; k++) {
        const mt_flag *fl = seen.flag[k];
        int own = fl >= FLAGS && fl < FLAGS + sizeof FLAGS / sizeof FLAGS[0];
        net_given |= !own;
    }
    mt_cluster c;
    if (mt_cluster_load(cc.file, &cc.net, net_given, &c, &err) != MT_OK) return mt_cli_fail("cluster", &err);
    const mt_out_spec outs[] = {{"--html", f->html, 0}, {"--timeline", f->timeline, 0}, {"--csv", f->csv, 1}};
    if (mt_cluster_check_outputs(&c, outs, 3, &err) != MT_OK) {
        mt_cluster_free(&c);
        return mt_cli_fail("cluster", &err);
    }
    mt_status st;
    if (cc.compare) {
        mt_cluster_placements p;
        st = mt_cluster_compare_placements(&c, &p, &err);
        if (st == MT_OK) mt_show_placements(stdout, &p, cc.as_json);
    } else {
        mt_cluster_result r;
        st = mt_cluster_run_files(&c, cc.placement, f, &r, &err);
        if (st == MT_OK) mt_show_cluster(stdout, &r, cc.as_json); /* after the files: a failure prints its error only */
        mt_cluster_result_free(&r);
    }
    int rc = st == MT_OK ? 0 : mt_cli_fail("cluster", &err);
    mt_cluster_free(&c);
    return rc;
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_cluster = {"cluster", cmd_cluster, "several jobs on one fabric: placed by a policy, "
                                   "simulated together and alone, each with its slowdown",
                                   "FILE [--json] [--csv DIR] [--placement POLICY] [--compare-placements] "
                                   "[network options]", usage, TABLES, MT_CMD_NET};

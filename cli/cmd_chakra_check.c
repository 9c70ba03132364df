/* cli/cmd_chakra_check.c — `mitosis chakra-check DIR`: what ASTRA-sim and other Chakra consumers
 * will see in a set of per-rank ET files (report/ckcheck.h); the flags, the usage and the calls. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "report/chakra.h"
#include "report/ckcheck.h"
#include "run/asis.h"
#include "util/fileio.h"

typedef struct ckc_cli {
    int as_json;
    const char *groups;
    mt_run_config rc;
} ckc_cli;

static const mt_flag FLAGS[] = {
    {"--json", MT_FLAG_SWITCH, offsetof(ckc_cli, as_json), NULL, "the report as JSON"},
    {"--comm-groups", MT_FLAG_STRING, offsetof(ckc_cli, groups), "FILE", "the communicator table (default: "
     "DIR/comm_groups.json, ASTRA-sim's --comm-group-configuration)", .complete = "file"},
};
static const mt_flag_table TABLE = MT_FLAG_TABLE("Options", FLAGS);

static void usage(FILE *out) {
    fprintf(out, "usage: mitosis chakra-check DIR|FILES... [--comm-groups FILE] [--json]\n"
                 "Reports per rank what a Chakra consumer (ASTRA-sim) will see in NAME.RANK.et files: nodes by type,\n"
                 "compute microseconds, collective sizes, communicators; refuses (exit 2) what ASTRA-sim would drop\n"
                 "silently: a pg_name that is not a decimal id, a communicator missing from comm_groups.json, a\n"
                 "collective type it cannot run.\n\n");
    mt_flags_help(out, &TABLE);
}

static mt_status take_path(void *ctx, const char *a, mt_error *err) {
    mt_run_config *c = &((ckc_cli *)ctx)->rc;
    if (c->n_paths >= MT_RUN_MAX_PATHS) return mt_fail(err, MT_EINVAL, "too many paths (give the directory)");
    c->paths[c->n_paths++] = a;
    return MT_OK;
}

int cmd_chakra_check(int argc, char **argv) {
    ckc_cli c;
    memset(&c, 0, sizeof c);
    mt_error err = {0};
    if (mt_run_config_init(&c.rc, &err) != MT_OK) return mt_cli_fail("chakra-check", &err);
    mt_flag_seen seen;
    mt_flag_bind b = {&TABLE, &c};
    mt_status rc = mt_flags_parse(argc, argv, 1, &b, 1, take_path, &c, "chakra-check", &seen, &err);
    if (rc == MT_OK && seen.help) return mt_run_config_free(&c.rc), usage(stdout), 0;
    if (rc == MT_OK && c.rc.n_paths == 0)
        rc = mt_fail(&err, MT_EINVAL, "give the directory of NAME.RANK.et files (see mitosis chakra-check --help)");
    if (rc != MT_OK) return mt_run_config_free(&c.rc), mt_cli_fail("chakra-check", &err);
    char gpath[4096];
    if (c.groups) snprintf(gpath, sizeof gpath, "%s", c.groups);
    else if (mt_is_dir(c.rc.paths[0])) snprintf(gpath, sizeof gpath, "%s/%s", c.rc.paths[0], MT_CKX_COMM_GROUPS);
    else {
        const char *sl = strrchr(c.rc.paths[0], '/');
        snprintf(gpath, sizeof gpath, "%.*s%s", sl ? (int)(sl - c.rc.paths[0] + 1) : 0, c.rc.paths[0], MT_CKX_COMM_GROUPS);
    }
    mt_asis_job job;
    memset(&job, 0, sizeof job);
    mt_ckc_report rep;
    rc = mt_run_asis_load(&c.rc, &job, &err);
    if (rc == MT_OK) rc = mt_ckc_check(job.g, job.n, gpath, &rep, &err);
    mt_asis_job_free(&job);
    mt_run_config_free(&c.rc);
    if (rc != MT_OK) return mt_cli_fail("chakra-check", &err);
    if (c.as_json) mt_cli_print_json(mt_ckc_json(&rep));
    else mt_ckc_print(stdout, &rep);
    mt_ckc_free(&rep);
    return 0;
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_chakra_check = {"chakra-check", cmd_chakra_check, "what ASTRA-sim will see in Chakra ET files "
                                        "(per rank), refusing what it would drop silently",
                                        "DIR [--comm-groups FILE] [--json]", usage, TABLES, MT_CMD_OWN};

/* cli/cmd_chakra_check.c — `mitosis chakra-check DIR`: what ASTRA-sim and other Chakra consumers
 * will see in a set of per-rank ET files (run/asis.h checks them); the flags, the usage and the calls. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "run/asis.h"
#include "run/show.h"

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
    mt_ckc_report rep;
    if (rc == MT_OK) rc = mt_run_chakra_check(&c.rc, c.groups, &rep, &err);
    mt_run_config_free(&c.rc);
    if (rc != MT_OK) return mt_cli_fail("chakra-check", &err);
    mt_show_ckc(stdout, &rep, c.as_json);
    mt_ckc_free(&rep);
    return 0;
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_chakra_check = {"chakra-check", cmd_chakra_check, "what ASTRA-sim will see in Chakra ET files "
                                        "(per rank), refusing what it would drop silently",
                                        "DIR [--comm-groups FILE] [--json]", usage, TABLES, MT_CMD_OWN};

/* cli/args.c — the error and warning lines shared by the subcommands (cli/commands.h). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "report/jsonw.h"

int mt_cli_fail(const char *cmd, const mt_error *e) {
    fprintf(stderr, "mitosis %s: %s\n", cmd, e->msg);
    return mt_exit_code(e->code);
}

void mt_cli_warn(const char *cmd, const char *msg) {
    if (msg && *msg) fprintf(stderr, "mitosis %s: warning: %s\n", cmd, msg);
}

void mt_cli_warn_trace(const char *cmd, const mt_trace *t) {
    char msg[512];
    if (t && mt_trace_warning(t, msg, sizeof msg)) mt_cli_warn(cmd, msg);
}

void mt_cli_print_json(json_t *j) {
    char *s = mt_jw_dumps(j);
    if (s) puts(s);
    free(s);
    json_decref(j);
}

/* cli/args.c — the error and warning lines shared by the subcommands (cli/commands.h). */
#include <stdio.h>

#include "cli/commands.h"

int mt_cli_fail(const char *cmd, const mt_error *e) {
    fprintf(stderr, "mitosis %s: %s\n", cmd, e->msg);
    return mt_exit_code(e->code);
}

void mt_cli_warn(const char *cmd, const char *msg) {
    if (msg && *msg) fprintf(stderr, "mitosis %s: warning: %s\n", cmd, msg);
}

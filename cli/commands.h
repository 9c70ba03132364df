/* cli/commands.h — the subcommands of the `mitosis` binary, one descriptor each.
 *
 * A command's `run` takes the arguments after the program name (argv[0] is the subcommand name)
 * and returns the process exit code: 0 success, 2 bad input or usage (util/err.h mt_exit_code),
 * 3 a stuck simulation; it prints one line "mitosis <cmd>: <message>" on stderr for an error.
 * Its flag tables (util/flags.h) are the single source of its --help, the man page and the bash
 * completion (cli/main.c generates the last two). cli/ holds the commands' own flag tables (their
 * output and printing flags), help text and calls; the run options are parsed by the tables of
 * run/flags.h through the one front door (run/job.h), as serve/ and lib/ parse them too.
 * cli/ is a client of run/ and util/ only (docs/layout.md; tests/integration/layering.sh checks
 * it): the work, the printing of answers (run/show.h) and the terminal's progress lines are run/'s;
 * the types a command's flags fill come with the run/ header that takes them.
 */
#ifndef MT_CLI_COMMANDS_H
#define MT_CLI_COMMANDS_H

#include <stdio.h>

#include "util/err.h"
#include "util/flags.h"

typedef struct mt_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;                 /* one line for `mitosis --help` */
    const char *synopsis;                /* what follows `mitosis NAME` */
    void (*usage)(FILE *out);            /* the whole --help text */
    const mt_flag_table *const *tables;  /* its own flags, NULL-terminated */
    int shared;                          /* the shared tables it also takes: MT_CMD_* */
} mt_command;

/* Shared flag tables a command takes besides its own: none, the network's
 * (run/flags.h mt_run_net_tables), or the run tables and the network's (run/flags.h). */
enum { MT_CMD_OWN = 0, MT_CMD_NET, MT_CMD_RUN };

extern const mt_command mt_cmd_inspect, mt_cmd_simulate, mt_cmd_compare, mt_cmd_topo, mt_cmd_collective,
    mt_cmd_hop, mt_cmd_perfmodel, mt_cmd_serve, mt_cmd_emulate, mt_cmd_cluster, mt_cmd_chakra_check;

int cmd_inspect(int argc, char **argv);
int cmd_topo(int argc, char **argv);
int cmd_collective(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_perfmodel(int argc, char **argv);
int cmd_hop(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_emulate(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_chakra_check(int argc, char **argv);

/* Prints "mitosis CMD: <message>" on stderr and returns the exit code for e->code. */
int mt_cli_fail(const char *cmd, const mt_error *e);
/* Prints "mitosis CMD: warning: MSG" on stderr when msg is not empty. */
void mt_cli_warn(const char *cmd, const char *msg);

#endif

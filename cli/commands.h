/* cli/commands.h — the subcommands of the `mitosis` binary.
 *
 * Each takes the arguments after its own name (argv[0] is the subcommand name) and returns the
 * process exit code: 0 success, 2 bad input or usage (see util/err.h mt_exit_code), 3 a stuck
 * simulation. Each prints one line "mitosis <cmd>: <message>" on stderr for an error.
 * cli/ is the only folder that parses command-line flags.
 */
#ifndef MT_CLI_COMMANDS_H
#define MT_CLI_COMMANDS_H

int cmd_inspect(int argc, char **argv);
int cmd_topo(int argc, char **argv);
int cmd_collective(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_perfmodel(int argc, char **argv);
int cmd_hop(int argc, char **argv);

struct trace;
/* `inspect --unknown-ops` (cli/cmd_perfmodel.c): ops with no FLOP formula; the JSON form adds
 * key "unknown_ops" to a jansson object. */
void perfmodel_print_unknown_ops(const struct trace *t);
void perfmodel_add_unknown_ops_json(const struct trace *t, void *json_object_ptr);

#endif

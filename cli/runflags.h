/* cli/runflags.h — the flag tables that fill a run configuration (run/config.h), shared by
 * `simulate` and `compare`: the plan, operator times, the host model, calibration, the trace
 * step, what-if scenarios; plus the network tables (netmodels/netcfg.h).
 * Each entry writes into mt_run_config by offset (util/flags.h); help, man page and completion
 * come from the same entries.
 */
#ifndef MT_CLI_RUNFLAGS_H
#define MT_CLI_RUNFLAGS_H

#include <stdio.h>

#include "run/config.h"
#include "util/flags.h"

extern const mt_flag_table MT_CLI_PLAN_FLAGS;
extern const mt_flag_table MT_CLI_OPTIME_FLAGS;
extern const mt_flag_table MT_CLI_HOST_FLAGS;
extern const mt_flag_table MT_CLI_TRACE_FLAGS;
extern const mt_flag_table MT_CLI_WHATIF_FLAGS;

/* The run tables above (without the network's), for help, man page and completion;
 * NULL-terminated. */
extern const mt_flag_table *const MT_CLI_RUN_TABLE_LIST[];

/* Parses the argv of simulate or compare into c (initialised by the caller with
 * mt_run_config_init): the run tables and the network's bound to c, the command's own table to
 * own_base; positional arguments are trace paths. Then refuses network flags that do not apply
 * (mt_netcfg_check). */
mt_status mt_cli_run_parse(int argc, char **argv, const char *cmd, mt_run_config *c, const mt_flag_table *own,
                           void *own_base, mt_flag_seen *seen, mt_error *err);

/* Prints the tables' help (network last, with the topology presets). */
void mt_cli_run_help(FILE *out, int whatif);

#endif

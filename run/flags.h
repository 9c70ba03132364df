/* run/flags.h — the flag tables that fill a run configuration (run/config.h), shared by
 * `simulate` and `compare`: the plan, operator times, the host model, calibration, the trace
 * step, what-if scenarios; plus the network tables (netmodels/netcfg.h).
 * Each entry writes into mt_run_config by offset (util/flags.h); help, man page and completion
 * come from the same entries.
 */
#ifndef MT_RUN_FLAGS_H
#define MT_RUN_FLAGS_H

#include <stdio.h>

#include "run/compare.h"
#include "netmodels/netcfg.h"
#include "run/config.h"
#include "run/simulate.h"
#include "util/flags.h"

extern const mt_flag_table MT_RUN_PLAN_FLAGS;
extern const mt_flag_table MT_RUN_OPTIME_FLAGS;
extern const mt_flag_table MT_RUN_HOST_FLAGS;
extern const mt_flag_table MT_RUN_TRACE_FLAGS;
extern const mt_flag_table MT_RUN_WHATIF_FLAGS;
/* compare's plan list, the variants --plans auto lists, --sweep: bound to an mt_compare_config. */
extern const mt_flag_table MT_RUN_COMPARE_FLAGS;

/* --dry-run (mt_run_config.dry_run): a command-line table, bound to the mt_run_config by the
 * commands that print an estimate (simulate, compare) as one of their own; not in the list below,
 * so the web API, which has no estimate to show, does not take it. */
extern const mt_flag_table MT_RUN_DRY_FLAGS;

/* The options of simulate's output files (--timeline-gpus, --timeline-window, --chakra-json,
 * --chakra-ranks, --chakra-comm-only, --kineto-ranks), bound to an mt_sim_outputs: the CLI's simulate
 * and libmitosis's "simulate" configurations (mitosis_result_write honours them for its output);
 * not in the list below (compare writes no files, the web API chooses its own). An option set
 * without its output is refused by mt_sim_outputs_check (run/simulate.h). */
extern const mt_flag_table MT_RUN_OUTOPT_FLAGS;

/* The run tables above (without the network's), for help, man page and completion;
 * NULL-terminated. */
extern const mt_flag_table *const MT_RUN_TABLE_LIST[];

enum { MT_RUN_OWN_MAX = 4 };

/* Parses the argv of simulate or compare (cmd names it in errors) into c (initialised by the
 * caller with mt_run_config_init): the run tables and the network's bound to c, the command's own
 * n_own (at most MT_RUN_OWN_MAX) bound tables too; positional arguments are trace paths. Then
 * refuses network flags that do not apply (mt_netcfg_check). */
mt_status mt_run_flags_parse(int argc, char **argv, const char *cmd, mt_run_config *c, const mt_flag_bind *own,
                            int n_own, mt_flag_seen *seen, mt_error *err);

/* The same without the check (libmitosis checks each option as it is set, the combinations when
 * the run starts: an option set before the one it depends on is not refused). */
mt_status mt_run_flags_parse_unchecked(int argc, char **argv, const char *cmd, mt_run_config *c,
                                      const mt_flag_bind *own, int n_own, mt_flag_seen *seen, mt_error *err);

/* Prints the tables' help (network last, with the topology presets). */
void mt_run_flags_help(FILE *out, int whatif);

/* The network options alone, for the commands that take only those besides their own (topo,
 * collective, hop, cluster): the configuration at its defaults, argv parsed against the command's
 * own table (bound to own_base; may be NULL) and the network tables (bound to c), positional
 * arguments to pos (NULL: refused), then the network checks; on --help, seen->help and no check
 * (netmodels/netcfg.h mt_netcfg_parse). The tables (at most MT_RUN_NET_TABLES) for --help, man
 * page and completion; their help text. */
enum { MT_RUN_NET_TABLES = MT_NETCFG_TABLES };
void mt_run_net_init(mt_netcfg *c);
mt_status mt_run_net_parse(mt_netcfg *c, int argc, char **argv, const mt_flag_table *own, void *own_base,
                           mt_flag_positional_fn pos, void *pos_ctx, const char *cmd, mt_flag_seen *seen,
                           mt_error *err);
int mt_run_net_tables(const mt_flag_table **out);
void mt_run_net_help(FILE *out);

#endif

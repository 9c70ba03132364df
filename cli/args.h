/* cli/args.h — the integer flag-value parser of the commands not on flag tables yet (topo,
 * collective, hop), and the error line (cli/commands.h). */
#ifndef MT_CLI_ARGS_H
#define MT_CLI_ARGS_H

#include <stdint.h>

#include "cli/commands.h"
#include "util/err.h"

/* Parses v (may be NULL: the flag had no value) as an integer in lo..hi into *out. Returns 1, or
 * 0 with a one-line MT_EINVAL message naming the flag and the range. */
int mt_cli_int(const char *flag, const char *v, long lo, long hi, int32_t *out, mt_error *err);

#endif

/* cli/args.h — flag-value parsers and the error line shared by the subcommands. */
#ifndef MT_CLI_ARGS_H
#define MT_CLI_ARGS_H

#include <stdint.h>

#include "util/err.h"

/* Parses v (may be NULL: the flag had no value) as an integer in lo..hi into *out. Returns 1, or
 * 0 with a one-line MT_EINVAL message naming the flag and the range. */
int mt_cli_int(const char *flag, const char *v, long lo, long hi, int32_t *out, mt_error *err);

/* Prints "mitosis CMD: <message>" on stderr and returns the exit code for e->code. */
int mt_cli_fail(const char *cmd, const mt_error *e);

#endif

/* cli/args.c — flag-value parsers and the error line shared by the subcommands. */
#include "cli/args.h"

#include <stdio.h>
#include <stdlib.h>

int mt_cli_int(const char *flag, const char *v, long lo, long hi, int32_t *out, mt_error *err) {
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || !*v || n < lo || n > hi) {
        mt_fail(err, MT_EINVAL, "%s needs an integer in %ld..%ld (got '%s')", flag, lo, hi, v ? v : "");
        return 0;
    }
    *out = (int32_t)n;
    return 1;
}

int mt_cli_fail(const char *cmd, const mt_error *e) {
    fprintf(stderr, "mitosis %s: %s\n", cmd, e->msg);
    return mt_exit_code(e->code);
}

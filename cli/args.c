/* cli/args.c — see args.h and commands.h (the error and warning lines). */
#include <stdio.h>

#include "cli/args.h"

#include <stdlib.h>

int mt_cli_fail(const char *cmd, const mt_error *e) {
    fprintf(stderr, "mitosis %s: %s\n", cmd, e->msg);
    return mt_exit_code(e->code);
}

void mt_cli_warn(const char *cmd, const char *msg) {
    if (msg && *msg) fprintf(stderr, "mitosis %s: warning: %s\n", cmd, msg);
}

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

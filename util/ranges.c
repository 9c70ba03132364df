/* util/ranges.c — see ranges.h. */
#include "util/ranges.h"

#include <errno.h>
#include <stdlib.h>

int mt_range_next(const char **p, long *lo, long *hi) {
    const char *s = *p;
    if (!*s) return 0;
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10), b = a;
    if (end == s || errno) return -1;
    if (*end == '-') {
        const char *q = end + 1;
        b = strtol(q, &end, 10);
        if (end == q || errno) return -1;
    }
    if (*end == ',' && end[1]) end++;
    else if (*end) return -1;
    *lo = a;
    *hi = b;
    *p = end;
    return 1;
}

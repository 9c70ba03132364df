/* util/err.c — see err.h. */
#include "util/err.h"

#include <stdio.h>
#include <string.h>

/* Control characters (a newline in a file name, a raw byte quoted from a damaged file) become
 * '?', so that a message stays one printable line. */
static void one_line(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

mt_status mt_fail(mt_error *err, mt_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        one_line(err->msg);
        err->code = code;
    }
    return code;
}

mt_status mt_error_prefix(mt_error *err, const char *fmt, ...) {
    if (!err) return MT_EINTERNAL;
    char head[MT_ERRMSG_MAX];
    char old[MT_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    size_t n = strlen(head);
    if (n > sizeof err->msg - 3) n = sizeof err->msg - 3;
    memcpy(err->msg, head, n);
    memcpy(err->msg + n, ": ", 2);
    size_t room = sizeof err->msg - n - 3;
    size_t m = strlen(old);
    if (m > room) m = room;
    memcpy(err->msg + n + 2, old, m);
    err->msg[n + 2 + m] = '\0';
    one_line(err->msg);
    return err->code;
}

const char *mt_status_name(mt_status code) {
    switch (code) {
    case MT_OK: return "ok";
    case MT_EIO: return "i/o error";
    case MT_EFORMAT: return "format error";
    case MT_EINVAL: return "invalid argument";
    case MT_ENOMEM: return "out of memory";
    case MT_ENOROUTE: return "no route";
    case MT_ESTUCK: return "simulation stuck";
    case MT_EINTERNAL: return "internal error";
    }
    return "unknown error";
}

int mt_exit_code(mt_status code) {
    switch (code) {
    case MT_OK: return 0;
    case MT_ESTUCK: return 3;
    case MT_EINTERNAL: return 70;
    default: return 2;
    }
}

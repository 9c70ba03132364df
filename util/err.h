/* util/err.h — error codes and the error struct every fallible mitosis function fills.
 *
 * Contract: a function that can fail returns mt_status (MT_OK == 0) and, on failure, writes a
 * one-line human message into the caller's mt_error that names the file (and JSON path or CSV
 * line) and what to do. The CLI prints "mitosis: <msg>" and exits with mt_exit_code(code).
 * Passing err == NULL is allowed: the message is dropped, the code still returned.
 */
#ifndef MT_UTIL_ERR_H
#define MT_UTIL_ERR_H

#include <stdarg.h>

typedef enum {
    MT_OK = 0,
    MT_EIO,      /* file missing or unreadable, gzip error */
    MT_EFORMAT,  /* malformed input: bad JSON/CSV, missing field, wrong type */
    MT_EINVAL,   /* bad argument or impossible plan/spec */
    MT_ENOMEM,   /* allocation failed */
    MT_ENOROUTE, /* topology has no route between two endpoints */
    MT_ESTUCK,   /* simulation ended with work pending */
    MT_EINTERNAL /* a bug: an invariant did not hold */
} mt_status;

#define MT_ERRMSG_MAX 1024

typedef struct mt_error {
    mt_status code;
    char msg[MT_ERRMSG_MAX];
} mt_error;

/* Sets err (when non-NULL) and returns code, so callers can `return mt_fail(err, ...)`. Control
 * characters in the result (from quoted file names or file content) become '?'. */
mt_status mt_fail(mt_error *err, mt_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the existing message: "prefix: old message". Returns err->code. */
mt_status mt_error_prefix(mt_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *mt_status_name(mt_status code);

/* Process exit code for a status: 0 for MT_OK, 2 for input/usage errors, 3 for stuck runs,
 * 70 for internal errors. */
int mt_exit_code(mt_status code);

/* Evaluates `expr` once; on failure returns its status from the enclosing function. */
#define MT_CHECK(expr)                                                                         \
    do {                                                                                       \
        mt_status mt_check_rc_ = (expr);                                                       \
        if (mt_check_rc_ != MT_OK) return mt_check_rc_;                                        \
    } while (0)

#endif

/* util/jstream.h — reading a JSON file as a stream of events (SAX), for inputs too large for a
 * document in memory (Kineto traces, Execution Traces of gigabytes).
 *
 * mt_jstream_file inflates the file in 1 MiB chunks (zlib's gzread: plain files pass through, a
 * gzip file is inflated whatever its name) and feeds them to yajl's callback parser; each value,
 * key, object and array start/end reaches the caller's mt_jsax handler in document order, with
 * strings decoded and NUL-terminated, and numbers typed as jansson types them (an integer when
 * the text has no '.', 'e' or 'E'). Nothing of the document is kept: memory is one chunk, the
 * current JSON path and the longest string seen. The same handler can be driven from a parsed
 * jansson document (mt_jstream_walk, the reference reader), so a consumer has one code path.
 *
 * Errors are one line naming the file, line and column, the byte offset and the JSON path where
 * the input stopped making sense: "k.json:7:12: invalid JSON (parse error: premature EOF) at
 * byte 1234, in traceEvents[3].args". Nesting deeper than MT_JSTREAM_MAX_DEPTH (jansson's own
 * limit) is refused, so a consumer may recurse over what it is given.
 *
 * Also: mt_jbuild, a handler that builds a small jansson value from events (a consumer hands it
 * the events of one subtree it wants whole: one ET node, deviceProperties).
 * Costs: O(file bytes) time; O(chunk + depth + longest string) memory.
 */
#ifndef MT_UTIL_JSTREAM_H
#define MT_UTIL_JSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/err.h"

#define MT_JSTREAM_MAX_DEPTH 2048

typedef enum { MT_JV_NULL = 0, MT_JV_FALSE, MT_JV_TRUE, MT_JV_INT, MT_JV_REAL, MT_JV_STRING } mt_jv_type;

/* One scalar. s is NUL-terminated (len bytes, may hold NULs) and valid only during the call. */
typedef struct mt_jv {
    mt_jv_type type;
    int64_t i;        /* MT_JV_INT */
    double d;         /* MT_JV_REAL, and MT_JV_INT as a double */
    const char *s;    /* MT_JV_STRING */
    size_t len;
} mt_jv;

/* The events of a document. Each returns 1 to go on, 0 to stop: the handler has then filled its
 * own mt_error, and the reader returns that error's code (mt_jstream_file's `err` is the one the
 * handler fills: pass the same). A NULL entry ignores that event. */
typedef struct mt_jsax {
    int (*value)(void *ctx, const mt_jv *v);
    int (*start_map)(void *ctx);
    int (*key)(void *ctx, const char *key, size_t len);
    int (*end_map)(void *ctx);
    int (*start_array)(void *ctx);
    int (*end_array)(void *ctx);
} mt_jsax;

/* Called after each chunk: bytes of the file read so far and its size (compressed bytes for a
 * gzip file); report/progress.h's mt_progress_update has this signature. */
typedef void (*mt_jstream_progress_fn)(void *ctx, int64_t done_bytes, int64_t total_bytes);

typedef struct mt_jstream_opts {
    mt_jstream_progress_fn on_progress;   /* NULL: none */
    void *progress_ctx;
    int dom;   /* 1: parse the whole file with jansson, then mt_jstream_walk it (the reference
                * reader: same events, document-sized memory) */
} mt_jstream_opts;

/* Streams `path` through `sax` (ctx passed to every call). opts may be NULL. On failure returns
 * MT_EIO (unreadable file, damaged gzip), MT_EFORMAT (invalid JSON: message as above), MT_ENOMEM,
 * or the code of the error the handler filled in err. */
mt_status mt_jstream_file(const char *path, const mt_jsax *sax, void *ctx, const mt_jstream_opts *opts,
                          mt_error *err);

/* Drives `sax` over a parsed document, in document order (object members in jansson's order).
 * Returns 0 when a handler stopped, else 1. O(values). */
int mt_jstream_walk(json_t *v, const mt_jsax *sax, void *ctx);

/* ---- building a jansson value from events ------------------------------------------------ */

typedef struct mt_jbuild {
    json_t **stack;           /* open containers, stack[0] outermost */
    char **keys;              /* pending key per open object: a buffer per depth, kept for reuse */
    size_t *key_cap;          /* bytes allocated in keys[d] */
    int64_t depth, cap;       /* stack, keys and key_cap have cap slots (kept across values) */
    json_t *done;             /* the finished value, once the outermost closes (or a scalar) */
    int failed;               /* out of memory */
} mt_jbuild;

/* b starts empty; feed it events with the functions below (the mt_jsax of a builder is
 * mt_jbuild_sax, ctx the builder) until mt_jbuild_done. */
void mt_jbuild_init(mt_jbuild *b);
extern const mt_jsax mt_jbuild_sax;
/* 1 when the first value fed has closed. */
static inline int mt_jbuild_finished(const mt_jbuild *b) { return b->done != NULL && b->depth == 0; }
/* The finished value (a new reference, the builder forgets it), NULL when unfinished or failed;
 * the builder is empty again (its buffers kept: building many small values allocates only the
 * values themselves). */
json_t *mt_jbuild_take(mt_jbuild *b);
/* Frees whatever the builder holds, its buffers too (after the last take). */
void mt_jbuild_free(mt_jbuild *b);

#endif

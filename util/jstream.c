/* util/jstream.c — see jstream.h. yajl 2 (libyajl-dev) parses; this file adds the chunked,
 * gzip-transparent input, jansson's number typing, the JSON path and the messages. */
#include "util/jstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#include "util/budget.h"
#include "util/fileio.h"
#include "util/vec.h"

#define CHUNK_BYTES (1 << 20)
#define KEY_MAX 40   /* characters of a key kept for the path in messages */

typedef struct seg {
    int is_array;
    int64_t index;          /* arrays: the current element, -1 before the first */
    char key[KEY_MAX + 1];  /* objects: the current member */
} seg;

typedef struct jstream {
    const char *path;
    const mt_jsax *sax;
    void *ctx;
    mt_error *err;
    yajl_handle h;
    seg *segs;
    int64_t depth, cap;
    char *scratch;          /* NUL-terminated copies of strings, keys and numbers */
    int64_t scratch_cap;
    int64_t chunk_start;    /* file offset (inflated bytes) of the chunk being parsed */
    const unsigned char *chunk;
    int64_t line, line_start; /* lines before chunk_start, offset of the current line's start */
    int stopped;            /* err holds the handler's (or a number's) error */
} jstream;

/* ---- where we are ----------------------------------------------------------------------- */

/* Line (1-based) and column of inflated offset `at` inside the current chunk. */
static void locate(const jstream *js, int64_t at, int64_t *line, int64_t *col) {
    int64_t l = js->line, ls = js->line_start;
    const unsigned char *p = js->chunk, *end = js->chunk + (at - js->chunk_start), *nl;
    while (p && p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
        l++;
        ls = js->chunk_start + (nl - js->chunk) + 1;
        p = nl + 1;
    }
    *line = l + 1;
    *col = at - ls + 1;
}

/* The JSON path of the current position, "traceEvents[12].args.Input Dims[0]", into buf. */
static const char *path_of(const jstream *js, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = '\0';
    for (int64_t d = 0; d < js->depth && n + 1 < len; d++) {
        const seg *s = &js->segs[d];
        int w = s->is_array ? snprintf(buf + n, len - n, "[%lld]", (long long)(s->index < 0 ? 0 : s->index))
                            : snprintf(buf + n, len - n, "%s%s", n ? "." : "", s->key);
        if (w < 0) break;
        n += (size_t)w;
        if (d == 15 && js->depth > 17) { /* deep documents: the first 16 levels and the last */
            d = js->depth - 2;
            n += (size_t)snprintf(buf + (n < len ? n : len - 1), n < len ? len - n : 1, "...");
        }
    }
    if (n == 0) snprintf(buf, len, "(top level)");
    return buf;
}

/* "path:LINE:COLUMN: <what> at byte N, in traceEvents[3].ts": where the parser stands, less
 * `back` bytes (the length of the token refused, when it is known). */
static int fail_back(jstream *js, size_t back, mt_status code, const char *what) {
    char where[256];
    int64_t at = js->chunk_start + (js->chunk ? (int64_t)yajl_get_bytes_consumed(js->h) : 0), line, col;
    if ((int64_t)back <= at - js->chunk_start) at -= (int64_t)back; /* a token cut by a chunk: its end */
    locate(js, at, &line, &col);
    mt_fail(js->err, code, "%s:%lld:%lld: %s at byte %lld, in %s", js->path, (long long)line, (long long)col, what,
            (long long)at, path_of(js, where, sizeof where));
    js->stopped = 1;
    return 0;
}

static int fail_here(jstream *js, mt_status code, const char *what) { return fail_back(js, 0, code, what); }

static const char *copy(jstream *js, const void *s, size_t len) {
    if (mt_vec_reserve(&js->scratch, &js->scratch_cap, (int64_t)len + 1)) return NULL;
    memcpy(js->scratch, s, len);
    js->scratch[len] = '\0';
    return js->scratch;
}

/* ---- yajl callbacks --------------------------------------------------------------------- */

static void element(jstream *js) {
    if (js->depth > 0 && js->segs[js->depth - 1].is_array) js->segs[js->depth - 1].index++;
}

static int handled(jstream *js, int ok) {
    if (!ok) js->stopped = 1;
    return ok;
}

static int scalar(jstream *js, const mt_jv *v) {
    return js->sax->value ? handled(js, js->sax->value(js->ctx, v)) : 1;
}

static int cb_null(void *c) { return element(c), scalar(c, &(mt_jv){.type = MT_JV_NULL}); }
static int cb_bool(void *c, int b) { return element(c), scalar(c, &(mt_jv){.type = b ? MT_JV_TRUE : MT_JV_FALSE}); }

static int cb_string(void *c, const unsigned char *s, size_t len) {
    jstream *js = c;
    element(js);
    const char *t = copy(js, s, len);
    if (!t) return fail_here(js, MT_ENOMEM, "out of memory");
    return scalar(js, &(mt_jv){.type = MT_JV_STRING, .s = t, .len = len});
}

/* A number typed as jansson types it: an integer unless the text has '.', 'e' or 'E'; an integer
 * beyond int64 or a real beyond double is refused, as jansson refuses it. */
static int cb_number(void *c, const char *s, size_t len) {
    jstream *js = c;
    element(js);
    const char *t = copy(js, s, len);
    if (!t) return fail_here(js, MT_ENOMEM, "out of memory");
    mt_jv v = {.type = MT_JV_INT};
    size_t q = t[0] == '-', k = q;
    int64_t x = 0;
    while (k < len && k - q < 18 && t[k] >= '0' && t[k] <= '9') x = x * 10 + (t[k++] - '0');
    if (k == len && k > q) { /* at most 18 digits: fits int64, no strtoll */
        v.i = q ? -x : x;
        v.d = (double)v.i;
        return scalar(js, &v);
    }
    errno = 0;
    if (strpbrk(t, ".eE")) {
        v.type = MT_JV_REAL;
        v.d = strtod(t, NULL);
        if (errno == ERANGE && v.d != 0) return fail_back(js, len, MT_EFORMAT, "invalid JSON: real number overflow");
    } else {
        v.i = strtoll(t, NULL, 10);
        if (errno == ERANGE)
            return fail_back(js, len, MT_EFORMAT, v.i < 0 ? "invalid JSON: too big negative integer"
                                                          : "invalid JSON: too big integer");
        v.d = (double)v.i;
    }
    return scalar(js, &v);
}

static int push(jstream *js, int is_array) {
    element(js);
    if (js->depth >= MT_JSTREAM_MAX_DEPTH)
        return fail_here(js, MT_EFORMAT, "invalid JSON: nesting deeper than 2048 levels");
    if (mt_vec_reserve(&js->segs, &js->cap, js->depth + 1)) return fail_here(js, MT_ENOMEM, "out of memory");
    seg *s = &js->segs[js->depth++];
    s->is_array = is_array;
    s->index = -1;
    s->key[0] = '\0';
    return 1;
}

static int cb_start_map(void *c) {
    jstream *js = c;
    if (!push(js, 0)) return 0;
    return js->sax->start_map ? handled(js, js->sax->start_map(js->ctx)) : 1;
}

static int cb_start_array(void *c) {
    jstream *js = c;
    if (!push(js, 1)) return 0;
    return js->sax->start_array ? handled(js, js->sax->start_array(js->ctx)) : 1;
}

static int cb_key(void *c, const unsigned char *k, size_t len) {
    jstream *js = c;
    const char *t = copy(js, k, len);
    if (!t) return fail_here(js, MT_ENOMEM, "out of memory");
    size_t kl = len < KEY_MAX ? len : KEY_MAX;
    memcpy(js->segs[js->depth - 1].key, t, kl);
    js->segs[js->depth - 1].key[kl] = '\0';
    return js->sax->key ? handled(js, js->sax->key(js->ctx, t, len)) : 1;
}

static int cb_end_map(void *c) {
    jstream *js = c;
    js->depth--;
    return js->sax->end_map ? handled(js, js->sax->end_map(js->ctx)) : 1;
}

static int cb_end_array(void *c) {
    jstream *js = c;
    js->depth--;
    return js->sax->end_array ? handled(js, js->sax->end_array(js->ctx)) : 1;
}

static const yajl_callbacks callbacks = {
    .yajl_null = cb_null, .yajl_boolean = cb_bool, .yajl_number = cb_number, .yajl_string = cb_string,
    .yajl_start_map = cb_start_map, .yajl_map_key = cb_key, .yajl_end_map = cb_end_map,
    .yajl_start_array = cb_start_array, .yajl_end_array = cb_end_array,
};

/* ---- the file --------------------------------------------------------------------------- */

/* After yajl_parse / yajl_complete_parse said st: MT_OK, or the error (handler's, or yajl's). */
static mt_status parse_status(jstream *js, yajl_status st, const unsigned char *buf, size_t len) {
    if (st == yajl_status_ok) return MT_OK;
    if (js->stopped) return js->err ? js->err->code : MT_EFORMAT;
    unsigned char *msg = yajl_get_error(js->h, 0, buf, len);
    char what[160];
    size_t n = snprintf(what, sizeof what, "invalid JSON (%s", msg ? (const char *)msg : "parse error");
    while (n > 0 && n < sizeof what && (what[n - 1] == '\n' || what[n - 1] == ' ' || what[n - 1] == '.')) what[--n] = 0;
    if (msg) yajl_free_error(js->h, msg);
    snprintf(what + strlen(what), sizeof what - strlen(what), ")");
    fail_here(js, MT_EFORMAT, what);
    return MT_EFORMAT;
}

/* Counts the chunk's lines into js once it is parsed. */
static void count_lines(jstream *js, const unsigned char *buf, size_t len) {
    const unsigned char *p = buf, *end = buf + len, *nl;
    while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
        js->line++;
        js->line_start = js->chunk_start + (nl - buf) + 1;
        p = nl + 1;
    }
    js->chunk_start += (int64_t)len;
}

static mt_status feed(jstream *js, gzFile g, int64_t total, const mt_jstream_opts *o, unsigned char *buf) {
    for (;;) {
        int n = gzread(g, buf, CHUNK_BYTES);
        int zerr = Z_OK;
        const char *zmsg = gzerror(g, &zerr);
        if (n < 0 || (zerr != Z_OK && zerr != Z_STREAM_END)) {
            size_t pl = strlen(js->path); /* zlib's message repeats the path */
            if (zmsg && !strncmp(zmsg, js->path, pl) && !strncmp(zmsg + pl, ": ", 2)) zmsg += pl + 2;
            if (zerr == Z_ERRNO)
                return mt_fail(js->err, MT_EIO, "%s: read error: %s", js->path, strerror(errno));
            return mt_fail(js->err, MT_EIO, "%s: %s gzip data after %lld inflated bytes: %s (re-copy the file)",
                           js->path, zerr == Z_BUF_ERROR ? "truncated" : "damaged", (long long)js->chunk_start,
                           zmsg && *zmsg ? zmsg : "corrupt stream");
        }
        if (n == 0) break;
        MT_CHECK(mt_budget_check_inflated((double)js->chunk_start + n, js->path, js->err)); /* a server's cap */
        js->chunk = buf;
        MT_CHECK(parse_status(js, yajl_parse(js->h, buf, (size_t)n), buf, (size_t)n));
        count_lines(js, buf, (size_t)n);
        if (o && o->on_progress) o->on_progress(o->progress_ctx, (int64_t)gzoffset(g), total);
    }
    js->chunk = NULL;
    return parse_status(js, yajl_complete_parse(js->h), NULL, 0);
}

static mt_status stream_file(jstream *js, const mt_jstream_opts *o) {
    struct stat st;
    if (stat(js->path, &st) != 0)
        return mt_fail(js->err, MT_EIO, "%s: cannot open: %s (check the path)", js->path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return mt_fail(js->err, MT_EIO, "%s: not a regular file", js->path);
    gzFile g = gzopen(js->path, "rb");
    if (!g) return mt_fail(js->err, MT_EIO, "%s: cannot open: %s (check the path)", js->path, strerror(errno));
    gzbuffer(g, 1 << 17);
    unsigned char *buf = malloc(CHUNK_BYTES);
    js->h = buf ? yajl_alloc(&callbacks, NULL, js) : NULL;
    mt_status rc = js->h ? feed(js, g, (int64_t)st.st_size, o, buf)
                         : mt_fail(js->err, MT_ENOMEM, "%s: out of memory reading JSON", js->path);
    if (js->h) yajl_free(js->h);
    free(buf);
    gzclose(g);
    return rc;
}

mt_status mt_jstream_file(const char *path, const mt_jsax *sax, void *ctx, const mt_jstream_opts *opts,
                          mt_error *err) {
    if (opts && opts->dom) {
        json_t *root = NULL;
        MT_CHECK(mt_json_load(path, &root, err));
        int ok = mt_jstream_walk(root, sax, ctx);
        json_decref(root);
        return ok ? MT_OK : err ? err->code : MT_EFORMAT;
    }
    jstream js = {.path = path, .sax = sax, .ctx = ctx, .err = err};
    mt_status rc = stream_file(&js, opts);
    free(js.segs);
    free(js.scratch);
    return rc;
}

/* ---- walking a document ----------------------------------------------------------------- */

int mt_jstream_walk(json_t *v, const mt_jsax *sax, void *ctx) {
    mt_jv s = {0};
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (sax->start_map && !sax->start_map(ctx)) return 0;
        const char *k;
        json_t *m;
        json_object_foreach(v, k, m) {
            if (sax->key && !sax->key(ctx, k, strlen(k))) return 0;
            if (!mt_jstream_walk(m, sax, ctx)) return 0;
        }
        return sax->end_map ? sax->end_map(ctx) : 1;
    }
    case JSON_ARRAY: {
        if (sax->start_array && !sax->start_array(ctx)) return 0;
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m) if (!mt_jstream_walk(m, sax, ctx)) return 0;
        return sax->end_array ? sax->end_array(ctx) : 1;
    }
    case JSON_STRING: s = (mt_jv){.type = MT_JV_STRING, .s = json_string_value(v), .len = json_string_length(v)}; break;
    case JSON_INTEGER:
        s = (mt_jv){.type = MT_JV_INT, .i = (int64_t)json_integer_value(v), .d = (double)json_integer_value(v)};
        break;
    case JSON_REAL: s = (mt_jv){.type = MT_JV_REAL, .d = json_real_value(v)}; break;
    case JSON_TRUE: s.type = MT_JV_TRUE; break;
    case JSON_FALSE: s.type = MT_JV_FALSE; break;
    case JSON_NULL: s.type = MT_JV_NULL; break;
    }
    return sax->value ? sax->value(ctx, &s) : 1;
}

/* ---- building a jansson value ----------------------------------------------------------- */

void mt_jbuild_init(mt_jbuild *b) { memset(b, 0, sizeof *b); }

/* Drops the value held (open or finished): the builder is empty, its buffers kept. */
static void jb_reset(mt_jbuild *b) {
    if (b->done) json_decref(b->done);
    b->done = NULL;
    b->depth = 0;
    b->failed = 0;
}

void mt_jbuild_free(mt_jbuild *b) {
    jb_reset(b);
    for (int64_t d = 0; d < b->cap; d++) free(b->keys[d]);
    free(b->stack);
    free(b->keys);
    free(b->key_cap);
    memset(b, 0, sizeof *b);
}

json_t *mt_jbuild_take(mt_jbuild *b) {
    json_t *v = b->failed || b->depth ? NULL : b->done;
    if (v) b->done = NULL;
    jb_reset(b);
    return v;
}

/* Adds v (a new reference) to the open container, or makes it the value. */
static int add(mt_jbuild *b, json_t *v) {
    if (!v) return b->failed = 1, 0;
    if (b->depth == 0) {
        if (b->done) json_decref(b->done);
        b->done = v;
        return 1;
    }
    json_t *top = b->stack[b->depth - 1];
    char *key = b->keys[b->depth - 1];
    int rc = json_is_array(top) ? json_array_append_new(top, v) : json_object_set_new(top, key ? key : "", v);
    if (key) key[0] = '\0'; /* consumed */
    return rc == 0 ? 1 : (b->failed = 1, 0);
}

static int jb_value(void *c, const mt_jv *v) {
    switch (v->type) {
    case MT_JV_NULL: return add(c, json_null());
    case MT_JV_FALSE: return add(c, json_false());
    case MT_JV_TRUE: return add(c, json_true());
    case MT_JV_INT: return add(c, json_integer(v->i));
    case MT_JV_REAL: return add(c, json_real(v->d));
    case MT_JV_STRING: return add(c, json_stringn(v->s, v->len));
    }
    return 0;
}

/* Room for one more open container: the stack, key buffers and their sizes grow together. */
static int jb_reserve(mt_jbuild *b) {
    if (b->depth < b->cap) return 1;
    int64_t cap = b->cap ? b->cap * 2 : 16;
    json_t **st = realloc(b->stack, (size_t)cap * sizeof *st);
    if (st) b->stack = st;
    char **k = st ? realloc(b->keys, (size_t)cap * sizeof *k) : NULL;
    if (k) b->keys = k;
    size_t *kc = k ? realloc(b->key_cap, (size_t)cap * sizeof *kc) : NULL;
    if (!kc) return 0;
    b->key_cap = kc;
    for (int64_t d = b->cap; d < cap; d++) b->keys[d] = NULL, b->key_cap[d] = 0;
    b->cap = cap;
    return 1;
}

static int open_container(mt_jbuild *b, json_t *v) {
    if (!v || !jb_reserve(b)) return json_decref(v), b->failed = 1, 0;
    json_incref(v);
    if (!add(b, v)) return json_decref(v), 0;
    if (b->keys[b->depth]) b->keys[b->depth][0] = '\0';
    b->stack[b->depth++] = v;
    json_decref(v); /* the parent (or done) holds it */
    return 1;
}

static int jb_start_map(void *c) { return open_container(c, json_object()); }
static int jb_start_array(void *c) { return open_container(c, json_array()); }

/* The key, up to its first NUL (jansson's keys are C strings), in this depth's buffer. */
static int jb_key(void *c, const char *k, size_t len) {
    mt_jbuild *b = c;
    int64_t d = b->depth - 1;
    const char *nul = memchr(k, '\0', len);
    if (nul) len = (size_t)(nul - k);
    if (len + 1 > b->key_cap[d]) {
        size_t cap = len + 1 < 32 ? 32 : 2 * (len + 1);
        char *nk = realloc(b->keys[d], cap);
        if (!nk) return b->failed = 1, 0;
        b->keys[d] = nk;
        b->key_cap[d] = cap;
    }
    memcpy(b->keys[d], k, len);
    b->keys[d][len] = '\0';
    return 1;
}

static int jb_end(void *c) {
    mt_jbuild *b = c;
    b->depth--;
    return 1;
}

const mt_jsax mt_jbuild_sax = {jb_value, jb_start_map, jb_key, jb_end, jb_start_array, jb_end};

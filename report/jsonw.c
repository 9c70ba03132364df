/* report/jsonw.c — see jsonw.h. */
#include "report/jsonw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { JW_FLAGS = JSON_INDENT(2) | JSON_REAL_PRECISION(10) | JSON_ENCODE_ANY };

void mt_jw_init(mt_jw *w, FILE *out) {
    w->out = out;
    w->depth = 0;
    w->after_key = 0;
    w->failed = 0;
    w->used = 0;
    memset(w->cache, 0, sizeof w->cache);
}

static void flush(mt_jw *w) {
    if (w->used && fwrite(w->buf, 1, w->used, w->out) != w->used) w->failed = 1;
    w->used = 0;
}

static void put(mt_jw *w, const char *s, size_t n) {
    if (w->used + n > sizeof w->buf) {
        flush(w);
        if (n > sizeof w->buf) {
            if (fwrite(s, 1, n, w->out) != n) w->failed = 1;
            return;
        }
    }
    memcpy(w->buf + w->used, s, n);
    w->used += n;
}

static void indent(mt_jw *w, int depth) {
    static const char spaces[] = "                                                                ";
    size_t n = 2 * (size_t)depth;
    while (n > 0) {
        size_t k = n < sizeof spaces - 1 ? n : sizeof spaces - 1;
        put(w, spaces, k);
        n -= k;
    }
}

/* What comes before a value or a key: nothing right after a key, else the separator from the
 * previous element and the line's indent. */
static void begin_value(mt_jw *w) {
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->depth == 0) return;
    if (w->has_item[w->depth - 1] & 1) put(w, ",\n", 2);
    else put(w, "\n", 1);
    indent(w, w->depth);
    w->has_item[w->depth - 1] |= 1;
}

/* has_item keeps bit 0 "has an element" and bit 1 "is an array". */
static void open_container(mt_jw *w, int is_array) {
    begin_value(w);
    put(w, is_array ? "[" : "{", 1);
    if (w->depth >= MT_JW_DEPTH_MAX) {
        w->failed = 1;
        return;
    }
    w->has_item[w->depth++] = (uint8_t)(is_array << 1);
}

void mt_jw_object(mt_jw *w) { open_container(w, 0); }
void mt_jw_array(mt_jw *w) { open_container(w, 1); }

void mt_jw_end(mt_jw *w) {
    if (w->depth == 0) {
        w->failed = 1;
        return;
    }
    uint8_t st = w->has_item[--w->depth];
    if (st & 1) {
        put(w, "\n", 1);
        indent(w, w->depth);
    }
    put(w, st & 2 ? "]" : "}", 1);
}

static void string_raw(mt_jw *w, const char *s) {
    put(w, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c != '"' && c != '\\' && c >= 0x20) continue;
        put(w, run, (size_t)(s - run));
        run = s + 1;
        char esc[8];
        switch (c) {
        case '"': put(w, "\\\"", 2); break;
        case '\\': put(w, "\\\\", 2); break;
        case '\b': put(w, "\\b", 2); break;
        case '\f': put(w, "\\f", 2); break;
        case '\n': put(w, "\\n", 2); break;
        case '\r': put(w, "\\r", 2); break;
        case '\t': put(w, "\\t", 2); break;
        default:
            snprintf(esc, sizeof esc, "\\u%04X", (unsigned)c);
            put(w, esc, 6);
        }
    }
    put(w, run, (size_t)(s - run));
    put(w, "\"", 1);
}

void mt_jw_key(mt_jw *w, const char *key) {
    begin_value(w);
    string_raw(w, key);
    put(w, ": ", 2);
    w->after_key = 1;
}

void mt_jw_string(mt_jw *w, const char *s) {
    begin_value(w);
    string_raw(w, s ? s : "");
}

void mt_jw_int(mt_jw *w, long long v) {
    char b[32];
    begin_value(w);
    int n = snprintf(b, sizeof b, "%lld", v);
    put(w, b, (size_t)n);
}

/* jansson's real format: "%.10g", ".0" when that reads as an integer, no '+' or leading zeros in
 * the exponent; a whole number from 1e10 to 2^53 (a byte count: exactly a double) in full, "%.0f.0",
 * which "%.10g" would round (16,060,522,496 B is not 1.60605225e10). */
static int real_text(double v, char *b, size_t len) {
    if (v == 0) return snprintf(b, len, signbit(v) ? "-0.0" : "0.0");
    if (fabs(v) >= 1e10 && fabs(v) < 9007199254740992.0 && v == nearbyint(v)) {
        int n = snprintf(b, len, "%.0f.0", v);
        return n < 0 || (size_t)n >= len ? -1 : n;
    }
    int n = snprintf(b, len, "%.10g", v);
    if (n < 0 || (size_t)n + 3 >= len) return -1;
    char *e = strchr(b, 'e');
    if (!e && !strchr(b, '.')) {
        memcpy(b + n, ".0", 3);
        return n + 2;
    }
    if (!e) return n;
    char *start = e + 1, *end = start + 1;
    if (*start == '-') start++;
    while (*end == '0') end++;
    if (end != start) {
        memmove(start, end, (size_t)(b + n - end) + 1);
        n -= (int)(end - start);
    }
    return n;
}

void mt_jw_real(mt_jw *w, double v) {
    begin_value(w);
    if (!isfinite(v)) {
        put(w, "null", 4);
        return;
    }
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t h = bits * UINT64_C(0x9E3779B97F4A7C15);
    mt_jw_real_text *c = &w->cache[h >> (64 - MT_JW_CACHE_BITS)];
    if (c->len == 0 || c->bits != bits) {
        int n = real_text(v, c->text, sizeof c->text);
        if (n <= 0) {
            c->len = 0;
            put(w, "null", 4);
            return;
        }
        c->bits = bits;
        c->len = (uint8_t)n;
    }
    put(w, c->text, c->len);
}

void mt_jw_key_real(mt_jw *w, const char *key, double v) {
    mt_jw_key(w, key);
    mt_jw_real(w, v);
}

void mt_jw_key_int(mt_jw *w, const char *key, long long v) {
    mt_jw_key(w, key);
    mt_jw_int(w, v);
}

/* json_dump_callback's sink: jansson's text at depth 0, each line indented by the writer's depth
 * (strings are escaped, so every '\n' in the text is a line break of the layout). */
static int dump_sink(const char *buf, size_t size, void *data) {
    mt_jw *w = data;
    const char *run = buf, *end = buf + size;
    for (const char *p = buf; p < end; p++) {
        if (*p != '\n') continue;
        put(w, run, (size_t)(p + 1 - run));
        indent(w, w->depth);
        run = p + 1;
    }
    put(w, run, (size_t)(end - run));
    return w->failed ? -1 : 0;
}

/* The containers nested in v, v's own counted (a scalar: 0); stops counting past `cap`. */
static int nesting(const json_t *v, int cap) {
    int deepest = 0;
    const char *k;
    json_t *e;
    size_t i;
    if (json_is_object(v))
        json_object_foreach((json_t *)v, k, e) {
            int d = cap > 0 ? nesting(e, cap - 1) : 0;
            if (d > deepest) deepest = d;
        }
    else if (json_is_array(v))
        json_array_foreach(v, i, e) {
            int d = cap > 0 ? nesting(e, cap - 1) : 0;
            if (d > deepest) deepest = d;
        }
    else
        return 0;
    return 1 + deepest;
}

/* v written by the writer's own rules (real_text for reals), members in jansson's order. */
static void walk(mt_jw *w, const json_t *v) {
    const char *k;
    json_t *e;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        mt_jw_object(w);
        json_object_foreach((json_t *)v, k, e) {
            mt_jw_key(w, k);
            walk(w, e);
        }
        mt_jw_end(w);
        break;
    case JSON_ARRAY:
        mt_jw_array(w);
        json_array_foreach(v, i, e) walk(w, e);
        mt_jw_end(w);
        break;
    case JSON_STRING: mt_jw_string(w, json_string_value(v)); break;
    case JSON_INTEGER: mt_jw_int(w, (long long)json_integer_value(v)); break;
    case JSON_REAL: mt_jw_real(w, json_real_value(v)); break;
    default: {
        const char *lit = json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null";
        begin_value(w);
        put(w, lit, strlen(lit));
    }
    }
}

void mt_jw_value(mt_jw *w, const json_t *v) {
    if (!v) {
        begin_value(w);
        put(w, "null", 4);
        return;
    }
    if (w->depth + nesting(v, MT_JW_DEPTH_MAX) <= MT_JW_DEPTH_MAX) {
        walk(w, v);
        return;
    }
    begin_value(w); /* deeper than the writer nests: jansson's text (reals "%.10g" throughout) */
    if (json_dump_callback(v, dump_sink, w, JW_FLAGS) != 0) w->failed = 1;
}

int mt_jw_dumpf(const json_t *v, FILE *out) {
    mt_jw *w = malloc(sizeof *w);
    if (!w) return -1;
    mt_jw_init(w, out);
    mt_jw_value(w, v);
    int rc = mt_jw_finish(w);
    free(w);
    return rc;
}

int mt_jw_dump_file(const json_t *v, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int rc = mt_jw_dumpf(v, f);
    return fclose(f) != 0 || rc != 0 ? -1 : 0;
}

char *mt_jw_dumps(const json_t *v) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int rc = mt_jw_dumpf(v, f);
    if (fclose(f) != 0 || rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int mt_jw_finish(mt_jw *w) {
    flush(w);
    return w->failed || ferror(w->out) ? -1 : 0;
}

/* tracer/sniff.c — see sniff.h. */
#include "tracer/sniff.h"

#include <string.h>

const char *mt_sniff_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

mt_sniff mt_sniff_literal(const char *p, const char *end, const char *literal) {
    size_t n = strlen(literal), have = (size_t)(end - p);
    if (strncmp(p, literal, have < n ? have : n) != 0) return MT_SNIFF_NO;
    return have < n ? MT_SNIFF_MORE : MT_SNIFF_YES;
}

/* p at '"': the byte after the closing quote, NULL when the bytes end first. */
static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') p++;
        else if (*p == '"') return p + 1;
    }
    return NULL;
}

/* The byte after the value starting at p (a scalar ends before ',', '}', ']' or whitespace),
 * NULL when the bytes end first. */
static const char *skip_value(const char *p, const char *end) {
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            if (!(p = skip_string(p, end))) return NULL;
            if (depth == 0) return p;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) return p;
            if (--depth == 0) return p + 1;
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
            return p;
        }
        p++;
    }
    return NULL;
}

mt_sniff mt_sniff_json_member(const char *p, const char *end, const char *key, const char **value) {
    size_t klen = strlen(key);
    p = mt_sniff_ws(p, end);
    if (p == end) return MT_SNIFF_MORE;
    if (*p++ != '{') return MT_SNIFF_NO;
    for (;;) {
        p = mt_sniff_ws(p, end);
        if (p == end) return MT_SNIFF_MORE;
        if (*p != '"') return MT_SNIFF_NO; /* '}' (no such member) or malformed */
        const char *name = p + 1, *q = skip_string(p, end);
        if (!q) return MT_SNIFF_MORE;
        int match = (size_t)(q - 1 - name) == klen && !memcmp(name, key, klen);
        p = mt_sniff_ws(q, end);
        if (p == end) return MT_SNIFF_MORE;
        if (*p != ':') return MT_SNIFF_NO;
        p = mt_sniff_ws(p + 1, end);
        if (p == end) return MT_SNIFF_MORE;
        if (match) {
            *value = p;
            return MT_SNIFF_YES;
        }
        if (!(p = skip_value(p, end))) return MT_SNIFF_MORE;
        p = mt_sniff_ws(p, end);
        if (p == end) return MT_SNIFF_MORE;
        if (*p++ != ',') return MT_SNIFF_NO;
    }
}

mt_sniff mt_sniff_json_both(const char *p, const char *end, const char *key1, const char *key2) {
    const char *v;
    mt_sniff a = mt_sniff_json_member(p, end, key1, &v), b = mt_sniff_json_member(p, end, key2, &v);
    if (a == MT_SNIFF_NO || b == MT_SNIFF_NO) return MT_SNIFF_NO;
    return a == MT_SNIFF_YES && b == MT_SNIFF_YES ? MT_SNIFF_YES : MT_SNIFF_MORE;
}

/* report/jsonw.h — a streaming JSON writer whose bytes are exactly what jansson's
 * json_dumps(v, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) prints for the same value (but for whole
 * numbers of 11 to 16 digits, written in full), so that a
 * report can write its large arrays (one row per GPU) straight to a FILE while the small parts
 * stay jansson trees (mt_jw_value splices a tree in at the current depth).
 *
 * Invariant: the writer holds only the nesting depth, per open container whether it has an
 * element yet, a 64 KiB output buffer and a few formatted reals; memory is O(1) whatever is
 * written. Nothing reaches `out` before the buffer fills or mt_jw_finish. Format (jansson 2.14's): "{" newline,
 * each member on its own line indented 2 more spaces as "key": value, members separated by ","
 * newline, then newline and "}" at the container's indent; empty containers "{}" and "[]";
 * reals with "%.10g", ".0" added when that has neither '.' nor 'e', exponents without '+' or
 * leading zeros, except a whole number from 1e10 up to 2^53, written in full ("16060522496.0", where
 * jansson's 10 digits would print 1.60605225e10: byte counts stay exact); integers "%lld"; strings
 * escaped as jansson does (", \, control characters).
 * Non-finite reals, which jansson refuses (json_real returns NULL), are written as null.
 * Costs: O(bytes written); one snprintf per number not among the last few formatted.
 */
#ifndef MT_REPORT_JSONW_H
#define MT_REPORT_JSONW_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define MT_JW_DEPTH_MAX 32
#define MT_JW_CACHE_BITS 6
#define MT_JW_BUF 65536
#define MT_JW_CACHE (1 << MT_JW_CACHE_BITS)

typedef struct mt_jw_real_text {
    uint64_t bits;
    char text[27];
    uint8_t len; /* 0: empty */
} mt_jw_real_text;

typedef struct mt_jw {
    FILE *out;
    int depth;                         /* containers open */
    uint8_t has_item[MT_JW_DEPTH_MAX]; /* per open container: an element was written */
    int after_key;                     /* a key was written; its value comes next on the same line */
    int failed;                        /* a write failed (ferror) or nesting went past MT_JW_DEPTH_MAX */
    char buf[MT_JW_BUF];               /* bytes not yet given to `out` */
    size_t used;
    mt_jw_real_text cache[MT_JW_CACHE]; /* reals formatted lately, by their bits (direct-mapped):
                                        * rows of alike GPUs repeat their numbers; formatting is the cost */
} mt_jw;

void mt_jw_init(mt_jw *w, FILE *out);

void mt_jw_object(mt_jw *w); /* "{" */
void mt_jw_array(mt_jw *w);  /* "[" */
void mt_jw_end(mt_jw *w);    /* closes the innermost container */
/* The key of the next member of the open object. */
void mt_jw_key(mt_jw *w, const char *key);

void mt_jw_real(mt_jw *w, double v);
void mt_jw_int(mt_jw *w, long long v);
void mt_jw_string(mt_jw *w, const char *s);
/* A member of the open object: its key, then its value. */
void mt_jw_key_real(mt_jw *w, const char *key, double v);
void mt_jw_key_int(mt_jw *w, const char *key, long long v);
/* A jansson value (any kind) written at the current depth, exactly as json_dumps would nest it
 * (NULL: null), its reals by this writer's format. The value is only read. */
void mt_jw_value(mt_jw *w, const json_t *v);

/* v as a whole document in this writer's format (no newline after it), in place of json_dumpf /
 * json_dump_file / json_dumps(v, JSON_INDENT(2) | JSON_REAL_PRECISION(10)): 0 / the text (caller
 * frees), or -1 / NULL when a write or an allocation failed. */
int mt_jw_dumpf(const json_t *v, FILE *out);
int mt_jw_dump_file(const json_t *v, const char *path);
char *mt_jw_dumps(const json_t *v);

/* Gives out what is buffered; 0 when every write succeeded, -1 when one failed (or nesting went
 * past MT_JW_DEPTH_MAX). Call once at the end. */
int mt_jw_finish(mt_jw *w);

#endif

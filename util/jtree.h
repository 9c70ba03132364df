/* util/jtree.h — small JSON values built from a stream's events into one reused arena, for a
 * reader that takes a large document one subtree at a time (an Execution Trace node).
 *
 * mt_jtb is an mt_jsax handler (mt_jtb_sax, ctx the builder) that builds the first value it is fed
 * as an mt_jt tree. Every value, key, string and child list lives in the builder's arena: a value
 * costs no malloc, and mt_jtb_reset makes the arena's memory the next value's (a reader of 10^6
 * nodes allocates a few arena blocks, not tens of millions of jansson values). A tree is valid
 * until that reset; under AddressSanitizer the reset poisons the memory, so a read of a dropped
 * tree is reported.
 *
 * The accessors read as jansson's do: a missing member, an index out of range or a value of
 * another type gives NULL / 0; an object's member is the last one of that key (jansson's set
 * replaces); a key is cut at its first NUL (jansson's keys are C strings); numbers are typed as
 * mt_jstream types them (an integer when the text has no '.', 'e' or 'E').
 * Costs: building O(values + bytes); mt_jt_at O(1); mt_jt_get O(members).
 */
#ifndef MT_UTIL_JTREE_H
#define MT_UTIL_JTREE_H

#include <stddef.h>
#include <stdint.h>

#include "util/jstream.h"

typedef enum { MT_JT_NULL = 0, MT_JT_FALSE, MT_JT_TRUE, MT_JT_INT, MT_JT_REAL, MT_JT_STRING, MT_JT_ARRAY, MT_JT_OBJECT } mt_jt_type;

typedef struct mt_jt {
    mt_jt_type type;
    uint32_t n;               /* children of an array or object */
    const char *key;          /* the member's key when the parent is an object, else NULL */
    int64_t i;                /* MT_JT_INT */
    double d;                 /* MT_JT_REAL */
    const char *s;            /* MT_JT_STRING: NUL-terminated, len bytes (may hold NULs) */
    size_t len;
    struct mt_jt **kids;      /* n children in document order (set when the container closes) */
    struct mt_jt *first, *last, *next; /* the children while the container is open */
} mt_jt;

static inline int mt_jt_is_int(const mt_jt *v) { return v && v->type == MT_JT_INT; }
static inline int mt_jt_is_string(const mt_jt *v) { return v && v->type == MT_JT_STRING; }
static inline int mt_jt_is_array(const mt_jt *v) { return v && v->type == MT_JT_ARRAY; }
static inline int mt_jt_is_object(const mt_jt *v) { return v && v->type == MT_JT_OBJECT; }
/* The integer (0 unless an integer), the string (NULL unless a string). */
static inline int64_t mt_jt_int(const mt_jt *v) { return mt_jt_is_int(v) ? v->i : 0; }
static inline const char *mt_jt_str(const mt_jt *v) { return mt_jt_is_string(v) ? v->s : NULL; }
/* An array's length (0 unless an array) and its element i (NULL out of range). */
static inline size_t mt_jt_size(const mt_jt *v) { return mt_jt_is_array(v) ? v->n : 0; }
static inline const mt_jt *mt_jt_at(const mt_jt *v, size_t i) { return i < mt_jt_size(v) ? v->kids[i] : NULL; }
/* An object's member `key` (the last of that key), NULL when absent or v is not an object. */
const mt_jt *mt_jt_get(const mt_jt *v, const char *key);

typedef struct mt_jt_block mt_jt_block;

typedef struct mt_jtb {
    mt_jt_block *blocks;      /* the arena: blocks[0] is being filled, the rest are full */
    mt_jt **stack;            /* open containers, stack[0] outermost */
    int64_t depth, cap;
    const char *key;          /* the pending key of the innermost open object */
    mt_jt *done;              /* the finished value (a scalar, or the outermost once closed) */
    int failed;               /* out of memory */
} mt_jtb;

extern const mt_jsax mt_jtb_sax;
void mt_jtb_init(mt_jtb *b);
/* 1 when the first value fed has closed (mt_jtb_value then gives it). */
static inline int mt_jtb_finished(const mt_jtb *b) { return b->done != NULL && b->depth == 0; }
/* The finished value, NULL when unfinished or out of memory; valid until mt_jtb_reset. */
const mt_jt *mt_jtb_value(const mt_jtb *b);
/* Drops the value held: the builder is empty, its arena kept for the next value. */
void mt_jtb_reset(mt_jtb *b);
/* The arena's blocks now (1 after a reset that follows any value). */
int mt_jtb_blocks(const mt_jtb *b);
/* Frees the arena and the stack. */
void mt_jtb_free(mt_jtb *b);

#endif

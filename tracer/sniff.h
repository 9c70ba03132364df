/* tracer/sniff.h — recognising a file from its first bytes, without parsing it all.
 *
 * A reader's sniffer sees a prefix of the file's inflated content and answers YES (a file of
 * mine), NO (not mine), or MORE (these bytes do not tell: show me more). Given the whole file,
 * a sniffer's MORE counts as NO. The helpers below scan JSON and text prefixes: a JSON scan
 * walks the top-level members of an object, skipping values by bracket depth and string
 * escapes, so it never builds a document and stops as soon as it can answer.
 * Invariant: every helper reads only [p, end) and never past a NUL it was not given.
 * Cost: O(bytes scanned) <= O(prefix length).
 */
#ifndef MT_TRACER_SNIFF_H
#define MT_TRACER_SNIFF_H

#include <stddef.h>

typedef enum { MT_SNIFF_NO = 0, MT_SNIFF_YES, MT_SNIFF_MORE } mt_sniff;

/* First byte at or after p that is not JSON whitespace (space, tab, CR, LF), or end. */
const char *mt_sniff_ws(const char *p, const char *end);
/* Whether [p, end) starts with `literal`: YES, NO, or MORE when it is a shorter prefix of it. */
mt_sniff mt_sniff_literal(const char *p, const char *end, const char *literal);
/* In the JSON object whose '{' is at p, the top-level member `key`: YES with *value at the first
 * byte of its value, NO when the object ends without it (or p holds no object, or the JSON is
 * malformed before it), MORE when the bytes end first. */
mt_sniff mt_sniff_json_member(const char *p, const char *end, const char *key, const char **value);
/* Both members present (YES), either absent (NO), else MORE. */
mt_sniff mt_sniff_json_both(const char *p, const char *end, const char *key1, const char *key2);

#endif

/* util/ranges.h — a list of integers and ranges as users write it: "0-7,12,100-103" (GPU
 * selections, placements). One reader, so every list flag accepts and refuses the same text.
 * Invariant: on success the cursor has moved past the item and its comma; a list never ends in a
 * comma, and an empty list is not a list.
 */
#ifndef MT_UTIL_RANGES_H
#define MT_UTIL_RANGES_H

/* Reads the next item at *p ("a" or "a-b", decimal) into [*lo, *hi] and moves *p past it and a
 * following comma. Returns 1 for an item, 0 at the end of the text, -1 when the text there is not
 * an item (then *p is unchanged). The caller checks the bounds (lo <= hi, inside its range). */
int mt_range_next(const char **p, long *lo, long *hi);

#endif

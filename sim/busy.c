/* sim/busy.c — see busy.h. */
#include "sim/busy.h"

#include <stdlib.h>
#include <string.h>

void mt_busy_free(mt_busy *b) {
    free(b->span);
    memset(b, 0, sizeof *b);
}

int mt_busy_add(mt_busy *b, mt_time_ps s, mt_time_ps e) {
    if (s < b->acct) s = b->acct;
    if (e <= s) return 1;
    int32_t i = 0; /* first span ending at or after s: it and the next ones up to e merge */
    while (i < b->n && b->span[2 * i + 1] < s) i++;
    int32_t j = i;
    while (j < b->n && b->span[2 * j] <= e) {
        if (b->span[2 * j] < s) s = b->span[2 * j];
        if (b->span[2 * j + 1] > e) e = b->span[2 * j + 1];
        j++;
    }
    if (j == i) { /* no overlap: insert at i */
        if (b->n == b->cap) {
            int32_t cap = b->cap ? 2 * b->cap : 4;
            mt_time_ps *p = realloc(b->span, (size_t)cap * 2 * sizeof *p);
            if (!p) return 0;
            b->span = p;
            b->cap = cap;
        }
        if (i < b->n) memmove(b->span + 2 * (i + 1), b->span + 2 * i, (size_t)(b->n - i) * 2 * sizeof *b->span);
        b->n++;
    } else if (j > i + 1) { /* spans i+1 .. j-1 fold into i */
        if (j < b->n) memmove(b->span + 2 * (i + 1), b->span + 2 * j, (size_t)(b->n - j) * 2 * sizeof *b->span);
        b->n -= j - i - 1;
    }
    b->span[2 * i] = s;
    b->span[2 * i + 1] = e;
    return 1;
}

mt_time_ps mt_busy_take(mt_busy *b, mt_time_ps t) {
    if (t <= b->acct) return 0;
    mt_time_ps busy = 0;
    int32_t i = 0;
    for (; i < b->n && b->span[2 * i] < t; i++) {
        mt_time_ps e = b->span[2 * i + 1] < t ? b->span[2 * i + 1] : t;
        busy += e - b->span[2 * i];
        if (b->span[2 * i + 1] > t) { /* runs on past t: keep its rest */
            b->span[2 * i] = t;
            break;
        }
    }
    if (i > 0 && i < b->n) memmove(b->span, b->span + 2 * i, (size_t)(b->n - i) * 2 * sizeof *b->span);
    b->n -= i;
    b->acct = t;
    return busy;
}

mt_time_ps mt_busy_end(const mt_busy *b) { return b->n ? b->span[2 * b->n - 1] : b->acct; }

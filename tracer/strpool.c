/* tracer/strpool.c — see strpool.h. */
#include "tracer/strpool.h"

#include <stdlib.h>
#include <string.h>

typedef struct sp_entry {
    struct sp_entry *next;
    uint64_t hash;
    char str[];
} sp_entry;

struct trace_strpool {
    sp_entry **buckets;
    int64_t cap, len;   /* cap is a power of two */
};

trace_strpool *mt_strpool_new(void) {
    trace_strpool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cap = 1024;
    p->buckets = calloc((size_t)p->cap, sizeof *p->buckets);
    if (!p->buckets) {
        free(p);
        return NULL;
    }
    return p;
}

void mt_strpool_free(trace_strpool *p) {
    if (!p) return;
    for (int64_t i = 0; i < p->cap; i++) {
        sp_entry *e = p->buckets[i];
        while (e) {
            sp_entry *n = e->next;
            free(e);
            e = n;
        }
    }
    free(p->buckets);
    free(p);
}

static uint64_t fnv(const char *s, int64_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* Doubles the bucket array; 0 on allocation failure (the pool stays as it was). */
static int grow(trace_strpool *p) {
    int64_t ncap = p->cap * 2;
    sp_entry **nb = calloc((size_t)ncap, sizeof *nb);
    if (!nb) return 0;
    for (int64_t i = 0; i < p->cap; i++) {
        sp_entry *e = p->buckets[i];
        while (e) {
            sp_entry *nx = e->next;
            e->next = nb[e->hash & (uint64_t)(ncap - 1)];
            nb[e->hash & (uint64_t)(ncap - 1)] = e;
            e = nx;
        }
    }
    free(p->buckets);
    p->buckets = nb;
    p->cap = ncap;
    return 1;
}

const char *mt_strpool_intern(trace_strpool *p, const char *s, int64_t n) {
    if (!s) return NULL;
    if (n < 0) n = (int64_t)strlen(s);
    uint64_t h = fnv(s, n);
    for (sp_entry *e = p->buckets[h & (uint64_t)(p->cap - 1)]; e; e = e->next)
        if (e->hash == h && strncmp(e->str, s, (size_t)n) == 0 && e->str[n] == '\0') return e->str;
    if (p->len * 2 > p->cap && !grow(p)) return NULL;
    sp_entry *e = malloc(sizeof *e + (size_t)n + 1);
    if (!e) return NULL;
    e->hash = h;
    memcpy(e->str, s, (size_t)n);
    e->str[n] = '\0';
    e->next = p->buckets[h & (uint64_t)(p->cap - 1)];
    p->buckets[h & (uint64_t)(p->cap - 1)] = e;
    p->len++;
    return e->str;
}

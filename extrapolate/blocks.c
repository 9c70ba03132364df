/* extrapolate/blocks.c — see blocks.h. */
#include "extrapolate/blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"

/* A layer's name without the index the reader gives a layer named after its first op ("L12:"). */
static const char *bare(const char *n) {
    if (!n || n[0] != 'L') return n ? n : "";
    const char *c = n + 1;
    while (*c >= '0' && *c <= '9') c++;
    return c > n + 1 && *c == ':' ? c + 1 : n;
}

/* Orders layers by what alike() compares: alike layers are neighbours. */
static int by_kind(const void *x, const void *y) {
    const trace_layer *a = *(const trace_layer *const *)x, *b = *(const trace_layer *const *)y;
    if (a->n_ops != b->n_ops) return a->n_ops < b->n_ops ? -1 : 1;
    if (a->param_bytes != b->param_bytes) return a->param_bytes < b->param_bytes ? -1 : 1;
    int c = strcmp(bare(a->name), bare(b->name));
    return c ? c : (a > b) - (a < b);
}

void mt_blocks_find(const mt_trace *t, mt_blocks *out) {
    memset(out, 0, sizeof *out);
    int32_t n = t->n_layers < MT_BLOCKS_MAX_LAYERS ? t->n_layers : MT_BLOCKS_MAX_LAYERS;
    /* each layer's kind as a number (alike layers, one number): one sort, then integer compares */
    const trace_layer *order[MT_BLOCKS_MAX_LAYERS];
    int32_t kind[MT_BLOCKS_MAX_LAYERS];
    for (int32_t i = 0; i < n; i++) order[i] = &t->layers[i];
    qsort(order, (size_t)n, sizeof *order, by_kind);
    for (int32_t i = 0, k = -1; i < n; i++) {
        const trace_layer *a = order[i], *b = i ? order[i - 1] : NULL;
        if (!b || a->n_ops != b->n_ops || a->param_bytes != b->param_bytes || strcmp(bare(a->name), bare(b->name)))
            k++;
        kind[a - t->layers] = k;
    }
    /* For a period p, a run of R layers from s each alike the layer p later holds floor(R / p) + 1
     * blocks of p from s, and a start inside the run holds no more: one pass per p, O(L^2) in all.
     * More layers covered wins; at equal cover the smaller p came first, then the earlier s. */
    int32_t best_cover = 0;
    for (int32_t p = 1; 2 * p <= n; p++)
        for (int32_t s = 0; s + p < n;) {
            int32_t e = s;
            while (e + p < n && kind[e] == kind[e + p]) e++;
            int32_t r = e - s, k = r / p + 1;
            if (k >= 2 && k * p > best_cover) {
                best_cover = k * p;
                out->found = 1, out->first = s, out->layers = p, out->count = k;
            }
            s = e > s ? e : s + 1;
        }
    if (!out->found) return;
    int64_t f = 0, b = 0;
    for (int32_t i = 0; i < out->layers; i++) {
        const trace_layer *L = &t->layers[out->first + i];
        out->ops += L->n_ops;
        out->param_bytes += L->param_bytes;
    }
    for (int32_t i = out->first; i < out->first + out->count * out->layers; i++)
        f += t->layers[i].dev_ns[TRACE_PHASE_FORWARD], b += t->layers[i].dev_ns[TRACE_PHASE_BACKWARD];
    out->fwd_ns = f / out->count;
    out->bwd_ns = b / out->count;
}

int mt_blocks_describe(const mt_trace *t, const mt_blocks *b, char *buf, size_t len) {
    (void)t;
    if (!b->found) return snprintf(buf, len, "none: no group of layers repeats");
    char pb[32];
    int32_t end = b->first + b->count * b->layers;
    int n = snprintf(buf, len, "%d blocks of %d layer%s, L%d-L%d the first: %d ops, %s of parameters, %.3f ms forward "
                     "and %.3f ms backward each", (int)b->count, (int)b->layers, mt_plural(b->layers), (int)b->first,
                     (int)(b->first + b->layers - 1), (int)b->ops, mt_fmt_bytes(b->param_bytes, pb, sizeof pb),
                     (double)b->fwd_ns / 1e6, (double)b->bwd_ns / 1e6);
    if (n >= 0 && (size_t)n < len && b->first > 0)
        n += b->first == 1 ? snprintf(buf + n, len - (size_t)n, "; L0 before")
                           : snprintf(buf + n, len - (size_t)n, "; L0-L%d before", (int)(b->first - 1));
    if (n >= 0 && (size_t)n < len && end < t->n_layers)
        n += end == t->n_layers - 1 ? snprintf(buf + n, len - (size_t)n, "; L%d after", (int)end)
                                    : snprintf(buf + n, len - (size_t)n, "; L%d-L%d after", (int)end,
                                               (int)(t->n_layers - 1));
    return n;
}

/* extrapolate/blocks.c — see blocks.h. */
#include "extrapolate/blocks.h"

#include <stdio.h>
#include <string.h>

#include "util/units.h"

/* A layer's name without the index the reader gives a layer named after its first op ("L12:"). */
static const char *bare(const char *n) {
    if (!n || n[0] != 'L') return n ? n : "";
    const char *c = n + 1;
    while (*c >= '0' && *c <= '9') c++;
    return c > n + 1 && *c == ':' ? c + 1 : n;
}

static int alike(const trace_layer *a, const trace_layer *b) {
    return a->n_ops == b->n_ops && a->param_bytes == b->param_bytes && !strcmp(bare(a->name), bare(b->name));
}

/* How many blocks of p layers repeat in a row from layer s (1: only itself). */
static int32_t repeats(const trace_layer *l, int32_t n, int32_t s, int32_t p) {
    int32_t k = 1;
    for (;;) {
        int32_t b = s + k * p;
        if (b + p > n) return k;
        for (int32_t i = 0; i < p; i++)
            if (!alike(&l[s + i], &l[b + i])) return k;
        k++;
    }
}

void mt_blocks_find(const trace *t, mt_blocks *out) {
    memset(out, 0, sizeof *out);
    int32_t n = t->n_layers < MT_BLOCKS_MAX_LAYERS ? t->n_layers : MT_BLOCKS_MAX_LAYERS;
    int32_t best_cover = 0;
    for (int32_t p = 1; 2 * p <= n; p++)
        for (int32_t s = 0; s + 2 * p <= n; s++) {
            if (!alike(&t->layers[s], &t->layers[s + p])) continue;
            int32_t k = repeats(t->layers, n, s, p);
            /* more layers covered wins; at equal cover the smaller p came first, then the earlier s */
            if (k >= 2 && k * p > best_cover) {
                best_cover = k * p;
                out->found = 1, out->first = s, out->layers = p, out->count = k;
            }
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

int mt_blocks_describe(const trace *t, const mt_blocks *b, char *buf, size_t len) {
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

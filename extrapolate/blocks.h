/* extrapolate/blocks.h — the trace's repeating block: the longest run of k >= 2 consecutive,
 * identical groups of layers (a transformer's layers, a ResNet stage's residual blocks), found from
 * the layer sequence alone (no per-model code). Two layers are alike when they have the same name
 * (the module path, else the first op's, tracer/builder.c, without its "L<n>:"), the same number of ops and the same
 * parameter bytes; a block is p consecutive layers, and the trace holds it k times in a row from
 * layer `first`. Among all (first, p) the one covering the most layers (k x p) wins, then the
 * smallest p, then the earliest first.
 * Invariant: found = 1 implies count >= 2, layers >= 1, first + count x layers <= n_layers, and
 * block j (0 <= j < count) is layers [first + j x layers, first + (j + 1) x layers).
 * Costs: one sort of the layers by kind, then O(L^2) integer comparisons over the trace's L layers,
 * L capped at MT_BLOCKS_MAX_LAYERS (a longer trace is searched in its first MT_BLOCKS_MAX_LAYERS
 * layers); no allocation (48 KiB of stack).
 *
 * `--blocks N` repeats or cuts this block (extrapolate/repeat.h); inspect shows it.
 */
#ifndef MT_EXTRAPOLATE_BLOCKS_H
#define MT_EXTRAPOLATE_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/trace.h"
#include "util/err.h"

enum { MT_BLOCKS_MAX_LAYERS = 4096 };

typedef struct mt_blocks {
    int found;
    int32_t first;        /* the first block's first layer */
    int32_t layers;       /* layers per block */
    int32_t count;        /* blocks in a row */
    int32_t ops;          /* outermost ops per block (those of its layers) */
    double param_bytes;   /* per block */
    int64_t fwd_ns, bwd_ns; /* per block, the mean over the blocks */
} mt_blocks;

/* Finds t's repeating block into *out (found 0 when none). */
void mt_blocks_find(const mt_trace *t, mt_blocks *out);

/* One line: "4 blocks of 8 layers (L3-L10, L11-L18, ...): 88 ops, 3.15 MB of parameters each;
 * layers L0-L2 before, L35-L36 after" or "none: no group of layers repeats" into buf. */
int mt_blocks_describe(const mt_trace *t, const mt_blocks *b, char *buf, size_t len);

#endif

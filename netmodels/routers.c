/* netmodels/routers.c — see routers.h. Node numbers follow the builders in presets.c. */
#include "netmodels/routers.h"

#include <stdlib.h>

/* ---- ring: shortest direction (one direction on a uni ring) ---- */

static long ring_dist(const long *v, long a, long b) {
    long n = v[0], cw = ((b - a) % n + n) % n, ccw = (n - cw) % n;
    return v[1] == 1 || cw <= ccw ? cw : ccw;
}

int32_t mt_router_ring(const long *v, int32_t src, int32_t at, int32_t *pred) {
    long n = v[0];
    if (n < 2 || src >= n || at >= n) return -1;
    long d = ring_dist(v, src, at), nb[2] = {(at - 1 + n) % n, (at + 1) % n};
    int32_t k = 0;
    for (int i = 0; i < (v[1] == 1 ? 1 : 2); i++) {
        if (i == 1 && nb[1] == nb[0]) break; /* two GPUs: one neighbour */
        if (ring_dist(v, src, nb[i]) == d - 1) pred[k++] = (int32_t)nb[i];
    }
    return k;
}

/* ---- fc and switch: one hop, or up to the switch and down ---- */

int32_t mt_router_fc(const long *v, int32_t src, int32_t at, int32_t *pred) {
    if (src >= v[0] || at >= v[0]) return -1;
    pred[0] = src;
    return 1;
}

int32_t mt_router_switch(const long *v, int32_t src, int32_t at, int32_t *pred) {
    if (src >= v[0] || at > v[0]) return -1;
    pred[0] = at == v[0] ? src : (int32_t)v[0];
    return 1;
}

/* ---- mesh and torus: distance per dimension (a wrap exists on a torus side above 2) ---- */

static long dim_dist(long a, long b, long size, int wrap) {
    long x = labs(a - b);
    return wrap && size > 2 && size - x < x ? size - x : x;
}

static int32_t grid(const long *v, int wrap, int32_t src, int32_t at, int32_t *pred) {
    long R = v[0], C = v[1];
    if (src >= R * C || at >= R * C) return -1;
    long si = src / C, sj = src % C, ai = at / C, aj = at % C;
    long d = dim_dist(si, ai, R, wrap) + dim_dist(sj, aj, C, wrap);
    int32_t k = 0;
    for (int dim = 0; dim < 2; dim++) {
        long size = dim ? C : R, x = dim ? aj : ai, w = wrap && size > 2;
        long nb[2] = {x - 1, x + 1};
        for (int s = 0; s < 2; s++) {
            long y = nb[s];
            if (y < 0 || y >= size) {
                if (!w) continue;
                y = (y + size) % size;
            }
            long ui = dim ? ai : y, uj = dim ? y : aj;
            if (dim_dist(si, ui, R, wrap) + dim_dist(sj, uj, C, wrap) == d - 1) pred[k++] = (int32_t)(ui * C + uj);
        }
    }
    return k;
}

int32_t mt_router_mesh(const long *v, int32_t src, int32_t at, int32_t *pred) { return grid(v, 0, src, at, pred); }
int32_t mt_router_torus(const long *v, int32_t src, int32_t at, int32_t *pred) { return grid(v, 1, src, at, pred); }

/* ---- k-ary fat-tree: GPUs, then the (k/2)^2 cores (core a*h+c joins aggregation switch a of
 * every pod), then per pod its h edge switches and h aggregation switches ---- */

int32_t mt_router_fattree(const long *v, int32_t src, int32_t at, int32_t *pred) {
    long h = v[0] / 2, g = v[0] * h * h, core0 = g, pod0 = g + h * h;
    if (h < 1 || src >= g || at >= pod0 + v[0] * 2 * h) return -1;
    long ps = src / (h * h), es = src % (h * h) / h;
    if (at < g) { /* a GPU: its edge switch */
        pred[0] = (int32_t)(pod0 + at / (h * h) * 2 * h + at % (h * h) / h);
        return 1;
    }
    if (at < pod0) { /* core a*h+c: aggregation switch a of the source's pod */
        pred[0] = (int32_t)(pod0 + ps * 2 * h + h + (at - core0) / h);
        return 1;
    }
    long p = (at - pod0) / (2 * h), r = (at - pod0) % (2 * h);
    if (r < h && p == ps && r == es) { /* the source's edge switch */
        pred[0] = src;
        return 1;
    }
    if (r >= h && p == ps) { /* an aggregation switch of the source's pod: from its edge */
        pred[0] = (int32_t)(pod0 + ps * 2 * h + es);
        return 1;
    }
    for (long i = 0; i < h; i++) /* edge: every aggregation of its pod; aggregation: its cores */
        pred[i] = (int32_t)(r < h ? pod0 + p * 2 * h + h + i : core0 + (r - h) * h + i);
    return (int32_t)h;
}

/* ---- multinode: node i holds GPUs i*(2G+1) + j, its NVSwitch i*(2G+1) + G and NICs
 * i*(2G+1) + G + 1 + j; the fabric switches (G rails, or one) follow all nodes ---- */

int32_t mt_router_multinode(const long *v, int32_t src, int32_t at, int32_t *pred) {
    long M = v[0], G = v[1], rail = v[2] == 0, stride = 2 * G + 1, fab0 = M * stride;
    if (src >= fab0 || src % stride >= G || at >= fab0 + (rail ? G : 1)) return -1;
    long is = src / stride, js = src % stride;
#define GPU(i, j) ((int32_t)((i) * stride + (j)))
#define NVS(i) ((int32_t)((i) * stride + G))
#define NIC(i, j) ((int32_t)((i) * stride + G + 1 + (j)))
    if (at >= fab0) { /* a rail (or the fabric switch): from the source node's NIC on it */
        pred[0] = NIC(is, rail ? at - fab0 : js);
        return 1;
    }
    long i = at / stride, r = at % stride;
    if (r < G) { /* a GPU */
        if (i == is) return pred[0] = NVS(is), 1;
        if (!rail || r == js) return pred[0] = NIC(i, r), 1;
        pred[0] = NVS(i); /* off the source's rail: NVSwitch last, or rail r first (a tie) */
        pred[1] = NIC(i, r);
        return 2;
    }
    if (r == G) { /* an NVSwitch: the source's own, or (rail) via the GPU on the source's rail */
        if (i == is) return pred[0] = src, 1;
        return rail ? (pred[0] = GPU(i, js), 1) : -1;
    }
    long j = r - G - 1; /* a NIC */
    if (i == is && j == js) return pred[0] = src, 1;
    if (i != is) return pred[0] = (int32_t)(fab0 + (rail ? j : 0)), 1;
    if (rail) return pred[0] = GPU(is, j), 1;
    return -1; /* another NIC of the source's node on one fabric switch: no GPU route passes it */
#undef GPU
#undef NVS
#undef NIC
}

int32_t mt_router_dgx(const long *v, int32_t src, int32_t at, int32_t *pred) {
    (void)v;
    static const long one_node[3] = {1, 8, 0}; /* a multinode of one node, no fabric */
    if (at >= 17) return -1;
    return mt_router_multinode(one_node, src, at, pred);
}

/* extrapolate/collective.c — see collective.h.
 *
 * Builder invariant: frontier[lane * N + r] is the send whose delivery rank r's next send in
 * that lane must wait for (-1: none); recv lists gather what r received in the current step
 * and become the frontier at the next step_begin (through a join when more than one);
 * `conn` maps a connection (lane, src, dst) to the last send added on it, which the next one
 * there waits to have left. Templates are built for one chunk, then replicated with the
 * chunk-order dependency.
 */
#include "extrapolate/collective.h"
#include "util/limits.h"

#include <stdlib.h>
#include <string.h>

#include "util/u64map.h"

#define NOSEND UINT32_MAX

typedef struct builder {
    mt_coll_schedule *s;
    int32_t n, lanes;
    uint32_t *frontier;          /* lanes * n */
    uint32_t **recv;             /* lanes * n lists */
    uint32_t *nrecv, *crecv;
    mt_u64map conn;              /* (lane * n + src) * n + dst -> last send on it */
    uint32_t *out_last;          /* lanes * n: the last send out of each rank in each lane */
    int oom, too_big;
} builder;

static const char *op_names[] = {"allreduce", "reducescatter", "allgather", "broadcast",
                                 "reduce", "alltoall", "sendrecv"};
static const char *algo_names[] = {"ring", "tree", "direct", "hier", "ringflow", "relay", "treeflow", "nccl", "auto"};
#define N_ALGOS ((int)(sizeof algo_names / sizeof algo_names[0]))

const char *mt_coll_op_name(mt_coll_op op) { return (unsigned)op < 7 ? op_names[op] : "?"; }
const char *mt_coll_algo_name(mt_coll_algo a) { return (int)a >= 0 && (int)a < N_ALGOS ? algo_names[a] : "?"; }

mt_status mt_coll_op_parse(const char *s, mt_coll_op *out, mt_error *err) {
    for (int i = 0; s && i < 7; i++)
        if (!strcmp(s, op_names[i])) {
            *out = (mt_coll_op)i;
            return MT_OK;
        }
    return mt_fail(err, MT_EINVAL, "unknown collective '%s' (use allreduce, reducescatter, "
                   "allgather, broadcast, reduce, alltoall or sendrecv)", s ? s : "");
}

mt_status mt_coll_algo_parse(const char *s, mt_coll_algo *out, mt_error *err) {
    for (int i = 0; s && i < MT_ALGO_NCCL; i++)
        if (!strcmp(s, algo_names[i])) {
            *out = (mt_coll_algo)i;
            return MT_OK;
        }
    return mt_fail(err, MT_EINVAL, "unknown algorithm '%s' (use ring, tree, direct, hier, ringflow, relay or "
                   "treeflow)", s ? s : "");
}

mt_status mt_coll_plan_algo_parse(const char *s, mt_coll_algo *out, mt_error *err) {
    for (int i = MT_ALGO_NCCL; s && i < N_ALGOS; i++)
        if (!strcmp(s, algo_names[i])) {
            *out = (mt_coll_algo)i;
            return MT_OK;
        }
    return mt_coll_algo_parse(s, out, err);
}

double mt_coll_busbw_factor(mt_coll_op op, int32_t n) {
    switch (op) {
    case MT_COLL_ALLREDUCE: return n > 1 ? 2.0 * (n - 1) / n : 1;
    case MT_COLL_REDUCESCATTER:
    case MT_COLL_ALLGATHER:
    case MT_COLL_ALLTOALL: return n > 1 ? (double)(n - 1) / n : 1;
    default: return 1;
    }
}

void mt_coll_params_init(mt_coll_params *p) {
    memset(p, 0, sizeof *p);
    p->op = MT_COLL_ALLREDUCE;
    p->algo = MT_ALGO_RING;
    p->peer = 1;
}

void mt_coll_free(mt_coll_schedule *s) {
    if (!s) return;
    free(s->sends);
    free(s->deps);
    free(s);
}

/* Makes room for `need` elements of an array indexed by uint32 (sends, deps, receive lists);
 * 0 when out of memory or beyond MT_COLL_SENDS_MAX (*too_big set). */
static int grow_u32(void *pp, uint32_t *cap, size_t elem, uint64_t need, int *too_big) {
    if (need <= *cap) return 1;
    if (need > MT_COLL_SENDS_MAX) {
        *too_big = 1;
        return 0;
    }
    uint64_t ncap = *cap ? *cap : 64;
    while (ncap < need) ncap *= 2;
    if (ncap > MT_COLL_SENDS_MAX) ncap = MT_COLL_SENDS_MAX;
    void **p = pp;
    void *np = realloc(*p, (size_t)ncap * elem);
    if (!np) return 0;
    *p = np;
    *cap = (uint32_t)ncap;
    return 1;
}

/* Appends a send with up to two dependencies (NOSEND = none; MT_COLL_SENT may be set);
 * returns its index. */
static uint32_t add_raw(builder *b, int32_t src, int32_t dst, double bytes, uint32_t d0, uint32_t d1) {
    mt_coll_schedule *s = b->s;
    if (b->oom || !grow_u32(&s->sends, &s->scap, sizeof *s->sends, (uint64_t)s->nsends + 1, &b->too_big) ||
        !grow_u32(&s->deps, &s->dcap, sizeof *s->deps, (uint64_t)s->ndeps + 2, &b->too_big)) {
        b->oom = 1;
        return NOSEND;
    }
    mt_coll_send *x = &s->sends[s->nsends];
    *x = (mt_coll_send){src, dst, bytes, s->ndeps, 0};
    if (d0 != NOSEND) s->deps[s->ndeps++] = d0, x->ndeps++;
    if (d1 != NOSEND) s->deps[s->ndeps++] = d1, x->ndeps++;
    return s->nsends++;
}

/* A send in `lane` after src's frontier and after the last send on its connection has left
 * (one_port: after src's last send in the lane, whatever its destination); recorded as
 * received by dst and as the connection's and src's last. */
static uint32_t add_ordered(builder *b, int lane, int32_t src, int32_t dst, double bytes, int one_port) {
    uint64_t key = ((uint64_t)lane * (uint64_t)b->n + (uint64_t)src) * (uint64_t)b->n + (uint64_t)dst;
    int64_t prev;
    uint32_t fifo = mt_u64map_get(&b->conn, key, &prev) ? (uint32_t)prev | MT_COLL_SENT : NOSEND;
    uint32_t own = b->out_last[lane * b->n + src];
    if (one_port && own != NOSEND) fifo = own | MT_COLL_SENT;
    uint32_t id = add_raw(b, src, dst, bytes, b->frontier[lane * b->n + src], fifo);
    size_t k = (size_t)lane * b->n + dst;
    if (id == NOSEND || mt_u64map_put(&b->conn, key, id, NULL) != MT_OK ||
        !grow_u32(&b->recv[k], &b->crecv[k], sizeof(uint32_t), (uint64_t)b->nrecv[k] + 1, &b->too_big)) {
        b->oom = 1;
        return NOSEND;
    }
    b->recv[k][b->nrecv[k]++] = id;
    b->out_last[lane * b->n + src] = id;
    return id;
}

static uint32_t add(builder *b, int lane, int32_t src, int32_t dst, double bytes) {
    return add_ordered(b, lane, src, dst, bytes, 0);
}

/* Adds dependency d to the last send added (its deps are the tail of deps[]). */
static void dep_last(builder *b, uint32_t d) {
    mt_coll_schedule *s = b->s;
    if (b->oom || d == NOSEND) return;
    if (!grow_u32(&s->deps, &s->dcap, sizeof(uint32_t), (uint64_t)s->ndeps + 1, &b->too_big)) {
        b->oom = 1;
        return;
    }
    s->deps[s->ndeps++] = d;
    s->sends[s->nsends - 1].ndeps++;
}

/* Turns each rank's receives of the last step into its frontier (a join when several). */
static void step_begin(builder *b) {
    for (size_t k = 0; k < (size_t)b->lanes * b->n && !b->oom; k++) {
        uint32_t nr = b->nrecv[k];
        if (nr == 0) continue;
        if (nr == 1) {
            b->frontier[k] = b->recv[k][0];
        } else {
            int32_t r = (int32_t)(k % b->n);
            uint32_t j = add_raw(b, r, r, 0, b->recv[k][0], b->recv[k][1]);
            for (uint32_t i = 2; i < nr && !b->oom; i++) dep_last(b, b->recv[k][i]);
            b->frontier[k] = j;
        }
        b->nrecv[k] = 0;
    }
}

/* `steps` ring steps over each of `ng` groups of m ranks (groups[g * m + i]). A phase's first
 * step also waits for its destination to have finished the previous phase (received its last
 * step): a rank takes a phase's data once it has entered the phase, as NCCL runs phases as
 * separate collectives in stream order. Without it a rank done early pushes its next phase into
 * a slow neighbour still busy with this one, and the two share its link. */
static void ring_steps(builder *b, const int32_t *groups, int32_t ng, int32_t m, int32_t steps,
                       double bytes) {
    for (int32_t k = 0; k < steps; k++) {
        step_begin(b);
        for (int32_t g = 0; g < ng; g++)
            for (int32_t i = 0; i < m; i++) {
                int32_t dst = groups[g * m + (i + 1) % m];
                add(b, 0, groups[g * m + i], dst, bytes);
                if (k == 0) dep_last(b, b->frontier[dst]);
            }
    }
}

/* Heap-ordered binary tree over positions; position -> rank through map. */
static int32_t depth_of(int32_t pos) {
    int32_t d = 0;
    for (pos++; pos > 1; pos >>= 1) d++;
    return d;
}

static void tree_phase(builder *b, int lane, const int32_t *map, int up, double bytes) {
    int32_t n = b->n, maxd = depth_of(n - 1);
    for (int32_t s = 0; s < maxd; s++) {
        int32_t d = up ? maxd - s : s + 1; /* depth of the child end */
        step_begin(b);
        for (int32_t pos = 1; pos < n; pos++) {
            if (depth_of(pos) != d) continue;
            int32_t child = map[pos], parent = map[(pos - 1) / 2];
            if (up)
                add(b, lane, child, parent, bytes);
            else
                add(b, lane, parent, child, bytes);
        }
    }
}

/* Room for `sends` more sends and `deps` more dependencies at once: a builder that knows its size
 * skips the doubling copies (a 2^20-rank ringflow is 3 M sends: 11 % of a run). */
static void reserve(builder *b, uint64_t sends, uint64_t deps) {
    mt_coll_schedule *s = b->s;
    if (!b->oom && (!grow_u32(&s->sends, &s->scap, sizeof *s->sends, (uint64_t)s->nsends + sends, &b->too_big) ||
                    !grow_u32(&s->deps, &s->dcap, sizeof *s->deps, (uint64_t)s->ndeps + deps, &b->too_big)))
        b->oom = 1;
}

/* The steady state of a finely chunked ring of `steps` steps: bulk flows i -> i+1 of steps/N x
 * S (sends 0..N-1), a join of them all, then steps-1 zero-byte hops for the per-step latencies. */
static void ringflow(builder *b, int32_t steps, double S) {
    int32_t n = b->n;
    uint64_t hops = b->s->p.walk ? 1 : (uint64_t)steps;
    reserve(b, (uint64_t)n + 1 + hops, (uint64_t)n + 1 + hops);
    for (int32_t i = 0; i < n; i++) add_raw(b, i, (i + 1) % n, S * steps / n, NOSEND, NOSEND);
    uint32_t prev = add_raw(b, 0, 0, 0, 0, n > 1 ? 1 : NOSEND);
    for (int32_t i = 2; i < n && !b->oom; i++) dep_last(b, (uint32_t)i);
    if (b->s->p.walk && steps - 1 >= 2) { /* the hops k % n -> (k + 1) % n as one walk send */
        b->s->walk = add_raw(b, 0, 1, 0, prev, NOSEND); /* its first hop */
        b->s->walk_hops = b->oom ? 0 : steps - 1;
        return;
    }
    for (int32_t k = 0; k < steps - 1 && !b->oom; k++) prev = add_raw(b, k % n, (k + 1) % n, 0, prev, NOSEND);
}

/* The steady state of a finely pipelined double binary tree all-reduce (collective.h): its bulk
 * as one flow per rank of 2S (m-1)/m to the next node on its rail (over whole nodes of G ranks: rank
 * node x G + l to node + 1, same l; else the next rank, G = 1, m = n), a join of them all, then a
 * chain of 2 depth - 1 zero-byte hops down and up the tree over the m nodes (local index 0's
 * leftmost leaf to the root and back). */
static void treeflow(builder *b, double S, int32_t G) {
    int32_t n = b->n;
    if (G < 1 || n % G || n <= G) G = 1;
    int32_t m = n / G, maxd = depth_of(m - 1);
    reserve(b, (uint64_t)n + 2 * (uint64_t)maxd + 2, (uint64_t)n + 2 * (uint64_t)maxd + 2);
    uint32_t first = b->s->nsends;
    for (int32_t node = 0; node < m; node++)
        for (int32_t l = 0; l < G; l++)
            add_raw(b, node * G + l, (node + 1) % m * G + l, 2.0 * S * (m - 1) / m, NOSEND, NOSEND);
    uint32_t last = b->s->nsends, prev = add_raw(b, 0, 0, 0, first, first + 1 < last ? first + 1 : NOSEND);
    for (uint32_t i = first + 2; i < last && !b->oom; i++) dep_last(b, i);
    int32_t path[32], np = 0; /* positions 2^d - 1: the leftmost path, deepest first */
    for (int32_t d = maxd; d >= 0 && np < 32; d--) path[np++] = (int32_t)((1u << d) - 1) * G;
    for (int32_t k = 0; k + 1 < np && !b->oom; k++) prev = add_raw(b, path[k], path[k + 1], 0, prev, NOSEND);
    for (int32_t k = np - 1; k > 1 && !b->oom; k--) prev = add_raw(b, path[k], path[k - 1], 0, prev, NOSEND);
}

/* All-to-all as a pairwise exchange: in step k = 1..N-1 rank i sends to i + k once it has
 * received step k-1, its own last send has left (one port) and i + k has received step k-1
 * (it is ready for step k). */
/* Bytes rank i sends rank j in an all-to-all of per-rank buffer S (mt_coll_params.share). */
static double a2a_bytes(const mt_coll_params *p, double S, int32_t i, int32_t j) {
    if (!p->share) return S / p->nranks;
    return S * p->share[p->share_by_src ? i : j];
}

static void exchange(builder *b, const mt_coll_params *p, double S) {
    for (int32_t k = 1; k < b->n; k++) {
        step_begin(b);
        for (int32_t i = 0; i < b->n; i++) {
            int32_t dst = (i + k) % b->n;
            add_ordered(b, 0, i, dst, a2a_bytes(p, S, i, dst), 1);
            dep_last(b, b->frontier[dst]);
        }
    }
}

/* Hierarchical all-to-all (collective.h): rank (a, l) = a x G + l. Phase 1 inside nodes, phase 2
 * across nodes once a rank has received phase 1 from its local peers. */
static mt_status hier_alltoall(builder *b, const mt_coll_params *p, double S, mt_error *err) {
    int32_t n = p->nranks, G = p->ranks_per_node;
    if (G < 1 || n % G)
        return mt_fail(err, MT_EINVAL, "hier needs the rank count (%d) to be a multiple of the GPUs per node (%d)",
                       (int)n, (int)G);
    int32_t m = n / G;
    step_begin(b);
    for (int32_t i = 0; i < n; i++)
        for (int32_t l2 = 0; l2 < G; l2++) {
            int32_t j = i / G * G + l2;
            if (j == i) continue;
            double x = 0; /* i's data for every rank (c, l2) */
            for (int32_t c = 0; c < m; c++) x += a2a_bytes(p, S, i, c * G + l2);
            add(b, 0, i, j, x);
        }
    step_begin(b);
    for (int32_t j = 0; j < n; j++)
        for (int32_t c = 0; c < m; c++) {
            int32_t dst = c * G + j % G;
            if (c == j / G) continue;
            double x = 0; /* node j/G's data for dst, gathered at j */
            for (int32_t l = 0; l < G; l++) x += a2a_bytes(p, S, j / G * G + l, dst);
            add(b, 0, j, dst, x);
        }
    return MT_OK;
}

static void chain(builder *b, int32_t root, int up, double bytes) {
    int32_t n = b->n;
    /* broadcast: root -> root+1 -> ...; reduce: root+1 -> root+2 -> ... -> root */
    for (int32_t k = 0; k < n - 1; k++) {
        step_begin(b);
        int32_t src = up ? (root + 1 + k) % n : (root + k) % n;
        add(b, 0, src, (src + 1) % n, bytes);
    }
}

static mt_status build_template(builder *b, const mt_coll_params *p, double S, mt_error *err) {
    int32_t n = p->nranks;
    int32_t *all = malloc((size_t)n * sizeof *all), *map = malloc((size_t)n * sizeof *map);
    if (!all || !map) {
        free(all);
        free(map);
        return mt_fail(err, MT_ENOMEM, "out of memory building a collective");
    }
    for (int32_t i = 0; i < n; i++) all[i] = i;
    mt_status rc = MT_OK;
    mt_coll_op op = p->op;
    int32_t flow_steps = op == MT_COLL_ALLREDUCE ? 2 * (n - 1)
                         : (op == MT_COLL_REDUCESCATTER || op == MT_COLL_ALLGATHER) ? n - 1 : 0;
    if (op == MT_COLL_SENDRECV) {
        add(b, 0, p->root, p->peer, S);
    } else if (p->algo == MT_ALGO_RINGFLOW && flow_steps > 0) {
        ringflow(b, flow_steps, S);
    } else if (p->algo == MT_ALGO_TREEFLOW && op == MT_COLL_ALLREDUCE) {
        treeflow(b, S, p->ranks_per_node);
    } else if (p->algo == MT_ALGO_RELAY && op == MT_COLL_ALLTOALL) {
        ring_steps(b, all, 1, n, (int32_t)((int64_t)n * (n - 1) / 2), S / n);
    } else if (p->algo == MT_ALGO_RING || p->algo == MT_ALGO_RINGFLOW || p->algo == MT_ALGO_RELAY) {
        if (op == MT_COLL_ALLREDUCE) ring_steps(b, all, 1, n, 2 * (n - 1), S / n);
        else if (op == MT_COLL_REDUCESCATTER || op == MT_COLL_ALLGATHER) ring_steps(b, all, 1, n, n - 1, S / n);
        else if (op == MT_COLL_BROADCAST || op == MT_COLL_REDUCE) chain(b, p->root, op == MT_COLL_REDUCE, S);
        else
            exchange(b, p, S);
    } else if (p->algo == MT_ALGO_DIRECT) {
        int phases = op == MT_COLL_ALLREDUCE ? 2 : 1;
        for (int ph = 0; ph < phases; ph++) {
            step_begin(b);
            for (int32_t i = 0; i < n; i++)
                for (int32_t j = 0; j < n; j++) {
                    if (i == j) continue;
                    if (op == MT_COLL_BROADCAST && i == p->root) add(b, 0, i, j, S);
                    else if (op == MT_COLL_REDUCE && j == p->root) add(b, 0, i, j, S);
                    else if (op == MT_COLL_ALLTOALL) add(b, 0, i, j, a2a_bytes(p, S, i, j));
                    else if (op != MT_COLL_BROADCAST && op != MT_COLL_REDUCE) add(b, 0, i, j, S / n);
                }
        }
    } else if (p->algo == MT_ALGO_TREE || p->algo == MT_ALGO_TREEFLOW) {
        if (op == MT_COLL_ALLREDUCE) {
            for (int32_t i = 0; i < n; i++) map[i] = n - 1 - i; /* mirrored: leaves <-> inner */
            tree_phase(b, 0, all, 1, S / 2);
            /* run the second tree in lane 1 over the same steps: build it after, its
             * dependencies only involve lane 1 so the two trees proceed concurrently */
            tree_phase(b, 1, map, 1, S / 2);
            tree_phase(b, 0, all, 0, S / 2);
            tree_phase(b, 1, map, 0, S / 2);
        } else if (op == MT_COLL_BROADCAST || op == MT_COLL_REDUCE) {
            for (int32_t i = 0; i < n; i++) map[i] = (i + p->root) % n;
            tree_phase(b, 0, map, op == MT_COLL_REDUCE, S);
        } else {
            rc = mt_fail(err, MT_EINVAL, "tree %s is not supported (use ring or direct)",
                         mt_coll_op_name(op));
        }
    } else if (op == MT_COLL_ALLTOALL) { /* hier */
        rc = hier_alltoall(b, p, S, err);
    } else { /* hier */
        int32_t g = p->ranks_per_node;
        if (op != MT_COLL_ALLREDUCE)
            rc = mt_fail(err, MT_EINVAL, "hier %s is not supported (hier is all-reduce only; use "
                         "ring or direct)", mt_coll_op_name(op));
        else if (g < 1 || n % g)
            rc = mt_fail(err, MT_EINVAL, "hier needs the rank count (%d) to be a multiple of the "
                         "GPUs per node (%d)", (int)n, (int)g);
        else {
            int32_t m = n / g;
            for (int32_t node = 0; node < m; node++)
                for (int32_t l = 0; l < g; l++) map[l * m + node] = node * g + l; /* by local rank */
            ring_steps(b, all, m, g, g - 1, S / g);
            ring_steps(b, map, g, m, 2 * (m - 1), S / g / m);
            ring_steps(b, all, m, g, g - 1, S / g);
        }
    }
    free(all);
    free(map);
    if (rc == MT_OK && b->too_big)
        rc = mt_fail(err, MT_EINVAL, "a %d-rank %s %s needs more than 2^31 sends or dependencies (use fewer "
                     "ranks, or ring for direct)", (int)n, mt_coll_algo_name(p->algo), mt_coll_op_name(op));
    else if (rc == MT_OK && b->oom)
        rc = mt_fail(err, MT_ENOMEM, "out of memory building a collective");
    return rc;
}

static int32_t default_chunks(const mt_coll_params *p) {
    int pipelined = (p->algo == MT_ALGO_TREE || p->algo == MT_ALGO_TREEFLOW) ||
                    (p->algo == MT_ALGO_RING && (p->op == MT_COLL_BROADCAST || p->op == MT_COLL_REDUCE));
    if (!pipelined) return 1;
    double c = p->bytes / 1048576.0;
    return c < 1 ? 1 : c > 32 ? 32 : (int32_t)(c + 0.999);
}

/* Replicates the one-chunk template into `chunks` pieces: piece c of send i waits for its
 * template dependencies in piece c (kinds kept) and for piece c-1 of send i to have LEFT (the
 * pieces of one send stream back to back on its connection, each arriving one path latency
 * after it left, as NCCL's chunks do: a piece does not wait for the previous one to arrive). */
static mt_status replicate_chunks(mt_coll_schedule *s, int32_t chunks, mt_error *err) {
    uint32_t t = s->nsends, td = s->ndeps;
    int too_big = 0;
    if (!grow_u32(&s->sends, &s->scap, sizeof *s->sends, (uint64_t)t * chunks, &too_big) ||
        !grow_u32(&s->deps, &s->dcap, sizeof *s->deps, ((uint64_t)td + t) * chunks, &too_big))
        return mt_fail(err, too_big ? MT_EINVAL : MT_ENOMEM, "collective too large: %u sends x %d chunks%s", t,
                       (int)chunks, too_big ? " is more than 2^31 (use fewer chunks)" : " (out of memory)");
    for (int32_t c = 1; c < chunks; c++)
        for (uint32_t i = 0; i < t; i++) {
            mt_coll_send x = s->sends[i];
            mt_coll_send *y = &s->sends[s->nsends++];
            *y = (mt_coll_send){x.src, x.dst, x.bytes, s->ndeps, x.ndeps + 1};
            for (uint32_t k = 0; k < x.ndeps; k++) {
                uint32_t d = s->deps[x.dep_begin + k];
                s->deps[s->ndeps++] = (mt_coll_dep_send(d) + (uint32_t)c * t) | (d & MT_COLL_SENT);
            }
            s->deps[s->ndeps++] = ((uint32_t)(c - 1) * t + i) | MT_COLL_SENT;
        }
    return MT_OK;
}

mt_status mt_coll_build(const mt_coll_params *p, mt_coll_schedule **out, mt_error *err) {
    *out = NULL;
    if (p->nranks < 1 || p->nranks > MT_GPUS_MAX)
        return mt_fail(err, MT_EINVAL, "a collective needs 1..%d ranks (got %d)", MT_GPUS_MAX, (int)p->nranks);
    if (!(p->bytes >= 0) || p->bytes > 1e18)
        return mt_fail(err, MT_EINVAL, "collective size must be 0 to 1e18 bytes (1 EB) (got %g)", p->bytes);
    if (p->algo == MT_ALGO_NCCL)
        return mt_fail(err, MT_EINVAL, "algorithm nccl is chosen per collective by the simulator (NCCL's tuner, "
                       "extrapolate/nccl.h), not built as a schedule: pick ring, tree, direct, hier or ringflow here");
    if ((unsigned)p->op > MT_COLL_SENDRECV || (unsigned)p->algo > MT_ALGO_TREEFLOW)
        return mt_fail(err, MT_EINVAL, "bad collective op or algorithm");
    if (!(p->wire_factor >= 0 && p->wire_factor < 1e6) || !(p->extra_lat_ns >= 0 && p->extra_lat_ns < 1e15))
        return mt_fail(err, MT_EINVAL, "collective wire factor %g / extra latency %g ns out of range", p->wire_factor,
                       p->extra_lat_ns);
    if (p->root < 0 || p->root >= p->nranks || (p->op == MT_COLL_SENDRECV &&
                                                (p->peer < 0 || p->peer >= p->nranks)))
        return mt_fail(err, MT_EINVAL, "root %d / peer %d outside ranks 0..%d", (int)p->root,
                       (int)p->peer, (int)p->nranks - 1);
    int32_t chunks = p->chunks > 0 ? p->chunks : default_chunks(p);
    if (p->algo == MT_ALGO_RINGFLOW || (p->algo == MT_ALGO_TREEFLOW && p->op == MT_COLL_ALLREDUCE)) chunks = 1;
    mt_coll_schedule *s = calloc(1, sizeof *s);
    builder b = {.s = s, .n = p->nranks, .lanes = 2};
    mt_u64map_init(&b.conn);
    size_t slots = (size_t)b.lanes * b.n;
    b.frontier = malloc(slots * sizeof *b.frontier);
    b.out_last = malloc(slots * sizeof *b.out_last);
    b.recv = calloc(slots, sizeof *b.recv);
    b.nrecv = calloc(slots, sizeof *b.nrecv);
    b.crecv = calloc(slots, sizeof *b.crecv);
    mt_status rc = MT_OK;
    if (!s || !b.frontier || !b.out_last || !b.recv || !b.nrecv || !b.crecv)
        rc = mt_fail(err, MT_ENOMEM, "out of memory building a collective");
    if (rc == MT_OK) {
        s->p = *p;
        s->p.chunks = chunks;
        memset(b.frontier, 0xff, slots * sizeof *b.frontier);
        memset(b.out_last, 0xff, slots * sizeof *b.out_last);
        double wire = p->wire_factor > 0 ? p->wire_factor : 1;
        if (p->nranks > 1 || p->op == MT_COLL_SENDRECV) rc = build_template(&b, p, p->bytes * wire / chunks, err);
    }
    for (size_t k = 0; b.recv && k < slots; k++) free(b.recv[k]);
    free(b.recv);
    free(b.nrecv);
    free(b.crecv);
    free(b.frontier);
    free(b.out_last);
    mt_u64map_destroy(&b.conn);
    if (rc == MT_OK && chunks > 1) rc = replicate_chunks(s, chunks, err);
    if (rc != MT_OK) {
        mt_coll_free(s);
        return rc;
    }
    *out = s;
    return MT_OK;
}

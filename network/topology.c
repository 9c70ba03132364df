/* network/topology.c — see topology.h.
 *
 * Invariant: before freeze, nodes/links grow freely and `graph` is not initialised; after
 * freeze (first route, bisection or dot query), `graph` mirrors links[] (edge id == link id),
 * in_off/in_link (out_off/out_link) is the CSR of incoming (outgoing) links per node (in_link
 * made by the first graph search: structured routes never read it; NULL until then), and
 * dist[src] (when non-NULL) is one block: the shortest distances from src under the routing
 * metric, then two int32 arrays, per node the lowest-numbered in-link on a shortest path from src
 * and the number of such in-links; it is final up to distance dist_reach[src]. At most dist_cap
 * blocks are kept (the oldest is dropped first, dist_fifo); the routes computed from them stay
 * cached in `routes` (emptied whole once ROUTE_CACHE_BYTES are held). in_src holds every node's
 * in-links like in_link but ordered by source node, then link id (a structured route finds the
 * links u -> v by binary search in it). `graph` (igraph) is built only when a query needs it
 * (Dijkstra for the latency metric): hop routes and structured routes never reach igraph.
 * Structured routes are kept in the arena and the per-source ways only, not in `routes`.
 */
#include "network/topology.h"

#include <igraph.h>
#include <stdlib.h>
#include <string.h>

#include "util/hugemem.h"
#include "util/u64map.h"
#include "util/vec.h"

/* A source's latest routes, most recent first, in front of the route map: a GPU sends to a few
 * peers over and over (ring neighbours, pipeline peers), and one 96-byte entry of the source's own
 * beats a random probe of three arrays of a map of every pair (131,072 GPUs: 17 % of the run).
 * dst1 = destination + 1 (0: empty); off/len: the route in the arena; lat_ps: its latency. */
#define NEAR_WAYS 4
typedef struct near_route {
    struct {
        int32_t dst1, len;
        int64_t off;
        mt_time_ps lat_ps;
    } way[NEAR_WAYS];
} near_route;

struct mt_topo {
    char *label;
    int32_t nnodes;
    int64_t ncap;
    mt_node_kind *kind;
    char **name;       /* a given name, or NULL: made up from the kind (mt_topo_name) */
    int32_t *kidx;     /* per node: its index among the nodes of its kind */
    int32_t *by_kind[4];  /* per kind: node ids in kidx order */
    int64_t kcap[4];
    int32_t nnamed;    /* nodes with a given name */
    mt_u64map by_name; /* hash(given name) -> node id */
    mt_link *links;
    int32_t nlinks;
    int64_t lcap;
    int32_t *gpus;
    int32_t ngpus;
    int64_t gcap;
    int32_t counters[4]; /* per kind, for made-up names */

    mt_route_metric metric;
    int ecmp;
    int frozen;
    int has_graph;     /* `graph` built (lazily, for Dijkstra) */
    igraph_t graph;
    int32_t *in_off, *in_link, *in_src, *in_from; /* in_from[k]: the source node of in_src[k] */
    int32_t *out_off, *out_link;
    double **dist;
    int32_t *dist_fifo;   /* sources whose dist is held, oldest first (ring of dist_cap) */
    int32_t *dist_reach;  /* per source: dist is final up to this distance (INT32_MAX: all) */
    int32_t dist_cap, dist_n, dist_head;
    int32_t *bfs_queue;
    mt_u64map routes; /* src * nnodes + dst -> offset << 20 | len */
    near_route *near; /* per GPU source (by its index among GPUs), NEAR_WAYS of its latest
                       * destinations; NULL until used */
    near_route *near_node; /* the same per source that is no GPU (by node id); NULL until used */
    int32_t *arena;
    size_t alen, acap;
    int32_t *scratch;
    uint8_t *failed;   /* per link, NULL until the first failure */
    int32_t nfailed;

    mt_topo_preds_fn preds; /* structured router, or NULL */
    long shape[MT_ROUTER_SHAPE_MAX];
    int use_router;         /* 0: graph search only (tests) */
    int uniform_lat;        /* every link has the same latency (set at freeze) */
    int64_t n_structured, n_searched;
    /* translation symmetry (mt_topo_set_shift): units of sh_period nodes, link segments */
    int32_t sh_period, sh_units, sh_nseg, sh_lper[MT_SHIFT_SEGS_MAX];
    int sh_ok; /* 0: not checked yet, 1: the links keep it, -1: they do not */
    /* mt_topo_route_latency: the last pair whose shifts by [ls_kmin, ls_kmax] units the symmetry
     * vouched for (ls_ok), and its route's latency */
    int32_t ls_src, ls_dst, ls_kmin, ls_kmax;
    mt_time_ps ls_lat;
    int ls_ok;
};

static const char *kind_prefix[] = {"gpu", "nic", "host", "sw"};

const char *mt_node_kind_name(mt_node_kind k) {
    static const char *names[] = {"gpu", "nic", "host", "switch"};
    return (unsigned)k < 4 ? names[k] : "?";
}

mt_topo *mt_topo_new(const char *label) {
    mt_topo *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->label = strdup(label ? label : "topology");
    if (!t->label) {
        free(t);
        return NULL;
    }
    mt_u64map_init(&t->by_name);
    mt_u64map_init(&t->routes);
    t->use_router = 1;
    return t;
}

void mt_topo_free(mt_topo *t) {
    if (!t) return;
    for (int32_t i = 0; i < t->nnodes; i++) {
        free(t->name[i]);
        if (t->dist) free(t->dist[i]);
    }
    if (t->has_graph) igraph_destroy(&t->graph);
    free(t->dist);
    free(t->name);
    free(t->kidx);
    for (int k = 0; k < 4; k++) free(t->by_kind[k]);
    free(t->kind);
    free(t->links);
    free(t->gpus);
    free(t->in_off);
    free(t->in_link);
    free(t->in_src);
    free(t->in_from);
    free(t->out_off);
    free(t->out_link);
    free(t->dist_fifo);
    free(t->dist_reach);
    free(t->bfs_queue);
    free(t->arena);
    free(t->near);
    free(t->near_node);
    free(t->scratch);
    free(t->failed);
    free(t->label);
    mt_u64map_destroy(&t->by_name);
    mt_u64map_destroy(&t->routes);
    free(t);
}

/* Made-up names ("gpu12", "sw3": the kind's prefix and the node's index among its kind) are not
 * stored: 10^5-node presets would spend more on the strings and their map than on the rest of
 * the build. mt_topo_name prints them; mt_topo_find parses them. */
int32_t mt_topo_add_node(mt_topo *t, mt_node_kind kind, const char *name, mt_error *err) {
    if (t->frozen) {
        mt_fail(err, MT_EINTERNAL, "%s: nodes added after routing started", t->label);
        return -1;
    }
    if ((unsigned)kind > MT_NODE_SWITCH) {
        mt_fail(err, MT_EINVAL, "%s: bad node kind %d", t->label, (int)kind);
        return -1;
    }
    char made[32] = "";
    const char *shown = name ? name : made;
    /* a made-up name (printed only when needed) can only clash with a given one */
    if (!name && t->nnamed > 0) snprintf(made, sizeof made, "%s%d", kind_prefix[kind], (int)t->counters[kind]);
    if ((name || t->nnamed > 0) && mt_topo_find(t, shown) >= 0) {
        mt_fail(err, MT_EFORMAT, "%s: node '%s' defined twice (node names must be unique)",
                t->label, shown);
        return -1;
    }
    int64_t cap = t->ncap, cap2 = t->ncap;
    if (mt_vec_reserve(&t->kind, &cap, t->nnodes + 1) || mt_vec_reserve(&t->kidx, &cap2, t->nnodes + 1) ||
        mt_vec_reserve(&t->name, &t->ncap, t->nnodes + 1) ||
        mt_vec_reserve(&t->by_kind[kind], &t->kcap[kind], t->counters[kind] + 1) ||
        (kind == MT_NODE_GPU && mt_vec_reserve(&t->gpus, &t->gcap, t->ngpus + 1))) {
        if (!name) snprintf(made, sizeof made, "%s%d", kind_prefix[kind], (int)t->counters[kind]);
        mt_fail(err, MT_ENOMEM, "%s: out of memory adding node '%s'", t->label, shown);
        return -1;
    }
    int32_t id = t->nnodes;
    t->name[id] = NULL;
    if (name) {
        t->name[id] = strdup(name);
        if (!t->name[id] || mt_u64map_put(&t->by_name, mt_hash_str(name), id, err) != MT_OK) {
            free(t->name[id]);
            mt_fail(err, MT_ENOMEM, "%s: out of memory adding node '%s'", t->label, name);
            return -1;
        }
        t->nnamed++;
    }
    t->kind[id] = kind;
    t->kidx[id] = t->counters[kind];
    t->by_kind[kind][t->counters[kind]++] = id;
    t->nnodes++;
    if (kind == MT_NODE_GPU) t->gpus[t->ngpus++] = id;
    return id;
}

/* The node whose made-up name is `name` ("sw3": prefix, then a number without leading zeros),
 * or -1. */
static int32_t find_made_up(const mt_topo *t, const char *name) {
    for (int k = 0; k < 4; k++) {
        size_t n = strlen(kind_prefix[k]);
        if (strncmp(name, kind_prefix[k], n) != 0) continue;
        const char *d = name + n;
        if (*d < '0' || *d > '9' || (d[0] == '0' && d[1] != 0)) continue;
        int64_t idx = 0;
        for (; *d >= '0' && *d <= '9' && idx <= INT32_MAX; d++) idx = idx * 10 + (*d - '0');
        if (*d != 0 || idx >= t->counters[k]) continue;
        int32_t id = t->by_kind[k][idx];
        if (!t->name[id]) return id;
    }
    return -1;
}

int32_t mt_topo_find(const mt_topo *t, const char *name) {
    int64_t id;
    if (!name) return -1;
    /* a 64-bit hash collision would map two names to one id: confirm by name */
    if (t->nnamed > 0 && mt_u64map_get(&t->by_name, mt_hash_str(name), &id) && strcmp(t->name[id], name) == 0)
        return (int32_t)id;
    return find_made_up(t, name);
}

mt_status mt_topo_reserve(mt_topo *t, int64_t nodes, int64_t links, mt_error *err) {
    if (nodes < 0 || links < 0 || t->nnodes + nodes > INT32_MAX || t->nlinks + links > INT32_MAX)
        return mt_fail(err, MT_EINVAL, "%s: cannot hold %lld more nodes and %lld more links", t->label,
                       (long long)nodes, (long long)links);
    int64_t need = t->nnodes + nodes, cap = t->ncap, cap2 = t->ncap, had = t->lcap;
    int bad = mt_vec_reserve(&t->kind, &cap, need) || mt_vec_reserve(&t->kidx, &cap2, need) ||
              mt_vec_reserve(&t->name, &t->ncap, need) || mt_vec_reserve(&t->gpus, &t->gcap, t->ngpus + nodes) ||
              mt_vec_reserve(&t->links, &t->lcap, t->nlinks + links);
    for (int k = 0; k < 4 && !bad; k++) bad = mt_vec_reserve(&t->by_kind[k], &t->kcap[k], t->counters[k] + nodes);
    if (bad) return mt_fail(err, MT_ENOMEM, "%s: out of memory for %lld nodes and %lld links", t->label,
                            (long long)need, (long long)(t->nlinks + links));
    if (t->lcap != had) mt_hugemem_advise(t->links, (size_t)t->lcap * sizeof *t->links);
    return MT_OK;
}

int32_t mt_topo_add_link(mt_topo *t, int32_t src, int32_t dst, double bw_Bps, mt_time_ps lat_ps,
                         mt_error *err) {
    if (t->frozen) {
        mt_fail(err, MT_EINTERNAL, "%s: links added after routing started", t->label);
        return -1;
    }
    if (src < 0 || src >= t->nnodes || dst < 0 || dst >= t->nnodes || src == dst) {
        mt_fail(err, MT_EINVAL, "%s: link %d -> %d joins no two distinct nodes", t->label,
                (int)src, (int)dst);
        return -1;
    }
    if (!(bw_Bps > 0) || bw_Bps > 1e18 || lat_ps < 0 || lat_ps > MT_LINK_LAT_MAX_PS) {
        mt_fail(err, MT_EINVAL,
                "%s: link %s -> %s needs a bandwidth of 0 to 1e18 B/s and a latency of 0 to 1 s "
                "(got %g B/s, %lld ps)", t->label, mt_topo_name(t, src), mt_topo_name(t, dst), bw_Bps, (long long)lat_ps);
        return -1;
    }
    int64_t had = t->lcap;
    if (mt_vec_reserve(&t->links, &t->lcap, t->nlinks + 1)) {
        mt_fail(err, MT_ENOMEM, "%s: out of memory adding a link", t->label);
        return -1;
    }
    if (t->lcap != had) mt_hugemem_advise(t->links, (size_t)t->lcap * sizeof *t->links); /* grown */
    t->links[t->nlinks] = (mt_link){src, dst, bw_Bps, lat_ps};
    return t->nlinks++;
}

mt_status mt_topo_add_duplex(mt_topo *t, int32_t a, int32_t b, double bw_Bps, mt_time_ps lat_ps,
                             mt_error *err) {
    if (mt_topo_add_link(t, a, b, bw_Bps, lat_ps, err) < 0) return err ? err->code : MT_EINVAL;
    if (mt_topo_add_link(t, b, a, bw_Bps, lat_ps, err) < 0) return err ? err->code : MT_EINVAL;
    return MT_OK;
}

int32_t mt_topo_nnodes(const mt_topo *t) { return t->nnodes; }
int32_t mt_topo_nlinks(const mt_topo *t) { return t->nlinks; }
const mt_link *mt_topo_link(const mt_topo *t, int32_t id) { return &t->links[id]; }
mt_link *mt_topo_link_mut(mt_topo *t, int32_t id) { return t->frozen ? NULL : &t->links[id]; }
mt_node_kind mt_topo_kind(const mt_topo *t, int32_t node) { return t->kind[node]; }
const char *mt_topo_name(const mt_topo *t, int32_t node) {
    if (t->name[node]) return t->name[node];
    static _Thread_local char ring[8][32]; /* a made-up name: valid for the next 7 calls */
    static _Thread_local unsigned next;
    char *b = ring[next++ % 8];
    snprintf(b, sizeof ring[0], "%s%d", kind_prefix[t->kind[node]], (int)t->kidx[node]);
    return b;
}
const char *mt_topo_label(const mt_topo *t) { return t->label; }
const int32_t *mt_topo_gpus(const mt_topo *t, int32_t *n) {
    *n = t->ngpus;
    return t->gpus;
}

void mt_topo_set_routing(mt_topo *t, mt_route_metric metric, int ecmp) {
    if (t->frozen) return;
    t->metric = metric;
    t->ecmp = ecmp;
}

/* Distance arrays kept at once: 32 MiB of them, at least 16. */
#define DIST_CACHE_BYTES (32u << 20)

/* A CSR's link lists from its offsets off (build_csr); fill has V entries of scratch. O(V + E). */
static void fill_csr(const mt_topo *t, int by_dst, const int32_t *off, int32_t *link, int32_t *fill) {
    memcpy(fill, off, (size_t)t->nnodes * sizeof *fill);
    for (int32_t i = 0; i < t->nlinks; i++) link[fill[by_dst ? t->links[i].dst : t->links[i].src]++] = i;
}

/* in_link, made by the first graph search (ECMP reads it; 6.3 M links at 2^20 GPUs that structured
 * routes never read). Uses scratch. */
static mt_status ensure_in_link(mt_topo *t, mt_error *err) {
    if (t->in_link) return MT_OK;
    if (!(t->in_link = malloc(((size_t)t->nlinks + 1) * sizeof *t->in_link)))
        return mt_fail(err, MT_ENOMEM, "%s: out of memory building routes", t->label);
    fill_csr(t, 1, t->in_off, t->in_link, t->scratch);
    return MT_OK;
}

/* The links grouped by one end (by_dst: their destination, else their source) as a CSR: the
 * links of node v are link[off[v] .. off[v+1]), in link-id order. off is zeroed, fill has V
 * entries of scratch. O(V + E). */
static void build_csr(const mt_topo *t, int by_dst, int32_t *off, int32_t *link, int32_t *fill) {
    for (int32_t i = 0; i < t->nlinks; i++) off[(by_dst ? t->links[i].dst : t->links[i].src) + 1]++;
    for (int32_t v = 0; v < t->nnodes; v++) off[v + 1] += off[v];
    if (link) fill_csr(t, by_dst, off, link, fill); /* NULL: the offsets only */
}

/* The igraph mirror of the links (edge id == link id), built on first need. O(V + E). */
static mt_status ensure_graph(mt_topo *t, mt_error *err) {
    if (t->has_graph) return MT_OK;
    igraph_vector_int_t edges;
    if (igraph_vector_int_init(&edges, 2 * (igraph_integer_t)t->nlinks) != IGRAPH_SUCCESS)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory building the graph", t->label);
    for (int32_t i = 0; i < t->nlinks; i++) {
        VECTOR(edges)[2 * i] = t->links[i].src;
        VECTOR(edges)[2 * i + 1] = t->links[i].dst;
    }
    igraph_error_t rc = igraph_create(&t->graph, &edges, t->nnodes, IGRAPH_DIRECTED);
    igraph_vector_int_destroy(&edges);
    if (rc != IGRAPH_SUCCESS)
        return mt_fail(err, MT_ENOMEM, "%s: igraph could not build the graph (%s)", t->label,
                       igraph_strerror(rc));
    t->has_graph = 1;
    return MT_OK;
}

/* in_src: per node its in-links by source node, then link id (walks the sources in order). */
static void build_in_src(mt_topo *t, int32_t *fill) {
    memcpy(fill, t->in_off, (size_t)t->nnodes * sizeof *fill);
    for (int32_t u = 0; u < t->nnodes; u++)
        for (int32_t k = t->out_off[u]; k < t->out_off[u + 1]; k++) {
            int32_t l = t->out_link[k], at = fill[t->links[l].dst]++;
            t->in_src[at] = l;
            t->in_from[at] = u;
        }
}

/* Builds the incoming- and outgoing-link CSRs and the route caches. O(V + E). */
static mt_status freeze(mt_topo *t, mt_error *err) {
    if (t->frozen) return MT_OK;
    if (t->nnodes == 0) return mt_fail(err, MT_EINVAL, "%s: the topology has no nodes", t->label);
    t->in_off = calloc((size_t)t->nnodes + 1, sizeof *t->in_off);
    t->in_src = malloc(((size_t)t->nlinks + 1) * sizeof *t->in_src);
    t->in_from = malloc(((size_t)t->nlinks + 1) * sizeof *t->in_from);
    t->dist = calloc((size_t)t->nnodes, sizeof *t->dist);
    t->scratch = malloc(((size_t)t->nnodes + 1) * sizeof *t->scratch);
    t->out_off = calloc((size_t)t->nnodes + 1, sizeof *t->out_off);
    t->out_link = malloc(((size_t)t->nlinks + 1) * sizeof *t->out_link);
    t->bfs_queue = malloc(((size_t)t->nnodes + 1) * sizeof *t->bfs_queue);
    size_t per = (size_t)t->nnodes * (sizeof(double) + 2 * sizeof(int32_t));
    t->dist_cap = (int32_t)(DIST_CACHE_BYTES / per < 16 ? 16 : DIST_CACHE_BYTES / per);
    if (t->dist_cap > t->nnodes) t->dist_cap = t->nnodes;
    t->dist_fifo = malloc((size_t)t->dist_cap * sizeof *t->dist_fifo);
    t->dist_reach = calloc((size_t)t->nnodes, sizeof *t->dist_reach);
    if (!t->in_off || !t->in_src || !t->in_from || !t->dist || !t->scratch || !t->out_off || !t->out_link ||
        !t->bfs_queue || !t->dist_fifo || !t->dist_reach)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory building routes", t->label);
    size_t lb = ((size_t)t->nlinks + 1) * sizeof(int32_t); /* huge pages: 6.3 M links at 2^20 GPUs */
    mt_hugemem_advise(t->in_src, lb);
    mt_hugemem_advise(t->in_from, lb);
    mt_hugemem_advise(t->out_link, lb);
    build_csr(t, 1, t->in_off, NULL, t->scratch);
    build_csr(t, 0, t->out_off, t->out_link, t->scratch);
    build_in_src(t, t->scratch);
    t->uniform_lat = 1;
    for (int32_t i = 1; i < t->nlinks; i++)
        if (t->links[i].lat_ps != t->links[0].lat_ps) t->uniform_lat = 0;
    t->frozen = 1;
    return MT_OK;
}

/* Link weight under the metric: hop = 1; latency = lat * 1024 + 1 (integers, exact in double;
 * the +1 keeps zero-latency links from forming zero-weight cycles and prefers fewer hops). */
static double weight(const mt_topo *t, int32_t link) {
    if (t->failed && t->failed[link]) return IGRAPH_INFINITY;
    return t->metric == MT_ROUTE_HOPS ? 1.0 : (double)t->links[link].lat_ps * 1024.0 + 1.0;
}

/* Hop distances from src by breadth-first search over the outgoing-link CSR (failed links left
 * out), with each node's shortest-path in-links counted (ncand) and the lowest-numbered one kept
 * (first) as they are found. It stops once the level holding dst is reached: the distances and
 * in-links of every node up to that level are then final, which *reach records (INT32_MAX when
 * the search ran to the end; unreached nodes stay IGRAPH_INFINITY). Done here because
 * igraph_distances rebuilds an adjacency list on every call (O(V + E) allocations per source),
 * which made routing a ring over 8192 GPUs take seconds; the early stop makes a route inside a
 * node cost its neighbourhood, not the whole fabric. O(V + E) at most, no allocation. */
static void bfs_hops(const mt_topo *t, int32_t src, int32_t dst, double *d, int32_t *first, int32_t *ncand,
                     int32_t *reach) {
    for (int32_t v = 0; v < t->nnodes; v++) d[v] = IGRAPH_INFINITY, first[v] = -1, ncand[v] = 0;
    int32_t *q = t->bfs_queue, head = 0, tail = 0;
    d[src] = 0;
    q[tail++] = src;
    *reach = INT32_MAX;
    while (head < tail) {
        double level = d[q[head]];
        if (d[dst] <= level) { /* every node of dst's level has all its in-links */
            *reach = (int32_t)level;
            return;
        }
        for (int32_t end = tail; head < end; head++) {
            int32_t u = q[head];
            for (int32_t k = t->out_off[u]; k < t->out_off[u + 1]; k++) {
                int32_t l = t->out_link[k], v = t->links[l].dst;
                if (t->failed && t->failed[l]) continue;
                if (d[v] == IGRAPH_INFINITY) {
                    d[v] = level + 1;
                    first[v] = l;
                    ncand[v] = 1;
                    q[tail++] = v;
                } else if (d[v] == level + 1) {
                    ncand[v]++;
                    if (l < first[v]) first[v] = l;
                }
            }
        }
    }
}

/* Weighted distances from src (the latency metric) with igraph's Dijkstra. */
static mt_status dijkstra(mt_topo *t, int32_t src, double *d, mt_error *err) {
    MT_CHECK(ensure_graph(t, err));
    igraph_matrix_t res;
    igraph_vector_t w;
    igraph_error_t rc = igraph_matrix_init(&res, 0, 0);
    if (rc == IGRAPH_SUCCESS) {
        rc = igraph_vector_init(&w, t->nlinks);
        if (rc == IGRAPH_SUCCESS) {
            for (int32_t i = 0; i < t->nlinks; i++) VECTOR(w)[i] = weight(t, i);
            rc = igraph_distances_dijkstra(&t->graph, &res, igraph_vss_1(src), igraph_vss_all(), &w, IGRAPH_OUT);
            igraph_vector_destroy(&w);
        }
        if (rc == IGRAPH_SUCCESS)
            for (int32_t v = 0; v < t->nnodes; v++) d[v] = MATRIX(res, 0, v);
        igraph_matrix_destroy(&res);
    }
    if (rc != IGRAPH_SUCCESS)
        return mt_fail(err, MT_ENOMEM, "%s: igraph shortest paths failed (%s)", t->label, igraph_strerror(rc));
    return MT_OK;
}

/* Makes dist[src] valid for the route to dst (see bfs_hops for partial searches). */
static mt_status distances_from(mt_topo *t, int32_t src, int32_t dst, mt_error *err) {
    double *d = t->dist[src];
    if (d && (d[dst] <= t->dist_reach[src] || t->dist_reach[src] == INT32_MAX)) return MT_OK;
    if (!d) {
        if (t->dist_n == t->dist_cap) { /* reuse the oldest source's arrays */
            int32_t old = t->dist_fifo[t->dist_head];
            d = t->dist[old];
            t->dist[old] = NULL;
            t->dist_head = (t->dist_head + 1) % t->dist_cap;
            t->dist_n--;
        } else if (!(d = malloc((size_t)t->nnodes * (sizeof *d + 2 * sizeof(int32_t))))) {
            return mt_fail(err, MT_ENOMEM, "%s: out of memory computing routes", t->label);
        }
        t->dist[src] = d;
        t->dist_fifo[(t->dist_head + t->dist_n) % t->dist_cap] = src;
        t->dist_n++;
    }
    int32_t *first = (int32_t *)(d + t->nnodes), *ncand = first + t->nnodes;
    if (t->metric == MT_ROUTE_HOPS) {
        bfs_hops(t, src, dst, d, first, ncand, &t->dist_reach[src]);
        return MT_OK;
    }
    t->dist_reach[src] = INT32_MAX;
    if (dijkstra(t, src, d, err) != MT_OK) {
        for (int32_t v = 0; v < t->nnodes; v++) d[v] = IGRAPH_INFINITY;
        t->dist_reach[src] = -1; /* recomputed on the next query */
        return err ? err->code : MT_ENOMEM;
    }
    /* Every node's shortest-path in-links from src: the lowest-numbered one and how many. */
    for (int32_t v = 0; v < t->nnodes; v++) first[v] = -1, ncand[v] = 0;
    for (int32_t l = 0; l < t->nlinks; l++) {
        int32_t u = t->links[l].src, v = t->links[l].dst;
        if (d[v] == IGRAPH_INFINITY || d[u] + weight(t, l) != d[v]) continue;
        if (ncand[v]++ == 0) first[v] = l;
    }
    return MT_OK;
}

const char *mt_topo_link_name(const mt_topo *t, int32_t link, char *buf, size_t len) {
    if (link < 0 || link >= t->nlinks) snprintf(buf, len, "link %d", (int)link);
    else snprintf(buf, len, "%s->%s", mt_topo_name(t, t->links[link].src), mt_topo_name(t, t->links[link].dst));
    return buf;
}

/* Comma-separated names of the failed links (the first few) into buf. */
static void failed_names(const mt_topo *t, char *buf, size_t len) {
    size_t at = 0;
    int shown = 0;
    buf[0] = 0;
    for (int32_t l = 0; l < t->nlinks && at + 80 < len; l++) {
        if (!t->failed[l]) continue;
        if (shown == 4) {
            snprintf(buf + at, len - at, ", ...");
            return;
        }
        char one[160];
        at += (size_t)snprintf(buf + at, len - at, "%s%s", shown++ ? ", " : "",
                               mt_topo_link_name(t, l, one, sizeof one));
    }
}

/* Empties the route cache (map, arena and the per-source ways). O(V). */
static void forget_routes(mt_topo *t) {
    t->ls_ok = 0;
    mt_u64map_destroy(&t->routes);
    mt_u64map_init(&t->routes);
    t->alen = 0;
    if (t->near) memset(t->near, 0, (size_t)t->ngpus * sizeof *t->near);
    if (t->near_node) memset(t->near_node, 0, (size_t)t->nnodes * sizeof *t->near_node);
}

/* Forgets every cached route and distance (after a failure or repair). O(V). */
static void drop_routes(mt_topo *t) {
    for (int32_t v = 0; t->dist && v < t->nnodes; v++) {
        free(t->dist[v]);
        t->dist[v] = NULL;
    }
    t->dist_n = t->dist_head = 0;
    forget_routes(t);
}

mt_status mt_topo_set_link_failed(mt_topo *t, int32_t link, int failed, mt_error *err) {
    if (link < 0 || link >= t->nlinks)
        return mt_fail(err, MT_EINVAL, "%s: no link %d to fail", t->label, (int)link);
    MT_CHECK(freeze(t, err));
    if (!t->failed && !(t->failed = calloc((size_t)t->nlinks + 1, 1)))
        return mt_fail(err, MT_ENOMEM, "%s: out of memory failing a link", t->label);
    failed = failed != 0;
    if (t->failed[link] == failed) return MT_OK;
    t->failed[link] = (uint8_t)failed;
    t->nfailed += failed ? 1 : -1;
    drop_routes(t);
    return MT_OK;
}

int mt_topo_link_failed(const mt_topo *t, int32_t link) {
    return t->failed && link >= 0 && link < t->nlinks && t->failed[link];
}

/* Looks up a node name for a selector; message names the selector. */
static int32_t sel_node(const mt_topo *t, const char *sel, const char *name, size_t len, mt_error *err) {
    char buf[128];
    if (len == 0 || len >= sizeof buf) {
        mt_fail(err, MT_EINVAL, "%s: bad link selector '%s' (use A->B, A<->B or a node name)", t->label, sel);
        return -1;
    }
    memcpy(buf, name, len);
    buf[len] = 0;
    int32_t id = mt_topo_find(t, buf);
    if (id < 0)
        mt_fail(err, MT_EINVAL, "%s: link selector '%s' names no node '%s' (mitosis topo SPEC --dot - "
                "lists the nodes)", t->label, sel, buf);
    return id;
}

mt_status mt_topo_select_links(const mt_topo *t, const char *sel, int32_t **out, int32_t *n,
                               mt_error *err) {
    *out = NULL;
    *n = 0;
    const char *arrow = strstr(sel, "->");
    int both = 0;
    int32_t a, b = -1;
    if (arrow && arrow > sel && arrow[-1] == '<') {
        both = 1;
        a = sel_node(t, sel, sel, (size_t)(arrow - 1 - sel), err);
    } else if (arrow && arrow - sel == 1 && sel[0] == '*') {
        a = -2;
    } else if (arrow) {
        a = sel_node(t, sel, sel, (size_t)(arrow - sel), err);
    } else {
        a = sel_node(t, sel, sel, strlen(sel), err);
    }
    int any_src = arrow && !both && arrow - sel == 1 && sel[0] == '*', any_dst = arrow && !both && !strcmp(arrow + 2, "*");
    if (any_src) a = -2;
    else if (a < 0) return err ? err->code : MT_EINVAL;
    if (any_dst) b = -2;
    else if (arrow && (b = sel_node(t, sel, arrow + 2, strlen(arrow + 2), err)) < 0) return err ? err->code : MT_EINVAL;
    if (any_src && any_dst) return mt_fail(err, MT_EINVAL, "%s: link selector '%s' names no node", t->label, sel);
    int32_t *ids = malloc(((size_t)t->nlinks + 1) * sizeof *ids);
    if (!ids) return mt_fail(err, MT_ENOMEM, "%s: out of memory selecting links", t->label);
    int32_t k = 0;
    for (int32_t l = 0; l < t->nlinks; l++) {
        const mt_link *L = &t->links[l];
        int hit = any_src ? L->dst == b
                  : any_dst ? L->src == a
                  : b < 0 ? (L->src == a || L->dst == a)
                          : ((L->src == a && L->dst == b) || (both && L->src == b && L->dst == a));
        if (hit) ids[k++] = l;
    }
    if (k == 0) {
        free(ids);
        return mt_fail(err, MT_EINVAL, "%s: link selector '%s' matches no link (mitosis topo SPEC "
                       "--dot - lists them)", t->label, sel);
    }
    *out = ids;
    *n = k;
    return MT_OK;
}

void mt_topo_set_router(mt_topo *t, mt_topo_preds_fn preds, const long *shape, int nshape) {
    t->preds = preds;
    memset(t->shape, 0, sizeof t->shape);
    for (int i = 0; i < nshape && i < MT_ROUTER_SHAPE_MAX; i++) t->shape[i] = shape[i];
}

void mt_topo_use_router(mt_topo *t, int on) { t->use_router = on != 0; }
int mt_topo_has_router(const mt_topo *t) { return t->preds && t->use_router; }

void mt_topo_route_counts(const mt_topo *t, int64_t *structured, int64_t *searched) {
    *structured = t->n_structured;
    *searched = t->n_searched;
}

/* Which of ncand equal-cost in-links of `at` the pair with hash pairhash takes under ECMP. */
static int32_t ecmp_index(uint64_t pairhash, int32_t at, int32_t ncand) {
    return (int32_t)(mt_hash64(pairhash ^ (uint64_t)at) % (uint64_t)ncand);
}

/* Appends the links u -> v (ascending ids, failed ones too) to out (room entries); returns how
 * many. A scan of v's few in-links' sources (one cache line, no link read: a route's GPUs, NICs
 * and NVSwitches), else of u's few out-links, else a binary search in v's in-links by source:
 * O(min(in-degree(v), out-degree(u), log in-degree(v)) + matches). */
static int32_t links_between(const mt_topo *t, int32_t u, int32_t v, int32_t *out, int32_t room) {
    int32_t n = 0, lo = t->in_off[v], hi = t->in_off[v + 1];
    if (hi - lo <= 8) { /* few in-links: in_from's sources side by side (no link read) */
        for (; lo < hi && n < room; lo++)
            if (t->in_from[lo] == u) out[n++] = t->in_src[lo];
        return n;
    }
    if (t->out_off[u + 1] - t->out_off[u] <= 8) {
        for (int32_t k = t->out_off[u]; k < t->out_off[u + 1] && n < room; k++)
            if (t->links[t->out_link[k]].dst == v) out[n++] = t->out_link[k];
        return n;
    }
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (t->in_from[mid] < u) lo = mid + 1;
        else hi = mid;
    }
    for (; lo < t->in_off[v + 1] && t->in_from[lo] == u && n < room; lo++) out[n++] = t->in_src[lo];
    return n;
}

/* 1 when the router's answer equals the graph search's for this pair (see topology.h). */
static int router_applies(const mt_topo *t, int32_t src, int32_t dst) {
    return t->preds && t->use_router && t->nfailed == 0 && t->kind[src] == MT_NODE_GPU &&
           t->kind[dst] == MT_NODE_GPU && (t->metric == MT_ROUTE_HOPS || t->uniform_lat);
}

/* The route read backwards from dst over the router's predecessors, choosing among the candidate
 * in-links (ascending ids) as mt_topo_route's graph search does. Writes it into scratch backwards
 * (scratch[0] enters dst), as the search does; returns 0 when the router declines (the graph
 * search answers). O(hops x (preds x log degree + cands^2)). */
static int structured_route(mt_topo *t, int32_t src, int32_t dst, uint64_t pairhash, int32_t *nout, int *hashed) {
    enum { CAND_MAX = 2 * MT_ROUTER_PREDS_MAX };
    int32_t pred[MT_ROUTER_PREDS_MAX], cand[CAND_MAX], from[CAND_MAX], n = 0, at = dst;
    while (at != src) {
        int32_t np = t->preds(t->shape, src, at, pred), nc = 0;
        if (np <= 0 || np > MT_ROUTER_PREDS_MAX || n >= t->nnodes) return 0;
        for (int32_t i = 0; i < np; i++) {
            if (pred[i] < 0 || pred[i] >= t->nnodes) return 0;
            int32_t k = links_between(t, pred[i], at, cand + nc, CAND_MAX - nc);
            for (int32_t j = nc; j < nc + k; j++) from[j] = pred[i]; /* the link's source: not read back */
            nc += k;
        }
        if (nc == 0) return 0;
        for (int32_t i = 1; i < nc; i++) /* insertion sort: a handful of candidates */
            for (int32_t j = i; j > 0 && cand[j - 1] > cand[j]; j--) {
                int32_t x = cand[j], y = from[j];
                cand[j] = cand[j - 1], from[j] = from[j - 1];
                cand[j - 1] = x, from[j - 1] = y;
            }
        int32_t pick = (!t->ecmp || nc <= 1) ? 0 : ecmp_index(pairhash, at, nc);
        if (hashed && t->ecmp && nc > 1) *hashed = 1;
        t->scratch[n++] = cand[pick];
        at = from[pick];
    }
    *nout = n;
    return 1;
}

/* Cached routes held at most (arena and table); the cache is emptied whole when full. */
#define ROUTE_CACHE_BYTES (64u << 20)

/* Caches the route scratch[0..n) (read backwards: scratch[n-1] leaves src) in the arena, and for
 * key in the map unless key is 0 (a structured route: computing it again costs less than the map,
 * 2^20 ring pairs each asked once). */
static mt_status cache_route(mt_topo *t, uint64_t key, int32_t n, const int32_t **links, mt_error *err) {
    if ((t->alen + (size_t)n) * sizeof *t->arena + t->routes.cap * 17 > ROUTE_CACHE_BYTES) forget_routes(t);
    if (t->alen + (size_t)n > t->acap) {
        size_t ncap = t->acap ? t->acap * 2 : 4096;
        while (ncap < t->alen + (size_t)n) ncap *= 2;
        int32_t *na = realloc(t->arena, ncap * sizeof *na);
        if (!na) return mt_fail(err, MT_ENOMEM, "%s: out of memory caching routes", t->label);
        t->arena = na;
        t->acap = ncap;
    }
    int32_t *out = t->arena + t->alen;
    for (int32_t i = 0; i < n; i++) out[i] = t->scratch[n - 1 - i];
    if (key) MT_CHECK(mt_u64map_put(&t->routes, key, (int64_t)(t->alen << 20) | n, err));
    t->alen += (size_t)n;
    *links = out;
    return MT_OK;
}

/* MT_ENOROUTE for an unreachable dst, naming the failed links when there are some. */
static mt_status no_route(const mt_topo *t, int32_t src, int32_t dst, mt_error *err) {
    if (t->nfailed > 0) {
        char names[400];
        failed_names(t, names, sizeof names);
        return mt_fail(err, MT_ENOROUTE, "%s: no route from %s to %s once link%s %s failed (the "
                       "failure cuts them apart: fail fewer links or pick a topology with "
                       "another path)", t->label, mt_topo_name(t, src), mt_topo_name(t, dst),
                       t->nfailed > 1 ? "s" : "", names);
    }
    return mt_fail(err, MT_ENOROUTE,
                   "%s: no route from %s to %s (check that the links connect them in this "
                   "direction)", t->label, mt_topo_name(t, src), mt_topo_name(t, dst));
}

/* The route as mt_topo_route, from the map or computed (and cached). */
static mt_status route_slow(mt_topo *t, int32_t src, int32_t dst, const int32_t **links,
                            int32_t *nlinks, mt_error *err) {
    uint64_t key = (uint64_t)src * (uint64_t)t->nnodes + (uint64_t)dst;
    int64_t v;
    /* the router answers a pair the same way every time: its routes are not in the map */
    if (router_applies(t, src, dst) && structured_route(t, src, dst, mt_hash64(key), nlinks, NULL)) {
        t->n_structured++;
        return cache_route(t, 0, *nlinks, links, err);
    }
    if (mt_u64map_get(&t->routes, key, &v)) { /* a pair seen before: the same route */
        *links = t->arena + (v >> 20);
        *nlinks = (int32_t)(v & 0xfffff);
        return MT_OK;
    }
    MT_CHECK(ensure_in_link(t, err));
    MT_CHECK(distances_from(t, src, dst, err));
    t->n_searched++;
    const double *d = t->dist[src];
    const int32_t *first = (const int32_t *)(d + t->nnodes), *ncands = first + t->nnodes;
    if (d[dst] == IGRAPH_INFINITY) return no_route(t, src, dst, err);
    int32_t n = 0, at = dst;
    uint64_t pairhash = mt_hash64(key);
    while (at != src) {
        int32_t ncand = ncands[at], pick = -1;
        if (!t->ecmp || ncand <= 1) {
            pick = first[at];
        } else { /* ECMP: the hash picks one of the equal-cost in-links, in link order */
            int32_t want = ecmp_index(pairhash, at, ncand);
            for (int32_t k = t->in_off[at]; k < t->in_off[at + 1] && pick < 0; k++) {
                int32_t l = t->in_link[k];
                if (d[t->links[l].src] + weight(t, l) == d[at] && want-- == 0) pick = l;
            }
        }
        if (pick < 0 || n >= t->nnodes)
            return mt_fail(err, MT_EINTERNAL, "%s: route reconstruction failed at %s", t->label,
                           mt_topo_name(t, at));
        t->scratch[n++] = pick;
        at = t->links[pick].src;
    }
    MT_CHECK(cache_route(t, key, n, links, err));
    *nlinks = n;
    return MT_OK;
}

mt_status mt_topo_route_lat(mt_topo *t, int32_t src, int32_t dst, const int32_t **links,
                            int32_t *nlinks, mt_time_ps *lat_ps, mt_error *err) {
    if (!t->frozen) MT_CHECK(freeze(t, err));
    if (src < 0 || src >= t->nnodes || dst < 0 || dst >= t->nnodes)
        return mt_fail(err, MT_EINVAL, "%s: route between unknown nodes %d and %d", t->label,
                       (int)src, (int)dst);
    /* GPUs' entries side by side (a preset numbers NICs and switches between them) */
    int gpu = t->kind[src] == MT_NODE_GPU;
    near_route **tab = gpu ? &t->near : &t->near_node;
    size_t cnt = gpu ? (size_t)t->ngpus : (size_t)t->nnodes;
    if (!*tab) {
        if (!(*tab = calloc(cnt, sizeof **tab)))
            return mt_fail(err, MT_ENOMEM, "%s: out of memory caching routes", t->label);
        mt_hugemem_advise(*tab, cnt * sizeof **tab);
    }
    near_route *nr = &(*tab)[gpu ? t->kidx[src] : src];
    for (int w = 0; w < NEAR_WAYS; w++)
        if (nr->way[w].dst1 == dst + 1) {
            *links = t->arena + nr->way[w].off;
            *nlinks = nr->way[w].len;
            if (lat_ps) *lat_ps = nr->way[w].lat_ps;
            return MT_OK;
        }
    MT_CHECK(route_slow(t, src, dst, links, nlinks, err));
    memmove(&nr->way[1], &nr->way[0], (NEAR_WAYS - 1) * sizeof nr->way[0]); /* the oldest goes */
    nr->way[0].dst1 = dst + 1;
    nr->way[0].len = *nlinks;
    nr->way[0].off = *links - t->arena;
    nr->way[0].lat_ps = mt_topo_path_latency(t, *links, *nlinks);
    if (lat_ps) *lat_ps = nr->way[0].lat_ps;
    return MT_OK;
}

mt_status mt_topo_route_once(mt_topo *t, int32_t src, int32_t dst, int32_t *buf, int32_t cap, int32_t *nlinks,
                             mt_time_ps *lat_ps, mt_error *err) {
    if (!t->frozen) MT_CHECK(freeze(t, err));
    const int32_t *links;
    int32_t n;
    if (src >= 0 && src < t->nnodes && dst >= 0 && dst < t->nnodes && router_applies(t, src, dst) &&
        structured_route(t, src, dst, mt_hash64((uint64_t)src * (uint64_t)t->nnodes + (uint64_t)dst), &n, NULL)) {
        t->n_structured++;
        if (n > cap) return mt_fail(err, MT_EINVAL, "%s: a route of %d links, more than %d", t->label, (int)n, (int)cap);
        for (int32_t i = 0; i < n; i++) buf[i] = t->scratch[n - 1 - i]; /* scratch holds it backwards */
    } else {
        MT_CHECK(mt_topo_route_lat(t, src, dst, &links, &n, NULL, err));
        if (n > cap) return mt_fail(err, MT_EINVAL, "%s: a route of %d links, more than %d", t->label, (int)n, (int)cap);
        if (n > 0) memcpy(buf, links, (size_t)n * sizeof *buf); /* an empty route's links may be NULL */
    }
    *nlinks = n;
    if (lat_ps) *lat_ps = mt_topo_path_latency(t, buf, n);
    return MT_OK;
}

/* ---- translation symmetry ---- */

void mt_topo_set_shift(mt_topo *t, int32_t period, int32_t nunits, int nseg, const int32_t *lper) {
    t->sh_period = period, t->sh_units = nunits, t->sh_ok = 0, t->ls_ok = 0;
    t->sh_nseg = nseg > 0 && nseg <= MT_SHIFT_SEGS_MAX ? nseg : 0;
    for (int s = 0; s < t->sh_nseg; s++) t->sh_lper[s] = lper[s];
}

/* Node n of unit 0 (or fixed) in unit u. */
static int32_t shift_node(const mt_topo *t, int32_t n, int32_t u) {
    return n < (int64_t)t->sh_period * t->sh_units ? n + u * t->sh_period : n;
}

/* Base link b (unit 0 of its segment) joins unit 0 to unit 0 or to a fixed node. */
static int shift_base_ok(const mt_topo *t, const mt_link *x, int64_t span) {
    int s0 = x->src < t->sh_period, d0 = x->dst < t->sh_period;
    return (s0 || x->src >= span) && (d0 || x->dst >= span) && (s0 || d0);
}

/* 1 when the declared symmetry holds for the frozen links (checked once, O(nodes + links)):
 * unit u's nodes have unit 0's kinds, and link u * lper + b of each segment joins unit 0's base
 * link b's ends shifted by u units, with its bandwidth and latency; the segments cover every link. */
static int shift_holds(mt_topo *t) {
    if (t->sh_ok) return t->sh_ok > 0;
    t->sh_ok = -1;
    int64_t span = (int64_t)t->sh_period * t->sh_units, start = 0;
    if (t->sh_period <= 0 || t->sh_units < 1 || span > t->nnodes) return 0;
    for (int64_t n = t->sh_period; n < span; n++)
        if (t->kind[n] != t->kind[n % t->sh_period]) return 0;
    for (int s = 0; s < t->sh_nseg; s++) {
        int64_t p = t->sh_lper[s];
        if (p <= 0 || start + p * t->sh_units > t->nlinks) return 0;
        for (int64_t b = 0; b < p; b++)
            if (!shift_base_ok(t, &t->links[start + b], span)) return 0;
        for (int32_t u = 1; u < t->sh_units; u++)
            for (int64_t b = 0; b < p; b++) {
                const mt_link *x = &t->links[start + b], *y = &t->links[start + u * p + b];
                if (y->src != shift_node(t, x->src, u) || y->dst != shift_node(t, x->dst, u) ||
                    y->bw_Bps != x->bw_Bps || y->lat_ps != x->lat_ps)
                    return 0;
            }
        start += p * t->sh_units;
    }
    if (t->sh_nseg == 0 || start != t->nlinks) return 0;
    t->sh_ok = 1;
    return 1;
}

int mt_topo_shift_units(const mt_topo *t, int32_t a, int32_t b, int32_t *k) {
    int64_t span = (int64_t)t->sh_period * t->sh_units;
    if (t->sh_nseg == 0 || t->sh_period <= 0 || a < 0 || b < 0 || a >= span || b >= span ||
        a % t->sh_period != b % t->sh_period)
        return 0;
    *k = b / t->sh_period - a / t->sh_period;
    return 1;
}

/* Link l's unit; *lper gets its segment's links per unit. */
static int32_t link_unit(const mt_topo *t, int32_t l, int32_t *lper) {
    int64_t start = 0;
    int s = 0;
    while (l >= start + (int64_t)t->sh_lper[s] * t->sh_units) start += (int64_t)t->sh_lper[s++] * t->sh_units;
    *lper = t->sh_lper[s];
    return (int32_t)((l - start) / t->sh_lper[s]);
}

/* The units r0 (the route of src -> dst, n links) spans, [*umin, *umax], when the symmetry vouches
 * for its shifts (see mt_topo_route_shifted); step[h] (when not NULL) gets hop h's links per unit. */
static int shift_span(mt_topo *t, int32_t src, int32_t dst, const int32_t *r0, int32_t n, int32_t *step,
                      int32_t *umin, int32_t *umax) {
    int32_t m, lper;
    int hashed = 0;
    if (!t->frozen || t->sh_nseg == 0 || !router_applies(t, src, dst) || !shift_holds(t) ||
        !mt_topo_shift_units(t, src, src, &m) || !mt_topo_shift_units(t, dst, dst, &m))
        return 0;
    if (!structured_route(t, src, dst, mt_hash64((uint64_t)src * (uint64_t)t->nnodes + (uint64_t)dst), &m, &hashed) ||
        hashed || m != n)
        return 0; /* an ECMP choice hashes the pair: its copies may choose otherwise */
    *umin = *umax = src / t->sh_period;
    if (dst / t->sh_period < *umin) *umin = dst / t->sh_period;
    if (dst / t->sh_period > *umax) *umax = dst / t->sh_period;
    for (int32_t h = 0; h < n; h++) {
        if (t->scratch[n - 1 - h] != r0[h]) return 0; /* r0 is not the router's route */
        int32_t u = link_unit(t, r0[h], &lper);
        *umin = u < *umin ? u : *umin, *umax = u > *umax ? u : *umax;
        if (step) step[h] = lper;
    }
    return 1;
}

int mt_topo_route_shifted(mt_topo *t, int32_t src, int32_t dst, const int32_t *r0, int32_t n, const int32_t *k,
                          int32_t nk, int32_t *out, int32_t ld) {
    int32_t kmin = 0, kmax = 0, umin, umax, lper;
    if (!shift_span(t, src, dst, r0, n, NULL, &umin, &umax)) return 0;
    for (int32_t i = 0; i < nk; i++) kmin = k[i] < kmin ? k[i] : kmin, kmax = k[i] > kmax ? k[i] : kmax;
    if ((int64_t)umin + kmin < 0 || (int64_t)umax + kmax >= t->sh_units) return 0;
    for (int32_t h = 0; h < n; h++) {
        link_unit(t, r0[h], &lper);
        for (int32_t i = 0; i < nk; i++) out[(size_t)h * ld + i] = r0[h] + k[i] * lper;
    }
    t->n_structured += nk;
    return 1;
}

int mt_topo_route_shift_steps(mt_topo *t, int32_t src, int32_t dst, const int32_t *r0, int32_t n, int32_t *step,
                              int32_t *kmin, int32_t *kmax) {
    int32_t umin, umax;
    if (!shift_span(t, src, dst, r0, n, step, &umin, &umax)) return 0;
    *kmin = -umin;
    *kmax = t->sh_units - 1 - umax;
    return 1;
}

mt_status mt_topo_route_latency(mt_topo *t, int32_t src, int32_t dst, mt_time_ps *lat_ps, mt_error *err) {
    int32_t ks, kd, n, umin, umax;
    if (t->ls_ok && router_applies(t, src, dst) && mt_topo_shift_units(t, t->ls_src, src, &ks) &&
        mt_topo_shift_units(t, t->ls_dst, dst, &kd) && ks == kd && ks >= t->ls_kmin && ks <= t->ls_kmax) {
        *lat_ps = t->ls_lat; /* a shift of the last pair: its links' latencies, link by link */
        return MT_OK;
    }
    const int32_t *links;
    MT_CHECK(mt_topo_route_lat(t, src, dst, &links, &n, lat_ps, err));
    if (shift_span(t, src, dst, links, n, NULL, &umin, &umax))
        t->ls_src = src, t->ls_dst = dst, t->ls_kmin = -umin, t->ls_kmax = t->sh_units - 1 - umax,
        t->ls_lat = *lat_ps, t->ls_ok = 1;
    return MT_OK;
}

mt_status mt_topo_route(mt_topo *t, int32_t src, int32_t dst, const int32_t **links,
                        int32_t *nlinks, mt_error *err) {
    return mt_topo_route_lat(t, src, dst, links, nlinks, NULL, err);
}

mt_time_ps mt_topo_path_latency(const mt_topo *t, const int32_t *links, int32_t nlinks) {
    mt_time_ps s = 0;
    for (int32_t i = 0; i < nlinks; i++) s += t->links[links[i]].lat_ps;
    return s;
}

mt_status mt_topo_bisection_Bps(mt_topo *t, double *out_Bps, mt_error *err) {
    MT_CHECK(freeze(t, err));
    *out_Bps = 0;
    if (t->ngpus < 2) return MT_OK;
    igraph_integer_t n = t->nnodes, s = n, sink = n + 1;
    igraph_integer_t ne = t->nlinks + t->ngpus;
    igraph_vector_int_t edges;
    igraph_vector_t cap;
    igraph_t g;
    if (igraph_vector_int_init(&edges, 2 * ne) != IGRAPH_SUCCESS)
        return mt_fail(err, MT_ENOMEM, "%s: out of memory for the bisection", t->label);
    if (igraph_vector_init(&cap, ne) != IGRAPH_SUCCESS) {
        igraph_vector_int_destroy(&edges);
        return mt_fail(err, MT_ENOMEM, "%s: out of memory for the bisection", t->label);
    }
    double total = 0;
    for (int32_t i = 0; i < t->nlinks; i++) {
        VECTOR(edges)[2 * i] = t->links[i].src;
        VECTOR(edges)[2 * i + 1] = t->links[i].dst;
        VECTOR(cap)[i] = t->links[i].bw_Bps;
        total += t->links[i].bw_Bps;
    }
    for (int32_t r = 0; r < t->ngpus; r++) {
        igraph_integer_t e = t->nlinks + r;
        int first = r < t->ngpus / 2;
        VECTOR(edges)[2 * e] = first ? s : t->gpus[r];
        VECTOR(edges)[2 * e + 1] = first ? t->gpus[r] : sink;
        VECTOR(cap)[e] = total + 1;
    }
    igraph_error_t rc = igraph_create(&g, &edges, n + 2, IGRAPH_DIRECTED);
    if (rc == IGRAPH_SUCCESS) {
        igraph_real_t v = 0;
        rc = igraph_maxflow_value(&g, &v, s, sink, &cap, NULL);
        *out_Bps = v;
        igraph_destroy(&g);
    }
    igraph_vector_int_destroy(&edges);
    igraph_vector_destroy(&cap);
    if (rc != IGRAPH_SUCCESS)
        return mt_fail(err, MT_ENOMEM, "%s: igraph max-flow failed (%s)", t->label,
                       igraph_strerror(rc));
    return MT_OK;
}

mt_status mt_topo_write_dot(const mt_topo *t, FILE *out, mt_error *err) {
    static const char *shape[] = {"box", "ellipse", "hexagon", "diamond"};
    fprintf(out, "digraph \"%s\" {\n", t->label);
    for (int32_t i = 0; i < t->nnodes; i++)
        fprintf(out, "  n%d [label=\"%s\", shape=%s];\n", (int)i, mt_topo_name(t, i), shape[t->kind[i]]);
    for (int32_t i = 0; i < t->nlinks; i++)
        fprintf(out, "  n%d -> n%d [label=\"%.4g GB/s\"];\n", (int)t->links[i].src,
                (int)t->links[i].dst, t->links[i].bw_Bps / 1e9);
    fprintf(out, "}\n");
    if (ferror(out)) return mt_fail(err, MT_EIO, "%s: could not write the dot output", t->label);
    return MT_OK;
}

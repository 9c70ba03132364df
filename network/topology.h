/* network/topology.h — the interconnect as a directed graph of endpoints and switches.
 *
 * Nodes are GPUs, NICs, hosts (CPU memory) and switches; links are DIRECTED, each with its own
 * bandwidth (bytes/s) and latency (ps), so asymmetric fabrics (one slow direction) are
 * expressible; mt_topo_add_duplex adds both directions. GPUs are numbered in creation order:
 * GPU rank r is mt_topo_gpus(t)[r].
 *
 * Routing: a breadth-first search over the links (MT_ROUTE_HOPS; the topology's own, since
 * igraph_distances rebuilds its adjacency list on every call) or igraph's Dijkstra on link
 * latency (MT_ROUTE_LATENCY) from a source gives distances to every node (kept for the most
 * recent sources, 32 MiB of them); a route is then read backwards from the destination along
 * links that lie on a shortest path. Without ECMP the lowest-numbered such link is taken; with ECMP the choice
 * among equal-cost links is a hash of (src, dst), so one pair always uses one path (flow
 * hashing) while different pairs spread. Routes are cached per (src, dst).
 * Costs: first route from a source O(V + E) (hops) or O(E log V) (latency); cached routes O(1);
 * memory at most 32 MiB of distances plus 64 MiB of cached routes (the cache is emptied when full).
 *
 * Structured routing: a topology built by a preset may carry a router (mt_topo_set_router) that
 * names, in closed form, the shortest-path predecessors of a node; a route between two GPUs is
 * then read backwards from the destination exactly as above (the same candidate in-links in link
 * order, the same lowest-link or ECMP-hash choice) without any search, in O(hops x log degree),
 * without igraph; it is cached like a searched one (a repeated pair costs one lookup). It answers only while it is exact: GPU to GPU, no failed
 * link, and the hop metric or the latency metric on equal link latencies (where both order paths
 * alike); otherwise the graph search does.
 *
 * The builder calls may be made until the first route/bisection/dot query ("freeze").
 * Links may fail (and be repaired) after freeze: routes then avoid them (mt_topo_set_link_failed).
 */
#ifndef MT_NETWORK_TOPOLOGY_H
#define MT_NETWORK_TOPOLOGY_H

#include <stdint.h>
#include <stdio.h>

#include "network/sched.h"
#include "util/err.h"

typedef enum { MT_NODE_GPU, MT_NODE_NIC, MT_NODE_HOST, MT_NODE_SWITCH } mt_node_kind;
typedef enum { MT_ROUTE_HOPS, MT_ROUTE_LATENCY } mt_route_metric;

typedef struct mt_link {
    int32_t src, dst;
    double bw_Bps;
    mt_time_ps lat_ps;
} mt_link;

typedef struct mt_topo mt_topo;

/* An empty topology; NULL when out of memory. `label` (may be NULL) names it in messages. */
mt_topo *mt_topo_new(const char *label);
void mt_topo_free(mt_topo *t);

/* Adds a node; returns its id (>= 0) or -1 when out of memory or frozen (message in err).
 * `name` may be NULL: a name like "gpu3"/"sw0" is made up. */
int32_t mt_topo_add_node(mt_topo *t, mt_node_kind kind, const char *name, mt_error *err);
/* The largest link latency (1 s): far above any real link, and small enough that a route's
 * latencies add up without overflow. */
#define MT_LINK_LAT_MAX_PS (INT64_C(1000000000000))

/* Adds one directed link; returns its id or -1 (bad node, bandwidth not in (0, 1e18] B/s,
 * latency not in 0..MT_LINK_LAT_MAX_PS). */
int32_t mt_topo_add_link(mt_topo *t, int32_t src, int32_t dst, double bw_Bps, mt_time_ps lat_ps,
                         mt_error *err);
/* Both directions, same bandwidth and latency. MT_OK or the error of add_link. */
mt_status mt_topo_add_duplex(mt_topo *t, int32_t a, int32_t b, double bw_Bps, mt_time_ps lat_ps,
                             mt_error *err);
/* Makes room for `nodes` more nodes and `links` more links, so a builder that knows its size
 * adds them without the arrays growing by doubling copies (at 2^20 GPUs, 11 % of a run). A hint:
 * nothing else changes; memory reserved and never used is never touched. MT_EINVAL past
 * INT32_MAX, MT_ENOMEM. */
mt_status mt_topo_reserve(mt_topo *t, int64_t nodes, int64_t links, mt_error *err);
/* Node id for a name, or -1. O(1) expected. */
int32_t mt_topo_find(const mt_topo *t, const char *name);

int32_t mt_topo_nnodes(const mt_topo *t);
int32_t mt_topo_nlinks(const mt_topo *t);
const mt_link *mt_topo_link(const mt_topo *t, int32_t id);
mt_link *mt_topo_link_mut(mt_topo *t, int32_t id); /* for per-link overrides before freeze */
mt_node_kind mt_topo_kind(const mt_topo *t, int32_t node);
/* A node's name: the given one, or one made up from its kind and index ("gpu12", "sw3"), which
 * stays valid for the next 7 calls of this thread. */
const char *mt_topo_name(const mt_topo *t, int32_t node);
const char *mt_topo_label(const mt_topo *t);
const char *mt_node_kind_name(mt_node_kind k);
/* GPU node ids in rank order; *n gets their count. */
const int32_t *mt_topo_gpus(const mt_topo *t, int32_t *n);

/* Routing options; call before the first route. Default: hops, no ECMP. */
void mt_topo_set_routing(mt_topo *t, mt_route_metric metric, int ecmp);

/* A structured router's closed form: writes into pred[] the nodes u with a link u -> at that lie
 * on a shortest path (hop count) from GPU src to node at (!= src) and returns their count, at
 * most MT_ROUTER_PREDS_MAX, or -1 when it does not know (the graph search then answers). `shape`
 * is the preset's parameter values as given to mt_topo_set_router. */
enum { MT_ROUTER_PREDS_MAX = 128, MT_ROUTER_SHAPE_MAX = 4 };
typedef int32_t (*mt_topo_preds_fn)(const long *shape, int32_t src, int32_t at, int32_t *pred);

/* Attaches a structured router (NULL: none) with the preset's shape (nshape <= 4 values). */
void mt_topo_set_router(mt_topo *t, mt_topo_preds_fn preds, const long *shape, int nshape);
/* 0: routes by graph search only, even with a router (tests compare the two); 1: the default. */
void mt_topo_use_router(mt_topo *t, int on);
/* 1 when a router is attached and in use. */
int mt_topo_has_router(const mt_topo *t);
/* Routes answered so far by the structured router and by a graph search (a source's distances
 * computed; cached routes count in neither). */
void mt_topo_route_counts(const mt_topo *t, int64_t *structured, int64_t *searched);

/* The route src -> dst as link ids. *links points into the topology's route store and is valid
 * until the next mt_topo_route call. src == dst gives an empty route. MT_ENOROUTE with a message
 * naming both nodes when dst is unreachable. */
mt_status mt_topo_route(mt_topo *t, int32_t src, int32_t dst, const int32_t **links,
                        int32_t *nlinks, mt_error *err);
/* mt_topo_route and the route's latency (mt_topo_path_latency; lat_ps may be NULL). Each source
 * keeps its 4 latest destinations' routes and latencies in one 96-byte entry in front of the
 * cache of every pair: a repeated pair costs O(1) without a hash probe. Memory: 96 bytes per
 * GPU, allocated at the first route from a GPU (12.6 MB for multinode:nodes=16384,gpus=8's
 * 131,072 GPUs; GPUs' entries side by side), and 96 bytes per node once a route leaves a node that
 * is no GPU; emptied with the route cache. */
mt_status mt_topo_route_lat(mt_topo *t, int32_t src, int32_t dst, const int32_t **links,
                            int32_t *nlinks, mt_time_ps *lat_ps, mt_error *err);

/* The latency of mt_topo_route_lat's route for the pair, without the route: a shift of the last
 * pair it routed (mt_topo_route_shift_steps) is answered in O(1) with no route looked up or cached
 * (a ring's hops, one after another). */
mt_status mt_topo_route_latency(mt_topo *t, int32_t src, int32_t dst, mt_time_ps *lat_ps, mt_error *err);
/* mt_topo_route_lat for a pair asked once (network folding's check of each replica's copy of a
 * route): where the structured router answers, the route is computed into buf (cap links) and no
 * cache is entered (neither the source's entry nor the route store, whose pages it would touch);
 * else it is mt_topo_route_lat's, copied. MT_EINVAL when it has more than cap links. */
mt_status mt_topo_route_once(mt_topo *t, int32_t src, int32_t dst, int32_t *buf, int32_t cap, int32_t *nlinks,
                             mt_time_ps *lat_ps, mt_error *err);

/* TRANSLATION SYMMETRY (a preset's builder declares it; network folding uses it): nodes
 * [0, period x nunits) come in nunits units of `period` nodes (unit u's node i + u x period is unit
 * 0's node i shifted by u), the rest are fixed; the links come in nseg consecutive segments (nseg <=
 * MT_SHIFT_SEGS_MAX) of nunits x lper[s] links, link u x lper[s] + b of segment s being its base
 * link b shifted by u units. The builder also promises that its router commutes with the shift
 * (preds(shift(src), shift(at)) = shift(preds(src, at)); tests/unit/test_routers.c checks it).
 * Whether the links keep it (ends, bandwidth, latency; each base link joins unit 0 to unit 0 or to
 * a fixed node; the segments cover every link) is checked once, at the first mt_topo_route_shifted
 * after freezing, in O(nodes + links). */
enum { MT_SHIFT_SEGS_MAX = 4 };
void mt_topo_set_shift(mt_topo *t, int32_t period, int32_t nunits, int nseg, const int32_t *lper);
/* 1 when a shift is declared and node b is node a shifted by *k units (k may be negative). */
int mt_topo_shift_units(const mt_topo *t, int32_t a, int32_t b, int32_t *k);
/* The routes of src -> dst shifted by k[i] units (i < nk) in O(n x nk) without routing them:
 * 1 when out[h x ld + i] holds hop h of mt_topo_route_once's answer for that pair, r0 (n links)
 * being the route of src -> dst itself (counted as nk structured routes); 0 when the symmetry
 * cannot vouch for them (none declared or the links break it, a failed link, no structured route,
 * an ECMP choice on the way, r0 another route, a shift leaving the units; out may be written):
 * route each pair. */
int mt_topo_route_shifted(mt_topo *t, int32_t src, int32_t dst, const int32_t *r0, int32_t n, const int32_t *k,
                          int32_t nk, int32_t *out, int32_t ld);
/* The same vouching once for many shifts (flow groups: a ring's members): 1 when every shift k in
 * [*kmin, *kmax] of src -> dst (r0, n links, the router's route) has the route r0[h] + k x step[h]
 * (mt_topo_route_once's answer for that pair, with r0's bandwidths and latencies, link by link);
 * 0 as mt_topo_route_shifted declines. O(n), not counted as routes. */
int mt_topo_route_shift_steps(mt_topo *t, int32_t src, int32_t dst, const int32_t *r0, int32_t n, int32_t *step,
                              int32_t *kmin, int32_t *kmax);

/* Failure: marks link `link` failed (failed = 1) or repaired (0); later routes avoid failed links
 * (Dijkstra with failed links at infinite weight) and the route cache and distances are dropped,
 * so every route is recomputed on demand. A route that no longer exists is MT_ENOROUTE naming both
 * nodes and the failed links. Freezes the topology. O(V) plus the recomputed routes. */
mt_status mt_topo_set_link_failed(mt_topo *t, int32_t link, int failed, mt_error *err);
int mt_topo_link_failed(const mt_topo *t, int32_t link);

/* "src->dst" by node names into buf (returned). */
const char *mt_topo_link_name(const mt_topo *t, int32_t link, char *buf, size_t len);

/* Link selectors: "A->B" every directed link from node A to node B, "A<->B" both directions,
 * "A->*" every link out of A (its uplink), "*->A" every link into A, "A" every link into or out
 * of node A (a GPU's or NIC's whole attachment). *out (malloc'd,
 * caller frees) gets the link ids, *n their count (>= 1). MT_EINVAL naming the selector when a
 * node is unknown or nothing matches. O(links). */
mt_status mt_topo_select_links(const mt_topo *t, const char *sel, int32_t **out, int32_t *n,
                               mt_error *err);

/* Sum of link latencies along a route. */
mt_time_ps mt_topo_path_latency(const mt_topo *t, const int32_t *links, int32_t nlinks);

/* Max-flow (igraph) from GPUs with rank < n/2 to the others, in bytes/s, one direction: the
 * bisection bandwidth of the rank-order cut (what a collective between halves sees). */
mt_status mt_topo_bisection_Bps(mt_topo *t, double *out_Bps, mt_error *err);

/* Graphviz: nodes by name and kind, one edge per directed link labelled with bandwidth. */
mt_status mt_topo_write_dot(const mt_topo *t, FILE *out, mt_error *err);

#endif

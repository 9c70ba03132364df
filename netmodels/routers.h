/* netmodels/routers.h — structured routers of the topology presets: for each preset, in closed
 * form, which neighbours of a node lie one hop closer to a source GPU on a shortest path
 * (mt_topo_preds_fn). network/topology.c reads a route backwards over them and breaks ties
 * exactly as its graph search does, so a structured route EQUALS the searched one (ECMP
 * included); tests/unit/test_routers.c compares the two on every preset.
 *
 * Invariant: each function knows its builder's node numbering (netmodels/presets.c) and answers
 * only for the nodes a GPU-to-GPU route can pass; anything else is -1 (the search answers).
 * Shortest paths by hop count: ring and mesh/torus by distance per dimension, switch and fc in
 * one or two hops, fat-tree up/down (edge, aggregation, core), multinode NVSwitch inside a node
 * and NIC, rail (or fabric) switch, NIC between nodes, with the rail-crossing ties of a rail fabric.
 * Costs: O(1) per call, O(k/2) for a fat-tree's aggregation and core layers.
 */
#ifndef MT_NETMODELS_ROUTERS_H
#define MT_NETMODELS_ROUTERS_H

#include "network/topology.h"

/* shape: ring {N, uni}; fc, switch {N}; mesh, torus {R, C}; fattree {k};
 * multinode {nodes, gpus, fabric (0 rail, 1 switch)}; dgx-* none (one node of 8). */
int32_t mt_router_ring(const long *shape, int32_t src, int32_t at, int32_t *pred);
int32_t mt_router_fc(const long *shape, int32_t src, int32_t at, int32_t *pred);
int32_t mt_router_switch(const long *shape, int32_t src, int32_t at, int32_t *pred);
int32_t mt_router_mesh(const long *shape, int32_t src, int32_t at, int32_t *pred);
int32_t mt_router_torus(const long *shape, int32_t src, int32_t at, int32_t *pred);
int32_t mt_router_fattree(const long *shape, int32_t src, int32_t at, int32_t *pred);
int32_t mt_router_multinode(const long *shape, int32_t src, int32_t at, int32_t *pred);
int32_t mt_router_dgx(const long *shape, int32_t src, int32_t at, int32_t *pred);

#endif

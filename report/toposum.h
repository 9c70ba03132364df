/* report/toposum.h — a topology described for people (`mitosis topo`): node counts by kind, the
 * link count and bandwidth range, the bisection bandwidth between the two halves of the GPU
 * ranks, and the route between two nodes with its hop count, latency and bottleneck; as text and
 * as JSON. Costs: O(nodes + links) plus one bisection (a max-flow) and one route.
 */
#ifndef MT_REPORT_TOPOSUM_H
#define MT_REPORT_TOPOSUM_H

#include <stdio.h>

#include <jansson.h>

#include "network/topology.h"
#include "util/err.h"

/* The description as a new JSON object: {topology, nodes{total, gpu, nic, host, switch}, links,
 * link_bw_GBps{min, max}, bisection_GBps, route{from, to, hops, nodes[], latency_ns,
 * bottleneck_GBps}}. The route goes from node `from` to node `to` (names as --dot writes them;
 * NULL: the first and the last GPU); an unknown name is MT_EINVAL naming it. */
mt_status mt_toposum_json(mt_topo *t, const char *from, const char *to, json_t **out, mt_error *err);

/* The same facts as the text `mitosis topo` prints (from the JSON above). */
void mt_toposum_print(FILE *out, const json_t *summary);

#endif

/* run/topology.h — `mitosis topo` as a library call: a topology described. The topology is built
 * from the network options (netmodels/netcfg.h: a preset spec or a topology file), with its
 * phases on a terminal (the build, then the bisection's max-flow: 8 s at 131,072 GPUs), and
 * summarised (report/toposum.h: nodes, links, bandwidth range, bisection, one route) as text or
 * JSON; optionally its graph for Graphviz (network/topology.h mt_topo_write_dot).
 * Invariant: the graph file is written before the summary is printed, whole or not at all (a
 * temporary renamed onto it: util/outpath.h), and never over the topology file it is drawn from;
 * a failing call prints only what came before its error.
 */
#ifndef MT_RUN_TOPOLOGY_H
#define MT_RUN_TOPOLOGY_H

#include <stdio.h>

#include "netmodels/netcfg.h"
#include "util/err.h"

typedef struct mt_topology_opts {
    mt_netcfg net;                 /* net.topology: the SPEC described */
    const char *route_a, *route_b; /* the route shown, nodes named as the graph names them (NULL: the first
                                    * and the last GPU) */
    const char *dot;               /* the graph's file, "-": out after the summary, NULL: none */
    int as_json;
    FILE *progress;                /* the phases, on a terminal (NULL: none) */
} mt_topology_opts;

void mt_topology_opts_init(mt_topology_opts *o);

/* Builds o's topology and writes its description to out (and the graph, as o->dot says). Errors
 * name the spec, the file or the node. */
mt_status mt_run_topology(const mt_topology_opts *o, FILE *out, mt_error *err);

#endif

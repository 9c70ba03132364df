/* netmodels/topologies.h — topology presets by name, and topology files (JSON, CSV).
 *
 * Spec grammar: NAME[:ARG[,ARG...]] where an ARG is a positional size (`8`, `4x4`) or
 * key=value; or a path to a .json or .csv file (anything containing '/' or ending so).
 *   ring:N[,uni]    N GPUs in a ring, duplex links (uni: one direction only)
 *   fc:N            fully connected, a duplex link between every pair
 *   switch:N        N GPUs on one non-blocking switch (NVSwitch-like)
 *   mesh:RxC / torus:RxC   2-D grid, duplex links (torus wraps around)
 *   fattree:k=K     k-ary fat-tree: K pods, K^3/4 GPUs, all links at --link-bw
 *   dgx1            8 V100s, NVLink hybrid cube-mesh (2 links between some pairs)
 *   dgx-a100 / dgx-h100   8 GPUs on an NVSwitch + one NIC per GPU
 *   multinode:nodes=M,gpus=G[,fabric=rail|switch]   M nodes of G GPUs on an NVSwitch, one NIC
 *                   per GPU; NICs on G rail switches (rail) or one switch (switch)
 * Tiers: `link` is the GPU tier (NVLink or the preset's only links), `nic` the GPU-NIC and
 * NIC-fabric tier. A bandwidth left at 0 or a latency left < 0 (mt_topo_params_init) takes
 * the preset's default (printed by --help).
 *
 * JSON file: {"defaults": {"bandwidth": "100GB/s", "latency": "500ns"},
 *             "nodes": ["gpu0", {"name": "sw0", "kind": "switch"}, ...],
 *             "links": [{"src": "gpu0", "dst": "sw0", "bandwidth": "300GB/s",
 *                        "latency": "1us", "duplex": true}, ...],
 *             "overrides": [{"src": "gpu1", "dst": "sw0", "bandwidth": "10GB/s"}]}
 *   bandwidth: a string with units or a number of bytes/s; latency: units or a number of ns;
 *   duplex defaults to true; overrides change existing directed links (e.g. one slow link).
 *   A node given as a string gets its kind from its name: nic*, host* or cpu*, sw*,
 *   otherwise gpu.
 * CSV file: rows `src,dst,bandwidth,latency[,directed]`, an optional header row starting
 *   with `src`; nodes are created on first mention (kind from the name as above); a row is a
 *   duplex link unless its 5th field is `directed`.
 * Errors name the file and the JSON path (links[3].dst) or CSV line.
 */
#ifndef MT_NETMODELS_TOPOLOGIES_H
#define MT_NETMODELS_TOPOLOGIES_H

#include "network/topology.h"
#include "util/err.h"

typedef struct mt_topo_params {
    double link_bw_Bps, link_lat_ns; /* GPU tier; bw 0 / lat < 0 = preset default */
    double nic_bw_Bps, nic_lat_ns;   /* NIC / inter-node tier, same convention */
    mt_route_metric metric;
    int ecmp;
} mt_topo_params;

void mt_topo_params_init(mt_topo_params *p);

/* Builds a topology from a preset spec or a file path. MT_EINVAL for a bad spec (the message
 * lists the presets), MT_EIO / MT_EFORMAT for files. */
mt_status mt_topo_build(const char *spec, const mt_topo_params *p, mt_topo **out, mt_error *err);

mt_status mt_topo_load_json(const char *path, const mt_topo_params *p, mt_topo **out,
                            mt_error *err);
mt_status mt_topo_load_csv(const char *path, const mt_topo_params *p, mt_topo **out,
                           mt_error *err);

/* Multi-line help on the presets and their defaults, for --help. */
const char *mt_topo_presets_help(void);

#endif

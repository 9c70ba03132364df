/* netmodels/topologies.h — topology presets by name (one table), and topology files (JSON, CSV).
 *
 * Spec grammar: NAME[:ARG[,ARG...]] where an ARG is a size (`8`, or `4x4` for two sizes), a
 * word (`uni`) or key=value (`k=4`, `fabric=switch`); or a path to a .json / .json.gz / .csv
 * file (anything containing '/' or ending so). The presets, their parameters (with defaults and
 * ranges), their tiers and their defaults live in ONE table, netmodels/presets.c (`mitosis topo
 * --help` prints it; mt_topo_presets_help):
 *   ring:N[,uni]  fc:N  switch:N  mesh:RxC  torus:RxC  fattree:k=K  dgx1  dgx-a100  dgx-h100
 *   multinode:nodes=M,gpus=G[,fabric=rail|switch]
 * A preset refuses an argument it does not take (dgx-h100:16, ring:8,k=4), naming the preset
 * and its syntax.
 * Tiers: `link` is the GPU tier (NVLink or the preset's only links), `nic` the GPU-NIC and
 * NIC-fabric tier (only presets with NICs have it). A bandwidth left at 0 or a latency left < 0
 * (mt_topo_params_init) takes the preset's default.
 *
 * JSON file: {"defaults": {"bandwidth": "100GB/s", "latency": "500ns"},
 *             "nodes": ["gpu0", {"name": "sw0", "kind": "switch"}, ...],
 *             "links": [{"src": "gpu0", "dst": "sw0", "bandwidth": "300GB/s",
 *                        "latency": "1us", "duplex": true}, ...],
 *             "overrides": [{"src": "gpu1", "dst": "sw0", "bandwidth": "10GB/s"}]}
 *   bandwidth: a string with units or a number of bytes/s (a number, or a string without a
 *   unit, below 1e6 B/s is refused as a forgotten unit: 100 means "100GB/s", not 100 B/s);
 *   latency: units or a number of ns;
 *   duplex defaults to true; overrides change existing directed links (e.g. one slow link).
 *   A link without a bandwidth or latency takes --link-bw / --link-lat when given, else the
 *   file's "defaults", else mt_topo_file_tier.
 *   A node given as a string gets its kind from its name: nic*, host* or cpu*, sw*,
 *   otherwise gpu.
 * CSV file: rows `src,dst,bandwidth,latency[,directed]`, an optional header row starting
 *   with `src`; nodes are created on first mention (kind from the name as above); a row is a
 *   duplex link unless its 5th field is `directed`; bandwidths as in JSON files.
 * Errors name the file and the JSON path (links[3].dst) or CSV line, or the spec and the preset.
 * Costs: parsing a spec O(its length x presets); building O(nodes + links).
 */
#ifndef MT_NETMODELS_TOPOLOGIES_H
#define MT_NETMODELS_TOPOLOGIES_H

#include "util/limits.h"
#include <stdio.h>

#include "network/topology.h"
#include "util/err.h"
#include "util/limits.h"

typedef struct mt_topo_params {
    double link_bw_Bps, link_lat_ns; /* GPU tier; bw 0 / lat < 0 = preset default */
    double nic_bw_Bps, nic_lat_ns;   /* NIC / inter-node tier, same convention */
    int metric;                      /* mt_route_metric (an int: a CHOICE flag writes it) */
    int ecmp;
} mt_topo_params;

void mt_topo_params_init(mt_topo_params *p);

/* ---- the presets table ---- */

/* A tier's bandwidth (bytes/s, per direction) and latency (ns) per link. */
typedef struct mt_tier {
    double bw_Bps, lat_ns;
} mt_tier;

/* Tier defaults that are not a preset's: links of topology files without their own, and the
 * uplinks of `mitosis hop` (100 Gb/s NICs on switch:N, unless --link-bw says otherwise). */
extern const mt_tier mt_topo_file_tier;
extern const mt_tier mt_topo_hop_tier;

enum { MT_GROUPS_RINGS = 1, MT_GROUPS_TREES = 2 }; /* mt_topo_preset.flow_groups */
enum { MT_PRESET_PARAMS_MAX = 4, MT_PRESET_MAX_GPUS = MT_GPUS_MAX }; /* util/limits.h */

/* One parameter of a preset. Its value (a long) is a size, or the index of a word. */
typedef struct mt_preset_param {
    const char *name;  /* its key (k=4) and its name in the syntax; NULL ends the list */
    int positional;    /* 1: a size that may be given bare (`8`; two in a row as `4x4`) */
    const char *words; /* a word choice ("bi|uni"): given bare or as name=word */
    long def;          /* default; -1: required */
    long lo, hi;       /* range of a size */
    int even;          /* 1: a size that must be even */
} mt_preset_param;

typedef struct mt_topo_preset {
    const char *name;   /* "ring" */
    const char *syntax; /* "ring:N[,uni]" */
    const char *help;   /* one line */
    mt_preset_param params[MT_PRESET_PARAMS_MAX];
    mt_tier link;       /* the GPU tier's defaults */
    mt_tier nic;        /* the NIC tier's defaults; bw_Bps 0: the preset has no NIC tier */
    long (*gpus)(const long *v); /* its GPU count for parameter values v */
    /* Adds its nodes and links to an empty topology, with the tiers resolved (flag or default). */
    mt_status (*build)(mt_topo *t, const long *v, mt_tier link, mt_tier nic, mt_error *err);
    /* Its structured router (netmodels/routers.h), or NULL: routes by graph search. */
    mt_topo_preds_fn preds;
    /* The GPU its name promises (a name of the GPU table, perfmodel/gpuspec.h: dgx-h100 holds
     * H100-SXM), NULL for a shape of any GPU (switch:N, multinode). A run on a CPU-recorded trace
     * takes it as the GPU to predict (run/device.h). */
    const char *gpu;
    /* 1: each node's GPUs hang off an NVSwitch (NCCL's NVLS algorithm possible: extrapolate/nccl.h) */
    int nvswitch;
    /* Which collectives' bulk runs as one flow group on it (netmodels/flow.h: neighbour routes of
     * equal hops on links of their own), measured: MT_GROUPS_RINGS (ringflow: ring, switch),
     * MT_GROUPS_TREES (treeflow: switch, multinode); 0: none (mesh, torus, fattree, files).
     * run/estimate.c counts their events so. */
    int flow_groups;
} mt_topo_preset;

/* The table; *n gets its length. */
const mt_topo_preset *mt_topo_presets(int32_t *n);
/* The preset a spec names (the part before ':'), or NULL (a file, or unknown). */
const mt_topo_preset *mt_topo_preset_find(const char *spec);
/* The GPU a spec's preset promises (mt_topo_preset.gpu), or NULL (none, a file, NULL spec). */
const char *mt_topo_spec_gpu(const char *spec);
/* The names of the presets with a NIC tier, ", "-separated, into buf (returned). */
const char *mt_topo_presets_with_nic(char *buf, size_t len);
/* 1 when spec names a topology file rather than a preset. */
int mt_topo_spec_is_file(const char *spec);

/* A parsed preset spec: the preset and every parameter's value (defaults filled in). */
typedef struct mt_topo_spec {
    const mt_topo_preset *preset;
    long v[MT_PRESET_PARAMS_MAX];
} mt_topo_spec;

/* Parses and checks a preset spec without building it (MT_EINVAL, one line "bad topology
 * 'SPEC': why (the preset's syntax or the list of presets)"). */
mt_status mt_topo_spec_parse(const char *spec, mt_topo_spec *out, mt_error *err);

/* Builds a topology from a preset spec or a file path. MT_EINVAL for a bad spec (the message
 * names the preset's syntax or lists the presets), MT_EIO / MT_EFORMAT for files. */
mt_status mt_topo_build(const char *spec, const mt_topo_params *p, mt_topo **out, mt_error *err);

mt_status mt_topo_load_json(const char *path, const mt_topo_params *p, mt_topo **out,
                            mt_error *err);
mt_status mt_topo_load_csv(const char *path, const mt_topo_params *p, mt_topo **out,
                           mt_error *err);

/* The presets table as --help text: syntax, help line and tier defaults of each, and topology
 * files. */
void mt_topo_presets_help(FILE *out);

#endif

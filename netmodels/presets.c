/* netmodels/presets.c — the topology presets: ONE table (name, syntax, parameters with their
 * defaults and ranges, tiers with their default bandwidth and latency, a help line, the GPU
 * count and the builder). It is the only place these defaults live: --help is printed from it
 * (mt_topo_presets_help), topology files and `mitosis hop` take their named tiers from here.
 * Adding a preset is one entry in PRESETS plus its builder (and its structured router, routers.c,
 * or NULL for graph search). Spec parsing is in topospec.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netmodels/routers.h"
#include "netmodels/topologies.h"
#include "util/flags.h"

#define GBPS 1e9
#define TIER_GENERIC {100 * GBPS, 500}
#define NO_TIER {0, 0}

const mt_tier mt_topo_file_tier = TIER_GENERIC;
const mt_tier mt_topo_hop_tier = {12.5 * GBPS, 500}; /* 100 Gb/s NICs */

/* ---- builders: each adds nodes and links through the network/topology builder API ---- */

static mt_status add_gpus(mt_topo *t, long n, mt_error *err) {
    for (long i = 0; i < n; i++)
        if (mt_topo_add_node(t, MT_NODE_GPU, NULL, err) < 0) return err ? err->code : MT_ENOMEM;
    return MT_OK;
}

static mt_time_ps lat_ps(mt_tier x) { return (mt_time_ps)(x.lat_ns * 1000.0 + 0.5); }

static mt_status duplex(mt_topo *t, int32_t a, int32_t b, mt_tier x, mt_error *err) {
    return mt_topo_add_duplex(t, a, b, x.bw_Bps, lat_ps(x), err);
}

static mt_status simplex(mt_topo *t, int32_t a, int32_t b, mt_tier x, mt_error *err) {
    return mt_topo_add_link(t, a, b, x.bw_Bps, lat_ps(x), err) < 0 ? (err ? err->code : MT_EINVAL) : MT_OK;
}

static int32_t add_node(mt_topo *t, mt_node_kind k, mt_status *rc, mt_error *err) {
    int32_t id = mt_topo_add_node(t, k, NULL, err);
    if (id < 0) *rc = err ? err->code : MT_ENOMEM;
    return id;
}

static mt_status build_ring(mt_topo *t, long n, int uni, mt_tier x, mt_error *err) {
    MT_CHECK(add_gpus(t, n, err));
    for (long i = 0; i < n && n > 1; i++) {
        int32_t a = (int32_t)i, b = (int32_t)((i + 1) % n);
        if (n == 2 && i == 1) break; /* two GPUs: one link pair, not two */
        MT_CHECK(simplex(t, a, b, x, err));
        if (!uni) MT_CHECK(simplex(t, b, a, x, err));
    }
    if (uni && n == 2) MT_CHECK(simplex(t, 1, 0, x, err));
    return MT_OK;
}

static mt_status build_fc(mt_topo *t, long n, mt_tier x, mt_error *err) {
    MT_CHECK(add_gpus(t, n, err));
    for (int32_t a = 0; a < n; a++)
        for (int32_t b = a + 1; b < n; b++) MT_CHECK(duplex(t, a, b, x, err));
    return MT_OK;
}

static mt_status build_switch(mt_topo *t, long n, mt_tier x, mt_error *err) {
    MT_CHECK(mt_topo_reserve(t, n + 1, 2 * n, err));
    MT_CHECK(add_gpus(t, n, err));
    mt_status rc = MT_OK;
    int32_t sw = add_node(t, MT_NODE_SWITCH, &rc, err);
    for (int32_t a = 0; rc == MT_OK && a < n; a++) rc = duplex(t, a, sw, x, err);
    return rc;
}

static mt_status build_grid(mt_topo *t, long r, long c, int wrap, mt_tier x, mt_error *err) {
    MT_CHECK(add_gpus(t, r * c, err));
    for (long i = 0; i < r; i++)
        for (long j = 0; j < c; j++) {
            int32_t me = (int32_t)(i * c + j);
            if (j + 1 < c || (wrap && c > 2)) MT_CHECK(duplex(t, me, (int32_t)(i * c + (j + 1) % c), x, err));
            if (i + 1 < r || (wrap && r > 2)) MT_CHECK(duplex(t, me, (int32_t)(((i + 1) % r) * c + j), x, err));
        }
    return MT_OK;
}

static mt_status build_fattree(mt_topo *t, long k, mt_tier x, mt_error *err) {
    long h = k / 2;
    MT_CHECK(add_gpus(t, k * h * h, err));
    int32_t gpu = 0, core0 = -1;
    mt_status rc = MT_OK;
    for (long i = 0; i < h * h && rc == MT_OK; i++) {
        int32_t id = add_node(t, MT_NODE_SWITCH, &rc, err);
        if (i == 0) core0 = id;
    }
    for (long p = 0; p < k && rc == MT_OK; p++) {
        int32_t edge0 = -1, agg0 = -1;
        for (long i = 0; i < h && rc == MT_OK; i++) {
            int32_t e = add_node(t, MT_NODE_SWITCH, &rc, err);
            if (i == 0) edge0 = e;
        }
        for (long i = 0; i < h && rc == MT_OK; i++) {
            int32_t a = add_node(t, MT_NODE_SWITCH, &rc, err);
            if (i == 0) agg0 = a;
        }
        for (long e = 0; e < h && rc == MT_OK; e++) {
            for (long g = 0; g < h && rc == MT_OK; g++) rc = duplex(t, gpu++, (int32_t)(edge0 + e), x, err);
            for (long a = 0; a < h && rc == MT_OK; a++)
                rc = duplex(t, (int32_t)(edge0 + e), (int32_t)(agg0 + a), x, err);
        }
        for (long a = 0; a < h && rc == MT_OK; a++)
            for (long c = 0; c < h && rc == MT_OK; c++)
                rc = duplex(t, (int32_t)(agg0 + a), (int32_t)(core0 + a * h + c), x, err);
    }
    return rc;
}

static mt_status build_dgx1(mt_topo *t, mt_tier x, mt_error *err) {
    /* NVLink pairs of a DGX-1 (V100) and how many NVLinks join them (each GPU has 6). */
    static const int pairs[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2},
                                   {1, 3, 1}, {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1},
                                   {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1},
                                   {6, 7, 2}};
    MT_CHECK(add_gpus(t, 8, err));
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        mt_tier y = {x.bw_Bps * pairs[i][2], x.lat_ns};
        MT_CHECK(duplex(t, pairs[i][0], pairs[i][1], y, err));
    }
    return MT_OK;
}

/* One node of G GPUs on a switch, one NIC per GPU; returns the first NIC id in *nic0. */
static mt_status build_node(mt_topo *t, long g, mt_tier nv, mt_tier nic, int32_t *nic0, mt_error *err) {
    int32_t gpu0 = mt_topo_nnodes(t);
    MT_CHECK(add_gpus(t, g, err));
    mt_status rc = MT_OK;
    int32_t sw = add_node(t, MT_NODE_SWITCH, &rc, err);
    for (long i = 0; i < g && rc == MT_OK; i++) rc = duplex(t, (int32_t)(gpu0 + i), sw, nv, err);
    for (long i = 0; i < g && rc == MT_OK; i++) {
        int32_t n = add_node(t, MT_NODE_NIC, &rc, err);
        if (i == 0) *nic0 = n;
        if (rc == MT_OK) rc = duplex(t, (int32_t)(gpu0 + i), n, nic, err);
    }
    return rc;
}

static mt_status build_multinode(mt_topo *t, long m, long g, int rail, mt_tier nv, mt_tier nic,
                                 mt_error *err) {
    /* per node: G GPUs, a switch, G NICs; links: GPU-switch, GPU-NIC, NIC-rail, both ways */
    MT_CHECK(mt_topo_reserve(t, m * (2 * g + 1) + (rail ? g : 1), 6 * m * g, err));
    int32_t *nics = malloc((size_t)m * sizeof *nics);
    if (!nics) return mt_fail(err, MT_ENOMEM, "out of memory building multinode");
    mt_status rc = MT_OK;
    for (long i = 0; i < m && rc == MT_OK; i++) rc = build_node(t, g, nv, nic, &nics[i], err);
    int32_t sw0 = -1;
    for (long s = 0; s < (rail ? g : 1) && rc == MT_OK; s++) {
        int32_t id = add_node(t, MT_NODE_SWITCH, &rc, err);
        if (s == 0) sw0 = id;
    }
    for (long i = 0; i < m && rc == MT_OK; i++)
        for (long j = 0; j < g && rc == MT_OK; j++)
            rc = duplex(t, (int32_t)(nics[i] + j), (int32_t)(sw0 + (rail ? j : 0)), nic, err);
    free(nics);
    /* node i is node 0 shifted by i: its 4G links in the nodes' segment, its 2G to the fabric in
     * the fabric's (mt_router_multinode commutes with the shift) */
    int32_t lper[2] = {(int32_t)(4 * g), (int32_t)(2 * g)};
    if (rc == MT_OK) mt_topo_set_shift(t, (int32_t)(2 * g + 1), (int32_t)m, 2, lper);
    return rc;
}

/* ---- the table ---- */

static long gpus_n(const long *v) { return v[0]; }
static long gpus_rc(const long *v) { return v[0] * v[1]; }
static long gpus_fattree(const long *v) { return v[0] * v[0] * v[0] / 4; }
static long gpus_8(const long *v) { (void)v; return 8; }
static long gpus_multinode(const long *v) { return v[0] * v[1]; }

static mt_status b_ring(mt_topo *t, const long *v, mt_tier link, mt_tier nic, mt_error *err) {
    (void)nic;
    return build_ring(t, v[0], v[1] == 1, link, err);
}
static mt_status b_fc(mt_topo *t, const long *v, mt_tier link, mt_tier nic, mt_error *err) {
    (void)nic;
    return build_fc(t, v[0], link, err);
}
static mt_status b_switch(mt_topo *t, const long *v, mt_tier link, mt_tier nic, mt_error *err) {
    (void)nic;
    return build_switch(t, v[0], link, err);
}
static mt_status b_mesh(mt_topo *t, const long *v, mt_tier link, mt_tier nic, mt_error *err) {
    (void)nic;
    return build_grid(t, v[0], v[1], 0, link, err);
}
static mt_status b_torus(mt_topo *t, const long *v, mt_tier link, mt_tier nic, mt_error *err) {
    (void)nic;
    return build_grid(t, v[0], v[1], 1, link, err);
}
static mt_status b_fattree(mt_topo *t, const long *v, mt_tier link, mt_tier nic, mt_error *err) {
    (void)nic;
    return build_fattree(t, v[0], link, err);
}
static mt_status b_dgx1(mt_topo *t, const long *v, mt_tier link, mt_tier nic, mt_error *err) {
    (void)v, (void)nic;
    return build_dgx1(t, link, err);
}
static mt_status b_dgx(mt_topo *t, const long *v, mt_tier link, mt_tier nic, mt_error *err) {
    (void)v;
    int32_t nic0;
    return build_node(t, 8, link, nic, &nic0, err);
}
static mt_status b_multinode(mt_topo *t, const long *v, mt_tier link, mt_tier nic, mt_error *err) {
    return build_multinode(t, v[0], v[1], v[2] == 0, link, nic, err);
}

#define SIZE(name, pos) {name, pos, NULL, -1, 1, MT_PRESET_MAX_GPUS, 0}

static const mt_topo_preset PRESETS[] = {
    {"ring", "ring:N[,uni]", "N GPUs in a ring, duplex links (uni: one direction only)",
     {SIZE("N", 1), {"direction", 0, "bi|uni", 0, 0, 0, 0}}, TIER_GENERIC, NO_TIER, gpus_n, b_ring, mt_router_ring, .flow_groups = MT_GROUPS_RINGS},
    {"fc", "fc:N", "fully connected: a duplex link between every pair of N GPUs", {SIZE("N", 1)}, TIER_GENERIC,
     NO_TIER, gpus_n, b_fc, mt_router_fc},
    {"switch", "switch:N", "N GPUs on one non-blocking switch (NVSwitch-like)", {SIZE("N", 1)}, TIER_GENERIC,
     NO_TIER, gpus_n, b_switch, mt_router_switch, .nvswitch = 1,
     .flow_groups = MT_GROUPS_RINGS | MT_GROUPS_TREES},
    {"mesh", "mesh:RxC", "2-D grid of R x C GPUs, duplex links", {SIZE("R", 1), SIZE("C", 1)}, TIER_GENERIC,
     NO_TIER, gpus_rc, b_mesh, mt_router_mesh},
    {"torus", "torus:RxC", "2-D grid that wraps around", {SIZE("R", 1), SIZE("C", 1)}, TIER_GENERIC, NO_TIER,
     gpus_rc, b_torus, mt_router_torus},
    {"fattree", "fattree:k=K", "k-ary fat-tree: K pods, K^3/4 GPUs, every link at the link tier",
     {{"k", 1, NULL, -1, 2, 128, 1}}, TIER_GENERIC, NO_TIER, gpus_fattree, b_fattree, mt_router_fattree},
    {"dgx1", "dgx1", "8 V100s, NVLink hybrid cube-mesh (link tier per NVLink, x2 on doubled pairs)", {{NULL}},
     {25 * GBPS, 500}, NO_TIER, gpus_8, b_dgx1, NULL, .gpu = "V100"},
    {"dgx-a100", "dgx-a100", "8 GPUs on an NVSwitch (link tier, per GPU) and one NIC per GPU (200 Gb/s)",
     {{NULL}}, {300 * GBPS, 500}, {25 * GBPS, 2000}, gpus_8, b_dgx, mt_router_dgx, .gpu = "A100-80GB",
     .nvswitch = 1},
    {"dgx-h100", "dgx-h100", "8 GPUs on an NVSwitch (link tier, per GPU) and one NIC per GPU (400 Gb/s)",
     {{NULL}}, {450 * GBPS, 500}, {50 * GBPS, 2000}, gpus_8, b_dgx, mt_router_dgx, .gpu = "H100-SXM",
     .nvswitch = 1},
    {"multinode", "multinode:nodes=M,gpus=G[,fabric=rail|switch]",
     "M nodes of G GPUs on an NVSwitch (link tier), one NIC per GPU (nic tier) on G rail switches (rail, "
     "the default) or one switch",
     {SIZE("nodes", 0), SIZE("gpus", 0), {"fabric", 0, "rail|switch", 0, 0, 0, 0}}, {450 * GBPS, 500},
     {50 * GBPS, 2000}, gpus_multinode, b_multinode, mt_router_multinode, .nvswitch = 1,
     .flow_groups = MT_GROUPS_TREES},
};

const mt_topo_preset *mt_topo_presets(int32_t *n) {
    *n = (int32_t)(sizeof PRESETS / sizeof PRESETS[0]);
    return PRESETS;
}

/* ---- --help, from the table ---- */

static void tier_text(char *buf, size_t len, const char *name, mt_tier x) {
    if (x.lat_ns < 1000) snprintf(buf, len, "%s %gGB/s, %gns", name, x.bw_Bps / GBPS, x.lat_ns);
    else snprintf(buf, len, "%s %gGB/s, %gus", name, x.bw_Bps / GBPS, x.lat_ns / 1000);
}

void mt_topo_presets_help(FILE *out) {
    enum { N = sizeof PRESETS / sizeof PRESETS[0] };
    mt_flag rows[N + 1];
    char text[N + 1][320], link[64], nic[64];
    for (int i = 0; i < N; i++) {
        const mt_topo_preset *p = &PRESETS[i];
        tier_text(link, sizeof link, "link tier", p->link);
        tier_text(nic, sizeof nic, "; NIC tier", p->nic);
        snprintf(text[i], sizeof text[i], "%s; %s%s%s%s", p->help, link, p->nic.bw_Bps > 0 ? nic : "",
                 p->gpu ? "; GPUs: " : "", p->gpu ? p->gpu : "");
        rows[i] = (mt_flag){.name = p->syntax, .help = text[i]};
    }
    tier_text(link, sizeof link, " the link tier's", mt_topo_file_tier);
    snprintf(text[N], sizeof text[N], "a topology file (format in netmodels/topologies.h); a link without its own "
             "bandwidth or latency takes the file's \"defaults\", else%s", link);
    rows[N] = (mt_flag){.name = "FILE.json, FILE.csv", .help = text[N]};
    mt_flag_table t = {"Topologies (--topology SPEC; bandwidths per link and direction)", rows, N + 1};
    mt_flags_help(out, &t);
}

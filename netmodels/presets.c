/* netmodels/presets.c — the named topology presets (see topologies.h). Each builder adds
 * nodes and links through the network/topology builder API and returns MT_OK or its error. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "netmodels/topologies.h"

#define GBPS 1e9
#define MAX_SIZE 1000000

void mt_topo_params_init(mt_topo_params *p) {
    memset(p, 0, sizeof *p);
    p->link_lat_ns = p->nic_lat_ns = -1;
}

const char *mt_topo_presets_help(void) {
    return "topologies (--topology SPEC):\n"
           "  ring:N[,uni]   fc:N   switch:N   mesh:RxC   torus:RxC   fattree:k=K\n"
           "    link tier default 100 GB/s, 500 ns per link\n"
           "  dgx1           8 V100, NVLink cube-mesh; 25 GB/s per NVLink (x2 on doubled pairs)\n"
           "  dgx-a100       8 GPUs, NVSwitch 300 GB/s per GPU; NIC 25 GB/s (200 Gb/s), 2 us\n"
           "  dgx-h100       8 GPUs, NVSwitch 450 GB/s per GPU; NIC 50 GB/s (400 Gb/s), 2 us\n"
           "  multinode:nodes=M,gpus=G[,fabric=rail|switch]  NVSwitch nodes (link tier, default\n"
           "                 450 GB/s) joined by NICs (nic tier, default 50 GB/s, 2 us)\n"
           "  FILE.json / FILE.csv   a topology file (see docs in netmodels/topologies.h)\n";
}

typedef struct spec {
    char name[32];
    long pos[2];   /* positional sizes: N, or R and C */
    int npos;
    long k, nodes, gpus;
    int uni, rail;
} spec;

static mt_status bad(mt_error *err, const char *text, const char *why) {
    return mt_fail(err, MT_EINVAL,
                   "bad topology '%s': %s (try ring:8, switch:16, mesh:4x4, fattree:k=4, dgx-h100, "
                   "multinode:nodes=4,gpus=8, or a .json/.csv file)", text, why);
}

static int parse_long(const char *s, long *out) {
    char *end;
    if (!isdigit((unsigned char)*s)) return 0;
    long v = strtol(s, &end, 10);
    if (*end || v <= 0 || v > MAX_SIZE) return 0;
    *out = v;
    return 1;
}

static mt_status parse_spec(const char *text, spec *s, mt_error *err) {
    memset(s, 0, sizeof *s);
    s->rail = 1;
    const char *colon = strchr(text, ':');
    size_t nlen = colon ? (size_t)(colon - text) : strlen(text);
    if (nlen == 0 || nlen >= sizeof s->name) return bad(err, text, "missing or long name");
    memcpy(s->name, text, nlen);
    if (!colon) return MT_OK;
    char buf[256];
    if (strlen(colon + 1) >= sizeof buf) return bad(err, text, "arguments too long");
    strcpy(buf, colon + 1);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (eq) {
            *eq = '\0';
            const char *v = eq + 1;
            long *dst = !strcmp(tok, "k") ? &s->k : !strcmp(tok, "nodes") ? &s->nodes
                      : !strcmp(tok, "gpus") ? &s->gpus : NULL;
            if (!strcmp(tok, "fabric")) {
                if (strcmp(v, "rail") && strcmp(v, "switch"))
                    return bad(err, text, "fabric must be rail or switch");
                s->rail = !strcmp(v, "rail");
            } else if (!dst) {
                return bad(err, text, "unknown key (k, nodes, gpus, fabric)");
            } else if (!parse_long(v, dst)) {
                return bad(err, text, "sizes must be positive integers");
            }
        } else if (!strcmp(tok, "uni")) {
            s->uni = 1;
        } else if (!strcmp(tok, "bi")) {
            s->uni = 0;
        } else {
            char *x = strchr(tok, 'x');
            if (x) *x = '\0';
            if (s->npos || !parse_long(tok, &s->pos[0]) || (x && !parse_long(x + 1, &s->pos[1])))
                return bad(err, text, "expected a size like 8 or 4x4");
            s->npos = x ? 2 : 1;
        }
    }
    return MT_OK;
}

typedef struct tier {
    double bw_Bps;
    mt_time_ps lat_ps;
} tier;

static tier pick(double bw, double lat_ns, double def_bw, double def_lat_ns) {
    tier t = {bw > 0 ? bw : def_bw, (mt_time_ps)((lat_ns >= 0 ? lat_ns : def_lat_ns) * 1000.0 + 0.5)};
    return t;
}

static mt_status add_gpus(mt_topo *t, long n, mt_error *err) {
    for (long i = 0; i < n; i++)
        if (mt_topo_add_node(t, MT_NODE_GPU, NULL, err) < 0) return err ? err->code : MT_ENOMEM;
    return MT_OK;
}

static mt_status duplex(mt_topo *t, int32_t a, int32_t b, tier x, mt_error *err) {
    return mt_topo_add_duplex(t, a, b, x.bw_Bps, x.lat_ps, err);
}

static int32_t add_node(mt_topo *t, mt_node_kind k, mt_status *rc, mt_error *err) {
    int32_t id = mt_topo_add_node(t, k, NULL, err);
    if (id < 0) *rc = err ? err->code : MT_ENOMEM;
    return id;
}

static mt_status build_ring(mt_topo *t, long n, int uni, tier x, mt_error *err) {
    MT_CHECK(add_gpus(t, n, err));
    for (long i = 0; i < n && n > 1; i++) {
        int32_t a = (int32_t)i, b = (int32_t)((i + 1) % n);
        if (n == 2 && i == 1) break; /* two GPUs: one link pair, not two */
        if (mt_topo_add_link(t, a, b, x.bw_Bps, x.lat_ps, err) < 0) return err ? err->code : MT_EINVAL;
        if (!uni && mt_topo_add_link(t, b, a, x.bw_Bps, x.lat_ps, err) < 0)
            return err ? err->code : MT_EINVAL;
    }
    if (uni && n == 2 && mt_topo_add_link(t, 1, 0, x.bw_Bps, x.lat_ps, err) < 0)
        return err ? err->code : MT_EINVAL;
    return MT_OK;
}

static mt_status build_fc(mt_topo *t, long n, tier x, mt_error *err) {
    MT_CHECK(add_gpus(t, n, err));
    for (int32_t a = 0; a < n; a++)
        for (int32_t b = a + 1; b < n; b++) MT_CHECK(duplex(t, a, b, x, err));
    return MT_OK;
}

static mt_status build_switch(mt_topo *t, long n, tier x, mt_error *err) {
    MT_CHECK(add_gpus(t, n, err));
    mt_status rc = MT_OK;
    int32_t sw = add_node(t, MT_NODE_SWITCH, &rc, err);
    for (int32_t a = 0; rc == MT_OK && a < n; a++) rc = duplex(t, a, sw, x, err);
    return rc;
}

static mt_status build_grid(mt_topo *t, long r, long c, int wrap, tier x, mt_error *err) {
    MT_CHECK(add_gpus(t, r * c, err));
    for (long i = 0; i < r; i++)
        for (long j = 0; j < c; j++) {
            int32_t me = (int32_t)(i * c + j);
            if (j + 1 < c || (wrap && c > 2)) MT_CHECK(duplex(t, me, (int32_t)(i * c + (j + 1) % c), x, err));
            if (i + 1 < r || (wrap && r > 2)) MT_CHECK(duplex(t, me, (int32_t)(((i + 1) % r) * c + j), x, err));
        }
    return MT_OK;
}

static mt_status build_fattree(mt_topo *t, long k, tier x, mt_error *err) {
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

static mt_status build_dgx1(mt_topo *t, tier x, mt_error *err) {
    /* NVLink pairs of a DGX-1 (V100) and how many NVLinks join them (each GPU has 6). */
    static const int pairs[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2},
                                   {1, 3, 1}, {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1},
                                   {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1},
                                   {6, 7, 2}};
    MT_CHECK(add_gpus(t, 8, err));
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        tier y = {x.bw_Bps * pairs[i][2], x.lat_ps};
        MT_CHECK(duplex(t, pairs[i][0], pairs[i][1], y, err));
    }
    return MT_OK;
}

/* One node of G GPUs on a switch, one NIC per GPU; returns the first NIC id in *nic0. */
static mt_status build_node(mt_topo *t, long g, tier nv, tier nic, int32_t *nic0, mt_error *err) {
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

static mt_status build_multinode(mt_topo *t, long m, long g, int rail, tier nv, tier nic,
                                 mt_error *err) {
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
    return rc;
}

static int is_file_spec(const char *s) {
    size_t n = strlen(s);
    return strchr(s, '/') || (n > 5 && !strcmp(s + n - 5, ".json")) ||
           (n > 8 && !strcmp(s + n - 8, ".json.gz")) || (n > 4 && !strcmp(s + n - 4, ".csv"));
}

static mt_status build_preset(mt_topo *t, const char *text, const spec *s, const mt_topo_params *p,
                              mt_error *err) {
    tier gen = pick(p->link_bw_Bps, p->link_lat_ns, 100 * GBPS, 500);
    const char *n = s->name;
    int one = s->npos == 1, two = s->npos == 2;
    if (!strcmp(n, "ring") || !strcmp(n, "fc") || !strcmp(n, "switch")) {
        if (!one) return bad(err, text, "needs a GPU count, e.g. ring:8");
        if (!strcmp(n, "ring")) return build_ring(t, s->pos[0], s->uni, gen, err);
        return !strcmp(n, "fc") ? build_fc(t, s->pos[0], gen, err) : build_switch(t, s->pos[0], gen, err);
    }
    if (!strcmp(n, "mesh") || !strcmp(n, "torus")) {
        if (!two) return bad(err, text, "needs RxC, e.g. mesh:4x4");
        if (s->pos[0] * s->pos[1] > MAX_SIZE) return bad(err, text, "too many GPUs");
        return build_grid(t, s->pos[0], s->pos[1], n[0] == 't', gen, err);
    }
    if (!strcmp(n, "fattree")) {
        long k = s->k ? s->k : (one ? s->pos[0] : 0);
        if (k < 2 || k % 2 || k > 128) return bad(err, text, "needs an even k in 2..128, e.g. fattree:k=4");
        return build_fattree(t, k, gen, err);
    }
    if (!strcmp(n, "dgx1")) return build_dgx1(t, pick(p->link_bw_Bps, p->link_lat_ns, 25 * GBPS, 500), err);
    if (!strcmp(n, "dgx-a100") || !strcmp(n, "dgx-h100")) {
        int h = n[4] == 'h';
        int32_t nic0;
        return build_node(t, 8, pick(p->link_bw_Bps, p->link_lat_ns, (h ? 450 : 300) * GBPS, 500),
                          pick(p->nic_bw_Bps, p->nic_lat_ns, (h ? 50 : 25) * GBPS, 2000), &nic0, err);
    }
    if (!strcmp(n, "multinode")) {
        if (!s->nodes || !s->gpus) return bad(err, text, "needs nodes=M,gpus=G");
        if (s->nodes * s->gpus > MAX_SIZE) return bad(err, text, "too many GPUs");
        return build_multinode(t, s->nodes, s->gpus, s->rail,
                               pick(p->link_bw_Bps, p->link_lat_ns, 450 * GBPS, 500),
                               pick(p->nic_bw_Bps, p->nic_lat_ns, 50 * GBPS, 2000), err);
    }
    return bad(err, text, "unknown preset");
}

mt_status mt_topo_build(const char *text, const mt_topo_params *p, mt_topo **out, mt_error *err) {
    *out = NULL;
    if (!text || !*text) return bad(err, "", "empty");
    size_t n = strlen(text);
    if (is_file_spec(text))
        return (n > 4 && !strcmp(text + n - 4, ".csv")) ? mt_topo_load_csv(text, p, out, err)
                                                        : mt_topo_load_json(text, p, out, err);
    spec s;
    MT_CHECK(parse_spec(text, &s, err));
    mt_topo *t = mt_topo_new(text);
    if (!t) return mt_fail(err, MT_ENOMEM, "out of memory building '%s'", text);
    mt_status rc = build_preset(t, text, &s, p, err);
    if (rc != MT_OK) {
        mt_topo_free(t);
        return rc;
    }
    mt_topo_set_routing(t, p->metric, p->ecmp);
    *out = t;
    return MT_OK;
}

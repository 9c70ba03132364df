/* report/toposum.c — see toposum.h. */
#include "report/toposum.h"

#include "util/units.h"

static json_t *node_counts(const mt_topo *t) {
    int32_t counts[4] = {0};
    for (int32_t v = 0; v < mt_topo_nnodes(t); v++) counts[mt_topo_kind(t, v)]++;
    return json_pack("{s:i, s:i, s:i, s:i, s:i}", "total", (int)mt_topo_nnodes(t), "gpu", (int)counts[0], "nic",
                     (int)counts[1], "host", (int)counts[2], "switch", (int)counts[3]);
}

/* The route from -> to (node ids) as JSON. */
static mt_status route_json(mt_topo *t, int32_t a, int32_t b, json_t **out, mt_error *err) {
    const int32_t *r;
    int32_t n;
    MT_CHECK(mt_topo_route(t, a, b, &r, &n, err));
    double bott = 0;
    json_t *nodes = json_array();
    json_array_append_new(nodes, json_string(mt_topo_name(t, a)));
    for (int32_t h = 0; h < n; h++) {
        const mt_link *l = mt_topo_link(t, r[h]);
        json_array_append_new(nodes, json_string(mt_topo_name(t, l->dst)));
        if (h == 0 || l->bw_Bps < bott) bott = l->bw_Bps;
    }
    *out = json_pack("{s:s, s:s, s:i, s:o, s:f, s:o}", "from", mt_topo_name(t, a), "to", mt_topo_name(t, b), "hops",
                     (int)n, "nodes", nodes, "latency_ns", (double)mt_topo_path_latency(t, r, n) / 1000.0,
                     "bottleneck_GBps", n ? json_real(bott / 1e9) : json_null());
    return MT_OK;
}

mt_status mt_toposum_json(mt_topo *t, const char *from, const char *to, json_t **out, mt_error *err) {
    *out = NULL;
    int32_t ngpu;
    const int32_t *gpus = mt_topo_gpus(t, &ngpu);
    int32_t a = from ? mt_topo_find(t, from) : (ngpu ? gpus[0] : -1);
    int32_t b = to ? mt_topo_find(t, to) : (ngpu ? gpus[ngpu - 1] : -1);
    if ((from && a < 0) || (to && b < 0))
        return mt_fail(err, MT_EINVAL, "--route: unknown node '%s' (names look like gpu0, sw0, nic0)",
                       from && a < 0 ? from : to);
    double lo = 0, hi = 0, bis = 0;
    for (int32_t l = 0; l < mt_topo_nlinks(t); l++) {
        double bw = mt_topo_link(t, l)->bw_Bps;
        if (l == 0 || bw < lo) lo = bw;
        if (bw > hi) hi = bw;
    }
    MT_CHECK(mt_topo_bisection_Bps(t, &bis, err));
    json_t *route = NULL;
    if (a >= 0 && b >= 0) MT_CHECK(route_json(t, a, b, &route, err));
    *out = json_pack("{s:s, s:o, s:i, s:{s:f, s:f}, s:o, s:o}", "topology", mt_topo_label(t), "nodes", node_counts(t),
                     "links", (int)mt_topo_nlinks(t), "link_bw_GBps", "min", lo / 1e9, "max", hi / 1e9,
                     "bisection_GBps", ngpu >= 2 ? json_real(bis / 1e9) : json_null(), "route",
                     route ? route : json_null());
    return *out ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory describing the topology");
}

static double num(const json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }
static int inum(const json_t *o, const char *k) { return (int)json_integer_value(json_object_get(o, k)); }

void mt_toposum_print(FILE *out, const json_t *s) {
    const json_t *nodes = json_object_get(s, "nodes"), *bw = json_object_get(s, "link_bw_GBps");
    const json_t *route = json_object_get(s, "route"), *bis = json_object_get(s, "bisection_GBps");
    char b1[32], b2[32];
    fprintf(out, "topology: %s\n", json_string_value(json_object_get(s, "topology")));
    int ng = inum(nodes, "gpu"), nn = inum(nodes, "nic"), nh = inum(nodes, "host"), nsw = inum(nodes, "switch");
    fprintf(out, "nodes: %d (%d GPU%s, %d NIC%s, %d host%s, %d switch%s)\n", inum(nodes, "total"), ng, mt_plural(ng), nn,
            mt_plural(nn), nh, mt_plural(nh), nsw, nsw == 1 ? "" : "es");
    fprintf(out, "links: %d directed, %s .. %s per link\n", inum(s, "links"),
            mt_fmt_bandwidth(num(bw, "min") * 1e9, b1, sizeof b1), mt_fmt_bandwidth(num(bw, "max") * 1e9, b2, sizeof b2));
    int ngpu = inum(nodes, "gpu");
    if (json_is_number(bis))
        fprintf(out, "bisection bandwidth: %s (GPU ranks 0..%d -> %d..%d, one direction)\n",
                mt_fmt_bandwidth(json_number_value(bis) * 1e9, b1, sizeof b1), ngpu / 2 - 1, ngpu / 2, ngpu - 1);
    if (!json_is_object(route)) return;
    const json_t *path = json_object_get(route, "nodes");
    fprintf(out, "route %s -> %s: %s", json_string_value(json_object_get(route, "from")),
            json_string_value(json_object_get(route, "to")), json_string_value(json_array_get(path, 0)));
    for (size_t i = 1; i < json_array_size(path); i++) fprintf(out, " -> %s", json_string_value(json_array_get(path, i)));
    const json_t *bott = json_object_get(route, "bottleneck_GBps");
    fprintf(out, " (%d hop%s, latency %s, bottleneck %s)\n", inum(route, "hops"), mt_plural(inum(route, "hops")),
            mt_fmt_time_ns(num(route, "latency_ns"), b2, sizeof b2),
            json_is_number(bott) ? mt_fmt_bandwidth(json_number_value(bott) * 1e9, b1, sizeof b1) : "-");
}

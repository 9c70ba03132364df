/* cli/netopts.c — see netopts.h. */
#include "cli/netopts.h"

#include <stdlib.h>
#include <string.h>

#include "netmodels/registry.h"
#include "util/units.h"

void mt_netopts_init(mt_netopts *o) {
    memset(o, 0, sizeof *o);
    o->network = "flow";
    mt_topo_params_init(&o->tp);
    mt_photonic_params_init(&o->ph);
}

void mt_netopts_help(FILE *out) {
    fprintf(out,
            "network options:\n"
            "  --topology SPEC     preset or file (below)\n"
            "  --link-bw BW        GPU-tier link bandwidth per direction (e.g. 300GB/s, 400Gbps)\n"
            "  --link-lat T        GPU-tier link latency (e.g. 500ns, 1us)\n"
            "  --nic-bw BW / --nic-lat T   NIC and inter-node tier\n"
            "  --routing hops|latency      shortest path metric (default hops); --ecmp spreads\n"
            "                      pairs over equal-cost paths\n"
            "  --network flow|photonic     interconnect model (default flow)\n"
            "  --ports N --port-bw BW --setup-lat T --buffer BYTES   photonic: optical ports per\n"
            "                      endpoint (8), bandwidth per port (60.5GB/s = 484GB/s / 8),\n"
            "                      circuit setup (20ms), receiver buffer (64MiB); --endpoints N\n"
            "                      without --topology (default 84 = 12x7 wafer)\n"
            "Bandwidths are decimal: 1 GB/s = 1e9 B/s, 400Gbps = 50 GB/s.\n%s",
            mt_topo_presets_help());
}

int mt_netopts_take(mt_netopts *o, int argc, char **argv, int *i, mt_error *err) {
    const char *f = argv[*i];
    static const char *with_value[] = {"--topology", "--link-bw", "--link-lat", "--nic-bw",
                                       "--nic-lat", "--routing", "--network", "--ports",
                                       "--port-bw", "--setup-lat", "--buffer", "--endpoints"};
    if (!strcmp(f, "--ecmp")) {
        o->tp.ecmp = 1;
        (*i)++;
        return 1;
    }
    size_t k = 0, nk = sizeof with_value / sizeof with_value[0];
    while (k < nk && strcmp(f, with_value[k])) k++;
    if (k == nk) return 0;
    if (*i + 1 >= argc) {
        mt_fail(err, MT_EINVAL, "%s needs a value", f);
        return -1;
    }
    const char *v = argv[*i + 1];
    *i += 2;
    double x = 0;
    mt_status rc = MT_OK;
    switch (k) {
    case 0: o->topology = v; break;
    case 1: rc = mt_parse_bandwidth(v, &o->tp.link_bw_Bps, err); break;
    case 2: rc = mt_parse_time_ns(v, &o->tp.link_lat_ns, err); break;
    case 3: rc = mt_parse_bandwidth(v, &o->tp.nic_bw_Bps, err); break;
    case 4: rc = mt_parse_time_ns(v, &o->tp.nic_lat_ns, err); break;
    case 5:
        if (!strcmp(v, "hops")) o->tp.metric = MT_ROUTE_HOPS;
        else if (!strcmp(v, "latency")) o->tp.metric = MT_ROUTE_LATENCY;
        else rc = mt_fail(err, MT_EINVAL, "--routing must be hops or latency (got '%s')", v);
        break;
    case 6:
        if (strcmp(v, "flow") && strcmp(v, "photonic"))
            rc = mt_fail(err, MT_EINVAL, "--network must be one of %s (got '%s')", MT_NETMODEL_CHOICES, v);
        o->network = v;
        break;
    case 7:
    case 11: {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 1000000)
            rc = mt_fail(err, MT_EINVAL, "%s needs a positive integer (got '%s')", f, v);
        else if (k == 7) o->ph.ports = (int32_t)n;
        else o->ph.endpoints = (int32_t)n;
        break;
    }
    case 8:
        rc = mt_parse_bandwidth(v, &x, err);
        o->ph.port_bw_Bps = x;
        break;
    case 9:
        rc = mt_parse_time_ns(v, &x, err);
        o->ph.setup_ns = x;
        break;
    case 10:
        rc = mt_parse_bytes(v, &x, err);
        if (rc == MT_OK && x <= 0) rc = mt_fail(err, MT_EINVAL, "--buffer must be > 0");
        o->ph.buffer_bytes = x;
        break;
    }
    return rc == MT_OK ? 1 : -1;
}

mt_status mt_netopts_topology(const mt_netopts *o, mt_topo **out, mt_error *err) {
    *out = NULL;
    if (!o->topology) {
        if (!strcmp(o->network, "photonic")) return MT_OK;
        return mt_fail(err, MT_EINVAL, "--topology is required (e.g. --topology ring:8)");
    }
    return mt_topo_build(o->topology, &o->tp, out, err);
}

mt_status mt_netopts_model(const mt_netopts *o, mt_topo *topo, mt_sched sched, mt_netmodel *out,
                           mt_error *err) {
    return mt_netmodel_create(o->network, topo, &o->ph, sched, out, err);
}

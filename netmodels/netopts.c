/* netmodels/netopts.c — see netopts.h. */
#include "netmodels/netopts.h"

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
            rc = mt_fail(err, MT_EINVAL, "--network must be one of %s (got '%s')", mt_netmodel_names(), v);
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
        o->ph.total_bw_Bps = x; /* per port for now; scaled by ports in mt_netopts_topology */
        o->photonic_total_set = 1;
        break;
    case 9:
        rc = mt_parse_time_ns(v, &x, err);
        o->ph.setup_ps = (mt_time_ps)(x * 1000 + 0.5);
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
    mt_photonic_params ph = o->ph;
    if (o->photonic_total_set) ph.total_bw_Bps = o->ph.total_bw_Bps * ph.ports;
    return mt_netmodel_create(o->network, topo, &ph, sched, out, err);
}

/* The flag table: each flag goes through mt_netopts_take, which parses and checks it. */
static mt_status take_one(void *base, const char *flag, const char *v, mt_error *err) {
    char *argv[2] = {(char *)flag, (char *)v};
    int i = 0;
    return mt_netopts_take(base, v ? 2 : 1, argv, &i, err) == 1 ? MT_OK : (err ? err->code : MT_EINVAL);
}
#define NETFLAG(fn, name)                                                                          \
    static mt_status fn(void *base, const char *v, mt_error *err) { return take_one(base, name, v, err); }
NETFLAG(f_topology, "--topology")
NETFLAG(f_link_bw, "--link-bw")
NETFLAG(f_link_lat, "--link-lat")
NETFLAG(f_nic_bw, "--nic-bw")
NETFLAG(f_nic_lat, "--nic-lat")
NETFLAG(f_routing, "--routing")
NETFLAG(f_ecmp, "--ecmp")
NETFLAG(f_network, "--network")
NETFLAG(f_ports, "--ports")
NETFLAG(f_port_bw, "--port-bw")
NETFLAG(f_setup_lat, "--setup-lat")
NETFLAG(f_buffer, "--buffer")
NETFLAG(f_endpoints, "--endpoints")
#undef NETFLAG

static const mt_flag NET_FLAGS[] = {
    {"--topology", MT_FLAG_CALL, 0, "SPEC", "preset or file (below)", .call = f_topology, .complete = "file"},
    {"--link-bw", MT_FLAG_CALL, 0, "BW", "GPU-tier link bandwidth per direction (e.g. 300GB/s, 400Gbps)", .call = f_link_bw},
    {"--link-lat", MT_FLAG_CALL, 0, "T", "GPU-tier link latency (e.g. 500ns, 1us)", .call = f_link_lat},
    {"--nic-bw", MT_FLAG_CALL, 0, "BW", "NIC and inter-node tier bandwidth", .call = f_nic_bw},
    {"--nic-lat", MT_FLAG_CALL, 0, "T", "NIC and inter-node tier latency", .call = f_nic_lat},
    {"--routing", MT_FLAG_CALL, 0, "hops|latency", "shortest path metric (default hops)", .call = f_routing,
     .choices = "hops|latency"},
    {"--ecmp", MT_FLAG_CALL, 0, NULL, "spread pairs over equal-cost paths", .call = f_ecmp},
    {"--network", MT_FLAG_CALL, 0, "flow|photonic", "interconnect model (default flow)", .call = f_network,
     .choices = "flow|photonic"},
    {"--ports", MT_FLAG_CALL, 0, "N", "photonic: optical ports per endpoint (8)", .call = f_ports},
    {"--port-bw", MT_FLAG_CALL, 0, "BW", "photonic: bandwidth per port (60.5GB/s = 484GB/s / 8)", .call = f_port_bw},
    {"--setup-lat", MT_FLAG_CALL, 0, "T", "photonic: circuit setup (20ms)", .call = f_setup_lat},
    {"--buffer", MT_FLAG_CALL, 0, "BYTES", "photonic: receiver buffer (64MiB)", .call = f_buffer},
    {"--endpoints", MT_FLAG_CALL, 0, "N", "photonic: endpoints without --topology (default 84 = 12x7 wafer)",
     .call = f_endpoints},
};
const mt_flag_table MT_NETOPTS_FLAGS = MT_FLAG_TABLE("Network options", NET_FLAGS);

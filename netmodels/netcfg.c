/* netmodels/netcfg.c — see netcfg.h. */
#include "netmodels/netcfg.h"

#include <string.h>

static const mt_flag NET_FLAGS[] = {
    {"--topology", MT_FLAG_STRING, offsetof(mt_netcfg, topology), "SPEC",
     "the interconnect: a preset or a topology file (below); simulate, compare and hop default to switch:N",
     .complete = "file"},
    {"--network", MT_FLAG_CHOICE, offsetof(mt_netcfg, model), "MODEL",
     "interconnect model: flow (packet-switched, max-min fair flows over the topology's links; the default) or "
     "photonic (circuit-switched optical ports, one endpoint per GPU)",
     .choices = MT_NETMODEL_CHOICES},
};
static const mt_flag LINK_FLAGS[] = {
    {"--link-bw", MT_FLAG_BANDWIDTH, offsetof(mt_netcfg, tp.link_bw_Bps), "BW",
     "GPU-tier link bandwidth per direction with its unit, e.g. 300GB/s or 400Gbps (default: the preset's)", .lo = 0,
     .lo_open = 1, .hi = 1e18},
    {"--link-lat", MT_FLAG_TIME, offsetof(mt_netcfg, tp.link_lat_ns), "T",
     "GPU-tier link latency, e.g. 500ns or 1us (default: the preset's)", .lo = 0, .hi = 1e9},
    {"--routing", MT_FLAG_CHOICE, offsetof(mt_netcfg, tp.metric), "hops|latency",
     "shortest-path metric (default hops)", .choices = "hops|latency"},
    {"--ecmp", MT_FLAG_SWITCH, offsetof(mt_netcfg, tp.ecmp), NULL, "spread pairs over equal-cost paths"},
};
static const mt_flag NIC_FLAGS[] = {
    {"--nic-bw", MT_FLAG_BANDWIDTH, offsetof(mt_netcfg, tp.nic_bw_Bps), "BW",
     "NIC and inter-node tier bandwidth per direction with its unit, e.g. 50GB/s, on presets with NICs (default: "
     "the preset's)", .lo = 0,
     .lo_open = 1, .hi = 1e18},
    {"--nic-lat", MT_FLAG_TIME, offsetof(mt_netcfg, tp.nic_lat_ns), "T",
     "NIC and inter-node tier latency, on presets with NICs (default: the preset's)", .lo = 0, .hi = 1e9},
};
static const mt_flag_table NET_TABLE = MT_FLAG_TABLE("Network options", NET_FLAGS);
static const mt_flag_table LINK_TABLE =
    MT_FLAG_TABLE("Topology links (models that use them: --network flow)", LINK_FLAGS);
static const mt_flag_table NIC_TABLE = MT_FLAG_TABLE("NIC tier (presets with NICs: see Topologies)", NIC_FLAGS);

void mt_netcfg_init(mt_netcfg *c) {
    memset(c, 0, sizeof *c);
    mt_topo_params_init(&c->tp);
    for (int i = 0; i < MT_NETMODEL_COUNT; i++) {
        const mt_netmodel_kind *k = mt_netmodel_kind_at(i);
        if (k->params_init) k->params_init(c->params[i]);
    }
}

/* The tables; model[t] is the model index of table t, or -1 for the shared ones. */
static int tables(const mt_flag_table **out, int *model) {
    int n = 0;
    const mt_flag_table *shared[] = {&NET_TABLE, &LINK_TABLE, &NIC_TABLE};
    for (int i = 0; i < 3; i++) model[n] = -1, out[n++] = shared[i];
    for (int i = 0; i < MT_NETMODEL_COUNT; i++)
        if (mt_netmodel_kind_at(i)->flags) model[n] = i, out[n++] = mt_netmodel_kind_at(i)->flags;
    return n;
}

int mt_netcfg_tables(const mt_flag_table **out) {
    int model[MT_NETCFG_TABLES];
    return tables(out, model);
}

int mt_netcfg_binds(mt_netcfg *c, mt_flag_bind *out) {
    const mt_flag_table *t[MT_NETCFG_TABLES];
    int model[MT_NETCFG_TABLES], n = tables(t, model);
    for (int i = 0; i < n; i++) out[i] = (mt_flag_bind){t[i], model[i] < 0 ? (void *)c : (void *)c->params[model[i]]};
    return n;
}

/* The flag named like argv word `arg` (which may be --name=value), or NULL. */
static const mt_flag *find(const char *arg) {
    const mt_flag_table *t[MT_NETCFG_TABLES];
    int model[MT_NETCFG_TABLES], n = tables(t, model);
    size_t len = strcspn(arg, "=");
    for (int i = 0; i < n; i++)
        for (int32_t k = 0; k < t[i]->n; k++)
            if (strlen(t[i]->flags[k].name) == len && !strncmp(t[i]->flags[k].name, arg, len)) return &t[i]->flags[k];
    return NULL;
}

static int given_here(const mt_netcfg *c, const mt_flag *f) {
    for (int32_t i = 0; i < c->n_given; i++)
        if (c->given[i] == f) return 1;
    return 0;
}

int mt_netcfg_take(mt_netcfg *c, int argc, char **argv, int *i, mt_error *err) {
    const mt_flag *f = find(argv[*i]);
    if (!f) return 0;
    if (given_here(c, f)) return mt_fail(err, MT_EINVAL, "%s is given twice (give it once)", f->name), -1;
    if (c->n_given >= MT_NETCFG_GIVEN_MAX) return mt_fail(err, MT_EINVAL, "too many network options"), -1;
    /* parse this one flag (and its value) with the tables: the same values, ranges and messages */
    int used = f->metavar && !strchr(argv[*i], '=') && *i + 1 < argc ? 2 : 1;
    char *sub[3] = {argv[0], argv[*i], used == 2 ? argv[*i + 1] : NULL};
    mt_flag_bind b[MT_NETCFG_TABLES];
    int nb = mt_netcfg_binds(c, b);
    if (mt_flags_parse(1 + used, sub, 1, b, nb, NULL, NULL, "", NULL, err) != MT_OK) return -1;
    c->given[c->n_given++] = f;
    *i += used;
    return 1;
}

mt_status mt_netcfg_parse(mt_netcfg *c, int argc, char **argv, const mt_flag_table *own, void *own_base,
                          mt_flag_positional_fn pos, void *pos_ctx, const char *cmd, mt_flag_seen *seen,
                          mt_error *err) {
    mt_flag_bind b[1 + MT_NETCFG_TABLES];
    int nb = mt_netcfg_binds(c, b);
    if (own) b[nb++] = (mt_flag_bind){own, own_base};
    MT_CHECK(mt_flags_parse(argc, argv, 1, b, nb, pos, pos_ctx, cmd, seen, err));
    return seen->help ? MT_OK : mt_netcfg_check(c, seen, err);
}

/* ---- the check ---- */

/* The first flag of table t given (through take, or in seen), or NULL. */
static const mt_flag *given_from(const mt_netcfg *c, const mt_flag_seen *seen, const mt_flag_table *t) {
    for (int32_t k = 0; k < t->n; k++)
        if (given_here(c, &t->flags[k])) return &t->flags[k];
    return mt_flag_given_from(seen, t);
}

const mt_netmodel_kind *mt_netcfg_kind(const mt_netcfg *c) {
    const mt_netmodel_kind *k = mt_netmodel_kind_at(c->model);
    return k ? k : mt_netmodel_kind_at(0);
}

const char *mt_netcfg_model_name(const mt_netcfg *c) { return mt_netcfg_kind(c)->name; }

/* Another model's flag, or a tier flag the model or the topology does not have. */
static mt_status check_flags(const mt_netcfg *c, const mt_flag_seen *seen, mt_error *err) {
    const mt_netmodel_kind *k = mt_netcfg_kind(c);
    for (int i = 0; i < MT_NETMODEL_COUNT; i++) {
        const mt_netmodel_kind *o = mt_netmodel_kind_at(i);
        const mt_flag *f = o->flags && i != c->model ? given_from(c, seen, o->flags) : NULL;
        if (f)
            return mt_fail(err, MT_EINVAL, "%s applies to --network %s only (the model is %s: add --network %s or "
                           "drop %s)", f->name, o->name, k->name, o->name, f->name);
    }
    const mt_flag *f = given_from(c, seen, &LINK_TABLE);
    if (!f) f = given_from(c, seen, &NIC_TABLE);
    if (f && !k->uses_links)
        return mt_fail(err, MT_EINVAL, "%s does not apply to --network %s, which does not use the topology's links "
                       "(drop %s)", f->name, k->name, f->name);
    if (!(f = given_from(c, seen, &NIC_TABLE))) return MT_OK;
    char list[128];
    mt_topo_presets_with_nic(list, sizeof list);
    if (!c->topology)
        return mt_fail(err, MT_EINVAL, "%s needs a --topology with a NIC tier (%s)", f->name, list);
    if (mt_topo_spec_is_file(c->topology))
        return mt_fail(err, MT_EINVAL, "%s does not apply to a topology file (give its NIC links' bandwidth and "
                       "latency in %s)", f->name, c->topology);
    const mt_topo_preset *p = mt_topo_preset_find(c->topology);
    if (p && p->nic.bw_Bps <= 0)
        return mt_fail(err, MT_EINVAL, "%s does not apply to %s, which has no NIC tier (presets with one: %s)",
                       f->name, p->name, list);
    return MT_OK;
}

mt_status mt_netcfg_check(const mt_netcfg *c, const mt_flag_seen *seen, mt_error *err) {
    const mt_netmodel_kind *k = mt_netmodel_kind_at(c->model);
    if (!k) return mt_fail(err, MT_EINVAL, "--network must be one of %s", MT_NETMODEL_CHOICES);
    if (c->topology && !mt_topo_spec_is_file(c->topology)) {
        mt_topo_spec s;
        if (!strchr(c->topology, '{')) MT_CHECK(mt_topo_spec_parse(c->topology, &s, err));
        else if (!mt_topo_preset_find(c->topology)) return mt_topo_spec_parse(c->topology, &s, err);
    }
    MT_CHECK(check_flags(c, seen, err));
    return k->check ? k->check(c->params[c->model], c->topology != NULL, err) : MT_OK;
}

/* ---- building ---- */

const char *mt_netcfg_spec(const mt_netcfg *c, int32_t gpus, char *buf, size_t len) {
    if (c->topology) snprintf(buf, len, "%s", c->topology);
    else if (mt_netcfg_kind(c)->uses_links && gpus > 0) snprintf(buf, len, "switch:%d", (int)gpus);
    else if (len) buf[0] = '\0';
    return buf;
}

mt_status mt_netcfg_topology(const mt_netcfg *c, int32_t gpus, mt_topo **out, mt_error *err) {
    *out = NULL;
    char spec[256];
    if (!*mt_netcfg_spec(c, gpus, spec, sizeof spec)) {
        if (!mt_netcfg_kind(c)->uses_links) return MT_OK;
        return mt_fail(err, MT_EINVAL, "--topology is required (e.g. --topology ring:8)");
    }
    return mt_topo_build(spec, &c->tp, out, err);
}

mt_status mt_netcfg_model(const mt_netcfg *c, mt_topo *topo, mt_sched sched, mt_netmodel *out, mt_error *err) {
    const mt_netmodel_kind *k = mt_netcfg_kind(c);
    out->ops = NULL;
    out->self = NULL;
    return k->create(k->params_size ? c->params[c->model] : NULL, topo, sched, out, err);
}

void mt_netcfg_help(FILE *out) {
    const mt_flag_table *t[MT_NETCFG_TABLES];
    int n = mt_netcfg_tables(t);
    for (int i = 0; i < n; i++) mt_flags_help(out, t[i]);
    fprintf(out, "Bandwidths are decimal: 1 GB/s = 1e9 B/s, 400Gbps = 50 GB/s.\n");
    mt_topo_presets_help(out);
}

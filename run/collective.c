/* run/collective.c — see collective.h. */
#include "run/collective.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netmodels/topologies.h"
#include "sim/collexec.h"
#include "sim/engine.h"
#include "util/units.h"

const int mt_coll_dtype_bytes[MT_COLL_DTYPE_COUNT] = {4, 2, 2, 8, 1, 1, 4, 4, 8, 8};

void mt_collective_config_init(mt_collective_config *c) {
    memset(c, 0, sizeof *c);
    mt_coll_params_init(&c->cp);
    c->cp.ranks_per_node = 8;
    c->bytes = c->lo = c->hi = -1;
    mt_netcfg_init(&c->net);
}

mt_status mt_collective_set_op(mt_collective_config *c, const char *v, mt_error *err) {
    return mt_coll_op_parse(v, &c->cp.op, err);
}

mt_status mt_collective_set_algo(mt_collective_config *c, const char *v, mt_error *err) {
    c->nccl = v && !strcmp(v, "nccl");
    return c->nccl ? MT_OK : mt_coll_algo_parse(v, &c->cp.algo, err);
}

mt_status mt_collective_set_nccl_algo(mt_collective_config *c, const char *v, mt_error *err) {
    for (int a = 0; a < MT_NCCL_ALGO_COUNT; a++)
        if (v && !strcmp(v, mt_nccl_algo_name((mt_nccl_algo)a))) {
            c->nccl_force = 1 + a;
            return MT_OK;
        }
    return mt_fail(err, MT_EINVAL, "--nccl-algo: unknown '%s' (use tree, ring or nvls)", v ? v : "");
}

mt_status mt_collective_set_nccl_arch(mt_collective_config *c, const char *v, mt_error *err) {
    mt_nccl_arch a;
    if (mt_nccl_arch_parse(v, &a))
        return mt_fail(err, MT_EINVAL, "--nccl-arch: unknown '%s' (use " MT_NCCL_ARCH_CHOICES ")", v);
    c->nccl_arch = 1 + (int)a;
    return MT_OK;
}

/* A --sweep bound: a bare K, M, G or T suffix is binary (1K = 1024, as nccl-tests -b/-e);
 * anything else as every size flag (KB decimal, KiB binary, a bare number of bytes). */
static mt_status sweep_bound(const char *s, double *out) {
    static const char units[] = "KMGT";
    size_t n = strlen(s);
    const char *u = n > 1 ? strchr(units, s[n - 1]) : NULL;
    if (!u || !*u) return mt_parse_bytes(s, out, NULL);
    char *end;
    double v = strtod(s, &end);
    if (end != s + n - 1 || !isfinite(v)) return MT_EINVAL;
    *out = ldexp(v, 10 * (int)(u - units + 1));
    return MT_OK;
}

mt_status mt_collective_set_sweep(mt_collective_config *c, const char *v, mt_error *err) {
    char lo[64];
    const char *colon = strchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : 0;
    if (colon && len < sizeof lo) memcpy(lo, v, len), lo[len] = '\0';
    if (!colon || len >= sizeof lo || sweep_bound(lo, &c->lo) != MT_OK || sweep_bound(colon + 1, &c->hi) != MT_OK ||
        !(c->lo > 0) || c->hi < c->lo || c->hi / c->lo > ldexp(1, MT_COLL_TABLE_MAX - 1))
        return mt_fail(err, MT_EINVAL, "--sweep needs MIN:MAX with 0 < MIN <= MAX <= 2^%d MIN, e.g. 1K:1G (got '%s')",
                       MT_COLL_TABLE_MAX - 1, v);
    return MT_OK;
}

mt_status mt_collective_check(const mt_collective_config *c, mt_error *err) {
    if ((c->nccl_arch || c->nccl_force) && !c->nccl) {
        const char *f = c->nccl_arch ? "nccl-arch" : "nccl-algo";
        return mt_fail(err, MT_EINVAL, "--%s applies to --algo nccl only (add it, or leave --%s out)", f, f);
    }
    return MT_OK;
}

/* A fresh engine and model on topo; nep: its endpoint count, and when bytes >= 0 the
 * collective's time for that size. */
static mt_status run_one(const mt_collective_config *c, const mt_coll_params *cp0, mt_topo *topo, double bytes,
                         int32_t *nep, double *us, mt_error *err) {
    mt_engine *e = mt_engine_new();
    mt_netmodel net = {0};
    mt_status rc = e ? mt_netcfg_model(&c->net, topo, mt_engine_sched(e), &net, err)
                     : mt_fail(err, MT_ENOMEM, "out of memory");
    const int32_t *eps;
    if (rc == MT_OK) *nep = mt_net_endpoints(&net, &eps);
    mt_coll_schedule *s = NULL;
    mt_coll_params cp = *cp0;
    cp.bytes = bytes;
    mt_time_ps t = 0;
    if (rc == MT_OK && bytes >= 0) rc = mt_coll_build(&cp, &s, err);
    if (rc == MT_OK && s) rc = mt_collexec_time(s, &net, e, NULL, &t, err);
    if (rc == MT_OK) *us = (double)t / 1e6;
    mt_coll_free(s);
    mt_net_free(&net);
    mt_engine_free(e);
    return rc;
}

mt_status mt_run_nccl_fabric(const mt_netcfg *net, int32_t gpus_per_node, int arch, int32_t nranks,
                             mt_nccl_fabric *out, mt_error *err) {
    mt_topo_spec spec;
    if (!net->topology || mt_topo_spec_is_file(net->topology))
        return mt_fail(err, MT_EINVAL, "--algo nccl needs a topology preset (dgx-h100, multinode:..., switch:N), "
                       "not %s: NCCL's tuner reads its link and NIC tiers", net->topology ? net->topology : "none");
    MT_CHECK(mt_topo_spec_parse(net->topology, &spec, err));
    const mt_topo_preset *p = spec.preset;
    memset(out, 0, sizeof *out);
    out->nranks = nranks;
    out->intra_Bps = net->tp.link_bw_Bps > 0 ? net->tp.link_bw_Bps : p->link.bw_Bps;
    out->inter_Bps = p->nic.bw_Bps > 0 ? (net->tp.nic_bw_Bps > 0 ? net->tp.nic_bw_Bps : p->nic.bw_Bps) : 0;
    int32_t gpn = gpus_per_node > 0 ? gpus_per_node : 8;
    for (int k = 0; k < MT_PRESET_PARAMS_MAX && p->params[k].name; k++)
        if (!strcmp(p->params[k].name, "gpus") && !strcmp(p->name, "multinode")) gpn = (int32_t)spec.v[k];
    out->nnodes = out->inter_Bps > 0 ? (nranks + gpn - 1) / gpn : 1;
    out->gpus_per_node = out->inter_Bps > 0 ? gpn : 0;
    out->link_lat_ns = net->tp.link_lat_ns >= 0 ? net->tp.link_lat_ns : p->link.lat_ns;
    out->nic_lat_ns = net->tp.nic_lat_ns >= 0 ? net->tp.nic_lat_ns : p->nic.lat_ns;
    out->nvswitch = p->nvswitch;
    out->arch = arch > 0 ? (mt_nccl_arch)(arch - 1) : mt_nccl_arch_of_gpu(p->gpu);
    return MT_OK;
}

/* The i-th word of MT_COLL_DTYPES into buf. */
static void dtype_name(int i, char *buf, size_t len) {
    const char *w = MT_COLL_DTYPES;
    while (i-- > 0) w = strchr(w, '|') + 1;
    snprintf(buf, len, "%.*s", (int)strcspn(w, "|"), w);
}

static mt_status run_sizes(const mt_collective_config *c, mt_topo *topo, mt_coll_table *out, mt_error *err) {
    int32_t nep = 0;
    double us;
    MT_CHECK(run_one(c, &c->cp, topo, -1, &nep, &us, err));
    mt_coll_params cp = c->cp;
    cp.nranks = c->ranks ? c->ranks : nep;
    if (cp.nranks > nep)
        return mt_fail(err, MT_EINVAL, "--ranks %d exceeds the %d GPU%s of the topology", (int)cp.nranks, (int)nep,
                       mt_plural(nep));
    out->ranks = cp.nranks;
    out->busbw_factor = mt_coll_busbw_factor(cp.op, cp.nranks);
    double lo = c->lo > 0 ? c->lo : c->bytes, hi = c->lo > 0 ? c->hi : c->bytes;
    mt_nccl_fabric f;
    if (c->nccl) MT_CHECK(mt_run_nccl_fabric(&c->net, c->cp.ranks_per_node, c->nccl_arch, cp.nranks, &f, err));
    for (double size = lo; size <= hi * (1 + 1e-12) && out->n < MT_COLL_TABLE_MAX; size *= 2) {
        if (c->nccl) {
            mt_nccl_cost nc;
            MT_CHECK(mt_nccl_tune(&f, cp.op, size, c->nccl_force - 1, &nc, err));
            out->time_us[out->n] = nc.time_us;
            snprintf(out->row_algo[out->n], sizeof out->row_algo[0], "%s/%s", mt_nccl_algo_name(nc.algo),
                     mt_nccl_proto_name(nc.proto));
            out->size[out->n++] = size;
            if (size == 0) break;
            continue;
        }
        MT_CHECK(run_one(c, &cp, topo, size, &nep, &out->time_us[out->n], err));
        out->size[out->n++] = size;
        if (size == 0) break;
    }
    return MT_OK;
}

mt_status mt_run_collective(const mt_collective_config *c, mt_coll_table *out, mt_error *err) {
    memset(out, 0, sizeof *out);
    if ((c->bytes >= 0) == (c->lo > 0))
        return mt_fail(err, MT_EINVAL, "give --bytes SIZE or --sweep MIN:MAX%s (see --help)",
                       c->bytes >= 0 ? ", not both" : "");
    if (c->cp.op == MT_COLL_SENDRECV && c->cp.peer == c->cp.root)
        return mt_fail(err, MT_EINVAL, "sendrecv from rank %d to itself moves nothing: give --peer other than "
                       "--root", (int)c->cp.root);
    out->op = mt_coll_op_name(c->cp.op);
    out->algo = c->nccl ? "nccl (its tuner's choice per size)" : mt_coll_algo_name(c->cp.algo);
    out->network = mt_netcfg_model_name(&c->net);
    dtype_name(c->dtype, out->type, sizeof out->type);
    out->type_bytes = mt_coll_dtype_bytes[c->dtype];
    mt_netcfg_spec(&c->net, 0, out->topology, sizeof out->topology);
    mt_topo *topo = NULL;
    mt_status rc = mt_netcfg_topology(&c->net, 0, &topo, err);
    if (rc == MT_OK) rc = run_sizes(c, topo, out, err);
    mt_topo_free(topo);
    return rc;
}

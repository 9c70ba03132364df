/* cli/simrun.c — see simrun.h. */
#include "cli/simrun.h"

#include <stdio.h>
#include <string.h>

#include "util/units.h"

void mt_simrun_cfg_init(mt_simrun_cfg *c) {
    memset(c, 0, sizeof *c);
    mt_plan_init(&c->plan);
    mt_netcfg_init(&c->net);
    mt_sim_opts_init(&c->sim);
    c->host_model = MT_HOST_AUTO;
    c->host_scale = 1;
    c->op_scale = 1;
}

/* The caller's operator times (pm's, or the trace's rescaled) times a factor. */
typedef struct scaled_optime {
    mt_perfmodel *pm;
    double scale;
} scaled_optime;

static double optime_scaled(void *ctx, const trace *t, int32_t op, double batch_factor, int32_t tp_split) {
    const scaled_optime *s = ctx;
    double ns = s->pm ? mt_perfmodel_op_time_ns(s->pm, t, op, batch_factor, tp_split)
                      : mt_optime_proportional(NULL, t, op, batch_factor, tp_split);
    return ns * s->scale;
}

void mt_simrun_free(mt_simrun *r) {
    if (!r) return;
    mt_sim_result_free(r->res);
    mt_net_free(&r->net);
    mt_engine_free(r->e);
    mt_topo_free(r->topo);
    mt_program_free(r->prog);
    mt_hostmodel_free(r->host);
    memset(r, 0, sizeof *r);
}

mt_status mt_simrun_run(const trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_simrun *out,
                        mt_error *err) {
    memset(out, 0, sizeof *out);
    out->plan = cfg->plan;
    mt_netcfg net = cfg->net;
    mt_status rc = mt_plan_resolve(&out->plan, t, err);
    if (rc == MT_OK) {
        if (*mt_netcfg_spec(&net, out->plan.gpus, out->topology, sizeof out->topology)) net.topology = out->topology;
        int host = cfg->host_model == MT_HOST_AUTO ? mt_hostmodel_available(t) : cfg->host_model == MT_HOST_TRACE;
        if (host) rc = mt_hostmodel_build(t, &out->host, err);
        if (rc == MT_OK && out->host && (double)out->host->host_total_ps * cfg->host_scale > MT_TIME_MAX_NS * 1e3)
            rc = mt_fail(err, MT_EINVAL, "--host-scale %g makes the step's host work %g s, beyond the simulator's "
                         "range (1e6 s)", cfg->host_scale, (double)out->host->host_total_ps * cfg->host_scale / 1e12);
        if (rc == MT_OK && out->host && cfg->host_scale > 0 && cfg->host_scale != 1)
            mt_hostmodel_scale(out->host, cfg->host_scale);
        scaled_optime so = {pm, cfg->op_scale};
        mt_program_opts po = {pm ? mt_perfmodel_op_time_ns : NULL, pm, host};
        if (cfg->op_scale > 0 && cfg->op_scale != 1) {
            po.optime = optime_scaled;
            po.optime_ctx = &so;
        }
        if (rc == MT_OK) rc = mt_program_build(t, &out->plan, &po, &out->prog, err);
    }
    if (rc == MT_OK) rc = mt_netcfg_topology(&net, 0, &out->topo, err);
    if (rc == MT_OK && !(out->e = mt_engine_new())) rc = mt_fail(err, MT_ENOMEM, "out of memory creating the engine");
    if (rc == MT_OK) rc = mt_netcfg_model(&net, out->topo, mt_engine_sched(out->e), &out->net, err);
    if (rc == MT_OK && cfg->on_link && mt_net_can(&out->net, MT_NETOP_LINK_OBSERVER))
        rc = mt_net_set_link_observer(&out->net, cfg->on_link, cfg->link_ctx, err);
    if (rc == MT_OK && cfg->prepare) rc = cfg->prepare(cfg->prepare_ctx, out, err);
    if (rc == MT_OK) {
        mt_sim_opts so = cfg->sim;
        so.host = out->host;
        rc = mt_simulate(out->prog, &out->net, out->e, &so, &out->res, err);
    }
    if (rc != MT_OK) mt_simrun_free(out);
    return rc;
}

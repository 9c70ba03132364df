/* run/simrun.c — see simrun.h. */
#include "run/simrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfmodel/commslow.h"
#include "perfmodel/fp8.h"
#include "run/collective.h"
#include "util/units.h"

void mt_simrun_cfg_init(mt_simrun_cfg *c) {
    memset(c, 0, sizeof *c);
    mt_plan_init(&c->plan);
    mt_netcfg_init(&c->net);
    mt_sim_opts_init(&c->sim);
    c->host_model = MT_HOST_AUTO;
    c->host_scale = 1;
    c->op_scale = 1;
    c->comm_slowdown = MT_COMM_SLOW_AUTO;
}

mt_simrun_cfg mt_simrun_cfg_of(const mt_run_config *rc, int32_t gpus) {
    mt_simrun_cfg c;
    mt_simrun_cfg_init(&c);
    c.plan = mt_run_plan(rc, gpus);
    c.net = rc->net;
    c.sim.ranks_per_node = rc->gpus_per_node;
    c.host_model = rc->host_model;
    c.host_scale = rc->host_scale;
    c.op_scale = rc->op_scale;
    c.comm_slowdown = rc->comm_slowdown;
    c.sim.no_fold = rc->no_fold ? "--no-fold" : NULL;
    c.sim.no_netfold = rc->no_netfold ? "--no-net-fold" : NULL;
    return c;
}

/* The caller's operator times (pm's, or the trace's rescaled) times a factor. */
typedef struct scaled_optime {
    mt_perfmodel *pm;
    double scale;
} scaled_optime;

static double optime_scaled(void *ctx, const mt_trace *t, int32_t op, double batch_factor, int32_t tp_split) {
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
    mt_pool_lock(r->pool); /* igraph_destroy */
    mt_topo_free(r->topo);
    mt_pool_unlock(r->pool);
    mt_program_free(r->prog);
    if (!r->host_borrowed) mt_hostmodel_free((mt_hostmodel *)r->host);
    free(r->comm_slow);
    memset(r, 0, sizeof *r);
}

/* The host model the configuration asks for (NULL: none), scaled. */
mt_status mt_simrun_host(const mt_trace *t, const mt_simrun_cfg *cfg, mt_hostmodel **out, mt_error *err) {
    *out = NULL;
    int host = cfg->host_model == MT_HOST_AUTO ? mt_hostmodel_available(t) : cfg->host_model == MT_HOST_TRACE;
    if (!host) return MT_OK;
    MT_CHECK(mt_hostmodel_build(t, out, err));
    double host_s = (double)(*out)->host_total_ps * cfg->host_scale / 1e12;
    if ((double)(*out)->host_total_ps * cfg->host_scale > MT_TIME_MAX_NS * 1e3) {
        mt_hostmodel_free(*out);
        *out = NULL;
        return mt_fail(err, MT_EINVAL, "--host-scale %g makes the step's host work %g s, beyond the simulator's "
                       "range (1e6 s)", cfg->host_scale, host_s);
    }
    if (cfg->host_scale > 0 && cfg->host_scale != 1) mt_hostmodel_scale(*out, cfg->host_scale);
    return MT_OK;
}

/* The pipeline partitioner's cost of a byte between stages (program.h): 1 / the GPU tier's link
 * bandwidth of the run's topology (--link-bw, else its preset's or a topology file's default); 0
 * without a pipeline or a topology (a model without links). */
static double pp_send_ns_per_byte(const mt_simrun_cfg *cfg, const mt_plan *pl) {
    char spec[256];
    const char *s = pl->pp > 1 ? mt_netcfg_spec(&cfg->net, pl->gpus, spec, sizeof spec) : "";
    if (!s || !*s) return 0;
    double bw = cfg->net.tp.link_bw_Bps;
    if (!(bw > 0)) {
        const mt_topo_preset *p = mt_topo_preset_find(s);
        bw = p ? p->link.bw_Bps : mt_topo_file_tier.bw_Bps;
    }
    return bw > 0 ? 1e9 / bw : 0;
}

/* out->comm_slow for the program's trace t: every op's cfg->comm_slowdown, or the model of
 * perfmodel/commslow.h on pm's predicted GPU with the link tiers of the run's topology (its
 * preset's NVLink and NIC; without a preset, the GPU's own link, nothing across nodes). */
static mt_status build_comm_slow(const mt_trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_simrun *out,
                                 mt_error *err) {
    double f = cfg->comm_slowdown;
    const mt_gpu_spec *g = mt_perfmodel_gpu(pm);
    mt_cslow m = {f, f, f, f};
    if (f == 0 || !t || t->n_ops <= 0) {
        snprintf(out->comm_slow_why, sizeof out->comm_slow_why, "off");
        return MT_OK;
    }
    if (f < 0 && t->dist.world_size > 1) { /* the trace's kernels already ran beside its collectives */
        snprintf(out->comm_slow_why, sizeof out->comm_slow_why, "off (a %d-rank trace: its kernel times include it)",
                 (int)t->dist.world_size);
        return MT_OK;
    }
    if (f < 0) {
        mt_nccl_fabric fab;
        mt_error ignore = {0};
        mt_netcfg net = cfg->net;
        if (*mt_netcfg_spec(&net, out->plan.gpus, out->topology, sizeof out->topology)) net.topology = out->topology;
        if (mt_run_nccl_fabric(&net, cfg->sim.ranks_per_node, 0, out->plan.gpus, &fab, &ignore) != MT_OK)
            fab = (mt_nccl_fabric){.intra_Bps = g ? g->link_Bps : 0};
        if (!mt_cslow_model(g, MT_CSLOW_CHANNELS, MT_CSLOW_CHANNELS_NET, fab.intra_Bps, fab.inter_Bps, &m)) {
            snprintf(out->comm_slow_why, sizeof out->comm_slow_why, "off (%s)",
                     g ? "the GPU table gives no SM count or HBM bandwidth" : "no GPU: CPU processes");
            return MT_OK;
        }
        snprintf(out->comm_slow_why, sizeof out->comm_slow_why, "%s: compute-bound x%.3f / x%.3f, memory-bound "
                 "x%.3f / x%.3f (in a node / across nodes)", g->name, 1 + m.sm_intra, 1 + m.sm_inter,
                 1 + m.mem_intra, 1 + m.mem_inter);
    } else
        snprintf(out->comm_slow_why, sizeof out->comm_slow_why, "every kernel x%.3f (--comm-slowdown)", 1 + f);
    if (!(out->comm_slow = malloc(2 * (size_t)t->n_ops * sizeof *out->comm_slow)))
        return mt_fail(err, MT_ENOMEM, "out of memory for the slowdowns of %d ops", (int)t->n_ops);
    mt_cslow_ops(f < 0 ? &m : NULL, g, pm ? mt_perfmodel_tf32(pm) : MT_TF32_CONV, t, f, out->comm_slow);
    return MT_OK;
}

/* --precision fp8-mixed (gemm=fp8): the linear GEMMs of the inner op times in FP8 on g (perfmodel/fp8.h). */
typedef struct fp8_optime {
    mt_optime_fn inner;
    void *ctx;
    const mt_gpu_spec *g;
    mt_tf32 tf;
} fp8_optime;

static double optime_fp8(void *ctx, const mt_trace *t, int32_t op, double batch_factor, int32_t tp_split) {
    const fp8_optime *f = ctx;
    double ns = f->inner(f->ctx, t, op, batch_factor, tp_split);
    mt_work w;
    mt_work_of_trace_op(t, op, &w);
    if (!(ns > 0) || !mt_fp8_gemm(&w)) return ns;
    double act, weight;
    mt_fp8_cast_bytes(t, op, &act, &weight);
    int bd = mt_op_batch_dependent(t, op) != 0;
    double split = tp_split > 1 ? tp_split : 1, cast = ((bd ? act * batch_factor : act) + weight) / split;
    mt_work ws = mt_work_scale(&w, bd, batch_factor, tp_split);
    return mt_fp8_gemm_ns(f->g, &ws, ns, cast, f->tf);
}

/* The GPU FP8 GEMMs run on: pm's predicted one, refused (one line) without an FP8 peak or without a
 * bf16/fp16 matmul in t. O(ops) at most. */
static mt_status fp8_gpu(const mt_trace *t, mt_perfmodel *pm, const mt_gpu_spec **out, mt_error *err) {
    const mt_gpu_spec *g = mt_perfmodel_gpu(pm);
    if (!g)
        return mt_fail(err, MT_EINVAL, "--precision fp8-mixed needs a GPU (a GPU trace or --target-gpu): these ranks "
                       "are CPU processes or an unknown device");
    if (!(g->peak_flops[MT_DT_FP8] > 0))
        return mt_fail(err, MT_EINVAL, "--precision fp8-mixed: the %s has no FP8 tensor cores (no fp8 peak in the GPU "
                       "table); FP8 GEMMs need Hopper or later (H100, H200, B200) or an MI300X (--target-gpu)", g->name);
    int32_t n = 0;
    for (int32_t i = 0; i < t->n_ops && !n; i++) {
        mt_work w;
        mt_work_of_trace_op(t, i, &w);
        n += mt_fp8_gemm(&w);
    }
    if (!n)
        return mt_fail(err, MT_EINVAL, "--precision fp8-mixed: the trace has no bf16 or fp16 matmul to run in FP8 "
                       "(record it in bf16: FP8 recipes cast bf16 linears)");
    *out = g;
    return MT_OK;
}

static mt_status build_program(const mt_trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_simrun *out,
                               mt_error *err) {
    out->netcfg = cfg->net; /* for run/estimate.c before the network is built */
    scaled_optime so = {pm, cfg->op_scale};
    mt_program_opts po = {pm ? mt_perfmodel_op_time_ns : NULL, pm, out->host != NULL,
                          pp_send_ns_per_byte(cfg, &out->plan), cfg->bound_only};
    if (cfg->op_scale > 0 && cfg->op_scale != 1) {
        po.optime = optime_scaled;
        po.optime_ctx = &so;
    }
    fp8_optime f8 = {po.optime ? po.optime : optime_scaled, po.optime ? po.optime_ctx : &so, NULL, MT_TF32_CONV};
    if (out->plan.prec.fp8) {
        MT_CHECK(fp8_gpu(t, pm, &f8.g, err));
        f8.tf = mt_perfmodel_tf32(pm);
        po.optime = optime_fp8;
        po.optime_ctx = &f8;
    }
    return mt_program_build(t, &out->plan, &po, &out->prog, err);
}

/* On a worker thread: freezes the topology now, under the pool's lock (its link tables and route
 * caches), so that the simulation starts from a built topology. Routing calls igraph only for the
 * latency metric's Dijkstra (network/topology.c), which mt_simrun_igraph_free keeps off threads. */
static mt_status freeze_topology(mt_topo *topo, mt_error *err) {
    int32_t n = 0;
    const int32_t *gpus = mt_topo_gpus(topo, &n), *links = NULL;
    int32_t nlinks = 0;
    return n > 0 ? mt_topo_route(topo, gpus[0], gpus[0], &links, &nlinks, err) : MT_OK;
}

/* Called under the pool's lock when there is a pool. */
static mt_status build_network_locked(const mt_simrun_cfg *cfg, mt_simrun *out, mt_error *err) {
    mt_netcfg net = cfg->net;
    if (*mt_netcfg_spec(&net, out->plan.gpus, out->topology, sizeof out->topology)) net.topology = out->topology;
    MT_CHECK(mt_netcfg_topology(&net, 0, &out->topo, err));
    if (out->plan.algo == MT_ALGO_NCCL)
        MT_CHECK(mt_run_nccl_fabric(&net, cfg->sim.ranks_per_node, out->nccl_arch, out->plan.gpus, &out->nccl, err));
    if (cfg->pool && out->topo) MT_CHECK(freeze_topology(out->topo, err));
    if (!(out->e = mt_engine_new())) return mt_fail(err, MT_ENOMEM, "out of memory creating the engine");
    out->netcfg = cfg->net;
    return mt_netcfg_model(&net, out->topo, mt_engine_sched(out->e), &out->net, err);
}

static mt_status build_network(const mt_simrun_cfg *cfg, mt_simrun *out, mt_error *err) {
    mt_pool_lock(cfg->pool);
    mt_status rc = build_network_locked(cfg, out, err);
    mt_pool_unlock(cfg->pool);
    return rc;
}

int mt_simrun_igraph_free(const mt_netcfg *net) { return net->tp.metric != MT_ROUTE_LATENCY; }

/* mt_sim_opts.fresh: the run's topology, engine and network model built again, for the unfolded
 * rerun of a folded run whose replicas diverged. */
static mt_status fresh_network(void *ctx, mt_netmodel **net, mt_engine **e, mt_error *err) {
    mt_simrun *run = ctx;
    mt_simrun_cfg cfg;
    mt_simrun_cfg_init(&cfg);
    cfg.net = run->netcfg;
    cfg.pool = run->pool;
    mt_net_free(&run->net);
    mt_engine_free(run->e);
    mt_pool_lock(run->pool);
    mt_topo_free(run->topo);
    mt_pool_unlock(run->pool);
    run->e = NULL;
    run->topo = NULL;
    MT_CHECK(build_network(&cfg, run, err));
    *net = &run->net;
    *e = run->e;
    return MT_OK;
}

/* --algo auto (the default): nccl where the ranks are GPUs (pm predicts one, or t was recorded on one)
 * and NCCL's tuner can read the run's topology (a preset's link and NIC tiers); ring elsewhere (CPU
 * processes, which run gloo; a topology file; a model without links). --nccl-algo needs nccl. */
static mt_status resolve_algo(const mt_trace *t, const mt_simrun_cfg *cfg, mt_perfmodel *pm, mt_simrun *out,
                              mt_error *err) {
    char spec[256];
    mt_plan *pl = &out->plan;
    mt_netcfg net = cfg->net;
    mt_nccl_fabric fab;
    mt_error why = {0};
    const mt_gpu_spec *g = pm ? mt_perfmodel_gpu(pm) : NULL;
    out->nccl_arch = g ? 1 + (int)mt_nccl_arch_of_gpu(g->name) : 0;
    if (*mt_netcfg_spec(&net, pl->gpus, spec, sizeof spec)) net.topology = spec;
    int gpus = g || (t && t->recorded_on.kind == TRACE_DEV_GPU);
    int tuned = gpus && mt_netcfg_kind(&net)->uses_links &&
                mt_run_nccl_fabric(&net, cfg->sim.ranks_per_node, out->nccl_arch, pl->gpus, &fab, &why) == MT_OK;
    if (pl->algo == MT_ALGO_AUTO) {
        if (cfg->auto_rings && tuned) /* an output asked for rings where auto would have tuned: said */
            snprintf(out->algo_why, sizeof out->algo_why, "%s writes each collective as a schedule its readers run "
                     "(ASTRA-sim's rings), so the collectives run as rings here, not NCCL's tuner (--algo auto's "
                     "choice on this topology): the step can differ from the same run without %s", cfg->auto_rings,
                     cfg->auto_rings);
        pl->algo = tuned && !cfg->auto_rings ? MT_ALGO_NCCL : MT_ALGO_RING;
    }
    if (pl->nccl_force && pl->algo != MT_ALGO_NCCL)
        return mt_fail(err, MT_EINVAL, "--nccl-algo applies to NCCL's tuner (--algo nccl, or auto with GPUs on a "
                       "topology preset), not --algo %s (%s)", mt_coll_algo_name(pl->algo),
                       tuned ? "given" : !gpus ? "the ranks are CPU processes" : why.msg);
    return MT_OK;
}

mt_status mt_simrun_build_program(const mt_trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_simrun *out,
                                  mt_error *err) {
    memset(out, 0, sizeof *out);
    out->plan = cfg->plan;
    out->sim = cfg->sim;
    out->on_link = cfg->on_link;
    out->link_ctx = cfg->link_ctx;
    out->prepare = cfg->prepare;
    out->prepare_ctx = cfg->prepare_ctx;
    out->pool = cfg->pool;
    mt_status rc = mt_plan_resolve(&out->plan, t, err);
    if (rc == MT_OK) rc = resolve_algo(t, cfg, pm, out, err);
    mt_hostmodel *host = NULL;
    if (rc == MT_OK && cfg->host_shared) out->host = cfg->host_shared, out->host_borrowed = 1;
    else if (rc == MT_OK && (rc = mt_simrun_host(t, cfg, &host, err)) == MT_OK) out->host = host;
    if (rc == MT_OK) rc = build_program(t, pm, cfg, out, err);
    if (rc == MT_OK && !cfg->bound_only) rc = build_comm_slow(out->prog->trace, pm, cfg, out, err);
    if (rc != MT_OK) mt_simrun_free(out);
    return rc;
}

mt_status mt_simrun_build(const mt_trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_simrun *out,
                          mt_error *err) {
    MT_CHECK(mt_simrun_build_program(t, pm, cfg, out, err));
    mt_status rc = build_network(cfg, out, err);
    if (rc != MT_OK) mt_simrun_free(out);
    return rc;
}

mt_status mt_simrun_exec(mt_simrun *run, mt_error *err) {
    mt_status rc = MT_OK;
    if (run->on_link && mt_net_can(&run->net, MT_NETOP_LINK_OBSERVER))
        rc = mt_net_set_link_observer(&run->net, run->on_link, run->link_ctx, err);
    if (rc == MT_OK && run->prepare) rc = run->prepare(run->prepare_ctx, run, err);
    if (rc == MT_OK) {
        mt_sim_opts so = run->sim;
        so.host = run->host;
        so.fresh = fresh_network;
        so.fresh_ctx = run;
        so.nccl = run->plan.algo == MT_ALGO_NCCL ? &run->nccl : NULL;
        so.comm_slow = run->comm_slow;
        const mt_trace *t = run->prog->trace;
        if (run->prog->plan.comm == MT_COMM_TRACED && t && t->dist.backend && !strcmp(t->dist.backend, "gloo"))
            so.coll_lanes = 2; /* the traced job's own collectives, as its gloo ran them */
        if (!so.no_fold && run->on_link) so.no_fold = "link loads are recorded";
        rc = mt_simulate(run->prog, &run->net, run->e, &so, &run->res, err);
    }
    if (rc != MT_OK) mt_simrun_free(run);
    return rc;
}

mt_status mt_simrun_run(const mt_trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_simrun *out,
                        mt_error *err) {
    MT_CHECK(mt_simrun_build(t, pm, cfg, out, err));
    return mt_simrun_exec(out, err);
}

double mt_simrun_step_ms(const mt_simrun *r) {
    return (double)r->res->step_ps / 1e9 / (r->res->n_steps > 0 ? r->res->n_steps : 1);
}

/* run/estimate.c — see estimate.h. */
#include "run/estimate.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "util/budget.h"
#include "util/units.h"

/* Engine events per unit of work, counted (bench/bench_estimate.sh): a task a GPU walks (about
 * one event every other task), a network send (its start and its delivery), a pipeline send. */
#define EV_TASK 0.5
#define EV_SEND 2.0
#define EV_PP 3.0

/* Host nanoseconds per network send of each algorithm (Release, this 2-core machine; fitted on
 * bench/bench_estimate.sh's plans: ResNet-50 DDP at 256..131,072 GPUs, tp4 x pp8, the GPT hybrid):
 * a send's cost is the max-min re-solve of the flows it shares links with, so concurrent big flows
 * (ringflow, trees' chunks, thousands of small TP rings at once) cost more than one ring's steps
 * (after the engine's lanes, quiet machine: 229 ns a send of one 1024-rank ring, ~0.7 us inside
 * the tp4 x pp8 plan: 450 splits them; ringflow 0.56-0.86 us at 131,072 GPUs, 0.33-0.63 us after
 * the solver's ties by id and flows alone without the heap: 1100). Indexed by
 * mt_coll_algo. */
static const double NS_PER_SEND[] = {
    [MT_ALGO_RING] = 450, [MT_ALGO_TREE] = 2600, [MT_ALGO_DIRECT] = 1200, [MT_ALGO_HIER] = 450,
    [MT_ALGO_RINGFLOW] = 1100, [MT_ALGO_RELAY] = 450, [MT_ALGO_TREEFLOW] = 1100, [MT_ALGO_NCCL] = 1100,
    [MT_ALGO_AUTO] = 1100,
};
/* A task walked; a pipeline send (its flow and the receive), measured on the tp4 x pp8 and GPT rows. */
#define NS_PER_TASK 50.0
#define NS_PER_PP 1000.0
/* Network folding: each other replica's copy of a folded send (its mirror's bookkeeping; the
 * copy itself costs nothing while virtual); fitted on the tp4 x pp8 x dp256 (256 copies) and GPT
 * dp128 rows. */
#define NS_PER_COPY 25.0
/* igraph's Dijkstra from one source (--routing latency where the structured router declines):
 * about this many ns x links x log2(nodes); measured 5.7-6.5 on multinode 2048..8192 GPUs and a
 * 4096-GPU leaf-spine file (bench/bench_estimate.sh). Breadth-first searches (hops) are cheap. */
#define NS_PER_DIJKSTRA_LINK_LOG 6.5
/* Bytes a cached schedule holds per send (extrapolate/collective.h: the send and its deps). */
#define SCHED_BYTES_PER_SEND 40.0

/* Chunks a schedule splits its buffer into (extrapolate/collective.h): the plan's, else 1 for
 * rings and direct, ceil(S / 1 MiB) capped at 32 for chains and trees. */
static double chunks_of(const mt_plan *pl, mt_coll_algo a, mt_coll_op op, double bytes) {
    if (pl->chunks > 0) return pl->chunks;
    int chain = op == MT_COLL_BROADCAST || op == MT_COLL_REDUCE;
    if (a != MT_ALGO_TREE && !chain) return 1;
    double c = ceil(bytes / (1024.0 * 1024.0));
    return c < 1 ? 1 : c > 32 ? 32 : c;
}

/* 1 when NCCL's ring over n ranks runs as ringflow (sim/simulate.c nccl_params: above
 * --ring-model's ranks; --ring-model steps: never). */
static int nccl_flows(const mt_plan *pl, int32_t n) { return pl->ringflow_above >= 0 && n > pl->ringflow_above; }

static double coll_sends_one(const mt_plan *pl, mt_coll_op op, int32_t n, int32_t rpn, double bytes,
                             mt_coll_algo a) {
    if (n <= 1) return 0;
    if (op == MT_COLL_SENDRECV) return 1;
    double c = chunks_of(pl, a, op, bytes), dn = n;
    int two_phase = op == MT_COLL_ALLREDUCE;
    int chain = op == MT_COLL_BROADCAST || op == MT_COLL_REDUCE;
    switch (a) {
    case MT_ALGO_RINGFLOW:
        return dn + 1; /* n flows, then one timer for the latency chain */
    case MT_ALGO_TREEFLOW:
        return dn + 1; /* n flows, then one timer for the latency chain */
    case MT_ALGO_AUTO: /* nccl or ring: counted as nccl */
    case MT_ALGO_NCCL: /* chosen per size: a ring (flow above --ring-model's ranks), a tree, or direct
                        * (NVLS, one node); counted as its ring */
        if (nccl_flows(pl, n)) return dn + 1;
        return (two_phase ? 2 : 1) * dn * (dn - 1) * c;
    case MT_ALGO_TREE:
        return (two_phase ? 4 : 1) * (dn - 1) * c;
    case MT_ALGO_HIER: {
        double g = rpn > 0 ? rpn : 8, m = dn / g;
        return op == MT_COLL_ALLTOALL ? dn * (g - 1) + dn * (m - 1) : 2 * dn * (g - 1) + 2 * dn * (m - 1);
    }
    case MT_ALGO_DIRECT:
        return (two_phase ? 2 : 1) * dn * (dn - 1);
    case MT_ALGO_RELAY:
        if (op == MT_COLL_ALLTOALL) return dn * dn * (dn - 1) / 2;
        /* other ops run ring */
        /* fall through */
    case MT_ALGO_RING:
    default:
        if (chain) return (dn - 1) * c;
        return (two_phase ? 2 : 1) * dn * (dn - 1) * c;
    }
}

/* Network sends of one instance of `op` over n ranks as the simulator runs it, by algorithm a.
 * group_min > 0: the model runs that many alike bulk sends or more as one group (netmodel.h
 * mt_netmodel_kind.group_min), which *ev_sends counts as two sends (the group's drain and
 * delivery, the latency walk's timer); else *ev_sends is the sends returned. Each member still costs about a send's host time (its route
 * and marks), so the returned count prices seconds either way. */
static double coll_sends(const mt_plan *pl, mt_coll_op op, int32_t n, int32_t rpn, double bytes,
                         mt_coll_algo a, int32_t group_min, double *ev_sends) {
    double one = coll_sends_one(pl, op, n, rpn, bytes, a);
    int flow = a == MT_ALGO_RINGFLOW || a == MT_ALGO_TREEFLOW ||
               ((a == MT_ALGO_NCCL || a == MT_ALGO_AUTO) && nccl_flows(pl, n)); /* their bulk: n flows, then a timer */
    *ev_sends = group_min > 0 && flow && n >= group_min ? 2 : one;
    return one;
}

/* Graph searches the run will make with Dijkstra (one per sending GPU: every GPU, bounded by the
 * topology's), 0 when routes are structured or breadth-first; their cost into *ns. */
static double dijkstra_searches(const mt_simrun *run, double *ns) {
    const mt_topo *t = run->topo;
    *ns = 0;
    if (!t || run->netcfg.tp.metric != MT_ROUTE_LATENCY) return 0;
    int uniform = 1;
    int32_t nl = mt_topo_nlinks(t), ngpu = 0;
    for (int32_t i = 1; i < nl && uniform; i++) uniform = mt_topo_link(t, i)->lat_ps == mt_topo_link(t, 0)->lat_ps;
    if (mt_topo_has_router(t) && uniform) return 0; /* the router answers the latency metric there */
    mt_topo_gpus(t, &ngpu);
    double n = run->plan.gpus < ngpu ? run->plan.gpus : ngpu, v = mt_topo_nnodes(t);
    *ns = n * NS_PER_DIJKSTRA_LINK_LOG * nl * log2(v > 2 ? v : 2);
    return n;
}

/* 1 when mt_simulate will fold this run (sim/simulate.c fold_refusal, from what is known here). */
static int will_fold(const mt_simrun *run) {
    const mt_sim_opts *o = &run->sim;
    return !o->no_fold && !run->on_link && run->plan.dp > 1 && !o->gpu_speed && !o->compute_factor &&
           !o->on_span && !run->prog->emb_owner;
}

/* 1 when the network will fold too (sim/simulate.c netfold_setup): traffic inside a replica is
 * carried for replica 0 only. */
static int will_netfold(const mt_simrun *run) {
    const mt_netmodel_kind *k = mt_netmodel_kind_at(run->netcfg.model);
    return will_fold(run) && !run->sim.no_netfold && k && k->folds;
}

/* The collectives whose bulk runs as flow groups on the run's topology (topologies.h
 * flow_groups; a topology file: 0). */
static int flow_groups(const mt_simrun *run) {
    char buf[256];
    mt_topo_spec ts;
    mt_error e = {0};
    const char *spec = mt_netcfg_spec(&run->netcfg, run->plan.gpus, buf, sizeof buf);
    return spec && *spec && mt_topo_spec_parse(spec, &ts, &e) == MT_OK ? ts.preset->flow_groups : 0;
}

void mt_estimate_of(const mt_simrun *run, mt_estimate *out) {
    const mt_program *p = run->prog;
    const mt_plan *pl = &p->plan;
    double n = pl->gpus, stages = p->n_stages > 0 ? p->n_stages : 1, per_stage = n / stages;
    int32_t rpn = run->sim.ranks_per_node;
    int netfold = will_netfold(run);
    const mt_netmodel_kind *kind = mt_netmodel_kind_at(run->netcfg.model);
    /* flow groups: sim/simulate.c turns them on unless --no-fold or --no-net-fold */
    int32_t group_min = kind && !run->sim.no_fold && !run->sim.no_netfold ? kind->group_min : 0;
    int fg = flow_groups(run);
    double dp = pl->dp > 1 ? pl->dp : 1;
    out->gpus = pl->gpus;
    out->walkers = will_fold(run) ? pl->gpus / pl->dp : pl->gpus;
    double tasks = 0, sends = 0, pp = 0, ns = 0, sched_bytes = 0, copies = 0;
    for (int32_t s = 0; s < p->n_stages; s++) {
        const mt_stage_program *sp = &p->stages[s];
        tasks += (double)sp->n_tasks * out->walkers / stages;
        for (int32_t k = 0; k < sp->n_tasks; k++) {
            const mt_task *t = &sp->tasks[k];
            if (t->kind == MT_TASK_SEND) {
                pp += netfold ? per_stage / dp : per_stage;
                if (netfold) copies += per_stage;
            }
            int32_t g = t->kind == MT_TASK_COLL ? mt_group_size(&p->groups, t->group) : 1;
            if (g <= 1) continue;
            mt_coll_algo a = mt_sim_coll_algo(pl, t->coll, g, rpn);
            int folded = netfold && mt_group_in_replica(&p->groups, t->group);
            int grouped = !folded && (a == MT_ALGO_RINGFLOW   ? fg & MT_GROUPS_RINGS
                                      : a == MT_ALGO_TREEFLOW ? fg & MT_GROUPS_TREES
                                                              : fg); /* NCCL's ring or tree */
            double ev_one, one = coll_sends(pl, t->coll, g, rpn, t->bytes, a, grouped ? group_min : 0, &ev_one);
            double groups = per_stage / g / (folded ? dp : 1);
            sends += groups * ev_one;
            int nccl_ring = (a == MT_ALGO_NCCL || a == MT_ALGO_AUTO) && !nccl_flows(pl, g); /* its ring's steps */
            ns += groups * one * NS_PER_SEND[nccl_ring ? MT_ALGO_RING : a];
            if (folded) copies += per_stage / g * one;
            if (a != MT_ALGO_RINGFLOW && a != MT_ALGO_TREEFLOW) sched_bytes += one * SCHED_BYTES_PER_SEND; /* cached (an upper bound: alike
                                                                            * collectives share one) */
        }
    }
    double steps = run->sim.steps > 1 ? run->sim.steps : 1;
    out->coll_sends = sends * steps;
    out->pp_sends = pp * steps;
    out->events = steps * (tasks * EV_TASK + sends * EV_SEND + pp * EV_PP);
    double search_ns;
    out->route_searches = dijkstra_searches(run, &search_ns);
    out->route_seconds = search_ns * 1e-9; /* once: routes are cached across steps */
    out->seconds = steps * (ns + tasks * NS_PER_TASK + pp * NS_PER_PP + copies * NS_PER_COPY) * 1e-9 + out->route_seconds;
    out->mem_bytes = mt_estimate_mem_bytes(pl) + sched_bytes;
}

mt_status mt_estimate_cfg(const mt_trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg, mt_estimate *out,
                          mt_error *err) {
    mt_simrun run;
    MT_CHECK(mt_simrun_build_program(t, pm, cfg, &run, err));
    mt_estimate_of(&run, out);
    mt_simrun_free(&run);
    return MT_OK;
}

/* The GPUs of a plan as given: --gpus, else the product of the sizes given. */
static double plan_gpus(const mt_plan *pl) {
    if (pl->gpus > 0) return pl->gpus;
    const int32_t sz[] = {pl->dp, pl->tp, pl->pp, pl->cp, pl->ep};
    double n = 1;
    for (size_t k = 0; k < sizeof sz / sizeof sz[0]; k++) n *= sz[k] > 0 ? sz[k] : 1;
    return n;
}

double mt_estimate_mem_bytes(const mt_plan *pl) {
    double n = plan_gpus(pl);
    double slots = pl->pp > 1 ? 24.0 * (pl->vpp > 1 ? pl->vpp : 1) * (pl->micro_batches > 0 ? pl->micro_batches : 1)
                              : 0;
    return MT_ESTIMATE_BASE_BYTES + n * (MT_ESTIMATE_BYTES_PER_GPU + slots);
}

mt_status mt_estimate_check_plan(const mt_plan *pl, mt_error *err) {
    return mt_estimate_check_mem(mt_estimate_mem_bytes(pl), plan_gpus(pl), err);
}

mt_status mt_estimate_check_mem(double mem_bytes, double gpus, mt_error *err) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    double have = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
    if (!(have > 0) || mem_bytes <= have) return MT_OK;
    char need_s[32], have_s[32];
    return mt_fail(err, MT_EINVAL, "--gpus %.0f would need about %s of memory, more than this machine's %s "
                   "(fewer GPUs or micro-batches, or a machine with more memory)", gpus,
                   mt_fmt_bytes(mem_bytes, need_s, sizeof need_s), mt_fmt_bytes(have, have_s, sizeof have_s));
}

mt_status mt_estimate_check_budget(const mt_estimate *e, const char *what, mt_error *err) {
    const mt_budget *b = mt_budget_current();
    if (!b) return MT_OK;
    char need[32], cap[32];
    double max_s = b->max_seconds > 0 ? b->max_seconds : b->wall_s;
    if (b->max_events > 0 && e->events > b->max_events)
        return mt_fail(err, MT_EINVAL, "%s would take about %s events, over this server's limit of %s (%s): fewer "
                       "steps, GPUs or plans", what, mt_estimate_count_text(e->events, need, sizeof need),
                       mt_estimate_count_text(b->max_events, cap, sizeof cap), b->flag_events);
    if (max_s > 0 && e->seconds > max_s)
        return mt_fail(err, MT_EINVAL, "%s would take about %s on this machine, over this server's limit of %s (%s): "
                       "fewer steps, GPUs or plans", what, mt_estimate_duration_text(e->seconds, need, sizeof need),
                       mt_estimate_duration_text(max_s, cap, sizeof cap), b->flag_seconds);
    if (b->max_mem_bytes > 0 && e->mem_bytes > b->max_mem_bytes)
        return mt_fail(err, MT_EINVAL, "%s would need about %s of memory, over this server's limit of %s (%s): fewer "
                       "GPUs or micro-batches", what, mt_fmt_bytes(e->mem_bytes, need, sizeof need),
                       mt_fmt_bytes(b->max_mem_bytes, cap, sizeof cap), b->flag_mem);
    return MT_OK;
}

int mt_estimate_long(const mt_estimate *e) { return e->seconds > MT_ESTIMATE_LONG_S; }

const char *mt_estimate_count_text(double v, char *buf, size_t len) {
    if (v >= 1e9) snprintf(buf, len, "%.1f G", v / 1e9);
    else if (v >= 1e6) snprintf(buf, len, "%.1f M", v / 1e6);
    else if (v >= 1e3) snprintf(buf, len, "%.1f k", v / 1e3);
    else snprintf(buf, len, "%.0f", v);
    return buf;
}

const char *mt_estimate_duration_text(double s, char *buf, size_t len) {
    if (s >= 7200) snprintf(buf, len, "%.1f h", s / 3600);
    else if (s >= 120) snprintf(buf, len, "%.1f min", s / 60);
    else snprintf(buf, len, "%.*f s", s < 10 ? 1 : 0, s);
    return buf;
}

const char *mt_estimate_text(const mt_estimate *e, const mt_plan *pl, char *buf, size_t len) {
    char ev[32], dur[32], mem[32];
    int at = snprintf(buf, len, "about %s events, ~%s on this machine, ~%s of memory (tp%d x pp%d x dp%d",
                      mt_estimate_count_text(e->events, ev, sizeof ev), mt_estimate_duration_text(e->seconds, dur, sizeof dur),
                      mt_fmt_bytes(e->mem_bytes, mem, sizeof mem), pl->tp, pl->pp, pl->dp);
    if (at > 0 && (size_t)at < len && pl->pp > 1)
        at += snprintf(buf + at, len - (size_t)at, ", %d micro-batches", pl->micro_batches);
    if (at > 0 && (size_t)at < len)
        at += snprintf(buf + at, len - (size_t)at, " at %d GPUs; %d walk their programs)", e->gpus, e->walkers);
    if (at > 0 && (size_t)at < len && e->route_searches > 0)
        snprintf(buf + at, len - (size_t)at, ", of which ~%s in %s route searches (--routing latency)",
                 mt_estimate_duration_text(e->route_seconds, dur, sizeof dur),
                 mt_estimate_count_text(e->route_searches, ev, sizeof ev));
    return buf;
}

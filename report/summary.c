/* report/summary.c — see summary.h. */
#include "report/summary.h"

#include <stdlib.h>
#include <string.h>

#include "extrapolate/planlist.h"
#include "extrapolate/traced.h"
#include "report/experts.h"
#include "report/jsonw.h"
#include "report/verdict.h"
#include "report/waits.h"
#include "sim/scenario.h"
#include "tracer/device.h"
#include "util/units.h"

static double ms(mt_time_ps t) { return (double)t / 1e9; }
static double msd(double ps) { return ps / 1e9; }

/* Host-model summary: the GPU that waited longest for its host, and whether the step is
 * launch-bound (the host thread's work exceeds the device's). */
/* Mesh dimension d as reports name it ("dp" for dp_shard when dp is not split in two). */
static const char *dim_label(const mt_mesh *m, int d) {
    if (d == MT_DIM_DP_SHARD && m->size[MT_DIM_DP_REP] == 1) return "dp";
    return mt_dim_name((mt_dim)d);
}

/* Whether dimension d is shown: the classic three always, the others when used. */
static int dim_shown(const mt_mesh *m, int d) {
    if (d == MT_DIM_TP || d == MT_DIM_PP || d == MT_DIM_DP_SHARD) return 1;
    return m->size[d] > 1;
}

/* {"dims": [{"name", "size"}] innermost first, "traffic_bytes": {group kind or "pp": bytes sent per
 * GPU, mean over all GPUs}} */
static json_t *mesh_json(const mt_program *p, const mt_sim_result *r) {
    const mt_mesh *m = &p->groups.mesh;
    json_t *o = json_object(), *dims = json_array(), *tr = json_object();
    for (int i = 0; i < MT_DIMS; i++) {
        int d = m->order[i];
        if (!dim_shown(m, d)) continue;
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(dim_label(m, d)));
        json_object_set_new(x, "size", json_integer(m->size[d]));
        json_array_append_new(dims, x);
    }
    double n = r->n_gpus > 0 ? r->n_gpus : 1;
    for (int k = 0; k < p->groups.n_kinds; k++)
        if (mt_group_count(&p->groups, k) > 0)
            json_object_set_new(tr, p->groups.kind[k].name, json_real(r->kind_traffic_bytes[k] / n));
    if (p->plan.pp > 1) json_object_set_new(tr, "pp", json_real(r->pp_traffic_bytes / n));
    json_object_set_new(o, "dims", dims);
    json_object_set_new(o, "traffic_bytes", tr);
    return o;
}

/* "tp 2 x pp 4 x dp 256 (innermost first)" into buf. */
static const char *mesh_text(const mt_program *p, char *buf, size_t len) {
    const mt_mesh *m = &p->groups.mesh;
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < MT_DIMS && at < len; i++) {
        int d = m->order[i];
        if (dim_shown(m, d))
            at += (size_t)snprintf(buf + at, len - at, "%s%s %d", at ? " x " : "", dim_label(m, d), (int)m->size[d]);
    }
    if (at < len) snprintf(buf + at, len - at, " (innermost first)");
    return buf;
}

/* Each group kind's and the pipeline's bytes sent per GPU (mean) into buf: "tp 4.75 MB, dp 21.09
 * MB, pp 1.57 MB"; "" when nothing moved. */
static const char *traffic_text(const mt_program *p, const mt_sim_result *r, char *buf, size_t len) {
    char b[32];
    size_t at = 0;
    double n = r->n_gpus > 0 ? r->n_gpus : 1;
    buf[0] = '\0';
    for (int k = 0; k < p->groups.n_kinds && at < len; k++)
        if (mt_group_count(&p->groups, k) > 0 && r->kind_traffic_bytes[k] > 0)
            at += (size_t)snprintf(buf + at, len - at, "%s%s %s", at ? ", " : "", p->groups.kind[k].name,
                                   mt_fmt_bytes(r->kind_traffic_bytes[k] / n, b, sizeof b));
    if (r->pp_traffic_bytes > 0 && at < len)
        snprintf(buf + at, len - at, "%spp %s", at ? ", " : "", mt_fmt_bytes(r->pp_traffic_bytes / n, b, sizeof b));
    return buf;
}

/* "mesh       tp 2 x pp 4 x dp 256 (innermost first)" and, when anything moved, each dimension's
 * traffic per GPU. */
/* A traced plan of TP or pipeline ranks (plan.h: traced_tp, traced_pp) in words, else NULL: its GPUs
 * are copies of the traced rank, not a mesh's. */
static const char *traced_plan_text(const mt_plan *pl, char *buf, size_t len) {
    if (pl->traced_tp)
        snprintf(buf, len, "tensor parallel as traced: the %d GPUs are the job's tensor-parallel ranks, each a copy "
                 "of the traced rank (its part of the model) with its collectives, on one batch", pl->traced_tp);
    else if (pl->traced_pp)
        snprintf(buf, len, "pipeline as traced: the %d GPUs are the job's pipeline stages, each a copy of the traced "
                 "stage with its sends and receives, on one batch of %d micro-batch%s (all in the traced ops)",
                 pl->traced_pp, pl->traced_micro, pl->traced_micro == 1 ? "" : "es");
    else return NULL;
    return buf;
}

static void print_mesh(FILE *out, const mt_program *p, const mt_sim_result *r) {
    char line[512];
    fprintf(out, "mesh       %s\n", mesh_text(p, line, sizeof line));
    if (traffic_text(p, r, line, sizeof line)[0]) fprintf(out, "traffic    sent per GPU per run (mean): %s\n", line);
}

/* "           recompute: full, 151.490 ms of forward re-run per step (the busiest stage), 116.40 MB of
 * activations per micro-batch kept" */
static void print_recompute(FILE *out, const mt_program *p) {
    const mt_stage_program *w = &p->stages[0];
    for (int32_t k = 1; k < p->n_stages; k++)
        if (p->stages[k].recompute_ps > w->recompute_ps) w = &p->stages[k];
    char b[32], c[32];
    fprintf(out, "           recompute: %s, %.3f ms of forward re-run per step (the busiest stage), %s kept per "
            "micro-batch, %s while a layer runs backward\n", mt_recompute_label(&p->plan, (char[48]){0}, 48),
            ms(w->recompute_ps),
            mt_fmt_bytes(w->act_bytes_per_mb, b, sizeof b), mt_fmt_bytes(w->act_bytes_transient, c, sizeof c));
}

static const mt_gpu_stats *most_host_wait(const mt_sim_result *r) {
    const mt_gpu_stats *w = &r->gpus[0];
    for (int32_t i = 1; i < r->n_gpus; i++)
        if (r->gpus[i].host_wait_ps > w->host_wait_ps) w = &r->gpus[i];
    return w;
}

/* A GPU's wait for its host is over 10 % of the step and the host times are the profiled ones. */
static int profiled_host_bound(const mt_run_summary *s, const mt_sim_result *r) {
    const mt_gpu_stats *w = most_host_wait(r);
    return (!s->cal || !s->cal->on) && s->host_scale == 1 && s->t->has_device_time && r->step_ps > 0 &&
           (double)w->host_wait_ps > 0.1 * (double)r->step_ps;
}

static json_t *host_json(const mt_hostmodel *host, const mt_sim_result *r) {
    json_t *h = json_object();
    json_object_set_new(h, "traced_wall_ms", json_real(ms(host->wall_ps)));
    json_object_set_new(h, "traced_host_ms", json_real(ms(host->host_total_ps)));
    json_object_set_new(h, "launch_latency_us", json_real(host->launch_lat_ps / 1e6));
    json_object_set_new(h, "coll_host_us", json_real(host->coll_host_ps / 1e6));
    json_object_set_new(h, "syncs", json_integer(host->n_syncs));
    const mt_gpu_stats *w = most_host_wait(r);
    json_object_set_new(h, "launch_bound", json_boolean(w->host_busy_ps > w->compute_ps));
    return h;
}

static json_t *gpus_json(const mt_sim_result *r) {
    json_t *gs = json_array();
    for (int32_t i = 0; i < r->n_gpus; i++) {
        const mt_gpu_stats *g = &r->gpus[i];
        json_t *x = json_object();
        json_object_set_new(x, "rank", json_integer(g->rank));
        json_object_set_new(x, "dp", json_integer(g->dp));
        json_object_set_new(x, "stage", json_integer(g->stage));
        json_object_set_new(x, "tp", json_integer(g->tp));
        json_object_set_new(x, "compute_ms", json_real(ms(g->compute_ps)));
        json_object_set_new(x, "stretch_ms", json_real(ms(g->stretch_ps)));
        json_object_set_new(x, "comm_ms", json_real(ms(g->comm_ps)));
        json_object_set_new(x, "exposed_comm_ms", json_real(ms(g->exposed_ps)));
        json_object_set_new(x, "peer_wait_ms", json_real(ms(g->peer_wait_ps)));
        json_object_set_new(x, "waited_for", g->waited_for >= 0 ? json_integer(g->waited_for) : json_null());
        json_object_set_new(x, "waited_for_ms", json_real(ms(g->waited_for_ps)));
        json_object_set_new(x, "host_wait_ms", json_real(ms(g->host_wait_ps)));
        json_object_set_new(x, "host_busy_ms", json_real(ms(g->host_busy_ps)));
        json_object_set_new(x, "host_sync_ms", json_real(ms(g->host_sync_ps)));
        json_object_set_new(x, "bubble_ms", json_real(ms(g->bubble_ps)));
        json_object_set_new(x, "idle_ms", json_real(ms(g->idle_ps)));
        json_object_set_new(x, "finish_ms", json_real(ms(g->finish_ps)));
        json_object_set_new(x, "peak_live_micro_batches", json_integer(g->peak_live_mb));
        json_object_set_new(x, "peak_mem_bytes", json_real(g->peak_mem_bytes));
        json_object_set_new(x, "peak_mem_from_ms", json_real(ms(g->peak_mem_from_ps)));
        json_t *tr = json_object();
        for (int c = 0; c < MT_TRAFFIC_CLASSES; c++)
            json_object_set_new(tr, mt_traffic_name((mt_traffic)c), json_real(g->traffic_bytes[c]));
        json_object_set_new(x, "traffic_bytes", tr);
        json_object_set_new(x, "mem_bytes", json_pack("{s:f,s:f,s:f,s:f,s:f}", "params", g->mem_params_bytes, "grads",
                                                      g->mem_grads_bytes, "optimizer", g->mem_optimizer_bytes,
                                                      "activations", g->mem_activations_bytes, "peak",
                                                      g->peak_mem_bytes));
        json_array_append_new(gs, x);
    }
    return gs;
}

static json_t *stages_json(const mt_program *p) {
    const mt_plan *pl = &p->plan;
    json_t *st = json_array();
    for (int32_t k = 0; k < p->n_stages; k++) {
        const mt_stage_program *sp = &p->stages[k];
        json_t *x = json_object();
        json_object_set_new(x, "layer_first", json_integer(sp->layer_first));
        json_object_set_new(x, "layer_last", json_integer(sp->layer_last));
        json_object_set_new(x, "compute_ms", json_real(ms(sp->compute_ps)));
        json_object_set_new(x, "param_bytes", json_real(sp->param_bytes));
        json_object_set_new(x, "activation_bytes_per_micro_batch", json_real(sp->act_bytes_per_mb));
        json_object_set_new(x, "boundary_bytes", json_real(sp->boundary_bytes * pl->batch_factor));
        json_object_set_new(x, "recompute_ms", json_real(ms(sp->recompute_ps)));
        json_object_set_new(x, "activation_bytes_transient", json_real(sp->act_bytes_transient));
        json_array_append_new(st, x);
    }
    return st;
}

/* {"kind": "blocks" | "list" | "time", "text": "blocks 4+4", "blocks_per_chunk": [4, 4], "why_time": ...} */
static json_t *cut_json(const mt_stage_cut *c) {
    char text[MT_STAGES_LIST_MAX * 4 + 32];
    json_t *o = json_object(), *per = json_array();
    json_object_set_new(o, "kind", json_string(c->kind == MT_CUT_BLOCKS ? "blocks" : c->kind == MT_CUT_LIST ? "list"
                                                                                                            : "time"));
    json_object_set_new(o, "text", json_string(mt_stages_cut_describe(c, text, sizeof text)));
    for (int32_t k = 0; c->kind != MT_CUT_TIME && k < c->n_chunks; k++) json_array_append_new(per, json_integer(c->blocks[k]));
    json_object_set_new(o, "blocks_per_chunk", per);
    json_object_set_new(o, "why_time", c->why_time[0] ? json_string(c->why_time) : json_null());
    return o;
}

static json_t *simulation_json(const mt_run_summary *s) {
    const mt_program *p = s->prog;
    const mt_sim_result *r = s->res;
    json_t *sim = json_object();
    json_object_set_new(sim, "events", json_integer((json_int_t)r->events));
    json_object_set_new(sim, "collectives", json_integer((json_int_t)r->collectives));
    json_object_set_new(sim, "collective_bytes", json_real(r->coll_bytes));
    json_object_set_new(sim, "sends", json_integer((json_int_t)r->sends));
    json_object_set_new(sim, "ddp_buckets", json_integer(p->ddp_buckets));
    if (p->distopt_gathers) json_object_set_new(sim, "distopt_gathers", json_integer(p->distopt_gathers));
    json_object_set_new(sim, "shard_units", json_integer(p->shard_units));
    json_object_set_new(sim, "shard_unit_blocks", json_integer(p->shard_unit_blocks));
    json_object_set_new(sim, "traced_collectives", json_integer(p->traced_colls));
    json_object_set_new(sim, "traced_collectives_dropped", json_integer(p->traced_dropped));
    json_object_set_new(sim, "traced_waits", json_integer(p->traced_holds));
    json_object_set_new(sim, "traced_wait_ms", json_real((double)p->traced_hold_ps / 1e9));
    json_object_set_new(sim, "tp_split_ops", json_integer(p->tp_split_ops));
    json_object_set_new(sim, "tp_collectives_fwd", json_integer(p->tp_colls_fwd));
    json_object_set_new(sim, "tp_collectives_bwd", json_integer(p->tp_colls_bwd));
    json_object_set_new(sim, "cp_rings", json_integer(p->cp_rings));
    json_object_set_new(sim, "tied_syncs", json_integer(p->tied_syncs));
    json_t *rep = json_array();
    for (int32_t k = 0; k < p->n_tp_replicated; k++) {
        const trace_op *op = &s->t->ops[p->tp_replicated[k]];
        json_t *x = json_object();
        json_object_set_new(x, "op", json_integer(p->tp_replicated[k]));
        json_object_set_new(x, "name", json_string(op->name));
        json_object_set_new(x, "class", json_string(mt_opclass_name(op->cls)));
        json_object_set_new(x, "layer", op->layer >= 0 && op->layer < s->t->n_layers
                                            ? json_string(s->t->layers[op->layer].name) : json_null());
        json_object_set_new(x, "traced_ms", json_real((double)op->dev_ns / 1e6));
        json_array_append_new(rep, x);
    }
    json_object_set_new(sim, "tp_replicated_ops", rep);
    json_object_set_new(sim, "wall_s", json_real(r->sim_wall_s));
    json_object_set_new(sim, "peak_rss_bytes", json_real(s->peak_rss_bytes));
    json_t *fold = json_object();
    json_object_set_new(fold, "mode", json_string(r->folded ? "folded" : "full"));
    json_object_set_new(fold, "walkers", json_integer(r->walkers));
    json_object_set_new(fold, "why", json_string(r->fold_why));
    if (r->folded) {
        json_object_set_new(fold, "network", json_string(r->net_folded ? "folded" : "full"));
        json_object_set_new(fold, "network_why", json_string(r->net_fold_why));
        if (r->net_folded) json_object_set_new(fold, "network_copies", json_integer((json_int_t)r->net_copies));
    }
    json_object_set_new(sim, "folding", fold);
    return sim;
}

/* The "op times" line: run/device.h's label, else the model and target. */
static const char *op_times(const mt_run_summary *s, char *buf, size_t len) {
    if (s->op_times && *s->op_times) return s->op_times;
    snprintf(buf, len, "%s model%s%s", mt_pm_kind_name(s->perf_model), s->target_gpu ? ", target GPU " : "",
             s->target_gpu ? s->target_gpu : "");
    return buf;
}

/* The precision policy assumed and the one traced (precision.h): names and parts. */
static json_t *precision_json(const mt_program *p) {
    char buf[160];
    json_t *o = json_object();
    json_object_set_new(o, "assumed", json_string(mt_precision_describe(&p->prec, buf, sizeof buf)));
    json_object_set_new(o, "traced", json_string(mt_precision_describe(&p->prec_traced, buf, sizeof buf)));
    json_object_set_new(o, "param", json_string(mt_prec_dtype_name(p->prec.param)));
    json_object_set_new(o, "reduce", json_string(mt_prec_dtype_name(p->prec.reduce)));
    json_object_set_new(o, "master", json_string(mt_prec_dtype_name(p->prec.master)));
    json_object_set_new(o, "optim", json_string(mt_prec_dtype_name(p->prec.optim)));
    return o;
}

/* The summary as a tree; with `gpus_slot` the "gpus" member is a null placeholder (in its place,
 * so the key order stays) that mt_summary_json_write fills by streaming. */
static json_t *summary_tree(const mt_run_summary *s, int gpus_slot) {
    const mt_trace *t = s->t;
    const mt_program *p = s->prog;
    const mt_sim_result *r = s->res;
    const mt_hostmodel *host = s->host;
    const mt_plan *pl = &p->plan;
    json_t *o = json_object();
    json_t *plan = mt_planlist_json(pl);
    json_object_set_new(o, "plan", plan);
    char sched[32];
    json_object_set_new(o, "schedule", json_string(pl->pp > 1 ? mt_plan_schedule_label(pl, sched, sizeof sched) : "none"));
    json_object_set_new(o, "recompute", json_string(mt_recompute_label(pl, (char[48]){0}, 48)));
    json_object_set_new(o, "precision", precision_json(p));
    json_object_set_new(o, "trace", json_string(t->kineto_path ? t->kineto_path : ""));
    json_object_set_new(o, "topology", s->topology ? json_string(s->topology) : json_null());
    json_object_set_new(o, "network", json_string(s->network));
    json_object_set_new(o, "perf_model", json_string(mt_pm_kind_name(s->perf_model)));
    json_object_set_new(o, "target_gpu", s->target_gpu ? json_string(s->target_gpu) : json_null());
    char optbuf[160];
    json_object_set_new(o, "recorded_on", mt_device_json(&t->recorded_on));
    json_object_set_new(o, "ranks", json_string(s->cpu_ranks ? "cpu_processes" : "gpus"));
    json_object_set_new(o, "op_times", json_string(op_times(s, optbuf, sizeof optbuf)));
    if (s->comm_slow && *s->comm_slow) json_object_set_new(o, "comm_slowdown", json_string(s->comm_slow));
    json_object_set_new(o, "traced_step_ms", json_real((double)mt_trace_total_dev_ns(t) / 1e6));
    if (s->seq > 0)
        json_object_set_new(o, "seq", json_pack("{s:I, s:I}", "length", (json_int_t)s->seq, "traced",
                                                (json_int_t)s->traced_seq));
    if (s->blocks > 0)
        json_object_set_new(o, "blocks", json_pack("{s:i, s:i}", "count", (int)s->blocks, "traced", (int)s->traced_blocks));
    json_object_set_new(o, "step_ms", json_real(ms(r->step_ps) / r->n_steps));
    json_object_set_new(o, "host_model", json_string(host ? "trace" : "none"));
    json_object_set_new(o, "calibration", mt_calibration_json(s->cal));
    if (s->commfit && s->commfit->tried) json_object_set_new(o, "comm_fit", mt_commfit_json(s->commfit));
    if (s->replay && s->replay->on) json_object_set_new(o, "replay", mt_replay_json(s->replay));
    if (host) json_object_set_new(o, "host", host_json(host, r));
    if (pl->global_batch > 0 && r->step_ps > 0)
        json_object_set_new(o, "samples_per_s", json_real((double)pl->global_batch * r->n_steps / (ms(r->step_ps) / 1e3)));
    mt_whatif_json(o, r, s->base);
    json_object_set_new(o, "gpus", gpus_slot ? json_null() : gpus_json(r));
    json_object_set_new(o, "mesh", mesh_json(p, r));
    json_t *ex = mt_experts_json(p);
    if (ex) json_object_set_new(o, "moe", ex);
    json_t *ls = json_array();
    for (int32_t l = 0; l < r->n_layers; l++) {
        json_t *x = json_object();
        json_object_set_new(x, "layer", json_string(t->layers[l].name));
        json_object_set_new(x, "compute_ms", json_real(r->layer_compute_ps[l] / 1e9));
        json_object_set_new(x, "comm_ms", json_real(r->layer_comm_ps[l] / 1e9));
        json_array_append_new(ls, x);
    }
    json_object_set_new(o, "layers", ls);
    json_object_set_new(o, "stages", stages_json(p));
    if (pl->pp > 1) json_object_set_new(o, "pipeline_cut", cut_json(&p->stage_cut));
    json_object_set_new(o, "simulation", simulation_json(s));
    json_object_set_new(o, "warning", json_string(p->warning));
    json_t *ws = json_array();
    for (int k = 0; k < s->n_warnings; k++) json_array_append_new(ws, json_string(s->warnings[k]));
    json_object_set_new(o, "warnings", ws);
    return o;
}

json_t *mt_summary_json(const mt_run_summary *s) { return summary_tree(s, 0); }

/* One element of "gpus", as gpus_json builds it. */
static void gpu_row_write(mt_jw *w, const mt_gpu_stats *g) {
    mt_jw_object(w);
    mt_jw_key_int(w, "rank", g->rank);
    mt_jw_key_int(w, "dp", g->dp);
    mt_jw_key_int(w, "stage", g->stage);
    mt_jw_key_int(w, "tp", g->tp);
    mt_jw_key_real(w, "compute_ms", ms(g->compute_ps));
    mt_jw_key_real(w, "stretch_ms", ms(g->stretch_ps));
    mt_jw_key_real(w, "comm_ms", ms(g->comm_ps));
    mt_jw_key_real(w, "exposed_comm_ms", ms(g->exposed_ps));
    mt_jw_key_real(w, "peer_wait_ms", ms(g->peer_wait_ps));
    mt_jw_key(w, "waited_for");
    if (g->waited_for >= 0) mt_jw_int(w, g->waited_for);
    else mt_jw_value(w, json_null());
    mt_jw_key_real(w, "waited_for_ms", ms(g->waited_for_ps));
    mt_jw_key_real(w, "host_wait_ms", ms(g->host_wait_ps));
    mt_jw_key_real(w, "host_busy_ms", ms(g->host_busy_ps));
    mt_jw_key_real(w, "host_sync_ms", ms(g->host_sync_ps));
    mt_jw_key_real(w, "bubble_ms", ms(g->bubble_ps));
    mt_jw_key_real(w, "idle_ms", ms(g->idle_ps));
    mt_jw_key_real(w, "finish_ms", ms(g->finish_ps));
    mt_jw_key_int(w, "peak_live_micro_batches", g->peak_live_mb);
    mt_jw_key_real(w, "peak_mem_bytes", g->peak_mem_bytes);
    mt_jw_key_real(w, "peak_mem_from_ms", ms(g->peak_mem_from_ps));
    mt_jw_key(w, "traffic_bytes");
    mt_jw_object(w);
    for (int c = 0; c < MT_TRAFFIC_CLASSES; c++) mt_jw_key_real(w, mt_traffic_name((mt_traffic)c), g->traffic_bytes[c]);
    mt_jw_end(w);
    mt_jw_key(w, "mem_bytes");
    mt_jw_object(w);
    mt_jw_key_real(w, "params", g->mem_params_bytes);
    mt_jw_key_real(w, "grads", g->mem_grads_bytes);
    mt_jw_key_real(w, "optimizer", g->mem_optimizer_bytes);
    mt_jw_key_real(w, "activations", g->mem_activations_bytes);
    mt_jw_key_real(w, "peak", g->peak_mem_bytes);
    mt_jw_end(w);
    mt_jw_end(w);
}

int mt_summary_json_write(FILE *out, const mt_run_summary *s) {
    json_t *o = summary_tree(s, 1);
    if (!o) return -1;
    mt_jw w;
    mt_jw_init(&w, out);
    mt_jw_object(&w);
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        mt_jw_key(&w, key);
        if (strcmp(key, "gpus") != 0) {
            mt_jw_value(&w, v);
            continue;
        }
        mt_jw_array(&w);
        for (int32_t i = 0; i < s->res->n_gpus; i++) gpu_row_write(&w, &s->res->gpus[i]);
        mt_jw_end(&w);
    }
    mt_jw_end(&w);
    json_decref(o);
    return mt_jw_finish(&w) != 0 || fputc('\n', out) == EOF ? -1 : 0;
}

static void print_gpu_row(FILE *out, const mt_gpu_stats *g, const char *label) {
    char name[32];
    if (label) snprintf(name, sizeof name, "%s", label);
    else snprintf(name, sizeof name, "%d", g->rank);
    fprintf(out, "%6s %4d %5d %4d %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %9.2f\n", name, g->dp,
            g->stage, g->tp, ms(g->compute_ps), ms(g->stretch_ps), ms(g->host_wait_ps), ms(g->comm_ps), ms(g->exposed_ps), ms(g->peer_wait_ps),
            ms(g->bubble_ps), ms(g->idle_ps), g->peak_mem_bytes / 1e9);
}

/* Whose collectives the data-parallel dimension runs: the traced job's (a multi-rank trace, by
 * default) or the plan's; said only when the trace is multi-rank or the choice was forced. */
static void print_comm(FILE *out, const mt_trace *t, const mt_program *p) {
    mt_traced_plan tp;
    mt_traced_plan_read(t, &tp);
    char line[512];
    mt_traced_plan_describe(&tp, line, sizeof line);
    if (p->plan.comm == MT_COMM_TRACED) {
        fprintf(out, "comm       traced: %d collective%s per step kept as the job ran them", p->traced_colls,
                mt_plural(p->traced_colls));
        if (p->traced_dropped) fprintf(out, " (%d on one rank here, left out)", p->traced_dropped);
        fprintf(out, ", no gradient all-reduce generated; --comm regenerate for the plan's\n"
                     "           trace: %s\n", line);
        if (p->traced_holds)
            fprintf(out, "           measured waits: %.3f ms per step after %d gloo send/recv call%s (the unprofiled "
                    "Work.wait() for the peer), carried as they were (bubble)\n", (double)p->traced_hold_ps / 1e9,
                    (int)p->traced_holds, mt_plural(p->traced_holds));
    } else if (tp.multi_rank && p->plan.gpus != tp.world_size) {
        fprintf(out, "comm       regenerated: the plan's %d GPUs are not the traced job's %d, so the plan's collectives "
                "replace the trace's\n           trace: %s\n", p->plan.gpus, tp.world_size, line);
    } else if (tp.multi_rank) {
        fprintf(out, "comm       regenerated (--comm regenerate): the plan's collectives replace the trace's\n"
                     "           trace: %s\n", line);
    }
}

/* "dp D x tp T x pp P", with " x cp C" and " x ep E" when used: every dimension the GPUs multiply. */
static const char *plan_dims(const mt_plan *pl, char *buf, size_t len) {
    int n = snprintf(buf, len, "dp %d x tp %d x pp %d", mt_plan_shown_dp(pl), mt_plan_shown_tp(pl),
                     mt_plan_shown_pp(pl));
    if (pl->cp > 1 && n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, " x cp %d", pl->cp);
    if (pl->ep > 1 && n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, " x ep %d", pl->ep);
    return buf;
}

/* The plan lines: sizes, what tensor/sequence/context parallelism do, the mesh, experts, data-
 * parallel mode, pipeline schedule, recomputation. */
static void print_plan(FILE *out, const mt_trace *t, const mt_program *p, const mt_sim_result *r) {
    const mt_plan *pl = &p->plan;
    char bucket[32];
    mt_fmt_bytes(p->distopt_bucket_bytes > 0 ? p->distopt_bucket_bytes : pl->bucket_bytes, bucket, sizeof bucket);
    char dims[96];
    fprintf(out, "plan       %d GPU%s = %s, placement %s, %s collectives\n", pl->gpus, mt_plural(pl->gpus),
            plan_dims(pl, dims, sizeof dims), pl->placement, mt_coll_algo_name(pl->algo));
    if (p->n_tp_replicated > 0) {
        double ns = 0;
        for (int32_t k = 0; k < p->n_tp_replicated; k++) ns += (double)t->ops[p->tp_replicated[k]].dev_ns;
        fprintf(out, "           tensor parallel: %d op%s not recognised as a Megatron region stay%s replicated "
                "(%.3f ms traced):", p->n_tp_replicated, mt_plural(p->n_tp_replicated),
                p->n_tp_replicated == 1 ? "s" : "", ns / 1e6);
        for (int32_t k = 0; k < p->n_tp_replicated && k < 5; k++)
            fprintf(out, "%s op %d %s", k ? "," : "", (int)p->tp_replicated[k], t->ops[p->tp_replicated[k]].name);
        fprintf(out, "%s\n", p->n_tp_replicated > 5 ? ", ..." : "");
    }
    if (pl->sp)
        fprintf(out, "           sequence parallel: norms, adds and dropout on 1/%d of the tokens between "
                "reduce-scatter and all-gather\n", pl->tp);
    if (pl->cp > 1)
        fprintf(out, "           context parallel: %d ranks split each sequence, %d K/V rings (ring attention)\n",
                pl->cp, p->cp_rings);
    char as_traced[256];
    if (traced_plan_text(pl, as_traced, sizeof as_traced)) fprintf(out, "           %s\n", as_traced);
    else print_mesh(out, p, r);
    mt_experts_print(out, p);
    char mode[32];
    int buckets = pl->dp_mode == MT_DP_DDP && pl->zero < 3 && !pl->fsdp;
    if (mt_plan_shown_dp(pl) > 1)
        fprintf(out, "           data parallel: %s%s%s", mt_plan_dp_name(pl, mode, sizeof mode),
               buckets ? ", bucket " : "", buckets ? bucket : "");
    int32_t shard = pl->zero > 0 || pl->fsdp || pl->dist_opt ? mt_plan_shard(pl) * pl->cp : 1; /* cp ranks shard too */
    if (pl->dp > 1 && shard > 1)
        fprintf(out, ", states sharded over %d GPU%s", shard, mt_plural(shard));
    if (pl->dp > 1 && p->distopt_gathers)
        fprintf(out, ", %d parameter all-gather%s overlapping the first forward", p->distopt_gathers,
                mt_plural(p->distopt_gathers));
    if (pl->dp > 1 && p->shard_units) {
        fprintf(out, ", %d unit%s gathered (", p->shard_units, mt_plural(p->shard_units));
        if (p->shard_unit_blocks > 0)
            fprintf(out, "%d repeating block%s each + the root", p->shard_unit_blocks, mt_plural(p->shard_unit_blocks));
        else fprintf(out, "the trace's layers");
        fprintf(out, ", prefetch %d, reshard after forward %s)", mt_plan_prefetch(pl), mt_reshard_name(pl->reshard));
    }
    if (mt_plan_shown_dp(pl) > 1) fprintf(out, "\n");
    char sched[32], cut[MT_STAGES_LIST_MAX * 4 + 32];
    if (pl->pp > 1)
        fprintf(out, "           pipeline: %s, %d micro-batch%s", mt_plan_schedule_label(pl, sched, sizeof sched),
                pl->micro_batches, pl->micro_batches == 1 ? "" : "es");
    if (pl->pp > 1 && pl->vpp > 1) fprintf(out, ", %d model chunks per GPU", (int)pl->vpp);
    if (pl->pp > 1) fprintf(out, ", cut: %s\n", mt_stages_cut_describe(&p->stage_cut, cut, sizeof cut));
    if (pl->recompute != MT_RECOMPUTE_NONE) print_recompute(out, p);
}

/* Compute slowed by communication: the model, and the GPU it stretched most. */
static void print_stretch(FILE *out, const mt_run_summary *s) {
    if (!s->comm_slow || !*s->comm_slow) return;
    const mt_sim_result *r = s->res;
    int32_t w = 0;
    for (int32_t i = 1; r && i < r->n_gpus; i++)
        if (r->gpus[i].stretch_ps > r->gpus[w].stretch_ps) w = i;
    fprintf(out, "overlap    compute beside collectives: %s (--comm-slowdown)", s->comm_slow);
    if (r && r->n_gpus > 0 && r->gpus[w].stretch_ps > 0)
        fprintf(out, "; GPU %d stretched %.3f ms (%.1f%% of its compute)", r->gpus[w].rank, ms(r->gpus[w].stretch_ps),
                r->gpus[w].compute_ps > 0 ? 100.0 * (double)r->gpus[w].stretch_ps / (double)r->gpus[w].compute_ps : 0.0);
    fprintf(out, "\n");
}

void mt_summary_print(FILE *out, const mt_run_summary *s, int per_gpu, int layers) {
    const mt_trace *t = s->t;
    const mt_program *p = s->prog;
    const mt_sim_result *r = s->res;
    const mt_hostmodel *host = s->host;
    const mt_plan *pl = &p->plan;
    print_plan(out, t, p, r);
    print_comm(out, t, p);
    if (pl->global_batch > 0)
        fprintf(out, "batch      global %lld, per replica %lld, micro-batch %lld (traced batch %lld)\n",
               (long long)pl->global_batch, (long long)pl->replica_batch, (long long)pl->micro_batch,
               (long long)t->batch_size);
    else
        fprintf(out, "batch      unknown in the trace: each replica runs the traced batch\n");
    fprintf(out, "network    %s on %s\n", s->network, s->topology ? s->topology : "its own endpoints");
    char dev[320];
    fprintf(out, "recorded   %s\n", mt_device_describe(t, dev, sizeof dev));
    fprintf(out, "op times   %s\n", op_times(s, dev, sizeof dev));
    print_stretch(out, s);
    char prec[160], traced[160];
    mt_precision_describe(&p->prec, prec, sizeof prec);
    mt_precision_describe(&p->prec_traced, traced, sizeof traced);
    if (strcmp(prec, traced)) fprintf(out, "precision  %s; traced %s\n", prec, traced);
    else fprintf(out, "precision  %s, as traced (--precision)\n", prec);
    if (s->cpu_ranks) fprintf(out, "ranks      %s\n", MT_CPU_RANKS_TEXT);
    fprintf(out, "traced     %.3f ms (%s)", (double)mt_trace_total_dev_ns(t) / 1e6,
            t->recorded_on.kind == TRACE_DEV_CPU ? "one CPU process: sum of operator CPU time"
                                                 : "one GPU: sum of operator device time");
    if (host) fprintf(out, ", wall %.3f ms (host %.3f ms)", ms(host->wall_ps), ms(host->host_total_ps));
    fprintf(out, "\n");
    if (s->seq > 0)
        fprintf(out, "sequence   %lld tokens, the trace's %lld rewritten (--seq: tokens x %.4g, attention x %.4g; "
                "docs/llm.md)\n", (long long)s->seq, (long long)s->traced_seq, (double)s->seq / (double)s->traced_seq,
                ((double)s->seq / (double)s->traced_seq) * ((double)s->seq / (double)s->traced_seq));
    if (s->blocks > 0)
        fprintf(out, "blocks     %d, the trace's %d repeating blocks %s (--blocks; docs/blocks.md)\n", (int)s->blocks,
                (int)s->traced_blocks, s->blocks >= s->traced_blocks ? "repeated" : "cut");
    mt_calibration_print(out, s->cal);
    mt_replay_print(out, s->replay, s->commfit);
    if (host) {
        const mt_gpu_stats *w = most_host_wait(r);
        fprintf(out, "host model trace: launch latency %.1f us, %d synchronising call%s, %.1f us per added "
               "collective\n", host->launch_lat_ps / 1e6, host->n_syncs, mt_plural(host->n_syncs),
               host->coll_host_ps / 1e6);
        fprintf(out, "           GPU %d waits %.3f ms (%.0f%% of the step) for its host to launch work%s\n", w->rank,
               ms(w->host_wait_ps), r->step_ps > 0 ? 100.0 * (double)w->host_wait_ps / (double)r->step_ps : 0.0,
               w->host_busy_ps > w->compute_ps ? ": the step is launch-bound (host work exceeds GPU work)" : "");
        if (profiled_host_bound(s, r))
            fprintf(out, "           these are the profiled host times: the profiler slows the host (by 4 to 448 %% of the "
                    "step on the H100 traces, docs/gpu.md); give the step measured without it (--measured-ms MS) to "
                    "take its share out\n");
    } else {
        fprintf(out, "host model none: GPU time only (--host-model trace adds CPU dispatch and launches)\n");
    }
    fprintf(out, "step time  %.3f ms", ms(r->step_ps) / r->n_steps);
    if (pl->global_batch > 0 && r->step_ps > 0)
        fprintf(out, "   (%.1f samples/s)", (double)pl->global_batch * r->n_steps / (ms(r->step_ps) / 1e3));
    fprintf(out, "\n");
    mt_whatif_print(out, r, s->base);
    if (p->warning[0]) fprintf(out, "warning    %s\n", p->warning);
    if (mt_waits_print(out, p, r, "waits      ", 3) < 0) fprintf(out, "waits      (out of memory listing them)\n");
    fprintf(out, "\n%6s %4s %5s %4s %11s %11s %11s %11s %11s %11s %11s %11s %9s\n", "gpu", "dp", "stage", "tp",
            "compute ms", "stretch ms", "hostwait ms", "comm ms", "exposed ms", "peer ms", "bubble ms", "idle ms", "mem GB");
    int all = per_gpu || r->n_gpus <= 16;
    if (all) {
        for (int32_t i = 0; i < r->n_gpus; i++) print_gpu_row(out, &r->gpus[i], NULL);
    } else { /* the GPU that finished last, the one with the most exposed communication, the one
              * that waited longest for its peers */
        int32_t last = 0, worst = 0, peer = 0;
        for (int32_t i = 0; i < r->n_gpus; i++) {
            if (r->gpus[i].finish_ps > r->gpus[last].finish_ps) last = i;
            if (r->gpus[i].exposed_ps > r->gpus[worst].exposed_ps) worst = i;
            if (r->gpus[i].peer_wait_ps > r->gpus[peer].peer_wait_ps) peer = i;
        }
        char lab[32];
        snprintf(lab, sizeof lab, "%d*", r->gpus[last].rank);
        print_gpu_row(out, &r->gpus[last], lab);
        if (worst != last) print_gpu_row(out, &r->gpus[worst], NULL);
        if (peer != last && peer != worst) print_gpu_row(out, &r->gpus[peer], NULL);
        fprintf(out, "(%d GPUs; * finished last; --per-gpu lists all)\n", r->n_gpus);
    }
    if (layers && r->n_layers > 0) {
        fprintf(out, "\n%-32s %12s %12s\n", "layer", "compute ms", "comm ms");
        for (int32_t l = 0; l < r->n_layers; l++)
            fprintf(out, "%-32.32s %12.3f %12.3f\n", t->layers[l].name, r->layer_compute_ps[l] / 1e9,
                   r->layer_comm_ps[l] / 1e9);
    }
    char rss[32];
    fprintf(out, "\nsimulated  %llu event%s, %llu collective%s, %llu pipeline send%s in %.3f s (peak memory %s)\n",
           (unsigned long long)r->events, mt_plural((int64_t)r->events), (unsigned long long)r->collectives,
           mt_plural((int64_t)r->collectives), (unsigned long long)r->sends, mt_plural((int64_t)r->sends),
           r->sim_wall_s, mt_fmt_bytes(s->peak_rss_bytes, rss, sizeof rss));
    if (r->folded) {
        fprintf(out, "folded     %d of %d GPUs walked their programs: %s\n", r->walkers, r->n_gpus, r->fold_why);
        fprintf(out, "           network %s: %s\n", r->net_folded ? "folded" : "unfolded", r->net_fold_why);
    }
    else fprintf(out, "unfolded   every GPU walked its program: %s\n", r->fold_why);
}

/* ---- calibration ---- */

void mt_calibration_print(FILE *out, const mt_calibration *cal) {
    if (!cal || !cal->on) return;
    fprintf(out, "calibrated ");
    if (cal->host_removed) fprintf(out, "host times removed");
    else if (cal->host) fprintf(out, "host times x %.4f", cal->host_scale);
    if (cal->host && cal->op_scale != 1) fprintf(out, ", ");
    if (!cal->host || cal->op_scale != 1) fprintf(out, "operator times x %.4f", cal->op_scale);
    fprintf(out, ": one GPU takes %.3f ms (measured %.3f ms, %s; uncalibrated %.3f ms)\n", cal->calibrated_ms,
            cal->measured_ms, cal->source, cal->uncalibrated_ms);
    if (cal->automatic)
        fprintf(out, "           by default: the profiler slowed this GPU trace's host %+.0f %% over the step measured "
                "without it (--no-calibrate keeps the profiled times)\n",
                100 * (cal->uncalibrated_ms - cal->measured_ms) / cal->measured_ms);
}

json_t *mt_calibration_json(const mt_calibration *cal) {
    if (!cal || !cal->on) return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "measured_ms", json_real(cal->measured_ms));
    json_object_set_new(o, "source", json_string(cal->source));
    json_object_set_new(o, "uncalibrated_ms", json_real(cal->uncalibrated_ms));
    json_object_set_new(o, "calibrated_ms", json_real(cal->calibrated_ms));
    json_object_set_new(o, "host_scale", json_real(cal->host_scale));
    json_object_set_new(o, "op_scale", json_real(cal->op_scale));
    json_object_set_new(o, "automatic", json_boolean(cal->automatic));
    return o;
}

/* ---- what-if ---- */

void mt_whatif_print(FILE *out, const mt_sim_result *r, const mt_sim_result *b) {
    if (r->n_steps > 1) {
        fprintf(out, "steps      %d back to back, run %.3f ms (mean %.3f ms per step); each:", r->n_steps,
               msd((double)r->step_ps), msd((double)r->step_ps) / r->n_steps);
        for (int32_t k = 0; k < r->n_steps && k < 16; k++)
            fprintf(out, " %.3f", msd((double)(r->step_end_ps[k] - (k ? r->step_end_ps[k - 1] : 0))));
        fprintf(out, "%s ms\n", r->n_steps > 16 ? " ..." : "");
    }
    if (!b) return;
    mt_whatif_cost c;
    mt_whatif_cost_of(b, r, &c);
    fprintf(out, "what-if    unperturbed %.3f ms -> %.3f ms (%+.3f ms, %+.2f%%)%s\n", msd((double)c.base_ps),
           msd((double)c.run_ps), msd((double)c.run_change_ps),
           mt_change_pct((double)c.base_ps, (double)c.run_ps),
           r->n_steps > 1 ? " over all steps" : "");
    if (r->n_steps > 1) {
        fprintf(out, "           change per step:");
        for (int32_t k = 0; k < r->n_steps && k < 16; k++) {
            mt_time_ps a = r->step_end_ps[k] - (k ? r->step_end_ps[k - 1] : 0);
            mt_time_ps z = b->step_end_ps[k] - (k ? b->step_end_ps[k - 1] : 0);
            fprintf(out, " %+.3f", msd((double)(a - z)));
        }
        fprintf(out, " ms\n");
    }
    fprintf(out, "           GPU-time lost %.3f ms over %d GPU%s = %.3f ms extra compute + %.3f ms more waiting\n",
           msd(c.gpu_time_ps), r->n_gpus, r->n_gpus == 1 ? "" : "s", msd(c.extra_compute_ps), msd(c.extra_wait_ps));
}

double mt_whatif_change_pct(const mt_sim_result *r, const mt_sim_result *base) {
    if (!base) return 0;
    mt_whatif_cost c;
    mt_whatif_cost_of(base, r, &c);
    return mt_change_pct((double)c.base_ps, (double)c.run_ps);
}

static json_t *step_times(const mt_sim_result *r) {
    json_t *a = json_array();
    for (int32_t k = 0; k < r->n_steps; k++)
        json_array_append_new(a, json_real(msd((double)(r->step_end_ps[k] - (k ? r->step_end_ps[k - 1] : 0)))));
    return a;
}

void mt_whatif_json(json_t *o, const mt_sim_result *r, const mt_sim_result *base) {
    json_object_set_new(o, "steps", json_integer(r->n_steps));
    json_object_set_new(o, "step_ms_each", step_times(r));
    if (!base) return;
    mt_whatif_cost c;
    mt_whatif_cost_of(base, r, &c);
    json_t *x = json_object();
    json_object_set_new(x, "base_ms", json_real(msd((double)c.base_ps)));
    json_object_set_new(x, "run_ms", json_real(msd((double)c.run_ps)));
    json_object_set_new(x, "change_ms", json_real(msd((double)c.run_change_ps)));
    json_object_set_new(x, "base_step_ms_each", step_times(base));
    json_object_set_new(x, "gpu_time_lost_ms", json_real(msd(c.gpu_time_ps)));
    json_object_set_new(x, "extra_compute_ms", json_real(msd(c.extra_compute_ps)));
    json_object_set_new(x, "extra_wait_ms", json_real(msd(c.extra_wait_ps)));
    json_object_set_new(o, "whatif", x);
}

/* ---- HTML ---- */

mt_status mt_summary_html_gpus(mt_span_filter *f, int32_t n_gpus, mt_error *err) {
    if (n_gpus <= MT_HTML_GANTT_GPUS) return MT_OK;
    char keep[32];
    snprintf(keep, sizeof keep, "0-%d", MT_HTML_GANTT_GPUS - 1);
    return mt_span_filter_ranks(f, keep, n_gpus, err);
}

enum { RUN_LINES = 24 };

/* The report's "holds back" line (report/verdict.h) and the run's warnings (the program's warning
 * and s->warnings, each once), from kv[*n] on, their text in val[*k] on. */
static void verdict_lines(const mt_run_summary *s, mt_html_kv *kv, int32_t *n, char (*val)[512], int *k) {
    mt_hold_parts parts;
    mt_holdback hb;
    mt_hold_parts_of(s->res, s->mem_limit, &parts);
    mt_holdback_of(&parts, &hb);
    snprintf(val[*k], 512, "%s", hb.text);
    kv[(*n)++] = (mt_html_kv){"holds back", val[(*k)++]};
    if (s->prog->warning[0]) kv[(*n)++] = (mt_html_kv){"warning", s->prog->warning};
    for (int w = 0; w < s->n_warnings && w < MT_SUMMARY_WARNINGS; w++)
        if (s->warnings[w] && s->warnings[w][0] && strcmp(s->warnings[w], s->prog->warning))
            kv[(*n)++] = (mt_html_kv){"warning", s->warnings[w]};
}

mt_status mt_summary_html_write(const char *path, const mt_html_report *rep, const mt_run_summary *s,
                                const mt_recorder *rec, const mt_span_filter *gpus, mt_error *err) {
    const mt_trace *t = s->t;
    const mt_plan *pl = &s->prog->plan;
    const mt_sim_result *r = s->res;
    char val[RUN_LINES][512], label[128];
    mt_planlist_label(pl, label, sizeof label);
    mt_html_kv *kv = calloc((size_t)rep->n_summary + RUN_LINES, sizeof *kv);
    if (!kv) return mt_fail(err, MT_ENOMEM, "out of memory writing the HTML report");
    int32_t n = rep->n_summary;
    for (int32_t i = 0; i < n; i++) kv[i] = rep->summary[i];
    int k = 0;
#define LINE(key, ...)                                                                             \
    do {                                                                                           \
        snprintf(val[k], sizeof val[k], __VA_ARGS__);                                              \
        kv[n++] = (mt_html_kv){key, val[k++]};                                                     \
    } while (0)
    char dev[320];
    LINE("trace", "%s, recorded on %s", t->kineto_path ? t->kineto_path : "?", mt_device_describe(t, dev, sizeof dev));
    char dims[96];
    LINE("plan", "%s: %d GPU%s = %s, placement %s, %s collectives", label, pl->gpus, mt_plural(pl->gpus),
         plan_dims(pl, dims, sizeof dims), pl->placement, mt_coll_algo_name(pl->algo));
    char mesh[200];
    LINE("mesh", "%s", traced_plan_text(pl, mesh, sizeof mesh) ? mesh : mesh_text(s->prog, mesh, sizeof mesh));
    if (traffic_text(s->prog, r, mesh, sizeof mesh)[0]) LINE("traffic", "sent per GPU (mean): %s", mesh);
    if (pl->global_batch > 0)
        LINE("batch", "global %lld, per replica %lld, micro-batch %lld (traced %lld)", (long long)pl->global_batch,
             (long long)pl->replica_batch, (long long)pl->micro_batch, (long long)t->batch_size);
    else
        LINE("batch", "unknown in the trace: each replica runs the traced batch");
    if (pl->pp > 1) {
        char sched[32], cut[MT_STAGES_LIST_MAX * 4 + 32];
        LINE("pipeline", "%s, %d micro-batch%s, cut: %s", mt_plan_schedule_label(pl, sched, sizeof sched),
             (int)pl->micro_batches, pl->micro_batches == 1 ? "" : "es",
             mt_stages_cut_describe(&s->prog->stage_cut, cut, sizeof cut));
    }
    LINE("network", "%s on %s", s->network, s->topology ? s->topology : "its own endpoints");
    LINE("op times", "%s", op_times(s, dev, sizeof dev));
    if (s->cpu_ranks) LINE("ranks", "%s", MT_CPU_RANKS_TEXT);
    LINE("host model", "%s", s->host ? "trace: each GPU's host thread launches its ops as in the trace"
                                       : "none: GPU time only");
    if (s->host_scale != 1 || s->op_scale != 1)
        LINE("time scaling", "host times x %.4f, operator times x %.4f (--host-scale or --calibrate)",
             s->host_scale, s->op_scale);
    int32_t steps = r->n_steps > 1 ? r->n_steps : 1;
    LINE("step time", t->recorded_on.kind == TRACE_DEV_CPU ? "%.3f ms%s (the traced CPU process: %.3f ms of operator "
         "time)" : "%.3f ms%s (one traced GPU: %.3f ms of operator time)", (double)r->step_ps / 1e9 / steps,
         steps > 1 ? " a step, the mean of the steps simulated (the bars and timeline show them all)" : "",
         (double)mt_trace_total_dev_ns(t) / 1e6);
    if (s->replay && s->replay->on) {
        mt_replay_line(s->replay, val[k], sizeof val[k]);
        kv[n++] = (mt_html_kv){"replay", val[k++]};
    }
    if (s->commfit && s->commfit->on)
        LINE("comm fit", "links %.3f GB/s, %.2f us fitted to %d traced collectives (--calibrate-comm); measured "
             "waiting for peers (%.0f us) stays inside the fitted times", s->commfit->bw_Bps / 1e9,
             s->commfit->lat_ns / 1e3, (int)s->commfit->n, s->commfit->peer_wait_us);
    if (pl->global_batch > 0 && r->step_ps > 0)
        LINE("throughput", "%.1f samples/s", (double)pl->global_batch * steps / ((double)r->step_ps / 1e12));
    double peak = 0, limit = s->mem_limit;
    for (int32_t i = 0; i < r->n_gpus; i++)
        if (r->gpus[i].peak_mem_bytes > peak) peak = r->gpus[i].peak_mem_bytes;
    if (limit > 0)
        LINE("peak memory", "%.2f GB per GPU (estimated; limit %.2f GB%s)", peak / 1e9, limit / 1e9,
             peak > limit ? ": OVER THE LIMIT" : "");
    else
        LINE("peak memory", "%.2f GB per GPU (estimated; the GPU's memory is unknown, see --gpu-mem)", peak / 1e9);
    FILE *m = fmemopen(val[k], sizeof val[k] - 1, "w"); /* the text's waits lines, joined by "; " */
    int waits = m ? mt_waits_print(m, s->prog, r, " ", 2) : 0; /* lines after the first: " GPU ..." */
    if (m) fclose(m);
    if (waits > 0) {
        val[k][sizeof val[k] - 1] = 0;
        for (char *c = val[k]; *c; c++)
            if (*c == '\n') *c = c[1] ? ';' : 0;
        kv[n++] = (mt_html_kv){"waits", val[k++] + 1};
    }
    verdict_lines(s, kv, &n, val, &k);
#undef LINE
    mt_html_report full = *rep;
    full.summary = kv;
    full.n_summary = n;
    full.detail_label = label;
    full.prog = s->prog;
    full.res = r;
    full.rec = rec;
    full.gpus = gpus;
    mt_status rc = mt_html_write(path, &full, err);
    free(kv);
    return rc;
}

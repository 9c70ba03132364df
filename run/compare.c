/* run/compare.c — see compare.h. */
#include "run/compare.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/planlist.h"
#include "extrapolate/sparseplans.h"
#include "report/progress.h"
#include "report/verdict.h"
#include "run/pool.h"
#include "run/prune.h"
#include "run/simrun.h"
#include "run/whatif.h"
#include "util/budget.h"
#include "util/limits.h"
#include "util/units.h"
#include "util/vec.h"

/* ---- sweeps -------------------------------------------------------------------------------- */

static const char *const SWEEP_NAMES[] = {"", "link-bw", "nic-bw", "gpus", "batch"};

const char *mt_sweep_name(mt_sweep_kind k) {
    return k >= MT_SWEEP_NONE && k <= MT_SWEEP_BATCH ? SWEEP_NAMES[k] : "";
}

static mt_status sweep_value(mt_sweep_kind k, const char *text, double *out, mt_error *err) {
    if ((k == MT_SWEEP_LINK_BW || k == MT_SWEEP_NIC_BW) && mt_parse_bandwidth(text, out, err) != MT_OK)
        return mt_error_prefix(err, "--sweep %s=", SWEEP_NAMES[k]);
    if (k == MT_SWEEP_LINK_BW || k == MT_SWEEP_NIC_BW) return MT_OK;
    char *end = NULL;
    long long hi = k == MT_SWEEP_GPUS ? MT_GPUS_MAX : 1 << 30;
    long long v = strtoll(text, &end, 10);
    if (!*text || *end || v < 1 || v > hi)
        return mt_fail(err, MT_EINVAL, "--sweep %s= needs an integer in 1..%lld (got '%s')", SWEEP_NAMES[k], hi,
                       text);
    *out = (double)v;
    return MT_OK;
}

static mt_status add_value(mt_sweep *s, double v, mt_error *err) {
    if (s->kind == MT_SWEEP_GPUS || s->kind == MT_SWEEP_BATCH) v = (double)(int64_t)(v + 0.5);
    if (s->n > 0 && s->values[s->n - 1] == v) return MT_OK;
    if (s->n >= MT_SWEEP_MAX_VALUES)
        return mt_fail(err, MT_EINVAL, "--sweep gives more than %d values (use fewer steps)", MT_SWEEP_MAX_VALUES);
    s->values[s->n++] = v;
    return MT_OK;
}

/* FROM:TO[:S|:xF] after the name, into s. */
static mt_status parse_range(mt_sweep *s, char *buf, const char *text, mt_error *err) {
    char *save = NULL;
    char *from = strtok_r(buf, ":", &save), *to = strtok_r(NULL, ":", &save), *st = strtok_r(NULL, ":", &save);
    double a, b;
    MT_CHECK(sweep_value(s->kind, from, &a, err));
    MT_CHECK(sweep_value(s->kind, to ? to : "", &b, err));
    if (strtok_r(NULL, ":", &save) || b < a)
        return mt_fail(err, MT_EINVAL, "--sweep '%s': write FROM:TO[:STEPS|:xFACTOR] with FROM <= TO", text);
    if (!st || st[0] == 'x') {
        char *end = NULL;
        double f = st ? strtod(st + 1, &end) : 2;
        if (st && (*end || end == st + 1 || !(f > 1.000001)))
            return mt_fail(err, MT_EINVAL, "--sweep '%s': the factor after x must be a number > 1", text);
        for (double v = a; v <= b * (1 + 1e-9); v *= f) MT_CHECK(add_value(s, v, err));
        if (s->values[s->n - 1] < b * (1 - 1e-9)) MT_CHECK(add_value(s, b, err));
        return MT_OK;
    }
    char *end = NULL;
    long n = strtol(st, &end, 10);
    if (!*st || *end || n < 2 || n > MT_SWEEP_MAX_VALUES)
        return mt_fail(err, MT_EINVAL, "--sweep steps needs an integer in 2..%d (got '%s')", MT_SWEEP_MAX_VALUES, st);
    for (long i = 0; i < n; i++) MT_CHECK(add_value(s, a + (b - a) * (double)i / (double)(n - 1), err));
    return MT_OK;
}

mt_status mt_sweep_parse(const char *text, mt_sweep *s, mt_error *err) {
    memset(s, 0, sizeof *s);
    const char *eq = strchr(text, '=');
    size_t nl = eq ? (size_t)(eq - text) : 0;
    for (int k = MT_SWEEP_LINK_BW; k <= MT_SWEEP_BATCH && eq; k++)
        if (strlen(SWEEP_NAMES[k]) == nl && !strncmp(text, SWEEP_NAMES[k], nl)) s->kind = (mt_sweep_kind)k;
    if (s->kind == MT_SWEEP_NONE)
        return mt_fail(err, MT_EINVAL, "--sweep '%s': use link-bw=, nic-bw=, gpus= or batch= followed by values "
                                       "such as 100GB/s:900GB/s", text);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", eq + 1);
    if (!strchr(buf, ',') && strchr(buf, ':')) return parse_range(s, buf, text, err);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        double v;
        MT_CHECK(sweep_value(s->kind, tok, &v, err));
        MT_CHECK(add_value(s, v, err));
    }
    if (s->n == 0) return mt_fail(err, MT_EINVAL, "--sweep '%s' has no values", text);
    return MT_OK;
}

void mt_compare_config_init(mt_compare_config *cc) {
    memset(cc, 0, sizeof *cc);
    cc->sparse = MT_SPARSE_AUTO;
}

/* The rows a plan search keeps exact: --top's K, else MT_PRUNE_TOP_DEFAULT (10) when compare lists
 * the plans itself (--plans auto), else 0: every plan of a --plans LIST runs; 0 with --exhaustive. */
static int32_t exact_rows(const mt_compare_config *cc) {
    if (cc->exhaustive) return 0;
    return cc->top ? cc->top : cc->plans ? 0 : MT_PRUNE_TOP_DEFAULT;
}

mt_status mt_compare_check(const mt_run_config *c, const mt_compare_config *cc, mt_error *err) {
    mt_sweep_kind sw = cc->sweep.kind;
    const mt_plan *p = &c->plan;
    if (c->n_paths == 0) return mt_fail(err, MT_EINVAL, "no trace given (usage: mitosis compare TRACE --gpus N)");
    if (sw != MT_SWEEP_NONE && cc->plans)
        return mt_fail(err, MT_EINVAL, "--plans and --sweep do not go together: a sweep runs the one plan "
                                       "the plan flags give");
    if (sw == MT_SWEEP_NONE && p->gpus == 0)
        return mt_fail(err, MT_EINVAL, "--gpus is required (the GPU count to compare plans for)");
    if (p->cp > 1 && sw == MT_SWEEP_NONE)
        return mt_fail(err, MT_EINVAL, "--cp does not apply to compare's plan list (it enumerates dp x tp x pp): "
                       "list sizes with --cp-sizes (e.g. 1,2), give cp= in --plans, or --sweep the plan");
    if ((cc->n_cps || cc->sp_modes) && cc->plans)
        return mt_fail(err, MT_EINVAL, "--cp-sizes and --sp-modes list variants of the auto plans: with --plans give "
                       "cp= and sp in each plan instead");
    if (sw == MT_SWEEP_NONE && p->gpus > 0 && c->scenario && mt_scenario_check_gpus(c->scenario, p->gpus, err) != MT_OK)
        return mt_error_prefix(err, "every plan has --gpus %d", (int)p->gpus);
    if (sw == MT_SWEEP_GPUS && p->gpus)
        return mt_fail(err, MT_EINVAL, "--gpus and --sweep gpus= do not go together (drop --gpus)");
    if (sw != MT_SWEEP_NONE && sw != MT_SWEEP_GPUS && p->gpus == 0 && !p->dp && !p->tp && !p->pp)
        return mt_fail(err, MT_EINVAL, "--sweep %s needs the plan: give --gpus (and --dp/--tp/--pp)",
                       SWEEP_NAMES[sw]);
    return MT_OK;
}

/* ---- one row ----------------------------------------------------------------------------- */

/* What a row runs: its plan and network (with the swept value and {gpus}/{nodes} filled in). */
typedef struct job {
    mt_plan plan;
    mt_netcfg net;
    char topology[128];
    const mt_hostmodel *host; /* the search's host model (share_host), for a run whose host_model and
                               * host_scale are these; NULL: each run builds its own */
    int host_model;
    double host_scale;
} job;

mt_status mt_sweep_topology(const char *spec, int32_t gpus, int32_t per_node, char *buf, size_t len,
                              mt_error *err) {
    buf[0] = '\0';
    if (!spec) return MT_OK;
    size_t at = 0;
    for (const char *p = spec; *p && at + 1 < len;) {
        int32_t v = -1;
        if (!strncmp(p, "{gpus}", 6)) v = gpus, p += 6;
        else if (!strncmp(p, "{nodes}", 7)) {
            if (gpus % per_node)
                return mt_fail(err, MT_EINVAL, "%d GPU%s do%s not fill whole nodes of %d (--gpus-per-node) for "
                                               "{nodes} in --topology", gpus, mt_plural(gpus), gpus == 1 ? "es" : "",
                                               per_node);
            v = gpus / per_node, p += 7;
        }
        if (v >= 0) at += (size_t)snprintf(buf + at, len - at, "%d", v);
        else buf[at++] = *p++;
        buf[at < len ? at : len - 1] = '\0';
    }
    return MT_OK;
}

/* The run's config for job j (the what-if scenario bound through w), an item of pool (or NULL). */
static mt_status job_cfg(const mt_run_config *c, job *j, const mt_trace *t, mt_whatif *w, mt_pool *pool,
                         mt_simrun_cfg *cfg, mt_error *err) {
    const mt_plan *p = &j->plan;
    int32_t gpus = p->gpus ? p->gpus : (p->dp ? p->dp : 1) * (p->tp ? p->tp : 1) * (p->pp ? p->pp : 1);
    MT_CHECK(mt_sweep_topology(c->net.topology, gpus, c->gpus_per_node, j->topology, sizeof j->topology, err));
    *cfg = mt_simrun_cfg_of(c, 0);
    cfg->plan = j->plan;
    cfg->net = j->net;
    cfg->net.topology = j->topology[0] ? j->topology : NULL;
    cfg->pool = pool;
    mt_whatif_configure(w, c, t, cfg);
    if (j->host && cfg->host_model == j->host_model && cfg->host_scale == j->host_scale) cfg->host_shared = j->host;
    return MT_OK;
}

/* One host model for every row (built per run, it was 5 % of a plan search): *host, NULL when there is
 * none or it cannot be built (each run then says why). */
static void share_host(const mt_run_config *c, const mt_run_input *in, job *jobs, int32_t n, mt_hostmodel **host) {
    mt_simrun_cfg base = mt_simrun_cfg_of(c, 0);
    mt_error ign = {0};
    if (mt_simrun_host(in->t, &base, host, &ign) != MT_OK) *host = NULL;
    for (int32_t i = 0; *host && i < n; i++)
        jobs[i].host = *host, jobs[i].host_model = base.host_model, jobs[i].host_scale = base.host_scale;
}

static void skip(mt_cmp_row *w, const mt_error *e) {
    free(w->reason);
    w->reason = strdup(e->msg[0] ? e->msg : "refused");
    w->ran = 0;
}

/* The row's numbers from a finished run. */
static void fill_row(mt_cmp_row *w, const mt_simrun *run, const mt_comparison *cmp) {
    const mt_sim_result *r = run->res;
    w->ran = 1;
    w->plan = run->plan;
    snprintf(w->topology, sizeof w->topology, "%s", run->topology);
    w->step_ms = mt_simrun_step_ms(run);
    w->sps = run->plan.global_batch > 0 && r->step_ps > 0 ? (double)run->plan.global_batch / (w->step_ms / 1e3) : -1;
    w->speedup = mt_speedup(&run->plan, w->step_ms, cmp->base_batch, cmp->base_step_ms);
    w->exposed_ms = w->peer_ms = w->host_wait_ms = w->bubble_ms = w->stretch_ms = w->mem_bytes = 0;
    for (int32_t i = 0; i < r->n_gpus; i++) {
        const mt_gpu_stats *g = &r->gpus[i];
        double k = 1e9 * r->n_steps; /* per step */
        if ((double)g->exposed_ps / k > w->exposed_ms) w->exposed_ms = (double)g->exposed_ps / k;
        if ((double)g->peer_wait_ps / k > w->peer_ms) w->peer_ms = (double)g->peer_wait_ps / k;
        if ((double)g->host_wait_ps / k > w->host_wait_ms) w->host_wait_ms = (double)g->host_wait_ps / k;
        if ((double)g->bubble_ps / k > w->bubble_ms) w->bubble_ms = (double)g->bubble_ps / k;
        if ((double)g->stretch_ps / k > w->stretch_ms) w->stretch_ms = (double)g->stretch_ps / k;
        if (g->peak_mem_bytes > w->mem_bytes) w->mem_bytes = g->peak_mem_bytes;
    }
    w->over_mem = cmp->mem_limit > 0 && w->mem_bytes > cmp->mem_limit;
}

/* Runs row w; an infeasible plan (refused by the plan, the program or the topology) is skipped
 * with its reason. Other failures are returned. */
static mt_status run_row(const mt_run_config *c, const mt_run_input *in, job *j, mt_cmp_row *w,
                         const mt_comparison *cmp, mt_pool *pool, mt_error *err) {
    mt_error e = {0};
    mt_simrun_cfg cfg;
    mt_simrun run;
    mt_whatif wi;
    mt_status rc = job_cfg(c, j, in->t, &wi, pool, &cfg, &e);
    if (rc == MT_OK && cmp->perturbed) { /* the same plan unperturbed, as simulate does */
        mt_simrun_cfg u = mt_whatif_unperturbed(&cfg);
        rc = mt_simrun_run(in->t, in->pm, &u, &run, &e);
        if (rc == MT_OK) {
            w->base_step_ms = mt_simrun_step_ms(&run);
            mt_simrun_free(&run);
        }
    }
    if (rc == MT_OK) rc = mt_simrun_run(in->t, in->pm, &cfg, &run, &e);
    if (rc == MT_EINVAL || rc == MT_ENOROUTE) {
        skip(w, &e);
        return MT_OK;
    }
    if (rc != MT_OK) {
        *err = e;
        return mt_error_prefix(err, "plan %s", w->label);
    }
    fill_row(w, &run, cmp);
    mt_simrun_free(&run);
    return MT_OK;
}

/* ---- the rows ------------------------------------------------------------------------------ */

/* Replaces *plans by `more` (the list an expansion made of them, planlist.h); none left is an
 * error saying `why`. */
static mt_status adopt(mt_status rc, mt_plan *more, int32_t n, mt_plan **plans, int32_t *np, const char *why,
                       mt_error *err) {
    free(*plans);
    *plans = more;
    *np = n;
    if (rc == MT_OK && n == 0) return mt_fail(err, MT_EINVAL, "%s", why);
    return rc;
}

/* The auto list times the recompute modes and interleaving degrees asked for. */
static mt_status expand(const mt_compare_config *cc, mt_plan **plans, int32_t *np, mt_error *err) {
    mt_plan *more = NULL;
    int32_t n = 0;
    mt_status rc = mt_planlist_expand(*plans, *np, cc->recompute_modes, cc->vpps, cc->n_vpps, &more, &n, err);
    return adopt(rc, more, n, plans, np, "--vpp-sizes: no plan takes these degrees (interleaving needs --pp > 1 "
                 "and --micro-batches a multiple of P)", err);
}

/* The auto list times the context-parallel sizes and sequence-parallel modes asked for. */
static mt_status expand_seq(const mt_compare_config *cc, mt_plan **plans, int32_t *np, mt_error *err) {
    mt_plan *more = NULL;
    int32_t n = 0;
    mt_status rc = mt_planlist_expand_seq(*plans, *np, cc->cps, cc->n_cps, cc->sp_modes, &more, &n, err);
    return adopt(rc, more, n, plans, np, "--cp-sizes/--sp-modes: no plan takes them (a context-parallel size "
                 "must divide a plan's dp; sequence parallel needs tp > 1)", err);
}

/* The plans compare runs (no sweep): the --plans list or every plan for the GPUs, expanded as
 * asked; t NULL: without the sparse expansion (it reads the trace). */
static mt_status plan_list(const mt_run_config *c, const mt_compare_config *cc, int64_t traced_batch, const mt_trace *t,
                           mt_plan **plans, int32_t *np, mt_error *err) {
    mt_plan base = mt_run_plan(c, c->plan.gpus);
    if (base.global_batch == 0 && traced_batch > 0) base.global_batch = traced_batch * base.gpus;
    int fixed_mode = c->strategy == MT_STRATEGY_DP || c->strategy == MT_STRATEGY_DDP;
    MT_CHECK(cc->plans ? mt_planlist_parse(cc->plans, &base, plans, np, err)
                       : mt_planlist_auto(&base, fixed_mode, c->schedule_set, cc->dp_modes, plans, np, err));
    if (!cc->plans && cc->sparse && t) MT_CHECK(mt_sparse_expand(t, cc->sparse, plans, np, err));
    if (!cc->plans && (cc->recompute_modes || cc->n_vpps || base.vpp > 1)) MT_CHECK(expand(cc, plans, np, err));
    if (!cc->plans && (cc->n_cps || cc->sp_modes)) MT_CHECK(expand_seq(cc, plans, np, err));
    return MT_OK;
}

static mt_status too_many(int32_t np, mt_error *err) {
    if (np <= MT_COMPARE_MAX_ROWS) return MT_OK;
    return mt_fail(err, MT_EINVAL, "%d plans to run is too many (at most %d: use fewer GPUs, or name the plans with "
                   "--plans)", np, MT_COMPARE_MAX_ROWS);
}

mt_status mt_compare_plan_count(const mt_run_config *c, const mt_compare_config *cc, int64_t traced_batch,
                                int32_t *n, mt_error *err) {
    mt_plan *plans = NULL;
    *n = cc->sweep.n;
    mt_status rc = cc->sweep.kind == MT_SWEEP_NONE ? plan_list(c, cc, traced_batch, NULL, &plans, n, err) : MT_OK;
    free(plans);
    return rc == MT_OK ? too_many(*n, err) : rc;
}

/* The plans (or sweep values) as jobs and rows, not yet run. */
static mt_status make_rows(const mt_run_config *c, const mt_compare_config *cc, const mt_trace *t, job **jobs,
                           mt_comparison *cmp, mt_error *err) {
    mt_plan *plans = NULL;
    int32_t np = cc->sweep.n;
    mt_sweep_kind sw = cc->sweep.kind;
    mt_status rc = sw == MT_SWEEP_NONE ? plan_list(c, cc, t->batch_size, t, &plans, &np, err) : MT_OK;
    if (rc == MT_OK) rc = too_many(np, err);
    if (rc != MT_OK) {
        free(plans);
        return rc;
    }
    *jobs = calloc((size_t)np + 1, sizeof **jobs);
    cmp->rows = calloc((size_t)np + 1, sizeof *cmp->rows);
    if (!*jobs || !cmp->rows) {
        free(plans);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    cmp->n = np;
    for (int32_t i = 0; i < np; i++) {
        job *j = &(*jobs)[i];
        mt_cmp_row *w = &cmp->rows[i];
        j->net = c->net;
        if (plans) {
            j->plan = plans[i];
            mt_planlist_label(&j->plan, w->label, sizeof w->label);
            continue;
        }
        double v = w->x = cc->sweep.values[i];
        j->plan = mt_run_plan(c, sw == MT_SWEEP_GPUS ? (int32_t)v : 0);
        if (sw == MT_SWEEP_BATCH) j->plan.global_batch = (int64_t)v;
        if (sw == MT_SWEEP_LINK_BW) j->net.tp.link_bw_Bps = v;
        if (sw == MT_SWEEP_NIC_BW) j->net.tp.nic_bw_Bps = v;
        if (sw == MT_SWEEP_LINK_BW || sw == MT_SWEEP_NIC_BW) mt_fmt_bandwidth(v, w->label, sizeof w->label);
        else snprintf(w->label, sizeof w->label, "%.0f", v);
    }
    free(plans);
    return MT_OK;
}

mt_status mt_compare_baseline(const mt_run_config *c, const mt_run_input *in, double *step_ms, int64_t *batch,
                              int *host, mt_error *err) {
    mt_simrun_cfg cfg = mt_simrun_cfg_of(c, 0);
    cfg.plan = c->plan;
    cfg.plan.gpus = 1;
    cfg.plan.dp = cfg.plan.tp = cfg.plan.pp = cfg.plan.micro_batches = 0;
    cfg.plan.vpp = 0; /* one GPU: no pipeline to interleave */
    cfg.plan.global_batch = 0;
    /* one GPU: nothing to split by sequence, context or experts, nothing to shard over */
    cfg.plan.sp = cfg.plan.zero = cfg.plan.fsdp = cfg.plan.fsdp_shard = cfg.plan.shard_units = 0;
    cfg.plan.dist_opt = 0;
    cfg.plan.n_pp_layers = cfg.plan.emb_shard = 0;
    cfg.plan.cp = cfg.plan.ep = 1;
    cfg.plan.shard_prefetch = -1;
    cfg.net.topology = NULL; /* one GPU: no communication, switch:1 */
    mt_simrun run;
    MT_CHECK(mt_simrun_run(in->t, in->pm, &cfg, &run, err));
    *step_ms = (double)run.res->step_ps / 1e9;
    *batch = run.plan.global_batch;
    if (host) *host = run.host != NULL;
    mt_simrun_free(&run);
    if (!(*step_ms > 0)) return mt_fail(err, MT_EINVAL, "the traced step takes no time: nothing to compare");
    return MT_OK;
}

/* One GPU at the traced batch: the unit every speed-up is measured against. */
static mt_status run_baseline(const mt_run_config *c, const mt_run_input *in, mt_comparison *cmp, mt_error *err) {
    MT_CHECK(mt_compare_baseline(c, in, &cmp->base_step_ms, &cmp->base_batch, &cmp->host, err));
    /* A --batch the trace cannot take (its batch is unknown) is an error, not a skipped plan. */
    if (c->plan.global_batch > 0 && in->t->batch_size <= 0) {
        mt_plan p = c->plan;
        p.gpus = 1;
        p.dp = p.tp = p.pp = p.micro_batches = p.vpp = 0;
        return mt_plan_resolve(&p, in->t, err);
    }
    return MT_OK;
}

/* The header facts of the comparison. */
static void describe(const mt_run_config *c, const mt_run_input *in, const mt_compare_config *cc,
                     mt_comparison *cmp) {
    cmp->t = in->t;
    cmp->sweep = cc->sweep.kind == MT_SWEEP_NONE ? NULL : SWEEP_NAMES[cc->sweep.kind];
    cmp->sweep_gpus = cc->sweep.kind == MT_SWEEP_GPUS;
    cmp->gpus = c->plan.gpus;
    cmp->network = mt_netcfg_model_name(&c->net);
    cmp->perf_model = c->pm.kind;
    cmp->op_times = in->dev.label[0] ? in->dev.label : NULL;
    cmp->cpu_ranks = in->dev.cpu_ranks;
    if (c->seq > 0) cmp->seq = in->seq.asked, cmp->traced_seq = in->seq.traced;
    cmp->cal = &in->cal;
    cmp->mem_limit = mt_run_mem_limit(c, in->t, &cmp->mem_source);
    cmp->perturbed = mt_whatif_perturbs(c);
    cmp->steps = c->steps;
    cmp->best = cmp->best_fit = -1;
    mt_trace_warning(in->t, cmp->trace_warning, sizeof cmp->trace_warning);
    const char *w[2] = {cmp->trace_warning, mt_perfmodel_warning(in->pm)};
    for (int k = 0; k < 2; k++)
        if (w[k] && *w[k]) cmp->warnings[cmp->n_warnings++] = w[k];
}

/* After the runs: the header's plan (sweeps) and topology. */
static void describe_runs(const mt_run_config *c, mt_comparison *cmp) {
    const mt_cmp_row *first = NULL;
    for (int32_t i = 0; i < cmp->n && !first; i++)
        if (cmp->rows[i].ran) first = &cmp->rows[i];
    cmp->plan = cmp->sweep_gpus || !first ? mt_run_plan(c, 0) : first->plan;
    if (cmp->sweep && c->net.topology && strchr(c->net.topology, '{')) cmp->topology = c->net.topology;
    else cmp->topology = first && first->topology[0] ? first->topology : NULL;
}

/* ---- the rows on threads and ranks --------------------------------------------------------- */

/* This rank's rows as items of a pool map. */
typedef struct rows_ctx {
    const mt_run_config *c;
    const mt_run_input *in;
    const mt_compare_config *cc;
    job *jobs;
    mt_comparison *cmp;
    const int32_t *mine; /* item k is row mine[k] */
    int32_t n_mine;
    /* pruning (run/prune.h), when bound is set: */
    const mt_prune_bound *bound; /* per row */
    const double *ub;    /* per row: the highest speed-up its step bound allows */
    int32_t *order;      /* every row (all ranks'), in the order the rule takes them */
    double *got;         /* per item: the speed-up of its finished run within the memory limit, NaN
                          * none (under mu) */
    double *any;         /* per item: the speed-up of its finished run, NaN none (under mu) */
    pthread_mutex_t mu;
} rows_ctx;

/* 1 when row i is over the memory limit by its state alone (its bound): it cannot be among the rows
 * that fit, only the fastest, and is pruned when a row before it ran faster than its bound allows. */
static int over_by_state(const rows_ctx *x, int32_t i) {
    return x->cmp->mem_limit > 0 && x->bound[i].ok && x->bound[i].mem_bytes > x->cmp->mem_limit;
}

/* 1 when item k cannot reach the first exact_rows(cc) rows by the items before it that have finished. */
static int prunable_now(rows_ctx *x, int32_t k) {
    int32_t i = x->mine[k];
    if (!x->bound[i].ok) return 0;
    mt_prune_topk t;
    mt_prune_topk_init(&t, exact_rows(x->cc));
    double best = -INFINITY;
    pthread_mutex_lock(&x->mu);
    for (int32_t q = 0; q < k; q++) {
        if (x->got[q] == x->got[q]) mt_prune_topk_add(&t, x->got[q]);
        if (x->any[q] > best) best = x->any[q];
    }
    pthread_mutex_unlock(&x->mu);
    return over_by_state(x, i) ? best >= x->ub[i] : mt_prune_topk_excludes(&t, x->ub[i]);
}

/* On a worker thread (pool set) the row gets its own copy of the what-if scenario: a run binds
 * the scenario to its program, so runs on one scenario at once would overwrite each other's. */
static mt_status row_item(void *ctx, mt_pool *pool, int32_t k, mt_error *err) {
    rows_ctx *x = ctx;
    int32_t i = x->mine[k];
    mt_cmp_row *w = &x->cmp->rows[i];
    if (x->bound && prunable_now(x, k)) {
        w->pruned = over_by_state(x, i) ? 2 : 1; /* its reason is written after the map (prune_final) */
        return MT_OK;
    }
    mt_status rc;
    if (!pool) rc = run_row(x->c, x->in, &x->jobs[i], w, x->cmp, NULL, err);
    else {
        mt_run_config own = *x->c;
        MT_CHECK(mt_scenario_clone(x->c->scenario, &own.scenario, err));
        rc = run_row(&own, x->in, &x->jobs[i], w, x->cmp, pool, err);
        mt_scenario_free(own.scenario);
    }
    if (x->bound && rc == MT_OK && w->ran) {
        pthread_mutex_lock(&x->mu);
        x->got[k] = w->over_mem ? NAN : w->speedup; /* run/prune.h: rows that fit count */
        x->any[k] = w->speedup;
        pthread_mutex_unlock(&x->mu);
    }
    return rc;
}

static void row_start(void *ctx, int32_t k, int32_t done, int32_t n) {
    rows_ctx *x = ctx;
    x->cc->progress(x->cc->progress_ctx, done, n, x->cmp->rows[x->mine[k]].label);
}

/* The worker threads of a map. */
static int32_t run_jobs(const mt_run_config *c, const mt_compare_config *cc) {
    if (!mt_simrun_igraph_free(&c->net)) return 1; /* igraph's Dijkstra in every route search */
    return cc->jobs > 0 ? cc->jobs : mt_pool_cores();
}

/* Runs this rank's rows on cc->jobs threads; *fail_at gets the first failing row (cmp->n: none). */
static mt_status run_mine(rows_ctx *x, int32_t *fail_at, mt_error *err) {
    const mt_compare_config *cc = x->cc;
    mt_pool_map_cfg m = {.n = x->n_mine, .jobs = run_jobs(x->c, cc), .fn = row_item, .ctx = x,
                         .start = cc->progress ? row_start : NULL, .start_ctx = x};
    int32_t k = x->n_mine;
    mt_status rc = mt_pool_map(&m, &k, err);
    *fail_at = k < x->n_mine ? x->mine[k] : x->cmp->n;
    if (cc->progress) cc->progress(cc->progress_ctx, x->n_mine, x->n_mine, "");
    return rc;
}

/* What a rank sends rank 0: a header, then its rows that ran or were skipped, each as its index,
 * the row (reason NULL) and the reason's length and bytes. Same binary on every rank. */
typedef struct wire_head {
    int32_t fail_at;         /* -1: failed before the rows; a row: its first failing row; n: none */
    int32_t n_rows;
    mt_error err;
} wire_head;

typedef struct wire {
    char *b;
    int64_t n, cap;
    int oom;
} wire;

static void put(wire *w, const void *p, size_t len) {
    if (w->oom || mt_vec_reserve(&w->b, &w->cap, w->n + (int64_t)len)) {
        w->oom = 1;
        return;
    }
    memcpy(w->b + w->n, p, len);
    w->n += (int64_t)len;
}

/* This rank's part: its status and its rows. */
static mt_status pack(const mt_comparison *cmp, const int32_t *mine, int32_t n_mine, int32_t fail_at,
                      const mt_error *e, wire *w, mt_error *err) {
    wire_head h = {.fail_at = fail_at, .n_rows = n_mine};
    if (fail_at < cmp->n && e) h.err = *e;
    put(w, &h, sizeof h);
    for (int32_t k = 0; k < n_mine && fail_at >= 0; k++) {
        mt_cmp_row r = cmp->rows[mine[k]];
        int32_t len = r.reason ? (int32_t)strlen(r.reason) : -1;
        r.reason = NULL;
        put(w, &mine[k], sizeof mine[k]);
        put(w, &r, sizeof r);
        put(w, &len, sizeof len);
        if (len > 0) put(w, cmp->rows[mine[k]].reason, (size_t)len);
    }
    return w->oom ? mt_fail(err, MT_ENOMEM, "out of memory packing the rows") : MT_OK;
}

/* Rank 0: every rank's rows into cmp->rows; the first failure in row order (before the rows
 * first, then by row, then by rank) into *fail_at and *e. */
static mt_status unpack(mt_comparison *cmp, const char *b, size_t len, int32_t *fail_at, mt_error *e,
                        mt_error *err) {
    const char *end = b + len;
    *fail_at = cmp->n;
    while (b < end) {
        wire_head h;
        memcpy(&h, b, sizeof h);
        b += sizeof h;
        if (h.fail_at < *fail_at) *fail_at = h.fail_at, *e = h.err;
        for (int32_t k = 0; k < h.n_rows && h.fail_at >= 0; k++) {
            int32_t i, rl;
            memcpy(&i, b, sizeof i);
            if (i < 0 || i >= cmp->n) return mt_fail(err, MT_EINTERNAL, "a rank sent row %d of %d", (int)i, (int)cmp->n);
            mt_cmp_row *r = &cmp->rows[i];
            free(r->reason);
            memcpy(r, b + sizeof i, sizeof *r);
            memcpy(&rl, b + sizeof i + sizeof *r, sizeof rl);
            b += sizeof i + sizeof *r + sizeof rl;
            if (rl >= 0 && !(r->reason = strndup(b, (size_t)rl)))
                return mt_fail(err, MT_ENOMEM, "out of memory gathering the rows");
            b += rl > 0 ? rl : 0;
        }
    }
    return MT_OK;
}

/* Over ranks: every rank packs its part, rank 0 gathers them all. rc: this rank's status so far
 * (fail_at as in wire_head). Returns rank 0's first failure (MT_OK elsewhere). */
static mt_status gather(const mt_ranks *rk, mt_comparison *cmp, const int32_t *mine, int32_t n_mine,
                        mt_status rc, int32_t fail_at, mt_error *err) {
    wire w = {0};
    mt_status prc = pack(cmp, mine, n_mine, rc == MT_OK ? cmp->n : fail_at, err, &w, err);
    if (prc != MT_OK) fail_at = -1, rc = prc;
    void *all = NULL;
    size_t all_len = 0;
    mt_status grc = mt_ranks_gather(rk, w.b, (size_t)w.n, &all, &all_len, err);
    free(w.b);
    if (grc != MT_OK || !mt_ranks_root(rk)) {
        free(all);
        return grc;
    }
    if (fail_at == -1) { /* this rank failed before its rows (as every rank did): nothing to fill */
        free(all);
        return rc;
    }
    mt_error e = {0};
    int32_t first = cmp->n;
    grc = unpack(cmp, all, all_len, &first, &e, err);
    free(all);
    if (grc != MT_OK) return grc;
    if (first == cmp->n) return MT_OK;
    if (err) *err = e;
    return e.code;
}

/* ---- pruning (run/prune.h) ---------------------------------------------------------------- */

/* The exact rows when the plans run would be pruned (searched, no sweep, unperturbed, more of them
 * than the exact rows), else 0; --dry-run aside. */
static int32_t prune_rows(const mt_compare_config *cc, const mt_comparison *cmp) {
    int32_t top = exact_rows(cc);
    return top > 0 && cc->sweep.kind == MT_SWEEP_NONE && !cmp->perturbed && cmp->n > top ? top : 0;
}

static int prune_on(const mt_run_config *c, const mt_compare_config *cc, const mt_comparison *cmp) {
    return !c->dry_run && prune_rows(cc, cmp) > 0;
}

typedef struct bounds_ctx {
    const mt_run_config *c;
    const mt_run_input *in;
    job *jobs;
    const mt_comparison *cmp;
    mt_prune_bound *b;
    double *ub;
    const int32_t *rows; /* item k is row rows[k] */
} bounds_ctx;

/* Row i's bounds from its program (a plan that cannot build gets none: its run says why). */
static mt_status bound_item(void *ctx, mt_pool *pool, int32_t k, mt_error *err) {
    bounds_ctx *x = ctx;
    int32_t i = x->rows[k];
    mt_simrun_cfg cfg;
    mt_whatif wi;
    mt_simrun run;
    mt_error ign = {0};
    (void)err;
    x->ub[i] = HUGE_VAL;
    if (job_cfg(x->c, &x->jobs[i], x->in->t, &wi, pool, &cfg, &ign) != MT_OK) return MT_OK;
    cfg.bound_only = 1; /* the sums the bound reads, not the tasks (extrapolate/program.h) */
    if (mt_simrun_build_program(x->in->t, x->in->pm, &cfg, &run, &ign) != MT_OK) return MT_OK;
    x->b[i] = mt_prune_bound_of(run.prog, run.host);
    double ms = x->b[i].step_ps / 1e9;
    if (ms > 0) x->ub[i] = mt_speedup(&run.plan, ms, x->cmp->base_batch, x->cmp->base_step_ms); /* as fill_row */
    mt_simrun_free(&run);
    return MT_OK;
}

/* 1 when jobs a and b share a bound (run/prune.h: equal keys, topologies and networks). */
static int same_bound(const job *a, const job *b) {
    mt_plan ka, kb;
    mt_prune_bound_key(&a->plan, &ka);
    mt_prune_bound_key(&b->plan, &kb);
    return !memcmp(&ka, &kb, sizeof ka) && !strcmp(a->topology, b->topology) && !memcmp(&a->net, &b->net, sizeof a->net);
}

/* Row i takes the bound of row r, the first of its class, when its own plan resolves as it would
 * in its run (ub from its resolved plan, as bound_item); 0: build it. */
static int copy_bound(bounds_ctx *x, int32_t i, int32_t r) {
    mt_simrun_cfg cfg;
    mt_whatif wi;
    mt_error ign = {0};
    if (!x->b[r].ok || job_cfg(x->c, &x->jobs[i], x->in->t, &wi, NULL, &cfg, &ign) != MT_OK ||
        mt_plan_resolve(&cfg.plan, x->in->t, &ign) != MT_OK)
        return 0;
    x->b[i] = x->b[r];
    x->ub[i] = x->ub[r] == HUGE_VAL ? HUGE_VAL
                                    : mt_speedup(&cfg.plan, x->b[i].step_ps / 1e9, x->cmp->base_batch, x->cmp->base_step_ms);
    return 1;
}

/* Every row's bounds: one program per class of rows sharing a bound (the first row of each), the
 * others copied, or built themselves when that one could not be. */
static mt_status bound_rows(bounds_ctx *x, int32_t jobs, mt_error *err) {
    int32_t n = x->cmp->n, *rep = calloc((size_t)n + 1, sizeof *rep), *rows = calloc((size_t)n + 1, sizeof *rows), nr = 0;
    if (!rep || !rows) {
        free(rep);
        free(rows);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    for (int32_t i = 0; i < n; i++) {
        rep[i] = i;
        for (int32_t k = 0; k < nr && rep[i] == i; k++)
            if (same_bound(&x->jobs[rows[k]], &x->jobs[i])) rep[i] = rows[k];
        if (rep[i] == i) rows[nr++] = i;
    }
    x->rows = rows;
    mt_pool_map_cfg m = {.n = nr, .jobs = jobs, .fn = bound_item, .ctx = x};
    mt_status rc = mt_pool_map(&m, NULL, err);
    nr = 0;
    for (int32_t i = 0; rc == MT_OK && i < n; i++)
        if (rep[i] != i && !copy_bound(x, i, rep[i])) rows[nr++] = i;
    m.n = nr;
    if (rc == MT_OK && nr) rc = mt_pool_map(&m, NULL, err);
    free(rep);
    free(rows);
    return rc;
}

typedef struct by_ub {
    double ub;
    int32_t i;
} by_ub;

static int cmp_ub(const void *a, const void *b) {
    const by_ub *x = a, *y = b;
    if (x->ub != y->ub) return x->ub > y->ub ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Every row's bounds (each rank prices them all); x->order gets every row and x->mine this rank's,
 * in the order the rows run (highest speed-up bound first: a rank's rows before row i are rows
 * before it in x->order). */
static mt_status prune_prepare(rows_ctx *x, int32_t jobs, mt_prune_bound *b, double *ub, mt_error *err) {
    mt_comparison *cmp = x->cmp;
    bounds_ctx bx = {x->c, x->in, x->jobs, cmp, b, ub, NULL};
    MT_CHECK(bound_rows(&bx, jobs, err));
    by_ub *o = calloc((size_t)cmp->n + 1, sizeof *o);
    if (!o) return mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t i = 0; i < cmp->n; i++) o[i] = (by_ub){ub[i], i};
    qsort(o, (size_t)cmp->n, sizeof *o, cmp_ub);
    int32_t *mine = (int32_t *)x->mine, n_mine = 0;
    const mt_ranks *rk = x->cc->ranks;
    for (int32_t k = 0; k < cmp->n; k++) {
        int32_t i = o[k].i;
        x->order[k] = i;
        if (!rk || rk->size <= 1 || mt_ranks_mine(rk, i)) mine[n_mine++] = i;
    }
    for (int32_t k = 0; k < n_mine; k++) x->got[k] = x->any[k] = NAN;
    free(o);
    x->bound = b;
    x->ub = ub;
    return MT_OK;
}

/* After the rows (at rank 0, once gathered): the rule of run/prune.h over every row in run order
 * (rows that ran before a prune could see them may be pruned here), and every pruned row's reason. */
static void prune_final(rows_ctx *x) {
    mt_comparison *cmp = x->cmp;
    int32_t top = exact_rows(x->cc), n_pruned = 0;
    mt_prune_topk t;
    mt_prune_topk_init(&t, top);
    double best = -INFINITY; /* the fastest row kept so far, within the limit or not */
    for (int32_t k = 0; k < cmp->n; k++) {
        int32_t i = x->order[k];
        mt_cmp_row *w = &cmp->rows[i];
        const mt_prune_bound *b = &x->bound[i];
        char why[400];
        if (w->ran && over_by_state(x, i) && best >= x->ub[i]) w->ran = 0, w->pruned = 2;
        else if (w->ran && b->ok && !over_by_state(x, i) && mt_prune_topk_excludes(&t, x->ub[i]))
            w->ran = 0, w->pruned = 1;
        if (w->ran && !w->over_mem) mt_prune_topk_add(&t, w->speedup);
        if (w->ran && w->speedup > best) best = w->speedup;
        if (w->ran || !w->pruned) continue;
        if (w->pruned == 2)
            snprintf(why, sizeof why, "memory: parameters, gradients and optimizer state alone take %s per GPU, "
                     "over the %s limit (--gpu-mem), and a step takes at least %.3f ms (a speed-up of at most "
                     "%.2fx), under a plan that ran", mt_fmt_bytes(b->mem_bytes, (char[32]){0}, 32),
                     mt_fmt_bytes(cmp->mem_limit, (char[32]){0}, 32), b->step_ps / 1e9, x->ub[i]);
        else
            snprintf(why, sizeof why, "bound: a step takes at least %.3f ms (stage %d's %s), a speed-up of at "
                     "most %.2fx; the first %d rows that fit in memory are above %.2fx", b->step_ps / 1e9,
                     (int)b->stage, b->what, x->ub[i], (int)top, t.v[top - 1]);
        free(w->reason);
        w->reason = strdup(why);
        n_pruned++;
    }
    if (n_pruned) cmp->top = top;
}

/* The rows: this rank's on threads, then (more than one rank) gathered at rank 0. rc: the status
 * of what came before (the baseline, the list); every rank gets here whatever it is. */
static mt_status run_rows(const mt_run_config *c, const mt_run_input *in, const mt_compare_config *cc, job *jobs,
                          mt_comparison *cmp, mt_status rc, mt_error *err) {
    static const mt_ranks one = {.rank = 0, .size = 1};
    const mt_ranks *rk = cc->ranks ? cc->ranks : &one;
    int32_t *mine = calloc((size_t)cmp->n + 1, sizeof *mine), n_mine = 0, fail_at = -1;
    if (!mine && rc == MT_OK) rc = mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t i = 0; rc == MT_OK && i < cmp->n; i++)
        if (mt_ranks_mine(rk, i)) mine[n_mine++] = i;
    rows_ctx x = {.c = c, .in = in, .cc = cc, .jobs = jobs, .cmp = cmp, .mine = mine, .n_mine = n_mine};
    pthread_mutex_init(&x.mu, NULL);
    mt_prune_bound *b = NULL;
    double *ub = NULL;
    if (rc == MT_OK && prune_on(c, cc, cmp)) {
        b = calloc((size_t)cmp->n + 1, sizeof *b);
        ub = calloc((size_t)cmp->n + 1, sizeof *ub);
        x.got = calloc((size_t)cmp->n + 1, sizeof *x.got);
        x.any = calloc((size_t)cmp->n + 1, sizeof *x.any);
        x.order = calloc((size_t)cmp->n + 1, sizeof *x.order);
        rc = b && ub && x.got && x.any && x.order ? prune_prepare(&x, run_jobs(c, cc), b, ub, err)
                                         : mt_fail(err, MT_ENOMEM, "out of memory");
    }
    if (rc == MT_OK) rc = run_mine(&x, &fail_at, err);
    if (rk->size > 1) rc = gather(rk, cmp, mine, n_mine, rc, fail_at, err);
    if (rc == MT_OK && x.bound && mt_ranks_root(rk)) prune_final(&x);
    pthread_mutex_destroy(&x.mu);
    free(b);
    free(ub);
    free(x.got);
    free(x.any);
    free(x.order);
    free(mine);
    return rc;
}

/* Every row priced from its program (no topology); refused plans counted, not fatal. Reported to
 * cc->estimate when set; refused when over the calling thread's budget (mt_estimate_check_budget). */
static mt_status price_rows(const mt_run_config *c, const mt_run_input *in, const mt_compare_config *cc, job *jobs,
                            const mt_comparison *cmp, mt_error *err) {
    mt_compare_estimate e;
    memset(&e, 0, sizeof e);
    e.longest = "";
    for (int32_t i = 0; i < cmp->n; i++) {
        mt_simrun_cfg cfg;
        mt_whatif wi;
        mt_estimate one;
        mt_error ign = {0};
        if (job_cfg(c, &jobs[i], in->t, &wi, NULL, &cfg, &ign) != MT_OK ||
            mt_estimate_cfg(in->t, in->pm, &cfg, &one, &ign) != MT_OK) {
            e.refused++;
            continue;
        }
        double k = cmp->perturbed ? 2 : 1; /* and its unperturbed baseline */
        e.priced++;
        e.total.events += k * one.events;
        e.total.seconds += k * one.seconds;
        if (one.mem_bytes > e.total.mem_bytes) e.total.mem_bytes = one.mem_bytes;
        if (k * one.seconds > e.longest_s) e.longest_s = k * one.seconds, e.longest = cmp->rows[i].label;
    }
    e.exact_rows = prune_rows(cc, cmp);
    if (cc->estimate) cc->estimate(cc->estimate_ctx, &e);
    return mt_estimate_check_budget(&e.total, "the comparison", err);
}

/* A pruned search: which plans run is known only as they run, so the budget is held to the largest
 * plan's memory before (mt_estimate_mem_bytes, no build) and to its wall time while it runs. */
static mt_status check_plans_mem(const job *jobs, const mt_comparison *cmp, mt_error *err) {
    mt_estimate e;
    memset(&e, 0, sizeof e);
    for (int32_t i = 0; i < cmp->n; i++) e.mem_bytes = fmax(e.mem_bytes, mt_estimate_mem_bytes(&jobs[i].plan));
    return mt_estimate_check_budget(&e, "the comparison", err);
}

const char *mt_compare_estimate_text(const mt_compare_estimate *e, const char *noun, char *buf, size_t len) {
    char ev[32], dur[32], mem[32], lon[32];
    int at = snprintf(buf, len, "%d %s: about %s events, ~%s on this machine, ~%s of memory at most", e->priced,
                      noun, mt_estimate_count_text(e->total.events, ev, sizeof ev),
                      mt_estimate_duration_text(e->total.seconds, dur, sizeof dur),
                      mt_fmt_bytes(e->total.mem_bytes, mem, sizeof mem));
    if (at > 0 && (size_t)at < len && e->longest[0])
        at += snprintf(buf + at, len - (size_t)at, " (longest %s ~%s)", e->longest,
                       mt_estimate_duration_text(e->longest_s, lon, sizeof lon));
    if (at > 0 && (size_t)at < len && e->refused)
        at += snprintf(buf + at, len - (size_t)at, "; %d refused", e->refused);
    if (at > 0 && (size_t)at < len && e->exact_rows)
        snprintf(buf + at, len - (size_t)at, "; that is every plan simulated: the search prunes plans that cannot "
                 "reach its first %d rows (--exhaustive runs them all)", (int)e->exact_rows);
    return buf;
}

mt_status mt_run_compare(const mt_run_config *c, const mt_run_input *in, const mt_compare_config *cc,
                         mt_comparison *cmp, mt_error *err) {
    double t0 = mt_progress_clock_s();
    memset(cmp, 0, sizeof *cmp);
    describe(c, in, cc, cmp);
    job *jobs = NULL;
    mt_status rc = run_baseline(c, in, cmp, err);
    mt_hostmodel *host = NULL;
    if (rc == MT_OK) rc = make_rows(c, cc, in->t, &jobs, cmp, err);
    if (rc == MT_OK) share_host(c, in, jobs, cmp->n, &host);
    if (rc == MT_OK && prune_on(c, cc, cmp)) { /* priced up front only with --dry-run (run/compare.h) */
        if (mt_budget_current()) rc = check_plans_mem(jobs, cmp, err);
    } else if (rc == MT_OK && (cc->estimate || mt_budget_current()))
        rc = price_rows(c, in, cc, jobs, cmp, err);
    if (rc == MT_OK && c->dry_run) {
        mt_hostmodel_free(host);
        free(jobs);
        mt_comparison_free(cmp);
        memset(cmp, 0, sizeof *cmp);
        return MT_OK;
    }
    rc = run_rows(c, in, cc, jobs, cmp, rc, err);
    mt_hostmodel_free(host);
    free(jobs);
    int root = !cc->ranks || mt_ranks_root(cc->ranks);
    if (rc == MT_OK && root) {
        mt_comparison_rank(cmp);
        describe_runs(c, cmp);
        if (cmp->best < 0)
            rc = mt_fail(err, MT_EINVAL, "no plan could run; %s: %s", cmp->rows[0].label, cmp->rows[0].reason);
    }
    if (cc->ranks) rc = mt_ranks_agree(cc->ranks, root ? rc : MT_OK, err); /* rank 0's verdict, everywhere */
    cmp->wall_s = mt_progress_clock_s() - t0;
    if (rc != MT_OK || !root) mt_comparison_free(cmp);
    return rc;
}

mt_status mt_compare_html(const mt_comparison *cmp, const mt_run_config *c, const mt_run_input *in,
                          const mt_compare_config *cc, const char *path, mt_error *err) {
    const mt_cmp_row *best = &cmp->rows[cmp->best];
    job j;
    memset(&j, 0, sizeof j);
    j.plan = best->plan;
    j.net = c->net;
    if (cc->sweep.kind == MT_SWEEP_LINK_BW) j.net.tp.link_bw_Bps = best->x;
    if (cc->sweep.kind == MT_SWEEP_NIC_BW) j.net.tp.nic_bw_Bps = best->x;
    mt_recorder rec;
    mt_recorder_init(&rec);
    mt_simrun_cfg cfg;
    mt_simrun run;
    memset(&run, 0, sizeof run);
    mt_whatif wi;
    mt_status rc = job_cfg(c, &j, in->t, &wi, NULL, &cfg, err);
    if (rc == MT_OK) {
        cfg.sim.on_span = mt_recorder_span;
        cfg.sim.span_ctx = &rec;
        rc = mt_summary_html_gpus(&rec.filter, best->plan.gpus, err);
    }
    if (rc == MT_OK) rc = mt_simrun_run(in->t, in->pm, &cfg, &run, err);
    if (rc == MT_OK) {
        mt_run_summary s = {
            .t = in->t, .prog = run.prog, .res = run.res, .host = run.host,
            .topology = run.topology[0] ? run.topology : NULL, .network = mt_netcfg_model_name(&c->net), .perf_model = c->pm.kind,
            .target_gpu = c->pm.target_gpu, .op_times = in->dev.label, .cpu_ranks = in->dev.cpu_ranks,
            .host_scale = c->host_scale, .op_scale = c->op_scale, .mem_limit = cmp->mem_limit, .cal = &in->cal,
            .seq = cmp->seq, .traced_seq = cmp->traced_seq,
        };
        rc = mt_comparison_html_write(path, cmp, &s, &rec, err);
    }
    mt_simrun_free(&run);
    mt_recorder_destroy(&rec);
    return rc;
}

/* cli/cmd_compare.c — `mitosis compare`: the same traced step under many plans (every
 * factorisation of N GPUs, or a --plans list), ranked by throughput; or one plan under a sweep
 * of one setting (link or NIC bandwidth, GPU count, global batch). One loaded trace and one
 * performance model serve every run (cli/simrun.h does each run, as `simulate` does).
 *
 * Speed-up is throughput over one GPU running the traced batch on the same trace and model
 * (the baseline, simulated once): (samples per step / step time) / (the baseline's). With the
 * batch unknown, a replica's traced batch is the unit of work.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/args.h"
#include "cli/calibrate.h"
#include "cli/commands.h"
#include "cli/htmlout.h"
#include "cli/planlist.h"
#include "cli/planopts.h"
#include "cli/simrun.h"
#include "cli/whatif.h"
#include "util/units.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: mitosis compare TRACE [TRACE2] --gpus N [--plans auto|LIST] [options]\n"
            "       mitosis compare TRACE [TRACE2] [plan flags] --sweep NAME=VALUES [options]\n\n"
            "Simulates the traced step under every plan for N GPUs (or the --plans LIST) and prints\n"
            "them ranked, fastest first: step time, speed-up over one GPU (throughput over the\n"
            "traced batch on one GPU), samples/s, exposed communication, host wait and bubble\n"
            "(max over GPUs), estimated peak memory per GPU, '!' over --gpu-mem. Plans the trace or the\n"
            "topology cannot run are listed as skipped, with the reason.\n\n"
            "  --gpus N              GPUs to compare plans for\n"
            "  --plans auto|LIST     auto (default): every D x T x P = N; ddp and dp when D > 1;\n"
            "                        1f1b and gpipe with P, 2P, 4P micro-batches (those dividing\n"
            "                        the replica batch) when P > 1. --dp/--tp/--pp/--micro-batches,\n"
            "                        --strategy dp|ddp and --schedule given fix that part.\n"
            "                        LIST: plans separated by ',', fields by ':':\n"
            "                          dp=D (all-reduce after backward) | ddp=D (DDP buckets),\n"
            "                          tp=T, pp=P, mb=M, schedule=gpipe|1f1b, placement=ORDER,\n"
            "                          bucket=SIZE, algo=A, single (1 GPU), default (flags only)\n"
            "                        e.g. ddp=8,dp=8,tp=2:ddp=4,pp=4:mb=8:schedule=gpipe\n"
            "                        An unset size takes the GPUs left over (dp first).\n"
            "  --batch GLOBAL        global batch of every compared plan (default: the traced\n"
            "                        batch x N, so that ddp=N runs the traced batch per GPU)\n"
            "  --sweep NAME=VALUES   one row per value for the plan the plan flags give (as in\n"
            "                        mitosis simulate; each row equals simulate with that value).\n"
            "                        NAME: link-bw, nic-bw (bandwidths), gpus, batch (global).\n"
            "                        VALUES: FROM:TO (doubling), FROM:TO:xF (times F),\n"
            "                        FROM:TO:S (S evenly spaced values), or a list A,B,C;\n"
            "                        e.g. link-bw=100GB/s:900GB/s:5, gpus=8:64, nic-bw=25GB/s,50GB/s\n"
            "                        In --topology, {gpus} and {nodes} (= gpus / --gpus-per-node)\n"
            "                        are replaced for each run: multinode:nodes={nodes},gpus=8\n"
            "  what-if flags         --slow-gpu, --slow-link, --fail-link, --scenario, --seed, --steps\n"
            "                        as for mitosis simulate: every plan runs perturbed (and ranks by\n"
            "                        that) and unperturbed; the 'change' column is the difference.\n"
            "                        With --steps K, step ms is the mean over the K steps\n"
            "  --json                the table as JSON on stdout\n"
            "  --html FILE           a self-contained HTML report: the table and chart, and the\n"
            "                        fastest run's per-GPU and per-layer bars and timeline\n"
            "Plan, operator-time and trace options as for mitosis simulate:\n");
    mt_planopts_help(out);
    fprintf(out, "\n");
    mt_netopts_help(out);
}

typedef enum { SW_NONE = 0, SW_LINK_BW, SW_NIC_BW, SW_GPUS, SW_BATCH } sweep_kind;
static const char *const SWEEP_NAMES[] = {"", "link-bw", "nic-bw", "gpus", "batch"};

enum { MAX_ROWS = 4096 };

typedef struct cmp_cli {
    mt_planopts po;
    const char *plans;       /* --plans, NULL = auto */
    const char *sweep;       /* --sweep text, NULL */
    sweep_kind sw;
    double *values;          /* swept values */
    int32_t n_values;
    int as_json;
    const char *html;
    mt_calibration cal;
    mt_whatif *wi;           /* the what-if flags (cli/whatif.h); bound to each row's run */
} cmp_cli;

typedef struct cmp_row {
    mt_plan plan;            /* as asked */
    mt_netopts net;          /* with the swept bandwidth */
    char topology[128];      /* --topology after {gpus}/{nodes}; "" = not given */
    char label[128];         /* the plan, or the swept value */
    double x;                /* the swept value */
    int ran;
    mt_plan resolved;
    char ran_topology[64];
    double step_ms, speedup, sps, exposed_ms, host_wait_ms, bubble_ms, mem_bytes; /* max over GPUs */
    double base_step_ms;     /* the same plan unperturbed, when the what-if flags perturb */
    int over_mem;
    char *reason;            /* skipped: why (malloc'd) */
} cmp_row;

/* ---- --sweep ------------------------------------------------------------------------------ */

static mt_status sweep_value(sweep_kind k, const char *text, double *out, mt_error *err) {
    if (k == SW_LINK_BW || k == SW_NIC_BW) return mt_parse_bandwidth(text, out, err);
    int32_t v;
    if (!mt_cli_int(k == SW_GPUS ? "--sweep gpus=" : "--sweep batch=", text, 1, k == SW_GPUS ? 1 << 20 : 1 << 30,
                    &v, err))
        return MT_EINVAL;
    *out = v;
    return MT_OK;
}

static mt_status add_value(cmp_cli *c, double v, mt_error *err) {
    if (c->sw == SW_GPUS || c->sw == SW_BATCH) v = (double)(int64_t)(v + 0.5);
    if (c->n_values > 0 && c->values[c->n_values - 1] == v) return MT_OK;
    if (c->n_values >= 1000) return mt_fail(err, MT_EINVAL, "--sweep gives more than 1000 values (use fewer steps)");
    c->values[c->n_values++] = v;
    return MT_OK;
}

/* NAME=FROM:TO[:S|:xF] or NAME=A,B,C into c->sw and c->values. */
static mt_status parse_sweep(cmp_cli *c, const char *text, mt_error *err) {
    const char *eq = strchr(text, '=');
    size_t nl = eq ? (size_t)(eq - text) : 0;
    for (int k = SW_LINK_BW; k <= SW_BATCH && eq; k++)
        if (strlen(SWEEP_NAMES[k]) == nl && !strncmp(text, SWEEP_NAMES[k], nl)) c->sw = (sweep_kind)k;
    if (c->sw == SW_NONE)
        return mt_fail(err, MT_EINVAL, "--sweep '%s': use link-bw=, nic-bw=, gpus= or batch= followed by values "
                                       "such as 100GB/s:900GB/s", text);
    if (!(c->values = malloc(1000 * sizeof *c->values))) return mt_fail(err, MT_ENOMEM, "out of memory");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", eq + 1);
    char *save = NULL;
    if (strchr(buf, ',') || !strchr(buf, ':')) {
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            double v;
            MT_CHECK(sweep_value(c->sw, tok, &v, err));
            MT_CHECK(add_value(c, v, err));
        }
        if (c->n_values == 0) return mt_fail(err, MT_EINVAL, "--sweep '%s' has no values", text);
        return MT_OK;
    }
    char *from = strtok_r(buf, ":", &save), *to = strtok_r(NULL, ":", &save), *st = strtok_r(NULL, ":", &save);
    double a, b;
    MT_CHECK(sweep_value(c->sw, from, &a, err));
    MT_CHECK(sweep_value(c->sw, to ? to : "", &b, err));
    if (strtok_r(NULL, ":", &save) || b < a)
        return mt_fail(err, MT_EINVAL, "--sweep '%s': write FROM:TO[:STEPS|:xFACTOR] with FROM <= TO", text);
    if (!st || st[0] == 'x') {
        char *end = NULL;
        double f = st ? strtod(st + 1, &end) : 2;
        if (st && (*end || end == st + 1 || !(f > 1.000001)))
            return mt_fail(err, MT_EINVAL, "--sweep '%s': the factor after x must be a number > 1", text);
        double v = a;
        for (; v <= b * (1 + 1e-9); v *= f) MT_CHECK(add_value(c, v, err));
        if (c->values[c->n_values - 1] < b * (1 - 1e-9)) MT_CHECK(add_value(c, b, err));
    } else {
        int32_t n;
        if (!mt_cli_int("--sweep steps", st, 2, 1000, &n, err)) return MT_EINVAL;
        for (int32_t i = 0; i < n; i++) MT_CHECK(add_value(c, a + (b - a) * i / (n - 1), err));
    }
    return MT_OK;
}

/* ---- arguments ---------------------------------------------------------------------------- */

/* Compare's own flags: --json, and --plans, --sweep, --html with a value. */
static int take_own(cmp_cli *c, const char *f, const char *v, mt_error *err) {
    if (!strcmp(f, "--json")) return c->as_json = 1;
    int k = !strcmp(f, "--plans") ? 1 : !strcmp(f, "--sweep") ? 2 : !strcmp(f, "--html") ? 3 : 0;
    if (!k) return mt_fail(err, MT_EINVAL, "unknown option '%s' (see mitosis compare --help)", f), -1;
    if (!v) return mt_fail(err, MT_EINVAL, "%s needs a value (see mitosis compare --help)", f), -1;
    if (k == 1) c->plans = strcmp(v, "auto") ? v : NULL;
    if (k == 3) c->html = v;
    if (k == 2 && c->sweep) return mt_fail(err, MT_EINVAL, "--sweep can be given once"), -1;
    if (k == 2 && parse_sweep(c, (c->sweep = v), err) != MT_OK) return -1;
    return 2;
}

static int parse_args(cmp_cli *c, int argc, char **argv, mt_error *err) {
    for (int i = 1; i < argc;) {
        int t = mt_planopts_take(&c->po, argc, argv, &i, err);
        if (t == 2) return usage(stdout), 1;
        if (t == 0) t = mt_whatif_take(c->wi, argc, argv, &i, err);
        if (t == 0) {
            t = take_own(c, argv[i], i + 1 < argc ? argv[i + 1] : NULL, err);
            if (t > 0) i += t;
        }
        if (t < 0) return -1;
    }
    if (c->po.n_paths == 0)
        return mt_fail(err, MT_EINVAL, "no trace given (usage: mitosis compare TRACE --gpus N)"), -1;
    if (c->sweep && c->plans)
        return mt_fail(err, MT_EINVAL, "--plans and --sweep do not go together: a sweep runs the one plan "
                                       "the plan flags give"), -1;
    if (!c->sweep && c->po.plan.gpus == 0)
        return mt_fail(err, MT_EINVAL, "--gpus is required (the GPU count to compare plans for)"), -1;
    if (c->sw == SW_GPUS && c->po.plan.gpus)
        return mt_fail(err, MT_EINVAL, "--gpus and --sweep gpus= do not go together (drop --gpus)"), -1;
    if (c->sweep && c->sw != SW_GPUS && c->po.plan.gpus == 0 && !c->po.plan.dp && !c->po.plan.tp && !c->po.plan.pp)
        return mt_fail(err, MT_EINVAL, "--sweep %s needs the plan: give --gpus (and --dp/--tp/--pp)",
                       SWEEP_NAMES[c->sw]), -1;
    return 0;
}

/* ---- rows --------------------------------------------------------------------------------- */

/* spec with {gpus} and {nodes} replaced; "" for NULL. */
static mt_status topology_for(const char *spec, int32_t gpus, int32_t per_node, char *buf, size_t len,
                              mt_error *err) {
    buf[0] = '\0';
    if (!spec) return MT_OK;
    size_t at = 0;
    for (const char *p = spec; *p && at + 1 < len;) {
        int32_t v = -1;
        if (!strncmp(p, "{gpus}", 6)) v = gpus, p += 6;
        else if (!strncmp(p, "{nodes}", 7)) {
            if (gpus % per_node)
                return mt_fail(err, MT_EINVAL, "%d GPUs do not fill whole nodes of %d (--gpus-per-node) for "
                                               "{nodes} in --topology", gpus, per_node);
            v = gpus / per_node, p += 7;
        }
        if (v >= 0) at += (size_t)snprintf(buf + at, len - at, "%d", v);
        else buf[at++] = *p++;
        buf[at < len ? at : len - 1] = '\0';
    }
    return MT_OK;
}

static void skip(cmp_row *w, const mt_error *e) {
    free(w->reason);
    w->reason = strdup(e->msg[0] ? e->msg : "refused");
    w->ran = 0;
}

static void progress(int32_t i, int32_t n, const char *label) {
    if (!isatty(STDERR_FILENO)) return;
    if (i < n) fprintf(stderr, "\rmitosis compare: %d/%d %-40.40s\033[K", i + 1, n, label);
    else fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

typedef struct baseline {
    double step_ms, units; /* work per step: samples, or traced batches when unknown */
    int64_t batch;
    int host;              /* the host model ran (every row runs it alike) */
} baseline;

static double units_of(const mt_plan *p) { return p->global_batch > 0 ? (double)p->global_batch : p->dp; }

/* The run's config for row w; rec (may be NULL) records the HTML timeline's GPUs. */
static mt_status row_cfg(const cmp_cli *c, cmp_row *w, const trace *t, mt_recorder *rec, mt_simrun_cfg *cfg,
                         mt_error *err) {
    mt_simrun_cfg_init(cfg);
    cfg->plan = w->plan;
    cfg->net = w->net;
    cfg->net.topology = w->topology[0] ? w->topology : NULL;
    cfg->sim.ranks_per_node = c->po.gpus_per_node;
    cfg->host_model = c->po.host_model;
    cfg->host_scale = c->po.host_scale;
    cfg->op_scale = c->po.op_scale;
    mt_whatif_configure(c->wi, t, &c->po.pm, cfg);
    if (!rec) return MT_OK;
    cfg->sim.on_span = mt_recorder_span;
    cfg->sim.span_ctx = rec;
    return mt_cli_html_gpus(&rec->filter, t, &cfg->plan, err);
}

/* Runs row w; an infeasible plan (refused by the plan, the program or the topology) is
 * skipped with its reason. Other failures are returned. */
static mt_status run_row(const cmp_cli *c, cmp_row *w, const trace *t, mt_perfmodel *pm, const baseline *b,
                         double mem_limit, mt_error *err) {
    mt_error e = {0};
    mt_simrun_cfg cfg;
    mt_simrun run;
    const mt_plan *p = &w->plan;
    int32_t gpus = p->gpus ? p->gpus : (p->dp ? p->dp : 1) * (p->tp ? p->tp : 1) * (p->pp ? p->pp : 1);
    mt_status rc = topology_for(c->po.net.topology, gpus, c->po.gpus_per_node, w->topology, sizeof w->topology, &e);
    if (rc == MT_OK) rc = row_cfg(c, w, t, NULL, &cfg, &e);
    if (rc == MT_OK && mt_scenario_perturbs(c->wi->sc)) { /* the same plan unperturbed, as simulate does */
        mt_simrun_cfg u = mt_whatif_unperturbed(&cfg);
        rc = mt_simrun_run(t, pm, &u, &run, &e);
        if (rc == MT_OK) {
            w->base_step_ms = (double)run.res->step_ps / 1e9 / run.res->n_steps;
            mt_simrun_free(&run);
        }
    }
    if (rc == MT_OK) rc = mt_simrun_run(t, pm, &cfg, &run, &e);
    if (rc == MT_EINVAL || rc == MT_ENOROUTE) {
        skip(w, &e);
        return MT_OK;
    }
    if (rc != MT_OK) {
        *err = e;
        return mt_error_prefix(err, "plan %s", w->label);
    }
    const mt_sim_result *r = run.res;
    w->ran = 1;
    w->resolved = run.plan;
    snprintf(w->ran_topology, sizeof w->ran_topology, "%s", run.topology);
    w->step_ms = (double)r->step_ps / 1e9 / r->n_steps;
    w->sps = run.plan.global_batch > 0 && r->step_ps > 0 ? (double)run.plan.global_batch / (w->step_ms / 1e3) : -1;
    w->speedup = w->step_ms > 0 ? (units_of(&run.plan) / w->step_ms) / (b->units / b->step_ms) : 0;
    w->exposed_ms = w->host_wait_ms = w->bubble_ms = w->mem_bytes = 0;
    for (int32_t i = 0; i < r->n_gpus; i++) {
        const mt_gpu_stats *g = &r->gpus[i];
        double k = 1e9 * r->n_steps; /* per step */
        if ((double)g->exposed_ps / k > w->exposed_ms) w->exposed_ms = (double)g->exposed_ps / k;
        if ((double)g->host_wait_ps / k > w->host_wait_ms) w->host_wait_ms = (double)g->host_wait_ps / k;
        if ((double)g->bubble_ps / k > w->bubble_ms) w->bubble_ms = (double)g->bubble_ps / k;
        if (g->peak_mem_bytes > w->mem_bytes) w->mem_bytes = g->peak_mem_bytes;
    }
    w->over_mem = mem_limit > 0 && w->mem_bytes > mem_limit;
    mt_simrun_free(&run);
    return MT_OK;
}

/* The plans (or sweep values) as rows, not yet run. */
static mt_status make_rows(const cmp_cli *c, const trace *t, cmp_row **out, int32_t *n, mt_error *err) {
    mt_plan *plans = NULL;
    int32_t np = 0;
    if (c->sw == SW_NONE) {
        mt_plan base = mt_planopts_plan(&c->po, c->po.plan.gpus);
        if (base.global_batch == 0 && t->batch_size > 0) base.global_batch = t->batch_size * base.gpus;
        int fixed_mode = c->po.strategy && (!strcmp(c->po.strategy, "dp") || !strcmp(c->po.strategy, "ddp"));
        MT_CHECK(c->plans ? mt_planlist_parse(c->plans, &base, &plans, &np, err)
                          : mt_planlist_auto(&base, fixed_mode, c->po.schedule_set, &plans, &np, err));
    } else {
        np = c->n_values;
    }
    if (np > MAX_ROWS) {
        free(plans);
        return mt_fail(err, MT_EINVAL, "%d plans to run is too many (at most %d)", np, MAX_ROWS);
    }
    cmp_row *rows = calloc((size_t)np, sizeof *rows);
    if (!rows) {
        free(plans);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    for (int32_t i = 0; i < np; i++) {
        cmp_row *w = &rows[i];
        w->net = c->po.net;
        if (plans) {
            w->plan = plans[i];
            mt_planlist_label(&w->plan, w->label, sizeof w->label);
            continue;
        }
        double v = w->x = c->values[i];
        w->plan = mt_planopts_plan(&c->po, c->sw == SW_GPUS ? (int32_t)v : 0);
        if (c->sw == SW_BATCH) w->plan.global_batch = (int64_t)v;
        if (c->sw == SW_LINK_BW) w->net.tp.link_bw_Bps = v;
        if (c->sw == SW_NIC_BW) w->net.tp.nic_bw_Bps = v;
        if (c->sw == SW_LINK_BW || c->sw == SW_NIC_BW) mt_fmt_bandwidth(v, w->label, sizeof w->label);
        else snprintf(w->label, sizeof w->label, "%.0f", v);
    }
    free(plans);
    *out = rows;
    *n = np;
    return MT_OK;
}

static int by_rank(const void *a, const void *b) {
    const cmp_row *x = a, *y = b;
    if (x->ran != y->ran) return x->ran ? -1 : 1;
    if (!x->ran) return 0;
    if (x->speedup != y->speedup) return x->speedup > y->speedup ? -1 : 1;
    return (x->step_ms > y->step_ms) - (x->step_ms < y->step_ms);
}

/* ---- output ------------------------------------------------------------------------------- */

typedef struct cmp_out {
    const cmp_cli *c;
    const trace *t;
    const cmp_row *rows;
    int32_t n;
    const baseline *b;
    double mem_limit;
    int32_t best, best_fit; /* row indices, -1 none */
} cmp_out;

static void print_text(const cmp_out *o) {
    const cmp_cli *c = o->c;
    const trace *t = o->t;
    printf("trace      %s (%s, batch %lld)\n", t->kineto_path ? t->kineto_path : "?",
           t->device_name ? t->device_name : "device unknown", (long long)t->batch_size);
    const cmp_row *first = NULL;
    for (int32_t i = 0; i < o->n && !first; i++)
        if (o->rows[i].ran) first = &o->rows[i];
    if (c->sw == SW_NONE) {
        printf("compare    %d plans on %d GPUs, global batch %lld, %s on %s, %s op-time model, host model %s\n", o->n,
               c->po.plan.gpus, first ? (long long)first->resolved.global_batch : 0LL, c->po.net.network,
               first && first->ran_topology[0] ? first->ran_topology : "its own endpoints",
               mt_pm_kind_name(c->po.pm.kind), o->b->host ? "trace" : "none");
    } else {
        char label[128];
        mt_plan p = c->sw == SW_GPUS || !first ? mt_planopts_plan(&c->po, 0) : first->resolved;
        mt_planlist_label(&p, label, sizeof label);
        printf("sweep      %s over %d values, plan %s%s, %s on %s, %s op-time model, host model %s\n",
               SWEEP_NAMES[c->sw], o->n,
               label, c->sw == SW_GPUS ? " (sizes left out take the GPUs)" : "", c->po.net.network,
               c->po.net.topology && strchr(c->po.net.topology, '{') ? c->po.net.topology
               : first && first->ran_topology[0] ? first->ran_topology : "its own endpoints",
               mt_pm_kind_name(c->po.pm.kind), o->b->host ? "trace" : "none");
    }
    printf("baseline   1 GPU, traced batch: %.3f ms", o->b->step_ms);
    if (o->b->batch > 0) printf(" (%.1f samples/s)", (double)o->b->batch / (o->b->step_ms / 1e3));
    printf("\n");
    mt_calibration_print(&c->cal, stdout);
    if (o->mem_limit > 0)
        printf("memory     limit %.2f GB per GPU (%s)\n", o->mem_limit / 1e9,
               c->po.gpu_mem > 0        ? "--gpu-mem"
               : c->po.pm.target_gpu ? "the target GPU's; --gpu-mem changes it"
                                     : "the traced GPU's; --gpu-mem changes it");
    else printf("memory     limit unknown (give --gpu-mem to mark plans that do not fit)\n");
    if (mt_scenario_perturbs(c->wi->sc))
        printf("what-if    every plan runs perturbed (ranked by that) and unperturbed; change = the step's change\n");
    if (c->wi->steps > 1)
        printf("steps      %d back to back: step ms, exposed, host and bubble are per-step means\n", c->wi->steps);
    printf("\n");
    int wl = 14;
    for (int32_t i = 0; i < o->n; i++)
        if ((int)strlen(o->rows[i].label) > wl) wl = (int)strlen(o->rows[i].label);
    if (c->sw == SW_NONE) printf("%4s  %-*s", "#", wl, "plan");
    else printf("%-*s", wl, SWEEP_NAMES[c->sw]);
    int perturbed = mt_scenario_perturbs(c->wi->sc);
    printf(" %11s %9s %11s %11s %10s %10s %8s%s\n", "step ms", "speed-up", "samples/s", "exposed ms", "host ms",
           "bubble ms", "mem GB", perturbed ? "    change" : "");
    int marks = 0, rank = 0;
    for (int32_t i = 0; i < o->n; i++) {
        const cmp_row *w = &o->rows[i];
        if (!w->ran) continue;
        char sps[32];
        if (w->sps >= 0) snprintf(sps, sizeof sps, "%.1f", w->sps);
        else snprintf(sps, sizeof sps, "-");
        if (c->sw == SW_NONE) printf("%4d  %-*s", ++rank, wl, w->label);
        else printf("%-*s", wl, w->label);
        printf(" %11.3f %9.2f %11s %11.3f %10.3f %10.3f %8.2f", w->step_ms, w->speedup, sps, w->exposed_ms,
               w->host_wait_ms, w->bubble_ms, w->mem_bytes / 1e9);
        if (perturbed)
            printf(" %+8.1f%%", w->base_step_ms > 0 ? 100.0 * (w->step_ms - w->base_step_ms) / w->base_step_ms : 0.0);
        printf("%s\n", w->over_mem ? " !" : "");
        marks += w->over_mem;
    }
    int skipped = 0;
    for (int32_t i = 0; i < o->n; i++) {
        const cmp_row *w = &o->rows[i];
        if (w->ran) continue;
        if (!skipped++) printf("\nskipped (infeasible):\n");
        printf("  %-*s  %s\n", wl, w->label, w->reason);
    }
    if (marks) printf("\n! estimated peak memory over the %.2f GB limit (--gpu-mem)\n", o->mem_limit / 1e9);
    if (c->sw == SW_NONE && o->best >= 0) {
        printf("\nfastest    %s (%.3f ms, %.2fx)\n", o->rows[o->best].label, o->rows[o->best].step_ms,
               o->rows[o->best].speedup);
        if (o->mem_limit > 0 && o->best_fit != o->best) {
            if (o->best_fit >= 0)
                printf("fits       %s is the fastest within %.2f GB (%.3f ms, %.2fx)\n", o->rows[o->best_fit].label,
                       o->mem_limit / 1e9, o->rows[o->best_fit].step_ms, o->rows[o->best_fit].speedup);
            else
                printf("fits       no plan fits in %.2f GB per GPU\n", o->mem_limit / 1e9);
        }
    }
}

static void print_json(const cmp_out *o) {
    const cmp_cli *c = o->c;
    json_t *j = json_object();
    json_object_set_new(j, "trace", json_string(o->t->kineto_path ? o->t->kineto_path : ""));
    json_object_set_new(j, "mode", json_string(c->sw == SW_NONE ? "plans" : "sweep"));
    if (c->sw == SW_NONE) json_object_set_new(j, "gpus", json_integer(c->po.plan.gpus));
    else json_object_set_new(j, "sweep", json_string(SWEEP_NAMES[c->sw]));
    json_object_set_new(j, "network", json_string(c->po.net.network));
    json_object_set_new(j, "perf_model", json_string(mt_pm_kind_name(c->po.pm.kind)));
    json_object_set_new(j, "host_model", json_string(o->b->host ? "trace" : "none"));
    json_object_set_new(j, "calibration", mt_calibration_json(&c->cal));
    json_object_set_new(j, "mem_limit_bytes", o->mem_limit > 0 ? json_real(o->mem_limit) : json_null());
    json_t *b = json_object();
    json_object_set_new(b, "step_ms", json_real(o->b->step_ms));
    json_object_set_new(b, "global_batch", json_integer(o->b->batch));
    json_object_set_new(j, "baseline", b);
    json_t *rows = json_array(), *skipped = json_array();
    for (int32_t i = 0; i < o->n; i++) {
        const cmp_row *w = &o->rows[i];
        json_t *x = json_object();
        json_object_set_new(x, "label", json_string(w->label));
        if (c->sw != SW_NONE) json_object_set_new(x, "value", json_real(w->x));
        if (!w->ran) {
            json_object_set_new(x, "reason", json_string(w->reason));
            json_array_append_new(skipped, x);
            continue;
        }
        json_object_set_new(x, "plan", mt_planlist_json(&w->resolved));
        json_object_set_new(x, "topology", w->ran_topology[0] ? json_string(w->ran_topology) : json_null());
        json_object_set_new(x, "step_ms", json_real(w->step_ms));
        json_object_set_new(x, "unperturbed_step_ms", w->base_step_ms > 0 ? json_real(w->base_step_ms) : json_null());
        json_object_set_new(x, "speedup", json_real(w->speedup));
        json_object_set_new(x, "samples_per_s", w->sps >= 0 ? json_real(w->sps) : json_null());
        json_object_set_new(x, "exposed_comm_ms", json_real(w->exposed_ms));
        json_object_set_new(x, "host_wait_ms", json_real(w->host_wait_ms));
        json_object_set_new(x, "bubble_ms", json_real(w->bubble_ms));
        json_object_set_new(x, "peak_mem_bytes", json_real(w->mem_bytes));
        json_object_set_new(x, "over_mem", json_boolean(w->over_mem));
        json_array_append_new(rows, x);
    }
    json_object_set_new(j, "rows", rows);
    json_object_set_new(j, "skipped", skipped);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    if (s) puts(s);
    free(s);
    json_decref(j);
}

/* Runs the fastest row again with a recorder and writes the HTML report. */
static mt_status write_html(const cmp_out *o, mt_perfmodel *pm, mt_error *err) {
    const cmp_cli *c = o->c;
    mt_html_row *hr = calloc((size_t)o->n, sizeof *hr);
    if (!hr) return mt_fail(err, MT_ENOMEM, "out of memory writing the HTML report");
    for (int32_t i = 0; i < o->n; i++) {
        const cmp_row *w = &o->rows[i];
        hr[i] = (mt_html_row){.label = w->label, .skipped = w->ran ? NULL : w->reason, .step_ms = w->step_ms,
                              .speedup = w->speedup, .samples_per_s = w->sps, .exposed_ms = w->exposed_ms,
                              .host_wait_ms = w->host_wait_ms, .bubble_ms = w->bubble_ms,
                              .mem_bytes = w->mem_bytes, .over_mem = w->over_mem};
    }
    char lines[4][256];
    mt_html_kv kv[4];
    int nk = 0;
    if (c->sw == SW_NONE)
        snprintf(lines[nk], sizeof lines[nk], "%d plans on %d GPUs, ranked by throughput", o->n, c->po.plan.gpus);
    else
        snprintf(lines[nk], sizeof lines[nk], "%s over %d values", SWEEP_NAMES[c->sw], o->n);
    kv[nk] = (mt_html_kv){c->sw == SW_NONE ? "compared" : "swept", lines[nk]};
    nk++;
    snprintf(lines[nk], sizeof lines[nk], "%.3f ms on 1 GPU at the traced batch (speed-up = throughput over it)",
             o->b->step_ms);
    kv[nk] = (mt_html_kv){"baseline", lines[nk]};
    nk++;
    if (mt_scenario_perturbs(c->wi->sc)) {
        snprintf(lines[nk], sizeof lines[nk], "every plan ran perturbed (step times and ranking) and unperturbed "
                 "(--json: unperturbed_step_ms)");
        kv[nk] = (mt_html_kv){"what-if", lines[nk]};
        nk++;
    }
    snprintf(lines[nk], sizeof lines[nk], "%s, the fastest, is shown in detail below", o->rows[o->best].label);
    kv[nk] = (mt_html_kv){"detail", lines[nk]};
    nk++;
    mt_html_report rep = {.title = c->sw == SW_NONE ? "mitosis compare" : "mitosis compare --sweep",
                          .summary = kv, .n_summary = nk,
                          .rows_kind = c->sw == SW_NONE ? MT_HTML_PLANS : MT_HTML_SWEEP,
                          .sweep_name = SWEEP_NAMES[c->sw], .rows = hr, .n_rows = o->n};
    cmp_row w = o->rows[o->best];
    mt_recorder rec;
    mt_recorder_init(&rec);
    mt_simrun_cfg cfg;
    mt_simrun run;
    memset(&run, 0, sizeof run);
    mt_status rc = row_cfg(c, &w, o->t, &rec, &cfg, err);
    if (rc == MT_OK) rc = mt_simrun_run(o->t, pm, &cfg, &run, err);
    if (rc == MT_OK) rc = mt_cli_html_write(c->html, &rep, &c->po, o->t, &run, &rec, NULL, err);
    mt_simrun_free(&run);
    mt_recorder_destroy(&rec);
    free(hr);
    return rc;
}

/* ---- the command -------------------------------------------------------------------------- */

static mt_status run_baseline(const cmp_cli *c, const trace *t, mt_perfmodel *pm, baseline *b, mt_error *err) {
    mt_simrun_cfg cfg;
    mt_simrun_cfg_init(&cfg);
    cfg.plan = c->po.plan;
    cfg.plan.gpus = 1;
    cfg.plan.dp = cfg.plan.tp = cfg.plan.pp = cfg.plan.micro_batches = 0;
    cfg.plan.global_batch = 0;
    cfg.net = c->po.net;
    cfg.net.topology = NULL; /* one GPU: no communication, switch:1 */
    cfg.host_model = c->po.host_model;
    cfg.host_scale = c->po.host_scale;
    cfg.op_scale = c->po.op_scale;
    mt_simrun run;
    MT_CHECK(mt_simrun_run(t, pm, &cfg, &run, err));
    b->step_ms = (double)run.res->step_ps / 1e9;
    b->batch = run.plan.global_batch;
    b->units = units_of(&run.plan);
    b->host = run.host != NULL;
    mt_simrun_free(&run);
    if (!(b->step_ms > 0)) return mt_fail(err, MT_EINVAL, "the traced step takes no time: nothing to compare");
    /* A --batch the trace cannot take (its batch is unknown) is an error, not a skipped plan. */
    if (c->po.plan.global_batch > 0 && t->batch_size <= 0) {
        cfg.plan.global_batch = c->po.plan.global_batch;
        return mt_plan_resolve(&cfg.plan, t, err);
    }
    return MT_OK;
}

int cmd_compare(int argc, char **argv) {
    cmp_cli c;
    memset(&c, 0, sizeof c);
    mt_planopts_init(&c.po);
    mt_error err = {0};
    mt_whatif wi;
    if (mt_whatif_init(&wi, &err) != MT_OK) return mt_cli_fail("compare", &err);
    c.wi = &wi;
    int pr = parse_args(&c, argc, argv, &err);
    if (pr != 0) {
        free(c.values);
        mt_whatif_free(&wi);
        return pr > 0 ? 0 : mt_cli_fail("compare", &err);
    }
    trace *t = NULL;
    mt_perfmodel *pm = NULL;
    cmp_row *rows = NULL;
    int32_t n = 0;
    baseline b = {0};
    int html_pending = 0; /* created empty before the runs (a bad path fails first), not written yet */
    mt_status rc = MT_OK;
    if (c.html) {
        FILE *hf = fopen(c.html, "w");
        if (!hf)
            rc = mt_fail(&err, MT_EIO, "cannot write the HTML report '%s': %s (choose a writable path)", c.html,
                         strerror(errno));
        else fclose(hf), html_pending = 1;
    }
    if (rc == MT_OK) rc = mt_planopts_load(&c.po, &t, &pm, &err);
    if (rc == MT_OK) rc = mt_calibrate(&c.po, t, pm, &c.cal, &err);
    if (rc == MT_OK) rc = run_baseline(&c, t, pm, &b, &err);
    if (rc == MT_OK) rc = make_rows(&c, t, &rows, &n, &err);
    double mem_limit = rc == MT_OK ? mt_planopts_mem_limit(&c.po, t) : 0;
    for (int32_t i = 0; i < n && rc == MT_OK; i++) {
        progress(i, n, rows[i].label);
        rc = run_row(&c, &rows[i], t, pm, &b, mem_limit, &err);
    }
    progress(n, n, "");
    cmp_out o = {&c, t, rows, n, &b, mem_limit, -1, -1};
    if (rc == MT_OK) {
        if (c.sw == SW_NONE) qsort(rows, (size_t)n, sizeof *rows, by_rank);
        for (int32_t i = 0; i < n; i++) {
            if (!rows[i].ran) continue;
            if (o.best < 0 || by_rank(&rows[i], &rows[o.best]) < 0) o.best = i;
            if (!rows[i].over_mem && (o.best_fit < 0 || by_rank(&rows[i], &rows[o.best_fit]) < 0)) o.best_fit = i;
        }
        if (o.best < 0)
            rc = mt_fail(&err, MT_EINVAL, "no plan could run; %s: %s", rows[0].label, rows[0].reason);
    }
    if (rc == MT_OK) {
        if (c.as_json) print_json(&o);
        else print_text(&o);
        if (c.html && (rc = write_html(&o, pm, &err)) == MT_OK) html_pending = 0;
    }
    if (html_pending) remove(c.html);
    if (rc == MT_OK) mt_planopts_warn(pm, "compare");
    int code = rc == MT_OK ? 0 : mt_cli_fail("compare", &err);
    for (int32_t i = 0; i < n; i++) free(rows[i].reason);
    free(rows);
    free(c.values);
    mt_whatif_free(&wi);
    mt_perfmodel_free(pm);
    mt_trace_free(t);
    return code;
}

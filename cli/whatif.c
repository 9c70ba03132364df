/* cli/whatif.c — see whatif.h. */
#include "cli/whatif.h"

#include <stdlib.h>
#include <string.h>

#include "cli/args.h"

mt_status mt_whatif_init(mt_whatif *w, mt_error *err) {
    memset(w, 0, sizeof *w);
    w->seed = -1;
    if (!(w->sc = mt_scenario_new())) return mt_fail(err, MT_ENOMEM, "out of memory creating a scenario");
    return MT_OK;
}

void mt_whatif_free(mt_whatif *w) {
    if (w->has_base) mt_simrun_free(&w->base);
    mt_scenario_free(w->sc);
    memset(w, 0, sizeof *w);
}

void mt_whatif_help(FILE *out) {
    fprintf(out,
            "What-if scenarios (README \"What-if scenarios\"; the file format is in sim/scenario.h):\n"
            "  --scenario FILE       JSON: compute slowdowns per GPU / layer / micro-batch / step (fixed\n"
            "                        or random), GPU types per rank, link changes, seed, steps\n"
            "  --slow-gpu RANK:F     GPU RANK (or a range 0-3) computes F times slower (repeatable)\n"
            "  --slow-link SEL:F     link(s) F times slower, i.e. bandwidth / F; SEL is A->B, A<->B or a\n"
            "                        node name for all its links (mitosis topo SPEC --dot - lists the names)\n"
            "  --fail-link SEL@TIME  the link(s) fail at TIME (e.g. gpu3->sw0@10ms): traffic re-routes,\n"
            "                        or the run stops with an error naming the cut\n"
            "  --seed N              seed of the random draws (default: the file's, else 0)\n"
            "  --steps K             run K training steps back to back (default 1)\n"
            "  With a perturbation, an unperturbed run of the same plan is simulated too and the\n"
            "  output adds its cost: run-time change and GPU-time lost (extra compute + waiting).\n");
}

int mt_whatif_take(mt_whatif *w, int argc, char **argv, int *i, mt_error *err) {
    const char *f = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    mt_status rc;
    if (!strcmp(f, "--scenario")) {
        if (!v) return mt_fail(err, MT_EINVAL, "--scenario needs a JSON file"), -1;
        rc = mt_scenario_load(w->sc, v, err);
    } else if (!strcmp(f, "--slow-gpu")) {
        rc = mt_scenario_add_slow_gpu(w->sc, v ? v : "", err);
    } else if (!strcmp(f, "--slow-link")) {
        rc = mt_scenario_add_slow_link(w->sc, v ? v : "", err);
    } else if (!strcmp(f, "--fail-link")) {
        rc = mt_scenario_add_fail_link(w->sc, v ? v : "", err);
    } else if (!strcmp(f, "--steps")) {
        rc = mt_cli_int(f, v, 1, 100000, &w->steps, err) ? MT_OK : MT_EINVAL;
    } else if (!strcmp(f, "--seed")) {
        char *end;
        long long s = v ? strtoll(v, &end, 10) : -1;
        if (!v || *end || !*v || s < 0) return mt_fail(err, MT_EINVAL, "--seed needs an integer >= 0 (got '%s')", v ? v : ""), -1;
        w->seed = s;
        rc = MT_OK;
    } else {
        return 0;
    }
    if (rc != MT_OK) return -1;
    *i += 2;
    return 1;
}

static mt_status prepare(void *ctx, mt_simrun *run, mt_error *err) {
    mt_whatif *w = ctx;
    MT_CHECK(mt_scenario_bind(w->sc, run->prog, w->t, &w->pm, err));
    return mt_scenario_apply_network(w->sc, &run->net, run->topo, err);
}

void mt_whatif_configure(mt_whatif *w, const trace *t, const mt_pm_opts *pm, mt_simrun_cfg *cfg) {
    if (w->seed >= 0) mt_scenario_set_seed(w->sc, (uint64_t)w->seed);
    if (w->steps > 0) mt_scenario_set_steps(w->sc, w->steps);
    w->t = t;
    w->pm = *pm;
    mt_scenario_sim_opts(w->sc, &cfg->sim);
    cfg->prepare = prepare;
    cfg->prepare_ctx = w;
}

mt_simrun_cfg mt_whatif_unperturbed(const mt_simrun_cfg *cfg) {
    mt_simrun_cfg b = *cfg;
    b.prepare = NULL;
    b.sim.compute_factor = NULL;
    b.sim.factor_ctx = NULL;
    b.sim.on_span = NULL;
    b.sim.on_progress = NULL;
    b.on_link = NULL;
    return b;
}

mt_status mt_whatif_baseline(mt_whatif *w, const trace *t, mt_perfmodel *pm, const mt_simrun_cfg *cfg,
                             mt_error *err) {
    if (!mt_scenario_perturbs(w->sc)) return MT_OK;
    mt_simrun_cfg b = mt_whatif_unperturbed(cfg);
    if (mt_simrun_run(t, pm, &b, &w->base, err) != MT_OK)
        return mt_error_prefix(err, "the unperturbed baseline run");
    w->has_base = 1;
    return MT_OK;
}

static double ms(double ps) { return ps / 1e9; }

void mt_whatif_print(const mt_whatif *w, const mt_sim_result *r) {
    if (r->n_steps > 1) {
        printf("steps      %d back to back, run %.3f ms (mean %.3f ms per step); each:", r->n_steps,
               ms((double)r->step_ps), ms((double)r->step_ps) / r->n_steps);
        for (int32_t k = 0; k < r->n_steps && k < 16; k++)
            printf(" %.3f", ms((double)(r->step_end_ps[k] - (k ? r->step_end_ps[k - 1] : 0))));
        printf("%s ms\n", r->n_steps > 16 ? " ..." : "");
    }
    if (!w->has_base) return;
    const mt_sim_result *b = w->base.res;
    mt_whatif_cost c;
    mt_whatif_cost_of(b, r, &c);
    printf("what-if    unperturbed %.3f ms -> %.3f ms (%+.3f ms, %+.2f%%)%s\n", ms((double)c.base_ps),
           ms((double)c.run_ps), ms((double)c.run_change_ps),
           c.base_ps > 0 ? 100.0 * (double)c.run_change_ps / (double)c.base_ps : 0.0,
           r->n_steps > 1 ? " over all steps" : "");
    if (r->n_steps > 1) {
        printf("           change per step:");
        for (int32_t k = 0; k < r->n_steps && k < 16; k++) {
            mt_time_ps a = r->step_end_ps[k] - (k ? r->step_end_ps[k - 1] : 0);
            mt_time_ps z = b->step_end_ps[k] - (k ? b->step_end_ps[k - 1] : 0);
            printf(" %+.3f", ms((double)(a - z)));
        }
        printf(" ms\n");
    }
    printf("           GPU-time lost %.3f ms over %d GPUs = %.3f ms extra compute + %.3f ms more waiting\n",
           ms(c.gpu_time_ps), r->n_gpus, ms(c.extra_compute_ps), ms(c.extra_wait_ps));
}

static json_t *step_times(const mt_sim_result *r) {
    json_t *a = json_array();
    for (int32_t k = 0; k < r->n_steps; k++)
        json_array_append_new(a, json_real(ms((double)(r->step_end_ps[k] - (k ? r->step_end_ps[k - 1] : 0)))));
    return a;
}

void mt_whatif_json(const mt_whatif *w, const mt_sim_result *r, json_t *o) {
    json_object_set_new(o, "steps", json_integer(r->n_steps));
    json_object_set_new(o, "step_ms_each", step_times(r));
    if (!w->has_base) return;
    mt_whatif_cost c;
    mt_whatif_cost_of(w->base.res, r, &c);
    json_t *x = json_object();
    json_object_set_new(x, "base_ms", json_real(ms((double)c.base_ps)));
    json_object_set_new(x, "run_ms", json_real(ms((double)c.run_ps)));
    json_object_set_new(x, "change_ms", json_real(ms((double)c.run_change_ps)));
    json_object_set_new(x, "base_step_ms_each", step_times(w->base.res));
    json_object_set_new(x, "gpu_time_lost_ms", json_real(ms(c.gpu_time_ps)));
    json_object_set_new(x, "extra_compute_ms", json_real(ms(c.extra_compute_ps)));
    json_object_set_new(x, "extra_wait_ms", json_real(ms(c.extra_wait_ps)));
    json_object_set_new(o, "whatif", x);
}

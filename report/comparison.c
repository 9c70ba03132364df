/* report/comparison.c — see comparison.h. */
#include "report/comparison.h"

#include <stdlib.h>
#include <string.h>

#include "extrapolate/planlist.h"
#include "report/verdict.h"
#include "tracer/device.h"
#include "util/units.h"

void mt_comparison_free(mt_comparison *c) {
    if (!c) return;
    for (int32_t i = 0; i < c->n; i++) free(c->rows[i].reason);
    free(c->rows);
    c->rows = NULL;
    c->n = 0;
}

static int by_rank(const void *a, const void *b) {
    const mt_cmp_row *x = a, *y = b;
    if (x->ran != y->ran) return x->ran ? -1 : 1;
    if (!x->ran) return 0;
    if (x->speedup != y->speedup) return x->speedup > y->speedup ? -1 : 1;
    return (x->step_ms > y->step_ms) - (x->step_ms < y->step_ms);
}

void mt_comparison_rank(mt_comparison *c) {
    if (!c->sweep) qsort(c->rows, (size_t)c->n, sizeof *c->rows, by_rank);
    c->best = c->best_fit = -1;
    for (int32_t i = 0; i < c->n; i++) {
        if (!c->rows[i].ran) continue;
        if (c->best < 0 || by_rank(&c->rows[i], &c->rows[c->best]) < 0) c->best = i;
        if (!c->rows[i].over_mem && (c->best_fit < 0 || by_rank(&c->rows[i], &c->rows[c->best_fit]) < 0))
            c->best_fit = i;
    }
}

void mt_comparison_print(FILE *out, const mt_comparison *o) {
    const mt_trace *t = o->t;
    char dev[320];
    fprintf(out, "trace      %s (batch %lld)\n", t->kineto_path ? t->kineto_path : "?", (long long)t->batch_size);
    fprintf(out, "recorded   %s\n", mt_device_describe(t, dev, sizeof dev));
    if (o->op_times) fprintf(out, "op times   %s\n", o->op_times);
    if (o->cpu_ranks) fprintf(out, "ranks      %s\n", MT_CPU_RANKS_TEXT);
    if (o->seq > 0)
        fprintf(out, "sequence   %lld tokens, the trace's %lld rewritten (--seq; docs/llm.md)\n", (long long)o->seq,
                (long long)o->traced_seq);
    const mt_cmp_row *first = NULL;
    for (int32_t i = 0; i < o->n && !first; i++)
        if (o->rows[i].ran) first = &o->rows[i];
    if (!o->sweep) {
        fprintf(out, "compare    %d plan%s on %d GPU%s, global batch %lld, %s on %s, %s op-time model, host model %s\n",
                o->n, mt_plural(o->n), o->gpus, mt_plural(o->gpus), first ? (long long)first->plan.global_batch : 0LL, o->network,
                o->topology ? o->topology : "its own endpoints", mt_pm_kind_name(o->perf_model),
                o->host ? "trace" : "none");
    } else {
        char label[128];
        mt_planlist_label(&o->plan, label, sizeof label);
        fprintf(out, "sweep      %s over %d value%s, plan %s%s, %s on %s, %s op-time model, host model %s\n",
                o->sweep, o->n, mt_plural(o->n), label, o->sweep_gpus ? " (sizes left out take the GPUs)" : "", o->network,
                o->topology ? o->topology : "its own endpoints", mt_pm_kind_name(o->perf_model),
                o->host ? "trace" : "none");
    }
    fprintf(out, "baseline   1 GPU, traced batch: %.3f ms", o->base_step_ms);
    if (o->base_batch > 0) fprintf(out, " (%.1f samples/s)", (double)o->base_batch / (o->base_step_ms / 1e3));
    fprintf(out, "\n");
    mt_calibration_print(out, o->cal);
    char lim[32];
    mt_fmt_bytes(o->mem_limit, lim, sizeof lim); /* "80.00 GB"; a few MB of a tiny model as MB */
    if (o->mem_limit > 0)
        fprintf(out, "memory     limit %s per GPU (%s)\n", lim, o->mem_source);
    else fprintf(out, "memory     limit unknown (give --gpu-mem to mark plans that do not fit)\n");
    if (o->perturbed)
        fprintf(out, "what-if    every plan runs perturbed (ranked by that) and unperturbed; change = the step's change\n");
    if (o->steps > 1)
        fprintf(out, "steps      %d back to back: step ms, exposed, host and bubble are per-step means\n", o->steps);
    fprintf(out, "\n");
    int wl = 14;
    for (int32_t i = 0; i < o->n; i++)
        if ((int)strlen(o->rows[i].label) > wl) wl = (int)strlen(o->rows[i].label);
    if (!o->sweep) fprintf(out, "%4s  %-*s", "#", wl, "plan");
    else fprintf(out, "%-*s", wl, o->sweep);
    int perturbed = o->perturbed;
    fprintf(out, " %11s %9s %11s %11s %10s %10s %10s %8s%s\n", "step ms", "speed-up", "samples/s", "exposed ms",
            "peer ms", "host ms", "bubble ms", "mem GB", perturbed ? "    change" : "");
    int marks = 0, rank = 0;
    for (int32_t i = 0; i < o->n; i++) {
        const mt_cmp_row *w = &o->rows[i];
        if (!w->ran) continue;
        char sps[32];
        if (w->sps >= 0) snprintf(sps, sizeof sps, "%.1f", w->sps);
        else snprintf(sps, sizeof sps, "-");
        if (!o->sweep) fprintf(out, "%4d  %-*s", ++rank, wl, w->label);
        else fprintf(out, "%-*s", wl, w->label);
        fprintf(out, " %11.3f %9.2f %11s %11.3f %10.3f %10.3f %10.3f %8.2f", w->step_ms, w->speedup, sps,
                w->exposed_ms, w->peer_ms, w->host_wait_ms, w->bubble_ms, w->mem_bytes / 1e9);
        if (perturbed)
            fprintf(out, " %+8.1f%%", mt_change_pct(w->base_step_ms, w->step_ms));
        fprintf(out, "%s\n", w->over_mem ? " !" : "");
        marks += w->over_mem;
    }
    int skipped = 0, pruned = 0;
    for (int32_t i = 0; i < o->n; i++) {
        const mt_cmp_row *w = &o->rows[i];
        if (w->ran || w->pruned) continue;
        if (!skipped++) fprintf(out, "\nskipped (infeasible):\n");
        fprintf(out, "  %-*s  %s\n", wl, w->label, w->reason);
    }
    for (int32_t i = 0; i < o->n; i++) {
        const mt_cmp_row *w = &o->rows[i];
        if (w->ran || !w->pruned) continue;
        if (!pruned++)
            fprintf(out, "\npruned (not simulated: they cannot reach the first %d rows that fit in memory, "
                    "and the rows down to those are exact; --exhaustive runs them):\n", (int)o->top);
        fprintf(out, "  %-*s  %s\n", wl, w->label, w->reason);
    }
    if (marks) fprintf(out, "\n! estimated peak memory over the %s limit (--gpu-mem)\n", lim);
    if (!o->sweep && o->best >= 0) {
        fprintf(out, "\nfastest    %s (%.3f ms, %.2fx)\n", o->rows[o->best].label, o->rows[o->best].step_ms,
               o->rows[o->best].speedup);
        if (o->mem_limit > 0 && o->best_fit != o->best) {
            if (o->best_fit >= 0)
                fprintf(out, "fits       %s is the fastest within %s (%.3f ms, %.2fx)\n", o->rows[o->best_fit].label,
                       lim, o->rows[o->best_fit].step_ms, o->rows[o->best_fit].speedup);
            else
                fprintf(out, "fits       no plan fits in %s per GPU\n", lim);
        }
    }
    fprintf(out, "\n%d %s in %.1f s\n", (int)o->n, o->sweep ? (o->n == 1 ? "run" : "runs") : (o->n == 1 ? "plan" : "plans"),
            o->wall_s);
}

json_t *mt_comparison_json(const mt_comparison *o) {
    json_t *j = json_object();
    json_object_set_new(j, "trace", json_string(o->t->kineto_path ? o->t->kineto_path : ""));
    json_object_set_new(j, "mode", json_string(!o->sweep ? "plans" : "sweep"));
    if (!o->sweep) json_object_set_new(j, "gpus", json_integer(o->gpus));
    else json_object_set_new(j, "sweep", json_string(o->sweep));
    json_object_set_new(j, "network", json_string(o->network));
    json_object_set_new(j, "perf_model", json_string(mt_pm_kind_name(o->perf_model)));
    json_object_set_new(j, "recorded_on", mt_device_json(&o->t->recorded_on));
    json_object_set_new(j, "ranks", json_string(o->cpu_ranks ? "cpu_processes" : "gpus"));
    json_object_set_new(j, "op_times", o->op_times ? json_string(o->op_times) : json_null());
    json_object_set_new(j, "host_model", json_string(o->host ? "trace" : "none"));
    if (o->seq > 0)
        json_object_set_new(j, "seq", json_pack("{s:I, s:I}", "length", (json_int_t)o->seq, "traced",
                                                (json_int_t)o->traced_seq));
    json_object_set_new(j, "calibration", mt_calibration_json(o->cal));
    json_object_set_new(j, "mem_limit_bytes", o->mem_limit > 0 ? json_real(o->mem_limit) : json_null());
    json_t *b = json_object();
    json_object_set_new(b, "step_ms", json_real(o->base_step_ms));
    json_object_set_new(b, "global_batch", json_integer(o->base_batch));
    json_object_set_new(j, "baseline", b);
    json_t *rows = json_array(), *skipped = json_array(), *pruned = json_array();
    for (int32_t i = 0; i < o->n; i++) {
        const mt_cmp_row *w = &o->rows[i];
        json_t *x = json_object();
        json_object_set_new(x, "label", json_string(w->label));
        if (o->sweep) json_object_set_new(x, "value", json_real(w->x));
        if (!w->ran) {
            json_object_set_new(x, "reason", json_string(w->reason));
            json_array_append_new(w->pruned ? pruned : skipped, x);
            continue;
        }
        json_object_set_new(x, "plan", mt_planlist_json(&w->plan));
        json_object_set_new(x, "topology", w->topology[0] ? json_string(w->topology) : json_null());
        json_object_set_new(x, "step_ms", json_real(w->step_ms));
        json_object_set_new(x, "unperturbed_step_ms", w->base_step_ms > 0 ? json_real(w->base_step_ms) : json_null());
        json_object_set_new(x, "speedup", json_real(w->speedup));
        json_object_set_new(x, "samples_per_s", w->sps >= 0 ? json_real(w->sps) : json_null());
        json_object_set_new(x, "exposed_comm_ms", json_real(w->exposed_ms));
        json_object_set_new(x, "peer_wait_ms", json_real(w->peer_ms));
        json_object_set_new(x, "host_wait_ms", json_real(w->host_wait_ms));
        json_object_set_new(x, "bubble_ms", json_real(w->bubble_ms));
        json_object_set_new(x, "stretch_ms", json_real(w->stretch_ms));
        json_object_set_new(x, "peak_mem_bytes", json_real(w->mem_bytes));
        json_object_set_new(x, "over_mem", json_boolean(w->over_mem));
        json_array_append_new(rows, x);
    }
    json_object_set_new(j, "rows", rows);
    json_t *ws = json_array();
    for (int k = 0; k < o->n_warnings; k++) json_array_append_new(ws, json_string(o->warnings[k]));
    json_object_set_new(j, "warnings", ws);
    json_object_set_new(j, "skipped", skipped);
    if (json_array_size(pruned)) { /* run/prune.h: only when some were (the exhaustive output is unchanged) */
        json_object_set_new(j, "exact_rows", json_integer(o->top));
        json_object_set_new(j, "pruned", pruned);
    } else json_decref(pruned);
    json_object_set_new(j, "wall_s", json_real(o->wall_s));
    return j;
}

mt_status mt_comparison_html_write(const char *path, const mt_comparison *o, const mt_run_summary *best,
                                   const mt_recorder *rec, mt_error *err) {
    mt_html_row *hr = calloc((size_t)o->n, sizeof *hr);
    if (!hr) return mt_fail(err, MT_ENOMEM, "out of memory writing the HTML report");
    for (int32_t i = 0; i < o->n; i++) {
        const mt_cmp_row *w = &o->rows[i];
        hr[i] = (mt_html_row){.label = w->label, .skipped = w->ran ? NULL : w->reason, .pruned = !w->ran && w->pruned,
                              .step_ms = w->step_ms, .speedup = w->speedup, .samples_per_s = w->sps,
                              .exposed_ms = w->exposed_ms, .peer_ms = w->peer_ms, .host_wait_ms = w->host_wait_ms,
                              .bubble_ms = w->bubble_ms, .mem_bytes = w->mem_bytes, .over_mem = w->over_mem};
    }
    char lines[4][384];
    mt_html_kv kv[4];
    int nk = 0;
    int32_t ran = 0, pruned = 0;
    for (int32_t i = 0; i < o->n; i++) ran += o->rows[i].ran != 0, pruned += !o->rows[i].ran && o->rows[i].pruned;
    if (!o->sweep && ran < o->n) {
        int at = snprintf(lines[nk], sizeof lines[nk], "%d plan%s on %d GPU%s: %d ran, ranked by throughput", o->n,
                          mt_plural(o->n), o->gpus, mt_plural(o->gpus), ran);
        if (o->n - ran - pruned)
            at += snprintf(lines[nk] + at, sizeof lines[nk] - (size_t)at, "; %d skipped (they cannot run: the reason "
                           "is in their row)", o->n - ran - pruned);
        if (pruned)
            snprintf(lines[nk] + at, sizeof lines[nk] - (size_t)at, "; %d pruned (not simulated: they cannot reach "
                     "the first %d rows that fit in memory)", pruned, (int)o->top);
    }
    else if (!o->sweep)
        snprintf(lines[nk], sizeof lines[nk], "%d plan%s on %d GPU%s, ranked by throughput", o->n, mt_plural(o->n),
                 o->gpus, mt_plural(o->gpus));
    else
        snprintf(lines[nk], sizeof lines[nk], "%s over %d value%s", o->sweep, o->n, mt_plural(o->n));
    kv[nk] = (mt_html_kv){!o->sweep ? "compared" : "swept", lines[nk]};
    nk++;
    snprintf(lines[nk], sizeof lines[nk], "%.3f ms on 1 GPU at the traced batch (speed-up = throughput over it)",
             o->base_step_ms);
    kv[nk] = (mt_html_kv){"baseline", lines[nk]};
    nk++;
    if (o->perturbed) {
        snprintf(lines[nk], sizeof lines[nk], "every plan ran perturbed (step times and ranking) and unperturbed "
                 "(--json: unperturbed_step_ms)");
        kv[nk] = (mt_html_kv){"what-if", lines[nk]};
        nk++;
    }
    snprintf(lines[nk], sizeof lines[nk], "%s, the fastest, is shown in detail below", o->rows[o->best].label);
    kv[nk] = (mt_html_kv){"detail", lines[nk]};
    nk++;
    mt_html_report rep = {.title = !o->sweep ? "mitosis compare" : "mitosis compare --sweep",
                          .summary = kv, .n_summary = nk,
                          .rows_kind = !o->sweep ? MT_HTML_PLANS : MT_HTML_SWEEP,
                          .sweep_name = o->sweep ? o->sweep : "", .rows = hr, .n_rows = o->n,
                          .mem_limit = o->mem_limit};
    mt_status rc = mt_summary_html_write(path, &rep, best, rec, NULL, err);
    free(hr);
    return rc;
}

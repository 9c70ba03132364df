/* cli/htmlout.c — see htmlout.h. */
#include "cli/htmlout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/planlist.h"

mt_status mt_cli_html_gpus(mt_span_filter *f, const trace *t, const mt_plan *plan, mt_error *err) {
    mt_plan p = *plan;
    if (mt_plan_resolve(&p, t, NULL) != MT_OK || p.gpus <= MT_CLI_HTML_GANTT_GPUS) return MT_OK;
    char keep[32];
    snprintf(keep, sizeof keep, "0-%d", MT_CLI_HTML_GANTT_GPUS - 1);
    return mt_span_filter_ranks(f, keep, p.gpus, err);
}

enum { RUN_LINES = 11 };

mt_status mt_cli_html_write(const char *path, const mt_html_report *rep, const mt_planopts *po, const trace *t,
                            const mt_simrun *run, const mt_recorder *rec, const mt_span_filter *gpus,
                            mt_error *err) {
    const mt_plan *pl = &run->plan;
    const mt_sim_result *r = run->res;
    char val[RUN_LINES][256], label[128];
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
    LINE("trace", "%s (%s)", t->kineto_path ? t->kineto_path : "?", t->device_name ? t->device_name : "device unknown");
    LINE("plan", "%s: %d GPUs = dp %d x tp %d x pp %d, placement %s, %s collectives", label, pl->gpus, pl->dp,
         pl->tp, pl->pp, pl->placement, mt_coll_algo_name(pl->algo));
    if (pl->global_batch > 0)
        LINE("batch", "global %lld, per replica %lld, micro-batch %lld (traced %lld)", (long long)pl->global_batch,
             (long long)pl->replica_batch, (long long)pl->micro_batch, (long long)t->batch_size);
    else
        LINE("batch", "unknown in the trace: each replica runs the traced batch");
    LINE("network", "%s on %s", po->net.network, run->topology[0] ? run->topology : "its own endpoints");
    LINE("op times", "%s model%s%s", mt_pm_kind_name(po->pm.kind), po->pm.target_gpu ? ", target GPU " : "",
         po->pm.target_gpu ? po->pm.target_gpu : "");
    LINE("host model", "%s", run->host ? "trace: each GPU's host thread launches its ops as in the trace"
                                       : "none: GPU time only");
    if (po->host_scale != 1 || po->op_scale != 1)
        LINE("time scaling", "host times x %.4f, operator times x %.4f (--host-scale or --calibrate)",
             po->host_scale, po->op_scale);
    int32_t steps = r->n_steps > 1 ? r->n_steps : 1;
    LINE("step time", "%.3f ms%s (one traced GPU: %.3f ms of operator time)", (double)r->step_ps / 1e9 / steps,
         steps > 1 ? " a step, the mean of the steps simulated (the bars and timeline show them all)" : "",
         (double)mt_trace_total_dev_ns(t) / 1e6);
    if (pl->global_batch > 0 && r->step_ps > 0)
        LINE("throughput", "%.1f samples/s", (double)pl->global_batch * steps / ((double)r->step_ps / 1e12));
    double peak = 0, limit = mt_planopts_mem_limit(po, t);
    for (int32_t i = 0; i < r->n_gpus; i++)
        if (r->gpus[i].peak_mem_bytes > peak) peak = r->gpus[i].peak_mem_bytes;
    if (limit > 0)
        LINE("peak memory", "%.2f GB per GPU (estimated; limit %.2f GB%s)", peak / 1e9, limit / 1e9,
             peak > limit ? ": OVER THE LIMIT" : "");
    else
        LINE("peak memory", "%.2f GB per GPU (estimated; the GPU's memory is unknown, see --gpu-mem)", peak / 1e9);
    if (run->prog->warning[0]) LINE("warning", "%s", run->prog->warning);
#undef LINE
    mt_html_report full = *rep;
    full.summary = kv;
    full.n_summary = n;
    full.detail_label = label;
    full.prog = run->prog;
    full.res = r;
    full.rec = rec;
    full.gpus = gpus;
    mt_status rc = mt_html_write(path, &full, err);
    free(kv);
    return rc;
}

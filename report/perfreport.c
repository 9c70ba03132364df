/* report/perfreport.c — see perfreport.h. */
#include "report/perfreport.h"

#include <string.h>

#include "tracer/device.h"

void mt_perfreport_model(FILE *out, const mt_linmodel *m) {
    fprintf(out, "device     %s\n", m->device[0] ? m->device : "(unknown)");
    fprintf(out, "sources    %d trace%s, %ld CSV rows\n", m->n_traces, m->n_traces == 1 ? "" : "s",
           (long)m->n_csv_rows);
    fprintf(out, "model      time_ns = a*FLOPs + b*bytes + c per class (non-negative)\n\n");
    fprintf(out, "%-16s %6s %-18s %12s %12s %12s %9s  %s\n", "class", "n", "terms", "TFLOP/s(1/a)",
           "GB/s(1/b)", "c us", "rel.rmse", "note");
    for (int c = 0; c < MT_OPC_COUNT; c++) {
        const mt_fit_result *r = &m->cls[c];
        if (!r->n) continue;
        char terms[32] = "", a[24] = "-", b[24] = "-";
        static const char *const tn[3] = {"flops", "bytes", "const"};
        for (int j = 0; j < 3; j++)
            if (r->used & (1u << j))
                snprintf(terms + strlen(terms), sizeof terms - strlen(terms), "%s%s",
                         terms[0] ? "+" : "", tn[j]);
        if (!r->used) snprintf(terms, sizeof terms, "(none)");
        if (r->coef[MT_LIN_FLOPS] > 0) snprintf(a, sizeof a, "%.3f", 1e-3 / r->coef[MT_LIN_FLOPS]);
        if (r->coef[MT_LIN_BYTES] > 0) snprintf(b, sizeof b, "%.1f", 1.0 / r->coef[MT_LIN_BYTES]);
        fprintf(out, "%-16s %6d %-18s %12s %12s %12.2f %8.1f%%  %s\n", mt_opclass_name((mt_opclass)c),
               r->n, terms, a, b, r->coef[MT_LIN_CONST] / 1e3, 100.0 * r->rel_rmse, r->warning);
    }
}

void mt_perfreport_gpus(FILE *out, const mt_gpu_table *tab) {
    fprintf(out, "%-15s %8s %8s %8s %8s %8s %8s %9s %7s %7s %5s %6s %6s  %s\n", "gpu", "fp64", "fp32", "tf32", "bf16",
            "fp16", "fp8", "GB/s", "GB", "link", "SMs", "W", "MHz", "note");
    for (int i = 0; i < tab->n; i++) {
        const mt_gpu_spec *g = &tab->gpus[i];
        fprintf(out, "%-15s", g->name);
        for (int d = 0; d < MT_DT_COUNT; d++) {
            if (g->peak_flops[d] > 0) fprintf(out, " %8.1f", g->peak_flops[d] / 1e12);
            else fprintf(out, " %8s", "-");
        }
        fprintf(out, " %9.0f %7.0f %7.0f %5d %6d %6.0f  %s\n", g->mem_Bps / 1e9, g->mem_bytes / 1e9, g->link_Bps / 1e9,
                g->sms, g->tdp_W, g->clock_MHz, g->note);
    }
    fprintf(out, "\nTFLOP/s dense (no sparsity) at the MHz shown; '-': the GPU lacks the unit, and matrix ops run\n"
                 "on the next one (tf32->fp32, bf16->fp32, fp8->fp16->fp32; perfmodel/mathunit.h). GB/s: HBM;\n"
                 "link: GPU-to-GPU GB/s per direction; 0: unknown or none.\n");
}

static const char *target_name(const mt_predicted_step *p, const char *none) {
    return p->target ? p->target->name : p->source ? p->source->name : none;
}

static double total(const double *ns) {
    double s = 0;
    for (int k = 0; k < TRACE_PHASE_COUNT; k++) s += ns[k];
    return s;
}

void mt_perfreport_prediction(FILE *out, const mt_predicted_step *p) {
    const mt_trace *t = p->t;
    char dev[320];
    fprintf(out, "trace      %s (batch %ld, recorded on %s)\n", p->path, (long)t->batch_size,
            t->recorded_on.kind == TRACE_DEV_UNKNOWN && p->source ? p->source->name : mt_device_describe(t, dev, sizeof dev));
    fprintf(out, "model      %s, batch x%.4g (%.4g), tp %d, on %s, tf32 %s\n", mt_pm_kind_name(p->kind),
            p->batch_factor, p->batch_factor * (double)t->batch_size, (int)p->tp,
            target_name(p, "the traced device"), mt_tf32_name(p->tf32));
    if (p->floor_ns > 0)
        fprintf(out, "roofline   %.3f ms (sum over ops of max(FLOPs / peak, bytes / bandwidth) there)\n",
                p->floor_ns / 1e6);
    fprintf(out, "\n%-12s %12s %12s\n", "phase", "traced ms", "predicted ms");
    for (int k = 0; k < TRACE_PHASE_COUNT; k++)
        fprintf(out, "%-12s %12.3f %12.3f\n", mt_trace_phase_name((trace_phase)k), p->traced_ns[k] / 1e6,
                p->predicted_ns[k] / 1e6);
    fprintf(out, "%-12s %12.3f %12.3f\n", "total", total(p->traced_ns) / 1e6, total(p->predicted_ns) / 1e6);
}

json_t *mt_perfreport_prediction_json(const mt_predicted_step *p) {
    json_t *j = json_object(), *tr = json_object(), *pr = json_object();
    for (int k = 0; k < TRACE_PHASE_COUNT; k++) {
        json_object_set_new(tr, mt_trace_phase_name((trace_phase)k), json_real(p->traced_ns[k] / 1e6));
        json_object_set_new(pr, mt_trace_phase_name((trace_phase)k), json_real(p->predicted_ns[k] / 1e6));
    }
    json_object_set_new(tr, "total", json_real(total(p->traced_ns) / 1e6));
    json_object_set_new(pr, "total", json_real(total(p->predicted_ns) / 1e6));
    json_object_set_new(j, "perf_model", json_string(mt_pm_kind_name(p->kind)));
    json_object_set_new(j, "recorded_on", mt_device_json(&p->t->recorded_on));
    json_object_set_new(j, "batch_factor", json_real(p->batch_factor));
    json_object_set_new(j, "batch", json_real(p->batch_factor * (double)p->t->batch_size));
    json_object_set_new(j, "tp", json_integer(p->tp));
    json_object_set_new(j, "source_gpu", p->source ? json_string(p->source->name) : json_null());
    json_object_set_new(j, "target_gpu", json_string(target_name(p, "")));
    json_object_set_new(j, "tf32", json_string(mt_tf32_name(p->tf32)));
    json_object_set_new(j, "floor_ms", json_real(p->floor_ns / 1e6));
    json_object_set_new(j, "traced_ms", tr);
    json_object_set_new(j, "predicted_ms", pr);
    json_object_set_new(j, "warning", json_string(p->warning));
    return j;
}

json_t *mt_perfreport_gpus_json(const mt_gpu_table *tab) {
    static const char *const dtypes[MT_DT_COUNT] = {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8"};
    json_t *arr = json_array();
    for (int i = 0; i < tab->n; i++) {
        const mt_gpu_spec *g = &tab->gpus[i];
        json_t *x = json_object(), *tf = json_object();
        for (int d = 0; d < MT_DT_COUNT; d++)
            json_object_set_new(tf, dtypes[d], g->peak_flops[d] > 0 ? json_real(g->peak_flops[d] / 1e12) : json_null());
        json_object_set_new(x, "name", json_string(g->name));
        json_object_set_new(x, "tflops", tf);
        json_object_set_new(x, "mem_GBps", json_real(g->mem_Bps / 1e9));
        json_object_set_new(x, "mem_GB", json_real(g->mem_bytes / 1e9));
        json_object_set_new(x, "link_GBps", json_real(g->link_Bps / 1e9));
        json_object_set_new(x, "sms", json_integer(g->sms));
        json_object_set_new(x, "tdp_W", json_integer(g->tdp_W));
        json_object_set_new(x, "boost_MHz", json_real(g->boost_MHz));
        json_object_set_new(x, "clock_MHz", json_real(g->clock_MHz));
        json_object_set_new(x, "note", json_string(g->note));
        json_array_append_new(arr, x);
    }
    json_t *o = json_object();
    json_object_set_new(o, "gpus", arr);
    return o;
}

/* report/verdict.c — see verdict.h. */
#include "report/verdict.h"

#include <stdio.h>

#include "util/units.h"

double mt_speedup(const mt_plan *p, double step_ms, int64_t base_batch, double base_step_ms) {
    if (!(step_ms > 0) || !(base_step_ms > 0)) return 0;
    double units = p->global_batch > 0 ? (double)p->global_batch : p->dp;
    double base_units = base_batch > 0 ? (double)base_batch : 1;
    return (units / step_ms) / (base_units / base_step_ms);
}

double mt_change_pct(double base, double run) { return base > 0 ? 100.0 * (run - base) / base : 0.0; }

void mt_hold_parts_of(const mt_sim_result *r, double mem_limit, mt_hold_parts *p) {
    *p = (mt_hold_parts){.mem_limit = mem_limit};
    /* ps summed over the GPUs -> ms per step per GPU */
    double k = 1e9 * (r->n_steps > 0 ? r->n_steps : 1) * (r->n_gpus > 0 ? r->n_gpus : 1);
    p->step_ms = (double)r->step_ps / 1e9 / (r->n_steps > 0 ? r->n_steps : 1);
    for (int32_t i = 0; i < r->n_gpus; i++) {
        const mt_gpu_stats *g = &r->gpus[i];
        p->exposed_ms += (double)g->exposed_ps / k;
        p->peer_ms += (double)g->peer_wait_ps / k;
        p->bubble_ms += (double)g->bubble_ps / k;
        p->host_ms += (double)g->host_wait_ps / k;
        if (g->peak_mem_bytes > p->mem_bytes) p->mem_bytes = g->peak_mem_bytes;
    }
}

/* The waiting parts, in the order a tie is broken, with the words that say each. */
static const struct {
    mt_hold_kind kind;
    const char *name, *what;
} PARTS[] = {
    {MT_HOLD_NETWORK, "network", "exposed communication (transfers that compute does not hide)"},
    {MT_HOLD_PEERS, "peers", "waiting for other GPUs at collectives (a slower or later GPU)"},
    {MT_HOLD_BUBBLE, "bubble", "the pipeline bubble (stages waiting for their neighbours' activations)"},
    {MT_HOLD_HOST, "host", "waiting for the host (the CPU launches kernels slower than the GPU runs them)"},
};

static double part_ms(const mt_hold_parts *p, mt_hold_kind k) {
    return k == MT_HOLD_NETWORK ? p->exposed_ms : k == MT_HOLD_PEERS ? p->peer_ms : k == MT_HOLD_BUBBLE ? p->bubble_ms
                                                                                                      : p->host_ms;
}

void mt_holdback_of(const mt_hold_parts *p, mt_holdback *out) {
    *out = (mt_holdback){.kind = MT_HOLD_COMPUTE, .name = "compute"};
    if (p->mem_limit > 0 && p->mem_bytes > p->mem_limit) {
        char have[32], lim[32];
        out->kind = MT_HOLD_MEMORY;
        out->name = "memory";
        snprintf(out->text, sizeof out->text, "What holds this plan back most: memory, %s per GPU over the %s the "
                 "GPU has: it does not fit, whatever its step time", mt_fmt_bytes(p->mem_bytes, have, sizeof have),
                 mt_fmt_bytes(p->mem_limit, lim, sizeof lim));
        return;
    }
    int best = -1;
    double best_ms = 0, waits = 0;
    for (int k = 0; k < (int)(sizeof PARTS / sizeof *PARTS); k++) {
        double ms = part_ms(p, PARTS[k].kind);
        waits += ms > 0 ? ms : 0;
        if (ms > best_ms) best = k, best_ms = ms;
    }
    double step = p->step_ms > 0 ? p->step_ms : 0;
    double share = step > 0 ? best_ms / step : 0;
    if (best >= 0 && share >= MT_HOLD_MIN_SHARE) {
        out->kind = PARTS[best].kind;
        out->name = PARTS[best].name;
        out->ms = best_ms;
        out->share = share > 1 ? 1 : share;
        snprintf(out->text, sizeof out->text, "What holds the step back most: %s, %.0f%% of the step (%.3f ms per GPU)",
                 PARTS[best].what, 100 * out->share, best_ms);
        return;
    }
    out->ms = step > waits ? step - waits : 0;
    out->share = step > 0 ? out->ms / step : 0;
    snprintf(out->text, sizeof out->text, "Nothing but compute holds the step back: no wait (network, other GPUs, "
             "pipeline bubble, host) reaches %.0f%% of the step (all of them together: %.0f%%)",
             100 * MT_HOLD_MIN_SHARE, step > 0 ? 100 * waits / step : 0.0);
}

json_t *mt_holdback_json(const mt_holdback *h) {
    return json_pack("{s:s, s:f, s:f, s:s}", "kind", h->name, "ms", h->ms, "share", h->share, "text", h->text);
}

/* report/replay.c — see replay.h. */
#include "report/replay.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/traced.h"
#include "util/units.h"

static void add(mt_replay *rp, double us, const char *fmt, ...) {
    if (rp->n_unexplained >= MT_REPLAY_ITEMS) return;
    mt_replay_item *it = &rp->unexplained[rp->n_unexplained++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->what, sizeof it->what, fmt, ap);
    va_end(ap);
    it->us = us;
}

/* The traced collective instances' times summed (us), and how many had one. */
static double traced_coll_us(const mt_trace *t, int32_t *n) {
    double us = 0;
    *n = 0;
    for (int32_t c = 0; c < t->n_colls; c++) {
        if (!t->colls[c].instance) continue;
        int64_t ns = mt_traced_coll_ns(t, c);
        if (ns < 0) continue;
        us += (double)ns / 1e3;
        (*n)++;
    }
    return us;
}

static int by_start(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* How long the traced collective instances ran beside one another (their summed lengths minus
 * the length of their union), in us: gloo's worker threads, NCCL on several streams. */
static double coll_overlap_us(const mt_trace *t) {
    int64_t (*iv)[2] = malloc((size_t)(t->n_colls > 0 ? t->n_colls : 1) * sizeof *iv);
    if (!iv) return 0;
    int32_t n = 0;
    int64_t sum = 0, uni = 0, end = INT64_MIN;
    for (int32_t c = 0; c < t->n_colls; c++)
        if (t->colls[c].instance && t->colls[c].dur_ns > 0) {
            iv[n][0] = t->colls[c].ts_ns, iv[n][1] = t->colls[c].ts_ns + t->colls[c].dur_ns;
            sum += t->colls[c].dur_ns;
            n++;
        }
    qsort(iv, (size_t)n, sizeof *iv, by_start);
    for (int32_t i = 0; i < n; i++) {
        int64_t b = iv[i][0] > end ? iv[i][0] : end;
        if (iv[i][1] > b) uni += iv[i][1] - b;
        if (iv[i][1] > end) end = iv[i][1];
    }
    free(iv);
    return (double)(sum - uni) / 1e3;
}

/* Where traced and replayed differ: operator time, host time, collectives, waiting for peers. */
static void explain(mt_replay *rp, const mt_trace *t, const mt_program *p, const mt_sim_result *r,
                    const mt_hostmodel *host, const mt_commfit *cf) {
    const mt_gpu_stats *g = &r->gpus[0];
    double steps = r->n_steps > 0 ? r->n_steps : 1;
    double op_us = (double)mt_trace_total_dev_ns(t) / 1e3, sim_op_us = (double)g->compute_ps / 1e6 / steps;
    if (fabs(op_us - sim_op_us) > 1e-3 * op_us)
        add(rp, op_us - sim_op_us, "operator time: traced %.0f us, replayed %.0f us", op_us, sim_op_us);
    double wall_us = (double)(t->step_end_ns - t->step_start_ns) / 1e3;
    if (host) {
        double sync_us = 0;
        for (int32_t i = 0; i < t->n_syncs; i++) sync_us += (double)t->syncs[i].dur_ns / 1e3;
        double sim_sync = (double)g->host_sync_ps / 1e6 / steps;
        add(rp, sync_us - sim_sync, "host waits (blocking calls): traced %.0f us, replayed %.0f us", sync_us,
            sim_sync);
    } else {
        double busy_us = t->has_device_time ? (double)t->dev_union_ns / 1e3 : op_us;
        double held_us = p ? (double)p->traced_hold_ps / 1e6 : 0;
        if (held_us > 0)
            add(rp, wall_us - busy_us - held_us, "host time outside the traced %.0f us of operator work: %.0f us, of "
                "which %.0f us replayed as the measured waits after %d gloo send/recv calls; the rest not replayed "
                "without a host model", busy_us, wall_us - busy_us, held_us, (int)p->traced_holds);
        else
            add(rp, wall_us - busy_us, "host time outside the traced %.0f us of operator work, not replayed without "
                "a host model: %.0f us", busy_us, wall_us - busy_us);
    }
    int32_t n;
    double coll_us = traced_coll_us(t, &n);
    if (n > 0) {
        double sim_comm = (double)g->comm_ps / 1e6 / steps;
        add(rp, coll_us - sim_comm, "collective %s: traced %.0f us, the network model %.0f us",
            t->has_device_time ? "kernels" : "calls", coll_us, sim_comm);
    }
    double ov = t->has_device_time ? 0 : coll_overlap_us(t); /* CPU: the calls are the collectives */
    if (ov > 0)
        add(rp, ov, "traced collectives ran beside one another for %.0f us (gloo's two worker threads; the "
            "simulation runs up to two of a group's collectives at once for a gloo job, sharing the links)", ov);
    if (cf && cf->tried && cf->n > 0) {
        double sim_peer = (double)g->peer_wait_ps / 1e6 / steps;
        add(rp, cf->peer_wait_us - sim_peer, "peer skew: traced collectives %.0f us above the fitted network, "
            "replayed peer waits %.0f us", cf->peer_wait_us, sim_peer);
    }
}

void mt_replay_of(const mt_trace *t, const mt_program *p, const mt_sim_result *r, const mt_hostmodel *host,
                  const mt_commfit *cf, int at_plan, mt_replay *out) {
    memset(out, 0, sizeof *out);
    if (!at_plan || !r || r->n_gpus < 1 || t->step_end_ns <= t->step_start_ns) return;
    out->on = 1;
    out->traced_ms = (double)(t->step_end_ns - t->step_start_ns) / 1e6;
    out->replayed_ms = (double)r->step_ps / 1e9 / (r->n_steps > 0 ? r->n_steps : 1);
    out->error_pct = 100 * (out->replayed_ms - out->traced_ms) / out->traced_ms;
    if (fabs(out->error_pct) > MT_REPLAY_TOL_PCT) explain(out, t, p, r, host, cf);
}

void mt_replay_measured(mt_replay *rp, double measured_ms, int calibrated) {
    if (!rp->on || !(measured_ms > 0)) return;
    rp->measured_ms = measured_ms;
    rp->calibrated = calibrated;
    if (!calibrated) return;
    rp->error_pct = 100 * (rp->replayed_ms - measured_ms) / measured_ms;
    rp->n_unexplained = 0;
}

void mt_replay_print(FILE *out, const mt_replay *rp, const mt_commfit *cf) {
    if (cf && cf->tried) {
        if (cf->on) {
            fprintf(out, "comm fit   --calibrate-comm (on for a traced plan): links %.3f GB/s, %.2f us, fitted to "
                    "%d traced collective%s (%.0f us traced, %.0f us fitted)\n", cf->bw_Bps / 1e9, cf->lat_ns / 1e3,
                    cf->n, mt_plural(cf->n), cf->traced_us, cf->fitted_us);
            for (int k = 0; k <= TRACE_COMM_OTHER; k++) {
                const mt_commfit_kind *x = &cf->kinds[k];
                if (!x->n) continue;
                fprintf(out, "           %-13s %3d: %.3f GB/s, %.2f us on their own; %.0f us traced, %.0f us "
                        "fitted\n", mt_trace_comm_name((trace_comm)k), x->n, x->bw_Bps / 1e9, x->lat_ns / 1e3,
                        x->traced_us, x->fitted_us);
            }
            fprintf(out, "           measured waiting for peers: %.0f us of traced collective time above the fit, "
                    "kept inside the fitted times (what-ifs carry it)\n", cf->peer_wait_us);
        } else {
            fprintf(out, "comm fit   off: %s\n", cf->why);
        }
    }
    if (!rp || !rp->on) return;
    if (rp->calibrated) {
        fprintf(out, "replay     measured %.3f ms without the profiler (traced %.3f ms under it), replayed %.3f ms "
                "(%+.1f %%)\n", rp->measured_ms, rp->traced_ms, rp->replayed_ms, rp->error_pct);
        return;
    }
    fprintf(out, "replay     traced %.3f ms, replayed %.3f ms (%+.1f %%)%s\n", rp->traced_ms, rp->replayed_ms,
            rp->error_pct, fabs(rp->error_pct) <= MT_REPLAY_TOL_PCT ? "" : ": unexplained (traced - replayed):");
    for (int32_t i = 0; i < rp->n_unexplained; i++)
        fprintf(out, "           %+.0f us  %s\n", rp->unexplained[i].us, rp->unexplained[i].what);
    double d = rp->measured_ms > 0 ? 100 * (rp->replayed_ms - rp->measured_ms) / rp->measured_ms : 0;
    if (fabs(d) > MT_REPLAY_TOL_PCT)
        fprintf(out, "           but measured %.3f ms without the profiler (meta.json): the replay is %+.1f %% off "
                "it, the profiler's share of the traced times (--calibrate takes it out)\n", rp->measured_ms, d);
}

json_t *mt_replay_json(const mt_replay *rp) {
    if (!rp || !rp->on) return json_null();
    json_t *u = json_array();
    for (int32_t i = 0; i < rp->n_unexplained; i++)
        json_array_append_new(u, json_pack("{s:s, s:f}", "what", rp->unexplained[i].what, "us", rp->unexplained[i].us));
    return json_pack("{s:f, s:f, s:f, s:o, s:o, s:b}", "traced_ms", rp->traced_ms, "replayed_ms", rp->replayed_ms,
                     "error_pct", rp->error_pct, "unexplained", u, "measured_ms",
                     rp->measured_ms > 0 ? json_real(rp->measured_ms) : json_null(), "calibrated", rp->calibrated);
}

json_t *mt_commfit_json(const mt_commfit *cf) {
    if (!cf || !cf->tried) return json_null();
    if (!cf->on) return json_pack("{s:b, s:s}", "on", 0, "why", cf->why);
    json_t *k = json_object();
    for (int i = 0; i <= TRACE_COMM_OTHER; i++) {
        const mt_commfit_kind *x = &cf->kinds[i];
        if (!x->n) continue;
        json_object_set_new(k, mt_trace_comm_name((trace_comm)i),
                            json_pack("{s:i, s:f, s:f, s:f, s:f}", "n", (int)x->n, "bw_GBps", x->bw_Bps / 1e9, "lat_us",
                                      x->lat_ns / 1e3, "traced_us", x->traced_us, "fitted_us", x->fitted_us));
    }
    return json_pack("{s:b, s:f, s:f, s:i, s:f, s:f, s:f, s:o, s:s}", "on", 1, "bw_GBps", cf->bw_Bps / 1e9, "lat_us",
                     cf->lat_ns / 1e3, "n", (int)cf->n, "traced_us", cf->traced_us, "fitted_us", cf->fitted_us,
                     "peer_wait_us", cf->peer_wait_us, "kinds", k, "note",
                     "link bandwidth and latency fitted to the traced collective times (--calibrate-comm); measured "
                     "waiting for peers stays inside them, so what-ifs carry it");
}

int mt_replay_line(const mt_replay *rp, char *buf, size_t len) {
    if (!rp || !rp->on) return snprintf(buf, len, "%s", "");
    if (rp->calibrated)
        return snprintf(buf, len, "measured %.3f ms (traced %.3f ms under the profiler), replayed %.3f ms (%+.1f %%)",
                        rp->measured_ms, rp->traced_ms, rp->replayed_ms, rp->error_pct);
    int n = snprintf(buf, len, "traced %.3f ms, replayed %.3f ms (%+.1f %%)", rp->traced_ms, rp->replayed_ms,
                     rp->error_pct);
    for (int32_t i = 0; i < rp->n_unexplained && n >= 0 && (size_t)n < len; i++)
        n += snprintf(buf + n, len - (size_t)n, "%s %+.0f us %s", i ? ";" : "; unexplained:", rp->unexplained[i].us,
                      rp->unexplained[i].what);
    return n;
}

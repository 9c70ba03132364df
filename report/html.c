/* report/html.c — see html.h. Writes straight to the file; the only allocations are the
 * timeline's span selection and its rank-to-row map. */
#include "report/html.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/describe.h"
#include "report/experts.h"
#include "util/outpath.h"
#include "util/units.h"

enum { GPU_ROWS_MAX = 64, LAYER_ROWS_MAX = 300, GANTT_GPUS_MAX = 64, NAME_SHOWN = 40 };

void mt_html_esc(FILE *f, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static void esc(FILE *f, const char *s) { mt_html_esc(f, s); }

/* At most max bytes of s, cut on a UTF-8 character boundary, escaped; "…" when cut. */
static void esc_short(FILE *f, const char *s, size_t max) {
    size_t n = strlen(s);
    if (n <= max) {
        esc(f, s);
        return;
    }
    char buf[NAME_SHOWN + 8];
    if (max > NAME_SHOWN) max = NAME_SHOWN;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80) max--;
    memcpy(buf, s, max);
    buf[max] = '\0';
    esc(f, buf);
    fputs("&#8230;", f);
}

/* 1, 2 or 5 times a power of ten, about range / n. */
static double nice_step(double range, int n) {
    if (!(range > 0)) return 1;
    double raw = range / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static const char CSS[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px}"
    "table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;border-bottom:1px solid #ddd;"
    "text-align:right}td:first-child,th:first-child,td.l,th.l{text-align:left}"
    "#summary td{text-align:left}#summary td:first-child{color:#666}"
    "tr.over td{color:#a00}tr.skip td{color:#888}.note{color:#666;font-size:13px}"
    "svg text{font-size:11px;fill:#333}.grid{stroke:#e4e4e4}.axis{stroke:#999}"
    ".k-comp,.c-fwd{fill:#4e79a7}.k-exp,.coll{fill:#f28e2b}.k-bub,.wait-pp{fill:#e15759}"
    ".k-idle{fill:#d4cfcb}.k-str{fill:#a0cbe8}.k-host,.host{fill:#9c755f}.c-bwd{fill:#59a14f}.c-opt{fill:#b07aa1}.c-oth{fill:#76b7b2}"
    ".send{fill:#edc948}.wait{fill:#ff9d9a}.k-peer,.wait-peer{fill:#8c564b}.bar{fill:#4e79a7}.bar.over{fill:#d4a5a5}"
    ".line{fill:none;stroke:#4e79a7;stroke-width:2}.pt{fill:#4e79a7}"
    ".lg rect{stroke:none}#gantt{cursor:grab;user-select:none}"
    ".tools button{margin-right:6px}";

static void legend(FILE *f, double x, double y, const char *const *cls, const char *const *names, int n) {
    fprintf(f, "<g class=\"lg\">");
    for (int i = 0; i < n; i++) {
        fprintf(f, "<rect class=\"%s\" x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\"/>", cls[i], x, y);
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">%s</text>", x + 16, y + 10, names[i]);
        x += 30 + 6.5 * (double)strlen(names[i]);
    }
    fprintf(f, "</g>");
}

/* Vertical grid lines and labels every nice step of 0..max (in ms) across [x0, x0 + w]. */
static void ms_axis(FILE *f, double x0, double w, double y0, double y1, double max_ms) {
    double st = nice_step(max_ms, 6);
    for (double v = 0; v <= max_ms * (1 + 1e-9); v += st) {
        double x = x0 + v / max_ms * w;
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x, x, y0, y1);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>", x, y1 + 13, v);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">ms</text>", x0 + w, y1 + 26);
}

static void summary(FILE *f, const mt_html_report *r) {
    fprintf(f, "<h2>Summary</h2>\n<table id=\"summary\">");
    for (int32_t i = 0; i < r->n_summary; i++) {
        fprintf(f, "<tr><td>");
        esc(f, r->summary[i].key);
        fprintf(f, "</td><td>");
        esc(f, r->summary[i].value);
        fprintf(f, "</td></tr>");
    }
    fprintf(f, "</table>\n");
}

/* The memory column: the row's peak per GPU against the limit ("fits: 38% of 80.00 GB", "over the
 * 80.00 GB limit"), or "limit unknown" (no GPU type, no --gpu-mem). */
static void mem_words(FILE *f, const mt_html_row *w, double limit) {
    char lim[32];
    if (limit <= 0) fprintf(f, "limit unknown");
    else if (w->over_mem) fprintf(f, "over the %s limit", mt_fmt_bytes(limit, lim, sizeof lim));
    else fprintf(f, "fits: %.0f%% of %s", 100 * w->mem_bytes / limit, mt_fmt_bytes(limit, lim, sizeof lim));
}

static void rows_table(FILE *f, const mt_html_report *r) {
    int plans = r->rows_kind == MT_HTML_PLANS;
    fprintf(f, "<table id=\"%s\"><tr>%s<th class=\"l\">", plans ? "plans" : "sweep", plans ? "<th>#</th>" : "");
    esc(f, plans ? "plan" : r->sweep_name);
    fprintf(f, "</th><th>step ms</th><th>speed-up</th><th>samples/s</th><th>exposed comm ms</th>"
               "<th>peer wait ms</th><th>host wait ms</th><th>bubble ms</th><th>peak mem GB</th><th class=\"l\">memory</th></tr>\n");
    int rank = 0;
    for (int32_t i = 0; i < r->n_rows; i++) {
        const mt_html_row *w = &r->rows[i];
        if (w->skipped) continue;
        fprintf(f, "<tr%s>", w->over_mem ? " class=\"over\"" : "");
        if (plans) fprintf(f, "<td>%d</td>", ++rank);
        fprintf(f, "<td class=\"l\">");
        esc(f, w->label);
        fprintf(f, "</td><td>%.3f</td><td>%.2f</td>", w->step_ms, w->speedup);
        if (w->samples_per_s >= 0) fprintf(f, "<td>%.1f</td>", w->samples_per_s);
        else fprintf(f, "<td>-</td>");
        fprintf(f, "<td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.2f</td><td class=\"l\">", w->exposed_ms,
                w->peer_ms, w->host_wait_ms, w->bubble_ms, w->mem_bytes / 1e9);
        mem_words(f, w, r->mem_limit);
        fprintf(f, "</td></tr>\n");
    }
    for (int32_t i = 0; i < r->n_rows; i++) {
        const mt_html_row *w = &r->rows[i];
        if (!w->skipped) continue;
        fprintf(f, "<tr class=\"skip\">%s<td class=\"l\">", plans ? "<td>-</td>" : "");
        esc(f, w->label);
        fprintf(f, "</td><td class=\"l\" colspan=\"9\">%s: ", w->pruned ? "pruned" : "skipped");
        esc(f, w->skipped);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n");
}

/* Horizontal step-time bars, best first. */
static void compare_chart(FILE *f, const mt_html_report *r) {
    double max = 0;
    int32_t n = 0;
    for (int32_t i = 0; i < r->n_rows; i++)
        if (!r->rows[i].skipped) n++, max = fmax(max, r->rows[i].step_ms);
    if (n == 0 || !(max > 0)) return;
    const double L = 230, W = 640, top = 28, rowh = 20;
    double h = top + n * rowh + 34;
    fprintf(f, "<svg id=\"compare-chart\" width=\"%.0f\" height=\"%.0f\">", L + W + 90, h);
    static const char *const cls[] = {"bar", "bar over"}, *const names[] = {"step time", "over the memory limit"};
    legend(f, L, 4, cls, names, 2);
    ms_axis(f, L, W, top - 4, top + n * rowh, max);
    int32_t k = 0;
    for (int32_t i = 0; i < r->n_rows; i++) {
        const mt_html_row *w = &r->rows[i];
        if (w->skipped) continue;
        double y = top + k++ * rowh, bw = w->step_ms / max * W;
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", L - 6, y + 13);
        esc_short(f, w->label, NAME_SHOWN);
        fprintf(f, "</text><rect class=\"bar%s\" x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\"><title>",
                w->over_mem ? " over" : "", L, y + 2, bw, rowh - 5);
        esc(f, w->label);
        fprintf(f, ": %.3f ms, %.2fx</title></rect>", w->step_ms, w->speedup);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%.2f ms</text>", L + bw + 4, y + 13, w->step_ms);
    }
    fprintf(f, "</svg>\n");
}

/* Step time against the swept value, values evenly spaced in sweep order. */
static void sweep_chart(FILE *f, const mt_html_report *r) {
    double max = 0;
    for (int32_t i = 0; i < r->n_rows; i++)
        if (!r->rows[i].skipped) max = fmax(max, r->rows[i].step_ms);
    if (r->n_rows == 0 || !(max > 0)) return;
    const double L = 70, W = 680, top = 16, H = 240;
    double st = nice_step(max, 5), ymax = ceil(max / st) * st;
    fprintf(f, "<svg id=\"sweep-chart\" width=\"%.0f\" height=\"%.0f\">", L + W + 40, top + H + 70);
    for (double v = 0; v <= ymax * (1 + 1e-9); v += st) {
        double y = top + H - v / ymax * H;
        fprintf(f, "<line class=\"grid\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\"/>", L, L + W, y, y);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g</text>", L - 6, y + 4, v);
    }
    fprintf(f, "<text x=\"12\" y=\"%.0f\" transform=\"rotate(-90 12 %.0f)\" text-anchor=\"middle\">step ms</text>",
            top + H / 2, top + H / 2);
    double dx = r->n_rows > 1 ? W / (r->n_rows - 1) : 0;
    fprintf(f, "<polyline class=\"line\" points=\"");
    for (int32_t i = 0; i < r->n_rows; i++)
        if (!r->rows[i].skipped)
            fprintf(f, "%.1f,%.1f ", L + (r->n_rows > 1 ? i * dx : W / 2), top + H - r->rows[i].step_ms / ymax * H);
    fprintf(f, "\"/>");
    for (int32_t i = 0; i < r->n_rows; i++) {
        const mt_html_row *w = &r->rows[i];
        double x = L + (r->n_rows > 1 ? i * dx : W / 2);
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"end\" transform=\"rotate(-35 %.1f %.0f)\">", x,
                top + H + 16, x, top + H + 16);
        esc_short(f, w->label, NAME_SHOWN);
        fprintf(f, "</text>");
        if (w->skipped) continue;
        fprintf(f, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>", x, top + H - w->step_ms / ymax * H);
        esc(f, r->sweep_name);
        fprintf(f, " ");
        esc(f, w->label);
        fprintf(f, ": %.3f ms, %.2fx</title></circle>", w->step_ms, w->speedup);
    }
    fprintf(f, "</svg>\n");
}

static double ms(mt_time_ps t) { return (double)t / 1e9; }

static void gpu_bars(FILE *f, const mt_sim_result *res) {
    int32_t n = res->n_gpus < GPU_ROWS_MAX ? res->n_gpus : GPU_ROWS_MAX;
    double max = ms(res->step_ps);
    if (n == 0 || !(max > 0)) return;
    const double L = 70, W = 760, top = 28, rowh = 16;
    fprintf(f, "<svg id=\"gpu-bars\" width=\"%.0f\" height=\"%.0f\">", L + W + 20, top + n * rowh + 34);
    static const char *const cls[] = {"k-comp", "k-str", "k-host", "k-exp", "k-peer", "k-bub", "k-idle"},
                              *const names[] = {"compute", "stretch", "host wait", "exposed comm", "peer wait", "bubble",
                                                "idle"};
    legend(f, L, 4, cls, names, 7);
    ms_axis(f, L, W, top - 4, top + n * rowh, max);
    for (int32_t i = 0; i < n; i++) {
        const mt_gpu_stats *g = &res->gpus[i];
        double y = top + i * rowh, x = L;
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">GPU %d</text>", L - 6, y + 11, g->rank);
        const mt_time_ps part[7] = {g->compute_ps, g->stretch_ps, g->host_wait_ps, g->exposed_ps, g->peer_wait_ps,
                                    g->bubble_ps, g->idle_ps};
        for (int k = 0; k < 7; k++) {
            double w = ms(part[k]) / max * W;
            fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\"><title>GPU %d "
                       "(dp %d, stage %d, tp %d) %s: %.3f ms</title></rect>",
                    cls[k], x, y + 2, w, rowh - 4, g->rank, g->dp, g->stage, g->tp, names[k], ms(part[k]));
            x += w;
        }
    }
    fprintf(f, "</svg>\n");
    if (res->n_gpus > n) fprintf(f, "<p class=\"note\">GPUs 0-%d of %d shown.</p>\n", n - 1, res->n_gpus);
}

static void layer_bars(FILE *f, const mt_program *p, const mt_sim_result *res) {
    double max = 0;
    int32_t n = 0, shown = 0;
    for (int32_t l = 0; l < res->n_layers; l++) {
        if (res->layer_compute_ps[l] <= 0 && res->layer_comm_ps[l] <= 0) continue;
        n++;
        max = fmax(max, fmax(res->layer_compute_ps[l], res->layer_comm_ps[l]) / 1e9);
    }
    if (n == 0 || !(max > 0)) return;
    int32_t rows = n < LAYER_ROWS_MAX ? n : LAYER_ROWS_MAX;
    const double L = 290, W = 560, top = 28, rowh = 18;
    fprintf(f, "<svg id=\"layer-bars\" width=\"%.0f\" height=\"%.0f\">", L + W + 20, top + rows * rowh + 34);
    static const char *const cls[] = {"k-comp", "k-exp"},
                              *const names[] = {"compute (all micro-batches)", "collectives caused"};
    legend(f, L, 4, cls, names, 2);
    ms_axis(f, L, W, top - 4, top + rows * rowh, max);
    for (int32_t l = 0; l < res->n_layers && shown < rows; l++) {
        double c = res->layer_compute_ps[l] / 1e9, m = res->layer_comm_ps[l] / 1e9;
        if (c <= 0 && m <= 0) continue;
        double y = top + shown++ * rowh;
        const char *name = *mt_layer_name(p, l) ? mt_layer_name(p, l) : "?";
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", L - 6, y + 12);
        esc_short(f, name, NAME_SHOWN);
        fprintf(f, "<title>");
        esc(f, name);
        fprintf(f, "</title></text>");
        fprintf(f, "<rect class=\"k-comp\" x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" height=\"7\"><title>", L, y + 2,
                c / max * W);
        esc(f, name);
        fprintf(f, " compute %.3f ms</title></rect>", c);
        fprintf(f, "<rect class=\"k-exp\" x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" height=\"7\"><title>", L, y + 9,
                m / max * W);
        esc(f, name);
        fprintf(f, " collectives %.3f ms</title></rect>", m);
    }
    fprintf(f, "</svg>\n");
    if (n > rows) fprintf(f, "<p class=\"note\">The first %d of %d layers with work are shown.</p>\n", rows, n);
}

/* ---- timeline ----------------------------------------------------------------------------- */

static const char *span_class(const mt_span *s) {
    switch (s->kind) {
    case MT_SPAN_COMPUTE:
        if (!s->task) return "c-oth";
        switch (s->task->phase) {
        case TRACE_PHASE_FORWARD: return "c-fwd";
        case TRACE_PHASE_BACKWARD: return "c-bwd";
        case TRACE_PHASE_OPTIMIZER: return "c-opt";
        default: return "c-oth";
        }
    case MT_SPAN_COLL: return "coll";
    case MT_SPAN_SEND: return "send";
    case MT_SPAN_HOST: return "host";
    case MT_SPAN_PEER: return "wait-peer";
    case MT_SPAN_BUBBLE: return "wait-pp";
    default: return "wait";
    }
}

/* The hover text of one span (escaped): describe.h's name, for compute the ops and layer. */
static void span_title(FILE *f, const mt_program *p, const mt_span *s) {
    const mt_task *k = s->task;
    char buf[160];
    fprintf(f, "GPU %d ", s->rank);
    if (s->kind == MT_SPAN_COMPUTE) {
        fprintf(f, "compute %s", mt_trace_phase_name((trace_phase)k->phase));
        if (k->item_count > 0) {
            const mt_item *it = &mt_rank_stage(p, s->rank)->items[k->item_first];
            fprintf(f, ", %d op%s from ", k->item_count, k->item_count > 1 ? "s" : "");
            esc(f, p->trace ? p->trace->ops[it->op].name : "?");
            if (*mt_layer_name(p, it->layer)) {
                fprintf(f, " (");
                esc(f, mt_layer_name(p, it->layer));
                fprintf(f, ")");
            }
        }
    } else {
        esc(f, mt_span_name(p, s, 0, buf, sizeof buf));
        if (s->kind == MT_SPAN_COLL && *mt_layer_name(p, k->layer)) {
            fprintf(f, " for ");
            esc(f, mt_layer_name(p, k->layer));
        }
    }
    if (k->mb >= 0 && s->kind != MT_SPAN_SEND && k->kind != MT_TASK_RECV)
        fprintf(f, ", micro-batch %d", k->mb);
    fprintf(f, ": %.3f-%.3f ms (%.3f ms)", ms(s->start), ms(s->end), ms(s->end - s->start));
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static mt_status gantt(FILE *f, const mt_html_report *r, mt_error *err) {
    const mt_recorder *rec = r->rec;
    const mt_span_filter *gpus = r->gpus ? r->gpus : &rec->filter;
    const mt_sim_result *res = r->res;
    int64_t cap = r->max_spans > 0 ? r->max_spans : 20000;
    int32_t *row = malloc(sizeof *row * (size_t)(res->n_gpus > 0 ? res->n_gpus : 1));
    int64_t *dur = malloc(sizeof *dur * (size_t)(rec->n_spans > 0 ? rec->n_spans : 1));
    if (!row || !dur) {
        free(row);
        free(dur);
        return mt_fail(err, MT_ENOMEM, "out of memory writing the HTML timeline");
    }
    /* Rows: the GPUs the recorder kept, in rank order, at most GANTT_GPUS_MAX. */
    int32_t n_rows = 0, kept = 0, first = -1, last = -1;
    for (int32_t g = 0; g < res->n_gpus; g++) {
        row[g] = -1;
        if (!mt_span_filter_rank(gpus, g)) continue;
        kept++;
        if (n_rows >= GANTT_GPUS_MAX) continue;
        row[g] = n_rows++;
        if (first < 0) first = g;
        last = g;
    }
    /* Spans on those rows; over the cap, the longest are drawn (ties: the earliest recorded). */
    int64_t n = 0;
    for (int64_t i = 0; i < rec->n_spans; i++) {
        const mt_span *s = &rec->spans[i];
        if (s->rank >= 0 && s->rank < res->n_gpus && row[s->rank] >= 0 && s->end > s->start)
            dur[n++] = s->end - s->start;
    }
    int64_t cutoff = 0, dropped = 0, at_cutoff = 0;
    if (n > cap) {
        qsort(dur, (size_t)n, sizeof *dur, cmp_i64);
        cutoff = dur[n - cap];
        for (int64_t i = n - cap; i < n; i++) at_cutoff += dur[i] == cutoff;
        dropped = n - cap;
    }
    free(dur);

    const double L = 70, W = 1080, top = 24, rowh = 30;
    double end_us = (double)res->step_ps / 1e6, H = n_rows * rowh;
    if (!(end_us > 0)) end_us = 1;
    fprintf(f, "<div class=\"tools\"><button id=\"gantt-in\">zoom in</button><button id=\"gantt-out\">zoom out"
               "</button><button id=\"gantt-reset\">reset</button><span class=\"note\" id=\"gantt-range\"></span>"
               "</div>\n");
    fprintf(f, "<svg id=\"gantt\" width=\"%.0f\" height=\"%.0f\" data-left=\"%.0f\" data-width=\"%.0f\" "
               "data-top=\"%.0f\" data-plot-height=\"%.0f\" data-end-us=\"%.6f\">",
            L + W + 10, top + H + 40, L, W, top, H, end_us);
    fprintf(f, "<defs><clipPath id=\"gantt-clip\"><rect x=\"%.0f\" y=\"0\" width=\"%.0f\" height=\"%.0f\"/>"
               "</clipPath></defs>", L, W, top + H + 4);
    for (int32_t g = 0; g < res->n_gpus; g++) {
        if (row[g] < 0) continue;
        double y = top + row[g] * rowh;
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">GPU %d</text>", L - 6, y + 17, g);
        fprintf(f, "<line class=\"grid\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\"/>", L, L + W, y + rowh - 2,
                y + rowh - 2);
    }
    fprintf(f, "<g id=\"gantt-axis\"></g><g clip-path=\"url(#gantt-clip)\"><g id=\"gantt-plot\" "
               "transform=\"translate(%.0f,0) scale(%.9g,1)\">", L, W / end_us);
    int64_t drawn = 0;
    for (int64_t i = 0; i < rec->n_spans; i++) {
        const mt_span *s = &rec->spans[i];
        if (s->rank < 0 || s->rank >= res->n_gpus || row[s->rank] < 0 || s->end <= s->start) continue;
        int64_t d = s->end - s->start;
        if (d < cutoff || (d == cutoff && at_cutoff-- <= 0)) continue;
        int comm_lane = s->kind == MT_SPAN_COLL || s->kind == MT_SPAN_SEND;
        double y = top + row[s->rank] * rowh + (comm_lane ? 14 : 2);
        fprintf(f, "<rect class=\"%s\" x=\"%.6f\" y=\"%.0f\" width=\"%.6f\" height=\"11\"><title>", span_class(s),
                (double)s->start / 1e6, y, (double)d / 1e6);
        span_title(f, r->prog, s);
        fprintf(f, "</title></rect>\n");
        drawn++;
    }
    fprintf(f, "</g></g>");
    static const char *const cls[] = {"c-fwd", "c-bwd", "c-opt", "host", "wait", "wait-peer", "wait-pp", "coll",
                                      "send"},
                              *const names[] = {"forward", "backward", "optimizer", "host wait", "wait (comm)",
                                                "wait (peers)", "wait (bubble)", "collective", "pipeline send"};
    legend(f, L - 60, top + H + 22, cls, names, 9);
    fprintf(f, "</svg>\n<p class=\"note\">Each GPU has two lanes: the compute stream (compute, and waits "
               "for its host, communication, peers or pipeline data while it is blocked) above, its collectives "
               "and pipeline sends below. %lld span%s drawn.",
            (long long)drawn, mt_plural(drawn));
    if (n_rows < res->n_gpus)
        fprintf(f, " Only %d of the run's %d GPUs are drawn (ranks %d to %d%s), to keep the page small.",
                n_rows, res->n_gpus, first, last, n_rows < kept ? "; at most 64" : "");
    if (dropped > 0)
        fprintf(f, " %lld span%s shorter than %.3f us %s not drawn (the timeline keeps the %lld longest).",
                (long long)dropped, mt_plural(dropped), (double)cutoff / 1e6, dropped == 1 ? "is" : "are",
                (long long)cap);
    if (rec->failed) fprintf(f, " The recorder ran out of memory: later spans are missing.");
    fprintf(f, "</p>\n");
    free(row);
    return MT_OK;
}

/* Zoom and pan of #gantt: the rects live in #gantt-plot in microseconds; only the group's
 * transform and the axis change. */
static const char SCRIPT[] =
    "(function(){\n"
    "var svg=document.getElementById('gantt');if(!svg)return;\n"
    "var NS=svg.namespaceURI,plot=document.getElementById('gantt-plot'),axis=document.getElementById('gantt-axis');\n"
    "var L=+svg.getAttribute('data-left'),W=+svg.getAttribute('data-width'),top=+svg.getAttribute('data-top');\n"
    "var H=+svg.getAttribute('data-plot-height'),T=+svg.getAttribute('data-end-us'),t0=0,t1=T,drag=null;\n"
    "function nice(x){var p=Math.pow(10,Math.floor(Math.log10(x))),m=x/p;return(m<1.5?1:m<3.5?2:m<7.5?5:10)*p;}\n"
    "function el(n,a,txt){var e=document.createElementNS(NS,n);for(var k in a)e.setAttribute(k,a[k]);"
    "if(txt)e.textContent=txt;axis.appendChild(e);}\n"
    "function draw(){var k=W/(t1-t0);plot.setAttribute('transform','translate('+(L-t0*k)+',0) scale('+k+',1)');\n"
    " while(axis.firstChild)axis.removeChild(axis.firstChild);\n"
    " var st=nice((t1-t0)/8),u=(t1-t0)>=2000?1000:1,dec=Math.max(0,-Math.floor(Math.log10(st/u)+1e-9));\n"
    " for(var v=Math.ceil(t0/st)*st;v<=t1+1e-9*T;v+=st){var x=L+(v-t0)*k;\n"
    "  el('line',{'class':'grid',x1:x,x2:x,y1:top-4,y2:top+H});\n"
    "  el('text',{x:x,y:top-8,'text-anchor':'middle'},(v/u).toFixed(dec)+(u>1?' ms':' us'));}\n"
    " document.getElementById('gantt-range').textContent=' showing '+(t0/1000).toFixed(3)+' to '"
    "+(t1/1000).toFixed(3)+' ms of '+(T/1000).toFixed(3)+' ms (wheel: zoom, drag: pan, double-click: reset)';}\n"
    "function zoom(f,at){var s=Math.min(T,Math.max((t1-t0)*f,T*1e-7));t0=at-(at-t0)*s/(t1-t0);\n"
    " if(t0<0)t0=0;t1=t0+s;if(t1>T){t1=T;t0=T-s;}draw();}\n"
    "function at(e){var r=svg.getBoundingClientRect(),x=e.clientX-r.left;\n"
    " return t0+Math.min(1,Math.max(0,(x-L)/W))*(t1-t0);}\n"
    "svg.addEventListener('wheel',function(e){e.preventDefault();zoom(e.deltaY<0?0.8:1.25,at(e));},{passive:false});\n"
    "svg.addEventListener('mousedown',function(e){drag={x:e.clientX,t0:t0,t1:t1};svg.style.cursor='grabbing';});\n"
    "window.addEventListener('mousemove',function(e){if(!drag)return;var d=(drag.x-e.clientX)/W*(drag.t1-drag.t0);\n"
    " d=Math.max(-drag.t0,Math.min(T-drag.t1,d));t0=drag.t0+d;t1=drag.t1+d;draw();});\n"
    "window.addEventListener('mouseup',function(){drag=null;svg.style.cursor='';});\n"
    "svg.addEventListener('dblclick',function(){t0=0;t1=T;draw();});\n"
    "document.getElementById('gantt-in').onclick=function(){zoom(0.5,(t0+t1)/2);};\n"
    "document.getElementById('gantt-out').onclick=function(){zoom(2,(t0+t1)/2);};\n"
    "document.getElementById('gantt-reset').onclick=function(){t0=0;t1=T;draw();};\n"
    "draw();})();\n";

mt_status mt_html_write(const char *path, const mt_html_report *r, mt_error *err) {
    mt_out_file out; /* a temporary renamed onto path at the end (util/outpath.h) */
    MT_CHECK(mt_out_open(&out, path, "the HTML report", err));
    FILE *f = out.f;
    const char *title = r->title ? r->title : "mitosis report";
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    esc(f, title);
    fprintf(f, "</title><style>%s</style></head>\n<body>\n<h1>", CSS);
    esc(f, title);
    fprintf(f, "</h1>\n");
    summary(f, r);
    if (r->rows_kind == MT_HTML_PLANS) {
        fprintf(f, "<h2>Plans, fastest first</h2>\n");
        rows_table(f, r);
        compare_chart(f, r);
    } else if (r->rows_kind == MT_HTML_SWEEP) {
        fprintf(f, "<h2>Sweep of ");
        esc(f, r->sweep_name);
        fprintf(f, "</h2>\n");
        rows_table(f, r);
        sweep_chart(f, r);
    }
    mt_status rc = MT_OK;
    if (r->prog && r->res) {
        const char *d = r->detail_label ? r->detail_label : "";
        fprintf(f, "<h2>Per GPU: ");
        esc(f, d);
        fprintf(f, "</h2>\n<p class=\"note\">compute + stretch (compute slowed by collectives "
                   "beside it) + host wait + exposed communication + peer wait + bubble + idle = step time on every GPU "
                   "(docs/attribution.md).</p>\n");
        gpu_bars(f, r->res);
        fprintf(f, "<h2>Per layer: ");
        esc(f, d);
        fprintf(f, "</h2>\n");
        layer_bars(f, r->prog, r->res);
        mt_experts_html(f, r->prog); /* MoE traces only */
        if (r->rec) {
            fprintf(f, "<h2>Timeline: ");
            esc(f, d);
            fprintf(f, "</h2>\n");
            rc = gantt(f, r, err);
        }
    }
    fprintf(f, "<script>\n%s</script>\n</body></html>\n", SCRIPT);
    return mt_out_close(&out, rc, err);
}

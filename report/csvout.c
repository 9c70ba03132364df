/* report/csvout.c — see csvout.h. */
#include "report/csvout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>

#include "util/fileio.h"

/* One output file: its path (for messages) and the column of the row being written. */
typedef struct cw {
    FILE *f;
    char path[4096];
    int col;
} cw;

static void cw_sep(cw *w) {
    if (w->col++) fputc(',', w->f);
}

static void cw_text(cw *w, const char *s) {
    cw_sep(w);
    csv_fwrite(w->f, s, strlen(s));
}

static void cw_num(cw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cw_num(cw *w, const char *fmt, ...) {
    va_list ap;
    cw_sep(w);
    va_start(ap, fmt);
    vfprintf(w->f, fmt, ap);
    va_end(ap);
}

/* v / unit with `decimals` exact digits (unit = 10^decimals): picoseconds as us or ms. */
static void cw_fixed(cw *w, int64_t v, int64_t unit, int decimals) {
    const char *sign = v < 0 ? "-" : "";
    if (v < 0) v = -v;
    cw_num(w, "%s%lld.%0*lld", sign, (long long)(v / unit), decimals, (long long)(v % unit));
}
static void cw_us(cw *w, mt_time_ps t) { cw_fixed(w, t, 1000000, 6); }
static void cw_ms(cw *w, mt_time_ps t) { cw_fixed(w, t, 1000000000, 9); }

static void cw_end(cw *w) {
    fputc('\n', w->f);
    w->col = 0;
}

static mt_status cw_open(cw *w, const char *dir, const char *name, const char *const *cols, mt_error *err) {
    memset(w, 0, sizeof *w);
    int n = snprintf(w->path, sizeof w->path, "%s/%s", dir, name);
    if (n < 0 || n >= (int)sizeof w->path) return mt_fail(err, MT_EIO, "CSV directory name '%s' is too long", dir);
    if (!(w->f = fopen(w->path, "w")))
        return mt_fail(err, MT_EIO, "cannot write '%s': %s (choose a writable directory)", w->path, strerror(errno));
    for (int i = 0; cols[i]; i++) cw_text(w, cols[i]);
    cw_end(w);
    return MT_OK;
}

static mt_status cw_close(cw *w, mt_status rc, mt_error *err) {
    if (!w->f) return rc;
    int bad = ferror(w->f);
    int e = errno;
    if (fclose(w->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    w->f = NULL;
    if (rc == MT_OK && bad)
        return mt_fail(err, MT_EIO, "cannot write '%s': %s (check the disk space or choose another directory)",
                       w->path, e ? strerror(e) : "write error");
    return rc;
}

const char *const MT_CSV_FILES[] = {"ops.csv", "gpus.csv", "layers.csv", "links.csv", "collectives.csv", NULL};

mt_status mt_csv_prepare_dir(const char *dir, mt_error *err) {
    return mt_prepare_out_dir(dir, "CSV directory", err);
}

/* ---- the five tables ------------------------------------------------------------------------ */

static void ops_rows(cw *w, const mt_report_src *src) {
    const mt_program *p = src->prog;
    const mt_recorder *rec = src->rec;
    char name[160];
    for (int64_t i = 0; rec && i < rec->n_spans; i++) {
        const mt_span *sp = &rec->spans[i];
        const mt_task *k = sp->task;
        if (!mt_span_filter_rank(&rec->filter, sp->rank)) continue; /* sends are kept for their receivers */
        if (sp->kind == MT_SPAN_COMPUTE) {
            mt_item_walk it;
            const mt_item *item;
            mt_time_ps s, e;
            mt_item_walk_init(&it, p, sp);
            while (mt_item_walk_next(&it, &item, &s, &e)) {
                const trace_op *op = &p->trace->ops[item->op];
                cw_num(w, "%d", sp->rank);
                cw_text(w, "compute");
                cw_text(w, op->name ? op->name : "");
                cw_text(w, mt_layer_name(p, item->layer));
                cw_text(w, mt_trace_phase_name(op->phase));
                if (k->mb >= 0) cw_num(w, "%d", k->mb);
                else cw_text(w, "");
                cw_us(w, s);
                cw_us(w, e);
                cw_us(w, e - s);
                cw_end(w);
            }
            continue;
        }
        cw_num(w, "%d", sp->rank);
        cw_text(w, mt_stream_name(mt_span_stream(sp)));
        cw_text(w, mt_span_name(p, sp, 0, name, sizeof name));
        cw_text(w, k->kind == MT_TASK_COLL ? mt_layer_name(p, k->layer) : "");
        cw_text(w, mt_span_phase(sp));
        if (k->mb >= 0) cw_num(w, "%d", k->mb);
        else cw_text(w, "");
        cw_us(w, sp->start);
        cw_us(w, sp->end);
        cw_us(w, sp->end - sp->start);
        cw_end(w);
    }
}

static void gpu_rows(cw *w, const mt_report_src *src) {
    const mt_sim_result *r = src->res;
    for (int32_t i = 0; i < r->n_gpus; i++) {
        const mt_gpu_stats *g = &r->gpus[i];
        cw_num(w, "%d", g->rank);
        cw_num(w, "%d", g->dp);
        cw_num(w, "%d", g->stage);
        cw_num(w, "%d", g->tp);
        cw_ms(w, g->compute_ps);
        cw_ms(w, g->comm_ps);
        cw_ms(w, g->exposed_ps);
        cw_ms(w, g->peer_wait_ps);
        cw_ms(w, g->host_wait_ps);
        cw_ms(w, g->bubble_ps);
        cw_ms(w, g->idle_ps);
        cw_ms(w, r->step_ps);
        cw_num(w, "%.17g", g->peak_mem_bytes);
        cw_ms(w, g->host_busy_ps);
        cw_ms(w, g->host_sync_ps);
        if (g->waited_for >= 0) cw_num(w, "%d", g->waited_for);
        else cw_text(w, "");
        cw_ms(w, g->waited_for_ps);
        cw_ms(w, g->stretch_ps);
        cw_end(w);
    }
}

static void layer_rows(cw *w, const mt_report_src *src) {
    const mt_sim_result *r = src->res;
    for (int32_t l = 0; l < r->n_layers; l++) {
        cw_num(w, "%d", l);
        cw_text(w, mt_layer_name(src->prog, l));
        cw_num(w, "%.9f", r->layer_compute_ps[l] / 1e9);
        cw_num(w, "%.9f", r->layer_comm_ps[l] / 1e9);
        cw_end(w);
    }
}

static void link_rows(cw *w, const mt_report_src *src) {
    if (!src->topo || !mt_net_has_links(src->net)) return;
    double step_s = (double)src->res->step_ps / 1e12;
    for (int32_t l = 0; l < mt_topo_nlinks(src->topo); l++) {
        const mt_link *lk = mt_topo_link(src->topo, l);
        mt_link_stats st;
        if (mt_net_link_stats(src->net, l, &st, NULL) != MT_OK) return;
        cw_num(w, "%d", l);
        cw_text(w, mt_topo_name(src->topo, lk->src));
        cw_text(w, mt_topo_name(src->topo, lk->dst));
        cw_num(w, "%.9g", lk->bw_Bps / 1e9);
        cw_num(w, "%.17g", st.bytes);
        cw_ms(w, st.busy_ps);
        cw_num(w, "%.9g", step_s > 0 ? st.bytes / (lk->bw_Bps * step_s) : 0.0);
        cw_num(w, "%d", st.peak_flows);
        cw_end(w);
    }
}

static void collective_rows(cw *w, const mt_report_src *src) {
    const mt_program *p = src->prog;
    const mt_recorder *rec = src->rec;
    char group[64];
    for (int64_t i = 0; rec && i < rec->n_spans; i++) {
        const mt_span *sp = &rec->spans[i];
        if (sp->kind != MT_SPAN_COLL) continue;
        int32_t first;
        int32_t n = mt_coll_group(p, sp, &first, group, sizeof group);
        if (sp->rank != first) continue; /* every member has the span: one row per instance */
        const mt_task *k = sp->task;
        char kind[16];
        cw_text(w, mt_group_kind_name(&p->groups, k->group, kind, sizeof kind));
        cw_text(w, group);
        cw_num(w, "%d", n);
        cw_text(w, mt_coll_op_name(k->coll));
        cw_text(w, mt_coll_why_name(k->why));
        cw_text(w, mt_layer_name(p, k->layer));
        cw_num(w, "%.17g", k->bytes);
        cw_text(w, mt_coll_algo_name(mt_coll_span_algo(src, sp)));
        cw_us(w, sp->start);
        cw_us(w, sp->end - sp->start);
        double t_s = (double)(sp->end - sp->start) / 1e12;
        if (t_s > 0) {
            double algbw = k->bytes / t_s / 1e9;
            cw_num(w, "%.9g", algbw);
            cw_num(w, "%.9g", algbw * mt_coll_busbw_factor(k->coll, n));
        } else {
            cw_text(w, "");
            cw_text(w, "");
        }
        cw_end(w);
    }
}

typedef struct table {
    const char *file;
    const char *const *cols;
    void (*rows)(cw *w, const mt_report_src *src);
} table;

mt_status mt_csv_write_dir(const mt_report_src *src, const char *dir, mt_error *err) {
    static const char *const ops[] = {"gpu", "stream", "name", "layer", "phase", "micro_batch",
                                      "start_us", "end_us", "dur_us", NULL};
    static const char *const gpus[] = {"rank", "dp", "stage", "tp", "compute_ms", "comm_ms", "exposed_comm_ms",
                                       "peer_wait_ms", "host_wait_ms", "bubble_ms", "idle_ms", "step_ms",
                                       "peak_mem_bytes", "host_busy_ms", "host_sync_ms", "waited_for",
                                       "waited_for_ms", "stretch_ms", NULL};
    static const char *const layers[] = {"layer_index", "layer", "compute_ms", "comm_ms", NULL};
    static const char *const links[] = {"link", "src", "dst", "bandwidth_GBps", "bytes", "busy_ms",
                                        "utilisation", "peak_flows", NULL};
    static const char *const colls[] = {"group", "group_id", "gpus", "op", "why", "layer", "bytes", "algorithm",
                                        "start_us", "time_us", "algbw_GBps", "busbw_GBps", NULL};
    static const table tables[] = {{"ops.csv", ops, ops_rows},
                                   {"gpus.csv", gpus, gpu_rows},
                                   {"layers.csv", layers, layer_rows},
                                   {"links.csv", links, link_rows},
                                   {"collectives.csv", colls, collective_rows}};
    if (src->rec && src->rec->failed)
        return mt_fail(err, MT_ENOMEM, "out of memory recording the spans for the CSV files in '%s'", dir);
    if (src->rec) mt_recorder_sort(src->rec);
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        cw w;
        errno = 0;
        mt_status rc = cw_open(&w, dir, tables[i].file, tables[i].cols, err);
        if (rc == MT_OK) tables[i].rows(&w, src);
        rc = cw_close(&w, rc, err);
        if (rc != MT_OK) return rc;
    }
    return MT_OK;
}

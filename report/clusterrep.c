/* report/clusterrep.c — see clusterrep.h. */
#include "report/clusterrep.h"

#include <csv.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/collective.h"
#include "report/html.h"
#include "util/fileio.h"
#include "util/outpath.h"

const char *mt_cluster_gpus_str(const mt_cluster_jobres *j, char *buf, size_t len) {
    size_t at = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < j->n && at + 1 < len;) {
        int32_t k = i;
        while (k + 1 < j->n && j->gpus[k + 1] == j->gpus[k] + 1) k++;
        int w = k > i ? snprintf(buf + at, len - at, "%s%d-%d", i ? "," : "", (int)j->gpus[i], (int)j->gpus[k])
                      : snprintf(buf + at, len - at, "%s%d", i ? "," : "", (int)j->gpus[i]);
        if (w < 0 || (size_t)w >= len - at) {
            if (len > 4) strcpy(buf + (at < len - 4 ? at : len - 4), "...");
            break;
        }
        at += (size_t)w;
        i = k + 1;
    }
    return buf;
}

static char *link_name(const mt_cluster_result *r, int32_t l, char *buf, size_t len) {
    mt_topo_link_name(r->topo, l, buf, len);
    return buf;
}

json_t *mt_cluster_placements_json(const mt_cluster_placements *p) {
    json_t *arr = json_array();
    for (int i = 0; i < p->n; i++)
        json_array_append_new(arr, json_pack("{s:s,s:f,s:f,s:f}", "placement", p->row[i].placement, "worst_slowdown",
                                             p->row[i].worst_slowdown, "mean_slowdown", p->row[i].mean_slowdown,
                                             "makespan_ms", p->row[i].makespan_ms));
    return json_pack("{s:s,s:o}", "topology", p->topology, "placements", arr);
}

void mt_cluster_placements_print(FILE *out, const mt_cluster_placements *p) {
    fprintf(out, "cluster    %d jobs on %s; jobs with an explicit GPU list keep it\n\n", (int)p->n_jobs, p->topology);
    fprintf(out, "   #  %-14s %15s %14s %13s\n", "placement", "worst slowdown", "mean slowdown", "makespan ms");
    for (int i = 0; i < p->n; i++)
        fprintf(out, "  %2d  %-14s %14.3fx %13.3fx %13.3f\n", i + 1, p->row[i].placement, p->row[i].worst_slowdown,
                p->row[i].mean_slowdown, p->row[i].makespan_ms);
    if (p->n) fprintf(out, "best       %s\n", p->row[0].placement);
}

json_t *mt_cluster_json(const mt_cluster_result *r) {
    json_t *root = json_object(), *jobs = json_array(), *links = json_array();
    json_object_set_new(root, "topology", json_string(r->topology));
    json_object_set_new(root, "fabric_gpus", json_integer(r->fabric_gpus));
    json_object_set_new(root, "gpus_per_node", json_integer(r->gpus_per_node));
    char buf[4096];
    for (int32_t k = 0; k < r->n_jobs; k++) {
        const mt_cluster_jobres *j = &r->jobs[k], *jr = j;
        json_t *o = json_object(), *tl = json_array();
        json_object_set_new(o, "name", json_string(j->name));
        json_object_set_new(o, "trace", json_string(j->trace));
        json_object_set_new(o, "gpus", json_integer(j->n));
        json_object_set_new(o, "plan", json_pack("{s:i,s:i,s:i,s:i,s:i}", "dp", (int)j->plan.dp, "tp",
                                                 (int)j->plan.tp, "pp", (int)j->plan.pp, "cp",
                                                 (int)j->plan.cp, "ep", (int)j->plan.ep));
        json_object_set_new(o, "placement", json_string(j->placement));
        json_object_set_new(o, "placed_on", json_string(mt_cluster_gpus_str(j, buf, sizeof buf)));
        json_object_set_new(o, "start_ms", json_real(j->start_ms));
        json_object_set_new(o, "steps", json_integer(jr->together->n_steps));
        json_object_set_new(o, "alone_ms", json_real(jr->alone_ms));
        json_object_set_new(o, "together_ms", json_real(jr->together_ms));
        json_object_set_new(o, "slowdown", json_real(jr->slowdown));
        json_object_set_new(o, "exposed_ms", json_real(jr->exposed_ms));
        json_object_set_new(o, "alone_exposed_ms", json_real(jr->alone_exposed_ms));
        json_object_set_new(o, "peer_wait_ms", json_real(jr->peer_ms));
        json_object_set_new(o, "shared_bytes", json_real(jr->shared_bytes));
        for (int t = 0; t < 3 && jr->top_links[t] >= 0; t++)
            json_array_append_new(tl, json_pack("{s:s,s:f,s:f}", "link",
                                                link_name(r, jr->top_links[t], buf, sizeof buf), "bytes",
                                                jr->top_bytes[t], "others_bytes", jr->top_other[t]));
        json_object_set_new(o, "shared_links", tl);
        json_array_append_new(jobs, o);
    }
    for (int32_t s = 0; s < r->n_links && s < 50; s++)
        json_array_append_new(links, json_pack("{s:s,s:f,s:i}", "link", link_name(r, r->links[s].link, buf, sizeof buf),
                                               "bytes", r->links[s].total_bytes, "jobs", (int)r->links[s].n_jobs));
    json_object_set_new(root, "jobs", jobs);
    json_object_set_new(root, "shared_links", links);
    json_object_set_new(root, "n_shared_links", json_integer(r->n_links));
    json_object_set_new(root, "makespan_ms", json_real(r->makespan_ms));
    json_object_set_new(root, "worst_slowdown", json_real(r->worst_slowdown));
    json_object_set_new(root, "worst_job", json_string(r->jobs[r->worst_job].name));
    json_object_set_new(root, "mean_slowdown", json_real(r->mean_slowdown));
    json_object_set_new(root, "events", json_integer((json_int_t)r->events));
    json_object_set_new(root, "alone_runs", json_integer(r->alone_batches));
    json_object_set_new(root, "wall_s", json_real(r->wall_s));
    return root;
}

static void mb(char *buf, size_t len, double bytes) {
    if (bytes >= 1e9) snprintf(buf, len, "%.2f GB", bytes / 1e9);
    else snprintf(buf, len, "%.2f MB", bytes / 1e6);
}

void mt_cluster_print(FILE *out, const mt_cluster_result *r) {
    fprintf(out, "cluster    %d jobs on %s (%d GPUs, %d per node)\n\n", (int)r->n_jobs, r->topology, (int)r->fabric_gpus,
            (int)r->gpus_per_node);
    fprintf(out, "  %-12s %5s  %-13s %-18s %10s %12s %9s %11s %9s\n", "job", "gpus", "placement", "on GPUs",
            "alone ms", "together ms", "slowdown", "exposed ms", "peer ms");
    char buf[64], lb[128], b1[32], b2[32];
    for (int32_t k = 0; k < r->n_jobs; k++) {
        const mt_cluster_jobres *j = &r->jobs[k], *jr = j;
        mt_cluster_gpus_str(j, buf, sizeof buf);
        if (strlen(buf) > 18) strcpy(buf + 15, "...");
        fprintf(out, "  %-12.12s %5d  %-13.13s %-18.18s %10.3f %12.3f %8.3fx %11.3f %9.3f\n", j->name, (int)j->n,
                j->placement, buf, jr->alone_ms, jr->together_ms,
                jr->slowdown, jr->exposed_ms, jr->peer_ms);
    }
    fprintf(out, "\n");
    int any = 0;
    for (int32_t k = 0; k < r->n_jobs && k < 32; k++) {
        const mt_cluster_jobres *jr = &r->jobs[k];
        if (jr->top_links[0] < 0) continue;
        any = 1;
        mb(b1, sizeof b1, jr->top_bytes[0]);
        mb(b2, sizeof b2, jr->top_other[0]);
        fprintf(out, "met others %-12.12s on %s (%s of its, %s of others'%s)\n", r->jobs[k].name,
                link_name(r, jr->top_links[0], lb, sizeof lb), b1, b2, jr->top_links[1] >= 0 ? "; more in --json" : "");
    }
    if (!any) fprintf(out, "met others none: no link carries two jobs' traffic\n");
    fprintf(out, "worst      %s %.3fx; mean slowdown %.3fx; makespan %.3f ms\n", r->jobs[r->worst_job].name,
            r->worst_slowdown, r->mean_slowdown, r->makespan_ms);
    fprintf(out, "simulated  %llu events together; every job also alone (%d runs: jobs whose traffic shares no link "
                 "run side by side); %.3f s\n", (unsigned long long)r->events, (int)r->alone_batches, r->wall_s);
}

static void field(FILE *f, const char *s) { csv_fwrite(f, s, strlen(s)); }

static mt_status csv_files(const char *dir, const mt_cluster_result *r, mt_error *err) {
    char path[4200], buf[4096];
    snprintf(path, sizeof path, "%s/jobs.csv", dir);
    FILE *f = fopen(path, "w");
    if (!f) return mt_fail(err, MT_EIO, "--csv: cannot write %s", path);
    fprintf(f, "job,gpus,placement,placed_on,start_ms,alone_ms,together_ms,slowdown,exposed_ms,alone_exposed_ms,"
               "peer_wait_ms,shared_bytes\n");
    for (int32_t k = 0; k < r->n_jobs; k++) {
        const mt_cluster_jobres *j = &r->jobs[k], *jr = j;
        field(f, j->name);
        fprintf(f, ",%d,", (int)j->n);
        field(f, j->placement);
        fputc(',', f);
        field(f, mt_cluster_gpus_str(j, buf, sizeof buf));
        fprintf(f, ",%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", j->start_ms, jr->alone_ms, jr->together_ms,
                jr->slowdown, jr->exposed_ms, jr->alone_exposed_ms, jr->peer_ms, jr->shared_bytes);
    }
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad) {
        mt_remove_partial(path);
        return mt_fail(err, MT_EIO, "--csv: cannot write %s", path);
    }
    snprintf(path, sizeof path, "%s/shared_links.csv", dir);
    if (!(f = fopen(path, "w"))) return mt_fail(err, MT_EIO, "--csv: cannot write %s", path);
    fprintf(f, "link,bytes,jobs\n");
    for (int32_t s = 0; s < r->n_links; s++) {
        field(f, link_name(r, r->links[s].link, buf, sizeof buf));
        fprintf(f, ",%.17g,%d\n", r->links[s].total_bytes, (int)r->links[s].n_jobs);
    }
    bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad) {
        mt_remove_partial(path);
        return mt_fail(err, MT_EIO, "--csv: cannot write %s", path);
    }
    return MT_OK;
}

mt_status mt_cluster_csv(const char *dir, const mt_cluster_result *r, mt_error *err) {
    static const char *const FILES[] = {"jobs.csv", "shared_links.csv", NULL};
    mt_out_dir d; /* staged, moved in on success (util/outpath.h) */
    MT_CHECK(mt_out_dir_open(&d, dir, "cluster-csv", "--csv", FILES, err));
    return mt_out_dir_close(&d, csv_files(mt_out_dir_path(&d), r, err), err);
}

void mt_cluster_span_record(void *ctx, int32_t rank, mt_span_kind kind, const mt_task *task, mt_time_ps start,
                            mt_time_ps end) {
    mt_cluster_tap *t = ctx;
    mt_cluster_spans *s = t->to;
    if (s->oom) return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4096;
        mt_cluster_span *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            s->oom = 1;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (mt_cluster_span){t->job, rank, (int8_t)kind,
                                     (int8_t)(kind == MT_SPAN_COLL && task ? task->coll : 0), start, end};
}

void mt_cluster_spans_free(mt_cluster_spans *s) {
    free(s->v);
    memset(s, 0, sizeof *s);
}

static const char *span_name(const mt_cluster_span *sp) {
    switch ((mt_span_kind)sp->kind) {
    case MT_SPAN_COMPUTE: return "compute";
    case MT_SPAN_COLL: return mt_coll_op_name((mt_coll_op)sp->coll);
    case MT_SPAN_SEND: return "pipeline send";
    case MT_SPAN_WAIT: return "exposed";
    case MT_SPAN_HOST: return "host wait";
    case MT_SPAN_PEER: return "peer wait";
    case MT_SPAN_BUBBLE: return "bubble";
    }
    return "?";
}

mt_status mt_cluster_timeline(const char *path, const mt_cluster_result *r, mt_cluster_spans *s, mt_error *err) {
    if (s->oom) return mt_fail(err, MT_ENOMEM, "--timeline: out of memory recording spans (fewer jobs or steps)");
    mt_out_file out;
    MT_CHECK(mt_out_open(&out, path, "--timeline", err));
    FILE *f = out.f;
    fprintf(f, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
    int first = 1;
    for (int32_t k = 0; k < r->n_jobs; k++) {
        json_t *m = json_pack("{s:s,s:s,s:i,s:{s:s++}}", "ph", "M", "name", "process_name", "pid", (int)k + 1, "args",
                              "name", "job ", r->jobs[k].name, "");
        char *txt = json_dumps(m, JSON_COMPACT);
        fprintf(f, "%s%s", first ? "" : ",\n", txt ? txt : "{}");
        first = 0;
        free(txt);
        json_decref(m);
        for (int32_t g = 0; g < r->jobs[k].n; g++)
            for (int t = 0; t < 3; t++) {
                static const char *const TH[3] = {"compute", "collectives", "sends"};
                fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":"
                           "{\"name\":\"GPU %d %s (fabric GPU %d)\"}}", (int)k + 1, (int)(g * 3 + t), (int)g, TH[t],
                        (int)r->jobs[k].gpus[g]);
            }
    }
    for (size_t i = 0; i < s->n; i++) {
        const mt_cluster_span *sp = &s->v[i];
        int t = sp->kind == MT_SPAN_COLL ? 1 : sp->kind == MT_SPAN_SEND ? 2 : 0;
        fprintf(f, ",\n{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
                   "\"dur\":%.3f}", span_name(sp), span_name(sp), (int)sp->job + 1, (int)(sp->rank * 3 + t),
                (double)sp->start / 1e6, (double)(sp->end - sp->start) / 1e6);
    }
    fprintf(f, "\n]}\n");
    return mt_out_close(&out, MT_OK, err);
}

mt_status mt_cluster_html(const char *path, const mt_cluster_result *r, mt_error *err) {
    mt_out_file out; /* a temporary renamed onto path at the end (util/outpath.h) */
    MT_CHECK(mt_out_open(&out, path, "--html", err));
    FILE *f = out.f;
    char buf[4096];
    double worst = 1;
    for (int32_t k = 0; k < r->n_jobs; k++)
        if (r->jobs[k].slowdown > worst) worst = r->jobs[k].slowdown;
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>mitosis cluster</title><style>"
          "body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
          "td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}td.l,th.l{text-align:left}"
          ".bar{display:inline-block;height:10px;background:#d9534f;vertical-align:middle}"
          ".heat td{font-size:12px;min-width:4em}</style></head><body>\n<h1>Cluster: ", f);
    mt_html_esc(f, r->topology);
    fprintf(f, "</h1>\n<p>%d jobs on %d GPUs (%d per node); worst slowdown <b>%.3fx</b> (", (int)r->n_jobs,
            (int)r->fabric_gpus, (int)r->gpus_per_node, r->worst_slowdown);
    mt_html_esc(f, r->jobs[r->worst_job].name);
    fprintf(f, "), mean %.3fx, makespan %.3f ms; %d links carry two jobs or more.</p>\n", r->mean_slowdown,
            r->makespan_ms, (int)r->n_links);
    fputs("<h2>Jobs</h2>\n<table><tr><th class=l>job</th><th>GPUs</th><th class=l>placement</th><th class=l>on GPUs"
          "</th><th>alone ms</th><th>together ms</th><th class=l>slowdown</th><th>exposed ms</th><th>peer ms</th>"
          "<th>shared MB</th></tr>\n", f);
    for (int32_t k = 0; k < r->n_jobs; k++) {
        const mt_cluster_jobres *j = &r->jobs[k];
        fputs("<tr><td class=l>", f);
        mt_html_esc(f, j->name);
        fprintf(f, "</td><td>%d</td><td class=l>", (int)j->n);
        mt_html_esc(f, j->placement);
        fputs("</td><td class=l>", f);
        mt_html_esc(f, mt_cluster_gpus_str(j, buf, 64));
        fprintf(f, "</td><td>%.3f</td><td>%.3f</td><td class=l><span class=bar style=\"width:%.0fpx\"></span> %.3fx"
                   "</td><td>%.3f</td><td>%.3f</td><td>%.2f</td></tr>\n", j->alone_ms, j->together_ms,
                worst > 1 ? 120 * (j->slowdown - 1) / (worst - 1) : 0, j->slowdown, j->exposed_ms, j->peer_ms,
                j->shared_bytes / 1e6);
    }
    fputs("</table>\n", f);
    if (r->n_heat > 0) {
        /* the columns: jobs with bytes on a kept link, at most 40 */
        int32_t cols[40], nc = 0;
        double max = 0;
        for (int32_t k = 0; k < r->n_jobs && nc < 40; k++) {
            int any = 0;
            for (int32_t h = 0; h < r->n_heat; h++) {
                double b = r->heat[(size_t)h * (size_t)r->n_jobs + (size_t)k];
                any |= b > 0;
                if (b > max) max = b;
            }
            if (any) cols[nc++] = k;
        }
        fprintf(f, "<h2>Shared links</h2>\n<p>Each cell: the job's MB on the link (alone, all steps); darker = more."
                   " The %d links most used, of %d.</p>\n<table class=heat><tr><th class=l>link</th>",
                (int)r->n_heat, (int)r->n_links);
        for (int32_t c = 0; c < nc; c++) {
            fputs("<th>", f);
            mt_html_esc(f, r->jobs[cols[c]].name);
            fputs("</th>", f);
        }
        fputs("</tr>\n", f);
        for (int32_t h = 0; h < r->n_heat; h++) {
            fputs("<tr><td class=l>", f);
            mt_topo_link_name(r->topo, r->links[h].link, buf, sizeof buf);
            mt_html_esc(f, buf);
            fputs("</td>", f);
            for (int32_t c = 0; c < nc; c++) {
                double b = r->heat[(size_t)h * (size_t)r->n_jobs + (size_t)cols[c]];
                if (b > 0) fprintf(f, "<td style=\"background:rgba(217,83,79,%.2f)\">%.1f</td>", 0.1 + 0.8 * b / max, b / 1e6);
                else fputs("<td></td>", f);
            }
            fputs("</tr>\n", f);
        }
        fputs("</table>\n", f);
    }
    fputs("<p>Alone: the job alone on the same GPUs and fabric; together: all jobs on one network model "
          "(docs/cluster.md).</p></body></html>\n", f);
    return mt_out_close(&out, MT_OK, err);
}

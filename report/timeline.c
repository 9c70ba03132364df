/* report/timeline.c — see timeline.h.
 *
 * Events are written in span order (per GPU, by start), each built as a small jansson object
 * and dumped at once. Thread ids per GPU: 1 compute, 2 host wait, 3 waiting, 4 TP, 5 DP, 6 recv,
 * 7 + k the k-th send lane (a send goes to the first lane free at its start, so sends in flight at once
 * never overlap on one thread, which viewers require).
 */
#include "report/timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/u64map.h"
#include "util/vec.h"

enum { TID_COMPUTE = 1, TID_HOST, TID_WAIT, TID_TP, TID_DP, TID_RECV, TID_SEND };

typedef struct tl {
    FILE *f;
    const mt_report_src *src;
    const mt_span_filter *flt;
    int64_t events;
    int oom;
    int64_t next_flow;
    int32_t lane_rank;          /* the GPU whose send lanes lane_end holds */
    int64_t *lane_end;          /* per lane: end (ns) of its last send */
    int64_t n_lanes, cap_lanes;
} tl;

/* Picoseconds to whole nanoseconds (times are never negative). */
static int64_t ns_of(mt_time_ps t) { return (t + 500) / 1000; }

static void emit(tl *w, json_t *ev) {
    if (!ev) {
        w->oom = 1;
        return;
    }
    fputs(w->events++ ? ",\n" : "\n", w->f);
    json_dumpf(ev, w->f, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(ev);
}

static void meta(tl *w, const char *what, int32_t pid, int32_t tid, const char *key, json_t *value) {
    emit(w, json_pack("{s:s, s:s, s:f, s:i, s:i, s:{s:o}}", "name", what, "ph", "M", "ts", 0.0, "pid", pid,
                      "tid", tid, "args", key, value));
}

static void name_thread(tl *w, int32_t pid, int32_t tid, const char *name) {
    meta(w, "thread_name", pid, tid, "name", json_string(name));
    meta(w, "thread_sort_index", pid, tid, "sort_index", json_integer(tid));
}

/* An "X" slice over [s, e] (ps), both ends rounded to ns; takes args. */
static json_t *slice_event(int32_t pid, int32_t tid, const char *name, const char *cat, mt_time_ps s,
                           mt_time_ps e, json_t *args) {
    int64_t a = ns_of(s), b = ns_of(e);
    return json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", name, "cat", cat, "ph", "X", "ts",
                     (double)a / 1e3, "dur", (double)(b - a) / 1e3, "pid", pid, "tid", tid, "args", args);
}

static void slice(tl *w, int32_t pid, int32_t tid, const char *name, const char *cat, mt_time_ps s,
                  mt_time_ps e, json_t *args) {
    emit(w, slice_event(pid, tid, name, cat, s, e, args));
}

/* slice with a colour of the trace-event format's palette (cname; Chrome honours it). */
static void slice_c(tl *w, int32_t pid, int32_t tid, const char *name, const char *cat, const char *cname,
                    mt_time_ps s, mt_time_ps e, json_t *args) {
    json_t *ev = slice_event(pid, tid, name, cat, s, e, args);
    if (ev && json_object_set_new(ev, "cname", json_string(cname))) {
        json_decref(ev);
        ev = NULL;
    }
    emit(w, ev);
}

static void flow(tl *w, const char *ph, int64_t id, int32_t pid, int32_t tid, mt_time_ps t) {
    json_t *ev = json_pack("{s:s, s:s, s:s, s:I, s:f, s:i, s:i}", "name", "pipeline", "cat", "pipeline", "ph",
                           ph, "id", (json_int_t)id, "ts", (double)ns_of(t) / 1e3, "pid", pid, "tid", tid);
    if (ev && ph[0] == 'f' && json_object_set_new(ev, "bp", json_string("e"))) {
        json_decref(ev);
        ev = NULL;
    }
    emit(w, ev);
}

static int32_t gpu_pid(int32_t rank) { return rank + 1; }

static void gpu_processes(tl *w) {
    const mt_plan *pl = &w->src->prog->plan;
    char name[96];
    for (int32_t r = 0; r < pl->gpus && !w->oom; r++) {
        if (!mt_span_filter_rank(w->flt, r)) continue;
        int32_t d, s, t, pid = gpu_pid(r);
        mt_plan_coords(pl, r, &d, &s, &t);
        snprintf(name, sizeof name, "GPU %d (dp %d, stage %d, tp %d)", r, d, s, t);
        meta(w, "process_name", pid, 0, "name", json_string(name));
        meta(w, "process_sort_index", pid, 0, "sort_index", json_integer(r));
        name_thread(w, pid, TID_COMPUTE, "compute");
        name_thread(w, pid, TID_HOST, "host wait");
        name_thread(w, pid, TID_WAIT, "waiting");
        if (pl->tp > 1) name_thread(w, pid, TID_TP, "TP collectives");
        if (pl->dp > 1) name_thread(w, pid, TID_DP, "DP collectives");
        if (pl->pp > 1) {
            name_thread(w, pid, TID_RECV, "pipeline recv");
            name_thread(w, pid, TID_SEND, "pipeline send");
        }
    }
}

/* Clips [*s, *e] to the window; 0 when nothing of it is in there. */
static int clip(const tl *w, mt_time_ps *s, mt_time_ps *e) {
    if (!mt_span_filter_time(w->flt, *s, *e)) return 0;
    if (w->flt) {
        if (*s < w->flt->from) *s = w->flt->from;
        if (*e > w->flt->to) *e = w->flt->to;
    }
    return 1;
}

static void compute_slices(tl *w, const mt_span *sp) {
    const mt_program *p = w->src->prog;
    mt_item_walk it;
    const mt_item *item;
    mt_time_ps s, e;
    mt_item_walk_init(&it, p, sp);
    while (!w->oom && mt_item_walk_next(&it, &item, &s, &e)) {
        if (!clip(w, &s, &e)) continue;
        const trace_op *op = &p->trace->ops[item->op];
        json_t *args = json_pack("{s:s, s:i, s:s, s:i}", "layer", mt_layer_name(p, item->layer), "layer_index",
                                 item->layer, "phase", mt_trace_phase_name(op->phase), "op_index", item->op);
        if (args && sp->task->mb >= 0) json_object_set_new(args, "micro_batch", json_integer(sp->task->mb));
        if (args && item->split > 1) json_object_set_new(args, "tp_split", json_integer(item->split));
        slice(w, gpu_pid(sp->rank), TID_COMPUTE, op->name ? op->name : "op", "compute", s, e, args);
    }
}

static json_t *coll_args(const tl *w, const mt_span *sp) {
    const mt_program *p = w->src->prog;
    const mt_task *k = sp->task;
    char group[64], kind[16];
    int32_t n = mt_coll_group(p, sp, NULL, group, sizeof group);
    json_t *a = json_pack("{s:f, s:s, s:s, s:s, s:i, s:s, s:s}", "bytes", k->bytes, "algorithm",
                          mt_coll_algo_name(mt_coll_span_algo(w->src, sp)), "group",
                          mt_group_kind_name(&p->groups, k->group, kind, sizeof kind), "group_id", group, "gpus", n, "why",
                          mt_coll_why_name(k->why), "layer", mt_layer_name(p, k->layer));
    if (a && k->mb >= 0) json_object_set_new(a, "micro_batch", json_integer(k->mb));
    return a;
}

/* The first send lane of sp's GPU free at ns `at` (a new one when all are busy) */
static int32_t send_lane(tl *w, const mt_span *sp, int64_t at, int64_t until) {
    if (w->lane_rank != sp->rank) {
        w->lane_rank = sp->rank;
        w->n_lanes = 0;
    }
    int64_t k = 0;
    while (k < w->n_lanes && w->lane_end[k] > at) k++;
    if (k == w->n_lanes) {
        if (mt_vec_reserve(&w->lane_end, &w->cap_lanes, k + 1)) {
            w->oom = 1;
            return 0;
        }
        w->n_lanes++;
        if (k > 0) {
            char name[48];
            snprintf(name, sizeof name, "pipeline send %d", (int)k + 1);
            name_thread(w, gpu_pid(sp->rank), TID_SEND + (int32_t)k, name);
        }
    }
    w->lane_end[k] = until;
    return (int32_t)k;
}

/* A pipeline send on its sender, its arrival on the receiver, and the arrow between them. */
static void send_slices(tl *w, const mt_span *sp) {
    const mt_program *p = w->src->prog;
    const mt_task *k = sp->task;
    int32_t peer = mt_send_peer(p, sp);
    mt_time_ps s = sp->start, e = sp->end, arrive = sp->end;
    int show_send = mt_span_filter_rank(w->flt, sp->rank) && clip(w, &s, &e);
    int show_recv = mt_span_filter_rank(w->flt, peer) && mt_span_filter_time(w->flt, arrive, arrive);
    const char *dir = k->dir > 0 ? "activations" : "gradients";
    char name[96];
    int64_t id = w->next_flow;
    if (show_send && show_recv) w->next_flow++;
    if (show_send) {
        int32_t tid = TID_SEND + send_lane(w, sp, ns_of(s), ns_of(e));
        mt_span_name(p, sp, 0, name, sizeof name);
        slice(w, gpu_pid(sp->rank), tid, name, "pipeline", s, e,
              json_pack("{s:f, s:i, s:i, s:s}", "bytes", k->bytes, "to_gpu", peer, "micro_batch", k->mb, "data", dir));
        if (show_recv) flow(w, "s", id, gpu_pid(sp->rank), tid, s);
    }
    if (show_recv) {
        mt_span_name(p, sp, 1, name, sizeof name);
        slice(w, gpu_pid(peer), TID_RECV, name, "pipeline", arrive, arrive,
              json_pack("{s:f, s:i, s:i, s:s}", "bytes", k->bytes, "from_gpu", sp->rank, "micro_batch", k->mb, "data",
                        dir));
        if (show_send) flow(w, "f", id, gpu_pid(peer), TID_RECV, arrive);
    }
}

static void gpu_events(tl *w) {
    const mt_program *p = w->src->prog;
    const mt_recorder *rec = w->src->rec;
    char name[160];
    for (int64_t i = 0; i < rec->n_spans && !w->oom; i++) {
        const mt_span *sp = &rec->spans[i];
        mt_stream st = mt_span_stream(sp);
        if (st == MT_STREAM_SEND) {
            send_slices(w, sp);
            continue;
        }
        mt_time_ps s = sp->start, e = sp->end;
        if (!mt_span_filter_rank(w->flt, sp->rank) || !clip(w, &s, &e)) continue;
        if (st == MT_STREAM_COMPUTE) {
            compute_slices(w, sp);
        } else if (st == MT_STREAM_HOST) {
            slice(w, gpu_pid(sp->rank), TID_HOST, mt_span_name(p, sp, 0, name, sizeof name), "host", s, e,
                  json_pack("{s:s}", "phase", mt_span_phase(sp)));
        } else if (st == MT_STREAM_WAIT) { /* one category (and colour) per part of the step */
            int peer = sp->kind == MT_SPAN_PEER, bub = sp->kind == MT_SPAN_BUBBLE;
            json_t *a = json_pack("{s:s, s:s}", "phase", mt_span_phase(sp), "on",
                                  peer ? "peers (a member had not issued the collective)"
                                  : bub ? "pipeline data (not sent yet)"
                                  : sp->task->kind == MT_TASK_RECV ? "pipeline data in flight" : "communication");
            slice_c(w, gpu_pid(sp->rank), TID_WAIT, mt_span_name(p, sp, 0, name, sizeof name),
                    peer ? "peer wait" : bub ? "bubble" : "exposed", peer ? "terrible" : bub ? "grey" : "bad", s, e, a);
        } else {
            slice(w, gpu_pid(sp->rank), st == MT_STREAM_TP ? TID_TP : TID_DP, mt_span_name(p, sp, 0, name, sizeof name),
                  "collective", s, e, coll_args(w, sp));
        }
    }
}

/* ---- link counters ------------------------------------------------------------------------ */

/* Samples of each link in time order: a stable counting sort by link into order[]. */
static int64_t *samples_by_link(const mt_recorder *rec, int32_t nl, int64_t *first) {
    int64_t *order = malloc((size_t)(rec->n_links > 0 ? rec->n_links : 1) * sizeof *order);
    if (!order) return NULL;
    memset(first, 0, (size_t)(nl + 1) * sizeof *first);
    for (int64_t i = 0; i < rec->n_links; i++)
        if (rec->links[i].link >= 0 && rec->links[i].link < nl) first[rec->links[i].link + 1]++;
    for (int32_t l = 0; l < nl; l++) first[l + 1] += first[l];
    int64_t *at = malloc((size_t)(nl > 0 ? nl : 1) * sizeof *at);
    if (!at) {
        free(order);
        return NULL;
    }
    memcpy(at, first, (size_t)nl * sizeof *at);
    for (int64_t i = 0; i < rec->n_links; i++)
        if (rec->links[i].link >= 0 && rec->links[i].link < nl) order[at[rec->links[i].link]++] = i;
    free(at);
    return order;
}

static void link_counters(tl *w) {
    const mt_topo *topo = w->src->topo;
    const mt_recorder *rec = w->src->rec;
    if (!topo || rec->n_links == 0) return;
    int32_t nl = mt_topo_nlinks(topo), pid = gpu_pid(w->src->prog->plan.gpus);
    int64_t *first = malloc((size_t)(nl + 1) * sizeof *first);
    int64_t *order = first ? samples_by_link(rec, nl, first) : NULL;
    mt_u64map pairs; /* (src, dst) -> links between them, to tell parallel links apart */
    mt_u64map_init(&pairs);
    if (!order) w->oom = 1;
    for (int32_t l = 0; l < nl && !w->oom; l++) {
        const mt_link *lk = mt_topo_link(topo, l);
        uint64_t key = ((uint64_t)(uint32_t)lk->src << 32) | (uint32_t)lk->dst;
        int64_t n = 0;
        mt_u64map_get(&pairs, key, &n);
        if (mt_u64map_put(&pairs, key, n + 1, NULL) != MT_OK) w->oom = 1;
    }
    mt_time_ps from = w->flt ? w->flt->from : 0, to = w->flt ? w->flt->to : MT_TIME_NEVER;
    int named = 0;
    for (int32_t l = 0; l < nl && !w->oom; l++) {
        int busy = 0;
        for (int64_t j = first[l]; j < first[l + 1]; j++) busy |= rec->links[order[j]].used_Bps > 0;
        if (!busy) continue;
        const mt_link *lk = mt_topo_link(topo, l);
        char name[160];
        int64_t twins = 0;
        uint64_t key = ((uint64_t)(uint32_t)lk->src << 32) | (uint32_t)lk->dst;
        mt_u64map_get(&pairs, key, &twins);
        int len = snprintf(name, sizeof name, "%s->%s", mt_topo_name(topo, lk->src), mt_topo_name(topo, lk->dst));
        if (twins > 1 && len > 0 && len < (int)sizeof name) snprintf(name + len, sizeof name - (size_t)len, " #%d", l);
        if (!named++) {
            meta(w, "process_name", pid, 0, "name", json_string("network"));
            meta(w, "process_sort_index", pid, 0, "sort_index", json_integer(pid));
        }
        double last = -1;
        for (int64_t j = first[l]; j < first[l + 1] && !w->oom; j++) {
            const mt_link_sample *x = &rec->links[order[j]];
            mt_time_ps t = x->t < from ? from : x->t;
            if (t >= to) break;
            if (j + 1 < first[l + 1]) { /* a later sample at the same time replaces this one */
                mt_time_ps tn = rec->links[order[j + 1]].t;
                if ((tn < from ? from : tn) == t) continue;
            }
            double pct = 100.0 * x->used_Bps / lk->bw_Bps;
            if (pct == last) continue;
            last = pct;
            emit(w, json_pack("{s:s, s:s, s:f, s:i, s:i, s:{s:f}}", "name", name, "ph", "C", "ts",
                              (double)ns_of(t) / 1e3, "pid", pid, "tid", 0, "args", "util %", pct));
        }
    }
    mt_u64map_destroy(&pairs);
    free(order);
    free(first);
}

static json_t *other_data(const mt_report_src *src, const mt_span_filter *flt) {
    const mt_plan *pl = &src->prog->plan;
    json_t *o = json_pack("{s:s, s:f, s:i, s:i, s:i, s:i}", "tool", "mitosis simulate", "step_ms",
                          (double)src->res->step_ps / 1e9, "gpus", pl->gpus, "dp", pl->dp, "tp", pl->tp, "pp", pl->pp);
    if (o && flt) {
        json_object_set_new(o, "window_from_ms", json_real((double)flt->from / 1e9));
        if (flt->to != MT_TIME_NEVER) json_object_set_new(o, "window_to_ms", json_real((double)flt->to / 1e9));
    }
    return o;
}

mt_status mt_timeline_write(const mt_report_src *src, const mt_span_filter *filter, FILE *out,
                            const char *path, mt_error *err) {
    if (src->rec && src->rec->failed)
        return mt_fail(err, MT_ENOMEM, "out of memory recording the timeline for '%s': show fewer GPUs "
                       "(--timeline-gpus) or a shorter window (--timeline-window)", path);
    tl w;
    memset(&w, 0, sizeof w);
    w.f = out;
    w.src = src;
    w.flt = filter;
    w.lane_rank = -1;
    errno = 0;
    fputs("{\"traceEvents\":[", out);
    gpu_processes(&w);
    if (src->rec) {
        mt_recorder_sort(src->rec);
        gpu_events(&w);
        link_counters(&w);
    }
    fputs("\n],\"displayTimeUnit\":\"ms\",\"otherData\":", out);
    json_t *od = other_data(src, filter);
    if (!od) w.oom = 1;
    else json_dumpf(od, out, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(od);
    fputs("}\n", out);
    free(w.lane_end);
    if (w.oom) return mt_fail(err, MT_ENOMEM, "out of memory writing the timeline '%s'", path);
    if (fflush(out) != 0 || ferror(out))
        return mt_fail(err, MT_EIO, "cannot write the timeline '%s': %s (check the disk space or choose "
                       "another path)", path, errno ? strerror(errno) : "write error");
    return MT_OK;
}

/* report/describe.c — see describe.h. */
#include "report/describe.h"

#include <math.h>
#include <stdio.h>

#include "util/units.h"

mt_stream mt_span_stream(const mt_span *s) {
    switch ((mt_span_kind)s->kind) {
    case MT_SPAN_COMPUTE: return MT_STREAM_COMPUTE;
    case MT_SPAN_COLL: return s->task->group == MT_GROUP_TP ? MT_STREAM_TP : MT_STREAM_DP;
    case MT_SPAN_SEND: return MT_STREAM_SEND;
    case MT_SPAN_HOST: return MT_STREAM_HOST;
    default: return MT_STREAM_WAIT;
    }
}

const char *mt_stream_name(mt_stream st) {
    static const char *const n[] = {"compute", "host", "wait", "tp", "dp", "recv", "send"};
    return (unsigned)st < MT_STREAM_COUNT ? n[st] : "?";
}

const mt_stage_program *mt_rank_stage(const mt_program *p, int32_t rank) {
    int32_t d, s, t;
    mt_plan_coords(&p->plan, rank, &d, &s, &t);
    return &p->stages[s];
}

const char *mt_layer_name(const mt_program *p, int32_t layer) {
    if (layer < 0 || layer >= p->n_layers || !p->trace || !p->trace->layers[layer].name) return "";
    return p->trace->layers[layer].name;
}

const char *mt_span_phase(const mt_span *s) {
    const mt_task *k = s->task;
    if (k->kind == MT_TASK_SEND || k->kind == MT_TASK_RECV) return k->dir > 0 ? "forward" : "backward";
    if (k->kind == MT_TASK_COLL || k->kind == MT_TASK_COMPUTE || k->kind == MT_TASK_WAIT_GROUP)
        return mt_trace_phase_name((trace_phase)k->phase);
    return k->kind == MT_TASK_WAIT_COMM ? "backward" : "";
}

/* The GPU on the other side of pipeline task k of `rank`: where a SEND goes (dir as k's), where a
 * RECV's data comes from (dir -1: the opposite side); under --vpp the chunk order (mt_pp_peer). */
static int32_t pp_peer(const mt_program *p, int32_t rank, const mt_task *k, int dir) {
    mt_coords c;
    int32_t v;
    mt_mesh_coords(&p->groups.mesh, rank, &c);
    mt_pp_peer(&p->plan, c.c[MT_DIM_PP], k->chunk, dir * k->dir, &c.c[MT_DIM_PP], &v);
    return mt_mesh_rank(&p->groups.mesh, &c);
}

int32_t mt_send_peer(const mt_program *p, const mt_span *s) { return pp_peer(p, s->rank, s->task, +1); }

/* " (chunk 3)", the model chunk (0 .. P x V - 1) of task k of `rank` under --vpp, else "". */
static const char *chunk_note(const mt_program *p, int32_t rank, const mt_task *k, char *buf, size_t len) {
    buf[0] = '\0';
    if (p->plan.vpp <= 1) return buf;
    mt_coords c;
    mt_mesh_coords(&p->groups.mesh, rank, &c);
    snprintf(buf, len, " (chunk %d)", (int)(k->chunk * p->plan.pp + c.c[MT_DIM_PP]));
    return buf;
}

int32_t mt_coll_group(const mt_program *p, const mt_span *s, int32_t *first_rank, char *buf, size_t len) {
    int32_t d, st, t, kind = s->task->group;
    mt_plan_coords(&p->plan, s->rank, &d, &st, &t);
    int32_t n = mt_group_size(&p->groups, kind);
    const mt_group_def *def = &p->groups.kind[kind];
    if (first_rank) *first_rank = mt_group_member(&p->groups, kind, s->rank, 0);
    if (buf && kind == MT_GROUP_TP) snprintf(buf, len, "dp %d, stage %d", d, st);
    else if (buf && kind == MT_GROUP_DP) snprintf(buf, len, "stage %d, tp %d", st, t);
    else if (buf && def->dims == MT_DIMS_DP && def->block > 0)
        snprintf(buf, len, "stage %d, tp %d, dp %d-%d", st, t, d / n * n, d / n * n + n - 1);
    else if (buf)
        snprintf(buf, len, "stage %d, tp %d, %s group %d", st, t, def->name, (int)mt_group_id(&p->groups, kind, s->rank));
    return n;
}

mt_coll_algo mt_coll_span_algo(const mt_report_src *src, const mt_span *s) {
    int32_t n = mt_coll_group(src->prog, s, NULL, NULL, 0);
    return mt_sim_coll_algo(&src->prog->plan, s->task->coll, n, src->ranks_per_node);
}

const char *mt_coll_why_name(mt_coll_why w) {
    switch (w) {
    case MT_COLL_WHY_TP_FWD: return "tp-forward";
    case MT_COLL_WHY_TP_BWD: return "tp-backward";
    case MT_COLL_WHY_TRACED: return "traced";
    case MT_COLL_WHY_CP_FWD: return "cp-forward";
    case MT_COLL_WHY_CP_BWD: return "cp-backward";
    case MT_COLL_WHY_DP_PARAMS: return "dp-params";
    case MT_COLL_WHY_EP: return "ep-tokens";
    case MT_COLL_WHY_EP_GRAD: return "ep-gradients";
    case MT_COLL_WHY_EMB: return "embeddings";
    default: return "dp-gradients";
    }
}

/* "allreduce 26.21 MB (dp)", "alltoall 1.2 MB (dp/8)" */
static void coll_name(const mt_program *p, const mt_task *k, char *buf, size_t len) {
    char b[32], g[16];
    snprintf(buf, len, "%s %s (%s)", mt_coll_op_name(k->coll), mt_fmt_bytes(k->bytes, b, sizeof b),
             mt_group_kind_name(&p->groups, k->group, g, sizeof g));
}

char *mt_span_name(const mt_program *p, const mt_span *s, int receiving, char *buf, size_t len) {
    const mt_task *k = s->task;
    const char *what = k->dir > 0 ? "activations" : "gradients";
    char cn[24];
    switch ((mt_span_kind)s->kind) {
    case MT_SPAN_COMPUTE:
        snprintf(buf, len, "compute");
        break;
    case MT_SPAN_COLL:
        coll_name(p, k, buf, len);
        break;
    case MT_SPAN_HOST: /* the task the device waits to start: one op, a collective or a send */
        if (k == &mt_host_tail_task) {
            snprintf(buf, len, "host finishes the step");
        } else if (k->kind == MT_TASK_COMPUTE && k->item_count > 0) {
            const mt_item *it = &mt_rank_stage(p, s->rank)->items[k->item_first];
            const char *op = p->trace ? p->trace->ops[it->op].name : NULL;
            snprintf(buf, len, "host launches %s", op ? op : "an op");
        } else if (k->kind == MT_TASK_COLL) {
            char c[96];
            coll_name(p, k, c, sizeof c);
            snprintf(buf, len, "host issues %s", c);
        } else {
            snprintf(buf, len, "host issues %s", k->kind == MT_TASK_SEND ? "a pipeline send" : "work");
        }
        break;
    case MT_SPAN_SEND:
        if (receiving) snprintf(buf, len, "recv %s mb %d from GPU %d", what, k->mb, s->rank);
        else snprintf(buf, len, "send %s mb %d%s to GPU %d", what, k->mb, chunk_note(p, s->rank, k, cn, sizeof cn),
                      mt_send_peer(p, s));
        break;
    default: { /* waits: exposed (WAIT), for peers (PEER), for pipeline data not sent yet (BUBBLE) */
        const char *pre = s->kind == MT_SPAN_PEER ? "wait for peers at " : "wait for ";
        int inflight = s->kind == MT_SPAN_WAIT;
        if (k->kind == MT_TASK_RECV) {
            /* the sender is the neighbour on the side the data comes from */
            snprintf(buf, len, "%s%s mb %d%s from GPU %d%s", inflight ? "receive " : "wait for ", what, k->mb,
                     chunk_note(p, s->rank, k, cn, sizeof cn), pp_peer(p, s->rank, k, -1), inflight ? " (in flight)" : "");
        } else if (k->kind == MT_TASK_COLL) {
            char c[96];
            coll_name(p, k, c, sizeof c);
            snprintf(buf, len, "%s%s", pre, c);
        } else if (k->kind == MT_TASK_HOLD) {
            snprintf(buf, len, "wait for the peer after a send/recv (measured, %.3f ms)", (double)k->dur_ps / 1e9);
        } else if (k->kind == MT_TASK_WAIT_GROUP) {
            char g[16];
            snprintf(buf, len, "%s%s collectives (%d may stay in flight)", pre,
                     mt_group_kind_name(&p->groups, k->group, g, sizeof g), (int)k->keep);
        } else {
            snprintf(buf, len, "%sdata-parallel gradient buckets", pre);
        }
    }
    }
    return buf;
}

void mt_item_walk_init(mt_item_walk *w, const mt_program *p, const mt_span *s) {
    const mt_stage_program *sp = mt_rank_stage(p, s->rank);
    w->items = sp->items + s->task->item_first;
    w->n = s->task->item_count;
    w->i = 0;
    w->total_ps = 0;
    for (int32_t i = 0; i < w->n; i++) w->total_ps += w->items[i].dur_ps;
    w->done_ps = 0;
    w->start = s->start;
    w->len = s->end - s->start;
}

/* Offset into the span of the point `done` of `total` item time: exact when the span has the
 * items' own length, else scaled and rounded (the same point always maps to the same time, so
 * consecutive operators meet). */
static mt_time_ps walk_at(const mt_item_walk *w, int64_t done) {
    if (w->len == w->total_ps || w->total_ps <= 0) return done < w->len ? done : w->len;
    if (done >= w->total_ps) return w->len;
    return (mt_time_ps)llround((double)done / (double)w->total_ps * (double)w->len);
}

int mt_item_walk_next(mt_item_walk *w, const mt_item **item, mt_time_ps *start, mt_time_ps *end) {
    if (w->i >= w->n) return 0;
    const mt_item *it = &w->items[w->i++];
    *item = it;
    *start = w->start + walk_at(w, w->done_ps);
    w->done_ps += it->dur_ps;
    *end = w->start + walk_at(w, w->done_ps);
    return 1;
}

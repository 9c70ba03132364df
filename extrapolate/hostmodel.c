/* extrapolate/hostmodel.c — see hostmodel.h. */
#include "extrapolate/hostmodel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mt_hostmodel_available(const mt_trace *t) {
    if (!t->has_device_time || t->format == TRACE_FORMAT_TRIOSIM_CSV) return 0;
    for (int32_t i = 0; i < t->n_kernels; i++)
        if (t->kernels[i].launch_ns >= 0) return 1;
    return 0;
}

void mt_hostmodel_free(mt_hostmodel *m) {
    if (!m) return;
    free(m->ops);
    free(m->ev);
    free(m->share);
    free(m);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_hev(const void *a, const void *b) {
    const mt_hev *x = a, *y = b;
    if (x->off_ps != y->off_ps) return x->off_ps < y->off_ps ? -1 : 1;
    return x->kind - y->kind; /* at the same instant: launches, syncs, records, waits */
}

typedef struct kspan {
    int64_t start, end, launch;
} kspan;

static int cmp_kspan(const void *a, const void *b) {
    const kspan *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Median of (kernel start - launch) over kernels launched while the device was idle (every
 * earlier kernel had ended). O(K log K). */
static int64_t launch_latency_ns(const mt_trace *t) {
    size_t n_k = (size_t)(t->n_kernels > 0 ? t->n_kernels : 1);
    kspan *ks = malloc(n_k * sizeof *ks);
    int64_t *sample = malloc(n_k * sizeof *sample), n = 0;
    int64_t lat = MT_HOST_LAUNCH_DEFAULT_NS;
    if (ks && sample) {
        for (int32_t i = 0; i < t->n_kernels; i++)
            ks[i] = (kspan){t->kernels[i].start_ns, t->kernels[i].start_ns + t->kernels[i].dur_ns,
                            t->kernels[i].launch_ns};
        qsort(ks, (size_t)t->n_kernels, sizeof *ks, cmp_kspan);
        int64_t busy_until = INT64_MIN;
        for (int32_t i = 0; i < t->n_kernels; i++) {
            if (ks[i].launch >= 0 && busy_until <= ks[i].launch && ks[i].start >= ks[i].launch)
                sample[n++] = ks[i].start - ks[i].launch;
            if (ks[i].end > busy_until) busy_until = ks[i].end;
        }
        if (n > 0) {
            qsort(sample, (size_t)n, sizeof *sample, cmp_i64);
            lat = sample[n / 2];
        }
    }
    free(ks);
    free(sample);
    return lat;
}

/* What issuing one collective cost the trace's host: the CPU time of its collective calls (less
 * the synchronising calls inside them) over the number of collectives, i.e. of calls that
 * launched a communication kernel (every call when none did: gloo, or launches the profiler
 * missed). A call without a kernel is the rest of a collective (c10d's wait: the compute stream
 * waits for the NCCL stream). Default without calls. O(calls x (syncs + the op's kernels)). */
static int64_t coll_host_ns(const mt_trace *t) {
    double host = 0;
    int32_t issued = 0;
    for (int32_t i = 0; i < t->n_colls; i++) {
        const trace_coll *c = &t->colls[i];
        int64_t end = c->ts_ns + c->dur_ns, busy = c->dur_ns;
        for (int32_t q = 0; q < t->n_syncs; q++)
            if (t->syncs[q].ts_ns >= c->ts_ns && t->syncs[q].ts_ns < end) busy -= t->syncs[q].dur_ns;
        host += (double)(busy > 0 ? busy : 0);
        const trace_op *o = &t->ops[c->op];
        int launched = 0;
        for (int32_t k = o->kernel_first; k < o->kernel_first + o->kernel_count && !launched; k++)
            launched = t->kernels[k].comm && t->kernels[k].launch_ns >= c->ts_ns && t->kernels[k].launch_ns < end;
        issued += launched;
    }
    if (t->n_colls == 0) return MT_HOST_COLL_DEFAULT_NS;
    return llround(host / (issued > 0 ? issued : t->n_colls));
}

/* Time taken out of an op's host work: the blocked part of its synchronising calls and its
 * collective calls, as disjoint [start, end) spans sorted by start, clipped to [lo, hi). */
typedef struct cut {
    int64_t s, e;
} cut;

static int cmp_cut(const void *a, const void *b) {
    const cut *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

/* Host work time (ns) from lo to x: x - lo minus the cuts before x. */
static int64_t work_at(const cut *c, int32_t n, int64_t lo, int64_t x) {
    int64_t w = x - lo;
    for (int32_t i = 0; i < n && c[i].s < x; i++) w -= (c[i].e < x ? c[i].e : x) - c[i].s;
    return w > 0 ? w : 0;
}

/* 1 when x lies in a cut that is a collective call (kind 1); syncs there are part of the call. */
static int in_coll(const mt_trace *t, int32_t c0, int32_t op, int64_t x) {
    for (int32_t q = c0; q < t->n_colls && t->colls[q].op == op; q++)
        if (t->colls[q].ts_ns <= x && x < t->colls[q].ts_ns + t->colls[q].dur_ns) return 1;
    return 0;
}

/* ---- streams ----------------------------------------------------------------------------- */

/* The model's index of trace stream `id`, -1 when it is not modelled (communication only). */
static int32_t find_stream(const mt_hostmodel *m, int32_t id) {
    for (int32_t s = 0; s < m->n_streams; s++)
        if (m->stream_id[s] == id) return s;
    return -1;
}

/* The index a compute kernel runs on: its stream's, or stream 0 for one beyond the modelled. */
static int32_t kernel_stream(const mt_hostmodel *m, const trace_kernel *k) {
    int32_t s = find_stream(m, k->stream);
    return s >= 0 ? s : 0;
}

/* Streams with compute kernels, the busiest first (kernel time), at most MT_HOST_MAX_STREAMS. */
static void map_streams(const mt_trace *t, mt_hostmodel *m) {
    enum { SEEN = 4 * MT_HOST_MAX_STREAMS };
    int32_t id[SEEN], n = 0;
    double busy[SEEN];
    for (int32_t i = 0; i < t->n_kernels; i++) {
        const trace_kernel *k = &t->kernels[i];
        int32_t q = 0;
        while (q < n && id[q] != k->stream) q++;
        if (k->comm || (q == n && n == SEEN)) continue;
        if (q == n) id[n] = k->stream, busy[n++] = 0;
        busy[q] += (double)k->dur_ns;
    }
    m->n_streams = 0;
    for (int32_t r = 0; r < n && r < MT_HOST_MAX_STREAMS; r++) { /* selection: n is small */
        int32_t best = r;
        for (int32_t q = r + 1; q < n; q++)
            if (busy[q] > busy[best]) best = q;
        int32_t ti = id[r];
        double tb = busy[r];
        id[r] = id[best], busy[r] = busy[best];
        id[best] = ti, busy[best] = tb;
        m->stream_id[m->n_streams++] = id[r];
    }
    if (m->n_streams == 0) m->stream_id[m->n_streams++] = -1;
}

/* Each op's part of its device time per stream: the union of its compute kernels on the stream
 * over the union of all of them (kernels are sorted by start within an op). */
static mt_status stream_shares(const mt_trace *t, mt_hostmodel *m) {
    if (m->n_streams == 1) return MT_OK;
    m->share = calloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * (size_t)m->n_streams, sizeof *m->share);
    if (!m->share) return MT_ENOMEM;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        for (int32_t s = 0; s < m->n_streams && o->dev_ns > 0; s++) {
            int64_t total = 0, cs = 0, ce = INT64_MIN;
            for (int32_t q = o->kernel_first; q < o->kernel_first + o->kernel_count; q++) {
                const trace_kernel *k = &t->kernels[q];
                if (k->comm || kernel_stream(m, k) != s) continue;
                if (k->start_ns > ce) {
                    if (ce > cs) total += ce - cs;
                    cs = k->start_ns;
                    ce = k->start_ns + k->dur_ns;
                } else if (k->start_ns + k->dur_ns > ce) {
                    ce = k->start_ns + k->dur_ns;
                }
            }
            if (ce > cs) total += ce - cs;
            m->share[(size_t)i * m->n_streams + s] = (double)total / (double)o->dev_ns;
        }
    }
    return MT_OK;
}

/* ---- per op ----------------------------------------------------------------------------- */

/* Cursors over the trace's per-op lists while building (kernels by (op, start), syncs and waits
 * by time, waits by record time, collective calls by (op, start)), the cuts of the op being
 * built and each stream wait's event slot (-1: not modelled). */
typedef struct hm_build {
    const mt_trace *t;
    mt_hostmodel *m;
    int32_t ks, sy, co, wa, re;
    cut *cuts;
    int32_t n_cuts;
    int32_t *by_rec;   /* waits by record time */
    int32_t *slot;     /* per wait */
} hm_build;

/* The cuts of op i (syncs outside its collective calls, and the calls), merged. */
static void op_cuts(hm_build *b, int32_t i, int64_t lo, int64_t hi) {
    const mt_trace *t = b->t;
    b->n_cuts = 0;
    for (int32_t q = b->sy; q < t->n_syncs && t->syncs[q].op == i; q++)
        b->cuts[b->n_cuts++] = (cut){t->syncs[q].ts_ns, t->syncs[q].ts_ns + t->syncs[q].dur_ns};
    for (int32_t q = b->co; q < t->n_colls && t->colls[q].op == i; q++)
        b->cuts[b->n_cuts++] = (cut){t->colls[q].ts_ns, t->colls[q].ts_ns + t->colls[q].dur_ns};
    int32_t n = 0;
    for (int32_t q = 0; q < b->n_cuts; q++) { /* clip */
        cut c = {b->cuts[q].s < lo ? lo : b->cuts[q].s, b->cuts[q].e > hi ? hi : b->cuts[q].e};
        if (c.e > c.s) b->cuts[n++] = c;
    }
    qsort(b->cuts, (size_t)n, sizeof *b->cuts, cmp_cut);
    b->n_cuts = 0;
    for (int32_t q = 0; q < n; q++) { /* merge */
        if (b->n_cuts && b->cuts[q].s <= b->cuts[b->n_cuts - 1].e) {
            if (b->cuts[q].e > b->cuts[b->n_cuts - 1].e) b->cuts[b->n_cuts - 1].e = b->cuts[q].e;
        } else {
            b->cuts[b->n_cuts++] = b->cuts[q];
        }
    }
}

static void add_ev(mt_hostmodel *m, int64_t off_ns, double frac, mt_hev_kind kind, int32_t stream, int32_t slot) {
    m->ev[m->n_ev++] = (mt_hev){off_ns * 1000, frac, (int32_t)kind, stream, slot};
}

/* Op i's syncs outside its collective calls, and the launches of its compute kernels with each
 * kernel's share of its stream's part of the op's device time. */
static void op_launches(hm_build *b, int32_t i, int64_t lo) {
    const mt_trace *t = b->t;
    mt_hostmodel *m = b->m;
    for (int32_t q = b->sy; q < t->n_syncs && t->syncs[q].op == i; q++)
        if (!in_coll(t, b->co, i, t->syncs[q].ts_ns))
            add_ev(m, work_at(b->cuts, b->n_cuts, lo, t->syncs[q].ts_ns), 0, MT_HEV_SYNC,
                   t->syncs[q].stream < 0 ? -1 : find_stream(m, t->syncs[q].stream), -1);
    double sum[MT_HOST_MAX_STREAMS] = {0};
    for (int32_t q = b->ks; q < t->n_kernels && t->kernels[q].op == i; q++)
        if (!t->kernels[q].comm) sum[kernel_stream(m, &t->kernels[q])] += (double)t->kernels[q].dur_ns;
    for (int32_t q = b->ks; q < t->n_kernels && t->kernels[q].op == i; q++) {
        const trace_kernel *k = &t->kernels[q];
        if (k->comm) continue;
        int32_t s = kernel_stream(m, k);
        add_ev(m, work_at(b->cuts, b->n_cuts, lo, k->launch_ns >= 0 ? k->launch_ns : lo),
               sum[s] > 0 ? (double)k->dur_ns / sum[s] : 0, MT_HEV_LAUNCH, s, -1);
    }
}

/* Op i's stream waits (their cudaStreamWaitEvent calls) and the records they wait for. */
static void op_waits(hm_build *b, int32_t i, int64_t lo) {
    const mt_trace *t = b->t;
    for (; b->re < t->n_waits && t->waits[b->by_rec[b->re]].rec_op <= i; b->re++) {
        const trace_wait *w = &t->waits[b->by_rec[b->re]];
        if (w->rec_op == i && b->slot[b->by_rec[b->re]] >= 0)
            add_ev(b->m, work_at(b->cuts, b->n_cuts, lo, w->rec_ns), 0, MT_HEV_RECORD,
                   find_stream(b->m, w->on_stream), b->slot[b->by_rec[b->re]]);
    }
    for (; b->wa < t->n_waits && t->waits[b->wa].op <= i; b->wa++)
        if (t->waits[b->wa].op == i && b->slot[b->wa] >= 0)
            add_ev(b->m, work_at(b->cuts, b->n_cuts, lo, t->waits[b->wa].ts_ns), 0, MT_HEV_WAIT,
                   find_stream(b->m, t->waits[b->wa].stream), b->slot[b->wa]);
}

/* Op i's host work and events at host work offsets from its start, in time order. */
static void build_op(hm_build *b, int32_t i) {
    const mt_trace *t = b->t;
    mt_hostmodel *m = b->m;
    const trace_op *o = &t->ops[i];
    int64_t lo = o->cpu_start_ns, hi = i + 1 < t->n_ops ? t->ops[i + 1].cpu_start_ns : t->host_end_ns;
    if (hi < lo + o->cpu_dur_ns && i + 1 == t->n_ops) hi = lo + o->cpu_dur_ns;
    while (b->sy < t->n_syncs && t->syncs[b->sy].op < i) b->sy++;
    while (b->co < t->n_colls && t->colls[b->co].op < i) b->co++;
    while (b->ks < t->n_kernels && t->kernels[b->ks].op < i) b->ks++;
    op_cuts(b, i, lo, hi > lo ? hi : lo);
    mt_hostop *h = &m->ops[i];
    h->ev_first = m->n_ev;
    op_launches(b, i, lo);
    op_waits(b, i, lo);
    h->ev_count = m->n_ev - h->ev_first;
    qsort(m->ev + h->ev_first, (size_t)h->ev_count, sizeof *m->ev, cmp_hev);
    h->host_ps = work_at(b->cuts, b->n_cuts, lo, hi) * 1000;
}

/* An op that is only a collective call is replaced by the extrapolator's collectives: what is
 * left of its host time (the host's work after the call, before the next op) and its events go
 * to the op before it that runs (ops in between are such ops too, so the events are adjacent),
 * or to the head. */
static void fold_comm_op(mt_hostmodel *m, int32_t i, int32_t into) {
    mt_hostop *h = &m->ops[i];
    if (into < 0) {
        m->head_ps += h->host_ps;
    } else {
        mt_hostop *p = &m->ops[into];
        for (int32_t q = h->ev_first; q < h->ev_first + h->ev_count; q++) m->ev[q].off_ps += p->host_ps;
        p->ev_count = h->ev_first + h->ev_count - p->ev_first;
        p->host_ps += h->host_ps;
    }
    h->host_ps = 0;
    h->ev_count = 0;
}

/* ---- the model -------------------------------------------------------------------------- */

typedef struct reckey {
    int32_t rec_op, idx;
    int64_t rec_ns;
} reckey;

static int cmp_reckey(const void *a, const void *b) {
    const reckey *x = a, *y = b;
    if (x->rec_op != y->rec_op) return x->rec_op < y->rec_op ? -1 : 1;
    if (x->rec_ns != y->rec_ns) return x->rec_ns < y->rec_ns ? -1 : 1;
    return x->idx - y->idx;
}

/* Event slots of the stream waits between modelled streams; the waits by record time. */
static mt_status plan_waits(hm_build *b) {
    const mt_trace *t = b->t;
    size_t n = (size_t)(t->n_waits > 0 ? t->n_waits : 1);
    b->by_rec = malloc(n * sizeof *b->by_rec);
    b->slot = malloc(n * sizeof *b->slot);
    reckey *keys = malloc(n * sizeof *keys);
    if (!b->by_rec || !b->slot || !keys) {
        free(keys);
        return MT_ENOMEM;
    }
    for (int32_t w = 0; w < t->n_waits; w++) {
        int32_t s = find_stream(b->m, t->waits[w].stream), on = find_stream(b->m, t->waits[w].on_stream);
        b->slot[w] = s >= 0 && on >= 0 && s != on ? b->m->n_slots++ : -1;
        keys[w] = (reckey){t->waits[w].rec_op, w, t->waits[w].rec_ns};
    }
    qsort(keys, (size_t)t->n_waits, sizeof *keys, cmp_reckey);
    for (int32_t w = 0; w < t->n_waits; w++) b->by_rec[w] = keys[w].idx;
    free(keys);
    b->m->n_waits = b->m->n_slots;
    return MT_OK;
}

mt_status mt_hostmodel_build(const mt_trace *t, mt_hostmodel **out, mt_error *err) {
    *out = NULL;
    if (!mt_hostmodel_available(t))
        return mt_fail(err, MT_EINVAL,
                       "%s: the trace has no GPU kernels with their launch calls, so its host side cannot "
                       "be modelled (use --host-model none)", t->kineto_path ? t->kineto_path : "trace");
    mt_hostmodel *m = calloc(1, sizeof *m);
    hm_build b = {.t = t, .m = m};
    mt_status rc = m ? MT_OK : MT_ENOMEM;
    if (rc == MT_OK) {
        m->n_ops = t->n_ops;
        m->ops = calloc((size_t)(t->n_ops > 0 ? t->n_ops : 1), sizeof *m->ops);
        m->ev = malloc((size_t)(t->n_kernels + t->n_syncs + 2 * t->n_waits + 1) * sizeof *m->ev);
        b.cuts = malloc((size_t)(t->n_syncs + t->n_colls + 1) * sizeof *b.cuts);
        map_streams(t, m);
        rc = m->ops && m->ev && b.cuts ? stream_shares(t, m) : MT_ENOMEM;
    }
    if (rc == MT_OK) rc = plan_waits(&b);
    if (rc == MT_OK) {
        m->launch_lat_ps = launch_latency_ns(t) * 1000;
        m->coll_host_ps = coll_host_ns(t) * 1000;
        int64_t first = t->n_ops > 0 ? t->ops[0].cpu_start_ns : t->step_start_ns;
        m->head_ps = first > t->step_start_ns ? (first - t->step_start_ns) * 1000 : 0;
        m->wall_ps = (t->step_end_ns - t->step_start_ns) * 1000;
        m->n_syncs = t->n_syncs;
        int32_t runs = -1; /* the last op that runs (is not only a collective call) */
        for (int32_t i = 0; i < t->n_ops; i++) {
            build_op(&b, i);
            if (trace_op_is_comm(&t->ops[i])) fold_comm_op(m, i, runs);
            else runs = i;
        }
        m->host_total_ps = m->head_ps;
        for (int32_t i = 0; i < t->n_ops; i++) m->host_total_ps += m->ops[i].host_ps;
    }
    free(b.cuts);
    free(b.by_rec);
    free(b.slot);
    if (rc != MT_OK) {
        mt_hostmodel_free(m);
        return mt_fail(err, MT_ENOMEM, "out of memory building the host model");
    }
    *out = m;
    return MT_OK;
}

void mt_hostmodel_scale(mt_hostmodel *m, double f) {
    m->head_ps = llround((double)m->head_ps * f);
    m->host_total_ps = m->head_ps;
    for (int32_t i = 0; i < m->n_ops; i++) {
        m->ops[i].host_ps = llround((double)m->ops[i].host_ps * f);
        m->host_total_ps += m->ops[i].host_ps;
    }
    for (int32_t i = 0; i < m->n_ev; i++) m->ev[i].off_ps = llround((double)m->ev[i].off_ps * f);
}

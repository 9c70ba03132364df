/* extrapolate/hostmodel.c — see hostmodel.h. */
#include "extrapolate/hostmodel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mt_hostmodel_available(const trace *t) {
    if (!t->has_device_time || t->format == TRACE_FORMAT_TRIOSIM_CSV) return 0;
    for (int32_t i = 0; i < t->n_kernels; i++)
        if (t->kernels[i].launch_ns >= 0) return 1;
    return 0;
}

void mt_hostmodel_free(mt_hostmodel *m) {
    if (!m) return;
    free(m->ops);
    free(m->ev);
    free(m);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_hev(const void *a, const void *b) {
    const mt_hev *x = a, *y = b;
    if (x->off_ps != y->off_ps) return x->off_ps < y->off_ps ? -1 : 1;
    return x->kind - y->kind; /* a launch at the same instant as a sync goes first */
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
static int64_t launch_latency_ns(const trace *t) {
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

mt_status mt_hostmodel_build(const trace *t, mt_hostmodel **out, mt_error *err) {
    *out = NULL;
    if (!mt_hostmodel_available(t))
        return mt_fail(err, MT_EINVAL,
                       "%s: the trace has no GPU kernels with their launch calls, so its host side cannot "
                       "be modelled (use --host-model none)", t->kineto_path ? t->kineto_path : "trace");
    mt_hostmodel *m = calloc(1, sizeof *m);
    if (!m) return mt_fail(err, MT_ENOMEM, "out of memory building the host model");
    m->n_ops = t->n_ops;
    m->ops = calloc((size_t)(t->n_ops > 0 ? t->n_ops : 1), sizeof *m->ops);
    m->ev = malloc((size_t)(t->n_kernels + t->n_syncs + 1) * sizeof *m->ev);
    if (!m->ops || !m->ev) {
        mt_hostmodel_free(m);
        return mt_fail(err, MT_ENOMEM, "out of memory building the host model");
    }
    m->launch_lat_ps = launch_latency_ns(t) * 1000;
    double comm_ns = 0;
    int32_t n_comm = 0;
    for (int32_t i = 0; i < t->n_ops; i++)
        if (t->ops[i].comm != TRACE_COMM_NONE) comm_ns += (double)t->ops[i].cpu_dur_ns, n_comm++;
    m->coll_host_ps = n_comm ? (int64_t)(comm_ns / n_comm * 1000) : (int64_t)MT_HOST_COLL_DEFAULT_NS * 1000;
    int64_t first = t->n_ops > 0 ? t->ops[0].cpu_start_ns : t->step_start_ns;
    m->head_ps = first > t->step_start_ns ? (first - t->step_start_ns) * 1000 : 0;
    m->host_total_ps = m->head_ps;
    m->wall_ps = (t->step_end_ns - t->step_start_ns) * 1000;
    m->n_syncs = t->n_syncs;
    int32_t ks = 0, sy = 0; /* kernels are sorted by (op, start); syncs by time */
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        int64_t next = i + 1 < t->n_ops ? t->ops[i + 1].cpu_start_ns : t->host_end_ns;
        if (next < o->cpu_start_ns + o->cpu_dur_ns && i + 1 == t->n_ops) next = o->cpu_start_ns + o->cpu_dur_ns;
        mt_hostop *h = &m->ops[i];
        h->ev_first = m->n_ev;
        /* events at their raw host offsets (ns; a sync's duration parked in frac), in time order */
        while (sy < t->n_syncs && t->syncs[sy].op < i) sy++;
        for (int32_t q = sy; q < t->n_syncs && t->syncs[q].op == i; q++)
            m->ev[m->n_ev++] = (mt_hev){t->syncs[q].ts_ns - o->cpu_start_ns, (double)t->syncs[q].dur_ns, MT_HEV_SYNC};
        double sum = 0;
        while (ks < t->n_kernels && t->kernels[ks].op < i) ks++;
        for (int32_t q = ks; q < t->n_kernels && t->kernels[q].op == i; q++) sum += (double)t->kernels[q].dur_ns;
        for (int32_t q = ks; q < t->n_kernels && t->kernels[q].op == i; q++) {
            const trace_kernel *k = &t->kernels[q];
            int64_t at = k->launch_ns >= 0 ? k->launch_ns : o->cpu_start_ns;
            m->ev[m->n_ev++] = (mt_hev){at - o->cpu_start_ns, sum > 0 ? (double)k->dur_ns / sum : 0, MT_HEV_LAUNCH};
        }
        h->ev_count = m->n_ev - h->ev_first;
        qsort(m->ev + h->ev_first, (size_t)h->ev_count, sizeof *m->ev, cmp_hev);
        /* offsets in host work time: minus the blocking time of earlier syncs */
        int64_t blocked = 0;
        for (int32_t q = h->ev_first; q < m->n_ev; q++) {
            mt_hev *e = &m->ev[q];
            int64_t work = e->off_ps - blocked;
            e->off_ps = work > 0 ? work * 1000 : 0;
            if (e->kind == MT_HEV_SYNC) {
                blocked += (int64_t)e->frac;
                e->frac = 0;
            }
        }
        int64_t work = next - o->cpu_start_ns - blocked;
        h->host_ps = work > 0 ? work * 1000 : 0;
        m->host_total_ps += h->host_ps;
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

int64_t mt_hostmodel_run_op(const mt_hostmodel *m, int32_t op, int64_t dev_ps, int64_t dev_free, int64_t *host,
                            int64_t *sync_wait_ps) {
    int64_t hs = *host, waited = 0;
    int64_t seg_start = dev_free, seg_dur = 0, d = dev_free, placed = 0;
    const mt_hostop *h = op >= 0 && op < m->n_ops ? &m->ops[op] : NULL;
    int launches = 0;
    for (int32_t q = 0; h && q < h->ev_count; q++) {
        const mt_hev *e = &m->ev[h->ev_first + q];
        if (e->kind == MT_HEV_LAUNCH) {
            /* kernels run back to back from seg_start: this one starts at seg_start + seg_dur,
             * which must not be before its launch has reached the device */
            int64_t kd = (int64_t)(e->frac * (double)dev_ps + 0.5);
            if (placed + kd > dev_ps) kd = dev_ps - placed;
            int64_t need = hs + e->off_ps + m->launch_lat_ps - seg_dur;
            if (need > seg_start) seg_start = need;
            seg_dur += kd;
            placed += kd;
            launches++;
        } else {
            d = seg_start + seg_dur; /* everything launched so far is done at d */
            int64_t at = hs + e->off_ps;
            if (d > at) {
                waited += d - at;
                hs += d - at;
            }
            seg_start = d;
            seg_dur = 0;
        }
    }
    if (!launches && dev_ps > 0) { /* device work with no traced launch: launched at the op's start */
        int64_t need = hs + m->launch_lat_ps;
        if (need > seg_start) seg_start = need;
    }
    seg_dur += dev_ps - placed; /* rounding remainder, or all of it without launches */
    d = seg_start + seg_dur;
    *host = hs + (h ? h->host_ps : 0);
    if (sync_wait_ps) *sync_wait_ps = waited;
    return d;
}

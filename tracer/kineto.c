/* tracer/kineto.c — the Kineto reader: recognises a PyTorch profiler trace by its first bytes
 * and reads it into flat event arrays (kineto.h).
 *
 * Accepts `{"traceEvents": [...], "deviceProperties": [...]}` (PyTorch 1.13 to 2.x) and the
 * bare-array form older exporters write. Complete ("X") events are kept by category (a table
 * below); everything else (ac2g/fwdbwd flows, memory instants, metadata) is ignored. Times
 * become int64 ns relative to the first event. Cost: O(events).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/kfilter.h"
#include "tracer/kineto.h"
#include "tracer/kstream.h"
#include "tracer/limits.h"
#include "tracer/reader.h"
#include "util/fileio.h"
#include "util/vec.h"

/* ---- the reader ------------------------------------------------------------------------- */

/* {"traceEvents": [...]}, or a bare array whose first element is an event with "ph" and "ts". */
static mt_sniff sniff(const char *head, size_t len) {
    const char *end = head + len, *p = mt_sniff_ws(head, end), *v;
    if (p == end) return MT_SNIFF_MORE;
    if (*p == '[') {
        p = mt_sniff_ws(p + 1, end);
        if (p == end) return MT_SNIFF_MORE;
        return *p == '{' ? mt_sniff_json_both(p, end, "ph", "ts") : MT_SNIFF_NO;
    }
    mt_sniff s = mt_sniff_json_member(p, end, "traceEvents", &v);
    return s == MT_SNIFF_YES && *v != '[' ? MT_SNIFF_NO : s;
}

static mt_status load(const char *path, trace_strpool *pool, mt_trace_parts *parts, mt_error *err) {
    return mt_kineto_read(path, pool, &parts->jopts, parts->keep_steps, &parts->events, err);
}

const mt_trace_reader mt_reader_kineto = {"kineto-json", MT_PART_EVENTS, ".json .json.gz .gz", sniff, load};


/* ---- fields ----------------------------------------------------------------------------- */

/* An integer member: its value, a real's truncation when it fits int64, else dflt (absent, a
 * string, or a real beyond int64: its conversion would be undefined). */
static int64_t int_of(const kval *v, int64_t dflt) {
    if (v->present && v->type == MT_JV_INT) return v->i;
    if (v->present && v->type == MT_JV_REAL && fabs(v->d) < 9e18) return (int64_t)v->d;
    return dflt;
}

static int64_t int_arg(const kin_event *e, kin_arg a, int64_t dflt) { return int_of(&e->a[a], dflt); }

static const char *str_arg(const kin_event *e, kin_arg a) {
    return e->a[a].present && e->a[a].type == MT_JV_STRING ? e->a[a].s : NULL;
}

static int is_num(const kval *v) { return v->present && (v->type == MT_JV_INT || v->type == MT_JV_REAL); }

static int64_t tid_of(const kin_event *e) {
    const kval *v = &e->f[KF_TID];
    if (v->present && v->type == MT_JV_INT) return v->i;
    if (v->present && v->type == MT_JV_STRING) { /* "stream 7" or a label: hash it stably */
        const char *s = v->s;
        int64_t n = 0;
        if (sscanf(s, "stream %ld", &n) == 1) return n;
        uint64_t h = 1469598103934665603ULL;
        for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        return (int64_t)(h >> 1);
    }
    return 0;
}

/* The "Input Dims" of an op (tensor shapes, read by emit.c for Kineto-only traces): every
 * dimension, and the element count of each leading run of them, in 0..TRACE_MAX_NUMEL. */
static mt_status check_input_dims(const char *path, const kin_event *e, mt_error *err) {
    for (int32_t a = 0; a < e->n_dims; a++) {
        double numel = 1;
        for (int32_t q = 0; q < e->dims[a].ndim; q++) {
            int64_t v = e->dimv[e->dims[a].first + q];
            numel *= (double)v;
            if (v < 0 || numel > (double)TRACE_MAX_NUMEL)
                return mt_fail(err, MT_EFORMAT, "%s: traceEvents[%lld].args.Input Dims[%d][%d]: %lld is not a "
                               "tensor dimension, or makes a tensor of more than 1e12 elements (is the file "
                               "damaged?)", path, (long long)e->index, (int)a, (int)q, (long long)v);
        }
    }
    return MT_OK;
}

void mt_kineto_free(kineto_data *k) {
    if (k->dist) json_decref(k->dist);
    free(k->inputs);
    free(k->colls);
    free(k->dims);
    free(k->ev);
    free(k->rt);
    free(k->gpu);
    free(k->mod);
    free(k->sync);
    memset(k, 0, sizeof *k);
}

/* ---- events by category ----------------------------------------------------------------- */

typedef enum { CAT_HOST_OP, CAT_ANNOTATION, CAT_RUNTIME, CAT_GPU, CAT_PYTHON, CAT_SYNC } cat_kind;

static const struct {
    const char *cat;
    cat_kind kind;
    trace_kernel_kind gpu;
} categories[] = {
    {"cpu_op", CAT_HOST_OP, TRACE_KERNEL},        {"user_annotation", CAT_ANNOTATION, TRACE_KERNEL},
    {"operator", CAT_HOST_OP, TRACE_KERNEL},      /* very old exporters */
    {"cuda_runtime", CAT_RUNTIME, TRACE_KERNEL},  {"cuda_driver", CAT_RUNTIME, TRACE_KERNEL},
    {"hip_runtime", CAT_RUNTIME, TRACE_KERNEL},   {"kernel", CAT_GPU, TRACE_KERNEL},
    {"gpu_memcpy", CAT_GPU, TRACE_MEMCPY},        {"gpu_memset", CAT_GPU, TRACE_MEMSET},
    {"python_function", CAT_PYTHON, TRACE_KERNEL}, {"cuda_sync", CAT_SYNC, TRACE_KERNEL},
};

#define MODULE_PREFIX "nn.Module: "

/* The reading of one file: the arrays being filled, and each kept record's raw ts (us), made
 * relative once the trace's first event is known (at the end). */
typedef struct kreader {
    const char *path;
    trace_strpool *pool;
    kineto_data *k;
    mt_error *err;
    double *ts_us[4];            /* of ev, rt, gpu, mod */
    int64_t cap_ts[4];
    double lo_ts, hi_ts;         /* the extreme ts of the complete events with a category */
    int64_t lo_ev, hi_ev;        /* and their traceEvents index */
    kfilter *f;                  /* the step filter, NULL: keep every event */
    int64_t kept_after, changes_seen; /* records kept at the last compaction, f->n_changes then */
} kreader;

enum { TS_EV = 0, TS_RT, TS_GPU, TS_MOD };

static mt_status keep_ts(kreader *r, int which, int64_t n, double ts) {
    if (mt_vec_reserve(&r->ts_us[which], &r->cap_ts[which], n + 1)) return MT_ENOMEM;
    r->ts_us[which][n] = ts;
    return MT_OK;
}

/* The collective's fields of a host event's args, into k->colls when it has any of them. */
static mt_status keep_coll(kreader *r, const kin_event *e, kargs *a) {
    kcollargs c = {.in_nelems = -1, .out_nelems = -1};
    const char *s[4] = {str_arg(e, KA_COLL_NAME), str_arg(e, KA_DTYPE), str_arg(e, KA_PG_NAME), str_arg(e, KA_PG_DESC)};
    const char **to[4] = {&c.coll_name, &c.dtype, &c.pg_name, &c.pg_desc};
    int any = 0;
    for (int i = 0; i < 4; i++) {
        if (s[i] && !(*to[i] = mt_strpool_intern(r->pool, s[i], -1))) return MT_ENOMEM;
        any |= s[i] != NULL;
    }
    const kval *g = &e->a[KA_GROUP];
    c.group = g->present && g->type == MT_JV_INT && g->i > 0 && g->i <= INT32_MAX ? (int32_t)g->i : 0;
    if (is_num(&e->a[KA_IN_NELEMS]) && e->a[KA_IN_NELEMS].d >= 0) c.in_nelems = e->a[KA_IN_NELEMS].d;
    if (is_num(&e->a[KA_OUT_NELEMS]) && e->a[KA_OUT_NELEMS].d >= 0) c.out_nelems = e->a[KA_OUT_NELEMS].d;
    if (!any && c.group == 0 && c.in_nelems < 0 && c.out_nelems < 0) return MT_OK;
    kineto_data *k = r->k;
    if (mt_vec_reserve(&k->colls, &k->cap_colls, k->n_colls + 1)) return MT_ENOMEM;
    a->coll = (int32_t)k->n_colls;
    k->colls[k->n_colls++] = c;
    return MT_OK;
}

const kcollargs *mt_kineto_coll(const kineto_data *k, const kargs *a) {
    static const kcollargs none = {NULL, NULL, NULL, NULL, 0, -1, -1};
    return a->coll >= 0 ? &k->colls[a->coll] : &none;
}

/* A host event's args: what emit.c and kcomm.c read (kineto.h, kargs). */
static mt_status keep_args(kreader *r, const kin_event *e, kargs *a) {
    kineto_data *k = r->k;
    trace_strpool *pool = r->pool;
    memset(a, 0, sizeof *a);
    a->coll = -1;
    if (!e->args_object) return MT_OK;
    a->present = 1;
    MT_CHECK(keep_coll(r, e, a));
    if (e->n_dims == 0) return MT_OK;
    if (mt_vec_reserve(&k->inputs, &k->cap_inputs, k->n_inputs + e->n_dims)) return MT_ENOMEM;
    a->in_first = (int32_t)k->n_inputs;
    a->n_in = e->n_dims;
    for (int32_t i = 0; i < e->n_dims; i++) {
        const kin_dims *d = &e->dims[i];
        if (mt_vec_reserve(&k->dims, &k->cap_dims, k->n_dims + d->ndim)) return MT_ENOMEM;
        kinput *in = &k->inputs[k->n_inputs++];
        *in = (kinput){.dim_first = (int32_t)k->n_dims, .ndim = d->ndim, .size = d->size};
        if (d->ndim > 0) memcpy(k->dims + k->n_dims, e->dimv + d->first, (size_t)d->ndim * sizeof *k->dims);
        k->n_dims += d->ndim;
        const char *ty = i < e->n_types ? e->types[i] : NULL;
        if (ty && !(in->type = mt_strpool_intern(pool, ty, -1))) return MT_ENOMEM;
    }
    return MT_OK;
}

static mt_status add_host(kreader *r, const kin_event *e, double ts, int64_t dur_ns, kev_kind kind) {
    kineto_data *k = r->k;
    if (mt_vec_reserve(&k->ev, &k->cap_ev, k->n_ev + 1)) return MT_ENOMEM;
    MT_CHECK(keep_ts(r, TS_EV, k->n_ev, ts));
    kev *v = &k->ev[k->n_ev];
    v->name = mt_strpool_intern(r->pool, e->f[KF_NAME].s, -1);
    v->tid = tid_of(e);
    v->dur_ns = dur_ns;
    v->ext_id = int_arg(e, KA_EXT_ID, -1);
    v->rf_id = int_arg(e, KA_RF_ID, -1);
    v->seq = int_arg(e, KA_SEQ, -1);
    k->any_rf |= v->rf_id >= 0;
    v->kind = kind;
    v->parent = v->outer = -1;
    v->et_node = -1;
    MT_CHECK(keep_args(r, e, &v->a));
    k->n_ev++;
    return v->name ? MT_OK : MT_ENOMEM;
}

static mt_status add_runtime(kreader *r, const kin_event *e, double ts, int64_t dur_ns) {
    kineto_data *k = r->k;
    if (mt_vec_reserve(&k->rt, &k->cap_rt, k->n_rt + 1)) return MT_ENOMEM;
    MT_CHECK(keep_ts(r, TS_RT, k->n_rt, ts));
    krt *x = &k->rt[k->n_rt++];
    x->tid = tid_of(e);
    x->dur_ns = dur_ns;
    x->correlation = int_arg(e, KA_CORRELATION, -1);
    x->name = mt_strpool_intern(r->pool, e->f[KF_NAME].s, -1);
    return x->name ? MT_OK : MT_ENOMEM;
}

static mt_status add_gpu(kreader *r, const kin_event *e, double ts, int64_t dur_ns, trace_kernel_kind kind) {
    kineto_data *k = r->k;
    if (mt_vec_reserve(&k->gpu, &k->cap_gpu, k->n_gpu + 1)) return MT_ENOMEM;
    MT_CHECK(keep_ts(r, TS_GPU, k->n_gpu, ts));
    kgpu *g = &k->gpu[k->n_gpu++];
    g->dur_ns = dur_ns;
    g->correlation = int_arg(e, KA_CORRELATION, -1);
    g->ext_id = int_arg(e, KA_EXT_ID, -1);
    g->stream = (int32_t)int_arg(e, KA_STREAM, -1);
    g->kind = kind;
    g->name = mt_strpool_intern(r->pool, e->f[KF_NAME].s, -1);
    return g->name ? MT_OK : MT_ENOMEM;
}

static mt_status add_module(kreader *r, const kin_event *e, double ts, int64_t dur_ns) {
    kineto_data *k = r->k;
    const char *name = e->f[KF_NAME].s;
    if (strncmp(name, MODULE_PREFIX, strlen(MODULE_PREFIX)) != 0) return MT_OK;
    if (mt_vec_reserve(&k->mod, &k->cap_mod, k->n_mod + 1)) return MT_ENOMEM;
    MT_CHECK(keep_ts(r, TS_MOD, k->n_mod, ts));
    kmod *m = &k->mod[k->n_mod++];
    m->name = mt_strpool_intern(r->pool, name + strlen(MODULE_PREFIX), -1);
    m->tid = tid_of(e);
    m->dur_ns = dur_ns;
    return m->name ? MT_OK : MT_ENOMEM;
}

/* A stream id from an arg: -1 when absent, negative or not a 32-bit id (CUPTI writes
 * 4294967295 for "none"). */
static int32_t stream_arg(const kin_event *e, kin_arg a) {
    int64_t v = int_arg(e, a, -1);
    return v >= 0 && v < INT32_MAX ? (int32_t)v : -1;
}

static mt_status add_sync(kreader *r, const kin_event *e, double ts, int64_t dur_ns) {
    static const struct { const char *name; ksync_kind kind; } kinds[] = {
        {"Stream Wait Event", KSYNC_WAIT_EVENT}, {"Stream Sync", KSYNC_STREAM},
        {"Event Sync", KSYNC_EVENT}, {"Context Sync", KSYNC_CONTEXT}};
    kineto_data *k = r->k;
    size_t i = 0, n = sizeof kinds / sizeof *kinds;
    while (i < n && strcmp(e->f[KF_NAME].s, kinds[i].name)) i++;
    if (i == n) return MT_OK;
    k->saw_sync = 1;
    if (r->f && !mt_kfilter_keep(r->f, ts, (double)dur_ns / 1000.0)) return MT_OK; /* kept as they come */
    if (mt_vec_reserve(&k->sync, &k->cap_sync, k->n_sync + 1)) return MT_ENOMEM;
    k->sync[k->n_sync++] = (ksyncev){int_arg(e, KA_CORRELATION, -1), int_arg(e, KA_REC_CORR, -1),
                                     stream_arg(e, KA_STREAM), stream_arg(e, KA_WAIT_STREAM), kinds[i].kind};
    return MT_OK;
}

/* ---- the step filter (kfilter.h) ------------------------------------------------------- */

/* Whether the filter keeps an event (*keep); a ProfilerStep annotation is kept and shown to it.
 * cuda_sync events are asked in add_sync (only those of the kinds read). */
static mt_status step_filter(kreader *r, const kin_event *e, cat_kind kind, double ts, int64_t dur_ns, int *keep) {
    const char *name = e->f[KF_NAME].s;
    *keep = 1;
    if (!r->f || kind == CAT_SYNC) return MT_OK;
    if (kind == CAT_ANNOTATION && !strncmp(name, KFILTER_MARKER, strlen(KFILTER_MARKER)))
        return mt_kfilter_marker(r->f, ts, (double)dur_ns / 1000.0, atoi(name + strlen(KFILTER_MARKER)));
    *keep = mt_kfilter_keep(r->f, ts, (double)dur_ns / 1000.0);
    return MT_OK;
}

/* Drops the host events the filter no longer keeps, moving their kept inputs, dims and collective
 * fields down. */
static void compact_ev(kreader *r) {
    kineto_data *k = r->k;
    int64_t n = 0, ni = 0, nd = 0, nc = 0;
    for (int64_t i = 0; i < k->n_ev; i++) {
        kev v = k->ev[i];
        double ts = r->ts_us[TS_EV][i];
        int marker = v.kind == KEV_ANNOTATION && !strncmp(v.name, KFILTER_MARKER, strlen(KFILTER_MARKER));
        if (!marker && !mt_kfilter_keep(r->f, ts, (double)v.dur_ns / 1000.0)) continue;
        for (int32_t q = 0; q < v.a.n_in; q++) { /* inputs and dims were added in event order */
            kinput in = k->inputs[v.a.in_first + q];
            memmove(k->dims + nd, k->dims + in.dim_first, (size_t)in.ndim * sizeof *k->dims);
            in.dim_first = (int32_t)nd;
            nd += in.ndim;
            k->inputs[ni + q] = in;
        }
        if (v.a.n_in > 0) v.a.in_first = (int32_t)ni;
        ni += v.a.n_in;
        if (v.a.coll >= 0) { /* so were the collective fields */
            k->colls[nc] = k->colls[v.a.coll];
            v.a.coll = (int32_t)nc++;
        }
        k->ev[n] = v;
        r->ts_us[TS_EV][n++] = ts;
    }
    k->n_ev = n;
    k->n_inputs = ni;
    k->n_dims = nd;
    k->n_colls = nc;
}

/* The same for one array of plain records (runtime calls, device work, modules): elem bytes
 * each, their dur at dur_off. */
static void compact_plain(kreader *r, void *base, int64_t *count, size_t elem, size_t dur_off, int which) {
    char *a = base;
    int64_t n = 0;
    for (int64_t i = 0; i < *count; i++) {
        int64_t dur_ns;
        memcpy(&dur_ns, a + (size_t)i * elem + dur_off, sizeof dur_ns);
        double ts = r->ts_us[which][i];
        if (!mt_kfilter_keep(r->f, ts, (double)dur_ns / 1000.0)) continue;
        if (n != i) memcpy(a + (size_t)n * elem, a + (size_t)i * elem, elem);
        r->ts_us[which][n++] = ts;
    }
    *count = n;
}

static int64_t n_kept(const kineto_data *k) { return k->n_ev + k->n_rt + k->n_gpu + k->n_mod; }

/* Compacts the arrays when markers came since the last time and they doubled (or at the end,
 * final): amortised O(1) per event, and the records kept at the end depend only on the markers. */
static void maybe_compact(kreader *r, int final) {
    kineto_data *k = r->k;
    if (!r->f || r->f->n_changes == r->changes_seen) return;
    if (!final && n_kept(k) < 2 * r->kept_after + 65536) return;
    compact_ev(r);
    compact_plain(r, k->rt, &k->n_rt, sizeof *k->rt, offsetof(krt, dur_ns), TS_RT);
    compact_plain(r, k->gpu, &k->n_gpu, sizeof *k->gpu, offsetof(kgpu, dur_ns), TS_GPU);
    compact_plain(r, k->mod, &k->n_mod, sizeof *k->mod, offsetof(kmod, dur_ns), TS_MOD);
    r->kept_after = n_kept(k);
    r->changes_seen = r->f->n_changes;
}

/* ---- one event -------------------------------------------------------------------------- */

/* The dur of a kept event (0 when absent) into *dur_ns. A dur that is not a number, negative
 * or longer than 11 days is refused, naming the event: a trace whose timings are damaged cannot
 * be simulated (a clamped or guessed time would be a silently wrong answer). */
static mt_status event_dur(const kreader *r, const kin_event *e, int64_t *dur_ns) {
    const kval *jdur = &e->f[KF_DUR];
    *dur_ns = 0;
    if (!jdur->present) return MT_OK;
    const char *why = NULL;
    double dur_us = is_num(jdur) ? jdur->d : 0;
    if (!is_num(jdur)) why = "is not a number";
    else if (dur_us < 0) why = "is negative";
    else if (!(dur_us * 1000.0 <= TRACE_MAX_NS)) why = "is longer than 11 days";
    if (why) {
        char val[48] = "";
        if (is_num(jdur)) snprintf(val, sizeof val, " (%.17g us)", dur_us);
        return mt_fail(r->err, MT_EFORMAT, "%s: traceEvents[%lld].dur %s%s: event \"%.80s\" (cat %s, ts %.17g us); "
                       "the trace's timings are damaged, re-record or re-export it", r->path, (long long)e->index,
                       why, val, e->f[KF_NAME].s, e->f[KF_CAT].s, e->f[KF_TS].d);
    }
    *dur_ns = llround(dur_us * 1000.0);
    return MT_OK;
}

/* Keeps complete ("X") events with a category, in the array their category names. */
static mt_status read_event(kreader *r, const kin_event *e) {
    const kval *ph = &e->f[KF_PH], *cat = &e->f[KF_CAT], *name = &e->f[KF_NAME], *ts = &e->f[KF_TS];
    if (!ph->present || ph->type != MT_JV_STRING || strcmp(ph->s, "X") || !cat->present || cat->type != MT_JV_STRING)
        return MT_OK;
    if (!name->present || name->type != MT_JV_STRING || !is_num(ts))
        return mt_fail(r->err, MT_EFORMAT, "%s: traceEvents[%lld] (cat %s) lacks a string \"name\" or numeric "
                       "\"ts\"", r->path, (long long)e->index, cat->s);
    if (ts->d < r->lo_ts) r->lo_ts = ts->d, r->lo_ev = e->index;
    if (ts->d > r->hi_ts) r->hi_ts = ts->d, r->hi_ev = e->index;
    size_t c = 0, n = sizeof categories / sizeof *categories;
    while (c < n && strcmp(cat->s, categories[c].cat)) c++;
    if (c == n) return MT_OK;
    int64_t dur_ns;
    int keep;
    MT_CHECK(event_dur(r, e, &dur_ns));
    if (categories[c].kind == CAT_HOST_OP || categories[c].kind == CAT_ANNOTATION)
        MT_CHECK(check_input_dims(r->path, e, r->err)); /* refused in any step, kept or not */
    MT_CHECK(step_filter(r, e, categories[c].kind, ts->d, dur_ns, &keep));
    if (!keep) return MT_OK;
    switch (categories[c].kind) {
    case CAT_HOST_OP:
    case CAT_ANNOTATION:
        return add_host(r, e, ts->d, dur_ns, categories[c].kind == CAT_ANNOTATION ? KEV_ANNOTATION : KEV_OP);
    case CAT_RUNTIME: return add_runtime(r, e, ts->d, dur_ns);
    case CAT_GPU: return add_gpu(r, e, ts->d, dur_ns, categories[c].gpu);
    case CAT_PYTHON: return add_module(r, e, ts->d, dur_ns);
    case CAT_SYNC: return add_sync(r, e, ts->d, dur_ns);
    }
    return MT_OK;
}

static int on_event(void *ctx, const kin_event *e) {
    kreader *r = ctx;
    mt_status rc = read_event(r, e);
    if (rc == MT_OK) maybe_compact(r, 0);
    if (rc == MT_ENOMEM) mt_fail(r->err, MT_ENOMEM, "%s: out of memory reading Kineto events", r->path);
    return rc == MT_OK;
}

/* ---- the whole file --------------------------------------------------------------------- */

static void read_device(json_t *props, trace_strpool *pool, kineto_data *k) {
    k->device_props = json_is_array(props) ? (int)json_array_size(props) : -1;
    if (!json_is_array(props) || json_array_size(props) == 0) return;
    json_t *p0 = json_array_get(props, 0);
    json_t *nm = json_object_get(p0, "name");
    if (json_is_string(nm)) k->device_name = mt_strpool_intern(pool, json_string_value(nm), -1);
    json_t *mem = json_object_get(p0, "totalGlobalMem");
    if (json_is_integer(mem)) k->device_mem = (int64_t)json_integer_value(mem);
    else if (json_is_real(mem) && fabs(json_real_value(mem)) < 9e18) k->device_mem = (int64_t)json_real_value(mem);
}

/* Times relative to the earliest positive ts (us), so they fit comfortably in int64: refuses an
 * event more than 11 days from it (is the file damaged?). */
static mt_status relative_times(kreader *r, double min_ts) {
    kineto_data *k = r->k;
    k->base_us = (int64_t)floor(min_ts < 1e18 ? min_ts : 0);
    double base = (double)k->base_us;
    int64_t far = !(fabs((r->lo_ts - base) * 1000.0) <= TRACE_MAX_NS) ? r->lo_ev
                : !(fabs((r->hi_ts - base) * 1000.0) <= TRACE_MAX_NS) ? r->hi_ev : -1;
    if (far >= 0)
        return mt_fail(r->err, MT_EFORMAT, "%s: traceEvents[%lld].ts: %.17g us is more than 11 days from the "
                       "trace's first event (is the file damaged?)", r->path, (long long)far,
                       far == r->lo_ev ? r->lo_ts : r->hi_ts);
    for (int64_t i = 0; i < k->n_ev; i++) k->ev[i].ts_ns = llround((r->ts_us[TS_EV][i] - base) * 1000.0);
    for (int64_t i = 0; i < k->n_rt; i++) k->rt[i].ts_ns = llround((r->ts_us[TS_RT][i] - base) * 1000.0);
    for (int64_t i = 0; i < k->n_gpu; i++) k->gpu[i].ts_ns = llround((r->ts_us[TS_GPU][i] - base) * 1000.0);
    for (int64_t i = 0; i < k->n_mod; i++) k->mod[i].ts_ns = llround((r->ts_us[TS_MOD][i] - base) * 1000.0);
    return MT_OK;
}

static mt_status read_all(kreader *r, const mt_jstream_opts *opts) {
    kstream *s = mt_kstream_new(r->path, on_event, r, r->err);
    if (!s) return mt_fail(r->err, MT_ENOMEM, "%s: out of memory reading Kineto events", r->path);
    mt_status rc = mt_jstream_file(r->path, &mt_kstream_sax, s, opts, r->err);
    if (rc == MT_OK && !mt_kstream_saw_events(s))
        rc = mt_fail(r->err, MT_EFORMAT, "%s: no \"traceEvents\" array: not a Kineto trace", r->path);
    if (rc == MT_OK) {
        json_t *props = mt_kstream_take(s, "deviceProperties");
        read_device(props, r->pool, r->k);
        json_decref(props);
        r->k->dist = mt_kstream_take(s, "distributedInfo");
        maybe_compact(r, 1);
        rc = relative_times(r, mt_kstream_min_ts(s));
    }
    mt_kstream_free(s);
    return rc;
}

mt_status mt_kineto_read(const char *path, trace_strpool *pool, const mt_jstream_opts *opts,
                         const int keep_steps[2], kineto_data *k, mt_error *err) {
    memset(k, 0, sizeof *k);
    kfilter f;
    mt_kfilter_init(&f, keep_steps[0], keep_steps[1]);
    kreader r = {.path = path, .pool = pool, .k = k, .err = err, .lo_ts = INFINITY, .hi_ts = -INFINITY,
                 .lo_ev = -1, .hi_ev = -1, .f = f.n_t > 0 ? &f : NULL};
    mt_status rc = read_all(&r, opts);
    for (int i = 0; i < 4; i++) free(r.ts_us[i]);
    k->n_dropped = f.dropped;
    k->filter_sound = mt_kfilter_verify(&f);
    k->filter_last = keep_steps[0] == KFILTER_LAST ? mt_kfilter_step(&f, 0) : -1;
    mt_kfilter_destroy(&f);
    if (rc == MT_OK && k->n_ev == 0 && k->n_gpu == 0)
        rc = mt_fail(err, MT_EFORMAT, "%s: Kineto trace has no cpu_op, user_annotation or kernel events: was "
                     "the profiler active during the step?", path);
    if (rc != MT_OK) mt_kineto_free(k);
    return rc;
}

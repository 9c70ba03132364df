/* tracer/kineto.c — the Kineto reader: recognises a PyTorch profiler trace by its first bytes
 * and reads it into flat event arrays (kineto.h).
 *
 * Accepts `{"traceEvents": [...], "deviceProperties": [...]}` (PyTorch 1.13 to 2.x) and the
 * bare-array form older exporters write. Complete ("X") events are kept by category (a table
 * below); everything else (ac2g/fwdbwd flows, memory instants, metadata) is ignored. Times
 * become int64 ns relative to the first event. Cost: O(events).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/kineto.h"
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
    json_t *root = NULL;
    MT_CHECK(mt_json_load(path, &root, err));
    return mt_kineto_parse(path, root, pool, &parts->events, err);
}

const mt_trace_reader mt_reader_kineto = {"kineto-json", MT_PART_EVENTS, ".json .json.gz .gz", sniff, load};

/* ---- fields ----------------------------------------------------------------------------- */

static int64_t int_arg(json_t *args, const char *key, int64_t dflt) {
    json_t *v = args ? json_object_get(args, key) : NULL;
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (json_is_real(v) && fabs(json_real_value(v)) < 9e18) return (int64_t)json_real_value(v);
    return dflt; /* absent, or a real beyond int64 (its conversion would be undefined) */
}

static int64_t tid_of(json_t *e) {
    json_t *v = json_object_get(e, "tid");
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (json_is_string(v)) { /* "stream 7" or a label: hash it stably */
        const char *s = json_string_value(v);
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
static mt_status check_input_dims(const char *path, size_t ev, json_t *args, mt_error *err) {
    json_t *dims = args ? json_object_get(args, "Input Dims") : NULL;
    size_t a, q;
    json_t *d, *v;
    json_array_foreach(dims, a, d) {
        double numel = 1;
        json_array_foreach(d, q, v) {
            if (!json_is_integer(v)) break;
            numel *= (double)json_integer_value(v);
            if (json_integer_value(v) < 0 || numel > (double)TRACE_MAX_NUMEL)
                return mt_fail(err, MT_EFORMAT, "%s: traceEvents[%zu].args.Input Dims[%zu][%zu]: %lld is not a "
                               "tensor dimension, or makes a tensor of more than 1e12 elements (is the file "
                               "damaged?)", path, ev, a, q, (long long)json_integer_value(v));
        }
    }
    return MT_OK;
}

void mt_kineto_free(kineto_data *k) {
    if (k->root) json_decref(k->root);
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

/* One complete event, its common fields checked. */
typedef struct xev {
    json_t *e, *args;
    const char *name;
    int64_t ts_ns, dur_ns;
} xev;

static mt_status add_host(kineto_data *k, trace_strpool *pool, const xev *x, kev_kind kind) {
    if (mt_vec_reserve(&k->ev, &k->cap_ev, k->n_ev + 1)) return MT_ENOMEM;
    kev *v = &k->ev[k->n_ev++];
    v->name = mt_strpool_intern(pool, x->name, -1);
    v->tid = tid_of(x->e);
    v->ts_ns = x->ts_ns;
    v->dur_ns = x->dur_ns;
    v->ext_id = int_arg(x->args, "External id", -1);
    v->rf_id = int_arg(x->args, "Record function id", -1);
    v->seq = int_arg(x->args, "Sequence number", -1);
    v->fwd_tid = int_arg(x->args, "Fwd thread id", -1);
    v->args = x->args;
    v->kind = kind;
    v->parent = v->outer = -1;
    v->et_node = -1;
    return v->name ? MT_OK : MT_ENOMEM;
}

static mt_status add_runtime(kineto_data *k, trace_strpool *pool, const xev *x) {
    if (mt_vec_reserve(&k->rt, &k->cap_rt, k->n_rt + 1)) return MT_ENOMEM;
    krt *r = &k->rt[k->n_rt++];
    r->tid = tid_of(x->e);
    r->ts_ns = x->ts_ns;
    r->dur_ns = x->dur_ns;
    r->correlation = int_arg(x->args, "correlation", -1);
    r->name = mt_strpool_intern(pool, x->name, -1);
    return r->name ? MT_OK : MT_ENOMEM;
}

static mt_status add_gpu(kineto_data *k, trace_strpool *pool, const xev *x, trace_kernel_kind kind) {
    if (mt_vec_reserve(&k->gpu, &k->cap_gpu, k->n_gpu + 1)) return MT_ENOMEM;
    kgpu *g = &k->gpu[k->n_gpu++];
    g->ts_ns = x->ts_ns;
    g->dur_ns = x->dur_ns;
    g->correlation = int_arg(x->args, "correlation", -1);
    g->ext_id = int_arg(x->args, "External id", -1);
    g->stream = (int32_t)int_arg(x->args, "stream", -1);
    g->kind = kind;
    g->name = mt_strpool_intern(pool, x->name, -1);
    return g->name ? MT_OK : MT_ENOMEM;
}

static mt_status add_module(kineto_data *k, trace_strpool *pool, const xev *x) {
    if (strncmp(x->name, MODULE_PREFIX, strlen(MODULE_PREFIX)) != 0) return MT_OK;
    if (mt_vec_reserve(&k->mod, &k->cap_mod, k->n_mod + 1)) return MT_ENOMEM;
    kmod *m = &k->mod[k->n_mod++];
    m->name = mt_strpool_intern(pool, x->name + strlen(MODULE_PREFIX), -1);
    m->tid = tid_of(x->e);
    m->ts_ns = x->ts_ns;
    m->dur_ns = x->dur_ns;
    return m->name ? MT_OK : MT_ENOMEM;
}

/* A stream id from args[key]: -1 when absent, negative or not a 32-bit id (CUPTI writes
 * 4294967295 for "none"). */
static int32_t stream_arg(json_t *args, const char *key) {
    int64_t v = int_arg(args, key, -1);
    return v >= 0 && v < INT32_MAX ? (int32_t)v : -1;
}

static mt_status add_sync(kineto_data *k, const xev *x) {
    static const struct { const char *name; ksync_kind kind; } kinds[] = {
        {"Stream Wait Event", KSYNC_WAIT_EVENT}, {"Stream Sync", KSYNC_STREAM},
        {"Event Sync", KSYNC_EVENT}, {"Context Sync", KSYNC_CONTEXT}};
    size_t i = 0, n = sizeof kinds / sizeof *kinds;
    while (i < n && strcmp(x->name, kinds[i].name)) i++;
    if (i == n) return MT_OK;
    if (mt_vec_reserve(&k->sync, &k->cap_sync, k->n_sync + 1)) return MT_ENOMEM;
    k->sync[k->n_sync++] = (ksyncev){int_arg(x->args, "correlation", -1),
                                     int_arg(x->args, "wait_on_cuda_event_record_corr_id", -1),
                                     stream_arg(x->args, "stream"), stream_arg(x->args, "wait_on_stream"),
                                     kinds[i].kind};
    return MT_OK;
}

/* ---- parsing ---------------------------------------------------------------------------- */

static void read_device(json_t *root, trace_strpool *pool, kineto_data *k) {
    json_t *props = json_is_object(root) ? json_object_get(root, "deviceProperties") : NULL;
    if (!json_is_array(props) || json_array_size(props) == 0) return;
    json_t *p0 = json_array_get(props, 0);
    json_t *nm = json_object_get(p0, "name");
    if (json_is_string(nm)) k->device_name = mt_strpool_intern(pool, json_string_value(nm), -1);
    k->device_mem = int_arg(p0, "totalGlobalMem", 0);
}

/* The earliest positive timestamp (us), so relative ns fit comfortably in int64; 0 when none
 * or absurd (the events' own checks refuse those). */
static int64_t base_us(json_t *events) {
    double min_ts = INFINITY;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        json_t *ts = json_is_object(e) ? json_object_get(e, "ts") : NULL;
        if (json_is_number(ts) && json_number_value(ts) < min_ts && json_number_value(ts) > 0)
            min_ts = json_number_value(ts);
    }
    return (int64_t)floor(min_ts < 1e18 ? min_ts : 0);
}

/* Checks traceEvents[i]'s name and ts into *x, and keeps its dur for event_dur; *cat is NULL for
 * an event that is not a complete ("X") event with a category. */
static mt_status event_fields(const char *path, size_t i, json_t *e, int64_t base, xev *x, const char **cat,
                              mt_error *err) {
    if (!json_is_object(e)) return mt_fail(err, MT_EFORMAT, "%s: traceEvents[%zu] is not an object", path, i);
    const char *ph = json_string_value(json_object_get(e, "ph"));
    *cat = json_string_value(json_object_get(e, "cat"));
    if (!ph || strcmp(ph, "X") != 0 || !*cat) {
        *cat = NULL;
        return MT_OK;
    }
    json_t *jname = json_object_get(e, "name"), *jts = json_object_get(e, "ts");
    if (!json_is_string(jname) || !json_is_number(jts))
        return mt_fail(err, MT_EFORMAT, "%s: traceEvents[%zu] (cat %s) lacks a string \"name\" or numeric "
                       "\"ts\"", path, i, *cat);
    double ts_rel = (json_number_value(jts) - (double)base) * 1000.0;
    if (!(fabs(ts_rel) <= TRACE_MAX_NS))
        return mt_fail(err, MT_EFORMAT, "%s: traceEvents[%zu].ts: %.17g us is more than 11 days from the "
                       "trace's first event (is the file damaged?)", path, i, json_number_value(jts));
    x->e = e;
    x->ts_ns = llround(ts_rel);
    x->dur_ns = 0;
    x->args = json_object_get(e, "args");
    if (x->args && !json_is_object(x->args)) x->args = NULL;
    x->name = json_string_value(jname);
    return MT_OK;
}

/* The dur of a kept event (0 when absent) into x->dur_ns. A dur that is not a number, negative
 * or longer than 11 days is refused, naming the event: a trace whose timings are damaged cannot
 * be simulated (a clamped or guessed time would be a silently wrong answer). */
static mt_status event_dur(const char *path, size_t i, const char *cat, xev *x, mt_error *err) {
    json_t *jdur = json_object_get(x->e, "dur");
    if (!jdur) return MT_OK;
    const char *why = NULL;
    double dur_us = json_is_number(jdur) ? json_number_value(jdur) : 0;
    if (!json_is_number(jdur)) why = "is not a number";
    else if (dur_us < 0) why = "is negative";
    else if (!(dur_us * 1000.0 <= TRACE_MAX_NS)) why = "is longer than 11 days";
    if (why) {
        char val[48] = "";
        if (json_is_number(jdur)) snprintf(val, sizeof val, " (%.17g us)", dur_us);
        return mt_fail(err, MT_EFORMAT, "%s: traceEvents[%zu].dur %s%s: event \"%.80s\" (cat %s, ts %.17g us); "
                       "the trace's timings are damaged, re-record or re-export it", path, i, why, val, x->name,
                       cat, json_number_value(json_object_get(x->e, "ts")));
    }
    x->dur_ns = llround(dur_us * 1000.0);
    return MT_OK;
}

/* Keeps traceEvents[i] in the array its category names. */
static mt_status read_event(const char *path, size_t i, json_t *e, trace_strpool *pool, kineto_data *k,
                            mt_error *err) {
    xev x = {0};
    const char *cat = NULL;
    MT_CHECK(event_fields(path, i, e, k->base_us, &x, &cat, err));
    size_t c = 0, n = sizeof categories / sizeof *categories;
    while (cat && c < n && strcmp(cat, categories[c].cat)) c++;
    if (!cat || c == n) return MT_OK;
    MT_CHECK(event_dur(path, i, cat, &x, err));
    mt_status rc = MT_OK;
    switch (categories[c].kind) {
    case CAT_HOST_OP:
    case CAT_ANNOTATION:
        MT_CHECK(check_input_dims(path, i, x.args, err));
        rc = add_host(k, pool, &x, categories[c].kind == CAT_ANNOTATION ? KEV_ANNOTATION : KEV_OP);
        break;
    case CAT_RUNTIME: rc = add_runtime(k, pool, &x); break;
    case CAT_GPU: rc = add_gpu(k, pool, &x, categories[c].gpu); break;
    case CAT_PYTHON: rc = add_module(k, pool, &x); break;
    case CAT_SYNC: rc = add_sync(k, &x); break;
    }
    return rc == MT_OK ? MT_OK : mt_fail(err, MT_ENOMEM, "%s: out of memory reading Kineto events", path);
}

static mt_status parse(const char *path, json_t *root, trace_strpool *pool, kineto_data *k, mt_error *err) {
    json_t *events = json_is_array(root) ? root : json_object_get(root, "traceEvents");
    if (!json_is_array(events))
        return mt_fail(err, MT_EFORMAT, "%s: no \"traceEvents\" array: not a Kineto trace", path);
    read_device(root, pool, k);
    k->base_us = base_us(events);
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) MT_CHECK(read_event(path, i, e, pool, k, err));
    if (k->n_ev == 0 && k->n_gpu == 0)
        return mt_fail(err, MT_EFORMAT,
                       "%s: Kineto trace has no cpu_op, user_annotation or kernel events: was "
                       "the profiler active during the step?", path);
    return MT_OK;
}

mt_status mt_kineto_parse(const char *path, json_t *root, trace_strpool *pool, kineto_data *k,
                          mt_error *err) {
    memset(k, 0, sizeof *k);
    k->root = root;
    mt_status rc = parse(path, root, pool, k, err);
    if (rc != MT_OK) mt_kineto_free(k);
    return rc;
}

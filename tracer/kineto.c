/* tracer/kineto.c — reads a PyTorch profiler (Kineto) trace into flat event arrays.
 *
 * Accepts `{"traceEvents": [...], "deviceProperties": [...]}` (PyTorch 1.13 to 2.x) and the
 * bare-array form older exporters write. Keeps: cpu_op and user_annotation (host ops and
 * regions), cuda_runtime/cuda_driver (launches, with correlation), kernel/gpu_memcpy/
 * gpu_memset (device work), python_function events that are nn.Module calls (layers), and
 * deviceProperties. Everything else (ac2g/fwdbwd flows, memory instants, metadata) is ignored.
 * Times become int64 ns relative to the first event. Cost: O(events).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tracer/internal.h"
#include "util/vec.h"

int mt_kineto_detect(json_t *root) {
    if (json_is_object(root)) return json_is_array(json_object_get(root, "traceEvents"));
    if (json_is_array(root) && json_array_size(root) > 0) {
        json_t *e = json_array_get(root, 0);
        return json_is_object(e) && json_object_get(e, "ph") && json_object_get(e, "ts");
    }
    return 0;
}

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

/* The "Input Dims" of an op (tensor shapes, read by link.c for Kineto-only traces): every
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

static int is_module_event(const char *name) {
    return strncmp(name, "nn.Module: ", 11) == 0;
}

void mt_kineto_free(kineto_data *k) {
    free(k->ev);
    free(k->rt);
    free(k->gpu);
    free(k->mod);
    memset(k, 0, sizeof *k);
}

mt_status mt_kineto_parse(const char *path, json_t *root, trace_strpool *pool, kineto_data *k,
                       mt_error *err) {
    memset(k, 0, sizeof *k);
    k->root = root;
    json_t *events = json_is_array(root) ? root : json_object_get(root, "traceEvents");
    if (!json_is_array(events))
        return mt_fail(err, MT_EFORMAT, "%s: no \"traceEvents\" array: not a Kineto trace", path);

    json_t *props = json_is_object(root) ? json_object_get(root, "deviceProperties") : NULL;
    if (json_is_array(props) && json_array_size(props) > 0) {
        json_t *p0 = json_array_get(props, 0);
        json_t *nm = json_object_get(p0, "name");
        if (json_is_string(nm)) k->device_name = mt_strpool_intern(pool, json_string_value(nm), -1);
        k->device_mem = int_arg(p0, "totalGlobalMem", 0);
    }

    /* First pass: the earliest timestamp, so relative ns fit comfortably in int64. */
    double min_ts = INFINITY;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        if (!json_is_object(e)) continue;
        json_t *ts = json_object_get(e, "ts");
        if (json_is_number(ts)) {
            double v = json_number_value(ts);
            if (v < min_ts && v > 0) min_ts = v;
        }
    }
    if (!(min_ts < 1e18)) min_ts = 0; /* none, or absurd: the events' own checks below refuse them */
    k->base_us = (int64_t)floor(min_ts);

    json_array_foreach(events, i, e) {
        if (!json_is_object(e))
            return mt_fail(err, MT_EFORMAT, "%s: traceEvents[%zu] is not an object", path, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!ph || strcmp(ph, "X") != 0 || !cat) continue;
        json_t *jname = json_object_get(e, "name");
        json_t *jts = json_object_get(e, "ts");
        json_t *jdur = json_object_get(e, "dur");
        if (!json_is_string(jname) || !json_is_number(jts))
            return mt_fail(err, MT_EFORMAT,
                           "%s: traceEvents[%zu] (cat %s) lacks a string \"name\" or numeric "
                           "\"ts\"", path, i, cat);
        if (jdur && !json_is_number(jdur))
            return mt_fail(err, MT_EFORMAT, "%s: traceEvents[%zu].dur is not a number", path, i);
        double ts_rel = (json_number_value(jts) - (double)k->base_us) * 1000.0;
        double dur = jdur ? json_number_value(jdur) * 1000.0 : 0;
        if (!(fabs(ts_rel) <= TRACE_MAX_NS))
            return mt_fail(err, MT_EFORMAT, "%s: traceEvents[%zu].ts: %.17g us is more than 11 days from the "
                           "trace's first event (is the file damaged?)", path, i, json_number_value(jts));
        if (!(dur <= TRACE_MAX_NS))
            return mt_fail(err, MT_EFORMAT, "%s: traceEvents[%zu].dur: %.17g us is longer than 11 days (is the "
                           "file damaged?)", path, i, json_number_value(jdur));
        int64_t ts_ns = llround(ts_rel);
        int64_t dur_ns = dur > 0 ? llround(dur) : 0;
        json_t *args = json_object_get(e, "args");
        if (args && !json_is_object(args)) args = NULL;
        const char *name = json_string_value(jname);

        if (!strcmp(cat, "cpu_op") || !strcmp(cat, "user_annotation") ||
            !strcmp(cat, "operator") /* very old exporters */) {
            MT_CHECK(check_input_dims(path, i, args, err));
            if (mt_vec_reserve(&k->ev, &k->cap_ev, k->n_ev + 1)) goto nomem;
            kev *x = &k->ev[k->n_ev++];
            x->name = mt_strpool_intern(pool, name, -1);
            if (!x->name) goto nomem;
            x->tid = tid_of(e);
            x->ts_ns = ts_ns;
            x->dur_ns = dur_ns;
            x->ext_id = int_arg(args, "External id", -1);
            x->rf_id = int_arg(args, "Record function id", -1);
            x->seq = int_arg(args, "Sequence number", -1);
            x->fwd_tid = int_arg(args, "Fwd thread id", -1);
            x->args = args;
            x->kind = strcmp(cat, "user_annotation") ? KEV_OP : KEV_ANNOTATION;
            x->parent = x->outer = -1;
            x->et_node = -1;
        } else if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver") ||
                   !strcmp(cat, "hip_runtime")) {
            if (mt_vec_reserve(&k->rt, &k->cap_rt, k->n_rt + 1)) goto nomem;
            krt *r = &k->rt[k->n_rt++];
            r->tid = tid_of(e);
            r->ts_ns = ts_ns;
            r->dur_ns = dur_ns;
            r->correlation = int_arg(args, "correlation", -1);
            r->name = mt_strpool_intern(pool, name, -1);
            if (!r->name) goto nomem;
        } else if (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") ||
                   !strcmp(cat, "gpu_memset")) {
            if (mt_vec_reserve(&k->gpu, &k->cap_gpu, k->n_gpu + 1)) goto nomem;
            kgpu *g = &k->gpu[k->n_gpu++];
            g->ts_ns = ts_ns;
            g->dur_ns = dur_ns;
            g->correlation = int_arg(args, "correlation", -1);
            g->ext_id = int_arg(args, "External id", -1);
            g->stream = (int32_t)int_arg(args, "stream", -1);
            g->kind = cat[4] == 'm' ? (cat[7] == 'c' ? TRACE_MEMCPY : TRACE_MEMSET) : TRACE_KERNEL;
            g->name = mt_strpool_intern(pool, name, -1);
            if (!g->name) goto nomem;
        } else if (!strcmp(cat, "python_function") && is_module_event(name)) {
            if (mt_vec_reserve(&k->mod, &k->cap_mod, k->n_mod + 1)) goto nomem;
            kmod *m = &k->mod[k->n_mod++];
            m->name = mt_strpool_intern(pool, name + 11, -1);
            if (!m->name) goto nomem;
            m->tid = tid_of(e);
            m->ts_ns = ts_ns;
            m->dur_ns = dur_ns;
        }
    }
    if (k->n_ev == 0 && k->n_gpu == 0)
        return mt_fail(err, MT_EFORMAT,
                       "%s: Kineto trace has no cpu_op, user_annotation or kernel events: was "
                       "the profiler active during the step?", path);
    return MT_OK;
nomem:
    return mt_fail(err, MT_ENOMEM, "%s: out of memory reading Kineto events", path);
}

/* tracer/kstream.c — gathering Kineto events from a JSON event stream (see kstream.h).
 *
 * Levels, counted in open containers: the root (1); traceEvents, the root's member (2), or the
 * root itself when it is a bare array (1); an event object (events + 1, ev below); its members
 * and "args" (ev + 1); "Input Dims" / "Input type" (ev + 2); one "Input Dims" entry (ev + 3).
 * Anything deeper or elsewhere is counted and skipped. */
#include "tracer/kstream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/vec.h"

enum { ROOT_OTHER = 0, ROOT_EVENTS, ROOT_DEVICES, ROOT_DIST };
enum { KA_DIMS = KA_COUNT, KA_TYPES }; /* args members gathered as arrays */

static const char *const field_names[KF_COUNT] = {"ph", "cat", "name", "ts", "dur", "tid", "args"};
static const char *const arg_names[KA_COUNT] = {
    "External id", "Record function id", "Sequence number", "correlation", "stream",
    "wait_on_cuda_event_record_corr_id", "wait_on_stream", "Group size", "In msg nelems", "Out msg nelems",
    "Collective name", "dtype", "Process Group Name", "Process Group Description"};

struct kstream {
    const char *path;
    mt_error *err;
    kin_event_fn on_event;
    void *ctx;
    int64_t depth;         /* open containers */
    int64_t events;        /* level of the events array (its depth once open), 0: not in it */
    int root_object, root_key, saw_events;
    /* deviceProperties / distributedInfo */
    mt_jbuild jb;
    int capturing, cap_which;
    json_t *captured[2];
    /* the event being gathered */
    int in_event, field, arg, args_open, dims_open, types_open, entry_open, run;
    int64_t ev;            /* its level (depth inside it) */
    kin_event rec;
    char *str;             /* its strings */
    int64_t n_str, cap_str;
    kin_dims *dims;
    int64_t cap_dims;
    int64_t *dimv, n_dimv, cap_dimv;
    int64_t *type_off, n_types, cap_types, cap_typep;
    const char **types;
    int64_t n_events;
    double min_ts;
};

kstream *mt_kstream_new(const char *path, kin_event_fn on_event, void *ctx, mt_error *err) {
    kstream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->path = path;
    s->err = err;
    s->on_event = on_event;
    s->ctx = ctx;
    s->min_ts = INFINITY;
    mt_jbuild_init(&s->jb);
    return s;
}

void mt_kstream_free(kstream *s) {
    if (!s) return;
    mt_jbuild_free(&s->jb);
    for (int i = 0; i < 2; i++)
        if (s->captured[i]) json_decref(s->captured[i]);
    free(s->str);
    free(s->dims);
    free(s->dimv);
    free(s->type_off);
    free(s->types);
    free(s);
}

int mt_kstream_saw_events(const kstream *s) { return s->saw_events; }
double mt_kstream_min_ts(const kstream *s) { return s->min_ts; }

json_t *mt_kstream_take(kstream *s, const char *member) {
    int w = !strcmp(member, "distributedInfo");
    json_t *v = s->captured[w];
    s->captured[w] = NULL;
    return v;
}

static int oom(kstream *s) {
    mt_fail(s->err, MT_ENOMEM, "%s: out of memory reading Kineto events", s->path);
    return 0;
}

/* The index of key k (len bytes) in names, -1. Names differ early: compare the first byte and
 * the length before the rest. */
static int lookup(const char *const *names, int n, const char *k, size_t len) {
    for (int i = 0; i < n; i++)
        if (names[i][0] == k[0] && strlen(names[i]) == len && !memcmp(names[i], k, len)) return i;
    return -1;
}

/* ---- scalars into the record ------------------------------------------------------------ */

static int set_val(kstream *s, kval *x, const mt_jv *v) {
    *x = (kval){.present = 1, .type = (int)v->type, .i = v->i, .d = v->d, .off = -1};
    if (v->type != MT_JV_STRING) return 1;
    if (mt_vec_reserve(&s->str, &s->cap_str, s->n_str + (int64_t)v->len + 1)) return oom(s);
    memcpy(s->str + s->n_str, v->s, v->len + 1);
    x->off = s->n_str;
    s->n_str += (int64_t)v->len + 1;
    return 1;
}

static int add_type(kstream *s, const mt_jv *v) {
    if (mt_vec_reserve(&s->type_off, &s->cap_types, s->n_types + 1)) return oom(s);
    kval t = {.off = -1};
    if (v && v->type == MT_JV_STRING && !set_val(s, &t, v)) return 0;
    s->type_off[s->n_types++] = t.off;
    return 1;
}

static int add_entry(kstream *s, int is_array) {
    if (mt_vec_reserve(&s->dims, &s->cap_dims, (int64_t)s->rec.n_dims + 1)) return oom(s);
    s->dims[s->rec.n_dims++] = (kin_dims){.first = s->n_dimv, .ndim = 0, .size = is_array ? 0 : -1};
    s->entry_open = is_array;
    s->run = 1;
    return 1;
}

/* An element of the open "Input Dims" entry: leading integers are kept, every element counted. */
static int entry_element(kstream *s, const mt_jv *v) {
    kin_dims *d = &s->dims[s->rec.n_dims - 1];
    d->size++;
    if (!s->run || !v || v->type != MT_JV_INT) {
        s->run = 0;
        return 1;
    }
    if (mt_vec_reserve(&s->dimv, &s->cap_dimv, s->n_dimv + 1)) return oom(s);
    s->dimv[s->n_dimv++] = v->i;
    d->ndim++;
    return 1;
}

/* ---- one event -------------------------------------------------------------------------- */

static void begin_event(kstream *s) {
    memset(&s->rec, 0, sizeof s->rec);
    s->rec.index = s->n_events++;
    s->in_event = 1;
    s->ev = s->depth + 1;
    s->field = s->arg = -1;
    s->n_str = s->n_dimv = s->n_types = 0;
}

static void resolve(kstream *s, kval *x) {
    if (x->present && x->type == MT_JV_STRING) x->s = s->str + x->off;
}

static int end_event(kstream *s) {
    kin_event *r = &s->rec;
    s->in_event = 0;
    for (int i = 0; i < KF_COUNT; i++) resolve(s, &r->f[i]);
    for (int i = 0; i < KA_COUNT; i++) resolve(s, &r->a[i]);
    if (mt_vec_reserve(&s->types, &s->cap_typep, s->n_types + 1)) return oom(s);
    for (int64_t i = 0; i < s->n_types; i++) s->types[i] = s->type_off[i] >= 0 ? s->str + s->type_off[i] : NULL;
    r->types = s->types;
    r->dims = s->dims;
    r->dimv = s->dimv;
    const kval *ts = &r->f[KF_TS];
    if (ts->present && (ts->type == MT_JV_INT || ts->type == MT_JV_REAL) && ts->d > 0 && ts->d < s->min_ts)
        s->min_ts = ts->d;
    return s->on_event(s->ctx, r);
}

static int not_object(kstream *s) {
    mt_fail(s->err, MT_EFORMAT, "%s: traceEvents[%lld] is not an object", s->path, (long long)s->n_events);
    return 0;
}

/* ---- the handler ------------------------------------------------------------------------ */

static int forward_done(kstream *s) {
    if (!mt_jbuild_finished(&s->jb) && !s->jb.failed) return 1;
    json_t *v = mt_jbuild_take(&s->jb);
    if (!v) return oom(s);
    if (s->captured[s->cap_which]) json_decref(s->captured[s->cap_which]);
    s->captured[s->cap_which] = v;
    s->capturing = 0;
    return 1;
}

static int on_value(void *c, const mt_jv *v) {
    kstream *s = c;
    if (s->capturing) return mt_jbuild_sax.value(&s->jb, v) ? forward_done(s) : oom(s);
    if (s->events && s->depth == s->events && !s->in_event) {
        s->rec.index = s->n_events;
        return not_object(s);
    }
    if (!s->in_event) return 1;
    int64_t lvl = s->depth - s->ev;
    if (lvl == 0 && s->field >= 0) return set_val(s, &s->rec.f[s->field], v);
    if (lvl == 1 && s->args_open) {
        if (s->arg == KA_DIMS) s->rec.n_dims = 0, s->n_dimv = 0;
        else if (s->arg == KA_TYPES) s->n_types = 0, s->rec.n_types = 0;
        else if (s->arg >= 0) return set_val(s, &s->rec.a[s->arg], v);
        return 1;
    }
    if (lvl == 2 && s->dims_open) return add_entry(s, 0);
    if (lvl == 2 && s->types_open) return add_type(s, v) ? (s->rec.n_types = (int32_t)s->n_types, 1) : 0;
    if (lvl == 3 && s->entry_open) return entry_element(s, v);
    return 1;
}

/* A container opens at the current depth (before it is counted). */
static int open_at(kstream *s, int is_map) {
    int64_t d = s->depth;
    if (d == 0) {
        s->root_object = is_map;
        if (!is_map) s->events = 1, s->saw_events = 1;
        return 1;
    }
    if (d == 1 && s->root_object) {
        if (s->root_key == ROOT_EVENTS && !is_map) s->events = 2, s->saw_events = 1;
        if ((s->root_key == ROOT_DEVICES && !is_map) || (s->root_key == ROOT_DIST && is_map)) {
            s->capturing = 1;
            s->cap_which = s->root_key == ROOT_DIST;
            return (is_map ? mt_jbuild_sax.start_map(&s->jb) : mt_jbuild_sax.start_array(&s->jb)) ? 1 : oom(s);
        }
        return 1;
    }
    if (s->events && d == s->events && !s->in_event) {
        if (!is_map) return s->rec.index = s->n_events, not_object(s);
        begin_event(s);
        return 1;
    }
    if (!s->in_event) return 1;
    int64_t lvl = d - s->ev;
    if (lvl == 0 && s->field >= 0) {
        s->rec.f[s->field] = (kval){.present = 1, .type = KV_CONTAINER, .off = -1};
        if (s->field == KF_ARGS && is_map) {
            s->args_open = 1;
            s->rec.args_object = 1;
            memset(s->rec.a, 0, sizeof s->rec.a);
            s->rec.n_dims = s->rec.n_types = 0;
            s->n_dimv = s->n_types = 0;
        }
    } else if (lvl == 1 && s->args_open) {
        if (s->arg == KA_DIMS) s->rec.n_dims = 0, s->n_dimv = 0, s->dims_open = !is_map;
        else if (s->arg == KA_TYPES) s->n_types = 0, s->rec.n_types = 0, s->types_open = !is_map;
        else if (s->arg >= 0) s->rec.a[s->arg] = (kval){.present = 1, .type = KV_CONTAINER, .off = -1};
    } else if (lvl == 2 && s->dims_open) {
        return add_entry(s, !is_map);
    } else if (lvl == 2 && s->types_open) {
        return add_type(s, NULL) ? (s->rec.n_types = (int32_t)s->n_types, 1) : 0;
    } else if (lvl == 3 && s->entry_open) {
        return entry_element(s, NULL);
    }
    return 1;
}

static int on_open(kstream *s, int is_map) {
    if (s->capturing) {
        s->depth++;
        return (is_map ? mt_jbuild_sax.start_map(&s->jb) : mt_jbuild_sax.start_array(&s->jb)) ? 1 : oom(s);
    }
    int ok = open_at(s, is_map);
    s->depth++;
    return ok;
}

static int on_start_map(void *c) { return on_open(c, 1); }
static int on_start_array(void *c) { return on_open(c, 0); }

static int on_close(void *c) {
    kstream *s = c;
    int64_t d = --s->depth;
    if (s->capturing) return mt_jbuild_sax.end_map(&s->jb) ? forward_done(s) : oom(s);
    if (s->events && d == s->events - 1) {
        s->events = 0;
        return 1;
    }
    if (!s->in_event) return 1;
    int64_t lvl = d - s->ev;
    if (lvl == -1) return end_event(s);
    if (lvl == 0 && s->args_open && s->field == KF_ARGS) s->args_open = 0;
    else if (lvl == 1) s->dims_open = s->types_open = 0;
    else if (lvl == 2 && s->entry_open) s->entry_open = 0;
    return 1;
}

static int on_key(void *c, const char *k, size_t len) {
    kstream *s = c;
    if (s->capturing) return mt_jbuild_sax.key(&s->jb, k, len) ? 1 : oom(s);
    if (s->depth == 1 && s->root_object) {
        s->root_key = !strcmp(k, "traceEvents") ? ROOT_EVENTS : !strcmp(k, "deviceProperties") ? ROOT_DEVICES
                    : !strcmp(k, "distributedInfo") ? ROOT_DIST : ROOT_OTHER;
        return 1;
    }
    if (!s->in_event) return 1;
    int64_t lvl = s->depth - s->ev;
    if (lvl == 0) s->field = lookup(field_names, KF_COUNT, k, len);
    else if (lvl == 1 && s->args_open)
        s->arg = !strcmp(k, "Input Dims") ? KA_DIMS : !strcmp(k, "Input type") ? KA_TYPES
               : lookup(arg_names, KA_COUNT, k, len);
    return 1;
}

const mt_jsax mt_kstream_sax = {on_value, on_start_map, on_key, on_close, on_start_array, on_close};

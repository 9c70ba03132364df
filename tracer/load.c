/* tracer/load.c — mt_trace_load(): finds the files of a trace, tells what each is by its content
 * (the reader registry, reader.h; gzip or not), loads the parts, puts the trace together (the
 * linker, link.h, the TrioSim builder, triosim.h, or the Chakra one, cktrace.h), classifies its
 * operators (opclass.h), and owns the trace's lifetime.
 *
 * Files: each path is a file, sniffed whatever its name, or a directory, whose entries with a
 * suffix some reader lists are sniffed in name order (dot files and subdirectories skipped; files
 * no reader claims, such as meta.json, ignored). An empty file is an error even in a directory, and
 * so is a file named *.json or *.json.gz that is not JSON.
 * At most one file per part, and one format per trace: TrioSim CSV files together with Kineto or
 * Execution Trace files, or a Chakra ET with either (two traces in one call), are refused, naming
 * one file of each.
 * Sniffing reads a prefix of each file (64 KiB, eight times more while a reader needs more).
 * A Kineto + ET pair: the ET is read first, so the Kineto reader can keep only the neighbourhood
 * of the step to build (tracer/kfilter.h); when a drop may have changed the result, the trace is
 * loaded again keeping every event (load_attempt), so it is always the whole file's.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/cktrace.h"
#include "tracer/device.h"
#include "tracer/meta.h"
#include "tracer/kfilter.h"
#include "tracer/link.h"
#include "tracer/opclass.h"
#include "tracer/saved.h"
#include "tracer/reader.h"
#include "tracer/triosim.h"
#include "util/fileio.h"

#define SNIFF_FIRST_BYTES ((size_t)64 << 10)

void mt_trace_load_opts_init(trace_load_opts *o) {
    memset(o, 0, sizeof *o);
    o->step = -1;
    o->min_link_ratio = 0.5;
    const char *r = getenv("MITOSIS_JSON_READER");
    o->dom_reader = r && !strcmp(r, "dom");
}

int64_t mt_trace_total_dev_ns(const mt_trace *t) {
    int64_t s = 0;
    for (int32_t i = 0; i < t->n_ops; i++) s += t->ops[i].dev_ns;
    return s;
}

void mt_trace_free(mt_trace *t) {
    if (!t) return;
    free(t->kineto_path);
    free(t->et_path);
    free(t->expert_pattern);
    free(t->ops);
    free(t->kernels);
    free(t->tensors);
    free(t->trefs);
    free(t->dims);
    free(t->layers);
    free(t->syncs);
    free(t->colls);
    free(t->waits);
    free(t->saved);
    free(t->bwd_temps);
    free(t->dist.pgs);
    mt_strpool_free(t->pool);
    free(t);
}

static int dup_array(void **dst, const void *src, int64_t n, size_t size) {
    *dst = malloc((size_t)(n > 0 ? n : 1) * size);
    if (*dst && n > 0) memcpy(*dst, src, (size_t)n * size);
    return *dst != NULL;
}

static int dup_string(char **dst, const char *src) {
    *dst = NULL;
    if (!src) return 1;
    *dst = malloc(strlen(src) + 1);
    if (*dst) strcpy(*dst, src);
    return *dst != NULL;
}

mt_status mt_trace_clone(const mt_trace *t, mt_trace **out) {
    mt_trace *o = calloc(1, sizeof *o);
    if (!o) return MT_ENOMEM;
    *o = *t;
    o->kineto_path = o->et_path = o->expert_pattern = NULL;
    o->ops = NULL, o->kernels = NULL, o->tensors = NULL, o->trefs = NULL, o->dims = NULL, o->layers = NULL;
    o->syncs = NULL, o->colls = NULL, o->waits = NULL, o->saved = NULL, o->bwd_temps = NULL, o->dist.pgs = NULL;
    o->pool = mt_strpool_new();
    int ok = o->pool && dup_string(&o->kineto_path, t->kineto_path) && dup_string(&o->et_path, t->et_path) &&
             dup_string(&o->expert_pattern, t->expert_pattern) &&
             dup_array((void **)&o->ops, t->ops, t->n_ops, sizeof *t->ops) &&
             dup_array((void **)&o->kernels, t->kernels, t->n_kernels, sizeof *t->kernels) &&
             dup_array((void **)&o->tensors, t->tensors, t->n_tensors, sizeof *t->tensors) &&
             dup_array((void **)&o->trefs, t->trefs, t->n_trefs, sizeof *t->trefs) &&
             dup_array((void **)&o->dims, t->dims, t->n_dims, sizeof *t->dims) &&
             dup_array((void **)&o->layers, t->layers, t->n_layers, sizeof *t->layers) &&
             dup_array((void **)&o->syncs, t->syncs, t->n_syncs, sizeof *t->syncs) &&
             dup_array((void **)&o->colls, t->colls, t->n_colls, sizeof *t->colls) &&
             dup_array((void **)&o->waits, t->waits, t->n_waits, sizeof *t->waits) &&
             dup_array((void **)&o->saved, t->saved, t->n_saved, sizeof *t->saved) &&
             dup_array((void **)&o->bwd_temps, t->bwd_temps, t->n_bwd_temps, sizeof *t->bwd_temps) &&
             dup_array((void **)&o->dist.pgs, t->dist.pgs, t->dist.n_pgs, sizeof *t->dist.pgs);
    if (!ok) {
        mt_trace_free(o);
        return MT_ENOMEM;
    }
    *out = o;
    return MT_OK;
}

mt_status mt_trace_check_timed(const mt_trace *t, mt_error *err) {
    const char *path = t->kineto_path ? t->kineto_path : t->et_path ? t->et_path : "trace";
    if (t->format == TRACE_FORMAT_ET)
        return mt_fail(err, MT_EFORMAT, "%s: an Execution Trace alone has no operator times (give the "
                       "Kineto trace of the same step too: both files, or a directory holding both)", path);
    if (t->n_ops == 0)
        return mt_fail(err, MT_EFORMAT, "%s: the step holds no operators, so there is nothing to time "
                       "(mitosis inspect lists the trace's steps)", path);
    if (mt_trace_total_dev_ns(t) <= 0)
        return mt_fail(err, MT_EFORMAT, "%s: every operator of the step lasts 0 ns, so there is no time "
                       "to extrapolate (is the trace damaged?)", path);
    return MT_OK;
}

int mt_trace_warning(const mt_trace *t, char *buf, size_t len) {
    int64_t left = t->n_kernels_left_out, total = left + t->n_kernels;
    if (len) buf[0] = '\0';
    if (!len || (left <= 0 && !(t->warning && *t->warning))) return 0;
    size_t at = 0;
    if (t->warning && *t->warning) at = (size_t)snprintf(buf, len, "%s", t->warning);
    if (left > 0 && at + 2 < len)
        snprintf(buf + at, len - at, "%s%s: %lld of the step's %lld GPU kernels (%.1f%%) cannot be attached to any "
                 "operator (their launch matches no op) and are left out of the operator times", at ? "; " : "",
                 t->kineto_path ? t->kineto_path : "trace", (long long)left, (long long)total,
                 100.0 * (double)left / (double)total);
    return 1;
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- telling files apart ---------------------------------------------------------------- */

/* The reader of `path` (NULL when none claims it); *json_like when its first byte (after
 * whitespace) opens a JSON document. */
static mt_status sniff_file(const char *path, const mt_trace_reader **reader, int *json_like, mt_error *err) {
    for (size_t max = SNIFF_FIRST_BYTES;; max *= 8) {
        char *head = NULL;
        size_t len = 0;
        int complete = 0, more = 1;
        MT_CHECK(mt_read_prefix(path, max, &head, &len, &complete, err));
        const char *p = mt_sniff_ws(head, head + len);
        int blank = p == head + len;
        *json_like = !blank && (*p == '{' || *p == '[');
        *reader = blank ? NULL : mt_reader_find(head, len, complete, &more);
        free(head);
        if (blank && complete) /* never skipped in a directory: an empty kineto.json is a broken trace */
            return mt_fail(err, MT_EFORMAT, "%s: empty file (re-copy it, or move it out of the trace directory)",
                           path);
        if (*reader || complete || !more) return MT_OK;
    }
}

/* True when the name says JSON (".json", ".json.gz"). */
static int json_named(const char *path) {
    size_t n = strlen(path);
    return (n > 5 && !strcmp(path + n - 5, ".json")) || (n > 8 && !strcmp(path + n - 8, ".json.gz"));
}

/* A file no reader claims: refused when named explicitly; in a directory skipped, unless it is
 * broken JSON (then jansson's message says where) or named JSON without being JSON (a Kineto or
 * ET file garbled in copying: skipping it would leave the other half of the trace alone, with
 * zero times). */
static mt_status unclaimed(const char *path, int explicit_path, int json_like, mt_error *err) {
    if (json_like) {
        json_t *root = NULL;
        MT_CHECK(mt_json_load(path, &root, err));
        json_decref(root);
        if (explicit_path)
            return mt_fail(err, MT_EFORMAT, "%s: JSON is neither a Kineto trace (\"traceEvents\") nor an "
                           "Execution Trace (\"nodes\")", path);
        return MT_OK;
    }
    if (!explicit_path && json_named(path))
        return mt_fail(err, MT_EFORMAT, "%s: not JSON, so neither a Kineto trace nor an Execution Trace (re-copy "
                       "it, or move it out of the trace directory)", path);
    if (explicit_path)
        return mt_fail(err, MT_EFORMAT, "%s: unknown format: expected Kineto JSON, Execution Trace JSON "
                       "(optionally gzipped), a TrioSim CSV or a Chakra ET", path);
    return MT_OK;
}

static mt_status add_file(mt_trace_parts *parts, const char *path, int explicit_path, mt_error *err) {
    const mt_trace_reader *r;
    int json_like;
    MT_CHECK(sniff_file(path, &r, &json_like, err));
    if (!r) return unclaimed(path, explicit_path, json_like, err);
    if (parts->path[r->part])
        return mt_fail(err, MT_EINVAL, "%s and %s are both %s files: pass one trace at a time "
                       "(name the files explicitly)", parts->path[r->part], path, mt_reader_part_label(r->part));
    if (!(parts->path[r->part] = dupstr(path))) return mt_fail(err, MT_ENOMEM, "out of memory");
    parts->reader[r->part] = r;
    return MT_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of dir worth sniffing (mt_reader_dir_candidate), as dir/name, sorted. */
static mt_status list_dir(DIR *d, const char *dir, char ***names, size_t *n, mt_error *err) {
    size_t cap = 0, dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !mt_reader_dir_candidate(de->d_name)) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(*names, cap * sizeof *nn);
            if (!nn) return mt_fail(err, MT_ENOMEM, "out of memory");
            *names = nn;
        }
        size_t pl = dl + strlen(de->d_name) + 2;
        if (!((*names)[*n] = malloc(pl))) return mt_fail(err, MT_ENOMEM, "out of memory");
        snprintf((*names)[(*n)++], pl, "%.*s/%s", (int)dl, dir, de->d_name);
    }
    if (*n > 0) qsort(*names, *n, sizeof **names, cmp_str);
    return MT_OK;
}

static mt_status scan_dir(mt_trace_parts *parts, const char *dir, mt_error *err) {
    DIR *d = opendir(dir);
    if (!d) return mt_fail(err, MT_EIO, "%s: cannot open directory", dir);
    char **names = NULL;
    size_t n = 0;
    mt_status rc = list_dir(d, dir, &names, &n, err);
    closedir(d);
    for (size_t i = 0; i < n && rc == MT_OK; i++)
        if (!mt_is_dir(names[i])) rc = add_file(parts, names[i], 0, err);
    if (rc == MT_OK && !parts->path[MT_PART_EVENTS] && !parts->path[MT_PART_GRAPH] && !parts->path[MT_PART_CSV_OPS] &&
        !parts->path[MT_PART_CHAKRA])
        rc = mt_fail(err, MT_EFORMAT, "%s: no Kineto, Execution Trace, TrioSim CSV or Chakra ET file found in this "
                     "directory", dir);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

/* One trace, one format: a TrioSim file beside a Kineto or ET file (or a Chakra ET beside either)
 * means two traces were given (two directories, or a directory holding both kinds), and using
 * either would ignore the other. */
static mt_status check_one_format(const mt_trace_parts *p, mt_error *err) {
    int pt = p->path[MT_PART_EVENTS] ? MT_PART_EVENTS : MT_PART_GRAPH;
    int ct = p->path[MT_PART_CSV_OPS] ? MT_PART_CSV_OPS : MT_PART_CSV_TENSORS;
    int first = p->path[pt] ? pt : p->path[ct] ? ct : -1;
    int second = first == pt && p->path[ct] ? ct : first >= 0 && p->path[MT_PART_CHAKRA] ? MT_PART_CHAKRA : -1;
    if (second < 0) return MT_OK;
    return mt_fail(err, MT_EINVAL, "%s (%s) and %s (%s) belong to two traces of different formats: give "
                   "one trace per call (a Kineto + Execution Trace pair, a TrioSim trace.csv + tensor.csv pair, or "
                   "one Chakra ET)", p->path[first], mt_reader_part_label((mt_trace_part)first), p->path[second],
                   mt_reader_part_label((mt_trace_part)second));
}

/* ---- putting a trace together ----------------------------------------------------------- */

static mt_status load_part(mt_trace_parts *parts, mt_trace_part part, mt_trace *t, mt_error *err) {
    if (!parts->path[part]) return MT_OK;
    MT_CHECK(parts->reader[part]->load(parts->path[part], t->pool, parts, err));
    parts->loaded[part] = 1;
    return MT_OK;
}

static mt_status build_triosim(mt_trace_parts *p, mt_trace *t, mt_error *err) {
    const char *ops = p->path[MT_PART_CSV_OPS], *tensors = p->path[MT_PART_CSV_TENSORS];
    if (!ops || !tensors)
        return mt_fail(err, MT_EINVAL, "%s: a TrioSim trace needs both trace.csv and tensor.csv; the %s file "
                       "is missing", ops ? ops : tensors, ops ? "tensor" : "trace");
    t->kineto_path = dupstr(ops);
    t->et_path = dupstr(tensors);
    MT_CHECK(load_part(p, MT_PART_CSV_OPS, t, err));
    MT_CHECK(load_part(p, MT_PART_CSV_TENSORS, t, err));
    return mt_triosim_build(ops, &p->csv[0], tensors, &p->csv[1], t, err);
}

static mt_status build_chakra(mt_trace_parts *p, mt_trace *t, mt_error *err) {
    const char *path = p->path[MT_PART_CHAKRA];
    MT_CHECK(load_part(p, MT_PART_CHAKRA, t, err));
    t->kineto_path = dupstr(path);
    return mt_cktrace_build(path, &p->chakra, t, err);
}

/* The steps whose neighbourhoods alone the Kineto reader keeps (kfilter.h): --step K, and the
 * ProfilerStep#E the ET recorded (what linking matches); without an ET and --step, the last step
 * (KFILTER_LAST); none for the reference reader, a retry, or an ET naming no step (its matches
 * could lie anywhere). *expect: the step to be built (KFILTER_LAST: the latest the filter saw). */
static void filter_steps(mt_trace_parts *p, const trace_load_opts *opts, int allow_filter, int *expect) {
    int with_et = p->loaded[MT_PART_GRAPH], e = with_et ? mt_et_profiler_step(&p->graph) : -1;
    p->keep_steps[0] = p->keep_steps[1] = *expect = -1;
    if (!allow_filter || opts->dom_reader || (with_et && e < 0)) return;
    p->keep_steps[0] = opts->step >= 0 || with_et ? opts->step : KFILTER_LAST;
    p->keep_steps[1] = e;
    *expect = opts->step >= 0 ? opts->step : with_et ? e : KFILTER_LAST;
}

static mt_status build_linked(mt_trace_parts *p, const trace_load_opts *opts, int allow_filter, int *expect,
                              mt_trace *t, mt_error *err) {
    const char *kpath = p->path[MT_PART_EVENTS], *epath = p->path[MT_PART_GRAPH];
    MT_CHECK(load_part(p, MT_PART_GRAPH, t, err)); /* first: it may name the step to keep */
    filter_steps(p, opts, allow_filter, expect);
    MT_CHECK(load_part(p, MT_PART_EVENTS, t, err));
    t->kineto_path = kpath ? dupstr(kpath) : NULL;
    t->et_path = epath ? dupstr(epath) : NULL;
    t->has_et = epath != NULL;
    t->format = kpath && epath ? TRACE_FORMAT_KINETO_ET : kpath ? TRACE_FORMAT_KINETO : TRACE_FORMAT_ET;
    MT_CHECK(mt_link_build(kpath, kpath ? &p->events : NULL, epath, epath ? &p->graph : NULL, opts, t, err));
    if (epath && !kpath) t->format = TRACE_FORMAT_ET;
    if (epath) MT_CHECK(mt_saved_build(&p->graph, t, err));
    return MT_OK;
}

/* One attempt at loading; *retry set when the step filter dropped events and its step was not
 * the one built, or a drop may have been wrong, or the build failed (t is then freed: the caller
 * loads again keeping every event, so the result is always that of the whole file). */
static mt_status load_attempt(const char *const *paths, int n_paths, const trace_load_opts *opts, int allow_filter,
                              mt_trace **out, int *retry, mt_error *err) {
    mt_trace_parts parts = {0};
    parts.jopts = (mt_jstream_opts){opts->on_progress, opts->progress_ctx, opts->dom_reader};
    int expect = -1;
    mt_status rc = MT_OK;
    for (int i = 0; i < n_paths && rc == MT_OK; i++)
        rc = mt_is_dir(paths[i]) ? scan_dir(&parts, paths[i], err) : add_file(&parts, paths[i], 1, err);
    if (rc == MT_OK) rc = check_one_format(&parts, err);
    mt_trace *t = rc == MT_OK ? calloc(1, sizeof *t) : NULL;
    if (rc == MT_OK && (!t || !(t->pool = mt_strpool_new())))
        rc = mt_fail(err, MT_ENOMEM, "out of memory");
    if (rc == MT_OK) {
        t->step = -1;
        if (parts.path[MT_PART_CSV_OPS] || parts.path[MT_PART_CSV_TENSORS]) rc = build_triosim(&parts, t, err);
        else if (parts.path[MT_PART_CHAKRA]) rc = build_chakra(&parts, t, err);
        else rc = build_linked(&parts, opts, allow_filter, &expect, t, err);
    }
    if (expect == KFILTER_LAST) expect = parts.events.filter_last;
    *retry = parts.events.n_dropped > 0 &&
             (rc != MT_OK || !parts.events.filter_sound || !t || t->step != expect);
    mt_reader_parts_free(&parts);
    if (rc != MT_OK || *retry) {
        mt_trace_free(t);
        return rc;
    }
    mt_device_resolve(t, paths[0]);
    mt_trace_meta_batch(t, paths[0]);
    if (opts->expert_pattern && !(t->expert_pattern = dupstr(opts->expert_pattern))) {
        mt_trace_free(t);
        return mt_fail(err, MT_ENOMEM, "out of memory loading the trace");
    }
    mt_opclass_trace(t);
    *out = t;
    return MT_OK;
}

mt_status mt_trace_load(const char *const *paths, int n_paths, const trace_load_opts *opts_in,
                        mt_trace **out, mt_error *err) {
    trace_load_opts opts;
    if (opts_in) opts = *opts_in;
    else mt_trace_load_opts_init(&opts);
    if (n_paths < 1) return mt_fail(err, MT_EINVAL, "no trace given");
    int retry = 0;
    mt_status rc = load_attempt(paths, n_paths, &opts, 1, out, &retry, err);
    if (retry) rc = load_attempt(paths, n_paths, &opts, 0, out, &retry, err);
    return rc;
}

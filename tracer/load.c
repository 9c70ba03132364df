/* tracer/load.c — mt_trace_load(): finds the files of a trace, detects their formats by content
 * (gzip or not), runs the matching readers and the linker, and owns the trace's lifetime.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/internal.h"
#include "util/fileio.h"

int mt_triosim_detect_header(const char *buf);

void mt_trace_load_opts_init(trace_load_opts *o) {
    o->step = -1;
    o->min_link_ratio = 0.5;
}

int64_t mt_trace_total_dev_ns(const trace *t) {
    int64_t s = 0;
    for (int32_t i = 0; i < t->n_ops; i++) s += t->ops[i].dev_ns;
    return s;
}

void mt_trace_free(trace *t) {
    if (!t) return;
    free(t->kineto_path);
    free(t->et_path);
    free(t->ops);
    free(t->kernels);
    free(t->tensors);
    free(t->trefs);
    free(t->dims);
    free(t->layers);
    free(t->syncs);
    mt_strpool_free(t->pool);
    free(t);
}

mt_status mt_trace_check_timed(const trace *t, mt_error *err) {
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

typedef enum { F_UNKNOWN = 0, F_KINETO, F_ET, F_CSV_TRACE, F_CSV_TENSOR } file_kind;

typedef struct found {
    char *kineto, *et, *csv_trace, *csv_tensor;
    json_t *kineto_json, *et_json;
} found;

static void found_free(found *f) {
    free(f->kineto);
    free(f->et);
    free(f->csv_trace);
    free(f->csv_tensor);
    if (f->kineto_json) json_decref(f->kineto_json);
    if (f->et_json) json_decref(f->et_json);
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Classifies one file; JSON documents are kept parsed in *json. */
static mt_status classify(const char *path, int explicit_path, file_kind *kind, json_t **json,
                          mt_error *err) {
    *kind = F_UNKNOWN;
    *json = NULL;
    char *buf = NULL;
    size_t len = 0;
    MT_CHECK(mt_read_file(path, &buf, &len, err));
    size_t i = 0;
    while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) i++;
    if (i == len) { /* never skipped in a directory: an empty kineto.json is a broken trace */
        free(buf);
        return mt_fail(err, MT_EFORMAT, "%s: empty file (re-copy it, or move it out of the trace "
                       "directory)", path);
    }
    if (i < len && (buf[i] == '{' || buf[i] == '[')) {
        json_t *root = NULL;
        mt_status rc = mt_json_parse(path, buf, len, &root, err);
        free(buf);
        if (rc != MT_OK) return rc;
        if (mt_kineto_detect(root)) *kind = F_KINETO;
        else if (mt_et_detect(root)) *kind = F_ET;
        if (*kind == F_UNKNOWN) {
            json_decref(root);
            if (explicit_path)
                return mt_fail(err, MT_EFORMAT, "%s: JSON is neither a Kineto trace "
                               "(\"traceEvents\") nor an Execution Trace (\"nodes\")", path);
            return MT_OK;
        }
        *json = root;
        return MT_OK;
    }
    int h = mt_triosim_detect_header(buf + i);
    free(buf);
    if (h == 1) *kind = F_CSV_TRACE;
    else if (h == 2) *kind = F_CSV_TENSOR;
    else if (explicit_path)
        return mt_fail(err, MT_EFORMAT, "%s: unknown format: expected Kineto JSON, Execution "
                       "Trace JSON (optionally gzipped) or a TrioSim CSV", path);
    return MT_OK;
}

static mt_status add_file(found *f, const char *path, int explicit_path, mt_error *err) {
    file_kind kind;
    json_t *json;
    MT_CHECK(classify(path, explicit_path, &kind, &json, err));
    char **slot = kind == F_KINETO ? &f->kineto : kind == F_ET ? &f->et
                : kind == F_CSV_TRACE ? &f->csv_trace : kind == F_CSV_TENSOR ? &f->csv_tensor : NULL;
    if (!slot) return MT_OK;
    if (*slot) {
        if (json) json_decref(json);
        return mt_fail(err, MT_EINVAL, "%s and %s are both %s files: pass one trace at a time "
                       "(name the files explicitly)", *slot, path,
                       kind == F_KINETO ? "Kineto" : kind == F_ET ? "Execution Trace" : "TrioSim CSV");
    }
    *slot = dupstr(path);
    if (!*slot) {
        if (json) json_decref(json);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    if (kind == F_KINETO) f->kineto_json = json;
    else if (kind == F_ET) f->et_json = json;
    return MT_OK;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static mt_status scan_dir(found *f, const char *dir, mt_error *err) {
    DIR *d = opendir(dir);
    if (!d) return mt_fail(err, MT_EIO, "%s: cannot open directory", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    mt_status rc = MT_OK;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        size_t len = strlen(de->d_name);
        int json_like = (len > 5 && !strcmp(de->d_name + len - 5, ".json")) ||
                        (len > 8 && !strcmp(de->d_name + len - 8, ".json.gz")) ||
                        (len > 3 && !strcmp(de->d_name + len - 3, ".gz")) ||
                        (len > 4 && !strcmp(de->d_name + len - 4, ".csv"));
        if (!json_like) continue; /* directories hold other things too: only look at data files */
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                rc = mt_fail(err, MT_ENOMEM, "out of memory");
                goto out;
            }
            names = nn;
        }
        size_t pl = strlen(dir) + len + 2;
        names[n] = malloc(pl);
        if (!names[n]) {
            rc = mt_fail(err, MT_ENOMEM, "out of memory");
            goto out;
        }
        size_t dl = strlen(dir);
        while (dl > 1 && dir[dl - 1] == '/') dl--;
        snprintf(names[n], pl, "%.*s/%s", (int)dl, dir, de->d_name);
        n++;
    }
    if (n > 0) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n && rc == MT_OK; i++) {
        if (mt_is_dir(names[i])) continue;
        rc = add_file(f, names[i], 0, err);
    }
    if (rc == MT_OK && !f->kineto && !f->et && !f->csv_trace)
        rc = mt_fail(err, MT_EFORMAT, "%s: no Kineto, Execution Trace or TrioSim CSV file found "
                     "in this directory", dir);
out:
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    closedir(d);
    return rc;
}

mt_status mt_trace_load(const char *const *paths, int n_paths, const trace_load_opts *opts_in,
                     trace **out, mt_error *err) {
    trace_load_opts opts;
    if (opts_in) opts = *opts_in;
    else mt_trace_load_opts_init(&opts);
    if (n_paths < 1) return mt_fail(err, MT_EINVAL, "no trace given");
    found f = {0};
    mt_status rc = MT_OK;
    for (int i = 0; i < n_paths && rc == MT_OK; i++)
        rc = mt_is_dir(paths[i]) ? scan_dir(&f, paths[i], err) : add_file(&f, paths[i], 1, err);
    if (rc != MT_OK) {
        found_free(&f);
        return rc;
    }
    trace *t = calloc(1, sizeof *t);
    if (!t || !(t->pool = mt_strpool_new())) {
        free(t);
        found_free(&f);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    t->step = -1;
    if (f.csv_trace || f.csv_tensor) {
        if (!f.csv_trace || !f.csv_tensor) {
            rc = mt_fail(err, MT_EINVAL, "%s: a TrioSim trace needs both trace.csv and "
                         "tensor.csv; the %s file is missing", f.csv_trace ? f.csv_trace : f.csv_tensor,
                         f.csv_trace ? "tensor" : "trace");
        } else {
            t->kineto_path = dupstr(f.csv_trace);
            t->et_path = dupstr(f.csv_tensor);
            rc = mt_triosim_load(f.csv_trace, f.csv_tensor, t, err);
        }
    } else {
        kineto_data k;
        et_data e;
        int have_k = 0, have_e = 0;
        if (f.kineto) {
            rc = mt_kineto_parse(f.kineto, f.kineto_json, t->pool, &k, err);
            have_k = 1;
        }
        if (rc == MT_OK && f.et) {
            rc = mt_et_parse(f.et, f.et_json, t->pool, &e, err);
            have_e = 1;
        }
        if (rc == MT_OK) {
            t->kineto_path = f.kineto ? dupstr(f.kineto) : NULL;
            t->et_path = f.et ? dupstr(f.et) : NULL;
            t->has_et = have_e;
            t->format = have_k && have_e ? TRACE_FORMAT_KINETO_ET
                        : have_k         ? TRACE_FORMAT_KINETO
                                         : TRACE_FORMAT_ET;
            rc = mt_link_build(f.kineto, have_k ? &k : NULL, f.et, have_e ? &e : NULL, &opts, t, err);
            if (have_e && !have_k) t->format = TRACE_FORMAT_ET;
        }
        if (have_k) mt_kineto_free(&k);
        if (have_e) mt_et_free(&e);
    }
    found_free(&f);
    if (rc != MT_OK) {
        mt_trace_free(t);
        return rc;
    }
    mt_opclass_trace(t);
    *out = t;
    return MT_OK;
}

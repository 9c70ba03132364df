/* tracer/meta.c — see meta.h. */
#include "tracer/meta.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tracer/strpool.h"
#include "util/fileio.h"

/* The meta.json beside dir_or_file (a folder or one of its files) into src. */
static void meta_path(const char *path0, char *src, size_t srclen) {
    struct stat st;
    if (stat(path0, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(src, srclen, "%s/meta.json", path0);
    } else {
        const char *slash = strrchr(path0, '/');
        int n = slash ? (int)(slash - path0) : 1;
        snprintf(src, srclen, "%.*s/meta.json", n, slash ? path0 : ".");
    }
}

void mt_trace_meta_batch(mt_trace *t, const char *dir_or_file) {
    char src[4096];
    json_t *m = NULL;
    if (t->format != TRACE_FORMAT_KINETO || !dir_or_file) return;
    meta_path(dir_or_file, src, sizeof src);
    mt_error e = {0};
    if (mt_json_load_config(src, &m, &e) != MT_OK) return; /* none, or not one to read: the trace's own */
    json_t *b = json_object_get(m, "batch");
    if (json_is_integer(b) && json_integer_value(b) > 0 && json_integer_value(b) != t->batch_size) {
        char w[6144];
        snprintf(w, sizeof w, "%.1024s%sthe batch is %lld from %s (the Kineto file alone has no tensor shapes; its first "
                 "op's input read %lld)", t->warning ? t->warning : "", t->warning ? "; " : "",
                 (long long)json_integer_value(b), src, (long long)t->batch_size);
        t->batch_size = json_integer_value(b);
        t->warning = mt_strpool_intern(t->pool, w, -1);
    }
    json_decref(m);
}

int mt_trace_meta_has_measured(const char *path0) {
    char src[4096];
    json_t *m = NULL;
    meta_path(path0, src, sizeof src);
    mt_error e = {0};
    mt_status rc = mt_json_load_config(src, &m, &e);
    if (rc != MT_OK) return rc == MT_EFORMAT; /* not JSON: damaged, for mt_trace_meta_measured to refuse */
    int has = json_object_get(json_object_get(m, "step_time_ms"), "median") != NULL;
    json_decref(m);
    return has;
}

mt_status mt_trace_meta_measured(const char *path0, const mt_trace *t, double *ms_out, char *src, size_t srclen,
                                 mt_error *err) {
    struct stat st;
    meta_path(path0, src, srclen);
    if (stat(src, &st) != 0)
        return mt_fail(err, MT_EIO,
                       "--calibrate needs the measured step time from %s, which does not exist (tracer/collect.py "
                       "writes it beside its traces; or give --measured-ms)", src);
    json_t *m = NULL;
    MT_CHECK(mt_json_load_config(src, &m, err));
    json_t *med = json_object_get(json_object_get(m, "step_time_ms"), "median");
    json_t *batch = json_object_get(m, "batch");
    double v = json_is_number(med) ? json_number_value(med) : 0;
    json_int_t b = json_is_integer(batch) ? json_integer_value(batch) : 0;
    json_decref(m);
    if (!(v > 0) || v > 1e9) /* as --measured-ms: 1e300 scaled the op times past any simulable step */
        return mt_fail(err, MT_EINVAL, "%s: step_time_ms.median is missing or not a number of ms in (0, 1e9] "
                       "(record with tracer/collect.py --steps N > 0, or give --measured-ms)", src);
    if (b > 0 && t->batch_size > 0 && b != t->batch_size)
        return mt_fail(err, MT_EINVAL, "%s: measured at batch %lld but the trace's batch is %lld "
                       "(use the meta.json recorded with this trace, or give --measured-ms)",
                       src, (long long)b, (long long)t->batch_size);
    *ms_out = v;
    return MT_OK;
}

/* tracer/device.c — see device.h. */
#include "tracer/device.h"

#include "util/fileio.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "tracer/strpool.h"

static const char *intern(mt_trace *t, const char *s) { return s ? mt_strpool_intern(t->pool, s, -1) : NULL; }

static void set(mt_trace *t, trace_dev_kind kind, const char *name, const char *source) {
    t->recorded_on.kind = kind;
    t->recorded_on.name = intern(t, name);
    t->recorded_on.source = intern(t, source);
}

void mt_device_from_kineto(mt_trace *t, const char *name, int n_props) {
    if (name && *name) set(t, TRACE_DEV_GPU, name, "Kineto deviceProperties");
    else if (n_props == 0) set(t, TRACE_DEV_CPU, NULL, "Kineto trace: empty deviceProperties, no GPU kernels");
}

/* The meta.json of the folder of dir_or_file into path. */
static void meta_path(const char *dir_or_file, char *path, size_t len) {
    struct stat st;
    if (stat(dir_or_file, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t n = strlen(dir_or_file);
        while (n > 1 && dir_or_file[n - 1] == '/') n--;
        snprintf(path, len, "%.*s/meta.json", (int)n, dir_or_file);
        return;
    }
    const char *slash = strrchr(dir_or_file, '/');
    if (slash) snprintf(path, len, "%.*s/meta.json", (int)(slash - dir_or_file), dir_or_file);
    else snprintf(path, len, "meta.json");
}

/* Step 2: 1 when meta.json set the device. */
static int from_meta(mt_trace *t, const char *dir_or_file) {
    char path[4096];
    meta_path(dir_or_file, path, sizeof path);
    json_t *m = NULL;
    if (mt_json_load_config(path, &m, NULL) != MT_OK) return 0; /* bounded: a FIFO or /dev/zero is no meta.json */
    const char *dev = json_string_value(json_object_get(m, "device"));
    const char *name = json_string_value(json_object_get(m, "device_name"));
    trace_dev_kind kind = TRACE_DEV_UNKNOWN;
    if (dev && !strcasecmp(dev, "cpu")) kind = TRACE_DEV_CPU;
    else if (dev && (!strncasecmp(dev, "cuda", 4) || !strcasecmp(dev, "gpu"))) kind = TRACE_DEV_GPU;
    if (kind != TRACE_DEV_UNKNOWN) {
        set(t, kind, name && *name ? name : NULL, "meta.json"); /* beside the trace; no path (a server's) */
        if (kind == TRACE_DEV_GPU && !t->device_name && t->recorded_on.name) t->device_name = t->recorded_on.name;
    }
    json_decref(m);
    return kind != TRACE_DEV_UNKNOWN;
}

void mt_device_resolve(mt_trace *t, const char *dir_or_file) {
    if (t->recorded_on.kind == TRACE_DEV_GPU && t->recorded_on.name) return; /* step 1 */
    trace_device kineto = t->recorded_on;
    if (dir_or_file && from_meta(t, dir_or_file)) { /* step 2; the trace's kernels outrank a "cpu" */
        if (!(t->recorded_on.kind == TRACE_DEV_CPU && t->has_device_time && t->format != TRACE_FORMAT_ET)) return;
    }
    if (t->format == TRACE_FORMAT_TRIOSIM_CSV)
        set(t, TRACE_DEV_GPU, NULL, "TrioSim CSV (CUDA times; the file names no GPU)");
    else if (t->format == TRACE_FORMAT_CHAKRA)
        set(t, TRACE_DEV_GPU, NULL, "Chakra ET (GPU compute nodes; the file names no GPU)");
    else if (t->has_device_time && t->format != TRACE_FORMAT_ET)
        set(t, TRACE_DEV_GPU, NULL, "GPU kernels in the Kineto trace (no deviceProperties name)");
    else if (kineto.kind == TRACE_DEV_CPU)
        t->recorded_on = kineto; /* step 4 */
    else
        set(t, TRACE_DEV_UNKNOWN, NULL, t->format == TRACE_FORMAT_ET ? "an Execution Trace alone names no device"
                                                                      : "the trace names no device");
    if (t->recorded_on.kind == TRACE_DEV_CPU) t->device_name = NULL;
}

const char *mt_device_kind_name(trace_dev_kind k) {
    return k == TRACE_DEV_CPU ? "cpu" : k == TRACE_DEV_GPU ? "gpu" : "unknown";
}

char *mt_device_describe(const mt_trace *t, char *buf, size_t len) {
    const trace_device *d = &t->recorded_on;
    const char *src = d->source ? d->source : "not read";
    if (d->kind == TRACE_DEV_CPU)
        snprintf(buf, len, "CPU%s%s [%s]", d->name ? " " : "", d->name ? d->name : "", src);
    else if (d->kind == TRACE_DEV_GPU)
        snprintf(buf, len, "GPU %s [%s]", d->name ? d->name : "(model unknown)", src);
    else
        snprintf(buf, len, "unknown device [%s]", src);
    return buf;
}

json_t *mt_device_json(const trace_device *d) {
    return json_pack("{s:s,s:s?,s:s}", "kind", mt_device_kind_name(d->kind), "name", d->name, "source",
                     d->source ? d->source : "not read");
}

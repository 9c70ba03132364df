/* perfmodel/data.c — fitting rows (class, FLOPs, bytes, ns) from traces and from CSV files of
 * measured ops (format in perfmodel.h, read with libcsv one row at a time). */
#include <csv.h>
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "perfmodel/perfmodel.h"
#include "util/fileio.h"
#include "util/vec.h"

typedef struct pm_row {
    mt_opclass cls;
    double flops, bytes, time_ns;
} pm_row;

struct mt_pm_data {
    pm_row *rows;
    int64_t n, cap;
    char device[128];
    int n_traces;
    int64_t n_csv_rows;
    char warning[256];
};

mt_status mt_pm_data_new(mt_pm_data **out, mt_error *err) {
    mt_pm_data *d = calloc(1, sizeof *d);
    if (!d) return mt_fail(err, MT_ENOMEM, "perfmodel data: out of memory");
    *out = d;
    return MT_OK;
}

void mt_pm_data_free(mt_pm_data *d) {
    if (!d) return;
    free(d->rows);
    free(d);
}

int64_t mt_pm_data_rows(const mt_pm_data *d) { return d ? d->n : 0; }
const char *mt_pm_data_warning(const mt_pm_data *d) { return d ? d->warning : ""; }

mt_status mt_pm_data_add(mt_pm_data *d, mt_opclass c, double flops, double bytes, double time_ns,
                         mt_error *err) {
    if ((unsigned)c >= MT_OPC_COUNT || !isfinite(flops) || !isfinite(bytes) || !isfinite(time_ns) ||
        flops < 0 || bytes < 0 || time_ns < 0)
        return mt_fail(err, MT_EINVAL, "perfmodel data: bad row (class %d, %g FLOPs, %g bytes, %g ns)",
                       (int)c, flops, bytes, time_ns);
    if (mt_vec_reserve(&d->rows, &d->cap, d->n + 1))
        return mt_fail(err, MT_ENOMEM, "perfmodel data: out of memory");
    d->rows[d->n++] = (pm_row){c, flops, bytes, time_ns};
    return MT_OK;
}

static void note_device(mt_pm_data *d, const char *dev) {
    if (!dev || !*dev) return;
    if (!d->device[0]) {
        snprintf(d->device, sizeof d->device, "%s", dev);
    } else if (strcmp(d->device, dev) && !d->warning[0]) {
        snprintf(d->warning, sizeof d->warning,
                 "fitting traces of different devices together ('%s' and '%s')", d->device, dev);
    }
}

mt_status mt_pm_data_add_trace(mt_pm_data *d, const mt_trace *t, mt_error *err) {
    note_device(d, t->device_name);
    d->n_traces++;
    for (int32_t i = 0; i < t->n_ops; i++) {
        mt_work w;
        mt_work_of_trace_op(t, i, &w);
        if (w.cls == MT_OPC_NONE || w.cls == MT_OPC_COMM || !w.has_shapes || t->ops[i].dev_ns <= 0)
            continue;
        MT_CHECK(mt_pm_data_add(d, w.cls, w.flops, mt_work_bytes(&w), (double)t->ops[i].dev_ns, err));
    }
    return MT_OK;
}

/* ---- CSV -------------------------------------------------------------------------------- */

enum { C_OP, C_TUS, C_TNS, C_TMS, C_IN, C_OUT, C_DTYPE, C_PHASE, C_FLOPS, C_BYTES, C_CLASS, C_N };
static const char *const col_names[C_N] = {"op", "time_us", "time_ns", "time_ms",
                                           "input_shapes", "output_shapes", "dtype", "phase",
                                           "flops", "bytes", "class"};

#define CSV_MAXF 64
#define DIMS_MAX 256

typedef struct csv_state {
    const char *path;
    mt_pm_data *d;
    mt_error *err;
    mt_status rc;
    int64_t line;
    char *f[CSV_MAXF];
    int nf;
    int col[C_N];
    int have_header;
} csv_state;

static const char *field(const csv_state *s, int c) {
    int i = s->col[c];
    return i >= 0 && i < s->nf && s->f[i] ? s->f[i] : "";
}

static void trim(char *p) {
    size_t n = strlen(p);
    while (n && isspace((unsigned char)p[n - 1])) p[--n] = 0;
    size_t k = 0;
    while (p[k] && isspace((unsigned char)p[k])) k++;
    if (k) memmove(p, p + k, n - k + 1);
}

/* Parses "[a,b];[c]" or "[[a,b],[c]]" into shapes; extra tensors beyond the array go to *extra
 * as bytes. Returns 0, or -1 on a syntax error. */
static int parse_shapes(const char *text, const char *dtype, mt_tshape *v, int32_t *n,
                        int64_t *dims, int *used_dims, double *extra) {
    *n = 0;
    if (!*text) return 0;
    size_t len = strlen(text);
    char *js = malloc(len + 3);
    if (!js) return -1;
    if (!strncmp(text, "[[", 2) || !strcmp(text, "[]")) {
        if (!strcmp(text, "[]")) snprintf(js, len + 3, "[[]]");
        else memcpy(js, text, len + 1);
    } else {
        js[0] = '[';
        for (size_t i = 0; i < len; i++) js[i + 1] = text[i] == ';' ? ',' : text[i];
        js[len + 1] = ']';
        js[len + 2] = 0;
    }
    json_t *a = json_loads(js, 0, NULL);
    free(js);
    if (!json_is_array(a)) {
        json_decref(a);
        return -1;
    }
    int32_t isz = 4;
    if (dtype && *dtype) {
        if (strstr(dtype, "16") || strstr(dtype, "Half") || strstr(dtype, "half")) isz = 2;
        else if (strstr(dtype, "double") || strstr(dtype, "Double") || strstr(dtype, "64")) isz = 8;
        else if (strstr(dtype, "8")) isz = 1;
    }
    size_t i;
    json_t *sh;
    json_array_foreach(a, i, sh) {
        if (!json_is_array(sh)) {
            json_decref(a);
            return -1;
        }
        size_t nd = json_array_size(sh);
        double numel = 1;
        for (size_t k = 0; k < nd; k++) {
            json_t *x = json_array_get(sh, k);
            if (!json_is_integer(x) || json_integer_value(x) < 0) {
                json_decref(a);
                return -1;
            }
            numel *= (double)json_integer_value(x);
        }
        if (*n < MT_OPDESC_MAXT && *used_dims + (int)nd <= DIMS_MAX) {
            mt_tshape *s = &v[(*n)++];
            memset(s, 0, sizeof *s);
            s->dims = dims + *used_dims;
            s->ndim = (int32_t)nd;
            s->itemsize = isz;
            s->numel = numel;
            s->role = TRACE_ROLE_ACTIVATION;
            s->dtype = dtype && *dtype ? dtype : "float";
            for (size_t k = 0; k < nd; k++)
                dims[(*used_dims)++] = (int64_t)json_integer_value(json_array_get(sh, k));
        } else {
            *extra += numel * isz;
        }
    }
    json_decref(a);
    return 0;
}

static int parse_nonneg(const char *s, double *out) {
    char *end;
    if (!*s) return -1;
    double v = strtod(s, &end);
    while (*end && isspace((unsigned char)*end)) end++;
    if (*end || !isfinite(v) || v < 0) return -1;
    *out = v;
    return 0;
}

static mt_status csv_header(csv_state *s) {
    for (int c = 0; c < C_N; c++) s->col[c] = -1;
    for (int i = 0; i < s->nf; i++) {
        trim(s->f[i]);
        for (int c = 0; c < C_N; c++)
            if (!strcasecmp(s->f[i], col_names[c])) s->col[c] = i;
    }
    if (s->col[C_OP] < 0 || (s->col[C_TUS] < 0 && s->col[C_TNS] < 0 && s->col[C_TMS] < 0))
        return mt_fail(s->err, MT_EFORMAT, "%s:1: header needs columns 'op' and one of 'time_us', "
                       "'time_ns', 'time_ms' (and usually 'input_shapes')", s->path);
    s->have_header = 1;
    return MT_OK;
}

static mt_status csv_data_row(csv_state *s) {
    for (int i = 0; i < s->nf; i++) trim(s->f[i]);
    if (s->nf == 1 && !s->f[0][0]) return MT_OK; /* blank line */
    const char *op = field(s, C_OP);
    if (!*op) return mt_fail(s->err, MT_EFORMAT, "%s:%ld: empty 'op'", s->path, (long)s->line);
    double t, scale;
    const char *ts;
    if (s->col[C_TNS] >= 0) ts = field(s, C_TNS), scale = 1;
    else if (s->col[C_TUS] >= 0) ts = field(s, C_TUS), scale = 1e3;
    else ts = field(s, C_TMS), scale = 1e6;
    if (parse_nonneg(ts, &t))
        return mt_fail(s->err, MT_EFORMAT, "%s:%ld: time '%s' is not a non-negative number",
                       s->path, (long)s->line, ts);
    t *= scale;
    const char *dtype = field(s, C_DTYPE);
    mt_opdesc d;
    memset(&d, 0, sizeof d);
    int64_t dims[2][DIMS_MAX];
    int used[2] = {0, 0};
    double extra = 0;
    if (parse_shapes(field(s, C_IN), dtype, d.in, &d.n_in, dims[0], &used[0], &extra) ||
        parse_shapes(field(s, C_OUT), dtype, d.out, &d.n_out, dims[1], &used[1], &extra))
        return mt_fail(s->err, MT_EFORMAT, "%s:%ld: bad shapes (want \"[512,3,224,224];[64,3,3,3]\")",
                       s->path, (long)s->line);
    d.extra_bytes_act = extra;
    /* "ConvolutionBackward0" is accepted bare, like the evaluate_function name */
    char name[256];
    snprintf(name, sizeof name, "%s", op);
    d.name = name;
    const char *ph = field(s, C_PHASE);
    d.phase = !strcasecmp(ph, "backward")    ? TRACE_PHASE_BACKWARD
              : !strcasecmp(ph, "optimizer") ? TRACE_PHASE_OPTIMIZER
              : !strcasecmp(ph, "other")     ? TRACE_PHASE_OTHER
              : (!*ph && strstr(op, "Backward")) ? TRACE_PHASE_BACKWARD
                                              : TRACE_PHASE_FORWARD;
    mt_work w;
    mt_work_of(&d, &w);
    const char *cs = field(s, C_CLASS);
    if (*cs) {
        mt_opclass c = mt_opclass_parse(cs);
        if (c == MT_OPC_COUNT)
            return mt_fail(s->err, MT_EFORMAT, "%s:%ld: unknown class '%s' (see mitosis perfmodel "
                           "show for the names)", s->path, (long)s->line, cs);
        w.cls = c;
    }
    double v;
    if (*field(s, C_FLOPS)) {
        if (parse_nonneg(field(s, C_FLOPS), &v))
            return mt_fail(s->err, MT_EFORMAT, "%s:%ld: flops '%s' is not a non-negative number",
                           s->path, (long)s->line, field(s, C_FLOPS));
        w.flops = v;
        w.has_shapes = 1;
    }
    if (*field(s, C_BYTES)) {
        if (parse_nonneg(field(s, C_BYTES), &v))
            return mt_fail(s->err, MT_EFORMAT, "%s:%ld: bytes '%s' is not a non-negative number",
                           s->path, (long)s->line, field(s, C_BYTES));
        w.bytes_act = v;
        w.bytes_fixed = 0;
        w.has_shapes = 1;
    }
    if (w.cls == MT_OPC_NONE || w.cls == MT_OPC_COMM || !w.has_shapes || t <= 0) return MT_OK;
    s->d->n_csv_rows++;
    return mt_pm_data_add(s->d, w.cls, w.flops, mt_work_bytes(&w), t, s->err);
}

static void on_field(void *str, size_t len, void *data) {
    csv_state *s = data;
    if (s->nf >= CSV_MAXF) return;
    char *p = malloc(len + 1);
    if (!p) {
        if (s->rc == MT_OK) s->rc = mt_fail(s->err, MT_ENOMEM, "%s: out of memory", s->path);
        return;
    }
    memcpy(p, str, len);
    p[len] = 0;
    s->f[s->nf++] = p;
}

static void on_row(int c, void *data) {
    (void)c;
    csv_state *s = data;
    s->line++;
    if (s->rc == MT_OK) s->rc = s->have_header ? csv_data_row(s) : csv_header(s);
    for (int i = 0; i < s->nf; i++) free(s->f[i]);
    s->nf = 0;
}

mt_status mt_pm_data_add_csv(mt_pm_data *d, const char *path, mt_error *err) {
    char *buf = NULL;
    size_t len = 0;
    MT_CHECK(mt_read_file(path, &buf, &len, err));
    csv_state s;
    memset(&s, 0, sizeof s);
    s.path = path;
    s.d = d;
    s.err = err;
    struct csv_parser p;
    if (csv_init(&p, CSV_APPEND_NULL) != 0) {
        free(buf);
        return mt_fail(err, MT_ENOMEM, "%s: cannot start the CSV parser", path);
    }
    size_t done = csv_parse(&p, buf, len, on_field, on_row, &s);
    int bad = done != len;
    if (!bad) csv_fini(&p, on_field, on_row, &s);
    const char *why = bad ? csv_strerror(csv_error(&p)) : NULL;
    for (int i = 0; i < s.nf; i++) free(s.f[i]);
    csv_free(&p);
    free(buf);
    if (s.rc != MT_OK) return s.rc;
    if (bad) return mt_fail(err, MT_EFORMAT, "%s:%ld: %s", path, (long)s.line + 1, why);
    if (!s.have_header) return mt_fail(err, MT_EFORMAT, "%s: empty file (want a header row)", path);
    return MT_OK;
}

/* ---- fit -------------------------------------------------------------------------------- */

mt_status mt_linmodel_fit(const mt_pm_data *d, mt_linmodel *m, mt_error *err) {
    static const char *const names[3] = {"flops", "bytes", "const"};
    memset(m, 0, sizeof *m);
    snprintf(m->device, sizeof m->device, "%s", d->device);
    m->n_traces = d->n_traces;
    m->n_csv_rows = d->n_csv_rows;
    double *X = malloc((size_t)(d->n > 0 ? d->n : 1) * 3 * sizeof *X);
    double *y = malloc((size_t)(d->n > 0 ? d->n : 1) * sizeof *y);
    double *w = malloc((size_t)(d->n > 0 ? d->n : 1) * sizeof *w);
    if (!X || !y || !w) {
        free(X);
        free(y);
        free(w);
        return mt_fail(err, MT_ENOMEM, "perfmodel fit: out of memory");
    }
    mt_status rc = MT_OK;
    for (int c = 0; c < MT_OPC_COUNT && rc == MT_OK; c++) {
        int n = 0;
        for (int64_t i = 0; i < d->n; i++) {
            const pm_row *r = &d->rows[i];
            if ((int)r->cls != c || r->time_ns <= 0) continue;
            X[n * 3 + 0] = r->flops;
            X[n * 3 + 1] = r->bytes;
            X[n * 3 + 2] = 1.0;
            y[n] = r->time_ns;
            w[n] = 1.0 / r->time_ns;
            n++;
        }
        if (!n) continue;
        unsigned allowed = mt_opclass_is_compute((mt_opclass)c)
                               ? 7u
                               : (1u << MT_LIN_BYTES) | (1u << MT_LIN_CONST);
        rc = mt_fit_nnls(X, y, w, n, 3, allowed, names, &m->cls[c], err);
    }
    free(X);
    free(y);
    free(w);
    return rc;
}

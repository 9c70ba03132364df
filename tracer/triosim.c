/* tracer/triosim.c — reads TrioSim's merged CSV trace: `trace.csv` (one row per operator:
 * OperatorID, OperatorName, Operator_input, Operator_output, Operator_cudatime (µs), ...,
 * InputSize, OutputSize, gpuid, stage, tpflag) and `tensor.csv` (Index, TensorID,
 * TensorShape, TensorNumElement, TensorEachByte, TensorType, TensorStorgeid, gpuid).
 * Parsed with libcsv. Operators run back to back in file order: each gets one synthetic kernel
 * of its CUDA time, so the step's device time is their sum. Cost: O(file size).
 */
#include <csv.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/internal.h"
#include "util/fileio.h"
#include "util/vec.h"

typedef struct csv_table {
    char **cells;        /* row-major, ncols per row (missing cells are "") */
    int64_t n_cells, cap_cells;
    int64_t *row_start;  /* index of each row's first cell */
    int64_t n_rows, cap_rows;
    int64_t cur_cells;   /* cells in the row being read */
    int failed;
} csv_table;

static void on_field(void *s, size_t len, void *data) {
    csv_table *t = data;
    if (t->failed) return;
    if (t->cur_cells == 0) {
        if (mt_vec_reserve(&t->row_start, &t->cap_rows, t->n_rows + 1)) {
            t->failed = 1;
            return;
        }
        t->row_start[t->n_rows] = t->n_cells;
    }
    char *c = malloc(len + 1);
    if (!c || mt_vec_reserve(&t->cells, &t->cap_cells, t->n_cells + 1)) {
        free(c);
        t->failed = 1;
        return;
    }
    memcpy(c, s, len);
    c[len] = '\0';
    t->cells[t->n_cells++] = c;
    t->cur_cells++;
}

static void on_row(int ch, void *data) {
    (void)ch;
    csv_table *t = data;
    if (t->failed || t->cur_cells == 0) return;
    t->n_rows++;
    t->cur_cells = 0;
}

static void table_free(csv_table *t) {
    for (int64_t i = 0; i < t->n_cells; i++) free(t->cells[i]);
    free(t->cells);
    free(t->row_start);
    memset(t, 0, sizeof *t);
}

static int64_t row_len(const csv_table *t, int64_t r) {
    int64_t end = r + 1 < t->n_rows ? t->row_start[r + 1] : t->n_cells;
    return end - t->row_start[r];
}

static const char *cell(const csv_table *t, int64_t r, int64_t c) {
    return c < row_len(t, r) ? t->cells[t->row_start[r] + c] : "";
}

static mt_status table_load(const char *path, csv_table *t, mt_error *err) {
    memset(t, 0, sizeof *t);
    char *buf = NULL;
    size_t len = 0;
    MT_CHECK(mt_read_file(path, &buf, &len, err));
    struct csv_parser p;
    if (csv_init(&p, CSV_APPEND_NULL) != 0) {
        free(buf);
        return mt_fail(err, MT_ENOMEM, "%s: cannot initialise the CSV parser", path);
    }
    size_t done = csv_parse(&p, buf, len, on_field, on_row, t);
    int bad = done != len;
    if (!bad) csv_fini(&p, on_field, on_row, t);
    const char *why = bad ? csv_strerror(csv_error(&p)) : NULL;
    csv_free(&p);
    free(buf);
    if (bad || t->failed) {
        table_free(t);
        return mt_fail(err, bad ? MT_EFORMAT : MT_ENOMEM, "%s: %s", path,
                       bad ? why : "out of memory reading CSV");
    }
    return MT_OK;
}

/* Column index by header name, -1 when absent. */
static int64_t col(const csv_table *t, const char *name) {
    for (int64_t c = 0; t->n_rows > 0 && c < row_len(t, 0); c++)
        if (!strcmp(cell(t, 0, c), name)) return c;
    return -1;
}

/* Parses "[4; 6; 8]" or "[128, 3, 224]" into out (up to cap). Returns count, -1 on garbage. */
static int64_t parse_list(const char *s, int64_t *out, int64_t cap) {
    while (*s == ' ' || *s == '"') s++;
    if (*s != '[') return -1;
    s++;
    int64_t n = 0;
    for (;;) {
        while (*s == ' ' || *s == ';' || *s == ',') s++;
        if (*s == ']') return n;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s) return -1;
        if (n < cap) out[n] = v;
        n++;
        s = end;
    }
}

/* A whole cell as an integer in lo..hi (surrounding spaces allowed); 0 when it is not one. */
static int int_cell(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    while (*end == ' ') end++;
    if (end == s || *end || errno == ERANGE || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

/* Smallest period p of vals[0..n) (vals[i] == vals[i % p]); n when none. */
static int64_t period_of(const int64_t *vals, int64_t n) {
    for (int64_t p = 1; p < n; p++) {
        if (n % p) continue;
        int ok = 1;
        for (int64_t i = p; i < n && ok; i++) ok = vals[i] == vals[i % p];
        if (ok) return p;
    }
    return n;
}

typedef struct tmeta {
    int64_t storage, numel, shape_off;
    int32_t itemsize, ndim;
} tmeta;

int mt_triosim_detect_header(const char *buf) {
    return strncmp(buf, "OperatorID,", 11) == 0 ? 1 : strncmp(buf, "Index,TensorID,", 15) == 0 ? 2 : 0;
}

mt_status mt_triosim_load(const char *trace_csv, const char *tensor_csv, trace *t, mt_error *err) {
    csv_table ops, tens;
    MT_CHECK(table_load(trace_csv, &ops, err));
    mt_status rc = table_load(tensor_csv, &tens, err);
    if (rc != MT_OK) {
        table_free(&ops);
        return rc;
    }
    trace_builder b;
    mt_tb_init(&b, t);
    mt_u64map meta_by_id;
    mt_u64map_init(&meta_by_id);
    tmeta *metas = NULL;
    int64_t n_meta = 0, cap_meta = 0;
    int64_t *shapes = NULL, n_shapes = 0, cap_shapes = 0;
    int64_t *ids = NULL, *sizes = NULL;
    t->format = TRACE_FORMAT_TRIOSIM_CSV;

    int64_t c_tid = col(&tens, "TensorID"), c_shape = col(&tens, "TensorShape"),
            c_numel = col(&tens, "TensorNumElement"), c_isz = col(&tens, "TensorEachByte"),
            c_stor = col(&tens, "TensorStorgeid");
    if (c_stor < 0) c_stor = col(&tens, "TensorStorageid");
    if (c_tid < 0 || c_shape < 0 || c_numel < 0 || c_isz < 0) {
        rc = mt_fail(err, MT_EFORMAT, "%s: missing column (need TensorID, TensorShape, "
                     "TensorNumElement, TensorEachByte): not a TrioSim tensor.csv", tensor_csv);
        goto out;
    }
    for (int64_t r = 1; r < tens.n_rows; r++) {
        int64_t id, storage, numel, isz;
        if (!int_cell(cell(&tens, r, c_tid), INT64_MIN, INT64_MAX, &id)) {
            rc = mt_fail(err, MT_EFORMAT, "%s:%ld: TensorID '%s' is not an integer", tensor_csv,
                         (long)r + 1, cell(&tens, r, c_tid));
            goto out;
        }
        if (mt_u64map_get(&meta_by_id, id, NULL)) continue;
        storage = id; /* without a storage column every tensor is its own storage */
        if (c_stor >= 0 && !int_cell(cell(&tens, r, c_stor), INT64_MIN, INT64_MAX, &storage)) {
            rc = mt_fail(err, MT_EFORMAT, "%s:%ld: TensorStorgeid '%s' is not an integer", tensor_csv,
                         (long)r + 1, cell(&tens, r, c_stor));
            goto out;
        }
        if (!int_cell(cell(&tens, r, c_numel), 0, TRACE_MAX_NUMEL, &numel) ||
            !int_cell(cell(&tens, r, c_isz), 0, TRACE_MAX_ITEMSIZE, &isz)) {
            rc = mt_fail(err, MT_EFORMAT, "%s:%ld: TensorNumElement '%s' / TensorEachByte '%s': want 0..1e12 "
                         "elements of 0..%d bytes", tensor_csv, (long)r + 1, cell(&tens, r, c_numel),
                         cell(&tens, r, c_isz), TRACE_MAX_ITEMSIZE);
            goto out;
        }
        if (mt_vec_reserve(&metas, &cap_meta, n_meta + 1) ||
            mt_vec_reserve(&shapes, &cap_shapes, n_shapes + 16))
            goto nomem;
        tmeta *m = &metas[n_meta];
        m->storage = storage;
        m->numel = numel;
        m->itemsize = (int32_t)isz;
        m->shape_off = n_shapes;
        int64_t nd = parse_list(cell(&tens, r, c_shape), shapes + n_shapes, 16);
        for (int64_t k = 0; k < nd && k < 16; k++)
            if (shapes[n_shapes + k] < 0 || shapes[n_shapes + k] > TRACE_MAX_NUMEL) nd = -1;
        if (nd < 0) {
            rc = mt_fail(err, MT_EFORMAT, "%s:%ld: bad TensorShape '%s' (want a list of dimensions 0..1e12)",
                         tensor_csv, (long)r + 1, cell(&tens, r, c_shape));
            goto out;
        }
        m->ndim = (int32_t)(nd > 16 ? 16 : nd);
        n_shapes += m->ndim;
        if (mt_u64map_put(&meta_by_id, id, n_meta, NULL) != MT_OK) goto nomem;
        n_meta++;
    }

    int64_t c_name = col(&ops, "OperatorName"), c_in = col(&ops, "Operator_input"),
            c_out = col(&ops, "Operator_output"), c_time = col(&ops, "Operator_cudatime"),
            c_stage = col(&ops, "stage"), c_insz = col(&ops, "InputSize");
    if (c_name < 0 || c_in < 0 || c_out < 0 || c_time < 0 || c_stage < 0) {
        rc = mt_fail(err, MT_EFORMAT, "%s: missing column (need OperatorName, Operator_input, "
                     "Operator_output, Operator_cudatime, stage): not a TrioSim trace.csv",
                     trace_csv);
        goto out;
    }
    if (ops.n_rows < 2) {
        rc = mt_fail(err, MT_EFORMAT, "%s: no operator rows (empty step)", trace_csv);
        goto out;
    }
    int64_t max_list = 1;
    for (int64_t r = 1; r < ops.n_rows; r++) {
        int64_t a = parse_list(cell(&ops, r, c_in), NULL, 0), o = parse_list(cell(&ops, r, c_out), NULL, 0);
        if (a > max_list) max_list = a;
        if (o > max_list) max_list = o;
    }
    ids = malloc((size_t)max_list * sizeof *ids);
    sizes = malloc((size_t)max_list * sizeof *sizes);
    if (!ids || !sizes) goto nomem;
    int64_t clock_ns = 0;
    for (int64_t r = 1; r < ops.n_rows; r++) {
        trace_op op = {0};
        const char *name = mt_strpool_intern(t->pool, cell(&ops, r, c_name), -1);
        if (!name) goto nomem;
        char *end;
        double us = strtod(cell(&ops, r, c_time), &end);
        while (*end == ' ') end++;
        if (end == cell(&ops, r, c_time) || *end || !(us >= 0) || (double)clock_ns + us * 1000.0 > TRACE_MAX_NS) {
            rc = mt_fail(err, MT_EFORMAT, "%s:%ld: Operator_cudatime '%s' is not a number of microseconds "
                         "from 0 up to a step of 11 days", trace_csv, (long)r + 1, cell(&ops, r, c_time));
            goto out;
        }
        const char *stage = cell(&ops, r, c_stage);
        op.name = op.kind = name;
        op.phase = !strcmp(stage, "forward")    ? TRACE_PHASE_FORWARD
                   : !strcmp(stage, "backward")  ? TRACE_PHASE_BACKWARD
                   : !strcmp(stage, "optimizer") ? TRACE_PHASE_OPTIMIZER
                                                 : TRACE_PHASE_OTHER;
        op.cpu_start_ns = clock_ns;
        op.cpu_dur_ns = (int64_t)(us * 1000.0 + 0.5);
        op.seq = op.et_node = -1;
        op.layer = -1;
        op.comm = mt_opclass_comm_of(name);
        int32_t oi = mt_tb_add_op(&b, &op);
        if (oi < 0) goto nomem;
        trace_kernel kk = {clock_ns, op.cpu_dur_ns, oi, -1, name, TRACE_KERNEL, -1};
        if (mt_tb_add_kernel(&b, &kk) < 0) goto nomem;
        clock_ns += op.cpu_dur_ns;
        for (int pass = 0; pass < 2; pass++) {
            int64_t n = parse_list(cell(&ops, r, pass ? c_out : c_in), ids, max_list);
            if (n < 0) {
                rc = mt_fail(err, MT_EFORMAT, "%s:%ld: bad tensor list '%s'", trace_csv,
                             (long)r + 1, cell(&ops, r, pass ? c_out : c_in));
                goto out;
            }
            int64_t period = n;
            if (!pass && strstr(name, "_foreach_") && c_insz >= 0 &&
                parse_list(cell(&ops, r, c_insz), sizes, max_list) == n)
                period = period_of(sizes, n);
            for (int64_t i = 0; i < n; i++) {
                int64_t mi;
                if (!mt_u64map_get(&meta_by_id, ids[i], &mi)) {
                    rc = mt_fail(err, MT_EFORMAT, "%s:%ld: tensor %ld is not in %s", trace_csv,
                                 (long)r + 1, (long)ids[i], tensor_csv);
                    goto out;
                }
                const tmeta *m = &metas[mi];
                int32_t ti = mt_tb_tensor(&b, ids[i], m->storage, 0, m->numel, m->itemsize,
                                            NULL, NULL);
                if (ti < 0) goto nomem;
                int32_t arg = (int32_t)(period > 0 ? i / period : i);
                if (mt_tb_add_tref(&b, ti, shapes + m->shape_off, m->ndim, arg, pass) != MT_OK)
                    goto nomem;
            }
        }
    }
    t->step = -1;
    t->n_steps = 1;
    t->step_start_ns = 0;
    t->step_end_ns = clock_ns;
    t->host_end_ns = clock_ns;
    t->link.method = TRACE_LINK_NONE;
    t->link.matched = t->n_ops;
    rc = mt_tb_finish(&b, NULL, err);
    t->has_device_time = 1;
    goto out;
nomem:
    rc = mt_fail(err, MT_ENOMEM, "%s: out of memory", trace_csv);
out:
    free(ids);
    free(sizes);
    free(metas);
    free(shapes);
    mt_u64map_destroy(&meta_by_id);
    mt_tb_destroy(&b);
    table_free(&ops);
    table_free(&tens);
    return rc;
}

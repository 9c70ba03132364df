/* tracer/triosim.c — the TrioSim CSV readers and the trace they make (see triosim.h):
 * `trace.csv` (one row per operator: OperatorID, OperatorName, Operator_input, Operator_output,
 * Operator_cudatime, Operator_cudatimenooverlap (µs), InputSize, OutputSize, gpuid, stage,
 * tpflag) and `tensor.csv` (Index, TensorID, TensorShape, TensorNumElement, TensorEachByte,
 * TensorType, TensorStorgeid, gpuid), each recognised by its header and read with libcsv
 * (csvtable.h).
 * Operators run back to back in file order: each gets one synthetic kernel of its CUDA time, so
 * the step's device time is their sum. The time is Operator_cudatimenooverlap, what TrioSim
 * itself uses (Operator_cudatime adds the time of an op's overlapping kernels twice: ResNet-50
 * H100 b128 sums to 83.31 ms against 70.72 ms); files without it fall back to
 * Operator_cudatime with a warning. A file cut short is an error naming its line: a row with
 * fewer cells than the header, a last line without its line break ending in an empty cell, or a
 * quoted cell left open. tensor.csv lists the tensors of every traced op in order, so rows left
 * after the tensors of trace.csv's last op hint that trace.csv was cut at a line break: a
 * warning (TrioSim may also have dropped trailing ops). Cost: O(file size).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/builder.h"
#include "tracer/limits.h"
#include "tracer/opclass.h"
#include "tracer/reader.h"
#include "tracer/triosim.h"
#include "util/u64map.h"
#include "util/vec.h"

/* ---- the two readers -------------------------------------------------------------------- */

static mt_sniff sniff_ops(const char *head, size_t len) {
    return mt_sniff_literal(mt_sniff_ws(head, head + len), head + len, "OperatorID,");
}

static mt_sniff sniff_tensors(const char *head, size_t len) {
    return mt_sniff_literal(mt_sniff_ws(head, head + len), head + len, "Index,TensorID,");
}

static mt_status load_ops(const char *path, trace_strpool *pool, mt_trace_parts *parts, mt_error *err) {
    (void)pool;
    return mt_csv_table_load(path, &parts->csv[0], err);
}

static mt_status load_tensors(const char *path, trace_strpool *pool, mt_trace_parts *parts, mt_error *err) {
    (void)pool;
    return mt_csv_table_load(path, &parts->csv[1], err);
}

const mt_trace_reader mt_reader_triosim_ops = {"triosim-trace-csv", MT_PART_CSV_OPS, ".csv", sniff_ops,
                                              load_ops};
const mt_trace_reader mt_reader_triosim_tensors = {"triosim-tensor-csv", MT_PART_CSV_TENSORS, ".csv",
                                                   sniff_tensors, load_tensors};

/* ---- cells ------------------------------------------------------------------------------ */

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

/* A file cut at a random byte leaves its last row with fewer cells than the header, or, cut
 * before the line break of a full row, with an empty last cell (a quoted cell left open fails in
 * csvtable.c). Rows with more cells than the header are malformed. */
static mt_status check_complete(const csv_table *t, const char *path, mt_error *err) {
    int64_t width = t->n_rows > 0 ? mt_csv_table_row_len(t, 0) : 0;
    for (int64_t r = 1; r < t->n_rows; r++) {
        int64_t n = mt_csv_table_row_len(t, r);
        if (n < width)
            return mt_fail(err, MT_EFORMAT, "%s:%ld: %ld of the header's %ld cells: the line is cut short "
                           "(a truncated file? copy it again)", path, (long)r + 1, (long)n, (long)width);
        if (n > width)
            return mt_fail(err, MT_EFORMAT, "%s:%ld: %ld cells where the header has %ld: a stray comma or "
                           "a line break inside a cell", path, (long)r + 1, (long)n, (long)width);
        if (r == t->n_rows - 1 && t->open_end && width > 0 && !*mt_csv_table_cell(t, r, width - 1))
            return mt_fail(err, MT_EFORMAT, "%s:%ld: the last line ends in an empty cell without a line "
                           "break: the file was cut short (copy it again)", path, (long)r + 1);
    }
    return MT_OK;
}

/* ---- tensor.csv ------------------------------------------------------------------------- */

#define MAX_DIMS 16

typedef struct tmeta {
    int64_t storage, numel, shape_off;
    int32_t itemsize, ndim;
} tmeta;

/* Columns of tensor.csv: the first four are required; the storage id is spelt both ways. */
enum { TC_ID, TC_SHAPE, TC_NUMEL, TC_ISZ, TC_STOR, TC_STOR2, TC_N };
static const char *const tensor_cols[TC_N] = {"TensorID", "TensorShape", "TensorNumElement", "TensorEachByte",
                                              "TensorStorgeid", "TensorStorageid"};

typedef struct tensors {           /* tensor.csv: the first row of each TensorID */
    const csv_table *tab;
    const char *path;
    int64_t c[TC_N];
    mt_u64map by_id;               /* TensorID -> index into m */
    tmeta *m;
    int64_t n, cap;
    int64_t *shapes, n_shapes, cap_shapes;
    int64_t *row_id;               /* TensorID of every row (index r), for the order check */
} tensors;

static void tensors_free(tensors *ts) {
    mt_u64map_destroy(&ts->by_id);
    free(ts->m);
    free(ts->shapes);
    free(ts->row_id);
}

/* Reads row r of tensor.csv into ts (a TensorID seen before is skipped). */
static mt_status tensor_row(tensors *ts, int64_t r, mt_error *err) {
    const csv_table *t = ts->tab;
    const char *path = ts->path;
    int64_t id, storage, numel, isz;
    if (!int_cell(mt_csv_table_cell(t, r, ts->c[TC_ID]), INT64_MIN, INT64_MAX, &id))
        return mt_fail(err, MT_EFORMAT, "%s:%ld: TensorID '%s' is not an integer", path, (long)r + 1,
                       mt_csv_table_cell(t, r, ts->c[TC_ID]));
    ts->row_id[r] = id;
    if (mt_u64map_get(&ts->by_id, id, NULL)) return MT_OK;
    storage = id; /* without a storage column every tensor is its own storage */
    if (ts->c[TC_STOR] >= 0 && !int_cell(mt_csv_table_cell(t, r, ts->c[TC_STOR]), INT64_MIN, INT64_MAX, &storage))
        return mt_fail(err, MT_EFORMAT, "%s:%ld: TensorStorgeid '%s' is not an integer", path, (long)r + 1,
                       mt_csv_table_cell(t, r, ts->c[TC_STOR]));
    if (!int_cell(mt_csv_table_cell(t, r, ts->c[TC_NUMEL]), 0, TRACE_MAX_NUMEL, &numel) ||
        !int_cell(mt_csv_table_cell(t, r, ts->c[TC_ISZ]), 0, TRACE_MAX_ITEMSIZE, &isz))
        return mt_fail(err, MT_EFORMAT, "%s:%ld: TensorNumElement '%s' / TensorEachByte '%s': want 0..1e12 "
                       "elements of 0..%d bytes", path, (long)r + 1, mt_csv_table_cell(t, r, ts->c[TC_NUMEL]),
                       mt_csv_table_cell(t, r, ts->c[TC_ISZ]), TRACE_MAX_ITEMSIZE);
    if (mt_vec_reserve(&ts->m, &ts->cap, ts->n + 1) ||
        mt_vec_reserve(&ts->shapes, &ts->cap_shapes, ts->n_shapes + MAX_DIMS))
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    int64_t *dims = ts->shapes + ts->n_shapes;
    int64_t nd = parse_list(mt_csv_table_cell(t, r, ts->c[TC_SHAPE]), dims, MAX_DIMS);
    for (int64_t k = 0; k < nd && k < MAX_DIMS; k++)
        if (dims[k] < 0 || dims[k] > TRACE_MAX_NUMEL) nd = -1;
    if (nd < 0)
        return mt_fail(err, MT_EFORMAT, "%s:%ld: bad TensorShape '%s' (want a list of dimensions 0..1e12)",
                       path, (long)r + 1, mt_csv_table_cell(t, r, ts->c[TC_SHAPE]));
    tmeta *m = &ts->m[ts->n];
    *m = (tmeta){storage, numel, ts->n_shapes, (int32_t)isz, (int32_t)(nd > MAX_DIMS ? MAX_DIMS : nd)};
    ts->n_shapes += m->ndim;
    if (mt_u64map_put(&ts->by_id, id, ts->n, NULL) != MT_OK) return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    ts->n++;
    return MT_OK;
}

static mt_status read_tensors(tensors *ts, mt_error *err) {
    const csv_table *t = ts->tab;
    int ok = mt_csv_table_cols(t, tensor_cols, TC_N, TC_STOR, ts->c);
    if (ts->c[TC_STOR] < 0) ts->c[TC_STOR] = ts->c[TC_STOR2];
    if (!ok)
        return mt_fail(err, MT_EFORMAT, "%s: missing column (need TensorID, TensorShape, "
                       "TensorNumElement, TensorEachByte): not a TrioSim tensor.csv", ts->path);
    MT_CHECK(check_complete(t, ts->path, err));
    if (!(ts->row_id = calloc((size_t)t->n_rows, sizeof *ts->row_id)))
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", ts->path);
    for (int64_t r = 1; r < t->n_rows; r++) MT_CHECK(tensor_row(ts, r, err));
    return MT_OK;
}

/* ---- trace.csv -------------------------------------------------------------------------- */

/* Columns of trace.csv: the first four are required, and one of the two times. */
enum { OC_NAME, OC_IN, OC_OUT, OC_STAGE, OC_NOOVERLAP, OC_CUDATIME, OC_INSZ, OC_N };
static const char *const op_cols[OC_N] = {"OperatorName", "Operator_input", "Operator_output", "stage",
                                          "Operator_cudatimenooverlap", "Operator_cudatime", "InputSize"};

typedef struct ops {               /* trace.csv and the state of its walk */
    const csv_table *tab;
    const char *path;
    int64_t c[OC_N];
    int64_t time_col;                 /* Operator_cudatimenooverlap, else Operator_cudatime */
    int64_t *ids, *sizes, max_list;   /* scratch for one row's tensor lists */
    int64_t clock_ns;                 /* end of the previous op */
    int64_t order_row;                /* tensor.csv row of the last tensor use matched in file
                                       * order; -1 once the two files' orders differ */
    int64_t uses, uses_in_order;      /* tensor uses of trace.csv, and those matched in order */
    int64_t break_line;               /* trace.csv line where the order broke */
    char warning[512];
} ops;

static mt_status op_columns(ops *os, mt_error *err) {
    const csv_table *t = os->tab;
    if (!mt_csv_table_cols(t, op_cols, OC_N, OC_NOOVERLAP, os->c) ||
        (os->c[OC_NOOVERLAP] < 0 && os->c[OC_CUDATIME] < 0))
        return mt_fail(err, MT_EFORMAT, "%s: missing column (need OperatorName, Operator_input, "
                       "Operator_output, stage and Operator_cudatimenooverlap or Operator_cudatime): not a "
                       "TrioSim trace.csv", os->path);
    os->time_col = os->c[OC_NOOVERLAP] >= 0 ? os->c[OC_NOOVERLAP] : os->c[OC_CUDATIME];
    if (os->c[OC_NOOVERLAP] < 0)
        snprintf(os->warning, sizeof os->warning, "%s has no Operator_cudatimenooverlap column: op times are "
                 "Operator_cudatime, which counts overlapping kernels twice (TrioSim uses the former)", os->path);
    MT_CHECK(check_complete(t, os->path, err));
    if (t->n_rows < 2) return mt_fail(err, MT_EFORMAT, "%s: no operator rows (empty step)", os->path);
    os->max_list = 1;
    for (int64_t r = 1; r < t->n_rows; r++) {
        int64_t a = parse_list(mt_csv_table_cell(t, r, os->c[OC_IN]), NULL, 0);
        int64_t o = parse_list(mt_csv_table_cell(t, r, os->c[OC_OUT]), NULL, 0);
        if (a > os->max_list) os->max_list = a;
        if (o > os->max_list) os->max_list = o;
    }
    os->ids = malloc((size_t)os->max_list * sizeof *os->ids);
    os->sizes = malloc((size_t)os->max_list * sizeof *os->sizes);
    if (!os->ids || !os->sizes) return mt_fail(err, MT_ENOMEM, "%s: out of memory", os->path);
    return MT_OK;
}

/* The first row of tensor.csv after `after` listing tensor id; -1 when none (the files' orders
 * differ). Amortised O(1) per use when they agree. */
static int64_t next_row(const tensors *ts, int64_t after, int64_t id) {
    for (int64_t r = after + 1; r < ts->tab->n_rows; r++)
        if (ts->row_id[r] == id) return r;
    return -1;
}

/* The inputs (pass 0) or outputs (pass 1) of row r as tensor uses of the last op. A _foreach_
 * op's input list repeats with the period of its InputSize list: one argument per period. */
static mt_status op_tensors(ops *os, const tensors *ts, trace_builder *b, int64_t r, const char *name, int pass,
                            mt_error *err) {
    const csv_table *t = os->tab;
    const char *list = mt_csv_table_cell(t, r, pass ? os->c[OC_OUT] : os->c[OC_IN]);
    int64_t n = parse_list(list, os->ids, os->max_list);
    if (n < 0) return mt_fail(err, MT_EFORMAT, "%s:%ld: bad tensor list '%s'", os->path, (long)r + 1, list);
    int64_t period = n;
    if (!pass && strstr(name, "_foreach_") && os->c[OC_INSZ] >= 0 &&
        parse_list(mt_csv_table_cell(t, r, os->c[OC_INSZ]), os->sizes, os->max_list) == n)
        period = period_of(os->sizes, n);
    for (int64_t i = 0; i < n; i++) {
        int64_t mi;
        if (!mt_u64map_get(&ts->by_id, os->ids[i], &mi))
            return mt_fail(err, MT_EFORMAT, "%s:%ld: tensor %ld is not in %s (cut short? copy it again)",
                           os->path, (long)r + 1, (long)os->ids[i], ts->path);
        os->uses++;
        if (os->order_row >= 0 && (os->order_row = next_row(ts, os->order_row, os->ids[i])) < 0)
            os->break_line = r + 1;
        os->uses_in_order += os->order_row >= 0;
        const tmeta *m = &ts->m[mi];
        int32_t ti = mt_tb_tensor(b, os->ids[i], m->storage, 0, m->numel, m->itemsize, NULL, NULL);
        int32_t arg = (int32_t)(period > 0 ? i / period : i);
        if (ti < 0 || mt_tb_add_tref(b, ti, ts->shapes + m->shape_off, m->ndim, arg, pass) != MT_OK)
            return mt_fail(err, MT_ENOMEM, "%s: out of memory", os->path);
    }
    return MT_OK;
}

static trace_phase phase_of_stage(const char *stage) {
    static const char *const stages[] = {[TRACE_PHASE_FORWARD] = "forward", [TRACE_PHASE_BACKWARD] = "backward",
                                         [TRACE_PHASE_OPTIMIZER] = "optimizer"};
    for (int p = 0; p < (int)(sizeof stages / sizeof *stages); p++)
        if (!strcmp(stage, stages[p])) return (trace_phase)p;
    return TRACE_PHASE_OTHER;
}

/* Row r of trace.csv: an op with one kernel of its CUDA time, after the previous one. */
static mt_status op_row(ops *os, const tensors *ts, trace_builder *b, int64_t r, mt_error *err) {
    const csv_table *t = os->tab;
    const char *name = mt_strpool_intern(b->t->pool, mt_csv_table_cell(t, r, os->c[OC_NAME]), -1);
    if (!name) return mt_fail(err, MT_ENOMEM, "%s: out of memory", os->path);
    const char *cell = mt_csv_table_cell(t, r, os->time_col);
    char *end;
    double us = strtod(cell, &end);
    while (*end == ' ') end++;
    if (end == cell || *end || !(us >= 0) || (double)os->clock_ns + us * 1000.0 > TRACE_MAX_NS)
        return mt_fail(err, MT_EFORMAT, "%s:%ld: %s '%s' is not a number of microseconds from 0 up to a step "
                       "of 11 days", os->path, (long)r + 1, mt_csv_table_cell(t, 0, os->time_col), cell);
    trace_op op = {0};
    op.name = op.kind = name;
    op.phase = phase_of_stage(mt_csv_table_cell(t, r, os->c[OC_STAGE]));
    op.cpu_start_ns = os->clock_ns;
    op.cpu_dur_ns = (int64_t)(us * 1000.0 + 0.5);
    op.seq = op.et_node = -1;
    op.layer = -1;
    op.comm = mt_opclass_comm_of(name);
    int32_t oi = mt_tb_add_op(b, &op);
    trace_kernel kk = {os->clock_ns, op.cpu_dur_ns, oi, -1, name, TRACE_KERNEL, -1};
    if (oi < 0 || mt_tb_add_kernel(b, &kk) < 0) return mt_fail(err, MT_ENOMEM, "%s: out of memory", os->path);
    os->clock_ns += op.cpu_dur_ns;
    MT_CHECK(op_tensors(os, ts, b, r, name, 0, err));
    return op_tensors(os, ts, b, r, name, 1, err);
}

/* ---- the trace -------------------------------------------------------------------------- */

/* t->warning: the time column's, and a file cut at a line break as the two files' common order
 * shows it: tensor.csv going on after the tensors of trace.csv's last op (trace.csv cut), or
 * ending before them after following trace.csv's order for most of its uses (tensor.csv cut). */
static mt_status set_warning(ops *os, const tensors *ts, mt_trace *t, mt_error *err) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s", os->warning);
    int64_t last = ts->tab->n_rows - 1;
    if (os->order_row > 0 && os->order_row < last)
        snprintf(buf + n, sizeof buf - (size_t)n, "%s%s lists %ld more rows (from line %ld) after the tensors of "
                 "the last operator of %s: was %s cut short at a line break? (copy it again)", n ? "; " : "",
                 ts->path, (long)(last - os->order_row), (long)os->order_row + 2, os->path, os->path);
    else if (os->order_row < 0 && 2 * os->uses_in_order >= os->uses)
        snprintf(buf + n, sizeof buf - (size_t)n, "%s%s follows the order of %s for %ld of its %ld tensor uses, "
                 "then ends before those of line %ld: was %s cut short at a line break? (copy it again)",
                 n ? "; " : "", ts->path, os->path, (long)os->uses_in_order, (long)os->uses,
                 (long)os->break_line, ts->path);
    if (!buf[0]) return MT_OK;
    t->warning = mt_strpool_intern(t->pool, buf, -1);
    return t->warning ? MT_OK : mt_fail(err, MT_ENOMEM, "%s: out of memory", os->path);
}

mt_status mt_triosim_build(const char *trace_csv, const csv_table *op_tab, const char *tensor_csv,
                           const csv_table *tensor_tab, mt_trace *t, mt_error *err) {
    trace_builder b;
    mt_tb_init(&b, t);
    tensors ts = {.tab = tensor_tab, .path = tensor_csv};
    mt_u64map_init(&ts.by_id);
    ops os = {.tab = op_tab, .path = trace_csv};
    t->format = TRACE_FORMAT_TRIOSIM_CSV;
    mt_status rc = read_tensors(&ts, err);
    if (rc == MT_OK) rc = op_columns(&os, err);
    for (int64_t r = 1; rc == MT_OK && r < op_tab->n_rows; r++) rc = op_row(&os, &ts, &b, r, err);
    if (rc == MT_OK) rc = set_warning(&os, &ts, t, err);
    if (rc == MT_OK) {
        t->step = -1;
        t->n_steps = 1;
        t->step_start_ns = 0;
        t->step_end_ns = t->host_end_ns = os.clock_ns;
        t->link.method = TRACE_LINK_NONE;
        t->link.matched = t->n_ops;
        rc = mt_tb_finish(&b, NULL, err);
        t->has_device_time = 1;
    }
    free(os.ids);
    free(os.sizes);
    tensors_free(&ts);
    mt_tb_destroy(&b);
    return rc;
}

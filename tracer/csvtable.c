/* tracer/csvtable.c — see csvtable.h. */
#include "tracer/csvtable.h"

#include <csv.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"
#include "util/vec.h"

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
    if (mt_vec_reserve(&t->text, &t->cap_text, t->n_text + (int64_t)len + 1) ||
        mt_vec_reserve(&t->cells, &t->cap_cells, t->n_cells + 1)) {
        t->failed = 1;
        return;
    }
    if (len) memcpy(t->text + t->n_text, s, len);
    t->text[t->n_text + (int64_t)len] = '\0';
    t->cells[t->n_cells++] = t->n_text;
    t->n_text += (int64_t)len + 1;
    t->cur_cells++;
}

static void on_row(int ch, void *data) {
    (void)ch;
    csv_table *t = data;
    if (t->failed || t->cur_cells == 0) return;
    t->n_rows++;
    t->cur_cells = 0;
}

void mt_csv_table_free(csv_table *t) {
    free(t->cells);
    free(t->text);
    free(t->row_start);
    memset(t, 0, sizeof *t);
}

int64_t mt_csv_table_row_len(const csv_table *t, int64_t r) {
    int64_t end = r + 1 < t->n_rows ? t->row_start[r + 1] : t->n_cells;
    return end - t->row_start[r];
}

const char *mt_csv_table_cell(const csv_table *t, int64_t r, int64_t c) {
    return c < mt_csv_table_row_len(t, r) ? t->text + t->cells[t->row_start[r] + c] : "";
}

int64_t mt_csv_table_col(const csv_table *t, const char *name) {
    for (int64_t c = 0; t->n_rows > 0 && c < mt_csv_table_row_len(t, 0); c++)
        if (!strcmp(mt_csv_table_cell(t, 0, c), name)) return c;
    return -1;
}

int mt_csv_table_cols(const csv_table *t, const char *const *names, int n, int n_required, int64_t *cols) {
    int ok = 1;
    for (int i = 0; i < n; i++) {
        cols[i] = mt_csv_table_col(t, names[i]);
        if (i < n_required && cols[i] < 0) ok = 0;
    }
    return ok;
}

/* 1-based line of byte offset `at` of buf. */
static long line_at(const char *buf, size_t at) {
    long line = 1;
    for (size_t i = 0; i < at; i++) line += buf[i] == '\n';
    return line;
}

mt_status mt_csv_table_load(const char *path, csv_table *t, mt_error *err) {
    memset(t, 0, sizeof *t);
    char *buf = NULL;
    size_t len = 0;
    MT_CHECK(mt_read_file(path, &buf, &len, err));
    struct csv_parser p;
    if (csv_init(&p, CSV_APPEND_NULL | CSV_STRICT_FINI) != 0) {
        free(buf);
        return mt_fail(err, MT_ENOMEM, "%s: cannot initialise the CSV parser", path);
    }
    size_t done = csv_parse(&p, buf, len, on_field, on_row, t);
    int bad = done != len, open_quote = 0;
    if (!bad) open_quote = csv_fini(&p, on_field, on_row, t) != 0;
    const char *why = bad ? csv_strerror(csv_error(&p)) : NULL;
    long line = line_at(buf, bad ? done : len);
    t->open_end = len > 0 && buf[len - 1] != '\n' && buf[len - 1] != '\r';
    csv_free(&p);
    free(buf);
    int oom = t->failed;
    if (bad || open_quote || oom) {
        mt_csv_table_free(t);
        if (oom && !bad && !open_quote)
            return mt_fail(err, MT_ENOMEM, "%s: out of memory reading CSV", path);
        if (open_quote)
            return mt_fail(err, MT_EFORMAT, "%s:%ld: a quoted cell is still open at the end of the file: "
                           "the file was cut short (copy it again)", path, line);
        return mt_fail(err, MT_EFORMAT, "%s:%ld: %s", path, line, why);
    }
    return MT_OK;
}

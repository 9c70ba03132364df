/* tracer/csvtable.h — a whole CSV file as rows of cells (libcsv), for the TrioSim reader.
 *
 * Invariant: cells are row-major; row r's cells are cells[row_start[r] .. row_start[r+1]) (the
 * last row ends at n_cells); rows may be ragged, and a cell past a row's end reads as "".
 * Row 0 is the header. Line numbers in messages are row + 1 (cells with line breaks inside
 * quotes would shift them; TrioSim files have none). A file cut short shows as a quoted cell
 * left open (an error naming the line), a last row with fewer cells than the header, or a last
 * row without its line break (open_end): the reader decides what its format allows.
 * Cost: O(file size) to load, O(1) per cell, O(columns) per column lookup.
 */
#ifndef MT_TRACER_CSVTABLE_H
#define MT_TRACER_CSVTABLE_H

#include <stdint.h>

#include "util/err.h"

typedef struct csv_table {
    int64_t *cells;      /* row-major: each cell's offset in text */
    int64_t n_cells, cap_cells;
    char *text;          /* every cell, NUL-terminated, one after another (one buffer: no allocation
                          * per cell) */
    int64_t n_text, cap_text;
    int64_t *row_start;  /* index of each row's first cell */
    int64_t n_rows, cap_rows;
    int64_t cur_cells;   /* cells in the row being read */
    int failed;          /* out of memory while reading */
    int open_end;        /* 1 when the file does not end with a line break */
} csv_table;

/* Reads `path` (gzip or not) into t; on failure t is empty and the message names the file and
 * the line (a quoted cell still open at the end of the file is an error: the file was cut). */
mt_status mt_csv_table_load(const char *path, csv_table *t, mt_error *err);
void mt_csv_table_free(csv_table *t);
/* Cell (r, c), "" past the row's end. */
const char *mt_csv_table_cell(const csv_table *t, int64_t r, int64_t c);
/* Number of cells of row r (the header's is the table's width). */
int64_t mt_csv_table_row_len(const csv_table *t, int64_t r);
/* Column index by header name, -1 when absent. */
int64_t mt_csv_table_col(const csv_table *t, const char *name);
/* cols[i] = mt_csv_table_col(t, names[i]) for i < n; 1 when the first n_required are present. */
int mt_csv_table_cols(const csv_table *t, const char *const *names, int n, int n_required, int64_t *cols);

#endif

/* report/colltable.h — collective timings as nccl-tests prints them: size (B), count (elements
 * of the type), type, time (us), algbw = size / time, busbw = algbw x the nccl-tests factor
 * (all-reduce 2(n-1)/n, all-gather / reduce-scatter / all-to-all (n-1)/n, else 1); as a text
 * table and as JSON with the same rows. Plain data filled by run/collective.h. Costs: O(rows).
 */
#ifndef MT_REPORT_COLLTABLE_H
#define MT_REPORT_COLLTABLE_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

enum { MT_COLL_TABLE_MAX = 64 };

typedef struct mt_coll_table {
    const char *op, *algo;       /* "allreduce", "ring" */
    int32_t ranks;
    char topology[256];          /* "" : the model's own endpoints */
    const char *network;         /* "flow" */
    char type[16];               /* "float" */
    int type_bytes;
    double busbw_factor;
    double size[MT_COLL_TABLE_MAX], time_us[MT_COLL_TABLE_MAX];
    char row_algo[MT_COLL_TABLE_MAX][16]; /* per size: NCCL's "algo/proto" (--algo nccl); "" otherwise */
    int32_t n;
} mt_coll_table;

void mt_coll_table_print(FILE *out, const mt_coll_table *t);
json_t *mt_coll_table_json(const mt_coll_table *t);

#endif

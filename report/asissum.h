/* report/asissum.h — what `simulate DIR --as-is` answers: per-rank Chakra graphs run as given
 * (sim/asis.h), as text and as JSON. A plain view that run/asis.c fills. Costs: O(ranks).
 */
#ifndef MT_REPORT_ASISSUM_H
#define MT_REPORT_ASISSUM_H

#include <stdio.h>

#include <jansson.h>

#include "sim/asis.h"

typedef struct mt_asis_summary {
    const char *source;          /* the directory or file given */
    const char *name;            /* NAME of NAME.RANK.et */
    const char *version;         /* rank 0's schema version */
    const char *network;         /* "flow" */
    const char *topology;        /* "switch:8" ("" : the model's own endpoints) */
    const mt_asis_result *res;
    double wall_s;               /* host seconds: reading and simulating */
} mt_asis_summary;

/* Totals, then one row per rank when per_rank (or when there are at most 16 ranks). */
void mt_asis_print(FILE *out, const mt_asis_summary *s, int per_rank);
json_t *mt_asis_json(const mt_asis_summary *s);

#endif

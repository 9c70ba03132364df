/* report/hoptable.h — the answer of `mitosis hop`: per group of uplink slowdowns and per gossip
 * graph, the time for every worker to do K iterations without and with backup workers, and the
 * mean speed-up per graph; as text and JSON. Plain data filled by run/hop.h. Costs: O(rows).
 */
#ifndef MT_REPORT_HOPTABLE_H
#define MT_REPORT_HOPTABLE_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

typedef struct mt_hop_row {
    int32_t group;
    const char *graph;       /* ring, ring-chords, double-ring, complete */
    double b0_ms, b_ms;      /* every worker done: without, with backups */
    double speedup;          /* b0_ms / b_ms */
    double mean_speedup;     /* the same for the mean worker */
} mt_hop_row;

typedef struct mt_hop_table {
    int32_t workers, iterations, staleness, backups, max_gap, groups;
    double smin, smax;
    double compute_ms, update_bytes;
    char topology[256];      /* the topology spec run */
    double link_bw_Bps;
    double *slowdowns;       /* groups x workers */
    const char *graphs[4];
    int32_t n_graphs;
    double mean_speedup[4];  /* per graph, over the groups */
    mt_hop_row *rows;        /* groups x graphs, group-major */
    int32_t n_rows;
    char warning[512];       /* the trace's (mt_trace_warning), "" none */
} mt_hop_table;

void mt_hop_table_free(mt_hop_table *t);
void mt_hop_table_print(FILE *out, const mt_hop_table *t);
json_t *mt_hop_table_json(const mt_hop_table *t);

#endif

/* report/hoptable.c — see hoptable.h. */
#include "report/hoptable.h"

#include <stdlib.h>
#include <string.h>

#include "util/units.h"

void mt_hop_table_free(mt_hop_table *t) {
    free(t->slowdowns);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

/* "1.0 4.2 9.9 ..." for group g (cut to fit the column). */
static void slowdown_text(const mt_hop_table *t, int32_t g, char *sl, size_t len) {
    sl[0] = '\0';
    for (int32_t i = 0; i < t->workers; i++)
        if (strlen(sl) < len - 8)
            snprintf(sl + strlen(sl), len - strlen(sl), "%s%.1f", i ? " " : "", t->slowdowns[(size_t)g * t->workers + i]);
}

void mt_hop_table_print(FILE *out, const mt_hop_table *t) {
    char bw[32], mb[32], sl[200];
    fprintf(out, "hop        %d workers, %d iteration%s, staleness %d, backups 0 vs %d%s, uplink slowdown U[%g, %g]\n",
            (int)t->workers, (int)t->iterations, mt_plural(t->iterations), (int)t->staleness, (int)t->backups,
            t->max_gap >= 0 ? ", iteration-gap bound" : "", t->smin, t->smax);
    fprintf(out, "iteration  compute %.3f ms, update %s to each out-neighbour, links %s (%s)\n", t->compute_ms,
            mt_fmt_bytes(t->update_bytes, mb, sizeof mb), t->topology, mt_fmt_bandwidth(t->link_bw_Bps, bw, sizeof bw));
    fprintf(out, "\n%5s %-12s %-44s %12s %12s %8s %8s\n", "group", "graph", "slowdowns", "b=0 ms", "b=B ms", "speedup",
            "mean");
    for (int32_t k = 0; k < t->n_rows; k++) {
        const mt_hop_row *r = &t->rows[k];
        int first = k % t->n_graphs == 0;
        if (first) slowdown_text(t, r->group, sl, sizeof sl);
        fprintf(out, "%5d %-12s %-44s %12.1f %12.1f %7.2fx %7.2fx\n", (int)r->group, r->graph, first ? sl : "",
                r->b0_ms, r->b_ms, r->speedup, r->mean_speedup);
    }
    fprintf(out, "\n");
    for (int32_t k = 0; k < t->n_graphs; k++)
        fprintf(out, "mean speed-up of %d backup worker%s on %-12s %.2fx (time for all workers to do %d iteration%s)\n",
                (int)t->backups, mt_plural(t->backups), t->graphs[k], t->mean_speedup[k], (int)t->iterations,
                mt_plural(t->iterations));
    fprintf(out, "(speedup: b=0 time / b=B time for every worker to finish; mean: the same for the mean worker)\n");
}

json_t *mt_hop_table_json(const mt_hop_table *t) {
    json_t *o = json_object(), *rows = json_array(), *means = json_object();
    json_object_set_new(o, "workers", json_integer(t->workers));
    json_object_set_new(o, "iterations", json_integer(t->iterations));
    json_object_set_new(o, "staleness", json_integer(t->staleness));
    json_object_set_new(o, "backups", json_integer(t->backups));
    json_object_set_new(o, "max_gap", t->max_gap >= 0 ? json_integer(t->max_gap) : json_null());
    json_object_set_new(o, "slowdown", json_pack("[f,f]", t->smin, t->smax));
    json_object_set_new(o, "compute_ms", json_real(t->compute_ms));
    json_object_set_new(o, "update_bytes", json_real(t->update_bytes));
    json_object_set_new(o, "topology", json_string(t->topology));
    json_object_set_new(o, "link_bw_Bps", json_real(t->link_bw_Bps));
    for (int32_t k = 0; k < t->n_rows; k++) {
        const mt_hop_row *r = &t->rows[k];
        json_t *x = json_object(), *sl = json_array();
        for (int32_t i = 0; i < t->workers; i++) json_array_append_new(sl, json_real(t->slowdowns[(size_t)r->group * t->workers + i]));
        json_object_set_new(x, "group", json_integer(r->group));
        json_object_set_new(x, "graph", json_string(r->graph));
        json_object_set_new(x, "slowdowns", sl);
        json_object_set_new(x, "b0_ms", json_real(r->b0_ms));
        json_object_set_new(x, "backups_ms", json_real(r->b_ms));
        json_object_set_new(x, "speedup", json_real(r->speedup));
        json_object_set_new(x, "mean_speedup", json_real(r->mean_speedup));
        json_array_append_new(rows, x);
    }
    for (int32_t k = 0; k < t->n_graphs; k++) json_object_set_new(means, t->graphs[k], json_real(t->mean_speedup[k]));
    json_object_set_new(o, "rows", rows);
    json_object_set_new(o, "mean_speedup", means);
    return o;
}

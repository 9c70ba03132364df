/* report/colltable.c — see colltable.h. */
#include "report/colltable.h"

#include <math.h>

#include "util/units.h"

static double algbw_GBps(const mt_coll_table *t, int32_t i) {
    return t->time_us[i] > 0 ? t->size[i] / (t->time_us[i] * 1e-6) / 1e9 : 0;
}

static double count(const mt_coll_table *t, int32_t i) { return floor(t->size[i] / t->type_bytes); }

void mt_coll_table_print(FILE *out, const mt_coll_table *t) {
    fprintf(out, "# %s, algo %s, %d rank%s, %s, network %s\n", t->op, t->algo, (int)t->ranks, mt_plural(t->ranks),
            t->topology[0] ? t->topology : "(no topology)", t->network);
    int nccl = t->n > 0 && t->row_algo[0][0];
    fprintf(out, "#%15s %13s %9s %14s %13s %13s%s\n", "size(B)", "count", "type", "time(us)", "algbw(GB/s)",
            "busbw(GB/s)", nccl ? "  algo/proto" : "");
    for (int32_t i = 0; i < t->n; i++)
        fprintf(out, " %15.0f %13.0f %9s %14.3f %13.2f %13.2f%s%s\n", t->size[i], count(t, i), t->type, t->time_us[i],
                algbw_GBps(t, i), algbw_GBps(t, i) * t->busbw_factor, nccl ? "  " : "", t->row_algo[i]);
}

/* A whole number as a JSON integer, anything else as a real. */
static json_t *json_num(double x) {
    return x == floor(x) && fabs(x) < 9e15 ? json_integer((json_int_t)x) : json_real(x);
}

json_t *mt_coll_table_json(const mt_coll_table *t) {
    json_t *o = json_pack("{s:s, s:s, s:i, s:s?, s:s, s:s}", "op", t->op, "algo", t->algo, "ranks", (int)t->ranks,
                          "topology", t->topology[0] ? t->topology : NULL, "network", t->network, "type", t->type);
    json_t *a = json_array();
    for (int32_t i = 0; i < t->n; i++)
        json_array_append_new(a, json_pack("{s:o, s:o, s:s, s:f, s:f, s:f}", "size_bytes", json_num(t->size[i]),
                                           "count", json_num(count(t, i)), "type", t->type, "time_us", t->time_us[i],
                                           "algbw_GBps", algbw_GBps(t, i), "busbw_GBps",
                                           algbw_GBps(t, i) * t->busbw_factor));
    for (int32_t i = 0; i < t->n && t->row_algo[0][0]; i++)
        json_object_set_new(json_array_get(a, (size_t)i), "nccl", json_string(t->row_algo[i]));
    json_object_set_new(o, "rows", a);
    return o;
}

/* report/asissum.c — see asissum.h. */
#include "report/asissum.h"

static double ms(mt_time_ps t) { return (double)t / 1e9; }

void mt_asis_print(FILE *out, const mt_asis_summary *s, int per_rank) {
    const mt_asis_result *r = s->res;
    fprintf(out, "Chakra ET as given: %s (%s, schema %s), %d rank%s\n", s->source, s->name,
            *s->version ? s->version : "?", (int)r->n_ranks, r->n_ranks == 1 ? "" : "s");
    fprintf(out, "  network        %s%s%s\n", s->network, *s->topology ? " on " : "", s->topology);
    fprintf(out, "  nodes          %lld\n", (long long)r->nodes);
    fprintf(out, "  collectives    %llu on %d communicator%s\n", (unsigned long long)r->collectives,
            (int)r->communicators, r->communicators == 1 ? "" : "s");
    fprintf(out, "  sends          %llu\n", (unsigned long long)r->sends);
    fprintf(out, "  step time      %.6f ms\n", ms(r->step_ps));
    if (!per_rank && r->n_ranks > 16) return;
    fprintf(out, "\n  %6s %14s %14s\n", "rank", "finish (ms)", "compute (ms)");
    for (int32_t i = 0; i < r->n_ranks; i++)
        fprintf(out, "  %6d %14.6f %14.6f\n", (int)i, ms(r->finish_ps[i]), ms(r->compute_ps[i]));
}

json_t *mt_asis_json(const mt_asis_summary *s) {
    const mt_asis_result *r = s->res;
    json_t *ranks = json_array();
    for (int32_t i = 0; i < r->n_ranks; i++)
        json_array_append_new(ranks, json_pack("{s:i,s:f,s:f}", "rank", (json_int_t)i, "finish_ms", ms(r->finish_ps[i]),
                                               "compute_ms", ms(r->compute_ps[i])));
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:i,s:I,s:I,s:i,s:I,s:f,s:I,s:o}", "source", s->source, "name", s->name,
                     "schema", s->version, "network", s->network, "topology", s->topology, "ranks", (int)r->n_ranks,
                     "nodes", (json_int_t)r->nodes, "collectives", (json_int_t)r->collectives, "communicators",
                     (int)r->communicators, "sends", (json_int_t)r->sends, "step_ms", ms(r->step_ps), "events",
                     (json_int_t)r->events, "per_rank", ranks);
}

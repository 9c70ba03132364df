/* report/emureport.c — see emureport.h. */
#include "report/emureport.h"

#include <stdlib.h>
#include <string.h>

double mt_emu_step_ms(const mt_emu_report *r) {
    double m = 0;
    for (int32_t i = 0; i < r->nranks; i++)
        if (r->ranks[i].step_ms > m) m = r->ranks[i].step_ms;
    return m;
}

double mt_emu_pred_step_ms(const mt_emu_report *r) {
    double m = 0;
    for (int32_t i = 0; i < r->nranks; i++)
        if (r->ranks[i].pred_step_ms > m) m = r->ranks[i].pred_step_ms;
    return m;
}

double mt_emu_error(double measured, double predicted) {
    return predicted > 0 ? (measured - predicted) / predicted : 0;
}

static int is_slow(double meas, double pred, double threshold) {
    return pred > 0 && meas > (1 + threshold) * pred;
}

int mt_emu_check(mt_emu_report *r, double threshold) {
    r->check = 1;
    r->threshold = threshold;
    r->slow_colls = r->slow_pairs = 0;
    for (int32_t i = 0; i < r->n_colls; i++) {
        r->colls[i].slow = (int8_t)is_slow(r->colls[i].meas_us, r->colls[i].pred_us, threshold);
        r->slow_colls += r->colls[i].slow;
    }
    int32_t *pairs = calloc((size_t)r->nranks * 2 + 1, sizeof *pairs); /* per rank: pairs, slow ones */
    if (!pairs) return -1;
    for (int32_t i = 0; i < r->n_pairs; i++) {
        mt_emu_pair *p = &r->pairs[i];
        p->slow = (int8_t)is_slow(p->meas_us, p->pred_us, threshold);
        r->slow_pairs += p->slow;
        int32_t ends[2] = {p->src, p->dst};
        for (int e = 0; e < 2; e++) {
            if (ends[e] < 0 || ends[e] >= r->nranks) continue;
            pairs[2 * ends[e]]++;
            pairs[2 * ends[e] + 1] += p->slow;
        }
    }
    free(r->suspects);
    r->suspects = NULL;
    r->n_suspects = 0;
    /* when every pair is slow no rank stands out: the whole network is slower than described */
    for (int32_t k = 0; k < r->nranks && r->slow_pairs < r->n_pairs; k++)
        if (pairs[2 * k] > 0 && pairs[2 * k + 1] == pairs[2 * k]) r->n_suspects++;
    if (r->n_suspects && !(r->suspects = malloc((size_t)r->n_suspects * sizeof *r->suspects))) {
        r->n_suspects = 0;
        free(pairs);
        return -1;
    }
    int32_t n = 0;
    for (int32_t k = 0; k < r->nranks && n < r->n_suspects; k++)
        if (pairs[2 * k] > 0 && pairs[2 * k + 1] == pairs[2 * k]) r->suspects[n++] = k;
    free(pairs);
    return 0;
}

void mt_emu_report_free(mt_emu_report *r) {
    if (!r) return;
    free(r->ranks);
    free(r->colls);
    free(r->pairs);
    if (r->suspect_links)
        for (int32_t i = 0; i < r->n_suspects; i++) free(r->suspect_links[i]);
    free(r->suspect_links);
    free(r->suspects);
    memset(r, 0, sizeof *r);
}

static double algbw_GBps(double bytes, double us) { return us > 0 ? bytes / (us * 1e3) : 0; }

static void print_ranks(FILE *out, const mt_emu_report *r) {
    fprintf(out, "\n  rank   step ms (pred)       compute ms (pred)    comm ms (pred)       exposed ms (pred)    "
                 "bubble ms (pred)\n");
    for (int32_t i = 0; i < r->nranks; i++) {
        const mt_emu_rank *k = &r->ranks[i];
        fprintf(out, "  %4d %9.3f (%8.3f) %9.3f (%8.3f) %9.3f (%8.3f) %9.3f (%8.3f) %9.3f (%8.3f)\n", k->rank,
                k->step_ms, k->pred_step_ms, k->compute_ms, k->pred_compute_ms, k->comm_ms, k->pred_comm_ms,
                k->exposed_ms, k->pred_exposed_ms, k->bubble_ms, k->pred_bubble_ms);
    }
}

static void print_colls(FILE *out, const mt_emu_report *r) {
    if (!r->n_colls) return;
    fprintf(out, "\n  %-4s %-10s %-6s %-6s %5s %14s %12s %12s %12s %12s %8s\n", "step", "collective", "algo", "group",
            "ranks", "size(B)", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "pred(us)", "error");
    for (int32_t i = 0; i < r->n_colls; i++) {
        const mt_emu_coll *c = &r->colls[i];
        double bw = algbw_GBps(c->bytes, c->meas_us);
        fprintf(out, "  %-4d %-10s %-6s %-6s %5d %14.0f %12.1f %12.4f %12.4f %12.1f %+7.1f%%%s\n", c->step, c->op,
                c->algo, c->group, c->nranks, c->bytes, c->meas_us, bw, bw * c->busbw_factor, c->pred_us,
                100 * mt_emu_error(c->meas_us, c->pred_us), r->check && c->slow ? "  SLOW" : "");
    }
}

static void print_pairs(FILE *out, const mt_emu_report *r) {
    if (!r->n_pairs) return;
    fprintf(out, "\n  pair        transfers     bytes(B)   time(us)   pred(us)    error\n");
    for (int32_t i = 0; i < r->n_pairs; i++) {
        const mt_emu_pair *p = &r->pairs[i];
        fprintf(out, "  %4d -> %-4d %8d %12.0f %10.1f %10.1f %+7.1f%%%s\n", p->src, p->dst, p->n, p->bytes, p->meas_us,
                p->pred_us, 100 * mt_emu_error(p->meas_us, p->pred_us), p->slow ? "  SLOW" : "");
    }
}

static void print_verdict(FILE *out, const mt_emu_report *r) {
    fprintf(out, "\ncheck      threshold %.0f%%: %d of %d collectives and %d of %d rank pairs slower than predicted\n",
            100 * r->threshold, r->slow_colls, r->n_colls, r->slow_pairs, r->n_pairs);
    for (int32_t i = 0; i < r->n_pairs; i++)
        if (r->pairs[i].slow)
            fprintf(out, "slow pair  %d -> %d: %.1f us measured, %.1f us predicted (%+.0f%%)\n", r->pairs[i].src,
                    r->pairs[i].dst, r->pairs[i].meas_us, r->pairs[i].pred_us,
                    100 * mt_emu_error(r->pairs[i].meas_us, r->pairs[i].pred_us));
    if (r->n_pairs && r->slow_pairs == r->n_pairs)
        fprintf(out, "every pair is slow: the whole network is slower than described (check --link-bw, --link-lat)\n");
    for (int32_t i = 0; i < r->n_suspects; i++)
        fprintf(out, "suspect    rank %d: every transfer into or out of it is slow (its link: %s)\n", r->suspects[i],
                r->suspect_links && r->suspect_links[i] ? r->suspect_links[i] : "?");
}

void mt_emu_report_print(FILE *out, const mt_emu_report *r) {
    double m = mt_emu_step_ms(r), p = mt_emu_pred_step_ms(r);
    fprintf(out, "emulated   %d MPI ranks, collectives as %s, time x %g, bytes x %g, polling every %g us\n", r->nranks,
            r->coll_mode, r->time_scale, r->bytes_scale, r->poll_us);
    fprintf(out, "step time  %.3f ms measured (max over ranks), %.3f ms predicted on %s: error %+.1f%%\n", m, p,
            r->topology, 100 * mt_emu_error(m, p));
    print_ranks(out, r);
    print_colls(out, r);
    if (r->check) {
        print_pairs(out, r);
        print_verdict(out, r);
    }
}

static json_t *rank_json(const mt_emu_rank *k) {
    return json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:{s:f, s:f, s:f, s:f, s:f}}", "rank", (int)k->rank, "step_ms",
                     k->step_ms, "compute_ms", k->compute_ms, "comm_ms", k->comm_ms, "exposed_ms", k->exposed_ms,
                     "bubble_ms", k->bubble_ms, "predicted", "step_ms", k->pred_step_ms, "compute_ms",
                     k->pred_compute_ms, "comm_ms", k->pred_comm_ms, "exposed_ms", k->pred_exposed_ms, "bubble_ms",
                     k->pred_bubble_ms);
}

static json_t *coll_json(const mt_emu_coll *c) {
    double bw = algbw_GBps(c->bytes, c->meas_us);
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:b}", "op", c->op, "algo",
                     c->algo, "group", c->group, "first_rank", (int)c->first_rank, "ranks", (int)c->nranks, "step",
                     (int)c->step, "seq", (int)c->seq, "layer", (int)c->layer, "bytes", c->bytes, "time_us",
                     c->meas_us, "algbw_GBps", bw, "busbw_GBps", bw * c->busbw_factor, "predicted_us", c->pred_us,
                     "error", mt_emu_error(c->meas_us, c->pred_us), "slow", (int)c->slow);
}

static json_t *pair_json(const mt_emu_pair *p) {
    return json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:b}", "src", (int)p->src, "dst", (int)p->dst, "transfers",
                     (int)p->n, "bytes", p->bytes, "time_us", p->meas_us, "predicted_us", p->pred_us, "error",
                     mt_emu_error(p->meas_us, p->pred_us), "slow", (int)p->slow);
}

static json_t *check_json(const mt_emu_report *r) {
    json_t *s = json_array();
    for (int32_t i = 0; i < r->n_suspects; i++)
        json_array_append_new(s, json_pack("{s:i, s:s?}", "rank", (int)r->suspects[i], "link",
                                           r->suspect_links ? r->suspect_links[i] : NULL));
    return json_pack("{s:f, s:i, s:i, s:o}", "threshold", r->threshold, "slow_collectives", (int)r->slow_colls,
                     "slow_pairs", (int)r->slow_pairs, "suspects", s);
}

json_t *mt_emu_report_json(const mt_emu_report *r) {
    json_t *ranks = json_array(), *colls = json_array(), *pairs = json_array();
    for (int32_t i = 0; i < r->nranks; i++) json_array_append_new(ranks, rank_json(&r->ranks[i]));
    for (int32_t i = 0; i < r->n_colls; i++) json_array_append_new(colls, coll_json(&r->colls[i]));
    for (int32_t i = 0; i < r->n_pairs; i++) json_array_append_new(pairs, pair_json(&r->pairs[i]));
    double m = mt_emu_step_ms(r), p = mt_emu_pred_step_ms(r);
    return json_pack("{s:i, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:o, s:o, s:o*}", "ranks", (int)r->nranks,
                     "collectives_as", r->coll_mode, "topology", r->topology, "time_scale",
                     r->time_scale, "bytes_scale", r->bytes_scale, "poll_us", r->poll_us, "step_ms", m,
                     "predicted_step_ms", p, "error", mt_emu_error(m, p), "per_rank", ranks, "collectives", colls,
                     "pairs", pairs, "check", r->check ? check_json(r) : NULL);
}

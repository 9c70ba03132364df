/* emulate/gather.c — see gather.h. */
#include "emulate/gather.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/describe.h"
#include "report/record.h"
#include "report/timeline.h"
#include "util/outpath.h"
#include "util/fileio.h"

/* All ranks' byte blobs on rank 0: *all (malloc'd), per rank its offset and size in bytes. */
typedef struct blob {
    char *all;
    int *count, *displ;
} blob;

static void blob_free(blob *b) {
    free(b->all);
    free(b->count);
    free(b->displ);
    memset(b, 0, sizeof *b);
}

static mt_status gather_blob(const mt_mpienv *env, const void *data, int64_t nbytes, blob *b, const char *what,
                             mt_error *err) {
    memset(b, 0, sizeof *b);
    if (nbytes > 0x7fffffff) return mt_fail(err, MT_EINVAL, "rank %d: too many %s records to gather", env->rank, what);
    int n = (int)nbytes;
    if (env->rank == 0) {
        b->count = calloc((size_t)env->size, sizeof *b->count);
        b->displ = calloc((size_t)env->size, sizeof *b->displ);
        if (!b->count || !b->displ) return mt_fail(err, MT_ENOMEM, "out of memory gathering %s", what);
    }
    MPI_Request r;
    MT_CHECK(mt_mpienv_check(env, MPI_Igather(&n, 1, MPI_INT, b->count, 1, MPI_INT, 0, MPI_COMM_WORLD, &r), "MPI_Igather",
                             err));
    MT_CHECK(mt_mpienv_wait(env, &r, "the gather of every rank's records", err));
    int64_t total = 0;
    if (env->rank == 0) {
        for (int i = 0; i < env->size; i++) {
            if (total + b->count[i] > 0x7fffffff) return mt_fail(err, MT_EINVAL, "too many %s records to gather", what);
            b->displ[i] = (int)total;
            total += b->count[i];
        }
        if (!(b->all = malloc((size_t)total + 1))) return mt_fail(err, MT_ENOMEM, "out of memory gathering %s", what);
    }
    MT_CHECK(mt_mpienv_check(env, MPI_Igatherv(data, n, MPI_BYTE, b->all, b->count, b->displ, MPI_BYTE, 0,
                                               MPI_COMM_WORLD, &r), "MPI_Igatherv", err));
    return mt_mpienv_wait(env, &r, "the gather of every rank's records", err);
}

/* ---- ranks -------------------------------------------------------------------------------- */

static void fill_ranks(mt_emu_report *rep, const mt_emu_stats *st, const mt_sim_result *res) {
    for (int32_t r = 0; r < rep->nranks; r++) {
        const mt_gpu_stats *g = &res->gpus[r];
        rep->ranks[r] = (mt_emu_rank){r,
                                      st[r].finish_ns / 1e6, st[r].compute_ns / 1e6, st[r].comm_ns / 1e6,
                                      st[r].exposed_ns / 1e6, st[r].bubble_ns / 1e6, g->finish_ps / 1e9,
                                      g->compute_ps / 1e9, g->comm_ps / 1e9,
                                      /* the walker cannot tell peers from the network: both */
                                      (g->exposed_ps + g->peer_wait_ps) / 1e9, g->bubble_ps / 1e9};
    }
}

/* ---- collectives --------------------------------------------------------------------------- */

typedef struct irow {
    int32_t kind, first, seq, rank;
    const mt_emu_inst_rec *rec;
} irow;

static int irow_cmp(const void *a, const void *b) {
    const irow *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The simulated duration of the seq-th collective of `kind` on `rank`, 0 when none. O(spans). */
static double pred_us(const mt_emu_pred *p, int32_t rank, int32_t kind, int32_t seq) {
    int32_t k = 0;
    for (int64_t i = 0; i < p->n_colls; i++)
        if (p->colls[i].rank == rank && p->colls[i].kind == kind && k++ == seq) return p->colls[i].dur_ps / 1e6;
    return 0;
}

static void fill_coll(mt_emu_coll *c, const mt_program *p, const irow *row, int32_t n, const mt_emu_opts *o,
                      const mt_emu_pred *pred) {
    const mt_stage_program *sp = mt_rank_stage(p, row->first);
    const mt_task *k = &sp->tasks[row->rec->pc];
    int64_t start = 0, end = 0;
    for (int32_t i = 0; i < n; i++) {
        if (i == 0 || row[i].rec->start_ns > start) start = row[i].rec->start_ns;
        if (i == 0 || row[i].rec->end_ns > end) end = row[i].rec->end_ns;
    }
    int32_t size = mt_group_size(&p->groups, row->kind);
    memset(c, 0, sizeof *c);
    snprintf(c->op, sizeof c->op, "%s", mt_coll_op_name(k->coll));
    snprintf(c->algo, sizeof c->algo, "%s", o->coll ? "mpi" :
             mt_coll_algo_name(mt_sim_coll_algo(&p->plan, k->coll, size, pred->run->sim.ranks_per_node)));
    mt_group_kind_name(&p->groups, row->kind, c->group, sizeof c->group);
    c->first_rank = row->first;
    c->nranks = size;
    c->step = row->rec->step;
    c->seq = row->seq;
    c->layer = k->layer;
    c->bytes = k->bytes;
    c->meas_us = (double)(end - start) / 1e3;
    c->pred_us = pred_us(pred, row->first, row->kind, row->seq);
    c->busbw_factor = mt_coll_busbw_factor(k->coll, size);
}

static mt_status fill_colls(mt_emu_report *rep, const blob *b, const mt_emu_pred *pred, const mt_emu_opts *o,
                            mt_error *err) {
    const mt_program *p = pred->run->prog;
    int64_t n = 0;
    for (int r = 0; r < rep->nranks; r++) n += b->count[r] / (int)sizeof(mt_emu_inst_rec);
    irow *rows = malloc((size_t)(n ? n : 1) * sizeof *rows);
    rep->colls = calloc((size_t)(n ? n : 1), sizeof *rep->colls);
    if (!rows || !rep->colls) {
        free(rows);
        return mt_fail(err, MT_ENOMEM, "out of memory assembling the report");
    }
    int64_t k = 0;
    for (int r = 0; r < rep->nranks; r++) {
        const mt_emu_inst_rec *ir = (const mt_emu_inst_rec *)(b->all + b->displ[r]);
        for (int i = 0; i < b->count[r] / (int)sizeof *ir; i++)
            rows[k++] = (irow){ir[i].kind, mt_group_member(&p->groups, ir[i].kind, r, 0), ir[i].seq, r, &ir[i]};
    }
    qsort(rows, (size_t)n, sizeof *rows, irow_cmp);
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        while (j < n && rows[j].kind == rows[i].kind && rows[j].first == rows[i].first && rows[j].seq == rows[i].seq) j++;
        fill_coll(&rep->colls[rep->n_colls++], p, &rows[i], (int32_t)(j - i), o, pred);
        i = j;
    }
    free(rows);
    return MT_OK;
}

/* ---- pairs --------------------------------------------------------------------------------- */

typedef struct xrow {
    int32_t kind, first, seq, idx;
    const mt_emu_xfer_rec *rec;
} xrow;

static int xrow_cmp(const void *a, const void *b) {
    const xrow *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    if (x->idx != y->idx) return x->idx < y->idx ? -1 : 1;
    return x->rec->role - y->rec->role;
}

/* One transfer alone on the described topology, in us (0 without one). */
static double alone_us(mt_topo *t, int32_t src, int32_t dst, double bytes) {
    int32_t n = 0;
    const int32_t *gpus = t ? mt_topo_gpus(t, &n) : NULL;
    const int32_t *links;
    int32_t nl;
    if (!gpus || src >= n || dst >= n || mt_topo_route(t, gpus[src], gpus[dst], &links, &nl, NULL) != MT_OK) return 0;
    double bw = 0;
    for (int32_t i = 0; i < nl; i++) {
        double b = mt_topo_link(t, links[i])->bw_Bps;
        if (i == 0 || b < bw) bw = b;
    }
    return (bw > 0 ? bytes / bw * 1e6 : 0) + (double)mt_topo_path_latency(t, links, nl) / 1e6;
}

static mt_status pair_matrix(mt_emu_report *rep, const xrow *rows, int64_t n, mt_topo *topo, mt_emu_pair *m) {
    int32_t N = rep->nranks;
    for (int32_t i = 0; i < N * N; i++) m[i] = (mt_emu_pair){.src = i / N, .dst = i % N};
    for (int64_t i = 0; i + 1 < n; i++) {
        const mt_emu_xfer_rec *s = rows[i].rec, *d = rows[i + 1].rec;
        if (s->role != 0 || d->role != 1 || rows[i + 1].idx != rows[i].idx || rows[i + 1].seq != rows[i].seq ||
            rows[i + 1].first != rows[i].first || rows[i + 1].kind != rows[i].kind)
            continue;
        mt_emu_pair *p = &m[s->src * N + s->dst];
        int64_t from = s->post_ns > d->post_ns ? s->post_ns : d->post_ns;
        p->n++;
        p->bytes += s->bytes;
        p->meas_us += d->done_ns > from ? (double)(d->done_ns - from) / 1e3 : 0;
        p->pred_us += alone_us(topo, s->src, s->dst, s->bytes);
        i++;
    }
    int32_t k = 0;
    for (int32_t i = 0; i < N * N; i++)
        if (m[i].n) k++;
    rep->pairs = calloc((size_t)(k ? k : 1), sizeof *rep->pairs);
    if (!rep->pairs) return MT_ENOMEM;
    for (int32_t i = 0; i < N * N; i++)
        if (m[i].n) rep->pairs[rep->n_pairs++] = m[i];
    return MT_OK;
}

static mt_status fill_pairs(mt_emu_report *rep, const blob *b, const mt_emu_pred *pred, mt_error *err) {
    const mt_program *p = pred->run->prog;
    int64_t n = 0;
    for (int r = 0; r < rep->nranks; r++) n += b->count[r] / (int)sizeof(mt_emu_xfer_rec);
    xrow *rows = malloc((size_t)(n ? n : 1) * sizeof *rows);
    mt_emu_pair *m = malloc((size_t)rep->nranks * (size_t)rep->nranks * sizeof *m);
    mt_status rc = rows && m ? MT_OK : MT_ENOMEM;
    int64_t k = 0;
    for (int r = 0; r < rep->nranks && rc == MT_OK; r++) {
        const mt_emu_xfer_rec *x = (const mt_emu_xfer_rec *)(b->all + b->displ[r]);
        for (int i = 0; i < b->count[r] / (int)sizeof *x; i++)
            rows[k++] = (xrow){x[i].kind, mt_group_member(&p->groups, x[i].kind, r, 0), x[i].seq, x[i].idx, &x[i]};
    }
    if (rc == MT_OK) {
        qsort(rows, (size_t)n, sizeof *rows, xrow_cmp);
        rc = pair_matrix(rep, rows, n, pred->run->topo, m);
    }
    free(rows);
    free(m);
    return rc == MT_OK ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory assembling the report");
}

/* Names each suspect rank's attachment: every link into or out of its GPU node. */
static void name_suspects(mt_emu_report *rep, const mt_topo *t) {
    if (!t || !rep->n_suspects || !(rep->suspect_links = calloc((size_t)rep->n_suspects, sizeof(char *)))) return;
    int32_t n = 0;
    const int32_t *gpus = mt_topo_gpus(t, &n);
    for (int32_t i = 0; i < rep->n_suspects; i++) {
        if (rep->suspects[i] >= n) continue;
        char buf[512] = "", name[128];
        size_t len = 0;
        for (int32_t l = 0; l < mt_topo_nlinks(t); l++) {
            const mt_link *k = mt_topo_link(t, l);
            if (k->src != gpus[rep->suspects[i]] && k->dst != gpus[rep->suspects[i]]) continue;
            int w = snprintf(buf + len, sizeof buf - len, "%s%s", len ? ", " : "", mt_topo_link_name(t, l, name, sizeof name));
            if (w < 0 || (size_t)w >= sizeof buf - len) break;
            len += (size_t)w;
        }
        rep->suspect_links[i] = strdup(buf);
    }
}

/* ---- timeline ------------------------------------------------------------------------------ */

static mt_status write_timeline(const blob *b, const mt_emu_pred *pred, const char *path, mt_error *err) {
    const mt_program *p = pred->run->prog;
    mt_recorder rec;
    mt_recorder_init(&rec);
    for (int r = 0; r < p->plan.gpus; r++) {
        const mt_emu_span_rec *s = (const mt_emu_span_rec *)(b->all + b->displ[r]);
        const mt_stage_program *sp = mt_rank_stage(p, r);
        for (int i = 0; i < b->count[r] / (int)sizeof *s; i++)
            mt_recorder_span(&rec, r, (mt_span_kind)s[i].kind, &sp->tasks[s[i].pc], s[i].start_ns * 1000,
                             s[i].end_ns * 1000);
    }
    mt_status rc = MT_OK;
    mt_out_file f; /* a temporary renamed onto path when complete (util/outpath.h) */
    rc = mt_out_open(&f, path, "--timeline", err);
    if (rc == MT_OK) {
        mt_report_src src = {p, pred->run->res, &rec, NULL, NULL, pred->run->sim.ranks_per_node};
        rc = mt_out_close(&f, mt_timeline_write(&src, NULL, f.f, path, err), err);
    }
    mt_recorder_destroy(&rec);
    return rc;
}

/* ---- all ------------------------------------------------------------------------------------ */

static mt_status assemble(mt_emu_report *rep, const blob bl[4], const mt_emu_pred *pred, const mt_emu_opts *o,
                          mt_error *err) {
    rep->nranks = pred->run->plan.gpus;
    rep->coll_mode = o->coll ? "mpi" : "schedule";
    snprintf(rep->topology, sizeof rep->topology, "%s", pred->run->topology);
    rep->time_scale = o->time_scale;
    rep->bytes_scale = o->bytes_scale;
    rep->poll_us = o->poll_ns / 1e3;
    if (!(rep->ranks = calloc((size_t)rep->nranks, sizeof *rep->ranks)))
        return mt_fail(err, MT_ENOMEM, "out of memory assembling the report");
    fill_ranks(rep, (const mt_emu_stats *)bl[0].all, pred->run->res);
    MT_CHECK(fill_colls(rep, &bl[1], pred, o, err));
    MT_CHECK(fill_pairs(rep, &bl[2], pred, err));
    if (o->threshold >= 0) {
        if (mt_emu_check(rep, o->threshold) != 0) return mt_fail(err, MT_ENOMEM, "out of memory checking the network");
        name_suspects(rep, pred->run->topo);
    }
    return o->timeline ? write_timeline(&bl[3], pred, o->timeline, err) : MT_OK;
}

mt_status mt_emu_gather(const mt_mpienv *env, const mt_walker *w, const mt_emu_pred *pred, const mt_emu_opts *o,
                        mt_emu_report *rep, mt_error *err) {
    memset(rep, 0, sizeof *rep);
    blob bl[4];
    memset(bl, 0, sizeof bl);
    int32_t ni, nx, ns;
    const mt_emu_inst_rec *ir = mt_walker_insts(w, &ni);
    const mt_emu_xfer_rec *xr = mt_walker_xfers(w, &nx);
    const mt_emu_span_rec *sr = mt_walker_spans(w, &ns);
    mt_status rc = gather_blob(env, mt_walker_stats(w), sizeof(mt_emu_stats), &bl[0], "step", err);
    if (rc == MT_OK) rc = gather_blob(env, ir, (int64_t)ni * (int64_t)sizeof *ir, &bl[1], "collective", err);
    if (rc == MT_OK) rc = gather_blob(env, xr, (int64_t)nx * (int64_t)sizeof *xr, &bl[2], "transfer", err);
    if (rc == MT_OK && o->timeline) rc = gather_blob(env, sr, (int64_t)ns * (int64_t)sizeof *sr, &bl[3], "span", err);
    if (rc == MT_OK && env->rank == 0) rc = assemble(rep, bl, pred, o, err);
    if (rc != MT_OK) mt_emu_report_free(rep);
    for (int i = 0; i < 4; i++) blob_free(&bl[i]);
    return rc;
}

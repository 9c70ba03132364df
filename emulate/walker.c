/* emulate/walker.c — see walker.h.
 *
 * State: per group kind its communicator, this rank's slot and the queue of instances issued
 * (head: the first unfinished; only it runs); the schedules run so far (extrapolate/collcache.h);
 * the outstanding pipeline sends; per RECV task of the stage its receive request of the current
 * step.
 */
#include "emulate/walker.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/collcache.h"
#include "extrapolate/moe.h"
#include "sim/simulate.h"
#include "util/vec.h"

typedef struct inst {
    const mt_task *task;
    int32_t pc, step, seq;
    int8_t started, done;
    int64_t start_ns, end_ns;
    mt_collmpi *c;
} inst;

typedef struct kindq {
    MPI_Comm comm;           /* MPI_COMM_NULL: this kind has no group holding this rank */
    int32_t slot, size;
    inst *q;
    int64_t cap;
    int32_t len, head;
} kindq;

typedef struct psend {
    MPI_Request req;
    int32_t pc;
    int64_t post_ns;
} psend;

struct mt_walker {
    const mt_mpienv *env;
    const mt_program *p;
    const mt_stage_program *sp;
    int32_t rank, stage, n_kinds, ranks_per_node, steps, M;
    int native;
    int64_t *comp_ns;
    kindq kq[MT_GROUP_KINDS_MAX];
    mt_collcache scheds;     /* every schedule this rank has run */
    MPI_Comm pp;             /* pipeline transfers (MPI_COMM_NULL without a pipeline) */
    psend *ps;
    int64_t ps_cap;
    int32_t n_ps;
    MPI_Request *recv;       /* per task of the stage: its RECV's request this step */
    mt_collmpi_bufs bufs;
    int32_t pending_async, pending[MT_GROUP_KINDS_MAX];
    int32_t comm_active;
    int64_t comm_since, t0;
    mt_emu_stats st;
    mt_emu_inst_rec *ir;  int64_t ir_cap;  int32_t n_ir;
    mt_emu_xfer_rec *xr;  int64_t xr_cap;  int32_t n_xr;
    mt_emu_span_rec *sr;  int64_t sr_cap;  int32_t n_sr;
};

static mt_status oom(mt_error *err) { return mt_fail(err, MT_ENOMEM, "out of memory recording the emulation"); }

static mt_status add_span(mt_walker *w, int kind, int32_t pc, int64_t a, int64_t b, mt_error *err) {
    if (mt_vec_reserve(&w->sr, &w->sr_cap, (int64_t)w->n_sr + 1)) return oom(err);
    w->sr[w->n_sr++] = (mt_emu_span_rec){kind, pc, a - w->t0, b - w->t0};
    return MT_OK;
}

static void comm_begin(mt_walker *w, int64_t now) {
    if (w->comm_active++ == 0) w->comm_since = now;
}
static void comm_end(mt_walker *w, int64_t now) {
    if (--w->comm_active == 0) w->st.comm_ns += now - w->comm_since;
}

/* ---- set-up ------------------------------------------------------------------------------ */

/* The largest message any task of the stage can need (the buffers' size). */
static double max_bytes(const mt_stage_program *sp) {
    double m = 1;
    for (int32_t i = 0; i < sp->n_tasks; i++)
        if ((sp->tasks[i].kind == MT_TASK_COLL || sp->tasks[i].kind == MT_TASK_SEND) && sp->tasks[i].bytes > m)
            m = sp->tasks[i].bytes;
    return m;
}

static mt_status alloc_bufs(mt_walker *w, mt_error *err) {
    double m = max_bytes(w->sp);
    if (m > (double)INT_MAX)
        return mt_fail(err, MT_EINVAL, "a %.0f-byte message is larger than one MPI message of bytes can be (2 GiB): "
                       "shrink the messages with --bytes-scale", m);
    w->bufs.bytes = (int64_t)m + 1;
    w->bufs.send = calloc((size_t)w->bufs.bytes, 1);
    w->bufs.recv = calloc((size_t)w->bufs.bytes, 1);
    if (!w->bufs.send || !w->bufs.recv)
        return mt_fail(err, MT_ENOMEM, "out of memory for %.0f-byte message buffers: use --bytes-scale", m);
    memset(w->bufs.send, 1, (size_t)w->bufs.bytes); /* touched now: no page faults during the step */
    memset(w->bufs.recv, 1, (size_t)w->bufs.bytes);
    return MT_OK;
}

static mt_status split_groups(mt_walker *w, mt_error *err) {
    const mt_groups *g = &w->p->groups;
    for (int k = 0; k < w->n_kinds; k++) {
        kindq *q = &w->kq[k];
        q->comm = MPI_COMM_NULL;
        if (mt_group_count(g, k) == 0) continue; /* collectives of a one-rank group do nothing */
        int32_t id = mt_group_id(g, k, w->rank);
        int color = id < 0 ? MPI_UNDEFINED : id;
        q->slot = mt_group_slot(g, k, w->rank);
        q->size = mt_group_size(g, k);
        MT_CHECK(mt_mpienv_check(w->env, MPI_Comm_split(MPI_COMM_WORLD, color, q->slot, &q->comm),
                                 "MPI_Comm_split", err));
    }
    if (w->p->plan.pp > 1)
        MT_CHECK(mt_mpienv_check(w->env, MPI_Comm_dup(MPI_COMM_WORLD, &w->pp), "MPI_Comm_dup", err));
    return MT_OK;
}

mt_status mt_walker_new(const mt_mpienv *env, const mt_program *p, int32_t ranks_per_node, int native, int32_t steps,
                        const int64_t *comp_ns, mt_walker **out, mt_error *err) {
    *out = NULL;
    mt_walker *w = calloc(1, sizeof *w);
    if (!w) return oom(err);
    w->env = env;
    w->p = p;
    mt_collcache_init(&w->scheds);
    w->rank = env->rank;
    w->pp = MPI_COMM_NULL;
    w->n_kinds = p->groups.n_kinds;
    w->ranks_per_node = ranks_per_node;
    w->native = native;
    w->steps = steps < 1 ? 1 : steps;
    w->M = p->plan.micro_batches > 0 ? p->plan.micro_batches : 1;
    mt_coords c;
    mt_mesh_coords(&p->groups.mesh, w->rank, &c);
    w->stage = c.c[MT_DIM_PP];
    w->sp = &p->stages[w->stage];
    size_t n = (size_t)w->steps * (size_t)(w->sp->n_tasks ? w->sp->n_tasks : 1);
    w->comp_ns = malloc(n * sizeof *w->comp_ns);
    w->recv = malloc((size_t)(w->sp->n_tasks ? w->sp->n_tasks : 1) * sizeof *w->recv);
    mt_status rc = !w->comp_ns || !w->recv ? oom(err) : MT_OK;
    if (rc == MT_OK) {
        memcpy(w->comp_ns, comp_ns, n * sizeof *w->comp_ns);
        for (int32_t i = 0; i < w->sp->n_tasks; i++) w->recv[i] = MPI_REQUEST_NULL;
        rc = alloc_bufs(w, err);
    }
    if (rc == MT_OK) rc = split_groups(w, err);
    if (rc != MT_OK) {
        mt_walker_free(w);
        return rc;
    }
    *out = w;
    return MT_OK;
}

void mt_walker_free(mt_walker *w) {
    if (!w) return;
    for (int k = 0; k < w->n_kinds; k++) {
        kindq *q = &w->kq[k];
        for (int32_t i = q->head; i < q->len; i++) mt_collmpi_free(q->q[i].c);
        free(q->q);
        if (q->comm != MPI_COMM_NULL) MPI_Comm_free(&q->comm);
    }
    if (w->pp != MPI_COMM_NULL) MPI_Comm_free(&w->pp);
    mt_collcache_destroy(&w->scheds);
    free(w->comp_ns);
    free(w->recv);
    free(w->ps);
    free(w->bufs.send);
    free(w->bufs.recv);
    free(w->ir);
    free(w->xr);
    free(w->sr);
    free(w);
}

/* ---- collectives ------------------------------------------------------------------------- */

/* The per-rank shares of an expert-parallel or table-wise all-to-all, NULL for an even one (as
 * the simulator takes them). */
static const double *a2a_share(const mt_program *p, const mt_task *k) {
    if (!k->moe || k->coll != MT_COLL_ALLTOALL) return NULL;
    if (k->moe_layer < 0) return p->emb_share;
    if (!p->moe || !p->moe->rank_share) return NULL;
    return p->moe->rank_share + (size_t)k->moe_layer * (size_t)p->moe->ep;
}

static mt_status schedule_of(mt_walker *w, kindq *q, const mt_task *k, const mt_coll_schedule **out, mt_error *err) {
    mt_coll_params cp;
    mt_coll_params_init(&cp);
    cp.op = k->coll;
    cp.nranks = q->size;
    cp.bytes = k->bytes;
    cp.chunks = w->p->plan.chunks;
    cp.ranks_per_node = w->ranks_per_node;
    cp.algo = mt_sim_coll_algo(&w->p->plan, k->coll, q->size, w->ranks_per_node);
    if (cp.algo == MT_ALGO_NCCL) cp.algo = MT_ALGO_RING; /* over MPI the network's own speed, not NCCL's */
    cp.share = a2a_share(w->p, k);
    cp.share_by_src = k->moe == 2;
    *out = mt_collcache_get(&w->scheds, &cp, NULL, err);
    return *out ? MT_OK : err->code;
}

static mt_status issue_coll(mt_walker *w, const mt_task *k, int32_t pc, int32_t step, int64_t now, mt_error *err) {
    kindq *q = &w->kq[k->group];
    if (mt_vec_reserve(&q->q, &q->cap, (int64_t)q->len + 1)) return oom(err);
    q->q[q->len] = (inst){.task = k, .pc = pc, .step = step, .seq = q->len, .start_ns = now};
    q->len++;
    if (!k->blocking) {
        w->pending_async++;
        w->pending[k->group]++;
    }
    return MT_OK;
}

/* Instance I of kind `kind` is over on this rank: its records, and the next may start. */
static mt_status finish_inst(mt_walker *w, int kind, inst *I, int64_t now, mt_error *err) {
    I->done = 1;
    I->end_ns = now;
    comm_end(w, now);
    if (!I->task->blocking) {
        w->pending_async--;
        w->pending[kind]--;
    }
    int32_t nx;
    const mt_collmpi_xfer *x = mt_collmpi_xfers(I->c, &nx);
    if (mt_vec_reserve(&w->xr, &w->xr_cap, (int64_t)w->n_xr + nx) ||
        mt_vec_reserve(&w->ir, &w->ir_cap, (int64_t)w->n_ir + 1))
        return oom(err);
    const mt_groups *g = &w->p->groups;
    for (int32_t i = 0; i < nx; i++)
        if (x[i].bytes >= 0)
            w->xr[w->n_xr++] = (mt_emu_xfer_rec){kind, I->seq, (int32_t)x[i].idx,
                                                 mt_group_member(g, kind, w->rank, x[i].src),
                                                 mt_group_member(g, kind, w->rank, x[i].dst), x[i].role, x[i].bytes,
                                                 x[i].post_ns - w->t0, x[i].done_ns - w->t0};
    w->ir[w->n_ir++] = (mt_emu_inst_rec){kind, I->seq, I->step, I->pc, I->start_ns - w->t0, now - w->t0};
    mt_collmpi_free(I->c);
    I->c = NULL;
    return add_span(w, MT_SPAN_COLL, I->pc, I->start_ns, now, err);
}

static mt_status progress_kind(mt_walker *w, int kind, int64_t now, mt_error *err) {
    kindq *q = &w->kq[kind];
    while (q->head < q->len) {
        inst *I = &q->q[q->head];
        if (!I->started) {
            const mt_coll_schedule *s = NULL;
            MT_CHECK(schedule_of(w, q, I->task, &s, err));
            MT_CHECK(mt_collmpi_start(w->env, s, w->native, q->comm, q->slot, &w->bufs, &I->c, err));
            I->started = 1;
            if (now > I->start_ns) I->start_ns = now; /* issued, and the group's previous one done */
            comm_begin(w, I->start_ns);
        }
        int done = 0;
        MT_CHECK(mt_collmpi_progress(I->c, now, &done, err));
        if (!done) return MT_OK;
        MT_CHECK(finish_inst(w, kind, I, now, err));
        q->head++;
    }
    return MT_OK;
}

/* ---- pipeline transfers ------------------------------------------------------------------ */

static int pp_tag(const mt_walker *w, int32_t chunk, int32_t mb, int dir) {
    return (int)((((int64_t)chunk * w->M + mb) * 2 + (dir < 0)) % ((int64_t)w->env->tag_ub + 1));
}

/* The rank at the other end of a pipeline transfer of chunk v in direction dir, and its chunk. */
static int32_t pp_peer(const mt_walker *w, int32_t v, int dir, int32_t *peer_v) {
    mt_coords c;
    mt_mesh_coords(&w->p->groups.mesh, w->rank, &c);
    mt_pp_peer(&w->p->plan, c.c[MT_DIM_PP], v, dir, &c.c[MT_DIM_PP], peer_v);
    return mt_mesh_rank(&w->p->groups.mesh, &c);
}

static mt_status post_recvs(mt_walker *w, mt_error *err) {
    int cnt = w->bufs.bytes > INT_MAX ? INT_MAX : (int)w->bufs.bytes;
    for (int32_t i = 0; i < w->sp->n_tasks; i++) {
        const mt_task *k = &w->sp->tasks[i];
        if (k->kind != MT_TASK_RECV) continue;
        int32_t v;
        int32_t from = pp_peer(w, k->chunk, -k->dir, &v); /* who sends this chunk's data */
        MT_CHECK(mt_mpienv_check(w->env, MPI_Irecv(w->bufs.recv, cnt, MPI_BYTE, from, pp_tag(w, k->chunk, k->mb, k->dir),
                                                   w->pp, &w->recv[i]), "MPI_Irecv (pipeline)", err));
    }
    return MT_OK;
}

static mt_status do_send(mt_walker *w, const mt_task *k, int32_t pc, int64_t now, mt_error *err) {
    int32_t v;
    int32_t to = pp_peer(w, k->chunk, k->dir, &v);
    if (k->bytes > (double)w->bufs.bytes) return mt_fail(err, MT_EINTERNAL, "pipeline send larger than the buffers");
    if (mt_vec_reserve(&w->ps, &w->ps_cap, (int64_t)w->n_ps + 1)) return oom(err);
    psend *s = &w->ps[w->n_ps++];
    s->pc = pc;
    s->post_ns = now;
    comm_begin(w, now);
    return mt_mpienv_check(w->env, MPI_Isend(w->bufs.send, (int)k->bytes, MPI_BYTE, to, pp_tag(w, v, k->mb, k->dir),
                                             w->pp, &s->req), "MPI_Isend (pipeline)", err);
}

static mt_status progress_sends(mt_walker *w, int64_t now, mt_error *err) {
    for (int32_t i = 0; i < w->n_ps;) {
        int flag = 0;
        MT_CHECK(mt_mpienv_check(w->env, MPI_Test(&w->ps[i].req, &flag, MPI_STATUS_IGNORE), "a pipeline send", err));
        if (!flag) {
            i++;
            continue;
        }
        comm_end(w, now);
        MT_CHECK(add_span(w, MT_SPAN_SEND, w->ps[i].pc, w->ps[i].post_ns, now, err));
        w->ps[i] = w->ps[--w->n_ps];
    }
    return MT_OK;
}

static mt_status progress(mt_walker *w, int64_t now, mt_error *err) {
    for (int k = 0; k < w->n_kinds; k++)
        if (w->kq[k].comm != MPI_COMM_NULL) MT_CHECK(progress_kind(w, k, now, err));
    return progress_sends(w, now, err);
}

static int in_flight(const mt_walker *w) {
    if (w->n_ps) return 1;
    for (int k = 0; k < w->n_kinds; k++)
        if (w->kq[k].head < w->kq[k].len) return 1;
    return 0;
}

/* ---- waiting ----------------------------------------------------------------------------- */

enum { W_INST, W_RECV, W_COMM, W_GROUP, W_ALL };

static int satisfied(mt_walker *w, int what, int32_t a, int32_t b, mt_error *err, mt_status *rc) {
    int flag = 0;
    switch (what) {
    case W_INST: return w->kq[a].q[b].done;
    case W_RECV:
        *rc = mt_mpienv_check(w->env, MPI_Test(&w->recv[a], &flag, MPI_STATUS_IGNORE), "a pipeline receive", err);
        return flag;
    case W_COMM: return w->pending_async == 0;
    case W_GROUP: return w->pending[a] <= b;
    default: return !in_flight(w);
    }
}

static void describe(const mt_walker *w, int what, int32_t a, int32_t b, char *buf, size_t len) {
    char kn[16];
    if (what == W_INST || what == W_GROUP) {
        const mt_task *k = what == W_INST ? w->kq[a].q[b].task : NULL;
        int32_t first = mt_group_member(&w->p->groups, a, w->rank, 0);
        snprintf(buf, len, "%s on its %s group (ranks %d..%d)", k ? mt_coll_op_name(k->coll) : "collectives",
                 mt_group_kind_name(&w->p->groups, a, kn, sizeof kn), first,
                 mt_group_member(&w->p->groups, a, w->rank, w->kq[a].size - 1));
    } else if (what == W_RECV) {
        int32_t v;
        const mt_task *k = &w->sp->tasks[a];
        snprintf(buf, len, "pipeline data of micro-batch %d from rank %d", k->mb, pp_peer(w, k->chunk, -k->dir, &v));
    } else {
        snprintf(buf, len, "%s", what == W_COMM ? "its data-parallel collectives" : "its last transfers");
    }
}

/* Polls until the condition holds; *t_ns: the poll that saw it. */
static mt_status wait_for(mt_walker *w, int what, int32_t a, int32_t b, int64_t *t_ns, mt_error *err) {
    int64_t start = mt_now_ns();
    for (;;) {
        int64_t now = mt_now_ns();
        MT_CHECK(progress(w, now, err));
        mt_status rc = MT_OK;
        int ok = satisfied(w, what, a, b, err, &rc);
        MT_CHECK(rc);
        if (ok) {
            *t_ns = now;
            return MT_OK;
        }
        if (now - start > w->env->timeout_ns) {
            char what_s[160];
            describe(w, what, a, b, what_s, sizeof what_s);
            return mt_mpienv_timeout(w->env, what_s, err);
        }
        mt_mpienv_pause(w->env);
    }
}

/* Waits until the deadline, polling what is in flight meanwhile. */
static mt_status compute_until(mt_walker *w, int64_t deadline, mt_error *err) {
    for (;;) {
        int64_t now = mt_now_ns();
        if (now >= deadline) return MT_OK;
        if (!in_flight(w)) {
            mt_sleep_until_ns(deadline);
            continue;
        }
        MT_CHECK(progress(w, now, err));
        int64_t next = w->env->poll_ns > 0 ? mt_now_ns() + w->env->poll_ns : 0;
        if (next) mt_sleep_until_ns(next < deadline ? next : deadline);
    }
}

/* ---- the cursor -------------------------------------------------------------------------- */

/* Blocks the cursor (at *cursor) until the condition; the wait counts as exposed or bubble. */
static mt_status block(mt_walker *w, int what, int32_t a, int32_t b, int32_t pc, int64_t *cursor, mt_error *err) {
    int64_t t;
    MT_CHECK(wait_for(w, what, a, b, &t, err));
    if (t <= *cursor) return MT_OK;
    if (what == W_RECV) w->st.bubble_ns += t - *cursor;
    else w->st.exposed_ns += t - *cursor;
    MT_CHECK(add_span(w, what == W_RECV ? MT_SPAN_BUBBLE : MT_SPAN_WAIT, pc, *cursor, t, err));
    *cursor = t;
    return MT_OK;
}

static mt_status run_task(mt_walker *w, int32_t step, int32_t pc, int64_t *cursor, mt_error *err) {
    const mt_task *k = &w->sp->tasks[pc];
    switch (k->kind) {
    case MT_TASK_COMPUTE: {
        int64_t d = w->comp_ns[(size_t)step * (size_t)w->sp->n_tasks + (size_t)pc];
        if (d <= 0) return MT_OK;
        MT_CHECK(compute_until(w, *cursor + d, err));
        MT_CHECK(add_span(w, MT_SPAN_COMPUTE, pc, *cursor, *cursor + d, err));
        w->st.compute_ns += d;
        *cursor += d; /* the deadline, not the wake-up: no drift */
        return MT_OK;
    }
    case MT_TASK_COLL:
        if (w->kq[k->group].comm == MPI_COMM_NULL) return MT_OK;
        MT_CHECK(issue_coll(w, k, pc, step, *cursor, err));
        if (!k->blocking) return MT_OK;
        return block(w, W_INST, k->group, w->kq[k->group].len - 1, pc, cursor, err);
    case MT_TASK_SEND: return do_send(w, k, pc, *cursor, err);
    case MT_TASK_RECV: return block(w, W_RECV, pc, 0, pc, cursor, err);
    case MT_TASK_WAIT_COMM: return block(w, W_COMM, 0, 0, pc, cursor, err);
    case MT_TASK_WAIT_GROUP:
        if (w->kq[k->group].comm == MPI_COMM_NULL) return MT_OK;
        return block(w, W_GROUP, k->group, k->keep, pc, cursor, err);
    case MT_TASK_HOLD: { /* a measured wait, carried as it was (program.h) */
        int64_t d = k->dur_ps / 1000;
        if (d <= 0) return MT_OK;
        MT_CHECK(compute_until(w, *cursor + d, err));
        *cursor += d;
        return MT_OK;
    }
    default: return MT_OK;
    }
}

mt_status mt_walker_run(mt_walker *w, int64_t t0_ns, mt_error *err) {
    w->t0 = t0_ns;
    int64_t cursor = t0_ns;
    for (int32_t step = 0; step < w->steps; step++) {
        if (w->pp != MPI_COMM_NULL) MT_CHECK(post_recvs(w, err));
        for (int32_t pc = 0; pc < w->sp->n_tasks; pc++) MT_CHECK(run_task(w, step, pc, &cursor, err));
    }
    w->st.finish_ns = cursor - t0_ns;
    int64_t t;
    return wait_for(w, W_ALL, 0, 0, &t, err);
}

const mt_emu_stats *mt_walker_stats(const mt_walker *w) { return &w->st; }
const mt_emu_inst_rec *mt_walker_insts(const mt_walker *w, int32_t *n) {
    *n = w->n_ir;
    return w->ir;
}
const mt_emu_xfer_rec *mt_walker_xfers(const mt_walker *w, int32_t *n) {
    *n = w->n_xr;
    return w->xr;
}
const mt_emu_span_rec *mt_walker_spans(const mt_walker *w, int32_t *n) {
    *n = w->n_sr;
    return w->sr;
}

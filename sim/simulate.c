/* sim/simulate.c — virtual GPUs walking their stage programs on the engine (see simulate.h).
 *
 * State: one vgpu per rank (cursor into its stage program, what it waits for, counters), one
 * group per communicator of every kind in the program's group table that has groups
 * (extrapolate/group.h; members, endpoints, a queue of collective instances),
 * a cache of collective schedules (extrapolate/collcache.h) so 1024 identical bucket
 * all-reduces share one schedule, and arrival flags per (rank, model chunk,
 * micro-batch, direction) for pipeline transfers (a chunk is a stage's part under --vpp, else 0).
 * Re-entrancy: a collective's completion (which may be reported synchronously by
 * mt_collexec_start for empty schedules) is turned into an engine event, so a GPU's advance()
 * never runs inside another GPU's advance().
 * Folding (simulate.h): in a folded run only ranks of replica 0 (d == 0) are scheduled; rank
 * rep + dp_off[d] is the mirror of rep in replica d. Every group keeps the finish times of its
 * instances (fin) and, in a folded run, every rank the time of its latest pipeline arrival per
 * slot (arrive_ps), so a mirror's inputs are compared with its representative's as they come.
 * Network folding on top (simulate.h): a collective of a kind whose groups lie inside one
 * replica (`local`) and every pipeline send run on the network for replica 0 only, as folded
 * sends; a mirror's instance of it is bookkeeping (no sends) that finishes in the event its
 * representative's does: the mirrors' groups of such a kind are shadows (`shadow`, all but
 * --algo nccl) that hold no instances, the representatives' group's instance counting for each
 * (mirror_start / mirror_finish: the counts, bytes and members' comm and traffic the mirror's own
 * instance would add, where it would add them); a mirror's pipeline send is counted when issued
 * and delivered with its representative's, and its arrivals are not kept (mirrors never receive).
 */
#include "sim/simulate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extrapolate/collcache.h"
#include "extrapolate/hostdev.h"
#include "extrapolate/moe.h"
#include "extrapolate/nccl.h"
#include "sim/busy.h"
#include "sim/collexec.h"
#include "util/hugemem.h"
#include "util/u64map.h"
#include "util/vec.h"

const mt_task mt_host_tail_task = {.kind = MT_TASK_MB_END, .mb = -1, .layer = -1};

enum { ST_RUN = 0, ST_WAIT_COLL, ST_WAIT_RECV, ST_WAIT_COMM, ST_WAIT_GROUP, ST_WAIT_HOST, ST_DONE };

typedef struct inst {
    int32_t arrived;
    int8_t started, done, blocking;
    const mt_task *task;     /* the first issuer's task (all members issue the same one) */
    mt_time_ps start_ps;
    mt_time_ps ready_ps;     /* when its last member issued it (monotone along a group's queue:
                              * every member issues in queue order) */
    int32_t last;            /* that member (among simultaneous ones, the lowest rank) */
    mt_collexec *x;
} inst;

typedef struct group {
    int32_t n;
    const int32_t *ranks;    /* members' global ranks, in group-rank order */
    const int32_t *ep;       /* members' network endpoints */
    inst *q;
    int64_t qcap;
    int32_t base, len;       /* instances base .. base+len-1 are in q[0 .. len) */
    int32_t next;            /* next instance to start */
    int busy;                /* instances running (at most the run's coll_lanes) */
    int8_t inter;            /* its members span more than one node (comm_slow's second column) */
    mt_time_ps *fin;         /* folded runs: finish time of each instance so far */
    int64_t fincap;
    int32_t nfin;
} group;

typedef struct sendrec sendrec;

/* One outgoing pipeline connection (to the next stage, or back to the previous one): its sends
 * go out in issue order, one at a time, as on one NCCL stream; the next leaves once the previous
 * one has left (not arrived), so they do not share the link with each other. */
typedef struct sendq {
    sendrec *head, *tail;    /* issued, not started yet */
    int busy;                /* a send of this connection has not left yet */
} sendq;

/* A GPU's state that only pipeline sends, the slowdown model (o.comm_slow) and the host model use:
 * its own when the run has one of them (with the network folded and neither model, a walker's
 * only: cold_setup), else a GPU's c is the runner's one `cold_one`, which stays as made (no
 * pipeline send, op_live 0, no host work: 0-filled), so a plain data-parallel run's per-GPU state
 * is 216 bytes smaller (2^20 GPUs: 226 MB never touched). */
typedef struct vcold {
    sendq out[2];            /* pipeline connections: [0] to the next stage, [1] to the previous */
    /* the compute task running under the slowdown model (o.comm_slow): its event, work left (ps at
     * full speed) from op_t on, the slowdown it runs at now, its end at full speed, and its
     * slowdowns beside collectives inside a node and across nodes */
    int8_t op_live;
    mt_event_id op_ev;
    mt_time_ps op_t, op_end0;
    double op_left, op_s, op_si, op_se;
    /* host model: the host thread's clock, and the task (pc) whose issue it already paid; the
     * device's streams as the host fills them, and their busy time not yet accounted */
    mt_time_ps host, host_wait, host_sync;
    int32_t host_issued;
    int8_t busy_oom;
    mt_hostdev dev;
    mt_busy busy;
} vcold;

typedef struct vgpu {
    int32_t rank, d, s, t;
    struct vcold *c;         /* its cold state (vcold), own or the runner's shared one */
    int32_t pc, step;
    int8_t state, wait_dir;
    int32_t wait_mb, wait_chunk;
    int32_t *issued;         /* per group kind: collectives issued on its group of that kind */
    int32_t *pending;        /* per group kind: its non-blocking collectives not finished */
    int32_t pending_async;   /* over all kinds */
    int32_t wait_kind, wait_keep; /* ST_WAIT_GROUP: until pending[wait_kind] <= wait_keep */
    double traffic[MT_TRAFFIC_CLASSES]; /* bytes it sent, by collective class */
    int32_t live, peak_live;
    mt_time_ps peak_live_ps; /* when live first reached peak_live (a forward's MB_BEGIN) */
    int32_t comm_active;     /* collectives and sends in flight */
    int32_t coll_n, coll_inter; /* collectives in flight, of them on groups spanning nodes */
    mt_time_ps stretch;      /* compute stretched by communication */
    mt_time_ps comm_since;
    mt_time_ps wait_since, finish_ps, comp_start;
    mt_time_ps compute, comm, exposed, peer, bubble;
    /* the wait under way: the latest ready time of the collectives it waited for (a RECV: the
     * send's issue), -1 none yet, and who issued last (a RECV: the sender) */
    mt_time_ps wready;
    int32_t wlast;
    int32_t wf_rank, wf_pc;  /* the rank waited for longest in total (-1 none), its longest single wait's task */
    mt_time_ps wf_ps;
    const mt_task *comp_task;
} vgpu;

typedef struct cached_sched {
    const mt_coll_schedule *s;
    const double *sent;      /* per rank of the schedule: bytes it sends */
} cached_sched;

typedef struct runner runner;

/* An instance of a shadowed kind's representatives' group whose mirrors' copies start later
 * (runner.fin_gid): what each member sends in it, its task, its start. */
typedef struct deferred {
    const double *sent;
    const mt_task *task;
    mt_time_ps start;
} deferred;

typedef struct collref { /* ctx of one running collective */
    runner *r;
    int kind;
    int32_t gid, k;
} collref;

struct sendrec { /* ctx of one pipeline send */
    runner *r;
    int32_t src, dst, mb, chunk;  /* chunk: the receiver's */
    int8_t dir, left;
    const mt_task *task;
    mt_time_ps start;        /* issued (the span starts here, queued or not) */
    sendrec *next;           /* in its connection's queue */
    sendrec *lprev, *lnext;  /* in the runner's list of live sends (freed with it if a run stops) */
};

struct runner {
    const mt_program *p;
    const mt_plan *pl;
    mt_netmodel *net;
    const int32_t *eps;      /* the model's endpoints in rank order (a cluster job: its own) */
    mt_time_ps start;        /* when its GPUs begin (a cluster job's offset; else 0) */
    const int32_t *job_eps;  /* a cluster job: its endpoints, owned (freed by mt_simulate_jobs) */
    mt_engine *e;
    mt_sched sched;
    mt_sim_opts o;
    int32_t N, D, T, P, M, V;
    vgpu *g;
    vcold *cold;             /* n_cold of them, when the run uses them (vcold, cold_setup); else NULL */
    int32_t n_cold;
    vcold cold_one;          /* the GPUs' without their own */
    int32_t n_kinds;         /* the program's group table (extrapolate/group.h) */
    group *groups[MT_GROUP_KINDS_MAX]; /* by kind; NULL for a kind without groups */
    int32_t *members[MT_GROUP_KINDS_MAX], *member_ep[MT_GROUP_KINDS_MAX];
    int32_t *issued;         /* N x n_kinds: every vgpu's issued counts */
    int32_t *pending;        /* N x n_kinds: every vgpu's pending counts */
    int32_t *gids;           /* N x n_kinds: every vgpu's group id per kind (mt_group_id) */
    int32_t *arrived;        /* deliveries so far per ((rank * V + chunk) * M + mb) * 2 + (dir < 0), all steps */
    int32_t steps;
    mt_time_ps *step_end;    /* per step: latest GPU finish */
    int64_t *dev_words;      /* host model: every GPU's streams and event slots */
    mt_collcache scheds;     /* every schedule the run has used */
    double **sent;           /* beside scheds' entry i: per rank of it, the bytes it sends */
    int64_t n_sent, cap_sent;
    mt_sim_result *res;
    double *layer_comm;
    int64_t total_tasks;     /* for on_progress: every GPU's program length */
    uint32_t ticks;          /* compute tasks finished since the last progress report */
    char msg[1024];
    int failed;
    sendrec *live;           /* pipeline sends issued and not delivered (queued or in the network) */
    int fold, fold_broken;   /* a folded run; its replicas diverged (rerun unfolded) */
    int netfold, netfold_broken; /* the network folded too; its check failed (rerun, network unfolded) */
    int8_t local[MT_GROUP_KINDS_MAX]; /* netfold: per kind, its groups lie inside one replica */
    /* netfold: per kind, its mirrors' groups are shadows (local and not --algo nccl, whose schedule
     * may differ by group): they hold no instances; each instance of a representatives' group is
     * also every mirror group's, whose bookkeeping (counts, bytes, the members' traffic and comm)
     * is applied where the unshadowed run did it (mirror_start, mirror_finish) */
    int8_t shadow[MT_GROUP_KINDS_MAX];
    /* ev_coll_finish of a shadowed kind's group: its kind and id (-1: none), and the instances it
     * started meanwhile whose mirrors' copies start after the mirrors' own finish (defer_start) */
    int32_t fin_kind, fin_gid;
    struct deferred *dfr;
    int64_t n_dfr, cap_dfr;
    mt_netfold nf;
    int32_t *nf_ep;          /* nf.ep: D x (N / D) endpoints */
    char netfold_why[200];   /* why the network did not fold (or stopped folding) */
    int32_t *dp_off;         /* folded: rank offset of replica d from replica 0, D entries */
    mt_time_ps *arrive_ps;   /* folded: per arrival slot, the time of its latest delivery */
    char fold_msg[200];
    /* waited for: per (waiter rank * N + rank waited for), the time credited in total, the longest
     * single wait and its task index */
    mt_u64map wf_total, wf_max, wf_pc;
};

static void fail(runner *r, mt_status code, const char *fmt_msg) {
    if (r->failed) return;
    r->failed = 1;
    snprintf(r->msg, sizeof r->msg, "%s", fmt_msg);
    mt_sched_fail(r->sched, code, r->msg);
}

/* The id of g's group of `kind` (-1: none), from the table setup_runner fills. O(1). */
static int32_t gid_of(const runner *r, const vgpu *g, int kind) {
    return r->gids[(size_t)g->rank * (size_t)r->n_kinds + (size_t)kind];
}

/* The rank and model chunk a pipeline send of chunk v goes to (mt_pp_peer). */
static int32_t peer_rank(const runner *r, const vgpu *g, int dir, int32_t v, int32_t *peer_v) {
    mt_coords c;
    mt_mesh_coords(&r->p->groups.mesh, g->rank, &c);
    mt_pp_peer(r->pl, c.c[MT_DIM_PP], v, dir, &c.c[MT_DIM_PP], peer_v);
    return mt_mesh_rank(&r->p->groups.mesh, &c);
}

static void advance(runner *r, vgpu *g);

/* comm_ps is the union of the intervals in which the GPU had communication in flight. */
static void comm_begin(vgpu *g, mt_time_ps now) {
    if (g->comm_active++ == 0) g->comm_since = now;
}
static void comm_end(vgpu *g, mt_time_ps now) {
    if (--g->comm_active == 0) g->comm += now - g->comm_since;
}

/* The slowdown g's running compute task has now: none without collectives in flight, its
 * across-nodes one when all of them span nodes, else its inside-a-node one. */
static double op_rate(const vgpu *g) {
    return g->coll_n == 0 ? 0 : g->coll_inter == g->coll_n ? g->c->op_se : g->c->op_si;
}

/* The rate model of compute slowed by communication: a compute task progresses at 1 / (1 + s)
 * while collectives are in flight on its GPU, s its slowdown then (op_rate). At every change of
 * what is in flight, the work done since op_t at the old rate is taken off and the task's end
 * moves to op_t + left x (1 + s). Never before op_end0: the work done by any time t is at most
 * t - its start. O(log events). */
static void op_restretch(runner *r, vgpu *g, mt_time_ps now) {
    if (!g->c->op_live) return;
    double s_old = g->c->op_s;
    if (now > g->c->op_t) { /* a task placed later (the host model's stream) has not started yet */
        g->c->op_left -= (double)(now - g->c->op_t) / (1 + s_old);
        if (g->c->op_left < 0) g->c->op_left = 0;
        g->c->op_t = now;
    }
    g->c->op_s = op_rate(g);
    if (g->c->op_s == s_old) return;
    mt_time_ps end = g->c->op_t + (mt_time_ps)ceil(g->c->op_left * (1 + g->c->op_s));
    if (end < g->c->op_end0) end = g->c->op_end0;
    if (!mt_engine_move(r->e, g->c->op_ev, end)) fail(r, MT_EINTERNAL, "a stretched compute task's event is gone");
}

/* A collective of a group spanning nodes (inter) or not begins (+1) or ends (-1) on g: only the
 * slowdown model (o.comm_slow) reads coll_n / coll_inter, so without it nothing is kept. */
static void coll_inflight(runner *r, vgpu *g, int delta, int inter, mt_time_ps now) {
    if (!r->o.comm_slow) return;
    g->coll_n += delta;
    if (inter) g->coll_inter += delta;
    op_restretch(r, g, now);
}

/* g's stretched compute task ended at now: the time past its end at full speed is its stretch;
 * under the host model that is stream 0's work too (busy, and its later work starts after it). */
static void op_finish(runner *r, vgpu *g, mt_time_ps now) {
    g->c->op_live = 0;
    if (now <= g->c->op_end0) return;
    mt_time_ps x = now - g->c->op_end0;
    g->stretch += x;
    if (!r->o.host) return;
    if (!mt_busy_add(&g->c->busy, g->c->op_end0, now)) g->c->busy_oom = 1;
    (void)mt_busy_take(&g->c->busy, now); /* all of it the stretch: accounted above */
    if (g->c->dev.done_ps[0] < now) g->c->dev.done_ps[0] = now;
}

static void ev_advance(void *ctx, uint64_t arg) {
    runner *r = ctx;
    vgpu *g = &r->g[arg];
    if (g->c->op_live) op_finish(r, g, mt_sched_now(r->sched));
    if (g->comp_task) {
        if (r->o.on_span)
            r->o.on_span(r->o.span_ctx, g->rank, MT_SPAN_COMPUTE, g->comp_task, g->comp_start,
                         mt_sched_now(r->sched));
        g->comp_task = NULL;
    }
    advance(r, g);
    /* the sum below is O(N): taken every max(256, N) tasks, so it stays O(1) per task */
    if (r->o.on_progress && ++r->ticks >= (uint32_t)(r->N > 256 ? r->N : 256)) {
        r->ticks = 0;
        int64_t done = 0;
        for (int32_t i = 0; i < r->N; i++) /* earlier steps count too (--steps) */
            if (!r->fold || r->g[i].d == 0) /* folded: mirrors are where their representatives are */
                done += (int64_t)r->g[i].step * r->p->stages[r->g[i].s].n_tasks + r->g[i].pc;
        r->o.on_progress(r->o.progress_ctx, r->fold ? done * r->D : done, r->total_tasks);
    }
}

/* Host model: the device waits until time `until` for the host to issue task pc. */
static void ev_host_ready(void *ctx, uint64_t arg) {
    runner *r = ctx;
    vgpu *g = &r->g[arg];
    mt_time_ps now = mt_sched_now(r->sched);
    mt_time_ps busy = mt_busy_take(&g->c->busy, now); /* other streams ran meanwhile */
    g->compute += busy;
    g->c->host_wait += now - g->wait_since - busy;
    g->c->dev.floor_ps = now;
    if (r->o.on_span)
        r->o.on_span(r->o.span_ctx, g->rank, MT_SPAN_HOST, &r->p->stages[g->s].tasks[g->pc], g->wait_since, now);
    g->state = ST_RUN;
    advance(r, g);
}

/* Host model: pays the host's cost of issuing task pc (a collective or a send) once; returns 1
 * when the device must wait for the host first (an event resumes it). */
static int wait_for_host_issue(runner *r, vgpu *g, mt_time_ps now) {
    if (!r->o.host || g->c->host_issued == g->pc) return 0;
    g->c->host_issued = g->pc;
    g->c->host += r->o.host->coll_host_ps; /* NCCL calls are asynchronous: a host ahead goes on */
    if (g->c->host <= now) return 0;
    g->state = ST_WAIT_HOST;
    g->wait_since = now;
    if (!mt_engine_at(r->e, g->c->host, ev_host_ready, r, (uint64_t)g->rank)) fail(r, MT_ENOMEM, "out of memory");
    return 1;
}

/* GPU g waited `part` for rank `who` at task pc: credited to who (simulate.h: the GPU waited
 * for). O(1) expected. */
static void credit_wait(runner *r, vgpu *g, int32_t who, mt_time_ps part, int32_t pc) {
    if (part <= 0 || who < 0 || r->failed) return;
    uint64_t key = (uint64_t)g->rank * (uint64_t)r->N + (uint64_t)who;
    int64_t tot = 0, max = 0, at = pc;
    mt_u64map_get(&r->wf_total, key, &tot);
    mt_u64map_get(&r->wf_max, key, &max);
    tot += part;
    mt_error err = {0};
    if (mt_u64map_put(&r->wf_total, key, tot, &err) != MT_OK ||
        (part > max && (mt_u64map_put(&r->wf_max, key, part, &err) != MT_OK ||
                        mt_u64map_put(&r->wf_pc, key, pc, &err) != MT_OK))) {
        fail(r, MT_ENOMEM, "out of memory recording whom GPUs wait for");
        return;
    }
    if (tot > g->wf_ps || (tot == g->wf_ps && who < g->wf_rank)) {
        g->wf_rank = who;
        g->wf_ps = tot;
    }
    if (who == g->wf_rank && mt_u64map_get(&r->wf_pc, key, &at)) g->wf_pc = (int32_t)at;
}

/* The compute stream's wait since wait_since ends now: split (simulate.h) at wready into peer
 * wait (a collective) or bubble (a RECV) before it and exposed communication after it; the
 * busy time of the device's other streams in either part is compute. */
static void resume(runner *r, vgpu *g) {
    mt_time_ps now = mt_sched_now(r->sched);
    int recv = g->state == ST_WAIT_RECV;
    mt_time_ps split = g->wready < g->wait_since ? g->wait_since : g->wready > now ? now : g->wready;
    mt_time_ps b1 = mt_busy_take(&g->c->busy, split); /* other streams ran meanwhile */
    mt_time_ps b2 = mt_busy_take(&g->c->busy, now);
    mt_time_ps early = split - g->wait_since - b1, late = now - split - b2;
    int32_t pc = g->state == ST_WAIT_COLL ? g->pc - 1 : g->pc; /* a blocking collective has moved the cursor */
    g->compute += b1 + b2;
    if (recv) g->bubble += early;
    else g->peer += early;
    g->exposed += late;
    credit_wait(r, g, g->wlast, early, pc);
    g->wready = -1;
    g->wlast = -1;
    g->c->dev.floor_ps = now; /* nothing the host launches from now on runs before */
    if (r->o.on_span) {
        const mt_task *k = &r->p->stages[g->s].tasks[pc];
        if (split > g->wait_since)
            r->o.on_span(r->o.span_ctx, g->rank, recv ? MT_SPAN_BUBBLE : MT_SPAN_PEER, k, g->wait_since, split);
        if (now > split) r->o.on_span(r->o.span_ctx, g->rank, MT_SPAN_WAIT, k, split, now);
    }
    if (g->state != ST_WAIT_COLL) g->pc++; /* RECV / WAIT_COMM stayed on their task */
    g->state = ST_RUN;
    advance(r, g);
}

/* ---- folding: mirrors act with their representatives and are checked against them ------- */

/* The replicas diverged: stop the run (mt_simulate starts it again unfolded). */
static void fold_break(runner *r, const char *what, int32_t rank, mt_time_ps now, int32_t other, mt_time_ps then) {
    if (r->fold_broken) return;
    r->fold_broken = 1;
    snprintf(r->fold_msg, sizeof r->fold_msg, "%s of GPU %d ended at %.6f ms, GPU %d's at %.6f ms", what, (int)rank,
             (double)now / 1e9, (int)other, (double)then / 1e9);
    fail(r, MT_EINTERNAL, "folded replicas diverged");
}

/* Instance k of group B, if it has finished, must have finished at t. */
static void fold_same(runner *r, const group *B, int32_t k, mt_time_ps t, int32_t rank) {
    if (B->nfin > k && B->fin[k] != t) fold_break(r, "a collective", rank, t, B->ranks[0], B->fin[k]);
}

/* Instance nfin of group gid of `kind` finished now: the same instance of its partners (the
 * representatives' group of a mirrors' group, or the mirrors' groups of a representatives' one)
 * must finish at the same time. O(D). */
static void fold_check_coll(runner *r, int kind, int32_t gid, mt_time_ps now) {
    group *A = &r->groups[kind][gid];
    if (mt_vec_reserve(&A->fin, &A->fincap, (int64_t)A->nfin + 1)) {
        fail(r, MT_ENOMEM, "out of memory checking a folded run");
        return;
    }
    int32_t k = A->nfin, first = A->ranks[0];
    A->fin[A->nfin++] = now;
    int32_t rep = first - r->dp_off[r->g[first].d], rg = gid_of(r, &r->g[rep], kind);
    if (rg != gid) {
        fold_same(r, &r->groups[kind][rg], k, now, first);
        return;
    }
    for (int32_t d = 1; d < r->D && !r->fold_broken; d++) {
        int32_t mg = gid_of(r, &r->g[rep + r->dp_off[d]], kind);
        if (mg != gid) fold_same(r, &r->groups[kind][mg], k, now, first);
    }
}

static int32_t *arrival(runner *r, int32_t rank, int32_t chunk, int32_t mb, int dir);

/* Pipeline data for (chunk, mb, dir) reached `rank` for the got-th time, now: its partners
 * (representative, or mirrors) must get their got-th at the same time. O(D) for a representative. */
static void fold_check_arrival(runner *r, int32_t rank, int32_t chunk, int32_t mb, int dir, int32_t got,
                               mt_time_ps now) {
    r->arrive_ps[arrival(r, rank, chunk, mb, dir) - r->arrived] = now;
    int32_t d = r->g[rank].d, rep = rank - r->dp_off[d];
    for (int32_t e = d ? 0 : 1; e < (d ? 1 : r->D) && !r->fold_broken; e++) {
        int32_t other = rep + r->dp_off[e], *pc = arrival(r, other, chunk, mb, dir);
        mt_time_ps at = r->arrive_ps[pc - r->arrived];
        if (*pc > got || (*pc == got && at != now)) fold_break(r, "pipeline data", rank, now, other, at);
    }
}

/* ---- collectives ------------------------------------------------------------------------ */

mt_coll_algo mt_sim_coll_algo(const mt_plan *pl, mt_coll_op op, int32_t n, int32_t ranks_per_node) {
    mt_coll_algo a = pl->algo == MT_ALGO_AUTO ? MT_ALGO_RING : pl->algo; /* unresolved (run/simrun.h resolves) */
    if (ranks_per_node <= 0) ranks_per_node = 8;
    if (a == MT_ALGO_RELAY && op != MT_COLL_ALLTOALL) a = MT_ALGO_RING; /* relay is an all-to-all */
    if (a == MT_ALGO_NCCL && (op == MT_COLL_ALLTOALL || op == MT_COLL_SENDRECV))
        a = MT_ALGO_RING; /* point-to-point in NCCL: the pairwise exchange */
    if (op == MT_COLL_ALLTOALL && pl->a2a_algo > 0) {
        a = (mt_coll_algo)(pl->a2a_algo - 1);
        return a == MT_ALGO_HIER && (n % ranks_per_node || n <= ranks_per_node) ? MT_ALGO_DIRECT : a;
    }
    if (a == MT_ALGO_HIER && (op != MT_COLL_ALLREDUCE || n % ranks_per_node || n <= ranks_per_node))
        a = MT_ALGO_RING; /* hier is an all-reduce over whole nodes; smaller groups use rings */
    if (a == MT_ALGO_TREE && op == MT_COLL_ALLGATHER) a = MT_ALGO_RING;
    if (a == MT_ALGO_RING && pl->ringflow_above >= 0 && n > pl->ringflow_above &&
        (op == MT_COLL_ALLREDUCE || op == MT_COLL_REDUCESCATTER || op == MT_COLL_ALLGATHER))
        a = MT_ALGO_RINGFLOW;
    return a;
}

/* The per-rank shares of an expert-parallel all-to-all (pass_ep.c), NULL for an even one. */
static const double *a2a_share(const runner *r, const mt_task *k) {
    const mt_moe *m = r->p->moe;
    if (!k->moe || k->coll != MT_COLL_ALLTOALL) return NULL;
    if (k->moe_layer < 0) return r->p->emb_share; /* table-wise embeddings (pass_emb.c) */
    if (!m || !m->rank_share) return NULL;
    return m->rank_share + (size_t)k->moe_layer * (size_t)m->ep;
}

/* --algo nccl: NCCL's choice for op over bytes on n ranks spanning `nodes` nodes, as the schedule
 * that stands for it (ring or ringflow, tree or treeflow, direct for NVLS) with NCCL's protocol
 * costs (extrapolate/nccl.h, collective.h). */
static mt_status nccl_params(const runner *r, mt_coll_params *cp, int32_t nodes, mt_error *err) {
    mt_nccl_fabric f = *r->o.nccl;
    f.nranks = cp->nranks;
    f.nnodes = nodes;
    mt_nccl_cost c;
    int force = cp->op == MT_COLL_ALLREDUCE ? r->pl->nccl_force - 1 : -1; /* --nccl-algo: all-reduces only */
    MT_CHECK(mt_nccl_tune(&f, cp->op, cp->bytes, force, &c, err));
    int32_t flow_above = r->pl->ringflow_above >= 0 ? r->pl->ringflow_above : 64;
    int bulk = cp->op == MT_COLL_ALLREDUCE || cp->op == MT_COLL_REDUCESCATTER || cp->op == MT_COLL_ALLGATHER;
    if (c.algo == MT_NCCL_TREE) cp->algo = cp->nranks > flow_above ? MT_ALGO_TREEFLOW : MT_ALGO_TREE;
    else if (c.algo == MT_NCCL_NVLS) cp->algo = MT_ALGO_DIRECT;
    else cp->algo = r->pl->ringflow_above >= 0 && cp->nranks > r->pl->ringflow_above && bulk ? MT_ALGO_RINGFLOW : MT_ALGO_RING;
    cp->wire_factor = mt_nccl_peak_Bps(&f) / c.busbw_Bps;
    cp->extra_lat_ns = 1e3 * fmax(0, c.lat_us - mt_nccl_schedule_lat_us(&f, cp->op, c.algo));
    return MT_OK;
}

/* The schedule of collective k on n ranks (those of G) and what each rank sends in it; {NULL} on
 * failure. */
static cached_sched get_schedule(runner *r, const mt_task *k, const group *G, int32_t n, mt_error *err) {
    mt_coll_op op = k->coll;
    double bytes = k->bytes;
    mt_coll_params cp;
    mt_coll_params_init(&cp);
    cp.share = a2a_share(r, k);
    cp.share_by_src = k->moe == 2;
    cp.op = op;
    cp.nranks = n;
    cp.bytes = bytes;
    cp.chunks = r->pl->chunks;
    cp.ranks_per_node = r->o.ranks_per_node;
    cp.walk = 1; /* ringflow's latency hops as one walk send (collective.h) */
    cp.algo = mt_sim_coll_algo(r->pl, op, n, cp.ranks_per_node);
    if (cp.algo == MT_ALGO_NCCL) {
        if (!r->o.nccl) {
            mt_fail(err, MT_EINVAL, "--algo nccl needs the fabric NCCL's tuner reads (a topology preset)");
            return (cached_sched){0};
        }
        int32_t gpn = r->o.nccl->gpus_per_node > 0 ? r->o.nccl->gpus_per_node : n, nodes = 1;
        for (int32_t m = 1; m < n; m++) nodes += G->ranks[m] / gpn != G->ranks[m - 1] / gpn;
        if (nccl_params(r, &cp, nodes, err) != MT_OK) return (cached_sched){0};
    }
    int64_t i;
    const mt_coll_schedule *s = mt_collcache_get(&r->scheds, &cp, &i, err);
    if (!s) return (cached_sched){0};
    if (i == r->n_sent) { /* a new schedule: what each rank sends, once (payload: NCCL's wire factor off) */
        double *sent = calloc((size_t)n, sizeof *sent), wire = s->p.wire_factor > 0 ? s->p.wire_factor : 1;
        if (!sent || mt_vec_reserve(&r->sent, &r->cap_sent, r->n_sent + 1)) {
            free(sent);
            mt_fail(err, MT_ENOMEM, "out of memory caching collective schedules");
            return (cached_sched){0};
        }
        for (uint32_t j = 0; j < s->nsends; j++)
            if (s->sends[j].src != s->sends[j].dst && s->sends[j].src >= 0 && s->sends[j].src < n)
                sent[s->sends[j].src] += s->sends[j].bytes / wire;
        r->sent[r->n_sent++] = sent;
    }
    return (cached_sched){s, r->sent[i]};
}

/* The traffic class of a collective (mt_traffic). */
static int traffic_class(mt_coll_op op) {
    switch (op) {
    case MT_COLL_ALLREDUCE: return MT_TRAFFIC_ALLREDUCE;
    case MT_COLL_ALLGATHER: return MT_TRAFFIC_ALLGATHER;
    case MT_COLL_REDUCESCATTER: return MT_TRAFFIC_REDUCESCATTER;
    case MT_COLL_ALLTOALL: return MT_TRAFFIC_ALLTOALL;
    case MT_COLL_SENDRECV: return MT_TRAFFIC_P2P;
    default: return MT_TRAFFIC_OTHER;
    }
}

static void coll_done(void *ctx);

/* Netfold, shadowed kind (runner.shadow): replica d's copy of representatives' group G's
 * instance x starts, as its own start in try_start would have counted it (its members' comm and
 * traffic; the run's counts and bytes). */
static void mirror_start(runner *r, int kind, const group *G, const deferred *x, int32_t d) {
    r->res->collectives++;
    r->res->coll_bytes += x->task->bytes;
    int cls = traffic_class(x->task->coll);
    for (int32_t m = 0; m < G->n; m++) {
        vgpu *g = &r->g[G->ranks[m] + r->dp_off[d]];
        comm_begin(g, x->start); /* coll_inflight: a mirror runs no compute that it would slow */
        g->traffic[cls] += x->sent[m];
        r->res->kind_traffic_bytes[kind] += x->sent[m];
    }
}

/* Netfold, shadowed kind: replica d's copy of G's instance of `task`, started dur ago, finishes
 * now, as finish_inst would have counted it (a mirror never waits, nor issued it: no resume and no
 * pending count). */
static void mirror_finish(runner *r, const group *G, const mt_task *task, mt_time_ps dur, mt_time_ps now, int32_t d) {
    if (task->layer >= 0 && task->layer < r->p->n_layers) r->layer_comm[task->layer] += (double)dur * G->n;
    for (int32_t m = 0; m < G->n; m++) comm_end(&r->g[G->ranks[m] + r->dp_off[d]], now);
}

/* Netfold, shadowed kind: representatives' group gid's instance x has started; the mirrors'
 * copies start with it, where an unshadowed run starts them: at once, unless this group is
 * finishing an instance (ev_coll_finish) and the mirrors' groups, whose copy of that instance
 * finishes after it, have no lane free until then (their starts then follow their finishes). */
static void shadow_start(runner *r, int kind, int32_t gid, const deferred *x) {
    const group *G = &r->groups[kind][gid];
    int lanes = r->o.coll_lanes > 1 ? r->o.coll_lanes : 1;
    if (r->fin_kind == kind && r->fin_gid == gid && G->busy >= lanes) {
        if (mt_vec_reserve(&r->dfr, &r->cap_dfr, r->n_dfr + 1)) {
            fail(r, MT_ENOMEM, "out of memory starting a collective");
            return;
        }
        r->dfr[r->n_dfr++] = *x;
        return;
    }
    for (int32_t d = 1; d < r->D; d++) mirror_start(r, kind, G, x, d);
}

static void try_start(runner *r, int kind, int32_t gid) {
    group *G = &r->groups[kind][gid];
    int lanes = r->o.coll_lanes > 1 ? r->o.coll_lanes : 1;
    while (G->busy < lanes && G->next < G->base + G->len) {
        inst *I = &G->q[G->next - G->base];
        if (I->arrived < G->n) return;
        mt_error err = {0};
        cached_sched cs = get_schedule(r, I->task, G, G->n, &err);
        const mt_coll_schedule *s = cs.s;
        collref *c = s ? malloc(sizeof *c) : NULL;
        if (!c) {
            if (s) mt_fail(&err, MT_ENOMEM, "out of memory starting a collective");
            fail(r, err.code, err.msg);
            return;
        }
        int32_t k = G->next;
        *c = (collref){r, kind, gid, k};
        G->busy++;
        I->started = 1;
        I->start_ps = mt_sched_now(r->sched);
        G->next++;
        r->res->collectives++;
        r->res->coll_bytes += I->task->bytes;
        int cls = traffic_class(I->task->coll);
        for (int32_t m = 0; m < G->n; m++) {
            comm_begin(&r->g[G->ranks[m]], I->start_ps);
            coll_inflight(r, &r->g[G->ranks[m]], +1, G->inter, I->start_ps);
            r->g[G->ranks[m]].traffic[cls] += cs.sent[m];
            r->res->kind_traffic_bytes[kind] += cs.sent[m];
        }
        if (r->shadow[kind]) shadow_start(r, kind, gid, &(deferred){cs.sent, I->task, I->start_ps});
        mt_collexec *x = NULL;
        if (r->netfold && r->local[kind] && r->g[G->ranks[0]].d != 0) {
            free(c); /* a mirror's: its representative's instance carries it (ev_coll_finish) */
            continue;
        }
        mt_status rc = r->netfold && r->local[kind]
                           ? mt_collexec_start_folded(s, r->net, r->sched, G->ep, coll_done, c, &x, &err)
                           : mt_collexec_start(s, r->net, r->sched, G->ep, coll_done, c, &x, &err);
        if (rc != MT_OK) {
            free(c); /* a failed start never calls coll_done (e.g. a send with no route) */
            fail(r, err.code, err.msg);
            return;
        }
        /* c may already be freed (an empty schedule completes inside start); G->q is stable
         * here since only issue_coll grows it */
        G->q[k - G->base].x = x;
    }
}

static void ev_coll_finish(void *ctx, uint64_t arg);

static void coll_done(void *ctx) {
    collref *c = ctx;
    runner *r = c->r;
    uint64_t arg = ((uint64_t)c->kind << 61) | ((uint64_t)(uint32_t)c->gid << 31) | (uint64_t)(uint32_t)c->k;
    free(c);
    if (!mt_sched_at(r->sched, mt_sched_now(r->sched), ev_coll_finish, r, arg))
        fail(r, MT_ENOMEM, "out of memory scheduling a collective completion");
}

/* Instance k of group gid of `kind` finished now. */
static void finish_inst(runner *r, int kind, int32_t gid, int32_t k) {
    group *G = &r->groups[kind][gid];
    inst *I = &G->q[k - G->base];
    mt_time_ps now = mt_sched_now(r->sched);
    mt_time_ps dur = now - I->start_ps;
    const mt_task *task = I->task;
    if (r->fold && !r->shadow[kind]) fold_check_coll(r, kind, gid, now); /* shadows finish with it */
    I->done = 1;
    G->busy--;
    mt_collexec_free(I->x);
    I->x = NULL;
    if (task->layer >= 0 && task->layer < r->p->n_layers) r->layer_comm[task->layer] += (double)dur * G->n;
    int blocking = I->blocking;
    mt_time_ps ready = I->ready_ps;
    int32_t last = I->last;
    /* drop finished instances from the front */
    int32_t drop = 0;
    while (drop < G->len && G->q[drop].done) drop++;
    if (drop > 0) {
        memmove(G->q, G->q + drop, (size_t)(G->len - drop) * sizeof *G->q);
        G->len -= drop;
        G->base += drop;
    }
    for (int32_t m = 0; m < G->n; m++) {
        vgpu *g = &r->g[G->ranks[m]];
        comm_end(g, now);
        coll_inflight(r, g, -1, G->inter, now);
        if (r->o.on_span) r->o.on_span(r->o.span_ctx, g->rank, MT_SPAN_COLL, task, now - dur, now);
        /* a wait this instance held up: the latest ready time so far of what it waits for */
        if ((blocking ? g->state == ST_WAIT_COLL
                      : g->state == ST_WAIT_COMM || (g->state == ST_WAIT_GROUP && g->wait_kind == kind)) &&
            ready >= g->wready) {
            if (ready > g->wready || last < g->wlast) g->wlast = last;
            g->wready = ready;
        }
        if (blocking) {
            if (g->state == ST_WAIT_COLL) resume(r, g);
        } else {
            g->pending_async--;
            g->pending[kind]--;
            if (g->state == ST_WAIT_COMM && g->pending_async == 0) resume(r, g);
            else if (g->state == ST_WAIT_GROUP && g->wait_kind == kind && g->pending[kind] <= g->wait_keep) resume(r, g);
        }
        if (r->failed) return;
    }
    try_start(r, kind, gid);
}

static void ev_coll_finish(void *ctx, uint64_t arg) {
    runner *r = ctx;
    int kind = (int)(arg >> 61);
    int32_t gid = (int32_t)((arg >> 31) & 0x3fffffff);
    int32_t k = (int32_t)(arg & 0x7fffffff);
    const group *G = &r->groups[kind][gid];
    int32_t rep = G->ranks[0];
    mt_time_ps start = G->q[k - G->base].start_ps;
    if (r->shadow[kind]) { /* the mirrors' copies finish with it, then start what it started */
        const mt_task *task = G->q[k - G->base].task;
        r->fin_kind = kind;
        r->fin_gid = gid;
        r->n_dfr = 0;
        finish_inst(r, kind, gid, k);
        r->fin_gid = -1;
        mt_time_ps now = mt_sched_now(r->sched);
        for (int32_t d = 1; d < r->D && !r->failed; d++) {
            mirror_finish(r, G, task, now - start, now, d);
            for (int64_t j = 0; j < r->n_dfr; j++) mirror_start(r, kind, G, &r->dfr[j], d);
        }
        return;
    }
    finish_inst(r, kind, gid, k);
    if (!r->netfold || !r->local[kind]) return;
    for (int32_t d = 1; d < r->D && !r->failed; d++) { /* the mirrors' instances end with it */
        int32_t mrank = rep + r->dp_off[d], mg = gid_of(r, &r->g[mrank], kind);
        const group *M = &r->groups[kind][mg];
        const inst *J = k >= M->base && k < M->base + M->len ? &M->q[k - M->base] : NULL;
        if (!J || !J->started || J->done || J->start_ps != start) {
            fold_break(r, "a collective", mrank, J && J->started ? J->start_ps : -1, rep, start);
            return;
        }
        finish_inst(r, kind, mg, k);
    }
}

static int issue_coll(runner *r, vgpu *g, const mt_task *k) {
    int kind = k->group;
    int32_t gid = gid_of(r, g, kind);
    group *G = &r->groups[kind][gid];
    int32_t idx = g->issued[kind]++;
    while (idx >= G->base + G->len) {
        if (mt_vec_reserve(&G->q, &G->qcap, (int64_t)G->len + 1)) {
            fail(r, MT_ENOMEM, "out of memory queueing a collective");
            return 0;
        }
        memset(&G->q[G->len], 0, sizeof *G->q);
        G->len++;
    }
    inst *I = &G->q[idx - G->base];
    mt_time_ps now = mt_sched_now(r->sched);
    if (I->arrived == 0) {
        I->task = k;
        I->blocking = k->blocking;
    }
    if (I->arrived == 0 || now > I->ready_ps || g->rank < I->last) { /* issues are in time order */
        I->ready_ps = now;
        I->last = g->rank;
    }
    I->arrived++;
    if (!k->blocking) {
        g->pending_async++;
        g->pending[kind]++;
    }
    try_start(r, kind, gid);
    return !r->failed;
}

/* ---- pipeline transfers ----------------------------------------------------------------- */

static int32_t *arrival(runner *r, int32_t rank, int32_t chunk, int32_t mb, int dir) {
    return &r->arrived[(((size_t)rank * r->V + (size_t)chunk) * r->M + (size_t)mb) * 2 + (dir < 0)];
}

static int start_send(runner *r, sendrec *sr);

/* A pipeline send's record, on the runner's live list until sr_free. NULL when out of memory. */
static sendrec *sr_new(runner *r) {
    sendrec *sr = malloc(sizeof *sr);
    if (!sr) return NULL;
    sr->lprev = NULL;
    sr->lnext = r->live;
    if (r->live) r->live->lprev = sr;
    r->live = sr;
    return sr;
}

static void sr_free(runner *r, sendrec *sr) {
    if (sr->lprev) sr->lprev->lnext = sr->lnext;
    else r->live = sr->lnext;
    if (sr->lnext) sr->lnext->lprev = sr->lprev;
    free(sr);
}

/* The send has left its source: the next one queued on its connection may go. */
static void on_send_left(void *ctx, uint64_t tag) {
    (void)tag;
    sendrec *sr = ctx;
    runner *r = sr->r;
    sendq *q = &r->g[sr->src].c->out[sr->dir < 0];
    sr->left = 1;
    q->busy = 0;
    sendrec *next = q->head;
    if (!next) return;
    q->head = next->next;
    if (!q->head) q->tail = NULL;
    start_send(r, next);
}

static void on_send_delivered(void *ctx, uint64_t tag) {
    sendrec *sr = ctx;
    runner *r = sr->r;
    if (!sr->left) on_send_left(sr, tag); /* a model that only tells delivery */
    mt_time_ps now = mt_sched_now(r->sched);
    vgpu *src = &r->g[sr->src], *dst = &r->g[sr->dst];
    comm_end(src, now);
    comm_end(dst, now);
    if (r->o.on_span) r->o.on_span(r->o.span_ctx, sr->src, MT_SPAN_SEND, sr->task, sr->start, now);
    int32_t got = ++*arrival(r, sr->dst, sr->chunk, sr->mb, sr->dir);
    /* network folded: the mirrors' copies arrive in this event (below), nothing to compare; mirrors
     * never receive, so their arrivals are not counted */
    if (r->fold && !r->netfold) fold_check_arrival(r, sr->dst, sr->chunk, sr->mb, sr->dir, got, now);
    for (int32_t d = 1; r->netfold && d < r->D; d++) { /* the mirrors' copies arrive with it */
        comm_end(&r->g[sr->src + r->dp_off[d]], now);
        comm_end(&r->g[sr->dst + r->dp_off[d]], now);
    }
    int wake = dst->state == ST_WAIT_RECV && dst->wait_mb == sr->mb && dst->wait_dir == sr->dir &&
               dst->wait_chunk == sr->chunk && got > dst->step;
    if (wake) { /* the part of its wait before the send was issued is bubble (simulate.h) */
        dst->wready = sr->start;
        dst->wlast = sr->src;
    }
    sr_free(r, sr);
    if (wake) resume(r, dst);
}

static int start_send(runner *r, sendrec *sr) {
    mt_error err = {0};
    r->g[sr->src].c->out[sr->dir < 0].busy = 1;
    mt_status rc = r->netfold ? mt_net_send_folded(r->net, r->eps[sr->src], r->eps[sr->dst], sr->task->bytes,
                                                   on_send_left, on_send_delivered, sr, 0, &err)
                              : mt_net_send_sent(r->net, r->eps[sr->src], r->eps[sr->dst], sr->task->bytes,
                                                 on_send_left, on_send_delivered, sr, 0, &err);
    if (rc != MT_OK) {
        sr_free(r, sr);
        fail(r, err.code, err.msg);
        return 0;
    }
    return 1;
}

/* GPU g issues pipeline send k to `peer` now: counted, and in flight for both ends until
 * delivered. A mirror's send when the network folds is only this; it is delivered with its
 * representative's (on_send_delivered). */
static void count_send(runner *r, vgpu *g, const mt_task *k, mt_time_ps now, int32_t peer) {
    r->res->sends++;
    g->traffic[MT_TRAFFIC_P2P] += k->bytes;
    r->res->pp_traffic_bytes += k->bytes;
    comm_begin(g, now);
    comm_begin(&r->g[peer], now);
}

static int do_send(runner *r, vgpu *g, const mt_task *k) {
    int32_t peer_v;
    sendrec *sr = sr_new(r);
    if (!sr) {
        fail(r, MT_ENOMEM, "out of memory sending pipeline data");
        return 0;
    }
    mt_time_ps now = mt_sched_now(r->sched);
    int32_t peer = peer_rank(r, g, k->dir, k->chunk, &peer_v);
    count_send(r, g, k, now, peer);
    *sr = (sendrec){r, g->rank, peer, k->mb, peer_v, k->dir, 0, k, now, NULL, sr->lprev, sr->lnext};
    sendq *q = &g->c->out[k->dir < 0];
    if (!q->busy) return start_send(r, sr);
    if (q->tail) q->tail->next = sr;
    else q->head = sr;
    q->tail = sr;
    return 1;
}

/* ---- the cursor ------------------------------------------------------------------------- */

/* How long COMPUTE task k takes on GPU g in its current step: the program's time divided by the
 * GPU's speed and, with a what-if hook, each item times its factor. */
static mt_time_ps compute_ps(const runner *r, const vgpu *g, const mt_stage_program *sp, const mt_task *k) {
    double speed = r->o.gpu_speed ? r->o.gpu_speed[g->rank] : 1.0;
    if (k->moe && (r->p->moe || r->p->emb_owner)) { /* this GPU's experts or tables only (pass_ep/emb.c) */
        mt_coords c;
        mt_mesh_coords(&r->p->groups.mesh, g->rank, &c);
        int32_t slot = mt_group_slot(&r->p->groups, MT_GROUP_DP, g->rank), D = mt_group_size(&r->p->groups, MT_GROUP_DP);
        double d = 0;
        for (int32_t i = k->item_first; i < k->item_first + k->item_count; i++) {
            int32_t op = sp->items[i].op, own = r->p->emb_owner ? r->p->emb_owner[op] : -1;
            double f = own < 0 ? mt_moe_op_factor(r->p->moe, op, c.c[MT_DIM_EP]) : own == slot ? D : 0;
            d += (double)sp->items[i].dur_ps * f *
                 (r->o.compute_factor ? r->o.compute_factor(r->o.factor_ctx, g->rank, g->step, k, &sp->items[i]) : 1);
        }
        return mt_ps_sat(d / speed);
    }
    if (!r->o.compute_factor) return speed == 1.0 ? k->dur_ps : mt_ps_sat((double)k->dur_ps / speed);
    double d = 0;
    for (int32_t i = k->item_first; i < k->item_first + k->item_count; i++)
        d += (double)sp->items[i].dur_ps * r->o.compute_factor(r->o.factor_ctx, g->rank, g->step, k, &sp->items[i]);
    return mt_ps_sat(d / speed); /* a huge slowdown saturates; the engine refuses the event */
}

/* COMPUTE task k runs [end0 - d, end0) at full speed on g: under the slowdown model it becomes
 * g's running task, its slowdowns the means of its items' (o.comm_slow) weighted by their times;
 * returns when it ends if what is in flight now stays (end0 without a slowdown). O(items). */
static mt_time_ps op_start(runner *r, vgpu *g, const mt_stage_program *sp, const mt_task *k, mt_time_ps end0,
                           mt_time_ps d) {
    double w = 0, si = 0, se = 0;
    for (int32_t i = k->item_first; i < k->item_first + k->item_count; i++) {
        const float *s = &r->o.comm_slow[2 * (size_t)sp->items[i].op];
        double x = sp->items[i].dur_ps > 0 ? (double)sp->items[i].dur_ps : 0;
        w += x;
        si += x * s[0];
        se += x * s[1];
    }
    if (!(w > 0) || (si <= 0 && se <= 0)) return end0;
    g->c->op_live = 1;
    g->c->op_si = si / w;
    g->c->op_se = se / w;
    g->c->op_t = end0 - d;
    g->c->op_end0 = end0;
    g->c->op_left = (double)d;
    g->c->op_s = op_rate(g);
    return g->c->op_s > 0 ? g->c->op_t + (mt_time_ps)ceil((double)d * (1 + g->c->op_s)) : end0;
}

/* The GPU has run its program: on to the next step (returns 1), or done (0). Its step ends when
 * its device (every stream) and its host thread are both done. */
static int end_of_program(runner *r, vgpu *g, mt_time_ps now) {
    mt_time_ps end = now;
    if (r->o.host) {
        if (mt_busy_end(&g->c->busy) > end) end = mt_busy_end(&g->c->busy);
        if (g->c->host > end) end = g->c->host;
    }
    if (end > r->step_end[g->step]) r->step_end[g->step] = end;
    if (g->step + 1 < r->steps) { /* the next step: the same program again */
        g->step++;
        g->pc = 0;
        g->c->host_issued = -1; /* the host model's "task pc already issued" is per step */
        if (r->o.host) g->c->host += r->o.host->head_ps; /* each step's host work before its first op */
        return 1;
    }
    g->state = ST_DONE;
    g->finish_ps = end;
    if (end > now) { /* the compute stream is done; other streams or the host thread are not */
        mt_time_ps busy = mt_busy_take(&g->c->busy, end);
        g->compute += busy;
        g->c->host_wait += end - now - busy;
        if (r->o.on_span) r->o.on_span(r->o.span_ctx, g->rank, MT_SPAN_HOST, &mt_host_tail_task, now, end);
    }
    return 0;
}

/* COMPUTE task k at now: with the host model its op is launched by the host and placed on the
 * device's streams; the cursor goes on when its work on stream 0 ends. Returns 1 when an event
 * was scheduled (the GPU waits for it), 0 when the cursor goes on at once. */
static int run_compute(runner *r, vgpu *g, const mt_stage_program *sp, const mt_task *k, mt_time_ps now) {
    mt_time_ps d = compute_ps(r, g, sp, k);
    mt_time_ps end = now + d;
    g->pc++;
    if (r->o.host) { /* one op per task: the host launches it, the device runs it */
        mt_time_ps sync = 0;
        end = mt_hostdev_run_op(&g->c->dev, sp->items[k->item_first].op, d, now, &g->c->host, &sync, &d);
        g->c->host_sync += sync;
        if (g->c->busy_oom) {
            fail(r, MT_ENOMEM, "out of memory recording device time");
            return 1;
        }
        mt_time_ps busy = mt_busy_take(&g->c->busy, end); /* d on stream 0, and what others ran then */
        g->compute += busy;
        g->c->host_wait += end - now - busy;
        if (end - d > now && r->o.on_span) r->o.on_span(r->o.span_ctx, g->rank, MT_SPAN_HOST, k, now, end - d);
        if (end <= now) return 0;
    } else {
        if (d <= 0) return 0;
        g->compute += d;
    }
    g->comp_task = d > 0 ? k : NULL;
    g->comp_start = end - d;
    if (d > 0 && r->o.comm_slow) end = op_start(r, g, sp, k, end, d);
    mt_event_id ev = mt_engine_at(r->e, end, ev_advance, r, (uint64_t)g->rank);
    if (!ev) fail(r, MT_ENOMEM, "out of memory scheduling compute");
    g->c->op_ev = ev;
    return 1;
}

static void advance(runner *r, vgpu *g) {
    const mt_stage_program *sp = &r->p->stages[g->s];
    while (!r->failed) {
        mt_time_ps now = mt_sched_now(r->sched);
        if (g->pc >= sp->n_tasks) {
            if (end_of_program(r, g, now)) continue;
            return;
        }
        const mt_task *k = &sp->tasks[g->pc];
        switch (k->kind) {
        case MT_TASK_COMPUTE:
            if (run_compute(r, g, sp, k, now)) return;
            break;
        case MT_TASK_COLL:
            if (!r->groups[k->group]) { /* a group of one rank: nothing to do */
                g->pc++;
                break;
            }
            if (wait_for_host_issue(r, g, now)) return;
            for (int32_t d = 1; r->fold && !r->shadow[k->group] && d < r->D; d++) /* the mirrors issue it too */
                if (!issue_coll(r, &r->g[g->rank + r->dp_off[d]], k)) return;
            if (!issue_coll(r, g, k)) return;
            g->pc++;
            if (k->blocking) { /* resumed by the completion, always a later event */
                g->state = ST_WAIT_COLL;
                g->wait_since = now;
                return;
            }
            break;
        case MT_TASK_SEND:
            if (wait_for_host_issue(r, g, now)) return;
            if (r->netfold) { /* the mirrors send too, to their replicas' copies of g's peer */
                int32_t pv, peer = peer_rank(r, g, k->dir, k->chunk, &pv);
                for (int32_t d = 1; d < r->D; d++) count_send(r, &r->g[g->rank + r->dp_off[d]], k, now, peer + r->dp_off[d]);
            }
            for (int32_t d = 1; r->fold && !r->netfold && d < r->D; d++) /* the mirrors send too */
                if (!do_send(r, &r->g[g->rank + r->dp_off[d]], k)) return;
            if (!do_send(r, g, k)) return;
            g->pc++;
            break;
        case MT_TASK_RECV:
            if (*arrival(r, g->rank, k->chunk, k->mb, k->dir) > g->step) {
                g->pc++;
                break;
            }
            g->state = ST_WAIT_RECV;
            g->wait_dir = k->dir;
            g->wait_mb = k->mb;
            g->wait_chunk = k->chunk;
            g->wait_since = now;
            return;
        case MT_TASK_WAIT_COMM:
            if (g->pending_async == 0) {
                g->pc++;
                break;
            }
            g->state = ST_WAIT_COMM;
            g->wait_since = now;
            return;
        case MT_TASK_WAIT_GROUP:
            if (!r->groups[k->group] || g->pending[k->group] <= k->keep) {
                g->pc++;
                break;
            }
            g->state = ST_WAIT_GROUP;
            g->wait_kind = k->group;
            g->wait_keep = k->keep;
            g->wait_since = now;
            return;
        case MT_TASK_HOLD: /* a wait the trace measured, carried as it was: waiting for the peer */
            g->pc++;
            if (k->dur_ps <= 0) break;
            g->bubble += k->dur_ps;
            if (r->o.on_span) r->o.on_span(r->o.span_ctx, g->rank, MT_SPAN_BUBBLE, k, now, now + k->dur_ps);
            if (!mt_engine_at(r->e, now + k->dur_ps, ev_advance, r, (uint64_t)g->rank))
                fail(r, MT_ENOMEM, "out of memory scheduling a measured wait");
            return;
        case MT_TASK_MB_BEGIN:
            if (++g->live > g->peak_live) {
                g->peak_live = g->live;
                g->peak_live_ps = now;
            }
            g->pc++;
            break;
        case MT_TASK_MB_END:
            g->live--;
            g->pc++;
            break;
        }
    }
}

/* ---- set-up, run, results --------------------------------------------------------------- */

void mt_sim_opts_init(mt_sim_opts *o) {
    memset(o, 0, sizeof *o);
    o->ranks_per_node = 8;
}

void mt_sim_result_free(mt_sim_result *r) {
    if (!r) return;
    free(r->gpus);
    free(r->step_end_ps);
    free(r->layer_compute_ps);
    free(r->layer_comm_ps);
    free(r);
}

static const char *task_name(mt_task_kind k) {
    switch (k) {
    case MT_TASK_COMPUTE: return "compute";
    case MT_TASK_COLL: return "a collective";
    case MT_TASK_SEND: return "a send";
    case MT_TASK_RECV: return "pipeline data";
    case MT_TASK_WAIT_COMM: return "its data-parallel buckets";
    case MT_TASK_WAIT_GROUP: return "a group's collectives";
    case MT_TASK_HOLD: return "a measured wait";
    default: return "a micro-batch mark";
    }
}

/* Names the unfinished GPUs (the first three) and what each waits for. */
static void stuck_message(runner *r, mt_error *err) {
    char buf[900];
    int len = 0, shown = 0, stuck = 0;
    for (int32_t i = 0; i < r->N; i++) {
        vgpu *g = &r->g[i];
        if (g->state == ST_DONE) continue;
        stuck++;
        if (shown >= 3 || len >= (int)sizeof buf - 200) continue;
        const mt_stage_program *sp = &r->p->stages[g->s];
        const char *what = g->state == ST_WAIT_RECV ? (g->wait_dir > 0 ? "activations" : "gradients")
                           : g->state == ST_WAIT_COLL ? "a collective whose members never all arrived"
                           : g->state == ST_WAIT_COMM || g->state == ST_WAIT_GROUP
                               ? "non-blocking collectives that never finished"
                                                      : task_name(sp->tasks[g->pc].kind);
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%sGPU %d (dp %d, stage %d, tp %d) waits for %s",
                        shown ? "; " : "", g->rank, g->d, g->s, g->t, what);
        if (g->state == ST_WAIT_RECV)
            len += snprintf(buf + len, sizeof buf - (size_t)len, " of micro-batch %d", g->wait_mb);
        len += snprintf(buf + len, sizeof buf - (size_t)len, " at task %d of %d", g->pc, sp->n_tasks);
        shown++;
    }
    mt_fail(err, MT_ESTUCK, "simulation stuck with %d of %d GPUs unfinished: %s%s (a bug in the plan "
            "or the network model; please report it)", stuck, r->N, buf, stuck > shown ? "; ..." : "");
}

static void free_runner(runner *r) {
    while (r->live) sr_free(r, r->live); /* sends queued or in flight when a run stopped */
    if (r->p)
        for (int kind = 0; kind < r->n_kinds; kind++) {
            int32_t ng = mt_group_count(&r->p->groups, kind);
            for (int32_t i = 0; r->groups[kind] && i < ng; i++) {
                group *G = &r->groups[kind][i];
                for (int32_t j = 0; j < G->len; j++) {
                    /* a run that failed mid-collective (a link cut): its collref was never freed */
                    if (G->q[j].x && !mt_collexec_done(G->q[j].x)) free(mt_collexec_ctx(G->q[j].x));
                    mt_collexec_free(G->q[j].x);
                }
                free(G->q);
                free(G->fin);
            }
            free(r->groups[kind]);
            free(r->members[kind]);
            free(r->member_ep[kind]);
        }
    mt_collcache_destroy(&r->scheds);
    mt_u64map_destroy(&r->wf_total);
    mt_u64map_destroy(&r->wf_max);
    mt_u64map_destroy(&r->wf_pc);
    for (int64_t i = 0; i < r->n_sent; i++) free(r->sent[i]);
    free(r->sent);
    for (int32_t i = 0; r->cold && i < r->n_cold; i++) mt_busy_free(&r->cold[i].busy);
    free(r->cold);
    free(r->dev_words);
    free(r->issued);
    free(r->pending);
    free(r->gids);
    free(r->g);
    free(r->arrived);
    free(r->step_end);
    free(r->layer_comm);
    free(r->dp_off);
    free(r->arrive_ps);
    free(r->nf_ep);
    free(r->dfr);
}

/* Host model: a busy span of the GPU's device, to be accounted when the cursor passes it. */
static void on_busy(void *ctx, int32_t stream, int64_t start_ps, int64_t end_ps) {
    (void)stream;
    vgpu *g = ctx;
    if (!mt_busy_add(&g->c->busy, start_ps, end_ps)) g->c->busy_oom = 1;
}

/* Allocates the runner's state for program p on net: per-GPU state, groups (TP group (d, s) holds t
 * in order; DP group (s, t) holds d in order) and their endpoints. */
static mt_status setup_runner(runner *r, const mt_program *p, mt_netmodel *net, mt_engine *e, const mt_sim_opts *o,
                              const int32_t *job_eps, mt_error *err) {
    mt_collcache_init(&r->scheds);
    mt_u64map_init(&r->wf_total);
    mt_u64map_init(&r->wf_max);
    mt_u64map_init(&r->wf_pc);
    r->p = p;
    r->pl = &p->plan;
    r->net = net;
    r->e = e;
    r->sched = mt_engine_sched(e);
    r->fin_gid = -1;
    if (o) r->o = *o;
    else mt_sim_opts_init(&r->o);
    if (r->o.ranks_per_node <= 0) r->o.ranks_per_node = 8;
    r->N = r->pl->gpus;
    r->D = r->pl->dp;
    r->T = r->pl->tp;
    r->P = r->pl->pp;
    r->M = r->pl->micro_batches;
    r->V = r->pl->vpp > 1 ? r->pl->vpp : 1;
    const int32_t *eps;
    int32_t nep = mt_net_endpoints(net, &eps);
    if (job_eps) eps = job_eps, nep = r->N;
    r->eps = eps;
    if (nep < r->N)
        return mt_fail(err, MT_EINVAL, "the plan needs %d GPUs but the topology has %d (pick a larger topology or "
                       "fewer --gpus)", r->N, nep);
    r->res = calloc(1, sizeof *r->res);
    r->g = calloc((size_t)r->N, sizeof *r->g);
    r->steps = r->o.steps > 1 ? r->o.steps : 1;
    r->arrived = calloc((size_t)r->N * r->V * r->M * 2, sizeof *r->arrived);
    r->step_end = calloc((size_t)r->steps, sizeof *r->step_end);
    r->layer_comm = calloc((size_t)(p->n_layers > 0 ? p->n_layers : 1), sizeof *r->layer_comm);
    int nomem = !r->res || !r->g || !r->arrived || !r->step_end || !r->layer_comm;
    r->n_kinds = p->groups.n_kinds;
    r->issued = calloc((size_t)r->N * (size_t)(r->n_kinds > 0 ? r->n_kinds : 1), sizeof *r->issued);
    r->pending = calloc((size_t)r->N * (size_t)(r->n_kinds > 0 ? r->n_kinds : 1), sizeof *r->pending);
    r->gids = malloc((size_t)r->N * (size_t)(r->n_kinds > 0 ? r->n_kinds : 1) * sizeof *r->gids);
    nomem |= !r->issued || !r->pending || !r->gids;
    for (int kind = 0; kind < r->n_kinds; kind++) {
        int32_t ng = mt_group_count(&p->groups, kind);
        if (ng == 0) continue; /* a kind whose groups would have one rank: none */
        r->groups[kind] = calloc((size_t)ng, sizeof *r->groups[kind]);
        r->members[kind] = malloc((size_t)r->N * sizeof *r->members[kind]);
        r->member_ep[kind] = malloc((size_t)r->N * sizeof *r->member_ep[kind]);
        nomem |= !r->groups[kind] || !r->members[kind] || !r->member_ep[kind];
    }
    if (nomem) return mt_fail(err, MT_ENOMEM, "out of memory setting up %d virtual GPUs", r->N);
    size_t nk = (size_t)r->N * (size_t)(r->n_kinds > 0 ? r->n_kinds : 1); /* huge pages: per-GPU arrays */
    mt_hugemem_advise(r->g, (size_t)r->N * sizeof *r->g);
    mt_hugemem_advise(r->arrived, (size_t)r->N * r->V * r->M * 2 * sizeof *r->arrived);
    mt_hugemem_advise(r->issued, nk * sizeof *r->issued);
    mt_hugemem_advise(r->pending, nk * sizeof *r->pending);
    mt_hugemem_advise(r->gids, nk * sizeof *r->gids);
    for (int kind = 0; kind < r->n_kinds; kind++) {
        mt_hugemem_advise(r->members[kind], (size_t)r->N * sizeof *r->members[kind]);
        mt_hugemem_advise(r->member_ep[kind], (size_t)r->N * sizeof *r->member_ep[kind]);
    }
    for (int32_t i = 0; i < r->N; i++) {
        vgpu *g = &r->g[i];
        g->rank = i;
        g->wready = -1;
        g->wlast = g->wf_rank = g->wf_pc = -1;
        mt_plan_coords(r->pl, i, &g->d, &g->s, &g->t);
        g->issued = r->issued + (size_t)i * (size_t)r->n_kinds;
        g->pending = r->pending + (size_t)i * (size_t)r->n_kinds;
        for (int kind = 0; kind < r->n_kinds; kind++)
            r->gids[(size_t)i * (size_t)r->n_kinds + (size_t)kind] = mt_group_id(&p->groups, kind, i);
        for (int kind = 0; kind < r->n_kinds; kind++) {
            if (!r->groups[kind] || gid_of(r, g, kind) < 0) continue; /* in no group of this kind */
            int32_t at = gid_of(r, g, kind) * mt_group_size(&p->groups, kind) + mt_group_slot(&p->groups, kind, i);
            r->members[kind][at] = i;
            r->member_ep[kind][at] = eps[i];
        }
        r->total_tasks += (int64_t)p->stages[g->s].n_tasks * r->steps;
    }
    for (int kind = 0; kind < r->n_kinds; kind++)
        for (int32_t i = 0; r->groups[kind] && i < mt_group_count(&p->groups, kind); i++) {
            group *G = &r->groups[kind][i];
            G->n = mt_group_size(&p->groups, kind);
            G->ranks = r->members[kind] + (size_t)i * G->n;
            G->ep = r->member_ep[kind] + (size_t)i * G->n;
            for (int32_t m = 1; m < G->n; m++) /* endpoints are numbered node by node */
                if (G->ep[m] / r->o.ranks_per_node != G->ep[0] / r->o.ranks_per_node) G->inter = 1;
        }
    return MT_OK;
}

/* Each GPU's cold state (vcold), once the run's mode is known: its own when the run has pipeline
 * sends, the slowdown or the host model, except that with the network folded and neither model a
 * mirror never sends (count_send) nor computes, so only the walkers have theirs (2^20 GPUs: 226 MB
 * -> 14 KB); the others share cold_one. */
static mt_status cold_setup(runner *r, mt_error *err) {
    int walkers_only = r->netfold && !r->o.host && !r->o.comm_slow;
    r->n_cold = !(r->o.host || r->o.comm_slow || r->P > 1) ? 0 : walkers_only ? r->N / r->D : r->N;
    if (r->n_cold > 0 && !(r->cold = calloc((size_t)r->n_cold, sizeof *r->cold)))
        return mt_fail(err, MT_ENOMEM, "out of memory setting up %d virtual GPUs", r->N);
    if (r->cold) mt_hugemem_advise(r->cold, (size_t)r->n_cold * sizeof *r->cold);
    int64_t words = r->o.host ? mt_hostdev_words(r->o.host) : 0;
    if (words > 0 && !(r->dev_words = calloc((size_t)r->N * (size_t)words, sizeof *r->dev_words)))
        return mt_fail(err, MT_ENOMEM, "out of memory setting up %d virtual GPUs", r->N);
    r->cold_one.host_issued = -1;
    for (int32_t i = 0, w = 0; i < r->N; i++) {
        vgpu *g = &r->g[i];
        g->c = !r->cold ? &r->cold_one : !walkers_only ? &r->cold[i] : g->d == 0 ? &r->cold[w++] : &r->cold_one;
        g->c->host_issued = -1;
        if (r->o.host) {
            g->c->host = r->start + r->o.host->head_ps;
            mt_hostdev_init(&g->c->dev, r->o.host, r->dev_words + (size_t)i * (size_t)words, on_busy, g);
        }
    }
    return MT_OK;
}

/* GPU g's row of the results (step_ps: the run's). */
static void gpu_row(const runner *r, const vgpu *g, mt_time_ps step_ps, mt_gpu_stats *st) {
    const mt_program *p = r->p;
    const mt_stage_program *sp = &p->stages[g->s];
    int32_t i = g->rank;
    memset(st, 0, sizeof *st);
    st->rank = i;
    /* traced_tp / traced_pp: the replicas are the job's tp ranks / pipeline stages */
    st->dp = p->plan.traced_tp || p->plan.traced_pp ? 0 : g->d;
    st->stage = p->plan.traced_pp ? g->d : g->s;
    st->tp = p->plan.traced_tp ? g->d : g->t;
    st->finish_ps = g->finish_ps - r->start;
    st->compute_ps = g->compute;
    st->stretch_ps = g->stretch;
    st->comm_ps = g->comm;
    st->exposed_ps = g->exposed;
    st->peer_wait_ps = g->peer;
    st->bubble_ps = g->bubble;
    st->waited_for = g->wf_rank;
    st->waited_for_ps = g->wf_rank >= 0 ? g->wf_ps : 0;
    st->waited_pc = g->wf_rank >= 0 ? g->wf_pc : -1;
    st->idle_ps = step_ps - st->finish_ps;
    st->host_wait_ps = g->c->host_wait;
    st->host_sync_ps = g->c->host_sync;
    st->host_busy_ps = r->o.host ? g->c->host - r->start - g->c->host_sync : 0;
    st->peak_live_mb = g->peak_live;
    st->peak_mem_from_ps = g->peak_live > 0 ? g->peak_live_ps - r->start : g->peak_live_ps;
    /* table-wise embeddings: this GPU's own tables (pass_emb.c), else the stage's states */
    const double *own = p->emb_mem ? &p->emb_mem[((size_t)g->s * (size_t)mt_group_size(&p->groups, MT_GROUP_DP) +
                                                  (size_t)mt_group_slot(&p->groups, MT_GROUP_DP, i)) * 3] : NULL;
    st->mem_params_bytes = own ? own[0] : sp->param_bytes;
    st->mem_grads_bytes = own ? own[1] : sp->grad_bytes;
    st->mem_optimizer_bytes = own ? own[2] : sp->optstate_bytes;
    /* recomputation: one layer's (or attention core's) activations while it runs backward */
    st->mem_activations_bytes = g->peak_live * sp->act_bytes_per_mb + (g->peak_live > 0 ? sp->act_bytes_transient : 0);
    st->peak_mem_bytes = st->mem_params_bytes + st->mem_grads_bytes + st->mem_optimizer_bytes + st->mem_activations_bytes;
    if (sp->mem_bwd_peak_bytes > 0 && g->peak_live == 1) /* gradients made while activations free */
        st->peak_mem_bytes = st->mem_params_bytes + st->mem_optimizer_bytes +
                             fmax(fmax(st->mem_activations_bytes, sp->mem_bwd_peak_bytes), st->mem_grads_bytes);
    memcpy(st->traffic_bytes, g->traffic, sizeof st->traffic_bytes);
}

_Static_assert(sizeof(mt_gpu_stats) <= sizeof(vgpu), "collect_results writes the rows over the vgpu array");

/* The per-GPU, per-step and per-layer results of a finished run into r->res. The rows are written
 * over r->g, which nothing reads afterwards (r->g is then NULL): a row is no larger than a vgpu,
 * so row i covers only bytes of vgpus 0 .. i, each read before its row is written; at 2^20 GPUs
 * that is 243 MB of fresh (zeroed) pages fewer. */
static mt_status collect_results(runner *r, mt_error *err) {
    const mt_program *p = r->p;
    mt_sim_result *res = r->res;
    res->n_gpus = r->N;
    res->n_layers = p->n_layers;
    res->layer_compute_ps = calloc((size_t)(p->n_layers > 0 ? p->n_layers : 1), sizeof(double));
    res->layer_comm_ps = calloc((size_t)(p->n_layers > 0 ? p->n_layers : 1), sizeof(double));
    if (!res->layer_compute_ps || !res->layer_comm_ps) return mt_fail(err, MT_ENOMEM, "out of memory collecting results");
    for (int32_t i = 0; i < r->N; i++) /* a cluster job's times count from its start */
        if (r->g[i].finish_ps - r->start > res->step_ps) res->step_ps = r->g[i].finish_ps - r->start;
    res->n_steps = r->steps;
    res->step_end_ps = r->step_end;
    r->step_end = NULL;
    for (int32_t k = 0; k < r->steps; k++) res->step_end_ps[k] -= r->start;
    unsigned char *base = (unsigned char *)r->g;
    for (int32_t i = 0; i < r->N; i++) {
        vgpu g;
        mt_gpu_stats st;
        memcpy(&g, base + (size_t)i * sizeof g, sizeof g);
        gpu_row(r, &g, res->step_ps, &st);
        memcpy(base + (size_t)i * sizeof st, &st, sizeof st);
    }
    r->g = NULL;
    res->gpus = realloc(base, (size_t)(r->N > 0 ? r->N : 1) * sizeof *res->gpus); /* smaller: the same pages */
    if (!res->gpus) res->gpus = (mt_gpu_stats *)(void *)base;
    for (int32_t s = 0; s < r->P; s++) {
        const mt_stage_program *sp = &p->stages[s];
        for (int32_t j = 0; j < sp->n_items; j++)
            if (sp->items[j].layer >= 0 && sp->items[j].layer < p->n_layers)
                res->layer_compute_ps[sp->items[j].layer] += (double)sp->items[j].dur_ps;
    }
    for (int32_t l = 0; l < p->n_layers; l++) res->layer_comm_ps[l] = r->layer_comm[l] / ((double)r->D * r->T);
    res->events = mt_engine_events(r->e);
    return MT_OK;
}

/* Why this run may not fold (NULL: it may), from the options and the program. */
static const char *fold_refusal(const runner *r) {
    if (r->o.no_fold) return r->o.no_fold;
    if (!r->o.fresh) return "this caller cannot rerun unfolded";
    if (r->D <= 1) return "one data-parallel replica";
    if (r->o.gpu_speed) return "GPUs of different speeds";
    if (r->o.compute_factor) return "per-GPU compute factors";
    if (r->o.on_span) return "a per-GPU timeline is recorded";
    if (r->p->emb_owner) return "embedding tables are owned per replica";
    return NULL;
}

/* Folded: the replicas' rank offsets and the arrival times; mirrors' cursors are never run. */
static mt_status fold_setup(runner *r, mt_error *err) {
    const mt_mesh *m = &r->p->groups.mesh;
    r->dp_off = malloc((size_t)r->D * sizeof *r->dp_off);
    r->arrive_ps = calloc((size_t)r->N * r->V * r->M * 2, sizeof *r->arrive_ps);
    if (!r->dp_off || !r->arrive_ps) return mt_fail(err, MT_ENOMEM, "out of memory folding %d GPUs", r->N);
    mt_hugemem_advise(r->arrive_ps, (size_t)r->N * r->V * r->M * 2 * sizeof *r->arrive_ps);
    int32_t shard = m->size[MT_DIM_DP_SHARD];
    for (int32_t d = 0; d < r->D; d++)
        r->dp_off[d] = (int32_t)((d % shard) * m->stride[MT_DIM_DP_SHARD] + (d / shard) * m->stride[MT_DIM_DP_REP]);
    r->fold = 1;
    return MT_OK;
}

/* Folded: every mirror's own walk is its representative's (traffic and comm are its own). */
static void fold_copy(runner *r) {
    for (int32_t i = 0; i < r->N; i++) {
        vgpu *g = &r->g[i];
        const vgpu *f = &r->g[i - r->dp_off[g->d]];
        if (g->d == 0) continue;
        g->state = f->state;
        g->pc = f->pc;
        g->step = f->step;
        g->finish_ps = f->finish_ps;
        g->compute = f->compute;
        g->stretch = f->stretch;
        g->exposed = f->exposed;
        g->peer = f->peer;
        g->bubble = f->bubble;
        /* whom it waited for: its representative's peer in its own replica (replicas are alike) */
        g->wf_rank = f->wf_rank >= 0 && r->g[f->wf_rank].d == 0 ? f->wf_rank + r->dp_off[g->d] : f->wf_rank;
        g->wf_ps = f->wf_ps;
        g->wf_pc = f->wf_pc;
        if (r->o.host) { /* else a mirror's cold state may be the shared cold_one (cold_setup) */
            g->c->host = f->c->host;
            g->c->host_wait = f->c->host_wait;
            g->c->host_sync = f->c->host_sync;
        }
        g->peak_live = f->peak_live;
        g->peak_live_ps = f->peak_live_ps;
    }
}

/* The network's check failed (netmodel.h): stop; mt_simulate runs again, network unfolded. */
static void netfold_broken(void *ctx, const char *why) {
    runner *r = ctx;
    if (r->netfold_broken) return;
    r->netfold_broken = 1;
    snprintf(r->netfold_why, sizeof r->netfold_why, "%s", why);
    fail(r, MT_EINTERNAL, "the folded network's check failed");
}

/* Folded run: folds the network too when the model can and some traffic stays inside a replica
 * (a kind whose groups do, or pipeline sends); else netfold_why says why not. */
static mt_status netfold_setup(runner *r, mt_error *err) {
    int any = r->P > 1;
    for (int kind = 0; kind < r->n_kinds; kind++) {
        r->local[kind] = r->groups[kind] != NULL && mt_group_in_replica(&r->p->groups, kind);
        any |= r->local[kind];
    }
    if (!mt_net_can(r->net, MT_NETOP_FOLD)) {
        snprintf(r->netfold_why, sizeof r->netfold_why, "the %s model cannot fold", mt_net_name(r->net));
        return MT_OK;
    }
    if (!any) {
        snprintf(r->netfold_why, sizeof r->netfold_why, "no traffic stays inside a replica");
        return MT_OK;
    }
    int32_t E = r->N / r->D, e = 0;
    r->nf_ep = malloc((size_t)r->N * sizeof *r->nf_ep);
    if (!r->nf_ep) return mt_fail(err, MT_ENOMEM, "out of memory folding the network");
    for (int32_t i = 0; i < r->N && e < E; i++)
        if (r->g[i].d == 0) {
            for (int32_t d = 0; d < r->D; d++) r->nf_ep[(size_t)d * E + e] = r->eps[i + r->dp_off[d]];
            e++;
        }
    r->nf = (mt_netfold){r->D, E, r->nf_ep, netfold_broken, r};
    mt_error why = {0};
    if (mt_net_set_fold(r->net, &r->nf, &why) != MT_OK) {
        if (why.code == MT_ENOMEM) return mt_fail(err, MT_ENOMEM, "%s", why.msg);
        snprintf(r->netfold_why, sizeof r->netfold_why, "%.150s", why.msg);
        return MT_OK;
    }
    r->netfold = 1;
    for (int kind = 0; kind < r->n_kinds; kind++) /* --algo nccl: a schedule depends on its group's nodes */
        r->shadow[kind] = r->local[kind] && r->pl->algo != MT_ALGO_NCCL && r->pl->a2a_algo - 1 != MT_ALGO_NCCL;
    return MT_OK;
}

/* One run: mode 0 unfolded, 1 programs folded, 2 programs and network folded; r is set up and
 * freed by the caller. */
static mt_status run_once(runner *r, const mt_program *p, mt_netmodel *net, mt_engine *e, const mt_sim_opts *o,
                          int mode, mt_error *err) {
    memset(r, 0, sizeof *r);
    mt_net_set_grouping(net, !o || (!o->no_fold && !o->no_netfold)); /* flow groups: netmodels/flow.h */
    mt_status rc = setup_runner(r, p, net, e, o, NULL, err);
    if (rc == MT_OK && mode >= 1) rc = fold_setup(r, err);
    if (rc == MT_OK && mode == 2) rc = netfold_setup(r, err);
    else if (mode == 1) snprintf(r->netfold_why, sizeof r->netfold_why, "%s", o->no_netfold ? o->no_netfold : "");
    if (rc == MT_OK) rc = cold_setup(r, err);
    for (int32_t i = 0; rc == MT_OK && i < r->N; i++)
        if ((!r->fold || r->g[i].d == 0) && !mt_engine_at(e, 0, ev_advance, r, (uint64_t)i))
            rc = mt_fail(err, MT_ENOMEM, "out of memory scheduling %d GPUs", r->N);
    if (rc == MT_OK) rc = mt_engine_run(e, MT_TIME_NEVER, err);
    if (r->netfold) mt_net_set_fold(net, NULL, NULL); /* r->nf dies with r */
    if (r->fold_broken || r->netfold_broken) return MT_OK; /* the caller reruns */
    if (rc == MT_OK && r->fold) fold_copy(r);
    for (int32_t i = 0; rc == MT_OK && i < r->N; i++)
        if (r->g[i].state != ST_DONE) {
            stuck_message(r, err);
            rc = MT_ESTUCK;
        }
    if (rc == MT_OK) rc = collect_results(r, err);
    return rc;
}

mt_status mt_simulate(const mt_program *p, mt_netmodel *net, mt_engine *e, const mt_sim_opts *o,
                      mt_sim_result **out, mt_error *err) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    runner r;
    memset(&r, 0, sizeof r);
    if (o) r.o = *o;
    r.p = p;
    r.D = p->plan.dp;
    const char *no = fold_refusal(&r);
    char why[256], netwhy[256] = "";
    snprintf(why, sizeof why, "%s", no ? no : "");
    int mode = no ? 0 : o->no_netfold ? 1 : 2;
    mt_status rc = run_once(&r, p, net, e, o, mode, err);
    if (rc == MT_OK && r.netfold_broken) { /* again with the programs folded, the network not */
        snprintf(netwhy, sizeof netwhy, "its check failed (%.200s)", r.netfold_why);
        mt_sim_result_free(r.res);
        free_runner(&r);
        if (err) *err = (mt_error){0};
        rc = o->fresh(o->fresh_ctx, &net, &e, err);
        if (rc == MT_OK) rc = run_once(&r, p, net, e, o, 1, err);
    }
    if (rc == MT_OK && r.fold_broken) {
        snprintf(why, sizeof why, "the replicas diverged (%s)", r.fold_msg);
        mt_sim_result_free(r.res);
        free_runner(&r);
        if (err) *err = (mt_error){0}; /* the folded run's stop was no error */
        rc = o->fresh(o->fresh_ctx, &net, &e, err);
        if (rc == MT_OK) rc = run_once(&r, p, net, e, o, 0, err);
    }
    if (rc == MT_OK) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        r.res->sim_wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        r.res->folded = r.fold;
        r.res->walkers = r.fold ? r.N / r.D : r.N;
        if (r.fold) snprintf(r.res->fold_why, sizeof r.res->fold_why, "%d %s alike", (int)r.D,
                             p->plan.traced_tp   ? "tensor-parallel ranks (copies of the traced rank)"
                             : p->plan.traced_pp ? "pipeline stages (copies of the traced stage)"
                                                 : "data-parallel replicas");
        else snprintf(r.res->fold_why, sizeof r.res->fold_why, "%s", why);
        r.res->net_folded = r.netfold;
        if (r.netfold) {
            mt_netstats st;
            mt_net_stats(net, &st);
            r.res->net_copies = st.copies;
        }
        if (r.netfold) snprintf(r.res->net_fold_why, sizeof r.res->net_fold_why, "replica 0's own traffic stands for all %d",
                                (int)r.D);
        else if (r.fold) snprintf(r.res->net_fold_why, sizeof r.res->net_fold_why, "%s", netwhy[0] ? netwhy : r.netfold_why);
        *out = r.res;
        r.res = NULL;
    }
    mt_sim_result_free(r.res);
    free_runner(&r);
    return rc;
}

mt_status mt_simulate_jobs(const mt_sim_job *jobs, int32_t n, mt_netmodel *net, mt_engine *e, mt_sim_result **outs,
                           mt_error *err) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    runner *rs = calloc((size_t)(n > 0 ? n : 1), sizeof *rs);
    if (!rs) return mt_fail(err, MT_ENOMEM, "out of memory setting up %d jobs", (int)n);
    const int32_t *all;
    int32_t nep = mt_net_endpoints(net, &all);
    mt_status rc = MT_OK;
    for (int32_t j = 0; rc == MT_OK && j < n; j++) {
        outs[j] = NULL;
        for (int32_t i = 0; i < jobs[j].p->plan.gpus; i++)
            if (jobs[j].eps[i] < 0 || jobs[j].eps[i] >= nep)
                rc = mt_fail(err, MT_EINVAL, "job %d's GPU %d is placed on endpoint %d, outside the fabric's %d",
                             (int)j, (int)i, (int)jobs[j].eps[i], (int)nep);
        if (rc != MT_OK) break;
        runner *r = &rs[j];
        r->start = jobs[j].start_ps;
        mt_sim_opts o = jobs[j].o ? *jobs[j].o : (mt_sim_opts){0};
        if (!jobs[j].o) mt_sim_opts_init(&o);
        o.no_fold = "a cluster job";
        o.fresh = NULL;
        int32_t *eps = malloc((size_t)(jobs[j].p->plan.gpus > 0 ? jobs[j].p->plan.gpus : 1) * sizeof *eps);
        if (!eps) {
            rc = mt_fail(err, MT_ENOMEM, "out of memory setting up job %d", (int)j);
            break;
        }
        for (int32_t i = 0; i < jobs[j].p->plan.gpus; i++) eps[i] = all[jobs[j].eps[i]];
        rc = setup_runner(r, jobs[j].p, jobs[j].net ? jobs[j].net : net, e, &o, eps, err);
        if (rc == MT_OK) rc = cold_setup(r, err);
        r->job_eps = eps;
        for (int32_t i = 0; rc == MT_OK && i < r->N; i++)
            if (!mt_engine_at(e, r->start, ev_advance, r, (uint64_t)i))
                rc = mt_fail(err, MT_ENOMEM, "out of memory scheduling job %d", (int)j);
    }
    if (rc == MT_OK) rc = mt_engine_run(e, MT_TIME_NEVER, err);
    for (int32_t j = 0; rc == MT_OK && j < n; j++) {
        runner *r = &rs[j];
        for (int32_t i = 0; rc == MT_OK && i < r->N; i++)
            if (r->g[i].state != ST_DONE) {
                stuck_message(r, err);
                mt_error_prefix(err, "a cluster job");
                rc = MT_ESTUCK;
            }
        if (rc == MT_OK) rc = collect_results(r, err);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int32_t j = 0; j < n; j++) {
        runner *r = &rs[j];
        if (rc == MT_OK) {
            r->res->sim_wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
            r->res->walkers = r->N;
            snprintf(r->res->fold_why, sizeof r->res->fold_why, "a job of a cluster run");
            snprintf(r->res->net_fold_why, sizeof r->res->net_fold_why, "a job of a cluster run");
            outs[j] = r->res;
            r->res = NULL;
        }
        mt_sim_result_free(r->res);
        free((void *)r->job_eps);
        free_runner(r);
    }
    free(rs);
    return rc;
}

const char *mt_traffic_name(mt_traffic c) {
    static const char *const n[MT_TRAFFIC_CLASSES] = {"allreduce", "allgather", "reducescatter", "alltoall", "p2p",
                                                      "other"};
    return (unsigned)c < MT_TRAFFIC_CLASSES ? n[c] : "?";
}

/* sim/asis.c — per-rank Chakra graphs run as given (see asis.h).
 *
 * State: per rank its graph, each node's unmet dependency count and children (CSR), its
 * communicator instance, a FIFO of ready GPU compute nodes; per communicator its members, their
 * endpoints and each instance's node on every member; per (src, dst) connection a FIFO of sends
 * not yet started; per (src, dst, tag) the deliveries not yet received and the receives waiting.
 * Re-entrancy: every completion the network reports becomes an engine event at the current
 * time, so a node's children are never started from inside a network callback.
 */
#include "sim/asis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/collcache.h"
#include "sim/collexec.h"
#include "util/u64map.h"
#include "util/vec.h"

enum { NS_WAIT = 0, NS_READY, NS_DONE };

typedef struct ck_inst {
    int32_t arrived;
    mt_collexec *x;
} ck_inst;

typedef struct ck_comm {
    const char *name;        /* pg_name ("" : all ranks) */
    int32_t n;               /* members */
    int32_t *ranks, *ep;     /* members in rank order, and their endpoints */
    int32_t n_inst;
    int32_t *node;           /* node[k * n + m]: instance k's node on member m */
    int32_t *cnt;            /* while building: per member, nodes so far and capacity of mnodes */
    int64_t *cap;            /* while building: per member, the capacity of mnodes */
    int32_t **mnodes;        /* while building: per member, its collective nodes in file order */
    ck_inst *inst;
    int32_t next;
    int busy;
} ck_comm;

typedef struct ck_rank {
    const mt_ck_graph *g;
    int32_t *indeg, *cbeg, *child;
    int32_t *comm_of, *inst_of; /* per node: communicator and instance (-1 when not a collective) */
    int8_t *state;
    int32_t *cq, cq_head, cq_tail; /* ready GPU compute nodes */
    int busy;
    int32_t done;
    mt_time_ps finish, compute;
} ck_rank;

typedef struct ck_send ck_send;
typedef struct ck_runner ck_runner;

typedef struct ck_conn {     /* sends of one (src, dst) in issue order */
    ck_send *head, *tail;
    int busy;
} ck_conn;

typedef struct ck_match {    /* deliveries and receives of one (src, dst, tag) */
    int32_t src, dst, tag;
    int64_t delivered;       /* arrived, no receive has taken them yet */
    int32_t *waiting, n_wait, head_wait;
    int64_t cap_wait; /* receive nodes (on dst) ready first */
} ck_match;

struct ck_send {
    ck_runner *R;
    int32_t src, node;
    int32_t conn, match;
    int left;
    ck_send *next;
};

struct ck_runner {
    int32_t N;
    ck_rank *r;
    ck_comm *comms;
    int32_t n_comms;
    int64_t cap_comms;
    mt_u64map comm_by_name;
    ck_conn *conns;
    int32_t n_conns;
    int64_t cap_conns;
    mt_u64map conn_by_key;
    ck_match *matches;
    int32_t n_matches;
    int64_t cap_matches;
    mt_u64map match_by_key;
    mt_collcache scheds;
    mt_netmodel *net;
    mt_sched sched;
    const int32_t *eps;
    mt_asis_opts o;
    mt_asis_result *res;
    int failed;
};

void mt_asis_opts_init(mt_asis_opts *o) {
    memset(o, 0, sizeof *o);
    o->algo = MT_ALGO_RING;
    o->ranks_per_node = 8;
}

/* The schedule op of a Chakra collective type; 0 when mitosis has none. */
static int ck_op(int32_t t, mt_coll_op *op) {
    switch (t) {
    case MT_CK_ALL_REDUCE: case MT_CK_BARRIER: *op = MT_COLL_ALLREDUCE; return 1;
    case MT_CK_ALL_GATHER: *op = MT_COLL_ALLGATHER; return 1;
    case MT_CK_REDUCE_SCATTER: case MT_CK_REDUCE_SCATTER_BLOCK: *op = MT_COLL_REDUCESCATTER; return 1;
    case MT_CK_ALL_TO_ALL: *op = MT_COLL_ALLTOALL; return 1;
    case MT_CK_BROADCAST: *op = MT_COLL_BROADCAST; return 1;
    case MT_CK_REDUCE: *op = MT_COLL_REDUCE; return 1;
    default: return 0;
    }
}

static const mt_ck_node *node_of(const ck_runner *R, int32_t rank, int32_t i) { return &R->r[rank].g->nodes[i]; }

static void fail(ck_runner *R, mt_status code, const char *msg) {
    if (R->failed) return;
    R->failed = 1;
    mt_sched_fail(R->sched, code, msg);
}

/* ---- building: communicators and instances ---------------------------------------------- */

static int32_t comm_index(ck_runner *R, const char *name, mt_error *err) {
    uint64_t key = mt_hash_str(name);
    int64_t at;
    for (; mt_u64map_get(&R->comm_by_name, key, &at); key++)
        if (!strcmp(R->comms[at].name, name)) return (int32_t)at;
    if (mt_vec_reserve(&R->comms, &R->cap_comms, R->n_comms + 1) ||
        mt_u64map_put(&R->comm_by_name, key, R->n_comms, err) != MT_OK) {
        mt_fail(err, MT_ENOMEM, "out of memory");
        return -1;
    }
    ck_comm *c = &R->comms[R->n_comms];
    memset(c, 0, sizeof *c);
    c->name = name;
    return R->n_comms++;
}

/* Appends node i of rank r to its communicator's member list. */
static mt_status comm_add(ck_runner *R, int32_t r, int32_t i, mt_error *err) {
    const mt_ck_node *nd = node_of(R, r, i);
    int32_t ci = comm_index(R, nd->pg ? nd->pg : "", err);
    if (ci < 0) return MT_ENOMEM;
    ck_comm *c = &R->comms[ci];
    if (c->n == 0 || c->ranks[c->n - 1] != r) { /* ranks come in order: r is new */
        int32_t n = c->n + 1;
        int32_t *rk = realloc(c->ranks, (size_t)n * sizeof *rk);
        if (rk) c->ranks = rk;
        int32_t *cnt = rk ? realloc(c->cnt, (size_t)n * sizeof *cnt) : NULL;
        if (cnt) c->cnt = cnt;
        int64_t *cap = cnt ? realloc(c->cap, (size_t)n * sizeof *cap) : NULL;
        if (cap) c->cap = cap;
        int32_t **mn = cap ? realloc(c->mnodes, (size_t)n * sizeof *mn) : NULL;
        if (!mn) return mt_fail(err, MT_ENOMEM, "out of memory");
        c->mnodes = mn;
        c->ranks[c->n] = r;
        c->cnt[c->n] = c->cap[c->n] = 0;
        c->mnodes[c->n] = NULL;
        c->n = n;
    }
    int32_t m = c->n - 1;
    if (mt_vec_reserve(&c->mnodes[m], &c->cap[m], c->cnt[m] + 1))
        return mt_fail(err, MT_ENOMEM, "out of memory");
    R->r[r].comm_of[i] = ci;
    R->r[r].inst_of[i] = c->cnt[m];
    c->mnodes[m][c->cnt[m]++] = i;
    return MT_OK;
}

/* Every member has the same number of instances, of the same type; the instance table. */
static mt_status comm_seal(ck_runner *R, ck_comm *c, mt_error *err) {
    const char *cn = *c->name ? c->name : "(no pg_name: all ranks)";
    for (int32_t m = 1; m < c->n; m++)
        if (c->cnt[m] != c->cnt[0])
            return mt_fail(err, MT_EFORMAT, "%s: communicator %s: rank %d has %d collectives but rank %d (%s) has %d "
                           "(each member must issue the same collectives in the same order)", R->r[c->ranks[m]].g->path,
                           cn, (int)c->ranks[m], (int)c->cnt[m], (int)c->ranks[0], R->r[c->ranks[0]].g->path,
                           (int)c->cnt[0]);
    c->n_inst = c->cnt[0];
    c->node = malloc(((size_t)c->n_inst * (size_t)c->n + 1) * sizeof *c->node);
    c->inst = calloc((size_t)c->n_inst + 1, sizeof *c->inst);
    c->ep = malloc((size_t)c->n * sizeof *c->ep);
    if (!c->node || !c->inst || !c->ep) return mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t m = 0; m < c->n; m++) c->ep[m] = R->eps[c->ranks[m]];
    for (int32_t k = 0; k < c->n_inst; k++) {
        const mt_ck_node *first = node_of(R, c->ranks[0], c->mnodes[0][k]);
        mt_coll_op op;
        if (!ck_op(first->comm_type, &op))
            return mt_fail(err, MT_EFORMAT, "%s: node %llu: collective type %s (%d) has no schedule in mitosis "
                           "(supported: ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER, BARRIER)",
                           R->r[c->ranks[0]].g->path, (unsigned long long)first->id, mt_ck_comm_name(first->comm_type),
                           (int)first->comm_type);
        for (int32_t m = 0; m < c->n; m++) {
            const mt_ck_node *nd = node_of(R, c->ranks[m], c->mnodes[m][k]);
            if (nd->comm_type != first->comm_type)
                return mt_fail(err, MT_EFORMAT, "%s: node %llu: collective #%d of communicator %s is %s here but %s on "
                               "rank %d", R->r[c->ranks[m]].g->path, (unsigned long long)nd->id, (int)k, cn,
                               mt_ck_comm_name(nd->comm_type), mt_ck_comm_name(first->comm_type), (int)c->ranks[0]);
            c->node[(size_t)k * c->n + m] = c->mnodes[m][k];
        }
    }
    for (int32_t m = 0; m < c->n; m++) free(c->mnodes[m]);
    free(c->mnodes), free(c->cnt), free(c->cap);
    c->mnodes = NULL, c->cnt = NULL, c->cap = NULL;
    return MT_OK;
}

/* Children lists, counts, and the communicator of every collective of rank r. */
static mt_status rank_init(ck_runner *R, int32_t r, mt_error *err) {
    ck_rank *k = &R->r[r];
    const mt_ck_graph *g = k->g;
    size_t n = (size_t)g->n_nodes + 1;
    k->indeg = calloc(n, sizeof *k->indeg);
    k->cbeg = calloc(n + 1, sizeof *k->cbeg);
    k->child = malloc(((size_t)g->n_deps + 1) * sizeof *k->child);
    k->comm_of = malloc(n * sizeof *k->comm_of);
    k->inst_of = malloc(n * sizeof *k->inst_of);
    k->state = calloc(n, sizeof *k->state);
    k->cq = malloc(n * sizeof *k->cq);
    if (!k->indeg || !k->cbeg || !k->child || !k->comm_of || !k->inst_of || !k->state || !k->cq)
        return mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const mt_ck_node *nd = &g->nodes[i];
        k->indeg[i] = (int32_t)nd->ndeps;
        for (uint32_t d = 0; d < nd->ndeps; d++) k->cbeg[g->deps[nd->dep_begin + d] + 1]++;
        k->comm_of[i] = k->inst_of[i] = -1;
        int p2p = nd->type == MT_CK_SEND || nd->type == MT_CK_RECV;
        int32_t peer = nd->type == MT_CK_SEND ? nd->dst : nd->src;
        if (p2p && (peer < 0 || peer >= R->N))
            return mt_fail(err, MT_EFORMAT, "%s: node %llu (\"%s\"): %s %d is not a rank of the %d files", g->path,
                           (unsigned long long)nd->id, nd->name, nd->type == MT_CK_SEND ? "comm_dst" : "comm_src",
                           (int)peer, (int)R->N);
        if (nd->type == MT_CK_COLL) MT_CHECK(comm_add(R, r, i, err));
    }
    for (int32_t i = 0; i < g->n_nodes; i++) k->cbeg[i + 1] += k->cbeg[i];
    int32_t *fill = k->cq; /* scratch: the next free child slot per node */
    for (int32_t i = 0; i < g->n_nodes; i++) fill[i] = k->cbeg[i];
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const mt_ck_node *nd = &g->nodes[i];
        for (uint32_t d = 0; d < nd->ndeps; d++) k->child[fill[g->deps[nd->dep_begin + d]]++] = i;
    }
    return MT_OK;
}

/* ---- running ------------------------------------------------------------------------------ */

static void node_done(ck_runner *R, int32_t r, int32_t i);

static uint64_t pack(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static void ev_node_done(void *ctx, uint64_t arg) {
    node_done(ctx, (int32_t)(arg >> 32), (int32_t)(uint32_t)arg);
}

static void done_at(ck_runner *R, int32_t r, int32_t i, mt_time_ps t) {
    if (!mt_sched_at(R->sched, t, ev_node_done, R, pack(r, i))) fail(R, MT_ENOMEM, "out of memory scheduling a node");
}

static void compute_next(ck_runner *R, int32_t r);

static void ev_compute_done(void *ctx, uint64_t arg) {
    ck_runner *R = ctx;
    int32_t r = (int32_t)(arg >> 32), i = (int32_t)(uint32_t)arg;
    R->r[r].busy = 0;
    if (!node_of(R, r, i)->is_delay) R->r[r].compute += node_of(R, r, i)->duration_ps;
    node_done(R, r, i);
    compute_next(R, r);
}

static void compute_next(ck_runner *R, int32_t r) {
    ck_rank *k = &R->r[r];
    if (k->busy || k->cq_head == k->cq_tail || R->failed) return;
    int32_t i = k->cq[k->cq_head++];
    k->busy = 1;
    mt_time_ps now = mt_sched_now(R->sched), d = node_of(R, r, i)->duration_ps;
    if (!mt_sched_at(R->sched, now + (d > 0 ? d : 0), ev_compute_done, R, pack(r, i)))
        fail(R, MT_ENOMEM, "out of memory scheduling a node");
}

/* -- collectives -- */

typedef struct ck_collref { ck_runner *R; int32_t c, k; } ck_collref;

static void ev_coll_finish(void *ctx, uint64_t arg);

static void coll_done(void *ctx) {
    ck_collref *cr = ctx;
    ck_runner *R = cr->R;
    uint64_t arg = pack(cr->c, cr->k);
    free(cr);
    if (!mt_sched_at(R->sched, mt_sched_now(R->sched), ev_coll_finish, R, arg))
        fail(R, MT_ENOMEM, "out of memory scheduling a collective completion");
}

static const mt_coll_schedule *schedule(ck_runner *R, const mt_ck_graph *g, const mt_ck_node *nd, int32_t n,
                                        mt_error *err) {
    mt_coll_params p;
    mt_coll_params_init(&p);
    ck_op(nd->comm_type, &p.op);
    p.nranks = n;
    p.bytes = nd->comm_type == MT_CK_BARRIER || nd->comm_bytes < 0 ? 0 : nd->comm_bytes;
    if (p.op == MT_COLL_ALLGATHER && g->ag_input) p.bytes *= n; /* mitosis's all-gather size: its output */
    p.algo = R->o.algo;
    p.chunks = nd->chunks > 0 ? nd->chunks : R->o.chunks;
    p.ranks_per_node = R->o.ranks_per_node > 0 ? R->o.ranks_per_node : 8;
    if (nd->algo && mt_coll_algo_parse(nd->algo, &p.algo, err) != MT_OK) return NULL;
    if (p.algo == MT_ALGO_HIER && (n % p.ranks_per_node || n <= p.ranks_per_node)) p.algo = MT_ALGO_RING;
    return mt_collcache_get(&R->scheds, &p, NULL, err);
}

static void try_start(ck_runner *R, int32_t ci) {
    ck_comm *c = &R->comms[ci];
    while (!c->busy && c->next < c->n_inst && c->inst[c->next].arrived == c->n && !R->failed) {
        int32_t k = c->next++;
        mt_error err = {0};
        R->res->collectives++;
        c->busy = 1;
        if (c->n == 1) { /* nothing to move: done now */
            ck_collref *cr = malloc(sizeof *cr);
            if (!cr) { fail(R, MT_ENOMEM, "out of memory"); return; }
            *cr = (ck_collref){R, ci, k};
            coll_done(cr);
            continue;
        }
        const mt_coll_schedule *s = schedule(R, R->r[c->ranks[0]].g, node_of(R, c->ranks[0], c->node[(size_t)k * c->n]),
                                            c->n, &err);
        ck_collref *cr = s ? malloc(sizeof *cr) : NULL;
        if (!cr) {
            if (s) mt_fail(&err, MT_ENOMEM, "out of memory");
            { fail(R, err.code, err.msg); return; }
        }
        *cr = (ck_collref){R, ci, k};
        mt_collexec *x = NULL;
        if (mt_collexec_start(s, R->net, R->sched, c->ep, coll_done, cr, &x, &err) != MT_OK) {
            free(cr);
            { fail(R, err.code, err.msg); return; }
        }
        c->inst[k].x = x;
    }
}

static void ev_coll_finish(void *ctx, uint64_t arg) {
    ck_runner *R = ctx;
    int32_t ci = (int32_t)(arg >> 32), k = (int32_t)(uint32_t)arg;
    ck_comm *c = &R->comms[ci];
    mt_collexec_free(c->inst[k].x);
    c->inst[k].x = NULL;
    c->busy = 0;
    for (int32_t m = 0; m < c->n && !R->failed; m++) node_done(R, c->ranks[m], c->node[(size_t)k * c->n + m]);
    try_start(R, ci);
}

/* -- sends and receives -- */

static int32_t table_index(ck_runner *R, int is_match, int32_t src, int32_t dst, int32_t tag) {
    mt_u64map *map = is_match ? &R->match_by_key : &R->conn_by_key;
    uint64_t key = mt_hash64(((uint64_t)(uint32_t)src << 32 | (uint32_t)dst) ^ mt_hash64((uint64_t)(uint32_t)tag + 1));
    if (!is_match) key = (uint64_t)(uint32_t)src * (uint64_t)R->N + (uint64_t)(uint32_t)dst;
    int64_t at;
    for (; mt_u64map_get(map, key, &at); key++) {
        if (!is_match) return (int32_t)at;
        const ck_match *m = &R->matches[at];
        if (m->src == src && m->dst == dst && m->tag == tag) return (int32_t)at;
    }
    mt_error err = {0};
    int32_t *n = is_match ? &R->n_matches : &R->n_conns;
    int bad = is_match ? mt_vec_reserve(&R->matches, &R->cap_matches, *n + 1)
                       : mt_vec_reserve(&R->conns, &R->cap_conns, *n + 1);
    if (bad || mt_u64map_put(map, key, *n, &err) != MT_OK) {
        fail(R, MT_ENOMEM, "out of memory");
        return -1;
    }
    if (is_match) R->matches[*n] = (ck_match){src, dst, tag, 0, NULL, 0, 0, 0};
    else R->conns[*n] = (ck_conn){NULL, NULL, 0};
    return (*n)++;
}

static void start_send(ck_runner *R, ck_send *s);

static void on_left(void *ctx, uint64_t tag) {
    (void)tag;
    ck_send *s = ctx;
    ck_runner *R = s->R;
    ck_conn *q = &R->conns[s->conn];
    s->left = 1;
    q->busy = 0;
    ck_send *next = q->head;
    if (!next) return;
    q->head = next->next;
    if (!q->head) q->tail = NULL;
    start_send(R, next);
}

static void on_delivered(void *ctx, uint64_t tag) {
    ck_send *s = ctx;
    ck_runner *R = s->R;
    if (!s->left) on_left(s, tag);
    mt_time_ps now = mt_sched_now(R->sched);
    done_at(R, s->src, s->node, now);
    ck_match *m = &R->matches[s->match];
    if (m->head_wait < m->n_wait) done_at(R, m->dst, m->waiting[m->head_wait++], now);
    else m->delivered++;
    free(s);
}

static void start_send(ck_runner *R, ck_send *s) {
    mt_error err = {0};
    const mt_ck_node *nd = node_of(R, s->src, s->node);
    R->conns[s->conn].busy = 1;
    double bytes = nd->comm_bytes > 0 ? nd->comm_bytes : 0;
    if (mt_net_send_sent(R->net, R->eps[s->src], R->eps[nd->dst], bytes, on_left, on_delivered, s, 0, &err) != MT_OK) {
        free(s);
        fail(R, err.code, err.msg);
    }
}

static void send_ready(ck_runner *R, int32_t r, int32_t i) {
    const mt_ck_node *nd = node_of(R, r, i);
    int32_t conn = table_index(R, 0, r, nd->dst, 0), match = table_index(R, 1, r, nd->dst, nd->tag);
    ck_send *s = conn >= 0 && match >= 0 ? malloc(sizeof *s) : NULL;
    if (!s) { fail(R, MT_ENOMEM, "out of memory"); return; }
    *s = (ck_send){R, r, i, conn, match, 0, NULL};
    R->res->sends++;
    ck_conn *q = &R->conns[conn];
    if (!q->busy) { start_send(R, s); return; }
    if (q->tail) q->tail->next = s;
    else q->head = s;
    q->tail = s;
}

static void recv_ready(ck_runner *R, int32_t r, int32_t i) {
    const mt_ck_node *nd = node_of(R, r, i);
    int32_t mi = table_index(R, 1, nd->src, r, nd->tag);
    if (mi < 0) return;
    ck_match *m = &R->matches[mi];
    if (m->delivered > 0) {
        m->delivered--;
        { done_at(R, r, i, mt_sched_now(R->sched)); return; }
    }
    if (m->n_wait == m->cap_wait && mt_vec_reserve(&m->waiting, &m->cap_wait, m->n_wait + 1))
        { fail(R, MT_ENOMEM, "out of memory"); return; }
    m->waiting[m->n_wait++] = i;
}

/* -- nodes -- */

static void ready(ck_runner *R, int32_t r, int32_t i) {
    ck_rank *k = &R->r[r];
    const mt_ck_node *nd = node_of(R, r, i);
    k->state[i] = NS_READY;
    switch (nd->type) {
    case MT_CK_COMP:
        if (nd->is_cpu) break;
        k->cq[k->cq_tail++] = i;
        { compute_next(R, r); return; }
    case MT_CK_COLL:
        R->comms[k->comm_of[i]].inst[k->inst_of[i]].arrived++;
        { try_start(R, k->comm_of[i]); return; }
    case MT_CK_SEND: { send_ready(R, r, i); return; }
    case MT_CK_RECV: { recv_ready(R, r, i); return; }
    default: break;
    }
    mt_time_ps d = nd->duration_ps > 0 ? nd->duration_ps : 0; /* host, memory, metadata nodes */
    done_at(R, r, i, mt_sched_now(R->sched) + d);
}

static void node_done(ck_runner *R, int32_t r, int32_t i) {
    ck_rank *k = &R->r[r];
    mt_time_ps now = mt_sched_now(R->sched);
    k->state[i] = NS_DONE;
    k->done++;
    if (now > k->finish) k->finish = now;
    for (int32_t c = k->cbeg[i]; c < k->cbeg[i + 1] && !R->failed; c++)
        if (--k->indeg[k->child[c]] == 0) ready(R, r, k->child[c]);
}

/* ---- the run ------------------------------------------------------------------------------ */

/* What unfinished rank r waits for, into err (MT_ESTUCK). */
static mt_status stuck(const ck_runner *R, int32_t r, mt_error *err) {
    const ck_rank *k = &R->r[r];
    int32_t i = 0;
    while (i < k->g->n_nodes && k->state[i] != NS_READY) i++;
    if (i == k->g->n_nodes)
        return mt_fail(err, MT_EINTERNAL, "rank %d: %d of %d nodes never became ready", (int)r,
                       (int)(k->g->n_nodes - k->done), (int)k->g->n_nodes);
    const mt_ck_node *nd = &k->g->nodes[i];
    if (nd->type == MT_CK_COLL) {
        const ck_comm *c = &R->comms[k->comm_of[i]];
        int32_t kk = k->inst_of[i], late = -1;
        for (int32_t m = 0; m < c->n && late < 0; m++)
            if (R->r[c->ranks[m]].state[c->node[(size_t)kk * c->n + m]] == NS_WAIT) late = c->ranks[m];
        return mt_fail(err, MT_EFORMAT, "%s: node %llu (\"%s\") waits for collective #%d of communicator %s, which "
                       "rank %d never reaches (its dependencies are not met: a cross-rank deadlock)", k->g->path,
                       (unsigned long long)nd->id, nd->name, (int)kk, *c->name ? c->name : "(all ranks)", (int)late);
    }
    if (nd->type == MT_CK_RECV)
        return mt_fail(err, MT_EFORMAT, "%s: node %llu (\"%s\") waits for a send from rank %d with tag %d that never "
                       "comes", k->g->path, (unsigned long long)nd->id, nd->name, (int)nd->src, (int)nd->tag);
    return mt_fail(err, MT_EFORMAT, "%s: node %llu (\"%s\") never finished", k->g->path, (unsigned long long)nd->id,
                   nd->name);
}

static mt_status setup(ck_runner *R, const mt_ck_graph *g, mt_error *err) {
    int32_t neps = mt_net_endpoints(R->net, &R->eps);
    if (neps < R->N)
        return mt_fail(err, MT_EINVAL, "the network has %d endpoints for %d ranks (give a topology with at least %d "
                       "GPUs)", (int)neps, (int)R->N, (int)R->N);
    R->r = calloc((size_t)R->N, sizeof *R->r);
    R->res->finish_ps = calloc((size_t)R->N, sizeof *R->res->finish_ps);
    R->res->compute_ps = calloc((size_t)R->N, sizeof *R->res->compute_ps);
    if (!R->r || !R->res->finish_ps || !R->res->compute_ps) return mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t r = 0; r < R->N; r++) {
        R->r[r].g = &g[r];
        MT_CHECK(rank_init(R, r, err));
        R->res->nodes += g[r].n_nodes;
    }
    for (int32_t c = 0; c < R->n_comms; c++) MT_CHECK(comm_seal(R, &R->comms[c], err));
    R->res->communicators = R->n_comms;
    return MT_OK;
}

static void runner_free(ck_runner *R) {
    for (int32_t r = 0; R->r && r < R->N; r++) {
        ck_rank *k = &R->r[r];
        free(k->indeg), free(k->cbeg), free(k->child), free(k->comm_of), free(k->inst_of), free(k->state), free(k->cq);
    }
    free(R->r);
    for (int32_t c = 0; c < R->n_comms; c++) {
        ck_comm *m = &R->comms[c];
        for (int32_t i = 0; i < m->n_inst && m->inst; i++) mt_collexec_free(m->inst[i].x);
        for (int32_t i = 0; m->mnodes && i < m->n; i++) free(m->mnodes[i]);
        free(m->mnodes), free(m->cnt), free(m->cap), free(m->ranks), free(m->ep), free(m->node), free(m->inst);
    }
    free(R->comms);
    for (int32_t c = 0; c < R->n_conns; c++)
        for (ck_send *s = R->conns[c].head, *nx; s; s = nx) nx = s->next, free(s);
    free(R->conns);
    for (int32_t m = 0; m < R->n_matches; m++) free(R->matches[m].waiting);
    free(R->matches);
    mt_collcache_destroy(&R->scheds);
    mt_u64map_destroy(&R->comm_by_name);
    mt_u64map_destroy(&R->conn_by_key);
    mt_u64map_destroy(&R->match_by_key);
}

mt_status mt_asis_run(const mt_ck_graph *g, int32_t n, mt_netmodel *net, mt_engine *e, const mt_asis_opts *o,
                      mt_asis_result *out, mt_error *err) {
    memset(out, 0, sizeof *out);
    if (n < 1) return mt_fail(err, MT_EINVAL, "no rank graphs to run");
    ck_runner R;
    memset(&R, 0, sizeof R);
    R.N = n;
    R.net = net;
    R.sched = mt_engine_sched(e);
    R.res = out;
    if (o) R.o = *o;
    else mt_asis_opts_init(&R.o);
    mt_u64map_init(&R.comm_by_name);
    mt_u64map_init(&R.conn_by_key);
    mt_u64map_init(&R.match_by_key);
    mt_collcache_init(&R.scheds);
    out->n_ranks = n;
    mt_status rc = setup(&R, g, err);
    for (int32_t r = 0; r < n && rc == MT_OK && !R.failed; r++)
        for (int32_t i = 0; i < g[r].n_nodes && !R.failed; i++)
            if (R.r[r].indeg[i] == 0 && R.r[r].state[i] == NS_WAIT) ready(&R, r, i);
    if (rc == MT_OK) rc = mt_engine_run(e, MT_TIME_NEVER, err);
    for (int32_t r = 0; r < n && rc == MT_OK; r++)
        if (R.r[r].done < g[r].n_nodes) rc = stuck(&R, r, err);
    for (int32_t r = 0; r < n && rc == MT_OK; r++) {
        out->finish_ps[r] = R.r[r].finish;
        out->compute_ps[r] = R.r[r].compute;
        if (R.r[r].finish > out->step_ps) out->step_ps = R.r[r].finish;
    }
    out->events = mt_engine_events(e);
    runner_free(&R);
    if (rc != MT_OK) mt_asis_result_free(out);
    return rc;
}

void mt_asis_result_free(mt_asis_result *r) {
    if (!r) return;
    free(r->finish_ps);
    free(r->compute_ps);
    memset(r, 0, sizeof *r);
}

/* emulate/collmpi.c — see collmpi.h. */
#include "emulate/collmpi.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ST_LEFT = 1, ST_DELIVERED = 2, ST_POSTED = 4 };

struct mt_collmpi {
    const mt_mpienv *env;
    const mt_coll_schedule *s;
    MPI_Comm comm;
    int32_t me;
    mt_collmpi_bufs *bufs;
    uint8_t *st;             /* per send of the schedule: ST_* as this rank sees it */
    uint32_t *mine;          /* sends this rank sources or receives (or joins), index order */
    int32_t n_mine, n_open;  /* n_open: of mine, not finished */
    mt_collmpi_xfer *x;      /* per entry of mine (joins have none: bytes -1) */
    MPI_Request *req;        /* per entry of mine; MPI_REQUEST_NULL when not in flight */
    int *idx;                /* MPI_Testsome's output */
    int native;
    MPI_Request nreq;
};

double mt_collmpi_max_message(const mt_coll_schedule *s, int native) {
    if (native) return s->p.bytes;
    double m = 0;
    for (uint32_t i = 0; i < s->nsends; i++)
        if (s->sends[i].bytes > m) m = s->sends[i].bytes;
    return m;
}

static mt_status count_of(const mt_collmpi *c, double bytes, int *count, mt_error *err) {
    double b = llround(bytes) < 0 ? 0 : (double)llround(bytes);
    if (b > (double)c->bufs->bytes || b > INT_MAX)
        return mt_fail(err, MT_EINVAL, "a %.0f-byte message exceeds the emulator's buffers (%lld bytes): shrink the "
                       "messages with --bytes-scale", b, (long long)c->bufs->bytes);
    *count = (int)b;
    return MT_OK;
}

/* MPI's own non-blocking collective for the schedule's operation (reductions as bitwise OR of
 * bytes: the content is garbage, the traffic is what counts). */
static mt_status start_native(mt_collmpi *c, mt_error *err) {
    const mt_coll_params *p = &c->s->p;
    int n = p->nranks, cnt = 0, part;
    MT_CHECK(count_of(c, p->bytes, &cnt, err));
    part = cnt / (n > 0 ? n : 1);
    char *sb = c->bufs->send, *rb = c->bufs->recv;
    int rc;
    switch (p->op) {
    case MT_COLL_ALLREDUCE: rc = MPI_Iallreduce(sb, rb, cnt, MPI_BYTE, MPI_BOR, c->comm, &c->nreq); break;
    case MT_COLL_REDUCESCATTER:
        rc = MPI_Ireduce_scatter_block(sb, rb, part, MPI_BYTE, MPI_BOR, c->comm, &c->nreq);
        break;
    case MT_COLL_ALLGATHER: rc = MPI_Iallgather(sb, part, MPI_BYTE, rb, part, MPI_BYTE, c->comm, &c->nreq); break;
    case MT_COLL_BROADCAST: rc = MPI_Ibcast(c->me == p->root ? sb : rb, cnt, MPI_BYTE, p->root, c->comm, &c->nreq); break;
    case MT_COLL_REDUCE: rc = MPI_Ireduce(sb, rb, cnt, MPI_BYTE, MPI_BOR, p->root, c->comm, &c->nreq); break;
    case MT_COLL_ALLTOALL: rc = MPI_Ialltoall(sb, part, MPI_BYTE, rb, part, MPI_BYTE, c->comm, &c->nreq); break;
    default: return mt_fail(err, MT_EINTERNAL, "no MPI collective for %s", mt_coll_op_name(p->op));
    }
    return mt_mpienv_check(c->env, rc, "starting an MPI collective", err);
}

static mt_status alloc_mine(mt_collmpi *c, mt_error *err) {
    const mt_coll_schedule *s = c->s;
    c->st = malloc(s->nsends ? s->nsends : 1);
    if (!c->st) return mt_fail(err, MT_ENOMEM, "out of memory starting a collective");
    for (uint32_t i = 0; i < s->nsends; i++) {
        const mt_coll_send *d = &s->sends[i];
        int mine = d->src == c->me || d->dst == c->me;
        c->st[i] = mine ? 0 : ST_LEFT | ST_DELIVERED; /* others' transfers are theirs to order */
        c->n_mine += mine;
    }
    size_t n = (size_t)(c->n_mine ? c->n_mine : 1);
    c->mine = malloc(n * sizeof *c->mine);
    c->x = calloc(n, sizeof *c->x);
    c->req = malloc(n * sizeof *c->req);
    c->idx = malloc(n * sizeof *c->idx);
    if (!c->mine || !c->x || !c->req || !c->idx) return mt_fail(err, MT_ENOMEM, "out of memory starting a collective");
    int32_t k = 0;
    for (uint32_t i = 0; i < s->nsends; i++) {
        const mt_coll_send *d = &s->sends[i];
        if (d->src != c->me && d->dst != c->me) continue;
        c->mine[k] = i;
        c->req[k] = MPI_REQUEST_NULL;
        c->x[k] = (mt_collmpi_xfer){i, d->src, d->dst, (int8_t)(d->src != c->me), d->src == d->dst ? -1 : d->bytes, 0, 0};
        k++;
    }
    c->n_open = c->n_mine;
    return MT_OK;
}

mt_status mt_collmpi_start(const mt_mpienv *env, const mt_coll_schedule *s, int native, MPI_Comm comm, int32_t me,
                           mt_collmpi_bufs *bufs, mt_collmpi **out, mt_error *err) {
    *out = NULL;
    mt_collmpi *c = calloc(1, sizeof *c);
    if (!c) return mt_fail(err, MT_ENOMEM, "out of memory starting a collective");
    *c = (mt_collmpi){.env = env, .s = s, .comm = comm, .me = me, .bufs = bufs, .nreq = MPI_REQUEST_NULL};
    /* sendrecv has no MPI collective: it always runs as its schedule (one send) */
    c->native = native && s->p.op != MT_COLL_SENDRECV;
    mt_status rc = c->native ? start_native(c, err) : alloc_mine(c, err);
    if (rc != MT_OK) {
        mt_collmpi_free(c);
        return rc;
    }
    *out = c;
    return MT_OK;
}

static int deps_met(const mt_collmpi *c, uint32_t i) {
    const mt_coll_send *d = &c->s->sends[i];
    for (uint32_t k = 0; k < d->ndeps; k++) {
        uint32_t dep = c->s->deps[d->dep_begin + k];
        uint8_t need = mt_coll_dep_on_sent(dep) ? ST_LEFT : ST_DELIVERED;
        if (!(c->st[mt_coll_dep_send(dep)] & need)) return 0;
    }
    return 1;
}

/* Posts every half whose observable dependencies hold; joins complete at once. Returns how many
 * joins completed (they may enable more). */
static mt_status post_ready(mt_collmpi *c, int64_t now_ns, int *joined, mt_error *err) {
    *joined = 0;
    for (int32_t k = 0; k < c->n_mine; k++) {
        uint32_t i = c->mine[k];
        if (c->st[i] & (ST_POSTED | ST_DELIVERED) || !deps_met(c, i)) continue;
        mt_collmpi_xfer *x = &c->x[k];
        if (x->bytes < 0) { /* a local join */
            c->st[i] |= ST_POSTED | ST_LEFT | ST_DELIVERED;
            c->n_open--;
            (*joined)++;
            continue;
        }
        int cnt = 0;
        MT_CHECK(count_of(c, x->bytes, &cnt, err));
        int tag = (int)(i % ((uint32_t)c->env->tag_ub + 1u));
        int rc = x->role == 0 ? MPI_Isend(c->bufs->send, cnt, MPI_BYTE, x->dst, tag, c->comm, &c->req[k])
                              : MPI_Irecv(c->bufs->recv, cnt, MPI_BYTE, x->src, tag, c->comm, &c->req[k]);
        MT_CHECK(mt_mpienv_check(c->env, rc, x->role == 0 ? "MPI_Isend" : "MPI_Irecv", err));
        c->st[i] |= ST_POSTED;
        x->post_ns = now_ns;
    }
    return MT_OK;
}

mt_status mt_collmpi_progress(mt_collmpi *c, int64_t now_ns, int *done, mt_error *err) {
    if (c->native) {
        int flag = 0;
        MT_CHECK(mt_mpienv_check(c->env, MPI_Test(&c->nreq, &flag, MPI_STATUS_IGNORE), "an MPI collective", err));
        *done = flag;
        return MT_OK;
    }
    for (;;) {
        int joined, outcount = 0;
        MT_CHECK(post_ready(c, now_ns, &joined, err));
        if (c->n_mine > 0) {
            MT_CHECK(mt_mpienv_check(c->env, MPI_Testsome(c->n_mine, c->req, &outcount, c->idx, MPI_STATUSES_IGNORE),
                                     "a collective's transfers", err));
        }
        if (outcount == MPI_UNDEFINED) outcount = 0;
        for (int j = 0; j < outcount; j++) {
            int k = c->idx[j];
            c->st[c->mine[k]] |= ST_LEFT | ST_DELIVERED;
            c->x[k].done_ns = now_ns;
            c->n_open--;
        }
        if (!joined && outcount == 0) break;
    }
    *done = c->n_open == 0;
    return MT_OK;
}

const mt_collmpi_xfer *mt_collmpi_xfers(const mt_collmpi *c, int32_t *n) {
    *n = c->native ? 0 : c->n_mine;
    return c->x;
}

void mt_collmpi_free(mt_collmpi *c) {
    if (!c) return;
    /* requests still in flight (a failed run) are left to MPI_Abort */
    free(c->st);
    free(c->mine);
    free(c->x);
    free(c->req);
    free(c->idx);
    free(c);
}

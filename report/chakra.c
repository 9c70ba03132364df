/* report/chakra.c — the simulated workload as per-rank Chakra ET files (see chakra.h). */
#include "report/chakra.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra.pb-c.h"
#include "extrapolate/moe.h"
#include "sim/simulate.h"
#include "tracer/chakra.h"
#include "util/fileio.h"

enum { X_COMP, X_COLL, X_SEND, X_RECV, X_DELAY };

typedef struct xnode {
    int8_t kind;
    int32_t span;            /* index in the recorder (X_DELAY: -1) */
    int32_t peer;            /* SEND: destination, RECV: source */
    mt_time_ps start, end;
    uint64_t deps[3];
    int32_t ndeps;
} xnode;

/* Per rank, its spans (and the sends into it) in recording order, which is end order. */
typedef struct xindex {
    int64_t *beg;            /* CSR over ranks */
    int32_t *span;           /* >= 0: a span of the rank; < 0: -(1 + the send span) received */
} xindex;

/* The rank a pipeline send span of rank `src` goes to. */
static int32_t send_peer(const mt_program *p, int32_t src, const mt_task *k) {
    mt_coords c;
    int32_t ps, pv;
    mt_mesh_coords(&p->groups.mesh, src, &c);
    mt_pp_peer(&p->plan, c.c[MT_DIM_PP], k->chunk, k->dir, &ps, &pv);
    c.c[MT_DIM_PP] = ps;
    return mt_mesh_rank(&p->groups.mesh, &c);
}

static int wanted(const mt_span *sp) {
    return sp->kind == MT_SPAN_COMPUTE || sp->kind == MT_SPAN_COLL || sp->kind == MT_SPAN_SEND;
}

static mt_status index_build(const mt_ckx_src *s, xindex *x, mt_error *err) {
    const mt_recorder *rec = s->rec;
    int32_t N = s->n_gpus;
    x->beg = calloc((size_t)N + 2, sizeof *x->beg);
    int64_t total = 0;
    if (!x->beg) return mt_fail(err, MT_ENOMEM, "out of memory");
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < rec->n_spans; i++) {
            const mt_span *sp = &rec->spans[i];
            if (!wanted(sp) || sp->rank < 0 || sp->rank >= N) continue;
            int32_t to[2] = {sp->rank, sp->kind == MT_SPAN_SEND ? send_peer(s->prog, sp->rank, sp->task) : -1};
            for (int k = 0; k < 2; k++) {
                if (to[k] < 0 || to[k] >= N) continue;
                if (pass == 0) x->beg[to[k] + 2]++, total++;
                else x->span[x->beg[to[k] + 1]++] = k == 0 ? (int32_t)i : -(int32_t)(1 + i);
            }
        }
        if (pass == 0) {
            if (rec->n_spans > INT32_MAX) return mt_fail(err, MT_EINVAL, "too many spans to export");
            for (int32_t r = 0; r < N; r++) x->beg[r + 2] += x->beg[r + 1];
            if (!(x->span = malloc(((size_t)total + 1) * sizeof *x->span)))
                return mt_fail(err, MT_ENOMEM, "out of memory");
        }
    }
    return MT_OK; /* now beg[r] .. beg[r + 1] is rank r's range */
}

/* ---- one rank's nodes ---------------------------------------------------------------------- */

typedef struct xrank {
    xnode *n;
    int64_t len, cap;
    int64_t *real, n_real;   /* the nodes that are not delays, in end order */
    int64_t delays, waits;
    mt_time_ps *cs, *ce;     /* the rank's compute spans, by start (they run one at a time) */
    int64_t n_comp, cap_comp;
} xrank;

/* Whether [a, b) overlaps one of the rank's compute spans. */
static int computing(const xrank *x, mt_time_ps a, mt_time_ps b) {
    int64_t lo = 0, hi = x->n_comp; /* the first span ending after a */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (x->ce[mid] <= a) lo = mid + 1;
        else hi = mid;
    }
    return lo < x->n_comp && x->cs[lo] < b;
}

static int push(xrank *x, const xnode *nd) {
    if (x->len == x->cap) {
        int64_t cap = x->cap ? x->cap * 2 : 256;
        xnode *nn = realloc(x->n, (size_t)cap * sizeof *nn);
        int64_t *nr = nn ? realloc(x->real, (size_t)cap * sizeof *nr) : NULL;
        if (nn) x->n = nn;
        if (!nr) return -1;
        x->real = nr, x->cap = cap;
    }
    if (nd->kind != X_DELAY) x->real[x->n_real++] = x->len;
    x->n[x->len++] = *nd;
    return 0;
}

/* The last node of x that is not a delay and ended at or before t: -1 when none. Spans were
 * recorded as they ended, so a binary search. */
static int64_t latest_before(const xrank *x, mt_time_ps t) {
    int64_t lo = 0, hi = x->n_real; /* answer in [lo - 1, hi) */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (x->n[x->real[mid]].end <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 ? x->real[lo - 1] : -1;
}

/* Whether an all-to-all's per-rank shares are even (a plain ALL_TO_ALL); 1 for other collectives. */
static int even_shares(const mt_program *p, const mt_task *k) {
    if (!k->moe || k->coll != MT_COLL_ALLTOALL) return 1;
    const double *sh = NULL;
    int32_t n = 0;
    if (k->moe_layer < 0) sh = p->emb_share, n = mt_group_size(&p->groups, k->group);
    else if (p->moe && p->moe->rank_share) sh = p->moe->rank_share + (size_t)k->moe_layer * (size_t)p->moe->ep,
                                            n = p->moe->ep;
    for (int32_t i = 0; sh && i < n; i++)
        if (!(sh[i] > (1 - 1e-9) / n && sh[i] < (1 + 1e-9) / n)) return 0;
    return 1;
}

/* Appends the node for entry e of rank r, after a delay node when its dependencies end early. */
static mt_status add_entry(const mt_ckx_src *s, int32_t r, int32_t e, xrank *x, int64_t *last_comp, mt_error *err) {
    const mt_recorder *rec = s->rec;
    const mt_span *sp = &rec->spans[e >= 0 ? e : -(e + 1)];
    xnode nd = {0};
    nd.span = e >= 0 ? e : -(e + 1);
    nd.start = sp->start, nd.end = sp->end;
    nd.kind = e < 0 ? X_RECV : sp->kind == MT_SPAN_COMPUTE ? X_COMP : sp->kind == MT_SPAN_COLL ? X_COLL : X_SEND;
    if (nd.kind == X_SEND) nd.peer = send_peer(s->prog, r, sp->task);
    if (nd.kind == X_RECV) {
        nd.peer = sp->rank;
        nd.start = 0; /* posted from the start: it completes on arrival */
        return push(x, &nd) ? mt_fail(err, MT_ENOMEM, "out of memory") : MT_OK;
    }
    if (nd.kind == X_COLL && (sp->task->coll == MT_COLL_SENDRECV || !even_shares(s->prog, sp->task)))
        return mt_fail(err, MT_EINVAL, "--chakra: this plan has %s, which Chakra cannot express as mitosis runs it "
                       "(export a plan without them%s)", sp->task->moe ? "expert-parallel all-to-alls with uneven "
                       "per-rank shares" : "traced send/recv pairs", sp->task->moe ? ", e.g. with --expert-skew 0" : "");
    mt_time_ps ready = 0;
    int64_t gate = latest_before(x, nd.start);
    if (gate >= 0) nd.deps[nd.ndeps++] = (uint64_t)gate, ready = x->n[gate].end;
    if (nd.kind == X_COMP && *last_comp >= 0 && *last_comp != gate) {
        nd.deps[nd.ndeps++] = (uint64_t)*last_comp;
        if (x->n[*last_comp].end > ready) ready = x->n[*last_comp].end;
    }
    if (ready < nd.start && nd.kind != X_COMP && computing(x, ready, nd.start)) {
        x->waits++; /* waiting for its members while the GPU computes: the consumer's collective waits */
    } else if (ready < nd.start) { /* a gap no dependency explains: a delay node of its length fills it */
        xnode d = nd;
        d.kind = X_DELAY, d.span = -1, d.start = ready, d.end = nd.start;
        nd.ndeps = 0;
        nd.deps[nd.ndeps++] = (uint64_t)x->len;
        x->delays++;
        if (push(x, &d)) return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    if (nd.kind == X_COMP) *last_comp = x->len;
    return push(x, &nd) ? mt_fail(err, MT_ENOMEM, "out of memory") : MT_OK;
}

/* ---- writing -------------------------------------------------------------------------------- */

/* Chakra's collective type of a mitosis op (-1: none). */
static int32_t ck_type(mt_coll_op op) {
    switch (op) {
    case MT_COLL_ALLREDUCE: return MT_CK_ALL_REDUCE;
    case MT_COLL_ALLGATHER: return MT_CK_ALL_GATHER;
    case MT_COLL_REDUCESCATTER: return MT_CK_REDUCE_SCATTER;
    case MT_COLL_ALLTOALL: return MT_CK_ALL_TO_ALL;
    case MT_COLL_BROADCAST: return MT_CK_BROADCAST;
    case MT_COLL_REDUCE: return MT_CK_REDUCE;
    default: return -1;
    }
}

typedef struct xattrs {      /* a node's attributes, in place (no allocation) */
    ChakraProtoMsg__AttributeProto a[10];
    ChakraProtoMsg__AttributeProto *p[10];
    int n;
} xattrs;

static ChakraProtoMsg__AttributeProto *attr(xattrs *x, const char *name, ChakraProtoMsg__AttributeProto__ValueCase c) {
    ChakraProtoMsg__AttributeProto *a = &x->a[x->n];
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    a->value_case = c;
    x->p[x->n++] = a;
    return a;
}
#define ATTR_I64(x, name, v) (attr(x, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL)->int64_val = (v))
#define ATTR_I32(x, name, v) (attr(x, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL)->int32_val = (v))
#define ATTR_STR(x, name, v) (attr(x, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)->string_val = (v))
#define ATTR_BOOL(x, name, v) (attr(x, name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL)->bool_val = (v))

void mt_ckx_members(const mt_groups *g, int kind, int32_t rank, int32_t *out) {
    int32_t n = mt_group_size(g, kind);
    for (int32_t k = 0; k < n; k++) out[k] = mt_group_member(g, kind, rank, k);
    for (int32_t a = 1; a < n; a++) /* an insertion sort of a group's few members */
        for (int32_t b = a; b > 0 && out[b - 1] > out[b]; b--) {
            int32_t t = out[b];
            out[b] = out[b - 1], out[b - 1] = t;
        }
}

int32_t mt_ckx_comm_id(const mt_groups *g, int kind, int32_t rank) {
    int32_t base = 1, id = mt_group_id(g, kind, rank);
    for (int k = 0; k < kind; k++) base += mt_group_count(g, k);
    return id < 0 || mt_group_count(g, kind) == 0 ? 0 : base + id;
}

/* What to write of node i of rank r: m (pointing into x, name and pg) filled; dur_us its
 * duration_micros, deps/ndeps its dependencies (ids as written). */
static void fill(const mt_ckx_src *s, int32_t r, const xrank *xr, int64_t i, uint64_t id, uint64_t dur_us,
                 uint64_t *deps, int32_t ndeps, ChakraProtoMsg__Node *m, xattrs *x, char *name, size_t nlen,
                 char *pg, size_t plen, char *hpg, size_t hlen, char *algo, size_t alen) {
    const xnode *nd = &xr->n[i];
    const mt_task *k = nd->span >= 0 ? s->rec->spans[nd->span].task : NULL;
    chakra_proto_msg__node__init(m);
    x->n = 0;
    m->id = id;
    m->start_time_micros = (uint64_t)(nd->start / 1000000);
    m->duration_micros = nd->kind == X_RECV ? 0 : dur_us;
    static const int types[] = {[X_COMP] = MT_CK_COMP, [X_COLL] = MT_CK_COLL, [X_SEND] = MT_CK_SEND,
                                [X_RECV] = MT_CK_RECV, [X_DELAY] = MT_CK_COMP};
    m->type = (ChakraProtoMsg__NodeType)types[nd->kind];
    ATTR_BOOL(x, "is_cpu_op", 0);
    if (nd->kind == X_COMP || nd->kind == X_DELAY) ATTR_I64(x, "mitosis.duration_ps", nd->end - nd->start);
    if (nd->kind == X_DELAY) snprintf(name, nlen, "mitosis.delay"), ATTR_BOOL(x, "mitosis.delay", 1);
    else if (nd->kind == X_COMP) snprintf(name, nlen, "compute layer %d mb %d", (int)k->layer, (int)k->mb);
    if (nd->kind == X_COLL) {
        const mt_groups *g = &s->prog->groups;
        int32_t n = mt_group_size(g, k->group);
        char kn[32];
        snprintf(hpg, hlen, "%s.%d", mt_group_kind_name(g, k->group, kn, sizeof kn), (int)mt_group_id(g, k->group, r));
        snprintf(pg, plen, "%d", (int)mt_ckx_comm_id(g, k->group, r));
        snprintf(algo, alen, "%s", mt_coll_algo_name(mt_sim_coll_algo(&s->prog->plan, k->coll, n, s->ranks_per_node)));
        snprintf(name, nlen, "%s %s", mt_coll_op_name(k->coll), hpg);
        ATTR_I64(x, "comm_type", ck_type(k->coll));
        ATTR_I64(x, "comm_size", (int64_t)(k->coll == MT_COLL_ALLGATHER && n > 0 ? k->bytes / n : k->bytes));
        ATTR_STR(x, "pg_name", pg);
        ATTR_STR(x, "mitosis.pg", hpg);
        ATTR_STR(x, "mitosis.algo", algo);
        if (s->prog->plan.chunks > 0) ATTR_I32(x, "mitosis.chunks", s->prog->plan.chunks);
    }
    if (nd->kind == X_SEND || nd->kind == X_RECV) {
        int32_t src = nd->kind == X_SEND ? r : nd->peer, dst = nd->kind == X_SEND ? nd->peer : r;
        snprintf(name, nlen, "%s mb %d %d->%d", nd->kind == X_SEND ? "send" : "recv", (int)k->mb, (int)src, (int)dst);
        ATTR_I64(x, "comm_size", (int64_t)k->bytes);
        ATTR_I32(x, "comm_src", src);
        ATTR_I32(x, "comm_dst", dst);
        ATTR_I32(x, "comm_tag", k->mb * 2 + (k->dir < 0));
    }
    m->name = name;
    m->n_attr = (size_t)x->n;
    m->attr = x->p;
    m->n_data_deps = (size_t)ndeps;
    m->data_deps = deps;
}

/* A JSON string (names and pg names are plain ASCII, but quote what needs it). */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

/* The node as protobuf's JSON mapping prints it (Chakra's jsonizer: one object per message,
 * 64-bit integers as strings, enums by name, fields at their default left out). */
static void json_node(FILE *f, const ChakraProtoMsg__Node *m) {
    static const char *const types[] = {"INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE",
                                        "COMP_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE"};
    fprintf(f, "{");
    if (m->id) fprintf(f, "\"id\": \"%llu\", ", (unsigned long long)m->id);
    fprintf(f, "\"name\": ");
    json_str(f, m->name);
    fprintf(f, ", \"type\": \"%s\"", types[m->type]);
    if (m->n_data_deps) {
        fprintf(f, ", \"dataDeps\": [");
        for (size_t i = 0; i < m->n_data_deps; i++) fprintf(f, "%s\"%llu\"", i ? ", " : "", (unsigned long long)m->data_deps[i]);
        fprintf(f, "]");
    }
    if (m->start_time_micros) fprintf(f, ", \"startTimeMicros\": \"%llu\"", (unsigned long long)m->start_time_micros);
    if (m->duration_micros) fprintf(f, ", \"durationMicros\": \"%llu\"", (unsigned long long)m->duration_micros);
    fprintf(f, ", \"attr\": [");
    for (size_t i = 0; i < m->n_attr; i++) {
        const ChakraProtoMsg__AttributeProto *a = m->attr[i];
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        json_str(f, a->name);
        switch (a->value_case) {
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: fprintf(f, ", \"int64Val\": \"%lld\"}", (long long)a->int64_val); break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: fprintf(f, ", \"int32Val\": %d}", (int)a->int32_val); break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL: fprintf(f, ", \"boolVal\": %s}", a->bool_val ? "true" : "false"); break;
        default: fprintf(f, ", \"stringVal\": "), json_str(f, a->string_val), fputc('}', f);
        }
    }
    fprintf(f, "]}\n");
}

/* Writes one length-delimited message. */
static int put_msg(FILE *f, const ProtobufCMessage *m, uint8_t **buf, size_t *cap) {
    size_t n = protobuf_c_message_get_packed_size(m);
    if (n + 10 > *cap) {
        size_t c = (n + 10) * 2;
        uint8_t *nb = realloc(*buf, c);
        if (!nb) return -1;
        *buf = nb, *cap = c;
    }
    size_t at = 0;
    uint64_t v = n;
    do {
        (*buf)[at++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    protobuf_c_message_pack(m, *buf + at);
    return fwrite(*buf, 1, at + n, f) == at + n ? 0 : -1;
}

static FILE *open_out(const char *dir, int32_t r, const char *ext, char *path, size_t plen, mt_error *err) {
    snprintf(path, plen, "%s/mitosis.%d.%s", dir, (int)r, ext);
    FILE *f = fopen(path, "wb");
    if (!f) mt_fail(err, MT_EIO, "cannot write '%s': %s (choose a writable --chakra directory)", path, strerror(errno));
    return f;
}

static int is_comm(const xnode *nd) { return nd->kind == X_COLL || nd->kind == X_SEND || nd->kind == X_RECV; }

/* comm_only: per node, the latest communication nodes (at most 3) it waits for, directly or
 * through the others, into front[i * 3 ..], nfront[i]. A communication node is its own front. */
static void comm_fronts(const xrank *xr, int64_t *front, int8_t *nfront, int64_t i, int64_t *out, int32_t *nout) {
    const xnode *nd = &xr->n[i];
    *nout = 0;
    for (int32_t d = 0; d < nd->ndeps; d++) {
        int64_t p = (int64_t)nd->deps[d];
        for (int32_t k = 0; k < nfront[p]; k++) {
            int64_t c = front[p * 3 + k];
            int32_t j = 0;
            while (j < *nout && out[j] != c) j++;
            if (j < *nout) continue;
            if (*nout < 3) out[(*nout)++] = c;
            else { /* replace the earliest-ending one when c ends later */
                int32_t lo = 0;
                for (j = 1; j < 3; j++)
                    if (xr->n[out[j]].end < xr->n[out[lo]].end) lo = j;
                if (xr->n[c].end > xr->n[out[lo]].end) out[lo] = c;
            }
        }
    }
}

/* Writes rank r's nodes to DIR/mitosis.r.et (and .json). */
static mt_status write_rank(const mt_ckx_src *s, const char *dir, int32_t r, const xrank *xr, const mt_ckx_opts *o,
                            mt_ckx_stats *st, mt_error *err) {
    char path[4096], jpath[4096];
    FILE *f = open_out(dir, r, "et", path, sizeof path, err), *jf = NULL;
    if (!f) return MT_EIO;
    if (o->json && !(jf = open_out(dir, r, "json", jpath, sizeof jpath, err))) {
        fclose(f);
        return MT_EIO;
    }
    uint8_t *buf = NULL;
    size_t cap = 0;
    int64_t *front = NULL, *newid = NULL;
    int8_t *nfront = NULL;
    int bad = 0;
    if (o->comm_only) {
        front = malloc(((size_t)xr->len * 3 + 1) * sizeof *front);
        newid = malloc(((size_t)xr->len + 1) * sizeof *newid);
        nfront = malloc((size_t)xr->len + 1);
        if (!front || !newid || !nfront) bad = 2;
    }
    ChakraProtoMsg__GlobalMetadata gm;
    chakra_proto_msg__global_metadata__init(&gm);
    ChakraProtoMsg__AttributeProto conv, *convp = &conv;
    chakra_proto_msg__attribute_proto__init(&conv);
    conv.name = (char *)MT_CKX_CONVENTION_ATTR;
    conv.value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
    conv.string_val = (char *)MT_CKX_CONVENTION;
    gm.version = (char *)"0.0.4";
    gm.n_attr = 1;
    gm.attr = &convp;
    if (!bad) bad = put_msg(f, &gm.base, &buf, &cap);
    if (jf) fprintf(jf, "{\"version\": \"0.0.4\", \"attr\": [{\"name\": \"%s\", \"stringVal\": \"%s\"}]}\n",
                    MT_CKX_CONVENTION_ATTR, MT_CKX_CONVENTION);
    mt_time_ps acc = 0;   /* exact time of the GPU nodes written so far: their rounding carries */
    int64_t written = 0;
    for (int64_t i = 0; i < xr->len && !bad; i++) {
        const xnode *nd = &xr->n[i];
        ChakraProtoMsg__Node m;
        xattrs x;
        char name[128], pg[32] = "", hpg[64] = "", algo[16] = "";
        mt_time_ps d = nd->end - nd->start;
        uint64_t dur_us = (uint64_t)((d + 500000) / 1000000), deps[3];
        int32_t ndeps = nd->ndeps;
        if (nd->kind == X_COMP || nd->kind == X_DELAY) {
            dur_us = (uint64_t)((acc + d + 500000) / 1000000 - (acc + 500000) / 1000000);
            acc += d;
        }
        for (int32_t k = 0; k < ndeps; k++) deps[k] = nd->deps[k];
        if (o->comm_only) {
            int64_t c[3];
            comm_fronts(xr, front, nfront, i, c, &ndeps);
            if (!is_comm(nd)) {
                nfront[i] = (int8_t)ndeps;
                for (int32_t k = 0; k < ndeps; k++) front[i * 3 + k] = c[k];
                continue;
            }
            nfront[i] = 1, front[i * 3] = i;
            for (int32_t k = 0; k < ndeps; k++) deps[k] = (uint64_t)newid[c[k]];
            newid[i] = written;
        }
        fill(s, r, xr, i, o->comm_only ? (uint64_t)written : (uint64_t)i, dur_us, deps, ndeps, &m, &x, name,
             sizeof name, pg, sizeof pg, hpg, sizeof hpg, algo, sizeof algo);
        bad = put_msg(f, &m.base, &buf, &cap);
        if (jf) json_node(jf, &m);
        written++;
        if (nd->kind == X_DELAY) st->delays++;
    }
    free(buf);
    free(front), free(newid), free(nfront);
    st->bytes += (double)ftell(f);
    if (fclose(f) != 0 && !bad) bad = 1;
    if (jf && (ferror(jf) | fclose(jf)) && !bad) bad = 1;
    if (bad == 2) return mt_fail(err, MT_ENOMEM, "out of memory");
    if (bad) return mt_fail(err, MT_EIO, "cannot write '%s': %s (check the disk space)", path, strerror(errno));
    st->files++;
    st->nodes += written;
    st->waits += xr->waits;
    return MT_OK;
}

/* DIR/comm_groups.json: every group of every kind, by communicator id, its members in rank order. */
static mt_status write_groups(const mt_ckx_src *s, const char *dir, mt_ckx_stats *st, mt_error *err) {
    const mt_groups *g = &s->prog->groups;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, MT_CKX_COMM_GROUPS);
    FILE *f = fopen(path, "w");
    if (!f) return mt_fail(err, MT_EIO, "cannot write '%s': %s (choose a writable --chakra directory)", path,
                           strerror(errno));
    int32_t *mem = malloc(((size_t)s->n_gpus + 1) * sizeof *mem);
    uint8_t *done = calloc((size_t)s->n_gpus + 2, 1);
    const char *sep = "";
    fprintf(f, "{");
    for (int kind = 0; kind < g->n_kinds && mem && done; kind++) {
        int32_t n = mt_group_size(g, kind), count = mt_group_count(g, kind);
        if (count == 0) continue;
        memset(done, 0, (size_t)s->n_gpus + 2);
        for (int32_t r = 0; r < s->n_gpus; r++) {
            int32_t id = mt_group_id(g, kind, r);
            if (id < 0 || id >= count || done[id]) continue;
            done[id] = 1;
            mt_ckx_members(g, kind, r, mem);
            fprintf(f, "%s\n  \"%d\": [", sep, (int)mt_ckx_comm_id(g, kind, r));
            for (int32_t k = 0; k < n; k++) fprintf(f, "%s%d", k ? ", " : "", (int)mem[k]);
            fprintf(f, "]");
            sep = ",";
            st->communicators++;
        }
    }
    fprintf(f, "\n}\n");
    int oom = !mem || !done;
    free(mem), free(done);
    if ((ferror(f) | fclose(f)) || oom) {
        mt_remove_partial(path);
        return oom ? mt_fail(err, MT_ENOMEM, "out of memory")
                   : mt_fail(err, MT_EIO, "cannot write '%s': %s (check the disk space)", path, strerror(errno));
    }
    return MT_OK;
}

mt_status mt_ckx_write(const mt_ckx_src *s, const char *dir, const mt_span_filter *ranks, const mt_ckx_opts *o,
                       mt_ckx_stats *st, mt_error *err) {
    memset(st, 0, sizeof *st);
    xindex ix = {0};
    xrank xr = {0};
    mt_status rc = index_build(s, &ix, err);
    for (int32_t r = 0; r < s->n_gpus && rc == MT_OK; r++) {
        if (!mt_span_filter_rank(ranks, r)) continue;
        xr.len = xr.n_real = xr.delays = xr.waits = xr.n_comp = 0;
        for (int64_t i = ix.beg[r]; i < ix.beg[r + 1] && rc == MT_OK; i++) { /* compute spans, by start */
            const mt_span *sp = ix.span[i] >= 0 ? &s->rec->spans[ix.span[i]] : NULL;
            if (!sp || sp->kind != MT_SPAN_COMPUTE) continue;
            if (xr.n_comp == xr.cap_comp) {
                int64_t c = xr.cap_comp ? xr.cap_comp * 2 : 256;
                mt_time_ps *a = realloc(xr.cs, (size_t)c * sizeof *a);
                if (a) xr.cs = a;
                mt_time_ps *b = a ? realloc(xr.ce, (size_t)c * sizeof *b) : NULL;
                if (!b) { rc = mt_fail(err, MT_ENOMEM, "out of memory"); break; }
                xr.ce = b, xr.cap_comp = c;
            }
            xr.cs[xr.n_comp] = sp->start, xr.ce[xr.n_comp++] = sp->end;
        }
        int64_t last_comp = -1;
        for (int64_t i = ix.beg[r]; i < ix.beg[r + 1] && rc == MT_OK; i++)
            rc = add_entry(s, r, ix.span[i], &xr, &last_comp, err);
        if (rc == MT_OK) rc = write_rank(s, dir, r, &xr, o, st, err);
        if (rc != MT_OK) /* a failed export leaves no partial set: the ranks written so far go */
            for (int32_t q = 0; q <= r; q++) {
                if (!mt_span_filter_rank(ranks, q)) continue;
                char path[4096];
                for (int k = 0; k < 1 + (o->json != 0); k++) {
                    snprintf(path, sizeof path, "%s/mitosis.%d.%s", dir, (int)q, k ? "json" : "et");
                    mt_remove_partial(path);
                }
            }
    }
    if (rc == MT_OK) rc = write_groups(s, dir, st, err);
    free(xr.n);
    free(xr.real);
    free(xr.cs), free(xr.ce);
    free(ix.beg);
    free(ix.span);
    return rc;
}

/* tracer/chakra.c — reading one rank's Chakra ET into a checked graph (see chakra.h). */
#include "tracer/chakra.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra.pb-c.h"
#include "util/fileio.h"
#include "util/u64map.h"

/* ---- framing: varint lengths ------------------------------------------------------------- */

/* Reads a varint at buf[*at] (at most 10 bytes). 0 when the bytes end before its last byte or it
 * runs past 10 bytes; then *at is unchanged. */
static int read_varint(const uint8_t *buf, size_t len, size_t *at, uint64_t *out) {
    uint64_t v = 0;
    for (size_t i = 0; i < 10 && *at + i < len; i++) {
        v |= (uint64_t)(buf[*at + i] & 0x7f) << (7 * i);
        if (!(buf[*at + i] & 0x80)) {
            *at += i + 1;
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* The next length-delimited message: [*msg, *msg + *mlen), *at moved past it. */
static mt_status next_message(const char *path, const uint8_t *buf, size_t len, size_t *at, const char *what,
                              const uint8_t **msg, size_t *mlen, mt_error *err) {
    size_t start = *at;
    uint64_t n;
    if (!read_varint(buf, len, at, &n))
        return mt_fail(err, MT_EFORMAT, "%s: byte %zu: the length of %s is a truncated varint (the file is cut "
                       "short or is not a Chakra ET)", path, start, what);
    if (n > len - *at)
        return mt_fail(err, MT_EFORMAT, "%s: byte %zu: %s claims %llu bytes but only %zu are left (the file is "
                       "cut short)", path, start, what, (unsigned long long)n, len - *at);
    *msg = buf + *at;
    *mlen = (size_t)n;
    *at += (size_t)n;
    return MT_OK;
}

/* ---- attributes -------------------------------------------------------------------------- */

/* The attribute's value as a number, whatever scalar kind carries it; 0 when it is not one. */
static int attr_num(const ChakraProtoMsg__AttributeProto *a, double *out) {
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL: *out = a->double_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL: *out = a->float_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: *out = a->int32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: *out = (double)a->int64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL: *out = a->uint32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL: *out = (double)a->uint64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL: *out = a->sint32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL: *out = (double)a->sint64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL: *out = a->fixed32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL: *out = (double)a->fixed64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL: *out = a->sfixed32_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL: *out = (double)a->sfixed64_val; return 1;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL: *out = a->bool_val; return 1;
    default: return 0;
    }
}

/* v as an int32 when it is a whole number in range; -2 (no rank, tag or type) otherwise. */
static int32_t to_i32(double v) {
    return v >= -1 && v <= INT32_MAX && v == (double)(int64_t)v ? (int32_t)v : -2;
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Fills n's attribute fields from m's attributes (unknown names ignored); *mitosis set when one
 * is a mitosis.* attribute. */
static mt_status take_attrs(const ChakraProtoMsg__Node *m, mt_ck_node *n, int *mitosis, mt_error *err) {
    for (size_t i = 0; i < m->n_attr; i++) {
        const ChakraProtoMsg__AttributeProto *a = m->attr[i];
        double v = 0;
        const char *k = a->name;
        int is_pg = !strcmp(k, "pg_name");
        if (!strncmp(k, "mitosis.", 8)) *mitosis = 1;
        if (is_pg || !strcmp(k, "mitosis.algo")) {
            if (a->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL) continue;
            char **dst = is_pg ? &n->pg : &n->algo;
            free(*dst);
            if (!(*dst = dupstr(a->string_val))) return mt_fail(err, MT_ENOMEM, "out of memory");
            continue;
        }
        if (!attr_num(a, &v)) continue;
        if (!strcmp(k, "comm_type")) n->comm_type = to_i32(v);
        else if (!strcmp(k, "comm_size")) n->comm_bytes = v;
        else if (!strcmp(k, "comm_src")) n->src = to_i32(v);
        else if (!strcmp(k, "comm_dst")) n->dst = to_i32(v);
        else if (!strcmp(k, "comm_tag")) n->tag = to_i32(v);
        else if (!strcmp(k, "num_ops")) n->flops = v;
        else if (!strcmp(k, "tensor_size")) n->bytes = v;
        else if (!strcmp(k, "is_cpu_op")) n->is_cpu = v != 0;
        else if (!strcmp(k, "mitosis.duration_ps")) n->duration_ps = v >= 0 && v <= MT_CK_DURATION_MAX_PS ? (int64_t)v : -1;
        else if (!strcmp(k, "mitosis.chunks")) n->chunks = to_i32(v);
        else if (!strcmp(k, "mitosis.delay")) n->is_delay = v != 0;
    }
    return MT_OK;
}

/* ---- the graph ---------------------------------------------------------------------------- */

/* Reading state: the graph, node ids -> indices, and each dependency as an id until resolved. */
typedef struct ck_parse {
    mt_ck_graph *g;
    mt_u64map ids;
    uint64_t *dep_ids;     /* parallel to g->deps */
} ck_parse;

static mt_status grow(ck_parse *p, size_t more_deps, mt_error *err) {
    mt_ck_graph *g = p->g;
    if (g->n_nodes == g->cap_nodes) {
        if (g->cap_nodes > INT32_MAX / 2) return mt_fail(err, MT_EFORMAT, "%s: more than 1 G nodes", g->path);
        int32_t cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        mt_ck_node *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return mt_fail(err, MT_ENOMEM, "out of memory");
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    if (more_deps > (size_t)(UINT32_MAX / 2 - g->n_deps))
        return mt_fail(err, MT_EFORMAT, "%s: more than 2 G dependencies", g->path);
    if (g->n_deps + more_deps > g->cap_deps) {
        size_t cap = g->cap_deps ? g->cap_deps : 256;
        while (cap < g->n_deps + more_deps) cap *= 2;
        uint32_t *nd = realloc(g->deps, cap * sizeof *nd);
        if (nd) g->deps = nd;
        uint64_t *ni = nd ? realloc(p->dep_ids, cap * sizeof *ni) : NULL;
        if (!ni) return mt_fail(err, MT_ENOMEM, "out of memory");
        p->dep_ids = ni;
        g->cap_deps = (uint32_t)cap;
    }
    return MT_OK;
}

/* Values mitosis cannot time: refused rather than overflowing the clock. */
static mt_status check_node(const char *path, const mt_ck_node *n, mt_error *err) {
    const char *bad = n->duration_ps < 0 ? "a duration over 1000 s"
                      : !(n->comm_bytes >= 0 && n->comm_bytes <= MT_CK_COMM_MAX_BYTES) ? "a comm_size that is negative "
                        "or over 1 PB" : n->chunks < 0 || n->chunks > 1024 ? "mitosis.chunks outside 0 .. 1024"
                      : n->comm_type < -1 ? "a comm_type that is not a CollectiveCommType"
                      : n->src < -1 || n->dst < -1 || n->tag < -1 ? "a comm_src, comm_dst or comm_tag that is not a "
                        "rank or tag" : NULL;
    if (!bad) return MT_OK;
    return mt_fail(err, MT_EFORMAT, "%s: node %llu (\"%s\") has %s", path, (unsigned long long)n->id, n->name, bad);
}

/* Appends the node m, its dependencies as ids (resolved by resolve()). */
static mt_status add_node(ck_parse *p, const ChakraProtoMsg__Node *m, mt_error *err) {
    mt_ck_graph *g = p->g;
    if (mt_u64map_get(&p->ids, m->id, NULL))
        return mt_fail(err, MT_EFORMAT, "%s: node id %llu appears twice (ids must be unique within a file)",
                       g->path, (unsigned long long)m->id);
    MT_CHECK(mt_u64map_put(&p->ids, m->id, g->n_nodes, err));
    MT_CHECK(grow(p, m->n_ctrl_deps + m->n_data_deps, err));
    mt_ck_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->id = m->id;
    n->type = (int32_t)m->type;
    n->duration_ps = m->duration_micros <= MT_CK_DURATION_MAX_PS / 1000000 ? (int64_t)m->duration_micros * 1000000 : -1;
    n->micros = m->duration_micros <= MT_CK_DURATION_MAX_PS / 1000000 ? (int64_t)m->duration_micros : -1;
    n->comm_type = n->src = n->dst = n->tag = -1;
    n->dep_begin = g->n_deps;
    g->n_nodes++; /* from here on mt_ck_graph_free releases its strings */
    if (!(n->name = dupstr(m->name ? m->name : ""))) return mt_fail(err, MT_ENOMEM, "out of memory");
    MT_CHECK(take_attrs(m, n, &g->foreign_attrs, err));
    MT_CHECK(check_node(g->path, n, err));
    for (size_t i = 0; i < m->n_ctrl_deps; i++) p->dep_ids[g->n_deps++] = m->ctrl_deps[i];
    for (size_t i = 0; i < m->n_data_deps; i++) p->dep_ids[g->n_deps++] = m->data_deps[i];
    n->ndeps = g->n_deps - n->dep_begin;
    return MT_OK;
}

/* Dependency ids to node indices; a missing id is an error naming both nodes. */
static mt_status resolve(ck_parse *p, mt_error *err) {
    mt_ck_graph *g = p->g;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const mt_ck_node *n = &g->nodes[i];
        for (uint32_t k = n->dep_begin; k < n->dep_begin + n->ndeps; k++) {
            int64_t at;
            if (!mt_u64map_get(&p->ids, p->dep_ids[k], &at))
                return mt_fail(err, MT_EFORMAT, "%s: node %llu (\"%s\") depends on node %llu, which the file does "
                               "not have (a missing or truncated node)", g->path, (unsigned long long)n->id, n->name,
                               (unsigned long long)p->dep_ids[k]);
            g->deps[k] = (uint32_t)at;
        }
    }
    return MT_OK;
}

/* Kahn's order into g->order (ties by file order: a FIFO of ready nodes); a cycle is an error
 * naming a node on it. O(nodes + dependencies). */
static mt_status topo_order(mt_ck_graph *g, mt_error *err) {
    size_t n = (size_t)g->n_nodes;
    int32_t *indeg = calloc(n + 1, sizeof *indeg), *cbeg = calloc(n + 1, sizeof *cbeg);
    uint32_t *child = malloc(((size_t)g->n_deps + 1) * sizeof *child);
    g->order = malloc((n + 1) * sizeof *g->order);
    mt_status rc = indeg && cbeg && child && g->order ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    for (size_t i = 0; i < n && rc == MT_OK; i++) { /* children in CSR: cbeg[d] .. cbeg[d + 1] */
        indeg[i] = (int32_t)g->nodes[i].ndeps;
        for (uint32_t k = 0; k < g->nodes[i].ndeps; k++) cbeg[g->deps[g->nodes[i].dep_begin + k] + 1]++;
    }
    for (size_t i = 0; i < n && rc == MT_OK; i++) cbeg[i + 1] += cbeg[i];
    for (size_t i = 0; i < n && rc == MT_OK; i++)
        for (uint32_t k = 0; k < g->nodes[i].ndeps; k++) child[cbeg[g->deps[g->nodes[i].dep_begin + k]]++] = (uint32_t)i;
    for (size_t i = n; i > 0 && rc == MT_OK; i--) cbeg[i] = cbeg[i - 1]; /* undo the fill's shift */
    if (rc == MT_OK) cbeg[0] = 0;
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n && rc == MT_OK; i++)
        if (indeg[i] == 0) g->order[tail++] = (int32_t)i;
    while (rc == MT_OK && head < tail) {
        int32_t v = g->order[head++];
        for (int32_t k = cbeg[v]; k < cbeg[v + 1]; k++)
            if (--indeg[child[k]] == 0) g->order[tail++] = (int32_t)child[k];
    }
    if (rc == MT_OK && tail < n) {
        size_t i = 0;
        while (indeg[i] == 0) i++;
        rc = mt_fail(err, MT_EFORMAT, "%s: the dependencies form a cycle (node %llu \"%s\" waits, directly or "
                     "not, for itself)", g->path, (unsigned long long)g->nodes[i].id, g->nodes[i].name);
    }
    free(indeg);
    free(cbeg);
    free(child);
    return rc;
}

static mt_status parse_nodes(ck_parse *p, const uint8_t *buf, size_t len, size_t at, mt_error *err) {
    mt_ck_graph *g = p->g;
    while (at < len) {
        const uint8_t *msg;
        size_t mlen, start = at;
        char what[48];
        snprintf(what, sizeof what, "node %d", (int)g->n_nodes);
        MT_CHECK(next_message(g->path, buf, len, &at, what, &msg, &mlen, err));
        ChakraProtoMsg__Node *m = chakra_proto_msg__node__unpack(NULL, mlen, msg);
        if (!m)
            return mt_fail(err, MT_EFORMAT, "%s: byte %zu: node %d is not a Chakra Node message (a field of the "
                           "wrong type, or damaged bytes)", g->path, start, (int)g->n_nodes);
        mt_status rc = add_node(p, m, err);
        chakra_proto_msg__node__free_unpacked(m, NULL);
        MT_CHECK(rc);
    }
    return MT_OK;
}

mt_status mt_ck_parse(const char *path, const uint8_t *buf, size_t len, mt_ck_graph *g, mt_error *err) {
    memset(g, 0, sizeof *g);
    ck_parse p = {g, {0}, NULL};
    mt_u64map_init(&p.ids);
    mt_status rc = (g->path = dupstr(path)) ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    size_t at = 0;
    const uint8_t *msg = NULL;
    size_t mlen = 0;
    int convention = 0;
    if (rc == MT_OK && len == 0) rc = mt_fail(err, MT_EFORMAT, "%s: empty file (a Chakra ET starts with its "
                                              "GlobalMetadata)", path);
    if (rc == MT_OK) rc = next_message(path, buf, len, &at, "the GlobalMetadata", &msg, &mlen, err);
    if (rc == MT_OK) {
        ChakraProtoMsg__GlobalMetadata *gm = chakra_proto_msg__global_metadata__unpack(NULL, mlen, msg);
        if (!gm) rc = mt_fail(err, MT_EFORMAT, "%s: byte 0: the first message is not a Chakra GlobalMetadata (a "
                              "field of the wrong type, or not a Chakra ET)", path);
        else snprintf(g->version, sizeof g->version, "%s", gm->version ? gm->version : "");
        for (size_t i = 0; gm && rc == MT_OK && i < gm->n_attr; i++) {
            const ChakraProtoMsg__AttributeProto *a = gm->attr[i];
            if (strcmp(a->name, "comm_size_convention")) continue;
            if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL && !strcmp(a->string_val, "chakra"))
                convention = 1;
            else
                rc = mt_fail(err, MT_EFORMAT, "%s: GlobalMetadata attribute comm_size_convention is not \"chakra\" "
                             "(the only size convention mitosis knows: all-gather comm_size = each rank's input)", path);
        }
        if (gm) chakra_proto_msg__global_metadata__free_unpacked(gm, NULL);
    }
    if (rc == MT_OK) rc = parse_nodes(&p, buf, len, at, err);
    if (rc == MT_OK) g->ag_input = convention || !g->foreign_attrs;
    if (rc == MT_OK) rc = resolve(&p, err);
    if (rc == MT_OK) rc = topo_order(g, err);
    mt_u64map_destroy(&p.ids);
    free(p.dep_ids);
    if (rc != MT_OK) mt_ck_graph_free(g);
    return rc;
}

mt_status mt_ck_read(const char *path, mt_ck_graph *g, mt_error *err) {
    char *buf = NULL;
    size_t len = 0;
    memset(g, 0, sizeof *g);
    MT_CHECK(mt_read_file(path, &buf, &len, err));
    mt_status rc = mt_ck_parse(path, (const uint8_t *)buf, len, g, err);
    free(buf);
    return rc;
}

void mt_ck_graph_free(mt_ck_graph *g) {
    if (!g) return;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        free(g->nodes[i].name);
        free(g->nodes[i].pg);
        free(g->nodes[i].algo);
    }
    free(g->nodes);
    free(g->deps);
    free(g->order);
    free(g->path);
    memset(g, 0, sizeof *g);
}

mt_sniff mt_ck_sniff(const char *head, size_t len) {
    const uint8_t *b = (const uint8_t *)head;
    size_t at = 0;
    uint64_t mlen, vlen;
    if (!read_varint(b, len, &at, &mlen)) return len < 10 ? MT_SNIFF_MORE : MT_SNIFF_NO;
    if (at >= len) return MT_SNIFF_MORE;
    if (b[at] != 0x0a || mlen < 2) return MT_SNIFF_NO; /* field 1 (version), length-delimited */
    at++;
    if (!read_varint(b, len, &at, &vlen)) return MT_SNIFF_MORE;
    if (vlen == 0 || vlen > 16 || vlen + 2 > mlen) return MT_SNIFF_NO;
    for (uint64_t i = 0; i < vlen; i++) {
        if (at + i >= len) return MT_SNIFF_MORE;
        char c = (char)b[at + i];
        if (!((c >= '0' && c <= '9') || c == '.')) return MT_SNIFF_NO;
    }
    return MT_SNIFF_YES;
}

const char *mt_ck_comm_name(int32_t comm_type) {
    static const char *const names[] = {"ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER", "BROADCAST",
                                        "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};
    return comm_type >= 0 && comm_type < (int32_t)(sizeof names / sizeof *names) ? names[comm_type] : "?";
}

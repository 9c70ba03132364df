/* tracer/et.c — the Execution Trace reader: recognises an ET by its first bytes and reads it
 * into flat node and tensor arrays (et.h), plus the node-tree questions of et.h.
 *
 * A tensor value is `[tensor_id, storage_id, offset, numel, itemsize, device]`; lists of
 * tensors (GenericList[Tensor(..)...]) are walked recursively. Cost: O(nodes + values + n log n).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/et.h"
#include "tracer/limits.h"
#include "tracer/opclass.h"
#include "tracer/reader.h"
#include "util/fileio.h"
#include "util/jtree.h"
#include "util/vec.h"

/* ---- the reader ------------------------------------------------------------------------- */

/* An object with a "nodes" array and a "schema" or "pid" member. */
static mt_sniff sniff(const char *head, size_t len) {
    const char *end = head + len, *v;
    mt_sniff nodes = mt_sniff_json_member(head, end, "nodes", &v);
    if (nodes != MT_SNIFF_YES) return nodes;
    if (*v != '[') return MT_SNIFF_NO;
    mt_sniff schema = mt_sniff_json_member(head, end, "schema", &v), pid = mt_sniff_json_member(head, end, "pid", &v);
    if (schema == MT_SNIFF_YES || pid == MT_SNIFF_YES) return MT_SNIFF_YES;
    return schema == MT_SNIFF_MORE || pid == MT_SNIFF_MORE ? MT_SNIFF_MORE : MT_SNIFF_NO;
}

static mt_status load(const char *path, trace_strpool *pool, mt_trace_parts *parts, mt_error *err) {
    return mt_et_read(path, pool, &parts->jopts, &parts->graph, err);
}

const mt_trace_reader mt_reader_et = {"execution-trace-json", MT_PART_GRAPH, ".json .json.gz .gz", sniff, load};

void mt_et_free(et_data *e) {
    free(e->nodes);
    free(e->vals);
    free(e->dims);
    mt_u64map_destroy(&e->by_id);
    memset(e, 0, sizeof *e);
}

/* ---- tensor values ---------------------------------------------------------------------- */

static int is_tensor_value(const mt_jt *v) {
    if (!mt_jt_is_array(v) || mt_jt_size(v) != 6) return 0;
    for (size_t i = 0; i < 5; i++)
        if (!mt_jt_is_int(mt_jt_at(v, i))) return 0;
    return mt_jt_is_string(mt_jt_at(v, 5));
}

/* dtype inside the first "Tensor(...)" of a type string, interned; NULL when absent. */
static const char *dtype_of(trace_strpool *pool, const char *type) {
    if (!type) return NULL;
    const char *p = strstr(type, "Tensor(");
    if (!p) return NULL;
    p += 7;
    const char *q = strchr(p, ')');
    if (!q) return NULL;
    return mt_strpool_intern(pool, p, q - p);
}

typedef struct walk_ctx {
    et_data *e;
    trace_strpool *pool;
    int32_t arg;
    const char *side; /* "inputs" or "outputs", for messages */
    int failed;       /* 1: out of memory, 2: a value out of range (why) */
    char why[160];
} walk_ctx;

/* Refuses a tensor value whose element count, item size or shape is out of range. */
static int tensor_value_bad(walk_ctx *w, const mt_jt *v, const mt_jt *shape) {
    int64_t numel = mt_jt_int(mt_jt_at(v, 3)), isz = mt_jt_int(mt_jt_at(v, 4));
    if (numel < 0 || numel > TRACE_MAX_NUMEL || isz < 0 || isz > TRACE_MAX_ITEMSIZE) {
        snprintf(w->why, sizeof w->why, "%s[%d]: tensor with %lld elements of %lld bytes (want 0..1e12 "
                 "elements of 0..%d bytes)", w->side, (int)w->arg, (long long)numel, (long long)isz,
                 TRACE_MAX_ITEMSIZE);
        return 1;
    }
    size_t i;
    const mt_jt *d;
    for (i = 0; i < mt_jt_size(shape) && (d = mt_jt_at(shape, i)); i++)
        if (mt_jt_is_int(d) && (mt_jt_int(d) < 0 || mt_jt_int(d) > TRACE_MAX_NUMEL)) {
            snprintf(w->why, sizeof w->why, "%s[%d]: shape dimension %zu is %lld (want 0..1e12)",
                     w->side, (int)w->arg, i, (long long)mt_jt_int(d));
            return 1;
        }
    return 0;
}

static void walk_value(walk_ctx *w, const mt_jt *v, const mt_jt *shape, const char *type) {
    if (w->failed) return;
    if (is_tensor_value(v)) {
        if (tensor_value_bad(w, v, shape)) {
            w->failed = 2;
            return;
        }
        et_data *e = w->e;
        if (mt_vec_reserve(&e->vals, &e->cap_vals, e->n_vals + 1)) {
            w->failed = 1;
            return;
        }
        et_val *x = &e->vals[e->n_vals++];
        x->tid_ = (int64_t)mt_jt_int(mt_jt_at(v, 0));
        x->storage = (int64_t)mt_jt_int(mt_jt_at(v, 1));
        x->offset = (int64_t)mt_jt_int(mt_jt_at(v, 2));
        x->numel = (int64_t)mt_jt_int(mt_jt_at(v, 3));
        x->itemsize = (int32_t)mt_jt_int(mt_jt_at(v, 4));
        x->device = mt_strpool_intern(w->pool, mt_jt_str(mt_jt_at(v, 5)), -1);
        x->dtype = dtype_of(w->pool, type);
        x->arg = w->arg;
        x->shape_off = (int32_t)e->n_dims;
        x->ndim = 0;
        if (mt_jt_is_array(shape)) {
            size_t n = mt_jt_size(shape);
            if (mt_vec_reserve(&e->dims, &e->cap_dims, e->n_dims + (int64_t)n)) {
                w->failed = 1;
                return;
            }
            for (size_t i = 0; i < n; i++) {
                const mt_jt *d = mt_jt_at(shape, i);
                if (!mt_jt_is_int(d)) break;
                e->dims[e->n_dims++] = (int64_t)mt_jt_int(d);
                x->ndim++;
            }
        }
        return;
    }
    if (mt_jt_is_array(v) && (!type || strstr(type, "Tensor"))) {
        size_t i;
        const mt_jt *el;
        for (i = 0; i < mt_jt_size(v) && (el = mt_jt_at(v, i)); i++) {
            const mt_jt *sh = mt_jt_is_array(shape) ? mt_jt_at(shape, i) : NULL;
            walk_value(w, el, sh, type);
        }
    }
}

/* Walks parallel values/shapes/types arrays; returns the number of tensors appended. */
static int walk_args(walk_ctx *w, const mt_jt *values, const mt_jt *shapes, const mt_jt *types) {
    int64_t before = w->e->n_vals;
    size_t i;
    const mt_jt *v;
    for (i = 0; i < mt_jt_size(values) && (v = mt_jt_at(values, i)); i++) {
        w->arg = (int32_t)i;
        const mt_jt *sh = mt_jt_is_array(shapes) ? mt_jt_at(shapes, i) : NULL;
        const char *ty = mt_jt_is_array(types) ? mt_jt_str(mt_jt_at(types, i)) : NULL;
        walk_value(w, v, sh, ty);
    }
    return (int)(w->e->n_vals - before);
}

static int64_t geti(const mt_jt *o, const char *key, int64_t dflt) {
    const mt_jt *v = mt_jt_get(o, key);
    return mt_jt_is_int(v) ? (int64_t)mt_jt_int(v) : dflt;
}

static int cmp_node_id(const void *a, const void *b) {
    const et_node *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int32_t et_group_size(const mt_jt *v) { return mt_jt_is_int(v) ? trace_group_size_of(mt_jt_int(v)) : 0; }

/* Group size of a record_param_comms node: pg_size attr, else the last integer input. */
static void comm_info(et_node *n, const mt_jt *attrs, const mt_jt *values, trace_strpool *pool) {
    n->comm_group = 0;
    n->comm_name = NULL;
    size_t i;
    const mt_jt *a;
    if (mt_jt_is_array(attrs)) {
        for (i = 0; i < mt_jt_size(attrs) && (a = mt_jt_at(attrs, i)); i++) {
            const char *an = mt_jt_str(mt_jt_get(a, "name"));
            if (!an) continue;
            const mt_jt *val = mt_jt_get(a, "value");
            if (!strcmp(an, "pg_size") && et_group_size(val))
                n->comm_group = et_group_size(val);
            else if (!strcmp(an, "collective_name") && mt_jt_is_string(val))
                n->comm_name = mt_strpool_intern(pool, mt_jt_str(val), -1);
        }
    }
    if (!mt_jt_is_array(values)) return;
    const mt_jt *v;
    for (i = 0; i < mt_jt_size(values) && (v = mt_jt_at(values, i)); i++) {
        if (!n->comm_name && mt_jt_is_string(v) &&
            mt_opclass_comm_of(mt_jt_str(v)) != TRACE_COMM_NONE)
            n->comm_name = mt_strpool_intern(pool, mt_jt_str(v), -1);
    }
    if (!n->comm_group && !strcmp(n->name, "record_param_comms")) {
        size_t len = mt_jt_size(values);
        if (len > 0) n->comm_group = et_group_size(mt_jt_at(values, len - 1));
    }
}

/* ---- nodes ------------------------------------------------------------------------------ */

/* Integer node fields: by key in the 1.0.1 layout, by attrs name in the chakra layout. */
typedef struct id_field {
    const char *key;
    size_t off;
} id_field;

static const id_field legacy_ids[] = {
    {"parent", offsetof(et_node, parent)}, {"rf_id", offsetof(et_node, rf_id)}, {"seq_id", offsetof(et_node, seq)},
    {"fw_parent", offsetof(et_node, fw_parent)}, {"tid", offsetof(et_node, tid)},
};
static const id_field chakra_ids[] = {
    {"rf_id", offsetof(et_node, rf_id)}, {"seq_id", offsetof(et_node, seq)},
    {"fw_parent", offsetof(et_node, fw_parent)}, {"tid", offsetof(et_node, tid)},
};

static int64_t *id_slot(et_node *x, const id_field *f) { return (int64_t *)((char *)x + f->off); }

/* A node's inputs ([0]) and outputs ([1]): values, shapes and types. */
typedef struct node_args {
    const mt_jt *vals[2], *shapes[2], *types[2];
} node_args;

static void chakra_node(et_node *x, const mt_jt *jn, const mt_jt *attrs, node_args *a) {
    x->parent = geti(jn, "ctrl_deps", -1);
    for (size_t f = 0; f < sizeof chakra_ids / sizeof *chakra_ids; f++) *id_slot(x, &chakra_ids[f]) = -1;
    size_t j;
    const mt_jt *at;
    for (j = 0; j < mt_jt_size(attrs) && (at = mt_jt_at(attrs, j)); j++) {
        const char *an = mt_jt_str(mt_jt_get(at, "name"));
        const mt_jt *av = mt_jt_get(at, "value");
        if (!an || !mt_jt_is_int(av)) continue;
        for (size_t f = 0; f < sizeof chakra_ids / sizeof *chakra_ids; f++)
            if (!strcmp(an, chakra_ids[f].key)) {
                *id_slot(x, &chakra_ids[f]) = (int64_t)mt_jt_int(av);
                break;
            }
    }
    static const char *const sides[2] = {"inputs", "outputs"};
    for (int s = 0; s < 2; s++) {
        const mt_jt *side = mt_jt_get(jn, sides[s]);
        a->vals[s] = mt_jt_get(side, "values");
        a->shapes[s] = mt_jt_get(side, "shapes");
        a->types[s] = mt_jt_get(side, "types");
    }
}

static void legacy_node(et_node *x, const mt_jt *jn, node_args *a) {
    for (size_t f = 0; f < sizeof legacy_ids / sizeof *legacy_ids; f++)
        *id_slot(x, &legacy_ids[f]) = geti(jn, legacy_ids[f].key, -1);
    a->vals[0] = mt_jt_get(jn, "inputs");
    a->shapes[0] = mt_jt_get(jn, "input_shapes");
    a->types[0] = mt_jt_get(jn, "input_types");
    a->vals[1] = mt_jt_get(jn, "outputs");
    a->shapes[1] = mt_jt_get(jn, "output_shapes");
    a->types[1] = mt_jt_get(jn, "output_types");
}

/* Reads nodes[i] into the next slot of e->nodes (reserved by the caller). */
static mt_status read_node(const char *path, size_t i, const mt_jt *jn, walk_ctx *w, mt_error *err) {
    et_data *e = w->e;
    if (!mt_jt_is_object(jn)) return mt_fail(err, MT_EFORMAT, "%s: nodes[%zu] is not an object", path, i);
    const mt_jt *jid = mt_jt_get(jn, "id"), *jname = mt_jt_get(jn, "name");
    if (!mt_jt_is_int(jid) || !mt_jt_is_string(jname))
        return mt_fail(err, MT_EFORMAT, "%s: nodes[%zu] lacks an integer \"id\" or a string \"name\"", path, i);
    et_node *x = &e->nodes[e->n_nodes++];
    memset(x, 0, sizeof *x);
    x->id = (int64_t)mt_jt_int(jid);
    x->name = mt_strpool_intern(w->pool, mt_jt_str(jname), -1);
    if (!x->name) return MT_ENOMEM;
    x->is_meta = strncmp(x->name, "[pytorch|profiler|", 18) == 0;
    x->first_child = x->next_sibling = -1;
    const mt_jt *attrs = mt_jt_get(jn, "attrs");
    node_args a;
    if (mt_jt_is_object(mt_jt_get(jn, "inputs")) || mt_jt_is_array(attrs) || mt_jt_get(jn, "ctrl_deps"))
        chakra_node(x, jn, attrs, &a);
    else
        legacy_node(x, jn, &a);
    if ((a.vals[0] && !mt_jt_is_array(a.vals[0])) || (a.vals[1] && !mt_jt_is_array(a.vals[1])))
        return mt_fail(err, MT_EFORMAT, "%s: nodes[%zu] (id %ld): inputs/outputs are not lists", path, i,
                       (long)x->id);
    x->in_first = (int32_t)e->n_vals;
    w->side = "inputs";
    x->in_count = a.vals[0] ? walk_args(w, a.vals[0], a.shapes[0], a.types[0]) : 0;
    w->side = "outputs";
    x->out_first = (int32_t)e->n_vals;
    x->out_count = a.vals[1] ? walk_args(w, a.vals[1], a.shapes[1], a.types[1]) : 0;
    if (w->failed == 2)
        return mt_fail(err, MT_EFORMAT, "%s: nodes[%zu] (id %ld, %s): %s (is the file damaged?)", path, i,
                       (long)x->id, x->name, w->why);
    if (w->failed) return MT_ENOMEM;
    if (mt_opclass_is_comm_name(x->name)) comm_info(x, attrs, a.vals[0], w->pool);
    return MT_OK;
}

/* Sorts nodes by id, maps ids and links each node's children in id order. */
static mt_status index_nodes(const char *path, et_data *e, mt_error *err) {
    qsort(e->nodes, (size_t)e->n_nodes, sizeof *e->nodes, cmp_node_id);
    for (int64_t k = 0; k < e->n_nodes; k++) {
        if (mt_u64map_get(&e->by_id, (uint64_t)e->nodes[k].id, NULL))
            return mt_fail(err, MT_EFORMAT, "%s: node id %ld appears twice", path, (long)e->nodes[k].id);
        if (mt_u64map_put(&e->by_id, (uint64_t)e->nodes[k].id, k, NULL) != MT_OK) return MT_ENOMEM;
    }
    /* Children in id order: walk backwards, pushing to the front of each parent's list. */
    for (int64_t k = e->n_nodes - 1; k >= 0; k--) {
        int64_t p;
        if (e->nodes[k].parent >= 0 && e->nodes[k].parent != e->nodes[k].id &&
            mt_u64map_get(&e->by_id, e->nodes[k].parent, &p)) {
            e->nodes[k].next_sibling = e->nodes[p].first_child;
            e->nodes[p].first_child = (int32_t)k;
        }
    }
    return MT_OK;
}

/* ---- the file: one node at a time ------------------------------------------------------- */

/* The reading of one file, an mt_jsax handler: each element of the root's "nodes" is built as a
 * small tree in a reused arena (util/jtree.h: no malloc per value) and read by read_node, then
 * dropped; "schema" is kept. */
typedef struct etreader {
    const char *path;
    mt_error *err;
    walk_ctx w;
    int64_t depth, index;
    int root_object, key_nodes, key_schema, saw_nodes, in_nodes, building;
    mt_jtb jb;
    const char *schema;   /* interned */
} etreader;

static int et_oom(etreader *r) {
    mt_fail(r->err, MT_ENOMEM, "%s: out of memory reading Execution Trace", r->path);
    return 0;
}

/* The node being built is complete: read it. */
static int node_done(etreader *r) {
    if (!mt_jtb_finished(&r->jb) && !r->jb.failed) return 1;
    r->building = 0;
    const mt_jt *jn = mt_jtb_value(&r->jb);
    et_data *e = r->w.e;
    if (!jn || mt_vec_reserve(&e->nodes, &e->cap_nodes, e->n_nodes + 1)) return et_oom(r);
    mt_status rc = read_node(r->path, (size_t)r->index++, jn, &r->w, r->err);
    mt_jtb_reset(&r->jb);
    if (rc == MT_ENOMEM) return et_oom(r);
    return rc == MT_OK;
}

static int et_value(void *c, const mt_jv *v) {
    etreader *r = c;
    if (r->building || (r->in_nodes && r->depth == 2)) {
        r->building = 1;
        return mt_jtb_sax.value(&r->jb, v) ? node_done(r) : et_oom(r);
    }
    if (r->depth == 1 && r->root_object && r->key_schema && v->type == MT_JV_STRING &&
        !(r->schema = mt_strpool_intern(r->w.pool, v->s, -1)))
        return et_oom(r);
    return 1;
}

static int et_open(etreader *r, int is_map) {
    if (r->building || (r->in_nodes && r->depth == 2)) {
        r->building = 1;
        r->depth++;
        return (is_map ? mt_jtb_sax.start_map(&r->jb) : mt_jtb_sax.start_array(&r->jb)) ? 1 : et_oom(r);
    }
    if (r->depth == 0) r->root_object = is_map;
    if (r->depth == 1 && r->root_object && r->key_nodes && !is_map) r->in_nodes = r->saw_nodes = 1;
    r->depth++;
    return 1;
}

static int et_start_map(void *c) { return et_open(c, 1); }
static int et_start_array(void *c) { return et_open(c, 0); }

static int et_close(void *c) {
    etreader *r = c;
    r->depth--;
    if (r->building) return mt_jtb_sax.end_map(&r->jb) ? node_done(r) : et_oom(r);
    if (r->depth == 1 && r->in_nodes) r->in_nodes = 0;
    return 1;
}

static int et_key(void *c, const char *k, size_t len) {
    etreader *r = c;
    if (r->building) return mt_jtb_sax.key(&r->jb, k, len) ? 1 : et_oom(r);
    if (r->depth == 1 && r->root_object) {
        r->key_nodes = !strcmp(k, "nodes");
        r->key_schema = !strcmp(k, "schema");
    }
    return 1;
}

static const mt_jsax et_sax = {et_value, et_start_map, et_key, et_close, et_start_array, et_close};

static mt_status read_file(etreader *r, const mt_jstream_opts *opts) {
    et_data *e = r->w.e;
    MT_CHECK(mt_jstream_file(r->path, &et_sax, r, opts, r->err));
    if (!r->saw_nodes) return mt_fail(r->err, MT_EFORMAT, "%s: no \"nodes\" array: not an Execution Trace", r->path);
    e->schema = r->schema ? r->schema : mt_strpool_intern(r->w.pool, "unknown", -1);
    if (!e->schema) return et_oom(r), MT_ENOMEM;
    if (e->n_nodes == 0) return mt_fail(r->err, MT_EFORMAT, "%s: Execution Trace has no nodes", r->path);
    mt_status rc = index_nodes(r->path, e, r->err);
    return rc == MT_ENOMEM ? mt_fail(r->err, MT_ENOMEM, "%s: out of memory reading Execution Trace", r->path) : rc;
}

mt_status mt_et_read(const char *path, trace_strpool *pool, const mt_jstream_opts *opts, et_data *e, mt_error *err) {
    memset(e, 0, sizeof *e);
    mt_u64map_init(&e->by_id);
    etreader r = {.path = path, .err = err, .w = {.e = e, .pool = pool}};
    mt_jtb_init(&r.jb);
    mt_status rc = read_file(&r, opts);
    mt_jtb_free(&r.jb);
    if (rc != MT_OK) mt_et_free(e);
    return rc;
}

/* ---- the node tree ---------------------------------------------------------------------- */

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

int64_t mt_et_op_count(const et_data *e) {
    int64_t n = 0;
    for (int64_t j = 0; j < e->n_nodes; j++) n += !e->nodes[j].is_meta;
    return n;
}

int mt_et_profiler_step(const et_data *e) {
    const char *prefix = "ProfilerStep#";
    int step = -1;
    for (int64_t j = 0; j < e->n_nodes; j++) {
        const char *name = e->nodes[j].name;
        if (e->nodes[j].is_meta || !name || strncmp(name, prefix, strlen(prefix))) continue;
        int n = atoi(name + strlen(prefix));
        if (n < 0 || (step >= 0 && n != step)) return -1; /* two steps: none is "the" step */
        step = n;
    }
    return step;
}

int mt_et_is_region(const et_data *e, const et_node *n) {
    (void)e;
    return !n->is_meta && n->first_child >= 0 && !strstr(n->name, "::") && !mt_opclass_is_comm_name(n->name);
}

static const char *kind_at(const et_data *e, int32_t j, int depth) {
    const et_node *n = &e->nodes[j];
    if (starts(n->name, "aten::") || starts(n->name, "c10d::") || starts(n->name, "nccl:")) return n->name;
    if (depth > 8) return NULL;
    for (int32_t c = n->first_child; c >= 0; c = e->nodes[c].next_sibling) {
        const char *r = kind_at(e, c, depth + 1);
        if (r) return r;
    }
    return NULL;
}

const char *mt_et_kind(const et_data *e, int32_t j) { return kind_at(e, j, 0); }

static void comm_at(const et_data *e, int32_t j, int depth, trace_comm *kind, int32_t *group, double *bytes) {
    const et_node *n = &e->nodes[j];
    if (*kind == TRACE_COMM_NONE) *kind = mt_opclass_comm_of(n->name);
    if (*bytes <= 0 && (!strcmp(n->name, "record_param_comms") || starts(n->name, "nccl:") ||
                        starts(n->name, "gloo:")))
        for (int32_t v = 0; v < n->in_count; v++)
            *bytes += (double)e->vals[n->in_first + v].numel * e->vals[n->in_first + v].itemsize;
    if ((*kind == TRACE_COMM_NONE || *kind == TRACE_COMM_OTHER) && n->comm_name) {
        trace_comm c = mt_opclass_comm_of(n->comm_name);
        if (c != TRACE_COMM_NONE) *kind = c;
    }
    if (!*group && n->comm_group) *group = n->comm_group;
    if (depth > 6) return;
    for (int32_t c = n->first_child; c >= 0; c = e->nodes[c].next_sibling) comm_at(e, c, depth + 1, kind, group, bytes);
}

void mt_et_comm(const et_data *e, int32_t j, trace_comm *kind, int32_t *group, double *bytes) {
    comm_at(e, j, 0, kind, group, bytes);
}

/* tracer/et.c — reads a PyTorch Execution Trace (ET) into flat node and tensor arrays.
 *
 * Two layouts are accepted:
 *  - schema 1.0.1: node fields `parent`, `rf_id`, `seq_id`, `tid`, `fw_parent`, and parallel
 *    lists `inputs` / `input_shapes` / `input_types` (same for outputs);
 *  - 1.0.2-chakra … 1.1.x: `ctrl_deps` for the parent, `inputs: {values, shapes, types}` and
 *    `attrs: [{name, type, value}]` holding rf_id, seq_id, tid, collective attributes.
 * A tensor value is `[tensor_id, storage_id, offset, numel, itemsize, device]`; lists of
 * tensors (GenericList[Tensor(..)...]) are walked recursively. Nodes are sorted by id and
 * children are linked in id order. Cost: O(nodes + values + n log n).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/internal.h"
#include "util/vec.h"

int mt_et_detect(json_t *root) {
    return json_is_object(root) && json_is_array(json_object_get(root, "nodes")) &&
           (json_object_get(root, "schema") || json_object_get(root, "pid"));
}

void mt_et_free(et_data *e) {
    free(e->nodes);
    free(e->vals);
    free(e->dims);
    mt_u64map_destroy(&e->by_id);
    memset(e, 0, sizeof *e);
}

static int is_tensor_value(json_t *v) {
    if (!json_is_array(v) || json_array_size(v) != 6) return 0;
    for (size_t i = 0; i < 5; i++)
        if (!json_is_integer(json_array_get(v, i))) return 0;
    return json_is_string(json_array_get(v, 5));
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
static int tensor_value_bad(walk_ctx *w, json_t *v, json_t *shape) {
    json_int_t numel = json_integer_value(json_array_get(v, 3)), isz = json_integer_value(json_array_get(v, 4));
    if (numel < 0 || numel > TRACE_MAX_NUMEL || isz < 0 || isz > TRACE_MAX_ITEMSIZE) {
        snprintf(w->why, sizeof w->why, "%s[%d]: tensor with %lld elements of %lld bytes (want 0..1e12 "
                 "elements of 0..%d bytes)", w->side, (int)w->arg, (long long)numel, (long long)isz,
                 TRACE_MAX_ITEMSIZE);
        return 1;
    }
    size_t i;
    json_t *d;
    json_array_foreach(shape, i, d)
        if (json_is_integer(d) && (json_integer_value(d) < 0 || json_integer_value(d) > TRACE_MAX_NUMEL)) {
            snprintf(w->why, sizeof w->why, "%s[%d]: shape dimension %zu is %lld (want 0..1e12)",
                     w->side, (int)w->arg, i, (long long)json_integer_value(d));
            return 1;
        }
    return 0;
}

static void walk_value(walk_ctx *w, json_t *v, json_t *shape, const char *type) {
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
        x->tid_ = (int64_t)json_integer_value(json_array_get(v, 0));
        x->storage = (int64_t)json_integer_value(json_array_get(v, 1));
        x->offset = (int64_t)json_integer_value(json_array_get(v, 2));
        x->numel = (int64_t)json_integer_value(json_array_get(v, 3));
        x->itemsize = (int32_t)json_integer_value(json_array_get(v, 4));
        x->device = mt_strpool_intern(w->pool, json_string_value(json_array_get(v, 5)), -1);
        x->dtype = dtype_of(w->pool, type);
        x->arg = w->arg;
        x->shape_off = (int32_t)e->n_dims;
        x->ndim = 0;
        if (json_is_array(shape)) {
            size_t n = json_array_size(shape);
            if (mt_vec_reserve(&e->dims, &e->cap_dims, e->n_dims + (int64_t)n)) {
                w->failed = 1;
                return;
            }
            for (size_t i = 0; i < n; i++) {
                json_t *d = json_array_get(shape, i);
                if (!json_is_integer(d)) break;
                e->dims[e->n_dims++] = (int64_t)json_integer_value(d);
                x->ndim++;
            }
        }
        return;
    }
    if (json_is_array(v) && (!type || strstr(type, "Tensor"))) {
        size_t i;
        json_t *el;
        json_array_foreach(v, i, el) {
            json_t *sh = json_is_array(shape) ? json_array_get(shape, i) : NULL;
            walk_value(w, el, sh, type);
        }
    }
}

/* Walks parallel values/shapes/types arrays; returns the number of tensors appended. */
static int walk_args(walk_ctx *w, json_t *values, json_t *shapes, json_t *types) {
    int64_t before = w->e->n_vals;
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v) {
        w->arg = (int32_t)i;
        json_t *sh = json_is_array(shapes) ? json_array_get(shapes, i) : NULL;
        const char *ty = json_is_array(types) ? json_string_value(json_array_get(types, i)) : NULL;
        walk_value(w, v, sh, ty);
    }
    return (int)(w->e->n_vals - before);
}

static int64_t geti(json_t *o, const char *key, int64_t dflt) {
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static int cmp_node_id(const void *a, const void *b) {
    const et_node *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* Group size of a record_param_comms node: pg_size attr, else the last integer input. */
static void comm_info(et_node *n, json_t *attrs, json_t *values, trace_strpool *pool) {
    n->comm_group = 0;
    n->comm_name = NULL;
    size_t i;
    json_t *a;
    if (json_is_array(attrs)) {
        json_array_foreach(attrs, i, a) {
            const char *an = json_string_value(json_object_get(a, "name"));
            if (!an) continue;
            json_t *val = json_object_get(a, "value");
            if (!strcmp(an, "pg_size") && trace_group_size(val))
                n->comm_group = trace_group_size(val);
            else if (!strcmp(an, "collective_name") && json_is_string(val))
                n->comm_name = mt_strpool_intern(pool, json_string_value(val), -1);
        }
    }
    if (!json_is_array(values)) return;
    json_t *v;
    json_array_foreach(values, i, v) {
        if (!n->comm_name && json_is_string(v) &&
            mt_opclass_comm_of(json_string_value(v)) != TRACE_COMM_NONE)
            n->comm_name = mt_strpool_intern(pool, json_string_value(v), -1);
    }
    if (!n->comm_group && !strcmp(n->name, "record_param_comms")) {
        size_t len = json_array_size(values);
        if (len > 0) n->comm_group = trace_group_size(json_array_get(values, len - 1));
    }
}

mt_status mt_et_parse(const char *path, json_t *root, trace_strpool *pool, et_data *e, mt_error *err) {
    memset(e, 0, sizeof *e);
    mt_u64map_init(&e->by_id);
    e->root = root;
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes))
        return mt_fail(err, MT_EFORMAT, "%s: no \"nodes\" array: not an Execution Trace", path);
    json_t *schema = json_object_get(root, "schema");
    e->schema = mt_strpool_intern(pool, json_is_string(schema) ? json_string_value(schema) : "unknown", -1);
    walk_ctx w = {.e = e, .pool = pool};
    size_t n = json_array_size(nodes);
    if (mt_vec_reserve(&e->nodes, &e->cap_nodes, (int64_t)n + 1)) goto nomem;
    size_t i;
    json_t *jn;
    json_array_foreach(nodes, i, jn) {
        if (!json_is_object(jn))
            return mt_fail(err, MT_EFORMAT, "%s: nodes[%zu] is not an object", path, i);
        json_t *jid = json_object_get(jn, "id");
        json_t *jname = json_object_get(jn, "name");
        if (!json_is_integer(jid) || !json_is_string(jname))
            return mt_fail(err, MT_EFORMAT,
                           "%s: nodes[%zu] lacks an integer \"id\" or a string \"name\"", path, i);
        et_node *x = &e->nodes[e->n_nodes++];
        memset(x, 0, sizeof *x);
        x->id = (int64_t)json_integer_value(jid);
        x->name = mt_strpool_intern(pool, json_string_value(jname), -1);
        if (!x->name) goto nomem;
        x->is_meta = strncmp(x->name, "[pytorch|profiler|", 18) == 0;
        x->first_child = x->next_sibling = -1;
        json_t *attrs = json_object_get(jn, "attrs");
        json_t *in = json_object_get(jn, "inputs");
        json_t *out = json_object_get(jn, "outputs");
        json_t *in_vals, *in_shapes, *in_types, *out_vals, *out_shapes, *out_types;
        if (json_is_object(in) || json_is_array(attrs) || json_object_get(jn, "ctrl_deps")) {
            /* chakra layout */
            x->parent = geti(jn, "ctrl_deps", -1);
            x->rf_id = x->seq = x->fw_parent = x->tid = -1;
            if (json_is_array(attrs)) {
                size_t j;
                json_t *a;
                json_array_foreach(attrs, j, a) {
                    const char *an = json_string_value(json_object_get(a, "name"));
                    json_t *av = json_object_get(a, "value");
                    if (!an || !json_is_integer(av)) continue;
                    int64_t iv = (int64_t)json_integer_value(av);
                    if (!strcmp(an, "rf_id")) x->rf_id = iv;
                    else if (!strcmp(an, "seq_id")) x->seq = iv;
                    else if (!strcmp(an, "fw_parent")) x->fw_parent = iv;
                    else if (!strcmp(an, "tid")) x->tid = iv;
                }
            }
            in_vals = json_object_get(in, "values");
            in_shapes = json_object_get(in, "shapes");
            in_types = json_object_get(in, "types");
            out_vals = json_object_get(out, "values");
            out_shapes = json_object_get(out, "shapes");
            out_types = json_object_get(out, "types");
        } else {
            x->parent = geti(jn, "parent", -1);
            x->rf_id = geti(jn, "rf_id", -1);
            x->seq = geti(jn, "seq_id", -1);
            x->fw_parent = geti(jn, "fw_parent", -1);
            x->tid = geti(jn, "tid", -1);
            in_vals = in;
            in_shapes = json_object_get(jn, "input_shapes");
            in_types = json_object_get(jn, "input_types");
            out_vals = out;
            out_shapes = json_object_get(jn, "output_shapes");
            out_types = json_object_get(jn, "output_types");
        }
        if ((in_vals && !json_is_array(in_vals)) || (out_vals && !json_is_array(out_vals)))
            return mt_fail(err, MT_EFORMAT, "%s: nodes[%zu] (id %ld): inputs/outputs are not "
                           "lists", path, i, (long)x->id);
        x->inputs = in_vals;
        x->in_first = (int32_t)e->n_vals;
        w.side = "inputs";
        x->in_count = in_vals ? walk_args(&w, in_vals, in_shapes, in_types) : 0;
        w.side = "outputs";
        x->out_first = (int32_t)e->n_vals;
        x->out_count = out_vals ? walk_args(&w, out_vals, out_shapes, out_types) : 0;
        if (w.failed == 2)
            return mt_fail(err, MT_EFORMAT, "%s: nodes[%zu] (id %ld, %s): %s (is the file damaged?)", path, i,
                           (long)x->id, x->name, w.why);
        if (w.failed) goto nomem;
        if (mt_opclass_is_comm_name(x->name))
            comm_info(x, attrs, in_vals, pool);
    }
    if (e->n_nodes == 0)
        return mt_fail(err, MT_EFORMAT, "%s: Execution Trace has no nodes", path);
    qsort(e->nodes, (size_t)e->n_nodes, sizeof *e->nodes, cmp_node_id);
    for (int64_t k = 0; k < e->n_nodes; k++) {
        if (mt_u64map_get(&e->by_id, (uint64_t)e->nodes[k].id, NULL))
            return mt_fail(err, MT_EFORMAT, "%s: node id %ld appears twice", path,
                           (long)e->nodes[k].id);
        if (mt_u64map_put(&e->by_id, (uint64_t)e->nodes[k].id, k, NULL) != MT_OK) goto nomem;
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
nomem:
    return mt_fail(err, MT_ENOMEM, "%s: out of memory reading Execution Trace", path);
}

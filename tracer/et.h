/* tracer/et.h — a PyTorch Execution Trace (ET) as flat node and tensor arrays (reader: et.c),
 * and the questions the linker asks of its node tree.
 *
 * Two layouts are read: schema 1.0.1 (node fields `parent`, `rf_id`, `seq_id`, `tid`,
 * `fw_parent`, parallel lists `inputs` / `input_shapes` / `input_types`, same for outputs) and
 * 1.0.2-chakra … 1.1.x (`ctrl_deps` for the parent, `inputs: {values, shapes, types}`,
 * `attrs: [{name, type, value}]` holding rf_id, seq_id, tid and collective attributes).
 * Invariant after mt_et_read: nodes[] are sorted by id (ids unique, by_id maps id -> index);
 * each node's children are linked in id order (first_child / next_sibling); a node's tensor
 * values are vals[in_first .. +in_count) and vals[out_first .. +out_count); names are interned.
 * The file is streamed (util/jstream.h): each node is built alone as a small jansson value, read
 * into the arrays and dropped, so memory holds the arrays, never the document.
 */
#ifndef MT_TRACER_ET_H
#define MT_TRACER_ET_H

#include <jansson.h>
#include <stdint.h>

#include "tracer/strpool.h"
#include "tracer/trace.h"
#include "util/jstream.h"
#include "util/u64map.h"

typedef struct et_val {        /* a tensor mentioned in an ET node's inputs or outputs */
    int64_t tid_, storage, offset, numel;  /* ET tensor value fields */
    int32_t itemsize;
    int32_t shape_off, ndim;   /* into et_data.dims */
    const char *dtype, *device;
    int32_t arg;               /* argument position in the node's inputs/outputs */
} et_val;

typedef struct et_node {
    int64_t id, parent, rf_id, seq, fw_parent, tid;
    const char *name;
    int32_t in_first, in_count;   /* into et_data.vals */
    int32_t out_first, out_count;
    int32_t first_child, next_sibling; /* indices into nodes[], children in id order */
    int32_t is_meta;              /* "[pytorch|profiler|...]" thread/process root */
    int32_t comm_group;           /* from record_param_comms / pg attrs, 0 unknown */
    const char *comm_name;        /* collective name from record_param_comms, or NULL */
} et_node;

typedef struct et_data {
    const char *schema;
    et_node *nodes;  int64_t n_nodes, cap_nodes;     /* sorted by id */
    et_val *vals;    int64_t n_vals, cap_vals;
    int64_t *dims;   int64_t n_dims, cap_dims;
    mt_u64map by_id;                                 /* node id -> index */
} et_data;

/* Reads the Execution Trace `path` (plain or gzip) into e, streaming it (opts: progress, or the
 * reference DOM reader). On failure e holds nothing and the message names `path` and the node
 * (nodes[i], its id and name), or the byte, line and column where the JSON breaks.
 * Cost: O(file bytes + n log n) time, O(nodes + values) memory. */
mt_status mt_et_read(const char *path, trace_strpool *pool, const mt_jstream_opts *opts, et_data *e, mt_error *err);
/* Frees the arrays; e is zeroed. */
void mt_et_free(et_data *e);

/* ---- the node tree ---------------------------------------------------------------------- */
/* Nodes that are operators (not thread/process roots). */
int64_t mt_et_op_count(const et_data *e);
/* N when the ET's operators hold a ProfilerStep#N region (the step it recorded), else -1 (none,
 * or two different ones). O(nodes). */
int mt_et_profiler_step(const et_data *e);
/* A record_function region: a name without "::" that is not a communication op, with children. */
int mt_et_is_region(const et_data *e, const et_node *n);
/* First node of node j's subtree (preorder, j included, 8 levels) named aten::, c10d:: or nccl:,
 * else NULL: the representative op of a wrapper. */
const char *mt_et_kind(const et_data *e, int32_t j);
/* Communication kind, group and bytes of node j's subtree (6 levels), filling only what is
 * still unknown (*kind NONE or OTHER, *group 0, *bytes <= 0): bytes are the inputs of the first
 * record_param_comms (or nccl:/gloo: op), i.e. the buffer the collective moves. */
void mt_et_comm(const et_data *e, int32_t j, trace_comm *kind, int32_t *group, double *bytes);

#endif

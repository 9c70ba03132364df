/* tracer/internal.h — structures shared by the readers (kineto.c, et.c, triosim.c), the
 * builder (build.c) and the linker (link.c). Not a public header: use tracer/trace.h.
 */
#ifndef MT_TRACER_INTERNAL_H
#define MT_TRACER_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "tracer/trace.h"
#include "util/u64map.h"

/* ---- plausibility bounds ---------------------------------------------------------------- */
/* Readers refuse values outside these, naming the file and the place, instead of letting a
 * damaged number overflow the int64 times and sizes downstream (simulated time is int64 ps,
 * network/sched.h). A time is at most TRACE_MAX_NS from the trace's first event and a duration
 * at most that long (1e15 ns, 11.6 days: no profiled step is near it); a tensor dimension or
 * element count is in 0..TRACE_MAX_NUMEL (1e12, a 4 TB fp32 tensor); an element is at most
 * TRACE_MAX_ITEMSIZE bytes. */
#define TRACE_MAX_NS 1e15
#define TRACE_MAX_NUMEL INT64_C(1000000000000)
#define TRACE_MAX_ITEMSIZE 64

/* A communication group size from a trace value: an integer 1..INT32_MAX, else 0 (unknown). */
static inline int32_t trace_group_size(json_t *v) {
    return json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= INT32_MAX
               ? (int32_t)json_integer_value(v) : 0;
}

/* ---- string pool ---------------------------------------------------------------------- */
typedef struct trace_strpool trace_strpool;
trace_strpool *mt_strpool_new(void);
void mt_strpool_free(trace_strpool *p);
/* Returns the interned copy of s (n bytes, or strlen when n < 0), NULL on allocation failure. */
const char *mt_strpool_intern(trace_strpool *p, const char *s, int64_t n);

/* ---- Kineto --------------------------------------------------------------------------- */
typedef enum { KEV_OP = 0, KEV_ANNOTATION } kev_kind;

typedef struct kev {           /* a cpu_op or user_annotation event */
    const char *name;          /* interned */
    int64_t tid, ts_ns, dur_ns;
    int64_t ext_id, rf_id;     /* -1 when absent */
    int64_t seq, fwd_tid;      /* -1 when absent */
    json_t *args;              /* borrowed from the JSON root (may be NULL) */
    kev_kind kind;
    int32_t parent;            /* enclosing kev (op or annotation) on the same thread, -1 */
    int32_t outer;             /* outermost enclosing KEV_OP (itself when outermost), -1 for annotations outside ops */
    int64_t et_node;           /* linked ET node index, -1 */
} kev;

typedef struct krt {           /* a cuda_runtime / cuda_driver event */
    int64_t tid, ts_ns, dur_ns, correlation;
    const char *name;
} krt;

typedef struct kgpu {          /* a kernel / gpu_memcpy / gpu_memset event */
    int64_t ts_ns, dur_ns, correlation, ext_id;
    int32_t stream;
    trace_kernel_kind kind;
    const char *name;
} kgpu;

typedef struct kmod {          /* a python_function event that is an nn.Module call */
    const char *name;
    int64_t tid, ts_ns, dur_ns;
} kmod;

typedef struct kineto_data {
    json_t *root;
    kev *ev;     int64_t n_ev, cap_ev;
    krt *rt;     int64_t n_rt, cap_rt;
    kgpu *gpu;   int64_t n_gpu, cap_gpu;
    kmod *mod;   int64_t n_mod, cap_mod;
    const char *device_name;
    int64_t device_mem;
    int64_t base_us;           /* subtracted from every ts */
} kineto_data;

mt_status mt_kineto_parse(const char *path, json_t *root, trace_strpool *pool, kineto_data *k,
                       mt_error *err);
void mt_kineto_free(kineto_data *k);
/* True when a parsed JSON document looks like a Kineto trace. */
int mt_kineto_detect(json_t *root);

/* ---- Execution Trace ------------------------------------------------------------------ */
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
    json_t *inputs;               /* borrowed: raw input values (scalars for perfmodel) */
    int32_t comm_group;           /* from record_param_comms / pg attrs, 0 unknown */
    const char *comm_name;        /* collective name from record_param_comms, or NULL */
} et_node;

typedef struct et_data {
    json_t *root;
    const char *schema;
    et_node *nodes;  int64_t n_nodes, cap_nodes;   /* sorted by id */
    et_val *vals;    int64_t n_vals, cap_vals;
    int64_t *dims;   int64_t n_dims, cap_dims;
    mt_u64map by_id;                                 /* node id -> index */
} et_data;

mt_status mt_et_parse(const char *path, json_t *root, trace_strpool *pool, et_data *e, mt_error *err);
void mt_et_free(et_data *e);
int mt_et_detect(json_t *root);

/* ---- builder -------------------------------------------------------------------------- */
typedef struct trace_builder {
    trace *t;
    int64_t cap_ops, cap_kernels, cap_tensors, cap_trefs, cap_dims, cap_layers;
    mt_u64map tensor_by_key;        /* hash of tensor key -> first index in chain */
    int32_t *tensor_next;         /* collision chain */
    int64_t cap_tensor_next;
} trace_builder;

mt_status mt_tb_init(trace_builder *b, trace *t);
void mt_tb_destroy(trace_builder *b);
/* Appends an op (fields copied; in/out ranges set by add_tref afterwards). Returns index or -1. */
int32_t mt_tb_add_op(trace_builder *b, const trace_op *op);
int32_t mt_tb_add_kernel(trace_builder *b, const trace_kernel *k);
/* Finds or adds the tensor with this key. Returns index or -1 on allocation failure. */
int32_t mt_tb_tensor(trace_builder *b, int64_t et_id, int64_t storage, int64_t offset,
                       int64_t numel, int32_t itemsize, const char *dtype, const char *device);
/* Adds an anonymous tensor (Kineto-only traces: no identity). */
int32_t mt_tb_anon_tensor(trace_builder *b, int64_t numel, int32_t itemsize, const char *dtype);
/* Appends a tensor use with its shape to the *current last op* (input when is_out == 0). Uses
 * of one op must be added inputs first, then outputs. */
mt_status mt_tb_add_tref(trace_builder *b, int32_t tensor, const int64_t *shape, int32_t ndim,
                           int32_t arg, int is_out);
/* Completes the trace: kernels sorted per op, device times, roles, parameters, batch size,
 * layers (from `mods` when given, else by weights and sequence numbers), totals. */
typedef struct builder_layer_hint {
    const char *module;           /* innermost nn.Module name for this op, or NULL */
} builder_layer_hint;
mt_status mt_tb_finish(trace_builder *b, const builder_layer_hint *hints, mt_error *err);

/* Bytes per element for a dtype name as written by PyTorch ("float", "c10::Half", "long"...).
 * Returns 0 when unknown. */
int32_t mt_trace_dtype_size(const char *dtype);
/* Collective kind from an op name ("nccl:all_reduce", "c10d::allreduce_", "gloo:all_reduce",
 * "record_param_comms" with collective name...). TRACE_COMM_NONE when not communication. */
trace_comm mt_opclass_comm_of(const char *name);

mt_status mt_triosim_load(const char *trace_csv, const char *tensor_csv, trace *t, mt_error *err);
mt_status mt_link_build(const char *kpath, kineto_data *k, const char *epath, et_data *e,
                     const trace_load_opts *opts, trace *t, mt_error *err);

#endif

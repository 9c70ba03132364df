/* tracer/internal.h — structures shared by the readers (kineto.c, et.c, triosim.c), the
 * builder (build.c) and the linker (link.c). Not a public header: use tracer/trace.h.
 */
#ifndef MT_TRACER_INTERNAL_H
#define MT_TRACER_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "tracer/builder.h"
#include "tracer/limits.h"
#include "tracer/opclass.h"
#include "tracer/strpool.h"
#include "tracer/trace.h"
#include "util/u64map.h"

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

mt_status mt_triosim_load(const char *trace_csv, const char *tensor_csv, trace *t, mt_error *err);
mt_status mt_link_build(const char *kpath, kineto_data *k, const char *epath, et_data *e,
                     const trace_load_opts *opts, trace *t, mt_error *err);

#endif

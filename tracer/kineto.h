/* tracer/kineto.h — a PyTorch profiler (Kineto) trace as flat event arrays (reader: kineto.c).
 *
 * Keeps cpu_op and user_annotation events (host ops and regions), cuda_runtime/cuda_driver
 * calls (launches, with correlation ids), kernel/gpu_memcpy/gpu_memset events (device work),
 * cuda_sync events (which stream a stream wait or a synchronisation waited for, PyTorch >= 2.3),
 * python_function events that are nn.Module calls (layers) and deviceProperties.
 * The file is streamed (util/jstream.h): one event at a time is gathered into a flat record and
 * handed to the one consumer (kineto.c), which keeps only what the model reads: the event's
 * fields above and, of a host event's args, its ids and what the op emitter and the collective
 * reader ask (kargs: "Input Dims", "Input type", record_param_comms' fields). Nothing of the
 * document is kept but distributedInfo (a few process groups, as jansson).
 * Invariant after mt_kineto_read: every name is interned in the trace's pool; times are int64
 * ns relative to base_us; kev.parent/outer/et_node are -1 until the linker fills them (khost.h,
 * match.h). Memory: about 100 bytes per kept host event (kev, plus its ts while reading), 60 per runtime
 * call or device event, plus input shapes and collective fields of the events that have them.
 */
#ifndef MT_TRACER_KINETO_H
#define MT_TRACER_KINETO_H

#include <jansson.h>
#include <stdint.h>

#include "tracer/strpool.h"
#include "tracer/trace.h"
#include "util/jstream.h"

typedef enum { KEV_OP = 0, KEV_ANNOTATION } kev_kind;

typedef struct kinput {        /* one entry of a host event's "Input Dims", with its "Input type" */
    int32_t dim_first;         /* its leading integers: kineto_data.dims[dim_first .. +ndim) */
    int32_t ndim;
    int32_t size;              /* elements of the entry, -1 when it is not an array */
    const char *type;          /* "Input type"[a] when a string (interned), else NULL */
} kinput;

typedef struct kcollargs {     /* the collective's fields of a host event's args (record_param_comms) */
    const char *coll_name, *dtype, *pg_name, *pg_desc;  /* "Collective name", "dtype", "Process
                                * Group Name", "... Description" when strings (interned), else NULL */
    int32_t group;             /* "Group size" (trace_group_size), 0 */
    double in_nelems, out_nelems; /* "In msg nelems", "Out msg nelems" when numbers >= 0, else -1 */
} kcollargs;

typedef struct kargs {         /* what the model reads of a host event's args */
    int32_t in_first, n_in;    /* "Input Dims": kineto_data.inputs[in_first .. +n_in), 0 when absent */
    int32_t coll;              /* its kcollargs: kineto_data.colls[coll], -1 when it has none of them
                                * (mt_kineto_coll answers the empty one) */
    int32_t present;           /* the event has an args object (else all above are empty) */
} kargs;

typedef struct kev {           /* a cpu_op or user_annotation event (96 bytes) */
    const char *name;          /* interned */
    int64_t tid, ts_ns, dur_ns;
    int64_t ext_id, rf_id;     /* -1 when absent */
    int64_t seq;               /* -1 when absent */
    kargs a;
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

typedef enum { KSYNC_WAIT_EVENT = 0, KSYNC_STREAM, KSYNC_EVENT, KSYNC_CONTEXT } ksync_kind;

typedef struct ksyncev {       /* a cuda_sync event: what a runtime call (correlation) waited for */
    int64_t correlation;       /* of the cudaStreamWaitEvent / cudaStreamSynchronize / ... call */
    int64_t rec_correlation;   /* of the cudaEventRecord waited for, -1 */
    int32_t stream;            /* the waiting stream (Stream Wait Event) or the synchronised one, -1 */
    int32_t on_stream;         /* the stream of the event waited for, -1 */
    ksync_kind kind;
} ksyncev;

typedef struct kmod {          /* a python_function event that is an nn.Module call */
    const char *name;
    int64_t tid, ts_ns, dur_ns;
} kmod;

typedef struct kineto_data {
    json_t *dist;              /* the document's distributedInfo (owned), NULL */
    kinput *inputs; int64_t n_inputs, cap_inputs;
    kcollargs *colls; int64_t n_colls, cap_colls;  /* of the host events that have them */
    int64_t *dims; int64_t n_dims, cap_dims;
    kev *ev;     int64_t n_ev, cap_ev;
    krt *rt;     int64_t n_rt, cap_rt;
    kgpu *gpu;   int64_t n_gpu, cap_gpu;
    kmod *mod;   int64_t n_mod, cap_mod;
    ksyncev *sync; int64_t n_sync, cap_sync;
    const char *device_name;
    int64_t device_mem;
    int device_props;          /* entries of the document's deviceProperties, -1 when absent */
    int64_t base_us;           /* subtracted from every ts */
    int saw_sync;              /* the file has cuda_sync events (kept or not) */
    int any_rf;                /* some host event of the file (kept or not) has a Record function id */
    int64_t n_dropped;         /* events the step filter left out (kfilter.h), 0 without one */
    int filter_sound;          /* 1 unless a drop may have been wrong: read again unfiltered */
    int filter_last;           /* with a KFILTER_LAST target: the latest ProfilerStep's number, else -1 */
} kineto_data;

/* Reads the Kineto trace `path` (plain or gzip) into k, streaming it (opts: progress, or the
 * reference DOM reader). Only the neighbourhoods of ProfilerStep#keep_steps[0] and [1] are kept
 * (tracer/kfilter.h; every ProfilerStep annotation is; -1: none); both -1 keeps every event. On failure k
 * holds nothing and the message names `path` and the event (traceEvents[i]), or the byte, line
 * and column where the JSON breaks. Cost: O(file bytes) time, O(kept events) memory. */
mt_status mt_kineto_read(const char *path, trace_strpool *pool, const mt_jstream_opts *opts,
                         const int keep_steps[2], kineto_data *k, mt_error *err);
/* The collective's fields of args a (an empty set, names NULL and nelems -1, when it has none). */
const kcollargs *mt_kineto_coll(const kineto_data *k, const kargs *a);
/* Frees the arrays; k is zeroed. */
void mt_kineto_free(kineto_data *k);

#endif

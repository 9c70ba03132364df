/* tracer/trace.h — the trace model: what one training step on one GPU did.
 *
 * An `mt_trace` is built by mt_trace_load() from a Kineto JSON (+ optional Execution Trace JSON) pair
 * or a TrioSim CSV pair, and is read-only afterwards. Everything is stored in flat arrays
 * indexed by int32 ids; strings are interned in one pool owned by the trace.
 *
 * Invariants after a successful load:
 *  - ops[] are the outermost operators of the selected step, sorted by host start time
 *    (ties by thread then id). ops[i].id == i.
 *  - An op's device time is the length of the union of its compute kernels' intervals (kernels
 *    found through cuda_runtime correlation, including launches from nested ops); the kernels its
 *    collective calls launched (NCCL) are communication and make comm_dev_ns instead. Without
 *    kernels (CPU-only traces) it is the op's CPU duration and trace.has_device_time is 0; an op
 *    that is only a collective call (gloo:all_reduce, c10d::send) then has dev_ns 0 and its CPU
 *    duration as comm_dev_ns: communication is in no phase.
 *  - colls[] are the step's own collective calls (host side), each inside the op making it.
 *  - kernels[] are sorted by (op, start); op->kernel_first/count index into it.
 *  - trefs[] hold the tensor uses of ops: op->in_first/in_count and out_first/out_count.
 *  - tensors[] are keyed by (ET tensor id, storage id, offset, numel, itemsize), i.e. a
 *    reused tensor id with a new storage is a new tensor.
 *  - param_count is the sum of the numel of distinct parameter tensors.
 *  - every op's cls, tp and batch_dep are the classifier's answers for it (mt_opclass_trace,
 *    tracer/opclass.h), given its names, phase, comm kind and tensor roles.
 * Times are int64 nanoseconds relative to the trace's first event.
 */
#ifndef MT_TRACER_TRACE_H
#define MT_TRACER_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef enum {
    TRACE_PHASE_FORWARD = 0,
    TRACE_PHASE_BACKWARD,
    TRACE_PHASE_OPTIMIZER,
    TRACE_PHASE_OTHER,
    TRACE_PHASE_COUNT
} trace_phase;

typedef enum {
    TRACE_ROLE_ACTIVATION = 0,
    TRACE_ROLE_WEIGHT,
    TRACE_ROLE_GRADIENT,
    TRACE_ROLE_OPTSTATE,
    TRACE_ROLE_INPUT,
    TRACE_ROLE_OTHER,
    TRACE_ROLE_COUNT
} trace_role;

typedef enum {
    TRACE_COMM_NONE = 0,
    TRACE_COMM_ALLREDUCE,
    TRACE_COMM_ALLGATHER,
    TRACE_COMM_REDUCESCATTER,
    TRACE_COMM_BROADCAST,
    TRACE_COMM_REDUCE,
    TRACE_COMM_ALLTOALL,
    TRACE_COMM_SEND,
    TRACE_COMM_RECV,
    TRACE_COMM_BARRIER,
    TRACE_COMM_OTHER
} trace_comm;

/* Operator class (tracer/opclass.h: mt_opclass_of, mt_opclass_name). */
typedef enum {
    MT_OPC_NONE = 0,     /* views, metadata, allocation, host-only ops: no device work */
    MT_OPC_CONV,
    MT_OPC_CONV_BWD,
    MT_OPC_MATMUL,
    MT_OPC_MATMUL_BWD,
    MT_OPC_ATTN,
    MT_OPC_ATTN_BWD,
    MT_OPC_ELEMWISE,     /* elementwise, activations, dropout, reductions */
    MT_OPC_ELEMWISE_BWD,
    MT_OPC_NORM,         /* batch/layer/group/RMS norm */
    MT_OPC_NORM_BWD,
    MT_OPC_SOFTMAX,
    MT_OPC_SOFTMAX_BWD,
    MT_OPC_POOL,
    MT_OPC_POOL_BWD,
    MT_OPC_EMBEDDING,
    MT_OPC_EMBEDDING_BWD,
    MT_OPC_LOSS,
    MT_OPC_LOSS_BWD,
    MT_OPC_OPTIMIZER,    /* _foreach_*, fused optimizers, elementwise ops of the optimizer phase */
    MT_OPC_COPY,         /* copies, casts, cat, fills, gathers/scatters */
    MT_OPC_COMM,         /* communication: not modelled here */
    MT_OPC_UNKNOWN,      /* no formula: bytes of its tensors */
    MT_OPC_COUNT
} mt_opclass;

/* What an op is to tensor parallelism (tracer/opclass.h: mt_opclass_tp_of). */
typedef enum {
    TRACE_TP_NONE = 0,    /* follows its neighbours (split inside a column region) */
    TRACE_TP_LINEAR,      /* a linear/matmul reading a weight: column or row parallel */
    TRACE_TP_CONV,        /* a convolution: split by output channels */
    TRACE_TP_EMBEDDING,   /* an embedding: split by vocabulary */
    TRACE_TP_CLOSER,      /* needs the whole hidden dimension (norms, losses): closes a region */
    TRACE_TP_WEIGHT_GRAD, /* AccumulateGrad: gradient-sized, follows its weight's split */
    TRACE_TP_POS_EMBEDDING, /* an embedding of positions (indices from arange): replicated */
    TRACE_TP_VOCAB_LOSS   /* cross_entropy, log_softmax, nll_loss: vocabulary-parallel after a
                           * column-parallel LM head (a few all-reduces of per-token statistics),
                           * else a closer */
} trace_tp;

typedef enum {
    TRACE_FORMAT_KINETO_ET = 0, /* Kineto JSON + Execution Trace */
    TRACE_FORMAT_KINETO,        /* Kineto JSON alone */
    TRACE_FORMAT_ET,            /* Execution Trace alone (no timings) */
    TRACE_FORMAT_TRIOSIM_CSV,   /* TrioSim trace.csv + tensor.csv */
    TRACE_FORMAT_CHAKRA         /* one rank's Chakra ET (protobuf; tracer/cktrace.h) */
} trace_format;

typedef enum {
    TRACE_LINK_NONE = 0,  /* nothing to link (single file) */
    TRACE_LINK_RF_ID,     /* Kineto "Record function id" == ET rf_id */
    TRACE_LINK_EXTERNAL,  /* Kineto "External id" == ET rf_id */
    TRACE_LINK_ORDER      /* per thread, ET nodes by id against Kineto ops by ts */
} trace_link_method;

typedef enum { TRACE_KERNEL = 0, TRACE_MEMCPY, TRACE_MEMSET } trace_kernel_kind;

typedef struct trace_kernel {
    int64_t start_ns, dur_ns;
    int32_t op;     /* owning outermost op */
    int32_t stream; /* device stream, -1 unknown */
    const char *name;
    trace_kernel_kind kind;
    int64_t launch_ns;  /* host time of the launching runtime call (cudaLaunchKernel, ...), -1 unknown */
    int8_t comm;        /* 1: communication (launched inside a collective call, or an NCCL kernel) */
} trace_kernel;

/* A host call that blocks until the device has caught up: cudaStreamSynchronize,
 * cudaDeviceSynchronize, cudaEventSynchronize, a synchronous cudaMemcpy (and the hip ones), a
 * copy to pageable host memory, a copy whose timing shows it waited (tracer/ksync.h). */
typedef struct trace_sync {
    int64_t ts_ns;
    int64_t dur_ns;     /* how long it was blocked, from its start: the whole call, or up to the end
                         * of the copy it made (the rest of the call is host work) */
    int32_t op;         /* the op whose host interval [cpu_start, next op's cpu_start) holds it,
                         * -1 when it comes before the first op */
    const char *name;
    int32_t stream;     /* the stream it waits for (a copy's own), -1 every stream */
} trace_sync;

/* A wait of one stream for another that the trace records (cudaEventRecord on on_stream, then
 * cudaStreamWaitEvent on stream; torch's wait_stream): the device work launched on `stream` after
 * the wait call cannot start before the work launched on `on_stream` before the record call has
 * finished (tracer/ksync.h). */
typedef struct trace_wait {
    int64_t ts_ns;      /* the cudaStreamWaitEvent call */
    int64_t rec_ns;     /* the cudaEventRecord call waited for (<= ts_ns) */
    int32_t stream;     /* the waiting stream */
    int32_t on_stream;  /* the stream waited for */
    int32_t op, rec_op; /* the ops whose host intervals hold the calls, -1 before the first op */
} trace_wait;
/* Where a collective's group size comes from, most certain first. */
typedef enum {
    TRACE_GROUP_UNKNOWN = 0,
    TRACE_GROUP_RECORDED,  /* record_param_comms' "Group size" */
    TRACE_GROUP_PG,        /* its process group's pg_size in distributedInfo.pg_config */
    TRACE_GROUP_SHAPES,    /* a reduce-scatter's or all-gather's input/output element ratio */
    TRACE_GROUP_WORLD      /* assumed: the job's world size (distributedInfo), the trace names no group */
} trace_group_src;

/* One of the trace's own collective calls: the outermost c10d::*, record_param_comms, nccl:* or
 * gloo:* event of a nest, on the host. Its CPU time is what issuing the collective cost (the
 * enqueue: argument checks, stream waits, the NCCL launch), which the extrapolator pays again
 * for every collective it generates; the op around it is compute.
 * What it moved is read from its nest (tracer/kcomm.h): record_param_comms' message sizes, dtype,
 * group size and process group, else the tensors of its backend event (nccl:* / gloo:*) and of
 * its c10d:: op. */
typedef struct trace_coll {
    int64_t ts_ns, dur_ns;
    int32_t op;         /* the op that makes the call (the call itself, or an op enclosing it) */
    trace_comm kind;
    double bytes;       /* the per-rank buffer S as extrapolate/collective.h counts it: all-reduce,
                         * broadcast, reduce, send, recv: the tensor; all-gather: the output (group x
                         * input); reduce-scatter: the input; all-to-all: what this rank sends in all.
                         * 0 unknown */
    int32_t group;      /* ranks in its group, 0 unknown */
    trace_group_src group_src;
    const char *dtype;  /* element type as the trace writes it ("Float", "float"), NULL unknown */
    const char *pg;     /* process group: its name, else its description; NULL unknown */
    int8_t instance;    /* 1: one collective of the step, the call whose nest moved the data (holds
                         * a backend event nccl:* / gloo:*, or the trace has no backend events at
                         * all); 0: a wait, or a call whose data a backend event elsewhere moved
                         * (gloo runs the work on its own thread: the call only enqueues it) */
    int8_t is_wait;     /* a wait on an earlier collective (record_param_comms "wait", *_Wait) */
    int32_t issued_by;  /* the op after which the collective was issued: the op of the call (an op
                         * enclosing it is compute that issued it), for a gloo worker's event the op
                         * of the call it ran, for a call that is an op of its own the compute op
                         * before it; -1 before the step's first op */
} trace_coll;

/* A process group of the job (distributedInfo.pg_config). */
typedef struct trace_pg {
    const char *name, *desc;   /* NULL when absent */
    int32_t size;              /* ranks, 0 unknown */
} trace_pg;

/* The job the traced rank belonged to, from the Kineto trace's distributedInfo. */
typedef struct trace_dist {
    int32_t world_size;        /* 0: the trace does not say (a one-GPU job, or an exporter without it) */
    int32_t rank;              /* -1 unknown */
    const char *backend;       /* "nccl", "gloo", NULL */
    trace_pg *pgs;             /* pg_config */
    int32_t n_pgs;
} trace_dist;

typedef struct trace_tensor {
    int64_t et_id, storage_id, offset, numel;
    int32_t itemsize;     /* bytes per element */
    int32_t first_op;     /* first op (outermost) that uses it, -1 unknown */
    double bytes;         /* numel * itemsize */
    trace_role role;
    const char *dtype;    /* "float", "c10::BFloat16", ... or NULL */
    const char *device;   /* "cuda:0", "cpu", or NULL */
} trace_tensor;

/* One use of a tensor by an op, with the shape it had there. */
typedef struct trace_tref {
    int32_t tensor;     /* index into tensors[] */
    int32_t shape_off;  /* index into dims[] */
    int32_t ndim;
    int32_t arg;        /* argument position in the op's inputs/outputs (lists share one) */
} trace_tref;

typedef struct trace_op {
    int32_t id;
    const char *name;      /* outermost name, e.g. "aten::conv2d" */
    const char *kind;      /* representative aten op for modelling, e.g. "aten::convolution_backward"; equals name when none */
    trace_phase phase;
    int32_t layer;         /* index into layers[], -1 when none */
    int64_t tid;           /* host thread id as in the trace */
    int64_t cpu_start_ns, cpu_dur_ns;
    int64_t dev_start_ns;  /* first kernel start, or cpu_start_ns when no kernels */
    int64_t dev_end_ns;    /* last kernel end, or cpu end */
    int64_t dev_ns;        /* union of kernel intervals, or cpu_dur_ns when no kernels */
    int32_t kernel_first, kernel_count;
    int32_t in_first, in_count, out_first, out_count; /* into trefs[] */
    int64_t seq;           /* autograd sequence number, -1 when none */
    int32_t fwd_op;        /* backward op: the forward op whose autograd node it runs (matched by
                            * sequence number, nested ops included; without sequence numbers, the
                            * forward op whose weight shares storage with one of its tensors),
                            * -1 unknown or not backward */
    int64_t et_node;       /* linked ET node id, -1 when none */
    const char *mark;      /* the innermost record_function annotation around the op (not a ProfilerStep
                            * or collective one), NULL none: "mitosis.expert" etc. (extrapolate/moe.h) */
    int32_t mark_id;       /* that annotation's instance (its event), meaningful when mark != NULL */
    trace_comm comm;       /* the collective the op is or makes, TRACE_COMM_NONE for compute */
    int8_t comm_inside;    /* 1: the op only encloses its collective call (DDP's AccumulateGrad hook,
                            * TorchRec's All2All_Pooled_Req): it is compute around the call, see
                            * trace_op_is_comm; 0: the op is the call itself */
    double comm_bytes;     /* bytes of the collective's buffer on this rank */
    int32_t comm_group;    /* group size, 0 unknown */
    int64_t comm_dev_ns;   /* union of its communication kernels' intervals (NCCL), 0 without */
    /* Filled once at the end of loading by the operator classifier (tracer/opclass.h): */
    mt_opclass cls;        /* operator class */
    trace_tp tp;           /* tensor-parallel kind */
    int8_t batch_dep;      /* 1 when its work grows with the batch */
} trace_op;

/* An activation kept for backward (tracer/saved.h): a storage forward op `op` allocated (its own
 * output or a nested op's, as a matmul's contiguous copy of its input) that backward ops read again,
 * the last of them `last_bwd`. */
typedef struct trace_saved {
    int32_t op, last_bwd;  /* forward op that allocated it; the last backward op reading it */
    int64_t storage_id;    /* the ET's storage id */
    double bytes;          /* numel x itemsize of the largest tensor of that storage the op made */
} trace_saved;

typedef struct trace_layer {
    const char *name;      /* nn.Module path, or "seq:<n>" when grouped by sequence number */
    int32_t n_ops;
    int64_t dev_ns[TRACE_PHASE_COUNT];
    double param_bytes;
} trace_layer;

typedef struct trace_link_stats {
    trace_link_method method;
    int64_t matched, unmatched;      /* ET nodes (or Kineto ops) matched / not */
    int64_t names_equal;             /* of the matched, how many had equal names */
} trace_link_stats;

/* What the step was recorded on (tracer/device.h finds it; interned strings). */
typedef enum { TRACE_DEV_UNKNOWN = 0, TRACE_DEV_CPU, TRACE_DEV_GPU } trace_dev_kind;

typedef struct trace_device {
    trace_dev_kind kind;
    const char *name;      /* "NVIDIA H100 80GB HBM3", "AMD EPYC (2 cores, 1 torch threads)"; NULL unknown */
    const char *source;    /* where kind and name were read: "Kineto deviceProperties",
                            * "meta.json" (the one beside the trace: no path, which a server
                            * would give away), ...; never NULL after a load */
} trace_device;

typedef struct mt_trace {
    trace_format format;
    char *kineto_path, *et_path;     /* or trace.csv / tensor.csv for TrioSim */
    const char *device_name;         /* the GPU's name (deviceProperties, else a meta.json's
                                      * device_name of a GPU recording); NULL for a CPU recording
                                      * or an unknown GPU */
    trace_device recorded_on;        /* what the step ran on (kind, name, source) */
    int64_t device_mem_bytes;
    int64_t batch_size;              /* inferred from the model input, 0 unknown */
    int step;                        /* selected step number (ProfilerStep#N or index), -1 none */
    char *expert_pattern;            /* trace_load_opts' expert_pattern (owned), NULL none */
    int n_steps;                     /* complete steps seen in the Kineto trace */
    int has_device_time;             /* kernels were found */
    int has_et;

    trace_op *ops;           int32_t n_ops;
    trace_kernel *kernels;   int32_t n_kernels;
    int64_t n_graph_kernels;         /* kernels of kernels[] that CUDA graphs ran (their launch is a
                                      * cudaGraphLaunch): the ops inside a graph are not in the trace */
    int32_t n_graph_launches;        /* cudaGraphLaunch calls with kernels in the step */
    double graph_dev_share;          /* their kernels' share of the step's kernel time, 0..1 */
    int64_t n_kernels_left_out;      /* GPU kernels of the step no op owns (their launch matches no
                                      * op): not in kernels[] nor in any time; a load refuses a step
                                      * where they outnumber the attached ones (mt_trace_warning) */
    trace_tensor *tensors;   int32_t n_tensors;
    trace_tref *trefs;       int32_t n_trefs;
    int64_t *dims;           int32_t n_dims;
    trace_layer *layers;     int32_t n_layers;
    trace_sync *syncs;       int32_t n_syncs;   /* sorted by ts_ns */
    trace_coll *colls;       int32_t n_colls;   /* sorted by ts_ns */
    trace_wait *waits;       int32_t n_waits;   /* sorted by ts_ns */
    trace_saved *saved;      int32_t n_saved;   /* sorted by op (tracer/saved.h) */
    trace_saved *bwd_temps;  int32_t n_bwd_temps; /* the backward's temporaries, in op order: op
                                      * made it, last_bwd the last backward op reading it */
    int has_saved;                   /* 1: saved[] is known (backward ops linked to ET nodes); 0:
                                      * unknown, every activation a forward op makes counts as kept */
    trace_dist dist;                 /* the traced job's world size, rank and process groups */

    int64_t step_start_ns, step_end_ns;   /* wall span of the step: from its start (step window
                                           * or first op) to the later of its host end and its
                                           * last kernel's end */
    int64_t host_end_ns;                  /* the step's host end: the step window's end, else the
                                           * last op's CPU end */
    int64_t dev_union_ns;                 /* union of all kernel intervals of the step */
    int64_t compute_union_ns;             /* union of its compute (not communication) kernels */
    int64_t phase_ns[TRACE_PHASE_COUNT];  /* sum of op dev_ns per phase */
    int64_t comm_ns;                      /* device time of communication kernels (sum of comm_dev_ns) */
    int64_t param_count;
    double param_bytes, grad_bytes, optstate_bytes, activation_bytes, input_bytes;
    trace_link_stats link;
    const char *warning;             /* what the reader doubts about its input (interned; NULL
                                      * none), e.g. a TrioSim CSV timed with Operator_cudatime */

    struct trace_strpool *pool;      /* interned strings (private) */
} mt_trace;

typedef struct trace_load_opts {
    int step;             /* -1: the step the ET covers, else the last complete one */
    double min_link_ratio;/* refuse a pair with fewer matched ET nodes than this (default 0.5) */
    /* Called while a JSON file is read, with bytes read and the file's size (report/progress.h's
     * mt_progress_update fits), ctx first; NULL none. */
    void (*on_progress)(void *ctx, int64_t done_bytes, int64_t total_bytes);
    void *progress_ctx;
    const char *expert_pattern; /* glob naming the experts (--moe-pattern): annotation names or nn.Module
                           * paths (extrapolate/moe.h); NULL none; copied into the trace */
    int dom_reader;       /* 1: read JSON through a whole jansson document (the reference reader,
                           * memory ~9x the file) instead of streaming it; set by opts_init from
                           * MITOSIS_JSON_READER=dom, for comparisons */
} trace_load_opts;

/* Defaults: step -1, min_link_ratio 0.5, no progress, dom_reader from the environment. */
void mt_trace_load_opts_init(trace_load_opts *o);

/* Loads a trace from `paths` (n_paths >= 1): a directory holding a Kineto+ET pair or a TrioSim
 * CSV pair, or explicit files (formats detected by content, not name). On failure returns a
 * non-OK status with a one-line message naming the file and what to do; *out is untouched.
 * Cost: O(total input size + events log events). */
mt_status mt_trace_load(const char *const *paths, int n_paths, const trace_load_opts *opts,
                     mt_trace **out, mt_error *err);

void mt_trace_free(mt_trace *t);

/* A warning about a loaded trace that is usable but not whole (the reader's doubts, t->warning: a
 * CSV that may be cut at a line break, a fallback time column; GPU kernels no operator owns),
 * into buf naming the file; 0 and "" when there is none. */
int mt_trace_warning(const mt_trace *t, char *buf, size_t len);

/* A deep copy of t into *out (its arrays and paths its own, an empty string pool: the strings
 * still point into t's, so t must outlive *out), for a transform that rewrites a trace's numbers
 * (extrapolate/seqlen.h). MT_ENOMEM when out of memory (nothing kept). O(size of t). */
mt_status mt_trace_clone(const mt_trace *t, mt_trace **out);

/* For the commands that need operator times (simulate, compare, perfmodel predict, hop): fails
 * with a one-line message naming the trace when it has none to give (an Execution Trace without
 * its Kineto trace, a step without operators or whose operators all last 0 ns). */
mt_status mt_trace_check_timed(const mt_trace *t, mt_error *err);

const char *mt_trace_phase_name(trace_phase p);
const char *mt_trace_role_name(trace_role r);
const char *mt_trace_comm_name(trace_comm c);
const char *mt_trace_group_src_name(trace_group_src s);
const char *mt_trace_format_name(trace_format f);
const char *mt_trace_link_method_name(trace_link_method m);
/* Bytes per element for a dtype name as written by PyTorch ("float", "c10::Half", "long"...).
 * Returns 0 when unknown. */
int32_t mt_trace_dtype_size(const char *dtype);

/* Convenience accessors. */
static inline const trace_tref *trace_op_inputs(const mt_trace *t, const trace_op *op) {
    return t->trefs + op->in_first;
}
static inline const trace_tref *trace_op_outputs(const mt_trace *t, const trace_op *op) {
    return t->trefs + op->out_first;
}
/* 1 when the op is nothing but a collective call (c10d::allreduce_, nccl:*, record_param_comms as
 * an outermost op, or a communication op of an ET or TrioSim trace): the extrapolator replaces it
 * with the collectives its plan needs. An op that encloses a collective call is compute. */
static inline int trace_op_is_comm(const trace_op *o) { return o->comm != TRACE_COMM_NONE && !o->comm_inside; }
/* Total device time of the step: sum over ops of dev_ns. */
int64_t mt_trace_total_dev_ns(const mt_trace *t);

#endif

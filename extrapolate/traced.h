/* extrapolate/traced.h — the traced plan: how the traced job spread its step over its ranks, read
 * from the trace's own collectives (trace_coll instances, tracer/kcomm.h) and its distributedInfo.
 *
 * What it tells: the job's world size, the traced rank and backend; the step's collectives by kind
 * (count, bytes, group sizes); which share of the parameter bytes the traced all-reduces carry; and
 * from that how the job synchronised its parameters:
 *   single   one GPU (world size <= 1 and no collective on more than one rank): nothing to keep,
 *            the extrapolator generates the plan's collectives as for any single-GPU trace;
 *   ddp      all-reduces carrying >= 90 % of the parameter bytes (DDP buckets, DataParallel); in a
 *            trace without parameter sizes, all-reduces with nothing sharded (no all-to-all,
 *            reduce-scatter, all-gather, send or recv);
 *   partial  all-reduces carrying less: the rest of the parameters is sharded (embedding tables
 *            exchanged by all-to-all, ZeRO/FSDP reduce-scatter + all-gather) or not replicated;
 *   none     a multi-rank job without all-reduce (tables sharded whole): no parameter is
 *            synchronised across ranks;
 *   pipeline a multi-rank job whose collectives are sends and receives only (barriers aside): the
 *            rank is one stage of a pipeline over the world's ranks (torch's Pipe, GPipe over
 *            send/recv), which ran M micro-batches: a first or last stage sends once per
 *            micro-batch (activations forward, or gradients back), a middle stage twice
 *            (pipe_micro; 0 when the counts do not tell: an unknown rank in a middle position
 *            or unequal sends and receives);
 *   tensor   all-reduces issued in the forward pass: activations summed over a tensor-parallel
 *            group (Megatron's row-parallel output), so each rank holds part of the model, however
 *            many parameter bytes the all-reduces carry (checked before ddp).
 * The extrapolator keeps the traced collectives by default for a multi-rank trace (MT_COMM_TRACED,
 * plan.h) instead of inventing the plan's (a DDP all-reduce of parameters the job sharded, an
 * all-to-all or send/recv the job did that vanishes).
 * Cost: O(collective calls). No allocation.
 */
#ifndef MT_EXTRAPOLATE_TRACED_H
#define MT_EXTRAPOLATE_TRACED_H

#include <stddef.h>
#include <stdint.h>

#include "extrapolate/collective.h"
#include "extrapolate/group.h"
#include "extrapolate/plan.h"
#include "tracer/trace.h"

typedef enum { MT_TRACED_SINGLE = 0, MT_TRACED_DDP, MT_TRACED_PARTIAL, MT_TRACED_NONE, MT_TRACED_TENSOR,
               MT_TRACED_PIPELINE } mt_traced_sync;

/* The share of the parameter bytes the all-reduces must carry for the job to count as DDP. */
#define MT_TRACED_DDP_SHARE 0.9

typedef struct mt_traced_kind {
    int32_t count;              /* collectives of this kind per step */
    double bytes;               /* their buffers (collective.h's S) summed */
    int32_t group_min, group_max; /* their group sizes, 0 unknown */
} mt_traced_kind;

typedef struct mt_traced_plan {
    int32_t world_size;         /* distributedInfo's, else the largest group seen, 0 unknown */
    int32_t rank;               /* -1 unknown */
    const char *backend;        /* NULL unknown */
    int multi_rank;             /* 1: the trace is one rank of a job on more than one GPU */
    int32_t n_colls;            /* collectives per step */
    int32_t n_group_assumed;    /* of them, how many name no group (the world size is assumed) */
    mt_traced_kind kinds[TRACE_COMM_OTHER + 1]; /* by trace_comm */
    double allreduce_bytes;     /* every all-reduce's buffer, summed */
    double param_bytes;         /* the trace's parameter bytes */
    double param_share;         /* allreduce_bytes / param_bytes; 0 when the parameters are unknown */
    int32_t fwd_allreduces;     /* all-reduces made by a forward op (tensor parallelism) */
    int32_t pipe_micro;         /* pipeline: the micro-batches the traced stage ran, 0 unknown */
    mt_traced_sync sync;
} mt_traced_plan;

/* Reads the traced plan of t. */
void mt_traced_plan_read(const mt_trace *t, mt_traced_plan *out);

/* "single", "ddp", "partial", "none", "tensor", "pipeline". */
const char *mt_traced_sync_name(mt_traced_sync s);

/* One line: "rank 0 of 16 (nccl): 2 all-reduces carry 134 % of the parameter bytes (ddp); 12
 * all-to-alls, 2 reduce-scatters ..." into buf; returns its length as snprintf. */
int mt_traced_plan_describe(const mt_traced_plan *p, char *buf, size_t len);

/* How a program runs one traced collective under a plan (mt_traced_task_of). */
typedef struct mt_traced_task {
    mt_coll_op op;              /* the schedule: its own kind; send and recv an all-to-all of 2 x S on a
                                 * pair (each rank sends its S to the other: rank 0's trace stands for
                                 * every rank) */
    int group;                  /* mt_group_kind: DP for the job's whole group, a DP sub-group for a
                                 * smaller one (group.h); DP when no sub-group fits the plan */
    double bytes;               /* collective.h's S at the traced batch: all-to-all and send/recv scale
                                 * with the micro-batch (the caller multiplies by the batch factor),
                                 * the others carry parameters or fixed buffers and do not */
    int scales;                 /* 1: bytes follow the batch (all-to-all, send, recv) */
    int blocking;               /* 0 for an all-reduce issued in backward (a gradient bucket, waited
                                 * for before the optimizer), 1 otherwise (its output is used next) */
} mt_traced_task;

/* The task for t->colls[c] (an instance) under resolved plan pl, adding a sub-group kind to g when
 * needed. Returns 0 when it moves nothing here: a group of one rank (traced, or D = 1), a barrier
 * or a kind no schedule models. */
int mt_traced_task_of(const mt_trace *t, int32_t c, const mt_plan *pl, mt_groups *g, mt_traced_task *out);

/* The schedule op of a traced kind (send and recv: an all-to-all on a pair); -1 for none (barrier,
 * other). */
int mt_traced_coll_op(trace_comm k);

/* How long instance t->colls[c] took in the trace, in ns: on a GPU trace its communication kernels
 * (NCCL; launched inside the call, else the op's comm_dev_ns when the op made only this collective),
 * on a CPU trace the call itself (gloo's worker event). Both include the time it waited for its
 * peers. -1 when the trace does not tell (GPU trace, no kernel found). */
int64_t mt_traced_coll_ns(const mt_trace *t, int32_t c);

#endif

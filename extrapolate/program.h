/* extrapolate/program.h — the extrapolator: one GPU's trace + a plan -> the task program each
 * virtual GPU runs.
 *
 * GPUs that play the same part run the same program: every data-parallel replica and every
 * tensor-parallel rank of pipeline stage s runs stage s's program (they differ only in which
 * group members they talk to, resolved by sim/ at run time). So the program is built once per
 * stage, O(P x M x ops) tasks whatever N is, and each virtual GPU walks it with a cursor: the
 * simulator generates work on the fly and its memory is O(trace + GPUs + tasks in flight),
 * never O(N x trace).
 *
 * A stage program is a list of tasks in issue order on the GPU's compute stream:
 *   COMPUTE    a run of consecutive operators (items[item_first ..]) with their durations;
 *   COLL       a collective on the GPU's TP or DP group (or a DP sub-group: group.h); `blocking`
 *              ones stop the compute stream until they finish (TP splits, DataParallel's
 *              all-reduce); non-blocking ones (DDP buckets) go to the communication stream, one at
 *              a time per group. With plan comm traced (a multi-rank trace) the DP collectives are
 *              the trace's own, each after the op that issued it (traced.h: mt_traced_task_of),
 *              and no gradient all-reduce is generated;
 *   SEND/RECV  pipeline activations (dir +1, to the next stage) or their gradients (dir -1);
 *              RECV blocks until the matching micro-batch has arrived;
 *   WAIT_COMM  blocks until every non-blocking collective issued so far has finished
 *              (the optimizer waits for the last DDP bucket);
 *   WAIT_GROUP blocks until at most `keep` of the non-blocking collectives this GPU issued on its
 *              group of kind `group` are unfinished (a group runs them in issue order, so all but
 *              the last `keep`: FSDP waits for a unit's all-gather while the next one's prefetch
 *              stays in flight).
 *   HOLD       the compute stream waits dur_ps, a wait the trace measured and the simulation
 *              carries as it was (pass_traced.c: after a gloo send/recv of a CPU trace, the
 *              unprofiled Work.wait() until the next op; counted as bubble: waiting for the peer);
 * Micro-batch boundaries are marked by MB_BEGIN/MB_END tasks (forward begin increments the
 * live-activation count, backward end decrements it) so the simulator can measure peak memory.
 *
 * Operator times come from an mt_optime_fn: the trace's own time rescaled for the micro-batch
 * (batch_factor) and the tensor split (tp_split). The default is proportional scaling of
 * batch-dependent operators; perfmodel/ provides fitted and cross-GPU models with the same
 * signature.
 */
#ifndef MT_EXTRAPOLATE_PROGRAM_H
#define MT_EXTRAPOLATE_PROGRAM_H

#include <stdint.h>

#include "extrapolate/collective.h"
#include "extrapolate/group.h"
#include "extrapolate/plan.h"
#include "extrapolate/stages.h"
#include "tracer/optime.h"
#include "tracer/trace.h"
#include "util/err.h"

/* mt_optime_fn, mt_op_batch_dependent, mt_optime_proportional: tracer/optime.h. */

typedef enum {
    MT_TASK_COMPUTE = 0,
    MT_TASK_COLL,
    MT_TASK_SEND,
    MT_TASK_RECV,
    MT_TASK_WAIT_COMM,
    MT_TASK_MB_BEGIN,
    MT_TASK_MB_END,
    MT_TASK_WAIT_GROUP,
    MT_TASK_HOLD
} mt_task_kind;


/* Why a collective is there (for reports). */
typedef enum {
    MT_COLL_WHY_TP_FWD = 0, /* tensor-parallel forward (row all-reduce, column all-gather, ...) */
    MT_COLL_WHY_TP_BWD,     /* tensor-parallel backward (input-gradient all-reduce) */
    MT_COLL_WHY_DP_GRAD,    /* data-parallel gradient all-reduce (sync or a DDP bucket) or, sharded
                             * (ZeRO, FSDP), reduce-scatter and the hybrid all-reduce of the shards */
    MT_COLL_WHY_TRACED,     /* one of the traced job's own collectives, kept (plan comm traced) */
    MT_COLL_WHY_DP_PARAMS,  /* sharded data parallel: the all-gather of parameters (ZeRO, FSDP) */
    MT_COLL_WHY_CP_FWD,     /* context parallel: the K/V blocks of an attention around the CP ring */
    MT_COLL_WHY_CP_BWD,     /* context parallel: K/V and their gradients around the ring in backward */
    MT_COLL_WHY_EP,         /* expert parallel: tokens dispatched to / combined from their experts (pass_ep.c) */
    MT_COLL_WHY_EP_GRAD,    /* expert parallel: expert gradients over the expert-data-parallel group */
    MT_COLL_WHY_EMB         /* sharded embeddings: pooled embeddings or their gradients (pass_emb.c) */
} mt_coll_why;

typedef struct mt_item {     /* one operator inside a COMPUTE task */
    int32_t op;              /* trace op id */
    int32_t layer;           /* layer used for reports (inherited when the op has none), -1 */
    int64_t dur_ps;
    int32_t split;           /* tensor split applied (1 = replicated) */
} mt_item;

typedef struct mt_task {
    mt_task_kind kind;
    mt_group_kind group;     /* COLL: TP, DP or a DP sub-group (extrapolate/group.h) */
    mt_coll_op coll;         /* COLL */
    mt_coll_why why;         /* COLL */
    int8_t blocking;         /* COLL */
    int8_t dir;              /* SEND/RECV: +1 activations forward, -1 gradients backward;
                                MB_BEGIN/MB_END: +1 forward, -1 backward */
    int8_t phase;            /* trace_phase of the work (COMPUTE, COLL) */
    int32_t mb;              /* micro-batch, -1 none */
    int32_t chunk;           /* SEND/RECV, MB_BEGIN/MB_END: the model chunk of this GPU (0 .. V-1, --vpp;
                                0 without) */
    int32_t layer;           /* COLL: the layer that caused it, -1 */
    int32_t item_first, item_count; /* COMPUTE */
    int64_t dur_ps;          /* COMPUTE: sum of its items; HOLD: the measured wait */
    double bytes;            /* COLL: per-rank buffer (all-gather: output); SEND: payload */
    int32_t traced;          /* COLL kept from the trace: its trace_coll index; -1 otherwise */
    int32_t keep;            /* WAIT_GROUP: collectives of its group that may stay unfinished */
    int8_t moe;              /* COMPUTE: 1 when it holds expert ops or sharded tables, whose time depends
                              * on the GPU's EP rank (moe.h: mt_moe_op_factor) or DP slot (emb_owner);
                              * COLL all-to-all: 1 rank j receives its share (an EP dispatch, a table's
                              * gradient), 2 rank j sends its share (a combine, pooled embeddings) */
    int32_t moe_layer;       /* COLL with moe: the MoE layer whose shares it follows, -1 emb_share */
} mt_task;

/* A stage's COMPUTE work tallied as it is emitted, for a bound-only program (mt_program_opts.bound_only):
 * what run/prune.h's bounds read of the tasks, without the tasks. */
typedef struct mt_stage_tally {
    int32_t m;                         /* the plan's micro-batches */
    double *mb_ps;                     /* [2 m]: micro-batch j's COMPUTE tasks' time, forward ([2 j]) and
                                        * backward ([2 j + 1], by each task's phase), ps */
    double mb_total_ps;                /* every COMPUTE task of a micro-batch (mb >= 0), ps */
    int32_t *op_tasks;                 /* [n_ops]: COMPUTE tasks whose first item is that op */
    int32_t n_ops;                     /* the trace's ops */
    /* the last backward COMPUTE task of a micro-batch (phase not forward, mb >= 0) in issue order: */
    int32_t last_bwd_mb;               /* its micro-batch, -1 none */
    int32_t last_bwd_op;               /* its first op */
    double last_bwd_ps;                /* its time, ps */
    double tail_ps;                    /* the time of the COMPUTE tasks after it, ps */
    int32_t *tail_ops;                 /* [n_tail]: the first op of each COMPUTE task after it */
    int32_t n_tail;
    int64_t cap_tail;
    int last_bwd_open;                 /* 1 while it is the last task (its items still come) */
    /* tasks the host issues, counted as the next task retires them (a pass may still change the last
     * task's group; the program's last task, in tasks[0], is not counted): COLL tasks per group kind,
     * and ([MT_GROUP_KINDS_MAX]) SENDs; in all and after the last backward task */
    int32_t issued[MT_GROUP_KINDS_MAX + 1], tail_issued[MT_GROUP_KINDS_MAX + 1];
} mt_stage_tally;

typedef struct mt_stage_program {
    mt_task *tasks;  int32_t n_tasks;
    mt_item *items;  int32_t n_items;
    int32_t layer_first, layer_last;   /* layers [first, last] of this stage, -1 when none */
    int64_t compute_ps;                /* sum of COMPUTE durations */
    int64_t recompute_ps;              /* of which forward ops re-run in backward (--recompute) */
    double param_bytes;                /* parameters held per GPU (split ones / T) */
    double grad_bytes, optstate_bytes; /* per GPU */
    double act_bytes_per_mb;           /* activations kept for backward, per micro-batch (under --vpp
                                        * per live chunk and micro-batch: the stage's / V) */
    double act_bytes_transient;        /* recomputation: activations that live only while one layer
                                        * (or attention core) runs its backward, once per GPU */
    double boundary_bytes;             /* activations sent to the next stage per micro-batch */
    double mem_bwd_peak_bytes;         /* one micro-batch per step (M = 1, no --vpp, the trace's
                                        * saved set known): the most activations + the backward's
                                        * temporaries + gradients held at once in its backward,
                                        * activations freed after their last backward reader (a
                                        * recomputed one made at its re-run), gradients made as their
                                        * backward op runs (zero_grad(set_to_none=True)); 0 else */
    mt_stage_tally *tally;             /* bound_only: the tally (tasks holds only the last task, items
                                        * none); NULL otherwise */
} mt_stage_program;

typedef struct mt_program {
    mt_plan plan;                      /* resolved */
    const mt_trace *trace;
    int32_t n_stages;
    mt_stage_program *stages;
    int32_t n_layers;                  /* trace layers (reports index per-layer arrays by it) */
    /* TP classification, for reports and tests: */
    int32_t tp_split_ops, tp_colls_fwd, tp_colls_bwd, tp_unplaced_bwd;
    int32_t *tp_replicated;            /* forward ops tp > 1 left whole because no Megatron rule
                                        * recognises them (a matmul or attention outside a column
                                        * region, a convolution-like or unknown op), in trace order */
    int32_t n_tp_replicated;
    int32_t ddp_buckets;               /* DDP buckets per step (on each stage's DP group) */
    int32_t distopt_gathers;           /* --dist-opt: parameter all-gather buckets per step, all stages */
    double distopt_bucket_bytes;       /* --dist-opt: a bucket's gradient bytes (pass_distopt.c), 0 otherwise */
    int32_t tied_syncs;                /* tied weights: gradient all-reduces between the first and the
                                        * last pipeline stage per step (one on each of the two) */
    int32_t cp_rings;                  /* context parallel: K/V rings per step (forward and backward,
                                        * every attention, micro-batch and stage) */
    int32_t shard_units;               /* ZeRO-3 / FSDP: units gathered in the first micro-batch's forward,
                                        * all stages (a root unit once) */
    mt_precision prec_traced, prec;    /* the precision policy the trace ran and the one assumed (resolved) */
    mt_prec_scale prec_scale;          /* prec over prec_traced (precision.h): states, DP traffic, optimizer */
    int32_t shard_unit_blocks;         /* ZeRO-3 / FSDP: repeating blocks per unit (plus a root unit), 0 the
                                        * trace's layers (asked, or no repeating block found) */
    mt_groups groups;                  /* the mesh and its group-kind table (group.h): TP, DP, and
                                        * the kinds the passes added (DP sub-groups of traced
                                        * collectives, ...) */
    mt_stage_cut stage_cut;            /* where the pipeline partitioner could cut (stages.h) */
    int32_t traced_colls;              /* the trace's collectives kept per step (plan comm traced) */
    int32_t traced_dropped;            /* the trace's collectives not kept: on a group of one rank in
                                        * this plan, or of a kind no schedule models */
    int64_t traced_hold_ps;            /* measured waits carried per step (HOLD tasks, stage 0) */
    int32_t traced_holds;              /* how many */
    int32_t skipped_comm_ops;          /* ops of the trace that are only a collective call (replaced);
                                        * an op enclosing one runs as compute */
    char warning[256];                 /* first warning, "" when none */
    int32_t *emb_owner;                /* --embedding-shard table (pass_emb.c): per op, the DP slot holding
                                        * the table of an embedding op (forward or backward; it runs there
                                        * for all D replicas' batches, nowhere else), -1; NULL without */
    double *emb_share;                 /* per DP slot: its tables' share of the pooled bytes (table-wise
                                        * all-to-alls with moe_layer -1), NULL without */
    double *emb_mem;                   /* table-wise: per stage x DP slot, that GPU's params, grads and
                                        * optimizer bytes (3 each: its own tables, not the stage's mean
                                        * in mt_stage_program), NULL without */
    struct mt_moe *moe;                /* expert parallelism (pass_ep.c, moe.h): the trace's MoE layers
                                        * and the plan's expert load; NULL without */
} mt_program;

typedef struct mt_program_opts {
    mt_optime_fn optime;     /* NULL: mt_optime_proportional */
    void *optime_ctx;
    int one_op_per_task;     /* every op its own COMPUTE task (host modelling times each op) */
    double pp_send_ns_per_byte; /* the pipeline partitioner's cost of a byte sent between stages
                                 * (stages.h; 1e9 / the link bandwidth), 0: sends not weighed */
    int bound_only;          /* 1: each stage's COMPUTE work tallied (mt_stage_tally), its tasks and items
                              * not kept (the passes see the last task only): the same sums and states
                              * as the full program in O(ops) memory, for a plan search's bounds; such
                              * a program cannot be simulated */
} mt_program_opts;

/* Builds the stage programs for a resolved plan (mt_plan_resolve). Cost O(M x ops + tensors x P).
 * MT_EINVAL for a plan the trace cannot support: more stages than layers, a tensor-parallel degree
 * that does not divide an op's split dimension (output or input features, output channels,
 * attention heads; the message names the op and the largest degree that fits). */
mt_status mt_program_build(const mt_trace *t, const mt_plan *plan, const mt_program_opts *o,
                           mt_program **out, mt_error *err);
void mt_program_free(mt_program *p);

/* Where a pipeline send goes: from chunk v (0 .. V-1) of stage s, dir +1 (activations) to the next
 * model chunk v x P + s + 1, dir -1 (gradients) to the previous; the last stage sends chunk v's
 * output to stage 0's chunk v + 1, stage 0 its gradients to stage P-1's chunk v - 1. */
void mt_pp_peer(const mt_plan *p, int32_t s, int32_t v, int dir, int32_t *peer_s, int32_t *peer_v);

#endif

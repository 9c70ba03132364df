/* extrapolate/build.h — inside the extrapolator: the builder's state and the strategy passes.
 *
 * mt_program_build (program.c) runs in three parts:
 *  1. the core analysis of the trace, strategy-free: units (layers), stages (the partitioner),
 *     anchors (where a forward op's backward-side work goes), gradients (when each weight's
 *     gradient is ready), operator times;
 *  2. each pass's prepare (its own analysis: tensor-parallel splits, traced collectives, ...);
 *  3. emission, per stage: the pipeline pass orders forward and backward micro-batches
 *     (mt_pp_emit_stage), the core walks each micro-batch's ops (mt_bld_forward, mt_bld_backward)
 *     and every pass adds its tasks through the hooks of mt_pass at fixed points.
 * A strategy is one file (pass_*.c) defining one const mt_pass and one entry in program.c's
 * table; hooks run in table order. A pass keeps its state in the void * its prepare returns and
 * reads the core's arrays here; it never reads another pass's state.
 * Invariant: the core arrays are read-only once emission starts, except through mt_emit_*.
 */
#ifndef MT_EXTRAPOLATE_BUILD_H
#define MT_EXTRAPOLATE_BUILD_H

#include <stdint.h>

#include "extrapolate/acts.h"
#include "extrapolate/program.h"
#include "extrapolate/statemem.h"

typedef struct mt_emit {           /* appends tasks and items to one stage program */
    mt_stage_program *sp;
    int64_t cap_tasks, cap_items;
} mt_emit;

typedef struct mt_bld {
    const mt_trace *t;
    const mt_plan *plan;           /* resolved */
    mt_program *p;
    mt_optime_fn optime;
    void *optime_ctx;
    int one_op_per_task;
    int bound_only;                /* mt_program_opts': stages tallied (mt_stage_tally), not kept */
    double pp_send_ns_per_byte;    /* mt_program_opts' */
    int32_t n_units;               /* layers, or forward ops of a trace without layers */
    int32_t *unit;                 /* per op, -1 */
    int32_t *stage_of_unit;        /* the pipeline stage (GPU) of a unit: its chunk mod P */
    int32_t *chunk_of_unit;        /* the model chunk of a unit, 0 .. P x V - 1 (== stage without --vpp) */
    int32_t chunk;                 /* emission: the model chunk whose micro-batch is being emitted */
    int32_t *chunk_first;          /* emission: chunk_ops[chunk_first[d C + c] .. chunk_first[d C + c + 1])
                                    * are the compute ops of model chunk c in trace order, d = 0
                                    * forward, 1 backward (C = pp x vpp chunks) */
    int32_t *chunk_ops;
    int64_t *op_ps;                /* emission: per op, op_ns in ps as mt_emit_item rounds it (once per build,
                                    * not once per micro-batch) */
    int32_t *other_ops, n_other;   /* emission: the OTHER and optimizer ops (not collective calls) in trace
                                    * order, indexed at the first stage's (every stage walks them) */
    int32_t *split;                /* per op: its tensor split, 1 = replicated (pass_tp fills it) */
    int32_t *tok;                  /* per op: the factor of split that divides its tokens (sequence
                                    * parallel, context parallel), 1 none: the weights it reads are
                                    * split split / tok ways */
    int32_t *anchor;               /* per forward op: the backward op after which its backward-side
                                    * work goes (its last backward op, else its unit's), -1 */
    double *grad_ready;            /* per backward op: gradient bytes (per rank) ready after it */
    double *tail_grad;             /* per stage: gradients with no backward op (ready at the end) */
    double *w_stage_bytes;         /* per stage: weight bytes per rank (statemem.h's classes summed) */
    double *w_stage_rep;           /* per stage: of which replicated over the data-parallel (x CP) group:
                                    * what ZeRO / FSDP may shard (not experts, not sharded tables) */
    double total_w_bytes;          /* unsplit, all stages */
    int32_t *w_stage;              /* per tensor: stage of a weight (its first forward reader's), -1 */
    int32_t *w_copy;               /* per tensor: another stage whose forward reads the weight and so holds
                                    * a copy (a tied embedding on the last stage), -1 */
    int32_t *w_split;              /* per tensor: tensor-parallel split of a weight (mt_bld_weight_split) */
    double *w_own;                 /* per tensor: the split of a weight over a group other than TP, set by
                                    * the passes' prepare: ep x local / E for an expert's (a GPU holds its
                                    * experts only), R for a sharded table; 1 for replicated weights */
    int8_t *row;                   /* per op: a row-parallel linear (pass_tp): its 1-D weights (the bias,
                                    * added after the all-reduce) stay whole */
    double *op_ns;                 /* per op: its time at the plan's micro-batch and its split */
    int32_t first_fwd;             /* first forward op, n_ops when none */
    double *boundary;              /* per model chunk: activation bytes sent to the next, per micro-batch */
    double *act_mb;                /* per stage: activation bytes kept per micro-batch (per rank) */
    mt_act *acts;                  /* the activations a micro-batch keeps for backward (acts.h) */
    int32_t n_acts;
    int32_t *act_from;             /* per act: the backward op before which recomputation makes it
                                    * again (not kept from its forward), -1 kept (pass_recompute) */
    double *act_extra;             /* per stage: bytes per rank kept only for recomputation (the
                                    * recomputed groups' inputs), held through the backward */
    void **state;                  /* per pass (program.c's table order): what its prepare returned */
} mt_bld;

/* A strategy pass. Every hook may be NULL; `st` is the pass's own state. Hooks return MT_OK, or
 * an error (MT_EINVAL filled into err by prepare; MT_ENOMEM otherwise). */
typedef struct mt_pass {
    const char *name;
    /* Part 2: its analysis; *st receives its state (NULL for none). */
    mt_status (*prepare)(mt_bld *b, void **st, mt_error *err);
    void (*release)(void *st);
    /* After the core's gradients, operator times and boundaries: analysis that needs them. */
    mt_status (*analyse)(mt_bld *b, void *st, mt_error *err);
    /* The fraction of optimizer op `op` this GPU runs (1: all of its stage's share). */
    double (*optimizer_share)(mt_bld *b, void *st, int32_t op);
    /* Stage s begins (before the ops that precede the step's first forward op). */
    mt_status (*stage_begin)(mt_bld *b, void *st, mt_emit *em, int32_t s);
    /* Micro-batch mb's forward (dir +1) or backward (dir -1) begins / ends on stage s; `last` is 1
     * for the last backward micro-batch of the model chunk (of the step without --vpp). Forward: after MB_BEGIN, before SEND's end;
     * backward: before MB_END. */
    mt_status (*mb_begin)(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last);
    mt_status (*mb_end)(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last);
    /* Around forward or backward op `op` of micro-batch mb. */
    mt_status (*before_op)(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last);
    mt_status (*after_op)(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last);
    /* 1: with a NULL state (its prepare found nothing to do) before_op and after_op do nothing, so the
     * per-op walk does not call them (a micro-batch's walk calls each op's hooks: most passes are off) */
    int idle_without_state;
    /* Before an OTHER or optimizer op of stage s runs its share (called even for a zero share). */
    mt_status (*other_op)(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t op);
    /* Every micro-batch has run its backward; the optimizer is next. */
    mt_status (*backward_done)(mt_bld *b, void *st, mt_emit *em, int32_t s);
    /* Forward op `op` of micro-batch mb is re-run in backward (recomputation): the pass adds what
     * that forward needs (tensor parallel: its forward collectives). */
    mt_status (*recompute_op)(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb);
    /* After the optimizer: the step's last tasks. */
    mt_status (*step_end)(mt_bld *b, void *st, mt_emit *em, int32_t s);
    /* Then what only the pass knows of stage s's parameter states (statemem.h: ZeRO-3 / FSDP's
     * gathered unit); the core composes them once (mt_state_memory) into sp's byte fields. */
    void (*states)(mt_bld *b, void *st, int32_t s, mt_state_bytes *w);
    /* Then the stage's activation memory (sp's act_ fields) may be adjusted. */
    void (*memory)(mt_bld *b, void *st, int32_t s, mt_stage_program *sp);
    /* One line into buf when the pass has something to warn about; returns its importance (0
     * none; the program keeps the most important, the first in table order on a tie). */
    int (*warning)(mt_bld *b, void *st, char *buf, int len);
} mt_pass;

/* The passes, in program.c's table. */
extern const mt_pass mt_pass_tp, mt_pass_cp, mt_pass_traced, mt_pass_dp, mt_pass_pp;
extern const mt_pass mt_pass_ep;  /* pass_ep.c: expert parallelism (moe.h) */
extern const mt_pass mt_pass_emb; /* pass_emb.c: sharded embedding tables */
extern const mt_pass mt_pass_recompute;
extern const mt_pass mt_pass_moecut; /* pass_moecut.c: no pipeline cut inside a MoE layer */
extern const mt_pass mt_pass_distopt; /* pass_distopt.c: Megatron's distributed optimizer's all-gathers */
/* The gradient bytes (reduce dtype) that close a data-parallel bucket, the first of a backward or a
 * later one: DDP's --first-bucket / --bucket, Megatron's buckets under --dist-opt (pass_distopt.c). */
double mt_dp_bucket_cap(const mt_bld *b, int first);

/* ---- the core, for passes ---------------------------------------------------------------- */

/* The stage op runs on (ops outside any unit: the first stage in forward, the last otherwise). */
int32_t mt_bld_op_stage(const mt_bld *b, int32_t op);
/* The unit of op as reports see it: -1 when the trace has no layers. */
int32_t mt_bld_layer(const mt_bld *b, int32_t op);
/* The model chunk op runs in (as mt_bld_op_stage; == its stage without --vpp). */
int32_t mt_bld_op_chunk(const mt_bld *b, int32_t op);
/* Emits micro-batch mb's forward or backward of model chunk c (stage c mod P; c == the stage without
 * --vpp) with every pass's hooks, which get the stage and find c in b->chunk. */
mt_status mt_bld_forward(mt_bld *b, mt_emit *em, int32_t c, int32_t mb);
mt_status mt_bld_backward(mt_bld *b, mt_emit *em, int32_t c, int32_t mb, int last);
/* Forward op `op` re-run for micro-batch mb inside the backward (recomputation), with every pass's
 * recompute_op hook after it. */
mt_status mt_bld_recompute(mt_bld *b, mt_emit *em, int32_t op, int32_t mb);

/* Tensor facts (program.c). */
/* The tensor-parallel split of input j of forward op `op` when it is a weight: the op's split over its
 * token share (a split of tokens keeps whole weights), 1 for the bias of a row-parallel linear. */
int32_t mt_bld_weight_split(const mt_bld *b, int32_t op, int32_t j);
int mt_bld_tensor_role(const mt_trace *t, const trace_tref *r);
double mt_bld_tensor_bytes(const mt_trace *t, int32_t tensor);
/* The 4-D shape of o's k-th input when it is an activation (or the model input), else NULL. */
const int64_t *mt_bld_act4(const mt_trace *t, const trace_op *o, int32_t k);
/* What forward op o is to attention: 1 a fused attention op (scaled_dot_product_attention, flash,
 * cuDNN; q, K, V its inputs 0..2, each [batch, heads, sequence, head_dim]), 2 a matmul of two 4-D
 * activations (eager attention's scores or context), 0 neither. O(1). */
int mt_bld_attn_core(const mt_trace *t, const trace_op *o);
/* Per tensor the forward op that outputs it (the last such), -1; a new array the caller frees, NULL
 * when out of memory. O(ops + trefs). */
int32_t *mt_bld_producers(const mt_trace *t);

/* ---- emission (emit.c) ------------------------------------------------------------------- */

mt_task *mt_emit_task(mt_emit *em, mt_task_kind kind);
/* Op `op` running ns on split ranks in micro-batch mb (-1: none); joins the previous COMPUTE
 * task of the same micro-batch unless the program has one op per task. */
mt_status mt_emit_item(mt_bld *b, mt_emit *em, int32_t op, double ns, int32_t split, int32_t mb);
/* An op's time as emission counts it: ns rounded to whole ps, at least 0. */
int64_t mt_emit_ps(double ns);
/* mt_emit_item with its time already in ps (mt_emit_ps). */
mt_status mt_emit_item_ps(mt_bld *b, mt_emit *em, int32_t op, int64_t ps, int32_t split, int32_t mb);
mt_status mt_emit_coll(mt_emit *em, mt_group_kind g, mt_coll_op c, mt_coll_why why, int blocking, double bytes,
                       int32_t layer, int32_t mb, trace_phase phase);
mt_status mt_emit_simple(mt_emit *em, mt_task_kind kind, int dir, int32_t mb, double bytes);

/* ---- the pipeline pass (pass_pp.c) -------------------------------------------------------- */

/* Stage s's micro-batches in the plan's schedule (GPipe, 1F1B, interleaved 1F1B). */
mt_status mt_pp_emit_stage(mt_bld *b, mt_emit *em, int32_t s);
/* Activation bytes per micro-batch: sent across each stage boundary, kept by each stage. */
mt_status mt_pp_boundaries(mt_bld *b);

#endif

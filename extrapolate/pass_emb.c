/* extrapolate/pass_emb.c — the sharded-embedding pass (--embedding-shard, TorchRec's sharding types):
 * the trace's embedding tables (forward ops of TP kind EMBEDDING reading a weight: EmbeddingBag,
 * Embedding) sharded over the DP group of R = D x E replicas instead of replicated.
 *   table   whole tables per rank, greedily by size onto the least loaded rank; a table's owner
 *           looks it up for all R replicas' batches (R x its traced time, nothing elsewhere) and
 *           sends every other rank its pooled output for that rank's samples;
 *   row     every table's rows split R ways: each rank looks up the ids that hit its rows for all
 *           R batches (its traced time) and sends each other rank its partial pooled sums for that
 *           rank's samples (TorchRec's reduce-scatter, as an all-to-all of R x the pooled bytes);
 *   column  every table's columns split R ways: each rank looks up all ids for all R batches on
 *           1/R of the columns (its traced time) and sends each other rank those columns.
 * Forward: one blocking all-to-all of the pooled embeddings after the last table lookup; backward:
 * one of their gradients before the first table's backward op (the same bytes, the other way).
 * Embedding gradients leave the data-parallel buckets (never all-reduced): each rank updates its
 * shard: the stage's weights (memory, optimizer share) count 1/R of the tables (statemem.h's emb
 * class: ZeRO / FSDP never shard or gather them again); table-wise, each GPU holds its own tables
 * (emb_memory: the GPU holding the largest table is the one that runs out of memory first). Under --tp a
 * table is split by vocabulary first, each TP rank's slice then sharded over R. A tied table (an LM
 * head reads it) is refused.
 * Per rank and micro-batch the forward all-to-all sends: table x its tables' pooled bytes,
 * row x all pooled bytes, column (R-1)/R x all pooled bytes.
 * Invariant: each embedding weight byte is in no DP bucket; 2 all-to-alls per micro-batch.
 */
#include <stdlib.h>

#include "extrapolate/build.h"
#include "extrapolate/embtables.h"
#include "extrapolate/statemem.h"

typedef struct emb_state {
    int32_t *tables;        /* embedding forward ops */
    int32_t n;
    int32_t first_bwd;      /* the first backward op of any table, -1 */
    int32_t last_fwd;
    double pooled;          /* pooled output bytes of all tables, traced batch */
    double weights;         /* table bytes */
} emb_state;

/* statemem.h's emb class: each table's weight is split over the R replicas; a table whose weight
 * another forward op reads too (a tied embedding: the LM head) is refused, its gradient being the
 * head's as well. */
static mt_status mark_tables(mt_bld *b, emb_state *x, mt_error *err) {
    const mt_trace *t = b->t;
    for (int32_t k = 0; k < x->n; k++) {
        int32_t w = mt_emb_table_weight(t, x->tables[k]);
        for (int32_t i = 0; i < t->n_ops; i++) {
            const trace_op *o = &t->ops[i];
            if (o->phase != TRACE_PHASE_FORWARD || mt_emb_is_table(t, i)) continue;
            for (int32_t j = 0; j < o->in_count; j++)
                if (t->trefs[o->in_first + j].tensor == w)
                    return mt_fail(err, MT_EINVAL, "--embedding-shard: the table of op %d %s is tied (op %d %s reads its "
                                   "weight too, as an LM head does); sharding a tied embedding is not modelled: drop "
                                   "--embedding-shard", (int)x->tables[k], t->ops[x->tables[k]].name, (int)i, o->name);
        }
        b->w_own[w] = mt_plan_replicas(b->plan);
    }
    return MT_OK;
}

static mt_status emb_prepare(mt_bld *b, void **st, mt_error *err) {
    const mt_trace *t = b->t;
    *st = NULL;
    if (b->plan->emb_shard == MT_EMB_NONE || mt_plan_replicas(b->plan) < 2) return MT_OK;
    if (b->plan->dp_mode == MT_DP_SYNC)
        return mt_fail(err, MT_EINVAL, "--embedding-shard keeps the dense part data parallel as DDP does, not "
                       "--strategy dp (DataParallel's one all-reduce): drop --strategy dp");
    if (b->plan->comm == MT_COMM_TRACED)
        return mt_fail(err, MT_EINVAL, "--embedding-shard regenerates the pooled-embedding all-to-alls; the trace's "
                       "own are kept (--comm traced, a multi-rank trace's default): add --comm regenerate");
    emb_state *x = calloc(1, sizeof *x);
    *st = x;
    if (!x || !(x->tables = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *x->tables))) return MT_ENOMEM;
    x->first_bwd = x->last_fwd = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        if (mt_emb_is_table(t, i)) {
            x->tables[x->n++] = i;
            x->last_fwd = i;
            x->pooled += mt_emb_pooled_bytes(t, i);
            x->weights += mt_emb_table_bytes(t, i);
        }
    }
    if (x->n == 0)
        return mt_fail(err, MT_EINVAL, "--embedding-shard needs a trace with embedding tables (embedding or "
                       "embedding_bag ops reading a weight); none found");
    return mark_tables(b, x, err);
}

static void emb_release(void *st) {
    emb_state *x = st;
    if (!x) return;
    free(x->tables);
    free(x);
}

/* Table-wise: owners (greedy by size), each table op's and its backward ops' owner, the shares. */
static mt_status place_tables(mt_bld *b, emb_state *x) {
    const mt_trace *t = b->t;
    int32_t R = mt_plan_replicas(b->plan);
    mt_program *p = b->p;
    double *load = calloc((size_t)R, sizeof *load);
    p->emb_owner = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *p->emb_owner);
    p->emb_share = calloc((size_t)R, sizeof *p->emb_share);
    if (!load || !p->emb_owner || !p->emb_share) {
        free(load);
        return MT_ENOMEM;
    }
    for (int32_t i = 0; i < t->n_ops; i++) p->emb_owner[i] = -1;
    for (int32_t done = 0; done < x->n; done++) { /* the largest unplaced table onto the least loaded rank */
        int32_t best = -1, r = 0;
        for (int32_t k = 0; k < x->n; k++)
            if (p->emb_owner[x->tables[k]] < 0 && (best < 0 || mt_emb_table_bytes(t, x->tables[k]) > mt_emb_table_bytes(t, best)))
                best = x->tables[k];
        for (int32_t q = 1; q < R; q++)
            if (load[q] < load[r]) r = q;
        p->emb_owner[best] = r;
        load[r] += mt_emb_table_bytes(t, best) + 1;
        p->emb_share[r] += x->pooled > 0 ? mt_emb_pooled_bytes(t, best) / x->pooled : 1.0 / x->n;
    }
    for (int32_t i = 0; i < t->n_ops; i++) {
        int32_t f = t->ops[i].fwd_op;
        if (t->ops[i].phase == TRACE_PHASE_BACKWARD && f >= 0 && f < t->n_ops && p->emb_owner[f] >= 0)
            p->emb_owner[i] = p->emb_owner[f];
    }
    for (int32_t k = 0; k < x->n; k++) /* a table's anchor: its backward op when none links to it */
        if (b->anchor[x->tables[k]] >= 0 && p->emb_owner[b->anchor[x->tables[k]]] < 0)
            p->emb_owner[b->anchor[x->tables[k]]] = p->emb_owner[x->tables[k]];
    free(load);
    return MT_OK;
}

/* The tables' gradients leave the buckets and their weights the stage's; the first backward op of
 * a table (one linked to it by its autograd node, else its anchor). */
static mt_status emb_analyse(mt_bld *b, void *st, mt_error *err) {
    (void)err;
    emb_state *x = st;
    if (!x) return MT_OK;
    const mt_trace *t = b->t;
    for (int32_t i = 0; i < t->n_ops && x->first_bwd < 0; i++)
        if (t->ops[i].phase == TRACE_PHASE_BACKWARD && t->ops[i].fwd_op >= 0 && mt_emb_is_table(t, t->ops[i].fwd_op))
            x->first_bwd = i;
    for (int32_t k = 0; k < x->n; k++) {
        int32_t f = x->tables[k], s = mt_bld_op_stage(b, f), at = b->anchor[f], w = mt_emb_table_weight(t, f);
        if (at >= 0 && (x->first_bwd < 0 || at < x->first_bwd)) x->first_bwd = at;
        double mine = t->tensors[w].bytes / b->w_split[w] / b->w_own[w]; /* what the core made ready */
        double *g = at >= 0 ? &b->grad_ready[at] : &b->tail_grad[s];
        *g = *g > mine ? *g - mine : 0;
    }
    return b->plan->emb_shard == MT_EMB_TABLE ? place_tables(b, x) : MT_OK;
}

/* The all-to-all of the pooled embeddings (forward) or their gradients (backward). */
static mt_status a2a(mt_bld *b, emb_state *x, mt_emit *em, int32_t op, int32_t mb, int fwd) {
    int32_t R = mt_plan_replicas(b->plan);
    double S = x->pooled * b->plan->batch_factor * (b->plan->emb_shard == MT_EMB_ROW ? R : 1);
    MT_CHECK(mt_emit_coll(em, MT_GROUP_DP, MT_COLL_ALLTOALL, MT_COLL_WHY_EMB, 1, S, mt_bld_layer(b, op), mb,
                          fwd ? TRACE_PHASE_FORWARD : TRACE_PHASE_BACKWARD));
    mt_task *k = &em->sp->tasks[em->sp->n_tasks - 1];
    if (b->plan->emb_shard == MT_EMB_TABLE) {
        k->moe = (int8_t)(fwd ? 2 : 1); /* forward: an owner sends its share; backward: receives it */
        k->moe_layer = -1;
    }
    return MT_OK;
}

static mt_status emb_before_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    emb_state *x = st;
    return x && op == x->first_bwd ? a2a(b, x, em, op, mb, 0) : MT_OK;
}

static mt_status emb_after_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    emb_state *x = st;
    if (!x) return MT_OK;
    mt_task *k = em->sp->n_tasks > 0 ? &em->sp->tasks[em->sp->n_tasks - 1] : NULL;
    if (b->p->emb_owner && b->p->emb_owner[op] >= 0 && k && k->kind == MT_TASK_COMPUTE) k->moe = 1;
    return op == x->last_fwd ? a2a(b, x, em, op, mb, 1) : MT_OK;
}

/* Table-wise: each DP slot's parameters, gradients and optimizer state hold its own tables, not
 * the stage's mean (1/R of every table): the stage's states composed again (statemem.h) with the
 * slot's table bytes in place of the mean's, the difference added to the stage's. */
static void emb_memory(mt_bld *b, void *st, int32_t s, mt_stage_program *sp) {
    emb_state *x = st;
    mt_program *p = b->p;
    if (!x || !p->emb_owner) return;
    const mt_trace *t = b->t;
    int32_t R = mt_plan_replicas(b->plan), P = b->plan->pp;
    if (!p->emb_mem && !(p->emb_mem = calloc((size_t)P * (size_t)R * 3, sizeof *p->emb_mem))) return;
    double mean = 0, *own = calloc((size_t)R, sizeof *own);
    if (!own) return;
    for (int32_t k = 0; k < x->n; k++) {
        int32_t f = x->tables[k], w = mt_emb_table_weight(t, f);
        if (mt_bld_op_stage(b, f) != s || w < 0) continue;
        double bytes = t->tensors[w].bytes / b->w_split[w];
        mean += bytes / R;
        own[p->emb_owner[f]] += bytes;
    }
    mt_state_bytes w = {b->w_stage_rep[s], b->w_stage_bytes[s] - b->w_stage_rep[s], 0, 0};
    if (w.owned < 0) w.owned = 0;
    if (b->total_w_bytes > 0) w.opt_per_param = t->optstate_bytes / b->total_w_bytes;
    mt_state_mem m = mt_state_memory_scaled(b->plan, &w, &p->prec_scale); /* in the asked precision, as the stage's */
    for (int32_t r = 0; r < R; r++) {
        mt_state_bytes wr = w;
        wr.owned = w.owned - mean + own[r] > 0 ? w.owned - mean + own[r] : 0;
        mt_state_mem mr = mt_state_memory_scaled(b->plan, &wr, &p->prec_scale);
        double *q = &p->emb_mem[((size_t)s * R + r) * 3];
        q[0] = sp->param_bytes + mr.params - m.params;
        q[1] = sp->grad_bytes + mr.grads - m.grads;
        q[2] = sp->optstate_bytes + (b->total_w_bytes > 0 ? mr.optimizer - m.optimizer : 0);
    }
    free(own);
}

const mt_pass mt_pass_emb = {
    .memory = emb_memory,
    .name = "emb",
    .idle_without_state = 1, /* its hooks return at once without its state */
    .prepare = emb_prepare,
    .release = emb_release,
    .analyse = emb_analyse,
    .before_op = emb_before_op,
    .after_op = emb_after_op,
};

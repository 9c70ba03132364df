/* extrapolate/pass_recompute.c — activation recomputation (--recompute selective|full|every:K|ops:save=):
 * the backward re-runs forward ops whose activations were not kept, and the activations kept per
 * micro-batch drop.
 *   full       every repeating block (extrapolate/blocks.h) of the stage, per model chunk: its forward
 *              ops, in trace order, re-run right before the block's first backward op (Megatron's full
 *              activation checkpointing, one transformer block per checkpoint; the embedding, head and
 *              loss are not re-run). Kept per micro-batch: what a block reads from outside it (its
 *              input); the rest of a block's activations live only while it runs its backward (the
 *              largest block's, once per GPU). A trace where no block repeats: every layer (unit);
 *   every:K    full for blocks K-1, 2K-1, ... only (torchtitan's layer-selective ac_freq);
 *   ops        full, but the ops whose outputs the policy saves (attention; every K-th matmul reading
 *              a weight, counted per block) are not re-run and keep their outputs, whether backward
 *              reads them or not; what they read is made again by the re-run (PyTorch's op-level
 *              selective checkpointing: MUST_SAVE outputs cached, the rest of the block re-run);
 * A block's region starts at the cut of the layer before it that the fewest bytes cross (a pre-norm
 * block's first layer is its norm's weight: the norm's first ops and the residual add close the layer
 * before), as a framework's checkpoint wraps the block module: it keeps the block's input alone.
 *   selective  the attention core: a softmax (not log_softmax) and, within its layer, the weightless
 *              matmul before it (QK^T) and after it (PV) with what lies between (scale, mask,
 *              attention dropout); a fused attention op alone. Re-run right before the backward of
 *              its first op to run backward (the PV matmul's, when the trace links backward ops to
 *              forward ones; else the layer's first backward op), as Megatron's selective
 *              recomputation. Not kept: the activations made inside a core and read only inside it
 *              (scores, probabilities, dropout masks); the largest core's live while it runs backward.
 * A recomputed op runs at its forward time (its split, the micro-batch's batch factor) in the
 * backward's micro-batch; passes add what its forward needs through their recompute_op hooks (tensor
 * parallel: its forward collectives).
 * Activations are those backward reads (acts.h). Kept besides those made outside every group: a
 * group's outputs (read in forward outside it) and its inputs (what its re-run reads: selective,
 * the projections' Q, K, V, which backward alone does not keep; full, a layer's input) — the
 * saving is then Korthikanti et al.'s (2022): selective drops the attention probabilities.
 * Invariant: each recomputed forward op is re-run exactly once per backward micro-batch, before its
 * backward; kept + internal activation bytes of a stage == its activation bytes (mt_pp_boundaries)
 * + its groups' inputs that backward alone would not keep.
 * Cost: O(ops + trefs + tensors) to prepare, O(recomputed ops) per backward micro-batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/blocks.h"
#include "extrapolate/build.h"
#include "extrapolate/stages.h"
#include "util/u64map.h"
#include "util/units.h"

typedef struct rc_state {
    int32_t *at;         /* per forward op: the backward op before which it re-runs, -1 */
    int32_t *first;      /* per backward op: its first re-run forward op in `list`, CSR with count */
    int32_t *count;
    int32_t *list;       /* forward ops, grouped by backward op, in trace order */
    int32_t *group;      /* per forward op: its recompute group (a unit, or a core's first op), -1 */
    double *kept, *total, *transient; /* per stage, per micro-batch (unscaled: the trace's batch) */
    int32_t fused, eager; /* selective: attention cores found as one fused op (SDPA, flash), as a softmax */
} rc_state;

static void rc_release(void *st) {
    rc_state *x = st;
    if (!x) return;
    free(x->at);
    free(x->first);
    free(x->count);
    free(x->list);
    free(x->group);
    free(x->kept);
    free(x->total);
    free(x->transient);
    free(x);
}

static int is_fwd(const mt_trace *t, int32_t i) {
    return t->ops[i].phase == TRACE_PHASE_FORWARD && !trace_op_is_comm(&t->ops[i]);
}

/* A matmul that reads no weight: QK^T or PV inside attention. */
static int weightless_matmul(const trace_op *o) { return o->cls == MT_OPC_MATMUL && o->tp != TRACE_TP_LINEAR; }

/* The nearest weightless matmul from op i in direction d (-1, +1) within i's unit and 8 forward
 * ops, else i. */
static int32_t core_edge(const mt_bld *b, int32_t i, int d) {
    const mt_trace *t = b->t;
    int seen = 0;
    for (int32_t j = i + d; j >= 0 && j < t->n_ops && seen < 8; j += d) {
        if (!is_fwd(t, j)) continue;
        if (b->unit[j] != b->unit[i]) break;
        if (weightless_matmul(&t->ops[j])) return j;
        seen++;
    }
    return i;
}

/* Selective: group[op] = the core's first op for every op of an attention core. */
static void find_cores(const mt_bld *b, rc_state *x) {
    const mt_trace *t = b->t;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (!is_fwd(t, i) || x->group[i] >= 0) continue;
        if (o->cls == MT_OPC_ATTN) {
            x->group[i] = i;
            x->fused++;
            continue;
        }
        const char *name = o->kind ? o->kind : o->name;
        if (o->cls != MT_OPC_SOFTMAX || o->tp == TRACE_TP_CLOSER || (name && strstr(name, "log_softmax"))) continue;
        int32_t lo = core_edge(b, i, -1), hi = core_edge(b, i, +1);
        x->eager++;
        for (int32_t j = lo; j <= hi; j++)
            if (is_fwd(t, j)) x->group[j] = lo;
    }
}

/* The trace's repeating block when it is a transformer block (an attention op or a softmax among
 * its forward ops): found 0 otherwise (a ResNet's residual blocks: full re-runs every layer). */
static void transformer_blocks(const mt_trace *t, mt_blocks *blk) {
    mt_blocks_find(t, blk);
    int32_t end = blk->first + blk->count * blk->layers;
    for (int32_t i = 0; blk->found && i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        const char *name = o->kind ? o->kind : o->name;
        if (is_fwd(t, i) && o->layer >= blk->first && o->layer < end &&
            (o->cls == MT_OPC_ATTN || (o->cls == MT_OPC_SOFTMAX && !(name && strstr(name, "log_softmax")))))
            return;
    }
    blk->found = 0;
}

/* The region unit u is re-run in (full, every:K, ops): the first unit of its repeating block on its
 * model chunk, when the plan re-runs that block (every:K: blocks K-1, 2K-1, ...); -1 outside the
 * blocks (embedding, head, loss); u itself in a trace where no block repeats. */
static int32_t region_of(const mt_bld *b, const mt_blocks *blk, int32_t u) {
    if (!blk->found) return u;
    if (u < blk->first || u >= blk->first + blk->count * blk->layers) return -1;
    int32_t j = (u - blk->first) / blk->layers, g = blk->first + j * blk->layers;
    if (b->plan->rc_every > 1 && (j + 1) % b->plan->rc_every != 0) return -1;
    while (g < u && b->chunk_of_unit[g] != b->chunk_of_unit[u]) g++;
    return g;
}

/* Bytes of the forward activations (and model inputs) made before op c and read by forward ops in
 * [c, end): what a checkpoint that starts at c keeps from before it. stamp[] (per tensor) marks those
 * counted, id. Tensors made from no batch data (bfree: rotary cos/sin, masks) are made once a step
 * for every block, not kept per block: they cost nothing, so the model-level ops that make them stay
 * out of the first block's re-run. */
static double crossing(const mt_trace *t, int32_t c, int32_t end, int32_t *stamp, int32_t id, const unsigned char *bfree) {
    double sum = 0;
    for (int32_t i = c; i < end; i++) {
        const trace_op *o = &t->ops[i];
        for (int32_t j = 0; is_fwd(t, i) && j < o->in_count; j++) {
            int32_t v = t->trefs[o->in_first + j].tensor;
            if (v < 0 || v >= t->n_tensors || stamp[v] == id || (bfree && bfree[v])) continue;
            const trace_tensor *tt = &t->tensors[v];
            int before = tt->role == TRACE_ROLE_INPUT || (tt->role == TRACE_ROLE_ACTIVATION && tt->first_op >= 0 && tt->first_op < c);
            if (!before) continue;
            stamp[v] = id;
            sum += tt->bytes;
        }
    }
    return sum;
}

/* 1 when forward op i reads a weight. */
static int reads_weight(const mt_trace *t, int32_t i) {
    const trace_op *o = &t->ops[i];
    for (int32_t j = 0; j < o->in_count; j++) {
        int32_t v = t->trefs[o->in_first + j].tensor;
        if (v >= 0 && v < t->n_tensors && t->tensors[v].role == TRACE_ROLE_WEIGHT) return 1;
    }
    return 0;
}

/* Per op, the unit whose region it re-runs in (full, every:K, ops): its own, but for the tail of the
 * layer before each re-run block (the ops after that layer's last weight-reading op: a pre-norm
 * block's layers begin at a norm's weight, so the norm's first ops close the layer before): from the
 * cut in that tail that the fewest bytes cross (after the residual add: the block's input alone) to
 * the block, as a framework's checkpoint wraps the block module. Without the move a region would
 * keep the residual and the normed copy of it. The same cut ends each re-run block: the tail of a
 * block's last layer (the next norm's first ops) belongs to what follows it, re-run or not. */
static int32_t *rerun_units(const mt_bld *b, const mt_blocks *blk) {
    const mt_trace *t = b->t;
    int32_t *ru = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *ru);
    int32_t *stamp = calloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1), sizeof *stamp);
    unsigned char *bfree = mt_stages_batch_free(t); /* NULL: every tensor counts */
    for (int32_t i = 0; ru && i < t->n_ops; i++) ru[i] = b->unit[i];
    for (int32_t j = 0, id = 0; ru && stamp && blk->found && j <= blk->count; j++) {
        int32_t u = blk->first + j * blk->layers, lo = -1, hi = -1, end = -1; /* the tail layer u - 1, block u.. */
        if (u < 1 || u >= b->n_units || (region_of(b, blk, u) < 0 && region_of(b, blk, u - 1) < 0) ||
            b->chunk_of_unit[u - 1] != b->chunk_of_unit[u])
            continue; /* (j == count: the last block's tail, the final norm's first ops, leaves its re-run) */
        for (int32_t i = 0; i < t->n_ops; i++) {
            if (!is_fwd(t, i) || b->unit[i] < u - 1) continue;
            if (b->unit[i] == u - 1 && (lo < 0 || reads_weight(t, i))) lo = reads_weight(t, i) ? i + 1 : i;
            if (b->unit[i] == u && hi < 0) hi = i;
            if (b->unit[i] >= u + blk->layers) break;
            end = i + 1;
        }
        if (lo < 0 || hi < lo) continue;
        /* ties: a block starts as late as it can (its input alone) and the last one ends as early,
         * at the first cut within 1 % of the least (after the residual add: the final norm's scalar
         * operands tip its later cuts by bytes) */
        int32_t last = j == blk->count, best = last ? lo : hi, step = last ? 1 : -1;
        double tie = last ? 1e-2 : 1e-9;
        double least = crossing(t, best, end, stamp, ++id, bfree);
        for (int32_t c = best + step; c >= lo && c <= hi; c += step) {
            double x = crossing(t, c, end, stamp, ++id, bfree);
            if (x < least * (1 - tie)) least = x, best = c;
        }
        for (int32_t i = best; i < hi; i++) ru[i] = u;
    }
    free(bfree);
    free(stamp);
    return ru;
}

/* ops: 1 for a forward op whose output the policy saves (attention; every rc_save_mm-th matmul
 * reading a weight in its block, counted from the block's first: a pipeline cut inside a block splits
 * its region, not the policy's choice of matmuls; in a trace where no block repeats, per region). */
static unsigned char *saved_ops(const mt_bld *b, const mt_blocks *blk, const int32_t *ru) {
    const mt_trace *t = b->t;
    unsigned char *sv = calloc((size_t)(t->n_ops > 0 ? t->n_ops : 1), 1);
    int32_t region = -2, mm = 0;
    for (int32_t i = 0; sv && i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (!is_fwd(t, i) || ru[i] < 0) continue;
        int32_t g = region_of(b, blk, ru[i]);
        if (g >= 0 && blk->found) g = (ru[i] - blk->first) / blk->layers; /* the block */
        if (g != region) region = g, mm = 0;
        if (ru[i] != b->unit[i]) continue; /* a tail moved into the block (rerun_units): norm, residual, rotary */
        if (o->cls == MT_OPC_ATTN || weightless_matmul(o)) sv[i] = (unsigned char)(b->plan->rc_save_attn != 0);
        else if (o->cls == MT_OPC_MATMUL) sv[i] = b->plan->rc_save_mm > 0 && mm++ % b->plan->rc_save_mm == 0;
    }
    return sv;
}

/* at[f] for every recomputed forward op f: full / every:K / ops, its region's first backward op
 * (units without backward work are not recomputed; ops: not the ops the policy saves); selective,
 * the first backward op linked to an op of its core, else its unit's first backward op. */
static void place(const mt_bld *b, rc_state *x, const int32_t *first_bwd) {
    const mt_trace *t = b->t;
    int full = b->plan->recompute == MT_RECOMPUTE_FULL || b->plan->recompute == MT_RECOMPUTE_OPS;
    mt_blocks blk;
    transformer_blocks(t, &blk);
    int32_t *ru = full ? rerun_units(b, &blk) : NULL;
    unsigned char *sv = ru && b->plan->recompute == MT_RECOMPUTE_OPS ? saved_ops(b, &blk, ru) : NULL;
    int32_t *region_bwd = malloc((size_t)(b->n_units > 0 ? b->n_units : 1) * sizeof *region_bwd); /* by region */
    for (int32_t u = 0; region_bwd && u < b->n_units; u++) region_bwd[u] = -1;
    for (int32_t u = 0; region_bwd && full && u < b->n_units; u++) {
        int32_t g = region_of(b, &blk, u);
        if (g >= 0 && first_bwd[u] >= 0 && (region_bwd[g] < 0 || first_bwd[u] < region_bwd[g])) region_bwd[g] = first_bwd[u];
    }
    int32_t *core_at = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *core_at); /* by core */
    for (int32_t i = 0; core_at && i < t->n_ops; i++) core_at[i] = -1;
    for (int32_t i = 0; core_at && !full && i < t->n_ops; i++) {
        int32_t f = t->ops[i].fwd_op;
        if (t->ops[i].phase != TRACE_PHASE_BACKWARD || trace_op_is_comm(&t->ops[i]) || f < 0 || f >= t->n_ops) continue;
        int32_t g = x->group[f];
        if (g >= 0 && core_at[g] < 0) core_at[g] = i;
    }
    for (int32_t f = 0; f < t->n_ops; f++) {
        x->at[f] = -1;
        int32_t u = b->unit[f];
        if (!is_fwd(t, f) || u < 0 || u >= b->n_units || first_bwd[u] < 0) continue;
        if (full) {
            int32_t g = ru ? region_of(b, &blk, ru[f]) : -1;
            if (g < 0 || !region_bwd || region_bwd[g] < 0) continue;
            x->group[f] = g; /* a saved op too: what it reads is made again by its region's re-run */
            if (!(sv && sv[f])) x->at[f] = region_bwd[g];
            continue;
        }
        if (x->group[f] < 0) continue;
        x->at[f] = core_at && core_at[x->group[f]] >= 0 ? core_at[x->group[f]] : first_bwd[u];
    }
    free(core_at);
    free(region_bwd);
    free(sv);
    free(ru);
}

/* The lists of forward ops each backward op re-runs (CSR over at[]). */
static mt_status build_lists(const mt_bld *b, rc_state *x) {
    const mt_trace *t = b->t;
    size_t n = (size_t)(t->n_ops > 0 ? t->n_ops : 1);
    x->first = calloc(n, sizeof *x->first);
    x->count = calloc(n, sizeof *x->count);
    x->list = malloc(n * sizeof *x->list);
    if (!x->first || !x->count || !x->list) return MT_ENOMEM;
    for (int32_t f = 0; f < t->n_ops; f++)
        if (x->at[f] >= 0) x->count[x->at[f]]++;
    for (int32_t i = 0, acc = 0; i < t->n_ops; i++) {
        x->first[i] = acc;
        acc += x->count[i];
        x->count[i] = 0;
    }
    for (int32_t f = 0; f < t->n_ops; f++)
        if (x->at[f] >= 0) x->list[x->first[x->at[f]] + x->count[x->at[f]]++] = f;
    return MT_OK;
}

/* out[k] for each activation k (b->acts): read in forward by an op outside its maker's recompute
 * group (a group's output: kept as a checkpoint). A read of storage S at op i is of the latest
 * activation on S made before i. */
static mt_status read_outside(const mt_bld *b, const rc_state *x, unsigned char *out) {
    const mt_trace *t = b->t;
    mt_u64map last; /* storage -> latest activation on it */
    mt_u64map_init(&last);
    mt_status rc = MT_OK;
    for (int32_t i = 0, k = 0; rc == MT_OK && i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        for (int32_t j = 0; o->phase == TRACE_PHASE_FORWARD && j < o->in_count; j++) {
            int32_t v = t->trefs[o->in_first + j].tensor;
            int64_t a;
            if (v < 0 || v >= t->n_tensors || !mt_u64map_get(&last, (uint64_t)t->tensors[v].storage_id, &a)) continue;
            int32_t f = b->acts[a].op;
            if (x->group[i] < 0 || x->group[i] != x->group[f]) out[a] = 1;
        }
        for (; rc == MT_OK && k < b->n_acts && b->acts[k].op <= i; k++)
            rc = mt_u64map_put(&last, (uint64_t)b->acts[k].storage_id, k, NULL);
    }
    mt_u64map_destroy(&last);
    return rc;
}

/* A tensor as the storage it lives on and the op that made it: the ET names a storage by its
 * address, so one id can name tensors made and freed at different times (q_proj's output and, later,
 * an activation at the same address). Exact while ids < 2^38 and ops < 2^25; else the storage. */
static uint64_t made_key(int64_t storage, int32_t op) {
    if (storage >= 0 && storage < ((int64_t)1 << 38) && op >= 0 && op < (1 << 25))
        return ((uint64_t)storage << 25) | (uint64_t)op;
    return (uint64_t)storage | ((uint64_t)1 << 63);
}

/* Tensor v (a use of op i: `out` an output) kept for the re-run only: an activation made in forward
 * that backward alone would not keep, not yet counted (seen: by made_key), and either a recomputed
 * op's input made outside its group or a saved op's output. Its bytes per rank go to kept and
 * act_extra, once. */
static mt_status keep_for_rerun(mt_bld *b, const rc_state *x, mt_u64map *seen, int32_t i, int32_t v, int out) {
    const mt_trace *t = b->t;
    const trace_tensor *tt = v >= 0 && v < t->n_tensors ? &t->tensors[v] : NULL;
    int32_t f = out ? i : tt ? tt->first_op : -1;
    if (!tt || tt->role != TRACE_ROLE_ACTIVATION || f < 0 || f >= t->n_ops || t->ops[f].phase != TRACE_PHASE_FORWARD ||
        (!out && x->group[f] >= 0 && x->group[f] == x->group[i]) || mt_u64map_get(seen, made_key(tt->storage_id, f), NULL))
        return MT_OK;
    x->kept[mt_bld_op_stage(b, f)] += tt->bytes / b->split[f];
    b->act_extra[mt_bld_op_stage(b, f)] += tt->bytes / b->split[f];
    return mt_u64map_put(seen, made_key(tt->storage_id, f), -1, NULL);
}

/* What the re-run reads that backward alone would not keep, bytes per rank per stage added to kept,
 * each storage once: the recomputed groups' inputs (selective: the projections' Q, K, V; full: a
 * layer's input when no backward op reads it) and the outputs of the ops an op-level policy saves
 * inside a re-run region (PyTorch's MUST_SAVE: stored whether backward reads them or not; the re-run
 * takes them instead of running the op, so the op's own inputs are made again, not kept). */
static mt_status group_inputs(mt_bld *b, const rc_state *x) {
    const mt_trace *t = b->t;
    mt_u64map seen;
    mt_u64map_init(&seen);
    mt_status rc = MT_OK;
    for (int32_t k = 0; rc == MT_OK && k < b->n_acts; k++) /* already an activation */
        rc = mt_u64map_put(&seen, made_key(b->acts[k].storage_id, b->acts[k].op), k, NULL);
    for (int32_t i = 0; rc == MT_OK && i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        int saved = x->at[i] < 0 && x->group[i] >= 0 && is_fwd(t, i) && b->plan->recompute == MT_RECOMPUTE_OPS;
        for (int32_t j = 0; rc == MT_OK && x->at[i] >= 0 && j < o->in_count; j++)
            rc = keep_for_rerun(b, x, &seen, i, t->trefs[o->in_first + j].tensor, 0);
        for (int32_t j = 0; rc == MT_OK && saved && j < o->out_count; j++)
            rc = keep_for_rerun(b, x, &seen, i, t->trefs[o->out_first + j].tensor, 1);
    }
    mt_u64map_destroy(&seen);
    return rc;
}

/* Per stage: activation bytes per micro-batch (b->acts, as mt_pp_boundaries counts them), those
 * still kept (not made inside a recomputed group, or a group's output, or a group's input), and the
 * largest group's that live only during its backward. */
static mt_status measure(mt_bld *b, rc_state *x) {
    const mt_trace *t = b->t;
    int32_t P = b->plan->pp;
    size_t nops = (size_t)(t->n_ops > b->n_units ? t->n_ops : b->n_units) + 1; /* groups: ops or units */
    unsigned char *out = calloc((size_t)(b->n_acts > 0 ? b->n_acts : 1), 1);
    double *inner = calloc(nops, sizeof *inner); /* by group */
    x->kept = calloc((size_t)P, sizeof *x->kept);
    x->total = calloc((size_t)P, sizeof *x->total);
    x->transient = calloc((size_t)P, sizeof *x->transient);
    mt_status rc = out && inner && x->kept && x->total && x->transient ? MT_OK : MT_ENOMEM;
    if (rc == MT_OK) rc = read_outside(b, x, out);
    for (int32_t k = 0; rc == MT_OK && k < b->n_acts; k++) {
        int32_t f = b->acts[k].op, s = mt_bld_op_stage(b, f);
        double bytes = b->acts[k].bytes / b->split[f];
        x->total[s] += bytes;
        if (x->at[f] >= 0 && !out[k]) {
            inner[x->group[f]] += bytes;
            b->act_from[k] = x->at[f]; /* made again right before that backward op */
        } else x->kept[s] += bytes;
    }
    if (rc == MT_OK) rc = group_inputs(b, x);
    for (int32_t f = 0; rc == MT_OK && f < t->n_ops; f++)
        if (x->at[f] >= 0) { /* the largest group's (each op of a group sees the group's) */
            int32_t s = mt_bld_op_stage(b, f);
            if (inner[x->group[f]] > x->transient[s]) x->transient[s] = inner[x->group[f]];
        }
    free(out);
    free(inner);
    return rc;
}

static mt_status rc_analyse(mt_bld *b, void *st, mt_error *err) {
    (void)err;
    rc_state *x = st;
    const mt_trace *t = b->t;
    if (!x) return MT_OK;
    size_t n = (size_t)(t->n_ops > 0 ? t->n_ops : 1);
    int32_t *first_bwd = malloc((size_t)(b->n_units > 0 ? b->n_units : 1) * sizeof *first_bwd);
    x->at = malloc(n * sizeof *x->at);
    x->group = malloc(n * sizeof *x->group);
    if (!first_bwd || !x->at || !x->group) {
        free(first_bwd);
        return MT_ENOMEM;
    }
    for (int32_t u = 0; u < b->n_units; u++) first_bwd[u] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        x->group[i] = -1;
        int32_t u = b->unit[i];
        if (t->ops[i].phase == TRACE_PHASE_BACKWARD && !trace_op_is_comm(&t->ops[i]) && u >= 0 && u < b->n_units &&
            first_bwd[u] < 0)
            first_bwd[u] = i;
    }
    if (b->plan->recompute == MT_RECOMPUTE_SELECTIVE) find_cores(b, x);
    place(b, x, first_bwd);
    free(first_bwd);
    MT_CHECK(build_lists(b, x));
    return measure(b, x);
}

static mt_status rc_prepare(mt_bld *b, void **st, mt_error *err) {
    if (b->plan->recompute == MT_RECOMPUTE_NONE) return MT_OK;
    mt_blocks blk;
    const char *path = b->t->kineto_path ? b->t->kineto_path : b->t->et_path ? b->t->et_path : "the trace";
    if (b->plan->rc_every > 1 && (transformer_blocks(b->t, &blk), !blk.found))
        return mt_fail(err, MT_EINVAL, "--recompute every:%d: %s has no repeating transformer block (mitosis inspect "
                       "lists its layers and blocks), so there is no K-th block to re-run; use full", (int)b->plan->rc_every,
                       path);
    if (b->plan->recompute == MT_RECOMPUTE_OPS && (transformer_blocks(b->t, &blk), !blk.found)) {
        char lab[64];
        return mt_fail(err, MT_EINVAL, "--recompute %s: %s has no repeating transformer block (mitosis inspect lists its "
                       "layers and blocks), and an op-level policy is applied per block; use full",
                       mt_recompute_label(b->plan, lab, (int)sizeof lab), path);
    }
    rc_state *x = calloc(1, sizeof *x);
    *st = x;
    return x ? MT_OK : MT_ENOMEM;
}

static mt_status rc_before_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    const rc_state *x = st;
    if (!x || b->t->ops[op].phase != TRACE_PHASE_BACKWARD) return MT_OK;
    for (int32_t k = x->first[op]; k < x->first[op] + x->count[op]; k++) {
        int64_t before = em->sp->compute_ps;
        MT_CHECK(mt_bld_recompute(b, em, x->list[k], mb));
        em->sp->recompute_ps += em->sp->compute_ps - before;
    }
    return MT_OK;
}

static void rc_memory(mt_bld *b, void *st, int32_t s, mt_stage_program *sp) {
    const rc_state *x = st;
    if (!x || x->total[s] <= 0) return;
    double per_mb = sp->act_bytes_per_mb * b->plan->vpp; /* every chunk's, per micro-batch */
    sp->act_bytes_transient = per_mb * x->transient[s] / x->total[s];
    sp->act_bytes_per_mb *= x->kept[s] / x->total[s];
}

/* selective over fused attention: little to drop, said once. */
static int rc_warning(mt_bld *b, void *st, char *buf, int len) {
    const rc_state *x = st;
    if (!x || b->plan->recompute != MT_RECOMPUTE_SELECTIVE || x->fused == 0 || x->eager > 0) return 0;
    double saved = 0;
    for (int32_t s = 0; x->kept && s < b->plan->pp; s++) saved += x->total[s] - x->kept[s];
    char sb[32];
    snprintf(buf, (size_t)len, "--recompute selective: the trace's %d attention core%s %s fused (SDPA / flash / cuDNN), "
             "which keep%s no s^2 scores: re-running them drops %s per micro-batch; full, every:K or ops:save= drop more",
             (int)x->fused, mt_plural(x->fused), x->fused == 1 ? "is" : "are", x->fused == 1 ? "s" : "",
             mt_fmt_bytes(saved, sb, sizeof sb));
    return 1;
}

const mt_pass mt_pass_recompute = {
    .name = "recompute",
    .idle_without_state = 1, /* its hooks return at once without its state */
    .prepare = rc_prepare,
    .release = rc_release,
    .analyse = rc_analyse,
    .before_op = rc_before_op,
    .memory = rc_memory,
    .warning = rc_warning,
};

/* extrapolate/program.c — builds the per-stage task programs (see program.h) from the core
 * analysis and the strategy passes (build.h).
 *
 * The core, each step O(ops + trefs) unless noted:
 *  1. units: every forward/backward op gets the layer it belongs to (backward ops through
 *     fwd_op, else their own layer, else the previous backward op's); a trace without layers
 *     uses one unit per forward op;
 *  2. stages: units cut into P contiguous ranges minimising the largest forward + backward +
 *     optimizer time, at block boundaries where the trace shows them (stages.h);
 *  3. anchors: where each forward op's backward-side work goes;
 *  then the passes' analyses (tensor-parallel splits first: the rest depends on them), and
 *  4. gradients: each weight's gradient is ready after the last backward op of the forward op
 *     that first read it; its stage and split follow that op (a later stage reading it holds a
 *     copy); the stage's states per GPU compose the splits once (statemem.h);
 *  5. operator times, pipeline boundary bytes (O(tensors x P));
 *  6. emission of each stage: the pipeline pass's schedule of micro-batches, each walked here with
 *     every pass's hooks, then the optimizer share of the stage.
 * The passes run in the order of the table below; adding a strategy is a file and an entry.
 */
#include "extrapolate/program.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/blocks.h"
#include "extrapolate/build.h"
#include "extrapolate/moe.h"
#include "extrapolate/spare.h"
#include "extrapolate/stages.h"
#include "extrapolate/statemem.h"
#include "util/units.h"
#include "util/vec.h"

/* ep first: its after_op flags the COMPUTE task an expert op just joined, before others append */
static const mt_pass *const passes[] = {&mt_pass_ep, &mt_pass_emb, &mt_pass_tp, &mt_pass_cp, &mt_pass_traced, &mt_pass_dp, &mt_pass_pp,
                                        &mt_pass_recompute, &mt_pass_moecut, &mt_pass_distopt};
enum { N_PASSES = (int)(sizeof passes / sizeof passes[0]) };

/* Runs hook `h` of every pass that has it, in table order; returns from the caller on error. */
#define EACH_PASS(b, h, ...)                                                                          \
    do {                                                                                              \
        for (int pi_ = 0; pi_ < N_PASSES; pi_++)                                                      \
            if (passes[pi_]->h) MT_CHECK(passes[pi_]->h((b), (b)->state[pi_], __VA_ARGS__));         \
    } while (0)

/* ---- operator facts (the tracer's classifier fills them: tracer/opclass.h) -------------- */

int mt_bld_tensor_role(const mt_trace *t, const trace_tref *r) {
    return r->tensor >= 0 && r->tensor < t->n_tensors ? (int)t->tensors[r->tensor].role : -1;
}
#define tensor_role mt_bld_tensor_role

const int64_t *mt_bld_act4(const mt_trace *t, const trace_op *o, int32_t k) {
    if (k >= o->in_count) return NULL;
    const trace_tref *r = &t->trefs[o->in_first + k];
    int role = mt_bld_tensor_role(t, r);
    if (r->ndim != 4 || (role != TRACE_ROLE_ACTIVATION && role != TRACE_ROLE_INPUT)) return NULL;
    return t->dims + r->shape_off;
}

int mt_bld_attn_core(const mt_trace *t, const trace_op *o) {
    if (o->phase != TRACE_PHASE_FORWARD || trace_op_is_comm(o)) return 0;
    if (o->cls == MT_OPC_ATTN && mt_bld_act4(t, o, 0)) return 1;
    return o->cls == MT_OPC_MATMUL && o->tp != TRACE_TP_LINEAR && mt_bld_act4(t, o, 0) && mt_bld_act4(t, o, 1) ? 2 : 0;
}

double mt_bld_tensor_bytes(const mt_trace *t, int32_t tensor) {
    return tensor >= 0 && tensor < t->n_tensors ? t->tensors[tensor].bytes : 0;
}

int32_t *mt_bld_producers(const mt_trace *t) {
    int32_t *m = malloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1) * sizeof *m);
    if (!m) return NULL;
    for (int32_t x = 0; x < t->n_tensors; x++) m[x] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        for (int32_t j = 0; j < o->out_count; j++) {
            int32_t x = t->trefs[o->out_first + j].tensor;
            if (x >= 0 && x < t->n_tensors) m[x] = i;
        }
    }
    return m;
}

/* ---- the core analysis ------------------------------------------------------------------- */

int32_t mt_bld_op_stage(const mt_bld *b, int32_t op) {
    int32_t u = b->unit[op];
    if (u < 0) return b->t->ops[op].phase == TRACE_PHASE_BACKWARD ? b->plan->pp - 1 : 0;
    return b->stage_of_unit[u];
}
#define op_stage mt_bld_op_stage

int32_t mt_bld_op_chunk(const mt_bld *b, int32_t op) {
    int32_t u = b->unit[op];
    if (u < 0) return b->t->ops[op].phase == TRACE_PHASE_BACKWARD ? b->plan->pp * b->plan->vpp - 1 : 0;
    return b->chunk_of_unit[u];
}

int32_t mt_bld_layer(const mt_bld *b, int32_t op) { return b->t->n_layers > 0 ? b->unit[op] : -1; }

/* 1. units */
static void assign_units(mt_bld *b) {
    const mt_trace *t = b->t;
    int32_t fwd_ord = 0, cur = -1, first_fwd_unit = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        b->unit[i] = -1;
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        int32_t u = t->n_layers > 0 ? o->layer : fwd_ord;
        fwd_ord++;
        if (u < 0) u = cur;
        b->unit[i] = u;
        if (u >= 0) cur = u;
        if (first_fwd_unit < 0 && u >= 0) first_fwd_unit = u;
    }
    /* leading forward ops before any layer take the first layer */
    for (int32_t i = 0; i < t->n_ops; i++)
        if (t->ops[i].phase == TRACE_PHASE_FORWARD && b->unit[i] < 0)
            b->unit[i] = first_fwd_unit >= 0 ? first_fwd_unit : 0;
    cur = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_BACKWARD) continue;
        int32_t u = -1;
        if (o->fwd_op >= 0 && o->fwd_op < t->n_ops) u = b->unit[o->fwd_op];
        if (u < 0 && t->n_layers > 0) u = o->layer;
        if (u < 0) u = cur;
        b->unit[i] = u;
        if (u >= 0) cur = u;
    }
    b->n_units = t->n_layers > 0 ? t->n_layers : fwd_ord;
}

/* 2. stages: the partitioner (stages.h) cuts P x V model chunks, chunk c on stage c mod P; then each
 * stage's layer range (first and last, which under --vpp span the stage's chunks). */
/* The cost of a byte of a crossing activation in the partitioner's unit, the trace's op time: the
 * link's cost / (T x C) (each GPU sends its share of a tensor split by tensor or context
 * parallelism: pass_pp.c; an estimate, as a tensor outside a TP region is sent whole) x the trace's
 * time over the modelled time of the same ops (a perf model or --op-scale). */
static double send_cost_traced(const mt_bld *b) {
    double k = b->pp_send_ns_per_byte / ((double)b->plan->tp * b->plan->cp), traced = 0, modelled = 0;
    if (!(k > 0) || b->plan->pp < 2 || !b->optime) return b->plan->pp < 2 ? 0 : k;
    for (int32_t i = 0; i < b->t->n_ops; i++) {
        const trace_op *o = &b->t->ops[i];
        if ((o->phase != TRACE_PHASE_FORWARD && o->phase != TRACE_PHASE_BACKWARD) || trace_op_is_comm(o)) continue;
        traced += (double)o->dev_ns;
        modelled += b->optime(b->optime_ctx, b->t, i, 1.0, 1);
    }
    return modelled > 0 ? k * traced / modelled : k;
}

static mt_status assign_stages(mt_bld *b, mt_error *err) {
    const mt_plan *pl = b->plan;
    int32_t U = b->n_units, P = pl->pp;
    mt_stage_cut *cut = &b->p->stage_cut;
    mt_blocks bl;
    memset(&bl, 0, sizeof bl);
    int asked = pl->pp_cut == MT_PPCUT_BLOCKS || pl->n_pp_layers > 0;
    if (P > 1 && pl->pp_cut != MT_PPCUT_TIME) mt_blocks_find(b->t, &bl);
    char why[sizeof cut->why_time] = "";
    if (P > 1 && pl->pp_cut != MT_PPCUT_TIME && (asked || mt_stages_blocks_default(b->t, &bl))) {
        mt_error e = {MT_OK, ""};
        mt_status rc = mt_stages_cut_blocks(b->t, &bl, U, P, pl->vpp, pl->pp_layers, pl->n_pp_layers, b->chunk_of_unit,
                                            cut, asked ? err : &e);
        if (rc != MT_OK && (rc != MT_EINVAL || asked)) return rc; /* a refusal of what was asked */
        if (rc != MT_OK) snprintf(why, sizeof why, "%.*s", (int)sizeof why - 1, e.msg); /* auto: time-balanced, and why */
    }
    if (P <= 1 && pl->n_pp_layers > 0)
        return mt_fail(err, MT_EINVAL, "--pp-layers needs --pp > 1 (it gives the blocks of each pipeline stage)");
    if (cut->kind == MT_CUT_TIME) {
        MT_CHECK(mt_stages_cut_chunks(b->t, b->unit, U, P, pl->vpp, send_cost_traced(b), b->chunk_of_unit, cut));
        snprintf(cut->why_time, sizeof cut->why_time, "%s", why);
    }
    if (P * pl->vpp > 1) MT_CHECK(mt_stages_settle_cuts(b->t, b->unit, b->chunk_of_unit, U));
    for (int32_t u = 0; u < U; u++) b->stage_of_unit[u] = b->chunk_of_unit[u] % P;
    for (int32_t st = 0; st < P; st++) b->p->stages[st].layer_first = b->p->stages[st].layer_last = -1;
    for (int32_t u = 0; u < U; u++) {
        mt_stage_program *sp = &b->p->stages[b->stage_of_unit[u]];
        if (sp->layer_first < 0) sp->layer_first = u;
        sp->layer_last = u;
    }
    return MT_OK;
}

/* 3. anchors: anchor[f] for a forward op f is the backward op after which f's backward-side work
 * (its TP collectives, its weights' gradients) goes: f's last backward op, or, when the trace does
 * not link them, the last backward op of f's unit; -1 when there is none. */
static mt_status find_anchors(mt_bld *b) {
    const mt_trace *t = b->t;
    int32_t *last_unit_bwd = malloc((size_t)(b->n_units > 0 ? b->n_units : 1) * sizeof *last_unit_bwd);
    if (!last_unit_bwd) return MT_ENOMEM;
    for (int32_t u = 0; u < b->n_units; u++) last_unit_bwd[u] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) b->anchor[i] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_BACKWARD || trace_op_is_comm(o)) continue;
        if (o->fwd_op >= 0) b->anchor[o->fwd_op] = i;
        if (b->unit[i] >= 0) last_unit_bwd[b->unit[i]] = i;
    }
    for (int32_t f = 0; f < t->n_ops; f++)
        if (t->ops[f].phase == TRACE_PHASE_FORWARD && b->anchor[f] < 0 && b->unit[f] >= 0)
            b->anchor[f] = last_unit_bwd[b->unit[f]];
    free(last_unit_bwd);
    return MT_OK;
}

int32_t mt_bld_weight_split(const mt_bld *b, int32_t op, int32_t j) {
    const trace_tref *r = &b->t->trefs[b->t->ops[op].in_first + j];
    if (b->row[op] && r->ndim == 1) return 1; /* a row-parallel bias: added after the all-reduce, whole */
    return b->split[op] / b->tok[op];         /* a split of tokens keeps whole weights */
}

/* Weight w of stage s read by forward op i, a new holder of it: its bytes per
 * GPU (statemem.h's classes: / its TP split, / its EP or table split) join the stage's, its gradient
 * ready after i's anchor (or at the end of the stage's backward). */
static void hold_weight(mt_bld *b, int32_t w, int32_t s, int32_t i) {
    double bytes = b->t->tensors[w].bytes / b->w_split[w] / b->w_own[w];
    b->w_stage_bytes[s] += bytes;
    if (b->w_own[w] == 1) b->w_stage_rep[s] += bytes;
    int32_t at = b->anchor[i];
    if (at >= 0) b->grad_ready[at] += bytes;
    else b->tail_grad[s] += bytes;
}

/* Each weight belongs to the stage and split of the forward op that first reads it; a later stage
 * whose forward reads it again (a tied embedding's LM head) holds a copy, whose gradient is reduced
 * over that stage's data-parallel group as its own (and between the copies by pass_pp). */
static mt_status assign_gradients(mt_bld *b) {
    const mt_trace *t = b->t;
    for (int32_t i = 0; i < t->n_tensors; i++) {
        b->w_stage[i] = b->w_copy[i] = -1;
        b->w_split[i] = 1;
    }
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD) continue;
        int32_t s = op_stage(b, i);
        for (int32_t j = 0; j < o->in_count; j++) {
            int32_t w = t->trefs[o->in_first + j].tensor;
            if (w < 0 || w >= t->n_tensors || t->tensors[w].role != TRACE_ROLE_WEIGHT) continue;
            if (b->w_stage[w] >= 0) {
                if (b->w_stage[w] != s && b->w_copy[w] < 0) {
                    b->w_copy[w] = s;
                    hold_weight(b, w, s, i);
                }
                continue;
            }
            b->w_stage[w] = s;
            b->w_split[w] = mt_bld_weight_split(b, i, j);
            b->total_w_bytes += t->tensors[w].bytes;
            hold_weight(b, w, s, i);
        }
    }
    /* Weights never read in forward (or traces without tensors): by stage compute share. */
    double rest = t->param_bytes - b->total_w_bytes;
    if (rest > 1) {
        double *share = calloc((size_t)b->plan->pp, sizeof *share), all = 0;
        if (!share) return MT_ENOMEM;
        for (int32_t i = 0; i < t->n_ops; i++)
            if (t->ops[i].phase == TRACE_PHASE_FORWARD) {
                share[op_stage(b, i)] += (double)t->ops[i].dev_ns + 1;
                all += (double)t->ops[i].dev_ns + 1;
            }
        for (int32_t s = 0; s < b->plan->pp; s++) {
            double add = all > 0 ? rest * share[s] / all : rest / b->plan->pp;
            b->w_stage_bytes[s] += add;
            b->w_stage_rep[s] += add;
            b->tail_grad[s] += add;
        }
        b->total_w_bytes = t->param_bytes;
        free(share);
    }
    return MT_OK;
}

/* Stage s's parameters, gradients and optimizer state per GPU (statemem.h): the core's classes, the
 * passes' additions (the gathered unit of ZeRO-3 / FSDP), one composition. */
static void stage_memory(mt_bld *b, int32_t s, mt_stage_program *sp) {
    const mt_trace *t = b->t;
    mt_state_bytes w = {b->w_stage_rep[s], b->w_stage_bytes[s] - b->w_stage_rep[s], 0, 0};
    if (w.owned < 0) w.owned = 0;
    if (b->total_w_bytes > 0) w.opt_per_param = t->optstate_bytes / b->total_w_bytes;
    for (int pi = 0; pi < N_PASSES; pi++)
        if (passes[pi]->states) passes[pi]->states(b, b->state[pi], s, &w);
    mt_state_mem m = mt_state_memory_scaled(b->plan, &w, &b->p->prec_scale);
    sp->param_bytes = m.params;
    sp->grad_bytes = m.grads;
    sp->optstate_bytes = b->total_w_bytes > 0 ? m.optimizer
                                              : ceil(t->optstate_bytes * b->p->prec_scale.optim / b->plan->pp - 1e-6);
    for (int pi = 0; pi < N_PASSES; pi++)
        if (passes[pi]->memory) passes[pi]->memory(b, b->state[pi], s, sp);
}


/* ---- emission ------------------------------------------------------------------------------ */

/* The MB_BEGIN / MB_END mark of chunk c. */
static mt_status mb_mark(mt_bld *b, mt_emit *em, mt_task_kind kind, int dir, int32_t c, int32_t mb) {
    MT_CHECK(mt_emit_simple(em, kind, dir, mb, 0));
    em->sp->tasks[em->sp->n_tasks - 1].chunk = c / b->plan->pp;
    return MT_OK;
}

/* b->chunk_first / chunk_ops (build.h): each chunk's forward and backward compute ops, so that a
 * micro-batch walks its chunk's ops only, not every op of the trace. O(ops + chunks). */
static mt_status index_chunks(mt_bld *b) {
    const mt_trace *t = b->t;
    int32_t C = b->plan->pp * b->plan->vpp;
    b->chunk_first = calloc((size_t)(2 * C + 1), sizeof *b->chunk_first);
    b->chunk_ops = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *b->chunk_ops);
    b->op_ps = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *b->op_ps);
    if (!b->chunk_first || !b->chunk_ops || !b->op_ps) return MT_ENOMEM;
    for (int32_t i = 0; i < t->n_ops; i++) b->op_ps[i] = mt_emit_ps(b->op_ns[i]); /* the op times are final here */
    for (int pass = 0; pass < 2; pass++) { /* counts, then the ops in trace order */
        for (int32_t i = 0; i < t->n_ops; i++) {
            const trace_op *o = &t->ops[i];
            int d = o->phase == TRACE_PHASE_FORWARD ? 0 : o->phase == TRACE_PHASE_BACKWARD ? 1 : -1;
            if (d < 0 || trace_op_is_comm(o)) continue;
            int32_t key = d * C + mt_bld_op_chunk(b, i);
            if (pass == 0) b->chunk_first[key + 1]++;
            else b->chunk_ops[b->chunk_first[key]++] = i;
        }
        if (pass == 0)
            for (int32_t k = 0; k < 2 * C; k++) b->chunk_first[k + 1] += b->chunk_first[k];
        else /* each start moved to the next one's: shift back */
            for (int32_t k = 2 * C; k > 0; k--) b->chunk_first[k] = b->chunk_first[k - 1];
    }
    b->chunk_first[0] = 0;
    return MT_OK;
}

/* The compute ops of index entry `key` (index_chunks) for micro-batch mb, with the passes' hooks. */
static mt_status walk_ops(mt_bld *b, mt_emit *em, int32_t key, int32_t mb, int last) {
    int32_t bef[N_PASSES], aft[N_PASSES], nb = 0, na = 0; /* the hooks that can act, in table order */
    for (int pi = 0; pi < N_PASSES; pi++) {
        if (passes[pi]->idle_without_state && !b->state[pi]) continue;
        if (passes[pi]->before_op) bef[nb++] = pi;
        if (passes[pi]->after_op) aft[na++] = pi;
    }
    for (int32_t j = b->chunk_first[key]; j < b->chunk_first[key + 1]; j++) {
        int32_t i = b->chunk_ops[j];
        for (int32_t k = 0; k < nb; k++) MT_CHECK(passes[bef[k]]->before_op(b, b->state[bef[k]], em, i, mb, last));
        MT_CHECK(mt_emit_item_ps(b, em, i, b->op_ps[i], b->split[i], mb));
        for (int32_t k = 0; k < na; k++) MT_CHECK(passes[aft[k]]->after_op(b, b->state[aft[k]], em, i, mb, last));
    }
    return MT_OK;
}

mt_status mt_bld_forward(mt_bld *b, mt_emit *em, int32_t c, int32_t mb) {
    int last = mb == b->plan->micro_batches - 1;
    int32_t s = c % b->plan->pp;
    b->chunk = c;
    MT_CHECK(mb_mark(b, em, MT_TASK_MB_BEGIN, +1, c, mb));
    EACH_PASS(b, mb_begin, em, s, mb, +1, last);
    MT_CHECK(walk_ops(b, em, c, mb, last));
    EACH_PASS(b, mb_end, em, s, mb, +1, last);
    return MT_OK;
}

mt_status mt_bld_backward(mt_bld *b, mt_emit *em, int32_t c, int32_t mb, int last) {
    int32_t s = c % b->plan->pp;
    b->chunk = c;
    EACH_PASS(b, mb_begin, em, s, mb, -1, last);
    MT_CHECK(walk_ops(b, em, b->plan->pp * b->plan->vpp + c, mb, last));
    EACH_PASS(b, mb_end, em, s, mb, -1, last);
    return mb_mark(b, em, MT_TASK_MB_END, -1, c, mb);
}

mt_status mt_bld_recompute(mt_bld *b, mt_emit *em, int32_t op, int32_t mb) {
    MT_CHECK(mt_emit_item(b, em, op, b->op_ns[op], b->split[op], mb));
    EACH_PASS(b, recompute_op, em, op, mb);
    return MT_OK;
}

/* Share of an optimizer (or parameter-sized OTHER) op that stage s runs: its weights in s
 * (per rank), over all its weights; without weight inputs, the stage's parameter share. */
static double param_share(const mt_bld *b, int32_t op, int32_t s) {
    const mt_trace *t = b->t;
    const trace_op *o = &t->ops[op];
    double mine = 0, all = 0;
    for (int32_t j = 0; j < o->in_count + o->out_count; j++) {
        int32_t w = t->trefs[o->in_first + j].tensor;
        if (w < 0 || w >= t->n_tensors || t->tensors[w].role != TRACE_ROLE_WEIGHT || b->w_stage[w] < 0) continue;
        all += t->tensors[w].bytes;
        if (b->w_stage[w] == s || b->w_copy[w] == s) mine += t->tensors[w].bytes / b->w_split[w] / b->w_own[w];
    }
    if (all > 0) return mine / all;
    if (b->total_w_bytes > 0) return b->w_stage_bytes[s] / b->total_w_bytes;
    return 1.0 / b->plan->pp;
}

static int touches_params(const mt_trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->in_count + o->out_count; j++) {
        int r = tensor_role(t, &t->trefs[o->in_first + j]);
        if (r == TRACE_ROLE_WEIGHT || r == TRACE_ROLE_GRADIENT || r == TRACE_ROLE_OPTSTATE) return 1;
    }
    return 0;
}

/* OTHER ops before the first forward op ("pre") run on stage 0 at the start; later OTHER ops
 * and the optimizer run at the end: parameter-sized ones on every stage by share, the rest on
 * stage 0. */
static mt_status emit_other(mt_bld *b, mt_emit *em, int32_t s, int pre) {
    const mt_trace *t = b->t;
    if (!b->other_ops) { /* once per build, not once per stage (a 256-stage pipeline walked every op 256 times) */
        if (!(b->other_ops = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *b->other_ops))) return MT_ENOMEM;
        for (int32_t i = 0; i < t->n_ops; i++)
            if (!trace_op_is_comm(&t->ops[i]) &&
                (t->ops[i].phase == TRACE_PHASE_OTHER || t->ops[i].phase == TRACE_PHASE_OPTIMIZER))
                b->other_ops[b->n_other++] = i;
    }
    for (int32_t k = 0; k < b->n_other; k++) {
        int32_t i = b->other_ops[k];
        const trace_op *o = &t->ops[i];
        int is_opt = o->phase == TRACE_PHASE_OPTIMIZER;
        if (pre != (!is_opt && i < b->first_fwd)) continue;
        double share = is_opt || touches_params(t, o) ? param_share(b, i, s) : (s == 0 ? 1.0 : 0.0);
        if (is_opt) share *= b->p->prec_scale.opt_time; /* memory-bound: bytes touched per parameter */
        for (int pi = 0; is_opt && pi < N_PASSES; pi++)
            if (passes[pi]->optimizer_share) share *= passes[pi]->optimizer_share(b, b->state[pi], i);
        EACH_PASS(b, other_op, em, s, i);
        if (share <= 0) continue;
        MT_CHECK(mt_emit_item(b, em, i, b->op_ns[i] * share, 1, -1));
    }
    return MT_OK;
}

/* Room for stage s's tasks and items before its micro-batches are emitted: its chunks' compute ops
 * x M, half as much again (recomputation, optimizer and other ops), and per (chunk, micro-batch) a
 * few pipeline and collective tasks. Growing the arrays by doubling from 16 copied a pipelined
 * plan's millions of tasks several times over (most of a 1,024-GPU plan search's build time);
 * reserved pages never touched cost no memory. A failed reservation only leaves the growth to
 * the appends, which report it. */
static void reserve_stage(mt_bld *b, mt_emit *em, int32_t s) {
    const mt_plan *pl = b->plan;
    int32_t P = pl->pp, C = P * pl->vpp;
    int64_t ops = 0, M = pl->micro_batches > 0 ? pl->micro_batches : 1;
    for (int32_t c = s; c < C; c += P)
        ops += (b->chunk_first[c + 1] - b->chunk_first[c]) + (b->chunk_first[C + c + 1] - b->chunk_first[C + c]);
    int64_t items = ops * M * 3 / 2 + 256, extra = M * pl->vpp * 8 + 256;
    if (!em->sp->items) em->sp->items = mt_spare_take((size_t)items * sizeof(mt_item), &em->cap_items, sizeof(mt_item));
    if (!em->sp->tasks) em->sp->tasks = mt_spare_take((size_t)(b->one_op_per_task ? items + extra : extra) * sizeof(mt_task), &em->cap_tasks, sizeof(mt_task));
    (void)mt_vec_reserve(&em->sp->items, &em->cap_items, items);
    (void)mt_vec_reserve(&em->sp->tasks, &em->cap_tasks, b->one_op_per_task ? items + extra : extra);
}

/* A bound-only stage's tally (program.h), zeroed. */
static mt_status new_tally(mt_bld *b, mt_stage_program *sp) {
    int32_t m = b->plan->micro_batches > 0 ? b->plan->micro_batches : 1;
    mt_stage_tally *y = sp->tally = calloc(1, sizeof *sp->tally);
    if (!y || !(y->mb_ps = calloc((size_t)m * 2, sizeof *y->mb_ps)) ||
        !(y->op_tasks = calloc((size_t)(b->t->n_ops > 0 ? b->t->n_ops : 1), sizeof *y->op_tasks)))
        return MT_ENOMEM;
    y->m = m;
    y->n_ops = b->t->n_ops;
    y->last_bwd_mb = -1;
    return MT_OK;
}

static mt_status build_stage(mt_bld *b, int32_t s) {
    mt_stage_program *sp = &b->p->stages[s];
    mt_emit em = {sp, 0, 0};
    if (b->bound_only) MT_CHECK(new_tally(b, sp));
    else reserve_stage(b, &em, s);
    EACH_PASS(b, stage_begin, &em, s);
    if (s == 0) MT_CHECK(emit_other(b, &em, s, 1));
    MT_CHECK(mt_pp_emit_stage(b, &em, s));
    EACH_PASS(b, backward_done, &em, s);
    MT_CHECK(emit_other(b, &em, s, 0));
    EACH_PASS(b, step_end, &em, s);
    stage_memory(b, s, sp);
    return MT_OK;
}

/* The program's most important warning ("" none): each pass may have one. */
static void set_warning(mt_bld *b) {
    int best = 0;
    char buf[sizeof b->p->warning];
    for (int pi = 0; pi < N_PASSES; pi++) {
        int w = passes[pi]->warning ? passes[pi]->warning(b, b->state[pi], buf, (int)sizeof buf) : 0;
        if (w > best) {
            best = w;
            snprintf(b->p->warning, sizeof b->p->warning, "%s", buf);
        }
    }
}

/* The core's arrays, each sized for the trace; 0 when one could not be allocated. */
static int bld_alloc(mt_bld *b, const mt_trace *t, int32_t P) {
    size_t nops = (size_t)(t->n_ops > 0 ? t->n_ops : 1), nt = (size_t)(t->n_tensors > 0 ? t->n_tensors : 1);
    size_t nu = (size_t)(t->n_layers > t->n_ops ? t->n_layers : t->n_ops) + 1;
    b->unit = malloc(nops * sizeof *b->unit);
    b->stage_of_unit = calloc(nu, sizeof *b->stage_of_unit);
    b->chunk_of_unit = calloc(nu, sizeof *b->chunk_of_unit);
    b->split = malloc(nops * sizeof *b->split);
    b->tok = malloc(nops * sizeof *b->tok);
    b->anchor = malloc(nops * sizeof *b->anchor);
    b->op_ns = malloc(nops * sizeof *b->op_ns);
    b->grad_ready = calloc(nops, sizeof *b->grad_ready);
    b->tail_grad = calloc((size_t)P, sizeof *b->tail_grad);
    b->w_stage_bytes = calloc((size_t)P, sizeof *b->w_stage_bytes);
    b->w_stage_rep = calloc((size_t)P, sizeof *b->w_stage_rep);
    b->w_stage = malloc(nt * sizeof *b->w_stage);
    b->w_copy = malloc(nt * sizeof *b->w_copy);
    b->w_split = malloc(nt * sizeof *b->w_split);
    b->w_own = malloc(nt * sizeof *b->w_own);
    b->row = calloc(nops, sizeof *b->row);
    b->boundary = calloc((size_t)P * (size_t)(b->plan->vpp > 1 ? b->plan->vpp : 1), sizeof *b->boundary);
    b->act_mb = calloc((size_t)P, sizeof *b->act_mb);
    b->state = calloc(N_PASSES, sizeof *b->state);
    if (!b->unit || !b->stage_of_unit || !b->chunk_of_unit || !b->split || !b->tok || !b->anchor || !b->op_ns || !b->grad_ready || !b->tail_grad ||
        !b->w_stage_bytes || !b->w_stage_rep || !b->w_stage || !b->w_copy || !b->w_split || !b->w_own || !b->row ||
        !b->boundary || !b->act_mb || !b->state)
        return 0;
    for (int32_t i = 0; i < t->n_ops; i++) b->split[i] = b->tok[i] = 1;
    for (int32_t i = 0; i < t->n_tensors; i++) b->w_own[i] = 1;
    if (mt_acts_of_trace(t, &b->acts, &b->n_acts) != MT_OK) return 0;
    b->act_from = malloc((size_t)(b->n_acts > 0 ? b->n_acts : 1) * sizeof *b->act_from);
    b->act_extra = calloc((size_t)P, sizeof *b->act_extra);
    if (!b->act_from || !b->act_extra) return 0;
    for (int32_t k = 0; k < b->n_acts; k++) b->act_from[k] = -1;
    return 1;
}

static void bld_free(mt_bld *b) {
    for (int pi = 0; b->state && pi < N_PASSES; pi++)
        if (passes[pi]->release) passes[pi]->release(b->state[pi]);
    free(b->state);
    free(b->unit);
    free(b->stage_of_unit);
    free(b->chunk_of_unit);
    free(b->chunk_first);
    free(b->chunk_ops);
    free(b->op_ps);
    free(b->other_ops);
    free(b->split);
    free(b->tok);
    free(b->anchor);
    free(b->op_ns);
    free(b->grad_ready);
    free(b->tail_grad);
    free(b->w_stage_bytes);
    free(b->w_stage_rep);
    free(b->w_stage);
    free(b->w_copy);
    free(b->w_split);
    free(b->w_own);
    free(b->row);
    free(b->boundary);
    free(b->act_mb);
    free(b->acts);
    free(b->act_from);
    free(b->act_extra);
}

/* Op times once per op (the model may be costly and every micro-batch reuses them). Every task
 * time is a sum of these in int64 ps: they must be finite and add up to a simulable time (a NaN
 * became INT64_MIN ps, a huge time overflowed). */
static mt_status op_times(mt_bld *b, mt_error *err) {
    const mt_trace *t = b->t;
    b->first_fwd = t->n_ops;
    double total_ns = 0;
    for (int32_t i = t->n_ops - 1; i >= 0; i--) {
        if (t->ops[i].phase == TRACE_PHASE_FORWARD) b->first_fwd = i;
        b->op_ns[i] = b->optime(b->optime_ctx, t, i, b->plan->batch_factor, b->split[i]);
        total_ns += b->op_ns[i];
    }
    if (!(total_ns <= MT_TIME_MAX_NS))
        return mt_fail(err, MT_EINVAL, "the step's operators take %g s per micro-batch with this performance model, "
                       "beyond the simulator's range (1e6 s): check the model (--model), the GPU specs "
                       "(--gpu-specs) and --batch", total_ns / 1e9);
    return MT_OK;
}

/* One micro-batch's backward (M = 1, no --vpp): per stage, the most activations (those recomputed
 * from their re-run on, act_from; the recomputed groups' inputs throughout, act_extra),
 * backward temporaries (activation gradients: trace bwd_temps) and gradients held at once (per
 * rank), activations freed after their last backward reader, temporaries held from their op to
 * their last reader, gradients allocated as their backward op makes them
 * (zero_grad(set_to_none=True), PyTorch 2's default), into sp->mem_bwd_peak_bytes.
 * O(ops + acts + temporaries). */
static mt_status bwd_peaks(mt_bld *b) {
    const mt_trace *t = b->t;
    const mt_plan *plan = b->plan;
    if (plan->micro_batches != 1 || plan->vpp > 1 || !t->has_saved) return MT_OK;
    size_t nops = (size_t)(t->n_ops > 0 ? t->n_ops : 1);
    double *freed = calloc(nops, sizeof *freed), *made = calloc(nops, sizeof *made); /* by op */
    double *alive = calloc((size_t)plan->pp, sizeof *alive), *grads = calloc((size_t)plan->pp, sizeof *grads);
    mt_status rc = freed && made && alive && grads ? MT_OK : MT_ENOMEM;
    for (int32_t k = 0; rc == MT_OK && k < b->n_acts; k++) {
        const mt_act *a = &b->acts[k];
        double bytes = a->bytes / b->split[a->op] * plan->batch_factor;
        int32_t from = b->act_from[k], last = a->last_bwd;
        if (from >= 0 && (last < from || last >= t->n_ops)) continue; /* re-made and read by none after */
        if (from >= 0) made[from] += bytes;
        else alive[mt_bld_op_stage(b, a->op)] += bytes;
        if (last >= 0 && last < t->n_ops) freed[last] += bytes;
    }
    for (int32_t s = 0; rc == MT_OK && s < plan->pp; s++) alive[s] += b->act_extra[s] * plan->batch_factor;
    for (int32_t k = 0; rc == MT_OK && k < t->n_bwd_temps; k++) { /* held from op to last_bwd */
        const trace_saved *m = &t->bwd_temps[k];
        if (m->op < 0 || m->op >= t->n_ops || m->last_bwd < m->op || m->last_bwd >= t->n_ops) continue;
        double bytes = m->bytes / b->split[m->op] * plan->batch_factor;
        made[m->op] += bytes;
        freed[m->last_bwd] += bytes;
    }
    for (int32_t s = 0; rc == MT_OK && s < plan->pp; s++) b->p->stages[s].mem_bwd_peak_bytes = alive[s];
    for (int32_t i = 0; rc == MT_OK && i < t->n_ops; i++) {
        if (t->ops[i].phase != TRACE_PHASE_BACKWARD) continue;
        int32_t s = mt_bld_op_stage(b, i);
        mt_stage_program *sp = &b->p->stages[s];
        grads[s] += b->grad_ready[i]; /* made while the op's inputs are still held */
        alive[s] += made[i];
        if (alive[s] + grads[s] > sp->mem_bwd_peak_bytes) sp->mem_bwd_peak_bytes = alive[s] + grads[s];
        alive[s] -= freed[i];
    }
    for (int32_t s = 0; rc == MT_OK && s < plan->pp; s++) {
        mt_stage_program *sp = &b->p->stages[s];
        if (alive[s] + grads[s] + b->tail_grad[s] > sp->mem_bwd_peak_bytes) sp->mem_bwd_peak_bytes = alive[s] + grads[s] + b->tail_grad[s];
    }
    free(freed);
    free(made);
    free(alive);
    free(grads);
    return rc;
}

/* The analyses (core and passes) and the emission, on allocated state. */
static mt_status build(mt_bld *b, mt_error *err) {
    const mt_trace *t = b->t;
    mt_program *p = b->p;
    const mt_plan *plan = b->plan;
    assign_units(b);
    if (plan->pp > b->n_units)
        return mt_fail(err, MT_EINVAL, "a pipeline of %d stages needs at least %d layers; the trace has %d",
                       plan->pp, plan->pp, b->n_units);
    if (plan->pp * plan->vpp > b->n_units)
        return mt_fail(err, MT_EINVAL, "--vpp %d: %d model chunks need at least as many layers; the trace has %d",
                       plan->vpp, plan->pp * plan->vpp, b->n_units);
    MT_CHECK(assign_stages(b, err));
    MT_CHECK(find_anchors(b));
    for (int pi = 0; pi < N_PASSES; pi++)
        if (passes[pi]->prepare) MT_CHECK(passes[pi]->prepare(b, &b->state[pi], err));
    MT_CHECK(assign_gradients(b));
    MT_CHECK(op_times(b, err));
    MT_CHECK(mt_pp_boundaries(b));
    for (int pi = 0; pi < N_PASSES; pi++)
        if (passes[pi]->analyse) MT_CHECK(passes[pi]->analyse(b, b->state[pi], err));
    int32_t C = plan->pp * plan->vpp;
    for (int32_t s = 0; s < plan->pp; s++) {
        for (int32_t c = s; c < C - 1; c += plan->pp) p->stages[s].boundary_bytes += b->boundary[c];
        p->stages[s].act_bytes_per_mb = b->act_mb[s] * plan->batch_factor / plan->vpp;
    }
    MT_CHECK(bwd_peaks(b));
    for (int32_t i = 0; i < t->n_ops; i++) p->skipped_comm_ops += trace_op_is_comm(&t->ops[i]);
    MT_CHECK(index_chunks(b));
    for (int32_t s = 0; s < plan->pp; s++) MT_CHECK(build_stage(b, s));
    set_warning(b);
    return MT_OK;
}

mt_status mt_program_build(const mt_trace *t, const mt_plan *plan, const mt_program_opts *o,
                           mt_program **out, mt_error *err) {
    mt_program *p = calloc(1, sizeof *p);
    mt_bld b = {0};
    mt_status rc = MT_ENOMEM;
    if (!p) goto fail;
    p->plan = *plan;
    if (p->plan.vpp < 1) p->plan.vpp = 1;
    p->trace = t;
    p->n_stages = plan->pp;
    p->n_layers = t->n_layers;
    p->stages = calloc((size_t)plan->pp, sizeof *p->stages);
    mt_mesh mesh;
    mt_plan_mesh(&p->plan, &mesh);
    mt_groups_init(&p->groups, &mesh);
    mt_precision_traced(t, &p->prec_traced);
    mt_precision_resolve(&plan->prec, &p->prec_traced, &p->prec);
    mt_precision_scale(&p->prec_traced, &p->prec, mt_precision_states_per_param(t, &p->prec_traced), &p->prec_scale);
    b.t = t;
    b.plan = &p->plan;
    b.p = p;
    b.optime = o && o->optime ? o->optime : mt_optime_proportional;
    b.optime_ctx = o ? o->optime_ctx : NULL;
    b.one_op_per_task = o ? o->one_op_per_task : 0;
    b.bound_only = o ? o->bound_only : 0;
    b.pp_send_ns_per_byte = o ? o->pp_send_ns_per_byte : 0;
    if (!p->stages || !bld_alloc(&b, t, plan->pp)) goto fail;
    if ((rc = build(&b, err)) != MT_OK) goto fail;
    *out = p;
    p = NULL;
    goto done;
fail:
    if (rc == MT_ENOMEM) mt_fail(err, MT_ENOMEM, "out of memory building the task programs");
done:
    mt_program_free(p);
    bld_free(&b);
    return rc;
}

void mt_program_free(mt_program *p) {
    if (!p) return;
    for (int32_t s = 0; p->stages && s < p->n_stages; s++) {
        mt_spare_put(p->stages[s].tasks); /* kept for the next build (spare.h) */
        mt_spare_put(p->stages[s].items);
        if (p->stages[s].tally) {
            free(p->stages[s].tally->mb_ps);
            free(p->stages[s].tally->op_tasks);
            free(p->stages[s].tally->tail_ops);
            free(p->stages[s].tally);
        }
    }
    free(p->tp_replicated);
    free(p->stages);
    mt_moe_free(p->moe);
    free(p->emb_owner);
    free(p->emb_share);
    free(p->emb_mem);
    free(p);
}

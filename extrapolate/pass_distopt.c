/* extrapolate/pass_distopt.c — Megatron-Core's distributed optimizer (--dist-opt), the data-parallel mode
 * NeMo and Megatron-LM run (`--use-distributed-optimizer`, DistributedDataParallelConfig
 * use_distributed_optimizer=True with overlap_grad_reduce and overlap_param_gather, as NeMo's performance
 * recipes set them). What it is, from NVIDIA/Megatron-LM megatron/core/distributed/
 * (distributed_data_parallel.py, param_and_grad_buffer.py, distributed_data_parallel_config.py) and
 * megatron/core/optimizer/distrib_optimizer.py:
 *   - one contiguous gradient buffer holds every parameter's gradient whole (main grads in the reduce
 *     dtype: fp32 with grad_reduce_in_fp32 / bf16-mixed, else the parameters'); it is cut into buckets of
 *     bucket_size parameters, default max(40,000,000, 1,000,000 x DP size), filled in reverse parameter
 *     order (backward's), no smaller first bucket;
 *   - during the last micro-batch's backward (no_sync on the others) each bucket is reduce-scattered
 *     over the data-parallel (x CP) group as soon as its gradients are ready; the optimizer waits for
 *     the last (finish_grad_sync);
 *   - the fp32 master weights and Adam states are sharded over DP: each rank updates its 1/D;
 *   - the updated parameters are all-gathered in the same buckets, not after the step but in the next
 *     step's first forward: a module's forward pre-hook waits for its bucket's all-gather (dispatching it
 *     first when none is in flight: the first bucket is blocking) and then dispatches the next bucket's
 *     (finish_param_sync's next_param_gather_bucket_group): one bucket ahead, in forward order.
 * The gradient buckets are pass_dp.c's DDP buckets with this pass's cap (mt_dp_bucket_cap) and
 * reduce-scatter instead of all-reduce; memory per GPU is statemem.h's with the optimizer state
 * (and master copy) sharded, parameters and gradients whole, as ZeRO-1's. This pass adds the parameter
 * all-gathers: the step simulated is a steady-state step, so the all-gathers of the previous step's
 * update run in this step's first forward micro-batch of each model chunk. Per step and GPU over n ranks
 * (ring): reduce-scatter (n-1)/n x rep x g + all-gather (n-1)/n x rep x p, an all-reduce's bytes at one
 * precision, where ZeRO-1 sends an all-reduce and an all-gather.
 * Bucket boundaries of the all-gathers are cut on the parameters in forward order counted from the last
 * (backward's order), those of the reduce-scatters on the gradients as backward makes them ready: the
 * same sets where backward makes gradients in reverse forward order. Bucket padding (to a multiple of
 * the DP size and 128 elements) is not modelled.
 * Invariant: every replicated parameter byte of a stage (pass_dp's w_stage_rep) is in exactly one
 * all-gather bucket of that stage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/build.h"

/* Megatron-Core's default bucket: max(40M, 1M x DP) parameters (distributed_data_parallel.py). */
#define DISTOPT_BUCKET_MIN 40e6
#define DISTOPT_BUCKET_PER_RANK 1e6

typedef struct distopt_state {
    int kind;               /* the group: DP, or DP x CP ("dp+cp") as pass_dp's buckets */
    double ag_x;            /* parameters' asked bytes per traced byte (precision.h) */
    int32_t n_bk;           /* all-gather buckets, every chunk's, in forward order */
    double *bk_bytes;       /* per bucket: its traced parameter bytes per GPU */
    int32_t *bk_chunk;      /* per bucket: its model chunk */
    int32_t *bk_layer;      /* per bucket: the layer of its first reader (reports), -1 */
    int32_t *need;          /* per op: the bucket its forward waits for, -1 none */
    uint8_t *st;            /* per bucket, emission: 0 not issued, 1 in flight, 2 gathered */
    int32_t *ag_no;         /* per bucket: its issue number */
    int32_t ag_count;       /* all-gathers issued in this chunk's first forward */
} distopt_state;

static int32_t grad_ranks(const mt_plan *pl) { return mt_plan_replicas(pl) * pl->cp; }

/* Parameters per bucket: --bucket's gradient bytes when given, else Megatron-Core's default. */
static double bucket_elements(const mt_bld *b) {
    const mt_plan *pl = b->plan;
    int g = mt_prec_dtype_bytes(b->p->prec.reduce);
    if (pl->bucket_bytes != MT_BUCKET_DEFAULT) return pl->bucket_bytes / (g > 0 ? g : 4);
    double n = DISTOPT_BUCKET_PER_RANK * grad_ranks(pl);
    return n > DISTOPT_BUCKET_MIN ? n : DISTOPT_BUCKET_MIN;
}

double mt_dp_bucket_cap(const mt_bld *b, int first) {
    const mt_plan *pl = b->plan;
    if (!pl->dist_opt) return first ? pl->first_bucket_bytes : pl->bucket_bytes;
    int g = mt_prec_dtype_bytes(b->p->prec.reduce);
    return bucket_elements(b) * (g > 0 ? g : 4);
}

static mt_status distopt_prepare(mt_bld *b, void **st, mt_error *err) {
    const mt_plan *pl = b->plan;
    *st = NULL;
    if (!pl->dist_opt || grad_ranks(pl) <= 1 || pl->comm == MT_COMM_TRACED) return MT_OK;
    distopt_state *x = calloc(1, sizeof *x);
    if (!x) return MT_ENOMEM;
    *st = x;
    x->ag_x = b->p->prec_scale.param;
    b->p->distopt_bucket_bytes = mt_dp_bucket_cap(b, 0);
    x->kind = MT_GROUP_DP;
    if (pl->cp > 1 && (x->kind = mt_groups_add(&b->p->groups, MT_DIMS_DP | MT_DIM_BIT(MT_DIM_CP), 0, "dp+cp")) < 0)
        return mt_fail(err, MT_EINVAL, "too many communication group kinds in one plan (at most %d)",
                       MT_GROUP_KINDS_MAX);
    return MT_OK;
}

static void distopt_release(void *st) {
    distopt_state *x = st;
    if (!x) return;
    free(x->bk_bytes);
    free(x->bk_chunk);
    free(x->bk_layer);
    free(x->need);
    free(x->st);
    free(x->ag_no);
    free(x);
}

/* A forward compute op (the ops emission walks). */
static int fwd_walked(const mt_trace *t, int32_t i) {
    return t->ops[i].phase == TRACE_PHASE_FORWARD && !trace_op_is_comm(&t->ops[i]);
}

/* The replicated weights each stage's forward reads first, in forward order: per entry its op and its
 * bytes per GPU (split as that op); a weight read on its stage and on the stage of its copy (a tied
 * embedding) counts on both; what a stage holds beyond them (w_stage_rep) joins its first entry.
 * Returns the count, -1 out of memory; O(ops + trefs). */
static int32_t first_reads(mt_bld *b, int32_t **e_op, double **e_bytes) {
    const mt_trace *t = b->t;
    int32_t P = b->plan->pp, n = 0, cap = t->n_trefs > 0 ? t->n_trefs : 1;
    uint8_t *seen = calloc((size_t)(t->n_tensors > 0 ? t->n_tensors : 1), 1);
    int32_t *first = malloc((size_t)P * sizeof *first);
    double *read = calloc((size_t)P, sizeof *read);
    *e_op = malloc((size_t)cap * sizeof **e_op);
    *e_bytes = malloc((size_t)cap * sizeof **e_bytes);
    int ok = seen && first && read && *e_op && *e_bytes;
    for (int32_t s = 0; ok && s < P; s++) first[s] = -1;
    for (int32_t i = 0; ok && i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (!fwd_walked(t, i)) continue;
        int32_t s = mt_bld_op_stage(b, i);
        for (int32_t j = 0; j < o->in_count && n < cap; j++) {
            int32_t w = t->trefs[o->in_first + j].tensor;
            if (w < 0 || w >= t->n_tensors || t->tensors[w].role != TRACE_ROLE_WEIGHT || b->w_own[w] != 1) continue;
            uint8_t bit = s == b->w_stage[w] ? 1 : s == b->w_copy[w] ? 2 : 0;
            if (!bit || (seen[w] & bit)) continue;
            seen[w] |= bit;
            if (first[s] < 0) first[s] = n;
            (*e_op)[n] = i;
            (*e_bytes)[n] = t->tensors[w].bytes / b->w_split[w];
            read[s] += (*e_bytes)[n++];
        }
    }
    for (int32_t s = 0; ok && s < P; s++)
        if (first[s] >= 0 && b->w_stage_rep[s] - read[s] > 1) (*e_bytes)[first[s]] += b->w_stage_rep[s] - read[s];
    free(seen);
    free(first);
    free(read);
    return ok ? n : -1;
}

/* Cuts the entries into buckets: per run of one model chunk, from its last entry back, a bucket closes
 * once it holds cap bytes (Megatron fills buckets in reverse parameter order); the rest is the chunk's
 * first bucket. Numbers them in forward order into e_bk; returns the count. O(entries). */
static int32_t cut_buckets(mt_bld *b, const int32_t *e_op, const double *e_bytes, int32_t n, double cap,
                           int32_t *e_bk) {
    int32_t count = 0;
    for (int32_t a = 0, z; a < n; a = z) {
        int32_t c = mt_bld_op_chunk(b, e_op[a]);
        for (z = a + 1; z < n && mt_bld_op_chunk(b, e_op[z]) == c; z++) {}
        double acc = 0;
        for (int32_t k = z - 1; k >= a; k--) { /* e_bk[k] = 1 where a bucket begins */
            acc += e_bytes[k];
            e_bk[k] = k == a || acc >= cap;
            if (e_bk[k]) acc = 0;
        }
        for (int32_t k = a; k < z; k++) {
            count += e_bk[k];
            e_bk[k] = count - 1;
        }
    }
    return count;
}

static mt_status distopt_analyse(mt_bld *b, void *st, mt_error *err) {
    (void)err;
    distopt_state *x = st;
    if (!x) return MT_OK;
    const mt_trace *t = b->t;
    int32_t *e_op = NULL, *e_bk = NULL;
    double *e_bytes = NULL;
    int32_t n = first_reads(b, &e_op, &e_bytes);
    mt_status rc = n >= 0 && (e_bk = malloc((size_t)(n > 0 ? n : 1) * sizeof *e_bk)) ? MT_OK : MT_ENOMEM;
    int tb = mt_prec_dtype_bytes(b->p->prec_traced.param);
    if (rc == MT_OK) x->n_bk = cut_buckets(b, e_op, e_bytes, n, bucket_elements(b) * (tb > 0 ? tb : 4), e_bk);
    b->p->distopt_gathers = x->n_bk;
    size_t B = (size_t)(x->n_bk > 0 ? x->n_bk : 1);
    if (rc == MT_OK) {
        x->bk_bytes = calloc(B, sizeof *x->bk_bytes);
        x->bk_chunk = malloc(B * sizeof *x->bk_chunk);
        x->bk_layer = malloc(B * sizeof *x->bk_layer);
        x->st = calloc(B, 1);
        x->ag_no = calloc(B, sizeof *x->ag_no);
        x->need = malloc((size_t)(t->n_ops > 0 ? t->n_ops : 1) * sizeof *x->need);
        if (!x->bk_bytes || !x->bk_chunk || !x->bk_layer || !x->st || !x->ag_no || !x->need) rc = MT_ENOMEM;
    }
    for (int32_t i = 0; rc == MT_OK && i < t->n_ops; i++) x->need[i] = -1;
    for (int32_t k = 0; rc == MT_OK && k < n; k++) {
        int32_t u = e_bk[k], op = e_op[k];
        if (x->bk_bytes[u] == 0) {
            x->bk_chunk[u] = mt_bld_op_chunk(b, op);
            x->bk_layer[u] = mt_bld_layer(b, op);
        }
        x->bk_bytes[u] += e_bytes[k];
        if (u > x->need[op]) x->need[op] = u;
    }
    free(e_op);
    free(e_bytes);
    free(e_bk);
    return rc;
}

static mt_status distopt_mb_begin(mt_bld *b, void *st, mt_emit *em, int32_t s, int32_t mb, int dir, int last) {
    (void)em;
    (void)s;
    (void)last;
    distopt_state *x = st;
    if (!x || dir < 0 || mb != 0) return MT_OK;
    x->ag_count = 0;
    for (int32_t u = 0; u < x->n_bk; u++)
        if (x->bk_chunk[u] == b->chunk) x->st[u] = 0;
    return MT_OK;
}

static mt_status issue(mt_bld *b, distopt_state *x, mt_emit *em, int32_t u, int32_t mb) {
    if (u >= x->n_bk || x->bk_chunk[u] != b->chunk || x->st[u]) return MT_OK;
    x->st[u] = 1;
    x->ag_no[u] = x->ag_count++;
    return mt_emit_coll(em, x->kind, MT_COLL_ALLGATHER, MT_COLL_WHY_DP_PARAMS, 0, x->bk_bytes[u] * x->ag_x,
                        x->bk_layer[u], mb, TRACE_PHASE_FORWARD);
}

/* The first micro-batch's forward op `op` reads parameters of bucket j: every bucket of its chunk up to
 * j is gathered first (issued when not in flight, then waited for, the later ones left in flight), then
 * the all-gather of the bucket after j is issued. */
static mt_status distopt_before_op(mt_bld *b, void *st, mt_emit *em, int32_t op, int32_t mb, int last) {
    (void)last;
    distopt_state *x = st;
    int32_t j = x && mb == 0 && b->t->ops[op].phase == TRACE_PHASE_FORWARD ? x->need[op] : -1;
    if (j < 0 || x->st[j] == 2) return MT_OK;
    int32_t u = j;
    while (u > 0 && x->bk_chunk[u - 1] == b->chunk && x->st[u - 1] != 2) u--;
    for (; u <= j; u++) {
        MT_CHECK(issue(b, x, em, u, mb));
        mt_task *k = mt_emit_task(em, MT_TASK_WAIT_GROUP);
        if (!k) return MT_ENOMEM;
        k->group = x->kind;
        k->keep = x->ag_count - x->ag_no[u] - 1;
        k->mb = mb;
        k->phase = (int8_t)TRACE_PHASE_FORWARD;
        x->st[u] = 2;
    }
    return issue(b, x, em, j + 1, mb);
}

const mt_pass mt_pass_distopt = {
    .name = "distopt",
    .idle_without_state = 1, /* its hooks return at once without its state */
    .prepare = distopt_prepare,
    .release = distopt_release,
    .analyse = distopt_analyse,
    .mb_begin = distopt_mb_begin,
    .before_op = distopt_before_op,
};

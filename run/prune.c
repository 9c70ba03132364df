/* run/prune.c — see prune.h. */
#include "run/prune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Stage sp's compute in micro-batch tasks (*mb_ps) and the least forward and backward compute of
 * one micro-batch (*fwd_ps, *bwd_ps; 0 when a micro-batch has none), from its tasks or, bound-only,
 * its tally (the same sums: integers, exact in any order). */
static int mb_work(const mt_stage_program *sp, int32_t m, double *mb_ps, double *fwd_ps, double *bwd_ps) {
    const mt_stage_tally *y = sp->tally;
    if (y && y->m != m) return 0;
    double *f = y ? y->mb_ps : calloc((size_t)m * 2, sizeof *f);
    if (!f) return 0;
    *mb_ps = y ? y->mb_total_ps : 0;
    for (int32_t k = 0; !y && k < sp->n_tasks; k++) {
        const mt_task *t = &sp->tasks[k];
        if (t->kind != MT_TASK_COMPUTE || t->mb < 0) continue;
        *mb_ps += (double)t->dur_ps;
        if (t->mb < m) f[(size_t)t->mb * 2 + (t->phase != TRACE_PHASE_FORWARD)] += (double)t->dur_ps;
    }
    *fwd_ps = *bwd_ps = HUGE_VAL;
    for (int32_t j = 0; j < m; j++) {
        *fwd_ps = fmin(*fwd_ps, f[(size_t)j * 2]);
        *bwd_ps = fmin(*bwd_ps, f[(size_t)j * 2 + 1]);
    }
    if (!y) free(f);
    return 1;
}

/* The host thread's work on stage sp per step: its head and every COMPUTE task's op's host time. */
static double host_work(const mt_stage_program *sp, const mt_hostmodel *host) {
    double host_ps = (double)host->head_ps;
    if (sp->tally) {
        for (int32_t op = 0; op < host->n_ops && op < sp->tally->n_ops; op++)
            if (sp->tally->op_tasks[op]) host_ps += (double)sp->tally->op_tasks[op] * (double)host->ops[op].host_ps;
        return host_ps;
    }
    for (int32_t k = 0; k < sp->n_tasks; k++) {
        const mt_task *t = &sp->tasks[k];
        int32_t op = t->kind == MT_TASK_COMPUTE && t->item_count > 0 ? sp->items[t->item_first].op : -1;
        if (op >= 0 && op < host->n_ops) host_ps += (double)host->ops[op].host_ps;
    }
    return host_ps;
}

mt_prune_bound mt_prune_bound_of(const mt_program *p, const mt_hostmodel *host) {
    mt_prune_bound b = {.ok = 1, .stage = 0};
    double streams = host && host->share && host->n_streams > 1 ? host->n_streams : 1;
    /* A pipeline (gpipe or 1f1b, one chunk per GPU, one compute stream): stage k's micro-batch work
     * starts after the first micro-batch's forward crossed stages 0..k-1 and its last backward must
     * still cross them back. */
    int32_t m = p->plan.micro_batches;
    int chain_ok = streams == 1 && p->n_stages > 1 && p->plan.vpp <= 1 && m >= 1 &&
                   (p->plan.schedule == MT_PP_GPIPE || p->plan.schedule == MT_PP_1F1B);
    double chain_ps = 0;
    for (int32_t s = 0; s < p->n_stages; s++) {
        const mt_stage_program *sp = &p->stages[s];
        double step = (double)sp->compute_ps / streams, mb_ps, fwd_ps, bwd_ps;
        if (chain_ok && (chain_ok = mb_work(sp, m, &mb_ps, &fwd_ps, &bwd_ps))) {
            step = fmax(step, chain_ps + mb_ps);
            chain_ps += fwd_ps + bwd_ps;
        }
        if (host) step = fmax(step, host_work(sp, host)); /* the host thread issues every op in turn; a
                                                            * GPU's step ends when it is done too */
        double mem = sp->param_bytes + sp->grad_bytes + sp->optstate_bytes;
        if (step > b.step_ps) b.step_ps = step, b.stage = s;
        if (mem > b.mem_bytes) b.mem_bytes = mem;
    }
    return b;
}

void mt_prune_bound_key(const mt_plan *p, mt_plan *key) {
    memset(key, 0, sizeof *key);
    memcpy(key, p, sizeof *key);
    if (p->vpp <= 1) key->schedule = MT_PP_1F1B;
    if (!p->zero && !p->fsdp && !p->dist_opt && p->ep <= 1 && !p->emb_shard) key->dp_mode = MT_DP_DDP;
}

void mt_prune_topk_init(mt_prune_topk *t, int32_t k) {
    memset(t, 0, sizeof *t);
    t->k = k;
}

void mt_prune_topk_add(mt_prune_topk *t, double v) {
    int32_t cap = t->k < 64 ? t->k : 64;
    if (cap <= 0 || (t->n == cap && v <= t->v[cap - 1])) return;
    int32_t i = t->n < cap ? t->n++ : cap - 1;
    while (i > 0 && t->v[i - 1] < v) {
        t->v[i] = t->v[i - 1];
        i--;
    }
    t->v[i] = v;
}

int mt_prune_topk_excludes(const mt_prune_topk *t, double bound) {
    return t->k > 0 && t->k <= 64 && t->n == t->k && t->v[t->k - 1] > bound;
}

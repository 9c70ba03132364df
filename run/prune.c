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

/* The host's cost of the collectives and sends stage sp issues (sim/simulate.c: coll_host_ps each, a
 * collective on a group of one rank none); *tail_ps the part after its last backward task of a
 * micro-batch (meaningless when it has none). */
static double issue_work(const mt_program *p, const mt_stage_program *sp, const mt_hostmodel *host, double *tail_ps) {
    int32_t n = 0, tail = 0, seen_bwd = 0;
    const mt_stage_tally *y = sp->tally;
    for (int i = 0; y && i <= MT_GROUP_KINDS_MAX; i++)
        if (i == MT_GROUP_KINDS_MAX || mt_group_count(&p->groups, i) > 0) n += y->issued[i], tail += y->tail_issued[i];
    for (int32_t k = sp->n_tasks - 1; k >= 0; k--) { /* a tally's last task is in tasks[0], not counted */
        const mt_task *t = &sp->tasks[k];
        int issued = t->kind == MT_TASK_SEND ||
                     (t->kind == MT_TASK_COLL && t->group >= 0 && t->group < p->groups.n_kinds &&
                      mt_group_count(&p->groups, t->group) > 0);
        if (!y && t->kind == MT_TASK_COMPUTE && t->mb >= 0 && t->phase != TRACE_PHASE_FORWARD) seen_bwd = 1;
        n += issued;
        tail += issued && !seen_bwd; /* a tally's last task comes after its last backward task */
    }
    *tail_ps = (double)tail * (double)host->coll_host_ps;
    return (double)n * (double)host->coll_host_ps;
}

/* Stage sp's last backward COMPUTE task of a micro-batch in issue order: 0 none; else *issue_ps the host
 * work before the host issues it (the head and every COMPUTE task's op before it: host_ps, the stage's
 * host work, less its op and theirs after it) and *dur_ps its time. */
static int last_bwd(const mt_stage_program *sp, const mt_hostmodel *host, double host_ps, double *issue_ps,
                    double *dur_ps, double *tail_ps, int32_t *mb) { /* *tail_ps: the COMPUTE time after it */
    const mt_stage_tally *y = sp->tally;
    double after = 0; /* host work of it and the tasks after it */
    int32_t op = -1;
    *tail_ps = 0;
    if (y) {
        if (y->last_bwd_mb < 0) return 0;
        op = y->last_bwd_op;
        *dur_ps = y->last_bwd_ps;
        *tail_ps = y->tail_ps;
        *mb = y->last_bwd_mb;
        for (int32_t q = 0; q < y->n_tail; q++)
            if (y->tail_ops[q] >= 0 && y->tail_ops[q] < host->n_ops) after += (double)host->ops[y->tail_ops[q]].host_ps;
    } else {
        int32_t k = sp->n_tasks - 1;
        for (; k >= 0; k--) {
            const mt_task *t = &sp->tasks[k];
            if (t->kind != MT_TASK_COMPUTE || t->item_count <= 0) continue;
            int32_t o = sp->items[t->item_first].op;
            if (t->mb >= 0 && t->phase != TRACE_PHASE_FORWARD) {
                op = o;
                *dur_ps = (double)t->dur_ps;
                *mb = t->mb;
                break;
            }
            if (o >= 0 && o < host->n_ops) after += (double)host->ops[o].host_ps;
            *tail_ps += (double)t->dur_ps;
        }
        if (k < 0) return 0;
    }
    if (op >= 0 && op < host->n_ops) after += (double)host->ops[op].host_ps;
    *issue_ps = host_ps - after;
    return 1;
}

/* The pipeline's drain behind stage k's last backward task of a micro-batch (the host model, one compute
 * stream): that micro-batch's gradients cross stages k-1 .. i back (the least backward of a micro-batch
 * on each), and stage i then runs its COMPUTE tasks after its own last backward task (when that is of
 * the same micro-batch on every stage up to k). */
typedef struct drain {
    double plain;  /* sum of bwd over the stages before */
    double tails;  /* the most, over stages i before, of their bwd from i on plus i's tail */
    int32_t mb;    /* stage 0's last backward micro-batch */
    int same;      /* every stage before had its last backward task, of micro-batch mb */
} drain;

/* Stage s's bound from its host thread and the drain before it (0: none); d then takes stage s. */
static double drain_step(drain *d, int32_t s, const mt_stage_program *sp, const mt_hostmodel *host, double host_ps,
                         double bwd_ps) {
    double issue_ps, dur_ps, tail_ps, step = 0;
    int32_t mb = -1;
    int has = last_bwd(sp, host, host_ps, &issue_ps, &dur_ps, &tail_ps, &mb);
    if (has) step = issue_ps + dur_ps + fmax(tail_ps, s == 0 || (d->same && mb == d->mb) ? d->tails : d->plain);
    if (s == 0) d->mb = mb, d->same = has;
    d->same = d->same && has && mb == d->mb;
    d->tails = bwd_ps + fmax(d->tails, has ? tail_ps : 0);
    d->plain += bwd_ps;
    return step;
}

mt_prune_bound mt_prune_bound_of(const mt_program *p, const mt_hostmodel *host) {
    mt_prune_bound b = {.ok = 1, .stage = 0, .what = "compute"};
    double streams = host && host->share && host->n_streams > 1 ? host->n_streams : 1;
    /* A pipeline (gpipe or 1f1b, one chunk per GPU, one compute stream): stage k's micro-batch work
     * starts after the first micro-batch's forward crossed stages 0..k-1 and its last backward must
     * still cross them back. */
    int32_t m = p->plan.micro_batches;
    int chain_ok = streams == 1 && p->n_stages > 1 && p->plan.vpp <= 1 && m >= 1 &&
                   (p->plan.schedule == MT_PP_GPIPE || p->plan.schedule == MT_PP_1F1B);
    double chain_ps = 0;
    drain d = {0};
    for (int32_t s = 0; s < p->n_stages; s++) {
        const mt_stage_program *sp = &p->stages[s];
        double step = (double)sp->compute_ps / streams, mb_ps, fwd_ps, bwd_ps;
        double tail_ps = 0, host_ps = host ? host_work(sp, host) + issue_work(p, sp, host, &tail_ps) : 0;
        const char *what = "compute";
        if (chain_ok && (chain_ok = mb_work(sp, m, &mb_ps, &fwd_ps, &bwd_ps))) {
            step = fmax(step, chain_ps + mb_ps);
            chain_ps += fwd_ps + bwd_ps;
            /* the host issues the stage's last backward task of a micro-batch after its work before it */
            double h = host ? drain_step(&d, s, sp, host, host_ps - tail_ps, bwd_ps) : 0;
            if (h > step) step = h, what = "host thread and pipeline drain";
        }
        if (host && host_ps > step) /* the host thread issues every op in turn; a GPU's step ends when it
                                     * is done too */
            step = host_ps, what = "host thread";
        double mem = sp->param_bytes + sp->grad_bytes + sp->optstate_bytes;
        if (step > b.step_ps) b.step_ps = step, b.stage = s, b.what = what;
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

/* Unit tests for Megatron tensor and sequence parallelism (extrapolate/program.c's TP pass) on
 * the synthetic GPT of txfix.h (batch 2, sequence 8, hidden 16, 4 heads, vocabulary 64, 2
 * blocks): 16 tokens, so the residual stream is 16 x 16 x 4 = 1024 bytes and a per-token fp32
 * statistic 64 bytes. Solved by hand:
 *  - tp 2: the vocabulary embedding 1 forward all-reduce (1024 B); each block 2 forward and 2
 *    backward all-reduces (1024 B); the position embedding none and replicated; the LM head
 *    and cross-entropy no all-gather, 3 forward all-reduces of 64 B (max, sum-exp, target logit)
 *    and 1 backward all-reduce of its input gradient; the loss split in 2, the tied embedding
 *    weight counted once, split;
 *  - --sp: every 1024-byte all-reduce becomes a reduce-scatter + all-gather (the traffic is the
 *    same: a ring all-reduce moves 2(T-1)/T S, each half (T-1)/T S); norms, residual adds and the
 *    position embedding run on 1/T of the sequence; their weights' gradients (5 norms of 64 B and
 *    the 512-byte position table) are all-reduced once after backward;
 *  - --cp 2 and 4 (with tp 1 and 2): one K/V ring per attention and direction on the CP group,
 *    each rank passing C - 1 blocks (ring all-gather of K + V = 2048 B / T, twice that in
 *    backward), non-blocking and waited for on the CP kind only; per-token ops / C, weights whole,
 *    gradients over the dp+cp group; --cp 3 does not divide the sequence (8);
 *  - tied embeddings under --pp 2 and 3: one all-reduce of the table (/ T) between the first and
 *    last stage (an "emb" group kind of 2), none on a middle stage;
 *  - an op no Megatron rule recognises (a custom norm) stays replicated and is listed
 *    (tp_replicated); the synthetic GPT itself lists none;
 *  - refusals: --tp 8 (4 heads), --sp without --tp > 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "extrapolate/plan.h"
#include "extrapolate/program.h"
#include "txfix.h"

static const tx_shape SHAPE = {2, 8, 16, 4, 64, 2, 1000};

static mt_status build_cp(const mt_trace *t, int32_t tp, int sp, int32_t cp, mt_program **p, mt_error *err) {
    mt_plan pl;
    mt_plan_init(&pl);
    pl.gpus = tp * cp;
    pl.tp = tp;
    pl.sp = sp;
    pl.cp = cp;
    MT_CHECK(mt_plan_resolve(&pl, t, err));
    return mt_program_build(t, &pl, NULL, p, err);
}

static mt_status build(const mt_trace *t, int32_t tp, int sp, mt_program **p, mt_error *err) {
    return build_cp(t, tp, sp, 1, p, err);
}

typedef struct count {
    int n[2][MT_COLL_SENDRECV + 1];  /* [backward][op] TP collectives of the layer */
    double bytes[2][MT_COLL_SENDRECV + 1];
} count;

/* TP collectives per layer (index layer + 1: -1 is the end of the step), and the ring volume. */
static double tally(const mt_program *p, count *per_layer, int32_t n_layers) {
    double vol = 0;
    const mt_stage_program *sp = &p->stages[0];
    memset(per_layer, 0, sizeof *per_layer * (size_t)(n_layers + 1));
    for (int32_t i = 0; i < sp->n_tasks; i++) {
        const mt_task *k = &sp->tasks[i];
        if (k->kind != MT_TASK_COLL || k->group != MT_GROUP_TP) continue;
        int bwd = k->why == MT_COLL_WHY_TP_BWD;
        assert_true(k->layer >= -1 && k->layer < n_layers);
        per_layer[k->layer + 1].n[bwd][k->coll]++;
        per_layer[k->layer + 1].bytes[bwd][k->coll] += k->bytes;
        if (k->layer >= 0) vol += (k->coll == MT_COLL_ALLREDUCE ? 2.0 : 1.0) * k->bytes / 2; /* T = 2 */
    }
    return vol;
}

static int32_t find_op(const mt_trace *t, const char *name, int nth) {
    for (int32_t i = 0; i < t->n_ops; i++)
        if (t->ops[i].phase == TRACE_PHASE_FORWARD && !strcmp(t->ops[i].name, name) && nth-- == 0) return i;
    fail_msg("no forward op %s", name);
    return -1;
}

static int32_t item_split(const mt_program *p, int32_t op) {
    const mt_stage_program *sp = &p->stages[0];
    for (int32_t i = 0; i < sp->n_items; i++)
        if (sp->items[i].op == op) return sp->items[i].split;
    fail_msg("op %d not emitted", op);
    return 0;
}

static void megatron_tp(void **state) {
    (void)state;
    mt_trace *t = tx_make(&SHAPE);
    mt_program *p = NULL;
    mt_error err = {0};
    assert_int_equal(build(t, 2, 0, &p, &err), MT_OK);
    count c[8];
    tally(p, c, t->n_layers);
    const count *emb = &c[1], *pos = &c[2], *head = &c[SHAPE.blocks + 3];
    assert_int_equal(emb->n[0][MT_COLL_ALLREDUCE], 1);
    assert_true(emb->bytes[0][MT_COLL_ALLREDUCE] == 1024);
    assert_int_equal(emb->n[1][MT_COLL_ALLREDUCE], 0);
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < MT_COLL_SENDRECV + 1; k++) assert_int_equal(pos->n[d][k], 0); /* none for positions */
    for (int32_t l = 0; l < SHAPE.blocks; l++) {
        const count *b = &c[l + 3];
        assert_int_equal(b->n[0][MT_COLL_ALLREDUCE], 2);
        assert_int_equal(b->n[1][MT_COLL_ALLREDUCE], 2);
        assert_true(b->bytes[0][MT_COLL_ALLREDUCE] == 2048 && b->bytes[1][MT_COLL_ALLREDUCE] == 2048);
        assert_int_equal(b->n[0][MT_COLL_ALLGATHER] + b->n[1][MT_COLL_ALLGATHER], 0);
    }
    assert_int_equal(head->n[0][MT_COLL_ALLREDUCE], 3); /* max, sum of exponentials, target logit */
    assert_true(head->bytes[0][MT_COLL_ALLREDUCE] == 3 * 64);
    assert_int_equal(head->n[0][MT_COLL_ALLGATHER], 0); /* no all-gather of logits or targets */
    assert_int_equal(head->n[1][MT_COLL_ALLREDUCE], 1);
    assert_true(head->bytes[1][MT_COLL_ALLREDUCE] == 1024);
    assert_int_equal(c[0].n[1][MT_COLL_ALLREDUCE], 0); /* nothing after backward without sp */
    assert_int_equal(p->tp_colls_fwd, 1 + 2 * SHAPE.blocks + 3);
    assert_int_equal(p->tp_colls_bwd, 2 * SHAPE.blocks + 1);
    assert_int_equal(item_split(p, find_op(t, "aten::cross_entropy_loss", 0)), 2);
    assert_int_equal(item_split(p, find_op(t, "aten::embedding", 0)), 2);
    assert_int_equal(item_split(p, find_op(t, "aten::embedding", 1)), 1); /* positions: replicated */
    assert_int_equal(item_split(p, find_op(t, "aten::layer_norm", 0)), 1);
    /* parameters per GPU: the tied 64 x 16 table once, split; positions 8 x 16 and 5 norms of 16
     * whole; per block 4 x 16 x 16 + 2 x 64 x 16 linear weights split */
    double want = (64 * 16 / 2 + 8 * 16 + 5 * 16 + SHAPE.blocks * (4 * 256 + 2 * 1024) / 2) * 4.0;
    assert_true(p->stages[0].param_bytes == want);
    mt_program_free(p);
    mt_trace_free(t);
}

static void megatron_sp(void **state) {
    (void)state;
    mt_trace *t = tx_make(&SHAPE);
    mt_program *p = NULL, *q = NULL;
    mt_error err = {0};
    assert_int_equal(build(t, 2, 0, &p, &err), MT_OK);
    assert_int_equal(build(t, 2, 1, &q, &err), MT_OK);
    count c[8], s[8];
    double vol_tp = tally(p, c, t->n_layers), vol_sp = tally(q, s, t->n_layers);
    assert_true(vol_tp == vol_sp); /* SP moves exactly TP's all-reduce volume */
    assert_true(vol_tp == (1 + 4 * SHAPE.blocks + 1) * 1024 + 3 * 64);
    const count *emb = &s[1], *head = &s[SHAPE.blocks + 3];
    assert_int_equal(emb->n[0][MT_COLL_REDUCESCATTER], 1);
    assert_int_equal(emb->n[1][MT_COLL_ALLGATHER], 1);
    assert_int_equal(emb->n[0][MT_COLL_ALLREDUCE], 0);
    for (int32_t l = 0; l < SHAPE.blocks; l++) {
        const count *b = &s[l + 3];
        for (int d = 0; d < 2; d++) {
            assert_int_equal(b->n[d][MT_COLL_REDUCESCATTER], 2);
            assert_int_equal(b->n[d][MT_COLL_ALLGATHER], 2);
            assert_int_equal(b->n[d][MT_COLL_ALLREDUCE], 0);
        }
    }
    assert_int_equal(head->n[0][MT_COLL_ALLGATHER], 1);  /* the LM head's input */
    assert_int_equal(head->n[0][MT_COLL_ALLREDUCE], 3);  /* the loss statistics, as without sp */
    assert_int_equal(head->n[1][MT_COLL_REDUCESCATTER], 1);
    /* once after backward: norms (5 x 64 B) and positions (512 B) saw half the tokens */
    assert_int_equal(s[0].n[1][MT_COLL_ALLREDUCE], 1);
    assert_true(s[0].bytes[1][MT_COLL_ALLREDUCE] == 5 * 64 + 512);
    assert_int_equal(item_split(q, find_op(t, "aten::layer_norm", 0)), 2);
    assert_int_equal(item_split(q, find_op(t, "aten::add", 0)), 2);
    assert_int_equal(item_split(q, find_op(t, "aten::embedding", 1)), 2);
    assert_true(q->stages[0].param_bytes == p->stages[0].param_bytes); /* sequence splits keep weights */
    mt_program_free(p);
    mt_program_free(q);
    mt_trace_free(t);
}

/* Sends rank 0 makes in a ring all-gather of `bytes` over n ranks, and their bytes. */
static int ring_sends(int32_t n, double bytes, double *sent) {
    mt_coll_params cp;
    mt_coll_params_init(&cp);
    cp.op = MT_COLL_ALLGATHER;
    cp.algo = MT_ALGO_RING;
    cp.nranks = n;
    cp.bytes = bytes;
    mt_coll_schedule *s = NULL;
    mt_error err = {0};
    assert_int_equal(mt_coll_build(&cp, &s, &err), MT_OK);
    int k = 0;
    *sent = 0;
    for (uint32_t i = 0; i < s->nsends; i++)
        if (s->sends[i].src == 0 && s->sends[i].dst != 0) {
            k++;
            *sent += s->sends[i].bytes;
        }
    mt_coll_free(s);
    return k;
}

/* --cp C (with --tp 1 and 2): per attention and direction one K/V ring on the CP group in which
 * each rank passes C - 1 blocks of K/V / (T x C) (backward: K/V and their gradients), overlapped
 * (non-blocking, then a wait on the CP kind only); per-token work / C, weights whole; gradients
 * reduced over dp x cp. */
static void context_parallel(void **state) {
    (void)state;
    mt_trace *t = tx_make(&SHAPE);
    mt_error err = {0};
    for (int32_t C = 2; C <= 4; C *= 2)
        for (int32_t T = 1; T <= 2; T++) {
            mt_program *p = NULL;
            assert_int_equal(build_cp(t, T, 0, C, &p, &err), MT_OK);
            const mt_stage_program *sp = &p->stages[0];
            int rings[2] = {0}, waits = 0, grads = 0;
            for (int32_t i = 0; i < sp->n_tasks; i++) {
                const mt_task *k = &sp->tasks[i];
                char name[16];
                mt_group_kind_name(&p->groups, k->group, name, sizeof name);
                if (k->kind == MT_TASK_WAIT_GROUP && k->keep == 0) {
                    assert_string_equal(name, "cp");
                    waits++;
                }
                if (k->kind != MT_TASK_COLL) continue;
                if (k->why == MT_COLL_WHY_DP_GRAD) {
                    assert_string_equal(name, "dp+cp");
                    assert_int_equal(mt_group_size(&p->groups, k->group), C);
                    grads++;
                }
                if (k->why != MT_COLL_WHY_CP_FWD && k->why != MT_COLL_WHY_CP_BWD) continue;
                int bwd = k->why == MT_COLL_WHY_CP_BWD;
                assert_string_equal(name, "cp");
                assert_int_equal(mt_group_size(&p->groups, k->group), C);
                assert_int_equal(k->blocking, 0);
                assert_int_equal(k->coll, MT_COLL_ALLGATHER);
                double kv = 2.0 * 1024 / T, sent; /* K and V: 2 x 16 tokens x 16 x 4 B, over T */
                assert_true(k->bytes == kv * (bwd ? 2 : 1));
                assert_int_equal(ring_sends(C, k->bytes, &sent), C - 1); /* C - 1 blocks per rank */
                assert_true(fabs(sent - (C - 1) * k->bytes / C) < 1e-9);
                rings[bwd]++;
            }
            assert_int_equal(rings[0], SHAPE.blocks); /* one per attention and direction */
            assert_int_equal(rings[1], SHAPE.blocks);
            assert_int_equal(waits, 2 * SHAPE.blocks);
            assert_int_equal(p->cp_rings, 2 * SHAPE.blocks);
            assert_true(grads >= 1);
            mt_program *tp_only = NULL; /* weights whole: the same parameters as without cp */
            assert_int_equal(build(t, T, 0, &tp_only, &err), MT_OK);
            assert_true(sp->param_bytes == tp_only->stages[0].param_bytes);
            mt_program_free(tp_only);
            int32_t norm = find_op(t, "aten::layer_norm", 0), lin = find_op(t, "aten::linear", 0);
            assert_int_equal(item_split(p, norm), C);
            assert_int_equal(item_split(p, lin), C * T);
            mt_program_free(p);
        }
    mt_program *p = NULL;
    assert_int_equal(build_cp(t, 1, 0, 3, &p, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--cp 3 does not divide the sequence length 8"));
    mt_trace_free(t);
}

/* An op no rule recognises (a custom norm) stays whole and is listed; the recognised ones are not. */
static void replicated_listed(void **state) {
    (void)state;
    mt_trace *t = tx_make(&SHAPE);
    mt_program *p = NULL;
    mt_error err = {0};
    assert_int_equal(build(t, 2, 0, &p, &err), MT_OK);
    assert_int_equal(p->n_tp_replicated, 0); /* positions, norms, adds: replicated by design */
    mt_program_free(p);
    int32_t ln_f = find_op(t, "aten::layer_norm", 2 * SHAPE.blocks);
    t->ops[ln_f].name = t->ops[ln_f].kind = "mylib::fused_norm";
    mt_opclass_trace(t);
    assert_int_equal(build(t, 2, 0, &p, &err), MT_OK);
    assert_int_equal(p->n_tp_replicated, 1);
    assert_int_equal(p->tp_replicated[0], ln_f);
    assert_int_equal(item_split(p, ln_f), 1);
    mt_program_free(p);
    mt_trace_free(t);
}

/* Tied embeddings under --pp P (3 blocks: 6 layers): the first and last stages both hold the
 * 64 x 16 table (/ T) and all-reduce its gradient once per step between them, on an "emb" kind of
 * 2 ranks; a middle stage is in no group of it and emits none. */
static void tied_embeddings(void **state) {
    (void)state;
    tx_shape sh = SHAPE;
    sh.blocks = 3;
    mt_trace *t = tx_make(&sh);
    for (int32_t P = 2; P <= 3; P++)
        for (int32_t T = 1; T <= 2; T++) {
            mt_plan pl;
            mt_plan_init(&pl);
            pl.gpus = P * T;
            pl.tp = T;
            pl.pp = P;
            pl.micro_batches = 2; /* the batch is 2 */
            mt_error err = {0};
            mt_program *p = NULL;
            assert_int_equal(mt_plan_resolve(&pl, t, &err), MT_OK);
            assert_int_equal(mt_program_build(t, &pl, NULL, &p, &err), MT_OK);
            assert_int_equal(p->tied_syncs, 2);
            double table = 64 * 16 * 4.0 / T;
            for (int32_t s = 0; s < P; s++) {
                int n = 0;
                for (int32_t i = 0; i < p->stages[s].n_tasks; i++) {
                    const mt_task *k = &p->stages[s].tasks[i];
                    char name[16];
                    if (k->kind != MT_TASK_COLL || strcmp(mt_group_kind_name(&p->groups, k->group, name, sizeof name),
                                                          "emb"))
                        continue;
                    assert_int_equal(mt_group_size(&p->groups, k->group), 2);
                    assert_int_equal(mt_group_count(&p->groups, k->group), T);
                    assert_true(k->bytes == table && k->coll == MT_COLL_ALLREDUCE && k->blocking);
                    n++;
                }
                assert_int_equal(n, s == 0 || s == P - 1); /* the first and last stage only */
            }
            if (P == 3) { /* the middle stage's ranks are in no emb group; the ends pair up */
                int kind = -1;
                for (int k = 0; k < p->groups.n_kinds; k++)
                    if (!strcmp(p->groups.kind[k].name, "emb")) kind = k;
                assert_true(kind >= 0);
                assert_int_equal(mt_group_id(&p->groups, kind, mt_plan_rank(&pl, 0, 1, 0)), -1);
                int32_t first = mt_plan_rank(&pl, 0, 0, T - 1), last = mt_plan_rank(&pl, 0, 2, T - 1);
                assert_int_equal(mt_group_member(&p->groups, kind, first, 1), last);
                assert_int_equal(mt_group_member(&p->groups, kind, last, 0), first);
            }
            mt_program_free(p);
        }
    mt_trace_free(t);
}

static void refusals(void **state) {
    (void)state;
    mt_trace *t = tx_make(&SHAPE);
    mt_program *p = NULL;
    mt_error err = {0};
    assert_int_equal(build(t, 8, 0, &p, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "4 attention heads"));
    assert_non_null(strstr(err.msg, "the largest --tp up to 8 that fits this model is 4"));
    assert_int_equal(build(t, 1, 1, &p, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--sp needs --tp > 1"));
    assert_null(strchr(err.msg, '\n'));
    mt_trace_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(megatron_tp),
        cmocka_unit_test(megatron_sp),
        cmocka_unit_test(context_parallel),
        cmocka_unit_test(replicated_listed),
        cmocka_unit_test(tied_embeddings),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

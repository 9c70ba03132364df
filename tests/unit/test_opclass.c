/* Unit tests for the operator classifier (tracer/opclass.h) on hand-made ops: the tensor-parallel
 * kind, batch dependence and class mt_opclass_trace fills in, communication kinds from names,
 * and what names say about phases and in-place updates.
 *
 * The hand-made trace: four tensors of 64 fp32 elements, one per role (input, activation,
 * weight, gradient) and one of positions made by the aten::arange case; each op of `cases` reads the tensors
 * listed with it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "tracer/opclass.h"

enum { T_IN = 0, T_ACT, T_W, T_GRAD, T_POS, N_TENSORS };
enum { ARANGE_CASE = 11 }; /* the index of the aten::arange case: T_POS's producer */

typedef struct fixture {
    mt_trace t;
    trace_op ops[32];     /* fits every case */
    trace_tensor tensors[N_TENSORS];
    trace_tref trefs[64];
} fixture;

static void fixture_init(fixture *f) {
    memset(f, 0, sizeof *f);
    static const trace_role roles[N_TENSORS] = {TRACE_ROLE_INPUT, TRACE_ROLE_ACTIVATION, TRACE_ROLE_WEIGHT,
                                                TRACE_ROLE_GRADIENT, TRACE_ROLE_ACTIVATION};
    for (int i = 0; i < N_TENSORS; i++) f->tensors[i] = (trace_tensor){.numel = 64, .itemsize = 4, .role = roles[i]};
    f->tensors[T_POS].first_op = ARANGE_CASE;
    f->t.ops = f->ops;
    f->t.tensors = f->tensors;
    f->t.n_tensors = N_TENSORS;
    f->t.trefs = f->trefs;
}

/* One hand-made op and what the classifier must say about it (-1: not checked). */
typedef struct want {
    const char *name, *kind;
    trace_phase phase;
    trace_comm comm;
    int ins[3];                 /* tensors read, -1 terminated */
    int tp, cls, batch_dep;
    const char *why;
} want;

static const want cases[] = {
    {"aten::linear", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_IN, T_W, -1}, TRACE_TP_LINEAR, MT_OPC_MATMUL, 1,
     "a linear reading a weight"},
    {"aten::matmul", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_ACT, T_ACT, -1}, TRACE_TP_NONE, MT_OPC_MATMUL, 1,
     "a matmul of two activations (attention scores)"},
    {"aten::matmul", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_ACT, T_W, -1}, TRACE_TP_LINEAR, -1, -1,
     "a matmul reading a weight"},
    {"aten::linear", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {-1}, TRACE_TP_LINEAR, -1, 1,
     "no tensors: the name decides, and the work is assumed to grow"},
    {"MyLinear", "aten::addmm", TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_ACT, T_W, -1}, TRACE_TP_LINEAR, MT_OPC_MATMUL,
     -1, "through its representative kind"},
    {"aten::conv2d", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_IN, T_W, -1}, TRACE_TP_CONV, MT_OPC_CONV, 1, "conv"},
    {"aten::embedding", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_W, T_IN, -1}, TRACE_TP_EMBEDDING,
     MT_OPC_EMBEDDING, 1, "embedding"},
    {"aten::layer_norm", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_ACT, T_W, -1}, TRACE_TP_CLOSER, MT_OPC_NORM, 1,
     "a norm closes a column region"},
    {"MyCriterion", "aten::nll_loss_nd", TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_ACT, -1}, TRACE_TP_VOCAB_LOSS,
     MT_OPC_LOSS, 1, "a loss over classes by its kind: vocabulary-parallel after a column-parallel head"},
    {"aten::cross_entropy_loss", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_ACT, -1}, TRACE_TP_VOCAB_LOSS,
     MT_OPC_LOSS, 1, "cross-entropy"},
    {"aten::mse_loss", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_ACT, -1}, TRACE_TP_CLOSER, MT_OPC_LOSS, 1,
     "a loss not over classes closes a region"},
    {"aten::arange", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {-1}, TRACE_TP_NONE, MT_OPC_COPY, 1,
     "positions (makes T_POS)"},
    {"aten::embedding", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_W, T_POS, -1}, TRACE_TP_POS_EMBEDDING,
     MT_OPC_EMBEDDING, 1, "an embedding of arange's output: positions, replicated"},
    {"aten::gelu", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_ACT, -1}, TRACE_TP_NONE, MT_OPC_ELEMWISE, 1,
     "elementwise"},
    {"aten::t", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_W, -1}, TRACE_TP_NONE, MT_OPC_NONE, 0,
     "forward work on parameters alone"},
    {"aten::zero_", NULL, TRACE_PHASE_FORWARD, TRACE_COMM_NONE, {T_ACT, -1}, -1, -1, 0, "zero_ by name"},
    {"autograd::engine::evaluate_function: AddmmBackward0", "aten::mm", TRACE_PHASE_BACKWARD, TRACE_COMM_NONE,
     {T_ACT, -1}, TRACE_TP_NONE, MT_OPC_MATMUL_BWD, 1, "backward of an activation"},
    {"autograd::engine::evaluate_function: TBackward0", NULL, TRACE_PHASE_BACKWARD, TRACE_COMM_NONE,
     {T_W, T_GRAD, -1}, -1, -1, 0, "backward on parameter-sized tensors"},
    {"torch::autograd::AccumulateGrad", "aten::detach", TRACE_PHASE_BACKWARD, TRACE_COMM_NONE, {T_ACT, -1},
     TRACE_TP_WEIGHT_GRAD, -1, 0, "AccumulateGrad by name, whatever it reads"},
    {"aten::_foreach_add_", NULL, TRACE_PHASE_OPTIMIZER, TRACE_COMM_NONE, {T_W, -1}, TRACE_TP_NONE, MT_OPC_OPTIMIZER,
     0, "optimizer"},
    {"nccl:all_reduce", NULL, TRACE_PHASE_BACKWARD, TRACE_COMM_ALLREDUCE, {T_ACT, -1}, -1, MT_OPC_COMM, 0,
     "communication"},
};

static void classify_ops(void **state) {
    (void)state;
    static fixture f;
    fixture_init(&f);
    assert_string_equal(cases[ARANGE_CASE].name, "aten::arange");
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++) {
        const want *w = &cases[i];
        trace_op *o = &f.ops[f.t.n_ops];
        *o = (trace_op){.id = f.t.n_ops, .name = w->name, .kind = w->kind ? w->kind : w->name, .phase = w->phase,
                        .comm = w->comm, .in_first = f.t.n_trefs, .fwd_op = -1, .seq = -1, .et_node = -1};
        for (int j = 0; j < 3 && w->ins[j] >= 0; j++, o->in_count++)
            f.trefs[f.t.n_trefs++] = (trace_tref){.tensor = w->ins[j]};
        o->out_first = f.t.n_trefs;
        f.t.n_ops++;
    }
    mt_opclass_trace(&f.t);
    for (size_t i = 0; i < n; i++) {
        const want *w = &cases[i];
        const trace_op *o = &f.ops[i];
        if ((w->tp >= 0 && (int)o->tp != w->tp) || (w->cls >= 0 && (int)o->cls != w->cls) ||
            (w->batch_dep >= 0 && o->batch_dep != w->batch_dep))
            fail_msg("op %zu %s (%s): tp %d cls %s batch_dep %d", i, w->name, w->why, (int)o->tp,
                     mt_opclass_name(o->cls), o->batch_dep);
        assert_int_equal(o->batch_dep, mt_opclass_batch_dependent(&f.t, o)); /* the fill agrees */
        assert_int_equal(o->tp, mt_opclass_tp_of(&f.t, o));
    }
}

/* A router's selection (mt_opclass_select_k): topk's k from its output, max/argmax/sort 1; only over
 * the router's width, only forward, only selections. */
static void select_k(void **state) {
    (void)state;
    static int64_t dims[] = {32, 8, 32, 2, 32, 32, 4};
    mt_trace t = {0};
    trace_tref refs[4] = {{.tensor = 0, .shape_off = 0, .ndim = 2}, {.tensor = 0, .shape_off = 2, .ndim = 2},
                          {.tensor = 0, .shape_off = 4, .ndim = 1}, {.tensor = 0, .shape_off = 5, .ndim = 2}};
    t.dims = dims;
    t.trefs = refs;
    const struct { const char *name; trace_phase ph; int in, out; int64_t width; int32_t k; } c[] = {
        {"aten::topk", TRACE_PHASE_FORWARD, 0, 1, 8, 2},    {"aten::max", TRACE_PHASE_FORWARD, 0, 2, 8, 1},
        {"aten::argmax", TRACE_PHASE_FORWARD, 0, 2, 8, 1},  {"aten::sort", TRACE_PHASE_FORWARD, 0, 0, 8, 1},
        {"aten::topk", TRACE_PHASE_FORWARD, 0, 1, 16, 0},   /* not over the router's 8 logits */
        {"aten::topk", TRACE_PHASE_BACKWARD, 0, 1, 8, 0},   {"aten::softmax", TRACE_PHASE_FORWARD, 0, 0, 8, 0},
        {"aten::max", TRACE_PHASE_FORWARD, 3, 2, 8, 0},     /* over 4 columns of [32, 4]... width 8 asked */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        trace_op o = {.name = c[i].name, .phase = c[i].ph, .in_first = c[i].in, .in_count = 1, .out_first = c[i].out,
                      .out_count = 1};
        const char *nm = NULL;
        int32_t k = mt_opclass_select_k(&t, &o, c[i].width, &nm);
        if (k != c[i].k) fail_msg("case %zu %s: k %d, want %d", i, c[i].name, k, c[i].k);
        if (k) assert_string_equal(nm, c[i].name + 6);
    }
}

static void comm_names(void **state) {
    (void)state;
    assert_int_equal(mt_opclass_comm_of("nccl:all_reduce"), TRACE_COMM_ALLREDUCE);
    assert_int_equal(mt_opclass_comm_of("c10d::allgather_"), TRACE_COMM_ALLGATHER);
    assert_int_equal(mt_opclass_comm_of("gloo:reduce_scatter"), TRACE_COMM_REDUCESCATTER);
    assert_int_equal(mt_opclass_comm_of("c10d::reduce_"), TRACE_COMM_REDUCE);
    assert_int_equal(mt_opclass_comm_of("ncclDevKernel_AllGather_RING_LL"), TRACE_COMM_ALLGATHER);
    assert_int_equal(mt_opclass_comm_of("ncclKernel_SendRecv"), TRACE_COMM_SEND);
    assert_int_equal(mt_opclass_comm_of("broadcast"), TRACE_COMM_BROADCAST); /* a bare collective name */
    assert_int_equal(mt_opclass_comm_of("nccl:frobnicate"), TRACE_COMM_OTHER);
    assert_int_equal(mt_opclass_comm_of("aten::add"), TRACE_COMM_NONE);
    assert_int_equal(mt_opclass_comm_of(NULL), TRACE_COMM_NONE);
    assert_int_equal(mt_opclass_comm_of("record_param_comms"), TRACE_COMM_NONE);
    assert_true(mt_opclass_is_comm_name("record_param_comms"));
    assert_true(mt_opclass_is_comm_name("gloo:all_reduce"));
    assert_false(mt_opclass_is_comm_name("aten::mm"));
}

static void phase_and_inplace_names(void **state) {
    (void)state;
    static const struct {
        int (*is)(const char *);
        const char *name;
        int want;
    } names[] = {
        {mt_opclass_is_backward_name, "autograd::engine::evaluate_function: ReluBackward0", 1},
        {mt_opclass_is_backward_name, "AddmmBackward1", 1},
        {mt_opclass_is_backward_name, "aten::relu", 0},
        {mt_opclass_is_optimizer_name, "aten::_foreach_mul_", 1},
        {mt_opclass_is_optimizer_name, "Optimizer.step#Adam.step", 1},
        {mt_opclass_is_optimizer_name, "aten::_fused_adamw_", 1},
        {mt_opclass_is_optimizer_name, "aten::add_", 0},
        {mt_opclass_is_data_movement_name, "aten::to", 1},
        {mt_opclass_is_data_movement_name, "enumerate(DataLoader)", 1},
        {mt_opclass_is_data_movement_name, "aten::to_dense", 0}, /* whole names only */
        {mt_opclass_is_zero_grad_name, "Optimizer.zero_grad#SGD.zero_grad", 1},
        {mt_opclass_is_zero_grad_name, "aten::zero_", 0},
        {mt_opclass_is_grad_accum_name, "torch::autograd::AccumulateGrad", 1},
        {mt_opclass_is_inplace_name, "aten::add_", 1},
        {mt_opclass_is_inplace_name, "aten::__iadd__", 0},
        {mt_opclass_is_inplace_name, "aten::add", 0},
        {mt_opclass_is_inplace_name, NULL, 0},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!names[i].is(names[i].name) != !names[i].want) fail_msg("%s: want %d", names[i].name, names[i].want);
    for (int c = 0; c < MT_OPC_COUNT; c++) { /* backward_of and forward_of are inverse where defined */
        mt_opclass b = mt_opclass_backward_of((mt_opclass)c);
        if (b != (mt_opclass)c) {
            assert_true(mt_opclass_is_backward(b));
            assert_int_equal(mt_opclass_forward_of(b), c);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(classify_ops),
        cmocka_unit_test(select_k), cmocka_unit_test(comm_names),
        cmocka_unit_test(phase_and_inplace_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for the activations backward reads (tracer/saved.h) on an Execution Trace written here,
 * small enough to follow by hand (storage ids in the 1000s, bytes = numel x 4):
 *   forward  linear(x@1000) -> y@1002 (32 B; its nested addmm reports y again)
 *            softmax(y) -> p@1003 (32 B)
 *            mul(p) -> q@1004 (32 B)
 *            matmul(q): a nested clone of q -> c@1005 (32 B), a nested bmm(c) -> o@1006 (8 B)
 *   backward BmmBackward0: a nested mm reads c@1005
 *            MulBackward0: a nested mul reads a view of p@1003
 *            SoftmaxBackward0: reads p@1003, and allocates its gradient at 1002 (y's storage,
 *              freed in forward: the address reused)
 *            AddmmBackward0: reads x@1000 (an input, not made in forward) and 1002 (the gradient)
 * Saved: c (made by matmul, last read by BmmBackward0) and p (made by softmax, last read by
 * SoftmaxBackward0). Not saved: y (only forward reads it; the backward's read of 1002 is of the
 * gradient allocated there), q and o (no backward reads them), x (no forward op made it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer/trace.h"

#define T(id, st, n) "[" #id "," #st ",0," #n ",4,\"cpu\"]"
#define NODE(id, parent, name, ins, outs)                                                                   \
    "{\"name\":\"" name "\",\"id\":" #id ",\"rf_id\":" #id ",\"parent\":" #parent                          \
    ",\"fw_parent\":0,\"seq_id\":-1,\"scope\":0,\"tid\":1,\"fw_tid\":0,\"op_schema\":\"\",\"inputs\":[" ins \
    "],\"input_shapes\":[],\"input_types\":[],\"outputs\":[" outs "],\"output_shapes\":[],\"output_types\":[]}"

static const char *et_json =
    "{\"schema\":\"1.0.1\",\"pid\":1,\"time\":\"\",\"start_ts\":0,\"finish_ts\":1,\"nodes\":["
    NODE(1, 1, "[pytorch|profiler|execution_graph|process]", "", "") ","
    NODE(2, 1, "[pytorch|profiler|execution_graph|thread]", "", "") ","
    NODE(10, 2, "aten::linear", T(100, 1000, 4) "," T(101, 1001, 4), T(102, 1002, 8)) ","
    NODE(11, 10, "aten::addmm", T(101, 1001, 4) "," T(100, 1000, 4), T(102, 1002, 8)) ","
    NODE(12, 2, "aten::softmax", T(102, 1002, 8), T(103, 1003, 8)) ","
    NODE(13, 2, "aten::mul", T(103, 1003, 8), T(104, 1004, 8)) ","
    NODE(14, 2, "aten::matmul", T(104, 1004, 8), T(106, 1006, 2)) ","
    NODE(15, 14, "aten::clone", T(104, 1004, 8), T(105, 1005, 8)) ","
    NODE(16, 14, "aten::bmm", T(105, 1005, 8), T(106, 1006, 2)) ","
    NODE(20, 2, "autograd::engine::evaluate_function: BmmBackward0", "", "") ","
    NODE(21, 20, "BmmBackward0", T(107, 1007, 2), "") ","
    NODE(22, 21, "aten::mm", T(107, 1007, 2) "," T(105, 1005, 8), T(108, 1008, 8)) ","
    NODE(30, 2, "autograd::engine::evaluate_function: MulBackward0", "", "") ","
    NODE(31, 30, "MulBackward0", T(108, 1008, 8), "") ","
    NODE(32, 31, "aten::mul", T(108, 1008, 8) "," T(109, 1003, 8), T(111, 1011, 8)) ","
    NODE(40, 2, "autograd::engine::evaluate_function: SoftmaxBackward0", "", "") ","
    NODE(41, 40, "SoftmaxBackward0", T(111, 1011, 8), "") ","
    NODE(42, 41, "aten::_softmax_backward_data", T(111, 1011, 8) "," T(103, 1003, 8), T(110, 1002, 8)) ","
    NODE(50, 2, "autograd::engine::evaluate_function: AddmmBackward0", "", "") ","
    NODE(51, 50, "AddmmBackward0", T(110, 1002, 8), "") ","
    NODE(52, 51, "aten::mm", T(110, 1002, 8) "," T(100, 1000, 4), T(112, 1012, 4)) "]}";

static int32_t op_named(const mt_trace *t, const char *name) {
    for (int32_t i = 0; i < t->n_ops; i++)
        if (strcmp(t->ops[i].name, name) == 0) return i;
    return -1;
}

static void saved_set_is_what_backward_reads(void **state) {
    (void)state;
    char path[] = "/tmp/mt_saved_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(et_json, f);
    fclose(f);
    const char *paths[1] = {path};
    mt_trace *t = NULL;
    mt_error err = {0};
    mt_status rc = mt_trace_load(paths, 1, NULL, &t, &err);
    unlink(path);
    assert_int_equal(rc, MT_OK);
    assert_true(t->has_saved);
    int32_t mm = op_named(t, "aten::matmul"), sm = op_named(t, "aten::softmax");
    int32_t bmm_b = op_named(t, "autograd::engine::evaluate_function: BmmBackward0");
    int32_t sm_b = op_named(t, "autograd::engine::evaluate_function: SoftmaxBackward0");
    assert_true(mm >= 0 && sm >= 0 && bmm_b >= 0 && sm_b >= 0);
    assert_int_equal(t->n_saved, 2);
    /* sorted by op: softmax (op 1) before matmul (op 3) */
    assert_int_equal(t->saved[0].op, sm);
    assert_int_equal(t->saved[0].storage_id, 1003);
    assert_int_equal(t->saved[0].last_bwd, sm_b);
    assert_true(t->saved[0].bytes == 32);
    assert_int_equal(t->saved[1].op, mm);
    assert_int_equal(t->saved[1].storage_id, 1005);
    assert_int_equal(t->saved[1].last_bwd, bmm_b);
    assert_true(t->saved[1].bytes == 32);
    mt_trace_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(saved_set_is_what_backward_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

// The tape: accumulation, retain_graph, grad mode, detach, graph freeing, long chains,
// misuse aborts, and tt_gradcheck catching a wrong gradient.
#include "test_util.h"

#include <signal.h>

static tt_tensor *leaf(tt_tensor *t) { return tt_set_requires_grad(t, true); }

// y = x*x + x used twice: dy/dx = 2x + 1.
START_TEST(test_reuse_accumulates) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(3), 1, -2, 0.5));
    tt_tensor *y = tt_sum_all(tt_add(tt_mul(x, x), x));
    ck_assert_close(tt_item(y), 1 + 1 + 4 - 2 + 0.25 + 0.5, 1e-12, 0);
    tt_backward(y);
    ck_assert_values(tt_grad(x), 1e-12, 0, 3, -3, 2);
    tt_scope_end();
}
END_TEST

START_TEST(test_backward_accumulates_until_zero_grad) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F32, TT_SHAPE(2), 1, 2));
    for (int i = 0; i < 3; i++) tt_backward(tt_sum_all(tt_mul_scalar(x, 2)));
    ck_assert_values(tt_grad(x), 0, 0, 6, 6);
    tt_zero_grad(x);
    ck_assert_ptr_null(tt_grad(x));
    tt_backward(tt_sum_all(tt_mul_scalar(x, 2)));
    ck_assert_values(tt_grad(x), 0, 0, 2, 2);
    tt_scope_end();
}
END_TEST

START_TEST(test_retain_graph) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, 3));
    tt_tensor *y = tt_sum_all(tt_exp(x));
    tt_backward_ex(y, NULL, true);
    tt_backward_ex(y, NULL, false);  // the graph was kept: a second pass works
    ck_assert_values(tt_grad(x), 1e-12, 1e-12, 2 * exp(1.0), 2 * exp(3.0));
    tt_scope_end();
}
END_TEST

START_TEST(test_backward_twice_aborts) {
    tt_expect_abort("the graph through op 'sum' was already freed by an earlier backward");
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, 3));
    tt_tensor *y = tt_sum_all(tt_exp(x));
    tt_backward(y);
    tt_backward(y);  // the graph was freed
}
END_TEST

START_TEST(test_grad_mode) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_ones(TT_F32, TT_SHAPE(2)));
    ck_assert(tt_is_grad_enabled());
    ck_assert(tt_set_grad_enabled(false) == true);
    tt_tensor *y = tt_mul(x, x);
    ck_assert(!y->requires_grad);
    ck_assert_ptr_null(y->node);
    ck_assert(tt_set_grad_enabled(true) == false);
    tt_tensor *z = tt_mul(x, x);
    ck_assert(z->requires_grad);
    ck_assert_ptr_nonnull(z->node);
    // An op on tensors that do not require grad records nothing.
    tt_tensor *c = tt_mul(tt_ones(TT_F32, TT_SHAPE(2)), tt_ones(TT_F32, TT_SHAPE(2)));
    ck_assert(!c->requires_grad && !c->node);
    tt_scope_end();
}
END_TEST

// x * detach(x): the detached factor is a constant, so the gradient is x, not 2x.
START_TEST(test_detach) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 2, -3));
    tt_tensor *d = tt_detach(x);
    ck_assert(!d->requires_grad && !d->node);
    ck_assert_ptr_eq(d->storage, x->storage);
    tt_backward(tt_sum_all(tt_mul(x, d)));
    ck_assert_values(tt_grad(x), 0, 0, 2, -3);
    tt_scope_end();
}
END_TEST

START_TEST(test_backward_with_gradient) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(3), 1, 2, 3));
    tt_tensor *y = tt_mul_scalar(x, 3);
    tt_backward_with(y, tt_test_tensor(TT_F64, TT_SHAPE(3), 1, 10, 100));
    ck_assert_values(tt_grad(x), 0, 0, 3, 30, 300);
    tt_scope_end();
}
END_TEST

// A bias (C,) broadcast over (B, C) receives the sum over B.
START_TEST(test_broadcast_gradient_sums) {
    tt_scope_begin();
    tt_tensor *b = leaf(tt_zeros(TT_F32, TT_SHAPE(3)));
    tt_tensor *x = tt_ones(TT_F32, TT_SHAPE(4, 3));
    tt_backward(tt_sum_all(tt_add(x, b)));
    ck_assert_values(tt_grad(b), 0, 0, 4, 4, 4);
    tt_scope_end();
}
END_TEST

START_TEST(test_loss_is_leaf) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_scalar(TT_F64, 5));
    tt_backward(x);
    ck_assert_double_eq(tt_item(tt_grad(x)), 1);
    tt_scope_end();
}
END_TEST

// Outside a scope: an intermediate released by the user lives on in the graph, and the graph
// releases it after backward.
START_TEST(test_graph_freed_after_backward) {
    tt_tensor *x = leaf(tt_ones(TT_F64, TT_SHAPE(4)));
    tt_tensor *a = tt_mul_scalar(x, 2);
    tt_tensor *b = tt_exp(a);
    tt_release(a);  // b's node keeps it
    tt_tensor *loss = tt_sum_all(b);
    int64_t before = tt_live_tensors();
    tt_backward(loss);
    ck_assert_int_lt(tt_live_tensors(), before);  // a (and saved state) freed with the graph
    ck_assert_values(tt_grad(x), 1e-12, 0, 2 * exp(2.0), 2 * exp(2.0), 2 * exp(2.0),
                     2 * exp(2.0));
    tt_release(loss);
    tt_release(b);
    tt_release(x);
}
END_TEST

// Releasing a 100k-op chain must not recurse 100k deep; backward through 10k ops works.
START_TEST(test_long_chain) {
    tt_tensor *x = leaf(tt_ones(TT_F32, TT_SHAPE(2)));
    tt_tensor *y = tt_retain(x);
    for (int i = 0; i < 100000; i++) {
        tt_tensor *next = tt_add_scalar(y, 1e-3);
        tt_release(y);
        y = next;
    }
    tt_release(y);  // frees the whole chain
    tt_scope_begin();
    tt_tensor *z = x;
    for (int i = 0; i < 10000; i++) z = tt_mul_scalar(z, 1.0);
    tt_backward(tt_sum_all(z));
    ck_assert_values(tt_grad(x), 0, 0, 1, 1);
    tt_scope_end();
    tt_release(x);
}
END_TEST

START_TEST(test_backward_non_scalar_aborts) {
    tt_expect_abort("output (2,) has 2 elements; backward without a gradient needs one");
    tt_scope_begin();
    tt_tensor *x = leaf(tt_ones(TT_F32, TT_SHAPE(2)));
    tt_backward(tt_mul(x, x));
}
END_TEST

START_TEST(test_backward_without_grad_aborts) {
    tt_expect_abort("tensor () does not require grad");
    tt_scope_begin();
    tt_backward(tt_sum_all(tt_ones(TT_F32, TT_SHAPE(2))));
}
END_TEST

START_TEST(test_requires_grad_on_non_leaf_aborts) {
    tt_expect_abort("is the output of op 'mul'; only leaves");
    tt_scope_begin();
    tt_tensor *x = leaf(tt_ones(TT_F32, TT_SHAPE(2)));
    tt_set_requires_grad(tt_mul(x, x), true);
}
END_TEST

START_TEST(test_requires_grad_on_int_aborts) {
    tt_expect_abort("tensor (2,) is i64; only f32/f64 tensors can require grad");
    tt_scope_begin();
    tt_set_requires_grad(tt_zeros(TT_I64, TT_SHAPE(2)), true);
}
END_TEST

// ---- gradcheck itself ----

static tt_tensor *f_good(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_mul(in[0], tt_exp(in[1]));
}

// x * detach(x): the analytic gradient (x) is half the true one (2x).
static tt_tensor *f_wrong(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_mul(in[0], tt_detach(in[0]));
}

START_TEST(test_gradcheck_passes_and_catches) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_tensor *in[2] = {leaf(tt_randn(&rng, TT_F64, TT_SHAPE(2, 3))),
                        leaf(tt_randn(&rng, TT_F64, TT_SHAPE(3)))};
    tt_gradcheck_result r = tt_gradcheck(f_good, NULL, 2, in, NULL);
    ck_assert(r.ok);
    ck_assert_int_eq(r.checked, 6 * 6 + 6 * 3);
    ck_assert_double_lt(r.max_abs_err, 1e-7);
    ck_assert_ptr_null(tt_grad(in[0]));  // gradcheck leaves no gradient behind
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1.5, -2));
    r = tt_gradcheck(f_wrong, NULL, 1, &x, NULL);
    ck_assert(!r.ok);
    ck_assert_int_eq(r.worst_input, 0);
    ck_assert_close(fabs(r.numeric), 2 * fabs(r.analytic), 1e-6, 0);
    tt_scope_end();
}
END_TEST

// One tensor passed as two inputs: both columns see the total derivative.
static tt_tensor *f_pair(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_mul(in[0], in[1]);
}

START_TEST(test_gradcheck_same_tensor_twice) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(3), 0.5, -1.5, 2));
    tt_tensor *in[2] = {x, x};
    ck_assert(tt_gradcheck(f_pair, NULL, 2, in, NULL).ok);
    tt_scope_end();
}
END_TEST

START_TEST(test_op_table) {
    ck_assert_str_eq(tt_op_name(TT_OP_ADD), "add");
    ck_assert_str_eq(tt_op_name(TT_OP_CROSS_ENTROPY), "cross_entropy");
    ck_assert_int_eq(tt_op_arity(TT_OP_MATMUL), 2);
    ck_assert_int_eq(tt_op_arity(TT_OP_CAT), -1);
    ck_assert(tt_op_differentiable(TT_OP_MATMUL));
    ck_assert(!tt_op_differentiable(TT_OP_ARGMAX));
}
END_TEST

int main(void) {
    Suite *s = suite_create("autograd");
    TCase *tc = tt_tcase("tape");
    tcase_add_test(tc, test_reuse_accumulates);
    tcase_add_test(tc, test_backward_accumulates_until_zero_grad);
    tcase_add_test(tc, test_retain_graph);
    tcase_add_test(tc, test_grad_mode);
    tcase_add_test(tc, test_detach);
    tcase_add_test(tc, test_backward_with_gradient);
    tcase_add_test(tc, test_broadcast_gradient_sums);
    tcase_add_test(tc, test_loss_is_leaf);
    tcase_add_test(tc, test_graph_freed_after_backward);
    tcase_add_test(tc, test_long_chain);
    tcase_add_test(tc, test_gradcheck_passes_and_catches);
    tcase_add_test(tc, test_gradcheck_same_tensor_twice);
    tcase_add_test(tc, test_op_table);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_backward_twice_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_backward_non_scalar_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_backward_without_grad_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_requires_grad_on_non_leaf_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_requires_grad_on_int_aborts, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

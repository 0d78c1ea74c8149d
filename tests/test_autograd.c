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
    tt_expect_abort("tt_backward: the graph through op 'sum' was already freed by an earlier backward");
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

// ---- the version counter: in-place writes to what a graph saved ----
// Each case gave a wrong gradient silently before (dx = 5 instead of 3 for mul, 5 instead of
// e^2 for exp, 14 instead of 4 for square, 0 instead of 1 for masked_fill, 20 instead of 4 for
// matmul); now backward refuses, and the right way (clone before writing, or write after
// backward) gives the right number.

START_TEST(test_inplace_mul_operand_aborts) {
    tt_expect_abort("tt_backward: a tensor saved by 'mul' was modified in place by 'fill_' "
                    "after it was saved; clone it before writing");
    tt_scope_begin();
    tt_tensor *x = leaf(tt_full(TT_F64, TT_SHAPE(2), 2)), *w = tt_full(TT_F64, TT_SHAPE(2), 3);
    tt_tensor *y = tt_sum_all(tt_mul(x, w));
    tt_fill_(w, 5);
    tt_backward(y);
}
END_TEST

START_TEST(test_inplace_exp_output_aborts) {
    tt_expect_abort("tt_backward: a tensor saved by 'exp' was modified in place by 'fill_' "
                    "after it was saved; clone it before writing");
    tt_scope_begin();
    tt_tensor *x = leaf(tt_full(TT_F64, TT_SHAPE(2), 2));
    tt_tensor *e = tt_exp(x);
    tt_tensor *y = tt_sum_all(e);
    tt_fill_(e, 5);
    tt_backward(y);
}
END_TEST

START_TEST(test_inplace_leaf_after_square_aborts) {
    tt_expect_abort("tt_backward: a tensor saved by 'square' was modified in place by 'fill_' "
                    "after it was saved; clone it before writing");
    tt_scope_begin();
    tt_tensor *x = leaf(tt_full(TT_F64, TT_SHAPE(2), 2));
    tt_set_name(x, "x");
    tt_tensor *y = tt_sum_all(tt_square(x));
    tt_fill_(x, 7);
    tt_backward(y);
}
END_TEST

START_TEST(test_inplace_mask_after_masked_fill_aborts) {
    tt_expect_abort("tt_backward: a tensor saved by 'masked_fill' was modified in place by "
                    "'fill_' after it was saved; clone it before writing");
    tt_scope_begin();
    tt_tensor *x = leaf(tt_full(TT_F64, TT_SHAPE(2), 2)), *m = tt_zeros(TT_I32, TT_SHAPE(2));
    tt_tensor *y = tt_sum_all(tt_masked_fill(x, m, 0));
    tt_fill_(m, 1);
    tt_backward(y);
}
END_TEST

START_TEST(test_inplace_copy_into_matmul_operand_aborts) {
    tt_expect_abort("tt_backward: a tensor saved by 'matmul' was modified in place by 'copy_' "
                    "after it was saved; clone it before writing");
    tt_scope_begin();
    tt_tensor *a = leaf(tt_full(TT_F64, TT_SHAPE(2, 2), 1));
    tt_tensor *b = tt_full(TT_F64, TT_SHAPE(2, 2), 2);
    tt_tensor *y = tt_sum_all(tt_matmul(a, b));
    tt_copy_(tt_slice(b, 0, 0, 1, 1), tt_full(TT_F64, TT_SHAPE(1, 2), 10));  // a view of b
    tt_backward(y);
}
END_TEST

START_TEST(test_inplace_right_ways) {
    tt_scope_begin();
    // mul: clone before writing.
    tt_tensor *x = leaf(tt_full(TT_F64, TT_SHAPE(2), 2)), *w = tt_full(TT_F64, TT_SHAPE(2), 3);
    tt_tensor *y = tt_sum_all(tt_mul(x, tt_clone(w)));
    tt_fill_(w, 5);
    tt_backward(y);
    ck_assert_values(tt_grad(x), 0, 0, 3, 3);
    // mul: write after backward.
    tt_zero_grad(x);
    tt_fill_(w, 3);
    tt_backward(tt_sum_all(tt_mul(x, w)));
    tt_fill_(w, 5);
    ck_assert_values(tt_grad(x), 0, 0, 3, 3);
    // add reads neither operand in its backward: writing one is fine (as in PyTorch).
    tt_zero_grad(x);
    y = tt_sum_all(tt_add(x, w));
    tt_fill_(w, 9);
    tt_backward(y);
    ck_assert_values(tt_grad(x), 0, 0, 1, 1);
    // exp: write a clone of the output.
    tt_zero_grad(x);
    tt_tensor *e = tt_exp(x);
    y = tt_sum_all(e);
    tt_fill_(tt_clone(e), 5);
    tt_backward(y);
    ck_assert_values(tt_grad(x), 1e-12, 0, exp(2.0), exp(2.0));
    // square: write the leaf after backward.
    tt_zero_grad(x);
    tt_backward(tt_sum_all(tt_square(x)));
    tt_no_grad_begin();
    tt_fill_(x, 7);
    tt_no_grad_end();
    ck_assert_values(tt_grad(x), 0, 0, 4, 4);
    // masked_fill: the graph keeps a clone of the mask.
    tt_tensor *x2 = leaf(tt_full(TT_F64, TT_SHAPE(2), 2)), *m = tt_zeros(TT_I32, TT_SHAPE(2));
    y = tt_sum_all(tt_masked_fill(x2, tt_clone(m), 0));
    tt_fill_(m, 1);
    tt_backward(y);
    ck_assert_values(tt_grad(x2), 0, 0, 1, 1);
    // matmul: copy into a view of a clone.
    tt_tensor *a = leaf(tt_full(TT_F64, TT_SHAPE(2, 2), 1));
    tt_tensor *b = tt_full(TT_F64, TT_SHAPE(2, 2), 2);
    y = tt_sum_all(tt_matmul(a, tt_clone(b)));
    tt_copy_(tt_slice(b, 0, 0, 1, 1), tt_full(TT_F64, TT_SHAPE(1, 2), 10));
    tt_backward(y);
    ck_assert_values(tt_grad(a), 0, 0, 4, 4, 4, 4);
    tt_scope_end();
}
END_TEST

// The per-op table of the inputs a backward reads (moves into ops.def).
START_TEST(test_op_saved_inputs) {
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_ADD), 0);
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_MUL), 3);
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_EXP), 0);  // reads its saved output
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_SQUARE), 1);
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_AFFINE), 3);  // x and weight, not the bias
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_ATTENTION), 15);  // q, k, v and the mask
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_ARGMAX), 0);  // no backward
}
END_TEST

// ---- in-place ops and no-grad scopes ----

START_TEST(test_inplace_ops_values) {
    tt_scope_begin();
    tt_tensor *a = tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 1, 2, 3, 4);
    tt_tensor *b = tt_test_tensor(TT_F64, TT_SHAPE(2), 10, 20);  // broadcast over rows
    uint64_t v = tt_version(a);
    ck_assert_ptr_eq(tt_add_(a, b), a);
    ck_assert_values(a, 0, 0, 11, 22, 13, 24);
    ck_assert_uint_gt(tt_version(a), v);
    ck_assert_str_eq(a->storage->writer, "add_");
    tt_sub_(a, b);
    ck_assert_values(a, 0, 0, 1, 2, 3, 4);
    tt_mul_(a, b);
    ck_assert_values(a, 0, 0, 10, 40, 30, 80);
    tt_div_(a, tt_scalar(TT_F64, 10));
    ck_assert_values(a, 0, 0, 1, 4, 3, 8);
    tt_add_scalar_(a, 0.5);
    ck_assert_values(a, 0, 0, 1.5, 4.5, 3.5, 8.5);
    tt_mul_scalar_(a, -2);
    ck_assert_values(a, 0, 0, -3, -9, -7, -17);
    tt_neg_(a);
    ck_assert_values(a, 0, 0, 3, 9, 7, 17);
    tt_set_at(a, 1, NAN);
    tt_clamp_(a, 4, 10);
    ck_assert_double_eq(tt_at(a, 0), 4);
    ck_assert(isnan(tt_at(a, 1)));
    ck_assert_double_eq(tt_at(a, 2), 7);
    ck_assert_double_eq(tt_at(a, 3), 10);
    tt_clamp_(a, -INFINITY, 5);  // one-sided
    ck_assert_double_eq(tt_at(a, 3), 5);
    ck_assert_str_eq(a->storage->writer, "clamp_");
    // Through a view: the base tensor changes and its version moves.
    tt_tensor *f = tt_test_tensor(TT_F32, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    v = tt_version(f);
    tt_mul_scalar_(tt_slice(f, 1, 1, 3, 1), 10);
    ck_assert_values(f, 0, 0, 1, 20, 30, 4, 50, 60);
    ck_assert_uint_gt(tt_version(f), v);
    tt_zero_(tt_transpose(f, 0, 1));
    ck_assert_values(f, 0, 0, 0, 0, 0, 0, 0, 0);
    ck_assert_str_eq(f->storage->writer, "zero_");
    tt_scope_end();
}
END_TEST

// The update a new user wrote by hand: w *= 0.1 on a parameter, inside a no-grad scope.
START_TEST(test_no_grad_update_of_parameter) {
    tt_tensor *w = leaf(tt_test_tensor(TT_F32, TT_SHAPE(2), 1, -2));  // a parameter
    tt_keep(w);  // no scope is open: ours, released below
    ck_assert(tt_is_grad_enabled());
    tt_no_grad_begin();
    ck_assert(!tt_is_grad_enabled());
    tt_mul_scalar_(w, 0.1);
    tt_no_grad_begin();  // nesting restores each mode in turn
    tt_set_grad_enabled(true);
    tt_no_grad_end();
    ck_assert(!tt_is_grad_enabled());
    tt_no_grad_end();
    ck_assert(tt_is_grad_enabled());
    ck_assert_values(w, 1e-7, 0, 0.1, -0.2);
    ck_assert(w->requires_grad && !w->node);  // still a leaf
    tt_set_grad_enabled(false);  // begin/end restore an "off" mode too
    tt_no_grad_begin();
    tt_no_grad_end();
    ck_assert(!tt_is_grad_enabled());
    tt_set_grad_enabled(true);
    tt_release(w);
}
END_TEST

START_TEST(test_inplace_on_leaf_aborts) {
    tt_expect_abort("a leaf tensor (2,) that requires grad is used in an in-place op 'mul_'; "
                    "wrap the update in tt_no_grad_begin()/tt_no_grad_end()");
    tt_scope_begin();
    tt_tensor *w = leaf(tt_ones(TT_F32, TT_SHAPE(2)));
    tt_mul_(w, tt_full(TT_F32, TT_SHAPE(2), 0.1));
}
END_TEST

START_TEST(test_inplace_on_leaf_scalar_aborts) {
    tt_expect_abort("a leaf tensor (3,) that requires grad is used in an in-place op "
                    "'mul_scalar_'");
    tt_scope_begin();
    tt_mul_scalar_(leaf(tt_ones(TT_F32, TT_SHAPE(3))), 0.1);
}
END_TEST

START_TEST(test_inplace_on_non_leaf_aborts) {
    tt_expect_abort("tensor (2,) is the output of op 'exp' and requires grad: in-place ops are "
                    "not differentiable here");
    tt_scope_begin();
    tt_add_scalar_(tt_exp(leaf(tt_ones(TT_F64, TT_SHAPE(2)))), 1);
}
END_TEST

START_TEST(test_inplace_operand_requires_grad_aborts) {
    tt_expect_abort("operand (2,) of in-place op 'add_' requires grad: in-place ops are not "
                    "differentiable here");
    tt_scope_begin();
    tt_add_(tt_ones(TT_F64, TT_SHAPE(2)), leaf(tt_ones(TT_F64, TT_SHAPE(2))));
}
END_TEST

START_TEST(test_inplace_does_not_broadcast_a_aborts) {
    tt_expect_abort("operand (2, 3) does not broadcast to the shape (3,) of the tensor written "
                    "in place");
    tt_scope_begin();
    tt_add_(tt_ones(TT_F64, TT_SHAPE(3)), tt_ones(TT_F64, TT_SHAPE(2, 3)));
}
END_TEST

START_TEST(test_inplace_on_expanded_view_aborts) {
    tt_expect_abort("is an expanded view (stride 0 in dim 0)");
    tt_scope_begin();
    tt_add_scalar_(tt_expand(tt_ones(TT_F64, TT_SHAPE(1, 3)), TT_SHAPE(4, 3)), 1);
}
END_TEST

START_TEST(test_no_grad_end_without_begin_aborts) {
    tt_expect_abort("tt_no_grad_end without a matching tt_no_grad_begin");
    tt_no_grad_end();
}
END_TEST

// ---- hooks and retained gradients ----

typedef struct hook_log {
    int calls;
    double seen[4];
    double scale;  // 0: return NULL (keep the gradient)
} hook_log;

static tt_tensor *record_and_scale(tt_tensor *grad, void *ctx) {
    hook_log *log = ctx;
    for (int64_t i = 0; i < tt_numel(grad) && i < 4; i++) log->seen[i] = tt_at(grad, i);
    log->calls++;
    ck_assert(!tt_is_grad_enabled());
    return log->scale != 0 ? tt_mul_scalar(grad, log->scale) : NULL;
}

START_TEST(test_retain_grad) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, -3));
    tt_tensor *h = tt_mul(x, x);
    ck_assert_ptr_eq(tt_retain_grad(h), h);
    tt_tensor *y = tt_sum_all(tt_mul_scalar(h, 3));
    tt_retain_grad(y);
    tt_retain_grad(x);  // a leaf: no-op
    tt_backward_ex(y, NULL, true);
    ck_assert_values(tt_grad(h), 0, 0, 3, 3);
    ck_assert_values(tt_grad(y), 0, 0, 1);
    ck_assert_values(tt_grad(x), 1e-12, 0, 6, -18);
    tt_backward(y);  // accumulates, like a leaf's .grad
    ck_assert_values(tt_grad(h), 0, 0, 6, 6);
    tt_zero_grad(h);
    ck_assert_ptr_null(tt_grad(h));
    tt_scope_end();
}
END_TEST

START_TEST(test_hook_on_intermediate) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, -3));
    tt_tensor *h = tt_mul(x, x);  // dh/dx = 2x
    hook_log log = {.scale = 10};
    tt_register_hook(h, record_and_scale, &log);
    tt_retain_grad(h);  // retained after the hooks: sees the replacement
    tt_tensor *y = tt_sum_all(tt_add(tt_mul_scalar(h, 2), tt_mul_scalar(h, 3)));
    tt_backward(y);
    ck_assert_int_eq(log.calls, 1);  // once, with both contributions in
    ck_assert_double_eq(log.seen[0], 5);
    ck_assert_double_eq(log.seen[1], 5);
    ck_assert_values(tt_grad(h), 0, 0, 50, 50);
    ck_assert_values(tt_grad(x), 1e-12, 0, 100, -300);
    tt_scope_end();
}
END_TEST

START_TEST(test_hook_on_leaf) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, 2));
    hook_log log = {.scale = 10}, keep = {.scale = 0};
    tt_register_hook(x, record_and_scale, &log);
    tt_register_hook(x, record_and_scale, &keep);  // runs second, returns NULL
    // x used twice: the hook sees this backward's total (2 + 3), before it reaches .grad.
    tt_backward(tt_sum_all(tt_add(tt_mul_scalar(x, 2), tt_mul_scalar(x, 3))));
    ck_assert_int_eq(log.calls, 1);
    ck_assert_double_eq(log.seen[0], 5);
    ck_assert_double_eq(keep.seen[0], 50);
    ck_assert_values(tt_grad(x), 0, 0, 50, 50);
    tt_backward(tt_sum_all(x));  // x is the only input: the hook still runs, .grad accumulates
    ck_assert_int_eq(log.calls, 2);
    ck_assert_double_eq(log.seen[1], 1);
    ck_assert_values(tt_grad(x), 0, 0, 60, 60);
    tt_scope_end();
}
END_TEST

static tt_tensor *wrong_shape(tt_tensor *grad, void *ctx) {
    (void)grad;
    (void)ctx;
    return tt_zeros(TT_F64, TT_SHAPE(3));
}

START_TEST(test_hook_wrong_shape_aborts) {
    tt_expect_abort("a gradient hook of tensor (2,) f64 returned (3,) f64; a replacement "
                    "gradient must match the tensor");
    tt_scope_begin();
    tt_tensor *x = leaf(tt_ones(TT_F64, TT_SHAPE(2)));
    tt_register_hook(x, wrong_shape, NULL);
    tt_backward(tt_sum_all(tt_exp(x)));
}
END_TEST

START_TEST(test_hook_needs_requires_grad_aborts) {
    tt_expect_abort("cannot register a hook on tensor (2,): it does not require grad");
    tt_scope_begin();
    tt_register_hook(tt_ones(TT_F64, TT_SHAPE(2)), wrong_shape, NULL);
}
END_TEST

// ---- gradient-ready notifications ----

typedef struct ready_log {
    int calls;
    tt_tensor *leaf[4];
    double grad[4][2];  // the leaf's .grad when it was announced
    bool other_null[4];  // the other leaf's .grad was still NULL then
    tt_tensor *other;
} ready_log;

static void log_ready(tt_tensor *leaf, void *ctx) {
    ready_log *log = ctx;
    ck_assert(!tt_is_grad_enabled());
    int k = log->calls++;
    ck_assert_int_lt(k, 4);
    log->leaf[k] = leaf;
    tt_tensor *g = tt_grad(leaf);
    for (int64_t i = 0; i < tt_numel(leaf) && i < 2; i++) log->grad[k][i] = g ? tt_at(g, i) : -1;
    log->other_null[k] = log->other && !tt_grad(log->other);
}

// L = sum(3 x^2 w) + sum(w): dL/dw = 3 x^2 + 1, dL/dx = 6 x w. w (two consumers, a hook that
// scales by 10) is final as soon as the product with it ran, before x's nodes: announced first
// with its hooked total, while x has no gradient yet; x (used twice) last.
START_TEST(test_grad_ready_order_and_values) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, 2));
    tt_tensor *w = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 5, 7));
    hook_log hook = {.scale = 10};
    tt_register_hook(w, record_and_scale, &hook);
    ready_log log = {.other = x};
    tt_backward_set_grad_ready(log_ready, &log);
    tt_tensor *b = tt_mul(tt_mul_scalar(x, 3), x);
    tt_backward(tt_add(tt_sum_all(tt_mul(b, w)), tt_sum_all(w)));
    ck_assert_int_eq(log.calls, 2);
    ck_assert_ptr_eq(log.leaf[0], w);
    ck_assert(log.other_null[0]);
    ck_assert_int_eq(hook.calls, 1);
    ck_assert_double_eq(log.grad[0][0], 40);   // 10 (3 + 1)
    ck_assert_double_eq(log.grad[0][1], 130);  // 10 (12 + 1)
    ck_assert_ptr_eq(log.leaf[1], x);
    ck_assert_double_eq(log.grad[1][0], 30);   // 6 * 1 * 5
    ck_assert_double_eq(log.grad[1][1], 84);   // 6 * 2 * 7
    // A second backward: announced again, with .grad holding both backwards' sums.
    log = (ready_log){0};
    tt_tensor *b2 = tt_mul(tt_mul_scalar(x, 3), x);
    tt_backward(tt_add(tt_sum_all(tt_mul(b2, w)), tt_sum_all(w)));
    ck_assert_int_eq(log.calls, 2);
    ck_assert_double_eq(log.grad[0][1], 260);
    ck_assert_double_eq(log.grad[1][0], 60);
    // A leaf that is the output itself; then off.
    log = (ready_log){0};
    tt_tensor *s = leaf(tt_test_tensor(TT_F64, TT_SHAPE(1), 4));
    tt_backward(s);
    ck_assert_int_eq(log.calls, 1);
    ck_assert_ptr_eq(log.leaf[0], s);
    ck_assert_double_eq(log.grad[0][0], 1);
    tt_backward_set_grad_ready(NULL, NULL);
    log = (ready_log){0};
    tt_backward(tt_sum_all(tt_mul(x, w)));
    ck_assert_int_eq(log.calls, 0);
    ck_assert_values(tt_grad(x), 0, 0, 65, 175);  // 60 + 5, 168 + 7
    tt_scope_end();
}
END_TEST

// Only the leaves the output reaches are announced: z feeds a recorded op the loss does not
// use, so it is neither announced nor given a gradient.
START_TEST(test_grad_ready_unreachable_leaf) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, 2));
    tt_tensor *z = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 3, 4));
    tt_tensor *dead = tt_mul(z, z);  // recorded, but the loss below does not use it
    tt_tensor *l = tt_sum_all(tt_mul_scalar(x, 2));
    (void)dead;
    ready_log log = {0};
    tt_backward_set_grad_ready(log_ready, &log);
    tt_backward(l);
    tt_backward_set_grad_ready(NULL, NULL);
    ck_assert_int_eq(log.calls, 1);  // z is not reachable from l: not announced
    ck_assert_ptr_eq(log.leaf[0], x);
    ck_assert_double_eq(log.grad[0][0], 2);
    ck_assert_ptr_null(tt_grad(z));
    tt_scope_end();
}
END_TEST

// Pass-through backwards (add, reshape, transpose) hand their gradient on without a copy when
// nothing else holds it; the same tensor reached twice, a retained gradient and a second
// backward over a kept graph must still see their own values. s = 2x + 2x (x reaches add
// twice), L = sum(reshape(s) * c) + sum(s * d) + sum((s - s) * d): dL/ds = c' + d,
// dL/dx = 4 (c' + d).
START_TEST(test_pass_through_gradients) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6));
    tt_tensor *c = tt_test_tensor(TT_F64, TT_SHAPE(3, 2), 1, -1, 2, -2, 3, -3);
    tt_tensor *d = tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 10, 20, 30, 40, 50, 60);
    tt_tensor *h = tt_mul_scalar(x, 2);
    tt_tensor *s = tt_add(h, h);
    tt_retain_grad(s);
    tt_tensor *r = tt_transpose(tt_transpose(tt_reshape(s, TT_SHAPE(3, 2)), 0, 1), 0, 1);
    tt_tensor *l = tt_add(tt_add(tt_sum_all(tt_mul(r, c)), tt_sum_all(tt_mul(s, d))),
                          tt_sum_all(tt_mul(tt_sub(s, s), d)));
    tt_backward_ex(l, NULL, true);
    ck_assert_values(tt_grad(s), 0, 0, 11, 19, 32, 38, 53, 57);
    ck_assert_values(tt_grad(x), 0, 0, 44, 76, 128, 152, 212, 228);
    tt_backward(l);  // accumulates
    ck_assert_values(tt_grad(s), 0, 0, 22, 38, 64, 76, 106, 114);
    ck_assert_values(tt_grad(x), 0, 0, 88, 152, 256, 304, 424, 456);
    tt_scope_end();
}
END_TEST

// Gradients big enough for the parallel accumulation: x reaches the loss three ways, so its
// gradient is a moved buffer plus two adds; every element is checked with 1 and 2 threads.
START_TEST(test_large_gradient_accumulates) {
    int saved = tt_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        tt_set_num_threads(threads);
        tt_scope_begin();
        tt_tensor *x = leaf(tt_ones(TT_F32, TT_SHAPE(512, 600)));
        tt_tensor *l = tt_add(tt_add(tt_sum_all(tt_mul_scalar(x, 2)),
                                     tt_sum_all(tt_mul_scalar(x, 3))),
                              tt_sum_all(tt_mul_scalar(x, 0.5)));
        tt_backward(l);
        const float *g = tt_data(tt_grad(x));
        int64_t bad = 0;
        for (int64_t i = 0; i < 512 * 600; i++) bad += g[i] != 5.5f;
        ck_assert_int_eq(bad, 0);
        tt_scope_end();
    }
    tt_set_num_threads(saved);
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
    tcase_add_test(tc, test_pass_through_gradients);
    tcase_add_test(tc, test_large_gradient_accumulates);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_backward_twice_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_backward_non_scalar_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_backward_without_grad_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_requires_grad_on_non_leaf_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_requires_grad_on_int_aborts, SIGABRT);
    suite_add_tcase(s, ab);
    TCase *ip = tt_tcase("inplace");
    tcase_add_test(ip, test_inplace_right_ways);
    tcase_add_test(ip, test_op_saved_inputs);
    tcase_add_test(ip, test_inplace_ops_values);
    tcase_add_test(ip, test_no_grad_update_of_parameter);
    suite_add_tcase(s, ip);
    TCase *ipa = tt_tcase_aborts("aborts_inplace");
    tcase_add_test_raise_signal(ipa, test_inplace_mul_operand_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_inplace_exp_output_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_inplace_leaf_after_square_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_inplace_mask_after_masked_fill_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_inplace_copy_into_matmul_operand_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_inplace_on_leaf_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_inplace_on_leaf_scalar_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_inplace_on_non_leaf_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_inplace_operand_requires_grad_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_inplace_does_not_broadcast_a_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_inplace_on_expanded_view_aborts, SIGABRT);
    tcase_add_test_raise_signal(ipa, test_no_grad_end_without_begin_aborts, SIGABRT);
    suite_add_tcase(s, ipa);
    TCase *hk = tt_tcase("hooks");
    tcase_add_test(hk, test_retain_grad);
    tcase_add_test(hk, test_hook_on_intermediate);
    tcase_add_test(hk, test_hook_on_leaf);
    tcase_add_test(hk, test_grad_ready_order_and_values);
    tcase_add_test(hk, test_grad_ready_unreachable_leaf);
    suite_add_tcase(s, hk);
    TCase *hka = tt_tcase_aborts("aborts_hooks");
    tcase_add_test_raise_signal(hka, test_hook_wrong_shape_aborts, SIGABRT);
    tcase_add_test_raise_signal(hka, test_hook_needs_requires_grad_aborts, SIGABRT);
    suite_add_tcase(s, hka);
    return tt_test_run(s);
}

// Check suite of the comparison and selection ops and the TT_BOOL dtype: values printed by
// PyTorch 1.13 (tests/reference/compare_values.py) for eq .. ge (tensor and scalar forms, with
// NaN, broadcasting and f32 promotion), logical ops, where and masked_select (values and
// gradients), nonzero, the argmax/eq accuracy; bool conversions, printing, masked_fill with a
// bool mask; aborts. Finite-difference gradients are in gc_ops_compare.c.
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"

static const tt_dtype dtypes[2] = {TT_F32, TT_F64};

static void assert_shape(const tt_tensor *t, int ndim, const int64_t *shape) {
    ck_assert_int_eq(t->ndim, ndim);
    for (int i = 0; i < ndim; i++) ck_assert_int_eq(t->shape[i], shape[i]);
}

static void assert_bool(const tt_tensor *t, int ndim, const int64_t *shape) {
    ck_assert_int_eq(t->dtype, TT_BOOL);
    ck_assert(!t->requires_grad);
    assert_shape(t, ndim, shape);
}

// The transpose of t (2-d): a non-contiguous view.
static tt_tensor *tr(tt_tensor *t) {
    return tt_as_strided(t, 2, (int64_t[]){t->shape[1], t->shape[0]},
                         (int64_t[]){t->stride[1], t->stride[0]}, t->offset);
}

// ---- the bool dtype ----

START_TEST(test_bool_dtype) {
    ck_assert_int_eq(tt_dtype_size(TT_BOOL), 1);
    ck_assert_str_eq(tt_dtype_name(TT_BOOL), "bool");
    ck_assert(!tt_dtype_is_float(TT_BOOL));
    tt_scope_begin();
    tt_tensor *b = tt_test_tensor(TT_BOOL, TT_SHAPE(2, 2), 1, 0, 0, 1);
    char buf[128];
    tt_snprint(buf, sizeof buf, b);
    ck_assert_str_eq(buf, "tensor([[True, False],\n        [False, True]], shape=(2, 2), "
                          "dtype=bool)");
    // Storing any nonzero value (NaN too, as bool(nan)) stores 1.
    tt_tensor *f = tt_test_tensor(TT_F64, TT_SHAPE(5), 0, -2.5, NAN, 1e-300, -0.0);
    tt_tensor *fb = tt_to_dtype(f, TT_BOOL);
    assert_bool(fb, TT_SHAPE(5));
    ck_assert_values(fb, 0, 0, 0, 1, 1, 1, 0);
    const uint8_t *raw = tt_data(fb);
    ck_assert_int_eq(raw[1], 1);
    ck_assert_values(tt_full(TT_BOOL, TT_SHAPE(2), 7), 0, 0, 1, 1);
    // To and from every dtype, through a strided view.
    for (int d = 0; d < TT_DTYPE_COUNT; d++) {
        tt_tensor *x = tt_to_dtype(tt_test_tensor(TT_I64, TT_SHAPE(2, 2), 3, 0, 0, -1), d);
        tt_tensor *xb = tt_to_dtype(tr(x), TT_BOOL);
        ck_assert_values(xb, 0, 0, 1, 0, 0, 1);
        tt_tensor *back = tt_to_dtype(xb, d);
        ck_assert_int_eq(back->dtype, d);
        ck_assert_values(back, 0, 0, 1, 0, 0, 1);
    }
    // tt_copy_ broadcasting a bool row into a bool view.
    tt_tensor *dst = tt_zeros(TT_BOOL, TT_SHAPE(3, 2));
    tt_copy_(tr(dst), tt_test_tensor(TT_BOOL, TT_SHAPE(3), 1, 0, 1));
    ck_assert_values(dst, 0, 0, 1, 1, 0, 0, 1, 1);
    ck_assert_int_eq(tt_numel(tt_from_data(TT_BOOL, TT_SHAPE(3), (const uint8_t[]){1, 0, 1})),
                     3);
    tt_scope_end();
}
END_TEST

// masked_fill takes a bool mask (broadcast over rows) as it takes an integer one.
START_TEST(test_masked_fill_bool_mask) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
                                        true);
    tt_tensor *m = tt_lt_scalar(tt_arange(TT_I64, 0, 3, 1), 1.5);  // [True, True, False]
    tt_tensor *y = tt_masked_fill(x, m, -1);
    ck_assert_values(y, 0, 0, -1, -1, 3, -1, -1, 6);
    tt_backward(tt_sum_all(y));
    ck_assert_values(tt_grad(x), 0, 0, 0, 0, 1, 0, 0, 1);
    tt_scope_end();
}
END_TEST

// ---- comparisons (compare_values.py) ----

START_TEST(test_compare_values) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *a = tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, NAN, 4, 2, 0);
    tt_tensor *b = tt_test_tensor(dt, TT_SHAPE(3), 2, 2, NAN);
    tt_tensor *eq = tt_eq(a, b);
    assert_bool(eq, TT_SHAPE(2, 3));
    ck_assert_values(eq, 0, 0, 0, 1, 0, 0, 1, 0);
    ck_assert_values(tt_ne(a, b), 0, 0, 1, 0, 1, 1, 0, 1);
    ck_assert_values(tt_lt(a, b), 0, 0, 1, 0, 0, 0, 0, 0);
    ck_assert_values(tt_le(a, b), 0, 0, 1, 1, 0, 0, 1, 0);
    ck_assert_values(tt_gt(a, b), 0, 0, 0, 0, 0, 1, 0, 0);
    ck_assert_values(tt_ge(a, b), 0, 0, 0, 1, 0, 1, 1, 0);
    // b broadcast the other way round: (3,) against (2, 3).
    ck_assert_values(tt_gt(b, a), 0, 0, 1, 0, 0, 0, 0, 0);
    tt_tensor *s = tt_eq_scalar(a, 2);
    assert_bool(s, TT_SHAPE(2, 3));
    ck_assert_values(s, 0, 0, 0, 1, 0, 0, 1, 0);
    ck_assert_values(tt_ne_scalar(a, 2), 0, 0, 1, 0, 1, 1, 0, 1);
    ck_assert_values(tt_lt_scalar(a, 2), 0, 0, 1, 0, 0, 0, 0, 1);
    ck_assert_values(tt_le_scalar(a, 2), 0, 0, 1, 1, 0, 0, 1, 1);
    ck_assert_values(tt_gt_scalar(a, 2), 0, 0, 0, 0, 0, 1, 0, 0);
    ck_assert_values(tt_ge_scalar(a, 2), 0, 0, 0, 1, 0, 1, 1, 0);
    // A transposed view compares by position.
    ck_assert_values(tt_eq(tr(a), tr(tt_contiguous(a))), 0, 0, 1, 1, 1, 1, 0, 1);
    // Empty and 0-dim.
    assert_bool(tt_lt(tt_zeros(dt, TT_SHAPE(0, 3)), b), TT_SHAPE(0, 3));
    assert_bool(tt_lt_scalar(tt_scalar(dt, 1), 2), TT_SCALAR_SHAPE);
    ck_assert_values(tt_lt_scalar(tt_scalar(dt, 1), 2), 0, 0, 1);
    tt_scope_end();
}
END_TEST

// PyTorch's type promotion: the scalar is taken in f32 for an f32 tensor (and a 0-dim f64
// tensor too); an integer against a float scalar or an f32 tensor compares as float.
START_TEST(test_compare_promotion) {
    tt_scope_begin();
    tt_tensor *x32 = tt_test_tensor(TT_F32, TT_SHAPE(3), 0.1, 0.2, 0.3);
    ck_assert_values(tt_eq_scalar(x32, 0.1), 0, 0, 1, 0, 0);
    ck_assert_values(tt_eq(x32, tt_scalar(TT_F64, 0.1)), 0, 0, 1, 0, 0);
    ck_assert_values(tt_eq(tt_scalar(TT_F64, 0.1), x32), 0, 0, 1, 0, 0);
    // ... but an f64 tensor with dims promotes: 0.1f != 0.1.
    ck_assert_values(tt_eq(x32, tt_full(TT_F64, TT_SHAPE(1), 0.1)), 0, 0, 0, 0, 0);
    tt_tensor *i = tt_arange(TT_I64, 1, 4, 1);
    ck_assert_values(tt_lt_scalar(i, 2.5), 0, 0, 1, 1, 0);
    ck_assert_values(tt_eq(i, tt_test_tensor(TT_F32, TT_SHAPE(3), 1, 2.5, 3)), 0, 0, 1, 0, 1);
    // Mixed integer dtypes and bool.
    tt_tensor *i32 = tt_to_dtype(i, TT_I32);
    ck_assert_values(tt_ge(i32, tt_test_tensor(TT_I64, TT_SHAPE(3), 2, 2, 2)), 0, 0, 0, 1, 1);
    ck_assert_values(tt_eq_scalar(tt_test_tensor(TT_BOOL, TT_SHAPE(2), 1, 0), 1), 0, 0, 1, 0);
    // Outputs never require grad, even when an input does.
    tt_tensor *w = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(2)), true);
    ck_assert(!tt_gt_scalar(w, 0)->requires_grad);
    ck_assert(!tt_eq(w, w)->requires_grad);
    tt_scope_end();
}
END_TEST

START_TEST(test_logical_values) {
    tt_scope_begin();
    tt_tensor *p = tt_test_tensor(TT_F32, TT_SHAPE(2, 3), 0, 1, -2, NAN, 0, 3);
    tt_tensor *q = tt_test_tensor(TT_F32, TT_SHAPE(3), 1, 0, 0);
    tt_tensor *y = tt_logical_and(p, q);
    assert_bool(y, TT_SHAPE(2, 3));
    ck_assert_values(y, 0, 0, 0, 0, 0, 1, 0, 0);
    ck_assert_values(tt_logical_or(p, q), 0, 0, 1, 1, 1, 1, 0, 1);
    ck_assert_values(tt_logical_xor(p, q), 0, 0, 1, 1, 1, 0, 0, 1);
    tt_tensor *n = tt_logical_not(p);
    assert_bool(n, TT_SHAPE(2, 3));
    ck_assert_values(n, 0, 0, 1, 0, 0, 0, 1, 0);
    ck_assert_values(tt_logical_not(tr(p)), 0, 0, 1, 0, 0, 1, 0, 0);
    // Mixed dtypes: an i64 against a bool.
    ck_assert_values(tt_logical_and(tt_arange(TT_I64, 0, 3, 1),
                                    tt_test_tensor(TT_BOOL, TT_SHAPE(3), 1, 1, 0)), 0, 0, 0, 1, 0);
    tt_scope_end();
}
END_TEST

// ---- where, masked_select, nonzero (compare_values.py) ----

START_TEST(test_where_values) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *cond = tt_test_tensor(TT_BOOL, TT_SHAPE(2, 1), 1, 0);
    tt_tensor *a = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(3), 1, 2, 3), true);
    tt_tensor *b = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 10, 20, 30, 40, 50,
                                                       60), true);
    tt_tensor *y = tt_where(cond, a, b);
    ck_assert_int_eq(y->dtype, dt);
    assert_shape(y, TT_SHAPE(2, 3));
    ck_assert(y->requires_grad);
    ck_assert_values(y, 0, 0, 1, 2, 3, 40, 50, 60);
    tt_backward_with(y, tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6));
    ck_assert_values(tt_grad(a), 0, 0, 1, 2, 3);
    ck_assert_values(tt_grad(b), 0, 0, 0, 0, 0, 4, 5, 6);
    // Integer a and b, a float cond (nonzero is true, NaN too), a 0-dim b.
    tt_tensor *yi = tt_where(tt_test_tensor(dt, TT_SHAPE(3), 0, NAN, -1),
                             tt_arange(TT_I64, 1, 4, 1), tt_scalar(TT_I64, -7));
    ck_assert_int_eq(yi->dtype, TT_I64);
    ck_assert_values(yi, 0, 0, -7, 2, 3);
    tt_scope_end();
}
END_TEST

// The version counter: writing cond in place between where and backward is caught.
START_TEST(test_where_cond_written_in_place) {
    tt_expect_abort("a tensor saved by 'where' was modified in place by 'fill_'");
    tt_scope_begin();
    tt_tensor *cond = tt_test_tensor(TT_I32, TT_SHAPE(2), 1, 0);
    tt_tensor *a = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(2)), true);
    tt_tensor *y = tt_where(cond, a, tt_zeros(TT_F64, TT_SHAPE(2)));
    tt_fill_(cond, 1);
    tt_backward(tt_sum_all(y));
}
END_TEST

START_TEST(test_masked_select_values) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
                                        true);
    tt_tensor *m = tt_test_tensor(TT_BOOL, TT_SHAPE(3), 1, 0, 1);
    tt_tensor *y = tt_masked_select(x, m);
    ck_assert_int_eq(y->dtype, dt);
    assert_shape(y, TT_SHAPE(4));
    ck_assert_values(y, 0, 0, 1, 3, 4, 6);
    tt_backward_with(y, tt_test_tensor(dt, TT_SHAPE(4), 1, 2, 3, 4));
    ck_assert_values(tt_grad(x), 0, 0, 1, 0, 2, 3, 0, 4);
    // x (3,) broadcast against a (2, 3) mask: the gradient sums over the rows.
    tt_tensor *bx = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(3), 1, 2, 3), true);
    tt_tensor *bm = tt_test_tensor(TT_BOOL, TT_SHAPE(2, 3), 1, 1, 0, 0, 1, 1);
    tt_tensor *by = tt_masked_select(bx, bm);
    ck_assert_values(by, 0, 0, 1, 2, 2, 3);
    tt_backward_with(by, tt_test_tensor(dt, TT_SHAPE(4), 1, 10, 100, 1000));
    ck_assert_values(tt_grad(bx), 0, 0, 1, 110, 1000);
    // A transposed x, an integer mask, an all-false mask.
    ck_assert_values(tt_masked_select(tr(tt_detach(x)), tt_test_tensor(TT_I32, TT_SHAPE(3, 2),
                                                                       0, 1, 1, 0, 1, 1)),
                     0, 0, 4, 2, 3, 6);
    assert_shape(tt_masked_select(x, tt_zeros(TT_BOOL, TT_SHAPE(2, 3))), TT_SHAPE(0));
    tt_scope_end();
}
END_TEST

START_TEST(test_nonzero_values) {
    tt_scope_begin();
    tt_tensor *z = tt_nonzero(tt_test_tensor(TT_F32, TT_SHAPE(2, 3), 0, 1.5, 0, 2, 0, NAN));
    ck_assert_int_eq(z->dtype, TT_I64);
    assert_shape(z, TT_SHAPE(3, 2));
    ck_assert_values(z, 0, 0, 0, 1, 1, 0, 1, 2);
    tt_tensor *z1 = tt_nonzero(tt_test_tensor(TT_I64, TT_SHAPE(4), 0, 3, 0, 4));
    assert_shape(z1, TT_SHAPE(2, 1));
    ck_assert_values(z1, 0, 0, 1, 3);
    // A transposed view: indices into the view, row-major.
    tt_tensor *zt = tt_nonzero(tr(tt_test_tensor(TT_BOOL, TT_SHAPE(2, 3), 1, 0, 0, 0, 1, 1)));
    ck_assert_values(zt, 0, 0, 0, 0, 1, 1, 2, 1);
    assert_shape(tt_nonzero(tt_zeros(TT_F64, TT_SHAPE(2, 0))), TT_SHAPE(0, 2));
    assert_shape(tt_nonzero(tt_scalar(TT_F64, 3)), TT_SHAPE(1, 0));
    tt_scope_end();
}
END_TEST

// The motivating case: an accuracy without a C loop.
START_TEST(test_accuracy) {
    tt_scope_begin();
    tt_tensor *logits = tt_test_tensor(TT_F32, TT_SHAPE(4, 3), 0.1, 2.0, -1.0, 3.0, 0.0, 1.0,
                                       0.0, 0.5, 0.4, 1.0, 1.0, 2.0);
    tt_tensor *targets = tt_test_tensor(TT_I64, TT_SHAPE(4), 1, 2, 1, 2);
    tt_tensor *acc =
        tt_mean_all(tt_to_dtype(tt_eq(tt_argmax(logits, -1, false), targets), TT_F32));
    ck_assert_int_eq(acc->dtype, TT_F32);
    ck_assert_double_eq(tt_item(acc), 0.75);
    // i32 targets give the same.
    tt_tensor *t32 = tt_to_dtype(targets, TT_I32);
    ck_assert_double_eq(
        tt_item(tt_mean_all(tt_to_dtype(tt_eq(tt_argmax(logits, -1, false), t32), TT_F32))),
        0.75);
    tt_scope_end();
}
END_TEST

// ---- aborts ----

START_TEST(test_abort_compare_broadcast) {
    tt_expect_abort("tt_eq: shapes (2, 3) and (2,) do not broadcast");
    tt_eq(tt_zeros(TT_F32, TT_SHAPE(2, 3)), tt_zeros(TT_F32, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_scalar_null) {
    tt_expect_abort("tt_lt_scalar: x is NULL");
    tt_lt_scalar(NULL, 1);
}
END_TEST

START_TEST(test_abort_logical_broadcast) {
    tt_expect_abort("tt_logical_or: shapes (4,) and (3,) do not broadcast");
    tt_logical_or(tt_zeros(TT_BOOL, TT_SHAPE(4)), tt_zeros(TT_BOOL, TT_SHAPE(3)));
}
END_TEST

START_TEST(test_abort_where_dtype) {
    tt_expect_abort("tt_where: dtypes differ: (2,) f32 vs (2,) f64; convert one with tt_to_dtype");
    tt_where(tt_zeros(TT_BOOL, TT_SHAPE(2)), tt_zeros(TT_F32, TT_SHAPE(2)),
             tt_zeros(TT_F64, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_where_ab_broadcast) {
    tt_expect_abort("tt_where: shapes (2,) and (3,) do not broadcast");
    tt_where(tt_zeros(TT_BOOL, TT_SHAPE(2)), tt_zeros(TT_F32, TT_SHAPE(2)),
             tt_zeros(TT_F32, TT_SHAPE(3)));
}
END_TEST

START_TEST(test_abort_where_cond_broadcast) {
    tt_expect_abort("tt_where: cond (4,) does not broadcast with a (2, 3) and b (3,)");
    tt_where(tt_zeros(TT_BOOL, TT_SHAPE(4)), tt_zeros(TT_F32, TT_SHAPE(2, 3)),
             tt_zeros(TT_F32, TT_SHAPE(3)));
}
END_TEST

START_TEST(test_abort_masked_select_broadcast) {
    tt_expect_abort("tt_masked_select: mask (2,) does not broadcast with x (2, 3)");
    tt_masked_select(tt_zeros(TT_F32, TT_SHAPE(2, 3)), tt_zeros(TT_BOOL, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_bool_is_not_float) {
    tt_expect_abort("tt_mean: x (2,) is bool");  // tt_sum counts; a mean has no dtype
    tt_mean_all(tt_zeros(TT_BOOL, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_checkpoint_bool) {
    tt_expect_abort("tt_ckpt_add_tensor: tensor 'mask' (2,) is bool; the format holds f32");
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_add_tensor(&c, "mask", tt_zeros(TT_BOOL, TT_SHAPE(2)));
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_compare");
    TCase *dt = tt_tcase("bool_dtype");
    tcase_add_test(dt, test_bool_dtype);
    tcase_add_loop_test(dt, test_masked_fill_bool_mask, 0, 2);
    suite_add_tcase(s, dt);

    TCase *cmp = tt_tcase("compare");
    tcase_add_loop_test(cmp, test_compare_values, 0, 2);
    tcase_add_test(cmp, test_compare_promotion);
    tcase_add_test(cmp, test_logical_values);
    suite_add_tcase(s, cmp);

    TCase *sel = tt_tcase("select");
    tcase_add_loop_test(sel, test_where_values, 0, 2);
    tcase_add_loop_test(sel, test_masked_select_values, 0, 2);
    tcase_add_test(sel, test_nonzero_values);
    tcase_add_test(sel, test_accuracy);
    suite_add_tcase(s, sel);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_where_cond_written_in_place, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_compare_broadcast, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_scalar_null, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_logical_broadcast, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_where_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_where_ab_broadcast, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_where_cond_broadcast, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_masked_select_broadcast, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bool_is_not_float, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_checkpoint_bool, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

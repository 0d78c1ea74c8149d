// Check suite of the reductions: hand-computed values in f32 and f64, keepdim shapes, empty
// and degenerate inputs, argmax, f32 accuracy of long sums, hand-computed gradients, aborts.
// Finite-difference gradients are in gc_ops_reduce.c.
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"

static const tt_dtype dtypes[2] = {TT_F32, TT_F64};

// [[1, 2, 3], [4, 5, 6]]
static tt_tensor *m23(tt_dtype dt) { return tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6); }

// 0, 1, ..., 23 viewed as (2, 3, 4).
static tt_tensor *r234(tt_dtype dt) {
    return tt_as_strided(tt_arange(dt, 0, 24, 1), TT_SHAPE(2, 3, 4), (int64_t[]){12, 4, 1}, 0);
}

// The transpose of t (2-d): a non-contiguous view.
static tt_tensor *tr(tt_tensor *t) {
    return tt_as_strided(t, 2, (int64_t[]){t->shape[1], t->shape[0]},
                         (int64_t[]){t->stride[1], t->stride[0]}, t->offset);
}

static void assert_shape(const tt_tensor *t, int ndim, const int64_t *shape) {
    ck_assert_int_eq(t->ndim, ndim);
    for (int i = 0; i < ndim; i++) ck_assert_int_eq(t->shape[i], shape[i]);
}

// ---- forward values ----

START_TEST(test_sum_values) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = m23(dt);
    tt_tensor *s0 = tt_sum(x, TT_DIMS(0), false);
    ck_assert_int_eq(s0->dtype, dt);
    assert_shape(s0, TT_SHAPE(3));
    ck_assert_values(s0, 0, 0, 5, 7, 9);
    ck_assert_values(tt_sum(x, TT_DIMS(1), false), 0, 0, 6, 15);
    ck_assert_values(tt_sum(x, TT_DIMS(-1), false), 0, 0, 6, 15);
    assert_shape(tt_sum(x, TT_DIMS(0), true), TT_SHAPE(1, 3));
    assert_shape(tt_sum(x, TT_DIMS(-1), true), TT_SHAPE(2, 1));
    tt_tensor *all = tt_sum(x, 0, NULL, false);
    ck_assert_int_eq(all->ndim, 0);
    ck_assert_values(all, 0, 0, 21);
    tt_tensor *allk = tt_sum(x, 0, NULL, true);
    assert_shape(allk, TT_SHAPE(1, 1));
    ck_assert_values(allk, 0, 0, 21);
    ck_assert_values(tt_sum(x, TT_DIMS(1, 0), false), 0, 0, 21);
    tt_tensor *sa = tt_sum_all(x);
    ck_assert_int_eq(sa->ndim, 0);
    ck_assert_double_eq(tt_item(sa), 21);
    // (2, 3, 4) over (0, 2): sum_i sum_k (12 i + 4 j + k) = 60 + 32 j.
    tt_tensor *y = r234(dt);
    ck_assert_values(tt_sum(y, TT_DIMS(0, 2), false), 0, 0, 60, 92, 124);
    assert_shape(tt_sum(y, TT_DIMS(0, 2), true), TT_SHAPE(1, 3, 1));
    ck_assert_values(tt_sum(y, TT_DIMS(2, 0), true), 0, 0, 60, 92, 124);
    // over (1): 12 i + k terms: sum_j (12 i + 4 j + k) = 36 i + 12 + 3 k
    ck_assert_values(tt_sum(y, TT_DIMS(1), false), 0, 0, 12, 15, 18, 21, 48, 51, 54, 57);
    ck_assert_values(tt_sum(y, TT_DIMS(0, 1), false), 0, 0, 60, 66, 72, 78);
    tt_scope_end();
}
END_TEST

START_TEST(test_mean_values) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = m23(dt);
    ck_assert_values(tt_mean(x, TT_DIMS(0), false), 0, 0, 2.5, 3.5, 4.5);
    ck_assert_values(tt_mean(x, TT_DIMS(1), false), 0, 0, 2, 5);
    assert_shape(tt_mean(x, TT_DIMS(1), true), TT_SHAPE(2, 1));
    ck_assert_values(tt_mean(x, 0, NULL, false), 0, 0, 3.5);
    tt_tensor *ma = tt_mean_all(x);
    ck_assert_int_eq(ma->ndim, 0);
    ck_assert_int_eq(ma->dtype, dt);
    ck_assert_double_eq(tt_item(ma), 3.5);
    ck_assert_values(tt_mean(r234(dt), TT_DIMS(0, 2), false), 0, 0, 7.5, 11.5, 15.5);
    tt_scope_end();
}
END_TEST

START_TEST(test_max_values) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 5, 3, 4, 2, 6);
    ck_assert_values(tt_max(x, TT_DIMS(0), false), 0, 0, 4, 5, 6);
    ck_assert_values(tt_max(x, TT_DIMS(1), false), 0, 0, 5, 6);
    assert_shape(tt_max(x, TT_DIMS(1), true), TT_SHAPE(2, 1));
    ck_assert_values(tt_max(x, 0, NULL, false), 0, 0, 6);
    ck_assert_values(tt_max(tr(x), TT_DIMS(1), false), 0, 0, 4, 5, 6);
    tt_tensor *neg = tt_test_tensor(dt, TT_SHAPE(3), -3, -1, -2);
    ck_assert_values(tt_max(neg, TT_DIMS(0), false), 0, 0, -1);
    tt_tensor *inf = tt_full(dt, TT_SHAPE(2), -INFINITY);
    ck_assert_values(tt_max(inf, 0, NULL, false), 0, 0, -INFINITY);
    // NaN propagates, along a reduced run and across runs (dim 0 of a (3, 2)).
    tt_tensor *n = tt_test_tensor(dt, TT_SHAPE(3, 2), 1, 2, NAN, 0, 3, 4);
    ck_assert_values(tt_max(n, TT_DIMS(1), false), 0, 0, 2, NAN, 4);
    ck_assert_values(tt_max(n, TT_DIMS(0), false), 0, 0, NAN, 4);
    ck_assert_values(tt_max(n, 0, NULL, false), 0, 0, NAN);
    ck_assert_values(tt_max(r234(dt), TT_DIMS(0, 2), false), 0, 0, 15, 19, 23);
    tt_scope_end();
}
END_TEST

START_TEST(test_var_values) {
    tt_dtype dt = dtypes[_i];
    double tol = dt == TT_F32 ? 1e-6 : 1e-14;
    tt_scope_begin();
    tt_tensor *v = tt_test_tensor(dt, TT_SHAPE(4), 1, 2, 3, 4);
    ck_assert_values(tt_var(v, TT_DIMS(0), 0, false), 0, tol, 1.25);
    ck_assert_values(tt_var(v, TT_DIMS(0), 1, false), 0, tol, 5.0 / 3);
    ck_assert_values(tt_var(v, 0, NULL, 1, false), 0, tol, 5.0 / 3);
    tt_tensor *x = m23(dt);
    ck_assert_values(tt_var(x, TT_DIMS(1), 0, false), 0, tol, 2.0 / 3, 2.0 / 3);
    ck_assert_values(tt_var(x, TT_DIMS(1), 1, false), 0, tol, 1, 1);
    ck_assert_values(tt_var(x, TT_DIMS(0), 0, false), 0, tol, 2.25, 2.25, 2.25);
    ck_assert_values(tt_var(x, TT_DIMS(0), 1, true), 0, tol, 4.5, 4.5, 4.5);
    assert_shape(tt_var(x, TT_DIMS(0), 1, true), TT_SHAPE(1, 3));
    ck_assert_values(tt_var(tr(x), TT_DIMS(0), 1, false), 0, tol, 1, 1);
    // (2, 3, 4) over (0, 2): values 4 j + {0, 1, 2, 3, 12, 13, 14, 15}, variance 37.25.
    ck_assert_values(tt_var(r234(dt), TT_DIMS(0, 2), 0, false), 0, tol, 37.25, 37.25, 37.25);
    // Two passes: a large offset does not cancel the variance away.
    tt_tensor *big = tt_test_tensor(TT_F64, TT_SHAPE(4), 1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4);
    ck_assert_values(tt_var(big, TT_DIMS(0), 0, false), 0, 1e-12, 1.25);
    tt_scope_end();
}
END_TEST

// N - correction <= 0: NaN when the squares sum to 0, inf otherwise (as PyTorch), no abort.
START_TEST(test_var_degenerate) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *one = tt_test_tensor(dt, TT_SHAPE(2, 1), 3, 4);
    ck_assert_values(tt_var(one, TT_DIMS(1), 1, false), 0, 0, NAN, NAN);
    ck_assert_values(tt_var(one, TT_DIMS(1), 0, false), 0, 0, 0, 0);
    tt_tensor *two = tt_test_tensor(dt, TT_SHAPE(2), 1, 2);
    ck_assert_values(tt_var(two, TT_DIMS(0), 2, false), 0, 0, INFINITY);
    ck_assert_values(tt_var(two, TT_DIMS(0), 3, false), 0, 0, INFINITY);
    tt_tensor *same = tt_full(dt, TT_SHAPE(2), 7);
    ck_assert_values(tt_var(same, TT_DIMS(0), 2, false), 0, 0, NAN);
    // Its gradient is NaN / inf too, without a crash.
    tt_tensor *p = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(1), 5), true);
    tt_backward(tt_var(p, TT_DIMS(0), 1, false));
    ck_assert(isnan(tt_at(tt_grad(p), 0)));
    tt_scope_end();
}
END_TEST

// Sum over nothing is 0, the mean NaN (as PyTorch); an empty output is fine for every op.
START_TEST(test_empty) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *e = tt_zeros(dt, TT_SHAPE(0, 3));
    tt_tensor *s0 = tt_sum(e, TT_DIMS(0), false);
    assert_shape(s0, TT_SHAPE(3));
    ck_assert_values(s0, 0, 0, 0, 0, 0);
    ck_assert_values(tt_mean(e, TT_DIMS(0), false), 0, 0, NAN, NAN, NAN);
    ck_assert_values(tt_sum_all(e), 0, 0, 0);
    ck_assert_values(tt_mean_all(e), 0, 0, NAN);
    ck_assert_values(tt_var(e, TT_DIMS(0), 0, false), 0, 0, NAN, NAN, NAN);
    assert_shape(tt_sum(e, TT_DIMS(1), false), TT_SHAPE(0));
    assert_shape(tt_max(e, TT_DIMS(1), true), TT_SHAPE(0, 1));
    assert_shape(tt_argmax(e, 1, false), TT_SHAPE(0));
    // The gradient of a sum over an empty tensor is empty.
    tt_tensor *p = tt_set_requires_grad(tt_zeros(dt, TT_SHAPE(0, 2)), true);
    tt_backward(tt_sum_all(p));
    assert_shape(tt_grad(p), TT_SHAPE(0, 2));
    tt_scope_end();
}
END_TEST

// A 0-d tensor reduces over all dims, or over dim 0 / -1 (as PyTorch).
START_TEST(test_scalar_input) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *s = tt_scalar(dt, 3);
    tt_tensor *a = tt_sum(s, 0, NULL, false);
    ck_assert_int_eq(a->ndim, 0);
    ck_assert_values(a, 0, 0, 3);
    tt_tensor *b = tt_mean(s, TT_DIMS(0), true);
    ck_assert_int_eq(b->ndim, 0);
    ck_assert_values(b, 0, 0, 3);
    ck_assert_values(tt_max(s, TT_DIMS(-1), false), 0, 0, 3);
    ck_assert_values(tt_var(s, 0, NULL, 0, false), 0, 0, 0);
    tt_tensor *am = tt_argmax(s, 0, false);
    ck_assert_int_eq(am->ndim, 0);
    ck_assert_values(am, 0, 0, 0);
    tt_scope_end();
}
END_TEST

// ---- argmax ----

START_TEST(test_argmax) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 5, 3, 4, 2, 6);
    tt_tensor *a1 = tt_argmax(x, 1, false);
    ck_assert_int_eq(a1->dtype, TT_I64);
    assert_shape(a1, TT_SHAPE(2));
    ck_assert_values(a1, 0, 0, 1, 2);
    ck_assert_values(tt_argmax(x, 0, false), 0, 0, 1, 0, 1);
    ck_assert_values(tt_argmax(x, -1, false), 0, 0, 1, 2);
    tt_tensor *k = tt_argmax(x, 1, true);
    assert_shape(k, TT_SHAPE(2, 1));
    ck_assert_values(k, 0, 0, 1, 2);
    ck_assert_values(tt_argmax(tr(x), 0, false), 0, 0, 1, 2);  // non-contiguous
    ck_assert_values(tt_argmax(tr(x), 1, false), 0, 0, 1, 0, 1);
    // The first of tied maxima; NaN counts as the maximum (the first NaN).
    ck_assert_values(tt_argmax(tt_test_tensor(dt, TT_SHAPE(4), 2, 7, 7, 1), 0, false), 0, 0, 1);
    ck_assert_values(tt_argmax(tt_test_tensor(dt, TT_SHAPE(4), 9, NAN, 3, NAN), 0, false), 0, 0,
                     1);
    ck_assert_values(tt_argmax(tt_test_tensor(dt, TT_SHAPE(3), NAN, 1, 2), 0, false), 0, 0, 0);
    ck_assert_values(tt_argmax(r234(dt), 1, false), 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
    ck_assert_values(tt_argmax(tt_full(dt, TT_SHAPE(3), -INFINITY), 0, false), 0, 0, 0);
    tt_scope_end();
}
END_TEST

// argmax records nothing, even when its input requires grad.
START_TEST(test_argmax_not_differentiable) {
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(m23(TT_F64), true);
    tt_tensor *a = tt_argmax(x, 1, false);
    ck_assert(!a->requires_grad);
    ck_assert_ptr_null(a->node);
    ck_assert(!tt_op_differentiable(TT_OP_ARGMAX));
    tt_scope_end();
}
END_TEST

// ---- accuracy and determinism ----

// f32 sums accumulate in double: the f32 result is the correctly rounded exact sum, where
// float accumulation drifts by about 1% (and stops growing at 2^24 for ones).
START_TEST(test_f32_long_sum) {
    tt_scope_begin();
    int64_t n = 1000000;
    ck_assert_double_eq(tt_item(tt_mean_all(tt_ones(TT_F32, TT_SHAPE(n)))), 1.0);
    ck_assert_double_eq(tt_item(tt_sum_all(tt_ones(TT_F32, TT_SHAPE(n)))), 1e6);
    double tenth = (double)0.1f;  // exact sums below: n * tenth (exact in double), rounded
    float total = (float)(n * tenth), quarter = (float)(n / 4 * tenth);
    tt_tensor *t = tt_full(TT_F32, TT_SHAPE(n), 0.1);
    ck_assert_double_eq(tt_item(tt_sum_all(t)), total);
    ck_assert_double_eq(tt_item(tt_mean_all(t)), 0.1f);
    // Rows (one run per output), columns (elementwise accumulation), a strided run.
    tt_tensor *rows = tt_full(TT_F32, TT_SHAPE(4, n / 4), 0.1);
    tt_tensor *rs = tt_sum(rows, TT_DIMS(1), false);
    for (int i = 0; i < 4; i++) ck_assert_double_eq(tt_at(rs, i), quarter);
    tt_tensor *cols = tt_full(TT_F32, TT_SHAPE(n / 4, 4), 0.1);
    tt_tensor *cs = tt_sum(cols, TT_DIMS(0), false);
    for (int i = 0; i < 4; i++) ck_assert_double_eq(tt_at(cs, i), quarter);
    tt_tensor *ts = tt_mean(tr(cols), TT_DIMS(1), false);
    for (int i = 0; i < 4; i++) ck_assert_double_eq(tt_at(ts, i), 0.1f);
    tt_tensor *v = tt_var(t, TT_DIMS(0), 0, false);  // constant: exactly 0
    ck_assert_double_eq(tt_item(v), 0);
    // 2^24 + 3 ones: float accumulation would stop at 2^24; 2^24 + 4 is the nearest float.
    int64_t big = (1 << 24) + 3;
    ck_assert_double_eq(tt_item(tt_sum_all(tt_ones(TT_F32, TT_SHAPE(big)))), (float)big);
    tt_scope_end();
}
END_TEST

// The same input gives bitwise the same sums, whatever the layout path taken each time.
START_TEST(test_deterministic) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(300001));
    float a = (float)tt_item(tt_sum_all(x)), b = (float)tt_item(tt_sum_all(x));
    ck_assert(memcmp(&a, &b, sizeof a) == 0);
    tt_tensor *m = tt_randn(&rng, TT_F64, TT_SHAPE(64, 257));
    tt_tensor *s1 = tt_sum(m, TT_DIMS(1), false), *s2 = tt_sum(m, TT_DIMS(1), false);
    ck_assert(memcmp(tt_data(s1), tt_data(s2), 64 * sizeof(double)) == 0);
    // Row sums agree with a plain double sum to rounding.
    for (int i = 0; i < 64; i++) {
        double ref = 0;
        for (int j = 0; j < 257; j++) ref += tt_at(m, i * 257 + j);
        ck_assert_close(tt_at(s1, i), ref, 1e-12, 1e-12);
    }
    tt_scope_end();
}
END_TEST

// Strided and contiguous inputs agree.
START_TEST(test_strided_matches_contiguous) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_tensor *x = tt_randn(&rng, dt, TT_SHAPE(5, 7));
    tt_tensor *t = tr(x);  // (7, 5)
    double tol = dt == TT_F32 ? 1e-6 : 1e-13;
    tt_tensor *a = tt_sum(t, TT_DIMS(0), false), *b = tt_sum(x, TT_DIMS(1), false);
    tt_tensor *c = tt_var(t, TT_DIMS(0), 1, false), *d = tt_var(x, TT_DIMS(1), 1, false);
    tt_tensor *e = tt_max(t, TT_DIMS(0), false), *f = tt_max(x, TT_DIMS(1), false);
    for (int i = 0; i < 5; i++) {
        ck_assert_close(tt_at(a, i), tt_at(b, i), tol, tol);
        ck_assert_close(tt_at(c, i), tt_at(d, i), tol, tol);
        ck_assert_double_eq(tt_at(e, i), tt_at(f, i));
    }
    tt_scope_end();
}
END_TEST

// ---- gradients (hand-computed) ----

START_TEST(test_backward_values) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(m23(dt), true);
    tt_backward(tt_sum_all(tt_sum(x, TT_DIMS(1), false)));
    ck_assert_values(tt_grad(x), 0, 0, 1, 1, 1, 1, 1, 1);
    tt_zero_grad(x);
    tt_backward(tt_mean_all(x));
    ck_assert_values(tt_grad(x), 1e-7, 0, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6);
    tt_zero_grad(x);
    // Accumulates: mean over dim 0 (each 1/2), summed, then twice.
    tt_backward(tt_sum_all(tt_mean(x, TT_DIMS(0), true)));
    tt_backward(tt_sum_all(tt_mean(x, TT_DIMS(0), true)));
    ck_assert_values(tt_grad(x), 0, 0, 1, 1, 1, 1, 1, 1);
    tt_zero_grad(x);
    tt_backward(tt_sum_all(tt_max(x, TT_DIMS(0), false)));
    ck_assert_values(tt_grad(x), 0, 0, 0, 0, 0, 1, 1, 1);
    tt_zero_grad(x);
    // var over dim 1, biased: 2 (x - mean) / 3 = [-2/3, 0, 2/3] per row.
    tt_backward(tt_sum_all(tt_var(x, TT_DIMS(1), 0, false)));
    ck_assert_values(tt_grad(x), 1e-6, 0, -2.0 / 3, 0, 2.0 / 3, -2.0 / 3, 0, 2.0 / 3);
    tt_zero_grad(x);
    // unbiased: 2 (x - mean) / 2
    tt_backward(tt_sum_all(tt_var(x, TT_DIMS(1), 1, false)));
    ck_assert_values(tt_grad(x), 1e-6, 0, -1, 0, 1, -1, 0, 1);
    tt_scope_end();
}
END_TEST

// Ties split the gradient evenly (as torch.amax): three maxima get 1/3 each.
START_TEST(test_max_ties_split) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(5), 2, 1, 2, 2, 0), true);
    tt_backward(tt_max(x, 0, NULL, false));
    ck_assert_values(tt_grad(x), 1e-7, 0, 1.0 / 3, 0, 1.0 / 3, 1.0 / 3, 0);
    // Along dim 0 of a transposed view: columns [1, 1] and [0, 3].
    tt_tensor *b = tt_test_tensor(dt, TT_SHAPE(2, 2), 1, 0, 1, 3);
    tt_tensor *bt = tt_as_strided(b, TT_SHAPE(2, 2), (int64_t[]){1, 2}, 0);
    tt_set_requires_grad(bt, true);
    tt_backward(tt_sum_all(tt_max(bt, TT_DIMS(1), false)));  // rows of bt: [1, 1], [0, 3]
    ck_assert_values(tt_grad(bt), 0, 0, 0.5, 0.5, 0, 1);
    tt_scope_end();
}
END_TEST

// ---- NaN and degenerate edges, against PyTorch 1.13 (tests/reference/edge_nn_reduce.py) ----

// amax's gradient is (g / count) (x == max): a NaN maximum equals nothing, count is 0 and the
// whole slice gets NaN (torch.amax, over given dims and over all dims); ties still split.
START_TEST(test_max_nan_grad) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(2, 4), 1, NAN, 3, NAN, 0, 1, 2, 3), true);
    tt_backward_with(tt_max(x, TT_DIMS(1), false), tt_test_tensor(dt, TT_SHAPE(2), 2, 1));
    ck_assert_values(tt_grad(x), 0, 0, NAN, NAN, NAN, NAN, 0, 0, 0, 1);
    tt_zero_grad(x);
    tt_backward_with(tt_max(x, 0, NULL, false), tt_full(dt, 0, NULL, 2));
    ck_assert_values(tt_grad(x), 0, 0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN);
    tt_zero_grad(x);
    tt_backward_with(tt_max(x, TT_DIMS(0, 1), false), tt_full(dt, 0, NULL, 2));
    ck_assert_values(tt_grad(x), 0, 0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN);
    // Ties: [3, 1, 3, 2] and [0, 1, 2, 3]; over all dims the three 3s share g = 2.
    tt_tensor *t = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 4), 3, 1, 3, 2, 0, 1, 2, 3),
                                        true);
    tt_backward_with(tt_max(t, TT_DIMS(1), false), tt_test_tensor(dt, TT_SHAPE(2), 2, 1));
    ck_assert_values(tt_grad(t), 0, 0, 1, 0, 1, 0, 0, 0, 0, 1);
    tt_zero_grad(t);
    tt_backward_with(tt_max(t, 0, NULL, false), tt_full(dt, 0, NULL, 2));
    ck_assert_values(tt_grad(t), 1e-7, 0, 2.0 / 3, 0, 2.0 / 3, 0, 0, 0, 0, 2.0 / 3);
    tt_scope_end();
}
END_TEST

// var with N - correction <= 0 on x (1, N), g = -1.5. PyTorch 1.13's gradient is
// 2 / (N - correction) g (x - mean) even for a negative or zero divisor, over given dims and
// over all dims, except over all dims with N == correction, where 1.13 raises and later releases
// give g (x == mean ? NaN : inf): tinytorch gives the latter. Forward: the squares over
// max(0, N - correction), inf or NaN (0 / 0) when that is 0.
typedef struct var_case {
    int n;
    double x[2];
    int correction;
    bool all_dims;
    double y, dx[2];
} var_case;

static const var_case var_cases[] = {
    {1, {3}, 0, true, 0, {-0.0}},
    {1, {3}, 0, false, 0, {-0.0}},
    {1, {3}, 1, true, NAN, {NAN}},  // 1.13 raises; later: x == mean, NaN
    {1, {3}, 1, false, NAN, {NAN}},
    {1, {3}, 2, true, NAN, {0}},
    {1, {3}, 2, false, NAN, {0}},
    {2, {1, 4}, 1, true, 4.5, {4.5, -4.5}},
    {2, {1, 4}, 1, false, 4.5, {4.5, -4.5}},
    {2, {1, 4}, 2, true, INFINITY, {-INFINITY, -INFINITY}},  // 1.13 raises; later: g inf
    {2, {1, 4}, 2, false, INFINITY, {INFINITY, -INFINITY}},
    {2, {1, 4}, 3, true, INFINITY, {-4.5, 4.5}},
    {2, {1, 4}, 3, false, INFINITY, {-4.5, 4.5}},
    {2, {2, 2}, 2, true, NAN, {NAN, NAN}},  // 1.13 raises; later: x == mean, NaN
    {2, {2, 2}, 2, false, NAN, {NAN, NAN}},
    {2, {2, 2}, 3, true, NAN, {0, 0}},
    {2, {2, 2}, 3, false, NAN, {0, 0}},
};

START_TEST(test_var_small_dof_grad) {
    tt_dtype dt = dtypes[_i % 2];
    const var_case *c = &var_cases[_i / 2];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_empty(dt, TT_SHAPE(1, c->n)), true);
    for (int i = 0; i < c->n; i++) tt_set_at(x, i, c->x[i]);
    tt_tensor *y = c->all_dims ? tt_var(x, 0, NULL, c->correction, false)
                               : tt_var(x, TT_DIMS(1), c->correction, false);
    ck_assert_values(y, 1e-6, 0, c->y);  // rtol 0: with an inf expected, rtol accepts any value
    tt_backward_with(y, tt_full(dt, y->ndim, y->shape, -1.5));
    tt_assert_values(tt_grad(x), c->dx, c->n, 1e-6, 0, __FILE__, __LINE__);
    tt_scope_end();
}
END_TEST

// With grad mode off (or no input requiring grad) nothing is recorded.
START_TEST(test_no_grad_records_nothing) {
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(m23(TT_F64), true);
    bool prev = tt_set_grad_enabled(false);
    tt_tensor *s = tt_sum(x, TT_DIMS(0), false);
    ck_assert(!s->requires_grad);
    ck_assert_ptr_null(s->node);
    tt_set_grad_enabled(prev);
    tt_tensor *v = tt_var(x, TT_DIMS(1), 1, false);
    ck_assert(v->requires_grad);
    ck_assert_ptr_nonnull(v->node);
    tt_tensor *c = tt_max(m23(TT_F64), TT_DIMS(0), false);
    ck_assert_ptr_null(c->node);
    tt_scope_end();
}
END_TEST

// ---- misuse aborts ----

START_TEST(test_abort_dim_out_of_range) {
    tt_expect_abort("tt_sum: dim 2 is out of range for x of shape (2, 3)");
    tt_tensor *x = m23(TT_F32);
    tt_sum(x, TT_DIMS(2), false);
}
END_TEST

START_TEST(test_abort_negative_dim_out_of_range) {
    tt_expect_abort("tt_mean: dim -3 is out of range for x of shape (2, 3)");
    tt_tensor *x = m23(TT_F32);
    tt_mean(x, TT_DIMS(-3), false);
}
END_TEST

START_TEST(test_abort_duplicate_dim) {
    tt_expect_abort("dims (0, -2) name dim 0 twice");
    tt_tensor *x = m23(TT_F64);
    tt_sum(x, TT_DIMS(0, -2), false);
}
END_TEST

START_TEST(test_abort_duplicate_dim_var) {
    tt_expect_abort("tt_var: dims (2, 1, 2) name dim 2 twice");
    tt_tensor *x = r234(TT_F64);
    tt_var(x, TT_DIMS(2, 1, 2), 1, false);
}
END_TEST

START_TEST(test_abort_integer_input) {
    tt_expect_abort("tt_mean: x (2, 3) is i32: the mean of an integer or bool tensor");
    tt_tensor *x = tt_zeros(TT_I32, TT_SHAPE(2, 3));
    tt_mean(x, TT_DIMS(0), false);
}
END_TEST

START_TEST(test_abort_integer_input_max) {  // max takes integers now; var does not (PyTorch)
    tt_expect_abort("tt_var: tensor (4,) is i64; this op needs f32 or f64");
    tt_tensor *x = tt_zeros(TT_I64, TT_SHAPE(4));
    tt_var(x, 0, NULL, 1, false);
}
END_TEST

START_TEST(test_abort_argmax_dim) {
    tt_expect_abort("tt_argmax: dim 2 is out of range for x of shape (2, 3)");
    tt_tensor *x = m23(TT_F32);
    tt_argmax(x, 2, false);
}
END_TEST

START_TEST(test_abort_max_empty) {
    tt_expect_abort("the max over zero elements is undefined");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(0, 3));
    tt_max(x, TT_DIMS(0), false);
}
END_TEST

START_TEST(test_abort_argmax_empty) {
    tt_expect_abort("the argmax over zero elements is undefined: dim 0 of x (0, 3) has size 0");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(0, 3));
    tt_argmax(x, 0, false);
}
END_TEST

START_TEST(test_abort_negative_ndims) {
    tt_expect_abort("ndims is -1; pass ndims > 0");
    tt_tensor *x = m23(TT_F32);
    tt_sum(x, -1, (const int[]){0}, false);
}
END_TEST

START_TEST(test_abort_scalar_dim) {
    tt_expect_abort("dim 1 is out of range for x of shape ()");
    tt_tensor *x = tt_scalar(TT_F32, 1);
    tt_sum(x, TT_DIMS(1), false);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_reduce");
    TCase *fwd = tt_tcase("forward");
    tcase_add_loop_test(fwd, test_sum_values, 0, 2);
    tcase_add_loop_test(fwd, test_mean_values, 0, 2);
    tcase_add_loop_test(fwd, test_max_values, 0, 2);
    tcase_add_loop_test(fwd, test_var_values, 0, 2);
    tcase_add_loop_test(fwd, test_var_degenerate, 0, 2);
    tcase_add_loop_test(fwd, test_empty, 0, 2);
    tcase_add_loop_test(fwd, test_scalar_input, 0, 2);
    tcase_add_loop_test(fwd, test_argmax, 0, 2);
    tcase_add_test(fwd, test_argmax_not_differentiable);
    suite_add_tcase(s, fwd);

    TCase *acc = tt_tcase("accuracy");
    tcase_add_test(acc, test_f32_long_sum);
    tcase_add_test(acc, test_deterministic);
    tcase_add_loop_test(acc, test_strided_matches_contiguous, 0, 2);
    suite_add_tcase(s, acc);

    TCase *bwd = tt_tcase("backward");
    tcase_add_loop_test(bwd, test_backward_values, 0, 2);
    tcase_add_loop_test(bwd, test_max_ties_split, 0, 2);
    tcase_add_test(bwd, test_no_grad_records_nothing);
    suite_add_tcase(s, bwd);

    TCase *edges = tt_tcase("nan_edges");
    tcase_add_loop_test(edges, test_max_nan_grad, 0, 2);
    tcase_add_loop_test(edges, test_var_small_dof_grad, 0,
                        2 * (int)(sizeof var_cases / sizeof var_cases[0]));
    suite_add_tcase(s, edges);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_dim_out_of_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_negative_dim_out_of_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_duplicate_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_duplicate_dim_var, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_integer_input, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_integer_input_max, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_argmax_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_max_empty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_argmax_empty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_negative_ndims, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_scalar_dim, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

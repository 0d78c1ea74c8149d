// Check suite of the neural-network ops: hand-computed forward values and gradients in f32
// and f64, fully masked rows, cross-entropy against its formula, dropout statistics and
// reproducibility, large (multi-threaded) rows, and the abort paths. Gradchecks are elsewhere
// (tests/gc_ops_nn.c).
#include <signal.h>
#include <stdlib.h>

#include "test_util.h"

static const tt_dtype float_dtypes[2] = {TT_F32, TT_F64};

// ---- softmax / log_softmax ----

START_TEST(test_softmax_values) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(3), 1, 2, 3);
    ck_assert_values(tt_softmax(x, 0), 1e-6, 1e-5, 0.0900305731703805, 0.2447284710547976,
                     0.6652409557748219);
    ck_assert_values(tt_log_softmax(x, -1), 1e-6, 1e-5, -2.4076059644443806, -1.4076059644443806,
                     -0.4076059644443806);
    // Max-subtracted: a shift by 1000 changes nothing and does not overflow.
    tt_tensor *big = tt_test_tensor(dt, TT_SHAPE(3), 1001, 1002, 1003);
    ck_assert_values(tt_softmax(big, 0), 1e-6, 1e-5, 0.0900305731703805, 0.2447284710547976,
                     0.6652409557748219);
    // Along dim 0 of (2, 2): columns [1, 3] and [2, 2].
    tt_tensor *m = tt_test_tensor(dt, TT_SHAPE(2, 2), 1, 2, 3, 2);
    ck_assert_values(tt_softmax(m, 0), 1e-6, 1e-5, 0.1192029220221176, 0.5, 0.8807970779778824,
                     0.5);
    tt_scope_end();
}
END_TEST

// d softmax_c / dx_j = y_c (delta_cj - y_j); seeding g = e_0 gives row 0 of the Jacobian.
START_TEST(test_softmax_backward_values) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(3), 1, 2, 3), true);
    tt_backward_with(tt_softmax(x, 0), tt_test_tensor(dt, TT_SHAPE(3), 1, 0, 0));
    double y0 = 0.0900305731703805, y1 = 0.2447284710547976, y2 = 0.6652409557748219;
    ck_assert_values(tt_grad(x), 1e-6, 1e-5, y0 * (1 - y0), -y0 * y1, -y0 * y2);
    // log_softmax: dx = g - softmax sum(g); g = (1, 1, 1) gives 1 - 3 y.
    tt_zero_grad(x);
    tt_backward_with(tt_log_softmax(x, 0), tt_ones(dt, TT_SHAPE(3)));
    ck_assert_values(tt_grad(x), 1e-6, 1e-5, 1 - 3 * y0, 1 - 3 * y1, 1 - 3 * y2);
    tt_scope_end();
}
END_TEST

static void assert_all_finite(const tt_tensor *t) {
    ck_assert_ptr_nonnull(t);
    for (int64_t i = 0; i < tt_numel(t); i++)
        ck_assert_msg(isfinite(tt_at(t, i)), "element %lld is %g", (long long)i, tt_at(t, i));
}

START_TEST(test_fully_masked_row) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
                                        true);
    tt_tensor *mask = tt_from_data(TT_I32, TT_SHAPE(2, 3), (const int32_t[]){0, 0, 1, 1, 1, 1});
    tt_tensor *h = tt_masked_fill(x, mask, -INFINITY);
    ck_assert_values(h, 0, 0, 1, 2, -INFINITY, -INFINITY, -INFINITY, -INFINITY);
    tt_tensor *y = tt_softmax(h, -1);
    ck_assert_values(y, 1e-6, 1e-5, 0.2689414213699951, 0.7310585786300049, 0, 0, 0, 0);
    tt_backward_with(y, tt_test_tensor(dt, TT_SHAPE(2, 3), 1, -2, 3, 4, -5, 6));
    assert_all_finite(tt_grad(x));
    double p = 0.2689414213699951, q = 1 - p;  // row 0: g = (1, -2), dx = y (g - y.g)
    ck_assert_values(tt_grad(x), 1e-6, 1e-5, p * (1 - (p - 2 * q)), q * (-2 - (p - 2 * q)), 0, 0,
                     0, 0);

    // log_softmax of a fully masked row is -inf, and its gradient 0.
    tt_tensor *z = tt_set_requires_grad(tt_full(dt, TT_SHAPE(2, 2), -INFINITY), true);
    tt_tensor *lz = tt_log_softmax(z, 1);
    ck_assert_values(lz, 0, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY);
    tt_backward_with(lz, tt_ones(dt, TT_SHAPE(2, 2)));
    ck_assert_values(tt_grad(z), 0, 0, 0, 0, 0, 0);
    tt_zero_grad(z);
    tt_tensor *sz = tt_softmax(z, 0);
    ck_assert_values(sz, 0, 0, 0, 0, 0, 0);
    tt_backward_with(sz, tt_ones(dt, TT_SHAPE(2, 2)));
    ck_assert_values(tt_grad(z), 0, 0, 0, 0, 0, 0);
    tt_scope_end();
}
END_TEST

// ---- masked_fill ----

START_TEST(test_masked_fill_values) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 2, 2), 1, 2, 3, 4, 5,
                                                       6, 7, 8), true);
    tt_tensor *causal = tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 0, 1, 0, 0);
    tt_tensor *y = tt_masked_fill(x, causal, -1.5);
    ck_assert_values(y, 0, 0, 1, -1.5, 3, 4, 5, -1.5, 7, 8);
    tt_backward_with(y, tt_full(dt, TT_SHAPE(2, 2, 2), 2));
    ck_assert_values(tt_grad(x), 0, 0, 2, 0, 2, 2, 2, 0, 2, 2);
    tt_tensor *pad = tt_from_data(TT_I64, TT_SHAPE(2, 1, 2), (const int64_t[]){0, 1, 1, 0});
    ck_assert_values(tt_masked_fill(x, pad, 0), 0, 0, 1, 0, 3, 0, 0, 6, 0, 8);
    tt_scope_end();
}
END_TEST

// ---- layernorm / rmsnorm ----

// x = (1, 2, 3, 4): mean 2.5, biased variance 1.25, xhat = (-1.5, -0.5, 0.5, 1.5) / sqrt(1.25).
START_TEST(test_layernorm_values) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 4), 1, 2, 3, 4, 1, 2,
                                                       3, 4), true);
    tt_tensor *w = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(4), 1, 2, 0.5, -1), true);
    tt_tensor *b = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(4), 0, 1, -1, 0.5), true);
    double s = 1 / sqrt(1.25), h0 = -1.5 * s, h1 = -0.5 * s, h2 = 0.5 * s, h3 = 1.5 * s;
    tt_tensor *y = tt_layernorm(x, 1, w, b, 0);
    ck_assert_values(y, 1e-6, 1e-5, h0, 2 * h1 + 1, 0.5 * h2 - 1, -h3 + 0.5, h0, 2 * h1 + 1,
                     0.5 * h2 - 1, -h3 + 0.5);
    ck_assert_values(tt_layernorm(x, 2, NULL, NULL, 0), 1e-6, 1e-5, h0, h1, h2, h3, h0, h1, h2, h3);
    tt_backward_with(y, tt_ones(dt, TT_SHAPE(2, 4)));
    ck_assert_values(tt_grad(b), 1e-6, 1e-5, 2, 2, 2, 2);
    ck_assert_values(tt_grad(w), 1e-6, 1e-5, 2 * h0, 2 * h1, 2 * h2, 2 * h3);
    tt_scope_end();
}
END_TEST

// x = (1, 2, 3, 4): mean(x^2) = 7.5.
START_TEST(test_rmsnorm_values) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(1, 4), 1, 2, 3, 4);
    tt_tensor *w = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(4), 1, 1, 2, 0.5), true);
    double r = 1 / sqrt(7.5);
    tt_tensor *y = tt_rmsnorm(x, w, 0);
    ck_assert_values(y, 1e-6, 1e-5, r, 2 * r, 6 * r, 2 * r);
    ck_assert_values(tt_rmsnorm(x, NULL, 0), 1e-6, 1e-5, r, 2 * r, 3 * r, 4 * r);
    tt_backward_with(y, tt_ones(dt, TT_SHAPE(1, 4)));
    ck_assert_values(tt_grad(w), 1e-6, 1e-5, r, 2 * r, 3 * r, 4 * r);
    tt_scope_end();
}
END_TEST

// ---- embedding ----

START_TEST(test_embedding_values) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *w = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(3, 2), 0, 1, 10, 11, 20,
                                                       21), true);
    tt_tensor *idx = tt_from_data(TT_I32, TT_SHAPE(2, 2), (const int32_t[]){2, 0, 2, 1});
    tt_tensor *y = tt_embedding(w, idx);
    ck_assert_int_eq(y->ndim, 3);
    ck_assert_int_eq(y->shape[2], 2);
    ck_assert_values(y, 0, 0, 20, 21, 0, 1, 20, 21, 10, 11);
    tt_backward_with(y, tt_test_tensor(dt, TT_SHAPE(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8));
    ck_assert_values(tt_grad(w), 0, 0, 3, 4, 7, 8, 6, 8);  // row 2 gets (1, 2) + (5, 6)
    tt_tensor *idx64 = tt_from_data(TT_I64, TT_SHAPE(1), (const int64_t[]){1});
    ck_assert_values(tt_embedding(w, idx64), 0, 0, 10, 11);
    tt_scope_end();
}
END_TEST

// ---- cross_entropy ----
// logits ((1, 2, 3), (1, 1, 1)), targets (2, 0): lse = 3 + log(1 + e^-1 + e^-2) and
// 1 + log 3; nll = lse - x_t.

static const double LSE0 = 3.4076059644443806, LSE1 = 2.0986122886681098;

START_TEST(test_cross_entropy_values) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, 1, 1, 1),
                                        true);
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(2), (const int64_t[]){2, 0});
    double nll0 = LSE0 - 3, nll1 = LSE1 - 1;
    tt_tensor *loss = tt_cross_entropy(x, t, -100);
    ck_assert_int_eq(loss->ndim, 0);
    ck_assert_close(tt_item(loss), (nll0 + nll1) / 2, 1e-6, 1e-6);
    tt_backward(loss);
    double y0 = 0.0900305731703805, y1 = 0.2447284710547976, y2 = 0.6652409557748219;
    ck_assert_values(tt_grad(x), 1e-6, 1e-5, y0 / 2, y1 / 2, (y2 - 1) / 2, (1.0 / 3 - 1) / 2,
                     1.0 / 6, 1.0 / 6);

    // ignore_index: only row 0 counts.
    tt_tensor *ti = tt_from_data(TT_I32, TT_SHAPE(2), (const int32_t[]){2, -100});
    ck_assert_close(tt_item(tt_cross_entropy(x, ti, -100)), nll0, 1e-6, 1e-6);
    ck_assert_close(tt_item(tt_cross_entropy(x, t, 0)), nll0, 1e-6, 1e-6);

    // label smoothing s: (1 - s) nll + s (lse - mean_j x_j), averaged.
    double s = 0.1;
    double l0 = (1 - s) * nll0 + s * (LSE0 - 2), l1 = (1 - s) * nll1 + s * (LSE1 - 1);
    tt_zero_grad(x);
    tt_tensor *ls = tt_cross_entropy_smooth(x, t, -100, s);
    ck_assert_close(tt_item(ls), (l0 + l1) / 2, 1e-6, 1e-6);
    tt_backward(ls);
    ck_assert_values(tt_grad(x), 1e-6, 1e-5, (y0 - s / 3) / 2, (y1 - s / 3) / 2,
                     (y2 - (1 - s) - s / 3) / 2, (1.0 / 3 - (1 - s) - s / 3) / 2,
                     (1.0 / 3 - s / 3) / 2, (1.0 / 3 - s / 3) / 2);
    tt_scope_end();
}
END_TEST

START_TEST(test_cross_entropy_all_ignored) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, 1, 1, 1),
                                        true);
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(2), (const int64_t[]){-1, -1});
    tt_tensor *loss = tt_cross_entropy_smooth(x, t, -1, 0.2);
    ck_assert(tt_item(loss) == 0);
    tt_backward(loss);
    ck_assert_values(tt_grad(x), 0, 0, 0, 0, 0, 0, 0, 0);
    tt_scope_end();
}
END_TEST

// (B, T, V) logits against the same rows flattened to (B T, V).
START_TEST(test_cross_entropy_3d) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(2, 3, 7));
    tt_tensor *t = tt_from_data(TT_I32, TT_SHAPE(2, 3), (const int32_t[]){0, 6, 3, 3, 1, 2});
    double want = 0;
    for (int64_t r = 0; r < 6; r++) {
        double m = -INFINITY, s = 0;
        for (int64_t j = 0; j < 7; j++) m = fmax(m, tt_at(x, r * 7 + j));
        for (int64_t j = 0; j < 7; j++) s += exp(tt_at(x, r * 7 + j) - m);
        want += m + log(s) - tt_at(x, r * 7 + (int64_t)tt_at(t, r));
    }
    ck_assert_close(tt_item(tt_cross_entropy(x, t, -100)), want / 6, 1e-6, 1e-5);
    tt_scope_end();
}
END_TEST

// ---- NaN and large-logit edges, against PyTorch 1.13 (tests/reference/edge_nn_reduce.py) ----

// A row holding a NaN is NaN in softmax and log_softmax, forward and backward, even when every
// other element is -inf or NaN (a diverged row must not look like a fully masked one).
// Rows: [1, NaN, 2], [NaN, NaN, NaN], [NaN, -inf, -inf], [1, 2, 3]; g = [0.5, -1, 2] per row.
START_TEST(test_softmax_nan_rows) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(4, 3), 1, NAN, 2, NAN, NAN, NAN, NAN, -INFINITY, -INFINITY,
                       1, 2, 3),
        true);
    tt_tensor *g = tt_test_tensor(dt, TT_SHAPE(4, 3), 0.5, -1, 2, 0.5, -1, 2, 0.5, -1, 2, 0.5,
                                  -1, 2);
    tt_tensor *y = tt_softmax(x, 1);
    ck_assert_values(y, 1e-6, 1e-5, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
                     0.09003057317038045, 0.2447284710547976, 0.6652409557748218);
    tt_backward_with(y, g);
    ck_assert_values(tt_grad(x), 1e-6, 1e-5, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
                     -0.05678847003696693, -0.5214597727496746, 0.5782482427866417);
    tt_zero_grad(x);
    tt_tensor *l = tt_log_softmax(x, 1);
    ck_assert_values(l, 1e-6, 1e-5, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
                     -2.4076059644443806, -1.4076059644443804, -0.4076059644443804);
    tt_backward_with(l, g);
    ck_assert_values(tt_grad(x), 1e-6, 1e-5, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
                     0.36495414024442935, -1.3670927065821965, 1.0021385663377673);

    // Along dim 0 of (3, 2) (the strided path): column 0 all NaN, column 1 ordinary.
    tt_tensor *c = tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(3, 2), NAN, 1, NAN, 2, NAN, 0), true);
    tt_tensor *gc = tt_test_tensor(dt, TT_SHAPE(3, 2), 1, 1, -2, 0.5, 0.25, -1);
    tt_tensor *yc = tt_softmax(c, 0);
    ck_assert_values(yc, 1e-6, 1e-5, NAN, 0.24472847105479764, NAN, 0.6652409557748218, NAN,
                     0.09003057317038046);
    tt_backward_with(yc, gc);
    ck_assert_values(tt_grad(c), 1e-6, 1e-5, NAN, 0.1254677900352508, NAN, 0.008436335822326193,
                     NAN, -0.133904125857577);
    tt_zero_grad(c);
    tt_tensor *lc = tt_log_softmax(c, 0);
    ck_assert_values(lc, 1e-6, 1e-5, NAN, -1.4076059644443804, NAN, -0.4076059644443804, NAN,
                     -2.4076059644443806);
    tt_backward_with(lc, gc);
    ck_assert_values(tt_grad(c), 1e-6, 1e-5, NAN, 0.8776357644726012, NAN, 0.1673795221125891,
                     NAN, -1.0450152865851903);
    tt_scope_end();
}
END_TEST

// A NaN logit makes its row's loss (hence the mean) and that row's gradient NaN; the other
// rows' gradients stay finite (PyTorch).
START_TEST(test_cross_entropy_nan_logit) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 1, NAN, 2, 1, 2, 3),
                                        true);
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(2), (const int64_t[]){0, 2});
    tt_tensor *loss = tt_cross_entropy(x, t, -100);
    ck_assert(isnan(tt_item(loss)));
    tt_backward(loss);
    ck_assert_values(tt_grad(x), 1e-6, 1e-5, NAN, NAN, NAN, 0.04501528658519022,
                     0.12236423552739882, -0.1673795221125891);
    // A row of NaN only, alone: NaN too.
    tt_tensor *n = tt_full(dt, TT_SHAPE(1, 3), NAN);
    tt_tensor *t0 = tt_from_data(TT_I64, TT_SHAPE(1), (const int64_t[]){1});
    ck_assert(isnan(tt_item(tt_cross_entropy(n, t0, -100))));
    tt_scope_end();
}
END_TEST

// Logits near +-1e4: the log-sum-exp stays in double until exp(x - lse), so the f32 gradient
// is as accurate as f32 allows (it was off by ~1e-4 when lse was rounded to f32 first).
// Expected values: PyTorch in f64.
START_TEST(test_cross_entropy_large_logits) {
    tt_dtype dt = float_dtypes[_i];
    double rtol = dt == TT_F32 ? 1e-6 : 1e-12;
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(2, 4), 10000, 10000.5, 9999.25, 10001, -12000.75, -12001,
                       -11999.5, -12003),
        true);
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(2), (const int64_t[]){1, 3});
    tt_tensor *loss = tt_cross_entropy(x, t, -100);
    ck_assert_close(tt_item(loss), 2.5981481976724385, 0, rtol);
    tt_backward(loss);
    ck_assert_values(tt_grad(x), 1e-8, rtol, 0.0856256804768808, -0.358827119279594,
                     0.040446707512967785, 0.23275473128974547, 0.09303116623073673,
                     0.0724527451105438, 0.32471067587791386, -0.49019458721919446);
    tt_scope_end();
}
END_TEST

// ---- large rows: the multi-threaded paths agree with f64 and are deterministic ----

START_TEST(test_large_rows_f32) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    int64_t R = 64, C = 1024;
    tt_tensor *x64 = tt_randn(&rng, TT_F64, TT_SHAPE(R, C));
    tt_tensor *x32 = tt_empty(TT_F32, TT_SHAPE(R, C));
    tt_copy_(x32, x64);
    tt_set_requires_grad(x32, true);
    tt_tensor *pairs[3][2] = {
        {tt_softmax(x64, -1), tt_softmax(x32, -1)},
        {tt_log_softmax(x64, 0), tt_log_softmax(x32, 0)},
        {tt_layernorm(x64, 1, NULL, NULL, 1e-5), tt_layernorm(x32, 1, NULL, NULL, 1e-5)},
    };
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; i < R * C; i += 97)
            ck_assert_close(tt_at(pairs[k][1], i), tt_at(pairs[k][0], i), 1e-5, 1e-4);
    tt_tensor *t = tt_zeros(TT_I64, TT_SHAPE(R));
    for (int64_t r = 0; r < R; r++) tt_set_at(t, r, (double)((r * 37) % C));
    tt_tensor *l1 = tt_cross_entropy(x32, t, -100), *l2 = tt_cross_entropy(x32, t, -100);
    ck_assert(tt_item(l1) == tt_item(l2));  // bitwise
    ck_assert_close(tt_item(l1), tt_item(tt_cross_entropy(x64, t, -100)), 1e-6, 1e-5);
    tt_backward(l1);
    tt_tensor *g1 = tt_empty(TT_F32, TT_SHAPE(R, C));
    tt_copy_(g1, tt_grad(x32));
    tt_zero_grad(x32);
    tt_backward(l2);
    for (int64_t i = 0; i < R * C; i++) ck_assert(tt_at(g1, i) == tt_at(tt_grad(x32), i));
    tt_scope_end();
}
END_TEST

// ---- dropout ----

START_TEST(test_dropout_statistics) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    int64_t n = 100000;
    double p = 0.3;
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_tensor *x = tt_set_requires_grad(tt_ones(dt, TT_SHAPE(n)), true);
    tt_tensor *y = tt_dropout(x, p, true, &rng);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = tt_at(y, i);
        if (v == 0) continue;
        kept++;
        ck_assert_close(v, 1 / (1 - p), 1e-6, 1e-6);
    }
    // Binomial(1e5, 0.7): standard deviation ~145.
    ck_assert_msg(llabs(kept - 70000) < 1000, "kept %lld of %lld", (long long)kept,
                  (long long)n);
    // The gradient is the mask, scaled the same way.
    tt_backward_with(y, tt_ones(dt, TT_SHAPE(n)));
    for (int64_t i = 0; i < n; i++) ck_assert(tt_at(tt_grad(x), i) == tt_at(y, i));
    tt_scope_end();
}
END_TEST

START_TEST(test_dropout_reproducible) {
    tt_scope_begin();
    tt_rng a, b, c;
    tt_rng_seed(&a, 42);
    tt_rng_seed(&b, 42);
    tt_rng_seed(&c, 43);
    tt_tensor *x = tt_randn(&a, TT_F32, TT_SHAPE(8, 16));
    tt_randn(&b, TT_F32, TT_SHAPE(8, 16));  // keep b in step with a
    tt_randn(&c, TT_F32, TT_SHAPE(8, 16));
    tt_tensor *ya = tt_dropout(x, 0.5, true, &a), *yb = tt_dropout(x, 0.5, true, &b);
    tt_tensor *yc = tt_dropout(x, 0.5, true, &c);
    bool differ = false;
    for (int64_t i = 0; i < 128; i++) {
        ck_assert(tt_at(ya, i) == tt_at(yb, i));
        differ |= tt_at(ya, i) != tt_at(yc, i);
    }
    ck_assert_msg(differ, "another seed drew the same mask");
    tt_scope_end();
}
END_TEST

START_TEST(test_dropout_identity_and_extremes) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 1, 2, 3, 4),
                                        true);
    tt_tensor *e = tt_dropout(x, 0.5, false, NULL);
    ck_assert_ptr_eq(e, x);  // the same tensor, a new reference, no node
    ck_assert_ptr_null(e->node);
    ck_assert_ptr_eq(tt_dropout(x, 0, true, &rng), x);
    tt_rng before = rng;
    tt_dropout(x, 0, true, &rng);
    ck_assert_mem_eq(&before, &rng, sizeof rng);  // p == 0 draws nothing
    tt_tensor *z = tt_dropout(x, 1, true, &rng);
    ck_assert_values(z, 0, 0, 0, 0, 0, 0);
    tt_backward_with(z, tt_ones(TT_F64, TT_SHAPE(2, 2)));
    ck_assert_values(tt_grad(x), 0, 0, 0, 0, 0, 0);
    tt_scope_end();
}
END_TEST

// ---- misuse aborts ----

START_TEST(test_abort_embedding_index) {
    tt_expect_abort("index 5 (at flat position 1 of indices (3,)) is out of range");
    tt_tensor *w = tt_zeros(TT_F32, TT_SHAPE(5, 3));
    tt_tensor *idx = tt_from_data(TT_I64, TT_SHAPE(3), (const int64_t[]){0, 5, 1});
    tt_embedding(w, idx);
}
END_TEST

START_TEST(test_abort_embedding_negative_index) {
    tt_expect_abort("index -1 (at flat position 0 of indices (1,)) is out of range");
    tt_tensor *w = tt_zeros(TT_F32, TT_SHAPE(5, 3));
    tt_tensor *idx = tt_from_data(TT_I32, TT_SHAPE(1), (const int32_t[]){-1});
    tt_embedding(w, idx);
}
END_TEST

START_TEST(test_abort_embedding_float_indices) {
    tt_expect_abort("indices (2,) is f32; it must be i32 or i64");
    tt_embedding(tt_zeros(TT_F32, TT_SHAPE(5, 3)), tt_zeros(TT_F32, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_target_range) {
    tt_expect_abort("target 3 (at flat position 1 of targets (2,)) is out of range");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(2, 3));
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(2), (const int64_t[]){0, 3});
    tt_cross_entropy(x, t, -100);
}
END_TEST

START_TEST(test_abort_target_shape) {
    tt_expect_abort("targets (3,) must have the shape of logits (2, 3) without the last dim");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(2, 3));
    tt_cross_entropy(x, tt_zeros(TT_I64, TT_SHAPE(3)), -100);
}
END_TEST

START_TEST(test_abort_label_smoothing) {
    tt_expect_abort("label_smoothing must be in [0, 1), got 1");
    tt_cross_entropy_smooth(tt_zeros(TT_F32, TT_SHAPE(2, 3)), tt_zeros(TT_I64, TT_SHAPE(2)),
                            -100, 1.0);
}
END_TEST

START_TEST(test_abort_softmax_dim) {
    tt_expect_abort("tt_softmax: dim 2 is out of range for a 2-d tensor");
    tt_softmax(tt_zeros(TT_F32, TT_SHAPE(2, 3)), 2);
}
END_TEST

START_TEST(test_abort_log_softmax_dim) {
    tt_expect_abort("tt_log_softmax: dim -3 is out of range for a 2-d tensor");
    tt_log_softmax(tt_zeros(TT_F64, TT_SHAPE(2, 3)), -3);
}
END_TEST

START_TEST(test_abort_softmax_int) {
    tt_expect_abort("tt_softmax: tensor (2, 3) is i32; this op needs f32 or f64");
    tt_softmax(tt_zeros(TT_I32, TT_SHAPE(2, 3)), 0);
}
END_TEST

START_TEST(test_abort_layernorm_weight_shape) {
    tt_expect_abort("weight (3,) must have the shape of x's last 1 dim(s) (4,)");
    tt_layernorm(tt_zeros(TT_F32, TT_SHAPE(2, 4)), 1, tt_ones(TT_F32, TT_SHAPE(3)), NULL, 1e-5);
}
END_TEST

START_TEST(test_abort_layernorm_bias_shape) {
    tt_expect_abort("bias (4,) must have the shape of x's last 2 dim(s) (3, 4)");
    tt_layernorm(tt_zeros(TT_F32, TT_SHAPE(2, 3, 4)), 2, NULL, tt_ones(TT_F32, TT_SHAPE(4)),
                 1e-5);
}
END_TEST

START_TEST(test_abort_layernorm_dtype) {
    tt_expect_abort("tt_layernorm: dtypes differ: (2, 4) f32 vs (4,) f64");
    tt_layernorm(tt_zeros(TT_F32, TT_SHAPE(2, 4)), 1, tt_ones(TT_F64, TT_SHAPE(4)), NULL, 1e-5);
}
END_TEST

START_TEST(test_abort_layernorm_norm_ndim) {
    tt_expect_abort("norm_ndim 3 is out of range for x (2, 4)");
    tt_layernorm(tt_zeros(TT_F32, TT_SHAPE(2, 4)), 3, NULL, NULL, 1e-5);
}
END_TEST

START_TEST(test_abort_rmsnorm_weight_shape) {
    tt_expect_abort("tt_rmsnorm: weight (2,) must have the shape of x's last 1 dim(s) (4,)");
    tt_rmsnorm(tt_zeros(TT_F32, TT_SHAPE(2, 4)), tt_ones(TT_F32, TT_SHAPE(2)), 1e-5);
}
END_TEST

START_TEST(test_abort_masked_fill_shape) {
    tt_expect_abort("mask (2,) does not broadcast to x (2, 3)");
    tt_masked_fill(tt_zeros(TT_F32, TT_SHAPE(2, 3)), tt_zeros(TT_I32, TT_SHAPE(2)), 0);
}
END_TEST

START_TEST(test_abort_dropout_p) {
    tt_expect_abort("tt_dropout: p must be in [0, 1], got 1.5");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_dropout(tt_zeros(TT_F32, TT_SHAPE(4)), 1.5, true, &rng);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_nn");
    TCase *tc = tt_tcase("values");
    tcase_add_loop_test(tc, test_softmax_values, 0, 2);
    tcase_add_loop_test(tc, test_softmax_backward_values, 0, 2);
    tcase_add_loop_test(tc, test_fully_masked_row, 0, 2);
    tcase_add_loop_test(tc, test_masked_fill_values, 0, 2);
    tcase_add_loop_test(tc, test_layernorm_values, 0, 2);
    tcase_add_loop_test(tc, test_rmsnorm_values, 0, 2);
    tcase_add_loop_test(tc, test_embedding_values, 0, 2);
    tcase_add_loop_test(tc, test_cross_entropy_values, 0, 2);
    tcase_add_loop_test(tc, test_cross_entropy_all_ignored, 0, 2);
    tcase_add_test(tc, test_cross_entropy_3d);
    tcase_add_test(tc, test_large_rows_f32);
    suite_add_tcase(s, tc);

    TCase *edges = tt_tcase("nan_edges");
    tcase_add_loop_test(edges, test_softmax_nan_rows, 0, 2);
    tcase_add_loop_test(edges, test_cross_entropy_nan_logit, 0, 2);
    tcase_add_loop_test(edges, test_cross_entropy_large_logits, 0, 2);
    suite_add_tcase(s, edges);

    TCase *dr = tt_tcase("dropout");
    tcase_add_loop_test(dr, test_dropout_statistics, 0, 2);
    tcase_add_test(dr, test_dropout_reproducible);
    tcase_add_test(dr, test_dropout_identity_and_extremes);
    suite_add_tcase(s, dr);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_embedding_index, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_embedding_negative_index, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_embedding_float_indices, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_target_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_target_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_label_smoothing, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_softmax_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_log_softmax_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_softmax_int, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_layernorm_weight_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_layernorm_bias_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_layernorm_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_layernorm_norm_ndim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_rmsnorm_weight_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_masked_fill_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dropout_p, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

// The elementwise ops: hand-computed forward values in f32 and f64, broadcasting, views,
// gradients (accumulation, broadcast sums, ties, kinks, f32 against f64), numerically
// extreme inputs, the parallel path on large tensors, and the misuse aborts.
#include "test_util.h"

#include <signal.h>
#include <stdio.h>

// Loop tests run once per float dtype: _i == 0 is f32, _i == 1 is f64.
static tt_dtype dtype_of(int i) { return i == 0 ? TT_F32 : TT_F64; }
// A tolerance for hand-computed values: float rounding in f32, a few ulps in f64.
static double tol_of(tt_dtype dt) { return dt == TT_F32 ? 1e-6 : 1e-12; }

static tt_tensor *leaf(tt_tensor *t) { return tt_set_requires_grad(t, true); }

// Seeds backward with ones of y's shape.
static void backward_ones(tt_tensor *y) {
    tt_backward_with(y, tt_ones(y->dtype, y->ndim, y->shape));
}

// ---- forward values ----

START_TEST(test_binary_values) {
    tt_dtype dt = dtype_of(_i);
    double tol = tol_of(dt);
    tt_scope_begin();
    tt_tensor *a = tt_test_tensor(dt, TT_SHAPE(2, 2), 1, -2, 3, 0.5);
    tt_tensor *b = tt_test_tensor(dt, TT_SHAPE(2, 2), 2, 4, -1, 0.25);
    ck_assert_values(tt_add(a, b), 0, tol, 3, 2, 2, 0.75);
    ck_assert_values(tt_sub(a, b), 0, tol, -1, -6, 4, 0.25);
    ck_assert_values(tt_mul(a, b), 0, tol, 2, -8, -3, 0.125);
    ck_assert_values(tt_div(a, b), 0, tol, 0.5, -0.5, -3, 2);
    ck_assert_values(tt_maximum(a, b), 0, tol, 2, 4, 3, 0.5);
    ck_assert_values(tt_minimum(a, b), 0, tol, 1, -2, -1, 0.25);
    tt_tensor *base = tt_test_tensor(dt, TT_SHAPE(4), 2, 4, 9, 0.5);
    tt_tensor *expo = tt_test_tensor(dt, TT_SHAPE(4), 3, 0.5, -0.5, 2);
    ck_assert_values(tt_pow(base, expo), 0, tol, 8, 2, 1.0 / 3, 0.25);
    tt_tensor *y = tt_add(a, b);
    ck_assert_int_eq(y->dtype, dt);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert(!y->requires_grad);
    tt_scope_end();
}
END_TEST

START_TEST(test_scalar_values) {
    tt_dtype dt = dtype_of(_i);
    double tol = tol_of(dt);
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(3), 1, -2, 4);
    ck_assert_values(tt_add_scalar(x, 0.5), 0, tol, 1.5, -1.5, 4.5);
    ck_assert_values(tt_sub_scalar(x, 0.5), 0, tol, 0.5, -2.5, 3.5);
    ck_assert_values(tt_mul_scalar(x, -3), 0, tol, -3, 6, -12);
    ck_assert_values(tt_div_scalar(x, 4), 0, tol, 0.25, -0.5, 1);
    ck_assert_values(tt_rsub_scalar(1, x), 0, tol, 0, 3, -3);
    ck_assert_values(tt_pow_scalar(x, 2), 0, tol, 1, 4, 16);
    ck_assert_values(tt_pow_scalar(x, 3), 0, tol, 1, -8, 64);
    tt_tensor *p = tt_test_tensor(dt, TT_SHAPE(3), 1, 4, 9);
    ck_assert_values(tt_pow_scalar(p, 0.5), 0, tol, 1, 2, 3);
    ck_assert_values(tt_pow_scalar(p, -1), 0, tol, 1, 0.25, 1.0 / 9);
    ck_assert_values(tt_pow_scalar(p, 0), 0, 0, 1, 1, 1);
    tt_scope_end();
}
END_TEST

// div_scalar divides; it does not multiply by a rounded reciprocal.
START_TEST(test_div_scalar_true_division) {
    tt_scope_begin();
    ck_assert(5.0 / 3.0 != 5.0 * (1.0 / 3.0));  // the case that tells them apart
    ck_assert(tt_item(tt_div_scalar(tt_scalar(TT_F64, 5), 3)) == 5.0 / 3.0);
    volatile float seven = 7.0f, three = 3.0f;
    ck_assert(seven / three != seven * (1.0f / three));
    ck_assert(tt_item(tt_div_scalar(tt_scalar(TT_F32, 7), 3)) == (double)(seven / three));
    tt_scope_end();
}
END_TEST

START_TEST(test_unary_values) {
    tt_dtype dt = dtype_of(_i);
    double tol = dt == TT_F32 ? 2e-6 : 1e-10;  // reference values have 12 digits
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(4), -1, 0, 0.5, 2);
    ck_assert_values(tt_neg(x), 0, 0, 1, 0, -0.5, -2);
    ck_assert_values(tt_square(x), 0, 0, 1, 0, 0.25, 4);
    ck_assert_values(tt_abs(x), 0, 0, 1, 0, 0.5, 2);
    ck_assert_values(tt_relu(x), 0, 0, 0, 0, 0.5, 2);
    ck_assert_values(tt_exp(x), 0, tol, 0.367879441171, 1, 1.6487212707, 7.38905609893);
    ck_assert_values(tt_tanh(x), tol, tol, -0.761594155956, 0, 0.46211715726, 0.964027580076);
    ck_assert_values(tt_sigmoid(x), 0, tol, 0.26894142137, 0.5, 0.622459331202,
                     0.880797077978);
    // gelu(x) = x Phi(x)
    ck_assert_values(tt_gelu(x), tol, tol, -0.158655253931, 0, 0.345731230637, 1.9544997361);
    // gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    ck_assert_values(tt_gelu_tanh(x), tol, tol, -0.158808009392, 0, 0.345714009825,
                     1.95459769409);
    ck_assert_values(tt_silu(x), tol, tol, -0.26894142137, 0, 0.311229665601, 1.76159415596);
    // torch.erf (PyTorch 1.13); its derivative is checked by the gradcheck suite
    ck_assert_values(tt_erf(x), tol, tol, -0.84270079295, 0, 0.520499877813, 0.995322265019);
    tt_tensor *p = tt_test_tensor(dt, TT_SHAPE(3), 0.25, 1, 4);
    ck_assert_values(tt_log(p), tol, tol, -1.38629436112, 0, 1.38629436112);
    ck_assert_values(tt_sqrt(p), 0, tol, 0.5, 1, 2);
    ck_assert_values(tt_rsqrt(p), 0, tol, 2, 1, 0.5);
    tt_scope_end();
}
END_TEST

// The f32 GELU and its gradient (vectorized approximations of Phi and e^x) against the f64
// ones (libm's erf and exp) on a dense grid over [-10, 10]: measured worst 2.2e-7 forward and
// 2.2e-7 for the gradient, relative to max(1, |value|).
START_TEST(test_gelu_f32_accuracy) {
    enum { N = 20001 };
    tt_scope_begin();
    tt_tensor *x32 = leaf(tt_empty(TT_F32, TT_SHAPE(N)));
    tt_tensor *x64 = leaf(tt_empty(TT_F64, TT_SHAPE(N)));
    for (int i = 0; i < N; i++) {
        double v = -10 + 20.0 * i / (N - 1) + 1.0 / 3000;  // off the grid's round numbers
        ((float *)tt_data(x32))[i] = (float)v;
        ((double *)tt_data(x64))[i] = (double)(float)v;
    }
    tt_tensor *y32 = tt_gelu(x32), *y64 = tt_gelu(x64);
    backward_ones(y32);
    backward_ones(y64);
    double wy = 0, wd = 0;
    for (int i = 0; i < N; i++) {
        double ry = ((double *)tt_data(y64))[i], rd = ((double *)tt_data(tt_grad(x64)))[i];
        wy = fmax(wy, fabs(((float *)tt_data(y32))[i] - ry) / fmax(1, fabs(ry)));
        wd = fmax(wd, fabs(((float *)tt_data(tt_grad(x32)))[i] - rd) / fmax(1, fabs(rd)));
    }
    ck_assert_msg(wy < 4e-7 && wd < 4e-7, "gelu f32 worst error %.3g forward, %.3g gradient",
                  wy, wd);
    tt_scope_end();
}
END_TEST

// Saturating inputs give exact limits, never NaN or overflow.
START_TEST(test_extreme_inputs) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(4), -1000, -100, 100, 1000);
    ck_assert_values(tt_sigmoid(x), 1e-30, 0, 0, exp(-100.0), 1, 1);
    ck_assert_values(tt_tanh(x), 0, 0, -1, -1, 1, 1);
    ck_assert_values(tt_silu(x), 1e-30, 0, 0, -100 * exp(-100.0), 100, 1000);
    ck_assert_values(tt_gelu(x), 1e-30, 0, 0, 0, 100, 1000);
    ck_assert_values(tt_gelu_tanh(x), 1e-30, 0, 0, 0, 100, 1000);
    tt_tensor *xg = leaf(tt_test_tensor(dt, TT_SHAPE(4), -1000, -100, 100, 1000));
    backward_ones(tt_sigmoid(xg));
    ck_assert_values(tt_grad(xg), 1e-30, 0, 0, exp(-100.0), exp(-100.0), 0);
    tt_zero_grad(xg);
    backward_ones(tt_silu(xg));  // silu' -> 0 on the left, 1 on the right
    ck_assert_values(tt_grad(xg), 1e-30, 0, 0, -99 * exp(-100.0), 1, 1);
    tt_tensor *m = tt_test_tensor(dt, TT_SHAPE(2), NAN, 1);
    tt_tensor *m2 = tt_test_tensor(dt, TT_SHAPE(2), 0, NAN);
    ck_assert_values(tt_maximum(m, m2), 0, 0, NAN, NAN);  // NaN propagates, as in PyTorch
    ck_assert_values(tt_minimum(m2, m), 0, 0, NAN, NAN);
    ck_assert_values(tt_relu(m), 0, 0, NAN, 1);
    tt_scope_end();
}
END_TEST

// ---- broadcasting and views ----

START_TEST(test_broadcast_b1c_1t1) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    tt_tensor *a = tt_test_tensor(dt, TT_SHAPE(2, 1, 3), 0, 1, 2, 3, 4, 5);
    tt_tensor *b = tt_test_tensor(dt, TT_SHAPE(1, 4, 1), 0, 10, 20, 30);
    tt_tensor *y = tt_add(a, b);
    ck_assert_int_eq(y->ndim, 3);
    ck_assert_int_eq(tt_size(y, 0), 2);
    ck_assert_int_eq(tt_size(y, 1), 4);
    ck_assert_int_eq(tt_size(y, 2), 3);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 4; j++)
            for (int64_t k = 0; k < 3; k++)
                ck_assert_double_eq(tt_get(y, (int64_t[]){i, j, k}), 3 * i + k + 10 * j);
    tt_scope_end();
}
END_TEST

START_TEST(test_broadcast_c_btc_and_scalar) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    tt_tensor *c = tt_test_tensor(dt, TT_SHAPE(3), 1, 2, 3);
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(2, 1, 3), 1, 1, 1, 2, 2, 2);
    ck_assert_values(tt_mul(c, x), 0, 0, 1, 2, 3, 2, 4, 6);  // (C) * (B, T, C)
    ck_assert_values(tt_sub(x, c), 0, 0, 0, -1, -2, 1, 0, -1);
    tt_tensor *s = tt_scalar(dt, 10);  // 0-dim on either side
    tt_tensor *y = tt_sub(s, c);
    ck_assert_int_eq(y->ndim, 1);
    ck_assert_values(y, 0, 0, 9, 8, 7);
    ck_assert_values(tt_div(c, s), 0, tol_of(dt), 0.1, 0.2, 0.3);
    tt_tensor *ss = tt_mul(s, s);  // 0-dim with 0-dim
    ck_assert_int_eq(ss->ndim, 0);
    ck_assert_double_eq(tt_item(ss), 100);
    tt_tensor *e = tt_add(tt_zeros(dt, TT_SHAPE(0, 3)), c);  // an empty result
    ck_assert_int_eq(tt_numel(e), 0);
    ck_assert_int_eq(tt_size(e, 1), 3);
    tt_scope_end();
}
END_TEST

// Transposed and strided views are read through their strides.
START_TEST(test_noncontiguous_inputs) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    tt_tensor *base = tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tt_tensor *t = tt_as_strided(base, TT_SHAPE(3, 2), (int64_t[]){1, 3}, 0);  // base^T
    tt_tensor *ones = tt_ones(dt, TT_SHAPE(3, 2));
    ck_assert_values(tt_add(t, ones), 0, 0, 2, 5, 3, 6, 4, 7);
    ck_assert_values(tt_mul(t, t), 0, 0, 1, 16, 4, 25, 9, 36);
    ck_assert_values(tt_square(t), 0, 0, 1, 16, 4, 25, 9, 36);
    tt_tensor *every2 = tt_as_strided(base, TT_SHAPE(3), (int64_t[]){2}, 0);  // 1, 3, 5
    ck_assert_values(tt_neg(every2), 0, 0, -1, -3, -5);
    ck_assert_values(tt_maximum(every2, tt_scalar(dt, 2)), 0, 0, 2, 3, 5);
    tt_tensor *col = tt_as_strided(base, TT_SHAPE(2, 1), (int64_t[]){3, 1}, 1);  // 2, 5
    ck_assert_values(tt_sub(col, every2), 0, 0, 1, -1, -3, 4, 2, 0);  // (2,1) - (3)
    tt_scope_end();
}
END_TEST

// Tensors past the parallel chunk size, contiguous, broadcast and transposed: every element
// matches the scalar formula.
START_TEST(test_large_tensors) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    int64_t n = 300007;
    tt_tensor *x = tt_uniform(&rng, TT_F32, TT_SHAPE(n), -3, 3);
    tt_tensor *e = tt_exp(x), *g = tt_gelu(x);
    tt_tensor *y = tt_add(x, tt_scalar(TT_F32, 0.5f));
    tt_tensor *w = tt_uniform(&rng, TT_F32, TT_SHAPE(n), -3, 3);
    tt_tensor *m = tt_mul(x, w);
    const float *xp = tt_data_f32(x), *wp = tt_data_f32(w);
    int64_t bad = 0;  // counted, not asserted per element (an assertion costs a pipe write)
    for (int64_t i = 0; i < n; i++) {
        float v = xp[i], ge = 0.5f * v * (1.0f + erff(v * 0.70710678f));
        bad += tt_data_f32(e)[i] != expf(v);
        bad += fabsf(tt_data_f32(g)[i] - ge) > 1e-6f * (1 + fabsf(ge));
        bad += tt_data_f32(y)[i] != v + 0.5f;
        bad += tt_data_f32(m)[i] != v * wp[i];
    }
    ck_assert_int_eq(bad, 0);
    int64_t r = 601, c = 499;  // a transposed (c, r) view of an (r, c) tensor
    tt_tensor *b = tt_uniform(&rng, TT_F64, TT_SHAPE(r, c), -1, 1);
    tt_tensor *bt = tt_as_strided(b, TT_SHAPE(c, r), (int64_t[]){1, c}, 0);
    tt_tensor *sq = tt_mul(bt, bt);
    for (int64_t i = 0; i < c; i++)
        for (int64_t j = 0; j < r; j++) {
            double v = tt_get(b, (int64_t[]){j, i});
            bad += tt_get(sq, (int64_t[]){i, j}) != v * v;
        }
    ck_assert_int_eq(bad, 0);
    tt_scope_end();
}
END_TEST

// ---- gradients ----

// y = x*x + x, x used three times: dy/dx = 2x + 1 accumulates over the uses.
START_TEST(test_grad_accumulates_reuse) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(dt, TT_SHAPE(3), 1, -2, 0.5));
    tt_tensor *y = tt_add(tt_mul(x, x), x);
    ck_assert_values(y, 0, 0, 2, 2, 0.75);
    backward_ones(y);
    ck_assert_values(tt_grad(x), 0, 0, 3, -3, 2);
    backward_ones(tt_add(tt_mul(x, x), x));  // a second graph adds to .grad
    ck_assert_values(tt_grad(x), 0, 0, 6, -6, 4);
    tt_scope_end();
}
END_TEST

// Broadcast operands get gradients summed over the dims they were expanded along.
START_TEST(test_grad_broadcast_sums) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    tt_tensor *c = leaf(tt_test_tensor(dt, TT_SHAPE(3), 1, 2, 3));
    tt_tensor *x = leaf(tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6));
    tt_tensor *s = leaf(tt_scalar(dt, 2));
    backward_ones(tt_mul(tt_mul(c, x), s));  // y = c * x * s
    ck_assert_values(tt_grad(c), 0, 0, 10, 14, 18);        // s * (x[0] + x[1])
    ck_assert_values(tt_grad(x), 0, 0, 2, 4, 6, 2, 4, 6);  // s * c
    ck_assert_values(tt_grad(s), 0, 0, 1 + 4 + 9 + 4 + 10 + 18);
    tt_tensor *a = leaf(tt_test_tensor(dt, TT_SHAPE(2, 1), 1, 2));
    tt_tensor *b = leaf(tt_test_tensor(dt, TT_SHAPE(1, 3), 1, 2, 4));
    backward_ones(tt_div(a, b));  // (2, 3)
    ck_assert_values(tt_grad(a), 0, tol_of(dt), 1.75, 1.75);  // sum 1/b
    ck_assert_values(tt_grad(b), 0, tol_of(dt), -3, -0.75, -0.1875);  // -(1+2)/b^2
    tt_scope_end();
}
END_TEST

START_TEST(test_grad_binary_values) {
    tt_dtype dt = dtype_of(_i);
    double tol = tol_of(dt);
    tt_scope_begin();
    tt_tensor *a = leaf(tt_test_tensor(dt, TT_SHAPE(2), 2, 0.5));
    tt_tensor *b = leaf(tt_test_tensor(dt, TT_SHAPE(2), 3, -1));
    backward_ones(tt_sub(a, b));
    ck_assert_values(tt_grad(a), 0, 0, 1, 1);
    ck_assert_values(tt_grad(b), 0, 0, -1, -1);
    tt_zero_grad(a), tt_zero_grad(b);
    backward_ones(tt_pow(a, b));  // b a^(b-1), a^b ln a
    ck_assert_values(tt_grad(a), 0, tol, 12, -4);
    ck_assert_values(tt_grad(b), 0, tol, 8 * log(2.0), 2 * log(0.5));
    tt_zero_grad(a), tt_zero_grad(b);
    tt_tensor *z = leaf(tt_test_tensor(dt, TT_SHAPE(2), 0, 0));  // 0^b: no NaN
    tt_tensor *e = leaf(tt_test_tensor(dt, TT_SHAPE(2), 2, 0));
    backward_ones(tt_pow(z, e));
    ck_assert_values(tt_grad(z), 0, 0, 0, 0);
    ck_assert_values(tt_grad(e), 0, 0, 0, 0);
    tt_scope_end();
}
END_TEST

// Ties split the gradient evenly; x against itself gets all of it.
START_TEST(test_grad_max_min_ties) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    tt_tensor *a = leaf(tt_test_tensor(dt, TT_SHAPE(3), 1, 2, 3));
    tt_tensor *b = leaf(tt_test_tensor(dt, TT_SHAPE(3), 1, 0, 5));
    backward_ones(tt_maximum(a, b));
    ck_assert_values(tt_grad(a), 0, 0, 0.5, 1, 0);
    ck_assert_values(tt_grad(b), 0, 0, 0.5, 0, 1);
    tt_zero_grad(a), tt_zero_grad(b);
    backward_ones(tt_minimum(a, b));
    ck_assert_values(tt_grad(a), 0, 0, 0.5, 0, 1);
    ck_assert_values(tt_grad(b), 0, 0, 0.5, 1, 0);
    tt_zero_grad(a);
    backward_ones(tt_maximum(a, a));
    ck_assert_values(tt_grad(a), 0, 0, 1, 1, 1);
    tt_scope_end();
}
END_TEST

// relu and abs have gradient 0 at 0; pow_scalar with p == 0 has gradient 0 even at x == 0.
START_TEST(test_grad_kinks) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(dt, TT_SHAPE(3), -1, 0, 2));
    backward_ones(tt_relu(x));
    ck_assert_values(tt_grad(x), 0, 0, 0, 0, 1);
    tt_zero_grad(x);
    backward_ones(tt_abs(x));
    ck_assert_values(tt_grad(x), 0, 0, -1, 0, 1);
    tt_zero_grad(x);
    backward_ones(tt_pow_scalar(x, 0));
    ck_assert_values(tt_grad(x), 0, 0, 0, 0, 0);
    tt_zero_grad(x);
    backward_ones(tt_pow_scalar(x, 2));
    ck_assert_values(tt_grad(x), 0, 0, -2, 0, 4);
    tt_scope_end();
}
END_TEST

// ---- every elementwise row of ops.def (and the compositions): generic checks ----

typedef struct ew_case {
    const char *name;
    tt_tensor *(*f1)(tt_tensor *);              // TT_UNARY
    tt_tensor *(*fs)(tt_tensor *, double);      // TT_UNARY_S and compositions
    tt_tensor *(*f2)(tt_tensor *, tt_tensor *);  // TT_BINARY
    unsigned saves;                             // tt_op_saved_inputs (compositions: theirs)
    double s, alo, ahi, blo, bhi;               // the scalar and the input domains
} ew_case;

static tt_tensor *rsub(tt_tensor *x, double s) { return tt_rsub_scalar(s, x); }

static const ew_case grad_ops[] = {
#define TT_BINARY(ID, nm, sv, fl, a0, a1, b0, b1) \
    {.name = #nm, .f2 = tt_##nm, .saves = sv, .alo = a0, .ahi = a1, .blo = b0, .bhi = b1},
#define TT_UNARY_S(ID, nm, sv, fl, a0, a1, sc) \
    {.name = #nm, .fs = tt_##nm, .saves = sv, .s = sc, .alo = a0, .ahi = a1},
#define TT_UNARY(ID, nm, sv, fl, a0, a1) \
    {.name = #nm, .f1 = tt_##nm, .saves = sv, .alo = a0, .ahi = a1},
#include "../tensor/ops.def"
    {.name = "sub_scalar", .fs = tt_sub_scalar, .saves = 0x0, .s = 0.3, .alo = -1, .ahi = 1},
    {.name = "rsub_scalar", .fs = rsub, .saves = 0x0, .s = 2, .alo = -1, .ahi = 1},
    {.name = "pow_scalar(0.5)", .fs = tt_pow_scalar, .saves = 0x1, .s = 0.5, .alo = 0.5,
     .ahi = 2},
    {.name = "pow_scalar(-0.5)", .fs = tt_pow_scalar, .saves = 0x1, .s = -0.5, .alo = 0.5,
     .ahi = 2},
    {.name = "pow_scalar(2)", .fs = tt_pow_scalar, .saves = 0x1, .s = 2, .alo = -1, .ahi = 1},
};
#define NGRAD_OPS (int)(sizeof grad_ops / sizeof grad_ops[0])

static tt_tensor *ew_apply(const ew_case *c, tt_tensor *a, tt_tensor *b) {
    if (c->f2) return c->f2(a, b);
    if (c->fs) return c->fs(a, c->s);
    return c->f1(a);
}

// Every op's f32 forward and backward against its f64 ones (gradcheck covers f64 only), on
// the row's domain; b (binary ops) is broadcast as (3) against a (4, 3).
START_TEST(test_grad_f32_matches_f64) {
    const ew_case *c = &grad_ops[_i];
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 42 + (uint64_t)_i);
    // The f64 tensors hold exactly the f32 values.
    tt_tensor *a32 = leaf(tt_uniform(&rng, TT_F32, TT_SHAPE(4, 3), c->alo, c->ahi));
    tt_tensor *b32 = leaf(tt_uniform(&rng, TT_F32, TT_SHAPE(3), c->blo, c->bhi));
    tt_tensor *g32 = tt_uniform(&rng, TT_F32, TT_SHAPE(4, 3), -1, 1);
    tt_tensor *a64 = tt_empty(TT_F64, TT_SHAPE(4, 3)), *b64 = tt_empty(TT_F64, TT_SHAPE(3));
    tt_tensor *g64 = tt_empty(TT_F64, TT_SHAPE(4, 3));
    tt_copy_(a64, a32), tt_copy_(b64, b32), tt_copy_(g64, g32);
    leaf(a64), leaf(b64);
    tt_tensor *y64 = ew_apply(c, a64, b64), *y32 = ew_apply(c, a32, b32);
    ck_assert_int_eq(y32->dtype, TT_F32);
    for (int64_t j = 0; j < tt_numel(y64); j++) {
        double u = tt_at(y64, j), v = tt_at(y32, j);
        ck_assert_msg(fabs(u - v) <= 1e-5 * (1 + fabs(u)), "%s: y[%lld]: f32 %.9g vs f64 %.9g",
                      c->name, (long long)j, v, u);
    }
    tt_backward_with(y64, g64);
    tt_backward_with(y32, g32);
    tt_tensor *pairs[2][2] = {{a64, a32}, {b64, b32}};
    for (int k = 0; k < 2; k++) {
        tt_tensor *x64 = tt_grad(pairs[k][0]), *x32 = tt_grad(pairs[k][1]);
        ck_assert_msg((x64 == NULL) == (x32 == NULL), "%s: gradient presence differs",
                      c->name);
        ck_assert_msg((x64 != NULL) == (k == 0 || c->f2 != NULL), "%s: input %d %s a gradient",
                      c->name, k, x64 ? "has" : "lacks");
        if (!x64) continue;
        ck_assert_int_eq(x32->dtype, TT_F32);
        for (int64_t j = 0; j < tt_numel(x64); j++) {
            double u = tt_at(x64, j), v = tt_at(x32, j);
            ck_assert_msg(fabs(u - v) <= 1e-5 * (1 + fabs(u)), "%s: d input %d [%lld]: f32 "
                          "%.9g vs f64 %.9g", c->name, k, (long long)j, v, u);
        }
    }
    tt_scope_end();
}
END_TEST

// u and v hold the same values bit for bit (any NaN matches any NaN; zeros keep their sign).
static void assert_same_bits(const ew_case *c, const char *what, tt_tensor *u, tt_tensor *v) {
    ck_assert_msg(tt_same_shape(u, v), "%s: %s: shapes differ", c->name, what);
    for (int64_t j = 0; j < tt_numel(u); j++) {
        double p = tt_at(u, j), q = tt_at(v, j);
        ck_assert_msg((isnan(p) && isnan(q)) || (p == q && signbit(p) == signbit(q)),
                      "%s: %s [%lld]: %.17g vs %.17g", c->name, what, (long long)j, p, q);
    }
}

// Every row's differentiable backward gives its first-order backward's values, at the points
// where the rules decide: zeros (relu, abs, leaky_relu, elu, sign.., pow at a == 0 or
// b == 0), ties (maximum, minimum), -0.0 and NaN. f64 exactly (-0.0 equal to 0.0: the
// piecewise-constant rows give g * 0), f32 within rounding (its gelu kernel approximates).
START_TEST(test_rows_create_graph_matches) {
    const ew_case *c = &grad_ops[_i / 2];
    tt_dtype dt = _i % 2 ? TT_F32 : TT_F64;
    tt_scope_begin();
    tt_tensor *a = leaf(tt_test_tensor(dt, TT_SHAPE(2, 4), 0, -0.0, -1.5, 1, -1, 0.5, 2, NAN));
    tt_tensor *b = leaf(tt_test_tensor(dt, TT_SHAPE(2, 4), 0, 2, -1, 1, 0.5, -1, 2, 1));
    tt_rng rng;
    tt_rng_seed(&rng, 7 + (uint64_t)_i);
    tt_tensor *g = tt_uniform(&rng, dt, TT_SHAPE(2, 4), -1, 1);
    tt_tensor *y = ew_apply(c, a, b), *in[2] = {a, b}, *want[2] = {0}, *got[2] = {0};
    for (int cg = 0; cg < 2; cg++)  // the kernel's gradient, then the one written with ops
        tt_autograd_grad(1, &y, &g, c->f2 ? 2 : 1, in, cg ? got : want,
                         &(tt_grad_opts){.retain_graph = true, .create_graph = cg});
    for (int k = 0; k < (c->f2 ? 2 : 1); k++) {
        ck_assert_msg(got[k] != NULL, "%s: input %d: no gradient", c->name, k);
        for (int64_t j = 0; j < 8; j++) {
            double p = tt_at(want[k], j), q = tt_at(got[k], j);
            bool same = (isnan(p) && isnan(q)) || p == q ||
                        (dt == TT_F32 && fabs(p - q) <= 1e-6 * (1 + fabs(p)));
            ck_assert_msg(same, "%s %s: d input %d [%lld]: create_graph %.17g vs %.17g",
                          c->name, tt_dtype_name(dt), k, (long long)j, q, p);
        }
    }
    tt_scope_end();
}
END_TEST

// A leaf (4, 3) view with unit stride nowhere: every 2nd column of a (4, 6), or the transpose
// of a (3, 4) (layout 1).
static tt_tensor *odd_view(tt_rng *rng, tt_dtype dt, int layout, int64_t rows, double lo,
                           double hi) {
    tt_tensor *base = layout == 0 ? tt_uniform(rng, dt, TT_SHAPE(rows, 6), lo, hi)
                                  : tt_uniform(rng, dt, TT_SHAPE(3, rows), lo, hi);
    tt_tensor *v = layout == 0 ? tt_slice(base, 1, 0, 6, 2) : tt_transpose(base, 0, 1);
    return leaf(tt_detach(v));
}

// Strided and transposed inputs give the same bits as their contiguous copies, forward and
// backward, in f32 and f64 (the kernels' strided loops against their unit-stride loops).
START_TEST(test_rows_strided_match_contiguous) {
    const ew_case *c = &grad_ops[_i / 4];
    tt_dtype dt = dtype_of(_i % 2);
    int layout = (_i / 2) % 2;
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 7 + (uint64_t)_i);
    tt_tensor *a = odd_view(&rng, dt, layout, 4, c->alo, c->ahi);
    tt_tensor *b = odd_view(&rng, dt, layout, 4, c->blo, c->bhi);
    tt_tensor *ac = leaf(tt_detach(tt_clone(a))), *bc = leaf(tt_detach(tt_clone(b)));
    ck_assert(!tt_is_contiguous(a) && tt_is_contiguous(ac));
    tt_tensor *g = tt_uniform(&rng, dt, TT_SHAPE(4, 3), -1, 1);
    tt_tensor *y = ew_apply(c, a, b), *yc = ew_apply(c, ac, bc);
    assert_same_bits(c, "forward", y, yc);
    tt_backward_with(y, g);
    tt_backward_with(yc, g);
    assert_same_bits(c, "d a", tt_grad(a), tt_grad(ac));
    if (c->f2) assert_same_bits(c, "d b", tt_grad(b), tt_grad(bc));
    tt_scope_end();
}
END_TEST

// The saves column is right: overwriting (without the version counter seeing it) an input
// whose bit is clear, after the op and before backward, leaves the gradients bit for bit.
START_TEST(test_rows_saves_mask) {
    const ew_case *c = &grad_ops[_i];
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 11 + (uint64_t)_i);
    tt_tensor *in[2][2], *grads[2][2] = {{NULL, NULL}, {NULL, NULL}};
    for (int run = 0; run < 2; run++) {
        tt_rng_seed(&rng, 11 + (uint64_t)_i);
        in[run][0] = leaf(tt_uniform(&rng, TT_F64, TT_SHAPE(2, 3), c->alo, c->ahi));
        in[run][1] = leaf(tt_uniform(&rng, TT_F64, TT_SHAPE(2, 3), c->blo, c->bhi));
        tt_tensor *y = ew_apply(c, in[run][0], in[run][1]);
        if (run == 1)  // clobber the inputs the backward must not read
            for (int k = 0; k < 2; k++)
                if (!(c->saves >> k & 1))
                    for (int64_t j = 0; j < 6; j++) tt_data_f64(in[run][k])[j] = 7.25 + j;
        tt_backward_with(y, tt_full(TT_F64, TT_SHAPE(2, 3), 0.5));
        for (int k = 0; k < 2; k++) grads[run][k] = tt_grad(in[run][k]);
    }
    assert_same_bits(c, "d a", grads[0][0], grads[1][0]);
    if (c->f2) assert_same_bits(c, "d b", grads[0][1], grads[1][1]);
    tt_scope_end();
}
END_TEST

// The mask is the one of the op's row.
START_TEST(test_saved_inputs_of_rows) {
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_ADD), 0);
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_MUL), 0x3);
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_EXP), 0);
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_LOG), 0x1);
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_MATMUL), 0x3);
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_RESHAPE), 0);
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_ATTENTION), 0xF);  // q, k, v and the mask
    ck_assert_uint_eq(tt_op_saved_inputs(TT_OP_ARGMAX), 0);
}
END_TEST

// ---- edges, against PyTorch 1.13 (tests/reference/edge_elementwise.py printed the values) --

// Like ck_assert_values, but a NaN must be NaN, an infinity that infinity, and a zero of the
// expected sign; other values within atol.
static void assert_edge(tt_tensor *t, const double *e, int n, double atol, const char *what) {
    ck_assert_int_eq(tt_numel(t), n);
    for (int i = 0; i < n; i++) {
        double v = tt_at(t, i);
        bool ok = isnan(e[i]) ? isnan(v)
                  : e[i] == 0 && atol == 0 ? v == 0 && signbit(v) == signbit(e[i])
                  : isinf(e[i]) ? v == e[i] : fabs(v - e[i]) <= atol;
        ck_assert_msg(ok, "%s %s [%d]: %.9g, PyTorch %.9g", what,
                      tt_dtype_name(t->dtype), i, v, e[i]);
    }
}
#define EDGE(t, atol, what, ...) \
    assert_edge((t), (const double[]){__VA_ARGS__}, \
                (int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), (atol), (what))

// maximum / minimum at NaN: the result is NaN and both sides get g (PyTorch's where(a == b,
// g / 2, g) masked where the other side wins); ties still split.
START_TEST(test_edge_maximum_minimum_nan) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    for (int k = 0; k < 2; k++) {
        tt_tensor *a = leaf(tt_test_tensor(dt, TT_SHAPE(5), NAN, 1, NAN, 2, 1));
        tt_tensor *b = leaf(tt_test_tensor(dt, TT_SHAPE(5), 0, NAN, NAN, 1, 1));
        tt_tensor *y = k == 0 ? tt_maximum(a, b) : tt_minimum(a, b);
        backward_ones(y);
        if (k == 0) {
            EDGE(y, 0, "maximum", NAN, NAN, NAN, 2, 1);
            EDGE(tt_grad(a), 0, "maximum d a", 1, 1, 1, 1, 0.5);
            EDGE(tt_grad(b), 0, "maximum d b", 1, 1, 1, 0, 0.5);
        } else {
            EDGE(y, 0, "minimum", NAN, NAN, NAN, 1, 1);
            EDGE(tt_grad(a), 0, "minimum d a", 1, 1, 1, 0, 0.5);
            EDGE(tt_grad(b), 0, "minimum d b", 1, 1, 1, 1, 0.5);
        }
    }
    tt_scope_end();
}
END_TEST

// relu passes g at NaN (PyTorch's threshold_backward: 0 where x <= 0, else g).
START_TEST(test_edge_relu_nan) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(dt, TT_SHAPE(4), NAN, -1, 0, 2));
    tt_tensor *y = tt_relu(x);
    backward_ones(y);
    EDGE(y, 0, "relu", NAN, 0, 0, 2);
    EDGE(tt_grad(x), 0, "relu d x", 1, 0, 0, 1);
    tt_scope_end();
}
END_TEST

// pow_scalar at +0.0, -0.0 and a negative base: sqrt and 1 / sqrt at exponents +-0.5 (so
// -0.0 gives -0.0 and -inf), x * x at 2, libm's pow elsewhere.
START_TEST(test_edge_pow_scalar_zeros) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    const double p[4] = {0.5, -0.5, 2, 3};
    const double fwd[4][4] = {{0, -0.0, NAN, 2}, {INFINITY, -INFINITY, NAN, 0.5},
                              {0, 0, 4, 16}, {0, -0.0, -8, 64}};
    const double grad[4][4] = {{INFINITY, -INFINITY, NAN, 0.25},
                               {-INFINITY, -INFINITY, NAN, -0.0625},
                               {0, -0.0, -4, 8}, {0, 0, 12, 48}};
    for (int k = 0; k < 4; k++) {
        tt_tensor *x = leaf(tt_test_tensor(dt, TT_SHAPE(4), 0.0, -0.0, -2, 4));
        tt_tensor *y = tt_pow_scalar(x, p[k]);
        backward_ones(y);
        char what[32];
        snprintf(what, sizeof what, "pow_scalar(%g)", p[k]);
        assert_edge(y, fwd[k], 4, 0, what);
        assert_edge(tt_grad(x), grad[k], 4, 0, what);
    }
    // At exponent 0.5 the forward is sqrt, bit for bit.
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_tensor *u = tt_uniform(&rng, dt, TT_SHAPE(257), 0, 100);
    tt_tensor *s = tt_sqrt(u), *q = tt_pow_scalar(u, 0.5);
    for (int64_t j = 0; j < 257; j++) ck_assert(tt_at(s, j) == tt_at(q, j));
    tt_scope_end();
}
END_TEST

// gelu and gelu_tanh at +-inf: forward inf and NaN (x * Phi(x) at -inf is -inf * 0), and the
// gradient NaN at both, as in PyTorch 1.13 (f32 gave +-inf). Large finite inputs saturate.
START_TEST(test_edge_gelu_inf) {
    tt_dtype dt = dtype_of(_i);
    tt_scope_begin();
    for (int k = 0; k < 2; k++) {
        tt_tensor *x = leaf(tt_test_tensor(dt, TT_SHAPE(5), INFINITY, -INFINITY, 1e4, -1e4,
                                           NAN));
        tt_tensor *y = k == 0 ? tt_gelu(x) : tt_gelu_tanh(x);
        backward_ones(y);
        const char *what = k == 0 ? "gelu" : "gelu_tanh";
        EDGE(y, 1e-30, what, INFINITY, NAN, 1e4, 0, NAN);
        EDGE(tt_grad(x), 1e-30, what, NAN, NAN, 1, 0, NAN);
    }
    tt_scope_end();
}
END_TEST

// Outside any scope the caller owns every result and may release an intermediate (here
// exp's output, whose alias its node saved) before backward: the graph keeps what it needs
// and frees it all at the end.
START_TEST(test_release_before_backward) {
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 0, 1));
    tt_tensor *y = tt_exp(x);
    tt_tensor *z = tt_mul_scalar(y, 2);
    tt_release(y);
    tt_scope_begin();
    tt_backward_with(z, tt_ones(TT_F64, TT_SHAPE(2)));
    tt_scope_end();
    ck_assert_values(tt_grad(x), 0, 1e-12, 2, 2 * exp(1.0));
    tt_release(z);
    tt_release(x);
}
END_TEST

// Nothing is recorded when grad mode is off or no input requires grad.
START_TEST(test_no_record) {
    tt_scope_begin();
    tt_tensor *x = leaf(tt_test_tensor(TT_F32, TT_SHAPE(2), 1, 2));
    tt_tensor *c = tt_test_tensor(TT_F32, TT_SHAPE(2), 3, 4);
    ck_assert(tt_mul(x, c)->requires_grad);
    ck_assert(tt_exp(x)->requires_grad);
    ck_assert(!tt_mul(c, c)->requires_grad);
    ck_assert_ptr_null(tt_exp(c)->node);
    bool prev = tt_set_grad_enabled(false);
    tt_tensor *y = tt_mul(x, c), *e = tt_exp(x);
    ck_assert(!y->requires_grad && !e->requires_grad);
    ck_assert_ptr_null(y->node);
    ck_assert_ptr_null(e->node);
    tt_set_grad_enabled(prev);
    tt_scope_end();
}
END_TEST

// ---- misuse aborts ----

START_TEST(test_abort_not_broadcastable) {
    tt_expect_abort("tt_add: shapes (2, 3) and (4,) do not broadcast: dim -1 is 3 vs 4");
    tt_scope_begin();
    tt_add(tt_zeros(TT_F32, TT_SHAPE(2, 3)), tt_zeros(TT_F32, TT_SHAPE(4)));
}
END_TEST

START_TEST(test_abort_not_broadcastable_inner) {
    tt_expect_abort("tt_mul: shapes (2, 3, 4) and (5, 1, 4) do not broadcast: dim -3 is 2 vs 5");
    tt_scope_begin();
    tt_mul(tt_zeros(TT_F64, TT_SHAPE(2, 3, 4)), tt_zeros(TT_F64, TT_SHAPE(5, 1, 4)));
}
END_TEST

START_TEST(test_abort_mixed_dtypes) {
    tt_expect_abort("tt_mul: dtypes differ: (2,) f32 vs (2,) f64");
    tt_scope_begin();
    tt_mul(tt_zeros(TT_F32, TT_SHAPE(2)), tt_zeros(TT_F64, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_integer_unary) {
    tt_expect_abort("tt_exp: tensor (2,) is i64; this op needs f32 or f64");
    tt_scope_begin();
    tt_exp(tt_zeros(TT_I64, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_integer_binary) {
    tt_expect_abort("tt_add: tensor (2,) is i32; this op needs f32 or f64");
    tt_scope_begin();
    tt_add(tt_zeros(TT_I32, TT_SHAPE(2)), tt_zeros(TT_I32, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_integer_scalar_op) {
    tt_expect_abort("tt_mul_scalar: tensor (2,) is i32; this op needs f32 or f64");
    tt_scope_begin();
    tt_mul_scalar(tt_zeros(TT_I32, TT_SHAPE(2)), 2);
}
END_TEST

START_TEST(test_abort_null_input) {
    tt_expect_abort("tt_sigmoid: input tensor is NULL");
    tt_scope_begin();
    tt_sigmoid(NULL);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_elementwise");
    TCase *fwd = tt_tcase("forward");
    tcase_add_loop_test(fwd, test_binary_values, 0, 2);
    tcase_add_loop_test(fwd, test_scalar_values, 0, 2);
    tcase_add_test(fwd, test_div_scalar_true_division);
    tcase_add_loop_test(fwd, test_unary_values, 0, 2);
    tcase_add_loop_test(fwd, test_extreme_inputs, 0, 2);
    tcase_add_test(fwd, test_gelu_f32_accuracy);
    suite_add_tcase(s, fwd);

    TCase *bc = tt_tcase("broadcast_and_views");
    tcase_add_loop_test(bc, test_broadcast_b1c_1t1, 0, 2);
    tcase_add_loop_test(bc, test_broadcast_c_btc_and_scalar, 0, 2);
    tcase_add_loop_test(bc, test_noncontiguous_inputs, 0, 2);
    tcase_add_test(bc, test_large_tensors);
    suite_add_tcase(s, bc);

    TCase *rows = tt_tcase("rows");  // every elementwise row of ops.def
    tcase_add_loop_test(rows, test_rows_strided_match_contiguous, 0, 4 * NGRAD_OPS);
    tcase_add_loop_test(rows, test_rows_saves_mask, 0, NGRAD_OPS);
    tcase_add_test(rows, test_saved_inputs_of_rows);
    tcase_add_loop_test(rows, test_rows_create_graph_matches, 0, 2 * NGRAD_OPS);
    suite_add_tcase(s, rows);

    TCase *edge = tt_tcase("edges_pytorch");
    tcase_add_loop_test(edge, test_edge_maximum_minimum_nan, 0, 2);
    tcase_add_loop_test(edge, test_edge_relu_nan, 0, 2);
    tcase_add_loop_test(edge, test_edge_pow_scalar_zeros, 0, 2);
    tcase_add_loop_test(edge, test_edge_gelu_inf, 0, 2);
    suite_add_tcase(s, edge);

    TCase *grad = tt_tcase("gradients");
    tcase_add_loop_test(grad, test_grad_accumulates_reuse, 0, 2);
    tcase_add_loop_test(grad, test_grad_broadcast_sums, 0, 2);
    tcase_add_loop_test(grad, test_grad_binary_values, 0, 2);
    tcase_add_loop_test(grad, test_grad_max_min_ties, 0, 2);
    tcase_add_loop_test(grad, test_grad_kinks, 0, 2);
    tcase_add_loop_test(grad, test_grad_f32_matches_f64, 0, NGRAD_OPS);
    tcase_add_test(grad, test_release_before_backward);
    tcase_add_test(grad, test_no_record);
    suite_add_tcase(s, grad);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_not_broadcastable, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_not_broadcastable_inner, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_mixed_dtypes, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_integer_unary, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_integer_binary, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_integer_scalar_op, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_null_input, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

// The elementwise ops: hand-computed forward values in f32 and f64, broadcasting, views,
// gradients (accumulation, broadcast sums, ties, kinks, f32 against f64), numerically
// extreme inputs, the parallel path on large tensors, and the misuse aborts.
#include "test_util.h"

#include <signal.h>

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
    tt_tensor *p = tt_test_tensor(dt, TT_SHAPE(3), 0.25, 1, 4);
    ck_assert_values(tt_log(p), tol, tol, -1.38629436112, 0, 1.38629436112);
    ck_assert_values(tt_sqrt(p), 0, tol, 0.5, 1, 2);
    ck_assert_values(tt_rsqrt(p), 0, tol, 2, 1, 0.5);
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

// Every op's f32 backward against its f64 backward (gradcheck covers f64 only).
typedef tt_tensor *(*op2_fn)(tt_tensor *, tt_tensor *);
static tt_tensor *op_add_s(tt_tensor *a, tt_tensor *b) { (void)b; return tt_add_scalar(a, 0.3); }
static tt_tensor *op_sub_s(tt_tensor *a, tt_tensor *b) { (void)b; return tt_sub_scalar(a, 0.3); }
static tt_tensor *op_mul_s(tt_tensor *a, tt_tensor *b) { (void)b; return tt_mul_scalar(a, -1.7); }
static tt_tensor *op_div_s(tt_tensor *a, tt_tensor *b) { (void)b; return tt_div_scalar(a, 3); }
static tt_tensor *op_rsub_s(tt_tensor *a, tt_tensor *b) { (void)b; return tt_rsub_scalar(2, a); }
static tt_tensor *op_pow_s(tt_tensor *a, tt_tensor *b) { (void)b; return tt_pow_scalar(a, 1.5); }
#define UNARY_AS_OP2(name) \
    static tt_tensor *op_##name(tt_tensor *a, tt_tensor *b) { (void)b; return tt_##name(a); }
UNARY_AS_OP2(neg)
UNARY_AS_OP2(exp)
UNARY_AS_OP2(log)
UNARY_AS_OP2(sqrt)
UNARY_AS_OP2(rsqrt)
UNARY_AS_OP2(abs)
UNARY_AS_OP2(tanh)
UNARY_AS_OP2(sigmoid)
UNARY_AS_OP2(relu)
UNARY_AS_OP2(gelu)
UNARY_AS_OP2(gelu_tanh)
UNARY_AS_OP2(silu)
UNARY_AS_OP2(square)

static const struct {
    const char *name;
    op2_fn f;
} grad_ops[] = {
    {"add", tt_add}, {"sub", tt_sub}, {"mul", tt_mul}, {"div", tt_div}, {"pow", tt_pow},
    {"maximum", tt_maximum}, {"minimum", tt_minimum}, {"add_scalar", op_add_s},
    {"sub_scalar", op_sub_s}, {"mul_scalar", op_mul_s}, {"div_scalar", op_div_s},
    {"rsub_scalar", op_rsub_s}, {"pow_scalar", op_pow_s}, {"neg", op_neg}, {"exp", op_exp},
    {"log", op_log}, {"sqrt", op_sqrt}, {"rsqrt", op_rsqrt}, {"abs", op_abs},
    {"tanh", op_tanh}, {"sigmoid", op_sigmoid}, {"relu", op_relu}, {"gelu", op_gelu},
    {"gelu_tanh", op_gelu_tanh}, {"silu", op_silu}, {"square", op_square},
};
#define NGRAD_OPS (int)(sizeof grad_ops / sizeof grad_ops[0])

START_TEST(test_grad_f32_matches_f64) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 42 + (uint64_t)_i);
    // a in [0.5, 2] (the domain of log, sqrt, pow), b broadcast as (3) against (4, 3).
    // The f64 tensors hold exactly the f32 values.
    tt_tensor *a32 = leaf(tt_uniform(&rng, TT_F32, TT_SHAPE(4, 3), 0.5, 2));
    tt_tensor *b32 = leaf(tt_uniform(&rng, TT_F32, TT_SHAPE(3), 0.5, 2));
    tt_tensor *g32 = tt_uniform(&rng, TT_F32, TT_SHAPE(4, 3), -1, 1);
    tt_tensor *a64 = tt_empty(TT_F64, TT_SHAPE(4, 3)), *b64 = tt_empty(TT_F64, TT_SHAPE(3));
    tt_tensor *g64 = tt_empty(TT_F64, TT_SHAPE(4, 3));
    tt_copy_(a64, a32), tt_copy_(b64, b32), tt_copy_(g64, g32);
    leaf(a64), leaf(b64);
    op2_fn f = grad_ops[_i].f;
    tt_backward_with(f(a64, b64), g64);
    tt_backward_with(f(a32, b32), g32);
    tt_tensor *pairs[2][2] = {{a64, a32}, {b64, b32}};
    for (int k = 0; k < 2; k++) {
        tt_tensor *x64 = tt_grad(pairs[k][0]), *x32 = tt_grad(pairs[k][1]);
        ck_assert_msg((x64 == NULL) == (x32 == NULL), "%s: gradient presence differs",
                      grad_ops[_i].name);
        if (!x64) continue;
        ck_assert_int_eq(x32->dtype, TT_F32);
        for (int64_t j = 0; j < tt_numel(x64); j++) {
            double u = tt_at(x64, j), v = tt_at(x32, j);
            ck_assert_msg(fabs(u - v) <= 1e-5 * (1 + fabs(u)), "%s: d input %d [%lld]: f32 "
                          "%.9g vs f64 %.9g", grad_ops[_i].name, k, (long long)j, v, u);
        }
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
    suite_add_tcase(s, fwd);

    TCase *bc = tt_tcase("broadcast_and_views");
    tcase_add_loop_test(bc, test_broadcast_b1c_1t1, 0, 2);
    tcase_add_loop_test(bc, test_broadcast_c_btc_and_scalar, 0, 2);
    tcase_add_loop_test(bc, test_noncontiguous_inputs, 0, 2);
    tcase_add_test(bc, test_large_tensors);
    suite_add_tcase(s, bc);

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

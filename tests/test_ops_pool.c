// Check suite of the pooling ops and batch norm (autograd/ops_pool.c): values, indices and
// backward values against PyTorch 1.13 (tests/reference/pool_values.py printed them), f32
// against f64, running-stat updates, the abort paths. Gradients: gc_ops_pool.c.
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <signal.h>

// ---- helpers ----

// (i * 7) % 11 - 5 for i = 0 .. 39 as (1, 2, 5, 4): many ties; pool_values.py's x.
static tt_tensor *x_ties(tt_dtype dtype) {
    tt_tensor *x = tt_empty(dtype, TT_SHAPE(1, 2, 5, 4));
    for (int64_t i = 0; i < 40; i++) tt_set_at(x, i, (double)(i * 7 % 11 - 5));
    return x;
}

// (i * 5) % 13 / 4 - 1 for i = 0 .. 23 as (2, 3, 2, 2); pool_values.py's b.
static tt_tensor *x_bn(void) {
    tt_tensor *x = tt_empty(TT_F64, TT_SHAPE(2, 3, 2, 2));
    for (int64_t i = 0; i < 24; i++) tt_set_at(x, i, (double)(i * 5 % 13) / 4 - 1);
    return x;
}

static void assert_shape(const tt_tensor *t, int ndim, const int64_t *shape) {
    ck_assert_int_eq(t->ndim, ndim);
    for (int i = 0; i < ndim; i++) ck_assert_int_eq(t->shape[i], shape[i]);
}

static const int64_t K32[2] = {3, 2}, S21[2] = {2, 1}, P11[2] = {1, 1};
static const int64_t K3[2] = {3, 3}, S2[2] = {2, 2};

// ---- max_pool2d ----

START_TEST(test_max_pool2d_values_indices_grad) {
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(x_ties(TT_F64), true);
    tt_tensor *idx;
    tt_tensor *y = tt_max_pool2d(x, K32, S21, P11, &idx);
    assert_shape(y, TT_SHAPE(1, 2, 3, 5));
    ck_assert_int_eq(idx->dtype, TT_I64);
    ck_assert_values(y, 0, 0, 1, 2, 4, 5, 5, 2, 3, 5, 5, 1, 2, 4, 5, 5, 1, 3, 5, 5, 2, 2, 4, 5,
                     5, 3, 3, 5, 5, 2, 4, 4);
    // ties go to the first maximum in row-major order, as PyTorch's
    ck_assert_values(idx, 0, 0, 4, 1, 6, 3, 3, 12, 9, 14, 14, 15, 12, 17, 14, 14, 15, 0, 5, 5,
                     3, 3, 8, 5, 5, 11, 11, 16, 16, 14, 19, 19);
    tt_backward(tt_sum(y, 0, NULL, false));
    ck_assert_values(tt_grad(x), 0, 0, 0, 1, 0, 2, 1, 0, 1, 0, 0, 1, 0, 0, 2, 0, 4, 2, 0, 1, 0,
                     0, 1, 0, 0, 2, 0, 4, 0, 0, 1, 0, 0, 2, 0, 0, 1, 0, 2, 0, 0, 2);
    // stride NULL: the kernel; padding NULL: 0
    ck_assert_values(tt_max_pool2d(x, (int64_t[]){2, 2}, NULL, NULL, NULL), 0, 0, 2, 5, 3, 5,
                     5, 2, 4, 3);
    // f32 gives the same values and indices
    tt_tensor *idx32;
    tt_tensor *y32 = tt_max_pool2d(x_ties(TT_F32), K32, S21, P11, &idx32);
    ck_assert_int_eq(y32->dtype, TT_F32);
    for (int64_t i = 0; i < 30; i++) {
        ck_assert_double_eq(tt_at(y32, i), tt_at(y, i));
        ck_assert_double_eq(tt_at(idx32, i), tt_at(idx, i));
    }
    tt_scope_end();
}
END_TEST

// nn.MaxPool2d(2)'s unrolled 2 x 2 path against a plain row-major scan with PyTorch's rule (v >
// best or v is NaN; the first maximum wins): odd and even sizes, many ties (values in 0 .. 3),
// planes with a NaN (the NaN-aware loop), f32 and f64, on enough planes to run in parallel.
// dx: g at each window's index, 0 elsewhere.
START_TEST(test_max_pool2d_2x2_scan) {
    static const int64_t sizes[][2] = {{28, 28}, {7, 9}, {10, 5}};
    for (int s = 0; s < 3; s++)
        for (int d = 0; d < 2; d++) {
            tt_dtype dt = d ? TT_F64 : TT_F32;
            int64_t P = 96, H = sizes[s][0], W = sizes[s][1], OH = H / 2, OW = W / 2;
            tt_scope_begin();
            tt_tensor *x = tt_empty(dt, TT_SHAPE(2, P / 2, H, W));
            for (int64_t i = 0; i < P * H * W; i++) tt_set_at(x, i, (double)(i * 7919 % 13 % 4));
            for (int64_t p = 5; p < P; p += 17) tt_set_at(x, p * H * W + (p % H) * W + p % W, NAN);
            tt_set_requires_grad(x, true);
            tt_tensor *idx;
            tt_tensor *y = tt_max_pool2d(x, (int64_t[]){2, 2}, NULL, NULL, &idx);
            tt_tensor *gy = tt_empty(dt, 4, y->shape);
            for (int64_t k = 0; k < P * OH * OW; k++) tt_set_at(gy, k, (double)(k % 9) - 4);
            tt_backward_with(y, gy);
            double *want = calloc((size_t)(P * H * W), sizeof *want);
            const int64_t *ip = tt_data(idx);
            for (int64_t p = 0; p < P; p++)
                for (int64_t i = 0; i < OH; i++)
                    for (int64_t j = 0; j < OW; j++) {
                        double best = -INFINITY;
                        int64_t at = -1;
                        for (int64_t h = 2 * i; h < 2 * i + 2; h++)
                            for (int64_t w = 2 * j; w < 2 * j + 2; w++) {
                                double v = tt_at(x, p * H * W + h * W + w);
                                if (at < 0 || v > best || isnan(v)) best = v, at = h * W + w;
                            }
                        int64_t k = (p * OH + i) * OW + j;
                        ck_assert_int_eq(ip[k], at);
                        double got = tt_at(y, k);
                        ck_assert(isnan(best) ? isnan(got) : got == best);
                        want[p * H * W + at] += tt_at(gy, k);
                    }
            for (int64_t e = 0; e < P * H * W; e++) ck_assert(tt_at(tt_grad(x), e) == want[e]);
            free(want);
            tt_scope_end();
        }
}
END_TEST

// A NaN propagates (as PyTorch's); a window of -inf gives -inf.
START_TEST(test_max_pool2d_nan_inf) {
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F64, TT_SHAPE(1, 2, 2), 1, NAN, 3, -INFINITY);
    tt_tensor *idx;
    tt_tensor *y = tt_max_pool2d(x, (int64_t[]){1, 2}, NULL, NULL, &idx);
    ck_assert(isnan(tt_at(y, 0)));
    ck_assert_double_eq(tt_at(idx, 0), 1);
    ck_assert_double_eq(tt_at(y, 1), 3);
    tt_tensor *m = tt_test_tensor(TT_F64, TT_SHAPE(1, 1, 2), -INFINITY, -INFINITY);
    ck_assert_double_eq(tt_at(tt_max_pool2d(m, (int64_t[]){1, 2}, NULL, NULL, NULL), 0),
                        -INFINITY);
    tt_scope_end();
}
END_TEST

// ---- avg_pool2d, adaptive_avg_pool2d ----

START_TEST(test_avg_pool2d_values_grad) {
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(x_ties(TT_F64), true);
    tt_tensor *inc = tt_avg_pool2d(x, K3, S2, P11, true);
    assert_shape(inc, TT_SHAPE(1, 2, 3, 2));
    ck_assert_values(inc, 1e-15, 0, -5.0 / 9, 6.0 / 9, -3.0 / 9, 2.0 / 9, 1.0 / 9, 4.0 / 9,
                     5.0 / 9, -1.0 / 9, 1.0 / 9, -3.0 / 9, 0, -3.0 / 9);
    tt_tensor *exc = tt_avg_pool2d(x, K3, S2, P11, false);
    ck_assert_values(exc, 1e-15, 0, -1.25, 1, -0.5, 2.0 / 9, 0.25, 4.0 / 6, 1.25, -1.0 / 6,
                     1.0 / 6, -1.0 / 3, 0, -0.5);
    tt_backward(tt_sum(exc, 0, NULL, false));
    const double q = 0.25, f = 0.41666666666666663, s = 1.0 / 6, t = 0.2777777777777778,
                 n = 0.1111111111111111, e = 0.6944444444444444;
    const double plane[20] = {q, f, s, s, f, e, t, t, s, t, n, n, f, e, t, t, q, f, s, s};
    double expect[40];
    for (int i = 0; i < 40; i++) expect[i] = plane[i % 20];
    tt_assert_values(tt_grad(x), expect, 40, 1e-15, 0, __FILE__, __LINE__);
    tt_tensor *y32 = tt_avg_pool2d(x_ties(TT_F32), K3, S2, P11, false);
    for (int64_t i = 0; i < 12; i++) ck_assert_close(tt_at(y32, i), tt_at(exc, i), 1e-7, 0);
    tt_scope_end();
}
END_TEST

START_TEST(test_adaptive_avg_pool2d_values_grad) {
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(x_ties(TT_F64), true);
    tt_tensor *y = tt_adaptive_avg_pool2d(x, 3, 3);
    assert_shape(y, TT_SHAPE(1, 2, 3, 3));
    ck_assert_values(y, 1e-15, 0, -1.25, 0.25, 1.75, -0.5, 1, 4.0 / 6, 0.25, 1.75, 0.5, 1.25, 0,
                     -1.25, 1.0 / 6, -1.0 / 6, -0.5, 0, -1.25, 0.25);
    tt_backward(tt_sum(y, 0, NULL, false));
    const double q = 0.25, h = 0.5, f = 0.41666666666666663, e = 0.8333333333333333,
                 s = 1.0 / 6, t = 1.0 / 3;
    const double plane[20] = {q, h, h, q, f, e, e, f, s, t, t, s, f, e, e, f, q, h, h, q};
    double expect[40];
    for (int i = 0; i < 40; i++) expect[i] = plane[i % 20];
    tt_assert_values(tt_grad(x), expect, 40, 1e-15, 0, __FILE__, __LINE__);
    // (C, H, W) input; a global average
    tt_tensor *g = tt_adaptive_avg_pool2d(tt_test_tensor(TT_F64, TT_SHAPE(1, 2, 2), 1, 2, 3, 6),
                                          1, 1);
    assert_shape(g, TT_SHAPE(1, 1, 1));
    ck_assert_values(g, 0, 0, 3);
    tt_scope_end();
}
END_TEST

// ---- batch_norm ----

START_TEST(test_batch_norm_train_eval) {
    tt_scope_begin();
    tt_tensor *x = x_bn();
    tt_tensor *w = tt_test_tensor(TT_F64, TT_SHAPE(3), 1, 2, 0.5);
    tt_tensor *b = tt_test_tensor(TT_F64, TT_SHAPE(3), 0, 1, -1);
    tt_tensor *rm = tt_test_tensor(TT_F64, TT_SHAPE(3), 0.5, -0.5, 0);
    tt_tensor *rv = tt_test_tensor(TT_F64, TT_SHAPE(3), 1, 2, 0.5);
    tt_tensor *y = tt_batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5);
    assert_shape(y, TT_SHAPE(2, 3, 2, 2));
    ck_assert_values(y, 1e-14, 0, -1.3018820487722074, 0.0, 1.3018820487722074,
                     -0.7811292292633245, 0.9281583538060817, 3.8018242015628156,
                     -0.7960411548479587, 2.0776246929087754, -1.6509410243861036, -1.0,
                     -0.3490589756138962, -1.3905646146316621, 0.7811292292633245,
                     -1.3018820487722074, 0.0, 1.3018820487722074, -1.9455074939506523,
                     0.9281583538060817, 3.8018242015628156, -0.7960411548479587,
                     -0.6094353853683377, -1.6509410243861036, -1.0, -0.3490589756138962);
    ck_assert_values(rm, 1e-15, 0, 0.47500000000000003, -0.371875, 0.05);
    ck_assert_values(rv, 1e-15, 0, 1.0053571428571428, 1.8864955357142859, 0.5553571428571429);
    tt_tensor *ye = tt_batch_norm(x, rm, rv, w, b, false, 0.1, 1e-5);
    ck_assert_values(ye, 1e-14, 0, -1.4710575946534998, -0.22439861613358478,
                     1.0222603623863304, -0.9723940032455338, 2.633598868610731,
                     4.453764738929094, 1.541499346419713, 3.3616652167380767,
                     -1.5367473393313131, -0.6980796216261363, 0.1405880960790405,
                     -1.2012802522492425, 0.5235967709783643, -1.4710575946534998,
                     -0.22439861613358478, 1.0222603623863304, 0.8134329982923677,
                     2.633598868610731, 4.453764738929094, 1.541499346419713,
                     -0.19487899100303024, -1.5367473393313131, -0.6980796216261363,
                     0.1405880960790405);
    ck_assert_values(rm, 1e-15, 0, 0.47500000000000003, -0.371875, 0.05);  // eval: unchanged
    tt_scope_end();
}
END_TEST

// (N, C) from a strided view, no affine, other momentum and eps; NULL running stats in training.
START_TEST(test_batch_norm_nc) {
    tt_scope_begin();
    tt_tensor *x = tt_slice(tt_reshape(x_bn(), TT_SHAPE(4, 6)), 1, 0, 3, 1);
    tt_tensor *rm = tt_zeros(TT_F64, TT_SHAPE(3)), *rv = tt_ones(TT_F64, TT_SHAPE(3));
    tt_tensor *y = tt_batch_norm(x, rm, rv, NULL, NULL, true, 0.2, 1e-3);
    ck_assert_values(y, 1e-14, 0, -1.3411044519645503, 0.15605201268913146, 1.052130406262357,
                     -0.4470348173215168, 1.404468114202183, -1.4729825687673,
                     0.4470348173215168, -1.404468114202183, -0.35071013542078566,
                     1.3411044519645503, -0.15605201268913146, 0.7715622979257285);
    ck_assert_values(rm, 1e-15, 0, 0.1, 0.025, 0.1125);
    ck_assert_values(rv, 1e-15, 0, 1.1333333333333333, 0.9708333333333334, 1.0114583333333333);
    tt_tensor *y2 = tt_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.2, 1e-3);
    for (int64_t i = 0; i < 12; i++) ck_assert_double_eq(tt_at(y2, i), tt_at(y, i));
    tt_scope_end();
}
END_TEST

// ---- aborts ----

START_TEST(test_max_pool2d_padding_aborts) {
    tt_expect_abort("pad should be at most half of kernel size");
    tt_max_pool2d(tt_zeros(TT_F64, TT_SHAPE(1, 1, 4, 4)), (int64_t[]){3, 3}, NULL,
                  (int64_t[]){2, 1}, NULL);
}
END_TEST

START_TEST(test_avg_pool2d_2d_aborts) {
    tt_expect_abort("tt_avg_pool2d: x (4, 4) must be (C, H, W) or (N, C, H, W)");
    tt_avg_pool2d(tt_zeros(TT_F64, TT_SHAPE(4, 4)), K3, NULL, NULL, true);
}
END_TEST

START_TEST(test_max_pool2d_too_small_aborts) {
    tt_expect_abort("the output size would be (0, 1), too small");
    tt_max_pool2d(tt_zeros(TT_F64, TT_SHAPE(1, 2, 3)), (int64_t[]){3, 3}, NULL, NULL, NULL);
}
END_TEST

START_TEST(test_adaptive_zero_size_aborts) {
    tt_expect_abort("tt_adaptive_avg_pool2d: output size (0, 2) must be positive");
    tt_adaptive_avg_pool2d(tt_zeros(TT_F64, TT_SHAPE(1, 2, 3)), 0, 2);
}
END_TEST

START_TEST(test_batch_norm_one_value_aborts) {
    tt_expect_abort("expected more than 1 value per channel when training, got x (1, 3, 1, 1)");
    tt_batch_norm(tt_zeros(TT_F64, TT_SHAPE(1, 3, 1, 1)), NULL, NULL, NULL, NULL, true, 0.1,
                  1e-5);
}
END_TEST

START_TEST(test_batch_norm_eval_needs_stats_aborts) {
    tt_expect_abort("eval mode (training false) needs running_mean and running_var");
    tt_batch_norm(tt_zeros(TT_F64, TT_SHAPE(2, 3)), NULL, NULL, NULL, NULL, false, 0.1, 1e-5);
}
END_TEST

START_TEST(test_batch_norm_weight_shape_aborts) {
    tt_expect_abort("weight (2,) must be (C,) = (3,)");
    tt_batch_norm(tt_zeros(TT_F64, TT_SHAPE(2, 3)), NULL, NULL, tt_ones(TT_F64, TT_SHAPE(2)),
                  NULL, true, 0.1, 1e-5);
}
END_TEST

// ---- suite ----

int main(void) {
    Suite *s = suite_create("ops_pool");
    TCase *pool = tt_tcase("pool");
    tcase_add_test(pool, test_max_pool2d_values_indices_grad);
    tcase_add_test(pool, test_max_pool2d_nan_inf);
    tcase_add_test(pool, test_max_pool2d_2x2_scan);
    tcase_add_test(pool, test_avg_pool2d_values_grad);
    tcase_add_test(pool, test_adaptive_avg_pool2d_values_grad);
    suite_add_tcase(s, pool);

    TCase *bn = tt_tcase("batch_norm");
    tcase_add_test(bn, test_batch_norm_train_eval);
    tcase_add_test(bn, test_batch_norm_nc);
    suite_add_tcase(s, bn);

    TCase *aborts = tt_tcase_aborts("aborts_pool");
    tcase_add_test_raise_signal(aborts, test_max_pool2d_padding_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_avg_pool2d_2d_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_max_pool2d_too_small_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_adaptive_zero_size_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_batch_norm_one_value_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_batch_norm_eval_needs_stats_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_batch_norm_weight_shape_aborts, SIGABRT);
    suite_add_tcase(s, aborts);
    return tt_test_run(s);
}

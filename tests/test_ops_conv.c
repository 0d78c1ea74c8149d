// Check suite of tt_conv2d, tt_conv1d, tt_conv_transpose2d, tt_upsample_nearest2d,
// tt_dropout2d and tt_unflatten (autograd/ops_conv.c): forward values and the gradients of
// sum(y * g) (also of tt_conv2d_same) against PyTorch 1.13 (tests/reference/conv_values.h and
// conv_transpose_values.h, written by the .py next to them) in f64 and f32, hand-computed cases,
// no recording in no-grad mode, the modules of nn/conv.c, and the aborts on misuse. Gradients
// against finite differences: tests/gc_ops_conv.c.
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "reference/conv_values.h"
#include "reference/conv_transpose_values.h"

#define N_REFS (int)(sizeof conv_refs / sizeof conv_refs[0])
#define N_CONVT (int)(sizeof convt_refs / sizeof convt_refs[0])
#define N_UPSAMPLE (int)(sizeof upsample_refs / sizeof upsample_refs[0])

// ---- helpers ----

static tt_tensor *ref_tensor(tt_dtype dt, int ndim, const int64_t *shape, const double *v) {
    return tt_to_dtype(tt_from_data(TT_F64, ndim, shape, v), dt);
}

static int64_t numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

static void check_ref(const conv_ref *c, tt_dtype dt, double tol) {
    int nd = c->dims + 2;
    tt_tensor *x = tt_set_requires_grad(ref_tensor(dt, nd, c->x_shape, c->x), true);
    tt_tensor *w = tt_set_requires_grad(ref_tensor(dt, nd, c->w_shape, c->w), true);
    tt_tensor *b = c->bias ? tt_set_requires_grad(ref_tensor(dt, 1, c->w_shape, c->b), true) : NULL;
    tt_tensor *y;
    if (c->dims == 1)
        y = tt_conv1d(x, w, b, c->stride[1], c->padding[1], c->dilation[1], c->groups);
    else if (c->same)
        y = tt_conv2d_same(x, w, b, c->dilation, c->groups);
    else
        y = tt_conv2d(x, w, b, c->stride, c->padding, c->dilation, c->groups);
    ck_assert_int_eq(y->ndim, nd);
    for (int d = 0; d < nd; d++) ck_assert_int_eq(y->shape[d], c->y_shape[d]);
    tt_assert_values(y, c->y, numel(nd, c->y_shape), tol, tol, __FILE__, __LINE__);
    tt_tensor *g = ref_tensor(dt, nd, c->y_shape, c->g);
    tt_backward(tt_sum(tt_mul(y, g), 0, NULL, false));
    tt_assert_values(tt_grad(x), c->dx, numel(nd, c->x_shape), tol, tol, __FILE__, __LINE__);
    tt_assert_values(tt_grad(w), c->dw, numel(nd, c->w_shape), tol, tol, __FILE__, __LINE__);
    if (b) tt_assert_values(tt_grad(b), c->db, c->w_shape[0], tol, tol, __FILE__, __LINE__);
}

// ---- values ----

START_TEST(test_refs_f64) {
    tt_scope_begin();
    check_ref(&conv_refs[_i], TT_F64, 1e-12);
    tt_scope_end();
}
END_TEST

START_TEST(test_refs_f32) {
    tt_scope_begin();
    check_ref(&conv_refs[_i], TT_F32, 2e-5);
    tt_scope_end();
}
END_TEST

// x = 1..9 as (1, 1, 3, 3), w = [[1, 0], [0, -1]], bias 10: y[i, j] = x[i, j] - x[i+1, j+1]
// + 10 = 6 everywhere; with padding 1 the border reads zeros: y (4, 4) worked out by hand.
START_TEST(test_hand) {
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F64, TT_SHAPE(1, 1, 3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
    tt_tensor *w = tt_test_tensor(TT_F64, TT_SHAPE(1, 1, 2, 2), 1, 0, 0, -1);
    tt_tensor *b = tt_test_tensor(TT_F64, TT_SHAPE(1), 10);
    ck_assert_values(tt_conv2d(x, w, b, NULL, NULL, NULL, 1), 0, 0, 6, 6, 6, 6);
    ck_assert_values(tt_conv2d(x, w, b, NULL, (int64_t[]){1, 1}, NULL, 1), 0, 0, 9, 8, 7, 10, 6, 6,
                     6, 13, 3, 6, 6, 16, 10, 17, 18, 19);
    tt_scope_end();
}
END_TEST

START_TEST(test_no_grad) {
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_ones(TT_F32, TT_SHAPE(1, 2, 3, 3)), true);
    tt_tensor *w = tt_set_requires_grad(tt_ones(TT_F32, TT_SHAPE(2, 2, 2, 2)), true);
    bool prev = tt_set_grad_enabled(false);
    tt_tensor *y = tt_conv2d(x, w, NULL, NULL, NULL, NULL, 1);
    tt_set_grad_enabled(prev);
    ck_assert(!y->requires_grad);
    ck_assert_values(y, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8);
    tt_scope_end();
}
END_TEST

// ---- aborts_conv ----

START_TEST(test_abort_channels) {
    tt_expect_abort("x (1, 3, 4, 4) has 3 channels but weight (2, 2, 3, 3) expects C_in = 2");
    tt_conv2d(tt_zeros(TT_F32, TT_SHAPE(1, 3, 4, 4)), tt_zeros(TT_F32, TT_SHAPE(2, 2, 3, 3)), NULL,
              NULL, NULL, NULL, 1);
}
END_TEST

START_TEST(test_abort_kernel_too_large) {
    tt_expect_abort("is larger than the padded input (4) of x (1, 1, 2, 3)");
    tt_conv2d(tt_zeros(TT_F32, TT_SHAPE(1, 1, 2, 3)), tt_zeros(TT_F32, TT_SHAPE(1, 1, 5, 1)), NULL,
              NULL, (int64_t[]){1, 0}, NULL, 1);
}
END_TEST

START_TEST(test_abort_dilated_too_large) {
    tt_expect_abort("(kernel extent 5 along W, dilated) is larger than the padded input (4)");
    tt_conv2d(tt_zeros(TT_F32, TT_SHAPE(1, 1, 4, 4)), tt_zeros(TT_F32, TT_SHAPE(1, 1, 2, 3)), NULL,
              NULL, NULL, (int64_t[]){1, 2}, 1);
}
END_TEST

START_TEST(test_abort_groups) {
    tt_expect_abort("groups 3 must be >= 1 and divide both the input channels (4)");
    tt_conv2d(tt_zeros(TT_F32, TT_SHAPE(1, 4, 4, 4)), tt_zeros(TT_F32, TT_SHAPE(6, 2, 1, 1)), NULL,
              NULL, NULL, NULL, 3);
}
END_TEST

START_TEST(test_abort_groups_out) {
    tt_expect_abort("and the output channels (5)");
    tt_conv2d(tt_zeros(TT_F32, TT_SHAPE(1, 4, 4, 4)), tt_zeros(TT_F32, TT_SHAPE(5, 2, 1, 1)), NULL,
              NULL, NULL, NULL, 2);
}
END_TEST

START_TEST(test_abort_x_3d) {
    tt_expect_abort("tt_conv2d: x (3, 4, 4) must be 4-D (N, C, H, W)");
    tt_conv2d(tt_zeros(TT_F32, TT_SHAPE(3, 4, 4)), tt_zeros(TT_F32, TT_SHAPE(2, 3, 1, 1)), NULL,
              NULL, NULL, NULL, 1);
}
END_TEST

START_TEST(test_abort_bias) {
    tt_expect_abort("bias (3,) must be (2,), one value per output channel");
    tt_conv2d(tt_zeros(TT_F32, TT_SHAPE(1, 3, 4, 4)), tt_zeros(TT_F32, TT_SHAPE(2, 3, 1, 1)),
              tt_zeros(TT_F32, TT_SHAPE(3)), NULL, NULL, NULL, 1);
}
END_TEST

START_TEST(test_abort_stride) {
    tt_expect_abort("must be >= 1 and padding (0, 0) >= 0");
    tt_conv2d(tt_zeros(TT_F32, TT_SHAPE(1, 3, 4, 4)), tt_zeros(TT_F32, TT_SHAPE(2, 3, 1, 1)), NULL,
              (int64_t[]){0, 1}, NULL, NULL, 1);
}
END_TEST

START_TEST(test_abort_conv1d_dims) {
    tt_expect_abort("tt_conv1d: x (3, 4) must be 3-D (N, C, L)");
    tt_conv1d(tt_zeros(TT_F32, TT_SHAPE(3, 4)), tt_zeros(TT_F32, TT_SHAPE(2, 3, 1)), NULL, 1, 0, 1,
              1);
}
END_TEST

// ---- Conv2d module ----

// Shapes, names, PyTorch's init bounds (1/sqrt(fan_in), fan_in = 4 / 2 * 3 * 2 = 12), the
// forward equal to tt_conv2d bit for bit, gradients reaching both parameters.
START_TEST(test_layer) {
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_nn_conv2d m;
    tt_nn_conv2d_init(&m, 4, 6, 3, 2, &(tt_nn_conv2d_opts){.padding = {1, 0}, .groups = 2}, true,
                      &rng);
    ck_assert_int_eq(m.opts.stride[0], 1);
    ck_assert_int_eq(m.opts.dilation[1], 1);
    int64_t ws[4] = {6, 2, 3, 2};
    for (int d = 0; d < 4; d++) ck_assert_int_eq(m.weight->shape[d], ws[d]);
    ck_assert_int_eq(m.bias->shape[0], 6);
    double bound = 1 / sqrt(12.0), wmax = 0, bmax = 0;
    for (int64_t i = 0; i < tt_numel(m.weight); i++) wmax = fmax(wmax, fabs(tt_at(m.weight, i)));
    for (int64_t i = 0; i < 6; i++) bmax = fmax(bmax, fabs(tt_at(m.bias, i)));
    ck_assert(wmax <= bound && wmax > 0.5 * bound && bmax <= bound);
    tt_params ps;
    tt_params_init(&ps);
    tt_module_params(tt_nn_conv2d_module(&m), &ps, "conv1");
    ck_assert_int_eq(ps.n, 2);
    ck_assert_str_eq(ps.items[0].name, "conv1.weight");
    ck_assert_str_eq(ps.items[1].name, "conv1.bias");
    tt_params_free(&ps);

    tt_scope_begin();
    tt_tensor *x = tt_uniform(&rng, tt_default_dtype(), TT_SHAPE(2, 4, 5, 3), -1, 1);
    tt_tensor *y = tt_module_forward(tt_nn_conv2d_module(&m), x);
    tt_tensor *ref = tt_conv2d(x, m.weight, m.bias, NULL, (int64_t[]){1, 0}, NULL, 2);
    ck_assert_int_eq(y->shape[1], 6);
    ck_assert_int_eq(y->shape[2], 5);
    ck_assert_int_eq(y->shape[3], 2);
    for (int64_t i = 0; i < tt_numel(y); i++) ck_assert(tt_at(y, i) == tt_at(ref, i));
    tt_backward(tt_sum(y, 0, NULL, false));
    ck_assert(tt_grad(m.weight) && tt_grad(m.bias));
    ck_assert_double_eq(tt_at(tt_grad(m.bias), 0), 2 * 5 * 2);  // N * OH * OW
    tt_scope_end();
    tt_nn_conv2d_free(&m);
    tt_nn_conv2d_free(&m);  // safe on a zeroed struct
}
END_TEST

START_TEST(test_abort_layer_groups) {
    tt_expect_abort("groups 3 must be positive and divide in_channels 4 and out_channels 6");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_conv2d m;
    tt_nn_conv2d_init(&m, 4, 6, 3, 3, &(tt_nn_conv2d_opts){.groups = 3}, true, &rng);
}
END_TEST

START_TEST(test_abort_layer_input) {
    tt_expect_abort("input (1, 3, 4, 4) must be (N, in_channels=2, H, W)");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_conv2d m;
    tt_nn_conv2d_init(&m, 2, 3, 1, 1, NULL, false, &rng);
    tt_nn_conv2d_forward(&m, tt_zeros(TT_F32, TT_SHAPE(1, 3, 4, 4)));
}
END_TEST


// ---- conv_transpose2d, upsample_nearest2d, unflatten, dropout2d ----

static void check_convt(const convt_ref *c, tt_dtype dt, double tol) {
    tt_tensor *x = tt_set_requires_grad(ref_tensor(dt, 4, c->x_shape, c->x), true);
    tt_tensor *w = tt_set_requires_grad(ref_tensor(dt, 4, c->w_shape, c->w), true);
    int64_t co = c->w_shape[1] * c->groups;
    tt_tensor *b = c->bias ? tt_set_requires_grad(ref_tensor(dt, 1, &co, c->b), true) : NULL;
    tt_tensor *y = tt_conv_transpose2d(x, w, b, c->stride, c->padding, c->output_padding,
                                       c->groups, c->dilation);
    ck_assert_int_eq(y->ndim, 4);
    for (int d = 0; d < 4; d++) ck_assert_int_eq(y->shape[d], c->y_shape[d]);
    tt_assert_values(y, c->y, numel(4, c->y_shape), tol, tol, __FILE__, __LINE__);
    tt_tensor *g = ref_tensor(dt, 4, c->y_shape, c->g);
    tt_backward(tt_sum(tt_mul(y, g), 0, NULL, false));
    tt_assert_values(tt_grad(x), c->dx, numel(4, c->x_shape), tol, tol, __FILE__, __LINE__);
    tt_assert_values(tt_grad(w), c->dw, numel(4, c->w_shape), tol, tol, __FILE__, __LINE__);
    if (b) tt_assert_values(tt_grad(b), c->db, co, tol, tol, __FILE__, __LINE__);
}

START_TEST(test_convt_f64) {
    tt_scope_begin();
    check_convt(&convt_refs[_i], TT_F64, 1e-12);
    tt_scope_end();
}
END_TEST

START_TEST(test_convt_f32) {
    tt_scope_begin();
    check_convt(&convt_refs[_i], TT_F32, 2e-5);
    tt_scope_end();
}
END_TEST

// x = [[1, 2], [3, 4]], w = [[1, 10], [100, 1000]], stride 2: every input pixel stamps its own
// 2 x 2 block x * w; with padding 1 the 1-pixel border is cut off; bias 0.5 is added.
START_TEST(test_convt_hand) {
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F64, TT_SHAPE(1, 1, 2, 2), 1, 2, 3, 4);
    tt_tensor *w = tt_test_tensor(TT_F64, TT_SHAPE(1, 1, 2, 2), 1, 10, 100, 1000);
    int64_t st[2] = {2, 2};
    ck_assert_values(tt_conv_transpose2d(x, w, NULL, st, NULL, NULL, 1, NULL), 0, 0, 1, 10, 2,
                     20, 100, 1000, 200, 2000, 3, 30, 4, 40, 300, 3000, 400, 4000);
    ck_assert_values(tt_conv_transpose2d(x, w, tt_test_tensor(TT_F64, TT_SHAPE(1), 0.5), st,
                                         (int64_t[]){1, 1}, NULL, 1, NULL),
                     0, 0, 1000.5, 200.5, 30.5, 4.5);
    // stride 1: overlapping stamps add up, y (3, 3)
    ck_assert_values(tt_conv_transpose2d(x, w, NULL, NULL, NULL, NULL, 1, NULL), 0, 0, 1, 12, 20,
                     103, 1234, 2040, 300, 3400, 4000);
    tt_scope_end();
}
END_TEST

// conv_transpose2d is the adjoint of conv2d: <conv2d(u, w), v> == <u, convt(v, w)>.
START_TEST(test_convt_adjoint) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    int64_t st[2] = {2, 1}, pd[2] = {1, 2}, dl[2] = {1, 2};
    tt_tensor *u = tt_uniform(&rng, TT_F64, TT_SHAPE(2, 4, 7, 8), -1, 1);
    tt_tensor *w = tt_uniform(&rng, TT_F64, TT_SHAPE(6, 2, 3, 3), -1, 1);  // groups 2
    tt_tensor *cu = tt_conv2d(u, w, NULL, st, pd, dl, 2);                   // (2, 6, 4, 8)
    tt_tensor *v = tt_uniform(&rng, TT_F64, 4, cu->shape, -1, 1);
    tt_tensor *tv = tt_conv_transpose2d(v, w, NULL, st, pd, NULL, 2, dl);
    ck_assert_int_eq(tv->shape[2], 7);
    ck_assert_int_eq(tv->shape[3], 8);
    double lhs = tt_at(tt_sum(tt_mul(cu, v), 0, NULL, false), 0);
    double rhs = tt_at(tt_sum(tt_mul(u, tv), 0, NULL, false), 0);
    ck_assert_double_eq_tol(lhs, rhs, 1e-10);
    tt_scope_end();
}
END_TEST

START_TEST(test_upsample_f64) {
    tt_scope_begin();
    const upsample_ref *c = &upsample_refs[_i];
    tt_tensor *x = tt_set_requires_grad(ref_tensor(TT_F64, 4, c->x_shape, c->x), true);
    tt_tensor *y = c->scale[0] > 0
                       ? tt_upsample_nearest2d_scale(x, c->scale[0], c->scale[1])
                       : tt_upsample_nearest2d(x, c->y_shape[2], c->y_shape[3]);
    for (int d = 0; d < 4; d++) ck_assert_int_eq(y->shape[d], c->y_shape[d]);
    tt_assert_values(y, c->y, numel(4, c->y_shape), 0, 0, __FILE__, __LINE__);
    tt_backward(tt_sum(tt_mul(y, ref_tensor(TT_F64, 4, c->y_shape, c->g)), 0, NULL, false));
    tt_assert_values(tt_grad(x), c->dx, numel(4, c->x_shape), 1e-12, 1e-12, __FILE__, __LINE__);
    tt_scope_end();
}
END_TEST

// (1, 1, 2, 3) -> (3, 2): rows from src = floor(i * 2 / 3) = 0, 0, 1, columns floor(j * 3 / 2)
// = 0, 1.
START_TEST(test_upsample_hand) {
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F32, TT_SHAPE(1, 1, 2, 3), 1, 2, 3, 4, 5, 6);
    ck_assert_values(tt_upsample_nearest2d(x, 3, 2), 0, 0, 1, 2, 1, 2, 4, 5);
    tt_scope_end();
}
END_TEST

START_TEST(test_unflatten) {
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_arange(TT_F64, 0, 24, 1), true);
    tt_tensor *x2 = tt_reshape(x, 2, (int64_t[]){2, 12});
    tt_tensor *y = tt_unflatten(x2, -1, (int64_t[]){3, -1, 2}, 3);  // (2, 3, 2, 2)
    ck_assert_int_eq(y->ndim, 4);
    ck_assert_int_eq(y->shape[1], 3);
    ck_assert_int_eq(y->shape[2], 2);
    ck_assert_int_eq(y->shape[3], 2);
    for (int64_t i = 0; i < 24; i++) ck_assert_double_eq(tt_at(y, i), (double)i);
    tt_tensor *z = tt_unflatten(x2, 0, (int64_t[]){1, 2}, 2);  // (1, 2, 12)
    ck_assert_int_eq(z->ndim, 3);
    ck_assert_int_eq(z->shape[0], 1);
    ck_assert_int_eq(z->shape[2], 12);
    tt_backward(tt_sum(tt_mul_scalar(y, 2), 0, NULL, false));
    ck_assert_double_eq(tt_at(tt_grad(x), 23), 2);
    tt_scope_end();
}
END_TEST

// Whole channels dropped: every (n, c) plane is all zeros or all x / (1 - p); about p of them
// dropped; eval and p = 0 return x; p = 1 returns zeros; the gradient is the same mask.
START_TEST(test_dropout2d) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    double p = 0.25;
    tt_tensor *x = tt_uniform(&rng, TT_F64, TT_SHAPE(8, 50, 3, 2), 1, 2);
    x = tt_set_requires_grad(x, true);
    tt_tensor *y = tt_dropout2d(x, p, true, &rng);
    tt_backward(tt_sum(y, 0, NULL, false));
    int dropped = 0;
    for (int64_t plane = 0; plane < 8 * 50; plane++) {
        bool zero = tt_at(y, plane * 6) == 0;
        dropped += zero;
        for (int64_t i = plane * 6; i < plane * 6 + 6; i++) {
            double want = zero ? 0 : tt_at(x, i) / (1 - p);
            ck_assert_double_eq_tol(tt_at(y, i), want, 1e-15);
            ck_assert_double_eq_tol(tt_at(tt_grad(x), i), zero ? 0 : 1 / (1 - p), 1e-15);
        }
    }
    ck_assert_msg(dropped > 60 && dropped < 140, "%d of 400 channels dropped at p = 0.25",
                  dropped);
    ck_assert_ptr_eq(tt_dropout2d(x, p, false, &rng), x);
    ck_assert_ptr_eq(tt_dropout2d(x, 0, true, NULL), x);
    tt_tensor *z = tt_dropout2d(tt_reshape(x, 3, (int64_t[]){8, 50, 6}), 1, true, &rng);
    for (int64_t i = 0; i < tt_numel(z); i++) ck_assert_double_eq(tt_at(z, i), 0);
    tt_scope_end();
}
END_TEST

// ---- aborts_conv_transpose ----

START_TEST(test_abort_convt_output_padding) {
    tt_expect_abort("output_padding 2 along W must be smaller than either the stride (2) or the "
                    "dilation (1)");
    tt_conv_transpose2d(tt_zeros(TT_F32, TT_SHAPE(1, 1, 3, 3)),
                        tt_zeros(TT_F32, TT_SHAPE(1, 1, 3, 3)), NULL, (int64_t[]){2, 2}, NULL,
                        (int64_t[]){1, 2}, 1, NULL);
}
END_TEST

START_TEST(test_abort_convt_channels) {
    tt_expect_abort("x (1, 3, 4, 4) has 3 channels but weight (2, 2, 3, 3) has 2 rows");
    tt_conv_transpose2d(tt_zeros(TT_F32, TT_SHAPE(1, 3, 4, 4)),
                        tt_zeros(TT_F32, TT_SHAPE(2, 2, 3, 3)), NULL, NULL, NULL, NULL, 1, NULL);
}
END_TEST

START_TEST(test_abort_convt_groups) {
    tt_expect_abort("groups 2 must be >= 1 and divide the input channels (3)");
    tt_conv_transpose2d(tt_zeros(TT_F32, TT_SHAPE(1, 3, 4, 4)),
                        tt_zeros(TT_F32, TT_SHAPE(3, 2, 3, 3)), NULL, NULL, NULL, NULL, 2, NULL);
}
END_TEST

START_TEST(test_abort_convt_bias) {
    tt_expect_abort("bias (2,) must be (4,), one value per output channel");
    tt_conv_transpose2d(tt_zeros(TT_F32, TT_SHAPE(1, 4, 4, 4)),
                        tt_zeros(TT_F32, TT_SHAPE(4, 2, 1, 1)), tt_zeros(TT_F32, TT_SHAPE(2)),
                        NULL, NULL, NULL, 2, NULL);
}
END_TEST

START_TEST(test_abort_convt_empty) {
    tt_expect_abort("(1, 1, 1, 1) would be -1 x 1; use less padding");
    tt_conv_transpose2d(tt_zeros(TT_F32, TT_SHAPE(1, 1, 1, 1)),
                        tt_zeros(TT_F32, TT_SHAPE(1, 1, 1, 1)), NULL, NULL,
                        (int64_t[]){1, 0}, NULL, 1, NULL);
}
END_TEST

START_TEST(test_abort_convt_x_3d) {
    tt_expect_abort("tt_conv_transpose2d: x (3, 4, 4) must be 4-D (N, C_in, H, W)");
    tt_conv_transpose2d(tt_zeros(TT_F32, TT_SHAPE(3, 4, 4)),
                        tt_zeros(TT_F32, TT_SHAPE(3, 1, 1, 1)), NULL, NULL, NULL, NULL, 1, NULL);
}
END_TEST

START_TEST(test_abort_dropout2d_dims) {
    tt_expect_abort("x (4, 5) must be 4-D (N, C, H, W) or 3-D (N, C, L)");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_dropout2d(tt_zeros(TT_F32, TT_SHAPE(4, 5)), 0.5, true, &rng);
}
END_TEST

START_TEST(test_abort_dropout2d_p) {
    tt_expect_abort("p must be in [0, 1], got 1.5");
    tt_dropout2d(tt_zeros(TT_F32, TT_SHAPE(1, 4, 5, 5)), 1.5, true, NULL);
}
END_TEST

START_TEST(test_abort_upsample_dims) {
    tt_expect_abort("x (2, 4, 4) must be 4-D (N, C, H, W)");
    tt_upsample_nearest2d(tt_zeros(TT_F32, TT_SHAPE(2, 4, 4)), 8, 8);
}
END_TEST

START_TEST(test_abort_upsample_size) {
    tt_expect_abort("the output size (0, 3) and x (1, 1, 2, 2)'s H and W must be >= 1");
    tt_upsample_nearest2d(tt_zeros(TT_F32, TT_SHAPE(1, 1, 2, 2)), 0, 3);
}
END_TEST

START_TEST(test_abort_unflatten_sizes) {
    tt_expect_abort("sizes of product 6 cannot split dim 1 of x (2, 12) (size 12)");
    tt_unflatten(tt_zeros(TT_F32, TT_SHAPE(2, 12)), 1, (int64_t[]){2, 3}, 2);
}
END_TEST

START_TEST(test_abort_unflatten_two_infer) {
    tt_expect_abort("sizes[1] = -1: sizes must be >= 0, with at most one -1");
    tt_unflatten(tt_zeros(TT_F32, TT_SHAPE(2, 12)), 1, (int64_t[]){-1, -1}, 2);
}
END_TEST


// ---- ConvTranspose2d, Conv1d, Dropout2d, Upsample, Unflatten modules ----

static double max_abs(const tt_tensor *t) {
    double m = 0;
    for (int64_t i = 0; i < tt_numel(t); i++) m = fmax(m, fabs(tt_at(t, i)));
    return m;
}

// PyTorch's shapes, names and init bound; with PyTorch's weights loaded, its output (f64).
static void check_layer(tt_module mod, tt_tensor *weight, tt_tensor *bias, int wdims,
                        const int64_t *w_shape, double bound, const double *w, const double *b,
                        int xdims, const int64_t *x_shape, const double *x, const int64_t *y_shape,
                        const double *y) {
    ck_assert_int_eq(weight->ndim, wdims);
    for (int d = 0; d < wdims; d++) ck_assert_int_eq(weight->shape[d], w_shape[d]);
    ck_assert(max_abs(weight) <= bound && max_abs(weight) > 0.5 * bound);
    ck_assert(max_abs(bias) <= bound);
    tt_params ps;
    tt_params_init(&ps);
    tt_module_params(mod, &ps, "up");
    ck_assert_int_eq(ps.n, 2);
    ck_assert_str_eq(ps.items[0].name, "up.weight");
    ck_assert_str_eq(ps.items[1].name, "up.bias");
    tt_params_free(&ps);
    memcpy(tt_data(weight), w, sizeof(double) * (size_t)tt_numel(weight));
    memcpy(tt_data(bias), b, sizeof(double) * (size_t)tt_numel(bias));
    tt_scope_begin();
    tt_tensor *out = tt_module_forward(mod, tt_from_data(TT_F64, xdims, x_shape, x));
    for (int d = 0; d < xdims; d++) ck_assert_int_eq(out->shape[d], y_shape[d]);
    tt_assert_values(out, y, numel(xdims, y_shape), 1e-12, 1e-12, __FILE__, __LINE__);
    tt_backward(tt_sum(out, 0, NULL, false));
    ck_assert(tt_grad(weight) && tt_grad(bias));
    tt_scope_end();
}

START_TEST(test_convt_layer) {
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_conv_transpose2d m;
    tt_nn_conv_transpose2d_opts o = {
        .stride = {2, 1}, .padding = {1, 0}, .output_padding = {1, 0}, .groups = 2};
    tt_nn_conv_transpose2d_init(&m, 4, 6, 3, 2, &o, true, &rng);
    tt_set_default_dtype(prev);
    ck_assert_int_eq(m.opts.dilation[0], 1);
    check_layer(tt_nn_conv_transpose2d_module(&m), m.weight, m.bias, 4, convt_layer_w_shape,
                convt_layer_bound, convt_layer_w, convt_layer_b, TT_SHAPE(2, 4, 3, 5),
                convt_layer_x, convt_layer_y_shape, convt_layer_y);
    tt_module_free(tt_nn_conv_transpose2d_module(&m));
    ck_assert_ptr_null(m.weight);
}
END_TEST

START_TEST(test_conv1d_layer) {
    tt_rng rng;
    tt_rng_seed(&rng, 6);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_conv1d m;
    tt_nn_conv1d_opts o = {.stride = 2, .padding = 1, .dilation = 2, .groups = 2};
    tt_nn_conv1d_init(&m, 4, 6, 3, &o, true, &rng);
    tt_set_default_dtype(prev);
    check_layer(tt_nn_conv1d_module(&m), m.weight, m.bias, 3, conv1d_layer_w_shape,
                conv1d_layer_bound, conv1d_layer_w, conv1d_layer_b, TT_SHAPE(2, 4, 9),
                conv1d_layer_x, conv1d_layer_y_shape, conv1d_layer_y);
    tt_nn_conv1d_free(&m);
}
END_TEST

// Training drops whole channels; tt_module_train(false) makes it the identity.
START_TEST(test_dropout2d_layer) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 8);
    tt_nn_dropout2d m;
    tt_nn_dropout2d_init(&m, 0.5, &rng);
    tt_module mod = tt_nn_dropout2d_module(&m);
    tt_tensor *x = tt_ones(TT_F32, TT_SHAPE(4, 16, 2, 2));
    tt_tensor *y = tt_module_forward(mod, x);
    int zeros = 0;
    for (int64_t i = 0; i < tt_numel(y); i++) {
        ck_assert(tt_at(y, i) == tt_at(y, i - i % 4));  // one value per (n, c) plane
        ck_assert(tt_at(y, i) == 0 || tt_at(y, i) == 2);
        zeros += tt_at(y, i) == 0;
    }
    ck_assert(zeros > 0 && zeros < tt_numel(y));
    tt_module_train(mod, false);
    ck_assert_ptr_eq(tt_module_forward(mod, x), x);
    tt_scope_end();
}
END_TEST

// Upsample by size and by scale_factor: PyTorch's values (the refs); Unflatten: nn.Unflatten's
// shapes.
START_TEST(test_upsample_unflatten_modules) {
    tt_scope_begin();
    for (int i = 0; i < N_UPSAMPLE; i++) {
        const upsample_ref *c = &upsample_refs[i];
        tt_nn_upsample u = {.size = {c->y_shape[2], c->y_shape[3]}};
        if (c->scale[0] > 0) u = (tt_nn_upsample){.scale = {c->scale[0], c->scale[1]}};
        tt_tensor *y = tt_module_forward(tt_nn_upsample_module(&u),
                                         ref_tensor(TT_F64, 4, c->x_shape, c->x));
        for (int d = 0; d < 4; d++) ck_assert_int_eq(y->shape[d], c->y_shape[d]);
        tt_assert_values(y, c->y, numel(4, c->y_shape), 0, 0, __FILE__, __LINE__);
    }
    tt_nn_unflatten uf = {.dim = 1, .n = 3, .sizes = {2, -1, 4}};
    tt_tensor *z =
        tt_module_forward(tt_nn_unflatten_module(&uf), tt_zeros(TT_F32, TT_SHAPE(5, 24)));
    ck_assert_int_eq(z->ndim, 4);
    ck_assert_int_eq(z->shape[0], 5);
    ck_assert_int_eq(z->shape[1], 2);
    ck_assert_int_eq(z->shape[2], 3);
    ck_assert_int_eq(z->shape[3], 4);
    tt_scope_end();
}
END_TEST

START_TEST(test_abort_upsample_module) {
    tt_expect_abort("set exactly one of size (4, 4) and scale (2, 2)");
    tt_nn_upsample_module(&(tt_nn_upsample){.size = {4, 4}, .scale = {2, 2}});
}
END_TEST

START_TEST(test_abort_convt_layer_input) {
    tt_expect_abort("input (1, 3, 4, 4) must be (N, in_channels=2, H, W)");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_conv_transpose2d m;
    tt_nn_conv_transpose2d_init(&m, 2, 3, 1, 1, NULL, false, &rng);
    tt_nn_conv_transpose2d_forward(&m, tt_zeros(TT_F32, TT_SHAPE(1, 3, 4, 4)));
}
END_TEST

START_TEST(test_abort_conv1d_layer_groups) {
    tt_expect_abort("groups 4 must be positive and divide in_channels 6 and out_channels 6");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_conv1d m;
    tt_nn_conv1d_init(&m, 6, 6, 3, &(tt_nn_conv1d_opts){.groups = 4}, true, &rng);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_conv");
    TCase *tc = tt_tcase("values");
    tcase_add_loop_test(tc, test_refs_f64, 0, N_REFS);
    tcase_add_loop_test(tc, test_refs_f32, 0, N_REFS);
    tcase_add_test(tc, test_hand);
    tcase_add_test(tc, test_no_grad);
    tcase_add_test(tc, test_layer);
    tcase_add_loop_test(tc, test_convt_f64, 0, N_CONVT);
    tcase_add_loop_test(tc, test_convt_f32, 0, N_CONVT);
    tcase_add_test(tc, test_convt_hand);
    tcase_add_test(tc, test_convt_adjoint);
    tcase_add_loop_test(tc, test_upsample_f64, 0, N_UPSAMPLE);
    tcase_add_test(tc, test_upsample_hand);
    tcase_add_test(tc, test_unflatten);
    tcase_add_test(tc, test_dropout2d);
    tcase_add_test(tc, test_convt_layer);
    tcase_add_test(tc, test_conv1d_layer);
    tcase_add_test(tc, test_dropout2d_layer);
    tcase_add_test(tc, test_upsample_unflatten_modules);
    suite_add_tcase(s, tc);

    TCase *ab = tt_tcase_aborts("aborts_conv");
    tcase_add_test_raise_signal(ab, test_abort_channels, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_kernel_too_large, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dilated_too_large, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_groups, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_groups_out, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_x_3d, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bias, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_stride, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_conv1d_dims, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_layer_groups, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_layer_input, SIGABRT);
    suite_add_tcase(s, ab);

    TCase *at = tt_tcase_aborts("aborts_conv_transpose");
    tcase_add_test_raise_signal(at, test_abort_convt_output_padding, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_convt_channels, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_convt_groups, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_convt_bias, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_convt_empty, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_convt_x_3d, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_dropout2d_dims, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_dropout2d_p, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_upsample_dims, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_upsample_size, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_unflatten_sizes, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_unflatten_two_infer, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_upsample_module, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_convt_layer_input, SIGABRT);
    tcase_add_test_raise_signal(at, test_abort_conv1d_layer_groups, SIGABRT);
    suite_add_tcase(s, at);
    return tt_test_run(s);
}

// Gradcheck cases of the pooling ops (autograd/ops_pool.c) and of batch_norm (a composition,
// checked as a module case): odd sizes, stride != kernel (overlapping and gapped windows),
// padding, (C, H, W) input, a transposed x; max pooling over distinct values (a perturbation
// never moves the maximum), one element the maximum of four overlapping windows (ties of
// equal values cannot be finite-differenced: tests/test_ops_pool.c checks them against
// PyTorch), both count_include_pad modes, adaptive sizes that do not divide the input.
#include "gc_util.h"

typedef struct pool_args {
    int64_t kernel[2], stride[2], padding[2];  // stride {0, 0}: NULL (the kernel)
    bool count_include_pad;
    int64_t out_h, out_w;  // adaptive
} pool_args;

// kernel, stride, padding (stride {0, 0}: NULL), count_include_pad
#define POOL(kh, kw, sh, sw, ph, pw, inc) \
    (&(pool_args){.kernel = {kh, kw}, .stride = {sh, sw}, .padding = {ph, pw}, \
                  .count_include_pad = inc})

static tt_tensor *f_max(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const pool_args *a = ctx;
    return tt_max_pool2d(in[0], a->kernel, a->stride[0] ? a->stride : NULL, a->padding, NULL);
}

static tt_tensor *f_avg(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const pool_args *a = ctx;
    return tt_avg_pool2d(in[0], a->kernel, a->stride[0] ? a->stride : NULL, a->padding,
                         a->count_include_pad);
}

static tt_tensor *f_adaptive(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const pool_args *a = ctx;
    return tt_adaptive_avg_pool2d(in[0], a->out_h, a->out_w);
}

// An f64 leaf whose values are a random permutation of 0, 0.1, 0.2, ...: distinct and
// 0.1 apart, so the finite differences never move a window's maximum.
static tt_tensor *distinct_input(int ndim, const int64_t *shape) {
    tt_tensor *x = tt_empty(TT_F64, ndim, shape);
    int64_t n = tt_numel(x);
    tt_tensor *perm = tt_randperm(gc_rng(), n);
    for (int64_t i = 0; i < n; i++) tt_set_at(x, i, 0.1 * tt_at(perm, i));
    return tt_set_requires_grad(x, true);
}

static void max_pool_odd(gc_report *r) {
    tt_tensor *x = distinct_input(TT_SHAPE(2, 3, 7, 5));
    gc_check(r, f_max, POOL(3, 2, 2, 1, 1, 1, false), 1, &x, NULL);  // overlapping
    gc_check(r, f_max, POOL(2, 2, 3, 3, 0, 1, false), 1, &x, NULL);  // gapped
    gc_check(r, f_max, POOL(3, 3, 0, 0, 0, 0, false), 1, &x, NULL);  // stride = kernel
    gc_check(r, f_max, POOL(2, 2, 0, 0, 0, 0, false), 1, &x, NULL);  // 2 x 2: the unrolled scan
}

// (C, H, W) input, and x a transposed view.
static void max_pool_chw_transposed(gc_report *r) {
    tt_tensor *x = distinct_input(TT_SHAPE(2, 5, 4));
    gc_check(r, f_max, POOL(2, 3, 1, 2, 1, 1, false), 1, &x, NULL);
    tt_tensor *t = tt_set_requires_grad(tt_detach(tt_transpose(
                                            distinct_input(TT_SHAPE(1, 2, 5, 6)), 2, 3)), true);
    gc_check(r, f_max, POOL(3, 2, 2, 2, 1, 0, false), 1, &t, NULL);
}

// One element is the maximum of four overlapping windows: its gradient is their sum.
static void max_pool_shared_max(gc_report *r) {
    tt_tensor *x = distinct_input(TT_SHAPE(1, 1, 4, 4));
    tt_no_grad_begin();
    tt_set_at(x, 5, 10);  // (1, 1): inside every 3x3 window with stride 1
    tt_no_grad_end();
    gc_check(r, f_max, POOL(3, 3, 1, 1, 1, 1, false), 1, &x, NULL);
}

static void avg_pool_odd(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 7, 5), -1, 1);
    for (int inc = 0; inc < 2; inc++) {
        gc_check(r, f_avg, POOL(3, 2, 2, 1, 1, 1, inc), 1, &x, NULL);
        gc_check(r, f_avg, POOL(2, 3, 3, 2, 1, 1, inc), 1, &x, NULL);
    }
    gc_check(r, f_avg, POOL(2, 2, 0, 0, 0, 0, true), 1, &x, NULL);
    tt_tensor *t = gc_input_transposed(TT_SHAPE(3, 6, 5), 1, 2, -1, 1);
    gc_check(r, f_avg, POOL(3, 3, 2, 2, 1, 1, false), 1, &t, NULL);
}

static void adaptive_avg_pool(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 2, 7, 5), -1, 1);
    pool_args a = {.out_h = 3, .out_w = 4};  // overlapping windows both ways
    gc_check(r, f_adaptive, &a, 1, &x, NULL);
    a.out_h = 1, a.out_w = 1;  // global average
    gc_check(r, f_adaptive, &a, 1, &x, NULL);
    a.out_h = 9, a.out_w = 5;  // larger than the input along H
    gc_check(r, f_adaptive, &a, 1, &x, NULL);
}

const gc_case gc_cases_pool[] = {
    {TT_OP_MAX_POOL2D, "odd_strided_padded", max_pool_odd},
    {TT_OP_MAX_POOL2D, "chw_transposed", max_pool_chw_transposed},
    {TT_OP_MAX_POOL2D, "shared_max", max_pool_shared_max},
    {TT_OP_AVG_POOL2D, "odd_strided_padded", avg_pool_odd},
    {TT_OP_AVG_POOL2D, "adaptive", adaptive_avg_pool},
    {0},
};

// ---- batch_norm (a composition: a module case) ----

typedef struct bn_args {
    bool training, affine;
} bn_args;

// in: x, then weight and bias when affine; running stats fresh per call (training updates
// them, which must not change the function gradcheck differentiates).
static tt_tensor *f_batch_norm(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const bn_args *a = ctx;
    int64_t C = in[0]->shape[1];
    tt_dtype dt = in[0]->dtype;  // f64, and f32 for the forward comparison
    tt_tensor *rm = tt_full(dt, TT_SHAPE(C), 0.25), *rv = tt_full(dt, TT_SHAPE(C), 1.5);
    return tt_batch_norm(in[0], rm, rv, a->affine ? in[1] : NULL, a->affine ? in[2] : NULL,
                         a->training, 0.1, 1e-5);
}

static void batch_norm_nchw(gc_report *r) {
    tt_tensor *in[3] = {gc_input(TT_SHAPE(3, 2, 3, 5), -1, 1), gc_input(TT_SHAPE(2), 0.5, 1.5),
                        gc_input(TT_SHAPE(2), -1, 1)};
    gc_check(r, f_batch_norm, &(bn_args){true, true}, 3, in, NULL);
    gc_check(r, f_batch_norm, &(bn_args){false, true}, 3, in, NULL);
    gc_check(r, f_batch_norm, &(bn_args){true, false}, 1, in, NULL);
}

static void batch_norm_nc(gc_report *r) {
    tt_tensor *in[3] = {gc_input(TT_SHAPE(5, 3), -1, 1), gc_input(TT_SHAPE(3), 0.5, 1.5),
                        gc_input(TT_SHAPE(3), -1, 1)};
    gc_check(r, f_batch_norm, &(bn_args){true, true}, 3, in, NULL);
    tt_tensor *t = gc_input_transposed(TT_SHAPE(3, 4, 5), 1, 2, -1, 1);  // (3, 5, 4): N, C, L
    tt_tensor *tin[3] = {t, gc_input(TT_SHAPE(5), 0.5, 1.5), gc_input(TT_SHAPE(5), -1, 1)};
    gc_check(r, f_batch_norm, &(bn_args){true, true}, 3, tin, NULL);
}

const gc_module_case gc_modules_pool[] = {
    {"batch_norm", "nchw_train_eval", batch_norm_nchw},
    {"batch_norm", "nc_ncl", batch_norm_nc},
    {0},
};

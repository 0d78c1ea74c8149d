// Check suite of the BatchNorm1d/2d and pooling modules, module buffers and a small CNN as a
// tt_nn_sequential, against PyTorch 1.13 (tests/reference/cnn_values.py wrote cnn_values.h):
// 3 training steps then eval (outputs, running stats, gradients of x, weight, bias), the
// pooling modules' outputs and gradients, the CNN's logits and every parameter's gradient in
// f64 and f32 in train and eval mode, checkpoint round-trips of the buffers, the aborts.
#include "test_util.h"

#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "reference/cnn_values.h"

#define CHECK_VALUES(t, expected, n, atol, rtol) \
    tt_assert_values((t), (expected), (n), (atol), (rtol), __FILE__, __LINE__)

static int64_t shape_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

// ---- BatchNorm1d / BatchNorm2d ----

START_TEST(test_batchnorm_matches_pytorch) {
    const bn_ref *r = &bn_refs[_i];
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_batchnorm_opts o = tt_nn_batchnorm_default_opts();
    o.momentum = r->momentum;
    o.affine = r->affine;
    o.track_running_stats = r->track;
    tt_nn_batchnorm bn;
    if (r->dims == 1) tt_nn_batchnorm1d_init(&bn, r->shape[1], &o);
    else tt_nn_batchnorm2d_init(&bn, r->shape[1], &o);
    tt_set_default_dtype(prev);
    int64_t C = r->shape[1], n = shape_numel(r->ndim, r->shape);
    if (r->affine) {
        ck_assert_double_eq(tt_at(bn.weight, 0), 1);  // PyTorch's init: ones and zeros
        ck_assert_double_eq(tt_at(bn.bias, 0), 0);
        tt_scope_begin();
        tt_copy_(bn.weight, tt_test_tensor_(TT_F64, 1, &C, r->w, C));
        tt_copy_(bn.bias, tt_test_tensor_(TT_F64, 1, &C, r->b, C));
        tt_scope_end();
    } else {
        ck_assert_ptr_null(bn.weight);
    }
    for (int step = 0; step < 4; step++) {
        if (step == 3) tt_module_train(tt_nn_batchnorm_module(&bn), false);
        if (bn.weight) tt_zero_grad(bn.weight), tt_zero_grad(bn.bias);
        tt_scope_begin();
        tt_tensor *x = tt_test_tensor_(TT_F64, r->ndim, r->shape, r->x + step * n, n);
        tt_set_requires_grad(x, true);
        tt_tensor *g = tt_test_tensor_(TT_F64, r->ndim, r->shape, r->g + step * n, n);
        tt_tensor *y = tt_module_forward(tt_nn_batchnorm_module(&bn), x);
        CHECK_VALUES(y, r->y + step * n, n, 1e-12, 1e-10);
        tt_backward(tt_sum_all(tt_mul(y, g)));
        CHECK_VALUES(tt_grad(x), r->dx + step * n, n, 1e-12, 1e-10);
        if (r->affine) {
            CHECK_VALUES(tt_grad(bn.weight), r->dw + step * C, C, 1e-11, 1e-10);
            CHECK_VALUES(tt_grad(bn.bias), r->db + step * C, C, 1e-11, 1e-10);
        }
        if (r->track && step < 3) {
            CHECK_VALUES(bn.running_mean, r->rm + step * C, C, 1e-14, 1e-13);
            CHECK_VALUES(bn.running_var, r->rv + step * C, C, 1e-14, 1e-13);
            ck_assert_double_eq(tt_item(bn.num_batches_tracked), step + 1);
        }
        tt_scope_end();
    }
    if (r->track) {  // eval did not count
        ck_assert_double_eq(tt_item(bn.num_batches_tracked), 3);
        ck_assert(!bn.running_mean->requires_grad && !bn.num_batches_tracked->requires_grad);
    } else {
        ck_assert_ptr_null(bn.running_mean);
    }
    tt_nn_batchnorm_free(&bn);
}
END_TEST

// Parameters, buffers and the state list: names, order, no grad on the buffers, the
// optimizer's list without them.
START_TEST(test_batchnorm_params_buffers_state) {
    tt_nn_batchnorm bn;
    tt_nn_batchnorm2d_init(&bn, 3, NULL);
    ck_assert_int_eq(bn.running_mean->dtype, tt_default_dtype());
    ck_assert_double_eq(tt_at(bn.running_var, 2), 1);
    ck_assert_int_eq(bn.num_batches_tracked->dtype, TT_I64);
    ck_assert_int_eq(bn.num_batches_tracked->ndim, 0);
    tt_module m = tt_nn_batchnorm_module(&bn);
    ck_assert_str_eq(m.ops->type, "BatchNorm2d");
    tt_params p, b, s;
    tt_params_init(&p);
    tt_params_init(&b);
    tt_params_init(&s);
    tt_module_params(m, &p, "bn");
    tt_module_buffers(m, &b, "bn");
    tt_module_state(m, &s, "bn");
    ck_assert_int_eq(p.n, 2);
    ck_assert_int_eq(b.n, 3);
    static const char *const names[] = {"bn.weight", "bn.bias", "bn.running_mean",
                                        "bn.running_var", "bn.num_batches_tracked"};
    ck_assert_int_eq(s.n, 5);
    for (int i = 0; i < 5; i++) ck_assert_str_eq(s.items[i].name, names[i]);
    for (int i = 0; i < 3; i++) ck_assert(!b.items[i].tensor->requires_grad);
    tt_params_free(&s);
    tt_params_free(&b);
    tt_params_free(&p);
    tt_nn_batchnorm_free(&bn);
    tt_nn_batchnorm_free(&bn);  // safe on a zeroed struct
    // no affine, no tracking: nothing to list
    tt_nn_batchnorm bare;
    tt_nn_batchnorm1d_init(&bare, 4, &(tt_nn_batchnorm_opts){.eps = 1e-3});
    tt_params_init(&s);
    tt_module_state(tt_nn_batchnorm_module(&bare), &s, NULL);
    ck_assert_int_eq(s.n, 0);
    ck_assert_str_eq(tt_nn_batchnorm_module(&bare).ops->type, "BatchNorm1d");
    tt_params_free(&s);
    tt_nn_batchnorm_free(&bare);
}
END_TEST

// The running stats after 3 training steps survive a checkpoint bit for bit, into a fresh
// module whose buffers keep requires_grad false; its eval output equals PyTorch's.
START_TEST(test_batchnorm_checkpoint_roundtrip) {
    const bn_ref *r = &bn_refs[0];
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_batchnorm a, b;
    tt_nn_batchnorm2d_init(&a, r->shape[1], NULL);
    tt_nn_batchnorm2d_init(&b, r->shape[1], NULL);
    tt_set_default_dtype(prev);
    int64_t C = r->shape[1], n = shape_numel(r->ndim, r->shape);
    tt_scope_begin();
    tt_copy_(a.weight, tt_test_tensor_(TT_F64, 1, &C, r->w, C));
    tt_copy_(a.bias, tt_test_tensor_(TT_F64, 1, &C, r->b, C));
    for (int step = 0; step < 3; step++)
        tt_nn_batchnorm_forward(&a, tt_test_tensor_(TT_F64, r->ndim, r->shape, r->x + step * n, n));
    tt_scope_end();
    char dir[128], path[192];
    tt_test_mkdtemp(dir, sizeof dir, "bn_ckpt");
    snprintf(path, sizeof path, "%s/bn.ckpt", dir);
    tt_params sa, sb;
    tt_params_init(&sa);
    tt_params_init(&sb);
    tt_module_state(tt_nn_batchnorm_module(&a), &sa, "bn");
    tt_module_state(tt_nn_batchnorm_module(&b), &sb, "bn");
    tt_checkpoint ck, in;
    tt_ckpt_init(&ck);
    tt_ckpt_add_params(&ck, "model.", &sa);
    ck_assert_int_eq(tt_ckpt_save(&ck, path), TT_OK);
    ck_assert_int_eq(tt_ckpt_load(&in, path), TT_OK);
    ck_assert_int_eq(tt_ckpt_restore_params(&in, "model.", &sb), TT_OK);
    ck_assert(memcmp(tt_data(b.running_mean), tt_data(a.running_mean), C * sizeof(double)) == 0);
    ck_assert(memcmp(tt_data(b.running_var), tt_data(a.running_var), C * sizeof(double)) == 0);
    ck_assert(memcmp(tt_data(b.weight), tt_data(a.weight), C * sizeof(double)) == 0);
    ck_assert_double_eq(tt_item(b.num_batches_tracked), 3);
    ck_assert(!b.running_mean->requires_grad && !b.running_var->requires_grad);
    ck_assert(!b.num_batches_tracked->requires_grad);
    ck_assert(b.weight->requires_grad);
    // a module of another size: a mismatch naming the tensor, nothing copied
    tt_nn_batchnorm c;
    tt_nn_batchnorm2d_init(&c, C + 1, NULL);
    tt_params sc;
    tt_params_init(&sc);
    tt_module_state(tt_nn_batchnorm_module(&c), &sc, "bn");
    ck_assert_int_eq(tt_ckpt_restore_params(&in, "model.", &sc), TT_ERR_MISMATCH);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "bn.weight"));
    ck_assert_double_eq(tt_item(c.num_batches_tracked), 0);
    tt_params_free(&sc);
    tt_nn_batchnorm_free(&c);
    // eval with the loaded stats: PyTorch's eval step
    tt_nn_batchnorm_train(&b, false);
    tt_scope_begin();
    tt_tensor *y = tt_nn_batchnorm_forward(
        &b, tt_test_tensor_(TT_F64, r->ndim, r->shape, r->x + 3 * n, n));
    CHECK_VALUES(y, r->y + 3 * n, n, 1e-12, 1e-10);
    tt_scope_end();
    tt_ckpt_free(&in);
    tt_ckpt_free(&ck);
    tt_params_free(&sb);
    tt_params_free(&sa);
    tt_nn_batchnorm_free(&b);
    tt_nn_batchnorm_free(&a);
    tt_test_rmdir(dir);
}
END_TEST

// f32 follows the f64 reference to f32 precision.
START_TEST(test_batchnorm_f32) {
    const bn_ref *r = &bn_refs[0];
    tt_nn_batchnorm bn;
    tt_nn_batchnorm2d_init(&bn, r->shape[1], NULL);
    ck_assert_int_eq(bn.weight->dtype, TT_F32);
    int64_t C = r->shape[1], n = shape_numel(r->ndim, r->shape);
    tt_scope_begin();
    tt_copy_(bn.weight, tt_test_tensor_(TT_F32, 1, &C, r->w, C));
    tt_copy_(bn.bias, tt_test_tensor_(TT_F32, 1, &C, r->b, C));
    tt_scope_end();
    for (int step = 0; step < 4; step++) {
        if (step == 3) tt_nn_batchnorm_train(&bn, false);
        tt_scope_begin();
        tt_tensor *x = tt_test_tensor_(TT_F32, r->ndim, r->shape, r->x + step * n, n);
        CHECK_VALUES(tt_nn_batchnorm_forward(&bn, x), r->y + step * n, n, 2e-5, 2e-5);
        if (step < 3) CHECK_VALUES(bn.running_var, r->rv + step * C, C, 1e-6, 1e-6);
        tt_scope_end();
    }
    tt_nn_batchnorm_free(&bn);
}
END_TEST

// ---- the pooling modules ----

typedef struct pool_cfg {
    char kind;  // 'm'ax, 'a'vg, adaptive 'A'
    int64_t kernel[2], stride[2], padding[2];
    bool count_include_pad;
} pool_cfg;

// The modules of cnn_values.py's POOL_CASES, in order (stride {0, 0}: PyTorch's None).
static const pool_cfg pool_cfgs[] = {
    {'m', {3, 3}, {2, 2}, {1, 1}, true}, {'m', {2, 2}, {0, 0}, {0, 0}, true},
    {'m', {2, 3}, {1, 1}, {0, 0}, true}, {'a', {3, 3}, {2, 2}, {1, 1}, true},
    {'a', {3, 3}, {2, 2}, {1, 1}, false}, {'a', {2, 2}, {0, 0}, {0, 0}, true},
    {'A', {3, 2}, {0, 0}, {0, 0}, true},
};

START_TEST(test_pool_modules_match_pytorch) {
    const pool_ref *r = &pool_refs[_i];
    const pool_cfg *c = &pool_cfgs[_i];
    tt_nn_maxpool2d mp;
    tt_nn_avgpool2d ap;
    tt_nn_adaptive_avgpool2d aap;
    tt_module m;
    if (c->kind == 'm') {
        tt_nn_maxpool2d_init(&mp, c->kernel[0], c->kernel[1], c->stride, c->padding);
        m = tt_nn_maxpool2d_module(&mp);
        ck_assert_str_eq(m.ops->type, "MaxPool2d");
    } else if (c->kind == 'a') {
        tt_nn_avgpool2d_init(&ap, c->kernel[0], c->kernel[1], c->stride, c->padding,
                             c->count_include_pad);
        m = tt_nn_avgpool2d_module(&ap);
    } else {
        tt_nn_adaptive_avgpool2d_init(&aap, c->kernel[0], c->kernel[1]);
        m = tt_nn_adaptive_avgpool2d_module(&aap);
    }
    tt_params p;
    tt_params_init(&p);
    tt_module_state(m, &p, NULL);
    ck_assert_int_eq(p.n, 0);
    tt_params_free(&p);
    tt_scope_begin();
    int64_t nx = shape_numel(r->ndim, r->x_shape), ny = shape_numel(r->y_ndim, r->y_shape);
    tt_tensor *x = tt_test_tensor_(TT_F64, r->ndim, r->x_shape, r->x, nx);
    tt_set_requires_grad(x, true);
    tt_tensor *y = tt_module_forward(m, x);
    ck_assert_int_eq(y->ndim, r->y_ndim);
    for (int d = 0; d < y->ndim; d++) ck_assert_int_eq(y->shape[d], r->y_shape[d]);
    CHECK_VALUES(y, r->y, ny, 1e-14, 1e-13);
    tt_backward(tt_sum_all(tt_mul(y, tt_test_tensor_(TT_F64, r->y_ndim, r->y_shape, r->g, ny))));
    CHECK_VALUES(tt_grad(x), r->dx, nx, 1e-14, 1e-13);
    tt_scope_end();
}
END_TEST

// ---- the CNN ----

typedef struct cnn {
    tt_nn_conv2d conv0, conv4;
    tt_nn_batchnorm bn1, bn5;
    tt_nn_maxpool2d pool3;
    tt_nn_avgpool2d pool7;
    tt_nn_linear fc9;
    tt_nn_sequential seq;
} cnn;

// conv-bn-relu-maxpool-conv-bn-relu-avgpool-flatten-linear, as cnn_values.py's make_cnn.
static void cnn_init(cnn *m, tt_rng *rng) {
    tt_nn_conv2d_init(&m->conv0, 1, 4, 3, 3, &(tt_nn_conv2d_opts){.padding = {1, 1}}, true,
                      rng);
    tt_nn_batchnorm2d_init(&m->bn1, 4, NULL);
    tt_nn_maxpool2d_init(&m->pool3, 2, 2, NULL, NULL);
    tt_nn_conv2d_init(&m->conv4, 4, 6, 3, 3, NULL, true, rng);
    tt_nn_batchnorm2d_init(&m->bn5, 6, NULL);
    tt_nn_avgpool2d_init(&m->pool7, 2, 2, (const int64_t[]){1, 1}, NULL, true);
    tt_nn_linear_init(&m->fc9, 24, 3, true, rng);
    tt_nn_sequential_init(&m->seq);
    tt_nn_sequential_add(&m->seq, tt_nn_conv2d_module(&m->conv0));
    tt_nn_sequential_add(&m->seq, tt_nn_batchnorm_module(&m->bn1));
    tt_nn_sequential_add(&m->seq, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&m->seq, tt_nn_maxpool2d_module(&m->pool3));
    tt_nn_sequential_add(&m->seq, tt_nn_conv2d_module(&m->conv4));
    tt_nn_sequential_add(&m->seq, tt_nn_batchnorm_module(&m->bn5));
    tt_nn_sequential_add(&m->seq, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&m->seq, tt_nn_avgpool2d_module(&m->pool7));
    tt_nn_sequential_add(&m->seq, tt_nn_flatten_module(1, -1));
    tt_nn_sequential_add(&m->seq, tt_nn_linear_module(&m->fc9));
}

static void cnn_free(cnn *m) {
    tt_nn_sequential_free(&m->seq);
    tt_nn_linear_free(&m->fc9);
    tt_nn_batchnorm_free(&m->bn5);
    tt_nn_conv2d_free(&m->conv4);
    tt_nn_batchnorm_free(&m->bn1);
    tt_nn_conv2d_free(&m->conv0);
}

#define CNN_NSTATE (int)(sizeof cnn_state0 / sizeof cnn_state0[0])
#define CNN_NPARAMS (int)(sizeof cnn_param_names / sizeof cnn_param_names[0])

// Copies a reference state_dict into the model's state list (same names, same order).
static void load_state(const tt_params *s, const cnn_tensor *ref, tt_dtype dtype) {
    ck_assert_int_eq(s->n, CNN_NSTATE);
    tt_scope_begin();
    for (int i = 0; i < s->n; i++) {
        ck_assert_str_eq(s->items[i].name, ref[i].name);
        tt_tensor *dst = s->items[i].tensor;
        int64_t n = shape_numel(ref[i].ndim, ref[i].shape);
        tt_tensor *src = dst->dtype == TT_I64
                             ? tt_from_data(TT_I64, 0, NULL, &(int64_t){(int64_t)ref[i].v[0]})
                             : tt_test_tensor_(dtype, ref[i].ndim, ref[i].shape, ref[i].v, n);
        tt_copy_(dst, src);
    }
    tt_scope_end();
}

static void check_state(const tt_params *s, const cnn_tensor *ref, double atol, double rtol) {
    for (int i = 0; i < s->n; i++)
        CHECK_VALUES(s->items[i].tensor, ref[i].v, shape_numel(ref[i].ndim, ref[i].shape), atol,
                     rtol);
}

// One forward and backward of the mean cross-entropy; the logits and every gradient against
// PyTorch's (concatenated in cnn_param_names' order).
static void cnn_step(cnn *m, const tt_params *params, const tt_params *state, tt_dtype dtype,
                     const double *logits_ref, const double *grads_ref, double atol,
                     double rtol) {
    tt_params_zero_grad(params);
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor_(dtype, TT_SHAPE(4, 1, 10, 10), cnn_x, 400);
    tt_tensor *labels = tt_from_data(TT_I64, TT_SHAPE(4), cnn_labels);
    tt_tensor *logits = tt_nn_sequential_forward(&m->seq, x);
    CHECK_VALUES(logits, logits_ref, 12, atol, rtol);
    tt_tensor *loss = tt_cross_entropy(logits, labels, -1);
    tt_params_check_reaches(state, loss);  // buffers in the list are fine
    tt_backward(loss);
    int64_t off = 0;
    ck_assert_int_eq(params->n, CNN_NPARAMS);
    for (int i = 0; i < params->n; i++) {
        ck_assert_str_eq(params->items[i].name, cnn_param_names[i]);
        int64_t n = tt_numel(params->items[i].tensor);
        CHECK_VALUES(tt_grad(params->items[i].tensor), grads_ref + off, n, atol, rtol);
        off += n;
    }
    tt_scope_end();
}

static void cnn_case(tt_dtype dtype, const double *train_logits, const double *train_grads,
                     const cnn_tensor *state1, const double *eval_logits,
                     const double *eval_grads, double atol, double rtol) {
    tt_dtype prev = tt_set_default_dtype(dtype);
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    cnn m;
    cnn_init(&m, &rng);
    tt_set_default_dtype(prev);
    tt_params params, state;
    tt_params_init(&params);
    tt_params_init(&state);
    tt_module model = tt_nn_sequential_module(&m.seq);
    tt_module_params(model, &params, NULL);
    tt_module_state(model, &state, NULL);
    load_state(&state, cnn_state0, dtype);
    cnn_step(&m, &params, &state, dtype, train_logits, train_grads, atol, rtol);
    check_state(&state, state1, atol, rtol);  // the running stats, num_batches_tracked 1
    tt_module_train(model, false);
    uint64_t before = tt_params_fingerprint(&state);
    cnn_step(&m, &params, &state, dtype, eval_logits, eval_grads, atol, rtol);
    ck_assert_uint_eq(tt_params_fingerprint(&state), before);  // eval leaves the state alone
    tt_params_free(&state);
    tt_params_free(&params);
    cnn_free(&m);
}

START_TEST(test_cnn_f64) {
    cnn_case(TT_F64, cnn_f64_train_logits, cnn_f64_train_grads, cnn_f64_state1,
             cnn_f64_eval_logits, cnn_f64_eval_grads, 1e-12, 1e-9);
}
END_TEST

START_TEST(test_cnn_f32) {
    cnn_case(TT_F32, cnn_f32_train_logits, cnn_f32_train_grads, cnn_f32_state1,
             cnn_f32_eval_logits, cnn_f32_eval_grads, 2e-5, 2e-4);
}
END_TEST

// A model trained one step, saved with tt_module_state, loaded into a freshly initialised one:
// the same state bit for bit, and PyTorch's eval logits.
START_TEST(test_cnn_checkpoint_eval) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    cnn a, b;
    cnn_init(&a, &rng);
    cnn_init(&b, &rng);
    tt_set_default_dtype(prev);
    tt_params pa, sa, pb, sb;
    tt_params_init(&pa);
    tt_params_init(&sa);
    tt_params_init(&pb);
    tt_params_init(&sb);
    tt_module_params(tt_nn_sequential_module(&a.seq), &pa, NULL);
    tt_module_state(tt_nn_sequential_module(&a.seq), &sa, NULL);
    tt_module_params(tt_nn_sequential_module(&b.seq), &pb, NULL);
    tt_module_state(tt_nn_sequential_module(&b.seq), &sb, NULL);
    load_state(&sa, cnn_state0, TT_F64);
    cnn_step(&a, &pa, &sa, TT_F64, cnn_f64_train_logits, cnn_f64_train_grads, 1e-12, 1e-9);
    char dir[128], path[192];
    tt_test_mkdtemp(dir, sizeof dir, "cnn_ckpt");
    snprintf(path, sizeof path, "%s/cnn.ckpt", dir);
    tt_checkpoint ck, in;
    tt_ckpt_init(&ck);
    tt_ckpt_add_params(&ck, "model.", &sa);
    ck_assert_int_eq(tt_ckpt_save(&ck, path), TT_OK);
    ck_assert_int_eq(tt_ckpt_load(&in, path), TT_OK);
    ck_assert_int_eq(tt_ckpt_restore_params(&in, "model.", &sb), TT_OK);
    ck_assert_uint_eq(tt_params_fingerprint(&sb), tt_params_fingerprint(&sa));
    for (int i = 0; i < sb.n; i++)
        ck_assert_int_eq(sb.items[i].tensor->requires_grad, sa.items[i].tensor->requires_grad);
    ck_assert_double_eq(tt_item(tt_params_get(&sb, "5.num_batches_tracked")), 1);
    tt_module_train(tt_nn_sequential_module(&b.seq), false);
    cnn_step(&b, &pb, &sb, TT_F64, cnn_f64_eval_logits, cnn_f64_eval_grads, 1e-12, 1e-9);
    tt_ckpt_free(&in);
    tt_ckpt_free(&ck);
    tt_params_free(&sb);
    tt_params_free(&pb);
    tt_params_free(&sa);
    tt_params_free(&pa);
    cnn_free(&b);
    cnn_free(&a);
    tt_test_rmdir(dir);
}
END_TEST

// ---- aborts ----

START_TEST(test_batchnorm2d_rejects_3d) {
    tt_expect_abort("BatchNorm2d(3) expects x (N, C, H, W)");
    tt_nn_batchnorm bn;
    tt_nn_batchnorm2d_init(&bn, 3, NULL);
    tt_nn_batchnorm_forward(&bn, tt_zeros(TT_F32, TT_SHAPE(2, 3, 4)));
}
END_TEST

START_TEST(test_batchnorm1d_rejects_channels) {
    tt_expect_abort("BatchNorm1d(3) expects x (N, C) or (N, C, L) with C = 3");
    tt_nn_batchnorm bn;
    tt_nn_batchnorm1d_init(&bn, 3, NULL);
    tt_nn_batchnorm_forward(&bn, tt_zeros(TT_F32, TT_SHAPE(2, 4)));
}
END_TEST

START_TEST(test_batchnorm_rejects_eps) {
    tt_expect_abort("eps must be positive");
    tt_nn_batchnorm bn;
    tt_nn_batchnorm1d_init(&bn, 3, &(tt_nn_batchnorm_opts){.momentum = 0.1});
}
END_TEST

START_TEST(test_batchnorm_module_uninitialised) {
    tt_expect_abort("call tt_nn_batchnorm1d_init or tt_nn_batchnorm2d_init first");
    tt_nn_batchnorm bn = {0};
    tt_nn_batchnorm_module(&bn);
}
END_TEST

START_TEST(test_maxpool2d_rejects_padding) {
    tt_expect_abort("must be in 0 .. kernel / 2");
    tt_nn_maxpool2d m;
    tt_nn_maxpool2d_init(&m, 2, 2, NULL, (const int64_t[]){2, 0});
}
END_TEST

START_TEST(test_avgpool2d_rejects_stride) {
    tt_expect_abort("stride (-1, 1) must be positive");
    tt_nn_avgpool2d m;
    tt_nn_avgpool2d_init(&m, 2, 2, (const int64_t[]){-1, 1}, NULL, true);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("nn_cnn");
    TCase *tc = tt_tcase("batchnorm");
    tcase_add_loop_test(tc, test_batchnorm_matches_pytorch, 0,
                        (int)(sizeof bn_refs / sizeof bn_refs[0]));
    tcase_add_test(tc, test_batchnorm_params_buffers_state);
    tcase_add_test(tc, test_batchnorm_checkpoint_roundtrip);
    tcase_add_test(tc, test_batchnorm_f32);
    suite_add_tcase(s, tc);
    tc = tt_tcase("pool");
    tcase_add_loop_test(tc, test_pool_modules_match_pytorch, 0,
                        (int)(sizeof pool_refs / sizeof pool_refs[0]));
    suite_add_tcase(s, tc);
    tc = tt_tcase("cnn");
    tcase_add_test(tc, test_cnn_f64);
    tcase_add_test(tc, test_cnn_f32);
    tcase_add_test(tc, test_cnn_checkpoint_eval);
    suite_add_tcase(s, tc);
    tc = tt_tcase_aborts("aborts_cnn");
    tcase_add_test_raise_signal(tc, test_batchnorm2d_rejects_3d, SIGABRT);
    tcase_add_test_raise_signal(tc, test_batchnorm1d_rejects_channels, SIGABRT);
    tcase_add_test_raise_signal(tc, test_batchnorm_rejects_eps, SIGABRT);
    tcase_add_test_raise_signal(tc, test_batchnorm_module_uninitialised, SIGABRT);
    tcase_add_test_raise_signal(tc, test_maxpool2d_rejects_padding, SIGABRT);
    tcase_add_test_raise_signal(tc, test_avgpool2d_rejects_stride, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tt_test_run(suite()); }

// Gradcheck cases of the BatchNorm1d/2d modules (training and eval, affine or not, the
// cumulative momentum) and of the pooling modules in a tt_nn_sequential after a BatchNorm2d.
// The module's weight and bias are gradcheck inputs; every call gets fresh running stats of
// x's dtype (training updates them in place, which must not change the function checked,
// and gc_check's f32 forward needs f32 buffers).
#include "gc_util.h"

#include <math.h>

typedef struct bn_case {
    tt_nn_batchnorm *m;
    double rm, rv;  // the running stats each call starts from
} bn_case;

// in = {x[, weight, bias]}: the module with the inputs as parameters and fresh buffers.
static tt_nn_batchnorm bn_with(const bn_case *c, tt_tensor *const *in, int n) {
    tt_nn_batchnorm m = *c->m;
    tt_dtype dt = in[0]->dtype;
    m.weight = n > 1 ? in[1] : NULL;
    m.bias = n > 2 ? in[2] : NULL;
    if (m.running_mean) {
        m.running_mean = tt_full(dt, TT_SHAPE(m.num_features), c->rm);
        m.running_var = tt_full(dt, TT_SHAPE(m.num_features), c->rv);
        m.num_batches_tracked = tt_zeros(TT_I64, 0, NULL);
    }
    return m;
}

static tt_tensor *f_bn(tt_tensor *const *in, int n, void *ctx) {
    tt_nn_batchnorm m = bn_with(ctx, in, n);
    return tt_module_forward(tt_nn_batchnorm_module(&m), in[0]);
}

// BatchNorm2d (N, C, H, W), affine, in training then in eval mode.
static void batchnorm2d_train_eval(gc_report *r) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_batchnorm m;
    tt_nn_batchnorm2d_init(&m, 3, NULL);
    tt_set_default_dtype(prev);
    tt_tensor *in[3] = {gc_input(TT_SHAPE(2, 3, 3, 4), -1, 1), gc_input(TT_SHAPE(3), 0.5, 1.5),
                        gc_input(TT_SHAPE(3), -1, 1)};
    bn_case c = {&m, 0.2, 0.7};
    gc_check(r, f_bn, &c, 3, in, NULL);
    tt_nn_batchnorm_train(&m, false);
    gc_check(r, f_bn, &c, 3, in, NULL);
    tt_nn_batchnorm_free(&m);
}

// BatchNorm1d on (N, C) and (N, C, L), without affine and with the cumulative momentum;
// without running stats the batch's stats serve in eval mode too.
static void batchnorm1d_variants(gc_report *r) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_batchnorm_opts o = tt_nn_batchnorm_default_opts();
    o.affine = false;
    o.momentum = NAN;
    tt_nn_batchnorm plain, untracked;
    tt_nn_batchnorm1d_init(&plain, 4, &o);
    o.affine = true;
    o.track_running_stats = false;
    tt_nn_batchnorm1d_init(&untracked, 2, &o);
    tt_set_default_dtype(prev);
    tt_tensor *x = gc_input(TT_SHAPE(5, 4), -1, 1);
    gc_check(r, f_bn, &(bn_case){&plain, 0, 1}, 1, &x, NULL);
    tt_tensor *in[3] = {gc_input(TT_SHAPE(3, 2, 4), -1, 1), gc_input(TT_SHAPE(2), 0.5, 1.5),
                        gc_input(TT_SHAPE(2), -1, 1)};
    tt_nn_batchnorm_train(&untracked, false);
    gc_check(r, f_bn, &(bn_case){&untracked, 0, 1}, 3, in, NULL);
    tt_nn_batchnorm_free(&untracked);
    tt_nn_batchnorm_free(&plain);
}

// ---- the pooling modules in a sequential ----

typedef struct pool_seq {
    bn_case bn;
    tt_nn_maxpool2d max;
    tt_nn_avgpool2d avg;
    tt_nn_adaptive_avgpool2d adaptive;
} pool_seq;

// BatchNorm2d -> MaxPool2d(3, 2, 1) -> AvgPool2d(2, 1, count_include_pad false, padding 1)
// -> AdaptiveAvgPool2d(2, 3). in = {x, weight, bias}.
static tt_tensor *f_pool_seq(tt_tensor *const *in, int n, void *ctx) {
    pool_seq *c = ctx;
    tt_nn_batchnorm m = bn_with(&c->bn, in, n);
    tt_nn_sequential s;
    tt_nn_sequential_init(&s);
    tt_nn_sequential_add(&s, tt_nn_batchnorm_module(&m));
    tt_nn_sequential_add(&s, tt_nn_maxpool2d_module(&c->max));
    tt_nn_sequential_add(&s, tt_nn_avgpool2d_module(&c->avg));
    tt_nn_sequential_add(&s, tt_nn_adaptive_avgpool2d_module(&c->adaptive));
    tt_tensor *y = tt_nn_sequential_forward(&s, in[0]);
    tt_nn_sequential_free(&s);
    return y;
}

static void pool_modules_sequential(gc_report *r) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    pool_seq c;
    tt_nn_batchnorm bn;
    tt_nn_batchnorm2d_init(&bn, 2, NULL);
    tt_set_default_dtype(prev);
    c.bn = (bn_case){&bn, 0, 1};
    tt_nn_maxpool2d_init(&c.max, 3, 3, (const int64_t[]){2, 2}, (const int64_t[]){1, 1});
    tt_nn_avgpool2d_init(&c.avg, 2, 2, (const int64_t[]){1, 1}, (const int64_t[]){1, 1}, false);
    tt_nn_adaptive_avgpool2d_init(&c.adaptive, 2, 3);
    // distinct values: a perturbation never moves a maximum
    tt_tensor *in[3] = {gc_input(TT_SHAPE(2, 2, 7, 6), -1, 1), gc_input(TT_SHAPE(2), 0.5, 1.5),
                        gc_input(TT_SHAPE(2), -1, 1)};
    gc_check(r, f_pool_seq, &c, 3, in, NULL);
    tt_nn_batchnorm_free(&bn);
}

const gc_module_case gc_modules_nn_batchnorm[] = {
    {"batchnorm2d", "train_eval", batchnorm2d_train_eval},
    {"batchnorm1d", "nc_ncl_cumulative_untracked", batchnorm1d_variants},
    {"pool_modules", "bn_max_avg_adaptive", pool_modules_sequential},
    {0},
};

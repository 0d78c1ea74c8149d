// The batch norm modules: BatchNorm1d and BatchNorm2d (tt_nn_batchnorm) with their running
// statistics as buffers, train/eval, and the tt_module wrapper. The op is tt_batch_norm
// (autograd/ops_pool.c).
#include "nn_internal.h"

#include <math.h>
#include <string.h>

tt_nn_batchnorm_opts tt_nn_batchnorm_default_opts(void) {
    return (tt_nn_batchnorm_opts){
        .eps = 1e-5, .momentum = 0.1, .affine = true, .track_running_stats = true};
}

static void batchnorm_init(tt_nn_batchnorm *m, int64_t num_features,
                           const tt_nn_batchnorm_opts *opts, int dims, const char *func) {
    tt_nn_batchnorm_opts o = opts ? *opts : tt_nn_batchnorm_default_opts();
    TT_CHECK_IN(func, num_features > 0, "num_features must be positive, got %lld",
                (long long)num_features);
    TT_CHECK_IN(func, o.eps > 0, "eps must be positive, got %g (PyTorch's default is 1e-5)",
                o.eps);
    TT_CHECK_IN(func, isnan(o.momentum) || o.momentum <= 1, "momentum must be at most 1, got "
                "%g (0.1 by default; negative or NAN for a cumulative average)", o.momentum);
    memset(m, 0, sizeof *m);
    m->num_features = num_features;
    m->dims = dims;
    m->opts = o;
    m->training = true;
    int64_t C = num_features;
    if (o.affine) {
        m->weight = tt__param_new(1, &C);
        tt_init_ones_(m->weight);
        m->bias = tt__param_new(1, &C);  // zeros
    }
    if (o.track_running_stats) {
        m->running_mean = tt__buffer_new(1, &C);  // zeros
        m->running_var = tt__buffer_new(1, &C);
        tt_init_ones_(m->running_var);
        m->num_batches_tracked = tt__new_zeros(TT_I64, 0, NULL);
    }
}

void tt_nn_batchnorm1d_init(tt_nn_batchnorm *m, int64_t num_features,
                            const tt_nn_batchnorm_opts *opts) {
    batchnorm_init(m, num_features, opts, 1, __func__);
}

void tt_nn_batchnorm2d_init(tt_nn_batchnorm *m, int64_t num_features,
                            const tt_nn_batchnorm_opts *opts) {
    batchnorm_init(m, num_features, opts, 2, __func__);
}

tt_tensor *tt_nn_batchnorm_forward(tt_nn_batchnorm *m, tt_tensor *x) {
    TT_CHECK(m && x, "module or x is NULL");
    if (m->dims == 1)
        TT_CHECK((x->ndim == 2 || x->ndim == 3) && x->shape[1] == m->num_features,
                 "BatchNorm1d(%lld) expects x (N, C) or (N, C, L) with C = %lld, got %s",
                 (long long)m->num_features, (long long)m->num_features, tt__shape(x));
    else
        TT_CHECK(x->ndim == 4 && x->shape[1] == m->num_features,
                 "BatchNorm2d(%lld) expects x (N, C, H, W) with C = %lld, got %s",
                 (long long)m->num_features, (long long)m->num_features, tt__shape(x));
    bool track = m->opts.track_running_stats;
    double factor = 0;  // the weight of this batch's stats in the running ones
    if (m->training && track) {
        int64_t *count = tt_data(m->num_batches_tracked);
        *count += 1;
        double mom = m->opts.momentum;
        factor = (isnan(mom) || mom < 0) ? 1.0 / (double)*count : mom;
    }
    // Without tracking there are no running stats: the batch's stats in eval mode too.
    return tt_batch_norm(x, m->running_mean, m->running_var, m->weight, m->bias,
                         m->training || !track, factor, m->opts.eps);
}

void tt_nn_batchnorm_params(const tt_nn_batchnorm *m, tt_params *out, const char *prefix) {
    if (m->weight) tt_params_add(out, prefix, "weight", m->weight);
    if (m->bias) tt_params_add(out, prefix, "bias", m->bias);
}

void tt_nn_batchnorm_buffers(const tt_nn_batchnorm *m, tt_params *out, const char *prefix) {
    if (!m->running_mean) return;
    tt_params_add(out, prefix, "running_mean", m->running_mean);
    tt_params_add(out, prefix, "running_var", m->running_var);
    tt_params_add(out, prefix, "num_batches_tracked", m->num_batches_tracked);
}

void tt_nn_batchnorm_train(tt_nn_batchnorm *m, bool training) { m->training = training; }

void tt_nn_batchnorm_free(tt_nn_batchnorm *m) {
    tt_release(m->weight);
    tt_release(m->bias);
    tt_release(m->running_mean);
    tt_release(m->running_var);
    tt_release(m->num_batches_tracked);
    memset(m, 0, sizeof *m);
}

static tt_tensor *batchnorm_fwd(void *self, tt_tensor *x) {
    return tt_nn_batchnorm_forward(self, x);
}
static void batchnorm_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_batchnorm_params(self, out, prefix);
}
static void batchnorm_buffers(const void *self, tt_params *out, const char *prefix) {
    tt_nn_batchnorm_buffers(self, out, prefix);
}
static void batchnorm_train(void *self, bool training) { tt_nn_batchnorm_train(self, training); }
static void batchnorm_free(void *self) { tt_nn_batchnorm_free(self); }
static const tt_module_ops batchnorm1d_ops = {
    .type = "BatchNorm1d", .forward = batchnorm_fwd, .params = batchnorm_params,
    .train = batchnorm_train, .free = batchnorm_free, .buffers = batchnorm_buffers};
static const tt_module_ops batchnorm2d_ops = {
    .type = "BatchNorm2d", .forward = batchnorm_fwd, .params = batchnorm_params,
    .train = batchnorm_train, .free = batchnorm_free, .buffers = batchnorm_buffers};

tt_module tt_nn_batchnorm_module(tt_nn_batchnorm *m) {
    TT_CHECK(m && (m->dims == 1 || m->dims == 2), "the module is not initialised: call "
             "tt_nn_batchnorm1d_init or tt_nn_batchnorm2d_init first");
    return (tt_module){m, m->dims == 1 ? &batchnorm1d_ops : &batchnorm2d_ops};
}

tt_module tt_nn_batchnorm1d_new(int64_t num_features, const tt_nn_batchnorm_opts *opts) {
    tt_nn_batchnorm *m = TT_MALLOC(sizeof *m);
    tt_nn_batchnorm1d_init(m, num_features, opts);
    static const tt_module_ops owned = {
        .type = "BatchNorm1d", .forward = batchnorm_fwd, .params = batchnorm_params,
        .train = batchnorm_train, .free = batchnorm_free, .buffers = batchnorm_buffers,
        .owned = true};
    return (tt_module){m, &owned};
}

// The convolution modules: Conv2d, ConvTranspose2d and Conv1d (tt_*_layer) with PyTorch's
// default init, Dropout2d, Upsample (nearest) and Unflatten, each with its tt_module wrapper.
// The ops themselves are in autograd/ops_conv.c.
#include "nn_internal.h"

#include <math.h>
#include <string.h>

// ---- shared by the conv layers ----

// Checks the channel counts, the kernel and the groups, then creates the weight (wshape, its
// ndim dims) and, with has_bias, the bias (out_channels,) with PyTorch's default init:
// kaiming_uniform(a = sqrt 5), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)), the same bound for the
// bias, the weight drawn first. kernel is the product of the kernel's sizes; who names the
// public init in messages.
static void conv_params_init(const char *who, tt_tensor **weight, tt_tensor **bias,
                             int64_t in_channels, int64_t out_channels, int64_t kernel,
                             int64_t groups, int ndim, const int64_t *wshape, int64_t fan_in,
                             bool has_bias, tt_rng *rng) {
    TT_CHECK_IN(who, in_channels > 0 && out_channels > 0 && kernel > 0,
                "channels and kernel size must be positive, got in=%lld out=%lld kernel "
                "elements=%lld",
                (long long)in_channels, (long long)out_channels, (long long)kernel);
    TT_CHECK_IN(who, groups > 0 && in_channels % groups == 0 && out_channels % groups == 0,
                "groups %lld must be positive and divide in_channels %lld and out_channels %lld",
                (long long)groups, (long long)in_channels, (long long)out_channels);
    double bound = 1.0 / sqrt((double)fan_in);
    *weight = tt__param_new(ndim, wshape);
    tt_uniform_(*weight, rng, -bound, bound);
    *bias = NULL;
    if (has_bias) {
        *bias = tt__param_new(1, (int64_t[]){out_channels});
        tt_uniform_(*bias, rng, -bound, bound);
    }
}

// ---- Conv2d ----

void tt_nn_conv2d_init(tt_nn_conv2d *m, int64_t in_channels, int64_t out_channels, int64_t kh,
                       int64_t kw, const tt_nn_conv2d_opts *opts, bool bias, tt_rng *rng) {
    tt_nn_conv2d_opts o = opts ? *opts : (tt_nn_conv2d_opts){0};
    if (o.groups == 0) o.groups = 1;
    for (int d = 0; d < 2; d++) {
        if (o.stride[d] == 0) o.stride[d] = 1;
        if (o.dilation[d] == 0) o.dilation[d] = 1;
    }
    memset(m, 0, sizeof *m);
    m->in_channels = in_channels;
    m->out_channels = out_channels;
    m->opts = o;
    int64_t g = o.groups > 0 ? o.groups : 1;  // checked in conv_params_init
    conv_params_init(__func__, &m->weight, &m->bias, in_channels, out_channels,
                     kh > 0 && kw > 0 ? kh * kw : 0, o.groups, 4,
                     (int64_t[]){out_channels, in_channels / g, kh, kw},
                     in_channels / g * kh * kw, bias, rng);  // fan_in = in / groups * kh * kw
}

tt_tensor *tt_nn_conv2d_forward(tt_nn_conv2d *m, tt_tensor *x) {
    TT_CHECK(x->ndim == 4 && x->shape[1] == m->in_channels,
             "input %s must be (N, in_channels=%lld, H, W)", tt__shape(x),
             (long long)m->in_channels);
    return tt_conv2d(x, m->weight, m->bias, m->opts.stride, m->opts.padding, m->opts.dilation,
                     m->opts.groups);  // (N, out_channels, OH, OW)
}

void tt_nn_conv2d_params(const tt_nn_conv2d *m, tt_params *out, const char *prefix) {
    tt_params_add(out, prefix, "weight", m->weight);
    if (m->bias) tt_params_add(out, prefix, "bias", m->bias);
}

void tt_nn_conv2d_free(tt_nn_conv2d *m) {
    tt_release(m->weight);
    tt_release(m->bias);
    memset(m, 0, sizeof *m);
}

static tt_tensor *conv2d_fwd(void *self, tt_tensor *x) { return tt_nn_conv2d_forward(self, x); }
static void conv2d_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_conv2d_params(self, out, prefix);
}
static void conv2d_free(void *self) { tt_nn_conv2d_free(self); }
static const tt_module_ops conv2d_ops = {
    .type = "Conv2d", .forward = conv2d_fwd, .params = conv2d_params, .free = conv2d_free};
tt_module tt_nn_conv2d_module(tt_nn_conv2d *m) { return (tt_module){m, &conv2d_ops}; }

tt_module tt_nn_conv2d_new(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw,
                           const tt_nn_conv2d_opts *opts, bool bias, tt_rng *rng) {
    tt_nn_conv2d *m = TT_MALLOC(sizeof *m);
    tt_nn_conv2d_init(m, in_channels, out_channels, kh, kw, opts, bias, rng);
    static const tt_module_ops owned = {.type = "Conv2d", .forward = conv2d_fwd,
        .params = conv2d_params, .free = conv2d_free, .owned = true};
    return (tt_module){m, &owned};
}

// ---- ConvTranspose2d ----

void tt_nn_conv_transpose2d_init(tt_nn_conv_transpose2d *m, int64_t in_channels,
                                 int64_t out_channels, int64_t kh, int64_t kw,
                                 const tt_nn_conv_transpose2d_opts *opts, bool bias,
                                 tt_rng *rng) {
    tt_nn_conv_transpose2d_opts o = opts ? *opts : (tt_nn_conv_transpose2d_opts){0};
    if (o.groups == 0) o.groups = 1;
    for (int d = 0; d < 2; d++) {
        if (o.stride[d] == 0) o.stride[d] = 1;
        if (o.dilation[d] == 0) o.dilation[d] = 1;
    }
    memset(m, 0, sizeof *m);
    m->in_channels = in_channels;
    m->out_channels = out_channels;
    m->opts = o;
    // PyTorch's fan_in of a (in, out / groups, kh, kw) weight: its dim 1 times the kernel size.
    int64_t g = o.groups > 0 ? o.groups : 1;  // checked in conv_params_init
    conv_params_init(__func__, &m->weight, &m->bias, in_channels, out_channels,
                     kh > 0 && kw > 0 ? kh * kw : 0, o.groups, 4,
                     (int64_t[]){in_channels, out_channels / g, kh, kw},
                     out_channels / g * kh * kw, bias, rng);
}

tt_tensor *tt_nn_conv_transpose2d_forward(tt_nn_conv_transpose2d *m, tt_tensor *x) {
    TT_CHECK(x->ndim == 4 && x->shape[1] == m->in_channels,
             "input %s must be (N, in_channels=%lld, H, W)", tt__shape(x),
             (long long)m->in_channels);
    return tt_conv_transpose2d(x, m->weight, m->bias, m->opts.stride, m->opts.padding,
                               m->opts.output_padding, m->opts.groups, m->opts.dilation);
}

void tt_nn_conv_transpose2d_params(const tt_nn_conv_transpose2d *m, tt_params *out,
                                   const char *prefix) {
    tt_params_add(out, prefix, "weight", m->weight);
    if (m->bias) tt_params_add(out, prefix, "bias", m->bias);
}

void tt_nn_conv_transpose2d_free(tt_nn_conv_transpose2d *m) {
    tt_release(m->weight);
    tt_release(m->bias);
    memset(m, 0, sizeof *m);
}

static tt_tensor *convt_fwd(void *self, tt_tensor *x) {
    return tt_nn_conv_transpose2d_forward(self, x);
}
static void convt_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_conv_transpose2d_params(self, out, prefix);
}
static void convt_free(void *self) { tt_nn_conv_transpose2d_free(self); }
static const tt_module_ops convt_ops = {
    .type = "ConvTranspose2d", .forward = convt_fwd, .params = convt_params, .free = convt_free};
tt_module tt_nn_conv_transpose2d_module(tt_nn_conv_transpose2d *m) {
    return (tt_module){m, &convt_ops};
}

// ---- Conv1d ----

void tt_nn_conv1d_init(tt_nn_conv1d *m, int64_t in_channels, int64_t out_channels,
                       int64_t k, const tt_nn_conv1d_opts *opts, bool bias, tt_rng *rng) {
    tt_nn_conv1d_opts o = opts ? *opts : (tt_nn_conv1d_opts){0};
    if (o.groups == 0) o.groups = 1;
    if (o.stride == 0) o.stride = 1;
    if (o.dilation == 0) o.dilation = 1;
    memset(m, 0, sizeof *m);
    m->in_channels = in_channels;
    m->out_channels = out_channels;
    m->opts = o;
    int64_t g = o.groups > 0 ? o.groups : 1;  // checked in conv_params_init
    conv_params_init(__func__, &m->weight, &m->bias, in_channels, out_channels, k, o.groups, 3,
                     (int64_t[]){out_channels, in_channels / g, k}, in_channels / g * k, bias,
                     rng);  // as Conv2d
}

tt_tensor *tt_nn_conv1d_forward(tt_nn_conv1d *m, tt_tensor *x) {
    TT_CHECK(x->ndim == 3 && x->shape[1] == m->in_channels,
             "input %s must be (N, in_channels=%lld, L)", tt__shape(x),
             (long long)m->in_channels);
    return tt_conv1d(x, m->weight, m->bias, m->opts.stride, m->opts.padding, m->opts.dilation,
                     m->opts.groups);  // (N, out_channels, OL)
}

void tt_nn_conv1d_params(const tt_nn_conv1d *m, tt_params *out, const char *prefix) {
    tt_params_add(out, prefix, "weight", m->weight);
    if (m->bias) tt_params_add(out, prefix, "bias", m->bias);
}

void tt_nn_conv1d_free(tt_nn_conv1d *m) {
    tt_release(m->weight);
    tt_release(m->bias);
    memset(m, 0, sizeof *m);
}

static tt_tensor *conv1d_fwd(void *self, tt_tensor *x) { return tt_nn_conv1d_forward(self, x); }
static void conv1d_params(const void *self, tt_params *out, const char *prefix) {
    tt_nn_conv1d_params(self, out, prefix);
}
static void conv1d_free(void *self) { tt_nn_conv1d_free(self); }
static const tt_module_ops conv1d_ops = {
    .type = "Conv1d", .forward = conv1d_fwd, .params = conv1d_params, .free = conv1d_free};
tt_module tt_nn_conv1d_module(tt_nn_conv1d *m) { return (tt_module){m, &conv1d_ops}; }

// ---- Dropout2d ----

void tt_nn_dropout2d_init(tt_nn_dropout2d *m, double p, tt_rng *rng) {
    TT_CHECK(p >= 0 && p <= 1, "dropout probability %g is outside [0, 1]", p);
    TT_CHECK(p == 0 || rng, "dropout2d with p=%g needs an rng", p);
    m->p = p;
    m->training = true;
    m->rng = rng;
}

tt_tensor *tt_nn_dropout2d_forward(tt_nn_dropout2d *m, tt_tensor *x) {
    return tt_dropout2d(x, m->p, m->training, m->rng);
}

void tt_nn_dropout2d_train(tt_nn_dropout2d *m, bool training) { m->training = training; }

static tt_tensor *drop2d_fwd(void *self, tt_tensor *x) {
    return tt_nn_dropout2d_forward(self, x);
}
static void drop2d_train(void *self, bool training) { tt_nn_dropout2d_train(self, training); }
static const tt_module_ops drop2d_ops = {
    .type = "Dropout2d", .forward = drop2d_fwd, .train = drop2d_train};
tt_module tt_nn_dropout2d_module(tt_nn_dropout2d *m) { return (tt_module){m, &drop2d_ops}; }

// ---- Upsample, Unflatten ----

static tt_tensor *upsample_fwd(void *self, tt_tensor *x) {
    const tt_nn_upsample *m = self;
    if (m->size[0] > 0) return tt_upsample_nearest2d(x, m->size[0], m->size[1]);
    return tt_upsample_nearest2d_scale(x, m->scale[0], m->scale[1]);
}
static const tt_module_ops upsample_ops = {.type = "Upsample", .forward = upsample_fwd};

tt_module tt_nn_upsample_module(tt_nn_upsample *m) {
    TT_CHECK(m, "m is NULL");
    bool by_size = m->size[0] > 0 && m->size[1] > 0;
    bool by_scale = m->scale[0] > 0 && m->scale[1] > 0;
    TT_CHECK(by_size != by_scale && (by_size || (m->size[0] == 0 && m->size[1] == 0)) &&
                 (by_scale || (m->scale[0] == 0 && m->scale[1] == 0)),
             "set exactly one of size (%lld, %lld) and scale (%g, %g), both entries > 0",
             (long long)m->size[0], (long long)m->size[1], m->scale[0], m->scale[1]);
    return (tt_module){m, &upsample_ops};
}

static tt_tensor *unflatten_fwd(void *self, tt_tensor *x) {
    const tt_nn_unflatten *m = self;
    return tt_unflatten(x, m->dim, m->sizes, m->n);
}
static const tt_module_ops unflatten_ops = {.type = "Unflatten", .forward = unflatten_fwd};

tt_module tt_nn_unflatten_module(tt_nn_unflatten *m) {
    TT_CHECK(m && m->n >= 1 && m->n <= TT_MAX_DIMS, "n = %d sizes: need 1 .. %d",
             m ? m->n : 0, TT_MAX_DIMS);
    return (tt_module){m, &unflatten_ops};
}

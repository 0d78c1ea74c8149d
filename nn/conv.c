// The convolution modules: Conv2d (tt_conv2d_layer) and its tt_module wrapper, with PyTorch's
// default init. The op itself is tt_conv2d (autograd/ops_conv.c). No Conv1d module yet.
#include "nn_internal.h"

#include <math.h>
#include <string.h>

// ---- Conv2d ----

void tt_conv2d_layer_init(tt_conv2d_layer *m, int64_t in_channels, int64_t out_channels, int64_t kh,
                          int64_t kw, const tt_conv2d_opts *opts, bool bias, tt_rng *rng) {
    tt_conv2d_opts o = opts ? *opts : (tt_conv2d_opts){0};
    if (o.groups == 0) o.groups = 1;
    for (int d = 0; d < 2; d++) {
        if (o.stride[d] == 0) o.stride[d] = 1;
        if (o.dilation[d] == 0) o.dilation[d] = 1;
    }
    TT_CHECK(in_channels > 0 && out_channels > 0 && kh > 0 && kw > 0,
             "channels and kernel size must be positive, got in=%lld out=%lld kernel=(%lld, "
             "%lld)",
             (long long)in_channels, (long long)out_channels, (long long)kh, (long long)kw);
    TT_CHECK(o.groups > 0 && in_channels % o.groups == 0 && out_channels % o.groups == 0,
             "groups %lld must be positive and divide in_channels %lld and out_channels %lld",
             (long long)o.groups, (long long)in_channels, (long long)out_channels);
    memset(m, 0, sizeof *m);
    m->in_channels = in_channels;
    m->out_channels = out_channels;
    m->opts = o;
    // PyTorch's default: kaiming_uniform(a = sqrt 5) on W, i.e. U(-1/sqrt(fan_in),
    // 1/sqrt(fan_in)) with fan_in = in_channels / groups * kh * kw, and the same bound for b.
    int64_t fan_in = in_channels / o.groups * kh * kw;
    double bound = 1.0 / sqrt((double)fan_in);
    m->weight = tt__param_new(4, (int64_t[]){out_channels, in_channels / o.groups, kh, kw});
    tt_uniform_(m->weight, rng, -bound, bound);
    if (bias) {
        m->bias = tt__param_new(1, (int64_t[]){out_channels});
        tt_uniform_(m->bias, rng, -bound, bound);
    }
}

tt_tensor *tt_conv2d_layer_forward(tt_conv2d_layer *m, tt_tensor *x) {
    TT_CHECK(x->ndim == 4 && x->shape[1] == m->in_channels,
             "input %s must be (N, in_channels=%lld, H, W)", tt__shape(x),
             (long long)m->in_channels);
    return tt_conv2d(x, m->weight, m->bias, m->opts.stride, m->opts.padding, m->opts.dilation,
                     m->opts.groups);  // (N, out_channels, OH, OW)
}

void tt_conv2d_layer_params(const tt_conv2d_layer *m, tt_params *out, const char *prefix) {
    tt_params_add(out, prefix, "weight", m->weight);
    if (m->bias) tt_params_add(out, prefix, "bias", m->bias);
}

void tt_conv2d_layer_free(tt_conv2d_layer *m) {
    tt_release(m->weight);
    tt_release(m->bias);
    memset(m, 0, sizeof *m);
}

static tt_tensor *conv2d_fwd(void *self, tt_tensor *x) { return tt_conv2d_layer_forward(self, x); }
static void conv2d_params(const void *self, tt_params *out, const char *prefix) {
    tt_conv2d_layer_params(self, out, prefix);
}
static void conv2d_free(void *self) { tt_conv2d_layer_free(self); }
static const tt_module_ops conv2d_ops = {
    .type = "Conv2d", .forward = conv2d_fwd, .params = conv2d_params, .free = conv2d_free};
tt_module tt_conv2d_layer_module(tt_conv2d_layer *m) { return (tt_module){m, &conv2d_ops}; }

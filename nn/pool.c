// The pooling modules: MaxPool2d, AvgPool2d and AdaptiveAvgPool2d as structs holding their
// options, with tt_module wrappers. The ops are in autograd/ops_pool.c.
#include "nn_internal.h"

#include <string.h>

// kernel, stride (NULL or {0, 0}: the kernel) and padding (NULL: 0) into the struct's arrays.
static void pool_opts(int64_t kernel[2], int64_t stride[2], int64_t padding[2], int64_t kh,
                      int64_t kw, const int64_t *st, const int64_t *pad, const char *func) {
    TT_CHECK_IN(func, kh > 0 && kw > 0, "kernel (%lld, %lld) must be positive", (long long)kh,
                (long long)kw);
    kernel[0] = kh, kernel[1] = kw;
    bool st_none = !st || (st[0] == 0 && st[1] == 0);
    for (int d = 0; d < 2; d++) {
        stride[d] = st_none ? kernel[d] : st[d];
        padding[d] = pad ? pad[d] : 0;
        TT_CHECK_IN(func, stride[d] > 0, "stride (%lld, %lld) must be positive (or NULL / "
                    "{0, 0} for the kernel)", (long long)st[0], (long long)st[1]);
        TT_CHECK_IN(func, padding[d] >= 0 && 2 * padding[d] <= kernel[d], "padding (%lld, "
                    "%lld) must be in 0 .. kernel / 2 (kernel (%lld, %lld)), as PyTorch",
                    (long long)padding[0], (long long)padding[1], (long long)kh,
                    (long long)kw);
    }
}

// ---- MaxPool2d ----

void tt_nn_maxpool2d_init(tt_nn_maxpool2d *m, int64_t kh, int64_t kw, const int64_t stride[2],
                          const int64_t padding[2]) {
    memset(m, 0, sizeof *m);
    pool_opts(m->kernel, m->stride, m->padding, kh, kw, stride, padding, __func__);
}

tt_tensor *tt_nn_maxpool2d_forward(tt_nn_maxpool2d *m, tt_tensor *x) {
    return tt_max_pool2d(x, m->kernel, m->stride, m->padding, NULL);
}

static tt_tensor *maxpool2d_fwd(void *self, tt_tensor *x) {
    return tt_nn_maxpool2d_forward(self, x);
}
static const tt_module_ops maxpool2d_ops = {.type = "MaxPool2d", .forward = maxpool2d_fwd};
tt_module tt_nn_maxpool2d_module(tt_nn_maxpool2d *m) { return (tt_module){m, &maxpool2d_ops}; }

// ---- AvgPool2d ----

void tt_nn_avgpool2d_init(tt_nn_avgpool2d *m, int64_t kh, int64_t kw, const int64_t stride[2],
                          const int64_t padding[2], bool count_include_pad) {
    memset(m, 0, sizeof *m);
    pool_opts(m->kernel, m->stride, m->padding, kh, kw, stride, padding, __func__);
    m->count_include_pad = count_include_pad;
}

tt_tensor *tt_nn_avgpool2d_forward(tt_nn_avgpool2d *m, tt_tensor *x) {
    return tt_avg_pool2d(x, m->kernel, m->stride, m->padding, m->count_include_pad);
}

static tt_tensor *avgpool2d_fwd(void *self, tt_tensor *x) {
    return tt_nn_avgpool2d_forward(self, x);
}
static const tt_module_ops avgpool2d_ops = {.type = "AvgPool2d", .forward = avgpool2d_fwd};
tt_module tt_nn_avgpool2d_module(tt_nn_avgpool2d *m) { return (tt_module){m, &avgpool2d_ops}; }

// ---- AdaptiveAvgPool2d ----

void tt_nn_adaptive_avgpool2d_init(tt_nn_adaptive_avgpool2d *m, int64_t out_h, int64_t out_w) {
    TT_CHECK(out_h > 0 && out_w > 0, "output size (%lld, %lld) must be positive",
             (long long)out_h, (long long)out_w);
    m->out_h = out_h, m->out_w = out_w;
}

tt_tensor *tt_nn_adaptive_avgpool2d_forward(tt_nn_adaptive_avgpool2d *m, tt_tensor *x) {
    return tt_adaptive_avg_pool2d(x, m->out_h, m->out_w);
}

static tt_tensor *adaptive_avgpool2d_fwd(void *self, tt_tensor *x) {
    return tt_nn_adaptive_avgpool2d_forward(self, x);
}
static const tt_module_ops adaptive_avgpool2d_ops = {.type = "AdaptiveAvgPool2d",
                                                     .forward = adaptive_avgpool2d_fwd};
tt_module tt_nn_adaptive_avgpool2d_module(tt_nn_adaptive_avgpool2d *m) {
    return (tt_module){m, &adaptive_avgpool2d_ops};
}

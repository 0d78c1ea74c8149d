// tinytorch.c nn: the vision modules: Conv1d/2d, ConvTranspose2d, BatchNorm1d/2d, pooling,
// Dropout2d, Upsample and Unflatten (nn/conv.c, norm_batch.c, pool.c).
//
//     tt_nn_conv2d conv;
//     tt_nn_conv2d_init(&conv, 1, 6, 5, 5, &(tt_nn_conv2d_opts){.padding = {2, 2}}, true, &rng);
//     tt_tensor *y = tt_nn_conv2d_forward(&conv, x);  // (N, 1, 28, 28) -> (N, 6, 28, 28)
#ifndef TT_NN_CONV_H
#define TT_NN_CONV_H

#include "module.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- convolutions: nn/conv.c ----
// torch.nn.Conv2d: y = tt_conv2d(x, weight, bias, ...), weight (out, in / groups, kh, kw),
// bias (out,) or NULL; PyTorch's default init (kaiming_uniform a = sqrt 5: U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)), fan_in = in / groups * kh * kw, the same bound for the bias). Parameters
// "weight", "bias". Options by name; zeros (or NULL opts) mean stride 1, padding 0, dilation
// 1, groups 1: &(tt_nn_conv2d_opts){.padding = {1, 1}}.

typedef struct tt_nn_conv2d_opts {
    int64_t stride[2], padding[2], dilation[2];  // {H, W}
    int64_t groups;
} tt_nn_conv2d_opts;

typedef struct tt_nn_conv2d {
    tt_tensor *weight;  // (out, in / groups, kh, kw)
    tt_tensor *bias;    // (out,) or NULL
    int64_t in_channels, out_channels;
    tt_nn_conv2d_opts opts;  // with the defaults filled in
} tt_nn_conv2d;

void tt_nn_conv2d_init(tt_nn_conv2d *m, int64_t in_channels, int64_t out_channels,
                       int64_t kh, int64_t kw, const tt_nn_conv2d_opts *opts, bool bias,
                       tt_rng *rng);
tt_tensor *tt_nn_conv2d_forward(tt_nn_conv2d *m, tt_tensor *x);  // (N, in, H, W)
void tt_nn_conv2d_params(const tt_nn_conv2d *m, tt_params *out, const char *prefix);
void tt_nn_conv2d_free(tt_nn_conv2d *m);
tt_module tt_nn_conv2d_module(tt_nn_conv2d *m);
// An owned Conv2d (see tt_nn_linear_new); opts NULL: stride 1, no padding.
tt_module tt_nn_conv2d_new(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw,
                           const tt_nn_conv2d_opts *opts, bool bias, tt_rng *rng);

// ---- batch norm and pooling modules: nn/norm_batch.c, nn/pool.c ----
// torch.nn.BatchNorm1d ((N, C) or (N, C, L)) and BatchNorm2d ((N, C, H, W)) over
// tt_batch_norm. Parameters "weight" (ones) and "bias" (zeros) when affine; buffers
// "running_mean" (zeros), "running_var" (ones), both (C,) in tt_default_dtype(), and
// "num_batches_tracked" (a 0-dim TT_I64) when track_running_stats, listed by
// tt_nn_batchnorm_buffers / tt_module_buffers and saved by a checkpoint of tt_module_state.
// Training (the state after init): normalises with the batch's mean and biased variance and,
// when tracking, adds 1 to num_batches_tracked and updates r = (1 - f) r + f s with s the
// batch's mean and UNBIASED variance, f = momentum, or 1 / num_batches_tracked (a
// cumulative moving average, PyTorch's momentum=None) when momentum is negative or NAN.
// Eval (tt_nn_batchnorm_train(m, false) or tt_module_train): the running stats; without
// track_running_stats the batch's stats in both modes (as PyTorch).
//
//     tt_nn_batchnorm_opts o = tt_nn_batchnorm_default_opts();  // eps 1e-5, momentum 0.1, ...
//     tt_nn_batchnorm bn;
//     tt_nn_batchnorm2d_init(&bn, 16, &o);                   // or NULL for the defaults

typedef struct tt_nn_batchnorm_opts {
    double eps;                // 1e-5
    double momentum;           // 0.1; < 0 or NAN: cumulative moving average
    bool affine;               // true
    bool track_running_stats;  // true
} tt_nn_batchnorm_opts;

typedef struct tt_nn_batchnorm {
    tt_tensor *weight, *bias;              // (C,) each, or NULL without affine
    tt_tensor *running_mean, *running_var; // (C,) buffers, or NULL without tracking
    tt_tensor *num_batches_tracked;        // 0-dim TT_I64 buffer, or NULL without tracking
    int64_t num_features;
    int dims;                              // 1: BatchNorm1d, 2: BatchNorm2d
    tt_nn_batchnorm_opts opts;
    bool training;
} tt_nn_batchnorm;

tt_nn_batchnorm_opts tt_nn_batchnorm_default_opts(void);
void tt_nn_batchnorm1d_init(tt_nn_batchnorm *m, int64_t num_features,
                            const tt_nn_batchnorm_opts *opts);  // opts NULL: the defaults
void tt_nn_batchnorm2d_init(tt_nn_batchnorm *m, int64_t num_features,
                            const tt_nn_batchnorm_opts *opts);
tt_tensor *tt_nn_batchnorm_forward(tt_nn_batchnorm *m, tt_tensor *x);  // x's shape
void tt_nn_batchnorm_params(const tt_nn_batchnorm *m, tt_params *out, const char *prefix);
void tt_nn_batchnorm_buffers(const tt_nn_batchnorm *m, tt_params *out, const char *prefix);
void tt_nn_batchnorm_train(tt_nn_batchnorm *m, bool training);
void tt_nn_batchnorm_free(tt_nn_batchnorm *m);
tt_module tt_nn_batchnorm_module(tt_nn_batchnorm *m);  // "BatchNorm1d" / "BatchNorm2d"
// An owned BatchNorm1d (see tt_nn_linear_new in layers.h); opts NULL: the defaults.
tt_module tt_nn_batchnorm1d_new(int64_t num_features, const tt_nn_batchnorm_opts *opts);

// torch.nn.MaxPool2d / AvgPool2d / AdaptiveAvgPool2d over tt_max_pool2d, tt_avg_pool2d and
// tt_adaptive_avg_pool2d (x (N, C, H, W) or (C, H, W)); no parameters, nothing to free.
// stride NULL or {0, 0} means the kernel (PyTorch's stride=None), padding NULL means 0.
// No dilation, ceil_mode or return_indices (tt_max_pool2d gives the indices).
typedef struct tt_nn_maxpool2d {
    int64_t kernel[2], stride[2], padding[2];  // {H, W}
} tt_nn_maxpool2d;

void tt_nn_maxpool2d_init(tt_nn_maxpool2d *m, int64_t kh, int64_t kw, const int64_t stride[2],
                          const int64_t padding[2]);
tt_tensor *tt_nn_maxpool2d_forward(tt_nn_maxpool2d *m, tt_tensor *x);
tt_module tt_nn_maxpool2d_module(tt_nn_maxpool2d *m);

typedef struct tt_nn_avgpool2d {
    int64_t kernel[2], stride[2], padding[2];  // {H, W}
    bool count_include_pad;                    // PyTorch's default: true
} tt_nn_avgpool2d;

void tt_nn_avgpool2d_init(tt_nn_avgpool2d *m, int64_t kh, int64_t kw, const int64_t stride[2],
                          const int64_t padding[2], bool count_include_pad);
tt_tensor *tt_nn_avgpool2d_forward(tt_nn_avgpool2d *m, tt_tensor *x);
tt_module tt_nn_avgpool2d_module(tt_nn_avgpool2d *m);

typedef struct tt_nn_adaptive_avgpool2d {
    int64_t out_h, out_w;
} tt_nn_adaptive_avgpool2d;

void tt_nn_adaptive_avgpool2d_init(tt_nn_adaptive_avgpool2d *m, int64_t out_h, int64_t out_w);
tt_tensor *tt_nn_adaptive_avgpool2d_forward(tt_nn_adaptive_avgpool2d *m, tt_tensor *x);
tt_module tt_nn_adaptive_avgpool2d_module(tt_nn_adaptive_avgpool2d *m);

// ---- transposed and 1-D convolutions, channel dropout, upsampling, unflatten: nn/conv.c ----
// torch.nn.ConvTranspose2d: y = tt_conv_transpose2d(x, weight, bias, ...), weight (in, out /
// groups, kh, kw), bias (out,) or NULL. PyTorch's default init: U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) on both with fan_in = weight.size(1) * kh * kw = out / groups * kh * kw
// (PyTorch's fan of a transposed weight). Parameters "weight", "bias". Zeros (or NULL opts)
// mean stride 1, padding 0, output_padding 0, dilation 1, groups 1.
typedef struct tt_nn_conv_transpose2d_opts {
    int64_t stride[2], padding[2], output_padding[2], dilation[2];  // {H, W}
    int64_t groups;
} tt_nn_conv_transpose2d_opts;

typedef struct tt_nn_conv_transpose2d {
    tt_tensor *weight;  // (in, out / groups, kh, kw)
    tt_tensor *bias;    // (out,) or NULL
    int64_t in_channels, out_channels;
    tt_nn_conv_transpose2d_opts opts;  // with the defaults filled in
} tt_nn_conv_transpose2d;

void tt_nn_conv_transpose2d_init(tt_nn_conv_transpose2d *m, int64_t in_channels,
                                 int64_t out_channels, int64_t kh, int64_t kw,
                                 const tt_nn_conv_transpose2d_opts *opts, bool bias,
                                 tt_rng *rng);
tt_tensor *tt_nn_conv_transpose2d_forward(tt_nn_conv_transpose2d *m, tt_tensor *x);
void tt_nn_conv_transpose2d_params(const tt_nn_conv_transpose2d *m, tt_params *out,
                                   const char *prefix);
void tt_nn_conv_transpose2d_free(tt_nn_conv_transpose2d *m);
tt_module tt_nn_conv_transpose2d_module(tt_nn_conv_transpose2d *m);

// torch.nn.Conv1d: y = tt_conv1d(x, weight, bias, ...), x (N, in, L), weight (out, in / groups,
// k), bias (out,) or NULL; init as Conv2d (fan_in = in / groups * k). Parameters "weight",
// "bias". Zeros (or NULL opts) mean stride 1, padding 0, dilation 1, groups 1.
typedef struct tt_nn_conv1d_opts {
    int64_t stride, padding, dilation, groups;
} tt_nn_conv1d_opts;

typedef struct tt_nn_conv1d {
    tt_tensor *weight;  // (out, in / groups, k)
    tt_tensor *bias;    // (out,) or NULL
    int64_t in_channels, out_channels;
    tt_nn_conv1d_opts opts;  // with the defaults filled in
} tt_nn_conv1d;

void tt_nn_conv1d_init(tt_nn_conv1d *m, int64_t in_channels, int64_t out_channels,
                       int64_t k, const tt_nn_conv1d_opts *opts, bool bias, tt_rng *rng);
tt_tensor *tt_nn_conv1d_forward(tt_nn_conv1d *m, tt_tensor *x);  // (N, in, L)
void tt_nn_conv1d_params(const tt_nn_conv1d *m, tt_params *out, const char *prefix);
void tt_nn_conv1d_free(tt_nn_conv1d *m);
tt_module tt_nn_conv1d_module(tt_nn_conv1d *m);

// torch.nn.Dropout2d: tt_dropout2d(x, p, training, rng); starts in training mode, as PyTorch;
// tt_module_train switches it. No parameters.
typedef struct tt_nn_dropout2d {
    double p;
    bool training;
    tt_rng *rng;  // borrowed: the model owns its rng
} tt_nn_dropout2d;

void tt_nn_dropout2d_init(tt_nn_dropout2d *m, double p, tt_rng *rng);
tt_tensor *tt_nn_dropout2d_forward(tt_nn_dropout2d *m, tt_tensor *x);
void tt_nn_dropout2d_train(tt_nn_dropout2d *m, bool training);
tt_module tt_nn_dropout2d_module(tt_nn_dropout2d *m);

// torch.nn.Upsample(mode="nearest") with a size or a scale_factor: set exactly one of them,
// e.g. &(tt_nn_upsample){.scale = {2, 2}}. tt_upsample_nearest2d(_scale). No parameters.
typedef struct tt_nn_upsample {
    int64_t size[2];  // {out_h, out_w}, or zeros
    double scale[2];  // {scale_h, scale_w}, or zeros
} tt_nn_upsample;

tt_module tt_nn_upsample_module(tt_nn_upsample *m);  // borrows m

// torch.nn.Unflatten(dim, sizes): tt_unflatten(x, dim, sizes, n). No parameters.
typedef struct tt_nn_unflatten {
    int dim;
    int n;                         // entries of sizes used, 1 .. TT_MAX_DIMS
    int64_t sizes[TT_MAX_DIMS];    // one may be -1
} tt_nn_unflatten;

tt_module tt_nn_unflatten_module(tt_nn_unflatten *m);  // borrows m

#ifdef __cplusplus
}
#endif

#endif  // TT_NN_CONV_H

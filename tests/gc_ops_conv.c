// Gradcheck cases of tt_conv2d: plain, stride, padding, dilation, all three with odd sizes,
// groups (2 and depthwise), groups with all the options, x empty along H, 1x1, no bias, a
// transposed (non-contiguous) x; tt_conv1d and tt_conv2d_same through it. tt_conv_transpose2d:
// plain, stride, padding, output_padding, dilation, groups, groups with all the options,
// depthwise, 1x1, odd sizes, no bias, a transposed x. Then the modules (nn/conv.c) and the
// compositions dropout2d, upsample_nearest2d and unflatten.
// Value and abort tests are in tests/test_ops_conv.c.
#include "gc_util.h"

// ---- helpers ----

typedef struct conv_args {
    int64_t stride[2], padding[2], dilation[2], groups;
    bool conv1d, same;  // tt_conv1d (the W pair) / tt_conv2d_same
} conv_args;

static tt_tensor *f_conv(tt_tensor *const *in, int n, void *ctx) {
    const conv_args *a = ctx;
    tt_tensor *b = n == 3 ? in[2] : NULL;
    if (a->conv1d)
        return tt_conv1d(in[0], in[1], b, a->stride[1], a->padding[1], a->dilation[1], a->groups);
    if (a->same) return tt_conv2d_same(in[0], in[1], b, a->dilation, a->groups);
    return tt_conv2d(in[0], in[1], b, a->stride, a->padding, a->dilation, a->groups);
}

// x (N, C, H, W), weight (CO, C / groups, KH, KW), bias (CO,) when with_bias; all in [-1, 1).
static void check(gc_report *r, conv_args a, int64_t N, int64_t C, int64_t H, int64_t W, int64_t CO,
                  int64_t KH, int64_t KW, bool with_bias) {
    tt_tensor *in[3] = {
        gc_input(TT_SHAPE(N, C, H, W), -1, 1),
        gc_input(TT_SHAPE(CO, C / a.groups, KH, KW), -1, 1),
        with_bias ? gc_input(TT_SHAPE(CO), -1, 1) : NULL,
    };
    gc_check(r, f_conv, &a, with_bias ? 3 : 2, in, NULL);
}

#define ARGS(sh, sw, ph, pw, dh, dw, g) ((conv_args){{sh, sw}, {ph, pw}, {dh, dw}, g, false, false})

// ---- cases ----

static void conv_plain(gc_report *r) {
    check(r, ARGS(1, 1, 0, 0, 1, 1, 1), 2, 3, 5, 4, 4, 3, 2, true);
}
static void conv_stride(gc_report *r) {
    check(r, ARGS(2, 3, 0, 0, 1, 1, 1), 2, 2, 7, 8, 3, 3, 2, true);
}
static void conv_padding(gc_report *r) {
    check(r, ARGS(1, 1, 1, 2, 1, 1, 1), 1, 2, 4, 3, 3, 3, 3, true);
}
static void conv_dilation(gc_report *r) {
    check(r, ARGS(1, 1, 0, 0, 2, 3, 1), 1, 2, 6, 7, 2, 2, 2, true);
}

// Stride, padding and dilation together on odd sizes where the last window does not fit.
static void conv_odd(gc_report *r) {
    check(r, ARGS(2, 3, 1, 2, 2, 1, 1), 2, 3, 7, 9, 2, 3, 2, true);
}

static void conv_groups(gc_report *r) {
    check(r, ARGS(1, 2, 1, 0, 1, 1, 2), 2, 4, 5, 5, 6, 3, 2, true);
}

// groups == C_in == C_out, and a depth multiplier of 2 (C_out = 2 C_in).
static void conv_depthwise(gc_report *r) {
    check(r, ARGS(1, 1, 1, 1, 1, 1, 3), 2, 3, 4, 5, 3, 3, 3, true);
    check(r, ARGS(2, 1, 1, 0, 1, 2, 2), 1, 2, 5, 6, 4, 3, 2, false);
}

// Groups with stride, padding and dilation together on odd sizes, three images: the
// differentiable backward's transposed conv (dx) and its grouped conv of x with g (dw).
static void conv_all_grouped(gc_report *r) {
    check(r, ARGS(2, 3, 1, 2, 2, 1, 2), 3, 4, 8, 9, 6, 3, 2, true);
}

// x empty along H, the output all padding: dx is empty and dw zero (the double backward's
// zeros, where the transposed conv of g would refuse an empty output).
static void conv_empty_h(gc_report *r) {
    check(r, ARGS(1, 1, 1, 1, 1, 1, 1), 1, 2, 0, 3, 3, 1, 2, true);
}

static void conv_1x1(gc_report *r) {
    check(r, ARGS(1, 1, 0, 0, 1, 1, 1), 2, 3, 3, 4, 5, 1, 1, true);
}
static void conv_no_bias(gc_report *r) {
    check(r, ARGS(1, 2, 1, 1, 1, 1, 1), 2, 2, 4, 5, 3, 2, 3, false);
}

// x a transposed view (its H and W swapped in memory), read through a contiguous copy.
static void conv_transposed_x(gc_report *r) {
    conv_args a = ARGS(1, 1, 1, 0, 1, 1, 1);
    tt_tensor *in[3] = {
        gc_input_transposed(TT_SHAPE(2, 2, 5, 4), 2, 3, -1, 1),
        gc_input(TT_SHAPE(3, 2, 2, 3), -1, 1),
        gc_input(TT_SHAPE(3), -1, 1),
    };
    gc_check(r, f_conv, &a, 3, in, NULL);
}

// tt_conv1d: x (N, C, L), weight (CO, C / groups, k); stride 2, padding 1, dilation 2, groups 2.
static void conv1d_all(gc_report *r) {
    conv_args a = {{1, 2}, {0, 1}, {1, 2}, 2, true, false};
    tt_tensor *in[3] = {
        gc_input(TT_SHAPE(2, 4, 9), -1, 1),
        gc_input(TT_SHAPE(6, 2, 3), -1, 1),
        gc_input(TT_SHAPE(6), -1, 1),
    };
    gc_check(r, f_conv, &a, 3, in, NULL);
}

// tt_conv2d_same: an odd total padding (kernel 2, through tt_pad) and an even one (dilated 3).
static void conv_same(gc_report *r) {
    conv_args a = {{1, 1}, {0, 0}, {1, 2}, 1, false, true};
    tt_tensor *in[3] = {
        gc_input(TT_SHAPE(2, 2, 4, 5), -1, 1),
        gc_input(TT_SHAPE(3, 2, 2, 3), -1, 1),
        gc_input(TT_SHAPE(3), -1, 1),
    };
    gc_check(r, f_conv, &a, 3, in, NULL);
}

// ---- conv_transpose2d ----

typedef struct convt_args {
    int64_t stride[2], padding[2], output_padding[2], dilation[2], groups;
} convt_args;

static tt_tensor *f_convt(tt_tensor *const *in, int n, void *ctx) {
    const convt_args *a = ctx;
    return tt_conv_transpose2d(in[0], in[1], n == 3 ? in[2] : NULL, a->stride, a->padding,
                               a->output_padding, a->groups, a->dilation);
}

// x (N, C, H, W), weight (C, CO / groups, KH, KW), bias (CO,) when with_bias.
static void check_t(gc_report *r, convt_args a, int64_t N, int64_t C, int64_t H, int64_t W,
                    int64_t CO, int64_t KH, int64_t KW, bool with_bias) {
    tt_tensor *in[3] = {
        gc_input(TT_SHAPE(N, C, H, W), -1, 1),
        gc_input(TT_SHAPE(C, CO / a.groups, KH, KW), -1, 1),
        with_bias ? gc_input(TT_SHAPE(CO), -1, 1) : NULL,
    };
    gc_check(r, f_convt, &a, with_bias ? 3 : 2, in, NULL);
}

// stride, padding, output_padding, dilation ({H, W} each), groups
#define TARGS(sh, sw, ph, pw, oh, ow, dh, dw, g) \
    ((convt_args){{sh, sw}, {ph, pw}, {oh, ow}, {dh, dw}, g})

static void convt_plain(gc_report *r) {
    check_t(r, TARGS(1, 1, 0, 0, 0, 0, 1, 1, 1), 2, 3, 3, 4, 2, 3, 2, true);
}
static void convt_stride_padding(gc_report *r) {
    check_t(r, TARGS(2, 3, 1, 1, 0, 0, 1, 1, 1), 1, 2, 3, 3, 3, 3, 2, true);
}
static void convt_output_padding(gc_report *r) {
    check_t(r, TARGS(2, 3, 1, 0, 1, 2, 1, 1, 1), 2, 2, 2, 3, 2, 3, 3, true);
}
// output_padding allowed by the dilation alone (stride 1).
static void convt_dilation(gc_report *r) {
    check_t(r, TARGS(1, 2, 1, 0, 1, 1, 2, 3, 1), 1, 2, 3, 3, 3, 2, 2, true);
}
static void convt_groups(gc_report *r) {
    check_t(r, TARGS(2, 1, 0, 1, 1, 0, 1, 1, 2), 2, 4, 3, 3, 6, 2, 3, true);
}
// Groups, stride, padding and dilation together; output_padding along W allowed by the
// dilation alone (the gradient's conv2d output is longer than x there).
static void convt_all_grouped(gc_report *r) {
    check_t(r, TARGS(2, 1, 1, 1, 1, 1, 1, 2, 2), 2, 4, 3, 4, 6, 3, 2, true);
}
static void convt_depthwise(gc_report *r) {
    check_t(r, TARGS(1, 1, 1, 1, 0, 0, 1, 1, 3), 1, 3, 4, 3, 3, 3, 3, false);
}
static void convt_1x1(gc_report *r) {
    check_t(r, TARGS(1, 1, 0, 0, 0, 0, 1, 1, 1), 2, 3, 3, 2, 4, 1, 1, true);
}
static void convt_odd(gc_report *r) {
    check_t(r, TARGS(3, 2, 2, 1, 2, 1, 2, 1, 1), 1, 2, 3, 3, 2, 3, 2, true);
}
static void convt_no_bias(gc_report *r) {
    check_t(r, TARGS(2, 2, 0, 1, 0, 1, 1, 1, 1), 2, 2, 2, 3, 3, 2, 2, false);
}
static void convt_transposed_x(gc_report *r) {
    convt_args a = TARGS(2, 1, 1, 0, 1, 0, 1, 1, 1);
    tt_tensor *in[3] = {
        gc_input_transposed(TT_SHAPE(2, 2, 4, 3), 2, 3, -1, 1),
        gc_input(TT_SHAPE(2, 3, 3, 2), -1, 1),
        gc_input(TT_SHAPE(3), -1, 1),
    };
    gc_check(r, f_convt, &a, 3, in, NULL);
}

const gc_case gc_cases_conv[] = {
    {TT_OP_CONV2D, "plain", conv_plain},
    {TT_OP_CONV2D, "stride", conv_stride},
    {TT_OP_CONV2D, "padding", conv_padding},
    {TT_OP_CONV2D, "dilation", conv_dilation},
    {TT_OP_CONV2D, "odd", conv_odd},
    {TT_OP_CONV2D, "groups", conv_groups},
    {TT_OP_CONV2D, "depthwise", conv_depthwise},
    {TT_OP_CONV2D, "all_grouped", conv_all_grouped},
    {TT_OP_CONV2D, "empty_h", conv_empty_h},
    {TT_OP_CONV2D, "1x1", conv_1x1},
    {TT_OP_CONV2D, "no_bias", conv_no_bias},
    {TT_OP_CONV2D, "transposed_x", conv_transposed_x},
    {TT_OP_CONV2D, "conv1d", conv1d_all},
    {TT_OP_CONV2D, "same", conv_same},
    {TT_OP_CONV_TRANSPOSE2D, "plain", convt_plain},
    {TT_OP_CONV_TRANSPOSE2D, "stride_padding", convt_stride_padding},
    {TT_OP_CONV_TRANSPOSE2D, "output_padding", convt_output_padding},
    {TT_OP_CONV_TRANSPOSE2D, "dilation", convt_dilation},
    {TT_OP_CONV_TRANSPOSE2D, "groups", convt_groups},
    {TT_OP_CONV_TRANSPOSE2D, "depthwise", convt_depthwise},
    {TT_OP_CONV_TRANSPOSE2D, "all_grouped", convt_all_grouped},
    {TT_OP_CONV_TRANSPOSE2D, "1x1", convt_1x1},
    {TT_OP_CONV_TRANSPOSE2D, "odd", convt_odd},
    {TT_OP_CONV_TRANSPOSE2D, "no_bias", convt_no_bias},
    {TT_OP_CONV_TRANSPOSE2D, "transposed_x", convt_transposed_x},
    {0, NULL, NULL},
};

// ---- Conv2d module (nn/conv.c) ----

// in = {x, weight[, bias]}: the module's forward with its parameters swapped for the inputs.
static tt_tensor *f_conv_layer(tt_tensor *const *in, int n, void *ctx) {
    tt_nn_conv2d m = *(const tt_nn_conv2d *)ctx;
    m.weight = in[1];
    m.bias = n > 2 ? in[2] : NULL;
    return tt_nn_conv2d_forward(&m, in[0]);
}

static void conv_layer_case(gc_report *r, const tt_nn_conv2d_opts *opts, bool bias) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_conv2d m;
    tt_nn_conv2d_init(&m, 4, 6, 3, 2, opts, bias, gc_rng());
    tt_set_default_dtype(prev);
    tt_tensor *in[3] = {gc_input(TT_SHAPE(2, 4, 5, 4), -1, 1), m.weight, m.bias};
    gc_check(r, f_conv_layer, &m, bias ? 3 : 2, in, NULL);
    tt_nn_conv2d_free(&m);
}

static void conv_layer_default(gc_report *r) { conv_layer_case(r, NULL, true); }

static void conv_layer_opts(gc_report *r) {
    conv_layer_case(r, &(tt_nn_conv2d_opts){.stride = {2, 1}, .padding = {1, 1}, .groups = 2},
                    false);
}

// ---- ConvTranspose2d and Conv1d modules; dropout2d, upsample, unflatten (compositions) ----

static tt_tensor *f_convt_layer(tt_tensor *const *in, int n, void *ctx) {
    tt_nn_conv_transpose2d m = *(const tt_nn_conv_transpose2d *)ctx;
    m.weight = in[1];
    m.bias = n > 2 ? in[2] : NULL;
    return tt_nn_conv_transpose2d_forward(&m, in[0]);
}

static void convt_layer_case(gc_report *r) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_conv_transpose2d m;
    tt_nn_conv_transpose2d_opts o = {
        .stride = {2, 1}, .padding = {1, 0}, .output_padding = {1, 0}, .groups = 2};
    tt_nn_conv_transpose2d_init(&m, 4, 6, 3, 2, &o, true, gc_rng());
    tt_set_default_dtype(prev);
    tt_tensor *in[3] = {gc_input(TT_SHAPE(2, 4, 3, 3), -1, 1), m.weight, m.bias};
    gc_check(r, f_convt_layer, &m, 3, in, NULL);
    tt_nn_conv_transpose2d_free(&m);
}

static tt_tensor *f_conv1d_layer(tt_tensor *const *in, int n, void *ctx) {
    tt_nn_conv1d m = *(const tt_nn_conv1d *)ctx;
    m.weight = in[1];
    m.bias = n > 2 ? in[2] : NULL;
    return tt_nn_conv1d_forward(&m, in[0]);
}

static void conv1d_layer_case(gc_report *r) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_conv1d m;
    tt_nn_conv1d_init(&m, 4, 6, 3, &(tt_nn_conv1d_opts){.stride = 2, .padding = 1, .groups = 2},
                      true, gc_rng());
    tt_set_default_dtype(prev);
    tt_tensor *in[3] = {gc_input(TT_SHAPE(2, 4, 7), -1, 1), m.weight, m.bias};
    gc_check(r, f_conv1d_layer, &m, 3, in, NULL);
    tt_nn_conv1d_free(&m);
}

// The mask must be the same on every call: a fresh rng with a fixed seed each time.
static tt_tensor *f_dropout2d(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    tt_rng rng;
    tt_rng_seed(&rng, *(const uint64_t *)ctx);
    return tt_dropout2d(in[0], 0.4, true, &rng);
}

static void dropout2d_case(gc_report *r) {
    static const uint64_t seed = 21;
    tt_tensor *x = gc_input(TT_SHAPE(3, 4, 2, 3), -1, 1);
    gc_check(r, f_dropout2d, (void *)&seed, 1, &x, NULL);
    tt_tensor *xt = gc_input_transposed(TT_SHAPE(2, 5, 4), 1, 2, -1, 1);  // 3-D (N, C, L)
    gc_check(r, f_dropout2d, (void *)&seed, 1, &xt, NULL);
}

static tt_tensor *f_upsample(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const int64_t *size = ctx;
    if (size[0] == 0) return tt_upsample_nearest2d_scale(in[0], 1.5, 2.5);
    return tt_upsample_nearest2d(in[0], size[0], size[1]);
}

static void upsample_case(gc_report *r) {
    static const int64_t up[2] = {6, 5}, down[2] = {2, 3}, by_scale[2] = {0, 0};
    tt_tensor *x = gc_input(TT_SHAPE(2, 2, 3, 4), -1, 1);
    gc_check(r, f_upsample, (void *)up, 1, &x, NULL);
    gc_check(r, f_upsample, (void *)down, 1, &x, NULL);
    gc_check(r, f_upsample, (void *)by_scale, 1, &x, NULL);
    tt_tensor *xt = gc_input_transposed(TT_SHAPE(1, 2, 4, 3), 2, 3, -1, 1);
    gc_check(r, f_upsample, (void *)up, 1, &xt, NULL);
}

static tt_tensor *f_unflatten(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    (void)ctx;
    return tt_mul(tt_unflatten(in[0], 1, (int64_t[]){2, -1}, 2), in[1]);
}

static void unflatten_case(gc_report *r) {
    tt_tensor *in[2] = {gc_input_transposed(TT_SHAPE(6, 3), 0, 1, -1, 1),
                        gc_input(TT_SHAPE(3, 2, 3), -1, 1)};
    gc_check(r, f_unflatten, NULL, 2, in, NULL);
}

const gc_module_case gc_modules_conv[] = {
    {"conv2d", "default", conv_layer_default},
    {"conv2d", "stride_pad_groups", conv_layer_opts},
    {"conv_transpose2d", "stride_pad_outpad_groups", convt_layer_case},
    {"conv1d", "stride_pad_groups", conv1d_layer_case},
    {"dropout2d", "nchw_ncl", dropout2d_case},
    {"upsample_nearest2d", "size_scale_transposed", upsample_case},
    {"unflatten", "transposed", unflatten_case},
    {NULL, NULL, NULL},
};

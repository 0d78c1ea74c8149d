// Swish, x sigmoid(x), as a custom function (tt_function) with its own backward
// s (1 + x (1 - s)), written with ops on the saved input so that it is twice differentiable:
// the one the gradcheck suite (gc_ops_function.c) and the PyTorch references
// (test_autograd_reference.c) share.
#ifndef TT_TEST_SWISH_H
#define TT_TEST_SWISH_H

#include "tinytorch.h"

static void swish_forward(tt_function_ctx *ctx, tt_tensor *const *in, int n, tt_tensor **out) {
    (void)n;
    tt_save_for_backward(ctx, 1, in);
    out[0] = tt_mul(in[0], tt_sigmoid(in[0]));
}

static void swish_backward(tt_function_ctx *ctx, tt_tensor *const *gout, tt_tensor **gin) {
    tt_tensor *x = tt_saved_tensor(ctx, 0), *s = tt_sigmoid(x);
    gin[0] = tt_mul(tt_mul(gout[0], s), tt_add_scalar(tt_mul(x, tt_rsub_scalar(1, s)), 1));
}

static const tt_function swish = {"swish", 1, 0, swish_forward, swish_backward};

#endif  // TT_TEST_SWISH_H

// The differentiable backwards of tt_conv2d and tt_conv_transpose2d (autograd/ops_conv.c), for
// create_graph: each gradient is itself a convolution (or a transposed one) of the upstream
// gradient with the other operand, written with the public conv ops so it records its graph.
// Letters as ops_conv.c's: x (N, C, H, W), w, g the output gradient (N, CO, OH, OW), G groups.
#include "autograd_internal.h"
#include "ops_conv.h"

// ---- helpers ----

// The weight gradient of a conv2d from in (N, CI, HI, WI) to out (N, CO, HO, WO) in G groups,
// out's gradient being gout: dw (CO, CI / G, KH, KW) with
//   dw[o, c, kh, kw] = sum_{n, i, j} gout[n, o, i, j] in[n, (o / (CO / G)) CI / G + c,
//                                                       i s - p + kh d, j s - p + kw d]
// (zero outside in). That is a conv2d whose batch is in's channels within a group and whose
// kernel is gout: in as (CI / G, G N, HI, WI) (a group's images side by side), gout as the
// kernel (CO, N, HO, WO) in G groups, with the roles of stride and dilation swapped and the same
// padding. Its output (CI / G, CO, KH', KW') has KH' >= KH (the rows past KH would be the taps
// of a larger kernel): narrowed to KH, KW.
static tt_tensor *conv_weight_grad(tt_tensor *in, tt_tensor *gout, const int64_t stride[2],
                                   const int64_t padding[2], const int64_t dilation[2], int64_t G,
                                   int64_t KH, int64_t KW) {
    int64_t N = in->shape[0], CI = in->shape[1], HI = in->shape[2], WI = in->shape[3];
    // (CI / G, G, N, HI, WI), then (CI / G, G N, HI, WI)
    tt_tensor *xi = tt_reshape(in, 5, (int64_t[]){N, G, CI / G, HI, WI});
    xi = tt_reshape(tt_permute(xi, (int[]){2, 1, 0, 3, 4}), 4, (int64_t[]){CI / G, G * N, HI, WI});
    tt_tensor *k = tt_transpose(gout, 0, 1);  // (CO, N, HO, WO)
    tt_tensor *dw = tt_conv2d(xi, k, NULL, dilation, padding, stride, G);
    dw = tt_transpose(dw, 0, 1);  // (CO, CI / G, KH', KW')
    return tt_narrow(tt_narrow(dw, 2, 0, KH), 3, 0, KW);
}

// db = g summed over N, OH, OW.
static void bias_grad(tt_node *n) {
    if (tt__input_needs_grad(n, 2))
        tt__accum_grad(n->inputs[2], tt_sum(n->grad, 3, (int[]){0, 2, 3}, false));
}

// With no element in x or in g (x empty along C, H or W, or no output channels), dx and dw are
// zero for every x, w and g: plain zeros of their shapes (the conv ops would refuse some of
// these shapes). db as always. True when that was the case.
static bool empty_grads(tt_node *n) {
    if (tt_numel(n->inputs[0]) > 0 && tt_numel(n->grad) > 0) return false;
    for (int i = 0; i < 2; i++) {
        tt_tensor *t = n->inputs[i];
        if (tt__input_needs_grad(n, i)) tt__accum_grad(t, tt_zeros(t->dtype, t->ndim, t->shape));
    }
    bias_grad(n);
    return true;
}

// ---- conv2d ----

// dx = conv_transpose2d(g, w) with conv2d's stride, padding, dilation and groups and the
// output_padding that gives back H, W (the rows the stride left unread: (H + 2 p - d (KH - 1)
// - 1) mod s, always < s); dw = conv_weight_grad(x, g); db = g summed over N, OH, OW.
static void conv2d2(tt_node *n) {
    tt_tensor *x = n->inputs[0], *w = n->inputs[1], *g = n->grad;
    const conv_ctx *c = n->ctx;
    if (empty_grads(n)) return;
    if (tt__input_needs_grad(n, 0)) {
        int64_t op[2];
        for (int d = 0; d < 2; d++)  // x's size less the transposed conv's without op
            op[d] = x->shape[2 + d] - ((n->shape[2 + d] - 1) * c->stride[d] - 2 * c->padding[d] +
                                       c->dilation[d] * (w->shape[2 + d] - 1) + 1);
        tt__accum_grad(
            x, tt_conv_transpose2d(g, w, NULL, c->stride, c->padding, op, c->groups, c->dilation));
    }
    if (tt__input_needs_grad(n, 1))
        tt__accum_grad(w, conv_weight_grad(x, g, c->stride, c->padding, c->dilation, c->groups,
                                           w->shape[2], w->shape[3]));
    bias_grad(n);
}

// ---- conv_transpose2d ----

// The transposed convolution is the adjoint of the conv2d from out's shape to x's with weight w
// (C, CO / G, KH, KW): dx = conv2d(g, w) with the same stride, padding, dilation and groups,
// narrowed to H, W (an output_padding >= stride, allowed by the dilation, makes that conv's
// output longer: the rows past H are outputs no x element fed); dw = conv_weight_grad(g, x),
// the weight gradient of that conv2d with g its input and x its output's gradient;
// db = g summed over N, OH, OW.
static void conv_transpose2d2(tt_node *n) {
    tt_tensor *x = n->inputs[0], *w = n->inputs[1], *g = n->grad;
    const convt_ctx *c = n->ctx;
    if (empty_grads(n)) return;
    if (tt__input_needs_grad(n, 0)) {
        tt_tensor *dx = tt_conv2d(g, w, NULL, c->stride, c->padding, c->dilation, c->groups);
        if (dx->shape[2] != x->shape[2]) dx = tt_narrow(dx, 2, 0, x->shape[2]);
        if (dx->shape[3] != x->shape[3]) dx = tt_narrow(dx, 3, 0, x->shape[3]);
        tt__accum_grad(x, dx);
    }
    if (tt__input_needs_grad(n, 1))
        tt__accum_grad(w, conv_weight_grad(g, x, c->stride, c->padding, c->dilation, c->groups,
                                           w->shape[2], w->shape[3]));
    bias_grad(n);
}

const tt__grad2_row tt__grad2_conv[] = {
    {TT_OP_CONV2D, conv2d2},
    {TT_OP_CONV_TRANSPOSE2D, conv_transpose2d2},
    {TT_OP_COUNT, NULL},
};

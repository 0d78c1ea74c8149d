// The differentiable backwards of the neural-network ops (autograd/ops_nn.c), for create_graph:
// each input's gradient written with public ops, so that it can be differentiated again.
// Masks, indices and targets are constants here (no gradient), as in the first-order ones.
#include <math.h>

#include "autograd_internal.h"
#include "ops_nn_ctx.h"

// ---- softmax / log_softmax ----

// The dims of a reduction along the node's softmax dim: none (all) for a 0-d output.
static int softmax_dims(const tt_node *n, int *dim) {
    *dim = ((const softmax_ctx *)n->ctx)->dim;
    return n->ndim > 0 ? 1 : 0;
}

// dx = y (g - sum(g y, dim)), y = softmax(x) with its history. A fully masked row has y == 0,
// so its dx is 0 (as the first-order kernel's).
static void softmax2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    int dim, nd = softmax_dims(n, &dim);
    tt_tensor *y = n->out, *g = n->grad;
    tt_tensor *dot = tt_sum(tt_mul(g, y), nd, &dim, true);
    tt__accum_grad(n->inputs[0], tt_mul(y, tt_sub(g, dot)));
}

// dx = g - exp(y) sum(g, dim), y = log_softmax(x) with its history; 0 on a fully masked row
// (all y == -inf: a constant of x), as the first-order kernel.
static void log_softmax2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    int dim, nd = softmax_dims(n, &dim);
    tt_tensor *y = n->out, *g = n->grad;
    tt_tensor *dx = tt_sub(g, tt_mul(tt_exp(y), tt_sum(g, nd, &dim, true)));
    tt_tensor *masked = tt_all(tt_eq_scalar(y, -INFINITY), nd, &dim, true);  // no gradient
    if (tt_item(tt_any_all(masked))) dx = tt_masked_fill(dx, masked, 0.0);
    tt__accum_grad(n->inputs[0], dx);
}

// ---- masked_fill ----

// dx = g with the masked positions zeroed (the mask is saved state).
static void masked_fill2(tt_node *n) {
    if (tt__input_needs_grad(n, 0))
        tt__accum_grad(n->inputs[0], tt_masked_fill(n->grad, n->saved[0], 0.0));
}

// ---- layernorm / rmsnorm ----

// The last k of ndim dims, into dims; returns k.
static int last_dims(int ndim, int k, int *dims) {
    for (int i = 0; i < k; i++) dims[i] = ndim - k + i;
    return k;
}

// Over the last norm_ndim dims (D), recomputed from x with ops: xhat = (x - mean) rstd,
// rstd = rsqrt(var + eps) (biased). With wg = g w (g without weight):
// dx = rstd (wg - mean_D(wg) - xhat mean_D(wg xhat)), dw = g xhat and db = g, both summed
// over the leading dims (by the accumulation).
static void layernorm2(tt_node *n) {
    tt_tensor *x = n->inputs[0], *w = n->inputs[1], *g = n->grad;
    const norm_ctx *c = n->ctx;
    bool need_x = tt__input_needs_grad(n, 0), need_w = tt__input_needs_grad(n, 1);
    if (tt__input_needs_grad(n, 2)) tt__accum_grad(n->inputs[2], g);
    if (!need_x && !need_w) return;
    int dims[TT_MAX_DIMS], nd = last_dims(x->ndim, c->norm_ndim, dims);
    tt_tensor *mu = tt_mean(x, nd, dims, true), *var = tt_var(x, nd, dims, 0, true);
    tt_tensor *rstd = tt_rsqrt(tt_add_scalar(var, c->eps));
    tt_tensor *xhat = tt_mul(tt_sub(x, mu), rstd);
    if (need_w) tt__accum_grad(w, tt_mul(g, xhat));
    if (!need_x) return;
    tt_tensor *wg = w ? tt_mul(g, w) : g;
    tt_tensor *mean_wg = tt_mean(wg, nd, dims, true);
    tt_tensor *mean_wgx = tt_mean(tt_mul(wg, xhat), nd, dims, true);
    tt_tensor *inner = tt_sub(tt_sub(wg, mean_wg), tt_mul(xhat, mean_wgx));
    tt__accum_grad(x, tt_mul(rstd, inner));
}

// Over the last dim (N): y = x r w, r = rsqrt(mean(x^2) + eps). With wg = g w:
// dx = r (wg - x r^2 mean(wg x)) (d r / d x_j = -r^3 x_j / N), dw = g x r summed over the
// leading dims.
static void rmsnorm2(tt_node *n) {
    tt_tensor *x = n->inputs[0], *w = n->inputs[1], *g = n->grad;
    const norm_ctx *c = n->ctx;
    bool need_x = tt__input_needs_grad(n, 0), need_w = tt__input_needs_grad(n, 1);
    if (!need_x && !need_w) return;
    int last = x->ndim - 1;
    tt_tensor *r = tt_rsqrt(tt_add_scalar(tt_mean(tt_square(x), 1, &last, true), c->eps));
    if (need_w) tt__accum_grad(w, tt_mul(g, tt_mul(x, r)));
    if (!need_x) return;
    tt_tensor *wg = w ? tt_mul(g, w) : g;
    tt_tensor *m = tt_mean(tt_mul(wg, x), 1, &last, true);
    tt_tensor *inner = tt_sub(wg, tt_mul(x, tt_mul(tt_square(r), m)));
    tt__accum_grad(x, tt_mul(r, inner));
}

// ---- embedding ----

// dweight = zeros (V, C) with row idx[i] += g[i] for each of the n indices (index_add; the
// saved indices are a contiguous i64 copy). Linear in g.
static void embedding2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    tt_tensor *w = n->inputs[0], *idx = n->saved[0];
    int64_t k = tt_numel(idx), C = w->shape[1];
    tt_tensor *rows = tt_reshape(n->grad, 2, (int64_t[]){k, C});  // (n, C)
    tt_tensor *dw =
        tt_index_add(tt_zeros(w->dtype, 2, w->shape), 0, tt_reshape(idx, 1, &k), rows, 1.0);
    tt__accum_grad(w, dw);
}

// ---- cross_entropy ----

// dlogits = (softmax(x) - (1 - s) onehot(t) - s / V) g / count on each row whose target is not
// ignore_index, 0 on the others; all 0 when every row is ignored (the loss is the constant 0).
// The row mask and the target distribution are constants built from the saved targets.
static void cross_entropy2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    tt_tensor *x = n->inputs[0], *g = n->grad;
    const cross_entropy_ctx *c = n->ctx;
    if (c->count == 0) {
        tt__accum_grad(x, tt_mul(tt_zeros(x->dtype, x->ndim, x->shape), g));
        return;
    }
    int64_t rshape[TT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) rshape[d] = x->shape[d];
    rshape[x->ndim - 1] = 1;
    tt_tensor *keep = tt_zeros(x->dtype, x->ndim, rshape);    // (R, 1)
    tt_tensor *dist = tt_zeros(x->dtype, x->ndim, x->shape);  // (R, V)
    const int64_t *t = tt_data(n->saved[0]);
    double off = c->smoothing / (double)c->V;
    for (int64_t r = 0; r < c->R; r++) {
        if (t[r] == c->ignore_index) continue;
        tt__store(tt_data(keep), x->dtype, r, 1.0);
        for (int64_t j = 0; j < c->V; j++)
            tt__store(tt_data(dist), x->dtype, r * c->V + j,
                      off + (j == t[r] ? 1 - c->smoothing : 0.0));
    }
    tt_tensor *p = tt_mul(tt_softmax(x, -1), keep);
    tt_tensor *scale = tt_mul_scalar(g, 1.0 / (double)c->count);
    tt__accum_grad(x, tt_mul(tt_sub(p, dist), scale));
}

// ---- dropout ----

// dx = g mask, the saved mask holding 0 or 1 / (1 - p).
static void dropout2(tt_node *n) {
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(n->inputs[0], tt_mul(n->grad, n->saved[0]));
}

const tt__grad2_row tt__grad2_nn[] = {
    {TT_OP_SOFTMAX, softmax2},
    {TT_OP_LOG_SOFTMAX, log_softmax2},
    {TT_OP_MASKED_FILL, masked_fill2},
    {TT_OP_LAYERNORM, layernorm2},
    {TT_OP_RMSNORM, rmsnorm2},
    {TT_OP_EMBEDDING, embedding2},
    {TT_OP_CROSS_ENTROPY, cross_entropy2},
    {TT_OP_DROPOUT, dropout2},
    {TT_OP_ATTENTION, tt__attention2},
    {TT_OP_COUNT, NULL},
};

// Pooling and batch norm, NCHW (or CHW): max_pool2d (with PyTorch's indices), avg_pool2d and
// adaptive_avg_pool2d, each one op with its own backward; batch_norm as a composition of
// existing ops (its gradient comes from theirs). No ceil_mode, no dilation. At the end, the
// differentiable backwards (create_graph): a scatter_add at the saved indices, window matmuls.
// The arithmetic is in tensor/kernels/pool.inc; this file checks arguments, builds the window
// tables, makes a contiguous copy of a strided x and records the tape node.
#include "autograd_internal.h"

#include "../tensor/kernels/pool.h"

// ---- windows ----
// Output row i covers input rows [hs[i], he[i]) (clipped to the input) and divides by dh[i];
// likewise the columns. One allocation holds the tables of both axes.

typedef struct pool_geom {
    int64_t P, H, W, OH, OW;
} pool_geom;

typedef enum pool_kind { POOL_MAX, POOL_AVG, POOL_ADAPTIVE } pool_kind;

typedef struct pool_ctx {
    pool_kind kind;
    int64_t kernel[2], stride[2], padding[2];
    bool count_include_pad;
} pool_ctx;

typedef struct pool_windows {
    int64_t *hs, *he, *ws, *we;  // (OH), (OH), (OW), (OW)
    double *dh, *dw;             // (OH), (OW)
} pool_windows;

// The windows of one axis of n input elements and m outputs.
static void axis_windows(int64_t *s, int64_t *e, double *d, int64_t n, int64_t m,
                         const pool_ctx *c, int a) {
    for (int64_t i = 0; i < m; i++) {
        if (c->kind == POOL_ADAPTIVE) {  // PyTorch: [floor(i n / m), ceil((i + 1) n / m))
            s[i] = i * n / m;
            e[i] = ((i + 1) * n + m - 1) / m;
            d[i] = (double)(e[i] - s[i]);
            continue;
        }
        int64_t lo = i * c->stride[a] - c->padding[a], hi = lo + c->kernel[a];
        // avg_pool2d with count_include_pad counts the padding, not what lies beyond it
        int64_t padded_hi = hi < n + c->padding[a] ? hi : n + c->padding[a];
        s[i] = lo > 0 ? lo : 0;
        e[i] = hi < n ? hi : n;
        d[i] = (double)(c->count_include_pad ? padded_hi - lo : e[i] - s[i]);
    }
}

static pool_windows windows_new(const pool_geom *g, const pool_ctx *c) {
    pool_windows w;
    int64_t *buf = TT_MALLOC((size_t)(2 * g->OH + 2 * g->OW) * sizeof(int64_t));
    double *dbuf = TT_MALLOC((size_t)(g->OH + g->OW) * sizeof(double));
    w.hs = buf, w.he = buf + g->OH, w.ws = buf + 2 * g->OH, w.we = buf + 2 * g->OH + g->OW;
    w.dh = dbuf, w.dw = dbuf + g->OH;
    axis_windows(w.hs, w.he, w.dh, g->H, g->OH, c, 0);
    axis_windows(w.ws, w.we, w.dw, g->W, g->OW, c, 1);
    return w;
}

static void windows_free(pool_windows *w) {
    tt_free(w->hs);
    tt_free(w->dh);
}

// ---- argument checks ----

// x is a float (C, H, W) or (N, C, H, W) with no zero-sized dim; fills P, H, W.
static pool_geom geom_of(const tt_tensor *x, const char *func) {
    TT_CHECK_IN(func, x, "x is NULL");
    tt__check_float(x, func);
    TT_CHECK_IN(func, x->ndim == 3 || x->ndim == 4, "x %s must be (C, H, W) or (N, C, H, W)",
                tt__shape(x));
    for (int d = 0; d < x->ndim; d++)
        TT_CHECK_IN(func, x->shape[d] > 0, "x %s has a zero-sized dim; every dim must be > 0 "
                    "(as PyTorch)", tt__shape(x));
    pool_geom g = {1, x->shape[x->ndim - 2], x->shape[x->ndim - 1], 0, 0};
    for (int d = 0; d < x->ndim - 2; d++) g.P *= x->shape[d];
    return g;
}

// Fills the ctx's kernel, stride (NULL: the kernel) and padding (NULL: 0) and the output size.
static void fixed_windows(pool_ctx *c, pool_geom *g, const tt_tensor *x, const int64_t *kernel,
                          const int64_t *stride, const int64_t *padding, const char *func) {
    TT_CHECK_IN(func, kernel, "kernel is NULL; pass {kH, kW}");
    for (int a = 0; a < 2; a++) {
        c->kernel[a] = kernel[a];
        c->stride[a] = stride ? stride[a] : kernel[a];
        c->padding[a] = padding ? padding[a] : 0;
        TT_CHECK_IN(func, c->kernel[a] > 0 && c->stride[a] > 0, "kernel (%lld, %lld) and "
                    "stride (%lld, %lld) must be positive", (long long)kernel[0],
                    (long long)kernel[1], (long long)c->stride[0], (long long)c->stride[1]);
        TT_CHECK_IN(func, c->padding[a] >= 0 && c->padding[a] <= c->kernel[a] / 2,
                    "padding %lld of kernel %lld (dim %d): pad should be at most half of "
                    "kernel size (as PyTorch); lower the padding", (long long)c->padding[a],
                    (long long)c->kernel[a], a);
    }
    int64_t in[2] = {g->H, g->W}, out[2];
    for (int a = 0; a < 2; a++) {
        int64_t span = in[a] - c->kernel[a] + 2 * c->padding[a];  // 2 p <= kernel: no overflow
        out[a] = span < 0 ? 0 : span / c->stride[a] + 1;
    }
    TT_CHECK_IN(func, out[0] > 0 && out[1] > 0, "x %s with kernel (%lld, %lld), padding "
                "(%lld, %lld): the output size would be (%lld, %lld), too small; use a smaller "
                "kernel or more padding", tt__shape(x), (long long)c->kernel[0],
                (long long)c->kernel[1], (long long)c->padding[0], (long long)c->padding[1],
                (long long)out[0], (long long)out[1]);
    g->OH = out[0], g->OW = out[1];
}

// The output shape: x's with H, W replaced by OH, OW.
static void out_shape(int64_t *shape, const tt_tensor *x, const pool_geom *g) {
    for (int d = 0; d < x->ndim; d++) shape[d] = x->shape[d];
    shape[x->ndim - 2] = g->OH, shape[x->ndim - 1] = g->OW;
}

// ---- max_pool2d ----
// y = the window's maximum over -inf padding; the node saves the TT_I64 indices (flat h W + w
// in each plane, as PyTorch's return_indices) and its backward scatters g there.

tt_tensor *tt_max_pool2d(tt_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], tt_tensor **indices_out) {
    pool_geom g = geom_of(x, __func__);
    pool_ctx pc = {.kind = POOL_MAX};
    fixed_windows(&pc, &g, x, kernel, stride, padding, __func__);
    pool_windows w = windows_new(&g, &pc);
    int64_t shape[4];
    out_shape(shape, x, &g);
    tt_tensor *xc = tt__contiguous_ref(x);
    tt_tensor *out = tt__new(x->dtype, x->ndim, shape);  // (P, OH, OW)
    tt_tensor *idx = tt__new(TT_I64, x->ndim, shape);    // (P, OH, OW)
    if (x->dtype == TT_F32)
        tt_kmax_pool2d_forward_f32(tt_data(out), tt_data(idx), tt_data(xc), g.P, g.H, g.W, g.OH,
                                   g.OW, w.hs, w.he, w.ws, w.we);
    else
        tt_kmax_pool2d_forward_f64(tt_data(out), tt_data(idx), tt_data(xc), g.P, g.H, g.W, g.OH,
                                   g.OW, w.hs, w.he, w.ws, w.we);
    windows_free(&w);
    tt_release(xc);
    pool_ctx *c = tt__record(out, TT_OP_MAX_POOL2D, 1, &x, sizeof *c);
    if (c) {
        *c = pc;
        tt__save(out->node, 0, idx);
    }
    if (indices_out) *indices_out = tt__autorelease(idx);
    else tt_release(idx);
    return tt__autorelease(out);
}

void tt__backward_max_pool2d(tt_node *n) {
    tt_tensor *x = n->inputs[0], *idx = n->saved[0];
    tt_tensor *dx = tt__grad_buffer(x);  // (P, H, W)
    if (!dx) return;
    pool_geom g = geom_of(x, "tt_max_pool2d");
    g.OH = n->shape[n->ndim - 2], g.OW = n->shape[n->ndim - 1];
    tt_tensor *gc = tt__contiguous_ref(n->grad);  // (P, OH, OW)
    if (n->dtype == TT_F32)
        tt_kmax_pool2d_backward_f32(tt_data(dx), tt_data(gc), tt_data(idx), g.P, g.H, g.W, g.OH,
                                    g.OW);
    else
        tt_kmax_pool2d_backward_f64(tt_data(dx), tt_data(gc), tt_data(idx), g.P, g.H, g.W, g.OH,
                                    g.OW);
    tt_release(gc);
    tt__accum_grad_owned(x, dx);
}

// ---- avg_pool2d, adaptive_avg_pool2d ----
// y = the window's sum / its divisor (pool.h); one node kind for both, the ctx tells which
// windows. dx spreads g / divisor over each window.

static tt_tensor *avg_pool(tt_tensor *x, const pool_ctx *pc, const pool_geom *g) {
    pool_windows w = windows_new(g, pc);
    int64_t shape[4];
    out_shape(shape, x, g);
    tt_tensor *xc = tt__contiguous_ref(x);
    tt_tensor *out = tt__new(x->dtype, x->ndim, shape);  // (P, OH, OW)
    if (x->dtype == TT_F32)
        tt_kavg_pool2d_forward_f32(tt_data(out), tt_data(xc), g->P, g->H, g->W, g->OH, g->OW,
                                   w.hs, w.he, w.ws, w.we, w.dh, w.dw);
    else
        tt_kavg_pool2d_forward_f64(tt_data(out), tt_data(xc), g->P, g->H, g->W, g->OH, g->OW,
                                   w.hs, w.he, w.ws, w.we, w.dh, w.dw);
    windows_free(&w);
    tt_release(xc);
    pool_ctx *c = tt__record(out, TT_OP_AVG_POOL2D, 1, &x, sizeof *c);
    if (c) *c = *pc;
    return tt__autorelease(out);
}

tt_tensor *tt_avg_pool2d(tt_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], bool count_include_pad) {
    pool_geom g = geom_of(x, __func__);
    pool_ctx pc = {.kind = POOL_AVG, .count_include_pad = count_include_pad};
    fixed_windows(&pc, &g, x, kernel, stride, padding, __func__);
    return avg_pool(x, &pc, &g);
}

tt_tensor *tt_adaptive_avg_pool2d(tt_tensor *x, int64_t out_h, int64_t out_w) {
    pool_geom g = geom_of(x, __func__);
    TT_CHECK(out_h > 0 && out_w > 0, "output size (%lld, %lld) must be positive",
             (long long)out_h, (long long)out_w);
    int64_t t;  // the windows compute (i + 1) H and (j + 1) W: they must fit
    TT_CHECK(out_h < (INT64_MAX >> 5) && out_w < (INT64_MAX >> 5) &&
                 !__builtin_mul_overflow(out_h + 1, g.H, &t) &&
                 !__builtin_mul_overflow(out_w + 1, g.W, &t),
             "output size (%lld, %lld) for x %s overflows int64: no tensor can be that large",
             (long long)out_h, (long long)out_w, tt__shape(x));
    g.OH = out_h, g.OW = out_w;
    int64_t shape[4];
    out_shape(shape, x, &g);
    tt__check_shape(__func__, x->dtype, x->ndim, shape);
    pool_ctx pc = {.kind = POOL_ADAPTIVE};
    return avg_pool(x, &pc, &g);
}

void tt__backward_avg_pool2d(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    const pool_ctx *c = n->ctx;
    tt_tensor *dx = tt__grad_buffer(x);  // (P, H, W)
    if (!dx) return;
    pool_geom g = geom_of(x, "tt_avg_pool2d");
    g.OH = n->shape[n->ndim - 2], g.OW = n->shape[n->ndim - 1];
    pool_windows w = windows_new(&g, c);
    tt_tensor *gc = tt__contiguous_ref(n->grad);  // (P, OH, OW)
    if (n->dtype == TT_F32)
        tt_kavg_pool2d_backward_f32(tt_data(dx), tt_data(gc), g.P, g.H, g.W, g.OH, g.OW, w.hs,
                                    w.he, w.ws, w.we, w.dh, w.dw);
    else
        tt_kavg_pool2d_backward_f64(tt_data(dx), tt_data(gc), g.P, g.H, g.W, g.OH, g.OW, w.hs,
                                    w.he, w.ws, w.we, w.dh, w.dw);
    windows_free(&w);
    tt_release(gc);
    tt__accum_grad_owned(x, dx);
}

// ---- batch_norm ----
// F.batch_norm: x (N, C, ...) normalised per channel C. Training: the batch's mean and biased
// variance over every dim but 1; running stats (when given) updated in place, with grad mode
// off, as r = (1 - momentum) r + momentum s, s the mean and the UNBIASED variance. Eval: the
// running stats. y = (x - mean) rsqrt(var + eps) weight + bias. A composition: no row.

tt_tensor *tt_batch_norm(tt_tensor *x, tt_tensor *running_mean, tt_tensor *running_var,
                         tt_tensor *weight, tt_tensor *bias, bool training, double momentum,
                         double eps) {
    TT_CHECK(x, "x is NULL");
    tt__check_float(x, __func__);
    TT_CHECK(x->ndim >= 2, "x %s must be (N, C) or (N, C, ...)", tt__shape(x));
    int64_t C = x->shape[1];
    tt_tensor *params[4] = {running_mean, running_var, weight, bias};
    static const char *const names[4] = {"running_mean", "running_var", "weight", "bias"};
    for (int k = 0; k < 4; k++) {
        if (!params[k]) continue;
        TT_CHECK(params[k]->ndim == 1 && params[k]->shape[0] == C, "%s %s must be (C,) = "
                 "(%lld,), x %s having C = %lld channels in dim 1", names[k],
                 tt__shape(params[k]), (long long)C, tt__shape(x), (long long)C);
        tt__check_same_dtype(x, params[k], __func__);
    }
    TT_CHECK(training || (running_mean && running_var), "eval mode (training false) needs "
             "running_mean and running_var; pass them or set training");
    int64_t count = tt_numel(x) / (C ? C : 1);
    TT_CHECK(!training || count > 1, "expected more than 1 value per channel when training, "
             "got x %s (as PyTorch); use a larger batch or eval mode", tt__shape(x));
    int dims[TT_MAX_DIMS], nd = 0;
    int64_t bshape[TT_MAX_DIMS];  // (1, C, 1, ...): the per-channel values broadcast to x
    for (int d = 0; d < x->ndim; d++) {
        bshape[d] = d == 1 ? C : 1;
        if (d != 1) dims[nd++] = d;
    }
    tt_scope_begin();
    tt_tensor *mean, *var;
    if (training) {
        mean = tt_mean(x, nd, dims, true);
        var = tt_var(x, nd, dims, 0, true);
        if (running_mean || running_var) {
            tt_no_grad_begin();
            if (running_mean)
                tt_add_(tt_mul_scalar_(running_mean, 1 - momentum),
                        tt_mul_scalar(tt_reshape(mean, 1, &C), momentum));
            if (running_var)  // the unbiased variance: var n / (n - 1)
                tt_add_(tt_mul_scalar_(running_var, 1 - momentum),
                        tt_mul_scalar(tt_reshape(var, 1, &C),
                                      momentum * (double)count / (double)(count - 1)));
            tt_no_grad_end();
        }
    } else {
        mean = tt_reshape(running_mean, x->ndim, bshape);
        var = tt_reshape(running_var, x->ndim, bshape);
    }
    tt_tensor *y = tt_mul(tt_sub(x, mean), tt_rsqrt(tt_add_scalar(var, eps)));
    if (weight) y = tt_mul(y, tt_reshape(weight, x->ndim, bshape));
    if (bias) y = tt_add(y, tt_reshape(bias, x->ndim, bshape));
    y = tt_keep(y);
    tt_scope_end();
    return y;
}

// ---- differentiable backwards (create_graph) ----

// dx = g scattered (added) at the saved argmax positions: per plane, scatter_add of g
// (P, OH OW) into zeros (P, H W) at indices (P, OH OW) (flat h W + w), as x's shape. The
// indices are constants; dx is linear in g.
static void max_pool2d2(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    if (!tt__input_needs_grad(n, 0)) return;
    pool_geom g = geom_of(x, "tt_max_pool2d");
    int64_t L = n->shape[n->ndim - 2] * n->shape[n->ndim - 1];
    tt_tensor *gf = tt_reshape(n->grad, 2, (int64_t[]){g.P, L});       // (P, OH OW)
    tt_tensor *idx = tt_reshape(n->saved[0], 2, (int64_t[]){g.P, L});  // (P, OH OW)
    tt_tensor *dx = tt_scatter_add(tt_zeros(x->dtype, 2, (int64_t[]){g.P, g.H * g.W}), 1, idx, gf);
    tt__accum_grad(x, tt_reshape(dx, x->ndim, x->shape));
}

// The window matrix of one axis, constant: a (m, n) with a[i, k] = 1 for k in [s[i], e[i]).
static tt_tensor *window_matrix(tt_dtype dt, const int64_t *s, const int64_t *e, int64_t n,
                                int64_t m) {
    tt_tensor *a = tt_zeros(dt, 2, (int64_t[]){m, n});
    for (int64_t i = 0; i < m; i++)
        for (int64_t k = s[i]; k < e[i]; k++) tt_set_at(a, i * n + k, 1.0);
    return a;
}

// With the windows of the first-order backward (ctx: avg_pool2d's kernel, stride, padding and
// count_include_pad, or adaptive_avg_pool2d's): dx = Ah^T (g / D) Aw, Ah (OH, H) and Aw (OW, W)
// the 0/1 window matrices, D[i, j] = dh_i dw_j the divisor of output (i, j): every output's
// g / divisor spread over its window (windows may overlap, be clipped at the border or, for the
// adaptive ones, differ in size). Ah, Aw and D are constants; dx is linear in g.
static void avg_pool2d2(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    if (!tt__input_needs_grad(n, 0)) return;
    pool_geom g = geom_of(x, "tt_avg_pool2d");
    g.OH = n->shape[n->ndim - 2], g.OW = n->shape[n->ndim - 1];
    pool_windows w = windows_new(&g, n->ctx);
    tt_tensor *ah = window_matrix(x->dtype, w.hs, w.he, g.H, g.OH);   // (OH, H)
    tt_tensor *aw = window_matrix(x->dtype, w.ws, w.we, g.W, g.OW);   // (OW, W)
    tt_tensor *div = tt_empty(x->dtype, 2, (int64_t[]){g.OH, g.OW});  // (OH, OW)
    for (int64_t i = 0; i < g.OH; i++)
        for (int64_t j = 0; j < g.OW; j++) tt_set_at(div, i * g.OW + j, w.dh[i] * w.dw[j]);
    windows_free(&w);
    tt_tensor *dx = tt_matmul(tt_transpose(ah, 0, 1), tt_div(n->grad, div));  // (..., H, OW)
    tt__accum_grad(x, tt_matmul(dx, aw));                                     // (..., H, W)
}

const tt__grad2_row tt__grad2_pool[] = {
    {TT_OP_MAX_POOL2D, max_pool2d2},
    {TT_OP_AVG_POOL2D, avg_pool2d2},
    {TT_OP_COUNT, NULL},
};

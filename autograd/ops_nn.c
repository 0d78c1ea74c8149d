// The neural-network ops, each one fused op with its forward and backward side by side:
// softmax, log_softmax, masked_fill, layernorm, rmsnorm, embedding, cross_entropy, dropout.
// The arithmetic is in tensor/kernels/nn.inc; this file checks arguments, makes contiguous
// copies of strided inputs, records the tape node and saves what the backward needs.
#include "autograd_internal.h"
#include "ops_nn_ctx.h"

#include "../tensor/kernels/nn.h"

// Calls the f32 or the f64 kernel, both named in full; data pointers come from tt_data (void *).
#define BY_DTYPE(dt, f32_fn, f64_fn, ...) \
    ((dt) == TT_F32 ? f32_fn(__VA_ARGS__) : f64_fn(__VA_ARGS__))

// ---- helpers ----


// Saves t into the node's slot and drops the caller's reference.
static void save_owned(tt_node *n, int slot, tt_tensor *t) {
    tt__save(n, slot, t);
    tt_release(t);
}


// The product of shape[from .. to).
static int64_t prod(const int64_t *shape, int from, int to) {
    return tt__shape_numel(to - from, shape + from);
}

// Copies an index tensor (TT_I32 or TT_I64, any layout) into a new contiguous TT_I64 tensor.
static tt_tensor *indices_i64(const tt_tensor *idx, const char *func, const char *what) {
    if (idx->dtype != TT_I32 && idx->dtype != TT_I64)
        tt_fatal(__FILE__, __LINE__, func, "%s %s is %s; it must be i32 or i64", what,
                 tt__shape(idx), tt_dtype_name(idx->dtype));
    tt_tensor *out = tt__new(TT_I64, idx->ndim, idx->shape);
    int64_t *dst = tt_data(out);  // (n)
    int64_t k = 0;
    const int64_t *strides[1] = {idx->stride};
    tt__iter it;
    if (tt__iter_init(&it, idx->ndim, idx->shape, 1, strides, &idx->offset)) {
        const int32_t *s32 = tt__base(idx);
        const int64_t *s64 = tt__base(idx);
        do {
            for (int64_t i = 0; i < it.inner; i++) {
                int64_t at = it.off[0] + i * it.istride[0];
                dst[k++] = idx->dtype == TT_I32 ? s32[at] : s64[at];
            }
        } while (tt__iter_next(&it));
    }
    return out;
}

// ---- softmax / log_softmax ----
// y = softmax(x) along dim; the node saves y (an alias). dx = y (g - sum(g y)) or, for
// log_softmax, dx = g - exp(y) sum(g). x is viewed as (outer, C, inner) around dim.

static void split_at(int ndim, const int64_t *shape, int dim, int64_t *outer, int64_t *C,
                     int64_t *inner) {
    *outer = prod(shape, 0, dim);
    *C = ndim > 0 ? shape[dim] : 1;
    *inner = ndim > 0 ? prod(shape, dim + 1, ndim) : 1;
}

static tt_tensor *softmax_op(tt_tensor *x, int dim, bool log_out, const char *func) {
    TT_CHECK(x, "x is NULL");
    tt__check_float(x, func);
    int d = tt__norm_dim(dim, x->ndim > 0 ? x->ndim : 1, func);
    int64_t outer, C, inner;
    split_at(x->ndim, x->shape, d, &outer, &C, &inner);
    tt_tensor *xc = tt__contiguous_ref(x);
    tt_tensor *out = tt__new(x->dtype, x->ndim, x->shape);  // (outer, C, inner)
    if (log_out)
        BY_DTYPE(x->dtype, tt_klog_softmax_forward_f32, tt_klog_softmax_forward_f64, tt_data(out),
                 tt_data(xc), outer, C, inner);
    else
        BY_DTYPE(x->dtype, tt_ksoftmax_forward_f32, tt_ksoftmax_forward_f64, tt_data(out),
                 tt_data(xc), outer, C, inner);
    tt_release(xc);
    softmax_ctx *c = tt__record(out, log_out ? TT_OP_LOG_SOFTMAX : TT_OP_SOFTMAX, 1, &x,
                                sizeof *c);
    if (c) {
        c->dim = d;
        save_owned(out->node, 0, tt__alias(out));
    }
    return tt__autorelease(out);
}

tt_tensor *tt_softmax(tt_tensor *x, int dim) { return softmax_op(x, dim, false, __func__); }

tt_tensor *tt_log_softmax(tt_tensor *x, int dim) { return softmax_op(x, dim, true, __func__); }

static void softmax_backward(tt_node *n, bool log_out) {
    tt_tensor *x = n->inputs[0], *y = n->saved[0];
    const softmax_ctx *c = n->ctx;
    int64_t outer, C, inner;
    split_at(n->ndim, n->shape, c->dim, &outer, &C, &inner);
    tt_tensor *dx = tt__grad_buffer(x);  // (outer, C, inner)
    if (!dx) return;
    tt_tensor *g = tt__contiguous_ref(n->grad);  // (outer, C, inner)
    if (log_out)
        BY_DTYPE(n->dtype, tt_klog_softmax_backward_f32, tt_klog_softmax_backward_f64, tt_data(dx),
                 tt_data(g), tt_data(y), outer, C, inner);
    else
        BY_DTYPE(n->dtype, tt_ksoftmax_backward_f32, tt_ksoftmax_backward_f64, tt_data(dx),
                 tt_data(g), tt_data(y), outer, C, inner);
    tt_release(g);
    tt__accum_grad_owned(x, dx);
}

void tt__backward_softmax(tt_node *n) { softmax_backward(n, false); }

void tt__backward_log_softmax(tt_node *n) { softmax_backward(n, true); }

// ---- masked_fill ----
// y = mask ? value : x, the mask broadcast to x; dx = mask ? 0 : g. The mask is saved state,
// not an input of the node. It is flattened to a byte map over x's trailing dims that it
// does not broadcast along (the leading dims it repeats over make the kernel's `outer`).

typedef struct masked_fill_map {
    uint8_t *fill;  // (M)
    int64_t outer, M;
} masked_fill_map;

static masked_fill_map masked_fill_map_new(const tt_tensor *mask, int ndim,
                                           const int64_t *shape) {
    int64_t ms[TT_MAX_DIMS];
    tt__broadcast_strides(mask, ndim, shape, ms);
    int lead = 0;
    while (lead < ndim && (ms[lead] == 0 || shape[lead] == 1)) lead++;
    masked_fill_map m = {NULL, prod(shape, 0, lead), prod(shape, lead, ndim)};
    m.fill = TT_MALLOC((size_t)m.M + 1);
    const int64_t *strides[1] = {ms + lead};
    int64_t k = 0;
    tt__iter it;
    if (tt__iter_init(&it, ndim - lead, shape + lead, 1, strides, &mask->offset)) {
        const void *base = tt__base(mask);
        do {
            for (int64_t i = 0; i < it.inner; i++)
                m.fill[k++] = tt__load(base, mask->dtype, it.off[0] + i * it.istride[0]) != 0;
        } while (tt__iter_next(&it));
    }
    return m;
}

tt_tensor *tt_masked_fill(tt_tensor *x, tt_tensor *mask, double value) {
    TT_CHECK(x && mask, "x or mask is NULL");
    bool fits = mask->ndim <= x->ndim;
    for (int i = 0; fits && i < mask->ndim; i++) {
        int64_t md = mask->shape[i], xd = x->shape[x->ndim - mask->ndim + i];
        fits = md == xd || md == 1;
    }
    TT_CHECK(fits, "mask %s does not broadcast to x %s; each of the mask's dims must equal "
             "x's matching trailing dim or be 1", tt__shape(mask), tt__shape(x));
    if (!tt_dtype_is_float(x->dtype)) {  // integer or bool x: where (exact), no gradient
        double lim = x->dtype == TT_I32 ? 0x1p31 : 0x1p63;
        TT_CHECK(x->dtype == TT_BOOL || (value >= -lim && value < lim), "value %g cannot be "
                 "converted to %s without overflow (x is %s, as PyTorch's error); pass a value "
                 "in the dtype's range", value, tt_dtype_name(x->dtype), tt__shape(x));
        tt_scope_begin();
        tt_tensor *y = tt_keep(tt_where(mask, tt_full(x->dtype, 0, NULL, value), x));
        tt_scope_end();
        return y;
    }
    masked_fill_map m = masked_fill_map_new(mask, x->ndim, x->shape);
    tt_tensor *xc = tt__contiguous_ref(x);
    tt_tensor *out = tt__new(x->dtype, x->ndim, x->shape);  // (outer, M)
    BY_DTYPE(x->dtype, tt_kmasked_fill_forward_f32, tt_kmasked_fill_forward_f64, tt_data(out),
             tt_data(xc), m.fill, m.outer, m.M, value);
    tt_free(m.fill);
    tt_release(xc);
    if (tt__record(out, TT_OP_MASKED_FILL, 1, &x, 0)) tt__save(out->node, 0, mask);
    return tt__autorelease(out);
}

void tt__backward_masked_fill(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    tt_tensor *dx = tt__grad_buffer(x);  // (outer, M)
    if (!dx) return;
    masked_fill_map m = masked_fill_map_new(n->saved[0], n->ndim, n->shape);
    tt_tensor *g = tt__contiguous_ref(n->grad);
    BY_DTYPE(n->dtype, tt_kmasked_fill_backward_f32, tt_kmasked_fill_backward_f64, tt_data(dx),
             tt_data(g), m.fill, m.outer, m.M);
    tt_free(m.fill);
    tt_release(g);
    tt__accum_grad_owned(x, dx);
}

// ---- layernorm ----
// Over the last norm_ndim dims of x, viewed as (R, N): y = (x - mean) rstd weight + bias.
// Node inputs {x, weight, bias} (NULL when absent); saves mean and rstd (R).

static void check_affine(const tt_tensor *x, const tt_tensor *p, int k, const char *what,
                         const char *func) {
    if (!p) return;
    tt__check_same_dtype(x, p, func);
    bool ok = p->ndim == k;
    for (int i = 0; ok && i < k; i++) ok = p->shape[i] == x->shape[x->ndim - k + i];
    if (!ok)
        tt_fatal(__FILE__, __LINE__, func, "%s %s must have the shape of x's last %d dim(s) "
                 "%s (x is %s)", what, tt__shape(p), k,
                 tt__shape_of(k, x->shape + x->ndim - k), tt__shape(x));
}

tt_tensor *tt_layernorm(tt_tensor *x, int norm_ndim, tt_tensor *weight, tt_tensor *bias,
                        double eps) {
    TT_CHECK(x, "x is NULL");
    tt__check_float(x, __func__);
    TT_CHECK(norm_ndim >= 1 && norm_ndim <= x->ndim, "norm_ndim %d is out of range for x %s; "
             "it counts the trailing dims to normalize over (1 .. %d)", norm_ndim,
             tt__shape(x), x->ndim);
    TT_CHECK(eps >= 0, "eps must be >= 0, got %g", eps);
    check_affine(x, weight, norm_ndim, "weight", __func__);
    check_affine(x, bias, norm_ndim, "bias", __func__);
    int64_t R = prod(x->shape, 0, x->ndim - norm_ndim);
    int64_t N = prod(x->shape, x->ndim - norm_ndim, x->ndim);
    tt_tensor *xc = tt__contiguous_ref(x), *wc = weight ? tt__contiguous_ref(weight) : NULL;
    tt_tensor *bc = bias ? tt__contiguous_ref(bias) : NULL;
    tt_tensor *out = tt__new(x->dtype, x->ndim, x->shape);  // (R, N)
    tt_tensor *mean = tt__new(x->dtype, 1, &R), *rstd = tt__new(x->dtype, 1, &R);  // (R)
    BY_DTYPE(x->dtype, tt_klayernorm_forward_f32, tt_klayernorm_forward_f64, tt_data(out),
             tt_data(mean), tt_data(rstd), tt_data(xc), tt__data_or_null(wc), tt__data_or_null(bc),
             R, N, eps);
    tt_release(xc);
    tt_release(wc);
    tt_release(bc);
    tt_tensor *inputs[3] = {x, weight, bias};
    norm_ctx *c = tt__record(out, TT_OP_LAYERNORM, 3, inputs, sizeof *c);
    if (c) {
        *c = (norm_ctx){R, N, eps, norm_ndim};
        tt__save(out->node, 0, mean);
        tt__save(out->node, 1, rstd);
    }
    tt_release(mean);
    tt_release(rstd);
    return tt__autorelease(out);
}

void tt__backward_layernorm(tt_node *n) {
    tt_tensor *x = n->inputs[0], *w = n->inputs[1], *b = n->inputs[2];
    const norm_ctx *c = n->ctx;
    tt_tensor *dw = tt__grad_buffer(w), *db = tt__grad_buffer(b);
    // dx goes straight into x's gradient when x has one already (a residual stream's, from
    // the add after it): no zeroed buffer, no adding pass.
    tt_tensor *dxin = x->requires_grad ? tt__grad_inplace(x) : NULL;
    tt_tensor *g = tt__contiguous_ref(n->grad), *xc = tt__contiguous_ref(x);
    tt_tensor *wc = w ? tt__contiguous_ref(w) : NULL;
    if (dxin && (dxin->storage == g->storage || dxin->storage == xc->storage ||
                 (wc && dxin->storage == wc->storage)))
        dxin = NULL;
    tt_tensor *dx = dxin ? NULL : tt__grad_buffer(x);
    if (dxin || dx || dw || db)
        BY_DTYPE(n->dtype, tt_klayernorm_backward_f32, tt_klayernorm_backward_f64,
                 dxin ? tt_data(dxin) : tt__data_or_null(dx), tt__data_or_null(dw),
                 tt__data_or_null(db), tt_data(g), tt_data(xc), tt__data_or_null(wc),
                 tt_data(n->saved[0]), tt_data(n->saved[1]), c->R, c->N);
    tt_release(g);
    tt_release(xc);
    tt_release(wc);
    if (!dxin) tt__accum_grad_owned(x, dx);
    tt__accum_grad_owned(w, dw);
    tt__accum_grad_owned(b, db);
}

// ---- rmsnorm ----
// Over the last dim of x, viewed as (R, N): y = x rsqrt(mean(x^2) + eps) weight.
// Node inputs {x, weight} (NULL when absent); saves rstd (R).

tt_tensor *tt_rmsnorm(tt_tensor *x, tt_tensor *weight, double eps) {
    TT_CHECK(x, "x is NULL");
    tt__check_float(x, __func__);
    TT_CHECK(x->ndim >= 1, "x is 0-d; rmsnorm normalizes over the last dim of a tensor "
             "with at least one dim");
    TT_CHECK(eps >= 0, "eps must be >= 0, got %g", eps);
    check_affine(x, weight, 1, "weight", __func__);
    int64_t R = prod(x->shape, 0, x->ndim - 1), N = x->shape[x->ndim - 1];
    tt_tensor *xc = tt__contiguous_ref(x), *wc = weight ? tt__contiguous_ref(weight) : NULL;
    tt_tensor *out = tt__new(x->dtype, x->ndim, x->shape);  // (R, N)
    tt_tensor *rstd = tt__new(x->dtype, 1, &R);             // (R)
    BY_DTYPE(x->dtype, tt_krmsnorm_forward_f32, tt_krmsnorm_forward_f64, tt_data(out),
             tt_data(rstd), tt_data(xc), tt__data_or_null(wc), R, N, eps);
    tt_release(xc);
    tt_release(wc);
    tt_tensor *inputs[2] = {x, weight};
    norm_ctx *c = tt__record(out, TT_OP_RMSNORM, 2, inputs, sizeof *c);
    if (c) {
        *c = (norm_ctx){R, N, eps, 1};
        tt__save(out->node, 0, rstd);
    }
    tt_release(rstd);
    return tt__autorelease(out);
}

void tt__backward_rmsnorm(tt_node *n) {
    tt_tensor *x = n->inputs[0], *w = n->inputs[1];
    const norm_ctx *c = n->ctx;
    tt_tensor *dx = tt__grad_buffer(x), *dw = tt__grad_buffer(w);
    if (dx || dw) {
        tt_tensor *g = tt__contiguous_ref(n->grad), *xc = tt__contiguous_ref(x);
        tt_tensor *wc = w ? tt__contiguous_ref(w) : NULL;
        BY_DTYPE(n->dtype, tt_krmsnorm_backward_f32, tt_krmsnorm_backward_f64, tt__data_or_null(dx),
                 tt__data_or_null(dw), tt_data(g), tt_data(xc), tt__data_or_null(wc),
                 tt_data(n->saved[0]), c->R, c->N);
        tt_release(g);
        tt_release(xc);
        tt_release(wc);
    }
    tt__accum_grad_owned(x, dx);
    tt__accum_grad_owned(w, dw);
}

// ---- embedding ----
// y[..., :] = weight[indices[...], :]; dweight[indices[i]] += g[i] (scatter-add in index
// order). Node input {weight}; saves the indices as a contiguous i64 copy.

tt_tensor *tt_embedding(tt_tensor *weight, tt_tensor *indices) {
    TT_CHECK(weight && indices, "weight or indices is NULL");
    tt__check_float(weight, __func__);
    TT_CHECK(weight->ndim == 2, "weight %s must be 2-d (V, C): one row of C per index",
             tt__shape(weight));
    TT_CHECK(indices->ndim < TT_MAX_DIMS, "indices %s have %d dims; the output adds one and "
             "at most %d are allowed", tt__shape(indices), indices->ndim, TT_MAX_DIMS);
    int64_t V = weight->shape[0], C = weight->shape[1];
    tt_tensor *idx = indices_i64(indices, __func__, "indices");  // (n)
    const int64_t *ix = tt_data(idx);
    int64_t n = tt_numel(idx);
    for (int64_t i = 0; i < n; i++)
        TT_CHECK(ix[i] >= 0 && ix[i] < V, "index %lld (at flat position %lld of indices %s) "
                 "is out of range for weight %s with V = %lld rows; indices must be in "
                 "[0, %lld)", (long long)ix[i], (long long)i, tt__shape(indices),
                 tt__shape(weight), (long long)V, (long long)V);
    int64_t shape[TT_MAX_DIMS];
    for (int i = 0; i < indices->ndim; i++) shape[i] = indices->shape[i];
    shape[indices->ndim] = C;
    tt_tensor *wc = tt__contiguous_ref(weight);
    tt_tensor *out = tt__new(weight->dtype, indices->ndim + 1, shape);  // (n, C)
    BY_DTYPE(weight->dtype, tt_kembedding_forward_f32, tt_kembedding_forward_f64, tt_data(out),
             tt_data(wc), ix, n, C);
    tt_release(wc);
    if (tt__record(out, TT_OP_EMBEDDING, 1, &weight, 0)) tt__save(out->node, 0, idx);
    tt_release(idx);
    return tt__autorelease(out);
}

void tt__backward_embedding(tt_node *n) {
    tt_tensor *w = n->inputs[0], *idx = n->saved[0];
    tt_tensor *dw = tt__grad_buffer(w);  // (V, C)
    if (!dw) return;
    tt_tensor *g = tt__contiguous_ref(n->grad);  // (n, C)
    BY_DTYPE(n->dtype, tt_kembedding_backward_f32, tt_kembedding_backward_f64, tt_data(dw),
             tt_data(g), tt_data(idx), tt_numel(idx), w->shape[1]);
    tt_release(g);
    tt__accum_grad_owned(w, dw);
}

// ---- cross_entropy ----
// logits (..., V) viewed as (R, V), targets (...) as (R): the mean over non-ignored rows of
// (1 - s) (lse - x_t) + s (lse - mean_j x_j), 0 when every row is ignored. Node input
// {logits}; saves the i64 targets and the per-row log-sum-exp (f64); the backward is
// dlogits = (softmax - (1 - s) onehot - s / V) g / count.

static tt_tensor *cross_entropy_op(tt_tensor *logits, tt_tensor *targets,
                                   int64_t ignore_index, double label_smoothing,
                                   const char *func) {
    if (!logits || !targets) tt_fatal(__FILE__, __LINE__, func, "logits or targets is NULL");
    tt__check_float(logits, func);
    TT_CHECK_IN(func, logits->ndim >= 1, "logits are 0-d; they must be (..., V) with V classes");
    bool same = targets->ndim == logits->ndim - 1;
    for (int i = 0; same && i < targets->ndim; i++) same = targets->shape[i] == logits->shape[i];
    TT_CHECK_IN(func, same, "targets %s must have the shape of logits %s without the last dim, %s",
             tt__shape(targets), tt__shape(logits),
             tt__shape_of(logits->ndim - 1, logits->shape));
    TT_CHECK_IN(func, label_smoothing >= 0 && label_smoothing < 1,
             "label_smoothing must be in [0, 1), got %g", label_smoothing);
    int64_t V = logits->shape[logits->ndim - 1], R = prod(logits->shape, 0, logits->ndim - 1);
    tt_tensor *tgt = indices_i64(targets, func, "targets");  // (R)
    const int64_t *t = tt_data(tgt);
    int64_t count = 0;
    for (int64_t r = 0; r < R; r++) {
        if (t[r] == ignore_index) continue;
        TT_CHECK_IN(func, t[r] >= 0 && t[r] < V,
                 "target %lld (at flat position %lld of targets %s) is out of range for "
                 "logits %s with V = %lld classes; targets must be in [0, %lld) or equal "
                 "ignore_index (%lld)", (long long)t[r], (long long)r, tt__shape(targets),
                 tt__shape(logits), (long long)V, (long long)V, (long long)ignore_index);
        count++;
    }
    tt_tensor *xc = tt__contiguous_ref(logits);
    tt_tensor *lse = tt__new(TT_F64, 1, &R);  // (R)
    double total =
        BY_DTYPE(logits->dtype, tt_kcross_entropy_forward_f32, tt_kcross_entropy_forward_f64,
                 tt_data(lse), tt_data(xc), t, R, V, ignore_index, label_smoothing);
    tt_release(xc);
    tt_tensor *out = tt__new(logits->dtype, 0, NULL);
    tt__store(tt_data(out), out->dtype, 0, count > 0 ? total / (double)count : 0.0);
    cross_entropy_ctx *c = tt__record(out, TT_OP_CROSS_ENTROPY, 1, &logits, sizeof *c);
    if (c) {
        *c = (cross_entropy_ctx){R, V, ignore_index, count, label_smoothing};
        tt__save(out->node, 0, tgt);
        tt__save(out->node, 1, lse);
    }
    tt_release(tgt);
    tt_release(lse);
    return tt__autorelease(out);
}

tt_tensor *tt_cross_entropy(tt_tensor *logits, tt_tensor *targets, int64_t ignore_index) {
    return cross_entropy_op(logits, targets, ignore_index, 0.0, __func__);
}

tt_tensor *tt_cross_entropy_smooth(tt_tensor *logits, tt_tensor *targets,
                                   int64_t ignore_index, double label_smoothing) {
    return cross_entropy_op(logits, targets, ignore_index, label_smoothing, __func__);
}

void tt__backward_cross_entropy(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    const cross_entropy_ctx *c = n->ctx;
    tt_tensor *dx = tt__grad_buffer(x);  // (R, V)
    if (!dx) return;
    if (c->count > 0) {  // else every row is ignored: the loss is the constant 0
        double scale = tt_item(n->grad) / (double)c->count;
        tt_tensor *xc = tt__contiguous_ref(x);
        BY_DTYPE(n->dtype, tt_kcross_entropy_backward_f32, tt_kcross_entropy_backward_f64,
                 tt_data(dx), tt_data(xc), tt_data(n->saved[1]), tt_data(n->saved[0]), c->R, c->V,
                 c->ignore_index, c->smoothing, scale);
        tt_release(xc);
    }
    tt__accum_grad_owned(x, dx);
}

// ---- dropout ----
// Training: y = x mask, mask = (uniform >= p) / (1 - p) drawn from rng in row-major order;
// the node saves the mask and the backward is g mask. Eval or p == 0: x itself, no node.

tt_tensor *tt_dropout(tt_tensor *x, double p, bool training, tt_rng *rng) {
    TT_CHECK(x, "x is NULL");
    tt__check_float(x, __func__);
    TT_CHECK(p >= 0 && p <= 1, "p must be in [0, 1], got %g", p);
    if (!training || p == 0) return tt__autorelease(tt_retain(x));
    TT_CHECK(rng, "rng is NULL; training dropout draws its mask from an explicit tt_rng");
    tt_tensor *xc = tt__contiguous_ref(x);
    tt_tensor *out = tt__new(x->dtype, x->ndim, x->shape);   // (n)
    tt_tensor *mask = tt__new(x->dtype, x->ndim, x->shape);  // (n)
    BY_DTYPE(x->dtype, tt_kdropout_forward_f32, tt_kdropout_forward_f64, tt_data(out),
             tt_data(mask), tt_data(xc), tt_numel(x), p, rng);
    tt_release(xc);
    if (tt__record(out, TT_OP_DROPOUT, 1, &x, 0)) tt__save(out->node, 0, mask);
    tt_release(mask);
    return tt__autorelease(out);
}

void tt__backward_dropout(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    tt_tensor *dx = tt__grad_buffer(x);  // (n)
    if (!dx) return;
    tt_tensor *g = tt__contiguous_ref(n->grad);
    BY_DTYPE(n->dtype, tt_kdropout_backward_f32, tt_kdropout_backward_f64, tt_data(dx), tt_data(g),
             tt_data(n->saved[0]), tt_numel(dx));
    tt_release(g);
    tt__accum_grad_owned(x, dx);
}

// The math ops beyond the elementwise rows: clamp (a hand-written op, kernels in
// tensor/kernels/elementwise.inc) and the compositions softplus, logsumexp, std and norm, which
// get their gradients from the ops they are made of. The elementwise math rows (sin, cos,
// log1p, expm1, reciprocal, sign, floor, ceil, round, erf, leaky_relu, elu) are generated from
// ops.def (their differentiable backwards are in grad2_elementwise.c).
#include "autograd_internal.h"

#include <math.h>

#include "../tensor/kernels/elementwise.h"

// ---- helpers ----

typedef enum mask_pred { MASK_GT, MASK_NOT_GT, MASK_EQ, MASK_NOT_NAN } mask_pred;

// A TT_I32 tensor of x's shape (scoped): 1 where pred(x, t) holds, 0 elsewhere; *count gets the
// number of ones. NaN is never > t nor == t (so MASK_NOT_GT holds at NaN). No gradient.
static tt_tensor *mask_of(tt_tensor *x, mask_pred pred, double t, int64_t *count) {
    tt_tensor *m = tt__new(TT_I32, x->ndim, x->shape);
    int32_t *dst = tt_data(m);  // (N)
    int64_t k = 0, ones = 0;
    const int64_t *strides[1] = {x->stride};
    tt__iter it;
    if (tt__iter_init(&it, x->ndim, x->shape, 1, strides, &x->offset)) {
        const void *base = tt__base(x);
        do {
            for (int64_t i = 0; i < it.inner; i++) {
                double v = tt__load(base, x->dtype, it.off[0] + i * it.istride[0]);
                bool on = pred == MASK_GT ? v > t : pred == MASK_NOT_GT ? !(v > t)
                          : pred == MASK_EQ ? v == t : v == v;
                dst[k++] = on;
                ones += on;
            }
        } while (tt__iter_next(&it));
    }
    *count = ones;
    return tt__autorelease(m);
}

static void check_input(const tt_tensor *x, const char *func) {
    if (!x) tt_fatal(__FILE__, __LINE__, func, "input tensor is NULL");
    tt__check_float(x, func);
}

// The dims of a composed reduction, checked here so that a bad one names the public function
// (duplicates are left to the reduction it calls).
static void check_dims(const tt_tensor *x, int ndims, const int *dims, const char *func) {
    if (ndims < 0 || (ndims > 0 && !dims))
        tt_fatal(__FILE__, __LINE__, func, "ndims is %d with dims %s; pass ndims >= 0 (0: all "
                 "dims) and that many dims", ndims, dims ? "given" : "NULL");
    for (int i = 0; i < ndims; i++)
        if (dims[i] < -x->ndim || dims[i] >= x->ndim)
            tt_fatal(__FILE__, __LINE__, func, "dim %d is out of range for x of shape %s (valid "
                     "dims: %d .. %d)", dims[i], tt__shape(x), -x->ndim, x->ndim - 1);
}

// Calls the f32 or the f64 kernel, both named in full.
#define BY_DTYPE(dt, f32_fn, f64_fn, ...) \
    ((dt) == TT_F32 ? f32_fn(__VA_ARGS__) : f64_fn(__VA_ARGS__))

// ---- clamp ----
// y = min(max(x, lo), hi) (torch.clamp; lo > hi gives hi); dx = g where lo <= x <= hi, both
// bounds inclusive as PyTorch's clamp_backward, else 0. -INFINITY / INFINITY: no bound.

typedef struct clamp_ctx {
    double lo, hi;
} clamp_ctx;

static tt_tensor *clamp_impl(tt_tensor *x, double lo, double hi, const char *func) {
    check_input(x, func);
    if (isnan(lo) || isnan(hi))
        tt_fatal(__FILE__, __LINE__, func, "a bound is NaN (lo %g, hi %g) for x of shape %s; "
                 "pass -INFINITY or INFINITY for a side without a bound", lo, hi, tt__shape(x));
    tt_tensor *xc = tt__contiguous_ref(x);
    tt_tensor *out = tt__new(x->dtype, x->ndim, x->shape);
    int64_t n = tt_numel(x);
    BY_DTYPE(x->dtype, tt_kclamp_f32, tt_kclamp_f64, tt_data(out), tt_data(xc), lo, hi, n);
    tt_release(xc);
    clamp_ctx *c = tt__record(out, TT_OP_CLAMP, 1, &x, sizeof *c);
    if (c) c->lo = lo, c->hi = hi;
    return tt__autorelease(out);
}

tt_tensor *tt_clamp(tt_tensor *x, double lo, double hi) {
    return clamp_impl(x, lo, hi, __func__);
}

tt_tensor *tt_clip(tt_tensor *x, double lo, double hi) { return clamp_impl(x, lo, hi, __func__); }

void tt__backward_clamp(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    if (!x->requires_grad) return;
    const clamp_ctx *c = n->ctx;
    tt_tensor *xc = tt__contiguous_ref(x), *g = tt__contiguous_ref(n->grad);
    tt_tensor *dx = tt__new(n->dtype, n->ndim, n->shape);  // x's shape
    BY_DTYPE(n->dtype, tt_kclamp_backward_f32, tt_kclamp_backward_f64, tt_data(dx), tt_data(g),
             tt_data(xc), c->lo, c->hi, tt_numel(dx));
    tt_release(xc);
    tt_release(g);
    tt__accum_grad_owned(x, dx);
}

// ---- softplus ----
// PyTorch: y = x where beta x > threshold, else log(1 + e^(beta x)) / beta. With z = beta x,
// log(1 + e^z) = (z + |z|) / 2 + log1p(e^-|z|): no overflow, and its gradient at z = 0 is
// 1/2 + 0 - 0 = 1/2 = sigmoid(0) (relu(z) would give 0 there). z is raised to at least -1000
// (where the result and the gradient are 0 in both dtypes), so z = -inf gives 0, not NaN;
// maximum (not clamp) so that a NaN keeps its gradient NaN, as in PyTorch.

tt_tensor *tt_softplus(tt_tensor *x, double beta, double threshold) {
    check_input(x, __func__);
    if (!(beta != 0 && isfinite(beta)) || isnan(threshold))
        tt_fatal(__FILE__, __LINE__, __func__, "beta %g must be finite and nonzero and "
                 "threshold %g not NaN (x has shape %s); PyTorch's defaults are 1 and 20", beta,
                 threshold, tt__shape(x));
    tt_scope_begin();
    tt_tensor *z = beta == 1 ? x : tt_mul_scalar(x, beta);
    tt_tensor *zc = tt_maximum(z, tt_scalar(x->dtype, -1000));
    tt_tensor *a = tt_abs(zc);
    tt_tensor *s = tt_add(tt_mul_scalar(tt_add(zc, a), 0.5), tt_log1p(tt_exp(tt_neg(a))));
    if (beta != 1) s = tt_div_scalar(s, beta);
    int64_t nabove, nbelow;
    tt_tensor *above = mask_of(z, MASK_GT, threshold, &nabove);
    tt_tensor *y = s;
    if (nabove > 0) {  // linear above the threshold: x itself
        tt_tensor *below = mask_of(z, MASK_NOT_GT, threshold, &nbelow);
        y = tt_add(tt_masked_fill(s, above, 0), tt_masked_fill(x, below, 0));
    }
    int64_t nnum;
    tt_tensor *num = mask_of(x, MASK_NOT_NAN, 0, &nnum);
    if (nnum < tt_numel(x)) {  // PyTorch's gradient at NaN is NaN: add n * detach(n), where n
        tt_tensor *n = tt_masked_fill(x, num, 0);  // is NaN at the NaNs and 0 elsewhere
        y = tt_add(y, tt_mul(n, tt_detach(n)));
    }
    tt_keep(y);
    tt_scope_end();
    return y;
}

// ---- logsumexp ----
// y = m + log(sum(e^(x - m))) with m the max over dims, detached (its gradient would cancel),
// and 0 where m is infinite (as PyTorch: a row of -inf gives -inf, a +inf gives +inf).

tt_tensor *tt_logsumexp(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    check_input(x, __func__);
    check_dims(x, ndims, dims, __func__);
    tt_scope_begin();
    tt_no_grad_begin();
    tt_tensor *m = tt_max(x, ndims, dims, true);  // fresh, contiguous
    tt_no_grad_end();
    int64_t nm = tt_numel(m);
    void *md = tt_data(m);
    for (int64_t i = 0; i < nm; i++)
        if (isinf(tt__load(md, m->dtype, i))) tt__store(md, m->dtype, i, 0);
    tt_tensor *s = tt_sum(tt_exp(tt_sub(x, m)), ndims, dims, keepdim);
    tt_tensor *y = tt_add(tt_log(s), keepdim ? m : tt_reshape(m, s->ndim, s->shape));
    tt_keep(y);
    tt_scope_end();
    return y;
}

// ---- std and the 2-norm: sqrt with PyTorch's zero gradient at 0 ----
// sqrt(v) where v == 0 has an infinite derivative; PyTorch's std and norm backward mask it to
// 0 (grad / (2 y), masked_fill(y == 0, 0)). Here v is replaced by 1 under the sqrt and the
// result by 0 there, both with masked_fill, whose gradient is 0 at the masked places.
static tt_tensor *sqrt_zero_grad0(tt_tensor *v) {
    int64_t nzero;
    tt_tensor *zero = mask_of(v, MASK_EQ, 0, &nzero);
    if (nzero == 0) return tt_sqrt(v);
    return tt_masked_fill(tt_sqrt(tt_masked_fill(v, zero, 1)), zero, 0);
}

tt_tensor *tt_std(tt_tensor *x, int ndims, const int *dims, int correction, bool keepdim) {
    check_input(x, __func__);
    check_dims(x, ndims, dims, __func__);
    tt_scope_begin();
    tt_tensor *y = sqrt_zero_grad0(tt_var(x, ndims, dims, correction, keepdim));
    tt_keep(y);
    tt_scope_end();
    return y;
}

// ---- norm ----
// torch.linalg.vector_norm for p = 1 (sum |x|; gradient sign x, 0 at 0), 2 (sqrt(sum x^2);
// gradient x / y, 0 where y == 0) and INFINITY (max |x|; the gradient sign x goes to the
// maxima of |x|, split evenly among ties).

tt_tensor *tt_vector_norm(tt_tensor *x, double p, int ndims, const int *dims, bool keepdim) {
    check_input(x, __func__);
    if (!(p == 1 || p == 2 || p == INFINITY))
        tt_fatal(__FILE__, __LINE__, __func__, "p = %g is not supported (x has shape %s); use "
                 "p = 1, 2 or INFINITY, or compose pow_scalar, sum and pow_scalar", p,
                 tt__shape(x));
    check_dims(x, ndims, dims, __func__);
    tt_scope_begin();
    tt_tensor *y;
    if (p == 1) y = tt_sum(tt_abs(x), ndims, dims, keepdim);
    else if (p == 2) y = sqrt_zero_grad0(tt_sum(tt_square(x), ndims, dims, keepdim));
    else y = tt_max(tt_abs(x), ndims, dims, keepdim);
    tt_keep(y);
    tt_scope_end();
    return y;
}

// ---- differentiable backwards (create_graph) ----

// dx = g where lo <= x <= hi (both bounds included), 0 elsewhere and at NaN, with ops.
static void clamp2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    tt_tensor *x = n->inputs[0];
    const clamp_ctx *c = n->ctx;
    tt_tensor *inside = tt_logical_and(tt_ge_scalar(x, c->lo), tt_le_scalar(x, c->hi));
    tt__accum_grad(x, tt_where(inside, n->grad, tt_scalar(n->dtype, 0)));
}

const tt__grad2_row tt__grad2_math[] = {
    {TT_OP_CLAMP, clamp2},
    {TT_OP_COUNT, NULL},
};

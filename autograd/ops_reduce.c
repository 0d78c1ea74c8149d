// The reduction ops, forward and backward side by side: sum, mean, max (amax), var over any
// set of dims with keepdim, sum_all, mean_all, argmax (not differentiable), min, argmin,
// max_dim, min_dim, and all / any (bool results, any dtype). The kernels are in
// tensor/kernels/reduce.c; here are dims, shapes, dtypes, error messages and the tape. Integer
// and bool tensors are reduced exactly in int64 rows (rows_of), as PyTorch's: sum, max, min,
// argmax, argmin, max_dim, min_dim.
#include "autograd_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../tensor/kernels/reduce.h"

// ---- dims ----

// What every reduction's backward needs besides its input.
typedef struct reduce_ctx {
    bool reduced[TT_MAX_DIMS];  // per dim of the input
    int correction;             // var only
    bool all_dims;              // var only: reduced over all dims (ndims 0, or a 0-d input)
} reduce_ctx;

// A resolved reduction: which dims go, the output's shape, the kernels' plan.
typedef struct reduce_dims {
    bool reduced[TT_MAX_DIMS];
    int out_ndim;
    int64_t out_shape[TT_MAX_DIMS];
    tt_k_reduce plan;
} reduce_dims;

// "(0, -1)" for messages.
static const char *dims_str(int ndims, const int *dims, char *buf, size_t n) {
    size_t len = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < ndims && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, i ? ", %d" : "%d", dims[i]);
    if (len < n) snprintf(buf + len, n - len, ")");
    return buf;
}

// Validates (ndims, dims) against x (negative dims count from the end, ndims == 0 means all
// dims) and fills rd. `func` names the public op in messages. A 0-d tensor accepts dim 0 or
// -1, reducing like a one-element 1-d tensor (as PyTorch). Any dtype (resolve_dims: floats).
static void resolve_dims_any(reduce_dims *rd, const tt_tensor *x, int ndims, const int *dims,
                             bool keepdim, const char *func) {
    if (!x) tt_fatal(__FILE__, __LINE__, func, "x is NULL");
    if (ndims < 0)
        tt_fatal(__FILE__, __LINE__, func, "ndims is %d; pass ndims > 0 with that many dims, or "
                 "ndims 0 to reduce all dims", ndims);
    if (ndims > 0 && !dims)
        tt_fatal(__FILE__, __LINE__, func, "ndims is %d but dims is NULL; pass the dims (e.g. "
                 "TT_DIMS(0, 2)), or ndims 0 to reduce all dims", ndims);
    char buf[128];
    bool seen_scalar_dim = false;
    for (int d = 0; d < TT_MAX_DIMS; d++) rd->reduced[d] = ndims == 0 && d < x->ndim;
    for (int i = 0; i < ndims; i++) {
        int d = dims[i];
        int lo = x->ndim ? -x->ndim : -1, hi = x->ndim ? x->ndim - 1 : 0;
        if (d < lo || d > hi)
            tt_fatal(__FILE__, __LINE__, func, "dim %d is out of range for x of shape %s "
                     "(valid dims: %d .. %d)", d, tt__shape(x), lo, hi);
        int nd = d < 0 ? d + (x->ndim ? x->ndim : 1) : d;
        bool *slot = x->ndim ? &rd->reduced[nd] : &seen_scalar_dim;
        if (*slot)
            tt_fatal(__FILE__, __LINE__, func, "dims %s name dim %d twice (x has shape %s); "
                     "list each dim once", dims_str(ndims, dims, buf, sizeof buf), nd,
                     tt__shape(x));
        *slot = true;
    }
    rd->out_ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!rd->reduced[d]) rd->out_shape[rd->out_ndim++] = x->shape[d];
        else if (keepdim) rd->out_shape[rd->out_ndim++] = 1;
    }
    tt_k_reduce_plan(&rd->plan, x->ndim, x->shape, x->stride, rd->reduced);
}

static void resolve_dims(reduce_dims *rd, const tt_tensor *x, int ndims, const int *dims,
                         bool keepdim, const char *func) {
    if (!x) tt_fatal(__FILE__, __LINE__, func, "x is NULL");
    tt__check_float(x, func);
    resolve_dims_any(rd, x, ndims, dims, keepdim, func);
}

static bool is_int(const tt_tensor *x) { return x && !tt_dtype_is_float(x->dtype); }

// resolve_dims for the ops that also take integer and bool x (max, min and their args).
static void resolve_dims_num(reduce_dims *rd, const tt_tensor *x, int ndims, const int *dims,
                             bool keepdim, const char *func) {
    if (is_int(x)) resolve_dims_any(rd, x, ndims, dims, keepdim, func);
    else resolve_dims(rd, x, ndims, dims, keepdim, func);
}

// argmax / argmin of a bool tensor abort, as in PyTorch ("argmax_cpu" not implemented).
static void check_not_bool(const tt_tensor *x, const char *func) {
    if (x && x->dtype == TT_BOOL)
        tt_fatal(__FILE__, __LINE__, func, "x %s is bool, which has no %s (PyTorch rejects it "
                 "too); convert first (tt_to_dtype(x, TT_I64)), or take the indices of "
                 "tt_max_dim / tt_min_dim", tt__shape(x), func + 3);
}

// The plan of a recorded reduction, rebuilt from its (retained) input.
static void node_plan(tt_k_reduce *plan, const tt_node *n) {
    const tt_tensor *x = n->inputs[0];
    const reduce_ctx *c = n->ctx;
    tt_k_reduce_plan(plan, x->ndim, x->shape, x->stride, c->reduced);
}

static reduce_ctx *record(tt_tensor *out, tt_op op, tt_tensor *x, const reduce_dims *rd) {
    reduce_ctx *c = tt__record(out, op, 1, &x, sizeof *c);
    if (c) memcpy(c->reduced, rd->reduced, sizeof c->reduced);
    return c;
}

// The (M,) double buffer a reduction into out accumulates in: out's own data when out is f64,
// else a scratch buffer that acc_finish converts into out and frees.
static double *acc_for(tt_tensor *out) {
    if (out->dtype == TT_F64) return tt_data(out);
    int64_t m = tt_numel(out);
    return TT_MALLOC((size_t)(m > 0 ? m : 1) * sizeof(double));
}

static void acc_finish(tt_tensor *out, double *acc) {
    if (out->dtype == TT_F64) return;
    int64_t m = tt_numel(out);
    float *o = tt_data(out);
    for (int64_t i = 0; i < m; i++) o[i] = (float)acc[i];
    tt_free(acc);
}

// acc (M,) = sum_j x[m, j], or with `mean` sum_j x[m, j] / N (NaN when N == 0, as a mean of
// nothing is in PyTorch).
static void sums(double *acc, const tt_tensor *x, const tt_k_reduce *p, bool mean) {
    tt_k_reduce_sum(acc, tt_data(x), x->dtype, NULL, p);
    if (mean) {
        for (int64_t m = 0; m < p->nout; m++)
            acc[m] = p->nred > 0 ? acc[m] / (double)p->nred : NAN;
    }
}

// ---- integer and bool rows ----

// x copied as (kept dims..., reduced dims...) in dtype dt, contiguous, so each of the M outputs
// reduces N consecutive values: (M, N) with M = numel(rd's output), N = rd->plan.nred. An
// integer or bool x in TT_I64 is exact; in TT_BOOL, nonzero (NaN too) becomes 1. No tape.
// Unscoped: release it.
static tt_tensor *rows_of(const tt_tensor *x, const reduce_dims *rd, tt_dtype dt) {
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < x->ndim; d++)
            if (rd->reduced[d] == (pass == 1)) {
                shape[k] = x->shape[d];
                stride[k++] = x->stride[d];
            }
    tt_tensor *view = tt__new_view(x, x->ndim, shape, stride, x->offset);
    tt_tensor *rows = tt__new(dt, x->ndim, shape);  // (M, N)
    tt_copy_(rows, view);
    tt_release(view);
    return rows;
}

// The extreme of each row of an integer or bool x, exact: *values[m] (x's dtype) = the max (or
// with is_min the min) of x[m, :] and *args[m] (TT_I64) = the first j holding it; both in rd's
// output shape, new references in the caller's scope; either pointer may be NULL. Needs N >= 1.
static void int_extreme(tt_tensor *x, const reduce_dims *rd, bool is_min, tt_tensor **values,
                        tt_tensor **args) {
    tt_tensor *c = rows_of(x, rd, TT_I64);  // (M, N)
    tt_tensor *v = tt__new(x->dtype, rd->out_ndim, rd->out_shape);  // (M,)
    tt_tensor *a = tt__new(TT_I64, rd->out_ndim, rd->out_shape);    // (M,)
    int64_t M = rd->plan.nout, N = rd->plan.nred, *ai = tt_data(a);
    const int64_t *src = tt_data(c);
    for (int64_t m = 0; m < M; m++) {
        const int64_t *row = src + m * N;
        int64_t best = 0;
        for (int64_t j = 1; j < N; j++)
            if (is_min ? row[j] < row[best] : row[j] > row[best]) best = j;
        ai[m] = best;
        if (x->dtype == TT_I64) ((int64_t *)tt_data(v))[m] = row[best];
        else tt__store(tt_data(v), x->dtype, m, (double)row[best]);  // i32, bool: exact
    }
    tt_release(c);
    if (values) *values = tt__autorelease(v);
    else tt_release(v);
    if (args) *args = tt__autorelease(a);
    else tt_release(a);
}

// ---- sum ----
// y[m] = sum_j x[m, j];  dx = g[m], a stride-0 view of g (no copy).

// An integer or bool x: y (TT_I64) = the exact sum, wrapping around on overflow as PyTorch's
// int64 does. Nothing to record: integer tensors have no gradient.
static tt_tensor *int_sum(tt_tensor *x, const reduce_dims *rd) {
    tt_tensor *out = tt__new(TT_I64, rd->out_ndim, rd->out_shape);  // (M,)
    tt_tensor *c = rows_of(x, rd, TT_I64);                          // (M, N)
    int64_t M = rd->plan.nout, N = rd->plan.nred;
    const int64_t *src = tt_data(c);
    int64_t *y = tt_data(out);
    for (int64_t m = 0; m < M; m++) {
        uint64_t acc = 0;  // unsigned: wraps instead of overflowing
        for (int64_t j = 0; j < N; j++) acc += (uint64_t)src[m * N + j];
        y[m] = (int64_t)acc;
    }
    tt_release(c);
    return tt__autorelease(out);
}

tt_tensor *tt_sum(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    reduce_dims rd;
    if (x && !tt_dtype_is_float(x->dtype)) {
        resolve_dims_any(&rd, x, ndims, dims, keepdim, __func__);
        return int_sum(x, &rd);
    }
    resolve_dims(&rd, x, ndims, dims, keepdim, __func__);
    tt_tensor *out = tt__new(x->dtype, rd.out_ndim, rd.out_shape);
    double *acc = acc_for(out);
    sums(acc, x, &rd.plan, false);
    acc_finish(out, acc);
    record(out, TT_OP_SUM, x, &rd);
    return tt__autorelease(out);
}

void tt__backward_sum(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    tt_k_reduce plan;
    node_plan(&plan, n);
    tt_tensor *g = tt__contiguous_ref(n->grad);  // (M,)
    // g keepdim-shaped and expanded to X: stride 0 along the reduced dims.
    tt_tensor *dx = tt__new_view(g, x->ndim, x->shape, plan.ostride, g->offset);
    tt__accum_grad_owned(x, dx);
    tt_release(g);
}

tt_tensor *tt_sum_all(tt_tensor *x) { return tt_sum(x, 0, NULL, false); }

// ---- mean ----
// y[m] = sum_j x[m, j] / N (NaN when N == 0);  dx = g[m] / N.

tt_tensor *tt_mean(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    TT_CHECK(!x || tt_dtype_is_float(x->dtype), "x %s is %s: the mean of an integer or bool "
             "tensor has no dtype to infer (as in PyTorch); convert first (tt_to_dtype(x, "
             "TT_F32)), or take tt_sum for a count", tt__shape(x), tt_dtype_name(x->dtype));
    reduce_dims rd;
    resolve_dims(&rd, x, ndims, dims, keepdim, __func__);
    tt_tensor *out = tt__new(x->dtype, rd.out_ndim, rd.out_shape);
    double *acc = acc_for(out);
    sums(acc, x, &rd.plan, true);
    acc_finish(out, acc);
    record(out, TT_OP_MEAN, x, &rd);
    return tt__autorelease(out);
}

void tt__backward_mean(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    tt_k_reduce plan;
    node_plan(&plan, n);
    tt_tensor *g = tt__contiguous_ref(n->grad);                           // (M,)
    tt_tensor *dx = tt__new(x->dtype, x->ndim, x->shape);  // X
    double scale = plan.nred > 0 ? 1.0 / (double)plan.nred : 0.0;
    tt_k_reduce_spread(tt_data(dx), tt_data(g), scale, x->dtype, &plan);
    tt__accum_grad_owned(x, dx);
    tt_release(g);
}

tt_tensor *tt_mean_all(tt_tensor *x) { return tt_mean(x, 0, NULL, false); }

// ---- max ----
// y[m] = max_j x[m, j] (NaN propagates);  dx = g[m] / k[m] where x == y[m], k[m] the number
// of ties, else 0 (torch.amax's backward).

tt_tensor *tt_max(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    reduce_dims rd;
    resolve_dims_num(&rd, x, ndims, dims, keepdim, __func__);
    if (rd.plan.nred == 0) {
        char buf[128];
        tt_fatal(__FILE__, __LINE__, __func__, "the max over zero elements is undefined: x has "
                 "shape %s and dims %s include a dim of size 0; reduce only non-empty dims",
                 tt__shape(x), ndims ? dims_str(ndims, dims, buf, sizeof buf) : "(all)");
    }
    if (is_int(x)) {
        tt_tensor *y;
        int_extreme(x, &rd, false, &y, NULL);
        return y;
    }
    tt_tensor *out = tt__new(x->dtype, rd.out_ndim, rd.out_shape);
    tt_k_reduce_max(tt_data(out), tt_data(x), x->dtype, &rd.plan);
    if (record(out, TT_OP_MAX, x, &rd)) {
        tt_tensor *y = tt__alias(out);  // the maxima, without the output's history
        tt__save(out->node, 0, y);
        tt_release(y);
    }
    return tt__autorelease(out);
}

void tt__backward_max(tt_node *n) {
    tt_tensor *x = n->inputs[0], *y = n->saved[0];
    tt_k_reduce plan;
    node_plan(&plan, n);
    tt_tensor *g = tt__contiguous_ref(n->grad);                           // (M,)
    tt_tensor *dx = tt__new(x->dtype, x->ndim, x->shape);  // X
    tt_k_reduce_max_backward(tt_data(dx), tt_data(x), tt_data(y), tt_data(g), x->dtype, &plan);
    tt__accum_grad_owned(x, dx);
    tt_release(g);
}

// ---- var ----
// Two passes: mean[m] = sum_j x / N, then y[m] = sum_j (x - mean[m])^2 / max(0, N - c).
// A zero divisor gives inf, or NaN when the squares sum to 0 (as PyTorch).
// dx = 2 (x - mean[m]) / (N - c) * g[m], with the signed divisor even when N - c <= 0 (as
// PyTorch 1.13: finite when N < c, inf or NaN when N == c). Over all dims with N == c, where
// 1.13 raises, dx = g (x == mean ? NaN : inf), as later PyTorch releases.

static double var_divisor(int64_t n, int correction) {
    double d = (double)n - (double)correction;
    return d > 0 ? d : 0;
}

tt_tensor *tt_var(tt_tensor *x, int ndims, const int *dims, int correction, bool keepdim) {
    reduce_dims rd;
    resolve_dims(&rd, x, ndims, dims, keepdim, __func__);
    const tt_k_reduce *p = &rd.plan;
    tt_tensor *out = tt__new(x->dtype, rd.out_ndim, rd.out_shape);
    tt_tensor *mean = tt__new(TT_F64, 1, (int64_t[]){p->nout});  // (M,), saved for backward
    double *mu = tt_data(mean);
    sums(mu, x, p, true);
    double *s = acc_for(out);
    tt_k_reduce_sum(s, tt_data(x), x->dtype, mu, p);  // s[m] = sum_j (x - mu[m])^2
    double div = var_divisor(p->nred, correction);
    for (int64_t m = 0; m < p->nout; m++)
        s[m] = div > 0 ? s[m] / div : s[m] > 0 ? INFINITY : NAN;
    acc_finish(out, s);
    reduce_ctx *c = record(out, TT_OP_VAR, x, &rd);
    if (c) {
        c->correction = correction;
        c->all_dims = ndims == 0 || x->ndim == 0;
        tt__save(out->node, 0, mean);
    }
    tt_release(mean);
    return tt__autorelease(out);
}

void tt__backward_var(tt_node *n) {
    tt_tensor *x = n->inputs[0], *mean = n->saved[0];
    const reduce_ctx *c = n->ctx;
    tt_k_reduce plan;
    node_plan(&plan, n);
    double dof = (double)plan.nred - (double)c->correction;  // may be <= 0
    tt_tensor *g = tt__contiguous_ref(n->grad);              // (M,)
    tt_tensor *dx = tt__new(x->dtype, x->ndim, x->shape);    // X
    if (dof == 0 && c->all_dims)
        tt_k_reduce_var_backward_nodof(tt_data(dx), tt_data(x), tt_data(mean), tt_data(g),
                                       x->dtype, &plan);
    else
        tt_k_reduce_var_backward(tt_data(dx), tt_data(x), tt_data(mean), tt_data(g),
                                 2.0 / dof, x->dtype, &plan);
    tt__accum_grad_owned(x, dx);
    tt_release(g);
}

// ---- argmax, argmin ----
// y[m] = the first j with x[m, j] maximal (minimal) along one dim, as TT_I64; NaN counts as
// the maximum (and the minimum). Records nothing: the output never requires grad. argmin of a
// float x is argmax(-x) (negation keeps NaN and ties). Integer x: exact (int_extreme); bool x
// aborts, as in PyTorch, but max_dim and min_dim take it (arg_extreme).

static tt_tensor *arg_extreme(tt_tensor *x, int dim, bool keepdim, bool is_min,
                              const char *func) {
    reduce_dims rd;
    resolve_dims_num(&rd, x, 1, &dim, keepdim, func);
    if (rd.plan.nred == 0)
        tt_fatal(__FILE__, __LINE__, func, "the %s over zero elements is undefined: dim %d of "
                 "x %s has size 0; pick a non-empty dim", func + 3, dim, tt__shape(x));
    tt_tensor *out;
    if (is_int(x)) {
        int_extreme(x, &rd, is_min, NULL, &out);
        return out;
    }
    out = tt__new(TT_I64, rd.out_ndim, rd.out_shape);
    if (!is_min) {
        tt_k_reduce_argmax(tt_data(out), tt_data(x), x->dtype, &rd.plan);
        return tt__autorelease(out);
    }
    tt_tensor *nx = tt__new(x->dtype, x->ndim, x->shape);  // -x, without history
    tt_k_reduce plan;
    tt_copy_(nx, x);
    int64_t n = tt_numel(nx);
    for (int64_t i = 0; i < n; i++) tt__store(tt_data(nx), nx->dtype, i,
                                              -tt__load(tt_data(nx), nx->dtype, i));
    tt_k_reduce_plan(&plan, nx->ndim, nx->shape, nx->stride, rd.reduced);
    tt_k_reduce_argmax(tt_data(out), tt_data(nx), nx->dtype, &plan);
    tt_release(nx);
    return tt__autorelease(out);
}

tt_tensor *tt_argmax(tt_tensor *x, int dim, bool keepdim) {
    check_not_bool(x, __func__);
    return arg_extreme(x, dim, keepdim, false, __func__);
}

tt_tensor *tt_argmin(tt_tensor *x, int dim, bool keepdim) {
    check_not_bool(x, __func__);
    return arg_extreme(x, dim, keepdim, true, __func__);
}

// ---- min, max_dim, min_dim (composed) ----
// min(x) = -max(-x): the same NaN and tie rules as max (negation keeps NaN and ties), and the
// gradient comes through max. max_dim and min_dim gather x at the argmax / argmin (keepdim),
// so the gradient goes to that one element, as torch.max(x, dim). Integer and bool x: exact,
// in x's dtype (int_extreme), no gradient.

tt_tensor *tt_min(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    reduce_dims rd;
    resolve_dims_num(&rd, x, ndims, dims, keepdim, __func__);
    if (rd.plan.nred == 0) {
        char buf[128];
        tt_fatal(__FILE__, __LINE__, __func__, "the min over zero elements is undefined: x has "
                 "shape %s and dims %s include a dim of size 0; reduce only non-empty dims",
                 tt__shape(x), ndims ? dims_str(ndims, dims, buf, sizeof buf) : "(all)");
    }
    tt_tensor *y;
    if (is_int(x)) {
        int_extreme(x, &rd, true, &y, NULL);
        return y;
    }
    tt_scope_begin();
    y = tt_keep(tt_neg(tt_max(tt_neg(x), ndims, dims, keepdim)));
    tt_scope_end();
    return y;
}

static void extreme_dim(tt_tensor *x, int dim, bool keepdim, bool is_min, tt_tensor **values,
                        tt_tensor **indices, const char *func) {
    reduce_dims rd;
    resolve_dims_num(&rd, x, 1, &dim, keepdim, func);
    if (rd.plan.nred == 0)
        tt_fatal(__FILE__, __LINE__, func, "dim %d of x %s has size 0: there is no %s over "
                 "zero elements; pick a non-empty dim", dim, tt__shape(x),
                 is_min ? "min" : "max");
    if (is_int(x)) {
        int_extreme(x, &rd, is_min, values, indices);
        return;
    }
    tt_scope_begin();
    tt_tensor *idx = arg_extreme(x, dim, true, is_min, func);
    tt_tensor *v = tt_gather(x, dim, idx);
    if (!keepdim && x->ndim) {
        idx = tt_squeeze(idx, dim);
        v = tt_squeeze(v, dim);
    }
    if (values) *values = tt_keep(v);
    if (indices) *indices = tt_keep(idx);
    tt_scope_end();
}

void tt_max_dim(tt_tensor *x, int dim, bool keepdim, tt_tensor **values, tt_tensor **indices) {
    extreme_dim(x, dim, keepdim, false, values, indices, __func__);
}

void tt_min_dim(tt_tensor *x, int dim, bool keepdim, tt_tensor **values, tt_tensor **indices) {
    extreme_dim(x, dim, keepdim, true, values, indices, __func__);
}

// ---- all, any ----
// y[m] = every (all) / some (any) x[m, j] is nonzero, as TT_BOOL, for x of any dtype (NaN is
// nonzero: true); over zero elements all is true and any false (torch.all / torch.any). x is
// read through rows_of in TT_BOOL. No gradient.

static tt_tensor *all_any(tt_tensor *x, int ndims, const int *dims, bool keepdim, bool all,
                          const char *func) {
    reduce_dims rd;
    resolve_dims_any(&rd, x, ndims, dims, keepdim, func);
    tt_tensor *out = tt__new(TT_BOOL, rd.out_ndim, rd.out_shape);  // (M,)
    tt_tensor *c = rows_of(x, &rd, TT_BOOL);                       // (M, N)
    int64_t M = rd.plan.nout, N = rd.plan.nred;
    const uint8_t *src = tt_data(c);
    uint8_t *y = tt_data(out);
    for (int64_t m = 0; m < M; m++) {
        bool r = all;
        for (int64_t j = 0; j < N && r == all; j++) r = src[m * N + j] != 0;
        y[m] = r;
    }
    tt_release(c);
    return tt__autorelease(out);
}

tt_tensor *tt_all(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    return all_any(x, ndims, dims, keepdim, true, __func__);
}

tt_tensor *tt_any(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    return all_any(x, ndims, dims, keepdim, false, __func__);
}

tt_tensor *tt_all_all(tt_tensor *x) { return all_any(x, 0, NULL, false, true, __func__); }
tt_tensor *tt_any_all(tt_tensor *x) { return all_any(x, 0, NULL, false, false, __func__); }

// ---- differentiable backwards (create_graph) ----

// t (shaped like the output, keepdim or not) reshaped to x's shape with the reduced dims of
// size 1 (no expand).
static tt_tensor *keep_shape(const tt_node *n, tt_tensor *t) {
    const tt_tensor *x = n->inputs[0];
    const reduce_ctx *c = n->ctx;
    int64_t keep[TT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) keep[d] = c->reduced[d] ? 1 : x->shape[d];
    return tt_reshape(t, x->ndim, keep);
}

// g (shaped like the output, keepdim or not) as x's shape with the reduced dims of size 1,
// expanded to x's shape.
static tt_tensor *expand_back(const tt_node *n, tt_tensor *g) {
    const tt_tensor *x = n->inputs[0];
    return tt_expand(keep_shape(n, g), x->ndim, x->shape);
}

// The reduced dims of n's input into dims; returns their count (0 for a 0-d input, where
// ndims 0 means the same: all of its no dims).
static int reduced_dims(const tt_node *n, int *dims) {
    const reduce_ctx *c = n->ctx;
    int k = 0;
    for (int d = 0; d < n->inputs[0]->ndim; d++)
        if (c->reduced[d]) dims[k++] = d;
    return k;
}

// dx = g expanded
static void sum2(tt_node *n) {
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(n->inputs[0], expand_back(n, n->grad));
}

// dx = g expanded / N (0 when N == 0, as the first-order backward)
static void mean2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    tt_k_reduce plan;
    node_plan(&plan, n);
    double scale = plan.nred > 0 ? 1.0 / (double)plan.nred : 0.0;
    tt__accum_grad(n->inputs[0], tt_mul_scalar(expand_back(n, n->grad), scale));
}

// dx = g expanded * w, w = (x == max) / count(x == max) over the reduced dims: the maxima
// share g evenly (NaN maxima: 0 / 0, NaN, as the first-order backward). w is a constant.
static void max2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    tt_tensor *x = n->inputs[0];
    int dims[TT_MAX_DIMS], k = reduced_dims(n, dims);
    tt_tensor *hit = tt_to_dtype(tt_eq(x, keep_shape(n, n->saved[0])), x->dtype);  // X, 0 / 1
    tt_tensor *w = tt_div(hit, tt_sum(hit, k, dims, true));
    tt__accum_grad(x, tt_mul(expand_back(n, n->grad), w));
}

// dx = 2 (x - mean(x)) / (N - c) * g expanded, the mean with its history (the second
// derivative is 2 (delta_jk - 1/N) / (N - c)); N - c may be <= 0 (the signed divisor, as the
// first-order backward). Over all dims with N == c: dx = g (x == mean ? NaN : inf), constant.
static void var2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    tt_tensor *x = n->inputs[0];
    const reduce_ctx *c = n->ctx;
    tt_k_reduce plan;
    node_plan(&plan, n);
    double dof = (double)plan.nred - (double)c->correction;
    tt_tensor *g = expand_back(n, n->grad), *dx;
    if (dof == 0 && c->all_dims) {
        tt_tensor *mean = tt_to_dtype(keep_shape(n, n->saved[0]), x->dtype);  // f64 (M,) saved
        tt_tensor *at = tt_eq(x, mean);
        tt_tensor *w = tt_where(at, tt_full_like(x, NAN), tt_full_like(x, INFINITY));
        dx = tt_mul(g, w);
    } else {
        int dims[TT_MAX_DIMS], k = reduced_dims(n, dims);
        tt_tensor *dev = tt_sub(x, tt_mean(x, k, dims, true));
        dx = tt_mul(g, tt_mul_scalar(dev, 2.0 / dof));
    }
    tt__accum_grad(x, dx);
}

const tt__grad2_row tt__grad2_reduce[] = {
    {TT_OP_SUM, sum2}, {TT_OP_MEAN, mean2}, {TT_OP_MAX, max2},
    {TT_OP_VAR, var2}, {TT_OP_COUNT, NULL},
};

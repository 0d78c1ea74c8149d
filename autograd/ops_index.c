// Indexing, sorting and scan ops, forward and backward side by side: gather and scatter_add
// (the two recorded primitives), scatter, index_select and index_add (compositions of them),
// sort, argsort and topk (sort indices, then gather), cumsum, cumprod and prod. The kernels are
// in tensor/kernels/index.c. No in-place variants; no negative indices (as torch.gather).
// Integer and bool tensors, exact and without gradient, as PyTorch's: gather, scatter,
// scatter_add, index_select and index_add in their own dtype (the kernels' integer and bool
// instantiations); sort, argsort, topk, cumsum, cumprod and prod in int64 (the int_ functions).
#include "autograd_internal.h"

#include <stdlib.h>
#include <string.h>

#include "../tensor/kernels/index.h"

// ---- checks and layouts ----

typedef struct index_ctx {
    int dim;
} index_ctx;

// A tensor's dims as the kernels see them: a 0-d tensor is one element of a 1-d line.
typedef struct lay {
    int ndim;
    int64_t shape[TT_MAX_DIMS];
    int64_t stride[TT_MAX_DIMS];
} lay;

static lay lay_of(const tt_tensor *t) {
    lay l = {t->ndim ? t->ndim : 1, {1}, {0}};
    for (int d = 0; d < t->ndim; d++) {
        l.shape[d] = t->shape[d];
        l.stride[d] = t->stride[d];
    }
    return l;
}

static lay lay_contiguous(int ndim, const int64_t *shape) {
    lay l = {ndim ? ndim : 1, {1}, {0}};
    for (int d = 0; d < ndim; d++) l.shape[d] = shape[d];
    if (ndim) tt__contiguous_strides(ndim, shape, l.stride);
    return l;
}

// dim of x resolved (a 0-d tensor takes 0 or -1, as PyTorch).
static int norm_dim(const tt_tensor *x, int dim, const char *func) {
    return tt__norm_dim_at(dim, x->ndim ? x->ndim : 1, __FILE__, __LINE__, func);
}

static void check_x(const tt_tensor *x, const char *what, const char *func) {
    TT_CHECK_IN(func, x, "%s is NULL", what);
    tt__check_float_at(x, __FILE__, __LINE__, func);
}

static bool is_int(const tt_tensor *x) { return x && !tt_dtype_is_float(x->dtype); }

// The element of index (TT_I32 / TT_I64, any layout) at row-major position i, exactly.
static int64_t index_at(const tt_tensor *index, int64_t i) {
    int64_t off = index->offset;
    for (int d = index->ndim - 1; d >= 0; d--) {
        off += (i % index->shape[d]) * index->stride[d];
        i /= index->shape[d];
    }
    const void *base = tt__base(index);
    return index->dtype == TT_I32 ? ((const int32_t *)base)[off] : ((const int64_t *)base)[off];
}

static void check_index_dtype(const tt_tensor *index, const char *func) {
    TT_CHECK_IN(func, index, "index is NULL");
    TT_CHECK_IN(func, index->dtype == TT_I32 || index->dtype == TT_I64,
                "index has dtype %s; pass a TT_I32 or TT_I64 tensor (tt_to_dtype(index, "
                "TT_I64))", tt_dtype_name(index->dtype));
}

// Every index value in [0, size); names the first bad one and its position.
static void check_index_range(const tt_tensor *index, int64_t size, int dim,
                              const tt_tensor *x, const char *func) {
    int64_t n = tt_numel(index);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = index_at(index, i);
        TT_CHECK_IN(func, v >= 0 && v < size,
                    "index %lld at position %lld (row-major) of index %s is out of range for "
                    "dim %d of size %lld of x %s; indices must be in [0, %lld)", (long long)v,
                    (long long)i, tt__shape(index), dim, (long long)size, tt__shape(x),
                    (long long)size);
    }
}

// index has x's ndim and fits: index.size(d) <= x.size(d) for d != dim (and <= src.size(d)
// for every d when src is given).
static void check_index_shape(const tt_tensor *x, int dim, const tt_tensor *index,
                              const tt_tensor *src, const char *func) {
    TT_CHECK_IN(func, index->ndim == x->ndim,
                "index %s has %d dims but x %s has %d; index needs x's number of dims (use "
                "tt_index_select for a 1-d list of indices)", tt__shape(index), index->ndim,
                tt__shape(x), x->ndim);
    if (src)
        TT_CHECK_IN(func, src->ndim == x->ndim, "src %s has %d dims but x %s has %d; they "
                    "need the same number", tt__shape(src), src->ndim, tt__shape(x), x->ndim);
    for (int d = 0; d < x->ndim; d++) {
        TT_CHECK_IN(func, d == dim || index->shape[d] <= x->shape[d],
                    "index %s is larger than x %s at dim %d (only dim %d may differ)",
                    tt__shape(index), tt__shape(x), d, dim);
        TT_CHECK_IN(func, !src || index->shape[d] <= src->shape[d],
                    "index %s is larger than src %s at dim %d; index.size(d) <= src.size(d)",
                    tt__shape(index), tt__shape(src), d);
    }
}

// ---- gather ----
// out[p] = x[p; dim <- index[p]];  dx = scatter_add(0, g) over the same positions.

// range: check the index values (false when the caller already checked them).
static tt_tensor *gather_impl(tt_tensor *x, int dim, tt_tensor *index, bool range,
                              const char *func) {
    TT_CHECK_IN(func, x, "x is NULL");
    check_index_dtype(index, func);
    int d = norm_dim(x, dim, func);
    check_index_shape(x, d, index, NULL, func);
    if (range) check_index_range(index, x->ndim ? x->shape[d] : 1, dim, x, func);
    tt_tensor *out = tt__new(x->dtype, index->ndim, index->shape);  // I
    lay lx = lay_of(x), li = lay_of(index), lo = lay_contiguous(index->ndim, index->shape);
    tt_k_gather(tt_data(out), lo.stride, tt_data(x), lx.stride, tt_data(index), li.stride,
                index->dtype, x->dtype, li.ndim, li.shape, d);
    index_ctx *c = tt__record(out, TT_OP_GATHER, 1, &x, sizeof *c);
    if (c) {
        c->dim = d;
        tt__save(out->node, 0, index);
    }
    return tt__autorelease(out);
}

tt_tensor *tt_gather(tt_tensor *x, int dim, tt_tensor *index) {
    return gather_impl(x, dim, index, true, __func__);
}

void tt__backward_gather(tt_node *n) {
    tt_tensor *x = n->inputs[0], *index = n->saved[0], *g = n->grad;
    const index_ctx *c = n->ctx;
    tt_tensor *dx = tt__grad_buffer(x);  // X, zeroed
    if (!dx) return;
    lay ld = lay_contiguous(x->ndim, x->shape), lg = lay_of(g), li = lay_of(index);
    tt_k_scatter_add(tt_data(dx), ld.stride, tt_data(g), lg.stride, tt_data(index), li.stride,
                     index->dtype, x->dtype, li.ndim, li.shape, c->dim);
    tt__accum_grad_owned(x, dx);
}

// ---- scatter_add ----
// out = x; out[p; dim <- index[p]] += src[p];  dx = g, dsrc = gather(g) (zero outside I).

// x and src of one dtype (any: PyTorch does not promote here).
static void check_x_src(const tt_tensor *x, const tt_tensor *src, const char *func) {
    TT_CHECK_IN(func, x && src, "x or src is NULL");
    TT_CHECK_IN(func, x->dtype == src->dtype, "x %s is %s but src %s is %s; they need one dtype "
                "(as in PyTorch): convert src with tt_to_dtype(src, x->dtype)", tt__shape(x),
                tt_dtype_name(x->dtype), tt__shape(src), tt_dtype_name(src->dtype));
}

// The checks of scatter and scatter_add: x and src of one dtype, an integer index that fits
// both, values in range when `range`. Returns dim resolved.
static int check_scatter(tt_tensor *x, int dim, tt_tensor *index, tt_tensor *src, bool range,
                         const char *func) {
    check_x_src(x, src, func);
    check_index_dtype(index, func);
    int d = norm_dim(x, dim, func);
    check_index_shape(x, d, index, src, func);
    if (range) check_index_range(index, x->ndim ? x->shape[d] : 1, dim, x, func);
    return d;
}

static tt_tensor *scatter_add_impl(tt_tensor *x, int dim, tt_tensor *index, tt_tensor *src,
                                   bool range, const char *func) {
    int d = check_scatter(x, dim, index, src, range, func);
    tt_tensor *out = tt__contiguous_copy(x);  // X
    lay lo = lay_of(out), ls = lay_of(src), li = lay_of(index);
    tt_k_scatter_add(tt_data(out), lo.stride, tt_data(src), ls.stride, tt_data(index),
                     li.stride, index->dtype, x->dtype, li.ndim, li.shape, d);
    tt_tensor *inputs[2] = {x, src};
    index_ctx *c = tt__record(out, TT_OP_SCATTER_ADD, 2, inputs, sizeof *c);
    if (c) {
        c->dim = d;
        tt__save(out->node, 0, index);
    }
    return tt__autorelease(out);
}

tt_tensor *tt_scatter_add(tt_tensor *x, int dim, tt_tensor *index, tt_tensor *src) {
    return scatter_add_impl(x, dim, index, src, true, __func__);
}

void tt__backward_scatter_add(tt_node *n) {
    tt_tensor *x = n->inputs[0], *src = n->inputs[1], *index = n->saved[0], *g = n->grad;
    const index_ctx *c = n->ctx;
    tt__accum_grad(x, g);
    tt_tensor *ds = tt__grad_buffer(src);  // src's shape, zeroed
    if (!ds) return;
    lay ld = lay_contiguous(src->ndim, src->shape), lg = lay_of(g), li = lay_of(index);
    tt_k_gather(tt_data(ds), ld.stride, tt_data(g), lg.stride, tt_data(index), li.stride,
                index->dtype, src->dtype, li.ndim, li.shape, c->dim);
    tt__accum_grad_owned(src, ds);
}

// ---- scatter (composed) ----
// out = x keep + scatter_add(0, index, src w): keep is 0 where some p writes, w is 1 at the
// last p writing each target (row-major), 0 elsewhere. Both are constants (no gradient).

tt_tensor *tt_scatter(tt_tensor *x, int dim, tt_tensor *index, tt_tensor *src) {
    int d = check_scatter(x, dim, index, src, true, __func__);
    if (is_int(x)) {  // no gradient: the copy kernel, the last write winning
        tt_tensor *out = tt__contiguous_copy(x);  // X
        lay lo = lay_of(out), ls = lay_of(src), li = lay_of(index);
        tt_k_scatter(tt_data(out), lo.stride, tt_data(src), ls.stride, tt_data(index),
                     li.stride, index->dtype, x->dtype, li.ndim, li.shape, d);
        return tt__autorelease(out);
    }
    // winner (X, i64): 1 + the flat position in src of the last writer of each target, 0 if none
    lay lx = lay_contiguous(x->ndim, x->shape), ls = lay_contiguous(src->ndim, src->shape);
    lay li = lay_of(index);
    int64_t nx = tt_numel(x), ns = tt_numel(src), ni = tt_numel(index);
    int64_t *winner = TT_CALLOC((size_t)(nx ? nx : 1), sizeof *winner);
    int64_t pos[TT_MAX_DIMS] = {0};
    for (int64_t k = 0; k < ni; k++) {  // row-major over I
        int64_t xo = 0, so = 0, io = 0;
        for (int e = 0; e < li.ndim; e++) {
            io += pos[e] * li.stride[e];
            so += pos[e] * ls.stride[e];
            xo += pos[e] * lx.stride[e];
        }
        int64_t j = (int64_t)tt__load(tt_data(index), index->dtype, io);
        xo += (j - pos[d]) * lx.stride[d];
        winner[xo] = so + 1;
        for (int e = li.ndim - 1; e >= 0; e--) {
            if (++pos[e] < li.shape[e]) break;
            pos[e] = 0;
        }
    }
    tt_scope_begin();  // the composition's intermediates
    tt_tensor *keep = tt_ones(x->dtype, x->ndim, x->shape);
    tt_tensor *w = tt_zeros(src->dtype, src->ndim, src->shape);
    for (int64_t i = 0; i < nx; i++) {
        if (!winner[i]) continue;
        tt__store(tt_data(keep), x->dtype, i, 0);
        tt__store(tt_data(w), src->dtype, winner[i] - 1, 1);
    }
    (void)ns;
    tt_free(winner);
    tt_tensor *zeros = tt_zeros(x->dtype, x->ndim, x->shape);
    tt_tensor *out = tt_add(tt_mul(x, keep), scatter_add_impl(zeros, dim, index,
                                                              tt_mul(src, w), false, __func__));
    tt_keep(out);
    tt_scope_end();
    return out;
}

// ---- index_select, index_add (composed) ----

// index (K,) or 0-d seen with `like`'s ndim: size K at dim, stride 0 elsewhere (no copy;
// unscoped: release it).
static tt_tensor *index_along(tt_tensor *index, const tt_tensor *like, int d, int64_t k,
                              const char *func) {
    TT_CHECK_IN(func, index->ndim <= 1, "index %s has %d dims; pass a 1-d tensor of indices "
                "(tt_gather takes an index of x's shape)", tt__shape(index), index->ndim);
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS] = {0};
    for (int e = 0; e < like->ndim; e++) shape[e] = like->shape[e];
    if (like->ndim == 0) return tt__new_view(index, 0, NULL, NULL, index->offset);
    shape[d] = k;
    stride[d] = index->ndim ? index->stride[0] : 0;
    return tt__new_view(index, like->ndim, shape, stride, index->offset);
}

tt_tensor *tt_index_select(tt_tensor *x, int dim, tt_tensor *index) {
    TT_CHECK(x, "x is NULL");
    check_index_dtype(index, __func__);
    int d = norm_dim(x, dim, __func__);
    int64_t k = tt_numel(index);
    TT_CHECK(x->ndim > 0 || k == 1, "x is 0-d and index %s has %lld elements; a 0-d x takes "
             "one index", tt__shape(index), (long long)k);
    check_index_range(index, x->ndim ? x->shape[d] : 1, dim, x, __func__);  // before the view
    tt_tensor *idx = index_along(index, x, d, k, __func__);
    tt_tensor *out = gather_impl(x, dim, idx, false, __func__);
    tt_release(idx);
    return out;
}

// A contiguous copy of the integer or bool src times alpha truncated to an integer (as
// PyTorch's index_add of integers), wrapping around on overflow; bool: src and alpha != 0.
static tt_tensor *int_scaled(tt_tensor *src, double alpha) {
    TT_CHECK_IN("tt_index_add", alpha > -0x1p63 && alpha < 0x1p63, "alpha %g does not fit in "
                "an int64 (src is %s); pass a finite alpha in the int64 range", alpha,
                tt_dtype_name(src->dtype));
    int64_t a = (int64_t)alpha, n = tt_numel(src);
    tt_tensor *s = tt__contiguous_copy(src);
    void *p = tt_data(s);
    for (int64_t i = 0; i < n; i++) {
        if (s->dtype == TT_I32) {
            int32_t *v = p;
            v[i] = (int32_t)((uint32_t)v[i] * (uint32_t)a);
        } else if (s->dtype == TT_I64) {
            int64_t *v = p;
            v[i] = (int64_t)((uint64_t)v[i] * (uint64_t)a);
        } else {
            uint8_t *v = p;
            v[i] = v[i] && a;
        }
    }
    return tt__autorelease(s);
}

tt_tensor *tt_index_add(tt_tensor *x, int dim, tt_tensor *index, tt_tensor *src,
                        double alpha) {
    check_x_src(x, src, __func__);
    check_index_dtype(index, __func__);
    int d = norm_dim(x, dim, __func__);
    int64_t k = tt_numel(index);
    bool fits = src->ndim == x->ndim;
    for (int e = 0; fits && e < x->ndim; e++)
        fits = src->shape[e] == (e == d ? k : x->shape[e]);
    TT_CHECK(fits && (x->ndim > 0 || k == 1), "src %s does not fit x %s with %lld indices at "
             "dim %d; src needs x's shape with size %lld at dim %d", tt__shape(src),
             tt__shape(x), (long long)k, dim, (long long)k, dim);
    check_index_range(index, x->ndim ? x->shape[d] : 1, dim, x, __func__);  // before the view
    tt_tensor *idx = index_along(index, src, d, k, __func__);
    tt_scope_begin();
    tt_tensor *s = alpha == 1 ? src : is_int(src) ? int_scaled(src, alpha)
                                                  : tt_mul_scalar(src, alpha);
    tt_tensor *out = tt_keep(scatter_add_impl(x, dim, idx, s, false, __func__));
    tt_scope_end();
    tt_release(idx);
    return out;
}

// ---- integer and bool tensors (sort, topk, cumsum, cumprod) ----
// x is copied as int64 lines: dim moved last, contiguous, L elements per line; the results are
// computed line by line and moved back. Exact for every int64 value; no tape (no gradient).

// (..., L) contiguous i64 copy of x with dim d last; a 0-d x is one line of 1. Scoped.
static tt_tensor *int_lines(tt_tensor *x, int d) {
    if (x->ndim == 0) return tt_to_dtype(tt_reshape(x, TT_SHAPE(1)), TT_I64);
    return tt_to_dtype(tt_movedim(x, d, -1), TT_I64);
}

// lines (..., L) back in x's layout (dim d) as a contiguous tensor of dtype dt. Scoped.
static tt_tensor *int_unlines(tt_tensor *lines, const tt_tensor *x, int d, tt_dtype dt) {
    if (x->ndim == 0) return tt_to_dtype(tt_reshape(lines, 0, NULL), dt);
    return tt_to_dtype(tt_movedim(lines, -1, d), dt);
}

typedef struct int_key {
    int64_t v, pos;
} int_key;

// Ascending / descending by value, equal values by position: a stable order.
static int key_asc(const void *a, const void *b) {
    const int_key *p = a, *q = b;
    if (p->v != q->v) return p->v < q->v ? -1 : 1;
    return (p->pos > q->pos) - (p->pos < q->pos);
}
static int key_desc(const void *a, const void *b) {
    const int_key *p = a, *q = b;
    if (p->v != q->v) return p->v > q->v ? -1 : 1;
    return (p->pos > q->pos) - (p->pos < q->pos);
}

// Stable sort of each line of an integer x along d: *values (x's dtype) and *indices (i64),
// new references in the caller's scope; either may be NULL.
static void int_sort(tt_tensor *x, int d, bool descending, tt_tensor **values,
                     tt_tensor **indices) {
    tt_scope_begin();
    tt_tensor *lines = int_lines(x, d);  // (..., L)
    int64_t n = tt_numel(lines), L = lines->shape[lines->ndim - 1];
    tt_tensor *vals = tt_zeros_like(lines), *idx = tt_zeros_like(lines);  // (..., L)
    const int64_t *src = tt_data(lines);
    int64_t *ov = tt_data(vals), *oi = tt_data(idx);
    int_key *keys = TT_MALLOC((size_t)(L > 0 ? L : 1) * sizeof *keys);
    for (int64_t base = 0; L > 0 && base < n; base += L) {
        for (int64_t j = 0; j < L; j++) keys[j] = (int_key){src[base + j], j};
        qsort(keys, (size_t)L, sizeof *keys, descending ? key_desc : key_asc);
        for (int64_t j = 0; j < L; j++) ov[base + j] = keys[j].v, oi[base + j] = keys[j].pos;
    }
    tt_free(keys);
    tt_tensor *v = values ? tt_keep(int_unlines(vals, x, d, x->dtype)) : NULL;
    tt_tensor *i = indices ? tt_keep(int_unlines(idx, x, d, TT_I64)) : NULL;
    tt_scope_end();
    if (values) *values = v;
    if (indices) *indices = i;
}

// Running sum or product of an integer x along d, as TT_I64 (PyTorch's result dtype), wrapping
// around on overflow as int64 does in PyTorch.
static tt_tensor *int_scan(tt_tensor *x, int d, bool prod) {
    tt_scope_begin();
    tt_tensor *lines = int_lines(x, d);  // (..., L)
    int64_t n = tt_numel(lines), L = lines->shape[lines->ndim - 1];
    int64_t *v = tt_data(lines);         // scanned in place: the copy is ours
    for (int64_t base = 0; L > 0 && base < n; base += L) {
        uint64_t acc = prod ? 1 : 0;     // unsigned: wraps instead of overflowing
        for (int64_t j = 0; j < L; j++) {
            acc = prod ? acc * (uint64_t)v[base + j] : acc + (uint64_t)v[base + j];
            v[base + j] = (int64_t)acc;
        }
    }
    tt_tensor *out = tt_keep(int_unlines(lines, x, d, TT_I64));
    tt_scope_end();
    return out;
}

// ---- sort, argsort, topk ----
// The indices come from a stable merge sort (kernel); the values are gather(x, dim, indices),
// so their gradient is gather's.

// X, i64; unscoped
static tt_tensor *sort_indices(tt_tensor *x, int d, bool descending) {
    tt_tensor *idx = tt__new(TT_I64, x->ndim, x->shape);
    lay lx = lay_of(x);
    tt_k_sort_indices(tt_data(idx), tt_data(x), lx.stride, descending, x->dtype, lx.ndim,
                      lx.shape, d);
    return idx;
}

// Hands idx (unscoped) out as *values = gather(x, dim, idx) and *indices (either may be NULL).
static void give_out(tt_tensor *x, int dim, tt_tensor *idx, tt_tensor **values,
                     tt_tensor **indices, const char *func) {
    if (values) *values = gather_impl(x, dim, idx, false, func);  // in range
    if (indices) *indices = tt__autorelease(idx);
    else tt_release(idx);
}

void tt_sort(tt_tensor *x, int dim, bool descending, tt_tensor **values, tt_tensor **indices) {
    if (is_int(x)) {
        int_sort(x, norm_dim(x, dim, __func__), descending, values, indices);
        return;
    }
    check_x(x, "x", __func__);
    int d = norm_dim(x, dim, __func__);
    give_out(x, dim, sort_indices(x, d, descending), values, indices, __func__);
}

tt_tensor *tt_argsort(tt_tensor *x, int dim, bool descending) {
    if (is_int(x)) {
        tt_tensor *idx;
        int_sort(x, norm_dim(x, dim, __func__), descending, NULL, &idx);
        return idx;
    }
    check_x(x, "x", __func__);
    return tt__autorelease(sort_indices(x, norm_dim(x, dim, __func__), descending));
}

void tt_topk(tt_tensor *x, int64_t k, int dim, bool largest, bool sorted, tt_tensor **values,
             tt_tensor **indices) {
    (void)sorted;  // always sorted
    if (!is_int(x)) check_x(x, "x", __func__);
    int d = norm_dim(x, dim, __func__);
    int64_t size = x->ndim ? x->shape[d] : 1;
    TT_CHECK(k >= 0 && k <= size, "k = %lld is out of range for dim %d of size %lld of x %s; "
             "pass 0 <= k <= %lld", (long long)k, dim, (long long)size, tt__shape(x),
             (long long)size);
    if (is_int(x)) {
        // The first k of the stable sort (ties keep the lower index first).
        tt_tensor *v, *i;
        tt_scope_begin();
        int_sort(x, d, largest, &v, &i);
        if (x->ndim) {
            v = tt_contiguous(tt_narrow(v, d, 0, k));
            i = tt_contiguous(tt_narrow(i, d, 0, k));
        }
        if (values) *values = tt_keep(v);
        if (indices) *indices = tt_keep(i);
        tt_scope_end();
        return;
    }
    tt_tensor *all = sort_indices(x, d, largest), *idx = all;
    if (x->ndim) {
        int64_t shape[TT_MAX_DIMS];
        memcpy(shape, x->shape, sizeof shape);
        shape[d] = k;
        tt_tensor *first = tt__new_view(all, x->ndim, shape, all->stride, all->offset);
        idx = tt__contiguous_copy(first);  // the first k along dim
        tt_release(first);
        tt_release(all);
    }
    give_out(x, dim, idx, values, indices, __func__);
}

// ---- cumsum ----
// y[i] = sum_{j <= i} x[j] along dim;  dx[i] = sum_{j >= i} g[j] (the reversed running sum).

static tt_tensor *scan_out(tt_tensor *x, int dim, bool prod, const char *func) {
    if (is_int(x)) return int_scan(x, norm_dim(x, dim, func), prod);
    check_x(x, "x", func);
    int d = norm_dim(x, dim, func);
    tt_tensor *out = tt__new(x->dtype, x->ndim, x->shape);  // X
    lay lx = lay_of(x);
    if (prod) tt_k_cumprod(tt_data(out), tt_data(x), lx.stride, x->dtype, lx.ndim, lx.shape, d);
    else tt_k_cumsum(tt_data(out), tt_data(x), lx.stride, false, x->dtype, lx.ndim, lx.shape, d);
    index_ctx *c = tt__record(out, prod ? TT_OP_CUMPROD : TT_OP_CUMSUM, 1, &x, sizeof *c);
    if (c) c->dim = d;
    return tt__autorelease(out);
}

tt_tensor *tt_cumsum(tt_tensor *x, int dim) { return scan_out(x, dim, false, __func__); }

void tt__backward_cumsum(tt_node *n) {
    tt_tensor *x = n->inputs[0], *g = n->grad;
    const index_ctx *c = n->ctx;
    tt_tensor *dx = tt__new(x->dtype, x->ndim, x->shape);  // X
    lay lg = lay_of(g);
    tt_k_cumsum(tt_data(dx), tt_data(g), lg.stride, true, x->dtype, lg.ndim, lg.shape, c->dim);
    tt__accum_grad_owned(x, dx);
}

// ---- cumprod ----
// y[i] = prod_{j <= i} x[j];  dx[i] = sum_{j >= i} g[j] prod_{k <= j, k != i} x[k]
// (the kernel's O(L) form divides only by the x before a line's first zero).

tt_tensor *tt_cumprod(tt_tensor *x, int dim) { return scan_out(x, dim, true, __func__); }

void tt__backward_cumprod(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    const index_ctx *c = n->ctx;
    tt_tensor *g = tt__contiguous_ref(n->grad);            // X
    tt_tensor *dx = tt__new(x->dtype, x->ndim, x->shape);  // X
    lay lx = lay_of(x);
    tt_k_cumprod_backward(tt_data(dx), tt_data(x), lx.stride, tt_data(g), x->dtype, lx.ndim,
                          lx.shape, c->dim);
    tt__accum_grad_owned(x, dx);
    tt_release(g);
}

// ---- prod (composed) ----
// The reduced dims are moved last and flattened into one line of N, whose cumprod's last
// element is the product; N == 0 gives 1 (0 * sum(x) + 1, keeping x in the graph). An integer
// or bool x gives TT_I64 through cumprod's exact integer scan.

tt_tensor *tt_prod(tt_tensor *x, int ndims, const int *dims, bool keepdim) {
    if (!is_int(x)) check_x(x, "x", __func__);
    TT_CHECK(ndims >= 0 && (ndims == 0 || dims), "ndims is %d with dims %s; pass ndims > 0 "
             "dims, or ndims 0 to reduce all dims", ndims, dims ? "given" : "NULL");
    int nd = x->ndim;
    bool red[TT_MAX_DIMS] = {false};
    for (int i = 0; i < ndims; i++) {
        int d = norm_dim(x, dims[i], __func__);
        TT_CHECK(!red[d], "dim %d is listed twice for x %s; list each dim once", d,
                 tt__shape(x));
        red[d] = true;
    }
    int perm[TT_MAX_DIMS], np = 0;
    int64_t mid[TT_MAX_DIMS + 1], out_shape[TT_MAX_DIMS], nred = 1;
    int nmid = 0, nout = 0;
    for (int d = 0; d < nd; d++) {
        bool r = ndims == 0 || red[d];
        if (!r) {
            perm[np++] = d;
            mid[nmid++] = x->shape[d];
        }
        if (!r || keepdim) out_shape[nout++] = r ? 1 : x->shape[d];
    }
    for (int d = 0; d < nd; d++)
        if (ndims == 0 || red[d]) {
            perm[np++] = d;
            nred *= x->shape[d];
        }
    tt_scope_begin();
    tt_tensor *y;
    if (nred == 0 && is_int(x)) {
        y = tt_ones(TT_I64, nout, out_shape);
    } else if (nred == 0) {
        y = tt_add_scalar(tt_mul_scalar(tt_sum(x, ndims, dims, keepdim), 0), 1);
    } else {
        mid[nmid] = nred;
        tt_tensor *line = nd ? tt_reshape(tt_permute(x, perm), nmid + 1, mid)
                             : tt_reshape(x, TT_SHAPE(1));
        tt_tensor *last = tt_slice(tt_cumprod(line, -1), -1, nred - 1, nred, 1);
        y = tt_reshape(last, nout, out_shape);
    }
    tt_keep(y);
    tt_scope_end();
    return y;
}

// ---- differentiable backwards (create_graph) ----

// dx = scatter_add(zeros like x, dim, index, g): g added back at the positions read.
static void gather2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    tt_tensor *x = n->inputs[0];
    const index_ctx *c = n->ctx;
    tt__accum_grad(x, tt_scatter_add(tt_zeros_like(x), c->dim, n->saved[0], n->grad));
}

// dx = g; dsrc = gather(g, dim, index), zero-padded at the end of each dim to src's shape
// (index may be smaller than src: the rest of src is not read).
static void scatter_add2(tt_node *n) {
    tt_tensor *src = n->inputs[1], *index = n->saved[0], *g = n->grad;
    const index_ctx *c = n->ctx;
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(n->inputs[0], g);
    if (!tt__input_needs_grad(n, 1)) return;
    tt_tensor *ds = tt_gather(g, c->dim, index);  // index's shape
    int64_t pad[2 * TT_MAX_DIMS] = {0};
    bool padded = false;
    for (int d = 0; d < src->ndim; d++) {
        pad[2 * (src->ndim - 1 - d) + 1] = src->shape[d] - index->shape[d];  // (left, right)
        padded = padded || src->shape[d] != index->shape[d];
    }
    if (padded) ds = tt_pad(ds, 2 * src->ndim, pad, TT_PAD_CONSTANT, 0);
    tt__accum_grad(src, ds);
}

// dx = flip(cumsum(flip(g))) along dim: dx[i] = sum_{j >= i} g[j].
static void cumsum2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    tt_tensor *x = n->inputs[0], *g = n->grad;
    const index_ctx *c = n->ctx;
    if (x->ndim == 0) {  // one element: the identity
        tt__accum_grad(x, g);
        return;
    }
    int d = c->dim;
    tt__accum_grad(x, tt_flip(tt_cumsum(tt_flip(g, 1, &d), d), 1, &d));
}

// dx[i] = sum_{j >= i} g[j] prod_{k <= j, k != i} x[k], on (..., L, L) planes with dim moved
// last: Q[i, j] = the running product over k <= j of x[k], with 1 in place of x[i]; then
// dx[i] = sum_j [j >= i] g[j] Q[i, j]. No division, so exact with zeros in x; O(L^2) per line.
static void cumprod2(tt_node *n) {
    if (!tt__input_needs_grad(n, 0)) return;
    tt_tensor *x = n->inputs[0], *g = n->grad;
    const index_ctx *c = n->ctx;
    if (x->ndim == 0) {
        tt__accum_grad(x, g);
        return;
    }
    int d = c->dim;
    int64_t L = x->shape[d];
    tt_tensor *xl = tt_unsqueeze(tt_movedim(x, d, -1), -2);  // (..., 1, L): [i, k] = x[k]
    tt_tensor *gl = tt_unsqueeze(tt_movedim(g, d, -1), -2);  // (..., 1, L): [i, j] = g[j]
    tt_tensor *eye = tt_eye(x->dtype, L, L);                 // (L, L), constants from here
    tt_tensor *pos = tt_arange(x->dtype, 0, (double)L, 1);   // (L,)
    tt_tensor *upper = tt_to_dtype(tt_ge(tt_unsqueeze(pos, 0), tt_unsqueeze(pos, 1)),
                                   x->dtype);                     // (L, L): [i, j] = j >= i
    tt_tensor *off = tt_add_scalar(tt_neg(eye), 1);               // 1 - eye
    tt_tensor *q = tt_cumprod(tt_add(tt_mul(xl, off), eye), -1);  // (..., L, L)
    tt_tensor *dxl = tt_sum(tt_mul(q, tt_mul(gl, upper)), TT_DIMS(-1), false);  // (..., L)
    tt__accum_grad(x, tt_movedim(dxl, -1, d));
}

const tt__grad2_row tt__grad2_index[] = {
    {TT_OP_GATHER, gather2}, {TT_OP_SCATTER_ADD, scatter_add2},
    {TT_OP_CUMSUM, cumsum2}, {TT_OP_CUMPROD, cumprod2},
    {TT_OP_COUNT, NULL},
};

// Shape ops, forward and backward side by side: the views that share storage (reshape/view/
// flatten, transpose, permute, slice/narrow, expand/broadcast_to, squeeze/unsqueeze) and the
// copying ops (cat, stack, contiguous, clone, to_dtype). Every copy is tt_copy_ (tensor/iter.c,
// on the raw kernels of tensor/kernels/shape.c).
#include "ops_shape.h"

// Like TT_CHECK, but the message names the public op `func` rather than the helper it runs in.
#define SHAPE_CHECK(cond, func, ...) TT_CHECK_IN(func, cond, __VA_ARGS__)

// ---- helpers ----

static void check_tensor(const tt_tensor *x, const char *func) {
    SHAPE_CHECK(x, func, "tensor is NULL");
}

static void check_ndim(int ndim, const int64_t *shape, const char *func) {
    SHAPE_CHECK(ndim >= 0 && ndim <= TT_MAX_DIMS, func, "ndim %d is out of range [0, %d]",
                ndim, TT_MAX_DIMS);
    SHAPE_CHECK(ndim == 0 || shape, func, "shape is NULL for ndim %d", ndim);
}

// A dim where a new size-1 dim goes into a (ndim)-d tensor: -(ndim + 1) .. ndim.
static int norm_insert_dim(int dim, int ndim, const char *func) {
    int d = dim < 0 ? dim + ndim + 1 : dim;
    SHAPE_CHECK(d >= 0 && d <= ndim, func, "dim %d is out of range for inserting a dim into a "
                "%d-d tensor (valid: %d .. %d)", dim, ndim, -(ndim + 1), ndim);
    return d;
}

// A new contiguous tensor with x's values, shape (ndim, shape) (same numel), in `dtype`.
static tt_tensor *copy_as(const tt_tensor *x, tt_dtype dtype, int ndim, const int64_t *shape) {
    tt_tensor *out = tt__new(dtype, ndim, shape);
    int64_t cst[TT_MAX_DIMS];  // out's buffer read with x's shape, row-major
    tt__contiguous_strides(x->ndim, x->shape, cst);
    tt_tensor *dst = tt__new_view(out, x->ndim, x->shape, cst, 0);
    tt_copy_(dst, x);
    tt_release(dst);
    return out;
}

// Unscoped view of t along `dim`: elements start, start + step, ... (len of them).
static tt_tensor *slice_view(const tt_tensor *t, int dim, int64_t start, int64_t len,
                             int64_t step) {
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) shape[i] = t->shape[i], stride[i] = t->stride[i];
    shape[dim] = len;
    stride[dim] = len > 1 ? t->stride[dim] * step : t->stride[dim];  // fits when len > 1
    int64_t offset = len > 0 ? t->offset + start * t->stride[dim] : t->offset;
    return tt__new_view(t, t->ndim, shape, stride, offset);
}

// Unscoped view of t with `dim` removed at index i (t[..., i, ...]).
static tt_tensor *select_view(const tt_tensor *t, int dim, int64_t i) {
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    for (int k = 0, j = 0; k < t->ndim; k++) {
        if (k == dim) continue;
        shape[j] = t->shape[k], stride[j] = t->stride[k], j++;
    }
    return tt__new_view(t, t->ndim - 1, shape, stride, t->offset + i * t->stride[dim]);
}

// ---- reshape / view / flatten ----

// Resolves one -1 in `shape` against x's element count into `out`.
static void resolve_shape(const tt_tensor *x, int ndim, const int64_t *shape, int64_t *out,
                          const char *func) {
    int infer = -1;
    int64_t known = 1, numel = tt_numel(x);
    bool zero = false;  // a size is 0: known is the product of the others, checked for overflow
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            SHAPE_CHECK(infer < 0, func, "cannot reshape %s to %s: only one dim may be -1",
                        tt__shape(x), tt__shape_of(ndim, shape));
            infer = i;
        } else {
            SHAPE_CHECK(shape[i] >= 0, func, "cannot reshape %s to %s: negative size %lld in "
                        "dim %d (only -1, for one inferred dim)", tt__shape(x),
                        tt__shape_of(ndim, shape), (long long)shape[i], i);
            SHAPE_CHECK(!__builtin_mul_overflow(known, shape[i] ? shape[i] : 1, &known), func,
                        "cannot reshape %s to %s: the sizes' product overflows int64",
                        tt__shape(x), tt__shape_of(ndim, shape));
            zero = zero || shape[i] == 0;
        }
    }
    if (zero) known = 0;
    if (infer >= 0) {
        SHAPE_CHECK(known != 0 && numel % known == 0, func, "cannot reshape %s (%lld elements) "
                    "to %s: the other dims' product %lld does not divide the element count",
                    tt__shape(x), (long long)numel, tt__shape_of(ndim, shape),
                    (long long)known);
        out[infer] = numel / known;
    } else {
        SHAPE_CHECK(known == numel, func, "cannot reshape %s (%lld elements) to %s (%lld "
                    "elements); the element counts must match (use -1 to infer one dim)",
                    tt__shape(x), (long long)numel, tt__shape_of(ndim, shape), (long long)known);
    }
}

// Strides viewing x as (ndim, shape) without a copy, after PyTorch's computeStride: x's dims
// split into chunks that are each contiguous in memory (stride[d] == stride[d+1] * size[d+1]),
// and every chunk must be covered by a run of new dims with the same element count.
// Returns false when no view exists.
static bool view_strides(const tt_tensor *x, int ndim, const int64_t *shape, int64_t *stride) {
    if (tt_numel(x) == 0 || x->ndim == 0) {  // nothing to address, or a single element
        tt__contiguous_strides(ndim, shape, stride);
        return true;
    }
    int vd = ndim - 1;
    int64_t base = x->stride[x->ndim - 1];  // stride of the current chunk's last dim
    int64_t tnumel = 1, vnumel = 1;
    for (int td = x->ndim - 1; td >= 0; td--) {
        tnumel *= x->shape[td];
        bool chunk_ends = td == 0 ||
                          (x->shape[td - 1] != 1 && x->stride[td - 1] != tnumel * base);
        if (!chunk_ends) continue;
        while (vd >= 0 && (vnumel < tnumel || shape[vd] == 1)) {
            stride[vd] = vnumel * base;
            vnumel *= shape[vd];
            vd--;
        }
        if (vnumel != tnumel) return false;
        if (td > 0) {
            base = x->stride[td - 1];
            tnumel = 1;
            vnumel = 1;
        }
    }
    return vd == -1;
}

static tt_tensor *reshape_impl(tt_tensor *x, int ndim, const int64_t *shape, bool allow_copy,
                               const char *func) {
    check_tensor(x, func);
    check_ndim(ndim, shape, func);
    int64_t sh[TT_MAX_DIMS], st[TT_MAX_DIMS];
    resolve_shape(x, ndim, shape, sh, func);
    tt_tensor *out;
    if (view_strides(x, ndim, sh, st)) {
        out = tt__new_view(x, ndim, sh, st, x->offset);
    } else {
        SHAPE_CHECK(allow_copy, func, "cannot view %s with strides %s as %s without copying "
                    "(its dims cannot be grouped into contiguous runs); use tt_reshape, which "
                    "copies when needed, or call tt_contiguous first", tt__shape(x),
                    tt__shape_of(x->ndim, x->stride), tt__shape_of(ndim, sh));
        out = copy_as(x, x->dtype, ndim, sh);
    }
    tt__record(out, TT_OP_RESHAPE, 1, &x, 0);
    return tt__autorelease(out);
}

tt_tensor *tt_reshape(tt_tensor *x, int ndim, const int64_t *shape) {
    return reshape_impl(x, ndim, shape, true, __func__);
}

tt_tensor *tt_view(tt_tensor *x, int ndim, const int64_t *shape) {
    return reshape_impl(x, ndim, shape, false, __func__);
}

// torch.flatten: x (d0, ..., d_{n-1}) -> (d0, ..., d_{s-1}, d_s * ... * d_e, d_{e+1}, ...);
// a 0-dim tensor flattens to (1,), as PyTorch's.
tt_tensor *tt_flatten(tt_tensor *x, int start_dim, int end_dim) {
    check_tensor(x, __func__);
    int nd = x->ndim > 0 ? x->ndim : 1;
    int s = start_dim < 0 ? start_dim + nd : start_dim;
    int e = end_dim < 0 ? end_dim + nd : end_dim;
    SHAPE_CHECK(s >= 0 && s < nd && e >= 0 && e < nd, __func__, "start_dim=%d or end_dim=%d is "
                "out of range for input %s (valid: %d .. %d)", start_dim, end_dim,
                tt__shape(x), -nd, nd - 1);
    SHAPE_CHECK(s <= e, __func__, "start_dim=%d comes after end_dim=%d for input %s; swap them",
                start_dim, end_dim, tt__shape(x));
    if (x->ndim == 0) return reshape_impl(x, 1, (const int64_t[]){1}, true, __func__);
    int64_t shape[TT_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < s; d++) shape[n++] = x->shape[d];
    int64_t merged = 1;
    for (int d = s; d <= e; d++) merged *= x->shape[d];
    shape[n++] = merged;
    for (int d = e + 1; d < x->ndim; d++) shape[n++] = x->shape[d];
    return reshape_impl(x, n, shape, true, __func__);
}

// d x = reshape(d out, x's shape): the same elements in the same row-major order.
void tt__backward_reshape(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    tt__accum_grad_node(x, n, tt_reshape(n->grad, x->ndim, x->shape));
}

// ---- transpose ----

typedef struct transpose_ctx {
    int d0, d1;
} transpose_ctx;

tt_tensor *tt_transpose(tt_tensor *x, int dim0, int dim1) {
    check_tensor(x, __func__);
    int d0 = tt__norm_dim(dim0, x->ndim, __func__), d1 = tt__norm_dim(dim1, x->ndim, __func__);
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[i], stride[i] = x->stride[i];
    shape[d0] = x->shape[d1], stride[d0] = x->stride[d1];
    shape[d1] = x->shape[d0], stride[d1] = x->stride[d0];
    tt_tensor *out = tt__new_view(x, x->ndim, shape, stride, x->offset);
    transpose_ctx *c = tt__record(out, TT_OP_TRANSPOSE, 1, &x, sizeof *c);
    if (c) c->d0 = d0, c->d1 = d1;
    return tt__autorelease(out);
}

// d x = transpose(d out, d0, d1): a transpose is its own inverse.
void tt__backward_transpose(tt_node *n) {
    const transpose_ctx *c = n->ctx;
    tt__accum_grad_node(n->inputs[0], n, tt_transpose(n->grad, c->d0, c->d1));
}

// ---- permute ----

typedef struct permute_ctx {
    int inv[TT_MAX_DIMS];  // the inverse permutation: out dim dims[i] goes back to i
} permute_ctx;

tt_tensor *tt_permute(tt_tensor *x, const int *dims) {
    check_tensor(x, __func__);
    SHAPE_CHECK(x->ndim == 0 || dims, __func__, "dims is NULL for a %d-d tensor", x->ndim);
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    int inv[TT_MAX_DIMS];
    bool seen[TT_MAX_DIMS] = {false};
    for (int i = 0; i < x->ndim; i++) {
        int d = dims[i] < 0 ? dims[i] + x->ndim : dims[i];
        SHAPE_CHECK(d >= 0 && d < x->ndim && !seen[d], __func__, "dims must be a permutation "
                    "of 0 .. %d for tensor %s: entry %d is %d (%s)", x->ndim - 1, tt__shape(x),
                    i, dims[i], d >= 0 && d < x->ndim ? "repeated" : "out of range");
        seen[d] = true;
        inv[d] = i;
        shape[i] = x->shape[d];
        stride[i] = x->stride[d];
    }
    tt_tensor *out = tt__new_view(x, x->ndim, shape, stride, x->offset);
    permute_ctx *c = tt__record(out, TT_OP_PERMUTE, 1, &x, sizeof *c);
    if (c)
        for (int i = 0; i < x->ndim; i++) c->inv[i] = inv[i];
    return tt__autorelease(out);
}

// d x = permute(d out, inverse of dims).
void tt__backward_permute(tt_node *n) {
    const permute_ctx *c = n->ctx;
    tt__accum_grad_node(n->inputs[0], n, tt_permute(n->grad, c->inv));
}

// ---- slice / narrow ----

typedef struct slice_ctx {
    int dim;
    int64_t start, step;  // normalized; the length is the output's size along dim
} slice_ctx;

static tt_tensor *slice_record(tt_tensor *x, int dim, int64_t start, int64_t len,
                               int64_t step) {
    tt_tensor *out = slice_view(x, dim, start, len, step);
    slice_ctx *c = tt__record(out, TT_OP_SLICE, 1, &x, sizeof *c);
    if (c) c->dim = dim, c->start = start, c->step = step;
    return tt__autorelease(out);
}

// Python's clamping: negative counts from the end, then into [0, size].
static int64_t clamp_index(int64_t i, int64_t size) {
    if (i < 0) i = i < -size ? 0 : i + size;
    return i > size ? size : i;
}

tt_tensor *tt_slice(tt_tensor *x, int dim, int64_t start, int64_t end, int64_t step) {
    check_tensor(x, __func__);
    int d = tt__norm_dim(dim, x->ndim, __func__);
    SHAPE_CHECK(step >= 1, __func__, "step must be >= 1, got %lld (slicing %s along dim %d); "
                "negative steps are not supported", (long long)step, tt__shape(x), d);
    int64_t size = x->shape[d];
    int64_t s = clamp_index(start, size), e = clamp_index(end, size);
    int64_t len = e > s ? (e - s - 1) / step + 1 : 0;  // ceil((e - s) / step), no overflow
    return slice_record(x, d, len > 0 ? s : 0, len, step);
}

tt_tensor *tt_narrow(tt_tensor *x, int dim, int64_t start, int64_t length) {
    check_tensor(x, __func__);
    int d = tt__norm_dim(dim, x->ndim, __func__);
    int64_t size = x->shape[d];
    int64_t s = start < 0 ? start + size : start;
    SHAPE_CHECK(s >= 0 && s <= size && length >= 0 && length <= size - s, __func__,
                "start %lld, length %lld is out of range for dim %d of %s (size %lld); need "
                "-size <= start <= size and start + length <= size", (long long)start,
                (long long)length, d, tt__shape(x), (long long)size);
    return slice_record(x, d, length > 0 ? s : 0, length, 1);
}

// torch.select / x[:, i]: a view of x without `dim`, at `index` along it (negative counts from
// the end). Composed of narrow and squeeze, so its gradient is theirs.
tt_tensor *tt_select(tt_tensor *x, int dim, int64_t index) {
    check_tensor(x, __func__);
    SHAPE_CHECK(x->ndim > 0, __func__, "cannot select from a 0-dim tensor (it has no dims)");
    int d = tt__norm_dim(dim, x->ndim, __func__);
    int64_t size = x->shape[d];
    SHAPE_CHECK(index >= -size && index < size, __func__, "index %lld is out of range for dim "
                "%d of %s (valid: %lld .. %lld)", (long long)index, d, tt__shape(x),
                (long long)-size, (long long)size - 1);
    return tt_squeeze(tt_narrow(x, d, index < 0 ? index + size : index, 1), d);
}

// d x = zeros of x's shape with d out copied into the sliced positions.
void tt__backward_slice(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    const slice_ctx *c = n->ctx;
    tt_tensor *dx = tt__new_zeros(x->dtype, x->ndim, x->shape);
    tt_tensor *dst = slice_view(dx, c->dim, c->start, n->shape[c->dim], c->step);
    tt_copy_(dst, n->grad);
    tt_release(dst);  // dx is unshared again, so it can become x's gradient without a copy
    tt__accum_grad_owned(x, dx);
}

// ---- expand / broadcast_to ----

static tt_tensor *expand_impl(tt_tensor *x, int ndim, const int64_t *shape, const char *func) {
    check_tensor(x, func);
    check_ndim(ndim, shape, func);
    SHAPE_CHECK(ndim >= x->ndim, func, "cannot expand %s to %s: the target has fewer dims "
                "(expand only adds leading dims; use tt_reshape or tt_squeeze to drop dims)",
                tt__shape(x), tt__shape_of(ndim, shape));
    int lead = ndim - x->ndim;
    int64_t sh[TT_MAX_DIMS], st[TT_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        if (i < lead) {
            SHAPE_CHECK(shape[i] >= 0, func, "cannot expand %s to %s: new leading dim %d "
                        "needs a size >= 0 (-1 only keeps an existing size)", tt__shape(x),
                        tt__shape_of(ndim, shape), i);
            sh[i] = shape[i], st[i] = 0;
            continue;
        }
        int j = i - lead;
        if (shape[i] == -1 || shape[i] == x->shape[j]) {
            sh[i] = x->shape[j], st[i] = x->stride[j];
        } else {
            SHAPE_CHECK(x->shape[j] == 1 && shape[i] >= 0, func, "cannot expand %s to %s: "
                        "dim %d has size %lld, target %lld; only size-1 dims expand (-1 keeps "
                        "a size; add a size-1 dim with tt_unsqueeze first)", tt__shape(x),
                        tt__shape_of(ndim, shape), j, (long long)x->shape[j],
                        (long long)shape[i]);
            sh[i] = shape[i], st[i] = 0;
        }
    }
    tt_tensor *out = tt__new_view(x, ndim, sh, st, x->offset);
    tt__record(out, TT_OP_EXPAND, 1, &x, 0);
    return tt__autorelease(out);
}

tt_tensor *tt_expand(tt_tensor *x, int ndim, const int64_t *shape) {
    return expand_impl(x, ndim, shape, __func__);
}

tt_tensor *tt_broadcast_to(tt_tensor *x, int ndim, const int64_t *shape) {
    return expand_impl(x, ndim, shape, __func__);
}

// d x = d out summed over the expanded dims (tt__accum_grad sums down to x's shape).
void tt__backward_expand(tt_node *n) { tt__accum_grad_node(n->inputs[0], n, n->grad); }

// ---- squeeze / unsqueeze ----

typedef struct dim_ctx {
    int dim;
} dim_ctx;

tt_tensor *tt_squeeze(tt_tensor *x, int dim) {
    check_tensor(x, __func__);
    int d = tt__norm_dim(dim, x->ndim, __func__);
    SHAPE_CHECK(x->shape[d] == 1, __func__, "dim %d of %s has size %lld; only a size-1 dim can "
                "be squeezed (use tt_reshape or tt_slice to change other dims)", d,
                tt__shape(x), (long long)x->shape[d]);
    tt_tensor *out = select_view(x, d, 0);
    dim_ctx *c = tt__record(out, TT_OP_SQUEEZE, 1, &x, sizeof *c);
    if (c) c->dim = d;
    return tt__autorelease(out);
}

// d x = unsqueeze(d out, dim).
void tt__backward_squeeze(tt_node *n) {
    const dim_ctx *c = n->ctx;
    tt__accum_grad_node(n->inputs[0], n, tt_unsqueeze(n->grad, c->dim));
}

tt_tensor *tt_unsqueeze(tt_tensor *x, int dim) {
    check_tensor(x, __func__);
    SHAPE_CHECK(x->ndim < TT_MAX_DIMS, __func__, "tensor %s already has the maximum of %d "
                "dims", tt__shape(x), TT_MAX_DIMS);
    int d = norm_insert_dim(dim, x->ndim, __func__);
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    for (int i = 0, j = 0; i <= x->ndim; i++) {
        if (i == d) {
            // The stride a contiguous tensor would have there, so contiguity is kept.
            shape[i] = 1;
            stride[i] = d < x->ndim ? x->shape[d] * x->stride[d] : 1;
        } else {
            shape[i] = x->shape[j], stride[i] = x->stride[j], j++;
        }
    }
    tt_tensor *out = tt__new_view(x, x->ndim + 1, shape, stride, x->offset);
    dim_ctx *c = tt__record(out, TT_OP_UNSQUEEZE, 1, &x, sizeof *c);
    if (c) c->dim = d;
    return tt__autorelease(out);
}

// d x = squeeze(d out, dim).
void tt__backward_unsqueeze(tt_node *n) {
    const dim_ctx *c = n->ctx;
    tt__accum_grad_node(n->inputs[0], n, tt_squeeze(n->grad, c->dim));
}

// ---- cat / stack ----

static void check_list(int n, tt_tensor *const *xs, const char *func) {
    SHAPE_CHECK(n >= 1 && xs, func, "needs at least one tensor, got n = %d%s", n,
                xs ? "" : " and xs = NULL");
    for (int i = 0; i < n; i++) {
        SHAPE_CHECK(xs[i], func, "tensor %d of %d is NULL", i, n);
        if (xs[i]->dtype != xs[0]->dtype)
            tt__check_same_dtype(xs[0], xs[i], func);
    }
}

tt_tensor *tt_cat(int n, tt_tensor *const *xs, int dim) {
    check_list(n, xs, __func__);
    const tt_tensor *x0 = xs[0];
    SHAPE_CHECK(x0->ndim > 0, __func__, "cannot concatenate 0-d tensors; use tt_stack, or "
                "tt_unsqueeze them first");
    int d = tt__norm_dim(dim, x0->ndim, __func__);
    int64_t shape[TT_MAX_DIMS];
    for (int k = 0; k < x0->ndim; k++) shape[k] = x0->shape[k];
    shape[d] = 0;
    for (int i = 0; i < n; i++) {
        const tt_tensor *x = xs[i];
        SHAPE_CHECK(x->ndim == x0->ndim, __func__, "tensor %d is %s but tensor 0 is %s; all "
                    "need the same number of dims", i, tt__shape(x), tt__shape(x0));
        for (int k = 0; k < x0->ndim; k++)
            SHAPE_CHECK(k == d || x->shape[k] == x0->shape[k], __func__, "tensor %d is %s but "
                        "tensor 0 is %s: sizes must match in every dim except the cat dim %d "
                        "(they differ in dim %d)", i, tt__shape(x), tt__shape(x0), d, k);
        SHAPE_CHECK(!__builtin_add_overflow(shape[d], x->shape[d], &shape[d]), __func__,
                    "the sizes of dim %d of the %d tensors add up past int64 (tensor %d is %s)",
                    d, n, i, tt__shape(x));
    }
    tt_tensor *out = tt__new(x0->dtype, x0->ndim, shape);  // shape[d] = sum of the sizes
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        tt_tensor *dst = slice_view(out, d, off, xs[i]->shape[d], 1);
        tt_copy_(dst, xs[i]);
        tt_release(dst);
        off += xs[i]->shape[d];
    }
    dim_ctx *c = tt__record(out, TT_OP_CAT, n, xs, sizeof *c);
    if (c) c->dim = d;
    return tt__autorelease(out);
}

// d xs[i] = the slice of d out along dim that xs[i] filled.
void tt__backward_cat(tt_node *n) {
    const dim_ctx *c = n->ctx;
    int64_t off = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        tt_tensor *x = n->inputs[i];
        int64_t len = x->shape[c->dim];
        if (x->requires_grad) {
            tt_tensor *g = slice_view(n->grad, c->dim, off, len, 1);
            tt__accum_grad_owned(x, g);
        }
        off += len;
    }
}

tt_tensor *tt_stack(int n, tt_tensor *const *xs, int dim) {
    check_list(n, xs, __func__);
    const tt_tensor *x0 = xs[0];
    SHAPE_CHECK(x0->ndim < TT_MAX_DIMS, __func__, "tensors %s already have the maximum of %d "
                "dims", tt__shape(x0), TT_MAX_DIMS);
    int d = norm_insert_dim(dim, x0->ndim, __func__);
    for (int i = 1; i < n; i++)
        SHAPE_CHECK(tt_same_shape(xs[i], x0), __func__, "tensor %d is %s but tensor 0 is %s; "
                    "stacked tensors must all have the same shape", i, tt__shape(xs[i]),
                    tt__shape(x0));
    int64_t shape[TT_MAX_DIMS];  // x0's shape with n inserted at d
    for (int k = 0, j = 0; k <= x0->ndim; k++) shape[k] = k == d ? n : x0->shape[j++];
    tt_tensor *out = tt__new(x0->dtype, x0->ndim + 1, shape);
    for (int i = 0; i < n; i++) {
        tt_tensor *dst = select_view(out, d, i);
        tt_copy_(dst, xs[i]);
        tt_release(dst);
    }
    dim_ctx *c = tt__record(out, TT_OP_STACK, n, xs, sizeof *c);
    if (c) c->dim = d;
    return tt__autorelease(out);
}

// d xs[i] = d out[..., i, ...] along the stacked dim.
void tt__backward_stack(tt_node *n) {
    const dim_ctx *c = n->ctx;
    for (int i = 0; i < n->n_inputs; i++) {
        if (!n->inputs[i]->requires_grad) continue;
        tt_tensor *g = select_view(n->grad, c->dim, i);
        tt__accum_grad_owned(n->inputs[i], g);
    }
}

// ---- contiguous / clone / to_dtype ----

tt_tensor *tt_contiguous(tt_tensor *x) {
    check_tensor(x, __func__);
    if (tt_is_contiguous(x)) return tt__autorelease(tt_retain(x));
    tt_tensor *out = tt__contiguous_copy(x);
    tt__record(out, TT_OP_CONTIGUOUS, 1, &x, 0);
    return tt__autorelease(out);
}

// d x = d out (a copy is the identity).
void tt__backward_contiguous(tt_node *n) { tt__accum_grad_node(n->inputs[0], n, n->grad); }

tt_tensor *tt_clone(tt_tensor *x) {
    check_tensor(x, __func__);
    tt_tensor *out = tt__contiguous_copy(x);
    tt__record(out, TT_OP_CLONE, 1, &x, 0);
    return tt__autorelease(out);
}

// d x = d out.
void tt__backward_clone(tt_node *n) { tt__accum_grad_node(n->inputs[0], n, n->grad); }

tt_tensor *tt_to_dtype(tt_tensor *x, tt_dtype dtype) {
    check_tensor(x, __func__);
    SHAPE_CHECK(dtype >= 0 && dtype < TT_DTYPE_COUNT, __func__, "invalid dtype %d (use TT_F32, "
                "TT_F64, TT_I32, TT_I64 or TT_BOOL)", (int)dtype);
    tt_tensor *out = copy_as(x, dtype, x->ndim, x->shape);
    // Only float -> float is differentiable; an integer result does not require grad.
    if (tt_dtype_is_float(x->dtype) && tt_dtype_is_float(dtype))
        tt__record(out, TT_OP_TO_DTYPE, 1, &x, 0);
    return tt__autorelease(out);
}

// d x = d out converted back to x's dtype.
void tt__backward_to_dtype(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    tt_tensor *dx = copy_as(n->grad, x->dtype, x->ndim, x->shape);
    tt__accum_grad_owned(x, dx);
}

// ---- differentiable backwards (create_graph) ----
// Every shape op is linear: its differentiable backward is its first-order rule written with
// public ops on n->grad (which may itself require grad), so the gradient records its graph.

// g zero-padded along dim by (left, right) elements (tt_pad counts its pairs from the last dim).
static tt_tensor *pad_dim(tt_tensor *g, int dim, int64_t left, int64_t right) {
    int64_t pad[2 * TT_MAX_DIMS] = {0};
    int i = g->ndim - 1 - dim;
    pad[2 * i] = left, pad[2 * i + 1] = right;
    return tt_pad(g, 2 * (i + 1), pad, TT_PAD_CONSTANT, 0.0);
}

// For step > 1, g is first spread to span = (len - 1) step + 1 elements along dim, with step - 1
// zeros after each element: viewed as (outer, len, 1, inner), padded to (outer, len, step,
// inner), merged to (outer, len step, inner) and cut to span. Then g is padded by start before
// and size - start - span after.
tt_tensor *tt__place_strided(tt_tensor *g, int dim, int64_t start, int64_t step, int64_t size) {
    int64_t len = g->shape[dim], span = len;
    if (step > 1 && len > 1) {
        int64_t outer = 1, inner = 1, shape[TT_MAX_DIMS];
        for (int d = 0; d < g->ndim; d++) {
            shape[d] = g->shape[d];
            if (d < dim) outer *= g->shape[d];
            if (d > dim) inner *= g->shape[d];
        }
        span = (len - 1) * step + 1;
        shape[dim] = span;
        tt_tensor *t = pad_dim(tt_reshape(g, TT_SHAPE(outer, len, 1, inner)), 2, 0, step - 1);
        t = tt_narrow(tt_reshape(t, TT_SHAPE(outer, len * step, inner)), 1, 0, span);
        g = tt_reshape(t, g->ndim, shape);
    }
    return pad_dim(g, dim, start, size - start - span);
}

// d x = reshape(g, x's shape).
static void reshape2(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(x, tt_reshape(n->grad, x->ndim, x->shape));
}

// d x = transpose(g, d0, d1).
static void transpose2(tt_node *n) {
    const transpose_ctx *c = n->ctx;
    if (tt__input_needs_grad(n, 0))
        tt__accum_grad(n->inputs[0], tt_transpose(n->grad, c->d0, c->d1));
}

// d x = permute(g, inverse of dims).
static void permute2(tt_node *n) {
    const permute_ctx *c = n->ctx;
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(n->inputs[0], tt_permute(n->grad, c->inv));
}

// d x = zeros of x's shape with g at the sliced positions along dim.
static void slice2(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    const slice_ctx *c = n->ctx;
    if (tt__input_needs_grad(n, 0))
        tt__accum_grad(x, tt__place_strided(n->grad, c->dim, c->start, c->step, x->shape[c->dim]));
}

// d x = g summed over the expanded dims (the new leading ones and the size-1 ones).
static void expand2(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(x, tt__sum_to(n->grad, x));
}

// d x = unsqueeze(g, dim).
static void squeeze2(tt_node *n) {
    const dim_ctx *c = n->ctx;
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(n->inputs[0], tt_unsqueeze(n->grad, c->dim));
}

// d x = squeeze(g, dim).
static void unsqueeze2(tt_node *n) {
    const dim_ctx *c = n->ctx;
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(n->inputs[0], tt_squeeze(n->grad, c->dim));
}

// d xs[i] = narrow(g, dim, offset of xs[i], its size along dim).
static void cat2(tt_node *n) {
    const dim_ctx *c = n->ctx;
    int64_t off = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int64_t len = n->inputs[i]->shape[c->dim];
        if (tt__input_needs_grad(n, i))
            tt__accum_grad(n->inputs[i], tt_narrow(n->grad, c->dim, off, len));
        off += len;
    }
}

// d xs[i] = select(g, dim, i).
static void stack2(tt_node *n) {
    const dim_ctx *c = n->ctx;
    for (int i = 0; i < n->n_inputs; i++)
        if (tt__input_needs_grad(n, i)) tt__accum_grad(n->inputs[i], tt_select(n->grad, c->dim, i));
}

// d x = g (contiguous and clone are copies: the identity).
static void identity2(tt_node *n) {
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(n->inputs[0], n->grad);
}

// d x = to_dtype(g, x's dtype).
static void to_dtype2(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(x, tt_to_dtype(n->grad, x->dtype));
}

const tt__grad2_row tt__grad2_shape[] = {
    {TT_OP_RESHAPE, reshape2},     {TT_OP_TRANSPOSE, transpose2},
    {TT_OP_PERMUTE, permute2},     {TT_OP_SLICE, slice2},
    {TT_OP_EXPAND, expand2},       {TT_OP_SQUEEZE, squeeze2},
    {TT_OP_UNSQUEEZE, unsqueeze2}, {TT_OP_CAT, cat2},
    {TT_OP_STACK, stack2},         {TT_OP_CONTIGUOUS, identity2},
    {TT_OP_CLONE, identity2},      {TT_OP_TO_DTYPE, to_dtype2},
    {TT_OP_COUNT, NULL},
};

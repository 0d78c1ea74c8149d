// Layout ops: tril/triu, repeat/tile, flip, roll, pad, split/chunk/unbind, movedim, diagonal.
// All but two are compositions of the shape ops (slice, cat, reshape, permute, masked_fill), so
// their gradients come with them; flip (a copy) and diagonal (a view) are rows of ops.def.
// The creation functions (eye, linspace, one_hot) are in tensor/create.c.
#include "ops_shape.h"

#define LAYOUT_CHECK(cond, func, ...) TT_CHECK_IN(func, cond, __VA_ARGS__)

// ---- helpers ----

static int norm_dim(int dim, int ndim, const char *func) {
    int d = dim < 0 ? dim + ndim : dim;
    LAYOUT_CHECK(d >= 0 && d < ndim, func, "dim %d is out of range for a %d-d tensor (valid: "
                 "%d .. %d)", dim, ndim, -ndim, ndim - 1);
    return d;
}

static void check_x(const tt_tensor *x, const char *func) {
    LAYOUT_CHECK(x, func, "tensor is NULL");
}

// ---- tril / triu: masked_fill with a constant (R, C) mask ----

// mask[i][j] = 1 where the element is zeroed: j - i > k (tril) or j - i < k (triu).
static tt_tensor *tri(tt_tensor *x, int64_t k, bool lower, const char *func) {
    check_x(x, func);
    LAYOUT_CHECK(x->ndim >= 2, func, "x %s must have at least 2 dims (..., rows, cols)",
                 tt__shape(x));
    int64_t R = x->shape[x->ndim - 2], C = x->shape[x->ndim - 1];
    tt_tensor *mask = tt_zeros(TT_I32, TT_SHAPE(R, C));  // (R, C)
    int32_t *m = tt_data(mask);
    for (int64_t i = 0; i < R; i++)
        for (int64_t j = 0; j < C; j++) m[i * C + j] = lower ? j - i > k : j - i < k;
    return tt_masked_fill(x, mask, 0.0);
}

tt_tensor *tt_tril(tt_tensor *x, int64_t k) { return tri(x, k, true, __func__); }
tt_tensor *tt_triu(tt_tensor *x, int64_t k) { return tri(x, k, false, __func__); }

// ---- repeat / tile: cat of copies along each repeated dim ----

tt_tensor *tt_repeat(tt_tensor *x, int ndim, const int64_t *reps) {
    check_x(x, __func__);
    LAYOUT_CHECK(ndim >= x->ndim && ndim <= TT_MAX_DIMS, __func__, "%d repeat counts for x "
                 "%s: need at least one per dim (%d) and at most %d (use tt_tile to repeat "
                 "only the last dims)", ndim, tt__shape(x), x->ndim, TT_MAX_DIMS);
    LAYOUT_CHECK(ndim == 0 || reps, __func__, "reps is NULL for %d counts", ndim);
    for (int i = 0; i < ndim; i++)
        LAYOUT_CHECK(reps[i] >= 0, __func__, "repeat counts must be >= 0, got %lld for dim %d",
                     (long long)reps[i], i);
    int64_t shape[TT_MAX_DIMS] = {0};
    int lead = ndim - x->ndim;
    for (int i = 0; i < ndim; i++) shape[i] = i < lead ? 1 : x->shape[i - lead];
    tt_tensor *y = tt_reshape(x, ndim, shape);
    tt_tensor **copies = TT_MALLOC(sizeof(tt_tensor *) * 1);
    for (int d = 0; d < ndim; d++) {
        if (reps[d] == 1) continue;
        if (reps[d] == 0) {
            y = tt_narrow(y, d, 0, 0);
            continue;
        }
        LAYOUT_CHECK(reps[d] <= 1 << 20, __func__, "repeat count %lld for dim %d is too large "
                     "(at most %d)", (long long)reps[d], d, 1 << 20);
        copies = TT_REALLOC(copies, sizeof(tt_tensor *) * (size_t)reps[d]);
        for (int64_t r = 0; r < reps[d]; r++) copies[r] = y;
        y = tt_cat((int)reps[d], copies, d);
    }
    tt_free(copies);
    return y == x ? tt_clone(x) : (y->storage == x->storage ? tt_clone(y) : y);
}

tt_tensor *tt_tile(tt_tensor *x, int ndim, const int64_t *reps) {
    check_x(x, __func__);
    LAYOUT_CHECK(ndim >= 0 && ndim <= TT_MAX_DIMS, __func__, "%d repeat counts: at most %d",
                 ndim, TT_MAX_DIMS);
    LAYOUT_CHECK(ndim == 0 || reps, __func__, "reps is NULL for %d counts", ndim);
    if (ndim >= x->ndim) return tt_repeat(x, ndim, reps);
    int64_t full[TT_MAX_DIMS];
    int lead = x->ndim - ndim;
    for (int i = 0; i < x->ndim; i++) full[i] = i < lead ? 1 : reps[i - lead];
    return tt_repeat(x, x->ndim, full);
}

// ---- flip: a copy read through a view with negated strides ----

typedef struct flip_ctx {
    bool flip[TT_MAX_DIMS];
} flip_ctx;

// Unscoped view of t with the dims in `flip` reversed.
static tt_tensor *flipped_view(const tt_tensor *t, const bool *flip) {
    int64_t stride[TT_MAX_DIMS], offset = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        stride[i] = flip[i] ? -t->stride[i] : t->stride[i];
        if (flip[i] && t->shape[i] > 0) offset += (t->shape[i] - 1) * t->stride[i];
    }
    return tt__new_view(t, t->ndim, t->shape, stride, offset);
}

static tt_tensor *flip_copy(const tt_tensor *x, const bool *flip) {
    tt_tensor *v = flipped_view(x, flip);
    tt_tensor *out = tt__new(x->dtype, x->ndim, x->shape);
    tt_copy_(out, v);
    tt_release(v);
    return out;
}

tt_tensor *tt_flip(tt_tensor *x, int ndims, const int *dims) {
    check_x(x, __func__);
    LAYOUT_CHECK(ndims >= 0 && (ndims == 0 || dims), __func__, "dims is NULL for %d dims",
                 ndims);
    bool flip[TT_MAX_DIMS] = {false};
    for (int i = 0; i < ndims; i++) {
        int d = norm_dim(dims[i], x->ndim, __func__);
        LAYOUT_CHECK(!flip[d], __func__, "dim %d appears more than once in dims", d);
        flip[d] = true;
    }
    tt_tensor *out = flip_copy(x, flip);
    flip_ctx *c = tt__record(out, TT_OP_FLIP, 1, &x, sizeof *c);
    if (c)
        for (int i = 0; i < TT_MAX_DIMS; i++) c->flip[i] = flip[i];
    return tt__autorelease(out);
}

// d x = flip(d out): a flip is its own inverse.
void tt__backward_flip(tt_node *n) {
    const flip_ctx *c = n->ctx;
    tt__accum_grad_owned(n->inputs[0], flip_copy(n->grad, c->flip));
}

// ---- roll: cat of the two slices ----

tt_tensor *tt_roll(tt_tensor *x, int64_t shift, int dim) {
    check_x(x, __func__);
    LAYOUT_CHECK(x->ndim > 0, __func__, "cannot roll a 0-dim tensor along dim %d", dim);
    int d = norm_dim(dim, x->ndim, __func__);
    int64_t n = x->shape[d];
    int64_t s = n > 0 ? ((shift % n) + n) % n : 0;
    if (s == 0) return tt_clone(x);
    tt_tensor *parts[2] = {tt_narrow(x, d, n - s, s), tt_narrow(x, d, 0, n - s)};
    return tt_cat(2, parts, d);
}

// torch.roll with dims=None: the flattened x rolled, then given x's shape back.
tt_tensor *tt_roll_flat(tt_tensor *x, int64_t shift) {
    check_x(x, __func__);
    tt_scope_begin();
    tt_tensor *y = tt_reshape(tt_roll(tt_flatten(x, 0, -1), shift, 0), x->ndim, x->shape);
    tt_keep(y);
    tt_scope_end();
    return y;
}

tt_tensor *tt_roll_dims(tt_tensor *x, int n, const int64_t *shifts, const int *dims) {
    check_x(x, __func__);
    LAYOUT_CHECK(n >= 1 && shifts && dims, __func__, "need n >= 1 shifts and dims, got n=%d",
                 n);
    tt_tensor *y = x;
    for (int i = 0; i < n; i++) y = tt_roll(y, shifts[i], dims[i]);
    return y;
}

// ---- pad: narrow (negative sizes), cat with filled blocks or mirrored slices ----

tt_tensor *tt_pad(tt_tensor *x, int npad, const int64_t *pad, tt_pad_mode mode, double value) {
    check_x(x, __func__);
    LAYOUT_CHECK(npad >= 0 && npad % 2 == 0 && npad / 2 <= x->ndim, __func__, "pad has %d "
                 "sizes for x %s: need an even count, two (left, right) per dim from the last, "
                 "at most %d", npad, tt__shape(x), 2 * x->ndim);
    LAYOUT_CHECK(npad == 0 || pad, __func__, "pad is NULL for %d sizes", npad);
    LAYOUT_CHECK(mode == TT_PAD_CONSTANT || mode == TT_PAD_REFLECT, __func__,
                 "unknown pad mode %d (TT_PAD_CONSTANT or TT_PAD_REFLECT)", (int)mode);
    tt_tensor *y = x;
    for (int i = 0; i < npad / 2; i++) {
        int d = x->ndim - 1 - i;
        int64_t l = pad[2 * i], r = pad[2 * i + 1], n = y->shape[d];
        if (mode == TT_PAD_REFLECT) {
            LAYOUT_CHECK(l >= 0 && r >= 0 && l < n && r < n, __func__, "reflect padding "
                         "(%lld, %lld) of dim %d of x %s: each size must be in [0, %lld] (less "
                         "than the dim's size)", (long long)l, (long long)r, d, tt__shape(x),
                         (long long)(n - 1));
            if (l == 0 && r == 0) continue;
            // x[l], ..., x[1] on the left and x[n-2], ..., x[n-1-r] on the right.
            tt_tensor *parts[3] = {tt_flip(tt_narrow(y, d, 1, l), TT_DIMS(d)), y,
                                   tt_flip(tt_narrow(y, d, n - 1 - r, r), TT_DIMS(d))};
            y = tt_cat(3, parts, d);
            continue;
        }
        int64_t size;
        LAYOUT_CHECK(l != INT64_MIN && r != INT64_MIN && !__builtin_add_overflow(l, r, &size) &&
                         !__builtin_add_overflow(size, n, &size), __func__, "padding (%lld, "
                     "%lld) of dim %d of x %s overflows int64", (long long)l, (long long)r, d,
                     tt__shape(x));
        LAYOUT_CHECK(size >= 0, __func__, "padding (%lld, %lld) of dim %d of x %s leaves "
                     "a negative size %lld", (long long)l, (long long)r, d, tt__shape(x),
                     (long long)size);
        if (l < 0) y = tt_narrow(y, d, -l, n + l), n += l, l = 0;
        if (r < 0) y = tt_narrow(y, d, 0, n + r), n += r, r = 0;
        if (l == 0 && r == 0) continue;
        int64_t shape[TT_MAX_DIMS];
        for (int k = 0; k < y->ndim; k++) shape[k] = y->shape[k];
        shape[d] = l;
        tt_tensor *left = tt_full(y->dtype, y->ndim, shape, value);
        shape[d] = r;
        tt_tensor *parts[3] = {left, y, tt_full(y->dtype, y->ndim, shape, value)};
        y = tt_cat(3, parts, d);
    }
    return y == x ? tt_clone(x) : (y->storage == x->storage ? tt_clone(y) : y);
}

// ---- split / chunk / unbind: narrowed views ----

int tt_split(tt_tensor *x, int64_t split_size, int dim, tt_tensor **out, int cap) {
    check_x(x, __func__);
    LAYOUT_CHECK(x->ndim > 0, __func__, "cannot split a 0-dim tensor");
    int d = norm_dim(dim, x->ndim, __func__);
    int64_t n = x->shape[d];
    LAYOUT_CHECK(split_size > 0 || (split_size == 0 && n == 0), __func__, "split_size must be "
                 "> 0 (0 only for an empty dim), got %lld for dim %d of x %s",
                 (long long)split_size, d, tt__shape(x));
    int64_t count = n == 0 ? 1 : (n + split_size - 1) / split_size;
    if (!out && cap == 0) return (int)count;
    LAYOUT_CHECK(out && count <= cap, __func__, "splitting dim %d of x %s into pieces of %lld "
                 "gives %lld tensors but out holds %d (size out with tt_split(x, %lld, "
                 "%d, NULL, 0))", d, tt__shape(x), (long long)split_size, (long long)count, cap,
                 (long long)split_size, dim);
    for (int64_t i = 0; i < count; i++) {
        int64_t start = i * split_size, len = n - start < split_size ? n - start : split_size;
        out[i] = tt_narrow(x, d, start, len);
    }
    return (int)count;
}

void tt_split_sizes(tt_tensor *x, int n, const int64_t *sizes, int dim, tt_tensor **out) {
    check_x(x, __func__);
    LAYOUT_CHECK(x->ndim > 0, __func__, "cannot split a 0-dim tensor");
    int d = norm_dim(dim, x->ndim, __func__);
    LAYOUT_CHECK(n >= 1 && sizes && out, __func__, "need n >= 1 sizes and an out array, got "
                 "n=%d", n);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        LAYOUT_CHECK(sizes[i] >= 0, __func__, "split sizes must be >= 0, got %lld at %d",
                     (long long)sizes[i], i);
        total += sizes[i];
    }
    LAYOUT_CHECK(total == x->shape[d], __func__, "split sizes sum to %lld but dim %d of x %s "
                 "has %lld elements; they must match", (long long)total, d, tt__shape(x),
                 (long long)x->shape[d]);
    for (int64_t i = 0, start = 0; i < n; start += sizes[i], i++)
        out[i] = tt_narrow(x, d, start, sizes[i]);
}

int tt_chunk(tt_tensor *x, int chunks, int dim, tt_tensor **out) {
    check_x(x, __func__);
    LAYOUT_CHECK(chunks > 0, __func__, "chunks must be > 0, got %d", chunks);
    LAYOUT_CHECK(x->ndim > 0, __func__, "cannot chunk a 0-dim tensor");
    int d = norm_dim(dim, x->ndim, __func__);
    int64_t size = (x->shape[d] + chunks - 1) / chunks;
    if (size == 0) {  // an empty dim: `chunks` empty pieces, as PyTorch's chunk
        for (int i = 0; i < chunks; i++) out[i] = tt_narrow(x, d, 0, 0);
        return chunks;
    }
    return tt_split(x, size, d, out, chunks);
}

int tt_unbind(tt_tensor *x, int dim, tt_tensor **out, int cap) {
    check_x(x, __func__);
    LAYOUT_CHECK(x->ndim > 0, __func__, "cannot unbind a 0-dim tensor");
    int d = norm_dim(dim, x->ndim, __func__);
    int64_t n = x->shape[d];
    LAYOUT_CHECK(n <= cap && (out || n == 0), __func__, "unbinding dim %d of x %s gives %lld "
                 "tensors but out holds %d", d, tt__shape(x), (long long)n, cap);
    for (int64_t i = 0; i < n; i++) out[i] = tt_squeeze(tt_narrow(x, d, i, 1), d);
    return (int)n;
}

// ---- movedim: a permute ----

tt_tensor *tt_movedim(tt_tensor *x, int src, int dst) {
    check_x(x, __func__);
    int s = norm_dim(src, x->ndim, __func__), t = norm_dim(dst, x->ndim, __func__);
    int perm[TT_MAX_DIMS];
    for (int i = 0, k = 0; i < x->ndim; i++) {
        if (i == t) {
            perm[i] = s;
            continue;
        }
        if (k == s) k++;
        perm[i] = k++;
    }
    return tt_permute(x, perm);
}

// perm[dst[i]] = src[i]; the other dims keep their order in the positions left free.
tt_tensor *tt_movedim_n(tt_tensor *x, int n, const int *src, const int *dst) {
    check_x(x, __func__);
    int nd = x->ndim;
    LAYOUT_CHECK(n >= 0 && n <= nd && (n == 0 || (src && dst)), __func__, "need 0 <= n <= %d "
                 "(x %s) with n entries in src and dst, got n=%d%s", nd, tt__shape(x), n,
                 n > 0 && !(src && dst) ? " and a NULL list" : "");
    int perm[TT_MAX_DIMS];
    bool from[TT_MAX_DIMS] = {false}, to[TT_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int s = norm_dim(src[i], nd, __func__), t = norm_dim(dst[i], nd, __func__);
        LAYOUT_CHECK(!from[s], __func__, "src lists dim %d twice; each dim moves once", s);
        LAYOUT_CHECK(!to[t], __func__, "dst lists dim %d twice; each position takes one dim", t);
        from[s] = to[t] = true;
        perm[t] = s;
    }
    for (int t = 0, k = 0; t < nd; t++) {
        if (to[t]) continue;
        while (from[k]) k++;
        perm[t] = k++;
    }
    return tt_permute(x, perm);
}

// ---- diagonal: a view with stride s1 + s2 ----

typedef struct diagonal_ctx {
    int64_t offset;
    int d1, d2;
} diagonal_ctx;

// Unscoped view of t's diagonal (d1, d2 removed, the diagonal appended).
static tt_tensor *diagonal_view(const tt_tensor *t, int64_t offset, int d1, int d2) {
    int64_t n1 = t->shape[d1], n2 = t->shape[d2];
    int64_t len = offset >= 0 ? (n1 < n2 - offset ? n1 : n2 - offset)
                              : (n1 + offset < n2 ? n1 + offset : n2);
    if (len < 0) len = 0;
    int64_t start = t->offset;
    if (len > 0) start += offset >= 0 ? offset * t->stride[d2] : -offset * t->stride[d1];
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d1 || i == d2) continue;
        shape[k] = t->shape[i], stride[k] = t->stride[i], k++;
    }
    shape[k] = len, stride[k] = t->stride[d1] + t->stride[d2];
    return tt__new_view(t, k + 1, shape, stride, start);
}

tt_tensor *tt_diagonal(tt_tensor *x, int64_t offset, int dim1, int dim2) {
    check_x(x, __func__);
    LAYOUT_CHECK(x->ndim >= 2, __func__, "x %s must have at least 2 dims", tt__shape(x));
    int d1 = norm_dim(dim1, x->ndim, __func__), d2 = norm_dim(dim2, x->ndim, __func__);
    LAYOUT_CHECK(d1 != d2, __func__, "dim1 and dim2 are both dim %d; they must differ", d1);
    tt_tensor *out = diagonal_view(x, offset, d1, d2);
    diagonal_ctx *c = tt__record(out, TT_OP_DIAGONAL, 1, &x, sizeof *c);
    if (c) c->offset = offset, c->d1 = d1, c->d2 = d2;
    return tt__autorelease(out);
}

// d x = zeros with d out written onto the same diagonal.
void tt__backward_diagonal(tt_node *n) {
    tt_tensor *x = n->inputs[0];
    const diagonal_ctx *c = n->ctx;
    tt_tensor *dx = tt__grad_buffer(x);
    if (!dx) return;
    tt_tensor *v = diagonal_view(dx, c->offset, c->d1, c->d2);
    tt_copy_(v, n->grad);
    tt_release(v);
    tt__accum_grad_owned(x, dx);
}

// ---- differentiable backwards (create_graph) ----
// flip and diagonal are linear: their first-order rules written with public ops on n->grad.

// d x = flip(g, the same dims).
static void flip2(tt_node *n) {
    const flip_ctx *c = n->ctx;
    if (!tt__input_needs_grad(n, 0)) return;
    int dims[TT_MAX_DIMS], nd = 0;
    for (int d = 0; d < n->ndim; d++)
        if (c->flip[d]) dims[nd++] = d;
    tt__accum_grad(n->inputs[0], tt_flip(n->grad, nd, dims));
}

// d x = zeros of x's shape with g (others..., len) on the diagonal: with x's dims permuted to
// (others..., n1, n2) and the last two flattened, diagonal element k sits at p0 + k (n2 + 1)
// (p0 = offset, or -offset n2 below the main diagonal), so it is a slice's gradient there
// (tt__place_strided), reshaped to (others..., n1, n2) and permuted back.
static void diagonal2(tt_node *n) {
    tt_tensor *x = n->inputs[0], *g = n->grad;
    const diagonal_ctx *c = n->ctx;
    if (!tt__input_needs_grad(n, 0)) return;
    int nd = x->ndim, perm[TT_MAX_DIMS], inv[TT_MAX_DIMS], k = 0;
    for (int d = 0; d < nd; d++)
        if (d != c->d1 && d != c->d2) perm[k++] = d;
    perm[nd - 2] = c->d1, perm[nd - 1] = c->d2;
    int64_t shape[TT_MAX_DIMS];  // x's shape permuted
    for (int i = 0; i < nd; i++) inv[perm[i]] = i, shape[i] = x->shape[perm[i]];
    int64_t n1 = shape[nd - 2], n2 = shape[nd - 1], len = g->shape[nd - 2];
    int64_t p0 = len == 0 ? 0 : c->offset >= 0 ? c->offset : -c->offset * n2;
    tt_tensor *flat = tt__place_strided(g, nd - 2, p0, n2 + 1, n1 * n2);  // (others..., n1 n2)
    tt__accum_grad(x, tt_permute(tt_reshape(flat, nd, shape), inv));
}

const tt__grad2_row tt__grad2_layout[] = {
    {TT_OP_FLIP, flip2},
    {TT_OP_DIAGONAL, diagonal2},
    {TT_OP_COUNT, NULL},
};

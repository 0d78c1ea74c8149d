// Indexing, sorting and scan kernels (index.h). The per-dtype kernels are written once in
// index.inc and included below once per dtype with their names spelled out; the dispatchers
// and the dtype-free sort are here.
#include "index.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../tensor_internal.h"

// ---- helpers ----

static inline int64_t load_index(const void *index, tt_dtype it, int64_t i) {
    return it == TT_I32 ? (int64_t)((const int32_t *)index)[i] : ((const int64_t *)index)[i];
}

// Advances the multi-index pos over shape (row-major), skipping `skip` (-1: none). Returns
// false after the last position.
static bool next_pos(int64_t *pos, int ndim, const int64_t *shape, int skip) {
    for (int d = ndim - 1; d >= 0; d--) {
        if (d == skip) continue;
        if (++pos[d] < shape[d]) return true;
        pos[d] = 0;
    }
    return false;
}

static int64_t dot(const int64_t *pos, const int64_t *stride, int ndim) {
    int64_t o = 0;
    for (int d = 0; d < ndim; d++) o += pos[d] * stride[d];
    return o;
}

static bool any_empty(int ndim, const int64_t *shape) {
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0) return true;
    return false;
}

// ---- per-dtype kernels ----

#define T float
#define GATHER gather_f32
#define SCATTER scatter_f32
#define SCATTER_ADD scatter_add_f32
#define CUMSUM cumsum_f32
#define CUMPROD cumprod_f32
#define CUMPROD_BACKWARD cumprod_backward_f32
#include "index.inc"

#define T double
#define GATHER gather_f64
#define SCATTER scatter_f64
#define SCATTER_ADD scatter_add_f64
#define CUMSUM cumsum_f64
#define CUMPROD cumprod_f64
#define CUMPROD_BACKWARD cumprod_backward_f64
#include "index.inc"

// Integer and bool data: the copies, and scatter-add wrapping around on overflow as PyTorch's
// integers do (the sum in unsigned arithmetic, converted back: two's complement, no UB); a
// bool sum is logical or (True + True is True). The scans of integers are in ops_index.c.
static inline int32_t add_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static inline int64_t add_i64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

#define T int32_t
#define ADD add_i32
#define GATHER gather_i32
#define SCATTER scatter_i32
#define SCATTER_ADD scatter_add_i32
#include "index.inc"

#define T int64_t
#define ADD add_i64
#define GATHER gather_i64
#define SCATTER scatter_i64
#define SCATTER_ADD scatter_add_i64
#include "index.inc"

#define T uint8_t
#define ADD(a, b) ((uint8_t)((a) | (b)))
#define GATHER gather_bool
#define SCATTER scatter_bool
#define SCATTER_ADD scatter_add_bool
#include "index.inc"

// ---- dispatch ----

void tt_k_gather(void *out, const int64_t *ostride, const void *x, const int64_t *xstride,
                 const void *index, const int64_t *istride, tt_dtype it, tt_dtype dt,
                 int ndim, const int64_t *shape, int dim) {
    switch (dt) {
        case TT_F32:
            gather_f32(out, ostride, x, xstride, index, istride, it, ndim, shape, dim);
            break;
        case TT_F64:
            gather_f64(out, ostride, x, xstride, index, istride, it, ndim, shape, dim);
            break;
        case TT_I32:
            gather_i32(out, ostride, x, xstride, index, istride, it, ndim, shape, dim);
            break;
        case TT_I64:
            gather_i64(out, ostride, x, xstride, index, istride, it, ndim, shape, dim);
            break;
        default: gather_bool(out, ostride, x, xstride, index, istride, it, ndim, shape, dim); break;
    }
}

void tt_k_scatter(void *out, const int64_t *ostride, const void *src, const int64_t *sstride,
                  const void *index, const int64_t *istride, tt_dtype it, tt_dtype dt, int ndim,
                  const int64_t *shape, int dim) {
    switch (dt) {
        case TT_F32:
            scatter_f32(out, ostride, src, sstride, index, istride, it, ndim, shape, dim);
            break;
        case TT_F64:
            scatter_f64(out, ostride, src, sstride, index, istride, it, ndim, shape, dim);
            break;
        case TT_I32:
            scatter_i32(out, ostride, src, sstride, index, istride, it, ndim, shape, dim);
            break;
        case TT_I64:
            scatter_i64(out, ostride, src, sstride, index, istride, it, ndim, shape, dim);
            break;
        default:
            scatter_bool(out, ostride, src, sstride, index, istride, it, ndim, shape, dim);
            break;
    }
}

void tt_k_scatter_add(void *out, const int64_t *ostride, const void *src,
                      const int64_t *sstride, const void *index, const int64_t *istride,
                      tt_dtype it, tt_dtype dt, int ndim, const int64_t *shape, int dim) {
    switch (dt) {
        case TT_F32:
            scatter_add_f32(out, ostride, src, sstride, index, istride, it, ndim, shape, dim);
            break;
        case TT_F64:
            scatter_add_f64(out, ostride, src, sstride, index, istride, it, ndim, shape, dim);
            break;
        case TT_I32:
            scatter_add_i32(out, ostride, src, sstride, index, istride, it, ndim, shape, dim);
            break;
        case TT_I64:
            scatter_add_i64(out, ostride, src, sstride, index, istride, it, ndim, shape, dim);
            break;
        default:
            scatter_add_bool(out, ostride, src, sstride, index, istride, it, ndim, shape, dim);
            break;
    }
}

void tt_k_cumsum(void *out, const void *x, const int64_t *xstride, bool reverse, tt_dtype dt,
                 int ndim, const int64_t *shape, int dim) {
    if (dt == TT_F32) cumsum_f32(out, x, xstride, reverse, ndim, shape, dim);
    else cumsum_f64(out, x, xstride, reverse, ndim, shape, dim);
}

void tt_k_cumprod(void *out, const void *x, const int64_t *xstride, tt_dtype dt, int ndim,
                  const int64_t *shape, int dim) {
    if (dt == TT_F32) cumprod_f32(out, x, xstride, ndim, shape, dim);
    else cumprod_f64(out, x, xstride, ndim, shape, dim);
}

void tt_k_cumprod_backward(void *dx, const void *x, const int64_t *xstride, const void *g,
                           tt_dtype dt, int ndim, const int64_t *shape, int dim) {
    if (dt == TT_F32) cumprod_backward_f32(dx, x, xstride, g, ndim, shape, dim);
    else cumprod_backward_f64(dx, x, xstride, g, ndim, shape, dim);
}

// ---- sort ----
// A merge sort of (value, position) pairs: stable by construction. f32 values widen exactly.

typedef struct sort_item {
    double v;
    int64_t i;
} sort_item;

// a comes strictly before b (NaN above every number)
static bool before(const sort_item *a, const sort_item *b, bool descending) {
    bool an = isnan(a->v), bn = isnan(b->v);
    if (an || bn) return descending ? an && !bn : bn && !an;
    return descending ? a->v > b->v : a->v < b->v;
}

static void merge_sort(sort_item *a, sort_item *tmp, int64_t n, bool descending) {
    if (n < 2) return;
    int64_t h = n / 2;
    merge_sort(a, tmp, h, descending);
    merge_sort(a + h, tmp, n - h, descending);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = before(&a[j], &a[i], descending) ? a[j++] : a[i++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, (size_t)n * sizeof *a);
}

void tt_k_sort_indices(int64_t *out, const void *x, const int64_t *xstride, bool descending,
                       tt_dtype dt, int ndim, const int64_t *shape, int dim) {
    if (any_empty(ndim, shape)) return;
    int64_t L = shape[dim], ostride[TT_MAX_DIMS], pos[TT_MAX_DIMS] = {0};
    tt__contiguous_strides(ndim, shape, ostride);
    sort_item *items = TT_MALLOC(2 * (size_t)L * sizeof *items), *tmp = items + L;
    do {
        int64_t xo = dot(pos, xstride, ndim), oo = dot(pos, ostride, ndim);
        for (int64_t i = 0; i < L; i++)
            items[i] = (sort_item){tt__load(x, dt, xo + i * xstride[dim]), i};
        merge_sort(items, tmp, L, descending);
        for (int64_t i = 0; i < L; i++) out[oo + i * ostride[dim]] = items[i].i;
    } while (next_pos(pos, ndim, shape, dim));
    tt_free(items);
}

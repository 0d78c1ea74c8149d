// Tensor creation (empty, zeros, ones, full, arange, from data, *_like) and in-place fill.
// Random creation is in rng.c.
#include "tensor_internal.h"

#include <math.h>
#include <string.h>

// An integer tensor takes value only when it converts without overflow (PyTorch's rule; a
// fraction is truncated toward zero, NaN and infinities never fit). A bool takes anything.
static void check_fits(const char *func, tt_dtype dtype, double value) {
    bool fits = dtype == TT_I32   ? value > -2147483649.0 && value < 2147483648.0
                : dtype == TT_I64 ? value >= -9223372036854775808.0 &&
                                        value < 9223372036854775808.0
                                  : true;
    TT_CHECK_IN(func, fits, "value %g cannot be converted to %s without overflow; pass a value "
                "in the dtype's range", value, tt_dtype_name(dtype));
}

tt_tensor *tt_fill_(tt_tensor *t, double value) {
    check_fits("tt_fill_", t->dtype, value);
    tt_bump_version(t, "fill_");
    if (tt_is_contiguous(t) && t->dtype == TT_F32) {
        float *p = tt_data(t), v = (float)value;
        for (int64_t i = 0, n = tt_numel(t); i < n; i++) p[i] = v;
        return t;
    }
    const int64_t *strides[1] = {t->stride};
    tt__iter it;
    if (!tt__iter_init(&it, t->ndim, t->shape, 1, strides, &t->offset)) return t;
    void *base = tt__base(t);
    do {
        for (int64_t i = 0; i < it.inner; i++)
            tt__store(base, t->dtype, it.off[0] + i * it.istride[0], value);
    } while (tt__iter_next(&it));
    return t;
}

tt_tensor *tt_empty(tt_dtype dtype, int ndim, const int64_t *shape) {
    tt__check_shape(__func__, dtype, ndim, shape);
    return tt__autorelease(tt__new(dtype, ndim, shape));
}

tt_tensor *tt_zeros(tt_dtype dtype, int ndim, const int64_t *shape) {
    tt__check_shape(__func__, dtype, ndim, shape);
    return tt__autorelease(tt__new_zeros(dtype, ndim, shape));
}

tt_tensor *tt_ones(tt_dtype dtype, int ndim, const int64_t *shape) {
    tt__check_shape(__func__, dtype, ndim, shape);
    return tt_full(dtype, ndim, shape, 1.0);
}

tt_tensor *tt_full(tt_dtype dtype, int ndim, const int64_t *shape, double value) {
    tt__check_shape(__func__, dtype, ndim, shape);
    check_fits(__func__, dtype, value);
    return tt__autorelease(tt_fill_(tt__new(dtype, ndim, shape), value));
}

tt_tensor *tt_scalar(tt_dtype dtype, double value) { return tt_full(dtype, 0, NULL, value); }

tt_tensor *tt_arange(tt_dtype dtype, double start, double end, double step) {
    TT_CHECK(step != 0 && isfinite(step) && isfinite(start) && isfinite(end),
             "need finite start/end and a non-zero step, got start=%g end=%g step=%g",
             start, end, step);
    double count = ceil((end - start) / step);
    TT_CHECK(count < 0x1p62, "arange(%g, %g, %g) would have %g elements; no tensor can be that "
             "large", start, end, step, count);
    int64_t n = count > 0 ? (int64_t)count : 0;
    tt_tensor *t = tt__new(dtype, 1, (int64_t[]){n});
    for (int64_t i = 0; i < n; i++) tt__store(tt__base(t), dtype, i, start + (double)i * step);
    return tt__autorelease(t);
}

tt_tensor *tt_from_data(tt_dtype dtype, int ndim, const int64_t *shape, const void *data) {
    tt__check_shape(__func__, dtype, ndim, shape);
    tt_tensor *t = tt__new(dtype, ndim, shape);
    size_t nbytes = (size_t)tt_numel(t) * tt_dtype_size(dtype);
    TT_CHECK(data || nbytes == 0, "data is NULL for a tensor of shape %s", tt__shape(t));
    if (nbytes) memcpy(t->storage->data, data, nbytes);
    return tt__autorelease(t);
}

tt_tensor *tt_empty_like(const tt_tensor *t) { return tt_empty(t->dtype, t->ndim, t->shape); }
tt_tensor *tt_zeros_like(const tt_tensor *t) { return tt_zeros(t->dtype, t->ndim, t->shape); }
tt_tensor *tt_ones_like(const tt_tensor *t) { return tt_ones(t->dtype, t->ndim, t->shape); }
tt_tensor *tt_full_like(const tt_tensor *t, double value) {
    TT_CHECK(t, "t is NULL");
    return tt_full(t->dtype, t->ndim, t->shape, value);
}

// ---- eye, linspace, one_hot ----

tt_tensor *tt_eye(tt_dtype dtype, int64_t n, int64_t m) {
    TT_CHECK(n >= 0 && m >= 0, "need n >= 0 and m >= 0, got n=%lld m=%lld", (long long)n,
             (long long)m);
    tt_tensor *t = tt__new_zeros(dtype, 2, (int64_t[]){n, m});
    for (int64_t i = 0; i < n && i < m; i++) tt__store(tt__base(t), dtype, i * m + i, 1.0);
    return tt__autorelease(t);
}

// PyTorch's LinspaceKernel (aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp): the two halves
// are computed from their own end so that both endpoints are exact. PyTorch's build contracts
// start + step * i into a fused multiply-add (its f32 values show it), so fma here too.
tt_tensor *tt_linspace(tt_dtype dtype, double start, double end, int64_t steps) {
    TT_CHECK(steps >= 0, "number of steps must be non-negative, got %lld", (long long)steps);
    TT_CHECK(isfinite(start) && isfinite(end), "need finite start and end, got %g and %g",
             start, end);
    tt_tensor *t = tt__new(dtype, 1, (int64_t[]){steps});
    void *base = tt__base(t);
    int64_t half = steps / 2;
    if (steps == 1) {  // PyTorch fills start
        tt__store(base, dtype, 0, dtype == TT_F64 || dtype == TT_F32 ? start : trunc(start));
    } else if (dtype == TT_F32) {
        float s = (float)start, e = (float)end;
        float step = steps > 1 ? (e - s) / (float)(steps - 1) : 0.0f;
        float *p = base;
        for (int64_t i = 0; i < steps; i++)
            p[i] = i < half ? fmaf(step, (float)i, s) : fmaf(-step, (float)(steps - i - 1), e);
    } else {
        if (dtype != TT_F64) start = trunc(start), end = trunc(end);  // scalar_t's start, end
        double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0.0;
        for (int64_t i = 0; i < steps; i++) {
            double v = i < half ? fma(step, (double)i, start)
                                : fma(-step, (double)(steps - i - 1), end);
            tt__store(base, dtype, i, dtype == TT_F64 ? v : trunc(v));
        }
    }
    return tt__autorelease(t);
}

tt_tensor *tt_one_hot(const tt_tensor *indices, int64_t num_classes) {
    TT_CHECK(indices, "indices is NULL");
    TT_CHECK(indices->dtype == TT_I32 || indices->dtype == TT_I64,
             "indices must be TT_I32 or TT_I64 (class indices), got %s",
             tt_dtype_name(indices->dtype));
    TT_CHECK(indices->ndim < TT_MAX_DIMS, "indices %s already has %d dims; the result would "
             "have more than %d", tt__shape(indices), indices->ndim, TT_MAX_DIMS);
    int64_t n = tt_numel(indices), lo = 0, hi = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)tt_at(indices, i);
        if (i == 0 || v < lo) lo = v;
        if (i == 0 || v > hi) hi = v;
    }
    TT_CHECK(num_classes >= 0 || num_classes == -1, "num_classes must be >= 0 or -1 (the "
             "largest index + 1), got %lld", (long long)num_classes);
    TT_CHECK(num_classes >= 0 || n > 0, "cannot infer num_classes (-1) from empty indices %s; "
             "pass num_classes", tt__shape(indices));
    TT_CHECK(n == 0 || lo >= 0, "class values must be non-negative, got %lld", (long long)lo);
    if (num_classes < 0) num_classes = hi + 1;
    TT_CHECK(n == 0 || hi < num_classes, "class values must be smaller than num_classes = %lld, "
             "got %lld", (long long)num_classes, (long long)hi);
    int64_t shape[TT_MAX_DIMS];
    for (int i = 0; i < indices->ndim; i++) shape[i] = indices->shape[i];
    shape[indices->ndim] = num_classes;
    tt_tensor *t = tt__new_zeros(TT_I64, indices->ndim + 1, shape);
    int64_t *p = tt__base(t);
    for (int64_t i = 0; i < n; i++) p[i * num_classes + (int64_t)tt_at(indices, i)] = 1;
    return tt__autorelease(t);
}

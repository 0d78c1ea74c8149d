// Tensor creation (empty, zeros, ones, full, arange, from data, *_like) and in-place fill.
// Random creation is in rng.c.
#include "tensor_internal.h"

#include <math.h>
#include <string.h>

tt_tensor *tt_fill_(tt_tensor *t, double value) {
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
    return tt__autorelease(tt_fill_(tt__new(dtype, ndim, shape), value));
}

tt_tensor *tt_scalar(tt_dtype dtype, double value) { return tt_full(dtype, 0, NULL, value); }

tt_tensor *tt_arange(tt_dtype dtype, double start, double end, double step) {
    TT_CHECK(step != 0 && isfinite(step) && isfinite(start) && isfinite(end),
             "need finite start/end and a non-zero step, got start=%g end=%g step=%g",
             start, end, step);
    double count = ceil((end - start) / step);
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

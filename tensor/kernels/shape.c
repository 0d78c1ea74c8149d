// Raw copy kernels of tt_copy_ (and so of the shape ops): strided runs of bit copies (any dtype)
// and f32 <-> f64 conversions, each with a contiguous fast path. Iteration over dims is the
// caller's.
#include "shape.h"

#include <string.h>

// ---- bit copy ----

// dst[i * ds] = src[i * ss]; one memmove when both runs are contiguous (tt_copy_ has always let
// a contiguous run overlap its source). A fixed-size memcpy per element keeps the copy
// dtype-agnostic without breaking strict aliasing (it compiles to a move).
void tt_kcopy_run(void *dst, int64_t ds, const void *src, int64_t ss, int64_t n, size_t es) {
    if (n <= 0) return;
    char *d = dst;
    const char *s = src;
    if (ds == 1 && ss == 1) {
        memmove(d, s, (size_t)n * es);
        return;
    }
    int64_t dstep = ds * (int64_t)es, sstep = ss * (int64_t)es;
    if (es == 4) {
        for (int64_t i = 0; i < n; i++) memcpy(d + i * dstep, s + i * sstep, 4);
    } else if (es == 8) {
        for (int64_t i = 0; i < n; i++) memcpy(d + i * dstep, s + i * sstep, 8);
    } else {
        for (int64_t i = 0; i < n; i++) memcpy(d + i * dstep, s + i * sstep, es);
    }
}

// ---- conversions ----

// y = (double)x: every f32 value is exactly representable in f64.
void tt_kcvt_f32_f64(double *dst, int64_t ds, const float *src, int64_t ss, int64_t n) {
    if (ds == 1 && ss == 1) {
        for (int64_t i = 0; i < n; i++) dst[i] = (double)src[i];
        return;
    }
    for (int64_t i = 0; i < n; i++) dst[i * ds] = (double)src[i * ss];
}

// y = (float)x: rounds to the nearest f32 (ties to even); out-of-range values become +-inf.
void tt_kcvt_f64_f32(float *dst, int64_t ds, const double *src, int64_t ss, int64_t n) {
    if (ds == 1 && ss == 1) {
        for (int64_t i = 0; i < n; i++) dst[i] = (float)src[i];
        return;
    }
    for (int64_t i = 0; i < n; i++) dst[i * ds] = (float)src[i * ss];
}

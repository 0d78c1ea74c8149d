// Raw copy kernels of tt_copy_, which every copy goes through (cat, stack, contiguous, clone,
// reshape copies, to_dtype, gradients): one strided run of elements at a time, on raw pointers.
// No tensors, no autograd, no iteration over dims (tt_copy_ walks the outer dims with tt__iter).
#ifndef TT_KERNELS_SHAPE_H
#define TT_KERNELS_SHAPE_H

#include <stddef.h>
#include <stdint.h>

// dst[i * ds] = src[i * ss] for i < n, elements of `es` bytes (4 or 8: any dtype, bit copy).
// Strides are in elements and may be 0 on the source (a broadcast run). Contiguous runs may
// overlap (memmove).
void tt_kcopy_run(void *dst, int64_t ds, const void *src, int64_t ss, int64_t n, size_t es);

// dst[i * ds] = (double)src[i * ss] for i < n: exact widening.
void tt_kcvt_f32_f64(double *dst, int64_t ds, const float *src, int64_t ss, int64_t n);
// dst[i * ds] = (float)src[i * ss] for i < n: round to nearest even (IEEE 754 default).
void tt_kcvt_f64_f32(float *dst, int64_t ds, const double *src, int64_t ss, int64_t n);

#endif  // TT_KERNELS_SHAPE_H

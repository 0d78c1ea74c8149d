// Portable C micro-kernels of the packed GEMM: a 4 x 8 tile in f32 and in f64, for CPUs
// without AVX2 (and as the reference path the tests compare the SIMD ones with). No
// intrinsics; the compiler may vectorize the column loops. Not the driver or packing.
#include "matmul.h"

#define MR 4
#define NR 8

#define T float
#define UKERNEL uk_f32
#include "gemm_generic.inc"
#undef T
#undef UKERNEL

#define T double
#define UKERNEL uk_f64
#include "gemm_generic.inc"
#undef T
#undef UKERNEL

// No packer of its own: the driver's (SSE2 transposes, C copies) packs for it.
const tt_k_gemm_kernel tt_k_gemm_generic_f32 = {"generic f32 4x8", MR, NR, uk_f32, NULL, NULL,
                                                NULL, NULL};
const tt_k_gemm_kernel tt_k_gemm_generic_f64 = {"generic f64 4x8", MR, NR, uk_f64, NULL, NULL,
                                                NULL, NULL};

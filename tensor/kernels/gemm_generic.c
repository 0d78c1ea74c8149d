// Portable C micro-kernels of the packed GEMM: a 4 x 8 tile in f32 and in f64, for CPUs
// without AVX2 (and as the reference path the tests compare the SIMD ones with). No
// intrinsics; the compiler may vectorize the column loops. Not the driver or packing.
#include "matmul.h"

#define MR 4
#define NR 8

// acc[i][j] = acc[i][j] + a[i] * b[j] per k step, in k order (a multiply then an add: the
// library builds with -std=c11, where the compiler does not contract them into an FMA).
#define DEFINE_UKERNEL(NAME, T)                                                               \
    static void NAME(int64_t kc, const void *a_, const void *b_, void *c_, int64_t ldc,      \
                     int mr, int nr, bool add, const void *bias_) {                          \
        const T *a = a_, *b = b_, *bias = bias_;                                             \
        T *c = c_;                                                                           \
        T acc[MR][NR] = {{0}};                                                               \
        for (int64_t k = 0; k < kc; k++, a += MR, b += NR)                                   \
            _Pragma("GCC unroll 4") for (int i = 0; i < MR; i++)                             \
                _Pragma("GCC unroll 8") for (int j = 0; j < NR; j++)                         \
                    acc[i][j] = acc[i][j] + a[i] * b[j];                                     \
        for (int i = 0; i < mr; i++) {                                                       \
            T *ci = c + i * ldc;                                                             \
            if (add)                                                                         \
                for (int j = 0; j < nr; j++) ci[j] = ci[j] + acc[i][j];                      \
            else if (bias)                                                                   \
                for (int j = 0; j < nr; j++) ci[j] = bias[j] + acc[i][j];                    \
            else                                                                             \
                for (int j = 0; j < nr; j++) ci[j] = acc[i][j];                              \
        }                                                                                    \
    }

DEFINE_UKERNEL(uk_f32, float)
DEFINE_UKERNEL(uk_f64, double)

// No packer of its own: the driver's (SSE2 transposes, C copies) packs for it.
const tt_k_gemm_kernel tt_k_gemm_generic_f32 = {"generic f32 4x8", MR, NR, uk_f32, NULL, NULL};
const tt_k_gemm_kernel tt_k_gemm_generic_f64 = {"generic f64 4x8", MR, NR, uk_f64, NULL, NULL};

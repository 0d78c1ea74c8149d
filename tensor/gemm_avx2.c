// AVX2 + FMA micro-kernels of the packed GEMM: a 6 x 16 f32 tile and a 6 x 8 f64 tile (two ymm
// vectors per row, 12 accumulators), and half-width variants for a narrow last panel. Compiled
// with function-level target attributes, so the library still runs on any x86-64;
// kernels_matmul.c calls them only when cpuid reports AVX2 and FMA. Not the driver or packing.
#include "kernels_matmul.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET_AVX2 __attribute__((target("avx2,fma")))

// Lanes < w of a ymm vector, as the all-ones / zero mask vmaskmov wants.
TARGET_AVX2 static inline __m256i lanes_ps(int w) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(w), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
TARGET_AVX2 static inline __m256i lanes_pd(int w) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(w), _mm256_setr_epi64x(0, 1, 2, 3));
}

// Register tile: MR rows, each NV vectors of VL elements; per k step, NV vector loads of the B
// panel (width 2 VL) and MR broadcasts of the A panel feed MR * NV FMAs (Goto and van de Geijn
// 2008). Edges: the panels are zero-padded, every row is computed, rows >= mr are not stored,
// columns >= nr are masked off (vmaskmov, only on a partial panel).
// S: ps or pd; V: __m256 or __m256d; VL: lanes per vector.
#define DEFINE_UKERNEL(NAME, T, S, V, VL, MR, NV)                                             \
    TARGET_AVX2 static void NAME(int64_t kc, const void *a_, const void *b_, void *c_,        \
                                 int64_t ldc, int mr, int nr, bool add, const void *bias_) {  \
        const T *a = a_, *b = b_, *bias = bias_;                                                            \
        T *c = c_;                                                                           \
        V acc[MR][NV];                                                                       \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                             \
                acc[i][v] = _mm256_setzero_##S();                                            \
        for (int64_t k = 0; k < kc; k++) {                                                   \
            V bv[NV];                                                                        \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                             \
                bv[v] = _mm256_load_##S(b + v * VL);                                         \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                          \
                V ai = _mm256_set1_##S(a[i]);                                                \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                         \
                    acc[i][v] = _mm256_fmadd_##S(ai, bv[v], acc[i][v]);                     \
            }                                                                                \
            a += MR;                                                                         \
            b += (int64_t)VL * 2; /* the panel is 2 VL wide, also for the narrow variant */  \
        }                                                                                    \
        bool full = nr >= VL * NV;                                                           \
        __m256i mask[NV];                                                                    \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) mask[v] = lanes_##S(nr - v * VL); \
        V bias_v[NV]; /* the bias of the tile's columns (first k block only) */              \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                 \
            bias_v[v] = !add && bias ? _mm256_maskload_##S(bias + v * VL, mask[v])          \
                                     : _mm256_setzero_##S();                                 \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                              \
            if (i >= mr) break;                                                              \
            T *ci = c + i * ldc;                                                             \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                           \
                V r = acc[i][v];                                                             \
                if (!add && bias) r = _mm256_add_##S(bias_v[v], r);                          \
                if (full) {                                                                  \
                    if (add) r = _mm256_add_##S(_mm256_loadu_##S(ci + v * VL), r);           \
                    _mm256_storeu_##S(ci + v * VL, r);                                       \
                } else {                                                                     \
                    if (add)                                                                 \
                        r = _mm256_add_##S(_mm256_maskload_##S(ci + v * VL, mask[v]), r);    \
                    _mm256_maskstore_##S(ci + v * VL, mask[v], r);                           \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }

DEFINE_UKERNEL(uk_f32_6x16, float, ps, __m256, 8, 6, 2)
DEFINE_UKERNEL(uk_f32_6x8, float, ps, __m256, 8, 6, 1)
DEFINE_UKERNEL(uk_f64_6x8, double, pd, __m256d, 4, 6, 2)
DEFINE_UKERNEL(uk_f64_6x4, double, pd, __m256d, 4, 6, 1)

const tt_k_gemm_kernel tt_k_gemm_avx2_f32 = {"avx2 f32 6x16", 6, 16, uk_f32_6x16, uk_f32_6x8};
const tt_k_gemm_kernel tt_k_gemm_avx2_f64 = {"avx2 f64 6x8", 6, 8, uk_f64_6x8, uk_f64_6x4};

#else  // not x86-64 with GCC or Clang: never selected (tt_k_gemm_path_supported says no)

const tt_k_gemm_kernel tt_k_gemm_avx2_f32 = {"avx2 (unavailable)", 0, 0, NULL, NULL};
const tt_k_gemm_kernel tt_k_gemm_avx2_f64 = {"avx2 (unavailable)", 0, 0, NULL, NULL};

#endif

// AVX-512F micro-kernels of the packed GEMM: a 12 x 32 f32 tile and a 12 x 16 f64 tile (two
// zmm vectors per row, 24 accumulators), and half-width variants for a narrow last panel.
// Compiled with function-level target attributes, so the library still runs on any x86-64;
// kernels_matmul.c calls them only when cpuid reports AVX-512F. Not the driver or packing.
#include "kernels_matmul.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET_AVX512 __attribute__((target("avx512f,fma")))

// Register tile: MR rows, each NV vectors of VL elements; per k step, NV vector loads of the B
// panel and MR broadcasts of the A panel feed MR * NV FMAs (Goto and van de Geijn 2008, "Anatomy
// of high-performance matrix multiplication"). Edges: the panels are zero-padded, every row is
// computed, rows >= mr are not stored and columns >= nr are masked off.
// S: ps or pd; V: __m512 or __m512d; M: the mask type; VL: lanes per vector.
#define DEFINE_UKERNEL(NAME, T, S, V, M, VL, MR, NV)                                          \
    TARGET_AVX512 static void NAME(int64_t kc, const void *a_, const void *b_, void *c_,      \
                                   int64_t ldc, int mr, int nr, bool add, const void *bias_) { \
        const T *a = a_, *b = b_, *bias = bias_;                                                            \
        T *c = c_;                                                                           \
        V acc[MR][NV];                                                                       \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                             \
                acc[i][v] = _mm512_setzero_##S();                                            \
        for (int64_t k = 0; k < kc; k++) {                                                   \
            V bv[NV];                                                                        \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                             \
                bv[v] = _mm512_load_##S(b + v * VL);                                         \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                          \
                V ai = _mm512_set1_##S(a[i]);                                                \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                         \
                    acc[i][v] = _mm512_fmadd_##S(ai, bv[v], acc[i][v]);                     \
            }                                                                                \
            a += MR;                                                                         \
            b += (int64_t)VL * 2;                                                            \
        }                                                                                    \
        M mask[NV];                                                                          \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                               \
            int w = nr - v * VL;                                                             \
            mask[v] = (M)(w >= VL ? (M)~(M)0 : w <= 0 ? 0 : (M)((1u << w) - 1));             \
        }                                                                                    \
        V bias_v[NV]; /* the bias of the tile's columns (first k block only) */              \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                 \
            bias_v[v] = !add && bias ? _mm512_maskz_loadu_##S(mask[v], bias + v * VL)       \
                                     : _mm512_setzero_##S();                                 \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                              \
            if (i >= mr) break;                                                              \
            T *ci = c + i * ldc;                                                             \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                           \
                V r = acc[i][v];                                                             \
                if (add) r = _mm512_add_##S(_mm512_maskz_loadu_##S(mask[v], ci + v * VL), r); \
                else if (bias) r = _mm512_add_##S(bias_v[v], r);                             \
                _mm512_mask_storeu_##S(ci + v * VL, mask[v], r);                             \
            }                                                                                \
        }                                                                                    \
    }

DEFINE_UKERNEL(uk_f32_12x32, float, ps, __m512, __mmask16, 16, 12, 2)
DEFINE_UKERNEL(uk_f32_12x16, float, ps, __m512, __mmask16, 16, 12, 1)
DEFINE_UKERNEL(uk_f64_12x16, double, pd, __m512d, __mmask8, 8, 12, 2)
DEFINE_UKERNEL(uk_f64_12x8, double, pd, __m512d, __mmask8, 8, 12, 1)

const tt_k_gemm_kernel tt_k_gemm_avx512_f32 = {"avx512 f32 12x32", 12, 32, uk_f32_12x32,
                                               uk_f32_12x16};
const tt_k_gemm_kernel tt_k_gemm_avx512_f64 = {"avx512 f64 12x16", 12, 16, uk_f64_12x16,
                                               uk_f64_12x8};

#else  // not x86-64 with GCC or Clang: never selected (tt_k_gemm_path_supported says no)

const tt_k_gemm_kernel tt_k_gemm_avx512_f32 = {"avx512 (unavailable)", 0, 0, NULL, NULL};
const tt_k_gemm_kernel tt_k_gemm_avx512_f64 = {"avx512 (unavailable)", 0, 0, NULL, NULL};

#endif

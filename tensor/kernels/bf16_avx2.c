// AVX2 + FMA bf16 kernels, for CPUs without AVX-512: the f32 <-> bf16 conversions and a
// 6 x 16 micro-kernel that widens the k-pair panels to f32 and uses FMA (correct, not fast:
// the panels are packed by the portable packer). Function-level target attributes; bf16.c
// calls them only at CPU level avx2 or above (cpu.h).
#include "bf16.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "simd.h"

#define TARGET_AVX2 __attribute__((target("avx2,fma")))

// Each lane of x rounded to bf16 (tt_bf16_from_f32), the bits in the lane's lower half.
TARGET_AVX2 static inline __m256i round8(__m256 x) {
    return _mm256_srli_epi32(tt__simd_round_hi8(x), 16);
}

TARGET_AVX2 static void to_bf16_avx2(tt_bf16 *dst, const float *src, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i r0 = round8(_mm256_loadu_ps(src + i)), r1 = round8(_mm256_loadu_ps(src + i + 8));
        // packus works within 128-bit halves: [r0 0-3, r1 0-3, r0 4-7, r1 4-7], then reorder
        __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(r0, r1), 0xd8);
        _mm256_storeu_si256((__m256i *)(dst + i), h);
    }
    for (; i < n; i++) dst[i] = tt_bf16_from_f32(src[i]);
}

TARGET_AVX2 static void to_f32_avx2(float *dst, const tt_bf16 *src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
    }
    for (; i < n; i++) dst[i] = tt_bf16_to_f32(src[i]);
}

// 6 rows x 16 columns (two ymm of 8), 12 accumulators; per k pair the odd step, then the even
// (vdpbf16ps's order, bf16.h).
#define MR 6
#define NR 16

TARGET_AVX2 static void uk_widen_6x16(int64_t kp, const uint32_t *a, const uint32_t *b,
                                      float *c, int64_t ldc, int mr, int nr, bool add,
                                      const float *bias) {
    const __m256i himask = _mm256_set1_epi32((int)0xffff0000u);
    __m256 acc[MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t p = 0; p < kp; p++, a += MR, b += NR) {
        __m256i w0 = _mm256_load_si256((const __m256i *)b);
        __m256i w1 = _mm256_load_si256((const __m256i *)(b + 8));
        __m256 e0 = _mm256_castsi256_ps(_mm256_slli_epi32(w0, 16));
        __m256 o0 = _mm256_castsi256_ps(_mm256_and_si256(w0, himask));
        __m256 e1 = _mm256_castsi256_ps(_mm256_slli_epi32(w1, 16));
        __m256 o1 = _mm256_castsi256_ps(_mm256_and_si256(w1, himask));
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            __m256 ae = _mm256_castsi256_ps(_mm256_set1_epi32((int)(a[i] << 16)));
            __m256 ao = _mm256_castsi256_ps(_mm256_set1_epi32((int)(a[i] & 0xffff0000u)));
            acc[i][0] = _mm256_fmadd_ps(ao, o0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ao, o1, acc[i][1]);
            acc[i][0] = _mm256_fmadd_ps(ae, e0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ae, e1, acc[i][1]);
        }
    }
    for (int i = 0; i < mr; i++) {
        float *ci = c + i * ldc;
        if (nr == NR) {
            __m256 r0 = acc[i][0], r1 = acc[i][1];
            if (add) {
                r0 = _mm256_add_ps(_mm256_loadu_ps(ci), r0);
                r1 = _mm256_add_ps(_mm256_loadu_ps(ci + 8), r1);
            } else if (bias) {
                r0 = _mm256_add_ps(_mm256_loadu_ps(bias), r0);
                r1 = _mm256_add_ps(_mm256_loadu_ps(bias + 8), r1);
            }
            _mm256_storeu_ps(ci, r0);
            _mm256_storeu_ps(ci + 8, r1);
        } else {  // an edge tile: through a buffer
            float t[NR];
            _mm256_storeu_ps(t, acc[i][0]);
            _mm256_storeu_ps(t + 8, acc[i][1]);
            for (int j = 0; j < nr; j++)
                ci[j] = add ? ci[j] + t[j] : bias ? bias[j] + t[j] : t[j];
        }
    }
}

#undef MR
#undef NR

const tt_k_bf16_kernel tt_k_bf16_avx2 = {"avx2 6x16 widen + fma", 6, 16, uk_widen_6x16, NULL,
                                         NULL, to_bf16_avx2, to_f32_avx2};

#else  // not x86-64 with GCC or Clang: never selected

const tt_k_bf16_kernel tt_k_bf16_avx2 = {"avx2 (unavailable)", 0, 0, NULL, NULL, NULL, NULL,
                                         NULL};

#endif

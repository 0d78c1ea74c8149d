// SIMD matrix-vector kernels of the bf16-weight Linear (bf16_linear.h): vdpbf16ps on
// AVX512-BF16, and bf16 widened to f32 with FMA on AVX-512 and AVX2 (odd step first, then the
// even one: vdpbf16ps's order, so the same bits). One panel (32 channels) at a time, read front
// to back: per k pair one broadcast of x's pair and two independent accumulator chains (four on
// AVX2). Compiled with function-level target attributes; bf16_linear.c calls each only at a
// CPU level (cpu.h) that has it.
#include "bf16_linear.h"
#include "kint.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET_AVX2 __attribute__((target("avx2,fma")))
#define TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))
#define TARGET_AVX512BF16 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))
#define NR TT_K_BF16W_NR
#define KCP (TT_K_BF16_KC / 2)

// Stores a block's sums of 16 channels n0.. (fewer past N): y = bias + s for the first block
// (s alone without a bias), y = y + s after it.
TARGET_AVX512 static inline __attribute__((always_inline)) void store16(
    float *y, const float *bias, int64_t n0, int64_t N, bool first, __m512 s) {
    if (n0 >= N) return;
    __mmask16 m = N - n0 >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (N - n0)) - 1);
    const float *add = first ? bias : y;
    if (add) s = _mm512_add_ps(_mm512_maskz_loadu_ps(m, add + n0), s);
    _mm512_mask_storeu_ps(y + n0, m, s);
}

// The loop of one path over panels q0 .. q1: STEP(acc, xw, ptr) adds one k pair (broadcast
// word xw) of the 16 channels at ptr into acc. A panel is read front to back as one sequential
// stream, which the hardware prefetchers follow at full bandwidth (two panels in step, or
// software prefetches, measured slower: 28 against 31 GB/s on the 124M model's weights).
#define GEMV_AVX512(NAME, TARGET, STEP)                                                       \
    TARGET static void NAME(float *y, const uint32_t *xp, const tt_k_bf16w *w,               \
                            const float *bias, int64_t q0, int64_t q1) {                     \
        int64_t ps = tt_k_bf16_panel(w->K, NR);                                              \
        for (int64_t q = q0; q < q1; q++) {                                                  \
            const uint32_t *a = w->w + q * ps;                                               \
            for (int64_t p0 = 0; p0 < w->kp; p0 += KCP) {                                    \
                __m512 s0 = _mm512_setzero_ps(), s1 = s0;                                    \
                int64_t pe = min64(w->kp, p0 + KCP);                                         \
                for (int64_t p = p0; p < pe; p++) {                                          \
                    __m512i xw = _mm512_set1_epi32((int)xp[p]);                              \
                    s0 = STEP(s0, xw, a + p * NR);                                           \
                    s1 = STEP(s1, xw, a + p * NR + 16);                                      \
                }                                                                            \
                store16(y, bias, q * NR, w->N, p0 == 0, s0);                                 \
                store16(y, bias, q * NR + 16, w->N, p0 == 0, s1);                            \
            }                                                                                \
        }                                                                                    \
    }

TARGET_AVX512BF16 static inline __attribute__((always_inline)) __m512
step_dpbf16(__m512 acc, __m512i xw, const uint32_t *p) {
    return _mm512_dpbf16_ps(acc, (__m512bh)xw, (__m512bh)_mm512_load_si512(p));
}

// Without AVX512-BF16: the weight words split into odd-step and even-step f32 vectors.
TARGET_AVX512 static inline __attribute__((always_inline)) __m512
step_widen(__m512 acc, __m512i xw, const uint32_t *p) {
    const __m512i himask = _mm512_set1_epi32((int)0xffff0000u);
    __m512i v = _mm512_load_si512(p);
    __m512 xo = _mm512_castsi512_ps(_mm512_and_si512(xw, himask));
    __m512 xe = _mm512_castsi512_ps(_mm512_slli_epi32(xw, 16));
    acc = _mm512_fmadd_ps(xo, _mm512_castsi512_ps(_mm512_and_si512(v, himask)), acc);
    return _mm512_fmadd_ps(xe, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), acc);
}

GEMV_AVX512(gemv_dpbf16, TARGET_AVX512BF16, step_dpbf16)
GEMV_AVX512(gemv_widen512, TARGET_AVX512, step_widen)

// AVX2: one panel at a time in four ymm chains of 8 channels.
TARGET_AVX2 static inline __attribute__((always_inline)) __m256
step_widen256(__m256 acc, __m256 xo, __m256 xe, const uint32_t *p) {
    const __m256i himask = _mm256_set1_epi32((int)0xffff0000u);
    __m256i v = _mm256_load_si256((const __m256i *)p);
    acc = _mm256_fmadd_ps(xo, _mm256_castsi256_ps(_mm256_and_si256(v, himask)), acc);
    return _mm256_fmadd_ps(xe, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)), acc);
}

TARGET_AVX2 static void gemv_widen256(float *y, const uint32_t *xp, const tt_k_bf16w *w,
                                      const float *bias, int64_t q0, int64_t q1) {
    int64_t ps = tt_k_bf16_panel(w->K, NR);
    for (int64_t q = q0; q < q1; q++) {
        const uint32_t *a = w->w + q * ps;
        int64_t n0 = q * NR, nr = min64(NR, w->N - n0);
        for (int64_t p0 = 0; p0 < w->kp; p0 += KCP) {
            __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                           _mm256_setzero_ps()};
            for (int64_t p = p0; p < min64(w->kp, p0 + KCP); p++) {
                __m256 xo = _mm256_castsi256_ps(_mm256_set1_epi32((int)(xp[p] & 0xffff0000u)));
                __m256 xe = _mm256_castsi256_ps(_mm256_set1_epi32((int)(xp[p] << 16)));
                for (int v = 0; v < 4; v++) s[v] = step_widen256(s[v], xo, xe, a + p * NR + 8 * v);
            }
            float t[NR];
            for (int v = 0; v < 4; v++) _mm256_storeu_ps(t + 8 * v, s[v]);
            for (int64_t j = 0; j < nr; j++)
                y[n0 + j] = p0 > 0 ? y[n0 + j] + t[j] : bias ? bias[n0 + j] + t[j] : t[j];
        }
    }
}

const tt_k_bf16w_gemv tt_k_bf16w_gemv_avx2 = {"avx2 widen + fma", gemv_widen256};
const tt_k_bf16w_gemv tt_k_bf16w_gemv_avx512 = {"avx512 widen + fma", gemv_widen512};
const tt_k_bf16w_gemv tt_k_bf16w_gemv_avx512bf16 = {"avx512bf16 vdpbf16ps", gemv_dpbf16};

#else  // not x86-64 with GCC or Clang: the portable kernel runs

const tt_k_bf16w_gemv tt_k_bf16w_gemv_avx2 = {"avx2 (unavailable)", NULL};
const tt_k_bf16w_gemv tt_k_bf16w_gemv_avx512 = {"avx512 (unavailable)", NULL};
const tt_k_bf16w_gemv tt_k_bf16w_gemv_avx512bf16 = {"avx512bf16 (unavailable)", NULL};

#endif

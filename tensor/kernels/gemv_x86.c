// SIMD kernels of the f32 matrix-vector product. Rows (decoding's Linears at M = 1):
// TT_K_DOT_ROWS dot products of rows rs apart with one vector, with exactly the bits of
// matmul.c's portable dot (8 lanes by k mod 8, mul then add, runs of TT_K_GEMM_KC steps reduced
// pairwise and summed in double): one ymm chain per row, compiled for AVX2 and for AVX-512VL;
// matmul.c picks one by the CPU level (cpu.h) and spaces the rows so that each is its own
// sequential stream. Contiguous columns (attention's weights times the cached values): an
// AVX-512 kernel with the portable gemv_cols' bits (matmul.h, tt_k_gemv_cols).
#include "matmul.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET_AVX2 __attribute__((target("avx2")))
#define TARGET_AVX512 __attribute__((target("avx2,avx512f,avx512vl")))
#define KC TT_K_GEMM_KC
#define R TT_K_DOT_ROWS

// Letters: R rows of K floats, rows rs floats apart; x (K).

// Row sums of one run without a tail: ((v0 + v4) + (v1 + v5)) + ((v2 + v6) + (v3 + v7)) as
// one add of the halves and two horizontal adds (the same operations, so the same bits).
TARGET_AVX2 static double reduce8(__m256 v) {
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    t = _mm_hadd_ps(t, t);  // t0 + t1, t2 + t3
    return (double)_mm_cvtss_f32(_mm_hadd_ps(t, t));
}

// One run with a tail: v (8) holds a row's lane sums after the SIMD part (k < k8); the tail
// steps k8 .. kc - 1 go to lanes 0, 1, ... as in the portable dot; then the pairwise reduction.
TARGET_AVX2 static double finish_run(float *v, const float *a, const float *x, int64_t k8,
                                     int64_t kc) {
    for (int64_t k = k8; k < kc; k++) v[k - k8] += a[k] * x[k];
    return (double)(((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])));
}

// The same code twice: for AVX2, and for AVX-512VL (EVEX encoding, 32 vector registers; the
// width stays 8 lanes, the dot's). On the AMD EPYC (Zen 4) the two are within the noise of a
// shared machine in bench_qgemm's decode figure; a standalone loop measured the AVX-512VL
// build 20 % faster.

#define DOT_ROWS_FN tt_k_dot_rows_f32_avx2
#define TARGET TARGET_AVX2
#include "gemv_x86_rows.inc"
#undef DOT_ROWS_FN
#undef TARGET

#define DOT_ROWS_FN tt_k_dot_rows_f32_avx512
#define TARGET TARGET_AVX512
#include "gemv_x86_rows.inc"
#undef DOT_ROWS_FN
#undef TARGET

// Contiguous columns (matmul.h, tt_k_gemv_cols): 64 rows at a time, four zmm of sums (masked
// past M; a masked-off load reads nothing), column k read as one run of up to 256 bytes. Per
// run of KC steps: groups of four steps added left to right, then the single steps left, then
// the run's sums added to the rows' doubles, as the portable gemv_cols does. Two full runs go
// in step (two sequential streams of memory); their sums are still added in order.
#define COLS_ROWS 64

// Steps k .. k + 3 of the sums r (4 x 16 rows) from columns c + k cs.
TARGET_AVX512 static inline __attribute__((always_inline)) void cols_step4(
    __m512 *r, const float *c, int64_t cs, const float *x, int64_t xs, int64_t k,
    const __mmask16 *mk) {
    const float *ck = c + k * cs;
    __m512 x0 = _mm512_set1_ps(x[k * xs]), x1 = _mm512_set1_ps(x[(k + 1) * xs]);
    __m512 x2 = _mm512_set1_ps(x[(k + 2) * xs]), x3 = _mm512_set1_ps(x[(k + 3) * xs]);
    for (int b = 0; b < 4; b++) {
        const float *p = ck + 16 * b;
        __m512 v = _mm512_add_ps(r[b], _mm512_mul_ps(_mm512_maskz_loadu_ps(mk[b], p), x0));
        v = _mm512_add_ps(v, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk[b], p + cs), x1));
        v = _mm512_add_ps(v, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk[b], p + 2 * cs), x2));
        r[b] = _mm512_add_ps(v, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk[b], p + 3 * cs), x3));
    }
}

// Step k alone of the sums r.
TARGET_AVX512 static inline __attribute__((always_inline)) void cols_step1(
    __m512 *r, const float *c, int64_t cs, const float *x, int64_t xs, int64_t k,
    const __mmask16 *mk) {
    __m512 xk = _mm512_set1_ps(x[k * xs]);
    for (int b = 0; b < 4; b++)
        r[b] = _mm512_add_ps(r[b],
                             _mm512_mul_ps(_mm512_maskz_loadu_ps(mk[b], c + k * cs + 16 * b), xk));
}

// acc (m) += a run's sums r, each widened to double.
TARGET_AVX512 static inline __attribute__((always_inline)) void cols_add_run(double *acc,
                                                                             const __m512 *r,
                                                                             int64_t m) {
    float run[COLS_ROWS];
    for (int b = 0; b < 4; b++) _mm512_storeu_ps(run + 16 * b, r[b]);
    for (int64_t i = 0; i < m; i++) acc[i] += (double)run[i];
}

TARGET_AVX512 void tt_k_gemv_cols_f32_avx512(int64_t M, int64_t K, const void *ap, int64_t cs,
                                             const void *xp, int64_t xs, void *yp, int64_t ys,
                                             bool accumulate) {
    const float *a = ap, *x = xp;
    float *y = yp;
    for (int64_t i0 = 0; i0 < M; i0 += COLS_ROWS) {
        int64_t m = M - i0 < COLS_ROWS ? M - i0 : COLS_ROWS;
        const float *c = a + i0;
        __mmask16 mk[4];
        for (int b = 0; b < 4; b++) {
            int64_t n = m - 16 * b;
            mk[b] = n >= 16 ? (__mmask16)0xffff : n > 0 ? (__mmask16)((1u << n) - 1) : 0;
        }
        double acc[COLS_ROWS] = {0};
        for (int64_t k0 = 0; k0 < K;) {
            __m512 r[4], r2[4];
            for (int b = 0; b < 4; b++) r[b] = r2[b] = _mm512_setzero_ps();
            if (K - k0 >= 2 * KC) {  // two full runs in step (KC is a multiple of 4)
                for (int64_t k = k0; k < k0 + KC; k += 4) {
                    cols_step4(r, c, cs, x, xs, k, mk);
                    cols_step4(r2, c, cs, x, xs, k + KC, mk);
                }
                cols_add_run(acc, r, m);
                cols_add_run(acc, r2, m);
                k0 += 2 * KC;
                continue;
            }
            int64_t k1 = k0 + (K - k0 < KC ? K - k0 : KC), k = k0;
            for (; k + 4 <= k1; k += 4) cols_step4(r, c, cs, x, xs, k, mk);
            for (; k < k1; k++) cols_step1(r, c, cs, x, xs, k, mk);
            cols_add_run(acc, r, m);
            k0 = k1;
        }
        for (int64_t i = 0; i < m; i++) {
            float *yi = y + (i0 + i) * ys;
            *yi = accumulate ? (float)((double)*yi + acc[i]) : (float)acc[i];
        }
    }
}

#endif

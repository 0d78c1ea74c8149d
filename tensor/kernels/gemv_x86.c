// SIMD kernels of the f32 matrix-vector product (decoding's Linears at M = 1): TT_K_DOT_ROWS
// dot products of rows rs apart with one vector, with exactly the bits of matmul.c's portable
// dot (8 lanes by k mod 8, mul then add, runs of TT_K_GEMM_KC steps reduced pairwise and summed
// in double): one ymm chain per row, compiled for AVX2 and for AVX-512VL; matmul.c picks one by
// the CPU level (cpu.h) and spaces the rows so that each is its own sequential stream.
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

#endif

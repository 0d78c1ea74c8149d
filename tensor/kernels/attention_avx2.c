// The fused attention's block operations in AVX2 + FMA (f32, 8 lanes) and its bf16 products
// widened to f32: the tables tt__kattn_ops_avx2_* (attention_ops.h). attention.c picks them by
// the CPU level and runs the tiled drivers.
#include "attention_ops.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#include "simd.h"

#define INLINE static inline __attribute__((always_inline))

// ---- AVX2 + FMA (f32, 8 lanes) ----

#define TGT_AVX2 __attribute__((target("avx2,fma")))





// One row of C, two vectors (lanes m0, m1): cp = alpha (v0, v1) [+ cp].
TGT_AVX2 INLINE void store256(float *cp, __m256 v0, __m256 v1, __m256 va, __m256i m0, __m256i m1,
                              bool acc) {
    __m256 o0 = _mm256_mul_ps(v0, va), o1 = _mm256_mul_ps(v1, va);
    if (acc) {
        o0 = _mm256_add_ps(o0, _mm256_maskload_ps(cp, m0));
        o1 = _mm256_add_ps(o1, _mm256_maskload_ps(cp + 8, m1));
    }
    _mm256_maskstore_ps(cp, m0, o0);
    _mm256_maskstore_ps(cp + 8, m1, o1);
}

// Rows r < R (R constant after inlining) of C, columns of two vectors (lanes m0, m1).
TGT_AVX2 INLINE void tile256(const int R, int64_t K, const float *a, int64_t a_rs, int64_t a_cs,
                             const float *b, int64_t b_rs, float *c, int64_t c_rs, __m256 va,
                             __m256i m0, __m256i m1, bool acc) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00;
    __m256 c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    const float *a0 = a, *a1 = R > 1 ? a + a_rs : a, *a2 = R > 2 ? a + 2 * a_rs : a;
    const float *a3 = R > 3 ? a + 3 * a_rs : a;
    for (int64_t k = 0; k < K; k++, b += b_rs) {
        __m256 b0 = _mm256_maskload_ps(b, m0), b1 = _mm256_maskload_ps(b + 8, m1);
        int64_t ak = k * a_cs;
        __m256 x = _mm256_set1_ps(a0[ak]);
        c00 = _mm256_fmadd_ps(x, b0, c00);
        c01 = _mm256_fmadd_ps(x, b1, c01);
        if (R > 1) {
            x = _mm256_set1_ps(a1[ak]);
            c10 = _mm256_fmadd_ps(x, b0, c10);
            c11 = _mm256_fmadd_ps(x, b1, c11);
        }
        if (R > 2) {
            x = _mm256_set1_ps(a2[ak]);
            c20 = _mm256_fmadd_ps(x, b0, c20);
            c21 = _mm256_fmadd_ps(x, b1, c21);
        }
        if (R > 3) {
            x = _mm256_set1_ps(a3[ak]);
            c30 = _mm256_fmadd_ps(x, b0, c30);
            c31 = _mm256_fmadd_ps(x, b1, c31);
        }
    }
    store256(c, c00, c01, va, m0, m1, acc);
    if (R > 1) store256(c + c_rs, c10, c11, va, m0, m1, acc);
    if (R > 2) store256(c + 2 * c_rs, c20, c21, va, m0, m1, acc);
    if (R > 3) store256(c + 3 * c_rs, c30, c31, va, m0, m1, acc);
}

TGT_AVX2 static void gemm_avx2(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs,
                               int64_t a_cs, const float *b, int64_t b_rs, float *c,
                               int64_t c_rs, float alpha, bool acc) {
    __m256 va = _mm256_set1_ps(alpha);
    for (int64_t n = 0; n < N; n += 16) {
        __m256i m0 = tt__simd_mask8(N - n), m1 = tt__simd_mask8(N - n - 8);
        int64_t i = 0;
        for (; i + 4 <= M; i += 4)
            tile256(4, K, a + i * a_rs, a_rs, a_cs, b + n, b_rs, c + i * c_rs + n, c_rs, va, m0,
                    m1, acc);
        for (; i < M; i++)
            tile256(1, K, a + i * a_rs, a_rs, a_cs, b + n, b_rs, c + i * c_rs + n, c_rs, va, m0,
                    m1, acc);
    }
}

TGT_AVX2 static void rows_max_avx2(float *mx, const float *s, int64_t nq, const int64_t *lim) {
    for (int64_t r = 0; r < nq; r++) {
        __m256 m = _mm256_set1_ps(-INFINITY);
        for (int64_t c = 0; c < lim[r]; c += 8) {
            __m256 mk = _mm256_castsi256_ps(tt__simd_mask8(lim[r] - c));
            __m256 x = _mm256_blendv_ps(m, _mm256_loadu_ps(s + r * BK + c), mk);
            m = _mm256_max_ps(m, x);
        }
        mx[r] = tt__simd_hmax8(m);
    }
}

// One row of rows_exp (row_exp512 in 8 lanes).
TGT_AVX2 INLINE float row_exp256(float *s, int64_t lim, float sub) {
    __m256 vs = _mm256_set1_ps(sub), sum = _mm256_setzero_ps();
    for (int64_t c = 0; c < BK; c += 8) {
        __m256 e = tt__simd_exp8(_mm256_sub_ps(_mm256_loadu_ps(s + c), vs));
        e = _mm256_and_ps(e, _mm256_castsi256_ps(tt__simd_mask8(lim - c)));
        _mm256_storeu_ps(s + c, e);
        sum = _mm256_add_ps(sum, e);
    }
    return tt__simd_hsum8(sum);
}

TGT_AVX2 static void rows_exp_avx2(float *sum, float *s, int64_t nq, const int64_t *lim,
                                   const float *sub) {
    if (sum)
        for (int64_t r = 0; r < nq; r++) sum[r] = row_exp256(s + r * BK, lim[r], sub[r]);
    else
        for (int64_t r = 0; r < nq; r++) row_exp256(s + r * BK, lim[r], sub[r]);
}

TGT_AVX2 static void row_ds_avx2(float *dp, const float *p, float D) {
    __m256 vd = _mm256_set1_ps(D);
    for (int64_t c = 0; c < BK; c += 8)
        _mm256_storeu_ps(dp + c, _mm256_mul_ps(_mm256_loadu_ps(p + c),
                                               _mm256_sub_ps(_mm256_loadu_ps(dp + c), vd)));
}

TGT_AVX2 static void row_scale_avx2(float *x, int64_t n, float alpha) {
    __m256 va = _mm256_set1_ps(alpha);
    for (int64_t c = 0; c < n; c += 8) {
        __m256i mk = tt__simd_mask8(n - c);
        _mm256_maskstore_ps(x + c, mk, _mm256_mul_ps(_mm256_maskload_ps(x + c, mk), va));
    }
}

const tt__kattn_ops_f32 tt__kattn_ops_avx2_f32 = {
    gemm_avx2, rows_max_avx2, rows_exp_avx2, row_ds_avx2, row_scale_avx2,
    tt__kattn_rows_dot_portable_f32,
    NULL, NULL, NULL, NULL, NULL, 0,
};

// ---- bf16 products widened to f32 (AVX2 + FMA) ----
// (the scheme: attention_ops.h)

// widen_a256 and gemm_widen256 (attention_widen.inc).
#define TGT TGT_AVX2
#define V __m256
#define VL 8
#define M_T __m256i
#define MASK tt__simd_mask8
#define LOADM(p, m) _mm256_maskload_ps(p, m)
#define STOREM(p, m, v) _mm256_maskstore_ps(p, m, v)
#define SETZERO _mm256_setzero_ps
#define STOREU _mm256_storeu_ps
#define SET1 _mm256_set1_ps
#define ROUND tt__simd_round8
#define SWAP_PAIRS(v) _mm256_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1))
#define TILE tile256
#define WIDE_ROWS 4
#define WIDEN_A widen_a256
#define GEMM_WIDEN gemm_widen256
#include "attention_widen.inc"

const tt__kattn_ops_f32 tt__kattn_ops_avx2_bf16 = {
    gemm_widen256, rows_max_avx2, rows_exp_avx2, row_ds_avx2, row_scale_avx2,
    tt__kattn_rows_dot_portable_f32,
    NULL, NULL, NULL, NULL, NULL, 0,
};

#endif

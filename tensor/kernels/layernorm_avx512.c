// AVX-512F f32 layernorm row functions (layernorm.h): 16 f32 columns per step, the 16 double
// lanes of each row sum in two registers (lanes 0-7, 8-15), the last partial step masked.
// Compiled with function-level target attributes, so the library still runs on any x86-64;
// layernorm.c calls them only when cpuid reports AVX-512F. Same bits as the portable C.
#include "layernorm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>

#define TARGET_AVX512 __attribute__((target("avx512f")))
#define INLINE_AVX512 TARGET_AVX512 static inline __attribute__((always_inline))

#if TT_KLN_LANES != 16
#error "layernorm_avx512.c keeps the lanes of a row sum in two registers of 8 doubles"
#endif

INLINE_AVX512 __mmask16 first16(int64_t n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

// Columns 0-7 and 8-15 of v widened to double.
INLINE_AVX512 __m512d lo8(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
INLINE_AVX512 __m512d hi8(__m512 v) {
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

// Lanes 0-7 in lo and 8-15 in hi combined by the tree of layernorm.h: l[j] + l[j + 8], then
// + l[j + 4], + l[j + 2], + l[j + 1].
INLINE_AVX512 double lane_tree(__m512d lo, __m512d hi) {
    __m512d t = _mm512_add_pd(lo, hi);
    __m256d u = _mm256_add_pd(_mm512_castpd512_pd256(t), _mm512_extractf64x4_pd(t, 1));
    __m128d v = _mm_add_pd(_mm256_castpd256_pd128(u), _mm256_extractf128_pd(u, 1));
    return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v)));
}

// ---- forward ----

TARGET_AVX512 void tt_kln_forward_rows_avx512(float *y, float *mean, float *rstd, const float *x,
                                              const float *w, const float *b, int64_t R,
                                              int64_t N, double eps) {
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        float *yr = y + r * N;
        // mean: masked-off columns load as +0, which leaves a lane (never -0) unchanged
        __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
        for (int64_t i = 0; i < N; i += 16) {
            __m512 v = _mm512_maskz_loadu_ps(first16(N - i), xr + i);
            s0 = _mm512_add_pd(s0, lo8(v));
            s1 = _mm512_add_pd(s1, hi8(v));
        }
        double mu = N > 0 ? lane_tree(s0, s1) / (double)N : 0;
        // sum of squared deviations: only the columns in the row are added
        __m512d mu8 = _mm512_set1_pd(mu);
        __m512d q0 = _mm512_setzero_pd(), q1 = _mm512_setzero_pd();
        for (int64_t i = 0; i < N; i += 16) {
            __mmask16 k = first16(N - i);
            __m512 v = _mm512_maskz_loadu_ps(k, xr + i);
            __m512d d0 = _mm512_sub_pd(lo8(v), mu8), d1 = _mm512_sub_pd(hi8(v), mu8);
            q0 = _mm512_mask_add_pd(q0, (__mmask8)k, q0, _mm512_mul_pd(d0, d0));
            q1 = _mm512_mask_add_pd(q1, (__mmask8)(k >> 8), q1, _mm512_mul_pd(d1, d1));
        }
        double rs = 1.0 / sqrt((N > 0 ? lane_tree(q0, q1) / (double)N : 0) + eps);
        float m = (float)mu, rt = (float)rs;
        // y = (x - m) rt w + b in f32, x again from L1
        __m512 m16 = _mm512_set1_ps(m), rt16 = _mm512_set1_ps(rt);
        for (int64_t i = 0; i < N; i += 16) {
            __mmask16 k = first16(N - i);
            __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, xr + i), m16), rt16);
            if (w) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, w + i));
            if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, b + i));
            _mm512_mask_storeu_ps(yr + i, k, v);
        }
        mean[r] = m;
        rstd[r] = rt;
    }
}

// ---- backward ----

TARGET_AVX512 void tt_kln_backward_rows_avx512(float *dx, const float *dy, const float *x,
                                               const float *w, const float *mean,
                                               const float *rstd, int64_t R, int64_t N) {
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N, *dyr = dy + r * N;
        float *dxr = dx + r * N;
        __m512 m16 = _mm512_set1_ps(mean[r]), rt16 = _mm512_set1_ps(rstd[r]);
        __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();  // sum dn
        __m512d c0 = _mm512_setzero_pd(), c1 = _mm512_setzero_pd();  // sum dn xhat
        for (int64_t i = 0; i < N; i += 16) {
            __mmask16 k = first16(N - i);
            __m512 dn = _mm512_maskz_loadu_ps(k, dyr + i);
            if (w) dn = _mm512_mul_ps(dn, _mm512_maskz_loadu_ps(k, w + i));
            __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, xr + i), m16), rt16);
            __m512d dn0 = lo8(dn), dn1 = hi8(dn);
            a0 = _mm512_mask_add_pd(a0, (__mmask8)k, a0, dn0);
            a1 = _mm512_mask_add_pd(a1, (__mmask8)(k >> 8), a1, dn1);
            c0 = _mm512_mask_add_pd(c0, (__mmask8)k, c0, _mm512_mul_pd(dn0, lo8(xh)));
            c1 = _mm512_mask_add_pd(c1, (__mmask8)(k >> 8), c1, _mm512_mul_pd(dn1, hi8(xh)));
        }
        __m512 a16 = _mm512_set1_ps((float)(lane_tree(a0, a1) / (double)N));
        __m512 c16 = _mm512_set1_ps((float)(lane_tree(c0, c1) / (double)N));
        // dx += rt ((dn - a) - xhat c)
        for (int64_t i = 0; i < N; i += 16) {
            __mmask16 k = first16(N - i);
            __m512 dn = _mm512_maskz_loadu_ps(k, dyr + i);
            if (w) dn = _mm512_mul_ps(dn, _mm512_maskz_loadu_ps(k, w + i));
            __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, xr + i), m16), rt16);
            __m512 g = _mm512_sub_ps(_mm512_sub_ps(dn, a16), _mm512_mul_ps(xh, c16));
            __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, dxr + i), _mm512_mul_ps(rt16, g));
            _mm512_mask_storeu_ps(dxr + i, k, v);
        }
    }
}

// Blocks of 32 columns: 4 registers of dw sums and 4 of db sums, each column over the rows in
// order.
TARGET_AVX512 void tt_kln_column_sums_avx512(float *dw, float *db, const float *dy, const float *x,
                                             const float *mean, const float *rstd, int64_t R,
                                             int64_t N, int64_t i0, int64_t nc) {
    for (int64_t j = i0; j < i0 + nc; j += 32) {
        int64_t n = i0 + nc - j < 32 ? i0 + nc - j : 32;
        __mmask16 k0 = first16(n), k1 = first16(n - 16);
        __m512d aw0 = _mm512_setzero_pd(), aw1 = _mm512_setzero_pd();
        __m512d aw2 = _mm512_setzero_pd(), aw3 = _mm512_setzero_pd();
        __m512d ab0 = _mm512_setzero_pd(), ab1 = _mm512_setzero_pd();
        __m512d ab2 = _mm512_setzero_pd(), ab3 = _mm512_setzero_pd();
        for (int64_t r = 0; r < R; r++) {
            const float *xr = x + r * N + j, *dyr = dy + r * N + j;
            __m512 m16 = _mm512_set1_ps(mean[r]), rt16 = _mm512_set1_ps(rstd[r]);
            __m512 g0 = _mm512_maskz_loadu_ps(k0, dyr), g1 = _mm512_maskz_loadu_ps(k1, dyr + 16);
            __m512 h0 = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k0, xr), m16), rt16);
            __m512 h1 = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k1, xr + 16), m16),
                                      rt16);
            __m512d g00 = lo8(g0), g01 = hi8(g0), g10 = lo8(g1), g11 = hi8(g1);
            aw0 = _mm512_add_pd(aw0, _mm512_mul_pd(g00, lo8(h0)));
            aw1 = _mm512_add_pd(aw1, _mm512_mul_pd(g01, hi8(h0)));
            aw2 = _mm512_add_pd(aw2, _mm512_mul_pd(g10, lo8(h1)));
            aw3 = _mm512_add_pd(aw3, _mm512_mul_pd(g11, hi8(h1)));
            ab0 = _mm512_add_pd(ab0, g00);
            ab1 = _mm512_add_pd(ab1, g01);
            ab2 = _mm512_add_pd(ab2, g10);
            ab3 = _mm512_add_pd(ab3, g11);
        }
        double sw[32], sb[32];  // (n) the sums of columns j ..; the lanes past n are unused
        _mm512_storeu_pd(sw, aw0);
        _mm512_storeu_pd(sw + 8, aw1);
        _mm512_storeu_pd(sw + 16, aw2);
        _mm512_storeu_pd(sw + 24, aw3);
        _mm512_storeu_pd(sb, ab0);
        _mm512_storeu_pd(sb + 8, ab1);
        _mm512_storeu_pd(sb + 16, ab2);
        _mm512_storeu_pd(sb + 24, ab3);
        for (int64_t l = 0; l < n; l++) {
            if (dw) dw[j + l] += (float)sw[l];
            if (db) db[j + l] += (float)sb[l];
        }
    }
}

#endif

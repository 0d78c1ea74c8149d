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

// Rows are taken 4 at a time, their sums interleaved: each row keeps its own lanes (the same
// bits as row by row), but the rows' addition chains overlap instead of waiting on each
// other's latency. (The accumulators are named variables, not arrays, so that they stay in
// registers.)

// ---- forward ----

// s0, s1 += the 16 columns at p (masked-off columns load as +0, which leaves a lane, never -0,
// unchanged).
INLINE_AVX512 void add_cols(__m512d *s0, __m512d *s1, const float *p, __mmask16 k) {
    __m512 v = _mm512_maskz_loadu_ps(k, p);
    *s0 = _mm512_add_pd(*s0, lo8(v));
    *s1 = _mm512_add_pd(*s1, hi8(v));
}

// s0, s1 += (x - mu)^2 of the 16 columns at p, only the columns in the row.
INLINE_AVX512 void add_squares(__m512d *s0, __m512d *s1, const float *p, __mmask16 k,
                               __m512d mu) {
    __m512 v = _mm512_maskz_loadu_ps(k, p);
    __m512d d0 = _mm512_sub_pd(lo8(v), mu), d1 = _mm512_sub_pd(hi8(v), mu);
    *s0 = _mm512_mask_add_pd(*s0, (__mmask8)k, *s0, _mm512_mul_pd(d0, d0));
    *s1 = _mm512_mask_add_pd(*s1, (__mmask8)(k >> 8), *s1, _mm512_mul_pd(d1, d1));
}

// The row's rs from its squared deviations s0, s1; y (N) = (x - m) rt w + b in f32, x again
// from L1; mean, rstd (1).
INLINE_AVX512 void normalize_row(float *y, float *mean, float *rstd, const float *x,
                                 const float *w, const float *b, int64_t N, double eps,
                                 double mu, __m512d s0, __m512d s1) {
    double rs = 1.0 / sqrt((N > 0 ? lane_tree(s0, s1) / (double)N : 0) + eps);
    float m = (float)mu, rt = (float)rs;
    __m512 m16 = _mm512_set1_ps(m), rt16 = _mm512_set1_ps(rt);
    for (int64_t i = 0; i < N; i += 16) {
        __mmask16 k = first16(N - i);
        __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m16), rt16);
        if (w) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, w + i));
        if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, b + i));
        _mm512_mask_storeu_ps(y + i, k, v);
    }
    *mean = m;
    *rstd = rt;
}

INLINE_AVX512 double row_mean(int64_t N, __m512d s0, __m512d s1) {
    return N > 0 ? lane_tree(s0, s1) / (double)N : 0;
}

TARGET_AVX512 void tt_kln_forward_rows_avx512(float *y, float *mean, float *rstd, const float *x,
                                              const float *w, const float *b, int64_t R,
                                              int64_t N, double eps) {
    int64_t r = 0;
    for (; r + 4 <= R; r += 4) {
        const float *x0 = x + r * N, *x1 = x0 + N, *x2 = x1 + N, *x3 = x2 + N;
        __m512d z = _mm512_setzero_pd();
        __m512d a0 = z, b0 = z, a1 = z, b1 = z, a2 = z, b2 = z, a3 = z, b3 = z;
        for (int64_t i = 0; i < N; i += 16) {
            __mmask16 k = first16(N - i);
            add_cols(&a0, &b0, x0 + i, k);
            add_cols(&a1, &b1, x1 + i, k);
            add_cols(&a2, &b2, x2 + i, k);
            add_cols(&a3, &b3, x3 + i, k);
        }
        double mu0 = row_mean(N, a0, b0), mu1 = row_mean(N, a1, b1);
        double mu2 = row_mean(N, a2, b2), mu3 = row_mean(N, a3, b3);
        __m512d m0 = _mm512_set1_pd(mu0), m1 = _mm512_set1_pd(mu1);
        __m512d m2 = _mm512_set1_pd(mu2), m3 = _mm512_set1_pd(mu3);
        a0 = b0 = a1 = b1 = a2 = b2 = a3 = b3 = z;
        for (int64_t i = 0; i < N; i += 16) {
            __mmask16 k = first16(N - i);
            add_squares(&a0, &b0, x0 + i, k, m0);
            add_squares(&a1, &b1, x1 + i, k, m1);
            add_squares(&a2, &b2, x2 + i, k, m2);
            add_squares(&a3, &b3, x3 + i, k, m3);
        }
        float *y0 = y + r * N;
        normalize_row(y0, mean + r, rstd + r, x0, w, b, N, eps, mu0, a0, b0);
        normalize_row(y0 + N, mean + r + 1, rstd + r + 1, x1, w, b, N, eps, mu1, a1, b1);
        normalize_row(y0 + 2 * N, mean + r + 2, rstd + r + 2, x2, w, b, N, eps, mu2, a2, b2);
        normalize_row(y0 + 3 * N, mean + r + 3, rstd + r + 3, x3, w, b, N, eps, mu3, a3, b3);
    }
    for (; r < R; r++) {
        const float *xr = x + r * N;
        __m512d a = _mm512_setzero_pd(), bb = _mm512_setzero_pd();
        for (int64_t i = 0; i < N; i += 16) add_cols(&a, &bb, xr + i, first16(N - i));
        double mu = row_mean(N, a, bb);
        __m512d m = _mm512_set1_pd(mu);
        a = bb = _mm512_setzero_pd();
        for (int64_t i = 0; i < N; i += 16) add_squares(&a, &bb, xr + i, first16(N - i), m);
        normalize_row(y + r * N, mean + r, rstd + r, xr, w, b, N, eps, mu, a, bb);
    }
}

// ---- backward ----

// The 16 columns at i of the row: a0, a1 += dn, c0, c1 += dn xhat, dn = dy w (wv; w NULL: dy),
// xhat = (x - m) rt, only the columns in the row.
INLINE_AVX512 void add_dn(__m512d *a0, __m512d *a1, __m512d *c0, __m512d *c1, const float *dy,
                          const float *x, const float *w, __m512 wv, __m512 m, __m512 rt,
                          __mmask16 k) {
    __m512 dn = _mm512_maskz_loadu_ps(k, dy);
    if (w) dn = _mm512_mul_ps(dn, wv);
    __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x), m), rt);
    __m512d dn0 = lo8(dn), dn1 = hi8(dn);
    *a0 = _mm512_mask_add_pd(*a0, (__mmask8)k, *a0, dn0);
    *a1 = _mm512_mask_add_pd(*a1, (__mmask8)(k >> 8), *a1, dn1);
    *c0 = _mm512_mask_add_pd(*c0, (__mmask8)k, *c0, _mm512_mul_pd(dn0, lo8(xh)));
    *c1 = _mm512_mask_add_pd(*c1, (__mmask8)(k >> 8), *c1, _mm512_mul_pd(dn1, hi8(xh)));
}

// dx (N) += rt ((dn - a) - xhat c) of one row, a and c from its sums.
INLINE_AVX512 void dx_row(float *dx, const float *dy, const float *x, const float *w, float mean,
                          float rstd, int64_t N, __m512d a0, __m512d a1, __m512d c0, __m512d c1) {
    __m512 a16 = _mm512_set1_ps((float)(lane_tree(a0, a1) / (double)N));
    __m512 c16 = _mm512_set1_ps((float)(lane_tree(c0, c1) / (double)N));
    __m512 m16 = _mm512_set1_ps(mean), rt16 = _mm512_set1_ps(rstd);
    for (int64_t i = 0; i < N; i += 16) {
        __mmask16 k = first16(N - i);
        __m512 dn = _mm512_maskz_loadu_ps(k, dy + i);
        if (w) dn = _mm512_mul_ps(dn, _mm512_maskz_loadu_ps(k, w + i));
        __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m16), rt16);
        __m512 d = _mm512_sub_ps(_mm512_sub_ps(dn, a16), _mm512_mul_ps(xh, c16));
        d = _mm512_add_ps(_mm512_maskz_loadu_ps(k, dx + i), _mm512_mul_ps(rt16, d));
        _mm512_mask_storeu_ps(dx + i, k, d);
    }
}

// Row by row: the two sums already give four chains, and four rows at a time measured no
// faster.
TARGET_AVX512 void tt_kln_backward_rows_avx512(float *dx, const float *dy, const float *x,
                                               const float *w, const float *mean,
                                               const float *rstd, int64_t R, int64_t N) {
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N, *dyr = dy + r * N;
        __m512 m = _mm512_set1_ps(mean[r]), t = _mm512_set1_ps(rstd[r]);
        __m512d a0 = _mm512_setzero_pd(), a1 = a0, c0 = a0, c1 = a0;
        for (int64_t i = 0; i < N; i += 16) {
            __mmask16 k = first16(N - i);
            __m512 wv = w ? _mm512_maskz_loadu_ps(k, w + i) : _mm512_setzero_ps();
            add_dn(&a0, &a1, &c0, &c1, dyr + i, xr + i, w, wv, m, t, k);
        }
        dx_row(dx + r * N, dyr, xr, w, mean[r], rstd[r], N, a0, a1, c0, c1);
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

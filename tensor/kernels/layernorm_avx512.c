// AVX-512F f32 layernorm row functions (layernorm.h): 16 f32 columns per step, the 16 double
// lanes of each row sum in two registers (lanes 0-7, 8-15), the last partial step masked; the
// backward's dweight and dbias sums in the sweep that writes dx.
// Compiled with function-level target attributes, so the library still runs on any x86-64;
// layernorm.c calls them only at CPU level avx512 or above (cpu.h). Same bits as the portable C.
#include "layernorm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>

#include "simd.h"

#define TARGET_AVX512 __attribute__((target("avx512f")))
#define INLINE_AVX512 TARGET_AVX512 static inline __attribute__((always_inline))

#if TT_KLN_LANES != 16
#error "layernorm_avx512.c keeps the lanes of a row sum in two registers of 8 doubles"
#endif

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

// The kernels ask for the lines of the rows PREFETCH_ROWS ahead while they work on a row: in a
// training step the rows come from memory, and the hardware prefetchers alone left the
// backward at half the speed.
#define PREFETCH_ROWS 2

// The cache lines of n floats at p, into L1.
INLINE_AVX512 void prefetch_row(const float *p, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) _mm_prefetch((const char *)(p + i), _MM_HINT_T0);
}

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
        __mmask16 k = tt__simd_mask16(N - i);
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
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        if (r + PREFETCH_ROWS < R) {
            prefetch_row(xr + PREFETCH_ROWS * N, N);
            prefetch_row(y + (r + PREFETCH_ROWS) * N, N);
        }
        __m512d a = _mm512_setzero_pd(), bb = _mm512_setzero_pd();
        for (int64_t i = 0; i < N; i += 16) add_cols(&a, &bb, xr + i, tt__simd_mask16(N - i));
        double mu = row_mean(N, a, bb);
        __m512d m = _mm512_set1_pd(mu);
        a = bb = _mm512_setzero_pd();
        for (int64_t i = 0; i < N; i += 16) add_squares(&a, &bb, xr + i, tt__simd_mask16(N - i), m);
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

// One row's second sweep: dx (N) += rt ((dn - a) - xhat c) (dx NULL: none), a and c from its
// sums; aw, ab (N) += dy xhat, dy in double (aw NULL: neither).
INLINE_AVX512 void dx_row(float *dx, double *aw, double *ab, const float *dy, const float *x,
                          const float *w, float mean, float rstd, int64_t N, __m512d a0,
                          __m512d a1, __m512d c0, __m512d c1) {
    __m512 a16 = _mm512_setzero_ps(), c16 = _mm512_setzero_ps();
    if (dx) {
        a16 = _mm512_set1_ps((float)(lane_tree(a0, a1) / (double)N));
        c16 = _mm512_set1_ps((float)(lane_tree(c0, c1) / (double)N));
    }
    __m512 m16 = _mm512_set1_ps(mean), rt16 = _mm512_set1_ps(rstd);
    for (int64_t i = 0; i < N; i += 16) {
        __mmask16 k = tt__simd_mask16(N - i);
        __m512 g = _mm512_maskz_loadu_ps(k, dy + i);
        __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m16), rt16);
        if (dx) {
            __m512 dn = w ? _mm512_mul_ps(g, _mm512_maskz_loadu_ps(k, w + i)) : g;
            __m512 d = _mm512_sub_ps(_mm512_sub_ps(dn, a16), _mm512_mul_ps(xh, c16));
            d = _mm512_add_ps(_mm512_maskz_loadu_ps(k, dx + i), _mm512_mul_ps(rt16, d));
            _mm512_mask_storeu_ps(dx + i, k, d);
        }
        if (aw) {
            __mmask8 k0 = (__mmask8)k, k1 = (__mmask8)(k >> 8);
            __m512d g0 = lo8(g), g1 = hi8(g);
            __m512d w0 = _mm512_mul_pd(g0, lo8(xh)), w1 = _mm512_mul_pd(g1, hi8(xh));
            _mm512_mask_storeu_pd(aw + i, k0, _mm512_add_pd(_mm512_maskz_loadu_pd(k0, aw + i), w0));
            _mm512_mask_storeu_pd(aw + i + 8, k1,
                                  _mm512_add_pd(_mm512_maskz_loadu_pd(k1, aw + i + 8), w1));
            _mm512_mask_storeu_pd(ab + i, k0, _mm512_add_pd(_mm512_maskz_loadu_pd(k0, ab + i), g0));
            _mm512_mask_storeu_pd(ab + i + 8, k1,
                                  _mm512_add_pd(_mm512_maskz_loadu_pd(k1, ab + i + 8), g1));
        }
    }
}

// Row by row: the two sums already give four chains, and four rows at a time measured no
// faster.
TARGET_AVX512 void tt_kln_backward_rows_avx512(float *dx, double *aw, double *ab, const float *dy,
                                               const float *x, const float *w, const float *mean,
                                               const float *rstd, int64_t R, int64_t N) {
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N, *dyr = dy + r * N;
        __m512 m = _mm512_set1_ps(mean[r]), t = _mm512_set1_ps(rstd[r]);
        __m512d a0 = _mm512_setzero_pd(), a1 = a0, c0 = a0, c1 = a0;
        for (int64_t i = 0; dx && i < N; i += 16) {
            __mmask16 k = tt__simd_mask16(N - i);
            __m512 wv = w ? _mm512_maskz_loadu_ps(k, w + i) : _mm512_setzero_ps();
            add_dn(&a0, &a1, &c0, &c1, dyr + i, xr + i, w, wv, m, t, k);
        }
        if (r + PREFETCH_ROWS < R) {
            prefetch_row(dyr + PREFETCH_ROWS * N, N);
            prefetch_row(xr + PREFETCH_ROWS * N, N);
            if (dx) prefetch_row(dx + (r + PREFETCH_ROWS) * N, N);
        }
        dx_row(dx ? dx + r * N : NULL, aw, ab, dyr, xr, w, mean[r], rstd[r], N, a0, a1, c0, c1);
    }
}

#endif

// AVX2 f32 layernorm row functions (layernorm.h): 16 f32 columns per step, the 16 double lanes
// of each row sum in four registers (lanes 0-3, 4-7, 8-11, 12-15); the last partial step reads
// a zero-padded copy and masks its additions. The backward's dweight and dbias sums are taken in
// the sweep that writes dx. Compiled with function-level target attributes;
// layernorm.c calls them only at CPU level avx2 or above (cpu.h). Same bits as the portable C.
#include "layernorm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#define TARGET_AVX2 __attribute__((target("avx2")))
#define INLINE_AVX2 TARGET_AVX2 static inline __attribute__((always_inline))

#if TT_KLN_LANES != 16
#error "layernorm_avx2.c keeps the lanes of a row sum in four registers of 4 doubles"
#endif

// p + i if 16 columns remain, else the n = N - i < 16 remaining ones copied to buf (16) and
// zero-padded.
INLINE_AVX2 const float *cols16(float *buf, const float *p, int64_t i, int64_t N) {
    if (N - i >= 16) return p + i;
    memset(buf, 0, 16 * sizeof *buf);
    memcpy(buf, p + i, (size_t)(N - i) * sizeof *buf);
    return buf;
}

// The four lane masks (all bits set where column i + 4 q + l < N) of the step at column i.
INLINE_AVX2 void lane_masks(__m256d k[4], int64_t i, int64_t N) {
    __m256i n = _mm256_set1_epi64x(N - i);
    for (int q = 0; q < 4; q++)
        k[q] = _mm256_castsi256_pd(
            _mm256_cmpgt_epi64(n, _mm256_setr_epi64x(4 * q, 4 * q + 1, 4 * q + 2, 4 * q + 3)));
}

// Columns 4q .. 4q + 3 of p widened to double.
INLINE_AVX2 __m256d wide4(const float *p, int q) {
    return _mm256_cvtps_pd(_mm_loadu_ps(p + 4 * q));
}
INLINE_AVX2 __m256d wide4v(__m256 v, int q) {
    return _mm256_cvtps_pd(q & 1 ? _mm256_extractf128_ps(v, 1) : _mm256_castps256_ps128(v));
}

// The tree of layernorm.h over lanes l[0..3], l[4..7], l[8..11], l[12..15] in s[0..3].
INLINE_AVX2 double lane_tree(const __m256d s[4]) {
    __m256d t0 = _mm256_add_pd(s[0], s[2]), t1 = _mm256_add_pd(s[1], s[3]);  // l[j] + l[j + 8]
    __m256d u = _mm256_add_pd(t0, t1);                                        // + l[j + 4]
    __m128d v = _mm_add_pd(_mm256_castpd256_pd128(u), _mm256_extractf128_pd(u, 1));
    return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v)));
}

// The kernels ask for the lines of the row PREFETCH_ROWS ahead while they work on a row (in a
// training step the rows come from memory).
#define PREFETCH_ROWS 2

// The cache lines of n floats at p, into L1.
INLINE_AVX2 void prefetch_row(const float *p, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) _mm_prefetch((const char *)(p + i), _MM_HINT_T0);
}

// ---- forward ----

// s[q] += the 16 columns at p (all of them, or the masked ones when tail).
INLINE_AVX2 void add_cols(__m256d s[4], const float *p, const __m256d k[4], const bool tail) {
    for (int q = 0; q < 4; q++) {
        __m256d v = wide4(p, q);
        s[q] = _mm256_add_pd(s[q], tail ? _mm256_and_pd(v, k[q]) : v);
    }
}

INLINE_AVX2 void add_squares(__m256d s[4], const float *p, __m256d mu, const __m256d k[4],
                             const bool tail) {
    for (int q = 0; q < 4; q++) {
        __m256d d = _mm256_sub_pd(wide4(p, q), mu);
        __m256d v = _mm256_mul_pd(d, d);
        s[q] = _mm256_add_pd(s[q], tail ? _mm256_and_pd(v, k[q]) : v);
    }
}

// The 16 columns of y = (x - m) rt w + b at xp, wp, bp (wp, bp NULL: none) into yp.
INLINE_AVX2 void normalize16(float *yp, const float *xp, const float *wp, const float *bp,
                             __m256 m, __m256 rt) {
    for (int h = 0; h < 16; h += 8) {
        __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xp + h), m), rt);
        if (wp) v = _mm256_mul_ps(v, _mm256_loadu_ps(wp + h));
        if (bp) v = _mm256_add_ps(v, _mm256_loadu_ps(bp + h));
        _mm256_storeu_ps(yp + h, v);
    }
}

TARGET_AVX2 void tt_kln_forward_rows_avx2(float *y, float *mean, float *rstd, const float *x,
                                          const float *w, const float *b, int64_t R, int64_t N,
                                          double eps) {
    int64_t nfull = N / 16 * 16;
    __m256d k[4];
    lane_masks(k, nfull, N);
    float xb[16], wb[16], bb[16], yb[16];  // the zero-padded last partial step
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N;
        float *yr = y + r * N;
        const float *xt = cols16(xb, xr, nfull, N);
        if (r + PREFETCH_ROWS < R) {
            prefetch_row(xr + PREFETCH_ROWS * N, N);
            prefetch_row(yr + PREFETCH_ROWS * N, N);
        }
        __m256d s[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                        _mm256_setzero_pd()};
        for (int64_t i = 0; i < nfull; i += 16) add_cols(s, xr + i, k, false);
        if (nfull < N) add_cols(s, xt, k, true);
        double mu = N > 0 ? lane_tree(s) / (double)N : 0;
        __m256d mu4 = _mm256_set1_pd(mu);
        for (int q = 0; q < 4; q++) s[q] = _mm256_setzero_pd();
        for (int64_t i = 0; i < nfull; i += 16) add_squares(s, xr + i, mu4, k, false);
        if (nfull < N) add_squares(s, xt, mu4, k, true);
        double rs = 1.0 / sqrt((N > 0 ? lane_tree(s) / (double)N : 0) + eps);
        float m = (float)mu, rt = (float)rs;
        __m256 m8 = _mm256_set1_ps(m), rt8 = _mm256_set1_ps(rt);
        for (int64_t i = 0; i < nfull; i += 16)
            normalize16(yr + i, xr + i, w ? w + i : NULL, b ? b + i : NULL, m8, rt8);
        if (nfull < N) {
            normalize16(yb, xt, w ? cols16(wb, w, nfull, N) : NULL,
                        b ? cols16(bb, b, nfull, N) : NULL, m8, rt8);
            memcpy(yr + nfull, yb, (size_t)(N - nfull) * sizeof *yb);
        }
        mean[r] = m;
        rstd[r] = rt;
    }
}

// ---- backward ----

// dn = dy w (w NULL: dy) and xhat = (x - m) rt of the 8 columns at h.
INLINE_AVX2 void dn_xhat8(__m256 *dn, __m256 *xh, const float *dyp, const float *xp,
                          const float *wp, int h, __m256 m, __m256 rt) {
    *dn = _mm256_loadu_ps(dyp + h);
    if (wp) *dn = _mm256_mul_ps(*dn, _mm256_loadu_ps(wp + h));
    *xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xp + h), m), rt);
}

// a[q] += dn, c[q] += dn xhat over the 16 columns (the masked ones when tail).
INLINE_AVX2 void add_dn(__m256d a[4], __m256d c[4], const float *dyp, const float *xp,
                        const float *wp, __m256 m, __m256 rt, const __m256d k[4],
                        const bool tail) {
    for (int h = 0; h < 2; h++) {
        __m256 dn, xh;
        dn_xhat8(&dn, &xh, dyp, xp, wp, 8 * h, m, rt);
        for (int e = 0; e < 2; e++) {
            int q = 2 * h + e;
            __m256d d = wide4v(dn, e), p = _mm256_mul_pd(d, wide4v(xh, e));
            a[q] = _mm256_add_pd(a[q], tail ? _mm256_and_pd(d, k[q]) : d);
            c[q] = _mm256_add_pd(c[q], tail ? _mm256_and_pd(p, k[q]) : p);
        }
    }
}

// The 16 columns of one row's second sweep: dx += rt ((dn - a) - xhat c) at dxp (NULL: none),
// and aw, ab += dy xhat, dy in double (aw NULL: neither).
INLINE_AVX2 void dx16(float *dxp, double *aw, double *ab, const float *dyp, const float *xp,
                      const float *wp, __m256 m, __m256 rt, __m256 a, __m256 c) {
    for (int h = 0; h < 16; h += 8) {
        __m256 dn, xh;
        dn_xhat8(&dn, &xh, dyp, xp, wp, h, m, rt);
        if (dxp) {
            __m256 g = _mm256_sub_ps(_mm256_sub_ps(dn, a), _mm256_mul_ps(xh, c));
            __m256 d = _mm256_add_ps(_mm256_loadu_ps(dxp + h), _mm256_mul_ps(rt, g));
            _mm256_storeu_ps(dxp + h, d);
        }
        if (aw) {
            __m256 g = _mm256_loadu_ps(dyp + h);
            for (int e = 0; e < 2; e++) {
                __m256d gd = wide4v(g, e), p = _mm256_mul_pd(gd, wide4v(xh, e));
                double *awp = aw + h + 4 * e, *abp = ab + h + 4 * e;
                _mm256_storeu_pd(awp, _mm256_add_pd(_mm256_loadu_pd(awp), p));
                _mm256_storeu_pd(abp, _mm256_add_pd(_mm256_loadu_pd(abp), gd));
            }
        }
    }
}

TARGET_AVX2 void tt_kln_backward_rows_avx2(float *dx, double *aw, double *ab, const float *dy,
                                           const float *x, const float *w, const float *mean,
                                           const float *rstd, int64_t R, int64_t N) {
    int64_t nfull = N / 16 * 16;
    __m256d k[4];
    lane_masks(k, nfull, N);
    float xb[16], wb[16], dyb[16], dxb[16];  // the zero-padded last partial step
    double awb[16] = {0}, abb[16] = {0};
    const float *wt = w ? cols16(wb, w, nfull, N) : NULL;
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * N, *dyr = dy + r * N;
        float *dxr = dx ? dx + r * N : NULL;
        const float *xt = cols16(xb, xr, nfull, N), *dyt = cols16(dyb, dyr, nfull, N);
        __m256 m8 = _mm256_set1_ps(mean[r]), rt8 = _mm256_set1_ps(rstd[r]);
        if (r + PREFETCH_ROWS < R) {
            prefetch_row(dyr + PREFETCH_ROWS * N, N);
            prefetch_row(xr + PREFETCH_ROWS * N, N);
            if (dx) prefetch_row(dxr + PREFETCH_ROWS * N, N);
        }
        __m256 a8 = _mm256_setzero_ps(), c8 = _mm256_setzero_ps();
        if (dx) {
            __m256d a[4], c[4];
            for (int q = 0; q < 4; q++) a[q] = c[q] = _mm256_setzero_pd();
            for (int64_t i = 0; i < nfull; i += 16)
                add_dn(a, c, dyr + i, xr + i, w ? w + i : NULL, m8, rt8, k, false);
            if (nfull < N) add_dn(a, c, dyt, xt, wt, m8, rt8, k, true);
            a8 = _mm256_set1_ps((float)(lane_tree(a) / (double)N));
            c8 = _mm256_set1_ps((float)(lane_tree(c) / (double)N));
        }
        for (int64_t i = 0; i < nfull; i += 16)
            dx16(dxr ? dxr + i : NULL, aw ? aw + i : NULL, aw ? ab + i : NULL, dyr + i, xr + i,
                 w ? w + i : NULL, m8, rt8, a8, c8);
        if (nfull < N) {  // the last partial step on zero-padded copies
            size_t n = (size_t)(N - nfull);
            if (dxr) memcpy(dxb, dxr + nfull, n * sizeof *dxb);
            if (aw) {
                memcpy(awb, aw + nfull, n * sizeof *awb);
                memcpy(abb, ab + nfull, n * sizeof *abb);
            }
            dx16(dxr ? dxb : NULL, aw ? awb : NULL, abb, dyt, xt, wt, m8, rt8, a8, c8);
            if (dxr) memcpy(dxr + nfull, dxb, n * sizeof *dxb);
            if (aw) {
                memcpy(aw + nfull, awb, n * sizeof *awb);
                memcpy(ab + nfull, abb, n * sizeof *abb);
            }
        }
    }
}

#endif

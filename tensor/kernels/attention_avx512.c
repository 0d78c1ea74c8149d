// The fused attention's block operations in AVX-512 (f32, 16 lanes), its bf16 products on
// vdpbf16ps (AVX512-BF16) and widened to f32 (AVX-512F): the tables tt__kattn_ops_avx512_*
// (attention_ops.h). attention.c picks them by the CPU level and runs the tiled drivers.
#include "attention_ops.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#include "simd.h"

#define INLINE static inline __attribute__((always_inline))

// ---- AVX-512 (f32, 16 lanes) ----

#define TGT_AVX512 __attribute__((target("avx512f,avx2,fma")))



// One row of C, two vectors (lanes m0, m1): cp = alpha (v0, v1) [+ cp].
TGT_AVX512 INLINE void store512(float *cp, __m512 v0, __m512 v1, __m512 va, __mmask16 m0,
                                __mmask16 m1, bool acc) {
    __m512 o0 = _mm512_mul_ps(v0, va), o1 = _mm512_mul_ps(v1, va);
    if (acc) {
        o0 = _mm512_add_ps(o0, _mm512_maskz_loadu_ps(m0, cp));
        o1 = _mm512_add_ps(o1, _mm512_maskz_loadu_ps(m1, cp + 16));
    }
    _mm512_mask_storeu_ps(cp, m0, o0);
    _mm512_mask_storeu_ps(cp + 16, m1, o1);
}

// Rows r < R <= TILE_R (R constant after inlining) of C, columns of two vectors (lanes m0,
// m1): 2 R accumulators, each element's products added in k order.
#define TILE_R 8
TGT_AVX512 INLINE void tile512(const int R, int64_t K, const float *a, int64_t a_rs,
                               int64_t a_cs, const float *b, int64_t b_rs, float *c,
                               int64_t c_rs, __m512 va, __mmask16 m0, __mmask16 m1, bool acc) {
    __m512 c0[TILE_R], c1[TILE_R];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) c0[r] = c1[r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++, b += b_rs) {
        __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
        const float *ak = a + k * a_cs;
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m512 x = _mm512_set1_ps(ak[r * a_rs]);
            c0[r] = _mm512_fmadd_ps(x, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(x, b1, c1[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) store512(c + r * c_rs, c0[r], c1[r], va, m0, m1, acc);
}

// Not the packed GEMM's micro-kernels: packing each tile's operands made it slower (attention.c).
TGT_AVX512 static void gemm_avx512(int64_t M, int64_t N, int64_t K, const float *a,
                                   int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs,
                                   float *c, int64_t c_rs, float alpha, bool acc) {
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t n = 0; n < N; n += 32) {
        __mmask16 m0 = tt__simd_mask16(N - n), m1 = tt__simd_mask16(N - n - 16);
        int64_t i = 0;
        for (; i + TILE_R <= M; i += TILE_R)
            tile512(TILE_R, K, a + i * a_rs, a_rs, a_cs, b + n, b_rs, c + i * c_rs + n, c_rs,
                    va, m0, m1, acc);
        for (; i + 4 <= M; i += 4)
            tile512(4, K, a + i * a_rs, a_rs, a_cs, b + n, b_rs, c + i * c_rs + n, c_rs, va, m0,
                    m1, acc);
        for (; i < M; i++)
            tile512(1, K, a + i * a_rs, a_rs, a_cs, b + n, b_rs, c + i * c_rs + n, c_rs, va, m0,
                    m1, acc);
    }
}

TGT_AVX512 static void rows_max_avx512(float *mx, const float *s, int64_t nq,
                                       const int64_t *lim) {
    for (int64_t r = 0; r < nq; r++) {
        __m512 m = _mm512_set1_ps(-INFINITY);
        for (int64_t c = 0; c < lim[r]; c += 16) {
            __mmask16 mk = tt__simd_mask16(lim[r] - c);
            m = _mm512_mask_max_ps(m, mk, m, _mm512_maskz_loadu_ps(mk, s + r * BK + c));
        }
        mx[r] = _mm512_reduce_max_ps(m);
    }
}

// One row of rows_exp: s[c] = c < lim ? exp(s[c] - sub) : 0, c < BK; returns the sum.
TGT_AVX512 INLINE float row_exp512(float *s, int64_t lim, float sub) {
    __m512 vs = _mm512_set1_ps(sub), sum = _mm512_setzero_ps();
    for (int64_t c = 0; c < BK; c += 16) {
        __m512 e = tt__simd_exp16(_mm512_sub_ps(_mm512_loadu_ps(s + c), vs));
        e = _mm512_maskz_mov_ps(tt__simd_mask16(lim - c), e);
        _mm512_storeu_ps(s + c, e);
        sum = _mm512_add_ps(sum, e);
    }
    return _mm512_reduce_add_ps(sum);
}

TGT_AVX512 static void rows_exp_avx512(float *sum, float *s, int64_t nq, const int64_t *lim,
                                       const float *sub) {
    if (sum)
        for (int64_t r = 0; r < nq; r++) sum[r] = row_exp512(s + r * BK, lim[r], sub[r]);
    else
        for (int64_t r = 0; r < nq; r++) row_exp512(s + r * BK, lim[r], sub[r]);
}

TGT_AVX512 static void row_ds_avx512(float *dp, const float *p, float D) {
    __m512 vd = _mm512_set1_ps(D);
    for (int64_t c = 0; c < BK; c += 16)
        _mm512_storeu_ps(dp + c, _mm512_mul_ps(_mm512_loadu_ps(p + c),
                                               _mm512_sub_ps(_mm512_loadu_ps(dp + c), vd)));
}

TGT_AVX512 static void row_scale_avx512(float *x, int64_t n, float alpha) {
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t c = 0; c < n; c += 16) {
        __mmask16 mk = tt__simd_mask16(n - c);
        _mm512_mask_storeu_ps(x + c, mk, _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, x + c), va));
    }
}

// rows_dot_portable_f32 on 8 rows at a time, one row per f64 lane: each 8 x 8 block of
// products (exact in f64) transposed in three rounds of shuffles, then added column by column.
TGT_AVX512 static void rows_dot_avx512(float *D, const float *x, int64_t x_rs, const float *y,
                                       int64_t y_rs, int64_t n, int64_t HS) {
    int64_t i = 0, c8 = HS / 8 * 8;
    for (; i + 8 <= n; i += 8) {
        const float *xi = x + i * x_rs, *yi = y + i * y_rs;
        __m512d acc = _mm512_setzero_pd();
        for (int64_t c = 0; c < c8; c += 8) {
            __m512d p[8], t[8], u[8];  // p[r]: columns c .. c + 8 of row r
            for (int r = 0; r < 8; r++)
                p[r] = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(xi + r * x_rs + c)),
                                     _mm512_cvtps_pd(_mm256_loadu_ps(yi + r * y_rs + c)));
            for (int r = 0; r < 8; r += 2) {  // rows r, r + 1: columns 0 2 4 6, then 1 3 5 7
                t[r] = _mm512_unpacklo_pd(p[r], p[r + 1]);
                t[r + 1] = _mm512_unpackhi_pd(p[r], p[r + 1]);
            }
            for (int r = 0; r < 8; r += 4) {  // u[r + q]: rows r .. r + 3 of columns q', q' + 4
                u[r] = _mm512_shuffle_f64x2(t[r], t[r + 2], 0x88);      // columns 0, 4
                u[r + 1] = _mm512_shuffle_f64x2(t[r], t[r + 2], 0xdd);  // 2, 6
                u[r + 2] = _mm512_shuffle_f64x2(t[r + 1], t[r + 3], 0x88);  // 1, 5
                u[r + 3] = _mm512_shuffle_f64x2(t[r + 1], t[r + 3], 0xdd);  // 3, 7
            }
            __m512d col[8];  // col[j]: column c + j of the 8 rows
            col[0] = _mm512_shuffle_f64x2(u[0], u[4], 0x88);
            col[4] = _mm512_shuffle_f64x2(u[0], u[4], 0xdd);
            col[2] = _mm512_shuffle_f64x2(u[1], u[5], 0x88);
            col[6] = _mm512_shuffle_f64x2(u[1], u[5], 0xdd);
            col[1] = _mm512_shuffle_f64x2(u[2], u[6], 0x88);
            col[5] = _mm512_shuffle_f64x2(u[2], u[6], 0xdd);
            col[3] = _mm512_shuffle_f64x2(u[3], u[7], 0x88);
            col[7] = _mm512_shuffle_f64x2(u[3], u[7], 0xdd);
            for (int j = 0; j < 8; j++) acc = _mm512_add_pd(acc, col[j]);
        }
        double a[8];
        _mm512_storeu_pd(a, acc);
        for (int r = 0; r < 8; r++) {
            for (int64_t c = c8; c < HS; c++)
                a[r] += (double)xi[r * x_rs + c] * yi[r * y_rs + c];
            D[i + r] = (float)a[r];
        }
    }
    tt__kattn_rows_dot_portable_f32(D + i, x + i * x_rs, x_rs, y + i * y_rs, y_rs, n - i, HS);
}

const tt__kattn_ops_f32 tt__kattn_ops_avx512_f32 = {
    gemm_avx512, rows_max_avx512, rows_exp_avx512, row_ds_avx512, row_scale_avx512,
    rows_dot_avx512,
    NULL, NULL, NULL, NULL, NULL, 0,
};

// ---- bf16 products on vdpbf16ps (AVX512-BF16, f32 only) ----
// Both operands are packed into k pairs on the stack (the layout of tensor/kernels/bf16.h: a
// 32-bit word holds the bf16 of step 2p in its low half and of step 2p + 1 in its high half),
// A as (M, KP) words, B one block of 32 columns at a time as (KP, 32); tiles of up to 8 rows x
// 32 columns accumulate from 0 over the pairs, then store as the f32 gemm does.

#define TGT_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16,avx2,fma")))
#define KP_MAX 128  // k pairs packed on the stack (K <= 256); a longer K runs the portable code

// vcvtne2ps2bf16 rounds to nearest even and makes NaNs quiet as tt_bf16_from_f32 does, but
// takes a subnormal input as zero, as vdpbf16ps would anyway.

// 16 words: low halves from r0[0 .. 16), high halves from r1[0 .. 16) (zeros when r1 is
// NULL), lanes outside m zero.
TGT_BF16 INLINE __m512i pair_rows16(const float *r0, const float *r1, __mmask16 m) {
    __m512 x0 = _mm512_maskz_loadu_ps(m, r0);
    __m512 x1 = r1 ? _mm512_maskz_loadu_ps(m, r1) : _mm512_setzero_ps();
    // 16-bit elements: x0's in 0 .. 15, x1's in 16 .. 31; interleaved into (x0[j], x1[j])
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                         24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                         16, 0);
    return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(x1, x0));
}

// 16 words of pairs (x[2q], x[2q + 1]) from the floats x[0 .. 16) (lanes m0) and
// x[16 .. 32) (lanes m1), zeros outside them.
TGT_BF16 INLINE __m512i pair_line16(const float *x, __mmask16 m0, __mmask16 m1) {
    __m512 x0 = _mm512_maskz_loadu_ps(m0, x);
    __m512 x1 = _mm512_maskz_loadu_ps(m1, x + 16);
    return (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
}

// A (M, K), A[i, k] = a[i a_rs + k a_cs], into words: pair p of row i at ap[i *ai + p *ap_],
// zero odd step past K. Rows contiguous along k: i-major (ai = KP, ap_ = 1); columns
// contiguous along i: p-major (ai = 1, ap_ = BQ); else i-major, one element at a time.
TGT_BF16 static void pack_a_bf16(uint32_t *ap, int64_t *ai, int64_t *ap_, int64_t KP, int64_t M,
                                 int64_t K, const float *a, int64_t a_rs, int64_t a_cs) {
    if (a_rs == 1 && a_cs != 1) {
        *ai = 1, *ap_ = BQ;
        for (int64_t p = 0; p < KP; p++) {
            const float *r0 = a + 2 * p * a_cs, *r1 = 2 * p + 1 < K ? r0 + a_cs : NULL;
            for (int64_t i = 0; i < M; i += 16)
                _mm512_storeu_si512(ap + p * BQ + i, pair_rows16(r0 + i, r1 ? r1 + i : NULL,
                                                                 tt__simd_mask16(M - i)));
        }
        return;
    }
    *ai = KP, *ap_ = 1;
    if (a_cs == 1) {  // 32 steps of k -> 16 words, the masks shared by the rows
        for (int64_t p = 0; p < KP; p += 16) {
            __mmask16 mw = tt__simd_mask16(KP - p), m0 = tt__simd_mask16(K - 2 * p);
            __mmask16 m1 = tt__simd_mask16(K - 2 * p - 16);
            for (int64_t i = 0; i < M; i++)
                _mm512_mask_storeu_epi32(ap + i * KP + p, mw,
                                         pair_line16(a + i * a_rs + 2 * p, m0, m1));
        }
        return;
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t p = 0; p < KP; p++) {
            uint32_t lo = tt_bf16_from_f32(a[i * a_rs + 2 * p * a_cs]);
            uint32_t hi = 2 * p + 1 < K ? tt_bf16_from_f32(a[i * a_rs + (2 * p + 1) * a_cs]) : 0;
            ap[i * KP + p] = lo | hi << 16;
        }
}

// Rows r < R <= TILE_R of C, 32 columns (lanes m0, m1): 2 R accumulators over the KP pairs;
// pair p of row r at ap[r ai + p ap_].
TGT_BF16 INLINE void tile_dpbf16(const int R, int64_t KP, const uint32_t *ap, int64_t ai,
                                 int64_t ap_, const uint32_t *bp, float *c, int64_t c_rs,
                                 __m512 va, __mmask16 m0, __mmask16 m1, bool acc) {
    __m512 c0[TILE_R], c1[TILE_R];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        c0[r] = c1[r] = _mm512_setzero_ps();
        if (acc) {  // C's rows are read after the products: fetched now, their latency hidden
            _mm_prefetch((const char *)(c + r * c_rs), _MM_HINT_T0);
            _mm_prefetch((const char *)(c + r * c_rs + 16), _MM_HINT_T0);
        }
    }
    for (int64_t p = 0; p < KP; p++, ap += ap_) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + p * 32);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + p * 32 + 16);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m512bh x = (__m512bh)_mm512_set1_epi32((int)ap[r * ai]);
            c0[r] = _mm512_dpbf16_ps(c0[r], x, b0);
            c1[r] = _mm512_dpbf16_ps(c1[r], x, b1);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) store512(c + r * c_rs, c0[r], c1[r], va, m0, m1, acc);
}

// The M rows of one 32-column panel of C (c, lanes m0 and m1 kept) from A's words and B's
// panel bp: TILE_R rows at a time, then 4, then 1.
TGT_BF16 INLINE void panel_dpbf16(int64_t M, int64_t KP, const uint32_t *ap, int64_t ai,
                                  int64_t ap_, const uint32_t *bp, float *c, int64_t c_rs,
                                  __m512 va, __mmask16 m0, __mmask16 m1, bool acc) {
    int64_t i = 0;
    for (; i + TILE_R <= M; i += TILE_R)
        tile_dpbf16(TILE_R, KP, ap + i * ai, ai, ap_, bp, c + i * c_rs, c_rs, va, m0, m1, acc);
    for (; i + 4 <= M; i += 4)
        tile_dpbf16(4, KP, ap + i * ai, ai, ap_, bp, c + i * c_rs, c_rs, va, m0, m1, acc);
    for (; i < M; i++)
        tile_dpbf16(1, KP, ap + i * ai, ai, ap_, bp, c + i * c_rs, c_rs, va, m0, m1, acc);
}

// The bf16 block product (the contract of gemm_bf16_portable) on vdpbf16ps; M <= BQ.
TGT_BF16 static void gemm_dpbf16(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs,
                                 int64_t a_cs, const float *b, int64_t b_rs, float *c,
                                 int64_t c_rs, float alpha, bool acc) {
    int64_t KP = (K + 1) / 2;
    if (KP > KP_MAX || M > BQ) {
        tt__kattn_gemm_bf16_portable(M, N, K, a, a_rs, a_cs, b, b_rs, c, c_rs, alpha, acc);
        return;
    }
    uint32_t ap[BQ * KP_MAX], bp[KP_MAX * 32];  // A's words (pack_a_bf16), (KP, 32) words
    int64_t ai, ap_;
    pack_a_bf16(ap, &ai, &ap_, KP, M, K, a, a_rs, a_cs);
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t n = 0; n < N; n += 32) {
        __mmask16 m0 = tt__simd_mask16(N - n), m1 = tt__simd_mask16(N - n - 16);
        for (int64_t p = 0; p < KP; p++) {
            const float *r0 = b + 2 * p * b_rs + n, *r1 = 2 * p + 1 < K ? r0 + b_rs : NULL;
            _mm512_storeu_si512(bp + p * 32, pair_rows16(r0, r1, m0));
            _mm512_storeu_si512(bp + p * 32 + 16,
                                pair_rows16(r0 + 16, r1 ? r1 + 16 : NULL, m1));
        }
        panel_dpbf16(M, KP, ap, ai, ap_, bp, c + n, c_rs, va, m0, m1, acc);
    }
}

// ---- packed operands (vdpbf16ps) ----
// A right-hand operand read by many block products (the forward's k^T and v of a head, the
// backward's k^T, v^T and k of a key tile) is rounded and paired once: B (K, N) as panels of
// 32 columns, pair p of column n at bp[(n / 32) ldp + 32 p + n % 32], the odd step of the last
// pair zero when K is odd, columns past N zero: the words gemm_dpbf16 builds per call, so
// gemm_pb_dpbf16 gives its bits. A call may use a panel's first (K' + 1) / 2 pairs, K' < K,
// when K' is even (the caller checks).

// B (K, N), rows b_rs apart, into panels of ldp >= 32 (K + 1) / 2 words.
TGT_BF16 static void pack_b_dpbf16(uint32_t *bp, int64_t ldp, int64_t K, int64_t N,
                                   const float *b, int64_t b_rs) {
    for (int64_t n = 0; n < N; n += 32) {
        __mmask16 m0 = tt__simd_mask16(N - n), m1 = tt__simd_mask16(N - n - 16);
        uint32_t *dst = bp + n / 32 * ldp;
        for (int64_t p = 0; 2 * p < K; p++) {
            const float *r0 = b + 2 * p * b_rs + n, *r1 = 2 * p + 1 < K ? r0 + b_rs : NULL;
            _mm512_storeu_si512(dst + p * 32, pair_rows16(r0, r1, m0));
            _mm512_storeu_si512(dst + p * 32 + 16, pair_rows16(r0 + 16, r1 ? r1 + 16 : NULL, m1));
        }
    }
}

// The panels of B = X^T (K, N): X (N, K) rows x_rs apart, each row's pairs (pair_line16, the
// same rounding as pair_rows16) turned down its column 16 rows x 16 pairs at a time
// (tt__simd_transpose16_epi32); columns N .. N rounded up to 32 zero.
TGT_BF16 static void pack_bt_dpbf16(uint32_t *bp, int64_t ldp, int64_t K, int64_t N,
                                    const float *x, int64_t x_rs) {
    int64_t KP = (K + 1) / 2;
    __m512i r[16];
    for (int64_t n = 0; n < (N + 31) / 32 * 32; n += 16) {
        uint32_t *dst = bp + n / 32 * ldp + n % 32;
        for (int64_t p = 0; p < KP; p += 16) {
            __mmask16 m0 = tt__simd_mask16(K - 2 * p), m1 = tt__simd_mask16(K - 2 * p - 16);
            for (int i = 0; i < 16; i++)
                r[i] = n + i < N ? pair_line16(x + (n + i) * x_rs + 2 * p, m0, m1)
                                 : _mm512_setzero_si512();
            tt__simd_transpose16_epi32(r);
            int64_t np = min64(16, KP - p);
            for (int64_t q = 0; q < np; q++) _mm512_storeu_si512(dst + (p + q) * 32, r[q]);
        }
    }
}

// The products of gemm_pb_dpbf16 and gemm_pa_dpbf16: A's words as pack_a_bf16 lays them out
// (pair p of row i at ap[i ai + p ap_]), B's panels as pack_b_dpbf16.
TGT_BF16 INLINE void gemm_words_dpbf16(int64_t M, int64_t N, int64_t KP, const uint32_t *ap,
                                       int64_t ai, int64_t ap_, const uint32_t *bp, int64_t ldp,
                                       float *c, int64_t c_rs, float alpha, bool acc) {
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t n = 0; n < N; n += 32, bp += ldp) {
        __mmask16 m0 = tt__simd_mask16(N - n), m1 = tt__simd_mask16(N - n - 16);
        panel_dpbf16(M, KP, ap, ai, ap_, bp, c + n, c_rs, va, m0, m1, acc);
    }
}

// gemm_dpbf16 with B packed by pack_b_dpbf16 or pack_bt_dpbf16; K <= 2 KP_MAX, M <= BQ.
TGT_BF16 static void gemm_pb_dpbf16(int64_t M, int64_t N, int64_t K, const float *a,
                                    int64_t a_rs, int64_t a_cs, const uint32_t *bp, int64_t ldp,
                                    float *c, int64_t c_rs, float alpha, bool acc) {
    int64_t KP = (K + 1) / 2;
    uint32_t ap[BQ * KP_MAX];  // A's words (pack_a_bf16)
    int64_t ai, ap_;
    pack_a_bf16(ap, &ai, &ap_, KP, M, K, a, a_rs, a_cs);
    gemm_words_dpbf16(M, N, KP, ap, ai, ap_, bp, ldp, c, c_rs, alpha, acc);
}

// A (M, K), rows a_rs apart and unit-stride, into M rows of (K + 1) / 2 words (any M): the words
// pack_a_bf16 gives a row, so gemm_pa_dpbf16 on them gives gemm_pb_dpbf16's bits.
TGT_BF16 static void pack_a_dpbf16(uint32_t *ap, int64_t M, int64_t K, const float *a,
                                   int64_t a_rs) {
    int64_t ai, ap_;
    pack_a_bf16(ap, &ai, &ap_, (K + 1) / 2, M, K, a, a_rs, 1);
}

// gemm_pb_dpbf16 with A packed by pack_a_dpbf16; K <= 2 KP_MAX.
TGT_BF16 static void gemm_pa_dpbf16(int64_t M, int64_t N, int64_t K, const uint32_t *ap,
                                    const uint32_t *bp, int64_t ldp, float *c, int64_t c_rs,
                                    float alpha, bool acc) {
    int64_t KP = (K + 1) / 2;
    gemm_words_dpbf16(M, N, KP, ap, KP, 1, bp, ldp, c, c_rs, alpha, acc);
}

// ---- bf16 products widened to f32 (AVX-512F) ----
// (the scheme: attention_ops.h)

// widen_a512 and gemm_widen512 (attention_widen.inc).
#define TGT TGT_AVX512
#define V __m512
#define VL 16
#define M_T __mmask16
#define MASK tt__simd_mask16
#define LOADM(p, m) _mm512_maskz_loadu_ps(m, p)
#define STOREM(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define SETZERO _mm512_setzero_ps
#define STOREU _mm512_storeu_ps
#define SET1 _mm512_set1_ps
#define ROUND tt__simd_round16
#define SWAP_PAIRS(v) _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1))
#define TILE tile512
#define WIDE_ROWS TILE_R
#define WIDEN_A widen_a512
#define GEMM_WIDEN gemm_widen512
#include "attention_widen.inc"

const tt__kattn_ops_f32 tt__kattn_ops_avx512_dpbf16 = {
    gemm_dpbf16, rows_max_avx512, rows_exp_avx512, row_ds_avx512, row_scale_avx512,
    rows_dot_avx512,
    pack_b_dpbf16, pack_bt_dpbf16, gemm_pb_dpbf16, pack_a_dpbf16, gemm_pa_dpbf16,
    2 * KP_MAX,
};
const tt__kattn_ops_f32 tt__kattn_ops_avx512_bf16 = {
    gemm_widen512, rows_max_avx512, rows_exp_avx512, row_ds_avx512, row_scale_avx512,
    rows_dot_avx512,
    NULL, NULL, NULL, NULL, NULL, 0,
};

#endif

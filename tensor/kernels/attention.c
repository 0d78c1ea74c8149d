// Fused attention kernels, forward and backward, f32 and f64 (interface, letters and papers in
// attention.h): tiles of BQ queries x BK keys with an online softmax, so the (T, S) score
// matrix is never formed. Not here: dropout on the weights (nn/transformer.c composes it).
//
// The f32 inner products, exponentials and row reductions run in AVX-512 or AVX2+FMA code
// picked at run time by the CPU level (cpu.h), else in portable C; f64 always runs the portable C (it is for
// gradcheck and debugging). A block product is C (M, N) = alpha A (M, K) B (K, N) [+ C] with
// A read element by element through two strides (broadcast into a SIMD register) and the rows
// of B and C unit-stride, so q k^T needs k^T packed (a (HS, keys) panel) while P v, dS k and
// dS^T q read v, k and q in place.
//
// Threads: the forward splits (b, query head) pairs, the backward (b, kv head) groups (each
// owns the dk/dv rows of its kv head and the dq rows of its query heads), statically. Each
// output element is summed by one thread in a fixed order: results do not depend on the thread
// count. Memory: per thread, a packed k^T of one head (forward) or of one key block (backward),
// two (BQ, BK) tiles on the stack, and the backward's D = rowsum(dy y) of the group's rows; on
// vdpbf16ps, bf16 pair panels instead of the packed k^T ("packed operands" below). Each task
// fetches the next task's rows toward the cache while it works (prefetch_rows), and the
// backward zeroes the dq, dk and dv rows it owns before adding into them.
//
// Code written once for both dtypes: attention_portable.inc (the portable block operations)
// and attention_driver.inc (the tiled forward and backward), each included per dtype below.
//
// bf16 products (dims.bf16, attention.h): the f32 driver with a table whose gemm rounds its
// operands to bf16 and accumulates in f32, on vdpbf16ps (gemm_dpbf16, or gemm_pb_dpbf16 with
// a right-hand operand packed once per head or key tile), widened to f32 with FMA
// (gemm_widen512, gemm_widen256) or in portable C (gemm_bf16_portable); the same bits.
#include "attention.h"
#include "bf16.h"
#include "cpu.h"

#include <math.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define ATTN_X86 1
#include <immintrin.h>
#else
#define ATTN_X86 0
#endif

#define BQ TT_KATTN_BLOCK  // queries per tile
#define BK TT_KATTN_BLOCK  // keys per tile

// Below this many multiply-adds of q k^T (B NH T S HS) a call stays on one thread.
#define PAR_MIN ((int64_t)1 << 18)

#ifdef _OPENMP
#define PRAGMA_(x) _Pragma(#x)
#define OMP(x) PRAGMA_(omp x)
#else
#define OMP(x)
#endif

// The per-head (forward) and per-group (backward) drivers are inlined at two call sites each,
// masked and not, so the unmasked copy carries none of the mask's tests.
#if defined(__GNUC__)
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE static inline
#endif

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

// ---- the per-ISA block operations ----

// C (M, N) = alpha A B [+ C]: gemm, with A[i, k] = a[i a_rs + k a_cs] and the rows of B and C
// b_rs and c_rs apart. rows_max, rows_exp: on the rows r < nq of s (BK apart), rows_max: mx[r] =
// the max of s[r, 0 .. lim[r]) (-inf when lim[r] = 0); rows_exp: s[r, c] = c < lim[r] ?
// exp(s[r, c] - sub[r]) : 0 for c < BK and sum[r] their sum (sum NULL: skipped); a whole tile
// per call, so the rows' latencies overlap. row_ds: dp[c] = p[c] (dp[c] - D) for c < BK.
// row_scale: x[0 .. n) *= alpha. rows_dot: D[i] = sum_c x[i, c] y[i, c] for i < n, c < HS, rows
// x_rs and y_rs apart, summed in double in c order from 0 (the products of f32 values are exact
// in double). pack_b, pack_bt, gemm_pb (NULL in a table without them): the
// gemm with B (K, N), K <= pb_kmax, packed once into bf16 k-pair panels (from B's rows, or from
// the rows of X = B^T) and read by many calls (see "packed operands" below); the same bits as
// gemm. pack_a, gemm_pa (NULL likewise): gemm_pb with A (M, K), rows a_rs apart and unit-stride,
// rounded and paired once by pack_a into M rows of (K + 1) / 2 words, read by many calls.
typedef struct ops_f32 {
    void (*gemm)(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs, int64_t a_cs,
                 const float *b, int64_t b_rs, float *c, int64_t c_rs, float alpha, bool acc);
    void (*rows_max)(float *mx, const float *s, int64_t nq, const int64_t *lim);
    void (*rows_exp)(float *sum, float *s, int64_t nq, const int64_t *lim, const float *sub);
    void (*row_ds)(float *dp, const float *p, float D);
    void (*row_scale)(float *x, int64_t n, float alpha);
    void (*rows_dot)(float *D, const float *x, int64_t x_rs, const float *y, int64_t y_rs,
                     int64_t n, int64_t HS);
    void (*pack_b)(uint32_t *bp, int64_t ldp, int64_t K, int64_t N, const float *b,
                   int64_t b_rs);
    void (*pack_bt)(uint32_t *bp, int64_t ldp, int64_t K, int64_t N, const float *x,
                    int64_t x_rs);
    void (*gemm_pb)(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs, int64_t a_cs,
                    const uint32_t *bp, int64_t ldp, float *c, int64_t c_rs, float alpha,
                    bool acc);
    void (*pack_a)(uint32_t *ap, int64_t M, int64_t K, const float *a, int64_t a_rs);
    void (*gemm_pa)(int64_t M, int64_t N, int64_t K, const uint32_t *ap, const uint32_t *bp,
                    int64_t ldp, float *c, int64_t c_rs, float alpha, bool acc);
    int64_t pb_kmax;
} ops_f32;

typedef struct ops_f64 {
    void (*gemm)(int64_t M, int64_t N, int64_t K, const double *a, int64_t a_rs, int64_t a_cs,
                 const double *b, int64_t b_rs, double *c, int64_t c_rs, double alpha, bool acc);
    void (*rows_max)(double *mx, const double *s, int64_t nq, const int64_t *lim);
    void (*rows_exp)(double *sum, double *s, int64_t nq, const int64_t *lim, const double *sub);
    void (*row_ds)(double *dp, const double *p, double D);
    void (*row_scale)(double *x, int64_t n, double alpha);
    void (*rows_dot)(double *D, const double *x, int64_t x_rs, const double *y, int64_t y_rs,
                     int64_t n, int64_t HS);
    void (*pack_b)(uint32_t *bp, int64_t ldp, int64_t K, int64_t N, const double *b,
                   int64_t b_rs);
    void (*pack_bt)(uint32_t *bp, int64_t ldp, int64_t K, int64_t N, const double *x,
                    int64_t x_rs);
    void (*gemm_pb)(int64_t M, int64_t N, int64_t K, const double *a, int64_t a_rs, int64_t a_cs,
                    const uint32_t *bp, int64_t ldp, double *c, int64_t c_rs, double alpha,
                    bool acc);
    void (*pack_a)(uint32_t *ap, int64_t M, int64_t K, const double *a, int64_t a_rs);
    void (*gemm_pa)(int64_t M, int64_t N, int64_t K, const uint32_t *ap, const uint32_t *bp,
                    int64_t ldp, double *c, int64_t c_rs, double alpha, bool acc);
    int64_t pb_kmax;
} ops_f64;

// ---- portable C ----

// f32 exponentials below EXP_MIN flush to 0 in every ISA (no subnormal weights reach the
// products); f64 keeps exp's full range.
#define EXP_MIN -87.0f
static float exp_flush(float x) { return x < EXP_MIN ? 0.0f : expf(x); }

// gemm_portable_f32, rows_max_portable_f32, ..., ops_portable_f32 and the same in f64
// (attention_portable.inc).
#define F float
#define EXP exp_flush
#define OPS ops_f32
#define GEMM_PORTABLE gemm_portable_f32
#define ROWS_MAX_PORTABLE rows_max_portable_f32
#define ROWS_EXP_PORTABLE rows_exp_portable_f32
#define ROW_DS_PORTABLE row_ds_portable_f32
#define ROW_SCALE_PORTABLE row_scale_portable_f32
#define ROWS_DOT_PORTABLE rows_dot_portable_f32
#define OPS_PORTABLE ops_portable_f32
#include "attention_portable.inc"
#undef F
#undef EXP
#undef OPS
#undef GEMM_PORTABLE
#undef ROWS_MAX_PORTABLE
#undef ROWS_EXP_PORTABLE
#undef ROW_DS_PORTABLE
#undef ROW_SCALE_PORTABLE
#undef ROWS_DOT_PORTABLE
#undef OPS_PORTABLE

#define F double
#define EXP exp
#define OPS ops_f64
#define GEMM_PORTABLE gemm_portable_f64
#define ROWS_MAX_PORTABLE rows_max_portable_f64
#define ROWS_EXP_PORTABLE rows_exp_portable_f64
#define ROW_DS_PORTABLE row_ds_portable_f64
#define ROW_SCALE_PORTABLE row_scale_portable_f64
#define ROWS_DOT_PORTABLE rows_dot_portable_f64
#define OPS_PORTABLE ops_portable_f64
#include "attention_portable.inc"
#undef F
#undef EXP
#undef OPS
#undef GEMM_PORTABLE
#undef ROWS_MAX_PORTABLE
#undef ROWS_EXP_PORTABLE
#undef ROW_DS_PORTABLE
#undef ROW_SCALE_PORTABLE
#undef ROWS_DOT_PORTABLE
#undef OPS_PORTABLE

// ---- bf16 products, portable C (f32 only) ----

static float round_bf16(float x) { return tt_bf16_to_f32(tt_bf16_from_f32(x)); }

// C (M, N) = alpha A B [+ C] as the f32 gemm, with every element of A and B rounded to bf16
// and each element's products summed in f32 per k pair, the odd step's product first, then
// the even step's (vdpbf16ps's order; an odd K gets a zero odd step), from 0. Products of bf16
// values are exact in f32, so each step is one rounding, as in vdpbf16ps. In chunks of 64
// columns of accumulators.
static void gemm_bf16_portable(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs,
                               int64_t a_cs, const float *b, int64_t b_rs, float *c,
                               int64_t c_rs, float alpha, bool acc) {
    float t[64];
    for (int64_t n0 = 0; n0 < N; n0 += 64) {
        int64_t nn = min64(64, N - n0);
        for (int64_t i = 0; i < M; i++) {
            const float *ar = a + i * a_rs;
            for (int64_t n = 0; n < nn; n++) t[n] = 0;
            for (int64_t k = 0; k < K; k += 2) {
                const float *b0 = b + k * b_rs + n0;
                float a0 = round_bf16(ar[k * a_cs]);
                if (k + 1 < K) {
                    const float *b1 = b0 + b_rs;
                    float a1 = round_bf16(ar[(k + 1) * a_cs]);
                    for (int64_t n = 0; n < nn; n++) {
                        t[n] += a1 * round_bf16(b1[n]);
                        t[n] += a0 * round_bf16(b0[n]);
                    }
                } else {
                    for (int64_t n = 0; n < nn; n++) {
                        t[n] += 0.0f;  // the zero odd step (+0: turns a -0 into +0)
                        t[n] += a0 * round_bf16(b0[n]);
                    }
                }
            }
            float *cr = c + i * c_rs + n0;
            for (int64_t n = 0; n < nn; n++) {
                float o = t[n] * alpha;
                cr[n] = acc ? o + cr[n] : o;
            }
        }
    }
}

static const ops_f32 ops_portable_bf16 = {
    gemm_bf16_portable, rows_max_portable_f32, rows_exp_portable_f32, row_ds_portable_f32,
    row_scale_portable_f32, rows_dot_portable_f32,
    NULL, NULL, NULL, NULL, NULL, 0,
};

#if ATTN_X86

// exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (Cody-Waite: ln 2
// split in a 9-bit head, exact times n, and a tail); exp(r) by its Taylor series to r^7, whose
// truncation error is below 5.1e-9 there. Below EXP_MIN the result is 0; NaN stays NaN (max and
// min return their second operand on NaN, and the unordered compare keeps it).
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693359375f
#define EXP_LN2_LO -2.12194440054690583e-4f

#define INLINE static inline __attribute__((always_inline))

// ---- AVX-512 (f32, 16 lanes) ----

#define TGT_AVX512 __attribute__((target("avx512f,avx2,fma")))

TGT_AVX512 INLINE __mmask16 lanes16(int64_t n) {  // the first clamp(n, 0, 16) lanes
    n = clamp64(n, 0, 16);
    return (__mmask16)((1u << n) - 1u);
}

TGT_AVX512 INLINE __m512 exp512(__m512 x) {
    __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_MIN), _CMP_NLT_UQ);
    x = _mm512_max_ps(_mm512_set1_ps(EXP_MIN), x);
    x = _mm512_min_ps(_mm512_set1_ps(88.5f), x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(EXP_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_LN2_LO), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 5040), r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));  // exp(r), Horner
    return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
}

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

TGT_AVX512 static void gemm_avx512(int64_t M, int64_t N, int64_t K, const float *a,
                                   int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs,
                                   float *c, int64_t c_rs, float alpha, bool acc) {
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t n = 0; n < N; n += 32) {
        __mmask16 m0 = lanes16(N - n), m1 = lanes16(N - n - 16);
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
            __mmask16 mk = lanes16(lim[r] - c);
            m = _mm512_mask_max_ps(m, mk, m, _mm512_maskz_loadu_ps(mk, s + r * BK + c));
        }
        mx[r] = _mm512_reduce_max_ps(m);
    }
}

// One row of rows_exp: s[c] = c < lim ? exp(s[c] - sub) : 0, c < BK; returns the sum.
TGT_AVX512 INLINE float row_exp512(float *s, int64_t lim, float sub) {
    __m512 vs = _mm512_set1_ps(sub), sum = _mm512_setzero_ps();
    for (int64_t c = 0; c < BK; c += 16) {
        __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(s + c), vs));
        e = _mm512_maskz_mov_ps(lanes16(lim - c), e);
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
        __mmask16 mk = lanes16(n - c);
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
    rows_dot_portable_f32(D + i, x + i * x_rs, x_rs, y + i * y_rs, y_rs, n - i, HS);
}

static const ops_f32 ops_avx512_f32 = {
    gemm_avx512, rows_max_avx512, rows_exp_avx512, row_ds_avx512, row_scale_avx512,
    rows_dot_avx512,
    NULL, NULL, NULL, NULL, NULL, 0,
};

// ---- AVX2 + FMA (f32, 8 lanes) ----

#define TGT_AVX2 __attribute__((target("avx2,fma")))

static const int32_t lane_table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

TGT_AVX2 INLINE __m256i lanes8(int64_t n) {  // the first clamp(n, 0, 8) lanes
    return _mm256_loadu_si256((const __m256i *)(lane_table + 8 - clamp64(n, 0, 8)));
}

TGT_AVX2 INLINE __m256 exp256(__m256 x) {
    __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(EXP_MIN), _CMP_NLT_UQ);
    x = _mm256_max_ps(_mm256_set1_ps(EXP_MIN), x);
    x = _mm256_min_ps(_mm256_set1_ps(88.0f), x);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(EXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_LN2_LO), r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.0f / 5040), r, _mm256_set1_ps(1.0f / 720));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));  // exp(r), Horner
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
                                                   _mm256_set1_epi32(127)), 23);  // 2^n
    return _mm256_and_ps(keep, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

TGT_AVX2 INLINE float hsum256(__m256 v) {  // fixed order: halves, then pairs
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

TGT_AVX2 INLINE float hmax256(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

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
        __m256i m0 = lanes8(N - n), m1 = lanes8(N - n - 8);
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
            __m256 mk = _mm256_castsi256_ps(lanes8(lim[r] - c));
            __m256 x = _mm256_blendv_ps(m, _mm256_loadu_ps(s + r * BK + c), mk);
            m = _mm256_max_ps(m, x);
        }
        mx[r] = hmax256(m);
    }
}

// One row of rows_exp (row_exp512 in 8 lanes).
TGT_AVX2 INLINE float row_exp256(float *s, int64_t lim, float sub) {
    __m256 vs = _mm256_set1_ps(sub), sum = _mm256_setzero_ps();
    for (int64_t c = 0; c < BK; c += 8) {
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(s + c), vs));
        e = _mm256_and_ps(e, _mm256_castsi256_ps(lanes8(lim - c)));
        _mm256_storeu_ps(s + c, e);
        sum = _mm256_add_ps(sum, e);
    }
    return hsum256(sum);
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
        __m256i mk = lanes8(n - c);
        _mm256_maskstore_ps(x + c, mk, _mm256_mul_ps(_mm256_maskload_ps(x + c, mk), va));
    }
}

static const ops_f32 ops_avx2_f32 = {
    gemm_avx2, rows_max_avx2, rows_exp_avx2, row_ds_avx2, row_scale_avx2,
    rows_dot_portable_f32,
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
                _mm512_storeu_si512(ap + p * BQ + i,
                                    pair_rows16(r0 + i, r1 ? r1 + i : NULL, lanes16(M - i)));
        }
        return;
    }
    *ai = KP, *ap_ = 1;
    if (a_cs == 1) {  // 32 steps of k -> 16 words, the masks shared by the rows
        for (int64_t p = 0; p < KP; p += 16) {
            __mmask16 mw = lanes16(KP - p), m0 = lanes16(K - 2 * p), m1 = lanes16(K - 2 * p - 16);
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

// The bf16 block product (the contract of gemm_bf16_portable) on vdpbf16ps; M <= BQ.
TGT_BF16 static void gemm_dpbf16(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs,
                                 int64_t a_cs, const float *b, int64_t b_rs, float *c,
                                 int64_t c_rs, float alpha, bool acc) {
    int64_t KP = (K + 1) / 2;
    if (KP > KP_MAX || M > BQ) {
        gemm_bf16_portable(M, N, K, a, a_rs, a_cs, b, b_rs, c, c_rs, alpha, acc);
        return;
    }
    uint32_t ap[BQ * KP_MAX], bp[KP_MAX * 32];  // A's words (pack_a_bf16), (KP, 32) words
    int64_t ai, ap_;
    pack_a_bf16(ap, &ai, &ap_, KP, M, K, a, a_rs, a_cs);
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t n = 0; n < N; n += 32) {
        __mmask16 m0 = lanes16(N - n), m1 = lanes16(N - n - 16);
        for (int64_t p = 0; p < KP; p++) {
            const float *r0 = b + 2 * p * b_rs + n, *r1 = 2 * p + 1 < K ? r0 + b_rs : NULL;
            _mm512_storeu_si512(bp + p * 32, pair_rows16(r0, r1, m0));
            _mm512_storeu_si512(bp + p * 32 + 16,
                                pair_rows16(r0 + 16, r1 ? r1 + 16 : NULL, m1));
        }
        int64_t i = 0;
        for (; i + TILE_R <= M; i += TILE_R)
            tile_dpbf16(TILE_R, KP, ap + i * ai, ai, ap_, bp, c + i * c_rs + n, c_rs, va, m0, m1,
                        acc);
        for (; i + 4 <= M; i += 4)
            tile_dpbf16(4, KP, ap + i * ai, ai, ap_, bp, c + i * c_rs + n, c_rs, va, m0, m1,
                        acc);
        for (; i < M; i++)
            tile_dpbf16(1, KP, ap + i * ai, ai, ap_, bp, c + i * c_rs + n, c_rs, va, m0, m1,
                        acc);
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
        __mmask16 m0 = lanes16(N - n), m1 = lanes16(N - n - 16);
        uint32_t *dst = bp + n / 32 * ldp;
        for (int64_t p = 0; 2 * p < K; p++) {
            const float *r0 = b + 2 * p * b_rs + n, *r1 = 2 * p + 1 < K ? r0 + b_rs : NULL;
            _mm512_storeu_si512(dst + p * 32, pair_rows16(r0, r1, m0));
            _mm512_storeu_si512(dst + p * 32 + 16, pair_rows16(r0 + 16, r1 ? r1 + 16 : NULL, m1));
        }
    }
}

// r[0 .. 16) transposed as a 16 x 16 matrix of 32-bit words: r[j] becomes column j.
TGT_BF16 INLINE void transpose16(__m512i r[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {  // per 128-bit lane: (r_i[c], r_i+1[c]) pairs
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {  // u[i + c]: rows i .. i + 3 of column 4 L + c, lane L
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int c = 0; c < 4; c++) {  // the lanes of u[c], u[4 + c], u[8 + c], u[12 + c] gathered
        __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);
        __m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
        __m512i v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        r[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
        r[8 + c] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
        r[4 + c] = _mm512_shuffle_i32x4(v1, v3, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
    }
}

// The panels of B = X^T (K, N): X (N, K) rows x_rs apart, each row's pairs (pair_line16, the
// same rounding as pair_rows16) turned down its column 16 rows x 16 pairs at a time
// (transpose16); columns N .. N rounded up to 32 zero.
TGT_BF16 static void pack_bt_dpbf16(uint32_t *bp, int64_t ldp, int64_t K, int64_t N,
                                    const float *x, int64_t x_rs) {
    int64_t KP = (K + 1) / 2;
    __m512i r[16];
    for (int64_t n = 0; n < (N + 31) / 32 * 32; n += 16) {
        uint32_t *dst = bp + n / 32 * ldp + n % 32;
        for (int64_t p = 0; p < KP; p += 16) {
            __mmask16 m0 = lanes16(K - 2 * p), m1 = lanes16(K - 2 * p - 16);
            for (int i = 0; i < 16; i++)
                r[i] = n + i < N ? pair_line16(x + (n + i) * x_rs + 2 * p, m0, m1)
                                 : _mm512_setzero_si512();
            transpose16(r);
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
        __mmask16 m0 = lanes16(N - n), m1 = lanes16(N - n - 16);
        int64_t i = 0;
        for (; i + TILE_R <= M; i += TILE_R)
            tile_dpbf16(TILE_R, KP, ap + i * ai, ai, ap_, bp, c + i * c_rs + n, c_rs, va, m0, m1,
                        acc);
        for (; i + 4 <= M; i += 4)
            tile_dpbf16(4, KP, ap + i * ai, ai, ap_, bp, c + i * c_rs + n, c_rs, va, m0, m1,
                        acc);
        for (; i < M; i++)
            tile_dpbf16(1, KP, ap + i * ai, ai, ap_, bp, c + i * c_rs + n, c_rs, va, m0, m1,
                        acc);
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

// ---- bf16 products widened to f32 (AVX-512F; AVX2 + FMA; f32 only) ----
// For CPUs without AVX512-BF16: both operands rounded to bf16 and kept as f32 values on the
// stack with the two steps of each k pair swapped (step k stored at k ^ 1, K padded to even
// with a zero step), then the f32 tiles (tile512, tile256) add the products in the stored
// order with FMA: per pair the odd step's product, then the even one's, each exact, from 0:
// vdpbf16ps's sums, so the same bits as gemm_dpbf16 and gemm_bf16_portable.

#define KW_MAX 256  // steps of k (padded to even) widened on the stack; a longer K runs portable C

// Each lane of x rounded to bf16 as tt_bf16_from_f32, as an f32 value.
TGT_AVX512 INLINE __m512 round512(__m512 x) {
    __m512i u = _mm512_castps_si512(x);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));  // quiet NaN
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u)));
}

// A (M, K), A[i, k] = a[i a_rs + k a_cs], rounded and pair-swapped into aw: step k of row i at
// aw[i *wi + (k ^ 1) *wk], kw = K rounded up to even. Columns contiguous along i: k-major
// (wi = 1, wk = BQ); else i-major (wi = kw, wk = 1).
TGT_AVX512 static void widen_a512(float *aw, int64_t *wi, int64_t *wk, int64_t M, int64_t K,
                                  int64_t kw, const float *a, int64_t a_rs, int64_t a_cs) {
    if (a_rs == 1 && a_cs != 1) {
        *wi = 1, *wk = BQ;
        for (int64_t k = 0; k < kw; k++)
            for (int64_t i = 0; i < M; i += 16) {
                __mmask16 m = lanes16(M - i);
                __m512 x = k < K ? _mm512_maskz_loadu_ps(m, a + k * a_cs + i) : _mm512_setzero_ps();
                _mm512_mask_storeu_ps(aw + (k ^ 1) * BQ + i, m, round512(x));
            }
        return;
    }
    *wi = kw, *wk = 1;
    for (int64_t i = 0; i < M; i++) {
        float *dst = aw + i * kw;
        const float *ar = a + i * a_rs;
        if (a_cs == 1) {
            for (int64_t k = 0; k < kw; k += 16) {  // k even: pairs stay within a vector
                __m512 x = round512(_mm512_maskz_loadu_ps(lanes16(K - k), ar + k));
                _mm512_mask_storeu_ps(dst + k, lanes16(kw - k),
                                      _mm512_permute_ps(x, _MM_SHUFFLE(2, 3, 0, 1)));
            }
        } else {
            for (int64_t k = 0; k < kw; k++) dst[k ^ 1] = k < K ? round_bf16(ar[k * a_cs]) : 0;
        }
    }
}

// The bf16 block product (the contract of gemm_bf16_portable) on AVX-512F FMA; M <= BQ.
TGT_AVX512 static void gemm_widen512(int64_t M, int64_t N, int64_t K, const float *a,
                                     int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs,
                                     float *c, int64_t c_rs, float alpha, bool acc) {
    int64_t kw = (K + 1) / 2 * 2;
    if (kw > KW_MAX || M > BQ) {
        gemm_bf16_portable(M, N, K, a, a_rs, a_cs, b, b_rs, c, c_rs, alpha, acc);
        return;
    }
    float aw[BQ * KW_MAX], bw[KW_MAX * 32];  // A widened (widen_a512), B (kw, 32)
    int64_t wi, wk;
    widen_a512(aw, &wi, &wk, M, K, kw, a, a_rs, a_cs);
    __m512 va = _mm512_set1_ps(alpha);
    for (int64_t n = 0; n < N; n += 32) {
        __mmask16 m0 = lanes16(N - n), m1 = lanes16(N - n - 16);
        for (int64_t k = 0; k < kw; k++) {
            float *dst = bw + (k ^ 1) * 32;
            const float *br = b + k * b_rs + n;
            __m512 x0 = k < K ? _mm512_maskz_loadu_ps(m0, br) : _mm512_setzero_ps();
            __m512 x1 = k < K ? _mm512_maskz_loadu_ps(m1, br + 16) : _mm512_setzero_ps();
            _mm512_storeu_ps(dst, round512(x0));
            _mm512_storeu_ps(dst + 16, round512(x1));
        }
        int64_t i = 0;
        for (; i + TILE_R <= M; i += TILE_R)
            tile512(TILE_R, kw, aw + i * wi, wi, wk, bw, 32, c + i * c_rs + n, c_rs, va, m0, m1,
                    acc);
        for (; i + 4 <= M; i += 4)
            tile512(4, kw, aw + i * wi, wi, wk, bw, 32, c + i * c_rs + n, c_rs, va, m0, m1, acc);
        for (; i < M; i++)
            tile512(1, kw, aw + i * wi, wi, wk, bw, 32, c + i * c_rs + n, c_rs, va, m0, m1, acc);
    }
}

// Each lane of x rounded to bf16 as tt_bf16_from_f32, as an f32 value.
TGT_AVX2 INLINE __m256 round256(__m256 x) {
    __m256i u = _mm256_castps_si256(x);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    __m256 q = _mm256_castsi256_ps(_mm256_or_si256(u, _mm256_set1_epi32(0x00400000)));
    __m256 v = _mm256_blendv_ps(_mm256_castsi256_ps(r), q, nan);  // quiet NaN
    return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32((int)0xffff0000u)));
}

// widen_a512 in 8 lanes.
TGT_AVX2 static void widen_a256(float *aw, int64_t *wi, int64_t *wk, int64_t M, int64_t K,
                                int64_t kw, const float *a, int64_t a_rs, int64_t a_cs) {
    if (a_rs == 1 && a_cs != 1) {
        *wi = 1, *wk = BQ;
        for (int64_t k = 0; k < kw; k++)
            for (int64_t i = 0; i < M; i += 8) {
                __m256i m = lanes8(M - i);
                __m256 x = k < K ? _mm256_maskload_ps(a + k * a_cs + i, m) : _mm256_setzero_ps();
                _mm256_maskstore_ps(aw + (k ^ 1) * BQ + i, m, round256(x));
            }
        return;
    }
    *wi = kw, *wk = 1;
    for (int64_t i = 0; i < M; i++) {
        float *dst = aw + i * kw;
        const float *ar = a + i * a_rs;
        if (a_cs == 1) {
            for (int64_t k = 0; k < kw; k += 8) {
                __m256 x = round256(_mm256_maskload_ps(ar + k, lanes8(K - k)));
                _mm256_maskstore_ps(dst + k, lanes8(kw - k),
                                    _mm256_permute_ps(x, _MM_SHUFFLE(2, 3, 0, 1)));
            }
        } else {
            for (int64_t k = 0; k < kw; k++) dst[k ^ 1] = k < K ? round_bf16(ar[k * a_cs]) : 0;
        }
    }
}

// The bf16 block product (the contract of gemm_bf16_portable) on AVX2 FMA; M <= BQ.
TGT_AVX2 static void gemm_widen256(int64_t M, int64_t N, int64_t K, const float *a,
                                   int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs,
                                   float *c, int64_t c_rs, float alpha, bool acc) {
    int64_t kw = (K + 1) / 2 * 2;
    if (kw > KW_MAX || M > BQ) {
        gemm_bf16_portable(M, N, K, a, a_rs, a_cs, b, b_rs, c, c_rs, alpha, acc);
        return;
    }
    float aw[BQ * KW_MAX], bw[KW_MAX * 16];  // A widened (widen_a256), B (kw, 16)
    int64_t wi, wk;
    widen_a256(aw, &wi, &wk, M, K, kw, a, a_rs, a_cs);
    __m256 va = _mm256_set1_ps(alpha);
    for (int64_t n = 0; n < N; n += 16) {
        __m256i m0 = lanes8(N - n), m1 = lanes8(N - n - 8);
        for (int64_t k = 0; k < kw; k++) {
            float *dst = bw + (k ^ 1) * 16;
            const float *br = b + k * b_rs + n;
            __m256 x0 = k < K ? _mm256_maskload_ps(br, m0) : _mm256_setzero_ps();
            __m256 x1 = k < K ? _mm256_maskload_ps(br + 8, m1) : _mm256_setzero_ps();
            _mm256_storeu_ps(dst, round256(x0));
            _mm256_storeu_ps(dst + 8, round256(x1));
        }
        int64_t i = 0;
        for (; i + 4 <= M; i += 4)
            tile256(4, kw, aw + i * wi, wi, wk, bw, 16, c + i * c_rs + n, c_rs, va, m0, m1, acc);
        for (; i < M; i++)
            tile256(1, kw, aw + i * wi, wi, wk, bw, 16, c + i * c_rs + n, c_rs, va, m0, m1, acc);
    }
}

static const ops_f32 ops_avx512_dpbf16 = {
    gemm_dpbf16, rows_max_avx512, rows_exp_avx512, row_ds_avx512, row_scale_avx512,
    rows_dot_avx512,
    pack_b_dpbf16, pack_bt_dpbf16, gemm_pb_dpbf16, pack_a_dpbf16, gemm_pa_dpbf16,
    2 * KP_MAX,
};
static const ops_f32 ops_avx512_bf16 = {
    gemm_widen512, rows_max_avx512, rows_exp_avx512, row_ds_avx512, row_scale_avx512,
    rows_dot_avx512,
    NULL, NULL, NULL, NULL, NULL, 0,
};
static const ops_f32 ops_avx2_bf16 = {
    gemm_widen256, rows_max_avx2, rows_exp_avx2, row_ds_avx2, row_scale_avx2,
    rows_dot_portable_f32,
    NULL, NULL, NULL, NULL, NULL, 0,
};
#endif  // ATTN_X86

// ---- dispatch ----

// The f32 table of the CPU level (cpu.h): AVX-512 or AVX2 + FMA row operations, else the
// portable C; with d->bf16, a gemm with bf16 products, on vdpbf16ps at TT_CPU_AVX512BF16.
static const ops_f32 *ops_get_f32(const tt_kattn_dims *d) {
#if ATTN_X86
    switch (tt_cpu_get_level()) {
        case TT_CPU_AVX512BF16: return d->bf16 ? &ops_avx512_dpbf16 : &ops_avx512_f32;
        case TT_CPU_AVX512: return d->bf16 ? &ops_avx512_bf16 : &ops_avx512_f32;
        case TT_CPU_AVX2: return d->bf16 ? &ops_avx2_bf16 : &ops_avx2_f32;
        default: return d->bf16 ? &ops_portable_bf16 : &ops_portable_f32;
    }
#else
    return d->bf16 ? &ops_portable_bf16 : &ops_portable_f32;
#endif
}

static const ops_f64 *ops_get_f64(const tt_kattn_dims *d) {
    (void)d;  // f64 products stay f64
    return &ops_portable_f64;
}

// ---- forward and backward drivers ----
// Causal rows: query i sees keys j <= i, so the keys a tile row sees are lim = i + 1 - j0
// clamped to [0, nk]; a forward query tile stops at its last row's key, a backward key tile
// starts at the query tile holding its first key. A mask is applied to each score tile right
// after q k^T (apply_mask_*); without one, that call and its loops never run.

// Rows [r0, r1) of a (rows, HS) operand of es-byte elements, rows rs elements apart (NULL: none),
// fetched toward the cache ahead of use: each driver fetches the next head's (forward) or
// group's (backward) rows, a slice per tile, while it works on the current one.
static void prefetch_rows(const void *x, int64_t rs, int64_t es, int64_t r0, int64_t r1,
                          int64_t HS) {
#if defined(__GNUC__)
    if (!x) return;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t c = 0; c < HS * es; c += 64)
            __builtin_prefetch((const char *)x + r * rs * es + c, 0, 2);
#else
    (void)x, (void)rs, (void)es, (void)r0, (void)r1, (void)HS;
#endif
}

// pack_kt_f32, apply_mask_f32, forward_head_f32, tt_kattention_forward_f32, backward_group_f32,
// tt_kattention_backward_f32 and the same in f64 (attention_driver.inc).
#define F float
#define OPS ops_f32
#define OPS_GET ops_get_f32
#define PACK_KT pack_kt_f32
#define APPLY_MASK apply_mask_f32
#define FORWARD_HEAD forward_head_f32
#define FORWARD tt_kattention_forward_f32
#define BACKWARD_GROUP backward_group_f32
#define BACKWARD tt_kattention_backward_f32
#include "attention_driver.inc"
#undef F
#undef OPS
#undef OPS_GET
#undef PACK_KT
#undef APPLY_MASK
#undef FORWARD_HEAD
#undef FORWARD
#undef BACKWARD_GROUP
#undef BACKWARD

#define F double
#define OPS ops_f64
#define OPS_GET ops_get_f64
#define PACK_KT pack_kt_f64
#define APPLY_MASK apply_mask_f64
#define FORWARD_HEAD forward_head_f64
#define FORWARD tt_kattention_forward_f64
#define BACKWARD_GROUP backward_group_f64
#define BACKWARD tt_kattention_backward_f64
#include "attention_driver.inc"
#undef F
#undef OPS
#undef OPS_GET
#undef PACK_KT
#undef APPLY_MASK
#undef FORWARD_HEAD
#undef FORWARD
#undef BACKWARD_GROUP
#undef BACKWARD

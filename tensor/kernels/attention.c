// Fused attention kernels, forward and backward, f32 and f64 (interface, letters and papers in
// attention.h): tiles of BQ queries x BK keys with an online softmax, so the (T, S) score
// matrix is never formed. Not here: dropout on the weights (nn/transformer.c composes it).
//
// The f32 inner products, exponentials and row reductions run in AVX-512 or AVX2+FMA code
// picked at run time by cpuid, else in portable C; f64 always runs the portable C (it is for
// gradcheck and debugging). A block product is C (M, N) = alpha A (M, K) B (K, N) [+ C] with
// A read element by element through two strides (broadcast into a SIMD register) and the rows
// of B and C unit-stride, so q k^T needs k^T packed (a (HS, keys) panel) while P v, dS k and
// dS^T q read v, k and q in place.
//
// Threads: the forward splits (b, query head) pairs, the backward (b, kv head) groups (each
// owns the dk/dv rows of its kv head and the dq rows of its query heads), statically. Each
// output element is summed by one thread in a fixed order: results do not depend on the thread
// count. Memory: per thread, a packed k^T of one head (forward) or of one key block (backward),
// two (BQ, BK) tiles on the stack, and the backward's D = rowsum(dy y) of the group's rows.
//
// Code written once for both dtypes: attention_portable.inc (the portable block operations)
// and attention_driver.inc (the tiled forward and backward), each included per dtype below.
#include "attention.h"

#include <math.h>

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
// b_rs and c_rs apart. row_max: the max of s[0 .. lim), lim >= 1. row_exp: s[c] = c < lim ?
// exp(s[c] - sub) : 0 for c < BK, returning the sum. row_ds: dp[c] = p[c] (dp[c] - D) for c < BK.
// row_scale: x[0 .. n) *= alpha.
typedef struct ops_f32 {
    void (*gemm)(int64_t M, int64_t N, int64_t K, const float *a, int64_t a_rs, int64_t a_cs,
                 const float *b, int64_t b_rs, float *c, int64_t c_rs, float alpha, bool acc);
    float (*row_max)(const float *s, int64_t lim);
    float (*row_exp)(float *s, int64_t lim, float sub);
    void (*row_ds)(float *dp, const float *p, float D);
    void (*row_scale)(float *x, int64_t n, float alpha);
} ops_f32;

typedef struct ops_f64 {
    void (*gemm)(int64_t M, int64_t N, int64_t K, const double *a, int64_t a_rs, int64_t a_cs,
                 const double *b, int64_t b_rs, double *c, int64_t c_rs, double alpha, bool acc);
    double (*row_max)(const double *s, int64_t lim);
    double (*row_exp)(double *s, int64_t lim, double sub);
    void (*row_ds)(double *dp, const double *p, double D);
    void (*row_scale)(double *x, int64_t n, double alpha);
} ops_f64;

// ---- portable C ----

// f32 exponentials below EXP_MIN flush to 0 in every ISA (no subnormal weights reach the
// products); f64 keeps exp's full range.
#define EXP_MIN -87.0f
static float exp_flush(float x) { return x < EXP_MIN ? 0.0f : expf(x); }

// gemm_portable_f32, row_max_portable_f32, ..., ops_portable_f32 and the same in f64
// (attention_portable.inc).
#define F float
#define EXP exp_flush
#define OPS ops_f32
#define GEMM_PORTABLE gemm_portable_f32
#define ROW_MAX_PORTABLE row_max_portable_f32
#define ROW_EXP_PORTABLE row_exp_portable_f32
#define ROW_DS_PORTABLE row_ds_portable_f32
#define ROW_SCALE_PORTABLE row_scale_portable_f32
#define OPS_PORTABLE ops_portable_f32
#include "attention_portable.inc"
#undef F
#undef EXP
#undef OPS
#undef GEMM_PORTABLE
#undef ROW_MAX_PORTABLE
#undef ROW_EXP_PORTABLE
#undef ROW_DS_PORTABLE
#undef ROW_SCALE_PORTABLE
#undef OPS_PORTABLE

#define F double
#define EXP exp
#define OPS ops_f64
#define GEMM_PORTABLE gemm_portable_f64
#define ROW_MAX_PORTABLE row_max_portable_f64
#define ROW_EXP_PORTABLE row_exp_portable_f64
#define ROW_DS_PORTABLE row_ds_portable_f64
#define ROW_SCALE_PORTABLE row_scale_portable_f64
#define OPS_PORTABLE ops_portable_f64
#include "attention_portable.inc"
#undef F
#undef EXP
#undef OPS
#undef GEMM_PORTABLE
#undef ROW_MAX_PORTABLE
#undef ROW_EXP_PORTABLE
#undef ROW_DS_PORTABLE
#undef ROW_SCALE_PORTABLE
#undef OPS_PORTABLE

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

TGT_AVX512 static float row_max_avx512(const float *s, int64_t lim) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t c = 0; c < lim; c += 16) {
        __mmask16 mk = lanes16(lim - c);
        mx = _mm512_mask_max_ps(mx, mk, mx, _mm512_maskz_loadu_ps(mk, s + c));
    }
    return _mm512_reduce_max_ps(mx);
}

TGT_AVX512 static float row_exp_avx512(float *s, int64_t lim, float sub) {
    __m512 vs = _mm512_set1_ps(sub), sum = _mm512_setzero_ps();
    for (int64_t c = 0; c < BK; c += 16) {
        __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(s + c), vs));
        e = _mm512_maskz_mov_ps(lanes16(lim - c), e);
        _mm512_storeu_ps(s + c, e);
        sum = _mm512_add_ps(sum, e);
    }
    return _mm512_reduce_add_ps(sum);
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

static const ops_f32 ops_avx512_f32 = {
    gemm_avx512, row_max_avx512, row_exp_avx512, row_ds_avx512, row_scale_avx512,
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

TGT_AVX2 static float row_max_avx2(const float *s, int64_t lim) {
    __m256 mx = _mm256_set1_ps(-INFINITY);
    for (int64_t c = 0; c < lim; c += 8) {
        __m256 mk = _mm256_castsi256_ps(lanes8(lim - c));
        __m256 x = _mm256_blendv_ps(mx, _mm256_loadu_ps(s + c), mk);
        mx = _mm256_max_ps(mx, x);
    }
    return hmax256(mx);
}

TGT_AVX2 static float row_exp_avx2(float *s, int64_t lim, float sub) {
    __m256 vs = _mm256_set1_ps(sub), sum = _mm256_setzero_ps();
    for (int64_t c = 0; c < BK; c += 8) {
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(s + c), vs));
        e = _mm256_and_ps(e, _mm256_castsi256_ps(lanes8(lim - c)));
        _mm256_storeu_ps(s + c, e);
        sum = _mm256_add_ps(sum, e);
    }
    return hsum256(sum);
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
    gemm_avx2, row_max_avx2, row_exp_avx2, row_ds_avx2, row_scale_avx2,
};

#endif  // ATTN_X86

// ---- dispatch ----

static tt_kattn_isa isa_cap = TT_KATTN_ISA_COUNT;  // no cap

static tt_kattn_isa isa_supported(void) {
#if ATTN_X86
    if (__builtin_cpu_supports("avx512f")) return TT_KATTN_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return TT_KATTN_AVX2;
#endif
    return TT_KATTN_PORTABLE;
}

tt_kattn_isa tt_kattention_isa(void) {
    tt_kattn_isa s = isa_supported();
    return isa_cap < s ? isa_cap : s;
}

const char *tt_kattention_isa_name(tt_kattn_isa isa) {
    static const char *const names[TT_KATTN_ISA_COUNT] = {"portable", "avx2", "avx512"};
    return isa >= 0 && isa < TT_KATTN_ISA_COUNT ? names[isa] : "?";
}

tt_kattn_isa tt_kattention_set_isa(tt_kattn_isa isa) {
    tt_kattn_isa prev = isa_cap;
    isa_cap = isa;
    return prev;
}

static const ops_f32 *ops_get_f32(void) {
    switch (tt_kattention_isa()) {
#if ATTN_X86
        case TT_KATTN_AVX512: return &ops_avx512_f32;
        case TT_KATTN_AVX2: return &ops_avx2_f32;
#endif
        default: return &ops_portable_f32;
    }
}

static const ops_f64 *ops_get_f64(void) { return &ops_portable_f64; }

// ---- forward and backward drivers ----
// Causal rows: query i sees keys j <= i, so the keys a tile row sees are lim = i + 1 - j0
// clamped to [0, nk]; a forward query tile stops at its last row's key, a backward key tile
// starts at the query tile holding its first key. A mask is applied to each score tile right
// after q k^T (apply_mask_*); without one, that call and its loops never run.

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

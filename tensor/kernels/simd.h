// SIMD helpers shared by the x86 kernels (attention, layernorm, the bf16 conversions and GEMM):
// lane masks, the f32 exponential, bf16 rounding, horizontal sums, register transposes. static inline, each compiled
// for the smallest target that has its instructions, so it inlines into any kernel whose target
// includes that one. Only on x86-64 with GCC or Clang; the portable C never needs them.
// Letters: a lane is one f32 of a vector; n a count of lanes from the first.
#ifndef TT_KERNELS_SIMD_H
#define TT_KERNELS_SIMD_H

#include <stdint.h>

// f32 exponentials below this flush to 0 in every kernel (e^-87 is above the smallest normal
// float, so no subnormal weight ever reaches a product).
#define TT_SIMD_EXP_MIN -87.0f

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TT_SIMD_INLINE static inline __attribute__((always_inline))
#define TT_SIMD_AVX2 __attribute__((target("avx2")))
#define TT_SIMD_AVX2_FMA __attribute__((target("avx2,fma")))
#define TT_SIMD_AVX512 __attribute__((target("avx512f")))

// ---- masks ----

// The first clamp(n, 0, 16) lanes of a 16-lane vector.
TT_SIMD_AVX512 TT_SIMD_INLINE __mmask16 tt__simd_mask16(int64_t n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}
// The first clamp(n, 0, 32) 16-bit lanes of a 512-bit vector.
TT_SIMD_AVX512 TT_SIMD_INLINE __mmask32 tt__simd_mask32(int64_t n) {
    return n >= 32 ? (__mmask32)0xffffffffu : n <= 0 ? 0 : (__mmask32)((1u << n) - 1);
}
// The first clamp(n, 0, 8) lanes of an 8-lane vector, as _mm256_maskload_ps takes them.
TT_SIMD_AVX2 TT_SIMD_INLINE __m256i tt__simd_mask8(int64_t n) {
    static const int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    n = n < 0 ? 0 : n > 8 ? 8 : n;
    return _mm256_loadu_si256((const __m256i *)(table + 8 - n));
}

// ---- exp ----
// exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (Cody-Waite: ln 2
// split in a 9-bit head, exact times n, and a tail); exp(r) by its Taylor series to r^7, whose
// truncation error is below 5.1e-9 there. Below TT_SIMD_EXP_MIN the result is 0; NaN stays
// NaN (max and min return their second operand on NaN, and the unordered compare keeps it).
#define TT_SIMD_LOG2E 1.44269504088896341f
#define TT_SIMD_LN2_HI 0.693359375f
#define TT_SIMD_LN2_LO -2.12194440054690583e-4f

TT_SIMD_AVX512 TT_SIMD_INLINE __m512 tt__simd_exp16(__m512 x) {
    __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(TT_SIMD_EXP_MIN), _CMP_NLT_UQ);
    x = _mm512_max_ps(_mm512_set1_ps(TT_SIMD_EXP_MIN), x);
    x = _mm512_min_ps(_mm512_set1_ps(88.5f), x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(TT_SIMD_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(TT_SIMD_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(TT_SIMD_LN2_LO), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 5040), r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));  // exp(r), Horner
    return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
}

// The same in 8 lanes (2^n built in the exponent bits; x clamped at 88 so n + 127 fits).
TT_SIMD_AVX2_FMA TT_SIMD_INLINE __m256 tt__simd_exp8(__m256 x) {
    __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(TT_SIMD_EXP_MIN), _CMP_NLT_UQ);
    x = _mm256_max_ps(_mm256_set1_ps(TT_SIMD_EXP_MIN), x);
    x = _mm256_min_ps(_mm256_set1_ps(88.0f), x);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(TT_SIMD_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(TT_SIMD_LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(TT_SIMD_LN2_LO), r);
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

// ---- bf16 rounding ----
// Each lane of x rounded to bf16 as tt_bf16_from_f32 does (nearest even: u + 0x7fff + bit 16
// of u; a NaN made quiet instead), the bf16 bits in the upper half of the lane and garbage in
// the lower half. tt__simd_round16 / tt__simd_round8: the rounded values as f32.
TT_SIMD_AVX512 TT_SIMD_INLINE __m512i tt__simd_round_hi16(__m512 x) {
    __m512i u = _mm512_castps_si512(x);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
}
TT_SIMD_AVX512 TT_SIMD_INLINE __m512 tt__simd_round16(__m512 x) {
    __m512i r = tt__simd_round_hi16(x);
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u)));
}
TT_SIMD_AVX2 TT_SIMD_INLINE __m256i tt__simd_round_hi8(__m256 x) {
    __m256i u = _mm256_castps_si256(x);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    __m256i q = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
    return _mm256_blendv_epi8(r, q, nan);
}
TT_SIMD_AVX2 TT_SIMD_INLINE __m256 tt__simd_round8(__m256 x) {
    __m256i r = tt__simd_round_hi8(x);
    return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u)));
}

// ---- horizontal reductions (a fixed order: halves, then pairs, then the last two) ----

TT_SIMD_AVX2 TT_SIMD_INLINE float tt__simd_hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}
TT_SIMD_AVX2 TT_SIMD_INLINE float tt__simd_hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

// ---- transposes (data movement only: any bits, NaNs included, come through unchanged) ----

// r[l] lane k <- r[k] lane l for 16 x 16 floats. Four rounds: 2 x 2 blocks of elements
// (unpack), 4 x 4 (shuffle), then 128-bit quarters twice (shuffle_f32x4).
TT_SIMD_AVX512 TT_SIMD_INLINE void tt__simd_transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int m = 0; m < 4; m++) {
        t[m] = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x88);
        t[4 + m] = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xdd);
        t[8 + m] = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x88);
        t[12 + m] = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xdd);
    }
    for (int m = 0; m < 4; m++) {
        r[m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0x88);
        r[8 + m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0xdd);
        r[4 + m] = _mm512_shuffle_f32x4(t[4 + m], t[12 + m], 0x88);
        r[12 + m] = _mm512_shuffle_f32x4(t[4 + m], t[12 + m], 0xdd);
    }
}
// The same for 16 x 16 32-bit words (bf16 pairs).
TT_SIMD_AVX512 TT_SIMD_INLINE void tt__simd_transpose16_epi32(__m512i ri[16]) {
    __m512 r[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_castsi512_ps(ri[i]);
    tt__simd_transpose16(r);
    for (int i = 0; i < 16; i++) ri[i] = _mm512_castps_si512(r[i]);
}
// 8 x 8 floats: 2 x 2 blocks (unpack), 4 x 4 (shuffle), then 128-bit halves.
TT_SIMD_AVX2 TT_SIMD_INLINE void tt__simd_transpose8(__m256 r[8]) {
    __m256 t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int m = 0; m < 4; m++) {
        t[m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x20);
        t[4 + m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x31);
    }
    for (int i = 0; i < 8; i++) r[i] = t[i];
}

#endif  // x86-64 with GCC or Clang
#endif  // TT_KERNELS_SIMD_H

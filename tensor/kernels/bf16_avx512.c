// AVX-512 bf16 kernels: the f32 <-> bf16 conversions, the fused cast-and-pack into k-pair
// panels (rounding with integer adds on AVX-512F, with vcvtne2ps2bf16 on AVX512-BF16: the same
// words), a 12 x 32 micro-kernel on vdpbf16ps (AVX512-BF16) and one that widens bf16 to f32
// and uses FMA (AVX-512F + BW, for CPUs without AVX512-BF16); a 12 x 16 vdpbf16ps variant for
// a narrow last panel. Compiled with function-level target attributes, so the library still
// runs on any x86-64; bf16.c calls them only at the CPU levels (cpu.h) that have them.
#include "bf16.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "simd.h"

#define TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))
#define TARGET_AVX512BF16 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))
#define INLINE_AVX512 TARGET_AVX512 static inline __attribute__((always_inline))
#define INLINE_AVX512BF16 TARGET_AVX512BF16 static inline __attribute__((always_inline))

// ---- conversions (rounding: tt__simd_round_hi16 of simd.h, bits in each lane's upper half) ----

TARGET_AVX512 static void to_bf16_avx512(tt_bf16 *dst, const float *src, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tt__simd_mask16(n - i);
        __m512i r = _mm512_srli_epi32(tt__simd_round_hi16(_mm512_maskz_loadu_ps(m, src + i)), 16);
        _mm512_mask_cvtepi32_storeu_epi16(dst + i, m, r);
    }
}

TARGET_AVX512 static void to_f32_avx512(float *dst, const tt_bf16 *src, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tt__simd_mask16(n - i);
        __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, src + i));
        _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(h, 16)));
    }
}

// vcvtne2ps2bf16 rounds to nearest even and makes NaNs quiet as tt_bf16_from_f32 does, but
// takes subnormal inputs as zero: a block of 32 that holds one is redone by tt__simd_round_hi16.
TARGET_AVX512BF16 static void to_bf16_avx512bf16(tt_bf16 *dst, const float *src, int64_t n) {
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff), minnorm = _mm512_set1_epi32(0x800000);
    for (int64_t i = 0; i < n; i += 32) {
        __mmask16 m0 = tt__simd_mask16(n - i), m1 = tt__simd_mask16(n - i - 16);
        __m512 x0 = _mm512_maskz_loadu_ps(m0, src + i);
        __m512 x1 = _mm512_maskz_loadu_ps(m1, src + i + 16);
        __m512i a0 = _mm512_and_si512(_mm512_castps_si512(x0), absmask);
        __m512i a1 = _mm512_and_si512(_mm512_castps_si512(x1), absmask);
        __mmask16 sub0 = _mm512_cmplt_epi32_mask(a0, minnorm) & _mm512_test_epi32_mask(a0, a0);
        __mmask16 sub1 = _mm512_cmplt_epi32_mask(a1, minnorm) & _mm512_test_epi32_mask(a1, a1);
        __mmask32 m = (__mmask32)m0 | (__mmask32)m1 << 16;
        if (!(sub0 | sub1)) {
            __m512i r = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
            _mm512_mask_storeu_epi16(dst + i, m, r);
        } else {
            _mm512_mask_cvtepi32_storeu_epi16(dst + i, m0,
                                              _mm512_srli_epi32(tt__simd_round_hi16(x0), 16));
            _mm512_mask_cvtepi32_storeu_epi16(dst + i + 16, m1,
                                              _mm512_srli_epi32(tt__simd_round_hi16(x1), 16));
        }
    }
}

// ---- fused cast-and-pack ----
// X (kc, n), X[k, j] = src[k ks + j js], into w-wide k-pair panels (bf16.h, tt_k_bf16_packer).

// 16 words from rows k (low halves) and k + 1 (high halves) of X, 16 columns from s (count
// `cols`), rows ks elements apart; `odd` false when row k + 1 is past kc (zeros).
INLINE_AVX512 __m512i pair_rows(const void *s, tt_k_bf16_src type, int64_t ks, __mmask16 cols,
                                bool odd) {
    if (type == TT_K_SRC_BF16) {
        const tt_bf16 *h = s;
        __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(cols, h));
        __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(odd ? cols : 0, h + ks));
        return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
    }
    const float *f = s;
    __m512i lo = _mm512_srli_epi32(tt__simd_round_hi16(_mm512_maskz_loadu_ps(cols, f)), 16);
    __m512i hi = tt__simd_round_hi16(_mm512_maskz_loadu_ps(odd ? cols : 0, f + ks));
    return _mm512_or_si512(lo, _mm512_and_si512(hi, _mm512_set1_epi32((int)0xffff0000u)));
}

// 16 words of one line contiguous along k: pairs (k, k + 1) of `steps` elements from s.
INLINE_AVX512 __m512i pair_line(const void *s, tt_k_bf16_src type, int64_t steps) {
    if (type == TT_K_SRC_BF16) return _mm512_maskz_loadu_epi16(tt__simd_mask32(steps), s);
    const float *f = s;
    __m512i r0 = tt__simd_round_hi16(_mm512_maskz_loadu_ps(tt__simd_mask16(steps), f));
    __m512i r1 = tt__simd_round_hi16(_mm512_maskz_loadu_ps(tt__simd_mask16(steps - 16), f + 16));
    // the upper 16-bit halves of the 32 lanes, in order: 16-bit elements 1, 3, ..., 63
    const __m512i idx = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39,
                                         37, 35, 33, 31, 29, 27, 25, 23, 21, 19, 17, 15, 13,
                                         11, 9, 7, 5, 3, 1);
    return _mm512_permutex2var_epi16(r0, idx, r1);
}


// pack_rows_round and pack_lines_round (bf16_avx512_pack.inc): the packing loops over
// pair_rows and line_block_round; tt__simd_round_hi16 rounds subnormals itself (`sub` is unused).
INLINE_AVX512 __m512i pair_rows_round(const void *s, tt_k_bf16_src type, int64_t ks,
                                      __mmask16 cols, bool odd, __mmask16 *sub) {
    (void)sub;
    return pair_rows(s, type, ks, cols, odd);
}

// r[p] = panel row p of `lines` lines (zeros past them) of `steps` steps (past 32: unused)
// from s, line l at s + l ls elements: pair_line of each line, transposed.
INLINE_AVX512 void line_block_round(__m512i r[16], const char *s, tt_k_bf16_src type,
                                    size_t es, int64_t ls, int lines, int64_t steps,
                                    __mmask16 *sub) {
    (void)sub;
    for (int l = 0; l < 16; l++)
        r[l] = l < lines ? pair_line(s + (size_t)(l * ls) * es, type, steps)
                         : _mm512_setzero_si512();
    tt__simd_transpose16_epi32(r);
}

#define INLINE_PACK INLINE_AVX512
#define PACK_ROWS pack_rows_round
#define PACK_LINES pack_lines_round
#define PACK_ANY pack_any_round
#define PAIR_ROWS pair_rows_round
#define LINE_BLOCK line_block_round
#include "bf16_avx512_pack.inc"
#undef INLINE_PACK
#undef PACK_ROWS
#undef PACK_LINES
#undef PACK_ANY
#undef PAIR_ROWS
#undef LINE_BLOCK

// The AVX-512F path's tt_k_bf16_packer (tt__simd_round_hi16).
TARGET_AVX512 static void pack_avx512(uint32_t *dst, const void *src, tt_k_bf16_src type,
                                      int64_t ks, int64_t js, int64_t kc, int64_t n, int w) {
    __mmask16 sub = 0;  // unused: tt__simd_round_hi16 rounds subnormals itself
    pack_any_round(dst, src, type, ks, js, kc, n, w, &sub);
}

// ---- fused cast-and-pack on vcvtne2ps2bf16 (AVX512-BF16) ----
// One vcvtne2ps2bf16 rounds 32 floats. Its result against tt_bf16_from_f32 (the integer
// rounding, tt__simd_round_hi16 of simd.h), case by case from the Intel SDM's pseudo-code
// (convert_fp32_to_bfloat16, under VCVTNEPS2BF16; u the bits of x):
//   - normal x: the upper half of u + 0x7fff + (bit 16 of u), the integer rounding's add
//     (values past the largest bf16 become inf in both); inf: u's upper half, as the integer
//     rounding gives; zero: a zero of x's sign, as it gives;
//   - NaN: u's upper half with bit 6 (the quiet bit) set: the integer rounding's sign and
//     payload;
//   - subnormal x (exponent 0, fraction not 0): a zero of x's sign, always (DAZ; no exception,
//     MXCSR not read). The integer rounding rounds it as a number instead: to a subnormal
//     bf16, to a zero of x's sign, or, for |u| in 0x007f8000 .. 0x007fffff, up to +-2^-126,
//     the smallest normal bf16.
// vdpbf16ps (SDM: an f32 FMA with DAZ on its inputs, FTZ on its output, RNE) takes a subnormal
// bf16 as a zero of the same sign, so for the first two kinds of subnormal x the products and
// sums are the same bits as with vcvtne2ps2bf16's zero. Not for the third: 2^-126 is normal,
// 2^-126 times 2^110 adds 2^-16 to a sum where the zero adds nothing (checked on hardware,
// and by test_bf16_pack). A packer that kept vcvtne2ps2bf16's zeros would change the GEMM's
// output there. So the loops below OR vfpclassps's subnormal test (one instruction per 16
// floats) into a mask, and a block that held any subnormal is packed again with the integer
// rounding: the panels are the same words as every other path's, and a subnormal costs its
// block a second pass (weights and activations have none).
#define FPCLASS_SUBNORMAL 0x20  // vfpclassps category: denormal

// pair_rows with vcvtne2ps2bf16: the two rows' 16 floats rounded by one instruction (row k's
// bf16 in the lower 256 bits, row k + 1's above), then interleaved by one vpermw.
INLINE_AVX512BF16 __m512i pair_rows_cvt(const void *s, tt_k_bf16_src type, int64_t ks,
                                        __mmask16 cols, bool odd, __mmask16 *sub) {
    if (type == TT_K_SRC_BF16) return pair_rows(s, type, ks, cols, odd);
    const float *f = s;
    __m512 x0 = _mm512_maskz_loadu_ps(cols, f);
    __m512 x1 = _mm512_maskz_loadu_ps(odd ? cols : 0, f + ks);
    *sub |= _mm512_fpclass_ps_mask(x0, FPCLASS_SUBNORMAL) |
            _mm512_fpclass_ps_mask(x1, FPCLASS_SUBNORMAL);
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                         24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                         16, 0);
    return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(x1, x0));
}

// 8 floats of line l from s (lines ls floats apart), from step k on: zeros past `steps` and
// for l >= lines; an unmasked load when both are constants that allow it.
INLINE_AVX512 __m256 load8(const float *s, int64_t ls, int l, int lines, int64_t steps,
                           int k) {
    if (l >= lines) return _mm256_setzero_ps();
    if (steps - k >= 8) return _mm256_loadu_ps(s + l * ls + k);
    return _mm256_maskz_loadu_ps((__mmask8)tt__simd_mask16(steps - k), s + l * ls + k);
}

// line_block_round's panel rows with vcvtne2ps2bf16. f32: no 16 x 16 transpose; each source
// vector is 8 steps of two lines (a 256-bit load and a 256-bit insert), so that one
// vcvtne2ps2bf16 gives 4 pairs of lines j, 4 + j, 8 + j, 12 + j in its four 128-bit lanes,
// and a 4 x 4 transpose within the lanes (8 unpacks per 4 vectors) finishes the panel rows.
INLINE_AVX512BF16 void line_block_cvt(__m512i r[16], const char *s, tt_k_bf16_src type,
                                      size_t es, int64_t ls, int lines, int64_t steps,
                                      __mmask16 *sub) {
    if (type == TT_K_SRC_BF16) {
        line_block_round(r, s, type, es, ls, lines, steps, sub);
        return;
    }
    const float *f = (const float *)s;
    for (int q = 0; q < 4; q++) {  // panel rows 4q .. 4q + 3: steps 8q .. 8q + 7
        __m512i v[4];  // v[j] lane i: pairs 4q .. 4q + 3 of line 4i + j
        for (int j = 0; j < 4; j++) {
            __m512 x[2];  // x[h]: lines 8h + j (lower half) and 8h + 4 + j, 8 steps each
            for (int h = 0; h < 2; h++) {
                __m256 lo = load8(f, ls, 8 * h + j, lines, steps, 8 * q);
                __m256 hi = load8(f, ls, 8 * h + 4 + j, lines, steps, 8 * q);
                x[h] = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
                *sub |= _mm512_fpclass_ps_mask(x[h], FPCLASS_SUBNORMAL);
            }
            v[j] = (__m512i)_mm512_cvtne2ps_pbh(x[1], x[0]);
        }
        __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]);  // lines 4i, 4i + 1 of pairs 0, 1
        __m512i t1 = _mm512_unpackhi_epi32(v[0], v[1]);  // ... of pairs 2, 3
        __m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]);  // lines 4i + 2, 4i + 3
        __m512i t3 = _mm512_unpackhi_epi32(v[2], v[3]);
        r[4 * q] = _mm512_unpacklo_epi64(t0, t2);
        r[4 * q + 1] = _mm512_unpackhi_epi64(t0, t2);
        r[4 * q + 2] = _mm512_unpacklo_epi64(t1, t3);
        r[4 * q + 3] = _mm512_unpackhi_epi64(t1, t3);
    }
}

#define INLINE_PACK INLINE_AVX512BF16
#define PACK_ROWS pack_rows_cvt
#define PACK_LINES pack_lines_cvt
#define PACK_ANY pack_any_cvt
#define PAIR_ROWS pair_rows_cvt
#define LINE_BLOCK line_block_cvt
#include "bf16_avx512_pack.inc"
#undef INLINE_PACK
#undef PACK_ROWS
#undef PACK_LINES
#undef PACK_ANY
#undef PAIR_ROWS
#undef LINE_BLOCK

// The AVX512-BF16 path's tt_k_bf16_packer: pack_avx512's words, by vcvtne2ps2bf16 unless the
// block holds a subnormal (see above).
TARGET_AVX512BF16 static void pack_avx512bf16(uint32_t *dst, const void *src,
                                              tt_k_bf16_src type, int64_t ks, int64_t js,
                                              int64_t kc, int64_t n, int w) {
    __mmask16 sub = 0;
    pack_any_cvt(dst, src, type, ks, js, kc, n, w, &sub);
    if (sub) pack_avx512(dst, src, type, ks, js, kc, n, w);  // a subnormal: integer rounding
}

// ---- micro-kernels: 12 x 32 tiles, 24 zmm accumulators ----

#define MR 12
#define NR 32

// Stores the tile: rows >= mr skipped, columns >= nr masked off. The row loop is unrolled
// with constant indices, so the accumulators are stored straight from their registers.
INLINE_AVX512 void store_tile(__m512 acc[MR][2], float *c, int64_t ldc, int mr, int nr,
                              bool add, const float *bias) {
    __mmask16 m0 = tt__simd_mask16(nr), m1 = tt__simd_mask16(nr - 16);
    __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();  // first k block only
    if (!add && bias) {
        bias0 = _mm512_maskz_loadu_ps(m0, bias);
        bias1 = _mm512_maskz_loadu_ps(m1, bias + 16);
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        if (i < mr) {
            float *ci = c + i * ldc;
            __m512 r0 = acc[i][0], r1 = acc[i][1];
            if (add) {
                r0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, ci), r0);
                r1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, ci + 16), r1);
            } else if (bias) {
                r0 = _mm512_add_ps(bias0, r0);
                r1 = _mm512_add_ps(bias1, r1);
            }
            _mm512_mask_storeu_ps(ci, m0, r0);
            _mm512_mask_storeu_ps(ci + 16, m1, r1);
        }
    }
}

// The tile's rows of C, fetched while the k loop runs: its store (or its load, when adding)
// then finds them in cache instead of waiting on memory.
INLINE_AVX512 void prefetch_tile(const float *c, int64_t ldc, int mr) {
    for (int i = 0; i < mr; i++) {
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
    }
}

// Per k pair: 2 loads of B words (16 columns x 2 steps each), 12 broadcasts of an A word,
// 24 vdpbf16ps (each 16 lanes x 2 products).
TARGET_AVX512BF16 static void uk_dpbf16_12x32(int64_t kp, const uint32_t *a, const uint32_t *b,
                                              float *c, int64_t ldc, int mr, int nr, bool add,
                                              const float *bias) {
    __m512 acc[MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    prefetch_tile(c, ldc, mr);
    for (int64_t p = 0; p < kp; p++, a += MR, b += NR) {
        __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 16);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        }
    }
    store_tile(acc, c, ldc, mr, nr, add, bias);
}

// The same for a last panel of at most 16 columns: half the work (the panel is still 32 wide).
TARGET_AVX512BF16 static void uk_dpbf16_12x16(int64_t kp, const uint32_t *a, const uint32_t *b,
                                              float *c, int64_t ldc, int mr, int nr, bool add,
                                              const float *bias) {
    __m512 acc[MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    prefetch_tile(c, ldc, mr);
    for (int64_t p = 0; p < kp; p++, a += MR, b += NR) {
        __m512bh b0 = (__m512bh)_mm512_load_si512(b);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++)
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], (__m512bh)_mm512_set1_epi32((int)a[i]), b0);
    }
    store_tile(acc, c, ldc, mr, nr, add, bias);  // nr <= 16: the second vector is masked off
}

// Without AVX512-BF16: the words split into even-step and odd-step f32 vectors (a bf16 is the
// upper half of an f32), two FMAs per pair, odd step first: the same bits as vdpbf16ps.
TARGET_AVX512 static void uk_widen_12x32(int64_t kp, const uint32_t *a, const uint32_t *b,
                                         float *c, int64_t ldc, int mr, int nr, bool add,
                                              const float *bias) {
    const __m512i himask = _mm512_set1_epi32((int)0xffff0000u);
    __m512 acc[MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    prefetch_tile(c, ldc, mr);
    for (int64_t p = 0; p < kp; p++, a += MR, b += NR) {
        __m512i w0 = _mm512_load_si512(b), w1 = _mm512_load_si512(b + 16);
        __m512 e0 = _mm512_castsi512_ps(_mm512_slli_epi32(w0, 16));
        __m512 o0 = _mm512_castsi512_ps(_mm512_and_si512(w0, himask));
        __m512 e1 = _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16));
        __m512 o1 = _mm512_castsi512_ps(_mm512_and_si512(w1, himask));
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            __m512 ae = _mm512_castsi512_ps(_mm512_set1_epi32((int)(a[i] << 16)));
            __m512 ao = _mm512_castsi512_ps(_mm512_set1_epi32((int)(a[i] & 0xffff0000u)));
            acc[i][0] = _mm512_fmadd_ps(ao, o0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ao, o1, acc[i][1]);
            acc[i][0] = _mm512_fmadd_ps(ae, e0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ae, e1, acc[i][1]);
        }
    }
    store_tile(acc, c, ldc, mr, nr, add, bias);
}

#undef MR
#undef NR

const tt_k_bf16_kernel tt_k_bf16_avx512bf16 = {"avx512bf16 12x32 vdpbf16ps", 12, 32,
                                               uk_dpbf16_12x32, uk_dpbf16_12x16, pack_avx512bf16,
                                               to_bf16_avx512bf16, to_f32_avx512};
const tt_k_bf16_kernel tt_k_bf16_avx512 = {"avx512 12x32 widen + fma", 12, 32, uk_widen_12x32,
                                           NULL, pack_avx512, to_bf16_avx512, to_f32_avx512};

#else  // not x86-64 with GCC or Clang: never selected (below TT_CPU_AVX512)

const tt_k_bf16_kernel tt_k_bf16_avx512bf16 = {"avx512bf16 (unavailable)", 0, 0, NULL, NULL,
                                               NULL, NULL, NULL};
const tt_k_bf16_kernel tt_k_bf16_avx512 = {"avx512 (unavailable)", 0, 0, NULL, NULL, NULL,
                                           NULL, NULL};

#endif

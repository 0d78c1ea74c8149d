// AVX-512F micro-kernels of the packed GEMM: a 12 x 32 f32 tile and a 12 x 16 f64 tile (two
// zmm vectors per row, 24 accumulators), and half-width variants for a narrow last panel.
// Compiled with function-level target attributes, so the library still runs on any x86-64;
// matmul.c calls them only when cpuid reports AVX-512F. Also the packing into their
// panels (the driver's SSE2 packing is the fallback). Not the driver.
#include "matmul.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET_AVX512 __attribute__((target("avx512f,fma")))

// Register tile: MR rows, each NV vectors of VL elements; per k step, NV vector loads of the B
// panel and MR broadcasts of the A panel feed MR * NV FMAs (Goto and van de Geijn 2008, "Anatomy
// of high-performance matrix multiplication"). Edges: the panels are zero-padded, every row is
// computed, rows >= mr are not stored and columns >= nr are masked off.
// S: ps or pd; V: __m512 or __m512d; M: the mask type; VL: lanes per vector.
#define DEFINE_UKERNEL(NAME, T, S, V, M, VL, MR, NV)                                          \
    TARGET_AVX512 static void NAME(int64_t kc, const void *a_, const void *b_, void *c_,      \
                                   int64_t ldc, int mr, int nr, bool add,                    \
                                   const void *bias_) {                                      \
        const T *a = a_, *b = b_, *bias = bias_;                                             \
        T *c = c_;                                                                           \
        V acc[MR][NV];                                                                       \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                             \
                acc[i][v] = _mm512_setzero_##S();                                            \
        for (int64_t k = 0; k < kc; k++) {                                                   \
            V bv[NV];                                                                        \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                             \
                bv[v] = _mm512_load_##S(b + v * VL);                                         \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                          \
                V ai = _mm512_set1_##S(a[i]);                                                \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                         \
                    acc[i][v] = _mm512_fmadd_##S(ai, bv[v], acc[i][v]);                     \
            }                                                                                \
            a += MR;                                                                         \
            b += (int64_t)VL * 2;                                                            \
        }                                                                                    \
        M mask[NV];                                                                          \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                               \
            int w = nr - v * VL;                                                             \
            mask[v] = (M)(w >= VL ? (M)~(M)0 : w <= 0 ? 0 : (M)((1u << w) - 1));             \
        }                                                                                    \
        V bias_v[NV]; /* the bias of the tile's columns (first k block only) */              \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                 \
            bias_v[v] = !add && bias ? _mm512_maskz_loadu_##S(mask[v], bias + v * VL)       \
                                     : _mm512_setzero_##S();                                 \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                              \
            if (i >= mr) break;                                                              \
            T *ci = c + i * ldc;                                                             \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                           \
                V r = acc[i][v];                                                             \
                if (add) r = _mm512_add_##S(_mm512_maskz_loadu_##S(mask[v], ci + v * VL), r); \
                else if (bias) r = _mm512_add_##S(bias_v[v], r);                             \
                _mm512_mask_storeu_##S(ci + v * VL, mask[v], r);                             \
            }                                                                                \
        }                                                                                    \
    }

DEFINE_UKERNEL(uk_f32_12x32, float, ps, __m512, __mmask16, 16, 12, 2)
DEFINE_UKERNEL(uk_f32_12x16, float, ps, __m512, __mmask16, 16, 12, 1)
DEFINE_UKERNEL(uk_f64_12x16, double, pd, __m512d, __mmask8, 8, 12, 2)
DEFINE_UKERNEL(uk_f64_12x8, double, pd, __m512d, __mmask8, 8, 12, 1)

// ---- packing ----
// X (kc, n) into w-wide panels, the layout above (matmul.h, tt_k_packer). Rows of X
// contiguous (B of an NN product, A^T of a TN one): panel by panel, each panel row is one
// masked load of its columns and one masked store of all w lanes, so the zero padding of the
// last panel comes with the copy. Columns contiguous (A of an NN product, B = W^T in a
// Linear's forward): blocks of VL lines x VL steps are transposed in registers (16 x 16 f32,
// 8 x 8 f64) and stored as whole panel rows; lines past n load as zeros.

#define INLINE_AVX512 TARGET_AVX512 static inline __attribute__((always_inline))

INLINE_AVX512 __mmask16 first16(int64_t n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}
INLINE_AVX512 __mmask8 first8(int64_t n) {
    return n >= 8 ? (__mmask8)0xff : n <= 0 ? 0 : (__mmask8)((1u << n) - 1);
}

// r[l] lane k <- r[k] lane l. Four rounds: 2 x 2 blocks of elements (unpack), 4 x 4 (shuffle),
// then 128-bit quarters twice (shuffle_f32x4).
INLINE_AVX512 void transpose_ps(__m512 r[16]) {
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

// The same for 8 x 8 doubles: pairs (unpack), then 128-bit quarters twice.
INLINE_AVX512 void transpose_pd(__m512d r[8]) {
    __m512d t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
    }
    for (int m = 0; m < 2; m++) {  // t[m]: even (m = 0) or odd steps of rows (0, 1)
        r[m] = _mm512_shuffle_f64x2(t[m], t[2 + m], 0x88);
        r[2 + m] = _mm512_shuffle_f64x2(t[m], t[2 + m], 0xdd);
        r[4 + m] = _mm512_shuffle_f64x2(t[4 + m], t[6 + m], 0x88);
        r[6 + m] = _mm512_shuffle_f64x2(t[4 + m], t[6 + m], 0xdd);
    }
    for (int m = 0; m < 2; m++) {
        t[m] = _mm512_shuffle_f64x2(r[m], r[4 + m], 0x88);
        t[4 + m] = _mm512_shuffle_f64x2(r[m], r[4 + m], 0xdd);
        t[2 + m] = _mm512_shuffle_f64x2(r[2 + m], r[6 + m], 0x88);
        t[6 + m] = _mm512_shuffle_f64x2(r[2 + m], r[6 + m], 0xdd);
    }
    for (int i = 0; i < 8; i++) r[i] = t[i];
}

// Lines are prefetched this many elements (128 bytes) ahead of the transposes: with the
// sources in L3 or DRAM that makes them up to 1.5 times faster (a loop over 16 MiB or
// 1 GiB of sources, one A or B block at a time).
#define PF(T) (128 / (int)sizeof(T))

// T: element type; S: ps or pd; V: vector; FIRST: mask of the first n lanes; VL: lanes.
#define DEFINE_PACK(S, T, V, FIRST, VL)                                                       \
    /* rows of X contiguous (js == 1) */                                                     \
    INLINE_AVX512 void copy_##S(T *dst, const T *src, int64_t ks, int64_t kc, int64_t n,      \
                                int w) {                                                     \
        for (int64_t j0 = 0; j0 < n; j0 += w, dst += kc * w) {                               \
            int64_t cols = n - j0 < w ? n - j0 : w;                                          \
            const T *s = src + j0;                                                           \
            T *d = dst;                                                                      \
            for (int64_t k = 0; k < kc; k++, s += ks, d += w)                                \
                for (int c = 0; c < w; c += VL)                                              \
                    _mm512_mask_storeu_##S(d + c, FIRST(w - c),                              \
                                           _mm512_maskz_loadu_##S(FIRST(cols - c), s + c));  \
        }                                                                                    \
    }                                                                                        \
    /* columns of X contiguous (ks == 1): line j of the panel is src + j ls, along k */      \
    INLINE_AVX512 void tpack_##S(T *dst, const T *src, int64_t ls, int64_t kc, int64_t n,     \
                                 int w) {                                                    \
        for (int64_t j0 = 0; j0 < n; j0 += w, dst += kc * w) {                               \
            for (int c = 0; c < w; c += VL) { /* lines j0 + c ... of the panel */            \
                int64_t lines = n - j0 - c;                                                  \
                lines = lines < 0 ? 0 : lines > VL ? VL : lines;                             \
                if (lines > w - c) lines = w - c;                                            \
                const T *s = lines ? src + (j0 + c) * ls : src;                              \
                for (int64_t k0 = 0; k0 < kc; k0 += VL) {                                    \
                    int64_t steps = kc - k0 < VL ? kc - k0 : VL;                             \
                    V r[VL];                                                                 \
                    if (k0 + PF(T) < kc) /* the lines' next cache lines, ahead of the loads */ \
                        for (int l = 0; l < lines; l++)                                      \
                            _mm_prefetch((const char *)(s + l * ls + k0 + PF(T)), _MM_HINT_T0); \
                    for (int l = 0; l < VL; l++)                                             \
                        r[l] = l < lines ? _mm512_maskz_loadu_##S(FIRST(steps), s + l * ls + k0) \
                                         : _mm512_setzero_##S();                             \
                    transpose_##S(r);                                                        \
                    for (int i = 0; i < steps; i++)                                          \
                        _mm512_mask_storeu_##S(dst + (k0 + i) * w + c, FIRST(w - c), r[i]);  \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    /* the panel widths of this file's kernels (MR 12, NR 32 or 16) as constants */          \
    TARGET_AVX512 static void pack_##S(void *dst, const void *src, int64_t ks, int64_t js,   \
                                       int64_t kc, int64_t n, int w) {                       \
        if (js == 1 && ks != 1) {                                                            \
            if (w == 12) copy_##S(dst, src, ks, kc, n, 12);                                  \
            else if (w == 2 * VL) copy_##S(dst, src, ks, kc, n, 2 * VL);                     \
            else copy_##S(dst, src, ks, kc, n, w);                                           \
        } else {                                                                             \
            if (w == 12) tpack_##S(dst, src, js, kc, n, 12);                                 \
            else if (w == 2 * VL) tpack_##S(dst, src, js, kc, n, 2 * VL);                    \
            else tpack_##S(dst, src, js, kc, n, w);                                          \
        }                                                                                    \
    }

DEFINE_PACK(ps, float, __m512, first16, 16)
DEFINE_PACK(pd, double, __m512d, first8, 8)

const tt_k_gemm_kernel tt_k_gemm_avx512_f32 = {"avx512 f32 12x32", 12, 32, uk_f32_12x32,
                                               uk_f32_12x16, pack_ps};
const tt_k_gemm_kernel tt_k_gemm_avx512_f64 = {"avx512 f64 12x16", 12, 16, uk_f64_12x16,
                                               uk_f64_12x8, pack_pd};

#else  // not x86-64 with GCC or Clang: never selected (tt_k_gemm_path_supported says no)

const tt_k_gemm_kernel tt_k_gemm_avx512_f32 = {"avx512 (unavailable)", 0, 0, NULL, NULL,
                                               NULL};
const tt_k_gemm_kernel tt_k_gemm_avx512_f64 = {"avx512 (unavailable)", 0, 0, NULL, NULL,
                                               NULL};

#endif

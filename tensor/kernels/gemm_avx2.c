// AVX2 + FMA micro-kernels of the packed GEMM: a 6 x 16 f32 tile and a 6 x 8 f64 tile (two ymm
// vectors per row, 12 accumulators), and half-width variants for a narrow last panel. Compiled
// with function-level target attributes, so the library still runs on any x86-64;
// matmul.c calls them only when cpuid reports AVX2 and FMA. Also the packing into
// their panels (the driver's SSE2 packing is the fallback). Not the driver.
#include "matmul.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET_AVX2 __attribute__((target("avx2,fma")))

// Lanes < w of a ymm vector, as the all-ones / zero mask vmaskmov wants.
TARGET_AVX2 static inline __m256i lanes_ps(int w) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(w), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
TARGET_AVX2 static inline __m256i lanes_pd(int w) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(w), _mm256_setr_epi64x(0, 1, 2, 3));
}

// Register tile: MR rows, each NV vectors of VL elements; per k step, NV vector loads of the B
// panel (width 2 VL) and MR broadcasts of the A panel feed MR * NV FMAs (Goto and van de Geijn
// 2008). Edges: the panels are zero-padded, every row is computed, rows >= mr are not stored,
// columns >= nr are masked off (vmaskmov, only on a partial panel).
// S: ps or pd; V: __m256 or __m256d; VL: lanes per vector.
#define DEFINE_UKERNEL(NAME, T, S, V, VL, MR, NV)                                             \
    TARGET_AVX2 static void NAME(int64_t kc, const void *a_, const void *b_, void *c_,        \
                                 int64_t ldc, int mr, int nr, bool add, const void *bias_) {  \
        const T *a = a_, *b = b_, *bias = bias_;                                             \
        T *c = c_;                                                                           \
        V acc[MR][NV];                                                                       \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                             \
                acc[i][v] = _mm256_setzero_##S();                                            \
        for (int64_t k = 0; k < kc; k++) {                                                   \
            V bv[NV];                                                                        \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                             \
                bv[v] = _mm256_load_##S(b + v * VL);                                         \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                          \
                V ai = _mm256_set1_##S(a[i]);                                                \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                         \
                    acc[i][v] = _mm256_fmadd_##S(ai, bv[v], acc[i][v]);                     \
            }                                                                                \
            a += MR;                                                                         \
            b += (int64_t)VL * 2; /* the panel is 2 VL wide, also for the narrow variant */  \
        }                                                                                    \
        bool full = nr >= VL * NV;                                                           \
        __m256i mask[NV];                                                                    \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) mask[v] = lanes_##S(nr - v * VL); \
        V bias_v[NV]; /* the bias of the tile's columns (first k block only) */              \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                 \
            bias_v[v] = !add && bias ? _mm256_maskload_##S(bias + v * VL, mask[v])          \
                                     : _mm256_setzero_##S();                                 \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                              \
            if (i >= mr) break;                                                              \
            T *ci = c + i * ldc;                                                             \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                           \
                V r = acc[i][v];                                                             \
                if (!add && bias) r = _mm256_add_##S(bias_v[v], r);                          \
                if (full) {                                                                  \
                    if (add) r = _mm256_add_##S(_mm256_loadu_##S(ci + v * VL), r);           \
                    _mm256_storeu_##S(ci + v * VL, r);                                       \
                } else {                                                                     \
                    if (add)                                                                 \
                        r = _mm256_add_##S(_mm256_maskload_##S(ci + v * VL, mask[v]), r);    \
                    _mm256_maskstore_##S(ci + v * VL, mask[v], r);                           \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }

DEFINE_UKERNEL(uk_f32_6x16, float, ps, __m256, 8, 6, 2)
DEFINE_UKERNEL(uk_f32_6x8, float, ps, __m256, 8, 6, 1)
DEFINE_UKERNEL(uk_f64_6x8, double, pd, __m256d, 4, 6, 2)
DEFINE_UKERNEL(uk_f64_6x4, double, pd, __m256d, 4, 6, 1)

// ---- packing ----
// X (kc, n) into w-wide panels, the layout above (matmul.h, tt_k_packer). Rows of X
// contiguous (B of an NN product, A^T of a TN one): panel by panel, row by row, a plain copy
// whose width is a constant for this file's panels (the compiler emits whole-vector moves),
// zeros past n in the same pass. Columns contiguous (A of an NN product, B = W^T in a Linear's
// forward): blocks of VL lines x VL steps are transposed in registers (8 x 8 f32, 4 x 4 f64)
// and stored as whole panel rows; lines past n load as zeros.

#define INLINE_AVX2 TARGET_AVX2 static inline __attribute__((always_inline))

// r[l] lane k <- r[k] lane l: 2 x 2 blocks (unpack), 4 x 4 (shuffle), then 128-bit halves.
INLINE_AVX2 void transpose_ps(__m256 r[8]) {
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

INLINE_AVX2 void transpose_pd(__m256d r[4]) {
    __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

// The first n lanes of p (the rest zero), and of v into p: whole vectors when n covers them,
// else a masked load, and halves, pairs and single stores rather than a masked store.
INLINE_AVX2 __m256 load_first_ps(const float *p, int64_t n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes_ps((int)n));
}
INLINE_AVX2 __m256d load_first_pd(const double *p, int64_t n) {
    return n >= 4 ? _mm256_loadu_pd(p) : _mm256_maskload_pd(p, lanes_pd((int)n));
}
INLINE_AVX2 void store_first_ps(float *p, __m256 v, int n) {
    if (n >= 8) {
        _mm256_storeu_ps(p, v);
        return;
    }
    __m128 x = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(p, x);
        x = _mm256_extractf128_ps(v, 1);
        p += 4, n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)p, x);
        x = _mm_movehl_ps(x, x);
        p += 2, n -= 2;
    }
    if (n >= 1) _mm_store_ss(p, x);
}
INLINE_AVX2 void store_first_pd(double *p, __m256d v, int n) {
    if (n >= 4) {
        _mm256_storeu_pd(p, v);
        return;
    }
    __m128d x = _mm256_castpd256_pd128(v);
    if (n >= 2) {
        _mm_storeu_pd(p, x);
        x = _mm256_extractf128_pd(v, 1);
        p += 2, n -= 2;
    }
    if (n >= 1) _mm_store_sd(p, x);
}

// Lines are prefetched this many elements (128 bytes) ahead of the transposes: with the
// sources in L3 or DRAM that makes them up to 1.5 times faster (a loop over 16 MiB or
// 1 GiB of sources, one A or B block at a time).
#define PF(T) (128 / (int)sizeof(T))

// T: element type; S: ps or pd; V: vector; VL: lanes.
#define DEFINE_PACK(S, T, V, VL)                                                              \
    /* rows of X contiguous (js == 1) */                                                     \
    INLINE_AVX2 void copy_##S(T *restrict dst, const T *restrict src, int64_t ks, int64_t kc, \
                              int64_t n, int w) {                                            \
        for (int64_t j0 = 0; j0 < n; j0 += w, dst += kc * w) {                               \
            int cols = (int)(n - j0 < w ? n - j0 : w);                                       \
            const T *s = src + j0;                                                           \
            T *d = dst;                                                                      \
            if (cols == w)                                                                   \
                for (int64_t k = 0; k < kc; k++, s += ks, d += w)                            \
                    for (int j = 0; j < w; j++) d[j] = s[j];                                 \
            else                                                                             \
                for (int64_t k = 0; k < kc; k++, s += ks, d += w)                            \
                    for (int j = 0; j < w; j++) d[j] = j < cols ? s[j] : 0;                  \
        }                                                                                    \
    }                                                                                        \
    /* columns of X contiguous (ks == 1): line j of the panel is src + j ls, along k */      \
    INLINE_AVX2 void tpack_##S(T *dst, const T *src, int64_t ls, int64_t kc, int64_t n,       \
                               int w) {                                                      \
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
                        r[l] = l < lines ? load_first_##S(s + l * ls + k0, steps)            \
                                         : _mm256_setzero_##S();                             \
                    transpose_##S(r);                                                        \
                    for (int i = 0; i < steps; i++)                                          \
                        store_first_##S(dst + (k0 + i) * w + c, r[i], w - c);               \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    /* the panel widths of this file's kernels (MR 6, NR 2 VL) as constants */               \
    TARGET_AVX2 static void pack_##S(void *dst, const void *src, int64_t ks, int64_t js,     \
                                     int64_t kc, int64_t n, int w) {                         \
        if (js == 1 && ks != 1) {                                                            \
            if (w == 6) copy_##S(dst, src, ks, kc, n, 6);                                    \
            else if (w == 2 * VL) copy_##S(dst, src, ks, kc, n, 2 * VL);                     \
            else copy_##S(dst, src, ks, kc, n, w);                                           \
        } else {                                                                             \
            if (w == 6) tpack_##S(dst, src, js, kc, n, 6);                                   \
            else if (w == 2 * VL) tpack_##S(dst, src, js, kc, n, 2 * VL);                    \
            else tpack_##S(dst, src, js, kc, n, w);                                          \
        }                                                                                    \
    }

DEFINE_PACK(ps, float, __m256, 8)
DEFINE_PACK(pd, double, __m256d, 4)

const tt_k_gemm_kernel tt_k_gemm_avx2_f32 = {"avx2 f32 6x16", 6, 16, uk_f32_6x16, uk_f32_6x8,
                                             pack_ps};
const tt_k_gemm_kernel tt_k_gemm_avx2_f64 = {"avx2 f64 6x8", 6, 8, uk_f64_6x8, uk_f64_6x4,
                                             pack_pd};

#else  // not x86-64 with GCC or Clang: never selected (tt_k_gemm_path_supported says no)

const tt_k_gemm_kernel tt_k_gemm_avx2_f32 = {"avx2 (unavailable)", 0, 0, NULL, NULL, NULL};
const tt_k_gemm_kernel tt_k_gemm_avx2_f64 = {"avx2 (unavailable)", 0, 0, NULL, NULL, NULL};

#endif

// AVX2 + FMA micro-kernels of the packed GEMM: a 6 x 16 f32 tile and a 6 x 8 f64 tile (two ymm
// vectors per row, 12 accumulators), and half-width variants for a narrow last panel. Compiled
// with function-level target attributes, so the library still runs on any x86-64; matmul.c
// calls them only at CPU level avx2 or above (cpu.h). Also the packing into their panels (the
// driver's SSE2 packing is the fallback). Not the driver. The functions' bodies are templates
// (gemm_avx2_ukernel.inc per tile shape, gemm_avx2_pack.inc per dtype) included below.
#include "matmul.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "simd.h"

#define TARGET_AVX2 __attribute__((target("avx2,fma")))

// Lanes < w of a ymm vector, as the all-ones / zero mask vmaskmov wants.
TARGET_AVX2 static inline __m256i lanes_ps(int w) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(w), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
TARGET_AVX2 static inline __m256i lanes_pd(int w) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(w), _mm256_setr_epi64x(0, 1, 2, 3));
}

// ---- micro-kernels (gemm_avx2_ukernel.inc) ----
// uk_f32_6x16, uk_f32_6x8 (8-lane ps vectors), uk_f64_6x8, uk_f64_6x4 (4-lane pd vectors).

#define T float
#define V __m256
#define VL 8
#define LANES lanes_ps
#define V_SETZERO _mm256_setzero_ps
#define V_SET1 _mm256_set1_ps
#define V_LOAD _mm256_load_ps
#define V_LOADU _mm256_loadu_ps
#define V_STOREU _mm256_storeu_ps
#define V_MASKLOAD _mm256_maskload_ps
#define V_MASKSTORE _mm256_maskstore_ps
#define V_ADD _mm256_add_ps
#define V_FMADD _mm256_fmadd_ps
#define MR 6

#define UKERNEL uk_f32_6x16
#define NV 2
#include "gemm_avx2_ukernel.inc"

#define UKERNEL uk_f32_6x8
#define NV 1
#include "gemm_avx2_ukernel.inc"

#undef T
#undef V
#undef VL
#undef LANES
#undef V_SETZERO
#undef V_SET1
#undef V_LOAD
#undef V_LOADU
#undef V_STOREU
#undef V_MASKLOAD
#undef V_MASKSTORE
#undef V_ADD
#undef V_FMADD

#define T double
#define V __m256d
#define VL 4
#define LANES lanes_pd
#define V_SETZERO _mm256_setzero_pd
#define V_SET1 _mm256_set1_pd
#define V_LOAD _mm256_load_pd
#define V_LOADU _mm256_loadu_pd
#define V_STOREU _mm256_storeu_pd
#define V_MASKLOAD _mm256_maskload_pd
#define V_MASKSTORE _mm256_maskstore_pd
#define V_ADD _mm256_add_pd
#define V_FMADD _mm256_fmadd_pd

#define UKERNEL uk_f64_6x8
#define NV 2
#include "gemm_avx2_ukernel.inc"

#define UKERNEL uk_f64_6x4
#define NV 1
#include "gemm_avx2_ukernel.inc"

#undef T
#undef V
#undef VL
#undef LANES
#undef V_SETZERO
#undef V_SET1
#undef V_LOAD
#undef V_LOADU
#undef V_STOREU
#undef V_MASKLOAD
#undef V_MASKSTORE
#undef V_ADD
#undef V_FMADD
#undef MR

// ---- packing ----
// X (kc, n) into w-wide panels, the layout above (matmul.h, tt_k_packer). Rows of X
// contiguous (B of an NN product, A^T of a TN one): panel by panel, row by row, a plain copy
// whose width is a constant for this file's panels (the compiler emits whole-vector moves),
// zeros past n in the same pass. Columns contiguous (A of an NN product, B = W^T in a Linear's
// forward): blocks of VL lines x VL steps are transposed in registers (8 x 8 f32, 4 x 4 f64)
// and stored as whole panel rows; lines past n load as zeros.

#define INLINE_AVX2 TARGET_AVX2 static inline __attribute__((always_inline))

// r[l] lane k <- r[k] lane l for 4 x 4 doubles (8 x 8 floats: tt__simd_transpose8, simd.h).
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

// The packers (gemm_avx2_pack.inc): copy_ps, tpack_ps, pack_ps and the same in pd.
#define T float
#define V __m256
#define VL 8
#define V_SETZERO _mm256_setzero_ps
#define TRANSPOSE tt__simd_transpose8
#define LOAD_FIRST load_first_ps
#define STORE_FIRST store_first_ps
#define COPY copy_ps
#define TPACK tpack_ps
#define PACK pack_ps
#include "gemm_avx2_pack.inc"

#define T double
#define V __m256d
#define VL 4
#define V_SETZERO _mm256_setzero_pd
#define TRANSPOSE transpose_pd
#define LOAD_FIRST load_first_pd
#define STORE_FIRST store_first_pd
#define COPY copy_pd
#define TPACK tpack_pd
#define PACK pack_pd
#include "gemm_avx2_pack.inc"

const tt_k_gemm_kernel tt_k_gemm_avx2_f32 = {"avx2 f32 6x16", 6, 16, uk_f32_6x16, uk_f32_6x8,
                                             pack_ps, tt_k_dot_rows_f32_avx2, NULL};
const tt_k_gemm_kernel tt_k_gemm_avx2_f64 = {"avx2 f64 6x8", 6, 8, uk_f64_6x8, uk_f64_6x4,
                                             pack_pd, NULL, NULL};

#else  // not x86-64 with GCC or Clang: never selected (below TT_CPU_AVX2)

const tt_k_gemm_kernel tt_k_gemm_avx2_f32 = {"avx2 (unavailable)", 0, 0, NULL, NULL, NULL,
                                             NULL, NULL};
const tt_k_gemm_kernel tt_k_gemm_avx2_f64 = {"avx2 (unavailable)", 0, 0, NULL, NULL, NULL,
                                             NULL, NULL};

#endif

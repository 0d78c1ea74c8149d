// AVX-512F micro-kernels of the packed GEMM: a 12 x 32 f32 tile and a 12 x 16 f64 tile (two
// zmm vectors per row, 24 accumulators), and half-width variants for a narrow last panel.
// Compiled with function-level target attributes, so the library still runs on any x86-64;
// matmul.c calls them only at CPU level avx512 or above (cpu.h). Also the packing into their panels
// (the driver's SSE2 packing is the fallback). Not the driver. The functions' bodies are
// templates (gemm_avx512_ukernel.inc per tile shape, gemm_avx512_pack.inc per dtype).
#include "matmul.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "simd.h"

#define TARGET_AVX512 __attribute__((target("avx512f,fma")))

// ---- micro-kernels (gemm_avx512_ukernel.inc) ----
// uk_f32_12x32, uk_f32_12x16 (16-lane ps vectors), uk_f64_12x16, uk_f64_12x8 (8-lane pd).

#define MR 12
#define T float
#define V __m512
#define M __mmask16
#define VL 16
#define V_SETZERO _mm512_setzero_ps
#define V_SET1 _mm512_set1_ps
#define V_LOAD _mm512_load_ps
#define V_MASKZ_LOADU _mm512_maskz_loadu_ps
#define V_MASK_STOREU _mm512_mask_storeu_ps
#define V_ADD _mm512_add_ps
#define V_FMADD _mm512_fmadd_ps

#define UKERNEL uk_f32_12x32
#define NV 2
#include "gemm_avx512_ukernel.inc"

#define UKERNEL uk_f32_12x16
#define NV 1
#include "gemm_avx512_ukernel.inc"

#undef T
#undef V
#undef M
#undef VL
#undef V_SETZERO
#undef V_SET1
#undef V_LOAD
#undef V_MASKZ_LOADU
#undef V_MASK_STOREU
#undef V_ADD
#undef V_FMADD

#define T double
#define V __m512d
#define M __mmask8
#define VL 8
#define V_SETZERO _mm512_setzero_pd
#define V_SET1 _mm512_set1_pd
#define V_LOAD _mm512_load_pd
#define V_MASKZ_LOADU _mm512_maskz_loadu_pd
#define V_MASK_STOREU _mm512_mask_storeu_pd
#define V_ADD _mm512_add_pd
#define V_FMADD _mm512_fmadd_pd

#define UKERNEL uk_f64_12x16
#define NV 2
#include "gemm_avx512_ukernel.inc"

#define UKERNEL uk_f64_12x8
#define NV 1
#include "gemm_avx512_ukernel.inc"

#undef T
#undef V
#undef M
#undef VL
#undef V_SETZERO
#undef V_SET1
#undef V_LOAD
#undef V_MASKZ_LOADU
#undef V_MASK_STOREU
#undef V_ADD
#undef V_FMADD

#undef MR

// ---- packing ----
// X (kc, n) into w-wide panels, the layout above (matmul.h, tt_k_packer). Rows of X
// contiguous (B of an NN product, A^T of a TN one): panel by panel, each panel row is one
// masked load of its columns and one masked store of all w lanes, so the zero padding of the
// last panel comes with the copy. Columns contiguous (A of an NN product, B = W^T in a
// Linear's forward): blocks of VL lines x VL steps are transposed in registers (16 x 16 f32,
// 8 x 8 f64) and stored as whole panel rows; lines past n load as zeros.

#define INLINE_AVX512 TARGET_AVX512 static inline __attribute__((always_inline))

INLINE_AVX512 __mmask8 first8(int64_t n) {
    return n >= 8 ? (__mmask8)0xff : n <= 0 ? 0 : (__mmask8)((1u << n) - 1);
}

// r[l] lane k <- r[k] lane l for 8 x 8 doubles: pairs (unpack), then 128-bit quarters twice
// (16 x 16 floats: tt__simd_transpose16, simd.h).
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

// The packers (gemm_avx512_pack.inc): copy_ps, tpack_ps, pack_ps and the same in pd.
#define T float
#define V __m512
#define VL 16
#define FIRST tt__simd_mask16
#define TRANSPOSE tt__simd_transpose16
#define V_SETZERO _mm512_setzero_ps
#define V_MASKZ_LOADU _mm512_maskz_loadu_ps
#define V_MASK_STOREU _mm512_mask_storeu_ps
#define COPY copy_ps
#define TPACK tpack_ps
#define PACK pack_ps
#include "gemm_avx512_pack.inc"

#define T double
#define V __m512d
#define VL 8
#define FIRST first8
#define TRANSPOSE transpose_pd
#define V_SETZERO _mm512_setzero_pd
#define V_MASKZ_LOADU _mm512_maskz_loadu_pd
#define V_MASK_STOREU _mm512_mask_storeu_pd
#define COPY copy_pd
#define TPACK tpack_pd
#define PACK pack_pd
#include "gemm_avx512_pack.inc"

const tt_k_gemm_kernel tt_k_gemm_avx512_f32 = {"avx512 f32 12x32", 12, 32, uk_f32_12x32,
                                               uk_f32_12x16, pack_ps,
                                               tt_k_dot_rows_f32_avx512,
                                               tt_k_gemv_cols_f32_avx512};
const tt_k_gemm_kernel tt_k_gemm_avx512_f64 = {"avx512 f64 12x16", 12, 16, uk_f64_12x16,
                                               uk_f64_12x8, pack_pd, NULL, NULL};

#else  // not x86-64 with GCC or Clang: never selected (below TT_CPU_AVX512)

const tt_k_gemm_kernel tt_k_gemm_avx512_f32 = {"avx512 (unavailable)", 0, 0, NULL, NULL,
                                               NULL, NULL, NULL};
const tt_k_gemm_kernel tt_k_gemm_avx512_f64 = {"avx512 (unavailable)", 0, 0, NULL, NULL,
                                               NULL, NULL, NULL};

#endif

// AVX2 micro-kernels of the 4-bit weight GEMM, for CPUs without AVX512-VNNI: a 2 x 32 tile and
// a 1 x 32 row, both from the template q4gemm_avx2_ukernel.inc (vpmaddubsw whose int16 sums
// cannot saturate: q4gemm.h). Function-level target attributes; q4gemm.c calls them only when
// the CPU level (cpu.h) is avx2 or above. Not the driver or the packing (q4gemm.c).
#include "q4gemm.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET_AVX2 __attribute__((target("avx2,f16c")))

#define UKERNEL uk_q4_avx2_2x32
#define MR 2
#include "q4gemm_avx2_ukernel.inc"
#undef UKERNEL
#undef MR

#define UKERNEL uk_q4_avx2_1x32
#define MR 1
#include "q4gemm_avx2_ukernel.inc"
#undef UKERNEL
#undef MR

const tt_k_q4gemm_kernel tt_k_q4gemm_avx2 = {"avx2 2x32", 2, uk_q4_avx2_2x32, uk_q4_avx2_1x32};

#else
// Not x86-64: the path is never supported, so these are never called.
const tt_k_q4gemm_kernel tt_k_q4gemm_avx2 = {"avx2 (portable)", 4, NULL, NULL};
#endif

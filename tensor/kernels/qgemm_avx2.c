// AVX2 micro-kernels of the int8 GEMM, for CPUs without AVX512-VNNI: a 2 x 32 tile and a
// 1 x 32 row, both from the template qgemm_avx2_ukernel.inc (int16 widening and vpmaddwd: why,
// in qgemm.h). Compiled with function-level target attributes; qgemm.c calls them only when
// the CPU level (cpu.h) is avx2 or above. Not the driver or the packing (qgemm.c).
#include "qgemm.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET_AVX2 __attribute__((target("avx2")))

#define UKERNEL uk_avx2_2x32
#define MR 2
#include "qgemm_avx2_ukernel.inc"
#undef UKERNEL
#undef MR

#define UKERNEL uk_avx2_1x32
#define MR 1
#include "qgemm_avx2_ukernel.inc"
#undef UKERNEL
#undef MR

const tt_k_qgemm_kernel tt_k_qgemm_avx2 = {"avx2 2x32", 2, uk_avx2_2x32, uk_avx2_1x32};

#else
// Not x86-64: the path is never supported, so never called.
const tt_k_qgemm_kernel tt_k_qgemm_avx2 = {"avx2 (portable)", 2, NULL, NULL};
#endif

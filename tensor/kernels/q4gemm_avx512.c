// AVX512-VNNI micro-kernels of the 4-bit weight GEMM: a 4 x 32 tile (prefill) and a 1 x 32 row
// (decoding), both from the template q4gemm_avx512_ukernel.inc. Function-level target
// attributes, so the library still runs on any x86-64; q4gemm.c calls them only when
// tt_cpu_has_vnni(). Not the driver, the quantizers or the packing (q4gemm.c).
#include "q4gemm.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

#define UKERNEL uk_q4_vnni_4x32
#define MR 4
#include "q4gemm_avx512_ukernel.inc"
#undef UKERNEL
#undef MR

#define UKERNEL uk_q4_vnni_1x32
#define MR 1
#include "q4gemm_avx512_ukernel.inc"
#undef UKERNEL
#undef MR

const tt_k_q4gemm_kernel tt_k_q4gemm_vnni = {"vnni 4x32", 4, uk_q4_vnni_4x32, uk_q4_vnni_1x32};

#else
// Not x86-64: the path is never supported, so these are never called.
const tt_k_q4gemm_kernel tt_k_q4gemm_vnni = {"vnni (portable)", 4, NULL, NULL};
#endif

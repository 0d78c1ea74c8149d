// AVX512-VNNI micro-kernels of the int8 GEMM: an 8 x 32 tile and a 1 x 32 row (decoding), both
// from the template qgemm_avx512_ukernel.inc. Compiled with function-level target attributes,
// so the library still runs on any x86-64; qgemm.c calls them only when tt_cpu_has_vnni()
// (cpu.h: level avx512 or above and AVX512-VNNI). Not the driver or the packing (qgemm.c).
#include "qgemm.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

#define UKERNEL uk_vnni_8x32
#define MR 8
#include "qgemm_avx512_ukernel.inc"
#undef UKERNEL
#undef MR

#define UKERNEL uk_vnni_1x32
#define MR 1
#include "qgemm_avx512_ukernel.inc"
#undef UKERNEL
#undef MR

const tt_k_qgemm_kernel tt_k_qgemm_vnni = {"vnni 8x32", 8, uk_vnni_8x32, uk_vnni_1x32};

#else
// Not x86-64: the path is never supported, so these are never called.
const tt_k_qgemm_kernel tt_k_qgemm_vnni = {"vnni (portable)", 4, NULL, NULL};
#endif

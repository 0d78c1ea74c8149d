// The one CPU-feature detection of the library: every SIMD dispatcher (GEMM, bf16 GEMM, int8
// GEMM, matrix-vector rows, layernorm, attention) picks its kernels from the level here, so one
// switch forces a path everywhere. Detection runs once; the TT_CPU environment variable and
// tt_cpu_set_level lower the level (never raise it above what the CPU and OS support).
//
//     TT_CPU=avx2 build/char_gpt train ...     // the AVX2 kernels on an AVX-512 machine
//     tt_cpu_level prev = tt_cpu_set_level(TT_CPU_GENERIC);  // a test: the portable C
//     ...
//     tt_cpu_set_level(prev);
//
// Not installed. Also TT_CLONES, the attribute that compiles a plain loop for several ISAs.
#ifndef TT_KERNELS_CPU_H
#define TT_KERNELS_CPU_H

#include <stdbool.h>

// Levels in increasing order; each includes the ones below it. x86-64 only above GENERIC (the
// portable C, the reference every path is checked against); an aarch64 NEON level would take
// its own value after these, reachable only on that architecture.
typedef enum tt_cpu_level {
    TT_CPU_GENERIC,     // portable C (plus what the compiler's baseline target gives)
    TT_CPU_AVX2,        // AVX2 + FMA
    TT_CPU_AVX512,      // AVX-512 F, BW, VL, DQ (as every AVX-512 CPU since Skylake-SP has)
    TT_CPU_AVX512BF16,  // AVX-512 plus AVX512-BF16 (vdpbf16ps, vcvtne2ps2bf16)
    TT_CPU_LEVEL_COUNT
} tt_cpu_level;

// The highest level this CPU and OS support (__builtin_cpu_supports checks that the OS saves
// the vector registers), capped by TT_CPU when it is set. Detected once, at the first call.
// TT_CPU must be one of "generic", "avx2", "avx512", "avx512bf16" (case-sensitive) at or below
// what the CPU has; any other value aborts with a one-line message naming the values.
tt_cpu_level tt_cpu_max_level(void);
// The level the kernels use: tt_cpu_max_level() unless tt_cpu_set_level forced a lower one.
tt_cpu_level tt_cpu_get_level(void);
// Forces `level` for every following kernel call (tests and benchmarks); aborts when it is
// above tt_cpu_max_level(). Returns the previous level, to restore. Not thread-safe against
// running kernels: call it between them.
tt_cpu_level tt_cpu_set_level(tt_cpu_level level);
// "generic", "avx2", "avx512", "avx512bf16"; "?" out of range.
const char *tt_cpu_level_name(tt_cpu_level level);
// The level named s (the names above) in *out; false for any other string.
bool tt_cpu_level_parse(const char *s, tt_cpu_level *out);
// Forgets the detected level and any forced one: the next call detects again and reads TT_CPU
// again (tests that change TT_CPU). Not thread-safe against running kernels.
void tt_cpu_reset(void);
// The int8 GEMM's vpdpbusd path: level >= AVX512 and the CPU has AVX512-VNNI.
bool tt_cpu_has_vnni(void);

// ---- hot loops compiled for several ISAs ----
// The default build targets baseline x86-64 (SSE2). A loop marked TT_CLONES is also compiled
// for x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512), and the loader picks the best the CPU
// has (before main runs, so TT_CPU does not reach these). The build is ISO C with
// -ffp-contract=off (no FMA contraction), so every clone computes the same bits as the
// baseline; only the vector width differs. TT_NO_CLONES=1 at build time: off. Only where
// target_clones works across translation units: gcc 11 or later (the first to know the
// arch=x86-64-v3/v4 names) and clang 18 or later (clang 14 to 17 name the dispatcher
// "f.ifunc", so a caller in another file fails to link with "undefined reference to f"); with
// other compilers the loops are plain baseline code and give the same results, more slowly.
#if defined(__x86_64__) && defined(__linux__) && !defined(TT_NO_CLONES) &&  \
    ((defined(__clang__) && __clang_major__ >= 18) ||                       \
     (!defined(__clang__) && !defined(__INTEL_COMPILER) && defined(__GNUC__) && __GNUC__ >= 11))
#define TT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TT_CLONES
#endif

#endif  // TT_KERNELS_CPU_H

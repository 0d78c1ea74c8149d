// CPU-feature detection and the level every SIMD dispatcher reads (cpu.h): cpuid once, the
// TT_CPU cap from the environment, the forced level of tests. Not the kernels.
#include "cpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../tensor.h"

static const char *const level_names[TT_CPU_LEVEL_COUNT] = {"generic", "avx2", "avx512",
                                                            "avx512bf16"};

static _Atomic int max_level = -1;  // detected and capped, -1 until the first call
static _Atomic int forced = -1;     // tt_cpu_set_level's, -1 when none
static _Atomic int vnni = -1;       // the CPU has AVX512-VNNI

const char *tt_cpu_level_name(tt_cpu_level level) {
    return level >= 0 && level < TT_CPU_LEVEL_COUNT ? level_names[level] : "?";
}

bool tt_cpu_level_parse(const char *s, tt_cpu_level *out) {
    for (int l = 0; s && l < TT_CPU_LEVEL_COUNT; l++)
        if (strcmp(s, level_names[l]) == 0) {
            *out = (tt_cpu_level)l;
            return true;
        }
    return false;
}

// The best level of the hardware, and whether it has VNNI (*has_vnni).
static tt_cpu_level detect(bool *has_vnni) {
    *has_vnni = false;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return TT_CPU_GENERIC;
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq"))
        return TT_CPU_AVX2;
    *has_vnni = __builtin_cpu_supports("avx512vnni");
    if (!__builtin_cpu_supports("avx512bf16")) return TT_CPU_AVX512;
    return TT_CPU_AVX512BF16;
#else
    return TT_CPU_GENERIC;
#endif
}

// The detected level capped by TT_CPU; aborts on a value that is not a level or is above hw.
static tt_cpu_level apply_env(tt_cpu_level hw) {
    const char *s = getenv("TT_CPU");
    if (!s || !*s) return hw;
    tt_cpu_level want;
    TT_CHECK(tt_cpu_level_parse(s, &want), "TT_CPU=%s is not a level; use generic, avx2, "
             "avx512 or avx512bf16 (or unset it for the best this CPU has)", s);
    TT_CHECK(want <= hw, "TT_CPU=%s: this CPU supports levels up to %s; use generic, avx2, "
             "avx512 or avx512bf16 at or below it", s, tt_cpu_level_name(hw));
    return want;
}

tt_cpu_level tt_cpu_max_level(void) {
    int l = atomic_load(&max_level);
    if (l < 0) {
        bool v;
        l = (int)apply_env(detect(&v));
        atomic_store(&vnni, v);
        atomic_store(&max_level, l);
    }
    return (tt_cpu_level)l;
}

tt_cpu_level tt_cpu_get_level(void) {
    int f = atomic_load(&forced);
    return f >= 0 ? (tt_cpu_level)f : tt_cpu_max_level();
}

tt_cpu_level tt_cpu_set_level(tt_cpu_level level) {
    TT_CHECK(level >= 0 && level < TT_CPU_LEVEL_COUNT, "CPU level %d out of range; the levels "
             "are TT_CPU_GENERIC .. TT_CPU_AVX512BF16", (int)level);
    TT_CHECK(level <= tt_cpu_max_level(), "CPU level %s: above this machine's %s (the CPU's, "
             "or TT_CPU's cap); check tt_cpu_max_level() first", tt_cpu_level_name(level),
             tt_cpu_level_name(tt_cpu_max_level()));
    tt_cpu_level prev = tt_cpu_get_level();
    atomic_store(&forced, (int)level);
    return prev;
}

void tt_cpu_reset(void) {
    atomic_store(&forced, -1);
    atomic_store(&max_level, -1);
}

bool tt_cpu_has_vnni(void) {
    return tt_cpu_get_level() >= TT_CPU_AVX512 && atomic_load(&vnni) > 0;
}

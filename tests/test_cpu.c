// The one CPU-level switch (tensor/kernels/cpu.h): the names and their parsing, detection
// against __builtin_cpu_supports, TT_CPU capping the level (and its one-line errors), forcing
// a level and restoring it, and the kernels each level picks in every family (GEMM, bf16 GEMM,
// int8 GEMM). The kernels' bits at each level: the per-family suites (test_gemm, test_gemm_bf16,
// test_qgemm, test_layernorm_simd, test_ops_attention, test_attention_bf16) force every level
// this machine has. Run under TT_CPU=generic or TT_CPU=avx2 too (make test does).
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tensor/kernels/bf16.h"
#include "tensor/kernels/cpu.h"
#include "tensor/kernels/matmul.h"
#include "tensor/kernels/qgemm.h"

// The level of the hardware, from __builtin_cpu_supports, independently of cpu.c: each level
// needs its features and those of the levels below it.
static tt_cpu_level hw_level(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                  __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512dq");
    bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
    return bf16     ? TT_CPU_AVX512BF16
           : avx512 ? TT_CPU_AVX512
           : avx2   ? TT_CPU_AVX2
                    : TT_CPU_GENERIC;
#else
    return TT_CPU_GENERIC;
#endif
}

// The level TT_CPU asks for, or the hardware's when it is unset.
static tt_cpu_level env_level(void) {
    const char *s = getenv("TT_CPU");
    tt_cpu_level l = hw_level();
    if (s && *s) ck_assert_msg(tt_cpu_level_parse(s, &l), "TT_CPU=%s", s);
    return l;
}

START_TEST(test_names_round_trip) {
    const char *want[TT_CPU_LEVEL_COUNT] = {"generic", "avx2", "avx512", "avx512bf16"};
    for (int l = 0; l < TT_CPU_LEVEL_COUNT; l++) {
        ck_assert_str_eq(tt_cpu_level_name((tt_cpu_level)l), want[l]);
        tt_cpu_level got = TT_CPU_LEVEL_COUNT;
        ck_assert(tt_cpu_level_parse(want[l], &got));
        ck_assert_int_eq(got, l);
    }
    ck_assert_str_eq(tt_cpu_level_name(TT_CPU_LEVEL_COUNT), "?");
    ck_assert_str_eq(tt_cpu_level_name((tt_cpu_level)-1), "?");
    tt_cpu_level l = TT_CPU_AVX2;
    ck_assert(!tt_cpu_level_parse("AVX2", &l));
    ck_assert(!tt_cpu_level_parse("avx512vnni", &l));
    ck_assert(!tt_cpu_level_parse("", &l));
    ck_assert(!tt_cpu_level_parse(NULL, &l));
    ck_assert_int_eq(l, TT_CPU_AVX2);  // untouched
}
END_TEST

START_TEST(test_detects_hardware_or_env) {
    ck_assert_int_eq(tt_cpu_max_level(), env_level());
    ck_assert_int_eq(tt_cpu_get_level(), tt_cpu_max_level());
    fprintf(stderr, "test_cpu: hardware level %s, TT_CPU=%s, level %s\n",
            tt_cpu_level_name(hw_level()), getenv("TT_CPU") ? getenv("TT_CPU") : "(unset)",
            tt_cpu_level_name(tt_cpu_max_level()));
}
END_TEST

START_TEST(test_env_caps_level) {
    for (int l = 0; l <= (int)hw_level(); l++) {
        setenv("TT_CPU", tt_cpu_level_name((tt_cpu_level)l), 1);
        tt_cpu_reset();
        ck_assert_int_eq(tt_cpu_max_level(), l);
        ck_assert_int_eq(tt_cpu_get_level(), l);
    }
    setenv("TT_CPU", "", 1);  // empty: as unset
    tt_cpu_reset();
    ck_assert_int_eq(tt_cpu_max_level(), hw_level());
}
END_TEST

START_TEST(test_force_and_restore) {
    tt_cpu_level max = tt_cpu_max_level();
    for (int l = 0; l <= (int)max; l++) {
        tt_cpu_level prev = tt_cpu_set_level((tt_cpu_level)l);
        ck_assert_int_eq(prev, max);
        ck_assert_int_eq(tt_cpu_get_level(), l);
        ck_assert_int_eq(tt_cpu_max_level(), max);  // forcing never moves the cap
        ck_assert_int_eq(tt_cpu_set_level(prev), l);
        ck_assert_int_eq(tt_cpu_get_level(), max);
    }
}
END_TEST

// Each level picks its own kernels in every family; the int8 GEMM takes vpdpbusd from AVX512
// on when the CPU has VNNI.
START_TEST(test_level_picks_kernels) {
    static const char *const gemm[] = {"generic f32", "avx2 f32", "avx512 f32", "avx512 f32"};
    static const char *const bf16[] = {"generic", "avx2", "avx512 ", "avx512bf16"};
    tt_cpu_level max = tt_cpu_max_level();
    bool vnni = false;
#if defined(__x86_64__) && defined(__GNUC__)
    vnni = __builtin_cpu_supports("avx512vnni");
#endif
    for (int l = 0; l <= (int)max; l++) {
        tt_cpu_level prev = tt_cpu_set_level((tt_cpu_level)l);
        const char *g = tt_k_gemm_kernel_name(), *b = tt_k_gemm_bf16_kernel_name();
        const char *q = tt_k_qgemm_kernel_name();
        ck_assert_msg(strncmp(g, gemm[l], strlen(gemm[l])) == 0, "%s: gemm %s",
                      tt_cpu_level_name((tt_cpu_level)l), g);
        ck_assert_msg(strncmp(b, bf16[l], strlen(bf16[l])) == 0, "%s: bf16 %s",
                      tt_cpu_level_name((tt_cpu_level)l), b);
        const char *qw = l >= TT_CPU_AVX512 && vnni ? "vnni" : l >= TT_CPU_AVX2 ? "avx2"
                                                                                : "generic";
        ck_assert_msg(strncmp(q, qw, strlen(qw)) == 0, "%s: int8 %s",
                      tt_cpu_level_name((tt_cpu_level)l), q);
        ck_assert_int_eq(tt_cpu_has_vnni(), l >= TT_CPU_AVX512 && vnni);
        tt_cpu_set_level(prev);
    }
}
END_TEST

// ---- errors ----

START_TEST(test_abort_env_unknown) {
    tt_expect_abort("TT_CPU=avx3 is not a level; use generic, avx2, avx512 or avx512bf16");
    setenv("TT_CPU", "avx3", 1);
    tt_cpu_reset();
    tt_cpu_max_level();
}
END_TEST

// A level above the CPU's: only where the CPU lacks one (main registers it then).
START_TEST(test_abort_env_above_cpu) {
    tt_expect_abort("TT_CPU=avx512bf16: this CPU supports levels up to");
    setenv("TT_CPU", "avx512bf16", 1);
    tt_cpu_reset();
    tt_cpu_max_level();
}
END_TEST

// A kernel call reads TT_CPU too: the error reaches a program that never asked for a level.
START_TEST(test_abort_env_from_kernel) {
    tt_expect_abort("TT_CPU=fast is not a level");
    setenv("TT_CPU", "fast", 1);
    tt_cpu_reset();
    float a = 1, b = 2, c = 0;
    tt_k_gemm_f32(1, 1, 1, &a, 1, 1, &b, 1, 1, &c, 1, 1, false);
}
END_TEST

START_TEST(test_abort_level_out_of_range) {
    tt_expect_abort("tt_cpu_set_level: CPU level 4 out of range; the levels are TT_CPU_GENERIC "
                    ".. TT_CPU_AVX512BF16");
    tt_cpu_set_level(TT_CPU_LEVEL_COUNT);
}
END_TEST

START_TEST(test_abort_level_negative) {
    tt_expect_abort("CPU level -1 out of range");
    tt_cpu_set_level((tt_cpu_level)-1);
}
END_TEST

// Forcing above the cap: TT_CPU=generic makes any machine lack AVX2.
START_TEST(test_abort_level_above_cap) {
    tt_expect_abort("CPU level avx2: above this machine's generic");
    setenv("TT_CPU", "generic", 1);
    tt_cpu_reset();
    tt_cpu_set_level(TT_CPU_AVX2);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cpu");
    TCase *tc = tt_tcase("levels");
    tcase_add_test(tc, test_names_round_trip);
    tcase_add_test(tc, test_detects_hardware_or_env);
    tcase_add_test(tc, test_env_caps_level);
    tcase_add_test(tc, test_force_and_restore);
    tcase_add_test(tc, test_level_picks_kernels);
    suite_add_tcase(s, tc);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_env_unknown, SIGABRT);
    if (hw_level() < TT_CPU_AVX512BF16)
        tcase_add_test_raise_signal(ab, test_abort_env_above_cpu, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_env_from_kernel, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_level_out_of_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_level_negative, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_level_above_cap, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

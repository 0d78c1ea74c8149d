// SGEMM throughput of the matrix-product kernel (tensor/kernels/matmul.c): 1024^3 at 1 and 2
// threads, and the products of a baby and a mid GPT training step in the layouts the model runs
// them (forward NT, input gradient NN, weight gradient TN); beside each, the bf16 GEMM
// (tensor/kernels/bf16.c: bf16 products, f32 accumulation, f32 operands cast while packed).
// Prints `bench gemm ...` and `bench gemm bf16 path=...` lines; never part of `make test`,
// never an assertion.
//
//   bench_gemm              every figure
//   bench_gemm peak         the cores' f32 FMA and vdpbf16ps peak (GFLOPS per core)
//   bench_gemm M N K LAYOUT THREADS [REPS [bf16]]   one figure (LAYOUT nn, nt or tn)
//   TT_CPU=avx2 bench_gemm ...  cap the SIMD level of both GEMMs (generic, avx2, avx512,
//                               avx512bf16: tensor/kernels/cpu.h)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tinytorch.h"
#include "bench_util.h"
#include "tensor/kernels/bf16.h"
#include "tensor/kernels/cpu.h"
#include "tensor/kernels/matmul.h"

// Letters: C (M, N) = A (M, K) @ B (K, N). Layouts name how A and B sit in memory: nn both
// row-major; nt B stored as (N, K) (x @ W^T, a Linear's forward); tn A stored as (K, M)
// (x^T @ g, a Linear's weight gradient).

#define TIMED_RUNS 7

static float *rand_buf(int64_t n, uint64_t *state) {
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_gemm: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) {  // xorshift64*, uniform in [-1, 1)
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        uint64_t r = *state * 2685821657736338717ull;
        p[i] = (float)((double)(r >> 40) / (double)(1ull << 24) * 2 - 1);
    }
    return p;
}

// The product being timed: the f32 GEMM, or the bf16 one from the same f32 operands.
static void product(bool bf16, int64_t M, int64_t N, int64_t K, const float *A, int64_t a_rs,
                    int64_t a_cs, const float *B, int64_t b_rs, int64_t b_cs, float *C) {
    if (bf16)
        tt_k_gemm_bf16(M, N, K, A, TT_K_SRC_F32, a_rs, a_cs, B, TT_K_SRC_F32, b_rs, b_cs, C,
                       N, 1, false);
    else
        tt_k_gemm_f32(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, N, 1, false);
}

// One figure: a warm-up, then TIMED_RUNS runs of `reps` products each (reps chosen so a run
// takes about 20 ms unless given), and the median run's GFLOPS.
static void bench_one(int64_t M, int64_t N, int64_t K, const char *layout, int threads,
                      int reps, bool bf16) {
    uint64_t state = 0x9e3779b97f4a7c15ull ^ (uint64_t)(M * 31 + N * 17 + K);
    float *A = rand_buf(M * K, &state), *B = rand_buf(K * N, &state);
    float *C = rand_buf(M * N, &state);
    bool ta = strcmp(layout, "tn") == 0, tb = strcmp(layout, "nt") == 0;
    int64_t a_rs = ta ? 1 : K, a_cs = ta ? M : 1;  // A (M, K), stored (K, M) when ta
    int64_t b_rs = tb ? 1 : N, b_cs = tb ? K : 1;  // B (K, N), stored (N, K) when tb
    tt_set_num_threads(threads);
    double flops = 2.0 * (double)M * (double)N * (double)K;
    product(bf16, M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C);  // warm-up
    if (reps <= 0) {
        double t0 = now_s();
        product(bf16, M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C);
        double dt = now_s() - t0;
        reps = dt > 0 ? (int)(0.02 / dt) : 1000;
        reps = reps < 1 ? 1 : reps > 10000 ? 10000 : reps;
    }
    double gflops[TIMED_RUNS];
    for (int r = 0; r < TIMED_RUNS; r++) {
        double t0 = now_s();
        for (int i = 0; i < reps; i++) product(bf16, M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C);
        gflops[r] = flops * reps / (now_s() - t0) * 1e-9;
    }
    qsort(gflops, TIMED_RUNS, sizeof gflops[0], cmp_double);
    if (bf16)
        printf("bench gemm bf16 path=%s m=%lld n=%lld k=%lld layout=%s threads=%d "
               "gflops=%.1f\n", tt_cpu_level_name(tt_cpu_get_level()), (long long)M,
               (long long)N, (long long)K, layout, threads, gflops[TIMED_RUNS / 2]);
    else
        printf("bench gemm m=%lld n=%lld k=%lld layout=%s threads=%d gflops=%.1f\n",
               (long long)M, (long long)N, (long long)K, layout, threads,
               gflops[TIMED_RUNS / 2]);
    fflush(stdout);
    free(A);
    free(B);
    free(C);
}

// A Linear of `in` -> `out` features over R = B*T rows: forward R x out x in (NT), input
// gradient R x in x out (NN), weight gradient in x out x R (TN); each in f32 then in bf16.
static void bench_linear(int64_t R, int64_t in, int64_t out, int threads) {
    for (int bf16 = 0; bf16 < 2; bf16++) {
        bench_one(R, out, in, "nt", threads, 0, bf16);
        bench_one(R, in, out, "nn", threads, 0, bf16);
        bench_one(in, out, R, "tn", threads, 0, bf16);
    }
}

// ---- the cores' arithmetic peak ----
// 24 independent accumulators, each updated once per iteration by an FMA (f32: 16 lanes x 2
// flops) or a vdpbf16ps (16 lanes x 2 products x 2 flops), so only the units' throughput bounds
// the loop; every thread runs it at once. GFLOPS per core, the median of TIMED_RUNS.
#define PEAK_ITERS 5000000L
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx512f"))) static double peak_fma(void) {
    __m512 acc[24], x = _mm512_set1_ps(1e-9f);
    for (int i = 0; i < 24; i++) acc[i] = _mm512_setzero_ps();
    double t0 = now_s();
    for (long k = 0; k < PEAK_ITERS; k++) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; i++) acc[i] = _mm512_fmadd_ps(x, x, acc[i]);
        __asm__ volatile("" : "+v"(x));
    }
    double dt = now_s() - t0;
    float s = 0;
    for (int i = 0; i < 24; i++) s += _mm512_reduce_add_ps(acc[i]);
    return s == 1.0f ? 0 : 32.0 * 24 * PEAK_ITERS / dt / 1e9;  // s is never 1: keeps the sums
}
__attribute__((target("avx512f,avx512bf16"))) static double peak_dpbf16(void) {
    __m512 acc[24];
    __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80);
    for (int i = 0; i < 24; i++) acc[i] = _mm512_setzero_ps();
    double t0 = now_s();
    for (long k = 0; k < PEAK_ITERS; k++) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; i++) acc[i] = _mm512_dpbf16_ps(acc[i], x, x);
        __asm__ volatile("" : "+v"(x));
    }
    double dt = now_s() - t0;
    float s = 0;
    for (int i = 0; i < 24; i++) s += _mm512_reduce_add_ps(acc[i]);
    return s == 1.0f ? 0 : 64.0 * 24 * PEAK_ITERS / dt / 1e9;
}
#endif

// `bench gemm peak kind=f32_fma|bf16_dpbf16 threads=T gflops_per_core=...` (AVX-512 CPUs).
static int bench_peak(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) {
        printf("bench gemm peak: skipped (no AVX-512)\n");
        return 0;
    }
    bool bf16 = __builtin_cpu_supports("avx512bf16");
    for (int kind = 0; kind < (bf16 ? 2 : 1); kind++)
        for (int threads = 1; threads <= 2; threads++) {
            double r[TIMED_RUNS];
            for (int i = 0; i < TIMED_RUNS; i++) {
                double sum = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : sum)
#endif
                sum += kind ? peak_dpbf16() : peak_fma();
                r[i] = sum / threads;
            }
            printf("bench gemm peak kind=%s threads=%d gflops_per_core=%.1f\n",
                   kind ? "bf16_dpbf16" : "f32_fma", threads, median(r, TIMED_RUNS));
        }
#else
    printf("bench gemm peak: skipped (not x86-64)\n");
#endif
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 6 && argc <= 8 && (argc < 8 || strcmp(argv[7], "bf16") == 0)) {
        bench_one(atoll(argv[1]), atoll(argv[2]), atoll(argv[3]), argv[4], atoi(argv[5]),
                  argc >= 7 ? atoi(argv[6]) : 0, argc == 8);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "peak") == 0) return bench_peak();
    if (argc != 1) {
        fprintf(stderr, "usage: %s [peak | M N K nn|nt|tn THREADS [REPS [bf16]]]\n", argv[0]);
        return 2;
    }
    printf("bench gemm bf16 kernel: %s\n", tt_k_gemm_bf16_kernel_name());
    bench_one(1024, 1024, 1024, "nn", 1, 0, false);
    bench_one(1024, 1024, 1024, "nn", 2, 0, false);
    bench_one(1024, 1024, 1024, "nt", 2, 0, false);
    bench_one(1024, 1024, 1024, "tn", 2, 0, false);
    bench_one(1024, 1024, 1024, "nn", 1, 0, true);
    bench_one(1024, 1024, 1024, "nn", 2, 0, true);
    bench_one(1024, 1024, 1024, "nt", 2, 0, true);
    bench_one(1024, 1024, 1024, "tn", 2, 0, true);
    // baby GPT step: B*T = 12 * 64 rows, C = 128 (qkv 128 -> 384, MLP 128 -> 512 -> 128,
    // lm head 128 -> 65)
    const int64_t baby[4][2] = {{128, 384}, {128, 512}, {512, 128}, {128, 65}};
    for (int i = 0; i < 4; i++) bench_linear(768, baby[i][0], baby[i][1], 2);
    // mid GPT step: B*T = 8 * 256 rows, C = 384
    const int64_t mid[4][2] = {{384, 1152}, {384, 1536}, {1536, 384}, {384, 65}};
    for (int i = 0; i < 4; i++) bench_linear(2048, mid[i][0], mid[i][1], 2);
    return 0;
}

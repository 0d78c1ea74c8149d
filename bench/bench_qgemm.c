// Throughput of the int8 GEMM (tensor/kernels/qgemm.c) against the f32 GEMM at the mid GPT's
// Linear shapes (C = 384: qkv 384 -> 1152, attention projection 384 -> 384, MLP 384 -> 1536
// -> 384), for M = 1 (decoding one token, bound by reading the weight) and M = 2048 (a
// batch of 8 x 256 tokens, bound by arithmetic); and one decoding step's Linears of the whole
// mid model (6 layers, 24 distinct weights, 42 MB in f32, 10.6 MB in int8), as a model reads
// them. Prints `bench qgemm ...` lines; never part of `make test`, never an assertion.
//
//   bench_qgemm                          every figure, on every path the CPU has
//   bench_qgemm PATH M N K [THREADS]     one figure (PATH auto, generic, avx2 or vnni)
//   bench_qgemm PATH decode [THREADS]    the model's decoding step
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinytorch.h"
#include "bench_util.h"
#include "tensor/kernels/cpu.h"
#include "tensor/kernels/matmul.h"
#include "tensor/kernels/qgemm.h"

// Letters: Y (M, N) = X (M, K) W^T + bias, W (N, K), as a Linear's forward.

// Timed runs per figure, int8 and f32 alternating (run i of one, then run i of the other), so
// a neighbour's load on the shared machine hits both alike; medians are reported.
#define TIMED_RUNS 9

static float *rand_buf(int64_t n, uint64_t *state, float amp) {
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_qgemm: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) {  // xorshift64*, uniform in [-amp, amp)
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        uint64_t r = *state * 2685821657736338717ull;
        p[i] = amp * (float)((double)(r >> 40) / (double)(1ull << 24) * 2 - 1);
    }
    return p;
}

// A set of Linears run one after the other, as a forward pass does: nl layers of (K, N) each.
typedef struct linears {
    int n;
    int64_t M, N[32], K[32];
    float *w[32], *bias[32], *x, *y;  // x (M, max K), y (M, max N)
    tt_k_qweight qw[32];
} linears;

static void linears_init(linears *l, int n, int64_t M, const int64_t *N, const int64_t *K) {
    uint64_t state = 0x9e3779b97f4a7c15ull ^ (uint64_t)(M * 31 + N[0] * 17 + K[0]);
    int64_t kmax = 0, nmax = 0;
    l->n = n;
    l->M = M;
    for (int i = 0; i < n; i++) {
        l->N[i] = N[i];
        l->K[i] = K[i];
        l->w[i] = rand_buf(N[i] * K[i], &state, 0.05f);
        l->bias[i] = rand_buf(N[i], &state, 0.05f);
        tt_k_qweight_init(&l->qw[i], l->w[i], N[i], K[i]);
        kmax = K[i] > kmax ? K[i] : kmax;
        nmax = N[i] > nmax ? N[i] : nmax;
    }
    l->x = rand_buf(M * kmax, &state, 1.0f);
    l->y = rand_buf(M * nmax, &state, 1.0f);
}

static void linears_free(linears *l) {
    for (int i = 0; i < l->n; i++) {
        free(l->w[i]);
        free(l->bias[i]);
        tt_k_qweight_free(&l->qw[i]);
    }
    free(l->x);
    free(l->y);
}

static void run_int8(const linears *l) {
    for (int i = 0; i < l->n; i++) tt_k_qgemm_f32(l->y, l->x, &l->qw[i], l->bias[i], l->M);
}

static void run_f32(const linears *l) {
    for (int i = 0; i < l->n; i++)  // W (N, K) read as B = W^T (K, N): the nt layout
        tt_k_gemm_bias_f32(l->M, l->N[i], l->K[i], l->x, l->K[i], 1, l->w[i], 1, l->K[i],
                           l->bias[i], l->y, l->N[i]);
}

// Seconds per call of `run`, `reps` calls per timed run.
static double time_run(void (*run)(const linears *), const linears *l, int reps) {
    double t0 = now_s();
    for (int r = 0; r < reps; r++) run(l);
    return (now_s() - t0) / reps;
}

static int reps_for(void (*run)(const linears *), const linears *l) {
    run(l);  // warm-up (workspaces, page faults)
    double dt = time_run(run, l, 1);
    int reps = dt > 0 ? (int)(0.02 / dt) : 1000;
    return reps < 1 ? 1 : reps > 20000 ? 20000 : reps;
}

// The int8 path the CPU level runs: the first word of its kernel's name (vnni, avx2, generic).
static const char *qpath_name(void) {
    static char name[16];
    const char *k = tt_k_qgemm_kernel_name();
    size_t n = strcspn(k, " ");
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), k);
    return name;
}

// Median times of the int8 and the f32 products of l, alternating; prints one line.
static void bench_linears(const char *what, const linears *l, bool with_f32) {
    int ri = reps_for(run_int8, l), rf = with_f32 ? reps_for(run_f32, l) : 0;
    double ti[TIMED_RUNS], tf[TIMED_RUNS];
    for (int r = 0; r < TIMED_RUNS; r++) {
        ti[r] = time_run(run_int8, l, ri);
        if (with_f32) tf[r] = time_run(run_f32, l, rf);
    }
    double mi = median(ti, TIMED_RUNS), mf = with_f32 ? median(tf, TIMED_RUNS) : 0;
    double macs = 0, wbytes = 0;
    for (int i = 0; i < l->n; i++) {
        macs += (double)l->M * (double)l->N[i] * (double)l->K[i];
        wbytes += (double)tt_k_qweight_bytes(&l->qw[i]);
    }
    printf("bench qgemm path=%s f32_path=%s %s m=%lld",
           qpath_name(), tt_cpu_level_name(tt_cpu_get_level()), what, (long long)l->M);
    if (l->n == 1) printf(" n=%lld k=%lld", (long long)l->N[0], (long long)l->K[0]);
    printf(" threads=%d us=%.1f gops=%.1f weight_gbs=%.1f", tt_get_num_threads(), mi * 1e6,
           2 * macs / mi * 1e-9, wbytes / mi * 1e-9);
    if (with_f32)
        printf(" f32_us=%.1f f32_gflops=%.1f speedup=%.2f", mf * 1e6, 2 * macs / mf * 1e-9,
               mf / mi);
    printf("\n");
    fflush(stdout);
}

static void bench_shape(int64_t M, int64_t N, int64_t K, bool with_f32) {
    linears l;
    linears_init(&l, 1, M, &N, &K);
    bench_linears("linear", &l, with_f32);
    linears_free(&l);
}

// One decoding step's Linears of the mid GPT: per layer qkv, projection, MLP up and down; 24
// distinct weights, so nothing stays in L2 between tokens (the lm head, tied to the embedding,
// 384 -> 65, is left out: 0.1 % of the weights).
static void bench_decode(int64_t M) {
    int64_t N[24], K[24];
    const int64_t shapes[4][2] = {{1152, 384}, {384, 384}, {1536, 384}, {384, 1536}};
    for (int i = 0; i < 24; i++) {
        N[i] = shapes[i % 4][0];
        K[i] = shapes[i % 4][1];
    }
    linears l;
    linears_init(&l, 24, M, N, K);
    bench_linears("decode_mid_l6", &l, true);
    linears_free(&l);
}

// Forces the CPU level of an int8 path (tensor/kernels/cpu.h), so the int8 and the f32
// products use the same vector ISA (vnni with the AVX-512 f32 kernels, avx2 with the AVX2
// ones, generic with the portable ones); auto leaves the level as detected (and TT_CPU).
static bool set_path(const char *name) {
    static const char *const names[3] = {"generic", "avx2", "vnni"};
    if (strcmp(name, "auto") == 0) return true;
    for (int p = 0; p < 3; p++)
        if (strcmp(name, names[p]) == 0 && (tt_cpu_level)p <= tt_cpu_max_level()) {
            tt_cpu_set_level((tt_cpu_level)p);
            if (strcmp(qpath_name(), name) == 0) return true;
        }
    fprintf(stderr, "bench_qgemm: '%s' is not a path this CPU supports (auto, generic, avx2, "
            "vnni)\n", name);
    return false;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[2], "decode") == 0) {
        if (!set_path(argv[1])) return 2;
        if (argc >= 4) tt_set_num_threads(atoi(argv[3]));
        bench_decode(1);
        return 0;
    }
    if (argc >= 5) {
        if (!set_path(argv[1])) return 2;
        if (argc >= 6) tt_set_num_threads(atoi(argv[5]));
        bench_shape(atoll(argv[2]), atoll(argv[3]), atoll(argv[4]), true);
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [PATH M N K [THREADS] | PATH decode [THREADS]]\n", argv[0]);
        return 2;
    }
    const int64_t shapes[4][2] = {{1152, 384}, {384, 384}, {1536, 384}, {384, 1536}};  // N, K
    int nt = tt_get_num_threads();
    for (int p = TT_CPU_AVX512; p >= TT_CPU_GENERIC; p--) {
        if ((tt_cpu_level)p > tt_cpu_max_level()) continue;
        tt_cpu_set_level((tt_cpu_level)p);
        if (p == TT_CPU_AVX512 && !tt_cpu_has_vnni()) continue;  // the AVX2 int8 kernel
        for (int t = 1; t <= nt && t <= 2; t++) {  // one thread: steadier on a busy machine
            tt_set_num_threads(t);
            bench_decode(1);
            for (int i = 0; i < 4; i++) bench_shape(1, shapes[i][0], shapes[i][1], true);
        }
        if (p != TT_CPU_GENERIC)  // the portable kernel would take minutes
            for (int i = 0; i < 4; i++) bench_shape(2048, shapes[i][0], shapes[i][1], true);
    }
    return 0;
}

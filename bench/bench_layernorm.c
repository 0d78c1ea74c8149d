// Time of the f32 layernorm kernels (tensor/kernels/layernorm.h) at the mid GPT's shape, 2048
// rows (B*T = 8 x 256) of 384: forward (y, mean, rstd) and backward (dx, dweight, dbias), in
// ns per element, on each instruction set the CPU has, 1 and 2 threads; warm (one set of
// buffers, 12 MB, which stays in the last-level cache) and cold (calls cycle through 96 MB of
// sets, as a training step's layernorms find their data in memory). Prints
// `bench layernorm ...` lines; never part of `make test`, never an assertion.
//
//   bench_layernorm                  every figure
//   bench_layernorm R N THREADS      one size, warm and cold, the best ISA
//                                    (TT_CPU=generic|avx2|avx512 forces one)
//   bench_layernorm R N THREADS REPS forward|backward [cold]
//                                    only REPS calls of one kernel, nothing printed (for
//                                    `perf stat -e task-clock`, which a neighbour's load disturbs
//                                    less than the clock)
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinytorch.h"
#include "bench_util.h"
#include "tensor/kernels/cpu.h"
#include "tensor/kernels/layernorm.h"
#include "tensor/kernels/nn.h"

// Timed runs per figure, forward and backward alternating; medians are reported.
#define TIMED_RUNS 9
// Bytes the cold figures cycle through.
#define COLD_BYTES ((int64_t)96 << 20)
#define MAX_SETS 64

static float *rand_buf(int64_t n, uint64_t *state, float lo, float hi) {
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_layernorm: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = lo + (hi - lo) * (float)(*state >> 40) / (float)(1 << 24);
    }
    return p;
}

typedef struct ln_set {
    float *x, *y, *dy, *dx, *mean, *rstd;  // (R, N) and (R)
} ln_set;

// reps > 0: only reps calls of the forward (backward false) or the backward, nothing printed.
static void figure(int64_t R, int64_t N, int threads, bool cold, int reps, bool backward) {
    uint64_t st = 1;
    int nsets = 1;
    if (cold) {
        int64_t per = 4 * R * N * (int64_t)sizeof(float);
        nsets = (int)((COLD_BYTES + per - 1) / per);
        nsets = nsets < 2 ? 2 : nsets > MAX_SETS ? MAX_SETS : nsets;
    }
    ln_set sets[MAX_SETS];
    for (int k = 0; k < nsets; k++)
        sets[k] = (ln_set){rand_buf(R * N, &st, -2, 3), rand_buf(R * N, &st, 0, 0),
                           rand_buf(R * N, &st, -1, 1), rand_buf(R * N, &st, 0, 0),
                           rand_buf(R, &st, 0, 0), rand_buf(R, &st, 0, 0)};
    float *w = rand_buf(N, &st, 0.5f, 1.5f), *b = rand_buf(N, &st, -1, 1);
    float *dw = rand_buf(N, &st, 0, 0), *db = rand_buf(N, &st, 0, 0);
    tt_set_num_threads(threads);
    // about 20 ms of calls per timed run; each call takes the next set
    double t0 = now_s();
    for (int k = 0; k < nsets; k++) {
        ln_set *q = &sets[k];
        tt_klayernorm_forward_f32(q->y, q->mean, q->rstd, q->x, w, b, R, N, 1e-5);
        tt_klayernorm_backward_f32(q->dx, dw, db, q->dy, q->x, w, q->mean, q->rstd, R, N);
    }
    double once = (now_s() - t0) / nsets;
    int runs = TIMED_RUNS;
    if (reps > 0) {
        for (int k = 0; k < reps; k++) {
            ln_set *q = &sets[k % nsets];
            if (backward)
                tt_klayernorm_backward_f32(q->dx, dw, db, q->dy, q->x, w, q->mean, q->rstd, R, N);
            else
                tt_klayernorm_forward_f32(q->y, q->mean, q->rstd, q->x, w, b, R, N, 1e-5);
        }
        runs = 0;
    } else
        reps = once > 0 ? (int)(0.02 / once) + 1 : 100;
    double fwd[TIMED_RUNS], bwd[TIMED_RUNS];
    for (int run = 0; run < runs; run++) {
        t0 = now_s();
        for (int k = 0; k < reps; k++) {
            ln_set *q = &sets[k % nsets];
            tt_klayernorm_forward_f32(q->y, q->mean, q->rstd, q->x, w, b, R, N, 1e-5);
        }
        double t1 = now_s();
        for (int k = 0; k < reps; k++) {
            ln_set *q = &sets[k % nsets];
            tt_klayernorm_backward_f32(q->dx, dw, db, q->dy, q->x, w, q->mean, q->rstd, R, N);
        }
        double t2 = now_s();
        fwd[run] = (t1 - t0) / reps / (double)(R * N) * 1e9;
        bwd[run] = (t2 - t1) / reps / (double)(R * N) * 1e9;
    }
    if (runs)
        printf("bench layernorm rows=%lld n=%lld threads=%d isa=%s cache=%s "
               "forward_ns_per_elem=%.3f backward_ns_per_elem=%.3f\n", (long long)R,
               (long long)N, threads, tt_cpu_level_name(tt_cpu_get_level()),
               cold ? "cold" : "warm", median(fwd, TIMED_RUNS), median(bwd, TIMED_RUNS));
    fflush(stdout);
    for (int k = 0; k < nsets; k++)
        free(sets[k].x), free(sets[k].y), free(sets[k].dy), free(sets[k].dx), free(sets[k].mean),
            free(sets[k].rstd);
    free(w), free(b), free(dw), free(db);
}

int main(int argc, char **argv) {
    int prev = tt_get_num_threads();
    if (argc == 4) {
        for (int cold = 0; cold < 2; cold++)
            figure(atoll(argv[1]), atoll(argv[2]), atoi(argv[3]), cold, 0, false);
        return 0;
    }
    if (argc == 6 || argc == 7) {
        figure(atoll(argv[1]), atoll(argv[2]), atoi(argv[3]), argc == 7, atoi(argv[4]),
               strcmp(argv[5], "backward") == 0);
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: bench_layernorm [R N THREADS [REPS forward|backward [cold]]]\n");
        return 2;
    }
    tt_cpu_level best = tt_cpu_max_level();
    for (int isa = best < TT_CPU_AVX512 ? best : TT_CPU_AVX512; isa >= 0; isa--) {
        tt_cpu_set_level((tt_cpu_level)isa);
        for (int cold = 0; cold < 2; cold++) {
            figure(2048, 384, 1, cold, 0, false);
            if (prev > 1) figure(2048, 384, 2, cold, 0, false);
        }
    }
    tt_cpu_set_level(best);
    return 0;
}

// Time of the fused attention op (tt_scaled_dot_product_attention), forward + backward, causal,
// without a mask and with the masks of autograd.h: a bool key-padding mask (B, 1, 1, T) and an
// additive (T, T) bias with and without its gradient, and without a mask under bf16 autocast
// (bf16 block products). Prints `bench attention ...` lines; never part of `make test`, never
// an assertion.
//
//   bench_attention                  every figure at B=4 NH=6 T=256 HS=64, default threads
//   bench_attention B NH T HS [REPS] one size
//   bench_attention bf16 B NH T HS [REPS]   only bf16 autocast without a mask, the forward and
//                                    the backward timed apart (for profiling that case alone)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinytorch.h"
#include "bench_util.h"

#define TIMED_RUNS 7

typedef enum { NO_MASK, BOOL_PADDING, FLOAT_BIAS, FLOAT_BIAS_GRAD, MODE_COUNT } mode;
static const char *const mode_names[MODE_COUNT] = {"none", "bool_padding", "float_bias",
                                                   "float_bias_grad"};

// q, k, v (B, NH, T, HS) needing gradients and the output gradient g, uniform in [-1, 1)
// from rng, in the caller's scope.
static void qkv_inputs(tt_rng *rng, int64_t B, int64_t NH, int64_t T, int64_t HS, tt_tensor **q,
                       tt_tensor **k, tt_tensor **v, tt_tensor **g) {
    tt_tensor **t[3] = {q, k, v};
    for (int i = 0; i < 3; i++)
        *t[i] = tt_set_requires_grad(tt_uniform(rng, TT_F32, TT_SHAPE(B, NH, T, HS), -1, 1), true);
    *g = tt_uniform(rng, TT_F32, TT_SHAPE(B, NH, T, HS), -1, 1);
}

// The median of TIMED_RUNS runs of reps forward + backward passes, in ms per pass.
static double time_mode(mode md, int64_t B, int64_t NH, int64_t T, int64_t HS, int reps) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_scope_begin();
    tt_tensor *q, *k, *v, *g;
    qkv_inputs(&rng, B, NH, T, HS, &q, &k, &v, &g);
    tt_tensor *mask = NULL;
    if (md == BOOL_PADDING) {
        mask = tt_ones(TT_BOOL, TT_SHAPE(B, 1, 1, T));
        tt_fill_(tt_narrow(mask, 3, T - T / 8, T / 8), 0);  // the last eighth is padding
    } else if (md != NO_MASK) {
        mask = tt_uniform(&rng, TT_F32, TT_SHAPE(T, T), -1, 1);
        if (md == FLOAT_BIAS_GRAD) tt_set_requires_grad(mask, true);
    }
    double t[TIMED_RUNS];
    for (int run = -1; run < TIMED_RUNS; run++) {  // run -1 warms up
        double t0 = now_s();
        for (int r = 0; r < reps; r++) {
            tt_scope_begin();
            tt_backward_with(tt_scaled_dot_product_attention(q, k, v, mask, true, 0.125), g);
            tt_scope_end();
        }
        if (run >= 0) t[run] = (now_s() - t0) * 1e3 / reps;
    }
    tt_scope_end();
    qsort(t, TIMED_RUNS, sizeof t[0], cmp_double);
    return t[TIMED_RUNS / 2];
}

// No mask in f32 and under bf16 autocast, the two taking turns run by run (so that a noisy
// neighbour slows both alike): the medians in ms per forward + backward pass.
static void time_precisions(double ms[2], int64_t B, int64_t NH, int64_t T, int64_t HS,
                            int reps) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_scope_begin();
    tt_tensor *q, *k, *v, *g;
    qkv_inputs(&rng, B, NH, T, HS, &q, &k, &v, &g);
    double t[2][TIMED_RUNS];
    for (int run = -1; run < TIMED_RUNS; run++) {  // run -1 warms up
        for (int p = 0; p < 2; p++) {
            double t0 = now_s();
            for (int r = 0; r < reps; r++) {
                tt_scope_begin();
                tt_autocast_begin(p ? TT_PRECISION_BF16 : TT_PRECISION_F32);
                tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, NULL, true, 0.125);
                tt_autocast_end();
                tt_backward_with(y, g);
                tt_scope_end();
            }
            if (run >= 0) t[p][run] = (now_s() - t0) * 1e3 / reps;
        }
    }
    tt_scope_end();
    for (int p = 0; p < 2; p++) {
        qsort(t[p], TIMED_RUNS, sizeof t[p][0], cmp_double);
        ms[p] = t[p][TIMED_RUNS / 2];
    }
}

// bf16 autocast without a mask only: the medians of TIMED_RUNS runs of reps forward passes
// and of reps backward passes, in ms per pass (ms[0] forward, ms[1] backward).
static void time_bf16(double ms[2], int64_t B, int64_t NH, int64_t T, int64_t HS, int reps) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_scope_begin();
    tt_tensor *q, *k, *v, *g;
    qkv_inputs(&rng, B, NH, T, HS, &q, &k, &v, &g);
    double t[2][TIMED_RUNS];
    for (int run = -1; run < TIMED_RUNS; run++) {  // run -1 warms up
        double tf = 0, tb = 0;
        for (int r = 0; r < reps; r++) {
            tt_scope_begin();
            double t0 = now_s();
            tt_autocast_begin(TT_PRECISION_BF16);
            tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, NULL, true, 0.125);
            tt_autocast_end();
            double t1 = now_s();
            tt_backward_with(y, g);
            tf += t1 - t0, tb += now_s() - t1;
            tt_scope_end();
        }
        if (run >= 0) t[0][run] = tf * 1e3 / reps, t[1][run] = tb * 1e3 / reps;
    }
    tt_scope_end();
    for (int p = 0; p < 2; p++) ms[p] = median(t[p], TIMED_RUNS);
}

int main(int argc, char **argv) {
    int64_t B = 4, NH = 6, T = 256, HS = 64;
    int reps = 3;
    bool bf16_only = argc >= 2 && strcmp(argv[1], "bf16") == 0;
    if (bf16_only) argc--, argv++;
    if (argc >= 5) {
        B = atoll(argv[1]), NH = atoll(argv[2]), T = atoll(argv[3]), HS = atoll(argv[4]);
        if (argc >= 6) reps = atoi(argv[5]);
    } else if (argc != 1) {
        fprintf(stderr, "usage: bench_attention [bf16] [B NH T HS [REPS]]\n");
        return 1;
    }
    if (B < 1 || NH < 1 || T < 8 || HS < 1 || reps < 1) {
        fprintf(stderr, "bench_attention: sizes must be positive (T >= 8)\n");
        return 1;
    }
    if (bf16_only) {
        double ms[2];
        time_bf16(ms, B, NH, T, HS, reps);
        printf("bench attention B=%lld NH=%lld T=%lld HS=%lld mask=none precision=bf16 fwd %8.3f "
               "ms bwd %8.3f ms fwd+bwd %8.3f ms\n", (long long)B, (long long)NH, (long long)T,
               (long long)HS, ms[0], ms[1], ms[0] + ms[1]);
        return 0;
    }
    double base = 0;
    for (int md = 0; md < MODE_COUNT; md++) {
        double ms = time_mode((mode)md, B, NH, T, HS, reps);
        if (md == NO_MASK) base = ms;
        printf("bench attention B=%lld NH=%lld T=%lld HS=%lld mask=%-15s fwd+bwd %8.3f ms "
               "(%.2fx no mask)\n", (long long)B, (long long)NH, (long long)T, (long long)HS,
               mode_names[md], ms, ms / base);
    }
    double ms[2];
    time_precisions(ms, B, NH, T, HS, reps);
    printf("bench attention B=%lld NH=%lld T=%lld HS=%lld mask=none precision=bf16 fwd+bwd "
           "%8.3f ms, f32 %8.3f ms taking turns (%.2fx faster)\n", (long long)B, (long long)NH,
           (long long)T, (long long)HS, ms[1], ms[0], ms[0] / ms[1]);
    return 0;
}

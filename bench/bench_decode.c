// Decoding speed of the GPT with the KV cache, f32 against int8 (tt_gpt_quantize), for the baby
// (L4 C128) and the mid (L6 C384) configs, randomly initialised (speed does not depend on the
// values), and the machine's memory read bandwidth the decoding is bound by. Prints `bench ...`
// lines; never part of `make test`, never an assertion.
//
//   bench_decode                         the bandwidth, then every config at 1 and 2 threads
//   bench_decode stream [THREADS]        read bandwidth: a 256 MiB buffer and a 42 MiB one
//   bench_decode baby|mid [THREADS]      tokens/s f32 and int8, weight bytes, ratio, GB/s
//   bench_decode gpt2 [THREADS]          the 124M shape in every built-in weight format: decode
//                                        (128 greedy tokens) and prefill (one 512-token prompt)
//                                        tokens/s
//
// A run generates block_size - 1 tokens from a one-token prompt, so every step is one token
// through the cache (no window rebuild). f32 and int8 runs alternate (run i of one, then run
// i of the other) so a neighbour's load on a shared machine hits both alike; medians of
// RUNS. weight_gbs: the bytes of the Linears' and head's weights (tt_gpt_matmul_weight_bytes,
// what a step must read) per second of decoding.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tinytorch.h"
#include "bench_util.h"
#include "models/gpt/gpt.h"
#include "tensor/tensor_internal.h"

#define RUNS 7

// ---- read bandwidth ----

// Sum of p[lo, hi) in 16 independent lanes: vectorized, compiled for AVX-512, AVX2 and
// baseline x86-64 as the library's kernels are (TT_CLONES); the sum keeps the loop alive.
TT_CLONES static float sum_range(const float *p, int64_t lo, int64_t hi) {
    float acc[16] = {0};
    for (int64_t i = lo; i < hi; i += 16)
        for (int l = 0; l < 16; l++) acc[l] += p[i + l];
    float total = 0;
    for (int l = 0; l < 16; l++) total += acc[l];
    return total;
}

// Reads n floats once; threads take contiguous shares.
static float read_all(const float *p, int64_t n) {
    float total = 0;
#ifdef _OPENMP
#pragma omp parallel reduction(+ : total)
#endif
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        total += sum_range(p, n / 16 * t / nt * 16, n / 16 * (t + 1) / nt * 16);
    }
    return total;
}

// Best of RUNS passes (a read bandwidth is a ceiling: the best pass is the closest to it).
static void bench_stream(int64_t bytes, const char *what) {
    int64_t n = bytes / 4;
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_decode: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) p[i] = 1.0f;
    double best = 1e30;
    float sink = 0;
    for (int r = 0; r < RUNS + 1; r++) {
        double t0 = now_s();
        sink += read_all(p, n);
        double dt = now_s() - t0;
        if (r > 0 && dt < best) best = dt;  // pass 0 warms up
    }
    printf("bench decode stream=%s threads=%d mib=%.0f read_gbs=%.1f%s\n", what, tt_get_num_threads(),
           (double)bytes / (1 << 20), (double)bytes / best * 1e-9, sink < 0 ? " ?" : "");
    free(p);
}

// ---- decoding ----

typedef struct decode_config {
    const char *name;
    int64_t n_layer, n_head, n_embd, block, vocab;
} decode_config;

static const decode_config configs[] = {
    {"baby", 4, 4, 128, 64, 65},
    {"mid", 6, 6, 384, 256, 65},
};

// Seconds to generate n tokens after a one-token prompt, with the cache.
static double time_generate(tt_gpt *gpt, int64_t n, int32_t *out) {
    tt_sample_opts so = tt_sample_opts_default();
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    int32_t prompt[1] = {0};
    double t0 = now_s();
    tt_gpt_generate(gpt, prompt, 1, n, &so, &rng, out, NULL, NULL);
    return now_s() - t0;
}

static int bench_model(const decode_config *dc) {
    tt_gpt_config cfg = tt_gpt_config_default();
    cfg.vocab_size = dc->vocab;
    cfg.block_size = dc->block;
    cfg.n_layer = dc->n_layer;
    cfg.n_head = dc->n_head;
    cfg.n_kv_head = dc->n_head;
    cfg.n_embd = dc->n_embd;
    tt_rng rng;
    tt_rng_seed(&rng, 1337);
    tt_gpt f32, q8;  // two models with the same weights: one stays f32, one is quantized
    if (tt_gpt_init(&f32, &cfg, &rng) != TT_OK) {
        fprintf(stderr, "bench_decode: %s\n", tt_last_error());
        return 1;
    }
    tt_rng_seed(&rng, 1337);
    if (tt_gpt_init(&q8, &cfg, &rng) != TT_OK) {
        fprintf(stderr, "bench_decode: %s\n", tt_last_error());
        return 1;
    }
    tt_gpt_quantize(&q8);
    int64_t n = dc->block - 1;
    int32_t *out = malloc((size_t)n * sizeof *out);
    double tf[RUNS], tq[RUNS];
    time_generate(&f32, n, out);  // warm-up: workspaces, page faults
    time_generate(&q8, n, out);
    for (int r = 0; r < RUNS; r++) {
        tf[r] = time_generate(&f32, n, out);
        tq[r] = time_generate(&q8, n, out);
    }
    double mf = median(tf, RUNS), mq = median(tq, RUNS);
    double bf = (double)tt_gpt_matmul_weight_bytes(&f32);
    double bq = (double)tt_gpt_matmul_weight_bytes(&q8);
    double tps_f = (double)n / mf, tps_q = (double)n / mq;
    printf("bench decode config=%s threads=%d tokens=%lld f32_tokens_per_s=%.0f "
           "int8_tokens_per_s=%.0f speedup=%.2f f32_weight_mb=%.2f int8_weight_mb=%.2f "
           "bytes_ratio=%.2f f32_weight_gbs=%.1f int8_weight_gbs=%.1f init=random\n",
           dc->name, tt_get_num_threads(), (long long)n, tps_f, tps_q, tps_q / tps_f, bf / 1e6,
           bq / 1e6, bf / bq, bf * tps_f * 1e-9, bq * tps_q * 1e-9);
    fflush(stdout);
    free(out);
    tt_gpt_free(&f32);
    tt_gpt_free(&q8);
    return 0;
}

// ---- GPT-2 124M in every weight format ----

enum { GPT2_DECODE = 128, GPT2_PREFILL = 512, GPT2_RUNS = 3 };

// Seconds of greedy generation (llama-bench samples nothing; top-k over 50257 logits would
// cost a sort per token): n_new tokens after a prompt of n tokens, through the cache. n_new =
// 1 times a prefill (the prompt, then the next token's logits).
static double time_greedy(tt_gpt *gpt, const int32_t *prompt, int64_t n, int64_t n_new,
                          int32_t *out) {
    tt_sample_opts so = tt_sample_opts_default();
    so.temperature = 0;
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    double t0 = now_s();
    tt_gpt_generate(gpt, prompt, n, n_new, &so, &rng, out, NULL, NULL);
    return now_s() - t0;
}

// One model per weight format tt_quant_parse knows (f32, int8, bf16, int4 when built), the same
// random weights; decode and prefill runs alternate between the formats; medians.
static int bench_gpt2_formats(void) {
    static const char *const names[] = {"f32", "bf16", "int8", "int4"};
    enum { NF = sizeof names / sizeof names[0] };
    tt_gpt m[NF];
    const char *used[NF];
    int nf = 0;
    tt_gpt_config cfg;
    if (tt_gpt_config_preset("gpt2", &cfg) != TT_OK) return 1;
    for (int f = 0; f < NF; f++) {
        tt_quant q;
        if (tt_quant_parse(names[f], &q) != TT_OK) continue;
        tt_rng rng;
        tt_rng_seed(&rng, 1337);
        if (tt_gpt_init(&m[nf], &cfg, &rng) != TT_OK) {
            fprintf(stderr, "bench_decode: %s\n", tt_last_error());
            return 1;
        }
        tt_gpt_quantize_as(&m[nf], q);
        used[nf++] = names[f];
    }
    int32_t *prompt = malloc(GPT2_PREFILL * sizeof *prompt), out[GPT2_DECODE];
    for (int i = 0; i < GPT2_PREFILL; i++) prompt[i] = (int32_t)((i * 7919) % cfg.vocab_size);
    double td[NF][GPT2_RUNS], tp[NF][GPT2_RUNS];
    for (int f = 0; f < nf; f++) {  // warm-up: workspaces, page faults
        time_greedy(&m[f], prompt, 64, 8, out);
    }
    for (int r = 0; r < GPT2_RUNS; r++)
        for (int f = 0; f < nf; f++) {
            td[f][r] = time_greedy(&m[f], prompt, 1, GPT2_DECODE, out);
            tp[f][r] = time_greedy(&m[f], prompt, GPT2_PREFILL, 1, out);
        }
    for (int f = 0; f < nf; f++) {
        double b = (double)tt_gpt_matmul_weight_bytes(&m[f]);
        double dec = GPT2_DECODE / median(td[f], GPT2_RUNS);
        printf("bench decode config=gpt2 format=%s threads=%d decode_tokens_per_s=%.1f "
               "prefill%d_tokens_per_s=%.0f weight_mb=%.2f weight_gbs=%.1f init=random\n",
               used[f], tt_get_num_threads(), dec, GPT2_PREFILL,
               GPT2_PREFILL / median(tp[f], GPT2_RUNS), b / 1e6, b * dec * 1e-9);
        tt_gpt_free(&m[f]);
    }
    fflush(stdout);
    free(prompt);
    return 0;
}

static const decode_config *find_config(const char *name) {
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        if (strcmp(configs[i].name, name) == 0) return &configs[i];
    return NULL;
}

int main(int argc, char **argv) {
    if (argc >= 2) {
        if (argc >= 3) tt_set_num_threads(atoi(argv[2]));
        if (strcmp(argv[1], "stream") == 0) {
            bench_stream((int64_t)256 << 20, "dram");
            bench_stream((int64_t)42 << 20, "mid_f32_weights");
            return 0;
        }
        if (strcmp(argv[1], "gpt2") == 0) return bench_gpt2_formats();
        const decode_config *dc = find_config(argv[1]);
        if (!dc) {
            fprintf(stderr, "usage: %s [stream|baby|mid|gpt2 [THREADS]]\n", argv[0]);
            return 2;
        }
        return bench_model(dc);
    }
    int nt = tt_get_num_threads();
    for (int t = 1; t <= nt && t <= 2; t++) {
        tt_set_num_threads(t);
        bench_stream((int64_t)256 << 20, "dram");
        bench_stream((int64_t)42 << 20, "mid_f32_weights");
        for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
            if (bench_model(&configs[i])) return 1;
        if (bench_gpt2_formats()) return 1;
    }
    return 0;
}

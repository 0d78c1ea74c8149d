// Decoding speed of the GPT with the KV cache in each weight format (f32, bf16, int8, int4:
// tt_gpt_quantize_as), for the baby (L4 C128), the mid (L6 C384) and the GPT-2 124M (L12 C768,
// vocab 50257) configs, randomly initialised (speed does not depend on the values), GPT-2's
// prefill (one cached forward over a 512-token prompt), and the machine's memory read bandwidth
// the decoding is bound by. Prints `bench ...` lines; never part of `make test`, never an
// assertion.
//
//   bench_decode                         the bandwidth, then every config at 1 and 2 threads
//   bench_decode stream [THREADS]        read bandwidth: a 256 MiB buffer and a 42 MiB one
//   bench_decode baby|mid|gpt2 [THREADS] tokens/s per format, weight bytes, GB/s
//   bench_decode gpt2_long [THREADS]     the same 128 tokens after a 768-token prompt
//
// A run generates block_size - 1 tokens (gpt2: 128, as llama-bench's tg128) from a one-token
// prompt, so every step is one token through the cache (no window rebuild). The formats'
// runs alternate (run i of each, then run i + 1) so a neighbour's load on a shared machine
// hits all alike; medians of RUNS (gpt2: 3). gpt2's prefill: tokens/s of a 512-token prompt
// through the cache, the logits of its last position only (llama-bench's pp512). weight_gbs:
// the bytes of the Linears' and head's weights (tt_gpt_matmul_weight_bytes, what a step must
// read) per second of decoding. gpt2_long decodes at positions 768-895, where attention over
// the cache reads about 5 MB a layer: tokens/s from the first new token to the last.
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
    printf("bench decode stream=%s threads=%d mib=%.0f read_gbs=%.1f%s\n", what,
           tt_get_num_threads(), (double)bytes / (1 << 20), (double)bytes / best * 1e-9, sink < 0 ? " ?" : "");
    free(p);
}

// ---- decoding ----

typedef struct decode_config {
    const char *name;
    int64_t n_layer, n_head, n_embd, block, vocab;
    int64_t n_decode;   // tokens generated after a one-token prompt
    int64_t n_prefill;  // prompt tokens of the prefill figure; 0: none
    int runs;           // alternating rounds (medians)
    int64_t n_context;  // the decode's prompt (timed from its first new token); 0: one token
} decode_config;

static const decode_config configs[] = {
    {"baby", 4, 4, 128, 64, 65, 63, 0, RUNS, 0},
    {"mid", 6, 6, 384, 256, 65, 255, 0, RUNS, 0},
    {"gpt2", 12, 12, 768, 1024, 50257, 128, 512, 3, 0},  // GPT-2 124M, llama-bench -n 128, -p 512
    {"gpt2_long", 12, 12, 768, 1024, 50257, 128, 0, 3, 768},
};

// The time of the first new token (the prompt's prefill done), for gpt2_long.
static void mark_first(int32_t token, void *ctx) {
    (void)token;
    double *t = ctx;
    if (*t == 0) *t = now_s();
}

// The formats timed, each on its own copy of the same weights.
static const tt_quant formats[] = {TT_QUANT_NONE, TT_QUANT_BF16, TT_QUANT_INT8, TT_QUANT_INT4};
#define NFMT ((int)(sizeof formats / sizeof formats[0]))

// Seconds to generate n tokens after an n_prompt-token prompt, with the cache (n = 1: the
// prompt's one cached forward, logits of its last position only: a prefill); with from_first,
// from the first new token on (n - 1 tokens decoded).
static double time_generate(tt_gpt *gpt, int64_t n_prompt, int64_t n, int32_t *out,
                            bool from_first) {
    tt_sample_opts so = tt_sample_opts_default();
    so.temperature = 0;  // greedy: the model's cost, not top-k's sort of the vocab (llama-bench
                         // samples nothing)
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    int32_t *prompt = calloc((size_t)n_prompt, sizeof *prompt);
    for (int64_t i = 0; i < n_prompt; i++) prompt[i] = (int32_t)(i * 7 % 61);
    double t0 = now_s(), first = 0;
    tt_gpt_generate(gpt, prompt, n_prompt, n, &so, &rng, out, from_first ? mark_first : NULL,
                    &first);
    double dt = now_s() - (from_first ? first : t0);
    free(prompt);
    return dt;
}

// Medians over dc->runs rounds, the formats alternating within each round, of tokens/s.
static void time_formats(const decode_config *dc, tt_gpt *models, int64_t n_prompt, int64_t n,
                         double *tps) {
    int32_t *out = malloc((size_t)n * sizeof *out);
    double t[NFMT][RUNS];
    bool long_ctx = n_prompt > 1 && n > 1;  // decode after a long prompt
    for (int f = 0; f < NFMT; f++) time_generate(&models[f], n_prompt, n, out, long_ctx);
    for (int r = 0; r < dc->runs; r++)
        for (int f = 0; f < NFMT; f++)
            t[f][r] = time_generate(&models[f], n_prompt, n, out, long_ctx);
    int64_t done = long_ctx ? n - 1 : n_prompt > 1 ? n_prompt : n;
    for (int f = 0; f < NFMT; f++) tps[f] = (double)done / median(t[f], dc->runs);
    free(out);
}

static int bench_model(const decode_config *dc) {
    tt_gpt_config cfg = tt_gpt_config_default();
    cfg.vocab_size = dc->vocab;
    cfg.block_size = dc->block;
    cfg.n_layer = dc->n_layer;
    cfg.n_head = dc->n_head;
    cfg.n_kv_head = dc->n_head;
    cfg.n_embd = dc->n_embd;
    tt_gpt models[NFMT];  // the same weights in each format
    for (int f = 0; f < NFMT; f++) {
        tt_rng rng;
        tt_rng_seed(&rng, 1337);
        if (tt_gpt_init(&models[f], &cfg, &rng) != TT_OK) {
            fprintf(stderr, "bench_decode: %s\n", tt_last_error());
            return 1;
        }
        if (formats[f] != TT_QUANT_NONE) tt_gpt_quantize_as(&models[f], formats[f]);
    }
    double tps[NFMT], pre[NFMT];
    int64_t n_ctx = dc->n_context > 0 ? dc->n_context : 1;
    time_formats(dc, models, n_ctx, dc->n_decode, tps);
    printf("bench decode config=%s threads=%d tokens=%lld", dc->name, tt_get_num_threads(),
           (long long)dc->n_decode);
    if (dc->n_context > 0) printf(" after=%lld", (long long)dc->n_context);
    for (int f = 0; f < NFMT; f++)
        printf(" %s_tokens_per_s=%.1f", tt_quant_name(formats[f]), tps[f]);
    for (int f = 0; f < NFMT; f++) {
        double b = (double)tt_gpt_matmul_weight_bytes(&models[f]);
        printf(" %s_weight_mb=%.2f %s_weight_gbs=%.1f", tt_quant_name(formats[f]), b / 1e6,
               tt_quant_name(formats[f]), b * tps[f] * 1e-9);
    }
    printf(" init=random\n");
    if (dc->n_prefill > 0) {
        time_formats(dc, models, dc->n_prefill, 1, pre);
        printf("bench prefill config=%s threads=%d tokens=%lld", dc->name,
               tt_get_num_threads(), (long long)dc->n_prefill);
        for (int f = 0; f < NFMT; f++)
            printf(" %s_tokens_per_s=%.1f", tt_quant_name(formats[f]), pre[f]);
        printf(" init=random\n");
    }
    fflush(stdout);
    for (int f = 0; f < NFMT; f++) tt_gpt_free(&models[f]);
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
        const decode_config *dc = find_config(argv[1]);
        if (!dc) {
            fprintf(stderr, "usage: %s [stream|baby|mid|gpt2|gpt2_long [THREADS]]\n", argv[0]);
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
    }
    return 0;
}

// GPT-2 124M benchmarks: one AdamW training step at T = 1024 and greedy KV-cache sampling, at
// the `gpt2` preset (models/gpt/gpt.h) with random weights and random tokens. Prints `bench ...`
// lines; never part of `make test`. bench/torch_gpt2.py is the PyTorch side of the same figures.
//
//   bench_gpt2 train B [threads]   B rows of T = 1024 tokens, dropout 0: median ms per step,
//                                  tokens/s, GFLOPS, peak RSS (one process per B: ru_maxrss is
//                                  the process's high-water mark)
//   bench_gpt2 sample [threads]    a 16-token prompt, 128 new tokens, greedy, batch 1, KV cache
//
// Checks before timing (exit 1 when one fails): the loss at init is within 0.5 of ln(50257) =
// 10.82, as random weights N(0, 0.02) give near-uniform logits; sampled ids are in [0, V).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "tinytorch.h"
#include "bench_util.h"
#include "models/gpt/gpt.h"

enum { WARMUP_STEPS = 1, TIMED_STEPS = 5, PROMPT = 16, NEW_TOKENS = 128, SAMPLE_RUNS = 3 };

// The 124M model with dropout 0: the timed step is the deterministic part of GPT-2's step
// (dropout would add three masks per layer and change nothing else).
static void build(tt_gpt *gpt, tt_rng *rng) {
    tt_gpt_config cfg;
    if (tt_gpt_config_preset("gpt2", &cfg) != TT_OK) {
        fprintf(stderr, "bench_gpt2: %s\n", tt_last_error());
        exit(1);
    }
    cfg.dropout = 0.0;
    if (tt_gpt_init(gpt, &cfg, rng) != TT_OK) {
        fprintf(stderr, "bench_gpt2: %s\n", tt_last_error());
        exit(1);
    }
}

static tt_tensor *random_tokens(tt_rng *rng, int64_t B, int64_t T, int64_t V) {
    tt_tensor *t = tt_empty(TT_I32, TT_SHAPE(B, T));  // (B, T)
    int32_t *p = tt_data(t);
    for (int64_t i = 0; i < B * T; i++) p[i] = (int32_t)tt_rng_below(rng, V);
    return t;
}

// FLOPs of one training step as nanoGPT's estimate_mfu (the PaLM paper's appendix B) counts
// them: 6 N per token for the matmuls' forward and backward (N = parameters without the
// position table; the tied head is counted once, through wte), plus 12 L T C per token for
// the attention scores and their weighted sum, forward and backward, without causal savings.
static double step_flops(const tt_gpt *gpt, int64_t B) {
    const tt_gpt_config *c = &gpt->cfg;
    double n = (double)tt_gpt_num_params(gpt, true), T = (double)c->block_size;
    double per_token = 6.0 * n + 12.0 * (double)c->n_layer * T * (double)c->n_embd;
    return per_token * T * (double)B;
}

static int bench_train(int64_t B, int threads) {
    tt_rng rng;
    tt_rng_seed(&rng, 1337);
    tt_gpt gpt;
    build(&gpt, &rng);
    int64_t T = gpt.cfg.block_size, V = gpt.cfg.vocab_size;
    // nanoGPT's GPT-2 settings: AdamW lr 6e-4, betas (0.9, 0.95), weight decay 0.1 on matrices,
    // gradient clipping at 1.0.
    tt_optim opt;
    tt_optim_config oc = tt_adamw_config(6e-4);
    oc.beta2 = 0.95;
    tt_optim_init(&opt, oc);
    tt_optim_add_decay_groups(&opt, &gpt.params, 0.1);
    double ms[TIMED_STEPS], loss = 0, loss0 = 0;
    int64_t held = 0;  // bytes alive just before backward: params, optimizer state, activations
    for (int s = 0; s < WARMUP_STEPS + TIMED_STEPS; s++) {
        tt_scope_begin();
        tt_tensor *x = random_tokens(&rng, B, T, V), *y = random_tokens(&rng, B, T, V);
        double t0 = now_ms();
        tt_tensor *l = tt_gpt_loss(&gpt, x, y);
        if (s == 0) held = tt_live_bytes();
        tt_backward(l);
        tt_clip_grad_norm(&gpt.params, 1.0);
        tt_optim_step(&opt);
        tt_optim_zero_grad(&opt);
        loss = tt_item(l);
        tt_scope_end();
        if (s >= WARMUP_STEPS) ms[s - WARMUP_STEPS] = now_ms() - t0;
        if (s == 0) {
            loss0 = loss;
            if (!(fabs(loss0 - log((double)V)) < 0.5)) {
                fprintf(stderr, "bench_gpt2: the loss at init is %.4f, expected about ln(%lld) "
                        "= %.4f; the model or the loss is wrong, figures not printed\n", loss0,
                        (long long)V, log((double)V));
                exit(1);
            }
        }
    }
    double med = median(ms, TIMED_STEPS);
    double grads = 4.0 * (double)tt_params_numel(&gpt.params);  // f32 gradients, one per param
    double need_mb = ((double)held + grads) / (1024.0 * 1024.0);
    double rss = peak_rss_mb();
    printf("bench train config=gpt2 batch=%lld block=%lld threads=%d dropout=0 "
           "ms_per_step=%.0f tokens_per_s=%.0f gflops=%.1f peak_rss_mb=%.0f needed_mb=%.0f "
           "rss_ratio=%.2f loss_init=%.4f loss=%.4f steps=%d\n",
           (long long)B, (long long)T, threads, med, (double)(B * T) / (med / 1e3),
           step_flops(&gpt, B) / (med / 1e3) / 1e9, rss, need_mb, rss / need_mb, loss0, loss,
           TIMED_STEPS);
    tt_optim_free(&opt);
    tt_gpt_free(&gpt);
    return 0;
}

static int bench_sample(int threads) {
    tt_rng rng;
    tt_rng_seed(&rng, 1337);
    tt_gpt gpt;
    build(&gpt, &rng);
    int64_t V = gpt.cfg.vocab_size;
    int32_t prompt[PROMPT], out[NEW_TOKENS];
    for (int i = 0; i < PROMPT; i++) prompt[i] = (int32_t)tt_rng_below(&rng, V);
    tt_sample_opts so = tt_sample_opts_default();
    so.temperature = 0.0;  // greedy: no draws, the same tokens every run
    so.use_cache = true;
    double times[SAMPLE_RUNS];
    for (int r = 0; r < 1 + SAMPLE_RUNS; r++) {  // run 0 is the warm-up
        double t0 = now_ms();
        tt_gpt_generate(&gpt, prompt, PROMPT, NEW_TOKENS, &so, &rng, out, NULL, NULL);
        if (r > 0) times[r - 1] = now_ms() - t0;
        for (int i = 0; i < NEW_TOKENS; i++) {
            if (out[i] < 0 || out[i] >= V) {
                fprintf(stderr, "bench_gpt2: sampled id %d at %d is outside [0, %lld)\n",
                        out[i], i, (long long)V);
                exit(1);
            }
        }
    }
    double med = median(times, SAMPLE_RUNS);
    printf("bench sample config=gpt2 threads=%d prompt=%d tokens=%d greedy=1 cache=on "
           "tokens_per_s=%.1f ms_per_token=%.1f peak_rss_mb=%.0f first_ids=%d,%d,%d,%d\n",
           threads, PROMPT, NEW_TOKENS, NEW_TOKENS / (med / 1e3), med / NEW_TOKENS,
           peak_rss_mb(), out[0], out[1], out[2], out[3]);
    tt_gpt_free(&gpt);
    return 0;
}

int main(int argc, char **argv) {
    bool train = argc >= 3 && strcmp(argv[1], "train") == 0;
    bool sample = argc >= 2 && strcmp(argv[1], "sample") == 0;
    if (!train && !sample) {
        fprintf(stderr, "usage: bench_gpt2 train B [threads] | bench_gpt2 sample [threads]\n");
        return 2;
    }
    int64_t B = train ? atoll(argv[2]) : 1;
    if (B < 1) {
        fprintf(stderr, "bench_gpt2: the batch must be >= 1, got '%s'\n", argv[2]);
        return 2;
    }
    int threads = 1;
    int targ = train ? 3 : 2;
    if (argc > targ) tt_set_num_threads(atoi(argv[targ]));
    threads = tt_get_num_threads();
    return train ? bench_train(B, threads) : bench_sample(threads);
}

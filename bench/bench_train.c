// Training-step and sampling benchmarks of the GPT: one AdamW step (forward, backward, clip,
// update) at the baby and mid configs, and 500-token generation with and without the KV cache.
// Prints `bench ...` lines; never part of `make test`. Random tokens: no corpus needed.
//
//   bench_train train baby [threads] [f32|bf16] [muon]
//                                       median ms per step, tokens/s, peak RSS and its ratio to
//                                       parameters + gradients + AdamW state + saved activations;
//                                       bf16: the forward under tt_autocast_begin (bf16 products,
//                                       f32 accumulation), as PyTorch's CPU autocast; muon: the
//                                       blocks' matrices trained by Muon (tt_gpt_optim_init), its
//                                       Newton-Schulz products in the step's precision
//   bench_train sample baby            tokens/s with the cache on and off
//   bench_train profile baby [threads] the profiler's cost: median ms per step with it off, on
//                                       (the table's counters) and on with the trace, the
//                                       three modes taking turns step by step
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "tinytorch.h"
#include "bench_util.h"
#include "models/gpt/gpt.h"

typedef struct bench_config {
    const char *name;
    int64_t n_layer, n_head, n_embd, block, batch, vocab;
    int steps;  // timed steps
} bench_config;

static const bench_config configs[] = {
    {"baby", 4, 4, 128, 64, 12, 65, 30},
    {"mid", 6, 6, 384, 256, 8, 65, 6},
};

static const bench_config *find_config(const char *name) {
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        if (strcmp(configs[i].name, name) == 0) return &configs[i];
    fprintf(stderr, "bench_train: unknown config '%s' (use baby or mid)\n", name);
    exit(2);
}

static void build(tt_gpt *gpt, const bench_config *bc, tt_rng *rng) {
    tt_gpt_config cfg = tt_gpt_config_default();
    cfg.vocab_size = bc->vocab;
    cfg.block_size = bc->block;
    cfg.n_layer = bc->n_layer;
    cfg.n_head = bc->n_head;
    cfg.n_kv_head = bc->n_head;
    cfg.n_embd = bc->n_embd;
    if (tt_gpt_init(gpt, &cfg, rng) != TT_OK) {
        fprintf(stderr, "bench_train: %s\n", tt_last_error());
        exit(1);
    }
}

static tt_tensor *random_tokens(tt_rng *rng, const bench_config *bc) {
    tt_tensor *t = tt_empty(TT_I32, TT_SHAPE(bc->batch, bc->block));
    int32_t *p = tt_data(t);
    for (int64_t i = 0; i < bc->batch * bc->block; i++)
        p[i] = (int32_t)tt_rng_below(rng, bc->vocab);
    return t;
}

static int bench_train(const bench_config *bc, int threads, tt_precision precision,
                       bool muon) {
    tt_rng rng;
    tt_rng_seed(&rng, 1337);
    tt_gpt gpt;
    build(&gpt, bc, &rng);
    tt_optim opt;
    tt_optim_config oc = tt_adamw_config(1e-3);
    oc.beta2 = 0.99;
    tt_optim_config mc = tt_muon_config(0.02);
    mc.ns_precision = precision;
    tt_gpt_optim_init(&opt, &gpt, oc, 0.1, muon ? &mc : NULL, 0);
    int warmup = 3, n = bc->steps;
    double *ms = malloc((size_t)n * sizeof *ms);
    int64_t held = 0;  // bytes alive just before backward: params, optimizer state, activations
    double loss = 0;
    for (int s = 0; s < warmup + n; s++) {
        double t0 = now_ms();
        tt_scope_begin();
        tt_tensor *x = random_tokens(&rng, bc), *y = random_tokens(&rng, bc);
        tt_autocast_begin(precision);
        tt_tensor *l = tt_gpt_loss(&gpt, x, y);
        tt_autocast_end();
        if (s == 0) held = tt_live_bytes();
        tt_backward(l);
        tt_clip_grad_norm(&gpt.params, 1.0);
        tt_optim_step(&opt);
        tt_optim_zero_grad(&opt);
        loss = tt_item(l);
        tt_scope_end();
        if (s >= warmup) ms[s - warmup] = now_ms() - t0;
    }
    double med = median(ms, n);
    double grads = 4.0 * (double)tt_params_numel(&gpt.params);  // f32 gradients, one per param
    double need_mb = ((double)held + grads) / (1024.0 * 1024.0);
    double rss = peak_rss_mb();
    printf("bench train config=%s precision=%s optim=%s threads=%d ms_per_step=%.2f "
           "tokens_per_s=%.0f peak_rss_mb=%.1f needed_mb=%.1f rss_ratio=%.2f loss=%.4f "
           "steps=%d\n",
           bc->name, tt_precision_name(precision), muon ? "muon" : "adamw", threads, med,
           (double)(bc->batch * bc->block) / (med / 1e3), rss, need_mb, rss / need_mb, loss, n);
    free(ms);
    tt_optim_free(&opt);
    tt_gpt_free(&gpt);
    return 0;
}

// ---- profiler overhead ----

static double one_step(tt_gpt *gpt, tt_optim *opt, tt_rng *rng, const bench_config *bc) {
    double t0 = now_ms();
    tt_scope_begin();
    tt_tensor *x = random_tokens(rng, bc), *y = random_tokens(rng, bc);
    tt_backward(tt_gpt_loss(gpt, x, y));
    tt_clip_grad_norm(&gpt->params, 1.0);
    tt_optim_step(opt);
    tt_optim_zero_grad(opt);
    tt_scope_end();
    return now_ms() - t0;
}

static int bench_profile(const bench_config *bc, int threads) {
    tt_rng rng;
    tt_rng_seed(&rng, 1337);
    tt_gpt gpt;
    build(&gpt, bc, &rng);
    tt_optim opt;
    tt_optim_init(&opt, tt_adamw_config(1e-3));
    tt_optim_add_decay_groups(&opt, &gpt.params, 0.1);
    enum { MODES = 3 };  // off, on, on with the trace
    int warmup = 3, n = bc->steps;
    double *ms[MODES];
    for (int m = 0; m < MODES; m++) ms[m] = malloc((size_t)n * sizeof *ms[m]);
    for (int s = 0; s < warmup + n; s++) {
        for (int m = 0; m < MODES; m++) {
            tt_profiler_set_trace(m == 2);
            if (m > 0) tt_profiler_begin();
            double t = one_step(&gpt, &opt, &rng, bc);
            if (m > 0) tt_profiler_end();
            if (s >= warmup) ms[m][s - warmup] = t;
        }
    }
    double off = median(ms[0], n), on = median(ms[1], n), trace = median(ms[2], n);
    printf("bench profile config=%s threads=%d off_ms=%.2f on_ms=%.2f trace_ms=%.2f "
           "on_overhead=%.1f%% trace_overhead=%.1f%% events=%lld steps=%d\n", bc->name, threads,
           off, on, trace, 100.0 * (on / off - 1), 100.0 * (trace / off - 1),
           (long long)tt_profiler_totals().events, n);
    for (int m = 0; m < MODES; m++) free(ms[m]);
    tt_profiler_reset();
    tt_optim_free(&opt);
    tt_gpt_free(&gpt);
    return 0;
}

static int bench_sample(const bench_config *bc, int threads) {
    tt_rng rng;
    tt_rng_seed(&rng, 1337);
    tt_gpt gpt;
    build(&gpt, bc, &rng);
    const int64_t n_new = 500;
    int32_t prompt[1] = {0};
    int32_t *out = malloc((size_t)n_new * sizeof *out);
    for (int cache = 1; cache >= 0; cache--) {
        tt_sample_opts so = tt_sample_opts_default();
        so.use_cache = cache;
        tt_rng srng;
        tt_rng_seed(&srng, 7);
        double times[3];
        for (int r = 0; r < 3; r++) {
            double t0 = now_ms();
            tt_gpt_generate(&gpt, prompt, 1, n_new, &so, &srng, out, NULL, NULL);
            times[r] = now_ms() - t0;
        }
        double med = median(times, 3);
        printf("bench sample config=%s threads=%d tokens=%lld tokens_per_s=%.0f cache=%s\n",
               bc->name, threads, (long long)n_new, (double)n_new / (med / 1e3),
               cache ? "on" : "off");
    }
    free(out);
    tt_gpt_free(&gpt);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "train") != 0 && strcmp(argv[1], "sample") != 0 &&
                     strcmp(argv[1], "profile") != 0)) {
        fprintf(stderr, "usage: bench_train train|sample|profile baby|mid [threads] "
                "[f32|bf16] [muon]\n");
        return 2;
    }
    const bench_config *bc = find_config(argv[2]);
    int threads = 1;
    tt_precision precision = TT_PRECISION_F32;
    bool muon = false;
    for (int i = 3; i < argc; i++) {
        if (tt_precision_parse(argv[i], &precision)) continue;
        if (strcmp(argv[i], "muon") == 0) {
            muon = true;
            continue;
        }
        tt_set_num_threads(atoi(argv[i]));
    }
    threads = tt_get_num_threads();
    if (strcmp(argv[1], "train") == 0) return bench_train(bc, threads, precision, muon);
    if (strcmp(argv[1], "profile") == 0) return bench_profile(bc, threads);
    return bench_sample(bc, threads);
}

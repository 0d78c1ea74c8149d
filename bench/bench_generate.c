// Batched generation (tt_gpt_session): total tokens/s of 8 prompts decoded together in one
// session against the same 8 decoded one after another (a session each), greedy, for the baby
// (L4 C128), mid (L6 C384) and GPT-2 124M (L12 C768, vocab 50257) shapes, randomly initialised
// (speed does not depend on the values). Prints `bench generate ...` lines; never part of
// `make test`, never an assertion.
//
//   bench_generate                       every config at 1 and 2 threads
//   bench_generate baby|mid|gpt2 [THREADS]
//
// The prompts have 1 .. 8 tokens (prompt i: 1 + i); each gets NEW tokens. The two ways
// alternate (run i of one, then run i of the other) so a neighbour's load on a shared machine
// hits both alike; medians of the runs. Tokens/s counts the new tokens of all 8 over the whole
// time, prefill included. In a batch the Linears and the head read their weights once per step
// for the 8 rows, where 8 single runs read them 8 times.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinytorch.h"
#include "bench_util.h"
#include "models/gpt/gpt.h"

#define SEQS 8

typedef struct gen_config {
    const char *name;
    int64_t n_layer, n_head, n_embd, block, vocab, new_tokens;
    int runs;
} gen_config;

static const gen_config configs[] = {
    {"baby", 4, 4, 128, 64, 65, 48, 7},
    {"mid", 6, 6, 384, 256, 65, 64, 5},
    {"gpt2", 12, 12, 768, 1024, 50257, 32, 3},
};

// Seconds to decode the SEQS prompts, together (batched) or one session after another; the
// tokens land in out[i] (new_tokens each) so the two ways can be compared.
static double time_decode(tt_gpt *m, const gen_config *gc, bool batched, int32_t *out) {
    tt_gpt_request r = {.sample = tt_sample_opts_default(), .max_new_tokens = gc->new_tokens};
    r.sample.temperature = 0;
    int32_t prompt[SEQS];
    for (int i = 0; i < SEQS; i++) prompt[i] = (int32_t)((7 * i + 3) % gc->vocab);
    double t0 = now_s();
    tt_gpt_session *s = NULL;
    for (int i = 0; i < SEQS; i++) {
        if (!s) s = tt_gpt_session_new(m, NULL);
        tt_gpt_session_add(s, prompt, 1 + i, &r);
        if (batched && i < SEQS - 1) continue;
        tt_gpt_session_run(s);
        for (int j = 0; j < tt_gpt_session_count(s); j++) {
            const int32_t *t = tt_gpt_session_tokens(s, j, NULL);
            int at = batched ? j : i;
            memcpy(out + at * gc->new_tokens, t, (size_t)gc->new_tokens * sizeof *t);
        }
        tt_gpt_session_free(s);
        s = NULL;
    }
    return now_s() - t0;
}

static int bench_config(const gen_config *gc) {
    tt_gpt_config cfg = tt_gpt_config_default();
    cfg.vocab_size = gc->vocab;
    cfg.block_size = gc->block;
    cfg.n_layer = gc->n_layer;
    cfg.n_head = gc->n_head;
    cfg.n_kv_head = gc->n_head;
    cfg.n_embd = gc->n_embd;
    tt_rng rng = tt_rng_new(1337);
    tt_gpt m;
    if (tt_gpt_init(&m, &cfg, &rng) != TT_OK) {
        fprintf(stderr, "bench_generate: %s\n", tt_last_error());
        return 1;
    }
    size_t n = (size_t)(SEQS * gc->new_tokens);
    int32_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    double tb[16], ts[16];
    time_decode(&m, gc, true, a);  // warm-up: workspaces, page faults
    time_decode(&m, gc, false, b);
    for (int r = 0; r < gc->runs; r++) {
        tb[r] = time_decode(&m, gc, true, a);
        ts[r] = time_decode(&m, gc, false, b);
    }
    double mb = median(tb, gc->runs), ms = median(ts, gc->runs);
    printf("bench generate config=%s threads=%d seqs=%d new_tokens=%lld runs=%d "
           "batch_tokens_per_s=%.1f sequential_tokens_per_s=%.1f speedup=%.2f "
           "same_tokens=%s init=random\n", gc->name, tt_get_num_threads(), SEQS,
           (long long)gc->new_tokens, gc->runs, (double)n / mb, (double)n / ms, ms / mb,
           memcmp(a, b, n * sizeof *a) == 0 ? "yes" : "no");
    fflush(stdout);
    free(a);
    free(b);
    tt_gpt_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2) {
        if (argc >= 3) tt_set_num_threads(atoi(argv[2]));
        for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
            if (strcmp(configs[i].name, argv[1]) == 0) return bench_config(&configs[i]);
        fprintf(stderr, "usage: %s [baby|mid|gpt2 [THREADS]]\n", argv[0]);
        return 2;
    }
    int nt = tt_get_num_threads();
    for (int t = 1; t <= nt && t <= 2; t++) {
        tt_set_num_threads(t);
        for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
            if (bench_config(&configs[i])) return 1;
    }
    return 0;
}

// llama.cpp as a measured peer: the GPT-2 124M shape (random weights: speed does not depend on
// the values) exported as GGUF at f32, f16, q8_0 and q4_0, timed by llama-bench (pp512: -p 512
// -n 0, prefill; tg128: -p 0 -n 128, decode) on 1 and 2 threads, alternating with our own
// figures on the same model (f32, bf16 beside f16, int8 beside q8_0, int4 beside q4_0):
// prefill = 512 tokens through the KV cache in one call, decode = 128 tokens one at a time
// after a one-token prompt. Rounds alternate (llama.cpp, then ours) and the medians of ROUNDS
// are printed as `bench llama ...` lines.
// Prints a skip line and exits 0 without LLAMA_CPP (llama.cpp's build/bin). Never part of
// `make test`, never an assertion.
//
//   LLAMA_CPP=/path/to/llama.cpp/build/bin build/bench_llama [THREADS...]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tinytorch.h"
#include "bench_util.h"
#include "models/gpt/gpt.h"
#include "models/gpt/gpt_internal.h"

#define ROUNDS 3

static const struct {
    const char *name;  // llama.cpp's
    tt_ggml_type type;
    tt_quant ours;     // our weight format beside it
} types[] = {
    {"f32", TT_GGML_F32, TT_QUANT_NONE},
    {"f16", TT_GGML_F16, TT_QUANT_BF16},
    {"q8_0", TT_GGML_Q8_0, TT_QUANT_INT8},
    {"q4_0", TT_GGML_Q4_0, TT_QUANT_INT4},
};
#define N_TYPES 4

// llama-bench's avg_ts (tokens/s) of one run, or -1 when it fails.
static double llama_bench(const char *bin, const char *model, bool prefill, int threads) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s/llama-bench' -m '%s' %s -t %d -r 1 -o csv 2>/dev/null", bin,
             model, prefill ? "-p 512 -n 0" : "-p 0 -n 128", threads);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[8192];
    int col = -1;
    double ts = -1;
    while (fgets(line, sizeof line, p)) {
        int k = 0;
        for (char *s = strtok(line, ","); s; s = strtok(NULL, ","), k++) {
            if (col < 0 && strncmp(s, "avg_ts", 6) == 0) col = k;
            else if (col >= 0 && k == col) ts = atof(s + (s[0] == '"'));
        }
    }
    return pclose(p) == 0 ? ts : -1;
}

// Our tokens/s: prefill (512 tokens in one cached forward) or decode (128 one at a time).
static double ours(tt_gpt *m, bool prefill) {
    tt__kv_cache c;
    tt__kv_cache_init(&c, m);
    int32_t toks[512];
    for (int i = 0; i < 512; i++) toks[i] = (int32_t)((i * 7919) % m->cfg.vocab_size);
    bool grad = tt_set_grad_enabled(false);
    double t0 = now_s();
    if (prefill) {
        tt_scope_begin();
        tt__gpt_forward_cached(m, &c, toks, 512);
        tt_scope_end();
    } else {
        for (int i = 0; i < 129; i++) {
            tt_scope_begin();
            tt__gpt_forward_cached(m, &c, toks + i, 1);
            tt_scope_end();
        }
    }
    double dt = now_s() - t0;
    tt_set_grad_enabled(grad);
    tt__kv_cache_free(&c);
    return (prefill ? 512 : 129) / dt;
}

static tt_status export_all(const tt_gpt *m, const tt_tokenizer *tok, const char *dir) {
    for (int k = 0; k < N_TYPES; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/gpt2_124m_%s.gguf", dir, types[k].name);
        tt_gguf_writer w;
        tt_gguf_writer_init(&w);
        tt_status s = tt_gpt_gguf_add(m, &w, types[k].type);
        if (s == TT_OK) {
            tt_tokenizer_gguf_add(tok, &w, m->cfg.vocab_size);
            s = tt_gguf_writer_save(&w, path);
        }
        tt_gguf_writer_free(&w);
        if (s != TT_OK) return s;
    }
    return TT_OK;
}

// One type on one thread count: llama.cpp and ours alternating, medians printed.
static void bench_type(const char *bin, const char *dir, int k, tt_gpt *m, int threads) {
    char path[512];
    snprintf(path, sizeof path, "%s/gpt2_124m_%s.gguf", dir, types[k].name);
    for (int prefill = 1; prefill >= 0; prefill--) {
        double l[ROUNDS], o[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) {
            l[r] = llama_bench(bin, path, prefill, threads);
            tt_set_num_threads(threads);
            o[r] = ours(m, prefill);
        }
        double ml = median(l, ROUNDS), mo = median(o, ROUNDS);
        printf("bench llama model=gpt2-124m type=%s test=%s threads=%d llama_tokens_per_s=%.1f",
               types[k].name, prefill ? "pp512" : "tg128", threads, ml);
        printf(" ours=%s ours_tokens_per_s=%.1f ratio=%.2f\n", tt_quant_name(types[k].ours), mo,
               mo / ml);
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    const char *bin = getenv("LLAMA_CPP");
    if (!bin || !bin[0]) {
        printf("bench llama: skipped (set LLAMA_CPP to llama.cpp's build/bin; bench/README.md "
               "says how to build it)\n");
        return 0;
    }
    tt_tokenizer tok;
    if (tt_tokenizer_open(&tok, "gpt2") != TT_OK) {
        printf("bench llama: skipped (%s; run make data)\n", tt_last_error());
        return 0;
    }
    char dir[] = "/tmp/tt_bench_llama_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    tt_gpt_config c = tt_gpt_config_default();  // GPT-2 124M
    c.vocab_size = 50257, c.block_size = 1024, c.n_layer = 12, c.n_head = c.n_kv_head = 12;
    c.n_embd = 768, c.dropout = 0, c.activation = TT_ACT_GELU_TANH;
    c.bias = c.qkv_bias = c.tie_weights = true, c.qk_norm = false;
    c.positional = TT_POS_LEARNED, c.norm = TT_NORM_LAYERNORM;
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_gpt m;
    if (tt_gpt_init(&m, &c, &rng) != TT_OK || export_all(&m, &tok, dir) != TT_OK) {
        fprintf(stderr, "bench llama: %s\n", tt_last_error());
        return 1;
    }
    int list[8], nt = 0;
    for (int i = 1; i < argc && nt < 8; i++) list[nt++] = atoi(argv[i]);
    if (!nt) list[nt++] = 1, list[nt++] = 2;
    for (int t = 0; t < nt; t++)
        for (int k = 0; k < N_TYPES; k++) {
            tt_gpt_quantize_as(&m, types[k].ours);  // the same weights in each format
            bench_type(bin, dir, k, &m, list[t]);
        }
    for (int k = 0; k < N_TYPES; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/gpt2_124m_%s.gguf", dir, types[k].name);
        unlink(path);
    }
    rmdir(dir);
    tt_gpt_free(&m);
    tt_tokenizer_free(&tok);
    return 0;
}

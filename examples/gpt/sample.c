// The GPT programs' sample command: the prompt and the text a checkpoint (or GPT-2's weights)
// generates after it, token by token as it comes, with temperature, top-k, top-p, the KV cache
// and int8 weights; the speed on stderr.
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_token(int32_t tok, void *ctx) {
    tt_tokenizer_write_token(ctx, tok, stdout);
    check_stdout();  // a full disk or a closed stdout stops generation at once
}

int cmd_sample(void) {
    tt_checkpoint ck;
    train_state s;
    tt_gpt gpt;
    const char *path = open_model("sample", &gpt, &s, &ck);
    tt_ckpt_free(&ck);
    if (given("--block") && opt.window > s.cfg.block_size)
        die_usage("--block %lld is above the block size %lld of '%s'; use --block <= %lld",
                  (long long)opt.window, (long long)s.cfg.block_size, path,
                  (long long)s.cfg.block_size);
    check_memory(&s.cfg, 1, s.cfg.block_size, false);
    size_t np = strlen(opt.prompt), n_ids;
    if (np == 0) die_usage("--prompt is empty; give at least one character (default: newline)");
    char of[4200];
    snprintf(of, sizeof of, " of '%s'", path);
    int32_t *prompt = tok_encode(&s.tok, opt.prompt, np, &n_ids, "--prompt", of,
                                 "use only characters of the training text");
    for (size_t i = 0; i < n_ids; i++)
        if (prompt[i] >= s.cfg.vocab_size)
            die_usage("--prompt: its token %lld is outside the vocabulary of %lld of '%s'; "
                      "use a prompt of the model's tokens", (long long)prompt[i],
                      (long long)s.cfg.vocab_size, path);
    // A smaller context window than the model's: generation slides over --block tokens.
    if (given("--block")) gpt.cfg.block_size = opt.window;
    apply_quantize(&gpt);

    tt_sample_opts so = tt_sample_opts_default();
    so.temperature = opt.temperature;
    so.top_k = (int)opt.top_k;
    so.top_p = opt.top_p;
    so.use_cache = !opt.no_cache;
    so.n_vocab = s.tok.n_vocab;  // a padded vocab's extra ids have no text
    tt_rng rng;
    tt_rng_seed(&rng, (uint64_t)opt.seed);
    int32_t *out = malloc(((size_t)opt.tokens + 1) * sizeof *out);
    if (!out) die("out of memory");
    fwrite(opt.prompt, 1, np, stdout);
    double t0 = now_s();
    tt_gpt_generate(&gpt, prompt, (int64_t)n_ids, opt.tokens, &so, &rng, out, print_token,
                    &s.tok);
    double dt = now_s() - t0;
    fputc('\n', stdout);
    check_stdout();
    fprintf(stderr, "sampled %lld tokens in %.3f s (%.1f tokens/s, KV cache %s, %d threads, "
            "%s)\n", (long long)opt.tokens, dt, dt > 0 ? (double)opt.tokens / dt : 0.0,
            so.use_cache ? "on" : "off", nthreads(), tt_quant_name(tt_gpt_quantization(&gpt)));
    free(out);
    tt_free(prompt);
    tt_gpt_free(&gpt);
    tt_tokenizer_free(&s.tok);
    return 0;
}

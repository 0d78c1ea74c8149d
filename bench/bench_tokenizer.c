// Tokenizer throughput on Tiny Shakespeare (data/bpe.c, data/data.c): MB/s of encoding the
// whole corpus with the char tokenizer and with GPT-2's BPE (a fresh tokenizer: cold cache; the
// same one again: warm cache), the time to load GPT-2's files, and the time BPE training takes
// for 4,096 merges. Prints `bench tokenizer ...` lines; never part of `make test`.
//
//   bench_tokenizer [CORPUS]    default data/tinyshakespeare.txt (make data); one thread
// bench/tiktoken_ref.mjs times js-tiktoken on the same file for comparison.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinytorch.h"
#include "bench_util.h"
#include "data/bpe.h"

#define RUNS 7

static const char ENCODER[] = "data/gpt2/encoder.json";
static const char VOCAB[] = "data/gpt2/vocab.bpe";

static void fail(const char *what) {
    fprintf(stderr, "bench tokenizer: %s: %s\n", what, tt_last_error());
    exit(1);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "data/tinyshakespeare.txt";
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench tokenizer: cannot open %s (run make data)\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long flen = ftell(f);
    rewind(f);
    char *text = malloc((size_t)flen + 1);
    size_t n = fread(text, 1, (size_t)flen, f);
    fclose(f);
    double mb = (double)n / 1e6, t[RUNS];

    // char tokenizer: build the vocab, encode every byte.
    int32_t *ids = malloc(n * sizeof *ids);
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_s();
        tt_char_vocab v;
        if (tt_vocab_build(&v, (const unsigned char *)text, n) != TT_OK ||
            tt_vocab_encode(&v, text, n, ids) != TT_OK)
            fail("char");
        t[r] = now_s() - t0;
    }
    printf("bench tokenizer name=char bytes=%zu tokens=%zu mb_per_s=%.1f\n", n, n,
           mb / median(t, RUNS));
    free(ids);

    // GPT-2: load, cold (fresh tokenizer per run), warm (the same tokenizer again).
    double load[RUNS], cold[RUNS], warm[RUNS];
    size_t n_ids = 0;
    for (int r = 0; r < RUNS; r++) {
        tt_bpe bpe;
        double t0 = now_s();
        if (tt_bpe_load_gpt2(&bpe, ENCODER, VOCAB) != TT_OK) fail("gpt2");
        double t1 = now_s();
        int32_t *x = tt_bpe_encode(&bpe, text, n, TT_BPE_ORDINARY, &n_ids);
        double t2 = now_s();
        tt_free(x);
        x = tt_bpe_encode(&bpe, text, n, TT_BPE_ORDINARY, &n_ids);
        double t3 = now_s();
        tt_free(x);
        tt_bpe_free(&bpe);
        load[r] = t1 - t0;
        cold[r] = t2 - t1;
        warm[r] = t3 - t2;
    }
    printf("bench tokenizer name=gpt2 load_ms=%.1f\n", 1e3 * median(load, RUNS));
    printf("bench tokenizer name=gpt2 cache=cold bytes=%zu tokens=%zu mb_per_s=%.1f\n", n, n_ids,
           mb / median(cold, RUNS));
    printf("bench tokenizer name=gpt2 cache=warm bytes=%zu tokens=%zu mb_per_s=%.1f\n", n, n_ids,
           mb / median(warm, RUNS));

    // BPE training: 4,096 merges on the whole corpus, then encoding with the result.
    double train[3];
    tt_bpe bpe;
    for (int r = 0; r < 3; r++) {
        double t0 = now_s();
        if (tt_bpe_train(&bpe, text, n, 4096) != TT_OK) fail("train");
        train[r] = now_s() - t0;
        if (r < 2) tt_bpe_free(&bpe);
    }
    printf("bench tokenizer train merges=4096 bytes=%zu seconds=%.3f\n", n, median(train, 3));
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_s();
        int32_t *x = tt_bpe_encode(&bpe, text, n, TT_BPE_ORDINARY, &n_ids);
        t[r] = now_s() - t0;
        tt_free(x);
    }
    printf("bench tokenizer name=bpe4096 cache=warm bytes=%zu tokens=%zu mb_per_s=%.1f\n", n,
           n_ids, mb / median(t, RUNS));
    tt_bpe_free(&bpe);
    free(text);
    return 0;
}

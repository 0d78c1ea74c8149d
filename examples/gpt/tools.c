// gpt's tokenizer tools: tokenize (the token counts of a text), encode (stdin's bytes to ids),
// decode (ids to bytes) and bpe-train (a BPE vocab learned from a text).
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The tokenizer of --ckpt, else of --tokenizer (default char: the vocab of --data).
static void tools_tokenizer(tt_tokenizer *t) {
    memset(t, 0, sizeof *t);
    if (opt.ckpt) {
        if (is_safetensors(opt.ckpt))
            die_usage("--ckpt '%s' is a safetensors file, which holds no tokenizer; pass "
                      "--tokenizer gpt2", opt.ckpt);
        tt_checkpoint ck;
        train_state s;
        load_ckpt(&ck, opt.ckpt, &s);
        tt_ckpt_free(&ck);
        tok_check_given(&s.tok, opt.ckpt);
        *t = s.tok;
    } else if (opt.tokenizer && strcmp(opt.tokenizer, "char") != 0) {
        tok_open(t, opt.tokenizer);
    } else {
        tt_text_dataset ds;
        load_data(&ds, opt.data, t, 0, "");
        tt_dataset_free(&ds);
    }
}

// Reads all of stdin into a new buffer (free it); *n bytes.
static char *read_stdin(size_t *n) {
    size_t cap = 65536, len = 0;
    char *b = malloc(cap + 1);
    if (!b) die("out of memory");
    for (;;) {
        if (len == cap) {
            char *nb = realloc(b, 2 * cap + 1);
            if (!nb) die("out of memory reading stdin (%zu bytes)", len);
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + len, 1, cap - len, stdin);
        len += got;
        if (got == 0) break;
    }
    if (ferror(stdin)) die("cannot read stdin: %s", strerror(errno));
    b[len] = 0;
    *n = len;
    return b;
}

int cmd_tokenize(void) {
    tt_tokenizer t;
    tools_tokenizer(&t);
    tt_text_dataset ds;
    load_data(&ds, opt.data, &t, 0, "use a text whose characters the checkpoint knows");
    printf("tokens=%lld train=%lld val=%lld\n", (long long)ds.n, (long long)ds.n_train,
           (long long)(ds.n - ds.n_train));
    check_stdout();
    tt_dataset_free(&ds);
    tt_tokenizer_free(&t);
    return 0;
}

int cmd_encode(void) {
    tt_tokenizer t;
    tools_tokenizer(&t);
    size_t n, n_ids;
    char *text = read_stdin(&n);
    int32_t *ids = tok_encode(&t, text, n, &n_ids, "stdin", "",
                              "encode text of the tokenizer's characters");
    for (size_t i = 0; i < n_ids; i++) printf(i ? " %d" : "%d", (int)ids[i]);
    fputc('\n', stdout);
    check_stdout();
    tt_free(ids);
    free(text);
    tt_tokenizer_free(&t);
    return 0;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int cmd_decode(void) {
    tt_tokenizer t;
    tools_tokenizer(&t);
    size_t n;
    char *text = read_stdin(&n);
    // Every id is checked before any byte is written: bad input writes nothing.
    size_t cap = n / 2 + 1, count = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) die("out of memory");
    char what[24] = "";  // the text at the first bad id, at offset i
    size_t i = 0;
    long long v = 0;
    bool bad = false, not_id = false;
    for (;;) {
        while (i < n && is_space(text[i])) i++;
        if (i == n) break;
        char *end = NULL;
        errno = 0;
        v = (text[i] >= '0' && text[i] <= '9') ? strtoll(text + i, &end, 10) : -1;
        not_id = v < 0 || errno == ERANGE || (end < text + n && !is_space(*end));
        if (not_id || v >= t.n_vocab) {
            snprintf(what, sizeof what, "%.20s", text + i);
            bad = true;
            break;
        }
        ids[count++] = (int32_t)v;
        i = (size_t)(end - text);
    }
    free(text);
    if (bad) {  // the ids are freed first: LeakSanitizer checks the exit
        free(ids);
        if (not_id)
            die_usage("decode: stdin holds '%s' at byte %zu, not a token id; pass decimal "
                      "ids separated by spaces", what, i);
        die_usage("decode: id %lld (token %zu of stdin) is outside the %s tokenizer's "
                  "[0, %lld); pass ids of the same tokenizer", v, count + 1, tt_tokenizer_name(&t),
                  (long long)t.n_vocab);
    }
    for (size_t k = 0; k < count; k++) tt_tokenizer_write_token(&t, ids[k], stdout);
    check_stdout();
    free(ids);
    tt_tokenizer_free(&t);
    return 0;
}

int cmd_bpe_train(void) {
    if (!given("--merges")) die_usage("bpe-train needs --merges N (e.g. --merges 512)");
    if (!given("--out")) die_usage("bpe-train needs --out VOCAB (e.g. --out out/bpe.vocab)");
    unsigned char *text;
    size_t n;
    tt_status st = tt_read_file(data_file(opt.data), &text, &n);
    if (st == TT_OK && n == 0) st = tt_set_error(TT_ERR_ARG, "'%s' is empty", opt.data);
    if (st != TT_OK) data_error(st, opt.data);
    check_outputs(CMD_BPE_TRAIN);
    tt_bpe bpe;
    double t0 = now_s();
    if (tt_bpe_train(&bpe, (const char *)text, n, (int)opt.merges) != TT_OK)
        die_usage("bpe-train: %s", tt_last_error());
    free(text);
    if (tt_bpe_save(&bpe, opt.out) != TT_OK) die("%s", tt_last_error());
    fprintf(stderr, "%s: %d merges of '%s' in %.1f s: vocab of %d ids written to %s\n",
            prog->name, bpe.n_merges, opt.data, now_s() - t0, bpe.n_vocab, opt.out);
    tt_bpe_free(&bpe);
    return 0;
}

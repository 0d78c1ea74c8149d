// The char-level data pipeline of data.h: a byte tokenizer (ids in byte order, so the vocab of
// a text is deterministic), a text dataset read whole into memory with a train/val split (or
// made of another tokenizer's ids), and the seeded random-window batch sampler, which also
// draws from memory-mapped token shards (shards.c).
#include "data.h"
#include "shards.h"

#include "../tensor/tensor_ext.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// ---- char tokenizer ----

static void vocab_clear(tt_char_vocab *v) {
    memset(v, 0, sizeof *v);
    for (int i = 0; i < 256; i++) v->ids[i] = -1;
}

tt_status tt_vocab_build(tt_char_vocab *v, const unsigned char *text, size_t n) {
    vocab_clear(v);
    if (n == 0 || !text) return tt_set_error(TT_ERR_ARG, "vocab: the text is empty");
    bool seen[256] = {false};
    for (size_t i = 0; i < n; i++) seen[text[i]] = true;
    for (int b = 0; b < 256; b++) {
        if (!seen[b]) continue;
        v->chars[v->size] = (unsigned char)b;
        v->ids[b] = (int16_t)v->size;
        v->size++;
    }
    return TT_OK;
}

tt_status tt_vocab_from_chars(tt_char_vocab *v, const unsigned char *chars, int size) {
    vocab_clear(v);
    if (size < 1 || size > 256 || !chars)
        return tt_set_error(TT_ERR_FORMAT, "vocab: size %d is out of range [1, 256]", size);
    for (int i = 0; i < size; i++) {
        if (v->ids[chars[i]] >= 0) {
            int b = chars[i], first = v->ids[b];
            vocab_clear(v);
            return tt_set_error(TT_ERR_FORMAT, "vocab: byte 0x%02x appears twice (ids %d and "
                                "%d)", b, first, i);
        }
        v->chars[i] = chars[i];
        v->ids[chars[i]] = (int16_t)i;
    }
    v->size = size;
    return TT_OK;
}

// 'c' for a printable ASCII byte, \xNN otherwise.
static const char *char_repr(unsigned char c, char buf[8]) {
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') snprintf(buf, 8, "'%c'", c);
    else snprintf(buf, 8, "\\x%02x", c);
    return buf;
}

tt_status tt_vocab_encode(const tt_char_vocab *v, const char *s, size_t n, int32_t *out) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int id = v->ids[c];
        if (id < 0) {
            char buf[8];
            return tt_set_error(TT_ERR_ARG, "character %s at position %zu is not in the "
                                "vocabulary of %d characters", char_repr(c, buf), i, v->size);
        }
        out[i] = id;
    }
    return TT_OK;
}

void tt_vocab_decode(const tt_char_vocab *v, const int32_t *ids, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) {
        TT_CHECK(ids[i] >= 0 && ids[i] < v->size, "token id %d at position %zu is out of "
                 "range [0, %d)", (int)ids[i], i, v->size);
        out[i] = (char)v->chars[ids[i]];
    }
}

// ---- dataset ----

tt_status tt_read_file(const char *path, unsigned char **buf, size_t *n) {
    *buf = NULL;
    *n = 0;
    struct stat st;
    FILE *f = tt__fopen_read(path, "file", NULL);
    if (!f) return TT_ERR_IO;
    size_t cap = fstat(fileno(f), &st) == 0 && st.st_size > 0 ? (size_t)st.st_size : 65536;
    size_t len = 0;
    unsigned char *b = malloc(cap + 1);
    if (!b) {
        fclose(f);
        return tt_set_error(TT_ERR_NOMEM, "out of memory reading '%s' (%zu bytes)", path, cap);
    }
    for (;;) {
        if (len == cap) {  // the file grew, or is not a regular file
            unsigned char *nb = cap < SIZE_MAX / 4 ? realloc(b, 2 * cap + 1) : NULL;
            if (!nb) {
                free(b);
                fclose(f);
                return tt_set_error(TT_ERR_NOMEM, "out of memory reading '%s'", path);
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        free(b);
        return tt_set_error(TT_ERR_IO, "cannot read '%s': %s", path, strerror(err));
    }
    if (len == 0) {
        free(b);
        return TT_OK;
    }
    *buf = b;
    *n = len;
    return TT_OK;
}

tt_status tt_dataset_load(tt_text_dataset *ds, const char *path, const tt_char_vocab *vocab,
                          double train_frac) {
    memset(ds, 0, sizeof *ds);
    if (!(train_frac > 0 && train_frac < 1))
        return tt_set_error(TT_ERR_ARG, "dataset: train fraction %g must be in (0, 1)",
                            train_frac);
    unsigned char *text;
    size_t n;
    tt_status s = tt_read_file(path, &text, &n);
    if (s != TT_OK) return s;
    if (n == 0) return tt_set_error(TT_ERR_ARG, "'%s' is empty; pass a text file", path);
    if (n > (size_t)INT64_MAX / sizeof(int32_t)) {
        free(text);
        return tt_set_error(TT_ERR_ARG, "'%s' is too large (%zu bytes)", path, n);
    }
    if (vocab) ds->vocab = *vocab;
    else tt_vocab_build(&ds->vocab, text, n);
    ds->tokens = malloc(n * sizeof(int32_t));
    if (!ds->tokens) {
        free(text);
        return tt_set_error(TT_ERR_NOMEM, "out of memory encoding '%s' (%zu tokens)", path, n);
    }
    s = tt_vocab_encode(&ds->vocab, (const char *)text, n, ds->tokens);
    free(text);
    if (s != TT_OK) {
        // Keep the encoder's message (it names the character and its position).
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tt_last_error());
        tt_dataset_free(ds);
        return tt_set_error(TT_ERR_MISMATCH, "'%s': %s", path, msg);
    }
    ds->n = (int64_t)n;
    ds->n_train = (int64_t)((double)n * train_frac);  // nanoGPT: int(n * 0.9)
    return TT_OK;
}

tt_status tt_dataset_from_tokens(tt_text_dataset *ds, const int32_t *tokens, int64_t n,
                                 int64_t n_train) {
    memset(ds, 0, sizeof *ds);
    TT_CHECK(n >= 0 && n_train >= 0 && n_train <= n, "n %lld and n_train %lld must satisfy "
             "0 <= n_train <= n (n_train: the train split's tokens)", (long long)n,
             (long long)n_train);
    TT_CHECK(n == 0 || tokens, "tokens is NULL but n is %lld", (long long)n);
    if (n == 0) return tt_set_error(TT_ERR_ARG, "dataset: no tokens; pass a non-empty text");
    if ((uint64_t)n > SIZE_MAX / sizeof(int32_t))
        return tt_set_error(TT_ERR_ARG, "dataset: %lld tokens are too many", (long long)n);
    ds->tokens = malloc((size_t)n * sizeof(int32_t));
    if (!ds->tokens)
        return tt_set_error(TT_ERR_NOMEM, "out of memory for a dataset of %lld tokens",
                            (long long)n);
    memcpy(ds->tokens, tokens, (size_t)n * sizeof(int32_t));
    ds->n = n;
    ds->n_train = n_train;
    return TT_OK;
}

tt_status tt_dataset_check(const tt_text_dataset *ds, int64_t block_size) {
    if (block_size < 1)
        return tt_set_error(TT_ERR_ARG, "dataset: block size %lld must be positive",
                            (long long)block_size);
    int64_t n_val = ds->n - ds->n_train;
    const char *which = ds->n_train < n_val ? "train" : "val";
    int64_t least = ds->n_train < n_val ? ds->n_train : n_val;
    if (least < block_size + 1)
        return tt_set_error(TT_ERR_ARG, "dataset: the %s split has %lld tokens but block size "
                            "%lld needs at least %lld; use a longer text (%lld tokens in all) or "
                            "a smaller block size", which, (long long)least,
                            (long long)block_size, (long long)block_size + 1, (long long)ds->n);
    return TT_OK;
}

void tt_dataset_free(tt_text_dataset *ds) {
    free(ds->tokens);
    if (ds->shards) tt_shards_close(ds->shards);
    free(ds->shards);
    memset(ds, 0, sizeof *ds);
}

// ---- batches ----

void tt_dataset_batch(const tt_text_dataset *ds, tt_data_split split, int64_t B, int64_t T,
                      tt_rng *rng, tt_tensor **x, tt_tensor **y) {
    TT_CHECK(split == TT_SPLIT_TRAIN || split == TT_SPLIT_VAL, "invalid split %d; valid values "
             "are TT_SPLIT_TRAIN (0) and TT_SPLIT_VAL (1)", (int)split);
    TT_CHECK(B > 0 && T > 0, "batch size %lld and block size %lld must be positive",
             (long long)B, (long long)T);
    const int32_t *base = ds->tokens ? ds->tokens + (split == TT_SPLIT_TRAIN ? 0 : ds->n_train)
                                     : NULL;  // shards: read from the files
    int64_t len = split == TT_SPLIT_TRAIN ? ds->n_train : ds->n - ds->n_train;
    TT_CHECK(len >= T + 1, "the %s split has %lld tokens, fewer than T + 1 = %lld (call "
             "tt_dataset_check first)", split == TT_SPLIT_TRAIN ? "train" : "val",
             (long long)len, (long long)T + 1);
    tt_tensor *xs = tt_empty(TT_I32, TT_SHAPE(B, T));  // (B, T)
    tt_tensor *ys = tt_empty(TT_I32, TT_SHAPE(B, T));  // (B, T)
    int32_t *xd = tt_data(xs), *yd = tt_data(ys);
    for (int64_t b = 0; b < B; b++) {
        int64_t i = tt_rng_below(rng, len - T);  // nanoGPT: randint(len(data) - block_size)
        if (ds->shards) {
            tt_shards_read(ds->shards, split, i, T, xd + b * T);
            tt_shards_read(ds->shards, split, i + 1, T, yd + b * T);
            continue;
        }
        memcpy(xd + b * T, base + i, (size_t)T * sizeof(int32_t));
        memcpy(yd + b * T, base + i + 1, (size_t)T * sizeof(int32_t));
    }
    *x = xs;
    *y = ys;
}

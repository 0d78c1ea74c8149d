// tinytorch.c data: a character-level tokenizer, a text dataset with a train/val split, and a
// seeded random-window batch sampler (x and y shifted by one token), as nanoGPT's char model.
// A dataset may also hold ids of another tokenizer (tt_dataset_from_tokens, e.g. data/bpe.h's).
//
//     tt_text_dataset ds;
//     if (tt_dataset_load(&ds, "data/tinyshakespeare.txt", NULL, 0.9) != TT_OK) { ... }
//     tt_tensor *x, *y;                                    // (B, T) i32 each, owned by the scope
//     tt_dataset_batch(&ds, TT_SPLIT_TRAIN, 12, 64, &rng, &x, &y);
//     tt_dataset_free(&ds);
#ifndef TT_DATA_H
#define TT_DATA_H

#include "../tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- char tokenizer: one token per distinct byte, ids in byte order ----

typedef struct tt_char_vocab {
    int size;                 // 1 .. 256
    unsigned char chars[256]; // id -> byte
    int16_t ids[256];         // byte -> id, -1 if absent
} tt_char_vocab;

// From the distinct bytes of text (n > 0); TT_ERR_ARG for an empty text.
tt_status tt_vocab_build(tt_char_vocab *v, const unsigned char *text, size_t n);
// From an explicit list of distinct bytes (e.g. read from a checkpoint); TT_ERR_FORMAT when a
// byte repeats or size is out of range.
tt_status tt_vocab_from_chars(tt_char_vocab *v, const unsigned char *chars, int size);
// Encodes n bytes into out; TT_ERR_ARG naming the first byte not in the vocab (printable
// characters shown as 'c', others as \xNN) and its position.
tt_status tt_vocab_encode(const tt_char_vocab *v, const char *s, size_t n, int32_t *out);
// Writes n bytes into out (no terminator); ids must be in range (aborts otherwise).
void tt_vocab_decode(const tt_char_vocab *v, const int32_t *ids, size_t n, char *out);

// ---- dataset ----

typedef enum tt_data_split { TT_SPLIT_TRAIN, TT_SPLIT_VAL } tt_data_split;

struct tt_token_shards;  // shards.h

typedef struct tt_text_dataset {
    tt_char_vocab vocab;  // size 0 when the ids come from tt_dataset_from_tokens
    int32_t *tokens;      // the whole text encoded (NULL for shards)
    int64_t n;        // tokens
    int64_t n_train;  // tokens[0 .. n_train) train, tokens[n_train .. n) val
    struct tt_token_shards *shards;  // tt_dataset_open_shards: the mapped files; else NULL
} tt_text_dataset;

// Reads the file and encodes it. With vocab NULL the vocab is built from the file; otherwise
// the file must be encodable with it (TT_ERR_MISMATCH naming the character otherwise).
// train_frac in (0, 1). Errors: TT_ERR_IO (missing, unreadable, a directory), TT_ERR_ARG
// (empty). The split sizes are checked by tt_dataset_check.
tt_status tt_dataset_load(tt_text_dataset *ds, const char *path, const tt_char_vocab *vocab,
                          double train_frac);
// A dataset of ids made by any tokenizer: tokens[0 .. n) copied, the first n_train of them
// the train split (0 <= n_train <= n). The char vocab is left empty (size 0).
tt_status tt_dataset_from_tokens(tt_text_dataset *ds, const int32_t *tokens, int64_t n,
                                 int64_t n_train);
// TT_ERR_ARG unless each split holds at least block_size + 1 tokens.
tt_status tt_dataset_check(const tt_text_dataset *ds, int64_t block_size);
void tt_dataset_free(tt_text_dataset *ds);  // safe on a zeroed struct

// Reads a whole file (regular or not) into a new buffer of *n bytes (free() it; NULL and 0 for
// an empty file). TT_ERR_IO naming the path and the reason (missing, a directory, unreadable).
tt_status tt_read_file(const char *path, unsigned char **buf, size_t *n);

// x[b] = split[i_b .. i_b + T), y[b] = split[i_b + 1 .. i_b + T + 1) with i_b uniform from rng.
// x and y are new (B, T) TT_I32 tensors (scope rule as any tensor). Over shards (shards.h) a
// split is its files one after another: the same draws give the same windows as the tokens
// read into memory, and a window may run from one shard into the next.
void tt_dataset_batch(const tt_text_dataset *ds, tt_data_split split, int64_t B, int64_t T,
                      tt_rng *rng, tt_tensor **x, tt_tensor **y);

#ifdef __cplusplus
}
#endif

#endif  // TT_DATA_H

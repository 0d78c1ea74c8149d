// tinytorch.c token shards: a corpus tokenized once into files of token ids (llm.c's format),
// read back memory-mapped, read-only, as a text dataset whose train and val splits are the
// concatenations of their shards, so the seeded batch sampler of data.h draws from them as from
// a text read into memory. No compression, no random access into a shard's header beyond it.
//
//     tt_shard_writer *w;                                  // gpt prepare's core
//     tt_shard_writer_open(&w, "out/shakes", "shakes", &(tt_shard_writer_opts){
//                              .width = 2, .shard_tokens = 100000000, .train_frac = 0.9,
//                              .eot = -1});
//     tt_shard_writer_add(w, ids, n);                      // one document; again per document
//     tt_shards_written done;
//     tt_shard_writer_finish(w, &done);                    // writes the shards, frees w
//
//     tt_text_dataset ds;                                  // a directory, a glob or one file
//     if (tt_dataset_open_shards(&ds, "out/shakes", 65) != TT_OK) { ... tt_last_error() ... }
//     tt_dataset_batch(&ds, TT_SPLIT_TRAIN, 12, 64, &rng, &x, &y);  // as any text dataset
//     tt_dataset_free(&ds);                                // unmaps
//
// The file (little-endian): a header of 256 int32, [0] the magic 20240520, [1] the version,
// [2] the token count, the rest zeros; then the tokens: version 1 uint16 (llm.c's), version 2
// uint32 (this library's, for a vocabulary above 65536 ids). A file named train.bin or val.bin
// is nanoGPT's instead: uint16 tokens with no header. A shard's name says its split: it holds
// "_train" or "_val" followed by "_" or ".bin" (name_train_000001.bin, tiny_val.bin).
#ifndef TT_SHARDS_H
#define TT_SHARDS_H

#include "data.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TT_SHARD_MAGIC 20240520
#define TT_SHARD_VERSION_U16 1  // llm.c's: uint16 tokens
#define TT_SHARD_VERSION_U32 2  // uint32 tokens (a vocabulary of more than 65536 ids)
#define TT_SHARD_HEADER_INTS 256
#define TT_SHARD_HEADER_BYTES (TT_SHARD_HEADER_INTS * 4)
#define TT_SHARD_MAX_TOKENS INT32_MAX  // the header's count is an int32

// ---- one file ----

typedef struct tt_shard_info {
    int width;  // bytes per token: 2 or 4
    int64_t n_tokens;
    size_t offset;  // of the first token: TT_SHARD_HEADER_BYTES, 0 without a header
} tt_shard_info;

// Validates the size bytes of a shard file named path (for messages): with a header (headerless
// false) its magic, version and count, which must account for every byte after it; nanoGPT's
// headerless file an even size. TT_ERR_FORMAT with one line naming path, what is wrong and the
// fix.
tt_status tt_shard_parse(const void *bytes, size_t size, bool headerless, const char *path,
                         tt_shard_info *info);

// Whether a file's base name marks a shard, and of which split; headerless for train.bin and
// val.bin (nanoGPT's).
bool tt_shard_name_split(const char *path, tt_data_split *split, bool *headerless);

// ---- writing ----

typedef struct tt_shard_writer_opts {
    int width;             // 2 (uint16 tokens, ids below 65536) or 4 (uint32)
    int64_t shard_tokens;  // at most this many tokens a file, 1 .. TT_SHARD_MAX_TOKENS
    double train_frac;     // in (0, 1): the first (int64_t)(n * train_frac) tokens are train
    int32_t eot;           // the id put between documents; -1: none
} tt_shard_writer_opts;

typedef struct tt_shards_written {
    int64_t n_tokens, n_train, n_val;  // the separators included
    int n_train_files, n_val_files;
    int64_t max_id;  // the largest id written; -1 when none
} tt_shards_written;

typedef struct tt_shard_writer tt_shard_writer;

// Starts writing shards <name>_val_NNNNNN.bin then <name>_train_NNNNNN.bin into the existing
// directory dir (one index over both, val first, as llm.c). The tokens go to a temp file in dir
// until finish, which knows their count and so the split. TT_ERR_IO when dir is not writable.
tt_status tt_shard_writer_open(tt_shard_writer **w, const char *dir, const char *name,
                               const tt_shard_writer_opts *opts);
// Appends a document of n ids (the separator before it, unless it is the first); TT_ERR_ARG for
// an id outside [0, 2^(8 width)), TT_ERR_IO for a failed write.
tt_status tt_shard_writer_add(tt_shard_writer *w, const int32_t *ids, size_t n);
// Writes the shards, each through a temp file renamed over its name (a failure leaves every
// earlier file whole), removes shards of this name an earlier run left beyond the new ones and
// the temp file, and frees w. TT_ERR_ARG when a split would be empty.
tt_status tt_shard_writer_finish(tt_shard_writer *w, tt_shards_written *out);
// Drops what was added (removes the temp file) and frees w; NULL is a no-op.
void tt_shard_writer_abort(tt_shard_writer *w);

// ---- reading: memory-mapped shards as a text dataset ----

typedef struct tt_shard {
    char *path;
    void *map;  // the whole file, mapped read-only (NULL when empty)
    size_t size;
    const unsigned char *tokens;  // map + offset
    int width;
    int64_t n;
    tt_data_split split;
} tt_shard;

typedef struct tt_token_shards {
    tt_shard *shards;  // the train shards in name order, then the val shards in name order
    int n_shards, n_train_shards;
    int64_t n[2];    // tokens of TT_SPLIT_TRAIN, TT_SPLIT_VAL
    int64_t *start;  // start[i]: shard i's first token within its split (n_shards entries)
} tt_token_shards;

// Opens spec: a directory (its files whose names mark a shard), a glob pattern (every match
// must be a shard) or one shard file, and maps every file. TT_ERR_IO (unreadable, nothing
// found) or TT_ERR_FORMAT (tt_shard_parse's) with one line.
tt_status tt_shards_open(tt_token_shards *s, const char *spec);
void tt_shards_close(tt_token_shards *s);  // safe on a zeroed struct
// Tokens start .. start + n of a split, across shard boundaries, into out (aborts when the
// range leaves the split).
void tt_shards_read(const tt_token_shards *s, tt_data_split split, int64_t start, int64_t n,
                    int32_t *out);
// TT_ERR_MISMATCH naming the shard, the position and the id when any id is outside
// [0, n_vocab) (reads every token once).
tt_status tt_shards_check_ids(const tt_token_shards *s, int64_t n_vocab);

// The shards of spec as ds (no char vocab; tokens NULL: batches read the mapped files), ids
// checked against [0, n_vocab) when n_vocab > 0. tt_dataset_free unmaps them.
tt_status tt_dataset_open_shards(tt_text_dataset *ds, const char *spec, int64_t n_vocab);

#ifdef __cplusplus
}
#endif

#endif  // TT_SHARDS_H

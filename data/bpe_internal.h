// Internals shared by data/bpe.c (maps, pre-tokenizer, encode/decode, GPT-2 loader) and
// data/bpe_train.c (training, vocab file): two open-addressing hash maps (xxHash) and the
// tokenizer's state. Not a public header.
#ifndef TT_BPE_INTERNAL_H
#define TT_BPE_INTERNAL_H

#include "bpe.h"

#include <stdint.h>

// ---- pair map: (id a, id b) -> int32 value, linear probing, key UINT64_MAX = empty ----

typedef struct bpe_pair_slot {
    uint64_t key;  // (uint64_t)a << 32 | b
    int32_t val;
} bpe_pair_slot;

typedef struct bpe_pair_map {
    bpe_pair_slot *slots;
    size_t cap, count;  // cap a power of two, count <= cap / 2
} bpe_pair_map;

static inline uint64_t bpe_pair_key(int32_t a, int32_t b) {
    return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}
void bpe_pair_map_init(bpe_pair_map *m, size_t expected);
void bpe_pair_map_free(bpe_pair_map *m);
// Pointer to the value of key, inserted with val_if_new when absent.
int32_t *bpe_pair_map_put(bpe_pair_map *m, uint64_t key, int32_t val_if_new);
int32_t bpe_pair_map_get(const bpe_pair_map *m, uint64_t key, int32_t missing);

// ---- bytes map: byte string -> two int32 values; keys copied into a pool ----

typedef struct bpe_bytes_slot {
    uint64_t hash;
    uint32_t off, len;  // key = pool[off .. off + len); len 0 = empty slot
    int32_t v0, v1;
} bpe_bytes_slot;

typedef struct bpe_bytes_map {
    bpe_bytes_slot *slots;
    size_t cap, count;
    unsigned char *pool;
    size_t pool_len, pool_cap;
} bpe_bytes_map;

void bpe_bytes_map_init(bpe_bytes_map *m, size_t expected);
void bpe_bytes_map_free(bpe_bytes_map *m);
void bpe_bytes_map_clear(bpe_bytes_map *m);
// The slot of key (len >= 1), or NULL.
bpe_bytes_slot *bpe_bytes_map_get(const bpe_bytes_map *m, const void *key, size_t len);
// The slot of key, inserted (v0 = v1 = -1, *inserted = true) when absent.
bpe_bytes_slot *bpe_bytes_map_put(bpe_bytes_map *m, const void *key, size_t len,
                                  bool *inserted);

// ---- the tokenizer's state ----

struct tt_bpe_state {
    uint32_t *tok_off;       // (n_vocab + 1): token id's bytes are tok_bytes[off[id] .. off[id+1])
    unsigned char *tok_bytes;
    int32_t *merges;         // (n_merges, 2): merge i joins ids merges[2i], merges[2i+1]
    bpe_pair_map pairs;      // (a, b) -> merged id (the rank: lower merges first)
    bpe_bytes_map tokens;    // bytes -> id, every token but the special one
    bpe_bytes_map cache;     // pre-token bytes -> ids (v0 offset in cache_ids, v1 count)
    int32_t *cache_ids;
    size_t cache_len, cache_cap;
    void *re;                // pcre2_code_8 *
    void *match;             // pcre2_match_data_8 *
};

// Allocates bpe->s with the compiled pattern and empty maps (tokens, merges set by the caller).
tt_status bpe_state_new(tt_bpe *bpe);
// The next pre-token of text[*pos, n) as [*start, *end); false at the end of the text.
bool bpe_next_piece(tt_bpe_state *s, const unsigned char *text, size_t n, size_t *pos,
                    size_t *start, size_t *end);
// After tok_off/tok_bytes are set: the tokens map (bytes -> id, the special token left out).
// TT_ERR_FORMAT, naming what, when two tokens have the same bytes (GPT-2; a trained vocab
// keeps the lower id).
tt_status bpe_build_tokens(tt_bpe *bpe, const char *what);
// After the tokens map and merges: the pair map, by tiktoken's rule when bpe->tiktoken (every
// split of a token into two tokens), else from the merge list (TT_ERR_FORMAT on a repeat).
tt_status bpe_build_pairs(tt_bpe *bpe, const char *what);

// The largest vocab file read (bytes): a tinytorch-bpe vocab of 4,194,304 merges is ~70 MB,
// GPT-2's encoder.json 1 MB; a larger file is refused, not read into memory.
#define TT_BPE_FILE_MAX (256 << 20)

// Reads a whole file into a NUL-terminated buffer (tt_free it); TT_ERR_IO names the path, the
// reason and fix; TT_ERR_FORMAT when it holds more than TT_BPE_FILE_MAX bytes.
tt_status bpe_read_file(const char *path, const char *fix, char **data, size_t *n);

// "<|endoftext|>": GPT-2's end-of-text token as text (bpe.c).
extern const char BPE_EOT_TEXT[];

// GPT-2's bytes_to_unicode, inverted: unicode_byte[code point] is the byte it stands for, -1
// outside the alphabet (code points below 324). bpe_gpt2.c.
void tt__bpe_gpt2_alphabet(int unicode_byte[324]);

#endif  // TT_BPE_INTERNAL_H

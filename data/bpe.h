// tinytorch.c byte-level BPE: GPT-2's tokenizer (byte-for-byte tiktoken's `gpt2` encoding) and
// BPE training on a text with the same pre-tokenizer (minbpe-style), with a small text vocab
// file. No other special tokens than GPT-2's <|endoftext|>, no streaming of huge files.
//
//     tt_bpe bpe;
//     if (tt_bpe_load_gpt2(&bpe, "data/gpt2/encoder.json", "data/gpt2/vocab.bpe") != TT_OK) {
//         fprintf(stderr, "%s\n", tt_last_error());  // names the file and the fix
//         return 1;
//     }
//     size_t n;
//     int32_t *ids = tt_bpe_encode(&bpe, "Hello world", 11, TT_BPE_ORDINARY, &n);
//     // ids = {15496, 995}, n = 2
//     size_t len;
//     char *text = tt_bpe_decode(&bpe, ids, n, &len);  // "Hello world", len = 11
//     tt_free(ids);
//     tt_free(text);
//     tt_bpe_free(&bpe);
//
// Training: tt_bpe_train(&bpe, text, n, 4096) learns 4,096 merges; tt_bpe_save / tt_bpe_load
// keep them in a text file (format below); the same encode/decode work on it.
#ifndef TT_BPE_H
#define TT_BPE_H

#include "../tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// How encode treats the text "<|endoftext|>".
typedef enum tt_bpe_mode {
    TT_BPE_ORDINARY,       // as ordinary text (tiktoken's encode_ordinary): "<|", "endoftext", "|>"
    TT_BPE_ALLOW_SPECIAL,  // as the special token (GPT-2: id 50256) when the vocab has one
} tt_bpe_mode;

typedef struct tt_bpe_state tt_bpe_state;  // maps, cache and compiled pattern (bpe_internal.h)

typedef struct tt_bpe {
    int n_vocab;        // ids are [0, n_vocab), the special token included
    int n_merges;       // merge i makes token id first_merge + i
    int first_merge;    // 256: ids below are the 256 one-byte tokens
    int eot_id;         // <|endoftext|> (GPT-2: 50256), or -1 when the vocab has none
    int byte_id[256];   // byte -> id of its one-byte token (GPT-2's order is not byte order)
    bool tiktoken;      // GPT-2: merge rule of tiktoken (below); trained: minbpe's merge list
    tt_bpe_state *s;
} tt_bpe;

// ---- GPT-2 ----

// Reads OpenAI's encoder.json (token -> id, 50,257 entries) and vocab.bpe ("#version: 0.2",
// then 50,000 merges), both spelled in GPT-2's byte -> unicode alphabet. Checks that they agree:
// every byte has a token, merge i joins two known tokens into the token with id 256 + i, the
// count is 256 + merges + <|endoftext|>. Errors (TT_ERR_IO, TT_ERR_FORMAT, TT_ERR_MISMATCH) name
// the file, the line or key, and the fix ("run make data"); bpe is left zeroed.
tt_status tt_bpe_load_gpt2(tt_bpe *bpe, const char *encoder_json, const char *vocab_bpe);

// ---- training ----

// Learns n_merges merges from text: the text is split by the GPT-2 pre-tokenizer, merges never
// cross a pre-token; each step merges the most frequent adjacent pair of ids (ties: the
// smallest first id, then the smallest second id) into id 256 + step, as minbpe's
// RegexTokenizer. One-byte tokens have id = byte. TT_ERR_ARG when n_merges < 1, the text
// has fewer than n_merges possible merges (the message says how many) or the tokens would
// come to more than 64 MiB in all (long repeated runs); bpe is left zeroed.
tt_status tt_bpe_train(tt_bpe *bpe, const char *text, size_t n, int n_merges);

// The vocab file of a trained tokenizer, text, one merge per line:
//     tinytorch-bpe 1            format name and version
//     merges 4096                the count
//     101 32                     merge 0: ids a b (decimal) -> id 256
//     ...                        merge i: a, b < 256 + i -> id 256 + i
// Written to a temp file and renamed over path. TT_ERR_ARG for GPT-2's tokenizer (its files
// are its vocab), TT_ERR_IO when writing fails.
tt_status tt_bpe_save(const tt_bpe *bpe, const char *path);
// Reads that file; TT_ERR_IO / TT_ERR_FORMAT naming the file, the line and the problem.
// TT_ERR_FORMAT too when the tokens come to more than 64 MiB in all (each merge can double a
// token's length: a short corrupt file could otherwise ask for gigabytes).
tt_status tt_bpe_load(tt_bpe *bpe, const char *path);
// The same from the file's n bytes in memory (e.g. kept in a checkpoint); path only names them
// in messages.
tt_status tt_bpe_load_bytes(tt_bpe *bpe, const char *bytes, size_t n, const char *path);

void tt_bpe_free(tt_bpe *bpe);  // safe on a zeroed struct

// ---- encode / decode ----

// Splits the bytes with GPT-2's pre-tokenizer pattern
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (invalid UTF-8 bytes, which no part matches, form pre-tokens of their own), then merges each
// pre-token's bytes: repeatedly the adjacent pair whose merged token has the lowest id, the
// leftmost on ties. GPT-2 (tiktoken's rule): a pre-token that is a token is that token, and
// any two adjacent tokens whose bytes join into a token merge; trained: only the pairs of the
// merge list. Any byte string encodes; decode(encode(x)) == x. Returns n_out ids in a new
// array (tt_free it; NULL when n_out is 0). Caches pre-token -> ids in bpe, so one tt_bpe must
// not encode on two threads at once.
int32_t *tt_bpe_encode(tt_bpe *bpe, const char *text, size_t n, tt_bpe_mode mode,
                       size_t *n_out);
// The bytes of the ids, concatenated, in a new NUL-terminated array (tt_free it); *n_out
// bytes before the NUL. Aborts on an id outside [0, n_vocab).
char *tt_bpe_decode(const tt_bpe *bpe, const int32_t *ids, size_t n, size_t *n_out);
// Merge i (0 <= i < n_merges) joins ids *a and *b into first_merge + i; aborts out of range.
void tt_bpe_merge(const tt_bpe *bpe, int i, int32_t *a, int32_t *b);
// The bytes of one token (not NUL-terminated); aborts on an id out of range.
const unsigned char *tt_bpe_token(const tt_bpe *bpe, int32_t id, size_t *len);

#ifdef __cplusplus
}
#endif

#endif  // TT_BPE_H

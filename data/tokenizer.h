// tinytorch.c tokenizer selection: one type for the three tokenizers a text model is trained on,
// chosen by name as a command line gives it: "char" (one token per distinct byte of the training
// text), "gpt2" (GPT-2's byte-level BPE, from its encoder.json and vocab.bpe) or the path of a
// vocab written by tt_bpe_save. It encodes, decodes, loads a text dataset split 90/10 and saves
// itself in a checkpoint (a trained vocab whole, so the checkpoint stands alone).
//
//     tt_tokenizer tok;
//     if (tt_tokenizer_open(&tok, "gpt2") != TT_OK) { fprintf(stderr, "%s\n", tt_last_error()); }
//     int32_t *ids;
//     size_t n;
//     tt_tokenizer_encode(&tok, "Hello world", 11, &ids, &n);  // {15496, 995}, n = 2
//     tt_tokenizer_write_token(&tok, ids[0], stdout);            // "Hello"
//     tt_free(ids);
//     tt_tokenizer_free(&tok);
#ifndef TT_TOKENIZER_H
#define TT_TOKENIZER_H

#include "data.h"
#include "bpe.h"
#include "path.h"
#include "../io/checkpoint.h"
#include "../io/safetensors.h"
#include "../io/gguf.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// The data files "gpt2" is read from, found by tt_data_path (path.h): $TINYTORCH_DATA, the
// install location (make install), the source tree's data/ (make data).
#define TT_GPT2_ENCODER "gpt2/encoder.json"
#define TT_GPT2_MERGES "gpt2/vocab.bpe"

typedef enum tt_tokenizer_kind {
    TT_TOKENIZER_CHAR,  // a tt_char_vocab
    TT_TOKENIZER_GPT2,  // GPT-2's BPE
    TT_TOKENIZER_FILE,  // a trained BPE vocab (tt_bpe_save's file)
    TT_TOKENIZER_KIND_COUNT
} tt_tokenizer_kind;

typedef struct tt_tokenizer {
    tt_tokenizer_kind kind;
    tt_char_vocab vocab;  // CHAR: size 0 until a text gives it (tt_tokenizer_load_text)
    tt_bpe bpe;           // GPT2, FILE
    unsigned char *file;  // FILE: the vocab file's bytes, kept whole in checkpoints
    size_t file_len;
    int64_t n_vocab;      // ids are [0, n_vocab); 0 for a char tokenizer without its text yet
} tt_tokenizer;

// By name: "char" (empty: its vocab comes from the first text it loads), "gpt2" (from
// TT_GPT2_ENCODER and TT_GPT2_MERGES: tt_data_path's and tt_bpe_load_gpt2's errors) or a
// vocab file: TT_ERR_ARG
// "'NAME' is not char, gpt2 nor a readable vocab file (reason)" when no file has that name,
// else tt_bpe_load's errors (TT_ERR_IO, TT_ERR_FORMAT). t is zeroed on error.
tt_status tt_tokenizer_open(tt_tokenizer *t, const char *name);
// GPT-2's tokenizer from the given files.
tt_status tt_tokenizer_open_gpt2(tt_tokenizer *t, const char *encoder_json,
                                 const char *vocab_bpe);
// A char tokenizer of the given vocab (copied).
void tt_tokenizer_init_char(tt_tokenizer *t, const tt_char_vocab *v);
void tt_tokenizer_free(tt_tokenizer *t);  // safe on a zeroed struct

// "char", "gpt2" or "file".
const char *tt_tokenizer_name(const tt_tokenizer *t);
// Whether both hold the same vocab (the same kind; the same chars or vocab file bytes).
bool tt_tokenizer_equal(const tt_tokenizer *a, const tt_tokenizer *b);

// The ids of text[0 .. n) in a new array *ids (tt_free it; NULL when *n_ids is 0). Char: one
// id per byte, TT_ERR_ARG naming the first byte not in the vocab and its position (*ids NULL);
// BPE: any bytes encode (ordinary text: "<|endoftext|>" is not the special token).
tt_status tt_tokenizer_encode(tt_tokenizer *t, const char *text, size_t n, int32_t **ids,
                              size_t *n_ids);
// The bytes of token id (not NUL-terminated, *len of them); aborts on an id out of range.
const unsigned char *tt_tokenizer_token(const tt_tokenizer *t, int32_t id, size_t *len);
// Writes the bytes of token id to fp.
void tt_tokenizer_write_token(const tt_tokenizer *t, int32_t id, FILE *fp);
// The bytes of n ids in a new NUL-terminated array (tt_free it); *len bytes before the NUL.
char *tt_tokenizer_decode(const tt_tokenizer *t, const int32_t *ids, size_t n, size_t *len);

// The text file path as a dataset of t's ids, its first train_frac of characters the train
// split (nanoGPT's data[:int(n * 0.9)] on the decoded text). Char: without a vocab yet, the
// file's distinct bytes become t's vocab; with one, a byte it lacks is TT_ERR_MISMATCH. BPE:
// each split is encoded on its own (nanoGPT's prepare.py). TT_ERR_IO (unreadable), TT_ERR_ARG
// (empty). The split sizes are tt_dataset_check's.
tt_status tt_tokenizer_load_text(tt_tokenizer *t, tt_text_dataset *ds, const char *path,
                                 double train_frac);

// Checkpoint entries: "tokenizer" = char | gpt2 | file, with the char vocab in "vocab" (as the
// first checkpoints held it) and a trained vocab's file in "tokenizer.vocab".
void tt_tokenizer_to_checkpoint(const tt_tokenizer *t, tt_checkpoint *ck);
// The tokenizer of a checkpoint (no "tokenizer" entry: char, as the first checkpoints). The
// messages name the checkpoint by path: TT_ERR_FORMAT for a missing or invalid vocab or an
// unknown tokenizer name; GPT-2's files that cannot be read are tt_bpe_load_gpt2's errors.
tt_status tt_tokenizer_from_checkpoint(tt_tokenizer *t, const tt_checkpoint *ck,
                                       const char *path);

// The tokenizer alone in a file (a checkpoint of the entries above; gpt prepare writes one
// beside its token shards), and back: tt_ckpt_save's and tt_ckpt_load's errors, then
// tt_tokenizer_from_checkpoint's (any checkpoint of gpt train reads too). Saving aborts on a
// char tokenizer without its vocab yet.
tt_status tt_tokenizer_save(const tt_tokenizer *t, const char *path);
tt_status tt_tokenizer_load(tt_tokenizer *t, const char *path);

// Safetensors metadata (string values), so an exported model carries its tokenizer:
// "tokenizer" = char | gpt2 | file and, for char and file, "tokenizer.vocab_hex": the char
// vocab's bytes in id order, or the trained vocab's file, as two lowercase hex digits a byte
// (Python: bytes.fromhex(meta["tokenizer.vocab_hex"])). Returns {key, value, ..., NULL} in one
// allocation (tt_free it), for tt_safetensors_save or tt_gpt_save_hf_meta. Aborts on a char
// tokenizer without its vocab yet.
const char **tt_tokenizer_metadata(const tt_tokenizer *t);
// The tokenizer of a safetensors file's metadata: TT_OK with *found false (t zeroed) when the
// file has no "tokenizer" entry (e.g. Hugging Face's GPT-2 files); TT_ERR_FORMAT naming the
// file for an unknown tokenizer or a missing or invalid vocab; GPT-2's files that cannot be
// read are tt_tokenizer_open's errors.
tt_status tt_tokenizer_from_metadata(tt_tokenizer *t, const tt_safetensors *f, bool *found);

// GGUF metadata (data/tokenizer_gguf.c). GPT-2's BPE as llama.cpp reads it:
// tokenizer.ggml.model = "gpt2", .pre = "gpt-2", .tokens (n_vocab: GPT-2's in its printable
// byte alphabet, then "[PAD<id>]" up to a padded vocab), .token_type (1 normal, 3 for
// <|endoftext|>, 5 for the padding), .merges ("a b"), .bos_token_id = .eos_token_id =
// <|endoftext|>, .add_bos_token = false. A char or trained vocab: tokenizer.ggml.model =
// "none" and tinytorch.tokenizer = char | file with tinytorch.tokenizer.vocab_hex (as
// tt_tokenizer_metadata). Aborts when n_vocab is below t's ids.
void tt_tokenizer_gguf_add(const tt_tokenizer *t, tt_gguf_writer *w, int64_t n_vocab);
// The tokenizer of a GGUF file: TT_OK with *found false when it has none (no
// tokenizer.ggml.model, or "none"); GPT-2's (opened from its data files, as "gpt2") when the
// file's tokens and merges are GPT-2's; a char or trained vocab from the tinytorch keys.
// TT_ERR_FORMAT naming the file for another tokenizer model, a GPT-2-style BPE other than
// GPT-2's, or an invalid vocab; t zeroed on error.
tt_status tt_tokenizer_from_gguf(tt_tokenizer *t, const tt_gguf *f, bool *found);

#ifdef __cplusplus
}
#endif

#endif  // TT_TOKENIZER_H

// The tokenizer selection of tokenizer.h: a char vocab, GPT-2's BPE or a trained BPE vocab
// behind one type, with its text dataset and its checkpoint entries. The tokenizers themselves
// are data.c's and bpe.c's; this file only chooses between them.
#include "tokenizer.h"
#include "data_internal.h"

#include "../tensor/tensor_ext.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// ---- opening ----

// The last error into buf (n bytes), to be quoted in a new one (tt_set_error cannot read the
// message it is writing).
static const char *saved_error(char *buf, size_t n) {
    snprintf(buf, n, "%s", tt_last_error());
    return buf;
}

tt_status tt_tokenizer_open_gpt2(tt_tokenizer *t, const char *encoder_json,
                                 const char *vocab_bpe) {
    memset(t, 0, sizeof *t);
    tt_status st = tt_bpe_load_gpt2(&t->bpe, encoder_json, vocab_bpe);
    if (st != TT_OK) return st;
    t->kind = TT_TOKENIZER_GPT2;
    t->n_vocab = t->bpe.n_vocab;
    return TT_OK;
}

// GPT-2's tokenizer from TT_GPT2_ENCODER and TT_GPT2_MERGES where tt_data_path finds them.
static tt_status open_gpt2_data(tt_tokenizer *t) {
    char enc[4096], merges[4096];
    memset(t, 0, sizeof *t);
    tt_status st = tt_data_path(TT_GPT2_ENCODER, enc, sizeof enc);
    if (st == TT_OK) st = tt_data_path(TT_GPT2_MERGES, merges, sizeof merges);
    return st == TT_OK ? tt_tokenizer_open_gpt2(t, enc, merges) : st;
}

// A trained vocab (t->bpe loaded) keeps its file's n bytes b (copied).
static tt_status keep_vocab_file(tt_tokenizer *t, const unsigned char *b, size_t n) {
    t->kind = TT_TOKENIZER_FILE;
    t->n_vocab = t->bpe.n_vocab;
    t->file = TT_MALLOC(n ? n : 1);
    if (n) memcpy(t->file, b, n);
    t->file_len = n;
    return TT_OK;
}

// A trained vocab from its file's bytes; path names them in messages.
static tt_status open_vocab_bytes(tt_tokenizer *t, const unsigned char *b, size_t n,
                                  const char *path) {
    memset(t, 0, sizeof *t);
    tt_status st = tt_bpe_load_bytes(&t->bpe, (const char *)b, n, path);
    return st == TT_OK ? keep_vocab_file(t, b, n) : st;
}

tt_status tt_tokenizer_open(tt_tokenizer *t, const char *name) {
    TT_CHECK(t && name, "tokenizer and name must not be NULL");
    memset(t, 0, sizeof *t);
    if (strcmp(name, "char") == 0) return TT_OK;  // TT_TOKENIZER_CHAR, no vocab yet
    if (strcmp(name, "gpt2") == 0) return open_gpt2_data(t);
    struct stat sb;
    if (stat(name, &sb) != 0)
        return tt_set_error(TT_ERR_ARG, "'%s' is not char, gpt2 nor a readable vocab file (%s)",
                            name, strerror(errno));
    tt_status st = tt_bpe_load(&t->bpe, name);  // its messages name the file and the line
    unsigned char *b = NULL;
    size_t n = 0;
    if (st == TT_OK) st = tt_read_file(name, &b, &n);
    if (st != TT_OK) {
        tt_tokenizer_free(t);
        return st;
    }
    keep_vocab_file(t, b, n);
    free(b);
    return TT_OK;
}

void tt_tokenizer_init_char(tt_tokenizer *t, const tt_char_vocab *v) {
    memset(t, 0, sizeof *t);
    t->kind = TT_TOKENIZER_CHAR;
    t->vocab = *v;
    t->n_vocab = v->size;
}

void tt_tokenizer_free(tt_tokenizer *t) {
    if (!t) return;
    tt_bpe_free(&t->bpe);
    tt_free(t->file);
    memset(t, 0, sizeof *t);
}

const char *tt_tokenizer_name(const tt_tokenizer *t) {
    return t->kind == TT_TOKENIZER_CHAR ? "char" : t->kind == TT_TOKENIZER_GPT2 ? "gpt2" : "file";
}

bool tt_tokenizer_equal(const tt_tokenizer *a, const tt_tokenizer *b) {
    if (a->kind != b->kind) return false;
    if (a->kind == TT_TOKENIZER_CHAR)
        return a->vocab.size == b->vocab.size &&
               memcmp(a->vocab.chars, b->vocab.chars, (size_t)a->vocab.size) == 0;
    if (a->kind == TT_TOKENIZER_FILE)
        return a->file_len == b->file_len && memcmp(a->file, b->file, a->file_len) == 0;
    return true;  // GPT-2's is one vocab
}

// ---- encode / decode ----

tt_status tt_tokenizer_encode(tt_tokenizer *t, const char *text, size_t n, int32_t **ids,
                              size_t *n_ids) {
    *ids = NULL;
    *n_ids = 0;
    if (t->kind != TT_TOKENIZER_CHAR) {
        *ids = tt_bpe_encode(&t->bpe, text, n, TT_BPE_ORDINARY, n_ids);
        return TT_OK;
    }
    TT_CHECK(t->vocab.size > 0, "the char tokenizer has no vocab yet; load its text first "
             "(tt_tokenizer_load_text) or give it one (tt_tokenizer_init_char)");
    if (n == 0) return TT_OK;
    int32_t *out = TT_MALLOC(n * sizeof *out);
    tt_status st = tt_vocab_encode(&t->vocab, text, n, out);
    if (st != TT_OK) {
        tt_free(out);
        return st;
    }
    *ids = out;
    *n_ids = n;
    return TT_OK;
}

const unsigned char *tt_tokenizer_token(const tt_tokenizer *t, int32_t id, size_t *len) {
    if (t->kind != TT_TOKENIZER_CHAR) return tt_bpe_token(&t->bpe, id, len);
    TT_CHECK(id >= 0 && id < t->vocab.size, "token id %d is outside the char vocab [0, %d)",
             (int)id, t->vocab.size);
    *len = 1;
    return &t->vocab.chars[id];
}

void tt_tokenizer_write_token(const tt_tokenizer *t, int32_t id, FILE *fp) {
    size_t len;
    const unsigned char *b = tt_tokenizer_token(t, id, &len);
    fwrite(b, 1, len, fp);
}

char *tt_tokenizer_decode(const tt_tokenizer *t, const int32_t *ids, size_t n, size_t *len) {
    if (t->kind != TT_TOKENIZER_CHAR) return tt_bpe_decode(&t->bpe, ids, n, len);
    char *out = TT_MALLOC(n + 1);
    tt_vocab_decode(&t->vocab, ids, n, out);
    out[n] = '\0';
    *len = n;
    return out;
}

// ---- text dataset ----

// The byte offset where the first frac of text's characters end (UTF-8: a byte 10xxxxxx does
// not start a character).
static size_t char_split(const unsigned char *text, size_t n, double frac) {
    size_t chars = 0, seen = 0;
    for (size_t i = 0; i < n; i++) chars += (text[i] & 0xC0) != 0x80;
    size_t want = (size_t)((double)chars * frac);
    for (size_t i = 0; i < n; i++)
        if ((text[i] & 0xC0) != 0x80 && seen++ == want) return i;
    return n;
}

// A BPE dataset: the text split by characters, each part encoded on its own.
static tt_status load_bpe_text(tt_tokenizer *t, tt_text_dataset *ds, const char *path,
                               double train_frac) {
    unsigned char *text;
    size_t n, n_tr, n_va;
    tt_status st = tt_read_file(path, &text, &n);
    if (st == TT_OK && n == 0) st = tt_set_error(TT_ERR_ARG, "'%s' is empty", path);
    if (st != TT_OK) return st;
    size_t cut = char_split(text, n, train_frac);
    int32_t *tr = tt_bpe_encode(&t->bpe, (const char *)text, cut, TT_BPE_ORDINARY, &n_tr);
    int32_t *va = tt_bpe_encode(&t->bpe, (const char *)text + cut, n - cut, TT_BPE_ORDINARY,
                                &n_va);
    free(text);
    int32_t *all = TT_MALLOC((n_tr + n_va + 1) * sizeof *all);
    if (n_tr) memcpy(all, tr, n_tr * sizeof *all);
    if (n_va) memcpy(all + n_tr, va, n_va * sizeof *all);
    tt_free(tr);
    tt_free(va);
    st = tt_dataset_from_tokens(ds, all, (int64_t)(n_tr + n_va), (int64_t)n_tr);
    tt_free(all);
    return st;
}

tt_status tt_tokenizer_load_text(tt_tokenizer *t, tt_text_dataset *ds, const char *path,
                                 double train_frac) {
    memset(ds, 0, sizeof *ds);
    if (t->kind != TT_TOKENIZER_CHAR) return load_bpe_text(t, ds, path, train_frac);
    tt_status st = tt_dataset_load(ds, path, t->n_vocab ? &t->vocab : NULL, train_frac);
    if (st != TT_OK) return st;
    t->vocab = ds->vocab;
    t->n_vocab = ds->vocab.size;
    return TT_OK;
}

// ---- checkpoint entries ----

void tt_tokenizer_to_checkpoint(const tt_tokenizer *t, tt_checkpoint *ck) {
    const char *name = tt_tokenizer_name(t);
    tt_ckpt_set_bytes(ck, "tokenizer", name, strlen(name));
    if (t->kind == TT_TOKENIZER_CHAR)
        tt_ckpt_set_bytes(ck, "vocab", t->vocab.chars, (size_t)t->vocab.size);
    if (t->kind == TT_TOKENIZER_FILE) tt_ckpt_set_bytes(ck, "tokenizer.vocab", t->file,
                                                        t->file_len);
}

static tt_status char_from_checkpoint(tt_tokenizer *t, const tt_checkpoint *ck,
                                      const char *path) {
    const unsigned char *b;
    size_t n;
    tt_char_vocab v;
    char e[1024];
    if (!tt_ckpt_get_bytes(ck, "vocab", &b, &n) ||
        tt_vocab_from_chars(&v, b, n > 256 ? 0 : (int)n) != TT_OK)
        return tt_set_error(TT_ERR_FORMAT, "checkpoint '%s' has no valid 'vocab' (%s)", path,
                            saved_error(e, sizeof e));
    tt_tokenizer_init_char(t, &v);
    return TT_OK;
}

tt_status tt_tokenizer_from_checkpoint(tt_tokenizer *t, const tt_checkpoint *ck,
                                       const char *path) {
    memset(t, 0, sizeof *t);
    const unsigned char *b;
    size_t n;
    char e[1024];
    bool has = tt_ckpt_get_bytes(ck, "tokenizer", &b, &n);
    if (!has || (n == 4 && memcmp(b, "char", 4) == 0)) return char_from_checkpoint(t, ck, path);
    if (n == 4 && memcmp(b, "gpt2", 4) == 0) {
        tt_status st = open_gpt2_data(t);
        if (st != TT_OK)
            return tt_set_error(st, "checkpoint '%s' (trained on GPT-2 tokens): %s", path,
                                saved_error(e, sizeof e));
        return TT_OK;
    }
    if (n == 4 && memcmp(b, "file", 4) == 0) {
        if (!tt_ckpt_get_bytes(ck, "tokenizer.vocab", &b, &n))
            return tt_set_error(TT_ERR_FORMAT, "checkpoint '%s' has no 'tokenizer.vocab'; it "
                                "was not written by a program that keeps its tokenizer", path);
        if (open_vocab_bytes(t, b, n, "tokenizer.vocab") != TT_OK)
            return tt_set_error(TT_ERR_FORMAT, "checkpoint '%s': its tokenizer.vocab: %s", path,
                                saved_error(e, sizeof e));
        return TT_OK;
    }
    return tt_set_error(TT_ERR_FORMAT, "checkpoint '%s': unknown tokenizer '%.*s'; it was "
                        "written by a newer program", path, (int)(n > 40 ? 40 : n),
                        (const char *)b);
}

// ---- a tokenizer file: a checkpoint of only the entries above ----

tt_status tt_tokenizer_save(const tt_tokenizer *t, const char *path) {
    TT_CHECK(t->n_vocab > 0,
             "the tokenizer has no vocab yet (a char tokenizer takes one from "
             "its text: tt_tokenizer_load_text)");
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    tt_tokenizer_to_checkpoint(t, &ck);
    tt_status st = tt_ckpt_save(&ck, path);
    tt_ckpt_free(&ck);
    return st;
}

tt_status tt_tokenizer_load(tt_tokenizer *t, const char *path) {
    memset(t, 0, sizeof *t);
    tt_checkpoint ck;
    tt_status st = tt_ckpt_load(&ck, path);
    if (st == TT_OK) st = tt_tokenizer_from_checkpoint(t, &ck, path);
    tt_ckpt_free(&ck);
    return st;
}

// ---- safetensors metadata ----

// The bytes of t's vocab as metadata holds them: the char vocab, a trained vocab's file.
static const unsigned char *vocab_bytes(const tt_tokenizer *t, size_t *n) {
    *n = t->kind == TT_TOKENIZER_CHAR ? (size_t)t->vocab.size : t->file_len;
    return t->kind == TT_TOKENIZER_CHAR ? t->vocab.chars : t->file;
}

const char **tt_tokenizer_metadata(const tt_tokenizer *t) {
    TT_CHECK(t, "tokenizer must not be NULL");
    TT_CHECK(t->kind != TT_TOKENIZER_CHAR || t->vocab.size > 0, "the char tokenizer has no "
             "vocab to put in metadata yet; load its text first (tt_tokenizer_load_text)");
    size_t n = 0;
    const unsigned char *b = t->kind == TT_TOKENIZER_GPT2 ? NULL : vocab_bytes(t, &n);
    const char **kv = TT_MALLOC(5 * sizeof *kv + 2 * n + 1);
    char *hex = (char *)(kv + 5);
    kv[0] = "tokenizer";
    kv[1] = tt_tokenizer_name(t);
    kv[2] = b ? "tokenizer.vocab_hex" : NULL;
    kv[3] = b ? hex : NULL;
    kv[4] = NULL;
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = "0123456789abcdef"[b[i] >> 4];
        hex[2 * i + 1] = "0123456789abcdef"[b[i] & 15];
    }
    hex[2 * n] = '\0';
    return kv;
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

// The bytes of hex (two hex digits a byte) in a new array *b (tt_free it), *n of them; false
// (nothing allocated) when it is missing, empty or not hex.
static bool meta_vocab(const char *hex, unsigned char **b, size_t *n) {
    size_t len = hex ? strlen(hex) : 0;
    if (len == 0 || len % 2) return false;
    *n = len / 2;
    *b = TT_MALLOC(*n);
    for (size_t i = 0; i < *n; i++) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            tt_free(*b);
            return false;
        }
        (*b)[i] = (unsigned char)(hi << 4 | lo);
    }
    return true;
}

tt_status tt__tokenizer_from_hex(tt_tokenizer *t, const char *hex, int kind, const char *where,
                                 const char *key) {
    unsigned char *b;
    size_t n;
    char e[1024];
    if (!meta_vocab(hex, &b, &n))
        return tt_set_error(TT_ERR_FORMAT, "%s: its metadata %s is missing, empty or not hex "
                            "digits", where, key);
    tt_status st;
    if (kind == TT_TOKENIZER_CHAR) {
        tt_char_vocab v;
        st = tt_vocab_from_chars(&v, b, n > 256 ? 0 : (int)n);
        if (st == TT_OK) tt_tokenizer_init_char(t, &v);
    } else {
        st = open_vocab_bytes(t, b, n, "tokenizer.vocab_hex");
    }
    tt_free(b);
    if (st != TT_OK)
        return tt_set_error(TT_ERR_FORMAT, "%s: its metadata %s is not a valid %s vocab (%s)",
                            where, key, kind == TT_TOKENIZER_CHAR ? "char" : "trained",
                            saved_error(e, sizeof e));
    return TT_OK;
}

// The char or trained-vocab tokenizer (kind) of f's vocab entry.
static tt_status vocab_from_metadata(tt_tokenizer *t, const tt_safetensors *f,
                                     tt_tokenizer_kind kind) {
    char where[600];
    snprintf(where, sizeof where, "safetensors '%s'", f->path);
    return tt__tokenizer_from_hex(t, tt_safetensors_meta(f, "tokenizer.vocab_hex"), kind, where,
                                  "tokenizer.vocab_hex");
}

tt_status tt_tokenizer_from_metadata(tt_tokenizer *t, const tt_safetensors *f, bool *found) {
    TT_CHECK(t && f && found, "tokenizer, file and found must not be NULL");
    memset(t, 0, sizeof *t);
    const char *name = tt_safetensors_meta(f, "tokenizer");
    *found = name != NULL;
    if (!name) return TT_OK;
    if (strcmp(name, "char") == 0) return vocab_from_metadata(t, f, TT_TOKENIZER_CHAR);
    if (strcmp(name, "file") == 0) return vocab_from_metadata(t, f, TT_TOKENIZER_FILE);
    if (strcmp(name, "gpt2") == 0) return open_gpt2_data(t);
    return tt_set_error(TT_ERR_FORMAT, "safetensors '%s': unknown tokenizer '%.40s' in its "
                        "metadata; it was written by a newer program", f->path, name);
}

// The tokenizer in GGUF metadata (data/tokenizer.h): GPT-2's BPE as llama.cpp reads it
// (tokenizer.ggml.model = "gpt2": tokens in GPT-2's printable byte alphabet, token types,
// merges "a b", bos / eos ids), and a char or trained vocab under tinytorch.tokenizer keys.
// Reading rebuilds GPT-2's tokenizer only when the file's tokens and merges are GPT-2's own.
#include "tokenizer.h"
#include "bpe_internal.h"
#include "data_internal.h"

#include <stdio.h>
#include <string.h>

// ggml's token types.
enum { TOKEN_NORMAL = 1, TOKEN_CONTROL = 3, TOKEN_UNUSED = 5 };

// The code point that stands for each byte in GPT-2's alphabet.
static void byte_points(int point[256]) {
    int unicode_byte[324];
    tt__bpe_gpt2_alphabet(unicode_byte);
    for (int c = 0; c < 324; c++)
        if (unicode_byte[c] >= 0) point[unicode_byte[c]] = c;
}

// Token id of bpe in GPT-2's alphabet (UTF-8) into out (cap >= 2 * its bytes + 1).
static void alphabet_token(const tt_bpe *bpe, const int point[256], int32_t id, char *out) {
    size_t len, k = 0;
    const unsigned char *b = tt_bpe_token(bpe, id, &len);
    for (size_t i = 0; i < len; i++) {
        int c = point[b[i]];
        if (c < 0x80) {
            out[k++] = (char)c;
        } else {
            out[k++] = (char)(0xc0 | c >> 6);
            out[k++] = (char)(0x80 | (c & 0x3f));
        }
    }
    out[k] = 0;
}

// The longest token of bpe, in bytes.
static size_t longest(const tt_bpe *bpe) {
    size_t m = 0, len;
    for (int32_t id = 0; id < bpe->n_vocab; id++) {
        (void)tt_bpe_token(bpe, id, &len);
        if (len > m) m = len;
    }
    return m;
}

// GPT-2's tokens (padded to n_vocab with "[PAD<id>]"), types and merges.
static void add_gpt2(const tt_bpe *bpe, tt_gguf_writer *w, int64_t n_vocab) {
    int point[256];
    byte_points(point);
    size_t cap = 2 * longest(bpe) + 24;
    char *buf = TT_MALLOC((size_t)n_vocab * cap + 2 * (size_t)bpe->n_merges * cap + 1);
    const char **toks = TT_MALLOC((size_t)n_vocab * sizeof *toks + 1);
    int32_t *types = TT_MALLOC((size_t)n_vocab * sizeof *types + 1);
    for (int64_t id = 0; id < n_vocab; id++) {
        char *s = buf + (size_t)id * cap;
        if (id < bpe->n_vocab) alphabet_token(bpe, point, (int32_t)id, s);
        else snprintf(s, cap, "[PAD%lld]", (long long)id);
        toks[id] = s;
        types[id] = id >= bpe->n_vocab ? TOKEN_UNUSED : id == bpe->eot_id ? TOKEN_CONTROL
                                                                           : TOKEN_NORMAL;
    }
    const char **merges = TT_MALLOC((size_t)bpe->n_merges * sizeof *merges + 1);
    for (int i = 0; i < bpe->n_merges; i++) {
        int32_t a, b;
        tt_bpe_merge(bpe, i, &a, &b);
        char *s = buf + (size_t)n_vocab * cap + 2 * (size_t)i * cap;
        alphabet_token(bpe, point, a, s);
        size_t k = strlen(s);
        s[k] = ' ';
        alphabet_token(bpe, point, b, s + k + 1);
        merges[i] = s;
    }
    tt_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    tt_gguf_writer_set_str(w, "tokenizer.ggml.pre", "gpt-2");
    tt_gguf_writer_set_array(w, "tokenizer.ggml.tokens", TT_GGUF_STRING, toks, (uint64_t)n_vocab);
    tt_gguf_writer_set_array(w, "tokenizer.ggml.token_type", TT_GGUF_INT32, types,
                             (uint64_t)n_vocab);
    tt_gguf_writer_set_array(w, "tokenizer.ggml.merges", TT_GGUF_STRING, merges,
                             (uint64_t)bpe->n_merges);
    if (bpe->eot_id >= 0) {
        tt_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bpe->eot_id);
        tt_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)bpe->eot_id);
    }
    tt_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false);
    tt_free(merges);
    tt_free(types);
    tt_free(toks);
    tt_free(buf);
}

void tt_tokenizer_gguf_add(const tt_tokenizer *t, tt_gguf_writer *w, int64_t n_vocab) {
    TT_CHECK(t && w, "tokenizer and writer must not be NULL");
    TT_CHECK(n_vocab >= t->n_vocab, "n_vocab %lld is below the tokenizer's %lld ids",
             (long long)n_vocab, (long long)t->n_vocab);
    if (t->kind == TT_TOKENIZER_GPT2) {
        add_gpt2(&t->bpe, w, n_vocab);
        return;
    }
    const char **kv = tt_tokenizer_metadata(t);  // {tokenizer, name, tokenizer.vocab_hex, hex}
    tt_gguf_writer_set_str(w, "tokenizer.ggml.model", "none");
    tt_gguf_writer_set_str(w, "tinytorch.tokenizer", kv[1]);
    tt_gguf_writer_set_str(w, "tinytorch.tokenizer.vocab_hex", kv[3]);
    tt_free(kv);
}

// ---- reading ----

// TT_OK when f's tokens (the first bpe->n_vocab) and merges are bpe's.
static tt_status same_as_gpt2(const tt_bpe *bpe, const tt_gguf *f) {
    const tt_gguf_value *tv = tt_gguf_find_kv(f, "tokenizer.ggml.tokens"),
                        *mv = tt_gguf_find_kv(f, "tokenizer.ggml.merges");
    if (!tv || !mv || tv->type != TT_GGUF_ARRAY || tv->elem != TT_GGUF_STRING ||
        mv->type != TT_GGUF_ARRAY || mv->elem != TT_GGUF_STRING)
        return tt_set_error(TT_ERR_FORMAT, "gguf '%s': tokenizer.ggml.tokens and .merges are "
                            "missing or not arrays of strings", f->path);
    if (tv->n < (uint64_t)bpe->n_vocab || mv->n != (uint64_t)bpe->n_merges)
        return tt_set_error(TT_ERR_FORMAT, "gguf '%s': its BPE has %llu tokens and %llu merges, "
                            "GPT-2's %d and %d; this library reads GPT-2's own BPE from GGUF",
                            f->path, (unsigned long long)tv->n, (unsigned long long)mv->n,
                            bpe->n_vocab, bpe->n_merges);
    int point[256];
    byte_points(point);
    size_t cap = 4 * longest(bpe) + 8;
    char *s = TT_MALLOC(cap);
    tt_status st = TT_OK;
    for (int32_t id = 0; id < bpe->n_vocab && st == TT_OK; id++) {
        alphabet_token(bpe, point, id, s);
        const tt_gguf_value *v = &tv->items[id];
        if (v->n != strlen(s) || memcmp(v->str, s, v->n) != 0)
            st = tt_set_error(TT_ERR_FORMAT, "gguf '%s': token %d of its BPE is not GPT-2's; "
                              "this library reads GPT-2's own BPE from GGUF", f->path, id);
    }
    for (int i = 0; i < bpe->n_merges && st == TT_OK; i++) {
        int32_t a, b;
        tt_bpe_merge(bpe, i, &a, &b);
        alphabet_token(bpe, point, a, s);
        size_t k = strlen(s);
        s[k] = ' ';
        alphabet_token(bpe, point, b, s + k + 1);
        const tt_gguf_value *v = &mv->items[i];
        if (v->n != strlen(s) || memcmp(v->str, s, v->n) != 0)
            st = tt_set_error(TT_ERR_FORMAT, "gguf '%s': merge %d of its BPE is not GPT-2's; "
                              "this library reads GPT-2's own BPE from GGUF", f->path, i);
    }
    tt_free(s);
    return st;
}

tt_status tt_tokenizer_from_gguf(tt_tokenizer *t, const tt_gguf *f, bool *found) {
    TT_CHECK(t && f && found, "tokenizer, file and found must not be NULL");
    memset(t, 0, sizeof *t);
    *found = false;
    char where[600];
    snprintf(where, sizeof where, "gguf '%s'", f->path);
    const char *ours = tt_gguf_get_str(f, "tinytorch.tokenizer");
    if (ours) {
        *found = true;
        int kind = strcmp(ours, "char") == 0 ? TT_TOKENIZER_CHAR
                   : strcmp(ours, "file") == 0 ? TT_TOKENIZER_FILE : -1;
        if (kind < 0)
            return tt_set_error(TT_ERR_FORMAT, "%s: unknown tinytorch.tokenizer '%.40s'; it was "
                                "written by a newer program", where, ours);
        return tt__tokenizer_from_hex(t, tt_gguf_get_str(f, "tinytorch.tokenizer.vocab_hex"),
                                      kind, where, "tinytorch.tokenizer.vocab_hex");
    }
    const char *model = tt_gguf_get_str(f, "tokenizer.ggml.model");
    if (!model || strcmp(model, "none") == 0 || strcmp(model, "no_vocab") == 0) return TT_OK;
    if (strcmp(model, "gpt2") != 0)
        return tt_set_error(TT_ERR_FORMAT, "%s: tokenizer.ggml.model '%.40s' is not supported; "
                            "this library reads GPT-2's BPE ('gpt2')", where, model);
    *found = true;
    tt_status st = tt_tokenizer_open(t, "gpt2");
    if (st != TT_OK) return st;
    if ((st = same_as_gpt2(&t->bpe, f)) != TT_OK) tt_tokenizer_free(t);
    return st;
}

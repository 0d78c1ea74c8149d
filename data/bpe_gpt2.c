// GPT-2's vocabulary files (data/bpe.h): OpenAI's encoder.json (read with Jansson) and
// vocab.bpe, both in GPT-2's printable byte alphabet, into a tt_bpe; and the bounded file read
// the trained vocab file's loader (bpe_train.c) shares.
#include "bpe_internal.h"

#include "../tensor/tensor_ext.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// GPT-2's bytes_to_unicode: the 188 printable bytes ('!'..'~', 0xa1..0xac, 0xae..0xff) stand
// for themselves, the other 68 for code points 256, 257, ... in byte order. unicode_byte is
// the inverse (-1 outside the alphabet).
void tt__bpe_gpt2_alphabet(int unicode_byte[324]) {
    for (int c = 0; c < 324; c++) unicode_byte[c] = -1;
    int next = 256;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        unicode_byte[printable ? b : next++] = b;
    }
}

// Decodes GPT-2-alphabet text s[0 .. n) (UTF-8) into bytes out (n bytes at most); returns
// the byte count, or -1 when s is not in the alphabet.
static long gpt2_unmap(const int unicode_byte[324], const char *s, size_t n,
                       unsigned char *out) {
    long k = 0;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        int c;
        if (p[i] < 0x80) {
            c = p[i];
            i += 1;
        } else if ((p[i] & 0xe0) == 0xc0 && i + 1 < n && (p[i + 1] & 0xc0) == 0x80) {
            c = (p[i] & 0x1f) << 6 | (p[i + 1] & 0x3f);
            i += 2;
        } else {
            return -1;  // every code point of the alphabet is below 0x800
        }
        if (c >= 324 || unicode_byte[c] < 0) return -1;
        out[k++] = (unsigned char)unicode_byte[c];
    }
    return k;
}

static const char GPT2_FIX[] = "run make data to fetch GPT-2's encoder.json and vocab.bpe";

tt_status bpe_read_file(const char *path, const char *fix, char **data, size_t *n) {
    *data = NULL;
    *n = 0;
    FILE *f = tt__fopen_read(path, "vocabulary file", fix);
    if (!f) return TT_ERR_IO;
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len > TT_BPE_FILE_MAX) {  // a vocab file is at most ~70 MB (4M merges)
            fclose(f);
            tt_free(buf);
            return tt_set_error(TT_ERR_FORMAT, "%s: larger than %d MiB, far more than any "
                                "vocab (%s)", path, TT_BPE_FILE_MAX >> 20, fix);
        }
        if (cap - len < 65536) {
            cap = 2 * cap + 65536;
            buf = TT_REALLOC(buf, cap + 1);
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) tt_free(buf);
    if (err) return tt_set_error(TT_ERR_IO, "%s: read error: %s (%s)", path, strerror(err), fix);
    buf[len] = '\0';
    *data = buf;
    *n = len;
    return TT_OK;
}

// Up to 60 bytes of s[0 .. n) for an error message, in buf (64 bytes): control bytes become
// '?', so the message stays one line whatever the file holds.
static const char *quote(char buf[64], const char *s, size_t n) {
    size_t k = 0;
    for (; k < n && k < 60 && s[k]; k++)
        buf[k] = (unsigned char)s[k] < 0x20 || s[k] == 0x7f ? '?' : s[k];
    buf[k] = '\0';
    return buf;
}

// encoder.json -> bpe->n_vocab, eot_id, s->tok_off/tok_bytes.
static tt_status load_encoder(tt_bpe *bpe, const char *path, const int unicode_byte[324]) {
    json_error_t jerr;
    char q[64];
    FILE *f = tt__fopen_read(path, "encoder file", GPT2_FIX);
    if (!f) return TT_ERR_IO;
    json_t *root = json_loadf(f, 0, &jerr);
    fclose(f);
    if (!root) {
        return tt_set_error(TT_ERR_FORMAT, "%s line %d: not valid JSON: %s (%s)", path,
                            jerr.line, quote(q, jerr.text, sizeof jerr.text), GPT2_FIX);
    }
    size_t n = json_is_object(root) ? json_object_size(root) : 0;
    if (n < 257 || n > INT32_MAX / 2) {
        tt_status st = tt_set_error(TT_ERR_FORMAT, "%s: expected an object of token -> id "
                                    "with at least 257 entries, found %s with %zu (%s)", path,
                                    json_is_object(root) ? "an object" : "another JSON value",
                                    n, GPT2_FIX);
        json_decref(root);
        return st;
    }
    // Pass 1: ids 0 .. n-1 each once; room for each token at its UTF-8 length (an upper bound
    // of its byte length). Pass 2: unmap into that room. Then compact in id order.
    tt_status st = TT_OK;
    uint32_t *off = TT_CALLOC(n + 1, sizeof *off);  // off[id + 1] = UTF-8 length, then sums
    uint32_t *blen = TT_CALLOC(n, sizeof *blen);
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        json_int_t id = json_is_integer(val) ? json_integer_value(val) : -1;
        if (id < 0 || (size_t)id >= n || off[id + 1]) {
            st = tt_set_error(TT_ERR_FORMAT, "%s: token \"%s\" has %s id (ids must be "
                              "0 .. %zu, each once) (%s)", path, quote(q, key, 40),
                              id < 0 || (size_t)id >= n ? "a missing or out-of-range" :
                              "a repeated", n - 1, GPT2_FIX);
            break;
        }
        size_t klen = strlen(key);
        if (klen == 0 || klen > 4096) {
            st = tt_set_error(TT_ERR_FORMAT, "%s: token id %d has an empty or over-long key "
                              "(%s)", path, (int)id, GPT2_FIX);
            break;
        }
        off[id + 1] = (uint32_t)klen;
    }
    tt_bpe_state *s = bpe->s;
    if (st == TT_OK) {
        for (size_t id = 0; id < n; id++) off[id + 1] += off[id];
        s->tok_bytes = TT_MALLOC(off[n] + 1);
        bpe->eot_id = -1;
        json_object_foreach(root, key, val) {
            json_int_t id = json_integer_value(val);
            size_t klen = strlen(key);
            long k;
            if (strcmp(key, BPE_EOT_TEXT) == 0) {
                bpe->eot_id = (int)id;
                memcpy(s->tok_bytes + off[id], key, klen);
                k = (long)klen;
            } else {
                k = gpt2_unmap(unicode_byte, key, klen, s->tok_bytes + off[id]);
            }
            if (k <= 0) {
                st = tt_set_error(TT_ERR_FORMAT, "%s: token \"%s\" (id %d) is not spelled "
                                  "in GPT-2's byte alphabet (%s)", path, quote(q, key, 40),
                                  (int)id, GPT2_FIX);
                break;
            }
            blen[id] = (uint32_t)k;
        }
    }
    if (st == TT_OK) {
        s->tok_off = TT_MALLOC((n + 1) * sizeof *s->tok_off);
        s->tok_off[0] = 0;
        for (size_t id = 0; id < n; id++) {  // tok_off[id] <= off[id]: moves go left
            memmove(s->tok_bytes + s->tok_off[id], s->tok_bytes + off[id], blen[id]);
            s->tok_off[id + 1] = s->tok_off[id] + blen[id];
        }
        bpe->n_vocab = (int)n;
    }
    tt_free(off);
    tt_free(blen);
    json_decref(root);
    return st;
}

// vocab.bpe -> s->merges, checked against the tokens: merge i joins two tokens into id 256 + i.
static tt_status load_merges(tt_bpe *bpe, const char *path, const int unicode_byte[324]) {
    char *data, q[64];
    size_t n;
    tt_status st = bpe_read_file(path, GPT2_FIX, &data, &n);
    if (st != TT_OK) return st;
    tt_bpe_state *s = bpe->s;
    char *line = data, *end = data + n;
    char *nl = memchr(line, '\n', n);
    if (strncmp(line, "#version", 8) != 0 || !nl) {
        tt_free(data);
        return tt_set_error(TT_ERR_FORMAT, "%s line 1: expected \"#version: 0.2\" (%s)", path,
                            GPT2_FIX);
    }
    size_t cap = (size_t)bpe->n_vocab;
    s->merges = TT_MALLOC(2 * cap * sizeof *s->merges);
    unsigned char *buf = TT_MALLOC(n + 1);
    int count = 0, lineno = 1;
    for (line = nl + 1; line < end && st == TT_OK; line = nl + 1) {
        lineno++;
        nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl) nl = end;
        size_t len = (size_t)(nl - line);
        if (len > 0 && line[len - 1] == '\r') len--;
        if (len == 0) {
            if (nl == end || nl + 1 == end) break;  // the final newline
            st = tt_set_error(TT_ERR_FORMAT, "%s line %d: empty line (%s)", path, lineno,
                              GPT2_FIX);
            break;
        }
        char *sp = memchr(line, ' ', len);
        long ka = sp ? gpt2_unmap(unicode_byte, line, (size_t)(sp - line), buf) : -1;
        long kb = ka > 0 ? gpt2_unmap(unicode_byte, sp + 1, len - (size_t)(sp - line) - 1,
                                      buf + ka) : -1;
        if (ka <= 0 || kb <= 0) {
            st = tt_set_error(TT_ERR_FORMAT, "%s line %d: expected two tokens in GPT-2's byte "
                              "alphabet separated by one space, found \"%s\" (%s)", path,
                              lineno, quote(q, line, len), GPT2_FIX);
            break;
        }
        bpe_bytes_slot *a = bpe_bytes_map_get(&s->tokens, buf, (size_t)ka);
        bpe_bytes_slot *b = bpe_bytes_map_get(&s->tokens, buf + ka, (size_t)kb);
        bpe_bytes_slot *ab = bpe_bytes_map_get(&s->tokens, buf, (size_t)(ka + kb));
        if (!a || !b || !ab) {
            st = tt_set_error(TT_ERR_MISMATCH, "%s line %d: merge \"%s\" names a token that "
                              "is not in the encoder.json (the two files do not belong "
                              "together; %s)", path, lineno, quote(q, line, len), GPT2_FIX);
            break;
        }
        if ((size_t)count >= cap - 256 || ab->v0 != 256 + count) {
            st = tt_set_error(TT_ERR_MISMATCH, "%s line %d: merge %d makes token id %d in the "
                              "encoder.json, expected %d (the two files do not belong "
                              "together; %s)", path, lineno, count, ab->v0, 256 + count,
                              GPT2_FIX);
            break;
        }
        s->merges[2 * count] = a->v0;
        s->merges[2 * count + 1] = b->v0;
        count++;
        if (nl == end) break;
    }
    tt_free(buf);
    tt_free(data);
    bpe->n_merges = count;
    return st;
}

tt_status tt_bpe_load_gpt2(tt_bpe *bpe, const char *encoder_json, const char *vocab_bpe) {
    memset(bpe, 0, sizeof *bpe);
    tt_status st = bpe_state_new(bpe);
    if (st != TT_OK) return st;
    int unicode_byte[324];
    tt__bpe_gpt2_alphabet(unicode_byte);
    bpe->tiktoken = true;
    bpe->first_merge = 256;
    st = load_encoder(bpe, encoder_json, unicode_byte);
    if (st == TT_OK) {
        for (int b = 0; b < 256; b++) bpe->byte_id[b] = -1;
        // Tokens map first: the merges are checked against it.
        st = bpe_build_tokens(bpe, encoder_json);
    }
    for (int b = 0; st == TT_OK && b < 256; b++) {
        unsigned char c = (unsigned char)b;
        bpe_bytes_slot *t = bpe_bytes_map_get(&bpe->s->tokens, &c, 1);
        if (!t)
            st = tt_set_error(TT_ERR_MISMATCH, "%s: byte 0x%02x has no token (%s)",
                              encoder_json, b, GPT2_FIX);
        else
            bpe->byte_id[b] = t->v0;
    }
    if (st == TT_OK) st = load_merges(bpe, vocab_bpe, unicode_byte);
    if (st == TT_OK) {
        int want = 256 + bpe->n_merges + (bpe->eot_id >= 0);
        if (bpe->n_vocab != want || (bpe->eot_id >= 0 && bpe->eot_id != want - 1))
            st = tt_set_error(TT_ERR_MISMATCH, "%s has %d tokens but %s has %d merges: "
                              "expected 256 + %d + <|endoftext|> = %d tokens, the last one "
                              "<|endoftext|> (the two files do not belong together; %s)",
                              encoder_json, bpe->n_vocab, vocab_bpe, bpe->n_merges,
                              bpe->n_merges, 256 + bpe->n_merges + 1, GPT2_FIX);
    }
    if (st == TT_OK) st = bpe_build_pairs(bpe, vocab_bpe);
    if (st != TT_OK) tt_bpe_free(bpe);
    return st;
}

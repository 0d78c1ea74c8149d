// GPT-2's byte-level BPE (data/bpe.h): the hash maps, the pre-tokenizer (PCRE2 with Unicode
// properties), encode with a pre-token cache, decode. The loader of OpenAI's files is in
// bpe_gpt2.c; training and the trained vocab file in bpe_train.c.
#include "bpe_internal.h"

#include "../tensor/tensor_ext.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

// ---- pair map ----

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c *= 2;
    return c;
}

void bpe_pair_map_init(bpe_pair_map *m, size_t expected) {
    m->cap = pow2_at_least(2 * expected + 1);
    m->count = 0;
    m->slots = TT_MALLOC(m->cap * sizeof *m->slots);
    memset(m->slots, 0xff, m->cap * sizeof *m->slots);  // key UINT64_MAX: empty
}

void bpe_pair_map_free(bpe_pair_map *m) {
    tt_free(m->slots);
    memset(m, 0, sizeof *m);
}

static size_t pair_hash(uint64_t key) { return (size_t)XXH3_64bits(&key, sizeof key); }

static void pair_map_grow(bpe_pair_map *m) {
    bpe_pair_map bigger;
    bpe_pair_map_init(&bigger, m->cap);
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key != UINT64_MAX)
            *bpe_pair_map_put(&bigger, m->slots[i].key, 0) = m->slots[i].val;
    tt_free(m->slots);
    *m = bigger;
}

int32_t *bpe_pair_map_put(bpe_pair_map *m, uint64_t key, int32_t val_if_new) {
    if (2 * (m->count + 1) > m->cap) pair_map_grow(m);
    size_t mask = m->cap - 1;
    for (size_t i = pair_hash(key) & mask;; i = (i + 1) & mask) {
        bpe_pair_slot *s = &m->slots[i];
        if (s->key == key) return &s->val;
        if (s->key == UINT64_MAX) {
            s->key = key;
            s->val = val_if_new;
            m->count++;
            return &s->val;
        }
    }
}

int32_t bpe_pair_map_get(const bpe_pair_map *m, uint64_t key, int32_t missing) {
    size_t mask = m->cap - 1;
    for (size_t i = pair_hash(key) & mask;; i = (i + 1) & mask) {
        const bpe_pair_slot *s = &m->slots[i];
        if (s->key == key) return s->val;
        if (s->key == UINT64_MAX) return missing;
    }
}

// ---- bytes map ----

void bpe_bytes_map_init(bpe_bytes_map *m, size_t expected) {
    memset(m, 0, sizeof *m);
    m->cap = pow2_at_least(2 * expected + 1);
    m->slots = TT_CALLOC(m->cap, sizeof *m->slots);
}

void bpe_bytes_map_free(bpe_bytes_map *m) {
    tt_free(m->slots);
    tt_free(m->pool);
    memset(m, 0, sizeof *m);
}

void bpe_bytes_map_clear(bpe_bytes_map *m) {
    memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->count = 0;
    m->pool_len = 0;
}

static bpe_bytes_slot *bytes_find(const bpe_bytes_map *m, uint64_t h, const void *key,
                                  size_t len) {
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        bpe_bytes_slot *s = &m->slots[i];
        if (s->len == 0) return s;
        if (s->hash == h && s->len == len && memcmp(m->pool + s->off, key, len) == 0) return s;
    }
}

bpe_bytes_slot *bpe_bytes_map_get(const bpe_bytes_map *m, const void *key, size_t len) {
    bpe_bytes_slot *s = bytes_find(m, XXH3_64bits(key, len), key, len);
    return s->len ? s : NULL;
}

static void bytes_map_grow(bpe_bytes_map *m) {
    size_t cap = m->cap * 2;
    bpe_bytes_slot *slots = TT_CALLOC(cap, sizeof *slots);
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slots[i].len == 0) continue;
        size_t j = (size_t)m->slots[i].hash & (cap - 1);
        while (slots[j].len) j = (j + 1) & (cap - 1);
        slots[j] = m->slots[i];
    }
    tt_free(m->slots);
    m->slots = slots;
    m->cap = cap;
}

bpe_bytes_slot *bpe_bytes_map_put(bpe_bytes_map *m, const void *key, size_t len,
                                  bool *inserted) {
    TT_CHECK(len >= 1 && len < UINT32_MAX, "internal: key length %zu", len);
    if (2 * (m->count + 1) > m->cap) bytes_map_grow(m);
    uint64_t h = XXH3_64bits(key, len);
    bpe_bytes_slot *s = bytes_find(m, h, key, len);
    *inserted = s->len == 0;
    if (!*inserted) return s;
    TT_CHECK(m->pool_len + len <= UINT32_MAX, "more than 4 GiB of distinct pre-tokens (split "
             "the text)");
    if (m->pool_len + len > m->pool_cap) {
        m->pool_cap = 2 * (m->pool_len + len) + 4096;
        m->pool = TT_REALLOC(m->pool, m->pool_cap);
    }
    memcpy(m->pool + m->pool_len, key, len);
    *s = (bpe_bytes_slot){.hash = h, .off = (uint32_t)m->pool_len, .len = (uint32_t)len,
                          .v0 = -1, .v1 = -1};
    m->pool_len += len;
    m->count++;
    return s;
}

// ---- pre-tokenizer ----

// GPT-2's pattern (tiktoken's r50k_base/gpt2). \p{L}, \p{N} and \s take Unicode properties
// (PCRE2_UCP); PCRE2_MATCH_INVALID_UTF lets any byte string through (invalid sequences match
// nothing and become pre-tokens of their own in bpe_next_piece).
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

tt_status bpe_state_new(tt_bpe *bpe) {
    tt_bpe_state *s = TT_CALLOC(1, sizeof *s);
    int err;
    PCRE2_SIZE erroff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err,
                                   &erroff, NULL);
    if (!re) {
        tt_free(s);
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return tt_set_error(TT_ERR_ARG, "bpe: PCRE2 rejects the GPT-2 pattern at offset %zu: "
                            "%s (PCRE2 10.34 or newer with Unicode support is needed)",
                            (size_t)erroff, (const char *)msg);
    }
    // JIT when the platform has it (several times faster); the interpreter otherwise. The
    // pattern needs no backtracking stack to speak of: a 5 MB run of spaces, letters or digits
    // matches with the default JIT stack.
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    s->re = re;
    s->match = pcre2_match_data_create_from_pattern(re, NULL);
    bpe->s = s;
    return TT_OK;
}

bool bpe_next_piece(tt_bpe_state *s, const unsigned char *text, size_t n, size_t *pos,
                    size_t *start, size_t *end) {
    if (*pos >= n) return false;
    pcre2_match_data *md = s->match;
    int rc = pcre2_match(s->re, text, n, *pos, 0, md, NULL);
    size_t ms = n, me = n;
    if (rc > 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        ms = ov[0];
        me = ov[1];
    }
    // rc < 0: no match (only invalid bytes are left) or a resource limit; either way the
    // rest is one pre-token, so every byte is still encoded.
    if (ms > *pos) me = ms;  // invalid UTF-8 before the match: a pre-token of its own
    *start = *pos;
    *end = me;
    *pos = me;
    return true;
}

// ---- tokens and merges ----

tt_status bpe_build_tokens(tt_bpe *bpe, const char *what) {
    tt_bpe_state *s = bpe->s;
    bpe_bytes_map_init(&s->tokens, (size_t)bpe->n_vocab);
    for (int id = 0; id < bpe->n_vocab; id++) {
        if (id == bpe->eot_id) continue;
        size_t len = s->tok_off[id + 1] - s->tok_off[id];
        bool fresh;
        bpe_bytes_slot *slot = bpe_bytes_map_put(&s->tokens, s->tok_bytes + s->tok_off[id],
                                                 len, &fresh);
        if (!fresh && !bpe->tiktoken) continue;  // minbpe may make equal bytes twice: keep one
        if (!fresh)
            return tt_set_error(TT_ERR_FORMAT, "%s: tokens %d and %d have the same bytes; the "
                                "file is corrupt (run make data)", what,
                                slot->v0, id);
        slot->v0 = id;
    }
    return TT_OK;
}

tt_status bpe_build_pairs(tt_bpe *bpe, const char *what) {
    tt_bpe_state *s = bpe->s;
    if (!bpe->tiktoken) {
        bpe_pair_map_init(&s->pairs, (size_t)bpe->n_merges);
        for (int i = 0; i < bpe->n_merges; i++) {
            int32_t *v = bpe_pair_map_put(&s->pairs,
                                          bpe_pair_key(s->merges[2 * i], s->merges[2 * i + 1]),
                                          -1);
            if (*v >= 0)
                return tt_set_error(TT_ERR_FORMAT, "%s: merge %d (%d %d) repeats merge %d",
                                    what, i, s->merges[2 * i], s->merges[2 * i + 1],
                                    *v - bpe->first_merge);
            *v = bpe->first_merge + i;
        }
        return TT_OK;
    }
    // tiktoken: two adjacent parts merge when their joined bytes are a token, whichever merge
    // made it; so every split of a token into two tokens is a pair (GPT-2: 108,299 pairs for
    // 50,000 merges). Ids are ranks: the merged token's id decides the order.
    bpe_pair_map_init(&s->pairs, 2 * (size_t)bpe->n_merges);
    for (int id = 0; id < bpe->n_vocab; id++) {
        if (id == bpe->eot_id) continue;
        const unsigned char *t = s->tok_bytes + s->tok_off[id];
        size_t len = s->tok_off[id + 1] - s->tok_off[id];
        for (size_t k = 1; k < len; k++) {
            bpe_bytes_slot *a = bpe_bytes_map_get(&s->tokens, t, k);
            bpe_bytes_slot *b = a ? bpe_bytes_map_get(&s->tokens, t + k, len - k) : NULL;
            if (b) *bpe_pair_map_put(&s->pairs, bpe_pair_key(a->v0, b->v0), id) = id;
        }
    }
    return TT_OK;
}

void tt_bpe_free(tt_bpe *bpe) {
    tt_bpe_state *s = bpe->s;
    if (s) {
        tt_free(s->tok_off);
        tt_free(s->tok_bytes);
        tt_free(s->merges);
        bpe_pair_map_free(&s->pairs);
        bpe_bytes_map_free(&s->tokens);
        bpe_bytes_map_free(&s->cache);
        tt_free(s->cache_ids);
        pcre2_match_data_free(s->match);
        pcre2_code_free(s->re);
        tt_free(s);
    }
    memset(bpe, 0, sizeof *bpe);
}

const unsigned char *tt_bpe_token(const tt_bpe *bpe, int32_t id, size_t *len) {
    TT_CHECK(bpe->s, "the tokenizer is not loaded (call tt_bpe_load_gpt2, tt_bpe_load or "
             "tt_bpe_train first)");
    TT_CHECK(id >= 0 && id < bpe->n_vocab, "token id %d is out of range [0, %d)", (int)id,
             bpe->n_vocab);
    *len = bpe->s->tok_off[id + 1] - bpe->s->tok_off[id];
    return bpe->s->tok_bytes + bpe->s->tok_off[id];
}

void tt_bpe_merge(const tt_bpe *bpe, int i, int32_t *a, int32_t *b) {
    TT_CHECK(bpe->s, "the tokenizer is not loaded (call tt_bpe_load_gpt2, tt_bpe_load or "
             "tt_bpe_train first)");
    TT_CHECK(i >= 0 && i < bpe->n_merges, "merge %d is out of range [0, %d)", i,
             bpe->n_merges);
    *a = bpe->s->merges[2 * i];
    *b = bpe->s->merges[2 * i + 1];
}

// ---- encode ----

typedef struct ivec {
    int32_t *v;
    size_t n, cap;
} ivec;

static void ivec_reserve(ivec *a, size_t extra) {
    if (a->n + extra <= a->cap) return;
    a->cap = 2 * (a->n + extra) + 64;
    a->v = TT_REALLOC(a->v, a->cap * sizeof *a->v);
}

// Pre-tokens longer than this take the heap (merge_piece_long).
enum { LONG_PIECE = 64 };

// Merges one pre-token's bytes p[0 .. len) (len >= 2) into ids appended to out: the adjacent
// pair with the lowest merged id first, the leftmost on ties (tiktoken's _byte_pair_merge).
// parts[i] are the current ids, rank[i] the merged id of (parts[i], parts[i + 1]) or INT_MAX.
// Quadratic in the number of parts, as tiktoken's: for short pre-tokens (the common case).
static void merge_piece(const tt_bpe *bpe, const unsigned char *p, size_t len, ivec *out) {
    const bpe_pair_map *pairs = &bpe->s->pairs;
    int32_t stack_buf[2 * LONG_PIECE];
    int32_t *parts = len <= LONG_PIECE ? stack_buf : TT_MALLOC(2 * len * sizeof *parts);
    int32_t *rank = parts + len;
    for (size_t i = 0; i < len; i++) parts[i] = bpe->byte_id[p[i]];
    for (size_t i = 0; i + 1 < len; i++)
        rank[i] = bpe_pair_map_get(pairs, bpe_pair_key(parts[i], parts[i + 1]), INT_MAX);
    size_t n = len;
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (rank[i] < rank[best]) best = i;
        if (rank[best] == INT_MAX) break;
        parts[best] = rank[best];
        memmove(parts + best + 1, parts + best + 2, (n - best - 2) * sizeof *parts);
        memmove(rank + best, rank + best + 1, (n - best - 2) * sizeof *rank);
        n--;
        if (best + 1 < n)
            rank[best] = bpe_pair_map_get(pairs, bpe_pair_key(parts[best], parts[best + 1]),
                                          INT_MAX);
        if (best > 0)
            rank[best - 1] = bpe_pair_map_get(pairs,
                                              bpe_pair_key(parts[best - 1], parts[best]),
                                              INT_MAX);
    }
    ivec_reserve(out, n);
    memcpy(out->v + out->n, parts, n * sizeof *parts);
    out->n += n;
    if (parts != stack_buf) tt_free(parts);
}

// The same merges for long pre-tokens (a run of 100,000 letters is one pre-token) in
// O(n log n): the parts form a linked list, candidate pairs wait in a binary heap ordered by
// (merged id, position of the left part), and an entry whose parts changed since it was pushed
// is skipped when it surfaces. Positions keep the list's order, so ties still go leftmost.
typedef struct heap_entry {
    int32_t rank, pos, a, b;
} heap_entry;

static bool heap_less(const heap_entry *x, const heap_entry *y) {
    return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static void heap_push(heap_entry *h, size_t *n, heap_entry e) {
    size_t i = (*n)++;
    while (i > 0 && heap_less(&e, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = e;
}

static heap_entry heap_pop(heap_entry *h, size_t *n) {
    heap_entry top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && heap_less(&h[c + 1], &h[c])) c++;
        if (!heap_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

static void merge_piece_long(const tt_bpe *bpe, const unsigned char *p, size_t len,
                             ivec *out) {
    const bpe_pair_map *pairs = &bpe->s->pairs;
    int32_t *id = TT_MALLOC(len * sizeof *id);      // (len) current id of the part at i
    int32_t *next = TT_MALLOC(len * sizeof *next);  // (len) next live part, -1 at the end
    int32_t *prev = TT_MALLOC(len * sizeof *prev);  // (len) previous live part, -1 at start
    // Each merge pushes at most 2 entries: len - 1 + 2 (len - 1) in all.
    heap_entry *heap = TT_MALLOC(3 * len * sizeof *heap);
    size_t nh = 0;
    for (size_t i = 0; i < len; i++) {
        id[i] = bpe->byte_id[p[i]];
        next[i] = i + 1 < len ? (int32_t)(i + 1) : -1;
        prev[i] = (int32_t)i - 1;
    }
    for (size_t i = 0; i + 1 < len; i++) {
        int32_t r = bpe_pair_map_get(pairs, bpe_pair_key(id[i], id[i + 1]), -1);
        if (r >= 0) heap_push(heap, &nh, (heap_entry){r, (int32_t)i, id[i], id[i + 1]});
    }
    while (nh > 0) {
        heap_entry e = heap_pop(heap, &nh);
        int32_t i = e.pos, j = next[i];
        if (id[i] != e.a || j < 0 || id[j] != e.b || prev[i] == -2) continue;  // stale
        id[i] = e.rank;
        next[i] = next[j];
        if (next[j] >= 0) prev[next[j]] = i;
        prev[j] = -2;  // dead
        int32_t l = prev[i], r = next[i];
        if (l >= 0) {
            int32_t k = bpe_pair_map_get(pairs, bpe_pair_key(id[l], id[i]), -1);
            if (k >= 0) heap_push(heap, &nh, (heap_entry){k, l, id[l], id[i]});
        }
        if (r >= 0) {
            int32_t k = bpe_pair_map_get(pairs, bpe_pair_key(id[i], id[r]), -1);
            if (k >= 0) heap_push(heap, &nh, (heap_entry){k, i, id[i], id[r]});
        }
    }
    ivec_reserve(out, len);
    for (int32_t i = 0; i >= 0; i = next[i]) out->v[out->n++] = id[i];
    tt_free(id);
    tt_free(next);
    tt_free(prev);
    tt_free(heap);
}

enum { CACHE_MAX_ENTRIES = 1 << 17, CACHE_MAX_PIECE = 256 };

static void encode_piece(tt_bpe *bpe, const unsigned char *p, size_t len, ivec *out) {
    tt_bpe_state *s = bpe->s;
    if (len == 1) {
        ivec_reserve(out, 1);
        out->v[out->n++] = bpe->byte_id[p[0]];
        return;
    }
    if (bpe->tiktoken) {  // a pre-token that is a token is that token (tiktoken's shortcut)
        bpe_bytes_slot *t = bpe_bytes_map_get(&s->tokens, p, len);
        if (t) {
            ivec_reserve(out, 1);
            out->v[out->n++] = t->v0;
            return;
        }
    }
    if (len > CACHE_MAX_PIECE) {
        merge_piece_long(bpe, p, len, out);
        return;
    }
    bpe_bytes_slot *c = bpe_bytes_map_get(&s->cache, p, len);
    if (c) {
        ivec_reserve(out, (size_t)c->v1);
        memcpy(out->v + out->n, s->cache_ids + c->v0, (size_t)c->v1 * sizeof *out->v);
        out->n += (size_t)c->v1;
        return;
    }
    size_t first = out->n;
    if (len > LONG_PIECE) merge_piece_long(bpe, p, len, out);
    else merge_piece(bpe, p, len, out);
    size_t k = out->n - first;
    if (s->cache.count >= CACHE_MAX_ENTRIES) {  // bounded: start over rather than grow
        bpe_bytes_map_clear(&s->cache);
        s->cache_len = 0;
    }
    if (s->cache_len + k > s->cache_cap) {
        s->cache_cap = 2 * (s->cache_len + k) + 4096;
        s->cache_ids = TT_REALLOC(s->cache_ids, s->cache_cap * sizeof *s->cache_ids);
    }
    bool fresh;
    c = bpe_bytes_map_put(&s->cache, p, len, &fresh);
    c->v0 = (int32_t)s->cache_len;
    c->v1 = (int32_t)k;
    memcpy(s->cache_ids + s->cache_len, out->v + first, k * sizeof *out->v);
    s->cache_len += k;
}

static void encode_ordinary(tt_bpe *bpe, const unsigned char *text, size_t n, ivec *out) {
    size_t pos = 0, start, end;
    while (bpe_next_piece(bpe->s, text, n, &pos, &start, &end))
        encode_piece(bpe, text + start, end - start, out);
}

const char BPE_EOT_TEXT[] = "<|endoftext|>";

// The first "<|endoftext|>" in text[0 .. n), or NULL.
static const unsigned char *find_eot(const unsigned char *text, size_t n) {
    size_t k = sizeof BPE_EOT_TEXT - 1;
    for (const unsigned char *p = text; n >= k;) {
        const unsigned char *q = memchr(p, '<', n - k + 1);
        if (!q) return NULL;
        if (memcmp(q, BPE_EOT_TEXT, k) == 0) return q;
        n -= (size_t)(q + 1 - p);
        p = q + 1;
    }
    return NULL;
}

int32_t *tt_bpe_encode(tt_bpe *bpe, const char *text, size_t n, tt_bpe_mode mode,
                       size_t *n_out) {
    TT_CHECK(bpe->s, "the tokenizer is not loaded (call tt_bpe_load_gpt2, tt_bpe_load or "
             "tt_bpe_train first)");
    TT_CHECK(text || n == 0, "text is NULL with n = %zu", n);
    if (!bpe->s->cache.slots) bpe_bytes_map_init(&bpe->s->cache, 4096);
    ivec out = {0};
    const unsigned char *p = (const unsigned char *)text;
    if (mode == TT_BPE_ALLOW_SPECIAL && bpe->eot_id >= 0) {
        const unsigned char *q;
        while ((q = find_eot(p, n)) != NULL) {
            encode_ordinary(bpe, p, (size_t)(q - p), &out);
            ivec_reserve(&out, 1);
            out.v[out.n++] = bpe->eot_id;
            n -= (size_t)(q - p) + sizeof BPE_EOT_TEXT - 1;
            p = q + sizeof BPE_EOT_TEXT - 1;
        }
    }
    encode_ordinary(bpe, p, n, &out);
    *n_out = out.n;
    if (out.n == 0) {
        tt_free(out.v);
        return NULL;
    }
    return out.v;
}

// ---- decode ----

char *tt_bpe_decode(const tt_bpe *bpe, const int32_t *ids, size_t n, size_t *n_out) {
    TT_CHECK(bpe->s, "the tokenizer is not loaded (call tt_bpe_load_gpt2, tt_bpe_load or "
             "tt_bpe_train first)");
    const uint32_t *off = bpe->s->tok_off;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        TT_CHECK(ids[i] >= 0 && ids[i] < bpe->n_vocab, "token id %d at position %zu is out "
                 "of range [0, %d)", (int)ids[i], i, bpe->n_vocab);
        total += off[ids[i] + 1] - off[ids[i]];
    }
    char *out = TT_MALLOC(total + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = off[ids[i] + 1] - off[ids[i]];
        memcpy(out + k, bpe->s->tok_bytes + off[ids[i]], len);
        k += len;
    }
    out[k] = '\0';
    *n_out = k;
    return out;
}

// ---- GPT-2's files ----

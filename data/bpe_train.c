// BPE training (data/bpe.h), minbpe's RegexTokenizer made incremental: the text is split by
// GPT-2's pre-tokenizer and counted per unique pre-token; pair counts are updated only in the
// pre-tokens that hold the merged pair. Also the trained vocab's text file (save/load).
#include "bpe_internal.h"

#include "../tensor/tensor_ext.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ---- the trained tokenizer's tables ----

// The bytes of all tokens together, at most. Each merge can double a token's length, so a
// 30-line file could otherwise ask for gigabytes; real vocabs are far below (GPT-2: 0.3 MiB).
enum { TOKEN_BYTES_MAX = 64 << 20 };

// Byte tokens 0..255 (id = byte) and merge i -> id 256 + i, from s->merges; then the maps.
// Errors have status bad (TT_ERR_ARG from training, TT_ERR_FORMAT from a file) and name what.
static tt_status trained_tables(tt_bpe *bpe, const char *what, tt_status bad) {
    tt_bpe_state *s = bpe->s;
    int n = 256 + bpe->n_merges;
    bpe->n_vocab = n;
    bpe->first_merge = 256;
    bpe->eot_id = -1;
    bpe->tiktoken = false;
    for (int b = 0; b < 256; b++) bpe->byte_id[b] = b;
    s->tok_off = TT_MALLOC(((size_t)n + 1) * sizeof *s->tok_off);
    s->tok_off[0] = 0;
    uint64_t total = 0;
    for (int id = 0; id < n; id++) {
        uint64_t len = 1;
        if (id >= 256) {
            int32_t a = s->merges[2 * (id - 256)], b = s->merges[2 * (id - 256) + 1];
            len = (uint64_t)(s->tok_off[a + 1] - s->tok_off[a]) +
                  (s->tok_off[b + 1] - s->tok_off[b]);
        }
        total += len;
        if (total > TOKEN_BYTES_MAX)
            return tt_set_error(bad, "%s: merge %d makes the tokens longer than %d "
                                "MiB in all (GPT-2's are 0.3 MiB); a corrupt file, or merges "
                                "of one long repeated run (train with fewer merges)", what,
                                id - 256, TOKEN_BYTES_MAX >> 20);
        s->tok_off[id + 1] = (uint32_t)total;
    }
    s->tok_bytes = TT_MALLOC(total + 1);
    for (int id = 0; id < n; id++) {
        unsigned char *dst = s->tok_bytes + s->tok_off[id];
        if (id < 256) {
            dst[0] = (unsigned char)id;
            continue;
        }
        int32_t a = s->merges[2 * (id - 256)], b = s->merges[2 * (id - 256) + 1];
        size_t la = s->tok_off[a + 1] - s->tok_off[a], lb = s->tok_off[b + 1] - s->tok_off[b];
        memcpy(dst, s->tok_bytes + s->tok_off[a], la);
        memcpy(dst + la, s->tok_bytes + s->tok_off[b], lb);
    }
    tt_status st = bpe_build_tokens(bpe, what);
    if (st == TT_OK) st = bpe_build_pairs(bpe, what);
    return st;
}

// ---- training ----

typedef struct pair_stat {
    int64_t count;    // sum of the frequencies of the pre-tokens holding it, times occurrences
    int32_t a, b;
    int32_t *chunks;  // pre-tokens that held it at some point (some may no longer)
    uint32_t n, cap;
} pair_stat;

typedef struct trainer {
    int32_t *ids;       // every unique pre-token's ids, chunk c at ids[start[c] ..)
    size_t *start;      // (C)
    uint32_t *len;      // (C) current length
    int64_t *freq;      // (C) times the pre-token occurs in the text
    size_t C;
    bpe_pair_map index; // (a, b) -> index into stats
    pair_stat *stats;
    size_t n_stats, cap_stats;
} trainer;

static pair_stat *stat_of(trainer *t, int32_t a, int32_t b) {
    int32_t *i = bpe_pair_map_put(&t->index, bpe_pair_key(a, b), (int32_t)t->n_stats);
    if ((size_t)*i == t->n_stats) {
        if (t->n_stats == t->cap_stats) {
            t->cap_stats = 2 * t->cap_stats + 1024;
            t->stats = TT_REALLOC(t->stats, t->cap_stats * sizeof *t->stats);
        }
        t->stats[t->n_stats++] = (pair_stat){.a = a, .b = b};
    }
    return &t->stats[*i];
}

static void note_chunk(pair_stat *p, int32_t c) {
    if (p->n && p->chunks[p->n - 1] == c) return;
    if (p->n == p->cap) {
        p->cap = 2 * p->cap + 4;
        p->chunks = TT_REALLOC(p->chunks, p->cap * sizeof *p->chunks);
    }
    p->chunks[p->n++] = c;
}

// Adds sign * freq for every adjacent pair of chunk c; with note_id >= 0, records c in the
// chunk lists of the pairs holding note_id (the pairs a merge creates).
static void count_chunk(trainer *t, int32_t c, int64_t sign, int32_t note_id) {
    const int32_t *x = t->ids + t->start[c];
    for (uint32_t i = 0; i + 1 < t->len[c]; i++) {
        pair_stat *p = stat_of(t, x[i], x[i + 1]);
        p->count += sign * t->freq[c];
        if (note_id >= 0 && (x[i] == note_id || x[i + 1] == note_id)) note_chunk(p, c);
    }
}

// Replaces each (a, b) of chunk c by id, left to right; false when c holds no (a, b).
static bool merge_chunk(trainer *t, int32_t c, int32_t a, int32_t b, int32_t id) {
    int32_t *x = t->ids + t->start[c];
    uint32_t n = t->len[c], w = 0;
    bool found = false;
    for (uint32_t i = 0; i + 1 < n && !found; i++) found = x[i] == a && x[i + 1] == b;
    if (!found) return false;
    for (uint32_t i = 0; i < n;) {
        if (i + 1 < n && x[i] == a && x[i + 1] == b) {
            x[w++] = id;
            i += 2;
        } else {
            x[w++] = x[i++];
        }
    }
    t->len[c] = w;
    return true;
}

static void trainer_free(trainer *t) {
    for (size_t i = 0; i < t->n_stats; i++) tt_free(t->stats[i].chunks);
    tt_free(t->stats);
    bpe_pair_map_free(&t->index);
    tt_free(t->ids);
    tt_free(t->start);
    tt_free(t->len);
    tt_free(t->freq);
}

tt_status tt_bpe_train(tt_bpe *bpe, const char *text, size_t n, int n_merges) {
    memset(bpe, 0, sizeof *bpe);
    TT_CHECK(text || n == 0, "text is NULL with n = %zu", n);
    if (n_merges < 1 || n_merges > (1 << 22))
        return tt_set_error(TT_ERR_ARG, "bpe train: %d merges is out of range [1, 4194304]",
                            n_merges);
    tt_status st = bpe_state_new(bpe);
    if (st != TT_OK) return st;

    // Unique pre-tokens and their counts.
    trainer t = {0};
    bpe_bytes_map uniq;
    bpe_bytes_map_init(&uniq, 1 << 12);
    const unsigned char *u = (const unsigned char *)text;
    size_t pos = 0, a, b;
    int64_t *freq = NULL;
    size_t cap = 0;
    while (bpe_next_piece(bpe->s, u, n, &pos, &a, &b)) {
        bool fresh;
        bpe_bytes_slot *slot = bpe_bytes_map_put(&uniq, u + a, b - a, &fresh);
        if (fresh) {
            if (t.C == cap) {
                cap = 2 * cap + 1024;
                freq = TT_REALLOC(freq, cap * sizeof *freq);
            }
            slot->v0 = (int32_t)t.C;
            freq[t.C++] = 0;
        }
        freq[slot->v0]++;
    }
    t.freq = freq;
    t.start = TT_MALLOC((t.C + 1) * sizeof *t.start);
    t.len = TT_MALLOC((t.C + 1) * sizeof *t.len);
    t.ids = TT_MALLOC((uniq.pool_len + 1) * sizeof *t.ids);
    for (size_t i = 0; i < uniq.cap; i++) {
        const bpe_bytes_slot *slot = &uniq.slots[i];
        if (slot->len == 0) continue;
        size_t c = (size_t)slot->v0;  // pool order is first-seen order: ids follow it too
        t.start[c] = slot->off;
        t.len[c] = slot->len;
        for (uint32_t k = 0; k < slot->len; k++) t.ids[slot->off + k] = uniq.pool[slot->off + k];
    }
    bpe_bytes_map_free(&uniq);

    bpe_pair_map_init(&t.index, 1 << 14);
    for (size_t c = 0; c < t.C; c++) {
        const int32_t *x = t.ids + t.start[c];
        for (uint32_t i = 0; i + 1 < t.len[c]; i++) {
            pair_stat *p = stat_of(&t, x[i], x[i + 1]);
            p->count += t.freq[c];
            note_chunk(p, (int32_t)c);
        }
    }

    bpe->s->merges = TT_MALLOC(2 * (size_t)n_merges * sizeof *bpe->s->merges);
    int done = 0;
    for (; done < n_merges; done++) {
        // The most frequent pair; ties: smallest a, then smallest b. A plain scan: a few
        // hundred thousand pairs at most, cheap beside the merge itself.
        pair_stat *best = NULL;
        for (size_t i = 0; i < t.n_stats; i++) {
            pair_stat *p = &t.stats[i];
            if (p->count <= 0) continue;
            if (!best || p->count > best->count ||
                (p->count == best->count && (p->a < best->a ||
                                             (p->a == best->a && p->b < best->b))))
                best = p;
        }
        if (!best) break;
        int32_t pa = best->a, pb = best->b, id = 256 + done;
        bpe->s->merges[2 * done] = pa;
        bpe->s->merges[2 * done + 1] = pb;
        size_t bi = (size_t)(best - t.stats);
        // Take the chunk list: count_chunk may grow t.stats and move it.
        int32_t *chunks = t.stats[bi].chunks;
        uint32_t nc = t.stats[bi].n;
        t.stats[bi].chunks = NULL;
        t.stats[bi].n = t.stats[bi].cap = 0;
        for (uint32_t k = 0; k < nc; k++) {
            int32_t c = chunks[k];
            if (t.len[c] < 2) continue;
            const int32_t *x = t.ids + t.start[c];
            bool holds = false;
            for (uint32_t i = 0; i + 1 < t.len[c] && !holds; i++)
                holds = x[i] == pa && x[i + 1] == pb;
            if (!holds) continue;  // an old entry: the pair left this chunk in a past merge
            count_chunk(&t, c, -1, -1);
            merge_chunk(&t, c, pa, pb, id);
            count_chunk(&t, c, +1, id);
        }
        tt_free(chunks);
    }
    trainer_free(&t);
    if (done < n_merges) {
        tt_bpe_free(bpe);
        return tt_set_error(TT_ERR_ARG, "bpe train: the text allows only %d merges, %d were "
                            "asked (use a longer text or fewer merges)", done, n_merges);
    }
    bpe->n_merges = n_merges;
    st = trained_tables(bpe, "bpe train", TT_ERR_ARG);
    if (st != TT_OK) tt_bpe_free(bpe);
    return st;
}

// ---- the vocab file ----

static const char VOCAB_MAGIC[] = "tinytorch-bpe";
enum { VOCAB_VERSION = 1 };
static const char VOCAB_FIX[] = "train it again with tt_bpe_train and save it";

// The vocab file's text, for tt__write_atomic: the magic and version, the count, a line a merge.
static bool write_vocab(int fd, void *ctx) {
    const tt_bpe *bpe = ctx;
    char line[64];
    int n = snprintf(line, sizeof line, "%s %d\nmerges %d\n", VOCAB_MAGIC, VOCAB_VERSION,
                     bpe->n_merges);
    bool ok = tt__write_all(fd, line, (size_t)n);
    for (int i = 0; ok && i < bpe->n_merges; i++) {
        n = snprintf(line, sizeof line, "%d %d\n", bpe->s->merges[2 * i],
                     bpe->s->merges[2 * i + 1]);
        ok = tt__write_all(fd, line, (size_t)n);
    }
    return ok;
}

tt_status tt_bpe_save(const tt_bpe *bpe, const char *path) {
    TT_CHECK(bpe->s, "the tokenizer is not loaded (call tt_bpe_load or tt_bpe_train first)");
    if (bpe->tiktoken)
        return tt_set_error(TT_ERR_ARG, "tt_bpe_save: GPT-2's tokenizer is saved as its own "
                            "encoder.json and vocab.bpe; only a trained vocab is written here");
    return tt__write_atomic(path, "BPE vocabulary", write_vocab, (void *)bpe);
}

// Parses a non-negative decimal int at *p (at most max); advances *p past it.
static bool parse_int(const char **p, long max, long *out) {
    const char *q = *p;
    long v = 0;
    if (*q < '0' || *q > '9') return false;
    for (; *q >= '0' && *q <= '9'; q++) {
        v = v * 10 + (*q - '0');
        if (v > max) return false;
    }
    *out = v;
    *p = q;
    return true;
}

// Rewrites each CR LF of s[0 .. n) as LF in place (a text file that went through Windows or git's
// autocrlf is the same vocab); returns the new length and keeps the NUL after it.
static size_t crlf_to_lf(char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')) s[k++] = s[i];
    s[k] = '\0';
    return k;
}

tt_status tt_bpe_load(tt_bpe *bpe, const char *path) {
    memset(bpe, 0, sizeof *bpe);
    char *data;
    size_t n;
    tt_status st = bpe_read_file(path, VOCAB_FIX, &data, &n);
    if (st != TT_OK) return st;
    st = tt_bpe_load_bytes(bpe, data, n, path);
    tt_free(data);
    return st;
}

tt_status tt_bpe_load_bytes(tt_bpe *bpe, const char *bytes, size_t n, const char *path) {
    memset(bpe, 0, sizeof *bpe);
    char *data = TT_MALLOC(n + 1);  // parsed in place: CR LF to LF, a NUL after the end
    memcpy(data, bytes, n);
    data[n] = '\0';
    tt_status st = TT_OK;
    n = crlf_to_lf(data, n);
    if (strlen(data) != n) {
        tt_free(data);
        return tt_set_error(TT_ERR_FORMAT, "%s: holds a NUL byte; not a tinytorch-bpe vocab "
                            "file (%s)", path, VOCAB_FIX);
    }
    const char *p = data;
    long version = 0, count = 0;
    size_t mlen = sizeof VOCAB_MAGIC - 1;
    if (strncmp(p, VOCAB_MAGIC, mlen) != 0 || p[mlen] != ' ') {
        tt_free(data);
        return tt_set_error(TT_ERR_FORMAT, "%s line 1: expected \"%s %d\"; not a tinytorch-bpe "
                            "vocab file (%s)", path, VOCAB_MAGIC, VOCAB_VERSION, VOCAB_FIX);
    }
    p += mlen + 1;
    if (!parse_int(&p, 1000000, &version) || *p != '\n' || version != VOCAB_VERSION) {
        tt_free(data);
        return tt_set_error(TT_ERR_FORMAT, "%s line 1: version is not %d (this build reads "
                            "version %d only; %s)", path, VOCAB_VERSION, VOCAB_VERSION,
                            VOCAB_FIX);
    }
    p++;
    if (strncmp(p, "merges ", 7) != 0 || (p += 7, !parse_int(&p, 1 << 22, &count)) ||
        *p != '\n') {
        tt_free(data);
        return tt_set_error(TT_ERR_FORMAT, "%s line 2: expected \"merges N\" with N in "
                            "[0, 4194304] (%s)", path, VOCAB_FIX);
    }
    p++;
    st = bpe_state_new(bpe);
    if (st != TT_OK) {
        tt_free(data);
        return st;
    }
    bpe->s->merges = TT_MALLOC((2 * (size_t)count + 1) * sizeof *bpe->s->merges);
    for (long i = 0; i < count; i++) {
        long a, b, max = 255 + i;
        if (!parse_int(&p, max, &a) || *p != ' ' || (p++, !parse_int(&p, max, &b)) ||
            *p != '\n') {
            st = tt_set_error(TT_ERR_FORMAT, "%s line %ld: expected merge %ld as two ids "
                              "\"a b\" below %ld (%s)", path, i + 3, i, 256 + i, VOCAB_FIX);
            break;
        }
        p++;
        bpe->s->merges[2 * i] = (int32_t)a;
        bpe->s->merges[2 * i + 1] = (int32_t)b;
    }
    if (st == TT_OK && *p != '\0')
        st = tt_set_error(TT_ERR_FORMAT, "%s line %ld: text after the %ld merges the header "
                          "announces (%s)", path, count + 3, count, VOCAB_FIX);
    tt_free(data);
    if (st == TT_OK) {
        bpe->n_merges = (int)count;
        st = trained_tables(bpe, path, TT_ERR_FORMAT);
    }
    if (st != TT_OK) tt_bpe_free(bpe);
    return st;
}

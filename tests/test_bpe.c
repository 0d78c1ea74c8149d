// Check suite of data/bpe.c and data/bpe_train.c: GPT-2's encoding against js-tiktoken's
// (tests/reference/bpe_gpt2.txt, made by gen_bpe_reference.mjs), byte-exact round trips of
// random bytes (invalid UTF-8 included), the Tiny Shakespeare split counts, BPE training
// against a brute-force trainer, the vocab file round trip, every load error, and loads of
// randomly corrupted files (a status or a working tokenizer, never a crash).
// Needs `make data` (data/gpt2/, data/tinyshakespeare.txt); the Makefile builds it first.
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/bpe.h"
#include "test_util.h"

static const char ENCODER[] = "data/gpt2/encoder.json";
static const char VOCAB[] = "data/gpt2/vocab.bpe";
static const char CORPUS[] = "data/tinyshakespeare.txt";
static const char REFERENCE[] = "tests/reference/bpe_gpt2.txt";

static void load_gpt2(tt_bpe *bpe) {
    tt_status st = tt_bpe_load_gpt2(bpe, ENCODER, VOCAB);
    ck_assert_msg(st == TT_OK, "%s (run make data from the repo root)", tt_last_error());
}

// A whole file (tt_free it), NUL-terminated.
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (run make data from the repo root)", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    ck_assert_int_ge(len, 0);
    rewind(f);
    char *buf = TT_MALLOC((size_t)len + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    buf[len] = '\0';
    *n = (size_t)len;
    return buf;
}

// Encodes, compares with want[0 .. n_want), decodes back to the input.
static void check_encode(tt_bpe *bpe, const char *s, size_t n, tt_bpe_mode mode,
                         const int32_t *want, size_t n_want, int line) {
    size_t n_ids;
    int32_t *ids = tt_bpe_encode(bpe, s, n, mode, &n_ids);
    bool same = n_ids == n_want && (n_ids == 0 || memcmp(ids, want, n_ids * sizeof *ids) == 0);
    if (!same) {
        fprintf(stderr, "reference line %d: %zu ids, expected %zu:", line, n_ids, n_want);
        for (size_t i = 0; i < n_ids && i < 24; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n  expected:");
        for (size_t i = 0; i < n_want && i < 24; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n");
    }
    ck_assert_msg(same, "reference line %d: the ids differ (printed above)", line);
    size_t m;
    char *back = tt_bpe_decode(bpe, ids, n_ids, &m);
    ck_assert_msg(m == n && memcmp(back, s, n) == 0, "line %d: decode(encode(x)) != x", line);
    tt_free(back);
    tt_free(ids);
}

// ---- GPT-2 against js-tiktoken ----

START_TEST(test_gpt2_hello_world) {
    tt_bpe bpe;
    load_gpt2(&bpe);
    ck_assert_int_eq(bpe.n_vocab, 50257);
    ck_assert_int_eq(bpe.n_merges, 50000);
    ck_assert_int_eq(bpe.eot_id, 50256);
    check_encode(&bpe, "Hello world", 11, TT_BPE_ORDINARY, (const int32_t[]){15496, 995}, 2,
                 __LINE__);
    // <|endoftext|> is text unless allowed: "<|", "endoftext", "|>" (tiktoken's ids).
    check_encode(&bpe, "<|endoftext|>", 13, TT_BPE_ORDINARY,
                 (const int32_t[]){27, 91, 437, 1659, 5239, 91, 29}, 7, __LINE__);
    check_encode(&bpe, "<|endoftext|>", 13, TT_BPE_ALLOW_SPECIAL, (const int32_t[]){50256}, 1,
                 __LINE__);
    size_t len;
    const unsigned char *t = tt_bpe_token(&bpe, 995, &len);
    ck_assert_uint_eq(len, 6);
    ck_assert_mem_eq(t, " world", 6);
    t = tt_bpe_token(&bpe, 0, &len);  // GPT-2's byte tokens start at '!'
    ck_assert_uint_eq(len, 1);
    ck_assert_int_eq(t[0], '!');
    ck_assert_int_eq(bpe.byte_id['!'], 0);
    ck_assert_int_eq(bpe.byte_id[' '], 220);
    int32_t a, b;
    tt_bpe_merge(&bpe, 0, &a, &b);  // the first merge of vocab.bpe: "Ġ t"
    ck_assert_int_eq(a, 220);
    ck_assert_int_eq(b, 83);
    size_t n;
    int32_t *none = tt_bpe_encode(&bpe, "", 0, TT_BPE_ORDINARY, &n);
    ck_assert_ptr_null(none);
    ck_assert_uint_eq(n, 0);
    tt_bpe_free(&bpe);
    tt_bpe_free(&bpe);  // twice is fine: the struct is zeroed
}
END_TEST

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

START_TEST(test_gpt2_reference) {
    tt_bpe bpe;
    load_gpt2(&bpe);
    size_t n;
    char *data = slurp(REFERENCE, &n);
    char *text = TT_MALLOC(n + 1);
    int32_t *want = TT_MALLOC((n + 1) * sizeof *want);
    int cases = 0, special = 0, line = 0;
    for (char *p = data; *p; line++) {
        char *end = strchr(p, '\n');
        ck_assert_ptr_nonnull(end);
        *end = '\0';
        ck_assert_msg((p[0] == 'o' || p[0] == 's') && p[1] == ' ', "line %d: bad mode", line);
        tt_bpe_mode mode = p[0] == 's' ? TT_BPE_ALLOW_SPECIAL : TT_BPE_ORDINARY;
        special += mode == TT_BPE_ALLOW_SPECIAL;
        p += 2;
        size_t len = 0;
        if (*p == '-') {
            p++;
        } else {
            for (; hexval(p[0]) >= 0 && hexval(p[1]) >= 0; p += 2)
                text[len++] = (char)(hexval(p[0]) * 16 + hexval(p[1]));
        }
        size_t k = 0;
        while (*p == ' ') want[k++] = (int32_t)strtol(p + 1, &p, 10);
        ck_assert_msg(*p == '\0', "line %d: trailing text", line + 1);
        check_encode(&bpe, text, len, mode, want, k, line + 1);
        // Again, now from the pre-token cache: the same ids.
        check_encode(&bpe, text, len, mode, want, k, line + 1);
        cases++;
        p = end + 1;
    }
    ck_assert_int_ge(cases, 500);
    ck_assert_int_ge(special, 50);
    tt_free(text);
    tt_free(want);
    tt_free(data);
    tt_bpe_free(&bpe);
}
END_TEST

// Where JavaScript's \s and PCRE2's differ, tinytorch follows Unicode's White_Space, as
// tiktoken's own (Rust) pattern does: U+0085 (NEL) is a space, U+FEFF (BOM) is not.
// js-tiktoken (JS \s) gives the opposite, so these two are not in the reference file.
START_TEST(test_gpt2_whitespace_property) {
    tt_bpe bpe;
    load_gpt2(&bpe);
    // "x  \u0085y": the run of two spaces and NEL is whitespace before "y", so \s+(?!\S)
    // takes "  ", then \s+ takes NEL alone. (js-tiktoken: 87 220 1587 227 88.)
    check_encode(&bpe, "x  \xc2\x85y", 6, TT_BPE_ORDINARY,
                 (const int32_t[]){87, 220, 220, 126, 227, 88}, 6, __LINE__);
    // "a \ufeffb": BOM is not whitespace, so " \ufeff" is one punctuation-like pre-token.
    // (js-tiktoken: 64 220 171 119 123 65.)
    check_encode(&bpe, "a \xef\xbb\xbf" "b", 6, TT_BPE_ORDINARY,
                 (const int32_t[]){64, 27332, 119, 123, 65}, 5, __LINE__);
    tt_bpe_free(&bpe);
}
END_TEST

// ---- round trips of arbitrary bytes ----

static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

// Random bytes with structure: ASCII words and spaces, valid multi-byte characters, lone
// continuation bytes, truncated sequences, overlong forms, surrogates, bytes 0xf5..0xff.
static size_t random_bytes(uint64_t *seed, char *out, size_t cap) {
    static const char *const pieces[] = {
        " ", "  ", "\t", "\n", "\r\n", "'s", "'LL", "the", " cat", "123", "!?", "<|endoftext|>",
        "\xc3\xa9", "\xe4\xbd\xa0", "\xf0\x9f\x91\x8d", "\xcc\x81", "\xc2\xa0", "\xc2\x85",
        "\x80", "\xbf", "\xc3", "\xe4\xbd", "\xf0\x9f\x91", "\xc0\xaf", "\xed\xa0\x80",
        "\xf5", "\xff", "\xfe\xff", "\x00", "\x7f"};
    size_t n = 0, want = lcg(seed) % 120;
    while (n < want && n + 16 < cap) {
        if (lcg(seed) % 3 == 0) {
            out[n++] = (char)(lcg(seed) & 0xff);
        } else {
            const char *p = pieces[lcg(seed) % (sizeof pieces / sizeof *pieces)];
            size_t k = p[0] ? strlen(p) : 1;  // "\x00" is one NUL byte
            memcpy(out + n, p, k);
            n += k;
        }
    }
    return n;
}

static void check_round_trips(tt_bpe *bpe, uint64_t seed, int count) {
    char buf[256];
    for (int i = 0; i < count; i++) {
        size_t n = random_bytes(&seed, buf, sizeof buf);
        for (int mode = 0; mode < 2; mode++) {
            size_t k, m;
            int32_t *ids = tt_bpe_encode(bpe, buf, n, (tt_bpe_mode)mode, &k);
            for (size_t j = 0; j < k; j++)
                ck_assert(ids[j] >= 0 && ids[j] < bpe->n_vocab);
            char *back = tt_bpe_decode(bpe, ids, k, &m);
            ck_assert_msg(m == n && memcmp(back, buf, n) == 0, "case %d: decode(encode(x)) "
                          "!= x for %zu bytes", i, n);
            tt_free(back);
            tt_free(ids);
        }
    }
}

START_TEST(test_gpt2_round_trip_any_bytes) {
    tt_bpe bpe;
    load_gpt2(&bpe);
    check_round_trips(&bpe, 42, 3000);
    // Long runs: one pre-token each (the heap path), and whole-byte-range noise.
    static char big[20000];
    for (int kind = 0; kind < 4; kind++) {
        uint64_t s = 7 + (uint64_t)kind;
        for (size_t i = 0; i < sizeof big; i++)
            big[i] = kind == 0 ? 'a' : kind == 1 ? ' ' : kind == 2 ? (char)(0x80 + lcg(&s) % 64)
                                                                   : (char)lcg(&s);
        size_t k, m;
        int32_t *ids = tt_bpe_encode(&bpe, big, sizeof big, TT_BPE_ORDINARY, &k);
        char *back = tt_bpe_decode(&bpe, ids, k, &m);
        ck_assert_msg(m == sizeof big && memcmp(back, big, m) == 0, "kind %d", kind);
        if (kind == 0) ck_assert_uint_le(k, sizeof big / 4);  // merged, not 20,000 bytes
        tt_free(back);
        tt_free(ids);
    }
    tt_bpe_free(&bpe);
}
END_TEST

// FNV-1a 64 over the ids, each as 4 little-endian bytes.
static uint64_t fnv1a_ids(const int32_t *ids, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) {
            h ^= ((uint32_t)ids[i] >> (8 * k)) & 0xff;
            h *= 0x100000001b3ULL;
        }
    return h;
}

// nanoGPT's shakespeare preparation: 90/10 by characters, each part encoded on its own. The
// fingerprints of the ids are js-tiktoken's (gen_bpe_reference.mjs --corpus).
START_TEST(test_gpt2_shakespeare_counts) {
    tt_bpe bpe;
    load_gpt2(&bpe);
    size_t n;
    char *text = slurp(CORPUS, &n);
    ck_assert_uint_eq(n, 1115394);
    size_t n_train = (size_t)((double)n * 0.9), a, b;  // ASCII: characters are bytes
    int32_t *train = tt_bpe_encode(&bpe, text, n_train, TT_BPE_ORDINARY, &a);
    int32_t *val = tt_bpe_encode(&bpe, text + n_train, n - n_train, TT_BPE_ORDINARY, &b);
    ck_assert_uint_eq(a, 301966);
    ck_assert_uint_eq(b, 36059);
    ck_assert_uint_eq(fnv1a_ids(train, a), 0x107d66cf5cbc0e98ULL);
    ck_assert_uint_eq(fnv1a_ids(val, b), 0x31d76770648aa6e6ULL);
    size_t m;
    char *back = tt_bpe_decode(&bpe, train, a, &m);
    ck_assert_uint_eq(m, n_train);
    ck_assert(memcmp(back, text, m) == 0);
    tt_free(back);
    tt_free(train);
    tt_free(val);
    tt_free(text);
    tt_bpe_free(&bpe);
}
END_TEST

// ---- training ----

// Wikipedia's BPE example: aa -> 256, then ab -> 257 (ties with (256, a) at 2; a < 256),
// then (256, 257) -> 258.
START_TEST(test_train_by_hand) {
    tt_bpe bpe;
    const char *s = "aaabdaaabac";
    ck_assert_int_eq(tt_bpe_train(&bpe, s, strlen(s), 3), TT_OK);
    ck_assert_int_eq(bpe.n_vocab, 259);
    ck_assert_int_eq(bpe.eot_id, -1);
    const int32_t want[3][2] = {{'a', 'a'}, {'a', 'b'}, {256, 257}};
    for (int i = 0; i < 3; i++) {
        int32_t a, b;
        tt_bpe_merge(&bpe, i, &a, &b);
        ck_assert_int_eq(a, want[i][0]);
        ck_assert_int_eq(b, want[i][1]);
    }
    size_t len;
    const unsigned char *t = tt_bpe_token(&bpe, 258, &len);
    ck_assert_uint_eq(len, 4);
    ck_assert_mem_eq(t, "aaab", 4);
    check_encode(&bpe, s, strlen(s), TT_BPE_ORDINARY,
                 (const int32_t[]){258, 'd', 258, 'a', 'c'}, 5, __LINE__);
    tt_bpe_free(&bpe);
}
END_TEST

enum { BF_MERGES = 60, BF_MAXID = 256 + BF_MERGES };

// A text of lowercase words joined by single spaces: the pre-tokens are the first word and
// " word" for each other, so the brute force needs no regex.
static size_t word_text(char *out, size_t n_words, uint64_t seed) {
    static const char *const syl[] = {"ba", "na", "an", "ab", "ra", "ca", "da", "bra", "ka"};
    size_t n = 0;
    for (size_t w = 0; w < n_words; w++) {
        if (w) out[n++] = ' ';
        int k = 1 + (int)(lcg(&seed) % 4);
        for (int i = 0; i < k; i++) {
            const char *p = syl[lcg(&seed) % 9];
            memcpy(out + n, p, strlen(p));
            n += strlen(p);
        }
    }
    out[n] = '\0';
    return n;
}

// minbpe's RegexTokenizer.train, literally: recount every pair of every pre-token each step.
static void brute_force_train(const char *text, size_t n, int32_t merges[][2], int n_merges) {
    int32_t *ids = TT_MALLOC(n * sizeof *ids);
    size_t *start = TT_MALLOC((n + 1) * sizeof *start), *len = TT_MALLOC(n * sizeof *len);
    size_t C = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || text[i] == ' ') start[C++] = i;
        ids[i] = (unsigned char)text[i];
    }
    start[C] = n;
    for (size_t c = 0; c < C; c++) len[c] = start[c + 1] - start[c];
    int64_t *count = TT_MALLOC((size_t)BF_MAXID * BF_MAXID * sizeof *count);
    for (int m = 0; m < n_merges; m++) {
        memset(count, 0, (size_t)BF_MAXID * BF_MAXID * sizeof *count);
        for (size_t c = 0; c < C; c++)
            for (size_t i = 0; i + 1 < len[c]; i++)
                count[ids[start[c] + i] * BF_MAXID + ids[start[c] + i + 1]]++;
        int best = 0;
        for (int k = 1; k < BF_MAXID * BF_MAXID; k++)
            if (count[k] > count[best]) best = k;  // strict: the smallest (a, b) on ties
        ck_assert_int_gt(count[best], 0);
        int32_t a = best / BF_MAXID, b = best % BF_MAXID, id = 256 + m;
        merges[m][0] = a;
        merges[m][1] = b;
        for (size_t c = 0; c < C; c++) {
            int32_t *x = ids + start[c];
            size_t w = 0;
            for (size_t i = 0; i < len[c];) {
                if (i + 1 < len[c] && x[i] == a && x[i + 1] == b) x[w++] = id, i += 2;
                else x[w++] = x[i++];
            }
            len[c] = w;
        }
    }
    tt_free(count);
    tt_free(ids);
    tt_free(start);
    tt_free(len);
}

START_TEST(test_train_matches_brute_force) {
    for (uint64_t seed = 1; seed <= 3; seed++) {
        static char text[40000];
        size_t n = word_text(text, 3000, seed);
        static int32_t want[BF_MERGES][2];
        brute_force_train(text, n, want, BF_MERGES);
        tt_bpe bpe;
        ck_assert_int_eq(tt_bpe_train(&bpe, text, n, BF_MERGES), TT_OK);
        for (int i = 0; i < BF_MERGES; i++) {
            int32_t a, b;
            tt_bpe_merge(&bpe, i, &a, &b);
            ck_assert_msg(a == want[i][0] && b == want[i][1], "seed %d merge %d: (%d, %d), "
                          "brute force (%d, %d)", (int)seed, i, a, b, want[i][0], want[i][1]);
        }
        check_round_trips(&bpe, seed, 300);
        tt_bpe_free(&bpe);
    }
}
END_TEST

// The trained vocab on Tiny Shakespeare: the most frequent pairs first, a file round trip
// that keeps every merge and every encoding, and fewer tokens than bytes.
START_TEST(test_train_save_load) {
    size_t n;
    char *text = slurp(CORPUS, &n);
    tt_bpe bpe, back;
    ck_assert_int_eq(tt_bpe_train(&bpe, text, 200000, 300), TT_OK);
    size_t len;
    const unsigned char *t = tt_bpe_token(&bpe, 256, &len);  // the commonest pair: " t"
    ck_assert_uint_eq(len, 2);
    ck_assert_mem_eq(t, " t", 2);
    char path[] = "/tmp/tt_test_bpe_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(tt_bpe_save(&bpe, path), TT_OK);
    ck_assert_int_eq(tt_bpe_load(&back, path), TT_OK);
    ck_assert_int_eq(back.n_merges, 300);
    ck_assert_int_eq(back.n_vocab, 556);
    for (int i = 0; i < 300; i++) {
        int32_t a, b, c, d;
        tt_bpe_merge(&bpe, i, &a, &b);
        tt_bpe_merge(&back, i, &c, &d);
        ck_assert(a == c && b == d);
    }
    size_t k1, k2;
    int32_t *x = tt_bpe_encode(&bpe, text, n, TT_BPE_ORDINARY, &k1);
    int32_t *y = tt_bpe_encode(&back, text, n, TT_BPE_ALLOW_SPECIAL, &k2);  // no special token
    ck_assert_uint_eq(k1, k2);
    ck_assert(memcmp(x, y, k1 * sizeof *x) == 0);
    ck_assert_uint_lt(k1, n * 2 / 3);
    // The file starts as documented in bpe.h.
    size_t fn;
    char *file = slurp(path, &fn);
    ck_assert_msg(strncmp(file, "tinytorch-bpe 1\nmerges 300\n32 116\n", 33) == 0, "%.40s",
                  file);
    tt_free(file);
    unlink(path);
    tt_free(x);
    tt_free(y);
    tt_free(text);
    tt_bpe_free(&bpe);
    tt_bpe_free(&back);
}
END_TEST

START_TEST(test_train_errors) {
    tt_bpe bpe;
    ck_assert_int_eq(tt_bpe_train(&bpe, "abcab", 5, 0), TT_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "out of range"));
    ck_assert_int_eq(tt_bpe_train(&bpe, "aaabdaaabac", 11, 8), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "allows only 7 merges") != NULL, "%s",
                  tt_last_error());
    ck_assert_ptr_null(bpe.s);
    ck_assert_int_eq(tt_bpe_train(&bpe, "", 0, 1), TT_ERR_ARG);
    tt_bpe gpt2;
    load_gpt2(&gpt2);
    ck_assert_int_eq(tt_bpe_save(&gpt2, "/tmp/never_written.bpe"), TT_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "encoder.json and vocab.bpe"));
    tt_bpe_free(&gpt2);
    ck_assert_int_eq(tt_bpe_train(&bpe, "ab ab", 5, 1), TT_OK);
    ck_assert_int_eq(tt_bpe_save(&bpe, "/nonexistent-dir/x.bpe"), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "cannot save BPE vocabulary '/nonexistent-dir/x.bpe' "
                         "(create of") && strstr(tt_last_error(), "previous file is unchanged"),
                  "%s", tt_last_error());
    tt_bpe_free(&bpe);
}
END_TEST

// ---- load errors: a status and a message naming the file and the fix, never an abort ----

static char tmpdir[64];

static void expect_gpt2_error(const char *enc, const char *voc, tt_status want,
                              const char *part1, const char *part2) {
    tt_bpe bpe;
    tt_status st = tt_bpe_load_gpt2(&bpe, enc, voc);
    const char *msg = tt_last_error();
    ck_assert_msg(st == want, "status %d, expected %d: %s", st, want, msg);
    ck_assert_msg(strstr(msg, part1) && strstr(msg, part2), "message \"%s\" lacks \"%s\" or "
                  "\"%s\"", msg, part1, part2);
    ck_assert_msg(!strpbrk(msg, "\n\r"), "message \"%s\" is not one line", msg);
    ck_assert_ptr_null(bpe.s);
    ck_assert_int_eq(bpe.n_vocab, 0);
}

START_TEST(test_gpt2_load_errors) {
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "bpe");
    char p1[128], p2[128];
    expect_gpt2_error("/nonexistent/encoder.json", VOCAB, TT_ERR_IO, "/nonexistent/encoder.json",
                      "run make data");
    expect_gpt2_error(ENCODER, "/nonexistent/vocab.bpe", TT_ERR_IO, "/nonexistent/vocab.bpe",
                      "run make data");
    expect_gpt2_error(
        tt_test_write_file(p1, sizeof p1, tmpdir, "bad.json", "{\"a\": 0,\n \"b\" 1}", 16), VOCAB,
        TT_ERR_FORMAT, "line 2: not valid JSON", "run make data");
    expect_gpt2_error(tt_test_write_file(p1, sizeof p1, tmpdir, "list.json", "[1, 2]", 6), VOCAB,
                      TT_ERR_FORMAT, "another JSON value", "run make data");
    // The file's bytes quoted in a message keep it one line: control bytes print as '?'.
    // Found by tests/fuzz_bpe.c (regress-json-newline): Jansson quotes the text near the error.
    expect_gpt2_error(tt_test_write_file(p1, sizeof p1, tmpdir, "nl.json", "{\"\\\n\": 0}", 9),
                      VOCAB, TT_ERR_FORMAT, "line 2: not valid JSON: invalid escape near '\"\\?'",
                      "run make data");
    expect_gpt2_error(ENCODER,
                      tt_test_write_file(p2, sizeof p2, tmpdir, "cr.bpe",
                                         "#version: 0.2\n\xc4\xa0\rt "
                                         "x\n",
                                         21),
                      TT_ERR_FORMAT, "line 2: expected two tokens", "found \"\xc4\xa0?t x\"");
    // The real vocab.bpe, altered: unknown token, swapped merges, truncated, no header.
    size_t n;
    char *voc = slurp(VOCAB, &n);
    char *nl1 = strchr(voc, '\n'), *nl2 = strchr(nl1 + 1, '\n'), *nl3 = strchr(nl2 + 1, '\n');
    size_t l1 = (size_t)(nl1 + 1 - voc);
    char *bad = TT_MALLOC(n + 16);
    memcpy(bad, voc, n);
    memcpy(bad + l1, "\xc4\xa0 \xe2\x98\x83", 6);  // "Ġ ☃": not in GPT-2's alphabet
    memmove(bad + l1 + 6, nl2, (size_t)(voc + n - nl2));
    expect_gpt2_error(
        ENCODER,
        tt_test_write_file(p2, sizeof p2, tmpdir, "a.bpe", bad, n - (size_t)(nl2 - nl1 - 1) + 6),
        TT_ERR_FORMAT, "line 2: expected two tokens", "run make data");
    // "Ġ zzzzzzzz": both parts spell bytes, but the pair's token does not exist.
    memcpy(bad, voc, n);
    memcpy(bad + l1, "\xc4\xa0 zzzzzzzz", 11);
    memmove(bad + l1 + 11, nl2, (size_t)(voc + n - nl2));
    expect_gpt2_error(
        ENCODER,
        tt_test_write_file(p2, sizeof p2, tmpdir, "b.bpe", bad, n - (size_t)(nl2 - nl1 - 1) + 11),
        TT_ERR_MISMATCH, "line 2: merge", "not in the encoder.json");
    // Merges 0 and 1 swapped: merge 0 makes id 257.
    size_t la = (size_t)(nl2 - nl1), lb = (size_t)(nl3 - nl2);
    memcpy(bad, voc, n);
    memcpy(bad + l1, nl2 + 1, lb);
    memcpy(bad + l1 + lb, nl1 + 1, la);
    expect_gpt2_error(ENCODER, tt_test_write_file(p2, sizeof p2, tmpdir, "c.bpe", bad, n),
                      TT_ERR_MISMATCH, "merge 0 makes token id 257", "expected 256");
    expect_gpt2_error(
        ENCODER, tt_test_write_file(p2, sizeof p2, tmpdir, "d.bpe", voc, (size_t)(nl3 + 1 - voc)),
        TT_ERR_MISMATCH, "has 50257 tokens but", "2 merges");
    expect_gpt2_error(ENCODER, tt_test_write_file(p2, sizeof p2, tmpdir, "e.bpe", nl1 + 1, 40),
                      TT_ERR_FORMAT, "line 1: expected \"#version: 0.2\"", "run make data");
    // encoder.json with one id repeated.
    size_t en;
    char *enc = slurp(ENCODER, &en);
    char *hit = strstr(enc, "\"!\": 0");
    ck_assert_ptr_nonnull(hit);
    hit[5] = '1';
    expect_gpt2_error(tt_test_write_file(p1, sizeof p1, tmpdir, "dup.json", enc, en), VOCAB,
                      TT_ERR_FORMAT, "a repeated id", "run make data");
    tt_free(enc);
    tt_free(bad);
    tt_free(voc);
    tt_test_rmdir(tmpdir);
}
END_TEST

static void expect_vocab_error(const char *text, tt_status want, const char *part) {
    char path[128];
    tt_test_write_file(path, sizeof path, tmpdir, "v.bpe", text, strlen(text));
    tt_bpe bpe;
    tt_status st = tt_bpe_load(&bpe, path);
    ck_assert_msg(st == want, "status %d, expected %d: %s", st, want, tt_last_error());
    ck_assert_msg(strstr(tt_last_error(), part) && strstr(tt_last_error(), path),
                  "message \"%s\" lacks \"%s\" or the path", tt_last_error(), part);
    ck_assert_ptr_null(bpe.s);
}

START_TEST(test_vocab_file_errors) {
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "bpe");
    tt_bpe bpe;
    ck_assert_int_eq(tt_bpe_load(&bpe, "/nonexistent.bpe"), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(),
                                 "cannot open vocabulary file '/nonexistent.bpe': No such file"));
    expect_vocab_error("", TT_ERR_FORMAT, "line 1: expected \"tinytorch-bpe 1\"");
    expect_vocab_error("#version: 0.2\n", TT_ERR_FORMAT, "not a tinytorch-bpe vocab file");
    expect_vocab_error("tinytorch-bpe 2\nmerges 0\n", TT_ERR_FORMAT, "reads version 1 only");
    expect_vocab_error("tinytorch-bpe 1\nmerge 1\n", TT_ERR_FORMAT, "line 2: expected");
    expect_vocab_error("tinytorch-bpe 1\nmerges 9999999\n", TT_ERR_FORMAT, "line 2");
    expect_vocab_error("tinytorch-bpe 1\nmerges 2\n97 98\n", TT_ERR_FORMAT, "line 4: expected "
                       "merge 1");
    expect_vocab_error("tinytorch-bpe 1\nmerges 1\n97 256\n", TT_ERR_FORMAT, "below 256");
    expect_vocab_error("tinytorch-bpe 1\nmerges 1\n97 -1\n", TT_ERR_FORMAT, "line 3");
    expect_vocab_error("tinytorch-bpe 1\nmerges 1\n97 98\n1 2\n", TT_ERR_FORMAT,
                       "text after the 1 merges");
    expect_vocab_error("tinytorch-bpe 1\nmerges 2\n97 98\n97 98\n", TT_ERR_FORMAT,
                       "merge 1 (97 98) repeats merge 0");
    expect_vocab_error("tinytorch-bpe 1\nmerges 1\n97 98\0junk\n", TT_ERR_FORMAT,
                       "line 3");  // strlen stops at the NUL: the count line then fails
    // A good one: merges 0 and a chained merge.
    char path[128];
    tt_test_write_file(path, sizeof path, tmpdir, "ok.bpe",
                       "tinytorch-bpe 1\nmerges 2\n97 98\n256 99\n", 38);
    ck_assert_int_eq(tt_bpe_load(&bpe, path), TT_OK);
    check_encode(&bpe, "abc ab", 6, TT_BPE_ORDINARY, (const int32_t[]){257, ' ', 256}, 3,
                 __LINE__);
    tt_bpe_free(&bpe);
    // The same file with CRLF line ends (Windows, git's autocrlf) is the same vocab; a lone CR
    // is not a line end.
    tt_test_write_file(path, sizeof path, tmpdir, "crlf.bpe",
                       "tinytorch-bpe 1\r\nmerges 2\r\n97 98\r\n256 99\r\n", 42);
    ck_assert_msg(tt_bpe_load(&bpe, path) == TT_OK, "%s", tt_last_error());
    check_encode(&bpe, "abc ab", 6, TT_BPE_ORDINARY, (const int32_t[]){257, ' ', 256}, 3,
                 __LINE__);
    tt_bpe_free(&bpe);
    expect_vocab_error("tinytorch-bpe 1\rmerges 0\n", TT_ERR_FORMAT, "line 1: version");
    // A directory says so, not "read error".
    ck_assert_int_eq(tt_bpe_load(&bpe, tmpdir), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "is a directory, not a regular file"), "%s",
                  tt_last_error());
    tt_test_rmdir(tmpdir);
}
END_TEST

// Merge i joins token 255 + i with itself: each doubles the last token's length, so K lines
// ask for 2^(K+1) + 254 token bytes. Found by tests/fuzz_bpe.c (regress-token-bytes): 28 merges
// took 2 GiB of memory before the loader refused them.
static char *doubling_vocab(int K) {
    char *text = TT_MALLOC(64 + 16 * (size_t)K), *p = text;
    p += sprintf(p, "tinytorch-bpe 1\nmerges %d\n97 97\n", K);
    for (int i = 1; i < K; i++) p += sprintf(p, "%d %d\n", 255 + i, 255 + i);
    return text;
}

START_TEST(test_vocab_file_token_bytes) {
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "bpe");
    // 25 merges: 64 MiB + 254 bytes, one merge too many; 28 and 30: what the old 2 GiB
    // bound let by and what it stopped. All stop at merge 24.
    for (int K = 25; K <= 30; K += K == 25 ? 3 : 2) {
        char *text = doubling_vocab(K);
        expect_vocab_error(text, TT_ERR_FORMAT, "merge 24 makes the tokens longer than 64 MiB");
        tt_free(text);
    }
    // 20 merges: 2 MiB, loads; the longest token is 2^20 'a's and encodes as itself.
    char *text = doubling_vocab(20), path[128];
    tt_test_write_file(path, sizeof path, tmpdir, "ok.bpe", text, strlen(text));
    tt_free(text);
    tt_bpe bpe;
    ck_assert_msg(tt_bpe_load(&bpe, path) == TT_OK, "%s", tt_last_error());
    size_t len, n;
    const unsigned char *t = tt_bpe_token(&bpe, 256 + 19, &len);
    ck_assert_uint_eq(len, (size_t)1 << 20);
    int32_t *ids = tt_bpe_encode(&bpe, (const char *)t, len, TT_BPE_ORDINARY, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(ids[0], 256 + 19);
    tt_free(ids);
    tt_bpe_free(&bpe);
    tt_test_rmdir(tmpdir);
}
END_TEST

// ---- corrupted files: a status, or a tokenizer that still round-trips; never a crash ----

// Overwrites, deletes or duplicates a few random bytes of data[0 .. n) into out; new length.
static size_t mutate(uint64_t *seed, const char *data, size_t n, char *out) {
    memcpy(out, data, n);
    int edits = 1 + (int)(lcg(seed) % 3);
    for (int e = 0; e < edits && n > 2; e++) {
        size_t at = lcg(seed) % n, k = 1 + lcg(seed) % 4;
        if (at + k > n) k = n - at;
        switch (lcg(seed) % 4) {
        case 0: out[at] = (char)lcg(seed); break;                         // any byte
        case 1: out[at] = "0123456789 \n\"{}:,"[lcg(seed) % 17]; break;   // a likely one
        case 2: memmove(out + at, out + at + k, n - at - k); n -= k; break;
        default: memmove(out + at + k, out + at, n - at); n += k; break;   // duplicate
        }
    }
    return n;
}

static void check_loaded(tt_bpe *bpe, uint64_t seed) {
    char buf[256];
    size_t n = random_bytes(&seed, buf, sizeof buf), k, m;
    int32_t *ids = tt_bpe_encode(bpe, buf, n, TT_BPE_ALLOW_SPECIAL, &k);
    char *back = tt_bpe_decode(bpe, ids, k, &m);
    ck_assert(m == n && memcmp(back, buf, n) == 0);
    tt_free(back);
    tt_free(ids);
}

// A GPT-2 vocabulary cut to its first K merges: encoder.json without the later ids and with
// <|endoftext|> = 256 + K (written with Jansson), vocab.bpe's first K + 1 lines.
static void write_mini_gpt2(int K, char *enc_path, char *voc_path, size_t cap) {
    json_error_t err;
    json_t *full = json_load_file(ENCODER, 0, &err), *mini = json_object();
    ck_assert_ptr_nonnull(full);
    const char *key;
    json_t *val;
    json_object_foreach(full, key, val) {
        json_int_t id = json_integer_value(val);
        if (id < 256 + K) json_object_set_new(mini, key, json_integer(id));
    }
    json_object_set_new(mini, "<|endoftext|>", json_integer(256 + K));
    snprintf(enc_path, cap, "%s/mini.json", tmpdir);
    ck_assert_int_eq(json_dump_file(mini, enc_path, JSON_COMPACT), 0);
    json_decref(full);
    json_decref(mini);
    size_t n;
    char *voc = slurp(VOCAB, &n), *p = voc;
    for (int i = 0; i <= K; i++) p = strchr(p, '\n') + 1;
    tt_test_write_file(voc_path, cap, tmpdir, "mini.bpe", voc, (size_t)(p - voc));
    tt_free(voc);
}

START_TEST(test_corrupt_files) {
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "bpe");
    char enc_path[128], voc_path[128], bad_path[128];
    write_mini_gpt2(300, enc_path, voc_path, sizeof enc_path);
    tt_bpe bpe;
    ck_assert_int_eq(tt_bpe_load_gpt2(&bpe, enc_path, voc_path), TT_OK);
    ck_assert_int_eq(bpe.n_vocab, 557);
    ck_assert_int_eq(bpe.eot_id, 556);
    check_loaded(&bpe, 1);
    tt_bpe_free(&bpe);
    size_t n_enc, n_voc;
    char *enc = slurp(enc_path, &n_enc), *voc = slurp(voc_path, &n_voc);
    char *buf = TT_MALLOC((n_enc > n_voc ? n_enc : n_voc) + 64);
    uint64_t seed = 2024;
    int ok = 0, rejected = 0;
    for (int i = 0; i < 400; i++) {
        bool on_enc = i % 2 == 0;
        size_t n = mutate(&seed, on_enc ? enc : voc, on_enc ? n_enc : n_voc, buf);
        tt_test_write_file(bad_path, sizeof bad_path, tmpdir, on_enc ? "bad.json" : "bad.bpe", buf,
                           n);
        tt_status st = on_enc ? tt_bpe_load_gpt2(&bpe, bad_path, voc_path)
                              : tt_bpe_load_gpt2(&bpe, enc_path, bad_path);
        if (st == TT_OK) {
            check_loaded(&bpe, seed);
            tt_bpe_free(&bpe);
            ok++;
        } else {
            ck_assert_ptr_null(bpe.s);
            // Names a file: the broken one, or its partner that no longer agrees with it.
            ck_assert_msg(strstr(tt_last_error(), tmpdir) != NULL, "%s", tt_last_error());
            rejected++;
        }
    }
    ck_assert_int_gt(rejected, 200);  // most edits break the files; a few are harmless
    tt_free(enc);
    tt_free(voc);
    // The trained vocab file.
    ck_assert_int_eq(tt_bpe_train(&bpe, "aaabdaaabac ab ca ba dab", 24, 12), TT_OK);
    ck_assert_int_eq(tt_bpe_save(&bpe, voc_path), TT_OK);
    tt_bpe_free(&bpe);
    voc = slurp(voc_path, &n_voc);
    buf = TT_REALLOC(buf, n_voc + 64);
    for (int i = 0; i < 2000; i++) {
        size_t n = mutate(&seed, voc, n_voc, buf);
        tt_test_write_file(bad_path, sizeof bad_path, tmpdir, "bad.vocab", buf, n);
        if (tt_bpe_load(&bpe, bad_path) == TT_OK) {
            check_loaded(&bpe, seed);
            tt_bpe_free(&bpe);
            ok++;
        } else {
            ck_assert_ptr_null(bpe.s);
            ck_assert_msg(strstr(tt_last_error(), bad_path) != NULL, "%s", tt_last_error());
        }
    }
    ck_assert_int_gt(ok, 0);
    tt_free(voc);
    tt_free(buf);
    tt_test_rmdir(tmpdir);
}
END_TEST

// ---- aborts: programmer errors ----

START_TEST(test_abort_decode_range) {
    tt_expect_abort("token id 50257 at position 1 is out of range [0, 50257)");
    tt_bpe bpe;
    load_gpt2(&bpe);
    size_t n;
    tt_bpe_decode(&bpe, (const int32_t[]){1, 50257}, 2, &n);
}
END_TEST

START_TEST(test_abort_not_loaded) {
    tt_expect_abort("the tokenizer is not loaded");
    tt_bpe bpe = {0};
    size_t n;
    tt_bpe_encode(&bpe, "x", 1, TT_BPE_ORDINARY, &n);
}
END_TEST

START_TEST(test_abort_merge_range) {
    tt_expect_abort("merge 3 is out of range [0, 3)");
    tt_bpe bpe;
    ck_assert_int_eq(tt_bpe_train(&bpe, "aaabdaaabac", 11, 3), TT_OK);
    int32_t a, b;
    tt_bpe_merge(&bpe, 3, &a, &b);
}
END_TEST

int main(void) {
    Suite *s = suite_create("bpe");
    TCase *g = tt_tcase("gpt2");
    tcase_set_timeout(g, 120);
    tcase_add_test(g, test_gpt2_hello_world);
    tcase_add_test(g, test_gpt2_reference);
    tcase_add_test(g, test_gpt2_whitespace_property);
    tcase_add_test(g, test_gpt2_round_trip_any_bytes);
    tcase_add_test(g, test_gpt2_shakespeare_counts);
    tcase_add_test(g, test_gpt2_load_errors);
    suite_add_tcase(s, g);

    TCase *t = tt_tcase("train");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_train_by_hand);
    tcase_add_test(t, test_train_matches_brute_force);
    tcase_add_test(t, test_train_save_load);
    tcase_add_test(t, test_train_errors);
    tcase_add_test(t, test_vocab_file_errors);
    tcase_add_test(t, test_vocab_file_token_bytes);
    tcase_add_test(t, test_corrupt_files);
    suite_add_tcase(s, t);

    TCase *ab = tt_tcase_aborts("aborts_bpe");
    tcase_set_timeout(ab, 60);
    tcase_add_test_raise_signal(ab, test_abort_decode_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_not_loaded, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_merge_range, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

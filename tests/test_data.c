// Check suite of data/: the char vocab of a known string, encode/decode round trips, the
// unknown-character message, the 90/10 split, batches (x/y shifted by one, inside their split,
// reproducible from the seed) and the load errors (missing, directory, empty, too short).
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

// ---- temp files ----

static char tmpdir[64];

static void make_tmpdir(void) { tt_test_mkdtemp(tmpdir, sizeof tmpdir, "data"); }

static void remove_tmpdir(void) { tt_test_rmdir(tmpdir); }

// ---- vocab ----

START_TEST(test_vocab_known_string) {
    const char *s = "hello world";
    tt_char_vocab v;
    ck_assert_int_eq(tt_vocab_build(&v, (const unsigned char *)s, strlen(s)), TT_OK);
    ck_assert_int_eq(v.size, 8);  // ' ' d e h l o r w, in byte order
    ck_assert_mem_eq(v.chars, " dehlorw", 8);
    ck_assert_int_eq(v.ids[' '], 0);
    ck_assert_int_eq(v.ids['w'], 7);
    ck_assert_int_eq(v.ids['z'], -1);
    int32_t ids[11];
    ck_assert_int_eq(tt_vocab_encode(&v, s, 11, ids), TT_OK);
    const int32_t want[11] = {3, 2, 4, 4, 5, 0, 7, 5, 6, 4, 1};
    ck_assert_mem_eq(ids, want, sizeof want);
    char back[12] = {0};
    tt_vocab_decode(&v, ids, 11, back);
    ck_assert_str_eq(back, s);
}
END_TEST

START_TEST(test_vocab_all_bytes_round_trip) {
    unsigned char text[512];
    for (int i = 0; i < 512; i++) text[i] = (unsigned char)(255 - i % 256);
    tt_char_vocab v;
    ck_assert_int_eq(tt_vocab_build(&v, text, sizeof text), TT_OK);
    ck_assert_int_eq(v.size, 256);
    for (int b = 0; b < 256; b++) ck_assert_int_eq(v.ids[b], b);
    int32_t ids[512];
    ck_assert_int_eq(tt_vocab_encode(&v, (const char *)text, 512, ids), TT_OK);
    char back[512];
    tt_vocab_decode(&v, ids, 512, back);
    ck_assert_mem_eq(back, text, 512);

    // The same vocab from its chars (as read from a checkpoint).
    tt_char_vocab w;
    ck_assert_int_eq(tt_vocab_from_chars(&w, v.chars, v.size), TT_OK);
    ck_assert_mem_eq(&w, &v, sizeof v);
}
END_TEST

START_TEST(test_vocab_errors) {
    tt_char_vocab v;
    ck_assert_int_eq(tt_vocab_build(&v, (const unsigned char *)"", 0), TT_ERR_ARG);
    ck_assert_int_eq(tt_vocab_from_chars(&v, (const unsigned char *)"abca", 4), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "0x61 appears twice (ids 0 and 3)"));
    ck_assert_int_eq(tt_vocab_from_chars(&v, (const unsigned char *)"a", 0), TT_ERR_FORMAT);
    ck_assert_int_eq(tt_vocab_from_chars(&v, (const unsigned char *)"a", 257), TT_ERR_FORMAT);

    ck_assert_int_eq(tt_vocab_build(&v, (const unsigned char *)"abc", 3), TT_OK);
    int32_t ids[8];
    ck_assert_int_eq(tt_vocab_encode(&v, "abXc", 4, ids), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "character 'X' at position 2"), "message: %s",
                  tt_last_error());
    ck_assert_int_eq(tt_vocab_encode(&v, "ab\n", 3, ids), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "character \\x0a at position 2"), "message: %s",
                  tt_last_error());
}
END_TEST

START_TEST(test_abort_decode_range) {
    tt_expect_abort("token id 3 at position 0 is out of range [0, 3)");
    tt_char_vocab v;
    tt_vocab_build(&v, (const unsigned char *)"abc", 3);
    char out[1];
    tt_vocab_decode(&v, (const int32_t[]){3}, 1, out);
}
END_TEST

// ---- dataset ----

// 1000 bytes of a repeating pattern over 10 letters.
static const char *pattern_file(char *buf, size_t cap, int n) {
    char *text = malloc((size_t)n);
    for (int i = 0; i < n; i++) text[i] = (char)('a' + (i * 7 + i / 10) % 10);
    tt_test_write_file(buf, cap, tmpdir, "pattern.txt", text, (size_t)n);
    free(text);
    return buf;
}

START_TEST(test_dataset_split) {
    make_tmpdir();
    char path[128];
    pattern_file(path, sizeof path, 1000);
    tt_text_dataset ds;
    ck_assert_int_eq(tt_dataset_load(&ds, path, NULL, 0.9), TT_OK);
    ck_assert_int_eq(ds.n, 1000);
    ck_assert_int_eq(ds.n_train, 900);
    ck_assert_int_eq(ds.vocab.size, 10);
    for (int64_t i = 0; i < ds.n; i++)
        ck_assert_int_eq(ds.tokens[i], (int)((i * 7 + i / 10) % 10));
    ck_assert_int_eq(tt_dataset_check(&ds, 64), TT_OK);
    ck_assert_int_eq(tt_dataset_check(&ds, 99), TT_OK);   // val holds 100 = 99 + 1
    ck_assert_int_eq(tt_dataset_check(&ds, 100), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "val split has 100 tokens"), "%s", tt_last_error());
    tt_dataset_free(&ds);
    tt_dataset_free(&ds);  // safe twice (zeroed)

    // Loading with a given vocab keeps its ids; a char outside it is a mismatch.
    tt_char_vocab v;
    tt_vocab_build(&v, (const unsigned char *)"abcdefghijk", 11);
    ck_assert_int_eq(tt_dataset_load(&ds, path, &v, 0.5), TT_OK);
    ck_assert_int_eq(ds.vocab.size, 11);
    ck_assert_int_eq(ds.n_train, 500);
    tt_dataset_free(&ds);
    tt_vocab_build(&v, (const unsigned char *)"abcdefghi", 9);
    ck_assert_int_eq(tt_dataset_load(&ds, path, &v, 0.9), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "character 'j' at position"), "%s", tt_last_error());
    ck_assert_ptr_null(ds.tokens);
    ck_assert_int_eq(tt_dataset_load(&ds, path, NULL, 1.0), TT_ERR_ARG);
    remove_tmpdir();
}
END_TEST

START_TEST(test_dataset_batches) {
    make_tmpdir();
    char path[128];
    pattern_file(path, sizeof path, 1000);
    tt_text_dataset ds;
    ck_assert_int_eq(tt_dataset_load(&ds, path, NULL, 0.9), TT_OK);
    const int64_t B = 8, T = 16;
    for (int split = 0; split < 2; split++) {
        const int32_t *base = ds.tokens + (split == TT_SPLIT_TRAIN ? 0 : ds.n_train);
        int64_t len = split == TT_SPLIT_TRAIN ? ds.n_train : ds.n - ds.n_train;
        tt_rng rng, rng2;
        tt_rng_seed(&rng, 1337);
        tt_rng_seed(&rng2, 1337);
        for (int rep = 0; rep < 20; rep++) {
            tt_scope_begin();
            tt_tensor *x, *y, *x2, *y2;
            tt_dataset_batch(&ds, (tt_data_split)split, B, T, &rng, &x, &y);
            tt_dataset_batch(&ds, (tt_data_split)split, B, T, &rng2, &x2, &y2);
            ck_assert_int_eq(x->dtype, TT_I32);
            ck_assert_int_eq(x->ndim, 2);
            ck_assert_int_eq(x->shape[0], B);
            ck_assert_int_eq(x->shape[1], T);
            const int32_t *xd = tt_data(x), *yd = tt_data(y);
            ck_assert_mem_eq(xd, tt_data(x2), (size_t)(B * T) * 4);  // same seed, same batch
            ck_assert_mem_eq(yd, tt_data(y2), (size_t)(B * T) * 4);
            for (int64_t b = 0; b < B; b++) {
                // Find the window: the pattern has period 100 so search the split for a match.
                int64_t found = -1;
                for (int64_t i = 0; i + T < len && found < 0; i++)
                    if (memcmp(base + i, xd + b * T, (size_t)T * 4) == 0 &&
                        memcmp(base + i + 1, yd + b * T, (size_t)T * 4) == 0)
                        found = i;
                ck_assert_msg(found >= 0, "row %lld is not a window of the split", (long long)b);
                for (int64_t t = 0; t + 1 < T; t++)
                    ck_assert_int_eq(yd[b * T + t], xd[b * T + t + 1]);
            }
            tt_scope_end();
        }
    }
    // Windows cover the whole split: with T = len - 1 there is one window, at 0.
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_tensor *x, *y;
    tt_dataset_batch(&ds, TT_SPLIT_VAL, 2, 99, &rng, &x, &y);
    ck_assert_mem_eq(tt_data(x), ds.tokens + 900, 99 * 4);
    ck_assert_mem_eq(tt_data(y), ds.tokens + 901, 99 * 4);
    tt_release(x);
    tt_release(y);
    tt_dataset_free(&ds);
    remove_tmpdir();
}
END_TEST

START_TEST(test_dataset_seeds_differ) {
    make_tmpdir();
    char path[128];
    pattern_file(path, sizeof path, 1000);
    tt_text_dataset ds;
    ck_assert_int_eq(tt_dataset_load(&ds, path, NULL, 0.9), TT_OK);
    tt_rng a, b;
    tt_rng_seed(&a, 1);
    tt_rng_seed(&b, 2);
    tt_scope_begin();
    tt_tensor *xa, *ya, *xb, *yb;
    tt_dataset_batch(&ds, TT_SPLIT_TRAIN, 12, 32, &a, &xa, &ya);
    tt_dataset_batch(&ds, TT_SPLIT_TRAIN, 12, 32, &b, &xb, &yb);
    ck_assert(memcmp(tt_data(xa), tt_data(xb), 12 * 32 * 4) != 0);
    tt_scope_end();
    tt_dataset_free(&ds);
    remove_tmpdir();
}
END_TEST

START_TEST(test_dataset_errors) {
    make_tmpdir();
    tt_text_dataset ds;
    char path[128];

    snprintf(path, sizeof path, "%s/missing.txt", tmpdir);
    ck_assert_int_eq(tt_dataset_load(&ds, path, NULL, 0.9), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "missing.txt") &&
                  strstr(tt_last_error(), "No such file"), "%s", tt_last_error());
    ck_assert_ptr_null(ds.tokens);

    ck_assert_int_eq(tt_dataset_load(&ds, tmpdir, NULL, 0.9), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "is a directory"), "%s", tt_last_error());

    tt_test_write_file(path, sizeof path, tmpdir, "empty.txt", "", 0);
    ck_assert_int_eq(tt_dataset_load(&ds, path, NULL, 0.9), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "is empty"), "%s", tt_last_error());

    // 50 bytes: val has 5 tokens; block 4 fits, block 5 does not; block 64 fails on val too.
    tt_test_write_file(path, sizeof path, tmpdir, "short.txt",
                       "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij", 50);
    ck_assert_int_eq(tt_dataset_load(&ds, path, NULL, 0.9), TT_OK);
    ck_assert_int_eq(tt_dataset_check(&ds, 4), TT_OK);
    ck_assert_int_eq(tt_dataset_check(&ds, 5), TT_ERR_ARG);
    ck_assert_int_eq(tt_dataset_check(&ds, 64), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "block size 64 needs at least 65"), "%s",
                  tt_last_error());
    ck_assert_int_eq(tt_dataset_check(&ds, 0), TT_ERR_ARG);
    tt_dataset_free(&ds);

    // Unreadable: only meaningful when not root (root reads anything).
    if (geteuid() != 0) {
        tt_test_write_file(path, sizeof path, tmpdir, "secret.txt", "abc", 3);
        ck_assert_int_eq(chmod(path, 0), 0);
        ck_assert_int_eq(tt_dataset_load(&ds, path, NULL, 0.9), TT_ERR_IO);
        ck_assert_msg(strstr(tt_last_error(), "Permission denied"), "%s", tt_last_error());
    }
    remove_tmpdir();
}
END_TEST

START_TEST(test_abort_batch_too_short) {
    tt_expect_abort("the val split has 10 tokens, fewer than T + 1 = 11");
    make_tmpdir();
    char path[128];
    pattern_file(path, sizeof path, 100);
    tt_text_dataset ds;
    tt_dataset_load(&ds, path, NULL, 0.9);
    remove_tmpdir();
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_tensor *x, *y;
    tt_dataset_batch(&ds, TT_SPLIT_VAL, 1, 10, &rng, &x, &y);  // val holds 10 < T + 1
}
END_TEST

// ---- a dataset of another tokenizer's ids ----

START_TEST(test_dataset_from_tokens) {
    int32_t ids[100];
    for (int i = 0; i < 100; i++) ids[i] = 50000 + i;  // ids beyond a char vocab
    tt_text_dataset ds;
    ck_assert_int_eq(tt_dataset_from_tokens(&ds, ids, 100, 90), TT_OK);
    ids[95] = -7;  // the dataset holds a copy
    ck_assert_int_eq(ds.n, 100);
    ck_assert_int_eq(ds.n_train, 90);
    ck_assert_int_eq(ds.vocab.size, 0);
    ck_assert_int_eq(ds.tokens[95], 50095);
    ck_assert_int_eq(tt_dataset_check(&ds, 9), TT_OK);  // val: 10 tokens = block 9 + 1
    ck_assert_int_eq(tt_dataset_check(&ds, 10), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "the val split has 10 tokens"), "%s", tt_last_error());
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_scope_begin();
    tt_tensor *x, *y;
    tt_dataset_batch(&ds, TT_SPLIT_VAL, 4, 9, &rng, &x, &y);  // (4, 9): the val split's ids
    const int32_t *xd = tt_data(x), *yd = tt_data(y);
    for (int b = 0; b < 4; b++) {
        ck_assert_int_eq(xd[b * 9], 50090);  // len - T = 1 window: the val split's first id
        for (int t = 0; t < 9; t++) {
            ck_assert_int_eq(xd[b * 9 + t], xd[b * 9] + t);
            ck_assert_int_eq(yd[b * 9 + t], xd[b * 9 + t] + 1);
        }
    }
    tt_scope_end();
    tt_dataset_free(&ds);
    ck_assert_int_eq(tt_dataset_from_tokens(&ds, NULL, 0, 0), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "no tokens"), "%s", tt_last_error());
}
END_TEST

START_TEST(test_abort_from_tokens_split) {
    tt_expect_abort("tt_dataset_from_tokens: n 4 and n_train 5 must satisfy 0 <= n_train <= n");
    int32_t ids[4] = {1, 2, 3, 4};
    tt_text_dataset ds;
    tt_dataset_from_tokens(&ds, ids, 4, 5);  // n_train > n
}
END_TEST

// ---- abort messages give the valid range ----

START_TEST(test_names_batch_split) {
    tt_expect_abort("tt_dataset_batch: invalid split 2; valid values are TT_SPLIT_TRAIN (0) and "
                    "TT_SPLIT_VAL (1)");
    tt_text_dataset ds;
    memset(&ds, 0, sizeof ds);
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_tensor *x, *y;
    tt_dataset_batch(&ds, (tt_data_split)2, 1, 4, &rng, &x, &y);
}
END_TEST

int main(void) {
    Suite *s = suite_create("data");
    TCase *tc = tt_tcase("vocab");
    tcase_add_test(tc, test_vocab_known_string);
    tcase_add_test(tc, test_vocab_all_bytes_round_trip);
    tcase_add_test(tc, test_vocab_errors);
    suite_add_tcase(s, tc);

    TCase *ds = tt_tcase("dataset");
    tcase_add_test(ds, test_dataset_split);
    tcase_add_test(ds, test_dataset_batches);
    tcase_add_test(ds, test_dataset_seeds_differ);
    tcase_add_test(ds, test_dataset_errors);
    tcase_add_test(ds, test_dataset_from_tokens);
    suite_add_tcase(s, ds);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_decode_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_batch_too_short, SIGABRT);
    suite_add_tcase(s, ab);

    TCase *an = tt_tcase_aborts("aborts_names");
    tcase_add_test_raise_signal(an, test_names_batch_split, SIGABRT);
    TCase *ag = tt_tcase_aborts("aborts_gptprog");
    tcase_add_test_raise_signal(ag, test_abort_from_tokens_split, SIGABRT);
    suite_add_tcase(s, an);
    suite_add_tcase(s, ag);
    return tt_test_run(s);
}

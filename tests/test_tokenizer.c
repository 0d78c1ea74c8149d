// Check suite of data/tokenizer.c: opening char / gpt2 / a vocab file by name, round trips of
// each (encode, token bytes, decode), the text dataset and its 90/10 split, the checkpoint
// entries (saved and loaded through a real file, old files without "tokenizer" as char), and
// the errors of a bad name, a byte outside a char vocab and a checkpoint's bad tokenizer.
// Needs `make data` (data/gpt2/, data/tinyshakespeare.txt); the Makefile builds it first.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"
#include "test_util.h"

static const char CORPUS[] = "data/tinyshakespeare.txt";

// Writes n bytes to path.
static void write_file(const char *path, const char *s, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(s, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

// encode, decode and the token bytes give text back.
static void check_round_trip(tt_tokenizer *t, const char *text) {
    size_t n = strlen(text), n_ids, len;
    int32_t *ids;
    ck_assert_int_eq(tt_tokenizer_encode(t, text, n, &ids, &n_ids), TT_OK);
    char *back = tt_tokenizer_decode(t, ids, n_ids, &len);
    ck_assert_uint_eq(len, n);
    ck_assert_mem_eq(back, text, n);
    size_t at = 0;
    for (size_t i = 0; i < n_ids; i++) {
        size_t k;
        const unsigned char *b = tt_tokenizer_token(t, ids[i], &k);
        ck_assert_mem_eq(b, text + at, k);
        at += k;
    }
    ck_assert_uint_eq(at, n);
    tt_free(back);
    tt_free(ids);
}

START_TEST(test_char_from_text) {
    char dir[64], path[128];
    tt_test_mkdtemp(dir, sizeof dir, "tok");
    snprintf(path, sizeof path, "%s/t.txt", dir);
    write_file(path, "hello world, hello!\n", 20);  // 20 bytes, 11 distinct
    tt_tokenizer t;
    ck_assert_int_eq(tt_tokenizer_open(&t, "char"), TT_OK);
    ck_assert_int_eq(t.kind, TT_TOKENIZER_CHAR);
    ck_assert_int_eq(t.n_vocab, 0);
    tt_text_dataset ds;
    ck_assert_int_eq(tt_tokenizer_load_text(&t, &ds, path, 0.9), TT_OK);
    ck_assert_int_eq(t.n_vocab, 11);  // "\n !,dehlorw"
    ck_assert_int_eq(ds.n, 20);
    ck_assert_int_eq(ds.n_train, 18);
    ck_assert_str_eq(tt_tokenizer_name(&t), "char");
    // ids in byte order: '\n' 0, ' ' 1, '!' 2, ',' 3, 'd' 4, 'e' 5, 'h' 6
    int32_t *ids;
    size_t n;
    ck_assert_int_eq(tt_tokenizer_encode(&t, "he\n", 3, &ids, &n), TT_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(ids[0], 6);
    ck_assert_int_eq(ids[1], 5);
    ck_assert_int_eq(ids[2], 0);
    tt_free(ids);
    check_round_trip(&t, "world, hello!");
    // A byte the vocab lacks: TT_ERR_ARG naming it and its position.
    ck_assert_int_eq(tt_tokenizer_encode(&t, "hex", 3, &ids, &n), TT_ERR_ARG);
    ck_assert_ptr_null(ids);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "'x'"));
    tt_dataset_free(&ds);
    tt_tokenizer_free(&t);
    tt_test_rmdir(dir);
}
END_TEST

START_TEST(test_gpt2) {
    tt_tokenizer t;
    ck_assert_int_eq(tt_tokenizer_open(&t, "gpt2"), TT_OK);
    ck_assert_int_eq(t.kind, TT_TOKENIZER_GPT2);
    ck_assert_int_eq(t.n_vocab, 50257);
    int32_t *ids;
    size_t n;
    ck_assert_int_eq(tt_tokenizer_encode(&t, "Hello world", 11, &ids, &n), TT_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ids[0], 15496);
    ck_assert_int_eq(ids[1], 995);
    tt_free(ids);
    check_round_trip(&t, "First Citizen:\nBefore we proceed any further, hear me speak.");
    // The dataset: the text split 90/10 by characters, each part encoded on its own.
    tt_text_dataset ds;
    ck_assert_int_eq(tt_tokenizer_load_text(&t, &ds, CORPUS, 0.9), TT_OK);
    ck_assert_int_eq(ds.n, 301966 + 36059);  // nanoGPT's shakespeare prepare.py counts
    ck_assert_int_eq(ds.n_train, 301966);
    tt_dataset_free(&ds);
    tt_tokenizer_free(&t);
}
END_TEST

START_TEST(test_vocab_file) {
    const char *text = "the cat sat on the mat; the cat ate the rat. the end";
    tt_bpe bpe;
    ck_assert_int_eq(tt_bpe_train(&bpe, text, strlen(text), 8), TT_OK);
    char dir[64], path[128];
    tt_test_mkdtemp(dir, sizeof dir, "tok");
    snprintf(path, sizeof path, "%s/v.bpe", dir);
    ck_assert_int_eq(tt_bpe_save(&bpe, path), TT_OK);
    tt_tokenizer t;
    ck_assert_int_eq(tt_tokenizer_open(&t, path), TT_OK);
    ck_assert_int_eq(t.kind, TT_TOKENIZER_FILE);
    ck_assert_int_eq(t.n_vocab, 256 + 8);
    ck_assert_str_eq(tt_tokenizer_name(&t), "file");
    // The same ids as the trained tokenizer.
    size_t n1, n2;
    int32_t *a = tt_bpe_encode(&bpe, text, strlen(text), TT_BPE_ORDINARY, &n1), *b;
    ck_assert_int_eq(tt_tokenizer_encode(&t, text, strlen(text), &b, &n2), TT_OK);
    ck_assert_uint_eq(n1, n2);
    ck_assert_uint_lt(n2, strlen(text));  // merges happened
    ck_assert_mem_eq(a, b, n1 * sizeof *a);
    tt_free(a);
    tt_free(b);
    check_round_trip(&t, "the cat, the rat and \xff\xfe bytes");
    tt_tokenizer_free(&t);
    tt_bpe_free(&bpe);
    tt_test_rmdir(dir);
}
END_TEST

START_TEST(test_open_errors) {
    tt_tokenizer t;
    ck_assert_int_eq(tt_tokenizer_open(&t, "/nonexistent/v.bpe"), TT_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "'/nonexistent/v.bpe' is not char, gpt2 nor "
                                                  "a readable vocab file"));
    ck_assert_int_eq(t.n_vocab, 0);
    char dir[64], path[128];
    tt_test_mkdtemp(dir, sizeof dir, "tok");
    snprintf(path, sizeof path, "%s/bad.bpe", dir);
    write_file(path, "not a vocab\n", 12);
    ck_assert_int_eq(tt_tokenizer_open(&t, path), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "not a tinytorch-bpe vocab file"));
    tt_tokenizer_free(&t);
    tt_test_rmdir(dir);
}
END_TEST

// Saves t into a checkpoint file and loads it back into out.
static void ckpt_round_trip(const tt_tokenizer *t, tt_tokenizer *out, const char *dir) {
    char path[128];
    snprintf(path, sizeof path, "%s/t.ckpt", dir);
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    tt_tokenizer_to_checkpoint(t, &ck);
    ck_assert_int_eq(tt_ckpt_save(&ck, path), TT_OK);
    tt_ckpt_free(&ck);
    ck_assert_int_eq(tt_ckpt_load(&ck, path), TT_OK);
    ck_assert_int_eq(tt_tokenizer_from_checkpoint(out, &ck, path), TT_OK);
    tt_ckpt_free(&ck);
}

START_TEST(test_checkpoint) {
    char dir[64];
    tt_test_mkdtemp(dir, sizeof dir, "tok");
    tt_tokenizer c, g, f, back;
    tt_char_vocab v;
    ck_assert_int_eq(tt_vocab_build(&v, (const unsigned char *)"abcab", 5), TT_OK);
    tt_tokenizer_init_char(&c, &v);
    ckpt_round_trip(&c, &back, dir);
    ck_assert(tt_tokenizer_equal(&c, &back));
    ck_assert_int_eq(back.n_vocab, 3);
    check_round_trip(&back, "cab");
    tt_tokenizer_free(&back);

    ck_assert_int_eq(tt_tokenizer_open(&g, "gpt2"), TT_OK);
    ckpt_round_trip(&g, &back, dir);
    ck_assert_int_eq(back.kind, TT_TOKENIZER_GPT2);
    ck_assert(tt_tokenizer_equal(&g, &back));
    ck_assert(!tt_tokenizer_equal(&g, &c));
    tt_tokenizer_free(&back);

    tt_bpe bpe;
    ck_assert_int_eq(tt_bpe_train(&bpe, "aaabdaaabac", 11, 3), TT_OK);
    char vpath[128];
    snprintf(vpath, sizeof vpath, "%s/v.bpe", dir);
    ck_assert_int_eq(tt_bpe_save(&bpe, vpath), TT_OK);
    tt_bpe_free(&bpe);
    ck_assert_int_eq(tt_tokenizer_open(&f, vpath), TT_OK);
    ckpt_round_trip(&f, &back, dir);  // the vocab travels whole: the file is not needed
    ck_assert_int_eq(back.kind, TT_TOKENIZER_FILE);
    ck_assert(tt_tokenizer_equal(&f, &back));
    check_round_trip(&back, "aaabdaaabac");
    tt_tokenizer_free(&back);
    tt_tokenizer_free(&f);
    tt_tokenizer_free(&g);
    tt_tokenizer_free(&c);
    tt_test_rmdir(dir);
}
END_TEST

START_TEST(test_checkpoint_errors) {
    tt_checkpoint ck;
    tt_tokenizer t;
    tt_ckpt_init(&ck);
    // An old file: no "tokenizer", the char vocab in "vocab".
    tt_ckpt_set_bytes(&ck, "vocab", "xyz", 3);
    ck_assert_int_eq(tt_tokenizer_from_checkpoint(&t, &ck, "old.ckpt"), TT_OK);
    ck_assert_int_eq(t.kind, TT_TOKENIZER_CHAR);
    ck_assert_int_eq(t.n_vocab, 3);
    tt_tokenizer_free(&t);
    tt_ckpt_set_bytes(&ck, "vocab", "xx", 2);  // a repeated byte
    ck_assert_int_eq(tt_tokenizer_from_checkpoint(&t, &ck, "a.ckpt"), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "checkpoint 'a.ckpt' has no valid 'vocab'"));
    tt_ckpt_set_bytes(&ck, "tokenizer", "file", 4);
    ck_assert_int_eq(tt_tokenizer_from_checkpoint(&t, &ck, "a.ckpt"), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "has no 'tokenizer.vocab'"));
    tt_ckpt_set_bytes(&ck, "tokenizer.vocab", "tinytorch-bpe 9\n", 16);
    ck_assert_int_eq(tt_tokenizer_from_checkpoint(&t, &ck, "a.ckpt"), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "checkpoint 'a.ckpt': its tokenizer.vocab: "
                                                  "tokenizer.vocab line 1: version"));
    tt_ckpt_set_bytes(&ck, "tokenizer", "wordpiece", 9);
    ck_assert_int_eq(tt_tokenizer_from_checkpoint(&t, &ck, "a.ckpt"), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "unknown tokenizer 'wordpiece'"));
    ck_assert_int_eq(t.n_vocab, 0);
    tt_ckpt_free(&ck);
}
END_TEST

START_TEST(test_abort_no_vocab) {
    tt_expect_abort("the char tokenizer has no vocab yet");
    tt_tokenizer t;
    tt_tokenizer_open(&t, "char");
    int32_t *ids;
    size_t n;
    tt_tokenizer_encode(&t, "a", 1, &ids, &n);
}
END_TEST

START_TEST(test_abort_token_range) {
    tt_expect_abort("token id 3 is outside the char vocab [0, 3)");
    tt_char_vocab v;
    tt_vocab_build(&v, (const unsigned char *)"abc", 3);
    tt_tokenizer t;
    tt_tokenizer_init_char(&t, &v);
    size_t len;
    tt_tokenizer_token(&t, 3, &len);
}
END_TEST

int main(void) {
    Suite *s = suite_create("tokenizer");
    TCase *tc = tt_tcase("tokenizer");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_char_from_text);
    tcase_add_test(tc, test_gpt2);
    tcase_add_test(tc, test_vocab_file);
    tcase_add_test(tc, test_open_errors);
    tcase_add_test(tc, test_checkpoint);
    tcase_add_test(tc, test_checkpoint_errors);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts_tokenizer");
    tcase_add_test_raise_signal(ab, test_abort_no_vocab, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_token_range, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

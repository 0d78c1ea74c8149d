// Check suite of data/path.c and the tokenizer's safetensors metadata (data/tokenizer.c):
// tt_data_path's places in order ($TINYTORCH_DATA first, then the source tree for a program
// run from it), its miss naming every place and the fix, its argument errors, "gpt2" opened
// through it; tt_tokenizer_metadata's exact strings and their round trip through a real
// safetensors file (char, trained vocab, gpt2, none), and the errors of bad metadata; the
// aborts of a NULL name and of metadata that is not key, value pairs (tt_gpt_save_hf_meta).
// Needs `make data` (data/gpt2/); the Makefile builds it first.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/tokenizer.h"
#include "models/gpt/gpt.h"
#include "test_util.h"

// Writes the NUL-terminated s to path.
static void write_text(const char *path, const char *s) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(s, 1, strlen(s), f), strlen(s));
    ck_assert_int_eq(fclose(f), 0);
}

// ---- tt_data_path ----

START_TEST(test_env_first) {
    char dir[64], sub[128], want[192], got[4096];
    tt_test_mkdtemp(dir, sizeof dir, "dpath");
    snprintf(sub, sizeof sub, "%s/gpt2", dir);
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    snprintf(want, sizeof want, "%s/gpt2/encoder.json", dir);
    write_text(want, "{}");
    setenv(TT_DATA_ENV, dir, 1);
    // The source tree holds gpt2/encoder.json too (make data): the variable wins.
    ck_assert_int_eq(tt_data_path("gpt2/encoder.json", got, sizeof got), TT_OK);
    ck_assert_str_eq(got, want);
    // A name the variable's folder lacks comes from the source tree (this suite runs in it).
    ck_assert_int_eq(tt_data_path("gpt2/vocab.bpe", got, sizeof got), TT_OK);
    const char *tail = "/data/gpt2/vocab.bpe";
    ck_assert_uint_gt(strlen(got), strlen(tail));
    ck_assert_str_eq(got + strlen(got) - strlen(tail), tail);
    ck_assert_str_ne(got, "data/gpt2/vocab.bpe");  // absolute: not the working directory's
    ck_assert_int_eq(got[0], '/');
    unsetenv(TT_DATA_ENV);
    tt_test_rmdir(dir);
}
END_TEST

START_TEST(test_miss_names_places) {
    char dir[64], got[4096], want[192];
    tt_test_mkdtemp(dir, sizeof dir, "dpath");
    setenv(TT_DATA_ENV, dir, 1);
    ck_assert_int_eq(tt_data_path("no/such_file.txt", got, sizeof got), TT_ERR_IO);
    ck_assert_str_eq(got, "");
    const char *e = tt_last_error();
    snprintf(want, sizeof want, "looked in %s/no/such_file.txt ($TINYTORCH_DATA), ", dir);
    ck_assert_ptr_nonnull(strstr(e, "data file 'no/such_file.txt' not found: "));
    ck_assert_ptr_nonnull(strstr(e, want));
    ck_assert_ptr_nonnull(strstr(e, "/share/tinytorch/no/such_file.txt (the install location)"));
    ck_assert_ptr_nonnull(strstr(e, "/data/no/such_file.txt (the source tree)"));
    ck_assert_ptr_nonnull(strstr(e, "; run `make install` (or `make data` in the source tree), "
                                    "or set TINYTORCH_DATA to a folder that holds "
                                    "no/such_file.txt"));
    ck_assert_ptr_null(strchr(e, '\n'));
    unsetenv(TT_DATA_ENV);
    ck_assert_int_eq(tt_data_path("no/such_file.txt", got, sizeof got), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "looked in $TINYTORCH_DATA (not set), "));
    setenv(TT_DATA_ENV, "", 1);  // empty is unset
    ck_assert_int_eq(tt_data_path("no/such_file.txt", got, sizeof got), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "looked in $TINYTORCH_DATA (not set), "));
    unsetenv(TT_DATA_ENV);
    tt_test_rmdir(dir);
}
END_TEST

START_TEST(test_bad_names) {
    char got[4096], small[8];
    ck_assert_int_eq(tt_data_path("/etc/passwd", got, sizeof got), TT_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "'/etc/passwd' is not a relative file name"));
    ck_assert_int_eq(tt_data_path("", got, sizeof got), TT_ERR_ARG);
    ck_assert_int_eq(tt_data_path("gpt2/encoder.json", small, sizeof small), TT_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "is longer than the 8 bytes given"));
}
END_TEST

// "gpt2" reads its files where tt_data_path finds them: a broken copy under $TINYTORCH_DATA is
// the one read (and named), not the source tree's good one.
START_TEST(test_gpt2_through_lookup) {
    char dir[64], sub[128], path[192];
    tt_test_mkdtemp(dir, sizeof dir, "dpath");
    snprintf(sub, sizeof sub, "%s/gpt2", dir);
    ck_assert_int_eq(mkdir(sub, 0777), 0);
    snprintf(path, sizeof path, "%s/gpt2/encoder.json", dir);
    write_text(path, "not json");
    snprintf(path, sizeof path, "%s/gpt2/vocab.bpe", dir);
    write_text(path, "#version: 0.2\n");
    setenv(TT_DATA_ENV, dir, 1);
    tt_tokenizer t;
    ck_assert_int_ne(tt_tokenizer_open(&t, "gpt2"), TT_OK);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), sub));
    unsetenv(TT_DATA_ENV);
    ck_assert_int_eq(tt_tokenizer_open(&t, "gpt2"), TT_OK);
    ck_assert_int_eq(t.n_vocab, 50257);
    tt_tokenizer_free(&t);
    tt_test_rmdir(dir);
}
END_TEST

// ---- the tokenizer in safetensors metadata ----

// Saves a one-tensor safetensors file with metadata kv at path and opens it into f.
static void save_and_open(const char *path, const char *const *kv, tt_safetensors *f) {
    tt_params p;
    tt_params_init(&p);
    tt_tensor *w = tt_zeros(TT_F32, 1, (int64_t[]){2});
    tt_params_add(&p, NULL, "w", w);
    ck_assert_int_eq(tt_safetensors_save(path, &p, kv, TT_ST_F32), TT_OK);
    tt_params_free(&p);
    tt_release(w);
    ck_assert_int_eq(tt_safetensors_open(f, path), TT_OK);
}

// t's metadata saved in a file and read back: found, and the same tokenizer.
static void check_meta_round_trip(const tt_tokenizer *t, const char *path) {
    const char **kv = tt_tokenizer_metadata(t);
    tt_safetensors f;
    save_and_open(path, kv, &f);
    tt_free(kv);
    tt_tokenizer back;
    bool found = false;
    ck_assert_int_eq(tt_tokenizer_from_metadata(&back, &f, &found), TT_OK);
    ck_assert(found);
    ck_assert(tt_tokenizer_equal(&back, t));
    ck_assert_int_eq(back.n_vocab, t->n_vocab);
    tt_tokenizer_free(&back);
    tt_safetensors_close(&f);
}

START_TEST(test_meta_char) {
    char dir[64], path[128];
    tt_test_mkdtemp(dir, sizeof dir, "meta");
    snprintf(path, sizeof path, "%s/t.txt", dir);
    write_text(path, "ba\nab\xff");
    tt_tokenizer t;
    tt_text_dataset ds;
    ck_assert_int_eq(tt_tokenizer_open(&t, "char"), TT_OK);
    ck_assert_int_eq(tt_tokenizer_load_text(&t, &ds, path, 0.5), TT_OK);
    tt_dataset_free(&ds);
    const char **kv = tt_tokenizer_metadata(&t);
    ck_assert_str_eq(kv[0], "tokenizer");
    ck_assert_str_eq(kv[1], "char");
    ck_assert_str_eq(kv[2], "tokenizer.vocab_hex");
    ck_assert_str_eq(kv[3], "0a6162ff");  // the distinct bytes in id order
    ck_assert_ptr_null(kv[4]);
    tt_free(kv);
    snprintf(path, sizeof path, "%s/c.safetensors", dir);
    check_meta_round_trip(&t, path);
    tt_tokenizer_free(&t);
    tt_test_rmdir(dir);
}
END_TEST

START_TEST(test_meta_file_and_gpt2) {
    const char *text = "the cat sat on the mat; the cat ate the rat. the end";
    tt_bpe bpe;
    ck_assert_int_eq(tt_bpe_train(&bpe, text, strlen(text), 8), TT_OK);
    char dir[64], path[128];
    tt_test_mkdtemp(dir, sizeof dir, "meta");
    snprintf(path, sizeof path, "%s/v.bpe", dir);
    ck_assert_int_eq(tt_bpe_save(&bpe, path), TT_OK);
    tt_bpe_free(&bpe);
    tt_tokenizer t;
    ck_assert_int_eq(tt_tokenizer_open(&t, path), TT_OK);
    const char **kv = tt_tokenizer_metadata(&t);
    ck_assert_str_eq(kv[1], "file");
    ck_assert_uint_eq(strlen(kv[3]), 2 * t.file_len);
    ck_assert_int_eq(strncmp(kv[3], "74696e79", 8), 0);  // the file starts "tiny"
    tt_free(kv);
    snprintf(path, sizeof path, "%s/v.safetensors", dir);
    check_meta_round_trip(&t, path);
    tt_tokenizer_free(&t);

    ck_assert_int_eq(tt_tokenizer_open(&t, "gpt2"), TT_OK);
    kv = tt_tokenizer_metadata(&t);
    ck_assert_str_eq(kv[1], "gpt2");
    ck_assert_ptr_null(kv[2]);  // GPT-2's vocab is one: only its name
    tt_free(kv);
    snprintf(path, sizeof path, "%s/g.safetensors", dir);
    check_meta_round_trip(&t, path);
    tt_tokenizer_free(&t);
    tt_test_rmdir(dir);
}
END_TEST

// A file without "tokenizer" (Hugging Face's) is not an error: found is false.
START_TEST(test_meta_absent) {
    char dir[64], path[128];
    tt_test_mkdtemp(dir, sizeof dir, "meta");
    snprintf(path, sizeof path, "%s/hf.safetensors", dir);
    tt_safetensors f;
    save_and_open(path, (const char *[]){"format", "pt", NULL}, &f);
    tt_tokenizer t;
    bool found = true;
    ck_assert_int_eq(tt_tokenizer_from_metadata(&t, &f, &found), TT_OK);
    ck_assert(!found);
    ck_assert_int_eq(t.n_vocab, 0);
    tt_safetensors_close(&f);
    tt_test_rmdir(dir);
}
END_TEST

// Bad metadata: TT_ERR_FORMAT naming the file and the problem.
static void expect_meta_error(const char *dir, const char *const *kv, const char *want) {
    char path[128];
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    tt_safetensors f;
    save_and_open(path, kv, &f);
    tt_tokenizer t;
    bool found = false;
    ck_assert_int_eq(tt_tokenizer_from_metadata(&t, &f, &found), TT_ERR_FORMAT);
    ck_assert(found);
    ck_assert_msg(strstr(tt_last_error(), want) && strstr(tt_last_error(), path),
                  "'%s' lacks '%s' or the path", tt_last_error(), want);
    ck_assert_int_eq(t.n_vocab, 0);
    tt_safetensors_close(&f);
}

START_TEST(test_meta_errors) {
    char dir[64];
    tt_test_mkdtemp(dir, sizeof dir, "meta");
    const char *hex = "tokenizer.vocab_hex";
    expect_meta_error(dir, (const char *[]){"tokenizer", "char", NULL},
                      "tokenizer.vocab_hex is missing, empty or not hex digits");
    expect_meta_error(dir, (const char *[]){"tokenizer", "char", hex, "616", NULL},
                      "is missing, empty or not hex digits");
    expect_meta_error(dir, (const char *[]){"tokenizer", "char", hex, "6g", NULL},
                      "is missing, empty or not hex digits");
    expect_meta_error(dir, (const char *[]){"tokenizer", "char", hex, "6161", NULL},
                      "is not a valid char vocab");
    expect_meta_error(dir, (const char *[]){"tokenizer", "file", hex, "6161", NULL},
                      "is not a valid trained vocab");
    expect_meta_error(dir, (const char *[]){"tokenizer", "sentencepiece", NULL},
                      "unknown tokenizer 'sentencepiece' in its metadata");
    tt_test_rmdir(dir);
}
END_TEST

START_TEST(test_abort_meta_no_vocab) {
    tt_expect_abort("has no vocab to put in metadata yet");
    tt_tokenizer t;
    tt_tokenizer_open(&t, "char");
    tt_tokenizer_metadata(&t);
}
END_TEST

START_TEST(test_abort_data_path_null) {
    tt_expect_abort("name and buf (size > 0) must be given");
    char buf[16];
    tt_data_path(NULL, buf, sizeof buf);
}
END_TEST

// Metadata for tt_gpt_save_hf_meta comes in key, value pairs.
START_TEST(test_abort_odd_metadata) {
    tt_expect_abort("holds 3 strings before its NULL; give key, value pairs");
    tt_gpt_config c;
    ck_assert_int_eq(tt_gpt_config_preset("gpt2", &c), TT_OK);
    c.n_layer = 1, c.n_embd = 8, c.n_head = c.n_kv_head = 2, c.block_size = 4, c.vocab_size = 5;
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    tt_gpt_save_hf_meta(&m, "/tmp/tt_never_written.safetensors", TT_ST_F32,
                        (const char *[]){"tokenizer", "char", "tokenizer.vocab_hex", NULL});
}
END_TEST

int main(void) {
    Suite *s = suite_create("data_files");
    TCase *tc = tt_tcase("data_files");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_env_first);
    tcase_add_test(tc, test_miss_names_places);
    tcase_add_test(tc, test_bad_names);
    tcase_add_test(tc, test_gpt2_through_lookup);
    tcase_add_test(tc, test_meta_char);
    tcase_add_test(tc, test_meta_file_and_gpt2);
    tcase_add_test(tc, test_meta_absent);
    tcase_add_test(tc, test_meta_errors);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts_data_files");
    tcase_add_test_raise_signal(ab, test_abort_meta_no_vocab, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_data_path_null, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_odd_metadata, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

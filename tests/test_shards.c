// Check suite of data/shards.h: shards written and read back (the split rule, the file names,
// the header bytes, the separator between documents, uint32 tokens), reads across shard
// boundaries, batches equal to an in-memory dataset's, nanoGPT's headerless files, globs, the
// removal of an earlier run's extra shards, and one-line errors for corrupt, truncated and
// misnamed files and for ids beyond a vocabulary.
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

static char tmpdir[64];

// Writes the documents docs[0 .. n_docs) (each a list of lens[d] ids) as shards "c" in tmpdir.
static tt_shards_written write_docs(const int32_t *const *docs, const size_t *lens, int n_docs,
                                    int width, int64_t shard_tokens, int32_t eot) {
    tt_shard_writer *w;
    tt_shard_writer_opts o = {width, shard_tokens, 0.9, eot};
    ck_assert_int_eq(tt_shard_writer_open(&w, tmpdir, "c", &o), TT_OK);
    for (int d = 0; d < n_docs; d++)
        ck_assert_int_eq(tt_shard_writer_add(w, docs[d], lens[d]), TT_OK);
    tt_shards_written out;
    ck_assert_int_eq(tt_shard_writer_finish(w, &out), TT_OK);
    return out;
}

// The ids 0 .. n - 1 as one document.
static tt_shards_written write_range(int n, int64_t shard_tokens) {
    int32_t ids[256];
    for (int i = 0; i < n; i++) ids[i] = i;
    size_t len = (size_t)n;
    return write_docs((const int32_t *const[]){ids}, &len, 1, 2, shard_tokens, -1);
}

static void setup_dir(void) { tt_test_mkdtemp(tmpdir, sizeof tmpdir, "shards"); }
static void teardown_dir(void) { tt_test_rmdir(tmpdir); }

// ---- writing ----

START_TEST(test_write_split_and_names) {
    tt_shards_written w = write_range(10, 4);  // 9 train (int(10 * 0.9)), 1 val
    ck_assert_int_eq(w.n_tokens, 10);
    ck_assert_int_eq(w.n_train, 9);
    ck_assert_int_eq(w.n_val, 1);
    ck_assert_int_eq(w.n_val_files, 1);
    ck_assert_int_eq(w.n_train_files, 3);  // 4 + 4 + 1
    ck_assert_int_eq(w.max_id, 9);
    ck_assert_int_eq(tt_test_count_files(tmpdir, "c_val_000000.bin"), 1);
    ck_assert_int_eq(tt_test_count_files(tmpdir, "c_train_00000"), 3);  // 000001 .. 000003
    ck_assert_int_eq(tt_test_count_files(tmpdir, "c_train_000003.bin"), 1);
    ck_assert_int_eq(tt_test_count_files(tmpdir, ""), 4);  // no temp file left
    // The header: magic, version 1, count; zeros; then uint16 tokens 8 and 9's neighbours.
    char path[128];
    snprintf(path, sizeof path, "%s/c_train_000003.bin", tmpdir);
    unsigned char *b;
    size_t n;
    ck_assert_int_eq(tt_read_file(path, &b, &n), TT_OK);
    ck_assert_uint_eq(n, 1024 + 2);
    const unsigned char head[12] = {0x88, 0xD8, 0x34, 0x01, 1, 0, 0, 0, 1, 0, 0, 0};
    ck_assert_mem_eq(b, head, 12);  // 20240520 = 0x0134D888
    for (size_t i = 12; i < 1024; i++) ck_assert_int_eq(b[i], 0);
    ck_assert_int_eq(b[1024], 8);
    ck_assert_int_eq(b[1025], 0);
    free(b);
}
END_TEST

START_TEST(test_write_separator_between_documents) {
    const int32_t a[] = {5, 6}, c[] = {7}, e[] = {8, 9, 10};
    size_t lens[] = {2, 1, 3};
    tt_shards_written w = write_docs((const int32_t *const[]){a, c, e}, lens, 3, 2, 100, 3);
    ck_assert_int_eq(w.n_tokens, 8);  // 5 6 | 3 7 | 3 8 9 10
    tt_token_shards s;
    ck_assert_int_eq(tt_shards_open(&s, tmpdir), TT_OK);
    int32_t got[8];
    ck_assert_int_eq(s.n[TT_SPLIT_TRAIN], 7);  // int(8 * 0.9)
    tt_shards_read(&s, TT_SPLIT_TRAIN, 0, 7, got);
    tt_shards_read(&s, TT_SPLIT_VAL, 0, 1, got + 7);
    const int32_t want[8] = {5, 6, 3, 7, 3, 8, 9, 10};
    ck_assert_mem_eq(got, want, sizeof want);
    tt_shards_close(&s);
}
END_TEST

START_TEST(test_write_uint32_tokens) {
    const int32_t ids[] = {70000, 1, 65536, 2, 3, 4, 5, 6, 7, 8};
    size_t len = 10;
    write_docs((const int32_t *const[]){ids}, &len, 1, 4, 100, -1);
    char path[128];
    unsigned char *b;
    size_t n;
    snprintf(path, sizeof path, "%s/c_train_000001.bin", tmpdir);
    ck_assert_int_eq(tt_read_file(path, &b, &n), TT_OK);
    ck_assert_uint_eq(n, 1024 + 9 * 4);
    ck_assert_int_eq(b[4], TT_SHARD_VERSION_U32);
    free(b);
    tt_token_shards s;
    ck_assert_int_eq(tt_shards_open(&s, tmpdir), TT_OK);
    int32_t got[3];
    tt_shards_read(&s, TT_SPLIT_TRAIN, 0, 3, got);
    ck_assert_int_eq(got[0], 70000);
    ck_assert_int_eq(got[2], 65536);
    ck_assert_int_eq(tt_shards_check_ids(&s, 70001), TT_OK);
    ck_assert_int_eq(tt_shards_check_ids(&s, 70000), TT_ERR_MISMATCH);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "holds id 70000 at token 0"));
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "c_train_000001.bin"));
    tt_shards_close(&s);
}
END_TEST

START_TEST(test_write_errors) {
    tt_shard_writer *w;
    tt_shard_writer_opts o = {2, 100, 0.9, -1};
    ck_assert_int_eq(tt_shard_writer_open(&w, tmpdir, "c", &o), TT_OK);
    const int32_t big[] = {1, 65536};
    ck_assert_int_eq(tt_shard_writer_add(w, big, 2), TT_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "id 65536 at position 1"));
    const int32_t one[] = {1};
    ck_assert_int_eq(tt_shard_writer_add(w, one, 1), TT_OK);
    tt_shards_written out;
    ck_assert_int_eq(tt_shard_writer_finish(w, &out), TT_ERR_ARG);  // 1 token: no val split
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "1 tokens, too few"));
    ck_assert_int_eq(tt_test_count_files(tmpdir, ""), 0);  // the temp file is gone
    char missing[128];
    snprintf(missing, sizeof missing, "%s/none", tmpdir);
    ck_assert_int_eq(tt_shard_writer_open(&w, missing, "c", &o), TT_ERR_IO);
    ck_assert_ptr_null(w);
}
END_TEST

START_TEST(test_write_removes_stale_shards) {
    write_range(40, 2);  // 2 val files, 18 train files
    ck_assert_int_eq(tt_test_count_files(tmpdir, "c_val_"), 2);
    ck_assert_int_eq(tt_test_count_files(tmpdir, "c_"), 20);
    char other[128];
    tt_test_write_file(other, sizeof other, tmpdir, "d_train_000005.bin", "x",
                       1);  // another name: kept
    tt_shards_written w = write_range(40, 100);
    ck_assert_int_eq(w.n_val_files + w.n_train_files, 2);
    ck_assert_int_eq(tt_test_count_files(tmpdir, "c_"), 2);  // c_val_000001.bin went too
    ck_assert_int_eq(tt_test_count_files(tmpdir, "c_val_000000.bin"), 1);
    ck_assert_int_eq(tt_test_count_files(tmpdir, "c_train_000001.bin"), 1);
    ck_assert_int_eq(tt_test_count_files(tmpdir, "d_"), 1);
}
END_TEST

// ---- reading ----

START_TEST(test_read_across_shards) {
    write_range(50, 7);  // train 45 in 7 files, val 5
    tt_token_shards s;
    ck_assert_int_eq(tt_shards_open(&s, tmpdir), TT_OK);
    ck_assert_int_eq(s.n_shards, 8);
    ck_assert_int_eq(s.n_train_shards, 7);
    ck_assert_int_eq(s.n[TT_SPLIT_TRAIN], 45);
    ck_assert_int_eq(s.n[TT_SPLIT_VAL], 5);
    int32_t got[45];
    for (int64_t start = 0; start < 45; start += 5) {
        int64_t n = 45 - start < 20 ? 45 - start : 20;
        tt_shards_read(&s, TT_SPLIT_TRAIN, start, n, got);
        for (int64_t k = 0; k < n; k++) ck_assert_int_eq(got[k], start + k);
    }
    tt_shards_read(&s, TT_SPLIT_VAL, 1, 4, got);
    ck_assert_int_eq(got[0], 46);
    ck_assert_int_eq(got[3], 49);
    tt_shards_close(&s);
}
END_TEST

// The same seed draws the same batches from shards as from the tokens in memory.
START_TEST(test_batches_equal_in_memory) {
    int32_t ids[200];
    for (int i = 0; i < 200; i++) ids[i] = (i * 37) % 101;
    size_t len = 200;
    write_docs((const int32_t *const[]){ids}, &len, 1, 2, 13, -1);
    tt_text_dataset mem, sh;
    ck_assert_int_eq(tt_dataset_from_tokens(&mem, ids, 200, 180), TT_OK);
    ck_assert_int_eq(tt_dataset_open_shards(&sh, tmpdir, 101), TT_OK);
    ck_assert_int_eq(sh.n, 200);
    ck_assert_int_eq(sh.n_train, 180);
    for (int split = 0; split < 2; split++) {
        tt_rng r1, r2;
        tt_rng_seed(&r1, 7);
        tt_rng_seed(&r2, 7);
        tt_scope_begin();
        tt_tensor *x1, *y1, *x2, *y2;
        tt_dataset_batch(&mem, (tt_data_split)split, 6, 9, &r1, &x1, &y1);
        tt_dataset_batch(&sh, (tt_data_split)split, 6, 9, &r2, &x2, &y2);
        ck_assert_mem_eq(tt_data(x1), tt_data(x2), 6 * 9 * sizeof(int32_t));
        ck_assert_mem_eq(tt_data(y1), tt_data(y2), 6 * 9 * sizeof(int32_t));
        tt_scope_end();
    }
    tt_dataset_free(&mem);
    tt_dataset_free(&sh);
    ck_assert_ptr_null(sh.shards);
    ck_assert_int_eq(tt_dataset_open_shards(&sh, tmpdir, 100), TT_ERR_MISMATCH);  // id 100
    ck_assert_ptr_null(sh.shards);
}
END_TEST

START_TEST(test_read_headerless_and_glob) {
    const uint16_t tr[] = {1, 2, 3, 4, 5}, va[] = {6, 7};
    char path[128];
    tt_test_write_file(path, sizeof path, tmpdir, "train.bin", tr, sizeof tr);
    tt_test_write_file(path, sizeof path, tmpdir, "val.bin", va, sizeof va);
    tt_test_write_file(path, sizeof path, tmpdir, "notes.txt", "x",
                       1);  // not a shard: skipped in a directory
    tt_token_shards s;
    ck_assert_int_eq(tt_shards_open(&s, tmpdir), TT_OK);
    ck_assert_int_eq(s.n[TT_SPLIT_TRAIN], 5);
    ck_assert_int_eq(s.n[TT_SPLIT_VAL], 2);
    int32_t got[2];
    tt_shards_read(&s, TT_SPLIT_VAL, 0, 2, got);
    ck_assert_int_eq(got[0], 6);
    ck_assert_int_eq(got[1], 7);
    tt_shards_close(&s);
    char pattern[128];
    snprintf(pattern, sizeof pattern, "%s/*.bin", tmpdir);
    ck_assert_int_eq(tt_shards_open(&s, pattern), TT_OK);
    ck_assert_int_eq(s.n_shards, 2);
    tt_shards_close(&s);
    snprintf(pattern, sizeof pattern, "%s/*", tmpdir);  // notes.txt matches
    ck_assert_int_eq(tt_shards_open(&s, pattern), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "notes.txt"));
    snprintf(pattern, sizeof pattern, "%s/*.none", tmpdir);
    ck_assert_int_eq(tt_shards_open(&s, pattern), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "no file matches"));
    tt_test_write_file(path, sizeof path, tmpdir, "val.bin", va, 3);  // an odd size
    ck_assert_int_eq(tt_shards_open(&s, tmpdir), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "odd size (3 bytes)"));
}
END_TEST

START_TEST(test_name_split) {
    tt_data_split sp;
    bool hl;
    ck_assert(tt_shard_name_split("d/x_train_000001.bin", &sp, &hl) && sp == TT_SPLIT_TRAIN && !hl);
    ck_assert(tt_shard_name_split("tiny_shakespeare_val.bin", &sp, &hl) && sp == TT_SPLIT_VAL);
    ck_assert(tt_shard_name_split("a/val.bin", &sp, &hl) && sp == TT_SPLIT_VAL && hl);
    ck_assert(tt_shard_name_split("my_val_data_train_000002.bin", &sp, &hl) &&
              sp == TT_SPLIT_TRAIN);  // the last mark wins
    ck_assert(!tt_shard_name_split("x_training.bin", &sp, &hl));
    ck_assert(!tt_shard_name_split("x_train_000001.txt", &sp, &hl));
    ck_assert(!tt_shard_name_split("train.bin/x", &sp, &hl));
}
END_TEST

// A header (magic, version, count) and n_bytes of tokens.
static const char *put_shard(char *path, uint32_t magic, uint32_t version, uint32_t count,
                             size_t n_bytes) {
    size_t size = 1024 + n_bytes;
    unsigned char *b = calloc(1, size);
    uint32_t h[3] = {magic, version, count};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++) b[4 * k + i] = (unsigned char)(h[k] >> (8 * i));
    tt_test_write_file(path, 128, tmpdir, "x_train_000001.bin", b, size);
    free(b);
    return path;
}

// spec fails with TT_ERR_FORMAT and a one-line message holding path and want.
static void expect_format(const char *spec, const char *path, const char *want) {
    tt_token_shards s;
    ck_assert_int_eq(tt_shards_open(&s, spec), TT_ERR_FORMAT);
    const char *m = tt_last_error();
    ck_assert_msg(strstr(m, want) && strstr(m, path) && !strchr(m, '\n'), "message: %s", m);
    ck_assert_int_eq(s.n_shards, 0);
}

START_TEST(test_corrupt_shards) {
    char path[128];
    put_shard(path, TT_SHARD_MAGIC, 1, 5, 10);
    tt_token_shards s;
    ck_assert_int_eq(tt_shards_open(&s, path), TT_OK);  // a valid one first
    ck_assert_int_eq(s.n[TT_SPLIT_TRAIN], 5);
    tt_shards_close(&s);
    put_shard(path, 20240521, 1, 5, 10);
    expect_format(path, path, "starts with 20240521, not the magic 20240520");
    put_shard(path, TT_SHARD_MAGIC, 3, 5, 10);
    expect_format(path, path, "has version 3");
    put_shard(path, TT_SHARD_MAGIC, 1, 6, 10);  // a truncated file: 5 of 6 tokens
    expect_format(path, path, "is 1034 bytes but its header counts 6 tokens of 2 bytes");
    put_shard(path, TT_SHARD_MAGIC, 2, 5, 10);  // uint32: 20 bytes wanted
    expect_format(tmpdir, path, "counts 5 tokens of 4 bytes (1044 bytes)");
    put_shard(path, TT_SHARD_MAGIC, 1, 0xFFFFFFFFu, 10);
    expect_format(path, path, "header counts 4294967295 tokens");
    tt_test_write_file(path, sizeof path, tmpdir, "x_train_000001.bin", "abc", 3);
    expect_format(path, path, "shorter than its 1024-byte header");
    char other[128];
    snprintf(other, sizeof other, "%s/plain.txt", tmpdir);
    tt_test_write_file(other, sizeof other, tmpdir, "plain.txt", "abc", 3);
    ck_assert_int_eq(tt_shards_open(&s, other), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "is not named as a token shard"));
    unlink(other);
    unlink(path);
    ck_assert_int_eq(tt_shards_open(&s, tmpdir), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "holds no token shards"));
}
END_TEST

START_TEST(test_tokenizer_file) {
    tt_char_vocab v;
    ck_assert_int_eq(tt_vocab_build(&v, (const unsigned char *)"hello", 5), TT_OK);
    tt_tokenizer t, back;
    tt_tokenizer_init_char(&t, &v);
    char path[128];
    snprintf(path, sizeof path, "%s/tokenizer.ckpt", tmpdir);
    ck_assert_int_eq(tt_tokenizer_save(&t, path), TT_OK);
    ck_assert_int_eq(tt_tokenizer_load(&back, path), TT_OK);
    ck_assert(tt_tokenizer_equal(&t, &back));
    ck_assert_int_eq(back.n_vocab, 4);
    tt_tokenizer_free(&t);
    tt_tokenizer_free(&back);
    snprintf(path, sizeof path, "%s/none.ckpt", tmpdir);
    ck_assert_int_eq(tt_tokenizer_load(&back, path), TT_ERR_IO);
}
END_TEST

int main(void) {
    Suite *s = suite_create("shards");
    TCase *w = tt_tcase("write");
    tcase_add_checked_fixture(w, setup_dir, teardown_dir);
    tcase_add_test(w, test_write_split_and_names);
    tcase_add_test(w, test_write_separator_between_documents);
    tcase_add_test(w, test_write_uint32_tokens);
    tcase_add_test(w, test_write_errors);
    tcase_add_test(w, test_write_removes_stale_shards);
    suite_add_tcase(s, w);
    TCase *r = tt_tcase("read");
    tcase_add_checked_fixture(r, setup_dir, teardown_dir);
    tcase_add_test(r, test_read_across_shards);
    tcase_add_test(r, test_batches_equal_in_memory);
    tcase_add_test(r, test_read_headerless_and_glob);
    tcase_add_test(r, test_name_split);
    tcase_add_test(r, test_corrupt_shards);
    tcase_add_test(r, test_tokenizer_file);
    suite_add_tcase(s, r);
    return tt_test_run(s);
}

// Check suite of nn/checkpoint.h: round trips of metadata and tensors (every dtype, 0-dim,
// empty, strided views), restore_params and its mismatch errors, the strict loader (every
// truncation, every header bit flip, blob corruption, hand-built malformed files), atomic save
// failures that leave the old file intact, and the tensor hash / parameter fingerprint.
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "test_util.h"

// ---- temp files ----

static char tmpdir[64];

static void make_tmpdir(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tt_test_ckpt_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    return buf;
}

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void write_all(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

static int count_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

// Recomputes the header checksum after a test edits the header.
static void rehash(unsigned char *b) {
    uint64_t hs = le64(b + 16);
    put64(b + hs - 8, XXH3_64bits(b, hs - 8));
}

// ---- round trip ----

static void assert_same_tensor(const tt_tensor *a, const tt_tensor *b) {
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(a->dtype, b->dtype);
    ck_assert_msg(tt_same_shape(a, b), "shapes differ");
    for (int64_t i = 0; i < tt_numel(a); i++) {
        double x = tt_at(a, i), y = tt_at(b, i);
        ck_assert_msg(memcmp(&x, &y, 8) == 0, "element %lld: %.17g vs %.17g", (long long)i, x, y);
    }
    ck_assert_uint_eq(tt_tensor_hash(a), tt_tensor_hash(b));
}

START_TEST(test_round_trip) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "rt.ckpt");
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_scope_begin();
    tt_tensor *f32 = tt_randn(&rng, TT_F32, TT_SHAPE(3, 5));
    tt_tensor *f64 = tt_scalar(TT_F64, -1.0 / 3.0);
    tt_tensor *i32 = tt_zeros(TT_I32, TT_SHAPE(0, 4));
    tt_tensor *i64 = tt_arange(TT_I64, -3, 1e12, 1e11);
    ((int64_t *)tt_data(i64))[0] = INT64_MIN + 1;  // beyond doubles' integers: kept exactly
    tt_tensor *view = tt_transpose(tt_randn(&rng, TT_F64, TT_SHAPE(4, 3)), 0, 1);  // strided
    tt_tensor *big = tt_randn(&rng, TT_F32, TT_SHAPE(2, 3, 4, 5));

    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_set_i64(&c, "step", 41);
    tt_ckpt_set_i64(&c, "step", 42);  // replaced
    tt_ckpt_set_i64(&c, "neg", INT64_MIN);
    tt_ckpt_set_f64(&c, "loss", 1.8765432109876543);
    tt_ckpt_set_f64(&c, "nan", NAN);
    tt_ckpt_set_bytes(&c, "vocab", "\n !abc\xff", 8);
    tt_ckpt_set_bytes(&c, "empty", NULL, 0);
    tt_ckpt_set_bytes(&c, "loss2", "x", 1);
    tt_ckpt_set_f64(&c, "loss2", 2.5);  // a key can change type
    tt_ckpt_add_tensor(&c, "f32", f32);
    tt_ckpt_add_tensor(&c, "f64", f64);
    tt_ckpt_add_tensor(&c, "i32", i32);
    tt_ckpt_add_tensor(&c, "i64", i64);
    tt_ckpt_add_tensor(&c, "view", view);
    tt_ckpt_add_tensor(&c, "big", f32);
    tt_ckpt_add_tensor(&c, "big", big);  // replaced
    ck_assert_int_eq(c.tensors.n, 6);
    ck_assert_int_eq(tt_ckpt_save(&c, path), TT_OK);

    tt_checkpoint d;
    ck_assert_int_eq(tt_ckpt_load(&d, path), TT_OK);
    ck_assert_int_eq(d.nmeta, 7);
    int64_t iv;
    double fv;
    const unsigned char *bytes;
    size_t nb;
    ck_assert(tt_ckpt_get_i64(&d, "step", &iv) && iv == 42);
    ck_assert(tt_ckpt_get_i64(&d, "neg", &iv) && iv == INT64_MIN);
    ck_assert(tt_ckpt_get_f64(&d, "loss", &fv) && fv == 1.8765432109876543);
    ck_assert(tt_ckpt_get_f64(&d, "nan", &fv) && isnan(fv));
    ck_assert(tt_ckpt_get_f64(&d, "loss2", &fv) && fv == 2.5);
    ck_assert(tt_ckpt_get_bytes(&d, "vocab", &bytes, &nb) && nb == 8);
    ck_assert_mem_eq(bytes, "\n !abc\xff", 8);
    ck_assert(tt_ckpt_get_bytes(&d, "empty", &bytes, &nb) && nb == 0);
    ck_assert(!tt_ckpt_get_i64(&d, "loss", &iv));     // wrong type
    ck_assert(!tt_ckpt_get_f64(&d, "missing", &fv));  // absent
    ck_assert(!tt_ckpt_get_bytes(&d, "step", &bytes, &nb));

    ck_assert_int_eq(d.tensors.n, 6);
    assert_same_tensor(tt_ckpt_get_tensor(&d, "f32"), f32);
    assert_same_tensor(tt_ckpt_get_tensor(&d, "f64"), f64);
    ck_assert_int_eq(tt_ckpt_get_tensor(&d, "f64")->ndim, 0);
    assert_same_tensor(tt_ckpt_get_tensor(&d, "i32"), i32);
    assert_same_tensor(tt_ckpt_get_tensor(&d, "i64"), i64);
    ck_assert_int_eq(((int64_t *)tt_data(tt_ckpt_get_tensor(&d, "i64")))[0],
                     ((int64_t *)tt_data(i64))[0]);
    assert_same_tensor(tt_ckpt_get_tensor(&d, "view"), view);
    assert_same_tensor(tt_ckpt_get_tensor(&d, "big"), big);
    ck_assert_ptr_null(tt_ckpt_get_tensor(&d, "nope"));
    // Loaded tensors are unscoped (the checkpoint owns them) and named.
    ck_assert_str_eq(tt_ckpt_get_tensor(&d, "view")->name, "view");

    // Saving the loaded checkpoint reproduces the file byte for byte.
    char path2[128];
    tmp_path(path2, sizeof path2, "rt2.ckpt");
    ck_assert_int_eq(tt_ckpt_save(&d, path2), TT_OK);
    size_t n1, n2;
    unsigned char *b1 = read_all(path, &n1), *b2 = read_all(path2, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert_mem_eq(b1, b2, n1);
    // Layout: blobs at multiples of 64, the file ends at the last blob.
    ck_assert_uint_eq(le64(b1 + 24), n1);
    free(b1);
    free(b2);
    tt_ckpt_free(&d);
    tt_ckpt_free(&d);  // safe twice
    tt_ckpt_free(&c);
    tt_scope_end();
    ck_assert_int_eq(count_dir_entries(tmpdir), 2);  // no temp files left behind
    remove_tmpdir();
}
END_TEST

START_TEST(test_empty_checkpoint) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "empty.ckpt");
    tt_checkpoint c;
    tt_ckpt_init(&c);
    ck_assert_int_eq(tt_ckpt_save(&c, path), TT_OK);
    tt_checkpoint d;
    ck_assert_int_eq(tt_ckpt_load(&d, path), TT_OK);
    ck_assert_int_eq(d.nmeta, 0);
    ck_assert_int_eq(d.tensors.n, 0);
    size_t n;
    free(read_all(path, &n));
    ck_assert_uint_eq(n, 48);  // fixed header + checksum
    tt_ckpt_free(&d);
    tt_ckpt_free(&c);
    remove_tmpdir();
}
END_TEST

// ---- restore_params ----

START_TEST(test_restore_params) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "m.ckpt");
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_linear a, b;
    tt_linear_init(&a, 3, 2, true, &rng);
    tt_linear_init(&b, 3, 2, true, &rng);
    tt_params pa, pb;
    tt_params_init(&pa);
    tt_params_init(&pb);
    tt_linear_params(&a, &pa, "fc");
    tt_linear_params(&b, &pb, "fc");
    ck_assert_uint_ne(tt_params_fingerprint(&pa), tt_params_fingerprint(&pb));

    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_add_params(&c, "model.", &pa);
    ck_assert_ptr_nonnull(tt_ckpt_get_tensor(&c, "model.fc.weight"));
    ck_assert_int_eq(tt_ckpt_save(&c, path), TT_OK);
    tt_ckpt_free(&c);

    ck_assert_int_eq(tt_ckpt_load(&c, path), TT_OK);
    ck_assert_int_eq(tt_ckpt_restore_params(&c, "model.", &pb), TT_OK);
    ck_assert_uint_eq(tt_params_fingerprint(&pa), tt_params_fingerprint(&pb));
    assert_same_tensor(a.weight, b.weight);

    // Missing prefix: nothing found.
    ck_assert_int_eq(tt_ckpt_restore_params(&c, "other.", &pb), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "no tensor 'other.fc.weight'"), "%s", tt_last_error());

    // Shape mismatch (a wider layer): the message names the tensor and both shapes, and
    // nothing was copied, not even the tensors checked before.
    tt_linear w;
    tt_linear_init(&w, 3, 2, true, &rng);
    tt_release(w.bias);
    w.bias = tt_zeros(TT_F32, TT_SHAPE(5));
    tt_params pw;
    tt_params_init(&pw);
    tt_linear_params(&w, &pw, "fc");
    uint64_t before = tt_tensor_hash(w.weight);
    ck_assert_int_eq(tt_ckpt_restore_params(&c, "model.", &pw), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "'model.fc.bias' has shape (2,) in the checkpoint, (5,)"),
                  "%s", tt_last_error());
    ck_assert_uint_eq(tt_tensor_hash(w.weight), before);

    // Dtype mismatch.
    tt_release(w.bias);
    w.bias = tt_zeros(TT_F64, TT_SHAPE(2));
    tt_params_free(&pw);
    tt_params_init(&pw);
    tt_linear_params(&w, &pw, "fc");
    ck_assert_int_eq(tt_ckpt_restore_params(&c, "model.", &pw), TT_ERR_MISMATCH);
    ck_assert_msg(strstr(tt_last_error(), "'model.fc.bias' is f32 in the checkpoint, f64"), "%s",
                  tt_last_error());

    // A change moves the fingerprint; restoring brings it back.
    uint64_t fp = tt_params_fingerprint(&pb);
    tt_set_at(b.bias, 1, tt_at(b.bias, 1) + 1e-6);
    ck_assert_uint_ne(tt_params_fingerprint(&pb), fp);
    ck_assert_int_eq(tt_ckpt_restore_params(&c, "model.", &pb), TT_OK);
    ck_assert_uint_eq(tt_params_fingerprint(&pb), fp);

    tt_ckpt_free(&c);
    tt_params_free(&pw);
    tt_params_free(&pa);
    tt_params_free(&pb);
    tt_linear_free(&w);
    tt_linear_free(&a);
    tt_linear_free(&b);
    remove_tmpdir();
}
END_TEST

START_TEST(test_hash_and_fingerprint) {
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(4, 6));
    tt_tensor *xt = tt_transpose(x, 0, 1);
    tt_tensor *xtc = tt_contiguous(xt);
    ck_assert_uint_eq(tt_tensor_hash(xt), tt_tensor_hash(xtc));  // any layout
    ck_assert_uint_ne(tt_tensor_hash(x), tt_tensor_hash(xt));
    ck_assert_uint_eq(tt_tensor_hash(x), XXH3_64bits(tt_data(x), 24 * 4));
    ck_assert_uint_ne(tt_tensor_hash(tt_to_dtype(x, TT_F64)), tt_tensor_hash(x));

    tt_params p, q;
    tt_params_init(&p);
    tt_params_init(&q);
    tt_params_add(&p, NULL, "x", x);
    tt_params_add(&q, NULL, "x", tt_clone(x));
    ck_assert_uint_eq(tt_params_fingerprint(&p), tt_params_fingerprint(&q));
    tt_params_add(&p, NULL, "y", xtc);
    ck_assert_uint_ne(tt_params_fingerprint(&p), tt_params_fingerprint(&q));
    tt_params_add(&q, NULL, "z", xtc);  // same tensor, another name
    ck_assert_uint_ne(tt_params_fingerprint(&p), tt_params_fingerprint(&q));
    tt_params_free(&p);
    tt_params_free(&q);
    tt_scope_end();
}
END_TEST

// ---- the strict loader ----

// A small valid file: two metadata entries and tensors "a" (f32 (2,)) and "b" (f32 (3,)).
static unsigned char *small_file(const char *path, size_t *n) {
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_set_i64(&c, "k", 7);
    tt_ckpt_set_bytes(&c, "v", "xyz", 3);
    tt_tensor *a = tt_from_data(TT_F32, TT_SHAPE(2), (const float[]){1, 2});
    tt_tensor *b = tt_from_data(TT_F32, TT_SHAPE(3), (const float[]){3, 4, 5});
    tt_ckpt_add_tensor(&c, "a", a);
    tt_ckpt_add_tensor(&c, "b", b);
    tt_release(a);
    tt_release(b);
    ck_assert_int_eq(tt_ckpt_save(&c, path), TT_OK);
    tt_ckpt_free(&c);
    return read_all(path, n);
}

// Header layout of small_file (docs/checkpoint.md).
enum {
    META_K = 40,             // 2 + "k" + type + 8
    META_V = META_K + 12,    // 2 + "v" + type + 8 + "xyz"
    TENSOR_A = META_V + 15,  // 2 + "a" + dtype + ndim + 8 shape + offset + nbytes + hash
    TENSOR_B = TENSOR_A + 37,
    HEADER_HASH = TENSOR_B + 37,
    HEADER_SIZE = HEADER_HASH + 8,
    // fields inside a tensor entry
    T_NAME = 2, T_DTYPE = 3, T_NDIM = 4, T_SHAPE = 5, T_OFFSET = 13, T_NBYTES = 21, T_HASH = 29,
};

// Writes b to path, loads it, expects `want` with `msg` in the message and an empty result.
static void expect_load_error(const char *path, const unsigned char *b, size_t n,
                              tt_status want, const char *msg, const char *what) {
    write_all(path, b, n);
    tt_checkpoint c;
    tt_status s = tt_ckpt_load(&c, path);
    ck_assert_msg(s == want, "%s: status %s, expected %s (%s)", what, tt_status_str(s),
                  tt_status_str(want), tt_last_error());
    ck_assert_msg(!msg || strstr(tt_last_error(), msg), "%s: message '%s' lacks '%s'", what,
                  tt_last_error(), msg);
    ck_assert_int_eq(c.nmeta, 0);
    ck_assert_int_eq(c.tensors.n, 0);
    ck_assert_ptr_null(c.meta);
}

START_TEST(test_every_truncation_rejected) {
    make_tmpdir();
    char path[128], bad[128];
    tmp_path(path, sizeof path, "small.ckpt");
    tmp_path(bad, sizeof bad, "bad.ckpt");
    size_t n;
    unsigned char *b = small_file(path, &n);
    ck_assert_uint_eq(le64(b + 16), HEADER_SIZE);
    ck_assert_uint_eq(n, 256 + 12);  // a's 8 bytes at 192, b's 12 bytes at 256
    for (size_t len = 0; len < n; len++) {
        char what[48];
        snprintf(what, sizeof what, "truncated to %zu", len);
        expect_load_error(bad, b, len, TT_ERR_FORMAT, NULL, what);
    }
    // One byte more is rejected too (file_size, then trailing bytes).
    unsigned char *longer = calloc(n + 1, 1);
    memcpy(longer, b, n);
    expect_load_error(bad, longer, n + 1, TT_ERR_FORMAT, "file_size", "one byte appended");
    put64(longer + 24, n + 1);
    rehash(longer);
    expect_load_error(bad, longer, n + 1, TT_ERR_FORMAT, "1 trailing bytes", "trailing byte");
    free(longer);
    free(b);
    remove_tmpdir();
}
END_TEST

START_TEST(test_every_header_bit_flip_rejected) {
    make_tmpdir();
    char path[128], bad[128];
    tmp_path(path, sizeof path, "small.ckpt");
    tmp_path(bad, sizeof bad, "bad.ckpt");
    size_t n;
    unsigned char *b = small_file(path, &n);
    for (size_t i = 0; i < HEADER_SIZE; i++) {
        for (int bit = 0; bit < 8; bit++) {
            char what[48];
            snprintf(what, sizeof what, "bit %d of byte %zu", bit, i);
            b[i] ^= (unsigned char)(1u << bit);
            expect_load_error(bad, b, n, TT_ERR_FORMAT, NULL, what);
            b[i] ^= (unsigned char)(1u << bit);
        }
    }
    // Flips in the padding and the blobs: padding must be zero, blobs match their hashes.
    for (size_t i = HEADER_SIZE; i < n; i++) {
        char what[48];
        snprintf(what, sizeof what, "byte %zu", i);
        b[i] ^= 0x10;
        bool in_blob = (i >= 192 && i < 200) || i >= 256;
        expect_load_error(bad, b, n, TT_ERR_FORMAT, in_blob ? "checksum mismatch" : "padding",
                          what);
        b[i] ^= 0x10;
    }
    free(b);
    remove_tmpdir();
}
END_TEST

START_TEST(test_blob_flip_names_tensor) {
    make_tmpdir();
    char path[128], bad[128];
    tmp_path(path, sizeof path, "small.ckpt");
    tmp_path(bad, sizeof bad, "bad.ckpt");
    size_t n;
    unsigned char *b = small_file(path, &n);
    uint64_t off_b = le64(b + TENSOR_B + T_OFFSET);
    b[off_b + 5] ^= 1;
    expect_load_error(bad, b, n, TT_ERR_FORMAT, "tensor 'b': checksum mismatch", "blob b");
    free(b);
    remove_tmpdir();
}
END_TEST

// Hand-built malformed files, each with a valid header checksum so that the specific check
// (not the checksum) must catch it.
START_TEST(test_malformed_files) {
    make_tmpdir();
    char path[128], bad[128];
    tmp_path(path, sizeof path, "small.ckpt");
    tmp_path(bad, sizeof bad, "bad.ckpt");
    size_t n;
    unsigned char *orig = small_file(path, &n);
    unsigned char *b = malloc(n);
    uint64_t off_a = le64(orig + TENSOR_A + T_OFFSET), off_b = le64(orig + TENSOR_B + T_OFFSET);
    ck_assert_uint_eq(off_a, 192);
    ck_assert_uint_eq(off_b, 256);

#define CASE_RAW(edit, hash, msg)                                               \
    do {                                                                       \
        memcpy(b, orig, n);                                                    \
        edit;                                                                  \
        if (hash) rehash(b);                                                   \
        expect_load_error(bad, b, n, TT_ERR_FORMAT, msg, #edit);               \
    } while (0)
#define CASE(edit, msg) CASE_RAW(edit, true, msg)

    CASE(b[0] = 'X', "bad magic");
    CASE(b[8] = 2, "version 2 is not supported");
    CASE((b[12] = 1, b[15] = 4), "endianness tag");
    CASE_RAW(put64(b + 16, 1000), false, "header_size 1000");
    CASE_RAW(put64(b + 16, 8), false, "header_size 8");
    CASE_RAW(put64(b + 24, 100), false, "file_size field says 100");
    CASE(b[32] = 200, "n_meta 200 exceeds");
    CASE((b[36] = 0, b[37] = 0, b[38] = 1), "n_tensors 65536 exceeds");
    CASE(b[META_K] = 0, "metadata key 0 has length 0");
    CASE(b[META_K + 2] = 0, "metadata key 0 contains a NUL");
    CASE(b[META_K + 3] = 3, "metadata 'k' has type 3");
    CASE(b[META_V + 2] = 'k', "metadata key 'k' appears twice");
    CASE(put64(b + META_V + 4, 1u << 20), "metadata 'v' has 1048576 bytes");
    CASE(b[TENSOR_B + T_NAME] = 'a', "tensor name 'a' appears twice");
    CASE(b[TENSOR_A + T_DTYPE] = 4, "tensor 'a' has dtype 4");
    CASE(b[TENSOR_A + T_NDIM] = 9, "tensor 'a' has ndim 9");
    CASE(put64(b + TENSOR_A + T_SHAPE, (uint64_t)-2), "tensor 'a' has a negative size -2");
    CASE(put64(b + TENSOR_A + T_SHAPE, (uint64_t)1 << 62), "too many elements");
    CASE(put64(b + TENSOR_A + T_SHAPE, 3), "tensor 'a' has nbytes 8 but 3 elements");
    CASE(put64(b + TENSOR_A + T_NBYTES, 12), "tensor 'a' has nbytes 12");
    CASE(put64(b + TENSOR_A + T_OFFSET, 130), "not a multiple of 64");
    CASE(put64(b + TENSOR_A + T_OFFSET, 64), "outside the data region");
    CASE(put64(b + TENSOR_B + T_OFFSET, 1u << 30), "outside the data region");
    CASE(put64(b + TENSOR_B + T_OFFSET, (uint64_t)-64), "outside the data region");
    CASE(put64(b + TENSOR_B + T_OFFSET, 192), "tensor 'b' at offset 192 overlaps tensor 'a'");
    CASE(put64(b + TENSOR_A + T_HASH, 0), "tensor 'a': checksum mismatch");
    CASE(b[off_a - 1] = 1, "padding byte 191 before tensor 'a'");
    // One tensor less in the count leaves unused header bytes.
    CASE(b[36] = 1, "unused bytes at the end of the header");
    // A table entry that runs past the header.
    CASE(b[TENSOR_B] = 200, "tensor name 1 at byte");
#undef CASE
#undef CASE_RAW

    // Not a file, nothing there, empty.
    tt_checkpoint c;
    ck_assert_int_eq(tt_ckpt_load(&c, tmpdir), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "a directory"), "%s", tt_last_error());
    tmp_path(bad, sizeof bad, "missing.ckpt");
    ck_assert_int_eq(tt_ckpt_load(&c, bad), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "No such file"), "%s", tt_last_error());
    tmp_path(bad, sizeof bad, "zero.ckpt");
    expect_load_error(bad, orig, 0, TT_ERR_FORMAT, "the file is empty", "empty file");
    free(b);
    free(orig);
    remove_tmpdir();
}
END_TEST

// ---- failed saves leave the old file ----

START_TEST(test_save_failures_keep_old_file) {
    make_tmpdir();
    char path[128], p2[160];
    tmp_path(path, sizeof path, "keep.ckpt");
    size_t n;
    unsigned char *orig = small_file(path, &n);
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_tensor *big = tt_zeros(TT_F32, TT_SHAPE(1000));
    tt_ckpt_add_tensor(&c, "big", big);
    tt_release(big);

    // A missing directory.
    snprintf(p2, sizeof p2, "%s/no/such/dir/x.ckpt", tmpdir);
    ck_assert_int_eq(tt_ckpt_save(&c, p2), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), p2) && strstr(tt_last_error(), "No such file"), "%s",
                  tt_last_error());
    // A path through a regular file (unwritable even for root).
    snprintf(p2, sizeof p2, "%s/x.ckpt", path);
    ck_assert_int_eq(tt_ckpt_save(&c, p2), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "Not a directory"), "%s", tt_last_error());
    // The target is a directory: the temp file is written, the rename fails and is undone.
    char sub[160];
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    ck_assert_int_eq(tt_ckpt_save(&c, sub), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "rename"), "%s", tt_last_error());
    // Disk full: a file-size limit makes the write fail with EFBIG halfway through.
    struct rlimit old;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {1000, old.rlim_max};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    tt_status s = tt_ckpt_save(&c, path);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_DFL);
    ck_assert_int_eq(s, TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "write of") && strstr(tt_last_error(), "too large"),
                  "%s", tt_last_error());

    // The old file is intact and still loads; only it and sub/ are in the directory.
    size_t n2;
    unsigned char *now = read_all(path, &n2);
    ck_assert_uint_eq(n2, n);
    ck_assert_mem_eq(now, orig, n);
    free(now);
    tt_checkpoint d;
    ck_assert_int_eq(tt_ckpt_load(&d, path), TT_OK);
    tt_ckpt_free(&d);
    ck_assert_int_eq(count_dir_entries(tmpdir), 2);
    ck_assert_int_eq(count_dir_entries(sub), 0);
    // And a successful save replaces it.
    ck_assert_int_eq(tt_ckpt_save(&c, path), TT_OK);
    ck_assert_int_eq(tt_ckpt_load(&d, path), TT_OK);
    ck_assert_int_eq(d.tensors.n, 1);
    tt_ckpt_free(&d);
    tt_ckpt_free(&c);
    free(orig);
    remove_tmpdir();
}
END_TEST

// ---- programmer errors ----

START_TEST(test_abort_long_key) {
    char key[300];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = 0;
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_set_i64(&c, key, 1);
}
END_TEST

START_TEST(test_abort_empty_name) {
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_add_tensor(&c, "", tt_zeros(TT_F32, TT_SHAPE(1)));
}
END_TEST

int main(void) {
    Suite *s = suite_create("checkpoint");
    TCase *tc = tt_tcase("container");
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_empty_checkpoint);
    tcase_add_test(tc, test_restore_params);
    tcase_add_test(tc, test_hash_and_fingerprint);
    suite_add_tcase(s, tc);

    TCase *ld = tt_tcase("loader");
    tcase_add_test(ld, test_every_truncation_rejected);
    tcase_add_test(ld, test_every_header_bit_flip_rejected);
    tcase_add_test(ld, test_blob_flip_names_tensor);
    tcase_add_test(ld, test_malformed_files);
    suite_add_tcase(s, ld);

    TCase *sv = tt_tcase("save");
    tcase_add_test(sv, test_save_failures_keep_old_file);
    suite_add_tcase(s, sv);

    TCase *ab = tcase_create("aborts");
    tcase_add_test_raise_signal(ab, test_abort_long_key, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_empty_name, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

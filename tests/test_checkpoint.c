// Check suite of io/checkpoint.h: round trips of metadata and tensors (every dtype, 0-dim,
// empty, strided views), restore_params and its mismatch errors, the strict loader (every
// truncation, every header bit flip, 12,000 random payload bit flips, hand-built malformed
// files), atomic saves (failures and a full disk leave the old file intact; SIGKILL at 64
// random points during a save never leaves a torn file), and the tensor hash / fingerprint.
#define _GNU_SOURCE  // unshare(CLONE_NEWNS) for a private tmpfs mount in the disk-full test
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "models/gpt/gpt.h"
#include "test_util.h"

// ---- temp files ----

static char tmpdir[64];

static void make_tmpdir(void) { tt_test_mkdtemp(tmpdir, sizeof tmpdir, "ckpt"); }

static void remove_tmpdir(void) { tt_test_rmdir(tmpdir); }

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
    ck_assert_int_eq(tt_test_count_files(tmpdir, ""), 2);  // no temp files left behind
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

    // Ending with empty tensors: the file ends with the padding up to their offset.
    tt_tensor *one = tt_ones(TT_F32, TT_SHAPE(3)), *none = tt_zeros(TT_I64, TT_SHAPE(2, 0));
    tt_ckpt_add_tensor(&c, "one", one);
    tt_ckpt_add_tensor(&c, "none", none);
    tt_ckpt_add_tensor(&c, "none2", none);
    ck_assert_int_eq(tt_ckpt_save(&c, path), TT_OK);
    ck_assert_msg(tt_ckpt_load(&d, path) == TT_OK, "%s", tt_last_error());
    ck_assert_int_eq(d.tensors.n, 3);
    assert_same_tensor(tt_ckpt_get_tensor(&d, "none2"), none);
    tt_ckpt_free(&d);
    tt_release(one);
    tt_release(none);
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
    tt_nn_linear a, b;
    tt_nn_linear_init(&a, 3, 2, true, &rng);
    tt_nn_linear_init(&b, 3, 2, true, &rng);
    tt_params pa, pb;
    tt_params_init(&pa);
    tt_params_init(&pb);
    tt_nn_linear_params(&a, &pa, "fc");
    tt_nn_linear_params(&b, &pb, "fc");
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
    tt_nn_linear w;
    tt_nn_linear_init(&w, 3, 2, true, &rng);
    tt_release(w.bias);
    w.bias = tt_zeros(TT_F32, TT_SHAPE(5));
    tt_params pw;
    tt_params_init(&pw);
    tt_nn_linear_params(&w, &pw, "fc");
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
    tt_nn_linear_params(&w, &pw, "fc");
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
    tt_nn_linear_free(&w);
    tt_nn_linear_free(&a);
    tt_nn_linear_free(&b);
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

// Random bit flips in the tensor data: 10,000 single-bit flips and 2,000 flips of 2 to 8 bits
// (seeded), each caught by its tensor's XXH3-64 and reported under the tensor's name.
START_TEST(test_random_payload_flips_caught) {
    make_tmpdir();
    char path[128], bad[128];
    tmp_path(path, sizeof path, "payload.ckpt");
    tmp_path(bad, sizeof bad, "bad.ckpt");
    tt_rng rng;
    tt_rng_seed(&rng, 20240611);
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_set_i64(&c, "step", 3);
    tt_scope_begin();
    const char *names[] = {"w", "b", "idx", "pos"};
    tt_tensor *ts[] = {tt_randn(&rng, TT_F32, TT_SHAPE(64, 16)),
                       tt_randn(&rng, TT_F64, TT_SHAPE(33)),
                       tt_arange(TT_I32, 0, 10, 1), tt_arange(TT_I64, -3, 4, 1)};
    for (int i = 0; i < 4; i++) tt_ckpt_add_tensor(&c, names[i], ts[i]);
    ck_assert_int_eq(tt_ckpt_save(&c, path), TT_OK);
    tt_ckpt_free(&c);
    tt_scope_end();
    size_t n;
    unsigned char *b = read_all(path, &n);

    // The blobs' byte ranges, from the tensor table.
    uint64_t off[4], len[4], total = 0;
    size_t at = 40 + 2 + 4 + 1 + 8;  // the fixed header, then the i64 entry "step"
    for (int i = 0; i < 4; i++) {
        size_t name_len = b[at] | (size_t)b[at + 1] << 8;
        ck_assert_mem_eq(b + at + 2, names[i], strlen(names[i]));
        at += 2 + name_len + 2 + 8 * (size_t)b[at + 2 + name_len + 1];  // name, dtype, shape
        off[i] = le64(b + at);
        len[i] = le64(b + at + 8);
        at += 24;
        total += len[i];
    }
    ck_assert_uint_eq(total, 64 * 16 * 4 + 33 * 8 + 10 * 4 + 7 * 8);

    int caught = 0, flips = 0;
    for (int trial = 0; trial < 12000; trial++) {
        int nbits = trial < 10000 ? 1 : 2 + (int)tt_rng_below(&rng, 7);
        // All bits in one tensor's blob, distinct bits (an even count of equal flips cancels).
        uint64_t pick = (uint64_t)tt_rng_below(&rng, (int64_t)total);
        int t = 0;
        while (pick >= len[t]) pick -= len[t++];
        uint64_t bits[8];
        for (int k = 0; k < nbits; k++) {
            bool fresh;
            do {
                bits[k] = 8 * off[t] + (uint64_t)tt_rng_below(&rng, (int64_t)(8 * len[t]));
                fresh = true;
                for (int j = 0; j < k; j++) fresh = fresh && bits[j] != bits[k];
            } while (!fresh);
        }
        for (int k = 0; k < nbits; k++) b[bits[k] / 8] ^= (unsigned char)(1u << (bits[k] % 8));
        char want[64];
        snprintf(want, sizeof want, "tensor '%s': checksum mismatch", names[t]);
        char what[64];
        snprintf(what, sizeof what, "trial %d (%d bits in '%s')", trial, nbits, names[t]);
        expect_load_error(bad, b, n, TT_ERR_FORMAT, want, what);
        caught++;
        flips += nbits;
        for (int k = 0; k < nbits; k++) b[bits[k] / 8] ^= (unsigned char)(1u << (bits[k] % 8));
    }
    // Undone, the file loads again.
    write_all(bad, b, n);
    ck_assert_int_eq(tt_ckpt_load(&c, bad), TT_OK);
    tt_ckpt_free(&c);
    printf("payload bit flips: %d corrupted files (%d bits flipped), %d caught by the "
           "checksums\n", 12000, flips, caught);
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

    // An empty tensor whose other dims multiply past int64 (its strides would overflow).
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_tensor *e = tt_zeros(TT_F32, TT_SHAPE(0, 4, 4));
    tt_ckpt_add_tensor(&c, "e", e);
    tt_release(e);
    ck_assert_int_eq(tt_ckpt_save(&c, path), TT_OK);
    tt_ckpt_free(&c);
    size_t ne;
    unsigned char *eb = read_all(path, &ne);
    enum { E_DIMS = 40 + 2 + 1 + 2 };  // fixed header, name_len, "e", dtype, ndim
    ck_assert_uint_eq(le64(eb + E_DIMS + 8), 4);
    put64(eb + E_DIMS + 8, (uint64_t)1 << 40);
    put64(eb + E_DIMS + 16, (uint64_t)1 << 40);
    rehash(eb);
    expect_load_error(bad, eb, ne, TT_ERR_FORMAT, "tensor 'e' has too many elements (dim 2",
                      "empty tensor with huge dims");
    put64(eb + E_DIMS + 16, (uint64_t)1 << 19);  // an extent of 2^59: in range
    rehash(eb);
    write_all(bad, eb, ne);
    ck_assert_msg(tt_ckpt_load(&c, bad) == TT_OK, "%s", tt_last_error());
    ck_assert_int_eq(tt_ckpt_get_tensor(&c, "e")->shape[1], (int64_t)1 << 40);
    ck_assert_int_eq(tt_numel(tt_ckpt_get_tensor(&c, "e")), 0);
    tt_ckpt_free(&c);
    free(eb);

    // Not a file, nothing there, empty.
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
    ck_assert_int_eq(tt_test_count_files(tmpdir, ""), 2);
    ck_assert_int_eq(tt_test_count_files(sub, ""), 0);
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

// A real full disk: a 64 KiB tmpfs mounted in a private mount namespace (this test runs in
// its own forked process, so the mount vanishes with it). Needs root (CAP_SYS_ADMIN); without
// it the test says so and passes, and the RLIMIT_FSIZE case above covers the error path.
START_TEST(test_disk_full_tmpfs) {
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("disk full on a tmpfs: skipped, cannot mount here (%s)\n", strerror(errno));
        return;
    }
    make_tmpdir();
    ck_assert_msg(mount("tmpfs", tmpdir, "tmpfs", 0, "size=64k") == 0, "mount: %s",
                  strerror(errno));
    char path[128];
    tmp_path(path, sizeof path, "full.ckpt");
    tt_checkpoint small, big;
    tt_ckpt_init(&small);
    tt_ckpt_init(&big);
    tt_tensor *a = tt_ones(TT_F32, TT_SHAPE(10 * 1024));  // 40 KiB: fits once, not twice
    tt_tensor *z = tt_zeros(TT_F32, TT_SHAPE(10 * 1024));
    tt_tensor *h = tt_zeros(TT_F32, TT_SHAPE(25 * 1024));  // 100 KiB: never fits
    tt_ckpt_add_tensor(&small, "w", a);
    tt_ckpt_add_tensor(&big, "w", h);
    ck_assert_msg(tt_ckpt_save(&small, path) == TT_OK, "%s", tt_last_error());
    size_t n;
    unsigned char *orig = read_all(path, &n);

    // Bigger than the disk, then a new file that would fit alone but not next to the old one
    // (a save needs room for both until the rename).
    for (int k = 0; k < 2; k++) {
        if (k == 1) {
            tt_ckpt_free(&big);
            tt_ckpt_init(&big);
            tt_ckpt_add_tensor(&big, "w", z);
        }
        ck_assert_int_eq(tt_ckpt_save(&big, path), TT_ERR_IO);
        ck_assert_msg(strstr(tt_last_error(), "No space left on device") &&
                      strstr(tt_last_error(), "the previous file is unchanged") &&
                      strstr(tt_last_error(), path), "%s", tt_last_error());
        size_t n2;
        unsigned char *now = read_all(path, &n2);
        ck_assert_uint_eq(n2, n);
        ck_assert_mem_eq(now, orig, n);
        free(now);
        tt_checkpoint d;
        ck_assert_int_eq(tt_ckpt_load(&d, path), TT_OK);
        ck_assert_uint_eq(tt_tensor_hash(tt_ckpt_get_tensor(&d, "w")), tt_tensor_hash(a));
        tt_ckpt_free(&d);
        ck_assert_int_eq(tt_test_count_files(tmpdir, ""), 1);  // the partial temp file is gone
    }
    printf("disk full on a 64 KiB tmpfs: %s\n", tt_last_error());
    // A save that fits next to the old file succeeds and replaces it.
    tt_ckpt_free(&big);
    tt_ckpt_init(&big);
    tt_ckpt_set_i64(&big, "fits", 1);
    ck_assert_msg(tt_ckpt_save(&big, path) == TT_OK, "%s", tt_last_error());
    ck_assert_int_eq(tt_test_count_files(tmpdir, ""), 1);
    tt_ckpt_free(&small);
    tt_ckpt_free(&big);
    tt_release(a);
    tt_release(z);
    tt_release(h);
    free(orig);
    ck_assert_int_eq(umount(tmpdir), 0);
    remove_tmpdir();
}
END_TEST

// ---- crash safety: SIGKILL during a save ----

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

// A child saves two versions of a 1 MiB checkpoint over one path in an endless loop; the test
// kills it with SIGKILL after a random delay (spread over about three saves), 64 times. After
// every kill the file must load, pass every checksum and be one of the two versions whole.
// The temp files killed savers leave behind do not stop later saves, which remove them.
START_TEST(test_sigkill_during_save) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "k.ckpt");
    tt_rng rng;
    tt_rng_seed(&rng, 99);
    tt_checkpoint ver[2];
    tt_tensor *w[2];
    uint64_t hash[2];
    for (int g = 0; g < 2; g++) {
        w[g] = tt_randn(&rng, TT_F32, TT_SHAPE(256, 1024));
        hash[g] = tt_tensor_hash(w[g]);
        tt_ckpt_init(&ver[g]);
        tt_ckpt_set_i64(&ver[g], "gen", g);
        tt_ckpt_set_bytes(&ver[g], "note", g ? "new" : "old", 3);
        tt_ckpt_add_tensor(&ver[g], "w", w[g]);
    }
    ck_assert_int_eq(tt_ckpt_save(&ver[0], path), TT_OK);
    double t0 = now_s();
    for (int k = 0; k < 4; k++) ck_assert_int_eq(tt_ckpt_save(&ver[k % 2], path), TT_OK);
    double t_save = (now_s() - t0) / 4;

    enum { KILLS = 64 };
    int seen[2] = {0, 0}, with_temp = 0;
    pid_t dead = 0;
    for (int i = 0; i < KILLS; i++) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            for (int g = i % 2;; g ^= 1)
                if (tt_ckpt_save(&ver[g], path) != TT_OK) _exit(3);
        }
        int64_t max_ns = (int64_t)(3 * t_save * 1e9) + 1;
        int64_t ns = tt_rng_below(&rng, max_ns);
        struct timespec d = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
        nanosleep(&d, NULL);
        ck_assert_int_eq(kill(pid, SIGKILL), 0);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "kill %d: the saver ended "
                      "on its own (status 0x%x): a save failed", i, st);

        tt_checkpoint d2;
        tt_status s = tt_ckpt_load(&d2, path);
        ck_assert_msg(s == TT_OK, "kill %d after %.3f ms: %s", i, (double)ns / 1e6,
                      tt_last_error());
        int64_t gen = -1;
        const unsigned char *note;
        size_t nn;
        ck_assert(tt_ckpt_get_i64(&d2, "gen", &gen) && (gen == 0 || gen == 1));
        ck_assert(tt_ckpt_get_bytes(&d2, "note", &note, &nn) && nn == 3);
        ck_assert_mem_eq(note, gen ? "new" : "old", 3);
        ck_assert_uint_eq(tt_tensor_hash(tt_ckpt_get_tensor(&d2, "w")), hash[gen]);
        tt_ckpt_free(&d2);
        seen[gen]++;
        // Killed between creating its temp file and the rename?
        char tmp[160];
        snprintf(tmp, sizeof tmp, "k.ckpt.tmp.%ld.", (long)pid);
        if (tt_test_count_files(tmpdir, tmp) > 0) with_temp++;  // the next saver removes it
        dead = pid;
    }
    // Both versions were caught on disk, and some kills landed mid-write (a temp file left).
    ck_assert_int_gt(seen[0], 0);
    ck_assert_int_gt(seen[1], 0);
    ck_assert_int_gt(with_temp, 0);
    // A later save works next to stray temp files, replaces the target and removes the temp
    // files of dead processes only: not a live process's, nor other names.
    char live[160], other[160], odd[160], stale[160], old_style[160];
    snprintf(live, sizeof live, "%s.tmp.%ld", path, (long)getppid());
    snprintf(other, sizeof other, "%s/x.ckpt.tmp.%ld", tmpdir, (long)dead);
    snprintf(odd, sizeof odd, "%s.tmp.12x", path);
    snprintf(stale, sizeof stale, "%s.tmp.%ld.a1b2c3", path, (long)dead);
    snprintf(old_style, sizeof old_style, "%s.tmp.%ld", path, (long)dead);  // older releases
    const char *keep[] = {live, other, odd};
    for (int i = 0; i < 3; i++) write_all(keep[i], (const unsigned char *)"x", 1);
    write_all(stale, (const unsigned char *)"x", 1);  // as if the last saver died mid-write
    write_all(old_style, (const unsigned char *)"x", 1);
    ck_assert_int_eq(tt_ckpt_save(&ver[1], path), TT_OK);
    tt_checkpoint d3;
    ck_assert_int_eq(tt_ckpt_load(&d3, path), TT_OK);
    ck_assert_uint_eq(tt_tensor_hash(tt_ckpt_get_tensor(&d3, "w")), hash[1]);
    tt_ckpt_free(&d3);
    ck_assert(!exists(stale) && !exists(old_style));
    for (int i = 0; i < 3; i++) ck_assert_msg(exists(keep[i]), "%s was removed", keep[i]);
    ck_assert_int_eq(tt_test_count_files(tmpdir, ""), 4);
    printf("SIGKILL during save: %d kills (one save takes %.2f ms), the file loaded every time "
           "(%d old, %d new version), %d kills left a partial temp file\n", KILLS,
           1e3 * t_save, seen[0], seen[1], with_temp);
    for (int g = 0; g < 2; g++) {
        tt_ckpt_free(&ver[g]);
        tt_release(w[g]);
    }
    remove_tmpdir();
}
END_TEST

// ---- programmer errors ----

START_TEST(test_abort_long_key) {
    tt_expect_abort("is 299 bytes; the format allows 255");
    char key[300];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = 0;
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_set_i64(&c, key, 1);
}
END_TEST

START_TEST(test_abort_empty_name) {
    tt_expect_abort("tensor name must be a non-empty string");
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_add_tensor(&c, "", tt_zeros(TT_F32, TT_SHAPE(1)));
}
END_TEST

// ---- abort messages name the function the user called ----

START_TEST(test_names_set_f64_long_key) {
    tt_expect_abort("tt_ckpt_set_f64: metadata key 'kkkk");
    char key[257];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = 0;
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_set_f64(&c, key, 1.0);
}
END_TEST

START_TEST(test_names_long_key_hint) {
    tt_expect_abort("is 256 bytes; the format allows 255: use a shorter name");
    char key[257];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = 0;
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_set_i64(&c, key, 1);
}
END_TEST

START_TEST(test_names_set_bytes_empty_key) {
    tt_expect_abort("tt_ckpt_set_bytes: metadata key must be a non-empty string");
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_set_bytes(&c, "", "ab", 2);
}
END_TEST

START_TEST(test_names_set_bytes_null_key) {
    tt_expect_abort("tt_ckpt_set_bytes: metadata key must be a non-empty string");
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_set_bytes(&c, NULL, NULL, 0);
}
END_TEST

START_TEST(test_names_add_params_empty_name) {
    tt_expect_abort("tt_ckpt_add_params: tensor name must be a non-empty string");
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, NULL, "", tt_zeros(TT_F32, TT_SHAPE(1)));
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_add_params(&c, NULL, &p);
}
END_TEST

// The check is in tt_ckpt_add_params itself; what changed is the limit and the fix.
START_TEST(test_names_add_params_long_prefix_hint) {
    tt_expect_abort("pw' is longer than 255 bytes; use a shorter prefix");
    char prefix[300];
    memset(prefix, 'p', sizeof prefix - 1);
    prefix[sizeof prefix - 1] = 0;
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, NULL, "w", tt_zeros(TT_F32, TT_SHAPE(1)));
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_add_params(&c, prefix, &p);
}
END_TEST

// A GPT checkpoint's format name: new files say "tinytorch.gpt"; files written before the
// rename say "char_gpt" and load the same; any other name is refused.
START_TEST(test_gpt_format_names) {
    make_tmpdir();
    char path[128];
    tmp_path(path, sizeof path, "gpt.ckpt");
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 7, c.block_size = 4, c.n_layer = 1, c.n_head = 2, c.n_kv_head = 2;
    c.n_embd = 8;
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    static const char *const names[] = {"tinytorch.gpt", "char_gpt", "char_gpt2"};
    for (int i = 0; i < 3; i++) {
        tt_checkpoint ck;
        tt_ckpt_init(&ck);
        tt_gpt_ckpt_fill(&ck, &m, NULL, NULL);
        const unsigned char *b;
        size_t n;
        ck_assert(tt_ckpt_get_bytes(&ck, "format", &b, &n));
        ck_assert(n == 13 && memcmp(b, "tinytorch.gpt", 13) == 0);
        tt_ckpt_set_bytes(&ck, "format", names[i], strlen(names[i]));
        ck_assert_int_eq(tt_ckpt_save(&ck, path), TT_OK);
        tt_ckpt_free(&ck);
        tt_gpt back;
        tt_status st = tt_gpt_load(path, &back, NULL);
        if (i < 2) {
            ck_assert_msg(st == TT_OK, "%s: %s", names[i], tt_last_error());
            ck_assert_uint_eq(tt_params_fingerprint(&back.params),
                              tt_params_fingerprint(&m.params));
        } else {
            ck_assert_int_eq(st, TT_ERR_FORMAT);
            ck_assert_msg(strstr(tt_last_error(), "not a GPT checkpoint (no format "
                                 "'tinytorch.gpt' or 'char_gpt')"), "%s", tt_last_error());
        }
        tt_gpt_free(&back);
    }
    tt_gpt_free(&m);
    remove_tmpdir();
}
END_TEST

int main(void) {
    Suite *s = suite_create("checkpoint");
    TCase *tc = tt_tcase("container");
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_empty_checkpoint);
    tcase_add_test(tc, test_restore_params);
    tcase_add_test(tc, test_hash_and_fingerprint);
    tcase_add_test(tc, test_gpt_format_names);
    suite_add_tcase(s, tc);

    TCase *ld = tt_tcase("loader");
    tcase_add_test(ld, test_every_truncation_rejected);
    tcase_add_test(ld, test_every_header_bit_flip_rejected);
    tcase_add_test(ld, test_blob_flip_names_tensor);
    tcase_add_test(ld, test_random_payload_flips_caught);
    tcase_add_test(ld, test_malformed_files);
    suite_add_tcase(s, ld);

    TCase *sv = tt_tcase("save");
    tcase_add_test(sv, test_save_failures_keep_old_file);
    tcase_add_test(sv, test_disk_full_tmpfs);
    tcase_add_test(sv, test_sigkill_during_save);
    suite_add_tcase(s, sv);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_long_key, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_empty_name, SIGABRT);
    suite_add_tcase(s, ab);

    TCase *an = tt_tcase_aborts("aborts_names");
    tcase_add_test_raise_signal(an, test_names_set_f64_long_key, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_long_key_hint, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_set_bytes_empty_key, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_set_bytes_null_key, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_add_params_empty_name, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_add_params_long_prefix_hint, SIGABRT);
    suite_add_tcase(s, an);
    return tt_test_run(s);
}

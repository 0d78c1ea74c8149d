// Check suite of data/idx: IDX files written here (plain and gzip; 1-d labels to i64, 3-d
// images to f32), every validation error and its message, and the real Fashion-MNIST of
// Debian's dataset-fashion-mnist (make deps installs it; its numbers come from
// tests/reference/fashion_mnist_stats.py).
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "test_util.h"
#include "data/idx.h"

// ---- temp files ----

static char tmpdir[64];

static void make_tmpdir(void) { tt_test_mkdtemp(tmpdir, sizeof tmpdir, "idx"); }

static void remove_tmpdir(void) { tt_test_rmdir(tmpdir); }

// Writes n bytes to tmpdir/name, gzip-compressed when gz; returns the path in buf.
static const char *write_file(char *buf, size_t cap, const char *name, const void *data,
                              size_t n, bool gz) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    if (gz) {
        gzFile f = gzopen(buf, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(gzwrite(f, data, (unsigned)n), (int)n);
        ck_assert_int_eq(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(buf, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(data, 1, n, f), n);
        ck_assert_int_eq(fclose(f), 0);
    }
    return buf;
}

// An IDX u8 file image: header for ndim dims, then the bytes 0, 1, 2, ... (mod 256).
static size_t idx_bytes(unsigned char *buf, int ndim, const uint32_t *dims) {
    size_t k = 0, n = 1;
    buf[k++] = 0;
    buf[k++] = 0;
    buf[k++] = 0x08;
    buf[k++] = (unsigned char)ndim;
    for (int i = 0; i < ndim; i++) {
        buf[k++] = (unsigned char)(dims[i] >> 24);
        buf[k++] = (unsigned char)(dims[i] >> 16);
        buf[k++] = (unsigned char)(dims[i] >> 8);
        buf[k++] = (unsigned char)dims[i];
        n *= dims[i];
    }
    for (size_t i = 0; i < n; i++) buf[k++] = (unsigned char)(i * 7 % 256);
    return k;
}

// tt_idx_load must fail with status s and a message holding want; the file is buf[0 .. n).
static void expect_error(const void *data, size_t n, bool gz, tt_status s, const char *want) {
    char path[128];
    write_file(path, sizeof path, gz ? "bad.gz" : "bad", data, n, gz);
    tt_tensor *t = (tt_tensor *)1;
    ck_assert_int_eq(tt_idx_load(path, &t), s);
    ck_assert_ptr_null(t);
    const char *msg = tt_last_error();
    if (!strstr(msg, want) || !strstr(msg, path) || !strstr(msg, "tt_idx_load"))
        ck_abort_msg("message '%s' lacks '%s' or the path %s", msg, want, path);
}

// ---- reading ----

static void check_round_trip(bool gz) {
    make_tmpdir();
    unsigned char buf[256];
    char path[128];
    const uint32_t ldims[1] = {10};
    size_t n = idx_bytes(buf, 1, ldims);
    write_file(path, sizeof path, "labels", buf, n, gz);
    tt_tensor *y;
    ck_assert_int_eq(tt_idx_load(path, &y), TT_OK);
    ck_assert_int_eq(y->dtype, TT_I64);
    ck_assert_int_eq(y->ndim, 1);
    ck_assert_int_eq(y->shape[0], 10);
    for (int i = 0; i < 10; i++) ck_assert_int_eq(((int64_t *)tt_data(y))[i], i * 7 % 256);
    tt_release(y);

    const uint32_t idims[3] = {2, 3, 5};
    n = idx_bytes(buf, 3, idims);
    write_file(path, sizeof path, "images", buf, n, gz);
    tt_tensor *x;
    ck_assert_int_eq(tt_idx_load(path, &x), TT_OK);
    ck_assert_int_eq(x->dtype, TT_F32);
    ck_assert_int_eq(x->ndim, 3);
    ck_assert_int_eq(x->shape[0], 2);
    ck_assert_int_eq(x->shape[1], 3);
    ck_assert_int_eq(x->shape[2], 5);
    for (int i = 0; i < 30; i++)
        ck_assert_float_eq(((float *)tt_data(x))[i], (float)(i * 7 % 256));  // 0 .. 203
    tt_release(x);

    const uint32_t big[2] = {1, 300};  // bytes past 255 wrap: every value 0 .. 255 appears
    unsigned char b2[4 + 8 + 300];
    n = idx_bytes(b2, 2, big);
    write_file(path, sizeof path, "wide", b2, n, gz);
    ck_assert_int_eq(tt_idx_load(path, &x), TT_OK);
    float mx = 0;
    for (int i = 0; i < 300; i++) mx = fmaxf(mx, ((float *)tt_data(x))[i]);
    ck_assert_float_eq(mx, 255.0f);
    tt_release(x);
    remove_tmpdir();
}

START_TEST(test_idx_plain) { check_round_trip(false); }
END_TEST

START_TEST(test_idx_gzip) { check_round_trip(true); }
END_TEST

START_TEST(test_idx_inside_scope) {
    make_tmpdir();
    unsigned char buf[64];
    char path[128];
    const uint32_t dims[1] = {4};
    write_file(path, sizeof path, "l.gz", buf, idx_bytes(buf, 1, dims), true);
    tt_scope_begin();
    tt_tensor *y;
    ck_assert_int_eq(tt_idx_load(path, &y), TT_OK);  // owned by the scope
    ck_assert_int_eq(y->shape[0], 4);
    tt_scope_end();
    remove_tmpdir();
}
END_TEST

// ---- validation ----

START_TEST(test_idx_errors) {
    make_tmpdir();
    tt_tensor *t = (tt_tensor *)1;
    char path[128];
    snprintf(path, sizeof path, "%s/none.gz", tmpdir);
    ck_assert_int_eq(tt_idx_load(path, &t), TT_ERR_IO);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "cannot open"));
    ck_assert_int_eq(tt_idx_load(tmpdir, &t), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "is a directory, not a regular file"));

    unsigned char buf[512];
    const uint32_t dims[3] = {2, 3, 4};
    size_t n = idx_bytes(buf, 3, dims);
    for (int gz = 0; gz < 2; gz++) {
        expect_error(buf, 0, gz, TT_ERR_FORMAT, "shorter than the 4-byte IDX header");
        expect_error(buf, 3, gz, TT_ERR_FORMAT, "shorter than the 4-byte IDX header");
        unsigned char bad[512];
        memcpy(bad, buf, n);
        bad[1] = 0x1f;
        expect_error(bad, n, gz, TT_ERR_FORMAT, "is not an IDX file (magic 00 1f");
        memcpy(bad, buf, n);
        bad[2] = 0x0D;
        expect_error(bad, n, gz, TT_ERR_FORMAT, "type code 0x0d (f32); only 0x08");
        bad[2] = 0x08;
        bad[3] = 0;
        expect_error(bad, n, gz, TT_ERR_FORMAT, "declares 0 dims");
        bad[3] = 9;
        expect_error(bad, n, gz, TT_ERR_FORMAT, "declares 9 dims; an IDX file here has 1 .. 8");
        expect_error(buf, 10, gz, TT_ERR_FORMAT, "ends inside its header (3 dims need 12");
        memcpy(bad, buf, n);
        for (int i = 4; i < 16; i++) bad[i] = 0xff;  // (2^32 - 1)^3 elements
        expect_error(bad, n, gz, TT_ERR_FORMAT, "product overflows");
    }
    // A plain file's size is checked against the dims before reading.
    expect_error(buf, n - 1, false, TT_ERR_FORMAT,
                 "is 39 bytes but its header declares 24 elements (40 bytes");
    expect_error(buf, n + 1, false, TT_ERR_FORMAT,
                 "is 41 bytes but its header declares 24 elements (40 bytes");
    // A gzip file: fewer or more elements than declared.
    expect_error(buf, n - 1, true, TT_ERR_FORMAT, "holds 23 of the 24 elements");
    expect_error(buf, n + 1, true, TT_ERR_FORMAT, "holds more data than the 24 elements");
    remove_tmpdir();
}
END_TEST

// A gzip file cut short, or with its deflate data or CRC damaged.
START_TEST(test_idx_gzip_damaged) {
    make_tmpdir();
    unsigned char buf[4096];
    const uint32_t dims[2] = {40, 50};
    size_t n = idx_bytes(buf, 2, dims);
    char path[128];
    write_file(path, sizeof path, "good.gz", buf, n, true);
    unsigned char gz[8192];
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    size_t gn = fread(gz, 1, sizeof gz, f);
    fclose(f);
    ck_assert_uint_gt(gn, 30);
    // Cut inside the deflate data and inside the 8-byte trailer (CRC32, ISIZE).
    const size_t cuts[3] = {gn / 2, gn - 6, gn - 1};
    for (int i = 0; i < 3; i++) {
        write_file(path, sizeof path, "cut.gz", gz, cuts[i], false);
        tt_tensor *t = (tt_tensor *)1;
        ck_assert_int_eq(tt_idx_load(path, &t), TT_ERR_FORMAT);
        ck_assert_ptr_null(t);
        const char *msg = tt_last_error();
        if (!strstr(msg, "truncated") || !strstr(msg, path))
            ck_abort_msg("cut at %zu of %zu: message '%s' does not say truncated", cuts[i], gn,
                         msg);
    }
    // A wrong CRC: zlib's "incorrect data check".
    unsigned char bad[8192];
    memcpy(bad, gz, gn);
    bad[gn - 8] ^= 0xff;
    write_file(path, sizeof path, "crc.gz", bad, gn, false);
    tt_tensor *t;
    ck_assert_int_eq(tt_idx_load(path, &t), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "download the file again"));
    remove_tmpdir();
}
END_TEST

// ---- Fashion-MNIST ----

START_TEST(test_fashion_mnist_missing) {
    make_tmpdir();
    tt_tensor *x = (tt_tensor *)1, *y = (tt_tensor *)1;
    ck_assert_int_eq(tt_fashion_mnist_load(tmpdir, true, &x, &y), TT_ERR_IO);
    ck_assert_ptr_null(x);
    ck_assert_ptr_null(y);
    const char *msg = tt_last_error();
    ck_assert_ptr_nonnull(strstr(msg, "train-images-idx3-ubyte"));
    ck_assert_ptr_nonnull(strstr(msg, "apt-get install dataset-fashion-mnist"));
    // Images present (plain), labels missing: the images are freed (the leak fixture checks).
    unsigned char buf[4096];
    char path[128];
    const uint32_t dims[3] = {2, 28, 28}, ldims[1] = {3};
    write_file(path, sizeof path, "t10k-images-idx3-ubyte", buf, idx_bytes(buf, 3, dims),
               false);
    ck_assert_int_eq(tt_fashion_mnist_load(tmpdir, false, &x, &y), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "t10k-labels-idx1-ubyte"));
    // Labels present (gzip) but 3 of them for 2 images.
    write_file(path, sizeof path, "t10k-labels-idx1-ubyte.gz", buf, idx_bytes(buf, 1, ldims),
               true);
    tt_scope_begin();  // inside a scope too
    ck_assert_int_eq(tt_fashion_mnist_load(tmpdir, false, &x, &y), TT_ERR_FORMAT);
    tt_scope_end();
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "not (N, 28, 28) and (N,)"));
    // Two labels, the second (7) fine, the first 0; then a label of 14.
    unsigned char lab[10] = {0, 0, 8, 1, 0, 0, 0, 2, 0, 7};
    write_file(path, sizeof path, "t10k-labels-idx1-ubyte.gz", lab, 10, true);
    ck_assert_int_eq(tt_fashion_mnist_load(tmpdir, false, &x, &y), TT_OK);
    ck_assert_int_eq(x->shape[0], 2);
    ck_assert_int_eq(((int64_t *)tt_data(y))[1], 7);
    tt_release(x);
    tt_release(y);
    lab[9] = 14;
    write_file(path, sizeof path, "t10k-labels-idx1-ubyte.gz", lab, 10, true);
    ck_assert_int_eq(tt_fashion_mnist_load(tmpdir, false, &x, &y), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "t10k label 1 is 14, outside 0 .. 9"));
    remove_tmpdir();
}
END_TEST

// Debian's files (make deps installs dataset-fashion-mnist); the numbers are those of
// tests/reference/fashion_mnist_stats.py.
static void check_fashion_mnist(bool train) {
    tt_tensor *x, *y;
    tt_status s = tt_fashion_mnist_load(NULL, train, &x, &y);
    if (s != TT_OK) ck_abort_msg("%s (run make deps)", tt_last_error());
    const int64_t N = train ? 60000 : 10000;
    ck_assert_int_eq(x->dtype, TT_F32);
    ck_assert_int_eq(x->ndim, 3);
    ck_assert_int_eq(x->shape[0], N);
    ck_assert_int_eq(x->shape[1], 28);
    ck_assert_int_eq(x->shape[2], 28);
    ck_assert_int_eq(y->dtype, TT_I64);
    ck_assert_int_eq(y->ndim, 1);
    ck_assert_int_eq(y->shape[0], N);
    int64_t hist[10] = {0};
    const int64_t *lab = tt_data(y);
    for (int64_t i = 0; i < N; i++) hist[lab[i]]++;
    for (int k = 0; k < 10; k++) ck_assert_int_eq(hist[k], N / 10);
    const float *px = tt_data(x);
    double sum = 0, first = 0;
    for (int64_t i = 0; i < N * 784; i++) sum += px[i];
    for (int64_t i = 0; i < 784; i++) first += px[i];
    ck_assert_double_eq(sum, train ? 3431114169.0 : 573469082.0);
    ck_assert_double_eq(first, train ? 76247.0 : 33456.0);
    const int64_t want_lab[8] = {9, 0, 0, 3, 0, 2, 7, 2}, want_lab_t[8] = {9, 2, 1, 1, 6, 1, 4, 6};
    ck_assert_mem_eq(lab, train ? want_lab : want_lab_t, sizeof want_lab);
    ck_assert_int_eq(lab[N - 1], 5);
    const float row[28] = {0, 0, 1, 4, 6, 7, 2, 0, 0, 0, 0, 0, 237, 226, 217, 223, 222, 219,
                           222, 221, 216, 223, 229, 215, 218, 255, 77, 0};
    const float row_t[28] = {0, 0, 0, 0, 0, 0, 2, 4, 1, 0, 0, 0, 98, 136, 110, 109, 110, 162,
                             135, 144, 149, 159, 167, 144, 158, 169, 119, 0};
    ck_assert_mem_eq(px + 14 * 28, train ? row : row_t, sizeof row);
    tt_release(x);
    tt_release(y);
}

START_TEST(test_fashion_mnist_train) { check_fashion_mnist(true); }
END_TEST

START_TEST(test_fashion_mnist_test) { check_fashion_mnist(false); }
END_TEST

// ---- aborts ----

START_TEST(test_abort_idx_out_null) {
    tt_expect_abort("tt_idx_load: out is NULL; pass the address of a tt_tensor *");
    tt_idx_load("x.idx", NULL);
}
END_TEST

START_TEST(test_abort_fmnist_null) {
    tt_expect_abort("tt_fashion_mnist_load: images and labels must be addresses");
    tt_tensor *x;
    tt_fashion_mnist_load(NULL, true, &x, NULL);
}
END_TEST

int main(void) {
    Suite *s = suite_create("idx");
    TCase *tc = tt_tcase("idx");
    tcase_add_test(tc, test_idx_plain);
    tcase_add_test(tc, test_idx_gzip);
    tcase_add_test(tc, test_idx_inside_scope);
    tcase_add_test(tc, test_idx_errors);
    tcase_add_test(tc, test_idx_gzip_damaged);
    suite_add_tcase(s, tc);

    TCase *fm = tt_tcase("fashion_mnist");
    tcase_set_timeout(fm, 60);
    tcase_add_test(fm, test_fashion_mnist_missing);
    tcase_add_test(fm, test_fashion_mnist_train);
    tcase_add_test(fm, test_fashion_mnist_test);
    suite_add_tcase(s, fm);

    TCase *ab = tt_tcase_aborts("aborts_idx");
    tcase_add_test_raise_signal(ab, test_abort_idx_out_null, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_fmnist_null, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

// Check suite of data/csv: CSV files written here (plain and gzip, header, CRLF, spaces, no
// final newline), every strictness error and its message (file, line, column), and the real
// digits set of `make data` (its numbers come from tests/reference/digits_stats.py, saved in
// tests/reference/digits_stats.txt).
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "test_util.h"
#include "data/csv.h"

static char tmpdir[64];

static void make_tmpdir(void) { tt_test_mkdtemp(tmpdir, sizeof tmpdir, "csv"); }

static void remove_tmpdir(void) { tt_test_rmdir(tmpdir); }

// Writes n bytes to tmpdir/name, gzip-compressed when gz; returns the path in buf.
static const char *write_file(char *buf, size_t cap, const char *name, const void *data,
                              size_t n, bool gz) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    if (gz) {
        gzFile f = gzopen(buf, "wb");
        ck_assert_ptr_nonnull(f);
        if (n) ck_assert_int_eq(gzwrite(f, data, (unsigned)n), (int)n);
        ck_assert_int_eq(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(buf, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(data, 1, n, f), n);
        ck_assert_int_eq(fclose(f), 0);
    }
    return buf;
}

START_TEST(test_csv_plain_f64) {
    char path[128];
    const char text[] = "1,2,3\n4,5.5,-6e2\n";
    write_file(path, sizeof path, "a.csv", text, sizeof text - 1, false);
    tt_tensor *t = NULL;
    ck_assert_int_eq(tt_csv_load(path, TT_F64, false, &t), TT_OK);
    ck_assert_int_eq(t->dtype, TT_F64);
    ck_assert_int_eq(t->ndim, 2);
    ck_assert_int_eq(t->shape[0], 2);
    ck_assert_int_eq(t->shape[1], 3);
    ck_assert_values(t, 0, 0, 1, 2, 3, 4, 5.5, -600);
    tt_release(t);
}
END_TEST

START_TEST(test_csv_gzip_header_crlf_f32) {
    char path[128];
    // a header of names, CRLF rows, blanks around fields, no final newline
    const char text[] = "a,b\r\n 0.25 ,\t-1\r\n3, 1e-3";
    for (int gz = 0; gz < 2; gz++) {
        write_file(path, sizeof path, gz ? "b.csv.gz" : "b.csv", text, sizeof text - 1, gz);
        tt_tensor *t = NULL;
        ck_assert_int_eq(tt_csv_load(path, TT_F32, true, &t), TT_OK);
        ck_assert_int_eq(t->dtype, TT_F32);
        ck_assert_int_eq(t->shape[0], 2);
        ck_assert_int_eq(t->shape[1], 2);
        ck_assert_values(t, 0, 0, 0.25, -1, 3, (float)1e-3);
        tt_release(t);
    }
}
END_TEST

START_TEST(test_csv_inside_scope) {
    char path[128];
    write_file(path, sizeof path, "c.csv", "7\n8\n", 4, true);
    tt_scope_begin();
    tt_tensor *t = NULL;
    ck_assert_int_eq(tt_csv_load(path, TT_F32, false, &t), TT_OK);
    ck_assert_values(t, 0, 0, 7, 8);
    tt_scope_end();  // the scope owns it
}
END_TEST

// tt_csv_load of text must fail with s and a one-line message holding want (and the path).
static void expect_error(const char *text, size_t n, bool gz, bool header, tt_status s,
                         const char *want) {
    char path[128];
    write_file(path, sizeof path, gz ? "bad.csv.gz" : "bad.csv", text, n, gz);
    tt_tensor *t = (tt_tensor *)1;
    int64_t live = tt_live_tensors();
    tt_status got = tt_csv_load(path, TT_F32, header, &t);
    const char *m = tt_last_error();
    ck_assert_msg(got == s, "status %s, expected %s (%s)", tt_status_str(got), tt_status_str(s),
                  m);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(tt_live_tensors(), live);
    ck_assert_msg(strstr(m, want) && strstr(m, path) && !strchr(m, '\n'),
                  "message '%s' lacks '%s' or the path", m, want);
}
#define EXPECT_ERROR(lit, gz, header, s, want) \
    expect_error((lit), sizeof(lit) - 1, (gz), (header), (s), (want))

START_TEST(test_csv_errors) {
    for (int gz = 0; gz < 2; gz++) {
        EXPECT_ERROR("", gz, false, TT_ERR_FORMAT, "no data rows (the file is empty)");
        EXPECT_ERROR("x,y\n", gz, true, TT_ERR_FORMAT, "no data rows (only a header line)");
        EXPECT_ERROR("1,2,3\n4,5,6\n7,8\n", gz, false, TT_ERR_FORMAT,
                     "line 3 has 2 fields, the first row 3");
        EXPECT_ERROR("1,2\n3,4,5\n", gz, false, TT_ERR_FORMAT, "line 2 has 3 fields");
        EXPECT_ERROR("h\n1,2,3\n4,5,abc\n", gz, true, TT_ERR_FORMAT,
                     "line 3 column 3: 'abc' is not a number");
        EXPECT_ERROR("1,,3\n", gz, false, TT_ERR_FORMAT, "line 1 column 2: '' is not a number");
        EXPECT_ERROR("1,2\n3,4,\n", gz, false, TT_ERR_FORMAT, "line 2 column 3: ''");
        EXPECT_ERROR("1.5x,2\n", gz, false, TT_ERR_FORMAT, "line 1 column 1: '1.5x'");
        EXPECT_ERROR("1 2,3\n", gz, false, TT_ERR_FORMAT, "column 1: '1 2' is not a number");
        EXPECT_ERROR("1,-1\r\a\n", gz, false, TT_ERR_FORMAT, "column 2: '-1\\x0d\\x07' is not");
        EXPECT_ERROR("1,1234567890123456789012345678x\n", gz, false, TT_ERR_FORMAT,
                     "'123456789012345678901234...' is not a number");
        EXPECT_ERROR("1\n\n2\n", gz, false, TT_ERR_FORMAT, "line 2 is empty");
        EXPECT_ERROR("1\n2\n\n", gz, false, TT_ERR_FORMAT, "line 3 is empty");
        EXPECT_ERROR("a,b\n", gz, false, TT_ERR_FORMAT, "header=true");
        EXPECT_ERROR("1\n2\0\n", gz, false, TT_ERR_FORMAT, "line 2 holds a NUL byte");
    }
    char path[128];
    char longnum[200] = "1,0.";  // a number of 150 characters is read whole
    memset(longnum + 4, '0', 150);
    strcpy(longnum + 154, "25\n");
    write_file(path, sizeof path, "long.csv", longnum, strlen(longnum), false);
    tt_tensor *t = NULL;
    ck_assert_int_eq(tt_csv_load(path, TT_F64, false, &t), TT_OK);
    ck_assert_values(t, 0, 0, 1, 25e-152);
    tt_release(t);
    snprintf(path, sizeof path, "%s/missing.csv", tmpdir);
    t = NULL;
    ck_assert_int_eq(tt_csv_load(path, TT_F32, false, &t), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "cannot open"));
    ck_assert_int_eq(tt_csv_load(tmpdir, TT_F32, false, &t), TT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "is a directory"));
}
END_TEST

START_TEST(test_csv_gzip_truncated) {
    // A gzip file cut short: zlib reports it; never a silent short table.
    char path[128];
    snprintf(path, sizeof path, "%s/full.csv.gz", tmpdir);
    char text[4096];
    size_t n = 0;
    for (int i = 0; i < 400; i++) n += (size_t)snprintf(text + n, sizeof text - n, "%d,%d\n", i,
                                                       i * 7 % 13);
    write_file(path, sizeof path, "full.csv.gz", text, n, true);
    FILE *f = fopen(path, "rb");
    unsigned char buf[8192];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert_uint_gt(len, 40);
    write_file(path, sizeof path, "cut.csv.gz", buf, len - 12, false);
    tt_tensor *t = (tt_tensor *)1;
    ck_assert_int_eq(tt_csv_load(path, TT_F32, false, &t), TT_ERR_FORMAT);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "truncated"));
}
END_TEST

// ---- the digits ----

START_TEST(test_digits_real) {
    tt_tensor *x = NULL, *y = NULL;
    tt_status s = tt_digits_load(NULL, &x, &y);
    ck_assert_msg(s == TT_OK, "%s", tt_last_error());
    ck_assert_int_eq(x->dtype, TT_F32);
    ck_assert_int_eq(x->ndim, 4);
    ck_assert_int_eq(x->shape[0], 1797);
    ck_assert_int_eq(x->shape[1], 1);
    ck_assert_int_eq(x->shape[2], 8);
    ck_assert_int_eq(x->shape[3], 8);
    ck_assert_int_eq(y->dtype, TT_I64);
    ck_assert_int_eq(y->ndim, 1);
    ck_assert_int_eq(y->shape[0], 1797);
    // tests/reference/digits_stats.txt
    const int64_t hist[10] = {178, 182, 177, 183, 181, 182, 181, 179, 174, 180};
    int64_t got[10] = {0};
    const int64_t *py = tt_data(y);
    for (int64_t i = 0; i < 1797; i++) got[py[i]]++;
    for (int k = 0; k < 10; k++) ck_assert_int_eq(got[k], hist[k]);
    const float *px = tt_data(x);
    double sum = 0, mx = 0;
    for (int64_t i = 0; i < 1797 * 64; i++) {
        sum += px[i];
        mx = px[i] > mx ? px[i] : mx;
    }
    ck_assert_double_eq(sum, 561718);
    ck_assert_double_eq(mx, 16);
    const double row0[16] = {0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0};
    for (int i = 0; i < 16; i++) ck_assert_double_eq(px[i], row0[i]);  // (0, 0, 0..1, :)
    ck_assert_int_eq(py[0], 0);
    ck_assert_int_eq(py[1796], 8);
    tt_release(x);
    tt_release(y);
}
END_TEST

START_TEST(test_digits_errors) {
    char path[128];
    snprintf(path, sizeof path, "%s/none.csv.gz", tmpdir);
    tt_tensor *x = (tt_tensor *)1, *y = (tt_tensor *)1;
    ck_assert_int_eq(tt_digits_load(path, &x, &y), TT_ERR_IO);
    ck_assert_ptr_null(x);
    ck_assert_ptr_null(y);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "make data"));
    ck_assert_ptr_nonnull(strstr(tt_last_error(), path));
    write_file(path, sizeof path, "three.csv", "1,2,3\n", 6, false);
    ck_assert_int_eq(tt_digits_load(path, &x, &y), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "has 3 columns, not 65"));
    char row[512];
    size_t n = 0;
    for (int i = 0; i < 64; i++) n += (size_t)snprintf(row + n, sizeof row - n, "%d,", i % 17);
    snprintf(row + n, sizeof row - n, "3\n");
    write_file(path, sizeof path, "ok.csv", row, strlen(row), false);
    ck_assert_int_eq(tt_digits_load(path, &x, &y), TT_OK);  // one good row
    ck_assert_int_eq(x->shape[0], 1);
    ck_assert_double_eq(tt_at(x, 63), 63 % 17);
    ck_assert_int_eq((int)tt_at(y, 0), 3);
    tt_release(x);
    tt_release(y);
    row[n] = '1';
    row[n + 1] = '0';  // label 10
    write_file(path, sizeof path, "label.csv", row, strlen(row), false);
    ck_assert_int_eq(tt_digits_load(path, &x, &y), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "line 1 column 65 is 10, not a label"));
    n = 0;
    for (int i = 0; i < 64; i++) n += (size_t)snprintf(row + n, sizeof row - n, "%d,", i ? 1 : 17);
    snprintf(row + n, sizeof row - n, "3\n");  // pixel 17 first
    write_file(path, sizeof path, "pixel.csv", row, strlen(row), false);
    ck_assert_int_eq(tt_digits_load(path, &x, &y), TT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "line 1 column 1 is 17, not a pixel 0 .. 16"));
}
END_TEST

// ---- aborts ----

START_TEST(test_abort_csv_dtype) {
    tt_expect_abort("a CSV loads as f32 or f64");
    tt_tensor *t;
    tt_csv_load("x.csv", TT_I64, false, &t);
}
END_TEST

START_TEST(test_abort_digits_null) {
    tt_expect_abort("images and labels must be addresses");
    tt_tensor *x;
    tt_digits_load(NULL, &x, NULL);
}
END_TEST

int main(void) {
    Suite *s = suite_create("csv");
    TCase *tc = tt_tcase("csv");
    tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
    tcase_add_test(tc, test_csv_plain_f64);
    tcase_add_test(tc, test_csv_gzip_header_crlf_f32);
    tcase_add_test(tc, test_csv_inside_scope);
    tcase_add_test(tc, test_csv_errors);
    tcase_add_test(tc, test_csv_gzip_truncated);
    tcase_add_test(tc, test_digits_real);
    tcase_add_test(tc, test_digits_errors);
    suite_add_tcase(s, tc);

    TCase *ab = tt_tcase_aborts("aborts_csv");
    tcase_add_test_raise_signal(ab, test_abort_csv_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_digits_null, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

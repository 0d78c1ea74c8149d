// Check suite of tensor/file.c: every reader of the library refuses a FIFO, a device or a
// directory at once (never blocks), the atomic writer's temp files are created exclusively (a
// planted symlink is not followed), a save keeps a symlinked target's link and its mode, and
// tt_file_check_outputs refuses each output that would lose data; tt_params_nonfinite.
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "data/csv.h"
#include "data/idx.h"

static char tmpdir[64];

static const char *tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    return buf;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

static bool same_text(const char *path, const char *text) {
    char buf[256] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n == strlen(text) && memcmp(buf, text, n) == 0;
}

// A one-tensor checkpoint holding v at path.
static tt_status save_value(const char *path, double v) {
    tt_checkpoint c;
    tt_ckpt_init(&c);
    tt_ckpt_set_f64(&c, "v", v);
    tt_status s = tt_ckpt_save(&c, path);
    tt_ckpt_free(&c);
    return s;
}

static double load_value(const char *path) {
    tt_checkpoint c;
    ck_assert_msg(tt_ckpt_load(&c, path) == TT_OK, "%s", tt_last_error());
    double v = NAN;
    ck_assert(tt_ckpt_get_f64(&c, "v", &v));
    tt_ckpt_free(&c);
    return v;
}

static void expect_error(tt_status got, const char *want) {
    ck_assert_int_ne(got, TT_OK);
    ck_assert_msg(strstr(tt_last_error(), want), "'%s' lacks '%s'", tt_last_error(), want);
}

// ---- inputs: a FIFO (no writer: an open without O_NONBLOCK would block), a device, a dir ----

START_TEST(test_readers_refuse_special_files) {
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "file");
    char fifo[128];
    tmp_path(fifo, sizeof fifo, "fifo");
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    const char *paths[] = {fifo, "/dev/zero", tmpdir};
    const char *kinds[] = {"is a FIFO", "is a character device", "is a directory"};
    for (int i = 0; i < 3; i++) {
        const char *p = paths[i], *k = kinds[i];
        int fd = 7;
        expect_error(tt_file_open_read(p, "input", &fd), k);
        ck_assert_int_eq(fd, -1);
        tt_checkpoint c;
        expect_error(tt_ckpt_load(&c, p), k);
        tt_safetensors sf;
        expect_error(tt_safetensors_open(&sf, p), k);
        unsigned char *b;
        size_t n;
        expect_error(tt_read_file(p, &b, &n), k);
        tt_bpe bpe;
        expect_error(tt_bpe_load(&bpe, p), k);
        expect_error(tt_bpe_load_gpt2(&bpe, p, p), k);
        tt_tensor *t;
        expect_error(tt_idx_load(p, &t), k);
        expect_error(tt_csv_load(p, TT_F32, false, &t), k);
    }
    // A regular file opens, for ordinary (blocking) reads.
    char reg[128];
    write_text(tmp_path(reg, sizeof reg, "r.txt"), "abc");
    int fd = -1;
    ck_assert_int_eq(tt_file_open_read(reg, "input", &fd), TT_OK);
    char buf[4];
    ck_assert_int_eq(read(fd, buf, 4), 3);
    close(fd);
    tt_test_rmdir(tmpdir);
}
END_TEST

// ---- the atomic writer's temp files, symlinks and modes ----

START_TEST(test_planted_symlink_not_followed) {
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "file");
    char out[128], victim[128], planted[200];
    tmp_path(out, sizeof out, "run.ckpt");
    write_text(tmp_path(victim, sizeof victim, "victim.txt"), "precious");
    // The names an attacker can predict: the pid's (the old scheme) and the pid's plus any
    // suffix is never opened without O_EXCL, so a symlink there is left alone.
    snprintf(planted, sizeof planted, "%s.tmp.%ld", out, (long)getpid());
    ck_assert_int_eq(symlink(victim, planted), 0);
    ck_assert_int_eq(save_value(out, 1.5), TT_OK);
    tt_file_role o = {"--out", out, false, false};
    ck_assert_int_eq(tt_file_check_outputs(&o, 1, NULL, 0), TT_OK);
    ck_assert(same_text(victim, "precious"));
    struct stat st;
    ck_assert(lstat(planted, &st) == 0 && S_ISLNK(st.st_mode));
    ck_assert(load_value(out) == 1.5);
    // Only run.ckpt, the planted link and the victim: no temp file was left behind.
    ck_assert_int_eq(tt_test_count_files(tmpdir, ""), 3);
    tt_test_rmdir(tmpdir);
}
END_TEST

START_TEST(test_symlinked_out_keeps_link_and_mode) {
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "file");
    char target[128], link[128];
    tmp_path(target, sizeof target, "real.ckpt");
    tmp_path(link, sizeof link, "link.ckpt");
    ck_assert_int_eq(save_value(target, 1), TT_OK);
    ck_assert_int_eq(chmod(target, 0600), 0);
    ck_assert_int_eq(symlink("real.ckpt", link), 0);
    ck_assert_int_eq(save_value(link, 2), TT_OK);
    struct stat st;
    ck_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));  // still a link
    ck_assert(load_value(target) == 2);                         // its target updated
    ck_assert(stat(target, &st) == 0);
    ck_assert_int_eq(st.st_mode & 07777, 0600);  // the mode of the file replaced
    ck_assert_int_eq(chmod(target, 0640), 0);
    ck_assert_int_eq(save_value(target, 3), TT_OK);
    ck_assert(stat(target, &st) == 0 && (st.st_mode & 07777) == 0640);
    ck_assert_int_eq(tt_test_count_files(tmpdir, ""), 2);
    tt_test_rmdir(tmpdir);
}
END_TEST

// ---- outputs ----

START_TEST(test_check_outputs_refusals) {
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "file");
    char data[128], fifo[128], sub[128], nodir[160], hard[128], newf[128];
    write_text(tmp_path(data, sizeof data, "d.txt"), "corpus");
    ck_assert_int_eq(mkfifo(tmp_path(fifo, sizeof fifo, "fifo"), 0644), 0);
    ck_assert_int_eq(link(data, tmp_path(hard, sizeof hard, "hard.txt")), 0);
    snprintf(nodir, sizeof nodir, "%s/x.ckpt", data);  // under a regular file
    tmp_path(sub, sizeof sub, "newdir/");
    tmp_path(newf, sizeof newf, "new.ckpt");
    tt_file_role in = {"--data", data, false, false};
    struct {
        const char *path;
        bool in_place;
        const char *want;
    } cases[] = {
        {"", false, "--out is empty"},
        {sub, false, "ends in '/'"},
        {tmpdir, false, "is a directory; pass a file path"},
        {fifo, false, "is a FIFO, which it would replace"},
        {fifo, true, "is a FIFO"},
        {"/dev/null", false, "is a character device, which it would replace"},
        {data, false, "is the same file as --data"},
        {hard, false, "is the same file as --data"},  // another name of one file
        {data, true, "is the same file as --data"},
        {nodir, false, "Not a directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_file_role o = {"--out", cases[i].path, cases[i].in_place, false};
        expect_error(tt_file_check_outputs(&o, 1, &in, 1), cases[i].want);
    }
    // Two outputs that name one file not yet written.
    tt_file_role two[] = {{"--out", newf, false, false}, {"--log", newf, true, false}};
    expect_error(tt_file_check_outputs(two, 2, &in, 1), "--log '");
    ck_assert_ptr_nonnull(strstr(tt_last_error(), "is the same file as --out"));
    // Accepted: a new file, a character device written in place, an input it may replace.
    tt_file_role fine[] = {{"--out", newf, false, false}, {"--log", "/dev/null", true, false},
                           {"--trace", NULL, false, false}};
    ck_assert_int_eq(tt_file_check_outputs(fine, 3, &in, 1), TT_OK);
    tt_file_role resumed = {"--resume", data, false, true};
    tt_file_role out = {"--out", data, false, true}, trace = {"--trace", data, false, false};
    ck_assert_int_eq(tt_file_check_outputs(&out, 1, &resumed, 1), TT_OK);
    expect_error(tt_file_check_outputs(&trace, 1, &resumed, 1), "same file as --resume");
    // Nothing was written or left: the data, the link to it, the FIFO.
    ck_assert(same_text(data, "corpus"));
    struct stat st;
    ck_assert(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    ck_assert(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    ck_assert_int_eq(tt_test_count_files(tmpdir, ""), 3);
    tt_test_rmdir(tmpdir);
}
END_TEST

START_TEST(test_params_nonfinite) {
    tt_params p;
    tt_params_init(&p);
    tt_tensor *a = tt_ones(TT_F32, TT_SHAPE(3)), *b = tt_ones(TT_F64, TT_SHAPE(2, 2));
    tt_params_add(&p, "m", "a", a);
    tt_params_add(&p, "m", "b", b);
    ck_assert_ptr_null(tt_params_nonfinite(&p, NULL));
    int64_t at = -1;
    tt_set_at(b, 3, INFINITY);
    ck_assert_str_eq(tt_params_nonfinite(&p, &at), "m.b");
    ck_assert_int_eq(at, 3);
    tt_set_at(a, 1, NAN);
    ck_assert_str_eq(tt_params_nonfinite(&p, &at), "m.a");
    ck_assert_int_eq(at, 1);
    tt_params_free(&p);
    tt_release(a);
    tt_release(b);
}
END_TEST

// ---- programmer errors ----

START_TEST(test_abort_open_read_null) {
    tt_expect_abort("tt_file_open_read: path, what and fd must be given");
    tt_file_open_read(NULL, "input", NULL);
}
END_TEST

START_TEST(test_abort_check_outputs_null) {
    tt_expect_abort("tt_file_check_outputs: outs and ins must hold n_out and n_in roles");
    tt_file_check_outputs(NULL, 1, NULL, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("file");
    TCase *tc = tt_tcase("file");
    tcase_add_test(tc, test_readers_refuse_special_files);
    tcase_add_test(tc, test_planted_symlink_not_followed);
    tcase_add_test(tc, test_symlinked_out_keeps_link_and_mode);
    tcase_add_test(tc, test_check_outputs_refusals);
    tcase_add_test(tc, test_params_nonfinite);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts_file");
    tcase_add_test_raise_signal(ab, test_abort_open_read_null, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_check_outputs_null, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

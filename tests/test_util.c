// The shared test harness: leak-checking fixture, value assertions and the suite runner.
#include "test_util.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int64_t base_tensors, base_bytes;
static const char *expected_abort;  // set by tt_expect_abort in the running test
static volatile sig_atomic_t abort_matched;  // tt_fatal's message held the expected text

// Every abort in a test goes through tt_fatal, which calls this before abort(). It lets the
// abort through only when the test named a part of the message and the message holds it.
static void fatal_hook(const char *message, void *ctx) {
    (void)ctx;
    if (expected_abort && strstr(message, expected_abort)) {
        abort_matched = 1;
        return;  // abort(): the test passes
    }
    if (expected_abort)
        fprintf(stderr, "abort test: the message lacks \"%s\": %s\n", expected_abort, message);
    else
        fprintf(stderr, "abort test: unexpected abort (no tt_expect_abort): %s\n", message);
    fflush(stderr);
    _exit(3);
}

// A SIGABRT that did not come through the hook with the expected text (assert, the C library's
// heap checks, a raw abort()) fails the test too: the signal alone proves nothing.
static void sigabrt_handler(int sig) {
    if (abort_matched) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    static const char msg[] = "abort test: SIGABRT without a tt_fatal message\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(3);
}

// Runs in each test's forked child before the test.
static void hook_aborts(void) {
    expected_abort = NULL;
    abort_matched = 0;
    tt_set_fatal_hook(fatal_hook, NULL);
    signal(SIGABRT, sigabrt_handler);
}

// Installs the hook itself too, so the check holds even in a case made without the fixtures.
void tt_expect_abort(const char *substring) {
    hook_aborts();
    expected_abort = substring;
}

void tt_test_setup(void) {
    hook_aborts();
    base_tensors = tt_live_tensors();
    base_bytes = tt_live_bytes();
}

void tt_test_teardown(void) {
    ck_assert_int_eq(tt_scope_depth(), 0);
    ck_assert_msg(tt_live_tensors() == base_tensors,
                  "leak: %lld live tensors after the test, %lld before",
                  (long long)tt_live_tensors(), (long long)base_tensors);
    ck_assert_msg(tt_live_bytes() == base_bytes, "leak: %lld live bytes after, %lld before",
                  (long long)tt_live_bytes(), (long long)base_bytes);
}

TCase *tt_tcase_aborts(const char *name) {
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, hook_aborts, NULL);
    tcase_set_timeout(tc, 120);
    return tc;
}

TCase *tt_tcase(const char *name) {
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, tt_test_setup, tt_test_teardown);
    tcase_set_timeout(tc, 120);
    return tc;
}

int tt_test_run(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

void tt_assert_values(const tt_tensor *t, const double *expected, int64_t n, double atol,
                      double rtol, const char *file, int line) {
    ck_assert_msg(tt_numel(t) == n, "%s:%d: tensor has %lld elements, expected %lld", file,
                  line, (long long)tt_numel(t), (long long)n);
    for (int64_t i = 0; i < n; i++) {
        double v = tt_at(t, i), e = expected[i];
        bool ok = isnan(e) ? isnan(v) : isinf(e) ? v == e : fabs(v - e) <= atol + rtol * fabs(e);
        ck_assert_msg(ok, "%s:%d: element %lld is %.10g, expected %.10g", file, line,
                      (long long)i, v, e);
    }
}

tt_tensor *tt_test_tensor_(tt_dtype dtype, int ndim, const int64_t *shape, const double *v,
                           int64_t n) {
    tt_tensor *t = tt_empty(dtype, ndim, shape);
    ck_assert_msg(tt_numel(t) == n, "literal has %lld values for shape of %lld elements",
                  (long long)n, (long long)tt_numel(t));
    for (int64_t i = 0; i < n; i++) tt_set_at(t, i, v[i]);
    return t;
}

const char *tt_test_write_file(char *path, size_t cap, const char *dir, const char *name,
                               const void *data, size_t n) {
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

void tt_test_mkdtemp(char *dir, size_t cap, const char *tag) {
    ck_assert(snprintf(dir, cap, "/tmp/tt_test_%s_XXXXXX", tag) < (int)cap);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

void tt_test_rmdir(const char *dir) {
    char cmd[128];
    ck_assert(snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) < (int)sizeof cmd);
    ck_assert_int_eq(system(cmd), 0);
}

int tt_test_count_files(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open directory %s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
             strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

double *tt_test_values(const tt_tensor *t) {
    double *v = malloc((size_t)tt_numel(t) * sizeof *v);
    ck_assert_ptr_nonnull(v);
    tt_to_f64_array(t, v);
    return v;
}

bool tt_test_same_values(const tt_tensor *a, const tt_tensor *b) {
    if (tt_numel(a) != tt_numel(b)) return false;
    double *x = tt_test_values(a), *y = tt_test_values(b);
    bool same = true;
    for (int64_t i = 0; i < tt_numel(a); i++) same = same && x[i] == y[i];
    free(x), free(y);
    return same;
}

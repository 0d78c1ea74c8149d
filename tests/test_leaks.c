// The live-tensor report, the leak report at exit, scopes left open and the use-after-free
// message: each names the tensor (shape, dtype, the op that made it) and, under the debug
// switch (TT_DEBUG=origin, tt_set_debug_origin), the place in this file.
#include "test_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

// What f holds, as one string (tt_free it).
static char *slurp(FILE *f) {
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    char *buf = tt_calloc_at((size_t)n + 1, 1, __FILE__, __LINE__);
    rewind(f);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    return buf;
}

static char *live_report(void) {
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    tt_live_report(f);
    char *s = slurp(f);
    fclose(f);
    return s;
}

#define ASSERT_HAS(text, part) ck_assert_msg(strstr((text), (part)), "no \"%s\" in:\n%s", \
                                             (part), (text))

START_TEST(test_live_report_names_and_groups) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_tensor *a = tt_randn(&rng, TT_F32, TT_SHAPE(2, 3));
    tt_tensor *b = tt_ones(TT_F32, TT_SHAPE(3, 4));
    tt_tensor *c = tt_matmul(a, b);
    tt_tensor *z[3];
    for (int i = 0; i < 3; i++) z[i] = tt_zeros(TT_F64, TT_SHAPE(5));
    tt_set_name(b, "w");
    char *s = live_report();
    ASSERT_HAS(s, "tinytorch: 6 live tensors, 224 bytes of storage\n");
    ASSERT_HAS(s, "  1 x (2, 4) f32 made by matmul, 32 bytes\n");
    ASSERT_HAS(s, "  1 x (3, 4) f32 made by tt_ones \"w\", 48 bytes\n");
    ASSERT_HAS(s, "  3 x (5,) f64 made by tt_zeros, 40 bytes each\n");
    ASSERT_HAS(s, "  1 x (2, 3) f32 made by tt_randn, 24 bytes\n");
    // biggest first: the three (5,) (120 bytes) before the (3, 4) (48) before the (2, 4)
    ck_assert((uintptr_t)strstr(s, "3 x (5,)") < (uintptr_t)strstr(s, "(3, 4)"));
    ck_assert((uintptr_t)strstr(s, "(3, 4)") < (uintptr_t)strstr(s, "(2, 4)"));
    tt_free(s);
    tt_release(a);
    tt_release(b);
    tt_release(c);
    for (int i = 0; i < 3; i++) tt_release(z[i]);
}
END_TEST

// The case: a 1-element view of a dataset, the dataset itself released.
START_TEST(test_live_report_view_keeps_base) {
    tt_tensor *data = tt_zeros(TT_F32, TT_SHAPE(600, 784));
    tt_tensor *one = tt_as_strided(data, TT_SHAPE(1), (int64_t[]){1}, 784);
    tt_tensor *row = tt_slice(data, 0, 2, 3, 1);
    tt_release(data);
    char *s = live_report();
    ASSERT_HAS(s, "tinytorch: 2 live tensors, 1.9 MB of storage\n");
    ASSERT_HAS(s, "  1 x (1,) f32 made by tt_as_strided: a 1-element view keeping a (600, 784) "
               "f32 tensor of 1.9 MB alive\n");
    ASSERT_HAS(s, "  1 x (1, 784) f32 made by slice: a 784-element view keeping a (600, 784) "
               "f32 tensor of 1.9 MB alive\n");
    tt_free(s);
    tt_release(one);
    tt_release(row);
}
END_TEST

START_TEST(test_live_report_empty) {
    char *s = live_report();
    ck_assert_str_eq(s, "tinytorch: 0 live tensors, 0 bytes of storage\n");
    tt_free(s);
}
END_TEST

// ---- at exit (in a child process, its stderr captured) ----

static tt_tensor *volatile leaked;  // a global: LeakSanitizer stays quiet

static char *stderr_of(void (*body)(void)) {
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        setenv("TT_LEAK_REPORT", "1", 1);
        body();
        exit(0);
    }
    close(fd[1]);
    static char buf[8192];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof buf - 1 && (k = read(fd[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = 0;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d, stderr: %s", status,
                  buf);
    return buf;
}

// TT_LEAK_REPORT=1: a program that drops the result of an op outside any scope hears of it on
// stderr at exit (the user of the issue lost tt_mul_scalar(w, 0.1) this way).
static void drop_a_product(void) {
    tt_tensor *w = tt_ones(TT_F32, TT_SHAPE(3));
    leaked = tt_mul_scalar(w, 0.1);  // never released
    tt_release(w);
}

START_TEST(test_leak_at_exit_lists_tensor) {
    char *s = stderr_of(drop_a_product);
    ASSERT_HAS(s, "tinytorch: 1 tensors (12 bytes of storage) still live at exit: 1 made "
               "outside any scope was never released (call tt_release on each, or make it "
               "inside tt_scope_begin()/tt_scope_end())\n");
    ASSERT_HAS(s, "  1 x (3,) f32 made by mul_scalar, 12 bytes\n");
    ck_assert_ptr_null(strstr(s, "scope still open"));
}
END_TEST

// A loop left by break before its tt_scope_end: the tensor is the open scope's, not unscoped.
__attribute__((noinline)) static void leave_scope_open(void) {
    tt_tensor *w = tt_ones(TT_F32, TT_SHAPE(2, 2));
    for (int i = 0; i < 3; i++) {
        tt_scope_begin();
        tt_tensor *y = tt_add(w, w);
        if (tt_item(tt_sum_all(y)) > 0) break;  // forgets tt_scope_end
        tt_scope_end();
    }
    leaked = w;
}

static void scope_open_plain(void) { leave_scope_open(); }

static void scope_open_debug(void) {
    tt_set_debug_origin(true);
    leave_scope_open();
}

START_TEST(test_open_scope_at_exit) {
    char *s = stderr_of(scope_open_plain);
    ASSERT_HAS(s, "still live at exit: 1 made outside any scope was never released (call "
               "tt_release on each, or make it inside tt_scope_begin()/tt_scope_end()); 2 owned "
               "by scopes never ended (listed below)\n");
    ASSERT_HAS(s, "  1 x (2, 2) f32 made by add, 16 bytes, owned by the open scope at depth 1\n");
    ASSERT_HAS(s, "  1 x () f32 made by sum, 4 bytes, owned by the open scope at depth 1\n");
    ASSERT_HAS(s, "tinytorch: 1 scope still open at exit (a tt_scope_begin without its "
               "tt_scope_end: a loop left by break, continue or return?):\n"
               "  the scope at depth 1 (owning 2 tensors) opened at ? (TT_DEBUG=origin in the "
               "environment says where) never ended\n");
}
END_TEST

START_TEST(test_open_scope_at_exit_names_the_place) {
    char *s = stderr_of(scope_open_debug);
    ASSERT_HAS(s, "  the scope at depth 1 (owning 2 tensors) opened at tests/test_leaks.c:");
    ASSERT_HAS(s, " (leave_scope_open) < tests/test_leaks.c:");
    ASSERT_HAS(s, " never ended\n");
    ASSERT_HAS(s, "  1 x (2, 2) f32 made by add, 16 bytes, owned by the open scope at depth 1\n"
               "      made at tests/test_leaks.c:");
}
END_TEST

static void scopes_in_a_loop(void) {
    for (int i = 0; i < 1000; i++) tt_scope_begin();
}

START_TEST(test_deep_scopes_warn) {
    char *s = stderr_of(scopes_in_a_loop);
    ASSERT_HAS(s, "tinytorch: warning: 1000 scopes open on this thread: the scope opened at ? "
               "(TT_DEBUG=origin in the environment says where) never ended? (a tt_scope_begin "
               "in a loop without its tt_scope_end)\n");
    ASSERT_HAS(s, "tinytorch: 1000 scopes still open at exit");
    ASSERT_HAS(s, "  the scope at depth 1000 (owning 0 tensors) opened at ?");
    ASSERT_HAS(s, "  ... 991 more\n  the scope at depth 1 (owning 0 tensors)");
}
END_TEST

// ---- use after free ----

START_TEST(test_use_after_free_names_op) {
    tt_expect_abort("tt_add: tensor (2, 4) f32 made by matmul was used after it was freed: made "
                    "inside a scope that has ended? tt_keep it (or it was released: hold a "
                    "reference with tt_retain while you use it) (TT_DEBUG=origin in the "
                    "environment names where it was made and released)");
    tt_tensor *a = tt_ones(TT_F32, TT_SHAPE(2, 3)), *b = tt_ones(TT_F32, TT_SHAPE(3, 4));
    tt_tensor *c = tt_matmul(a, b);
    tt_release(c);
    tt_add(c, c);
}
END_TEST

__attribute__((noinline)) static tt_tensor *made_in_a_scope(tt_tensor *a) {
    tt_scope_begin();
    tt_tensor *y = tt_relu(a);
    tt_scope_end();
    return y;
}

START_TEST(test_use_after_free_names_places) {
    tt_expect_abort("tt_mul: tensor (3,) f32 made by relu was used after it was freed: made "
                    "inside a scope that has ended? tt_keep it (or it was released: hold a "
                    "reference with tt_retain while you use it) (made at tests/test_leaks.c:");
    tt_set_debug_origin(true);
    tt_tensor *a = tt_ones(TT_F32, TT_SHAPE(3));
    tt_tensor *y = made_in_a_scope(a);
    tt_mul(y, a);
}
END_TEST

// The released-at part of the same message.
START_TEST(test_use_after_free_names_release) {
    tt_expect_abort("; released at tests/test_leaks.c:");
    tt_set_debug_origin(true);
    tt_tensor *a = tt_ones(TT_F32, TT_SHAPE(3));
    tt_mul(made_in_a_scope(a), a);
}
END_TEST

START_TEST(test_double_release_names_op) {
    tt_expect_abort("tt_release: tensor (4,) i64 made by tt_arange was already freed: released "
                    "more often than retained (a double release)");
    tt_tensor *t = tt_arange(TT_I64, 0, 4, 1);
    tt_release(t);
    tt_release(t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("leaks");
    TCase *tc = tt_tcase("live_report");
    tcase_add_test(tc, test_live_report_names_and_groups);
    tcase_add_test(tc, test_live_report_view_keeps_base);
    tcase_add_test(tc, test_live_report_empty);
    tcase_add_test(tc, test_leak_at_exit_lists_tensor);
    tcase_add_test(tc, test_open_scope_at_exit);
    tcase_add_test(tc, test_open_scope_at_exit_names_the_place);
    tcase_add_test(tc, test_deep_scopes_warn);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts_misuse");
    tcase_add_test_raise_signal(ab, test_use_after_free_names_op, SIGABRT);
    tcase_add_test_raise_signal(ab, test_use_after_free_names_places, SIGABRT);
    tcase_add_test_raise_signal(ab, test_use_after_free_names_release, SIGABRT);
    tcase_add_test_raise_signal(ab, test_double_release_names_op, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

// Shared by every Check suite: the leak fixture, tolerances, tensor literals, the runner.
#ifndef TT_TEST_UTIL_H
#define TT_TEST_UTIL_H

#include <check.h>
#include <math.h>

#include "tinytorch.h"

// A test case whose checked fixture asserts that the live-tensor and live-byte counts are
// back where they started when each test ends.
TCase *tt_tcase(const char *name);
void tt_test_setup(void);
void tt_test_teardown(void);

// Abort tests: register with tcase_add_test_raise_signal(tc, test, SIGABRT) and open the test
// with tt_expect_abort("part of the message"). The fixture hooks tt_fatal in the test's child:
// an abort whose message lacks the text, or any abort in a test that expected none, ends the
// child with exit status 3 instead of SIGABRT, so the test fails and prints both messages.
void tt_expect_abort(const char *substring);
// A test case for abort tests: its fixture installs the hook (and checks no leaks: the tests
// never get that far).
TCase *tt_tcase_aborts(const char *name);

// Runs the suite (forking per test, so an abort fails only its test) and returns the exit
// status: 0 when every test passed.
int tt_test_run(Suite *s);

// |a - b| <= atol + rtol * |b|
#define ck_assert_close(a, b, atol, rtol)                                                 \
    do {                                                                                  \
        double tt_a_ = (a), tt_b_ = (b);                                                  \
        ck_assert_msg(fabs(tt_a_ - tt_b_) <= (atol) + (rtol) * fabs(tt_b_),               \
                      "%s = %.10g, expected %s = %.10g", #a, tt_a_, #b, tt_b_);          \
    } while (0)

// Asserts every element of t equals expected[i] within tolerance; prints the first miss.
void tt_assert_values(const tt_tensor *t, const double *expected, int64_t n, double atol,
                      double rtol, const char *file, int line);
#define ck_assert_values(t, atol, rtol, ...)                                              \
    tt_assert_values((t), (const double[]){__VA_ARGS__},                                  \
                     (int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), (atol),  \
                     (rtol), __FILE__, __LINE__)

// A float tensor from literal values: tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 1, 2, 3, 4).
tt_tensor *tt_test_tensor_(tt_dtype dtype, int ndim, const int64_t *shape, const double *v,
                           int64_t n);
#define tt_test_tensor(dtype, ndim_shape, ...) \
    tt_test_tensor_((dtype), ndim_shape, (const double[]){__VA_ARGS__}, \
                    (int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))

#endif  // TT_TEST_UTIL_H

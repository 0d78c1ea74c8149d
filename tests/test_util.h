// Shared by every Check suite: the leak fixture, tolerances, tensor literals, the runner.
#ifndef TT_TEST_UTIL_H
#define TT_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <string.h>

#include "tinytorch.h"

// A test case whose checked fixture asserts that the live-tensor and live-byte counts are
// back where they started when each test ends. An abort in its tests fails them, with the
// message printed.
TCase *tt_tcase(const char *name);
void tt_test_setup(void);
void tt_test_teardown(void);

// Abort tests check the message, not only the signal. Put them in a tt_tcase_aborts case,
// register each with tcase_add_test_raise_signal(tc, test, SIGABRT), and open the test with
// tt_expect_abort("a distinctive part of the message"), one that shows the right reason
// ("dim 3 is out of range", "do not broadcast"), not only the function name. Both fixtures,
// and tt_expect_abort itself, hook tt_fatal in the test's child: the abort goes through only
// when the test named a text and the message holds it. Any other abort ends the child with
// exit status 3 and prints why, so the test fails: a message that lacks the text, an abort in
// a test that called no tt_expect_abort, and a SIGABRT that did not come from tt_fatal
// (assert, a raw abort()). tests/check_abort_tests.sh (in make test) checks the source: every
// SIGABRT test opens with tt_expect_abort. To see the messages a case produces:
// CK_RUN_CASE=<case> CK_VERBOSITY=verbose ./build/tests/test_x
void tt_expect_abort(const char *substring);
// A test case for abort tests: its fixture installs the hook and skips the leak check (the
// tests never get that far).
TCase *tt_tcase_aborts(const char *name);

// A fresh directory "/tmp/tt_test_<tag>_XXXXXX" written into dir (cap >= 64), and the removal
// of one with everything in it; both fail the test when they cannot.
void tt_test_mkdtemp(char *dir, size_t cap, const char *tag);
void tt_test_rmdir(const char *dir);
// Writes the n bytes of data to dir/name (failing the test when it cannot); the path goes to
// path (cap bytes) and is returned.
const char *tt_test_write_file(char *path, size_t cap, const char *dir, const char *name,
                               const void *data, size_t n);
// The number of entries of dir whose name starts with prefix ("" counts all but . and ..).
int tt_test_count_files(const char *dir, const char *prefix);

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

// t's elements as a malloc'd array of doubles (the caller frees it).
double *tt_test_values(const tt_tensor *t);
// Whether a and b hold the same values in the same order (compared in double: exact for f32
// and f64).
bool tt_test_same_values(const tt_tensor *a, const tt_tensor *b);

// A float tensor from literal values: tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 1, 2, 3, 4).
tt_tensor *tt_test_tensor_(tt_dtype dtype, int ndim, const int64_t *shape, const double *v,
                           int64_t n);
#define tt_test_tensor(dtype, ndim_shape, ...) \
    tt_test_tensor_((dtype), ndim_shape, (const double[]){__VA_ARGS__}, \
                    (int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))

// xorshift64* (Vigna 2016): a reproducible stream for the kernel tests that fill raw arrays;
// *state must start nonzero. tt_test_urand: uniform in [-1, 1) from the top 53 bits.
static inline uint64_t tt_test_xorshift(uint64_t *state) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}
static inline double tt_test_urand(uint64_t *state) {
    return (double)(tt_test_xorshift(state) >> 11) / (double)(1ull << 53) * 2 - 1;
}

// The bits of a float and the float of some bits.
static inline float tt_test_f32_of(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline uint32_t tt_test_bits_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

#endif  // TT_TEST_UTIL_H

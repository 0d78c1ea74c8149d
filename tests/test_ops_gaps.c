// Check suite of the places where tinytorch followed PyTorch only for floats: tt_sum of integer
// and bool tensors (TT_I64, exact), tt_mean of them (an abort, as PyTorch's error), tt_sort /
// tt_argsort / tt_topk / tt_cumsum / tt_cumprod on integers, tt_movedim_n and tt_roll_flat.
// The expected values are PyTorch 1.13's, printed by tests/reference/gaps_values.py.
#include <signal.h>

#include "test_util.h"

// An integer tensor of dtype dt from literal values.
static tt_tensor *ints_(tt_dtype dt, int ndim, const int64_t *shape, const int64_t *v) {
    tt_tensor *t = tt_to_dtype(tt_from_data(TT_I64, ndim, shape, v), dt);
    return t;
}
#define INTS(dt, ndim_shape, ...) ints_((dt), ndim_shape, (const int64_t[]){__VA_ARGS__})

// Every element of an i64 tensor equals want[i] exactly (read as int64, not through double).
static void assert_i64(const tt_tensor *t, const int64_t *want, int64_t n, int line) {
    ck_assert_msg(t->dtype == TT_I64, "line %d: dtype %s, expected i64", line,
                  tt_dtype_name(t->dtype));
    ck_assert_msg(tt_numel(t) == n, "line %d: %lld elements, expected %lld", line,
                  (long long)tt_numel(t), (long long)n);
    tt_tensor *c = tt_contiguous((tt_tensor *)t);
    const int64_t *v = tt_data(c);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(v[i] == want[i], "line %d: element %lld is %lld, expected %lld", line,
                      (long long)i, (long long)v[i], (long long)want[i]);
}
#define ASSERT_I64(t, ...)                                                               \
    assert_i64((t), (const int64_t[]){__VA_ARGS__},                                      \
               (int64_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), __LINE__)

static void assert_shape(const tt_tensor *t, int ndim, const int64_t *shape) {
    ck_assert_int_eq(t->ndim, ndim);
    for (int d = 0; d < ndim; d++) ck_assert_int_eq(t->shape[d], shape[d]);
}

static tt_tensor *bools(void) {  // [[T, F, T], [T, T, F]]
    return tt_ne_scalar(INTS(TT_I32, TT_SHAPE(2, 3), 1, 0, 1, 1, 1, 0), 0);
}

// ---- sums ----

START_TEST(test_sum_int_bool) {
    tt_scope_begin();
    tt_tensor *b = bools();
    ck_assert_int_eq(b->dtype, TT_BOOL);
    tt_tensor *s = tt_sum_all(b);
    assert_shape(s, 0, NULL);
    ASSERT_I64(s, 4);
    ASSERT_I64(tt_sum(b, TT_DIMS(0), false), 2, 1, 1);
    tt_tensor *i = INTS(TT_I32, TT_SHAPE(2, 3), 3, -1, 7, 2, 2, -5);
    tt_tensor *k = tt_sum(i, TT_DIMS(1), true);
    assert_shape(k, 2, (int64_t[]){2, 1});
    ASSERT_I64(k, 9, -1);
    // A transposed (non-contiguous) view and several dims at once.
    ASSERT_I64(tt_sum(tt_transpose(i, 0, 1), TT_DIMS(1), false), 5, 1, 2);
    ASSERT_I64(tt_sum(i, TT_DIMS(0, 1), false), 8);
    // int64 is exact beyond 2^53 and wraps around on overflow, as PyTorch.
    tt_tensor *exact = INTS(TT_I64, TT_SHAPE(2), (INT64_C(1) << 53) + 1, 1);
    ASSERT_I64(tt_sum_all(exact), INT64_C(9007199254740994));
    tt_tensor *big = INTS(TT_I64, TT_SHAPE(4), INT64_C(1) << 62, INT64_C(1) << 62,
                          INT64_C(1) << 62, 5);
    ASSERT_I64(tt_sum_all(big), INT64_C(-4611686018427387899));
    // Empty: 0.
    ASSERT_I64(tt_sum_all(tt_zeros(TT_I32, TT_SHAPE(0, 3))), 0);
    ck_assert(!tt_sum_all(i)->requires_grad);
    tt_scope_end();
}
END_TEST

// ---- sort, argsort, topk ----

START_TEST(test_sort_topk_int) {
    tt_scope_begin();
    tt_tensor *s = INTS(TT_I32, TT_SHAPE(2, 4), 3, -1, 7, -1, 2, 9, 2, 0);
    tt_tensor *v, *k;
    tt_sort(s, 1, false, &v, &k);
    ck_assert_int_eq(v->dtype, TT_I32);
    ck_assert_values(tt_to_dtype(v, TT_F64), 0, 0, -1, -1, 3, 7, 0, 2, 2, 9);
    ASSERT_I64(k, 1, 3, 0, 2, 3, 0, 2, 1);
    tt_sort(s, 0, true, &v, &k);
    ck_assert_values(tt_to_dtype(v, TT_F64), 0, 0, 3, 9, 7, 0, 2, -1, 2, -1);
    ASSERT_I64(k, 0, 1, 0, 1, 1, 0, 1, 0);
    ASSERT_I64(tt_argsort(s, 1, false), 1, 3, 0, 2, 3, 0, 2, 1);
    // int64 values that double cannot tell apart keep their exact order.
    tt_tensor *l = INTS(TT_I64, TT_SHAPE(4), (INT64_C(1) << 60) + 1, INT64_C(1) << 60,
                        -(INT64_C(1) << 62), (INT64_C(1) << 60) + 1);
    tt_sort(l, 0, false, &v, &k);
    ASSERT_I64(v, INT64_C(-4611686018427387904), INT64_C(1152921504606846976),
               INT64_C(1152921504606846977), INT64_C(1152921504606846977));
    ASSERT_I64(k, 2, 1, 0, 3);

    // No ties here: PyTorch leaves the order of tied elements in topk unspecified.
    tt_tensor *t = INTS(TT_I32, TT_SHAPE(2, 4), 3, -1, 7, -2, 2, 9, 4, 0);
    tt_topk(t, 2, 1, true, true, &v, &k);
    assert_shape(v, 2, (int64_t[]){2, 2});
    ck_assert_int_eq(v->dtype, TT_I32);
    ck_assert_values(tt_to_dtype(v, TT_F64), 0, 0, 7, 3, 9, 4);
    ASSERT_I64(k, 2, 0, 1, 2);
    tt_topk(t, 1, 1, false, true, &v, &k);
    ck_assert_values(tt_to_dtype(v, TT_F64), 0, 0, -2, 0);
    ASSERT_I64(k, 3, 3);
    tt_topk(t, 1, 1, false, true, NULL, &k);  // either output may be NULL
    ASSERT_I64(k, 3, 3);
    // bool sorts as 0 / 1 and stays bool.
    tt_sort(bools(), 1, true, &v, NULL);
    ck_assert_int_eq(v->dtype, TT_BOOL);
    ck_assert_values(tt_to_dtype(v, TT_F64), 0, 0, 1, 1, 0, 1, 1, 0);
    tt_scope_end();
}
END_TEST

// ---- cumsum, cumprod ----

START_TEST(test_scan_int) {
    tt_scope_begin();
    tt_tensor *s = INTS(TT_I32, TT_SHAPE(2, 4), 3, -1, 7, -1, 2, 9, 2, 0);
    tt_tensor *c = tt_cumsum(s, 1);
    assert_shape(c, 2, (int64_t[]){2, 4});
    ASSERT_I64(c, 3, 2, 9, 8, 2, 11, 13, 13);
    ASSERT_I64(tt_cumsum(bools(), 0), 1, 0, 1, 2, 1, 1);
    ASSERT_I64(tt_cumprod(s, 0), 3, -1, 7, -1, 6, -9, 14, 0);
    tt_tensor *e = tt_cumsum(tt_zeros(TT_I32, TT_SHAPE(0)), 0);  // empty
    ck_assert_int_eq(e->dtype, TT_I64);
    ck_assert_int_eq(tt_numel(e), 0);
    tt_scope_end();
}
END_TEST

// ---- movedim with lists, roll without dims ----

START_TEST(test_movedim_n_roll_flat) {
    tt_scope_begin();
    tt_tensor *x = tt_reshape(tt_arange(TT_F64, 0, 24, 1), TT_SHAPE(2, 3, 4));
    tt_tensor *y = tt_movedim_n(x, 2, (int[]){0, 1}, (int[]){2, 1});
    assert_shape(y, 3, (int64_t[]){4, 3, 2});
    ck_assert_values(y, 0, 0, 0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22,
                     3, 15, 7, 19, 11, 23);
    ck_assert_ptr_eq(y->storage, x->storage);  // a view
    // Negative dims; the unmoved dims (1 and 2) keep their order in the free positions 0, 2.
    tt_tensor *x2 = tt_reshape(tt_arange(TT_F64, 0, 12, 1), TT_SHAPE(2, 1, 3, 2));
    tt_tensor *y2 = tt_movedim_n(x2, 2, (int[]){-1, 0}, (int[]){1, 3});
    assert_shape(y2, 4, (int64_t[]){1, 2, 3, 2});
    ck_assert_values(y2, 0, 0, 0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11);
    // One pair is tt_movedim; none is x itself.
    tt_tensor *m = tt_movedim(x, 2, 0), *mn = tt_movedim_n(x, 1, (int[]){2}, (int[]){0});
    assert_shape(mn, 3, m->shape);
    for (int d = 0; d < 3; d++) ck_assert_int_eq(mn->stride[d], m->stride[d]);
    assert_shape(tt_movedim_n(x, 0, NULL, NULL), 3, x->shape);

    tt_tensor *r = tt_narrow(x, 0, 0, 1);
    r = tt_reshape(r, TT_SHAPE(3, 4));
    tt_tensor *f = tt_roll_flat(r, 2);
    assert_shape(f, 2, (int64_t[]){3, 4});
    ck_assert_values(f, 0, 0, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
    ck_assert_values(tt_roll_flat(r, -7), 0, 0, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6);
    // The gradient flows back through the roll: d sum(w * roll(x)) / dx = roll(w, -shift).
    tt_tensor *a = tt_set_requires_grad(tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 1, 2, 3, 4), true);
    tt_tensor *w = tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 10, 20, 30, 40);
    tt_backward(tt_sum_all(tt_mul(tt_roll_flat(a, 1), w)));
    ck_assert_values(tt_grad(a), 0, 0, 20, 30, 40, 10);
    ck_assert_values(tt_roll_flat(tt_scalar(TT_F64, 2.5), 3), 0, 0, 2.5);
    tt_scope_end();
}
END_TEST

// ---- aborts ----

START_TEST(test_abort_mean_bool) {
    tt_expect_abort("tt_mean: x (2, 3) is bool: the mean of an integer or bool tensor has no "
                    "dtype to infer");
    tt_mean_all(bools());
}
END_TEST

START_TEST(test_abort_mean_int) {
    tt_expect_abort("tt_mean: x (3,) is i64: the mean of an integer or bool tensor");
    tt_mean(tt_zeros(TT_I64, TT_SHAPE(3)), TT_DIMS(0), false);
}
END_TEST

START_TEST(test_abort_sum_int_dim) {
    tt_expect_abort("tt_sum: dim 2 is out of range for x of shape (2, 3)");
    tt_sum(tt_zeros(TT_I32, TT_SHAPE(2, 3)), TT_DIMS(2), false);
}
END_TEST

START_TEST(test_abort_topk_int_k) {
    tt_expect_abort("tt_topk: k = 5 is out of range for dim 0 of size 3");
    tt_tensor *v;
    tt_topk(tt_zeros(TT_I32, TT_SHAPE(3)), 5, 0, true, true, &v, NULL);
}
END_TEST

START_TEST(test_abort_movedim_n_repeat) {
    tt_expect_abort("tt_movedim_n: src lists dim 0 twice");
    tt_movedim_n(tt_zeros(TT_F32, TT_SHAPE(2, 3, 4)), 2, (int[]){0, -3}, (int[]){1, 2});
}
END_TEST

START_TEST(test_abort_movedim_n_repeat_dst) {
    tt_expect_abort("tt_movedim_n: dst lists dim 2 twice");
    tt_movedim_n(tt_zeros(TT_F32, TT_SHAPE(2, 3, 4)), 2, (int[]){0, 1}, (int[]){2, -1});
}
END_TEST

START_TEST(test_abort_movedim_n_count) {
    tt_expect_abort("tt_movedim_n: need 0 <= n <= 2 (x (2, 3)) with n entries in src and dst, "
                    "got n=3");
    tt_movedim_n(tt_zeros(TT_F32, TT_SHAPE(2, 3)), 3, (int[]){0, 1, 2}, (int[]){0, 1, 2});
}
END_TEST

START_TEST(test_abort_movedim_n_range) {
    tt_expect_abort("tt_movedim_n: dim 3 is out of range for a 2-d tensor");
    tt_movedim_n(tt_zeros(TT_F32, TT_SHAPE(2, 3)), 1, (int[]){3}, (int[]){0});
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_gaps");
    TCase *tc = tt_tcase("values");
    tcase_add_test(tc, test_sum_int_bool);
    tcase_add_test(tc, test_sort_topk_int);
    tcase_add_test(tc, test_scan_int);
    tcase_add_test(tc, test_movedim_n_roll_flat);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts_gaps");
    tcase_add_test_raise_signal(ab, test_abort_mean_bool, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_mean_int, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_sum_int_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_topk_int_k, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_movedim_n_repeat, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_movedim_n_repeat_dst, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_movedim_n_count, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_movedim_n_range, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

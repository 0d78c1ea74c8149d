// Check suite of indexing, selection and reductions on integer and bool data: gather, scatter,
// scatter_add, index_select, index_add, masked_select, where (with integer promotion),
// masked_fill / tril / triu and the copies (flip, roll, pad, cat); tt_all / tt_any on every
// dtype; prod, max, min, argmax, argmin, max_dim, min_dim on integers. The expected values are
// PyTorch 1.13's (tests/reference/dtypes_values.h, written by dtypes_values.py), compared
// exactly: int64 values beyond 2^53 must survive, which a round trip through double would lose.
#include <signal.h>

#include "test_util.h"

#include "reference/dtypes_values.h"

#define BIG (INT64_C(1) << 53)

// ---- helpers ----

// A tensor of dtype dt (i32, i64 or bool) holding v exactly (i64 without a trip through double).
static tt_tensor *ints_(tt_dtype dt, int ndim, const int64_t *shape, const int64_t *v) {
    tt_tensor *t = tt_from_data(TT_I64, ndim, shape, v);
    return dt == TT_I64 ? t : tt_to_dtype(t, dt);  // i32 and bool values fit a double
}
#define INTS(dt, ndim_shape, ...) ints_((dt), ndim_shape, (const int64_t[]){__VA_ARGS__})

// t has dtype dt, shape (ndim, shape) and the values want[0 .. n), compared exactly.
static void expect_(const tt_tensor *t, tt_dtype dt, int ndim, const int64_t *shape,
                    const int64_t *want, int64_t n, int line) {
    ck_assert_msg(t->dtype == dt, "line %d: dtype %s, expected %s", line,
                  tt_dtype_name(t->dtype), tt_dtype_name(dt));
    ck_assert_msg(t->ndim == ndim, "line %d: %d dims, expected %d", line, t->ndim, ndim);
    for (int d = 0; d < ndim; d++)
        ck_assert_msg(t->shape[d] == shape[d], "line %d: shape %s", line,
                      t->shape[d] == shape[d] ? "" : "differs");
    ck_assert_msg(tt_numel(t) == n, "line %d: %lld elements, expected %lld", line,
                  (long long)tt_numel(t), (long long)n);
    ck_assert(!t->requires_grad);
    tt_tensor *c = tt_contiguous((tt_tensor *)t);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = dt == TT_I64 ? ((const int64_t *)tt_data(c))[i]
                  : dt == TT_I32 ? ((const int32_t *)tt_data(c))[i]
                                 : ((const uint8_t *)tt_data(c))[i];
        ck_assert_msg(v == want[i], "line %d: element %lld is %lld, expected %lld", line,
                      (long long)i, (long long)v, (long long)want[i]);
    }
}
// EXPECT(t, TT_I64, TT_SHAPE(2, 3), ref_gather_i64): a reference array of the header.
#define EXPECT(t, dt, ndim_shape, ref) \
    expect_((t), (dt), ndim_shape, (ref), (int64_t)(sizeof(ref) / sizeof(int64_t)), __LINE__)
#define EXPECT_SCALAR(t, dt, ref) expect_((t), (dt), 0, NULL, (ref), 1, __LINE__)

// The inputs of dtypes_values.py.
static tt_tensor *x_i64(void) {  // (2, 3), values a double cannot hold
    return INTS(TT_I64, TT_SHAPE(2, 3), BIG + 1, -(INT64_C(1) << 62) + 3, 7, INT64_MAX,
                INT64_MIN, BIG + 3);
}
static tt_tensor *x_i32(void) {
    return INTS(TT_I32, TT_SHAPE(2, 3), 5, -2, INT32_MAX, 0, 9, INT32_MIN);
}
static tt_tensor *x_bool(void) { return INTS(TT_BOOL, TT_SHAPE(2, 3), 1, 0, 1, 0, 0, 1); }
static tt_tensor *idx(void) { return INTS(TT_I64, TT_SHAPE(2, 3), 1, 0, 1, 0, 1, 0); }

// ---- gather, scatter, scatter_add ----

START_TEST(test_gather_scatter) {
    tt_scope_begin();
    tt_tensor *x = x_i64(), *xi = x_i32(), *xb = x_bool();
    EXPECT(tt_gather(x, 0, idx()), TT_I64, TT_SHAPE(2, 3), ref_gather_i64);
    tt_tensor *j32 = INTS(TT_I32, TT_SHAPE(2, 2), 2, 2, 1, 0);  // an i32 index
    EXPECT(tt_gather(xi, 1, j32), TT_I32, TT_SHAPE(2, 2), ref_gather_i32_dim1);
    EXPECT(tt_gather(xb, 0, idx()), TT_BOOL, TT_SHAPE(2, 3), ref_gather_bool);
    // scatter: duplicate targets, the last write (row-major) wins
    tt_tensor *j = INTS(TT_I64, TT_SHAPE(2, 3), 1, 1, 0, 1, 1, 0);
    EXPECT(tt_scatter(x, 1, j, tt_flip(x, TT_DIMS(0))), TT_I64, TT_SHAPE(2, 3), ref_scatter_i64);
    EXPECT(tt_scatter(xb, 0, idx(), tt_logical_not(xb)), TT_BOOL, TT_SHAPE(2, 3),
           ref_scatter_bool);
    // scatter_add: exact beyond 2^53 and wrapping (INT64_MAX + 1), i32 wrapping, bool or
    EXPECT(tt_scatter_add(x, 0, idx(), tt_ones(TT_I64, TT_SHAPE(2, 3))), TT_I64,
           TT_SHAPE(2, 3), ref_scatter_add_i64);
    tt_tensor *k = INTS(TT_I64, TT_SHAPE(2, 3), 2, 2, 2, 2, 1, 2);
    EXPECT(tt_scatter_add(xi, 1, k, tt_ones(TT_I32, TT_SHAPE(2, 3))), TT_I32, TT_SHAPE(2, 3),
           ref_scatter_add_i32_wrap);
    EXPECT(tt_scatter_add(xb, 0, idx(), xb), TT_BOOL, TT_SHAPE(2, 3), ref_scatter_add_bool);
    // x is left alone (out of place)
    ck_assert(((const int64_t *)tt_data(x))[3] == INT64_MAX);
    tt_scope_end();
}
END_TEST

// ---- index_select, index_add, masked_select ----

START_TEST(test_index_select_add) {
    tt_scope_begin();
    tt_tensor *x = x_i64(), *xi = x_i32(), *xb = x_bool();
    EXPECT(tt_index_select(x, 1, INTS(TT_I64, TT_SHAPE(3), 2, 0, 2)), TT_I64, TT_SHAPE(2, 3),
           ref_index_select_i64);
    // a transposed (non-contiguous) x and an i32 index
    EXPECT(tt_index_select(tt_transpose(xi, 0, 1), 0, INTS(TT_I32, TT_SHAPE(2), 1, 1)), TT_I32,
           TT_SHAPE(2, 2), ref_index_select_i32_t);
    EXPECT(tt_index_select(xb, 0, INTS(TT_I64, TT_SHAPE(1), 1)), TT_BOOL, TT_SHAPE(1, 3),
           ref_index_select_bool);
    tt_tensor *src = INTS(TT_I64, TT_SHAPE(2, 2), 1, 2, 3, 4);
    EXPECT(tt_index_add(x, 1, INTS(TT_I64, TT_SHAPE(2), 2, 2), src, 3), TT_I64, TT_SHAPE(2, 3),
           ref_index_add_i64_alpha3);
    // alpha truncated to an integer, as PyTorch; i32 overflow wraps
    EXPECT(tt_index_add(xi, 1, INTS(TT_I64, TT_SHAPE(2), 0, 1), tt_to_dtype(src, TT_I32), 2.5),
           TT_I32, TT_SHAPE(2, 3), ref_index_add_i32_alpha2_5);
    tt_tensor *t = tt_ones(TT_BOOL, TT_SHAPE(2, 2)), *ones = INTS(TT_I64, TT_SHAPE(2), 1, 1);
    EXPECT(tt_index_add(xb, 1, ones, t, 0), TT_BOOL, TT_SHAPE(2, 3), ref_index_add_bool_alpha0);
    EXPECT(tt_index_add(xb, 1, ones, t, 1), TT_BOOL, TT_SHAPE(2, 3), ref_index_add_bool);
    EXPECT(tt_masked_select(x, xb), TT_I64, TT_SHAPE(3), ref_masked_select_i64);
    EXPECT(tt_masked_select(xb, INTS(TT_BOOL, TT_SHAPE(3), 1, 0, 1)), TT_BOOL, TT_SHAPE(4),
           ref_masked_select_bool);
    tt_scope_end();
}
END_TEST

// ---- where, masked_fill, tril / triu, copies ----

START_TEST(test_where_fill_copies) {
    tt_scope_begin();
    tt_tensor *x = x_i64(), *xi = x_i32(), *xb = x_bool();
    EXPECT(tt_where(xb, x, tt_flip(x, TT_DIMS(1))), TT_I64, TT_SHAPE(2, 3), ref_where_i64);
    // PyTorch's promotion: i32 with i64 is i64; a 0-dim operand widens only a lower kind
    EXPECT(tt_where(xb, xi, x), TT_I64, TT_SHAPE(2, 3), ref_where_i32_i64);
    tt_tensor *five = tt_full(TT_I32, TT_SCALAR_SHAPE, 5), *seven = tt_full(TT_I64, 0, NULL, 7);
    EXPECT(tt_where(xb, xb, five), TT_I32, TT_SHAPE(2, 3), ref_where_bool_i32_0d);
    EXPECT(tt_where(xb, xi, seven), TT_I32, TT_SHAPE(2, 3), ref_where_i32_i64_0d);
    EXPECT(tt_masked_fill(x, xb, -3), TT_I64, TT_SHAPE(2, 3), ref_masked_fill_i64);
    // the ends of the range: -2^63 is an i64; any value is a bool (nonzero: true)
    EXPECT(tt_masked_fill(x, xb, -0x1p63), TT_I64, TT_SHAPE(2, 3),
           ((const int64_t[]){INT64_MIN, -(INT64_C(1) << 62) + 3, INT64_MIN, INT64_MAX,
                              INT64_MIN, INT64_MIN}));
    EXPECT(tt_masked_fill(xb, tt_logical_not(xb), 1e30), TT_BOOL, TT_SHAPE(2, 3),
           ((const int64_t[]){1, 1, 1, 1, 1, 1}));
    EXPECT(tt_tril(xi, 0), TT_I32, TT_SHAPE(2, 3), ref_tril_i32);
    EXPECT(tt_triu(tt_ones(TT_BOOL, TT_SHAPE(3, 3)), 1), TT_BOOL, TT_SHAPE(3, 3), ref_triu_bool);
    EXPECT(tt_flip(x, TT_DIMS(0, 1)), TT_I64, TT_SHAPE(2, 3), ref_flip_i64);
    EXPECT(tt_roll(x, 1, 1), TT_I64, TT_SHAPE(2, 3), ref_roll_i64);
    EXPECT(tt_pad(x, 2, (int64_t[]){1, 0}, TT_PAD_CONSTANT, -1), TT_I64, TT_SHAPE(2, 4),
           ref_pad_i64);
    tt_tensor *parts[2] = {x, tt_narrow(x, 0, 0, 1)};
    EXPECT(tt_cat(2, parts, 0), TT_I64, TT_SHAPE(3, 3), ref_cat_i64);
    tt_scope_end();
}
END_TEST

// ---- all, any ----

START_TEST(test_all_any) {
    tt_scope_begin();
    tt_tensor *f = tt_test_tensor(TT_F32, TT_SHAPE(2, 3), 1, NAN, 0, 2, -1, 3);
    EXPECT(tt_all(f, TT_DIMS(1), false), TT_BOOL, TT_SHAPE(2), ref_all_f32_dim1);
    EXPECT(tt_any(f, TT_DIMS(1), true), TT_BOOL, TT_SHAPE(2, 1), ref_any_f32_dim1_keep);
    EXPECT_SCALAR(tt_all_all(tt_full(TT_F64, TT_SHAPE(1), NAN)), TT_BOOL, ref_all_nan);
    EXPECT_SCALAR(tt_all_all(INTS(TT_I64, TT_SHAPE(3), INT64_C(1) << 62, -1, BIG + 1)), TT_BOOL,
                  ref_all_i64_big);
    tt_tensor *a = INTS(TT_I64, TT_SHAPE(2, 3), 0, 0, INT64_C(1) << 40, 0, 0, 0);
    EXPECT(tt_any(a, TT_DIMS(0), false), TT_BOOL, TT_SHAPE(3), ref_any_i64_dim0);
    EXPECT_SCALAR(tt_all_all(x_bool()), TT_BOOL, ref_all_bool_all);
    EXPECT_SCALAR(tt_any_all(x_bool()), TT_BOOL, ref_any_bool_all);
    // over zero elements: all is true, any false
    EXPECT_SCALAR(tt_all_all(tt_zeros(TT_I32, TT_SHAPE(0))), TT_BOOL, ref_all_empty);
    EXPECT_SCALAR(tt_any_all(tt_zeros(TT_F32, TT_SHAPE(0))), TT_BOOL, ref_any_empty);
    EXPECT(tt_all(tt_zeros(TT_F32, TT_SHAPE(2, 0)), TT_DIMS(1), false), TT_BOOL, TT_SHAPE(2),
           ref_all_empty_dim);
    EXPECT(tt_any(tt_zeros(TT_BOOL, TT_SHAPE(2, 0)), TT_DIMS(-1), false), TT_BOOL, TT_SHAPE(2),
           ref_any_empty_dim);
    // several dims at once (torch.all in 1.13 takes one): all dims but none of size 0
    tt_tensor *m = tt_ones(TT_I32, TT_SHAPE(2, 3, 4));
    tt_set_at(m, 5, 0);
    tt_tensor *r = tt_all(m, TT_DIMS(0, 2), false);  // element 5 is at (0, 1, 1)
    EXPECT(r, TT_BOOL, TT_SHAPE(3), ((const int64_t[]){1, 0, 1}));
    // a float that requires grad gives a bool without history
    tt_tensor *w = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(2)), true);
    ck_assert(!tt_any_all(w)->requires_grad);
    tt_scope_end();
}
END_TEST

// ---- prod, max, min, argmax, argmin, max_dim, min_dim on integers ----

START_TEST(test_int_reductions) {
    tt_scope_begin();
    tt_tensor *p = INTS(TT_I32, TT_SHAPE(2, 3), 3, -4, 5, 1 << 20, 1 << 20, 1 << 20);
    EXPECT(tt_prod(p, TT_DIMS(1), false), TT_I64, TT_SHAPE(2), ref_prod_i32_dim1);
    EXPECT_SCALAR(tt_prod(INTS(TT_I64, TT_SHAPE(3), INT64_C(1) << 62, 4, 3), 0, NULL, false),
                  TT_I64, ref_prod_i64_wrap);
    EXPECT(tt_prod(x_bool(), TT_DIMS(0), false), TT_I64, TT_SHAPE(3), ref_prod_bool);
    EXPECT(tt_prod(tt_zeros(TT_I32, TT_SHAPE(2, 0)), TT_DIMS(1), false), TT_I64, TT_SHAPE(2),
           ref_prod_i32_empty);
    // ties and neighbours beyond 2^53 (equal as doubles): exact, first index
    tt_tensor *y = INTS(TT_I64, TT_SHAPE(2, 3), BIG, BIG + 1, BIG + 1, INT64_MIN, 5, INT64_MIN);
    EXPECT(tt_max(y, TT_DIMS(1), false), TT_I64, TT_SHAPE(2), ref_amax_i64);
    EXPECT(tt_min(y, TT_DIMS(1), false), TT_I64, TT_SHAPE(2), ref_amin_i64);
    EXPECT(tt_argmax(y, 1, false), TT_I64, TT_SHAPE(2), ref_argmax_i64);
    EXPECT(tt_argmin(y, -1, false), TT_I64, TT_SHAPE(2), ref_argmin_i64);
    tt_tensor *v, *i;
    tt_max_dim(y, 1, true, &v, &i);
    EXPECT(v, TT_I64, TT_SHAPE(2, 1), ref_max_dim_i64_values);
    EXPECT(i, TT_I64, TT_SHAPE(2, 1), ref_max_dim_i64_indices);
    tt_min_dim(x_i32(), 0, false, &v, &i);
    EXPECT(v, TT_I32, TT_SHAPE(3), ref_min_dim_i32_values);
    EXPECT(i, TT_I64, TT_SHAPE(3), ref_min_dim_i32_indices);
    tt_max_dim(x_bool(), 1, false, &v, &i);
    EXPECT(v, TT_BOOL, TT_SHAPE(2), ref_max_dim_bool_values);
    EXPECT(i, TT_I64, TT_SHAPE(2), ref_max_dim_bool_indices);
    tt_min_dim(x_bool(), 1, false, &v, &i);
    EXPECT(v, TT_BOOL, TT_SHAPE(2), ref_min_dim_bool_values);
    EXPECT(i, TT_I64, TT_SHAPE(2), ref_min_dim_bool_indices);
    EXPECT(tt_max(x_bool(), TT_DIMS(0), false), TT_BOOL, TT_SHAPE(3), ref_amax_bool);
    EXPECT_SCALAR(tt_min(x_bool(), 0, NULL, false), TT_BOOL, ref_amin_bool_all);
    EXPECT_SCALAR(tt_max(x_i32(), 0, NULL, false), TT_I32, ref_amax_i32_all);
    // a 0-d integer x reduces like one element
    tt_tensor *z = tt_full(TT_I64, TT_SCALAR_SHAPE, 4);
    EXPECT_SCALAR(tt_argmax(z, 0, false), TT_I64, ((const int64_t[]){0}));
    EXPECT_SCALAR(tt_max(z, TT_DIMS(-1), false), TT_I64, ((const int64_t[]){4}));
    tt_scope_end();
}
END_TEST

// ---- non-contiguous views ----

START_TEST(test_views) {
    tt_scope_begin();
    tt_tensor *x3 = INTS(TT_I32, TT_SHAPE(2, 3, 4), -5, 2, -2, 5, 1, -3, 4, 0, -4, 3, -1, -5, 2,
                         -2, 5, 1, -3, 4, 0, -4, 3, -1, -5, 2);  // (7 i) % 11 - 5
    tt_tensor *t = tt_transpose(x3, 0, 2);                        // (4, 3, 2)
    EXPECT(tt_max(t, TT_DIMS(0, 2), false), TT_I32, TT_SHAPE(3), ref_amax_i32_t_dims02);
    EXPECT(tt_argmin(t, 0, false), TT_I64, TT_SHAPE(3, 2), ref_argmin_i32_t_dim0);
    EXPECT(tt_all(t, TT_DIMS(0, 2), false), TT_BOOL, TT_SHAPE(3), ref_all_i32_t_dims02);
    EXPECT(tt_any(tt_gt_scalar(t, 3), TT_DIMS(1), true), TT_BOOL, TT_SHAPE(4, 1, 2),
           ref_any_i32_t_dim1_keep);
    tt_scope_end();
}
END_TEST

// ---- empty tensors ----

START_TEST(test_empty) {
    tt_scope_begin();
    tt_tensor *x = x_i64(), *none = tt_zeros(TT_I64, TT_SHAPE(0));
    tt_tensor *e = tt_zeros(TT_I64, TT_SHAPE(0, 3));  // no positions
    expect_(tt_index_select(x, 1, none), TT_I64, TT_SHAPE(2, 0), NULL, 0, __LINE__);
    expect_(tt_gather(x, 0, e), TT_I64, TT_SHAPE(0, 3), NULL, 0, __LINE__);
    expect_(tt_masked_select(x, tt_zeros(TT_BOOL, TT_SHAPE(3))), TT_I64, TT_SHAPE(0), NULL, 0,
            __LINE__);
    // nothing scattered: x itself, exactly
    const int64_t xv[] = {BIG + 1, -(INT64_C(1) << 62) + 3, 7, INT64_MAX, INT64_MIN, BIG + 3};
    EXPECT(tt_scatter_add(x, 0, e, e), TT_I64, TT_SHAPE(2, 3), xv);
    EXPECT(tt_scatter(x, 1, e, e), TT_I64, TT_SHAPE(2, 3), xv);
    expect_(tt_max(tt_zeros(TT_I32, TT_SHAPE(0, 3)), TT_DIMS(1), false), TT_I32, TT_SHAPE(0),
            NULL, 0, __LINE__);
    tt_scope_end();
}
END_TEST

// ---- what PyTorch rejects ----

START_TEST(test_abort_argmax_bool) {
    tt_expect_abort("tt_argmax: x (2, 3) is bool, which has no argmax (PyTorch rejects it too); "
                    "convert first (tt_to_dtype(x, TT_I64))");
    tt_argmax(x_bool(), 1, false);
}
END_TEST

START_TEST(test_abort_argmin_bool) {
    tt_expect_abort("tt_argmin: x (2, 3) is bool, which has no argmin");
    tt_argmin(x_bool(), 1, false);
}
END_TEST

START_TEST(test_abort_scatter_add_dtypes) {
    tt_expect_abort("tt_scatter_add: x (2, 3) is i32 but src (2, 3) is i64; they need one dtype "
                    "(as in PyTorch): convert src with tt_to_dtype");
    tt_scatter_add(x_i32(), 0, idx(), tt_ones(TT_I64, TT_SHAPE(2, 3)));
}
END_TEST

START_TEST(test_abort_index_add_dtypes) {
    tt_expect_abort("tt_index_add: x (2, 3) is bool but src (2, 1) is f32");
    tt_index_add(x_bool(), 1, INTS(TT_I64, TT_SHAPE(1), 0), tt_ones(TT_F32, TT_SHAPE(2, 1)), 1);
}
END_TEST

START_TEST(test_abort_where_int_float) {
    tt_expect_abort("tt_where: dtypes differ: (2, 3) i64 vs (2, 3) f32; convert one with "
                    "tt_to_dtype");
    tt_where(x_bool(), x_i64(), tt_zeros(TT_F32, TT_SHAPE(2, 3)));
}
END_TEST

START_TEST(test_abort_max_int_empty) {
    tt_expect_abort("tt_max: the max over zero elements is undefined: x has shape (2, 0)");
    tt_max(tt_zeros(TT_I64, TT_SHAPE(2, 0)), TT_DIMS(1), false);
}
END_TEST

START_TEST(test_abort_argmin_int_empty) {
    tt_expect_abort("tt_argmin: the argmin over zero elements is undefined: dim 1 of x (2, 0)");
    tt_argmin(tt_zeros(TT_I32, TT_SHAPE(2, 0)), 1, false);
}
END_TEST

START_TEST(test_abort_index_int_range) {  // an index beyond int32, read exactly
    tt_expect_abort("tt_gather: index 4294967296 at position 1 (row-major) of index (2,) is out "
                    "of range for dim 0 of size 3");
    tt_gather(INTS(TT_I32, TT_SHAPE(3), 1, 2, 3), 0,
              INTS(TT_I64, TT_SHAPE(2), 0, INT64_C(1) << 32));
}
END_TEST

START_TEST(test_abort_index_add_alpha) {
    tt_expect_abort("tt_index_add: alpha nan does not fit in an int64 (src is i64)");
    tt_index_add(x_i64(), 1, INTS(TT_I64, TT_SHAPE(1), 0), tt_ones(TT_I64, TT_SHAPE(2, 1)), NAN);
}
END_TEST

START_TEST(test_abort_masked_fill_overflow) {
    tt_expect_abort("tt_masked_fill: value nan cannot be converted to i32 without overflow (x is "
                    "(2, 3)");
    tt_masked_fill(x_i32(), x_bool(), NAN);
}
END_TEST

START_TEST(test_abort_all_dim) {
    tt_expect_abort("tt_all: dim 2 is out of range for x of shape (2, 3)");
    tt_all(x_bool(), TT_DIMS(2), false);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_dtypes");
    TCase *tc = tt_tcase("values");
    tcase_add_test(tc, test_gather_scatter);
    tcase_add_test(tc, test_index_select_add);
    tcase_add_test(tc, test_where_fill_copies);
    tcase_add_test(tc, test_all_any);
    tcase_add_test(tc, test_int_reductions);
    tcase_add_test(tc, test_views);
    tcase_add_test(tc, test_empty);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts_dtypes");
    tcase_add_test_raise_signal(ab, test_abort_argmax_bool, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_argmin_bool, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_scatter_add_dtypes, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_index_add_dtypes, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_where_int_float, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_max_int_empty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_argmin_int_empty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_index_int_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_index_add_alpha, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_masked_fill_overflow, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_all_dim, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

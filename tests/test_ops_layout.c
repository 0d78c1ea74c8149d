// Check suite of the creation and layout ops (tensor/create.c: eye, linspace, one_hot;
// autograd/ops_layout.c): values against PyTorch 1.13 (tests/reference/layout_values.py printed
// them), views and copies, backward values, the abort paths. Gradients: gc_ops_layout.c.
#include "test_util.h"

#include <signal.h>

// ---- helpers ----

// 0, 1, ..., numel - 1 in the given shape (contiguous).
static tt_tensor *iota(tt_dtype dtype, int ndim, const int64_t *shape) {
    tt_tensor *t = tt_empty(dtype, ndim, shape);
    for (int64_t i = 0, n = tt_numel(t); i < n; i++) tt_set_at(t, i, (double)i);
    return t;
}

static void assert_shape(const tt_tensor *t, int ndim, const int64_t *shape) {
    ck_assert_int_eq(t->ndim, ndim);
    for (int i = 0; i < ndim; i++)
        ck_assert_msg(t->shape[i] == shape[i], "shape[%d] is %lld, expected %lld", i,
                      (long long)t->shape[i], (long long)shape[i]);
}

// ---- creation ----

START_TEST(test_eye) {
    tt_scope_begin();
    tt_tensor *e = tt_eye(TT_F32, 3, 4);
    assert_shape(e, TT_SHAPE(3, 4));
    ck_assert_values(e, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0);
    assert_shape(tt_eye(TT_I64, 0, 2), TT_SHAPE(0, 2));
    ck_assert_values(tt_eye(TT_F64, 2, 1), 0, 0, 1, 0);
    tt_scope_end();
}
END_TEST

START_TEST(test_linspace) {
    tt_scope_begin();
    // PyTorch's two halves, each from its own end, with a fused multiply-add. Within one ulp:
    // PyTorch's CPU kernel fills SIMD-width blocks as base + j * step, so its last bit depends
    // on the machine's vector width (0.6666666666666666 below where the formula gives ...67).
    ck_assert_values(tt_linspace(TT_F32, -1, 1, 7), 0, 0, -1.0, -0.6666666269302368,
                     -0.3333333134651184, -2.9802322387695312e-08, 0.3333333134651184,
                     0.6666666269302368, 1.0);
    ck_assert_values(tt_linspace(TT_F32, 0, 1, 10), 0, 1.2e-7, 0.0, 0.1111111119389534,
                     0.2222222238779068, 0.3333333432674408, 0.4444444477558136,
                     0.5555555820465088, 0.6666666865348816, 0.7777777910232544,
                     0.8888888955116272, 1.0);
    ck_assert_values(tt_linspace(TT_F64, 0, 1, 10), 0, 2.3e-16, 0.0, 0.1111111111111111,
                     0.2222222222222222, 0.3333333333333333, 0.4444444444444444,
                     0.5555555555555556, 0.6666666666666666, 0.7777777777777777,
                     0.8888888888888888, 1.0);
    ck_assert_values(tt_linspace(TT_F64, 0.1, 2.3, 6), 0, 2.3e-16, 0.1, 0.5399999999999999,
                     0.9799999999999999, 1.42, 1.8599999999999999, 2.3);
    ck_assert_values(tt_linspace(TT_F64, 3, 5, 1), 0, 0, 3.0);
    ck_assert_int_eq(tt_numel(tt_linspace(TT_F64, 3, 5, 0)), 0);
    tt_tensor *li = tt_linspace(TT_I64, 0, 10, 4);
    ck_assert_int_eq(li->dtype, TT_I64);
    ck_assert_values(li, 0, 0, 0, 3, 6, 10);
    ck_assert_values(tt_linspace(TT_I64, -5, 5, 4), 0, 0, -5, -1, 1, 5);  // truncated
    tt_scope_end();
}
END_TEST

START_TEST(test_one_hot) {
    tt_scope_begin();
    tt_tensor *idx = tt_from_data(TT_I64, TT_SHAPE(3), (int64_t[]){2, 0, 1});
    tt_tensor *oh = tt_one_hot(idx, -1);
    ck_assert_int_eq(oh->dtype, TT_I64);
    assert_shape(oh, TT_SHAPE(3, 3));
    ck_assert_values(oh, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0);
    tt_tensor *idx2 = tt_from_data(TT_I32, TT_SHAPE(2, 1), (int32_t[]){1, 3});
    tt_tensor *oh2 = tt_one_hot(idx2, 5);
    assert_shape(oh2, TT_SHAPE(2, 1, 5));
    ck_assert_values(oh2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0);
    // Strided indices, and empty ones with an explicit count.
    tt_tensor *s = tt_slice(tt_from_data(TT_I64, TT_SHAPE(4), (int64_t[]){1, 9, 0, 9}), 0, 0,
                            4, 2);
    ck_assert_values(tt_one_hot(s, 2), 0, 0, 0, 1, 1, 0);
    assert_shape(tt_one_hot(tt_zeros(TT_I64, TT_SHAPE(0)), 4), TT_SHAPE(0, 4));
    tt_scope_end();
}
END_TEST

// ---- layout ops ----

START_TEST(test_tril_triu) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F64, TT_SHAPE(3, 4));
    ck_assert_values(tt_tril(x, 0), 0, 0, 0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0);
    ck_assert_values(tt_tril(x, -1), 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0);
    ck_assert_values(tt_triu(x, 1), 0, 0, 0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11);
    ck_assert_values(tt_triu(iota(TT_F32, TT_SHAPE(2, 3, 4)), -1), 0, 0, 0, 1, 2, 3, 4, 5, 6,
                     7, 0, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 0, 21, 22, 23);
    ck_assert_values(tt_tril(x, 10), 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    ck_assert_values(tt_triu(x, 10), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    // Infinities become 0, not NaN (a mask, not a multiplication).
    tt_tensor *inf = tt_full(TT_F64, TT_SHAPE(2, 2), INFINITY);
    ck_assert_values(tt_tril(inf, 0), 0, 0, INFINITY, 0, INFINITY, INFINITY);
    tt_scope_end();
}
END_TEST

START_TEST(test_repeat_tile) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F64, TT_SHAPE(3, 4));
    tt_tensor *r = tt_repeat(tt_slice(tt_slice(x, 0, 0, 2, 1), 1, 0, 2, 1), TT_SHAPE(2, 1, 3));
    assert_shape(r, TT_SHAPE(2, 2, 6));
    ck_assert_values(r, 0, 0, 0, 1, 0, 1, 0, 1, 4, 5, 4, 5, 4, 5, 0, 1, 0, 1, 0, 1, 4, 5, 4, 5,
                     4, 5);
    tt_tensor *t = tt_tile(tt_slice(x, 0, 0, 1, 1), TT_SHAPE(2));  // (1, 8)
    assert_shape(t, TT_SHAPE(1, 8));
    ck_assert_values(t, 0, 0, 0, 1, 2, 3, 0, 1, 2, 3);
    assert_shape(tt_tile(iota(TT_F64, TT_SHAPE(2, 3, 4)), TT_SHAPE(2)), TT_SHAPE(2, 3, 8));
    assert_shape(tt_repeat(x, TT_SHAPE(0, 2)), TT_SHAPE(0, 8));
    tt_tensor *same = tt_repeat(x, TT_SHAPE(1, 1));  // a copy, like PyTorch's
    ck_assert_ptr_ne(same->storage, x->storage);
    tt_scope_end();
}
END_TEST

START_TEST(test_flip_roll) {
    tt_scope_begin();
    tt_tensor *x3 = iota(TT_F64, TT_SHAPE(2, 3, 4));
    ck_assert_values(tt_flip(x3, TT_DIMS(0, 2)), 0, 0, 15, 14, 13, 12, 19, 18, 17, 16, 23, 22,
                     21, 20, 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8);
    // A transposed input: flip reads any layout.
    ck_assert_values(tt_flip(tt_transpose(iota(TT_F32, TT_SHAPE(2, 3)), 0, 1), TT_DIMS(-1)), 0,
                     0, 3, 0, 4, 1, 5, 2);
    assert_shape(tt_flip(tt_zeros(TT_F64, TT_SHAPE(0, 3)), TT_DIMS(0, 1)), TT_SHAPE(0, 3));
    tt_tensor *x = iota(TT_F64, TT_SHAPE(3, 4));
    ck_assert_values(tt_roll(x, 1, 1), 0, 0, 3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10);
    ck_assert_values(tt_roll(x, -5, 0), 0, 0, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7);
    ck_assert_values(tt_roll_dims(x, 2, (int64_t[]){1, 2}, (int[]){0, 1}), 0, 0, 10, 11, 8, 9,
                     2, 3, 0, 1, 6, 7, 4, 5);
    ck_assert_values(tt_roll(x, 4, 1), 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    tt_scope_end();
}
END_TEST

START_TEST(test_pad) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F64, TT_SHAPE(3, 4));
    tt_tensor *p = tt_pad(x, 2, (int64_t[]){1, 2}, TT_PAD_CONSTANT, 9);
    assert_shape(p, TT_SHAPE(3, 7));
    ck_assert_values(p, 0, 0, 9, 0, 1, 2, 3, 9, 9, 9, 4, 5, 6, 7, 9, 9, 9, 8, 9, 10, 11, 9, 9);
    p = tt_pad(x, 4, (int64_t[]){1, 0, 0, 2}, TT_PAD_CONSTANT, 0);
    assert_shape(p, TT_SHAPE(5, 5));
    ck_assert_values(p, 0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 7, 0, 8, 9, 10, 11, 0, 0, 0, 0, 0, 0, 0,
                     0, 0, 0);
    ck_assert_values(tt_pad(x, 2, (int64_t[]){-1, 1}, TT_PAD_CONSTANT, 0), 0, 0, 1, 2, 3, 0, 5,
                     6, 7, 0, 9, 10, 11, 0);
    p = tt_pad(x, 4, (int64_t[]){2, 3, 1, 2}, TT_PAD_REFLECT, 0);
    assert_shape(p, TT_SHAPE(6, 9));
    ck_assert_values(p, 0, 0, 6, 5, 4, 5, 6, 7, 6, 5, 4, 2, 1, 0, 1, 2, 3, 2, 1, 0, 6, 5, 4, 5,
                     6, 7, 6, 5, 4, 10, 9, 8, 9, 10, 11, 10, 9, 8, 6, 5, 4, 5, 6, 7, 6, 5, 4, 2,
                     1, 0, 1, 2, 3, 2, 1, 0);
    ck_assert_values(tt_pad(x, 2, (int64_t[]){3, 0}, TT_PAD_REFLECT, 0), 0, 0, 3, 2, 1, 0, 1, 2,
                     3, 7, 6, 5, 4, 5, 6, 7, 11, 10, 9, 8, 9, 10, 11);
    ck_assert_values(tt_pad(iota(TT_I64, TT_SHAPE(2)), 2, (int64_t[]){1, 1}, TT_PAD_CONSTANT,
                            -1), 0, 0, -1, 0, 1, -1);
    tt_tensor *same = tt_pad(x, 2, (int64_t[]){0, 0}, TT_PAD_CONSTANT, 0);  // a copy
    ck_assert_ptr_ne(same->storage, x->storage);
    tt_scope_end();
}
END_TEST

START_TEST(test_split_chunk_unbind) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F64, TT_SHAPE(3, 4));
    tt_tensor *out[8];
    ck_assert_int_eq(tt_split(x, 3, 1, NULL, 0), 2);
    ck_assert_int_eq(tt_split(x, 3, 1, out, 8), 2);
    assert_shape(out[0], TT_SHAPE(3, 3));
    assert_shape(out[1], TT_SHAPE(3, 1));
    ck_assert_ptr_eq(out[1]->storage, x->storage);  // views
    ck_assert_values(out[1], 0, 0, 3, 7, 11);
    tt_split_sizes(x, 3, (int64_t[]){1, 0, 2}, 0, out);
    assert_shape(out[1], TT_SHAPE(0, 4));
    ck_assert_values(out[2], 0, 0, 4, 5, 6, 7, 8, 9, 10, 11);
    tt_tensor *a5 = iota(TT_F64, TT_SHAPE(5));
    ck_assert_int_eq(tt_chunk(a5, 3, 0, out), 3);
    ck_assert_values(out[2], 0, 0, 4);
    ck_assert_int_eq(tt_chunk(iota(TT_F64, TT_SHAPE(6)), 4, 0, out), 3);  // PyTorch: 3 of 2
    assert_shape(out[2], TT_SHAPE(2));
    ck_assert_int_eq(tt_chunk(tt_zeros(TT_F64, TT_SHAPE(0)), 3, 0, out), 3);  // 3 empty
    ck_assert_int_eq(tt_split(tt_zeros(TT_F64, TT_SHAPE(0)), 2, 0, out, 8), 1);
    tt_tensor *x3 = iota(TT_F64, TT_SHAPE(2, 3, 4));
    ck_assert_int_eq(tt_unbind(x3, 1, out, 8), 3);
    assert_shape(out[2], TT_SHAPE(2, 4));
    ck_assert_values(out[2], 0, 0, 8, 9, 10, 11, 20, 21, 22, 23);
    tt_scope_end();
}
END_TEST

START_TEST(test_movedim_diagonal) {
    tt_scope_begin();
    tt_tensor *x3 = iota(TT_F64, TT_SHAPE(2, 3, 4));
    tt_tensor *m = tt_movedim(x3, 0, 2);
    assert_shape(m, TT_SHAPE(3, 4, 2));
    ck_assert_values(tt_contiguous(m), 0, 0, 0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7,
                     19, 8, 20, 9, 21, 10, 22, 11, 23);
    m = tt_movedim(x3, -1, 0);
    assert_shape(m, TT_SHAPE(4, 2, 3));
    ck_assert_values(tt_contiguous(m), 0, 0, 0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10,
                     14, 18, 22, 3, 7, 11, 15, 19, 23);
    tt_tensor *x = iota(TT_F64, TT_SHAPE(3, 4));
    tt_tensor *d = tt_diagonal(x, 1, 0, 1);
    ck_assert_ptr_eq(d->storage, x->storage);  // a view
    ck_assert_values(d, 0, 0, 1, 6, 11);
    ck_assert_values(tt_diagonal(x, -2, 0, 1), 0, 0, 8);
    assert_shape(tt_diagonal(x, 5, 0, 1), TT_SHAPE(0));
    tt_tensor *d3 = tt_diagonal(x3, 0, 0, 2);
    assert_shape(d3, TT_SHAPE(3, 2));
    ck_assert_values(tt_contiguous(d3), 0, 0, 0, 13, 4, 17, 8, 21);
    tt_scope_end();
}
END_TEST

// ---- backward values ----

START_TEST(test_backward_values) {
    tt_tensor *x = tt_set_requires_grad(iota(TT_F64, TT_SHAPE(2, 3)), true);
    tt_scope_begin();
    // repeat: each element is used 2 * 2 = 4 times; diagonal: 1 on it; flip and roll: 1 each.
    tt_tensor *a = tt_sum_all(tt_repeat(x, TT_SHAPE(2, 2)));
    tt_tensor *b = tt_sum_all(tt_diagonal(x, 0, 0, 1));
    tt_tensor *c = tt_sum_all(tt_mul(tt_flip(x, TT_DIMS(1)), tt_roll(x, 1, 1)));
    tt_backward(tt_add(tt_add(a, b), c));
    // c = sum_j x[i][2 - j] * x[i][(j - 1) mod 3]: its gradient w.r.t. x[i][k] is the roll
    // factor at j = 2 - k plus the flip factor at j = (k + 1) mod 3.
    tt_tensor *g = tt_grad(x);
    double expect[6];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            double v[3] = {3.0 * i, 3.0 * i + 1, 3.0 * i + 2};
            double dc = v[((2 - k) + 2) % 3] + v[2 - ((k + 1) % 3)];
            expect[i * 3 + k] = 4 + (i == k) + dc;
        }
    tt_assert_values(g, expect, 6, 1e-12, 0, __FILE__, __LINE__);
    tt_scope_end();
    tt_release(x);
}
END_TEST

// ---- aborts ----

START_TEST(test_one_hot_out_of_range_aborts) {
    tt_expect_abort("class values must be smaller than num_classes = 2, got 2");
    tt_one_hot(tt_from_data(TT_I64, TT_SHAPE(2), (int64_t[]){0, 2}), 2);
}
END_TEST

START_TEST(test_one_hot_float_aborts) {
    tt_expect_abort("indices must be TT_I32 or TT_I64");
    tt_one_hot(tt_zeros(TT_F32, TT_SHAPE(2)), 2);
}
END_TEST

START_TEST(test_linspace_negative_steps_aborts) {
    tt_expect_abort("number of steps must be non-negative, got -1");
    tt_linspace(TT_F32, 0, 1, -1);
}
END_TEST

START_TEST(test_tril_1d_aborts) {
    tt_expect_abort("tt_tril: x (4,) must have at least 2 dims");
    tt_tril(tt_zeros(TT_F64, TT_SHAPE(4)), 0);
}
END_TEST

START_TEST(test_repeat_too_few_aborts) {
    tt_expect_abort("1 repeat counts for x (2, 3): need at least one per dim (2)");
    tt_repeat(tt_zeros(TT_F64, TT_SHAPE(2, 3)), TT_SHAPE(2));
}
END_TEST

START_TEST(test_flip_repeated_dim_aborts) {
    tt_expect_abort("tt_flip: dim 1 appears more than once");
    tt_flip(tt_zeros(TT_F64, TT_SHAPE(2, 3)), TT_DIMS(1, -1));
}
END_TEST

START_TEST(test_reflect_too_wide_aborts) {
    tt_expect_abort("reflect padding (3, 0) of dim 1 of x (2, 3): each size must be in [0, 2]");
    tt_pad(tt_zeros(TT_F64, TT_SHAPE(2, 3)), 2, (int64_t[]){3, 0}, TT_PAD_REFLECT, 0);
}
END_TEST

START_TEST(test_pad_odd_aborts) {
    tt_expect_abort("pad has 3 sizes for x (2, 3): need an even count");
    tt_pad(tt_zeros(TT_F64, TT_SHAPE(2, 3)), 3, (int64_t[]){1, 1, 1}, TT_PAD_CONSTANT, 0);
}
END_TEST

START_TEST(test_split_out_too_small_aborts) {
    tt_expect_abort("gives 3 tensors but out holds 2");
    tt_tensor *out[2];
    tt_split(tt_zeros(TT_F64, TT_SHAPE(5)), 2, 0, out, 2);
}
END_TEST

START_TEST(test_split_sizes_sum_aborts) {
    tt_expect_abort("split sizes sum to 4 but dim 0 of x (5,) has 5 elements");
    tt_tensor *out[2];
    tt_split_sizes(tt_zeros(TT_F64, TT_SHAPE(5)), 2, (int64_t[]){2, 2}, 0, out);
}
END_TEST

START_TEST(test_diagonal_same_dim_aborts) {
    tt_expect_abort("tt_diagonal: dim1 and dim2 are both dim 1");
    tt_diagonal(tt_zeros(TT_F64, TT_SHAPE(2, 3)), 0, 1, -1);
}
END_TEST

START_TEST(test_movedim_out_of_range_aborts) {
    tt_expect_abort("tt_movedim: dim 3 is out of range for a 3-d tensor");
    tt_movedim(tt_zeros(TT_F64, TT_SHAPE(2, 3, 4)), 0, 3);
}
END_TEST

// ---- suite ----

int main(void) {
    Suite *s = suite_create("ops_layout");
    TCase *create = tt_tcase("creation");
    tcase_add_test(create, test_eye);
    tcase_add_test(create, test_linspace);
    tcase_add_test(create, test_one_hot);
    suite_add_tcase(s, create);

    TCase *layout = tt_tcase("layout");
    tcase_add_test(layout, test_tril_triu);
    tcase_add_test(layout, test_repeat_tile);
    tcase_add_test(layout, test_flip_roll);
    tcase_add_test(layout, test_pad);
    tcase_add_test(layout, test_split_chunk_unbind);
    tcase_add_test(layout, test_movedim_diagonal);
    tcase_add_test(layout, test_backward_values);
    suite_add_tcase(s, layout);

    TCase *aborts = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(aborts, test_one_hot_out_of_range_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_one_hot_float_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_linspace_negative_steps_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_tril_1d_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_repeat_too_few_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_flip_repeated_dim_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_reflect_too_wide_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_pad_odd_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_split_out_too_small_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_split_sizes_sum_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_diagonal_same_dim_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_movedim_out_of_range_aborts, SIGABRT);
    suite_add_tcase(s, aborts);
    return tt_test_run(s);
}

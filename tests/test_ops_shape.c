// Check suite of the shape ops (autograd/ops_shape.c): view layouts (shape, strides, offset)
// and storage sharing, when reshape views or copies, cat/stack/slice values, the recording
// rules, backward values, and the abort paths. Gradients by finite differences: gc_ops_shape.c.
#include "test_util.h"
#include "autograd/autograd_internal.h"  // tt_node: which op a view recorded

#include <signal.h>

// ---- helpers ----

// 0, 1, ..., numel - 1 in the given shape (contiguous).
static tt_tensor *iota(tt_dtype dtype, int ndim, const int64_t *shape) {
    tt_tensor *t = tt_empty(dtype, ndim, shape);
    for (int64_t i = 0, n = tt_numel(t); i < n; i++) tt_set_at(t, i, (double)i);
    return t;
}

static void assert_layout(const tt_tensor *t, int ndim, const int64_t *shape,
                          const int64_t *stride, int64_t offset) {
    ck_assert_int_eq(t->ndim, ndim);
    for (int i = 0; i < ndim; i++) {
        ck_assert_msg(t->shape[i] == shape[i], "shape[%d] is %lld, expected %lld", i,
                      (long long)t->shape[i], (long long)shape[i]);
        ck_assert_msg(t->stride[i] == stride[i], "stride[%d] is %lld, expected %lld", i,
                      (long long)t->stride[i], (long long)stride[i]);
    }
    ck_assert_int_eq(t->offset, offset);
}
#define STRIDES(...) (const int64_t[]){__VA_ARGS__}

// ---- view layouts ----

START_TEST(test_reshape_layout) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F32, TT_SHAPE(2, 3, 4));
    tt_tensor *r = tt_reshape(x, TT_SHAPE(6, 4));
    assert_layout(r, TT_SHAPE(6, 4), STRIDES(4, 1), 0);
    ck_assert_ptr_eq(r->storage, x->storage);
    assert_layout(tt_reshape(x, TT_SHAPE(-1, 2)), TT_SHAPE(12, 2), STRIDES(2, 1), 0);
    assert_layout(tt_view(x, TT_SHAPE(2, 1, 12)), TT_SHAPE(2, 1, 12), STRIDES(12, 12, 1), 0);
    assert_layout(tt_flatten(x, 0, -1), TT_SHAPE(24), STRIDES(1), 0);
    assert_layout(tt_reshape(tt_scalar(TT_F64, 3), TT_SHAPE(1, 1)), TT_SHAPE(1, 1),
                  STRIDES(1, 1), 0);
    tt_tensor *s = tt_reshape(tt_ones(TT_F64, TT_SHAPE(1)), TT_SCALAR_SHAPE);
    ck_assert_int_eq(s->ndim, 0);
    ck_assert_double_eq(tt_item(s), 1.0);
    // A narrowed tensor keeps its offset in the view.
    tt_tensor *n = tt_narrow(tt_reshape(x, TT_SHAPE(6, 4)), 0, 2, 3);
    assert_layout(tt_view(n, TT_SHAPE(12)), TT_SHAPE(12), STRIDES(1), 8);
    tt_scope_end();
}
END_TEST

// Dims that the new shape leaves grouped as they were stay a view even when x is permuted.
START_TEST(test_reshape_transposed_view) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F64, TT_SHAPE(2, 3, 4, 5));    // (B, T, NH, HS)
    tt_tensor *t = tt_transpose(x, 0, 1);                  // (T, B, NH, HS)
    assert_layout(t, TT_SHAPE(3, 2, 4, 5), STRIDES(20, 60, 5, 1), 0);
    tt_tensor *m = tt_reshape(t, TT_SHAPE(3, 2, 20));      // merges (NH, HS): a view
    assert_layout(m, TT_SHAPE(3, 2, 20), STRIDES(20, 60, 1), 0);
    ck_assert_ptr_eq(m->storage, x->storage);
    tt_tensor *sp = tt_view(t, TT_SHAPE(3, 2, 2, 2, 5));   // splits NH: a view
    assert_layout(sp, TT_SHAPE(3, 2, 2, 2, 5), STRIDES(20, 60, 10, 5, 1), 0);
    tt_tensor *c = tt_reshape(t, TT_SHAPE(6, 4, 5));       // merges (T, B): a copy
    ck_assert_ptr_ne(c->storage, x->storage);
    ck_assert(tt_is_contiguous(c));
    for (int64_t i = 0; i < tt_numel(c); i++) ck_assert_double_eq(tt_at(c, i), tt_at(t, i));
    tt_scope_end();
}
END_TEST

START_TEST(test_reshape_copies_transposed) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F32, TT_SHAPE(2, 3));
    tt_tensor *t = tt_transpose(x, 0, 1);  // (3, 2): 0 3 1 4 2 5
    tt_tensor *r = tt_reshape(t, TT_SHAPE(6));
    ck_assert_ptr_ne(r->storage, x->storage);
    ck_assert_values(r, 0, 0, 0, 3, 1, 4, 2, 5);
    tt_tensor *f = tt_flatten(t, 0, -1);
    ck_assert_values(f, 0, 0, 0, 3, 1, 4, 2, 5);
    tt_scope_end();
}
END_TEST

START_TEST(test_view_of_transposed_aborts) {
    tt_expect_abort("cannot view (3, 2) with strides (1, 3) as (6,) without copying");
    tt_tensor *x = iota(TT_F32, TT_SHAPE(2, 3));
    tt_view(tt_transpose(x, 0, 1), TT_SHAPE(6));
}
END_TEST

START_TEST(test_view_of_expanded_aborts) {
    tt_expect_abort("cannot view (3, 4) with strides (1, 0) as (12,) without copying");
    tt_tensor *x = iota(TT_F32, TT_SHAPE(3, 1));
    tt_view(tt_expand(x, TT_SHAPE(3, 4)), TT_SHAPE(12));
}
END_TEST

START_TEST(test_transpose_permute_layout) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F64, TT_SHAPE(2, 3, 4));
    tt_tensor *t = tt_transpose(x, 0, -1);
    assert_layout(t, TT_SHAPE(4, 3, 2), STRIDES(1, 4, 12), 0);
    ck_assert_ptr_eq(t->storage, x->storage);
    ck_assert(!tt_is_contiguous(t));
    ck_assert_double_eq(tt_get(t, (int64_t[]){3, 1, 1}), 12 + 4 + 3);
    tt_tensor *p = tt_permute(x, (const int[]){2, 0, 1});
    assert_layout(p, TT_SHAPE(4, 2, 3), STRIDES(1, 12, 4), 0);
    ck_assert_double_eq(tt_get(p, (int64_t[]){1, 1, 2}), 12 + 8 + 1);
    assert_layout(tt_permute(x, (const int[]){-3, -2, -1}), TT_SHAPE(2, 3, 4),
                  STRIDES(12, 4, 1), 0);
    tt_scope_end();
}
END_TEST

START_TEST(test_permute_repeated_aborts) {
    tt_expect_abort("entry 2 is 1 (repeated)");
    tt_permute(iota(TT_F32, TT_SHAPE(2, 3, 4)), (const int[]){0, 1, 1});
}
END_TEST

START_TEST(test_permute_out_of_range_aborts) {
    tt_expect_abort("entry 1 is 2 (out of range)");
    tt_permute(iota(TT_F32, TT_SHAPE(2, 3)), (const int[]){0, 2});
}
END_TEST

START_TEST(test_slice_layout) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F32, TT_SHAPE(5, 6));
    tt_tensor *s = tt_slice(x, 1, 1, 6, 2);  // columns 1, 3, 5
    assert_layout(s, TT_SHAPE(5, 3), STRIDES(6, 2), 1);
    ck_assert_ptr_eq(s->storage, x->storage);
    ck_assert_double_eq(tt_get(s, (int64_t[]){2, 1}), 15);
    assert_layout(tt_slice(x, 0, -2, 5, 1), TT_SHAPE(2, 6), STRIDES(6, 1), 18);
    assert_layout(tt_slice(x, -1, 0, 6, 4), TT_SHAPE(5, 2), STRIDES(6, 4), 0);  // 0, 4
    assert_layout(tt_narrow(x, 0, 1, 2), TT_SHAPE(2, 6), STRIDES(6, 1), 6);
    assert_layout(tt_narrow(x, 1, -2, 2), TT_SHAPE(5, 2), STRIDES(6, 1), 4);
    // A slice of a slice composes offsets and strides.
    tt_tensor *ss = tt_slice(tt_slice(x, 1, 1, 6, 2), 1, 1, 3, 1);  // columns 3, 5
    assert_layout(ss, TT_SHAPE(5, 2), STRIDES(6, 2), 3);
    tt_scope_end();
}
END_TEST

START_TEST(test_slice_clamping_and_empty) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F64, TT_SHAPE(5));
    ck_assert_values(tt_slice(x, 0, -100, 100, 1), 0, 0, 0, 1, 2, 3, 4);
    ck_assert_values(tt_slice(x, 0, 2, INT64_MAX, 1), 0, 0, 2, 3, 4);
    ck_assert_values(tt_slice(x, 0, -3, -1, 1), 0, 0, 2, 3);
    ck_assert_values(tt_slice(x, 0, 0, 5, 3), 0, 0, 0, 3);
    ck_assert_values(tt_slice(x, 0, 1, 5, 10), 0, 0, 1);
    tt_tensor *e1 = tt_slice(x, 0, 3, 1, 1);   // end before start
    tt_tensor *e2 = tt_slice(x, 0, 7, 9, 1);   // start past the end
    tt_tensor *e3 = tt_slice(x, 0, -1, -1, 2);
    tt_tensor *e4 = tt_narrow(x, 0, 5, 0);
    ck_assert_int_eq(e1->shape[0], 0);
    ck_assert_int_eq(e2->shape[0], 0);
    ck_assert_int_eq(e3->shape[0], 0);
    ck_assert_int_eq(e4->shape[0], 0);
    ck_assert_int_eq(tt_numel(tt_contiguous(e2)), 0);
    ck_assert_int_eq(tt_numel(tt_clone(e1)), 0);
    // An empty slice still reshapes and concatenates.
    ck_assert_int_eq(tt_reshape(e1, TT_SHAPE(0, 3))->shape[1], 3);
    tt_tensor *parts[] = {e1, x, e2};
    ck_assert_values(tt_cat(3, parts, 0), 0, 0, 0, 1, 2, 3, 4);
    tt_scope_end();
}
END_TEST

START_TEST(test_slice_step0_aborts) {
    tt_expect_abort("step must be >= 1, got 0");
    tt_slice(iota(TT_F32, TT_SHAPE(4)), 0, 0, 4, 0);
}
END_TEST

START_TEST(test_narrow_out_of_range_aborts) {
    tt_expect_abort("start 2, length 3 is out of range for dim 0 of (4,)");
    tt_narrow(iota(TT_F32, TT_SHAPE(4)), 0, 2, 3);
}
END_TEST

// torch.select: x[1] and x[:, -1] of a (2, 3, 4) iota are views without the dim, at the
// offsets PyTorch gives; the gradient is one-hot along the selected slice.
START_TEST(test_select_layout_and_grad) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F32, TT_SHAPE(2, 3, 4));
    tt_tensor *a = tt_select(x, 0, 1);  // x[1]
    assert_layout(a, TT_SHAPE(3, 4), STRIDES(4, 1), 12);
    ck_assert_ptr_eq(a->storage, x->storage);
    tt_tensor *b = tt_select(x, -2, -1);  // x[:, -1]
    assert_layout(b, TT_SHAPE(2, 4), STRIDES(12, 1), 8);
    ck_assert_values(b, 0, 0, 8, 9, 10, 11, 20, 21, 22, 23);
    ck_assert_values(tt_select(tt_select(x, 2, 3), 0, 0), 0, 0, 3, 7, 11);  // x[0, :, 3]
    tt_tensor *w = tt_set_requires_grad(iota(TT_F64, TT_SHAPE(2, 3)), true);
    tt_backward(tt_sum(tt_mul_scalar(tt_select(w, 1, -2), 3), 0, NULL, false));  // w[:, 1]
    ck_assert_values(w->grad, 0, 0, 0, 3, 0, 0, 3, 0);
    tt_scope_end();
}
END_TEST

START_TEST(test_select_out_of_range_aborts) {
    tt_expect_abort("index 3 is out of range for dim 1 of (2, 3) (valid: -3 .. 2)");
    tt_select(iota(TT_F32, TT_SHAPE(2, 3)), 1, 3);
}
END_TEST

// torch.flatten(x, start_dim, end_dim): shapes, negative dims, a view when contiguous, a copy
// of a transposed input in logical order, a 0-dim tensor to (1,).
START_TEST(test_flatten_dims) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F32, TT_SHAPE(2, 3, 4, 5));
    assert_layout(tt_flatten(x, 1, 2), TT_SHAPE(2, 12, 5), STRIDES(60, 5, 1), 0);
    assert_layout(tt_flatten(x, -2, -1), TT_SHAPE(2, 3, 20), STRIDES(60, 20, 1), 0);
    assert_layout(tt_flatten(x, 0, -1), TT_SHAPE(120), STRIDES(1), 0);
    assert_layout(tt_flatten(x, 3, 3), TT_SHAPE(2, 3, 4, 5), STRIDES(60, 20, 5, 1), 0);
    ck_assert_ptr_eq(tt_flatten(x, 1, -1)->storage, x->storage);
    tt_tensor *t = tt_transpose(iota(TT_F32, TT_SHAPE(2, 3)), 0, 1);  // (3, 2)
    ck_assert_values(tt_flatten(t, 0, 1), 0, 0, 0, 3, 1, 4, 2, 5);
    tt_tensor *z = tt_flatten(tt_scalar(TT_F32, 7), 0, -1);
    assert_layout(z, TT_SHAPE(1), STRIDES(1), 0);
    ck_assert_values(z, 0, 0, 7);
    assert_layout(tt_flatten(tt_scalar(TT_F32, 7), -1, 0), TT_SHAPE(1), STRIDES(1), 0);
    tt_scope_end();
}
END_TEST

START_TEST(test_flatten_reversed_dims_aborts) {
    tt_expect_abort("tt_flatten: start_dim=2 comes after end_dim=1 for input (2, 3, 4)");
    tt_flatten(iota(TT_F32, TT_SHAPE(2, 3, 4)), 2, 1);
}
END_TEST

START_TEST(test_expand_layout) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F32, TT_SHAPE(3, 1));
    tt_tensor *e = tt_expand(x, TT_SHAPE(2, 3, 4));
    assert_layout(e, TT_SHAPE(2, 3, 4), STRIDES(0, 1, 0), 0);
    ck_assert_ptr_eq(e->storage, x->storage);
    ck_assert_double_eq(tt_get(e, (int64_t[]){1, 2, 3}), 2);
    assert_layout(tt_expand(x, TT_SHAPE(-1, 5)), TT_SHAPE(3, 5), STRIDES(1, 0), 0);
    assert_layout(tt_broadcast_to(x, TT_SHAPE(3, 2)), TT_SHAPE(3, 2), STRIDES(1, 0), 0);
    assert_layout(tt_expand(x, TT_SHAPE(3, 0)), TT_SHAPE(3, 0), STRIDES(1, 0), 0);
    tt_tensor *b = tt_expand(tt_scalar(TT_F64, 7), TT_SHAPE(2, 2));
    ck_assert_values(b, 0, 0, 7, 7, 7, 7);
    tt_scope_end();
}
END_TEST

START_TEST(test_expand_non1_aborts) {
    tt_expect_abort("cannot expand (3, 2) to (3, 4): dim 1 has size 2, target 4");
    tt_expand(iota(TT_F32, TT_SHAPE(3, 2)), TT_SHAPE(3, 4));
}
END_TEST

START_TEST(test_expand_fewer_dims_aborts) {
    tt_expect_abort("cannot expand (1, 3) to (3,): the target has fewer dims");
    tt_broadcast_to(iota(TT_F32, TT_SHAPE(1, 3)), TT_SHAPE(3));
}
END_TEST

START_TEST(test_squeeze_unsqueeze_layout) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F64, TT_SHAPE(3, 1, 4));
    assert_layout(tt_squeeze(x, 1), TT_SHAPE(3, 4), STRIDES(4, 1), 0);
    assert_layout(tt_squeeze(x, -2), TT_SHAPE(3, 4), STRIDES(4, 1), 0);
    tt_tensor *y = iota(TT_F64, TT_SHAPE(3, 4));
    assert_layout(tt_unsqueeze(y, 0), TT_SHAPE(1, 3, 4), STRIDES(12, 4, 1), 0);
    assert_layout(tt_unsqueeze(y, 1), TT_SHAPE(3, 1, 4), STRIDES(4, 4, 1), 0);
    assert_layout(tt_unsqueeze(y, -1), TT_SHAPE(3, 4, 1), STRIDES(4, 1, 1), 0);
    assert_layout(tt_unsqueeze(tt_scalar(TT_F32, 1), 0), TT_SHAPE(1), STRIDES(1), 0);
    ck_assert(tt_is_contiguous(tt_unsqueeze(y, 2)));
    ck_assert_ptr_eq(tt_unsqueeze(y, 1)->storage, y->storage);
    tt_tensor *t = tt_unsqueeze(tt_transpose(y, 0, 1), 1);  // (4, 1, 3)
    assert_layout(t, TT_SHAPE(4, 1, 3), STRIDES(1, 12, 4), 0);
    tt_scope_end();
}
END_TEST

START_TEST(test_squeeze_non1_aborts) {
    tt_expect_abort("dim 1 of (3, 2) has size 2; only a size-1 dim can be squeezed");
    tt_squeeze(iota(TT_F32, TT_SHAPE(3, 2)), 1);
}
END_TEST

START_TEST(test_unsqueeze_bad_dim_aborts) {
    tt_expect_abort("dim 3 is out of range for inserting a dim into a 2-d tensor");
    tt_unsqueeze(iota(TT_F32, TT_SHAPE(3, 2)), 3);
}
END_TEST

// ---- storage sharing ----

START_TEST(test_views_write_through) {
    tt_scope_begin();
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(2, 3));
    tt_set(tt_transpose(x, 0, 1), (int64_t[]){2, 1}, 1);               // x[1][2]
    tt_set(tt_reshape(x, TT_SHAPE(6)), (int64_t[]){1}, 2);             // x[0][1]
    tt_set(tt_slice(x, 1, 0, 3, 2), (int64_t[]){1, 0}, 3);             // x[1][0]
    tt_set(tt_unsqueeze(x, 0), (int64_t[]){0, 0, 2}, 4);               // x[0][2]
    tt_set(tt_squeeze(tt_unsqueeze(x, 1), 1), (int64_t[]){1, 1}, 5);   // x[1][1]
    tt_set(tt_permute(x, (const int[]){1, 0}), (int64_t[]){0, 0}, 6);  // x[0][0]
    tt_set_at(tt_narrow(tt_flatten(x, 0, -1), 0, 5, 1), 0, 7);                // x[1][2]
    ck_assert_values(x, 0, 0, 6, 2, 4, 3, 5, 7);
    // Reading through an expanded view sees the base's current values.
    tt_tensor *e = tt_expand(tt_slice(x, 0, 0, 1, 1), TT_SHAPE(3, 3));
    tt_set_at(x, 1, 9);
    ck_assert_values(e, 0, 0, 6, 9, 4, 6, 9, 4, 6, 9, 4);
    tt_scope_end();
}
END_TEST

// ---- copies ----

START_TEST(test_contiguous) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_F64, TT_SHAPE(2, 3));
    tt_tensor *c = tt_contiguous(x);
    ck_assert_ptr_eq(c, x);
    ck_assert_int_eq(x->refcount, 2);  // the scope holds both references
    tt_tensor *t = tt_transpose(x, 0, 1);
    tt_tensor *tc = tt_contiguous(t);
    ck_assert_ptr_ne(tc->storage, x->storage);
    assert_layout(tc, TT_SHAPE(3, 2), STRIDES(2, 1), 0);
    ck_assert_values(tc, 0, 0, 0, 3, 1, 4, 2, 5);
    ck_assert_ptr_eq(tt_contiguous(tc), tc);
    // A contiguous run inside a bigger storage is contiguous: no copy.
    tt_tensor *row = tt_narrow(x, 0, 1, 1);
    ck_assert_ptr_eq(tt_contiguous(row), row);
    tt_scope_end();
}
END_TEST

START_TEST(test_clone) {
    tt_scope_begin();
    tt_tensor *x = iota(TT_I32, TT_SHAPE(2, 3));
    tt_tensor *c = tt_clone(x);
    ck_assert_ptr_ne(c, x);
    ck_assert_ptr_ne(c->storage, x->storage);
    ck_assert_int_eq(c->dtype, TT_I32);
    tt_set_at(x, 0, 42);
    ck_assert_values(c, 0, 0, 0, 1, 2, 3, 4, 5);
    tt_tensor *e = tt_clone(tt_expand(tt_slice(x, 0, 1, 2, 1), TT_SHAPE(2, 3)));
    assert_layout(e, TT_SHAPE(2, 3), STRIDES(3, 1), 0);
    ck_assert_values(e, 0, 0, 3, 4, 5, 3, 4, 5);
    tt_scope_end();
}
END_TEST

START_TEST(test_to_dtype) {
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 1.5, -2.25, 0.1, 3e39);
    tt_tensor *f = tt_to_dtype(x, TT_F32);
    ck_assert_int_eq(f->dtype, TT_F32);
    ck_assert_float_eq(tt_data_f32(f)[2], 0.1f);
    ck_assert(isinf(tt_at(f, 3)));  // beyond f32's range
    tt_tensor *t = tt_to_dtype(tt_transpose(f, 0, 1), TT_F64);
    ck_assert_values(t, 0, 0, 1.5, (double)0.1f, -2.25, INFINITY);
    tt_tensor *i = tt_to_dtype(tt_narrow(x, 0, 0, 1), TT_I64);  // truncates toward zero
    ck_assert_int_eq(i->dtype, TT_I64);
    ck_assert_values(i, 0, 0, 1, -2);
    tt_tensor *back = tt_to_dtype(tt_to_dtype(i, TT_I32), TT_F32);
    ck_assert_values(back, 0, 0, 1, -2);
    tt_tensor *same = tt_to_dtype(x, TT_F64);  // still a copy
    ck_assert_ptr_ne(same->storage, x->storage);
    tt_scope_end();
}
END_TEST

// ---- cat / stack ----

START_TEST(test_cat_values) {
    tt_scope_begin();
    tt_tensor *a = iota(TT_F32, TT_SHAPE(2, 2));                     // 0 1 / 2 3
    tt_tensor *b = tt_full(TT_F32, TT_SHAPE(2, 1), 9);
    tt_tensor *c = tt_transpose(iota(TT_F32, TT_SHAPE(3, 2)), 0, 1);  // 0 2 4 / 1 3 5
    tt_tensor *xs[] = {a, b, c};
    tt_tensor *y = tt_cat(3, xs, 1);
    assert_layout(y, TT_SHAPE(2, 6), STRIDES(6, 1), 0);
    ck_assert_values(y, 0, 0, 0, 1, 9, 0, 2, 4, 2, 3, 9, 1, 3, 5);
    tt_tensor *rows[] = {a, tt_slice(c, 1, 0, 3, 2)};
    ck_assert_values(tt_cat(2, rows, -2), 0, 0, 0, 1, 2, 3, 0, 4, 1, 5);
    tt_tensor *one = tt_cat(1, &a, 0);  // a copy
    ck_assert_ptr_ne(one->storage, a->storage);
    ck_assert_values(one, 0, 0, 0, 1, 2, 3);
    tt_tensor *ints[] = {iota(TT_I64, TT_SHAPE(2)), iota(TT_I64, TT_SHAPE(1))};
    tt_tensor *yi = tt_cat(2, ints, 0);
    ck_assert_int_eq(yi->dtype, TT_I64);
    ck_assert_values(yi, 0, 0, 0, 1, 0);
    tt_scope_end();
}
END_TEST

START_TEST(test_stack_values) {
    tt_scope_begin();
    tt_tensor *a = iota(TT_F64, TT_SHAPE(2, 3));
    tt_tensor *b = tt_full(TT_F64, TT_SHAPE(2, 3), -1);
    tt_tensor *xs[] = {a, b};
    tt_tensor *s0 = tt_stack(2, xs, 0);
    assert_layout(s0, TT_SHAPE(2, 2, 3), STRIDES(6, 3, 1), 0);
    ck_assert_values(s0, 0, 0, 0, 1, 2, 3, 4, 5, -1, -1, -1, -1, -1, -1);
    tt_tensor *s1 = tt_stack(2, xs, 1);
    assert_layout(s1, TT_SHAPE(2, 2, 3), STRIDES(6, 3, 1), 0);
    ck_assert_values(s1, 0, 0, 0, 1, 2, -1, -1, -1, 3, 4, 5, -1, -1, -1);
    tt_tensor *s2 = tt_stack(2, xs, -1);
    assert_layout(s2, TT_SHAPE(2, 3, 2), STRIDES(6, 2, 1), 0);
    ck_assert_values(s2, 0, 0, 0, -1, 1, -1, 2, -1, 3, -1, 4, -1, 5, -1);
    tt_tensor *sc[] = {tt_scalar(TT_F32, 1), tt_scalar(TT_F32, 2), tt_scalar(TT_F32, 3)};
    tt_tensor *v = tt_stack(3, sc, 0);
    assert_layout(v, TT_SHAPE(3), STRIDES(1), 0);
    ck_assert_values(v, 0, 0, 1, 2, 3);
    tt_scope_end();
}
END_TEST

START_TEST(test_cat_shape_mismatch_aborts) {
    tt_expect_abort("tensor 1 is (2, 4) but tensor 0 is (2, 3): sizes must match");
    tt_tensor *xs[] = {iota(TT_F32, TT_SHAPE(2, 3)), iota(TT_F32, TT_SHAPE(2, 4))};
    tt_cat(2, xs, 0);
}
END_TEST

START_TEST(test_cat_ndim_mismatch_aborts) {
    tt_expect_abort("tensor 1 is (3,) but tensor 0 is (2, 3); all need the same number of dims");
    tt_tensor *xs[] = {iota(TT_F32, TT_SHAPE(2, 3)), iota(TT_F32, TT_SHAPE(3))};
    tt_cat(2, xs, 0);
}
END_TEST

START_TEST(test_cat_dtype_mismatch_aborts) {
    tt_expect_abort("tt_cat: dtypes differ: (2, 3) f32 vs (2, 3) f64");
    tt_tensor *xs[] = {iota(TT_F32, TT_SHAPE(2, 3)), iota(TT_F64, TT_SHAPE(2, 3))};
    tt_cat(2, xs, 0);
}
END_TEST

START_TEST(test_cat_empty_list_aborts) {
    tt_expect_abort("needs at least one tensor, got n = 0");
    tt_cat(0, NULL, 0);
}
END_TEST

START_TEST(test_stack_shape_mismatch_aborts) {
    tt_expect_abort("tensor 1 is (3, 2) but tensor 0 is (2, 3); stacked tensors");
    tt_tensor *xs[] = {iota(TT_F32, TT_SHAPE(2, 3)), iota(TT_F32, TT_SHAPE(3, 2))};
    tt_stack(2, xs, 0);
}
END_TEST

// ---- reshape misuse ----

START_TEST(test_reshape_bad_numel_aborts) {
    tt_expect_abort("cannot reshape (2, 3) (6 elements) to (4, 2) (8 elements)");
    tt_reshape(iota(TT_F32, TT_SHAPE(2, 3)), TT_SHAPE(4, 2));
}
END_TEST

START_TEST(test_reshape_two_minus1_aborts) {
    tt_expect_abort("only one dim may be -1");
    tt_reshape(iota(TT_F32, TT_SHAPE(2, 3)), TT_SHAPE(-1, -1));
}
END_TEST

START_TEST(test_reshape_minus1_not_dividing_aborts) {
    tt_expect_abort("the other dims' product 4 does not divide the element count");
    tt_reshape(iota(TT_F32, TT_SHAPE(2, 3)), TT_SHAPE(4, -1));
}
END_TEST

// ---- recording ----

START_TEST(test_recording_rules) {
    tt_scope_begin();
    tt_tensor *plain = iota(TT_F64, TT_SHAPE(2, 3));
    tt_tensor *v = tt_transpose(plain, 0, 1);
    ck_assert_ptr_null(v->node);  // a view of a leaf without grad records nothing
    ck_assert(!v->requires_grad);
    tt_tensor *w = tt_set_requires_grad(iota(TT_F64, TT_SHAPE(2, 3)), true);
    struct { tt_tensor *t; tt_op op; } cases[] = {
        {tt_reshape(w, TT_SHAPE(3, 2)), TT_OP_RESHAPE},
        {tt_view(w, TT_SHAPE(6)), TT_OP_RESHAPE},
        {tt_flatten(w, 0, -1), TT_OP_RESHAPE},
        {tt_transpose(w, 0, 1), TT_OP_TRANSPOSE},
        {tt_permute(w, (const int[]){1, 0}), TT_OP_PERMUTE},
        {tt_slice(w, 1, 0, 2, 1), TT_OP_SLICE},
        {tt_narrow(w, 0, 1, 1), TT_OP_SLICE},
        {tt_expand(tt_unsqueeze(w, 0), TT_SHAPE(4, 2, 3)), TT_OP_EXPAND},
        {tt_broadcast_to(w, TT_SHAPE(2, 2, 3)), TT_OP_EXPAND},
        {tt_squeeze(tt_unsqueeze(w, 1), 1), TT_OP_SQUEEZE},
        {tt_unsqueeze(w, 1), TT_OP_UNSQUEEZE},
        {tt_cat(2, (tt_tensor *[]){plain, w}, 0), TT_OP_CAT},
        {tt_stack(2, (tt_tensor *[]){w, plain}, 0), TT_OP_STACK},
        {tt_contiguous(tt_transpose(w, 0, 1)), TT_OP_CONTIGUOUS},
        {tt_clone(w), TT_OP_CLONE},
        {tt_to_dtype(w, TT_F32), TT_OP_TO_DTYPE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(cases[i].t->node && cases[i].t->node->op == cases[i].op,
                      "case %zu: expected a node of op %s", i, tt_op_name(cases[i].op));
        ck_assert(cases[i].t->requires_grad);
    }
    ck_assert_int_eq(tt_cat(2, (tt_tensor *[]){plain, w}, 0)->node->n_inputs, 2);
    // Already contiguous: x itself, no node.
    ck_assert_ptr_eq(tt_contiguous(w), w);
    // To an integer dtype: nothing recorded, no grad.
    tt_tensor *i = tt_to_dtype(w, TT_I32);
    ck_assert_ptr_null(i->node);
    ck_assert(!i->requires_grad);
    // Grad mode off: views of a grad-requiring leaf record nothing.
    bool prev = tt_set_grad_enabled(false);
    tt_tensor *nv = tt_reshape(w, TT_SHAPE(6));
    ck_assert_ptr_null(nv->node);
    ck_assert(!nv->requires_grad);
    tt_set_grad_enabled(prev);
    tt_scope_end();
}
END_TEST

// ---- backward values ----

START_TEST(test_backward_chain_of_views) {
    tt_tensor *x = tt_set_requires_grad(tt_zeros(TT_F64, TT_SHAPE(2, 3)), true);
    tt_scope_begin();
    // x (2, 3) -> transpose (3, 2) -> flatten (copy; 6) -> every other element (3)
    tt_tensor *y = tt_slice(tt_flatten(tt_transpose(x, 0, 1), 0, -1), 0, 0, 6, 2);
    tt_backward_with(y, tt_test_tensor(TT_F64, TT_SHAPE(3), 1, 2, 3));
    // y = x[0][0], x[0][1], x[0][2]
    ck_assert_values(tt_grad(x), 0, 0, 1, 2, 3, 0, 0, 0);
    tt_scope_end();
    tt_release(x);
}
END_TEST

START_TEST(test_backward_expand_sums) {
    tt_tensor *x = tt_set_requires_grad(tt_zeros(TT_F32, TT_SHAPE(2, 1)), true);
    tt_scope_begin();
    tt_tensor *y = tt_expand(x, TT_SHAPE(3, 2, 4));  // each element used 12 times
    tt_backward_with(y, tt_ones(TT_F32, TT_SHAPE(3, 2, 4)));
    ck_assert_int_eq(tt_grad(x)->dtype, TT_F32);
    ck_assert_values(tt_grad(x), 0, 0, 12, 12);
    tt_scope_end();
    tt_release(x);
}
END_TEST

START_TEST(test_backward_cat_stack) {
    tt_tensor *a = tt_set_requires_grad(tt_zeros(TT_F64, TT_SHAPE(2, 1)), true);
    tt_tensor *b = tt_zeros(TT_F64, TT_SHAPE(2, 2));  // no grad
    tt_tensor *c = tt_set_requires_grad(tt_zeros(TT_F64, TT_SHAPE(2, 1)), true);
    tt_scope_begin();
    tt_tensor *y = tt_cat(3, (tt_tensor *[]){a, b, c}, 1);  // (2, 4)
    tt_backward_with(y, iota(TT_F64, TT_SHAPE(2, 4)));
    ck_assert_values(tt_grad(a), 0, 0, 0, 4);
    ck_assert_values(tt_grad(c), 0, 0, 3, 7);
    ck_assert_ptr_null(tt_grad(b));
    tt_zero_grad(a);
    tt_zero_grad(c);
    tt_tensor *s = tt_stack(2, (tt_tensor *[]){a, c}, 1);  // (2, 2, 1)
    tt_backward_with(s, iota(TT_F64, TT_SHAPE(2, 2, 1)));
    ck_assert_values(tt_grad(a), 0, 0, 0, 2);
    ck_assert_values(tt_grad(c), 0, 0, 1, 3);
    tt_scope_end();
    tt_release(a);
    tt_release(b);
    tt_release(c);
}
END_TEST

START_TEST(test_backward_to_dtype) {
    tt_tensor *x = tt_set_requires_grad(tt_zeros(TT_F32, TT_SHAPE(3)), true);
    tt_scope_begin();
    tt_tensor *y = tt_to_dtype(x, TT_F64);
    tt_backward_with(y, tt_test_tensor(TT_F64, TT_SHAPE(3), 0.5, 1.0 / 3, -2));
    ck_assert_int_eq(tt_grad(x)->dtype, TT_F32);
    ck_assert_values(tt_grad(x), 0, 0, 0.5, (double)(1.0f / 3), -2);
    tt_scope_end();
    tt_release(x);
}
END_TEST

// Gradients accumulate (+=) when two views of one leaf reach the same loss.
START_TEST(test_backward_two_views_accumulate) {
    tt_tensor *x = tt_set_requires_grad(tt_zeros(TT_F64, TT_SHAPE(2, 2)), true);
    tt_scope_begin();
    tt_tensor *y = tt_cat(2, (tt_tensor *[]){tt_transpose(x, 0, 1), tt_slice(x, 0, 1, 2, 1)}, 0);
    tt_backward_with(y, iota(TT_F64, TT_SHAPE(3, 2)));  // 0 1 / 2 3 / 4 5
    // transpose part: dx[i][j] += g[j][i]; slice part: dx[1][j] += g[2][j]
    ck_assert_values(tt_grad(x), 0, 0, 0, 2, 1 + 4, 3 + 5);
    tt_scope_end();
    tt_release(x);
}
END_TEST

// ---- suite ----

int main(void) {
    Suite *s = suite_create("ops_shape");
    TCase *views = tt_tcase("views");
    tcase_add_test(views, test_reshape_layout);
    tcase_add_test(views, test_reshape_transposed_view);
    tcase_add_test(views, test_reshape_copies_transposed);
    tcase_add_test(views, test_transpose_permute_layout);
    tcase_add_test(views, test_slice_layout);
    tcase_add_test(views, test_slice_clamping_and_empty);
    tcase_add_test(views, test_expand_layout);
    tcase_add_test(views, test_select_layout_and_grad);
    tcase_add_test(views, test_flatten_dims);
    tcase_add_test(views, test_squeeze_unsqueeze_layout);
    tcase_add_test(views, test_views_write_through);
    suite_add_tcase(s, views);

    TCase *copies = tt_tcase("copies");
    tcase_add_test(copies, test_contiguous);
    tcase_add_test(copies, test_clone);
    tcase_add_test(copies, test_to_dtype);
    tcase_add_test(copies, test_cat_values);
    tcase_add_test(copies, test_stack_values);
    suite_add_tcase(s, copies);

    TCase *grad = tt_tcase("autograd");
    tcase_add_test(grad, test_recording_rules);
    tcase_add_test(grad, test_backward_chain_of_views);
    tcase_add_test(grad, test_backward_expand_sums);
    tcase_add_test(grad, test_backward_cat_stack);
    tcase_add_test(grad, test_backward_to_dtype);
    tcase_add_test(grad, test_backward_two_views_accumulate);
    suite_add_tcase(s, grad);

    TCase *aborts = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(aborts, test_view_of_transposed_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_view_of_expanded_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_permute_repeated_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_permute_out_of_range_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_slice_step0_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_narrow_out_of_range_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_select_out_of_range_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_flatten_reversed_dims_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_expand_non1_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_expand_fewer_dims_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_squeeze_non1_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_unsqueeze_bad_dim_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_cat_shape_mismatch_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_cat_ndim_mismatch_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_cat_dtype_mismatch_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_cat_empty_list_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_stack_shape_mismatch_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_reshape_bad_numel_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_reshape_two_minus1_aborts, SIGABRT);
    tcase_add_test_raise_signal(aborts, test_reshape_minus1_not_dividing_aborts, SIGABRT);
    suite_add_tcase(s, aborts);
    return tt_test_run(s);
}

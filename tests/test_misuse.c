// Programmer errors that used to crash without a message: a tensor used after it was freed
// (released, or made inside a scope that has ended) and shapes whose arithmetic overflows
// int64. Each aborts with one line naming the tensor or the shapes.
#include "test_util.h"

#include <signal.h>
#include <stdint.h>

#define FREED_MSG "was used after it was freed: made inside a scope that has ended? tt_keep it"

// ---- use after release ----

START_TEST(test_op_after_release_aborts) {
    tt_expect_abort("tensor (2, 3) f32 made by tt_ones " FREED_MSG);
    tt_tensor *t = tt_ones(TT_F32, TT_SHAPE(2, 3));
    tt_release(t);
    tt_add(t, t);
}
END_TEST

START_TEST(test_print_after_scope_aborts) {
    tt_expect_abort("tt_snprint: tensor (4,) f64 made by tt_ones " FREED_MSG);
    tt_scope_begin();
    tt_tensor *t = tt_ones(TT_F64, TT_SHAPE(4));
    tt_scope_end();
    tt_print(t);
}
END_TEST

START_TEST(test_param_made_in_ended_scope_aborts) {
    tt_expect_abort("tensor (3, 2) f32 made by tt_randn " FREED_MSG);
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_tensor *x = tt_ones(TT_F32, TT_SHAPE(4, 3));
    tt_scope_begin();
    tt_tensor *w = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(3, 2)), true);
    tt_scope_end();
    tt_matmul(x, w);
}
END_TEST

START_TEST(test_item_after_scope_aborts) {
    tt_expect_abort("tensor () i64 made by tt_scalar " FREED_MSG);
    tt_scope_begin();
    tt_tensor *t = tt_scalar(TT_I64, 7);
    tt_scope_end();
    tt_item(t);
}
END_TEST

START_TEST(test_data_after_release_aborts) {
    tt_expect_abort("tt_data_f32: tensor (5,) f32 made by tt_zeros " FREED_MSG);
    tt_tensor *t = tt_zeros(TT_F32, TT_SHAPE(5));
    tt_release(t);
    tt_data_f32(t);
}
END_TEST

START_TEST(test_backward_after_scope_aborts) {
    tt_expect_abort("tt_backward: tensor () f32 made by sum " FREED_MSG);
    tt_tensor *w = tt_set_requires_grad(tt_ones(TT_F32, TT_SHAPE(3)), true);
    tt_scope_begin();
    tt_tensor *loss = tt_sum_all(tt_mul(w, w));
    tt_scope_end();
    tt_backward(loss);
}
END_TEST

START_TEST(test_optim_step_on_freed_param_aborts) {
    tt_expect_abort("tt_optim_step: tensor (2, 2) f32 made by tt_ones " FREED_MSG);
    tt_tensor *w = tt_set_requires_grad(tt_ones(TT_F32, TT_SHAPE(2, 2)), true);
    tt_params params;
    tt_params_init(&params);
    tt_params_add(&params, NULL, "w", w);
    tt_optim opt;
    tt_optim_init(&opt, tt_adamw_config(1e-3));
    tt_optim_add_group(&opt, &params, 0.0);
    for (int64_t refs = w->refcount; refs > 0; refs--)
        tt_release(w);  // every reference, the list's and the optimizer's too: freed
    tt_optim_step(&opt);
}
END_TEST

START_TEST(test_module_forward_with_freed_weight_aborts) {
    tt_expect_abort("tensor (2, 3) f32 made by tt_zeros " FREED_MSG);
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_nn_linear lin;
    tt_nn_linear_init(&lin, 3, 2, false, &rng);
    tt_tensor *x = tt_ones(TT_F32, TT_SHAPE(1, 3));
    tt_scope_begin();  // a weight loaded inside a scope, without tt_keep
    tt_release(lin.weight);
    lin.weight = tt_set_requires_grad(tt_zeros(TT_F32, TT_SHAPE(2, 3)), true);
    tt_scope_end();
    tt_nn_linear_forward(&lin, x);
}
END_TEST

// ---- shapes whose arithmetic overflows int64 ----

#define BIG (INT64_C(1) << 40)
#define HUGE_PAD (INT64_C(1) << 62)

START_TEST(test_zeros_overflowing_shape_aborts) {
    tt_expect_abort("tt_zeros: shape (1099511627776, 1099511627776) has more elements than int64");
    tt_zeros(TT_F32, TT_SHAPE(BIG, BIG));
}
END_TEST

START_TEST(test_reshape_overflowing_shape_aborts) {
    tt_expect_abort("tt_reshape: cannot reshape (4,) to (-1, 1099511627776, 1099511627776): "
                    "the sizes' product overflows int64");
    tt_reshape(tt_zeros(TT_F32, TT_SHAPE(4)), TT_SHAPE(-1, BIG, BIG));
}
END_TEST

START_TEST(test_view_of_empty_overflowing_shape_aborts) {
    tt_expect_abort("tt_view: cannot reshape (0,) to (1099511627776, 1099511627776, 0): the "
                    "sizes' product overflows int64");
    tt_view(tt_zeros(TT_F32, TT_SHAPE(0)), TT_SHAPE(BIG, BIG, 0));
}
END_TEST

START_TEST(test_slice_huge_step_is_one_element) {
    // Not an abort: a step past the end keeps the first element, as x[0:3:2**63-1].
    tt_scope_begin();
    tt_tensor *x = tt_arange(TT_F32, 0, 3, 1);
    ck_assert_values(tt_slice(x, 0, 0, 3, INT64_MAX), 0, 0, 0);
    ck_assert_values(tt_slice(x, 0, 1, INT64_MAX, INT64_MAX), 0, 0, 1);
    tt_tensor *m = tt_reshape(tt_arange(TT_F32, 0, 6, 1), TT_SHAPE(3, 2));
    ck_assert_values(tt_slice(m, 0, 1, 3, INT64_MAX), 0, 0, 2, 3);
    tt_scope_end();
}
END_TEST

START_TEST(test_pad_overflowing_aborts) {
    tt_expect_abort("tt_pad: padding (4611686018427387904, 4611686018427387904) of dim 0 of x "
                    "(3,) overflows int64");
    tt_pad(tt_zeros(TT_F32, TT_SHAPE(3)), 2, (int64_t[]){HUGE_PAD, HUGE_PAD}, TT_PAD_CONSTANT, 0);
}
END_TEST

START_TEST(test_conv_huge_padding_aborts) {
    tt_expect_abort("tt_conv2d: stride (1, 1), padding (4611686018427387904, 0) and dilation "
                    "(1, 1) with x (1, 1, 4, 4) and weight (1, 1, 3, 3) overflow int64");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(1, 1, 4, 4));
    tt_tensor *w = tt_zeros(TT_F32, TT_SHAPE(1, 1, 3, 3));
    tt_conv2d(x, w, NULL, NULL, (int64_t[]){HUGE_PAD, 0}, NULL, 1);
}
END_TEST

START_TEST(test_conv_huge_dilation_aborts) {
    tt_expect_abort("tt_conv2d: stride (1, 1), padding (0, 0) and dilation (1, "
                    "4611686018427387904) with x (1, 1, 4, 4) and weight (1, 1, 3, 3) overflow");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(1, 1, 4, 4));
    tt_tensor *w = tt_zeros(TT_F32, TT_SHAPE(1, 1, 3, 3));
    tt_conv2d(x, w, NULL, NULL, NULL, (int64_t[]){1, HUGE_PAD}, 1);
}
END_TEST

// Each padded side fits; the output's 2^41 x 2^41 elements per channel do not.
START_TEST(test_conv_huge_output_aborts) {
    tt_expect_abort("tt_conv2d: stride (1, 1), padding (1099511627776, 1099511627776) and "
                    "dilation (1, 1) with x (1, 1, 1, 1) and weight (1, 1, 3, 3) overflow");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(1, 1, 1, 1));
    tt_tensor *w = tt_zeros(TT_F32, TT_SHAPE(1, 1, 3, 3));
    tt_conv2d(x, w, NULL, NULL, (int64_t[]){BIG, BIG}, NULL, 1);
}
END_TEST

START_TEST(test_conv_transpose_huge_stride_aborts) {
    tt_expect_abort("tt_conv_transpose2d: stride (4611686018427387904, 1), padding (0, 0) and "
                    "dilation (1, 1) with x (1, 1, 4, 4) and weight (1, 1, 3, 3) overflow");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(1, 1, 4, 4));
    tt_tensor *w = tt_zeros(TT_F32, TT_SHAPE(1, 1, 3, 3));
    tt_conv_transpose2d(x, w, NULL, (int64_t[]){HUGE_PAD, 1}, NULL, NULL, 1, NULL);
}
END_TEST

START_TEST(test_pool_huge_padding_aborts) {
    tt_expect_abort("tt_max_pool2d: padding 4611686018427387904 of kernel 9223372036854775807 "
                    "(dim 0): pad should be at most half of kernel size");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(1, 1, 4, 4));
    tt_max_pool2d(x, (int64_t[]){INT64_MAX, 1}, NULL, (int64_t[]){HUGE_PAD, 0}, NULL);
}
END_TEST

START_TEST(test_adaptive_pool_huge_output_aborts) {
    tt_expect_abort("tt_adaptive_avg_pool2d: output size (4611686018427387904, 1) for x "
                    "(1, 1, 4, 4) overflows int64");
    tt_adaptive_avg_pool2d(tt_zeros(TT_F32, TT_SHAPE(1, 1, 4, 4)), HUGE_PAD, 1);
}
END_TEST

START_TEST(test_adaptive_pool_too_many_elements_aborts) {
    tt_expect_abort("tt_adaptive_avg_pool2d: shape (1, 1, 1099511627776, 1099511627776) has "
                    "more elements than int64 can count");
    tt_adaptive_avg_pool2d(tt_zeros(TT_F32, TT_SHAPE(1, 1, 4, 4)), BIG, BIG);
}
END_TEST

START_TEST(test_unflatten_overflowing_sizes_aborts) {
    tt_expect_abort("tt_unflatten: sizes (4611686018427387904, 4611686018427387904) for dim 1 "
                    "of x (2, 3): their product overflows int64");
    tt_unflatten(tt_zeros(TT_F32, TT_SHAPE(2, 3)), 1, (int64_t[]){HUGE_PAD, HUGE_PAD}, 2);
}
END_TEST

START_TEST(test_as_strided_overflowing_reach_aborts) {
    tt_expect_abort("tt_as_strided: view (1099511627776, 1099511627776) with strides "
                    "(4611686018427387904, 4611686018427387904) and offset 0 reaches past int64");
    tt_as_strided(tt_zeros(TT_F32, TT_SHAPE(2, 3)), TT_SHAPE(BIG, BIG),
                  (int64_t[]){HUGE_PAD, HUGE_PAD}, 0);
}
END_TEST

START_TEST(test_cat_overflowing_sizes_aborts) {
    tt_expect_abort("tt_cat: the sizes of dim 0 of the 2 tensors add up past int64 (tensor 1 "
                    "is (4611686018427387904,))");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(1));
    tt_tensor *e = tt_as_strided(x, TT_SHAPE(HUGE_PAD), (int64_t[]){0}, 0);  // one element
    tt_cat(2, (tt_tensor *[]){e, e}, 0);
}
END_TEST

START_TEST(test_arange_too_many_elements_aborts) {
    tt_expect_abort("tt_arange: arange(0, 1e+30, 1) would have 1e+30 elements");
    tt_arange(TT_F32, 0, 1e30, 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("misuse");
    TCase *uaf = tt_tcase_aborts("aborts_use_after_release");
    tcase_add_test_raise_signal(uaf, test_op_after_release_aborts, SIGABRT);
    tcase_add_test_raise_signal(uaf, test_print_after_scope_aborts, SIGABRT);
    tcase_add_test_raise_signal(uaf, test_param_made_in_ended_scope_aborts, SIGABRT);
    tcase_add_test_raise_signal(uaf, test_item_after_scope_aborts, SIGABRT);
    tcase_add_test_raise_signal(uaf, test_data_after_release_aborts, SIGABRT);
    tcase_add_test_raise_signal(uaf, test_backward_after_scope_aborts, SIGABRT);
    tcase_add_test_raise_signal(uaf, test_optim_step_on_freed_param_aborts, SIGABRT);
    tcase_add_test_raise_signal(uaf, test_module_forward_with_freed_weight_aborts, SIGABRT);
    suite_add_tcase(s, uaf);
    TCase *ov = tt_tcase_aborts("aborts_shape_overflow");
    tcase_add_test_raise_signal(ov, test_zeros_overflowing_shape_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_reshape_overflowing_shape_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_view_of_empty_overflowing_shape_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_pad_overflowing_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_conv_huge_padding_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_conv_huge_dilation_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_conv_huge_output_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_conv_transpose_huge_stride_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_pool_huge_padding_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_unflatten_overflowing_sizes_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_as_strided_overflowing_reach_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_cat_overflowing_sizes_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_arange_too_many_elements_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_adaptive_pool_huge_output_aborts, SIGABRT);
    tcase_add_test_raise_signal(ov, test_adaptive_pool_too_many_elements_aborts, SIGABRT);
    suite_add_tcase(s, ov);
    TCase *tc = tt_tcase("shape_edges");
    tcase_add_test(tc, test_slice_huge_step_is_one_element);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}

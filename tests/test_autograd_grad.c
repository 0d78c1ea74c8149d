// tt_autograd_grad, create_graph and the functional API: gradients returned without touching
// .grad, pruning, allow_unused, gradients of intermediates, second derivatives, hvp / jvp /
// jacobian / hessian against closed forms, and the messages of misuse.
#include "test_util.h"

#include <signal.h>

static tt_tensor *leaf(tt_tensor *t) { return tt_set_requires_grad(t, true); }

// y = sum(a * b): the gradients are b and a; b's .grad stays untouched.
START_TEST(test_grad_returns_values) {
    tt_tensor *a = leaf(tt_test_tensor(TT_F64, TT_SHAPE(3), 1, 2, 3));
    tt_tensor *b = leaf(tt_test_tensor(TT_F64, TT_SHAPE(3), 4, 5, 6));
    tt_scope_begin();
    tt_tensor *y = tt_sum_all(tt_mul(a, b)), *g;
    tt_autograd_grad(1, &y, NULL, 1, &a, &g, NULL);
    ck_assert_values(g, 0, 0, 4, 5, 6);
    ck_assert_ptr_null(a->grad);
    ck_assert_ptr_null(b->grad);
    tt_scope_end();
    tt_release(a), tt_release(b);
}
END_TEST

// The gradient of an intermediate, of an input named twice, and NULL for an unused input.
START_TEST(test_grad_intermediate_unused) {
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, -2));
    tt_tensor *u = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 7, 7));
    tt_scope_begin();
    tt_tensor *h = tt_mul_scalar(x, 3);       // h = 3x
    tt_tensor *y = tt_sum_all(tt_mul(h, h));  // y = sum h^2
    tt_tensor *in[4] = {h, x, u, x}, *g[4];
    tt_autograd_grad(1, &y, NULL, 4, in, g, &(tt_grad_opts){.allow_unused = true});
    ck_assert_values(g[0], 0, 0, 6, -12);   // 2h
    ck_assert_values(g[1], 0, 0, 18, -36);  // 18x
    ck_assert_ptr_null(g[2]);
    ck_assert_values(g[3], 0, 0, 18, -36);
    tt_scope_end();
    tt_release(x), tt_release(u);
}
END_TEST

// d^2/dx^2 sum(x^3) = 6x through create_graph, and the third derivative 6.
START_TEST(test_create_graph_cubic) {
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(3), 0.5, -1, 2));
    tt_scope_begin();
    tt_tensor *y = tt_sum_all(tt_mul(tt_mul(x, x), x)), *g1, *g2, *g3;
    tt_grad_opts cg = {.create_graph = true};
    tt_autograd_grad(1, &y, NULL, 1, &x, &g1, &cg);
    ck_assert_values(g1, 1e-15, 0, 0.75, 3, 12);  // 3x^2
    ck_assert(g1->requires_grad);
    tt_tensor *s1 = tt_sum_all(g1);
    tt_autograd_grad(1, &s1, NULL, 1, &x, &g2, &cg);
    ck_assert_values(g2, 1e-15, 0, 3, -6, 12);  // 6x
    tt_tensor *s2 = tt_sum_all(g2);
    tt_autograd_grad(1, &s2, NULL, 1, &x, &g3, NULL);
    ck_assert_values(g3, 1e-15, 0, 6, 6, 6);
    tt_scope_end();
    tt_release(x);
}
END_TEST

// tt_autograd_backward with create_graph leaves a .grad that has a graph: differentiating it
// gives the second derivative.
START_TEST(test_backward_create_graph) {
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, 3));
    tt_scope_begin();
    tt_tensor *y = tt_sum_all(tt_mul(tt_mul(x, x), x));
    tt_autograd_backward(1, &y, NULL, &(tt_grad_opts){.create_graph = true});
    tt_tensor *g = x->grad;
    ck_assert_values(g, 0, 0, 3, 27);
    ck_assert(g->requires_grad);
    tt_tensor *s = tt_sum_all(tt_retain(g)), *h;
    tt_zero_grad(x);
    tt_autograd_grad(1, &s, NULL, 1, &x, &h, NULL);
    ck_assert_values(h, 0, 0, 6, 18);
    tt_release(g);
    tt_scope_end();
    tt_release(x);
}
END_TEST

// f(x, y) = sum(x^2 y): hvp, jvp, jacobian and hessian against their closed forms.
static tt_tensor *f_x2y(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_sum_all(tt_mul(tt_mul(in[0], in[0]), in[1]));
}

static tt_tensor *f_x2y_vec(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_mul(tt_mul(in[0], in[0]), in[1]);
}

START_TEST(test_functional) {
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F64, TT_SHAPE(2), 1, 2);
    tt_tensor *y = tt_test_tensor(TT_F64, TT_SHAPE(2), 3, -1);
    tt_tensor *vx = tt_test_tensor(TT_F64, TT_SHAPE(2), 1, 0.5);
    tt_tensor *vy = tt_test_tensor(TT_F64, TT_SHAPE(2), -2, 1);
    tt_tensor *in[2] = {x, y}, *v[2] = {vx, vy}, *out, *hv[2];
    // H = [[2 diag(y), 2 diag(x)], [2 diag(x), 0]]
    tt_hvp(f_x2y, NULL, 2, in, v, &out, hv, false);
    ck_assert_close(tt_item(out), 1 * 3 - 4, 0, 1e-15);
    ck_assert_values(hv[0], 1e-14, 0, 2 * 3 * 1 + 2 * 1 * -2, 2 * -1 * 0.5 + 2 * 2 * 1);
    ck_assert_values(hv[1], 1e-14, 0, 2 * 1 * 1, 2 * 2 * 0.5);
    // jvp of x^2 y: 2 x y vx + x^2 vy
    tt_tensor *jv = tt_jvp(f_x2y_vec, NULL, 2, in, v, NULL, false);
    ck_assert_values(jv, 1e-14, 0, 2 * 1 * 3 * 1 + 1 * -2, 2 * 2 * -1 * 0.5 + 4 * 1);
    tt_tensor *jac[2];
    tt_jacobian(f_x2y_vec, NULL, 2, in, jac, false);
    ck_assert_int_eq(jac[0]->ndim, 2);
    ck_assert_values(jac[0], 1e-14, 0, 6, 0, 0, -4);
    ck_assert_values(jac[1], 1e-14, 0, 1, 0, 0, 4);
    ck_assert(!x->requires_grad && !x->grad);  // the inputs are left alone
    tt_scope_end();
}
END_TEST

static tt_tensor *f_cubic_sum(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    tt_tensor *x = in[0];
    return tt_sum_all(tt_mul(tt_mul(x, x), tt_mul_scalar(x, 1.0 / 3)));
}

START_TEST(test_hessian) {
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F64, TT_SHAPE(3), 1, -2, 0.5);
    tt_tensor *h = tt_hessian(f_cubic_sum, NULL, x);  // diag(2x)
    ck_assert_int_eq(h->ndim, 2);
    ck_assert_values(h, 1e-14, 0, 2, 0, 0, 0, -4, 0, 0, 0, 1);
    tt_scope_end();
}
END_TEST

// ---- reductions at their kinks (a gradgradcheck cannot look there) ----

// Tied maxima share g evenly under create_graph too, and that gradient keeps its graph to g:
// y = sum_r w[r] max_j x[r, j]; dx = w[r] / 2 at the two maxima of each row, and
// d sum(dx * c) / dw = the mean of c over each row's maxima.
START_TEST(test_create_graph_max_ties) {
    tt_tensor *x =
        leaf(tt_test_tensor(TT_F64, TT_SHAPE(2, 4), 0.5, 0.9, 0.1, 0.9, 0.7, 0.2, 0.7, -0.3));
    tt_tensor *w = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 2, 3));
    tt_scope_begin();
    tt_tensor *y = tt_sum_all(tt_mul(tt_max(x, TT_DIMS(1), false), w)), *gx, *gw;
    tt_autograd_grad(1, &y, NULL, 1, &x, &gx, &(tt_grad_opts){.create_graph = true});
    ck_assert_values(gx, 0, 0, 0, 1, 0, 1, 1.5, 0, 1.5, 0);
    tt_tensor *c = tt_test_tensor(TT_F64, TT_SHAPE(2, 4), 1, 2, 3, 4, 5, 6, 7, 8);
    tt_tensor *s = tt_sum_all(tt_mul(gx, c));
    tt_autograd_grad(1, &s, NULL, 1, &w, &gw, NULL);
    ck_assert_values(gw, 0, 0, 3, 6);
    tt_scope_end();
    tt_release(x), tt_release(w);
}
END_TEST

static tt_tensor *var_of(tt_tensor *x, int ndims, const int *dims, int correction) {
    return tt_var(x, ndims, dims, correction, false);
}

// var's gradient where N - correction <= 0 is the first-order backward's under create_graph
// too, element for element (inf, -inf, NaN included): over all dims with N == c (g times inf,
// NaN at the mean: x[0], x[5]), over one dim with N == c (the signed 2 (x - mean) / 0, NaN at
// x[1], x[3]) and N < c.
START_TEST(test_create_graph_var_no_dof) {
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 1, 2, 3, 0, -1, 1));
    const struct {
        int ndims, dim, correction;
    } cases[] = {{0, 0, 6}, {1, 1, 3}, {1, 1, 5}, {1, 0, 2}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tt_scope_begin();
        tt_tensor *g[2];
        for (int cg = 0; cg < 2; cg++) {
            tt_tensor *y =
                tt_sum_all(var_of(x, cases[k].ndims, &cases[k].dim, cases[k].correction));
            tt_autograd_grad(1, &y, NULL, 1, &x, &g[cg], &(tt_grad_opts){.create_graph = cg});
        }
        for (int64_t i = 0; i < 6; i++) {
            double a = tt_at(g[0], i), b = tt_at(g[1], i);
            ck_assert_msg(a == b || (isnan(a) && isnan(b)),
                          "case %zu element %lld: first "
                          "order %g, create_graph %g",
                          k, (long long)i, a, b);
        }
        tt_scope_end();
    }
    tt_release(x);
}
END_TEST

// gradgradcheck passes on a correct double backward.
static tt_tensor *f_mulsum(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_mul(tt_mul(in[0], in[1]), in[0]);
}

START_TEST(test_gradgradcheck) {
    tt_scope_begin();
    tt_rng rng = tt_rng_new(3);
    tt_tensor *in[2] = {leaf(tt_uniform(&rng, TT_F64, TT_SHAPE(2, 3), -1, 1)),
                        leaf(tt_uniform(&rng, TT_F64, TT_SHAPE(3), -1, 1))};
    tt_gradcheck_result r = tt_gradgradcheck(f_mulsum, NULL, 2, in, NULL);
    ck_assert_msg(r.ok, "max_abs_err %g", r.max_abs_err);
    ck_assert_int_gt(r.checked, 0);
    tt_scope_end();
}
END_TEST

// x^2, for activation checkpointing (which has no differentiable backward).
static tt_tensor *f_square(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_square(in[0]);
}

// ---- custom functions ----

// y = 2 x with a backward that returns a gradient of the wrong shape, or reads its saved input.
typedef struct bad_args {
    bool wrong_shape;
} bad_args;

static void twice_forward(tt_function_ctx *ctx, tt_tensor *const *in, int n, tt_tensor **out) {
    (void)n;
    tt_save_for_backward(ctx, 1, in);
    out[0] = tt_mul_scalar(in[0], 2);
}

static void twice_backward(tt_function_ctx *ctx, tt_tensor *const *gout, tt_tensor **gin) {
    const bad_args *a = tt_function_data(ctx);
    (void)tt_saved_tensor(ctx, 0);
    gin[0] = a->wrong_shape ? tt_ones(TT_F64, TT_SHAPE(3)) : tt_mul_scalar(gout[0], 2);
}

static const tt_function twice = {"twice", 1, sizeof(bad_args), twice_forward, twice_backward};

// A function applied to tensors that need no gradient records nothing (and leaks nothing);
// with retain_graph its backward runs twice.
START_TEST(test_function_record_and_retain) {
    tt_tensor *x = tt_ones(TT_F64, TT_SHAPE(2));
    tt_scope_begin();
    tt_tensor *y = tt_function_apply(&twice, 1, &x, NULL);
    ck_assert(!y->requires_grad);
    ck_assert_values(y, 0, 0, 2, 2);
    tt_set_requires_grad(x, true);
    tt_tensor *z = tt_sum_all(tt_function_apply(&twice, 1, &x, NULL));
    ck_assert_str_eq(tt_op_name(TT_OP_FUNCTION), "function");
    tt_backward_ex(z, NULL, true);
    tt_backward(z);
    ck_assert_values(x->grad, 0, 0, 4, 4);
    const char *op = "x";
    tt_tensor *c = tt_activation_checkpoint(f_square, NULL, 1, &x, NULL);
    ck_assert(tt_graph_twice_differentiable(tt_sum_all(c), &op) == false);
    ck_assert_str_eq(op, "checkpoint");
    tt_scope_end();
    tt_release(x);
}
END_TEST

// A function whose backward differentiates a recomputation: on a detached copy of its input
// (allowed: its graph is its own), or on the input itself (refused when the running backward
// has not finished with the input's node).
typedef struct nested_args {
    bool on_input;
} nested_args;

static void cube_forward(tt_function_ctx *ctx, tt_tensor *const *in, int n, tt_tensor **out) {
    (void)n;
    tt_save_for_backward(ctx, 1, in);
    out[0] = tt_mul(tt_square(in[0]), in[0]);
}

static void cube_backward(tt_function_ctx *ctx, tt_tensor *const *gout, tt_tensor **gin) {
    const nested_args *a = tt_function_data(ctx);
    tt_tensor *x = tt_saved_tensor(ctx, 0);
    if (!a->on_input) x = tt_set_requires_grad(tt_detach(x), true);
    bool prev = tt_set_grad_enabled(true);
    tt_tensor *y = tt_mul(tt_square(x), x);
    tt_autograd_grad(1, &y, &gout[0], 1, &x, &gin[0], NULL);
    tt_set_grad_enabled(prev);
}

static const tt_function cube = {"cube", 1, sizeof(nested_args), cube_forward, cube_backward};

START_TEST(test_grad_inside_backward) {
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, -2));
    tt_scope_begin();
    tt_tensor *h = tt_mul_scalar(x, 2);
    tt_tensor *f = tt_function_apply(&cube, 1, &h, &(nested_args){false});
    tt_backward(tt_add(tt_sum_all(f), tt_sum_all(tt_mul(h, h))));
    ck_assert_values(x->grad, 1e-12, 0, 32, 80);  // 2 (3 h^2 + 2 h), h = 2 x
    tt_scope_end();
    tt_release(x);
}
END_TEST

// ---- misuse ----

START_TEST(test_abort_grad_inside_backward) {
    tt_expect_abort("tt_autograd_grad: called inside a backward, it reaches op 'mul_scalar', "
                    "which that backward has not run yet");
    tt_tensor *x = leaf(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, -2));
    tt_tensor *h = tt_mul_scalar(x, 2);
    tt_tensor *f = tt_function_apply(&cube, 1, &h, &(nested_args){true});
    tt_backward(tt_add(tt_sum_all(f), tt_sum_all(tt_mul(h, h))));
}
END_TEST

START_TEST(test_abort_function_grad_shape) {
    tt_expect_abort("backward of function 'twice' returned a gradient (3,) f64 for input 0, "
                    "which is (2, 2) f64");
    tt_tensor *x = leaf(tt_ones(TT_F64, TT_SHAPE(2, 2)));
    tt_backward(tt_sum_all(tt_function_apply(&twice, 1, &x, &(bad_args){true})));
}
END_TEST

START_TEST(test_abort_function_saved_modified) {
    tt_expect_abort("saved tensor 0 of function 'twice' ((2,) f64) was modified in place");
    tt_tensor *x = leaf(tt_ones(TT_F64, TT_SHAPE(2))), *h = tt_mul_scalar(x, 1);
    tt_tensor *y = tt_sum_all(tt_function_apply(&twice, 1, &h, NULL));
    tt_no_grad_begin();
    tt_add_scalar_(h, 1);
    tt_no_grad_end();
    tt_backward(y);
}
END_TEST

START_TEST(test_abort_function_outputs) {
    tt_expect_abort("function 'three' has 3 outputs; call tt_function_apply_n");
    static const tt_function three = {"three", 3, 0, twice_forward, twice_backward};
    tt_tensor *x = tt_ones(TT_F64, TT_SHAPE(2));
    tt_function_apply(&three, 1, &x, NULL);
}
END_TEST

START_TEST(test_abort_unused) {
    tt_expect_abort("input 1 (2,) was not used to compute the outputs");
    tt_tensor *a = leaf(tt_ones(TT_F64, TT_SHAPE(2))), *b = leaf(tt_ones(TT_F64, TT_SHAPE(2)));
    tt_tensor *y = tt_sum_all(a), *in[2] = {a, b}, *g[2];
    tt_autograd_grad(1, &y, NULL, 2, in, g, NULL);
}
END_TEST

START_TEST(test_abort_input_no_grad) {
    tt_expect_abort("input 0 (2,) does not require grad");
    tt_tensor *a = leaf(tt_ones(TT_F64, TT_SHAPE(2))), *c = tt_ones(TT_F64, TT_SHAPE(2));
    tt_tensor *y = tt_sum_all(tt_mul(a, c)), *g;
    tt_autograd_grad(1, &y, NULL, 1, &c, &g, NULL);
}
END_TEST

START_TEST(test_abort_no_double_backward) {
    tt_expect_abort("op 'checkpoint' has no differentiable backward");
    tt_tensor *a = leaf(tt_ones(TT_F64, TT_SHAPE(3))), *g;
    tt_tensor *y = tt_sum_all(tt_activation_checkpoint(f_square, NULL, 1, &a, NULL));
    tt_autograd_grad(1, &y, NULL, 1, &a, &g, &(tt_grad_opts){.create_graph = true});
}
END_TEST

int main(void) {
    Suite *s = suite_create("autograd_grad");
    TCase *tc = tt_tcase("grad");
    tcase_add_test(tc, test_grad_returns_values);
    tcase_add_test(tc, test_create_graph_max_ties);
    tcase_add_test(tc, test_create_graph_var_no_dof);
    tcase_add_test(tc, test_grad_intermediate_unused);
    tcase_add_test(tc, test_create_graph_cubic);
    tcase_add_test(tc, test_backward_create_graph);
    tcase_add_test(tc, test_functional);
    tcase_add_test(tc, test_hessian);
    tcase_add_test(tc, test_gradgradcheck);
    tcase_add_test(tc, test_function_record_and_retain);
    tcase_add_test(tc, test_grad_inside_backward);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_unused, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_input_no_grad, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_no_double_backward, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_function_grad_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_function_saved_modified, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_function_outputs, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_grad_inside_backward, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

// Gradients of gradients and custom functions against PyTorch 1.13 (f64,
// tests/reference/gen_autograd_reference.py): a WGAN-GP critic step, a Hessian-vector product
// of an MLP's loss, autograd.grad with allow_unused, and a Swish written as a custom function
// trained inside an MLP.
#include "test_util.h"
#include "swish.h"

#include "reference/autograd_values.h"

#define REF(name) ref_##name, (int64_t)(sizeof ref_##name / sizeof *ref_##name)
#define TOL 1e-12

// A tensor of the given shape holding a reference array (n values).
static tt_tensor *ref_tensor(int ndim, const int64_t *shape, const double *v, int64_t n) {
    tt_tensor *t = tt_from_data(TT_F64, ndim, shape, v);
    ck_assert_int_eq(tt_numel(t), n);
    return t;
}
#define REF_T(name, ...) ref_tensor(TT_SHAPE(__VA_ARGS__), REF(name))
#define PARAM(name, ...) tt_set_requires_grad(REF_T(name, __VA_ARGS__), true)

static void assert_ref(const tt_tensor *t, const double *v, int64_t n, double tol) {
    ck_assert_msg(t, "no tensor");
    tt_assert_values(t, v, n, tol, tol, __FILE__, __LINE__);
}

// ---- WGAN-GP: the critic 4 -> 8 tanh -> 1 ----

static tt_tensor *critic(tt_tensor *const *p, tt_tensor *x) {
    return tt_affine(tt_tanh(tt_affine(x, p[0], p[1])), p[2], p[3]);
}

START_TEST(test_wgan_gp_step) {
    tt_scope_begin();
    tt_tensor *p[4] = {PARAM(wgan_w1, 8, 4), PARAM(wgan_b1, 8), PARAM(wgan_w2, 1, 8),
                       PARAM(wgan_b2, 1)};
    tt_tensor *real = REF_T(wgan_real, 6, 4), *fake = REF_T(wgan_fake, 6, 4);
    tt_tensor *eps = REF_T(wgan_eps, 6, 1);
    tt_tensor *x_hat = tt_add(tt_mul(eps, real), tt_mul(tt_rsub_scalar(1, eps), fake));
    tt_set_requires_grad(x_hat, true);
    tt_tensor *score = tt_sum_all(critic(p, x_hat)), *g;
    tt_autograd_grad(1, &score, NULL, 1, &x_hat, &g, &(tt_grad_opts){.create_graph = true});
    tt_tensor *norm = tt_vector_norm(g, 2, 1, (int[]){1}, false);
    tt_tensor *gp = tt_mean_all(tt_square(tt_add_scalar(norm, -1)));
    tt_tensor *w = tt_sub(tt_mean_all(critic(p, fake)), tt_mean_all(critic(p, real)));
    tt_tensor *loss = tt_add(w, tt_mul_scalar(gp, 10));
    tt_backward(loss);
    assert_ref(gp, REF(wgan_gp), TOL);
    assert_ref(loss, REF(wgan_loss), TOL);
    assert_ref(p[0]->grad, REF(wgan_grad_w1), TOL);
    assert_ref(p[1]->grad, REF(wgan_grad_b1), TOL);
    assert_ref(p[2]->grad, REF(wgan_grad_w2), TOL);
    assert_ref(p[3]->grad, REF(wgan_grad_b2), TOL);
    tt_scope_end();
}
END_TEST

// ---- hvp of cross_entropy(MLP 3 -> 5 tanh -> 4) in the parameters ----

typedef struct mlp_data {
    tt_tensor *x, *y;
} mlp_data;

static tt_tensor *mlp_loss(tt_tensor *const *p, int n, void *ctx) {
    (void)n;
    const mlp_data *d = ctx;
    tt_tensor *logits = tt_affine(tt_tanh(tt_affine(d->x, p[0], p[1])), p[2], p[3]);
    return tt_cross_entropy(logits, d->y, -100);
}

START_TEST(test_hvp_mlp) {
    tt_scope_begin();
    tt_tensor *p[4] = {REF_T(hvp_w1, 5, 3), REF_T(hvp_b1, 5), REF_T(hvp_w2, 4, 5),
                       REF_T(hvp_b2, 4)};
    tt_tensor *v[4] = {REF_T(hvp_v_w1, 5, 3), REF_T(hvp_v_b1, 5), REF_T(hvp_v_w2, 4, 5),
                       REF_T(hvp_v_b2, 4)};
    mlp_data d = {REF_T(hvp_x, 7, 3), tt_to_dtype(REF_T(hvp_y, 7), TT_I64)};
    tt_tensor *out, *hv[4];
    tt_hvp(mlp_loss, &d, 4, p, v, &out, hv, false);
    assert_ref(out, REF(hvp_loss), TOL);
    assert_ref(hv[0], REF(hvp_hvp_w1), TOL);
    assert_ref(hv[1], REF(hvp_hvp_b1), TOL);
    assert_ref(hv[2], REF(hvp_hvp_w2), TOL);
    assert_ref(hv[3], REF(hvp_hvp_b2), TOL);
    tt_scope_end();
}
END_TEST

// ---- autograd.grad with allow_unused ----

START_TEST(test_grad_allow_unused) {
    tt_scope_begin();
    tt_tensor *a = PARAM(unused_a, 3), *b = PARAM(unused_b, 3);
    tt_tensor *c = tt_set_requires_grad(tt_zeros(TT_F64, TT_SHAPE(3)), true);
    tt_tensor *y = tt_add(tt_sum_all(tt_mul(a, b)), tt_mul_scalar(tt_sum_all(tt_square(a)), 0.5));
    tt_tensor *in[3] = {a, b, c}, *g[3];
    tt_autograd_grad(1, &y, NULL, 3, in, g, &(tt_grad_opts){.allow_unused = true});
    assert_ref(g[0], REF(unused_grad_a), TOL);
    assert_ref(g[1], REF(unused_grad_b), TOL);
    ck_assert_ptr_null(g[2]);
    ck_assert_ptr_null(a->grad);
    tt_scope_end();
}
END_TEST

// ---- a Swish custom function (tests/swish.h) trained inside an MLP 2 -> 8 -> 1 ----

START_TEST(test_swish_trained) {
    tt_tensor *p[4] = {PARAM(swish_w1, 8, 2), PARAM(swish_b1, 8), PARAM(swish_w2, 1, 8),
                       PARAM(swish_b2, 1)};
    tt_tensor *x = REF_T(swish_x, 16, 2), *t = REF_T(swish_t, 16, 1);
    for (int step = 0; step < SWISH_STEPS; step++) {
        tt_scope_begin();
        tt_tensor *h = tt_function_apply(&swish, 1, (tt_tensor *[]){tt_affine(x, p[0], p[1])},
                                         NULL);
        tt_tensor *loss = tt_mean_all(tt_square(tt_sub(tt_affine(h, p[2], p[3]), t)));
        for (int i = 0; i < 4; i++) tt_zero_grad(p[i]);
        tt_backward(loss);
        ck_assert_close(tt_item(loss), ref_swish_losses[step], TOL, TOL);
        tt_no_grad_begin();
        for (int i = 0; i < 4; i++) tt_sub_(p[i], tt_mul_scalar(p[i]->grad, 0.1));
        tt_no_grad_end();
        tt_scope_end();
    }
    assert_ref(p[0], REF(swish_final_w1), TOL);
    assert_ref(p[1], REF(swish_final_b1), TOL);
    assert_ref(p[2], REF(swish_final_w2), TOL);
    assert_ref(p[3], REF(swish_final_b2), TOL);
    for (int i = 0; i < 4; i++) tt_zero_grad(p[i]), tt_release(p[i]);
    tt_release(x), tt_release(t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("autograd_reference");
    TCase *tc = tt_tcase("pytorch");
    tcase_add_test(tc, test_wgan_gp_step);
    tcase_add_test(tc, test_hvp_mlp);
    tcase_add_test(tc, test_grad_allow_unused);
    tcase_add_test(tc, test_swish_trained);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}

// Check suite of the losses of nn/loss.c: forward values under each reduction and gradients
// against numbers printed by PyTorch 1.13 (tests/reference/loss_values.py), in f32 and f64;
// the clamped logs of binary cross-entropy, ignored targets and weights of nll_loss, and the
// abort paths. Finite-difference gradients are in tests/gc_nn_losses.c.
#include <math.h>
#include <signal.h>

#include "test_util.h"

static const tt_dtype dtypes[2] = {TT_F32, TT_F64};

#define TOL(dt) ((dt) == TT_F64 ? 1e-12 : 2e-5)
#define CHECK(t, dt, ...) ck_assert_values((t), TOL(dt), TOL(dt), __VA_ARGS__)

// x and y of the elementwise losses; |x - y| = 1, 1.6, 3, 0, 1.6, 0.4.
static tt_tensor *xs(tt_dtype dt) {
    return tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 0.5, -1.2, 2.0, 0.3, 0.9,
                                               -0.4), true);
}
static tt_tensor *ys(tt_dtype dt) {
    return tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), -0.5, 0.4, -1.0, 0.3, 2.5,
                                               0.0), true);
}

// ---- mse, l1, smooth-L1, Huber ----

START_TEST(test_mse_l1) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = xs(dt), *y = ys(dt);
    CHECK(tt_mse_loss_ex(x, y, TT_REDUCTION_NONE), dt, 1, 2.5600000000000005, 9, 0,
          2.5600000000000005, 0.16000000000000003);
    CHECK(tt_mse_loss_ex(x, y, TT_REDUCTION_SUM), dt, 15.280000000000001);
    tt_tensor *mse = tt_mse_loss_ex(x, y, TT_REDUCTION_MEAN);
    CHECK(mse, dt, 2.5466666666666669);
    ck_assert_double_eq(tt_item(mse), tt_item(tt_mse_loss(x, y)));
    tt_backward(mse);
    CHECK(tt_grad(x), dt, 0.33333333333333331, -0.53333333333333333, 1, 0,
          -0.53333333333333333, -0.13333333333333333);
    tt_zero_grad(x);
    tt_zero_grad(y);
    CHECK(tt_l1_loss(x, y, TT_REDUCTION_NONE), dt, 1, 1.6000000000000001, 3, 0,
          1.6000000000000001, 0.40000000000000002);
    CHECK(tt_l1_loss(x, y, TT_REDUCTION_SUM), dt, 7.5999999999999996);
    tt_tensor *l1 = tt_l1_loss(x, y, TT_REDUCTION_MEAN);
    CHECK(l1, dt, 1.2666666666666666);
    tt_backward(l1);  // x == y at [1, 0]: gradient 0
    CHECK(tt_grad(x), dt, 0.16666666666666666, -0.16666666666666666, 0.16666666666666666, 0,
          -0.16666666666666666, -0.16666666666666666);
    CHECK(tt_grad(y), dt, -0.16666666666666666, 0.16666666666666666, -0.16666666666666666, 0,
          0.16666666666666666, 0.16666666666666666);
    tt_scope_end();
}
END_TEST

// |x - y| = beta exactly at [0, 0]: PyTorch's gradient there is sign(x - y).
START_TEST(test_smooth_l1_huber) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = xs(dt), *y = ys(dt);
    CHECK(tt_smooth_l1_loss(x, y, 1.0, TT_REDUCTION_NONE), dt, 0.5, 1.1000000000000001, 2.5, 0,
          1.1000000000000001, 0.080000000000000016);
    CHECK(tt_smooth_l1_loss(x, y, 2.0, TT_REDUCTION_NONE), dt, 0.25, 0.64000000000000012, 2, 0,
          0.64000000000000012, 0.040000000000000008);
    CHECK(tt_smooth_l1_loss(x, y, 1.0, TT_REDUCTION_SUM), dt, 5.2800000000000002);
    CHECK(tt_smooth_l1_loss(x, y, 2.0, TT_REDUCTION_SUM), dt, 3.5700000000000003);
    CHECK(tt_smooth_l1_loss(x, y, 0.0, TT_REDUCTION_SUM), dt, 7.5999999999999996);  // l1
    tt_tensor *s1 = tt_smooth_l1_loss(x, y, 1.0, TT_REDUCTION_MEAN);
    CHECK(s1, dt, 0.88);
    tt_backward(s1);
    CHECK(tt_grad(x), dt, 0.16666666666666666, -0.16666666666666666, 0.16666666666666666, 0,
          -0.16666666666666666, -0.066666666666666666);
    CHECK(tt_grad(y), dt, -0.16666666666666666, 0.16666666666666666, -0.16666666666666666, 0,
          0.16666666666666666, 0.066666666666666666);
    tt_zero_grad(x);
    tt_tensor *s2 = tt_smooth_l1_loss(x, y, 2.0, TT_REDUCTION_MEAN);
    CHECK(s2, dt, 0.59500000000000008);
    tt_backward(s2);
    CHECK(tt_grad(x), dt, 0.083333333333333329, -0.13333333333333333, 0.16666666666666666, 0,
          -0.13333333333333333, -0.033333333333333333);

    CHECK(tt_huber_loss(x, y, 1.0, TT_REDUCTION_NONE), dt, 0.5, 1.1000000000000001, 2.5, 0,
          1.1000000000000001, 0.080000000000000016);
    CHECK(tt_huber_loss(x, y, 0.5, TT_REDUCTION_NONE), dt, 0.375, 0.67500000000000004, 1.375, 0,
          0.67500000000000004, 0.080000000000000016);
    CHECK(tt_huber_loss(x, y, 1.0, TT_REDUCTION_SUM), dt, 5.2800000000000002);
    CHECK(tt_huber_loss(x, y, 0.5, TT_REDUCTION_SUM), dt, 3.1800000000000002);
    tt_zero_grad(x);
    tt_tensor *h = tt_huber_loss(x, y, 0.5, TT_REDUCTION_MEAN);
    CHECK(h, dt, 0.53000000000000003);
    tt_backward(h);
    CHECK(tt_grad(x), dt, 0.083333333333333329, -0.083333333333333329, 0.083333333333333329, 0,
          -0.083333333333333329, -0.066666666666666666);
    tt_scope_end();
}
END_TEST

// ---- KL divergence ----

static tt_tensor *kl_input(tt_dtype dt) {
    return tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(2, 3), -1.4026926145345144, -1.9026926145345144,
                       -0.5026926145345143, -0.79891618484172566, -0.79891618484172566,
                       -2.2989161848417257),
        true);
}

// A target probability of 0 contributes 0 (PyTorch's xlogy), with gradient -0 for the input.
START_TEST(test_kl_div) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = kl_input(dt);
    tt_tensor *t = tt_test_tensor(dt, TT_SHAPE(2, 3), 0.2, 0.0, 0.8, 0.5, 0.3, 0.2);
    CHECK(tt_kl_div(x, t, TT_REDUCTION_NONE, false), dt, -0.041349059579917191, 0,
          0.22363925057624368, 0.052884502140890188, -0.12151698584526313, 0.13789565448152508);
    CHECK(tt_kl_div(x, t, TT_REDUCTION_MEAN, false), dt, 0.041925560295579777);
    CHECK(tt_kl_div(x, t, TT_REDUCTION_SUM, false), dt, 0.25155336177347865);
    tt_tensor *bm = tt_kl_div(x, t, TT_REDUCTION_BATCHMEAN, false);
    CHECK(bm, dt, 0.12577668088673932);
    tt_backward(bm);
    CHECK(tt_grad(x), dt, -0.10000000000000001, -0, -0.40000000000000002, -0.25,
          -0.14999999999999999, -0.10000000000000001);
    tt_scope_end();
}
END_TEST

START_TEST(test_kl_div_log_target) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = kl_input(dt);
    tt_tensor *t = tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(2, 3), -1.5, -0.2, -2.0, -0.7, -1.1, -0.9), true);
    CHECK(tt_kl_div(x, t, TT_REDUCTION_NONE, true), dt, -0.021712212502538786,
          1.3940468065581608, -0.20263851910424355, 0.049120323699515578, -0.10022209583568707,
          0.56875687727671753);
    CHECK(tt_kl_div(x, t, TT_REDUCTION_SUM, true), dt, 1.6873511800919245);
    CHECK(tt_kl_div(x, t, TT_REDUCTION_BATCHMEAN, true), dt, 0.84367559004596226);
    tt_tensor *m = tt_kl_div(x, t, TT_REDUCTION_MEAN, true);
    CHECK(m, dt, 0.28122519668198742);
    tt_backward(m);
    CHECK(tt_grad(x), dt, -0.037188360024738298, -0.13645512551299696, -0.022555880539435448,
          -0.082764217298568254, -0.055478513949679925, -0.067761609956766514);
    CHECK(tt_grad(t), dt, 0.033569657940981837, 0.36879625993935711, -0.011217205977938474,
          0.090950937915154184, 0.038774831310398744, 0.1625544228362194);
    tt_scope_end();
}
END_TEST

// ---- binary cross-entropy ----

static tt_tensor *bce_targets(tt_dtype dt) {
    return tt_test_tensor(dt, TT_SHAPE(2, 3), 0.0, 1.0, 1.0, 0.0, 0.3, 1.0);
}

// p = 0 with t = 1 and p = 1 with t = 0: PyTorch clamps the log at -100, loss 100.
START_TEST(test_binary_cross_entropy) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *p = tt_test_tensor(dt, TT_SHAPE(2, 3), 0.2, 0.0, 0.9, 1.0, 0.6, 0.35);
    tt_tensor *t = bce_targets(dt);
    tt_tensor *w = tt_test_tensor(dt, TT_SHAPE(3), 0.5, 2.0, 1.0);
    CHECK(tt_binary_cross_entropy(p, t, NULL, TT_REDUCTION_NONE), dt, 0.22314355131420971, 100,
          0.10536051565782628, 100, 0.7946511994417057, 1.0498221244986778);
    CHECK(tt_binary_cross_entropy(p, t, w, TT_REDUCTION_NONE), dt, 0.11157177565710485, 200,
          0.10536051565782628, 50, 1.5893023988834114, 1.0498221244986778);
    CHECK(tt_binary_cross_entropy(p, t, NULL, TT_REDUCTION_MEAN), dt, 33.695496231818737);
    CHECK(tt_binary_cross_entropy(p, t, w, TT_REDUCTION_MEAN), dt, 42.142676135782835);
    CHECK(tt_binary_cross_entropy(p, t, NULL, TT_REDUCTION_SUM), dt, 202.17297739091242);
    CHECK(tt_binary_cross_entropy(p, t, w, TT_REDUCTION_SUM), dt, 252.85605681469701);
    // The gradient inside (0, 1) is PyTorch's; at the clamp it is finite (0 for that term).
    tt_tensor *pi = tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(2, 3), 0.2, 0.05, 0.9, 0.7, 0.6, 0.35), true);
    tt_backward(tt_binary_cross_entropy(pi, t, w, TT_REDUCTION_MEAN));
    CHECK(tt_grad(pi), dt, 0.10416666666666664, -6.666666666666667, -0.1851851851851852,
          0.27777777777777773, 0.41666666666666669, -0.47619047619047628);
    tt_tensor *pc = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2), 0.0, 1.0), true);
    tt_tensor *tc = tt_test_tensor(dt, TT_SHAPE(2), 1.0, 0.0);
    tt_backward(tt_binary_cross_entropy(pc, tc, NULL, TT_REDUCTION_SUM));
    ck_assert(isfinite(tt_at(tt_grad(pc), 0)) && isfinite(tt_at(tt_grad(pc), 1)));
    tt_scope_end();
}
END_TEST

START_TEST(test_bce_with_logits_ex) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(2, 3), 0.2, -3.0, 1.5, 4.0, 0.0, -0.7), true);
    tt_tensor *t = bce_targets(dt);
    tt_tensor *w = tt_test_tensor(dt, TT_SHAPE(3), 0.5, 2.0, 1.0);
    CHECK(tt_bce_with_logits_ex(x, t, w, TT_REDUCTION_NONE), dt, 0.39906943469079592,
          6.0971747031474841, 0.20141327798275246, 2.0090749639589047, 1.3862943611198906,
          1.1031860488854579);
    CHECK(tt_bce_with_logits_ex(x, t, w, TT_REDUCTION_SUM), dt, 11.196212789785285);
    tt_tensor *m = tt_bce_with_logits_ex(x, t, w, TT_REDUCTION_MEAN);
    CHECK(m, dt, 1.8660354649642141);
    tt_backward(m);
    CHECK(tt_grad(x), dt, 0.045819499776039829, -0.31752470894081108, -0.030404253967726058,
          0.081834482503159042, 0.066666666666666666, -0.11136462869469436);
    // Without a weight the mean is the old function's result, bit for bit.
    ck_assert_double_eq(tt_item(tt_bce_with_logits_ex(x, t, NULL, TT_REDUCTION_MEAN)),
                        tt_item(tt_bce_with_logits(x, t)));
    tt_scope_end();
}
END_TEST

// ---- nll_loss, cross_entropy_nc ----

static tt_tensor *nll_logp(tt_dtype dt) {
    return tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(3, 4), -1.7633770456273878, -2.2633770456273878,
                       -0.66337704562738786, -1.5633770456273877, -0.34234958238982199,
                       -1.8423495823898219, -3.3423495823898222, -2.3423495823898222,
                       -2.4905213740008887, -1.3905213740008886, -1.7905213740008887,
                       -0.69052137400088864),
        true);
}

START_TEST(test_nll_loss) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = nll_logp(dt);
    tt_tensor *tg = tt_from_data(TT_I64, TT_SHAPE(3), (const int64_t[]){1, -100, 3});
    tt_tensor *w = tt_test_tensor(dt, TT_SHAPE(4), 0.2, 1.0, 0.5, 2.0);
    CHECK(tt_nll_loss(x, tg, NULL, -100, TT_REDUCTION_NONE), dt, 2.2633770456273878, 0,
          0.69052137400088864);
    CHECK(tt_nll_loss(x, tg, w, -100, TT_REDUCTION_NONE), dt, 2.2633770456273878, 0,
          1.3810427480017773);
    CHECK(tt_nll_loss(x, tg, NULL, -100, TT_REDUCTION_SUM), dt, 2.9538984196282767);
    CHECK(tt_nll_loss(x, tg, w, -100, TT_REDUCTION_SUM), dt, 3.6444197936291651);
    CHECK(tt_nll_loss(x, tg, NULL, -100, TT_REDUCTION_MEAN), dt, 1.4769492098141384);
    tt_tensor *m = tt_nll_loss(x, tg, w, -100, TT_REDUCTION_MEAN);
    CHECK(m, dt, 1.2148065978763884);
    tt_backward(m);
    CHECK(tt_grad(x), dt, 0, -0.33333333333333331, 0, 0, 0, 0, 0, 0, 0, 0, 0,
          -0.66666666666666663);
    // A custom ignore_index, I32 targets.
    tt_tensor *t2 = tt_from_data(TT_I32, TT_SHAPE(3), (const int32_t[]){1, 2, 2});
    CHECK(tt_nll_loss(x, t2, w, 2, TT_REDUCTION_MEAN), dt, 2.2633770456273878);
    // Every target ignored: the mean is 0 / 0 = NaN, as in PyTorch.
    tt_tensor *t3 = tt_from_data(TT_I64, TT_SHAPE(3), (const int64_t[]){-100, -100, -100});
    ck_assert(isnan(tt_item(tt_nll_loss(x, t3, NULL, -100, TT_REDUCTION_MEAN))));
    CHECK(tt_nll_loss(x, t3, NULL, -100, TT_REDUCTION_SUM), dt, 0);
    // (C,) with a 0-dim target.
    tt_tensor *row = tt_squeeze(tt_slice(x, 0, 0, 1, 1), 0);
    tt_tensor *l1 = tt_nll_loss(row, tt_from_data(TT_I64, 0, NULL, (const int64_t[]){2}), NULL,
                                -100, TT_REDUCTION_NONE);
    ck_assert_int_eq(l1->ndim, 0);
    CHECK(l1, dt, 0.66337704562738786);
    tt_scope_end();
}
END_TEST

// A -inf log-probability off the target does not poison the row (no 0 * inf).
START_TEST(test_nll_loss_inf_elsewhere) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(1, 3), -INFINITY, -0.5,
                                                       NAN), true);
    tt_tensor *tg = tt_from_data(TT_I64, TT_SHAPE(1), (const int64_t[]){1});
    tt_tensor *l = tt_nll_loss(x, tg, NULL, -100, TT_REDUCTION_MEAN);
    CHECK(l, dt, 0.5);
    tt_backward(l);
    CHECK(tt_grad(x), dt, 0, -1, 0);
    tt_scope_end();
}
END_TEST

static tt_tensor *q3d(tt_dtype dt) {
    return tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3, 2), 0.3, -0.2, 1.0, 0.4, -0.5,
                                               0.9, 0.0, 0.7, -1.2, 0.1, 0.6, -0.3),
                                true);
}

// (N, C, d) = (2, 3, 2) with targets (2, 2), one ignored.
START_TEST(test_nll_cross_entropy_3d) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *tg = tt_from_data(TT_I64, TT_SHAPE(2, 2), (const int64_t[]){2, 0, 1, -100});
    tt_tensor *w = tt_test_tensor(dt, TT_SHAPE(3), 1.0, 0.5, 2.0);
    tt_tensor *x = q3d(dt);
    tt_tensor *l = tt_nll_loss(x, tg, NULL, -100, TT_REDUCTION_MEAN);
    CHECK(l, dt, 0.6333333333333333);
    tt_backward(l);
    CHECK(tt_grad(x), dt, 0, -0.33333333333333331, 0, 0, -0.33333333333333331, 0, 0, 0,
          -0.33333333333333331, 0, 0, 0);
    tt_zero_grad(x);
    CHECK(tt_cross_entropy_nc(x, tg, w, -100, TT_REDUCTION_NONE, 0.0), dt,
          4.0843176983973928, 1.7623795458312443, 1.1694471506806416, 0);
    CHECK(tt_cross_entropy_nc(x, tg, w, -100, TT_REDUCTION_SUM, 0.0), dt, 7.0161443949092792);
    tt_tensor *ce = tt_cross_entropy_nc(x, tg, w, -100, TT_REDUCTION_MEAN, 0.0);
    CHECK(ce, dt, 2.004612684259794);
    tt_backward(ce);
    CHECK(tt_grad(x), dt, 0.16500580281336305, -0.23667543946344155, 0.33228088216374946,
          0.089354603703122731, -0.49728668497711243, 0.14732083576031887, 0.045738977263703462,
          0, -0.12908082764653156, 0, 0.083341850382828098, 0);
    tt_scope_end();
}
END_TEST

// Label smoothing 0.1 with a weight and an ignored target, in (N, C, d).
START_TEST(test_cross_entropy_nc_label_smoothing) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *tg = tt_from_data(TT_I64, TT_SHAPE(2, 2), (const int64_t[]){2, 0, 1, -100});
    tt_tensor *w = tt_test_tensor(dt, TT_SHAPE(3), 1.0, 0.5, 2.0);
    tt_tensor *x = q3d(dt);
    CHECK(tt_cross_entropy_nc(x, tg, w, -100, TT_REDUCTION_NONE, 0.1), dt,
          3.8624711276308346, 1.7084192049284319, 1.1653734374380607, 0);
    CHECK(tt_cross_entropy_nc(x, tg, w, -100, TT_REDUCTION_SUM, 0.1), dt, 6.7362637699973282);
    tt_tensor *ce = tt_cross_entropy_nc(x, tg, w, -100, TT_REDUCTION_MEAN, 0.1);
    CHECK(ce, dt, 1.9246467914278078);
    tt_backward(ce);
    CHECK(tt_grad(x), dt, 0.14860675150566344, -0.21681050631164184, 0.3136739406450218,
          0.086081942336270034, -0.46228069215068524, 0.13072856397537183, 0.042313698041721068,
          0, -0.11772017609464056, 0, 0.075406478052919473, 0);
    // (N, C) without a weight: also the fused tt_cross_entropy_smooth (classes last).
    tt_tensor *z = tt_set_requires_grad(
        tt_test_tensor(dt, TT_SHAPE(3, 4), 0.1, -0.4, 1.2, 0.3, 2.0, 0.5, -1.0, 0.0, -0.3, 0.8,
                       0.4, 1.5),
        true);
    tt_tensor *t2 = tt_from_data(TT_I64, TT_SHAPE(3), (const int64_t[]){1, -100, 3});
    tt_tensor *l2 = tt_cross_entropy_nc(z, t2, NULL, -100, TT_REDUCTION_MEAN, 0.25);
    CHECK(l2, dt, 1.5019492098141383);
    CHECK(tt_cross_entropy_smooth(z, t2, -100, 0.25), dt, 1.5019492098141383);
    tt_backward(l2);
    CHECK(tt_grad(z), dt, 0.054482420200988965, -0.35425065861673344, 0.22630442391850986,
          0.073463814497234603, 0, 0, 0, 0, 0.010183375370485491, 0.093222738545431477,
          0.052186571831955714, -0.15559268574787266);
    tt_scope_end();
}
END_TEST

// The two layouts: tt_cross_entropy takes (B, T, V), classes last; tt_cross_entropy_nc the
// same logits as PyTorch's (B, V, T). Same loss and gradient; the deprecated name
// tt_cross_entropy_ex still computes tt_cross_entropy_nc.
START_TEST(test_cross_entropy_layouts) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_tensor *z = tt_set_requires_grad(tt_randn(&rng, TT_F64, TT_SHAPE(2, 3, 5)), true);
    tt_tensor *t = tt_randint(&rng, 0, 5, TT_SHAPE(2, 3));
    tt_tensor *last = tt_cross_entropy(z, t, -100);
    tt_tensor *nc = tt_cross_entropy_nc(tt_transpose(z, 1, 2), t, NULL, -100,
                                        TT_REDUCTION_MEAN, 0.0);
    ck_assert_double_eq_tol(tt_item(last), tt_item(nc), 1e-12);
    tt_backward(last);
    tt_tensor *g_last = tt_clone(tt_grad(z));
    tt_zero_grad(z);
    tt_backward(nc);
    for (int64_t i = 0; i < 30; i++)
        ck_assert_double_eq_tol(tt_at(tt_grad(z), i), tt_at(g_last, i), 1e-12);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    tt_tensor *ex = tt_cross_entropy_ex(tt_transpose(z, 1, 2), t, NULL, -100,
                                        TT_REDUCTION_SUM, 0.0);
#pragma GCC diagnostic pop
    ck_assert_double_eq_tol(tt_item(ex), 6 * tt_item(last), 1e-12);
    tt_scope_end();
}
END_TEST

START_TEST(test_abort_label_smoothing) {
    tt_expect_abort("label_smoothing is 1.5; it must be in [0, 1]");
    tt_cross_entropy_nc(tt_zeros(TT_F32, TT_SHAPE(2, 3)), tt_zeros(TT_I64, TT_SHAPE(2)), NULL,
                        -100, TT_REDUCTION_MEAN, 1.5);
}
END_TEST

// Empty inputs: NONE gives an empty tensor and SUM 0, as in PyTorch (MEAN aborts).
START_TEST(test_empty) {
    tt_scope_begin();
    tt_tensor *e = tt_zeros(TT_F64, TT_SHAPE(0, 3));
    ck_assert_int_eq(tt_numel(tt_l1_loss(e, e, TT_REDUCTION_NONE)), 0);
    CHECK(tt_huber_loss(e, e, 1.0, TT_REDUCTION_SUM), TT_F64, 0);
    CHECK(tt_kl_div(e, e, TT_REDUCTION_SUM, false), TT_F64, 0);
    tt_tensor *none = tt_nll_loss(e, tt_zeros(TT_I64, TT_SHAPE(0)), NULL, -100,
                                  TT_REDUCTION_NONE);
    ck_assert_int_eq(none->ndim, 1);
    ck_assert_int_eq(none->shape[0], 0);
    CHECK(tt_nll_loss(e, tt_zeros(TT_I64, TT_SHAPE(0)), NULL, -100, TT_REDUCTION_SUM), TT_F64,
          0);
    tt_scope_end();
}
END_TEST

START_TEST(test_abort_empty_mean) {
    tt_expect_abort("is empty: the mean of no elements");
    tt_l1_loss(tt_zeros(TT_F32, TT_SHAPE(0)), tt_zeros(TT_F32, TT_SHAPE(0)), TT_REDUCTION_MEAN);
}
END_TEST

// ---- aborts ----

START_TEST(test_abort_shape) {
    tt_expect_abort("does not broadcast");
    tt_l1_loss(tt_zeros(TT_F32, TT_SHAPE(3)), tt_zeros(TT_F32, TT_SHAPE(3, 1)),
               TT_REDUCTION_MEAN);
}
END_TEST

START_TEST(test_abort_reduction) {
    tt_expect_abort("BATCHMEAN is tt_kl_div's");
    tt_mse_loss_ex(tt_zeros(TT_F32, TT_SHAPE(3)), tt_zeros(TT_F32, TT_SHAPE(3)),
                   TT_REDUCTION_BATCHMEAN);
}
END_TEST

START_TEST(test_abort_beta) {
    tt_expect_abort("beta is -1; it must be >= 0");
    tt_smooth_l1_loss(tt_zeros(TT_F32, TT_SHAPE(3)), tt_zeros(TT_F32, TT_SHAPE(3)), -1.0,
                      TT_REDUCTION_MEAN);
}
END_TEST

START_TEST(test_abort_delta) {
    tt_expect_abort("delta is 0; it must be > 0");
    tt_huber_loss(tt_zeros(TT_F32, TT_SHAPE(3)), tt_zeros(TT_F32, TT_SHAPE(3)), 0.0,
                  TT_REDUCTION_MEAN);
}
END_TEST

START_TEST(test_abort_bce_range) {
    tt_expect_abort("probs[1] = 1.5: all elements of probs must be between 0 and 1");
    tt_binary_cross_entropy(tt_test_tensor(TT_F32, TT_SHAPE(2), 0.5, 1.5),
                            tt_zeros(TT_F32, TT_SHAPE(2)), NULL, TT_REDUCTION_MEAN);
}
END_TEST

START_TEST(test_abort_bce_weight) {
    tt_expect_abort("must have the input's dtype (f32) and broadcast to its shape");
    tt_binary_cross_entropy(tt_zeros(TT_F32, TT_SHAPE(2, 3)), tt_zeros(TT_F32, TT_SHAPE(2, 3)),
                            tt_ones(TT_F32, TT_SHAPE(2)), TT_REDUCTION_MEAN);
}
END_TEST

START_TEST(test_abort_nll_target_range) {
    tt_expect_abort("target 4 (element 1) is out of bounds");
    tt_nll_loss(tt_zeros(TT_F32, TT_SHAPE(2, 4)),
                tt_from_data(TT_I64, TT_SHAPE(2), (const int64_t[]){0, 4}), NULL, -100,
                TT_REDUCTION_MEAN);
}
END_TEST

START_TEST(test_abort_nll_target_shape) {
    tt_expect_abort("without its class dim 1");
    tt_nll_loss(tt_zeros(TT_F32, TT_SHAPE(2, 4, 3)), tt_zeros(TT_I64, TT_SHAPE(2, 4)), NULL,
                -100, TT_REDUCTION_MEAN);
}
END_TEST

START_TEST(test_abort_nll_target_dtype) {
    tt_expect_abort("they must be class indices of TT_I32 or TT_I64");
    tt_nll_loss(tt_zeros(TT_F32, TT_SHAPE(2, 4)), tt_zeros(TT_F32, TT_SHAPE(2)), NULL, -100,
                TT_REDUCTION_MEAN);
}
END_TEST

START_TEST(test_abort_nll_weight) {
    tt_expect_abort("must be (C,) = (4,)");
    tt_nll_loss(tt_zeros(TT_F32, TT_SHAPE(2, 4)), tt_zeros(TT_I64, TT_SHAPE(2)),
                tt_ones(TT_F32, TT_SHAPE(3)), -100, TT_REDUCTION_MEAN);
}
END_TEST

int main(void) {
    Suite *s = suite_create("losses");
    TCase *tc = tt_tcase("values");
    tcase_add_loop_test(tc, test_mse_l1, 0, 2);
    tcase_add_loop_test(tc, test_smooth_l1_huber, 0, 2);
    tcase_add_loop_test(tc, test_kl_div, 0, 2);
    tcase_add_loop_test(tc, test_kl_div_log_target, 0, 2);
    tcase_add_loop_test(tc, test_binary_cross_entropy, 0, 2);
    tcase_add_loop_test(tc, test_bce_with_logits_ex, 0, 2);
    tcase_add_loop_test(tc, test_nll_loss, 0, 2);
    tcase_add_loop_test(tc, test_nll_loss_inf_elsewhere, 0, 2);
    tcase_add_loop_test(tc, test_nll_cross_entropy_3d, 0, 2);
    tcase_add_loop_test(tc, test_cross_entropy_nc_label_smoothing, 0, 2);
    tcase_add_test(tc, test_cross_entropy_layouts);
    tcase_add_test(tc, test_empty);
    suite_add_tcase(s, tc);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_empty_mean, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_label_smoothing, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_reduction, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_beta, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_delta, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bce_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bce_weight, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_nll_target_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_nll_target_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_nll_target_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_nll_weight, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

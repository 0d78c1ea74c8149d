// Check suite of the basic nn modules (nn/params.c, nn/init.c, nn/layers.c) and the losses
// (nn/loss.c): parameter lists, the default dtype, init statistics, Linear, Embedding, the
// norms, activations, Dropout, Sequential, MSE / BCE, gradient accumulation, abort paths.
// Attention, feed-forward, blocks and positional encodings have their own suite; gradchecks of
// these modules are in tests/gc_nn_layers.c.
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt/gpt.h"
#include "test_util.h"

static const tt_dtype float_dtypes[2] = {TT_F32, TT_F64};

// ---- helpers ----

typedef struct stats {
    double mean, std, min, max;
} stats;

static stats tensor_stats(const tt_tensor *t) {
    int64_t n = tt_numel(t);
    stats s = {0, 0, INFINITY, -INFINITY};
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = tt_at(t, i);
        sum += v;
        s.min = fmin(s.min, v);
        s.max = fmax(s.max, v);
    }
    s.mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) {
        double d = tt_at(t, i) - s.mean;
        sq += d * d;
    }
    s.std = sqrt(sq / (double)n);
    return s;
}

// 512 x 256 = 131072 samples: the sample std is within ~0.2% (1 sigma) of the true one, the
// mean within ~0.3% of a std, so 2% tolerances are many sigmas wide.
#define INIT_ROWS 512
#define INIT_COLS 256

// U[lo, hi): every sample inside, both ends reached, mean (lo + hi) / 2, std (hi - lo)/sqrt(12).
static void check_uniform(const tt_tensor *t, double lo, double hi) {
    stats s = tensor_stats(t);
    double range = hi - lo;
    ck_assert_msg(s.min >= lo && s.max <= hi, "samples [%g, %g] outside [%g, %g]", s.min, s.max,
                  lo, hi);
    ck_assert_msg(s.min < lo + 0.01 * range && s.max > hi - 0.01 * range,
                  "samples [%g, %g] do not fill [%g, %g]", s.min, s.max, lo, hi);
    ck_assert_close(s.mean, (lo + hi) / 2, 0.01 * range, 0);
    ck_assert_close(s.std, range / sqrt(12.0), 0, 0.02);
}

// N(mean, std): sample mean and std, and tails wider than a uniform's (max |z| > 3).
static void check_normal(const tt_tensor *t, double mean, double std) {
    stats s = tensor_stats(t);
    ck_assert_close(s.mean, mean, 0.02 * std, 0);
    ck_assert_close(s.std, std, 0, 0.02);
    ck_assert_msg(fmax(mean - s.min, s.max - mean) > 3 * std,
                  "no sample beyond 3 std: [%g, %g] for N(%g, %g)", s.min, s.max, mean, std);
}

static void assert_same_values(const tt_tensor *a, const tt_tensor *b, double atol) {
    char sa[64], sb[64];
    ck_assert_msg(tt_same_shape(a, b), "shapes %s and %s differ", tt_shape_str(a, sa, 64),
                  tt_shape_str(b, sb, 64));
    for (int64_t i = 0; i < tt_numel(a); i++)
        ck_assert_msg(fabs(tt_at(a, i) - tt_at(b, i)) <= atol, "element %lld: %.12g vs %.12g",
                      (long long)i, tt_at(a, i), tt_at(b, i));
}

static void assert_all_finite(const tt_tensor *t) {
    ck_assert_ptr_nonnull(t);
    for (int64_t i = 0; i < tt_numel(t); i++)
        ck_assert_msg(isfinite(tt_at(t, i)), "element %lld is %g", (long long)i, tt_at(t, i));
}

// ---- parameter lists ----

START_TEST(test_params_names) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_linear fc1, fc2;
    tt_nn_linear_init(&fc1, 3, 4, true, &rng);
    tt_nn_linear_init(&fc2, 4, 2, false, &rng);
    tt_params p;
    tt_params_init(&p);
    tt_nn_linear_params(&fc1, &p, "enc.fc1");
    tt_nn_linear_params(&fc2, &p, "fc2");
    tt_params_add(&p, NULL, "scale", fc1.bias);  // no prefix: the bare name
    tt_params_add(&p, "", "shift", fc2.weight);  // "" is no prefix too
    ck_assert_int_eq(p.n, 5);
    ck_assert_str_eq(p.items[0].name, "enc.fc1.weight");
    ck_assert_str_eq(p.items[1].name, "enc.fc1.bias");
    ck_assert_str_eq(p.items[2].name, "fc2.weight");
    ck_assert_str_eq(p.items[3].name, "scale");
    ck_assert_str_eq(p.items[4].name, "shift");
    ck_assert_ptr_eq(tt_params_get(&p, "enc.fc1.weight"), fc1.weight);
    ck_assert_ptr_eq(tt_params_get(&p, "enc.fc1.bias"), fc1.bias);
    ck_assert_ptr_eq(tt_params_get(&p, "fc2.weight"), fc2.weight);
    ck_assert_ptr_null(tt_params_get(&p, "fc2.bias"));
    ck_assert_ptr_null(tt_params_get(&p, "fc1.weight"));
    ck_assert_int_eq(tt_params_numel(&p), 12 + 4 + 8 + 4 + 8);

    char buf[TT_NAME_MAX];
    ck_assert_str_eq(tt_name_join(buf, "blocks.3", "attn"), "blocks.3.attn");
    ck_assert_str_eq(tt_name_join(buf, NULL, "attn"), "attn");
    ck_assert_str_eq(tt_name_index(buf, "blocks", 11), "blocks.11");
    ck_assert_str_eq(tt_name_index(buf, "", 0), "0");
    // buf may be the prefix itself.
    ck_assert_str_eq(tt_name_index(buf, tt_name_join(buf, "h", "blocks"), 2), "h.blocks.2");
    ck_assert_str_eq(tt_name_join(buf, buf, "mlp"), "h.blocks.2.mlp");

    tt_params_free(&p);
    ck_assert_int_eq(p.n, 0);
    ck_assert_ptr_null(p.items);
    tt_params_free(&p);  // safe twice / on a zeroed list
    tt_nn_linear_free(&fc1);
    tt_nn_linear_free(&fc2);
}
END_TEST

// The list holds references of its own: the tensors outlive their module until the list is
// freed, and tt_params_free releases exactly those references.
START_TEST(test_params_references) {
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    int64_t base = tt_live_tensors(), base_bytes = tt_live_bytes();
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 5, 3, true, &rng);
    ck_assert_int_eq(tt_live_tensors(), base + 2);
    tt_params p;
    tt_params_init(&p);
    tt_nn_linear_params(&fc, &p, "fc");
    tt_tensor *w = fc.weight;
    ck_assert_int_eq(w->refcount, 2);
    ck_assert_int_eq(tt_live_tensors(), base + 2);
    tt_nn_linear_free(&fc);
    ck_assert_ptr_null(fc.weight);
    ck_assert_int_eq(w->refcount, 1);
    ck_assert_int_eq(tt_live_tensors(), base + 2);  // still alive through the list
    ck_assert_int_eq(tt_numel(tt_params_get(&p, "fc.weight")), 15);
    tt_params_free(&p);
    ck_assert_int_eq(tt_live_tensors(), base);
    ck_assert_int_eq(tt_live_bytes(), base_bytes);
    tt_nn_linear_free(&fc);  // safe on a zeroed struct
}
END_TEST

START_TEST(test_params_zero_grad) {
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 3, 2, true, &rng);
    tt_params p;
    tt_params_init(&p);
    tt_nn_linear_params(&fc, &p, NULL);
    ck_assert_str_eq(p.items[0].name, "weight");
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(4, 3));
    tt_backward(tt_mean_all(tt_nn_linear_forward(&fc, x)));
    tt_scope_end();
    ck_assert_ptr_nonnull(tt_grad(fc.weight));
    ck_assert_ptr_nonnull(tt_grad(fc.bias));
    ck_assert_values(tt_grad(fc.bias), 1e-7, 1e-6, 0.5, 0.5);  // d mean / d b = 4 / 8
    tt_params_zero_grad(&p);
    ck_assert_ptr_null(tt_grad(fc.weight));
    ck_assert_ptr_null(tt_grad(fc.bias));
    tt_params_free(&p);
    tt_nn_linear_free(&fc);
}
END_TEST

// ---- default dtype ----

START_TEST(test_default_dtype) {
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    ck_assert_int_eq(tt_default_dtype(), TT_F32);
    tt_nn_linear a;
    tt_nn_linear_init(&a, 2, 2, true, &rng);
    ck_assert_int_eq(a.weight->dtype, TT_F32);

    ck_assert_int_eq(tt_set_default_dtype(TT_F64), TT_F32);
    ck_assert_int_eq(tt_default_dtype(), TT_F64);
    tt_nn_linear b;
    tt_nn_embedding e;
    tt_nn_layernorm ln;
    tt_nn_rmsnorm rms;
    tt_nn_linear_init(&b, 2, 3, true, &rng);
    tt_nn_embedding_init(&e, 4, 2, &rng);
    tt_nn_layernorm_init(&ln, 3, 1e-5, true, true);
    tt_nn_rmsnorm_init(&rms, 3, 1e-5, true);
    ck_assert_int_eq(tt_set_default_dtype(TT_F32), TT_F64);  // restore
    ck_assert_int_eq(b.weight->dtype, TT_F64);
    ck_assert_int_eq(b.bias->dtype, TT_F64);
    ck_assert_int_eq(e.weight->dtype, TT_F64);
    ck_assert_int_eq(ln.weight->dtype, TT_F64);
    ck_assert_int_eq(ln.bias->dtype, TT_F64);
    ck_assert_int_eq(rms.weight->dtype, TT_F64);
    ck_assert(b.weight->requires_grad && e.weight->requires_grad && ln.bias->requires_grad);
    ck_assert_ptr_null(b.weight->node);

    // An f64 module runs on f64 inputs end to end.
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(2, 2));
    tt_tensor *y =
        tt_nn_rmsnorm_forward(&rms, tt_nn_layernorm_forward(&ln, tt_nn_linear_forward(&b, x)));
    ck_assert_int_eq(y->dtype, TT_F64);
    tt_scope_end();

    tt_nn_linear_free(&a);
    tt_nn_linear_free(&b);
    tt_nn_embedding_free(&e);
    tt_nn_layernorm_free(&ln);
    tt_nn_rmsnorm_free(&rms);
}
END_TEST

// ---- init schemes ----

START_TEST(test_fans) {
    tt_tensor *v = tt_zeros(TT_F32, TT_SHAPE(7));
    tt_tensor *m = tt_zeros(TT_F32, TT_SHAPE(5, 3));
    tt_tensor *conv = tt_zeros(TT_F32, TT_SHAPE(8, 4, 3, 2));  // (out, in, kh, kw)
    ck_assert_int_eq(tt_fan_in(v), 7);
    ck_assert_int_eq(tt_fan_out(v), 7);
    ck_assert_int_eq(tt_fan_in(m), 3);
    ck_assert_int_eq(tt_fan_out(m), 5);
    ck_assert_int_eq(tt_fan_in(conv), 4 * 6);
    ck_assert_int_eq(tt_fan_out(conv), 8 * 6);
    tt_release(v);
    tt_release(m);
    tt_release(conv);
}
END_TEST

START_TEST(test_init_xavier) {
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_tensor *t = tt_empty(TT_F64, TT_SHAPE(INIT_ROWS, INIT_COLS));
    double fans = INIT_ROWS + INIT_COLS;
    for (int k = 0; k < 2; k++) {
        double gain = k == 0 ? 1.0 : sqrt(2.0);
        tt_init_xavier_uniform_(t, &rng, gain);
        double a = gain * sqrt(6.0 / fans);  // bound; variance a^2 / 3 = gain^2 2 / (in + out)
        check_uniform(t, -a, a);
        ck_assert_close(tensor_stats(t).std * tensor_stats(t).std, 2 * gain * gain / fans, 0,
                        0.04);
        tt_init_xavier_normal_(t, &rng, gain);
        check_normal(t, 0, gain * sqrt(2.0 / fans));
    }
    tt_release(t);
}
END_TEST

// std = sqrt(2 / (1 + a^2)) / sqrt(fan); a = sqrt(5) is PyTorch's Linear/Conv default.
START_TEST(test_init_kaiming) {
    tt_rng rng;
    tt_rng_seed(&rng, 6);
    tt_tensor *t = tt_empty(TT_F64, TT_SHAPE(INIT_ROWS, INIT_COLS));
    const double slopes[2] = {0.0, sqrt(5.0)};
    const tt_fan_mode modes[2] = {TT_FAN_IN, TT_FAN_OUT};
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++) {
            double a = slopes[i];
            double fan = modes[j] == TT_FAN_IN ? INIT_COLS : INIT_ROWS;
            double std = sqrt(2.0 / (1 + a * a)) / sqrt(fan);
            tt_init_kaiming_uniform_(t, &rng, a, modes[j]);
            check_uniform(t, -sqrt(3.0) * std, sqrt(3.0) * std);
            tt_init_kaiming_normal_(t, &rng, a, modes[j]);
            check_normal(t, 0, std);
        }
    }
    // a = sqrt(5), fan_in: the bound is exactly 1 / sqrt(fan_in).
    tt_init_kaiming_uniform_(t, &rng, sqrt(5.0), TT_FAN_IN);
    check_uniform(t, -1 / sqrt((double)INIT_COLS), 1 / sqrt((double)INIT_COLS));
    tt_release(t);
}
END_TEST

START_TEST(test_init_basic) {
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_tensor *t = tt_empty(TT_F64, TT_SHAPE(INIT_ROWS, INIT_COLS));
    tt_init_gpt2_residual_(t, &rng, 6);
    check_normal(t, 0, 0.02 / sqrt(12.0));
    tt_init_normal_(t, &rng, 3, 0.5);
    check_normal(t, 3, 0.5);
    tt_init_uniform_(t, &rng, -2, 5);
    check_uniform(t, -2, 5);
    tt_init_zeros_(t);
    stats s = tensor_stats(t);
    ck_assert(s.min == 0 && s.max == 0);
    tt_init_ones_(t);
    s = tensor_stats(t);
    ck_assert(s.min == 1 && s.max == 1);
    tt_release(t);

    // f32 and a non-contiguous view: in place through the view only.
    tt_tensor *base = tt_zeros(TT_F32, TT_SHAPE(4, 6));
    tt_tensor *cols = tt_as_strided(base, 2, (int64_t[]){4, 3}, (int64_t[]){6, 2}, 0);
    tt_init_ones_(cols);
    for (int64_t i = 0; i < 24; i++) ck_assert(tt_at(base, i) == (i % 2 == 0 ? 1 : 0));
    tt_init_normal_(cols, &rng, 0, 1);
    for (int64_t i = 1; i < 24; i += 2) ck_assert(tt_at(base, i) == 0);
    tt_release(cols);
    tt_release(base);
}
END_TEST

// Mean and std of N(mu, sigma^2) truncated to [a, b]: with alpha, beta the standardized bounds,
// Z = Phi(beta) - Phi(alpha), mean = mu + sigma (phi(alpha) - phi(beta)) / Z, var = sigma^2 (1 +
// (alpha phi(alpha) - beta phi(beta)) / Z - ((phi(alpha) - phi(beta)) / Z)^2).
static void trunc_normal_moments(double mu, double sigma, double a, double b, double *mean,
                                 double *std) {
    double al = (a - mu) / sigma, be = (b - mu) / sigma;
    double root_2pi = sqrt(8 * atan(1.0));
    double pa = exp(-0.5 * al * al) / root_2pi, pb = exp(-0.5 * be * be) / root_2pi;
    double z = 0.5 * (erfc(-be / sqrt(2.0)) - erfc(-al / sqrt(2.0)));
    double d = (pa - pb) / z;
    *mean = mu + sigma * d;
    *std = sigma * sqrt(1 + (al * pa - be * pb) / z - d * d);
}

// nn.init.trunc_normal_: every value in [a, b] and 40000 draws' mean and std within 3% of the
// std of the truncated formulas, for a central interval (PyTorch's usual [-2, 2]), a one-sided
// one and a tail interval (probability 0.02 under N(0, 1)).
START_TEST(test_init_trunc_normal) {
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    const double cases[][4] = {{0, 1, -2, 2}, {0.5, 0.02, 0.49, 0.6}, {0, 1, 2, 3}};
    tt_tensor *t = tt_empty(TT_F64, TT_SHAPE(200, 200));
    for (int c = 0; c < 3; c++) {
        const double *p = cases[c];
        tt_init_trunc_normal_(t, &rng, p[0], p[1], p[2], p[3]);
        stats s = tensor_stats(t);
        ck_assert(s.min >= p[2] && s.max <= p[3]);
        double mean, std;
        trunc_normal_moments(p[0], p[1], p[2], p[3], &mean, &std);
        ck_assert_msg(fabs(s.mean - mean) < 0.03 * std, "case %d: mean %g, expected %g", c,
                      s.mean, mean);
        ck_assert_msg(fabs(s.std - std) < 0.03 * std, "case %d: std %g, expected %g", c, s.std,
                      std);
    }
    tt_release(t);
    tt_tensor *w = tt_empty(TT_F32, TT_SHAPE(1000));  // f32, the rounding of 0.04 lies below it
    tt_init_trunc_normal_(w, &rng, 0, 0.02, -0.04, 0.04);
    for (int64_t i = 0; i < 1000; i++) ck_assert(fabs(tt_at(w, i)) <= 0.04);
    tt_release(w);
}
END_TEST

// tt_nn_pos_embedding starts at N(0, std^2) with the std it is given: 0.02 (GPT-2) and 1.
START_TEST(test_pos_embedding_init_std) {
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    const double stds[] = {0.02, 1.0};
    for (int i = 0; i < 2; i++) {
        tt_nn_pos_embedding pe;
        tt_nn_pos_embedding_init(&pe, 256, 128, stds[i], &rng);
        ck_assert(pe.weight->requires_grad);
        check_normal(pe.weight, 0, stds[i]);
        tt_nn_pos_embedding_free(&pe);
    }
}
END_TEST

// The same seed gives the same init, so a model is reproducible.
START_TEST(test_init_reproducible) {
    tt_rng r1, r2;
    tt_rng_seed(&r1, 99);
    tt_rng_seed(&r2, 99);
    tt_nn_linear a, b;
    tt_nn_linear_init(&a, 6, 4, true, &r1);
    tt_nn_linear_init(&b, 6, 4, true, &r2);
    assert_same_values(a.weight, b.weight, 0);
    assert_same_values(a.bias, b.bias, 0);
    tt_nn_linear_free(&a);
    tt_nn_linear_free(&b);
}
END_TEST

// ---- Linear ----

// W = ((1, -1, 2), (0.5, 0, -3)), b = (0.25, -1), x = ((1, 2, 3), (-1, 0, 4)).
START_TEST(test_linear_values) {
    tt_dtype dt = float_dtypes[_i];
    tt_rng rng;
    tt_rng_seed(&rng, 8);
    tt_dtype prev = tt_set_default_dtype(dt);
    tt_nn_linear m;
    tt_nn_linear_init(&m, 3, 2, true, &rng);
    tt_set_default_dtype(prev);
    ck_assert_int_eq(m.in_features, 3);
    ck_assert_int_eq(m.out_features, 2);
    ck_assert_int_eq(m.weight->ndim, 2);
    ck_assert_int_eq(m.weight->shape[0], 2);
    ck_assert_int_eq(m.weight->shape[1], 3);
    const double w[6] = {1, -1, 2, 0.5, 0, -3};
    for (int i = 0; i < 6; i++) tt_set_at(m.weight, i, w[i]);
    tt_set_at(m.bias, 0, 0.25);
    tt_set_at(m.bias, 1, -1);

    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, -1, 0, 4),
                                        true);
    tt_tensor *y = tt_nn_linear_forward(&m, x);
    ck_assert_values(y, 1e-6, 1e-6, 1 - 2 + 6 + 0.25, 0.5 - 9 - 1, -1 + 8 + 0.25, -0.5 - 12 - 1);
    tt_backward(tt_sum_all(y));
    // dW[o, i] = sum_b x[b, i]; db = B; dx[b, i] = sum_o W[o, i].
    ck_assert_values(tt_grad(m.weight), 1e-6, 1e-6, 0, 2, 7, 0, 2, 7);
    ck_assert_values(tt_grad(m.bias), 1e-6, 1e-6, 2, 2);
    ck_assert_values(tt_grad(x), 1e-6, 1e-6, 1.5, -1, -1, 1.5, -1, -1);
    // A 1-D input is one row.
    ck_assert_values(tt_nn_linear_forward(&m, tt_test_tensor(dt, TT_SHAPE(3), 1, 2, 3)), 1e-6,
                     1e-6, 5.25, -9.5);
    tt_scope_end();
    tt_nn_linear_free(&m);
}
END_TEST

START_TEST(test_linear_no_bias) {
    tt_rng rng;
    tt_rng_seed(&rng, 9);
    tt_nn_linear m;
    tt_nn_linear_init(&m, 2, 2, false, &rng);
    ck_assert_ptr_null(m.bias);
    tt_params p;
    tt_params_init(&p);
    tt_nn_linear_params(&m, &p, "proj");
    ck_assert_int_eq(p.n, 1);
    ck_assert_str_eq(p.items[0].name, "proj.weight");
    tt_params_free(&p);
    const double w[4] = {2, 0, 1, -1};
    for (int i = 0; i < 4; i++) tt_set_at(m.weight, i, w[i]);
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F32, TT_SHAPE(1, 2), 3, 5);
    ck_assert_values(tt_nn_linear_forward(&m, x), 0, 0, 6, -2);
    tt_scope_end();
    tt_nn_linear_free(&m);
}
END_TEST

// PyTorch's default: U(-1/sqrt(in), 1/sqrt(in)) for both W and b.
START_TEST(test_linear_default_init) {
    tt_rng rng;
    tt_rng_seed(&rng, 10);
    tt_nn_linear m;
    tt_nn_linear_init(&m, 400, 300, true, &rng);
    double bound = 1 / sqrt(400.0);
    check_uniform(m.weight, -bound, bound);
    stats sb = tensor_stats(m.bias);
    ck_assert(sb.min >= -bound && sb.max <= bound);
    ck_assert(sb.max - sb.min > bound);  // spread over the range, not a constant
    tt_nn_linear_free(&m);
}
END_TEST

// (B, T, in) -> (B, T, out), each row as the 2-D forward computes it.
START_TEST(test_linear_batched) {
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    tt_nn_linear m;
    tt_nn_linear_init(&m, 4, 5, true, &rng);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(2, 3, 4));
    tt_tensor *y = tt_nn_linear_forward(&m, x);
    ck_assert_int_eq(y->ndim, 3);
    ck_assert_int_eq(y->shape[0], 2);
    ck_assert_int_eq(y->shape[1], 3);
    ck_assert_int_eq(y->shape[2], 5);
    tt_tensor *y2 = tt_nn_linear_forward(&m, tt_reshape(x, TT_SHAPE(6, 4)));
    assert_same_values(tt_reshape(y, TT_SHAPE(6, 5)), y2, 1e-6);
    // Through the module interface.
    tt_module mod = tt_nn_linear_module(&m);
    ck_assert_str_eq(mod.ops->type, "Linear");
    assert_same_values(tt_module_forward(mod, x), y, 0);
    tt_params p;
    tt_params_init(&p);
    tt_module_params(mod, &p, "lin");
    ck_assert_int_eq(p.n, 2);
    ck_assert_str_eq(p.items[1].name, "lin.bias");
    tt_params_free(&p);
    tt_module_train(mod, false);  // no train hook: a no-op
    tt_scope_end();
    tt_nn_linear_free(&m);
}
END_TEST

// ---- Embedding ----

START_TEST(test_embedding_module) {
    tt_rng rng;
    tt_rng_seed(&rng, 12);
    tt_nn_embedding e;
    tt_nn_embedding_init(&e, 5, 3, &rng);
    ck_assert_int_eq(e.num, 5);
    ck_assert_int_eq(e.dim, 3);
    tt_scope_begin();
    tt_tensor *idx = tt_from_data(TT_I64, TT_SHAPE(2, 2), (const int64_t[]){0, 4, 2, 0});
    tt_tensor *y = tt_nn_embedding_forward(&e, idx);
    ck_assert_int_eq(y->ndim, 3);
    ck_assert_int_eq(y->shape[2], 3);
    const int rows[4] = {0, 4, 2, 0};
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++)
            ck_assert(tt_at(y, r * 3 + c) == tt_at(e.weight, rows[r] * 3 + c));
    tt_backward(tt_sum_all(y));
    ck_assert_values(tt_grad(e.weight), 0, 0, 2, 2, 2, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1);
    tt_scope_end();
    tt_params p;
    tt_params_init(&p);
    tt_nn_embedding_params(&e, &p, "wte");
    ck_assert_str_eq(p.items[0].name, "wte.weight");
    tt_params_free(&p);
    tt_nn_embedding_free(&e);
    tt_nn_embedding_free(&e);

    // N(0, 1) init.
    tt_nn_embedding_init(&e, 512, 256, &rng);
    check_normal(e.weight, 0, 1);
    tt_nn_embedding_free(&e);
}
END_TEST

// ---- LayerNorm / RMSNorm / tt_nn_norm ----

START_TEST(test_layernorm_module) {
    tt_dtype dt = float_dtypes[_i];
    tt_rng rng;
    tt_rng_seed(&rng, 13);
    tt_dtype prev = tt_set_default_dtype(dt);
    tt_nn_layernorm full, nobias, plain;
    tt_nn_layernorm_init(&full, 6, 1e-5, true, true);
    tt_nn_layernorm_init(&nobias, 6, 1e-5, true, false);
    tt_nn_layernorm_init(&plain, 6, 1e-5, false, true);
    tt_set_default_dtype(prev);
    ck_assert_values(full.weight, 0, 0, 1, 1, 1, 1, 1, 1);
    ck_assert_values(full.bias, 0, 0, 0, 0, 0, 0, 0, 0);
    ck_assert_ptr_nonnull(nobias.weight);
    ck_assert_ptr_null(nobias.bias);
    ck_assert_ptr_null(plain.weight);
    ck_assert_ptr_null(plain.bias);

    tt_scope_begin();
    tt_tensor *x = tt_normal(&rng, dt, TT_SHAPE(2, 3, 6), 1, 2);
    tt_tensor *ref = tt_layernorm(x, 1, NULL, NULL, 1e-5);
    double tol = dt == TT_F32 ? 1e-5 : 1e-12;
    assert_same_values(tt_nn_layernorm_forward(&full, x), ref, tol);
    assert_same_values(tt_nn_layernorm_forward(&nobias, x), ref, tol);
    assert_same_values(tt_nn_layernorm_forward(&plain, x), ref, 0);
    // The op with the module's own tensors: identical.
    assert_same_values(tt_nn_layernorm_forward(&full, x),
                       tt_layernorm(x, 1, full.weight, full.bias, 1e-5), 0);
    // Rows have mean 0 and variance 1 (up to eps).
    stats s = tensor_stats(tt_narrow(tt_reshape(ref, TT_SHAPE(6, 6)), 0, 0, 1));
    ck_assert_close(s.mean, 0, 1e-5, 0);
    ck_assert_close(s.std, 1, 1e-4, 0);
    tt_scope_end();

    tt_params p;
    tt_params_init(&p);
    tt_nn_layernorm_params(&full, &p, "ln_f");
    tt_nn_layernorm_params(&nobias, &p, "ln_nb");
    tt_nn_layernorm_params(&plain, &p, "ln_p");
    ck_assert_int_eq(p.n, 3);
    ck_assert_str_eq(p.items[0].name, "ln_f.weight");
    ck_assert_str_eq(p.items[1].name, "ln_f.bias");
    ck_assert_str_eq(p.items[2].name, "ln_nb.weight");
    tt_params_free(&p);
    tt_nn_layernorm_free(&full);
    tt_nn_layernorm_free(&nobias);
    tt_nn_layernorm_free(&plain);
}
END_TEST

START_TEST(test_rmsnorm_module) {
    tt_dtype dt = float_dtypes[_i];
    tt_rng rng;
    tt_rng_seed(&rng, 14);
    tt_dtype prev = tt_set_default_dtype(dt);
    tt_nn_rmsnorm w, nw;
    tt_nn_rmsnorm_init(&w, 4, 1e-6, true);
    tt_nn_rmsnorm_init(&nw, 4, 1e-6, false);
    tt_set_default_dtype(prev);
    ck_assert_values(w.weight, 0, 0, 1, 1, 1, 1);
    ck_assert_ptr_null(nw.weight);
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(1, 4), 1, 2, 3, 4);
    double r = 1 / sqrt(7.5 + 1e-6);  // mean(x^2) = 7.5
    ck_assert_values(tt_nn_rmsnorm_forward(&w, x), 1e-6, 1e-5, r, 2 * r, 3 * r, 4 * r);
    ck_assert_values(tt_nn_rmsnorm_forward(&nw, x), 1e-6, 1e-5, r, 2 * r, 3 * r, 4 * r);
    tt_tensor *xb = tt_randn(&rng, dt, TT_SHAPE(3, 2, 4));
    assert_same_values(tt_nn_rmsnorm_forward(&w, xb), tt_rmsnorm(xb, w.weight, 1e-6), 0);
    tt_scope_end();
    tt_params p;
    tt_params_init(&p);
    tt_nn_rmsnorm_params(&w, &p, "norm");
    tt_nn_rmsnorm_params(&nw, &p, "norm2");
    ck_assert_int_eq(p.n, 1);
    ck_assert_str_eq(p.items[0].name, "norm.weight");
    tt_params_free(&p);
    tt_nn_rmsnorm_free(&w);
    tt_nn_rmsnorm_free(&nw);
}
END_TEST

START_TEST(test_norm_wrapper) {
    tt_rng rng;
    tt_rng_seed(&rng, 15);
    tt_nn_norm ln, ln_nb, rms;
    tt_nn_norm_init(&ln, TT_NORM_LAYERNORM, 5, 1e-5, true);
    tt_nn_norm_init(&ln_nb, TT_NORM_LAYERNORM, 5, 1e-5, false);
    tt_nn_norm_init(&rms, TT_NORM_RMSNORM, 5, 1e-5, true);  // bias is ignored for RMSNorm
    ck_assert_int_eq(ln.kind, TT_NORM_LAYERNORM);
    ck_assert_int_eq(rms.kind, TT_NORM_RMSNORM);
    tt_params p;
    tt_params_init(&p);
    tt_nn_norm_params(&ln, &p, "a");
    tt_nn_norm_params(&ln_nb, &p, "b");
    tt_nn_norm_params(&rms, &p, "c");
    ck_assert_int_eq(p.n, 4);
    ck_assert_str_eq(p.items[0].name, "a.weight");
    ck_assert_str_eq(p.items[1].name, "a.bias");
    ck_assert_str_eq(p.items[2].name, "b.weight");
    ck_assert_str_eq(p.items[3].name, "c.weight");
    tt_params_free(&p);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(3, 5));
    assert_same_values(tt_nn_norm_forward(&ln, x), tt_layernorm(x, 1, NULL, NULL, 1e-5), 1e-6);
    assert_same_values(tt_nn_norm_forward(&ln_nb, x), tt_layernorm(x, 1, NULL, NULL, 1e-5), 1e-6);
    assert_same_values(tt_nn_norm_forward(&rms, x), tt_rmsnorm(x, NULL, 1e-5), 1e-6);
    tt_scope_end();
    tt_nn_norm_free(&ln);
    tt_nn_norm_free(&ln_nb);
    tt_nn_norm_free(&rms);
    tt_nn_norm_free(&rms);
}
END_TEST

// ---- activations ----

static tt_tensor *act_reference(tt_act act, tt_tensor *x) {
    switch (act) {
        case TT_ACT_IDENTITY: return x;
        case TT_ACT_RELU: return tt_relu(x);
        case TT_ACT_GELU: return tt_gelu(x);
        case TT_ACT_GELU_TANH: return tt_gelu_tanh(x);
        case TT_ACT_RELU2: {  // by hand: max(x, 0)^2
            tt_tensor *y = tt_empty_like(x);
            for (int64_t i = 0; i < tt_numel(x); i++) {
                double v = fmax(tt_at(x, i), 0);
                tt_set_at(y, i, v * v);
            }
            return y;
        }
        case TT_ACT_SILU: return tt_silu(x);
        case TT_ACT_TANH: return tt_tanh(x);
        case TT_ACT_SIGMOID: return tt_sigmoid(x);
        case TT_ACT_SOFTMAX: return tt_softmax(x, -1);
        case TT_ACT_SWIGLU: {  // by hand: a / (1 + e^-a) * b, a and b the halves of each row
            int64_t n = x->shape[x->ndim - 1], h = n / 2;
            tt_tensor *y = tt_empty(x->dtype, TT_SHAPE(tt_numel(x) / n, h));
            for (int64_t i = 0; i < tt_numel(y); i++) {
                double a = tt_at(x, i / h * n + i % h), b = tt_at(x, i / h * n + h + i % h);
                tt_set_at(y, i, a / (1 + exp(-a)) * b);
            }
            return y;
        }
        default: break;
    }
    ck_abort_msg("no reference for activation %d", (int)act);
    return NULL;
}

START_TEST(test_activations) {
    tt_dtype dt = float_dtypes[_i];
    static const char *const names[TT_ACT_COUNT] = {
        "identity", "relu", "gelu",    "gelu_tanh", "relu2",
        "silu",     "tanh", "sigmoid", "swiglu",    "softmax",
    };
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(2, 4), -2, -0.5, 0.25, 3, 1, -1, 0.5, -3);
    for (int a = 0; a < TT_ACT_COUNT; a++) {
        tt_act act = (tt_act)a;
        tt_tensor *y = tt_activate(act, x);
        assert_same_values(y, act_reference(act, x), dt == TT_F32 ? 1e-6 : 1e-14);
        tt_module m = tt_act_module(act);
        ck_assert(m.ops->params == NULL);
        assert_same_values(tt_module_forward(m, x), y, 0);
        // Name round trip.
        ck_assert_str_eq(tt_act_name(act), names[a]);
        tt_act back = TT_ACT_COUNT;
        ck_assert(tt_act_parse(tt_act_name(act), &back));
        ck_assert_int_eq(back, act);
    }
    tt_act out = TT_ACT_TANH;
    ck_assert(!tt_act_parse("swish", &out));
    ck_assert(!tt_act_parse("", &out));
    ck_assert(!tt_act_parse("RELU", &out));
    ck_assert_int_eq(out, TT_ACT_TANH);  // untouched
    ck_assert_str_eq(tt_act_name(TT_ACT_COUNT), "invalid");
    tt_scope_end();
}
END_TEST

// relu2's gradient: 2 relu(x); identity passes the gradient through.
START_TEST(test_activation_grads) {
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(TT_F64, TT_SHAPE(4), -2, 0.5, 3, -0.1),
                                        true);
    tt_backward(tt_sum_all(tt_activate(TT_ACT_RELU2, x)));
    ck_assert_values(tt_grad(x), 0, 0, 0, 1, 6, 0);
    tt_zero_grad(x);
    tt_backward(tt_sum_all(tt_mul_scalar(tt_activate(TT_ACT_IDENTITY, x), 3)));
    ck_assert_values(tt_grad(x), 0, 0, 3, 3, 3, 3);
    tt_scope_end();
}
END_TEST

// ---- dropout ----

START_TEST(test_dropout_module) {
    tt_rng rng;
    tt_rng_seed(&rng, 16);
    tt_nn_dropout d;
    tt_nn_dropout_init(&d, 0.5, &rng);
    ck_assert(d.training);
    ck_assert_ptr_eq(d.rng, &rng);
    tt_scope_begin();
    tt_tensor *x = tt_ones(TT_F64, TT_SHAPE(1000));
    tt_tensor *y = tt_nn_dropout_forward(&d, x);
    int zeros = 0;
    for (int64_t i = 0; i < 1000; i++) {
        double v = tt_at(y, i);
        ck_assert_msg(v == 0 || v == 2, "element %lld is %g, expected 0 or 1/(1-p) = 2",
                      (long long)i, v);
        zeros += v == 0;
    }
    ck_assert_msg(zeros > 400 && zeros < 600, "%d of 1000 dropped at p=0.5", zeros);
    tt_nn_dropout_train(&d, false);
    assert_same_values(tt_nn_dropout_forward(&d, x), x, 0);

    // Through the module interface: train() reaches the layer.
    tt_module m = tt_nn_dropout_module(&d);
    ck_assert_str_eq(m.ops->type, "Dropout");
    tt_module_train(m, true);
    ck_assert(d.training);
    ck_assert_double_lt(tt_item(tt_sum_all(tt_module_forward(m, x))), 1000 + 200);
    ck_assert_double_gt(tt_item(tt_sum_all(tt_module_forward(m, x))), 1000 - 200);
    tt_module_train(m, false);
    ck_assert(!d.training);
    assert_same_values(tt_module_forward(m, x), x, 0);

    // p = 0 needs no rng and is the identity even in training.
    tt_nn_dropout d0;
    tt_nn_dropout_init(&d0, 0, NULL);
    assert_same_values(tt_nn_dropout_forward(&d0, x), x, 0);
    tt_scope_end();
}
END_TEST

// ---- Sequential ----

typedef struct seq_fixture {
    tt_rng rng;
    tt_nn_linear l0, l2;
    tt_nn_dropout drop;
    tt_nn_sequential s;
} seq_fixture;

// Linear(3, 4) -> ReLU -> Linear(4, 2) -> Dropout(0.5).
static void seq_build(seq_fixture *f) {
    tt_rng_seed(&f->rng, 17);
    tt_nn_linear_init(&f->l0, 3, 4, true, &f->rng);
    tt_nn_linear_init(&f->l2, 4, 2, true, &f->rng);
    tt_nn_dropout_init(&f->drop, 0.5, &f->rng);
    tt_nn_sequential_init(&f->s);
    tt_nn_sequential_add(&f->s, tt_nn_linear_module(&f->l0));
    tt_nn_sequential_add(&f->s, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&f->s, tt_nn_linear_module(&f->l2));
    tt_nn_sequential_add(&f->s, tt_nn_dropout_module(&f->drop));
}

static void seq_free(seq_fixture *f) {
    tt_nn_sequential_free(&f->s);
    tt_nn_linear_free(&f->l0);
    tt_nn_linear_free(&f->l2);
}

START_TEST(test_sequential_forward) {
    seq_fixture f;
    seq_build(&f);
    ck_assert_int_eq(f.s.n, 4);
    tt_nn_sequential_train(&f.s, false);
    ck_assert(!f.drop.training);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&f.rng, TT_F32, TT_SHAPE(5, 3));
    tt_tensor *manual = tt_nn_linear_forward(&f.l2, tt_relu(tt_nn_linear_forward(&f.l0, x)));
    assert_same_values(tt_nn_sequential_forward(&f.s, x), manual, 0);
    // train() propagates: dropout is active again and zeroes some outputs.
    tt_nn_sequential_train(&f.s, true);
    ck_assert(f.drop.training);
    tt_tensor *big = tt_randn(&f.rng, TT_F32, TT_SHAPE(200, 3));
    tt_tensor *yt = tt_nn_sequential_forward(&f.s, big);
    tt_tensor *ref = tt_nn_linear_forward(&f.l2, tt_relu(tt_nn_linear_forward(&f.l0, big)));
    int dropped = 0, scaled = 0;
    for (int64_t i = 0; i < tt_numel(yt); i++) {
        double v = tt_at(yt, i), r = tt_at(ref, i);
        if (v == 0 && r != 0) dropped++;
        else if (fabs(v - 2 * r) <= 1e-5 * (1 + fabs(r))) scaled++;
    }
    ck_assert_int_gt(dropped, 100);
    ck_assert_int_eq(dropped + scaled, 400);
    tt_scope_end();
    seq_free(&f);
}
END_TEST

START_TEST(test_sequential_params) {
    seq_fixture f;
    seq_build(&f);
    tt_params p;
    tt_params_init(&p);
    tt_nn_sequential_params(&f.s, &p, NULL);
    ck_assert_int_eq(p.n, 4);
    ck_assert_str_eq(p.items[0].name, "0.weight");
    ck_assert_str_eq(p.items[1].name, "0.bias");
    ck_assert_str_eq(p.items[2].name, "2.weight");
    ck_assert_str_eq(p.items[3].name, "2.bias");
    ck_assert_ptr_eq(tt_params_get(&p, "2.weight"), f.l2.weight);
    ck_assert_int_eq(tt_params_numel(&p), 12 + 4 + 8 + 2);
    tt_nn_sequential_params(&f.s, &p, "mlp");  // a second copy under a prefix: distinct names
    ck_assert_int_eq(p.n, 8);
    ck_assert_str_eq(p.items[4].name, "mlp.0.weight");
    ck_assert_str_eq(p.items[7].name, "mlp.2.bias");
    tt_params_free(&p);
    seq_free(&f);
    tt_nn_sequential_free(&f.s);  // safe on a zeroed struct
}
END_TEST

// Called outside any scope, forward frees its intermediates (and their tape) itself: releasing
// the result brings the counts back.
START_TEST(test_sequential_no_scope) {
    seq_fixture f;
    seq_build(&f);
    ck_assert_int_eq(tt_scope_depth(), 0);
    tt_tensor *x = tt_randn(&f.rng, TT_F32, TT_SHAPE(8, 3));
    int64_t live = tt_live_tensors(), bytes = tt_live_bytes();
    for (int train = 0; train < 2; train++) {
        tt_nn_sequential_train(&f.s, train);
        tt_tensor *y = tt_nn_sequential_forward(&f.s, x);  // records a tape: params need grad
        ck_assert_int_eq(y->refcount, 1);
        ck_assert(y->requires_grad);
        tt_release(y);
        ck_assert_int_eq(tt_live_tensors(), live);
        ck_assert_int_eq(tt_live_bytes(), bytes);
    }
    // A backward outside a scope: the gradients are the only new tensors.
    tt_tensor *y = tt_nn_sequential_forward(&f.s, x);
    tt_tensor *loss = tt_mean_all(y);
    tt_release(y);  // the graph keeps what backward needs
    tt_backward(loss);
    tt_release(loss);
    ck_assert_int_eq(tt_live_tensors(), live + 4);
    tt_release(x);
    seq_free(&f);
}
END_TEST

// ---- losses ----

// pred - target = (1, 0, -2, 0.5): mean of squares 5.25 / 4; d/d pred = 2 (pred - t) / 4.
START_TEST(test_mse_loss) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *pred = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 2), 1, 2, 3, 4),
                                           true);
    tt_tensor *t = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(2, 2), 0, 2, 5, 3.5), true);
    tt_tensor *loss = tt_mse_loss(pred, t);
    ck_assert_int_eq(loss->ndim, 0);
    ck_assert_int_eq(loss->dtype, dt);
    ck_assert_close(tt_item(loss), 1.3125, 1e-7, 1e-7);
    tt_backward(loss);
    ck_assert_values(tt_grad(pred), 1e-7, 1e-6, 0.5, 0, -1, 0.25);
    ck_assert_values(tt_grad(t), 1e-7, 1e-6, -0.5, 0, 1, -0.25);
    ck_assert_close(tt_item(tt_mse_loss(pred, pred)), 0, 0, 0);
    tt_scope_end();
}
END_TEST

// softplus(x) - x t, the reference computed directly with log1p; d/dx = (sigmoid(x) - t) / N.
static double bce_ref(double x, double t) {
    return fmax(x, 0) - x * t + log1p(exp(-fabs(x)));
}
static double sigmoid_ref(double x) { return 1 / (1 + exp(-x)); }

START_TEST(test_bce_with_logits) {
    tt_dtype dt = float_dtypes[_i];
    const double xs[5] = {-2, 0, 1.5, 3, -0.75}, ts[5] = {0, 1, 1, 0.25, 0.5};
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor_(dt, TT_SHAPE(5), xs, 5), true);
    tt_tensor *t = tt_test_tensor_(dt, TT_SHAPE(5), ts, 5);
    double expect = 0;
    for (int i = 0; i < 5; i++) expect += bce_ref(xs[i], ts[i]) / 5;
    // The first two by hand: softplus(-2) - 0 = log(1 + e^-2), softplus(0) - 0 = log 2.
    ck_assert_close(bce_ref(-2, 0), log(1 + exp(-2.0)), 1e-15, 0);
    ck_assert_close(bce_ref(0, 1), log(2.0), 1e-15, 0);
    tt_tensor *loss = tt_bce_with_logits(x, t);
    ck_assert_int_eq(loss->ndim, 0);
    ck_assert_close(tt_item(loss), expect, 1e-6, 1e-6);
    tt_backward(loss);
    // At x = 0 the gradient is exactly (1/2 - t) / N: max splits its tie, |x| gives 0.
    ck_assert_values(tt_grad(x), 1e-7, 1e-6, (sigmoid_ref(-2) - 0) / 5, (0.5 - 1) / 5,
                     (sigmoid_ref(1.5) - 1) / 5, (sigmoid_ref(3) - 0.25) / 5,
                     (sigmoid_ref(-0.75) - 0.5) / 5);
    tt_scope_end();
}
END_TEST

// Logits of +-1e4: no overflow in the forward (exp of -|x| only) nor in the backward.
START_TEST(test_bce_large_logits) {
    tt_dtype dt = float_dtypes[_i];
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(4), 1e4, -1e4, 1e4, -1e4),
                                        true);
    tt_tensor *t = tt_test_tensor(dt, TT_SHAPE(4), 1, 0, 0, 1);
    tt_tensor *loss = tt_bce_with_logits(x, t);
    assert_all_finite(loss);
    ck_assert_close(tt_item(loss), (0 + 0 + 1e4 + 1e4) / 4, 1e-6, 1e-6);
    tt_backward(loss);
    assert_all_finite(tt_grad(x));
    ck_assert_values(tt_grad(x), 1e-7, 0, 0, 0, 0.25, -0.25);
    // Moderately large logits keep their tiny exp(-|x|) term: 40 gives log1p(e^-40) ~ 4e-18.
    tt_tensor *y = tt_test_tensor(dt, TT_SHAPE(2), 40, -40);
    tt_tensor *ty = tt_test_tensor(dt, TT_SHAPE(2), 1, 1);
    ck_assert_close(tt_item(tt_bce_with_logits(y, ty)), 20, 1e-5, 1e-6);
    tt_scope_end();
}
END_TEST

// Outside a scope a loss leaves nothing behind but its result (and, with grad on, the graph
// that result owns until it is released).
START_TEST(test_losses_no_scope) {
    tt_tensor *a = tt_set_requires_grad(tt_full(TT_F32, TT_SHAPE(3, 2), 0.5), true);
    tt_tensor *b = tt_zeros(TT_F32, TT_SHAPE(3, 2));
    int64_t live = tt_live_tensors(), bytes = tt_live_bytes();
    bool prev = tt_set_grad_enabled(false);
    tt_tensor *l1 = tt_mse_loss(a, b), *l2 = tt_bce_with_logits(a, b);
    ck_assert_int_eq(tt_live_tensors(), live + 2);
    ck_assert_close(tt_item(l1), 0.25, 1e-7, 0);
    ck_assert_close(tt_item(l2), 0.5 + log1p(exp(-0.5)), 1e-6, 0);
    tt_release(l1);
    tt_release(l2);
    tt_set_grad_enabled(prev);
    ck_assert_int_eq(tt_live_tensors(), live);
    l1 = tt_mse_loss(a, b);
    l2 = tt_bce_with_logits(a, b);
    tt_release(l1);
    tt_release(l2);
    ck_assert_int_eq(tt_live_tensors(), live);
    ck_assert_int_eq(tt_live_bytes(), bytes);
    tt_release(a);
    tt_release(b);
}
END_TEST

// ---- gradient accumulation ----

// Four micro-batches of 2, each loss scaled by 1/4, accumulate to the gradient of the mean
// loss over the batch of 8 (cross-entropy is a mean over its rows, so the scaling is exact).
START_TEST(test_grad_accumulation) {
    tt_rng rng;
    tt_rng_seed(&rng, 18);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_linear m;
    tt_nn_linear_init(&m, 5, 3, true, &rng);
    tt_set_default_dtype(prev);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(8, 5));
    tt_tensor *y = tt_from_data(TT_I64, TT_SHAPE(8), (const int64_t[]){0, 2, 1, 1, 0, 2, 2, 0});
    tt_backward(tt_cross_entropy(tt_nn_linear_forward(&m, x), y, -100));
    tt_tensor *gw = tt_clone(tt_grad(m.weight)), *gb = tt_clone(tt_grad(m.bias));
    tt_zero_grad(m.weight);
    tt_zero_grad(m.bias);
    for (int k = 0; k < 4; k++) {
        tt_tensor *xk = tt_narrow(x, 0, 2 * k, 2), *yk = tt_narrow(y, 0, 2 * k, 2);
        tt_backward(tt_mul_scalar(tt_cross_entropy(tt_nn_linear_forward(&m, xk), yk, -100), 0.25));
    }
    assert_same_values(tt_grad(m.weight), gw, 1e-12);
    assert_same_values(tt_grad(m.bias), gb, 1e-12);
    tt_scope_end();
    tt_nn_linear_free(&m);
}
END_TEST

// ---- misuse aborts ----

START_TEST(test_abort_duplicate_param) {
    tt_expect_abort("duplicate parameter name 'fc.weight'");
    tt_tensor *w = tt_zeros(TT_F32, TT_SHAPE(2));
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, "fc", "weight", w);
    tt_params_add(&p, "fc", "weight", w);
}
END_TEST

START_TEST(test_abort_null_param) {
    tt_expect_abort("parameter 'fc.bias' is NULL");
    tt_params p;
    tt_params_init(&p);
    tt_params_add(&p, "fc", "bias", NULL);
}
END_TEST

START_TEST(test_abort_long_name) {
    tt_expect_abort(".weight' is longer than 255 characters");
    char prefix[TT_NAME_MAX];
    memset(prefix, 'a', sizeof prefix - 1);
    prefix[sizeof prefix - 1] = 0;
    char buf[TT_NAME_MAX];
    tt_name_join(buf, prefix, "weight");
}
END_TEST

START_TEST(test_abort_default_dtype_int) {
    tt_expect_abort("the default dtype must be f32 or f64, got i32");
    tt_set_default_dtype(TT_I32);
}
END_TEST

START_TEST(test_abort_fan_scalar) {
    tt_expect_abort("fan_in needs a tensor with at least 1 dim, got ()");
    tt_tensor *s = tt_scalar(TT_F32, 1);
    tt_fan_in(s);
}
END_TEST

// ---- module composition: every module as a tt_module, Flatten, Identity, reachability ----

// Sequential(Linear(3, 4), LayerNorm(4, no affine), ReLU, Sequential(Identity, Linear(4, 2)),
// Flatten(0, -1)) in f64 against PyTorch (tests/reference/modules_values.py): values, names,
// gradients of the input and of parameters inside the nested sequential.
START_TEST(test_modules_nested_values) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_nn_linear l0, l1;
    tt_nn_linear_init(&l0, 3, 4, true, &rng);
    tt_nn_linear_init(&l1, 4, 2, true, &rng);
    tt_nn_layernorm ln;
    tt_nn_layernorm_init(&ln, 4, 1e-5, false, false);
    ck_assert_ptr_null(ln.weight);
    tt_set_default_dtype(prev);
    tt_scope_begin();
    tt_copy_(l0.weight, tt_test_tensor(TT_F64, TT_SHAPE(4, 3), 0.1, -0.2, 0.3, 0.4, 0.5, -0.6,
                                       -0.7, 0.8, 0.9, 1.0, -1.1, 1.2));
    tt_copy_(l0.bias, tt_test_tensor(TT_F64, TT_SHAPE(4), 0.1, -0.1, 0.2, -0.2));
    tt_copy_(l1.weight, tt_test_tensor(TT_F64, TT_SHAPE(2, 4), 0.5, -0.4, 0.3, -0.2, 0.1, 0.2,
                                       -0.3, 0.4));
    tt_copy_(l1.bias, tt_test_tensor(TT_F64, TT_SHAPE(2), 0.05, -0.05));
    tt_nn_sequential inner, outer;
    tt_nn_sequential_init(&inner);
    tt_nn_sequential_add(&inner, tt_nn_identity_module());
    tt_nn_sequential_add(&inner, tt_nn_linear_module(&l1));
    tt_nn_sequential_init(&outer);
    tt_nn_sequential_add(&outer, tt_nn_linear_module(&l0));
    tt_nn_sequential_add(&outer, tt_nn_layernorm_module(&ln));
    tt_nn_sequential_add(&outer, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&outer, tt_nn_sequential_module(&inner));
    tt_nn_sequential_add(&outer, tt_nn_flatten_module(0, -1));

    tt_params p;
    tt_params_init(&p);
    tt_nn_sequential_params(&outer, &p, NULL);
    ck_assert_int_eq(p.n, 4);  // torch: ['0.weight', '0.bias', '3.1.weight', '3.1.bias']
    ck_assert_str_eq(p.items[0].name, "0.weight");
    ck_assert_str_eq(p.items[1].name, "0.bias");
    ck_assert_str_eq(p.items[2].name, "3.1.weight");
    ck_assert_str_eq(p.items[3].name, "3.1.bias");

    tt_tensor *x = tt_set_requires_grad(
        tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 1.0, 2.0, 3.0, -1.0, 0.5, 2.0), true);
    tt_tensor *y = tt_nn_sequential_forward(&outer, x);
    ck_assert_int_eq(y->ndim, 1);
    ck_assert_values(y, 1e-12, 1e-12, 0.38783162236720564, -0.30724793262823924,
                     0.49598846580686495, -0.49598846580686495);
    tt_tensor *loss = tt_sum_all(tt_mul(y, tt_test_tensor(TT_F64, TT_SHAPE(4), 1, 2, 3, 4)));
    tt_params_add(&p, NULL, "x", x);  // x requires grad too: the check wants it listed
    tt_params_check_reaches(&p, loss);
    tt_backward(loss);
    ck_assert_values(tt_grad(x), 1e-12, 1e-12, 0.43384977148119641, -0.5539838532467164,
                     0.25940920829818087, 0.055588559140759372, -0.1084491481407534,
                     0.058836241104735343);
    ck_assert_values(tt_grad(l0.weight), 1e-12, 1e-12, -0.098816600095769286,
                     -0.10288062257288111, -0.1069446450499929, -0.035759293196547574,
                     -0.1853209659552702, -0.33488263871399282, -0.15757099784489184,
                     -0.40688746037883378, -0.65620392291277563, 0.29214689113720871,
                     0.69508904890698509, 1.0980312066767615);
    ck_assert_values(tt_grad(l1.weight), 1e-12, 1e-12, 0, 0, 5.8546023650892236,
                     0.40291844869483201, 0, 0, 8.7359482914660127, 0.80583689738966402);
    ck_assert_values(tt_grad(l1.bias), 1e-12, 1e-12, 4, 6);
    tt_scope_end();
    tt_params_free(&p);
    tt_nn_sequential_free(&outer);
    tt_nn_sequential_free(&inner);
    tt_nn_linear_free(&l0);
    tt_nn_linear_free(&l1);
}
END_TEST

// train() reaches a dropout two sequentials deep.
START_TEST(test_modules_nested_train) {
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_nn_dropout drop;
    tt_nn_dropout_init(&drop, 0.5, &rng);
    tt_nn_sequential a, b;
    tt_nn_sequential_init(&a);
    tt_nn_sequential_init(&b);
    tt_nn_sequential_add(&b, tt_nn_dropout_module(&drop));
    tt_nn_sequential_add(&a, tt_nn_sequential_module(&b));
    tt_module m = tt_nn_sequential_module(&a);
    ck_assert_str_eq(m.ops->type, "Sequential");
    tt_module_train(m, false);
    ck_assert(!drop.training);
    tt_module_train(m, true);
    ck_assert(drop.training);
    tt_nn_sequential_free(&a);
    tt_nn_sequential_free(&b);
}
END_TEST

// torch.nn.Flatten: shapes for several (start, end) pairs, a view of a contiguous input, the
// values of a non-contiguous one.
START_TEST(test_flatten_module) {
    tt_scope_begin();
    tt_tensor *x = tt_arange(TT_F32, 0, 120, 1);
    x = tt_reshape(x, TT_SHAPE(2, 3, 4, 5));
    tt_tensor *y = tt_module_forward(tt_nn_flatten_module(1, -1), x);  // PyTorch's default
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[0], 2);
    ck_assert_int_eq(y->shape[1], 60);
    ck_assert_ptr_eq(y->storage, x->storage);  // a view
    y = tt_flatten(x, 0, 1);
    ck_assert_int_eq(y->ndim, 3);
    ck_assert_int_eq(y->shape[0], 6);
    ck_assert_int_eq(y->shape[2], 5);
    y = tt_flatten(x, -3, -2);
    ck_assert_int_eq(y->ndim, 3);
    ck_assert_int_eq(y->shape[1], 12);
    y = tt_flatten(x, 2, 2);  // one dim: unchanged
    ck_assert(tt_same_shape(y, x));
    y = tt_flatten(tt_full(TT_F32, TT_SCALAR_SHAPE, 7), 0, -1);  // 0-dim -> (1,)
    ck_assert_int_eq(y->ndim, 1);
    ck_assert_int_eq(y->shape[0], 1);
    ck_assert_values(y, 0, 0, 7);
    // (2, 3) transposed to (3, 2), not contiguous: flattened in logical order.
    tt_tensor *t = tt_transpose(tt_reshape(tt_arange(TT_F32, 0, 6, 1), TT_SHAPE(2, 3)), 0, 1);
    ck_assert_values(tt_module_forward(tt_nn_flatten_module(0, -1), t), 0, 0, 0, 3, 1, 4, 2, 5);
    // Identity returns its input.
    ck_assert_ptr_eq(tt_module_forward(tt_nn_identity_module(), x), x);
    tt_scope_end();
}
END_TEST

// Each wrapper runs the module's own forward and lists the same parameters under the same
// names; train reaches the dropouts of composites.
START_TEST(test_module_wrappers) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    const int64_t B = 2, T = 3, C = 8, NH = 2;
    tt_nn_layernorm ln;
    tt_nn_rmsnorm rms;
    tt_nn_norm nrm;
    tt_nn_feedforward mlp;
    tt_nn_attention attn;
    tt_nn_block blk;
    tt_nn_pos_embedding pe;
    tt_nn_sinusoidal sine;
    tt_nn_rope rope;
    tt_nn_embedding emb;
    tt_nn_layernorm_init(&ln, C, 1e-5, true, true);
    tt_nn_rmsnorm_init(&rms, C, 1e-6, true);
    tt_nn_norm_init(&nrm, TT_NORM_RMSNORM, C, 1e-6, false);
    tt_nn_feedforward_init(&mlp, C, 16, TT_ACT_GELU, true, 0.1, &rng);
    tt_nn_attention_config ac = {.n_embd = C, .n_head = NH, .max_seq = 8, .causal = true,
                                 .bias = true, .dropout = 0.1};
    tt_nn_attention_init(&attn, &ac, &rng);
    tt_nn_block_init(&blk, &(tt_nn_block_config){.attn = ac, .act = TT_ACT_GELU}, &rng);
    tt_nn_pos_embedding_init(&pe, 8, C, 1.0, &rng);
    tt_nn_sinusoidal_init(&sine, 8, C);
    tt_nn_rope_init(&rope, C / NH, 8, 10000);
    tt_nn_embedding_init(&emb, 10, C, &rng);
    tt_set_default_dtype(prev);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(B, T, C));
    tt_tensor *xh = tt_randn(&rng, TT_F64, TT_SHAPE(B, NH, T, C / NH));
    tt_tensor *idx = tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 1, 9, 0, 9);
    idx = tt_to_dtype(idx, TT_I64);
    struct {
        tt_module m;
        tt_tensor *in, *direct;
        const void *self;
    } cases[] = {
        {tt_nn_layernorm_module(&ln), x, NULL, &ln},
        {tt_nn_rmsnorm_module(&rms), x, NULL, &rms},
        {tt_nn_norm_module(&nrm), x, NULL, &nrm},
        {tt_nn_feedforward_module(&mlp), x, NULL, &mlp},
        {tt_nn_attention_module(&attn), x, NULL, &attn},
        {tt_nn_block_module(&blk), x, NULL, &blk},
        {tt_nn_pos_embedding_module(&pe), x, NULL, &pe},
        {tt_nn_sinusoidal_module(&sine), x, NULL, &sine},
        {tt_nn_rope_module(&rope), xh, NULL, &rope},
        {tt_nn_embedding_module(&emb), idx, NULL, &emb},
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) tt_module_train(cases[i].m, false);  // dropout off
    ck_assert(!mlp.drop.training && !attn.attn_drop.training && !attn.resid_drop.training);
    ck_assert(!blk.attn.resid_drop.training && !blk.mlp.drop.training);
    cases[0].direct = tt_nn_layernorm_forward(&ln, x);
    cases[1].direct = tt_nn_rmsnorm_forward(&rms, x);
    cases[2].direct = tt_nn_norm_forward(&nrm, x);
    cases[3].direct = tt_nn_feedforward_forward(&mlp, x);
    cases[4].direct = tt_nn_attention_forward(&attn, x);
    cases[5].direct = tt_nn_block_forward(&blk, x);
    cases[6].direct = tt_nn_pos_embedding_forward(&pe, x, 0);
    cases[7].direct = tt_nn_sinusoidal_forward(&sine, x, 0);
    cases[8].direct = tt_nn_rope_forward(&rope, xh, 0);
    cases[9].direct = tt_nn_embedding_forward(&emb, idx);
    for (int i = 0; i < n; i++) {
        ck_assert_ptr_eq(cases[i].m.self, cases[i].self);
        assert_same_values(tt_module_forward(cases[i].m, cases[i].in), cases[i].direct, 0);
    }
    // Parameters: the same list as the module's own _params.
    tt_params a, b;
    tt_params_init(&a);
    tt_params_init(&b);
    tt_module_params(tt_nn_block_module(&blk), &a, "h");
    tt_nn_block_params(&blk, &b, "h");
    ck_assert_int_eq(a.n, b.n);
    ck_assert_int_eq(a.n, 16);  // norm1 2, attn 4 projections x 2, norm2 2, mlp 2 x 2
    for (int i = 0; i < a.n; i++) {
        ck_assert_str_eq(a.items[i].name, b.items[i].name);
        ck_assert_ptr_eq(a.items[i].tensor, b.items[i].tensor);
    }
    tt_params_free(&a);
    tt_params_free(&b);
    tt_params_init(&a);
    tt_module_params(tt_nn_sinusoidal_module(&sine), &a, "pe");  // buffers are not parameters
    tt_module_params(tt_nn_rope_module(&rope), &a, "rope");
    tt_module_params(tt_nn_pos_embedding_module(&pe), &a, "wpe");
    tt_module_params(tt_nn_feedforward_module(&mlp), &a, "mlp");
    ck_assert_int_eq(a.n, 5);
    ck_assert_str_eq(a.items[0].name, "wpe.weight");
    ck_assert_str_eq(a.items[4].name, "mlp.proj.bias");
    tt_params_free(&a);
    tt_module_train(tt_nn_block_module(&blk), true);
    ck_assert(blk.attn.attn_drop.training && blk.mlp.drop.training);
    tt_scope_end();
    tt_nn_layernorm_free(&ln);
    tt_nn_rmsnorm_free(&rms);
    tt_nn_norm_free(&nrm);
    tt_nn_feedforward_free(&mlp);
    tt_nn_attention_free(&attn);
    tt_nn_block_free(&blk);
    tt_nn_pos_embedding_free(&pe);
    tt_nn_sinusoidal_free(&sine);
    tt_nn_rope_free(&rope);
    tt_nn_embedding_free(&emb);
}
END_TEST

typedef struct leaf_log {
    tt_tensor *leaf[8];
    const char *op[8];
    int n;
} leaf_log;

static void log_leaf(tt_tensor *leaf, const char *op, void *ctx) {
    leaf_log *l = ctx;
    ck_assert_int_lt(l->n, 8);
    l->leaf[l->n] = leaf;
    l->op[l->n++] = op;
}

// tt_graph_leaves: each requires-grad leaf once (a leaf used twice too), in backward's order,
// with its first consumer; constants and the leaves of other graphs are not visited.
START_TEST(test_graph_leaves) {
    tt_scope_begin();
    tt_tensor *w = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(2)), true);
    tt_tensor *b = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(2)), true);
    tt_tensor *unused = tt_set_requires_grad(tt_ones(TT_F64, TT_SHAPE(2)), true);
    tt_tensor *c = tt_ones(TT_F64, TT_SHAPE(2));  // a constant
    tt_tensor *loss = tt_sum_all(tt_add(tt_mul(w, c), tt_mul(b, w)));
    (void)unused;
    leaf_log l = {0};
    tt_graph_leaves(loss, log_leaf, &l);
    ck_assert_int_eq(l.n, 2);
    ck_assert((l.leaf[0] == b && l.leaf[1] == w) || (l.leaf[0] == w && l.leaf[1] == b));
    ck_assert_str_eq(l.op[0], "mul");
    // A leaf itself: visited with op NULL; a tensor that needs no grad: nothing.
    l.n = 0;
    tt_graph_leaves(w, log_leaf, &l);
    ck_assert_int_eq(l.n, 1);
    ck_assert_ptr_eq(l.leaf[0], w);
    ck_assert_ptr_null(l.op[0]);
    l.n = 0;
    tt_graph_leaves(tt_mul(c, c), log_leaf, &l);
    ck_assert_int_eq(l.n, 0);
    // The graph survives the walk: backward still runs.
    tt_backward(loss);
    ck_assert_values(tt_grad(w), 0, 0, 2, 2);
    tt_scope_end();
}
END_TEST

// tt_params_check_reaches passes when every reached leaf is listed, whatever else the list
// holds, and for a loss that needs no grad.
START_TEST(test_params_check_reaches_ok) {
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_nn_linear l0, l1;
    tt_nn_linear_init(&l0, 3, 4, true, &rng);
    tt_nn_linear_init(&l1, 4, 2, true, &rng);
    tt_params p;
    tt_params_init(&p);
    tt_nn_linear_params(&l0, &p, "l0");
    tt_nn_linear_params(&l1, &p, "l1");  // not reached by the loss below: fine
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(5, 3));
    tt_tensor *loss = tt_mean_all(tt_nn_linear_forward(&l0, x));
    tt_params_check_reaches(&p, loss);
    tt_no_grad_begin();
    tt_params_check_reaches(&p,
                            tt_mean_all(tt_nn_linear_forward(&l1, tt_nn_linear_forward(&l0, x))));
    tt_no_grad_end();
    tt_scope_end();
    tt_params_free(&p);
    tt_nn_linear_free(&l0);
    tt_nn_linear_free(&l1);
}
END_TEST

// A user's composite, as the README describes: two Linears and a Dropout listed once in a
// children callback; params, train and free come from the generic walk.
typedef struct user_net {
    tt_nn_linear fc1, fc2;
    tt_nn_dropout drop;
} user_net;

static tt_tensor *user_net_fwd(void *self, tt_tensor *x) {
    user_net *n = self;
    tt_scope_begin();
    tt_tensor *h = tt_nn_dropout_forward(&n->drop, tt_relu(tt_nn_linear_forward(&n->fc1, x)));
    tt_tensor *y = tt_keep(tt_nn_linear_forward(&n->fc2, h));
    tt_scope_end();
    return y;
}

static void user_net_children(void *self, tt_module_visit visit, void *ctx) {
    user_net *n = self;
    visit(tt_nn_linear_module(&n->fc1), "fc1", ctx);
    visit(tt_nn_dropout_module(&n->drop), "drop", ctx);
    visit(tt_nn_linear_module(&n->fc2), "fc2", ctx);
}

static void user_net_free(void *self) {
    user_net *n = self;
    tt_nn_linear_free(&n->fc1);
    tt_nn_linear_free(&n->fc2);
}

static const tt_module_ops user_net_ops = {.type = "UserNet", .forward = user_net_fwd,
                                           .children = user_net_children,
                                           .free = user_net_free};

typedef struct name_log {
    char names[12][32];
    int n;
} name_log;

static void log_child(tt_module child, const char *name, void *ctx) {
    name_log *l = ctx;
    ck_assert_int_lt(l->n, 12);
    snprintf(l->names[l->n++], 32, "%s:%s", child.ops->type, name);
}

START_TEST(test_module_children) {
    tt_rng rng;
    tt_rng_seed(&rng, 9);
    user_net net;
    tt_nn_linear_init(&net.fc1, 3, 5, true, &rng);
    tt_nn_linear_init(&net.fc2, 5, 2, false, &rng);
    tt_nn_dropout_init(&net.drop, 0.5, &rng);
    tt_module m = {&net, &user_net_ops};
    // Inside a sequential, under a prefix: names follow the children.
    tt_nn_sequential s;
    tt_nn_sequential_init(&s);
    tt_nn_sequential_add(&s, tt_act_module(TT_ACT_IDENTITY));
    tt_nn_sequential_add(&s, m);
    tt_params p;
    tt_params_init(&p);
    tt_nn_sequential_params(&s, &p, "net");
    ck_assert_int_eq(p.n, 3);
    ck_assert_str_eq(p.items[0].name, "net.1.fc1.weight");
    ck_assert_str_eq(p.items[1].name, "net.1.fc1.bias");
    ck_assert_str_eq(p.items[2].name, "net.1.fc2.weight");
    tt_nn_sequential_train(&s, false);
    ck_assert(!net.drop.training);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(4, 3));
    tt_tensor *loss = tt_sum_all(tt_nn_sequential_forward(&s, x));
    tt_params_check_reaches(&p, loss);
    tt_scope_end();
    // The block's children, in order.
    tt_nn_block blk;
    tt_nn_block_init(&blk, &(tt_nn_block_config){.attn = {.n_embd = 4, .n_head = 2, .max_seq = 4,
                                                          .qk_norm = true, .rope = true}},
                  &rng);
    name_log l = {0};
    tt_module_children(tt_nn_block_module(&blk), log_child, &l);
    ck_assert_int_eq(l.n, 4);
    ck_assert_str_eq(l.names[0], "Norm:norm1");
    ck_assert_str_eq(l.names[1], "Attention:attn");
    ck_assert_str_eq(l.names[3], "FeedForward:mlp");
    l.n = 0;
    tt_module_children(tt_nn_attention_module(&blk.attn), log_child, &l);
    ck_assert_int_eq(l.n, 9);  // 4 projections, q/k norms, rope, 2 dropouts
    ck_assert_str_eq(l.names[4], "RMSNorm:q_norm");
    ck_assert_str_eq(l.names[6], "RoPE:rope");
    tt_params_free(&p);
    tt_params_init(&p);
    tt_nn_block_params(&blk, &p, NULL);
    ck_assert_int_eq(p.n, 1 + 4 + 2 + 1 + 2);  // no bias: norm1, attn (4 + q/k norms), ...
    ck_assert_str_eq(p.items[6].name, "attn.k_norm.weight");
    tt_params_free(&p);
    tt_module_free(tt_nn_block_module(&blk));  // the same as tt_nn_block_free
    ck_assert_ptr_null(blk.attn.rope.cos);
    tt_nn_block_free(&blk);  // safe again on the zeroed struct
    tt_nn_sequential_free(&s);
    tt_module_free(m);
}
END_TEST

// The GPT's parameter list holds every leaf its loss reaches, in each configuration.
START_TEST(test_gpt_params_reach) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 11;
    c.block_size = 8;
    c.n_layer = 2;
    c.n_head = 2;
    c.n_embd = 8;
    c.positional = _i & 1 ? TT_POS_ROPE : TT_POS_LEARNED;
    c.norm = _i & 2 ? TT_NORM_RMSNORM : TT_NORM_LAYERNORM;
    c.tie_weights = !(_i & 4);
    c.bias = _i & 4;
    c.qk_norm = _i & 2;
    c.n_kv_head = _i & 1 ? 1 : 0;
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    tt_scope_begin();
    tt_tensor *tok = tt_to_dtype(tt_reshape(tt_arange(TT_F32, 0, 8, 1), TT_SHAPE(1, 8)),
                                 TT_I32);
    tt_params_check_reaches(&m.params, tt_gpt_loss(&m, tok, tok));
    tt_scope_end();
    tt_gpt_free(&m);
}
END_TEST

// A forgotten _params line: the second layer's weight and bias reach the loss unlisted.
START_TEST(test_abort_params_check_reaches) {
    tt_expect_abort("2 leaf tensor(s) that require grad reach the loss but are not in the "
                    "parameter list (2 entries): (2, 4) f32 (input of 'affine'); (2,) f32");
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_nn_linear l0, l1;
    tt_nn_linear_init(&l0, 3, 4, true, &rng);
    tt_nn_linear_init(&l1, 4, 2, true, &rng);
    tt_params p;
    tt_params_init(&p);
    tt_nn_linear_params(&l0, &p, "l0");
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(5, 3));
    tt_params_check_reaches(&p,
                            tt_mean_all(tt_nn_linear_forward(&l1, tt_nn_linear_forward(&l0, x))));
}
END_TEST

START_TEST(test_abort_params_check_freed) {
    tt_expect_abort("tt_graph_leaves: the graph through op");
    tt_params p;
    tt_params_init(&p);
    tt_tensor *w = tt_set_requires_grad(tt_ones(TT_F32, TT_SHAPE(2)), true);
    tt_params_add(&p, NULL, "w", w);
    tt_tensor *loss = tt_sum_all(tt_mul(w, w));
    tt_backward(loss);
    tt_params_check_reaches(&p, loss);
}
END_TEST

START_TEST(test_abort_flatten_dims) {
    tt_expect_abort("start_dim=2 comes after end_dim=1 for input (2, 3, 4); swap them");
    tt_module_forward(tt_nn_flatten_module(2, 1), tt_zeros(TT_F32, TT_SHAPE(2, 3, 4)));
}
END_TEST

START_TEST(test_abort_flatten_range) {
    tt_expect_abort("tt_flatten: start_dim=1 or end_dim=3 is out of range for input "
                    "(2, 3) (valid: -2 .. 1)");
    tt_module_forward(tt_nn_flatten_module(1, 3), tt_zeros(TT_F32, TT_SHAPE(2, 3)));
}
END_TEST

START_TEST(test_abort_linear_in_features) {
    tt_expect_abort("input (2, 4) must end in in_features=3");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_linear m;
    tt_nn_linear_init(&m, 3, 2, true, &rng);
    tt_nn_linear_forward(&m, tt_zeros(TT_F32, TT_SHAPE(2, 4)));
}
END_TEST

START_TEST(test_abort_linear_zero_features) {
    tt_expect_abort("features must be positive, got in=0 out=2");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_linear m;
    tt_nn_linear_init(&m, 0, 2, true, &rng);
}
END_TEST

START_TEST(test_abort_layernorm_dim) {
    tt_expect_abort("input (2, 5) must end in dim=4");
    tt_nn_layernorm m;
    tt_nn_layernorm_init(&m, 4, 1e-5, true, true);
    tt_nn_layernorm_forward(&m, tt_zeros(TT_F32, TT_SHAPE(2, 5)));
}
END_TEST

START_TEST(test_abort_rmsnorm_dim) {
    tt_expect_abort("input (4, 3) must end in dim=4");
    tt_nn_rmsnorm m;
    tt_nn_rmsnorm_init(&m, 4, 1e-5, true);
    tt_nn_rmsnorm_forward(&m, tt_zeros(TT_F32, TT_SHAPE(4, 3)));
}
END_TEST

START_TEST(test_abort_embedding_index) {
    tt_expect_abort("index 3 (at flat position 0 of indices (1,)) is out of range");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_embedding e;
    tt_nn_embedding_init(&e, 3, 2, &rng);
    tt_nn_embedding_forward(&e, tt_from_data(TT_I64, TT_SHAPE(1), (const int64_t[]){3}));
}
END_TEST

START_TEST(test_abort_activation) {
    tt_expect_abort("tt_activate: invalid activation 10");
    tt_activate((tt_act)TT_ACT_COUNT, tt_zeros(TT_F32, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_act_module) {
    tt_expect_abort("tt_act_module: invalid activation -1");
    tt_act_module((tt_act)-1);
}
END_TEST

START_TEST(test_abort_dropout_p) {
    tt_expect_abort("dropout probability 1.5 is outside [0, 1]");
    tt_rng rng;
    tt_nn_dropout d;
    tt_nn_dropout_init(&d, 1.5, &rng);
}
END_TEST

START_TEST(test_abort_dropout_no_rng) {
    tt_expect_abort("dropout with p=0.1 needs an rng");
    tt_nn_dropout d;
    tt_nn_dropout_init(&d, 0.1, NULL);
}
END_TEST

START_TEST(test_abort_sequential_empty) {
    tt_expect_abort("empty sequential: add modules with tt_nn_sequential_add");
    tt_nn_sequential s;
    tt_nn_sequential_init(&s);
    tt_nn_sequential_forward(&s, tt_zeros(TT_F32, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_abort_mse_shape) {
    tt_expect_abort("pred (4,) and target (4, 1) must have the same shape");
    tt_mse_loss(tt_zeros(TT_F32, TT_SHAPE(4)), tt_zeros(TT_F32, TT_SHAPE(4, 1)));
}
END_TEST

START_TEST(test_abort_mse_dtype) {
    tt_expect_abort("pred is f32 and target is f64; both must be the same float dtype");
    tt_mse_loss(tt_zeros(TT_F32, TT_SHAPE(4)), tt_zeros(TT_F64, TT_SHAPE(4)));
}
END_TEST

START_TEST(test_abort_bce_shape) {
    tt_expect_abort("logits (2, 3) and targets (3,) must have the same shape");
    tt_bce_with_logits(tt_zeros(TT_F32, TT_SHAPE(2, 3)), tt_zeros(TT_F32, TT_SHAPE(3)));
}
END_TEST

START_TEST(test_abort_bce_int_targets) {
    tt_expect_abort("logits is f32 and targets is i64; both must be the same float dtype");
    tt_bce_with_logits(tt_zeros(TT_F32, TT_SHAPE(3)), tt_zeros(TT_I64, TT_SHAPE(3)));
}
END_TEST

// ---- abort messages name the function the user called and the valid range ----

START_TEST(test_names_activation_range) {
    tt_expect_abort("tt_activate: invalid activation 10; valid values are 0 .. 9 "
                    "(TT_ACT_IDENTITY .. TT_ACT_SOFTMAX in nn.h)");
    tt_activate((tt_act)TT_ACT_COUNT, tt_zeros(TT_F32, TT_SHAPE(2)));
}
END_TEST

START_TEST(test_names_act_module_range) {
    tt_expect_abort("tt_act_module: invalid activation 12; valid values are 0 .. 9");
    tt_act_module((tt_act)12);
}
END_TEST

START_TEST(test_names_kaiming_uniform_fan_in) {
    tt_expect_abort("tt_init_kaiming_uniform_: tensor (3, 0) has fan_in = 0, so the Kaiming std "
                    "is undefined");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_tensor *w = tt_zeros(TT_F32, TT_SHAPE(3, 0));
    tt_init_kaiming_uniform_(w, &rng, 0.0, TT_FAN_IN);
}
END_TEST

START_TEST(test_names_kaiming_normal_fan_out) {
    tt_expect_abort("tt_init_kaiming_normal_: tensor (0, 3) has fan_out = 0");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_tensor *w = tt_zeros(TT_F32, TT_SHAPE(0, 3));
    tt_init_kaiming_normal_(w, &rng, 0.0, TT_FAN_OUT);
}
END_TEST

int main(void) {
    Suite *s = suite_create("nn");
    TCase *pa = tt_tcase("params");
    tcase_add_test(pa, test_params_names);
    tcase_add_test(pa, test_params_references);
    tcase_add_test(pa, test_params_zero_grad);
    tcase_add_test(pa, test_default_dtype);
    suite_add_tcase(s, pa);

    TCase *in = tt_tcase("init");
    tcase_add_test(in, test_fans);
    tcase_add_test(in, test_init_xavier);
    tcase_add_test(in, test_init_kaiming);
    tcase_add_test(in, test_init_trunc_normal);
    tcase_add_test(in, test_pos_embedding_init_std);
    tcase_add_test(in, test_init_basic);
    tcase_add_test(in, test_init_reproducible);
    suite_add_tcase(s, in);

    TCase *la = tt_tcase("layers");
    tcase_add_loop_test(la, test_linear_values, 0, 2);
    tcase_add_test(la, test_linear_no_bias);
    tcase_add_test(la, test_linear_default_init);
    tcase_add_test(la, test_linear_batched);
    tcase_add_test(la, test_embedding_module);
    tcase_add_loop_test(la, test_layernorm_module, 0, 2);
    tcase_add_loop_test(la, test_rmsnorm_module, 0, 2);
    tcase_add_test(la, test_norm_wrapper);
    tcase_add_loop_test(la, test_activations, 0, 2);
    tcase_add_test(la, test_activation_grads);
    tcase_add_test(la, test_dropout_module);
    tcase_add_test(la, test_sequential_forward);
    tcase_add_test(la, test_sequential_params);
    tcase_add_test(la, test_sequential_no_scope);
    suite_add_tcase(s, la);

    TCase *mo = tt_tcase("modules");
    tcase_add_test(mo, test_modules_nested_values);
    tcase_add_test(mo, test_modules_nested_train);
    tcase_add_test(mo, test_flatten_module);
    tcase_add_test(mo, test_module_wrappers);
    tcase_add_test(mo, test_graph_leaves);
    tcase_add_test(mo, test_params_check_reaches_ok);
    tcase_add_test(mo, test_module_children);
    tcase_add_loop_test(mo, test_gpt_params_reach, 0, 8);
    suite_add_tcase(s, mo);

    TCase *lo = tt_tcase("losses");
    tcase_add_loop_test(lo, test_mse_loss, 0, 2);
    tcase_add_loop_test(lo, test_bce_with_logits, 0, 2);
    tcase_add_loop_test(lo, test_bce_large_logits, 0, 2);
    tcase_add_test(lo, test_losses_no_scope);
    tcase_add_test(lo, test_grad_accumulation);
    suite_add_tcase(s, lo);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_duplicate_param, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_null_param, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_long_name, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_default_dtype_int, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_fan_scalar, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_params_check_reaches, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_params_check_freed, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_flatten_dims, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_flatten_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_linear_in_features, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_linear_zero_features, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_layernorm_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_rmsnorm_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_embedding_index, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_activation, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_act_module, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dropout_p, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dropout_no_rng, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_sequential_empty, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_mse_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_mse_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bce_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bce_int_targets, SIGABRT);
    suite_add_tcase(s, ab);

    TCase *an = tt_tcase_aborts("aborts_names");
    tcase_add_test_raise_signal(an, test_names_activation_range, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_act_module_range, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_kaiming_uniform_fan_in, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_kaiming_normal_fan_out, SIGABRT);
    suite_add_tcase(s, an);
    return tt_test_run(s);
}

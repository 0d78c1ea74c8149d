// QuantizedLinear and the int8 GPT: a quantized Linear against an independent double-precision
// model of the scheme and against the f32 Linear within the bound the scales imply; the
// quantized GPT's logits, eval loss and sampling against f32; the weight bytes; the errors.
#include "test_util.h"

#include "../models/gpt/gpt.h"
#include "../tensor/kernels/qgemm.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

// ---- a Linear ----

// The scheme of tensor/kernels/qgemm.h recomputed in double from its definition: per-channel
// symmetric int8 weights, per-row asymmetric u8 activations, round half to even (nearbyint in
// the default rounding mode). ref (M, N); err_bound (M, N): the worst-case distance of the
// exact product from the f32 one, half a step of each quantizer over the row:
// sx/2 sum|w| + sw/2 sum|x| + K sx sw / 4.
static void reference(double *ref, double *err_bound, const double *x, const double *w,
                      const double *b, int64_t M, int64_t N, int64_t K) {
    double *sw = malloc((size_t)N * sizeof *sw);
    int32_t *q = malloc((size_t)(N * K) * sizeof *q);
    for (int64_t n = 0; n < N; n++) {
        double mx = 0;
        for (int64_t k = 0; k < K; k++) mx = fmax(mx, fabs(w[n * K + k]));
        sw[n] = (double)((float)mx / 127.0f);
        for (int64_t k = 0; k < K; k++)
            q[n * K + k] = sw[n] > 0 ? (int32_t)nearbyint((double)((float)w[n * K + k] /
                                                                   (float)sw[n])) : 0;
    }
    for (int64_t m = 0; m < M; m++) {
        double lo = 0, hi = 0, sumx = 0;
        for (int64_t k = 0; k < K; k++) {
            lo = fmin(lo, x[m * K + k]);
            hi = fmax(hi, x[m * K + k]);
            sumx += fabs(x[m * K + k]);
        }
        float sx = (float)(hi - lo) / 255.0f, inv = sx > 0 ? 1.0f / sx : 0;
        int32_t zx = (int32_t)nearbyintf(-(float)lo * inv);
        for (int64_t n = 0; n < N; n++) {
            int64_t s = 0;
            double sumw_f = 0;
            for (int64_t k = 0; k < K; k++) {
                int32_t u = (int32_t)nearbyintf((float)x[m * K + k] * inv) + zx;
                u = u < 0 ? 0 : u > 255 ? 255 : u;
                s += (int64_t)(u - zx) * q[n * K + k];
                sumw_f += fabs(w[n * K + k]);
            }
            ref[m * N + n] = (double)s * (double)sx * sw[n] + (b ? b[n] : 0);
            err_bound[m * N + n] = sx / 2.0 * sumw_f + sw[n] / 2.0 * sumx +
                                   (double)K * sx * sw[n] / 4.0;
        }
    }
    free(q);
    free(sw);
}

// x (2, 3, K) normal, a Linear K -> N with or without bias, and a transposed (non-contiguous)
// copy of x as a second input: the int8 outputs equal the double model of the scheme (to f32
// rounding of the epilogue) and stay within the bound above of the f32 Linear, which they do
// not equal (the quantization error is real).
static const struct { int64_t K, N; bool bias; } lin_cases[] = {
    {70, 33, true}, {128, 65, false}, {5, 3, true}, {384, 100, true},
};
#define NLIN ((int)(sizeof lin_cases / sizeof lin_cases[0]))

START_TEST(test_qlinear_vs_linear) {
    int64_t K = lin_cases[_i].K, N = lin_cases[_i].N, M = 6;
    tt_rng rng;
    tt_rng_seed(&rng, 100 + (uint64_t)_i);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, K, N, lin_cases[_i].bias, &rng);
    tt_nn_qlinear q;
    tt_nn_qlinear_from_linear(&q, &fc);
    ck_assert_int_eq(q.in_features, K);
    ck_assert_int_eq(q.out_features, N);
    tt_no_grad_begin();
    tt_scope_begin();
    // The second input: a (K, 6) tensor transposed, so (6, K) with strides (1, 6).
    tt_tensor *xs[2] = {tt_randn(&rng, TT_F32, TT_SHAPE(2, 3, K)),
                        tt_transpose(tt_randn(&rng, TT_F32, TT_SHAPE(K, M)), 0, 1)};
    double worst_ratio = 0, worst_f32 = 0;
    for (int c = 0; c < 2; c++) {
        tt_tensor *yq = tt_nn_qlinear_forward(&q, xs[c]);
        tt_tensor *yf = tt_affine(xs[c], fc.weight, fc.bias);
        ck_assert_int_eq(yq->ndim, xs[c]->ndim);
        ck_assert_int_eq(yq->shape[yq->ndim - 1], N);
        double *x = tt_test_values(xs[c]), *w = tt_test_values(fc.weight), *b = fc.bias ? tt_test_values(fc.bias) : NULL;
        double *got = tt_test_values(yq), *f32 = tt_test_values(yf);
        double *ref = malloc((size_t)(M * N) * sizeof *ref), *bound = malloc((size_t)(M * N) *
                                                                           sizeof *bound);
        reference(ref, bound, x, w, b, M, N, K);
        for (int64_t i = 0; i < M * N; i++) {
            ck_assert_msg(fabs(got[i] - ref[i]) <= 1e-5 * (fabs(ref[i]) + bound[i]) + 1e-7,
                          "K=%lld N=%lld input %d: y[%lld] = %.9g, the scheme gives %.9g",
                          (long long)K, (long long)N, c, (long long)i, got[i], ref[i]);
            ck_assert_msg(fabs(got[i] - f32[i]) <= bound[i] * 1.0001 + 1e-6,
                          "y[%lld] = %.9g is %.3g from the f32 %.9g, above the bound %.3g",
                          (long long)i, got[i], fabs(got[i] - f32[i]), f32[i], bound[i]);
            worst_ratio = fmax(worst_ratio, fabs(got[i] - f32[i]) / bound[i]);
            worst_f32 = fmax(worst_f32, fabs(got[i] - f32[i]));
        }
        free(x), free(w), free(b), free(got), free(f32), free(ref), free(bound);
    }
    printf("qlinear K=%lld N=%lld: max |int8 - f32| %.3g, %.2f of the bound\n", (long long)K,
           (long long)N, worst_f32, worst_ratio);
    ck_assert_msg(worst_f32 > 0, "the int8 output equals the f32 one: no quantization ran");
    tt_scope_end();
    tt_no_grad_end();
    tt_nn_qlinear_free(&q);
    tt_nn_linear_free(&fc);
}
END_TEST

// tt_nn_linear_quantize makes tt_nn_linear_forward (and so a module that calls it, as
// tt_nn_sequential does) run the int8 product: the same bits as tt_nn_qlinear_forward; dequantizing
// gives back the f32 product bit for bit. Weights of f64 are rounded to f32 first.
START_TEST(test_linear_quantize_hook) {
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_dtype prev = tt_set_default_dtype(_i ? TT_F64 : TT_F32);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 40, 24, true, &rng);
    tt_set_default_dtype(prev);
    tt_nn_qlinear q;
    tt_nn_qlinear_from_linear(&q, &fc);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(5, 40));
    tt_tensor *xf = tt_to_dtype(x, fc.weight->dtype);
    tt_tensor *before = tt_nn_linear_forward(&fc, xf);
    tt_nn_linear_quantize(&fc);
    tt_nn_linear_quantize(&fc);  // again: replaces the first
    tt_tensor *y = tt_nn_linear_forward(&fc, x), *yq = tt_nn_qlinear_forward(&q, x);
    ck_assert(tt_test_same_values(y, yq));
    tt_module mod = tt_nn_qlinear_module(&q);  // the same behind the module interface
    ck_assert(tt_test_same_values(tt_module_forward(mod, x), yq));
    ck_assert(!tt_test_same_values(y, before));
    ck_assert_int_gt(tt_nn_qlinear_bytes(tt_nn_linear_quantized(&fc)), 0);
    tt_nn_linear_dequantize(&fc);
    ck_assert_ptr_null(tt_nn_linear_quantized(&fc));
    ck_assert(tt_test_same_values(tt_nn_linear_forward(&fc, xf), before));
    tt_nn_linear_quantize(&fc);  // freed by tt_nn_linear_free
    tt_scope_end();
    tt_no_grad_end();
    tt_nn_qlinear_free(&q);
    tt_nn_linear_free(&fc);
}
END_TEST

// ---- the GPT ----

enum { CFG_TIED, CFG_UNTIED, NCFG };
static const char *const cfg_names[NCFG] = {"tied", "untied+bias+rope"};

// A tiny GPT (vocab 16, block 16, 2 layers, 32 wide) of either family.
static tt_gpt_config tiny_config(int which) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 16;
    c.block_size = 16;
    c.n_layer = 2;
    c.n_head = 4;
    c.n_embd = 32;
    if (which == CFG_UNTIED) {
        c.tie_weights = false;
        c.bias = true;
        c.positional = TT_POS_ROPE;
        c.norm = TT_NORM_RMSNORM;
    }
    return c;
}

// (B, T + 1) tokens of a noisy counter: each next token is the previous plus one (mod V) with
// probability 3/4, else uniform. Learnable, but not to zero loss (about 0.9 nats at best).
// x = [:, :T], y = [:, 1:], owned by the current scope.
static void counter_batch(tt_rng *rng, int64_t B, int64_t T, int64_t V, tt_tensor **x,
                          tt_tensor **y) {
    *x = tt_empty(TT_I32, TT_SHAPE(B, T));
    *y = tt_empty(TT_I32, TT_SHAPE(B, T));
    int32_t *xd = tt_data(*x), *yd = tt_data(*y);
    for (int64_t b = 0; b < B; b++) {
        int32_t t = (int32_t)tt_rng_below(rng, V);
        for (int64_t i = 0; i <= T; i++) {
            if (i < T) xd[b * T + i] = t;
            if (i > 0) yd[b * T + i - 1] = t;
            t = tt_rng_uniform(rng) < 0.75 ? (int32_t)((t + 1) % V)
                                           : (int32_t)tt_rng_below(rng, V);
        }
    }
}

// Trains m for `steps` AdamW steps on fresh counter batches.
static void train_tiny(tt_gpt *m, int steps, uint64_t seed) {
    tt_optim o;
    tt_optim_init(&o, tt_adamw_config(1e-2));
    tt_optim_add_decay_groups(&o, &m->params, 0.0);
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    for (int s = 0; s < steps; s++) {
        tt_scope_begin();
        tt_tensor *x, *y;
        counter_batch(&rng, 8, m->cfg.block_size, m->cfg.vocab_size, &x, &y);
        tt_backward(tt_gpt_loss(m, x, y));
        tt_clip_grad_norm(&m->params, 1.0);
        tt_optim_step(&o);
        tt_optim_zero_grad(&o);
        tt_scope_end();
    }
    tt_optim_free(&o);
}

static void tiny_trained(tt_gpt *m, int which) {
    tt_gpt_config c = tiny_config(which);
    tt_rng rng;
    tt_rng_seed(&rng, 40 + (uint64_t)which);
    ck_assert_int_eq(tt_gpt_init(m, &c, &rng), TT_OK);
    train_tiny(m, 150, 50 + (uint64_t)which);
}

// Mean loss over 8 held-out batches of 8 x 16 (the same batches for every call), no grad.
static double eval_loss(tt_gpt *m) {
    tt_rng rng;
    tt_rng_seed(&rng, 999);
    double sum = 0;
    tt_no_grad_begin();
    for (int i = 0; i < 8; i++) {
        tt_scope_begin();
        tt_tensor *x, *y;
        counter_batch(&rng, 8, m->cfg.block_size, m->cfg.vocab_size, &x, &y);
        sum += tt_item(tt_gpt_loss(m, x, y));
        tt_scope_end();
    }
    tt_no_grad_end();
    return sum / 8;
}

// A trained tiny GPT: the int8 model's eval loss is within 0.002 of the f32 one (measured:
// 4e-5 tied, 1.1e-4 untied); its logits differ from f32 by at most 1% of the logits' range
// (measured: 0.28% for both); dequantizing gives back the f32 loss bit for bit.
START_TEST(test_gpt_int8_vs_f32) {
    tt_gpt m;
    tiny_trained(&m, _i);
    double f32 = eval_loss(&m);
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_scope_begin();
    tt_tensor *x, *y;
    counter_batch(&rng, 2, 16, 16, &x, &y);
    tt_no_grad_begin();
    tt_tensor *lf = tt_gpt_forward(&m, x);  // (2, 16, 16)
    ck_assert(!tt_gpt_is_quantized(&m));
    tt_gpt_quantize(&m);
    ck_assert(tt_gpt_is_quantized(&m));
    tt_tensor *lq = tt_gpt_forward(&m, x);
    tt_no_grad_end();
    double *a = tt_test_values(lf), *b = tt_test_values(lq), lo = INFINITY, hi = -INFINITY, diff = 0;
    for (int64_t i = 0; i < tt_numel(lf); i++) {
        lo = fmin(lo, a[i]);
        hi = fmax(hi, a[i]);
        diff = fmax(diff, fabs(a[i] - b[i]));
    }
    free(a), free(b);
    tt_scope_end();
    double q8 = eval_loss(&m);
    printf("gpt %s: eval loss f32 %.5f int8 %.5f (%+.2e); max |logit diff| %.4f over a range of "
           "%.2f (%.2f%%)\n", cfg_names[_i], f32, q8, q8 - f32, diff, hi - lo,
           100 * diff / (hi - lo));
    ck_assert_msg(f32 < 1.5, "the tiny model did not learn: eval loss %.4f (chance: 2.77)", f32);
    ck_assert_msg(fabs(q8 - f32) < 0.002, "int8 eval loss %.5f vs f32 %.5f", q8, f32);
    ck_assert_msg(diff > 0 && diff < 0.01 * (hi - lo), "max |logit diff| %.4g, range %.4g", diff,
                  hi - lo);
    tt_gpt_dequantize(&m);
    ck_assert(!tt_gpt_is_quantized(&m));
    ck_assert(eval_loss(&m) == f32);
    tt_gpt_quantize(&m);  // tt_gpt_free frees it
    tt_gpt_free(&m);
}
END_TEST

// A trained tiny GPT of either family in bf16 (the tied head too): eval loss within 0.1% of
// f32 (measured: 0.002%) but not equal to it; greedy generation with the KV cache (one row a
// step: the matrix-vector kernel) gives the tokens of a full recompute per token (the GEMM),
// since the two kernels compute the same bits; back to f32 bit for bit.
START_TEST(test_gpt_bf16_vs_f32) {
    tt_gpt m;
    tiny_trained(&m, _i);
    double f32 = eval_loss(&m);
    tt_gpt_quantize_as(&m, TT_QUANT_BF16);
    ck_assert(tt_gpt_is_quantized(&m));
    double bf = eval_loss(&m);
    printf("gpt %s: eval loss f32 %.6f bf16 %.6f (%+.4f%%)\n", cfg_names[_i], f32, bf,
           100 * (bf - f32) / f32);
    ck_assert_msg(f32 < 1.5, "the tiny model did not learn: %.4f", f32);
    ck_assert_msg(bf != f32 && fabs(bf - f32) < 1e-3 * f32, "bf16 %.6f vs f32 %.6f", bf, f32);
    int32_t prompt[3] = {1, 2, 3}, a[30], b[30];
    tt_sample_opts o = tt_sample_opts_default();
    o.temperature = 0;
    tt_rng r;
    tt_rng_seed(&r, 1);
    tt_gpt_generate(&m, prompt, 3, 12, &o, &r, a, NULL, NULL);
    int32_t seq[16] = {1, 2, 3};
    tt_no_grad_begin();
    for (int t = 0; t < 12; t++) {  // full forward over the prefix, argmax of the last row
        tt_scope_begin();
        tt_tensor *x = tt_empty(TT_I32, TT_SHAPE(1, 3 + t));
        memcpy(tt_data(x), seq, (size_t)(3 + t) * sizeof *seq);
        double *l = tt_test_values(tt_gpt_forward(&m, x));  // (1, 3 + t, 16)
        int best = 0;
        for (int v = 1; v < 16; v++)
            if (l[(2 + t) * 16 + v] > l[(2 + t) * 16 + best]) best = v;
        free(l);
        seq[3 + t] = b[t] = best;
        tt_scope_end();
    }
    tt_no_grad_end();
    for (int t = 0; t < 12; t++) ck_assert_int_eq(a[t], b[t]);
    tt_gpt_dequantize(&m);
    ck_assert(eval_loss(&m) == f32);
    tt_gpt_free(&m);
}
END_TEST

// The same tiny models in int4 (tt_gpt_quantize_as): eval loss within 0.02 of f32 (measured:
// see the printed line), and back to f32 bit for bit.
START_TEST(test_gpt_int4_vs_f32) {
    tt_gpt m;
    tiny_trained(&m, _i);
    double f32 = eval_loss(&m);
    tt_gpt_quantize_as(&m, TT_QUANT_INT4);
    ck_assert_int_eq(tt_nn_linear_quantization(&m.blocks[0].mlp.fc), TT_QUANT_INT4);
    double q4 = eval_loss(&m);
    printf("gpt %s: eval loss f32 %.5f int4 %.5f (%+.2e)\n", cfg_names[_i], f32, q4, q4 - f32);
    ck_assert_msg(f32 < 1.5, "the tiny model did not learn: eval loss %.4f", f32);
    ck_assert_msg(q4 != f32 && fabs(q4 - f32) < 0.02, "int4 eval loss %.5f vs f32 %.5f", q4,
                  f32);
    tt_gpt_dequantize(&m);
    ck_assert(eval_loss(&m) == f32);
    tt_gpt_free(&m);
}
END_TEST

// Sampling from the int8 model is deterministic: the same seed gives the same tokens, with
// the KV cache and with a full recompute per token (every row is quantized on its own, so the
// last row's logits do not depend on how many rows went with it), across the window's slides.
START_TEST(test_gpt_int8_sampling) {
    tt_gpt m;
    tiny_trained(&m, _i);
    tt_gpt_quantize(&m);
    int32_t prompt[3] = {1, 2, 3}, a[40], b[40], c[40];
    tt_sample_opts o = tt_sample_opts_default();
    tt_rng r;
    tt_rng_seed(&r, 77);
    tt_gpt_generate(&m, prompt, 3, 40, &o, &r, a, NULL, NULL);
    tt_rng_seed(&r, 77);
    tt_gpt_generate(&m, prompt, 3, 40, &o, &r, b, NULL, NULL);
    o.use_cache = false;
    tt_rng_seed(&r, 77);
    tt_gpt_generate(&m, prompt, 3, 40, &o, &r, c, NULL, NULL);
    ck_assert_mem_eq(a, b, sizeof a);
    ck_assert_mem_eq(a, c, sizeof a);
    // The model learned the counter: most greedy steps count up.
    o.temperature = 0;
    o.use_cache = true;
    tt_gpt_generate(&m, prompt, 3, 40, &o, &r, a, NULL, NULL);
    int up = a[0] == 4;
    for (int i = 1; i < 40; i++) up += a[i] == (a[i - 1] + 1) % 16;
    ck_assert_msg(up >= 36, "int8 greedy counted up %d times of 40", up);
    tt_gpt_free(&m);
}
END_TEST

// The bytes the products read: 4 per f32 weight and bias element before; after, each Linear's
// packed panels (tt_k_qgemm_packed_bytes) plus a scale and a sum per channel and its f32 bias.
START_TEST(test_gpt_weight_bytes) {
    tt_gpt_config c = tt_gpt_config_default();  // baby: V 65, 4 layers, C 128, tied, no bias
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    int64_t C = c.n_embd, V = c.vocab_size, L = c.n_layer;
    int64_t f32 = 4 * (L * (4 * C * C + 8 * C * C) + V * C);
    ck_assert_int_eq(tt_gpt_matmul_weight_bytes(&m), f32);
    tt_gpt_quantize(&m);
    int64_t q = L * (4 * (tt_k_qgemm_packed_bytes(C, C) + 8 * C) +
                     tt_k_qgemm_packed_bytes(4 * C, C) + 8 * 4 * C +
                     tt_k_qgemm_packed_bytes(C, 4 * C) + 8 * C) +
                tt_k_qgemm_packed_bytes(V, C) + 8 * V;
    ck_assert_int_eq(tt_gpt_matmul_weight_bytes(&m), q);
    printf("baby gpt matmul weights: f32 %lld bytes, int8 %lld (%.2fx smaller)\n",
           (long long)f32, (long long)q, (double)f32 / (double)q);
    ck_assert((double)f32 / (double)q > 3.5);
    tt_gpt_free(&m);
}
END_TEST

// ---- errors ----

static tt_nn_linear ab_fc;
static tt_nn_qlinear ab_q;
static tt_gpt ab_gpt;

static void abort_setup(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_linear_init(&ab_fc, 8, 4, true, &rng);
    tt_nn_qlinear_from_linear(&ab_q, &ab_fc);
    tt_gpt_config c = tiny_config(CFG_TIED);
    tt_gpt_init(&ab_gpt, &c, &rng);
    tt_gpt_quantize(&ab_gpt);
}
static void abort_teardown(void) {
    tt_gpt_free(&ab_gpt);
    tt_nn_qlinear_free(&ab_q);
    tt_nn_linear_free(&ab_fc);
}

START_TEST(test_abort_grad) {
    tt_expect_abort("tt_nn_qlinear_forward: the int8 Linear (in=8, out=4) is inference only and "
                    "has no gradient, but input (2, 8) requires grad with grad mode on; run it "
                    "inside tt_no_grad_begin()/tt_no_grad_end()");
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_tensor *x = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(2, 8)), true);
    tt_nn_qlinear_forward(&ab_q, x);
}
END_TEST

// The embedding output requires grad (wte does), so the first int8 Linear refuses it.
START_TEST(test_abort_gpt_loss_grad) {
    tt_expect_abort("is inference only and has no gradient, but input (1, 4, 32) requires grad");
    tt_tensor *x = tt_zeros(TT_I32, TT_SHAPE(1, 4));
    tt_gpt_loss(&ab_gpt, x, x);
}
END_TEST

START_TEST(test_abort_dtype) {
    tt_expect_abort("tt_nn_qlinear_forward: input (3, 8) must be f32, got f64");
    tt_nn_qlinear_forward(&ab_q, tt_zeros(TT_F64, TT_SHAPE(3, 8)));
}
END_TEST

START_TEST(test_abort_features) {
    tt_expect_abort("tt_nn_qlinear_forward: input (3, 7) must end in in_features=8");
    tt_nn_qlinear_forward(&ab_q, tt_zeros(TT_F32, TT_SHAPE(3, 7)));
}
END_TEST

START_TEST(test_abort_weight_shape) {
    tt_expect_abort("tt_nn_qlinear_init: weight must be a float matrix (out, in), got (8,) f32");
    tt_nn_qlinear q;
    tt_nn_qlinear_init(&q, tt_zeros(TT_F32, TT_SHAPE(8)), NULL);
}
END_TEST

START_TEST(test_abort_bias_shape) {
    tt_expect_abort("tt_nn_qlinear_init: bias (3,) f32 must be a float vector (4,) matching "
                    "weight (4, 8), or NULL");
    tt_nn_qlinear q;
    tt_nn_qlinear_init(&q, ab_fc.weight, tt_zeros(TT_F32, TT_SHAPE(3)));
}
END_TEST

START_TEST(test_abort_uninitialized) {
    tt_expect_abort("tt_nn_qlinear_forward: the module is not initialized; call "
                    "tt_nn_qlinear_from_linear");
    tt_nn_qlinear q = {0};
    tt_nn_qlinear_forward(&q, tt_zeros(TT_F32, TT_SHAPE(3, 8)));
}
END_TEST

START_TEST(test_abort_gpt_uninitialized) {
    tt_expect_abort("tt_gpt_quantize: the model is not initialized; call tt_gpt_init first");
    tt_gpt m = {0};
    tt_gpt_quantize(&m);
}
END_TEST

// The weight formats by name, and tt_nn_linear_quantize_as: INT8 is tt_nn_linear_quantize
// (same module type, same bits), NONE goes back to f32, an unknown name is refused.
START_TEST(test_quant_formats) {
    tt_quant q = TT_QUANT_COUNT;
    ck_assert_int_eq(tt_quant_parse("int8", &q), TT_OK);
    ck_assert_int_eq(q, TT_QUANT_INT8);
    ck_assert_int_eq(tt_quant_parse("f32", &q), TT_OK);
    ck_assert_int_eq(q, TT_QUANT_NONE);
    ck_assert_int_eq(tt_quant_parse("int3", &q), TT_ERR_ARG);
    ck_assert_int_eq(q, TT_QUANT_NONE);
    ck_assert_str_eq(tt_last_error(), "'int3' is not a weight format; use f32, int8, bf16 or "
                     "int4");
    ck_assert_str_eq(tt_quant_name(TT_QUANT_INT8), "int8");
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 16, 8, true, &rng);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(3, 16));
    tt_tensor *f32 = tt_nn_linear_forward(&fc, x);
    tt_nn_linear_quantize(&fc);
    tt_tensor *int8 = tt_nn_linear_forward(&fc, x);
    tt_nn_linear_quantize_as(&fc, TT_QUANT_INT8);
    ck_assert_int_eq(tt_nn_linear_quantization(&fc), TT_QUANT_INT8);
    ck_assert_str_eq(tt_nn_linear_module(&fc).ops->type, "Linear");
    ck_assert_str_eq(fc.swap.ops->type, "QuantizedLinear");
    ck_assert(tt_test_same_values(tt_nn_linear_forward(&fc, x), int8));
    ck_assert_int_eq(tt_nn_linear_quantized_bytes(&fc),
                     tt_nn_qlinear_bytes(tt_nn_linear_quantized(&fc)));
    tt_nn_linear_quantize_as(&fc, TT_QUANT_NONE);
    ck_assert_int_eq(tt_nn_linear_quantization(&fc), TT_QUANT_NONE);
    ck_assert_int_eq(tt_nn_linear_quantized_bytes(&fc), 0);
    ck_assert(tt_test_same_values(tt_nn_linear_forward(&fc, x), f32));
    tt_scope_end();
    tt_no_grad_end();
    tt_nn_linear_free(&fc);
}
END_TEST

int main(void) {
    Suite *s = suite_create("qlinear");
    TCase *lin = tt_tcase("linear");
    tcase_add_loop_test(lin, test_qlinear_vs_linear, 0, NLIN);
    tcase_add_loop_test(lin, test_linear_quantize_hook, 0, 2);
    tcase_add_test(lin, test_quant_formats);
    suite_add_tcase(s, lin);

    TCase *gpt = tt_tcase("gpt");
    tcase_set_timeout(gpt, 120);
    tcase_add_loop_test(gpt, test_gpt_int8_vs_f32, 0, NCFG);
    tcase_add_loop_test(gpt, test_gpt_int4_vs_f32, 0, NCFG);
    tcase_add_loop_test(gpt, test_gpt_int8_sampling, 0, NCFG);
    tcase_add_loop_test(gpt, test_gpt_bf16_vs_f32, 0, NCFG);
    tcase_add_test(gpt, test_gpt_weight_bytes);
    suite_add_tcase(s, gpt);

    TCase *ab = tt_tcase_aborts("aborts_qlinear");
    tcase_add_checked_fixture(ab, abort_setup, abort_teardown);
    tcase_add_test_raise_signal(ab, test_abort_grad, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_gpt_loss_grad, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_features, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_weight_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bias_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_uninitialized, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_gpt_uninitialized, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

// Dynamic quantization of a module tree (tt_quantize_dynamic, tt_dequantize_model): an MLP
// against a double-precision emulation of the int8 scheme layer by layer and against PyTorch
// 1.13's quantize_dynamic; the counts over sequential, MLP, nested and LeNet-shaped trees;
// convolutions left f32; dequantizing restores the f32 outputs bit for bit; the GPT; static
// quantization (observers, calibration, fixed activation scales) against the emulation; the
// modules swapped in for a Linear (int8, observer, low rank) and their accessors.
#include "test_util.h"

#include "../models/gpt/gpt.h"
#include "reference/quantize_reference.h"

#include <signal.h>
#include <stdlib.h>

#define NQ_LAYERS 3  // quant_widths has NQ_LAYERS + 1 entries

// ---- a double-precision model of the scheme (tensor/kernels/qgemm.h, from its definition) --

// y (M, N) = the int8 product of x (M, K) and w (N, K) plus b: per-output-channel symmetric
// int8 weights sw = max|w| / 127, per-row asymmetric u8 activations over [min(0, min x),
// max(0, max x)] in 255 steps, round half to even, the int32 sum scaled back. With range
// non-NULL (static quantization) every row uses [min(0, range[0]), max(0, range[1])] instead.
static void emulate_linear(double *y, const double *x, const double *w, const double *b,
                           int64_t M, int64_t N, int64_t K, const double *range) {
    for (int64_t m = 0; m < M; m++) {
        double lo = 0, hi = 0;
        for (int64_t k = 0; k < K; k++) {
            lo = fmin(lo, range ? range[0] : x[m * K + k]);
            hi = fmax(hi, range ? range[1] : x[m * K + k]);
        }
        float sx = (float)(hi - lo) / 255.0f, inv = sx > 0 ? 1.0f / sx : 0;
        int32_t zx = (int32_t)nearbyintf(-(float)lo * inv);
        zx = zx < 0 ? 0 : zx > 255 ? 255 : zx;
        for (int64_t n = 0; n < N; n++) {
            double mx = 0;
            for (int64_t k = 0; k < K; k++) mx = fmax(mx, fabs(w[n * K + k]));
            float sw = (float)mx / 127.0f;
            int64_t s = 0;
            for (int64_t k = 0; k < K; k++) {
                int32_t q = sw > 0 ? (int32_t)nearbyint((double)((float)w[n * K + k] / sw)) : 0;
                int32_t u = (int32_t)nearbyintf((float)x[m * K + k] * inv) + zx;
                u = u < 0 ? 0 : u > 255 ? 255 : u;
                s += (int64_t)(u - zx) * q;
            }
            y[m * N + n] = (double)s * (double)sx * (double)sw + (b ? b[n] : 0);
        }
    }
}

// ---- the reference MLP: Linear-ReLU-Linear-ReLU-Linear, PyTorch's weights ----

typedef struct ref_mlp {
    tt_nn_linear fc[NQ_LAYERS];
    tt_nn_sequential seq;
} ref_mlp;

// Copies the reference parameters (state_dict order: weight, bias per layer) into fc.
static void load_reference(tt_nn_linear *fc) {
    const float *p = quant_params;
    for (int i = 0; i < NQ_LAYERS; i++) {
        int64_t K = quant_widths[i], N = quant_widths[i + 1];
        tt_tensor *w = tt_from_data(TT_F32, TT_SHAPE(N, K), p);
        tt_tensor *b = tt_from_data(TT_F32, TT_SHAPE(N), p + N * K);
        tt_copy_(fc[i].weight, w);
        tt_copy_(fc[i].bias, b);
        tt_release(w), tt_release(b);
        p += N * K + N;
    }
    ck_assert_int_eq(p - quant_params, sizeof quant_params / sizeof quant_params[0]);
}

static void ref_mlp_init(ref_mlp *m) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_sequential_init(&m->seq);
    for (int i = 0; i < NQ_LAYERS; i++) {
        tt_nn_linear_init(&m->fc[i], quant_widths[i], quant_widths[i + 1], true, &rng);
        tt_nn_sequential_add(&m->seq, tt_nn_linear_module(&m->fc[i]));
        if (i + 1 < NQ_LAYERS) tt_nn_sequential_add(&m->seq, tt_act_module(TT_ACT_RELU));
    }
    load_reference(m->fc);
}

static void ref_mlp_free(ref_mlp *m) {
    tt_nn_sequential_free(&m->seq);
    for (int i = 0; i < NQ_LAYERS; i++) tt_nn_linear_free(&m->fc[i]);
}

// The emulated int8 MLP on x (B, widths[0]): each layer in double on the previous layer's
// output rounded to f32 (what the C forward hands on), ReLU between. out (B, widths[last]).
// ranges: NULL (dynamic) or layer l's static input range at ranges[2 l], ranges[2 l + 1].
static void emulate_mlp(double *out, const ref_mlp *m, const double *x, int64_t B,
                        const double *ranges) {
    int64_t wmax = 0;
    for (int i = 0; i <= NQ_LAYERS; i++) wmax = quant_widths[i] > wmax ? quant_widths[i] : wmax;
    double *h = malloc((size_t)(B * wmax) * sizeof *h), *y = malloc((size_t)(B * wmax) *
                                                                     sizeof *y);
    for (int64_t i = 0; i < B * quant_widths[0]; i++) h[i] = x[i];
    for (int l = 0; l < NQ_LAYERS; l++) {
        int64_t K = quant_widths[l], N = quant_widths[l + 1];
        double *w = tt_test_values(m->fc[l].weight), *b = tt_test_values(m->fc[l].bias);
        emulate_linear(y, h, w, b, B, N, K, ranges ? ranges + 2 * l : NULL);
        for (int64_t i = 0; i < B * N; i++) {
            double v = (double)(float)y[i];
            h[i] = l + 1 < NQ_LAYERS && v < 0 ? 0 : v;
        }
        free(w), free(b);
    }
    for (int64_t i = 0; i < B * quant_widths[NQ_LAYERS]; i++) out[i] = h[i];
    free(h), free(y);
}

// The MLP from PyTorch's weights: its f32 output is PyTorch's; tt_quantize_dynamic quantizes
// its 3 Linears; the int8 output equals the double emulation of the scheme to f32 rounding
// (1e-5 of the output's scale) and is within 3% of the output's scale of PyTorch's
// quantize_dynamic (per-tensor weights and activations on its onednn engine: a coarser
// scheme, about 2% off f32 here, so not the same bits); dequantizing restores f32 bitwise.
START_TEST(test_mlp_vs_emulation_and_torch) {
    ref_mlp m;
    ref_mlp_init(&m);
    const int64_t B = QUANT_BATCH, K = quant_widths[0], N = quant_widths[NQ_LAYERS];
    tt_module mod = tt_nn_sequential_module(&m.seq);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_from_data(TT_F32, TT_SHAPE(B, K), quant_x);
    tt_tensor *yf = tt_module_forward(mod, x);  // (B, N)
    double *f32 = tt_test_values(yf), scale = 0;
    for (int64_t i = 0; i < B * N; i++) {
        ck_assert_msg(fabs(f32[i] - quant_y_f32[i]) <= 1e-5 * (1 + fabs(quant_y_f32[i])),
                      "f32 y[%lld] = %.9g, PyTorch %.9g", (long long)i, f32[i], quant_y_f32[i]);
        scale = fmax(scale, fabs(f32[i]));
    }
    ck_assert_int_eq(tt_quantize_dynamic(mod), NQ_LAYERS);
    for (int i = 0; i < NQ_LAYERS; i++) ck_assert_ptr_nonnull(tt_nn_linear_quantized(&m.fc[i]));
    tt_tensor *yq = tt_module_forward(mod, x);
    double *got = tt_test_values(yq), *xd = tt_test_values(x), *emu = malloc((size_t)(B * N) * sizeof *emu);
    emulate_mlp(emu, &m, xd, B, NULL);
    double worst_emu = 0, worst_torch = 0, worst_f32 = 0;
    for (int64_t i = 0; i < B * N; i++) {
        worst_emu = fmax(worst_emu, fabs(got[i] - emu[i]));
        worst_torch = fmax(worst_torch, fabs(got[i] - quant_y_torch_int8[i]));
        worst_f32 = fmax(worst_f32, fabs(got[i] - f32[i]));
    }
    printf("int8 MLP: max |y| %.4g; max |int8 - emulation| %.3g, |int8 - torch int8| %.3g, "
           "|int8 - f32| %.3g\n", scale, worst_emu, worst_torch, worst_f32);
    ck_assert_msg(worst_emu <= 1e-5 * scale, "int8 output %.3g from the emulated scheme",
                  worst_emu);
    ck_assert_msg(worst_torch <= 0.03 * scale, "int8 output %.3g from PyTorch's int8 output",
                  worst_torch);
    ck_assert_msg(worst_f32 > 0 && worst_f32 <= 0.03 * scale, "int8 output %.3g from f32",
                  worst_f32);
    ck_assert_int_eq(tt_dequantize_model(mod), NQ_LAYERS);
    ck_assert_int_eq(tt_dequantize_model(mod), 0);
    ck_assert(tt_test_same_values(tt_module_forward(mod, x), yf));
    free(f32), free(got), free(xd), free(emu);
    tt_scope_end();
    tt_no_grad_end();
    ref_mlp_free(&m);
}
END_TEST

// tt_nn_mlp with the same weights (its Linears at children 0, 3, 6 between activations and
// Dropouts): 3 quantized, the same int8 bits as the sequential; quantizing twice re-quantizes.
START_TEST(test_mlp_module) {
    ref_mlp r;
    ref_mlp_init(&r);
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    int64_t widths[NQ_LAYERS + 1];
    for (int i = 0; i <= NQ_LAYERS; i++) widths[i] = quant_widths[i];
    tt_nn_mlp mlp;
    tt_nn_mlp_init(&mlp, NQ_LAYERS + 1, widths, TT_ACT_RELU, true, 0.0, &rng);
    load_reference(mlp.layers);
    tt_nn_mlp_train(&mlp, false);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_from_data(TT_F32, TT_SHAPE(QUANT_BATCH, quant_widths[0]), quant_x);
    tt_tensor *yf = tt_nn_mlp_forward(&mlp, x);
    ck_assert(tt_test_same_values(yf, tt_nn_sequential_forward(&r.seq, x)));
    ck_assert_int_eq(tt_quantize_dynamic(tt_nn_mlp_module(&mlp)), NQ_LAYERS);
    ck_assert_int_eq(tt_quantize_dynamic(tt_nn_mlp_module(&mlp)), NQ_LAYERS);
    ck_assert_int_eq(tt_quantize_dynamic(tt_nn_sequential_module(&r.seq)), NQ_LAYERS);
    tt_tensor *yq = tt_nn_mlp_forward(&mlp, x);
    ck_assert(!tt_test_same_values(yq, yf));
    ck_assert(tt_test_same_values(yq, tt_nn_sequential_forward(&r.seq, x)));
    ck_assert_int_eq(tt_dequantize_model(tt_nn_mlp_module(&mlp)), NQ_LAYERS);
    ck_assert(tt_test_same_values(tt_nn_mlp_forward(&mlp, x), yf));
    tt_scope_end();
    tt_no_grad_end();
    tt_nn_mlp_free(&mlp);  // r's Linears are still quantized: tt_nn_linear_free frees them
    ref_mlp_free(&r);
}
END_TEST

// Nested containers: a sequential holding a Linear, a sequential of two Linears, an MLP of
// two and a QuantizedLinear module (already int8, no Linear: not counted): 5 Linears.
START_TEST(test_nested_counts) {
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_nn_linear a, b, c;
    tt_nn_linear_init(&a, 6, 8, true, &rng);
    tt_nn_linear_init(&b, 8, 8, false, &rng);
    tt_nn_linear_init(&c, 8, 5, true, &rng);
    tt_nn_mlp mlp;
    tt_nn_mlp_init(&mlp, 3, (int64_t[]){5, 7, 4}, TT_ACT_GELU, true, 0.0, &rng);
    tt_nn_qlinear q;
    tt_nn_qlinear_from_linear(&q, &a);
    tt_nn_linear d;
    tt_nn_linear_init(&d, 4, 6, true, &rng);
    tt_nn_sequential inner, outer;
    tt_nn_sequential_init(&inner);
    tt_nn_sequential_add(&inner, tt_nn_linear_module(&b));
    tt_nn_sequential_add(&inner, tt_act_module(TT_ACT_TANH));
    tt_nn_sequential_add(&inner, tt_nn_linear_module(&c));
    tt_nn_sequential_init(&outer);
    tt_nn_sequential_add(&outer, tt_nn_linear_module(&a));
    tt_nn_sequential_add(&outer, tt_nn_sequential_module(&inner));
    tt_nn_sequential_add(&outer, tt_nn_mlp_module(&mlp));
    tt_nn_sequential_add(&outer, tt_nn_linear_module(&d));
    tt_nn_sequential_add(&outer, tt_nn_qlinear_module(&q));  // (B, 6) -> (B, 8)
    tt_module m = tt_nn_sequential_module(&outer);
    tt_params before;
    tt_params_init(&before);
    tt_module_state(m, &before, NULL);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(4, 6));
    tt_tensor *yf = tt_module_forward(m, x);
    ck_assert_int_eq(tt_quantize_dynamic(m), 6);
    ck_assert_int_eq(tt_quantize_dynamic(tt_nn_sequential_module(&inner)), 2);
    ck_assert_ptr_nonnull(tt_nn_linear_quantized(&d));
    tt_tensor *yq = tt_module_forward(m, x);
    ck_assert(!tt_test_same_values(yq, yf));
    double *f = tt_test_values(yf), *g = tt_test_values(yq);
    for (int64_t i = 0; i < tt_numel(yf); i++) ck_assert_double_le(fabs(f[i] - g[i]), 0.05);
    free(f), free(g);
    // The state is the f32 parameters as before: the same names, the same tensors.
    tt_params after;
    tt_params_init(&after);
    tt_module_state(m, &after, NULL);
    ck_assert_int_eq(after.n, before.n);
    for (int64_t i = 0; i < after.n; i++) {
        ck_assert_str_eq(after.items[i].name, before.items[i].name);
        ck_assert_ptr_eq(after.items[i].tensor, before.items[i].tensor);
    }
    ck_assert_int_eq(tt_dequantize_model(m), 6);
    ck_assert(tt_test_same_values(tt_module_forward(m, x), yf));
    tt_scope_end();
    tt_no_grad_end();
    tt_params_free(&after);
    tt_params_free(&before);
    tt_nn_sequential_free(&outer);
    tt_nn_sequential_free(&inner);
    tt_nn_linear_free(&d);
    tt_nn_qlinear_free(&q);
    tt_nn_mlp_free(&mlp);
    tt_nn_linear_free(&c);
    tt_nn_linear_free(&b);
    tt_nn_linear_free(&a);
}
END_TEST

// examples/lenet.c's model on (4, 1, 28, 28): conv-relu-pool twice, flatten, 3 Linears. The 3
// Linears run int8, the convolutions stay f32 (their output before the first Linear is the
// same bits); the logits stay near f32; dequantizing gives the f32 logits back bitwise.
START_TEST(test_lenet_shape) {
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    tt_nn_conv2d c1, c2;
    tt_nn_conv2d_init(&c1, 1, 16, 5, 5, &(tt_nn_conv2d_opts){.padding = {2, 2}}, true, &rng);
    tt_nn_conv2d_init(&c2, 16, 32, 5, 5, NULL, true, &rng);
    tt_nn_maxpool2d pool;
    tt_nn_maxpool2d_init(&pool, 2, 2, NULL, NULL);
    tt_nn_linear f1, f2, f3;
    tt_nn_linear_init(&f1, 32 * 5 * 5, 120, true, &rng);
    tt_nn_linear_init(&f2, 120, 84, true, &rng);
    tt_nn_linear_init(&f3, 84, 10, true, &rng);
    tt_nn_sequential feat, seq;
    tt_nn_sequential_init(&feat);
    tt_module fm[] = {tt_nn_conv2d_module(&c1), tt_act_module(TT_ACT_RELU),
                      tt_nn_maxpool2d_module(&pool), tt_nn_conv2d_module(&c2),
                      tt_act_module(TT_ACT_RELU), tt_nn_maxpool2d_module(&pool),
                      tt_nn_flatten_module(1, -1)};
    for (size_t i = 0; i < sizeof fm / sizeof fm[0]; i++) tt_nn_sequential_add(&feat, fm[i]);
    tt_nn_sequential_init(&seq);
    tt_module all[] = {tt_nn_sequential_module(&feat), tt_nn_linear_module(&f1),
                       tt_act_module(TT_ACT_RELU), tt_nn_linear_module(&f2),
                       tt_act_module(TT_ACT_RELU), tt_nn_linear_module(&f3)};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_nn_sequential_add(&seq, all[i]);
    tt_module m = tt_nn_sequential_module(&seq);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_rand(&rng, TT_F32, TT_SHAPE(4, 1, 28, 28));
    tt_tensor *hf = tt_nn_sequential_forward(&feat, x), *yf = tt_module_forward(m, x);
    ck_assert_int_eq(tt_quantize_dynamic(m), 3);
    ck_assert(tt_test_same_values(tt_nn_sequential_forward(&feat, x), hf));
    tt_tensor *yq = tt_module_forward(m, x);
    ck_assert(!tt_test_same_values(yq, yf));
    double *f = tt_test_values(yf), *g = tt_test_values(yq), scale = 0, worst = 0;
    for (int64_t i = 0; i < tt_numel(yf); i++) {
        scale = fmax(scale, fabs(f[i]));
        worst = fmax(worst, fabs(f[i] - g[i]));
    }
    printf("lenet-shaped int8: max |logit| %.4g, max |int8 - f32| %.3g\n", scale, worst);
    ck_assert_double_le(worst, 0.03 * scale);
    free(f), free(g);
    ck_assert_int_eq(tt_dequantize_model(m), 3);
    ck_assert(tt_test_same_values(tt_module_forward(m, x), yf));
    tt_scope_end();
    tt_no_grad_end();
    tt_nn_sequential_free(&seq);
    tt_nn_sequential_free(&feat);
    tt_nn_linear_free(&f3);
    tt_nn_linear_free(&f2);
    tt_nn_linear_free(&f1);
    tt_nn_conv2d_free(&c2);
    tt_nn_conv2d_free(&c1);
}
END_TEST

// The GPT: a block's tree holds its 6 Linears (q, k, v, o, fc, proj); tt_gpt_quantize gives
// the same logits bit for bit as quantizing each block's Linears and the untied head by hand.
START_TEST(test_gpt_blocks) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 16;
    c.block_size = 8;
    c.n_layer = 2;
    c.n_head = 2;
    c.n_kv_head = 0;  // n_head
    c.n_embd = 16;
    c.tie_weights = false;
    c.dropout = 0;
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_gpt g;
    ck_assert_msg(tt_gpt_init(&g, &c, &rng) == TT_OK, "%s", tt_last_error());
    tt_gpt_train(&g, false);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *tok = tt_randint(&rng, 0, 16, TT_SHAPE(2, 8));
    tt_gpt_quantize(&g);
    ck_assert(tt_gpt_is_quantized(&g));
    tt_tensor *a = tt_gpt_forward(&g, tok);
    tt_gpt_dequantize(&g);
    ck_assert(!tt_gpt_is_quantized(&g));
    ck_assert_ptr_null(tt_nn_linear_quantized(&g.lm_head));
    for (int l = 0; l < 2; l++) {
        tt_nn_block *b = &g.blocks[l];
        tt_nn_linear *each[] = {&b->attn.q_proj, &b->attn.k_proj, &b->attn.v_proj,
                                &b->attn.o_proj, &b->mlp.fc,      &b->mlp.proj};
        for (int i = 0; i < 6; i++) tt_nn_linear_quantize(each[i]);
    }
    tt_nn_linear_quantize(&g.lm_head);
    ck_assert(tt_test_same_values(tt_gpt_forward(&g, tok), a));
    for (int l = 0; l < 2; l++)
        ck_assert_int_eq(tt_dequantize_model(tt_nn_block_module(&g.blocks[l])), 6);
    for (int l = 0; l < 2; l++)
        ck_assert_int_eq(tt_quantize_dynamic(tt_nn_block_module(&g.blocks[l])), 6);
    tt_scope_end();
    tt_no_grad_end();
    tt_gpt_free(&g);  // frees the quantized Linears
}
END_TEST

// ---- static quantization ----

// A Linear with a fixed input range [-1.5, 2.5] on normal inputs (some beyond it: clamped):
// the output equals the double emulation with that range; a range of zeros gives the bias.
START_TEST(test_static_vs_emulation) {
    const int64_t K = 40, N = 24, M = 7;
    tt_rng rng;
    tt_rng_seed(&rng, 6);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, K, N, true, &rng);
    tt_nn_qlinear q;
    tt_nn_qlinear_from_linear(&q, &fc);
    tt_nn_qlinear_set_static(&q, -1.5, 2.5);
    ck_assert(q.act_static);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(M, K));
    tt_tensor *y = tt_nn_qlinear_forward(&q, x);
    double *xd = tt_test_values(x), *w = tt_test_values(fc.weight), *b = tt_test_values(fc.bias), *got = tt_test_values(y);
    double *ref = malloc((size_t)(M * N) * sizeof *ref), range[2] = {-1.5, 2.5}, scale = 0;
    int clamped = 0;
    for (int64_t i = 0; i < M * K; i++) clamped += xd[i] < -1.5 || xd[i] > 2.5;
    ck_assert_int_gt(clamped, 0);
    emulate_linear(ref, xd, w, b, M, N, K, range);
    for (int64_t i = 0; i < M * N; i++) scale = fmax(scale, fabs(ref[i]));
    for (int64_t i = 0; i < M * N; i++)
        ck_assert_msg(fabs(got[i] - ref[i]) <= 1e-6 * scale, "y[%lld] = %.9g, emulated %.9g",
                      (long long)i, got[i], ref[i]);
    tt_nn_qlinear_set_static(&q, 0, 0);
    double *only_bias = tt_test_values(tt_nn_qlinear_forward(&q, x));
    for (int64_t i = 0; i < M * N; i++) ck_assert_double_eq(only_bias[i], b[i % N]);
    free(xd), free(w), free(b), free(got), free(ref), free(only_bias);
    tt_scope_end();
    tt_no_grad_end();
    tt_nn_qlinear_free(&q);
    tt_nn_linear_free(&fc);
}
END_TEST

// Calibration of the reference MLP on its input: prepare attaches 3 observers and leaves the
// f32 output's bits alone; each observer holds the exact range of its Linear's input (the
// first: the input's); convert gives the double emulation with those ranges (to f32
// rounding), within 3% of the output's scale of f32; dequantizing restores f32 bitwise.
START_TEST(test_static_calibration_mlp) {
    ref_mlp m;
    ref_mlp_init(&m);
    const int64_t B = QUANT_BATCH, K = quant_widths[0], N = quant_widths[NQ_LAYERS];
    tt_module mod = tt_nn_sequential_module(&m.seq);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_from_data(TT_F32, TT_SHAPE(B, K), quant_x);
    tt_tensor *yf = tt_module_forward(mod, x);
    ck_assert_int_eq(tt_quantize_static_prepare(mod), NQ_LAYERS);
    for (int i = 0; i < NQ_LAYERS; i++)
        ck_assert_int_eq(tt_nn_linear_observer(&m.fc[i])->batches, 0);
    ck_assert(tt_test_same_values(tt_module_forward(mod, x), yf));
    // Two halves of the batch: the ranges merge.
    tt_module_forward(mod, tt_narrow(x, 0, 0, 2));
    tt_module_forward(mod, tt_narrow(x, 0, 2, B - 2));
    double lo = INFINITY, hi = -INFINITY, ranges[2 * NQ_LAYERS];
    for (int64_t i = 0; i < B * K; i++) lo = fmin(lo, quant_x[i]), hi = fmax(hi, quant_x[i]);
    ck_assert_double_eq(tt_nn_linear_observer(&m.fc[0])->min, lo);
    ck_assert_double_eq(tt_nn_linear_observer(&m.fc[0])->max, hi);
    for (int i = 0; i < NQ_LAYERS; i++) {
        ck_assert_int_eq(tt_nn_linear_observer(&m.fc[i])->batches, 3);
        ranges[2 * i] = tt_nn_linear_observer(&m.fc[i])->min;
        ranges[2 * i + 1] = tt_nn_linear_observer(&m.fc[i])->max;
    }
    ck_assert_double_eq(tt_nn_linear_observer(&m.fc[1])->min, 0);  // after a ReLU
    ck_assert_int_eq(tt_quantize_static_convert(mod), NQ_LAYERS);
    for (int i = 0; i < NQ_LAYERS; i++) {
        ck_assert_ptr_null(tt_nn_linear_observer(&m.fc[i]));
        ck_assert(tt_nn_linear_quantized(&m.fc[i]) && tt_nn_linear_quantized(&m.fc[i])->act_static);
    }
    ck_assert_int_eq(tt_quantize_static_convert(mod), 0);  // nothing observed any more
    tt_tensor *ys = tt_module_forward(mod, x);
    double *got = tt_test_values(ys), *f32 = tt_test_values(yf), *xd = tt_test_values(x);
    double *emu = malloc((size_t)(B * N) * sizeof *emu), scale = 0, worst_emu = 0, worst = 0;
    emulate_mlp(emu, &m, xd, B, ranges);
    for (int64_t i = 0; i < B * N; i++) {
        scale = fmax(scale, fabs(f32[i]));
        worst_emu = fmax(worst_emu, fabs(got[i] - emu[i]));
        worst = fmax(worst, fabs(got[i] - f32[i]));
    }
    printf("static int8 MLP: max |static - emulation| %.3g, |static - f32| %.3g (max |y| "
           "%.4g)\n", worst_emu, worst, scale);
    ck_assert_msg(worst_emu <= 1e-5 * scale, "static output %.3g from the emulation", worst_emu);
    ck_assert_msg(worst > 0 && worst <= 0.03 * scale, "static output %.3g from f32", worst);
    ck_assert_int_eq(tt_dequantize_model(mod), NQ_LAYERS);
    ck_assert(tt_test_same_values(tt_module_forward(mod, x), yf));
    // Prepared and never converted: dequantize frees the observers (counts no quantized one).
    ck_assert_int_eq(tt_quantize_static_prepare(mod), NQ_LAYERS);
    ck_assert_int_eq(tt_dequantize_model(mod), 0);
    ck_assert_ptr_null(tt_nn_linear_observer(&m.fc[0]));
    ck_assert_int_eq(tt_quantize_static_prepare(mod), NQ_LAYERS);  // freed by tt_nn_linear_free
    free(got), free(f32), free(xd), free(emu);
    tt_scope_end();
    tt_no_grad_end();
    ref_mlp_free(&m);
}
END_TEST

// The compressed Linears are modules swapped in for a tt_nn_linear (tt_nn_linear.swap): int8 and
// the observer keep the f32 weight and bias as the Linear's parameters (the same tensors); low
// rank lists its two factors under Sequential's names; swapping out leaves a plain Linear whose
// output is the f32 one bit for bit; each accessor answers only for its own kind.
static double max_abs_diff(const tt_tensor *a, const tt_tensor *b) {
    double *x = tt_test_values(a), *y = tt_test_values(b), d = 0;
    for (int64_t i = 0; i < tt_numel(a); i++) d = fmax(d, fabs(x[i] - y[i]));
    free(x), free(y);
    return d;
}

static void assert_f32_params(const tt_nn_linear *fc) {
    tt_params p;
    tt_params_init(&p);
    tt_nn_linear_params(fc, &p, "fc");
    ck_assert_int_eq(p.n, 2);
    ck_assert_ptr_eq(tt_params_get(&p, "fc.weight"), fc->weight);
    ck_assert_ptr_eq(tt_params_get(&p, "fc.bias"), fc->bias);
    tt_params_free(&p);
}

START_TEST(test_swapped_modules) {
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 6, 5, true, &rng);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(4, 6));
    tt_tensor *y32 = tt_nn_linear_forward(&fc, x);
    ck_assert_ptr_null(fc.swap.ops);
    ck_assert_ptr_null(tt_nn_linear_quantized(&fc));
    ck_assert_ptr_null(tt_nn_linear_observer(&fc));
    ck_assert_ptr_null(tt_nn_linear_factors(&fc));

    tt_nn_linear_quantize(&fc);
    ck_assert_str_eq(fc.swap.ops->type, "QuantizedLinear");
    ck_assert_ptr_nonnull(tt_nn_linear_quantized(&fc));
    ck_assert_ptr_null(tt_nn_linear_observer(&fc));
    assert_f32_params(&fc);
    double d = max_abs_diff(tt_nn_linear_forward(&fc, x), y32);
    ck_assert_msg(d > 0 && d < 0.05, "int8 differs from f32 by %g", d);

    ck_assert_int_eq(tt_quantize_static_prepare(tt_nn_linear_module(&fc)), 1);
    ck_assert_str_eq(fc.swap.ops->type, "ObservedLinear");
    ck_assert_ptr_null(tt_nn_linear_quantized(&fc));
    assert_f32_params(&fc);
    ck_assert(tt_test_same_values(tt_nn_linear_forward(&fc, x), y32));  // f32 while observing
    ck_assert_int_eq(tt_nn_linear_observer(&fc)->batches, 1);
    tt_nn_linear_dequantize(&fc);
    ck_assert_ptr_null(fc.swap.ops);
    ck_assert(tt_test_same_values(tt_nn_linear_forward(&fc, x), y32));

    tt_nn_linear_low_rank(&fc, 2);
    ck_assert_str_eq(fc.swap.ops->type, "LowRankLinear");
    ck_assert_ptr_null(fc.weight);
    const tt_nn_linear *f = tt_nn_linear_factors(&fc);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f[0].weight->shape[0], 2);
    ck_assert_int_eq(f[1].weight->shape[1], 2);
    tt_params p;
    tt_params_init(&p);
    tt_nn_linear_params(&fc, &p, "fc");
    ck_assert_int_eq(p.n, 3);
    ck_assert_ptr_eq(tt_params_get(&p, "fc.0.weight"), f[0].weight);
    ck_assert_ptr_eq(tt_params_get(&p, "fc.1.weight"), f[1].weight);
    ck_assert_ptr_eq(tt_params_get(&p, "fc.1.bias"), f[1].bias);
    tt_params_free(&p);
    ck_assert_ptr_null(tt_nn_linear_quantized(&fc));
    ck_assert_int_eq(tt_quantize_dynamic(tt_nn_linear_module(&fc)), 0);  // no dense weight
    ck_assert_int_eq(tt_dequantize_model(tt_nn_linear_module(&fc)), 0);
    ck_assert_ptr_eq(tt_nn_linear_factors(&fc), f);  // dequantizing keeps the factors
    ck_assert_int_eq(tt_nn_linear_forward(&fc, x)->shape[1], 5);
    tt_scope_end();
    tt_no_grad_end();
    tt_nn_linear_free(&fc);
}
END_TEST

// ---- errors ----

static tt_nn_linear ab_fc;

static void abort_setup(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_linear_init(&ab_fc, 8, 4, true, &rng);
}

static void abort_teardown(void) { tt_nn_linear_free(&ab_fc); }

START_TEST(test_abort_convert_uncalibrated) {
    tt_expect_abort("tt_quantize_static_convert: a Linear (in=8, out=4) has an observer that "
                    "saw no input; run calibration batches");
    tt_quantize_static_prepare(tt_nn_linear_module(&ab_fc));
    tt_quantize_static_convert(tt_nn_linear_module(&ab_fc));
}
END_TEST

START_TEST(test_abort_static_range) {
    tt_expect_abort("the range [2, 1] must be ordered");
    tt_nn_linear_quantize(&ab_fc);
    tt_nn_qlinear_set_static(tt_nn_linear_quantized(&ab_fc), 2, 1);
}
END_TEST

START_TEST(test_abort_uninitialized) {
    tt_expect_abort("tt_quantize_dynamic: the module is not initialized");
    tt_quantize_dynamic((tt_module){0});
}
END_TEST

START_TEST(test_abort_dequantize_uninitialized) {
    tt_expect_abort("tt_dequantize_model: the module is not initialized");
    tt_dequantize_model((tt_module){0});
}
END_TEST

static Suite *quantize_suite(void) {
    Suite *s = suite_create("quantize");
    TCase *tc = tt_tcase("dynamic");
    tcase_add_test(tc, test_mlp_vs_emulation_and_torch);
    tcase_add_test(tc, test_mlp_module);
    tcase_add_test(tc, test_nested_counts);
    tcase_add_test(tc, test_lenet_shape);
    tcase_add_test(tc, test_gpt_blocks);
    tcase_add_test(tc, test_static_vs_emulation);
    tcase_add_test(tc, test_static_calibration_mlp);
    tcase_add_test(tc, test_swapped_modules);
    suite_add_tcase(s, tc);
    TCase *ab = tt_tcase_aborts("aborts_quantize");
    tcase_add_test_raise_signal(ab, test_abort_uninitialized, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dequantize_uninitialized, SIGABRT);
    tcase_add_checked_fixture(ab, abort_setup, abort_teardown);
    tcase_add_test_raise_signal(ab, test_abort_convert_uncalibrated, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_static_range, SIGABRT);
    suite_add_tcase(s, ab);
    return s;
}

int main(void) { return tt_test_run(quantize_suite()); }

// The bf16 weight format (TT_QUANT_BF16): the packed product against a scalar model of its
// arithmetic (bit for bit, on every SIMD path the CPU has, 1 and 2 threads, every shape edge)
// and against a double reference within a proved bound; a Linear in bf16, a GPT through BF16
// and F16 safetensors; the refusals. A trained GPT in bf16: tests/test_qlinear.c.
#include "test_util.h"

#include "../models/gpt/gpt.h"
#include "../tensor/kernels/bf16_linear.h"
#include "../tensor/kernels/cpu.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const tt_cpu_level paths[] = {TT_CPU_GENERIC, TT_CPU_AVX2, TT_CPU_AVX512,
                                     TT_CPU_AVX512BF16};
#define NPATHS 4

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static float f32_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
// f32 -> bf16 -> f32, round to nearest even, written here from the definition (finite inputs).
static float round_bf16(float x) {
    uint32_t u = bits_of(x);
    u += 0x7fffu + ((u >> 16) & 1u);
    return f32_of(u & 0xffff0000u);
}

// The arithmetic bf16_linear.h defines, in scalar C: per output, blocks of 384 steps of k, each
// a chain from +0 over k pairs, the odd step's product then the even one's (both exact in
// float, so mul then add rounds once), and y = bias + block 0, then y + each later block.
// acc is volatile: GCC 12 at -O2 vectorizes this in-order chain when it is inlined for M = N = 1
// and gets it wrong (the sum comes out far off), so the model is kept scalar.
static void model(float *y, const float *x, const float *W, const float *b, int64_t M,
                  int64_t N, int64_t K) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float out = 0;
            for (int64_t k0 = 0; k0 < K; k0 += TT_K_BF16_KC) {
                volatile float acc = 0;
                int64_t ke = k0 + TT_K_BF16_KC < K ? k0 + TT_K_BF16_KC : K;
                for (int64_t k = k0; k < ke; k += 2) {
                    float xo = k + 1 < K ? round_bf16(x[m * K + k + 1]) : 0;
                    float wo = k + 1 < K ? round_bf16(W[n * K + k + 1]) : 0;
                    acc += xo * wo;
                    acc += round_bf16(x[m * K + k]) * round_bf16(W[n * K + k]);
                }
                out = k0 > 0 ? out + acc : b ? b[n] + acc : acc;
            }
            y[m * N + n] = out;
        }
}

static uint64_t rng_state = 1;
static float rnd(void) {  // uniform in [-1, 1)
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2 - 1);
}

// M, N, K: M = 1 (the matrix-vector kernel) and M > 1 (the GEMM), N and K off every vector
// width (16, 32, 64 channels; odd K: a half pair), K over one, two and three blocks of 384.
static const int64_t shapes[][3] = {
    {1, 1, 1},    {1, 33, 3},    {1, 64, 384},  {1, 65, 385},   {1, 97, 1001}, {1, 768, 768},
    {2, 17, 31},  {5, 1, 7},     {13, 47, 385}, {12, 96, 768},  {64, 100, 800},
    {520, 70, 130}, {37, 130, 1153},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

// The product on every path and 1 and 2 threads equals the scalar model bit for bit, and the
// double value of the bf16-rounded product within the bound of f32 summation: |y - exact| <=
// gamma(n) (|bias| + sum |products|), gamma(n) = n u / (1 - n u), u = 2^-24, n = K + blocks
// (the chain's additions per output; Higham, Accuracy and Stability, (4.4)).
START_TEST(test_bf16w_vs_model) {
    int64_t M = shapes[_i][0], N = shapes[_i][1], K = shapes[_i][2];
    rng_state = 17 + (uint64_t)_i;
    float *x = malloc((size_t)(M * K) * sizeof *x), *W = malloc((size_t)(N * K) * sizeof *W);
    float *b = malloc((size_t)N * sizeof *b), *want = malloc((size_t)(M * N) * sizeof *want);
    float *got = malloc((size_t)(M * N) * sizeof *got);
    for (int64_t i = 0; i < M * K; i++) x[i] = 3 * rnd();
    for (int64_t i = 0; i < N * K; i++) W[i] = rnd() / 8;
    for (int64_t i = 0; i < N; i++) b[i] = rnd();
    bool with_bias = _i % 2 == 0;
    model(want, x, W, with_bias ? b : NULL, M, N, K);
    double n_add = (double)K + (double)((K + TT_K_BF16_KC - 1) / TT_K_BF16_KC);
    double gamma = n_add * 0x1p-24 / (1 - n_add * 0x1p-24);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double exact = with_bias ? b[n] : 0, mag = fabs(exact);
            for (int64_t k = 0; k < K; k++) {
                double t = (double)round_bf16(x[m * K + k]) * (double)round_bf16(W[n * K + k]);
                exact += t;
                mag += fabs(t);
            }
            ck_assert_msg(fabs(want[m * N + n] - exact) <= gamma * mag, "shape %lld %lld %lld: "
                          "y %.9g, exact %.12g, bound %.3g", (long long)M, (long long)N,
                          (long long)K, want[m * N + n], exact, gamma * mag);
        }
    tt_cpu_level prev = tt_cpu_get_level();
    for (int p = 0; p < NPATHS; p++) {
        if (paths[p] > tt_cpu_max_level()) continue;
        tt_cpu_set_level(paths[p]);
        tt_k_bf16w w;
        tt_k_bf16w_init(&w, W, N, K);  // each path's packer
        ck_assert_int_eq(tt_k_bf16w_bytes(&w), N * ((K + 1) / 2) * 4);
        for (int t = 1; t <= 2; t++) {
            tt_set_num_threads(t);
            memset(got, 0xff, (size_t)(M * N) * sizeof *got);
            tt_k_bf16w_linear(got, x, &w, with_bias ? b : NULL, M);
            for (int64_t i = 0; i < M * N; i++)
                ck_assert_msg(bits_of(got[i]) == bits_of(want[i]), "%s (%s), %d threads, shape "
                              "%lld %lld %lld: y[%lld] = %.9g, the model %.9g",
                              tt_cpu_level_name(paths[p]), tt_k_bf16w_gemv_name(), t,
                              (long long)M, (long long)N, (long long)K, (long long)i, got[i],
                              want[i]);
        }
        tt_k_bf16w_free(&w);
    }
    tt_set_num_threads(2);
    tt_cpu_set_level(prev);
    free(x), free(W), free(b), free(want), free(got);
}
END_TEST

// The same bits as the bf16 GEMM of the autocast path (tt_k_gemm_bias_bf16, bf16.h) with A = x,
// B = W^T pre-cast to bf16: one arithmetic for both.
START_TEST(test_bf16w_vs_gemm_bf16) {
    int64_t M = 37, N = 130, K = 1153;
    rng_state = 5;
    float *x = malloc((size_t)(M * K) * sizeof *x), *W = malloc((size_t)(N * K) * sizeof *W);
    tt_bf16 *Wh = malloc((size_t)(N * K) * sizeof *Wh);
    float *b = malloc((size_t)N * sizeof *b), *c = malloc((size_t)(M * N) * sizeof *c);
    float *y = malloc((size_t)(M * N) * sizeof *y);
    for (int64_t i = 0; i < M * K; i++) x[i] = rnd();
    for (int64_t i = 0; i < N * K; i++) W[i] = rnd(), Wh[i] = tt_bf16_from_f32(W[i]);
    for (int64_t i = 0; i < N; i++) b[i] = rnd();
    tt_k_gemm_bias_bf16(M, N, K, x, TT_K_SRC_F32, K, 1, Wh, TT_K_SRC_BF16, 1, K, b, c, N);
    tt_k_bf16w w;
    tt_k_bf16w_init(&w, W, N, K);
    tt_k_bf16w_linear(y, x, &w, b, M);
    for (int64_t i = 0; i < M * N; i++) ck_assert_uint_eq(bits_of(y[i]), bits_of(c[i]));
    tt_k_bf16w_linear(y, x + 5 * K, &w, b, 1);  // one row: the matrix-vector kernel
    for (int64_t n = 0; n < N; n++) ck_assert_uint_eq(bits_of(y[n]), bits_of(c[5 * N + n]));
    tt_k_bf16w_free(&w);
    free(x), free(W), free(Wh), free(b), free(c), free(y);
}
END_TEST

// A Linear in bf16: module type, bytes, a 3-D transposed input (read through a contiguous
// copy) gives the kernel's values, tt_quant_parse knows "bf16", NONE goes back to f32 bits.
START_TEST(test_linear_bf16) {
    tt_quant q = TT_QUANT_NONE;
    ck_assert_int_eq(tt_quant_parse("bf16", &q), TT_OK);
    ck_assert_int_eq(q, TT_QUANT_BF16);
    ck_assert_str_eq(tt_quant_name(q), "bf16");
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 40, 24, true, &rng);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_transpose(tt_randn(&rng, TT_F32, TT_SHAPE(2, 40, 3)), 1, 2);  // (2, 3, 40)
    tt_tensor *f32 = tt_nn_linear_forward(&fc, x);
    tt_nn_linear_quantize_as(&fc, TT_QUANT_BF16);
    ck_assert_int_eq(tt_nn_linear_quantization(&fc), TT_QUANT_BF16);
    ck_assert_str_eq(fc.swap.ops->type, "BF16Linear");
    ck_assert_int_eq(tt_nn_linear_quantized_bytes(&fc), 24 * 40 * 2 + 24 * 4);
    tt_tensor *y = tt_nn_linear_forward(&fc, x);  // (2, 3, 24)
    ck_assert_int_eq(y->ndim, 3);
    ck_assert_int_eq(y->shape[2], 24);
    double *xd = tt_test_values(x), *wd = tt_test_values(fc.weight), *bd = tt_test_values(fc.bias);
    float xs[6 * 40], ws[24 * 40], bs[24], want[6 * 24];
    for (int i = 0; i < 6 * 40; i++) xs[i] = (float)xd[i];
    for (int i = 0; i < 24 * 40; i++) ws[i] = (float)wd[i];
    for (int i = 0; i < 24; i++) bs[i] = (float)bd[i];
    free(xd), free(wd), free(bd);
    model(want, xs, ws, bs, 6, 24, 40);
    double *got = tt_test_values(y), diff = 0, *ref = tt_test_values(f32);
    for (int i = 0; i < 6 * 24; i++) {
        ck_assert_uint_eq(bits_of((float)got[i]), bits_of(want[i]));
        diff = fmax(diff, fabs(got[i] - ref[i]));
    }
    ck_assert_msg(diff > 0 && diff < 0.05, "bf16 vs f32: max |diff| %g", diff);
    free(got), free(ref);
    tt_nn_linear_quantize_as(&fc, TT_QUANT_NONE);
    ck_assert(tt_test_same_values(tt_nn_linear_forward(&fc, x), f32));
    tt_scope_end();
    tt_no_grad_end();
    tt_nn_linear_free(&fc);
}
END_TEST

// ---- a GPT through safetensors ----

// Safetensors in BF16 and F16 (gpt export --dtype): a GPT-2-shaped model whose parameters are
// all bf16 values (so both files hold them exactly) saved in each dtype and loaded back runs
// with --quantize bf16 to the same logits, bit for bit, as the model it came from; a file in
// F16 of values that are not all f16 (bf16's range is wider) stays within f16's rounding.
START_TEST(test_safetensors_bf16_roundtrip) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 50;
    c.block_size = 16;
    c.n_layer = 2;
    c.n_head = c.n_kv_head = 4;
    c.n_embd = 32;
    c.bias = true;
    c.activation = TT_ACT_GELU_TANH;
    tt_rng rng;
    tt_rng_seed(&rng, 8);
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    for (int i = 0; i < m.params.n; i++) {  // every parameter made a bf16 value
        tt_tensor *t = m.params.items[i].tensor;
        float *d = tt_data_f32(t);
        for (int64_t j = 0; j < tt_numel(t); j++) d[j] = round_bf16(d[j] + 0.01f * (float)(j % 7));
    }
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_empty(TT_I32, TT_SHAPE(1, 16));
    for (int t = 0; t < 16; t++) ((int32_t *)tt_data(x))[t] = (t * 7) % 50;
    tt_gpt_quantize_as(&m, TT_QUANT_BF16);
    tt_tensor *ref = tt_gpt_forward(&m, x);  // (1, 16, 50)
    static const tt_st_dtype dts[2] = {TT_ST_BF16, TT_ST_F16};
    for (int d = 0; d < 2; d++) {
        char path[128];
        snprintf(path, sizeof path, "/tmp/test_bf16_st_%ld_%d.safetensors", (long)getpid(), d);
        ck_assert_int_eq(tt_gpt_save_hf(&m, path, dts[d]), TT_OK);
        tt_gpt back;
        ck_assert_int_eq(tt_gpt_load_hf(&back, path, 4), TT_OK);
        unlink(path);
        tt_gpt_quantize_as(&back, TT_QUANT_BF16);
        tt_tensor *got = tt_gpt_forward(&back, x);
        if (d == 0) {
            ck_assert(tt_test_same_values(got, ref));
        } else {
            double *a = tt_test_values(got), *b = tt_test_values(ref), diff = 0;
            for (int64_t i = 0; i < tt_numel(ref); i++) diff = fmax(diff, fabs(a[i] - b[i]));
            free(a), free(b);
            ck_assert_msg(diff < 0.02, "f16 file: max |logit diff| %g", diff);
        }
        tt_gpt_free(&back);
    }
    tt_scope_end();
    tt_no_grad_end();
    tt_gpt_free(&m);
}
END_TEST

// ---- refusals ----

static tt_nn_linear ab_fc;
static void abort_setup(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_linear_init(&ab_fc, 8, 4, true, &rng);
    tt_nn_linear_quantize_as(&ab_fc, TT_QUANT_BF16);
}
static void abort_teardown(void) { tt_nn_linear_free(&ab_fc); }

START_TEST(test_abort_grad) {
    tt_expect_abort("tt_nn_linear_forward: the bf16 Linear (in=8, out=4) is inference only");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(3, 8));
    tt_set_requires_grad(x, true);
    tt_nn_linear_forward(&ab_fc, x);
}
END_TEST

START_TEST(test_abort_dtype) {
    tt_expect_abort("tt_nn_linear_forward: input (3, 8) must be f32, got f64");
    tt_no_grad_begin();
    tt_nn_linear_forward(&ab_fc, tt_zeros(TT_F64, TT_SHAPE(3, 8)));
}
END_TEST

START_TEST(test_abort_features) {
    tt_expect_abort("tt_nn_linear_forward: input (3, 7) must end in in_features=8");
    tt_no_grad_begin();
    tt_nn_linear_forward(&ab_fc, tt_zeros(TT_F32, TT_SHAPE(3, 7)));
}
END_TEST

int main(void) {
    Suite *s = suite_create("qlinear_bf16");
    TCase *k = tt_tcase("kernel");
    tcase_add_loop_test(k, test_bf16w_vs_model, 0, NSHAPES);
    tcase_add_test(k, test_bf16w_vs_gemm_bf16);
    suite_add_tcase(s, k);
    TCase *lin = tt_tcase("linear");
    tcase_add_test(lin, test_linear_bf16);
    tcase_add_test(lin, test_safetensors_bf16_roundtrip);
    suite_add_tcase(s, lin);
    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_checked_fixture(ab, abort_setup, abort_teardown);
    tcase_add_test_raise_signal(ab, test_abort_grad, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_features, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

// Check suite of the 4-bit weight GEMM (tensor/kernels/q4gemm.c, q4gemm_avx2.c,
// q4gemm_avx512.c) and the int4 Linear (compress/qlinear_int4.c): f16 conversions, the weight
// block quantizer against hand-computed blocks and a brute-force reference (rounding, zeros,
// NaN and inf), the activation quantizer, the packed layout, every SIMD path and thread count
// against a scalar reference built from the packed bytes (bit for bit), the error against f32
// within the bound the scales imply, and the module's refusals.
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tensor/kernels/cpu.h"
#include "tensor/kernels/q4gemm.h"

// Letters: Y (M, N) = X (M, K) W^T, W (N, K); KB = ceil(K / 32).

// ---- helpers ----

static uint64_t rng_state;

static double urand(void) { return tt_test_urand(&rng_state); }  // [-1, 1)

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

static float *rand_f32(int64_t n, double amp) {
    float *p = xmalloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(amp * urand());
    return p;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The CPU levels that pick a different int4 kernel, up to the best this machine has.
static int supported_paths(tt_cpu_level *out) {
    int n = 0;
    const char *last = "";
    for (int p = TT_CPU_GENERIC; p <= (int)tt_cpu_max_level(); p++) {
        tt_cpu_level prev = tt_cpu_set_level((tt_cpu_level)p);
        if (strcmp(tt_k_q4gemm_kernel_name(), last) != 0) out[n++] = (tt_cpu_level)p;
        last = tt_k_q4gemm_kernel_name();
        tt_cpu_set_level(prev);
    }
    return n;
}

// Block b of channel n's panel by the layout of q4gemm.h (pairs of panels, blocks interleaved).
static const uint8_t *packed_block(const tt_k_q4weight *qw, int64_t n, int64_t b) {
    int64_t p = n / 16, KB = cdiv(qw->K, 32), paired = 2 * (p / 2) + 1 < cdiv(qw->N, 16);
    return qw->packed + (p / 2) * 2 * KB * 288 + b * (paired ? 2 : 1) * 288 + (p % 2) * 288;
}

// Nibble e[n, k] and scale d[n, b] read from the packed bytes by the layout of q4gemm.h.
static int packed_nibble(const tt_k_q4weight *qw, int64_t n, int64_t k) {
    const uint8_t *blk = packed_block(qw, n, k / 32);
    int kk = (int)(k % 32);
    uint8_t byte = blk[64 * ((kk % 16) / 4) + 4 * (n % 16) + kk % 4];
    return kk < 16 ? byte & 15 : byte >> 4;
}

static uint16_t packed_scale(const tt_k_q4weight *qw, int64_t n, int64_t b) {
    const uint8_t *blk = packed_block(qw, n, b);
    return (uint16_t)(blk[256 + 2 * (n % 16)] | blk[257 + 2 * (n % 16)] << 8);
}

// ---- f16 ----

START_TEST(test_f16) {
    ck_assert_uint_eq(tt_k_f32_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(tt_k_f32_to_f16(-2.0f), 0xc000);
    ck_assert_uint_eq(tt_k_f32_to_f16(65504.0f), 0x7bff);
    ck_assert_uint_eq(tt_k_f32_to_f16(65519.0f), 0x7bff);
    ck_assert_uint_eq(tt_k_f32_to_f16(65520.0f), 0x7c00);  // rounds up to inf
    ck_assert_uint_eq(tt_k_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);        // tie: to even
    ck_assert_uint_eq(tt_k_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);    // tie: to even
    ck_assert_uint_eq(tt_k_f32_to_f16(0x1p-24f), 0x0001);               // smallest subnormal
    ck_assert_uint_eq(tt_k_f32_to_f16(0x1p-25f), 0x0000);               // tie to even: 0
    ck_assert_uint_eq(tt_k_f32_to_f16(3 * 0x1p-25f), 0x0002);           // tie to even: 2
    ck_assert_uint_eq(tt_k_f32_to_f16(NAN) & 0x7e00, 0x7e00);
    ck_assert_float_eq(tt_k_f16_to_f32(0x3555), 0.333251953125f);
    ck_assert_float_eq(tt_k_f16_to_f32(0x0001), 0x1p-24f);
    for (uint32_t h = 0; h < 65536; h++) {  // every non-NaN half survives the round trip
        float f = tt_k_f16_to_f32((uint16_t)h);
        if (f != f) continue;
        ck_assert_msg(tt_k_f32_to_f16(f) == h, "0x%04x -> %g -> 0x%04x", h, (double)f,
                      tt_k_f32_to_f16(f));
    }
}
END_TEST

// ---- weight blocks ----

// The scheme of q4gemm.h in double with libm's rint: the least-squares candidate scale.
static uint16_t ref_block(uint8_t *e, const float *w, int n) {
    static const double div[] = {-8, -7.75, -7.5, -7.25, -7, 7};
    double amax = 0, m = 0;
    for (int k = 0; k < n; k++)
        if (fabs(w[k]) > amax) amax = fabs(w[k]), m = w[k];
    uint16_t best = 0;
    double best_err = INFINITY;
    for (int i = 0; i < 6 && amax > 0; i++) {
        uint16_t h = tt_k_f32_to_f16((float)(m / div[i]));
        double d = tt_k_f16_to_f32(h), err = 0;
        for (int k = 0; k < n; k++) {
            double q = fmin(15, fmax(0, rint((double)(w[k] * (1.0f / (float)d))) + 8));
            err += (w[k] - d * (q - 8)) * (w[k] - d * (q - 8));
        }
        if (err < best_err) best_err = err, best = h;
    }
    double d = tt_k_f16_to_f32(best);
    for (int k = 0; k < n; k++) {
        double q = rint((double)(w[k] * (1.0f / (float)d)));
        e[k] = d == 0 ? 8 : (uint8_t)fmin(15, fmax(0, q + 8));
    }
    return best;
}

// By hand: a block of exact multiples of 0.5 whose largest |w| is -4 has d = 0.5 and no error;
// negated, d = -0.5 and the same nibbles. Ties go to even: with d = 1, 2.5 -> 2, 3.5 -> 4,
// -1.5 -> -2.
START_TEST(test_block_by_hand) {
    float w[32];
    uint8_t e[32];
    for (int k = 0; k < 32; k++) w[k] = 0.5f * (float)(k % 16 - 8);
    ck_assert_uint_eq(tt_k_q4_quantize_block(e, w, 32), 0x3800);  // 0.5
    for (int k = 0; k < 32; k++) ck_assert_int_eq(e[k], k % 16);
    for (int k = 0; k < 32; k++) w[k] = -w[k];
    ck_assert_uint_eq(tt_k_q4_quantize_block(e, w, 32), 0xb800);  // -0.5
    for (int k = 0; k < 32; k++) ck_assert_int_eq(e[k], k % 16);
    for (int k = 0; k < 32; k++) w[k] = (float)(k % 16 - 8);
    w[10] = 2.5f;
    w[11] = 3.5f;
    w[27] = -1.5f;
    ck_assert_uint_eq(tt_k_q4_quantize_block(e, w, 32), 0x3c00);  // 1.0
    ck_assert_int_eq(e[10], 10);
    ck_assert_int_eq(e[11], 12);
    ck_assert_int_eq(e[27], 6);
    ck_assert_int_eq(e[0], 0);
    ck_assert_int_eq(e[31], 15);
    memset(w, 0, sizeof w);  // zeros: scale 0, nibbles 8
    ck_assert_uint_eq(tt_k_q4_quantize_block(e, w, 32), 0);
    for (int k = 0; k < 32; k++) ck_assert_int_eq(e[k], 8);
    w[3] = NAN;  // NaN, inf: scale NaN
    ck_assert_uint_eq(tt_k_q4_quantize_block(e, w, 32), 0x7e00);
    w[3] = -INFINITY;
    ck_assert_uint_eq(tt_k_q4_quantize_block(e, w, 5), 0x7e00);
    for (int k = 0; k < 5; k++) ck_assert_int_eq(e[k], 8);
}
END_TEST

// Random blocks of every length against the reference, and within the error a scale implies.
START_TEST(test_block_reference) {
    rng_state = 7;
    for (int t = 0; t < 400; t++) {
        int n = 1 + t % 32;
        float *w = rand_f32(n, t % 3 == 0 ? 1e-3 : 2.0);
        uint8_t e[32], r[32];
        uint16_t h = tt_k_q4_quantize_block(e, w, n);
        ck_assert_uint_eq(h, ref_block(r, w, n));
        ck_assert_mem_eq(e, r, (size_t)n);
        double d = fabs(tt_k_f16_to_f32(h)), amax = 0;
        for (int k = 0; k < n; k++) amax = fmax(amax, fabs(w[k]));
        ck_assert(d <= amax / 7 * (1 + 1e-3) && d >= amax / 8.5);
        for (int k = 0; k < n; k++)  // within a step: clipping at 7 d costs at most one
            ck_assert(fabs(w[k] - tt_k_f16_to_f32(h) * (e[k] - 8)) <= d * (1 + 1e-6));
        free(w);
    }
}
END_TEST

// ---- activations ----

START_TEST(test_quantize_act) {
    float x[2 * 40] = {127, -63.5f, 0.5f, 1.5f, -127, 64};  // row 0: K = 40, two blocks
    x[33] = 2.0f;                                            // row 0 block 1: s = 2 / 127
    x[40 + 5] = NAN;                                         // row 1 block 0: NaN
    int8_t q[2 * 64];
    float s[4];
    int32_t c[4];
    memset(q, 55, sizeof q);
    tt_k_q4_quantize_act(q, s, c, x, 40, 2, 40);
    ck_assert_float_eq(s[0], 1.0f);
    ck_assert_int_eq(q[0], 127);
    ck_assert_int_eq(q[1], -64);  // -63.5: tie to even
    ck_assert_int_eq(q[2], 0);    // 0.5: tie to even
    ck_assert_int_eq(q[3], 2);
    ck_assert_int_eq(q[4], -127);
    ck_assert_int_eq(q[5], 64);
    ck_assert_int_eq(c[0], -8 * (127 - 64 + 0 + 2 - 127 + 64));
    ck_assert_float_eq(s[1], 2.0f / 127.0f);
    ck_assert_int_eq(q[32 + 1], 127);
    for (int k = 8; k < 32; k++) ck_assert_int_eq(q[32 + k], 0);  // past K: 0
    ck_assert_int_eq(c[1], -8 * 127);
    ck_assert(isnan(s[2]));
    ck_assert_int_eq(c[2], 0);
    for (int k = 0; k < 32; k++) ck_assert_int_eq(q[64 + k], 0);
    ck_assert_float_eq(s[3], 0.0f);  // zeros
    ck_assert_int_eq(c[3], 0);
}
END_TEST

// ---- products ----

// y (M, N) by the definition of q4gemm.h from the packed bytes and the quantized activations:
// the block sums in int64, then the f32 accumulation in the documented order.
static void ref_product(float *y, const float *x, const tt_k_q4weight *qw, const float *bias,
                        int64_t M) {
    int64_t N = qw->N, K = qw->K, KB = cdiv(K, 32);
    int8_t *q = xmalloc((size_t)(M * KB * 32));
    float *s = xmalloc((size_t)(M * KB) * sizeof *s);
    int32_t *c = xmalloc((size_t)(M * KB) * sizeof *c);
    tt_k_q4_quantize_act(q, s, c, x, K, M, K);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float acc = 0;
            for (int64_t b = 0; b < KB; b++) {
                int64_t S = 0;
                for (int64_t k = 32 * b; k < 32 * b + 32 && k < K; k++)
                    S += (int64_t)q[m * KB * 32 + k] * (packed_nibble(qw, n, k) - 8);
                float d = tt_k_f16_to_f32(packed_scale(qw, n, b));
                acc = acc + (float)S * (d * s[m * KB + b]);
            }
            y[m * N + n] = bias ? acc + bias[n] : acc;
        }
    free(q);
    free(s);
    free(c);
}

typedef struct qcase {
    int64_t M, N, K;
} qcase;

static const qcase cases[] = {{1, 1, 1},   {1, 17, 33},  {3, 16, 64},  {5, 40, 100},
                              {2, 33, 31}, {70, 33, 95}, {9, 50, 768}, {1, 300, 200}};

// Every path and 1 or 2 threads give the reference's bits (NaN where it has NaN); the panel's
// padding and the nibbles past K are as documented.
START_TEST(test_paths_threads) {
    tt_cpu_level paths[TT_CPU_LEVEL_COUNT];
    int np = supported_paths(paths), nt0 = tt_get_num_threads();
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const qcase *cs = &cases[ci];
        rng_state = 200 + ci;
        float *w = rand_f32(cs->N * cs->K, 0.5), *x = rand_f32(cs->M * cs->K, 3.0);
        float *bias = ci % 2 ? rand_f32(cs->N, 1.0) : NULL;
        if (ci == 3) x[7] = NAN;                            // row 0's first block: NaN
        if (ci == 4) for (int64_t k = 0; k < cs->K; k++) x[cs->K + k] = 0;  // a row of zeros
        tt_k_q4weight qw;
        tt_k_q4weight_init(&qw, w, cs->N, cs->K);
        for (int64_t k = cs->K; k < cdiv(cs->K, 32) * 32; k++)
            ck_assert_int_eq(packed_nibble(&qw, 0, k), 8);
        float *ref = xmalloc((size_t)(cs->M * cs->N) * sizeof *ref);
        float *y = xmalloc((size_t)(cs->M * cs->N) * sizeof *y);
        ref_product(ref, x, &qw, bias, cs->M);
        for (int p = 0; p < np; p++)
            for (int nt = 1; nt <= 2; nt++) {
                tt_cpu_level prev = tt_cpu_set_level(paths[p]);
                tt_set_num_threads(nt);
                tt_k_q4gemm_f32(y, x, &qw, bias, cs->M);
                tt_set_num_threads(nt0);
                for (int64_t i = 0; i < cs->M * cs->N; i++)
                    ck_assert_msg(memcmp(&y[i], &ref[i], 4) == 0 || (isnan(y[i]) &&
                                  isnan(ref[i])), "%s threads=%d case %zu: y[%lld] = %.9g, "
                                  "expected %.9g", tt_k_q4gemm_kernel_name(), nt, ci,
                                  (long long)i, (double)y[i], (double)ref[i]);
                tt_cpu_set_level(prev);
            }
        if (ci == 3)
            for (int64_t n = 0; n < cs->N; n++) ck_assert(isnan(y[n]));
        tt_k_q4weight_free(&qw);
        free(w), free(x), free(bias), free(ref), free(y);
    }
}
END_TEST

// The extremes of the block sums: nibbles 0 (-8) against +-127 over whole blocks, where an
// int16 sum of 16 products would overflow (32 * 8 * 127 = 32512 fits int16 only as a block
// sum; the AVX2 path's int16 partial sums stay at <= 8 pair sums).
START_TEST(test_sums_extremes) {
    tt_cpu_level paths[TT_CPU_LEVEL_COUNT];
    int np = supported_paths(paths);
    int64_t M = 2, N = 3, K = 256;
    float *w = xmalloc((size_t)(N * K) * sizeof *w), *x = xmalloc((size_t)(M * K) * sizeof *x);
    for (int64_t k = 0; k < K; k++) {
        w[k] = -1.0f;                     // d = 1/8: nibble 0
        w[K + k] = k % 2 ? -1.0f : 0.875f;  // nibbles 0 and 15
        w[2 * K + k] = 0.875f;
        x[k] = -1.0f;                     // -127 everywhere
        x[K + k] = k % 2 ? 1.0f : -1.0f;
    }
    tt_k_q4weight qw;
    tt_k_q4weight_init(&qw, w, N, K);
    ck_assert_int_eq(packed_nibble(&qw, 0, 5), 0);
    float ref[6], y[6];
    ref_product(ref, x, &qw, NULL, M);
    ck_assert_float_eq(ref[0], 256.0f);  // (-1)(-1) over 256 k, every step exact
    for (int p = 0; p < np; p++) {
        tt_cpu_level prev = tt_cpu_set_level(paths[p]);
        tt_k_q4gemm_f32(y, x, &qw, NULL, M);
        ck_assert_mem_eq(y, ref, sizeof y);
        tt_cpu_set_level(prev);
    }
    tt_k_q4weight_free(&qw);
    free(w);
    free(x);
}
END_TEST

// Against the f32 product: |y - x w| <= sum_k (|x| d / 2 + |w_q| s / 2) per the scales (the
// weight error at most one step d after clipping: d; the activation half a step), plus f32
// rounding; and the dequantized weight is within one step of w.
START_TEST(test_error_bound) {
    rng_state = 31;
    int64_t M = 4, N = 24, K = 200, KB = cdiv(K, 32);
    float *w = rand_f32(N * K, 0.1), *x = rand_f32(M * K, 2.0);
    float *wq = xmalloc((size_t)(N * K) * sizeof *wq), *y = xmalloc((size_t)(M * N) * 4);
    tt_k_q4weight qw;
    tt_k_q4weight_init(&qw, w, N, K);
    tt_k_q4weight_dequant(wq, &qw);
    tt_k_q4gemm_f32(y, x, &qw, NULL, M);
    double worst = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double exact = 0, bound = 1e-5;
            for (int64_t b = 0; b < KB; b++) {
                double d = fabs(tt_k_f16_to_f32(packed_scale(&qw, n, b))), amax = 0;
                for (int64_t k = 32 * b; k < 32 * b + 32 && k < K; k++)
                    amax = fmax(amax, fabs(x[m * K + k]));
                for (int64_t k = 32 * b; k < 32 * b + 32 && k < K; k++) {
                    exact += (double)x[m * K + k] * w[n * K + k];
                    bound += fabs(x[m * K + k]) * d + fabs(wq[n * K + k]) * amax / 127 / 2;
                    ck_assert(fabs(wq[n * K + k] - w[n * K + k]) <= d * (1 + 1e-6));
                }
            }
            ck_assert_msg(fabs(y[m * N + n] - exact) <= bound, "y[%lld, %lld] = %g, exact %g, "
                          "bound %g", (long long)m, (long long)n, (double)y[m * N + n], exact,
                          bound);
            worst = fmax(worst, fabs(y[m * N + n] - exact) / bound);
        }
    ck_assert(worst > 0.01);  // the bound is not vacuous
    ck_assert_int_eq(tt_k_q4weight_bytes(&qw), 2 * KB * 288);
    tt_k_q4weight_free(&qw);
    free(w), free(x), free(wq), free(y);
}
END_TEST

// ---- the int4 Linear ----

// tt_nn_linear_quantize_as(INT4): the module type, the bytes, the kernel's bits with the bias.
START_TEST(test_linear_int4) {
    tt_quant q;
    ck_assert_int_eq(tt_quant_parse("int4", &q), TT_OK);
    ck_assert_int_eq(q, TT_QUANT_INT4);
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 40, 20, true, &rng);
    tt_no_grad_begin();
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(2, 3, 40));
    tt_nn_linear_quantize_as(&fc, TT_QUANT_INT4);
    ck_assert_int_eq(tt_nn_linear_quantization(&fc), TT_QUANT_INT4);
    ck_assert_str_eq(fc.swap.ops->type, "Int4Linear");
    ck_assert_int_eq(tt_nn_linear_quantized_bytes(&fc), 2 * 2 * 288 + 4 * 20);
    tt_tensor *y = tt_nn_linear_forward(&fc, x);  // (2, 3, 20)
    ck_assert_int_eq(y->shape[2], 20);
    tt_k_q4weight qw;
    tt_k_q4weight_init(&qw, tt_data_f32(fc.weight), 20, 40);
    float ref[6 * 20];
    ref_product(ref, tt_data_f32(x), &qw, tt_data_f32(fc.bias), 6);
    ck_assert_mem_eq(tt_data_f32(y), ref, sizeof ref);
    tt_k_q4weight_free(&qw);
    tt_scope_end();
    tt_no_grad_end();
    tt_nn_linear_free(&fc);
}
END_TEST

static tt_nn_linear ab_fc;

static void abort_setup(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_nn_linear_init(&ab_fc, 8, 4, true, &rng);
    tt_nn_linear_quantize_as(&ab_fc, TT_QUANT_INT4);
}
static void abort_teardown(void) { tt_nn_linear_free(&ab_fc); }

START_TEST(test_abort_grad) {
    tt_expect_abort("the int4 Linear (in=8, out=4) is inference only and has no gradient, but "
                    "input (2, 8) requires grad with grad mode on");
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_nn_linear_forward(&ab_fc, tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(2, 8)),
                                                      true));
}
END_TEST

START_TEST(test_abort_dtype) {
    tt_expect_abort("input (3, 8) must be f32, got f64");
    tt_no_grad_begin();
    tt_nn_linear_forward(&ab_fc, tt_zeros(TT_F64, TT_SHAPE(3, 8)));
}
END_TEST

START_TEST(test_abort_features) {
    tt_expect_abort("input (3, 7) must end in in_features=8");
    tt_no_grad_begin();
    tt_nn_linear_forward(&ab_fc, tt_zeros(TT_F32, TT_SHAPE(3, 7)));
}
END_TEST

START_TEST(test_abort_uninitialized) {
    tt_expect_abort("the weight is not initialized; call tt_k_q4weight_init first");
    tt_k_q4weight qw = {0};
    float x[4] = {0}, y[4];
    tt_k_q4gemm_f32(y, x, &qw, NULL, 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("q4");
    TCase *tq = tt_tcase("quantize");
    tcase_add_test(tq, test_f16);
    tcase_add_test(tq, test_block_by_hand);
    tcase_add_test(tq, test_block_reference);
    tcase_add_test(tq, test_quantize_act);
    suite_add_tcase(s, tq);
    TCase *tp = tt_tcase("products");
    tcase_set_timeout(tp, 60);
    tcase_add_test(tp, test_paths_threads);
    tcase_add_test(tp, test_sums_extremes);
    tcase_add_test(tp, test_error_bound);
    tcase_add_test(tp, test_linear_int4);
    suite_add_tcase(s, tp);
    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_unchecked_fixture(ab, abort_setup, abort_teardown);
    tcase_add_test_raise_signal(ab, test_abort_grad, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_features, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_uninitialized, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

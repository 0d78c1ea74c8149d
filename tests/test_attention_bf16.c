// The fused attention under bf16 autocast (tensor/kernels/attention.h, "bf16 products"):
// forward and the three gradients against an emulation in double that rounds the products'
// inputs to bf16 (q, k, v, the weights, dy, dS) and follows the kernel's key tiles and running
// max, at every CPU level (cpu.h); plain f32 is far outside its tolerance. vdpbf16ps and the
// AVX-512F widening products (the same row operations) give the same bits, with and without a
// mask; 1 and 2 threads too;
// f64 and f32 outside autocast untouched by the switch. GPT parity with PyTorch's autocast:
// test_gpt_parity.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


#include "test_util.h"
#include "tensor/kernels/attention.h"
#include "tensor/kernels/bf16.h"
#include "tensor/kernels/cpu.h"

static tt_rng rng;

// x rounded to the nearest bf16 (ties to even), as a double. Finite inputs only.
static double rb(double xd) {
    float x = (float)xd;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

typedef struct shape {
    int64_t B, NH, NKV, T, S, HS;
    bool causal;
} shape;

// Tiles not filled, GQA, an odd head size (an odd number of k steps), T != S, several tiles.
static const shape shapes[] = {
    {2, 4, 2, 40, 40, 24, true},
    {1, 2, 2, 7, 50, 17, false},
    {1, 1, 1, 70, 70, 64, true},
    {2, 2, 1, 33, 65, 8, false},
};

typedef struct run_out {
    tt_tensor *y, *dq, *dk, *dv;
} run_out;

static run_out run(tt_tensor *q, tt_tensor *k, tt_tensor *v, tt_tensor *dy, bool causal,
                   double scale, tt_precision prec) {
    tt_zero_grad(q);
    tt_zero_grad(k);
    tt_zero_grad(v);
    tt_autocast_begin(prec);
    tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, NULL, causal, scale);
    tt_autocast_end();
    tt_backward_with(y, dy);  // outside the region: the node remembers its precision
    run_out r = {tt_detach(y), tt_clone(q->grad), tt_clone(k->grad), tt_clone(v->grad)};
    return r;
}

// ---- the emulation ----
// Double everywhere except the bf16 rounding of each product's inputs. Forward: per key tile of
// TT_KATTN_BLOCK keys, the running max m, weights e = exp(s - m) rounded to bf16 in y's sum, y
// rescaled when m grows, divided by the unrounded sum l at the end. Backward: P = exp(s - lse),
// dv += R(P)^T R(dy), dP = R(dy) R(v)^T, dS = P (dP - D), dq += scale R(dS) R(k),
// dk += scale R(dS)^T R(q). Contiguous (B, heads, rows, HS) arrays; outputs (y, dq: (B, NH,
// T, HS); dk, dv: (B, NKV, S, HS)) zeroed by the caller.
static void emulate(double *y, double *dq, double *dk, double *dv, const float *q,
                    const float *k, const float *v, const float *dy, const shape *c,
                    double scale) {
    int64_t T = c->T, S = c->S, HS = c->HS, rep = c->NH / c->NKV, BKEY = TT_KATTN_BLOCK;
    double *s = malloc((size_t)S * sizeof *s), *p = malloc((size_t)S * sizeof *p);
    double *acc = malloc((size_t)HS * sizeof *acc);
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->NH; h++) {
            int64_t g = h / rep;
            const float *qh = q + (b * c->NH + h) * T * HS, *dyh = dy + (b * c->NH + h) * T * HS;
            const float *kg = k + (b * c->NKV + g) * S * HS, *vg = v + (b * c->NKV + g) * S * HS;
            double *yh = y + (b * c->NH + h) * T * HS, *dqh = dq + (b * c->NH + h) * T * HS;
            double *dkg = dk + (b * c->NKV + g) * S * HS, *dvg = dv + (b * c->NKV + g) * S * HS;
            for (int64_t i = 0; i < T; i++) {
                int64_t n = c->causal ? i + 1 : S;
                for (int64_t j = 0; j < n; j++) {
                    double d = 0;
                    for (int64_t x = 0; x < HS; x++) d += rb(qh[i * HS + x]) * rb(kg[j * HS + x]);
                    s[j] = d * scale;
                }
                double m = -INFINITY, l = 0;
                for (int64_t x = 0; x < HS; x++) acc[x] = 0;
                for (int64_t j0 = 0; j0 < n; j0 += BKEY) {
                    int64_t j1 = j0 + BKEY < n ? j0 + BKEY : n;
                    double mx = m;
                    for (int64_t j = j0; j < j1; j++) mx = fmax(mx, s[j]);
                    double alpha = exp(m - mx);
                    l *= alpha;
                    for (int64_t x = 0; x < HS; x++) acc[x] *= alpha;
                    m = mx;
                    for (int64_t j = j0; j < j1; j++) {
                        double e = exp(s[j] - m);
                        l += e;
                        for (int64_t x = 0; x < HS; x++) acc[x] += rb(e) * rb(vg[j * HS + x]);
                    }
                }
                double lse = m + log(l), D = 0;
                for (int64_t x = 0; x < HS; x++) {
                    yh[i * HS + x] = acc[x] / l;
                    D += (double)dyh[i * HS + x] * (acc[x] / l);
                }
                for (int64_t j = 0; j < n; j++) p[j] = exp(s[j] - lse);
                for (int64_t j = 0; j < n; j++) {
                    double dp = 0;
                    for (int64_t x = 0; x < HS; x++) {
                        dvg[j * HS + x] += rb(p[j]) * rb(dyh[i * HS + x]);
                        dp += rb(dyh[i * HS + x]) * rb(vg[j * HS + x]);
                    }
                    double ds = rb(p[j] * (dp - D));
                    for (int64_t x = 0; x < HS; x++) {
                        dqh[i * HS + x] += scale * ds * rb(kg[j * HS + x]);
                        dkg[j * HS + x] += scale * ds * rb(qh[i * HS + x]);
                    }
                }
            }
        }
    free(s);
    free(p);
    free(acc);
}

// max and mean of |t - ref| / (1 + |ref|) over n values.
typedef struct err {
    double max, mean;
} err;

static err errors(const tt_tensor *t, const double *ref, int64_t n) {
    err e = {0, 0};
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(tt_at(t, i) - ref[i]) / (1 + fabs(ref[i]));
        e.max = fmax(e.max, d);
        e.mean += d / (double)n;
    }
    return e;
}

static bool same_bits(const tt_tensor *a, const tt_tensor *b) {
    return tt_numel(a) == tt_numel(b) && memcmp(tt_data((tt_tensor *)a), tt_data((tt_tensor *)b),
                                                (size_t)tt_numel(a) * sizeof(float)) == 0;
}

static bool same_run(run_out a, run_out b) {
    return same_bits(a.y, b.y) && same_bits(a.dq, b.dq) && same_bits(a.dk, b.dk) &&
           same_bits(a.dv, b.dv);
}

// Measured on these shapes: bf16 within 1.3e-7 of the emulation where no rounding flips (f32
// sums against double), and up to 1.1e-4 where a weight or dS sits so close to a bf16 rounding
// boundary that its f32 and double values round apart (one bf16 ulp of one term, which reaches
// a row of the gradients); means 1e-10 to 5.4e-7. Plain f32: 7.5e-4 to 4e-3 off at its worst,
// means 7.8e-5 or more.
#define TOL_EMU_MAX 3e-4
#define TOL_EMU_MEAN 2e-6
#define MIN_F32_MEAN 2e-5

// q, k (uniform in [-2, 2)) and v (in [-1, 1)) needing gradients, and dy, for shape c, drawn
// from rng in that order; in the caller's scope.
static void inputs(const shape *c, tt_tensor **q, tt_tensor **k, tt_tensor **v,
                   tt_tensor **dy) {
    *q = tt_set_requires_grad(
        tt_uniform(&rng, TT_F32, TT_SHAPE(c->B, c->NH, c->T, c->HS), -2, 2), true);
    *k = tt_set_requires_grad(
        tt_uniform(&rng, TT_F32, TT_SHAPE(c->B, c->NKV, c->S, c->HS), -2, 2), true);
    *v = tt_set_requires_grad(
        tt_uniform(&rng, TT_F32, TT_SHAPE(c->B, c->NKV, c->S, c->HS), -1, 1), true);
    *dy = tt_uniform(&rng, TT_F32, TT_SHAPE(c->B, c->NH, c->T, c->HS), -1, 1);
}

// ---- against the emulation ----

START_TEST(test_bf16_matches_emulation) {
    const shape *c = &shapes[_i];
    tt_rng_seed(&rng, 40 + (uint64_t)_i);
    tt_scope_begin();
    tt_tensor *q, *k, *v, *dy;
    inputs(c, &q, &k, &v, &dy);
    double scale = 1 / sqrt((double)c->HS);
    int64_t nq = c->B * c->NH * c->T * c->HS, nk = c->B * c->NKV * c->S * c->HS;
    double *y = calloc((size_t)nq, sizeof *y), *dq = calloc((size_t)nq, sizeof *dq);
    double *dk = calloc((size_t)nk, sizeof *dk), *dv = calloc((size_t)nk, sizeof *dv);
    emulate(y, dq, dk, dv, tt_data(q), tt_data(k), tt_data(v), tt_data(dy), c, scale);
    const char *names[4] = {"y", "dq", "dk", "dv"};
    // every CPU level: vdpbf16ps (AVX512BF16), the widening kernels (AVX512, AVX2), portable C
    tt_cpu_level best = tt_cpu_get_level();
    for (int level = 0; level <= (int)best; level++) {
        tt_cpu_set_level((tt_cpu_level)level);
        run_out r = run(q, k, v, dy, c->causal, scale, TT_PRECISION_BF16);
        run_out f = run(q, k, v, dy, c->causal, scale, TT_PRECISION_F32);
        const tt_tensor *rt[4] = {r.y, r.dq, r.dk, r.dv}, *ft[4] = {f.y, f.dq, f.dk, f.dv};
        const double *ref[4] = {y, dq, dk, dv};
        const int64_t n[4] = {nq, nq, nk, nk};
        for (int t = 0; t < 4; t++) {
            err e = errors(rt[t], ref[t], n[t]), ef = errors(ft[t], ref[t], n[t]);
            const char *isa_name = tt_cpu_level_name(tt_cpu_get_level());
            printf("attention bf16 shape %d level %-10s %s: max_err %.2e mean %.2e (f32 "
                   "%.2e, mean %.2e)\n", _i, isa_name, names[t],
                   e.max, e.mean, ef.max, ef.mean);
            ck_assert_msg(e.max <= TOL_EMU_MAX && e.mean <= TOL_EMU_MEAN, "shape %d, %s: bf16 "
                          "%s off the emulation by %.3g (mean %.3g)", _i, isa_name, names[t],
                          e.max, e.mean);
            ck_assert_msg(ef.mean >= MIN_F32_MEAN, "shape %d: f32 %s within %.3g of the bf16 "
                          "emulation on average: the test would not see missing bf16 rounding",
                          _i, names[t], ef.mean);
        }
    }
    tt_cpu_set_level(best);
    free(y);
    free(dq);
    free(dk);
    free(dv);
    tt_scope_end();
}
END_TEST

// ---- same bits ----

// vdpbf16ps (TT_CPU_AVX512BF16) against the widening products with the same AVX-512 row
// operations (TT_CPU_AVX512): the same bits.
START_TEST(test_dpbf16_same_bits_as_portable) {
    if (tt_cpu_max_level() < TT_CPU_AVX512BF16) {
        printf("attention bf16: no AVX512-BF16 on this CPU, vdpbf16ps products not checked\n");
        return;
    }
    const shape *c = &shapes[_i];
    tt_rng_seed(&rng, 50 + (uint64_t)_i);
    tt_scope_begin();
    tt_tensor *q, *k, *v, *dy;
    inputs(c, &q, &k, &v, &dy);
    double scale = 1 / sqrt((double)c->HS);
    tt_cpu_level prev = tt_cpu_set_level(TT_CPU_AVX512BF16);
    run_out a = run(q, k, v, dy, c->causal, scale, TT_PRECISION_BF16);
    tt_cpu_set_level(TT_CPU_AVX512);
    run_out b = run(q, k, v, dy, c->causal, scale, TT_PRECISION_BF16);
    tt_cpu_set_level(prev);
    ck_assert_msg(same_run(a, b), "shape %d: vdpbf16ps and widened products differ", _i);
    // and bf16 is not f32: the switch reaches the kernel
    run_out f = run(q, k, v, dy, c->causal, scale, TT_PRECISION_F32);
    ck_assert(!same_bits(a.y, f.y) && !same_bits(a.dq, f.dq));
    tt_scope_end();
}
END_TEST

// With masks: a bool key-padding mask (B, 1, 1, S) and an additive (T, S) bias that takes a
// gradient; vdpbf16ps (the pair panels packed once per head or key tile) against the widening
// products, in y, dq, dk, dv and the bias's gradient; GQA, an odd T and S, an odd head size.
START_TEST(test_dpbf16_same_bits_masked) {
    if (tt_cpu_max_level() < TT_CPU_AVX512BF16) return;
    const int64_t B = 2, NH = 4, NKV = 2, T = 45, S = 45, HS = 23;
    tt_rng_seed(&rng, 80 + (uint64_t)_i);
    tt_scope_begin();
    tt_tensor *q = tt_set_requires_grad(tt_uniform(&rng, TT_F32, TT_SHAPE(B, NH, T, HS), -2, 2),
                                        true);
    tt_tensor *k = tt_set_requires_grad(tt_uniform(&rng, TT_F32, TT_SHAPE(B, NKV, S, HS), -2, 2),
                                        true);
    tt_tensor *v = tt_set_requires_grad(tt_uniform(&rng, TT_F32, TT_SHAPE(B, NKV, S, HS), -1, 1),
                                        true);
    tt_tensor *dy = tt_uniform(&rng, TT_F32, TT_SHAPE(B, NH, T, HS), -1, 1);
    tt_tensor *mask;
    if (_i == 0) {
        mask = tt_ones(TT_BOOL, TT_SHAPE(B, 1, 1, S));
        tt_fill_(tt_narrow(mask, 3, S - 6, 6), 0);
    } else {
        mask = tt_set_requires_grad(tt_uniform(&rng, TT_F32, TT_SHAPE(T, S), -1, 1), true);
    }
    tt_tensor *out[2][5];
    for (int p = 0; p < 2; p++) {
        tt_cpu_level prev = tt_cpu_set_level(p ? TT_CPU_AVX512 : TT_CPU_AVX512BF16);
        tt_zero_grad(q);
        tt_zero_grad(k);
        tt_zero_grad(v);
        if (_i) tt_zero_grad(mask);
        tt_autocast_begin(TT_PRECISION_BF16);
        tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, mask, _i == 1, 0.2);
        tt_autocast_end();
        tt_backward_with(y, dy);
        tt_cpu_set_level(prev);
        out[p][0] = tt_detach(y);
        out[p][1] = tt_clone(q->grad);
        out[p][2] = tt_clone(k->grad);
        out[p][3] = tt_clone(v->grad);
        out[p][4] = _i ? tt_clone(mask->grad) : out[p][0];
    }
    for (int t = 0; t < 5; t++)
        ck_assert_msg(same_bits(out[0][t], out[1][t]), "mask %d: output %d differs between "
                      "vdpbf16ps and the widened products", _i, t);
    tt_scope_end();
}
END_TEST

// Large enough to run on several threads; results bitwise the same on 1 and 2.
START_TEST(test_threads_same_bits) {
    tt_rng_seed(&rng, 60);
    tt_scope_begin();
    tt_tensor *q = tt_set_requires_grad(tt_uniform(&rng, TT_F32, TT_SHAPE(2, 4, 128, 64), -2, 2),
                                        true);
    tt_tensor *k = tt_set_requires_grad(tt_uniform(&rng, TT_F32, TT_SHAPE(2, 2, 128, 64), -2, 2),
                                        true);
    tt_tensor *v = tt_set_requires_grad(tt_uniform(&rng, TT_F32, TT_SHAPE(2, 2, 128, 64), -1, 1),
                                        true);
    tt_tensor *dy = tt_uniform(&rng, TT_F32, TT_SHAPE(2, 4, 128, 64), -1, 1);
    int prev = tt_get_num_threads();
    tt_set_num_threads(1);
    run_out one = run(q, k, v, dy, true, 0.125, TT_PRECISION_BF16);
    tt_set_num_threads(2);
    run_out two = run(q, k, v, dy, true, 0.125, TT_PRECISION_BF16);
    tt_set_num_threads(prev);
    ck_assert_msg(same_run(one, two), "bf16 attention depends on the thread count");
    tt_scope_end();
}
END_TEST

// f64 under autocast and f32 in a TT_PRECISION_F32 region: the same bits as outside.
START_TEST(test_f64_and_f32_region_unchanged) {
    tt_rng_seed(&rng, 70);
    tt_scope_begin();
    for (int dt = 0; dt < 2; dt++) {
        tt_dtype d = dt ? TT_F64 : TT_F32;
        tt_tensor *q = tt_set_requires_grad(tt_uniform(&rng, d, TT_SHAPE(1, 2, 20, 16), -2, 2),
                                            true);
        tt_tensor *k = tt_set_requires_grad(tt_uniform(&rng, d, TT_SHAPE(1, 2, 20, 16), -2, 2),
                                            true);
        tt_tensor *v = tt_set_requires_grad(tt_uniform(&rng, d, TT_SHAPE(1, 2, 20, 16), -1, 1),
                                            true);
        tt_tensor *y0 = tt_detach(tt_scaled_dot_product_attention(q, k, v, NULL, true, 0.25));
        tt_autocast_begin(TT_PRECISION_BF16);
        if (d == TT_F32) tt_autocast_begin(TT_PRECISION_F32);
        tt_tensor *y1 = tt_detach(tt_scaled_dot_product_attention(q, k, v, NULL, true, 0.25));
        if (d == TT_F32) tt_autocast_end();
        tt_autocast_end();
        ck_assert(memcmp(tt_data(y0), tt_data(y1), (size_t)tt_numel(y0) *
                         tt_dtype_size(d)) == 0);
    }
    tt_scope_end();
}
END_TEST

int main(void) {
    Suite *s = suite_create("attention_bf16");
    TCase *tc = tt_tcase("attention_bf16");
    tcase_set_timeout(tc, 120);
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    tcase_add_loop_test(tc, test_bf16_matches_emulation, 0, n);
    tcase_add_loop_test(tc, test_dpbf16_same_bits_as_portable, 0, n);
    tcase_add_loop_test(tc, test_dpbf16_same_bits_masked, 0, 2);
    tcase_add_test(tc, test_threads_same_bits);
    tcase_add_test(tc, test_f64_and_f32_region_unchanged);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}

// bf16 autocast (autograd.h): the switch's nesting and errors; tt_affine and tt_matmul under it
// against a reference in double with bf16-rounded inputs, forward and backward (the backward's
// precision is the one recorded by the forward); f64 and f32 outside any region bitwise
// unchanged; the GPT's loss and gradients under autocast the same bits run to run and on 1 or
// 2 threads. Parity with PyTorch's autocast is in test_gpt_parity.
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "test_util.h"
#include "models/gpt/gpt.h"

// ---- an independent reference ----

// x rounded to the nearest bf16 (ties to even), as a float. Finite inputs only.
static float round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

// C (M, N) = A B in double with A[i, k] = a[i * ars + k * acs] and B[k, j] = b[k * brs + j *
// bcs], every input rounded to bf16 first: the exact value of bf16 products summed exactly.
static void ref_gemm(double *c, const float *a, int64_t ars, int64_t acs, const float *b,
                     int64_t brs, int64_t bcs, int64_t M, int64_t N, int64_t K) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += (double)round_bf16(a[i * ars + k * acs]) *
                     (double)round_bf16(b[k * brs + j * bcs]);
            c[i * N + j] = s;
        }
}

// max |t - ref| / (1 + |ref|) over t's n values (t contiguous f32).
static double max_err(const tt_tensor *t, const double *ref, int64_t n) {
    const float *p = tt_data((tt_tensor *)t);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(p[i] - ref[i]) / (1 + fabs(ref[i])));
    return worst;
}

static bool same_bits(const tt_tensor *a, const tt_tensor *b) {
    return a->dtype == b->dtype && tt_numel(a) == tt_numel(b) &&
           memcmp(tt_data((tt_tensor *)a), tt_data((tt_tensor *)b),
                  (size_t)tt_numel(a) * tt_dtype_size(a->dtype)) == 0;
}

// f32 accumulation over K = 96 terms of size ~1 against an exact sum: well under 1e-5.
#define TOL_ACC 1e-5
// Plain f32 products differ from the bf16-rounded ones by far more: inputs move by up to 2^-9.
#define MIN_BF16_EFFECT 1e-3

// ---- the switch ----

START_TEST(test_switch_nests) {
    ck_assert(!tt_autocast_enabled());
    ck_assert_int_eq(tt_autocast_precision(), TT_PRECISION_F32);
    tt_autocast_begin(TT_PRECISION_BF16);
    ck_assert(tt_autocast_enabled());
    tt_autocast_begin(TT_PRECISION_F32);  // off inside a bf16 region
    ck_assert(!tt_autocast_enabled());
    tt_autocast_begin(TT_PRECISION_BF16);
    ck_assert(tt_autocast_enabled());
    tt_autocast_end();
    ck_assert(!tt_autocast_enabled());
    tt_autocast_end();
    ck_assert(tt_autocast_enabled());
    tt_autocast_end();
    ck_assert(!tt_autocast_enabled());
    ck_assert_str_eq(tt_precision_name(TT_PRECISION_BF16), "bf16");
    ck_assert_str_eq(tt_precision_name(TT_PRECISION_F32), "f32");
    tt_precision p = TT_PRECISION_F32;
    ck_assert(tt_precision_parse("bf16", &p) && p == TT_PRECISION_BF16);
    ck_assert(tt_precision_parse("f32", &p) && p == TT_PRECISION_F32);
    ck_assert(!tt_precision_parse("fp16", &p) && p == TT_PRECISION_F32);
    ck_assert(!tt_precision_parse(NULL, &p));
}
END_TEST

// ---- tt_affine ----

enum { M_ = 40, K_ = 96, N_ = 72 };

typedef struct affine_case {
    tt_tensor *x, *w, *b, *c, *y, *dx, *dw, *db;  // c: the gradient w.r.t. y
} affine_case;

// y = affine(x (4, 10, K), w (N, K), b (N)) with the forward under `fwd` and the backward of
// sum(y * c) under `bwd`. Tensors owned by the caller's scope.
static affine_case affine_run(tt_dtype dt, tt_precision fwd, tt_precision bwd) {
    affine_case r;
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    r.x = tt_set_requires_grad(tt_randn(&rng, dt, TT_SHAPE(4, M_ / 4, K_)), true);
    r.w = tt_set_requires_grad(tt_randn(&rng, dt, TT_SHAPE(N_, K_)), true);
    r.b = tt_set_requires_grad(tt_randn(&rng, dt, TT_SHAPE(N_)), true);
    r.c = tt_randn(&rng, dt, TT_SHAPE(4, M_ / 4, N_));
    tt_autocast_begin(fwd);
    r.y = tt_affine(r.x, r.w, r.b);
    tt_autocast_end();
    tt_tensor *loss = tt_sum_all(tt_mul(r.y, r.c));
    tt_autocast_begin(bwd);
    tt_backward(loss);
    tt_autocast_end();
    r.dx = tt_grad(r.x);
    r.dw = tt_grad(r.w);
    r.db = tt_grad(r.b);
    return r;
}

// Forward and both products of the backward take bf16 inputs and accumulate in f32, though
// the backward runs outside the region; the bias and its gradient stay f32.
START_TEST(test_affine_bf16_products) {
    tt_scope_begin();
    affine_case r = affine_run(TT_F32, TT_PRECISION_BF16, TT_PRECISION_F32);
    const float *x = tt_data(r.x), *w = tt_data(r.w), *b = tt_data(r.b), *c = tt_data(r.c);
    static double y[M_ * N_], dx[M_ * K_], dw[N_ * K_], db[N_];
    ref_gemm(y, x, K_, 1, w, 1, K_, M_, N_, K_);  // x @ w^T
    for (int i = 0; i < M_ * N_; i++) y[i] += b[i % N_];
    ref_gemm(dx, c, N_, 1, w, K_, 1, M_, K_, N_);  // c @ w
    ref_gemm(dw, c, 1, N_, x, K_, 1, N_, K_, M_);  // c^T @ x
    for (int j = 0; j < N_; j++) {
        db[j] = 0;
        for (int i = 0; i < M_; i++) db[j] += c[i * N_ + j];  // in f32 terms: not rounded
    }
    double ey = max_err(r.y, y, M_ * N_), edx = max_err(r.dx, dx, M_ * K_);
    double edw = max_err(r.dw, dw, N_ * K_), edb = max_err(r.db, db, N_);
    ck_assert_msg(ey < TOL_ACC && edx < TOL_ACC && edw < TOL_ACC && edb < TOL_ACC,
                  "bf16 affine off its reference: y %.2e dx %.2e dw %.2e db %.2e", ey, edx, edw,
                  edb);
    // The same in plain f32 is far from the bf16 reference: the rounding is really there.
    affine_case f = affine_run(TT_F32, TT_PRECISION_F32, TT_PRECISION_F32);
    ck_assert_double_gt(max_err(f.y, y, M_ * N_), MIN_BF16_EFFECT);
    ck_assert_double_gt(max_err(f.dx, dx, M_ * K_), MIN_BF16_EFFECT);
    ck_assert_double_gt(max_err(f.dw, dw, N_ * K_), MIN_BF16_EFFECT);
    tt_scope_end();
}
END_TEST

// The precision is the forward's: a forward outside autocast gives plain f32 gradients even
// when the backward runs inside a bf16 region, bit for bit those of a run with no region.
START_TEST(test_backward_follows_forward) {
    tt_scope_begin();
    affine_case plain = affine_run(TT_F32, TT_PRECISION_F32, TT_PRECISION_F32);
    affine_case in_bwd = affine_run(TT_F32, TT_PRECISION_F32, TT_PRECISION_BF16);
    ck_assert(same_bits(plain.y, in_bwd.y));
    ck_assert(same_bits(plain.dx, in_bwd.dx));
    ck_assert(same_bits(plain.dw, in_bwd.dw));
    // And a bf16 forward gives bf16 gradients wherever the backward runs.
    affine_case a = affine_run(TT_F32, TT_PRECISION_BF16, TT_PRECISION_F32);
    affine_case b = affine_run(TT_F32, TT_PRECISION_BF16, TT_PRECISION_BF16);
    ck_assert(same_bits(a.dx, b.dx) && same_bits(a.dw, b.dw));
    ck_assert(!same_bits(a.dw, plain.dw));
    tt_scope_end();
}
END_TEST

// f64 never autocasts (gradcheck stays exact); f32 outside any region, or in a nested f32
// region, is bitwise what it was before autocast existed: the f32 GEMM.
START_TEST(test_f64_and_outside_unchanged) {
    tt_scope_begin();
    affine_case d0 = affine_run(TT_F64, TT_PRECISION_F32, TT_PRECISION_F32);
    affine_case d1 = affine_run(TT_F64, TT_PRECISION_BF16, TT_PRECISION_BF16);
    ck_assert(same_bits(d0.y, d1.y) && same_bits(d0.dx, d1.dx) && same_bits(d0.dw, d1.dw));
    affine_case before = affine_run(TT_F32, TT_PRECISION_F32, TT_PRECISION_F32);
    affine_case bf = affine_run(TT_F32, TT_PRECISION_BF16, TT_PRECISION_BF16);
    ck_assert(!same_bits(before.y, bf.y));
    affine_case after = affine_run(TT_F32, TT_PRECISION_F32, TT_PRECISION_F32);
    ck_assert(same_bits(before.y, after.y) && same_bits(before.dx, after.dx) &&
              same_bits(before.dw, after.dw) && same_bits(before.db, after.db));
    tt_autocast_begin(TT_PRECISION_BF16);
    affine_case nested = affine_run(TT_F32, TT_PRECISION_F32, TT_PRECISION_F32);
    tt_autocast_end();
    ck_assert(same_bits(before.y, nested.y) && same_bits(before.dw, nested.dw));
    // And the f32 GEMM itself: affine without autocast equals matmul with w^T (both f32).
    tt_tensor *mm = tt_matmul(tt_detach(before.x), tt_transpose(tt_detach(before.w), 0, 1));
    tt_tensor *y0 = tt_affine(tt_detach(before.x), tt_detach(before.w), NULL);
    ck_assert(same_bits(mm, y0));
    tt_scope_end();
}
END_TEST

// ---- tt_matmul ----

// a (2, 3, M, K) @ b (K, N), b broadcast over the batch: its gradient sums the 6 products
// (the accumulating path), each with bf16 inputs.
START_TEST(test_matmul_batched_bf16) {
    enum { M = 17, K = 33, N = 24, NB = 6 };
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_tensor *a = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(2, 3, M, K)), true);
    tt_tensor *b = tt_set_requires_grad(tt_randn(&rng, TT_F32, TT_SHAPE(K, N)), true);
    tt_tensor *c = tt_randn(&rng, TT_F32, TT_SHAPE(2, 3, M, N));
    tt_autocast_begin(TT_PRECISION_BF16);
    tt_tensor *y = tt_matmul(a, b);
    tt_autocast_end();
    tt_backward(tt_sum_all(tt_mul(y, c)));
    const float *pa = tt_data(a), *pb = tt_data(b), *pc = tt_data(c);
    static double ry[NB * M * N], rda[NB * M * K], rdb[K * N], part[K * N];
    for (int i = 0; i < K * N; i++) rdb[i] = 0;
    for (int q = 0; q < NB; q++) {
        ref_gemm(ry + q * M * N, pa + q * M * K, K, 1, pb, N, 1, M, N, K);
        ref_gemm(rda + q * M * K, pc + q * M * N, N, 1, pb, 1, N, M, K, N);  // c @ b^T
        ref_gemm(part, pa + q * M * K, 1, K, pc + q * M * N, N, 1, K, N, M);  // a^T @ c
        for (int i = 0; i < K * N; i++) rdb[i] += part[i];
    }
    double ey = max_err(y, ry, NB * M * N), ea = max_err(tt_grad(a), rda, NB * M * K);
    double eb = max_err(tt_grad(b), rdb, K * N);
    ck_assert_msg(ey < TOL_ACC && ea < TOL_ACC && eb < TOL_ACC,
                  "bf16 matmul off its reference: y %.2e da %.2e db %.2e", ey, ea, eb);
    // A 1-D operand too (a dot product, (K,) @ (K,)).
    tt_tensor *u = tt_randn(&rng, TT_F32, TT_SHAPE(K)), *v = tt_randn(&rng, TT_F32, TT_SHAPE(K));
    tt_autocast_begin(TT_PRECISION_BF16);
    tt_tensor *dot = tt_matmul(u, v);
    tt_autocast_end();
    double rdot;
    ref_gemm(&rdot, tt_data(u), 0, 1, tt_data(v), 1, 0, 1, 1, K);
    ck_assert(max_err(dot, &rdot, 1) < TOL_ACC);
    tt_scope_end();
}
END_TEST

// ---- the GPT ----

// Loss and every gradient of 3 steps of a small GPT's forward under autocast (no update, so
// each step sees new tokens and the same weights), folded into a hash of their bits.
static uint64_t gpt_autocast_hash(void) {
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    tt_gpt_config cfg = tt_gpt_config_default();
    cfg.vocab_size = 65;
    cfg.block_size = 64;
    cfg.n_layer = 2;
    cfg.n_head = 4;
    cfg.n_kv_head = 4;
    cfg.n_embd = 128;
    cfg.dropout = 0;
    tt_gpt m;
    ck_assert(tt_gpt_init(&m, &cfg, &rng) == TT_OK);
    uint64_t h = 1469598103934665603ull;
    for (int s = 0; s < 3; s++) {
        tt_scope_begin();
        tt_tensor *x = tt_empty(TT_I32, TT_SHAPE(12, 64)), *y = tt_empty(TT_I32, TT_SHAPE(12, 64));
        int32_t *px = tt_data(x), *py = tt_data(y);
        for (int i = 0; i < 12 * 64; i++) {
            px[i] = (int32_t)tt_rng_below(&rng, 65);
            py[i] = (int32_t)tt_rng_below(&rng, 65);
        }
        tt_autocast_begin(TT_PRECISION_BF16);
        tt_tensor *loss = tt_gpt_loss(&m, x, y);
        tt_autocast_end();
        tt_backward(loss);
        for (int i = -1; i < m.params.n; i++) {
            const tt_tensor *t = i < 0 ? loss : tt_grad(m.params.items[i].tensor);
            const unsigned char *p = tt_data((tt_tensor *)t);
            for (size_t k = 0; k < (size_t)tt_numel(t) * sizeof(float); k++)
                h = (h ^ p[k]) * 1099511628211ull;
        }
        tt_params_zero_grad(&m.params);
        tt_scope_end();
    }
    tt_gpt_free(&m);
    return h;
}

START_TEST(test_gpt_same_bits) {
    uint64_t first = gpt_autocast_hash();
    ck_assert_msg(gpt_autocast_hash() == first, "two runs under autocast differ");
    int prev = tt_get_num_threads();
    uint64_t by_threads[2];
    for (int t = 1; t <= 2; t++) {
        tt_set_num_threads(t);
        by_threads[t - 1] = gpt_autocast_hash();
    }
    tt_set_num_threads(prev);
    ck_assert_msg(by_threads[0] == by_threads[1] && by_threads[0] == first,
                  "autocast results depend on the thread count");
}
END_TEST

// ---- misuse ----

// x feeding three Linears (as q, k and v do): under autocast the second and third products
// add into x's gradient in place. The result must be what adding fresh per-Linear gradients
// gives, in the same order, bit for bit; in f32 x's gradient is a sum of fresh buffers too.
static tt_tensor *three_linears_dx(const tt_tensor *x0, tt_tensor *const w[3], int only) {
    tt_tensor *x = tt_set_requires_grad(tt_clone((tt_tensor *)x0), true);
    tt_tensor *loss = NULL;
    tt_autocast_begin(TT_PRECISION_BF16);
    for (int i = 0; i < 3; i++) {
        if (only >= 0 && i != only) continue;
        tt_tensor *y = tt_sum_all(tt_affine(x, w[i], NULL));
        loss = loss ? tt_add(loss, y) : y;
    }
    tt_backward(loss);
    tt_autocast_end();
    return tt_grad(x);
}

START_TEST(test_shared_input_accumulates_same_bits) {
    tt_scope_begin();
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(2, 37, 48));
    tt_tensor *w[3];
    for (int i = 0; i < 3; i++) w[i] = tt_randn(&rng, TT_F32, TT_SHAPE(40 + 8 * i, 48));
    tt_tensor *all = three_linears_dx(x, w, -1);
    // the backward runs the Linears last to first: fresh gradients summed in that order
    tt_tensor *sum = tt_clone(three_linears_dx(x, w, 2));
    tt_add_(sum, three_linears_dx(x, w, 1));
    tt_add_(sum, three_linears_dx(x, w, 0));
    ck_assert(same_bits(all, sum));
    ck_assert(!same_bits(all, three_linears_dx(x, w, 2)));  // all three reached it
    tt_scope_end();
}
END_TEST

START_TEST(test_end_without_begin_aborts) {
    tt_expect_abort("tt_autocast_end without a matching tt_autocast_begin");
    tt_autocast_end();
}
END_TEST

START_TEST(test_bad_precision_aborts) {
    tt_expect_abort("is not TT_PRECISION_F32 or TT_PRECISION_BF16");
    tt_autocast_begin((tt_precision)7);
}
END_TEST

int main(void) {
    Suite *s = suite_create("autocast");
    TCase *tc = tt_tcase("autocast");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_switch_nests);
    tcase_add_test(tc, test_affine_bf16_products);
    tcase_add_test(tc, test_backward_follows_forward);
    tcase_add_test(tc, test_f64_and_outside_unchanged);
    tcase_add_test(tc, test_matmul_batched_bf16);
    tcase_add_test(tc, test_gpt_same_bits);
    tcase_add_test(tc, test_shared_input_accumulates_same_bits);
    suite_add_tcase(s, tc);
    TCase *ta = tt_tcase_aborts("aborts_autocast");
    tcase_add_test_raise_signal(ta, test_end_without_begin_aborts, SIGABRT);
    tcase_add_test_raise_signal(ta, test_bad_precision_aborts, SIGABRT);
    suite_add_tcase(s, ta);
    return tt_test_run(s);
}

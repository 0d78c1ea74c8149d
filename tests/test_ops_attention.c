// Check suite of the fused attention op (tt_scaled_dot_product_attention): forward and all
// three gradients against the composition softmax(masked_fill(q k^T scale)) v over shapes that
// do and do not fill the kernel's tiles, on every instruction set the CPU has; GQA against
// explicitly repeated k and v; bitwise equality for 1 and 2 threads and for strided inputs;
// causality; memory kept for the backward; hand-computed values; the aborts on misuse. Masks:
// against the composition on every ISA, against PyTorch 1.13 numbers
// (tests/reference/attention_mask_values.h), fully masked rows, thread-count determinism, no
// copy of a broadcast mask, KV-cache rows (T != S) through a mask, and their aborts.
// Finite-difference gradients: tests/gc_ops_attention.c.
#include <signal.h>
#include <stdlib.h>
#include <string.h>


#include "test_util.h"
#include "tensor/kernels/attention.h"
#include "tensor/kernels/cpu.h"

#include "reference/attention_mask_values.h"

// ---- helpers ----

static tt_rng rng;

typedef struct attn_shape {
    int64_t B, NH, NKV, T, S, HS;
    bool causal;
} attn_shape;

static tt_tensor *leaf(tt_dtype dt, int64_t B, int64_t H, int64_t R, int64_t HS) {
    return tt_set_requires_grad(tt_uniform(&rng, dt, TT_SHAPE(B, H, R, HS), -1, 1), true);
}

// softmax(masked_fill(q k^T scale [+ mask], j > i, -inf)) v with k, v repeated over the query
// heads they serve (as nn/transformer.c did before the fused op); a bool mask fills its false
// entries with -inf.
static tt_tensor *composition(tt_tensor *q, tt_tensor *k, tt_tensor *v, tt_tensor *mask,
                              bool causal, double scale) {
    int64_t B = q->shape[0], NH = q->shape[1], T = q->shape[2], HS = q->shape[3];
    int64_t NKV = k->shape[1], S = k->shape[2], rep = NH / NKV;
    if (rep > 1) {
        k = tt_reshape(tt_expand(tt_unsqueeze(k, 2), TT_SHAPE(B, NKV, rep, S, HS)),
                       TT_SHAPE(B, NH, S, HS));
        v = tt_reshape(tt_expand(tt_unsqueeze(v, 2), TT_SHAPE(B, NKV, rep, S, HS)),
                       TT_SHAPE(B, NH, S, HS));
    }
    tt_tensor *att = tt_mul_scalar(tt_matmul(q, tt_transpose(k, -2, -1)), scale);  // (B,NH,T,S)
    if (mask && mask->dtype == TT_BOOL) att = tt_masked_fill(att, tt_logical_not(mask), -INFINITY);
    else if (mask) att = tt_add(att, mask);
    if (causal) {
        tt_tensor *future = tt_zeros(TT_I32, TT_SHAPE(T, S));
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = i + 1; j < S; j++) tt_set(future, (int64_t[]){i, j}, 1);
        att = tt_masked_fill(att, future, -INFINITY);
    }
    return tt_matmul(tt_softmax(att, -1), v);
}

typedef tt_tensor *(*attn_fn)(tt_tensor *q, tt_tensor *k, tt_tensor *v, tt_tensor *mask,
                              bool causal, double scale);

// Runs f forward and backward with upstream gradient g; returns {y, dq, dk, dv, dmask}
// (copies; dmask only for a mask that requires grad).
typedef struct attn_run {
    tt_tensor *y, *dq, *dk, *dv, *dmask;
} attn_run;

static tt_tensor *zeros4(tt_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d) {
    return tt_zeros(dt, TT_SHAPE(a, b, c, d));
}

static tt_tensor *grad_copy(tt_tensor *x) { return x->grad ? tt_clone(x->grad) : NULL; }

static void zero_grads(tt_tensor *q, tt_tensor *k, tt_tensor *v, tt_tensor *mask) {
    tt_zero_grad(q);
    tt_zero_grad(k);
    tt_zero_grad(v);
    if (mask) tt_zero_grad(mask);
}

static attn_run run(attn_fn f, tt_tensor *q, tt_tensor *k, tt_tensor *v, tt_tensor *mask,
                    bool causal, double scale, tt_tensor *g) {
    zero_grads(q, k, v, mask);
    tt_tensor *y = f(q, k, v, mask, causal, scale);
    tt_backward_with(y, g);
    attn_run r = {tt_detach(y), grad_copy(q), grad_copy(k), grad_copy(v),
                  mask ? grad_copy(mask) : NULL};
    zero_grads(q, k, v, mask);
    return r;
}

// |a - b| <= tol (1 + |b|) everywhere.
static void assert_close(const tt_tensor *a, const tt_tensor *b, double tol, const char *what) {
    ck_assert_msg(a && b, "%s: missing tensor", what);
    char sa[64], sb[64];
    ck_assert_msg(tt_same_shape(a, b), "%s: shapes %s and %s differ", what,
                  tt_shape_str(a, sa, sizeof sa), tt_shape_str(b, sb, sizeof sb));
    for (int64_t i = 0, n = tt_numel(a); i < n; i++) {
        double x = tt_at(a, i), y = tt_at(b, i);
        ck_assert_msg(fabs(x - y) <= tol * (1 + fabs(y)), "%s: element %lld is %.12g, expected "
                      "%.12g (tolerance %g)", what, (long long)i, x, y, tol);
    }
}

static void assert_bitwise(const tt_tensor *a, const tt_tensor *b, const char *what) {
    ck_assert_msg(a && b && tt_same_shape(a, b), "%s: missing tensor or shapes differ", what);
    for (int64_t i = 0, n = tt_numel(a); i < n; i++) {
        double x = tt_at(a, i), y = tt_at(b, i);
        ck_assert_msg(memcmp(&x, &y, sizeof x) == 0, "%s: element %lld is %.17g vs %.17g", what,
                      (long long)i, x, y);
    }
}

static void assert_runs_close(attn_run a, attn_run b, double tol, const char *ctx) {
    char what[160];
    snprintf(what, sizeof what, "%s y", ctx);
    assert_close(a.y, b.y, tol, what);
    snprintf(what, sizeof what, "%s dq", ctx);
    assert_close(a.dq, b.dq, tol, what);
    snprintf(what, sizeof what, "%s dk", ctx);
    assert_close(a.dk, b.dk, tol, what);
    snprintf(what, sizeof what, "%s dv", ctx);
    assert_close(a.dv, b.dv, tol, what);
}

static void assert_runs_bitwise(attn_run a, attn_run b, const char *ctx) {
    char what[160];
    snprintf(what, sizeof what, "%s y", ctx);
    assert_bitwise(a.y, b.y, what);
    snprintf(what, sizeof what, "%s dq", ctx);
    assert_bitwise(a.dq, b.dq, what);
    snprintf(what, sizeof what, "%s dk", ctx);
    assert_bitwise(a.dk, b.dk, what);
    snprintf(what, sizeof what, "%s dv", ctx);
    assert_bitwise(a.dv, b.dv, what);
}

// ---- against the composition ----

// Tiles are TT_KATTN_BLOCK (32) rows: 37, 70 and 33 leave partial tiles; HS 3, 20 and 24 leave
// partial SIMD vectors; 64 fills two tiles exactly.
static const attn_shape shapes[] = {
    {1, 1, 1, 1, 1, 1, true},     {2, 3, 3, 5, 5, 4, true},    {1, 2, 1, 37, 37, 8, true},
    {2, 4, 2, 70, 70, 16, true},  {1, 2, 2, 33, 50, 24, false}, {1, 1, 1, 64, 64, 32, true},
    {2, 2, 1, 40, 40, 3, false},  {1, 3, 1, 9, 9, 20, true},    {1, 2, 2, 3, 65, 64, false},
};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

START_TEST(test_matches_composition) {
    const attn_shape *s = &shapes[_i];
    tt_cpu_level best = tt_cpu_get_level();
    for (int di = 0; di < 2; di++) {
        tt_dtype dt = di == 0 ? TT_F32 : TT_F64;
        double tol = dt == TT_F32 ? 1e-5 : 1e-12, scale = 1 / sqrt((double)s->HS);
        tt_scope_begin();
        tt_tensor *q = leaf(dt, s->B, s->NH, s->T, s->HS);
        tt_tensor *k = leaf(dt, s->B, s->NKV, s->S, s->HS);
        tt_tensor *v = leaf(dt, s->B, s->NKV, s->S, s->HS);
        tt_tensor *g = tt_uniform(&rng, dt, TT_SHAPE(s->B, s->NH, s->T, s->HS), -1, 1);
        attn_run want = run(composition, q, k, v, NULL, s->causal, scale, g);
        // f64 always runs the portable code; f32 runs every ISA the CPU has.
        for (int isa = dt == TT_F32 ? 0 : (int)best; isa <= (int)best; isa++) {
            tt_cpu_set_level((tt_cpu_level)isa);
            attn_run got = run(tt_scaled_dot_product_attention, q, k, v, NULL, s->causal, scale,
                               g);
            char ctx[96];
            snprintf(ctx, sizeof ctx, "shape %d %s %s", _i, tt_dtype_name(dt),
                     tt_cpu_level_name((tt_cpu_level)isa));
            assert_runs_close(got, want, tol, ctx);
        }
        tt_cpu_set_level(best);
        tt_scope_end();
    }
}
END_TEST

// A scale other than 1 / sqrt(HS), and large scores (max-subtraction keeps them finite).
START_TEST(test_scale_and_large_scores) {
    tt_scope_begin();
    tt_tensor *q = tt_set_requires_grad(tt_uniform(&rng, TT_F64, TT_SHAPE(1, 2, 35, 4), -8, 8),
                                        true);
    tt_tensor *k = leaf(TT_F64, 1, 2, 35, 4), *v = leaf(TT_F64, 1, 2, 35, 4);
    tt_tensor *g = tt_uniform(&rng, TT_F64, TT_SHAPE(1, 2, 35, 4), -1, 1);
    for (int causal = 0; causal < 2; causal++) {
        attn_run want = run(composition, q, k, v, NULL, causal, 3.0, g);
        attn_run got = run(tt_scaled_dot_product_attention, q, k, v, NULL, causal, 3.0, g);
        assert_runs_close(got, want, 1e-12, causal ? "causal" : "full");
    }
    tt_scope_end();
}
END_TEST

// ---- GQA ----

// NKV < NH equals the same op with k and v repeated into NH contiguous heads: the forward
// bitwise (same arithmetic per head), the gradients within rounding (summed in another order).
START_TEST(test_gqa_equals_repeated_kv) {
    tt_dtype dt = _i == 0 ? TT_F32 : TT_F64;
    double tol = dt == TT_F32 ? 1e-5 : 1e-12;
    int64_t B = 2, NH = 6, NKV = 2, T = 45, HS = 8, rep = NH / NKV;
    tt_scope_begin();
    tt_tensor *q = leaf(dt, B, NH, T, HS), *k = leaf(dt, B, NKV, T, HS);
    tt_tensor *v = leaf(dt, B, NKV, T, HS);
    tt_tensor *kr = tt_set_requires_grad(tt_empty(dt, TT_SHAPE(B, NH, T, HS)), true);
    tt_tensor *vr = tt_set_requires_grad(tt_empty(dt, TT_SHAPE(B, NH, T, HS)), true);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++)
            for (int64_t t = 0; t < T; t++)
                for (int64_t d = 0; d < HS; d++) {
                    int64_t src[4] = {b, h / rep, t, d}, dst[4] = {b, h, t, d};
                    tt_set(kr, dst, tt_get(k, src));
                    tt_set(vr, dst, tt_get(v, src));
                }
    tt_tensor *g = tt_uniform(&rng, dt, TT_SHAPE(B, NH, T, HS), -1, 1);
    attn_run gqa = run(tt_scaled_dot_product_attention, q, k, v, NULL, true, 0.35, g);
    attn_run full = run(tt_scaled_dot_product_attention, q, kr, vr, NULL, true, 0.35, g);
    assert_bitwise(gqa.y, full.y, "gqa y");
    assert_bitwise(gqa.dq, full.dq, "gqa dq");
    // dk of kv head g is the sum of the repeated heads' dk.
    tt_tensor *dk = tt_sum(tt_reshape(full.dk, TT_SHAPE(B, NKV, rep, T, HS)), TT_DIMS(2), false);
    tt_tensor *dv = tt_sum(tt_reshape(full.dv, TT_SHAPE(B, NKV, rep, T, HS)), TT_DIMS(2), false);
    assert_close(gqa.dk, dk, tol, "gqa dk");
    assert_close(gqa.dv, dv, tol, "gqa dv");
    tt_scope_end();
}
END_TEST

// ---- determinism ----

// Large enough to run on several threads (B NH T S HS >= 2^18); results are bitwise the same.
START_TEST(test_threads_bitwise) {
    tt_dtype dt = _i == 0 ? TT_F32 : TT_F64;
    int prev = tt_get_num_threads();
    tt_scope_begin();
    tt_tensor *q = leaf(dt, 2, 4, 70, 16), *k = leaf(dt, 2, 2, 70, 16);
    tt_tensor *v = leaf(dt, 2, 2, 70, 16);
    tt_tensor *g = tt_uniform(&rng, dt, TT_SHAPE(2, 4, 70, 16), -1, 1);
    for (int causal = 0; causal < 2; causal++) {
        tt_set_num_threads(1);
        attn_run one = run(tt_scaled_dot_product_attention, q, k, v, NULL, causal, 0.25, g);
        tt_set_num_threads(2);
        attn_run two = run(tt_scaled_dot_product_attention, q, k, v, NULL, causal, 0.25, g);
        attn_run again = run(tt_scaled_dot_product_attention, q, k, v, NULL, causal, 0.25, g);
        assert_runs_bitwise(one, two, "1 vs 2 threads");
        assert_runs_bitwise(two, again, "run to run");
    }
    tt_scope_end();
    tt_set_num_threads(prev);
}
END_TEST

// ---- layouts ----

// The transpose of dims 1, 2 of a fresh (B, R, H, HS) tensor: what nn/transformer.c passes.
static tt_tensor *heads_view(tt_dtype dt, int64_t B, int64_t H, int64_t R, int64_t HS) {
    tt_tensor *base = tt_uniform(&rng, dt, TT_SHAPE(B, R, H, HS), -1, 1);
    return tt_set_requires_grad(tt_as_strided(base, 4, (int64_t[]){B, H, R, HS},
                                              (int64_t[]){R * H * HS, HS, H * HS, 1}, 0),
                                true);
}

// A view whose head dim is not unit-stride: the transpose of dims 2, 3 of (B, H, HS, R).
static tt_tensor *strided_head_view(tt_tensor *like) {
    int64_t B = like->shape[0], H = like->shape[1], R = like->shape[2], HS = like->shape[3];
    tt_tensor *base = tt_empty(like->dtype, TT_SHAPE(B, H, HS, R));
    tt_tensor *view = tt_as_strided(base, 4, (int64_t[]){B, H, R, HS},
                                    (int64_t[]){H * HS * R, HS * R, 1, R}, 0);
    tt_copy_(view, like);
    return tt_set_requires_grad(view, true);
}

static tt_tensor *contiguous_leaf(tt_tensor *like) {
    tt_tensor *c = tt_empty(like->dtype, like->ndim, like->shape);
    tt_copy_(c, like);
    return tt_set_requires_grad(c, true);
}

START_TEST(test_strided_inputs_bitwise) {
    tt_dtype dt = _i == 0 ? TT_F32 : TT_F64;
    int64_t B = 2, NH = 4, NKV = 2, T = 37, HS = 16;
    tt_scope_begin();
    tt_tensor *q = heads_view(dt, B, NH, T, HS), *k = heads_view(dt, B, NKV, T, HS);
    tt_tensor *v = heads_view(dt, B, NKV, T, HS);
    tt_tensor *qc = contiguous_leaf(q), *kc = contiguous_leaf(k), *vc = contiguous_leaf(v);
    tt_tensor *qs = strided_head_view(q), *ks = strided_head_view(k);
    tt_tensor *vs = strided_head_view(v);
    ck_assert(!tt_is_contiguous(q) && !tt_is_contiguous(qs));
    tt_tensor *g = tt_uniform(&rng, dt, TT_SHAPE(B, NH, T, HS), -1, 1);
    attn_run a = run(tt_scaled_dot_product_attention, q, k, v, NULL, true, 0.25, g);
    attn_run b = run(tt_scaled_dot_product_attention, qc, kc, vc, NULL, true, 0.25, g);
    attn_run c = run(tt_scaled_dot_product_attention, qs, ks, vs, NULL, true, 0.25, g);
    assert_runs_bitwise(a, b, "transposed views vs contiguous");
    assert_runs_bitwise(c, b, "strided head dim vs contiguous");
    // The output is (B, NH, T, HS) over (B, T, NH, HS) memory: back to (B, T, C) for free.
    ck_assert(tt_is_contiguous(tt_transpose(a.y, 1, 2)));
    tt_scope_end();
}
END_TEST

// ---- causality ----

// Query i never sees keys j > i: changing them leaves y[:, :, 0 .. i] bitwise unchanged, and
// the gradient of y[:, :, i] reaches no k or v row after i.
START_TEST(test_causal_no_future) {
    tt_dtype dt = _i == 0 ? TT_F32 : TT_F64;
    int64_t B = 1, NH = 2, T = 41, HS = 8, i = 19;
    tt_scope_begin();
    tt_tensor *q = leaf(dt, B, NH, T, HS), *k = leaf(dt, B, NH, T, HS);
    tt_tensor *v = leaf(dt, B, NH, T, HS);
    tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, NULL, true, 0.5);
    tt_tensor *k2 = contiguous_leaf(k), *v2 = contiguous_leaf(v);
    tt_copy_(tt_slice(k2, 2, i + 1, T, 1), tt_uniform(&rng, dt, TT_SHAPE(B, NH, T - i - 1, HS),
                                                      -5, 5));
    tt_copy_(tt_slice(v2, 2, i + 1, T, 1), tt_uniform(&rng, dt, TT_SHAPE(B, NH, T - i - 1, HS),
                                                      -5, 5));
    tt_tensor *y2 = tt_scaled_dot_product_attention(q, k2, v2, NULL, true, 0.5);
    assert_bitwise(tt_slice(y2, 2, 0, i + 1, 1), tt_slice(y, 2, 0, i + 1, 1), "past rows");
    tt_tensor *g = tt_zeros(dt, TT_SHAPE(B, NH, T, HS));
    tt_copy_(tt_slice(g, 2, i, i + 1, 1), tt_ones(dt, TT_SHAPE(B, NH, 1, HS)));
    tt_backward_with(y, g);
    for (int64_t j = 0; j < T; j++)
        for (int64_t h = 0; h < NH; h++)
            for (int64_t d = 0; d < HS; d++) {
                int64_t at[4] = {0, h, j, d};
                double dk = tt_get(tt_grad(k), at), dv = tt_get(tt_grad(v), at);
                double dq = tt_get(tt_grad(q), at);
                if (j > i) ck_assert_msg(dk == 0 && dv == 0, "key %lld > %lld got a gradient",
                                         (long long)j, (long long)i);
                if (j != i) ck_assert_msg(dq == 0, "query %lld got a gradient", (long long)j);
            }
    ck_assert(tt_get(tt_grad(v), (int64_t[]){0, 0, i, 0}) != 0);
    tt_scope_end();
}
END_TEST

// A NaN key poisons exactly the rows that see it: rows >= its position (causal), in every ISA.
START_TEST(test_nan_propagates) {
    tt_dtype dt = _i == 0 ? TT_F32 : TT_F64;
    int64_t T = 40, HS = 16, j = 27;
    tt_cpu_level best = tt_cpu_get_level();
    tt_scope_begin();
    tt_tensor *q = leaf(dt, 1, 1, T, HS), *k = leaf(dt, 1, 1, T, HS), *v = leaf(dt, 1, 1, T, HS);
    tt_set(k, (int64_t[]){0, 0, j, 3}, NAN);
    for (int isa = dt == TT_F32 ? 0 : (int)best; isa <= (int)best; isa++) {
        tt_cpu_set_level((tt_cpu_level)isa);
        tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, NULL, true, 0.25);
        for (int64_t i = 0; i < T; i++)
            for (int64_t d = 0; d < HS; d++) {
                double x = tt_get(y, (int64_t[]){0, 0, i, d});
                ck_assert_msg(i >= j ? isnan(x) : isfinite(x), "%s row %lld: %g",
                              tt_cpu_level_name((tt_cpu_level)isa), (long long)i, x);
            }
    }
    tt_cpu_set_level(best);
    tt_scope_end();
}
END_TEST

// Scores far apart: the small weights underflow to exactly 0 (f32 flushes below exp(-87)), and
// the result is the composition's.
START_TEST(test_peaked_weights) {
    tt_cpu_level best = tt_cpu_get_level();
    tt_scope_begin();
    tt_tensor *q = tt_set_requires_grad(tt_uniform(&rng, TT_F32, TT_SHAPE(1, 2, 50, 8), -1, 1),
                                        true);
    tt_tensor *k = leaf(TT_F32, 1, 2, 50, 8), *v = leaf(TT_F32, 1, 2, 50, 8);
    tt_tensor *g = tt_uniform(&rng, TT_F32, TT_SHAPE(1, 2, 50, 8), -1, 1);
    attn_run want = run(composition, q, k, v, NULL, true, 60.0, g);
    for (int isa = 0; isa <= (int)best; isa++) {
        tt_cpu_set_level((tt_cpu_level)isa);
        attn_run got = run(tt_scaled_dot_product_attention, q, k, v, NULL, true, 60.0, g);
        assert_runs_close(got, want, 1e-4, tt_cpu_level_name((tt_cpu_level)isa));
    }
    tt_cpu_set_level(best);
    tt_scope_end();
}
END_TEST

// ---- values ----

// q = (1, 2), k = (1, -1), v = (3, 5) with HS = 1, scale 1. Causal: row 0 sees key 0 only
// (y = 3); row 1 has scores (2, -2). Full: row 0 has scores (1, -1).
START_TEST(test_values) {
    tt_dtype dt = _i == 0 ? TT_F32 : TT_F64;
    tt_scope_begin();
    tt_tensor *q = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(1, 1, 2, 1), 1, 2), true);
    tt_tensor *k = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(1, 1, 2, 1), 1, -1), true);
    tt_tensor *v = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(1, 1, 2, 1), 3, 5), true);
    double p4 = 1 / (1 + exp(-4.0)), p2 = 1 / (1 + exp(-2.0));
    tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, NULL, true, 1);
    ck_assert_values(y, 1e-6, 1e-6, 3, 3 * p4 + 5 * (1 - p4));
    ck_assert_values(tt_scaled_dot_product_attention(q, k, v, NULL, false, 1), 1e-6, 1e-6,
                     3 * p2 + 5 * (1 - p2), 3 * p4 + 5 * (1 - p4));
    // dy/dv for g = (1, 1): row 0 puts 1 on v0, row 1 puts p on v0 and 1 - p on v1.
    tt_backward_with(y, tt_ones(dt, TT_SHAPE(1, 1, 2, 1)));
    ck_assert_values(tt_grad(v), 1e-6, 1e-6, 1 + p4, 1 - p4);
    // dy1/dq1 = sum_j p_j k_j (v_j - y1): p (1)(3 - y1) + (1 - p)(-1)(5 - y1); dq0 = 0.
    double y1 = 3 * p4 + 5 * (1 - p4);
    ck_assert_values(tt_grad(q), 1e-6, 1e-6, 0, p4 * (3 - y1) - (1 - p4) * (5 - y1));
    tt_scope_end();
}
END_TEST

// T = 1 and an empty batch of queries.
START_TEST(test_edge_sizes) {
    tt_scope_begin();
    tt_tensor *q = leaf(TT_F64, 2, 2, 1, 3), *k = leaf(TT_F64, 2, 1, 1, 3);
    tt_tensor *v = leaf(TT_F64, 2, 1, 1, 3);
    tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, NULL, true, 0.5);  // one key: y = v
    for (int64_t h = 0; h < 2; h++)
        for (int64_t d = 0; d < 3; d++)
            ck_assert_double_eq(tt_get(y, (int64_t[]){1, h, 0, d}),
                                tt_get(v, (int64_t[]){1, 0, 0, d}));
    tt_tensor *e = tt_scaled_dot_product_attention(leaf(TT_F32, 2, 2, 0, 3),
                                                   leaf(TT_F32, 2, 2, 5, 3),
                                                   leaf(TT_F32, 2, 2, 5, 3), NULL, false, 1);
    ck_assert_int_eq(tt_numel(e), 0);
    ck_assert_int_eq(e->shape[2], 0);
    tt_scope_end();
}
END_TEST

// ---- autograd bookkeeping ----

// Only the inputs that require grad get one, with the same values as when all do; no node is
// recorded with grad mode off.
START_TEST(test_partial_grads) {
    tt_scope_begin();
    tt_tensor *q = leaf(TT_F64, 1, 2, 20, 5), *k = leaf(TT_F64, 1, 2, 20, 5);
    tt_tensor *v = leaf(TT_F64, 1, 2, 20, 5);
    tt_tensor *g = tt_uniform(&rng, TT_F64, TT_SHAPE(1, 2, 20, 5), -1, 1);
    attn_run all = run(tt_scaled_dot_product_attention, q, k, v, NULL, true, 0.4, g);
    tt_set_requires_grad(k, false);
    tt_set_requires_grad(v, false);
    attn_run only_q = run(tt_scaled_dot_product_attention, q, k, v, NULL, true, 0.4, g);
    ck_assert_ptr_null(only_q.dk);
    ck_assert_ptr_null(only_q.dv);
    assert_bitwise(only_q.dq, all.dq, "dq alone");
    tt_set_requires_grad(q, false);
    tt_set_requires_grad(v, true);
    attn_run only_v = run(tt_scaled_dot_product_attention, q, k, v, NULL, true, 0.4, g);
    ck_assert_ptr_null(only_v.dq);
    assert_bitwise(only_v.dv, all.dv, "dv alone");
    bool prev = tt_set_grad_enabled(false);
    tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, NULL, true, 0.4);
    ck_assert(!y->requires_grad && !y->node);
    tt_set_grad_enabled(prev);
    tt_scope_end();
}
END_TEST

// What the graph keeps for the backward is y (the output itself) and lse (B, NH, T): the
// live bytes grow by exactly those, where the composition keeps (B, NH, T, T) matrices.
START_TEST(test_memory_kept) {
    int64_t B = 2, NH = 3, T = 96, HS = 16;
    tt_scope_begin();
    tt_tensor *q = leaf(TT_F32, B, NH, T, HS), *k = leaf(TT_F32, B, NH, T, HS);
    tt_tensor *v = leaf(TT_F32, B, NH, T, HS);
    int64_t before = tt_live_bytes();
    tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, NULL, true, 0.25);
    int64_t kept = tt_live_bytes() - before;
    ck_assert_int_eq(kept, (B * NH * T * HS + B * NH * T) * (int64_t)sizeof(float));
    tt_backward_with(y, tt_ones(TT_F32, TT_SHAPE(B, NH, T, HS)));
    tt_scope_end();
}
END_TEST

// ---- masks ----

// A bool mask of the given shape, each element true with probability 0.7 (key 0 always).
static tt_tensor *random_bool_mask(int ndim, const int64_t *shape) {
    tt_tensor *u = tt_uniform(&rng, TT_F64, ndim, shape, 0, 1);
    tt_tensor *m = tt_ge_scalar(u, 0.3);
    tt_fill_(tt_narrow(m, -1, 0, 1), 1);
    return m;
}

// Masks of every kind and broadcast against the composition softmax(q k^T scale + mask) v, on
// every ISA (f32) and in f64; shapes cross the 32-row tiles; the float masks get gradients.
typedef struct mask_case {
    attn_shape sh;
    bool is_bool;
    int ndim;
    int64_t shape[4];
} mask_case;

static const mask_case mask_cases[] = {
    {{2, 2, 2, 37, 37, 8, false}, true, 4, {2, 2, 37, 37}},
    {{2, 2, 1, 40, 40, 16, true}, false, 2, {40, 40}},
    {{2, 3, 3, 33, 70, 20, false}, true, 4, {2, 1, 1, 70}},
    {{1, 4, 2, 9, 45, 3, false}, false, 4, {1, 4, 9, 45}},
    {{2, 2, 2, 35, 35, 24, true}, false, 4, {2, 1, 35, 1}},
    {{1, 2, 2, 64, 64, 32, true}, true, 3, {2, 64, 64}},
};
#define NMASKS (int)(sizeof mask_cases / sizeof mask_cases[0])

START_TEST(test_mask_matches_composition) {
    const mask_case *mc = &mask_cases[_i];
    const attn_shape *s = &mc->sh;
    tt_cpu_level best = tt_cpu_get_level();
    for (int di = 0; di < 2; di++) {
        tt_dtype dt = di == 0 ? TT_F32 : TT_F64;
        double tol = dt == TT_F32 ? 1e-5 : 1e-12, scale = 1 / sqrt((double)s->HS);
        tt_scope_begin();
        tt_tensor *q = leaf(dt, s->B, s->NH, s->T, s->HS);
        tt_tensor *k = leaf(dt, s->B, s->NKV, s->S, s->HS);
        tt_tensor *v = leaf(dt, s->B, s->NKV, s->S, s->HS);
        tt_tensor *mask = mc->is_bool ? random_bool_mask(mc->ndim, mc->shape)
                                      : tt_set_requires_grad(tt_uniform(&rng, dt, mc->ndim,
                                                                        mc->shape, -2, 2),
                                                             true);
        tt_tensor *g = tt_uniform(&rng, dt, TT_SHAPE(s->B, s->NH, s->T, s->HS), -1, 1);
        attn_run want = run(composition, q, k, v, mask, s->causal, scale, g);
        for (int isa = dt == TT_F32 ? 0 : (int)best; isa <= (int)best; isa++) {
            tt_cpu_set_level((tt_cpu_level)isa);
            attn_run got = run(tt_scaled_dot_product_attention, q, k, v, mask, s->causal, scale,
                               g);
            char ctx[96];
            snprintf(ctx, sizeof ctx, "mask case %d %s %s", _i, tt_dtype_name(dt),
                     tt_cpu_level_name((tt_cpu_level)isa));
            assert_runs_close(got, want, tol, ctx);
            if (!mc->is_bool) assert_close(got.dmask, want.dmask, tol, ctx);
        }
        tt_cpu_set_level(best);
        tt_scope_end();
    }
}
END_TEST

// A reference array as a tensor of dtype dt (bool: nonzero).
static tt_tensor *ref_tensor(tt_dtype dt, int ndim, const int64_t *shape, const double *v) {
    tt_tensor *t = tt_from_data(TT_F64, ndim, shape, v);
    return dt == TT_BOOL ? tt_ne_scalar(t, 0) : tt_to_dtype(t, dt);
}

// PyTorch 1.13's numbers (composed there; fully masked rows 0 as in PyTorch >= 2.5): y and the
// gradients of sum(y * g), f64 and f32 (inputs rounded; every ISA).
START_TEST(test_mask_pytorch_values) {
    const attn_mask_ref *c = &sdpa_refs[_i];
    tt_cpu_level best = tt_cpu_get_level();
    for (int di = 0; di < 2; di++) {
        tt_dtype dt = di == 0 ? TT_F32 : TT_F64;
        double tol = dt == TT_F32 ? 2e-5 : 1e-12;
        tt_scope_begin();
        int64_t qs[4] = {c->B, c->NH, c->T, c->HS}, ks[4] = {c->B, c->NKV, c->S, c->HS};
        tt_tensor *q = tt_set_requires_grad(ref_tensor(dt, 4, qs, c->q), true);
        tt_tensor *k = tt_set_requires_grad(ref_tensor(dt, 4, ks, c->k), true);
        tt_tensor *v = tt_set_requires_grad(ref_tensor(dt, 4, ks, c->v), true);
        tt_tensor *mask = ref_tensor(c->mask_kind == 0 ? TT_BOOL : dt, c->mask_ndim,
                                     c->mask_shape, c->mask);
        if (c->mask_kind == 1) tt_set_requires_grad(mask, true);
        tt_tensor *g = ref_tensor(dt, 4, qs, c->g);
        for (int isa = dt == TT_F32 ? 0 : (int)best; isa <= (int)best; isa++) {
            tt_cpu_set_level((tt_cpu_level)isa);
            attn_run got = run(tt_scaled_dot_product_attention, q, k, v, mask, c->causal,
                               c->scale, g);
            attn_run want = {ref_tensor(dt, 4, qs, c->y), ref_tensor(dt, 4, qs, c->dq),
                             ref_tensor(dt, 4, ks, c->dk), ref_tensor(dt, 4, ks, c->dv),
                             c->dmask ? ref_tensor(dt, c->mask_ndim, c->mask_shape, c->dmask)
                                      : NULL};
            char ctx[96];
            snprintf(ctx, sizeof ctx, "%s %s %s", c->name, tt_dtype_name(dt),
                     tt_cpu_level_name((tt_cpu_level)isa));
            assert_runs_close(got, want, tol, ctx);
            if (c->dmask) assert_close(got.dmask, want.dmask, tol, ctx);
            else ck_assert_ptr_null(got.dmask);
        }
        tt_cpu_set_level(best);
        tt_scope_end();
    }
}
END_TEST

// A query whose keys are all masked (bool false, or float -inf; alone or with causal) gets
// y = 0 exactly and sends no gradient anywhere; the other rows are unaffected.
START_TEST(test_mask_fully_masked_row) {
    tt_dtype dt = _i % 2 == 0 ? TT_F32 : TT_F64;
    bool is_bool = _i < 2;
    int64_t T = 36, HS = 8, dead = 33;
    tt_scope_begin();
    tt_tensor *q = leaf(dt, 1, 2, T, HS), *k = leaf(dt, 1, 2, T, HS), *v = leaf(dt, 1, 2, T, HS);
    tt_tensor *mask;
    if (is_bool) {
        mask = tt_ones(TT_BOOL, TT_SHAPE(T, T));
        tt_fill_(tt_narrow(mask, 0, dead, 1), 0);
    } else {
        mask = tt_zeros(dt, TT_SHAPE(T, T));
        tt_fill_(tt_narrow(mask, 0, dead, 1), -INFINITY);
    }
    tt_tensor *g = tt_zeros(dt, TT_SHAPE(1, 2, T, HS));
    tt_fill_(tt_narrow(g, 2, dead, 1), 1);  // only the dead row's output matters
    for (int causal = 0; causal < 2; causal++) {
        attn_run r = run(tt_scaled_dot_product_attention, q, k, v, mask, causal, 0.3, g);
        for (int64_t h = 0; h < 2; h++)
            for (int64_t d = 0; d < HS; d++)
                ck_assert_double_eq(tt_get(r.y, (int64_t[]){0, h, dead, d}), 0);
        ck_assert_double_eq(tt_item(tt_sum_all(tt_abs(r.dq))), 0);
        ck_assert_double_eq(tt_item(tt_sum_all(tt_abs(r.dk))), 0);
        ck_assert_double_eq(tt_item(tt_sum_all(tt_abs(r.dv))), 0);
        attn_run plain = run(tt_scaled_dot_product_attention, q, k, v, NULL, causal, 0.3, g);
        // rows before the dead one see the same keys with or without the mask
        assert_bitwise(tt_narrow(r.y, 2, 0, dead), tt_narrow(plain.y, 2, 0, dead), "other rows");
    }
    tt_scope_end();
}
END_TEST

// The last T of S causal queries (a KV cache's new rows, T != S) through a bool (T, S) mask,
// true where key j <= the query's position S - T + i: the rows of the full causal run, and the
// gradients of k and v those rows send.
START_TEST(test_mask_kv_cache_rows) {
    tt_dtype dt = _i == 0 ? TT_F32 : TT_F64;
    double tol = dt == TT_F32 ? 1e-6 : 1e-14;
    int64_t S = 45, T = 7, HS = 8;
    tt_scope_begin();
    tt_tensor *q = leaf(dt, 1, 2, S, HS), *k = leaf(dt, 1, 2, S, HS), *v = leaf(dt, 1, 2, S, HS);
    tt_tensor *g = tt_zeros(dt, TT_SHAPE(1, 2, S, HS));
    tt_copy_(tt_narrow(g, 2, S - T, T), tt_uniform(&rng, dt, TT_SHAPE(1, 2, T, HS), -1, 1));
    attn_run full = run(tt_scaled_dot_product_attention, q, k, v, NULL, true, 0.3, g);
    tt_tensor *qt = contiguous_leaf(tt_narrow(q, 2, S - T, T));
    tt_tensor *mask = tt_zeros(TT_BOOL, TT_SHAPE(T, S));
    for (int64_t i = 0; i < T; i++)
        tt_fill_(tt_narrow(tt_narrow(mask, 0, i, 1), 1, 0, S - T + i + 1), 1);
    attn_run tail = run(tt_scaled_dot_product_attention, qt, k, v, mask, false, 0.3,
                        tt_narrow(g, 2, S - T, T));
    assert_close(tail.y, tt_narrow(full.y, 2, S - T, T), tol, "kv-cache rows y");
    assert_close(tail.dq, tt_narrow(full.dq, 2, S - T, T), tol, "kv-cache rows dq");
    assert_close(tail.dk, full.dk, tol, "kv-cache rows dk");
    assert_close(tail.dv, full.dv, tol, "kv-cache rows dv");
    tt_scope_end();
}
END_TEST

// With masks the results are still bitwise the same for 1 and 2 threads (dmask included).
START_TEST(test_mask_threads_bitwise) {
    int prev = tt_get_num_threads();
    tt_scope_begin();
    tt_tensor *q = leaf(TT_F32, 2, 4, 70, 16), *k = leaf(TT_F32, 2, 2, 70, 16);
    tt_tensor *v = leaf(TT_F32, 2, 2, 70, 16);
    tt_tensor *g = tt_uniform(&rng, TT_F32, TT_SHAPE(2, 4, 70, 16), -1, 1);
    tt_tensor *masks[2] = {random_bool_mask(TT_SHAPE(2, 1, 70, 70)),
                           tt_set_requires_grad(tt_uniform(&rng, TT_F32, TT_SHAPE(4, 70, 70),
                                                           -1, 1), true)};
    for (int i = 0; i < 2; i++) {
        tt_set_num_threads(1);
        attn_run one = run(tt_scaled_dot_product_attention, q, k, v, masks[i], true, 0.25, g);
        tt_set_num_threads(2);
        attn_run two = run(tt_scaled_dot_product_attention, q, k, v, masks[i], true, 0.25, g);
        assert_runs_bitwise(one, two, "masked, 1 vs 2 threads");
        if (i == 1) assert_bitwise(one.dmask, two.dmask, "dmask, 1 vs 2 threads");
    }
    tt_scope_end();
    tt_set_num_threads(prev);
}
END_TEST

// A broadcast mask is read in place: the graph keeps y and lse, as without a mask (and the
// mask itself, which the caller owns), never a (B, NH, T, S) copy.
START_TEST(test_mask_no_copy) {
    int64_t B = 2, NH = 3, T = 96, HS = 16;
    tt_scope_begin();
    tt_tensor *q = leaf(TT_F32, B, NH, T, HS), *k = leaf(TT_F32, B, NH, T, HS);
    tt_tensor *v = leaf(TT_F32, B, NH, T, HS);
    tt_tensor *masks[2] = {random_bool_mask(TT_SHAPE(B, 1, 1, T)),
                           tt_uniform(&rng, TT_F32, TT_SHAPE(T, T), -1, 1)};
    for (int i = 0; i < 2; i++) {
        int64_t before = tt_live_bytes();
        tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, masks[i], false, 0.25);
        int64_t kept = tt_live_bytes() - before;
        ck_assert_int_eq(kept, (B * NH * T * HS + B * NH * T) * (int64_t)sizeof(float));
        tt_backward_with(y, tt_ones(TT_F32, TT_SHAPE(B, NH, T, HS)));
    }
    tt_scope_end();
}
END_TEST

// Writing into the mask after the forward is caught at backward (the backward reads it).
START_TEST(test_abort_mask_modified) {
    tt_expect_abort("was modified in place");
    tt_tensor *q = leaf(TT_F32, 1, 1, 4, 2), *k = leaf(TT_F32, 1, 1, 4, 2);
    tt_tensor *v = leaf(TT_F32, 1, 1, 4, 2), *mask = tt_zeros(TT_F32, TT_SHAPE(4, 4));
    tt_tensor *y = tt_scaled_dot_product_attention(q, k, v, mask, false, 1);
    tt_fill_(mask, 1);
    tt_backward_with(y, tt_ones(TT_F32, TT_SHAPE(1, 1, 4, 2)));
}
END_TEST

START_TEST(test_abort_mask_dtype) {
    tt_expect_abort("mask is i32 but q is f32; pass a bool mask (true = the key takes part)");
    tt_tensor *x = zeros4(TT_F32, 1, 1, 2, 2);
    tt_scaled_dot_product_attention(x, x, x, tt_zeros(TT_I32, TT_SHAPE(2, 2)), false, 1);
}
END_TEST

START_TEST(test_abort_mask_float_dtype) {
    tt_expect_abort("mask is f64 but q is f32");
    tt_tensor *x = zeros4(TT_F32, 1, 1, 2, 2);
    tt_scaled_dot_product_attention(x, x, x, tt_zeros(TT_F64, TT_SHAPE(2, 2)), false, 1);
}
END_TEST

START_TEST(test_abort_mask_shape) {
    tt_expect_abort("mask (3, 5) does not broadcast to the scores (B, NH, T, S) = (1, 2, 3, 4)");
    tt_scaled_dot_product_attention(zeros4(TT_F32, 1, 2, 3, 8), zeros4(TT_F32, 1, 2, 4, 8),
                                    zeros4(TT_F32, 1, 2, 4, 8),
                                    tt_zeros(TT_BOOL, TT_SHAPE(3, 5)), false, 1);
}
END_TEST

START_TEST(test_abort_mask_ndim) {
    tt_expect_abort("mask (1, 1, 1, 2, 2) does not broadcast to the scores");
    tt_tensor *x = zeros4(TT_F32, 1, 1, 2, 2);
    tt_scaled_dot_product_attention(x, x, x, tt_zeros(TT_BOOL, TT_SHAPE(1, 1, 1, 2, 2)), false,
                                    1);
}
END_TEST

// ---- aborts ----

START_TEST(test_abort_null) {
    tt_expect_abort("q is NULL");
    tt_scaled_dot_product_attention(NULL, zeros4(TT_F32, 1, 1, 2, 2), zeros4(TT_F32, 1, 1, 2, 2),
                                    NULL, false, 1);
}
END_TEST

START_TEST(test_abort_ndim) {
    tt_expect_abort("q (2, 4, 8) must be 4-d");
    tt_tensor *x = tt_zeros(TT_F32, TT_SHAPE(2, 4, 8));
    tt_scaled_dot_product_attention(x, x, x, NULL, false, 1);
}
END_TEST

START_TEST(test_abort_int_dtype) {
    tt_expect_abort("tensor (1, 1, 2, 2) is i32; this op needs f32 or f64");
    tt_tensor *x = zeros4(TT_I32, 1, 1, 2, 2);
    tt_scaled_dot_product_attention(x, x, x, NULL, false, 1);
}
END_TEST

START_TEST(test_abort_mixed_dtype) {
    tt_expect_abort("dtypes differ: (1, 1, 2, 2) f32 vs (1, 1, 2, 2) f64");
    tt_scaled_dot_product_attention(zeros4(TT_F32, 1, 1, 2, 2), zeros4(TT_F64, 1, 1, 2, 2),
                                    zeros4(TT_F64, 1, 1, 2, 2), NULL, false, 1);
}
END_TEST

START_TEST(test_abort_kv_shapes) {
    tt_expect_abort("k (1, 2, 4, 8) and v (1, 2, 5, 8) must have the same shape");
    tt_scaled_dot_product_attention(zeros4(TT_F32, 1, 2, 4, 8), zeros4(TT_F32, 1, 2, 4, 8),
                                    zeros4(TT_F32, 1, 2, 5, 8), NULL, false, 1);
}
END_TEST

START_TEST(test_abort_batch) {
    tt_expect_abort("q (2, 2, 4, 8) and k (1, 2, 4, 8) disagree: both need the same batch B");
    tt_scaled_dot_product_attention(zeros4(TT_F32, 2, 2, 4, 8), zeros4(TT_F32, 1, 2, 4, 8),
                                    zeros4(TT_F32, 1, 2, 4, 8), NULL, false, 1);
}
END_TEST

START_TEST(test_abort_head_size) {
    tt_expect_abort("q (1, 2, 4, 8) and k (1, 2, 4, 4) disagree: both need the same batch");
    tt_scaled_dot_product_attention(zeros4(TT_F32, 1, 2, 4, 8), zeros4(TT_F32, 1, 2, 4, 4),
                                    zeros4(TT_F32, 1, 2, 4, 4), NULL, false, 1);
}
END_TEST

START_TEST(test_abort_gqa_ratio) {
    tt_expect_abort("q has NH=4 heads and k, v have NKV=3; NH must be a multiple of NKV");
    tt_scaled_dot_product_attention(zeros4(TT_F32, 1, 4, 4, 8), zeros4(TT_F32, 1, 3, 4, 8),
                                    zeros4(TT_F32, 1, 3, 4, 8), NULL, false, 1);
}
END_TEST

START_TEST(test_abort_causal_lengths) {
    tt_expect_abort("causal attention needs as many queries as keys, got T=3");
    tt_scaled_dot_product_attention(zeros4(TT_F32, 1, 2, 3, 8), zeros4(TT_F32, 1, 2, 4, 8),
                                    zeros4(TT_F32, 1, 2, 4, 8), NULL, true, 1);
}
END_TEST

START_TEST(test_abort_no_keys) {
    tt_expect_abort("k (1, 2, 0, 8) has no keys (S=0)");
    tt_scaled_dot_product_attention(zeros4(TT_F32, 1, 2, 3, 8), zeros4(TT_F32, 1, 2, 0, 8),
                                    zeros4(TT_F32, 1, 2, 0, 8), NULL, false, 1);
}
END_TEST

START_TEST(test_abort_scale) {
    tt_expect_abort("scale must be finite, got nan");
    tt_tensor *x = zeros4(TT_F32, 1, 1, 2, 2);
    tt_scaled_dot_product_attention(x, x, x, NULL, false, NAN);
}
END_TEST

int main(void) {
    tt_rng_seed(&rng, 20240605);
    Suite *s = suite_create("ops_attention");
    TCase *tc = tt_tcase("composition");
    tcase_add_loop_test(tc, test_matches_composition, 0, NSHAPES);
    tcase_add_test(tc, test_scale_and_large_scores);
    tcase_add_loop_test(tc, test_gqa_equals_repeated_kv, 0, 2);
    suite_add_tcase(s, tc);
    TCase *det = tt_tcase("determinism_layouts");
    tcase_add_loop_test(det, test_threads_bitwise, 0, 2);
    tcase_add_loop_test(det, test_strided_inputs_bitwise, 0, 2);
    tcase_add_loop_test(det, test_causal_no_future, 0, 2);
    tcase_add_loop_test(det, test_nan_propagates, 0, 2);
    tcase_add_test(det, test_peaked_weights);
    suite_add_tcase(s, det);
    TCase *val = tt_tcase("values");
    tcase_add_loop_test(val, test_values, 0, 2);
    tcase_add_test(val, test_edge_sizes);
    tcase_add_test(val, test_partial_grads);
    tcase_add_test(val, test_memory_kept);
    suite_add_tcase(s, val);
    TCase *mk = tt_tcase("masks");
    tcase_add_loop_test(mk, test_mask_matches_composition, 0, NMASKS);
    tcase_add_loop_test(mk, test_mask_pytorch_values, 0,
                        (int)(sizeof sdpa_refs / sizeof sdpa_refs[0]));
    tcase_add_loop_test(mk, test_mask_fully_masked_row, 0, 4);
    tcase_add_loop_test(mk, test_mask_kv_cache_rows, 0, 2);
    tcase_add_test(mk, test_mask_threads_bitwise);
    tcase_add_test(mk, test_mask_no_copy);
    suite_add_tcase(s, mk);
    TCase *amk = tt_tcase_aborts("aborts_attention_masks");
    tcase_add_test_raise_signal(amk, test_abort_mask_modified, SIGABRT);
    tcase_add_test_raise_signal(amk, test_abort_mask_dtype, SIGABRT);
    tcase_add_test_raise_signal(amk, test_abort_mask_float_dtype, SIGABRT);
    tcase_add_test_raise_signal(amk, test_abort_mask_shape, SIGABRT);
    tcase_add_test_raise_signal(amk, test_abort_mask_ndim, SIGABRT);
    suite_add_tcase(s, amk);
    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_null, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_ndim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_int_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_mixed_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_kv_shapes, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_batch, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_head_size, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_gqa_ratio, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_causal_lengths, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_no_keys, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_scale, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

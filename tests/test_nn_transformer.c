// Check suite of the transformer modules: sinusoidal and learned positions, RoPE, the
// feed-forward block, attention (against a naive per-head loop in double, causality, GQA
// equivalence), the block (parameter names and counts, no leaks, train/eval) and the abort
// paths; attention masks (tt_nn_attention_forward_mask) against torch.nn.MultiheadAttention
// (tests/reference/attention_mask_values.h) and on the dropout path; the block, post-norm and
// pre-norm, against torch.nn.TransformerEncoderLayer (tests/reference/block_reference.h).
// Gradchecks are in tests/gc_nn_transformer.c (masks: tests/gc_ops_attention.c).
//
// Letters: B batch, T time, C channels, NH heads, NKV key/value heads, HS head size.
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#include "reference/attention_mask_values.h"
#include "reference/block_reference.h"

static const tt_dtype float_dtypes[2] = {TT_F32, TT_F64};

// Element-by-element |a - b| <= atol.
static void assert_same(const tt_tensor *a, const tt_tensor *b, double atol) {
    ck_assert(tt_same_shape(a, b));
    for (int64_t i = 0; i < tt_numel(a); i++)
        ck_assert_msg(fabs(tt_at(a, i) - tt_at(b, i)) <= atol, "element %lld: %.17g vs %.17g",
                      (long long)i, tt_at(a, i), tt_at(b, i));
}

static double max_abs_diff(const tt_tensor *a, const tt_tensor *b) {
    double m = 0;
    for (int64_t i = 0; i < tt_numel(a); i++) m = fmax(m, fabs(tt_at(a, i) - tt_at(b, i)));
    return m;
}

// ---- sinusoidal ----

// PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(p / 10000^(2i/C)); C = 4: 10000^(2/4) =
// 100.
START_TEST(test_sinusoidal_values) {
    tt_dtype dt = float_dtypes[_i];
    tt_dtype prev = tt_set_default_dtype(dt);
    tt_nn_sinusoidal s;
    tt_nn_sinusoidal_init(&s, 3, 4);
    tt_nn_sinusoidal odd;
    tt_nn_sinusoidal_init(&odd, 2, 3);
    tt_set_default_dtype(prev);
    ck_assert_int_eq(s.table->dtype, dt);
    ck_assert_values(s.table, 1e-7, 1e-6, 0, 1, 0, 1, sin(1), cos(1), sin(0.01), cos(0.01),
                     sin(2), cos(2), sin(0.02), cos(0.02));
    // C = 3: the last column is a sine of p / 10000^(2/3).
    ck_assert_values(odd.table, 1e-7, 1e-6, 0, 1, 0, sin(1), cos(1), sin(pow(10000, -2.0 / 3)));

    tt_scope_begin();
    tt_tensor *x = tt_full(dt, TT_SHAPE(2, 2, 4), 1.0);  // (B, T, C)
    tt_tensor *y = tt_nn_sinusoidal_forward(&s, x, 1);    // rows 1 and 2, for each batch element
    ck_assert_int_eq(y->ndim, 3);
    ck_assert_values(y, 1e-7, 1e-6, 1 + sin(1), 1 + cos(1), 1 + sin(0.01), 1 + cos(0.01),
                     1 + sin(2), 1 + cos(2), 1 + sin(0.02), 1 + cos(0.02), 1 + sin(1),
                     1 + cos(1), 1 + sin(0.01), 1 + cos(0.01), 1 + sin(2), 1 + cos(2),
                     1 + sin(0.02), 1 + cos(0.02));
    tt_scope_end();
    tt_nn_sinusoidal_free(&s);
    tt_nn_sinusoidal_free(&odd);
}
END_TEST

// ---- learned positions ----

START_TEST(test_pos_embedding_values) {
    tt_rng rng;
    tt_rng_seed(&rng, 7);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_pos_embedding pe;
    tt_nn_pos_embedding_init(&pe, 4, 3, 1.0, &rng);
    tt_set_default_dtype(prev);
    ck_assert(pe.weight->requires_grad);
    ck_assert_int_eq(pe.weight->shape[0], 4);
    ck_assert_int_eq(pe.weight->shape[1], 3);

    tt_scope_begin();
    tt_tensor *x = tt_zeros(TT_F64, TT_SHAPE(2, 2, 3));  // (B, T, C)
    tt_tensor *y = tt_nn_pos_embedding_forward(&pe, x, 1);  // weight rows 1, 2 for each b
    for (int64_t b = 0; b < 2; b++)
        for (int64_t t = 0; t < 2; t++)
            for (int64_t c = 0; c < 3; c++)
                ck_assert_double_eq(tt_get(y, (int64_t[]){b, t, c}),
                                    tt_get(pe.weight, (int64_t[]){t + 1, c}));
    // d sum(y) / d weight: B = 2 on the rows used, 0 elsewhere.
    tt_backward(tt_sum_all(y));
    ck_assert_values(tt_grad(pe.weight), 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 0, 0, 0);
    tt_scope_end();

    tt_params p;
    tt_params_init(&p);
    tt_nn_pos_embedding_params(&pe, &p, "wpe");
    ck_assert_int_eq(p.n, 1);
    ck_assert_str_eq(p.items[0].name, "wpe.weight");
    tt_params_free(&p);
    tt_nn_pos_embedding_free(&pe);
}
END_TEST

// ---- RoPE ----

// At position 0 every angle is 0: the identity. At any position each pair (i, i + HS/2) is
// rotated, so its norm is kept.
START_TEST(test_rope_identity_and_norms) {
    tt_dtype dt = float_dtypes[_i];
    double tol = dt == TT_F32 ? 1e-5 : 1e-12;
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_dtype prev = tt_set_default_dtype(dt);
    tt_nn_rope rope;
    tt_nn_rope_init(&rope, 6, 16, 10000);
    tt_set_default_dtype(prev);

    tt_scope_begin();
    tt_tensor *x0 = tt_randn(&rng, dt, TT_SHAPE(2, 3, 1, 6));  // (B, NH, 1, HS)
    assert_same(tt_nn_rope_forward(&rope, x0, 0), x0, 0);

    tt_tensor *x = tt_randn(&rng, dt, TT_SHAPE(2, 3, 5, 6));  // (B, NH, T, HS)
    tt_tensor *y = tt_nn_rope_forward(&rope, x, 7);
    ck_assert(tt_same_shape(x, y));
    for (int64_t r = 0; r < 2 * 3 * 5; r++) {
        for (int64_t i = 0; i < 3; i++) {
            double a = tt_at(x, r * 6 + i), b = tt_at(x, r * 6 + i + 3);
            double c = tt_at(y, r * 6 + i), d = tt_at(y, r * 6 + i + 3);
            ck_assert_close(c * c + d * d, a * a + b * b, tol, tol);
        }
    }
    // Position 0 of a longer sequence is unchanged too.
    tt_tensor *z = tt_nn_rope_forward(&rope, x, 0);
    for (int64_t r = 0; r < 2 * 3; r++)
        for (int64_t i = 0; i < 6; i++)
            ck_assert_double_eq(tt_at(z, r * 5 * 6 + i), tt_at(x, r * 5 * 6 + i));
    tt_scope_end();
    tt_nn_rope_free(&rope);
}
END_TEST

// HS = 4, base 10000: theta_0 = 1, theta_1 = 10000^(-1/2) = 0.01. x = (1, 2, 3, 4) at p = 1:
// pair (x0, x2) = (1, 3) turns by 1 rad, pair (x1, x3) = (2, 4) by 0.01 rad.
START_TEST(test_rope_known_vector) {
    tt_dtype dt = float_dtypes[_i];
    tt_dtype prev = tt_set_default_dtype(dt);
    tt_nn_rope rope;
    tt_nn_rope_init(&rope, 4, 4, 10000);
    tt_set_default_dtype(prev);
    double e[4] = {1 * cos(1.0) - 3 * sin(1.0), 2 * cos(0.01) - 4 * sin(0.01),
                   3 * cos(1.0) + 1 * sin(1.0), 4 * cos(0.01) + 2 * sin(0.01)};

    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(dt, TT_SHAPE(1, 1, 1, 4), 1, 2, 3, 4);
    ck_assert_values(tt_nn_rope_forward(&rope, x, 1), 1e-6, 1e-6, e[0], e[1], e[2], e[3]);
    // The same vector at row 1 of a sequence starting at 0 (row 0 is unchanged).
    tt_tensor *x2 = tt_test_tensor(dt, TT_SHAPE(1, 1, 2, 4), 1, 2, 3, 4, 1, 2, 3, 4);
    ck_assert_values(tt_nn_rope_forward(&rope, x2, 0), 1e-6, 1e-6, 1, 2, 3, 4, e[0], e[1], e[2],
                     e[3]);
    // The gradient is the inverse rotation: d sum(g * y) / dx = R^T g.
    tt_tensor *xg = tt_set_requires_grad(tt_test_tensor(dt, TT_SHAPE(1, 1, 1, 4), 1, 2, 3, 4),
                                         true);
    tt_backward_with(tt_nn_rope_forward(&rope, xg, 1), tt_test_tensor(dt, TT_SHAPE(1, 1, 1, 4),
                                                                       1, 0, 0, 0));
    ck_assert_values(tt_grad(xg), 1e-6, 1e-6, cos(1.0), 0, -sin(1.0), 0);
    tt_scope_end();
    tt_nn_rope_free(&rope);
}
END_TEST

// ---- feed-forward ----

START_TEST(test_feedforward_matches_composition) {
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_feedforward m;
    tt_nn_feedforward_init(&m, 5, 7, TT_ACT_RELU2, true, 0.0, &rng);
    tt_set_default_dtype(prev);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(2, 3, 5));  // (B, T, C)
    tt_tensor *h = tt_relu(tt_nn_linear_forward(&m.fc, x));
    tt_tensor *want = tt_nn_linear_forward(&m.proj, tt_mul(h, h));
    tt_tensor *y = tt_nn_feedforward_forward(&m, x);
    ck_assert_int_eq(y->shape[2], 5);
    assert_same(y, want, 1e-12);
    tt_scope_end();
    tt_nn_feedforward_free(&m);
}
END_TEST

// ---- parameter names and counts ----

static void assert_names(const tt_params *p, const char *const *names, int n) {
    ck_assert_int_eq(p->n, n);
    for (int i = 0; i < n; i++) ck_assert_str_eq(p->items[i].name, names[i]);
}

START_TEST(test_attention_params) {
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    int64_t C = 16, NH = 4, NKV = 2, HS = C / NH;
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = C, .n_head = NH, .n_kv_head = NKV,
                      .max_seq = 8, .causal = true, .bias = true, .qk_norm = true}, &rng);
    ck_assert_int_eq(a.head_dim, HS);
    ck_assert_double_eq(a.cfg.rope_base, 10000);
    ck_assert_ptr_null(a.rope.cos);
    tt_params p;
    tt_params_init(&p);
    tt_nn_attention_params(&a, &p, "attn");
    static const char *const names[] = {
        "attn.q_proj.weight", "attn.q_proj.bias", "attn.k_proj.weight", "attn.k_proj.bias",
        "attn.v_proj.weight", "attn.v_proj.bias", "attn.o_proj.weight", "attn.o_proj.bias",
        "attn.q_norm.weight", "attn.k_norm.weight",
    };
    assert_names(&p, names, 10);
    ck_assert_int_eq(tt_params_get(&p, "attn.k_proj.weight")->shape[0], NKV * HS);
    ck_assert_int_eq(tt_params_get(&p, "attn.k_proj.weight")->shape[1], C);
    ck_assert_int_eq(tt_params_get(&p, "attn.q_norm.weight")->shape[0], HS);
    // q and o: C x C + C; k and v: C x NKV HS + NKV HS; the norms HS each.
    int64_t want = 2 * (C * C + C) + 2 * (C * NKV * HS + NKV * HS) + 2 * HS;
    ck_assert_int_eq(tt_params_numel(&p), want);
    ck_assert_int_eq(want, 824);
    // The mask: 1 strictly above the diagonal.
    ck_assert_int_eq(a.mask->dtype, TT_I32);
    ck_assert_double_eq(tt_get(a.mask, (int64_t[]){2, 3}), 1);
    ck_assert_double_eq(tt_get(a.mask, (int64_t[]){3, 3}), 0);
    ck_assert_double_eq(tt_get(a.mask, (int64_t[]){7, 0}), 0);
    tt_params_free(&p);
    tt_nn_attention_free(&a);

    // No bias, no QK-norm: four weights; n_kv_head 0 means n_head.
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = C, .n_head = NH, .max_seq = 8},
                         &rng);
    ck_assert_int_eq(a.cfg.n_kv_head, NH);
    ck_assert_ptr_null(a.mask);
    tt_params_init(&p);
    tt_nn_attention_params(&a, &p, NULL);
    static const char *const plain[] = {"q_proj.weight", "k_proj.weight", "v_proj.weight",
                                        "o_proj.weight"};
    assert_names(&p, plain, 4);
    ck_assert_int_eq(tt_params_numel(&p), 4 * C * C);
    tt_params_free(&p);
    tt_nn_attention_free(&a);
}
END_TEST

// ---- the block against torch.nn.TransformerEncoderLayer ----

typedef struct block_ref {
    bool post_norm, attn_bias;
    tt_act act;
    const double *x, *r, *params, *y, *dx, *dparams;
} block_ref;

#define BLOCK_REF(name, post, bias, act)                                                    \
    {post, bias, act, name##_x, name##_r, name##_params, name##_y, name##_dx, name##_dparams}
static const block_ref block_refs[] = {
    BLOCK_REF(post_relu, true, true, TT_ACT_RELU),
    BLOCK_REF(pre_gelu, false, true, TT_ACT_GELU),
    BLOCK_REF(post_gelu_no_attn_bias, true, false, TT_ACT_GELU),
};

// PyTorch's TransformerEncoderLayer (batch_first, dropout 0, no mask) with the same weights:
// post-norm (norm_first=False) with ReLU, pre-norm with GELU, and post-norm with the attention
// biases off but the norms' and MLP's on (mlp_bias, norm_bias TT_BIAS_ON): output, input
// gradient and every parameter's gradient of sum(y * R), in f64.
START_TEST(test_block_matches_torch) {
    const block_ref *c = &block_refs[_i];
    enum { B = BLOCK_REF_B, T = BLOCK_REF_T, C = BLOCK_REF_C };
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_block b;
    tt_nn_block_init(&b, &(tt_nn_block_config){
        .attn = {.n_embd = C, .n_head = BLOCK_REF_NH, .max_seq = T, .bias = c->attn_bias},
        .mlp_hidden = BLOCK_REF_H, .act = c->act, .norm = TT_NORM_LAYERNORM,
        .post_norm = c->post_norm, .norm_bias = TT_BIAS_ON, .mlp_bias = TT_BIAS_ON}, &rng);
    tt_set_default_dtype(prev);
    tt_params p;
    tt_params_init(&p);
    tt_nn_block_params(&b, &p, NULL);
    ck_assert_int_eq(p.n, c->attn_bias ? 16 : 12);
    int64_t off = 0;
    for (int i = 0; i < p.n; i++) {
        tt_tensor *w = p.items[i].tensor;
        for (int64_t k = 0; k < tt_numel(w); k++) tt_set_at(w, k, c->params[off + k]);
        off += tt_numel(w);
    }
    tt_scope_begin();
    tt_tensor *x = tt_from_data(TT_F64, TT_SHAPE(B, T, C), c->x);
    tt_set_requires_grad(x, true);
    tt_tensor *y = tt_nn_block_forward(&b, x);
    tt_tensor *r = tt_from_data(TT_F64, TT_SHAPE(B, T, C), c->r);
    tt_backward(tt_sum(tt_mul(y, r), 0, NULL, false));
    for (int64_t k = 0; k < B * T * C; k++) {
        ck_assert_msg(fabs(tt_at(y, k) - c->y[k]) < 1e-12, "y[%lld]: %.17g vs torch %.17g",
                      (long long)k, tt_at(y, k), c->y[k]);
        ck_assert_msg(fabs(tt_at(tt_grad(x), k) - c->dx[k]) < 1e-12, "dx[%lld]: %.17g vs "
                      "torch %.17g", (long long)k, tt_at(tt_grad(x), k), c->dx[k]);
    }
    off = 0;
    for (int i = 0; i < p.n; i++) {
        const tt_tensor *g = tt_grad(p.items[i].tensor);
        ck_assert_ptr_nonnull(g);
        for (int64_t k = 0; k < tt_numel(g); k++)
            ck_assert_msg(fabs(tt_at(g, k) - c->dparams[off + k]) < 1e-11, "d %s[%lld]: %.17g "
                          "vs torch %.17g", p.items[i].name, (long long)k, tt_at(g, k),
                          c->dparams[off + k]);
        off += tt_numel(g);
    }
    tt_scope_end();
    tt_params_free(&p);
    tt_nn_block_free(&b);
}
END_TEST

// tt_nn_block_forward_cached, one position at a time, gives tt_nn_block_forward's rows, pre-norm
// and post-norm (causal, no grad).
START_TEST(test_block_cached_matches_forward) {
    enum { B = 2, T = 4, C = 8, NH = 2, HS = C / NH };
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_nn_block b;
    tt_nn_block_init(&b, &(tt_nn_block_config){
        .attn = {.n_embd = C, .n_head = NH, .max_seq = T, .causal = true, .bias = true},
        .act = TT_ACT_GELU, .norm = TT_NORM_LAYERNORM, .post_norm = _i == 1}, &rng);
    bool prev = tt_set_grad_enabled(false);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(B, T, C));
    tt_tensor *full = tt_nn_block_forward(&b, x);
    tt_tensor *kc = tt_zeros(TT_F32, TT_SHAPE(B, NH, T, HS));
    tt_tensor *vc = tt_zeros(TT_F32, TT_SHAPE(B, NH, T, HS));
    for (int64_t t = 0; t < T; t++) {
        tt_tensor *y = tt_nn_block_forward_cached(&b, tt_narrow(x, 1, t, 1), kc, vc, t);
        assert_same(y, tt_narrow(full, 1, t, 1), 1e-5);
    }
    tt_scope_end();
    tt_set_grad_enabled(prev);
    tt_nn_block_free(&b);
}
END_TEST

// The norms' and the MLP's biases follow attn.bias at zero (every existing config) and are
// switched on their own otherwise.
START_TEST(test_block_bias_switches) {
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    const struct {
        bool attn;
        tt_nn_block_bias norm, mlp;
        bool want_attn, want_norm, want_mlp;
    } cases[] = {
        {true, TT_BIAS_LIKE_ATTN, TT_BIAS_LIKE_ATTN, true, true, true},
        {false, TT_BIAS_LIKE_ATTN, TT_BIAS_LIKE_ATTN, false, false, false},
        {true, TT_BIAS_OFF, TT_BIAS_LIKE_ATTN, true, false, true},
        {true, TT_BIAS_LIKE_ATTN, TT_BIAS_OFF, true, true, false},
        {false, TT_BIAS_ON, TT_BIAS_OFF, false, true, false},
        {false, TT_BIAS_OFF, TT_BIAS_ON, false, false, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_nn_block b;
        tt_nn_block_init(&b, &(tt_nn_block_config){
            .attn = {.n_embd = 8, .n_head = 2, .max_seq = 4, .bias = cases[i].attn},
            .act = TT_ACT_GELU, .norm = TT_NORM_LAYERNORM, .norm_bias = cases[i].norm,
            .mlp_bias = cases[i].mlp}, &rng);
        ck_assert_msg((b.attn.q_proj.bias != NULL) == cases[i].want_attn, "case %zu", i);
        ck_assert_msg((b.attn.o_proj.bias != NULL) == cases[i].want_attn, "case %zu", i);
        ck_assert_msg((b.norm1.ln.bias != NULL) == cases[i].want_norm, "case %zu", i);
        ck_assert_msg((b.norm2.ln.bias != NULL) == cases[i].want_norm, "case %zu", i);
        ck_assert_msg((b.mlp.fc.bias != NULL) == cases[i].want_mlp, "case %zu", i);
        ck_assert_msg((b.mlp.proj.bias != NULL) == cases[i].want_mlp, "case %zu", i);
        tt_nn_block_free(&b);
    }
}
END_TEST

START_TEST(test_block_bad_bias_aborts) {
    tt_expect_abort("tt_nn_block_init: mlp_bias is 7; use TT_BIAS_LIKE_ATTN (0), TT_BIAS_ON or "
                    "TT_BIAS_OFF");
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_nn_block b;
    tt_nn_block_init(&b, &(tt_nn_block_config){.attn = {.n_embd = 8, .n_head = 2, .max_seq = 4},
                                               .mlp_bias = (tt_nn_block_bias)7}, &rng);
}
END_TEST

START_TEST(test_feedforward_block_params) {
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    int64_t C = 16, H = 64, NH = 4, NKV = 2, HS = C / NH;
    tt_nn_feedforward m;
    tt_nn_feedforward_init(&m, C, H, TT_ACT_GELU, true, 0.1, &rng);
    tt_params p;
    tt_params_init(&p);
    tt_nn_feedforward_params(&m, &p, "mlp");
    static const char *const mlp_names[] = {"mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight",
                                            "mlp.proj.bias"};
    assert_names(&p, mlp_names, 4);
    ck_assert_int_eq(tt_params_numel(&p), 2 * C * H + H + C);
    tt_params_free(&p);
    tt_nn_feedforward_free(&m);

    tt_nn_block b;
    tt_nn_block_init(&b, &(tt_nn_block_config){
        .attn = {.n_embd = C, .n_head = NH, .n_kv_head = NKV, .max_seq = 8, .causal = true,
                 .bias = true},
        .act = TT_ACT_GELU_TANH, .norm = TT_NORM_LAYERNORM}, &rng);
    ck_assert_int_eq(b.mlp.fc.out_features, 4 * C);  // mlp_hidden 0 means 4 C
    ck_assert_double_eq(b.norm1.ln.eps, 1e-5);       // norm_eps 0 means 1e-5
    tt_params_init(&p);
    tt_nn_block_params(&b, &p, "blocks.0");
    static const char *const block_names[] = {
        "blocks.0.norm1.weight", "blocks.0.norm1.bias",
        "blocks.0.attn.q_proj.weight", "blocks.0.attn.q_proj.bias",
        "blocks.0.attn.k_proj.weight", "blocks.0.attn.k_proj.bias",
        "blocks.0.attn.v_proj.weight", "blocks.0.attn.v_proj.bias",
        "blocks.0.attn.o_proj.weight", "blocks.0.attn.o_proj.bias",
        "blocks.0.norm2.weight", "blocks.0.norm2.bias",
        "blocks.0.mlp.fc.weight", "blocks.0.mlp.fc.bias",
        "blocks.0.mlp.proj.weight", "blocks.0.mlp.proj.bias",
    };
    assert_names(&p, block_names, 16);
    int64_t attn = 2 * (C * C + C) + 2 * (C * NKV * HS + NKV * HS);
    int64_t mlp = 2 * C * (4 * C) + 4 * C + C;
    ck_assert_int_eq(tt_params_numel(&p), 2 * C + attn + 2 * C + mlp);
    tt_params_free(&p);
    tt_nn_block_free(&b);

    // RMSNorm without biases, QK-norm and RoPE (no parameters): one weight per norm.
    tt_nn_block_init(&b, &(tt_nn_block_config){
        .attn = {.n_embd = C, .n_head = NH, .max_seq = 8, .causal = true, .qk_norm = true,
                 .rope = true},
        .mlp_hidden = 24, .act = TT_ACT_RELU2, .norm = TT_NORM_RMSNORM}, &rng);
    tt_params_init(&p);
    tt_nn_block_params(&b, &p, NULL);
    static const char *const rms_names[] = {
        "norm1.weight", "attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight",
        "attn.o_proj.weight", "attn.q_norm.weight", "attn.k_norm.weight", "norm2.weight",
        "mlp.fc.weight", "mlp.proj.weight",
    };
    assert_names(&p, rms_names, 10);
    ck_assert_int_eq(tt_params_numel(&p), C + 4 * C * C + 2 * HS + C + 2 * C * 24);
    tt_params_free(&p);
    tt_nn_block_free(&b);
}
END_TEST

// ---- attention against a naive loop ----

static double param(const tt_tensor *t, int64_t i) { return t ? tt_at(t, i) : 0.0; }

// y = x W^T + b for one row: x (in), W (out, in) -> y (out).
static void naive_linear(double *y, const double *x, const tt_nn_linear *l) {
    for (int64_t o = 0; o < l->out_features; o++) {
        double s = param(l->bias, o);
        for (int64_t i = 0; i < l->in_features; i++)
            s += x[i] * tt_at(l->weight, o * l->in_features + i);
        y[o] = s;
    }
}

// QK-norm (RMSNorm with weight, eps 1e-6) then RoPE at position p, on one head vector v (HS).
static void naive_qk(double *v, int64_t hs, const tt_nn_rmsnorm *norm, bool qk_norm,
                     bool rope, double base, int64_t p) {
    if (qk_norm) {
        double ms = 0;
        for (int64_t d = 0; d < hs; d++) ms += v[d] * v[d];
        double r = 1.0 / sqrt(ms / (double)hs + 1e-6);
        for (int64_t d = 0; d < hs; d++) v[d] *= r * tt_at(norm->weight, d);
    }
    if (rope) {
        for (int64_t i = 0; i < hs / 2; i++) {
            double a = (double)p * pow(base, -2.0 * (double)i / (double)hs);
            double x1 = v[i], x2 = v[i + hs / 2];
            v[i] = x1 * cos(a) - x2 * sin(a);
            v[i + hs / 2] = x2 * cos(a) + x1 * sin(a);
        }
    }
}

// out (B, T, C) for x (B, T, C), head by head, query by query.
static void naive_attention(double *out, const tt_tensor *xt, const tt_nn_attention *a) {
    const tt_nn_attention_config *c = &a->cfg;
    int64_t B = xt->shape[0], T = xt->shape[1], C = c->n_embd, NH = c->n_head;
    int64_t NKV = c->n_kv_head, HS = a->head_dim;
    double *x = malloc(sizeof(double) * (size_t)(B * T * C));
    double *q = malloc(sizeof(double) * (size_t)(B * T * C));
    double *k = malloc(sizeof(double) * (size_t)(B * T * NKV * HS));
    double *v = malloc(sizeof(double) * (size_t)(B * T * NKV * HS));
    double *y = malloc(sizeof(double) * (size_t)(B * T * C));
    double *w = malloc(sizeof(double) * (size_t)T);
    tt_to_f64_array(xt, x);
    for (int64_t r = 0; r < B * T; r++) {
        naive_linear(q + r * C, x + r * C, &a->q_proj);
        naive_linear(k + r * NKV * HS, x + r * C, &a->k_proj);
        naive_linear(v + r * NKV * HS, x + r * C, &a->v_proj);
        for (int64_t h = 0; h < NH; h++)
            naive_qk(q + r * C + h * HS, HS, &a->q_norm, c->qk_norm, c->rope, c->rope_base,
                     r % T);
        for (int64_t h = 0; h < NKV; h++)
            naive_qk(k + (r * NKV + h) * HS, HS, &a->k_norm, c->qk_norm, c->rope, c->rope_base,
                     r % T);
    }
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < NH; h++) {
            int64_t g = h / (NH / NKV);  // the kv head of query head h
            for (int64_t t = 0; t < T; t++) {
                const double *qv = q + (b * T + t) * C + h * HS;
                int64_t last = c->causal ? t : T - 1;
                double mx = -INFINITY, sum = 0;
                for (int64_t s = 0; s <= last; s++) {
                    const double *kv = k + ((b * T + s) * NKV + g) * HS;
                    double dot = 0;
                    for (int64_t d = 0; d < HS; d++) dot += qv[d] * kv[d];
                    w[s] = dot / sqrt((double)HS);
                    mx = fmax(mx, w[s]);
                }
                for (int64_t s = 0; s <= last; s++) sum += (w[s] = exp(w[s] - mx));
                for (int64_t d = 0; d < HS; d++) {
                    double acc = 0;
                    for (int64_t s = 0; s <= last; s++)
                        acc += w[s] / sum * v[((b * T + s) * NKV + g) * HS + d];
                    y[(b * T + t) * C + h * HS + d] = acc;
                }
            }
        }
    }
    for (int64_t r = 0; r < B * T; r++) naive_linear(out + r * C, y + r * C, &a->o_proj);
    free(x), free(q), free(k), free(v), free(y), free(w);
}

static const tt_nn_attention_config naive_cfgs[] = {
    {.n_embd = 8, .n_head = 2, .max_seq = 5, .causal = true, .bias = true},
    {.n_embd = 8, .n_head = 2, .max_seq = 5},
    {.n_embd = 12, .n_head = 4, .n_kv_head = 2, .max_seq = 6, .causal = true},
    {.n_embd = 8, .n_head = 2, .n_kv_head = 1, .max_seq = 8, .causal = true, .qk_norm = true,
     .rope = true, .rope_base = 100, .bias = true},
};

START_TEST(test_attention_naive) {
    tt_rng rng;
    tt_rng_seed(&rng, 100 + (uint64_t)_i);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_attention a;
    tt_nn_attention_init(&a, &naive_cfgs[_i], &rng);
    tt_set_default_dtype(prev);
    if (a.q_norm.weight) tt_uniform_(a.q_norm.weight, &rng, 0.5, 1.5);
    if (a.k_norm.weight) tt_uniform_(a.k_norm.weight, &rng, 0.5, 1.5);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(2, 5, a.cfg.n_embd));  // (B, T, C)
    tt_tensor *y = tt_nn_attention_forward(&a, x);
    ck_assert(tt_same_shape(x, y));
    double want[2 * 5 * 12];
    naive_attention(want, x, &a);
    tt_assert_values(y, want, tt_numel(y), 1e-12, 1e-10, __FILE__, __LINE__);
    tt_scope_end();
    tt_nn_attention_free(&a);
}
END_TEST

// ---- causality ----

// Changing x at time t changes no output before t (and does change the output at t).
START_TEST(test_causal) {
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_block b;
    tt_nn_block_init(&b, &(tt_nn_block_config){
        .attn = {.n_embd = 16, .n_head = 4, .n_kv_head = 2, .max_seq = 8, .causal = true,
                 .rope = true, .qk_norm = true},
        .act = TT_ACT_GELU, .norm = TT_NORM_LAYERNORM}, &rng);
    tt_set_default_dtype(prev);
    int64_t T = 6, C = 16, t0 = 3;
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(2, T, C));  // (B, T, C)
    tt_tensor *x2 = tt_clone(x);
    for (int64_t b2 = 0; b2 < 2; b2++)
        for (int64_t c = 0; c < C; c++) tt_set(x2, (int64_t[]){b2, t0, c}, (double)c - 3.5);
    tt_tensor *ya = tt_nn_attention_forward(&b.attn, x);
    tt_tensor *ya2 = tt_nn_attention_forward(&b.attn, x2);
    tt_tensor *yb = tt_nn_block_forward(&b, x), *yb2 = tt_nn_block_forward(&b, x2);
    for (int64_t b2 = 0; b2 < 2; b2++) {
        for (int64_t t = 0; t < T; t++) {
            double da = 0, db = 0;
            for (int64_t c = 0; c < C; c++) {
                int64_t idx[3] = {b2, t, c};
                da = fmax(da, fabs(tt_get(ya, idx) - tt_get(ya2, idx)));
                db = fmax(db, fabs(tt_get(yb, idx) - tt_get(yb2, idx)));
            }
            if (t < t0) {
                ck_assert_msg(da == 0 && db == 0, "output at t=%lld moved by %g / %g",
                              (long long)t, da, db);
            } else if (t == t0) {
                ck_assert(da > 1e-3 && db > 1e-3);
            }
        }
    }
    tt_scope_end();
    tt_nn_block_free(&b);
}
END_TEST

// Without the mask a later change reaches earlier outputs.
START_TEST(test_noncausal_sees_future) {
    tt_rng rng;
    tt_rng_seed(&rng, 6);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4},
                         &rng);
    tt_set_default_dtype(prev);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(1, 4, 8));
    tt_tensor *x2 = tt_clone(x);
    tt_set(x2, (int64_t[]){0, 3, 0}, 5.0);
    tt_tensor *y = tt_nn_attention_forward(&a, x), *y2 = tt_nn_attention_forward(&a, x2);
    ck_assert(fabs(tt_get(y, (int64_t[]){0, 0, 0}) - tt_get(y2, (int64_t[]){0, 0, 0})) > 1e-6);
    tt_scope_end();
    tt_nn_attention_free(&a);
}
END_TEST

// ---- grouped-query attention ----

// n_kv_head == n_head is the plain path: the same weights give the same output as
// n_kv_head = 0. And GQA (NKV < NH) equals plain attention whose k and v projections repeat
// each kv head's rows for its NH / NKV query heads.
START_TEST(test_gqa_equivalence) {
    tt_rng r1, r2;
    tt_rng_seed(&r1, 9);
    tt_rng_seed(&r2, 9);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_attention_config cfg = {.n_embd = 16, .n_head = 4, .max_seq = 8, .causal = true,
                                  .bias = true};
    tt_nn_attention plain, full;
    tt_nn_attention_init(&plain, &cfg, &r1);
    cfg.n_kv_head = 4;
    tt_nn_attention_init(&full, &cfg, &r2);
    cfg.n_kv_head = 2;
    tt_nn_attention gqa, expanded;
    tt_nn_attention_init(&gqa, &cfg, &r1);
    cfg.n_kv_head = 0;
    tt_nn_attention_init(&expanded, &cfg, &r1);
    tt_set_default_dtype(prev);

    // expanded := gqa's weights, k/v rows of kv head h / 2 copied to head h.
    int64_t HS = 4, C = 16;
    tt_copy_(expanded.q_proj.weight, gqa.q_proj.weight);
    tt_copy_(expanded.q_proj.bias, gqa.q_proj.bias);
    tt_copy_(expanded.o_proj.weight, gqa.o_proj.weight);
    tt_copy_(expanded.o_proj.bias, gqa.o_proj.bias);
    const tt_nn_linear *src[2] = {&gqa.k_proj, &gqa.v_proj};
    tt_nn_linear *dst[2] = {&expanded.k_proj, &expanded.v_proj};
    for (int l = 0; l < 2; l++) {
        for (int64_t h = 0; h < 4; h++) {
            for (int64_t d = 0; d < HS; d++) {
                int64_t ro = h * HS + d, ri = (h / 2) * HS + d;
                tt_set_at(dst[l]->bias, ro, tt_at(src[l]->bias, ri));
                for (int64_t c = 0; c < C; c++)
                    tt_set_at(dst[l]->weight, ro * C + c, tt_at(src[l]->weight, ri * C + c));
            }
        }
    }

    tt_scope_begin();
    tt_tensor *x = tt_randn(&r1, TT_F64, TT_SHAPE(2, 7, 16));  // (B, T, C)
    assert_same(tt_nn_attention_forward(&full, x), tt_nn_attention_forward(&plain, x), 0);
    assert_same(tt_nn_attention_forward(&gqa, x), tt_nn_attention_forward(&expanded, x), 1e-12);
    tt_scope_end();
    tt_nn_attention_free(&plain);
    tt_nn_attention_free(&full);
    tt_nn_attention_free(&gqa);
    tt_nn_attention_free(&expanded);
}
END_TEST

// ---- no leaks ----

START_TEST(test_block_live_tensors) {
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    tt_nn_block b;
    tt_nn_block_init(&b, &(tt_nn_block_config){
        .attn = {.n_embd = 16, .n_head = 4, .max_seq = 8, .causal = true, .bias = true,
                 .dropout = 0.1},
        .act = TT_ACT_GELU_TANH, .norm = TT_NORM_LAYERNORM}, &rng);
    tt_params p;
    tt_params_init(&p);
    tt_nn_block_params(&b, &p, NULL);
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(2, 8, 16));  // (B, T, C)
    int64_t live = tt_live_tensors(), bytes = tt_live_bytes();
    for (int step = 0; step < 2; step++) {
        tt_scope_begin();
        tt_tensor *y = tt_nn_block_forward(&b, x);
        tt_backward(tt_mean_all(tt_square(y)));
        tt_scope_end();
        // Only the parameters' gradients remain.
        ck_assert_int_eq(tt_live_tensors(), live + p.n);
        for (int i = 0; i < p.n; i++) ck_assert_ptr_nonnull(tt_grad(p.items[i].tensor));
        tt_params_zero_grad(&p);
        ck_assert_int_eq(tt_live_tensors(), live);
        ck_assert_int_eq(tt_live_bytes(), bytes);
    }
    tt_release(x);
    tt_params_free(&p);
    tt_nn_block_free(&b);
}
END_TEST

// _free is safe on a zeroed struct (and twice).
START_TEST(test_free_zeroed) {
    tt_nn_pos_embedding pe = {0};
    tt_nn_sinusoidal s = {0};
    tt_nn_rope r = {0};
    tt_nn_feedforward m = {0};
    tt_nn_attention a = {0};
    tt_nn_block b = {0};
    for (int i = 0; i < 2; i++) {
        tt_nn_pos_embedding_free(&pe);
        tt_nn_sinusoidal_free(&s);
        tt_nn_rope_free(&r);
        tt_nn_feedforward_free(&m);
        tt_nn_attention_free(&a);
        tt_nn_block_free(&b);
    }
}
END_TEST

// ---- train / eval ----

START_TEST(test_train_eval) {
    tt_rng rng, r0;
    tt_rng_seed(&rng, 12);
    tt_rng_seed(&r0, 12);
    tt_nn_block_config cfg = {
        .attn = {.n_embd = 16, .n_head = 4, .max_seq = 8, .causal = true, .dropout = 0.5},
        .act = TT_ACT_GELU, .norm = TT_NORM_RMSNORM};
    tt_nn_block b, b0;
    tt_nn_block_init(&b, &cfg, &rng);
    cfg.attn.dropout = 0;
    tt_nn_block_init(&b0, &cfg, &r0);  // same draws: dropout takes none at init
    ck_assert(b.attn.attn_drop.training && b.attn.resid_drop.training && b.mlp.drop.training);

    tt_scope_begin();
    tt_tensor *x = tt_randn(&r0, TT_F32, TT_SHAPE(2, 8, 16));  // (B, T, C)
    tt_tensor *y1 = tt_nn_block_forward(&b, x), *y2 = tt_nn_block_forward(&b, x);
    ck_assert(max_abs_diff(y1, y2) > 1e-3);  // a fresh mask each run

    tt_nn_block_train(&b, false);
    ck_assert(!b.attn.attn_drop.training && !b.attn.resid_drop.training);
    ck_assert(!b.mlp.drop.training);
    tt_tensor *e1 = tt_nn_block_forward(&b, x), *e2 = tt_nn_block_forward(&b, x);
    assert_same(e1, e2, 0);
    assert_same(e1, tt_nn_block_forward(&b0, x), 0);  // eval is the p = 0 block

    tt_nn_block_train(&b, true);
    ck_assert(b.attn.attn_drop.training && b.attn.resid_drop.training && b.mlp.drop.training);
    tt_nn_attention_train(&b.attn, false);
    ck_assert(!b.attn.attn_drop.training && !b.attn.resid_drop.training);
    tt_nn_feedforward_train(&b.mlp, false);
    ck_assert(!b.mlp.drop.training);
    tt_scope_end();
    tt_nn_block_free(&b);
    tt_nn_block_free(&b0);
}
END_TEST

// f32 and f64 blocks with the same weights agree.
START_TEST(test_block_f32_f64) {
    tt_rng r1, r2;
    tt_rng_seed(&r1, 13);
    tt_rng_seed(&r2, 13);
    tt_nn_block_config cfg = {
        .attn = {.n_embd = 16, .n_head = 4, .n_kv_head = 1, .max_seq = 8, .causal = true,
                 .rope = true, .qk_norm = true, .bias = true},
        .act = TT_ACT_SILU, .norm = TT_NORM_LAYERNORM};
    tt_nn_block b32, b64;
    tt_nn_block_init(&b32, &cfg, &r1);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_block_init(&b64, &cfg, &r2);
    tt_set_default_dtype(prev);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&r1, TT_F64, TT_SHAPE(2, 8, 16));
    tt_tensor *y64 = tt_nn_block_forward(&b64, x);
    tt_tensor *y32 = tt_nn_block_forward(&b32, tt_to_dtype(x, TT_F32));
    ck_assert_int_eq(y32->dtype, TT_F32);
    ck_assert(max_abs_diff(y32, y64) < 1e-4);
    tt_scope_end();
    tt_nn_block_free(&b32);
    tt_nn_block_free(&b64);
}
END_TEST

// ---- attention masks (nn.MultiheadAttention's conventions) ----

// a and b hold the same bits (the same shape, compared as doubles).
static void assert_bitwise(const tt_tensor *a, const tt_tensor *b) {
    ck_assert(tt_same_shape(a, b));
    for (int64_t i = 0; i < tt_numel(a); i++) {
        double x = tt_at(a, i), y = tt_at(b, i);
        ck_assert_msg(memcmp(&x, &y, sizeof x) == 0, "element %lld: %.17g vs %.17g",
                      (long long)i, x, y);
    }
}

// dst = a reference array's values, converted to dst's dtype.
static void load_ref(tt_tensor *dst, const double *src) {
    tt_scope_begin();
    tt_copy_(dst, tt_from_data(TT_F64, dst->ndim, dst->shape, src));
    tt_scope_end();
}

static tt_tensor *ref_of(tt_dtype dt, int ndim, const int64_t *shape, const double *src) {
    tt_tensor *t = tt_from_data(TT_F64, ndim, shape, src);
    return dt == TT_BOOL ? tt_ne_scalar(t, 0) : tt_to_dtype(t, dt);
}

// torch.nn.MultiheadAttention(8, 2, bias=True, batch_first=True) with a bool (T, T) or float
// (B * NH, T, T) attn_mask and a bool key_padding_mask, its in_proj split into q/k/v_proj: the
// output and the gradients of sum(y * g) for x, the projections and the float mask, f32 and f64.
START_TEST(test_mha_pytorch) {
    bool is_float = _i / 2 == 1;
    tt_dtype dt = float_dtypes[_i % 2];
    double tol = dt == TT_F32 ? 1e-5 : 1e-12;
    int64_t B = 2, T = 5, E = 8, NH = 2;
    const double *in_w = is_float ? mha_float_in_w : mha_bool_in_w;
    const double *in_b = is_float ? mha_float_in_b : mha_bool_in_b;
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_dtype prev = tt_set_default_dtype(dt);
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = E, .n_head = NH, .max_seq = T,
                                                       .bias = true}, &rng);
    tt_set_default_dtype(prev);
    tt_nn_linear *proj[3] = {&a.q_proj, &a.k_proj, &a.v_proj};
    for (int i = 0; i < 3; i++) {
        load_ref(proj[i]->weight, in_w + i * E * E);
        load_ref(proj[i]->bias, in_b + i * E);
    }
    load_ref(a.o_proj.weight, is_float ? mha_float_out_w : mha_bool_out_w);
    load_ref(a.o_proj.bias, is_float ? mha_float_out_b : mha_bool_out_b);
    tt_scope_begin();
    tt_tensor *x = tt_set_requires_grad(ref_of(dt, TT_SHAPE(B, T, E),
                                               is_float ? mha_float_x : mha_bool_x), true);
    tt_tensor *kpm = ref_of(TT_BOOL, TT_SHAPE(B, T), is_float ? mha_float_kpm : mha_bool_kpm);
    tt_tensor *am = is_float ? tt_set_requires_grad(ref_of(dt, TT_SHAPE(B * NH, T, T),
                                                           mha_float_attn_mask), true)
                             : ref_of(TT_BOOL, TT_SHAPE(T, T), mha_bool_attn_mask);
    tt_tensor *y = tt_nn_attention_forward_mask(&a, x, am, kpm);
    tt_backward_with(y, ref_of(dt, TT_SHAPE(B, T, E), is_float ? mha_float_g : mha_bool_g));
    tt_assert_values(y, is_float ? mha_float_y : mha_bool_y, B * T * E, tol, tol, __FILE__,
                     __LINE__);
    tt_assert_values(tt_grad(x), is_float ? mha_float_dx : mha_bool_dx, B * T * E, tol, tol,
                     __FILE__, __LINE__);
    const double *din_w = is_float ? mha_float_din_w : mha_bool_din_w;
    for (int i = 0; i < 3; i++)
        tt_assert_values(tt_grad(proj[i]->weight), din_w + i * E * E, E * E, tol, tol, __FILE__,
                         __LINE__);
    tt_assert_values(tt_grad(a.o_proj.weight), is_float ? mha_float_dout_w : mha_bool_dout_w,
                     E * E, tol, tol, __FILE__, __LINE__);
    if (is_float)
        tt_assert_values(tt_grad(am), mha_float_dattn_mask, B * NH * T * T, tol, tol, __FILE__,
                         __LINE__);
    tt_scope_end();
    tt_nn_attention_free(&a);
}
END_TEST

// No masks is tt_nn_attention_forward bit for bit; a bool key_padding_mask (B, T) is the same as
// the equivalent (B, NH, T, T) and (B * NH, T, T) attn_masks, also bit for bit.
START_TEST(test_mask_forms_agree) {
    tt_rng rng;
    tt_rng_seed(&rng, 8);
    int64_t B = 2, T = 6, NH = 2;
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 8, .n_head = NH, .max_seq = T,
                                                       .causal = true}, &rng);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(B, T, 8));
    assert_bitwise(tt_nn_attention_forward_mask(&a, x, NULL, NULL), tt_nn_attention_forward(&a, x));
    tt_tensor *kpm = tt_zeros(TT_BOOL, TT_SHAPE(B, T));
    tt_set(kpm, (int64_t[]){0, 4}, 1);
    tt_set(kpm, (int64_t[]){1, 2}, 1);
    tt_tensor *am4 = tt_contiguous(tt_expand(tt_reshape(kpm, TT_SHAPE(B, 1, 1, T)),
                                             TT_SHAPE(B, NH, T, T)));
    tt_tensor *am3 = tt_reshape(am4, TT_SHAPE(B * NH, T, T));
    tt_tensor *y = tt_nn_attention_forward_mask(&a, x, NULL, kpm);
    assert_bitwise(tt_nn_attention_forward_mask(&a, x, am4, NULL), y);
    assert_bitwise(tt_nn_attention_forward_mask(&a, x, am3, NULL), y);
    // a float key_padding_mask of 0 / -inf is the same mask once more
    tt_tensor *fk = tt_masked_fill(tt_zeros(TT_F32, TT_SHAPE(B, T)), kpm, -INFINITY);
    assert_bitwise(tt_nn_attention_forward_mask(&a, x, NULL, fk), y);
    tt_scope_end();
    tt_nn_attention_free(&a);
}
END_TEST

// The dropout path (training, attention dropout > 0: the matmul / softmax composition) masks
// too: with the dropout RNG replayed, changing x at padded positions leaves every other row's
// output bitwise unchanged. Bool and float attn_masks combine with the padding.
START_TEST(test_mask_dropout_path) {
    tt_rng rng;
    tt_rng_seed(&rng, 9);
    int64_t B = 2, T = 6, C = 8;
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = C, .n_head = 2, .max_seq = T,
                                                       .dropout = 0.3}, &rng);
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(B, T, C)), *x2 = tt_clone(x);
    tt_copy_(tt_narrow(x2, 1, 4, 2), tt_randn(&rng, TT_F32, TT_SHAPE(B, 2, C)));
    tt_tensor *kpm = tt_zeros(TT_BOOL, TT_SHAPE(B, T));
    tt_fill_(tt_narrow(kpm, 1, 4, 2), 1);  // keys 4, 5 are padding
    tt_tensor *am[3] = {NULL, tt_zeros(TT_BOOL, TT_SHAPE(T, T)),
                        tt_uniform(&rng, TT_F32, TT_SHAPE(T, T), -1, 1)};
    tt_set(am[1], (int64_t[]){2, 1}, 1);
    for (int i = 0; i < 3; i++) {
        tt_rng_seed(&rng, 77);
        tt_tensor *y = tt_nn_attention_forward_mask(&a, x, am[i], kpm);
        tt_rng_seed(&rng, 77);
        tt_tensor *y2 = tt_nn_attention_forward_mask(&a, x2, am[i], kpm);
        assert_bitwise(tt_narrow(y2, 1, 0, 4), tt_narrow(y, 1, 0, 4));
        ck_assert(max_abs_diff(tt_narrow(y2, 1, 4, 2), tt_narrow(y, 1, 4, 2)) > 0);
    }
    tt_scope_end();
    tt_nn_attention_free(&a);
}
END_TEST

// ---- aborts ----

static tt_rng abort_rng;

START_TEST(test_abort_embd_not_divisible) {
    tt_expect_abort("n_embd=10 is not divisible by n_head=4");
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 10, .n_head = 4, .max_seq = 4},
                         &abort_rng);
}
END_TEST

START_TEST(test_abort_heads_not_divisible) {
    tt_expect_abort("n_head=4 is not divisible by n_kv_head=3");
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 12, .n_head = 4, .n_kv_head = 3,
                      .max_seq = 4}, &abort_rng);
}
END_TEST

START_TEST(test_abort_block_heads_not_divisible) {
    tt_expect_abort("n_embd=12 is not divisible by n_head=5");
    tt_nn_block b;
    tt_nn_block_init(&b, &(tt_nn_block_config){.attn = {.n_embd = 12, .n_head = 5, .max_seq = 4}},
                     &abort_rng);
}
END_TEST

START_TEST(test_abort_seq_too_long) {
    tt_expect_abort("positions 0 .. 4 exceed max_seq=4");
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4,
                      .causal = true}, &abort_rng);
    tt_nn_attention_forward(&a, tt_zeros(TT_F32, TT_SHAPE(1, 5, 8)));
}
END_TEST

START_TEST(test_abort_attention_input_shape) {
    tt_expect_abort("input (1, 4, 6) must be (B, T, 8)");
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4},
                         &abort_rng);
    tt_nn_attention_forward(&a, tt_zeros(TT_F32, TT_SHAPE(1, 4, 6)));
}
END_TEST

START_TEST(test_abort_rope_odd_head_dim) {
    tt_expect_abort("head_dim must be even and positive, got 5");
    tt_nn_rope r;
    tt_nn_rope_init(&r, 5, 8, 10000);
}
END_TEST

START_TEST(test_abort_attention_rope_odd_head_dim) {
    tt_expect_abort("RoPE needs an even head size, got n_embd / n_head = 12 / 4 = 3");
    tt_nn_attention a;  // HS = 12 / 4 = 3
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 12, .n_head = 4, .max_seq = 4,
                      .rope = true}, &abort_rng);
}
END_TEST

START_TEST(test_abort_pos_embedding_too_long) {
    tt_expect_abort("tt_nn_pos_embedding_forward: pos + T = 2 + 3 = 5 exceeds max_len = 4");
    tt_nn_pos_embedding pe;
    tt_nn_pos_embedding_init(&pe, 4, 8, 1.0, &abort_rng);
    tt_nn_pos_embedding_forward(&pe, tt_zeros(TT_F32, TT_SHAPE(1, 3, 8)), 2);  // 2 + 3 > 4
}
END_TEST

START_TEST(test_abort_sinusoidal_too_long) {
    tt_expect_abort("tt_nn_sinusoidal_forward: pos + T = 0 + 5 = 5 exceeds max_len = 4");
    tt_nn_sinusoidal s;
    tt_nn_sinusoidal_init(&s, 4, 8);
    tt_nn_sinusoidal_forward(&s, tt_zeros(TT_F32, TT_SHAPE(1, 5, 8)), 0);
}
END_TEST

START_TEST(test_abort_rope_too_long) {
    tt_expect_abort("tt_nn_rope_forward: pos + T = 4 + 3 = 7 exceeds max_len = 6");
    tt_nn_rope r;
    tt_nn_rope_init(&r, 4, 6, 10000);
    tt_nn_rope_forward(&r, tt_zeros(TT_F32, TT_SHAPE(1, 2, 3, 4)), 4);  // 4 + 3 > 6
}
END_TEST

START_TEST(test_abort_sinusoidal_dtype) {
    tt_expect_abort("tt_nn_sinusoidal_forward: x is f64 but the table is f32");
    tt_nn_sinusoidal s;
    tt_nn_sinusoidal_init(&s, 4, 8);  // f32 table
    tt_nn_sinusoidal_forward(&s, tt_zeros(TT_F64, TT_SHAPE(1, 2, 8)), 0);
}
END_TEST

START_TEST(test_abort_rope_dtype) {
    tt_expect_abort("tt_nn_rope_forward: x is f64 but the table is f32");
    tt_nn_rope r;
    tt_nn_rope_init(&r, 4, 6, 10000);  // f32 tables
    tt_nn_rope_forward(&r, tt_zeros(TT_F64, TT_SHAPE(1, 1, 2, 4)), 0);
}
END_TEST

START_TEST(test_abort_negative_pos) {
    tt_expect_abort("position offset -1 is negative");
    tt_nn_pos_embedding pe;
    tt_nn_pos_embedding_init(&pe, 4, 8, 1.0, &abort_rng);
    tt_nn_pos_embedding_forward(&pe, tt_zeros(TT_F32, TT_SHAPE(1, 2, 8)), -1);
}
END_TEST

static void seed_abort_rng(void) { tt_rng_seed(&abort_rng, 1); }

// ---- abort messages name the function the user called ----

START_TEST(test_names_feedforward_activation) {
    tt_expect_abort("tt_nn_feedforward_init: invalid activation 10; valid values are 0 .. 9");
    tt_nn_feedforward m;
    tt_nn_feedforward_init(&m, 4, 8, (tt_act)TT_ACT_COUNT, true, 0.0, &abort_rng);
}
END_TEST

START_TEST(test_names_attention_input_shape) {
    tt_expect_abort("tt_nn_attention_forward: input (1, 4, 6) must be (B, T, 8): n_embd=8 "
                    "channels last");
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4},
                         &abort_rng);
    tt_nn_attention_forward(&a, tt_zeros(TT_F32, TT_SHAPE(1, 4, 6)));
}
END_TEST

START_TEST(test_names_attention_seq_too_long) {
    tt_expect_abort("tt_nn_attention_forward: positions 0 .. 4 exceed max_seq=4; crop the input");
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4,
                      .causal = true}, &abort_rng);
    tt_nn_attention_forward(&a, tt_zeros(TT_F32, TT_SHAPE(1, 5, 8)));
}
END_TEST

// The input is checked before the caches (it gives T), so a 2-d input is named as such.
START_TEST(test_names_attention_cached_input_shape) {
    tt_expect_abort("tt_nn_attention_forward_cached: input (4, 8) must be (B, T, 8)");
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4,
                      .causal = true}, &abort_rng);
    tt_tensor *k = tt_zeros(TT_F32, TT_SHAPE(1, 2, 4, 4));  // (B, NKV, L, HS)
    tt_tensor *v = tt_zeros(TT_F32, TT_SHAPE(1, 2, 4, 4));  // (B, NKV, L, HS)
    tt_nn_attention_forward_cached(&a, tt_zeros(TT_F32, TT_SHAPE(4, 8)), k, v, 0);
}
END_TEST

START_TEST(test_names_attention_cached_positions) {
    tt_expect_abort("tt_nn_attention_forward_cached: positions 2 .. 5 exceed max_seq=4");
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4,
                      .causal = true}, &abort_rng);
    tt_tensor *k = tt_zeros(TT_F32, TT_SHAPE(1, 2, 4, 4));  // (B, NKV, L, HS)
    tt_tensor *v = tt_zeros(TT_F32, TT_SHAPE(1, 2, 4, 4));  // (B, NKV, L, HS)
    tt_nn_attention_forward_cached(&a, tt_zeros(TT_F32, TT_SHAPE(1, 4, 8)), k, v, 2);
}
END_TEST

// ---- aborts: attention masks ----

static void masked_forward(tt_tensor *attn_mask, tt_tensor *kpm) {
    tt_nn_attention a;
    tt_nn_attention_init(&a, &(tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4},
                         &abort_rng);
    tt_nn_attention_forward_mask(&a, tt_zeros(TT_F32, TT_SHAPE(2, 4, 8)), attn_mask, kpm);
}

START_TEST(test_abort_attn_mask_shape) {
    tt_expect_abort("tt_nn_attention_forward_mask: attn_mask (4, 3) must be (T, T) = (4, 4), "
                    "(B * n_head, T, T) = (4, 4, 4) or (B, n_head, T, T)");
    masked_forward(tt_zeros(TT_BOOL, TT_SHAPE(4, 3)), NULL);
}
END_TEST

START_TEST(test_abort_attn_mask_dtype) {
    tt_expect_abort("tt_nn_attention_forward_mask: attn_mask is i64 but the input is f32");
    masked_forward(tt_zeros(TT_I64, TT_SHAPE(4, 4)), NULL);
}
END_TEST

START_TEST(test_abort_key_padding_shape) {
    tt_expect_abort("key_padding_mask (2, 5) must be (B, T) = (2, 4)");
    masked_forward(NULL, tt_zeros(TT_BOOL, TT_SHAPE(2, 5)));
}
END_TEST

START_TEST(test_abort_key_padding_dtype) {
    tt_expect_abort("key_padding_mask is f64 but the input is f32");
    masked_forward(NULL, tt_zeros(TT_F64, TT_SHAPE(2, 4)));
}
END_TEST

int main(void) {
    Suite *s = suite_create("nn_transformer");
    TCase *pos = tt_tcase("positional");
    tcase_add_loop_test(pos, test_sinusoidal_values, 0, 2);
    tcase_add_test(pos, test_pos_embedding_values);
    tcase_add_loop_test(pos, test_rope_identity_and_norms, 0, 2);
    tcase_add_loop_test(pos, test_rope_known_vector, 0, 2);
    suite_add_tcase(s, pos);

    TCase *mod = tt_tcase("modules");
    tcase_add_test(mod, test_feedforward_matches_composition);
    tcase_add_test(mod, test_attention_params);
    tcase_add_test(mod, test_feedforward_block_params);
    tcase_add_loop_test(mod, test_block_matches_torch, 0, 3);
    tcase_add_test(mod, test_block_bias_switches);
    tcase_add_loop_test(mod, test_block_cached_matches_forward, 0, 2);
    tcase_add_loop_test(mod, test_attention_naive, 0,
                        (int)(sizeof naive_cfgs / sizeof naive_cfgs[0]));
    tcase_add_test(mod, test_causal);
    tcase_add_test(mod, test_noncausal_sees_future);
    tcase_add_test(mod, test_gqa_equivalence);
    tcase_add_test(mod, test_block_live_tensors);
    tcase_add_test(mod, test_free_zeroed);
    tcase_add_test(mod, test_train_eval);
    tcase_add_test(mod, test_block_f32_f64);
    suite_add_tcase(s, mod);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_unchecked_fixture(ab, seed_abort_rng, NULL);
    tcase_add_test_raise_signal(ab, test_abort_embd_not_divisible, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_heads_not_divisible, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_block_heads_not_divisible, SIGABRT);
    tcase_add_test_raise_signal(ab, test_block_bad_bias_aborts, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_seq_too_long, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_attention_input_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_rope_odd_head_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_attention_rope_odd_head_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_pos_embedding_too_long, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_sinusoidal_too_long, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_rope_too_long, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_sinusoidal_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_rope_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_negative_pos, SIGABRT);
    suite_add_tcase(s, ab);

    TCase *an = tt_tcase_aborts("aborts_names");
    tcase_add_unchecked_fixture(an, seed_abort_rng, NULL);
    tcase_add_test_raise_signal(an, test_names_feedforward_activation, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_attention_input_shape, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_attention_seq_too_long, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_attention_cached_input_shape, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_attention_cached_positions, SIGABRT);
    suite_add_tcase(s, an);

    TCase *mk = tt_tcase("attention_masks");
    tcase_add_loop_test(mk, test_mha_pytorch, 0, 4);
    tcase_add_test(mk, test_mask_forms_agree);
    tcase_add_test(mk, test_mask_dropout_path);
    suite_add_tcase(s, mk);

    TCase *amk = tt_tcase_aborts("aborts_attention_masks");
    tcase_add_unchecked_fixture(amk, seed_abort_rng, NULL);
    tcase_add_test_raise_signal(amk, test_abort_attn_mask_shape, SIGABRT);
    tcase_add_test_raise_signal(amk, test_abort_attn_mask_dtype, SIGABRT);
    tcase_add_test_raise_signal(amk, test_abort_key_padding_shape, SIGABRT);
    tcase_add_test_raise_signal(amk, test_abort_key_padding_dtype, SIGABRT);
    suite_add_tcase(s, amk);
    return tt_test_run(s);
}

// Check suite of models/gpt: config validation, shapes, parameter names and counts, GPT-2
// init statistics, tied weights, a whole-model gradcheck, overfitting one batch, leaks across a
// training step, sampling (greedy, top-k, top-p, temperature frequencies), the KV cache against
// the full forward, the context-window rule, cached = uncached generation, and abort paths;
// the config's field table, the GPT-2 presets and their parameter counts (a real 124M forward),
// qkv_bias, and GPT checkpoints (round trip, older files, corrupt ones). PyTorch parity is in
// test_gpt_parity.c.
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "models/gpt/gpt.h"
#include "models/gpt/gpt_internal.h"
#include "optim/optim.h"

// ---- helpers ----

enum { CFG_DEFAULT, CFG_MODERN, NCFG };
static const char *const cfg_names[NCFG] = {"default", "modern"};

// Small models of the two families the parity test covers: GPT-2 style, and rope + rmsnorm +
// relu2 + GQA + untied + qk_norm (with biases, so their paths run too).
static tt_gpt_config small_config(int which) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 11;
    c.block_size = 8;
    c.n_layer = 2;
    c.n_head = 4;
    c.n_kv_head = 4;
    c.n_embd = 16;
    if (which == CFG_MODERN) {
        c.n_kv_head = 2;
        c.positional = TT_POS_ROPE;
        c.norm = TT_NORM_RMSNORM;
        c.activation = TT_ACT_RELU2;
        c.tie_weights = false;
        c.qk_norm = true;
        c.bias = true;
    }
    return c;
}

static void gpt_init_ok(tt_gpt *m, const tt_gpt_config *c, uint64_t seed, tt_dtype dtype) {
    tt_rng rng;
    tt_rng_seed(&rng, seed);
    tt_dtype prev = tt_set_default_dtype(dtype);
    tt_status st = tt_gpt_init(m, c, &rng);
    tt_set_default_dtype(prev);
    ck_assert_msg(st == TT_OK, "tt_gpt_init: %s", tt_last_error());
}

// (B, T) i32 token ids uniform in [0, V), owned by the current scope.
static tt_tensor *rand_tokens(tt_rng *rng, int64_t B, int64_t T, int64_t V) {
    tt_tensor *t = tt_empty(TT_I32, TT_SHAPE(B, T));
    int32_t *d = tt_data(t);
    for (int64_t i = 0; i < B * T; i++) d[i] = (int32_t)tt_rng_below(rng, V);
    return t;
}

static void mean_std(const tt_tensor *t, double *mean, double *std) {
    int64_t n = tt_numel(t);
    double *v = malloc((size_t)n * sizeof *v), s = 0, ss = 0;
    tt_to_f64_array(t, v);
    for (int64_t i = 0; i < n; i++) s += v[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) ss += (v[i] - *mean) * (v[i] - *mean);
    *std = sqrt(ss / (double)n);
    free(v);
}

// ---- config ----

START_TEST(test_config_default) {
    tt_gpt_config c = tt_gpt_config_default();
    ck_assert_int_eq(tt_gpt_config_validate(&c), TT_OK);
    // nanoGPT's char-level "baby GPT", GPT-2 style.
    ck_assert_int_eq(c.vocab_size, 65);
    ck_assert_int_eq(c.block_size, 64);
    ck_assert_int_eq(c.n_layer, 4);
    ck_assert_int_eq(c.n_head, 4);
    ck_assert_int_eq(c.n_embd, 128);
    ck_assert(c.dropout == 0.0);
    ck_assert(!c.bias && c.tie_weights && !c.qk_norm);
    ck_assert_int_eq(c.positional, TT_POS_LEARNED);
    ck_assert_int_eq(c.norm, TT_NORM_LAYERNORM);
    ck_assert_int_eq(c.activation, TT_ACT_GELU);
    c.n_kv_head = 0;  // 0 means n_head
    ck_assert_int_eq(tt_gpt_config_validate(&c), TT_OK);
    tt_gpt m;
    gpt_init_ok(&m, &c, 1, TT_F32);
    ck_assert_int_eq(m.cfg.n_kv_head, 4);
    tt_gpt_free(&m);
}
END_TEST

typedef struct bad_config {
    const char *field;  // must appear in the message
    void (*edit)(tt_gpt_config *c);
} bad_config;

static void e_vocab(tt_gpt_config *c) { c->vocab_size = 0; }
static void e_block(tt_gpt_config *c) { c->block_size = -3; }
static void e_layer(tt_gpt_config *c) { c->n_layer = 0; }
static void e_head(tt_gpt_config *c) { c->n_head = 0; }
static void e_kv_neg(tt_gpt_config *c) { c->n_kv_head = -1; }
static void e_embd(tt_gpt_config *c) { c->n_embd = 0; }
static void e_embd_div(tt_gpt_config *c) { c->n_embd = 130; }
static void e_kv_div(tt_gpt_config *c) { c->n_kv_head = 3; }
static void e_rope_odd(tt_gpt_config *c) {
    c->positional = TT_POS_ROPE;
    c->n_embd = 12;  // head size 3
}
static void e_drop_one(tt_gpt_config *c) { c->dropout = 1.0; }
static void e_drop_neg(tt_gpt_config *c) { c->dropout = -0.1; }
static void e_drop_nan(tt_gpt_config *c) { c->dropout = NAN; }
static void e_pos(tt_gpt_config *c) { c->positional = (tt_pos_kind)7; }
static void e_norm(tt_gpt_config *c) { c->norm = (tt_nn_norm_kind)9; }
static void e_act(tt_gpt_config *c) { c->activation = TT_ACT_SOFTMAX; }

static const bad_config bad_configs[] = {
    {"vocab_size", e_vocab}, {"block_size", e_block}, {"n_layer", e_layer},
    {"n_head", e_head},      {"n_kv_head", e_kv_neg}, {"n_embd", e_embd},
    {"n_embd=130 is not divisible by n_head=4", e_embd_div},
    {"n_head=4 is not divisible by n_kv_head=3", e_kv_div},
    {"head size", e_rope_odd}, {"dropout", e_drop_one}, {"dropout", e_drop_neg},
    {"dropout", e_drop_nan},   {"positional", e_pos},    {"norm", e_norm},
    {"activation", e_act},
};
#define NBAD (int)(sizeof bad_configs / sizeof bad_configs[0])

START_TEST(test_config_errors) {
    const bad_config *b = &bad_configs[_i];
    tt_gpt_config c = tt_gpt_config_default();
    b->edit(&c);
    ck_assert_int_eq(tt_gpt_config_validate(&c), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), b->field), "message '%s' does not name '%s'",
                  tt_last_error(), b->field);
    // init refuses it too, leaves a zeroed model that frees safely, allocates nothing.
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_gpt m;
    memset(&m, 0xab, sizeof m);
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_ERR_ARG);
    ck_assert_ptr_null(m.blocks);
    ck_assert_int_eq(m.params.n, 0);
    tt_gpt_free(&m);
    tt_gpt_free(&m);
}
END_TEST

// ---- shapes, names, counts ----

START_TEST(test_shapes) {
    tt_gpt_config c = small_config(_i);
    tt_gpt m;
    gpt_init_ok(&m, &c, 7, TT_F32);
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_scope_begin();
    for (int64_t T = 1; T <= c.block_size; T += 3) {
        tt_tensor *x = rand_tokens(&rng, 2, T, c.vocab_size);
        tt_tensor *logits = tt_gpt_forward(&m, x);
        ck_assert_int_eq(logits->ndim, 3);
        ck_assert_int_eq(logits->shape[0], 2);
        ck_assert_int_eq(logits->shape[1], T);
        ck_assert_int_eq(logits->shape[2], c.vocab_size);
        ck_assert_int_eq(logits->dtype, TT_F32);
        // With weights of std 0.02 the logits are about 0.02 sqrt(C) = 0.08 in size, and
        // |loss - ln V| <= 2 max |logit|: the loss starts near ln V.
        tt_tensor *loss = tt_gpt_loss(&m, x, rand_tokens(&rng, 2, T, c.vocab_size));
        ck_assert_int_eq(loss->ndim, 0);
        ck_assert_close(tt_item(loss), log((double)c.vocab_size), 0.3, 0);
    }
    // i64 ids work as well, and give the same logits as i32.
    tt_tensor *x32 = rand_tokens(&rng, 1, c.block_size, c.vocab_size);
    tt_tensor *x64 = tt_to_dtype(x32, TT_I64);
    tt_tensor *d = tt_sub(tt_gpt_forward(&m, x32), tt_gpt_forward(&m, x64));
    ck_assert(tt_item(tt_max(tt_abs(d), 0, NULL, false)) == 0.0);
    tt_scope_end();
    tt_gpt_free(&m);
}
END_TEST

// The module tree gives the Linears (the blocks' six each in parameter order, then lm_head
// when untied), and tt_gpt_train reaches every dropout of it.
static void count_dropouts(tt_module mod, const char *name, void *ctx) {
    (void)name;
    int *n = ctx;  // n[0]: dropouts, n[1]: those in training mode
    if (strcmp(mod.ops->type, "Dropout") != 0) return;
    n[0]++;
    n[1] += ((const tt_nn_dropout *)mod.self)->training;
}

START_TEST(test_tree_linears_train) {
    tt_gpt_config c = small_config(_i);
    c.dropout = 0.1;
    tt_gpt m;
    gpt_init_ok(&m, &c, 1, TT_F32);
    tt_nn_linear_list lin;
    tt_nn_linear_list_init(&lin);
    tt_module_linears(tt_gpt_module(&m), NULL, &lin);
    static const char *const each[] = {"attn.q_proj", "attn.k_proj", "attn.v_proj",
                                       "attn.o_proj", "mlp.fc", "mlp.proj"};
    ck_assert_int_eq(lin.n, 12 + (_i == CFG_MODERN));
    int64_t bytes = 4 * (_i == CFG_DEFAULT ? tt_numel(m.wte.weight) : 0);
    for (int i = 0; i < lin.n; i++) {
        char want[64];
        if (i < 12) snprintf(want, sizeof want, "blocks.%d.%s", i / 6, each[i % 6]);
        else snprintf(want, sizeof want, "lm_head");
        ck_assert_str_eq(lin.items[i].name, want);
        const tt_nn_linear *x = lin.items[i].linear;
        bytes += 4 * (tt_numel(x->weight) + (x->bias ? tt_numel(x->bias) : 0));
    }
    ck_assert_ptr_eq(lin.items[0].linear, &m.blocks[0].attn.q_proj);
    ck_assert_ptr_eq(lin.items[11].linear, &m.blocks[1].mlp.proj);
    ck_assert_int_eq(tt_gpt_matmul_weight_bytes(&m), bytes);
    tt_nn_linear_list_free(&lin);
    // drop, and per block attn_drop, resid_drop and the MLP's drop.
    int n[2] = {0, 0};
    tt_gpt_train(&m, false);
    tt_module_named_modules(tt_gpt_module(&m), NULL, count_dropouts, n);
    ck_assert_int_eq(n[0], 1 + 3 * 2);
    ck_assert_int_eq(n[1], 0);
    tt_gpt_train(&m, true);
    n[0] = n[1] = 0;
    tt_module_named_modules(tt_gpt_module(&m), NULL, count_dropouts, n);
    ck_assert_int_eq(n[1], 7);
    tt_gpt_free(&m);
    ck_assert_ptr_null(m.blocks);
}
END_TEST

// Every parameter name, in order, for a 1-layer model of each family.
static const char *const names_default[] = {
    "wte.weight", "wpe.weight", "blocks.0.norm1.weight", "blocks.0.attn.q_proj.weight",
    "blocks.0.attn.k_proj.weight", "blocks.0.attn.v_proj.weight", "blocks.0.attn.o_proj.weight",
    "blocks.0.norm2.weight", "blocks.0.mlp.fc.weight", "blocks.0.mlp.proj.weight",
    "ln_f.weight", NULL,
};
static const char *const names_modern[] = {
    "wte.weight", "blocks.0.norm1.weight", "blocks.0.attn.q_proj.weight",
    "blocks.0.attn.q_proj.bias", "blocks.0.attn.k_proj.weight", "blocks.0.attn.k_proj.bias",
    "blocks.0.attn.v_proj.weight", "blocks.0.attn.v_proj.bias", "blocks.0.attn.o_proj.weight",
    "blocks.0.attn.o_proj.bias", "blocks.0.attn.q_norm.weight", "blocks.0.attn.k_norm.weight",
    "blocks.0.norm2.weight", "blocks.0.mlp.fc.weight", "blocks.0.mlp.fc.bias",
    "blocks.0.mlp.proj.weight", "blocks.0.mlp.proj.bias", "ln_f.weight", "lm_head.weight", NULL,
};

START_TEST(test_param_names) {
    tt_gpt_config c = small_config(_i);
    c.n_layer = 1;
    const char *const *want = _i == CFG_DEFAULT ? names_default : names_modern;
    tt_gpt m;
    gpt_init_ok(&m, &c, 1, TT_F32);
    int n = 0;
    while (want[n]) n++;
    ck_assert_int_eq(m.params.n, n);
    for (int i = 0; i < n; i++) ck_assert_str_eq(m.params.items[i].name, want[i]);
    for (int i = 0; i < m.params.n; i++) {
        ck_assert(m.params.items[i].tensor->requires_grad);
        ck_assert_int_eq(m.params.items[i].tensor->dtype, TT_F32);
    }
    tt_gpt_free(&m);
}
END_TEST

// Parameters by formula: per layer 2 norms, q/o (C, C), k/v (NKV HS, C), fc (4C, C) and
// proj (C, 4C) with their biases, qk-norm gains (HS each); plus wte (V, C), wpe (L, C) when
// learned, ln_f and an untied head (V, C).
static int64_t expected_params(const tt_gpt_config *c) {
    int64_t C = c->n_embd, V = c->vocab_size, hs = C / c->n_head;
    int64_t kv = (c->n_kv_head ? c->n_kv_head : c->n_head) * hs;
    int64_t norm = (c->norm == TT_NORM_LAYERNORM && c->bias) ? 2 * C : C;
    int64_t layer = 2 * norm + 2 * C * C + 2 * kv * C + 8 * C * C;
    if (c->bias) layer += C + 2 * kv + C + 4 * C + C;
    if (c->qk_norm) layer += 2 * hs;
    int64_t n = V * C + c->n_layer * layer + norm;
    if (c->positional == TT_POS_LEARNED) n += c->block_size * C;
    if (!c->tie_weights) n += V * C;
    return n;
}

START_TEST(test_param_counts) {
    tt_gpt_config cs[6];
    cs[0] = small_config(CFG_DEFAULT);
    cs[1] = small_config(CFG_MODERN);
    cs[2] = small_config(CFG_DEFAULT);
    cs[2].bias = true;  // layernorm with bias, learned positions
    cs[3] = small_config(CFG_MODERN);
    cs[3].bias = false;
    cs[3].tie_weights = true;
    cs[4] = small_config(CFG_MODERN);
    cs[4].positional = TT_POS_LEARNED;
    cs[4].norm = TT_NORM_LAYERNORM;
    cs[5] = tt_gpt_config_default();
    for (int k = 0; k < 6; k++) {
        tt_gpt m;
        gpt_init_ok(&m, &cs[k], 1, TT_F32);
        int64_t want = expected_params(&cs[k]);
        int64_t wpe = cs[k].positional == TT_POS_LEARNED ? cs[k].block_size * cs[k].n_embd : 0;
        ck_assert_int_eq(tt_params_numel(&m.params), want);
        ck_assert_int_eq(tt_gpt_num_params(&m, false), want);
        ck_assert_int_eq(tt_gpt_num_params(&m, true), want - wpe);
        tt_gpt_free(&m);
    }
    // The baby GPT as nanoGPT counts it by hand: 4 layers of 2*128 + 12*128^2 = 196864,
    // wte 65*128 = 8320, wpe 64*128 = 8192, ln_f 128 ("number of parameters: 0.80M").
    tt_gpt m;
    gpt_init_ok(&m, &cs[5], 1, TT_F32);
    ck_assert_int_eq(tt_gpt_num_params(&m, false), 804096);
    ck_assert_int_eq(tt_gpt_num_params(&m, true), 795904);
    tt_gpt_free(&m);
}
END_TEST

// ---- init ----

START_TEST(test_init_stats) {
    tt_gpt_config c = small_config(CFG_MODERN);
    c.positional = TT_POS_LEARNED;
    c.vocab_size = 1024;
    c.n_embd = 64;
    c.n_layer = 3;
    c.block_size = 32;
    tt_gpt m;
    gpt_init_ok(&m, &c, 42, TT_F32);
    double mean, std;
    // wte: 65536 draws of N(0, 0.02); the std's standard error is 0.02/sqrt(2n) ~ 0.28%.
    mean_std(tt_params_get(&m.params, "wte.weight"), &mean, &std);
    ck_assert_close(std, 0.02, 0, 0.02);
    ck_assert_close(mean, 0, 5 * 0.02 / 256, 0);
    mean_std(tt_params_get(&m.params, "lm_head.weight"), &mean, &std);
    ck_assert_close(std, 0.02, 0, 0.02);
    mean_std(tt_params_get(&m.params, "wpe.weight"), &mean, &std);  // 2048 draws
    ck_assert_close(std, 0.02, 0, 0.08);
    // Residual projections: 0.02 / sqrt(2 L) (GPT-2 sec. 2.3); the others 0.02.
    double resid = 0.02 / sqrt(2.0 * 3);
    char name[TT_NAME_MAX];
    for (int l = 0; l < 3; l++) {
        snprintf(name, sizeof name, "blocks.%d.mlp.proj.weight", l);  // 16384 draws
        mean_std(tt_params_get(&m.params, name), &mean, &std);
        ck_assert_close(std, resid, 0, 0.04);
        snprintf(name, sizeof name, "blocks.%d.attn.o_proj.weight", l);  // 4096 draws
        mean_std(tt_params_get(&m.params, name), &mean, &std);
        ck_assert_close(std, resid, 0, 0.06);
        snprintf(name, sizeof name, "blocks.%d.mlp.fc.weight", l);
        mean_std(tt_params_get(&m.params, name), &mean, &std);
        ck_assert_close(std, 0.02, 0, 0.04);
        snprintf(name, sizeof name, "blocks.%d.attn.q_proj.weight", l);
        mean_std(tt_params_get(&m.params, name), &mean, &std);
        ck_assert_close(std, 0.02, 0, 0.06);
    }
    // Biases 0, every norm gain (block norms, qk-norm, ln_f) 1.
    for (int i = 0; i < m.params.n; i++) {
        const tt_tensor *p = m.params.items[i].tensor;
        if (p->ndim != 1) continue;
        bool bias = strstr(m.params.items[i].name, ".bias") != NULL;
        for (int64_t j = 0; j < tt_numel(p); j++)
            ck_assert_msg(tt_at(p, j) == (bias ? 0.0 : 1.0), "%s[%lld] = %g",
                          m.params.items[i].name, (long long)j, tt_at(p, j));
    }
    // The same seed gives the same weights; another seed others.
    tt_gpt m2, m3;
    gpt_init_ok(&m2, &c, 42, TT_F32);
    gpt_init_ok(&m3, &c, 43, TT_F32);
    for (int i = 0; i < m.params.n; i++) {
        const tt_tensor *a = m.params.items[i].tensor, *b = m2.params.items[i].tensor;
        ck_assert_int_eq(memcmp(tt_data(a), tt_data(b), (size_t)tt_numel(a) * 4), 0);
    }
    ck_assert(tt_at(m.wte.weight, 0) != tt_at(m3.wte.weight, 0));
    ck_assert_int_eq(memcmp(&m.dropout_rng, &m2.dropout_rng, sizeof m.dropout_rng), 0);
    tt_gpt_free(&m3);
    tt_gpt_free(&m2);
    tt_gpt_free(&m);
}
END_TEST

// ---- tied weights ----

// The tied model's wte gradient is the sum of the embedding's and the head's: compare with an
// untied copy whose lm_head starts equal to wte.
START_TEST(test_tied_weights) {
    tt_gpt_config c = small_config(CFG_DEFAULT);
    tt_gpt tied, untied;
    gpt_init_ok(&tied, &c, 5, TT_F64);
    ck_assert_ptr_null(tied.lm_head.weight);
    ck_assert_ptr_null(tt_params_get(&tied.params, "lm_head.weight"));
    c.tie_weights = false;
    gpt_init_ok(&untied, &c, 5, TT_F64);
    for (int i = 0; i < tied.params.n; i++)
        tt_copy_(tt_params_get(&untied.params, tied.params.items[i].name),
                 tied.params.items[i].tensor);
    tt_copy_(untied.lm_head.weight, tied.wte.weight);

    tt_rng rng;
    tt_rng_seed(&rng, 9);
    tt_scope_begin();
    tt_tensor *x = rand_tokens(&rng, 3, 8, c.vocab_size);
    tt_tensor *y = rand_tokens(&rng, 3, 8, c.vocab_size);
    tt_tensor *lt = tt_gpt_loss(&tied, x, y), *lu = tt_gpt_loss(&untied, x, y);
    ck_assert_close(tt_item(lt), tt_item(lu), 1e-14, 0);
    tt_backward(lt);
    tt_backward(lu);
    tt_tensor *g_emb = tt_grad(untied.wte.weight), *g_head = tt_grad(untied.lm_head.weight);
    tt_tensor *g_tied = tt_grad(tied.wte.weight);
    double norm_emb = 0, norm_head = 0;
    for (int64_t i = 0; i < tt_numel(g_tied); i++) {
        ck_assert_close(tt_at(g_tied, i), tt_at(g_emb, i) + tt_at(g_head, i), 1e-14, 1e-10);
        norm_emb += fabs(tt_at(g_emb, i));
        norm_head += fabs(tt_at(g_head, i));
    }
    ck_assert(norm_emb > 0 && norm_head > 0);  // both uses contribute
    tt_scope_end();
    tt_gpt_free(&untied);
    tt_gpt_free(&tied);
}
END_TEST

// ---- whole-model gradcheck ----

typedef struct gc_ctx {
    tt_gpt *m;
    tt_tensor *x, *y;
} gc_ctx;

static tt_tensor *gc_loss(tt_tensor *const *inputs, int n, void *ctx) {
    (void)inputs;  // the inputs are the model's own parameters, perturbed in place
    (void)n;
    gc_ctx *g = ctx;
    return tt_gpt_loss(g->m, g->x, g->y);
}

// Central differences in f64 on every parameter of a 2-layer model of each family; prints a
// line in the gradcheck suite's format.
START_TEST(test_gradcheck_model) {
    tt_gpt_config c = small_config(_i);
    c.vocab_size = 7;
    c.n_embd = 8;
    c.n_head = 2;
    c.n_kv_head = _i == CFG_MODERN ? 1 : 2;
    c.block_size = 4;
    tt_gpt m;
    gpt_init_ok(&m, &c, 11, TT_F64);
    // Larger weights than the 0.02 init so every path carries signal.
    tt_rng rng;
    tt_rng_seed(&rng, 12);
    for (int i = 0; i < m.params.n; i++) {
        tt_tensor *p = m.params.items[i].tensor;
        for (int64_t j = 0; j < tt_numel(p); j++)
            tt_set_at(p, j, tt_at(p, j) + 0.3 * tt_rng_normal(&rng));
    }
    tt_scope_begin();
    gc_ctx g = {&m, rand_tokens(&rng, 2, 4, c.vocab_size), rand_tokens(&rng, 2, 4, c.vocab_size)};
    tt_tensor *inputs[64];
    ck_assert_int_le(m.params.n, 64);
    for (int i = 0; i < m.params.n; i++) inputs[i] = m.params.items[i].tensor;
    tt_gradcheck_result r = tt_gradcheck(gc_loss, &g, m.params.n, inputs, NULL);
    tt_scope_end();
    printf("gradcheck gpt %s f64 max_abs_err=%.2e max_rel_err=%.2e params=%d checked=%lld %s\n",
           cfg_names[_i], r.max_abs_err, r.max_rel_err, m.params.n, (long long)r.checked,
           r.ok ? "ok" : "FAIL");
    fflush(stdout);
    ck_assert_msg(r.ok, "%s: parameter %s element %lld: analytic %.10g vs numeric %.10g",
                  cfg_names[_i], m.params.items[r.worst_input].name, (long long)r.worst_in,
                  r.analytic, r.numeric);
    ck_assert_int_eq(r.checked, tt_params_numel(&m.params));
    for (int i = 0; i < m.params.n; i++) tt_zero_grad(m.params.items[i].tensor);
    tt_gpt_free(&m);
}
END_TEST

// ---- training ----

// One AdamW step of nanoGPT's loop; returns the loss.
static double train_step(tt_gpt *m, tt_optim *o, tt_tensor *x, tt_tensor *y) {
    tt_scope_begin();
    tt_tensor *loss = tt_gpt_loss(m, x, y);
    double v = tt_item(loss);
    tt_backward(loss);
    tt_clip_grad_norm(&m->params, 1.0);
    tt_optim_step(o);
    tt_optim_zero_grad(o);
    tt_scope_end();
    return v;
}

// 4 x 16 random tokens over a vocab of 16: every context (a position and its whole prefix) is
// distinct, so a model with this capacity can drive the loss toward 0. It starts at
// ln 16 = 2.77; below 0.05 the correct next token gets about 95% of the probability on
// average, which only memorizing the batch can reach (chance-level is 2.77).
START_TEST(test_overfit_one_batch) {
    tt_gpt_config c = small_config(_i);
    c.vocab_size = 16;
    c.block_size = 16;
    c.n_embd = 32;
    tt_gpt m;
    gpt_init_ok(&m, &c, 21, TT_F32);
    tt_optim o;
    tt_optim_config oc = tt_adamw_config(1e-2);
    oc.beta2 = 0.99;
    tt_optim_init(&o, oc);
    tt_optim_add_decay_groups(&o, &m.params, 0.0);
    tt_rng rng;
    tt_rng_seed(&rng, 22);
    tt_scope_begin();
    tt_tensor *x = rand_tokens(&rng, 4, 16, 16), *y = rand_tokens(&rng, 4, 16, 16);
    double first = 0, last = 0;
    int steps = 150;
    for (int s = 0; s < steps; s++) {
        last = train_step(&m, &o, x, y);
        if (s == 0) first = last;
    }
    tt_scope_end();
    printf("overfit gpt %s: loss %.4f -> %.4f in %d AdamW steps\n", cfg_names[_i], first, last,
           steps);
    ck_assert_close(first, log(16.0), 0.1, 0);
    ck_assert_msg(last < 0.05, "%s: loss only fell from %.4f to %.4f", cfg_names[_i], first,
                  last);
    tt_optim_free(&o);
    tt_gpt_free(&m);
}
END_TEST

// After a training step (forward, backward, clip, update, zero_grad) every tensor it made is
// gone: the live counts equal those before it, and stay so over more steps.
START_TEST(test_step_no_leak) {
    tt_gpt_config c = small_config(_i);
    c.dropout = 0.1;
    tt_gpt m;
    gpt_init_ok(&m, &c, 31, TT_F32);
    tt_optim o;
    tt_optim_init(&o, tt_adamw_config(1e-3));
    tt_optim_add_decay_groups(&o, &m.params, 0.1);
    tt_rng rng;
    tt_rng_seed(&rng, 32);
    tt_tensor *x = rand_tokens(&rng, 2, 8, c.vocab_size);  // unscoped: ours
    tt_tensor *y = rand_tokens(&rng, 2, 8, c.vocab_size);
    int64_t tensors = tt_live_tensors(), bytes = tt_live_bytes();
    for (int s = 0; s < 3; s++) {
        train_step(&m, &o, x, y);
        ck_assert_int_eq(tt_live_tensors(), tensors);
        ck_assert_int_eq(tt_live_bytes(), bytes);
    }
    tt_gpt_train(&m, false);
    tt_scope_begin();
    tt_gpt_forward(&m, x);
    tt_scope_end();
    ck_assert_int_eq(tt_live_tensors(), tensors);
    tt_release(x);
    tt_release(y);
    tt_optim_free(&o);
    tt_gpt_free(&m);
}
END_TEST

// Dropout draws from the model's own stream: two models from the same seed train identically;
// eval mode is deterministic and equals a dropout-free forward.
START_TEST(test_dropout_stream) {
    tt_gpt_config c = small_config(CFG_DEFAULT);
    c.dropout = 0.2;
    tt_gpt a, b;
    gpt_init_ok(&a, &c, 41, TT_F32);
    gpt_init_ok(&b, &c, 41, TT_F32);
    tt_rng rng;
    tt_rng_seed(&rng, 42);
    tt_scope_begin();
    tt_tensor *x = rand_tokens(&rng, 2, 8, c.vocab_size), *y = rand_tokens(&rng, 2, 8, 11);
    double la1 = tt_item(tt_gpt_loss(&a, x, y)), la2 = tt_item(tt_gpt_loss(&a, x, y));
    double lb1 = tt_item(tt_gpt_loss(&b, x, y));
    ck_assert(la1 == lb1);
    ck_assert(la1 != la2);  // a fresh mask each forward
    tt_gpt_train(&a, false);
    tt_gpt_train(&b, false);
    ck_assert(tt_item(tt_gpt_loss(&a, x, y)) == tt_item(tt_gpt_loss(&a, x, y)));
    tt_scope_end();
    tt_gpt_free(&b);
    tt_gpt_free(&a);
}
END_TEST

// ---- sampling ----

static tt_tensor *logits_of(const double *v, int64_t n) {
    return tt_test_tensor_(TT_F32, 1, (int64_t[]){n}, v, n);
}

static const double hand_logits[6] = {1.0, 2.0, 0.5, -1.0, 3.0, 0.0};

START_TEST(test_sample_greedy) {
    tt_scope_begin();
    tt_tensor *l = logits_of(hand_logits, 6);
    tt_sample_opts o = tt_sample_opts_default();
    o.temperature = 0;
    tt_rng rng, before;
    tt_rng_seed(&rng, 1);
    before = rng;
    for (int i = 0; i < 10; i++) ck_assert_int_eq(tt_sample_logits(l, &o, &rng), 4);
    ck_assert_int_eq(memcmp(&rng, &before, sizeof rng), 0);  // greedy draws nothing
    // The first maximum wins a tie; -inf entries are never chosen.
    tt_tensor *tie = logits_of((const double[]){-INFINITY, 2, 5, 5, 1}, 5);
    ck_assert_int_eq(tt_sample_logits(tie, &o, &rng), 2);
    // top_k = 1 (temperature 1) and a tiny top_p both reduce to greedy.
    o.temperature = 1.0;
    o.top_k = 1;
    for (int i = 0; i < 200; i++) ck_assert_int_eq(tt_sample_logits(l, &o, &rng), 4);
    o.top_k = 0;
    o.top_p = 1e-9;
    for (int i = 0; i < 200; i++) ck_assert_int_eq(tt_sample_logits(l, &o, &rng), 4);
    // Any layout and float dtype: a strided f64 view of the same values.
    tt_tensor *wide = tt_zeros(TT_F64, TT_SHAPE(6, 2));
    for (int i = 0; i < 6; i++) tt_set(wide, (int64_t[]){i, 1}, hand_logits[i]);
    tt_tensor *col = tt_slice(tt_transpose(wide, 0, 1), 0, 1, 2, 1);  // (1, 6)
    o.temperature = 0;
    ck_assert_int_eq(tt_sample_logits(tt_reshape(col, TT_SHAPE(6)), &o, &rng), 4);
    tt_scope_end();
}
END_TEST

// Frequencies over N draws against p_i within 5 standard errors sqrt(p (1 - p) / N) (a fixed
// seed, so the test is deterministic; 5 sigma leaves room for any seed).
static void check_frequencies(const tt_tensor *logits, const tt_sample_opts *o,
                              const double *p, int64_t V) {
    tt_rng rng;
    tt_rng_seed(&rng, 2024);
    const int N = 200000;
    int64_t count[16] = {0};
    for (int i = 0; i < N; i++) {
        int32_t t = tt_sample_logits(logits, o, &rng);
        ck_assert(t >= 0 && t < V);
        count[t]++;
    }
    for (int64_t i = 0; i < V; i++) {
        double f = (double)count[i] / N, se = sqrt(p[i] * (1 - p[i]) / N);
        if (p[i] == 0) ck_assert_msg(count[i] == 0, "token %lld has p = 0 but was drawn %lld "
                                     "times", (long long)i, (long long)count[i]);
        else ck_assert_msg(fabs(f - p[i]) <= 5 * se, "token %lld: frequency %.5f, p %.5f "
                           "(T=%g k=%d p=%g)", (long long)i, f, p[i], o->temperature,
                           o->top_k, o->top_p);
    }
}

// softmax(logits / T) restricted to `keep` (NULL: all) and renormalized.
static void softmax_ref(const double *l, int64_t V, double T, const bool *keep, double *p) {
    double mx = -INFINITY, s = 0;
    for (int64_t i = 0; i < V; i++) mx = fmax(mx, l[i] / T);
    for (int64_t i = 0; i < V; i++) {
        p[i] = (!keep || keep[i]) ? exp(l[i] / T - mx) : 0;
        s += p[i];
    }
    for (int64_t i = 0; i < V; i++) p[i] /= s;
}

START_TEST(test_sample_frequencies) {
    tt_scope_begin();
    tt_tensor *l = logits_of(hand_logits, 6);
    tt_sample_opts o = {.temperature = 0.7, .top_k = 0, .top_p = 1.0, .use_cache = true};
    double p[6];
    softmax_ref(hand_logits, 6, 0.7, NULL, p);
    check_frequencies(l, &o, p, 6);
    // Temperature 2 flattens the distribution.
    o.temperature = 2.0;
    softmax_ref(hand_logits, 6, 2.0, NULL, p);
    check_frequencies(l, &o, p, 6);
    // top_k = 2 keeps tokens 4 and 1 (logits 3 and 2), renormalized.
    o.temperature = 1.0;
    o.top_k = 2;
    softmax_ref(hand_logits, 6, 1.0, (const bool[]){0, 1, 0, 0, 1, 0}, p);
    check_frequencies(l, &o, p, 6);
    // top_p = 0.8 at T = 1: probabilities .0819 .2225 .0496 .0111 .6048 .0301 (token order);
    // sorted 4 (.605), 1 (cumulative .827 >= .8): the nucleus is {4, 1}. top_p = 0.9 adds
    // token 0 (.909).
    o.top_k = 0;
    o.top_p = 0.8;
    check_frequencies(l, &o, p, 6);
    o.top_p = 0.9;
    softmax_ref(hand_logits, 6, 1.0, (const bool[]){1, 1, 0, 0, 1, 0}, p);
    check_frequencies(l, &o, p, 6);
    // top_k keeps every token tied with the k-th (as nanoGPT's `logits < v[-1]`).
    tt_tensor *tie = logits_of((const double[]){1, 1, 1, 0}, 4);
    o.top_p = 1.0;
    o.top_k = 1;
    check_frequencies(tie, &o, (const double[]){1 / 3.0, 1 / 3.0, 1 / 3.0, 0}, 4);
    tt_scope_end();
}
END_TEST

// ---- KV cache ----

// Feeding tokens through the cache (one at a time, then in chunks) gives the logits of the
// full forward at every position, for both families (f64: agreement to rounding).
START_TEST(test_cache_matches_forward) {
    tt_gpt_config c = small_config(_i);
    tt_gpt m;
    gpt_init_ok(&m, &c, 51, TT_F64);
    tt_rng rng;
    tt_rng_seed(&rng, 52);
    bool grad = tt_set_grad_enabled(false);
    tt_scope_begin();
    tt_tensor *x = rand_tokens(&rng, 1, c.block_size, c.vocab_size);  // (1, L)
    const int32_t *ids = tt_data(x);
    tt_tensor *full = tt_gpt_forward(&m, x);                             // (1, L, V)
    tt__kv_cache cache;
    tt__kv_cache_init(&cache, &m);
    double err = 0;
    for (int64_t t = 0; t < c.block_size; t++) {
        tt_tensor *step = tt__gpt_forward_cached(&m, &cache, ids + t, 1);  // (V,)
        for (int64_t v = 0; v < c.vocab_size; v++)
            err = fmax(err, fabs(tt_at(step, v) - tt_get(full, (int64_t[]){0, t, v})));
    }
    ck_assert_int_eq(cache.len, c.block_size);
    // Chunks 3, 1, 4: the mask offset of a multi-token step after cached positions.
    tt__kv_cache_reset(&cache);
    const int64_t chunks[3] = {3, 1, 4};
    for (int k = 0, at = 0; k < 3; at += (int)chunks[k], k++) {
        tt_tensor *last = tt__gpt_forward_cached(&m, &cache, ids + at, chunks[k]);
        int64_t t = at + chunks[k] - 1;
        for (int64_t v = 0; v < c.vocab_size; v++)
            err = fmax(err, fabs(tt_at(last, v) - tt_get(full, (int64_t[]){0, t, v})));
    }
    tt__kv_cache_free(&cache);
    tt_scope_end();
    tt_set_grad_enabled(grad);
    ck_assert_msg(err < 1e-12, "%s: cached logits differ from the full forward by %.3e",
                  cfg_names[_i], err);
    tt_gpt_free(&m);
}
END_TEST

// ---- generation ----

typedef struct collected {
    int32_t tokens[256];
    int n;
} collected;

static void collect(int32_t token, void *ctx) {
    collected *c = ctx;
    c->tokens[c->n++] = token;
}

// The window rule written out: a full forward over the current window, argmax, append; a
// token that does not fit makes the window keep its newer half (the new token included).
static void greedy_reference(tt_gpt *m, const int32_t *prompt, int64_t n_prompt, int64_t n_new,
                             int32_t *out) {
    int64_t L = m->cfg.block_size, keep = (L + 1) / 2;
    int32_t win[64];
    int64_t len = n_prompt < L ? n_prompt : L;
    memcpy(win, prompt + n_prompt - len, (size_t)len * sizeof *win);
    bool grad = tt_set_grad_enabled(false);
    for (int64_t i = 0; i < n_new; i++) {
        tt_scope_begin();
        tt_tensor *logits = tt_gpt_forward(m, tt_from_data(TT_I32, TT_SHAPE(1, len), win));
        tt_tensor *last = tt_reshape(tt_slice(logits, 1, len - 1, len, 1), TT_SHAPE(-1));
        out[i] = (int32_t)tt_item(tt_argmax(last, 0, false));
        tt_scope_end();
        if (len == L) {
            memmove(win, win + len - (keep - 1), (size_t)(keep - 1) * sizeof *win);
            len = keep - 1;
        }
        win[len++] = out[i];
    }
    tt_set_grad_enabled(grad);
}

START_TEST(test_generate_window_rule) {
    tt_gpt_config c = small_config(_i);
    tt_gpt m;
    gpt_init_ok(&m, &c, 61, TT_F32);
    // Larger weights than the init so greedy decoding does not collapse onto one token.
    tt_rng rng;
    tt_rng_seed(&rng, 62);
    for (int i = 0; i < m.params.n; i++)
        tt_normal_(m.params.items[i].tensor, &rng, 0.0, 0.5);
    const int32_t prompt[12] = {1, 5, 2, 7, 3, 3, 9, 0, 4, 10, 6, 8};
    int32_t want[30], got[30];
    tt_sample_opts o = {.temperature = 0, .top_k = 0, .top_p = 1.0, .use_cache = false};
    for (int64_t np = 1; np <= 12; np += 11) {  // a short prompt, and one longer than L = 8
        greedy_reference(&m, prompt, np, 30, want);
        for (int cache = 0; cache < 2; cache++) {
            o.use_cache = cache;
            tt_gpt_generate(&m, prompt, np, 30, &o, &rng, got, NULL, NULL);
            for (int i = 0; i < 30; i++)
                ck_assert_msg(got[i] == want[i], "%s prompt %lld cache %d: token %d is %d, the "
                              "reference says %d", cfg_names[_i], (long long)np, cache, i,
                              got[i], want[i]);
        }
    }
    int distinct = 0;
    for (int v = 0; v < c.vocab_size; v++)
        for (int i = 0; i < 30; i++)
            if (want[i] == v) {
                distinct++;
                break;
            }
    ck_assert_int_ge(distinct, 2);
    tt_gpt_free(&m);
}
END_TEST

// With the same rng state, cached and uncached generation produce the same tokens, well past
// block_size (so the window is rebuilt several times), under several sampling settings.
START_TEST(test_generate_cache_equivalence) {
    tt_gpt_config c = small_config(_i);
    c.dropout = 0.1;  // generation runs in eval mode and restores the mode after
    tt_gpt m;
    gpt_init_ok(&m, &c, 71, TT_F32);
    tt_rng wr;
    tt_rng_seed(&wr, 72);
    for (int i = 0; i < m.params.n; i++) tt_normal_(m.params.items[i].tensor, &wr, 0.0, 0.3);
    const tt_sample_opts settings[4] = {
        {.temperature = 1.0, .top_k = 0, .top_p = 1.0},
        {.temperature = 0.8, .top_k = 5, .top_p = 1.0},
        {.temperature = 1.3, .top_k = 0, .top_p = 0.9},
        {.temperature = 0.0, .top_k = 0, .top_p = 1.0},
    };
    const int32_t prompt[3] = {4, 1, 9};
    int64_t tensors = tt_live_tensors();
    for (int s = 0; s < 4; s++) {
        collected a = {.n = 0}, b = {.n = 0};
        int32_t out_a[100], out_b[100];
        tt_sample_opts o = settings[s];
        tt_rng ra, rb;
        tt_rng_seed(&ra, 1000 + (uint64_t)s);
        rb = ra;
        o.use_cache = true;
        tt_gpt_generate(&m, prompt, 3, 100, &o, &ra, out_a, collect, &a);
        o.use_cache = false;
        tt_gpt_generate(&m, prompt, 3, 100, &o, &rb, out_b, collect, &b);
        ck_assert_int_eq(a.n, 100);
        ck_assert_int_eq(b.n, 100);
        for (int i = 0; i < 100; i++) {
            ck_assert_msg(out_a[i] == out_b[i], "%s setting %d: token %d cached %d, uncached %d",
                          cfg_names[_i], s, i, out_a[i], out_b[i]);
            ck_assert_int_eq(a.tokens[i], out_a[i]);
            ck_assert(out_a[i] >= 0 && out_a[i] < c.vocab_size);
        }
        ck_assert_int_eq(memcmp(&ra, &rb, sizeof ra), 0);  // the same number of draws
        ck_assert(m.drop.training && m.blocks[0].attn.attn_drop.training);
        ck_assert(tt_is_grad_enabled());
        ck_assert_int_eq(tt_live_tensors(), tensors);
    }
    // Greedy is deterministic whatever the rng.
    int32_t g1[20], g2[20];
    tt_rng r1, r2;
    tt_rng_seed(&r1, 1);
    tt_rng_seed(&r2, 2);
    tt_sample_opts greedy = {.temperature = 0, .top_k = 0, .top_p = 1.0, .use_cache = true};
    tt_gpt_generate(&m, prompt, 3, 20, &greedy, &r1, g1, NULL, NULL);
    tt_gpt_generate(&m, prompt, 3, 20, &greedy, &r2, g2, NULL, NULL);
    ck_assert_int_eq(memcmp(g1, g2, sizeof g1), 0);
    tt_gpt_free(&m);
}
END_TEST

// ---- aborts ----

static tt_gpt abort_model;

static void abort_setup(void) {
    tt_gpt_config c = small_config(CFG_DEFAULT);
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    if (tt_gpt_init(&abort_model, &c, &rng) != TT_OK) abort();
}

static void abort_teardown(void) { tt_gpt_free(&abort_model); }

START_TEST(test_abort_too_long) {
    tt_expect_abort("sequence length T=9 of tokens (1, 9) exceeds block_size=8");
    tt_scope_begin();
    tt_gpt_forward(&abort_model, tt_zeros(TT_I32, TT_SHAPE(1, 9)));  // block_size is 8
}
END_TEST

START_TEST(test_abort_float_tokens) {
    tt_expect_abort("tokens must be token ids of dtype i32 or i64, got f32");
    tt_scope_begin();
    tt_gpt_forward(&abort_model, tt_zeros(TT_F32, TT_SHAPE(1, 4)));
}
END_TEST

START_TEST(test_abort_targets_shape) {
    tt_expect_abort("targets (2, 3) must have the shape of tokens (2, 4)");
    tt_scope_begin();
    tt_gpt_loss(&abort_model, tt_zeros(TT_I32, TT_SHAPE(2, 4)), tt_zeros(TT_I32, TT_SHAPE(2, 3)));
}
END_TEST

START_TEST(test_abort_prompt_token) {
    tt_expect_abort("prompt token 1 is 11, outside the vocab [0, 11)");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    int32_t out[4];
    tt_gpt_generate(&abort_model, (const int32_t[]){3, 11}, 2, 4, NULL, &rng, out, NULL, NULL);
}
END_TEST

START_TEST(test_abort_empty_prompt) {
    tt_expect_abort("the prompt needs at least one token (got n_prompt=0)");
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    int32_t out[4];
    tt_gpt_generate(&abort_model, (const int32_t[]){3}, 0, 4, NULL, &rng, out, NULL, NULL);
}
END_TEST

START_TEST(test_abort_cache_overflow) {
    tt_expect_abort("cannot feed 9 tokens at position 0: the cache holds block_size=8");
    tt__kv_cache c;
    tt__kv_cache_init(&c, &abort_model);
    const int32_t ids[9] = {0};
    tt__gpt_forward_cached(&abort_model, &c, ids, 9);
}
END_TEST

START_TEST(test_abort_bad_top_p) {
    tt_expect_abort("top_p must be in (0, 1] (1 turns it off), got 0");
    tt_tensor *l = tt_zeros(TT_F32, TT_SHAPE(4));
    tt_sample_opts o = {.temperature = 1, .top_k = 0, .top_p = 0, .use_cache = true};
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_sample_logits(l, &o, &rng);
}
END_TEST

START_TEST(test_abort_negative_temperature) {
    tt_expect_abort("temperature must be >= 0 (0 is greedy), got -1");
    tt_tensor *l = tt_zeros(TT_F32, TT_SHAPE(4));
    tt_sample_opts o = {.temperature = -1, .top_k = 0, .top_p = 1, .use_cache = true};
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_sample_logits(l, &o, &rng);
}
END_TEST

START_TEST(test_abort_nan_logits) {
    tt_expect_abort("logit 0 is NaN");
    tt_tensor *l = tt_full(TT_F32, TT_SHAPE(4), NAN);
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_sample_logits(l, NULL, &rng);
}
END_TEST

// ---- abort messages name the function the user called ----

START_TEST(test_names_forward_1d_tokens) {
    tt_expect_abort("tt_gpt_forward: tokens must be (B, T), got (4,); a single sequence is (1, T)");
    tt_scope_begin();
    tt_gpt_forward(&abort_model, tt_zeros(TT_I32, TT_SHAPE(4)));
}
END_TEST

START_TEST(test_names_loss_float_tokens) {
    tt_expect_abort("tt_gpt_loss: tokens must be token ids of dtype i32 or i64, got f64; "
                    "convert them with tt_to_dtype(tokens, TT_I32)");
    tt_scope_begin();
    tt_gpt_loss(&abort_model, tt_zeros(TT_F64, TT_SHAPE(1, 4)), tt_zeros(TT_I32, TT_SHAPE(1, 4)));
}
END_TEST

START_TEST(test_names_loss_too_long) {
    tt_expect_abort("tt_gpt_loss: sequence length T=9 of tokens (1, 9) exceeds block_size=8");
    tt_scope_begin();
    tt_gpt_loss(&abort_model, tt_zeros(TT_I32, TT_SHAPE(1, 9)), tt_zeros(TT_I32, TT_SHAPE(1, 9)));
}
END_TEST

START_TEST(test_names_forward_uninitialized) {
    tt_expect_abort("tt_gpt_forward: the model is not initialized; call tt_gpt_init first");
    tt_gpt m;
    memset(&m, 0, sizeof m);
    tt_scope_begin();
    tt_gpt_forward(&m, tt_zeros(TT_I32, TT_SHAPE(1, 4)));
}
END_TEST

START_TEST(test_names_generate_top_k) {
    tt_expect_abort("tt_gpt_generate: top_k must be >= 0 (0 turns it off), got -1");
    tt_sample_opts o = {.temperature = 1, .top_k = -1, .top_p = 1, .use_cache = true};
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    int32_t out[4];
    tt_gpt_generate(&abort_model, (const int32_t[]){3}, 1, 4, &o, &rng, out, NULL, NULL);
}
END_TEST

START_TEST(test_names_sample_inf_temperature) {
    tt_expect_abort("tt_sample_logits: temperature must be >= 0 (0 is greedy), got inf; pick "
                    "a finite value (0.8 is the default)");
    tt_tensor *l = tt_zeros(TT_F32, TT_SHAPE(4));
    tt_sample_opts o = {.temperature = INFINITY, .top_k = 0, .top_p = 1, .use_cache = true};
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    tt_sample_logits(l, &o, &rng);
}
END_TEST

// ---- the config table, presets, checkpoints (gpt_config.c) ----

START_TEST(test_field_table) {
    tt_gpt_config d = tt_gpt_config_default();
    for (int i = 0; i < tt_gpt_nfields; i++) {
        const tt_gpt_field *f = &tt_gpt_fields[i];
        ck_assert_ptr_eq(tt_gpt_field_find(f->name), f);
        for (int j = 0; j < i; j++) {  // one row per member
            ck_assert_str_ne(tt_gpt_fields[j].name, f->name);
            ck_assert_uint_ne(tt_gpt_fields[j].offset, f->offset);
        }
        ck_assert_uint_lt(f->offset, sizeof(tt_gpt_config));
        // format -> parse gives the value back, for the default and for another valid value.
        char buf[64];
        tt_gpt_config c = d;
        ck_assert_int_eq(tt_gpt_field_parse(&c, f, tt_gpt_field_format(&d, f, buf, sizeof buf)),
                         TT_OK);
        ck_assert(tt_gpt_field_get(&c, f) == tt_gpt_field_get(&d, f));
        double other = f->type == TT_GPT_FIELD_F64 ? (f->lo + f->hi) / 4 : f->hi;
        while (f->type == TT_GPT_FIELD_ENUM && !f->names[(int)(other - f->lo)]) other--;
        tt_gpt_field_set(&c, f, other);
        tt_gpt_config e = d;
        ck_assert_int_eq(tt_gpt_field_parse(&e, f, tt_gpt_field_format(&c, f, buf, sizeof buf)),
                         TT_OK);
        ck_assert_msg(tt_gpt_field_get(&e, f) == other, "%s: '%s'", f->name, buf);
    }
    ck_assert_ptr_null(tt_gpt_field_find("n_layers"));
    ck_assert_ptr_null(tt_gpt_field_find("--layers"));  // flags are the programs'
    ck_assert_ptr_null(tt_gpt_field_find("--nope"));
    // The values of each type land in the struct member.
    tt_gpt_config c = d;
    ck_assert_int_eq(tt_gpt_field_parse(&c, tt_gpt_field_find("n_layer"), "12"), TT_OK);
    ck_assert_int_eq(tt_gpt_field_parse(&c, tt_gpt_field_find("dropout"), "0.25"), TT_OK);
    ck_assert_int_eq(tt_gpt_field_parse(&c, tt_gpt_field_find("positional"), "rope"), TT_OK);
    ck_assert_int_eq(tt_gpt_field_parse(&c, tt_gpt_field_find("activation"), "gelu_tanh"), TT_OK);
    ck_assert_int_eq(tt_gpt_field_parse(&c, tt_gpt_field_find("qkv_bias"), "false"), TT_OK);
    ck_assert_int_eq(c.n_layer, 12);
    ck_assert(c.dropout == 0.25);
    ck_assert_int_eq(c.positional, TT_POS_ROPE);
    ck_assert_int_eq(c.activation, TT_ACT_GELU_TANH);
    ck_assert(!c.qkv_bias);
    // Syntax errors name the field and the expected values; the config is unchanged.
    struct { const char *key, *text, *msg;
    } bad[] = {
        {"n_layer", "four", "n_layer expects an integer, got 'four'; e.g. n_layer 4"},
        {"n_layer", "", "n_layer expects an integer, got ''"},
        {"dropout", "0.1x", "dropout expects a number, got '0.1x'"},
        {"dropout", "nan", "dropout expects a number, got 'nan'"},
        {"positional", "absolute", "positional expects one of learned, rope, got 'absolute'"},
        {"activation", "softmax",
         "activation expects one of identity, relu, gelu, gelu_tanh, "
         "relu2, silu, tanh, sigmoid, swiglu, got 'softmax'"},
        {"qk_norm", "yes", "qk_norm expects true or false, got 'yes'"},
        // Beyond int64 or a double: out of range, with the text as given.
        {"n_layer", "99999999999999999999",
         "n_layer 99999999999999999999 is out of range; "
         "use a value in [1, 100000]"},
        {"dropout", "1e400", "dropout 1e400 is out of range; use a value in [0, 1)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tt_gpt_config e = d;
        ck_assert_int_eq(tt_gpt_field_parse(&e, tt_gpt_field_find(bad[i].key), bad[i].text),
                         TT_ERR_ARG);
        ck_assert_msg(strstr(tt_last_error(), bad[i].msg), "'%s' lacks '%s'", tt_last_error(),
                      bad[i].msg);
        ck_assert(memcmp(&e, &d, sizeof e) == 0);
    }
    // A denormal is the number it is (strtod's ERANGE on underflow); int64's top survives a
    // set through a double (saturated, not wrapped to INT64_MIN).
    ck_assert_int_eq(tt_gpt_field_parse(&c, tt_gpt_field_find("dropout"), "1e-320"), TT_OK);
    ck_assert(c.dropout > 0 && c.dropout < 1e-310);
    ck_assert_int_eq(tt_gpt_field_parse(&c, tt_gpt_field_find("block_size"),
                                        "9223372036854775807"), TT_OK);
    ck_assert_int_eq(c.block_size, INT64_MAX);
    tt_gpt_field_set(&c, tt_gpt_field_find("block_size"), -1e30);
    ck_assert_int_eq(c.block_size, INT64_MIN);
    c.block_size = d.block_size;
    // Ranges are validate's: a huge n_layer parses, then validate names the range.
    ck_assert_int_eq(tt_gpt_field_parse(&c, tt_gpt_field_find("n_layer"), "2000000"), TT_OK);
    ck_assert_int_eq(tt_gpt_config_validate(&c), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "n_layer = 2000000 is out of range; use a value in "
                         "[1, 100000]"), "%s", tt_last_error());
    // At the top of every range the count still fits int64 (no overflow).
    tt_gpt_config big = tt_gpt_config_default();
    big.vocab_size = 2147483647;
    big.block_size = 1 << 20;
    big.n_layer = 100000;
    big.n_head = 1;
    big.n_kv_head = 1;
    big.n_embd = 1 << 20;
    big.bias = true;
    big.tie_weights = false;
    int64_t C = big.n_embd;
    ck_assert_int_eq(tt_gpt_config_num_params(&big, false),
                     2 * big.vocab_size * C + big.block_size * C + 2 * C +
                     big.n_layer * (4 * C + 12 * C * C + 9 * C));
}
END_TEST

// Every field equal (the struct has padding, so no memcmp).
static void assert_same_config(const tt_gpt_config *a, const tt_gpt_config *b) {
    for (int i = 0; i < tt_gpt_nfields; i++)
        ck_assert_msg(tt_gpt_field_get(a, &tt_gpt_fields[i]) ==
                      tt_gpt_field_get(b, &tt_gpt_fields[i]), "field %s differs",
                      tt_gpt_fields[i].name);
}

START_TEST(test_presets) {
    tt_gpt_config c, d = tt_gpt_config_default();
    ck_assert_int_eq(tt_gpt_config_preset("baby", &c), TT_OK);
    assert_same_config(&c, &d);
    ck_assert_int_eq(tt_gpt_config_preset("gpt2", &c), TT_OK);
    ck_assert_int_eq(tt_gpt_config_validate(&c), TT_OK);
    ck_assert_int_eq(c.vocab_size, 50257);
    ck_assert_int_eq(c.block_size, 1024);
    ck_assert_int_eq(c.n_layer, 12);
    ck_assert_int_eq(c.n_head, 12);
    ck_assert_int_eq(c.n_kv_head, 12);
    ck_assert_int_eq(c.n_embd, 768);
    ck_assert(c.dropout == 0.1 && c.bias && c.qkv_bias && c.tie_weights && !c.qk_norm);
    ck_assert_int_eq(c.activation, TT_ACT_GELU_TANH);
    ck_assert_int_eq(c.positional, TT_POS_LEARNED);
    ck_assert_int_eq(c.norm, TT_NORM_LAYERNORM);
    // GPT-2 124M: 124,439,808 parameters with the tied head (nanoGPT prints 124.44M, and
    // 123.65M without the 1024 x 768 position embedding). By hand: wte 50257*768 = 38597376,
    // wpe 786432, per layer 2 LN (1536 each) + qkv 768*2304+2304 + proj 768*768+768 +
    // fc 768*3072+3072 + proj 3072*768+768 = 7087872, times 12, plus ln_f 1536.
    ck_assert_int_eq(tt_gpt_config_num_params(&c, false), 124439808);
    ck_assert_int_eq(tt_gpt_config_num_params(&c, true), 123653376);
    ck_assert_int_eq(38597376 + 786432 + 12 * 7087872 + 1536, 124439808);
    ck_assert_int_eq(tt_gpt_config_preset("gpt2-medium", &c), TT_OK);
    ck_assert_int_eq(c.n_layer, 24);
    ck_assert_int_eq(c.n_head, 16);
    ck_assert_int_eq(c.n_embd, 1024);
    ck_assert_int_eq(c.vocab_size, 50257);
    // 354,823,168 as Hugging Face counts gpt2-medium: wte 51463168, wpe 1048576,
    // 24 layers of 12596224, ln_f 2048.
    ck_assert_int_eq(tt_gpt_config_num_params(&c, false), 354823168);
    ck_assert_int_eq(51463168 + 1048576 + 24 * 12596224 + 2048, 354823168);
    // Unknown names: the names that exist, out untouched.
    c = d;
    ck_assert_int_eq(tt_gpt_config_preset("gpt3", &c), TT_ERR_ARG);
    ck_assert_msg(strstr(tt_last_error(), "unknown GPT preset 'gpt3'; use baby, gpt2 or "
                         "gpt2-medium"), "%s", tt_last_error());
    assert_same_config(&c, &d);
    ck_assert_int_eq(tt_gpt_config_preset(NULL, &c), TT_ERR_ARG);
}
END_TEST

// The count from the config equals the built model's, over both families and their variants.
START_TEST(test_config_num_params) {
    for (int k = 0; k < 16; k++) {
        tt_gpt_config c = small_config(k % 2);
        c.bias = (k >> 1) & 1;
        c.qkv_bias = (k >> 2) & 1;
        c.tie_weights = (k >> 3) & 1;
        tt_gpt m;
        gpt_init_ok(&m, &c, 1, TT_F32);
        ck_assert_int_eq(tt_gpt_config_num_params(&c, false), tt_gpt_num_params(&m, false));
        ck_assert_int_eq(tt_gpt_config_num_params(&c, true), tt_gpt_num_params(&m, true));
        ck_assert_int_eq(tt_gpt_num_params(&m, false), expected_params(&c) -
                         (c.bias && !c.qkv_bias ? c.n_layer * (c.n_embd + 2 * m.blocks[0].attn
                         .k_proj.weight->shape[0]) : 0));
        tt_gpt_free(&m);
    }
}
END_TEST

// bias without qkv_bias (the GPT_CONFIG_124M of the from-scratch books): o_proj, the MLP and
// the norms keep their biases, q/k/v have none; it trains (the gradient reaches every one).
START_TEST(test_qkv_bias_off) {
    tt_gpt_config c = small_config(CFG_DEFAULT);
    c.n_layer = 1;
    c.bias = true;
    c.qkv_bias = false;
    tt_gpt m;
    gpt_init_ok(&m, &c, 1, TT_F32);
    const char *want[] = {
        "wte.weight", "wpe.weight", "blocks.0.norm1.weight", "blocks.0.norm1.bias",
        "blocks.0.attn.q_proj.weight", "blocks.0.attn.k_proj.weight",
        "blocks.0.attn.v_proj.weight", "blocks.0.attn.o_proj.weight", "blocks.0.attn.o_proj.bias",
        "blocks.0.norm2.weight", "blocks.0.norm2.bias", "blocks.0.mlp.fc.weight",
        "blocks.0.mlp.fc.bias", "blocks.0.mlp.proj.weight", "blocks.0.mlp.proj.bias",
        "ln_f.weight", "ln_f.bias",
    };
    int n = (int)(sizeof want / sizeof want[0]);
    ck_assert_int_eq(m.params.n, n);
    for (int i = 0; i < n; i++) ck_assert_str_eq(m.params.items[i].name, want[i]);
    tt_rng rng;
    tt_rng_seed(&rng, 2);
    tt_scope_begin();
    tt_tensor *x = rand_tokens(&rng, 2, 8, c.vocab_size);
    tt_backward(tt_gpt_loss(&m, x, rand_tokens(&rng, 2, 8, c.vocab_size)));
    for (int i = 0; i < n; i++) ck_assert_ptr_nonnull(m.params.items[i].tensor->grad);
    tt_scope_end();
    tt_gpt_free(&m);
}
END_TEST

// The real 124M model: built from the preset, one forward at T=8 (about 500 MB of f32).
START_TEST(test_gpt2_forward) {
    tt_gpt_config c;
    ck_assert_int_eq(tt_gpt_config_preset("gpt2", &c), TT_OK);
    tt_gpt m;
    gpt_init_ok(&m, &c, 1, TT_F32);
    ck_assert_int_eq(tt_gpt_num_params(&m, false), 124439808);
    ck_assert_int_eq(tt_gpt_num_params(&m, true), 123653376);
    tt_gpt_train(&m, false);
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    tt_scope_begin();
    tt_tensor *x = rand_tokens(&rng, 1, 8, c.vocab_size);
    tt_tensor *logits = tt_gpt_forward(&m, x);
    ck_assert_int_eq(logits->ndim, 3);
    ck_assert_int_eq(logits->shape[0], 1);
    ck_assert_int_eq(logits->shape[1], 8);
    ck_assert_int_eq(logits->shape[2], 50257);
    ck_assert(isfinite(tt_item(tt_sum_all(logits))));
    // GPT-2 init: the loss of random targets starts near ln 50257 = 10.82 (plus about
    // var(logit) / 2 = (0.02^2 * 768) / 2 = 0.15, and the noise of 8 tokens).
    tt_tensor *loss = tt_gpt_loss(&m, x, rand_tokens(&rng, 1, 8, c.vocab_size));
    ck_assert_close(tt_item(loss), log(50257.0) + 0.15, 0.6, 0);
    tt_scope_end();
    tt_gpt_free(&m);
}
END_TEST

static char ckpt_dir[64];
static char ckpt_path[128];

static void ckpt_setup(void) {
    tt_test_setup();
    snprintf(ckpt_dir, sizeof ckpt_dir, "/tmp/tt_gptcfg_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(ckpt_dir));
    snprintf(ckpt_path, sizeof ckpt_path, "%s/m.ckpt", ckpt_dir);
}

static void ckpt_teardown(void) {
    unlink(ckpt_path);
    rmdir(ckpt_dir);
    tt_test_teardown();
}

// A model (modern family, dropout on) after two AdamW steps, with its optimizer.
static void trained(tt_gpt *m, tt_optim *o, int which) {
    tt_gpt_config c = small_config(which);
    c.dropout = 0.1;
    gpt_init_ok(m, &c, 5, TT_F32);
    tt_optim_init(o, tt_adamw_config(1e-2));
    tt_optim_add_decay_groups(o, &m->params, 0.1);
    tt_rng rng;
    tt_rng_seed(&rng, 6);
    for (int s = 0; s < 2; s++) {
        tt_scope_begin();
        tt_tensor *x = rand_tokens(&rng, 2, 8, c.vocab_size);
        tt_backward(tt_gpt_loss(m, x, rand_tokens(&rng, 2, 8, c.vocab_size)));
        tt_optim_step(o);
        tt_optim_zero_grad(o);
        tt_scope_end();
    }
}

static uint64_t optim_fingerprint(const tt_optim *o) {
    tt_params p;
    tt_params_init(&p);
    tt_optim_state(o, &p);
    uint64_t h = tt_params_fingerprint(&p);
    tt_params_free(&p);
    return h;
}

// Saves the format name "tinytorch.gpt"; the file rewritten the old way, format "char_gpt"
// (every file before the rename), loads the same.
static void check_format_name(const char *path, const char *rewrite) {
    tt_checkpoint ck;
    ck_assert_int_eq(tt_ckpt_load(&ck, path), TT_OK);
    const unsigned char *b;
    size_t n;
    ck_assert(tt_ckpt_get_bytes(&ck, "format", &b, &n));
    ck_assert(n == strlen(TT_GPT_FORMAT) && memcmp(b, "tinytorch.gpt", n) == 0);
    if (rewrite) {
        tt_ckpt_set_bytes(&ck, "format", rewrite, strlen(rewrite));
        ck_assert_int_eq(tt_ckpt_save(&ck, path), TT_OK);
    }
    tt_ckpt_free(&ck);
}

// _i: the config family (CFG_*) times the format name (new, old).
START_TEST(test_ckpt_roundtrip) {
    tt_gpt m;
    tt_optim o;
    trained(&m, &o, _i % NCFG);
    tt_gpt_state st = {.step = 2, .best_val_loss = 2.5, .train_loss = 2.25, .val_loss = 3.0};
    tt_rng_seed(&st.data_rng, 77);
    ck_assert_int_eq(tt_gpt_save(ckpt_path, &m, &o, &st), TT_OK);
    check_format_name(ckpt_path, _i >= NCFG ? "char_gpt" : NULL);

    tt_gpt m2;
    tt_checkpoint ck;
    ck_assert_msg(tt_gpt_load(ckpt_path, &m2, &ck) == TT_OK, "%s", tt_last_error());
    assert_same_config(&m2.cfg, &m.cfg);
    ck_assert_uint_eq(tt_params_fingerprint(&m2.params), tt_params_fingerprint(&m.params));
    ck_assert(memcmp(&m2.dropout_rng, &m.dropout_rng, sizeof m.dropout_rng) == 0);
    tt_optim o2;
    tt_optim_init(&o2, tt_adamw_config(1e-2));
    tt_optim_add_decay_groups(&o2, &m2.params, 0.1);
    ck_assert_uint_ne(optim_fingerprint(&o2), optim_fingerprint(&o));
    ck_assert(tt_gpt_ckpt_optim(&o2, &ck) == TT_OK && o2.step == 2);
    ck_assert_uint_eq(optim_fingerprint(&o2), optim_fingerprint(&o));
    tt_gpt_state st2;
    ck_assert(tt_gpt_ckpt_state(&ck, &st2) == TT_OK && st2.step == 2);
    ck_assert(st2.best_val_loss == 2.5 && st2.train_loss == 2.25 && st2.val_loss == 3.0);
    ck_assert(memcmp(&st2.data_rng, &st.data_rng, sizeof st.data_rng) == 0);
    // A NaN best (a diverged run's) reads as no best yet: the next eval is kept as the best.
    tt_ckpt_set_f64(&ck, "best_val_loss", NAN);
    ck_assert_int_eq(tt_gpt_ckpt_state(&ck, &st2), TT_OK);
    ck_assert(st2.best_val_loss == INFINITY && st2.val_loss == 3.0);
    // The loaded model computes what the saved one does.
    tt_rng rng;
    tt_rng_seed(&rng, 8);
    tt_gpt_train(&m, false);
    tt_gpt_train(&m2, false);
    tt_scope_begin();
    tt_tensor *x = rand_tokens(&rng, 2, 8, m.cfg.vocab_size);
    ck_assert(tt_item(tt_max(tt_abs(tt_sub(tt_gpt_forward(&m, x), tt_gpt_forward(&m2, x))), 0,
                             NULL, false)) == 0.0);
    tt_scope_end();
    tt_ckpt_set_f64(&ck, "best_val_loss", NAN);  // read back as no best yet, so one is kept
    ck_assert(tt_gpt_ckpt_state(&ck, &st2) == TT_OK && st2.best_val_loss == INFINITY);
    tt_ckpt_free(&ck);
    tt_optim_free(&o2);
    tt_gpt_free(&m2);
    // Without an optimizer or a state: model only, and asking for them says what is missing.
    ck_assert_int_eq(tt_gpt_save(ckpt_path, &m, NULL, NULL), TT_OK);
    ck_assert_int_eq(tt_gpt_load(ckpt_path, &m2, &ck), TT_OK);
    ck_assert_uint_eq(tt_params_fingerprint(&m2.params), tt_params_fingerprint(&m.params));
    ck_assert_int_eq(tt_gpt_ckpt_optim(&o, &ck), TT_ERR_FORMAT);
    ck_assert_msg(strstr(tt_last_error(), "optim.step"), "%s", tt_last_error());
    ck_assert_int_eq(tt_gpt_ckpt_state(&ck, &st2), TT_ERR_FORMAT);
    ck_assert_msg(strstr(tt_last_error(), "'step'"), "%s", tt_last_error());
    tt_ckpt_free(&ck);
    tt_gpt_free(&m2);
    tt_optim_free(&o);
    tt_gpt_free(&m);
}
END_TEST

// Drops a metadata entry, as a file written before the key existed.
static void ckpt_remove(tt_checkpoint *ck, const char *key) {
    for (int i = 0; i < ck->nmeta; i++)
        if (strcmp(ck->meta[i].key, key) == 0) {
            free(ck->meta[i].key);
            free(ck->meta[i].bytes);
            memmove(&ck->meta[i], &ck->meta[i + 1], (size_t)(ck->nmeta - i - 1) *
                    sizeof ck->meta[0]);
            ck->nmeta--;
            return;
        }
    ck_abort_msg("no key %s", key);
}

// A file of the first format (no cfg.qkv_bias: q/k/v followed bias; no mlp_hidden, rope_base,
// norm_eps) still loads, as the model it was: with bias, every projection has one; the MLP
// 4 n_embd wide, RoPE's base 10000, the norms' epsilon 1e-5.
START_TEST(test_ckpt_older_file) {
    tt_gpt_config c = small_config(CFG_DEFAULT);
    c.bias = true;
    tt_gpt m;
    gpt_init_ok(&m, &c, 1, TT_F32);
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    tt_gpt_ckpt_fill(&ck, &m, NULL, NULL);
    ckpt_remove(&ck, "cfg.qkv_bias");
    ckpt_remove(&ck, "cfg.mlp_hidden");
    ckpt_remove(&ck, "cfg.rope_base");
    ckpt_remove(&ck, "cfg.norm_eps");
    ck_assert_int_eq(tt_ckpt_save(&ck, ckpt_path), TT_OK);
    tt_ckpt_free(&ck);
    tt_gpt m2;
    ck_assert_msg(tt_gpt_load(ckpt_path, &m2, NULL) == TT_OK, "%s", tt_last_error());
    ck_assert(m2.cfg.qkv_bias && m2.cfg.bias);
    ck_assert_int_eq(m2.cfg.mlp_hidden, 0);
    ck_assert_int_eq(m2.blocks[0].mlp.fc.out_features, 4 * c.n_embd);
    ck_assert(m2.cfg.rope_base == 10000.0 && m2.cfg.norm_eps == 1e-5);
    ck_assert(m2.blocks[0].norm1.ln.eps == 1e-5 && m2.ln_f.ln.eps == 1e-5);
    ck_assert_uint_eq(tt_params_fingerprint(&m2.params), tt_params_fingerprint(&m.params));
    tt_gpt_free(&m2);
    tt_gpt_free(&m);
}
END_TEST

// Bad checkpoints are errors naming the key, never aborts, and allocate nothing big.
typedef struct bad_ckpt {
    void (*edit)(tt_checkpoint *ck);
    tt_status status;
    const char *msg;
} bad_ckpt;

static void k_format(tt_checkpoint *ck) { tt_ckpt_set_bytes(ck, "format", "gpt", 3); }
static void k_no_format(tt_checkpoint *ck) { ckpt_remove(ck, "format"); }
static void k_layers(tt_checkpoint *ck) { tt_ckpt_set_i64(ck, "cfg.n_layer", 0); }
static void k_many_layers(tt_checkpoint *ck) { tt_ckpt_set_i64(ck, "cfg.n_layer", 100000); }
static void k_wide(tt_checkpoint *ck) { tt_ckpt_set_i64(ck, "cfg.n_embd", 1 << 20); }
static void k_huge(tt_checkpoint *ck) { tt_ckpt_set_i64(ck, "cfg.vocab_size", INT64_MAX); }
static void k_pos(tt_checkpoint *ck) { tt_ckpt_set_i64(ck, "cfg.positional", 5); }
static void k_drop_type(tt_checkpoint *ck) { tt_ckpt_set_i64(ck, "cfg.dropout", 0); }
static void k_int_type(tt_checkpoint *ck) { tt_ckpt_set_f64(ck, "cfg.n_head", 4); }
static void k_div(tt_checkpoint *ck) { tt_ckpt_set_i64(ck, "cfg.n_head", 3); }
static void k_rng(tt_checkpoint *ck) { tt_ckpt_set_bytes(ck, "rng.model", "abc", 3); }
static void k_untied(tt_checkpoint *ck) { tt_ckpt_set_i64(ck, "cfg.tie_weights", 0); }
static void k_masks(tt_checkpoint *ck) {  // no wpe with rope: 2 x 6000^2 mask entries
    tt_ckpt_set_i64(ck, "cfg.positional", TT_POS_ROPE);
    tt_ckpt_set_i64(ck, "cfg.block_size", 6000);
}
static void k_shape(tt_checkpoint *ck) {
    tt_ckpt_set_i64(ck, "cfg.block_size", 4);  // wpe (8, 16) in the file
}

static const bad_ckpt bad_ckpts[] = {
    {k_format, TT_ERR_FORMAT, "no format 'tinytorch.gpt' or 'char_gpt'"},
    {k_no_format, TT_ERR_FORMAT, "no format 'tinytorch.gpt' or 'char_gpt'"},
    {k_layers, TT_ERR_FORMAT, "cfg.n_layer = 0 is out of range"},
    {k_many_layers, TT_ERR_MISMATCH, "needs 310400320 parameters but the file holds 6528"},
    {k_wide, TT_ERR_MISMATCH, "parameters but the file holds 6528"},
    {k_huge, TT_ERR_FORMAT, "cfg.vocab_size = 9223372036854775807 is out of range"},
    {k_pos, TT_ERR_FORMAT, "cfg.positional = 5 is not allowed; use one of learned, rope"},
    {k_drop_type, TT_ERR_FORMAT, "cfg.dropout is an integer, not a number"},
    {k_int_type, TT_ERR_FORMAT, "cfg.n_head is a number, not an integer"},
    {k_div, TT_ERR_FORMAT, "n_embd=16 is not divisible by n_head=3"},
    {k_rng, TT_ERR_FORMAT, "rng.model is not a valid generator state"},
    {k_untied, TT_ERR_MISMATCH, "parameters but the file holds"},
    {k_shape, TT_ERR_MISMATCH, "does not fit its config"},
    {k_masks, TT_ERR_MISMATCH, "n_layer * block_size^2 = 72000000 mask entries"},
};
#define NBADCK (int)(sizeof bad_ckpts / sizeof bad_ckpts[0])

START_TEST(test_ckpt_errors) {
    const bad_ckpt *b = &bad_ckpts[_i];
    tt_gpt_config c = small_config(CFG_DEFAULT);
    tt_gpt m;
    gpt_init_ok(&m, &c, 1, TT_F32);
    tt_checkpoint ck;
    tt_ckpt_init(&ck);
    tt_gpt_ckpt_fill(&ck, &m, NULL, NULL);
    tt_gpt_free(&m);
    b->edit(&ck);
    ck_assert_int_eq(tt_ckpt_save(&ck, ckpt_path), TT_OK);
    memset(&m, 0xab, sizeof m);
    ck_assert_int_eq(tt_gpt_ckpt_model(&m, &ck), b->status);
    ck_assert_msg(strstr(tt_last_error(), b->msg), "'%s' lacks '%s'", tt_last_error(), b->msg);
    ck_assert_ptr_null(m.blocks);
    tt_ckpt_free(&ck);
    // tt_gpt_load: the same, with the path; ck left empty.
    memset(&m, 0xab, sizeof m);
    ck_assert_int_eq(tt_gpt_load(ckpt_path, &m, &ck), b->status);
    ck_assert_msg(strstr(tt_last_error(), ckpt_path) && strstr(tt_last_error(), b->msg), "%s",
                  tt_last_error());
    ck_assert_ptr_null(m.blocks);
    ck_assert_int_eq(ck.nmeta, 0);
    ck_assert_int_eq(ck.tensors.n, 0);
    tt_gpt_free(&m);
    tt_ckpt_free(&ck);
}
END_TEST

START_TEST(test_ckpt_missing_file) {
    tt_gpt m;
    tt_checkpoint ck;
    ck_assert_int_eq(tt_gpt_load(ckpt_path, &m, &ck), TT_ERR_IO);
    ck_assert_msg(strstr(tt_last_error(), "No such file"), "%s", tt_last_error());
    ck_assert_ptr_null(m.blocks);
    tt_ckpt_free(&ck);
}
END_TEST

START_TEST(test_abort_num_params_invalid) {
    tt_expect_abort("tt_gpt_config_num_params: invalid config: n_embd=128 is not divisible by "
                    "n_head=3");
    tt_gpt_config c = tt_gpt_config_default();
    c.n_head = 3;
    tt_gpt_config_num_params(&c, false);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gpt");
    TCase *cfg = tt_tcase("config");
    tcase_add_test(cfg, test_config_default);
    tcase_add_loop_test(cfg, test_config_errors, 0, NBAD);
    suite_add_tcase(s, cfg);

    TCase *table = tt_tcase("config_table");
    tcase_add_test(table, test_field_table);
    tcase_add_test(table, test_presets);
    tcase_add_test(table, test_config_num_params);
    tcase_add_test(table, test_qkv_bias_off);
    tcase_add_test(table, test_gpt2_forward);
    suite_add_tcase(s, table);

    TCase *ckpt = tcase_create("checkpoint");
    tcase_add_checked_fixture(ckpt, ckpt_setup, ckpt_teardown);
    tcase_set_timeout(ckpt, 120);
    tcase_add_loop_test(ckpt, test_ckpt_roundtrip, 0, 2 * NCFG);
    tcase_add_test(ckpt, test_ckpt_older_file);
    tcase_add_loop_test(ckpt, test_ckpt_errors, 0, NBADCK);
    tcase_add_test(ckpt, test_ckpt_missing_file);
    suite_add_tcase(s, ckpt);

    TCase *ag = tt_tcase_aborts("aborts_gptcfg");
    tcase_add_test_raise_signal(ag, test_abort_num_params_invalid, SIGABRT);
    suite_add_tcase(s, ag);

    TCase *model = tt_tcase("model");
    tcase_add_loop_test(model, test_shapes, 0, NCFG);
    tcase_add_loop_test(model, test_param_names, 0, NCFG);
    tcase_add_loop_test(model, test_tree_linears_train, 0, NCFG);
    tcase_add_test(model, test_param_counts);
    tcase_add_test(model, test_init_stats);
    tcase_add_test(model, test_tied_weights);
    tcase_add_loop_test(model, test_gradcheck_model, 0, NCFG);
    suite_add_tcase(s, model);

    TCase *train = tt_tcase("training");
    tcase_add_loop_test(train, test_overfit_one_batch, 0, NCFG);
    tcase_add_loop_test(train, test_step_no_leak, 0, NCFG);
    tcase_add_test(train, test_dropout_stream);
    suite_add_tcase(s, train);

    TCase *gen = tt_tcase("generation");
    tcase_add_test(gen, test_sample_greedy);
    tcase_add_test(gen, test_sample_frequencies);
    tcase_add_loop_test(gen, test_cache_matches_forward, 0, NCFG);
    tcase_add_loop_test(gen, test_generate_window_rule, 0, NCFG);
    tcase_add_loop_test(gen, test_generate_cache_equivalence, 0, NCFG);
    suite_add_tcase(s, gen);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_checked_fixture(ab, abort_setup, abort_teardown);
    tcase_add_test_raise_signal(ab, test_abort_too_long, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_float_tokens, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_targets_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_prompt_token, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_empty_prompt, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_cache_overflow, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bad_top_p, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_negative_temperature, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_nan_logits, SIGABRT);
    suite_add_tcase(s, ab);

    TCase *an = tt_tcase_aborts("aborts_names");
    tcase_add_checked_fixture(an, abort_setup, abort_teardown);
    tcase_add_test_raise_signal(an, test_names_forward_1d_tokens, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_loss_float_tokens, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_loss_too_long, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_forward_uninitialized, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_generate_top_k, SIGABRT);
    tcase_add_test_raise_signal(an, test_names_sample_inf_temperature, SIGABRT);
    suite_add_tcase(s, an);
    return tt_test_run(s);
}

// Check suite of nn/deprecated.h and compress/deprecated.h: the module names from before the
// tt_nn_* scheme still build a model, for one release. A CNN (Conv2d, BatchNorm2d, MaxPool2d,
// Flatten, Linear in a Sequential), a transformer block over an embedding, an LSTM and an int8
// Linear are each built and run once with the old names and once with the new ones from the
// same seed: the parameter names and the outputs agree bit for bit, and each old function is
// the new one. That a use warns, naming the new name, is checked by tests/check_names.sh.
#include <string.h>

#include "test_util.h"

// This file uses the deprecated names on purpose.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define B 2        // batch
#define NCLS 3     // classes of the CNN
#define T 4        // time
#define C 8        // channels of the block
#define H 5        // hidden size of the LSTM
#define MAXP 16    // parameters kept per model

// What a model gave: its parameter names and its output's values.
typedef struct run {
    int n_params;
    char names[MAXP][32];
    int64_t numel;
    double out[B * T * C];
} run;

// Records m's parameter names and its output on x (a new scope: nothing outlives the call).
static void record(run *r, tt_module m, tt_tensor *x) {
    tt_params p;
    tt_params_init(&p);
    tt_module_params(m, &p, "");
    ck_assert_int_le(p.n, MAXP);
    r->n_params = (int)p.n;
    for (int i = 0; i < r->n_params; i++) {
        snprintf(r->names[i], sizeof r->names[i], "%s", p.items[i].name);
    }
    tt_params_free(&p);
    tt_tensor *y = tt_module_forward(m, x);
    r->numel = tt_numel(y);
    ck_assert_int_le(tt_numel(y), B * T * C);
    for (int64_t i = 0; i < tt_numel(y); i++) r->out[i] = tt_at(y, i);
}

static void assert_same_run(const run *a, const run *b) {
    ck_assert_int_eq(a->n_params, b->n_params);
    for (int i = 0; i < a->n_params; i++) ck_assert_str_eq(a->names[i], b->names[i]);
    ck_assert_int_eq(a->numel, b->numel);
    ck_assert_int_eq(memcmp(a->out, b->out, (size_t)a->numel * sizeof(double)), 0);
}

// ---- a CNN ----

static void cnn_old(run *r) {
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    tt_conv2d_layer conv;
    tt_conv2d_layer_init(&conv, 1, 4, 3, 3, &(tt_conv2d_opts){.padding = {1, 1}}, true, &rng);
    tt_batchnorm_opts o = tt_batchnorm_default_opts();
    tt_batchnorm_layer bn;
    tt_batchnorm2d_init(&bn, 4, &o);
    tt_maxpool2d_layer pool;
    tt_maxpool2d_init(&pool, 2, 2, NULL, NULL);
    tt_linear fc;
    tt_linear_init(&fc, 16, NCLS, true, &rng);
    tt_sequential seq;
    tt_sequential_init(&seq);
    tt_sequential_add(&seq, tt_conv2d_layer_module(&conv));
    tt_sequential_add(&seq, tt_batchnorm_module(&bn));
    tt_sequential_add(&seq, tt_act_module(TT_ACT_RELU));
    tt_sequential_add(&seq, tt_maxpool2d_module(&pool));
    tt_sequential_add(&seq, tt_flatten_module(1, -1));
    tt_sequential_add(&seq, tt_linear_module(&fc));
    tt_scope_begin();
    record(r, tt_sequential_module(&seq), tt_randn(&rng, TT_F32, TT_SHAPE(B, 1, 4, 4)));
    tt_scope_end();
    tt_sequential_free(&seq);
    tt_linear_free(&fc);
    tt_batchnorm_free(&bn);
    tt_conv2d_layer_free(&conv);
}

static void cnn_new(run *r) {
    tt_rng rng;
    tt_rng_seed(&rng, 11);
    tt_nn_conv2d conv;
    tt_nn_conv2d_init(&conv, 1, 4, 3, 3, &(tt_nn_conv2d_opts){.padding = {1, 1}}, true, &rng);
    tt_nn_batchnorm_opts o = tt_nn_batchnorm_default_opts();
    tt_nn_batchnorm bn;
    tt_nn_batchnorm2d_init(&bn, 4, &o);
    tt_nn_maxpool2d pool;
    tt_nn_maxpool2d_init(&pool, 2, 2, NULL, NULL);
    tt_nn_linear fc;
    tt_nn_linear_init(&fc, 16, NCLS, true, &rng);
    tt_nn_sequential seq;
    tt_nn_sequential_init(&seq);
    tt_nn_sequential_add(&seq, tt_nn_conv2d_module(&conv));
    tt_nn_sequential_add(&seq, tt_nn_batchnorm_module(&bn));
    tt_nn_sequential_add(&seq, tt_act_module(TT_ACT_RELU));
    tt_nn_sequential_add(&seq, tt_nn_maxpool2d_module(&pool));
    tt_nn_sequential_add(&seq, tt_nn_flatten_module(1, -1));
    tt_nn_sequential_add(&seq, tt_nn_linear_module(&fc));
    tt_scope_begin();
    record(r, tt_nn_sequential_module(&seq), tt_randn(&rng, TT_F32, TT_SHAPE(B, 1, 4, 4)));
    tt_scope_end();
    tt_nn_sequential_free(&seq);
    tt_nn_linear_free(&fc);
    tt_nn_batchnorm_free(&bn);
    tt_nn_conv2d_free(&conv);
}

START_TEST(test_cnn) {
    run a, b;
    cnn_old(&a);
    cnn_new(&b);
    ck_assert_int_eq(a.n_params, 6);  // conv, batch norm and linear: weight and bias each
    ck_assert_str_eq(a.names[0], "0.weight");
    ck_assert_str_eq(a.names[5], "5.bias");
    ck_assert_int_eq(a.numel, B * NCLS);
    ck_assert(a.out[0] != 0 && a.out[0] != a.out[1]);
    assert_same_run(&a, &b);
}
END_TEST

// ---- a transformer block over an embedding, an LSTM ----

static const tt_block_config block_cfg_old = {
    .attn = {.n_embd = C, .n_head = 2, .max_seq = T, .causal = true},
    .act = TT_ACT_GELU, .norm = TT_NORM_LAYERNORM};

static void block_old(run *r) {
    tt_rng rng;
    tt_rng_seed(&rng, 12);
    tt_embedding_layer emb;
    tt_embedding_init(&emb, 6, C, &rng);
    tt_block blk;
    tt_block_init(&blk, &block_cfg_old, &rng);
    tt_scope_begin();
    tt_tensor *idx = tt_to_dtype(tt_test_tensor(TT_F64, TT_SHAPE(1, T), 1, 5, 0, 3), TT_I64);
    record(r, tt_block_module(&blk), tt_embedding_forward(&emb, idx));
    tt_scope_end();
    tt_block_free(&blk);
    tt_embedding_free(&emb);
}

static void block_new(run *r) {
    tt_rng rng;
    tt_rng_seed(&rng, 12);
    tt_nn_embedding emb;
    tt_nn_embedding_init(&emb, 6, C, &rng);
    tt_nn_block blk;
    tt_nn_block_config cfg = {
        .attn = {.n_embd = C, .n_head = 2, .max_seq = T, .causal = true},
        .act = TT_ACT_GELU, .norm = TT_NORM_LAYERNORM};
    tt_nn_block_init(&blk, &cfg, &rng);
    tt_scope_begin();
    tt_tensor *idx = tt_to_dtype(tt_test_tensor(TT_F64, TT_SHAPE(1, T), 1, 5, 0, 3), TT_I64);
    record(r, tt_nn_block_module(&blk), tt_nn_embedding_forward(&emb, idx));
    tt_scope_end();
    tt_nn_block_free(&blk);
    tt_nn_embedding_free(&emb);
}

static void lstm_old(run *r) {
    tt_rng rng;
    tt_rng_seed(&rng, 13);
    tt_lstm m;
    tt_lstm_init(&m, 3, H, 2, true, true, &rng);
    tt_scope_begin();
    record(r, tt_lstm_module(&m), tt_randn(&rng, TT_F32, TT_SHAPE(B, T, 3)));
    tt_scope_end();
    tt_lstm_free(&m);
}

static void lstm_new(run *r) {
    tt_rng rng;
    tt_rng_seed(&rng, 13);
    tt_nn_lstm m;
    tt_nn_lstm_init(&m, 3, H, 2, true, true, &rng);
    tt_scope_begin();
    record(r, tt_nn_lstm_module(&m), tt_randn(&rng, TT_F32, TT_SHAPE(B, T, 3)));
    tt_scope_end();
    tt_nn_lstm_free(&m);
}

START_TEST(test_block_lstm) {
    run a, b;
    block_old(&a);
    block_new(&b);
    ck_assert_str_eq(a.names[0], "norm1.weight");
    ck_assert_int_eq(a.numel, T * C);
    ck_assert(a.out[0] != a.out[1]);
    assert_same_run(&a, &b);
    lstm_old(&a);
    lstm_new(&b);
    ck_assert_int_eq(a.n_params, 8);  // two layers: weight_ih, weight_hh, bias_ih, bias_hh
    ck_assert_str_eq(a.names[7], "bias_hh_l1");
    ck_assert_int_eq(a.numel, B * T * H);
    assert_same_run(&a, &b);
}
END_TEST

// ---- an int8 Linear (compress/deprecated.h) ----

START_TEST(test_qlinear) {
    tt_rng rng;
    tt_rng_seed(&rng, 14);
    tt_linear fc;
    tt_linear_init(&fc, 6, 4, true, &rng);
    tt_qlinear qa;
    tt_qlinear_from_linear(&qa, &fc);
    tt_nn_qlinear qb;
    tt_nn_qlinear_from_linear(&qb, &fc);
    ck_assert_int_eq(tt_qlinear_bytes(&qa), tt_nn_qlinear_bytes(&qb));
    tt_scope_begin();
    tt_tensor *x = tt_randn(&rng, TT_F32, TT_SHAPE(B, 6));
    tt_tensor *ya = tt_qlinear_forward(&qa, x), *yb = tt_nn_qlinear_forward(&qb, x);
    ck_assert_int_eq(tt_numel(ya), B * 4);
    ck_assert(tt_test_same_values(ya, yb));
    // Near the f32 product (int8 weights and activations).
    ck_assert_close(tt_at(ya, 0), tt_at(tt_linear_forward(&fc, x), 0), 0.05, 0.05);
    tt_scope_end();
    tt_qlinear_free(&qa);
    tt_nn_qlinear_free(&qb);
    tt_linear_free(&fc);
}
END_TEST

// Each old function is the new one: an alias, not a copy.
START_TEST(test_same_functions) {
    ck_assert(tt_linear_init == tt_nn_linear_init);
    ck_assert(tt_linear_forward == tt_nn_linear_forward);
    ck_assert(tt_conv2d_layer_module == tt_nn_conv2d_module);
    ck_assert(tt_embedding_init == tt_nn_embedding_init);
    ck_assert(tt_dropout2d_layer_train == tt_nn_dropout2d_train);
    ck_assert(tt_sequential_add == tt_nn_sequential_add);
    ck_assert(tt_linear_quantized == tt_nn_linear_quantized);
    ck_assert_int_eq(sizeof(tt_embedding_layer), sizeof(tt_nn_embedding));
    ck_assert_int_eq(sizeof(tt_batchnorm_layer), sizeof(tt_nn_batchnorm));
}
END_TEST

int main(void) {
    Suite *s = suite_create("deprecated");
    TCase *tc = tt_tcase("old_names");
    tcase_add_test(tc, test_cnn);
    tcase_add_test(tc, test_block_lstm);
    tcase_add_test(tc, test_qlinear);
    tcase_add_test(tc, test_same_functions);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}

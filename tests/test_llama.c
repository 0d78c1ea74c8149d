// Check suite of the Hugging Face Llama layout (models/gpt/llama_hf.c): the tiny random Llama of
// gen_llama_reference.py imported (config from its shapes and metadata, logits against the
// float64 PyTorch forward at 1e-5), exported bit for bit and imported again, a fresh tied Llama
// round trip, and the errors of bad files and of models that are not Llama-shaped.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "models/gpt/gpt.h"

// ---- files ----

static char tmpdir[64];

static const char *tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    return buf;
}

static const char *ref_file(char *buf, size_t cap, const char *name) {
    const char *dir = getenv("TT_REF_DIR") ? getenv("TT_REF_DIR") : "tests/reference";
    snprintf(buf, cap, "%s/%s.safetensors", dir, name);
    return buf;
}

static void load_ok(tt_gpt *m, const char *path) {
    ck_assert_msg(tt_gpt_load_llama(m, path) == TT_OK, "%s", tt_last_error());
}

// The largest |ours - PyTorch's| over the logits of m on the reference tokens.
static double logits_error(tt_gpt *m) {
    char path[256];
    tt_safetensors f;
    ck_assert_msg(
        tt_safetensors_open(&f, ref_file(path, sizeof path, "llama_tiny_expected")) == TT_OK, "%s",
        tt_last_error());
    tt_tensor *tokens, *want;
    ck_assert_int_eq(tt_safetensors_get(&f, "tokens", &tokens), TT_OK);
    ck_assert_int_eq(tt_safetensors_get(&f, "logits", &want), TT_OK);
    tt_safetensors_close(&f);
    tt_scope_begin();
    tt_tensor *logits = tt_to_dtype(tt_gpt_forward(m, tokens), TT_F64);  // (2, 16, V)
    ck_assert(tt_same_shape(logits, want));
    const double *a = tt_data(logits), *b = tt_data(want);
    double worst = 0;
    for (int64_t i = 0; i < tt_numel(want); i++) worst = fmax(worst, fabs(a[i] - b[i]));
    tt_scope_end();
    tt_release(tokens);
    tt_release(want);
    return worst;
}

// The logits of a and b on the same tokens are the same bits.
static void assert_same_logits(tt_gpt *a, tt_gpt *b) {
    tt_scope_begin();
    tt_tensor *tokens = tt_test_tensor(TT_I32, TT_SHAPE(1, 5), 1, 4, 1, 0, 3);
    ck_assert(tt_test_same_values(tt_gpt_forward(a, tokens), tt_gpt_forward(b, tokens)));
    tt_scope_end();
}

// ---- import ----

START_TEST(test_import_reference) {
    char path[256];
    tt_safetensors f;
    ck_assert_int_eq(tt_safetensors_open(&f, ref_file(path, sizeof path, "llama_tiny")), TT_OK);
    ck_assert(tt_gpt_is_llama(&f));
    tt_safetensors_close(&f);
    tt_gpt m;
    load_ok(&m, path);
    const tt_gpt_config *c = &m.cfg;
    ck_assert_int_eq(c->vocab_size, 37);
    ck_assert_int_eq(c->n_embd, 32);
    ck_assert_int_eq(c->n_layer, 2);
    ck_assert_int_eq(c->n_head, 4);
    ck_assert_int_eq(c->n_kv_head, 2);
    ck_assert_int_eq(c->mlp_hidden, 48);
    ck_assert_int_eq(c->block_size, 16);
    ck_assert(c->rope_base == 500.0 && c->norm_eps == 1e-6);
    ck_assert(c->positional == TT_POS_ROPE && c->norm == TT_NORM_RMSNORM &&
              c->activation == TT_ACT_SWIGLU && !c->bias && !c->tie_weights && !c->qk_norm);
    ck_assert_ptr_nonnull(tt_params_get(&m.params, "blocks.1.mlp.up_proj.weight"));
    double err = logits_error(&m);
    fprintf(stderr, "llama import: logits max_abs_err=%.3g against PyTorch (float64)\n", err);
    ck_assert_msg(err <= 1e-5, "logits differ from PyTorch's by %g", err);
    ck_assert(err > 0);  // f32 against float64: never bit-equal by chance
    tt_gpt_free(&m);
}
END_TEST

// ---- export ----

// Every tensor of the export is the original's of the same name, bit for bit; the original has
// only its rotary_emb.inv_freq buffers besides. The metadata holds config.json's values.
static void check_export_matches(const char *exported, const char *original) {
    tt_safetensors a, b;
    ck_assert_int_eq(tt_safetensors_open(&a, exported), TT_OK);
    ck_assert_int_eq(tt_safetensors_open(&b, original), TT_OK);
    ck_assert_int_eq(a.n, b.n - 2);
    for (int i = 0; i < a.n; i++) {
        const tt_st_info *x = &a.tensors[i], *y = tt_safetensors_find(&b, x->name);
        ck_assert_msg(y != NULL, "exported '%s' is not in the original", x->name);
        ck_assert_int_eq(x->dtype, y->dtype);
        ck_assert_uint_eq(x->end - x->begin, y->end - y->begin);
        ck_assert_msg(memcmp(a.data + x->begin, b.data + y->begin, x->end - x->begin) == 0,
                      "'%s' differs from the original", x->name);
    }
    static const char *const keys[] = {"format",
                                       "num_attention_heads",
                                       "num_key_value_heads",
                                       "intermediate_size",
                                       "max_position_embeddings",
                                       "rope_theta",
                                       "rms_norm_eps",
                                       "tie_word_embeddings"};
    static const char *const values[] = {"pt", "4", "2", "48", "16", "500", "1e-06", "false"};
    for (int i = 0; i < 8; i++) ck_assert_str_eq(tt_safetensors_meta(&a, keys[i]), values[i]);
    tt_safetensors_close(&a);
    tt_safetensors_close(&b);
}

// Every config field of a and b is equal.
static void assert_same_config(const tt_gpt_config *a, const tt_gpt_config *b) {
    for (int i = 0; i < tt_gpt_nfields; i++)
        ck_assert_msg(
            tt_gpt_field_get(a, &tt_gpt_fields[i]) == tt_gpt_field_get(b, &tt_gpt_fields[i]),
            "%s differs", tt_gpt_fields[i].name);
}

START_TEST(test_export_round_trip) {
    char path[256], out[160];
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "llama");
    tmp_path(out, sizeof out, "llama.safetensors");
    tt_gpt m, m2;
    load_ok(&m, ref_file(path, sizeof path, "llama_tiny"));
    const char *tok_meta[] = {"tokenizer", "char", NULL};
    ck_assert_msg(tt_gpt_save_llama(&m, out, TT_ST_F32, tok_meta) == TT_OK, "%s", tt_last_error());
    check_export_matches(out, path);
    load_ok(&m2, out);
    assert_same_config(&m.cfg, &m2.cfg);
    ck_assert_uint_eq(tt_params_fingerprint(&m2.params), tt_params_fingerprint(&m.params));
    assert_same_logits(&m, &m2);
    tt_gpt_free(&m2);
    // As BF16 it still loads, and the logits move by about BF16's precision.
    ck_assert_int_eq(tt_gpt_save_llama(&m, out, TT_ST_BF16, NULL), TT_OK);
    load_ok(&m2, out);
    double err = logits_error(&m2);
    ck_assert_msg(err > 1e-4 && err < 0.1, "bf16 logits err %g", err);
    tt_gpt_free(&m2);
    tt_gpt_free(&m);
    tt_test_rmdir(tmpdir);
}
END_TEST

// A Llama-shaped model of ours (tied head, the MLP at its default 4 n_embd) written and read
// back: the same config (mlp_hidden resolved), parameters and logits.
START_TEST(test_fresh_tied_round_trip) {
    char out[160];
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "llama");
    tmp_path(out, sizeof out, "tied.safetensors");
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 11, c.block_size = 8, c.n_layer = 2, c.n_head = 4, c.n_kv_head = 1;
    c.n_embd = 16, c.positional = TT_POS_ROPE, c.norm = TT_NORM_RMSNORM;
    c.activation = TT_ACT_SWIGLU, c.rope_base = 12345.678, c.norm_eps = 3e-6;
    tt_rng rng;
    tt_rng_seed(&rng, 27);
    tt_gpt m, m2;
    ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
    ck_assert_int_eq(tt_gpt_num_params(&m, false), tt_gpt_config_num_params(&c, false));
    ck_assert_int_eq(tt_gpt_save_llama(&m, out, TT_ST_F32, NULL), TT_OK);
    tt_safetensors f;
    ck_assert_int_eq(tt_safetensors_open(&f, out), TT_OK);
    ck_assert_ptr_null(tt_safetensors_find(&f, "lm_head.weight"));
    ck_assert_str_eq(tt_safetensors_meta(&f, "tie_word_embeddings"), "true");
    ck_assert_str_eq(tt_safetensors_meta(&f, "intermediate_size"), "64");
    ck_assert_str_eq(tt_safetensors_meta(&f, "rope_theta"), "12345.678");
    tt_safetensors_close(&f);
    load_ok(&m2, out);
    ck_assert(m2.cfg.tie_weights && m2.cfg.mlp_hidden == 64 && m2.cfg.n_kv_head == 1);
    ck_assert(m2.cfg.rope_base == 12345.678 && m2.cfg.norm_eps == 3e-6);
    ck_assert_uint_eq(tt_params_fingerprint(&m2.params), tt_params_fingerprint(&m.params));
    assert_same_logits(&m, &m2);
    tt_gpt_free(&m2);
    tt_gpt_free(&m);
    tt_test_rmdir(tmpdir);
}
END_TEST

// Models that Llama's layout cannot hold are refused, naming what they have.
START_TEST(test_export_refused) {
    tt_gpt_config c = tt_gpt_config_default();
    c.vocab_size = 5, c.block_size = 4, c.n_layer = 1, c.n_head = 2, c.n_kv_head = 0;
    c.n_embd = 8;
    tt_rng rng;
    tt_rng_seed(&rng, 1);
    const char *msgs[] = {"learned positions", "a norm other than RMSNorm with a gain",
                          "an MLP other than SwiGLU", "biases", "QK-norm"};
    for (int k = 0; k < 5; k++) {
        if (k >= 1) c.positional = TT_POS_ROPE;
        c.norm = k == 1 ? TT_NORM_RMSNORM_NOWEIGHT : TT_NORM_RMSNORM;
        if (k >= 2) c.activation = k == 2 ? TT_ACT_SILU : TT_ACT_SWIGLU;
        c.bias = k == 3;
        c.qk_norm = k == 4;
        tt_gpt m;
        ck_assert_int_eq(tt_gpt_init(&m, &c, &rng), TT_OK);
        ck_assert_int_eq(tt_gpt_save_llama(&m, "/tmp/never.safetensors", TT_ST_F32, NULL),
                         TT_ERR_ARG);
        ck_assert_msg(strstr(tt_last_error(), msgs[k]), "%s", tt_last_error());
        // Nor can GPT-2's hold them (SwiGLU, RMSNorm, ...).
        ck_assert_int_eq(tt_gpt_save_hf(&m, "/tmp/never.safetensors", TT_ST_F32), TT_ERR_ARG);
        tt_gpt_free(&m);
    }
}
END_TEST

// ---- import errors ----

// The reference Llama with one tensor dropped, renamed (drop and add) or added (a copy of the
// first), one metadata key dropped (value NULL) or set, saved to out.
static void edited(const char *out, const char *drop, const char *add, const char *key,
                   const char *value) {
    char path[256];
    tt_safetensors f;
    ck_assert_int_eq(tt_safetensors_open(&f, ref_file(path, sizeof path, "llama_tiny")), TT_OK);
    tt_params p;
    tt_params_init(&p);
    for (int i = 0; i < f.n; i++) {
        bool dropped = drop && strcmp(f.tensors[i].name, drop) == 0;
        tt_tensor *x;
        ck_assert_int_eq(tt_safetensors_get(&f, f.tensors[i].name, &x), TT_OK);
        if (!dropped) tt_params_add(&p, NULL, f.tensors[i].name, x);
        if (add && (drop ? dropped : i == 0)) tt_params_add(&p, NULL, add, x);
        tt_release(x);
    }
    const char *meta[64];
    int k = 0;
    for (int i = 0; i < f.nmeta; i++) {
        if (key && strcmp(f.meta_keys[i], key) == 0) continue;
        meta[k++] = f.meta_keys[i], meta[k++] = f.meta_values[i];
    }
    if (key && value) meta[k++] = key, meta[k++] = value;
    meta[k] = NULL;
    ck_assert_int_eq(tt_safetensors_save(out, &p, meta, TT_ST_F32), TT_OK);
    tt_params_free(&p);
    tt_safetensors_close(&f);
}

static void load_fails(const char *path, tt_status status, const char *msg) {
    tt_gpt m;
    ck_assert_int_eq(tt_gpt_load_llama(&m, path), status);
    ck_assert_msg(strstr(tt_last_error(), msg), "'%s' lacks '%s'", tt_last_error(), msg);
    ck_assert_ptr_null(m.blocks);
}

START_TEST(test_import_errors) {
    char path[256], out[160];
    tt_test_mkdtemp(tmpdir, sizeof tmpdir, "llama");
    tmp_path(out, sizeof out, "bad.safetensors");
    // GPT-2 is not Llama.
    load_fails(ref_file(path, sizeof path, "gpt2_tiny_tied"), TT_ERR_MISMATCH,
               "has no (V, C) model.embed_tokens.weight and (H, C) model.layers.0.mlp.gate_proj."
               "weight: not a Llama checkpoint");
    edited(out, NULL, NULL, "num_attention_heads", NULL);
    load_fails(out, TT_ERR_MISMATCH, "has no num_attention_heads metadata");
    edited(out, NULL, NULL, "rope_theta", "fast");
    load_fails(out, TT_ERR_FORMAT, "metadata rope_theta: rope_base expects a number, got 'fast'");
    edited(out, NULL, NULL, "num_attention_heads", "3");
    load_fails(out, TT_ERR_MISMATCH, "n_embd=32 is not divisible by n_head=3");
    // Truncated: fewer values (17888 - 1536 of up_proj + 8 of the inv_freq buffers) than the
    // parameters of its config, refused before anything is built.
    edited(out, "model.layers.1.mlp.up_proj.weight", NULL, NULL, NULL);
    load_fails(out, TT_ERR_MISMATCH,
               "its config asks for 17888 parameters but the file holds "
               "16360 values");
    edited(out, "model.layers.1.mlp.up_proj.weight", "model.layers.1.mlp.up.weight", NULL, NULL);
    load_fails(out, TT_ERR_MISMATCH, "has no tensor 'model.layers.1.mlp.up_proj.weight'");
    edited(out, NULL, "model.layers.0.mlp.extra.weight", NULL, NULL);
    load_fails(out, TT_ERR_MISMATCH, "1 unexpected tensor(s): 'model.layers.0.mlp.extra.weight'");
    // Two key/value heads in the shapes, one in the metadata: k_proj does not fit.
    edited(out, NULL, NULL, "num_key_value_heads", "1");
    load_fails(out, TT_ERR_MISMATCH,
               "tensor 'model.layers.0.self_attn.k_proj.weight' has 2 dims "
               "(first 16) where the other tensors imply (8, 32)");
    // Without num_key_value_heads, k_proj's rows say it.
    edited(out, NULL, NULL, "num_key_value_heads", NULL);
    tt_gpt m;
    load_ok(&m, out);
    ck_assert_int_eq(m.cfg.n_kv_head, 2);
    tt_gpt_free(&m);
    tt_test_rmdir(tmpdir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("llama");
    TCase *tc = tt_tcase("llama_hf");
    tcase_add_test(tc, test_import_reference);
    tcase_add_test(tc, test_export_round_trip);
    tcase_add_test(tc, test_fresh_tied_round_trip);
    tcase_add_test(tc, test_export_refused);
    tcase_add_test(tc, test_import_errors);
    suite_add_tcase(s, tc);
    return tt_test_run(s);
}

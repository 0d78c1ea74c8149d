// Hugging Face Llama weights (models/gpt/gpt.h): builds a tt_gpt from a LlamaForCausalLM
// model.safetensors (sizes from the shapes, the other hyperparameters from config.json's names
// in the file's metadata) and writes a tt_gpt back in that layout. Names map by prefix over the
// model's own parameter list; nothing is transposed (both keep nn.Linear's (out, in)) and q/k
// need no permutation: our RoPE is rotate-half, as Hugging Face's. No config.json reader, no
// tokenizer files: the vocabulary is the caller's business.
//
// Letters: C channels (n_embd), V vocab, H the MLP's hidden size, L layers.
#include "gpt_internal.h"

#include <stdio.h>
#include <string.h>

#define WHAT "Llama"

// ---- the name map ----

typedef struct name_pair {
    const char *ours, *hf;
} name_pair;

// Our name's prefix and Hugging Face's, outside the blocks and inside one (after
// "blocks.<l>." / "model.layers.<l>."); the rest of the name is the same in both
// (q_proj.weight, gate_proj.weight, ...).
static const name_pair top_names[] = {
    {"wte.", "model.embed_tokens."},
    {"ln_f.", "model.norm."},
    {"lm_head.", "lm_head."},
};
static const name_pair block_names[] = {
    {"norm1.", "input_layernorm."},
    {"norm2.", "post_attention_layernorm."},
    {"attn.", "self_attn."},
    {"mlp.", "mlp."},
};
#define N_TOP ((int)(sizeof top_names / sizeof top_names[0]))
#define N_BLOCK ((int)(sizeof block_names / sizeof block_names[0]))

static bool starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

// Ours ("blocks.3.attn.q_proj.weight") -> Hugging Face's ("model.layers.3.self_attn.q_proj.
// weight") into buf (TT_NAME_MAX bytes).
static const char *hf_name(char *buf, const char *ours) {
    for (int i = 0; i < N_TOP; i++)
        if (starts_with(ours, top_names[i].ours))
            return tt__hf_name(buf, "%s%s", top_names[i].hf, ours + strlen(top_names[i].ours));
    long long l = 0;
    int at = 0;
    if (sscanf(ours, "blocks.%lld.%n", &l, &at) == 1 && at > 0)
        for (int i = 0; i < N_BLOCK; i++)
            if (starts_with(ours + at, block_names[i].ours))
                return tt__hf_name(buf, "model.layers.%lld.%s%s", l, block_names[i].hf,
                                   ours + at + strlen(block_names[i].ours));
    TT_CHECK(false, "parameter '%s' has no name in Llama's layout", ours);
    return buf;
}

// config.json's names of our config fields, written to the metadata by the export. On import
// the sizes come from the shapes (from_shapes), the rest from the metadata when present.
static const struct {
    const char *hf, *field;
    bool from_shapes;
} hparams[] = {
    {"vocab_size", "vocab_size", true},
    {"hidden_size", "n_embd", true},
    {"intermediate_size", "mlp_hidden", true},
    {"num_hidden_layers", "n_layer", true},
    {"num_attention_heads", "n_head", false},
    {"num_key_value_heads", "n_kv_head", false},
    {"max_position_embeddings", "block_size", false},
    {"rope_theta", "rope_base", false},
    {"rms_norm_eps", "norm_eps", false},
    {"tie_word_embeddings", "tie_weights", true},
};
#define N_HPARAMS ((int)(sizeof hparams / sizeof hparams[0]))

// ---- import ----

bool tt_gpt_is_llama(const tt_safetensors *f) {
    return tt_safetensors_find(f, "model.embed_tokens.weight") != NULL;
}

// The old rotary buffers (self_attn.rotary_emb.inv_freq): not weights.
static bool llama_buffer(const char *name) {
    size_t k = strlen(name), n = strlen(".rotary_emb.inv_freq");
    return k >= n && strcmp(name + k - n, ".rotary_emb.inv_freq") == 0;
}

// LlamaConfig's defaults for what the file may not say, then the sizes of its shapes: V and C
// of embed_tokens, L layers, H of layer 0's gate_proj, tied when lm_head is absent or equal.
static tt_status shape_config(const tt_safetensors *f, tt_gpt_config *c) {
    const tt_st_info *wte = tt_safetensors_find(f, "model.embed_tokens.weight");
    const tt_st_info *gate = tt_safetensors_find(f, "model.layers.0.mlp.gate_proj.weight");
    if (!wte || wte->ndim != 2 || !gate || gate->ndim != 2)
        return tt_set_error(TT_ERR_MISMATCH,
                            WHAT
                            " safetensors '%s' has no (V, C) model."
                            "embed_tokens.weight and (H, C) model.layers.0.mlp.gate_proj.weight: "
                            "not a Llama checkpoint",
                            f->path);
    *c = tt_gpt_config_default();
    c->dropout = 0, c->bias = false, c->qk_norm = false;
    c->positional = TT_POS_ROPE, c->norm = TT_NORM_RMSNORM, c->activation = TT_ACT_SWIGLU;
    c->block_size = 2048, c->rope_base = 10000, c->norm_eps = 1e-6;
    c->vocab_size = wte->shape[0], c->n_embd = wte->shape[1], c->mlp_hidden = gate->shape[0];
    char name[TT_NAME_MAX];
    c->n_layer = 0;
    while (tt_safetensors_find(
        f, tt__hf_name(name, "model.layers.%lld.input_layernorm.weight", (long long)c->n_layer)))
        c->n_layer++;
    const tt_st_info *head = tt_safetensors_find(f, "lm_head.weight");
    c->tie_weights = !head || (head->dtype == wte->dtype && head->ndim == 2 &&
                               head->shape[0] == wte->shape[0] && head->shape[1] == wte->shape[1] &&
                               memcmp(f->data + head->begin, f->data + wte->begin,
                                      (size_t)(wte->end - wte->begin)) == 0);
    return TT_OK;
}

// The hyperparameters of the metadata (config.json's names) that the shapes do not give, parsed
// by the config table; num_attention_heads is required. Without num_key_value_heads, the key
// heads are those k_proj's rows hold.
static tt_status meta_config(const tt_safetensors *f, tt_gpt_config *c) {
    if (!tt_safetensors_meta(f, "num_attention_heads"))
        return tt_set_error(TT_ERR_MISMATCH,
                            WHAT
                            " safetensors '%s' has no num_attention_heads "
                            "metadata; add config.json's hyperparameters to the file's metadata "
                            "(num_attention_heads, max_position_embeddings, rope_theta, "
                            "rms_norm_eps)",
                            f->path);
    for (int i = 0; i < N_HPARAMS; i++) {
        const char *text = tt_safetensors_meta(f, hparams[i].hf);
        if (hparams[i].from_shapes || !text) continue;
        if (tt_gpt_field_parse(c, tt_gpt_field_find(hparams[i].field), text) != TT_OK) {
            char why[400];
            snprintf(why, sizeof why, "%s", tt_last_error());
            return tt_set_error(TT_ERR_FORMAT, WHAT " safetensors '%s': metadata %s: %s", f->path,
                                hparams[i].hf, why);
        }
    }
    const tt_st_info *k = tt_safetensors_find(f, "model.layers.0.self_attn.k_proj.weight");
    if (!tt_safetensors_meta(f, "num_key_value_heads") && k && k->ndim == 2 && c->n_head > 0 &&
        c->n_embd % c->n_head == 0)
        c->n_kv_head = k->shape[0] / (c->n_embd / c->n_head);
    else if (!tt_safetensors_meta(f, "num_key_value_heads"))
        c->n_kv_head = c->n_head;
    return TT_OK;
}

// The config of f, checked: valid, masks within the rule of tt__gpt_check_masks, and no more
// parameters than the file's float tensors hold (so a file cannot make us allocate more).
static tt_status file_config(const tt_safetensors *f, tt_gpt_config *c) {
    tt_status s = shape_config(f, c);
    if (s == TT_OK) s = meta_config(f, c);
    if (s != TT_OK) return s;
    if (tt_gpt_config_validate(c) != TT_OK || tt__gpt_check_masks(c) != TT_OK)
        return tt__hf_wrap_error(TT_ERR_MISMATCH, WHAT, f->path);
    int64_t held = 0;
    for (int i = 0; i < f->n; i++)
        if (f->tensors[i].dtype < TT_ST_I32)  // the float dtypes
            held += (int64_t)((f->tensors[i].end - f->tensors[i].begin) /
                              tt_st_dtype_size(f->tensors[i].dtype));
    int64_t need = tt_gpt_config_num_params(c, false);
    if (need > held)
        return tt_set_error(TT_ERR_MISMATCH,
                            WHAT
                            " safetensors '%s': its config asks for %lld "
                            "parameters but the file holds %lld values",
                            f->path, (long long)need, (long long)held);
    return TT_OK;
}

// Copies every parameter of m from its tensor in f (checked first), marking it in used.
static tt_status copy_params(tt_gpt *m, const tt_safetensors *f, bool *used) {
    char name[TT_NAME_MAX];
    for (int i = 0; i < m->params.n; i++) {
        tt_tensor *dst = m->params.items[i].tensor, *src;
        const tt_st_info *e;
        hf_name(name, m->params.items[i].name);
        tt_status s = tt__hf_expect(f, WHAT, name, dst->ndim, dst->shape, &e);
        if (s != TT_OK) return s;
        used[e - f->tensors] = true;
        s = tt_safetensors_get(f, name, &src);
        TT_CHECK(s == TT_OK, "reading a validated tensor failed: %s", tt_last_error());
        tt_copy_(dst, src);
        tt_release(src);
    }
    if (m->cfg.tie_weights) {  // a tied model saved with both: lm_head equals embed_tokens
        const tt_st_info *head = tt_safetensors_find(f, "lm_head.weight");
        if (head) used[head - f->tensors] = true;
    }
    return tt__hf_check_unexpected(f, WHAT, used, llama_buffer);
}

tt_status tt_gpt_load_llama_file(tt_gpt *m, const tt_safetensors *f) {
    TT_CHECK(m && f, "model and file must be given");
    memset(m, 0, sizeof *m);
    tt_gpt_config cfg;
    tt_status s = file_config(f, &cfg);
    if (s != TT_OK) return s;
    if ((s = tt__gpt_init_for_load(m, &cfg)) != TT_OK) return s;
    bool *used = TT_CALLOC((size_t)f->n + 1, sizeof *used);
    bool grad = tt_set_grad_enabled(false);
    s = copy_params(m, f, used);
    tt_set_grad_enabled(grad);
    tt_free(used);
    if (s == TT_OK && tt_gpt_check_finite(m) != TT_OK)
        s = tt__hf_wrap_error(TT_ERR_FORMAT, WHAT, f->path);
    if (s != TT_OK) tt_gpt_free(m);
    return s;
}

tt_status tt_gpt_load_llama(tt_gpt *m, const char *path) {
    TT_CHECK(m && path, "model and path must be given");
    memset(m, 0, sizeof *m);
    tt_safetensors f;
    tt_status s = tt_safetensors_open(&f, path);
    if (s == TT_OK) s = tt_gpt_load_llama_file(m, &f);
    tt_safetensors_close(&f);
    return s;
}

// ---- export ----

const char *tt__llama_unsupported(const tt_gpt_config *c) {
    return c->positional != TT_POS_ROPE ? "learned positions (Llama rotates q and k: "
                                          "positional = rope)"
           : c->norm != TT_NORM_RMSNORM ? "a norm other than RMSNorm with a gain (norm = rmsnorm)"
           : c->activation != TT_ACT_SWIGLU ? "an MLP other than SwiGLU (activation = swiglu)"
           : c->bias                        ? "biases (Llama's Linears have none)"
           : c->qk_norm                     ? "QK-norm"
                                            : NULL;
}

// format, the hyperparameters under config.json's names (the MLP's width resolved), then the
// caller's {key, value, ...}; texts holds the values (N_HPARAMS x 32 bytes). Free the array.
static const char **export_meta(const tt_gpt_config *cfg, const char *const *extra, int n_extra,
                                char (*texts)[32]) {
    tt_gpt_config c = *cfg;
    c.mlp_hidden = tt_gpt_config_mlp_hidden(cfg);
    const char **meta = TT_MALLOC(((size_t)n_extra + 2 * N_HPARAMS + 3) * sizeof *meta);
    int k = 0;
    meta[k++] = "format", meta[k++] = "pt";
    for (int i = 0; i < N_HPARAMS; i++) {
        meta[k++] = hparams[i].hf;
        meta[k++] = tt_gpt_field_format(&c, tt_gpt_field_find(hparams[i].field), texts[i], 32);
    }
    for (int i = 0; i < n_extra; i++) meta[k++] = extra[i];
    meta[k] = NULL;
    return meta;
}

tt_status tt_gpt_save_llama(const tt_gpt *m, const char *path, tt_st_dtype dtype,
                            const char *const *metadata) {
    TT_CHECK(m && m->params.n && path, "model (initialized) and path must be given");
    int n_extra = 0;
    while (metadata && metadata[n_extra]) n_extra++;
    TT_CHECK(n_extra % 2 == 0,
             "metadata holds %d strings before its NULL; give key, value "
             "pairs",
             n_extra);
    const char *why = tt__llama_unsupported(&m->cfg);
    if (why)
        return tt_set_error(TT_ERR_ARG,
                            "tt_gpt_save_llama('%s'): the model has %s; only a "
                            "Llama-shaped model can be written in Llama's layout",
                            path, why);
    tt_params out;
    tt_params_init(&out);
    char name[TT_NAME_MAX], texts[N_HPARAMS][32];
    for (int i = 0; i < m->params.n; i++)
        tt_params_add(&out, NULL, hf_name(name, m->params.items[i].name),
                      m->params.items[i].tensor);
    const char **meta = export_meta(&m->cfg, metadata, n_extra, texts);
    tt_status s = tt_safetensors_save(path, &out, meta, dtype);
    tt_free(meta);
    tt_params_free(&out);
    return s;
}

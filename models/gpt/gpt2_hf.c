// Hugging Face GPT-2 weights (models/gpt/gpt.h): builds a tt_gpt from a GPT-2
// model.safetensors (config inferred from the shapes, Conv1D weights transposed, the fused
// attn.c_attn split into q/k/v) and writes a tt_gpt back in that layout. No config.json, no
// tokenizer files: the vocabulary is the caller's business.
//
// Letters: C channels (n_embd), V vocab, N the context length (n_positions).
#include "gpt_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// ---- the name map ----

typedef enum hf_kind {
    HF_COPY,       // same layout
    HF_TRANSPOSE,  // Conv1D (in, out) <-> our Linear (out, in)
    HF_QKV,        // attn.c_attn (C, 3C) / (3C,) <-> q_proj, k_proj, v_proj
} hf_kind;

// One tensor of a GPT-2 layer: its name after "h.<l>.", ours after "blocks.<l>." (for HF_QKV
// the projection's field name, "weight" or "bias"), and its shape in units of C (cols 0: 1-d).
static const struct {
    const char *hf, *ours;
    int rows, cols;
    hf_kind kind;
} layer_map[] = {
    {"ln_1.weight", "norm1.weight", 1, 0, HF_COPY},
    {"ln_1.bias", "norm1.bias", 1, 0, HF_COPY},
    {"attn.c_attn.weight", "weight", 1, 3, HF_QKV},
    {"attn.c_attn.bias", "bias", 3, 0, HF_QKV},
    {"attn.c_proj.weight", "attn.o_proj.weight", 1, 1, HF_TRANSPOSE},
    {"attn.c_proj.bias", "attn.o_proj.bias", 1, 0, HF_COPY},
    {"ln_2.weight", "norm2.weight", 1, 0, HF_COPY},
    {"ln_2.bias", "norm2.bias", 1, 0, HF_COPY},
    {"mlp.c_fc.weight", "mlp.fc.weight", 1, 4, HF_TRANSPOSE},
    {"mlp.c_fc.bias", "mlp.fc.bias", 4, 0, HF_COPY},
    {"mlp.c_proj.weight", "mlp.proj.weight", 4, 1, HF_TRANSPOSE},
    {"mlp.c_proj.bias", "mlp.proj.bias", 1, 0, HF_COPY},
};
#define N_LAYER_MAP ((int)(sizeof layer_map / sizeof layer_map[0]))

const char *tt__hf_name(char *buf, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, TT_NAME_MAX, fmt, ap);
    va_end(ap);
    TT_CHECK(n >= 0 && n < TT_NAME_MAX, "name '%s...' is longer than %d bytes", buf,
             TT_NAME_MAX - 1);
    return buf;
}

// ---- import ----

static bool is_float(tt_st_dtype d) {
    return d == TT_ST_F32 || d == TT_ST_F64 || d == TT_ST_F16 || d == TT_ST_BF16;
}

// "(3,)" or "(3, 4)": a shape for messages.
static void shape_text(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int d = 0; d < ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (k < n) snprintf(buf + k, n - k, ndim == 1 ? ",)" : ")");
}

tt_status tt__hf_expect(const tt_safetensors *f, const char *what, const char *name, int ndim,
                        const int64_t *shape, const tt_st_info **out) {
    const tt_st_info *e = tt_safetensors_find(f, name);
    *out = e;
    if (!e)
        return tt_set_error(TT_ERR_MISMATCH,
                            "%s safetensors '%s' has no tensor '%s' (not a "
                            "%s checkpoint, or a truncated one)",
                            what, f->path, name, what);
    if (!is_float(e->dtype))
        return tt_set_error(TT_ERR_MISMATCH,
                            "%s safetensors '%s': tensor '%s' is %s; "
                            "weights must be F32, F64, F16 or BF16",
                            what, f->path, name, tt_st_dtype_name(e->dtype));
    bool same = e->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = e->shape[d] == shape[d];
    if (!same) {
        char want[96];
        shape_text(want, sizeof want, ndim, shape);
        return tt_set_error(TT_ERR_MISMATCH,
                            "%s safetensors '%s': tensor '%s' has %d dims "
                            "(first %lld) where the other tensors imply %s",
                            what, f->path, name, e->ndim, (long long)(e->ndim ? e->shape[0] : 0),
                            want);
    }
    return TT_OK;
}

// The entry `name` of f with shape (rows, cols) ((rows,) when cols < 0), or an error naming it.
static tt_status expect(const tt_safetensors *f, const char *name, int64_t rows, int64_t cols,
                        const tt_st_info **out) {
    return tt__hf_expect(f, "GPT-2", name, cols < 0 ? 1 : 2, (const int64_t[]){rows, cols}, out);
}

tt_status tt__hf_wrap_error(tt_status s, const char *what, const char *path) {
    char why[512];
    snprintf(why, sizeof why, "%s", tt_last_error());
    return tt_set_error(s, "%s safetensors '%s': %s", what, path, why);
}

// Copies the stored tensor name into dst as kind says (part: 0, 1, 2 for q, k, v of HF_QKV).
static void copy_in(const tt_safetensors *f, const char *name, tt_tensor *dst, hf_kind kind,
                    int part) {
    tt_tensor *src;
    tt_status s = tt_safetensors_get(f, name, &src);
    TT_CHECK(s == TT_OK, "reading a validated tensor failed: %s", tt_last_error());
    tt_scope_begin();
    tt_tensor *x = src;
    if (kind == HF_QKV) {
        int64_t C = src->shape[src->ndim - 1] / 3;
        x = tt_narrow(src, src->ndim - 1, part * C, C);  // (C, C) or (C,)
    }
    if (x->ndim == 2 && kind != HF_COPY) x = tt_transpose(x, 0, 1);
    tt_copy_(dst, x);
    tt_scope_end();
    tt_release(src);
}

tt_status tt__hf_check_unexpected(const tt_safetensors *f, const char *what, const bool *used,
                                  bool (*is_buffer)(const char *name)) {
    char list[512] = "";
    int n = 0;
    for (int i = 0; i < f->n; i++) {
        const char *name = f->tensors[i].name;
        if (used[i] || is_buffer(name)) continue;
        size_t at = strlen(list);
        if (n++ < 5 && at + strlen(name) + 5 < sizeof list)
            snprintf(list + at, sizeof list - at, "%s'%s'", at ? ", " : "", name);
    }
    if (!n) return TT_OK;
    return tt_set_error(TT_ERR_MISMATCH,
                        "%s safetensors '%s' has %d unexpected tensor(s): "
                        "%s%s (not a %s checkpoint?)",
                        what, f->path, n, list, n > 5 ? ", ..." : "", what);
}

// The buffers GPT-2 keeps in its state dict (attn.bias, attn.masked_bias): not weights.
static bool gpt2_buffer(const char *name) {
    size_t k = strlen(name);
    return (k >= 10 && strcmp(name + k - 10, ".attn.bias") == 0) ||
           (k >= 17 && strcmp(name + k - 17, ".attn.masked_bias") == 0);
}

// The head count: n_head when given, else the file's n_head metadata, else C / 64 (every
// published GPT-2 has 64-wide heads).
static tt_status hf_heads(const tt_safetensors *f, int64_t C, int64_t *n_head) {
    const char *meta = tt_safetensors_meta(f, "n_head");
    if (*n_head != 0) return TT_OK;
    if (meta) {
        char *end;
        errno = 0;
        long long h = strtoll(meta, &end, 10);
        if (errno || end == meta || *end || h <= 0)
            return tt_set_error(TT_ERR_FORMAT, "GPT-2 safetensors '%s': metadata n_head '%s' "
                                "is not a positive integer", f->path, meta);
        *n_head = h;
    } else if (C % 64 == 0) {
        *n_head = C / 64;
    } else {
        return tt_set_error(TT_ERR_ARG, "GPT-2 safetensors '%s': n_embd %lld is not a multiple "
                            "of 64 and the file has no n_head metadata; pass n_head (config."
                            "json's n_head)", f->path, (long long)C);
    }
    return TT_OK;
}

// Copies every layer's tensors of f (names under prefix pre) into m's parameters: GPT-2's
// fused c_attn split into q, k and v, Conv1D weights transposed (layer_map).
static void copy_layers(const tt_safetensors *f, const char *pre, tt_gpt *m, int64_t L) {
    char name[TT_NAME_MAX], ours[TT_NAME_MAX];
    for (int64_t l = 0; l < L; l++) {
        for (int j = 0; j < N_LAYER_MAP; j++) {
            tt__hf_name(name, "%sh.%lld.%s", pre, (long long)l, layer_map[j].hf);
            for (int part = 0; part < (layer_map[j].kind == HF_QKV ? 3 : 1); part++) {
                if (layer_map[j].kind == HF_QKV)
                    tt__hf_name(ours, "blocks.%lld.attn.%c_proj.%s", (long long)l, "qkv"[part],
                                layer_map[j].ours);
                else
                    tt__hf_name(ours, "blocks.%lld.%s", (long long)l, layer_map[j].ours);
                tt_tensor *dst = tt_params_get(&m->params, ours);
                TT_CHECK(dst, "the GPT has no parameter '%s'", ours);
                copy_in(f, name, dst, layer_map[j].kind, part);
            }
        }
    }
}

tt_status tt_gpt_load_hf(tt_gpt *m, const char *path, int64_t n_head) {
    TT_CHECK(m && path, "model and path must be given");
    memset(m, 0, sizeof *m);
    tt_safetensors f;
    tt_status s = tt_safetensors_open(&f, path);
    if (s == TT_OK) s = tt_gpt_load_hf_file(m, &f, n_head);
    tt_safetensors_close(&f);
    return s;
}

tt_status tt_gpt_load_hf_file(tt_gpt *m, const tt_safetensors *f, int64_t n_head) {
    TT_CHECK(m && f, "model and file must be given");
    TT_CHECK(n_head >= 0, "n_head is %lld; pass 0 to take it from the file", (long long)n_head);
    memset(m, 0, sizeof *m);
    tt_status s = TT_OK;
    bool *used = TT_CALLOC((size_t)f->n + 1, sizeof *used);
    char name[TT_NAME_MAX];

    // The prefix, the sizes, and the config they imply.
    const char *pre = tt_safetensors_find(f, "transformer.wte.weight") ? "transformer." : "";
    const tt_st_info *wte = tt_safetensors_find(f, tt__hf_name(name, "%swte.weight", pre));
    const tt_st_info *wpe = tt_safetensors_find(f, tt__hf_name(name, "%swpe.weight", pre)), *e;
    if (!wte || !wpe || wte->ndim != 2 || wpe->ndim != 2 || wte->shape[1] != wpe->shape[1] ||
        wte->shape[0] == 0 || wte->shape[1] == 0 || wpe->shape[0] == 0) {
        s = tt_set_error(TT_ERR_MISMATCH, "GPT-2 safetensors '%s' has no (V, C) wte.weight and "
                         "(N, C) wpe.weight (with or without the 'transformer.' prefix): not a "
                         "GPT-2 checkpoint", f->path);
        goto done;
    }
    int64_t V = wte->shape[0], C = wte->shape[1], N = wpe->shape[0], L = 0;
    while (tt_safetensors_find(f, tt__hf_name(name, "%sh.%lld.ln_1.weight", pre, (long long)L)))
        L++;
    if (L == 0) {
        s = tt_set_error(TT_ERR_MISMATCH, "GPT-2 safetensors '%s' has no layers (no "
                         "%sh.0.ln_1.weight)", f->path, pre);
        goto done;
    }
    if ((s = hf_heads(f, C, &n_head)) != TT_OK) goto done;
    tt_gpt_config cfg = tt_gpt_config_default();
    cfg.vocab_size = V;
    cfg.block_size = N;
    cfg.n_layer = L;
    cfg.n_head = cfg.n_kv_head = n_head;
    cfg.n_embd = C;
    cfg.dropout = 0.0;
    cfg.bias = true;
    cfg.positional = TT_POS_LEARNED;
    cfg.norm = TT_NORM_LAYERNORM;
    cfg.activation = TT_ACT_GELU_TANH;
    cfg.qk_norm = false;

    // Every tensor present with its shape before anything is built.
    const tt_st_info *head = tt_safetensors_find(f, "lm_head.weight");
    cfg.tie_weights = true;
    if (head) {
        if ((s = expect(f, "lm_head.weight", V, C, &e)) != TT_OK) goto done;
        // A head equal to wte (a tied model saved with both) stays tied.
        cfg.tie_weights = head->dtype == wte->dtype && head->end - head->begin ==
                          wte->end - wte->begin && memcmp(f->data + head->begin, f->data +
                          wte->begin, (size_t)(wte->end - wte->begin)) == 0;
        used[head - f->tensors] = true;
    }
    const char *top[] = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"};
    const int64_t top_rows[] = {V, N, C, C}, top_cols[] = {C, C, -1, -1};
    for (int i = 0; i < 4; i++) {
        if ((s = expect(f, tt__hf_name(name, "%s%s", pre, top[i]), top_rows[i], top_cols[i], &e)) !=
            TT_OK)
            goto done;
        used[e - f->tensors] = true;
    }
    for (int64_t l = 0; l < L; l++) {
        for (int j = 0; j < N_LAYER_MAP; j++) {
            tt__hf_name(name, "%sh.%lld.%s", pre, (long long)l, layer_map[j].hf);
            int64_t cols = layer_map[j].cols ? layer_map[j].cols * C : -1;
            if ((s = expect(f, name, layer_map[j].rows * C, cols, &e)) != TT_OK) goto done;
            used[e - f->tensors] = true;
        }
    }
    if ((s = tt_gpt_config_validate(&cfg)) != TT_OK) {
        s = tt__hf_wrap_error(TT_ERR_MISMATCH, "GPT-2", f->path);
        goto done;
    }
    if ((s = tt__hf_check_unexpected(f, "GPT-2", used, gpt2_buffer)) != TT_OK) goto done;
    if ((s = tt__gpt_check_masks(&cfg)) != TT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", tt_last_error());
        s = tt_set_error(TT_ERR_MISMATCH, "GPT-2 safetensors '%s' (a %lld-row position table "
                         "wpe, %lld layers): %s", f->path, (long long)N, (long long)L, why);
        goto done;
    }

    // Build the model, then overwrite every parameter.
    if ((s = tt__gpt_init_for_load(m, &cfg)) != TT_OK) goto done;
    bool grad = tt_set_grad_enabled(false);
    for (int i = 0; i < 4; i++)
        copy_in(f, tt__hf_name(name, "%s%s", pre, top[i]), tt_params_get(&m->params, top[i]),
                HF_COPY, 0);
    if (!cfg.tie_weights) copy_in(f, "lm_head.weight", m->lm_head.weight, HF_COPY, 0);
    copy_layers(f, pre, m, L);
    tt_set_grad_enabled(grad);
    if ((s = tt_gpt_check_finite(m)) != TT_OK) {
        s = tt__hf_wrap_error(TT_ERR_FORMAT, "GPT-2", f->path);
        tt_gpt_free(m);
    }
done:
    tt_free(used);
    return s;
}

// ---- export ----

const char *tt__gpt2_unsupported(const tt_gpt_config *c) {
    return !c->bias       ? "bias = false (GPT-2 has biases in every Linear and LayerNorm)"
           : !c->qkv_bias ? "qkv_bias = false (GPT-2's c_attn has a bias)"
           : c->positional != TT_POS_LEARNED ? "RoPE positions (GPT-2 learns them)"
           : c->norm != TT_NORM_LAYERNORM    ? "RMSNorm (GPT-2 uses LayerNorm)"
           : c->activation != TT_ACT_GELU_TANH
               ? "an activation other than the tanh GELU (GPT-2's gelu_new)"
           : c->n_kv_head != c->n_head                    ? "grouped-query attention"
           : c->qk_norm                                   ? "QK-norm"
           : tt_gpt_config_mlp_hidden(c) != 4 * c->n_embd ? "an MLP hidden size other than 4 "
                                                            "n_embd"
           : c->norm_eps != 1e-5                          ? "a norm epsilon other than 1e-5"
                                                          : NULL;
}

tt_status tt_gpt_save_hf(const tt_gpt *m, const char *path, tt_st_dtype dtype) {
    return tt_gpt_save_hf_meta(m, path, dtype, NULL);
}

tt_status tt_gpt_save_hf_meta(const tt_gpt *m, const char *path, tt_st_dtype dtype,
                              const char *const *metadata) {
    TT_CHECK(m && m->params.n && path, "model (initialized) and path must be given");
    int n_extra = 0;
    while (metadata && metadata[n_extra]) n_extra++;
    TT_CHECK(n_extra % 2 == 0, "metadata holds %d strings before its NULL; give key, value "
             "pairs", n_extra);
    const tt_gpt_config *c = &m->cfg;
    const char *why = tt__gpt2_unsupported(c);
    if (why)
        return tt_set_error(TT_ERR_ARG, "tt_gpt_save_hf('%s'): the model has %s; only a "
                            "GPT-2-shaped model can be written in GPT-2's layout", path, why);
    char name[TT_NAME_MAX], ours[TT_NAME_MAX];
    tt_params out;
    tt_params_init(&out);
    bool grad = tt_set_grad_enabled(false);
    tt_scope_begin();
    const char *top[] = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"};
    for (int i = 0; i < 4; i++)
        tt_params_add(&out, NULL, tt__hf_name(name, "transformer.%s", top[i]),
                      tt_params_get(&m->params, top[i]));
    if (!c->tie_weights) tt_params_add(&out, NULL, "lm_head.weight", m->lm_head.weight);
    for (int64_t l = 0; l < c->n_layer; l++) {
        for (int j = 0; j < N_LAYER_MAP; j++) {
            tt__hf_name(name, "transformer.h.%lld.%s", (long long)l, layer_map[j].hf);
            tt_tensor *t;
            if (layer_map[j].kind == HF_QKV) {
                tt_tensor *qkv[3];
                for (int part = 0; part < 3; part++) {
                    tt__hf_name(ours, "blocks.%lld.attn.%c_proj.%s", (long long)l, "qkv"[part],
                                layer_map[j].ours);
                    qkv[part] = tt_params_get(&m->params, ours);
                    if (qkv[part]->ndim == 2) qkv[part] = tt_transpose(qkv[part], 0, 1);
                }
                t = tt_cat(3, qkv, qkv[0]->ndim - 1);  // (C, 3C) or (3C,)
            } else {
                t = tt_params_get(&m->params, tt__hf_name(ours, "blocks.%lld.%s", (long long)l,
                                                          layer_map[j].ours));
                if (layer_map[j].kind == HF_TRANSPOSE) t = tt_transpose(t, 0, 1);
            }
            tt_params_add(&out, NULL, name, t);
        }
    }
    char heads[32];
    snprintf(heads, sizeof heads, "%lld", (long long)c->n_head);
    const char **meta = TT_MALLOC(((size_t)n_extra + 5) * sizeof *meta);
    meta[0] = "format", meta[1] = "pt", meta[2] = "n_head", meta[3] = heads;
    for (int i = 0; i < n_extra; i++) meta[4 + i] = metadata[i];
    meta[4 + n_extra] = NULL;
    tt_status s = tt_safetensors_save(path, &out, meta, dtype);
    tt_free(meta);
    tt_params_free(&out);
    tt_scope_end();
    tt_set_grad_enabled(grad);
    return s;
}

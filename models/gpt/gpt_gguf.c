// GPT-2 in GGUF (models/gpt/gpt.h): our tt_gpt <-> llama.cpp's "gpt2" architecture. Names
// token_embd, position_embd, blk.<l>.{attn_norm, attn_qkv, attn_output, ffn_norm, ffn_up,
// ffn_down}, output_norm and output (absent when tied); q, k and v fused into attn_qkv; ggml's
// ne is our shape reversed, so a Linear's (out, in) weight is ne {in, out} as stored.
// The tokenizer is the caller's (data/tokenizer.h: tt_tokenizer_gguf_add, _from_gguf).
//
// Letters: C channels (n_embd), V vocab, N the context length, L layers.
#include "gpt_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// One tensor of a layer: ours after "blocks.<l>.", GGUF's after "blk.<l>." (qkv: the field
// of attn.{q,k,v}_proj), its rows and cols in units of C (cols 0: 1-d).
static const struct {
    const char *ours, *gguf;
    int rows, cols;
    bool qkv;
} layer_map[] = {
    {"norm1.weight", "attn_norm.weight", 1, 0, false},
    {"norm1.bias", "attn_norm.bias", 1, 0, false},
    {"weight", "attn_qkv.weight", 3, 1, true},
    {"bias", "attn_qkv.bias", 3, 0, true},
    {"attn.o_proj.weight", "attn_output.weight", 1, 1, false},
    {"attn.o_proj.bias", "attn_output.bias", 1, 0, false},
    {"norm2.weight", "ffn_norm.weight", 1, 0, false},
    {"norm2.bias", "ffn_norm.bias", 1, 0, false},
    {"mlp.fc.weight", "ffn_up.weight", 4, 1, false},
    {"mlp.fc.bias", "ffn_up.bias", 4, 0, false},
    {"mlp.proj.weight", "ffn_down.weight", 1, 4, false},
    {"mlp.proj.bias", "ffn_down.bias", 1, 0, false},
};
#define N_LAYER_MAP ((int)(sizeof layer_map / sizeof layer_map[0]))

// The top-level tensors (rows -1: V, -2: N; cols 0: 1-d).
static const struct {
    const char *ours, *gguf;
    int rows, cols;
} top_map[] = {
    {"wte.weight", "token_embd.weight", -1, 1},
    {"wpe.weight", "position_embd.weight", -2, 1},
    {"ln_f.weight", "output_norm.weight", 1, 0},
    {"ln_f.bias", "output_norm.bias", 1, 0},
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static const char *fmt(char *buf, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, TT_NAME_MAX, f, ap);
    va_end(ap);
    TT_CHECK(n >= 0 && n < TT_NAME_MAX, "name '%s...' is too long", buf);
    return buf;
}

// ---- export ----

// llama.cpp's general.file_type for a model mostly of type.
static uint32_t file_type(tt_ggml_type type) {
    switch (type) {
        case TT_GGML_F16: return 1;
        case TT_GGML_Q4_0: return 2;
        case TT_GGML_Q8_0: return 7;
        case TT_GGML_BF16: return 32;
        default: return 0;
    }
}

static void add_hparams(const tt_gpt_config *c, tt_gguf_writer *w, tt_ggml_type type) {
    tt_gguf_writer_set_str(w, "general.architecture", "gpt2");
    tt_gguf_writer_set_str(w, "general.name", "tinytorch.c GPT");
    tt_gguf_writer_set_u32(w, "general.file_type", file_type(type));
    tt_gguf_writer_set_u32(w, "gpt2.context_length", (uint32_t)c->block_size);
    tt_gguf_writer_set_u32(w, "gpt2.embedding_length", (uint32_t)c->n_embd);
    tt_gguf_writer_set_u32(w, "gpt2.feed_forward_length", (uint32_t)(4 * c->n_embd));
    tt_gguf_writer_set_u32(w, "gpt2.block_count", (uint32_t)c->n_layer);
    tt_gguf_writer_set_u32(w, "gpt2.attention.head_count", (uint32_t)c->n_head);
    tt_gguf_writer_set_f32(w, "gpt2.attention.layer_norm_epsilon", 1e-5f);
}

// The parameter name of m, or NULL (a low-rank model has others).
static tt_tensor *param(const tt_gpt *m, const char *name) {
    return tt_params_get((tt_params *)&m->params, name);
}

// Every tensor of m under GGUF's names: matrices as type (the position table stays F32 when
// quantized, as llama-quantize leaves it), vectors F32. Runs in a scope (the fused qkv).
static tt_status add_tensors(const tt_gpt *m, tt_gguf_writer *w, tt_ggml_type type) {
    char ours[TT_NAME_MAX], name[TT_NAME_MAX];
    bool quant = type == TT_GGML_Q8_0 || type == TT_GGML_Q4_0;
    for (int i = 0; i < 4; i++) {
        tt_tensor *t = param(m, top_map[i].ours);
        tt_ggml_type ty = t->ndim == 1 || (quant && i == 1) ? TT_GGML_F32 : type;
        tt_gguf_writer_add(w, top_map[i].gguf, t, ty);
    }
    if (!m->cfg.tie_weights) tt_gguf_writer_add(w, "output.weight", m->lm_head.weight, type);
    for (int64_t l = 0; l < m->cfg.n_layer; l++) {
        for (int j = 0; j < N_LAYER_MAP; j++) {
            tt_tensor *t;
            if (layer_map[j].qkv) {
                tt_tensor *p[3];
                for (int k = 0; k < 3; k++)
                    if (!(p[k] = param(m, fmt(ours, "blocks.%lld.attn.%c_proj.%s", (long long)l,
                                               "qkv"[k], layer_map[j].ours))))
                        goto missing;
                t = tt_cat(3, p, 0);  // (3C, C) or (3C,): q, k, v in order
            } else if (!(t = param(m, fmt(ours, "blocks.%lld.%s", (long long)l,
                                          layer_map[j].ours)))) {
                goto missing;
            }
            tt_gguf_writer_add(w, fmt(name, "blk.%lld.%s", (long long)l, layer_map[j].gguf), t,
                               t->ndim == 1 ? TT_GGML_F32 : type);
        }
    }
    return TT_OK;
missing:
    return tt_set_error(TT_ERR_ARG, "the model has no parameter '%s' (a low-rank or otherwise "
                        "changed GPT cannot be written in GPT-2's layout)", ours);
}

tt_status tt_gpt_gguf_add(const tt_gpt *m, tt_gguf_writer *w, tt_ggml_type type) {
    TT_CHECK(m && m->params.n && w, "model (initialized) and writer must be given");
    TT_CHECK(tt_ggml_type_supported(type), "type %d is not F32, F16, BF16, Q8_0 or Q4_0",
             (int)type);
    const char *why = tt__gpt2_unsupported(&m->cfg);
    if (why)
        return tt_set_error(TT_ERR_ARG, "the model has %s; only a GPT-2-shaped model can be "
                            "written as GGUF's gpt2 architecture", why);
    if ((type == TT_GGML_Q8_0 || type == TT_GGML_Q4_0) && m->cfg.n_embd % 32 != 0)
        return tt_set_error(TT_ERR_ARG, "n_embd %lld is not a multiple of 32, the %s block; "
                            "export as f32 or f16", (long long)m->cfg.n_embd,
                            tt_ggml_type_name(type));
    add_hparams(&m->cfg, w, type);
    bool grad = tt_set_grad_enabled(false);
    tt_scope_begin();
    tt_status s = add_tensors(m, w, type);  // the writer retains what it keeps
    tt_scope_end();
    tt_set_grad_enabled(grad);
    return s;
}

tt_status tt_gpt_save_gguf(const tt_gpt *m, const char *path, tt_ggml_type type) {
    tt_gguf_writer w;
    tt_gguf_writer_init(&w);
    tt_status s = tt_gpt_gguf_add(m, &w, type);
    if (s == TT_OK) s = tt_gguf_writer_save(&w, path);
    tt_gguf_writer_free(&w);
    return s;
}

// ---- import ----

// hparam key "gpt2.<key>" of f as a positive integer into *v.
static tt_status hparam(const tt_gguf *f, const char *key, int64_t *v) {
    char name[TT_NAME_MAX];
    if (!tt_gguf_get_int(f, fmt(name, "gpt2.%s", key), v) || *v <= 0 || *v > (1 << 30))
        return tt_set_error(TT_ERR_FORMAT, "gguf '%s': %s is missing or not a positive "
                            "integer", f->path, name);
    return TT_OK;
}

// The tensor name of f with shape (rows, cols) ((rows,) when cols is 0); marks it used.
static tt_status expect(const tt_gguf *f, const char *name, int64_t rows, int64_t cols,
                        bool *used) {
    const tt_gguf_tensor *t = tt_gguf_find(f, name);
    if (!t)
        return tt_set_error(TT_ERR_MISMATCH, "gguf '%s' has no tensor '%s' (not a gpt2 model, "
                            "or a truncated one)", f->path, name);
    int nd = cols ? 2 : 1;
    if (t->ndim != nd || t->ne[0] != (cols ? cols : rows) || (cols && t->ne[1] != rows))
        return tt_set_error(TT_ERR_MISMATCH, "gguf '%s': tensor '%s' has ne {%lld, %lld} (%d "
                            "dims) where the hparams imply {%lld%s%lld}", f->path, name,
                            (long long)t->ne[0], (long long)t->ne[1], t->ndim,
                            (long long)(cols ? cols : rows), cols ? ", " : "",
                            (long long)(cols ? rows : 1));
    used[t - f->tensors] = true;
    return TT_OK;
}

// The config of f's hparams and tensor shapes (all tensors checked; none unexpected).
static tt_status read_config(const tt_gguf *f, tt_gpt_config *cfg, bool *used) {
    const char *arch = tt_gguf_get_str(f, "general.architecture");
    if (!arch || strcmp(arch, "gpt2") != 0)
        return tt_set_error(TT_ERR_MISMATCH, "gguf '%s': architecture '%.40s' is not supported; "
                            "this library reads gpt2", f->path, arch ? arch : "(none)");
    int64_t N, C, L, H, ff;
    double eps;
    tt_status s;
    if ((s = hparam(f, "context_length", &N)) || (s = hparam(f, "embedding_length", &C)) ||
        (s = hparam(f, "block_count", &L)) || (s = hparam(f, "attention.head_count", &H)) ||
        (s = hparam(f, "feed_forward_length", &ff)))
        return s;
    if (ff != 4 * C || C % H)
        return tt_set_error(TT_ERR_MISMATCH, "gguf '%s': feed_forward_length %lld and head_count "
                            "%lld do not fit embedding_length %lld (GPT-2: 4 C, C / heads)",
                            f->path, (long long)ff, (long long)H, (long long)C);
    if (!tt_gguf_get_float(f, "gpt2.attention.layer_norm_epsilon", &eps) ||
        fabs(eps - 1e-5) > 1e-9)
        return tt_set_error(TT_ERR_MISMATCH, "gguf '%s': gpt2.attention.layer_norm_epsilon is "
                            "missing or not 1e-5 (GPT-2's, the one this library uses)", f->path);
    const tt_gguf_tensor *wte = tt_gguf_find(f, "token_embd.weight");
    int64_t V = wte && wte->ndim == 2 ? wte->ne[1] : 0;
    *cfg = tt_gpt_config_default();
    cfg->vocab_size = V, cfg->block_size = N, cfg->n_layer = L, cfg->n_embd = C;
    cfg->n_head = cfg->n_kv_head = H;
    cfg->dropout = 0.0, cfg->bias = cfg->qkv_bias = true, cfg->qk_norm = false;
    cfg->positional = TT_POS_LEARNED, cfg->norm = TT_NORM_LAYERNORM;
    cfg->activation = TT_ACT_GELU_TANH;
    cfg->tie_weights = !tt_gguf_find(f, "output.weight");
    char name[TT_NAME_MAX];
    for (int i = 0; i < 4; i++) {
        int64_t rows = top_map[i].rows == -1 ? V : top_map[i].rows == -2 ? N : C;
        if ((s = expect(f, top_map[i].gguf, rows, top_map[i].cols * C, used))) return s;
    }
    if (!cfg->tie_weights && (s = expect(f, "output.weight", V, C, used))) return s;
    for (int64_t l = 0; l < L; l++)
        for (int j = 0; j < N_LAYER_MAP; j++)
            if ((s = expect(f, fmt(name, "blk.%lld.%s", (long long)l, layer_map[j].gguf),
                            layer_map[j].rows * C, layer_map[j].cols * C, used)))
                return s;
    for (int64_t i = 0; i < f->n_tensors; i++)
        if (!used[i])
            return tt_set_error(TT_ERR_MISMATCH, "gguf '%s' has an unexpected tensor '%s' (not "
                                "a gpt2 model of %lld layers?)", f->path, f->tensors[i].name,
                                (long long)L);
    return TT_OK;
}

// Copies f's tensor name into dst (rows first .. first + dst rows when part of a fused one).
static void copy_in(const tt_gguf *f, const char *name, tt_tensor *dst, int64_t first) {
    tt_tensor *src;
    tt_status s = tt_gguf_get(f, name, &src);
    TT_CHECK(s == TT_OK, "reading a validated tensor failed: %s", tt_last_error());
    tt_scope_begin();
    tt_copy_(dst, src->shape[0] == dst->shape[0] ? src : tt_narrow(src, 0, first,
                                                                    dst->shape[0]));
    tt_scope_end();
    tt_release(src);
}

static void copy_all(const tt_gguf *f, tt_gpt *m) {
    char ours[TT_NAME_MAX], name[TT_NAME_MAX];
    for (int i = 0; i < 4; i++)
        copy_in(f, top_map[i].gguf, tt_params_get(&m->params, top_map[i].ours), 0);
    if (!m->cfg.tie_weights) copy_in(f, "output.weight", m->lm_head.weight, 0);
    for (int64_t l = 0; l < m->cfg.n_layer; l++) {
        for (int j = 0; j < N_LAYER_MAP; j++) {
            fmt(name, "blk.%lld.%s", (long long)l, layer_map[j].gguf);
            for (int k = 0; k < (layer_map[j].qkv ? 3 : 1); k++) {
                if (layer_map[j].qkv)
                    fmt(ours, "blocks.%lld.attn.%c_proj.%s", (long long)l, "qkv"[k],
                        layer_map[j].ours);
                else
                    fmt(ours, "blocks.%lld.%s", (long long)l, layer_map[j].ours);
                copy_in(f, name, tt_params_get(&m->params, ours), k * m->cfg.n_embd);
            }
        }
    }
}

tt_status tt_gpt_load_gguf_file(tt_gpt *m, const tt_gguf *f) {
    TT_CHECK(m && f, "model and file must be given");
    memset(m, 0, sizeof *m);
    tt_gpt_config cfg;
    bool *used = TT_CALLOC((size_t)f->n_tensors + 1, sizeof *used);
    tt_status s = read_config(f, &cfg, used);
    tt_free(used);
    char why[512];
    if (s == TT_OK && ((s = tt_gpt_config_validate(&cfg)) != TT_OK ||
                       (s = tt__gpt_check_masks(&cfg)) != TT_OK)) {
        snprintf(why, sizeof why, "%s", tt_last_error());
        s = tt_set_error(TT_ERR_MISMATCH, "gguf '%s': %s", f->path, why);
    }
    if (s != TT_OK) return s;
    if ((s = tt__gpt_init_for_load(m, &cfg)) != TT_OK) return s;
    bool grad = tt_set_grad_enabled(false);
    copy_all(f, m);
    tt_set_grad_enabled(grad);
    if ((s = tt_gpt_check_finite(m)) != TT_OK) {
        snprintf(why, sizeof why, "%s", tt_last_error());
        s = tt_set_error(TT_ERR_FORMAT, "gguf '%s': %s", f->path, why);
        tt_gpt_free(m);
    }
    return s;
}

tt_status tt_gpt_load_gguf(tt_gpt *m, const char *path) {
    TT_CHECK(m && path, "model and path must be given");
    memset(m, 0, sizeof *m);
    tt_gguf f;
    tt_status s = tt_gguf_open(&f, path);
    if (s == TT_OK) s = tt_gpt_load_gguf_file(m, &f);
    tt_gguf_close(&f);
    return s;
}

// The GPT's config as data: one table of fields (name, type, offset, default, range) that
// drives the defaults, validation, text parsing and checkpoint save/load; the GPT-2 presets; the
// parameter count and memory of a config. Not here: the checkpoint (gpt_checkpoint.c).
#include "gpt_internal.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- the field table ----

static const char *const pos_names[] = {"learned", "rope"};
static const char *const norm_names[] = {"layernorm", "rmsnorm", "rmsnorm_noweight"};
_Static_assert(TT_NORM_KIND_COUNT == 3, "the norm field names every kind");
// The MLP takes every elementwise activation (nn/activation.h's table) and the gated swiglu,
// softmax aside: it is the last value, so the field's range ends before it.
_Static_assert(TT_ACT_SOFTMAX == TT_ACT_COUNT - 1, "the activation field's range must end "
               "at the last elementwise activation");

#define I64 TT_GPT_FIELD_I64
#define F64 TT_GPT_FIELD_F64
#define BOOL TT_GPT_FIELD_BOOL
#define ENUM TT_GPT_FIELD_ENUM
#define AT(member) offsetof(tt_gpt_config, member)
// Rows in checkpoint order: the first 13 are those of the first char_gpt checkpoints. The size
// ranges keep every parameter count of a valid config within int64 (12 n_embd^2 n_layer and
// 3 n_embd mlp_hidden n_layer < 2^63).
const tt_gpt_field tt_gpt_fields[] = {
    // name          type  offset             default  lo  hi          names
    {"vocab_size", I64, AT(vocab_size), 65, 1, 2147483647, NULL, "tokens in the vocabulary"},
    {"block_size", I64, AT(block_size), 64, 1, 1 << 20, NULL, "longest context"},
    {"n_layer", I64, AT(n_layer), 4, 1, 100000, NULL, "transformer blocks"},
    {"n_head", I64, AT(n_head), 4, 1, 1 << 20, NULL, "attention heads"},
    {"n_kv_head", I64, AT(n_kv_head), 4, 0, 1 << 20, NULL,
     "key/value heads (grouped-query attention when < n_head; 0 means n_head)"},
    {"n_embd", I64, AT(n_embd), 128, 1, 1 << 20, NULL, "channels"},
    {"dropout", F64, AT(dropout), 0.0, 0, 1, NULL, "dropout probability"},
    {"bias", BOOL, AT(bias), 0, 0, 1, NULL, "biases in Linear layers and LayerNorms"},
    {"positional", ENUM, AT(positional), TT_POS_LEARNED, 0, 1, pos_names,
     "learned position embedding or rotary"},
    {"norm", ENUM, AT(norm), TT_NORM_LAYERNORM, 0, 2, norm_names,
     "layernorm, rmsnorm (with a gain) or rmsnorm_noweight"},
    {"activation", ENUM, AT(activation), TT_ACT_GELU, 0, TT_ACT_SWIGLU, tt_act_names,
     "MLP activation (gelu exact, gelu_tanh as GPT-2, swiglu gated as Llama)"},
    {"tie_weights", BOOL, AT(tie_weights), 1, 0, 1, NULL, "the head shares the token embedding"},
    {"qk_norm", BOOL, AT(qk_norm), 0, 0, 1, NULL, "RMSNorm on each head's q and k"},
    {"qkv_bias", BOOL, AT(qkv_bias), 1, 0, 1, NULL,
     "biases in the q/k/v projections too (when bias)"},
    {"mlp_hidden", I64, AT(mlp_hidden), 0, 0, 1 << 22, NULL, "MLP hidden size (0: 4 n_embd)"},
    {"rope_base", F64, AT(rope_base), 10000.0, 1, 1e12, NULL, "RoPE base theta (with rope)"},
    {"norm_eps", F64, AT(norm_eps), 1e-5, 1e-12, 1, NULL, "epsilon of the norms"},
};
const int tt_gpt_nfields = (int)(sizeof tt_gpt_fields / sizeof tt_gpt_fields[0]);
#undef I64
#undef F64
#undef BOOL
#undef ENUM
#undef AT

const tt_gpt_field *tt_gpt_field_find(const char *key) {
    if (!key) return NULL;
    for (int i = 0; i < tt_gpt_nfields; i++) {
        const tt_gpt_field *f = &tt_gpt_fields[i];
        if (strcmp(f->name, key) == 0) return f;
    }
    return NULL;
}

// Enums are stored as the compiler's enum type: int-sized on every ABI we build for.
_Static_assert(sizeof(tt_pos_kind) == sizeof(int) && sizeof(tt_nn_norm_kind) == sizeof(int) &&
               sizeof(tt_act) == sizeof(int), "config enums must be int-sized");

double tt_gpt_field_get(const tt_gpt_config *cfg, const tt_gpt_field *f) {
    const char *p = (const char *)cfg + f->offset;
    switch (f->type) {
        case TT_GPT_FIELD_I64: return (double)*(const int64_t *)p;
        case TT_GPT_FIELD_F64: return *(const double *)p;
        case TT_GPT_FIELD_BOOL: return *(const bool *)p ? 1.0 : 0.0;
        case TT_GPT_FIELD_ENUM: return (double)*(const int *)p;
    }
    return 0;
}

void tt_gpt_field_set(tt_gpt_config *cfg, const tt_gpt_field *f, double v) {
    char *p = (char *)cfg + f->offset;
    switch (f->type) {
        case TT_GPT_FIELD_I64:  // saturated: a double beyond int64 has no int64 value
            *(int64_t *)p = v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN : (int64_t)v;
            break;
        case TT_GPT_FIELD_F64: *(double *)p = v; break;
        case TT_GPT_FIELD_BOOL: *(bool *)p = v != 0; break;
        case TT_GPT_FIELD_ENUM: *(int *)p = (int)v; break;
    }
}

static const char *enum_name(const tt_gpt_field *f, double v) {
    if (!(v >= f->lo && v <= f->hi)) return NULL;
    return f->names[(int)(v - f->lo)];
}

// "learned, rope": the allowed names of an enum field.
static void enum_list(const tt_gpt_field *f, char *buf, size_t n) {
    buf[0] = 0;
    for (int v = (int)f->lo; v <= (int)f->hi; v++) {
        const char *name = f->names[v - (int)f->lo];
        if (!name) continue;
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, "%s%s", k ? ", " : "", name);
    }
}

static bool in_range(const tt_gpt_field *f, double v) {
    switch (f->type) {
        case TT_GPT_FIELD_I64: return v >= f->lo && v <= f->hi;
        case TT_GPT_FIELD_F64: return v >= f->lo && v < f->hi;
        case TT_GPT_FIELD_BOOL: return v == 0 || v == 1;
        case TT_GPT_FIELD_ENUM: return enum_name(f, v) != NULL;
    }
    return false;
}

// TT_ERR_ARG: "<label> = <v> is out of range; use ..." for a value outside the field's range.
static tt_status range_error(const tt_gpt_field *f, const char *label, double v) {
    char list[256];
    switch (f->type) {
        case TT_GPT_FIELD_I64:
            return tt_set_error(TT_ERR_ARG, "%s = %.17g is out of range; use a value in "
                                "[%.17g, %.17g]", label, v, f->lo, f->hi);
        case TT_GPT_FIELD_F64:
            return tt_set_error(TT_ERR_ARG, "%s = %g is out of range; use a value in [%g, %g)",
                                label, v, f->lo, f->hi);
        case TT_GPT_FIELD_BOOL:
            return tt_set_error(TT_ERR_ARG, "%s = %g is not a boolean; use 0 or 1", label, v);
        case TT_GPT_FIELD_ENUM:
            enum_list(f, list, sizeof list);
            return tt_set_error(TT_ERR_ARG, "%s = %g is not allowed; use one of %s", label, v,
                                list);
    }
    return TT_ERR_ARG;
}

tt_status tt__gpt_field_check(const tt_gpt_field *f, const char *label, double v) {
    return in_range(f, v) ? TT_OK : range_error(f, label, v);
}

tt_status tt_gpt_field_parse(tt_gpt_config *cfg, const tt_gpt_field *f, const char *text) {
    TT_CHECK(cfg && f && text, "cfg, field and text must not be NULL");
    const char *label = f->name;  // the programs' flag spellings are theirs (examples/gpt/)
    char *end = NULL;
    double v = 0;
    switch (f->type) {
        case TT_GPT_FIELD_I64: {
            errno = 0;
            long long x = strtoll(text, &end, 10);
            if (!*text || *end)
                return tt_set_error(TT_ERR_ARG, "%s expects an integer, got '%s'; e.g. %s %g",
                                    label, text, label, f->def);
            if (errno == ERANGE)
                return tt_set_error(TT_ERR_ARG, "%s %s is out of range; use a value in "
                                    "[%.17g, %.17g]", label, text, f->lo, f->hi);
            v = (double)x;
            break;
        }
        case TT_GPT_FIELD_F64:
            errno = 0;
            v = strtod(text, &end);  // ERANGE on underflow: v is the (denormal) number
            if (!*text || *end || isnan(v))
                return tt_set_error(TT_ERR_ARG, "%s expects a number, got '%s'; e.g. %s 0.1",
                                    label, text, label);
            if (!isfinite(v))
                return tt_set_error(TT_ERR_ARG, "%s %s is out of range; use a value in "
                                    "[%g, %g)", label, text, f->lo, f->hi);
            break;
        case TT_GPT_FIELD_BOOL:
            if (strcmp(text, "1") == 0 || strcmp(text, "true") == 0) v = 1;
            else if (strcmp(text, "0") == 0 || strcmp(text, "false") == 0) v = 0;
            else return tt_set_error(TT_ERR_ARG, "%s expects true or false, got '%s'", label,
                                     text);
            break;
        case TT_GPT_FIELD_ENUM: {
            bool found = false;
            for (int i = (int)f->lo; i <= (int)f->hi && !found; i++) {
                const char *name = f->names[i - (int)f->lo];
                if (name && strcmp(name, text) == 0) {
                    v = i;
                    found = true;
                }
            }
            if (!found) {
                char list[256];
                enum_list(f, list, sizeof list);
                return tt_set_error(TT_ERR_ARG, "%s expects one of %s, got '%s'", label, list,
                                    text);
            }
            break;
        }
    }
    tt_gpt_field_set(cfg, f, v);
    return TT_OK;
}

const char *tt_gpt_field_format(const tt_gpt_config *cfg, const tt_gpt_field *f, char *buf,
                                size_t n) {
    TT_CHECK(buf && n > 0, "tt_gpt_field_format needs a buffer, got %p of %zu bytes",
             (void *)buf, n);
    double v = tt_gpt_field_get(cfg, f);
    const char *name;
    switch (f->type) {
        case TT_GPT_FIELD_I64: snprintf(buf, n, "%lld", (long long)v); break;
        case TT_GPT_FIELD_F64:  // the shortest text that parses back to v ("1e-05", not %.17g's)
            for (int digits = 6; digits <= 17; digits++) {
                snprintf(buf, n, "%.*g", digits, v);
                if (strtod(buf, NULL) == v) break;
            }
            break;
        case TT_GPT_FIELD_BOOL: snprintf(buf, n, "%s", v != 0 ? "true" : "false"); break;
        case TT_GPT_FIELD_ENUM:
            name = enum_name(f, v);
            if (name) snprintf(buf, n, "%s", name);
            else snprintf(buf, n, "%d", (int)v);
            break;
    }
    return buf;
}

// ---- defaults, validation, presets ----

tt_gpt_config tt_gpt_config_default(void) {
    tt_gpt_config c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < tt_gpt_nfields; i++)
        tt_gpt_field_set(&c, &tt_gpt_fields[i], tt_gpt_fields[i].def);
    return c;
}

tt_status tt_gpt_config_validate(const tt_gpt_config *c) {
    if (!c) return tt_set_error(TT_ERR_ARG, "gpt config is NULL");
    for (int i = 0; i < tt_gpt_nfields; i++) {
        const tt_gpt_field *f = &tt_gpt_fields[i];
        double v = tt_gpt_field_get(c, f);
        tt_status st = tt__gpt_field_check(f, f->name, v);
        if (st != TT_OK) return st;
    }
    if (c->n_embd % c->n_head != 0)
        return tt_set_error(TT_ERR_ARG, "n_embd=%lld is not divisible by n_head=%lld; pick "
                            "n_head among the divisors of n_embd", (long long)c->n_embd,
                            (long long)c->n_head);
    int64_t kv = c->n_kv_head ? c->n_kv_head : c->n_head;
    if (c->n_head % kv != 0)
        return tt_set_error(TT_ERR_ARG, "n_head=%lld is not divisible by n_kv_head=%lld; each "
                            "key/value head must serve a whole number of query heads",
                            (long long)c->n_head, (long long)kv);
    int64_t hs = c->n_embd / c->n_head;
    if (c->positional == TT_POS_ROPE && hs % 2 != 0)
        return tt_set_error(TT_ERR_ARG, "positional=rope rotates pairs, so the head size "
                            "n_embd / n_head = %lld / %lld = %lld must be even",
                            (long long)c->n_embd, (long long)c->n_head, (long long)hs);
    return TT_OK;
}

tt_status tt_gpt_config_preset(const char *name, tt_gpt_config *out) {
    TT_CHECK(out, "out must not be NULL");
    tt_gpt_config c = tt_gpt_config_default();
    if (name && strcmp(name, "baby") == 0) {
        *out = c;
        return TT_OK;
    }
    // GPT-2 as OpenAI trained and released it.
    c.vocab_size = 50257;
    c.block_size = 1024;
    c.dropout = 0.1;
    c.bias = true;
    c.qkv_bias = true;
    c.activation = TT_ACT_GELU_TANH;
    c.tie_weights = true;
    if (name && strcmp(name, "gpt2") == 0) {
        c.n_layer = 12, c.n_head = 12, c.n_embd = 768;
    } else if (name && strcmp(name, "gpt2-medium") == 0) {
        c.n_layer = 24, c.n_head = 16, c.n_embd = 1024;
    } else {
        return tt_set_error(TT_ERR_ARG, "unknown GPT preset '%s'; use baby, gpt2 or "
                            "gpt2-medium", name ? name : "(null)");
    }
    c.n_kv_head = c.n_head;
    *out = c;
    return TT_OK;
}

// Parameters of one norm of width C.
static int64_t norm_params(const tt_gpt_config *c, int64_t C) {
    if (c->norm == TT_NORM_RMSNORM_NOWEIGHT) return 0;
    return c->norm == TT_NORM_LAYERNORM && c->bias ? 2 * C : C;
}

int64_t tt_gpt_config_mlp_hidden(const tt_gpt_config *c) {
    return c->mlp_hidden ? c->mlp_hidden : 4 * c->n_embd;
}

int64_t tt_gpt_config_num_params(const tt_gpt_config *c, bool non_embedding) {
    TT_CHECK(tt_gpt_config_validate(c) == TT_OK, "invalid config: %s", tt_last_error());
    int64_t V = c->vocab_size, C = c->n_embd, H = tt_gpt_config_mlp_hidden(c);
    int64_t hs = C / c->n_head, kv = (c->n_kv_head ? c->n_kv_head : c->n_head) * hs;
    int64_t qkv_b = c->bias && c->qkv_bias, b = c->bias;
    int64_t attn = C * C + 2 * C * kv + qkv_b * (C + 2 * kv)  // q, k, v
                   + C * C + b * C                           // o_proj
                   + (c->qk_norm ? 2 * hs : 0);              // q_norm, k_norm
    int64_t n_in = c->activation == TT_ACT_SWIGLU ? 2 : 1;   // gate_proj and up_proj, or fc
    int64_t mlp = n_in * (C * H + b * H) + H * C + b * C;
    int64_t block = 2 * norm_params(c, C) + attn + mlp;
    int64_t n = V * C + c->n_layer * block + norm_params(c, C);
    if (!c->tie_weights) n += V * C;
    if (c->positional == TT_POS_LEARNED && !non_embedding) n += c->block_size * C;
    return n;
}

// ---- memory ----

// Per token per layer, the f32 activations a training step keeps for the backward: the
// block's input, ln_1's output, q, k, v, the attention output, the residual sum, ln_2's
// output (6 C), the MLP's fc output and activation (2 H; gated: gate, up, silu and product,
// 4 H): 14 C at least with H = 4 C.
#define TRAIN_ACTS_PER_C 6.0
// A forward without grad still holds its tensors until its scope ends: 2 C per token per
// layer at least (measured: about 3.5 C), the logits and a layer's MLP hidden (H).

double tt_gpt_memory_estimate(const tt_gpt_config *c, int64_t B, int64_t T, bool training) {
    double P = (double)tt_gpt_config_num_params(c, false), C = (double)c->n_embd;
    double L = (double)c->n_layer, V = (double)c->vocab_size, N = (double)c->block_size;
    double H = (double)tt_gpt_config_mlp_hidden(c), tok = (double)B * (double)T;
    double acts = TRAIN_ACTS_PER_C * C + (c->activation == TT_ACT_SWIGLU ? 4.0 : 2.0) * H;
    double bytes = 4.0 * P + 4.0 * L * N * N;  // parameters, causal masks
    if (training)
        bytes += 12.0 * P + 4.0 * tok * (acts * L + 2.0 * V);
    else
        bytes += 4.0 * tok * (V + 2.0 * C * L + H) + 8.0 * L * N * C;
    return bytes;
}

tt_status tt_gpt_check_memory(const tt_gpt_config *c, int64_t B, int64_t T, bool training,
                              const char *what) {
    double need = tt_gpt_memory_estimate(c, B, T, training);
    const char *limit_name;
    double lim = (double)tt_memory_limit(&limit_name), gib = 1073741824.0;
    if (need <= lim) return TT_OK;
    double P = (double)tt_gpt_config_num_params(c, false);
    return tt_set_error(TT_ERR_NOMEM, "%s needs at least %.1f GiB (%.2f%s parameters%s, batch "
                        "%lld x %lld tokens) but this machine allows %.1f GiB (%s)", what,
                        need / gib, P >= 1e9 ? P / 1e9 : P / 1e6, P >= 1e9 ? "B" : "M",
                        training ? " with gradients and AdamW state" : "", (long long)B,
                        (long long)T, lim / gib, limit_name);
}

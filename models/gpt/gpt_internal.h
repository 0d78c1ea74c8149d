// Internals of models/gpt shared by its files and the tests: the module tree's pieces, the KV
// cache and the incremental forward that uses it. Not installed, not part of the public API.
#ifndef TT_GPT_INTERNAL_H
#define TT_GPT_INTERNAL_H

#include "gpt.h"
#include "../../tensor/tensor_ext.h"

// tokens (B, T) at positions pos .. pos + T - 1 -> x (B, T, C): embeddings and dropout.
tt_tensor *tt__gpt_embed(tt_gpt *m, tt_tensor *tokens, int64_t pos);
// x (..., C) after ln_f -> logits (..., V) with the tied or untied head.
tt_tensor *tt__gpt_head(tt_gpt *m, tt_tensor *x);

// Rebuilds m->params from the module tree (after tt_gpt_init, or a change such as
// tt_gpt_low_rank that replaces parameters). gpt.c.
void tt__gpt_list_params(tt_gpt *m);
// The blocks container of the tree: a chain whose children "0" .. are the blocks (its
// parameters "blocks.<l>.*" under the prefix "blocks"). gpt_module.c.
tt_module tt__gpt_blocks_module(tt_gpt *m);

// TT_OK, or TT_ERR_MISMATCH when c's causal masks (n_layer block_size^2 i32 entries) exceed
// both 2^26 entries and 64x its parameter count: a config no real model has, which would make
// a small file allocate gigabytes. gpt_checkpoint.c.
tt_status tt__gpt_check_masks(const tt_gpt_config *c);
// tt_gpt_init without the random draws (the parameters are left zero, ones for the norms):
// for a loader about to overwrite every parameter. The dropout stream is seeded as usual.
tt_status tt__gpt_init_for_load(tt_gpt *m, const tt_gpt_config *cfg);
// TT_OK when v is within f's range (an enum: one of its names); else TT_ERR_ARG
// "<label> = <v> is out of range; use ..." (tt_gpt_config_validate's message). gpt_config.c.
tt_status tt__gpt_field_check(const tt_gpt_field *f, const char *label, double v);

// NULL when c is GPT-2-shaped, else the feature GPT-2 lacks ("RoPE positions (GPT-2 learns
// them)", ...), for the exporters' messages. gpt2_hf.c.
const char *tt__gpt2_unsupported(const tt_gpt_config *c);
// The same for Llama's layout (RoPE, RMSNorm with a gain, SwiGLU, no bias, no QK-norm).
// llama_hf.c.
const char *tt__llama_unsupported(const tt_gpt_config *c);

// ---- Hugging Face safetensors helpers (gpt2_hf.c; llama_hf.c uses them too) ----
// `what` names the layout in messages ("GPT-2", "Llama").

// printf into buf (TT_NAME_MAX bytes); aborts when the name does not fit. Returns buf.
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
const char *
tt__hf_name(char *buf, const char *fmt, ...);
// TT_OK when f holds a float tensor `name` of shape (ndim, shape); else TT_ERR_MISMATCH naming
// it: absent, not a float dtype, or another shape. *out: its entry (NULL when absent).
tt_status tt__hf_expect(const tt_safetensors *f, const char *what, const char *name, int ndim,
                        const int64_t *shape, const tt_st_info **out);
// TT_ERR_MISMATCH listing (the first 5 of) f's tensors that are neither used (by index) nor
// buffers (is_buffer(name)); TT_OK when there are none.
tt_status tt__hf_check_unexpected(const tt_safetensors *f, const char *what, const bool *used,
                                  bool (*is_buffer)(const char *name));
// Status s with the last error's message prefixed "<what> safetensors '<path>': ".
tt_status tt__hf_wrap_error(tt_status s, const char *what, const char *path);

// ---- KV cache ----
// Per layer, the keys and values of positions 0 .. len-1 after QK-norm and RoPE and before the
// grouped-query repeat: k[l], v[l] are (1, NKV, block_size, HS) buffers of the model's dtype.
typedef struct tt__kv_cache {
    tt_tensor **k, **v;  // n_layer each (owned)
    int64_t n_layer;
    int64_t len;         // positions filled
    int64_t max_len;     // block_size
} tt__kv_cache;

void tt__kv_cache_init(tt__kv_cache *c, const tt_gpt *m);
void tt__kv_cache_reset(tt__kv_cache *c);  // len = 0 (the buffers are reused)
void tt__kv_cache_free(tt__kv_cache *c);   // safe on a zeroed struct

// Feeds tokens[0 .. n) at positions len .. len + n - 1 (len + n <= block_size, aborts
// otherwise), appends their keys and values to the cache and returns the logits of the last
// one, (V,). Grad mode should be off (nothing here is meant to be differentiated).
tt_tensor *tt__gpt_forward_cached(tt_gpt *m, tt__kv_cache *c, const int32_t *tokens,
                                  int64_t n);

// ---- sampling (sampling.c) and sessions (session.c) ----

// Aborts unless o's fields are in range; messages name func and the field.
void tt__sample_opts_check(const tt_sample_opts *o, const char *func);

typedef struct tt__sample_result {
    int32_t token;
    double logprob;  // when asked for
    tt_gpt_logprob top[TT_GPT_TOP_LOGPROBS];
    int n_top;
} tt__sample_result;

// One token from the logits p (V) (overwritten) with o (checked by the caller), the penalties
// over hist[0 .. n_hist); logprob and top (o->top_logprobs) when want_logprobs.
tt__sample_result tt__sample_f64(double *p, int64_t V, const tt_sample_opts *o,
                                 const int32_t *hist, int64_t n_hist, bool want_logprobs,
                                 tt_rng *rng);

// tt_gpt_session_add drawing from rng (borrowed) instead of a generator seeded with
// r->sample.seed: tt_gpt_generate's.
int tt__gpt_session_add_rng(tt_gpt_session *s, const int32_t *prompt, int64_t n_prompt,
                            const tt_gpt_request *r, tt_rng *rng);

#endif  // TT_GPT_INTERNAL_H

// GPT generation: the KV cache with its incremental forward (tests and benches use it) and
// tt_gpt_generate, one sequence through a session (session.c; the samplers in sampling.c).
// The model, its training forward and the loss are in gpt.c.
//
// Letters: T new tokens, S cached positions after them, C channels, V vocab,
// NH query heads, NKV key/value heads, HS head size.
#include "gpt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- KV cache ----

void tt__kv_cache_init(tt__kv_cache *c, const tt_gpt *m) {
    TT_CHECK(m->blocks, "the model is not initialized; call tt_gpt_init first");
    memset(c, 0, sizeof *c);
    c->n_layer = m->cfg.n_layer;
    c->max_len = m->cfg.block_size;
    int64_t nkv = m->cfg.n_kv_head, hs = m->cfg.n_embd / m->cfg.n_head;
    tt_dtype dt = m->wte.weight->dtype;
    c->k = TT_CALLOC((size_t)c->n_layer, sizeof *c->k);
    c->v = TT_CALLOC((size_t)c->n_layer, sizeof *c->v);
    for (int64_t l = 0; l < c->n_layer; l++) {
        c->k[l] = tt__new_zeros(dt, 4, (int64_t[]){1, nkv, c->max_len, hs});  // (1,NKV,L,HS)
        c->v[l] = tt__new_zeros(dt, 4, (int64_t[]){1, nkv, c->max_len, hs});  // (1,NKV,L,HS)
    }
}

void tt__kv_cache_reset(tt__kv_cache *c) { c->len = 0; }

void tt__kv_cache_free(tt__kv_cache *c) {
    for (int64_t l = 0; c->k && l < c->n_layer; l++) {
        tt_release(c->k[l]);
        tt_release(c->v[l]);
    }
    tt_free(c->k);
    tt_free(c->v);
    memset(c, 0, sizeof *c);
}

// ---- incremental forward ----

tt_tensor *tt__gpt_forward_cached(tt_gpt *m, tt__kv_cache *c, const int32_t *tokens,
                                  int64_t n) {
    TT_CHECK(c->k && c->n_layer == m->cfg.n_layer, "the cache was not built for this model; "
             "call tt__kv_cache_init");
    TT_CHECK(n >= 1 && c->len + n <= c->max_len, "cannot feed %lld tokens at position %lld: "
             "the cache holds block_size=%lld positions; reset it and refeed a shorter window",
             (long long)n, (long long)c->len, (long long)c->max_len);
    int64_t pos = c->len, V = m->cfg.vocab_size;
    tt_scope_begin();
    tt_tensor *idx = tt_from_data(TT_I32, TT_SHAPE(1, n), tokens);    // (1, T)
    tt_tensor *x = tt__gpt_embed(m, idx, pos);                         // (1, T, C)
    for (int64_t l = 0; l < m->cfg.n_layer; l++)
        x = tt_nn_block_forward_cached(&m->blocks[l], x, c->k[l], c->v[l], pos);
    x = tt_nn_norm_forward(&m->ln_f, tt_slice(x, 1, n - 1, n, 1));   // (1, 1, C)
    tt_tensor *logits = tt_reshape(tt__gpt_head(m, x), TT_SHAPE(V));  // (V,)
    c->len += n;
    tt_keep(logits);
    tt_scope_end();
    return logits;
}

// ---- generation ----

typedef struct generate_ctx {
    int32_t *out;
    void (*on_token)(int32_t token, void *ctx);
    void *ctx;
} generate_ctx;

// The session's callback for tt_gpt_generate: the token into out, then the caller's callback.
static void generate_token(const tt_gpt_token_event *e, void *ctx) {
    generate_ctx *g = ctx;
    *g->out++ = e->token;
    if (g->on_token) g->on_token(e->token, g->ctx);
}

void tt_gpt_generate(tt_gpt *m, const int32_t *prompt, int64_t n_prompt, int64_t n_new,
                     const tt_sample_opts *opts, tt_rng *rng, int32_t *out,
                     void (*on_token)(int32_t token, void *ctx), void *ctx) {
    TT_CHECK(m && m->blocks, "the model is not initialized; call tt_gpt_init first");
    TT_CHECK(prompt && n_prompt >= 1, "the prompt needs at least one token (got n_prompt=%lld);"
             " start from a newline or any token of the vocab", (long long)n_prompt);
    TT_CHECK(n_new >= 0 && (n_new == 0 || out), "n_new=%lld must be >= 0 and out must have "
             "room for it", (long long)n_new);
    TT_CHECK(rng, "rng is NULL; sampling draws from an explicit tt_rng");
    tt_sample_opts o = opts ? *opts : tt_sample_opts_default();
    tt__sample_opts_check(&o, __func__);
    int64_t V = m->cfg.vocab_size;
    for (int64_t i = 0; i < n_prompt; i++)
        TT_CHECK(prompt[i] >= 0 && prompt[i] < V, "prompt token %lld is %d, outside the "
                 "vocab [0, %lld)", (long long)i, (int)prompt[i], (long long)V);
    if (n_new == 0) return;
    generate_ctx g = {out, on_token, ctx};
    tt_gpt_session *s = tt_gpt_session_new(m, &(tt_gpt_session_config){
        .on_token = generate_token, .ctx = &g});
    tt_gpt_request r = {.sample = o, .max_new_tokens = n_new};
    tt__gpt_session_add_rng(s, prompt, n_prompt, &r, rng);
    tt_gpt_session_run(s);
    tt_gpt_session_free(s);
}

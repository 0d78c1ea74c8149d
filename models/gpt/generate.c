// GPT generation: the KV cache with its incremental forward, sampling from logits
// (temperature, top-k, nucleus) and the generation loop with its context-window rule.
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

// ---- sampling ----

tt_sample_opts tt_sample_opts_default(void) {
    return (tt_sample_opts){.temperature = 0.8, .top_k = 200, .top_p = 1.0, .use_cache = true};
}

// Aborts unless the sampling options are in range; messages name func, the public function
// the user called.
static void check_opts(const tt_sample_opts *o, const char *func) {
    TT_CHECK_IN(func, isfinite(o->temperature) && o->temperature >= 0, "temperature must be >= 0 "
                "(0 is greedy), got %g; pick a finite value (0.8 is the default)",
                o->temperature);
    TT_CHECK_IN(func, o->top_k >= 0, "top_k must be >= 0 (0 turns it off), got %d", o->top_k);
    TT_CHECK_IN(func, o->top_p > 0 && o->top_p <= 1, "top_p must be in (0, 1] (1 turns it off), "
                "got %g", o->top_p);
    TT_CHECK_IN(func, o->n_vocab >= 0, "n_vocab must be >= 0 (0 samples every id), got %lld",
                (long long)o->n_vocab);
}

typedef struct ranked {
    double p;
    int64_t i;
} ranked;

// Descending by value; ties by increasing index, so the order is total and reproducible.
static int by_value_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

int32_t tt_sample_logits(const tt_tensor *logits, const tt_sample_opts *opts, tt_rng *rng) {
    TT_CHECK(logits && logits->ndim == 1 && tt_dtype_is_float(logits->dtype) &&
             logits->shape[0] >= 1, "logits must be a non-empty float vector (V,), got %s %s",
             logits ? tt__shape(logits) : "NULL", logits ? tt_dtype_name(logits->dtype) : "");
    TT_CHECK(logits->shape[0] <= INT32_MAX, "vocab of %lld does not fit an int32 token",
             (long long)logits->shape[0]);
    tt_sample_opts o = opts ? *opts : tt_sample_opts_default();
    check_opts(&o, __func__);
    double *p = TT_MALLOC((size_t)logits->shape[0] * sizeof *p);  // (V)
    tt_to_f64_array(logits, p);
    int64_t V = o.n_vocab > 0 && o.n_vocab < logits->shape[0] ? o.n_vocab : logits->shape[0];
    int64_t best = -1;
    for (int64_t i = 0; i < V; i++) {
        TT_CHECK(!isnan(p[i]), "logit %lld is NaN", (long long)i);
        if (p[i] > -INFINITY && (best < 0 || p[i] > p[best])) best = i;
    }
    TT_CHECK(best >= 0, "every logit is -inf: no token can be sampled");
    if (o.temperature == 0) {  // greedy: the first maximum
        tt_free(p);
        return (int32_t)best;
    }

    // Temperature, then top-k on the scaled logits (every token tied with the k-th is kept,
    // as nanoGPT's `logits < v[:, [-1]]`), then softmax in double.
    for (int64_t i = 0; i < V; i++) p[i] /= o.temperature;
    if (!isfinite(p[best])) {  // a temperature so small the logits overflow: greedy's limit
        tt_free(p);
        return (int32_t)best;
    }
    ranked *r = TT_MALLOC((size_t)V * sizeof *r);  // (V)
    if (o.top_k > 0 && o.top_k < V) {
        for (int64_t i = 0; i < V; i++) r[i] = (ranked){p[i], i};
        qsort(r, (size_t)V, sizeof *r, by_value_desc);
        double kth = r[o.top_k - 1].p;
        for (int64_t i = 0; i < V; i++)
            if (p[i] < kth) p[i] = -INFINITY;
    }
    double mx = p[best], total = 0;  // the maximum survives top-k
    for (int64_t i = 0; i < V; i++) {
        p[i] = p[i] == -INFINITY ? 0.0 : exp(p[i] - mx);
        total += p[i];
    }
    for (int64_t i = 0; i < V; i++) p[i] /= total;

    // Nucleus (Holtzman et al. 2020): the smallest set of the most likely tokens whose
    // probabilities sum to >= top_p (at least one token); the rest get probability 0.
    total = 1.0;
    if (o.top_p < 1.0) {
        for (int64_t i = 0; i < V; i++) r[i] = (ranked){p[i], i};
        qsort(r, (size_t)V, sizeof *r, by_value_desc);
        double cum = 0;
        int64_t keep = 0;
        while (keep < V && (keep == 0 || cum < o.top_p) && r[keep].p > 0) cum += r[keep++].p;
        for (int64_t j = keep; j < V; j++) p[r[j].i] = 0.0;
        total = cum;
    }
    tt_free(r);

    // Inverse CDF in index order with one uniform draw.
    double u = tt_rng_uniform(rng) * total, cum = 0;
    int64_t tok = -1;
    for (int64_t i = 0; i < V; i++) {
        if (p[i] <= 0) continue;
        tok = i;
        cum += p[i];
        if (u < cum) break;
    }
    tt_free(p);
    return (int32_t)tok;
}

// ---- generation ----

// The logits (V,) that follow win[0 .. len) into `next` (V,). With the cache, either one step
// with the newest token (step) or a rebuild from the whole window; without, a full forward.
static void window_logits(tt_gpt *m, tt__kv_cache *c, const int32_t *win, int64_t len,
                          bool use_cache, bool step, tt_tensor *next) {
    tt_scope_begin();
    tt_tensor *logits;
    if (use_cache && step) {
        logits = tt__gpt_forward_cached(m, c, win + len - 1, 1);
    } else if (use_cache) {
        tt__kv_cache_reset(c);
        logits = tt__gpt_forward_cached(m, c, win, len);
    } else {
        tt_tensor *idx = tt_from_data(TT_I32, TT_SHAPE(1, len), win);  // (1, T)
        tt_tensor *all = tt_gpt_forward(m, idx);                        // (1, T, V)
        logits = tt_reshape(tt_slice(all, 1, len - 1, len, 1), TT_SHAPE(m->cfg.vocab_size));
    }
    tt_copy_(next, logits);
    tt_scope_end();
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
    check_opts(&o, __func__);
    int64_t L = m->cfg.block_size, V = m->cfg.vocab_size;
    for (int64_t i = 0; i < n_prompt; i++)
        TT_CHECK(prompt[i] >= 0 && prompt[i] < V, "prompt token %lld is %d, outside the "
                 "vocab [0, %lld)", (long long)i, (int)prompt[i], (long long)V);
    if (n_new == 0) return;

    // The window: the last block_size tokens of the prompt, then the generated ones; when a
    // new token does not fit, the window keeps its newer half (the new token included).
    int32_t *win = TT_MALLOC((size_t)L * sizeof *win);  // (L)
    int64_t len = n_prompt < L ? n_prompt : L, keep = (L + 1) / 2;
    memcpy(win, prompt + n_prompt - len, (size_t)len * sizeof *win);

    bool grad = tt_set_grad_enabled(false), training = m->drop.training;
    tt_gpt_train(m, false);
    tt__kv_cache cache = {0};
    if (o.use_cache) tt__kv_cache_init(&cache, m);
    tt_tensor *next = tt__new(TT_F64, 1, (int64_t[]){V});  // (V) logits of the next token

    window_logits(m, &cache, win, len, o.use_cache, false, next);
    for (int64_t i = 0; i < n_new; i++) {
        int32_t tok = tt_sample_logits(next, &o, rng);
        out[i] = tok;
        if (on_token) on_token(tok, ctx);
        if (i == n_new - 1) break;
        bool step = len < L;
        if (step) {
            win[len++] = tok;
        } else {  // full: keep the newer half
            memmove(win, win + len - (keep - 1), (size_t)(keep - 1) * sizeof *win);
            win[keep - 1] = tok;
            len = keep;
        }
        window_logits(m, &cache, win, len, o.use_cache, step, next);
    }

    tt_release(next);
    tt__kv_cache_free(&cache);
    tt_free(win);
    tt_gpt_train(m, training);
    tt_set_grad_enabled(grad);
}

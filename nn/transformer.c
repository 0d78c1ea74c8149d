// The transformer pieces: the feed-forward block (the MLP), multi-head attention (causal or
// not, grouped-query, optional QK-norm and RoPE, optional attention and key-padding masks) and
// the pre-norm block. The attention core is the fused op (tt_scaled_dot_product_attention, no
// (B, NH, T, T) matrix) unless dropout on the weights is active (it needs them) or new queries
// follow cached ones: then the matmul / softmax / dropout composition.
//
// Letters: B batch, T time, C channels (n_embd), NH query heads, NKV key/value heads,
// HS head size (C / NH), H MLP hidden size.
#include "nn_internal.h"

#include <math.h>
#include <string.h>

// ---- feed-forward ----

void tt_nn_feedforward_init(tt_nn_feedforward *m, int64_t dim, int64_t hidden, tt_act act,
                            bool bias, double dropout, tt_rng *rng) {
    TT_CHECK(dim > 0 && hidden > 0, "sizes must be positive, got dim=%lld hidden=%lld",
             (long long)dim, (long long)hidden);
    tt__check_act(act, __func__);
    memset(m, 0, sizeof *m);
    tt_nn_linear_init(&m->fc, dim, hidden, bias, rng);
    if (act == TT_ACT_SWIGLU) tt_nn_linear_init(&m->up, dim, hidden, bias, rng);
    tt_nn_linear_init(&m->proj, hidden, dim, bias, rng);
    m->act = act;
    tt_nn_dropout_init(&m->drop, dropout, rng);
}

// x (..., C) -> fc (..., H) -> act (gated: silu(fc) * up) -> proj (..., C) -> dropout.
tt_tensor *tt_nn_feedforward_forward(tt_nn_feedforward *m, tt_tensor *x) {
    tt_scope_begin();
    tt_tensor *h = tt_nn_linear_forward(&m->fc, x);  // (..., H)
    if (m->act == TT_ACT_SWIGLU)
        h = tt_swiglu(h, tt_nn_linear_forward(&m->up, x));
    else
        h = tt_activate(m->act, h);
    tt_tensor *y = tt_nn_dropout_forward(&m->drop, tt_nn_linear_forward(&m->proj, h));  // (..., C)
    tt_keep(y);
    tt_scope_end();
    return y;
}

// The children, listed once: params, train and free walk them. Gated, Hugging Face Llama's names.
static void ff_children(void *self, tt_module_visit visit, void *ctx) {
    tt_nn_feedforward *m = self;
    bool gated = m->act == TT_ACT_SWIGLU;
    visit(tt_nn_linear_module(&m->fc), gated ? "gate_proj" : "fc", ctx);
    if (gated) visit(tt_nn_linear_module(&m->up), "up_proj", ctx);
    visit(tt_nn_linear_module(&m->proj), gated ? "down_proj" : "proj", ctx);
    visit(tt_nn_dropout_module(&m->drop), "drop", ctx);
}

static tt_tensor *ff_fwd(void *self, tt_tensor *x) { return tt_nn_feedforward_forward(self, x); }
static void ff_free(void *self) { tt_nn_feedforward_free(self); }
static const tt_module_ops ff_ops = {.type = "FeedForward", .forward = ff_fwd,
                                     .children = ff_children, .free = ff_free};
tt_module tt_nn_feedforward_module(tt_nn_feedforward *m) { return (tt_module){m, &ff_ops}; }

void tt_nn_feedforward_params(const tt_nn_feedforward *m, tt_params *out, const char *prefix) {
    tt_module_params(tt_nn_feedforward_module((tt_nn_feedforward *)m), out, prefix);
}

void tt_nn_feedforward_train(tt_nn_feedforward *m, bool training) {
    tt_module_train(tt_nn_feedforward_module(m), training);
}

void tt_nn_feedforward_free(tt_nn_feedforward *m) {
    tt__module_free_children(tt_nn_feedforward_module(m));
    memset(m, 0, sizeof *m);
}

// ---- multi-head attention ----

void tt_nn_attention_init(tt_nn_attention *m, const tt_nn_attention_config *cfg, tt_rng *rng) {
    tt_nn_attention_config c = *cfg;
    if (c.n_kv_head == 0) c.n_kv_head = c.n_head;
    if (c.rope_base == 0) c.rope_base = 10000.0;
    TT_CHECK(c.n_embd > 0 && c.n_head > 0 && c.n_kv_head > 0, "sizes must be positive, got "
             "n_embd=%lld n_head=%lld n_kv_head=%lld", (long long)c.n_embd, (long long)c.n_head,
             (long long)c.n_kv_head);
    TT_CHECK(c.n_embd % c.n_head == 0, "n_embd=%lld is not divisible by n_head=%lld; pick "
             "n_head among the divisors of n_embd", (long long)c.n_embd, (long long)c.n_head);
    TT_CHECK(c.n_head % c.n_kv_head == 0, "n_head=%lld is not divisible by n_kv_head=%lld; "
             "each key/value head serves n_head / n_kv_head query heads", (long long)c.n_head,
             (long long)c.n_kv_head);
    TT_CHECK(c.max_seq > 0, "max_seq must be positive, got %lld", (long long)c.max_seq);
    int64_t hs = c.n_embd / c.n_head;
    TT_CHECK(!c.rope || hs % 2 == 0, "RoPE needs an even head size, got n_embd / n_head = "
             "%lld / %lld = %lld", (long long)c.n_embd, (long long)c.n_head, (long long)hs);

    memset(m, 0, sizeof *m);
    m->cfg = c;
    m->head_dim = hs;
    tt_nn_linear_init(&m->q_proj, c.n_embd, c.n_head * hs, c.bias, rng);
    tt_nn_linear_init(&m->k_proj, c.n_embd, c.n_kv_head * hs, c.bias, rng);
    tt_nn_linear_init(&m->v_proj, c.n_embd, c.n_kv_head * hs, c.bias, rng);
    tt_nn_linear_init(&m->o_proj, c.n_embd, c.n_embd, c.bias, rng);
    if (c.qk_norm) {
        tt_nn_rmsnorm_init(&m->q_norm, hs, 1e-6, true);
        tt_nn_rmsnorm_init(&m->k_norm, hs, 1e-6, true);
    }
    if (c.rope) tt_nn_rope_init(&m->rope, hs, c.max_seq, c.rope_base);
    if (c.causal) {
        // mask[i, j] = 1 for j > i: query i may not see the future key j.
        m->mask = tt__new_zeros(TT_I32, 2, (int64_t[]){c.max_seq, c.max_seq});  // (T, T)
        int32_t *mk = tt_data(m->mask);
        for (int64_t i = 0; i < c.max_seq; i++)
            for (int64_t j = i + 1; j < c.max_seq; j++) mk[i * c.max_seq + j] = 1;
    }
    tt_nn_dropout_init(&m->attn_drop, c.dropout, rng);
    tt_nn_dropout_init(&m->resid_drop, c.dropout, rng);
}

// (B, T, n * HS) -> (B, n, T, HS)
static tt_tensor *split_heads(tt_tensor *x, int64_t n, int64_t hs) {
    int64_t B = x->shape[0], T = x->shape[1];
    return tt_transpose(tt_reshape(x, TT_SHAPE(B, T, n, hs)), 1, 2);
}

// (B, NKV, T, HS) -> (B, NKV * rep, T, HS): kv head g serves query heads g*rep .. g*rep+rep-1.
static tt_tensor *repeat_kv(tt_tensor *x, int64_t rep) {
    if (rep == 1) return x;
    int64_t B = x->shape[0], NKV = x->shape[1], T = x->shape[2], HS = x->shape[3];
    tt_tensor *e = tt_expand(tt_unsqueeze(x, 2), TT_SHAPE(B, NKV, rep, T, HS));
    return tt_reshape(e, TT_SHAPE(B, NKV * rep, T, HS));
}

// The attention core: y = softmax(q k^T / sqrt(HS) [+ mask] [+ causal mask]) v, with dropout
// on the weights (Vaswani et al. 2017, eq. 1); mask as tt_scaled_dot_product_attention's
// (NULL, or bool TRUE = attend, or additive), and only with pos == 0. q (B, NH, T, HS) at
// positions pos .. S - 1, k and v (B, NKV, S, HS) at positions 0 .. S - 1 -> y (B, NH, T, HS).
// Without active dropout, a
// full-sequence call (pos == 0) runs the fused op in tiles (FlashAttention, Dao et al. 2022).
// Otherwise it composes the ops: dropout needs the weights themselves, and for new queries
// after cached ones (rows pos .. S - 1 of the causal mask; nothing to mask for a single query,
// which sees every key) the composition is cheaper than the fused kernel's tiles. Runs inside
// the caller's scope.
static tt_tensor *attention_core(tt_nn_attention *m, tt_tensor *q, tt_tensor *k, tt_tensor *v,
                                 tt_tensor *mask, int64_t pos) {
    const tt_nn_attention_config *c = &m->cfg;
    double scale = 1.0 / sqrt((double)m->head_dim);
    bool drop = m->attn_drop.p > 0 && m->attn_drop.training;
    if (!drop && pos == 0) return tt_scaled_dot_product_attention(q, k, v, mask, c->causal, scale);
    int64_t T = q->shape[2], S = k->shape[2], rep = c->n_head / c->n_kv_head;
    tt_tensor *att = tt_matmul(q, tt_transpose(repeat_kv(k, rep), -2, -1));  // (B, NH, T, S)
    att = tt_mul_scalar(att, scale);
    // a fully masked row ends all -inf: tt_softmax gives it 0, as the fused op does
    if (mask && mask->dtype == TT_BOOL) att = tt_masked_fill(att, tt_logical_not(mask), -INFINITY);
    else if (mask) att = tt_add(att, mask);
    if (c->causal && T > 1)
        att = tt_masked_fill(att, tt_slice(tt_slice(m->mask, 0, pos, S, 1), 1, 0, S, 1),
                             -INFINITY);
    att = tt_nn_dropout_forward(&m->attn_drop, tt_softmax(att, -1));
    return tt_matmul(att, repeat_kv(v, rep));  // (B, NH, T, HS)
}

// Aborts unless x is (B, T, C) and positions pos .. pos + T - 1 fit max_seq; messages name
// func, the public function the user called.
static void check_input(const tt_nn_attention *m, const tt_tensor *x, int64_t pos,
                        const char *func) {
    const tt_nn_attention_config *c = &m->cfg;
    TT_CHECK_IN(func, x && x->ndim == 3 && x->shape[2] == c->n_embd, "input %s must be "
                "(B, T, %lld): n_embd=%lld channels last", x ? tt__shape(x) : "NULL",
                (long long)c->n_embd, (long long)c->n_embd);
    int64_t T = x->shape[1];
    TT_CHECK_IN(func, pos >= 0 && pos + T <= c->max_seq, "positions %lld .. %lld exceed "
                "max_seq=%lld; crop the input or build the attention with a larger max_seq",
                (long long)pos, (long long)(pos + T - 1), (long long)c->max_seq);
}

// q (B, NH, T, HS) and k (B, NKV, T, HS) at positions pos .. pos + T - 1 -> QK-normed and
// rotated, in place. Runs in the caller's scope.
static void norm_rope(tt_nn_attention *m, int64_t pos, tt_tensor **q, tt_tensor **k) {
    const tt_nn_attention_config *c = &m->cfg;
    if (c->qk_norm) {
        *q = tt_nn_rmsnorm_forward(&m->q_norm, *q);
        *k = tt_nn_rmsnorm_forward(&m->k_norm, *k);
    }
    if (c->rope) {
        *q = tt_nn_rope_forward(&m->rope, *q, pos);
        *k = tt_nn_rope_forward(&m->rope, *k, pos);
    }
}

// q, k, v of x (B, T, C) at positions pos .. pos + T - 1 (checked by check_input):
// projected, split into heads, QK-normed and rotated. Runs in the caller's scope.
static void project_qkv(tt_nn_attention *m, tt_tensor *x, int64_t pos, tt_tensor **q,
                        tt_tensor **k, tt_tensor **v) {
    const tt_nn_attention_config *c = &m->cfg;
    int64_t hs = m->head_dim;
    *q = split_heads(tt_nn_linear_forward(&m->q_proj, x), c->n_head, hs);  // (B, NH, T, HS)
    *k = split_heads(tt_nn_linear_forward(&m->k_proj, x), c->n_kv_head, hs);  // (B, NKV, T, HS)
    *v = split_heads(tt_nn_linear_forward(&m->v_proj, x), c->n_kv_head, hs);  // (B, NKV, T, HS)
    norm_rope(m, pos, q, k);
}

// y (B, NH, T, HS) -> o_proj and dropout, (B, T, C). Runs in the caller's scope.
static tt_tensor *merge_heads(tt_nn_attention *m, tt_tensor *y) {
    int64_t B = y->shape[0], T = y->shape[2];
    y = tt_reshape(tt_transpose(y, 1, 2), TT_SHAPE(B, T, m->cfg.n_head * m->head_dim));
    return tt_nn_dropout_forward(&m->resid_drop, tt_nn_linear_forward(&m->o_proj, y));
}

tt_tensor *tt_nn_attention_forward(tt_nn_attention *m, tt_tensor *x) {
    check_input(m, x, 0, __func__);
    tt_scope_begin();
    tt_tensor *q, *k, *v;
    project_qkv(m, x, 0, &q, &k, &v);
    tt_tensor *y = tt_keep(merge_heads(m, attention_core(m, q, k, v, NULL, 0)));  // (B, T, C)
    tt_scope_end();
    return y;
}

// TT_CHECK on behalf of tt_nn_attention_forward_mask.
#define MASK_CHECK(...) TT_CHECK_IN("tt_nn_attention_forward_mask", __VA_ARGS__)

// bool TRUE (nn.MultiheadAttention: "not allowed") -> an additive 0 / -inf mask of dtype dt.
static tt_tensor *additive(tt_tensor *mask, tt_dtype dt) {
    if (mask->dtype != TT_BOOL) return mask;
    return tt_masked_fill(tt_zeros(dt, mask->ndim, mask->shape), mask, -INFINITY);
}

// attn_mask and key_padding_mask in nn.MultiheadAttention's conventions -> one mask in
// tt_scaled_dot_product_attention's, broadcastable to (B, NH, T, T); NULL when both are NULL.
// Two bool masks give a bool (B, 1 or NH, T, T) mask, a float among them an additive one. Runs
// in the caller's scope.
static tt_tensor *sdpa_mask(const tt_nn_attention *m, tt_tensor *attn_mask, tt_tensor *kpm,
                            const tt_tensor *x) {
    int64_t B = x->shape[0], T = x->shape[1], NH = m->cfg.n_head;
    tt_tensor *am = NULL, *pm = NULL;
    if (attn_mask) {
        MASK_CHECK(attn_mask->dtype == TT_BOOL || attn_mask->dtype == x->dtype, "attn_mask is "
                   "%s but the input is %s; pass a bool mask (TRUE = not allowed) or an additive "
                   "one of the input's dtype", tt_dtype_name(attn_mask->dtype),
                   tt_dtype_name(x->dtype));
        int nd = attn_mask->ndim;
        const int64_t *sh = attn_mask->shape;
        bool ok = (nd == 2 && sh[0] == T && sh[1] == T) ||
                  (nd == 3 && sh[0] == B * NH && sh[1] == T && sh[2] == T) ||
                  (nd == 4 && sh[0] == B && sh[1] == NH && sh[2] == T && sh[3] == T);
        MASK_CHECK(ok, "attn_mask %s must be (T, T) = (%lld, %lld), (B * n_head, T, T) = "
                   "(%lld, %lld, %lld) or (B, n_head, T, T) for input %s", tt__shape(attn_mask),
                   (long long)T, (long long)T, (long long)(B * NH), (long long)T, (long long)T,
                   tt__shape(x));
        am = nd == 3 ? tt_reshape(attn_mask, TT_SHAPE(B, NH, T, T)) : attn_mask;
    }
    if (kpm) {
        MASK_CHECK(kpm->dtype == TT_BOOL || kpm->dtype == x->dtype, "key_padding_mask is %s "
                   "but the input is %s; pass a bool mask (TRUE = padding, ignored) or an "
                   "additive one of the input's dtype", tt_dtype_name(kpm->dtype),
                   tt_dtype_name(x->dtype));
        MASK_CHECK(kpm->ndim == 2 && kpm->shape[0] == B && kpm->shape[1] == T,
                   "key_padding_mask %s must be (B, T) = (%lld, %lld) for input %s",
                   tt__shape(kpm), (long long)B, (long long)T, tt__shape(x));
        pm = tt_reshape(kpm, TT_SHAPE(B, 1, 1, T));
    }
    if (!am && !pm) return NULL;
    if (!am || !pm) {
        tt_tensor *one = am ? am : pm;
        return one->dtype == TT_BOOL ? tt_logical_not(one) : one;
    }
    if (am->dtype == TT_BOOL && pm->dtype == TT_BOOL) return tt_logical_not(tt_logical_or(am, pm));
    return tt_add(additive(am, x->dtype), additive(pm, x->dtype));
}

tt_tensor *tt_nn_attention_forward_mask(tt_nn_attention *m, tt_tensor *x, tt_tensor *attn_mask,
                                        tt_tensor *key_padding_mask) {
    check_input(m, x, 0, __func__);
    tt_scope_begin();
    tt_tensor *mask = sdpa_mask(m, attn_mask, key_padding_mask, x);
    tt_tensor *q, *k, *v;
    project_qkv(m, x, 0, &q, &k, &v);
    tt_tensor *y = tt_keep(merge_heads(m, attention_core(m, q, k, v, mask, 0)));  // (B, T, C)
    tt_scope_end();
    return y;
}

tt_tensor *tt_nn_attention_forward_cached(tt_nn_attention *m, tt_tensor *x, tt_tensor *k_cache,
                                          tt_tensor *v_cache, int64_t pos) {
    const tt_nn_attention_config *c = &m->cfg;
    check_input(m, x, pos, __func__);
    int64_t T = x->shape[1], S = pos + T;
    TT_CHECK(k_cache && v_cache && k_cache->ndim == 4 && tt_same_shape(k_cache, v_cache) &&
             k_cache->shape[0] == x->shape[0] && k_cache->shape[1] == c->n_kv_head &&
             k_cache->shape[3] == m->head_dim && S <= k_cache->shape[2],
             "caches %s must be (B, NKV=%lld, >= %lld positions, HS=%lld) for input %s",
             k_cache ? tt__shape(k_cache) : "NULL", (long long)c->n_kv_head, (long long)S,
             (long long)m->head_dim, tt__shape(x));
    tt_scope_begin();
    tt_tensor *q, *k, *v;
    project_qkv(m, x, pos, &q, &k, &v);
    tt_copy_(tt_slice(k_cache, 2, pos, S, 1), k);
    tt_copy_(tt_slice(v_cache, 2, pos, S, 1), v);
    tt_tensor *K = tt_slice(k_cache, 2, 0, S, 1), *V = tt_slice(v_cache, 2, 0, S, 1);
    tt_tensor *y = tt_keep(merge_heads(m, attention_core(m, q, K, V, NULL, pos)));  // (B, T, C)
    tt_scope_end();
    return y;
}

// Aborts unless row b's caches are (1, NKV, > pos, HS) and pos is in [0, max_seq).
static void check_row(const tt_nn_attention *m, const tt_tensor *k, const tt_tensor *v,
                      int64_t pos, int64_t b) {
    TT_CHECK_IN("tt_nn_attention_forward_rows", pos >= 0 && pos < m->cfg.max_seq,
                "row %lld: position %lld is outside [0, max_seq=%lld)", (long long)b,
                (long long)pos, (long long)m->cfg.max_seq);
    TT_CHECK_IN("tt_nn_attention_forward_rows", k && v && k->ndim == 4 && tt_same_shape(k, v) &&
                k->shape[0] == 1 && k->shape[1] == m->cfg.n_kv_head && pos < k->shape[2] &&
                k->shape[3] == m->head_dim, "row %lld: caches %s must be (1, NKV=%lld, > %lld "
                "positions, HS=%lld)", (long long)b, k ? tt__shape(k) : "NULL",
                (long long)m->cfg.n_kv_head, (long long)pos, (long long)m->head_dim);
}

tt_tensor *tt_nn_attention_forward_rows(tt_nn_attention *m, tt_tensor *x,
                                        tt_tensor *const *k_caches, tt_tensor *const *v_caches,
                                        const int64_t *pos) {
    const tt_nn_attention_config *c = &m->cfg;
    TT_CHECK(x && x->ndim == 3 && x->shape[1] == 1 && x->shape[2] == c->n_embd, "input %s must "
             "be (B, 1, %lld): one token of each row's sequence", x ? tt__shape(x) : "NULL",
             (long long)c->n_embd);
    int64_t B = x->shape[0], hs = m->head_dim;
    tt_scope_begin();
    tt_tensor *q_all = tt_nn_linear_forward(&m->q_proj, x);  // (B, 1, NH * HS)
    tt_tensor *k_all = tt_nn_linear_forward(&m->k_proj, x);  // (B, 1, NKV * HS)
    tt_tensor *v_all = tt_nn_linear_forward(&m->v_proj, x);  // (B, 1, NKV * HS)
    tt_tensor **ys = TT_MALLOC((size_t)B * sizeof *ys);
    for (int64_t b = 0; b < B; b++) {
        check_row(m, k_caches[b], v_caches[b], pos[b], b);
        int64_t S = pos[b] + 1;
        tt_tensor *q = split_heads(tt_slice(q_all, 0, b, b + 1, 1), c->n_head, hs);
        tt_tensor *k = split_heads(tt_slice(k_all, 0, b, b + 1, 1), c->n_kv_head, hs);
        tt_tensor *v = split_heads(tt_slice(v_all, 0, b, b + 1, 1), c->n_kv_head, hs);
        norm_rope(m, pos[b], &q, &k);
        tt_copy_(tt_slice(k_caches[b], 2, pos[b], S, 1), k);
        tt_copy_(tt_slice(v_caches[b], 2, pos[b], S, 1), v);
        tt_tensor *K = tt_slice(k_caches[b], 2, 0, S, 1), *V = tt_slice(v_caches[b], 2, 0, S, 1);
        ys[b] = attention_core(m, q, K, V, NULL, pos[b]);  // (1, NH, 1, HS)
    }
    tt_tensor *y = B == 1 ? ys[0] : tt_cat((int)B, ys, 0);  // (B, NH, 1, HS)
    tt_free(ys);
    y = tt_keep(merge_heads(m, y));  // (B, 1, C)
    tt_scope_end();
    return y;
}

// The children, listed once: params, train and free walk them. The optional ones are zeroed
// structs when absent (their free is then a no-op), but listing them only when configured keeps
// the parameter names those of the configuration.
static void attention_children(void *self, tt_module_visit visit, void *ctx) {
    tt_nn_attention *m = self;
    visit(tt_nn_linear_module(&m->q_proj), "q_proj", ctx);
    visit(tt_nn_linear_module(&m->k_proj), "k_proj", ctx);
    visit(tt_nn_linear_module(&m->v_proj), "v_proj", ctx);
    visit(tt_nn_linear_module(&m->o_proj), "o_proj", ctx);
    if (m->cfg.qk_norm) {
        visit(tt_nn_rmsnorm_module(&m->q_norm), "q_norm", ctx);
        visit(tt_nn_rmsnorm_module(&m->k_norm), "k_norm", ctx);
    }
    if (m->cfg.rope) visit(tt_nn_rope_module(&m->rope), "rope", ctx);
    visit(tt_nn_dropout_module(&m->attn_drop), "attn_drop", ctx);
    visit(tt_nn_dropout_module(&m->resid_drop), "resid_drop", ctx);
}

static tt_tensor *attention_fwd(void *self, tt_tensor *x) {
    return tt_nn_attention_forward(self, x);
}
static void attention_free(void *self) { tt_nn_attention_free(self); }
static const tt_module_ops attention_ops = {.type = "Attention", .forward = attention_fwd,
                                            .children = attention_children, .free = attention_free};
tt_module tt_nn_attention_module(tt_nn_attention *m) { return (tt_module){m, &attention_ops}; }

void tt_nn_attention_params(const tt_nn_attention *m, tt_params *out, const char *prefix) {
    tt_module_params(tt_nn_attention_module((tt_nn_attention *)m), out, prefix);
}

void tt_nn_attention_train(tt_nn_attention *m, bool training) {
    tt_module_train(tt_nn_attention_module(m), training);
}

void tt_nn_attention_free(tt_nn_attention *m) {
    tt__module_free_children(tt_nn_attention_module(m));
    tt_release(m->mask);
    memset(m, 0, sizeof *m);
}

// ---- transformer block (pre-norm, GPT-2 / Llama order; or post-norm, PyTorch's default) ----

static bool block_bias(tt_nn_block_bias b, bool attn_bias, const char *what) {
    TT_CHECK_IN("tt_nn_block_init", (unsigned)b < TT_BIAS_COUNT, "%s is %d; use TT_BIAS_LIKE_ATTN "
                "(0), TT_BIAS_ON or TT_BIAS_OFF", what, (int)b);
    return b == TT_BIAS_LIKE_ATTN ? attn_bias : b == TT_BIAS_ON;
}

void tt_nn_block_init(tt_nn_block *m, const tt_nn_block_config *cfg, tt_rng *rng) {
    int64_t C = cfg->attn.n_embd;
    double eps = cfg->norm_eps != 0 ? cfg->norm_eps : 1e-5;
    int64_t hidden = cfg->mlp_hidden != 0 ? cfg->mlp_hidden : 4 * C;
    bool norm_bias = block_bias(cfg->norm_bias, cfg->attn.bias, "norm_bias");
    bool mlp_bias = block_bias(cfg->mlp_bias, cfg->attn.bias, "mlp_bias");
    memset(m, 0, sizeof *m);
    m->post_norm = cfg->post_norm;
    tt_nn_attention_init(&m->attn, &cfg->attn, rng);
    tt_nn_norm_init(&m->norm1, cfg->norm, C, eps, norm_bias);
    tt_nn_norm_init(&m->norm2, cfg->norm, C, eps, norm_bias);
    tt_nn_feedforward_init(&m->mlp, C, hidden, cfg->act, mlp_bias, cfg->attn.dropout, rng);
}

// The rest of the block after the attention branch a (of norm1(x), or of x when post-norm).
static tt_tensor *block_finish(tt_nn_block *m, tt_tensor *x, tt_tensor *a) {
    if (m->post_norm) {  // x = norm1(x + attn(x)); x = norm2(x + mlp(x))
        tt_tensor *h = tt_nn_norm_forward(&m->norm1, tt_add(x, a));
        return tt_nn_norm_forward(&m->norm2, tt_add(h, tt_nn_feedforward_forward(&m->mlp, h)));
    }
    tt_tensor *h = tt_add(x, a);  // x = x + attn(norm1(x)); x = x + mlp(norm2(x))
    return tt_add(h, tt_nn_feedforward_forward(&m->mlp, tt_nn_norm_forward(&m->norm2, h)));
}

// x (B, T, C) -> (B, T, C).
tt_tensor *tt_nn_block_forward(tt_nn_block *m, tt_tensor *x) {
    tt_scope_begin();
    tt_tensor *in = m->post_norm ? x : tt_nn_norm_forward(&m->norm1, x);
    tt_tensor *h = block_finish(m, x, tt_nn_attention_forward(&m->attn, in));
    tt_keep(h);
    tt_scope_end();
    return h;
}

tt_tensor *tt_nn_block_forward_cached(tt_nn_block *m, tt_tensor *x, tt_tensor *k_cache,
                                      tt_tensor *v_cache, int64_t pos) {
    tt_scope_begin();
    tt_tensor *in = m->post_norm ? x : tt_nn_norm_forward(&m->norm1, x);
    tt_tensor *a = tt_nn_attention_forward_cached(&m->attn, in, k_cache, v_cache, pos);
    tt_tensor *h = block_finish(m, x, a);
    tt_keep(h);
    tt_scope_end();
    return h;
}

tt_tensor *tt_nn_block_forward_rows(tt_nn_block *m, tt_tensor *x, tt_tensor *const *k_caches,
                                    tt_tensor *const *v_caches, const int64_t *pos) {
    tt_scope_begin();
    tt_tensor *in = m->post_norm ? x : tt_nn_norm_forward(&m->norm1, x);
    tt_tensor *a = tt_nn_attention_forward_rows(&m->attn, in, k_caches, v_caches, pos);
    tt_tensor *h = block_finish(m, x, a);
    tt_keep(h);
    tt_scope_end();
    return h;
}

// The children, listed once: params, train and free walk them.
static void block_children(void *self, tt_module_visit visit, void *ctx) {
    tt_nn_block *m = self;
    visit(tt_nn_norm_module(&m->norm1), "norm1", ctx);
    visit(tt_nn_attention_module(&m->attn), "attn", ctx);
    visit(tt_nn_norm_module(&m->norm2), "norm2", ctx);
    visit(tt_nn_feedforward_module(&m->mlp), "mlp", ctx);
}

static tt_tensor *block_fwd(void *self, tt_tensor *x) { return tt_nn_block_forward(self, x); }
static void block_free(void *self) { tt_nn_block_free(self); }
static const tt_module_ops block_ops = {.type = "Block", .forward = block_fwd,
                                        .children = block_children, .free = block_free};
tt_module tt_nn_block_module(tt_nn_block *m) { return (tt_module){m, &block_ops}; }

tt_module tt_nn_block_new(const tt_nn_block_config *cfg, tt_rng *rng) {
    tt_nn_block *m = TT_MALLOC(sizeof *m);
    tt_nn_block_init(m, cfg, rng);
    static const tt_module_ops owned = {.type = "Block", .forward = block_fwd,
        .children = block_children, .free = block_free, .owned = true};
    return (tt_module){m, &owned};
}

void tt_nn_block_params(const tt_nn_block *m, tt_params *out, const char *prefix) {
    tt_module_params(tt_nn_block_module((tt_nn_block *)m), out, prefix);
}

void tt_nn_block_train(tt_nn_block *m, bool training) {
    tt_module_train(tt_nn_block_module(m), training);
}

void tt_nn_block_free(tt_nn_block *m) {
    tt__module_free_children(tt_nn_block_module(m));
    memset(m, 0, sizeof *m);
}

// tinytorch.c nn: the transformer's modules: the feed-forward MLP, multi-head attention (with
// grouped-query attention, QK-norm, RoPE, masks and a KV cache) and the pre-norm block
// (nn/transformer.c).
//
//     tt_nn_block blk;
//     tt_nn_block_init(&blk, &(tt_nn_block_config){.attn = {.n_embd = 64, .n_head = 4,
//                                            .max_seq = 128, .causal = true}}, &rng);
//     tt_tensor *y = tt_nn_block_forward(&blk, x);  // (B, T, 64) -> (B, T, 64)
#ifndef TT_NN_TRANSFORMER_H
#define TT_NN_TRANSFORMER_H

#include "layers.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- feed-forward (the transformer block's MLP): dropout(proj(act(fc(x)))),
// fc: C -> hidden, proj: hidden -> C; a block holds it as `mlp` (parameters "mlp.fc.weight", ...).
// With TT_ACT_SWIGLU it is gated, as Llama's MLP (Hugging Face's names):
// dropout(down_proj(silu(gate_proj(x)) * up_proj(x))), gate_proj and up_proj C -> hidden,
// down_proj hidden -> C; the hidden size is the one given (Llama picks about 8/3 C so that the
// three matrices hold as many weights as GPT's two at 4 C; pass that when you want it).

typedef struct tt_nn_feedforward {
    tt_nn_linear fc;    // C -> hidden; gate_proj when gated
    tt_nn_linear up;    // C -> hidden, up_proj: gated only (zeroed otherwise)
    tt_nn_linear proj;  // hidden -> C; down_proj when gated
    tt_act act;
    tt_nn_dropout drop;
} tt_nn_feedforward;

void tt_nn_feedforward_init(tt_nn_feedforward *m, int64_t dim, int64_t hidden, tt_act act,
                            bool bias, double dropout, tt_rng *rng);
tt_tensor *tt_nn_feedforward_forward(tt_nn_feedforward *m, tt_tensor *x);
// fc.*, proj.* (gated: gate_proj.*, up_proj.*, down_proj.*)
void tt_nn_feedforward_params(const tt_nn_feedforward *m, tt_params *out, const char *prefix);
void tt_nn_feedforward_train(tt_nn_feedforward *m, bool training);
void tt_nn_feedforward_free(tt_nn_feedforward *m);
tt_module tt_nn_feedforward_module(tt_nn_feedforward *m);

// ---- multi-head attention ----

typedef struct tt_nn_attention_config {
    int64_t n_embd;
    int64_t n_head;
    int64_t n_kv_head;  // < n_head: grouped-query attention; 0 means n_head
    int64_t max_seq;    // longest sequence (causal mask, RoPE tables)
    bool causal;
    bool bias;          // in the q/k/v/o projections
    bool qk_norm;       // RMSNorm (with weight) on each head's q and k
    bool rope;          // rotary positions on q and k
    double rope_base;   // 0 means 10000
    double dropout;     // on the attention weights and the output
} tt_nn_attention_config;

typedef struct tt_nn_attention {
    tt_nn_attention_config cfg;
    int64_t head_dim;
    tt_nn_linear q_proj, k_proj, v_proj, o_proj;
    tt_nn_rmsnorm q_norm, k_norm;  // when qk_norm
    tt_nn_rope rope;                  // when rope
    tt_tensor *mask;                  // (max_seq, max_seq) i32, 1 above the diagonal
    tt_nn_dropout attn_drop, resid_drop;
} tt_nn_attention;

void tt_nn_attention_init(tt_nn_attention *m, const tt_nn_attention_config *cfg, tt_rng *rng);
// x (B, T, C) -> (B, T, C), positions 0 .. T-1.
tt_tensor *tt_nn_attention_forward(tt_nn_attention *m, tt_tensor *x);
// The same with masks, in torch.nn.MultiheadAttention's conventions (either may be NULL):
//   attn_mask (T, T), (B * n_head, T, T) (index b * n_head + h) or (B, n_head, T, T): bool
//     TRUE = the query may NOT attend to the key, or a float mask (the input's dtype) added
//     to the scaled scores (it gets a gradient when it requires one);
//   key_padding_mask (B, T): bool TRUE = that key is padding, ignored; or float, added.
// Careful: the bool conventions of PyTorch's two APIs are opposite, and we follow each API's
// own: here (nn.MultiheadAttention) TRUE masks a key out, while tt_scaled_dot_product_attention
// (F.scaled_dot_product_attention) takes TRUE = the key takes part. With cfg.causal the causal
// mask applies too. A query whose keys are all masked gets a 0 output (PyTorch 1.13 gives NaN).
// Two masks are combined into one (B, 1 or n_head, T, T) mask; one is used in place.
// tt_nn_attention_forward_cached (the KV cache) stays causal-only: it takes no masks.
tt_tensor *tt_nn_attention_forward_mask(tt_nn_attention *m, tt_tensor *x, tt_tensor *attn_mask,
                                        tt_tensor *key_padding_mask);
// Incremental decoding with a key/value cache: x (B, T, C) holds positions pos .. pos + T - 1;
// their keys and values (after QK-norm and RoPE, before the grouped-query repeat) are written
// into k_cache and v_cache, (B, NKV, L, HS) with L >= pos + T, and the queries attend over
// positions 0 .. pos + T - 1 (causally when cfg.causal). Meant for grad mode off.
tt_tensor *tt_nn_attention_forward_cached(tt_nn_attention *m, tt_tensor *x, tt_tensor *k_cache,
                                          tt_tensor *v_cache, int64_t pos);
// Batched decoding of several sequences, one new token each: x (B, 1, C), row b the token of
// its own sequence at position pos[b], whose keys and values go to k_caches[b] and v_caches[b],
// (1, NKV, L, HS) with L > pos[b]. The q/k/v/o projections run once on the B rows; QK-norm,
// RoPE and the attention (over the row's positions 0 .. pos[b]) run per row. Row b gets the
// bits tt_nn_attention_forward_cached gives that row alone when the Linears give a row the
// same bits in a batch as alone. Meant for grad mode off.
tt_tensor *tt_nn_attention_forward_rows(tt_nn_attention *m, tt_tensor *x,
                                        tt_tensor *const *k_caches, tt_tensor *const *v_caches,
                                        const int64_t *pos);
void tt_nn_attention_params(const tt_nn_attention *m, tt_params *out, const char *prefix);
void tt_nn_attention_train(tt_nn_attention *m, bool training);
void tt_nn_attention_free(tt_nn_attention *m);
// Self-attention: tt_nn_attention_forward(m, x).
tt_module tt_nn_attention_module(tt_nn_attention *m);

// ---- transformer block ----
// Pre-norm (GPT-2, Llama; the default): x = x + attn(norm1(x)); x = x + mlp(norm2(x)).
// Post-norm (PyTorch's TransformerEncoderLayer, norm_first=False, and the original
// Transformer): x = norm1(x + attn(x)); x = norm2(x + mlp(x)).

// The norms' and the MLP's biases: zero follows attn.bias, as every block did before the
// switches were split.
typedef enum tt_nn_block_bias {
    TT_BIAS_LIKE_ATTN,  // the attention's bias switch (attn.bias)
    TT_BIAS_ON,
    TT_BIAS_OFF,
    TT_BIAS_COUNT
} tt_nn_block_bias;

typedef struct tt_nn_block_config {
    tt_nn_attention_config attn;
    int64_t mlp_hidden;  // 0 means 4 * n_embd
    tt_act act;
    tt_nn_norm_kind norm;
    double norm_eps;     // 0 means 1e-5
    bool post_norm;      // PyTorch's norm_first=False; false (pre-norm) is norm_first=True
    tt_nn_block_bias norm_bias;  // LayerNorm's bias in norm1 and norm2 (RMSNorm has none)
    tt_nn_block_bias mlp_bias;  // in mlp.fc and mlp.proj
} tt_nn_block_config;

typedef struct tt_nn_block {
    tt_nn_norm norm1, norm2;
    tt_nn_attention attn;
    tt_nn_feedforward mlp;
    bool post_norm;  // cfg.post_norm
} tt_nn_block;

void tt_nn_block_init(tt_nn_block *m, const tt_nn_block_config *cfg, tt_rng *rng);
tt_tensor *tt_nn_block_forward(tt_nn_block *m, tt_tensor *x);
// The same through tt_nn_attention_forward_cached (see there).
tt_tensor *tt_nn_block_forward_cached(tt_nn_block *m, tt_tensor *x, tt_tensor *k_cache,
                                      tt_tensor *v_cache, int64_t pos);
// The same through tt_nn_attention_forward_rows (see there).
tt_tensor *tt_nn_block_forward_rows(tt_nn_block *m, tt_tensor *x, tt_tensor *const *k_caches,
                                    tt_tensor *const *v_caches, const int64_t *pos);
// norm1, attn, ...
void tt_nn_block_params(const tt_nn_block *m, tt_params *out, const char *prefix);
void tt_nn_block_train(tt_nn_block *m, bool training);
void tt_nn_block_free(tt_nn_block *m);
tt_module tt_nn_block_module(tt_nn_block *m);
// An owned block (see tt_nn_linear_new in layers.h).
tt_module tt_nn_block_new(const tt_nn_block_config *cfg, tt_rng *rng);

#ifdef __cplusplus
}
#endif

#endif  // TT_NN_TRANSFORMER_H

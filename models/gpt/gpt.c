// The GPT model (nanoGPT's structure): token embedding, learned positions or RoPE, pre-norm
// transformer blocks from nn/, a final norm and a tied or untied head; GPT-2 initialization,
// nanoGPT's parameter count and the fused loss. Generation and the KV cache are in generate.c.
//
// Letters: B batch, T time, C channels (n_embd), V vocab, L layers.
#include "gpt_internal.h"

#include <math.h>
#include <string.h>

// ---- init / free ----

// The parameters of the module tree (gpt_module.c), in its order: nanoGPT's names, wte, wpe,
// blocks.<l>.*, ln_f, lm_head.
void tt__gpt_list_params(tt_gpt *m) {
    tt_params_free(&m->params);
    tt_module_params(tt_gpt_module(m), &m->params, NULL);
}

// nanoGPT's _init_weights plus the scaled residual projections (GPT-2 paper, sec. 2.3):
// matrices N(0, 0.02), attn.o_proj / mlp.proj (down_proj) N(0, 0.02 / sqrt(2 L)), biases 0,
// gains 1.
// Draws from rng in parameter order.
static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void init_weights(tt_gpt *m, tt_rng *rng) {
    for (int i = 0; i < m->params.n; i++) {
        const char *name = m->params.items[i].name;
        tt_tensor *p = m->params.items[i].tensor;
        if (p->ndim >= 2) {
            if (ends_with(name, ".attn.o_proj.weight") || ends_with(name, ".mlp.proj.weight") ||
                ends_with(name, ".mlp.down_proj.weight"))
                tt_init_gpt2_residual_(p, rng, (int)m->cfg.n_layer);
            else
                tt_init_normal_(p, rng, 0.0, 0.02);
        } else if (ends_with(name, ".bias")) {
            tt_init_zeros_(p);
        } else {
            tt_init_ones_(p);
        }
    }
}

static tt_nn_block_config block_config(const tt_gpt_config *c) {
    return (tt_nn_block_config){
        .attn =
            {
                .n_embd = c->n_embd,
                .n_head = c->n_head,
                .n_kv_head = c->n_kv_head,
                .max_seq = c->block_size,
                .causal = true,
                .bias = c->bias,
                .qk_norm = c->qk_norm,
                .rope = c->positional == TT_POS_ROPE,
                .rope_base = c->rope_base,
                .dropout = c->dropout,
            },
        .mlp_hidden = tt_gpt_config_mlp_hidden(c),
        .act = c->activation,
        .norm = c->norm,
        .norm_eps = c->norm_eps,
    };
}

// q/k/v projections without biases while o_proj keeps its own (qkv_bias false).
static void drop_qkv_bias(tt_nn_attention *a) {
    tt_nn_linear *qkv[] = {&a->q_proj, &a->k_proj, &a->v_proj};
    for (int i = 0; i < 3; i++) {
        tt_release(qkv[i]->bias);
        qkv[i]->bias = NULL;
    }
}

tt_status tt_gpt_init(tt_gpt *m, const tt_gpt_config *cfg, tt_rng *rng) {
    TT_CHECK(m && rng, "model and rng must not be NULL");
    memset(m, 0, sizeof *m);
    tt_status st = tt_gpt_config_validate(cfg);
    if (st != TT_OK) return st;
    m->cfg = *cfg;
    if (m->cfg.n_kv_head == 0) m->cfg.n_kv_head = m->cfg.n_head;
    const tt_gpt_config *c = &m->cfg;

    // The modules draw their own default init from the dropout stream (which their dropout
    // layers borrow); init_weights then replaces every value from rng, and the dropout stream
    // is reseeded from rng at the end.
    tt_rng *scratch = &m->dropout_rng;
    tt_rng_seed(scratch, tt_rng_u64(rng));
    tt_nn_embedding_init(&m->wte, c->vocab_size, c->n_embd, scratch);  // (V, C)
    if (c->positional == TT_POS_LEARNED)
        tt_nn_pos_embedding_init(&m->wpe, c->block_size, c->n_embd, 0.02,  // (block_size, C)
                                 scratch);
    tt_nn_dropout_init(&m->drop, c->dropout, &m->dropout_rng);
    tt_nn_block_config bc = block_config(c);
    m->blocks = TT_CALLOC((size_t)c->n_layer, sizeof *m->blocks);
    for (int64_t l = 0; l < c->n_layer; l++) {
        tt_nn_block_init(&m->blocks[l], &bc, scratch);
        if (c->bias && !c->qkv_bias) drop_qkv_bias(&m->blocks[l].attn);
    }
    tt_nn_norm_init(&m->ln_f, c->norm, c->n_embd, c->norm_eps, c->bias);
    if (!c->tie_weights) tt_nn_linear_init(&m->lm_head, c->n_embd, c->vocab_size, false, scratch);

    tt_params_init(&m->params);
    tt__gpt_list_params(m);
    init_weights(m, rng);
    tt_rng_seed(&m->dropout_rng, tt_rng_u64(rng));
    return TT_OK;
}

tt_status tt__gpt_init_for_load(tt_gpt *m, const tt_gpt_config *cfg) {
    tt_rng rng;
    tt_rng_seed(&rng, 0);
    bool skip = tt__skip_random_init;
    tt__skip_random_init = true;
    tt_status s = tt_gpt_init(m, cfg, &rng);
    tt__skip_random_init = skip;
    return s;
}

// The modules through the tree (gpt_module.c's free callbacks), then the struct.
void tt_gpt_free(tt_gpt *m) {
    if (!m) return;
    tt_gpt_dequantize(m);
    tt_params_free(&m->params);
    if (m->blocks) tt_module_free(tt_gpt_module(m));
    memset(m, 0, sizeof *m);
}

void tt_gpt_train(tt_gpt *m, bool training) { tt_module_train(tt_gpt_module(m), training); }

// nanoGPT's get_num_params: every parameter once (a tied head is wte), without wpe when
// non_embedding (the token embedding stays: it is also the output layer).
int64_t tt_gpt_num_params(const tt_gpt *m, bool non_embedding) {
    int64_t n = tt_params_numel(&m->params);
    if (non_embedding && m->wpe.weight) n -= tt_numel(m->wpe.weight);
    return n;
}

// ---- forward / loss ----

// Aborts unless tokens (B, T) holds token ids that fit the model; messages name func, the
// public function the user called.
static void check_tokens(const tt_gpt *m, const tt_tensor *tokens, const char *what,
                         const char *func) {
    TT_CHECK_IN(func, m && m->blocks, "the model is not initialized; call tt_gpt_init first");
    TT_CHECK_IN(func, tokens, "%s is NULL", what);
    TT_CHECK_IN(func, tokens->dtype == TT_I32 || tokens->dtype == TT_I64,
                "%s must be token ids of dtype i32 or i64, got %s; convert them with "
                "tt_to_dtype(tokens, TT_I32)", what, tt_dtype_name(tokens->dtype));
    TT_CHECK_IN(func, tokens->ndim == 2, "%s must be (B, T), got %s; a single sequence is "
                "(1, T)", what, tt__shape(tokens));
    TT_CHECK_IN(func, tokens->shape[1] <= m->cfg.block_size,
                "sequence length T=%lld of %s %s exceeds block_size=%lld; crop the input to its "
                "last %lld tokens (or build the model with a larger block_size)",
                (long long)tokens->shape[1], what, tt__shape(tokens),
                (long long)m->cfg.block_size, (long long)m->cfg.block_size);
}

// tokens (B, T) at positions pos .. pos + T - 1 -> x (B, T, C): token embedding, learned
// positions (with RoPE the blocks rotate q and k instead) and dropout. Runs in the caller's
// scope.
tt_tensor *tt__gpt_embed(tt_gpt *m, tt_tensor *tokens, int64_t pos) {
    tt_tensor *x = tt_nn_embedding_forward(&m->wte, tokens);     // (B, T, C)
    if (m->wpe.weight) x = tt_nn_pos_embedding_forward(&m->wpe, x, pos);
    return tt_nn_dropout_forward(&m->drop, x);
}

// x (..., C) -> logits (..., V): x wte^T when tied, lm_head otherwise (no bias either way).
tt_tensor *tt__gpt_head(tt_gpt *m, tt_tensor *x) {
    if (m->head_q) return tt_nn_linear_forward(m->head_q, x);
    if (m->cfg.tie_weights) return tt_affine(x, m->wte.weight, NULL);
    return tt_nn_linear_forward(&m->lm_head, x);
}

// The module tree's children run as a chain: embeddings, dropout, blocks, ln_f and the head.
tt_tensor *tt_gpt_forward(tt_gpt *m, tt_tensor *tokens) {
    check_tokens(m, tokens, "tokens", __func__);
    tt_scope_begin();
    tt_tensor *logits = tt_module_forward_chain(tt_gpt_module(m), tokens);  // (B, T, V)
    tt_keep(logits);
    tt_scope_end();
    return logits;
}

// mean over (B, T) of -log softmax(logits)[target]; targets equal to -1 are ignored (as
// PyTorch's ignore_index in nanoGPT).
tt_tensor *tt_gpt_loss(tt_gpt *m, tt_tensor *tokens, tt_tensor *targets) {
    check_tokens(m, tokens, "tokens", __func__);
    TT_CHECK(targets && tt_same_shape(tokens, targets), "targets %s must have the shape of "
             "tokens %s", targets ? tt__shape(targets) : "NULL", tt__shape(tokens));
    tt_scope_begin();
    tt_tensor *loss = tt_cross_entropy(tt_gpt_forward(m, tokens), targets, -1);  // 0-dim
    tt_keep(loss);
    tt_scope_end();
    return loss;
}

// ---- quantized inference ----

// The tied head as a Linear sharing wte's matrix (V, C), no bias, in format q.
static void quantize_tied_head(tt_gpt *m, tt_quant q) {
    if (!m->head_q) {
        m->head_q = TT_CALLOC(1, sizeof *m->head_q);
        m->head_q->weight = tt_retain(m->wte.weight);
        m->head_q->in_features = m->cfg.n_embd;
        m->head_q->out_features = m->cfg.vocab_size;
    }
    tt_nn_linear_quantize_as(m->head_q, q);
}

// Every Linear of the tree (the blocks', lm_head when untied), then the tied head; func is the
// public function called.
static void quantize(tt_gpt *m, tt_quant q, const char *func) {
    TT_CHECK_IN(func, m && m->blocks, "the model is not initialized; call tt_gpt_init first");
    tt_gpt_dequantize(m);
    if (q == TT_QUANT_NONE) return;
    tt_quantize_dynamic_as(tt_gpt_module(m), q);
    if (m->cfg.tie_weights) quantize_tied_head(m, q);
}

void tt_gpt_quantize_as(tt_gpt *m, tt_quant q) { quantize(m, q, __func__); }

void tt_gpt_quantize(tt_gpt *m) { quantize(m, TT_QUANT_INT8, __func__); }

void tt_gpt_dequantize(tt_gpt *m) {
    if (!m) return;
    if (m->blocks) tt_dequantize_model(tt_gpt_module(m));
    if (m->head_q) {
        tt_nn_linear_free(m->head_q);
        tt_free(m->head_q);
        m->head_q = NULL;
    }
}

tt_quant tt_gpt_quantization(const tt_gpt *m) {
    return m && m->blocks ? tt_nn_linear_quantization(&m->blocks[0].attn.q_proj) : TT_QUANT_NONE;
}

bool tt_gpt_is_quantized(const tt_gpt *m) { return tt_gpt_quantization(m) != TT_QUANT_NONE; }

// Bytes of a weight and its bias (either may be NULL).
static int64_t dense_bytes(const tt_tensor *w, const tt_tensor *b) {
    int64_t n = w ? tt_numel(w) * (int64_t)tt_dtype_size(w->dtype) : 0;
    return n + (b ? tt_numel(b) * (int64_t)tt_dtype_size(b->dtype) : 0);
}

int64_t tt_gpt_matmul_weight_bytes(const tt_gpt *m) {
    TT_CHECK(m && m->blocks, "the model is not initialized; call tt_gpt_init first");
    tt_nn_linear_list lin;
    tt_nn_linear_list_init(&lin);
    tt_module_linears(tt_gpt_module((tt_gpt *)m), NULL, &lin);
    int64_t bytes = 0;
    for (int i = 0; i < lin.n; i++) {
        const tt_nn_linear *x = lin.items[i].linear;
        const tt_nn_linear *f = tt_nn_linear_factors(x);
        if (tt_nn_linear_quantization(x) != TT_QUANT_NONE) bytes += tt_nn_linear_quantized_bytes(x);
        else if (f)  // low rank (tt_gpt_low_rank): both factors, f32
            bytes += dense_bytes(f[0].weight, f[0].bias) + dense_bytes(f[1].weight, f[1].bias);
        else bytes += dense_bytes(x->weight, x->bias);
    }
    tt_nn_linear_list_free(&lin);
    if (m->head_q) bytes += tt_nn_linear_quantized_bytes(m->head_q);
    else if (m->cfg.tie_weights) bytes += dense_bytes(m->wte.weight, NULL);
    return bytes;
}

// Gradcheck cases of the transformer modules: RoPE, the sinusoidal and learned positional
// encodings, the feed-forward block (plain and SwiGLU), attention (causal, not causal, GQA,
// QK-norm, RoPE, biases) and the block. Each checks d out / d x and d out / d every parameter;
// values are in tests/test_nn_transformer.c.
//
// Modules are built in f64. gc_check also runs the forward on f32 copies of the inputs, so while
// f runs the module's parameter (and table) fields point at the inputs it was given: `slots`
// lists those fields, in the order tt_<module>_params lists the parameters, then the buffers.
#include "gc_util.h"

#include <string.h>

#define MAX_SLOTS 15  // gc_check takes at most 16 inputs, x included

// ---- the generic module case ----

typedef struct mod_ctx {
    tt_tensor *(*forward)(const struct mod_ctx *c, tt_tensor *x);
    void *m;
    int64_t pos;                  // offset for the positional modules
    tt_tensor **slot[MAX_SLOTS];  // parameters first, then buffers
    int nslots;
} mod_ctx;

static void add_slot(mod_ctx *c, tt_tensor **field) {
    if (!*field) return;  // an absent bias or norm weight
    ck_assert_int_lt(c->nslots, MAX_SLOTS);
    c->slot[c->nslots++] = field;
}

// in[0] is x; in[1 + i] replaces *slot[i] while the forward runs.
static tt_tensor *f_module(tt_tensor *const *in, int n, void *ctx) {
    mod_ctx *c = ctx;
    ck_assert_int_eq(n, c->nslots + 1);
    tt_tensor *saved[MAX_SLOTS];
    for (int i = 0; i < c->nslots; i++) {
        saved[i] = *c->slot[i];
        *c->slot[i] = in[1 + i];
    }
    tt_tensor *y = c->forward(c, in[0]);
    for (int i = 0; i < c->nslots; i++) *c->slot[i] = saved[i];
    return y;
}

// Checks the slots against the module's parameter list (same tensors, same order), gives the
// 1-D parameters (biases, norm weights) non-trivial values, then runs the gradcheck.
static void check_module(gc_report *r, mod_ctx *c, tt_tensor *x, const tt_params *p) {
    ck_assert_int_ge(c->nslots, p->n);
    tt_tensor *in[MAX_SLOTS + 1] = {x};
    for (int i = 0; i < c->nslots; i++) {
        in[1 + i] = *c->slot[i];
        if (i < p->n) {
            ck_assert_msg(in[1 + i] == p->items[i].tensor, "slot %d is not parameter '%s'", i,
                          p->items[i].name);
            ck_assert_int_eq(in[1 + i]->dtype, TT_F64);
            if (in[1 + i]->ndim == 1) tt_uniform_(in[1 + i], gc_rng(), 0.5, 1.5);
        } else {
            ck_assert(!in[1 + i]->requires_grad);  // a buffer
        }
    }
    gc_check(r, f_module, c, c->nslots + 1, in, NULL);
}

static void linear_slots(mod_ctx *c, tt_nn_linear *l) {
    add_slot(c, &l->weight);
    add_slot(c, &l->bias);
}

static void norm_slots(mod_ctx *c, tt_nn_norm *n) {
    if (n->kind == TT_NORM_LAYERNORM) {
        add_slot(c, &n->ln.weight);
        add_slot(c, &n->ln.bias);
    } else {
        add_slot(c, &n->rms.weight);
    }
}

static void mlp_slots(mod_ctx *c, tt_nn_feedforward *m) {
    linear_slots(c, &m->fc);
    linear_slots(c, &m->up);  // gated only
    linear_slots(c, &m->proj);
}

static void attention_param_slots(mod_ctx *c, tt_nn_attention *a) {
    linear_slots(c, &a->q_proj);
    linear_slots(c, &a->k_proj);
    linear_slots(c, &a->v_proj);
    linear_slots(c, &a->o_proj);
    add_slot(c, &a->q_norm.weight);
    add_slot(c, &a->k_norm.weight);
}

static void attention_buffer_slots(mod_ctx *c, tt_nn_attention *a) {
    add_slot(c, &a->rope.cos);
    add_slot(c, &a->rope.sin);
}

// ---- RoPE, sinusoidal, learned positions ----

static tt_tensor *fwd_rope(const mod_ctx *c, tt_tensor *x) {
    return tt_nn_rope_forward(c->m, x, c->pos);
}

static void rope_case(gc_report *r, int64_t pos, int64_t max_len, double base) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_rope rope;
    tt_nn_rope_init(&rope, 4, max_len, base);
    tt_set_default_dtype(prev);
    mod_ctx c = {.forward = fwd_rope, .m = &rope, .pos = pos};
    add_slot(&c, &rope.cos);
    add_slot(&c, &rope.sin);
    tt_params p;
    tt_params_init(&p);
    check_module(r, &c, gc_input(TT_SHAPE(2, 2, 3, 4), -1, 1), &p);  // (B, NH, T, HS)
    tt_params_free(&p);
    tt_nn_rope_free(&rope);
}

static void rope_basic(gc_report *r) { rope_case(r, 0, 3, 10000); }
static void rope_with_offset(gc_report *r) { rope_case(r, 4, 8, 100); }

static tt_tensor *fwd_sinusoidal(const mod_ctx *c, tt_tensor *x) {
    return tt_nn_sinusoidal_forward(c->m, x, c->pos);
}

static void sinusoidal_basic(gc_report *r) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_sinusoidal s;
    tt_nn_sinusoidal_init(&s, 6, 8);
    tt_set_default_dtype(prev);
    mod_ctx c = {.forward = fwd_sinusoidal, .m = &s, .pos = 2};
    add_slot(&c, &s.table);
    tt_params p;
    tt_params_init(&p);
    check_module(r, &c, gc_input(TT_SHAPE(2, 3, 8), -1, 1), &p);  // (B, T, C)
    tt_params_free(&p);
    tt_nn_sinusoidal_free(&s);
}

static tt_tensor *fwd_pos_embedding(const mod_ctx *c, tt_tensor *x) {
    return tt_nn_pos_embedding_forward(c->m, x, c->pos);
}

static void pos_embedding_basic(gc_report *r) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_pos_embedding pe;
    tt_nn_pos_embedding_init(&pe, 5, 8, 1.0, gc_rng());
    tt_set_default_dtype(prev);
    mod_ctx c = {.forward = fwd_pos_embedding, .m = &pe, .pos = 1};
    add_slot(&c, &pe.weight);
    tt_params p;
    tt_params_init(&p);
    tt_nn_pos_embedding_params(&pe, &p, NULL);
    check_module(r, &c, gc_input(TT_SHAPE(2, 3, 8), -1, 1), &p);  // (B, T, C)
    tt_params_free(&p);
    tt_nn_pos_embedding_free(&pe);
}

// ---- feed-forward ----

static tt_tensor *fwd_mlp(const mod_ctx *c, tt_tensor *x) {
    return tt_nn_feedforward_forward(c->m, x);
}

static void mlp_case(gc_report *r, tt_act act) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_feedforward m;
    tt_nn_feedforward_init(&m, 8, 16, act, true, 0.0, gc_rng());
    tt_set_default_dtype(prev);
    mod_ctx c = {.forward = fwd_mlp, .m = &m};
    mlp_slots(&c, &m);
    tt_params p;
    tt_params_init(&p);
    tt_nn_feedforward_params(&m, &p, NULL);
    check_module(r, &c, gc_input(TT_SHAPE(2, 3, 8), -1, 1), &p);  // (B, T, C)
    tt_params_free(&p);
    tt_nn_feedforward_free(&m);
}

static void mlp_gelu(gc_report *r) { mlp_case(r, TT_ACT_GELU); }
static void mlp_relu2(gc_report *r) { mlp_case(r, TT_ACT_RELU2); }
static void mlp_swiglu(gc_report *r) { mlp_case(r, TT_ACT_SWIGLU); }

// ---- attention ----

static tt_tensor *fwd_attention(const mod_ctx *c, tt_tensor *x) {
    return tt_nn_attention_forward(c->m, x);
}

static void attention_case(gc_report *r, tt_nn_attention_config cfg) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_attention a;
    tt_nn_attention_init(&a, &cfg, gc_rng());
    tt_set_default_dtype(prev);
    mod_ctx c = {.forward = fwd_attention, .m = &a};
    attention_param_slots(&c, &a);
    attention_buffer_slots(&c, &a);
    tt_params p;
    tt_params_init(&p);
    tt_nn_attention_params(&a, &p, NULL);
    check_module(r, &c, gc_input(TT_SHAPE(2, 4, 8), -1, 1), &p);  // (B, T, C)
    tt_params_free(&p);
    tt_nn_attention_free(&a);
}

static void attention_causal(gc_report *r) {
    attention_case(r, (tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 6,
                                               .causal = true});
}

static void attention_noncausal(gc_report *r) {
    attention_case(r, (tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4});
}

static void attention_gqa(gc_report *r) {
    attention_case(r, (tt_nn_attention_config){.n_embd = 8, .n_head = 4, .n_kv_head = 2,
                                               .max_seq = 4, .causal = true});
}

static void attention_qk_norm(gc_report *r) {
    attention_case(r, (tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4,
                                               .causal = true, .qk_norm = true});
}

static void attention_rope(gc_report *r) {
    attention_case(r, (tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4,
                                               .causal = true, .rope = true});
}

static void attention_bias(gc_report *r) {
    attention_case(r, (tt_nn_attention_config){.n_embd = 8, .n_head = 2, .max_seq = 4,
                                               .causal = true, .bias = true});
}

// ---- block ----

static tt_tensor *fwd_block(const mod_ctx *c, tt_tensor *x) { return tt_nn_block_forward(c->m, x); }

// Biases stay off: with them a block has 16 parameters and gc_check takes 16 inputs in all
// (the attention/bias and mlp cases check biases).
static void block_case(gc_report *r, tt_nn_block_config cfg) {
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_block b;
    tt_nn_block_init(&b, &cfg, gc_rng());
    tt_set_default_dtype(prev);
    mod_ctx c = {.forward = fwd_block, .m = &b};
    norm_slots(&c, &b.norm1);
    attention_param_slots(&c, &b.attn);
    norm_slots(&c, &b.norm2);
    mlp_slots(&c, &b.mlp);
    attention_buffer_slots(&c, &b.attn);
    tt_params p;
    tt_params_init(&p);
    tt_nn_block_params(&b, &p, NULL);
    check_module(r, &c, gc_input(TT_SHAPE(2, 3, 8), -1, 1), &p);  // (B, T, C)
    tt_params_free(&p);
    tt_nn_block_free(&b);
}

static void block_layernorm_gelu(gc_report *r) {
    block_case(r, (tt_nn_block_config){
        .attn = {.n_embd = 8, .n_head = 2, .max_seq = 4, .causal = true},
        .mlp_hidden = 16, .act = TT_ACT_GELU, .norm = TT_NORM_LAYERNORM});
}

static void block_rmsnorm_relu2_gqa_rope_qknorm(gc_report *r) {
    block_case(r, (tt_nn_block_config){
        .attn = {.n_embd = 8, .n_head = 2, .n_kv_head = 1, .max_seq = 4, .causal = true,
                 .qk_norm = true, .rope = true},
        .act = TT_ACT_RELU2, .norm = TT_NORM_RMSNORM, .norm_eps = 1e-6});
}

// Llama's block: RMSNorm, GQA with RoPE (another base), SwiGLU of its own width; the norms
// without a gain (nanochat's) to check that kind too.
static void block_swiglu_rmsnorm_noweight(gc_report *r) {
    block_case(r, (tt_nn_block_config){.attn = {.n_embd = 8,
                                                .n_head = 2,
                                                .n_kv_head = 1,
                                                .max_seq = 4,
                                                .causal = true,
                                                .rope = true,
                                                .rope_base = 500.0},
                                       .mlp_hidden = 12,
                                       .act = TT_ACT_SWIGLU,
                                       .norm = TT_NORM_RMSNORM_NOWEIGHT,
                                       .norm_eps = 1e-6});
}

// PyTorch's TransformerEncoderLayer order (norm_first=False): the norms after the residuals.
static void block_post_norm(gc_report *r) {
    block_case(r, (tt_nn_block_config){
        .attn = {.n_embd = 8, .n_head = 2, .max_seq = 4}, .mlp_hidden = 16, .act = TT_ACT_GELU,
        .norm = TT_NORM_LAYERNORM, .post_norm = true});
}

const gc_module_case gc_modules_nn_transformer[] = {
    {"rope", "basic", rope_basic},
    {"rope", "with_offset", rope_with_offset},
    {"sinusoidal", "basic", sinusoidal_basic},
    {"pos_embedding", "basic", pos_embedding_basic},
    {"feedforward", "gelu", mlp_gelu},
    {"feedforward", "relu2", mlp_relu2},
    {"feedforward", "swiglu", mlp_swiglu},
    {"attention", "causal", attention_causal},
    {"attention", "noncausal", attention_noncausal},
    {"attention", "gqa", attention_gqa},
    {"attention", "qk_norm", attention_qk_norm},
    {"attention", "rope", attention_rope},
    {"attention", "bias", attention_bias},
    {"block", "layernorm_gelu", block_layernorm_gelu},
    {"block", "rmsnorm_relu2_gqa_rope_qknorm", block_rmsnorm_relu2_gqa_rope_qknorm},
    {"block", "post_norm", block_post_norm},
    {"block", "swiglu_rmsnorm_noweight", block_swiglu_rmsnorm_noweight},
    {NULL, NULL, NULL},
};

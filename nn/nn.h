// tinytorch.c nn: modules with named parameters, init schemes and losses.
//
//     tt_linear fc1, fc2;
//     tt_linear_init(&fc1, 2, 16, true, &rng);
//     tt_linear_init(&fc2, 16, 2, true, &rng);
//     tt_params params;
//     tt_params_init(&params);
//     tt_linear_params(&fc1, &params, "fc1");        // "fc1.weight", "fc1.bias"
//     tt_linear_params(&fc2, &params, "fc2");
//     tt_scope_begin();
//     tt_tensor *logits = tt_linear_forward(&fc2, tt_relu(tt_linear_forward(&fc1, x)));
//     tt_backward(tt_cross_entropy(logits, y, -1));
//     tt_scope_end();
//     ...
//     tt_params_free(&params);
//     tt_linear_free(&fc2);
//     tt_linear_free(&fc1);
//
// The module convention: a plain struct the caller owns; tt_<name>_init(m, config..., rng)
// creates its parameters (leaves with requires_grad, in tt_default_dtype(), never owned by a
// scope); tt_<name>_forward(m, x, ...) returns a new reference like any op;
// tt_<name>_params(m, list, prefix) appends its parameters under hierarchical names
// ("blocks.3.attn.q_proj.weight"); tt_<name>_free(m) releases them and is safe on a zeroed
// struct. Modules with dropout or batch norm have tt_<name>_train(m, training); composites
// propagate it. State that is saved but not trained (BatchNorm's running stats) is a module's
// buffers, tt_<name>_buffers(m, list, prefix); a checkpoint saves tt_module_state (parameters
// and buffers, PyTorch's state_dict names) while the optimizer gets tt_module_params.
// tt_<name>_module(m) wraps any module (layers, norms, MLP, attention, block, positional, a
// nested sequential, a user's struct) as a tt_module for tt_sequential; a composite lists its
// children once (tt_module_ops.children) and params/train/free walk them.
#ifndef TT_NN_H
#define TT_NN_H

#include "../autograd/autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- the default float dtype of new parameters and buffers (thread-local; starts as f32) ----

tt_dtype tt_set_default_dtype(tt_dtype dtype);  // returns the previous one
tt_dtype tt_default_dtype(void);

// ---- parameter lists ----

#define TT_NAME_MAX 256

typedef struct tt_param {
    char *name;         // owned
    tt_tensor *tensor;  // retained
} tt_param;

typedef struct tt_params {
    tt_param *items;
    int n, cap;
} tt_params;

void tt_params_init(tt_params *p);
void tt_params_free(tt_params *p);  // releases the references and names, keeps the tensors' owners
// Appends t as "prefix.name" (or "name" when prefix is NULL or ""); aborts on a duplicate name.
void tt_params_add(tt_params *p, const char *prefix, const char *name, tt_tensor *t);
tt_tensor *tt_params_get(const tt_params *p, const char *name);  // borrowed; NULL if absent
int64_t tt_params_numel(const tt_params *p);  // total number of elements
void tt_params_zero_grad(const tt_params *p);
// The name of the first parameter holding a NaN or an Inf (a diverged run, a corrupt file),
// NULL when all are finite; *index (when index is not NULL) the element, in row-major order.
const char *tt_params_nonfinite(const tt_params *p, int64_t *index);
// A debugging check for a model's parameter list: aborts, naming each one (shape, dtype, name if
// set, and the op that consumes it), when a leaf that requires grad reaches `loss` (a backward
// from loss would fill its .grad) but is not in p, the sign of a forgotten tt_<name>_params
// line that would silently leave a weight out of the optimizer and the checkpoint. Parameters
// the loss does not reach are fine, and so are buffers (they do not require grad), so the list
// may be tt_module_params' or tt_module_state's. Call it before tt_backward (which frees the
// graph).
void tt_params_check_reaches(const tt_params *p, tt_tensor *loss);
// "prefix.name" into buf (TT_NAME_MAX); returns buf. Aborts if it does not fit.
char *tt_name_join(char *buf, const char *prefix, const char *name);
char *tt_name_index(char *buf, const char *prefix, int index);  // "prefix.3"

// ---- a module behind a uniform interface (for tt_sequential) ----

// A composite (block, MLP, attention, sequential, a user's model) lists its direct children once,
// in its `children` callback; tt_module_params and tt_module_train recurse through it, and the
// composite's _free frees through it, so params/train/free are not written out three times.
// A custom module: a struct, a forward, and a static tt_module_ops naming the callbacks it has.
typedef struct tt_module tt_module;
typedef void (*tt_module_visit)(tt_module child, const char *name, void *ctx);

typedef struct tt_module_ops {
    const char *type;
    tt_tensor *(*forward)(void *self, tt_tensor *x);
    void (*params)(const void *self, tt_params *out, const char *prefix);  // its own; NULL: none
    void (*train)(void *self, bool training);                              // its own; NULL: no-op
    // visit(child, name, ctx) for each direct child in order; its parameters are named
    // "prefix.name.…". NULL: no children.
    void (*children)(void *self, tt_module_visit visit, void *ctx);
    // Releases what the module owns, children included (its tt_<name>_free); NULL: nothing.
    // Not called by tt_sequential, which borrows its modules.
    void (*free)(void *self);
    // Its own buffers (PyTorch's register_buffer: state saved and loaded with the model but
    // not trained, such as BatchNorm's running stats), appended like params; NULL: none.
    void (*buffers)(const void *self, tt_params *out, const char *prefix);
    // True when the forward is its children run one after another, each on the previous one's
    // output (a Sequential): tt_model_summary then measures each child on its own input.
    bool chain;
} tt_module_ops;

struct tt_module {
    void *self;
    const tt_module_ops *ops;
};

tt_tensor *tt_module_forward(tt_module m, tt_tensor *x);
// Its own parameters, then each child's under "prefix.name".
void tt_module_params(tt_module m, tt_params *out, const char *prefix);
void tt_module_train(tt_module m, bool training);  // itself, then each child
void tt_module_children(tt_module m, tt_module_visit visit, void *ctx);  // direct children
void tt_module_free(tt_module m);  // ops->free, if any
// Buffers: tensors without requires_grad that a module updates itself (running statistics)
// and that belong in a checkpoint but not in the optimizer. A buffer list is a tt_params;
// tt_module_buffers appends its own buffers, then each child's under "prefix.name".
void tt_module_buffers(tt_module m, tt_params *out, const char *prefix);
// The module's whole state under PyTorch's state_dict names and order: its own parameters,
// its own buffers, then each child's state ("0.weight", "1.weight", "1.bias",
// "1.running_mean", "1.running_var", "1.num_batches_tracked", ...). Give the optimizer
// tt_module_params and the checkpoint tt_module_state:
//
//     tt_params params, state;
//     tt_params_init(&params);
//     tt_params_init(&state);
//     tt_module_params(model, &params, NULL);  // for the optimizer
//     tt_module_state(model, &state, NULL);    // for tt_ckpt_add_params / _restore_params
//     ...
//     tt_ckpt_add_params(&ck, "model.", &state);          // save
//     tt_ckpt_restore_params(&ck, "model.", &state);      // load: copies the values in place;
//                                                         // buffers stay without requires_grad
void tt_module_state(tt_module m, tt_params *out, const char *prefix);

// torch.nn.Identity: returns x. No parameters.
tt_module tt_identity_module(void);
// torch.nn.Flatten: merges dims start_dim .. end_dim of x into one (negative dims count from
// the end; PyTorch's defaults are 1 and -1, i.e. keep the batch dim). A view when x's strides
// allow it, else a copy (tt_reshape). No parameters; the module holds no pointer to free.
tt_module tt_flatten_module(int start_dim, int end_dim);
tt_tensor *tt_flatten_dims(tt_tensor *x, int start_dim, int end_dim);  // the same as a function

// ---- init schemes (in place on a tensor; every one takes an explicit rng) ----
// fan_in / fan_out follow PyTorch: for a (out, in, ...) weight, fan_in = in * receptive field.

typedef enum tt_fan_mode { TT_FAN_IN, TT_FAN_OUT } tt_fan_mode;

void tt_init_zeros_(tt_tensor *t);
void tt_init_ones_(tt_tensor *t);
void tt_init_normal_(tt_tensor *t, tt_rng *rng, double mean, double std);
void tt_init_uniform_(tt_tensor *t, tt_rng *rng, double lo, double hi);
void tt_init_xavier_uniform_(tt_tensor *t, tt_rng *rng, double gain);
void tt_init_xavier_normal_(tt_tensor *t, tt_rng *rng, double gain);
// gain sqrt(2 / (1 + a^2)) (a: leaky-ReLU slope, 0 for ReLU).
void tt_init_kaiming_uniform_(tt_tensor *t, tt_rng *rng, double a, tt_fan_mode mode);
void tt_init_kaiming_normal_(tt_tensor *t, tt_rng *rng, double a, tt_fan_mode mode);
// GPT-2's scaled init of residual projections: normal(0, 0.02 / sqrt(2 * n_layer)).
void tt_init_gpt2_residual_(tt_tensor *t, tt_rng *rng, int n_layer);
int64_t tt_fan_in(const tt_tensor *t);
int64_t tt_fan_out(const tt_tensor *t);

// ---- Linear: y = x W^T + b, W (out, in), b (out,); PyTorch's default init ----

typedef struct tt_linear {
    tt_tensor *weight;  // (out, in)
    tt_tensor *bias;    // (out,) or NULL
    int64_t in_features, out_features;
    struct tt_qlinear *quantized;  // owned; when set the forward runs it (tt_linear_quantize)
    struct tt_linear *factors;     // owned pair when low rank (tt_linear_low_rank); weight NULL
    struct tt_observer *observer;  // owned; when set the f32 forward records its input's range
} tt_linear;

void tt_linear_init(tt_linear *m, int64_t in_features, int64_t out_features, bool bias,
                    tt_rng *rng);
tt_tensor *tt_linear_forward(tt_linear *m, tt_tensor *x);  // (..., in) -> (..., out)
void tt_linear_params(const tt_linear *m, tt_params *out, const char *prefix);
void tt_linear_free(tt_linear *m);
tt_module tt_linear_module(tt_linear *m);

// ---- Embedding: a (V, C) table, N(0, 1) init ----

typedef struct tt_embedding_layer {
    tt_tensor *weight;  // (V, C)
    int64_t num, dim;
} tt_embedding_layer;

void tt_embedding_init(tt_embedding_layer *m, int64_t num, int64_t dim, tt_rng *rng);
tt_tensor *tt_embedding_forward(tt_embedding_layer *m, tt_tensor *indices);  // (...) -> (..., C)
void tt_embedding_params(const tt_embedding_layer *m, tt_params *out, const char *prefix);
void tt_embedding_free(tt_embedding_layer *m);
tt_module tt_embedding_module(tt_embedding_layer *m);  // x: the indices

// ---- EmbeddingBag: sums, means or maxima of bags of rows of a (V, C) table ----
// F.embedding_bag / torch.nn.EmbeddingBag. input (TT_I32 / TT_I64, values in [0, V)) is either
// 2-D (B, N), each row a bag (offsets NULL), or 1-D (N) with 1-D offsets: bag b is
// input[offsets[b] : offsets[b + 1]], the last bag running to the end of input; with
// include_last_offset, offsets has B + 1 entries and its last one ends the last bag.
// offsets[0] must be 0 and offsets must not decrease. Entries equal to padding_idx (when
// use_padding_idx) are left out of their bag and of a mean's count. An empty bag gives zeros.
// per_sample_weights (input's shape, weight's dtype; TT_BAG_SUM only, as PyTorch) scales each
// entry's row. TT_BAG_MAX gives each column's maximum in the bag, its gradient going to the
// first maximal entry. Output (B, C). A composition of index_select, mul, index_add, div and
// max_dim: the gradient reaches weight (never the padding row) and per_sample_weights.
//
//     tt_embedding_bag_opts o = {.mode = TT_BAG_MEAN, .offsets = offsets};
//     tt_tensor *y = tt_embedding_bag(table, tokens, &o);  // (N) with (B) offsets -> (B, C)

typedef enum tt_bag_mode { TT_BAG_SUM, TT_BAG_MEAN, TT_BAG_MAX, TT_BAG_MODE_COUNT } tt_bag_mode;

typedef struct tt_embedding_bag_opts {
    tt_bag_mode mode;                // PyTorch's default is mean; a zeroed struct means sum
    tt_tensor *offsets;              // (B,) or (B + 1,) with a 1-D input; NULL with a 2-D one
    bool include_last_offset;
    tt_tensor *per_sample_weights;   // NULL: none
    bool use_padding_idx;
    int64_t padding_idx;             // in [-V, V): negative counts from the end (as PyTorch)
} tt_embedding_bag_opts;

// opts NULL: TT_BAG_SUM with a 2-D input and no options.
tt_tensor *tt_embedding_bag(tt_tensor *weight, tt_tensor *input,
                            const tt_embedding_bag_opts *opts);

// The module holds the table ("weight", N(0, 1) init as nn.EmbeddingBag) and the options;
// set include_last_offset after init if needed.
typedef struct tt_embedding_bag_layer {
    tt_tensor *weight;  // (V, C)
    int64_t num, dim;
    tt_bag_mode mode;
    bool include_last_offset;
    bool use_padding_idx;  // set by tt_embedding_bag_set_padding_idx
    int64_t padding_idx;   // in [0, V)
} tt_embedding_bag_layer;

void tt_embedding_bag_init(tt_embedding_bag_layer *m, int64_t num, int64_t dim,
                           tt_bag_mode mode, tt_rng *rng);
// Leaves padding_idx (in [-V, V)) out of every bag and zeroes its row, as the padding_idx
// argument of nn.EmbeddingBag does at construction.
void tt_embedding_bag_set_padding_idx(tt_embedding_bag_layer *m, int64_t padding_idx);
// input (B, N) with offsets NULL, or (N) with offsets; per_sample_weights NULL or input's
// shape (TT_BAG_SUM) -> (B, C).
tt_tensor *tt_embedding_bag_forward(tt_embedding_bag_layer *m, tt_tensor *input,
                                    tt_tensor *offsets, tt_tensor *per_sample_weights);
void tt_embedding_bag_params(const tt_embedding_bag_layer *m, tt_params *out,
                             const char *prefix);
void tt_embedding_bag_free(tt_embedding_bag_layer *m);
// For tt_sequential: x is a 2-D (B, N) input, no per-sample weights.
tt_module tt_embedding_bag_module(tt_embedding_bag_layer *m);

// ---- positional encodings ----

// Learned: a (max_len, C) table; forward(x (B, T, C)) returns x + table[pos : pos + T].
typedef struct tt_pos_embedding {
    tt_tensor *weight;  // (max_len, C)
    int64_t max_len, dim;
} tt_pos_embedding;

void tt_pos_embedding_init(tt_pos_embedding *m, int64_t max_len, int64_t dim, tt_rng *rng);
tt_tensor *tt_pos_embedding_forward(tt_pos_embedding *m, tt_tensor *x, int64_t pos);
void tt_pos_embedding_params(const tt_pos_embedding *m, tt_params *out, const char *prefix);
void tt_pos_embedding_free(tt_pos_embedding *m);
tt_module tt_pos_embedding_module(tt_pos_embedding *m);  // forward at pos 0

// Sinusoidal (Vaswani et al.): no parameters; forward(x (B, T, C)) returns x + PE[pos : pos + T]
// with PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(same).
typedef struct tt_sinusoidal {
    tt_tensor *table;  // (max_len, C) buffer
    int64_t max_len, dim;
} tt_sinusoidal;

void tt_sinusoidal_init(tt_sinusoidal *m, int64_t max_len, int64_t dim);
tt_tensor *tt_sinusoidal_forward(tt_sinusoidal *m, tt_tensor *x, int64_t pos);
void tt_sinusoidal_free(tt_sinusoidal *m);
tt_module tt_sinusoidal_module(tt_sinusoidal *m);  // forward at pos 0

// Rotary (RoPE, Su et al.), no parameters: rotates pairs (i, i + HS/2) of each head's vector by
// angle p * base^(-2i/HS) (the "rotate half" layout). x (B, NH, T, HS) -> same shape, positions
// pos .. pos + T - 1.
typedef struct tt_rope {
    tt_tensor *cos, *sin;  // (max_len, HS) buffers
    int64_t head_dim, max_len;
    double base;
} tt_rope;

void tt_rope_init(tt_rope *m, int64_t head_dim, int64_t max_len, double base);
tt_tensor *tt_rope_forward(tt_rope *m, tt_tensor *x, int64_t pos);
void tt_rope_free(tt_rope *m);
tt_module tt_rope_module(tt_rope *m);  // forward at pos 0

// ---- normalization ----

typedef struct tt_layernorm_layer {
    tt_tensor *weight, *bias;  // (C,) each; NULL when !affine (bias also NULL when !bias)
    int64_t dim;
    double eps;
} tt_layernorm_layer;

void tt_layernorm_init(tt_layernorm_layer *m, int64_t dim, double eps, bool affine, bool bias);
tt_tensor *tt_layernorm_forward(tt_layernorm_layer *m, tt_tensor *x);
void tt_layernorm_params(const tt_layernorm_layer *m, tt_params *out, const char *prefix);
void tt_layernorm_free(tt_layernorm_layer *m);
tt_module tt_layernorm_module(tt_layernorm_layer *m);

typedef struct tt_rmsnorm_layer {
    tt_tensor *weight;  // (C,) or NULL
    int64_t dim;
    double eps;
} tt_rmsnorm_layer;

void tt_rmsnorm_init(tt_rmsnorm_layer *m, int64_t dim, double eps, bool weight);
tt_tensor *tt_rmsnorm_forward(tt_rmsnorm_layer *m, tt_tensor *x);
void tt_rmsnorm_params(const tt_rmsnorm_layer *m, tt_params *out, const char *prefix);
void tt_rmsnorm_free(tt_rmsnorm_layer *m);
tt_module tt_rmsnorm_module(tt_rmsnorm_layer *m);

// Either kind behind one type (what a transformer block holds).
typedef enum tt_norm_kind { TT_NORM_LAYERNORM, TT_NORM_RMSNORM } tt_norm_kind;
typedef struct tt_norm {
    tt_norm_kind kind;
    tt_layernorm_layer ln;
    tt_rmsnorm_layer rms;
} tt_norm;

void tt_norm_init(tt_norm *m, tt_norm_kind kind, int64_t dim, double eps, bool bias);
tt_tensor *tt_norm_forward(tt_norm *m, tt_tensor *x);
void tt_norm_params(const tt_norm *m, tt_params *out, const char *prefix);
void tt_norm_free(tt_norm *m);
tt_module tt_norm_module(tt_norm *m);

// ---- activations ----

typedef enum tt_act {
    TT_ACT_IDENTITY,
    TT_ACT_RELU,
    TT_ACT_GELU,       // exact (erf)
    TT_ACT_GELU_TANH,  // GPT-2's approximation
    TT_ACT_RELU2,      // relu(x)^2
    TT_ACT_SILU,
    TT_ACT_TANH,
    TT_ACT_SIGMOID,
    TT_ACT_SOFTMAX,    // over the last dim
    TT_ACT_COUNT
} tt_act;

tt_tensor *tt_activate(tt_act act, tt_tensor *x);
const char *tt_act_name(tt_act act);          // "relu", "gelu", ...
bool tt_act_parse(const char *name, tt_act *out);  // false for an unknown name
tt_module tt_act_module(tt_act act);

// ---- dropout ----

typedef struct tt_dropout_layer {
    double p;
    bool training;  // starts true, as in PyTorch
    tt_rng *rng;    // borrowed: the model owns its rng
} tt_dropout_layer;

void tt_dropout_init(tt_dropout_layer *m, double p, tt_rng *rng);
tt_tensor *tt_dropout_forward(tt_dropout_layer *m, tt_tensor *x);
void tt_dropout_train(tt_dropout_layer *m, bool training);
tt_module tt_dropout_module(tt_dropout_layer *m);

// ---- MLP: torchvision.ops.MLP (without its norm layers) ----
// widths = {in, h1, ..., out}, n_widths >= 2: n_widths - 1 Linear layers (PyTorch's default
// init, drawn in order). After each hidden Linear come act and Dropout(dropout); after the
// last Linear only a Dropout (torchvision's layout). The parameters are named as the
// state_dict of torchvision.ops.MLP (an nn.Sequential): the Linear layers sit at 0, 3, 6, ...
// ("0.weight", "0.bias", "3.weight", ...), so a PyTorch checkpoint maps one to one.
//
//     tt_mlp mlp;
//     tt_mlp_init(&mlp, 3, (int64_t[]){784, 256, 10}, TT_ACT_RELU, true, 0.1, &rng);
//     tt_tensor *logits = tt_mlp_forward(&mlp, x);  // (B, 784) -> (B, 10)

typedef struct tt_mlp {
    tt_linear *layers;        // n_layers (owned): widths[i] -> widths[i + 1]
    tt_dropout_layer *drops;  // n_layers (owned): after each layer
    int n_layers;             // n_widths - 1
    tt_act act;
} tt_mlp;

void tt_mlp_init(tt_mlp *m, int n_widths, const int64_t *widths, tt_act act, bool bias,
                 double dropout, tt_rng *rng);
tt_tensor *tt_mlp_forward(tt_mlp *m, tt_tensor *x);  // (..., widths[0]) -> (..., widths[last])
void tt_mlp_params(const tt_mlp *m, tt_params *out, const char *prefix);  // 0.*, 3.*, ...
void tt_mlp_train(tt_mlp *m, bool training);
void tt_mlp_free(tt_mlp *m);
tt_module tt_mlp_module(tt_mlp *m);

// ---- feed-forward (the transformer block's MLP): dropout(proj(act(fc(x)))),
// fc: C -> hidden, proj: hidden -> C; a block holds it as `mlp` (parameters "mlp.fc.weight", ...)

typedef struct tt_feedforward {
    tt_linear fc, proj;
    tt_act act;
    tt_dropout_layer drop;
} tt_feedforward;

void tt_feedforward_init(tt_feedforward *m, int64_t dim, int64_t hidden, tt_act act, bool bias,
                         double dropout, tt_rng *rng);
tt_tensor *tt_feedforward_forward(tt_feedforward *m, tt_tensor *x);
// fc.*, proj.*
void tt_feedforward_params(const tt_feedforward *m, tt_params *out, const char *prefix);
void tt_feedforward_train(tt_feedforward *m, bool training);
void tt_feedforward_free(tt_feedforward *m);
tt_module tt_feedforward_module(tt_feedforward *m);

// ---- multi-head attention ----

typedef struct tt_attention_config {
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
} tt_attention_config;

typedef struct tt_attention {
    tt_attention_config cfg;
    int64_t head_dim;
    tt_linear q_proj, k_proj, v_proj, o_proj;
    tt_rmsnorm_layer q_norm, k_norm;  // when qk_norm
    tt_rope rope;                     // when rope
    tt_tensor *mask;                  // (max_seq, max_seq) i32, 1 above the diagonal
    tt_dropout_layer attn_drop, resid_drop;
} tt_attention;

void tt_attention_init(tt_attention *m, const tt_attention_config *cfg, tt_rng *rng);
// x (B, T, C) -> (B, T, C), positions 0 .. T-1.
tt_tensor *tt_attention_forward(tt_attention *m, tt_tensor *x);
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
// tt_attention_forward_cached (the KV cache) stays causal-only: it takes no masks.
tt_tensor *tt_attention_forward_mask(tt_attention *m, tt_tensor *x, tt_tensor *attn_mask,
                                     tt_tensor *key_padding_mask);
// Incremental decoding with a key/value cache: x (B, T, C) holds positions pos .. pos + T - 1;
// their keys and values (after QK-norm and RoPE, before the grouped-query repeat) are written
// into k_cache and v_cache, (B, NKV, L, HS) with L >= pos + T, and the queries attend over
// positions 0 .. pos + T - 1 (causally when cfg.causal). Meant for grad mode off.
tt_tensor *tt_attention_forward_cached(tt_attention *m, tt_tensor *x, tt_tensor *k_cache,
                                       tt_tensor *v_cache, int64_t pos);
void tt_attention_params(const tt_attention *m, tt_params *out, const char *prefix);
void tt_attention_train(tt_attention *m, bool training);
void tt_attention_free(tt_attention *m);
tt_module tt_attention_module(tt_attention *m);  // self-attention: tt_attention_forward(m, x)

// ---- transformer block (pre-norm): x + attn(norm1(x)), then + mlp(norm2(x)) ----

typedef struct tt_block_config {
    tt_attention_config attn;
    int64_t mlp_hidden;  // 0 means 4 * n_embd
    tt_act act;
    tt_norm_kind norm;
    double norm_eps;     // 0 means 1e-5
} tt_block_config;

typedef struct tt_block {
    tt_norm norm1, norm2;
    tt_attention attn;
    tt_feedforward mlp;
} tt_block;

void tt_block_init(tt_block *m, const tt_block_config *cfg, tt_rng *rng);
tt_tensor *tt_block_forward(tt_block *m, tt_tensor *x);
// The same through tt_attention_forward_cached (see there).
tt_tensor *tt_block_forward_cached(tt_block *m, tt_tensor *x, tt_tensor *k_cache,
                                   tt_tensor *v_cache, int64_t pos);
void tt_block_params(const tt_block *m, tt_params *out, const char *prefix);  // norm1, attn, ...
void tt_block_train(tt_block *m, bool training);
void tt_block_free(tt_block *m);
tt_module tt_block_module(tt_block *m);

// ---- sequential: runs modules in order; names their parameters "0.", "1.", ... ----

typedef struct tt_sequential {
    tt_module *items;  // the modules are borrowed: their owner frees them
    int n, cap;
} tt_sequential;

void tt_sequential_init(tt_sequential *s);
void tt_sequential_add(tt_sequential *s, tt_module m);
tt_tensor *tt_sequential_forward(tt_sequential *s, tt_tensor *x);
void tt_sequential_params(const tt_sequential *s, tt_params *out, const char *prefix);
void tt_sequential_train(tt_sequential *s, bool training);
void tt_sequential_free(tt_sequential *s);
// A sequential inside another: its parameters are named "<index>.<inner index>.…", train
// propagates to its modules.
tt_module tt_sequential_module(tt_sequential *s);

// ---- recurrent layers (nn/recurrent.c) ----
// torch.nn.RNN / LSTM / GRU: multi-layer, unidirectional, no dropout between layers, no
// proj_size. x is (T, B, in), or (B, T, in) when batch_first, or unbatched (T, in); the output
// is (T, B, H) / (B, T, H) / (T, H): the last layer's h at every step (contiguous). h0 and c0
// are (L, B, H) ((L, H) for an unbatched x) or NULL for zeros; h_n / c_n, when not NULL,
// receive the final states of every layer in that shape (new references, like the output).
// PyTorch's equations and gate order (G gates: RNN 1, LSTM 4 = i f g o, GRU 3 = r z n):
//   RNN   h' = act(W_ih x + b_ih + W_hh h + b_hh), act tanh or relu
//   LSTM  i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of W_ih x + b_ih + W_hh h + b_hh;
//         c' = f * c + i * g; h' = o * tanh(c')
//   GRU   r, z = sigmoid(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z});
//         n = tanh(W_in x + b_in + r * (W_hn h + b_hn)); h' = (1 - z) * n + z * h
// Every weight and bias starts U(-k, k), k = 1/sqrt(H), and is named as in PyTorch's
// state_dict: weight_ih_l0 (G*H, in), weight_hh_l0 (G*H, H), bias_ih_l0, bias_hh_l0 (G*H,),
// then _l1 ... (whose weight_ih is (G*H, H)). A composition of affine, sigmoid, tanh, mul, add
// and stack: the gradients come from those ops.
//
//     tt_lstm lstm;
//     tt_lstm_init(&lstm, 3, 16, 2, true, true, &rng);  // in 3, hidden 16, 2 layers, bias,
//     tt_tensor *h_n, *c_n;                              // batch_first
//     tt_tensor *y = tt_lstm_forward(&lstm, x, NULL, NULL, &h_n, &c_n);  // (B, T, 16)

typedef struct tt_recurrent_layer {
    tt_tensor *weight_ih;           // (G*H, in) in layer 0, (G*H, H) above
    tt_tensor *weight_hh;           // (G*H, H)
    tt_tensor *bias_ih, *bias_hh;   // (G*H,) each, or NULL without bias
} tt_recurrent_layer;

typedef struct tt_rnn {
    tt_recurrent_layer *layers;  // num_layers entries (owned)
    int64_t input_size, hidden_size;
    int num_layers;
    bool bias, batch_first;
    tt_act nonlinearity;         // TT_ACT_TANH or TT_ACT_RELU
} tt_rnn;

void tt_rnn_init(tt_rnn *m, int64_t input_size, int64_t hidden_size, int num_layers,
                 tt_act nonlinearity, bool bias, bool batch_first, tt_rng *rng);
tt_tensor *tt_rnn_forward(tt_rnn *m, tt_tensor *x, tt_tensor *h0, tt_tensor **h_n);
void tt_rnn_params(const tt_rnn *m, tt_params *out, const char *prefix);
void tt_rnn_free(tt_rnn *m);
tt_module tt_rnn_module(tt_rnn *m);  // for tt_sequential: the output sequence, zero h0

typedef struct tt_lstm {
    tt_recurrent_layer *layers;  // num_layers entries (owned)
    int64_t input_size, hidden_size;
    int num_layers;
    bool bias, batch_first;
} tt_lstm;

void tt_lstm_init(tt_lstm *m, int64_t input_size, int64_t hidden_size, int num_layers,
                  bool bias, bool batch_first, tt_rng *rng);
tt_tensor *tt_lstm_forward(tt_lstm *m, tt_tensor *x, tt_tensor *h0, tt_tensor *c0,
                           tt_tensor **h_n, tt_tensor **c_n);
void tt_lstm_params(const tt_lstm *m, tt_params *out, const char *prefix);
void tt_lstm_free(tt_lstm *m);
tt_module tt_lstm_module(tt_lstm *m);  // for tt_sequential: the output sequence, zero h0, c0

typedef struct tt_gru {
    tt_recurrent_layer *layers;  // num_layers entries (owned)
    int64_t input_size, hidden_size;
    int num_layers;
    bool bias, batch_first;
} tt_gru;

void tt_gru_init(tt_gru *m, int64_t input_size, int64_t hidden_size, int num_layers,
                 bool bias, bool batch_first, tt_rng *rng);
tt_tensor *tt_gru_forward(tt_gru *m, tt_tensor *x, tt_tensor *h0, tt_tensor **h_n);
void tt_gru_params(const tt_gru *m, tt_params *out, const char *prefix);
void tt_gru_free(tt_gru *m);
tt_module tt_gru_module(tt_gru *m);  // for tt_sequential: the output sequence, zero h0

// ---- losses ----
// PyTorch's functional losses (torch.nn.functional), named and reduced as there. The input and
// the target of an elementwise loss have one float dtype and exactly one shape (a loss never
// broadcasts: a (N,) prediction against an (N, 1) target would silently average an (N, N)
// matrix). NONE returns the per-element losses, SUM their sum, MEAN their mean (0-dim);
// BATCHMEAN (tt_kl_div only) the sum divided by the size of dim 0. MEAN of an empty input aborts.

typedef enum tt_reduction {
    TT_REDUCTION_NONE,
    TT_REDUCTION_MEAN,
    TT_REDUCTION_SUM,
    TT_REDUCTION_BATCHMEAN,  // tt_kl_div only
    TT_REDUCTION_COUNT
} tt_reduction;

// tt_cross_entropy / tt_cross_entropy_smooth (autograd.h) are the fused classification losses
// (classes in the LAST dim, mean over the non-ignored targets).
tt_tensor *tt_mse_loss(tt_tensor *pred, tt_tensor *target);  // mean((pred - target)^2)
// mean(max(x, 0) - x t + log(1 + exp(-|x|))): stable for any logit.
tt_tensor *tt_bce_with_logits(tt_tensor *logits, tt_tensor *targets);

// (pred - target)^2, reduced.
tt_tensor *tt_mse_loss_ex(tt_tensor *pred, tt_tensor *target, tt_reduction reduction);
// |x - y|, reduced.
tt_tensor *tt_l1_loss(tt_tensor *x, tt_tensor *y, tt_reduction reduction);
// With z = |x - y|: 0.5 z^2 / beta if z < beta, else z - 0.5 beta; beta >= 0 (0: l1_loss).
tt_tensor *tt_smooth_l1_loss(tt_tensor *x, tt_tensor *y, double beta, tt_reduction reduction);
// With z = |x - y|: 0.5 z^2 if z < delta, else delta (z - 0.5 delta); delta > 0.
tt_tensor *tt_huber_loss(tt_tensor *x, tt_tensor *y, double delta, tt_reduction reduction);
// F.kl_div: input holds log-probabilities; target probabilities (t log t - t x, 0 where t == 0)
// or, with log_target, log-probabilities (e^t (t - x)). BATCHMEAN is the mathematical KL
// divergence of a batch (sum / N); MEAN divides by every element, as PyTorch does.
tt_tensor *tt_kl_div(tt_tensor *input, tt_tensor *target, tt_reduction reduction,
                     bool log_target);
// F.binary_cross_entropy on probabilities in [0, 1] (aborts otherwise):
// -w (t log p + (1 - t) log(1 - p)) with each log clamped at -100 as PyTorch does, so p = 0 or 1
// gives a finite loss (the clamped term then has gradient 0). weight: NULL or broadcastable to
// probs' shape, a constant rescaling of each element.
tt_tensor *tt_binary_cross_entropy(tt_tensor *probs, tt_tensor *targets, tt_tensor *weight,
                                   tt_reduction reduction);
// tt_bce_with_logits with a weight (NULL or broadcastable to logits' shape) and a reduction.
tt_tensor *tt_bce_with_logits_ex(tt_tensor *logits, tt_tensor *targets, tt_tensor *weight,
                                 tt_reduction reduction);
// F.nll_loss: logp (N, C) or (N, C, d1, ...) (classes in dim 1) or (C,), targets (N) or
// (N, d1, ...) or 0-dim, TT_I32/TT_I64 in [0, C) or equal to ignore_index. The element loss is
// -weight[t] logp[n, t, ...] (0 where ignored); MEAN divides the sum by the summed weights of
// the non-ignored targets (NaN when every target is ignored, as in PyTorch). weight: NULL or
// (C,) of logp's dtype, a constant (no gradient flows to it).
tt_tensor *tt_nll_loss(tt_tensor *logp, tt_tensor *targets, tt_tensor *weight,
                       int64_t ignore_index, tt_reduction reduction);
// F.cross_entropy with class-index targets, in PyTorch's layout (classes in dim 1; dim 0 for a
// (C,) input), unlike tt_cross_entropy: tt_nll_loss(tt_log_softmax(logits, 1), ...) when
// label_smoothing is 0; otherwise (1 - eps) nll + eps / C times the (weighted) sum of -logp over
// the classes, reduced like nll (MEAN: by the summed weights of the used targets), as PyTorch.
// label_smoothing in [0, 1].
tt_tensor *tt_cross_entropy_ex(tt_tensor *logits, tt_tensor *targets, tt_tensor *weight,
                               int64_t ignore_index, tt_reduction reduction,
                               double label_smoothing);

// ---- convolutions: nn/conv.c ----
// torch.nn.Conv2d: y = tt_conv2d(x, weight, bias, ...), weight (out, in / groups, kh, kw),
// bias (out,) or NULL; PyTorch's default init (kaiming_uniform a = sqrt 5: U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)), fan_in = in / groups * kh * kw, the same bound for the bias). Parameters
// "weight", "bias". Options by name; zeros (or NULL opts) mean stride 1, padding 0, dilation
// 1, groups 1: &(tt_conv2d_opts){.padding = {1, 1}}.

typedef struct tt_conv2d_opts {
    int64_t stride[2], padding[2], dilation[2];  // {H, W}
    int64_t groups;
} tt_conv2d_opts;

typedef struct tt_conv2d_layer {
    tt_tensor *weight;  // (out, in / groups, kh, kw)
    tt_tensor *bias;    // (out,) or NULL
    int64_t in_channels, out_channels;
    tt_conv2d_opts opts;  // with the defaults filled in
} tt_conv2d_layer;

void tt_conv2d_layer_init(tt_conv2d_layer *m, int64_t in_channels, int64_t out_channels,
                          int64_t kh, int64_t kw, const tt_conv2d_opts *opts, bool bias,
                          tt_rng *rng);
tt_tensor *tt_conv2d_layer_forward(tt_conv2d_layer *m, tt_tensor *x);  // (N, in, H, W)
void tt_conv2d_layer_params(const tt_conv2d_layer *m, tt_params *out, const char *prefix);
void tt_conv2d_layer_free(tt_conv2d_layer *m);
tt_module tt_conv2d_layer_module(tt_conv2d_layer *m);

// ---- batch norm and pooling modules: nn/norm_batch.c, nn/pool.c ----
// torch.nn.BatchNorm1d ((N, C) or (N, C, L)) and BatchNorm2d ((N, C, H, W)) over
// tt_batch_norm. Parameters "weight" (ones) and "bias" (zeros) when affine; buffers
// "running_mean" (zeros), "running_var" (ones), both (C,) in tt_default_dtype(), and
// "num_batches_tracked" (a 0-dim TT_I64) when track_running_stats, listed by
// tt_batchnorm_buffers / tt_module_buffers and saved by a checkpoint of tt_module_state.
// Training (the state after init): normalises with the batch's mean and biased variance and,
// when tracking, adds 1 to num_batches_tracked and updates r = (1 - f) r + f s with s the
// batch's mean and UNBIASED variance, f = momentum, or 1 / num_batches_tracked (a
// cumulative moving average, PyTorch's momentum=None) when momentum is negative or NAN.
// Eval (tt_batchnorm_train(m, false) or tt_module_train): the running stats; without
// track_running_stats the batch's stats in both modes (as PyTorch).
//
//     tt_batchnorm_opts o = tt_batchnorm_default_opts();  // eps 1e-5, momentum 0.1, ...
//     tt_batchnorm_layer bn;
//     tt_batchnorm2d_init(&bn, 16, &o);                   // or NULL for the defaults

typedef struct tt_batchnorm_opts {
    double eps;                // 1e-5
    double momentum;           // 0.1; < 0 or NAN: cumulative moving average
    bool affine;               // true
    bool track_running_stats;  // true
} tt_batchnorm_opts;

typedef struct tt_batchnorm_layer {
    tt_tensor *weight, *bias;              // (C,) each, or NULL without affine
    tt_tensor *running_mean, *running_var; // (C,) buffers, or NULL without tracking
    tt_tensor *num_batches_tracked;        // 0-dim TT_I64 buffer, or NULL without tracking
    int64_t num_features;
    int dims;                              // 1: BatchNorm1d, 2: BatchNorm2d
    tt_batchnorm_opts opts;
    bool training;
} tt_batchnorm_layer;

tt_batchnorm_opts tt_batchnorm_default_opts(void);
void tt_batchnorm1d_init(tt_batchnorm_layer *m, int64_t num_features,
                         const tt_batchnorm_opts *opts);  // opts NULL: the defaults
void tt_batchnorm2d_init(tt_batchnorm_layer *m, int64_t num_features,
                         const tt_batchnorm_opts *opts);
tt_tensor *tt_batchnorm_forward(tt_batchnorm_layer *m, tt_tensor *x);  // x's shape
void tt_batchnorm_params(const tt_batchnorm_layer *m, tt_params *out, const char *prefix);
void tt_batchnorm_buffers(const tt_batchnorm_layer *m, tt_params *out, const char *prefix);
void tt_batchnorm_train(tt_batchnorm_layer *m, bool training);
void tt_batchnorm_free(tt_batchnorm_layer *m);
tt_module tt_batchnorm_module(tt_batchnorm_layer *m);  // "BatchNorm1d" / "BatchNorm2d"

// torch.nn.MaxPool2d / AvgPool2d / AdaptiveAvgPool2d over tt_max_pool2d, tt_avg_pool2d and
// tt_adaptive_avg_pool2d (x (N, C, H, W) or (C, H, W)); no parameters, nothing to free.
// stride NULL or {0, 0} means the kernel (PyTorch's stride=None), padding NULL means 0.
// No dilation, ceil_mode or return_indices (tt_max_pool2d gives the indices).
typedef struct tt_maxpool2d_layer {
    int64_t kernel[2], stride[2], padding[2];  // {H, W}
} tt_maxpool2d_layer;

void tt_maxpool2d_init(tt_maxpool2d_layer *m, int64_t kh, int64_t kw, const int64_t stride[2],
                       const int64_t padding[2]);
tt_tensor *tt_maxpool2d_forward(tt_maxpool2d_layer *m, tt_tensor *x);
tt_module tt_maxpool2d_module(tt_maxpool2d_layer *m);

typedef struct tt_avgpool2d_layer {
    int64_t kernel[2], stride[2], padding[2];  // {H, W}
    bool count_include_pad;                    // PyTorch's default: true
} tt_avgpool2d_layer;

void tt_avgpool2d_init(tt_avgpool2d_layer *m, int64_t kh, int64_t kw, const int64_t stride[2],
                       const int64_t padding[2], bool count_include_pad);
tt_tensor *tt_avgpool2d_forward(tt_avgpool2d_layer *m, tt_tensor *x);
tt_module tt_avgpool2d_module(tt_avgpool2d_layer *m);

typedef struct tt_adaptive_avgpool2d_layer {
    int64_t out_h, out_w;
} tt_adaptive_avgpool2d_layer;

void tt_adaptive_avgpool2d_init(tt_adaptive_avgpool2d_layer *m, int64_t out_h, int64_t out_w);
tt_tensor *tt_adaptive_avgpool2d_forward(tt_adaptive_avgpool2d_layer *m, tt_tensor *x);
tt_module tt_adaptive_avgpool2d_module(tt_adaptive_avgpool2d_layer *m);

// ---- transposed and 1-D convolutions, channel dropout, upsampling, unflatten: nn/conv.c ----
// torch.nn.ConvTranspose2d: y = tt_conv_transpose2d(x, weight, bias, ...), weight (in, out /
// groups, kh, kw), bias (out,) or NULL. PyTorch's default init: U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) on both with fan_in = weight.size(1) * kh * kw = out / groups * kh * kw
// (PyTorch's fan of a transposed weight). Parameters "weight", "bias". Zeros (or NULL opts)
// mean stride 1, padding 0, output_padding 0, dilation 1, groups 1.
typedef struct tt_conv_transpose2d_opts {
    int64_t stride[2], padding[2], output_padding[2], dilation[2];  // {H, W}
    int64_t groups;
} tt_conv_transpose2d_opts;

typedef struct tt_conv_transpose2d_layer {
    tt_tensor *weight;  // (in, out / groups, kh, kw)
    tt_tensor *bias;    // (out,) or NULL
    int64_t in_channels, out_channels;
    tt_conv_transpose2d_opts opts;  // with the defaults filled in
} tt_conv_transpose2d_layer;

void tt_conv_transpose2d_layer_init(tt_conv_transpose2d_layer *m, int64_t in_channels,
                                    int64_t out_channels, int64_t kh, int64_t kw,
                                    const tt_conv_transpose2d_opts *opts, bool bias,
                                    tt_rng *rng);
tt_tensor *tt_conv_transpose2d_layer_forward(tt_conv_transpose2d_layer *m, tt_tensor *x);
void tt_conv_transpose2d_layer_params(const tt_conv_transpose2d_layer *m, tt_params *out,
                                      const char *prefix);
void tt_conv_transpose2d_layer_free(tt_conv_transpose2d_layer *m);
tt_module tt_conv_transpose2d_layer_module(tt_conv_transpose2d_layer *m);

// torch.nn.Conv1d: y = tt_conv1d(x, weight, bias, ...), x (N, in, L), weight (out, in / groups,
// k), bias (out,) or NULL; init as Conv2d (fan_in = in / groups * k). Parameters "weight",
// "bias". Zeros (or NULL opts) mean stride 1, padding 0, dilation 1, groups 1.
typedef struct tt_conv1d_opts {
    int64_t stride, padding, dilation, groups;
} tt_conv1d_opts;

typedef struct tt_conv1d_layer {
    tt_tensor *weight;  // (out, in / groups, k)
    tt_tensor *bias;    // (out,) or NULL
    int64_t in_channels, out_channels;
    tt_conv1d_opts opts;  // with the defaults filled in
} tt_conv1d_layer;

void tt_conv1d_layer_init(tt_conv1d_layer *m, int64_t in_channels, int64_t out_channels,
                          int64_t k, const tt_conv1d_opts *opts, bool bias, tt_rng *rng);
tt_tensor *tt_conv1d_layer_forward(tt_conv1d_layer *m, tt_tensor *x);  // (N, in, L)
void tt_conv1d_layer_params(const tt_conv1d_layer *m, tt_params *out, const char *prefix);
void tt_conv1d_layer_free(tt_conv1d_layer *m);
tt_module tt_conv1d_layer_module(tt_conv1d_layer *m);

// torch.nn.Dropout2d: tt_dropout2d(x, p, training, rng); starts in training mode, as PyTorch;
// tt_module_train switches it. No parameters.
typedef struct tt_dropout2d_layer {
    double p;
    bool training;
    tt_rng *rng;  // borrowed: the model owns its rng
} tt_dropout2d_layer;

void tt_dropout2d_layer_init(tt_dropout2d_layer *m, double p, tt_rng *rng);
tt_tensor *tt_dropout2d_layer_forward(tt_dropout2d_layer *m, tt_tensor *x);
void tt_dropout2d_layer_train(tt_dropout2d_layer *m, bool training);
tt_module tt_dropout2d_layer_module(tt_dropout2d_layer *m);

// torch.nn.Upsample(mode="nearest") with a size or a scale_factor: set exactly one of them,
// e.g. &(tt_upsample_layer){.scale = {2, 2}}. tt_upsample_nearest2d(_scale). No parameters.
typedef struct tt_upsample_layer {
    int64_t size[2];  // {out_h, out_w}, or zeros
    double scale[2];  // {scale_h, scale_w}, or zeros
} tt_upsample_layer;

tt_module tt_upsample_module(tt_upsample_layer *m);  // borrows m

// torch.nn.Unflatten(dim, sizes): tt_unflatten(x, dim, sizes, n). No parameters.
typedef struct tt_unflatten_layer {
    int dim;
    int n;                         // entries of sizes used, 1 .. TT_MAX_DIMS
    int64_t sizes[TT_MAX_DIMS];    // one may be -1
} tt_unflatten_layer;

tt_module tt_unflatten_module(tt_unflatten_layer *m);  // borrows m

// ---- QuantizedLinear: int8 inference (nn/qlinear.c) ----
// Post-training dynamic quantization of a Linear for inference. The weight W (out, in) becomes
// int8 with one scale per output channel, sw[n] = max_k |W[n, k]| / 127, q = round(W / sw);
// each input row is quantized at run time to u8 with its own scale and zero point (255 levels
// over [min(0, min x), max(0, max x)]); the product runs in int32 (AVX512-VNNI vpdpbusd, AVX2
// or portable C, the same bits on each) and is scaled back to f32, plus the f32 bias. An
// output y[m, n] differs from the f32 Linear's by at most sx[m] / 2 sum_k |W[n, k]| + sw[n] / 2
// sum_k |x[m, k]| + K sx[m] sw[n] / 4 (half a step of each quantizer on every term; typically
// a tenth to a half of that: the rounding errors partly cancel). tests/test_qlinear.c.
// No autograd: the forward aborts when grad mode is on and its input requires grad (run it
// under tt_no_grad_begin()/tt_no_grad_end() or tt_set_grad_enabled(false)).
//
//     tt_qlinear q;
//     tt_qlinear_from_linear(&q, &fc);           // a copy: fc is unchanged and may be freed
//     tt_no_grad_begin();
//     tt_tensor *y = tt_qlinear_forward(&q, x);  // x (..., in) f32 -> (..., out) f32
//     tt_no_grad_end();
//     tt_qlinear_free(&q);
// Or in place, so every module that calls tt_linear_forward runs int8 (a whole module tree:
// tt_quantize_dynamic below; a GPT: tt_gpt_quantize):
//     tt_linear_quantize(&fc);   // fc's f32 weight stays (tt_linear_dequantize goes back)

typedef struct tt_qlinear {
    struct tt_k_qweight *qweight;  // packed int8 weight, per-channel scales (owned)
    tt_tensor *bias;               // (out,) f32 or NULL (owned)
    int64_t in_features, out_features;
    // Static activations (tt_qlinear_set_static): every row quantized with this one scale and
    // zero point instead of its own range. false: dynamic, per row.
    bool act_static;
    float act_scale;
    int32_t act_zero;
} tt_qlinear;

// From a weight (out, in) and a bias (out,) or NULL of any float dtype (copied and rounded to
// f32 first); in <= 65536. tt_qlinear_from_linear(q, m) is this with m's weight and bias.
void tt_qlinear_init(tt_qlinear *q, const tt_tensor *weight, const tt_tensor *bias);
void tt_qlinear_from_linear(tt_qlinear *q, const tt_linear *m);
// x (..., in) f32, any layout -> y (..., out) f32, a new tensor without history.
tt_tensor *tt_qlinear_forward(tt_qlinear *q, tt_tensor *x);
// The bytes the forward reads for its parameters: packed int8 weight, scales, sums and bias.
int64_t tt_qlinear_bytes(const tt_qlinear *q);
void tt_qlinear_free(tt_qlinear *q);  // safe on a zeroed struct
tt_module tt_qlinear_module(tt_qlinear *q);  // type "QuantizedLinear", no parameters

// m->quantized from m's current weight (replacing an older one): tt_linear_forward then runs
// int8. Re-quantize after changing the weight. _dequantize frees it, and a calibration
// observer if any (safe when there is neither).
void tt_linear_quantize(tt_linear *m);
void tt_linear_dequantize(tt_linear *m);

// ---- model summary (nn/summary.c), like torchinfo's summary ----
// Runs m's forward on x once (in the caller's grad mode) under the profiler and writes to f
// (NULL: nothing) a tree of its modules under their state_dict names: type, output shape,
// parameters, forward FLOPs (autograd/profiler.h's conventions) and activation memory (the
// storage bytes alive after the forward: under grad mode, what the backward keeps). A
// Sequential's children run one after another and get a row each; other composites list their
// children with parameters only. The profiler's own figures are set aside meanwhile. Returns
// the totals; a tensor listed twice (tied weights) counts once.
//
//     tt_model_summary(stdout, tt_sequential_module(&net), x);
typedef struct tt_model_stats {
    int64_t params, trainable_params, param_bytes;
    int64_t forward_flops;     // one forward at x
    int64_t activation_bytes;  // live after that forward, the output included
    int out_ndim;
    int64_t out_shape[TT_MAX_DIMS];
} tt_model_stats;
tt_model_stats tt_model_summary(FILE *f, tt_module m, tt_tensor *x);

// ---- pruning (nn/prune.c) ----
// torch.nn.utils.prune's magnitude and structured pruning over named tensors. A tt_pruning
// records each pruned tensor and its mask (same shape and dtype, 1 kept, 0 pruned), the masks
// named as PyTorch's buffers: "<parameter name>_mask" ("blocks.0.mlp.fc.weight_mask").
// Unlike PyTorch, which keeps weight_orig and recomputes weight = weight_orig * mask in a
// forward pre-hook, the pruned entries of the tensor itself are set to 0, so a model runs
// unchanged. To fine-tune, call tt_prune_apply after every optimizer step: it sets the pruned
// entries to exactly +0.0 again, so neither their gradient (which is not zero: dW = dY^T X
// does not depend on W), AdamW's momentum nor its weight decay can revive them (their
// optimizer state keeps moving; only the weight is held).
//
//     tt_pruning pr;
//     tt_pruning_init(&pr);
//     tt_prune_global_unstructured(&pr, &weights, 0.5);   // the 50% smallest |w| of the list
//     for (...) { ...; tt_optim_step(&o); tt_prune_apply(&pr); }
//     tt_ckpt_add_params(&ck, "model.", &pr.masks);       // saved as model.<name>_mask
//     tt_prune_remove(&pr, NULL);                          // permanent: forget the masks
//     tt_pruning_free(&pr);
//
// amount is a fraction in [0, 1] (aborts otherwise) of the units (entries, or slices along
// dim) that are still unpruned, as PyTorch's PruningContainer: pruning 0.5 twice leaves 25%.
// round(amount * units) units are pruned (round half to even, Python's round), those of the
// smallest magnitude; ties go in index order (the lower flat index, or the lower slice,
// is pruned first; a global list is indexed in list order). Tensors are float and contiguous
// (parameters are); pruning a tensor again under the same name combines the masks.

typedef struct tt_pruning {
    tt_params params;  // the pruned tensors (retained) under their names
    tt_params masks;   // params.items[i]'s mask as "<name>_mask": buffers, no grad
} tt_pruning;

void tt_pruning_init(tt_pruning *p);
void tt_pruning_free(tt_pruning *p);  // releases the references; the tensors keep their values

// prune.l1_unstructured: the round(amount * n) unpruned entries of t with the smallest |t|.
void tt_prune_l1_unstructured(tt_pruning *p, const char *name, tt_tensor *t, double amount);
// prune.global_unstructured with L1Unstructured: one threshold over every entry of every
// tensor of list, so layers lose different fractions.
void tt_prune_global_unstructured(tt_pruning *p, const tt_params *list, double amount);
// prune.ln_structured: whole slices along dim (dim 0 of a Linear's (out, in) weight: output
// channels, i.e. rows) with the smallest L-n norm of the masked tensor, n > 0 or INFINITY.
void tt_prune_ln_structured(tt_pruning *p, const char *name, tt_tensor *t, double amount,
                            double n, int dim);
// Prunes exactly the entries where keep[i] is false (keep: numel(t) flags, row-major), as
// prune.custom_from_mask; other pruners and tt_gpt_prune_heads build on it.
void tt_prune_custom(tt_pruning *p, const char *name, tt_tensor *t, const bool *keep);
// Sets every pruned entry to 0 (after each optimizer step while fine-tuning).
void tt_prune_apply(const tt_pruning *p);
// prune.remove: applies the mask of the tensor named name one last time and forgets it, so the
// zeros become ordinary weights; name NULL removes every one. Aborts for an unknown name.
void tt_prune_remove(tt_pruning *p, const char *name);
// The mask of name (borrowed), NULL when it is not pruned.
tt_tensor *tt_prune_mask(const tt_pruning *p, const char *name);
// Restores masks saved with tt_ckpt_add_params(ck, prefix, &p->masks): for each tensor of list
// with a prefix + "<name>_mask" entry in ck (struct tt_checkpoint of nn/checkpoint.h), records
// it as pruned with that mask and applies it. TT_ERR_MISMATCH for a mask whose dtype or shape
// differs from its tensor, TT_ERR_FORMAT for values other than 0 and 1; nothing changes then.
struct tt_checkpoint;
tt_status tt_prune_restore(tt_pruning *p, const struct tt_checkpoint *ck, const char *prefix,
                           const tt_params *list);

// The fraction of entries equal to 0 (either sign) of a tensor, and over a whole list.
int64_t tt_count_nonzero(const tt_tensor *t);
double tt_tensor_sparsity(const tt_tensor *t);
double tt_sparsity(const tt_params *list);

// ---- low rank (nn/lowrank.c) ----

// The thin SVD A = U diag(S) Vt of a row-major (m, n) f64 matrix by one-sided Jacobi
// (Hestenes: rotate column pairs of A, or of A^T when m < n, until they are orthogonal to
// machine precision), k = min(m, n): U (m, k), S (k) descending and >= 0, Vt (k, n), all
// row-major, caller-allocated. Columns of U for zero singular values are zero.
void tt_svd_jacobi(double *U, double *S, double *Vt, const double *A, int64_t m, int64_t n);
// The same on a float matrix (m, n) (any layout): new f64 tensors U (m, k), S (k), Vh (k, n),
// as torch.linalg.svd(A, full_matrices=False) up to the signs of singular vector pairs.
void tt_svd(const tt_tensor *A, tt_tensor **U, tt_tensor **S, tt_tensor **Vh);

// Replaces m's weight W (out, in) by its best rank-r approximation (Eckart-Young) as two
// Linears, torch.nn.Sequential(Linear(in, r, bias=False), Linear(r, out)): m->factors[0]
// weight sqrt(S_r) Vt_r (r, in), m->factors[1] weight U_r sqrt(S_r) (out, r) and m's bias.
// The forward then runs both (2 r (in + out) FLOPs per row instead of 2 in out);
// tt_linear_params lists "prefix.0.weight", "prefix.1.weight", "prefix.1.bias" (Sequential's
// names), so rebuild a parameter list made before. The dense weight is released. Aborts for
// rank outside [1, min(in, out)], a quantized Linear or one already factored.
void tt_linear_low_rank(tt_linear *m, int64_t rank);

// ---- dynamic quantization of a module tree (nn/qlinear.c) ----
// PyTorch's torch.ao.quantization.quantize_dynamic for Linear: walks m and its children
// (tt_module_ops.children, depth first) and runs tt_linear_quantize on every Linear it
// reaches, so their forwards run int8 (QuantizedLinear above); everything else stays f32, as
// PyTorch's dynamic quantization leaves convolutions, norms and embeddings. Returns how many
// Linears it quantized (a Linear reached twice counts twice; one with in > 65536, the int8
// product's limit, stays f32 and is not counted). Quantizing again re-reads the f32 weights.
// tt_dequantize_model frees them again (the forwards are then the f32 ones, bit for bit) and
// returns how many it freed. A Linear is recognized by tt_linear_module's ops, so a custom
// module's Linears are reached when its children callback lists them. The GPT's tied head is
// no Linear: tt_gpt_quantize (models/gpt/gpt.h) handles it.
//
//     int n = tt_quantize_dynamic(tt_sequential_module(&seq));  // seq: conv, ..., 3 Linears
//     tt_no_grad_begin();
//     tt_tensor *logits = tt_sequential_forward(&seq, x);      // Linears int8, convs f32
//     tt_no_grad_end();
//     tt_dequantize_model(tt_sequential_module(&seq));          // back to f32
int tt_quantize_dynamic(tt_module m);
int tt_dequantize_model(tt_module m);

// ---- static quantization: calibrated activation ranges (nn/qlinear.c) ----
// PyTorch's prepare / calibrate / convert with MinMaxObserver (affine quint8, per tensor):
// tt_quantize_static_prepare attaches an observer to every Linear of m (their forwards stay
// f32 and record the min and max of their inputs); run calibration batches through m's
// forward (under tt_no_grad_begin()); tt_quantize_static_convert then quantizes each observed
// Linear as tt_linear_quantize does, with its input quantized by one fixed scale and zero
// point from the recorded range (tt_k_qact_from_range: the range widened to hold 0, 255 steps)
// instead of per row at run time, and frees the observers. Inputs outside the calibrated range
// clamp to its ends. Both return how many Linears they handled; convert aborts for a Linear
// whose observer saw no input. tt_dequantize_model undoes either (and frees the observers).
// tests/test_quantize.c, tests/test_milestone_digits.c.
//
//     tt_quantize_static_prepare(tt_sequential_module(&seq));
//     tt_no_grad_begin();
//     for (int b = 0; b < n_calib; b++) tt_scope_begin(), tt_sequential_forward(&seq, xb[b]),
//                                        tt_scope_end();
//     tt_no_grad_end();
//     tt_quantize_static_convert(tt_sequential_module(&seq));  // the Linears run static int8
typedef struct tt_observer {
    double min, max;  // of every input element seen (NaNs skipped); +inf, -inf before any
    int64_t batches;  // forwards observed
} tt_observer;

void tt_observer_update(tt_observer *o, const tt_tensor *x);  // x: any float dtype and layout
int tt_quantize_static_prepare(tt_module m);
int tt_quantize_static_convert(tt_module m);
// Fixes q's activation quantization to the range [lo, hi] (widened to hold 0).
void tt_qlinear_set_static(tt_qlinear *q, double lo, double hi);

#ifdef __cplusplus
}
#endif

#include "walk.h"
#include "activation.h"

#endif  // TT_NN_H

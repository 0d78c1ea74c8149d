// tinytorch.c nn: the basic layers: Linear, Embedding, EmbeddingBag, positional encodings,
// LayerNorm / RMSNorm, activations, Dropout and the MLP (nn/layers.c, embedding_bag.c,
// positional.c, mlp.c). Module conventions: module.h.
//
//     tt_nn_linear fc;
//     tt_nn_linear_init(&fc, 784, 10, true, &rng);
//     tt_tensor *logits = tt_nn_linear_forward(&fc, x);  // (B, 784) -> (B, 10)
#ifndef TT_NN_LAYERS_H
#define TT_NN_LAYERS_H

#include "module.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- Linear: y = x W^T + b, W (out, in), b (out,); PyTorch's default init ----

typedef struct tt_nn_linear {
    tt_tensor *weight;  // (out, in); NULL when a swapped-in module holds the weights instead
    tt_tensor *bias;    // (out,) or NULL
    int64_t in_features, out_features;
    // A module swapped in to run in this Linear's place (ops NULL: none). compress/ installs
    // its compressed Linears here (int8, low rank, a calibrating observer): tt_nn_linear_forward
    // and tt_nn_linear_params hand over to it and tt_nn_linear_free frees it (owned), so a model
    // holding Linears by value (attention's q_proj, ...) runs them without knowing of them.
    tt_module swap;
} tt_nn_linear;

void tt_nn_linear_init(tt_nn_linear *m, int64_t in_features, int64_t out_features, bool bias,
                       tt_rng *rng);
tt_tensor *tt_nn_linear_forward(tt_nn_linear *m, tt_tensor *x);  // (..., in) -> (..., out)
void tt_nn_linear_params(const tt_nn_linear *m, tt_params *out, const char *prefix);
void tt_nn_linear_free(tt_nn_linear *m);
tt_module tt_nn_linear_module(tt_nn_linear *m);
// A heap-made Linear as an owned module (nn.Linear(in, out, bias)): tt_module_free or the
// container it is added to frees it. Its struct is (tt_nn_linear *)m.self.
tt_module tt_nn_linear_new(int64_t in_features, int64_t out_features, bool bias, tt_rng *rng);

// ---- Embedding: a (V, C) table, N(0, 1) init ----

typedef struct tt_nn_embedding {
    tt_tensor *weight;  // (V, C)
    int64_t num, dim;
} tt_nn_embedding;

void tt_nn_embedding_init(tt_nn_embedding *m, int64_t num, int64_t dim, tt_rng *rng);
tt_tensor *tt_nn_embedding_forward(tt_nn_embedding *m, tt_tensor *indices);  // (...) -> (..., C)
void tt_nn_embedding_params(const tt_nn_embedding *m, tt_params *out, const char *prefix);
void tt_nn_embedding_free(tt_nn_embedding *m);
tt_module tt_nn_embedding_module(tt_nn_embedding *m);  // x: the indices
tt_module tt_nn_embedding_new(int64_t num, int64_t dim, tt_rng *rng);  // owned (tt_nn_linear_new)

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
typedef struct tt_nn_embedding_bag {
    tt_tensor *weight;  // (V, C)
    int64_t num, dim;
    tt_bag_mode mode;
    bool include_last_offset;
    bool use_padding_idx;  // set by tt_nn_embedding_bag_set_padding_idx
    int64_t padding_idx;   // in [0, V)
} tt_nn_embedding_bag;

void tt_nn_embedding_bag_init(tt_nn_embedding_bag *m, int64_t num, int64_t dim,
                              tt_bag_mode mode, tt_rng *rng);
// Leaves padding_idx (in [-V, V)) out of every bag and zeroes its row, as the padding_idx
// argument of nn.EmbeddingBag does at construction.
void tt_nn_embedding_bag_set_padding_idx(tt_nn_embedding_bag *m, int64_t padding_idx);
// input (B, N) with offsets NULL, or (N) with offsets; per_sample_weights NULL or input's
// shape (TT_BAG_SUM) -> (B, C).
tt_tensor *tt_nn_embedding_bag_forward(tt_nn_embedding_bag *m, tt_tensor *input,
                                       tt_tensor *offsets, tt_tensor *per_sample_weights);
void tt_nn_embedding_bag_params(const tt_nn_embedding_bag *m, tt_params *out,
                                const char *prefix);
void tt_nn_embedding_bag_free(tt_nn_embedding_bag *m);
// For tt_nn_sequential: x is a 2-D (B, N) input, no per-sample weights.
tt_module tt_nn_embedding_bag_module(tt_nn_embedding_bag *m);

// ---- positional encodings ----

// Learned: a (max_len, C) table; forward(x (B, T, C)) returns x + table[pos : pos + T].
typedef struct tt_nn_pos_embedding {
    tt_tensor *weight;  // (max_len, C)
    int64_t max_len, dim;
} tt_nn_pos_embedding;

// The table starts at N(0, std^2): GPT-2 and nanoGPT use std 0.02; nn.Embedding's default (a
// plain nn.Embedding as the table) is 1.
void tt_nn_pos_embedding_init(tt_nn_pos_embedding *m, int64_t max_len, int64_t dim, double std,
                              tt_rng *rng);
tt_tensor *tt_nn_pos_embedding_forward(tt_nn_pos_embedding *m, tt_tensor *x, int64_t pos);
void tt_nn_pos_embedding_params(const tt_nn_pos_embedding *m, tt_params *out, const char *prefix);
void tt_nn_pos_embedding_free(tt_nn_pos_embedding *m);
tt_module tt_nn_pos_embedding_module(tt_nn_pos_embedding *m);  // forward at pos 0

// Sinusoidal (Vaswani et al.): no parameters; forward(x (B, T, C)) returns x + PE[pos : pos + T]
// with PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(same).
typedef struct tt_nn_sinusoidal {
    tt_tensor *table;  // (max_len, C) buffer
    int64_t max_len, dim;
} tt_nn_sinusoidal;

void tt_nn_sinusoidal_init(tt_nn_sinusoidal *m, int64_t max_len, int64_t dim);
tt_tensor *tt_nn_sinusoidal_forward(tt_nn_sinusoidal *m, tt_tensor *x, int64_t pos);
void tt_nn_sinusoidal_free(tt_nn_sinusoidal *m);
tt_module tt_nn_sinusoidal_module(tt_nn_sinusoidal *m);  // forward at pos 0

// Rotary (RoPE, Su et al.), no parameters: rotates pairs (i, i + HS/2) of each head's vector by
// angle p * base^(-2i/HS) (the "rotate half" layout). x (B, NH, T, HS) -> same shape, positions
// pos .. pos + T - 1.
typedef struct tt_nn_rope {
    tt_tensor *cos, *sin;  // (max_len, HS) buffers
    int64_t head_dim, max_len;
    double base;
} tt_nn_rope;

void tt_nn_rope_init(tt_nn_rope *m, int64_t head_dim, int64_t max_len, double base);
tt_tensor *tt_nn_rope_forward(tt_nn_rope *m, tt_tensor *x, int64_t pos);
void tt_nn_rope_free(tt_nn_rope *m);
tt_module tt_nn_rope_module(tt_nn_rope *m);  // forward at pos 0

// ---- normalization ----

typedef struct tt_nn_layernorm {
    tt_tensor *weight, *bias;  // (C,) each; NULL when !affine (bias also NULL when !bias)
    int64_t dim;
    double eps;
} tt_nn_layernorm;

void tt_nn_layernorm_init(tt_nn_layernorm *m, int64_t dim, double eps, bool affine, bool bias);
tt_tensor *tt_nn_layernorm_forward(tt_nn_layernorm *m, tt_tensor *x);
void tt_nn_layernorm_params(const tt_nn_layernorm *m, tt_params *out, const char *prefix);
void tt_nn_layernorm_free(tt_nn_layernorm *m);
tt_module tt_nn_layernorm_module(tt_nn_layernorm *m);
// An owned LayerNorm (see tt_nn_linear_new).
tt_module tt_nn_layernorm_new(int64_t dim, double eps, bool affine, bool bias);

typedef struct tt_nn_rmsnorm {
    tt_tensor *weight;  // (C,) or NULL
    int64_t dim;
    double eps;
} tt_nn_rmsnorm;

void tt_nn_rmsnorm_init(tt_nn_rmsnorm *m, int64_t dim, double eps, bool weight);
tt_tensor *tt_nn_rmsnorm_forward(tt_nn_rmsnorm *m, tt_tensor *x);
void tt_nn_rmsnorm_params(const tt_nn_rmsnorm *m, tt_params *out, const char *prefix);
void tt_nn_rmsnorm_free(tt_nn_rmsnorm *m);
tt_module tt_nn_rmsnorm_module(tt_nn_rmsnorm *m);

// Either kind behind one type (what a transformer block holds). RMSNORM has a learned gain
// (Llama's); RMSNORM_NOWEIGHT none (nanochat's F.rms_norm, nn.RMSNorm(elementwise_affine=False)).
typedef enum tt_nn_norm_kind {
    TT_NORM_LAYERNORM,
    TT_NORM_RMSNORM,
    TT_NORM_RMSNORM_NOWEIGHT,
    TT_NORM_KIND_COUNT
} tt_nn_norm_kind;
typedef struct tt_nn_norm {
    tt_nn_norm_kind kind;
    tt_nn_layernorm ln;
    tt_nn_rmsnorm rms;
} tt_nn_norm;

void tt_nn_norm_init(tt_nn_norm *m, tt_nn_norm_kind kind, int64_t dim, double eps, bool bias);
tt_tensor *tt_nn_norm_forward(tt_nn_norm *m, tt_tensor *x);
void tt_nn_norm_params(const tt_nn_norm *m, tt_params *out, const char *prefix);
void tt_nn_norm_free(tt_nn_norm *m);
tt_module tt_nn_norm_module(tt_nn_norm *m);

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
    TT_ACT_SWIGLU,   // gated, over the last dim: tt_swiglu of its halves (it halves the width)
    TT_ACT_SOFTMAX,  // over the last dim
    TT_ACT_COUNT
} tt_act;

tt_tensor *tt_activate(tt_act act, tt_tensor *x);
// The SwiGLU unit (Shazeer 2020, "GLU Variants Improve Transformer"): silu(gate) * up, for
// tensors of one shape; a composition, so its gradient comes with it. tt_activate(TT_ACT_SWIGLU,
// x) is tt_swiglu(x[..., :n/2], x[..., n/2:]); tt_nn_feedforward with TT_ACT_SWIGLU is
// down_proj(tt_swiglu(gate_proj(x), up_proj(x))), Llama's MLP.
tt_tensor *tt_swiglu(tt_tensor *gate, tt_tensor *up);
const char *tt_act_name(tt_act act);          // "relu", "gelu", ...
bool tt_act_parse(const char *name, tt_act *out);  // false for an unknown name
tt_module tt_act_module(tt_act act);

// ---- dropout ----

typedef struct tt_nn_dropout {
    double p;
    bool training;  // starts true, as in PyTorch
    tt_rng *rng;    // borrowed: the model owns its rng
} tt_nn_dropout;

void tt_nn_dropout_init(tt_nn_dropout *m, double p, tt_rng *rng);
tt_tensor *tt_nn_dropout_forward(tt_nn_dropout *m, tt_tensor *x);
void tt_nn_dropout_train(tt_nn_dropout *m, bool training);
tt_module tt_nn_dropout_module(tt_nn_dropout *m);

// ---- MLP: torchvision.ops.MLP (without its norm layers) ----
// widths = {in, h1, ..., out}, n_widths >= 2: n_widths - 1 Linear layers (PyTorch's default
// init, drawn in order). After each hidden Linear come act and Dropout(dropout); after the
// last Linear only a Dropout (torchvision's layout). The parameters are named as the
// state_dict of torchvision.ops.MLP (an nn.Sequential): the Linear layers sit at 0, 3, 6, ...
// ("0.weight", "0.bias", "3.weight", ...), so a PyTorch checkpoint maps one to one.
//
//     tt_nn_mlp mlp;
//     tt_nn_mlp_init(&mlp, 3, (int64_t[]){784, 256, 10}, TT_ACT_RELU, true, 0.1, &rng);
//     tt_tensor *logits = tt_nn_mlp_forward(&mlp, x);  // (B, 784) -> (B, 10)

typedef struct tt_nn_mlp {
    tt_nn_linear *layers;     // n_layers (owned): widths[i] -> widths[i + 1]
    tt_nn_dropout *drops;  // n_layers (owned): after each layer
    int n_layers;             // n_widths - 1
    tt_act act;
} tt_nn_mlp;

void tt_nn_mlp_init(tt_nn_mlp *m, int n_widths, const int64_t *widths, tt_act act, bool bias,
                    double dropout, tt_rng *rng);
// (..., widths[0]) -> (..., widths[last])
tt_tensor *tt_nn_mlp_forward(tt_nn_mlp *m, tt_tensor *x);
void tt_nn_mlp_params(const tt_nn_mlp *m, tt_params *out, const char *prefix);  // 0.*, 3.*, ...
void tt_nn_mlp_train(tt_nn_mlp *m, bool training);
void tt_nn_mlp_free(tt_nn_mlp *m);
tt_module tt_nn_mlp_module(tt_nn_mlp *m);

#ifdef __cplusplus
}
#endif

#endif  // TT_NN_LAYERS_H

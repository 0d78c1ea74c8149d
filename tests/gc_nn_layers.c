// Gradcheck cases of the basic nn modules (Linear, Embedding, EmbeddingBag, LayerNorm, RMSNorm,
// Sequential, MLP) and the losses (MSE, BCE with logits, label-smoothed cross-entropy).
// Attention, the feed-forward block and the transformer block are in tests/gc_nn_transformer.c.
//
// Modules are built in f64 (tt_set_default_dtype) and their parameters are gradcheck inputs
// next to x, so weight and bias gradients are checked too. The forward functions run the
// module on a copy of its struct whose parameter pointers are the inputs: gc_check's f32
// forward then runs the same module code on f32 copies of the parameters. Index tensors travel
// in ctx. Each case frees its module (parameters live outside the case's scope).
#include "gc_util.h"

// Builds modules in f64 between begin and end.
static tt_dtype f64_begin(void) { return tt_set_default_dtype(TT_F64); }
static void f64_end(tt_dtype prev) { tt_set_default_dtype(prev); }

// ---- Linear ----

// in = {x, weight[, bias]}
static tt_tensor *f_linear(tt_tensor *const *in, int n, void *ctx) {
    tt_nn_linear m = *(const tt_nn_linear *)ctx;
    m.weight = in[1];
    m.bias = n > 2 ? in[2] : NULL;
    return tt_nn_linear_forward(&m, in[0]);
}

static void linear_case(gc_report *r, int ndim, const int64_t *xshape, int64_t in_f,
                        int64_t out_f, bool bias) {
    tt_dtype prev = f64_begin();
    tt_nn_linear m;
    tt_nn_linear_init(&m, in_f, out_f, bias, gc_rng());
    f64_end(prev);
    tt_tensor *x = gc_input(ndim, xshape, -1, 1);
    tt_tensor *in[3] = {x, m.weight, m.bias};
    gc_check(r, f_linear, &m, bias ? 3 : 2, in, NULL);
    tt_nn_linear_free(&m);
}

static void linear_bias(gc_report *r) { linear_case(r, TT_SHAPE(3, 4), 4, 5, true); }
static void linear_no_bias(gc_report *r) { linear_case(r, TT_SHAPE(3, 4), 4, 2, false); }
static void linear_batched_3d(gc_report *r) { linear_case(r, TT_SHAPE(2, 3, 4), 4, 3, true); }

// ---- Embedding ----

typedef struct embedding_ctx {
    tt_nn_embedding *m;
    tt_tensor *idx;
} embedding_ctx;

// in = {weight}
static tt_tensor *f_embedding(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const embedding_ctx *c = ctx;
    tt_nn_embedding m = *c->m;
    m.weight = in[0];
    return tt_nn_embedding_forward(&m, c->idx);
}

// Repeated indices: their rows' gradients accumulate.
static void embedding_basic(gc_report *r) {
    tt_dtype prev = f64_begin();
    tt_nn_embedding m;
    tt_nn_embedding_init(&m, 6, 3, gc_rng());
    f64_end(prev);
    tt_tensor *idx = tt_from_data(TT_I64, TT_SHAPE(2, 3), (const int64_t[]){1, 5, 1, 0, 3, 5});
    gc_check(r, f_embedding, &(embedding_ctx){&m, idx}, 1, &m.weight, NULL);
    tt_nn_embedding_free(&m);
}

// ---- LayerNorm / RMSNorm ----

// in = {x[, weight[, bias]]}
static tt_tensor *f_layernorm(tt_tensor *const *in, int n, void *ctx) {
    tt_nn_layernorm m = *(const tt_nn_layernorm *)ctx;
    m.weight = n > 1 ? in[1] : NULL;
    m.bias = n > 2 ? in[2] : NULL;
    return tt_nn_layernorm_forward(&m, in[0]);
}

// The init is weight 1, bias 0; random values make the check see how each one enters.
static void layernorm_affine(gc_report *r) {
    tt_dtype prev = f64_begin();
    tt_nn_layernorm m;
    tt_nn_layernorm_init(&m, 5, 1e-5, true, true);
    f64_end(prev);
    tt_uniform_(m.weight, gc_rng(), 0.5, 1.5);
    tt_uniform_(m.bias, gc_rng(), -0.5, 0.5);
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 5), -2, 2);
    gc_check(r, f_layernorm, &m, 3, (tt_tensor *[]){x, m.weight, m.bias}, NULL);
    tt_nn_layernorm_free(&m);
}

static void layernorm_no_affine(gc_report *r) {
    tt_nn_layernorm m;
    tt_nn_layernorm_init(&m, 6, 1e-5, false, false);
    tt_tensor *x = gc_input(TT_SHAPE(3, 6), -2, 2);
    gc_check(r, f_layernorm, &m, 1, &x, NULL);
    tt_nn_layernorm_free(&m);
}

// in = {x[, weight]}
static tt_tensor *f_rmsnorm(tt_tensor *const *in, int n, void *ctx) {
    tt_nn_rmsnorm m = *(const tt_nn_rmsnorm *)ctx;
    m.weight = n > 1 ? in[1] : NULL;
    return tt_nn_rmsnorm_forward(&m, in[0]);
}

static void rmsnorm_weight(gc_report *r) {
    tt_dtype prev = f64_begin();
    tt_nn_rmsnorm m;
    tt_nn_rmsnorm_init(&m, 5, 1e-6, true);
    f64_end(prev);
    tt_uniform_(m.weight, gc_rng(), 0.5, 1.5);
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 5), -2, 2);
    gc_check(r, f_rmsnorm, &m, 2, (tt_tensor *[]){x, m.weight}, NULL);
    tt_nn_rmsnorm_free(&m);
}

static void rmsnorm_no_weight(gc_report *r) {
    tt_nn_rmsnorm m;
    tt_nn_rmsnorm_init(&m, 4, 1e-6, false);
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -2, 2);
    gc_check(r, f_rmsnorm, &m, 1, &x, NULL);
    tt_nn_rmsnorm_free(&m);
}

// ---- Sequential ----

// Linear(2, 16) -> tanh -> Linear(16, 2); in = {x, fc1.weight, fc1.bias, fc2.weight,
// fc2.bias}. The sequential holds pointers to the Linear structs, so f points their parameters
// at the inputs for the call and restores them after.
typedef struct mlp_ctx {
    tt_nn_linear fc1, fc2;
    tt_nn_sequential seq;
} mlp_ctx;

static tt_tensor *f_sequential(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    mlp_ctx *c = ctx;
    tt_nn_linear saved1 = c->fc1, saved2 = c->fc2;
    c->fc1.weight = in[1], c->fc1.bias = in[2];
    c->fc2.weight = in[3], c->fc2.bias = in[4];
    tt_tensor *y = tt_nn_sequential_forward(&c->seq, in[0]);
    c->fc1 = saved1;
    c->fc2 = saved2;
    return y;
}

static void sequential_mlp(gc_report *r) {
    mlp_ctx c;
    tt_dtype prev = f64_begin();
    tt_nn_linear_init(&c.fc1, 2, 16, true, gc_rng());
    tt_nn_linear_init(&c.fc2, 16, 2, true, gc_rng());
    f64_end(prev);
    tt_nn_sequential_init(&c.seq);
    tt_nn_sequential_add(&c.seq, tt_nn_linear_module(&c.fc1));
    tt_nn_sequential_add(&c.seq, tt_act_module(TT_ACT_TANH));
    tt_nn_sequential_add(&c.seq, tt_nn_linear_module(&c.fc2));
    // The parameters in the order tt_nn_sequential_params lists them: 0.weight, 0.bias, 2.weight...
    tt_params p;
    tt_params_init(&p);
    tt_nn_sequential_params(&c.seq, &p, NULL);
    tt_tensor *x = gc_input(TT_SHAPE(3, 2), -1, 1);
    tt_tensor *in[5] = {x, p.items[0].tensor, p.items[1].tensor, p.items[2].tensor,
                        p.items[3].tensor};
    gc_check(r, f_sequential, &c, 5, in, NULL);
    tt_params_free(&p);
    tt_nn_sequential_free(&c.seq);
    tt_nn_linear_free(&c.fc1);
    tt_nn_linear_free(&c.fc2);
}

// ---- MLP (torchvision.ops.MLP's layout) ----

// in = {x, then each layer's weight [and bias]}. f points the layers' parameters at the inputs
// for the call and restores them after.
static tt_tensor *f_mlp(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    tt_nn_mlp *m = ctx;
    tt_nn_linear saved[8];
    int k = 1;
    for (int i = 0; i < m->n_layers; i++) {
        saved[i] = m->layers[i];
        m->layers[i].weight = in[k++];
        if (m->layers[i].bias) m->layers[i].bias = in[k++];
    }
    tt_tensor *y = tt_nn_mlp_forward(m, in[0]);
    for (int i = 0; i < m->n_layers; i++) m->layers[i] = saved[i];
    return y;
}

static void mlp_case(gc_report *r, int n_widths, const int64_t *widths, tt_act act, bool bias,
                     int ndim, const int64_t *xshape) {
    tt_dtype prev = f64_begin();
    tt_nn_mlp m;
    tt_nn_mlp_init(&m, n_widths, widths, act, bias, 0.0, gc_rng());
    f64_end(prev);
    tt_params p;
    tt_params_init(&p);
    tt_nn_mlp_params(&m, &p, NULL);  // 0.weight, 0.bias, 3.weight, ...: the order f reads
    tt_tensor *in[16] = {gc_input(ndim, xshape, -1, 1)};
    for (int i = 0; i < p.n; i++) in[1 + i] = p.items[i].tensor;
    gc_check(r, f_mlp, &m, 1 + p.n, in, NULL);
    tt_params_free(&p);
    tt_nn_mlp_free(&m);
}

static void mlp_tanh_bias(gc_report *r) {
    mlp_case(r, 4, (const int64_t[]){3, 5, 4, 2}, TT_ACT_TANH, true, TT_SHAPE(4, 3));
}
static void mlp_gelu_no_bias_3d(gc_report *r) {
    mlp_case(r, 3, (const int64_t[]){4, 6, 3}, TT_ACT_GELU, false, TT_SHAPE(2, 3, 4));
}

// ---- EmbeddingBag ----

typedef struct bag_ctx {
    tt_tensor *input;
    tt_embedding_bag_opts opts;  // per_sample_weights comes from the inputs
} bag_ctx;

// in = {weight[, per_sample_weights]}
static tt_tensor *f_bag(tt_tensor *const *in, int n, void *ctx) {
    const bag_ctx *c = ctx;
    tt_embedding_bag_opts o = c->opts;
    o.per_sample_weights = n > 1 ? in[1] : NULL;
    return tt_embedding_bag(in[0], c->input, &o);
}

static void bag_case(gc_report *r, tt_bag_mode mode, int ndim, const int64_t *shape,
                     const int64_t *input, int n_offsets, const int64_t *offsets, bool psw,
                     bool use_padding_idx, int64_t padding_idx) {
    tt_tensor *w = gc_input(TT_SHAPE(6, 3), -2, 2);
    bag_ctx c = {.input = tt_from_data(TT_I64, ndim, shape, input),
                 .opts = {.mode = mode, .use_padding_idx = use_padding_idx,
                          .padding_idx = padding_idx}};
    if (n_offsets) c.opts.offsets = tt_from_data(TT_I64, TT_SHAPE(n_offsets), offsets);
    tt_tensor *in[2] = {w, psw ? gc_input(ndim, shape, -1.5, 1.5) : NULL};
    gc_check(r, f_bag, &c, psw ? 2 : 1, in, NULL);
}

// Bags [1 5 1] [] [0 3 5 5 2]: duplicate indices add up; the empty bag gives zeros.
static const int64_t bag_input[8] = {1, 5, 1, 0, 3, 5, 5, 2};
static const int64_t bag_offsets[3] = {0, 3, 3};

static void bag_sum_offsets(gc_report *r) {
    bag_case(r, TT_BAG_SUM, TT_SHAPE(8), bag_input, 3, bag_offsets, false, false, 0);
}
static void bag_mean_offsets(gc_report *r) {
    bag_case(r, TT_BAG_MEAN, TT_SHAPE(8), bag_input, 3, bag_offsets, false, false, 0);
}
static void bag_max_offsets(gc_report *r) {
    bag_case(r, TT_BAG_MAX, TT_SHAPE(8), bag_input, 3, bag_offsets, false, false, 0);
}
// The per-sample weights get their own gradient.
static void bag_sum_per_sample_weights(gc_report *r) {
    bag_case(r, TT_BAG_SUM, TT_SHAPE(8), bag_input, 3, bag_offsets, true, false, 0);
}
// 2-D (B, N) input; row 5 is padding (left out of the bags and of the mean's count).
static void bag_mean_2d_padding(gc_report *r) {
    bag_case(r, TT_BAG_MEAN, TT_SHAPE(2, 4), bag_input, 0, NULL, false, true, 5);
}
static void bag_sum_2d_per_sample_weights_padding(gc_report *r) {
    bag_case(r, TT_BAG_SUM, TT_SHAPE(2, 4), bag_input, 0, NULL, true, true, -1);
}

// ---- losses ----

// in = {pred, target}: both receive gradients.
static tt_tensor *f_mse(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_mse_loss(in[0], in[1]);
}

static void mse_basic(gc_report *r) {
    tt_tensor *in[2] = {gc_input(TT_SHAPE(3, 4), -2, 2), gc_input(TT_SHAPE(3, 4), -2, 2)};
    gc_check(r, f_mse, NULL, 2, in, NULL);
}

// in = {logits, targets}: targets are probabilities in [0, 1] and receive gradients too.
static tt_tensor *f_bce(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_bce_with_logits(in[0], in[1]);
}

static void bce_basic(gc_report *r) {
    tt_tensor *in[2] = {gc_input(TT_SHAPE(3, 4), -3, 3), gc_input(TT_SHAPE(3, 4), 0, 1)};
    gc_check(r, f_bce, NULL, 2, in, NULL);
}

// |x| in [5, 20) with alternating signs: exp(-|x|) is tiny, the gradient saturates towards
// 0 - t or 1 - t.
static void bce_large_logits(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 5), 5, 20);
    for (int64_t i = 1; i < tt_numel(x); i += 2) tt_set_at(x, i, -tt_at(x, i));
    tt_tensor *in[2] = {x, gc_input(TT_SHAPE(2, 5), 0, 1)};
    gc_check(r, f_bce, NULL, 2, in, NULL);
}

typedef struct ce_ctx {
    tt_tensor *targets;
    double smoothing;
} ce_ctx;

static tt_tensor *f_ce_smooth(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const ce_ctx *c = ctx;
    return tt_cross_entropy_smooth(in[0], c->targets, -100, c->smoothing);
}

// (B, T, V) logits; one ignored target.
static void cross_entropy_label_smoothing(gc_report *r) {
    tt_tensor *logits = gc_input(TT_SHAPE(2, 3, 5), -2, 2);
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(2, 3), (const int64_t[]){4, 0, -100, 2, 2, 1});
    gc_check(r, f_ce_smooth, &(ce_ctx){t, 0.1}, 1, &logits, NULL);
}

const gc_module_case gc_modules_nn_layers[] = {
    {"linear", "bias", linear_bias},
    {"linear", "no_bias", linear_no_bias},
    {"linear", "batched_3d", linear_batched_3d},
    {"embedding", "basic", embedding_basic},
    {"layernorm", "affine", layernorm_affine},
    {"layernorm", "no_affine", layernorm_no_affine},
    {"rmsnorm", "weight", rmsnorm_weight},
    {"rmsnorm", "no_weight", rmsnorm_no_weight},
    {"sequential", "mlp_2_16_2", sequential_mlp},
    {"mlp", "tanh_bias", mlp_tanh_bias},
    {"mlp", "gelu_no_bias_3d", mlp_gelu_no_bias_3d},
    {"embedding_bag", "sum_offsets_empty_bag", bag_sum_offsets},
    {"embedding_bag", "mean_offsets_empty_bag", bag_mean_offsets},
    {"embedding_bag", "max_offsets_empty_bag", bag_max_offsets},
    {"embedding_bag", "sum_per_sample_weights", bag_sum_per_sample_weights},
    {"embedding_bag", "mean_2d_padding", bag_mean_2d_padding},
    {"embedding_bag", "sum_2d_per_sample_weights_padding", bag_sum_2d_per_sample_weights_padding},
    {"mse_loss", "basic", mse_basic},
    {"bce_with_logits", "basic", bce_basic},
    {"bce_with_logits", "large_logits", bce_large_logits},
    {"cross_entropy", "label_smoothing", cross_entropy_label_smoothing},
    {NULL, NULL, NULL},
};

// Gradcheck cases of the neural-network ops (autograd/ops_nn.c): contiguous, strided and
// broadcast inputs, a fully masked softmax row, ignored targets, label smoothing, dropout.
// Index tensors, masks and RNG seeds travel in ctx: they are not differentiable inputs.
#include "gc_util.h"

// ---- softmax / log_softmax ----

typedef struct dim_ctx {
    int dim;
} dim_ctx;

static tt_tensor *f_softmax(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_softmax(in[0], ((dim_ctx *)ctx)->dim);
}

static tt_tensor *f_log_softmax(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_log_softmax(in[0], ((dim_ctx *)ctx)->dim);
}

static void softmax_last_dim(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 5), -2, 2);
    gc_check(r, f_softmax, &(dim_ctx){-1}, 1, &x, NULL);
}

static void softmax_dim0(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(4, 3), -2, 2);
    gc_check(r, f_softmax, &(dim_ctx){0}, 1, &x, NULL);
}

static void softmax_middle_dim(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 4), -2, 2);
    gc_check(r, f_softmax, &(dim_ctx){1}, 1, &x, NULL);
}

static void softmax_transposed(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -2, 2);  // (3, 4)
    gc_check(r, f_softmax, &(dim_ctx){-1}, 1, &x, NULL);
}

static void log_softmax_last_dim(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 5), -2, 2);
    gc_check(r, f_log_softmax, &(dim_ctx){-1}, 1, &x, NULL);
}

static void log_softmax_dim0(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(4, 3), -2, 2);
    gc_check(r, f_log_softmax, &(dim_ctx){0}, 1, &x, NULL);
}

static void log_softmax_transposed(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(2, 4, 3), 1, 2, -2, 2);  // (2, 3, 4)
    gc_check(r, f_log_softmax, &(dim_ctx){-1}, 1, &x, NULL);
}

// softmax(masked_fill(x, mask, -inf)) with row 1 entirely masked and row 0 partly masked.
typedef struct masked_softmax_ctx {
    tt_tensor *mask;
    bool log_out;
} masked_softmax_ctx;

static tt_tensor *f_masked_softmax(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const masked_softmax_ctx *c = ctx;
    tt_tensor *h = tt_masked_fill(in[0], c->mask, -INFINITY);
    return c->log_out ? tt_log_softmax(h, -1) : tt_softmax(h, -1);
}

static tt_tensor *row_mask(void) {  // (3, 4) i32
    return tt_from_data(TT_I32, TT_SHAPE(3, 4),
                        (const int32_t[]){0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0});
}

static void softmax_fully_masked_row(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -2, 2);
    gc_check(r, f_masked_softmax, &(masked_softmax_ctx){row_mask(), false}, 1, &x, NULL);
}

// log_softmax's masked outputs are -inf: a central difference there is NaN, so the check
// composes with a mask back to 0 (what a masked loss does) before comparing.
static tt_tensor *f_masked_log_softmax(tt_tensor *const *in, int n, void *ctx) {
    tt_tensor *y = f_masked_softmax(in, n, ctx);
    return tt_masked_fill(y, ((const masked_softmax_ctx *)ctx)->mask, 0.0);
}

static void log_softmax_fully_masked_row(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -2, 2);
    gc_check(r, f_masked_log_softmax, &(masked_softmax_ctx){row_mask(), true}, 1, &x, NULL);
}

// ---- masked_fill ----

typedef struct fill_ctx {
    tt_tensor *mask;
    double value;
} fill_ctx;

static tt_tensor *f_masked_fill(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const fill_ctx *c = ctx;
    return tt_masked_fill(in[0], c->mask, c->value);
}

// A causal (T, T) mask (1 above the diagonal) on (B, T, T) scores, filled with -1e9.
static void masked_fill_causal_broadcast(gc_report *r) {
    enum { T = 4 };
    tt_tensor *mask = tt_zeros(TT_I64, TT_SHAPE(T, T));
    for (int64_t i = 0; i < T; i++)
        for (int64_t j = i + 1; j < T; j++) tt_set(mask, (int64_t[]){i, j}, 1);
    tt_tensor *x = gc_input(TT_SHAPE(2, T, T), -1, 1);
    gc_check(r, f_masked_fill, &(fill_ctx){mask, -1e9}, 1, &x, NULL);
}

// A finite fill value, a same-shape f64 mask and a transposed x.
static void masked_fill_scalar_value(gc_report *r) {
    tt_tensor *mask = tt_test_tensor(TT_F64, TT_SHAPE(3, 4), 0, 1, 0, 0, 2.5, 0, 0, 1, 0, -1, 0,
                                     0);
    tt_tensor *x = gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1);  // (3, 4)
    gc_check(r, f_masked_fill, &(fill_ctx){mask, 0.5}, 1, &x, NULL);
}

// A (B, 1, T) padding mask on (B, T, T): it broadcasts along a middle dim.
static void masked_fill_padding_b1t(gc_report *r) {
    tt_tensor *mask = tt_from_data(TT_I32, TT_SHAPE(2, 1, 3), (const int32_t[]){0, 0, 1, 0, 1, 1});
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 3), -1, 1);
    gc_check(r, f_masked_fill, &(fill_ctx){mask, -3.0}, 1, &x, NULL);
}

// A 0-d mask: all or nothing.
static void masked_fill_scalar_mask(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3), -1, 1);
    gc_check(r, f_masked_fill, &(fill_ctx){tt_scalar(TT_F64, 0), 7.0}, 1, &x, NULL);
    gc_check(r, f_masked_fill, &(fill_ctx){tt_scalar(TT_F64, 1), 7.0}, 1, &x, NULL);
}

// ---- layernorm ----

typedef struct norm_ctx {
    int norm_ndim;
} norm_ctx;

// inputs: x, weight or NULL, bias or NULL
static tt_tensor *f_layernorm(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_layernorm(in[0], ((norm_ctx *)ctx)->norm_ndim, in[1], in[2], 1e-5);
}

static void layernorm_affine(gc_report *r) {
    tt_tensor *in[3] = {gc_input(TT_SHAPE(2, 3, 5), -1, 1), gc_input(TT_SHAPE(5), 0.5, 1.5),
                        gc_input(TT_SHAPE(5), -0.5, 0.5)};
    gc_check(r, f_layernorm, &(norm_ctx){1}, 3, in, NULL);
}

static void layernorm_no_affine(gc_report *r) {
    tt_tensor *in[3] = {gc_input(TT_SHAPE(3, 6), -1, 1), NULL, NULL};
    gc_check(r, f_layernorm, &(norm_ctx){1}, 3, in, NULL);
}

static void layernorm_norm_ndim2(gc_report *r) {
    tt_tensor *in[3] = {gc_input(TT_SHAPE(2, 3, 4), -1, 1), gc_input(TT_SHAPE(3, 4), 0.5, 1.5),
                        gc_input(TT_SHAPE(3, 4), -0.5, 0.5)};
    gc_check(r, f_layernorm, &(norm_ctx){2}, 3, in, NULL);
}

static void layernorm_transposed(gc_report *r) {
    tt_tensor *in[3] = {gc_input_transposed(TT_SHAPE(5, 3), 0, 1, -1, 1),  // (3, 5)
                        gc_input_strided(TT_SHAPE(10), 0, 2, 0.5, 1.5),      // (5)
                        gc_input(TT_SHAPE(5), -0.5, 0.5)};
    gc_check(r, f_layernorm, &(norm_ctx){1}, 3, in, NULL);
}

// ---- rmsnorm ----

static tt_tensor *f_rmsnorm(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    (void)ctx;
    return tt_rmsnorm(in[0], in[1], 1e-6);
}

static void rmsnorm_weight(gc_report *r) {
    tt_tensor *in[2] = {gc_input(TT_SHAPE(2, 3, 5), -1, 1), gc_input(TT_SHAPE(5), 0.5, 1.5)};
    gc_check(r, f_rmsnorm, NULL, 2, in, NULL);
}

static void rmsnorm_no_weight(gc_report *r) {
    tt_tensor *in[2] = {gc_input_transposed(TT_SHAPE(6, 4), 0, 1, -1, 1), NULL};  // (4, 6)
    gc_check(r, f_rmsnorm, NULL, 2, in, NULL);
}

// ---- embedding ----

typedef struct index_ctx {
    tt_tensor *idx;
    int64_t ignore_index;
    double smoothing;
} index_ctx;

static tt_tensor *f_embedding(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_embedding(in[0], ((index_ctx *)ctx)->idx);
}

static void embedding_duplicate_indices(gc_report *r) {
    tt_tensor *idx = tt_from_data(TT_I64, TT_SHAPE(2, 3), (const int64_t[]){1, 3, 1, 0, 3, 3});
    tt_tensor *w = gc_input(TT_SHAPE(5, 4), -1, 1);
    gc_check(r, f_embedding, &(index_ctx){.idx = idx}, 1, &w, NULL);
}

static void embedding_i32(gc_report *r) {
    tt_tensor *idx = tt_from_data(TT_I32, TT_SHAPE(4), (const int32_t[]){2, 0, 4, 2});
    tt_tensor *w = gc_input_transposed(TT_SHAPE(3, 5), 0, 1, -1, 1);  // (5, 3)
    gc_check(r, f_embedding, &(index_ctx){.idx = idx}, 1, &w, NULL);
}

// ---- cross_entropy ----

static tt_tensor *f_cross_entropy(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const index_ctx *c = ctx;
    return tt_cross_entropy_smooth(in[0], c->idx, c->ignore_index, c->smoothing);
}

static void cross_entropy_contiguous(gc_report *r) {
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(4), (const int64_t[]){1, 0, 4, 2});
    tt_tensor *x = gc_input(TT_SHAPE(4, 5), -2, 2);
    gc_check(r, f_cross_entropy, &(index_ctx){t, -100, 0}, 1, &x, NULL);
}

static void cross_entropy_ignore_index(gc_report *r) {
    tt_tensor *t = tt_from_data(TT_I32, TT_SHAPE(5), (const int32_t[]){1, -100, 4, -100, 0});
    tt_tensor *x = gc_input(TT_SHAPE(5, 5), -2, 2);
    gc_check(r, f_cross_entropy, &(index_ctx){t, -100, 0}, 1, &x, NULL);
}

static void cross_entropy_label_smoothing(gc_report *r) {
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(4), (const int64_t[]){3, 0, 2, 2});
    tt_tensor *x = gc_input(TT_SHAPE(4, 5), -2, 2);
    gc_check(r, f_cross_entropy, &(index_ctx){t, 2, 0.1}, 1, &x, NULL);  // ignores class 2
    gc_check(r, f_cross_entropy, &(index_ctx){t, -1, 0.25}, 1, &x, NULL);
}

static void cross_entropy_logits_3d(gc_report *r) {
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(2, 3), (const int64_t[]){0, 4, 2, 1, 1, 3});
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 5), -2, 2);
    gc_check(r, f_cross_entropy, &(index_ctx){t, -100, 0}, 1, &x, NULL);
}

static void cross_entropy_transposed(gc_report *r) {
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(3), (const int64_t[]){3, 0, 1});
    tt_tensor *x = gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -2, 2);  // (3, 4)
    gc_check(r, f_cross_entropy, &(index_ctx){t, -100, 0.1}, 1, &x, NULL);
}

// Every target ignored: the loss is the constant 0 and the logits' gradient is all 0.
static tt_tensor *f_cross_entropy_plain(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const index_ctx *c = ctx;
    return tt_cross_entropy(in[0], c->idx, c->ignore_index);
}

static void cross_entropy_all_ignored(gc_report *r) {
    tt_tensor *t = tt_from_data(TT_I64, TT_SHAPE(3), (const int64_t[]){-100, -100, -100});
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -2, 2);
    gc_check(r, f_cross_entropy_plain, &(index_ctx){t, -100, 0}, 1, &x, NULL);
}

// ---- dropout ----

typedef struct dropout_ctx {
    uint64_t seed;
    double p;
    bool training;
} dropout_ctx;

// Reseeds a private RNG on every evaluation so that each one draws the same mask.
static tt_tensor *f_dropout(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const dropout_ctx *c = ctx;
    tt_rng rng;
    tt_rng_seed(&rng, c->seed);
    return tt_dropout(in[0], c->p, c->training, &rng);
}

static void dropout_training(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(4, 5), -1, 1);
    gc_check(r, f_dropout, &(dropout_ctx){7, 0.4, true}, 1, &x, NULL);
    tt_tensor *xt = gc_input_transposed(TT_SHAPE(5, 4), 0, 1, -1, 1);
    gc_check(r, f_dropout, &(dropout_ctx){8, 0.5, true}, 1, &xt, NULL);
}

static void dropout_eval(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -1, 1);
    gc_check(r, f_dropout, &(dropout_ctx){7, 0.4, false}, 1, &x, NULL);
}

const gc_case gc_cases_nn[] = {
    {TT_OP_SOFTMAX, "last_dim", softmax_last_dim},
    {TT_OP_SOFTMAX, "dim0", softmax_dim0},
    {TT_OP_SOFTMAX, "middle_dim", softmax_middle_dim},
    {TT_OP_SOFTMAX, "transposed", softmax_transposed},
    {TT_OP_SOFTMAX, "fully_masked_row", softmax_fully_masked_row},
    {TT_OP_LOG_SOFTMAX, "last_dim", log_softmax_last_dim},
    {TT_OP_LOG_SOFTMAX, "dim0", log_softmax_dim0},
    {TT_OP_LOG_SOFTMAX, "transposed", log_softmax_transposed},
    {TT_OP_LOG_SOFTMAX, "fully_masked_row", log_softmax_fully_masked_row},
    {TT_OP_MASKED_FILL, "causal_broadcast", masked_fill_causal_broadcast},
    {TT_OP_MASKED_FILL, "scalar_value", masked_fill_scalar_value},
    {TT_OP_MASKED_FILL, "padding_b1t", masked_fill_padding_b1t},
    {TT_OP_MASKED_FILL, "scalar_mask", masked_fill_scalar_mask},
    {TT_OP_LAYERNORM, "affine", layernorm_affine},
    {TT_OP_LAYERNORM, "no_affine", layernorm_no_affine},
    {TT_OP_LAYERNORM, "norm_ndim2", layernorm_norm_ndim2},
    {TT_OP_LAYERNORM, "transposed", layernorm_transposed},
    {TT_OP_RMSNORM, "weight", rmsnorm_weight},
    {TT_OP_RMSNORM, "no_weight", rmsnorm_no_weight},
    {TT_OP_EMBEDDING, "duplicate_indices", embedding_duplicate_indices},
    {TT_OP_EMBEDDING, "i32", embedding_i32},
    {TT_OP_CROSS_ENTROPY, "contiguous", cross_entropy_contiguous},
    {TT_OP_CROSS_ENTROPY, "ignore_index", cross_entropy_ignore_index},
    {TT_OP_CROSS_ENTROPY, "label_smoothing", cross_entropy_label_smoothing},
    {TT_OP_CROSS_ENTROPY, "logits_3d", cross_entropy_logits_3d},
    {TT_OP_CROSS_ENTROPY, "transposed", cross_entropy_transposed},
    {TT_OP_CROSS_ENTROPY, "all_ignored", cross_entropy_all_ignored},
    {TT_OP_DROPOUT, "training", dropout_training},
    {TT_OP_DROPOUT, "eval", dropout_eval},
    {0, NULL, NULL},
};

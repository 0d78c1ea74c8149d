// Check suite of nn/mlp.c and nn/embedding_bag.c: tt_nn_mlp against an nn.Sequential in
// torchvision.ops.MLP's layout and tt_embedding_bag against F.embedding_bag, given the same
// weights (tests/reference/mlp_reference.h, printed by tests/reference/gen_mlp_reference.py):
// outputs and the gradients of a weighted sum, in f64 (1e-10) and f32 (1e-5); parameter names,
// dropout placement, the modules, and the abort paths. Also a LayerNorm without affine
// parameters against F.layer_norm. Finite-difference gradients are in tests/gc_nn_layers.c.
#include <signal.h>
#include <string.h>

#include "test_util.h"

typedef struct mlp_ref {
    const char *name;
    int n_widths;
    const int *widths;
    tt_act act;
    bool bias;
    int x_ndim;
    const int *x_shape;
    const char *param_names;  // space-separated, state_dict order
    const double *params, *x, *r, *out, *dx, *dparams;
} mlp_ref;

typedef struct bag_ref {
    const char *name;
    tt_bag_mode mode;
    int V, C;
    int in_rows, in_cols;  // (rows, cols) for a 2-D input, (N, 0) for a 1-D one
    const int *input;
    int n_offsets;         // 0: no offsets (2-D input)
    const int *offsets;
    bool include_last_offset, use_padding_idx;
    int padding_idx;
    int B;
    const double *weight, *psw, *r, *out, *dweight, *dpsw;  // psw, dpsw NULL when none
} bag_ref;

#include "reference/mlp_reference.h"

#define NMLP (int)(sizeof mlp_refs / sizeof mlp_refs[0])
#define NBAG (int)(sizeof bag_refs / sizeof bag_refs[0])

static const tt_dtype dtypes[2] = {TT_F64, TT_F32};
#define TOL(dt) ((dt) == TT_F64 ? 1e-10 : 1e-5)

// A tensor of dtype dt from f64 values (a leaf requiring grad when grad).
static tt_tensor *from_ref(tt_dtype dt, int ndim, const int64_t *shape, const double *v,
                           bool grad) {
    tt_tensor *t = tt_to_dtype(tt_from_data(TT_F64, ndim, shape, v), dt);
    return tt_set_requires_grad(t, grad);
}

static tt_tensor *ints(tt_dtype dt, int ndim, const int64_t *shape, const int *v) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    tt_tensor *t = tt_zeros(dt, ndim, shape);
    for (int64_t i = 0; i < n; i++) tt_set_at(t, i, v[i]);
    return t;
}

// ---- MLP parity with PyTorch: _i = 2 * case + dtype ----

START_TEST(test_mlp_parity) {
    const mlp_ref *r = &mlp_refs[_i / 2];
    tt_dtype dt = dtypes[_i % 2];
    double tol = TOL(dt);
    tt_rng rng;
    tt_rng_seed(&rng, 3);
    int64_t widths[8];
    for (int i = 0; i < r->n_widths; i++) widths[i] = r->widths[i];
    tt_dtype prev = tt_set_default_dtype(dt);
    tt_nn_mlp m;
    tt_nn_mlp_init(&m, r->n_widths, widths, r->act, r->bias, 0.0, &rng);
    tt_set_default_dtype(prev);
    tt_params params;
    tt_params_init(&params);
    tt_nn_mlp_params(&m, &params, NULL);

    // The names, in order, are torchvision's; load PyTorch's values into them.
    char names[512] = "";
    int64_t off = 0;
    tt_scope_begin();
    for (int i = 0; i < params.n; i++) {
        if (i) strcat(names, " ");
        strcat(names, params.items[i].name);
        tt_tensor *p = params.items[i].tensor;
        tt_copy_(p, tt_from_data(TT_F64, p->ndim, p->shape, r->params + off));
        off += tt_numel(p);
    }
    ck_assert_str_eq(names, r->param_names);

    int64_t xs[4];
    for (int d = 0; d < r->x_ndim; d++) xs[d] = r->x_shape[d];
    tt_tensor *x = from_ref(dt, r->x_ndim, xs, r->x, true);
    tt_tensor *y = tt_nn_mlp_forward(&m, x);
    ck_assert_int_eq(y->ndim, r->x_ndim);
    ck_assert_int_eq(y->shape[y->ndim - 1], widths[r->n_widths - 1]);
    tt_assert_values(y, r->out, tt_numel(y), tol, tol, __FILE__, __LINE__);
    tt_backward(tt_sum_all(tt_mul(y, from_ref(dt, y->ndim, y->shape, r->r, false))));
    tt_assert_values(tt_grad(x), r->dx, tt_numel(x), tol, tol, __FILE__, __LINE__);
    off = 0;
    for (int i = 0; i < params.n; i++) {
        tt_tensor *p = params.items[i].tensor;
        tt_assert_values(tt_grad(p), r->dparams + off, tt_numel(p), tol, tol, __FILE__,
                         __LINE__);
        off += tt_numel(p);
    }
    tt_scope_end();
    tt_params_free(&params);
    tt_nn_mlp_free(&m);
}
END_TEST

// ---- MLP: layout, init, dropout placement, train/eval ----

typedef struct child_list {
    char names[16][64];
    int n;
} child_list;

static void list_child(tt_module child, const char *name, void *ctx) {
    child_list *l = ctx;
    snprintf(l->names[l->n++], sizeof l->names[0], "%s:%s", child.ops->type, name);
}

START_TEST(test_mlp_layout) {
    tt_rng rng;
    tt_rng_seed(&rng, 4);
    tt_nn_mlp m;
    tt_nn_mlp_init(&m, 4, (int64_t[]){10, 32, 16, 3}, TT_ACT_GELU, true, 0.25, &rng);
    // torchvision.ops.MLP(10, [32, 16, 3], activation_layer=nn.GELU, dropout=0.25) prints
    // (0) Linear (1) GELU (2) Dropout (3) Linear (4) GELU (5) Dropout (6) Linear (7) Dropout.
    child_list l = {0};
    tt_module_children(tt_nn_mlp_module(&m), list_child, &l);
    static const char *const want[] = {"Linear:0", "Activation:1", "Dropout:2", "Linear:3",
                                       "Activation:4", "Dropout:5", "Linear:6", "Dropout:7"};
    ck_assert_int_eq(l.n, 8);
    for (int i = 0; i < 8; i++) ck_assert_str_eq(l.names[i], want[i]);
    ck_assert_str_eq(tt_nn_mlp_module(&m).ops->type, "MLP");

    tt_params p;
    tt_params_init(&p);
    tt_nn_mlp_params(&m, &p, "head");
    static const char *const pnames[] = {"head.0.weight", "head.0.bias", "head.3.weight",
                                         "head.3.bias", "head.6.weight", "head.6.bias"};
    ck_assert_int_eq(p.n, 6);
    for (int i = 0; i < 6; i++) ck_assert_str_eq(p.items[i].name, pnames[i]);
    ck_assert_int_eq(tt_params_numel(&p), 10 * 32 + 32 + 32 * 16 + 16 + 16 * 3 + 3);
    // PyTorch's Linear init: weight and bias in U(-1/sqrt(in), 1/sqrt(in)).
    for (int i = 0; i < p.n; i++) {
        tt_tensor *t = p.items[i].tensor;
        double k = 1.0 / sqrt((double)(i < 2 ? 10 : i < 4 ? 32 : 16)), lo = 1, hi = -1;
        ck_assert(t->requires_grad);
        for (int64_t j = 0; j < tt_numel(t); j++) {
            lo = fmin(lo, tt_at(t, j));
            hi = fmax(hi, tt_at(t, j));
        }
        ck_assert(lo >= -k && hi <= k);
        if (i == 0) ck_assert(lo < -0.9 * k && hi > 0.9 * k);
    }
    tt_params_free(&p);

    // Training: every Dropout active, the one after the last Linear included.
    for (int i = 0; i < m.n_layers; i++) ck_assert(m.drops[i].training);
    tt_nn_mlp_train(&m, false);
    for (int i = 0; i < m.n_layers; i++) ck_assert(!m.drops[i].training);
    tt_module_train(tt_nn_mlp_module(&m), true);
    for (int i = 0; i < m.n_layers; i++) ck_assert(m.drops[i].training);
    tt_nn_mlp_free(&m);
    tt_nn_mlp_free(&m);  // safe on a zeroed struct
}
END_TEST

// With p = 1 every Dropout zeroes its input: a nonzero last bias would show if the last
// Linear had no Dropout after it. In eval mode the output is the plain composition.
START_TEST(test_mlp_dropout_after_last) {
    tt_rng rng;
    tt_rng_seed(&rng, 5);
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_mlp m;
    tt_nn_mlp_init(&m, 3, (int64_t[]){3, 4, 2}, TT_ACT_RELU, true, 1.0, &rng);
    tt_set_default_dtype(prev);
    tt_scope_begin();
    tt_fill_(m.layers[1].bias, 0.5);
    tt_tensor *x = tt_randn(&rng, TT_F64, TT_SHAPE(5, 3));
    ck_assert_values(tt_sum_all(tt_abs(tt_nn_mlp_forward(&m, x))), 0, 0, 0);
    tt_nn_mlp_train(&m, false);
    tt_tensor *y = tt_nn_mlp_forward(&m, x);
    tt_tensor *ref = tt_nn_linear_forward(&m.layers[1], tt_relu(tt_nn_linear_forward(&m.layers[0],
                                                                                     x)));
    tt_assert_values(y, tt_data(tt_contiguous(ref)), tt_numel(ref), 0, 0, __FILE__, __LINE__);
    // Through a sequential, as a module.
    tt_nn_sequential s;
    tt_nn_sequential_init(&s);
    tt_nn_sequential_add(&s, tt_nn_mlp_module(&m));
    tt_assert_values(tt_nn_sequential_forward(&s, x), tt_data(tt_contiguous(ref)), tt_numel(ref),
                     0, 0, __FILE__, __LINE__);
    tt_nn_sequential_free(&s);
    tt_scope_end();
    tt_nn_mlp_free(&m);
}
END_TEST

// ---- embedding bag parity with PyTorch: _i = 4 * case + 2 * index dtype + dtype ----

START_TEST(test_bag_parity) {
    const bag_ref *r = &bag_refs[_i / 4];
    tt_dtype dt = dtypes[_i % 2];
    tt_dtype it = (_i / 2) % 2 ? TT_I32 : TT_I64;
    double tol = TOL(dt);
    tt_scope_begin();
    tt_tensor *w = from_ref(dt, TT_SHAPE(r->V, r->C), r->weight, true);
    bool two_d = r->in_cols > 0;
    int64_t ishape[2] = {r->in_rows, r->in_cols};
    tt_tensor *input = ints(it, two_d ? 2 : 1, ishape, r->input);
    tt_tensor *offsets =
        r->n_offsets ? ints(it == TT_I32 ? TT_I64 : TT_I32, TT_SHAPE(r->n_offsets),
                            r->offsets) : NULL;
    tt_tensor *psw = r->psw ? from_ref(dt, input->ndim, input->shape, r->psw, true) : NULL;
    tt_embedding_bag_opts o = {.mode = r->mode, .offsets = offsets,
                               .include_last_offset = r->include_last_offset,
                               .per_sample_weights = psw, .use_padding_idx = r->use_padding_idx,
                               .padding_idx = r->padding_idx};
    tt_tensor *y = tt_embedding_bag(w, input, &o);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[0], r->B);
    ck_assert_int_eq(y->shape[1], r->C);
    ck_assert_int_eq(y->dtype, dt);
    tt_assert_values(y, r->out, tt_numel(y), tol, tol, __FILE__, __LINE__);
    tt_backward(tt_sum_all(tt_mul(y, from_ref(dt, 2, y->shape, r->r, false))));
    tt_assert_values(tt_grad(w), r->dweight, tt_numel(w), tol, tol, __FILE__, __LINE__);
    if (psw) tt_assert_values(tt_grad(psw), r->dpsw, tt_numel(psw), tol, tol, __FILE__, __LINE__);
    tt_scope_end();
}
END_TEST

// ---- embedding bag: hand values, empty input, the module ----

// w rows are (10 r, 10 r + 1); bags [1 2] [] [0 3 | 4] with include_last_offset: input[4] is
// after the last offset, in no bag.
START_TEST(test_bag_hand_values) {
    tt_scope_begin();
    tt_tensor *w = tt_set_requires_grad(tt_test_tensor(TT_F64, TT_SHAPE(5, 2), 0, 1, 10, 11,
                                                       20, 21, 30, 31, 40, 41), true);
    tt_tensor *input = tt_test_tensor(TT_F64, TT_SHAPE(5), 1, 2, 0, 3, 4);
    input = tt_to_dtype(input, TT_I64);
    tt_tensor *offsets = tt_to_dtype(tt_test_tensor(TT_F64, TT_SHAPE(4), 0, 2, 2, 4), TT_I32);
    tt_embedding_bag_opts o = {.mode = TT_BAG_MEAN, .offsets = offsets,
                               .include_last_offset = true};
    tt_tensor *y = tt_embedding_bag(w, input, &o);
    ck_assert_values(y, 0, 0, 15, 16, 0, 0, 15, 16);
    o.mode = TT_BAG_MAX;
    ck_assert_values(tt_embedding_bag(w, input, &o), 0, 0, 20, 21, 0, 0, 30, 31);
    o.mode = TT_BAG_SUM;
    o.include_last_offset = false;  // now 4 bags, the last [4]
    y = tt_embedding_bag(w, input, &o);
    ck_assert_values(y, 0, 0, 30, 32, 0, 0, 30, 32, 40, 41);
    tt_backward(tt_sum_all(y));
    ck_assert_values(tt_grad(w), 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
    // opts NULL: sum over the rows of a 2-D input.
    tt_tensor *in2 = tt_to_dtype(tt_test_tensor(TT_F64, TT_SHAPE(2, 2), 4, 4, 0, 1), TT_I32);
    ck_assert_values(tt_embedding_bag(w, in2, NULL), 0, 0, 80, 82, 10, 12);
    // No entries at all: every bag is empty and gives zeros; the gradient reaches weight (0).
    tt_zero_grad(w);
    tt_tensor *none = tt_zeros(TT_I64, TT_SHAPE(0));
    tt_tensor *zoff = tt_zeros(TT_I64, TT_SHAPE(3));
    o = (tt_embedding_bag_opts){.mode = TT_BAG_MEAN, .offsets = zoff};
    y = tt_embedding_bag(w, none, &o);
    ck_assert_values(y, 0, 0, 0, 0, 0, 0, 0, 0);
    tt_backward(tt_sum_all(y));
    ck_assert_values(tt_grad(w), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    // include_last_offset with a single offset: no bag at all, a (0, C) result (as PyTorch).
    o = (tt_embedding_bag_opts){.mode = TT_BAG_MAX, .include_last_offset = true,
                                .offsets = tt_zeros(TT_I64, TT_SHAPE(1))};
    y = tt_embedding_bag(w, input, &o);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[0], 0);
    ck_assert_int_eq(y->shape[1], 2);
    tt_scope_end();
}
END_TEST

START_TEST(test_bag_module) {
    tt_rng rng;
    tt_rng_seed(&rng, 6);
    tt_nn_embedding_bag m;
    tt_nn_embedding_bag_init(&m, 6, 4, TT_BAG_MEAN, &rng);
    ck_assert_int_eq(m.weight->dtype, TT_F32);
    ck_assert(m.weight->requires_grad);
    ck_assert(tt_at(m.weight, 4 * 4) != 0);
    tt_nn_embedding_bag_set_padding_idx(&m, -2);  // row 4
    ck_assert_int_eq(m.padding_idx, 4);
    for (int c = 0; c < 4; c++) ck_assert(tt_at(m.weight, 4 * 4 + c) == 0);
    ck_assert(tt_at(m.weight, 3 * 4) != 0);
    tt_params p;
    tt_params_init(&p);
    tt_nn_embedding_bag_params(&m, &p, "bag");
    ck_assert_int_eq(p.n, 1);
    ck_assert_str_eq(p.items[0].name, "bag.weight");
    tt_params_free(&p);

    tt_scope_begin();
    // Bags [1 4 4] and [2 3]: row 4 is padding, so bag 0 is row 1 alone.
    tt_tensor *in = tt_to_dtype(tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 1, 4, 4, 2, 3, 3),
                                TT_I64);
    tt_tensor *y = tt_module_forward(tt_nn_embedding_bag_module(&m), in);
    tt_tensor *row1 = tt_narrow(m.weight, 0, 1, 1);
    tt_tensor *ref1 = tt_reshape(row1, TT_SHAPE(4));
    for (int c = 0; c < 4; c++) ck_assert_close(tt_at(y, c), tt_at(ref1, c), 1e-7, 0);
    tt_tensor *mean23 = tt_mean(tt_index_select(m.weight, 0, tt_to_dtype(tt_test_tensor(
                                    TT_F64, TT_SHAPE(3), 2, 3, 3), TT_I64)), 1, (int[]){0},
                                false);
    for (int c = 0; c < 4; c++) ck_assert_close(tt_at(y, 4 + c), tt_at(mean23, c), 1e-6, 0);
    tt_backward(tt_sum_all(y));
    for (int c = 0; c < 4; c++) ck_assert(tt_at(tt_grad(m.weight), 4 * 4 + c) == 0);
    ck_assert_str_eq(tt_nn_embedding_bag_module(&m).ops->type, "EmbeddingBag");
    tt_scope_end();
    tt_nn_embedding_bag_free(&m);
    tt_nn_embedding_bag_free(&m);  // safe on a zeroed struct
}
END_TEST

// ---- LayerNorm without affine parameters: no parameters, F.layer_norm's values ----

START_TEST(test_layernorm_plain) {
    tt_nn_layernorm ln;
    tt_dtype prev = tt_set_default_dtype(TT_F64);
    tt_nn_layernorm_init(&ln, 5, 1e-5, false, false);
    tt_set_default_dtype(prev);
    tt_params p;
    tt_params_init(&p);
    tt_nn_layernorm_params(&ln, &p, "ln");
    ck_assert_int_eq(p.n, 0);
    tt_params_free(&p);
    tt_scope_begin();
    tt_tensor *x = tt_from_data(TT_F64, TT_SHAPE(2, 5), layernorm_plain_x);
    tt_assert_values(tt_nn_layernorm_forward(&ln, x), layernorm_plain_out, 10, 1e-12, 1e-12,
                     __FILE__, __LINE__);
    tt_scope_end();
    tt_nn_layernorm_free(&ln);
}
END_TEST

// ---- aborts ----

static tt_rng abort_rng;

START_TEST(test_abort_mlp_widths) {
    tt_expect_abort("tt_nn_mlp_init: need n_widths >= 2 widths {in, hidden..., out}, got "
                    "n_widths=1");
    tt_nn_mlp m;
    tt_nn_mlp_init(&m, 1, (int64_t[]){4}, TT_ACT_RELU, true, 0.0, &abort_rng);
}
END_TEST

START_TEST(test_abort_mlp_width_zero) {
    tt_expect_abort("widths[1]=0; every width must be positive");
    tt_nn_mlp m;
    tt_nn_mlp_init(&m, 3, (int64_t[]){4, 0, 2}, TT_ACT_RELU, true, 0.0, &abort_rng);
}
END_TEST

START_TEST(test_abort_mlp_act) {
    tt_expect_abort("tt_nn_mlp_init: invalid activation");
    tt_nn_mlp m;
    tt_nn_mlp_init(&m, 2, (int64_t[]){4, 2}, (tt_act)TT_ACT_COUNT, true, 0.0, &abort_rng);
}
END_TEST

START_TEST(test_abort_mlp_swiglu) {
    tt_expect_abort("tt_nn_mlp_init: swiglu halves the width, so the next layer would not fit");
    tt_nn_mlp m;
    tt_nn_mlp_init(&m, 3, (int64_t[]){4, 8, 2}, TT_ACT_SWIGLU, true, 0.0, &abort_rng);
}
END_TEST

START_TEST(test_abort_swiglu_odd) {
    tt_expect_abort("tt_activate: swiglu splits the last dim in halves (gate, up), so it "
                    "must be even, got (2, 3)");
    tt_activate(TT_ACT_SWIGLU, tt_zeros(TT_F32, TT_SHAPE(2, 3)));
}
END_TEST

START_TEST(test_abort_mlp_input) {
    tt_expect_abort("tt_nn_linear_forward");
    tt_nn_mlp m;
    tt_nn_mlp_init(&m, 2, (int64_t[]){4, 2}, TT_ACT_RELU, true, 0.0, &abort_rng);
    tt_nn_mlp_forward(&m, tt_zeros(TT_F32, TT_SHAPE(2, 3)));
}
END_TEST

static void bag_abort(const tt_embedding_bag_opts *o, int64_t n, const double *in, int ndim) {
    tt_tensor *w = tt_zeros(TT_F32, TT_SHAPE(5, 2));
    int64_t shape[2] = {ndim == 2 ? 2 : n, n / 2};
    tt_tensor *input = tt_to_dtype(tt_from_data(TT_F64, ndim, shape, in), TT_I64);
    tt_embedding_bag(w, input, o);
}

static const double bag_in[4] = {0, 1, 2, 3};

START_TEST(test_abort_bag_psw_mean) {
    tt_expect_abort("per_sample_weights is only supported with TT_BAG_SUM, got mode mean");
    tt_embedding_bag_opts o = {.mode = TT_BAG_MEAN,
                               .per_sample_weights = tt_ones(TT_F32, TT_SHAPE(2, 2))};
    bag_abort(&o, 4, bag_in, 2);
}
END_TEST

START_TEST(test_abort_bag_psw_shape) {
    tt_expect_abort("per_sample_weights (4,) (f32) must have input's shape (2, 2)");
    tt_embedding_bag_opts o = {.per_sample_weights = tt_ones(TT_F32, TT_SHAPE(4))};
    bag_abort(&o, 4, bag_in, 2);
}
END_TEST

START_TEST(test_abort_bag_2d_offsets) {
    tt_expect_abort("is 2-D, so each row is a bag and offsets must be NULL");
    tt_embedding_bag_opts o = {.offsets = tt_zeros(TT_I64, TT_SHAPE(1))};
    bag_abort(&o, 4, bag_in, 2);
}
END_TEST

START_TEST(test_abort_bag_1d_no_offsets) {
    tt_expect_abort("is 1-D and offsets is NULL");
    bag_abort(NULL, 4, bag_in, 1);
}
END_TEST

START_TEST(test_abort_bag_first_offset) {
    tt_expect_abort("offsets[0] is 1; the first bag must start at 0");
    tt_embedding_bag_opts o = {.offsets = tt_to_dtype(tt_test_tensor(TT_F64, TT_SHAPE(2), 1, 2),
                                                      TT_I64)};
    bag_abort(&o, 4, bag_in, 1);
}
END_TEST

START_TEST(test_abort_bag_decreasing) {
    tt_expect_abort("offsets[2] = 1 is below offsets[1] = 3; offsets must not decrease");
    tt_embedding_bag_opts o = {.offsets = tt_to_dtype(tt_test_tensor(TT_F64, TT_SHAPE(3), 0, 3,
                                                                     1), TT_I64)};
    bag_abort(&o, 4, bag_in, 1);
}
END_TEST

START_TEST(test_abort_bag_offset_beyond) {
    tt_expect_abort("offsets[1] = 5 is beyond input's length 4");
    tt_embedding_bag_opts o = {.offsets = tt_to_dtype(tt_test_tensor(TT_F64, TT_SHAPE(2), 0, 5),
                                                      TT_I64)};
    bag_abort(&o, 4, bag_in, 1);
}
END_TEST

START_TEST(test_abort_bag_index_range) {
    tt_expect_abort("input value 7 at position 2 (row-major) of input (2, 2) is out of range");
    static const double bad[4] = {0, 1, 7, 3};
    bag_abort(NULL, 4, bad, 2);
}
END_TEST

START_TEST(test_abort_bag_padding_range) {
    tt_expect_abort("padding_idx 5 is outside [-5, 5)");
    tt_embedding_bag_opts o = {.use_padding_idx = true, .padding_idx = 5};
    bag_abort(&o, 4, bag_in, 2);
}
END_TEST

START_TEST(test_abort_bag_input_dtype) {
    tt_expect_abort("input has dtype f32; pass a TT_I32 or TT_I64 tensor");
    tt_embedding_bag(tt_zeros(TT_F32, TT_SHAPE(5, 2)), tt_zeros(TT_F32, TT_SHAPE(2, 2)), NULL);
}
END_TEST

START_TEST(test_abort_bag_mode) {
    tt_expect_abort("invalid mode 3; valid values are 0 .. 2");
    tt_nn_embedding_bag m;
    tt_nn_embedding_bag_init(&m, 4, 2, TT_BAG_MODE_COUNT, &abort_rng);
}
END_TEST

int main(void) {
    tt_rng_seed(&abort_rng, 1);
    Suite *s = suite_create("nn_mlp");
    TCase *tc = tt_tcase("parity");
    tcase_add_loop_test(tc, test_mlp_parity, 0, 2 * NMLP);
    tcase_add_loop_test(tc, test_bag_parity, 0, 4 * NBAG);
    tcase_add_test(tc, test_layernorm_plain);
    suite_add_tcase(s, tc);
    TCase *mc = tt_tcase("module");
    tcase_add_test(mc, test_mlp_layout);
    tcase_add_test(mc, test_mlp_dropout_after_last);
    tcase_add_test(mc, test_bag_hand_values);
    tcase_add_test(mc, test_bag_module);
    suite_add_tcase(s, mc);

    TCase *ab = tt_tcase_aborts("aborts_mlp");
    tcase_add_test_raise_signal(ab, test_abort_mlp_widths, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_mlp_width_zero, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_mlp_act, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_mlp_swiglu, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_swiglu_odd, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_mlp_input, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_psw_mean, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_psw_shape, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_2d_offsets, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_1d_no_offsets, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_first_offset, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_decreasing, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_offset_beyond, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_index_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_padding_range, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_input_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_bag_mode, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

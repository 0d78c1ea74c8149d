// Gradcheck cases of the shape ops (autograd/ops_shape.c): every view op on contiguous and
// non-contiguous inputs, cat/stack with several inputs, the copies and the dtype round trip.
// Outputs that are views of the gradcheck inputs are fine: each evaluation reads them at once.
#include "gc_util.h"

// ---- reshape / view / flatten ----

static tt_tensor *f_view_4x6(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_view(in[0], TT_SHAPE(4, 6));
}
static void reshape_view(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 4), -1, 1);
    gc_check(r, f_view_4x6, NULL, 1, &x, NULL);
}

static tt_tensor *f_reshape_6x2(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_reshape(in[0], TT_SHAPE(6, 2));
}
static void reshape_copy(gc_report *r) {
    // (3, 4) viewed transposed: its elements are not in row-major order, so reshape copies.
    tt_tensor *x = gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -1, 1);
    gc_check(r, f_reshape_6x2, NULL, 1, &x, NULL);
}

static tt_tensor *f_reshape_m1(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_reshape(in[0], TT_SHAPE(2, -1, 3));
}
static void reshape_infer_minus1(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -1, 1);
    gc_check(r, f_reshape_m1, NULL, 1, &x, NULL);
}

static tt_tensor *f_flatten(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_flatten(in[0], 0, -1);
}
static void reshape_flatten_strided(gc_report *r) {
    tt_tensor *x = gc_input_strided(TT_SHAPE(4, 3), 0, 2, -1, 1);  // (2, 3), rows 0 and 2
    gc_check(r, f_flatten, NULL, 1, &x, NULL);
}

static tt_tensor *f_flatten_mid(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_flatten(in[0], -3, -2);
}
static void reshape_flatten_dims(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(2, 3, 4), 1, 2, -1, 1);  // (2, 4, 3): copies
    gc_check(r, f_flatten_mid, NULL, 1, &x, NULL);
}

// ---- transpose / permute ----

static tt_tensor *f_transpose_01(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_transpose(in[0], 0, 1);
}
static void transpose_2d(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -1, 1);
    gc_check(r, f_transpose_01, NULL, 1, &x, NULL);
}
static void transpose_3d_outer(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 4), -1, 1);
    gc_check(r, f_transpose_01, NULL, 1, &x, NULL);
}

static tt_tensor *f_permute(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_permute(in[0], ctx);
}
static void permute_3d(gc_report *r) {
    static const int dims[] = {2, 0, 1};
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 4), -1, 1);
    gc_check(r, f_permute, (void *)dims, 1, &x, NULL);
}
static void permute_4d(gc_report *r) {
    static const int dims[] = {0, 2, 1, -1};  // (B, T, NH, HS) -> (B, NH, T, HS)
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 2, 2), -1, 1);
    gc_check(r, f_permute, (void *)dims, 1, &x, NULL);
}

// ---- slice / narrow ----

typedef struct slice_args {
    int dim;
    int64_t start, end, step;
} slice_args;

static tt_tensor *f_slice(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const slice_args *a = ctx;
    return tt_slice(in[0], a->dim, a->start, a->end, a->step);
}
static void slice_step1(gc_report *r) {
    slice_args a = {1, 1, 4, 1};
    tt_tensor *x = gc_input(TT_SHAPE(3, 5), -1, 1);
    gc_check(r, f_slice, &a, 1, &x, NULL);
}
static void slice_step2(gc_report *r) {
    slice_args a = {0, 0, 100, 2};  // end clamped to the size
    tt_tensor *x = gc_input(TT_SHAPE(5, 3), -1, 1);
    gc_check(r, f_slice, &a, 1, &x, NULL);
}
static void slice_step3_middle(gc_report *r) {
    slice_args a = {1, 1, 7, 3};  // elements 1 and 4 of 7: zeros before, between and after
    tt_tensor *x = gc_input(TT_SHAPE(2, 7, 3), -1, 1);
    gc_check(r, f_slice, &a, 1, &x, NULL);
    slice_args one = {-1, 2, 3, 4};  // one element, step 4
    gc_check(r, f_slice, &one, 1, &x, NULL);
    slice_args none = {1, 5, 2, 2};  // empty
    gc_check(r, f_slice, &none, 1, &x, NULL);
}
static void slice_negative(gc_report *r) {
    slice_args a = {-1, -4, -1, 1};  // last dim, elements 1 .. 3 of 5
    tt_tensor *x = gc_input_transposed(TT_SHAPE(5, 3), 0, 1, -1, 1);  // (3, 5)
    gc_check(r, f_slice, &a, 1, &x, NULL);
}

static tt_tensor *f_narrow(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_narrow(in[0], 1, 1, 2);
}
static void slice_narrow(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 4, 3), -1, 1);
    gc_check(r, f_narrow, NULL, 1, &x, NULL);
}

static tt_tensor *f_select(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_select(in[0], -2, -1);  // x[:, -1] of (2, 3, 4)
}
static void slice_select(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3, 4), -1, 1);
    gc_check(r, f_select, NULL, 1, &x, NULL);
}

// ---- expand / broadcast_to ----

static tt_tensor *f_expand_btc(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_expand(in[0], TT_SHAPE(-1, 4, -1));
}
static void expand_b1c_to_btc(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 1, 3), -1, 1);
    gc_check(r, f_expand_btc, NULL, 1, &x, NULL);
}

static tt_tensor *f_expand_lead(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_broadcast_to(in[0], TT_SHAPE(2, 3, 2, 4));
}
static void expand_new_leading(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 1), -1, 1);  // (2, 1) -> (2, 3, 2, 4)
    gc_check(r, f_expand_lead, NULL, 1, &x, NULL);
}

// ---- squeeze / unsqueeze ----

static tt_tensor *f_squeeze1(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_squeeze(in[0], 1);
}
static void squeeze_size1_dim(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(3, 1, 4), -1, 1);
    gc_check(r, f_squeeze1, NULL, 1, &x, NULL);
}

static tt_tensor *f_unsqueeze(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_unsqueeze(in[0], *(const int *)ctx);
}
static void unsqueeze_front(gc_report *r) {
    static const int dim = 0;
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -1, 1);
    gc_check(r, f_unsqueeze, (void *)&dim, 1, &x, NULL);
}
static void unsqueeze_back(gc_report *r) {
    static const int dim = -1;
    tt_tensor *x = gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -1, 1);
    gc_check(r, f_unsqueeze, (void *)&dim, 1, &x, NULL);
}

// ---- cat / stack ----

static tt_tensor *f_cat(tt_tensor *const *in, int n, void *ctx) {
    return tt_cat(n, in, *(const int *)ctx);
}
static void cat_dim0(gc_report *r) {
    static const int dim = 0;
    tt_tensor *x[2] = {gc_input(TT_SHAPE(2, 3), -1, 1), gc_input(TT_SHAPE(1, 3), -1, 1)};
    gc_check(r, f_cat, (void *)&dim, 2, x, NULL);
}
static void cat_middle_dim_3_inputs(gc_report *r) {
    static const int dim = 1;
    tt_tensor *x[3] = {gc_input(TT_SHAPE(2, 1, 3), -1, 1), gc_input(TT_SHAPE(2, 3, 3), -1, 1),
                       gc_input(TT_SHAPE(2, 2, 3), -1, 1)};
    gc_check(r, f_cat, (void *)&dim, 3, x, NULL);
}
static void cat_noncontiguous_inputs(gc_report *r) {
    static const int dim = -1;
    tt_tensor *x[2] = {gc_input_transposed(TT_SHAPE(3, 2), 0, 1, -1, 1),   // (2, 3)
                       gc_input_strided(TT_SHAPE(2, 8), 1, 3, -1, 1)};      // (2, 3)
    gc_check(r, f_cat, (void *)&dim, 2, x, NULL);
}

static tt_tensor *f_stack(tt_tensor *const *in, int n, void *ctx) {
    return tt_stack(n, in, *(const int *)ctx);
}
static void stack_dim0(gc_report *r) {
    static const int dim = 0;
    tt_tensor *x[3] = {gc_input(TT_SHAPE(2, 3), -1, 1), gc_input(TT_SHAPE(2, 3), -1, 1),
                       gc_input_transposed(TT_SHAPE(3, 2), 0, 1, -1, 1)};
    gc_check(r, f_stack, (void *)&dim, 3, x, NULL);
}
static void stack_dim_last(gc_report *r) {
    static const int dim = -1;  // a new last dim: (2, 3) x 2 -> (2, 3, 2)
    tt_tensor *x[2] = {gc_input(TT_SHAPE(2, 3), -1, 1), gc_input(TT_SHAPE(2, 3), -1, 1)};
    gc_check(r, f_stack, (void *)&dim, 2, x, NULL);
}

// ---- contiguous / clone / to_dtype ----

static tt_tensor *f_contiguous(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_contiguous(in[0]);
}
static void contiguous_transposed(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(2, 3, 4), 0, 2, -1, 1);
    gc_check(r, f_contiguous, NULL, 1, &x, NULL);
}

static tt_tensor *f_clone(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_clone(in[0]);
}
static void clone_contiguous(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3), -1, 1);
    gc_check(r, f_clone, NULL, 1, &x, NULL);
}
static void clone_strided(gc_report *r) {
    tt_tensor *x = gc_input_strided(TT_SHAPE(3, 7), 1, 3, -1, 1);  // (3, 3)
    gc_check(r, f_clone, NULL, 1, &x, NULL);
}

// f64 -> f32 -> f64 for the gradcheck (f32 -> f64 -> f32 in gc_check's f32 forward, which
// needs an f32 output): the result keeps the input's dtype.
static tt_tensor *f_dtype_round_trip(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    tt_dtype other = in[0]->dtype == TT_F64 ? TT_F32 : TT_F64;
    return tt_to_dtype(tt_to_dtype(in[0], other), in[0]->dtype);
}
static void to_dtype_f64_f32_f64(gc_report *r) {
    // Looser tolerances for this case only: the f32 rounding in the middle dominates the
    // central differences (a rounding error of ~6e-8 over 2 eps). The function is linear, so
    // a larger eps (1e-3) costs no truncation error and shrinks that rounding noise to ~1e-4.
    tt_gradcheck_opts opts = {.eps = 1e-3, .atol = 1e-3, .rtol = 1e-2};
    tt_tensor *x = gc_input(TT_SHAPE(2, 3), -1, 1);
    gc_check(r, f_dtype_round_trip, NULL, 1, &x, &opts);
}

// ---- the table ----

const gc_case gc_cases_shape[] = {
    {TT_OP_RESHAPE, "view", reshape_view},
    {TT_OP_RESHAPE, "reshape_copy", reshape_copy},
    {TT_OP_RESHAPE, "infer_minus1", reshape_infer_minus1},
    {TT_OP_RESHAPE, "flatten_strided", reshape_flatten_strided},
    {TT_OP_RESHAPE, "flatten_dims", reshape_flatten_dims},
    {TT_OP_TRANSPOSE, "2d", transpose_2d},
    {TT_OP_TRANSPOSE, "3d_outer", transpose_3d_outer},
    {TT_OP_PERMUTE, "3d", permute_3d},
    {TT_OP_PERMUTE, "4d", permute_4d},
    {TT_OP_SLICE, "step1", slice_step1},
    {TT_OP_SLICE, "step2", slice_step2},
    {TT_OP_SLICE, "step3_middle", slice_step3_middle},
    {TT_OP_SLICE, "negative", slice_negative},
    {TT_OP_SLICE, "narrow", slice_narrow},
    {TT_OP_SLICE, "select", slice_select},
    {TT_OP_EXPAND, "b1c_to_btc", expand_b1c_to_btc},
    {TT_OP_EXPAND, "new_leading", expand_new_leading},
    {TT_OP_SQUEEZE, "size1_dim", squeeze_size1_dim},
    {TT_OP_UNSQUEEZE, "front", unsqueeze_front},
    {TT_OP_UNSQUEEZE, "back", unsqueeze_back},
    {TT_OP_CAT, "dim0", cat_dim0},
    {TT_OP_CAT, "middle_dim_3_inputs", cat_middle_dim_3_inputs},
    {TT_OP_CAT, "noncontiguous_inputs", cat_noncontiguous_inputs},
    {TT_OP_STACK, "dim0", stack_dim0},
    {TT_OP_STACK, "dim_last", stack_dim_last},
    {TT_OP_CONTIGUOUS, "transposed", contiguous_transposed},
    {TT_OP_CLONE, "contiguous", clone_contiguous},
    {TT_OP_CLONE, "strided", clone_strided},
    {TT_OP_TO_DTYPE, "f64_f32_f64", to_dtype_f64_f32_f64},
    {0, NULL, NULL},
};

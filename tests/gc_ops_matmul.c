// Gradcheck cases of tt_matmul: 2-D, batched, broadcast batch dims, every 1-D combination,
// transposed and strided operands read in place, and dims of size 1. Then tt_affine: with and
// without bias, N-d and 1-D x, a transposed weight, an x whose leading dims do not fold.
// Value and abort tests are in tests/test_ops_matmul.c.
#include "gc_util.h"

// ---- helpers ----

static tt_tensor *f_matmul(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    (void)ctx;
    return tt_matmul(in[0], in[1]);
}

// Gradcheck of a @ b with both operands requiring grad, uniform in [-1, 1).
static void check2(gc_report *r, tt_tensor *a, tt_tensor *b) {
    tt_tensor *in[2] = {a, b};
    gc_check(r, f_matmul, NULL, 2, in, NULL);
}

// ---- cases ----

static void mm_2d(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(3, 4), -1, 1), gc_input(TT_SHAPE(4, 5), -1, 1));
}

static void mm_batched_3d(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(2, 3, 4), -1, 1), gc_input(TT_SHAPE(2, 4, 5), -1, 1));
}

// (2, 1, 3, 4) @ (3, 4, 5) -> (2, 3, 3, 5): each operand is broadcast along one batch dim.
static void mm_broadcast_batch(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(2, 1, 3, 4), -1, 1), gc_input(TT_SHAPE(3, 4, 5), -1, 1));
}

// (2, 3, 4) @ (4, 5): the batch folds into M; b's gradient sums over it.
static void mm_batched_x_2d(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(2, 3, 4), -1, 1), gc_input(TT_SHAPE(4, 5), -1, 1));
}

// (3, 4) @ (2, 4, 5): a's gradient sums over the batch.
static void mm_2d_x_batched(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(3, 4), -1, 1), gc_input(TT_SHAPE(2, 4, 5), -1, 1));
}

static void mm_vec_vec(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(4), -1, 1), gc_input(TT_SHAPE(4), -1, 1));
}

static void mm_vec_mat(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(4), -1, 1), gc_input(TT_SHAPE(4, 5), -1, 1));
}

static void mm_mat_vec(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(3, 4), -1, 1), gc_input(TT_SHAPE(4), -1, 1));
}

// (4,) @ (2, 4, 5) -> (2, 5) and (2, 3, 4) @ (4,) -> (2, 3).
static void mm_vec_batched(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(4), -1, 1), gc_input(TT_SHAPE(2, 4, 5), -1, 1));
    check2(r, gc_input(TT_SHAPE(2, 3, 4), -1, 1), gc_input(TT_SHAPE(4), -1, 1));
}

// a (3, 4) is the transpose of a (4, 3) tensor.
static void mm_transposed_a(gc_report *r) {
    check2(r, gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1), gc_input(TT_SHAPE(4, 5), -1, 1));
}

// b (4, 5) is the transpose of a (5, 4) tensor: x @ w^T.
static void mm_transposed_b(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(3, 4), -1, 1), gc_input_transposed(TT_SHAPE(5, 4), 0, 1, -1, 1));
}

// Both operands transposed, in 2-D and batched (the matrix dims of (2, 4, 3) and (2, 5, 4)).
static void mm_transposed_both(gc_report *r) {
    check2(r, gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1),
           gc_input_transposed(TT_SHAPE(5, 4), 0, 1, -1, 1));
    check2(r, gc_input_transposed(TT_SHAPE(2, 4, 3), 1, 2, -1, 1),
           gc_input_transposed(TT_SHAPE(2, 5, 4), 1, 2, -1, 1));
}

// Every other column of a (3, 8) and every other row of b (8, 5); then a batched operand
// taking every other batch.
static void mm_strided(gc_report *r) {
    check2(r, gc_input_strided(TT_SHAPE(3, 8), 1, 2, -1, 1),
           gc_input_strided(TT_SHAPE(8, 5), 0, 2, -1, 1));
    check2(r, gc_input_strided(TT_SHAPE(4, 3, 4), 0, 2, -1, 1),
           gc_input_strided(TT_SHAPE(4, 7), 1, 2, -1, 1));
}

// M = 1, N = 1, K = 1.
static void mm_size1(gc_report *r) {
    check2(r, gc_input(TT_SHAPE(1, 4), -1, 1), gc_input(TT_SHAPE(4, 5), -1, 1));
    check2(r, gc_input(TT_SHAPE(3, 4), -1, 1), gc_input(TT_SHAPE(4, 1), -1, 1));
    check2(r, gc_input(TT_SHAPE(3, 1), -1, 1), gc_input(TT_SHAPE(1, 5), -1, 1));
    check2(r, gc_input(TT_SHAPE(2, 1, 4), -1, 1), gc_input(TT_SHAPE(4, 1), -1, 1));
}

// Only one operand requires grad.
static void mm_one_grad(gc_report *r) {
    tt_tensor *a = gc_input(TT_SHAPE(2, 3, 4), -1, 1);
    tt_tensor *b = tt_set_requires_grad(gc_input(TT_SHAPE(4, 5), -1, 1), false);
    check2(r, a, b);
    tt_set_requires_grad(a, false);
    tt_set_requires_grad(b, true);
    check2(r, a, b);
}

// ---- affine: x @ w^T + b ----

static tt_tensor *f_affine(tt_tensor *const *in, int n, void *ctx) {
    (void)ctx;
    return tt_affine(in[0], in[1], n > 2 ? in[2] : NULL);
}

// x (..., in) through w (out, in) and, when bias, b (out).
static void check_affine(gc_report *r, tt_tensor *x, tt_tensor *w, bool bias) {
    tt_tensor *in[3] = {x, w, bias ? gc_input(TT_SHAPE(w->shape[0]), -1, 1) : NULL};
    gc_check(r, f_affine, NULL, bias ? 3 : 2, in, NULL);
}

// 6 x 5 outputs: the packed GEMM, the bias added in its epilogue.
static void affine_2d(gc_report *r) {
    check_affine(r, gc_input(TT_SHAPE(6, 4), -1, 1), gc_input(TT_SHAPE(5, 4), -1, 1), true);
}

static void affine_no_bias(gc_report *r) {
    check_affine(r, gc_input(TT_SHAPE(5, 4), -1, 1), gc_input(TT_SHAPE(3, 4), -1, 1), false);
}

// (2, 3, 4): the leading dims fold into the rows of one product; b's gradient sums over both.
static void affine_3d(gc_report *r) {
    check_affine(r, gc_input(TT_SHAPE(2, 3, 4), -1, 1), gc_input(TT_SHAPE(3, 4), -1, 1), true);
}

// A 1-D x (4,) -> (3,).
static void affine_vec(gc_report *r) {
    check_affine(r, gc_input(TT_SHAPE(4), -1, 1), gc_input(TT_SHAPE(3, 4), -1, 1), true);
}

// w (3, 4) is the transpose of a (4, 3) tensor; x (4, 2, 4) transposes its leading dims, so
// they do not fold into rows (copied), and x (2, 3, 4) with every other column of (2, 3, 8).
static void affine_views(gc_report *r) {
    check_affine(r, gc_input(TT_SHAPE(5, 4), -1, 1),
                 gc_input_transposed(TT_SHAPE(4, 3), 0, 1, -1, 1), true);
    check_affine(r, gc_input_transposed(TT_SHAPE(2, 4, 4), 0, 1, -1, 1),
                 gc_input(TT_SHAPE(3, 4), -1, 1), true);
    check_affine(r, gc_input_strided(TT_SHAPE(2, 3, 8), 2, 2, -1, 1),
                 gc_input(TT_SHAPE(3, 4), -1, 1), true);
}

// Only some inputs require grad.
static void affine_one_grad(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 4), -1, 1), *w = gc_input(TT_SHAPE(3, 4), -1, 1);
    tt_tensor *b = gc_input(TT_SHAPE(3), -1, 1);
    tt_set_requires_grad(x, false);
    tt_set_requires_grad(w, false);
    gc_check(r, f_affine, NULL, 3, (tt_tensor *[]){x, w, b}, NULL);
    tt_set_requires_grad(x, true);
    tt_set_requires_grad(b, false);
    gc_check(r, f_affine, NULL, 3, (tt_tensor *[]){x, w, b}, NULL);
}

const gc_case gc_cases_matmul[] = {
    {TT_OP_MATMUL, "2d", mm_2d},
    {TT_OP_MATMUL, "batched_3d", mm_batched_3d},
    {TT_OP_MATMUL, "broadcast_batch", mm_broadcast_batch},
    {TT_OP_MATMUL, "batched_x_2d", mm_batched_x_2d},
    {TT_OP_MATMUL, "2d_x_batched", mm_2d_x_batched},
    {TT_OP_MATMUL, "vec_vec", mm_vec_vec},
    {TT_OP_MATMUL, "vec_mat", mm_vec_mat},
    {TT_OP_MATMUL, "mat_vec", mm_mat_vec},
    {TT_OP_MATMUL, "vec_batched", mm_vec_batched},
    {TT_OP_MATMUL, "transposed_a", mm_transposed_a},
    {TT_OP_MATMUL, "transposed_b", mm_transposed_b},
    {TT_OP_MATMUL, "transposed_both", mm_transposed_both},
    {TT_OP_MATMUL, "strided", mm_strided},
    {TT_OP_MATMUL, "size1", mm_size1},
    {TT_OP_MATMUL, "one_grad", mm_one_grad},
    {TT_OP_AFFINE, "2d", affine_2d},
    {TT_OP_AFFINE, "no_bias", affine_no_bias},
    {TT_OP_AFFINE, "3d", affine_3d},
    {TT_OP_AFFINE, "vec", affine_vec},
    {TT_OP_AFFINE, "views", affine_views},
    {TT_OP_AFFINE, "one_grad", affine_one_grad},
    {0, NULL, NULL},
};

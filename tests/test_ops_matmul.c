// Check suite of tt_matmul and the GEMM kernels: hand-computed products in f32 and f64, the
// result shape of every 1-D / N-d combination (values against a naive reference), transposed
// and strided views read in place, large products across the kernel's blocks, the backward in
// f32, and the aborts on misuse. Gradients against finite differences: tests/gc_ops_matmul.c.
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tensor/kernels/cpu.h"
#include "tensor/kernels/matmul.h"

// ---- helpers ----

static tt_rng rng;

static tt_tensor *rand_t(tt_dtype dt, int ndim, const int64_t *shape) {
    return tt_uniform(&rng, dt, ndim, shape, -1, 1);
}

// The transpose of dims d0, d1 of t, as a view (no copy).
static tt_tensor *tview(tt_tensor *t, int d0, int d1) {
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) shape[i] = t->shape[i], stride[i] = t->stride[i];
    shape[d0] = t->shape[d1], stride[d0] = t->stride[d1];
    shape[d1] = t->shape[d0], stride[d1] = t->stride[d0];
    return tt_as_strided(t, t->ndim, shape, stride, t->offset);
}

static tt_tensor *contiguous_copy(const tt_tensor *t) {
    tt_tensor *c = tt_empty(t->dtype, t->ndim, t->shape);
    tt_copy_(c, t);
    return c;
}

// The reference of a @ b, by the definition, in double, reading element by element through
// tt_get. Fills the output's shape and returns its ndim; `out` (row-major) is allocated.
static int ref_matmul(const tt_tensor *a, const tt_tensor *b, int64_t *shape, double **out) {
    bool av = a->ndim == 1, bv = b->ndim == 1;
    int na = av ? 0 : a->ndim - 2, nb = bv ? 0 : b->ndim - 2;
    int nbat = na > nb ? na : nb;
    int64_t batch[TT_MAX_DIMS], nbatch = 1;
    for (int d = 0; d < nbat; d++) {
        int da = na - nbat + d, db = nb - nbat + d;
        int64_t sa = da >= 0 ? a->shape[da] : 1, sb = db >= 0 ? b->shape[db] : 1;
        batch[d] = sa == 1 ? sb : sa;
        nbatch *= batch[d];
    }
    int64_t M = av ? 1 : a->shape[a->ndim - 2], K = a->shape[a->ndim - 1];
    int64_t N = bv ? 1 : b->shape[b->ndim - 1];
    int ndim = nbat;
    for (int d = 0; d < nbat; d++) shape[d] = batch[d];
    if (!av) shape[ndim++] = M;
    if (!bv) shape[ndim++] = N;
    double *o = *out = malloc((size_t)(nbatch * M * N + 1) * sizeof *o);
    for (int64_t q = 0; q < nbatch; q++) {
        int64_t bidx[TT_MAX_DIMS], rem = q;  // batch index of q, row-major
        for (int d = nbat - 1; d >= 0; d--) {
            bidx[d] = rem % batch[d];
            rem /= batch[d];
        }
        int64_t ai[TT_MAX_DIMS], bi[TT_MAX_DIMS];  // broadcast: a dim of 1 reads index 0
        for (int d = 0; d < na; d++) ai[d] = a->shape[d] == 1 ? 0 : bidx[nbat - na + d];
        for (int d = 0; d < nb; d++) bi[d] = b->shape[d] == 1 ? 0 : bidx[nbat - nb + d];
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) {
                    if (av) ai[0] = k; else ai[na] = i, ai[na + 1] = k;
                    if (bv) bi[0] = k; else bi[nb] = k, bi[nb + 1] = j;
                    s += tt_get(a, ai) * tt_get(b, bi);
                }
                *o++ = s;
            }
        }
    }
    return ndim;
}

// tt_matmul(a, b) has the reference's shape and dtype, and its values within
// atol + rtol |ref|.
static void check_against_ref(tt_tensor *a, tt_tensor *b, double atol, double rtol) {
    int64_t shape[TT_MAX_DIMS];
    double *ref;
    int ndim = ref_matmul(a, b, shape, &ref);
    tt_tensor *y = tt_matmul(a, b);
    char sa[128], sb[128], got[128], want[128];
    tt_tensor like = {.ndim = ndim};
    for (int d = 0; d < ndim; d++) like.shape[d] = shape[d];
    ck_assert_msg(tt_same_shape(y, &like), "%s @ %s gave %s, expected %s",
                  tt_shape_str(a, sa, sizeof sa), tt_shape_str(b, sb, sizeof sb),
                  tt_shape_str(y, got, sizeof got), tt_shape_str(&like, want, sizeof want));
    ck_assert_int_eq(y->dtype, a->dtype);
    tt_assert_values(y, ref, tt_numel(y), atol, rtol, __FILE__, __LINE__);
    free(ref);
}

static void setup_rng(void) { tt_rng_seed(&rng, 1234); }

// ---- hand-computed products ----

static const tt_dtype dtypes[2] = {TT_F32, TT_F64};

// [[1, 2, 3], [4, 5, 6]] @ [[7, 8], [9, 10], [11, 12]] = [[58, 64], [139, 154]]
START_TEST(test_2x3_at_3x2) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *a = tt_test_tensor(dt, TT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    tt_tensor *b = tt_test_tensor(dt, TT_SHAPE(3, 2), 7, 8, 9, 10, 11, 12);
    tt_tensor *y = tt_matmul(a, b);
    ck_assert_int_eq(y->dtype, dt);
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[0], 2);
    ck_assert_int_eq(y->shape[1], 2);
    ck_assert_values(y, 0, 0, 58, 64, 139, 154);
    // and the other way round: (3, 2) @ (2, 3)
    ck_assert_values(tt_matmul(b, a), 0, 0, 39, 54, 69, 49, 68, 87, 59, 82, 105);
    tt_scope_end();
}
END_TEST

// Dot product, vector @ matrix, matrix @ vector.
START_TEST(test_vectors) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *u = tt_test_tensor(dt, TT_SHAPE(3), 1, 2, 3);
    tt_tensor *v = tt_test_tensor(dt, TT_SHAPE(3), 4, -5, 6);
    tt_tensor *dot = tt_matmul(u, v);  // 4 - 10 + 18
    ck_assert_int_eq(dot->ndim, 0);
    ck_assert_double_eq(tt_item(dot), 12);
    tt_tensor *m = tt_test_tensor(dt, TT_SHAPE(3, 2), 1, 2, 3, 4, 5, 6);
    tt_tensor *um = tt_matmul(u, m);  // (3,) @ (3, 2) -> (2,)
    ck_assert_int_eq(um->ndim, 1);
    ck_assert_values(um, 0, 0, 22, 28);
    tt_tensor *w = tt_test_tensor(dt, TT_SHAPE(2), 1, -1);
    tt_tensor *mw = tt_matmul(m, w);  // (3, 2) @ (2,) -> (3,)
    ck_assert_int_eq(mw->ndim, 1);
    ck_assert_values(mw, 0, 0, -1, -1, -1);
    tt_scope_end();
}
END_TEST

// A stack of two matrices times one matrix, and batch-by-batch.
START_TEST(test_batched_hand) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    tt_tensor *a = tt_test_tensor(dt, TT_SHAPE(2, 2, 2), 1, 2, 3, 4, 0, 1, 1, 0);
    tt_tensor *b = tt_test_tensor(dt, TT_SHAPE(2, 2), 5, 6, 7, 8);
    ck_assert_values(tt_matmul(a, b), 0, 0, 19, 22, 43, 50, 7, 8, 5, 6);
    tt_tensor *b2 = tt_test_tensor(dt, TT_SHAPE(2, 2, 2), 1, 0, 0, 1, 2, 0, 0, 3);
    ck_assert_values(tt_matmul(a, b2), 0, 0, 1, 2, 3, 4, 0, 3, 2, 0);
    tt_scope_end();
}
END_TEST

// ---- shapes ----

typedef struct shape_case {
    int na, nb, nout;
    int64_t a[TT_MAX_DIMS], b[TT_MAX_DIMS], out[TT_MAX_DIMS];
} shape_case;

static const shape_case shape_cases[] = {
    {1, 1, 0, {3}, {3}, {0}},
    {1, 2, 1, {3}, {3, 4}, {4}},
    {2, 1, 1, {2, 3}, {3}, {2}},
    {2, 2, 2, {2, 3}, {3, 4}, {2, 4}},
    {1, 3, 2, {3}, {5, 3, 4}, {5, 4}},
    {3, 1, 2, {5, 2, 3}, {3}, {5, 2}},
    {1, 4, 3, {3}, {2, 5, 3, 4}, {2, 5, 4}},
    {4, 1, 3, {2, 5, 2, 3}, {3}, {2, 5, 2}},
    {3, 2, 3, {5, 2, 3}, {3, 4}, {5, 2, 4}},
    {2, 3, 3, {2, 3}, {5, 3, 4}, {5, 2, 4}},
    {3, 3, 3, {5, 2, 3}, {5, 3, 4}, {5, 2, 4}},
    {3, 3, 3, {1, 2, 3}, {6, 3, 4}, {6, 2, 4}},
    {3, 3, 3, {6, 2, 3}, {1, 3, 4}, {6, 2, 4}},
    {4, 3, 4, {7, 1, 2, 3}, {5, 3, 4}, {7, 5, 2, 4}},
    {4, 4, 4, {2, 1, 2, 3}, {1, 3, 3, 4}, {2, 3, 2, 4}},
    {5, 4, 5, {2, 1, 3, 2, 3}, {4, 1, 3, 4}, {2, 4, 3, 2, 4}},
    {2, 2, 2, {1, 3}, {3, 1}, {1, 1}},
    {3, 2, 3, {4, 1, 3}, {3, 4}, {4, 1, 4}},
    {8, 2, 8, {2, 1, 2, 1, 2, 1, 2, 3}, {3, 2}, {2, 1, 2, 1, 2, 1, 2, 2}},
    {8, 8, 8, {1, 2, 1, 2, 1, 2, 2, 3}, {2, 1, 2, 1, 2, 1, 3, 2}, {2, 2, 2, 2, 2, 2, 2, 2}},
};
#define N_SHAPE_CASES (int)(sizeof shape_cases / sizeof shape_cases[0])

// Every 1-D / 2-D / N-d combination: the result shape, and values against the reference
// (f64 exact up to rounding, f32 within its precision).
START_TEST(test_shapes) {
    const shape_case *c = &shape_cases[_i];
    tt_rng_seed(&rng, 10 + (uint64_t)_i);
    for (int t = 0; t < 2; t++) {
        tt_scope_begin();
        tt_tensor *a = rand_t(dtypes[t], c->na, c->a), *b = rand_t(dtypes[t], c->nb, c->b);
        tt_tensor *y = tt_matmul(a, b);
        char got[128];
        ck_assert_msg(y->ndim == c->nout, "case %d: result %s has %d dims, expected %d", _i,
                      tt_shape_str(y, got, sizeof got), y->ndim, c->nout);
        for (int d = 0; d < c->nout; d++)
            ck_assert_msg(y->shape[d] == c->out[d], "case %d: result %s, dim %d should be %lld",
                          _i, tt_shape_str(y, got, sizeof got), d, (long long)c->out[d]);
        check_against_ref(a, b, t == 0 ? 1e-6 : 1e-12, t == 0 ? 1e-5 : 1e-12);
        tt_scope_end();
    }
}
END_TEST

// Empty dims: an empty batch or M gives an empty result; K = 0 gives zeros.
START_TEST(test_empty) {
    tt_scope_begin();
    tt_tensor *y = tt_matmul(tt_zeros(TT_F32, TT_SHAPE(0, 3)), tt_ones(TT_F32, TT_SHAPE(3, 4)));
    ck_assert_int_eq(y->ndim, 2);
    ck_assert_int_eq(y->shape[0], 0);
    ck_assert_int_eq(y->shape[1], 4);
    y = tt_matmul(tt_ones(TT_F64, TT_SHAPE(2, 0)), tt_ones(TT_F64, TT_SHAPE(0, 3)));
    ck_assert_int_eq(tt_numel(y), 6);
    ck_assert_values(y, 0, 0, 0, 0, 0, 0, 0, 0);
    y = tt_matmul(tt_ones(TT_F32, TT_SHAPE(0)), tt_ones(TT_F32, TT_SHAPE(0)));
    ck_assert_int_eq(y->ndim, 0);
    ck_assert_double_eq(tt_item(y), 0);
    y = tt_matmul(tt_ones(TT_F32, TT_SHAPE(3, 0, 2, 4)), tt_ones(TT_F32, TT_SHAPE(4, 5)));
    ck_assert_int_eq(tt_numel(y), 0);
    ck_assert_int_eq(y->shape[3], 5);
    tt_scope_end();
}
END_TEST

// ---- views read in place ----

// x @ w^T with w (N, K), a^T @ b, a^T @ b^T, in 2-D and batched: the same values as with
// contiguous copies of the operands (and as the reference).
START_TEST(test_transposed_views) {
    tt_dtype dt = dtypes[_i];
    double tol = dt == TT_F32 ? 1e-5 : 1e-12;
    tt_scope_begin();
    tt_tensor *x = rand_t(dt, TT_SHAPE(7, 9)), *w = rand_t(dt, TT_SHAPE(5, 9));
    tt_tensor *wt = tview(w, 0, 1);  // (9, 5), strides (1, 9)
    ck_assert(!tt_is_contiguous(wt));
    ck_assert_ptr_eq(wt->storage, w->storage);
    tt_tensor *y = tt_matmul(x, wt), *yc = tt_matmul(x, contiguous_copy(wt));
    for (int64_t i = 0; i < tt_numel(y); i++) ck_assert_close(tt_at(y, i), tt_at(yc, i), tol, tol);
    check_against_ref(x, wt, tol, tol);

    tt_tensor *at = tview(rand_t(dt, TT_SHAPE(9, 7)), 0, 1);  // (7, 9) read as a^T
    check_against_ref(at, contiguous_copy(wt), tol, tol);
    check_against_ref(at, wt, tol, tol);
    y = tt_matmul(at, wt);
    yc = tt_matmul(contiguous_copy(at), contiguous_copy(wt));
    for (int64_t i = 0; i < tt_numel(y); i++) ck_assert_close(tt_at(y, i), tt_at(yc, i), tol, tol);

    // batched: (3, 7, 9) from a (3, 9, 7) tensor, (3, 9, 5) from a (3, 5, 9) tensor, and a
    // permuted batch dim: (3, 7, 9) from a (7, 3, 9) tensor
    tt_tensor *ab = tview(rand_t(dt, TT_SHAPE(3, 9, 7)), 1, 2);
    tt_tensor *bb = tview(rand_t(dt, TT_SHAPE(3, 5, 9)), 1, 2);
    tt_tensor *ap = tview(rand_t(dt, TT_SHAPE(7, 3, 9)), 0, 1);
    check_against_ref(ab, bb, tol, tol);
    check_against_ref(ap, bb, tol, tol);
    check_against_ref(ap, wt, tol, tol);
    check_against_ref(ab, contiguous_copy(wt), tol, tol);
    tt_scope_end();
}
END_TEST

// Strided (sliced) operands and a broadcast (expanded, stride 0) operand.
START_TEST(test_strided_views) {
    tt_dtype dt = dtypes[_i];
    double tol = dt == TT_F32 ? 1e-5 : 1e-12;
    tt_scope_begin();
    tt_tensor *a = rand_t(dt, TT_SHAPE(6, 10)), *b = rand_t(dt, TT_SHAPE(12, 4));
    // every other column of a (6, 5), every third row of b from row 1 (4, 4)... (5, 4)
    tt_tensor *as = tt_as_strided(a, TT_SHAPE(6, 5), (int64_t[]){10, 2}, 1);
    tt_tensor *bs = tt_as_strided(b, TT_SHAPE(5, 4), (int64_t[]){8, 1}, 2);
    check_against_ref(as, bs, tol, tol);
    // a row repeated: stride 0 along the rows; a batch broadcast by stride 0
    tt_tensor *rep = tt_as_strided(a, TT_SHAPE(4, 10), (int64_t[]){0, 1}, 10);
    check_against_ref(rep, rand_t(dt, TT_SHAPE(10, 3)), tol, tol);
    tt_tensor *bat = tt_as_strided(b, TT_SHAPE(3, 12, 4), (int64_t[]){0, 4, 1}, 0);
    check_against_ref(rand_t(dt, TT_SHAPE(3, 2, 12)), bat, tol, tol);
    tt_scope_end();
}
END_TEST

// ---- larger products ----

// a (M, K) @ b (K, N) against a naive triple loop in double over their row-major values,
// within tol * (1 + sum_k |a_ik b_kj|).
static void check_2d_naive(tt_tensor *a, tt_tensor *b, double tol) {
    int64_t M = a->shape[0], K = a->shape[1], N = b->shape[1];
    double *av = malloc((size_t)(M * K) * sizeof *av), *bv = malloc((size_t)(K * N) * sizeof *bv);
    double *yv = malloc((size_t)(M * N) * sizeof *yv);
    tt_to_f64_array(a, av);
    tt_to_f64_array(b, bv);
    tt_to_f64_array(tt_matmul(a, b), yv);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, sabs = 0;  // the error scales with sum |a_ik b_kj|
            for (int64_t k = 0; k < K; k++) {
                s += av[i * K + k] * bv[k * N + j];
                sabs += fabs(av[i * K + k] * bv[k * N + j]);
            }
            ck_assert_msg(fabs(yv[i * N + j] - s) <= tol * (1 + sabs),
                          "(%lld, %lld): %.10g, expected %.10g", (long long)i, (long long)j,
                          yv[i * N + j], s);
        }
    free(av);
    free(bv);
    free(yv);
}

// (67, 33) @ (33, 45) against a naive triple loop in double.
START_TEST(test_random_67x33x45) {
    tt_dtype dt = dtypes[_i];
    tt_scope_begin();
    check_2d_naive(rand_t(dt, TT_SHAPE(67, 33)), rand_t(dt, TT_SHAPE(33, 45)),
                   dt == TT_F32 ? 2e-6 : 1e-14);
    tt_scope_end();
}
END_TEST

// Sizes that cross every block of the kernel (M > 256, N > 256, K > 128), with contiguous,
// transposed and both-transposed operands, so each of its paths runs (in place, packed,
// swapped); and matrix-vector products in both layouts.
START_TEST(test_random_blocked) {
    tt_dtype dt = dtypes[_i];
    double tol = dt == TT_F32 ? 2e-6 : 1e-14;  // f32: about 30 ulps of the sum of |terms|
    tt_scope_begin();
    tt_tensor *a = rand_t(dt, TT_SHAPE(261, 300)), *b = rand_t(dt, TT_SHAPE(300, 270));
    tt_tensor *at = tview(rand_t(dt, TT_SHAPE(300, 261)), 0, 1);
    tt_tensor *bt = tview(rand_t(dt, TT_SHAPE(270, 300)), 0, 1);
    check_2d_naive(a, b, tol);
    check_2d_naive(a, bt, tol);
    check_2d_naive(at, b, tol);
    check_2d_naive(at, bt, tol);
    tt_tensor *v = rand_t(dt, TT_SHAPE(300, 1)), *vs = tt_as_strided(b, TT_SHAPE(300, 1),
                                                                      (int64_t[]){270, 1}, 5);
    check_2d_naive(a, v, tol);
    check_2d_naive(at, v, tol);
    check_2d_naive(at, vs, tol);
    check_2d_naive(tview(v, 0, 1), b, tol);
    check_2d_naive(tview(v, 0, 1), bt, tol);
    tt_scope_end();
}
END_TEST

// Same inputs, same bits: the reduction order is fixed.
START_TEST(test_deterministic) {
    tt_scope_begin();
    tt_tensor *a = rand_t(TT_F32, TT_SHAPE(4, 70, 300)), *b = rand_t(TT_F32, TT_SHAPE(300, 90));
    tt_tensor *y1 = tt_matmul(a, b), *y2 = tt_matmul(a, b);
    for (int64_t i = 0; i < tt_numel(y1); i++) ck_assert(tt_at(y1, i) == tt_at(y2, i));
    tt_scope_end();
}
END_TEST

// A long f32 dot product of positive terms: summed in runs of float and across runs in
// double, it stays within a few float ulps of the exact sum (plain float summation of
// 200000 terms drifts by ~1e-4 relative).
START_TEST(test_f32_long_dot) {
    tt_tensor *w = tt_set_requires_grad(tt_zeros(TT_F32, TT_SHAPE(2, 3)), true);
    tt_scope_begin();
    int64_t n = 200000;
    tt_tensor *u = tt_uniform(&rng, TT_F32, TT_SHAPE(200000), 0, 1);
    tt_tensor *v = tt_uniform(&rng, TT_F32, TT_SHAPE(200000), 0, 1);
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += tt_at(u, i) * tt_at(v, i);
    ck_assert_close(tt_item(tt_matmul(u, v)), s, 0, 2e-6);
    // the same reduction as the weight gradient of a (B, T, C) @ (C, D) product: one GEMM
    // whose K is B*T
    tt_tensor *x = tt_uniform(&rng, TT_F32, TT_SHAPE(50, 2000, 2), 0, 1);
    tt_backward_with(tt_matmul(x, w), tt_ones(TT_F32, TT_SHAPE(50, 2000, 3)));
    for (int c = 0; c < 2; c++) {
        double sc = 0;
        for (int64_t i = 0; i < 100000; i++) sc += tt_at(x, i * 2 + c);
        for (int d = 0; d < 3; d++) ck_assert_close(tt_at(tt_grad(w), c * 3 + d), sc, 0, 2e-6);
    }
    tt_scope_end();
    tt_release(w);
}
END_TEST

// ---- backward ----

// f32 gradients of a broadcast batched product against the reference: with out = a @ b and
// an upstream gradient g, da = g @ b^T summed over the dims a was broadcast along, and
// db = a^T @ g summed likewise.
START_TEST(test_backward_values) {
    tt_dtype dt = dtypes[_i];
    double tol = dt == TT_F32 ? 1e-5 : 1e-12;
    tt_tensor *a = tt_set_requires_grad(rand_t(dt, TT_SHAPE(2, 1, 3, 4)), true);
    tt_tensor *b = tt_set_requires_grad(rand_t(dt, TT_SHAPE(3, 4, 5)), true);
    tt_scope_begin();
    tt_tensor *g = rand_t(dt, TT_SHAPE(2, 3, 3, 5));
    tt_tensor *y = tt_matmul(a, b);
    ck_assert(y->requires_grad);
    tt_backward_with(y, g);
    tt_tensor *da = tt_grad(a), *db = tt_grad(b);
    ck_assert_ptr_nonnull(da);
    ck_assert_ptr_nonnull(db);
    ck_assert(tt_same_shape(da, a) && tt_same_shape(db, b));
    for (int64_t p = 0; p < 2; p++)
        for (int64_t i = 0; i < 3; i++)
            for (int64_t k = 0; k < 4; k++) {
                double s = 0;
                for (int64_t h = 0; h < 3; h++)
                    for (int64_t j = 0; j < 5; j++)
                        s += tt_get(g, (int64_t[]){p, h, i, j}) * tt_get(b, (int64_t[]){h, k, j});
                ck_assert_close(tt_get(da, (int64_t[]){p, 0, i, k}), s, tol, tol);
            }
    for (int64_t h = 0; h < 3; h++)
        for (int64_t k = 0; k < 4; k++)
            for (int64_t j = 0; j < 5; j++) {
                double s = 0;
                for (int64_t p = 0; p < 2; p++)
                    for (int64_t i = 0; i < 3; i++)
                        s += tt_get(a, (int64_t[]){p, 0, i, k}) *
                             tt_get(g, (int64_t[]){p, h, i, j});
                ck_assert_close(tt_get(db, (int64_t[]){h, k, j}), s, tol, tol);
            }
    // a second backward accumulates into .grad
    double before = tt_at(db, 7);
    tt_backward_with(tt_matmul(a, b), g);
    ck_assert_close(tt_at(tt_grad(b), 7), 2 * before, tol, tol);
    tt_scope_end();
    tt_release(a);
    tt_release(b);
}
END_TEST

// The 1-D cases: d(u . v)/du = v; (3,) @ (3, 2) and (3, 2) @ (2,) by hand.
START_TEST(test_backward_vectors) {
    tt_tensor *u = tt_set_requires_grad(tt_test_tensor(TT_F32, TT_SHAPE(3), 1, 2, 3), true);
    tt_tensor *v = tt_set_requires_grad(tt_test_tensor(TT_F32, TT_SHAPE(3), 4, 5, 6), true);
    tt_tensor *m = tt_set_requires_grad(
        tt_test_tensor(TT_F32, TT_SHAPE(3, 2), 1, 2, 3, 4, 5, 6), true);
    tt_scope_begin();
    tt_backward(tt_matmul(u, v));
    ck_assert_values(tt_grad(u), 0, 0, 4, 5, 6);
    ck_assert_values(tt_grad(v), 0, 0, 1, 2, 3);
    tt_zero_grad(u);
    // y = u @ m (2,), upstream [1, -1]: du = m @ [1, -1], dm = outer(u, [1, -1])
    tt_backward_with(tt_matmul(u, m), tt_test_tensor(TT_F32, TT_SHAPE(2), 1, -1));
    ck_assert_values(tt_grad(u), 0, 0, -1, -1, -1);
    ck_assert_values(tt_grad(m), 0, 0, 1, -1, 2, -2, 3, -3);
    tt_zero_grad(m);
    // z = m @ w (3,), w = [1, 2], upstream [1, 0, 2]: dm = outer([1, 0, 2], w), dw = m^T g
    tt_tensor *w = tt_test_tensor(TT_F32, TT_SHAPE(2), 1, 2);
    tt_backward_with(tt_matmul(m, w), tt_test_tensor(TT_F32, TT_SHAPE(3), 1, 0, 2));
    ck_assert_values(tt_grad(m), 0, 0, 1, 2, 0, 0, 2, 4);
    tt_scope_end();
    tt_release(u);
    tt_release(v);
    tt_release(m);
}
END_TEST

// No node is recorded with grad mode off or when no input requires grad.
START_TEST(test_no_record) {
    tt_tensor *w = tt_set_requires_grad(tt_ones(TT_F32, TT_SHAPE(3, 2)), true);
    tt_scope_begin();
    tt_tensor *x = tt_ones(TT_F32, TT_SHAPE(4, 3));
    tt_tensor *y = tt_matmul(x, tt_ones(TT_F32, TT_SHAPE(3, 2)));
    ck_assert(!y->requires_grad && !y->node);
    bool prev = tt_set_grad_enabled(false);
    y = tt_matmul(x, w);
    ck_assert(!y->requires_grad && !y->node);
    tt_set_grad_enabled(prev);
    y = tt_matmul(x, w);
    ck_assert(y->requires_grad && y->node);
    tt_scope_end();
    tt_release(w);
}
END_TEST

// ---- the kernels directly ----

// C += A B, and a batch folded into K (C broadcast over the batch: a sum of products).
START_TEST(test_kernel_accumulate) {
    float A[6] = {1, 2, 3, 4, 5, 6};    // (2, 3)
    float B[6] = {7, 8, 9, 10, 11, 12};  // (3, 2)
    float C[4] = {1, 1, 1, 1};
    tt_k_gemm_f32(2, 2, 3, A, 3, 1, B, 2, 1, C, 2, 1, true);
    ck_assert(C[0] == 59 && C[1] == 65 && C[2] == 140 && C[3] == 155);
    // A^T (3, 2) @ A (2, 3), both read from A in place, into a column-major C
    double Ad[6] = {1, 2, 3, 4, 5, 6}, Cd[9];
    tt_k_gemm_f64(3, 3, 2, Ad, 1, 3, Ad, 3, 1, Cd, 1, 3, false);
    double want[9] = {17, 22, 27, 22, 29, 36, 27, 36, 45};  // symmetric
    for (int i = 0; i < 9; i++) ck_assert(Cd[i] == want[i]);
    // sum over a batch of 2 of A[b] (1, 3) @ B[b] (3, 1) into one (1, 1) C
    double acc = 0.5;
    tt_k_matrix ma = {.data = Ad, .rs = 3, .cs = 1, .bs = {3}};
    tt_k_matrix mb = {.data = Ad, .rs = 1, .cs = 1, .bs = {3}};
    tt_k_matrix mc = {.data = &acc, .rs = 1, .cs = 1, .bs = {0}};
    tt_k_gemm_batched(TT_F64, 1, (int64_t[]){2}, 1, 1, 3, &ma, &mb, &mc, true);
    ck_assert(acc == 0.5 + 14 + 77);
}
END_TEST

START_TEST(test_kernel_broadcast_c_needs_accumulate) {
    tt_expect_abort("C is broadcast along batch dim 0 (size 4)");
    double x[4] = {0}, c = 0;
    tt_k_matrix m = {.data = x, .rs = 1, .cs = 1, .bs = {1}};
    tt_k_matrix mc = {.data = &c, .rs = 1, .cs = 1, .bs = {0}};
    tt_k_gemm_batched(TT_F64, 1, (int64_t[]){4}, 1, 1, 1, &m, &m, &mc, false);
}
END_TEST

// ---- affine ----

typedef struct affine_case {
    int64_t M, K, N;
} affine_case;

// Packed with the bias in the epilogue (one and several k blocks, rows or columns split between
// threads), past the f32 split-K length, a matrix-vector product, few outputs.
static const affine_case affine_cases[] = {
    {768, 128, 384}, {37, 300, 45}, {5, 64, 1000}, {3, 5000, 40}, {1, 64, 50}, {3, 4, 5},
};
#define N_AFFINE_CASES (int)(sizeof affine_cases / sizeof affine_cases[0])

static bool same_bits(const tt_tensor *a, const tt_tensor *b) {
    return tt_same_shape(a, b) && a->dtype == b->dtype &&
           memcmp(tt_data((tt_tensor *)a), tt_data((tt_tensor *)b),
                  (size_t)tt_numel(a) * tt_dtype_size(a->dtype)) == 0;
}

// On every SIMD path and dtype: tt_affine(x, w, b) has the bits of C = b on every row, then
// C += x w^T (tt_k_gemm accumulating), and agrees with a double reference; its gradients have
// the bits of the composition tt_add(tt_matmul(x, w^T), b).
START_TEST(test_affine_values) {
    const affine_case *c = &affine_cases[_i];
    for (int p = TT_CPU_GENERIC; p <= (int)tt_cpu_max_level(); p++) {
        tt_cpu_level prev = tt_cpu_set_level((tt_cpu_level)p);
        for (int t = 0; t < 2; t++) {
            tt_dtype dt = dtypes[t];
            tt_tensor *x = tt_set_requires_grad(rand_t(dt, TT_SHAPE(c->M, c->K)), true);
            tt_tensor *w = tt_set_requires_grad(rand_t(dt, TT_SHAPE(c->N, c->K)), true);
            tt_tensor *b = tt_set_requires_grad(rand_t(dt, TT_SHAPE(c->N)), true);
            tt_scope_begin();
            tt_tensor *y = tt_affine(x, w, b);
            tt_tensor *want = tt_empty(dt, TT_SHAPE(c->M, c->N));
            for (int64_t i = 0; i < c->M; i++)
                for (int64_t j = 0; j < c->N; j++) tt_set_at(want, i * c->N + j, tt_at(b, j));
            if (dt == TT_F32)
                tt_k_gemm_f32(c->M, c->N, c->K, tt_data(x), c->K, 1, tt_data(w), 1, c->K,
                              tt_data(want), c->N, 1, true);
            else
                tt_k_gemm_f64(c->M, c->N, c->K, tt_data(x), c->K, 1, tt_data(w), 1, c->K,
                              tt_data(want), c->N, 1, true);
            ck_assert_msg(same_bits(y, want), "path %s %s M=%lld K=%lld N=%lld: affine != "
                          "bias-filled accumulate", tt_cpu_level_name((tt_cpu_level)p),
                          tt_dtype_name(dt), (long long)c->M, (long long)c->K, (long long)c->N);
            double tol = dt == TT_F32 ? 2e-6 * (double)c->K : 1e-12;
            for (int64_t i = 0; i < c->M; i += 1 + c->M / 7)
                for (int64_t j = 0; j < c->N; j += 1 + c->N / 7) {
                    double s = tt_at(b, j);
                    for (int64_t k = 0; k < c->K; k++)
                        s += tt_at(x, i * c->K + k) * tt_at(w, j * c->K + k);
                    ck_assert_close(tt_at(y, i * c->N + j), s, tol, tol);
                }
            // gradients: the fused node against the composition, same upstream gradient
            tt_tensor *g = rand_t(dt, TT_SHAPE(c->M, c->N));
            tt_backward_with(y, g);
            tt_tensor *dx = tt_clone(tt_grad(x)), *dw = tt_clone(tt_grad(w));
            tt_tensor *db = tt_clone(tt_grad(b));
            tt_zero_grad(x);
            tt_zero_grad(w);
            tt_zero_grad(b);
            tt_backward_with(tt_add(tt_matmul(x, tt_transpose(w, 0, 1)), b), g);
            ck_assert_msg(same_bits(dx, tt_grad(x)) && same_bits(dw, tt_grad(w)) &&
                              same_bits(db, tt_grad(b)),
                          "path %s %s M=%lld K=%lld N=%lld: gradients differ from the "
                          "composition", tt_cpu_level_name((tt_cpu_level)p),
                          tt_dtype_name(dt), (long long)c->M, (long long)c->K, (long long)c->N);
            tt_scope_end();
            tt_release(x);
            tt_release(w);
            tt_release(b);
        }
        tt_cpu_set_level(prev);
    }
}
END_TEST

static bool all_close(const tt_tensor *a, const tt_tensor *b, double atol, double rtol) {
    if (!tt_same_shape(a, b)) return false;
    for (int64_t i = 0; i < tt_numel(a); i++) {
        double u = tt_at(a, i), v = tt_at(b, i);
        if (!(fabs(u - v) <= atol + rtol * fabs(v))) return false;
    }
    return true;
}

// Leading dims fold into rows: (2, 3, 4) -> (2, 3, 5), a bias-free 1-D x, and a strided x
// whose leading dims do not fold (computed from a copy), all against tt_matmul.
START_TEST(test_affine_shapes) {
    tt_scope_begin();
    tt_tensor *w = rand_t(TT_F64, TT_SHAPE(5, 4)), *wt = tview(w, 0, 1);
    tt_tensor *x3 = rand_t(TT_F64, TT_SHAPE(2, 3, 4));
    tt_tensor *y = tt_affine(x3, w, NULL);
    ck_assert_int_eq(y->ndim, 3);
    ck_assert(y->shape[0] == 2 && y->shape[1] == 3 && y->shape[2] == 5);
    ck_assert(all_close(y, tt_matmul(x3, wt), 1e-14, 1e-14));
    tt_tensor *v = rand_t(TT_F64, TT_SHAPE(4));
    tt_tensor *yv = tt_affine(v, w, NULL);
    ck_assert(yv->ndim == 1 && yv->shape[0] == 5);
    ck_assert(all_close(yv, tt_matmul(v, wt), 1e-14, 1e-14));
    tt_tensor *xs = tview(rand_t(TT_F64, TT_SHAPE(3, 2, 4)), 0, 1);  // (2, 3, 4), no fold
    ck_assert(all_close(tt_affine(xs, w, NULL), tt_matmul(xs, wt), 1e-14, 1e-14));
    tt_scope_end();
}
END_TEST

START_TEST(test_abort_affine_in) {
    tt_expect_abort("x (2, 3), weight (4, 5): weight must be 2-D");
    tt_affine(tt_ones(TT_F32, TT_SHAPE(2, 3)), tt_ones(TT_F32, TT_SHAPE(4, 5)), NULL);
}
END_TEST

START_TEST(test_abort_affine_weight_1d) {
    tt_expect_abort("x (2, 3), weight (3,): weight must be 2-D");
    tt_affine(tt_ones(TT_F32, TT_SHAPE(2, 3)), tt_ones(TT_F32, TT_SHAPE(3)), NULL);
}
END_TEST

START_TEST(test_abort_affine_bias) {
    tt_expect_abort("bias (3,) must be (4,), one value per output of weight (4, 3)");
    tt_affine(tt_ones(TT_F32, TT_SHAPE(2, 3)), tt_ones(TT_F32, TT_SHAPE(4, 3)),
              tt_ones(TT_F32, TT_SHAPE(3)));
}
END_TEST

START_TEST(test_abort_affine_dtype) {
    tt_expect_abort("tt_affine: dtypes differ: (2, 3) f32 vs (4,) f64");
    tt_affine(tt_ones(TT_F32, TT_SHAPE(2, 3)), tt_ones(TT_F32, TT_SHAPE(4, 3)),
              tt_ones(TT_F64, TT_SHAPE(4)));
}
END_TEST

// ---- misuse aborts ----

START_TEST(test_abort_inner_2d) {
    tt_expect_abort("inner dims differ: (2, 3) @ (4, 5) (3 vs 4)");
    tt_matmul(tt_ones(TT_F32, TT_SHAPE(2, 3)), tt_ones(TT_F32, TT_SHAPE(4, 5)));
}
END_TEST

START_TEST(test_abort_inner_vec) {
    tt_expect_abort("inner dims differ: (2, 3) @ (4,) (3 vs 4)");
    tt_matmul(tt_ones(TT_F32, TT_SHAPE(2, 3)), tt_ones(TT_F32, TT_SHAPE(4)));
}
END_TEST

START_TEST(test_abort_inner_dot) {
    tt_expect_abort("inner dims differ: (3,) @ (4,) (3 vs 4); a and b must have the same length");
    tt_matmul(tt_ones(TT_F64, TT_SHAPE(3)), tt_ones(TT_F64, TT_SHAPE(4)));
}
END_TEST

START_TEST(test_abort_inner_vec_batched) {
    tt_expect_abort("inner dims differ: (3,) @ (2, 4, 3) (3 vs 4)");
    tt_matmul(tt_ones(TT_F64, TT_SHAPE(3)), tt_ones(TT_F64, TT_SHAPE(2, 4, 3)));
}
END_TEST

START_TEST(test_abort_batch) {
    tt_expect_abort("batch dims do not broadcast: (2, 3, 4, 5) @ (4, 5, 6)");
    tt_matmul(tt_ones(TT_F32, TT_SHAPE(2, 3, 4, 5)), tt_ones(TT_F32, TT_SHAPE(4, 5, 6)));
}
END_TEST

START_TEST(test_abort_scalar) {
    tt_expect_abort("() @ (3,): a 0-d operand has no matrix dims");
    tt_matmul(tt_scalar(TT_F32, 2), tt_ones(TT_F32, TT_SHAPE(3)));
}
END_TEST

START_TEST(test_abort_scalar_b) {
    tt_expect_abort("(3,) @ (): a 0-d operand has no matrix dims");
    tt_matmul(tt_ones(TT_F32, TT_SHAPE(3)), tt_scalar(TT_F32, 2));
}
END_TEST

START_TEST(test_abort_mixed_dtypes) {
    tt_expect_abort("tt_matmul: dtypes differ: (2, 3) f32 vs (3, 2) f64");
    tt_matmul(tt_ones(TT_F32, TT_SHAPE(2, 3)), tt_ones(TT_F64, TT_SHAPE(3, 2)));
}
END_TEST

START_TEST(test_abort_integer) {
    tt_expect_abort("tt_matmul: tensor (2, 3) is i32; this op needs f32 or f64");
    tt_matmul(tt_ones(TT_I32, TT_SHAPE(2, 3)), tt_ones(TT_I32, TT_SHAPE(3, 2)));
}
END_TEST

START_TEST(test_abort_integer_b) {
    tt_expect_abort("tt_matmul: tensor (3, 2) is i64; this op needs f32 or f64");
    tt_matmul(tt_ones(TT_F32, TT_SHAPE(2, 3)), tt_ones(TT_I64, TT_SHAPE(3, 2)));
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_matmul");
    TCase *tc = tt_tcase("values");
    tcase_add_unchecked_fixture(tc, setup_rng, NULL);
    tcase_add_loop_test(tc, test_2x3_at_3x2, 0, 2);
    tcase_add_loop_test(tc, test_vectors, 0, 2);
    tcase_add_loop_test(tc, test_batched_hand, 0, 2);
    tcase_add_loop_test(tc, test_shapes, 0, N_SHAPE_CASES);
    tcase_add_test(tc, test_empty);
    tcase_add_loop_test(tc, test_transposed_views, 0, 2);
    tcase_add_loop_test(tc, test_strided_views, 0, 2);
    tcase_add_loop_test(tc, test_random_67x33x45, 0, 2);
    tcase_add_loop_test(tc, test_random_blocked, 0, 2);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_f32_long_dot);
    suite_add_tcase(s, tc);

    TCase *bw = tt_tcase("backward");
    tcase_add_unchecked_fixture(bw, setup_rng, NULL);
    tcase_add_loop_test(bw, test_backward_values, 0, 2);
    tcase_add_test(bw, test_backward_vectors);
    tcase_add_test(bw, test_no_record);
    tcase_add_loop_test(bw, test_affine_values, 0, N_AFFINE_CASES);
    tcase_add_test(bw, test_affine_shapes);
    suite_add_tcase(s, bw);

    TCase *kn = tt_tcase("kernels");
    tcase_add_test(kn, test_kernel_accumulate);
    tcase_add_test_raise_signal(kn, test_kernel_broadcast_c_needs_accumulate, SIGABRT);
    suite_add_tcase(s, kn);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_inner_2d, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_affine_in, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_affine_weight_1d, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_affine_bias, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_affine_dtype, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_inner_vec, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_inner_dot, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_inner_vec_batched, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_batch, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_scalar, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_scalar_b, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_mixed_dtypes, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_integer, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_integer_b, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}

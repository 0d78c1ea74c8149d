// Gradcheck cases of the reductions (sum, mean, max, var): one dim, a set of dims with and
// without keepdim, all dims, negative dims, non-contiguous inputs, size-1 dims, max ties.
// argmax has no case: it is not differentiable (the registry test forbids one).
#include "gc_util.h"

// ---- the functions under test ----

typedef struct rctx {
    int ndims;
    int dims[3];
    bool keepdim;
    int correction;  // var only
} rctx;

static tt_tensor *f_sum(tt_tensor *const *in, int n, void *ctx) {
    const rctx *c = ctx;
    (void)n;
    return tt_sum(in[0], c->ndims, c->dims, c->keepdim);
}

static tt_tensor *f_mean(tt_tensor *const *in, int n, void *ctx) {
    const rctx *c = ctx;
    (void)n;
    return tt_mean(in[0], c->ndims, c->dims, c->keepdim);
}

static tt_tensor *f_max(tt_tensor *const *in, int n, void *ctx) {
    const rctx *c = ctx;
    (void)n;
    return tt_max(in[0], c->ndims, c->dims, c->keepdim);
}

static tt_tensor *f_var(tt_tensor *const *in, int n, void *ctx) {
    const rctx *c = ctx;
    (void)n;
    return tt_var(in[0], c->ndims, c->dims, c->correction, c->keepdim);
}

// Checks f(x) under c; var is checked both biased (correction 0) and unbiased (1).
static void check(gc_report *r, tt_gradcheck_fn f, rctx c, tt_tensor *x) {
    if (f == f_var) {
        for (c.correction = 0; c.correction <= 1; c.correction++) gc_check(r, f, &c, 1, &x, NULL);
    } else {
        gc_check(r, f, &c, 1, &x, NULL);
    }
}

// ---- the layouts every reduction is checked on ----

#define IN(...) gc_input(TT_SHAPE(__VA_ARGS__), -1, 1)

static void c_dim1(gc_report *r, tt_gradcheck_fn f) {
    check(r, f, (rctx){1, {1}, false, 0}, IN(2, 3, 4));
    check(r, f, (rctx){1, {0}, false, 0}, IN(5));  // 1-d to 0-d
}

static void c_dims02(gc_report *r, tt_gradcheck_fn f) {
    check(r, f, (rctx){2, {0, 2}, false, 0}, IN(2, 3, 4));
    check(r, f, (rctx){2, {2, 0}, false, 0}, IN(3, 2, 2));  // dims in any order
}

static void c_dims02_keepdim(gc_report *r, tt_gradcheck_fn f) {
    check(r, f, (rctx){2, {0, 2}, true, 0}, IN(2, 3, 4));
}

static void c_all(gc_report *r, tt_gradcheck_fn f) {
    check(r, f, (rctx){0, {0}, false, 0}, IN(2, 3, 4));
    check(r, f, (rctx){0, {0}, true, 0}, IN(3, 4));        // keepdim: shape (1, 1)
    check(r, f, (rctx){3, {0, 1, 2}, false, 0}, IN(2, 2, 3));  // every dim listed
}

static void c_negdim(gc_report *r, tt_gradcheck_fn f) {
    check(r, f, (rctx){1, {-1}, false, 0}, IN(2, 3, 4));
    check(r, f, (rctx){2, {-3, -2}, true, 0}, IN(2, 3, 4));
}

static void c_transposed(gc_report *r, tt_gradcheck_fn f) {
    // (4, 3) read through strides (1, 4); and (2, 4, 3) from a (3, 4, 2) base.
    check(r, f, (rctx){1, {0}, false, 0}, gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -1, 1));
    check(r, f, (rctx){1, {1}, false, 0}, gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -1, 1));
    check(r, f, (rctx){2, {0, 2}, false, 0},
          gc_input_transposed(TT_SHAPE(3, 4, 2), 0, 2, -1, 1));
    check(r, f, (rctx){0, {0}, false, 0}, gc_input_transposed(TT_SHAPE(3, 4, 2), 0, 2, -1, 1));
    // Every other element along the last dim: no dim is unit-stride.
    check(r, f, (rctx){1, {1}, true, 0}, gc_input_strided(TT_SHAPE(3, 7), 1, 2, -1, 1));
}

static void c_size1(gc_report *r, tt_gradcheck_fn f) {
    // Over the size-1 dim alone N = 1: var is checked biased only (unbiased it is NaN).
    rctx one = {1, {1}, false, 0};
    tt_tensor *x = IN(3, 1, 4);
    if (f == f_var) gc_check(r, f, &one, 1, &x, NULL);
    else check(r, f, one, x);
    check(r, f, (rctx){2, {1, 2}, true, 0}, IN(3, 1, 4));
}

#define CASE_FNS(op)                                                                       \
    static void op##_dim1(gc_report *r) { c_dim1(r, f_##op); }                             \
    static void op##_dims02(gc_report *r) { c_dims02(r, f_##op); }                         \
    static void op##_dims02_keepdim(gc_report *r) { c_dims02_keepdim(r, f_##op); }         \
    static void op##_all(gc_report *r) { c_all(r, f_##op); }                               \
    static void op##_negdim(gc_report *r) { c_negdim(r, f_##op); }                         \
    static void op##_transposed(gc_report *r) { c_transposed(r, f_##op); }                 \
    static void op##_size1(gc_report *r) { c_size1(r, f_##op); }

CASE_FNS(sum)
CASE_FNS(mean)
CASE_FNS(max)
CASE_FNS(var)

// ---- cases of one op ----

static void sum_scalar(gc_report *r) {  // a 0-d input, over all dims and over dim 0
    tt_tensor *x = tt_set_requires_grad(tt_scalar(TT_F64, 0.3), true);
    check(r, f_sum, (rctx){0, {0}, false, 0}, x);
    check(r, f_sum, (rctx){1, {-1}, true, 0}, x);
}

// Random values are distinct (gaps far above eps): each maximum takes the whole gradient.
static void max_distinct(gc_report *r) {
    check(r, f_max, (rctx){1, {1}, false, 0}, IN(4, 6));
    check(r, f_max, (rctx){1, {0}, true, 0}, IN(4, 6));
}

// Two equal maxima per output: each gets g / 2, which is also what the central difference
// sees (moving one of them up raises the max, moving it down leaves the other). First order
// only: the split jumps as a tie breaks (test_autograd_grad checks the create_graph split).
static void max_ties(gc_report *r) {
    tt_tensor *x = tt_set_requires_grad(
        tt_test_tensor(TT_F64, TT_SHAPE(2, 4), 0.5, 0.9, 0.1, 0.9, 0.7, 0.2, 0.7, -0.3), true);
    gc_check_first_order(r, f_max, &(rctx){1, {1}, false, 0}, 1, &x, NULL);
    // all dims: ties at elements 1 and 3
    gc_check_first_order(r, f_max, &(rctx){0, {0}, false, 0}, 1, &x, NULL);
    // Ties in column 0 and in row 1; the tied 0.4s of row 0 are not maxima and get nothing.
    tt_tensor *y = tt_set_requires_grad(
        tt_test_tensor(TT_F64, TT_SHAPE(2, 3), 0.6, 0.4, 0.4, 0.6, 0.1, 0.6), true);
    gc_check_first_order(r, f_max, &(rctx){1, {0}, false, 0}, 1, &y, NULL);
    gc_check_first_order(r, f_max, &(rctx){1, {-1}, true, 0}, 1, &y, NULL);
}

static void var_corrections(gc_report *r, int correction) {
    tt_tensor *x = IN(3, 4, 5);
    gc_check(r, f_var, &(rctx){1, {1}, false, correction}, 1, &x, NULL);
    gc_check(r, f_var, &(rctx){2, {0, 2}, true, correction}, 1, &x, NULL);
    gc_check(r, f_var, &(rctx){0, {0}, false, correction}, 1, &x, NULL);
}

static void var_biased(gc_report *r) { var_corrections(r, 0); }
static void var_unbiased(gc_report *r) { var_corrections(r, 1); }

#define CASE_ROWS(OP, op)                                                                  \
    {TT_OP_##OP, "dim1", op##_dim1}, {TT_OP_##OP, "dims02", op##_dims02},                  \
    {TT_OP_##OP, "dims02_keepdim", op##_dims02_keepdim}, {TT_OP_##OP, "all", op##_all},    \
    {TT_OP_##OP, "negdim", op##_negdim}, {TT_OP_##OP, "transposed", op##_transposed},      \
    {TT_OP_##OP, "size1", op##_size1}

const gc_case gc_cases_reduce[] = {
    CASE_ROWS(SUM, sum),
    {TT_OP_SUM, "scalar", sum_scalar},
    CASE_ROWS(MEAN, mean),
    CASE_ROWS(MAX, max),
    {TT_OP_MAX, "distinct", max_distinct},
    {TT_OP_MAX, "ties", max_ties},
    CASE_ROWS(VAR, var),
    {TT_OP_VAR, "biased", var_biased},
    {TT_OP_VAR, "unbiased", var_unbiased},
    {0, NULL, NULL},
};

// Gradcheck cases of the math ops beyond the first elementwise set: clamp (autograd/ops_math.c)
// and the compositions softplus, logsumexp, std and vector_norm, filed under an op they are made
// of. The math rows of ops.def (sin ... elu) get their generated cases in gc_ops_elementwise.c.
#include "gc_util.h"

#include <math.h>

// ---- clamp: kinks at the bounds, so inputs stay 0.1 away from them ----

typedef struct clamp_args {
    double lo, hi;
} clamp_args;

static tt_tensor *f_clamp(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const clamp_args *a = ctx;
    return tt_clamp(in[0], a->lo, a->hi);
}

// Moves every element of x at least d away from the bounds (toward the inside).
static void away_from_bounds(tt_tensor *x, const clamp_args *a, double d) {
    for (int64_t i = 0; i < tt_numel(x); i++) {
        double v = tt_at(x, i);
        if (fabs(v - a->lo) < d) v = a->lo + d;
        if (fabs(v - a->hi) < d) v = a->hi - d;
        tt_set_at(x, i, v);
    }
}

static void clamp_check(gc_report *r, tt_tensor *x, clamp_args a) {
    away_from_bounds(x, &a, 0.1);
    gc_check(r, f_clamp, &a, 1, &x, NULL);
}

static void clamp_contiguous(gc_report *r) {
    clamp_check(r, gc_input(TT_SHAPE(3, 4), -2, 2), (clamp_args){-0.5, 0.7});
}
static void clamp_transposed(gc_report *r) {
    clamp_check(r, gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -2, 2), (clamp_args){-0.5, 0.7});
}
static void clamp_strided(gc_report *r) {
    clamp_check(r, gc_input_strided(TT_SHAPE(3, 8), 1, 3, -2, 2), (clamp_args){-0.5, 0.7});
}
static void clamp_one_sided(gc_report *r) {  // an infinite bound is no bound
    clamp_check(r, gc_input(TT_SHAPE(2, 5), -2, 2), (clamp_args){-INFINITY, 0.3});
    clamp_check(r, gc_input(TT_SHAPE(2, 5), -2, 2), (clamp_args){-0.3, INFINITY});
}
static void clamp_lo_above_hi(gc_report *r) {  // every element is hi: gradient 0
    clamp_check(r, gc_input(TT_SHAPE(2, 3), -2, 2), (clamp_args){1, -1});
}

// ---- softplus ----

typedef struct softplus_args {
    double beta, threshold;
} softplus_args;

static tt_tensor *f_softplus(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const softplus_args *a = ctx;
    return tt_softplus(in[0], a->beta, a->threshold);
}

// At 0, |x| has a kink: the gradient is right (1/2) but its derivative through the parts
// is not softplus'' (1/4), so that point is checked to first order only.
static void softplus_contiguous(gc_report *r) {
    softplus_args a = {1, 20};
    tt_tensor *x = gc_input(TT_SHAPE(3, 4), -4, 4);
    gc_check(r, f_softplus, &a, 1, &x, NULL);
    tt_set_at(x, 0, 0.0);  // the point where relu(x) + log1p(e^-|x|) would give gradient 0
    gc_check_first_order(r, f_softplus, &a, 1, &x, NULL);
}
static void softplus_beta_threshold(gc_report *r) {  // beta 2, some elements above threshold
    softplus_args a = {2, 3};
    tt_tensor *x = gc_input(TT_SHAPE(2, 6), -3, 3);
    away_from_bounds(x, &(clamp_args){1.5, 1.5}, 0.1);  // beta x stays 0.2 from the threshold
    gc_check(r, f_softplus, &a, 1, &x, NULL);
}
static void softplus_strided(gc_report *r) {
    softplus_args a = {0.5, 20};
    gc_check(r, f_softplus, &a, 1,
             (tt_tensor *[]){gc_input_strided(TT_SHAPE(3, 8), 1, 3, -30, 30)}, NULL);
}

// ---- logsumexp ----

typedef struct reduce_args {
    int ndims;
    int dims[2];
    bool keepdim;
    int correction;  // std
    double p;        // vector_norm
} reduce_args;

static tt_tensor *f_logsumexp(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const reduce_args *a = ctx;
    return tt_logsumexp(in[0], a->ndims, a->dims, a->keepdim);
}

static void logsumexp_last_dim(gc_report *r) {
    reduce_args a = {1, {-1}, false, 0, 0};
    gc_check(r, f_logsumexp, &a, 1, (tt_tensor *[]){gc_input(TT_SHAPE(3, 5), -3, 3)}, NULL);
}
static void logsumexp_dims_keepdim(gc_report *r) {
    reduce_args a = {2, {0, 2}, true, 0, 0};
    gc_check(r, f_logsumexp, &a, 1, (tt_tensor *[]){gc_input(TT_SHAPE(2, 3, 4), -3, 3)}, NULL);
}
static void logsumexp_all_transposed(gc_report *r) {
    reduce_args a = {0, {0}, false, 0, 0};
    gc_check(r, f_logsumexp, &a, 1,
             (tt_tensor *[]){gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -3, 3)}, NULL);
}
static void logsumexp_large(gc_report *r) {  // |x| ~ 1000: e^x alone would overflow
    reduce_args a = {1, {1}, false, 0, 0};
    tt_tensor *x = gc_input(TT_SHAPE(2, 4), -2, 2);
    for (int64_t i = 0; i < 8; i++) tt_set_at(x, i, tt_at(x, i) + (i < 4 ? 1000 : -1000));
    gc_check(r, f_logsumexp, &a, 1, &x, NULL);
}

// ---- std ----

static tt_tensor *f_std(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const reduce_args *a = ctx;
    return tt_std(in[0], a->ndims, a->dims, a->correction, a->keepdim);
}

static void std_unbiased(gc_report *r) {
    reduce_args a = {1, {1}, false, 1, 0};
    gc_check(r, f_std, &a, 1, (tt_tensor *[]){gc_input(TT_SHAPE(3, 5), -2, 2)}, NULL);
}
static void std_biased_keepdim_strided(gc_report *r) {
    reduce_args a = {1, {0}, true, 0, 0};
    gc_check(r, f_std, &a, 1,
             (tt_tensor *[]){gc_input_strided(TT_SHAPE(6, 4), 0, 2, -2, 2)}, NULL);
}
static void std_all(gc_report *r) {
    reduce_args a = {0, {0}, false, 1, 0};
    gc_check(r, f_std, &a, 1,
             (tt_tensor *[]){gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -2, 2)}, NULL);
}

// ---- vector_norm ----

static tt_tensor *f_norm(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const reduce_args *a = ctx;
    return tt_vector_norm(in[0], a->p, a->ndims, a->dims, a->keepdim);
}

// Elements 0.1 away from 0 (|x| has a kink there) and, for p = inf, distinct |x|.
static tt_tensor *norm_input(tt_tensor *x) {
    for (int64_t i = 0; i < tt_numel(x); i++) {
        double v = tt_at(x, i);
        double m = 0.1 + fabs(v) + 0.01 * (double)i;  // distinct magnitudes
        tt_set_at(x, i, v < 0 ? -m : m);
    }
    return x;
}

static void norm_p1(gc_report *r) {
    reduce_args a = {1, {1}, false, 0, 1};
    gc_check(r, f_norm, &a, 1, (tt_tensor *[]){norm_input(gc_input(TT_SHAPE(3, 4), -1, 1))},
             NULL);
}
static void norm_p2(gc_report *r) {
    reduce_args a = {1, {-1}, true, 0, 2};
    gc_check(r, f_norm, &a, 1, (tt_tensor *[]){gc_input(TT_SHAPE(3, 4), -1, 1)}, NULL);
    reduce_args all = {0, {0}, false, 0, 2};
    gc_check(r, f_norm, &all, 1,
             (tt_tensor *[]){gc_input_strided(TT_SHAPE(3, 8), 1, 3, -1, 1)}, NULL);
}
static void norm_pinf(gc_report *r) {
    reduce_args a = {2, {0, 2}, false, 0, INFINITY};
    gc_check(r, f_norm, &a, 1,
             (tt_tensor *[]){norm_input(gc_input(TT_SHAPE(2, 3, 2), -1, 1))}, NULL);
    reduce_args t = {1, {0}, false, 0, INFINITY};
    gc_check(r, f_norm, &t, 1,
             (tt_tensor *[]){norm_input(gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -1, 1))},
             NULL);
}

// ---- leaky_relu and elu at other scalars ----

typedef struct scalar_args {
    tt_tensor *(*f)(tt_tensor *, double);
    double s;
} scalar_args;

static tt_tensor *f_scalar(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const scalar_args *a = ctx;
    return a->f(in[0], a->s);
}

static void leaky_relu_default_slope(gc_report *r) {  // PyTorch's default 0.01, x != 0
    scalar_args a = {tt_leaky_relu, 0.01};
    tt_tensor *x = norm_input(gc_input(TT_SHAPE(2, 5), -1, 1));
    gc_check(r, f_scalar, &a, 1, &x, NULL);
}
// alpha 1: the gradient is continuous at 0 (its derivative is not: first order only there).
static void elu_alpha1_at_zero(gc_report *r) {
    scalar_args a = {tt_elu, 1.0};
    tt_tensor *x = gc_input_strided(TT_SHAPE(3, 8), 1, 3, -2, 2);
    gc_check(r, f_scalar, &a, 1, &x, NULL);
    tt_set_at(x, 0, 0.0);
    gc_check_first_order(r, f_scalar, &a, 1, &x, NULL);
}

const gc_case gc_cases_math[] = {
    {TT_OP_LEAKY_RELU, "default_slope", leaky_relu_default_slope},
    {TT_OP_ELU, "alpha1_at_zero", elu_alpha1_at_zero},
    {TT_OP_CLAMP, "contiguous", clamp_contiguous},
    {TT_OP_CLAMP, "transposed", clamp_transposed},
    {TT_OP_CLAMP, "strided", clamp_strided},
    {TT_OP_CLAMP, "one_sided", clamp_one_sided},
    {TT_OP_CLAMP, "lo_above_hi", clamp_lo_above_hi},
    {TT_OP_LOG1P, "softplus", softplus_contiguous},
    {TT_OP_LOG1P, "softplus_beta_threshold", softplus_beta_threshold},
    {TT_OP_LOG1P, "softplus_strided", softplus_strided},
    {TT_OP_MAX, "logsumexp_last_dim", logsumexp_last_dim},
    {TT_OP_MAX, "logsumexp_dims_keepdim", logsumexp_dims_keepdim},
    {TT_OP_MAX, "logsumexp_all_transposed", logsumexp_all_transposed},
    {TT_OP_MAX, "logsumexp_large", logsumexp_large},
    {TT_OP_VAR, "std_unbiased", std_unbiased},
    {TT_OP_VAR, "std_biased_keepdim_strided", std_biased_keepdim_strided},
    {TT_OP_VAR, "std_all", std_all},
    {TT_OP_SUM, "vector_norm_p1", norm_p1},
    {TT_OP_SQRT, "vector_norm_p2", norm_p2},
    {TT_OP_MAX, "vector_norm_pinf", norm_pinf},
    {0, NULL, NULL},
};

// Gradcheck cases of the elementwise ops: every binary op contiguous, broadcast, against a
// 0-dim tensor, on transposed and strided views and with size-1 dims; every unary and scalar
// op contiguous, transposed and strided. Inputs stay away from kinks and domain edges.
#include "gc_util.h"

// ---- input helpers ----

// Moves every element at least `margin` away from 0 (for abs and relu, whose kink is there).
static void away_from_zero(tt_tensor *t, double margin) {
    for (int64_t i = 0; i < tt_numel(t); i++) {
        double v = tt_at(t, i);
        tt_set_at(t, i, v >= 0 ? v + margin : v - margin);
    }
}

// Snaps every element to a grid of step 0.4 shifted by `phase`, keeping a jitter of at most
// 0.05: a tensor with phase 0 and one with phase 0.2 differ by >= 0.1 everywhere, so
// maximum and minimum are far from their ties.
static void separate(tt_tensor *t, double phase) {
    for (int64_t i = 0; i < tt_numel(t); i++) {
        double v = tt_at(t, i), k = round(v / 0.4);
        tt_set_at(t, i, 0.4 * k + phase + (v - 0.4 * k) / 4);
    }
}

// ---- binary ops ----

typedef struct binary_spec {
    tt_tensor *(*f)(tt_tensor *, tt_tensor *);
    double alo, ahi, blo, bhi;  // input ranges
    bool separated;             // maximum / minimum: keep a and b apart
} binary_spec;

static tt_tensor *f_binary(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const binary_spec *sp = ctx;
    return sp->f(in[0], in[1]);
}

static void check_pair(gc_report *r, const binary_spec *sp, tt_tensor *a, tt_tensor *b) {
    if (sp->separated) {
        separate(a, 0);
        separate(b, 0.2);
    }
    tt_tensor *in[2] = {a, b};
    gc_check(r, f_binary, (void *)sp, 2, in, NULL);
}

static void bin_contiguous(gc_report *r, const binary_spec *sp) {
    check_pair(r, sp, gc_input(TT_SHAPE(2, 3), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(2, 3), sp->blo, sp->bhi));
}

// (B, 1, C) with (1, T, 1) -> (B, T, C)
static void bin_b1c_1t1(gc_report *r, const binary_spec *sp) {
    check_pair(r, sp, gc_input(TT_SHAPE(2, 1, 3), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(1, 4, 1), sp->blo, sp->bhi));
}

// (C) with (B, T, C), and (B, T, C) with (C)
static void bin_c_btc(gc_report *r, const binary_spec *sp) {
    check_pair(r, sp, gc_input(TT_SHAPE(3), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(2, 2, 3), sp->blo, sp->bhi));
    check_pair(r, sp, gc_input(TT_SHAPE(2, 2, 3), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(3), sp->blo, sp->bhi));
}

// A 0-dim tensor on either side.
static void bin_scalar_tensor(gc_report *r, const binary_spec *sp) {
    check_pair(r, sp, gc_input(TT_SCALAR_SHAPE, sp->alo, sp->ahi),
               gc_input(TT_SHAPE(2, 3), sp->blo, sp->bhi));
    check_pair(r, sp, gc_input(TT_SHAPE(2, 3), sp->alo, sp->ahi),
               gc_input(TT_SCALAR_SHAPE, sp->blo, sp->bhi));
}

// Transposed views: both, then one of them (4, 3).
static void bin_transposed(gc_report *r, const binary_spec *sp) {
    check_pair(r, sp, gc_input_transposed(TT_SHAPE(3, 4), 0, 1, sp->alo, sp->ahi),
               gc_input_transposed(TT_SHAPE(3, 4), 0, 1, sp->blo, sp->bhi));
    check_pair(r, sp, gc_input(TT_SHAPE(4, 3), sp->alo, sp->ahi),
               gc_input_transposed(TT_SHAPE(3, 4), 0, 1, sp->blo, sp->bhi));
}

// Every 2nd column of a (3, 6) with every 2nd row of a (5, 3) -> (3, 3); then a strided
// view broadcast against a (2, 1, 3).
static void bin_strided(gc_report *r, const binary_spec *sp) {
    check_pair(r, sp, gc_input_strided(TT_SHAPE(3, 6), 1, 2, sp->alo, sp->ahi),
               gc_input_strided(TT_SHAPE(5, 3), 0, 2, sp->blo, sp->bhi));
    check_pair(r, sp, gc_input_strided(TT_SHAPE(3, 6), 1, 2, sp->alo, sp->ahi),
               gc_input(TT_SHAPE(2, 1, 3), sp->blo, sp->bhi));
}

// Size-1 dims: (2, 1, 3) with (2, 1, 3), and (3, 1) with (1).
static void bin_size1(gc_report *r, const binary_spec *sp) {
    check_pair(r, sp, gc_input(TT_SHAPE(2, 1, 3), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(2, 1, 3), sp->blo, sp->bhi));
    check_pair(r, sp, gc_input(TT_SHAPE(3, 1), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(1), sp->blo, sp->bhi));
}

static const binary_spec spec_add = {tt_add, -1, 1, -1, 1, false};
static const binary_spec spec_sub = {tt_sub, -1, 1, -1, 1, false};
static const binary_spec spec_mul = {tt_mul, -1, 1, -1, 1, false};
static const binary_spec spec_div = {tt_div, -1, 1, 0.5, 2, false};
static const binary_spec spec_pow = {tt_pow, 0.5, 2, -1.5, 1.5, false};
static const binary_spec spec_maximum = {tt_maximum, -1, 1, -1, 1, true};
static const binary_spec spec_minimum = {tt_minimum, -1, 1, -1, 1, true};

#define BINARY_CASES(name)                                                                 \
    static void name##_contiguous(gc_report *r) { bin_contiguous(r, &spec_##name); }       \
    static void name##_b1c_1t1(gc_report *r) { bin_b1c_1t1(r, &spec_##name); }             \
    static void name##_c_btc(gc_report *r) { bin_c_btc(r, &spec_##name); }                 \
    static void name##_scalar_tensor(gc_report *r) { bin_scalar_tensor(r, &spec_##name); } \
    static void name##_transposed(gc_report *r) { bin_transposed(r, &spec_##name); }       \
    static void name##_strided(gc_report *r) { bin_strided(r, &spec_##name); }             \
    static void name##_size1(gc_report *r) { bin_size1(r, &spec_##name); }

#define BINARY_ENTRIES(OP, name)                                                           \
    {OP, "contiguous", name##_contiguous}, {OP, "broadcast_b1c_1t1", name##_b1c_1t1},       \
    {OP, "broadcast_c_btc", name##_c_btc}, {OP, "scalar_tensor", name##_scalar_tensor},     \
    {OP, "transposed", name##_transposed}, {OP, "strided", name##_strided},                 \
    {OP, "size1", name##_size1}

BINARY_CASES(add)
BINARY_CASES(sub)
BINARY_CASES(mul)
BINARY_CASES(div)
BINARY_CASES(pow)
BINARY_CASES(maximum)
BINARY_CASES(minimum)

static tt_tensor *f_self(tt_tensor *const *in, int n, void *ctx) {  // f(x, x)
    (void)n;
    const binary_spec *sp = ctx;
    return sp->f(in[0], in[0]);
}

// Equal operands: the gradient splits 0.5 / 0.5, which is what central differences see
// (moving a up moves the result, moving it down does not). Also x with itself: 0.5 + 0.5.
static void ties(gc_report *r, const binary_spec *sp) {
    tt_tensor *a = gc_input(TT_SHAPE(2, 3), -1, 1), *b = gc_input(TT_SHAPE(2, 3), -1, 1);
    for (int64_t i = 0; i < 6; i++) tt_set_at(b, i, tt_at(a, i));
    gc_check(r, f_binary, (void *)sp, 2, (tt_tensor *[]){a, b}, NULL);
    gc_check(r, f_self, (void *)sp, 1, &a, NULL);
}
static void maximum_ties(gc_report *r) { ties(r, &spec_maximum); }
static void minimum_ties(gc_report *r) { ties(r, &spec_minimum); }

// ---- scalar forms ----

typedef struct scalar_spec {
    tt_tensor *(*f)(tt_tensor *, double);
    double s, lo, hi;
} scalar_spec;

static tt_tensor *f_scalar(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const scalar_spec *sp = ctx;
    return sp->f(in[0], sp->s);
}

static tt_tensor *rsub(tt_tensor *x, double s) { return tt_rsub_scalar(s, x); }

static void scalar_check(gc_report *r, const scalar_spec *sp, tt_tensor *x) {
    gc_check(r, f_scalar, (void *)sp, 1, &x, NULL);
}

static const scalar_spec spec_add_scalar = {tt_add_scalar, 0.75, -1, 1};
static const scalar_spec spec_sub_scalar = {tt_sub_scalar, 0.75, -1, 1};
static const scalar_spec spec_mul_scalar = {tt_mul_scalar, -1.5, -1, 1};
static const scalar_spec spec_div_scalar = {tt_div_scalar, 3, -1, 1};
static const scalar_spec spec_rsub_scalar = {rsub, 2, -1, 1};
static const scalar_spec spec_pow_scalar = {tt_pow_scalar, 2.5, 0.5, 2};
static const scalar_spec spec_pow_scalar_neg = {tt_pow_scalar, -1.5, 0.5, 2};
static const scalar_spec spec_pow_scalar_int = {tt_pow_scalar, 3, -2, -0.5};
static const scalar_spec spec_pow_scalar_two = {tt_pow_scalar, 2, -1, 1};

#define SCALAR_CASES(name)                                                                 \
    static void name##_contiguous(gc_report *r) {                                          \
        scalar_check(r, &spec_##name, gc_input(TT_SHAPE(2, 3, 4), spec_##name.lo,          \
                                               spec_##name.hi));                           \
    }                                                                                      \
    static void name##_transposed(gc_report *r) {                                          \
        scalar_check(r, &spec_##name, gc_input_transposed(TT_SHAPE(3, 4), 0, 1,            \
                                                          spec_##name.lo, spec_##name.hi)); \
    }                                                                                      \
    static void name##_strided(gc_report *r) {                                             \
        scalar_check(r, &spec_##name, gc_input_strided(TT_SHAPE(3, 8), 1, 3,               \
                                                       spec_##name.lo, spec_##name.hi));   \
    }

#define SCALAR_ENTRIES(OP, name)                                                           \
    {OP, "contiguous", name##_contiguous}, {OP, "transposed", name##_transposed},           \
    {OP, "strided", name##_strided}

SCALAR_CASES(add_scalar)
SCALAR_CASES(mul_scalar)
SCALAR_CASES(div_scalar)
SCALAR_CASES(rsub_scalar)
SCALAR_CASES(pow_scalar)

// tt_sub_scalar records an add_scalar of -s.
static void sub_scalar(gc_report *r) {
    scalar_check(r, &spec_sub_scalar, gc_input(TT_SHAPE(2, 3), -1, 1));
}
static void pow_scalar_negative_exponent(gc_report *r) {
    scalar_check(r, &spec_pow_scalar_neg, gc_input(TT_SHAPE(2, 3), 0.5, 2));
}
static void pow_scalar_negative_base(gc_report *r) {  // an integer exponent
    scalar_check(r, &spec_pow_scalar_int, gc_input(TT_SHAPE(2, 3), -2, -0.5));
}
static void pow_scalar_exponent_two(gc_report *r) {  // the x * x fast path
    scalar_check(r, &spec_pow_scalar_two, gc_input(TT_SHAPE(2, 3), -1, 1));
}

// ---- unary ops ----

typedef struct unary_spec {
    tt_tensor *(*f)(tt_tensor *);
    double lo, hi;
    double margin;  // > 0: keep inputs this far from 0 (abs, relu)
} unary_spec;

static tt_tensor *f_unary(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const unary_spec *sp = ctx;
    return sp->f(in[0]);
}

static void unary_check(gc_report *r, const unary_spec *sp, tt_tensor *x) {
    if (sp->margin > 0) away_from_zero(x, sp->margin);
    gc_check(r, f_unary, (void *)sp, 1, &x, NULL);
}

static const unary_spec spec_neg = {tt_neg, -1, 1, 0};
static const unary_spec spec_exp = {tt_exp, -2, 2, 0};
static const unary_spec spec_log = {tt_log, 0.5, 2, 0};
static const unary_spec spec_sqrt = {tt_sqrt, 0.5, 2, 0};
static const unary_spec spec_rsqrt = {tt_rsqrt, 0.5, 2, 0};
static const unary_spec spec_abs = {tt_abs, -1, 1, 0.1};
static const unary_spec spec_tanh = {tt_tanh, -2, 2, 0};
static const unary_spec spec_sigmoid = {tt_sigmoid, -4, 4, 0};
static const unary_spec spec_relu = {tt_relu, -1, 1, 0.1};
static const unary_spec spec_gelu = {tt_gelu, -3, 3, 0};
static const unary_spec spec_gelu_tanh = {tt_gelu_tanh, -3, 3, 0};
static const unary_spec spec_silu = {tt_silu, -4, 4, 0};
static const unary_spec spec_square = {tt_square, -1, 1, 0};

#define UNARY_CASES(name)                                                                  \
    static void name##_contiguous(gc_report *r) {                                          \
        unary_check(r, &spec_##name, gc_input(TT_SHAPE(2, 3, 4), spec_##name.lo,           \
                                              spec_##name.hi));                            \
    }                                                                                      \
    static void name##_transposed(gc_report *r) {                                          \
        unary_check(r, &spec_##name, gc_input_transposed(TT_SHAPE(3, 4), 0, 1,             \
                                                         spec_##name.lo, spec_##name.hi)); \
    }                                                                                      \
    static void name##_strided(gc_report *r) {                                             \
        unary_check(r, &spec_##name, gc_input_strided(TT_SHAPE(3, 8), 1, 3,                \
                                                      spec_##name.lo, spec_##name.hi));    \
    }

#define UNARY_ENTRIES(OP, name) SCALAR_ENTRIES(OP, name)

UNARY_CASES(neg)
UNARY_CASES(exp)
UNARY_CASES(log)
UNARY_CASES(sqrt)
UNARY_CASES(rsqrt)
UNARY_CASES(abs)
UNARY_CASES(tanh)
UNARY_CASES(sigmoid)
UNARY_CASES(relu)
UNARY_CASES(gelu)
UNARY_CASES(gelu_tanh)
UNARY_CASES(silu)
UNARY_CASES(square)

// Saturated sigmoid (|x| in [6, 10]): the derivative y (1 - y) from the output stays accurate.
static void sigmoid_saturated(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3), -10, 10);
    for (int64_t i = 0; i < 6; i++) {  // alternate signs, |x| >= 6
        double v = 6 + 4 * fabs(tt_at(x, i)) / 10;
        tt_set_at(x, i, i % 2 ? -v : v);
    }
    gc_check(r, f_unary, (void *)&spec_sigmoid, 1, &x, NULL);
}

// ---- the table ----

const gc_case gc_cases_elementwise[] = {
    BINARY_ENTRIES(TT_OP_ADD, add),
    BINARY_ENTRIES(TT_OP_SUB, sub),
    BINARY_ENTRIES(TT_OP_MUL, mul),
    BINARY_ENTRIES(TT_OP_DIV, div),
    BINARY_ENTRIES(TT_OP_POW, pow),
    BINARY_ENTRIES(TT_OP_MAXIMUM, maximum),
    {TT_OP_MAXIMUM, "ties", maximum_ties},
    BINARY_ENTRIES(TT_OP_MINIMUM, minimum),
    {TT_OP_MINIMUM, "ties", minimum_ties},
    SCALAR_ENTRIES(TT_OP_ADD_SCALAR, add_scalar),
    {TT_OP_ADD_SCALAR, "sub_scalar", sub_scalar},
    SCALAR_ENTRIES(TT_OP_MUL_SCALAR, mul_scalar),
    SCALAR_ENTRIES(TT_OP_DIV_SCALAR, div_scalar),
    SCALAR_ENTRIES(TT_OP_RSUB_SCALAR, rsub_scalar),
    SCALAR_ENTRIES(TT_OP_POW_SCALAR, pow_scalar),
    {TT_OP_POW_SCALAR, "negative_exponent", pow_scalar_negative_exponent},
    {TT_OP_POW_SCALAR, "negative_base", pow_scalar_negative_base},
    {TT_OP_POW_SCALAR, "exponent_two", pow_scalar_exponent_two},
    UNARY_ENTRIES(TT_OP_NEG, neg),
    UNARY_ENTRIES(TT_OP_EXP, exp),
    UNARY_ENTRIES(TT_OP_LOG, log),
    UNARY_ENTRIES(TT_OP_SQRT, sqrt),
    UNARY_ENTRIES(TT_OP_RSQRT, rsqrt),
    UNARY_ENTRIES(TT_OP_ABS, abs),
    UNARY_ENTRIES(TT_OP_TANH, tanh),
    UNARY_ENTRIES(TT_OP_SIGMOID, sigmoid),
    {TT_OP_SIGMOID, "saturated", sigmoid_saturated},
    UNARY_ENTRIES(TT_OP_RELU, relu),
    UNARY_ENTRIES(TT_OP_GELU, gelu),
    UNARY_ENTRIES(TT_OP_GELU_TANH, gelu_tanh),
    UNARY_ENTRIES(TT_OP_SILU, silu),
    UNARY_ENTRIES(TT_OP_SQUARE, square),
    {0, NULL, NULL},
};

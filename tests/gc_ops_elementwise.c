// Gradcheck cases of the elementwise ops, generated from their rows in tensor/ops.def: every
// binary op contiguous, broadcast, against a 0-dim tensor, on transposed and strided views and
// with size-1 dims; every unary and scalar op contiguous, transposed and strided; each on its
// row's input domain, away from kinks (TT_EW_KINK0) and ties (TT_EW_APART). Hand-written
// cases follow (ties, saturation, other exponents, the compositions).
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

// ---- a row of ops.def ----

typedef struct ew_spec {
    tt_tensor *(*f1)(tt_tensor *);              // TT_UNARY
    tt_tensor *(*fs)(tt_tensor *, double);      // TT_UNARY_S
    tt_tensor *(*f2)(tt_tensor *, tt_tensor *);  // TT_BINARY
    unsigned flags;
    double s;                   // TT_UNARY_S: the scalar
    double alo, ahi, blo, bhi;  // input domains (unary: alo, ahi)
} ew_spec;

static tt_tensor *f_ew(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    const ew_spec *sp = ctx;
    if (sp->f2) return sp->f2(in[0], in[1]);
    if (sp->fs) return sp->fs(in[0], sp->s);
    return sp->f1(in[0]);
}

// ---- binary ops ----

static void check_pair(gc_report *r, const ew_spec *sp, tt_tensor *a, tt_tensor *b) {
    if (sp->flags & TT_EW_APART) {
        separate(a, 0);
        separate(b, 0.2);
    }
    tt_tensor *in[2] = {a, b};
    gc_check(r, f_ew, (void *)sp, 2, in, NULL);
}

static void bin_contiguous(gc_report *r, const ew_spec *sp) {
    check_pair(r, sp, gc_input(TT_SHAPE(2, 3), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(2, 3), sp->blo, sp->bhi));
}

// (B, 1, C) with (1, T, 1) -> (B, T, C)
static void bin_b1c_1t1(gc_report *r, const ew_spec *sp) {
    check_pair(r, sp, gc_input(TT_SHAPE(2, 1, 3), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(1, 4, 1), sp->blo, sp->bhi));
}

// (C) with (B, T, C), and (B, T, C) with (C)
static void bin_c_btc(gc_report *r, const ew_spec *sp) {
    check_pair(r, sp, gc_input(TT_SHAPE(3), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(2, 2, 3), sp->blo, sp->bhi));
    check_pair(r, sp, gc_input(TT_SHAPE(2, 2, 3), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(3), sp->blo, sp->bhi));
}

// A 0-dim tensor on either side.
static void bin_scalar_tensor(gc_report *r, const ew_spec *sp) {
    check_pair(r, sp, gc_input(TT_SCALAR_SHAPE, sp->alo, sp->ahi),
               gc_input(TT_SHAPE(2, 3), sp->blo, sp->bhi));
    check_pair(r, sp, gc_input(TT_SHAPE(2, 3), sp->alo, sp->ahi),
               gc_input(TT_SCALAR_SHAPE, sp->blo, sp->bhi));
}

// Transposed views: both, then one of them (4, 3).
static void bin_transposed(gc_report *r, const ew_spec *sp) {
    check_pair(r, sp, gc_input_transposed(TT_SHAPE(3, 4), 0, 1, sp->alo, sp->ahi),
               gc_input_transposed(TT_SHAPE(3, 4), 0, 1, sp->blo, sp->bhi));
    check_pair(r, sp, gc_input(TT_SHAPE(4, 3), sp->alo, sp->ahi),
               gc_input_transposed(TT_SHAPE(3, 4), 0, 1, sp->blo, sp->bhi));
}

// Every 2nd column of a (3, 6) with every 2nd row of a (5, 3) -> (3, 3); then a strided
// view broadcast against a (2, 1, 3).
static void bin_strided(gc_report *r, const ew_spec *sp) {
    check_pair(r, sp, gc_input_strided(TT_SHAPE(3, 6), 1, 2, sp->alo, sp->ahi),
               gc_input_strided(TT_SHAPE(5, 3), 0, 2, sp->blo, sp->bhi));
    check_pair(r, sp, gc_input_strided(TT_SHAPE(3, 6), 1, 2, sp->alo, sp->ahi),
               gc_input(TT_SHAPE(2, 1, 3), sp->blo, sp->bhi));
}

// Size-1 dims: (2, 1, 3) with (2, 1, 3), and (3, 1) with (1).
static void bin_size1(gc_report *r, const ew_spec *sp) {
    check_pair(r, sp, gc_input(TT_SHAPE(2, 1, 3), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(2, 1, 3), sp->blo, sp->bhi));
    check_pair(r, sp, gc_input(TT_SHAPE(3, 1), sp->alo, sp->ahi),
               gc_input(TT_SHAPE(1), sp->blo, sp->bhi));
}

// ---- unary and scalar ops ----

static void unary_check(gc_report *r, const ew_spec *sp, tt_tensor *x) {
    if (sp->flags & TT_EW_KINK0) away_from_zero(x, 0.1);
    gc_check(r, f_ew, (void *)sp, 1, &x, NULL);
}

static void un_contiguous(gc_report *r, const ew_spec *sp) {
    unary_check(r, sp, gc_input(TT_SHAPE(2, 3, 4), sp->alo, sp->ahi));
}
static void un_transposed(gc_report *r, const ew_spec *sp) {
    unary_check(r, sp, gc_input_transposed(TT_SHAPE(3, 4), 0, 1, sp->alo, sp->ahi));
}
static void un_strided(gc_report *r, const ew_spec *sp) {
    unary_check(r, sp, gc_input_strided(TT_SHAPE(3, 8), 1, 3, sp->alo, sp->ahi));
}

// ---- the generated cases: a spec and a runner per case, for every row ----

#define TT_BINARY(ID, name, saves, fl, a0, a1, b0, b1)                                        \
    static const ew_spec spec_##name = {.f2 = tt_##name, .flags = fl, .alo = a0, .ahi = a1,  \
                                        .blo = b0, .bhi = b1};                                \
    static void name##_contiguous(gc_report *r) { bin_contiguous(r, &spec_##name); }          \
    static void name##_b1c_1t1(gc_report *r) { bin_b1c_1t1(r, &spec_##name); }                \
    static void name##_c_btc(gc_report *r) { bin_c_btc(r, &spec_##name); }                    \
    static void name##_scalar_tensor(gc_report *r) { bin_scalar_tensor(r, &spec_##name); }    \
    static void name##_transposed(gc_report *r) { bin_transposed(r, &spec_##name); }          \
    static void name##_strided(gc_report *r) { bin_strided(r, &spec_##name); }                \
    static void name##_size1(gc_report *r) { bin_size1(r, &spec_##name); }
#define TT_UNARY_S(ID, name, saves, fl, a0, a1, sv)                                            \
    static const ew_spec spec_##name = {.fs = tt_##name, .flags = fl, .alo = a0, .ahi = a1,  \
                                        .s = sv};                                             \
    static void name##_contiguous(gc_report *r) { un_contiguous(r, &spec_##name); }           \
    static void name##_transposed(gc_report *r) { un_transposed(r, &spec_##name); }           \
    static void name##_strided(gc_report *r) { un_strided(r, &spec_##name); }
#define TT_UNARY(ID, name, saves, fl, a0, a1)                                                  \
    static const ew_spec spec_##name = {.f1 = tt_##name, .flags = fl, .alo = a0, .ahi = a1}; \
    static void name##_contiguous(gc_report *r) { un_contiguous(r, &spec_##name); }           \
    static void name##_transposed(gc_report *r) { un_transposed(r, &spec_##name); }           \
    static void name##_strided(gc_report *r) { un_strided(r, &spec_##name); }
#include "../tensor/ops.def"

// ---- hand-written cases ----

static tt_tensor *f_self(tt_tensor *const *in, int n, void *ctx) {  // f(x, x)
    (void)n;
    const ew_spec *sp = ctx;
    return sp->f2(in[0], in[0]);
}

// Equal operands: the gradient splits 0.5 / 0.5, which is what central differences see
// (moving a up moves the result, moving it down does not); first order only (the gradient
// jumps there). Also x with itself: 0.5 + 0.5, still a tie when x moves, so with
// gradgradcheck.
static void ties(gc_report *r, const ew_spec *sp) {
    tt_tensor *a = gc_input(TT_SHAPE(2, 3), -1, 1), *b = gc_input(TT_SHAPE(2, 3), -1, 1);
    for (int64_t i = 0; i < 6; i++) tt_set_at(b, i, tt_at(a, i));
    gc_check_first_order(r, f_ew, (void *)sp, 2, (tt_tensor *[]){a, b}, NULL);
    gc_check(r, f_self, (void *)sp, 1, &a, NULL);
}
static void maximum_ties(gc_report *r) { ties(r, &spec_maximum); }
static void minimum_ties(gc_report *r) { ties(r, &spec_minimum); }

static void scalar_check(gc_report *r, const ew_spec *sp, tt_tensor *x) {
    gc_check(r, f_ew, (void *)sp, 1, &x, NULL);
}

static tt_tensor *rsub(tt_tensor *x, double s) { return tt_rsub_scalar(s, x); }

static const ew_spec spec_sub_scalar = {.fs = tt_sub_scalar, .s = 0.75};
static const ew_spec spec_rsub_scalar = {.fs = rsub, .s = 2};
static const ew_spec spec_pow_scalar_neg = {.fs = tt_pow_scalar, .s = -1.5};
static const ew_spec spec_pow_scalar_int = {.fs = tt_pow_scalar, .s = 3};
static const ew_spec spec_pow_scalar_two = {.fs = tt_pow_scalar, .s = 2};
static const ew_spec spec_pow_scalar_half = {.fs = tt_pow_scalar, .s = 0.5};
static const ew_spec spec_pow_scalar_neg_half = {.fs = tt_pow_scalar, .s = -0.5};

// tt_sub_scalar records an add_scalar of -s; tt_rsub_scalar a neg and an add_scalar.
static void sub_scalar(gc_report *r) {
    scalar_check(r, &spec_sub_scalar, gc_input(TT_SHAPE(2, 3), -1, 1));
}
static void rsub_scalar(gc_report *r) {
    scalar_check(r, &spec_rsub_scalar, gc_input(TT_SHAPE(2, 3), -1, 1));
    scalar_check(r, &spec_rsub_scalar, gc_input_strided(TT_SHAPE(3, 8), 1, 3, -1, 1));
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
static void pow_scalar_exponent_half(gc_report *r) {  // sqrt and 1 / sqrt
    scalar_check(r, &spec_pow_scalar_half, gc_input(TT_SHAPE(2, 3), 0.5, 2));
    scalar_check(r, &spec_pow_scalar_neg_half, gc_input(TT_SHAPE(2, 3), 0.5, 2));
}

// Saturated sigmoid (|x| in [6, 10]): the derivative y (1 - y) from the output stays accurate.
static void sigmoid_saturated(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3), -10, 10);
    for (int64_t i = 0; i < 6; i++) {  // alternate signs, |x| >= 6
        double v = 6 + 4 * fabs(tt_at(x, i)) / 10;
        tt_set_at(x, i, i % 2 ? -v : v);
    }
    gc_check(r, f_ew, (void *)&spec_sigmoid, 1, &x, NULL);
}

// ---- the table ----

const gc_case gc_cases_elementwise[] = {
#define TT_BINARY(ID, name, ...)                                                               \
    {TT_OP_##ID, "contiguous", name##_contiguous}, {TT_OP_##ID, "broadcast_b1c_1t1",          \
    name##_b1c_1t1}, {TT_OP_##ID, "broadcast_c_btc", name##_c_btc},                           \
    {TT_OP_##ID, "scalar_tensor", name##_scalar_tensor}, {TT_OP_##ID, "transposed",           \
    name##_transposed}, {TT_OP_##ID, "strided", name##_strided}, {TT_OP_##ID, "size1",        \
    name##_size1},
#define TT_UNARY_S(ID, name, ...)                                                              \
    {TT_OP_##ID, "contiguous", name##_contiguous}, {TT_OP_##ID, "transposed",                 \
    name##_transposed}, {TT_OP_##ID, "strided", name##_strided},
#define TT_UNARY(ID, name, ...) TT_UNARY_S(ID, name, __VA_ARGS__)
#include "../tensor/ops.def"
    {TT_OP_MAXIMUM, "ties", maximum_ties},
    {TT_OP_MINIMUM, "ties", minimum_ties},
    {TT_OP_ADD_SCALAR, "sub_scalar", sub_scalar},
    {TT_OP_ADD_SCALAR, "rsub_scalar", rsub_scalar},
    {TT_OP_POW_SCALAR, "negative_exponent", pow_scalar_negative_exponent},
    {TT_OP_POW_SCALAR, "negative_base", pow_scalar_negative_base},
    {TT_OP_POW_SCALAR, "exponent_two", pow_scalar_exponent_two},
    {TT_OP_POW_SCALAR, "exponent_half", pow_scalar_exponent_half},
    {TT_OP_SIGMOID, "saturated", sigmoid_saturated},
    {0, NULL, NULL},
};

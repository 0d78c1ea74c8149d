// The differentiable backwards of the elementwise rows of ops.def (every TT_UNARY, TT_UNARY_S
// and TT_BINARY row), for create_graph: each input's gradient written with ops, following the
// first-order kernels (tensor/kernels/elementwise.inc) at kinks, ties and zeros. Masks are
// constants (comparisons, no gradient) applied with tt_where, so a masked-out branch that is
// inf or NaN gives 0 as the kernel does. The hand-written math ops are in their family files.
#include "autograd_internal.h"

#define SQRT1_2 0.70710678118654752440           // 1 / sqrt(2)
#define INV_SQRT_2PI 0.39894228040143267794      // 1 / sqrt(2 pi)
#define SQRT_2_OVER_PI 0.79788456080286535588    // sqrt(2 / pi)
#define TWO_OVER_SQRT_PI 1.12837916709551257390  // 2 / sqrt(pi)
#define GELU_TANH_C 0.044715                     // GPT-2's cubic coefficient

// ---- helpers ----

// A 0-dim constant of t's dtype.
static tt_tensor *constant(const tt_tensor *t, double v) { return tt_scalar(t->dtype, v); }

// cond ? 0 : a (cond a constant mask; a broadcast against it).
static tt_tensor *zero_where(tt_tensor *cond, tt_tensor *a) {
    return tt_where(cond, constant(a, 0), a);
}

// The scalar of a TT_UNARY_S row: the first field of the generated rows' ctx (scalar_ctx in
// ops_elementwise.c; 0 for the TT_UNARY rows).
static double scalar_of(const tt_node *n) { return *(const double *)n->ctx; }

// ---- derivatives of the activations, as tensors of x ----

// gelu'(x) = Phi(x) + x phi(x), Phi(x) = 0.5 (1 + erf(x / sqrt 2)), phi(x) = e^(-x^2 / 2) /
// sqrt(2 pi): the f64 kernel's order of operations.
static tt_tensor *gelu_grad(tt_tensor *x) {
    tt_tensor *cdf = tt_mul_scalar(tt_add_scalar(tt_erf(tt_mul_scalar(x, SQRT1_2)), 1), 0.5);
    tt_tensor *pdf = tt_exp(tt_mul(tt_mul_scalar(x, -0.5), x));
    return tt_add(cdf, tt_mul(tt_mul_scalar(x, INV_SQRT_2PI), pdf));
}

// gelu_tanh'(x) = s (1 + 2 x (1 - s) u'), s = sigmoid(2 u), u = sqrt(2/pi) (x + c x^3),
// u' = sqrt(2/pi) (1 + 3 c x^2): the kernel's form (elementwise.c, gelu_tanh_grad).
static tt_tensor *gelu_tanh_grad(tt_tensor *x) {
    tt_tensor *cube = tt_mul(tt_mul(tt_mul_scalar(x, GELU_TANH_C), x), x);
    tt_tensor *u = tt_mul_scalar(tt_add(x, cube), SQRT_2_OVER_PI);
    tt_tensor *du = tt_add_scalar(tt_mul(tt_mul_scalar(x, 3 * GELU_TANH_C), x), 1);
    du = tt_mul_scalar(du, SQRT_2_OVER_PI);
    tt_tensor *s = tt_sigmoid(tt_mul_scalar(u, 2));
    tt_tensor *t = tt_mul(tt_mul(tt_mul_scalar(x, 2), tt_rsub_scalar(1, s)), du);
    return tt_mul(s, tt_add_scalar(t, 1));
}

// silu'(x) = s (1 + x (1 - s)), s = sigmoid(x).
static tt_tensor *silu_grad(tt_tensor *x) {
    tt_tensor *s = tt_sigmoid(x);
    return tt_mul(s, tt_add_scalar(tt_mul(x, tt_rsub_scalar(1, s)), 1));
}

// ---- unary rows ----

// g p x^(p-1); g 0 when p == 0 (PyTorch).
static tt_tensor *pow_scalar_grad(tt_tensor *g, tt_tensor *x, double p) {
    if (p == 0) return tt_mul_scalar(g, 0);
    return tt_mul(tt_mul_scalar(g, p), tt_pow_scalar(x, p - 1));
}

// g (x > 0 ? 1 : x < 0 ? -1 : 0): 0 at 0 and at NaN.
static tt_tensor *abs_grad(tt_tensor *g, tt_tensor *x) {
    tt_tensor *neg = tt_where(tt_lt_scalar(x, 0), tt_neg(g), constant(g, 0));
    return tt_where(tt_gt_scalar(x, 0), g, neg);
}

// x <= 0 ? g s e^x : g (so s at 0; g at NaN). e^x reads x only where x <= 0 (e^0 elsewhere), so
// no overflow in the branch the mask drops.
static tt_tensor *elu_grad(tt_tensor *g, tt_tensor *x, double s) {
    tt_tensor *neg = tt_le_scalar(x, 0);
    tt_tensor *e = tt_exp(tt_where(neg, x, constant(x, 0)));
    return tt_where(neg, tt_mul(tt_mul_scalar(g, s), e), g);
}

// g f'(x; s) for unary row n, from x = n->inputs[0], or from y = n->out for the rows flagged
// TT_EW_OUT (their first-order backward reads y, and x may have changed since).
static tt_tensor *unary_grad(const tt_node *n, tt_tensor *g) {
    tt_tensor *x = n->inputs[0], *y = n->out;
    double s = scalar_of(n);
    switch (n->op) {
        case TT_OP_ADD_SCALAR: return g;
        case TT_OP_MUL_SCALAR: return tt_mul_scalar(g, s);
        case TT_OP_DIV_SCALAR: return tt_div_scalar(g, s);
        case TT_OP_POW_SCALAR: return pow_scalar_grad(g, x, s);
        case TT_OP_NEG: return tt_neg(g);
        case TT_OP_EXP: return tt_mul(g, y);                            // y
        case TT_OP_LOG: return tt_div(g, x);                            // 1 / x
        case TT_OP_SQRT: return tt_div(g, tt_mul_scalar(y, 2));         // 1 / (2 y)
        case TT_OP_RSQRT: return tt_mul(tt_mul(tt_mul(tt_mul_scalar(g, -0.5), y), y), y);
        case TT_OP_ABS: return abs_grad(g, x);
        case TT_OP_TANH: return tt_mul(g, tt_rsub_scalar(1, tt_square(y)));  // 1 - y^2
        case TT_OP_SIGMOID: return tt_mul(tt_mul(g, y), tt_rsub_scalar(1, y));  // y (1 - y)
        case TT_OP_RELU: return zero_where(tt_le_scalar(x, 0), g);  // 0 at 0; g at NaN
        case TT_OP_GELU: return tt_mul(g, gelu_grad(x));
        case TT_OP_GELU_TANH: return tt_mul(g, gelu_tanh_grad(x));
        case TT_OP_SILU: return tt_mul(g, silu_grad(x));
        case TT_OP_SQUARE: return tt_mul(tt_mul_scalar(x, 2), g);
        case TT_OP_SIN: return tt_mul(g, tt_cos(x));
        case TT_OP_COS: return tt_mul(tt_neg(g), tt_sin(x));
        case TT_OP_LOG1P: return tt_div(g, tt_add_scalar(x, 1));
        case TT_OP_EXPM1: return tt_mul(g, tt_add_scalar(y, 1));  // e^x = y + 1
        case TT_OP_RECIPROCAL: return tt_mul(tt_mul(tt_neg(g), y), y);  // -y^2
        case TT_OP_ERF:  // 2 / sqrt(pi) e^(-x^2)
            return tt_mul(tt_mul_scalar(g, TWO_OVER_SQRT_PI), tt_exp(tt_neg(tt_square(x))));
        case TT_OP_SIGN:
        case TT_OP_FLOOR:
        case TT_OP_CEIL:
        case TT_OP_ROUND: return tt_mul_scalar(g, 0);  // piecewise constant; still of g
        case TT_OP_LEAKY_RELU:  // x > 0 ? g : g s (so s at 0 and at NaN)
            return tt_where(tt_gt_scalar(x, 0), g, tt_mul_scalar(g, s));
        case TT_OP_ELU: return elu_grad(g, x, s);
        default: break;
    }
    tt_fatal(__FILE__, __LINE__, __func__, "elementwise row '%s' has no case here: add its "
             "derivative (with ops) to unary_grad", tt_op_name(n->op));
}

// dx = g f'(x; s) for every TT_UNARY and TT_UNARY_S row.
static void unary2(tt_node *n) {
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(n->inputs[0], unary_grad(n, n->grad));
}

// ---- binary rows ----

// d(a^b)/da = b a^(b-1), 0 where b == 0; d(a^b)/db = a^b ln a, 0 where a == 0 and b >= 0
// (PyTorch). Where the mask holds, the branch is computed at a (or b) = 1 instead, so that
// neither it nor its own gradient is inf or NaN there.
static tt_tensor *pow_grad(tt_tensor *g, tt_tensor *a, tt_tensor *b, int wrt) {
    tt_tensor *one = constant(a, 1);
    if (wrt == 0) {
        tt_tensor *m = tt_eq_scalar(b, 0);
        tt_tensor *bs = tt_where(m, one, b);
        return zero_where(m, tt_mul(tt_mul(g, bs), tt_pow(a, tt_add_scalar(bs, -1))));
    }
    tt_tensor *m = tt_logical_and(tt_eq_scalar(a, 0), tt_ge_scalar(b, 0));
    tt_tensor *as = tt_where(m, one, a);
    return zero_where(m, tt_mul(tt_mul(g, tt_pow(as, b)), tt_log(as)));
}

// maximum (is_max) / minimum: g to the larger (smaller) side, 0 to the other, g / 2 to each
// on a tie; a NaN on either side gives both sides g (neither comparison holds).
static tt_tensor *extreme_grad(tt_tensor *g, tt_tensor *a, tt_tensor *b, int wrt, bool is_max) {
    tt_tensor *self = wrt == 0 ? a : b, *other = wrt == 0 ? b : a;
    tt_tensor *loses = is_max ? tt_lt(self, other) : tt_gt(self, other);
    return zero_where(loses, tt_where(tt_eq(a, b), tt_mul_scalar(g, 0.5), g));
}

// g df/da (wrt 0) or g df/db (wrt 1) over the output's shape for binary row n.
static tt_tensor *binary_grad(const tt_node *n, tt_tensor *g, int wrt) {
    tt_tensor *a = n->inputs[0], *b = n->inputs[1];
    switch (n->op) {
        case TT_OP_ADD: return g;
        case TT_OP_SUB: return wrt == 0 ? g : tt_neg(g);
        case TT_OP_MUL: return tt_mul(g, wrt == 0 ? b : a);
        case TT_OP_DIV:  // 1 / b and -a / b^2
            return wrt == 0 ? tt_div(g, b) : tt_div(tt_mul(tt_neg(g), tt_div(a, b)), b);
        case TT_OP_POW: return pow_grad(g, a, b, wrt);
        case TT_OP_MAXIMUM: return extreme_grad(g, a, b, wrt, true);
        case TT_OP_MINIMUM: return extreme_grad(g, a, b, wrt, false);
        default: break;
    }
    tt_fatal(__FILE__, __LINE__, __func__, "elementwise row '%s' has no case here: add its "
             "derivatives (with ops) to binary_grad", tt_op_name(n->op));
}

// da = g df/da, db = g df/db for every TT_BINARY row, summed down to a's and b's shapes.
static void binary2(tt_node *n) {
    for (int i = 0; i < 2; i++)
        if (tt__input_needs_grad(n, i)) tt__accum_grad(n->inputs[i], binary_grad(n, n->grad, i));
}

// ---- the table: every elementwise row of ops.def ----

const tt__grad2_row tt__grad2_elementwise[] = {
#define TT_UNARY(ID, ...) {TT_OP_##ID, unary2},
#define TT_UNARY_S(ID, ...) {TT_OP_##ID, unary2},
#define TT_BINARY(ID, ...) {TT_OP_##ID, binary2},
#include "../tensor/ops.def"
    {TT_OP_COUNT, NULL},
};

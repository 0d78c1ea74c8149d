// The differentiable backwards of the elementwise ops (the generated rows of ops.def and the
// math ops), for create_graph: each input's gradient written with ops.
#include "autograd_internal.h"

static tt_tensor *grad_of_out(const tt_node *n) { return n->grad; }

static void add2(tt_node *n) {
    tt_tensor *g = grad_of_out(n);
    for (int i = 0; i < 2; i++)
        if (tt__input_needs_grad(n, i)) tt__accum_grad(n->inputs[i], g);
}

static void mul2(tt_node *n) {
    tt_tensor *a = n->inputs[0], *b = n->inputs[1], *g = n->grad;
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(a, tt_mul(g, b));
    if (tt__input_needs_grad(n, 1)) tt__accum_grad(b, tt_mul(g, a));
}

static void mul_scalar2(tt_node *n) {
    const double *s = n->ctx;  // the scalar ctx of the generated rows: its first field
    if (tt__input_needs_grad(n, 0)) tt__accum_grad(n->inputs[0], tt_mul_scalar(n->grad, *s));
}

const tt__grad2_row tt__grad2_elementwise[] = {
    {TT_OP_ADD, add2},
    {TT_OP_MUL, mul2},
    {TT_OP_MUL_SCALAR, mul_scalar2},
    {TT_OP_COUNT, NULL},
};

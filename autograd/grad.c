// torch.autograd.grad (gradients returned, not added to .grad) and the table of differentiable
// backwards that create_graph runs.
#include "autograd_internal.h"

// ---- the differentiable backwards ----

static const tt__grad2_row *const grad2_families[] = {
    tt__grad2_elementwise, tt__grad2_math,  tt__grad2_reduce, tt__grad2_matmul,
    tt__grad2_nn,          tt__grad2_shape, tt__grad2_layout, tt__grad2_compare,
    tt__grad2_index,       tt__grad2_conv,  tt__grad2_pool,   tt__grad2_function,
};

tt__backward_fn tt__backward2_of(tt_op op) {
    for (size_t f = 0; f < sizeof grad2_families / sizeof grad2_families[0]; f++)
        for (const tt__grad2_row *r = grad2_families[f]; r->backward2; r++)
            if (r->op == op) return r->backward2;
    return NULL;
}

bool tt_op_twice_differentiable(tt_op op) {
    TT_CHECK(op >= 0 && op < TT_OP_COUNT, "invalid op %d", (int)op);
    return tt__backward2_of(op) != NULL;
}

tt_tensor *tt__sum_to(tt_tensor *g, const tt_tensor *x) {
    if (tt_same_shape(g, x)) return g;
    int lead = g->ndim - x->ndim, dims[TT_MAX_DIMS], nd = 0;
    TT_CHECK(lead >= 0, "gradient %s has fewer dims than its tensor %s", tt__shape(g),
             tt__shape(x));
    for (int d = 0; d < g->ndim; d++)
        if (d < lead || (x->shape[d - lead] == 1 && g->shape[d] != 1)) dims[nd++] = d;
    tt_tensor *s = nd ? tt_sum(g, nd, dims, true) : g;
    return tt_reshape(s, x->ndim, x->shape);
}

// ---- tt_autograd_grad ----

// Aborts unless input i can be differentiated against.
static void check_input(tt_tensor *const *inputs, int i) {
    TT_CHECK_IN("tt_autograd_grad", inputs[i], "input %d is NULL", i);
    tt__check_live(inputs[i], "tt_autograd_grad");
    TT_CHECK_IN("tt_autograd_grad", inputs[i]->requires_grad,
                "input %d %s does not require grad, so it has no gradient (call "
                "tt_set_requires_grad on it, or compute it from a tensor that requires grad)",
                i, tt__shape(inputs[i]));
}

void tt_autograd_grad(int n_outputs, tt_tensor *const *outputs, tt_tensor *const *grad_outputs,
                      int n_inputs, tt_tensor *const *inputs, tt_tensor **grads,
                      const tt_grad_opts *opts) {
    TT_CHECK(n_outputs > 0 && outputs, "no outputs to differentiate");
    TT_CHECK(n_inputs > 0 && inputs && grads, "no inputs to differentiate against");
    tt_grad_opts o = opts ? *opts : (tt_grad_opts){0};
    for (int i = 0; i < n_inputs; i++) check_input(inputs, i);
    tt__capture cap = {n_inputs, inputs, TT_CALLOC((size_t)n_inputs, sizeof(tt_tensor *))};
    tt__capture *prev = tt__cap;
    tt__cap = &cap;
    tt__run_backward(n_outputs, outputs, grad_outputs, &o, __func__);
    tt__cap = prev;
    for (int i = 0; i < n_inputs; i++) {
        tt_tensor *g = cap.grads[i];
        for (int j = 0; j < i && !g; j++)  // a leaf named twice: its slot is the first one's
            if (inputs[j] == inputs[i]) g = tt_retain(cap.grads[j]);
        TT_CHECK_IN(__func__, g || o.allow_unused,
                    "input %d %s was not used to compute the outputs (no gradient reached it); "
                    "set allow_unused in tt_grad_opts to get NULL for it",
                    i, tt__shape(inputs[i]));
        grads[i] = g ? tt__autorelease(g) : NULL;
    }
    tt_free(cap.grads);
}

// Gradcheck cases of activation checkpointing (autograd/checkpoint.c): a function of two inputs
// through tt_activation_checkpoint, and one that reaches a third leaf through its ctx (the
// gradcheck's input 2, which the checkpoint finds as a parameter), with dropout replayed from
// an rng and a checkpoint nested inside.
#include "gc_util.h"

// tanh(a @ b) * b[0, 0]: both inputs read twice, a product and an elementwise op.
static tt_tensor *inner(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    (void)ctx;
    tt_tensor *b00 = tt_reshape(tt_slice(tt_slice(in[1], 0, 0, 1, 1), 1, 0, 1, 1), 0, NULL);
    return tt_mul(tt_tanh(tt_matmul(in[0], in[1])), b00);
}

static tt_tensor *f_two_inputs(tt_tensor *const *in, int n, void *ctx) {
    (void)ctx;
    return tt_activation_checkpoint(inner, NULL, n, in, NULL);
}

static void checkpoint_two_inputs(gc_report *r) {
    tt_tensor *in[2] = {gc_input(TT_SHAPE(3, 4), -1, 1), gc_input(TT_SHAPE(4, 2), -1, 1)};
    gc_check(r, f_two_inputs, NULL, 2, in, NULL);
}

// A weight w reached through ctx (not an input of the checkpoint), dropout on an rng whose
// state each call starts from, and a checkpoint inside the checkpoint.
typedef struct param_ctx {
    tt_tensor *w;
    tt_rng rng;
} param_ctx;

static tt_tensor *with_param_inner(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    return tt_sigmoid(tt_matmul(in[0], ((param_ctx *)ctx)->w));
}

static tt_tensor *with_param(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    param_ctx *c = ctx;
    tt_tensor *h = tt_activation_checkpoint(with_param_inner, c, 1, in, NULL);
    return tt_dropout(tt_square(h), 0.5, true, &c->rng);
}

// ctx: a param_ctx that outlives the backward (the checkpoint keeps a pointer to its rng);
// every call starts the rng afresh, so each evaluation of f draws the same masks.
static tt_tensor *f_with_param(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    param_ctx *c = ctx;
    c->w = in[1];
    c->rng = tt_rng_new(7);
    return tt_activation_checkpoint(with_param, c, 1, in, &c->rng);
}

static void checkpoint_param_through_ctx(gc_report *r) {
    tt_tensor *in[2] = {gc_input(TT_SHAPE(2, 3), -1, 1), gc_input(TT_SHAPE(3, 5), -1, 1)};
    param_ctx c = {0};
    gc_check(r, f_with_param, &c, 2, in, NULL);
}

const gc_case gc_cases_checkpoint[] = {
    {TT_OP_CHECKPOINT, "two_inputs", checkpoint_two_inputs},
    {TT_OP_CHECKPOINT, "param_through_ctx_dropout_nested", checkpoint_param_through_ctx},
    {0},
};

// Gradcheck cases of custom functions (tt_function): a Swish with its own backward, a function
// with two differentiable outputs and a non-differentiable one (both used, and only the
// second), and one that saves its output.
#include "gc_util.h"
#include "swish.h"

// ---- swish (tests/swish.h) ----

static tt_tensor *f_swish(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_function_apply(&swish, 1, in, NULL);
}

static void swish_contiguous(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(2, 3), -3, 3);
    gc_check(r, f_swish, NULL, 1, &x, NULL);
}

static void swish_transposed(gc_report *r) {
    tt_tensor *x = gc_input_transposed(TT_SHAPE(3, 4), 0, 1, -3, 3);
    gc_check(r, f_swish, NULL, 1, &x, NULL);
}

// ---- three outputs: a b (scaled by the data), a - b, and the mask a > b ----

typedef struct scale_args {
    double scale;
} scale_args;

static void three_forward(tt_function_ctx *ctx, tt_tensor *const *in, int n, tt_tensor **out) {
    (void)n;
    const scale_args *a = tt_function_data(ctx);
    tt_save_for_backward(ctx, 2, in);
    out[0] = tt_mul_scalar(tt_mul(in[0], in[1]), a->scale);
    out[1] = tt_sub(in[0], in[1]);
    out[2] = tt_gt(in[0], in[1]);
    tt_mark_non_differentiable(ctx, out[2]);
}

static void three_backward(tt_function_ctx *ctx, tt_tensor *const *gout, tt_tensor **gin) {
    const scale_args *a = tt_function_data(ctx);
    tt_tensor *x = tt_saved_tensor(ctx, 0), *y = tt_saved_tensor(ctx, 1);
    ck_assert_ptr_null(gout[2]);
    tt_tensor *g0 = tt_mul_scalar(gout[0], a->scale);
    if (tt_needs_input_grad(ctx, 0)) gin[0] = tt_add(tt_mul(g0, y), gout[1]);
    if (tt_needs_input_grad(ctx, 1)) gin[1] = tt_sub(tt_mul(g0, x), gout[1]);
}

static const tt_function three = {"three", 3, sizeof(scale_args), three_forward, three_backward};

typedef struct three_ctx {
    bool first;  // use output 0 (else only output 1)
} three_ctx;

static tt_tensor *f_three(tt_tensor *const *in, int n, void *ctx) {
    (void)n;
    tt_tensor *out[3];
    tt_function_apply_n(&three, 2, in, &(scale_args){1.5}, out);
    ck_assert(!out[2]->requires_grad);
    tt_tensor *d2 = tt_mul(out[1], out[1]);
    return ((three_ctx *)ctx)->first ? tt_add(tt_mul(out[0], out[0]), d2) : d2;
}

static void three_both_outputs(gc_report *r) {
    tt_tensor *in[2] = {gc_input(TT_SHAPE(2, 3), -1, 1), gc_input(TT_SHAPE(2, 3), -1, 1)};
    gc_check(r, f_three, &(three_ctx){true}, 2, in, NULL);
}

static void three_second_output_only(gc_report *r) {
    tt_tensor *in[2] = {gc_input(TT_SHAPE(4), -1, 1), gc_input(TT_SHAPE(4), -1, 1)};
    gc_check(r, f_three, &(three_ctx){false}, 2, in, NULL);
}

// ---- exp that saves its output (read back through the node, with its history) ----

static void exp_forward(tt_function_ctx *ctx, tt_tensor *const *in, int n, tt_tensor **out) {
    (void)n;
    out[0] = tt_exp(in[0]);
    tt_save_for_backward(ctx, 1, out);
}

static void exp_backward(tt_function_ctx *ctx, tt_tensor *const *gout, tt_tensor **gin) {
    gin[0] = tt_mul(gout[0], tt_saved_tensor(ctx, 0));
}

static const tt_function my_exp = {"my_exp", 1, 0, exp_forward, exp_backward};

static tt_tensor *f_my_exp(tt_tensor *const *in, int n, void *ctx) {
    (void)n, (void)ctx;
    return tt_function_apply(&my_exp, 1, in, NULL);
}

static void exp_saves_output(gc_report *r) {
    tt_tensor *x = gc_input(TT_SHAPE(5), -2, 2);
    gc_check(r, f_my_exp, NULL, 1, &x, NULL);
}

const gc_case gc_cases_function[] = {
    {TT_OP_FUNCTION, "swish_contiguous", swish_contiguous},
    {TT_OP_FUNCTION, "swish_transposed", swish_transposed},
    {TT_OP_FUNCTION, "saves_its_output", exp_saves_output},
    {TT_OP_FUNCTION_OUTPUT, "three_outputs_both_used", three_both_outputs},
    {TT_OP_FUNCTION_OUTPUT, "three_outputs_second_only", three_second_output_only},
    {0},
};

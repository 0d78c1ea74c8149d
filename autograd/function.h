// tinytorch.c autograd, extended: gradients as values (torch.autograd.grad), higher-order
// gradients (create_graph), custom functions with their own backward (torch.autograd.Function)
// and torch.autograd.functional's vjp, jvp, hvp, jacobian and hessian. Included by autograd.h.
//
// A gradient penalty (WGAN-GP), as in PyTorch:
//
//     tt_tensor *score = tt_sum_all(critic(x_hat));
//     tt_tensor *g;                                            // d score / d x_hat, with a graph
//     tt_autograd_grad(1, &score, NULL, 1, &x_hat, &g, &(tt_grad_opts){.create_graph = true});
//     tt_tensor *norm = tt_vector_norm(tt_flatten(g, 1, -1), 2, 1, (int[]){1}, false);
//     tt_tensor *gp = tt_mean_all(tt_square(tt_add_scalar(norm, -1)));
//     tt_backward(tt_add(loss, tt_mul_scalar(gp, 10)));      // through the gradient too
#ifndef TT_AUTOGRAD_FUNCTION_H
#define TT_AUTOGRAD_FUNCTION_H

#ifdef __cplusplus
extern "C" {
#endif

// ---- gradients as values (autograd/backward.c, autograd/grad.c) ----

typedef struct tt_grad_opts {
    // Keep the graph for another backward through it (tt_backward_ex's flag). create_graph
    // keeps it anyway, as PyTorch's retain_graph defaults to create_graph.
    bool retain_graph;
    // Record the backward itself: each op's gradient is computed with ops that go on the tape,
    // so the gradients returned (or added to .grad) can be differentiated again. Every op the
    // backward passes must have a differentiable backward (tt_op_twice_differentiable); one
    // that has none aborts, naming the op.
    bool create_graph;
    // tt_autograd_grad: an input the outputs do not depend on gets NULL instead of an abort.
    bool allow_unused;
} tt_grad_opts;

// torch.autograd.grad: grads[i] = the sum over outputs k of grad_outputs[k]^T d outputs[k] /
// d inputs[i], returned (a new reference each, owned by the scope) instead of added to .grad;
// no tensor's .grad changes. grad_outputs may be NULL, or hold NULL entries, for one-element
// outputs (seeded with 1). The inputs must require grad; they may be leaves or any tensor of the
// graph (its gradient is then the one flowing into it). Only the nodes that lead to an input
// run; an input's gradient is taken before its hooks would run (a leaf's never do), and
// tt_backward_set_grad_ready's callback is not called. Without
// allow_unused an input the outputs do not reach aborts. opts NULL: all false. A graph holding
// a tt_activation_checkpoint is refused (call tt_backward).
void tt_autograd_grad(int n_outputs, tt_tensor *const *outputs, tt_tensor *const *grad_outputs,
                      int n_inputs, tt_tensor *const *inputs, tt_tensor **grads,
                      const tt_grad_opts *opts);
// torch.autograd.backward: tt_backward_ex for several outputs at once (their gradients add up
// in the leaves' .grad), with create_graph. grad_outputs as in tt_autograd_grad.
void tt_autograd_backward(int n, tt_tensor *const *outputs, tt_tensor *const *grad_outputs,
                          const tt_grad_opts *opts);
// Whether op has a differentiable backward (create_graph can pass through it).
bool tt_op_twice_differentiable(tt_op op);
// Whether every op of t's graph has one; if not and op is not NULL, *op names the first one a
// backward from t would reach. Like tt_graph_leaves, call it before the graph is freed.
bool tt_graph_twice_differentiable(tt_tensor *t, const char **op);

// ---- custom functions (autograd/function.c) ----
// torch.autograd.Function: an op a program defines with its own forward and backward, recorded
// on the tape like a built-in one.
//
//     static void swish_forward(tt_function_ctx *ctx, tt_tensor *const *in, int n,
//                               tt_tensor **out) {
//         tt_save_for_backward(ctx, 1, in);
//         out[0] = tt_mul(in[0], tt_sigmoid(in[0]));
//     }
//     static void swish_backward(tt_function_ctx *ctx, tt_tensor *const *gout,
//                                tt_tensor **gin) {
//         tt_tensor *x = tt_saved_tensor(ctx, 0), *s = tt_sigmoid(x);
//         // d/dx x s(x) = s (1 + x (1 - s))
//         gin[0] = tt_mul(gout[0], tt_mul(s, tt_add_scalar(tt_mul(x, tt_rsub_scalar(1, s)), 1)));
//     }
//     static const tt_function swish = {"swish", 1, 0, swish_forward, swish_backward};
//     tt_tensor *y = tt_function_apply(&swish, 1, &x, NULL);
//
// forward runs with grad mode off and writes n_outputs new tensors to out. backward gets one
// gradient per output (zeros for an output no gradient reached; NULL for a non-differentiable
// one) and writes gin[i] for each input that needs one (tt_needs_input_grad), shaped like the
// input (a broadcastable shape is summed down), or leaves it NULL (no gradient). backward runs
// with grad mode on under create_graph: written with ops that have a differentiable backward
// on the inputs and outputs it saved, the function is then twice differentiable too (a tensor
// forward made otherwise has no history: its dependence on the inputs is not seen, as in
// PyTorch). tt_gradcheck and tt_gradgradcheck check a function like any op.
typedef struct tt_function_ctx tt_function_ctx;
typedef struct tt_function {
    const char *name;  // names its node in messages and the profiler ("swish")
    int n_outputs;     // 0 is taken as 1
    size_t data_size;  // bytes of tt_function_data: the apply's args, then whatever forward
                       // keeps there for backward
    void (*forward)(tt_function_ctx *ctx, tt_tensor *const *inputs, int n, tt_tensor **out);
    void (*backward)(tt_function_ctx *ctx, tt_tensor *const *grad_outputs, tt_tensor **grad_inputs);
} tt_function;

// Runs f on the n inputs (NULL entries allowed) and returns its output (n_outputs == 1), a new
// reference owned by the scope. args (NULL: zeros) is copied into tt_function_data first.
tt_tensor *tt_function_apply(const tt_function *f, int n, tt_tensor *const *inputs,
                             const void *args);
// The same for any n_outputs: out gets f->n_outputs new references.
void tt_function_apply_n(const tt_function *f, int n, tt_tensor *const *inputs, const void *args,
                         tt_tensor **out);
// ctx.save_for_backward: inputs, outputs or any tensor forward made. backward reads them with
// tt_saved_tensor; one changed in place in between aborts there, as built-in saves do.
void tt_save_for_backward(tt_function_ctx *ctx, int n, tt_tensor *const *tensors);
tt_tensor *tt_saved_tensor(tt_function_ctx *ctx, int i);  // ctx.saved_tensors[i], borrowed
int tt_saved_count(const tt_function_ctx *ctx);
// ctx.needs_input_grad[i]: input i requires grad.
bool tt_needs_input_grad(const tt_function_ctx *ctx, int i);
// ctx.mark_non_differentiable: output t (one of forward's) gets no gradient and does not
// require grad (indices, masks).
void tt_mark_non_differentiable(tt_function_ctx *ctx, tt_tensor *t);
// The function's data_size bytes (its args, as apply copied them).
void *tt_function_data(tt_function_ctx *ctx);

// ---- torch.autograd.functional (autograd/functional.c) ----
// f as tt_gradcheck takes it: one output from n inputs. Each returns new references owned by
// the scope; the inputs are not changed (f runs on detached copies that require grad), and
// with create_graph the results keep a graph back to the inputs.

// vjp[i] = v^T d f / d inputs[i]; v shaped like f's output (NULL for a one-element output).
// *out (may be NULL) gets f's output.
void tt_vjp(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs, tt_tensor *v,
            tt_tensor **out, tt_tensor **vjp, bool create_graph);
// jvp = sum_i d f / d inputs[i] v[i] (the double-backward trick: two reverse passes); v[i]
// shaped like inputs[i], NULL for an input held fixed.
tt_tensor *tt_jvp(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs,
                  tt_tensor *const *v, tt_tensor **out, bool create_graph);
// hvp[i] = sum_j d^2 f / d inputs[i] d inputs[j] v[j] for a one-element f (Hessian-vector
// product, as torch's hvp; the Hessian is symmetric, so this is also vhp).
void tt_hvp(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs, tt_tensor *const *v,
            tt_tensor **out, tt_tensor **hvp, bool create_graph);
// jac[i]: shape f's output ++ inputs[i]'s shape; one backward per output element.
void tt_jacobian(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs, tt_tensor **jac,
                 bool create_graph);
// The Hessian of a one-element f in one input x: shape x ++ x.
tt_tensor *tt_hessian(tt_gradcheck_fn f, void *ctx, tt_tensor *x);

// ---- gradgradcheck (autograd/gradcheck.c) ----
// torch.autograd.gradgradcheck: tt_gradcheck of the function (inputs, v) -> the gradients
// v^T d f / d inputs computed with create_graph, i.e. the second derivatives of f against
// central differences of its (first-order) gradient. v is random (seeded: reproducible).
tt_gradcheck_result tt_gradgradcheck(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs,
                                     const tt_gradcheck_opts *opts);

#ifdef __cplusplus
}
#endif

#endif  // TT_AUTOGRAD_FUNCTION_H

// torch.autograd.functional: vjp, jvp, hvp, jacobian and hessian, built on tt_autograd_grad.
#include "autograd_internal.h"

// What f runs on: an input that requires grad as is under create_graph (the results keep a
// graph back to it), otherwise a detached alias that requires grad. xs gets n entries.
static void prepare(int n, tt_tensor *const *inputs, bool create_graph, tt_tensor **xs) {
    for (int i = 0; i < n; i++) {
        TT_CHECK(inputs[i] && tt_dtype_is_float(inputs[i]->dtype),
                 "input %d must be a float tensor", i);
        xs[i] = create_graph && inputs[i]->requires_grad
                    ? inputs[i]
                    : tt_set_requires_grad(tt_detach(inputs[i]), true);
    }
}

// tt_autograd_grad of y with unused inputs given zeros (torch.autograd.functional's answer).
static void grads_or_zeros(tt_tensor *y, tt_tensor *v, int n, tt_tensor *const *xs, tt_tensor **out,
                           bool create_graph, bool retain_graph) {
    if (!y->requires_grad) {
        for (int i = 0; i < n; i++) out[i] = tt_zeros_like(xs[i]);
        return;
    }
    tt_grad_opts o = {
        .retain_graph = retain_graph, .create_graph = create_graph, .allow_unused = true};
    tt_autograd_grad(1, &y, &v, n, xs, out, &o);
    for (int i = 0; i < n; i++)
        if (!out[i]) out[i] = tt_zeros_like(xs[i]);
}

// sum_i <a[i], b[i]> over the pairs where b[i] is not NULL (NULL when there is none).
static tt_tensor *dot_all(int n, tt_tensor *const *a, tt_tensor *const *b) {
    tt_tensor *s = NULL;
    for (int i = 0; i < n; i++) {
        if (!b || !b[i]) continue;
        TT_CHECK(tt_same_shape(a[i], b[i]), "v[%d] %s must match input %d %s", i, tt__shape(b[i]),
                 i, tt__shape(a[i]));
        tt_tensor *d = tt_sum_all(tt_mul(a[i], b[i]));
        s = s ? tt_add(s, d) : d;
    }
    return s;
}

static tt_tensor *run(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *xs) {
    bool prev = tt_set_grad_enabled(true);
    tt_tensor *y = f(xs, n, ctx);
    tt_set_grad_enabled(prev);
    TT_CHECK(y, "the function returned NULL");
    return y;
}

void tt_vjp(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs, tt_tensor *v,
            tt_tensor **out, tt_tensor **vjp, bool create_graph) {
    tt_tensor **xs = TT_MALLOC((size_t)n * sizeof *xs);
    prepare(n, inputs, create_graph, xs);
    tt_tensor *y = run(f, ctx, n, xs);
    grads_or_zeros(y, v, n, xs, vjp, create_graph, false);
    if (out) *out = create_graph ? y : tt_detach(y);
    tt_free(xs);
}

tt_tensor *tt_jvp(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs,
                  tt_tensor *const *v, tt_tensor **out, bool create_graph) {
    tt_tensor **xs = TT_MALLOC((size_t)n * sizeof *xs), **g = TT_MALLOC((size_t)n * sizeof *g);
    prepare(n, inputs, create_graph, xs);
    tt_tensor *y = run(f, ctx, n, xs);
    // g = J^T u is linear in u; the gradient of <g, v> against u is J v.
    tt_tensor *u = tt_set_requires_grad(tt_zeros_like(y), true), *jv = NULL;
    if (y->requires_grad) {
        bool prev = tt_set_grad_enabled(true);
        grads_or_zeros(y, u, n, xs, g, true, false);
        tt_tensor *s = dot_all(n, g, v);
        tt_set_grad_enabled(prev);
        if (s) grads_or_zeros(s, NULL, 1, &u, &jv, create_graph, false);
    }
    if (out) *out = create_graph ? y : tt_detach(y);
    tt_free(xs);
    tt_free(g);
    return jv ? jv : tt_zeros_like(y);
}

void tt_hvp(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs, tt_tensor *const *v,
            tt_tensor **out, tt_tensor **hvp, bool create_graph) {
    tt_tensor **xs = TT_MALLOC((size_t)n * sizeof *xs), **g = TT_MALLOC((size_t)n * sizeof *g);
    prepare(n, inputs, create_graph, xs);
    tt_tensor *y = run(f, ctx, n, xs);
    TT_CHECK(tt_numel(y) == 1, "tt_hvp needs a one-element function; it returned %s", tt__shape(y));
    bool prev = tt_set_grad_enabled(true);
    grads_or_zeros(y, NULL, n, xs, g, true, false);
    tt_tensor *s = dot_all(n, g, v);
    tt_set_grad_enabled(prev);
    if (s)
        grads_or_zeros(s, NULL, n, xs, hvp, create_graph, false);
    else
        for (int i = 0; i < n; i++) hvp[i] = tt_zeros_like(xs[i]);
    if (out) *out = create_graph ? y : tt_detach(y);
    tt_free(xs);
    tt_free(g);
}

// jac[i] (shape y ++ xs[i]) of y against xs: one backward per element of y, seeded one-hot.
static void jacobian_of(tt_tensor *y, int n, tt_tensor *const *xs, tt_tensor **jac,
                        bool create_graph) {
    int64_t m = tt_numel(y);
    tt_tensor ***rows = TT_MALLOC((size_t)n * sizeof *rows);
    for (int i = 0; i < n; i++) rows[i] = TT_MALLOC((size_t)(m ? m : 1) * sizeof **rows);
    tt_tensor **g = TT_MALLOC((size_t)n * sizeof *g);
    for (int64_t k = 0; k < m; k++) {
        tt_tensor *e = tt_zeros_like(y);
        tt_set_at(e, k, 1.0);
        grads_or_zeros(y, e, n, xs, g, create_graph, true);
        for (int i = 0; i < n; i++) rows[i][k] = g[i];
    }
    for (int i = 0; i < n; i++) {
        int64_t shape[2 * TT_MAX_DIMS];
        int nd = y->ndim + xs[i]->ndim;
        TT_CHECK(nd <= TT_MAX_DIMS, "the Jacobian would have %d dims (at most %d)", nd,
                 TT_MAX_DIMS);
        for (int d = 0; d < y->ndim; d++) shape[d] = y->shape[d];
        for (int d = 0; d < xs[i]->ndim; d++) shape[y->ndim + d] = xs[i]->shape[d];
        jac[i] = m ? tt_reshape(tt_stack((int)m, rows[i], 0), nd, shape)
                   : tt_zeros(xs[i]->dtype, nd, shape);
        tt_free(rows[i]);
    }
    tt_free(rows);
    tt_free(g);
}

void tt_jacobian(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs, tt_tensor **jac,
                 bool create_graph) {
    tt_tensor **xs = TT_MALLOC((size_t)n * sizeof *xs);
    prepare(n, inputs, create_graph, xs);
    tt_tensor *y = run(f, ctx, n, xs);
    bool prev = tt_set_grad_enabled(create_graph);
    jacobian_of(y, n, xs, jac, create_graph);
    tt_set_grad_enabled(prev);
    tt_free(xs);
}

tt_tensor *tt_hessian(tt_gradcheck_fn f, void *ctx, tt_tensor *x) {
    tt_tensor *xs;
    prepare(1, &x, false, &xs);
    tt_tensor *y = run(f, ctx, 1, &xs), *g, *h;
    TT_CHECK(tt_numel(y) == 1, "tt_hessian needs a one-element function; it returned %s",
             tt__shape(y));
    bool prev = tt_set_grad_enabled(true);
    grads_or_zeros(y, NULL, 1, &xs, &g, true, false);
    tt_set_grad_enabled(prev);
    jacobian_of(g, 1, &xs, &h, false);
    return h;
}

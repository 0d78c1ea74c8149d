// tt_gradcheck: the full analytic Jacobian (one backward per output element) against central
// differences (f(x + eps) - f(x - eps)) / 2eps, with torch.autograd.gradcheck's defaults.
#include "autograd_internal.h"

#include <math.h>

typedef struct jac {
    int64_t nout;
    int64_t *nin;     // per input (0 if it does not require grad)
    double **val;     // per input: nout x nin[i], row-major
} jac;

static tt_tensor *eval(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs) {
    tt_tensor *y = f(inputs, n, ctx);
    TT_CHECK(y && y->dtype == TT_F64, "gradcheck needs f64 outputs; got %s",
             y ? tt_dtype_name(y->dtype) : "NULL");
    return y;
}

tt_gradcheck_result tt_gradcheck(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs,
                                 const tt_gradcheck_opts *opts) {
    tt_gradcheck_opts o = opts ? *opts : (tt_gradcheck_opts){1e-6, 1e-5, 1e-3};
    tt_gradcheck_result r = {.ok = true, .worst_input = -1, .worst_out = -1, .worst_in = -1};
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (!inputs[i]) continue;
        TT_CHECK(inputs[i]->dtype == TT_F64 || !inputs[i]->requires_grad,
                 "input %d is %s; gradcheck needs f64 inputs", i, tt_dtype_name(inputs[i]->dtype));
        TT_CHECK(!inputs[i]->node, "input %d is not a leaf", i);
        any |= inputs[i]->requires_grad;
    }
    TT_CHECK(any, "no input requires grad: nothing to check");
    bool prev = tt_set_grad_enabled(true);

    tt_scope_begin();
    tt_tensor *y0 = eval(f, ctx, n, inputs);
    TT_CHECK(y0->requires_grad, "the output does not depend on any input that requires grad");
    int64_t nout = tt_numel(y0);
    int ndim = y0->ndim;
    int64_t shape[TT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) shape[d] = y0->shape[d];
    tt_scope_end();

    jac num = {nout, TT_CALLOC((size_t)n, sizeof(int64_t)), TT_CALLOC((size_t)n, sizeof(double *))};
    jac ana = {nout, num.nin, TT_CALLOC((size_t)n, sizeof(double *))};
    double *yp = TT_MALLOC((size_t)nout * sizeof(double));
    double *ym = TT_MALLOC((size_t)nout * sizeof(double));
    for (int i = 0; i < n; i++) {
        if (!inputs[i] || !inputs[i]->requires_grad) continue;
        int64_t m = tt_numel(inputs[i]);
        num.nin[i] = m;
        num.val[i] = TT_CALLOC((size_t)(nout * m) + 1, sizeof(double));
        ana.val[i] = TT_CALLOC((size_t)(nout * m) + 1, sizeof(double));
        tt_zero_grad(inputs[i]);
    }

    // Numeric: two forward passes per input element.
    bool was = tt_set_grad_enabled(false);
    for (int i = 0; i < n; i++) {
        for (int64_t j = 0; j < num.nin[i]; j++) {
            double x = tt_at(inputs[i], j);
            tt_scope_begin();
            tt_set_at(inputs[i], j, x + o.eps);
            tt_to_f64_array(eval(f, ctx, n, inputs), yp);
            tt_set_at(inputs[i], j, x - o.eps);
            tt_to_f64_array(eval(f, ctx, n, inputs), ym);
            tt_set_at(inputs[i], j, x);
            tt_scope_end();
            for (int64_t k = 0; k < nout; k++)
                num.val[i][k * num.nin[i] + j] = (yp[k] - ym[k]) / (2 * o.eps);
        }
    }
    tt_set_grad_enabled(was);

    // Analytic: one backward per output element, seeded with a one-hot gradient.
    for (int64_t k = 0; k < nout; k++) {
        tt_scope_begin();
        tt_tensor *y = eval(f, ctx, n, inputs);
        TT_CHECK(y->ndim == ndim && tt_numel(y) == nout, "f changed its output shape");
        tt_tensor *seed = tt_zeros(TT_F64, ndim, shape);
        tt_set_at(seed, k, 1.0);
        tt_backward_with(y, seed);
        for (int i = 0; i < n; i++) {  // read all first: one tensor may be several inputs
            tt_tensor *g = num.nin[i] ? inputs[i]->grad : NULL;
            for (int64_t j = 0; g && j < num.nin[i]; j++)
                ana.val[i][k * num.nin[i] + j] = tt_at(g, j);
        }
        for (int i = 0; i < n; i++)
            if (num.nin[i]) tt_zero_grad(inputs[i]);
        tt_scope_end();
    }

    double worst = -1;
    for (int i = 0; i < n; i++) {
        for (int64_t k = 0; k < nout; k++) {
            for (int64_t j = 0; j < num.nin[i]; j++) {
                double a = ana.val[i][k * num.nin[i] + j], nu = num.val[i][k * num.nin[i] + j];
                double err = fabs(a - nu);
                double tol = o.atol + o.rtol * fabs(nu);
                double rel = err / fmax(fabs(nu), o.atol);
                double score = isnan(err) ? INFINITY : err / tol;
                r.checked++;
                if (!(err <= tol)) r.ok = false;
                if (err > r.max_abs_err || isnan(err)) r.max_abs_err = isnan(err) ? NAN : err;
                if (rel > r.max_rel_err || isnan(rel)) r.max_rel_err = isnan(rel) ? NAN : rel;
                if (score > worst) {
                    worst = score;
                    r.worst_input = i;
                    r.worst_out = k;
                    r.worst_in = j;
                    r.analytic = a;
                    r.numeric = nu;
                }
            }
        }
        tt_free(num.val[i]);
        tt_free(ana.val[i]);
    }
    tt_free(num.val);
    tt_free(ana.val);
    tt_free(num.nin);
    tt_free(yp);
    tt_free(ym);
    tt_set_grad_enabled(prev);
    return r;
}

// ---- gradgradcheck ----

typedef struct gg_ctx {
    tt_gradcheck_fn f;
    void *ctx;
} gg_ctx;

// (inputs..., v) -> v^T d f / d input for each input that requires grad, computed with
// create_graph and flattened into one vector (zeros for an input f does not use).
static tt_tensor *first_grads(tt_tensor *const *in, int m, void *p) {
    const gg_ctx *c = p;
    int n = m - 1, nt = 0;
    bool prev = tt_set_grad_enabled(true);  // the numeric pass runs f with grad mode off
    tt_tensor *y = c->f(in, n, c->ctx);
    tt_tensor **xs = TT_MALLOC((size_t)m * sizeof *xs), **g = TT_MALLOC((size_t)m * sizeof *g);
    for (int i = 0; i < n; i++)
        if (in[i] && in[i]->requires_grad) xs[nt++] = in[i];
    tt_autograd_grad(1, &y, &in[n], nt, xs, g,
                     &(tt_grad_opts){.create_graph = true, .allow_unused = true});
    for (int i = 0; i < nt; i++)
        g[i] = tt_reshape(g[i] ? g[i] : tt_zeros_like(xs[i]), 1, (int64_t[]){-1});
    tt_tensor *flat = tt_cat(nt, g, 0);
    tt_set_grad_enabled(prev);
    tt_free(xs);
    tt_free(g);
    return flat;
}

tt_gradcheck_result tt_gradgradcheck(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs,
                                     const tt_gradcheck_opts *opts) {
    tt_scope_begin();
    bool prev = tt_set_grad_enabled(true);
    tt_tensor *y = eval(f, ctx, n, inputs);
    TT_CHECK(y->requires_grad, "the output does not depend on any input that requires grad");
    tt_rng rng = tt_rng_new(0x6772616467726164ULL);
    tt_tensor *v = tt_set_requires_grad(tt_uniform(&rng, TT_F64, y->ndim, y->shape, -1, 1), true);
    tt_tensor **all = TT_MALLOC((size_t)(n + 1) * sizeof *all);
    for (int i = 0; i < n; i++) all[i] = inputs[i];
    all[n] = v;
    gg_ctx c = {f, ctx};
    tt_gradcheck_result r = tt_gradcheck(first_grads, &c, n + 1, all, opts);
    tt_free(all);
    tt_set_grad_enabled(prev);
    tt_scope_end();
    return r;
}

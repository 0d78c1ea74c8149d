// Helpers of the gradcheck suite: inputs (contiguous and non-contiguous), and gc_check, which
// runs tt_gradcheck in f64 and compares the op's f32 forward with its f64 forward.
#include "gc_util.h"

static tt_rng rng;

tt_rng *gc_rng(void) { return &rng; }

tt_tensor *gc_input(int ndim, const int64_t *shape, double lo, double hi) {
    return tt_set_requires_grad(tt_uniform(&rng, TT_F64, ndim, shape, lo, hi), true);
}

tt_tensor *gc_input_transposed(int ndim, const int64_t *base, int d0, int d1, double lo,
                               double hi) {
    tt_tensor *b = tt_uniform(&rng, TT_F64, ndim, base, lo, hi);
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    for (int i = 0; i < ndim; i++) shape[i] = b->shape[i], stride[i] = b->stride[i];
    shape[d0] = b->shape[d1], stride[d0] = b->stride[d1];
    shape[d1] = b->shape[d0], stride[d1] = b->stride[d0];
    return tt_set_requires_grad(tt_as_strided(b, ndim, shape, stride, 0), true);
}

tt_tensor *gc_input_strided(int ndim, const int64_t *base, int dim, int64_t step, double lo,
                            double hi) {
    tt_tensor *b = tt_uniform(&rng, TT_F64, ndim, base, lo, hi);
    int64_t shape[TT_MAX_DIMS], stride[TT_MAX_DIMS];
    for (int i = 0; i < ndim; i++) shape[i] = b->shape[i], stride[i] = b->stride[i];
    shape[dim] = (b->shape[dim] + step - 1) / step;
    stride[dim] *= step;
    return tt_set_requires_grad(tt_as_strided(b, ndim, shape, stride, 0), true);
}

// An f32 tensor with the same view (shape, strides, offset) over a converted copy of x's storage.
static tt_tensor *to_f32_same_layout(tt_tensor *x) {
    int64_t n = (int64_t)(x->storage->nbytes / sizeof(double));
    tt_tensor *flat = tt_empty(TT_F32, 1, (int64_t[]){n});
    const double *src = x->storage->data;
    float *dst = tt_data_f32(flat);
    for (int64_t i = 0; i < n; i++) dst[i] = (float)src[i];
    return tt_as_strided(flat, x->ndim, x->shape, x->stride, x->offset);
}

bool gc_dry_run;

// Whether every op of f's graph has a differentiable backward (then the case also runs
// tt_gradgradcheck).
static bool twice_differentiable(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs) {
    tt_scope_begin();
    bool prev = tt_set_grad_enabled(true);
    tt_tensor *y = f(inputs, n, ctx);
    bool ok = y->requires_grad && tt_graph_twice_differentiable(y, NULL);
    tt_set_grad_enabled(prev);
    tt_scope_end();
    return ok;
}

// The gradients create_graph's differentiable backwards give equal the first-order backwards'
// (to 1e-12 relative), for a random output gradient. tt_gradgradcheck cannot see this: both of
// its sides differentiate the differentiable backward, so one that is wrong but linear in the
// same way (a slice placed at the wrong offset) passes it.
static void agree_first_order(tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs) {
    tt_scope_begin();
    bool prev = tt_set_grad_enabled(true);
    tt_tensor *y = f(inputs, n, ctx), *xs[64], *g1[64], *g2[64];
    int nt = 0;
    for (int i = 0; i < n && nt < 64; i++)
        if (inputs[i] && inputs[i]->requires_grad) xs[nt++] = inputs[i];
    tt_rng seed_rng = tt_rng_new(28);
    tt_tensor *v = tt_uniform(&seed_rng, TT_F64, y->ndim, y->shape, -1, 1);
    tt_autograd_grad(1, &y, &v, nt, xs, g1,
                     &(tt_grad_opts){.retain_graph = true, .allow_unused = true});
    tt_autograd_grad(1, &y, &v, nt, xs, g2,
                     &(tt_grad_opts){.create_graph = true, .allow_unused = true});
    for (int i = 0; i < nt; i++) {
        ck_assert_msg(!g1[i] == !g2[i], "input %d has a gradient in one mode only", i);
        for (int64_t j = 0, m = g1[i] ? tt_numel(g1[i]) : 0; j < m; j++) {
            double a = tt_at(g1[i], j), b = tt_at(g2[i], j);
            ck_assert_msg(a == b || (isnan(a) && isnan(b)) || fabs(a - b) <= 1e-12 * (1 + fabs(a)),
                          "input %d element %lld: first-order gradient %.17g, create_graph's "
                          "%.17g", i, (long long)j, a, b);
        }
    }
    tt_set_grad_enabled(prev);
    tt_scope_end();
}

// Folds check g into *worst, the (count)-th check: the first failing check's details (else the
// first check's) and the max errors.
static void fold(tt_gradcheck_result *worst, int count, tt_gradcheck_result g) {
    if (count == 0 || (worst->ok && !g.ok)) {
        double abs_err = worst->max_abs_err, rel_err = worst->max_rel_err;
        *worst = g;
        if (count == 0) return;
        worst->max_abs_err = abs_err, worst->max_rel_err = rel_err;
    }
    if (!(g.max_abs_err <= worst->max_abs_err)) worst->max_abs_err = g.max_abs_err;
    if (!(g.max_rel_err <= worst->max_rel_err)) worst->max_rel_err = g.max_rel_err;
}

void gc_check_first_order(gc_report *r, tt_gradcheck_fn f, void *ctx, int n,
                          tt_tensor *const *inputs, const tt_gradcheck_opts *opts) {
    if (gc_dry_run) {
        r->nchecks++;
        return;
    }
    tt_gradcheck_result g = tt_gradcheck(f, ctx, n, inputs, opts);
    fold(&r->worst, r->nchecks, g);
    r->ok = (r->nchecks == 0 || r->ok) && g.ok;
    r->nchecks++;
}

void gc_check(gc_report *r, tt_gradcheck_fn f, void *ctx, int n, tt_tensor *const *inputs,
              const tt_gradcheck_opts *opts) {
    if (gc_dry_run) {  // the registry's pass: which cases would run a gradgradcheck
        r->gg_nchecks += twice_differentiable(f, ctx, n, inputs);
        r->nchecks++;
        return;
    }
    if (twice_differentiable(f, ctx, n, inputs)) {
        agree_first_order(f, ctx, n, inputs);
        fold(&r->gg_worst, r->gg_nchecks++, tt_gradgradcheck(f, ctx, n, inputs, opts));
    }
    gc_check_first_order(r, f, ctx, n, inputs, opts);

    // f32 forward against f64 forward.
    tt_scope_begin();
    bool prev = tt_set_grad_enabled(false);
    tt_tensor *in32[64];
    ck_assert_int_le(n, 64);
    for (int i = 0; i < n; i++)
        in32[i] = inputs[i] && inputs[i]->dtype == TT_F64 ? to_f32_same_layout(inputs[i])
                                                           : inputs[i];
    tt_tensor *y64 = f(inputs, n, ctx), *y32 = f(in32, n, ctx);
    ck_assert_msg(y32->dtype == TT_F32, "f32 inputs gave a %s output",
                  tt_dtype_name(y32->dtype));
    char s32[128], s64[128];
    ck_assert_msg(tt_same_shape(y64, y32), "f32 output %s differs from f64 output %s",
                  tt_shape_str(y32, s32, sizeof s32), tt_shape_str(y64, s64, sizeof s64));
    double worst = 0;
    for (int64_t i = 0, m = tt_numel(y64); i < m; i++) {
        double a = tt_at(y64, i), b = tt_at(y32, i);
        double e = (isinf(a) && a == b) ? 0 : fabs(a - b) / (1 + fabs(a));
        if (!(e <= worst)) worst = e;  // NaN propagates
    }
    if (!(worst <= r->f32_fwd_err)) r->f32_fwd_err = worst;
    if (!(worst <= GC_F32_TOL)) r->ok = false;
    tt_set_grad_enabled(prev);
    tt_scope_end();
}

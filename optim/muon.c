// Muon (MomentUm Orthogonalized by Newton-Schulz; Jordan et al. 2024, torch.optim.Muon): SGD
// momentum whose update, a matrix, is replaced by an approximately orthogonal one before it is
// applied. The orthogonalization runs quintic Newton-Schulz iterations on the update's
// transpose-wide form with the library's own matrix products (under autocast when the config
// asks for bf16 products); the momentum and the final step are update.c's elementwise kernels.
#include <math.h>

#include "optim_internal.h"
#include "../tensor/tensor_ext.h"

// NS(u): X = u / max(|u|_F, eps), on u^T when u has more rows than columns (so the Gram
// matrices are the small side's); then ns_steps times A = X X^T, X = a X + (b A + c A A) X.
// Returns a scoped tensor of u's shape.
static tt_tensor *newton_schulz(tt_tensor *u, const tt_optim_config *c) {
    bool tall = u->shape[0] > u->shape[1];
    tt_tensor *x = tall ? tt_contiguous(tt_transpose(u, 0, 1)) : u;
    x = tt_div_scalar(x, fmax(sqrt(tt__optim_sumsq(x)), c->eps));
    const double a = c->ns_coefficients[0], b = c->ns_coefficients[1], cc = c->ns_coefficients[2];
    tt_autocast_begin(c->ns_precision);
    for (int s = 0; s < c->ns_steps; s++) {
        tt_tensor *A = tt_matmul(x, tt_transpose(x, 0, 1));
        tt_tensor *B = tt_add(tt_mul_scalar(A, b), tt_mul_scalar(tt_matmul(A, A), cc));
        x = tt_add(tt_mul_scalar(x, a), tt_matmul(B, x));
    }
    tt_autocast_end();
    return tall ? tt_contiguous(tt_transpose(x, 0, 1)) : x;
}

// One elementwise pass of `kernel` over p, with slot s0 and gradient-like g.
static void elementwise(tt__upd_kernel kernel, tt_tensor *p, tt_tensor *s0, const tt_tensor *g,
                        tt__upd_args a) {
    a.kernel = kernel;
    tt__upd_seg seg = {.p = p, .s = {s0, NULL, NULL}, .g = g, .a = a, .start = 0};
    tt__optim_update_all(&seg, 1, tt_numel(p));
}

void tt__muon_update(tt_tensor *p, tt_tensor *buf, const tt_tensor *g, const tt_optim_config *c,
                     double lr, double weight_decay) {
    double rows = (double)p->shape[0], cols = (double)p->shape[1];
    tt__upd_args a = {.lr = lr,
                      .momentum = c->momentum,
                      .nesterov = c->nesterov,
                      .decay = 1.0 - lr * weight_decay,
                      .step_size = lr * sqrt(fmax(1.0, rows / cols))};
    tt_scope_begin();
    bool grad_mode = tt_set_grad_enabled(false);
    tt_tensor *u = tt_empty_like(p);
    elementwise(TT__UPD_MUON_MOMENTUM, u, buf, g, a);
    elementwise(TT__UPD_MUON_APPLY, p, NULL, newton_schulz(u, c), a);
    tt_set_grad_enabled(grad_mode);
    tt_scope_end();
}

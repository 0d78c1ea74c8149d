// Regression and binary-classification losses composed from differentiable ops: mean squared
// error and binary cross-entropy on logits. The multi-class losses (cross-entropy with ignore
// index and label smoothing) are fused ops in autograd/ops_nn.c, not here.
//
// Each loss runs in a scope of its own and keeps only its 0-dim result, so its intermediates
// are freed whether or not the caller is inside a scope.
#include "nn_internal.h"

// Both operands float, of one dtype and exactly one shape: a loss never broadcasts, because a
// (N,) prediction against an (N, 1) target would silently average an (N, N) matrix.
// Aborts naming the loss (func) rather than this helper.
static void check_pair(const tt_tensor *a, const tt_tensor *b, const char *an, const char *bn,
                       const char *func) {
    if (!a || !b) tt_fatal(__FILE__, __LINE__, func, "%s or %s is NULL", an, bn);
    if (!tt_dtype_is_float(a->dtype) || a->dtype != b->dtype)
        tt_fatal(__FILE__, __LINE__, func, "%s is %s and %s is %s; both must be the same float "
                 "dtype (convert with tt_to_dtype)", an, tt_dtype_name(a->dtype), bn,
                 tt_dtype_name(b->dtype));
    if (!tt_same_shape(a, b))
        tt_fatal(__FILE__, __LINE__, func, "%s %s and %s %s must have the same shape (a loss "
                 "does not broadcast; reshape one of them)", an, tt__shape(a), bn, tt__shape(b));
    if (tt_numel(a) == 0)
        tt_fatal(__FILE__, __LINE__, func, "%s %s is empty: the mean of no elements", an,
                 tt__shape(a));
}

// ---- mean squared error ----

// mean((pred - target)^2); d/d pred = 2 (pred - target) / N.
tt_tensor *tt_mse_loss(tt_tensor *pred, tt_tensor *target) {
    check_pair(pred, target, "pred", "target", __func__);
    tt_scope_begin();
    tt_tensor *d = tt_sub(pred, target);           // (...)
    tt_tensor *loss = tt_mean_all(tt_square(d));   // ()
    tt_keep(loss);
    tt_scope_end();
    return loss;
}

// ---- binary cross-entropy with logits ----

// With p = sigmoid(x): -(t log p + (1 - t) log(1 - p)) = softplus(x) - x t, and
// softplus(x) = max(x, 0) + log(1 + exp(-|x|)) never overflows (exp of a non-positive number).
// d/dx = sigmoid(x) - t. At x = 0 the pieces are not differentiable, but max splits its
// gradient evenly between tied operands (1/2) and |x| has gradient 0, which together give
// the exact sigmoid(0) = 1/2.
tt_tensor *tt_bce_with_logits(tt_tensor *logits, tt_tensor *targets) {
    check_pair(logits, targets, "logits", "targets", __func__);
    tt_scope_begin();
    tt_tensor *x = logits;                                        // (...)
    tt_tensor *pos = tt_maximum(x, tt_scalar(x->dtype, 0.0));     // max(x, 0)
    tt_tensor *tail = tt_log(tt_add_scalar(tt_exp(tt_neg(tt_abs(x))), 1.0));
    tt_tensor *elem = tt_add(tt_sub(pos, tt_mul(x, targets)), tail);
    tt_tensor *loss = tt_mean_all(elem);                          // ()
    tt_keep(loss);
    tt_scope_end();
    return loss;
}

// PyTorch's functional losses, each a composition of differentiable ops (the gradients come
// from the ops): mse, l1, smooth-L1, Huber, KL divergence, binary cross-entropy on probabilities
// and on logits, nll_loss and cross_entropy with PyTorch's layout, each with a reduction. The
// fused cross-entropy (classes last, label smoothing) is an op in autograd/ops_nn.c, not here.
//
// Each loss runs in a scope of its own and keeps only its result, so its intermediates are
// freed whether or not the caller is inside a scope.
#include <float.h>

#include "nn_internal.h"

// Both operands float, of one dtype and exactly one shape: a loss never broadcasts, because a
// (N,) prediction against an (N, 1) target would silently average an (N, N) matrix. MEAN of
// no elements aborts. Aborts naming the loss (func) rather than this helper.
static void check_pair(const tt_tensor *a, const tt_tensor *b, const char *an, const char *bn,
                       tt_reduction reduction, const char *func) {
    if (!a || !b) tt_fatal(__FILE__, __LINE__, func, "%s or %s is NULL", an, bn);
    if (!tt_dtype_is_float(a->dtype) || a->dtype != b->dtype)
        tt_fatal(__FILE__, __LINE__, func, "%s is %s and %s is %s; both must be the same float "
                 "dtype (convert with tt_to_dtype)", an, tt_dtype_name(a->dtype), bn,
                 tt_dtype_name(b->dtype));
    if (!tt_same_shape(a, b))
        tt_fatal(__FILE__, __LINE__, func, "%s %s and %s %s must have the same shape (a loss "
                 "does not broadcast; reshape one of them)", an, tt__shape(a), bn, tt__shape(b));
    if (tt_numel(a) == 0 && reduction == TT_REDUCTION_MEAN)
        tt_fatal(__FILE__, __LINE__, func, "%s %s is empty: the mean of no elements", an,
                 tt__shape(a));
}

// NONE, MEAN and SUM; BATCHMEAN only where allow_batchmean (tt_kl_div).
static void check_reduction(tt_reduction reduction, bool allow_batchmean, const char *func) {
    if ((int)reduction < 0 || reduction >= TT_REDUCTION_COUNT ||
        (reduction == TT_REDUCTION_BATCHMEAN && !allow_batchmean))
        tt_fatal(__FILE__, __LINE__, func, "reduction %d is not valid here: use "
                 "TT_REDUCTION_NONE, TT_REDUCTION_MEAN or TT_REDUCTION_SUM%s", (int)reduction,
                 allow_batchmean ? " or TT_REDUCTION_BATCHMEAN" : " (BATCHMEAN is tt_kl_div's)");
}

// weight NULL, or of x's dtype and broadcastable to x's shape without growing it.
static void check_weight(const tt_tensor *w, const tt_tensor *x, const char *func) {
    if (!w) return;
    bool ok = w->dtype == x->dtype && w->ndim <= x->ndim;
    for (int i = 1; ok && i <= w->ndim; i++) {
        int64_t ws = w->shape[w->ndim - i], xs = x->shape[x->ndim - i];
        ok = ws == xs || ws == 1;
    }
    if (!ok)
        tt_fatal(__FILE__, __LINE__, func, "weight %s %s must have the input's dtype (%s) and "
                 "broadcast to its shape %s", tt_dtype_name(w->dtype), tt__shape(w),
                 tt_dtype_name(x->dtype), tt__shape(x));
}

// The reduction of the per-element losses (inside the caller's scope).
static tt_tensor *reduce(tt_tensor *elem, tt_reduction reduction) {
    switch (reduction) {
    case TT_REDUCTION_MEAN: return tt_mean_all(elem);
    case TT_REDUCTION_SUM: return tt_sum_all(elem);
    case TT_REDUCTION_BATCHMEAN:
        if (elem->ndim == 0) return tt_sum_all(elem);
        return tt_div_scalar(tt_sum_all(elem), (double)elem->shape[0]);
    default: return elem;
    }
}

// ---- mean squared error ----

// (pred - target)^2; d/d pred = 2 (pred - target) (/ N for the mean).
tt_tensor *tt_mse_loss_ex(tt_tensor *pred, tt_tensor *target, tt_reduction reduction) {
    check_reduction(reduction, false, __func__);
    check_pair(pred, target, "pred", "target", reduction, __func__);
    tt_scope_begin();
    tt_tensor *loss = reduce(tt_square(tt_sub(pred, target)), reduction);
    tt_keep(loss);
    tt_scope_end();
    return loss;
}

tt_tensor *tt_mse_loss(tt_tensor *pred, tt_tensor *target) {
    check_pair(pred, target, "pred", "target", TT_REDUCTION_MEAN, __func__);
    return tt_mse_loss_ex(pred, target, TT_REDUCTION_MEAN);
}

// ---- L1, smooth L1, Huber ----

// |x - y|; gradient sign(x - y), 0 where x == y (as PyTorch).
tt_tensor *tt_l1_loss(tt_tensor *x, tt_tensor *y, tt_reduction reduction) {
    check_reduction(reduction, false, __func__);
    check_pair(x, y, "x", "y", reduction, __func__);
    tt_scope_begin();
    tt_tensor *loss = reduce(tt_abs(tt_sub(x, y)), reduction);
    tt_keep(loss);
    tt_scope_end();
    return loss;
}

// The core of smooth-L1 and Huber, with z = |x - y| and m = min(z, t): smooth-L1 (beta = t) is
// 0.5 m^2 / t + (z - m), which is 0.5 z^2 / t below t (bit for bit PyTorch's value) and
// t/2 + z - t above it; Huber (delta = t) is 0.5 m^2 + t (z - m), t times smooth-L1. The
// gradient (z / t then 1 for smooth-L1) is continuous at z = t, where minimum's even split of
// a tie gives 1/2 + 1/2.
static tt_tensor *clipped_quadratic(tt_tensor *x, tt_tensor *y, double t, bool huber,
                                    tt_reduction reduction) {
    tt_scope_begin();
    tt_tensor *z = tt_abs(tt_sub(x, y));                   // (...)
    tt_tensor *m = tt_minimum(z, tt_scalar(x->dtype, t));  // (...)
    tt_tensor *half = tt_mul_scalar(tt_square(m), 0.5);
    tt_tensor *lin = tt_sub(z, m);
    tt_tensor *loss = huber ? tt_add(half, tt_mul_scalar(lin, t))
                            : tt_add(tt_div_scalar(half, t), lin);
    loss = tt_keep(reduce(loss, reduction));
    tt_scope_end();
    return loss;
}

tt_tensor *tt_smooth_l1_loss(tt_tensor *x, tt_tensor *y, double beta, tt_reduction reduction) {
    check_reduction(reduction, false, __func__);
    check_pair(x, y, "x", "y", reduction, __func__);
    if (!(beta >= 0))
        tt_fatal(__FILE__, __LINE__, __func__, "beta is %g; it must be >= 0 (0 gives l1_loss)",
                 beta);
    if (beta == 0) return tt_l1_loss(x, y, reduction);
    return clipped_quadratic(x, y, beta, false, reduction);
}

tt_tensor *tt_huber_loss(tt_tensor *x, tt_tensor *y, double delta, tt_reduction reduction) {
    check_reduction(reduction, false, __func__);
    check_pair(x, y, "x", "y", reduction, __func__);
    if (!(delta > 0))
        tt_fatal(__FILE__, __LINE__, __func__, "delta is %g; it must be > 0", delta);
    return clipped_quadratic(x, y, delta, true, reduction);
}

// ---- KL divergence ----

// A constant TT_I32 mask of t's shape: 1 where t == 0 (built from t's values).
static tt_tensor *zero_mask(const tt_tensor *t) {
    tt_tensor *mask = tt_zeros(TT_I32, t->ndim, t->shape);
    for (int64_t i = 0; i < tt_numel(t); i++)
        if (tt_at(t, i) == 0) tt_set_at(mask, i, 1);
    return mask;
}

// PyTorch: xlogy(t, t) - t x, or e^t (t - x) with log_target. xlogy(t, t) = t log t with 0 at
// t = 0: log reads 1 there (masked_fill), so neither value nor gradient sees log 0.
tt_tensor *tt_kl_div(tt_tensor *input, tt_tensor *target, tt_reduction reduction,
                     bool log_target) {
    check_reduction(reduction, true, __func__);
    check_pair(input, target, "input", "target", reduction, __func__);
    tt_scope_begin();
    tt_tensor *elem;
    if (log_target) {
        elem = tt_mul(tt_exp(target), tt_sub(target, input));
    } else {
        tt_tensor *safe = tt_masked_fill(target, zero_mask(target), 1.0);
        elem = tt_sub(tt_mul(target, tt_log(safe)), tt_mul(target, input));
    }
    tt_tensor *loss = reduce(elem, reduction);
    tt_keep(loss);
    tt_scope_end();
    return loss;
}

// ---- binary cross-entropy ----

// max(log(x), -100), PyTorch's clamp. log reads max(x, the smallest positive number), so x = 0
// gives log(tiny) < -100 -> -100 with gradient 0, never 0 * inf.
static tt_tensor *clamped_log(tt_tensor *x) {
    double tiny = x->dtype == TT_F32 ? FLT_TRUE_MIN : DBL_TRUE_MIN;
    tt_tensor *l = tt_log(tt_maximum(x, tt_scalar(x->dtype, tiny)));
    return tt_maximum(l, tt_scalar(x->dtype, -100.0));
}

// PyTorch's formula: (t - 1) max(log(1 - p), -100) - t max(log p, -100), times weight.
// d/dp = (p - t) / (p (1 - p)) inside (0, 1).
tt_tensor *tt_binary_cross_entropy(tt_tensor *probs, tt_tensor *targets, tt_tensor *weight,
                                   tt_reduction reduction) {
    check_reduction(reduction, false, __func__);
    check_pair(probs, targets, "probs", "targets", reduction, __func__);
    check_weight(weight, probs, __func__);
    for (int64_t i = 0; i < tt_numel(probs); i++) {
        double p = tt_at(probs, i);
        if (!(p >= 0 && p <= 1))
            tt_fatal(__FILE__, __LINE__, __func__, "probs[%lld] = %g: all elements of probs "
                     "must be between 0 and 1 (for logits use tt_bce_with_logits)",
                     (long long)i, p);
    }
    tt_scope_begin();
    tt_tensor *neg_part = tt_mul(tt_sub_scalar(targets, 1.0), clamped_log(tt_rsub_scalar(1.0,
                                                                                     probs)));
    tt_tensor *elem = tt_sub(neg_part, tt_mul(targets, clamped_log(probs)));
    if (weight) elem = tt_mul(elem, weight);
    tt_tensor *loss = reduce(elem, reduction);
    tt_keep(loss);
    tt_scope_end();
    return loss;
}

// With p = sigmoid(x): -(t log p + (1 - t) log(1 - p)) = softplus(x) - x t, and
// softplus(x) = max(x, 0) + log(1 + exp(-|x|)) never overflows (exp of a non-positive number).
// d/dx = sigmoid(x) - t. At x = 0 the pieces are not differentiable, but max splits its
// gradient evenly between tied operands (1/2) and |x| has gradient 0, which together give
// the exact sigmoid(0) = 1/2.
tt_tensor *tt_bce_with_logits_ex(tt_tensor *logits, tt_tensor *targets, tt_tensor *weight,
                                 tt_reduction reduction) {
    check_reduction(reduction, false, __func__);
    check_pair(logits, targets, "logits", "targets", reduction, __func__);
    check_weight(weight, logits, __func__);
    tt_scope_begin();
    tt_tensor *x = logits;                                        // (...)
    tt_tensor *pos = tt_maximum(x, tt_scalar(x->dtype, 0.0));     // max(x, 0)
    tt_tensor *tail = tt_log(tt_add_scalar(tt_exp(tt_neg(tt_abs(x))), 1.0));
    tt_tensor *elem = tt_add(tt_sub(pos, tt_mul(x, targets)), tail);
    if (weight) elem = tt_mul(elem, weight);
    tt_tensor *loss = reduce(elem, reduction);
    tt_keep(loss);
    tt_scope_end();
    return loss;
}

tt_tensor *tt_bce_with_logits(tt_tensor *logits, tt_tensor *targets) {
    check_pair(logits, targets, "logits", "targets", TT_REDUCTION_MEAN, __func__);
    return tt_bce_with_logits_ex(logits, targets, NULL, TT_REDUCTION_MEAN);
}

// ---- negative log-likelihood ----
// N batch, C classes, D the product of the trailing dims d1... (1 for (N, C)).

// logp (N, C, D) is masked to the target entries: fill is 1 everywhere but at [n, t_n, d] of
// the non-ignored targets, scale holds weight[t_n] there. The element loss is then
// -sum_c(masked_fill(logp, fill, 0) * scale) over dim 1: exactly -weight[t] logp[t], since the
// other terms are 0 (a NaN or -inf elsewhere in the row is replaced, never multiplied), and the
// gradient reaches logp only at the targets. Returns the summed weights of the used targets.
static double nll_masks(const tt_tensor *logp, const tt_tensor *targets, const tt_tensor *weight,
                        int64_t ignore_index, tt_tensor *fill, tt_tensor *scale,
                        const char *func) {
    int64_t N = logp->shape[0], C = logp->shape[1], D = tt_numel(logp) / (N ? N * C : 1);
    if (C == 0) D = 0;
    double total = 0;
    for (int64_t n = 0; n < N; n++) {
        for (int64_t d = 0; d < D; d++) {
            int64_t t = (int64_t)tt_at(targets, n * D + d);
            if (t == ignore_index) continue;
            if (t < 0 || t >= C)
                tt_fatal(__FILE__, __LINE__, func, "target %lld (element %lld) is out of "
                         "bounds: targets must be in [0, %lld) or equal ignore_index (%lld)",
                         (long long)t, (long long)(n * D + d), (long long)C,
                         (long long)ignore_index);
            double w = weight ? tt_at(weight, t) : 1.0;
            int64_t at = (n * C + t) * D + d;
            tt_set_at(fill, at, 0);
            tt_set_at(scale, at, w);
            total += w;
        }
    }
    return total;
}

tt_tensor *tt_nll_loss(tt_tensor *logp, tt_tensor *targets, tt_tensor *weight,
                       int64_t ignore_index, tt_reduction reduction) {
    check_reduction(reduction, false, __func__);
    if (!logp || !targets) tt_fatal(__FILE__, __LINE__, __func__, "logp or targets is NULL");
    if (!tt_dtype_is_float(logp->dtype))
        tt_fatal(__FILE__, __LINE__, __func__, "logp is %s; it must be a float dtype (f32 or "
                 "f64) of log-probabilities", tt_dtype_name(logp->dtype));
    if (targets->dtype != TT_I32 && targets->dtype != TT_I64)
        tt_fatal(__FILE__, __LINE__, __func__, "targets are %s; they must be class indices of "
                 "TT_I32 or TT_I64", tt_dtype_name(targets->dtype));
    if (logp->ndim == 0)
        tt_fatal(__FILE__, __LINE__, __func__, "logp is 0-dim; expected (C,), (N, C) or "
                 "(N, C, d1, ...)");
    if (logp->ndim == 1) {  // (C,) with a 0-dim target: one sample
        if (targets->ndim != 0)
            tt_fatal(__FILE__, __LINE__, __func__, "logp %s is one sample of C classes, so "
                     "targets %s must be 0-dim", tt__shape(logp), tt__shape(targets));
        tt_scope_begin();
        tt_tensor *loss = tt_nll_loss(tt_unsqueeze(logp, 0), tt_unsqueeze(targets, 0), weight,
                                      ignore_index, reduction);
        tt_keep(reduction == TT_REDUCTION_NONE ? (loss = tt_squeeze(loss, 0)) : loss);
        tt_scope_end();
        return loss;
    }
    bool shape_ok = targets->ndim == logp->ndim - 1 && targets->shape[0] == logp->shape[0];
    for (int i = 1; shape_ok && i < targets->ndim; i++)
        shape_ok = targets->shape[i] == logp->shape[i + 1];
    if (!shape_ok)
        tt_fatal(__FILE__, __LINE__, __func__, "targets %s must be logp's shape %s without its "
                 "class dim 1: (N) for (N, C), (N, d1, ...) for (N, C, d1, ...)",
                 tt__shape(targets), tt__shape(logp));
    if (weight && (weight->dtype != logp->dtype || weight->ndim != 1 ||
                   weight->shape[0] != logp->shape[1]))
        tt_fatal(__FILE__, __LINE__, __func__, "weight %s %s must be (C,) = (%lld,) of logp's "
                 "dtype %s", tt_dtype_name(weight->dtype), tt__shape(weight),
                 (long long)logp->shape[1], tt_dtype_name(logp->dtype));
    if (tt_numel(targets) == 0 && reduction == TT_REDUCTION_MEAN)
        tt_fatal(__FILE__, __LINE__, __func__, "targets %s are empty: the mean of no elements",
                 tt__shape(targets));
    tt_scope_begin();
    tt_tensor *fill = tt_ones(TT_I32, logp->ndim, logp->shape);       // (N, C, d...)
    tt_tensor *scale = tt_zeros(logp->dtype, logp->ndim, logp->shape);  // (N, C, d...)
    double total = nll_masks(logp, targets, weight, ignore_index, fill, scale, __func__);
    tt_tensor *picked = tt_mul(tt_masked_fill(logp, fill, 0.0), scale);
    tt_tensor *elem = tt_neg(tt_sum(picked, 1, (const int[]){1}, false));  // (N, d...)
    tt_tensor *loss = reduction == TT_REDUCTION_MEAN
                          ? tt_div_scalar(tt_sum_all(elem), total)
                          : reduce(elem, reduction);
    tt_keep(loss);
    tt_scope_end();
    return loss;
}

// PyTorch's cross_entropy_loss_label_smoothing: smooth = -sum_c weight[c] logp[n, c, ...], 0
// for ignored targets, reduced like nll_loss; loss = (1 - eps) nll + (eps / C) smooth.
tt_tensor *tt_cross_entropy_nc(tt_tensor *logits, tt_tensor *targets, tt_tensor *weight,
                               int64_t ignore_index, tt_reduction reduction,
                               double label_smoothing) {
    check_reduction(reduction, false, __func__);
    if (!logits || !tt_dtype_is_float(logits->dtype) || logits->ndim == 0)
        tt_fatal(__FILE__, __LINE__, __func__, "logits must be a float tensor (C,), (N, C) or "
                 "(N, C, d1, ...)");
    if (!(label_smoothing >= 0 && label_smoothing <= 1))
        tt_fatal(__FILE__, __LINE__, __func__, "label_smoothing is %g; it must be in [0, 1]",
                 label_smoothing);
    if (logits->ndim == 1 && label_smoothing > 0) {  // (C,): one sample
        if (!targets || targets->ndim != 0)
            tt_fatal(__FILE__, __LINE__, __func__, "logits %s are one sample of C classes, so "
                     "targets must be 0-dim", tt__shape(logits));
        tt_scope_begin();
        tt_tensor *loss = tt_cross_entropy_nc(tt_unsqueeze(logits, 0), tt_unsqueeze(targets, 0),
                                              weight, ignore_index, reduction, label_smoothing);
        tt_keep(reduction == TT_REDUCTION_NONE ? (loss = tt_squeeze(loss, 0)) : loss);
        tt_scope_end();
        return loss;
    }
    tt_scope_begin();
    tt_tensor *logp = tt_log_softmax(logits, logits->ndim == 1 ? 0 : 1);
    tt_tensor *loss = tt_nll_loss(logp, targets, weight, ignore_index, reduction);  // validates
    if (label_smoothing > 0) {
        int64_t C = logp->shape[1];
        tt_tensor *ignored = tt_zeros(TT_I32, targets->ndim, targets->shape);  // (N, d...)
        double total = 0;
        for (int64_t i = 0; i < tt_numel(targets); i++) {
            int64_t t = (int64_t)tt_at(targets, i);
            if (t == ignore_index) tt_set_at(ignored, i, 1);
            else total += weight ? tt_at(weight, t) : 1.0;
        }
        tt_tensor *lp = tt_masked_fill(logp, tt_unsqueeze(ignored, 1), 0.0);  // (N, C, d...)
        if (weight) {
            int64_t wshape[TT_MAX_DIMS];
            for (int i = 0; i < logp->ndim; i++) wshape[i] = i == 1 ? C : 1;
            lp = tt_mul(lp, tt_reshape(weight, logp->ndim, wshape));  // weight (1, C, 1, ...)
        }
        tt_tensor *smooth = tt_neg(tt_sum(lp, 1, (const int[]){1}, false));  // (N, d...)
        smooth = reduction == TT_REDUCTION_MEAN ? tt_div_scalar(tt_sum_all(smooth), total)
                                                : reduce(smooth, reduction);
        loss = tt_add(tt_mul_scalar(loss, 1.0 - label_smoothing),
                      tt_mul_scalar(smooth, label_smoothing / (double)C));
    }
    tt_keep(loss);
    tt_scope_end();
    return loss;
}

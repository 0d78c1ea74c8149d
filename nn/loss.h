// tinytorch.c nn: PyTorch's functional losses (nn/loss.c). The fused classification losses
// tt_cross_entropy / tt_cross_entropy_smooth are ops (autograd.h).
//
//     tt_tensor *loss = tt_huber_loss(pred, target, 1.0, TT_REDUCTION_MEAN);
#ifndef TT_NN_LOSS_H
#define TT_NN_LOSS_H

#include "../autograd/autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- losses ----
// PyTorch's functional losses (torch.nn.functional), named and reduced as there. The input and
// the target of an elementwise loss have one float dtype and exactly one shape (a loss never
// broadcasts: a (N,) prediction against an (N, 1) target would silently average an (N, N)
// matrix). NONE returns the per-element losses, SUM their sum, MEAN their mean (0-dim);
// BATCHMEAN (tt_kl_div only) the sum divided by the size of dim 0. MEAN of an empty input aborts.

typedef enum tt_reduction {
    TT_REDUCTION_NONE,
    TT_REDUCTION_MEAN,
    TT_REDUCTION_SUM,
    TT_REDUCTION_BATCHMEAN,  // tt_kl_div only
    TT_REDUCTION_COUNT
} tt_reduction;

// tt_cross_entropy / tt_cross_entropy_smooth (autograd.h) are the fused classification losses
// (classes in the LAST dim, mean over the non-ignored targets); tt_cross_entropy_nc below is
// F.cross_entropy in PyTorch's (N, C, d1, ...) layout.
tt_tensor *tt_mse_loss(tt_tensor *pred, tt_tensor *target);  // mean((pred - target)^2)
// mean(max(x, 0) - x t + log(1 + exp(-|x|))): stable for any logit.
tt_tensor *tt_bce_with_logits(tt_tensor *logits, tt_tensor *targets);

// (pred - target)^2, reduced.
tt_tensor *tt_mse_loss_ex(tt_tensor *pred, tt_tensor *target, tt_reduction reduction);
// |x - y|, reduced.
tt_tensor *tt_l1_loss(tt_tensor *x, tt_tensor *y, tt_reduction reduction);
// With z = |x - y|: 0.5 z^2 / beta if z < beta, else z - 0.5 beta; beta >= 0 (0: l1_loss).
tt_tensor *tt_smooth_l1_loss(tt_tensor *x, tt_tensor *y, double beta, tt_reduction reduction);
// With z = |x - y|: 0.5 z^2 if z < delta, else delta (z - 0.5 delta); delta > 0.
tt_tensor *tt_huber_loss(tt_tensor *x, tt_tensor *y, double delta, tt_reduction reduction);
// F.kl_div: input holds log-probabilities; target probabilities (t log t - t x, 0 where t == 0)
// or, with log_target, log-probabilities (e^t (t - x)). BATCHMEAN is the mathematical KL
// divergence of a batch (sum / N); MEAN divides by every element, as PyTorch does.
tt_tensor *tt_kl_div(tt_tensor *input, tt_tensor *target, tt_reduction reduction,
                     bool log_target);
// F.binary_cross_entropy on probabilities in [0, 1] (aborts otherwise):
// -w (t log p + (1 - t) log(1 - p)) with each log clamped at -100 as PyTorch does, so p = 0 or 1
// gives a finite loss (the clamped term then has gradient 0). weight: NULL or broadcastable to
// probs' shape, a constant rescaling of each element.
tt_tensor *tt_binary_cross_entropy(tt_tensor *probs, tt_tensor *targets, tt_tensor *weight,
                                   tt_reduction reduction);
// tt_bce_with_logits with a weight (NULL or broadcastable to logits' shape) and a reduction.
tt_tensor *tt_bce_with_logits_ex(tt_tensor *logits, tt_tensor *targets, tt_tensor *weight,
                                 tt_reduction reduction);
// F.nll_loss: logp (N, C) or (N, C, d1, ...) (classes in dim 1) or (C,), targets (N) or
// (N, d1, ...) or 0-dim, TT_I32/TT_I64 in [0, C) or equal to ignore_index. The element loss is
// -weight[t] logp[n, t, ...] (0 where ignored); MEAN divides the sum by the summed weights of
// the non-ignored targets (NaN when every target is ignored, as in PyTorch). weight: NULL or
// (C,) of logp's dtype, a constant (no gradient flows to it).
tt_tensor *tt_nll_loss(tt_tensor *logp, tt_tensor *targets, tt_tensor *weight,
                       int64_t ignore_index, tt_reduction reduction);
// F.cross_entropy with class-index targets in PyTorch's layout, logits (N, C, d1, ...), (N, C)
// or (C,): classes in dim 1 (dim 0 for (C,)), unlike tt_cross_entropy (classes in the LAST
// dim, the fused op language models use). tt_nll_loss(tt_log_softmax(logits, 1), ...) when
// label_smoothing is 0; otherwise (1 - eps) nll + eps / C times the (weighted) sum of -logp over
// the classes, reduced like nll (MEAN: by the summed weights of the used targets), as PyTorch.
// label_smoothing in [0, 1].
tt_tensor *tt_cross_entropy_nc(tt_tensor *logits, tt_tensor *targets, tt_tensor *weight,
                               int64_t ignore_index, tt_reduction reduction,
                               double label_smoothing);
// Deprecated: the old name of tt_cross_entropy_nc.
__attribute__((deprecated("renamed tt_cross_entropy_nc (classes in dim 1)")))
static inline tt_tensor *tt_cross_entropy_ex(tt_tensor *logits, tt_tensor *targets,
                                             tt_tensor *weight, int64_t ignore_index,
                                             tt_reduction reduction, double label_smoothing) {
    return tt_cross_entropy_nc(logits, targets, weight, ignore_index, reduction,
                               label_smoothing);
}

#ifdef __cplusplus
}
#endif

#endif  // TT_NN_LOSS_H

// tinytorch.c nn: a model summary like torchinfo's (nn/summary.c).
#ifndef TT_NN_SUMMARY_H
#define TT_NN_SUMMARY_H

#include "module.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- model summary (nn/summary.c), like torchinfo's summary ----
// Runs m's forward on x once (in the caller's grad mode) under the profiler and writes to f
// (NULL: nothing) a tree of its modules under their state_dict names: type, output shape,
// parameters, forward FLOPs (autograd/profiler.h's conventions) and activation memory (the
// storage bytes alive after the forward: under grad mode, what the backward keeps). A
// Sequential's children run one after another and get a row each; other composites list their
// children with parameters only. The profiler's own figures are set aside meanwhile. Returns
// the totals; a tensor listed twice (tied weights) counts once.
//
//     tt_model_summary(stdout, tt_nn_sequential_module(&net), x);
typedef struct tt_model_stats {
    int64_t params, trainable_params, param_bytes;
    int64_t forward_flops;     // one forward at x
    int64_t activation_bytes;  // live after that forward, the output included
    int out_ndim;
    int64_t out_shape[TT_MAX_DIMS];
} tt_model_stats;
tt_model_stats tt_model_summary(FILE *f, tt_module m, tt_tensor *x);

#ifdef __cplusplus
}
#endif

#endif  // TT_NN_SUMMARY_H

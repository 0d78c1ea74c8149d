// The saved state (ctx) of the neural-network ops' tape nodes, shared by their first-order
// backwards (autograd/ops_nn.c) and their differentiable ones (autograd/grad2_nn.c).
#ifndef TT_OPS_NN_CTX_H
#define TT_OPS_NN_CTX_H

#include <stdint.h>

// softmax, log_softmax: the normalized dim (non-negative).
typedef struct softmax_ctx {
    int dim;
} softmax_ctx;

// layernorm, rmsnorm: x viewed as (R, N) with N the product of the last norm_ndim dims
// (1 for rmsnorm), and the eps added to the variance / mean square.
typedef struct norm_ctx {
    int64_t R, N;
    double eps;
    int norm_ndim;
} norm_ctx;

// cross_entropy: logits viewed as (R, V), the ignored target, the number of rows not ignored.
typedef struct cross_entropy_ctx {
    int64_t R, V, ignore_index, count;
    double smoothing;
} cross_entropy_ctx;

// The differentiable backward of tt_scaled_dot_product_attention (autograd/ops_attention.c,
// where its ctx lives), a row of tt__grad2_nn.
struct tt_node;
void tt__attention2(struct tt_node *n);

#endif  // TT_OPS_NN_CTX_H

// tinytorch.c models/lenet: a LeNet-style CNN for 28 x 28 grey images (Fashion-MNIST, MNIST):
// conv(1->16, 5x5, pad 2)-[bn]-relu-pool, conv(16->32, 5x5)-[bn]-relu-pool, flatten,
// 800-120-84-10 with ReLUs. With batch norm the convs have no bias (the norm's shift
// replaces it). Built on the nn modules only; training is the program's (train/).
//
//     tt_lenet m;
//     tt_lenet_init(&m, false, &rng);                  // m.params: what the optimizer trains
//     tt_tensor *logits = tt_lenet_forward(&m, x);     // (B, 1, 28, 28) -> (B, 10)
//     tt_ckpt_add_params(&ck, "model.", &m.state);     // params and batch-norm buffers
//     tt_lenet_free(&m);
#ifndef TT_MODELS_LENET_H
#define TT_MODELS_LENET_H

#include <stdbool.h>

#include "../../nn/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tt_lenet {
    tt_nn_conv2d c1, c2;
    tt_nn_batchnorm n1, n2;  // used with batch norm only
    tt_nn_maxpool2d pool;       // nn.MaxPool2d(2), used twice (no state)
    tt_nn_linear f1, f2, f3;
    tt_nn_sequential seq;       // the layers in order
    tt_params params;           // what an optimizer trains
    tt_params state;            // params and the batch-norm buffers: what a checkpoint holds
} tt_lenet;

// The layers initialized from rng (in the order c1, c2, f1, f2, f3), with BatchNorm2d after
// each conv when batch_norm.
void tt_lenet_init(tt_lenet *m, bool batch_norm, tt_rng *rng);
// (B, 1, 28, 28) images -> (B, 10) logits.
tt_tensor *tt_lenet_forward(tt_lenet *m, tt_tensor *x);
// Training mode (batch statistics) or eval mode (running statistics) for the batch norms.
void tt_lenet_train(tt_lenet *m, bool training);
// The model as one module (its sequential), for quantization and summaries.
tt_module tt_lenet_module(tt_lenet *m);
void tt_lenet_free(tt_lenet *m);  // safe on a zeroed struct

#ifdef __cplusplus
}
#endif

#endif  // TT_MODELS_LENET_H

// tinytorch.c nn: modules with named parameters, init schemes and losses.
//
//     tt_nn_linear fc1, fc2;
//     tt_nn_linear_init(&fc1, 2, 16, true, &rng);
//     tt_nn_linear_init(&fc2, 16, 2, true, &rng);
//     tt_params params;
//     tt_params_init(&params);
//     tt_nn_linear_params(&fc1, &params, "fc1");        // "fc1.weight", "fc1.bias"
//     tt_nn_linear_params(&fc2, &params, "fc2");
//     tt_scope_begin();
//     tt_tensor *logits = tt_nn_linear_forward(&fc2, tt_relu(tt_nn_linear_forward(&fc1, x)));
//     tt_backward(tt_cross_entropy(logits, y, -1));
//     tt_scope_end();
//     ...
//     tt_params_free(&params);
//     tt_nn_linear_free(&fc2);
//     tt_nn_linear_free(&fc1);
//
// The families, one header each:
//   module.h       parameter lists, tt_module, tt_nn_sequential, init schemes, the default dtype
//   layers.h       Linear, Embedding(Bag), positional encodings, norms, activations, Dropout, MLP
//   transformer.h  feed-forward, attention, the transformer block
//   conv.h         convolutions, batch norm, pooling, upsampling
//   recurrent.h    RNN, LSTM, GRU
//   loss.h         losses
//   summary.h      the model summary
#ifndef TT_NN_H
#define TT_NN_H

#include "module.h"
#include "layers.h"
#include "transformer.h"
#include "conv.h"
#include "recurrent.h"
#include "loss.h"
#include "summary.h"

#include "walk.h"
#include "activation.h"

// The module names from before the tt_nn_* scheme, deprecated for one release.
#ifndef TT_NO_DEPRECATED
#include "deprecated.h"
#endif

#endif  // TT_NN_H

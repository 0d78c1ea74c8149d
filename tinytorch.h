// tinytorch.c: an autograd tensor framework in C11. The umbrella header.
//
//     #include "tinytorch.h"
//     cc my_model.c $(pkg-config --cflags --libs tinytorch)
//
// tensor/tensor.h      tensors, views, RNG, ownership scopes, counters, errors
// autograd/autograd.h  differentiable ops, backward, gradcheck
// nn/nn.h              modules, parameter lists, init schemes, losses
#ifndef TINYTORCH_H
#define TINYTORCH_H

#include "tensor/tensor.h"
#include "autograd/autograd.h"
#include "nn/nn.h"

#endif  // TINYTORCH_H

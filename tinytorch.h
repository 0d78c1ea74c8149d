// tinytorch.c: an autograd tensor framework in C11. The umbrella header.
//
//     #include "tinytorch.h"
//     cc my_model.c $(pkg-config --cflags --libs tinytorch)
//
// tensor/tensor.h      tensors, views, RNG, ownership scopes, counters, errors
// autograd/autograd.h  differentiable ops, backward, gradcheck
#ifndef TINYTORCH_H
#define TINYTORCH_H

#include "tensor/tensor.h"
#include "autograd/autograd.h"

#endif  // TINYTORCH_H

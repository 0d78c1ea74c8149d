// Internals shared by the files of nn/.
#ifndef TT_NN_INTERNAL_H
#define TT_NN_INTERNAL_H

#include "nn.h"
#include "../tensor/tensor_internal.h"

// A new parameter: an unscoped leaf of tt_default_dtype() that requires grad (zeros).
tt_tensor *tt__param_new(int ndim, const int64_t *shape);
// A new unscoped buffer (no grad) of tt_default_dtype() (zeros).
tt_tensor *tt__buffer_new(int ndim, const int64_t *shape);

#endif  // TT_NN_INTERNAL_H

// Internals shared by the files of nn/.
#ifndef TT_NN_INTERNAL_H
#define TT_NN_INTERNAL_H

#include "nn.h"
#include "../tensor/tensor_internal.h"

// A new parameter: an unscoped leaf of tt_default_dtype() that requires grad (zeros).
tt_tensor *tt__param_new(int ndim, const int64_t *shape);
// A new unscoped buffer (no grad) of tt_default_dtype() (zeros).
tt_tensor *tt__buffer_new(int ndim, const int64_t *shape);

// Aborts unless act is a tt_act value; the message names func (the public function the user
// called) and the valid range. nn/activation.c.
void tt__check_act(tt_act act, const char *func);

// tt_module_free on each direct child of m (a composite's _free). nn/params.c.
void tt__module_free_children(tt_module m);

// Whether ops are a Linear's (tt_nn_linear_module's or tt_nn_linear_new's). nn/layers.c.
bool tt__is_linear_ops(const tt_module_ops *ops);

#endif  // TT_NN_INTERNAL_H

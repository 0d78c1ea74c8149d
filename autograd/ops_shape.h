// What the shape ops' differentiable backwards share with other families' (diagonal's, in
// ops_layout.c): the adjoint of a strided slice, written with public ops.
#ifndef TT_OPS_SHAPE_H
#define TT_OPS_SHAPE_H

#include "autograd_internal.h"

// g (len elements along dim) placed into zeros of `size` elements along dim, at start,
// start + step, ..., start + (len - 1) step (a slice's positions; start 0 when len is 0):
// the gradient of tt_slice. Composed of unsqueeze, pad (cat), reshape and narrow, so it is
// differentiable itself (under grad mode it records its graph).
tt_tensor *tt__place_strided(tt_tensor *g, int dim, int64_t start, int64_t step, int64_t size);

#endif  // TT_OPS_SHAPE_H

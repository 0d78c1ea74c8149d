// Reduction kernels (internal): sum, sum of squared deviations, max and argmax over any set of
// dims of a strided f32/f64 buffer, and the backward kernels that spread a reduced gradient
// back over the input. No autograd and no tensors: a layout comes in as a tt_k_reduce plan.
#ifndef TT_KERNELS_REDUCE_H
#define TT_KERNELS_REDUCE_H

#include <stdbool.h>
#include <stdint.h>

#include "../tensor.h"

// Letters used in the kernels' shape comments:
//   X  the input's shape (any strides), numel(X) = M * N
//   M  the number of outputs (the product of the kept dims), row-major over the kept dims
//   N  the number of input elements reduced into each output (the product of reduced dims)

// The layout of one reduction: the input's dims in their own order, the input's strides, and
// strides into the (M,) output: row-major over the kept dims, 0 on the reduced dims. The
// output's layout is the same with or without keepdim, so the kernels never see keepdim.
typedef struct tt_k_reduce {
    int ndim;
    int64_t shape[TT_MAX_DIMS];    // X
    int64_t xstride[TT_MAX_DIMS];  // the input's strides, in elements
    int64_t ostride[TT_MAX_DIMS];  // into the contiguous (M,) output; 0 where reduced
    int64_t nout;                  // M
    int64_t nred;                  // N
} tt_k_reduce;

// Builds the plan for reducing the dims with reduced[d] set of a (shape, xstride) input.
void tt_k_reduce_plan(tt_k_reduce *r, int ndim, const int64_t *shape, const int64_t *xstride,
                      const bool *reduced);

// Every kernel takes x as a pointer to the input's first element (offset applied) and dt in
// {TT_F32, TT_F64}; f32 inputs are read as float and accumulated in double. The order of
// every sum is fixed by the plan alone (never by the thread count): bitwise reproducible.

// ---- forward ----

// out[m] = sum_j x[m, j]; with mean != NULL, out[m] = sum_j (x[m, j] - mean[m])^2.
// out (M,) and mean (M,) are double; N == 0 gives 0.
void tt_k_reduce_sum(double *out, const void *x, tt_dtype dt, const double *mean,
                     const tt_k_reduce *r);
// out[m] = max_j x[m, j] in dt (M,); NaN propagates. Needs N >= 1.
void tt_k_reduce_max(void *out, const void *x, tt_dtype dt, const tt_k_reduce *r);
// out[m] = the first j of the maximum along the single reduced dim of r; NaN is the maximum
// (the first NaN wins). out (M,); needs N >= 1.
void tt_k_reduce_argmax(int64_t *out, const void *x, tt_dtype dt, const tt_k_reduce *r);

// ---- backward (dx is contiguous in X, of dt; every element is written) ----

// dx = scale * g[m]                                  (sum: scale 1, mean: scale 1/N)
void tt_k_reduce_spread(void *dx, const void *g, double scale, tt_dtype dt,
                        const tt_k_reduce *r);
// dx = (g[m] / k[m]) [x == mx[m]]; k[m] counts the ties (amax's even split; NaN where mx[m] is
// NaN, since then k[m] is 0)
void tt_k_reduce_max_backward(void *dx, const void *x, const void *mx, const void *g,
                              tt_dtype dt, const tt_k_reduce *r);
// dx = factor * (x - mean[m]) * g[m]; factor = 2 / (N - correction)   (d var / dx)
void tt_k_reduce_var_backward(void *dx, const void *x, const double *mean, const void *g,
                              double factor, tt_dtype dt, const tt_k_reduce *r);
// dx = g[m] * (x == mean[m] ? NaN : inf)   (d var / dx over all dims when N == correction)
void tt_k_reduce_var_backward_nodof(void *dx, const void *x, const double *mean, const void *g,
                                    tt_dtype dt, const tt_k_reduce *r);

#endif  // TT_KERNELS_REDUCE_H

// Indexing, sorting and scan kernels (internal): gather / scatter / scatter-add along one dim,
// cumulative sums and products along one dim (with the cumprod backward), and stable sort
// indices. No autograd and no tensors: layouts come in as (ndim, shape, strides); the callers
// validate.
#ifndef TT_KERNELS_INDEX_H
#define TT_KERNELS_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "../tensor.h"

// Letters used in the shape comments:
//   I  the index's shape (gather, scatter-add iterate over it), ndim dims
//   X  the input's shape (scans, sort); L = X[dim] the length along the scanned dim
// Strides are in elements; pointers point at the first element (offset applied). dt is
// TT_F32 or TT_F64 (f32 is computed in float, scan accumulators in double as PyTorch's CPU
// acc_type), and for gather, scatter and scatter-add also TT_I32, TT_I64 or TT_BOOL (exact:
// element copies; integer sums wrap around on overflow, a bool sum is or); it (the index
// dtype) is TT_I32 or TT_I64. Index values are already in range.

// out[p] = x[p with p[dim] = index[p]] for every p in I (torch.gather).
void tt_k_gather(void *out, const int64_t *ostride, const void *x, const int64_t *xstride,
                 const void *index, const int64_t *istride, tt_dtype it, tt_dtype dt,
                 int ndim, const int64_t *shape, int dim);
// out[p with p[dim] = index[p]] = src[p] for every p in I, in row-major order of p (the last
// write to a target wins; torch.scatter_).
void tt_k_scatter(void *out, const int64_t *ostride, const void *src, const int64_t *sstride,
                  const void *index, const int64_t *istride, tt_dtype it, tt_dtype dt, int ndim,
                  const int64_t *shape, int dim);
// out[p with p[dim] = index[p]] += src[p] for every p in I, in row-major order of p
// (torch.scatter_add_; duplicates accumulate, the order is fixed).
void tt_k_scatter_add(void *out, const int64_t *ostride, const void *src,
                      const int64_t *sstride, const void *index, const int64_t *istride,
                      tt_dtype it, tt_dtype dt, int ndim, const int64_t *shape, int dim);

// out (X, contiguous) = the running sum of x along dim; reverse: from the end (sum over j >= i),
// the backward of cumsum.
void tt_k_cumsum(void *out, const void *x, const int64_t *xstride, bool reverse, tt_dtype dt,
                 int ndim, const int64_t *shape, int dim);
// out (X, contiguous) = the running product of x along dim.
void tt_k_cumprod(void *out, const void *x, const int64_t *xstride, tt_dtype dt, int ndim,
                  const int64_t *shape, int dim);
// dx (X, contiguous) = d cumprod / dx applied to g (X, contiguous):
// dx[i] = sum_{j >= i} g[j] prod_{k <= j, k != i} x[k], correct with zeros in x: divisions only
// by the x before the first zero of a line, that zero's term by a running product (PyTorch's
// cumprod_backward; O(L) per line).
void tt_k_cumprod_backward(void *dx, const void *x, const int64_t *xstride, const void *g,
                           tt_dtype dt, int ndim, const int64_t *shape, int dim);

// out (X, contiguous, i64) = the positions along dim that sort each line of x, stable (equal
// values keep their order); NaN sorts above every number (last ascending, first descending),
// as torch.sort(stable=True).
void tt_k_sort_indices(int64_t *out, const void *x, const int64_t *xstride, bool descending,
                       tt_dtype dt, int ndim, const int64_t *shape, int dim);

#endif  // TT_KERNELS_INDEX_H

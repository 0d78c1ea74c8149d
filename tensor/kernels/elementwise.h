// Raw elementwise kernels: unary maps (with an optional scalar), binary maps and their
// backward maps, over one strided run of n elements, in f32 (computed in float) and f64.
// No tensors, no broadcasting and no autograd: autograd/ops_elementwise.c walks the runs.
#ifndef TT_KERNELS_ELEMENTWISE_H
#define TT_KERNELS_ELEMENTWISE_H

#include <stdint.h>

// ---- ops: the elementwise rows of tensor/ops.def ----

// y = f(x) (TT_UNARY rows) or y = f(x; s) (TT_UNARY_S rows): TT_KU_EXP, TT_KU_POW_SCALAR, ...
typedef enum tt_kunary_op {
#define TT_UNARY(ID, name, saves, flags, lo, hi) TT_KU_##ID,
#define TT_UNARY_S(ID, name, saves, flags, lo, hi, s) TT_KU_##ID,
#include "../ops.def"
    TT_KU_COUNT
} tt_kunary_op;

// y = f(a, b) (TT_BINARY rows): TT_KB_ADD, TT_KB_MAXIMUM, ...
typedef enum tt_kbinary_op {
#define TT_BINARY(ID, name, saves, flags, alo, ahi, blo, bhi) TT_KB_##ID,
#include "../ops.def"
    TT_KB_COUNT
} tt_kbinary_op;

// ---- unary ----

// y[i*sy] = f(x[i*sx]; s) for i < n. s is ignored by the ops without a scalar.
void tt_kunary_f32(tt_kunary_op op, float *y, const float *x, double s, int64_t n,
                   int64_t sy, int64_t sx);
void tt_kunary_f64(tt_kunary_op op, double *y, const double *x, double s, int64_t n,
                   int64_t sy, int64_t sx);

// dx[i*sdx] = g[i*sg] * f'(v[i*sv]) for i < n, where v is the op's input x, or its output y
// for the rows flagged TT_EW_OUT (exp, sqrt, rsqrt, tanh, sigmoid). An op whose derivative
// reads neither never loads v (pass g again). Produces (=).
void tt_kunary_backward_f32(tt_kunary_op op, float *dx, const float *g, const float *v,
                            double s, int64_t n, int64_t sdx, int64_t sg, int64_t sv);
void tt_kunary_backward_f64(tt_kunary_op op, double *dx, const double *g, const double *v,
                            double s, int64_t n, int64_t sdx, int64_t sg, int64_t sv);

// ---- binary ----

// y[i*sy] = f(a[i*sa], b[i*sb]) for i < n. A stride of 0 broadcasts one element.
void tt_kbinary_f32(tt_kbinary_op op, float *y, const float *a, const float *b, int64_t n,
                    int64_t sy, int64_t sa, int64_t sb);
void tt_kbinary_f64(tt_kbinary_op op, double *y, const double *a, const double *b, int64_t n,
                    int64_t sy, int64_t sa, int64_t sb);

// d[i*sd] = g[i*sg] * df/da (wrt == 0) or df/db (wrt == 1) at (a[i*sa], b[i*sb]), for i < n.
// Produces (=) the gradient over the output's shape; the caller sums broadcast dims.
void tt_kbinary_backward_f32(tt_kbinary_op op, int wrt, float *d, const float *g,
                             const float *a, const float *b, int64_t n, int64_t sd,
                             int64_t sg, int64_t sa, int64_t sb);
void tt_kbinary_backward_f64(tt_kbinary_op op, int wrt, double *d, const double *g,
                             const double *a, const double *b, int64_t n, int64_t sd,
                             int64_t sg, int64_t sa, int64_t sb);

// ---- clamp: contiguous runs ----

// y[i] = min(max(x[i], lo), hi) for i < n; a NaN stays NaN. lo or hi may be -+INFINITY.
void tt_kclamp_f32(float *y, const float *x, double lo, double hi, int64_t n);
void tt_kclamp_f64(double *y, const double *x, double lo, double hi, int64_t n);
// dx[i] = lo <= x[i] <= hi ? g[i] : 0 for i < n (the bounds pass the gradient). Produces (=).
void tt_kclamp_backward_f32(float *dx, const float *g, const float *x, double lo, double hi,
                            int64_t n);
void tt_kclamp_backward_f64(double *dx, const double *g, const double *x, double lo,
                            double hi, int64_t n);

#endif  // TT_KERNELS_ELEMENTWISE_H

// Raw elementwise kernels: unary maps (with an optional scalar), binary maps and their
// backward maps, over one strided run of n elements, in f32 (computed in float) and f64.
// No tensors, no broadcasting and no autograd: autograd/ops_elementwise.c walks the runs.
#ifndef TT_KERNELS_ELEMENTWISE_H
#define TT_KERNELS_ELEMENTWISE_H

#include <stdbool.h>
#include <stdint.h>

// ---- ops ----

// y = f(x) or y = f(x; s) with the scalar s (the *_S ops).
typedef enum tt_kunary_op {
    TT_KU_NEG,        // -x
    TT_KU_EXP,        // e^x
    TT_KU_LOG,        // ln x
    TT_KU_SQRT,       // sqrt x
    TT_KU_RSQRT,      // 1 / sqrt x
    TT_KU_ABS,        // |x|
    TT_KU_TANH,       // tanh x
    TT_KU_SIGMOID,    // 1 / (1 + e^-x), never overflowing
    TT_KU_RELU,       // max(x, 0)
    TT_KU_GELU,       // x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
    TT_KU_GELU_TANH,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    TT_KU_SILU,       // x sigmoid(x)
    TT_KU_SQUARE,     // x^2
    TT_KU_ADD_S,      // x + s
    TT_KU_MUL_S,      // x * s
    TT_KU_DIV_S,      // x / s (a true division)
    TT_KU_RSUB_S,     // s - x
    TT_KU_POW_S,      // x ^ s
    TT_KU_COUNT
} tt_kunary_op;

// y = f(a, b).
typedef enum tt_kbinary_op {
    TT_KB_ADD,
    TT_KB_SUB,
    TT_KB_MUL,
    TT_KB_DIV,
    TT_KB_POW,
    TT_KB_MAXIMUM,  // NaN if either is NaN
    TT_KB_MINIMUM,
    TT_KB_COUNT
} tt_kbinary_op;

// ---- unary ----

// y[i*sy] = f(x[i*sx]; s) for i < n. s is ignored by the ops without a scalar.
void tt_kunary_f32(tt_kunary_op op, float *y, const float *x, double s, int64_t n,
                   int64_t sy, int64_t sx);
void tt_kunary_f64(tt_kunary_op op, double *y, const double *x, double s, int64_t n,
                   int64_t sy, int64_t sx);

// True when the backward of op reads the forward's output y (else it reads the input x).
bool tt_kunary_backward_uses_output(tt_kunary_op op);

// dx[i*sdx] = g[i*sg] * f'(v[i*sv]) for i < n, where v is the op's input x, or its output y
// when tt_kunary_backward_uses_output(op) (exp, sqrt, rsqrt, tanh, sigmoid). Produces (=).
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

#endif  // TT_KERNELS_ELEMENTWISE_H

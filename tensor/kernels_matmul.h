// Internal interface of the matrix-product kernels: a strided GEMM per dtype and a batched
// driver over broadcast batch dims. Raw pointers and sizes only, no autograd. Not installed;
// the portable kernels behind it are meant to be swapped for packed SIMD ones.
#ifndef TT_KERNELS_MATMUL_H
#define TT_KERNELS_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

// ---- single GEMM ----
// C = A B (accumulate false) or C += A B (accumulate true), with A (M, K), B (K, N), C (M, N)
// each addressed through its own row and column strides in elements (any sign, so transposed
// and sliced views are read in place; a stride along a dim of size 1 is ignored). C must not
// overlap A or B. Deterministic: the summation order over k depends only on M, N, K and the
// layout, never on threads. f32 sums each run of up to TT_K_GEMM_KC products in float and the
// runs in double; f64 sums in double.
#define TT_K_GEMM_KC 128

void tt_k_gemm_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t a_rs, int64_t a_cs,
                   const float *B, int64_t b_rs, int64_t b_cs, float *C, int64_t c_rs,
                   int64_t c_cs, bool accumulate);
void tt_k_gemm_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t a_rs,
                   int64_t a_cs, const double *B, int64_t b_rs, int64_t b_cs, double *C,
                   int64_t c_rs, int64_t c_cs, bool accumulate);

// ---- batched GEMM over broadcast batch dims ----

// A stack of strided matrices: element (i, j) of the matrix at batch index (b0, b1, ...) is
// data[sum_d b_d * bs[d] + i * rs + j * cs]. A batch stride of 0 repeats (broadcasts) a matrix.
typedef struct tt_k_matrix {
    void *data;               // element (0, 0) of batch index (0, ...)
    int64_t rs, cs;           // row and column strides, in elements
    int64_t bs[TT_MAX_DIMS];  // one per batch dim (0 on broadcast dims)
} tt_k_matrix;

// For every index of `batch` (nbatch dims): C[idx] (+)= A[idx] B[idx], with A (M, K), B (K, N),
// C (M, N) in `dtype` (TT_F32 or TT_F64). When C has a batch stride of 0 on a dim of size > 1,
// the products of that dim are summed into the same C (a reduction over a broadcast dim, as a
// gradient needs); that requires accumulate (zero C first for a plain sum). Batch dims laid
// out as a continuation of a matrix dim are folded into M, N or K, so (B, T, C) @ (C, D) is one
// GEMM with M = B*T, and its weight gradient one GEMM with K = B*T.
void tt_k_gemm_batched(tt_dtype dtype, int nbatch, const int64_t *batch, int64_t M, int64_t N,
                       int64_t K, const tt_k_matrix *a, const tt_k_matrix *b,
                       const tt_k_matrix *c, bool accumulate);

#endif  // TT_KERNELS_MATMUL_H

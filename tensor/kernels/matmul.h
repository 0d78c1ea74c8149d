// Internal interface of the matrix-product kernels: a strided GEMM per dtype, a batched driver
// over broadcast batch dims, the micro-kernel table of the packed GEMM (gemm_*.c in this folder)
// and a selector that forces one SIMD path (for tests and benchmarks). Raw pointers and sizes
// only, no autograd. Not installed.
#ifndef TT_KERNELS_MATMUL_H
#define TT_KERNELS_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "../tensor.h"

// ---- single GEMM ----
// C = A B (accumulate false) or C += A B (accumulate true), with A (M, K), B (K, N), C (M, N)
// each addressed through its own row and column strides in elements (any sign, so transposed
// and sliced views are read in place; a stride along a dim of size 1 is ignored). C must not
// overlap A or B. M, N, K >= 0.
//
// Deterministic: the summation order over k depends only on M, N, K, the layout and the SIMD
// level (cpu.h), never on the number of threads or on timing, so results are bitwise
// identical for any OMP_NUM_THREADS and run to run.
//
// Accuracy. f64 sums in double. f32, packed path (the fast one): each C element is a chain of
// float FMAs over a block of up to TT_K_GEMM_KC steps of k, the blocks added to C in float, as
// BLAS does; when K > TT_K_GEMM_KSPLIT, K is cut into chunks of TT_K_GEMM_KSPLIT steps whose
// float results are summed in double, so the error of a long reduction (a weight gradient
// whose K is B*T) stays bounded. f32 matrix-vector products (M == 1 or N == 1) and products
// with at most 16 outputs sum each run of up to TT_K_GEMM_KC products in float and the runs in
// double.
#define TT_K_GEMM_KC 256
#define TT_K_GEMM_KSPLIT 4096

void tt_k_gemm_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t a_rs, int64_t a_cs,
                   const float *B, int64_t b_rs, int64_t b_cs, float *C, int64_t c_rs,
                   int64_t c_cs, bool accumulate);
void tt_k_gemm_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t a_rs,
                   int64_t a_cs, const double *B, int64_t b_rs, int64_t b_cs, double *C,
                   int64_t c_rs, int64_t c_cs, bool accumulate);

// C = A B + bias, bias (N) added to every row of C (unit column stride), as a Linear layer's
// forward needs: the same bits as filling each row of C with bias and accumulating (BLAS's
// beta = 1). On the packed path the bias enters in the micro-kernel's store of the first k
// block, so no extra pass over C.
void tt_k_gemm_bias_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t a_rs,
                        int64_t a_cs, const float *B, int64_t b_rs, int64_t b_cs,
                        const float *bias, float *C, int64_t c_rs);
void tt_k_gemm_bias_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t a_rs,
                        int64_t a_cs, const double *B, int64_t b_rs, int64_t b_cs,
                        const double *bias, double *C, int64_t c_rs);

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
// the products of that dim are summed into the same C in batch order (a reduction over a
// broadcast dim, as a gradient needs); that requires accumulate (zero C first for a plain sum).
// Batch dims laid out as a continuation of a matrix dim are folded into M, N or K, so
// (B, T, C) @ (C, D) is one GEMM with M = B*T, and its weight gradient one GEMM with K = B*T.
// Threads: a stack of small products (attention's B*NH matrices) runs its matrices in
// parallel, one thread each; otherwise each product splits its blocks between threads. Either
// way every element is computed by the same code, so results do not depend on the threads.
void tt_k_gemm_batched(tt_dtype dtype, int nbatch, const int64_t *batch, int64_t M, int64_t N,
                       int64_t K, const tt_k_matrix *a, const tt_k_matrix *b,
                       const tt_k_matrix *c, bool accumulate);

// ---- SIMD path ----
// The CPU level (cpu.h: tt_cpu_get_level, TT_CPU) picks the micro-kernels at every product:
// AVX-512 at TT_CPU_AVX512 and above, AVX2 + FMA at TT_CPU_AVX2, else the portable C kernels;
// tests force each level to check every kernel. Results differ between levels in the last
// bits (FMA or not, vector width), never between thread counts.

// The f32 micro-kernel the current level runs, e.g. "avx512 12x32" (for bench output).
const char *tt_k_gemm_kernel_name(void);

// ---- micro-kernels of the packed GEMM (kernels/gemm_generic.c, gemm_avx2.c, gemm_avx512.c) ----
// c[i * ldc + j] (+)= sum_k a[k * mr_max + i] * b[k * nr_max + j] for i < mr, j < nr: one tile
// of C (unit column stride) from a packed panel of A (kc, MR) and one of B (kc, NR), both
// zero-padded to the full tile. add false overwrites the tile, with bias[j] added to every
// row when bias is not NULL (the first k block of C = bias + A B; the same bits as adding the
// block to a C that holds the bias); add true ignores bias. Each element is one chain over k in
// order (an FMA chain on the SIMD paths), so a tile computes the same bits whatever its
// position, edge or not.
typedef void (*tt_k_ukernel)(int64_t kc, const void *a, const void *b, void *c, int64_t ldc,
                             int mr, int nr, bool add, const void *bias);

// Packing into that layout: X (kc, n), X[k, j] = src[k * ks + j * js], into ceil(n / w)
// panels of width w, dst[q][k * w + j] = X[k, q w + j], zero for q w + j >= n (the driver packs
// A^T with w = MR and B with w = NR). Called only when js == 1 (rows of X contiguous) or
// ks == 1 (columns contiguous); pure data movement, so every packer writes the same bytes.
typedef void (*tt_k_packer)(void *dst, const void *src, int64_t ks, int64_t js, int64_t kc,
                            int64_t n, int w);

// Matrix-vector products (kernels/gemv_x86.c): out (TT_K_DOT_ROWS) = the dot products of the
// rows a + r rs (K floats each, r < TT_K_DOT_ROWS) with x (K), each with exactly the bits of
// the portable dot product of the accuracy note above (8 lanes by k mod 8, a multiply then an
// add, runs of TT_K_GEMM_KC steps reduced pairwise in float and summed in double), so the path
// changes the speed of a matrix-vector product, never its result. The rows are interleaved
// so that their chains of additions overlap and x is loaded once for all of them; four rows
// far apart (matmul_gemm.inc's GEMV_DOTS) are four sequential streams of memory, which ran at
// 32 GB/s where eight ran at 30 and eight neighbouring rows at 21 (124M weights, AMD EPYC).
#define TT_K_DOT_ROWS 4
// a and x point to floats (void, as in the micro-kernels' table).
typedef void (*tt_k_dot_rows)(double *out, int64_t K, const void *a, int64_t rs,
                              const void *x);
void tt_k_dot_rows_f32_avx2(double *out, int64_t K, const void *a, int64_t rs, const void *x);
void tt_k_dot_rows_f32_avx512(double *out, int64_t K, const void *a, int64_t rs,
                              const void *x);

// Matrix-vector products of a matrix with contiguous columns (kernels/gemv_x86.c): y (M)
// (+)= A (M, K) x with A[i, k] = a[i + k cs], x[k] at x + k xs, y[i] at y + i ys (at
// decoding: attention's weights times the cached values, A = V^T). Exactly the bits
// of matmul.c's portable gemv_cols (runs of TT_K_GEMM_KC steps of k, four steps a pass added
// left to right, a multiply then an add, the runs summed in double; the final add to y in
// double when accumulating). The portable loop streams its sums through memory every pass
// and reads A a piece of each of four columns at a time; this one keeps 64 rows' sums in
// registers and reads the columns one after another (the cached values, position by
// position: 10 against 22 GB/s for the scores beside it, cold, before it).
typedef void (*tt_k_gemv_cols)(int64_t M, int64_t K, const void *a, int64_t cs, const void *x,
                               int64_t xs, void *y, int64_t ys, bool accumulate);
void tt_k_gemv_cols_f32_avx512(int64_t M, int64_t K, const void *a, int64_t cs, const void *x,
                               int64_t xs, void *y, int64_t ys, bool accumulate);

typedef struct tt_k_gemm_kernel {
    const char *name;
    int mr, nr;            // tile rows (broadcast from A) and columns (vector loads of B)
    tt_k_ukernel full;     // any mr <= MR, nr <= NR
    tt_k_ukernel narrow;   // nr <= NR / 2 (a cheaper last panel), or NULL
    tt_k_packer pack;      // SIMD packing for this path, or NULL (the driver's SSE2 / C one)
    tt_k_dot_rows dot_rows;  // f32 matrix-vector rows for this path, or NULL (portable C)
    tt_k_gemv_cols gemv_cols;  // f32 contiguous-column matrix-vector, or NULL (portable C)
} tt_k_gemm_kernel;

extern const tt_k_gemm_kernel tt_k_gemm_generic_f32, tt_k_gemm_generic_f64;
extern const tt_k_gemm_kernel tt_k_gemm_avx2_f32, tt_k_gemm_avx2_f64;
extern const tt_k_gemm_kernel tt_k_gemm_avx512_f32, tt_k_gemm_avx512_f64;

#endif  // TT_KERNELS_MATMUL_H

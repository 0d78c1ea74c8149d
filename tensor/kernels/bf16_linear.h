// Internal interface of the bf16-weight Linear kernels (compress/'s TT_QUANT_BF16): a weight
// (N, K) rounded once to bf16 and packed in k-pair panels, multiplied by f32 inputs with f32
// sums -- a matrix-vector product for one row (decoding) and a GEMM on the bf16 micro-kernels
// of bf16.h for many (prefill), each with a run-time choice of SIMD path (cpu.h). Not installed.
#ifndef TT_KERNELS_BF16_LINEAR_H
#define TT_KERNELS_BF16_LINEAR_H

#include "bf16.h"

// Output channels per panel: the width of the AVX-512 micro-kernels (bf16.h).
#define TT_K_BF16W_NR 32

// A packed bf16 weight: ceil(N / 32) panels, panel q at w + q * tt_k_bf16_panel(K, 32) words,
// holding channels 32 q .. 32 q + 31 in bf16.h's k-pair layout (word (p, j) = bf16 of
// W[32 q + j, 2 p] in its low half, of W[32 q + j, 2 p + 1] in its high half; zeros past K and
// past N). A GEMM's B panel for steps k0 .. k0 + kc of k (k0 even) is the slice at word
// k0 / 2 * 32 of a panel, so the product reads the weight in place, never repacking it.
typedef struct tt_k_bf16w {
    uint32_t *w;       // owned
    int64_t N, K, kp;  // kp = ceil(K / 2)
} tt_k_bf16w;

// Packs W (N, K) row-major f32, rounding each entry to bf16 (tt_bf16_from_f32). N, K >= 1.
void tt_k_bf16w_init(tt_k_bf16w *w, const float *W, int64_t N, int64_t K);
void tt_k_bf16w_free(tt_k_bf16w *w);  // safe on a zeroed struct
// The bytes the product reads for the weight: N ceil(K / 2) 4 (padding of the last panel aside).
int64_t tt_k_bf16w_bytes(const tt_k_bf16w *w);

// y (M, N) = x (M, K) W^T + bias (N, or NULL), x and y row-major f32, M >= 0.
//
// Arithmetic (the same bits on every path and thread count): each x is rounded to bf16 as
// tt_bf16_from_f32 does; for each y[m, n], k runs in blocks of TT_K_BF16_KC steps; a block's sum
// is a chain from +0 over its k pairs, each adding the odd step's product, then the even step's,
// with one f32 rounding each (vdpbf16ps's order; the products of bf16 values are exact in f32);
// y = bias + block 0, then y = y + block b for each later block. So y equals
// tt_k_gemm_bias_bf16's C for A = x, B = W^T in bf16 bit for bit, as bf16.h describes it
// (subnormal inputs, products or sums aside, which vdpbf16ps takes as zero).
//
// M = 1: the matrix-vector product, streaming the weight once (two panels at a time, four
// accumulator chains per step); M > 1: x's rows packed per block of k, the micro-kernel run
// over each weight panel in place. Threads: the pool (tensor/parallel.h) over the panels.
void tt_k_bf16w_linear(float *y, const float *x, const tt_k_bf16w *w, const float *bias,
                       int64_t M);

// The matrix-vector kernel the current CPU level runs, e.g. "avx512bf16 vdpbf16ps".
const char *tt_k_bf16w_gemv_name(void);

// ---- per-path matrix-vector kernels (bf16_gemv_x86.c) ----
// y[32 q + j] for panels q0 <= q < q1, the arithmetic above; xp: x's k pairs as words (low half
// the even step, zero past K), kp of them.
typedef void (*tt_k_bf16w_gemv_fn)(float *y, const uint32_t *xp, const tt_k_bf16w *w,
                                   const float *bias, int64_t q0, int64_t q1);
typedef struct tt_k_bf16w_gemv {
    const char *name;
    tt_k_bf16w_gemv_fn fn;  // NULL where the build has no such path
} tt_k_bf16w_gemv;
extern const tt_k_bf16w_gemv tt_k_bf16w_gemv_avx2, tt_k_bf16w_gemv_avx512,
    tt_k_bf16w_gemv_avx512bf16;

#endif  // TT_KERNELS_BF16_LINEAR_H

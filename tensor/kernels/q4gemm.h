// Internal interface of the 4-bit weight GEMM and GEMV (q4gemm.c, q4gemm_avx2.c,
// q4gemm_avx512.c): a weight in blocks of 32 along K, 4 bits each with an f16 scale per block;
// activations quantized at run time to int8 in blocks of 32 with an f32 scale each; exact int32
// block sums, accumulated in f32 block after block. Raw pointers and sizes only, no autograd,
// no module (the int4 Linear, compress/qlinear_int4.c, builds on this). Not installed.
//
//     tt_k_q4weight qw;
//     tt_k_q4weight_init(&qw, w, N, K);               // w (N, K) f32, a Linear's weight
//     tt_k_q4gemm_f32(y, x, &qw, bias, M);            // y (M, N) = x (M, K) W^T + bias
//     tt_k_q4weight_free(&qw);
#ifndef TT_KERNELS_Q4GEMM_H
#define TT_KERNELS_Q4GEMM_H

#include <stdint.h>

// Letters: Y (M, N) = X (M, K) W^T, W (N, K); QK = 32 k per block, KB = ceil(K / QK) blocks.
//
// The scheme (the q4_0 / q8_0 pair of GGML's formats, laid out for vpdpbusd). Weight block
// (n, b) = w[n, 32 b .. 32 b + 32): a scale d[n, b] stored as f16, and nibbles
// e[n, k] = clamp(round_half_even(w[n, k] / d) + 8, 0, 15), so w ~= d (e - 8), e - 8 in
// [-8, 7]. d is the candidate of least squared error on the block among m / -8, m / -7.75,
// m / -7.5, m / -7.25, m / -7 and m / 7, m the block's entry of largest |w| (the first on a
// tie), each rounded to f16 first (the division uses the stored scale), ties to the first. A
// block of zeros has d = 0 and e = 8; a block holding a NaN or an infinity gets d = NaN (its
// outputs are NaN, as the f32 product's are). Past K the nibbles are 8 (zero weights).
// Activation block (m, b): s[m, b] = max |x| / 127, q[m, k] = round_half_even(x[m, k] *
// (1 / s)) in [-127, 127]; zeros give s = 0, q = 0; a NaN or an infinity s = NaN, q = 0. Then
//     sum_k x w ~= sum_b s[m, b] d[n, b] S[m, n, b],  S = sum_k q (e - 8) = sum_k q e - 8 sum_k q
// with S exact in int32 (|S| <= 32 * 8 * 127, so also exact as a float). vpdpbusd multiplies
// the unsigned nibbles by the signed activation bytes; the -8 sum_k q term is precomputed per
// activation block (c[m, b] = -8 sum_k q) and starts each block's sum.
//
// Output, the same float operations in the same order on every path (no contraction):
//     acc = +0; for b: acc = acc + (float)S[m, n, b] * ((float)d[n, b] * s[m, b]);
//     y[m, n] = acc + bias[n]   (or acc without a bias)
// so every path and thread count gives the same bits.
#define TT_K_Q4_QK 32
// Output channels per packed panel: one zmm of int32 lanes.
#define TT_K_Q4_NR 16
// Bytes of one packed block of a panel: 16 channels x 32 nibbles, then 16 f16 scales.
#define TT_K_Q4_BLOCK_BYTES (TT_K_Q4_NR * TT_K_Q4_QK / 2 + 2 * TT_K_Q4_NR)

// ---- f16 ----

// The f16 nearest to f (round half to even; overflow to inf, NaN stays NaN).
uint16_t tt_k_f32_to_f16(float f);
// The f32 equal to h (exact).
float tt_k_f16_to_f32(uint16_t h);

// ---- quantization ----

// One weight block: the f16 scale and the nibbles e (n of them, n <= 32; the rest are not
// written) of w (n), as above.
uint16_t tt_k_q4_quantize_block(uint8_t *e, const float *w, int n);
// Activations: q (M, KB * 32) int8 (zero past K), s (M, KB), c (M, KB) = -8 sum q per block,
// from x (M, K) (rows ldx floats apart), as above.
void tt_k_q4_quantize_act(int8_t *q, float *s, int32_t *c, const float *x, int64_t ldx,
                          int64_t M, int64_t K);

// ---- packed weights ----
// Panel p (channels [16 p, 16 p + 16)), block b: TT_K_Q4_BLOCK_BYTES (288). Panels go in pairs
// whose blocks interleave, so a product of two panels reads one stream: pair q = p / 2 starts
// at 2 q KB 288, its block b at + 2 b 288 (panel 2 q), + 2 b 288 + 288 (panel 2 q + 1); the last
// panel of an odd count is alone, its block b at 2 q KB 288 + b 288. A block's first 256
// bytes are 4 chunks of 64: chunk c, byte 4 j + t holds e[16 p + j, 32 b + 4 c + t] in its low
// nibble and e[16 p + j, 32 b + 16 + 4 c + t] in its high one (so a masked load
// gives 16 channels x 4 k bytes, vpdpbusd's operand); then the 16 scales d[16 p + j, b] as f16.
// Channels past N: nibbles 8, scale 0.
typedef struct tt_k_q4weight {
    int64_t N, K;
    uint8_t *packed;  // tt_k_q4weight_bytes
} tt_k_q4weight;

// Packs w (N, K) f32; N, K >= 1. Memory from TT_MALLOC, owned; _free is safe on a zeroed struct.
void tt_k_q4weight_init(tt_k_q4weight *qw, const float *w, int64_t N, int64_t K);
void tt_k_q4weight_free(tt_k_q4weight *qw);
int64_t tt_k_q4weight_bytes(const tt_k_q4weight *qw);  // what a product reads of the weight
// The dequantized weight: w (N, K) = d (e - 8) (tests and error bounds).
void tt_k_q4weight_dequant(float *w, const tt_k_q4weight *qw);

// ---- products ----

// y (M, N) = the scheme's product of x (M, K) f32 (quantized at run time in a per-thread
// workspace) and the packed weight, + bias (N) or NULL; y must not overlap x. Threads: rows
// split between threads when M is large, else panels; every output is computed by the same
// code either way, so the result does not depend on the number of threads.
void tt_k_q4gemm_f32(float *y, const float *x, const tt_k_q4weight *qw, const float *bias,
                     int64_t M);

// ---- SIMD path ----
// As the int8 GEMM (qgemm.h): vpdpbusd on zmm at level avx512 and above when the CPU has VNNI,
// else AVX2 from level avx2 (vpmaddubsw of the nibbles by the int8 bytes: each int16 pair sum
// is at most 2 * 15 * 127, and eight of them at most 30480, so nothing saturates; then vpmaddwd
// by ones to int32), else portable C. Every path gives the same int32 block sums and the same
// f32 operations.
const char *tt_k_q4gemm_kernel_name(void);  // e.g. "vnni 4x32"

// ---- micro-kernels ----
// c (mr, 32) f32: row i continues the accumulation above (acc = c's values, not 0) over kb
// blocks of a pair of packed panels: block b of the first at w + b (288 + pstride), the
// second's pstride bytes on (pstride 288; 0 for a lone panel, computed twice), for the mr
// rows' activation bytes x[i] (kb * 32), scales s[i] (kb) and corrections cs[i] (kb). Two
// panels, so that each broadcast of a row's bytes feeds two products. `tile` takes mr == the
// kernel's mr, `row` mr == 1.
typedef void (*tt_k_q4ukernel)(float *c, const int8_t *const *x, const float *const *s,
                               const int32_t *const *cs, int64_t kb, const uint8_t *w,
                               int64_t pstride);

typedef struct tt_k_q4gemm_kernel {
    const char *name;
    int mr;               // rows of `tile`
    tt_k_q4ukernel tile;  // mr rows
    tt_k_q4ukernel row;   // 1 row
} tt_k_q4gemm_kernel;

extern const tt_k_q4gemm_kernel tt_k_q4gemm_generic, tt_k_q4gemm_avx2, tt_k_q4gemm_vnni;

#endif  // TT_KERNELS_Q4GEMM_H

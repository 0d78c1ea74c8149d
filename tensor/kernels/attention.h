// Raw kernels of the fused attention op (autograd/ops_attention.c): y = softmax(q k^T scale
// [+ mask] [+ causal mask]) v, forward and backward, f32 and f64, tiled so that no (T, S) score
// matrix is ever formed. Strided raw buffers only; no tensors, no autograd. Internal, not
// installed.
//
// Letters: B batch, NH query heads, NKV key/value heads (NH % NKV == 0: query head h reads
// kv head h / (NH / NKV)), T queries, S keys, HS head size. A (B, heads, rows, HS) operand is
// addressed through its own element strides of b, heads and rows; HS is always unit-stride.
#ifndef TT_KERNELS_ATTENTION_H
#define TT_KERNELS_ATTENTION_H

#include <stdbool.h>
#include <stdint.h>

#include "../tensor.h"

// Queries and keys are processed in blocks of this many rows (a multiple of every SIMD width).
#define TT_KATTN_BLOCK 32

typedef struct tt_kattn_dims {
    int64_t B, NH, NKV, T, S, HS;
    bool causal;   // query i sees keys 0 .. i (needs T == S)
    double scale;  // multiplies q k^T before the softmax
    // f32 only (f64 ignores it): the block products take bf16 inputs and accumulate in f32
    // (bf16 autocast; see "bf16 products" below).
    bool bf16;
} tt_kattn_dims;

// Element strides of a (B, heads, rows, HS) buffer; the HS dim has stride 1.
typedef struct tt_kattn_strides {
    int64_t b, h, t;
} tt_kattn_strides;

// An optional mask over the (B, NH, T, S) scores, read in place through element strides of
// b, h (query head), t (query) and s (key); a broadcast dim has stride 0, so a (T, S) or
// (B, 1, 1, S) mask is never expanded. Bool (uint8 0/1): a 0 key gets weight 0 (its score is
// -inf). Additive: the F value is added to the scaled score. A query row whose keys are all
// masked (scores all -inf) gets y = 0, lse = +inf and zero gradients.
typedef struct tt_kattn_mask {
    const void *data;  // uint8_t when is_bool, else the kernel's F
    bool is_bool;
    int64_t b, h, t, s;
} tt_kattn_mask;

// Online softmax (Milakov & Gimelshein 2018; Dao et al. 2022, FlashAttention):
// y (B, NH, T, HS) = softmax(q k^T scale) v, writing y and lse (B, NH, T) contiguous,
// lse = log sum_j exp(q_i . k_j scale): all the backward needs besides q, k, v, y.
// q (B, NH, T, HS); k, v (B, NKV, S, HS); mask NULL or as tt_kattn_mask. Needs S >= 1 when
// T >= 1.
void tt_kattention_forward_f32(float *y, tt_kattn_strides sy, float *lse, const float *q,
                               tt_kattn_strides sq, const float *k, tt_kattn_strides sk,
                               const float *v, tt_kattn_strides sv, const tt_kattn_mask *mask,
                               const tt_kattn_dims *d);
void tt_kattention_forward_f64(double *y, tt_kattn_strides sy, double *lse, const double *q,
                               tt_kattn_strides sq, const double *k, tt_kattn_strides sk,
                               const double *v, tt_kattn_strides sv, const tt_kattn_mask *mask,
                               const tt_kattn_dims *d);

// FlashAttention's backward (Dao et al. 2022, Algorithm 2 / FlashAttention-2): P is
// recomputed block by block from lse. dq (B, NH, T, HS), dk and dv (B, NKV, S, HS) are
// contiguous and OVERWRITTEN: each thread zeroes the rows it owns, then adds into them (no
// caller memset); a NULL one is skipped. dmask (B, NH, T, S) contiguous, NULL to skip, and
// non-NULL only with a mask: the gradient of the masked scores, dS, is STORED into the
// elements the kernel visits (a causal run skips tiles above the diagonal: pass zeroed
// memory); the caller sums it over a broadcast mask's dims. dy, y (B, NH, T, HS); mask as in
// the forward.
void tt_kattention_backward_f32(float *dq, float *dk, float *dv, float *dmask, const float *dy,
                                tt_kattn_strides sdy, const float *q, tt_kattn_strides sq,
                                const float *k, tt_kattn_strides sk, const float *v,
                                tt_kattn_strides sv, const float *y, tt_kattn_strides sy,
                                const float *lse, const tt_kattn_mask *mask,
                                const tt_kattn_dims *d);
void tt_kattention_backward_f64(double *dq, double *dk, double *dv, double *dmask,
                                const double *dy, tt_kattn_strides sdy, const double *q,
                                tt_kattn_strides sq, const double *k, tt_kattn_strides sk,
                                const double *v, tt_kattn_strides sv, const double *y,
                                tt_kattn_strides sy, const double *lse,
                                const tt_kattn_mask *mask, const tt_kattn_dims *d);

// ---- instruction set of the f32 kernels (f64 always runs the portable code) ----
// The CPU level (cpu.h) picks them: AVX-512F at TT_CPU_AVX512 and above, AVX2 + FMA at
// TT_CPU_AVX2, else portable C. Deterministic for a given level and thread count; results of
// different levels differ in the last bits.

// ---- bf16 products (dims.bf16) ----
// Every block product (q k^T and P v forward; P^T dy, dy v^T, dS k and dS^T q backward) rounds both
// operands to bf16 (nearest even: q, k, v, dy, the probabilities P and dS) and accumulates in f32,
// as PyTorch's bf16 autocast feeds its matmuls; the softmax statistics (row max, sum, lse), D =
// rowsum(dy y), dS = P (dP - D) and the rescaling of y stay f32. The forward rounds the
// unnormalized weights exp(s - m) and divides y by their f32 sum at the end (FlashAttention's
// order); the backward rounds P = exp(s - lse). Each product is one f32 chain over k that adds each
// k pair as vdpbf16ps is specified to (the odd step's product, then the even step's; products of
// bf16 values are exact in f32), so its kernels give the same bits: vdpbf16ps on AVX512-BF16 CPUs,
// else bf16 values widened to f32 and FMA (AVX-512F, AVX2), else portable C; except where an input,
// a product or a partial sum is subnormal (|x| < 2^-126: vdpbf16ps and vcvtne2ps2bf16 take those as
// zero; the forward's weights are >= exp(-87), above that). The SIMD kernels round and pack both
// operands per call, on the stack, for K <= 256 (a longer K, HS > 256, runs the portable code);
// except on vdpbf16ps, where a right-hand operand that many products read is rounded and paired
// once into panels: k^T and v per (b, head) in the forward; k^T, v^T and k per key tile and
// each query head's dy and q per (b, kv head) in the backward (per thread, about S HS 32-bit
// words forward and rep T HS backward, HS rounded up to 32); and so is the left operand of
// q k^T and dy v^T: q per query tile in the forward, each query head's q and dy per (b, kv
// head) in the backward (BQ HS / 2 and rep T HS words more). The same bits either way.
// vdpbf16ps runs at TT_CPU_AVX512BF16, the widening kernels at TT_CPU_AVX512 (16 lanes) and
// TT_CPU_AVX2 (8 lanes), the portable code below.

#endif  // TT_KERNELS_ATTENTION_H

// Internal interface of the int8 GEMM (qgemm.c, qgemm_avx2.c, qgemm_avx512.c): symmetric
// per-output-channel int8 quantization of a weight, per-row dynamic u8 quantization of
// activations, and Y = dequant(Xq Wq^T) + bias with exact int32 sums. Raw pointers and sizes
// only, no autograd, no module (a quantized Linear builds on this). Not installed.
//
//     tt_k_qweight qw;
//     tt_k_qweight_init(&qw, w, N, K);                // w (N, K) f32, a Linear's weight
//     tt_k_qgemm_f32(y, x, &qw, bias, M);             // y (M, N) = x (M, K) W^T + bias
//     tt_k_qweight_free(&qw);
#ifndef TT_KERNELS_QGEMM_H
#define TT_KERNELS_QGEMM_H

#include <stdbool.h>
#include <stdint.h>

// Letters: Y (M, N) = X (M, K) W^T, W (N, K): M rows (tokens), N output channels, K inputs.
//
// The scheme, and why. AVX512-VNNI's vpdpbusd multiplies unsigned bytes by signed bytes and
// adds each group of 4 products to an int32 lane. So the weights are signed and symmetric:
// q[n, k] = round_half_even(w[n, k] / sw[n]) in [-127, 127], sw[n] = max_k |w[n, k]| / 127
// (no -128, so |q| <= 127 and negation is safe); and the activations are unsigned with a
// zero point per row (asymmetric, all 256 levels used, which pays after a GELU or a ReLU whose
// outputs are mostly of one sign): u[m, k] = clamp(round_half_even(x[m, k] * (1 / sx[m])) +
// zx[m], 0, 255), sx[m] = (max(0, max_k x) - min(0, min_k x)) / 255, zx[m] =
// round_half_even(-min(0, min x) * (1 / sx[m])), so x = 0 is exact. Then
//     sum_k x w ~= sx[m] sw[n] sum_k (u - zx[m]) q = sx[m] sw[n] (S[m, n] - zx[m] qsum[n])
// with S[m, n] = sum_k u[m, k] q[n, k] (what the kernels compute) and qsum[n] = sum_k q[n, k]
// (computed once when the weight is packed). All of it in int32 and exact: |S| <= 255 * 127 *
// K < 2^31 for K <= TT_K_QGEMM_KMAX. A row of zeros (or a weight row of zeros) has scale 0
// and quantizes to zero point 0 and bytes 0, with no division by zero. A row holding a NaN or
// an infinity gets scale NaN (and bytes 0), so its outputs are NaN, as the f32 product's are.
// The weights are divided by sw; the activations, quantized at run time, are multiplied by
// 1 / sx (one division per row, not per element).
//
// Output: y[m, n] = (float)(S[m, n] - zx[m] qsum[n]) * (sx[m] * sw[n]) + bias[n], in that
// order of float operations on every path, so every path gives the same bits (the int32 sums
// are the same, and the epilogue is one shared C function).
#define TT_K_QGEMM_KMAX 65536
// Output channels per packed panel: a panel holds NR channels x ceil(K / 4) groups of 4 k.
#define TT_K_QGEMM_NR 32

// ---- quantization ----

// Round half to even for |v| <= 2^22 in the default rounding mode: adding 1.5 * 2^23 leaves no
// fraction bits, so the addition rounds (to even on a tie) and the subtraction is exact. Plain
// float arithmetic (no libm call, vectorizes, no -ffast-math to fold it away).
static inline float tt_k_round_even(float v) { return (v + 12582912.0f) - 12582912.0f; }

// Symmetric per-row int8: q (N, K) and scale (N) from w (N, K), as above (round half to even:
// 2.5 -> 2, 3.5 -> 4). A row whose max |w| is 0 gets scale 0 and q = 0; NaN or inf: scale NaN.
void tt_k_quantize_s8(int8_t *q, float *scale, const float *w, int64_t N, int64_t K);

// Dynamic asymmetric per-row u8: u (M, ldu) with bytes [K, ldu) of each row set to 0, scale
// (M) and zero (M) from x (M, K) (rows ldx floats apart), as above. ldu >= K.
void tt_k_quantize_u8(uint8_t *u, float *scale, int32_t *zero, const float *x, int64_t ldx,
                      int64_t ldu, int64_t M, int64_t K);

// ---- packed weights ----
// The layout vpdpbusd reads: panel p (channels [NR p, NR p + NR)), group g (k in [4 g, 4 g +
// 4)): 4 NR bytes, channel j's 4 bytes at offset 4 j, so two 64-byte loads give a zmm of 16
// channels x 4 k each. Zero-padded past N and past K.
//     packed[(p * KG + g) * 4 NR + 4 j + b] = q[NR p + j, 4 g + b],  KG = ceil(K / 4)
int64_t tt_k_qgemm_packed_bytes(int64_t N, int64_t K);
// packed (tt_k_qgemm_packed_bytes) and qsum (N) from q (N, K).
void tt_k_qgemm_pack(int8_t *packed, int32_t *qsum, const int8_t *q, int64_t N, int64_t K);

// A weight ready for tt_k_qgemm_f32: memory from TT_MALLOC, owned by the struct. _free is safe
// on a zeroed struct. N, K >= 1, K <= TT_K_QGEMM_KMAX.
typedef struct tt_k_qweight {
    int64_t N, K;
    int8_t *packed;  // tt_k_qgemm_packed_bytes(N, K) bytes
    float *scale;    // (N) sw
    int32_t *qsum;   // (N) sum_k q[n, k]
} tt_k_qweight;

void tt_k_qweight_init(tt_k_qweight *qw, const float *w, int64_t N, int64_t K);  // w (N, K)
void tt_k_qweight_free(tt_k_qweight *qw);
int64_t tt_k_qweight_bytes(const tt_k_qweight *qw);  // packed + scales + sums

// ---- products ----

// The raw sums: S (M, N) = sum_k u[m, k] q[n, k] for u (M, ldu) bytes (ldu >= 4 ceil(K / 4);
// the bytes past K are read but multiply zero weights) and packed weights. For tests.
void tt_k_qgemm_s32(int32_t *S, const uint8_t *u, int64_t ldu, const int8_t *packed,
                    int64_t M, int64_t N, int64_t K);

// y (M, N) = dequant(quant(x) W^T) + bias: x (M, K) f32 rows quantized at run time (a
// per-thread workspace), bias (N) or NULL; y must not overlap x. Threads: rows split between threads when M is
// large, else output channels; each output is computed by the same code either way, so the
// result does not depend on the number of threads.
void tt_k_qgemm_f32(float *y, const float *x, const tt_k_qweight *qw, const float *bias,
                    int64_t M);

// ---- static activations ----
// Static (calibrated) quantization: one scale and zero point for every row, from a range
// [lo, hi] recorded over calibration data (PyTorch's MinMaxObserver, affine quint8): the range
// widened to hold 0, s = (hi - lo) / 255, z = round_half_even(-lo / s) (computed as -lo * (1 /
// s), as the dynamic rows are); an empty or non-finite range gives s = 0, z = 0 (inputs
// quantize to 0). Inputs outside the range clamp to 0 or 255, a NaN to 0.
typedef struct tt_k_qact {
    float scale;
    int32_t zero;
} tt_k_qact;

tt_k_qact tt_k_qact_from_range(float lo, float hi);
// tt_k_qgemm_f32 with every row of x quantized with act instead of its own range; the same
// epilogue, so a row whose own range gives act's scale and zero point gets the same bits.
void tt_k_qgemm_f32_static(float *y, const float *x, const tt_k_qweight *qw, const float *bias,
                           int64_t M, tt_k_qact act);

// ---- SIMD path ----
// The CPU level (cpu.h: tt_cpu_get_level, TT_CPU) picks the kernel at every product:
// AVX512-VNNI (vpdpbusd on zmm, with AVX-512BW) at TT_CPU_AVX512 and above when the CPU has
// VNNI (tt_cpu_has_vnni), else AVX2 from TT_CPU_AVX2, else the portable C kernel. The AVX2
// path widens bytes to int16 (vpmovzxbw, vpmovsxbw) and multiplies with vpmaddwd: the byte
// form vpmaddubsw adds two u8 x s8 products into an int16 that saturates (255 * 127 * 2 >
// 32767), which would make its sums differ from the others; vpmaddwd's int32 pair sums cannot
// overflow. Every path gives the same int32 sums.

// The kernel the current level runs, e.g. "vnni 8x32" (for bench output).
const char *tt_k_qgemm_kernel_name(void);

// ---- micro-kernels (qgemm.c, qgemm_avx2.c, qgemm_avx512.c) ----
// c (mr, NR) int32, row i = sum over kg groups of 4 k of x[i] bytes times the panel w's bytes
// (one packed panel, above), for the mr row pointers x[0 .. mr) (each readable for 4 kg
// bytes). `tile` takes mr == the kernel's MR, `row` mr == 1.
typedef void (*tt_k_qukernel)(int32_t *c, const uint8_t *const *x, int64_t kg,
                              const int8_t *w);

typedef struct tt_k_qgemm_kernel {
    const char *name;
    int mr;              // rows of `tile`
    tt_k_qukernel tile;  // mr rows
    tt_k_qukernel row;   // 1 row
} tt_k_qgemm_kernel;

extern const tt_k_qgemm_kernel tt_k_qgemm_generic, tt_k_qgemm_avx2, tt_k_qgemm_vnni;

#endif  // TT_KERNELS_QGEMM_H

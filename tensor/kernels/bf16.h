// Internal interface of the bfloat16 kernels: conversions between f32 and bf16 (round to
// nearest even), and a GEMM whose products take bf16 inputs and accumulate in f32, each with a
// run-time choice of SIMD path (AVX512-BF16, AVX-512, AVX2, portable C). Raw pointers and
// sizes only, no autograd, no tensor dtype yet. Not installed.
#ifndef TT_KERNELS_BF16_H
#define TT_KERNELS_BF16_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

// A bfloat16 value as its bits: the upper 16 bits of an IEEE-754 binary32 (sign, 8 exponent
// bits, 7 fraction bits). Same range as f32, 8 significant bits.
typedef uint16_t tt_bf16;

// ---- scalar conversions (the reference every vector path matches bit for bit) ----

// f32 -> bf16, rounded to nearest, ties to even. Subnormal inputs round like any other value
// (they are not flushed to zero); values that round past the largest bf16 become inf; inf stays
// inf; a NaN stays a NaN of the same sign with its top fraction bits, made quiet.
static inline tt_bf16 tt_bf16_from_f32(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (tt_bf16)((u >> 16) | 0x0040u);  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (tt_bf16)(u >> 16);
}

// bf16 -> f32: exact.
static inline float tt_bf16_to_f32(tt_bf16 h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

// ---- SIMD path ----
// The CPU level (cpu.h: tt_cpu_get_level, TT_CPU) picks the kernels at every call:
// AVX512-BF16 (vdpbf16ps, vcvtne2ps2bf16) at TT_CPU_AVX512BF16, bf16 widened to f32 with FMA
// on AVX-512 (F + BW) at TT_CPU_AVX512 and on AVX2 (8 lanes) at TT_CPU_AVX2, else the
// portable C kernels; tests and benchmarks force each level to check and time every kernel.
// The micro-kernel the current level runs, e.g. "avx512bf16 12x32 vdpbf16ps" (for bench output).
const char *tt_k_gemm_bf16_kernel_name(void);

// ---- conversion kernels ----
// dst[i] = tt_bf16_from_f32(src[i]) and dst[i] = tt_bf16_to_f32(src[i]) for i < n, the same
// bits on every path. dst and src must not overlap. Threads: none (memory-bound; callers
// split big arrays).
void tt_k_f32_to_bf16(tt_bf16 *dst, const float *src, int64_t n);
void tt_k_bf16_to_f32(float *dst, const tt_bf16 *src, int64_t n);

// ---- GEMM with bf16 products and f32 accumulation ----
// C = A B (accumulate false) or C += A B (accumulate true), C (M, N) in f32, A (M, K) and
// B (K, N) each either f32 (rounded to bf16 with tt_bf16_from_f32 while being packed: the cast
// costs no extra pass) or already bf16 (a weight cast once and reused); each operand is
// addressed through its own row and column strides in elements (any sign: transposed and
// sliced views are read in place; a stride along a dim of size 1 is ignored). C must not
// overlap A or B. M, N, K >= 0.
//
// Accuracy: the products of bf16 values are exact in f32; the only rounding is the f32
// accumulation: each element of C is a chain of f32 additions over k, in blocks of up to
// TT_K_BF16_KC steps of k added to C in f32, as the f32 GEMM does (no split-K in double).
//
// Deterministic: the order of the sums depends only on M, N, K and the layout, never on the
// number of threads or timing. Every path adds each k pair as vdpbf16ps is specified to (the
// odd step's product, then the even step's, each rounded to f32), so all paths give the same
// bits, except where an input, a product or a partial sum is subnormal (|x| < 2^-126):
// vdpbf16ps takes those as zero, the other paths keep them. Weights and activations never get
// there. The inputs are the same bf16 values on every path: an f32 subnormal is rounded as
// tt_bf16_from_f32 does (to a subnormal bf16, a zero, or up to the smallest normal 2^-126),
// not flushed, on the vcvtne2ps2bf16 packer too (bf16_avx512.c says how).
//
// Threads: the thread pool, as the f32 GEMM: C's rows (or its columns, when they share out
// clearly better) in chunks of whole panels; products under 3 MFLOP run on one thread.
#define TT_K_BF16_KC 384  // steps of k per block (even)

// The element type of an operand.
typedef enum tt_k_bf16_src { TT_K_SRC_F32, TT_K_SRC_BF16 } tt_k_bf16_src;

void tt_k_gemm_bf16(int64_t M, int64_t N, int64_t K, const void *A, tt_k_bf16_src a_type,
                    int64_t a_rs, int64_t a_cs, const void *B, tt_k_bf16_src b_type,
                    int64_t b_rs, int64_t b_cs, float *C, int64_t c_rs, int64_t c_cs,
                    bool accumulate);

// C = A B + bias, bias (N) f32 added to every row of C (unit column stride), as a Linear
// layer's forward needs: the same bits as filling C's rows with bias and accumulating. The
// bias enters in the micro-kernel's store of the first k block (no extra pass over C).
void tt_k_gemm_bias_bf16(int64_t M, int64_t N, int64_t K, const void *A, tt_k_bf16_src a_type,
                         int64_t a_rs, int64_t a_cs, const void *B, tt_k_bf16_src b_type,
                         int64_t b_rs, int64_t b_cs, const float *bias, float *C, int64_t c_rs);

// ---- micro-kernels and packers of the packed bf16 GEMM (bf16_*.c in this folder) ----
// Packed layout: k in pairs. A panel of width w over kc steps of k holds kp = ceil(kc / 2)
// rows of w 32-bit words, word (p, j) = bf16 of X[2p, j] in its low half and of X[2p + 1, j]
// in its high half (zero past kc and past the panel's n columns): the operand layout of
// vdpbf16ps. The driver packs A^T with w = MR and B with w = NR.
//
// Micro-kernel: c[i * ldc + j] (+)= sum_k a[k, i] b[k, j] for i < mr, j < nr, from a packed A
// panel (kp, MR) and a B panel (kp, NR); add false overwrites the tile, with bias[j] added to
// every row when bias is not NULL (bias + the sum: the same bits as accumulating into a C that
// holds the bias); add true ignores bias.
typedef void (*tt_k_bf16_ukernel)(int64_t kp, const uint32_t *a, const uint32_t *b, float *c,
                                  int64_t ldc, int mr, int nr, bool add, const float *bias);

// Packer: X (kc, n), X[k, j] = src[k * ks + j * js] (f32 or bf16 elements), into ceil(n / w)
// panels of width w in the layout above, panel q at dst + q * tt_k_bf16_panel(kc, w) words.
// Every packer writes the same words, subnormal inputs included (the padding between panels
// is never read).
typedef void (*tt_k_bf16_packer)(uint32_t *dst, const void *src, tt_k_bf16_src type, int64_t ks,
                                 int64_t js, int64_t kc, int64_t n, int w);

// Words from one panel to the next: kp w and 64 bytes more, so consecutive panels do not sit a
// multiple of 4 KiB apart (at KC 384 and NR 32 they would be 24 KiB apart: the packer's stores
// into every panel in turn would all fall in one L1 set).
static inline int64_t tt_k_bf16_panel(int64_t kc, int w) { return (kc + 1) / 2 * w + 16; }

typedef struct tt_k_bf16_kernel {
    const char *name;
    int mr, nr;                 // tile rows (broadcast from A) and columns (vectors of B)
    tt_k_bf16_ukernel full;     // any mr <= MR, nr <= NR
    tt_k_bf16_ukernel narrow;   // nr <= NR / 2 (a cheaper last panel), or NULL
    tt_k_bf16_packer pack;      // SIMD packing for the contiguous cases, or NULL (portable)
    void (*to_bf16)(tt_bf16 *dst, const float *src, int64_t n);  // conversion kernels
    void (*to_f32)(float *dst, const tt_bf16 *src, int64_t n);
} tt_k_bf16_kernel;

extern const tt_k_bf16_kernel tt_k_bf16_generic, tt_k_bf16_avx2, tt_k_bf16_avx512,
    tt_k_bf16_avx512bf16;
// The kernels of the current CPU level (cpu.h): the ones tt_k_gemm_bf16 runs.
const tt_k_bf16_kernel *tt_k_bf16_active(void);

// The portable packer (any strides), used by every path where its own packer is NULL or the
// layout has no contiguous dim.
void tt_k_bf16_pack_generic(uint32_t *dst, const void *src, tt_k_bf16_src type, int64_t ks,
                            int64_t js, int64_t kc, int64_t n, int w);

#endif  // TT_KERNELS_BF16_H

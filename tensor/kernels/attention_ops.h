// Internal to the fused attention kernels (attention.c, attention_avx512.c, attention_avx2.c):
// the table of block operations each instruction set provides, the tile sizes, and the
// portable functions the SIMD tables fall back on. The interface: attention.h.
#ifndef TT_KERNELS_ATTENTION_OPS_H
#define TT_KERNELS_ATTENTION_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "attention.h"
#include "kint.h"
#include "bf16.h"

#define BQ TT_KATTN_BLOCK  // queries per tile
#define BK TT_KATTN_BLOCK  // keys per tile

static inline int64_t clamp64(int64_t x, int64_t lo, int64_t hi) {
    return x < lo ? lo : x > hi ? hi : x;
}
// x rounded to bf16 (nearest even), as an f32 value.
static inline float round_bf16(float x) { return tt_bf16_to_f32(tt_bf16_from_f32(x)); }

// ---- the per-ISA block operations ----

// C (M, N) = alpha A B [+ C]: gemm, with A[i, k] = a[i a_rs + k a_cs] and the rows of B and C
// b_rs and c_rs apart. rows_max, rows_exp: on the rows r < nq of s (BK apart), rows_max: mx[r] =
// the max of s[r, 0 .. lim[r]) (-inf when lim[r] = 0); rows_exp: s[r, c] = c < lim[r] ?
// exp(s[r, c] - sub[r]) : 0 for c < BK and sum[r] their sum (sum NULL: skipped); a whole tile
// per call, so the rows' latencies overlap. row_ds: dp[c] = p[c] (dp[c] - D) for c < BK.
// row_scale: x[0 .. n) *= alpha. rows_dot: D[i] = sum_c x[i, c] y[i, c] for i < n, c < HS, rows
// x_rs and y_rs apart, summed in double in c order from 0 (the products of f32 values are exact
// in double). pack_b, pack_bt, gemm_pb (NULL in a table without them): the
// gemm with B (K, N), K <= pb_kmax, packed once into bf16 k-pair panels (from B's rows, or from
// the rows of X = B^T) and read by many calls (see "packed operands" below); the same bits as
// gemm. pack_a, gemm_pa (NULL likewise): gemm_pb with A (M, K), rows a_rs apart and unit-stride,
// rounded and paired once by pack_a into M rows of (K + 1) / 2 words, read by many calls.
// One table type per element type T (tt__kattn_ops_f32, tt__kattn_ops_f64), declared once.
#define TT__KATTN_OPS(NAME, T)                                                                 \
    typedef struct NAME {                                                                      \
        void (*gemm)(int64_t M, int64_t N, int64_t K, const T *a, int64_t a_rs, int64_t a_cs, \
                     const T *b, int64_t b_rs, T *c, int64_t c_rs, T alpha, bool acc);         \
        void (*rows_max)(T *mx, const T *s, int64_t nq, const int64_t *lim);                   \
        void (*rows_exp)(T *sum, T *s, int64_t nq, const int64_t *lim, const T *sub);          \
        void (*row_ds)(T *dp, const T *p, T D);                                                \
        void (*row_scale)(T *x, int64_t n, T alpha);                                           \
        void (*rows_dot)(T *D, const T *x, int64_t x_rs, const T *y, int64_t y_rs, int64_t n,  \
                         int64_t HS);                                                          \
        void (*pack_b)(uint32_t *bp, int64_t ldp, int64_t K, int64_t N, const T *b,            \
                       int64_t b_rs);                                                          \
        void (*pack_bt)(uint32_t *bp, int64_t ldp, int64_t K, int64_t N, const T *x,           \
                        int64_t x_rs);                                                         \
        void (*gemm_pb)(int64_t M, int64_t N, int64_t K, const T *a, int64_t a_rs,             \
                        int64_t a_cs, const uint32_t *bp, int64_t ldp, T *c, int64_t c_rs,     \
                        T alpha, bool acc);                                                    \
        void (*pack_a)(uint32_t *ap, int64_t M, int64_t K, const T *a, int64_t a_rs);          \
        void (*gemm_pa)(int64_t M, int64_t N, int64_t K, const uint32_t *ap,                   \
                        const uint32_t *bp, int64_t ldp, T *c, int64_t c_rs, T alpha,          \
                        bool acc);                                                             \
        int64_t pb_kmax;                                                                       \
    } NAME
TT__KATTN_OPS(tt__kattn_ops_f32, float);
TT__KATTN_OPS(tt__kattn_ops_f64, double);

// ---- the tables ----
// Portable C (attention.c), and on x86-64: AVX-512 (attention_avx512.c: f32, bf16 products
// widened to f32, bf16 products on vdpbf16ps) and AVX2 + FMA (attention_avx2.c: f32, widened
// bf16). For CPUs without AVX512-BF16 the widening kernels round both operands to bf16 and keep
// them as f32 values on the stack with the two steps of each k pair swapped (step k stored at
// k ^ 1, K padded to even with a zero step), then the f32 tiles add the products in the stored
// order with FMA: per pair the odd step's product, then the even one's, each exact, from 0:
// vdpbf16ps's sums, so the same bits as the vdpbf16ps and the portable products.
#define TT_KATTN_KW_MAX 256  // k steps (padded to even) widened on the stack; longer: portable
extern const tt__kattn_ops_f32 tt__kattn_ops_avx512_f32, tt__kattn_ops_avx512_bf16,
    tt__kattn_ops_avx512_dpbf16, tt__kattn_ops_avx2_f32, tt__kattn_ops_avx2_bf16;

// The portable bf16-product gemm (the table's gemm with bf16 rounding, attention.c) and the
// portable rows_dot of f32, which the SIMD tables use past their stack limits or as their own.
void tt__kattn_gemm_bf16_portable(int64_t M, int64_t N, int64_t K, const float *a,
                                  int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs,
                                  float *c, int64_t c_rs, float alpha, bool acc);
void tt__kattn_rows_dot_portable_f32(float *D, const float *x, int64_t x_rs, const float *y,
                                     int64_t y_rs, int64_t n, int64_t HS);

#endif  // TT_KERNELS_ATTENTION_OPS_H

// Portable strided GEMM (f32, f64) and the batched driver over broadcast batch dims:
// cache-blocked i-k-j loops over B's rows (packed when they are not contiguous), dot products
// for N == 1. No SIMD intrinsics, no threads: the packed AVX2/AVX-512 GEMM replaces the core.
#include "kernels_matmul.h"
#include "tensor_internal.h"

#include <string.h>

// Letters: M rows of A and C, N columns of B and C, K the reduction dim.
// Blocks: MC rows of C, NC columns of C, KC (TT_K_GEMM_KC) steps of k at a time.
#define MC 256
#define NC 256
#define KC TT_K_GEMM_KC

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// ---- row updates ----
// y[j] = y[j] + a0 x0[j] + a1 x1[j] + a2 x2[j] + a3 x3[j], evaluated left to right: the same
// rounding as four single updates in k order, with a quarter of the loads and stores of y.
// The fixed 8-wide inner loops let the compiler vectorize at -O2.
#define DEFINE_AXPY(T, S)                                                                     \
    static void axpy4_##S(int64_t n, T a0, T a1, T a2, T a3, const T *restrict x0,            \
                          const T *restrict x1, const T *restrict x2, const T *restrict x3,    \
                          T *restrict y) {                                                    \
        int64_t j = 0;                                                                        \
        for (; j + 8 <= n; j += 8)                                                            \
            for (int l = 0; l < 8; l++)                                                       \
                y[j + l] = y[j + l] + a0 * x0[j + l] + a1 * x1[j + l] + a2 * x2[j + l] +      \
                           a3 * x3[j + l];                                                    \
        for (; j < n; j++) y[j] = y[j] + a0 * x0[j] + a1 * x1[j] + a2 * x2[j] + a3 * x3[j];  \
    }                                                                                         \
    static void axpy1_##S(int64_t n, T a, const T *restrict x, T *restrict y) {               \
        int64_t j = 0;                                                                        \
        for (; j + 8 <= n; j += 8)                                                            \
            for (int l = 0; l < 8; l++) y[j + l] += a * x[j + l];                             \
        for (; j < n; j++) y[j] += a * x[j];                                                  \
    }

DEFINE_AXPY(float, f32)
DEFINE_AXPY(double, f64)

// ---- packing ----
// dst (kc, nc) row-major = src (kc, nc) with strides (rs, cs), copied in 8 x 8 tiles so that
// neither the reads nor the writes stride through more cache lines than a tile has rows
// (a transposed B read column by column would thrash a few cache sets).
#define DEFINE_PACK(T, S)                                                                     \
    static void pack_##S(T *dst, const T *src, int64_t kc, int64_t nc, int64_t rs,            \
                         int64_t cs) {                                                        \
        for (int64_t k0 = 0; k0 < kc; k0 += 8)                                                \
            for (int64_t j0 = 0; j0 < nc; j0 += 8) {                                          \
                int64_t k1 = min64(k0 + 8, kc), j1 = min64(j0 + 8, nc);                       \
                if (rs == 1) {                                                                \
                    for (int64_t j = j0; j < j1; j++)                                         \
                        for (int64_t k = k0; k < k1; k++) dst[k * nc + j] = src[j * cs + k];  \
                } else {                                                                      \
                    for (int64_t k = k0; k < k1; k++)                                         \
                        for (int64_t j = j0; j < j1; j++)                                     \
                            dst[k * nc + j] = src[k * rs + j * cs];                           \
                }                                                                             \
            }                                                                                 \
    }

DEFINE_PACK(float, f32)
DEFINE_PACK(double, f64)

// ---- matrix times vector ----
// c[i] (+)= sum_k A[i, k] x[k], for N == 1 (a row update of length 1 would be all overhead):
// each run of KC steps of k is summed in 8 lanes of T, the lanes added pairwise, the runs in
// double.
#define DEFINE_GEMV(T, S)                                                                     \
    static void gemv_##S(int64_t M, int64_t K, const T *A, int64_t a_rs, int64_t a_cs,        \
                         const T *x, int64_t xs, T *c, int64_t c_rs, bool accumulate) {       \
        for (int64_t i = 0; i < M; i++) {                                                     \
            const T *ai = A + i * a_rs; /* (K,) */                                            \
            double acc = 0;                                                                   \
            for (int64_t k0 = 0; k0 < K; k0 += KC) {                                          \
                int64_t kc = min64(KC, K - k0), k = 0;                                        \
                T lane[8] = {0};                                                              \
                if (a_cs == 1 && xs == 1) {                                                   \
                    const T *ak = ai + k0, *xk = x + k0;                                      \
                    for (; k + 8 <= kc; k += 8)                                               \
                        for (int l = 0; l < 8; l++) lane[l] += ak[k + l] * xk[k + l];         \
                }                                                                             \
                for (; k < kc; k++) lane[k & 7] += ai[(k0 + k) * a_cs] * x[(k0 + k) * xs];    \
                acc += (double)(((lane[0] + lane[4]) + (lane[1] + lane[5])) +                 \
                                ((lane[2] + lane[6]) + (lane[3] + lane[7])));                 \
            }                                                                                 \
            T *ci = c + i * c_rs;                                                             \
            *ci = accumulate ? (T)((double)*ci + acc) : (T)acc;                               \
        }                                                                                     \
    }

DEFINE_GEMV(float, f32)
DEFINE_GEMV(double, f64)

// ---- GEMM core ----
// C[i, j] (+)= sum_k A[i, k] B[k, j]. For each block of C (MC x NC) and each run of KC steps
// of k, one row of C is built in `run` (type T) by row updates over B's rows, then added to
// the block's double accumulator `acc`; the block is written to C at the end. B's block is
// read in place when its rows are contiguous (b_cs == 1), otherwise packed row-major first.
#define DEFINE_GEMM_CORE(T, S)                                                                \
    static void gemm_core_##S(int64_t M, int64_t N, int64_t K, const T *A, int64_t a_rs,      \
                              int64_t a_cs, const T *B, int64_t b_rs, int64_t b_cs, T *C,      \
                              int64_t c_rs, int64_t c_cs, bool accumulate) {                  \
        if (N == 1) {                                                                         \
            gemv_##S(M, K, A, a_rs, a_cs, B, b_rs, C, c_rs, accumulate);                      \
            return;                                                                           \
        }                                                                                     \
        bool pack = b_cs != 1;                                                                \
        int64_t mcap = min64(M, MC), ncap = min64(N, NC), kcap = min64(K, KC);                \
        double *acc = TT_MALLOC((size_t)(mcap * ncap) * sizeof *acc); /* (MC, NC) */         \
        T *run = TT_MALLOC((size_t)ncap * sizeof *run);               /* (NC,) */            \
        T *bp = pack ? TT_MALLOC((size_t)(kcap * ncap) * sizeof *bp) : NULL; /* (KC, NC) */  \
        for (int64_t j0 = 0; j0 < N; j0 += NC) {                                              \
            int64_t nc = min64(NC, N - j0);                                                   \
            for (int64_t i0 = 0; i0 < M; i0 += MC) {                                          \
                int64_t mc = min64(MC, M - i0);                                               \
                memset(acc, 0, (size_t)(mc * nc) * sizeof *acc);                              \
                for (int64_t k0 = 0; k0 < K; k0 += KC) {                                      \
                    int64_t kc = min64(KC, K - k0);                                           \
                    const T *bk = B + k0 * b_rs + j0 * b_cs; /* (kc, nc) block of B */       \
                    int64_t bk_rs = b_rs;                                                     \
                    if (pack) {                                                               \
                        pack_##S(bp, bk, kc, nc, b_rs, b_cs);                                 \
                        bk = bp;                                                              \
                        bk_rs = nc;                                                           \
                    }                                                                         \
                    for (int64_t i = 0; i < mc; i++) {                                        \
                        const T *ai = A + (i0 + i) * a_rs + k0 * a_cs; /* (kc,) */           \
                        memset(run, 0, (size_t)nc * sizeof *run);                             \
                        int64_t k = 0;                                                        \
                        for (; k + 4 <= kc; k += 4)                                           \
                            axpy4_##S(nc, ai[k * a_cs], ai[(k + 1) * a_cs],                   \
                                      ai[(k + 2) * a_cs], ai[(k + 3) * a_cs],                 \
                                      bk + k * bk_rs, bk + (k + 1) * bk_rs,                   \
                                      bk + (k + 2) * bk_rs, bk + (k + 3) * bk_rs, run);       \
                        for (; k < kc; k++) axpy1_##S(nc, ai[k * a_cs], bk + k * bk_rs, run); \
                        double *acc_i = acc + i * nc;                                         \
                        for (int64_t j = 0; j < nc; j++) acc_i[j] += run[j];                  \
                    }                                                                         \
                }                                                                             \
                for (int64_t i = 0; i < mc; i++) {                                            \
                    T *ci = C + (i0 + i) * c_rs + j0 * c_cs;                                  \
                    const double *acc_i = acc + i * nc;                                       \
                    if (accumulate)                                                           \
                        for (int64_t j = 0; j < nc; j++)                                      \
                            ci[j * c_cs] = (T)((double)ci[j * c_cs] + acc_i[j]);              \
                    else                                                                      \
                        for (int64_t j = 0; j < nc; j++) ci[j * c_cs] = (T)acc_i[j];          \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
        tt_free(bp);                                                                          \
        tt_free(run);                                                                         \
        tt_free(acc);                                                                         \
    }

DEFINE_GEMM_CORE(float, f32)
DEFINE_GEMM_CORE(double, f64)

// ---- single GEMM ----
// When A's columns are contiguous (A transposed) and B's rows are not, compute C^T = B^T A^T
// instead: the right operand, A^T, then has contiguous rows and nothing is packed. Likewise
// for a matrix-vector product with A transposed: b^T A^T is a row update over A^T's rows.
#define DEFINE_GEMM(T, S)                                                                     \
    void tt_k_gemm_##S(int64_t M, int64_t N, int64_t K, const T *A, int64_t a_rs,              \
                       int64_t a_cs, const T *B, int64_t b_rs, int64_t b_cs, T *C,             \
                       int64_t c_rs, int64_t c_cs, bool accumulate) {                         \
        if (M <= 0 || N <= 0) return;                                                         \
        bool at_rows = a_rs == 1 && M > 1;                                                    \
        if (N == 1 ? at_rows && a_cs != 1 : at_rows && b_cs != 1)                             \
            gemm_core_##S(N, M, K, B, b_cs, b_rs, A, a_cs, a_rs, C, c_cs, c_rs, accumulate);  \
        else                                                                                  \
            gemm_core_##S(M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, c_rs, c_cs, accumulate);  \
    }

DEFINE_GEMM(float, f32)
DEFINE_GEMM(double, f64)

// ---- batched driver ----

// Folds a batch dim of `size` into a matrix dim of length *n when the two operands that walk
// that matrix dim (strides *s0, *s1) continue it evenly along the batch dim (batch strides
// bs0 == n * s0, bs1 == n * s1) and the third operand is broadcast along it (bs2 == 0).
static bool fold(int64_t *n, int64_t *s0, int64_t bs0, int64_t *s1, int64_t bs1, int64_t bs2,
                 int64_t size) {
    if (bs2 != 0) return false;
    if (*n == 1) {  // a stride along a dim of size 1 is free: take the batch strides
        *s0 = bs0;
        *s1 = bs1;
    }
    if (bs0 != *n * *s0 || bs1 != *n * *s1) return false;
    *n *= size;
    return true;
}

void tt_k_gemm_batched(tt_dtype dtype, int nbatch, const int64_t *batch, int64_t M, int64_t N,
                       int64_t K, const tt_k_matrix *a, const tt_k_matrix *b,
                       const tt_k_matrix *c, bool accumulate) {
    TT_CHECK(dtype == TT_F32 || dtype == TT_F64, "dtype %s: GEMM needs f32 or f64",
             tt_dtype_name(dtype));
    TT_CHECK(nbatch >= 0 && nbatch <= TT_MAX_DIMS, "nbatch %d out of range", nbatch);
    if (M <= 0 || N <= 0 || tt__shape_numel(nbatch, batch) == 0) return;
    for (int d = 0; d < nbatch; d++)
        TT_CHECK(accumulate || batch[d] == 1 || c->bs[d] != 0,
                 "C is broadcast along batch dim %d (size %lld): the products would be summed "
                 "into it, which needs accumulate", d, (long long)batch[d]);
    tt_k_matrix A = *a, B = *b, C = *c;
    // Fold what can be folded (innermost first); keep the other dims of size > 1. A dim along
    // which C is broadcast can only fold into K: folding it into M or N would make C's rows
    // (or columns) overlap.
    int nb = 0;
    int64_t shape[TT_MAX_DIMS], a_bs[TT_MAX_DIMS], b_bs[TT_MAX_DIMS], c_bs[TT_MAX_DIMS];
    bool keep[TT_MAX_DIMS];
    for (int d = nbatch - 1; d >= 0; d--) {
        int64_t s = batch[d];
        keep[d] = !(s == 1 ||
                    (c->bs[d] != 0 && fold(&M, &A.rs, a->bs[d], &C.rs, c->bs[d], b->bs[d], s)) ||
                    (c->bs[d] != 0 && fold(&N, &B.cs, b->bs[d], &C.cs, c->bs[d], a->bs[d], s)) ||
                    fold(&K, &A.cs, a->bs[d], &B.rs, b->bs[d], c->bs[d], s));
    }
    for (int d = 0; d < nbatch; d++) {
        if (!keep[d]) continue;
        shape[nb] = batch[d];
        a_bs[nb] = a->bs[d];
        b_bs[nb] = b->bs[d];
        c_bs[nb] = c->bs[d];
        nb++;
    }
    const int64_t *strides[3] = {a_bs, b_bs, c_bs};
    tt__iter it;
    if (!tt__iter_init(&it, nb, shape, 3, strides, NULL)) return;
    do {
        for (int64_t i = 0; i < it.inner; i++) {
            int64_t oa = it.off[0] + i * it.istride[0], ob = it.off[1] + i * it.istride[1];
            int64_t oc = it.off[2] + i * it.istride[2];
            if (dtype == TT_F32)
                tt_k_gemm_f32(M, N, K, (const float *)A.data + oa, A.rs, A.cs,
                              (const float *)B.data + ob, B.rs, B.cs, (float *)C.data + oc,
                              C.rs, C.cs, accumulate);
            else
                tt_k_gemm_f64(M, N, K, (const double *)A.data + oa, A.rs, A.cs,
                              (const double *)B.data + ob, B.rs, B.cs, (double *)C.data + oc,
                              C.rs, C.cs, accumulate);
        }
    } while (tt__iter_next(&it));
}

// The GEMM driver (f32, f64): run-time choice of the SIMD path, packing of A and B into
// zero-padded panels, cache blocking, the parallel loops over a product's blocks, matrix-vector
// and few-output products without packing, split-K summation in double for long f32 reductions,
// the batched driver over broadcast batch dims. The micro-kernels are in gemm_*.c. The code
// written once for both dtypes is in matmul_pack.inc and matmul_gemm.inc, included per dtype.
#include "matmul.h"
#include "kint.h"
#include "cpu.h"
#include "../tensor_internal.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// Letters: M rows of A and C, N columns of B and C, K the reduction dim; MR x NR the
// micro-kernel's tile. Goto and van de Geijn (2008), "Anatomy of high-performance matrix
// multiplication": for each NC-column block of C and each KC-step block of k, B's (KC, NC)
// block is packed into NR-wide panels (the one in use stays in L1), A's (MC, KC) block into
// MR-row panels (it stays in L2), and the micro-kernel runs over every (MR, NR) tile.
// Blocking for 48 KiB L1d and 1-2 MiB L2 per core (f32: a (256, 32) B panel is 32 KiB, a
// (240, 256) A block 240 KiB); KC counts steps of k for both dtypes (f64 panels are half as
// wide, so the bytes match).
#define KC TT_K_GEMM_KC
#define MC 240     // a multiple of every MR (12, 6, 4)
#define NC 4096
#define KSPLIT TT_K_GEMM_KSPLIT

// Products with at most this many outputs (M N) are computed as dot products, without packing
// (a tile would be mostly padding). Even a 6 x 6 x 6 product is faster packed than as dots.
#define DOT_MAX_OUT 16
// Products of fewer flops (2 M N K) stay on one thread: measured with bench/bench_gemm.c on
// 2 cores, 128^3 (4.2 MFLOP) gains 1.6x from a second thread, 96^3 and below gain nothing.
#define PAR_MIN_FLOPS (3 << 20)

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// ---- SIMD path ----

// The micro-kernels of the CPU level (cpu.h): AVX-512 at AVX512 and above, AVX2 + FMA, else
// the portable C kernels.
static const tt_k_gemm_kernel *kernel_for(tt_dtype dtype) {
    bool f32 = dtype == TT_F32;
    tt_cpu_level level = tt_cpu_get_level();
    if (level >= TT_CPU_AVX512) return f32 ? &tt_k_gemm_avx512_f32 : &tt_k_gemm_avx512_f64;
    if (level >= TT_CPU_AVX2) return f32 ? &tt_k_gemm_avx2_f32 : &tt_k_gemm_avx2_f64;
    return f32 ? &tt_k_gemm_generic_f32 : &tt_k_gemm_generic_f64;
}

const char *tt_k_gemm_kernel_name(void) { return kernel_for(TT_F32)->name; }

// ---- packing ----
// A's block, rows [0, mc) x steps [0, kc), goes into ceil(mc / mr) panels, panel p holding
// dst[k * mr + i] = A[p mr + i, k], rows past mc zero; B's, steps [0, kc) x columns [0, nc),
// into ceil(nc / nr) panels, panel q holding dst[k * nr + j] = B[k, q nr + j], columns past
// nc zero. Both read any strides. The AVX2 and AVX-512 paths pack the two contiguous cases with
// their own packers (tt_k_gemm_kernel.pack, in gemm_avx2.c and gemm_avx512.c: full-width
// copies and 8 x 8 or 16 x 16 transposes). The code here packs for the generic path and any
// other strides: when the packed dim is contiguous in memory (A^T's rows, B's rows), a whole row
// is copied across every panel at once, so memory is read in order; when the other dim is (A's
// rows, B^T's rows), 4 x 4 blocks are transposed in SSE registers.

// dst[k * w + l] = src[l * ls + k] for l < nl, k < kc: nl lines contiguous along k, transposed
// into a panel of width w.
static void tpack_f32(float *dst, int w, const float *src, int64_t ls, int nl, int64_t kc) {
    int l = 0;
#ifdef __SSE2__
    for (; l + 4 <= nl; l += 4) {
        const float *s0 = src + l * ls, *s1 = s0 + ls, *s2 = s1 + ls, *s3 = s2 + ls;
        int64_t k = 0;
        for (; k + 4 <= kc; k += 4) {
            __m128 r0 = _mm_loadu_ps(s0 + k), r1 = _mm_loadu_ps(s1 + k);
            __m128 r2 = _mm_loadu_ps(s2 + k), r3 = _mm_loadu_ps(s3 + k);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps(dst + k * w + l, r0);
            _mm_storeu_ps(dst + (k + 1) * w + l, r1);
            _mm_storeu_ps(dst + (k + 2) * w + l, r2);
            _mm_storeu_ps(dst + (k + 3) * w + l, r3);
        }
        for (; k < kc; k++) {
            float *d = dst + k * w + l;
            d[0] = s0[k], d[1] = s1[k], d[2] = s2[k], d[3] = s3[k];
        }
    }
#endif
    for (; l < nl; l++)
        for (int64_t k = 0; k < kc; k++) dst[k * w + l] = src[l * ls + k];
}

static void tpack_f64(double *dst, int w, const double *src, int64_t ls, int nl, int64_t kc) {
    int l = 0;
#ifdef __SSE2__
    for (; l + 2 <= nl; l += 2) {
        const double *s0 = src + l * ls, *s1 = s0 + ls;
        int64_t k = 0;
        for (; k + 2 <= kc; k += 2) {
            __m128d r0 = _mm_loadu_pd(s0 + k), r1 = _mm_loadu_pd(s1 + k);
            _mm_storeu_pd(dst + k * w + l, _mm_unpacklo_pd(r0, r1));
            _mm_storeu_pd(dst + (k + 1) * w + l, _mm_unpackhi_pd(r0, r1));
        }
        for (; k < kc; k++) dst[k * w + l] = s0[k], dst[k * w + l + 1] = s1[k];
    }
#endif
    for (; l < nl; l++)
        for (int64_t k = 0; k < kc; k++) dst[k * w + l] = src[l * ls + k];
}

// pack_f32, pack_f64 (matmul_pack.inc): the portable packers.
#define T float
#define PACK pack_f32
#define TPACK tpack_f32
#include "matmul_pack.inc"
#undef T
#undef PACK
#undef TPACK

#define T double
#define PACK pack_f64
#define TPACK tpack_f64
#include "matmul_pack.inc"
#undef T
#undef PACK
#undef TPACK

// ---- packed GEMM ----

// share, the workspaces, macro_kernel and gemm_thread (gemm_driver.inc, shared with bf16.c).
#define JOB gemm_job
#define JOB_KERN_T tt_k_gemm_kernel
#define JOB_FIELDS                                                            \
    size_t es;         /* element size */                                     \
    tt_k_packer pack;  /* the portable packer of the dtype */
#define PANEL_T char
#define OUT_T char
#define UKERNEL_T tt_k_ukernel
#define UK_K(kc) (kc)
#define A_ES(g) ((g)->es)
#define B_ES(g) ((g)->es)
#define OUT_AT(g, p, i) ((p) + (size_t)(i) * (g)->es)
#define PANEL_AT(g, p, q, kc, w) ((p) + (size_t)((q) * (w) * (kc)) * (g)->es)
#define PACKER_T tt_k_packer
#define PORTABLE_PACKER(g) ((g)->pack)
#define PACK_A(g, dst, src, kc, n, w) \
    packer_for(g, (g)->a_cs, (g)->a_rs)(dst, src, (g)->a_cs, (g)->a_rs, kc, n, (int)(w))
#define PACK_B(g, dst, src, kc, n, w) \
    packer_for(g, (g)->b_rs, (g)->b_cs)(dst, src, (g)->b_rs, (g)->b_cs, kc, n, (int)(w))
#define WS_A_SIZE(g, mr) ((size_t)(MC * KC) * (g)->es)
#include "gemm_driver.inc"

// C (M, N), unit column stride, (+)= A B (+ bias, when not accumulating) through the packed
// kernels; M, N, K >= 1. The number of threads and how they split C depend on the shape only;
// the values on neither.
static void gemm_packed(tt_dtype dtype, int64_t M, int64_t N, int64_t K, const void *A,
                        int64_t a_rs, int64_t a_cs, const void *B, int64_t b_rs, int64_t b_cs,
                        void *C, int64_t c_rs, bool accumulate, const void *bias) {
    const tt_k_gemm_kernel *kn = kernel_for(dtype);
    size_t es = tt_dtype_size(dtype);
    gemm_job g = {
        .kern = kn, .es = es,
        .pack = dtype == TT_F32 ? pack_f32 : pack_f64,
        .M = M, .N = N, .K = K, .A = A, .B = B,
        .a_rs = a_rs, .a_cs = a_cs, .b_rs = b_rs, .b_cs = b_cs,
        .C = C, .c_rs = c_rs, .accumulate = accumulate, .bias = bias,
    };
    // Threads: whichever split of C's panels balances better (rows on a tie).
    int nt = plan_threads(M, N, K, kn->mr, kn->nr, 1.0, &g.split_n);
    size_t bbytes = (size_t)(KC * cdiv(min64(N, NC), kn->nr) * kn->nr) * es;
    g.bp = ws_get(&ws_b, bbytes + (g.split_n ? (size_t)(MC * KC) * es : 0));
    g.ap = g.split_n ? g.bp + bbytes : NULL;
    run_threads(&g, nt);
}

// ---- the packed product of a C with unit column stride ----

// f64 sums in double already: no split.
static void gemm_unit_cs_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t a_rs,
                             int64_t a_cs, const double *B, int64_t b_rs, int64_t b_cs,
                             double *C, int64_t c_rs, bool accumulate) {
    gemm_packed(TT_F64, M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, c_rs, accumulate, NULL);
}

// f32: K <= KSPLIT directly; longer reductions in chunks of KSPLIT steps, each into a float
// scratch C, added in double.
static void gemm_unit_cs_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t a_rs,
                             int64_t a_cs, const float *B, int64_t b_rs, int64_t b_cs, float *C,
                             int64_t c_rs, bool accumulate) {
    if (K <= KSPLIT) {
        gemm_packed(TT_F32, M, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, c_rs, accumulate, NULL);
        return;
    }
    float *part = TT_MALLOC((size_t)(M * N) * sizeof *part);  // (M, N)
    double *acc = TT_MALLOC((size_t)(M * N) * sizeof *acc);   // (M, N)
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) acc[i * N + j] = accumulate ? C[i * c_rs + j] : 0;
    for (int64_t k0 = 0; k0 < K; k0 += KSPLIT) {
        gemm_packed(TT_F32, M, N, min64(KSPLIT, K - k0), A + k0 * a_cs, a_rs, a_cs,
                    B + k0 * b_rs, b_rs, b_cs, part, N, false, NULL);
        for (int64_t i = 0; i < M * N; i++) acc[i] += part[i];
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) C[i * c_rs + j] = (float)acc[i * N + j];
    tt_free(acc);
    tt_free(part);
}

// ---- unpacked products and the single GEMM (matmul_gemm.inc) ----
// dot: sum_k a[k as] b[k bs], each run of up to KC products summed in 8 lanes of T (lane l
// takes k = l mod 8; the lanes are then added pairwise) and the runs in double. A
// matrix-vector product with contiguous rows and vector (a Linear at M = 1: decoding) runs the
// f32 SIMD path's dot_rows kernel (gemv_x86.c) on groups of TT_K_DOT_ROWS rows, the same
// order, so the same bits as dot. gemv_cols:
// y[i] (+)= sum_k A[i, k] x[k] for A with contiguous columns (A[i, k] = a[i + k cs]): each run
// of KC steps of k is summed in T by column updates, four steps per pass over y (evaluated left
// to right, so the same rounding as four single updates), and the runs in double, 256 rows at a
// time. Plain C, compiled for AVX-512, AVX2 and baseline x86-64 and picked by the loader
// (TT_CLONES); the vector width changes the speed, not the result (no FMA contraction in
// ISO C mode, fixed lanes). At the AVX-512 levels the f32 one is the path's gemv_cols kernel
// (gemv_x86.c), the same order with the sums in registers.

#define GEMV_ROWS 256
#define GEMV_PAR_MIN (1 << 14)  // elements of A: 64 KiB of f32
#define GEMV_L2_SHARE (512 << 10)  // bytes of A a thread keeps in its L2 from call to call
#define GEMV_COLS_BLOCK 64         // rows of a contiguous-column product per share unit

// dot_f32, gemv_cols_f32, tt_k_gemm_f32, tt_k_gemm_bias_f32 and the same in f64.
#define T float
#define DT TT_F32
#define BIAS_KMAX KSPLIT
#define DOT dot_f32
#define GEMV_DOTS gemv_dots_f32
#define GEMV_JOB gemv_job_f32
#define GEMV_RANGE gemv_range_f32
#define GEMV_GROUPS gemv_groups_f32
#define GEMV_COLS gemv_cols_f32
#define GEMV_COLS_RANGE gemv_cols_range_f32
#define GEMM_UNIT_CS gemm_unit_cs_f32
#define GEMM tt_k_gemm_f32
#define GEMM_BIAS tt_k_gemm_bias_f32
#include "matmul_gemm.inc"
#undef T
#undef DT
#undef BIAS_KMAX
#undef DOT
#undef GEMV_DOTS
#undef GEMV_JOB
#undef GEMV_RANGE
#undef GEMV_GROUPS
#undef GEMV_COLS
#undef GEMV_COLS_RANGE
#undef GEMM_UNIT_CS
#undef GEMM
#undef GEMM_BIAS

#define T double
#define DT TT_F64
#define BIAS_KMAX INT64_MAX
#define DOT dot_f64
#define GEMV_DOTS gemv_dots_f64
#define GEMV_JOB gemv_job_f64
#define GEMV_RANGE gemv_range_f64
#define GEMV_GROUPS gemv_groups_f64
#define GEMV_COLS gemv_cols_f64
#define GEMV_COLS_RANGE gemv_cols_range_f64
#define GEMM_UNIT_CS gemm_unit_cs_f64
#define GEMM tt_k_gemm_f64
#define GEMM_BIAS tt_k_gemm_bias_f64
#include "matmul_gemm.inc"
#undef T
#undef DT
#undef BIAS_KMAX
#undef DOT
#undef GEMV_DOTS
#undef GEMV_JOB
#undef GEMV_RANGE
#undef GEMV_GROUPS
#undef GEMV_COLS
#undef GEMV_COLS_RANGE
#undef GEMM_UNIT_CS
#undef GEMM
#undef GEMM_BIAS

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

typedef struct batch_plan {
    tt_dtype dtype;
    int nb;
    int64_t shape[TT_MAX_DIMS];
    int64_t bs[3][TT_MAX_DIMS];  // A, B, C
    int64_t M, N, K;
    tt_k_matrix A, B, C;
    bool accumulate;
} batch_plan;

static void batch_item(const batch_plan *p, int64_t q);

// The products [q0, q1) of the plan ctx.
static void batch_range(void *ctx, int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; q++) batch_item(ctx, q);
}

// The product at row-major batch index q.
static void batch_item(const batch_plan *p, int64_t q) {
    int64_t off[3] = {0, 0, 0};
    for (int d = p->nb - 1; d >= 0; d--) {
        int64_t i = q % p->shape[d];
        q /= p->shape[d];
        for (int o = 0; o < 3; o++) off[o] += i * p->bs[o][d];
    }
    if (p->dtype == TT_F32)
        tt_k_gemm_f32(p->M, p->N, p->K, (const float *)p->A.data + off[0], p->A.rs, p->A.cs,
                      (const float *)p->B.data + off[1], p->B.rs, p->B.cs,
                      (float *)p->C.data + off[2], p->C.rs, p->C.cs, p->accumulate);
    else
        tt_k_gemm_f64(p->M, p->N, p->K, (const double *)p->A.data + off[0], p->A.rs, p->A.cs,
                      (const double *)p->B.data + off[1], p->B.rs, p->B.cs,
                      (double *)p->C.data + off[2], p->C.rs, p->C.cs, p->accumulate);
}

void tt_k_gemm_batched(tt_dtype dtype, int nbatch, const int64_t *batch, int64_t M, int64_t N,
                       int64_t K, const tt_k_matrix *a, const tt_k_matrix *b,
                       const tt_k_matrix *c, bool accumulate) {
    TT_CHECK(dtype == TT_F32 || dtype == TT_F64, "dtype %s: GEMM needs f32 or f64",
             tt_dtype_name(dtype));
    TT_CHECK(nbatch >= 0 && nbatch <= TT_MAX_DIMS, "nbatch %d out of range; valid values are "
             "0 .. TT_MAX_DIMS = %d", nbatch, TT_MAX_DIMS);
    if (M <= 0 || N <= 0 || tt__shape_numel(nbatch, batch) == 0) return;
    for (int d = 0; d < nbatch; d++)
        TT_CHECK(accumulate || batch[d] == 1 || c->bs[d] != 0,
                 "C is broadcast along batch dim %d (size %lld): the products would be summed "
                 "into it, which needs accumulate", d, (long long)batch[d]);
    batch_plan p = {.dtype = dtype, .M = M, .N = N, .K = K, .A = *a, .B = *b, .C = *c,
                    .accumulate = accumulate};
    // Fold what can be folded (innermost first); keep the other dims of size > 1. A dim along
    // which C is broadcast can only fold into K: folding it into M or N would make C's rows
    // (or columns) overlap.
    bool keep[TT_MAX_DIMS];
    for (int d = nbatch - 1; d >= 0; d--) {
        int64_t s = batch[d];
        keep[d] = !(s == 1 ||
                    (c->bs[d] != 0 &&
                     fold(&p.M, &p.A.rs, a->bs[d], &p.C.rs, c->bs[d], b->bs[d], s)) ||
                    (c->bs[d] != 0 &&
                     fold(&p.N, &p.B.cs, b->bs[d], &p.C.cs, c->bs[d], a->bs[d], s)) ||
                    fold(&p.K, &p.A.cs, a->bs[d], &p.B.rs, b->bs[d], c->bs[d], s));
    }
    bool reduce = false;  // some products sum into the same C
    int64_t items = 1;
    for (int d = 0; d < nbatch; d++) {
        if (!keep[d]) continue;
        p.shape[p.nb] = batch[d];
        p.bs[0][p.nb] = a->bs[d];
        p.bs[1][p.nb] = b->bs[d];
        p.bs[2][p.nb] = c->bs[d];
        reduce |= c->bs[d] == 0;
        items *= batch[d];
        p.nb++;
    }
    // One product per thread, a fixed contiguous share each, when the products write disjoint
    // C and share out evenly (or are each too small to split); otherwise in order, each split
    // between the threads. Either way each product is computed as it would be alone. Products
    // of one row or one column (decoding's attention: one query against each head's cached
    // keys, then values) read their matrix once from memory, so they are shared out by the
    // elements read (GEMV_PAR_MIN, as a single one is), the others by flops.
    double flops = 2.0 * (double)p.M * (double)p.N * (double)p.K;
    bool gemv = p.M == 1 || p.N == 1;
    double work = gemv ? flops / 2 * (double)items : flops * (double)items;
    int nt = tt__kernel_threads();
    if (!reduce && nt > 1 && items >= nt && work >= (gemv ? GEMV_PAR_MIN : PAR_MIN_FLOPS) &&
        (items % nt == 0 || items >= 4 * nt || flops < PAR_MIN_FLOPS)) {
        tt__parallel_for(items, 1, batch_range, &p);
        return;
    }
    for (int64_t q = 0; q < items; q++) batch_item(&p, q);  // in order: reductions too
}

// Fused attention kernels, forward and backward, f32 and f64 (interface, letters and papers in
// attention.h): tiles of BQ queries x BK keys with an online softmax, so the (T, S) score
// matrix is never formed. Not here: dropout on the weights (nn/transformer.c composes it).
//
// The f32 inner products, exponentials and row reductions run in AVX-512 or AVX2+FMA code
// (attention_avx512.c, attention_avx2.c; the table of block operations: attention_ops.h)
// picked at run time by the CPU level (cpu.h), else in portable C; f64 always runs the
// portable C (it is for gradcheck and debugging). A block product is C (M, N) = alpha A (M, K)
// B (K, N) [+ C] with A read element by element through two strides (broadcast into a SIMD
// register) and the rows of B and C unit-stride, so q k^T needs k^T packed (a (HS, keys)
// panel) while P v, dS k and dS^T q read v, k and q in place.
//
// Why these block products are not the packed GEMM's (gemm_avx512.c), measured on an AMD EPYC
// (AVX512-BF16), 2 cores at load 2.2, medians of 7 runs taking turns with the previous binary:
// the AVX-512 f32 table's gemm on tt_k_gemm_avx512_f32's 12 x 32 micro-kernels, A^T and B
// packed per call and alpha applied on store (the commit "f32 block products on the packed
// GEMM's 12x32 micro-kernels (trial)"), gives the same bits (one FMA chain per element over k
// from 0 in both) but is slower: `OMP_NUM_THREADS=1 bench_attention 4 6 256 64` f32 fwd+bwd
// 11.05 -> 13.30 ms, `bench_train train baby 1` 47.50 -> 48.50 ms/step; only dV = P^T dO so
// routed: 11.22 -> 11.35 ms, baby 47.70 -> 47.70. Per 32 x 32 x 64 product (2000 calls, one
// thread) the micro-kernels on panels packed once take 1.31-1.34 us, tile512 1.30-1.39 us: the
// loss is the packing of each tile's operands, 0.11-0.36 us (8-27%) per call.
//
// Threads: the forward splits (b, query head) pairs, the backward (b, kv head) groups (each
// owns the dk/dv rows of its kv head and the dq rows of its query heads), statically. Each
// output element is summed by one thread in a fixed order: results do not depend on the thread
// count. Memory: per thread, a packed k^T of one head (forward) or of one key block (backward),
// two (BQ, BK) tiles on the stack, and the backward's D = rowsum(dy y) of the group's rows; on
// vdpbf16ps, bf16 pair panels instead of the packed k^T ("packed operands" below). Each task
// fetches the next task's rows toward the cache while it works (prefetch_rows), and the
// backward zeroes the dq, dk and dv rows it owns before adding into them.
//
// Code written once for both dtypes: attention_portable.inc (the portable block operations)
// and attention_driver.inc (the tiled forward and backward), each included per dtype below.
//
// bf16 products (dims.bf16, attention.h): the f32 driver with a table whose gemm rounds its
// operands to bf16 and accumulates in f32, on vdpbf16ps (gemm_dpbf16, or gemm_pb_dpbf16 with
// a right-hand operand packed once per head or key tile), widened to f32 with FMA
// (gemm_widen512, gemm_widen256) or in portable C (gemm_bf16_portable); the same bits.
#include "attention_ops.h"
#include "bf16.h"
#include "cpu.h"
#include "simd.h"  // TT_SIMD_EXP_MIN
#include "../parallel.h"

#include <math.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define ATTN_X86 1
#else
#define ATTN_X86 0
#endif

// Below this many multiply-adds of q k^T (B NH T S HS) a call stays on one thread.
#define PAR_MIN ((int64_t)1 << 18)


// The per-head (forward) and per-group (backward) drivers are inlined at two call sites each,
// masked and not, so the unmasked copy carries none of the mask's tests.
#if defined(__GNUC__)
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE static inline
#endif

// ---- portable C ----

// f32 exponentials below TT_SIMD_EXP_MIN flush to 0 in every ISA (no subnormal weights reach the
// products); f64 keeps exp's full range.
static float exp_flush(float x) { return x < TT_SIMD_EXP_MIN ? 0.0f : expf(x); }

// gemm_portable_f32, rows_max_portable_f32, ..., ops_portable_f32 and the same in f64
// (attention_portable.inc).
#define F float
#define EXP exp_flush
#define OPS tt__kattn_ops_f32
#define GEMM_PORTABLE gemm_portable_f32
#define ROWS_MAX_PORTABLE rows_max_portable_f32
#define ROWS_EXP_PORTABLE rows_exp_portable_f32
#define ROW_DS_PORTABLE row_ds_portable_f32
#define ROW_SCALE_PORTABLE row_scale_portable_f32
#define ROWS_DOT_PORTABLE rows_dot_portable_f32
#define OPS_PORTABLE ops_portable_f32
#include "attention_portable.inc"
#undef F
#undef EXP
#undef OPS
#undef GEMM_PORTABLE
#undef ROWS_MAX_PORTABLE
#undef ROWS_EXP_PORTABLE
#undef ROW_DS_PORTABLE
#undef ROW_SCALE_PORTABLE
#undef ROWS_DOT_PORTABLE
#undef OPS_PORTABLE

#define F double
#define EXP exp
#define OPS tt__kattn_ops_f64
#define GEMM_PORTABLE gemm_portable_f64
#define ROWS_MAX_PORTABLE rows_max_portable_f64
#define ROWS_EXP_PORTABLE rows_exp_portable_f64
#define ROW_DS_PORTABLE row_ds_portable_f64
#define ROW_SCALE_PORTABLE row_scale_portable_f64
#define ROWS_DOT_PORTABLE rows_dot_portable_f64
#define OPS_PORTABLE ops_portable_f64
#include "attention_portable.inc"
#undef F
#undef EXP
#undef OPS
#undef GEMM_PORTABLE
#undef ROWS_MAX_PORTABLE
#undef ROWS_EXP_PORTABLE
#undef ROW_DS_PORTABLE
#undef ROW_SCALE_PORTABLE
#undef ROWS_DOT_PORTABLE
#undef OPS_PORTABLE

// ---- bf16 products, portable C (f32 only) ----

// C (M, N) = alpha A B [+ C] as the f32 gemm, with every element of A and B rounded to bf16
// and each element's products summed in f32 per k pair, the odd step's product first, then
// the even step's (vdpbf16ps's order; an odd K gets a zero odd step), from 0. Products of bf16
// values are exact in f32, so each step is one rounding, as in vdpbf16ps. In chunks of 64
// columns of accumulators.
void tt__kattn_gemm_bf16_portable(int64_t M, int64_t N, int64_t K, const float *a,
                                  int64_t a_rs, int64_t a_cs, const float *b, int64_t b_rs,
                                  float *c, int64_t c_rs, float alpha, bool acc) {
    float t[64];
    for (int64_t n0 = 0; n0 < N; n0 += 64) {
        int64_t nn = min64(64, N - n0);
        for (int64_t i = 0; i < M; i++) {
            const float *ar = a + i * a_rs;
            for (int64_t n = 0; n < nn; n++) t[n] = 0;
            for (int64_t k = 0; k < K; k += 2) {
                const float *b0 = b + k * b_rs + n0;
                float a0 = round_bf16(ar[k * a_cs]);
                if (k + 1 < K) {
                    const float *b1 = b0 + b_rs;
                    float a1 = round_bf16(ar[(k + 1) * a_cs]);
                    for (int64_t n = 0; n < nn; n++) {
                        t[n] += a1 * round_bf16(b1[n]);
                        t[n] += a0 * round_bf16(b0[n]);
                    }
                } else {
                    for (int64_t n = 0; n < nn; n++) {
                        t[n] += 0.0f;  // the zero odd step (+0: turns a -0 into +0)
                        t[n] += a0 * round_bf16(b0[n]);
                    }
                }
            }
            float *cr = c + i * c_rs + n0;
            for (int64_t n = 0; n < nn; n++) {
                float o = t[n] * alpha;
                cr[n] = acc ? o + cr[n] : o;
            }
        }
    }
}

static const tt__kattn_ops_f32 ops_portable_bf16 = {
    tt__kattn_gemm_bf16_portable, rows_max_portable_f32, rows_exp_portable_f32,
    row_ds_portable_f32, row_scale_portable_f32, rows_dot_portable_f32,
    NULL, NULL, NULL, NULL, NULL, 0,
};

void tt__kattn_rows_dot_portable_f32(float *D, const float *x, int64_t x_rs, const float *y,
                                     int64_t y_rs, int64_t n, int64_t HS) {
    rows_dot_portable_f32(D, x, x_rs, y, y_rs, n, HS);
}

// ---- dispatch ----

// The f32 table of the CPU level (cpu.h): AVX-512 or AVX2 + FMA row operations, else the
// portable C; with d->bf16, a gemm with bf16 products, on vdpbf16ps at TT_CPU_AVX512BF16.
static const tt__kattn_ops_f32 *ops_get_f32(const tt_kattn_dims *d) {
#if ATTN_X86
    switch (tt_cpu_get_level()) {
        case TT_CPU_AVX512BF16:
            return d->bf16 ? &tt__kattn_ops_avx512_dpbf16 : &tt__kattn_ops_avx512_f32;
        case TT_CPU_AVX512:
            return d->bf16 ? &tt__kattn_ops_avx512_bf16 : &tt__kattn_ops_avx512_f32;
        case TT_CPU_AVX2: return d->bf16 ? &tt__kattn_ops_avx2_bf16 : &tt__kattn_ops_avx2_f32;
        default: return d->bf16 ? &ops_portable_bf16 : &ops_portable_f32;
    }
#else
    return d->bf16 ? &ops_portable_bf16 : &ops_portable_f32;
#endif
}

static const tt__kattn_ops_f64 *ops_get_f64(const tt_kattn_dims *d) {
    (void)d;  // f64 products stay f64
    return &ops_portable_f64;
}

// ---- forward and backward drivers ----
// Causal rows: query i sees keys j <= i, so the keys a tile row sees are lim = i + 1 - j0
// clamped to [0, nk]; a forward query tile stops at its last row's key, a backward key tile
// starts at the query tile holding its first key. A mask is applied to each score tile right
// after q k^T (apply_mask_*); without one, that call and its loops never run.

// Rows [r0, r1) of a (rows, HS) operand of es-byte elements, rows rs elements apart (NULL: none),
// fetched toward the cache ahead of use: each driver fetches the next head's (forward) or
// group's (backward) rows, a slice per tile, while it works on the current one.
static void prefetch_rows(const void *x, int64_t rs, int64_t es, int64_t r0, int64_t r1,
                          int64_t HS) {
#if defined(__GNUC__)
    if (!x) return;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t c = 0; c < HS * es; c += 64)
            __builtin_prefetch((const char *)x + r * rs * es + c, 0, 2);
#else
    (void)x, (void)rs, (void)es, (void)r0, (void)r1, (void)HS;
#endif
}

// pack_kt_f32, apply_mask_f32, forward_head_f32, tt_kattention_forward_f32, backward_group_f32,
// tt_kattention_backward_f32 and the same in f64 (attention_driver.inc).
#define F float
#define OPS tt__kattn_ops_f32
#define OPS_GET ops_get_f32
#define PACK_KT pack_kt_f32
#define APPLY_MASK apply_mask_f32
#define FORWARD_HEAD forward_head_f32
#define FORWARD tt_kattention_forward_f32
#define BACKWARD_GROUP backward_group_f32
#define BACKWARD tt_kattention_backward_f32
#define ATTN_JOB attn_job_f32
#define FORWARD_TASKS forward_tasks_f32
#define BACKWARD_TASKS backward_tasks_f32
#include "attention_driver.inc"
#undef F
#undef OPS
#undef OPS_GET
#undef PACK_KT
#undef APPLY_MASK
#undef FORWARD_HEAD
#undef FORWARD
#undef BACKWARD_GROUP
#undef BACKWARD
#undef ATTN_JOB
#undef FORWARD_TASKS
#undef BACKWARD_TASKS

#define F double
#define OPS tt__kattn_ops_f64
#define OPS_GET ops_get_f64
#define PACK_KT pack_kt_f64
#define APPLY_MASK apply_mask_f64
#define FORWARD_HEAD forward_head_f64
#define FORWARD tt_kattention_forward_f64
#define BACKWARD_GROUP backward_group_f64
#define BACKWARD tt_kattention_backward_f64
#define ATTN_JOB attn_job_f64
#define FORWARD_TASKS forward_tasks_f64
#define BACKWARD_TASKS backward_tasks_f64
#include "attention_driver.inc"
#undef F
#undef OPS
#undef OPS_GET
#undef PACK_KT
#undef APPLY_MASK
#undef FORWARD_HEAD
#undef FORWARD
#undef BACKWARD_GROUP
#undef BACKWARD
#undef ATTN_JOB
#undef FORWARD_TASKS
#undef BACKWARD_TASKS

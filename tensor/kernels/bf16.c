// The bf16 kernels' portable side and driver: the run-time choice of SIMD path, the scalar
// conversions, the portable packer and micro-kernel, and the packed GEMM driver (cache
// blocking, the parallel split of a product, C layouts). The SIMD kernels: bf16_avx2.c,
// bf16_avx512.c.
#include "bf16.h"
#include "kint.h"
#include "cpu.h"
#include "../tensor_internal.h"

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// ---- SIMD path ----

// The kernels of the CPU level (cpu.h): vdpbf16ps at AVX512BF16, bf16 widened to f32 with FMA
// at AVX512 (16 lanes) and AVX2 (8 lanes), else the portable C.
const tt_k_bf16_kernel *tt_k_bf16_active(void) {
    switch (tt_cpu_get_level()) {
        case TT_CPU_AVX512BF16: return &tt_k_bf16_avx512bf16;
        case TT_CPU_AVX512: return &tt_k_bf16_avx512;
        case TT_CPU_AVX2: return &tt_k_bf16_avx2;
        default: return &tt_k_bf16_generic;
    }
}

const char *tt_k_gemm_bf16_kernel_name(void) { return tt_k_bf16_active()->name; }

// ---- conversions ----

static void to_bf16_generic(tt_bf16 *dst, const float *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = tt_bf16_from_f32(src[i]);
}

static void to_f32_generic(float *dst, const tt_bf16 *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = tt_bf16_to_f32(src[i]);
}

void tt_k_f32_to_bf16(tt_bf16 *dst, const float *src, int64_t n) {
    if (n > 0) tt_k_bf16_active()->to_bf16(dst, src, n);
}

void tt_k_bf16_to_f32(float *dst, const tt_bf16 *src, int64_t n) {
    if (n > 0) tt_k_bf16_active()->to_f32(dst, src, n);
}

// ---- portable packer and micro-kernel ----

// The bf16 bits of X[k, j] (f32 rounded, or bf16 as is).
static uint32_t elem_bits(const void *src, tt_k_bf16_src type, int64_t off) {
    return type == TT_K_SRC_BF16 ? ((const tt_bf16 *)src)[off]
                                 : tt_bf16_from_f32(((const float *)src)[off]);
}

void tt_k_bf16_pack_generic(uint32_t *dst, const void *src, tt_k_bf16_src type, int64_t ks,
                            int64_t js, int64_t kc, int64_t n, int w) {
    int64_t kp = cdiv(kc, 2);
    for (int64_t j0 = 0; j0 < n; j0 += w, dst += tt_k_bf16_panel(kc, w)) {
        int cols = (int)min64(w, n - j0);
        for (int64_t p = 0; p < kp; p++) {
            uint32_t *d = dst + p * w;
            int64_t k = 2 * p;
            for (int j = 0; j < cols; j++) {
                int64_t off = k * ks + (j0 + j) * js;
                uint32_t lo = elem_bits(src, type, off);
                uint32_t hi = k + 1 < kc ? elem_bits(src, type, off + ks) : 0;
                d[j] = lo | hi << 16;
            }
            for (int j = cols; j < w; j++) d[j] = 0;
        }
    }
}

// A 4 x 16 tile in plain C: per k pair, the odd step then the even one (vdpbf16ps's order),
// each product exact in float and added with one rounding (what an FMA does with them).
#define G_MR 4
#define G_NR 16

static float lo_f32(uint32_t w) { return tt_bf16_to_f32((tt_bf16)(w & 0xffffu)); }
static float hi_f32(uint32_t w) { return tt_bf16_to_f32((tt_bf16)(w >> 16)); }

TT_CLONES static void uk_generic(int64_t kp, const uint32_t *a, const uint32_t *b, float *c,
                                 int64_t ldc, int mr, int nr, bool add, const float *bias) {
    float acc[G_MR][G_NR] = {{0}};
    for (int64_t p = 0; p < kp; p++, a += G_MR, b += G_NR) {
        float be[G_NR], bo[G_NR];
        for (int j = 0; j < G_NR; j++) be[j] = lo_f32(b[j]), bo[j] = hi_f32(b[j]);
        for (int i = 0; i < G_MR; i++) {
            float ae = lo_f32(a[i]), ao = hi_f32(a[i]);
            for (int j = 0; j < G_NR; j++) {
                acc[i][j] += ao * bo[j];
                acc[i][j] += ae * be[j];
            }
        }
    }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++)
            c[i * ldc + j] = add ? c[i * ldc + j] + acc[i][j]
                             : bias ? bias[j] + acc[i][j] : acc[i][j];
}

const tt_k_bf16_kernel tt_k_bf16_generic = {"generic bf16 4x16 (f32 FMA order)", G_MR, G_NR,
                                            uk_generic, NULL, NULL, to_bf16_generic,
                                            to_f32_generic};

// ---- packed GEMM driver ----
// Goto and van de Geijn (2008): for each NC-column block of C and each KC-step block of k, B's
// (KC, NC) block is packed into NR-wide panels (one (KC, NR) panel, 24 KiB at NR 32, stays in
// L1), A's (MC, KC) block into MR-row panels (180 KiB at MC 240, in L2), and the micro-kernel
// runs over every tile. The thread split follows the f32 GEMM (matmul.c): rows of C when they
// share out as well as the columns, else columns; a function of the shape only.
#define KC TT_K_BF16_KC
#define MC 240   // a multiple of every MR (12, 6, 4)
#define NC 4096
#define PAR_MIN_FLOPS (3 << 20)  // fewer flops stay on one thread (as in matmul.c)

// Words of a packed A block: MC / MR panels.
#define A_WORDS(mr) ((size_t)(MC / (mr) * tt_k_bf16_panel(KC, (int)(mr))))

// share, the workspaces, macro_kernel and gemm_thread (gemm_driver.inc, shared with
// matmul.c): rows or columns of C split between threads as for the f32 GEMM.
#define JOB bf16_job
#define JOB_KERN_T tt_k_bf16_kernel
#define JOB_FIELDS                                                            \
    size_t a_es, b_es;  /* element sizes (4 for f32, 2 for bf16) */           \
    tt_k_bf16_src a_type, b_type;
#define PANEL_T uint32_t
#define OUT_T float
#define UKERNEL_T tt_k_bf16_ukernel
#define UK_K(kc) cdiv(kc, 2)
#define A_ES(g) ((g)->a_es)
#define B_ES(g) ((g)->b_es)
#define OUT_AT(g, p, i) ((p) + (i))
#define PANEL_AT(g, p, q, kc, w) ((p) + (q) * tt_k_bf16_panel(kc, (int)(w)))
#define PACKER_T tt_k_bf16_packer
#define PORTABLE_PACKER(g) tt_k_bf16_pack_generic
#define PACK_A(g, dst, src, kc, n, w)                                          \
    packer_for(g, (g)->a_cs, (g)->a_rs)(dst, src, (g)->a_type, (g)->a_cs, (g)->a_rs, kc, n, \
                                        (int)(w))
#define PACK_B(g, dst, src, kc, n, w)                                          \
    packer_for(g, (g)->b_rs, (g)->b_cs)(dst, src, (g)->b_type, (g)->b_rs, (g)->b_cs, kc, n, \
                                        (int)(w))
#define WS_A_SIZE(g, mr) A_WORDS(mr)
#include "gemm_driver.inc"

// C (M, N), unit column stride, (+)= A B (+ bias, when not accumulating); M, N, K >= 1.
static void gemm_packed(int64_t M, int64_t N, int64_t K, const void *A, tt_k_bf16_src a_type,
                        int64_t a_rs, int64_t a_cs, const void *B, tt_k_bf16_src b_type,
                        int64_t b_rs, int64_t b_cs, float *C, int64_t c_rs, bool accumulate,
                        const float *bias) {
    const tt_k_bf16_kernel *kn = tt_k_bf16_active();
    bf16_job g = {
        .kern = kn, .M = M, .N = N, .K = K, .A = A, .B = B,
        .a_es = a_type == TT_K_SRC_BF16 ? 2 : 4, .b_es = b_type == TT_K_SRC_BF16 ? 2 : 4,
        .a_type = a_type, .b_type = b_type,
        .a_rs = a_rs, .a_cs = a_cs, .b_rs = b_rs, .b_cs = b_cs,
        .C = C, .c_rs = c_rs, .accumulate = accumulate, .bias = bias,
    };
    // Threads: whichever split of C's panels balances better, rows on a tie; when C has more
    // than MC rows, rows unless the columns balance clearly better (a column split has two
    // barriers per (MC, KC) block, a row split two per KC block).
    int nt = plan_threads(M, N, K, kn->mr, kn->nr, M > MC ? 1.1 : 1.0, &g.split_n);
    int64_t npan = cdiv(min64(N, NC), kn->nr);
    size_t bwords = (size_t)(npan * tt_k_bf16_panel(KC, kn->nr));
    g.bp = ws_get(&ws_b, bwords + (g.split_n ? A_WORDS(kn->mr) : 0));
    g.ap = g.split_n ? g.bp + bwords : NULL;
    run_threads(&g, nt);
}

// The checks shared by the public products, on behalf of `func`.
static void check_args(const char *func, int64_t M, int64_t N, int64_t K, tt_k_bf16_src a_type,
                       tt_k_bf16_src b_type) {
    TT_CHECK_IN(func, M >= 0 && N >= 0 && K >= 0, "negative size M=%lld N=%lld K=%lld",
                (long long)M, (long long)N, (long long)K);
    TT_CHECK_IN(func, (a_type == TT_K_SRC_F32 || a_type == TT_K_SRC_BF16) &&
                          (b_type == TT_K_SRC_F32 || b_type == TT_K_SRC_BF16),
                "operand types %d, %d: each must be TT_K_SRC_F32 or TT_K_SRC_BF16",
                (int)a_type, (int)b_type);
}

void tt_k_gemm_bf16(int64_t M, int64_t N, int64_t K, const void *A, tt_k_bf16_src a_type,
                    int64_t a_rs, int64_t a_cs, const void *B, tt_k_bf16_src b_type,
                    int64_t b_rs, int64_t b_cs, float *C, int64_t c_rs, int64_t c_cs,
                    bool accumulate) {
    check_args(__func__, M, N, K, a_type, b_type);
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (!accumulate)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) C[i * c_rs + j * c_cs] = 0;
        return;
    }
    if (M == 1) a_rs = 0;  // strides along dims of size 1 are ignored
    if (N == 1) b_cs = 0;
    if (K == 1) a_cs = 0, b_rs = 0;
    if (c_cs == 1 || N == 1) {
        gemm_packed(M, N, K, A, a_type, a_rs, a_cs, B, b_type, b_rs, b_cs, C, c_rs,
                    accumulate, NULL);
    } else if (c_rs == 1 || M == 1) {  // C^T (N, M) = B^T A^T, rows of C^T contiguous
        gemm_packed(N, M, K, B, b_type, b_cs, b_rs, A, a_type, a_cs, a_rs, C, c_cs,
                    accumulate, NULL);
    } else {  // through a contiguous copy of C
        float *t = TT_MALLOC((size_t)(M * N) * sizeof *t);  // (M, N)
        if (accumulate)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) t[i * N + j] = C[i * c_rs + j * c_cs];
        gemm_packed(M, N, K, A, a_type, a_rs, a_cs, B, b_type, b_rs, b_cs, t, N, accumulate,
                    NULL);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) C[i * c_rs + j * c_cs] = t[i * N + j];
        tt_free(t);
    }
}

void tt_k_gemm_bias_bf16(int64_t M, int64_t N, int64_t K, const void *A, tt_k_bf16_src a_type,
                         int64_t a_rs, int64_t a_cs, const void *B, tt_k_bf16_src b_type,
                         int64_t b_rs, int64_t b_cs, const float *bias, float *C, int64_t c_rs) {
    check_args(__func__, M, N, K, a_type, b_type);
    if (M == 0 || N == 0) return;
    if (K == 0) {
        for (int64_t i = 0; i < M; i++) memcpy(C + i * c_rs, bias, (size_t)N * sizeof *C);
        return;
    }
    if (M == 1) a_rs = 0;  // strides along dims of size 1 are ignored
    if (N == 1) b_cs = 0;
    if (K == 1) a_cs = 0, b_rs = 0;
    gemm_packed(M, N, K, A, a_type, a_rs, a_cs, B, b_type, b_rs, b_cs, C, c_rs, false, bias);
}
